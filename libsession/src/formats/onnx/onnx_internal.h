/*
 * What the ONNX importer's files share: the generated protobuf-c code for onnx.proto (built from
 * the system's libonnx-dev at build time, never kept in the repository), the guards that run
 * before protobuf-c sees a byte, and TensorProto conversion.
 */
#ifndef SES_ONNX_INTERNAL_H
#define SES_ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <session/onnx.h>

#include "onnx.pb-c.h"

/* Defaults of ses_onnx_options_t. */
#define SES__ONNX_MAX_BYTES (UINT64_C(2) << 30)
#define SES__ONNX_MAX_ELEMENTS (UINT64_C(1) << 31)
#define SES__ONNX_MAX_NODES 1000000u
#define SES__ONNX_MAX_DEPTH 64u

/**
 * Fails with SES_INVALID_ARGUMENT, naming @p what, when @p size bytes at @p data are not
 * protobuf wire format or nest messages deeper than @p max_depth. protobuf-c unpacks nested
 * messages by recursion, so a file of a few megabytes nesting a million levels would overflow
 * the stack: this walk comes first and is itself bounded by @p max_depth.
 */
ses_status_t ses__onnx_check_wire(const uint8_t *data, size_t size, uint32_t max_depth,
                                  const char *what);

/** The dtype of an ONNX TensorProto.DataType, or SES_DTYPE_INVALID. */
ses_dtype_t ses__onnx_dtype(int32_t onnx_type);
/** The ONNX name of a TensorProto.DataType ("FLOAT", "STRING", ...). */
const char *ses__onnx_dtype_name(int32_t onnx_type);

/**
 * Converts @p t into a new tensor. Checks rank, dims, the element count against
 * @p max_elements and that the data present matches the shape exactly. @p what names the tensor
 * in messages ("initializer \"w\"").
 */
ses_status_t ses__onnx_tensor(const Onnx__TensorProto *t, uint64_t max_elements,
                              const char *what, ses_tensor_t **out_tensor);

/**
 * Maps a whole file of at most @p max_bytes, read-only (its pages are the page cache's: they
 * count in the process's memory only while touched, and ses__onnx_drop_file gives them back).
 * Give it back with ses__onnx_free_file.
 */
ses_status_t ses__onnx_read_file(const char *path, uint64_t max_bytes, uint8_t **out_data,
                                 size_t *out_size);
/** Unmaps what ses__onnx_read_file mapped. */
void ses__onnx_free_file(uint8_t *data, size_t size);
/** Gives back the resident pages of [0, @p upto) of a mapped file (read again if touched). */
void ses__onnx_drop_file(uint8_t *data, size_t size, size_t upto);

/* Where one initializer's raw_data lies in a ModelProto's bytes. */
typedef struct ses__onnx_span {
    size_t offset, len;
} ses__onnx_span_t;

/**
 * The raw_data fields of the graph's initializers (ModelProto.graph = 7, GraphProto.initializer
 * = 5, TensorProto.raw_data = 9) in file order, at most @p cap of them, of at least @p min_len
 * bytes; returns how many. A file that does not parse gives what was found before the fault.
 */
size_t ses__onnx_raw_spans(const uint8_t *data, size_t size, size_t min_len,
                           ses__onnx_span_t *spans, size_t cap);

#endif /* SES_ONNX_INTERNAL_H */
