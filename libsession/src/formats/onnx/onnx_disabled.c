/*
 * ONNX entry points of a libsession built without ONNX support (meson option onnx, protoc-c,
 * libprotobuf-c or onnx.proto missing): each answers SES_UNIMPLEMENTED and says how to get it.
 * Built only then; onnx_import.c and onnx_tensor.c define them otherwise.
 */
#include <string.h>

#include <session/onnx.h>

#include "../../error.h"

#define WITHOUT_ONNX                                                                              \
    ses__fail(SES_UNIMPLEMENTED, "this libsession was built without ONNX support (install "       \
                                 "protobuf-c-compiler, libprotobuf-c-dev and libonnx-dev, then "  \
                                 "reconfigure with -Donnx=enabled)")

void ses_onnx_options_init(ses_onnx_options_t *options) {
    if (options) {
        memset(options, 0, sizeof *options);
        options->struct_size = sizeof *options;
    }
}

ses_status_t ses_onnx_import_file(const char *path, const ses_onnx_options_t *options,
                                  ses_onnx_model_t **out_model) {
    (void)path;
    (void)options;
    if (out_model)
        *out_model = NULL;
    return WITHOUT_ONNX;
}

ses_status_t ses_onnx_import(const void *data, size_t size, const ses_onnx_options_t *options,
                             ses_onnx_model_t **out_model) {
    (void)data;
    (void)size;
    (void)options;
    if (out_model)
        *out_model = NULL;
    return WITHOUT_ONNX;
}

void ses_onnx_model_destroy(ses_onnx_model_t *model) {
    (void)model;
}

ses_graph_t *ses_onnx_model_graph(const ses_onnx_model_t *model) {
    (void)model;
    return NULL;
}

int64_t ses_onnx_model_opset(const ses_onnx_model_t *model) {
    (void)model;
    return -1;
}

size_t ses_onnx_model_input_count(const ses_onnx_model_t *model) {
    (void)model;
    return 0;
}

const char *ses_onnx_model_input_name(const ses_onnx_model_t *model, size_t index) {
    (void)model;
    (void)index;
    return NULL;
}

ses_dtype_t ses_onnx_model_input_dtype(const ses_onnx_model_t *model, size_t index) {
    (void)model;
    (void)index;
    return SES_DTYPE_INVALID;
}

ses_edge_t ses_onnx_model_input(const ses_onnx_model_t *model, size_t index) {
    ses_edge_t none = {NULL, 0};
    (void)model;
    (void)index;
    return none;
}

size_t ses_onnx_model_output_count(const ses_onnx_model_t *model) {
    (void)model;
    return 0;
}

const char *ses_onnx_model_output_name(const ses_onnx_model_t *model, size_t index) {
    (void)model;
    (void)index;
    return NULL;
}

ses_edge_t ses_onnx_model_output(const ses_onnx_model_t *model, size_t index) {
    ses_edge_t none = {NULL, 0};
    (void)model;
    (void)index;
    return none;
}

ses_status_t ses_onnx_read_tensor_file(const char *path, ses_tensor_t **out_tensor) {
    (void)path;
    if (out_tensor)
        *out_tensor = NULL;
    return WITHOUT_ONNX;
}

ses_status_t ses_onnx_read_tensor(const void *data, size_t size, ses_tensor_t **out_tensor) {
    (void)data;
    (void)size;
    if (out_tensor)
        *out_tensor = NULL;
    return WITHOUT_ONNX;
}
