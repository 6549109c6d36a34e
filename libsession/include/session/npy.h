/*
 * NumPy .npy files (format 1.0, 2.0 and 3.0): one array per file, little-endian, C order.
 * dtypes: f32 f64 f16 i8 i16 i32 i64 u8 u16 u32 u64 bool ('<f4', '|b1', ...); bf16 has no
 * NumPy descriptor and is refused. A hostile file gives an error naming what is wrong, never a
 * crash: the header is bounded, the shape must match the data's size exactly.
 */
#ifndef SESSION_NPY_H
#define SESSION_NPY_H

#include <stddef.h>

#include <session/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Reads the array in .npy file @p path into a new tensor. */
SES_API ses_status_t ses_npy_read_file(const char *path, ses_tensor_t **out_tensor);
/** Reads a .npy image of @p size bytes at @p data. */
SES_API ses_status_t ses_npy_read(const void *data, size_t size, ses_tensor_t **out_tensor);
/** Writes @p tensor to @p path as .npy 1.0 (through a temporary file and a rename). */
SES_API ses_status_t ses_npy_write_file(const char *path, const ses_tensor_t *tensor);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_NPY_H */
