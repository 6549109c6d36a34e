/*
 * Einsum as one loop over every combination of the labels' values (libsession parsed the
 * equation): `sizes` INTS (each label's size), `out` INTS (the output's labels), `in0`..`in2`
 * INTS (each input dimension's label; a repeated label walks the diagonal, a dimension of 1
 * under a larger label broadcasts). Products are summed in double (floats) or int64 (integers),
 * then stored in the output's dtype.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define MAX_LABELS 64

static double load_f(const cpu__tensor_t *t, int64_t at) {
    return t->dtype == SES_DRV_DTYPE_F32 ? ((const float *)(const void *)t->data)[at]
                                         : ((const double *)(const void *)t->data)[at];
}

static int64_t load_i(const cpu__tensor_t *t, int64_t at) {
    return t->dtype == SES_DRV_DTYPE_I32 ? ((const int32_t *)(const void *)t->data)[at]
                                         : ((const int64_t *)(const void *)t->data)[at];
}

int32_t cpu__einsum(const cpu__call_t *call) {
    const cpu__tensor_t *y = &call->outs[0];
    const int is_float = y->dtype == SES_DRV_DTYPE_F32 || y->dtype == SES_DRV_DTYPE_F64;
    int64_t sizes[MAX_LABELS], out[CPU__MAX_RANK], labels[CPU__MAX_RANK];
    int64_t stride[3][MAX_LABELS] = {{0}}, ostride[MAX_LABELS] = {0}, idx[MAX_LABELS] = {0};
    uint32_t n_labels, n_out, n;
    int32_t st = cpu__attr_ints(call, "sizes", sizes, MAX_LABELS, &n_labels);

    if (st == SES_DRV_OK)
        st = cpu__attr_ints(call, "out", out, CPU__MAX_RANK, &n_out);
    if (st != SES_DRV_OK)
        return st;
    if (n_out != y->rank || call->n_in > 3)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "out names %" PRIu32 " labels for an output of rank %" PRIu32, n_out,
                              y->rank);
    for (uint32_t k = 0; k < call->n_in; k++) {
        const cpu__tensor_t *x = &call->in[k];
        char name[24];
        int64_t s = 1;
        snprintf(name, sizeof name, "in%" PRIu32, k);
        if ((st = cpu__attr_ints(call, name, labels, CPU__MAX_RANK, &n)) != SES_DRV_OK)
            return st;
        if (n != x->rank)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "%s names %" PRIu32 " labels for input %" PRIu32
                                  " of rank %" PRIu32,
                                  name, n, k, x->rank);
        for (uint32_t d = x->rank; d-- > 0;) {
            const int64_t l = labels[d];
            if (l < 0 || l >= (int64_t)n_labels || (x->dims[d] != sizes[l] && x->dims[d] != 1))
                return cpu__call_fail(
                    call, SES_DRV_INVALID_ARGUMENT,
                    "input %" PRIu32 " dimension %" PRIu32 " does not fit its label", k, d);
            if (x->dims[d] != 1)
                stride[k][l] += s; /* a repeated label adds its strides: the diagonal */
            s *= x->dims[d];
        }
    }
    {
        int64_t s = 1;
        for (uint32_t d = y->rank; d-- > 0;) {
            const int64_t l = out[d];
            if (l < 0 || l >= (int64_t)n_labels || y->dims[d] != sizes[l] || ostride[l])
                return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                      "output dimension %" PRIu32 " does not fit its label", d);
            ostride[l] = s;
            s *= y->dims[d];
        }
    }
    double *fsum = is_float ? calloc(y->count ? y->count : 1, sizeof *fsum) : NULL;
    int64_t *isum = is_float ? NULL : calloc(y->count ? y->count : 1, sizeof *isum);
    if (!fsum && !isum)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "out of memory for the sums");
    int empty = 0;
    for (uint32_t l = 0; l < n_labels; l++)
        empty |= sizes[l] == 0;
    while (!empty) {
        int64_t o = 0;
        double fp = 1.0;
        int64_t ip = 1;
        for (uint32_t l = 0; l < n_labels; l++)
            o += idx[l] * ostride[l];
        for (uint32_t k = 0; k < call->n_in; k++) {
            int64_t at = 0;
            for (uint32_t l = 0; l < n_labels; l++)
                at += idx[l] * stride[k][l];
            if (is_float)
                fp *= load_f(&call->in[k], at);
            else
                ip *= load_i(&call->in[k], at);
        }
        if (is_float)
            fsum[o] += fp;
        else
            isum[o] += ip;
        /* The next combination, the last label fastest. */
        uint32_t l = n_labels;
        while (l-- > 0) {
            if (++idx[l] < sizes[l])
                break;
            idx[l] = 0;
        }
        if (l == UINT32_MAX)
            break;
    }
    for (uint64_t q = 0; q < y->count; q++) {
        switch (y->dtype) {
            case SES_DRV_DTYPE_F32:
                ((float *)(void *)y->data)[q] = (float)fsum[q];
                break;
            case SES_DRV_DTYPE_F64:
                ((double *)(void *)y->data)[q] = fsum[q];
                break;
            case SES_DRV_DTYPE_I32:
                ((int32_t *)(void *)y->data)[q] = (int32_t)isum[q];
                break;
            default:
                ((int64_t *)(void *)y->data)[q] = isum[q];
                break;
        }
    }
    free(fsum);
    free(isum);
    return SES_DRV_OK;
}
