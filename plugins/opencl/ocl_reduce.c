/*
 * Reductions, softmax and ArgMax, and the reductions' gradients.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "ocl_ops.h"


/* ---------------------------------------------------------------------------------------------
 * Reductions and softmax
 * ------------------------------------------------------------------------------------------- */

static int32_t ocl_reduce_run(ses_drv_device_t *device, const ses_drv_node_t *node,
                              const ocl_arg_t *x, const ocl_arg_t *y, const ocl_reduce_t *r,
                              uint64_t nred, int op, float scale) {
    ocl_args_t a = {0};
    cl_ulong nout = y->count, nr = nred;
    cl_int cop = op;

    OCL_ARG_AT(&a, x);
    OCL_ARG_AT(&a, y);
    OCL_ARG(&a, nout);
    OCL_ARG(&a, nr);
    OCL_ARG(&a, *r);
    OCL_ARG(&a, cop);
    OCL_ARG(&a, scale);
    return ocl__run(device, node, OCL_K_REDUCE, nout, &a);
}

int32_t ocl__k_reduce(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int64_t axes[OCL_MAX_RANK];
    uint32_t na = 0;
    cl_long ist[OCL_MAX_RANK];
    ocl_reduce_t r;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    /* The kernel's op codes, in the order of its comment. */
    static const char *const ops[] = {
        "ReduceSum",    "ReduceMean",      "ReduceMax",      "",
        "ReduceMin",    "ReduceProd",      "ReduceL1",       "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
    int op = 0;
    while (op < (int)(sizeof ops / sizeof ops[0]) - 1 && strcmp(node->op, ops[op]))
        op++;
    if ((st = ocl__attr_ints(device, node, "axes", axes, &na)) != SES_DRV_OK)
        return st;
    const ocl_arg_t *x = &in[0];
    memset(&r, 0, sizeof r);
    ocl__strides(x->dims, x->rank, ist);
    uint64_t nred = 1, nout = 1;
    uint32_t ai = 0;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (ai < na && axes[ai] == (int64_t)d) {
            r.rdims[r.rrank] = x->dims[d];
            r.rst[r.rrank++] = ist[d];
            nred *= (uint64_t)x->dims[d];
            ai++;
        } else {
            r.odims[r.orank] = x->dims[d];
            r.ost[r.orank++] = ist[d];
            nout *= (uint64_t)x->dims[d];
        }
    }
    if (ai != na)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axes are not sorted axes below rank %" PRIu32, x->rank);
    if (nout != out[0].count)
        return ocl__shape_fail(device, node, "the output does not match the reduction", x, &out[0]);
    if ((op == 2 || op == 4) && nred == 0 && nout > 0)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "%s over an empty axis has no value", node->op);
    return ocl_reduce_run(device, node, x, &out[0], &r, nred, op,
                          op == 1 ? (float)(1.0 / (double)nred) : 1.0f);
}

int32_t ocl__k_reduce_sum_like(ses_drv_device_t *device, void *state,
                               const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    cl_long ist[OCL_MAX_RANK];
    ocl_reduce_t r;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *x = &in[0], *y = &out[0];
    if (y->rank > x->rank)
        return ocl__shape_fail(device, node, "the output does not broadcast to the input", y, x);
    memset(&r, 0, sizeof r);
    ocl__strides(x->dims, x->rank, ist);
    uint64_t nred = 1;
    uint32_t lead = x->rank - y->rank;
    for (uint32_t d = 0; d < x->rank; d++) {
        int64_t od = d < lead ? -1 : y->dims[d - lead];
        if (od == x->dims[d]) {
            r.odims[r.orank] = x->dims[d];
            r.ost[r.orank++] = ist[d];
        } else if (od == -1 || od == 1) {
            r.rdims[r.rrank] = x->dims[d];
            r.rst[r.rrank++] = ist[d];
            nred *= (uint64_t)x->dims[d];
        } else {
            return ocl__shape_fail(device, node, "the output does not broadcast to the input", y,
                                   x);
        }
    }
    return ocl_reduce_run(device, node, x, y, &r, nred, 0, 1.0f);
}

int32_t ocl__k_reduce_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int64_t axes[OCL_MAX_RANK], dims[OCL_MAX_RANK];
    uint32_t na = 0;
    double scale = 1.0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__attr_ints(device, node, "axes", axes, &na)) != SES_DRV_OK ||
        (st = ocl__need_float(device, node, "scale", &scale)) != SES_DRV_OK)
        return st;
    ocl_arg_t dy = in[0];
    const ocl_arg_t *y = &out[0];
    if (dy.rank != y->rank) {
        /* keepdims = 0: put the reduced axes back as 1s. */
        if (dy.rank + na != y->rank)
            return ocl__shape_fail(device, node, "dy does not fit the output and axes", &dy, y);
        uint32_t ai = 0, k = 0;
        for (uint32_t d = 0; d < y->rank; d++) {
            if (ai < na && axes[ai] == (int64_t)d) {
                dims[d] = 1;
                ai++;
            } else {
                dims[d] = dy.dims[k++];
            }
        }
        dy.rank = y->rank;
        dy.dims = dims;
    }
    return ocl__unary_f32(device, node, &dy, y, 12, (float)scale);
}

int32_t ocl__k_softmax(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_args_t a = {0};
    int64_t axis = 0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    cl_int mode = !strcmp(node->op, "Softmax")       ? 0
                  : !strcmp(node->op, "LogSoftmax")  ? 1
                  : !strcmp(node->op, "SoftmaxGrad") ? 2
                  : !strcmp(node->op, "Hardmax")     ? 4
                                                     : 3;
    if ((st = ocl__need_int(device, node, "axis", &axis)) != SES_DRV_OK)
        return st;
    const ocl_arg_t *y = &out[0];
    const int grad = mode == 2 || mode == 3;
    const ocl_arg_t *b = grad ? &in[1] : &in[0];
    if (grad != (node->n_inputs == 2) || !ocl__same_shape(&in[0], y) || !ocl__same_shape(b, y))
        return ocl__shape_fail(device, node, "shapes differ", &in[0], y);
    if (y->rank == 0 ? axis != 0 : (axis < 0 || axis >= (int64_t)y->rank))
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " is outside rank %" PRIu32, axis, y->rank);
    cl_ulong outer = 1, inner = 1, n = y->rank ? (cl_ulong)y->dims[axis] : 1;
    for (uint32_t d = 0; d < y->rank; d++) {
        if ((int64_t)d < axis)
            outer *= (cl_ulong)y->dims[d];
        else if ((int64_t)d > axis)
            inner *= (cl_ulong)y->dims[d];
    }
    if (!y->count)
        return SES_DRV_OK;
    OCL_ARG_AT(&a, &in[0]);
    OCL_ARG_AT(&a, b);
    OCL_ARG_AT(&a, y);
    OCL_ARG(&a, outer);
    OCL_ARG(&a, n);
    OCL_ARG(&a, inner);
    OCL_ARG(&a, mode);
    return ocl__run(device, node, OCL_K_SOFTMAX, outer * inner, &a);
}

int32_t ocl__k_argmax(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    ocl_args_t a = {0};
    int64_t axis = 0, keepdims = 1, last = 0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__need_int(device, node, "axis", &axis)) ||
        (st = ocl__need_int(device, node, "keepdims", &keepdims)) ||
        (st = ocl__need_int(device, node, "select_last_index", &last)))
        return st;
    const ocl_arg_t *x = &in[0], *y = &out[0];
    if (x->rank == 0 ? axis != 0 : (axis < 0 || axis >= (int64_t)x->rank))
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " is outside rank %" PRIu32, axis, x->rank);
    cl_ulong outer = 1, inner = 1, n = x->rank ? (cl_ulong)x->dims[axis] : 1;
    for (uint32_t d = 0; d < x->rank; d++) {
        if ((int64_t)d < axis)
            outer *= (cl_ulong)x->dims[d];
        else if ((int64_t)d > axis)
            inner *= (cl_ulong)x->dims[d];
    }
    if (y->count != outer * inner || (n == 0 && y->count))
        return ocl__shape_fail(device, node, "the output does not match the input and axis", x, y);
    if (!y->count)
        return SES_DRV_OK;
    cl_int sl = last != 0, is_min = !strcmp(node->op, "ArgMin");
    OCL_ARG_AT(&a, x);
    OCL_ARG_AT(&a, y);
    OCL_ARG(&a, outer);
    OCL_ARG(&a, n);
    OCL_ARG(&a, inner);
    OCL_ARG(&a, sl);
    OCL_ARG(&a, is_min);
    return ocl__run(device, node, OCL_K_ARGMAX, outer * inner, &a);
}
