/*
 * Reductions over any axes, ReduceSumLike, the softmax family, ArgMax, and the gradient
 * helpers ReduceGrad and ScalarLike.
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
 * Reductions over any axes, ReduceSumLike, the softmax family, ArgMax.
 * ------------------------------------------------------------------------------------------- */

/* Splits x's dims into kept and reduced (reduced[d] set) for the reduction kernels. */
static void cuda_rsum_of(const cuda_arg_t *x, const int *reduced, cuda_rsum_t *r) {
    int64_t st[CUDA_MAX_RANK];

    memset(r, 0, sizeof *r);
    cuda__strides(x->dims, x->rank, st);
    r->out_count = r->red_count = 1;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (reduced[d]) {
            r->red_dims[r->n_red] = x->dims[d];
            r->red_stride[r->n_red++] = st[d];
            r->red_count *= x->dims[d];
        } else {
            r->keep_dims[r->n_keep] = x->dims[d];
            r->keep_stride[r->n_keep++] = st[d];
            r->out_count *= x->dims[d];
        }
    }
}

/* ReduceSum, ReduceMean, ReduceMax over the sorted `axes` (any set), keepdims or not. */
int32_t cuda__k_reduce(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t axes[CUDA_MAX_RANK], keepdims = 1, want[CUDA_MAX_RANK];
    int reduced[CUDA_MAX_RANK] = {0};
    uint32_t na = 0, nw = 0;
    cuda_rsum_t r;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda__dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda__attr_ints(device, node, "axes", axes, &na)) != SES_DRV_OK)
        return st;
    if (cuda__attr_int(node, "keepdims", 1, &keepdims) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "keepdims is not an INT");
    for (uint32_t i = 0; i < na; i++) {
        if (axes[i] < 0 || axes[i] >= (int64_t)a[0].rank || (i > 0 && axes[i] <= axes[i - 1]))
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "axes are not sorted distinct axes below rank %" PRIu32,
                                   a[0].rank);
        reduced[axes[i]] = 1;
    }
    for (uint32_t d = 0; d < a[0].rank; d++)
        if (!reduced[d] || keepdims)
            want[nw++] = reduced[d] ? 1 : a[0].dims[d];
    int ok = a[1].rank == nw;
    for (uint32_t d = 0; ok && d < nw; d++)
        ok = a[1].dims[d] == want[d];
    if (!ok)
        return cuda__shape_fail(device, node, "the output does not match the reduction", &a[0],
                                &a[1]);
    const int op = strcmp(node->op, "ReduceMax") == 0    ? CUDA_RED_MAX
                   : strcmp(node->op, "ReduceMean") == 0 ? CUDA_RED_MEAN
                                                         : CUDA_RED_SUM;
    cuda_rsum_of(&a[0], reduced, &r);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if (op == CUDA_RED_MAX && r.red_count == 0)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "reduces over an empty axis; the max of no elements is undefined");
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(
        device, launch,
        cuda__reduce(a[1].dtype, &r, op, a[0].ptr, a[1].ptr, cuda__stream_of(device, launch)));
}

/* ReduceSumLike: the input summed down to the output's shape (the reverse of broadcasting). */
int32_t cuda__k_reduce_sum_like(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int reduced[CUDA_MAX_RANK] = {0};
    cuda_rsum_t r;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda__dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    if (a[1].rank > a[0].rank)
        return cuda__shape_fail(device, launch->node, "the output does not broadcast to the input",
                                &a[1], &a[0]);
    const uint32_t lead = a[0].rank - a[1].rank;
    for (uint32_t d = 0; d < a[0].rank; d++) {
        const int64_t in = a[0].dims[d], out = d < lead ? -1 : a[1].dims[d - lead];
        if (out == in)
            continue;
        if (out != -1 && out != 1)
            return cuda__shape_fail(device, launch->node,
                                    "the output does not broadcast to the input", &a[1], &a[0]);
        reduced[d] = 1;
    }
    cuda_rsum_of(&a[0], reduced, &r);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__reduce(a[1].dtype, &r, CUDA_RED_SUM, a[0].ptr, a[1].ptr,
                                     cuda__stream_of(device, launch)));
}

/* [outer, red, inner] around one axis of @p x (rank 0: one element). */
static void cuda_view(const cuda_arg_t *x, uint32_t axis, int64_t *outer, int64_t *red,
                      int64_t *inner) {
    *outer = *inner = 1;
    *red = x->rank ? x->dims[axis] : 1;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (d < axis)
            *outer *= x->dims[d];
        else if (d > axis)
            *inner *= x->dims[d];
    }
}

/* The normalized `axis` of Softmax, LogSoftmax, their gradients and ArgMax. */
static int32_t cuda_axis(ses_drv_device_t *device, const ses_drv_node_t *node, uint32_t rank,
                         int64_t *axis) {
    if (cuda__attr_int(node, "axis", -1, axis) != SES_DRV_OK ||
        (rank == 0 ? *axis != 0 && *axis != -1 : *axis < 0 || *axis >= (int64_t)rank))
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "axis %" PRId64 " is missing or out of range for rank %" PRIu32,
                               *axis, rank);
    if (rank == 0)
        *axis = 0;
    return SES_DRV_OK;
}

/* Softmax, LogSoftmax (x), SoftmaxGrad, LogSoftmaxGrad (dy, y), all of one shape. */
int32_t cuda__k_softmax(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int64_t axis = -1, outer, red, inner;
    int32_t st;

    (void)state;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets) ||
        !launch->node || !launch->node->op)
        return device ? CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                         "the launch or its node is NULL")
                      : SES_DRV_INVALID_ARGUMENT;
    const ses_drv_node_t *node = launch->node;
    const int mode = strcmp(node->op, "Softmax") == 0       ? CUDA_SM_SOFTMAX
                     : strcmp(node->op, "LogSoftmax") == 0  ? CUDA_SM_LOG_SOFTMAX
                     : strcmp(node->op, "SoftmaxGrad") == 0 ? CUDA_SM_SOFTMAX_GRAD
                                                            : CUDA_SM_LOG_SOFTMAX_GRAD;
    const uint32_t ni = mode >= CUDA_SM_SOFTMAX_GRAD ? 2 : 1;
    if ((st = cuda__check_launch(device, launch, ni, ni, 1, a)) != SES_DRV_OK ||
        (st = cuda__dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK)
        return st;
    const cuda_arg_t *y = &a[ni];
    if (!cuda__same_shape(&a[0], y) || !cuda__same_shape(&a[ni - 1], y))
        return cuda__shape_fail(device, node, "the inputs and the output must have one shape",
                                &a[0], y);
    if ((st = cuda_axis(device, node, y->rank, &axis)) != SES_DRV_OK)
        return st;
    if (y->count == 0)
        return SES_DRV_OK;
    cuda_view(y, (uint32_t)axis, &outer, &red, &inner);
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__softmax(y->dtype, outer, red, inner, mode, a[0].ptr, a[ni - 1].ptr,
                                      y->ptr, cuda__stream_of(device, launch)));
}

int32_t cuda__k_argmax(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t axis = 0, keepdims = 1, last = 0, want[CUDA_MAX_RANK], outer, red, inner;
    uint32_t nw = 0;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_axis(device, node, a[0].rank, &axis)) != SES_DRV_OK)
        return st;
    if (cuda__attr_int(node, "keepdims", 1, &keepdims) != SES_DRV_OK ||
        cuda__attr_int(node, "select_last_index", 0, &last) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "keepdims or select_last_index is not an INT");
    for (uint32_t d = 0; d < a[0].rank; d++)
        if (d != (uint32_t)axis || keepdims)
            want[nw++] = d == (uint32_t)axis ? 1 : a[0].dims[d];
    int ok = a[1].dtype == SES_DRV_DTYPE_I64 && a[1].rank == nw;
    for (uint32_t d = 0; ok && d < nw; d++)
        ok = a[1].dims[d] == want[d];
    if (!ok)
        return cuda__shape_fail(device, node, "the output (i64) does not match the input and axis",
                                &a[0], &a[1]);
    if (a[1].count == 0)
        return SES_DRV_OK;
    cuda_view(&a[0], (uint32_t)axis, &outer, &red, &inner);
    if (red == 0)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "axis %" PRId64 " is empty; there is no largest element", axis);
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__argmax(a[0].dtype, outer, red, inner, last != 0, a[0].ptr, a[1].ptr,
                                     cuda__stream_of(device, launch)));
}

/* ---------------------------------------------------------------------------------------------
 * Gradient helpers: ReduceGrad, ScalarLike.
 * ------------------------------------------------------------------------------------------- */

/* ReduceGrad: dy broadcast back over `axes` of the output, times `scale`. */
int32_t cuda__k_reduce_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2], dy;
    cuda_bcast_t g;
    int64_t axes[CUDA_MAX_RANK], dims[CUDA_MAX_RANK];
    uint32_t n_axes = 0;
    double scale = 1.0;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda__dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda__attr_ints(device, node, "axes", axes, &n_axes)) != SES_DRV_OK)
        return st;
    if (n_axes > a[1].rank || cuda__attr_double(node, "scale", 1.0, &scale) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "axes (INTS) or scale (FLOAT) is wrong");
    /* dy at the output's rank, 1 on the reduced axes (it dropped them without keepdims). */
    dy = a[0];
    if (a[0].rank + n_axes == a[1].rank && n_axes > 0) {
        uint32_t k = 0, j = 0;
        for (uint32_t d = 0; d < a[1].rank; d++) {
            if (j < n_axes && axes[j] == (int64_t)d) {
                dims[d] = 1;
                j++;
            } else {
                dims[d] = a[0].dims[k++];
            }
        }
        dy.dims = dims;
        dy.rank = a[1].rank;
    }
    if (!cuda__bcast(&dy, &dy, &a[1], &g))
        return cuda__shape_fail(device, node, "dy does not broadcast back to the output", &a[0],
                                &a[1]);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__binary(a[1].dtype, &g, CUDA_BIN_FIRST, scale, a[0].ptr, a[0].ptr,
                                     a[1].ptr, cuda__stream_of(device, launch)));
}

/* ScalarLike: a rank-0 output holding `value` (Cast's rules from f64); the input only selected
 * the entry and is never read. */
int32_t cuda__k_scalar_like(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    double value = 0.0;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    if (cuda__attr_double(launch->node, "value", 0.0, &value) != SES_DRV_OK || a[1].count != 1)
        return cuda__node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                               "value (FLOAT) is wrong or the output is not one element");
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(
        device, launch,
        cuda__fill(a[1].dtype, 1, value, a[1].ptr, cuda__stream_of(device, launch)));
}
