/*
 * The ONNX import in progress, shared by onnx_import.c (tensors, nodes, the model), the files it
 * hands ops to (onnx_sequence.c: sequences and optionals, resolved into tensor edges;
 * onnx_control.c: If, Loop, Scan; onnx_optimizers.c) and onnx_values.c (the value table all of
 * them define and find names in).
 */
#ifndef SES_ONNX_IMPORTER_H
#define SES_ONNX_IMPORTER_H

#include <session/graph.h>

#include "onnx_internal.h"

/* What a named value is. Only tensors reach the graph: a sequence is the list of its elements'
 * edges (its length is known when it is imported), an empty optional is nothing at all. */
enum { SES__ONNX_TENSOR, SES__ONNX_SEQUENCE, SES__ONNX_NONE };

/* One named value: its edge and, when it is a constant, its tensor (borrowed from the graph). */
typedef struct value {
    char *name;
    ses_edge_t edge;
    ses_tensor_t *constant;
    ses_dtype_t dtype; /* known for inputs and constants; SES_DTYPE_INVALID for node outputs */
    /* The static shape where the import knows it (inputs and constants): rank -1 when unknown,
     * a dimension -1 when unknown. */
    int rank;
    int64_t dims[SES_MAX_RANK];
    int kind;          /* SES__ONNX_TENSOR, SEQUENCE or NONE */
    int optional;      /* made by Optional (OptionalHasElement is then true) */
    ses_edge_t *items; /* a sequence's elements, owned; n_items may be 0 */
    size_t n_items;
    ses_dtype_t elem_dtype; /* a sequence's element dtype when known */
} value_t;

struct ses_onnx_model {
    ses_graph_t *graph;
    int64_t opset;
    size_t n_inputs, n_outputs;
    char **input_names, **output_names;
    ses_edge_t *inputs, *outputs;
    ses_dtype_t *input_dtypes;
};

/* The import in progress. */
typedef struct importer {
    ses_onnx_options_t o;
    ses_onnx_model_t *m;
    value_t *values; /* open addressing on the name's hash */
    size_t capacity, count;
    ses_tensor_t **owned; /* constants made here, released at the end (the graph holds them) */
    size_t n_owned, owned_capacity;
    size_t sequence_items; /* the elements of every sequence value so far (each holds a list) */
    const Onnx__GraphProto *graph; /* the graph being imported: its value_info and outputs */
    /* Control flow (onnx_control.c): a body's import is a child importer whose names are looked
     * up in its own table first, then in its parent's (the enclosing scopes), and whose node
     * names get the prefix ("loop/iter2/..."); NULL and "" at the top. */
    struct importer *parent;
    char prefix[512];
    size_t body_nodes; /* at the top: the nodes of every body imported so far (bounded) */
    /* Imports node n (number index of its graph) in im's scope: onnx_import.c's dispatcher, set
     * where the import starts and copied to child importers, so that onnx_control.c imports a
     * body's nodes without calling back up into onnx_import.c. */
    ses_status_t (*import_node)(struct importer *im, const Onnx__NodeProto *n, size_t index);
} importer_t;

/* The value named @p name, or NULL. */
value_t *ses__onnx_find(importer_t *im, const char *name);
/* Defines @p name as a tensor value (@p constant: its tensor when it is a constant, else NULL);
 * fails when the name is taken. */
ses_status_t ses__onnx_define(importer_t *im, const char *name, ses_edge_t edge,
                              ses_tensor_t *constant);
/* Adds @p t (taken over) as a constant named @p name (NULL: generated) and returns its edge. */
ses_status_t ses__onnx_add_constant(importer_t *im, const char *name, ses_tensor_t *t,
                                    ses_edge_t *out_edge);

/* Whether onnx_sequence.c imports op @p op (sequence and optional ops). */
int ses__onnx_is_sequence_op(const char *op);
/* Imports node @p n, whose op is a sequence or optional op or whose input is a sequence or an
 * optional (Identity); @p label names it in messages. */
ses_status_t ses__onnx_sequence_node(importer_t *im, const Onnx__NodeProto *n, const char *label);

/* Frees what an importer holds (its value table and the constants it kept): onnx_values.c. */
void ses__onnx_importer_clear(importer_t *im);

/* Whether op @p op is a control-flow op onnx_control.c imports (If, Loop, Scan). */
int ses__onnx_is_control_op(const char *op);
/* Imports If, Loop or Scan node @p n by lowering its bodies into the graph. */
ses_status_t ses__onnx_control_node(importer_t *im, const Onnx__NodeProto *n, const char *label);

/* Whether op @p op is an optimizer of ai.onnx.preview.training that onnx_optimizers.c builds
 * (Adagrad, Momentum, Adam). */
int ses__onnx_is_optimizer_op(const char *op);
/* Imports optimizer node @p n as elementwise ops, one chain per tensor it updates. */
ses_status_t ses__onnx_optimizer_node(importer_t *im, const Onnx__NodeProto *n,
                                      const char *label);

#endif /* SES_ONNX_IMPORTER_H */
