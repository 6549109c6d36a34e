/*
 * Datasets: readers for the file formats training data comes in.
 */
#ifndef SESSION_DATASET_H
#define SESSION_DATASET_H

#include <session/status.h>
#include <session/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Reads an idx file (the format of MNIST and Fashion-MNIST) into a new host tensor.
 *
 * The file is a 4-byte magic — two zero bytes, a type byte (0x08 u8, 0x09 i8, 0x0B i16,
 * 0x0C i32, 0x0D f32, 0x0E f64) and a rank byte (0 to SES_MAX_RANK) — then one big-endian
 * uint32 per dimension, then the elements in row-major order, big-endian. A gzip-compressed
 * file (recognised by the gzip magic, whatever its name) is decompressed on the fly; several
 * concatenated gzip members read as one stream. @p out receives a tensor of the matching dtype
 * (SES_U8, SES_I8, SES_I16, SES_I32, SES_F32, SES_F64) and shape, in host byte order, owned by
 * the caller.
 *
 * The reader is strict: a bad magic, an unknown type, more than SES_MAX_RANK dimensions, dims
 * whose product overflows, a file shorter than its dims say (truncated), data or bytes beyond
 * them (trailing bytes), and a corrupt gzip stream each fail with SES_INVALID_ARGUMENT and a
 * message naming the file and the problem. A missing file is SES_NOT_FOUND. Dims larger than the
 * file could hold are refused before any memory is allocated for the data. On failure *@p out
 * is NULL. Thread-safety: any thread.
 */
SES_API ses_status_t ses_idx_read(const char *path, ses_tensor_t **out);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_DATASET_H */
