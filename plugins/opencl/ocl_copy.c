/*
 * Copies and strided moves: Identity and the reshapes, Transpose, Slice, Concat, Expand, Cast
 * and Gather.
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
 * Copies and strided moves
 * ------------------------------------------------------------------------------------------- */

int32_t ocl__k_copy(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int32_t st;
    cl_int err;

    (void)state;
    if ((st = ocl__prepare(device, launch, 1, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (node->n_inputs != 1 || node->n_outputs != 1 || in[0].bytes != out[0].bytes)
        return ocl__shape_fail(device, node, "element counts differ", &in[0], &out[0]);
    if (!out[0].bytes || (in[0].buf == out[0].buf && in[0].byte_off == out[0].byte_off))
        return SES_DRV_OK;
    pthread_mutex_lock(&device->lock);
    err = clEnqueueCopyBuffer(device->queue, in[0].buf->mem, out[0].buf->mem,
                              (size_t)in[0].byte_off, (size_t)out[0].byte_off,
                              (size_t)out[0].bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "clEnqueueCopyBuffer failed: %s",
                              ocl__error_name(err));
    return SES_DRV_OK;
}

int32_t ocl__k_transpose(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int64_t perm[OCL_MAX_RANK];
    cl_long ist[OCL_MAX_RANK];
    uint32_t np = 0;
    ocl_bcast_t bc;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__attr_ints(device, node, "perm", perm, &np)) != SES_DRV_OK)
        return st;
    if (np != in[0].rank || out[0].rank != in[0].rank)
        return ocl__shape_fail(device, node, "perm does not fit the ranks", &in[0], &out[0]);
    ocl__strides(in[0].dims, in[0].rank, ist);
    ocl__bcast_init(&bc, &out[0]);
    ocl__strides(out[0].dims, out[0].rank, bc.st[1]);
    for (uint32_t d = 0; d < np; d++) {
        if (perm[d] < 0 || perm[d] >= (int64_t)np || in[0].dims[perm[d]] != out[0].dims[d])
            return ocl__shape_fail(device, node, "perm does not map input to output dims", &in[0],
                                   &out[0]);
        bc.st[0][d] = ist[perm[d]];
    }
    return ocl__strided(device, node, out[0].esize, in[0].buf->mem, (cl_long)in[0].off,
                        out[0].buf->mem, (cl_long)out[0].off, out[0].count, &bc);
}

int32_t ocl__k_slice(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int64_t starts[OCL_MAX_RANK], steps[OCL_MAX_RANK];
    cl_long ist[OCL_MAX_RANK];
    uint32_t ns = 0, nt = 0;
    ocl_bcast_t bc;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__attr_ints(device, node, "starts", starts, &ns)) != SES_DRV_OK ||
        (st = ocl__attr_ints(device, node, "steps", steps, &nt)) != SES_DRV_OK)
        return st;
    if (ns != in[0].rank || nt != in[0].rank || out[0].rank != in[0].rank)
        return ocl__shape_fail(device, node, "starts/steps do not fit the ranks", &in[0], &out[0]);
    if (!out[0].count)
        return SES_DRV_OK;
    ocl__strides(in[0].dims, in[0].rank, ist);
    ocl__bcast_init(&bc, &out[0]);
    ocl__strides(out[0].dims, out[0].rank, bc.st[1]);
    cl_long base = (cl_long)in[0].off;
    for (uint32_t d = 0; d < ns; d++) {
        int64_t last = starts[d] + (out[0].dims[d] - 1) * steps[d];
        if (steps[d] == 0 || starts[d] < 0 || starts[d] >= in[0].dims[d] || last < 0 ||
            last >= in[0].dims[d])
            return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "axis %" PRIu32 ": start %" PRId64 " step %" PRId64
                                  " for %" PRId64 " elements leaves the input's %" PRId64,
                                  d, starts[d], steps[d], out[0].dims[d], in[0].dims[d]);
        base += starts[d] * ist[d];
        bc.st[0][d] = steps[d] * ist[d];
    }
    return ocl__strided(device, node, out[0].esize, in[0].buf->mem, base, out[0].buf->mem,
                        (cl_long)out[0].off, out[0].count, &bc);
}

int32_t ocl__k_concat(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[OCL_MAX_ARGS], out[1];
    int64_t axis = 0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__need_int(device, node, "axis", &axis)) != SES_DRV_OK)
        return st;
    const ocl_arg_t *y = &out[0];
    if (axis < 0 || axis >= (int64_t)y->rank)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " is outside rank %" PRIu32, axis, y->rank);
    int64_t at = 0;
    for (uint32_t k = 0; k < node->n_inputs; k++) {
        const ocl_arg_t *x = &in[k];
        int ok = x->rank == y->rank && x->esize == y->esize;
        for (uint32_t d = 0; ok && d < y->rank; d++)
            ok = d == (uint32_t)axis || x->dims[d] == y->dims[d];
        if (!ok || at + x->dims[axis] > y->dims[axis])
            return ocl__shape_fail(device, node, "an input does not fit the output", x, y);
        at += x->dims[axis];
    }
    if (at != y->dims[axis])
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "inputs add up to %" PRId64 " along axis %" PRId64
                              ", the output has %" PRId64,
                              at, axis, y->dims[axis]);
    cl_long yst[OCL_MAX_RANK];
    ocl__strides(y->dims, y->rank, yst);
    at = 0;
    for (uint32_t k = 0; k < node->n_inputs; k++) {
        const ocl_arg_t *x = &in[k];
        ocl_bcast_t bc;
        ocl__bcast_init(&bc, x);
        ocl__strides(x->dims, x->rank, bc.st[0]);
        memcpy(bc.st[1], yst, sizeof yst);
        if ((st = ocl__strided(device, node, y->esize, x->buf->mem, (cl_long)x->off, y->buf->mem,
                               (cl_long)y->off + at * yst[axis], x->count, &bc)) != SES_DRV_OK)
            return st;
        at += x->dims[axis];
    }
    return SES_DRV_OK;
}

int32_t ocl__k_expand(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    ocl_bcast_t bc;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    ocl__bcast_init(&bc, &out[0]);
    if (!ocl__bcast_operand(&bc, 0, &in[0], &out[0]))
        return ocl__shape_fail(device, node, "input does not broadcast to the output", &in[0],
                               &out[0]);
    ocl__strides(out[0].dims, out[0].rank, bc.st[1]);
    return ocl__strided(device, node, out[0].esize, in[0].buf->mem, (cl_long)in[0].off,
                        out[0].buf->mem, (cl_long)out[0].off, out[0].count, &bc);
}

/* Cast between f32 and i32, i64, u8, bool, f64 (the last only with cl_khr_fp64). */
int32_t ocl__k_cast(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    static const struct {
        uint32_t from, to;
        int kernel; /* OCL_K_*, or OCL_X_* + OCL_K_COUNT */
    } pairs[] = {
        {SES_DRV_DTYPE_F32, SES_DRV_DTYPE_F64, OCL_K_COUNT + OCL_X_CAST_F32_F64},
        {SES_DRV_DTYPE_F64, SES_DRV_DTYPE_F32, OCL_K_COUNT + OCL_X_CAST_F64_F32},
        {SES_DRV_DTYPE_F32, SES_DRV_DTYPE_I32, OCL_K_CAST_F32_I32},
        {SES_DRV_DTYPE_F32, SES_DRV_DTYPE_I64, OCL_K_CAST_F32_I64},
        {SES_DRV_DTYPE_F32, SES_DRV_DTYPE_U8, OCL_K_CAST_F32_U8},
        {SES_DRV_DTYPE_F32, SES_DRV_DTYPE_BOOL, OCL_K_CAST_F32_BOOL},
        {SES_DRV_DTYPE_I32, SES_DRV_DTYPE_F32, OCL_K_CAST_I32_F32},
        {SES_DRV_DTYPE_I64, SES_DRV_DTYPE_F32, OCL_K_CAST_I64_F32},
        {SES_DRV_DTYPE_U8, SES_DRV_DTYPE_F32, OCL_K_CAST_U8_F32},
        {SES_DRV_DTYPE_BOOL, SES_DRV_DTYPE_F32, OCL_K_CAST_BOOL_F32},
    };
    ocl_arg_t in[1], out[1];
    ocl_args_t a = {0};
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (!ocl__same_shape(&in[0], &out[0]))
        return ocl__shape_fail(device, node, "shapes differ", &in[0], &out[0]);
    int k = -1;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (pairs[i].from == in[0].dtype && pairs[i].to == out[0].dtype)
            k = pairs[i].kernel;
    if (k < 0)
        return ocl__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                              "Cast from dtype %" PRIu32 " to %" PRIu32 " is not implemented",
                              in[0].dtype, out[0].dtype);
    cl_ulong n = out[0].count;
    OCL_ARG_AT(&a, &in[0]);
    OCL_ARG_AT(&a, &out[0]);
    OCL_ARG(&a, n);
    if (k >= OCL_K_COUNT)
        return ocl__run_x(device, node, k - OCL_K_COUNT, n, &a);
    return ocl__run(device, node, k, n, &a);
}

/* Gather: indices are read back and checked on the host (the host does not check them). */
int32_t ocl__k_gather(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_args_t a = {0};
    int64_t axis = 0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__need_int(device, node, "axis", &axis)) != SES_DRV_OK)
        return st;
    const ocl_arg_t *x = &in[0], *ix = &in[1], *y = &out[0];
    if (axis < 0 || axis >= (int64_t)x->rank ||
        (ix->dtype != SES_DRV_DTYPE_I32 && ix->dtype != SES_DRV_DTYPE_I64) ||
        y->rank != x->rank - 1 + ix->rank || y->esize != x->esize)
        return ocl__shape_fail(device, node, "data, indices and output do not agree", x, y);
    cl_ulong outer = 1, inner = 1, A = (cl_ulong)x->dims[axis], nidx = ix->count;
    for (uint32_t d = 0; d < x->rank; d++) {
        if ((int64_t)d < axis)
            outer *= (cl_ulong)x->dims[d];
        else if ((int64_t)d > axis)
            inner *= (cl_ulong)x->dims[d];
    }
    for (uint32_t d = 0; d < y->rank; d++) {
        int64_t want = (int64_t)d < axis ? x->dims[d]
                       : d < (uint32_t)axis + ix->rank ? ix->dims[d - (uint32_t)axis]
                                                       : x->dims[d - ix->rank + 1];
        if (y->dims[d] != want)
            return ocl__shape_fail(device, node, "the output does not match Gather(data, indices)",
                                   x, y);
    }
    if (!y->count)
        return SES_DRV_OK;
    unsigned char *host = malloc((size_t)ix->bytes);
    if (!host)
        return ocl__node_fail(device, node, SES_DRV_OUT_OF_MEMORY, "out of host memory");
    pthread_mutex_lock(&device->lock);
    cl_int err = clEnqueueReadBuffer(device->queue, ix->buf->mem, CL_TRUE, (size_t)ix->byte_off,
                                     (size_t)ix->bytes, host, 0, NULL, NULL);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS) {
        free(host);
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "reading the indices failed: %s",
                              ocl__error_name(err));
    }
    cl_int idx64 = ix->dtype == SES_DRV_DTYPE_I64;
    for (uint64_t j = 0; j < ix->count; j++) {
        int64_t k;
        if (idx64) {
            memcpy(&k, host + j * 8, 8);
        } else {
            int32_t k32;
            memcpy(&k32, host + j * 4, 4);
            k = k32;
        }
        if (k < -(int64_t)A || k >= (int64_t)A) {
            free(host);
            return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "index %" PRId64 " at position %" PRIu64 " is outside [-%" PRIu64
                                  ", %" PRIu64 ") of axis %" PRId64,
                                  k, j, (uint64_t)A, (uint64_t)A, axis);
        }
    }
    free(host);
    int k = x->esize == 1 ? OCL_K_GATHER1
            : x->esize == 2 ? OCL_K_GATHER2
            : x->esize == 4 ? OCL_K_GATHER4
                            : OCL_K_GATHER8;
    OCL_ARG_AT(&a, x);
    OCL_ARG_AT(&a, ix);
    OCL_ARG(&a, idx64);
    OCL_ARG_AT(&a, y);
    OCL_ARG(&a, outer);
    OCL_ARG(&a, A);
    OCL_ARG(&a, nidx);
    OCL_ARG(&a, inner);
    return ocl__run(device, node, k, y->count, &a);
}
