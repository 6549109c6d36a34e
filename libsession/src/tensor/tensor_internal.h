/* The tensor object behind ses_tensor_t. Host tensors only for now: data is host memory. */
#ifndef SES_TENSOR_INTERNAL_H
#define SES_TENSOR_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <session/tensor.h>

struct ses_tensor {
    atomic_size_t refs;
    ses_dtype_t dtype;
    uint32_t rank;
    int64_t dims[SES_MAX_RANK];
    size_t count; /* elements */
    size_t bytes;
    void *data;   /* host memory; 64-byte aligned when the tensor owns it */
    void (*deleter)(void *data, void *user); /* NULL: nothing to free, or owned (see owns) */
    void *user;
    int owns;     /* data was allocated by the tensor and is freed with it */
};

/**
 * Checks dtype, rank and dims and computes count and bytes; messages start with @p what
 * ("ses_tensor_create"). Shared by every constructor and by the graph's placeholders.
 */
ses_status_t ses__tensor_check_shape(const char *what, ses_dtype_t dtype, size_t rank,
                                     const int64_t *dims, size_t *out_count, size_t *out_bytes);

#endif /* SES_TENSOR_INTERNAL_H */
