/*
 * ONNX models: import a model as a graph, and read ONNX TensorProto files (.pb).
 *
 * Initializers become constants (or variables, by option), graph inputs that are not
 * initializers become placeholders, and each node becomes a node of the same ONNX op, adapted to
 * the op-set 13 forms libsession implements (axes given as attributes in older op sets become
 * constant inputs, Softmax of op sets before 13 flattens, ...). A model using ops libsession does
 * not have is refused with one error listing every such op with the op set it was asked at.
 *
 * The reader is built for hostile files: sizes, element counts, node counts and protobuf nesting
 * are bounded before anything is allocated for them, and every inconsistency is an error naming
 * what is wrong. A libsession built without ONNX support (meson option `onnx`) answers
 * SES_UNIMPLEMENTED from every entry.
 */
#ifndef SESSION_ONNX_H
#define SESSION_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include <session/graph.h>
#include <session/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ses_onnx_options {
    uint32_t struct_size;          /* set by ses_onnx_options_init */
    uint32_t initializers_as_variables; /* 1: each initializer is a variable initialized from
                                           its value (trainable, saved by checkpoints) */
    uint64_t max_bytes;            /* the largest model file accepted (default 2 GiB) */
    uint64_t max_elements;         /* the most elements of one tensor (default 2^31) */
    uint32_t max_nodes;            /* the most nodes (default 1,000,000) */
    uint32_t max_depth;            /* the deepest protobuf nesting (default 64) */
} ses_onnx_options_t;

/** Fills @p options with the defaults. */
SES_API void ses_onnx_options_init(ses_onnx_options_t *options);

/** An imported model: its graph and the edges of its inputs and outputs. */
typedef struct ses_onnx_model ses_onnx_model_t;

/** Imports the model in file @p path; @p options may be NULL for the defaults. */
SES_API ses_status_t ses_onnx_import_file(const char *path, const ses_onnx_options_t *options,
                                          ses_onnx_model_t **out_model);
/** Imports a model from @p size bytes at @p data (serialized ModelProto). */
SES_API ses_status_t ses_onnx_import(const void *data, size_t size,
                                     const ses_onnx_options_t *options,
                                     ses_onnx_model_t **out_model);
/** Frees a model; its graph stays alive while a session or caller holds a reference. */
SES_API void ses_onnx_model_destroy(ses_onnx_model_t *model);

/** The graph (borrowed; retain it to keep it past the model). */
SES_API ses_graph_t *ses_onnx_model_graph(const ses_onnx_model_t *model);
/** The highest version of the default ONNX domain the model imports. */
SES_API int64_t ses_onnx_model_opset(const ses_onnx_model_t *model);
/** Inputs to feed, in the model's order (initializers excluded): placeholders. */
SES_API size_t ses_onnx_model_input_count(const ses_onnx_model_t *model);
SES_API const char *ses_onnx_model_input_name(const ses_onnx_model_t *model, size_t index);
SES_API ses_edge_t ses_onnx_model_input(const ses_onnx_model_t *model, size_t index);
SES_API ses_dtype_t ses_onnx_model_input_dtype(const ses_onnx_model_t *model, size_t index);
/** Outputs, in the model's order. */
SES_API size_t ses_onnx_model_output_count(const ses_onnx_model_t *model);
SES_API const char *ses_onnx_model_output_name(const ses_onnx_model_t *model, size_t index);
SES_API ses_edge_t ses_onnx_model_output(const ses_onnx_model_t *model, size_t index);

/** Reads a serialized TensorProto (an ONNX test's input_0.pb) from file @p path. */
SES_API ses_status_t ses_onnx_read_tensor_file(const char *path, ses_tensor_t **out_tensor);
/** Reads a serialized TensorProto from @p size bytes at @p data. */
SES_API ses_status_t ses_onnx_read_tensor(const void *data, size_t size,
                                          ses_tensor_t **out_tensor);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_ONNX_H */
