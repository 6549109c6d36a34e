/*
 * Clip, Split, Shape, ConstantOfShape, Range.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ops.h"

/* ---------------------------------------------------------------------------------------------
 * Clip, Split, Shape, ConstantOfShape, Range.
 * ------------------------------------------------------------------------------------------- */

/* Clip(x[, min][, max]): the bounds given are one-element tensors, read on the device. */
int32_t cuda__k_clip(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    int64_t has_min = 0, has_max = 0;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    if ((st = cuda__dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK)
        return st;
    if (cuda__attr_int(node, "has_min", 0, &has_min) != SES_DRV_OK ||
        cuda__attr_int(node, "has_max", 0, &has_max) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "has_min or has_max is not an INT");
    has_min = has_min != 0;
    has_max = has_max != 0;
    int ok = (int64_t)ni == 1 + has_min + has_max && cuda__same_shape(&a[0], &a[ni]);
    for (uint32_t i = 1; ok && i < ni; i++)
        ok = a[i].count == 1;
    if (!ok)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "expected the input, one element per bound given (has_min %" PRId64
                               ", has_max %" PRId64
                               ") and an output of the input's shape; got %" PRIu32 " inputs",
                               has_min, has_max, ni);
    if (a[ni].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__clip(a[0].dtype, a[0].count, a[0].ptr, has_min ? a[1].ptr : NULL,
                                   has_max ? a[1 + has_min].ptr : NULL, a[ni].ptr,
                                   cuda__stream_of(device, launch)));
}

/* Split: each output a slab of the input along `axis`, one strided copy each. */
int32_t cuda__k_split(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[1 + CUDA_MAX_RANK];
    int64_t axis = 0, total = 0, xst[CUDA_MAX_RANK];
    int32_t st;

    (void)state;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets) ||
        !launch->node || launch->node->n_outputs < 1 || launch->node->n_outputs > CUDA_MAX_RANK)
        return device ? CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                         "Split: the launch is NULL or has no 1 to 8 outputs")
                      : SES_DRV_INVALID_ARGUMENT;
    const ses_drv_node_t *node = launch->node;
    const uint32_t no = node->n_outputs;
    if ((st = cuda__check_launch(device, launch, 1, 1, no, a)) != SES_DRV_OK ||
        (st = cuda__dtypes_agree(device, node, a, 1 + no)) != SES_DRV_OK)
        return st;
    const cuda_arg_t *x = &a[0];
    if (cuda__attr_int(node, "axis", 0, &axis) != SES_DRV_OK || axis < 0 ||
        axis >= (int64_t)x->rank)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "axis %" PRId64 " is outside rank %" PRIu32, axis, x->rank);
    for (uint32_t k = 1; k <= no; k++) {
        int ok = a[k].rank == x->rank;
        for (uint32_t d = 0; ok && d < x->rank; d++)
            ok = (int64_t)d == axis || a[k].dims[d] == x->dims[d];
        if (!ok)
            return cuda__shape_fail(device, node, "an output does not fit the input", &a[k], x);
        total += a[k].dims[axis];
    }
    if (total != x->dims[axis])
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "the outputs add up to %" PRId64 " along axis %" PRId64
                               ", the input has %" PRId64,
                               total, axis, x->dims[axis]);
    cuda__strides(x->dims, x->rank, xst);
    const uint32_t es = ses_drv_util_dtype_size(x->dtype);
    int64_t at = 0;
    for (uint32_t k = 1; k <= no; k++) {
        cuda_bcast_t g;
        memset(&g, 0, sizeof g);
        g.rank = a[k].rank;
        g.count = a[k].count;
        memcpy(g.dims, a[k].dims, a[k].rank * sizeof(int64_t));
        memcpy(g.stride[0], xst, sizeof xst);
        cuda__strides(a[k].dims, a[k].rank, g.stride[1]);
        if ((st = cuda__run_strided(device, launch, es, &g,
                                    (const char *)x->ptr + at * xst[axis] * (int64_t)es,
                                    a[k].ptr)) != SES_DRV_OK)
            return st;
        at += a[k].dims[axis];
    }
    return SES_DRV_OK;
}

/* Shape: dims start to end of the input, known on the host, stored by one small kernel. */
int32_t cuda__k_shape(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t start = 0, end = -1;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (cuda__attr_int(node, "start", 0, &start) != SES_DRV_OK ||
        cuda__attr_int(node, "end", (int64_t)a[0].rank, &end) != SES_DRV_OK || start < 0 ||
        end < start || end > (int64_t)a[0].rank || a[1].dtype != SES_DRV_DTYPE_I64 ||
        a[1].rank != 1 || a[1].dims[0] != end - start)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "start %" PRId64 " and end %" PRId64 " do not fit rank %" PRIu32
                               " and the i64 output",
                               start, end, a[0].rank);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(
        device, launch,
        cuda__store_i64(end - start, a[0].dims + start, a[1].ptr, cuda__stream_of(device, launch)));
}

/* ConstantOfShape: the output (its shape came from the input, never read) filled with `value`
 * (FLOAT for f32 and f64, INT for i32, i64 and bool). */
int32_t cuda__k_constant_of_shape(ses_drv_device_t *device, void *state,
                                  const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    double f = 0.0;
    int64_t i = 0;
    uint64_t bits = 0;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t dt = a[1].dtype;
    const int is_float = dt == SES_DRV_DTYPE_F32 || dt == SES_DRV_DTYPE_F64;
    if ((is_float ? cuda__attr_double(node, "value", 0.0, &f)
                  : cuda__attr_int(node, "value", 0, &i)) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "value is not a %s",
                               is_float ? "FLOAT" : "INT");
    if (dt == SES_DRV_DTYPE_F32) {
        const float v = (float)f;
        uint32_t u;
        memcpy(&u, &v, sizeof u);
        bits = u;
    } else if (dt == SES_DRV_DTYPE_F64) {
        memcpy(&bits, &f, sizeof bits);
    } else if (dt == SES_DRV_DTYPE_BOOL) {
        bits = i != 0;
    } else {
        bits = (uint64_t)i; /* i32 keeps the low 32 bits: the CPU's (int32_t) conversion */
    }
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__fill_bits(ses_drv_util_dtype_size(dt), a[1].count, bits, a[1].ptr,
                                        cuda__stream_of(device, launch)));
}

/* Range(start, limit, delta): the output's length was fixed by the host from the values it saw
 * at compile time; start and delta are read on the device. */
int32_t cuda__k_range(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 3, 3, 1, a)) != SES_DRV_OK ||
        (st = cuda__dtypes_agree(device, launch->node, a, 4)) != SES_DRV_OK)
        return st;
    if (a[0].count != 1 || a[1].count != 1 || a[2].count != 1 || a[3].rank != 1)
        return cuda__node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                               "start, limit and delta must be scalars and the output 1-D");
    if (a[3].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__range(a[3].dtype, a[3].count, a[0].ptr, a[2].ptr, a[3].ptr,
                                    cuda__stream_of(device, launch)));
}
