/*
 * EyeLike (a general entry): a 2-D output of the input's shape (the input is never read) with
 * ones on diagonal k (0 the main one, k > 0 above it, k < 0 below) and zeros elsewhere, in any
 * dtype.
 */
#include <inttypes.h>
#include <string.h>

#include "cpu_half.h"
#include "cpu_internal.h"

/* Writes one as element @p i of @p t. */
static void cpu__store_one(const cpu__tensor_t *t, uint64_t i) {
    void *p = t->data;
    switch (t->dtype) {
        case SES_DRV_DTYPE_F32:
            ((float *)p)[i] = 1.0f;
            break;
        case SES_DRV_DTYPE_F64:
            ((double *)p)[i] = 1.0;
            break;
        case SES_DRV_DTYPE_F16:
            ((uint16_t *)p)[i] = cpu__f16_from_double(1.0);
            break;
        case SES_DRV_DTYPE_BF16:
            ((uint16_t *)p)[i] = cpu__bf16_from_double(1.0);
            break;
        default:
            /* Integers and bool: the value 1 in the element's width, little or big endian. */
            switch (t->esize) {
                case 1:
                    ((uint8_t *)p)[i] = 1;
                    break;
                case 2:
                    ((uint16_t *)p)[i] = 1;
                    break;
                case 4:
                    ((uint32_t *)p)[i] = 1;
                    break;
                default:
                    ((uint64_t *)p)[i] = 1;
                    break;
            }
    }
}

int32_t cpu__eye_like(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    int64_t k = 0;
    int32_t st;

    if ((st = cpu__attr_int(call, "k", 1, 0, &k)) != SES_DRV_OK)
        return st;
    if (y->rank != 2 || !cpu__same_shape(x, y))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "the input and output must be 2-D and of one shape");
    if (y->count == 0)
        return SES_DRV_OK;
    memset(y->data, 0, (size_t)(y->count * y->esize));
    const int64_t rows = y->dims[0], cols = y->dims[1];
    /* Row r has its one at column r + k, for the rows where that column exists. */
    for (int64_t r = k < 0 ? -k : 0; r < rows && r + k < cols; r++)
        cpu__store_one(y, (uint64_t)(r * cols + r + k));
    return SES_DRV_OK;
}
