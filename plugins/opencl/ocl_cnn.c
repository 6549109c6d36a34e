/*
 * The CNN ops: Conv, ConvGrad, the pools and their gradients, BatchNormalization, Dropout's
 * mask, Pad, Clip, Split, Shape, ConstantOfShape and Range.
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
 * The CNN ops: Conv (im2col and CLBlast), ConvGrad (col2im), the pools and their gradients,
 * BatchNormalization (inference), Dropout's mask, Pad, Clip, Split, Shape, ConstantOfShape and
 * Range. Window attributes come normalized from the host (DRV-54); every coordinate a kernel
 * reaches is checked against the input's dims on the device, so nothing is read outside it.
 * ------------------------------------------------------------------------------------------- */

#define OCL_SPATIAL_MAX (OCL_MAX_RANK - 2)
#define OCL_SCRATCH_BYTES (UINT64_C(64) << 20) /* im2col columns per chunk of images */

/* Mirrors win_t in ocl_kernels.cl. */
typedef struct ocl_win {
    cl_long k[OCL_SPATIAL_MAX], s[OCL_SPATIAL_MAX], d[OCL_SPATIAL_MAX];
    cl_long pb[OCL_SPATIAL_MAX], pe[OCL_SPATIAL_MAX];
    cl_long in[OCL_SPATIAL_MAX], out[OCL_SPATIAL_MAX];
    cl_long k_count, in_count, out_count;
    cl_int n;
} ocl_win_t;

/* Mirrors pad_t in ocl_kernels.cl. */
typedef struct ocl_pad {
    cl_long odims[OCL_MAX_RANK];
    cl_long idims[OCL_MAX_RANK];
    cl_long begin[OCL_MAX_RANK];
    cl_int rank;
    cl_int mode;
} ocl_pad_t;

/*
 * Reads the window of a pool or convolution from @p x ([N, C, in...]) to @p y ([N, M, out...]):
 * ranks agree and are at least 3, N agrees, the four attributes have one entry per spatial dim
 * (pads two), kernel, strides and dilations >= 1 and pads >= 0.
 */
static int32_t ocl_read_window(ses_drv_device_t *device, const ses_drv_node_t *node,
                               const ocl_arg_t *x, const ocl_arg_t *y, ocl_win_t *w) {
    int64_t k[OCL_SPATIAL_MAX], s[OCL_SPATIAL_MAX], d[OCL_SPATIAL_MAX];
    int64_t pads[2 * OCL_SPATIAL_MAX];
    uint32_t nk = 0, ns = 0, nd = 0, np = 0;
    int32_t st;

    if (x->rank < 3 || y->rank != x->rank || y->dims[0] != x->dims[0])
        return ocl__shape_fail(device, node, "expected [N, C, spatial...] in and out", x, y);
    memset(w, 0, sizeof *w);
    w->n = (cl_int)(x->rank - 2);
    if ((st = ocl__attr_ints_max(device, node, "kernel_shape", k, OCL_SPATIAL_MAX, &nk)) ||
        (st = ocl__attr_ints_max(device, node, "strides", s, OCL_SPATIAL_MAX, &ns)) ||
        (st = ocl__attr_ints_max(device, node, "dilations", d, OCL_SPATIAL_MAX, &nd)) ||
        (st = ocl__attr_ints_max(device, node, "pads", pads, 2 * OCL_SPATIAL_MAX, &np)))
        return st;
    if (nk != (uint32_t)w->n || ns != (uint32_t)w->n || nd != (uint32_t)w->n ||
        np != 2 * (uint32_t)w->n)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "kernel_shape, strides, dilations and pads have %" PRIu32 ", %" PRIu32
                              ", %" PRIu32 " and %" PRIu32
                              " entries; the input has %d spatial dims",
                              nk, ns, nd, np, (int)w->n);
    w->k_count = w->in_count = w->out_count = 1;
    for (cl_int i = 0; i < w->n; i++) {
        w->k[i] = k[i];
        w->s[i] = s[i];
        w->d[i] = d[i];
        w->pb[i] = pads[i];
        w->pe[i] = pads[w->n + i];
        w->in[i] = x->dims[2 + i];
        w->out[i] = y->dims[2 + i];
        if (k[i] < 1 || s[i] < 1 || d[i] < 1 || w->pb[i] < 0 || w->pe[i] < 0 || k[i] > INT32_MAX ||
            s[i] > INT32_MAX || d[i] > INT32_MAX || w->pb[i] > INT32_MAX || w->pe[i] > INT32_MAX)
            return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "window attributes out of range along spatial dim %d: kernel "
                                  "%" PRId64 ", stride %" PRId64 ", dilation %" PRId64
                                  ", pads %" PRId64 " and %" PRId64,
                                  (int)i, k[i], s[i], d[i], (int64_t)w->pb[i], (int64_t)w->pe[i]);
        w->k_count *= w->k[i];
        w->in_count *= w->in[i];
        w->out_count *= w->out[i];
    }
    return SES_DRV_OK;
}

/* Whether the column matrix is the image itself: 1x1 kernel, stride 1, no padding. */
static int ocl_col_is_image(const ocl_win_t *w) {
    for (cl_int i = 0; i < w->n; i++)
        if (w->k[i] != 1 || w->s[i] != 1 || w->pb[i] || w->pe[i] || w->in[i] != w->out[i])
            return 0;
    return 1;
}

typedef struct ocl_conv {
    ocl_win_t w;
    int64_t batch, c, m, group, cg, mg, kdim; /* kdim = cg * k_count */
    uint64_t chunk;                           /* images per im2col chunk */
    int f64;                                  /* f64 rather than f32 */
    uint32_t esize;
} ocl_conv_t;

/* Checks X, W and Y (the convolution's output, or dy) against each other and the attributes. */
static int32_t ocl_conv_check(ses_drv_device_t *device, const ses_drv_node_t *node,
                              const ocl_arg_t *x, const ocl_arg_t *wt, const ocl_arg_t *y,
                              ocl_conv_t *sh) {
    int32_t st;

    if ((st = ocl_read_window(device, node, x, y, &sh->w)) != SES_DRV_OK)
        return st;
    if ((st = ocl__need_int(device, node, "group", &sh->group)) != SES_DRV_OK)
        return st;
    sh->batch = x->dims[0];
    sh->c = x->dims[1];
    sh->m = y->dims[1];
    int ok = wt->rank == x->rank && sh->group >= 1 && wt->dims[0] == sh->m &&
             sh->c % sh->group == 0 && sh->m % sh->group == 0 && wt->dims[1] == sh->c / sh->group;
    for (cl_int i = 0; ok && i < sh->w.n; i++)
        ok = wt->dims[2 + i] == sh->w.k[i];
    if (!ok)
        return ocl__shape_fail(device, node, "X and W do not fit a convolution with this group", x,
                               wt);
    sh->cg = sh->c / sh->group;
    sh->mg = sh->m / sh->group;
    sh->kdim = sh->cg * sh->w.k_count;
    sh->f64 = x->dtype == SES_DRV_DTYPE_F64;
    sh->esize = x->esize;
    uint64_t per_image =
        (uint64_t)sh->c * (uint64_t)sh->w.k_count * (uint64_t)sh->w.out_count * sh->esize;
    uint64_t limit =
        OCL_SCRATCH_BYTES < device->info->max_alloc ? OCL_SCRATCH_BYTES : device->info->max_alloc;
    if (per_image > device->info->max_alloc)
        return ocl__node_fail(device, node, SES_DRV_OUT_OF_MEMORY,
                              "one image's column matrix takes %" PRIu64
                              " bytes, more than the device's largest allocation (%" PRIu64 ")",
                              per_image, device->info->max_alloc);
    sh->chunk = per_image ? limit / per_image : (uint64_t)sh->batch;
    if (sh->chunk < 1)
        sh->chunk = 1;
    if (sh->chunk > (uint64_t)sh->batch)
        sh->chunk = (uint64_t)sh->batch;
    return SES_DRV_OK;
}

/* A scratch buffer of @p bytes (at least 1) for one launch. */
static int32_t ocl_scratch(ses_drv_device_t *device, const ses_drv_node_t *node, uint64_t bytes,
                           cl_mem *out) {
    cl_int err = CL_SUCCESS;
    *out =
        clCreateBuffer(device->context, CL_MEM_READ_WRITE, (size_t)(bytes ? bytes : 1), NULL, &err);
    if (!*out || err != CL_SUCCESS) {
        *out = NULL;
        return ocl__node_fail(device, node, SES_DRV_OUT_OF_MEMORY,
                              "cannot allocate %" PRIu64 " bytes of scratch memory: %s", bytes,
                              ocl__error_name(err));
    }
    return SES_DRV_OK;
}

/* im2col of @p planes whole (image, channel) planes of x, from element offset @p xo, into the
 * column buffer. */
static int32_t ocl_im2col(ses_drv_device_t *device, const ses_drv_node_t *node, int f64, cl_mem x,
                          cl_ulong xo, uint64_t planes, const ocl_win_t *w, cl_mem col) {
    ocl_args_t a = {0};
    cl_ulong co = 0, total = planes * (uint64_t)w->k_count * (uint64_t)w->out_count;
    OCL_ARG(&a, x);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, col);
    OCL_ARG(&a, co);
    OCL_ARG(&a, total);
    OCL_ARG(&a, *w);
    return ocl__run_x(device, node, f64 ? OCL_X_IM2COL_F64 : OCL_X_IM2COL, total, &a);
}

/* Waits for the GEMMs queued under the device lock, unlocks it and reports the first failure. */
static int32_t ocl_blast_finish(ses_drv_device_t *device, const ses_drv_node_t *node,
                                CLBlastStatusCode s) {
    cl_int err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (s != CLBlastSuccess)
        return ocl__blast_fail(device, node, s);
    if (err != CL_SUCCESS)
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "clFinish failed: %s",
                              ocl__error_name(err));
    return SES_DRV_OK;
}

int32_t ocl__k_conv(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    ocl_conv_t sh;
    cl_mem col = NULL;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *x = &in[0], *wt = &in[1], *y = &out[0];
    const ocl_arg_t *b = node->n_inputs == 3 ? &in[2] : NULL;
    if ((st = ocl_conv_check(device, node, x, wt, y, &sh)) != SES_DRV_OK)
        return st;
    if (b && (b->rank != 1 || b->dims[0] != sh.m))
        return ocl__shape_fail(device, node, "B must have one entry per filter", b, wt);
    if (!y->count)
        return SES_DRV_OK;
    const uint64_t P = (uint64_t)sh.w.out_count;
    double beta = 0.0;
    if (b) {
        /* y starts as the bias; the GEMMs add the products onto it. */
        ocl_args_t a = {0};
        cl_ulong bo = b->off, yo = y->off, n = y->count, inner = P, C = (cl_ulong)sh.m;
        OCL_ARG(&a, b->buf->mem);
        OCL_ARG(&a, bo);
        OCL_ARG(&a, y->buf->mem);
        OCL_ARG(&a, yo);
        OCL_ARG(&a, n);
        OCL_ARG(&a, inner);
        OCL_ARG(&a, C);
        if ((st = ocl__run_x(device, node, sh.f64 ? OCL_X_CHANNEL_FILL_F64 : OCL_X_CHANNEL_FILL, n,
                             &a)) != SES_DRV_OK)
            return st;
        beta = 1.0;
    }
    if (sh.kdim == 0)
        return b ? SES_DRV_OK : ocl__fill_zero(device, node, y);
    const int direct = ocl_col_is_image(&sh.w);
    const uint64_t plane_cols = (uint64_t)sh.w.k_count * P; /* one channel's column rows */
    if (!direct &&
        (st = ocl_scratch(device, node, sh.chunk * (uint64_t)sh.c * plane_cols * sh.esize, &col)) !=
            SES_DRV_OK)
        return st;
    for (uint64_t n0 = 0; n0 < (uint64_t)sh.batch && st == SES_DRV_OK; n0 += sh.chunk) {
        uint64_t nb = (uint64_t)sh.batch - n0 < sh.chunk ? (uint64_t)sh.batch - n0 : sh.chunk;
        if (!direct && (st = ocl_im2col(device, node, sh.f64, x->buf->mem,
                                        x->off + n0 * (uint64_t)sh.c * (uint64_t)sh.w.in_count,
                                        nb * (uint64_t)sh.c, &sh.w, col)) != SES_DRV_OK)
            break;
        CLBlastStatusCode s = CLBlastSuccess;
        pthread_mutex_lock(&device->lock);
        for (uint64_t n = 0; n < nb && s == CLBlastSuccess; n++)
            for (int64_t g = 0; g < sh.group && s == CLBlastSuccess; g++) {
                uint64_t plane = n * (uint64_t)sh.c + (uint64_t)(g * sh.cg);
                cl_mem bm = direct ? x->buf->mem : col;
                size_t bo =
                    direct
                        ? (size_t)(x->off + (n0 * (uint64_t)sh.c + plane) * (uint64_t)sh.w.in_count)
                        : (size_t)(plane * plane_cols);
                size_t yo =
                    (size_t)(y->off + ((n0 + n) * (uint64_t)sh.m + (uint64_t)(g * sh.mg)) * P);
                s = ocl__gemm(device, sh.f64, 0, 0, (size_t)sh.mg, (size_t)P, (size_t)sh.kdim, 1.0,
                              wt->buf->mem, (size_t)(wt->off + (uint64_t)(g * sh.mg * sh.kdim)), bm,
                              bo, beta, y->buf->mem, yo);
            }
        st = ocl_blast_finish(device, node, s);
    }
    if (col)
        clReleaseMemObject(col);
    return st;
}

/* ConvGrad: inputs dy, X, W; input 0 gives dX (col2im of W^T dy), 1 gives dW (dy col^T). */
int32_t ocl__k_conv_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    ocl_conv_t sh;
    cl_mem col = NULL;
    int64_t input = 0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *dy = &in[0], *x = &in[1], *wt = &in[2], *g_out = &out[0];
    if ((st = ocl_conv_check(device, node, x, wt, dy, &sh)) != SES_DRV_OK ||
        (st = ocl__need_int(device, node, "input", &input)) != SES_DRV_OK)
        return st;
    if ((input != 0 && input != 1) || !ocl__same_shape(g_out, input ? wt : x))
        return ocl__shape_fail(device, node,
                               "the output must be shaped as X (input 0) or W (input 1)", g_out,
                               input ? wt : x);
    if (!g_out->count)
        return SES_DRV_OK;
    if (input == 1 || !dy->count || !sh.kdim)
        if ((st = ocl__fill_zero(device, node, g_out)) != SES_DRV_OK)
            return st;
    if (!dy->count || !sh.kdim)
        return SES_DRV_OK;
    const uint64_t P = (uint64_t)sh.w.out_count, C = (uint64_t)sh.c;
    const uint64_t plane_cols = (uint64_t)sh.w.k_count * P;
    const int direct = ocl_col_is_image(&sh.w);
    if (!direct &&
        (st = ocl_scratch(device, node, sh.chunk * C * plane_cols * sh.esize, &col)) != SES_DRV_OK)
        return st;
    for (uint64_t n0 = 0; n0 < (uint64_t)sh.batch && st == SES_DRV_OK; n0 += sh.chunk) {
        uint64_t nb = (uint64_t)sh.batch - n0 < sh.chunk ? (uint64_t)sh.batch - n0 : sh.chunk;
        uint64_t x0 = n0 * C * (uint64_t)sh.w.in_count; /* the chunk's first element of X */
        if (input == 1 && !direct &&
            (st = ocl_im2col(device, node, sh.f64, x->buf->mem, x->off + x0, nb * C, &sh.w, col)) !=
                SES_DRV_OK)
            break;
        CLBlastStatusCode s = CLBlastSuccess;
        pthread_mutex_lock(&device->lock);
        for (uint64_t n = 0; n < nb && s == CLBlastSuccess; n++)
            for (int64_t g = 0; g < sh.group && s == CLBlastSuccess; g++) {
                uint64_t plane = n * C + (uint64_t)(g * sh.cg);
                size_t dyo =
                    (size_t)(dy->off + ((n0 + n) * (uint64_t)sh.m + (uint64_t)(g * sh.mg)) * P);
                size_t wo = (size_t)(wt->off + (uint64_t)(g * sh.mg * sh.kdim));
                cl_mem cm = direct ? (input ? x->buf->mem : g_out->buf->mem) : col;
                size_t co = direct ? (size_t)((input ? x->off : g_out->off) + x0 +
                                              plane * (uint64_t)sh.w.in_count)
                                   : (size_t)(plane * plane_cols);
                if (input == 1) /* dW_g[mg, kdim] += dy_g[mg, P] * col[kdim, P]^T */
                    s = ocl__gemm(device, sh.f64, 0, 1, (size_t)sh.mg, (size_t)sh.kdim, (size_t)P,
                                  1.0, dy->buf->mem, dyo, cm, co, 1.0, g_out->buf->mem,
                                  (size_t)(g_out->off + (uint64_t)(g * sh.mg * sh.kdim)));
                else /* col[kdim, P] = W_g[mg, kdim]^T * dy_g[mg, P] */
                    s = ocl__gemm(device, sh.f64, 1, 0, (size_t)sh.kdim, (size_t)P, (size_t)sh.mg,
                                  1.0, wt->buf->mem, wo, dy->buf->mem, dyo, 0.0, cm, co);
            }
        st = ocl_blast_finish(device, node, s);
        if (st == SES_DRV_OK && input == 0 && !direct) {
            ocl_args_t a = {0};
            cl_ulong co = 0, xo = g_out->off + x0, total = nb * C * (uint64_t)sh.w.in_count;
            OCL_ARG(&a, col);
            OCL_ARG(&a, co);
            OCL_ARG(&a, g_out->buf->mem);
            OCL_ARG(&a, xo);
            OCL_ARG(&a, total);
            OCL_ARG(&a, sh.w);
            st = ocl__run_x(device, node, sh.f64 ? OCL_X_COL2IM_F64 : OCL_X_COL2IM, total, &a);
        }
    }
    if (col)
        clReleaseMemObject(col);
    return st;
}

/* MaxPool, AveragePool (input X) and MaxPoolGrad (dy, X), AveragePoolGrad (dy). */
int32_t ocl__k_pool(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_win_t w;
    int64_t include_pad = 0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const int avg = !strncmp(node->op, "AveragePool", 11);
    const int grad = strstr(node->op, "Grad") != NULL;
    /* The forward pool's input and output. */
    const ocl_arg_t *fx = grad ? &out[0] : &in[0], *fy = grad ? &in[0] : &out[0];
    if ((st = ocl_read_window(device, node, fx, fy, &w)) != SES_DRV_OK)
        return st;
    if (fx->dims[1] != fy->dims[1] || (grad && !avg && !ocl__same_shape(&in[1], &out[0])))
        return ocl__shape_fail(device, node, "the pool's input and output do not agree", fx, fy);
    if (avg && (st = ocl__need_int(device, node, "count_include_pad", &include_pad)) != SES_DRV_OK)
        return st;
    cl_int op = avg, inc = include_pad != 0;
    const int f64 = fx->dtype == SES_DRV_DTYPE_F64;
    ocl_args_t a = {0};
    if (!grad) {
        cl_ulong xo = fx->off, yo = fy->off, total = fy->count;
        OCL_ARG(&a, fx->buf->mem);
        OCL_ARG(&a, xo);
        OCL_ARG(&a, fy->buf->mem);
        OCL_ARG(&a, yo);
        OCL_ARG(&a, total);
        OCL_ARG(&a, w);
        OCL_ARG(&a, op);
        OCL_ARG(&a, inc);
        return ocl__run_x(device, node, f64 ? OCL_X_POOL_F64 : OCL_X_POOL, total, &a);
    }
    if (!fy->count)
        return ocl__fill_zero(device, node, fx);
    const ocl_arg_t *x = avg ? &in[0] : &in[1]; /* AveragePoolGrad reads no X */
    cl_ulong dyo = fy->off, xo = x->off, dxo = fx->off;
    cl_ulong planes = (cl_ulong)fx->dims[0] * (cl_ulong)fx->dims[1];
    OCL_ARG(&a, fy->buf->mem);
    OCL_ARG(&a, dyo);
    OCL_ARG(&a, x->buf->mem);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, fx->buf->mem);
    OCL_ARG(&a, dxo);
    OCL_ARG(&a, planes);
    OCL_ARG(&a, w);
    OCL_ARG(&a, op);
    OCL_ARG(&a, inc);
    return ocl__run_x(device, node, f64 ? OCL_X_POOL_GRAD_F64 : OCL_X_POOL_GRAD, planes, &a);
}

int32_t ocl__k_batch_norm(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[5], out[1];
    double eps = 0.0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__need_float(device, node, "epsilon", &eps)) != SES_DRV_OK)
        return st;
    const ocl_arg_t *x = &in[0], *y = &out[0];
    int ok = node->n_inputs == 5 && x->rank >= 2 && ocl__same_shape(x, y);
    for (uint32_t i = 1; ok && i < 5; i++)
        ok = in[i].rank == 1 && in[i].dims[0] == x->dims[1];
    if (!ok)
        return ocl__shape_fail(
            device, node, "X must be [N, C, ...] with Y its shape and each parameter [C]", x, y);
    if (!y->count)
        return SES_DRV_OK;
    ocl_args_t a = {0};
    cl_ulong C = (cl_ulong)x->dims[1], n = y->count, inner = n / ((cl_ulong)x->dims[0] * C);
    cl_ulong off[6] = {in[0].off, in[1].off, in[2].off, in[3].off, in[4].off, y->off};
    float feps = (float)eps;
    for (uint32_t i = 0; i < 5; i++) {
        OCL_ARG(&a, in[i].buf->mem);
        OCL_ARG(&a, off[i]);
    }
    OCL_ARG(&a, y->buf->mem);
    OCL_ARG(&a, off[5]);
    OCL_ARG(&a, n);
    OCL_ARG(&a, inner);
    OCL_ARG(&a, C);
    if (x->dtype == SES_DRV_DTYPE_F64) {
        OCL_ARG(&a, eps);
        return ocl__run_x(device, node, OCL_X_BATCH_NORM_F64, n, &a);
    }
    OCL_ARG(&a, feps);
    return ocl__run_x(device, node, OCL_X_BATCH_NORM, n, &a);
}

/* Dropout in inference: the data unchanged, and a mask of all true. */
int32_t ocl__k_dropout(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[2];
    const cl_uchar one = 1;
    int32_t st;
    cl_int err = CL_SUCCESS;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (node->n_outputs != 2 || !ocl__same_shape(&in[0], &out[0]) ||
        !ocl__same_shape(&in[0], &out[1]) || out[1].esize != 1 || in[0].bytes != out[0].bytes)
        return ocl__shape_fail(device, node, "the output and mask must have the data's shape",
                               &in[0], &out[1]);
    if (!in[0].count)
        return SES_DRV_OK;
    pthread_mutex_lock(&device->lock);
    err =
        clEnqueueCopyBuffer(device->queue, in[0].buf->mem, out[0].buf->mem, (size_t)in[0].byte_off,
                            (size_t)out[0].byte_off, (size_t)out[0].bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueFillBuffer(device->queue, out[1].buf->mem, &one, 1, (size_t)out[1].byte_off,
                                  (size_t)out[1].bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "copying the data failed: %s",
                              ocl__error_name(err));
    return SES_DRV_OK;
}

/* Reads pads and mode for data @p x padded into @p y (Pad, and PadGrad backwards) into @p pd. */
static int32_t ocl_pad_setup(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const ocl_arg_t *x, const ocl_arg_t *y, ocl_pad_t *pd) {
    int64_t pads[2 * OCL_MAX_RANK], mode = 0;
    uint32_t np = 0;
    int32_t st;

    if ((st = ocl__attr_ints_max(device, node, "pads", pads, 2 * OCL_MAX_RANK, &np)) ||
        (st = ocl__need_int(device, node, "mode", &mode)))
        return st;
    int ok =
        np == 2 * x->rank && y->rank == x->rank && mode >= 0 && mode <= 2 && y->esize == x->esize;
    memset(pd, 0, sizeof *pd);
    for (uint32_t d = 0; ok && d < x->rank; d++) {
        pd->odims[d] = y->dims[d];
        pd->idims[d] = x->dims[d];
        pd->begin[d] = pads[d];
        ok = x->dims[d] + pads[d] + pads[x->rank + d] == y->dims[d] &&
             (mode != 1 || x->dims[d] > 0 || y->dims[d] == 0);
    }
    if (!ok)
        return ocl__shape_fail(device, node, "pads and mode do not take the data to the output", x,
                               y);
    pd->rank = (cl_int)x->rank;
    pd->mode = (cl_int)mode;
    return SES_DRV_OK;
}

int32_t ocl__k_pad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_pad_t pd;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *x = &in[0], *y = &out[0];
    const ocl_arg_t *c = node->n_inputs == 2 ? &in[1] : NULL;
    if ((st = ocl_pad_setup(device, node, x, y, &pd)) != SES_DRV_OK)
        return st;
    if (c && (c->count != 1 || c->esize != x->esize))
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "constant_value must hold one element of the data's dtype");
    if (!y->count)
        return SES_DRV_OK;
    int k = x->esize == 4 ? OCL_X_PAD4 : x->esize == 8 ? OCL_X_PAD8 : -1;
    if (k < 0)
        return ocl__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                              "Pad of %" PRIu32 "-byte elements is not implemented", x->esize);
    ocl_args_t a = {0};
    cl_ulong co = c ? c->off : 0, n = y->count;
    cl_int has_c = c != NULL;
    cl_mem cm = c ? c->buf->mem : x->buf->mem;
    OCL_ARG_AT(&a, x);
    OCL_ARG(&a, cm);
    OCL_ARG(&a, co);
    OCL_ARG(&a, has_c);
    OCL_ARG_AT(&a, y);
    OCL_ARG(&a, n);
    OCL_ARG(&a, pd);
    return ocl__run_x(device, node, k, n, &a);
}

/* PadGrad: one work item per element of dx, gathering the elements of dy Pad read from it. */
int32_t ocl__k_pad_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    ocl_pad_t pd;
    ocl_args_t a = {0};
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *dy = &in[0], *dx = &out[0];
    if ((st = ocl_pad_setup(device, node, dx, dy, &pd)) != SES_DRV_OK)
        return st;
    cl_ulong n = dx->count;
    OCL_ARG_AT(&a, dy);
    OCL_ARG_AT(&a, dx);
    OCL_ARG(&a, n);
    OCL_ARG(&a, pd);
    return ocl__run_x(device, node,
                      dx->dtype == SES_DRV_DTYPE_F64 ? OCL_X_PAD_GRAD_F64 : OCL_X_PAD_GRAD, n, &a);
}

int32_t ocl__k_clip(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    int64_t has_min = 0, has_max = 0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 1, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__need_int2(device, node, "has_min", &has_min, "has_max", &has_max)) != SES_DRV_OK)
        return st;
    has_min = has_min != 0;
    has_max = has_max != 0;
    int ok = (int64_t)node->n_inputs == 1 + has_min + has_max && ocl__same_shape(&in[0], &out[0]);
    for (uint32_t i = 1; ok && i < node->n_inputs; i++)
        ok = in[i].count == 1 && in[i].dtype == in[0].dtype;
    if (!ok)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "expected the input, one element per bound given (has_min %" PRId64
                              ", has_max %" PRId64
                              ") and an output of the input's shape; got %" PRIu32 " inputs",
                              has_min, has_max, node->n_inputs);
    int k = in[0].dtype == SES_DRV_DTYPE_F32   ? OCL_X_CLIP_F32
            : in[0].dtype == SES_DRV_DTYPE_I32 ? OCL_X_CLIP_I32
            : in[0].dtype == SES_DRV_DTYPE_I64 ? OCL_X_CLIP_I64
            : in[0].dtype == SES_DRV_DTYPE_F64 ? OCL_X_CLIP_F64
                                               : -1;
    if (k < 0)
        return ocl__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                              "Clip of dtype %" PRIu32 " is not implemented", in[0].dtype);
    const ocl_arg_t *lo = has_min ? &in[1] : &in[0], *hi = has_max ? &in[1 + has_min] : &in[0];
    ocl_args_t a = {0};
    cl_ulong n = out[0].count;
    cl_int hmin = (cl_int)has_min, hmax = (cl_int)has_max;
    OCL_ARG_AT(&a, &in[0]);
    OCL_ARG_AT(&a, lo);
    OCL_ARG(&a, hmin);
    OCL_ARG_AT(&a, hi);
    OCL_ARG(&a, hmax);
    OCL_ARG_AT(&a, &out[0]);
    OCL_ARG(&a, n);
    return ocl__run_x(device, node, k, n, &a);
}

/* Split: one strided copy per output, from its slab of the input along the axis. */
int32_t ocl__k_split(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[8];
    int64_t axis = 0, total = 0;
    cl_long xst[OCL_MAX_RANK];
    int32_t st;

    (void)state;
    if ((st = ocl__prepare_n(device, launch, 0, in, out, 8)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__need_int(device, node, "axis", &axis)) != SES_DRV_OK)
        return st;
    const ocl_arg_t *x = &in[0];
    int ok = node->n_outputs >= 1 && axis >= 0 && axis < (int64_t)x->rank;
    for (uint32_t k = 0; ok && k < node->n_outputs; k++) {
        const ocl_arg_t *o = &out[k];
        ok = o->rank == x->rank && o->esize == x->esize;
        for (uint32_t d = 0; ok && d < x->rank; d++)
            ok = (int64_t)d == axis || o->dims[d] == x->dims[d];
        total += ok ? o->dims[axis] : 0;
    }
    if (!ok || total != x->dims[axis])
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "the outputs do not split the input along axis %" PRId64, axis);
    ocl__strides(x->dims, x->rank, xst);
    int64_t at = 0;
    for (uint32_t k = 0; k < node->n_outputs; k++) {
        const ocl_arg_t *o = &out[k];
        ocl_bcast_t bc;
        ocl__bcast_init(&bc, o);
        memcpy(bc.st[0], xst, sizeof xst);
        ocl__strides(o->dims, o->rank, bc.st[1]);
        if ((st =
                 ocl__strided(device, node, o->esize, x->buf->mem, (cl_long)x->off + at * xst[axis],
                              o->buf->mem, (cl_long)o->off, o->count, &bc)) != SES_DRV_OK)
            return st;
        at += o->dims[axis];
    }
    return SES_DRV_OK;
}

/* Writes @p bytes from @p host at the output; blocking. */
static int32_t ocl_write_out(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const ocl_arg_t *y, const void *host, size_t bytes) {
    cl_int err;
    if (!bytes)
        return SES_DRV_OK;
    pthread_mutex_lock(&device->lock);
    err = clEnqueueWriteBuffer(device->queue, y->buf->mem, CL_TRUE, (size_t)y->byte_off, bytes,
                               host, 0, NULL, NULL);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "clEnqueueWriteBuffer failed: %s",
                              ocl__error_name(err));
    return SES_DRV_OK;
}

/* Shape: the dims are in the descriptor, so the output is one buffer write. */
int32_t ocl__k_shape(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int64_t start = 0, end = 0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__need_int2(device, node, "start", &start, "end", &end)) != SES_DRV_OK)
        return st;
    const ocl_arg_t *x = &in[0], *y = &out[0];
    if (start < 0 || end < start || end > (int64_t)x->rank || y->rank != 1 ||
        y->dims[0] != end - start || y->dtype != SES_DRV_DTYPE_I64)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "start %" PRId64 " and end %" PRId64 " do not fit rank %" PRIu32
                              " and the output",
                              start, end, x->rank);
    if (end == start)
        return SES_DRV_OK;
    return ocl_write_out(device, node, y, x->dims + start, (size_t)(end - start) * 8);
}

/* ConstantOfShape: a fill with the value's bytes. */
int32_t ocl__k_constant_of_shape(ses_drv_device_t *device, void *state,
                                 const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    unsigned char pattern[8];
    double f = 0.0;
    int64_t i = 0;
    int32_t st;
    cl_int err;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *y = &out[0];
    const int is_float = y->dtype == SES_DRV_DTYPE_F32 || y->dtype == SES_DRV_DTYPE_F64;
    if ((st = ocl__need_attr(device, node, "value",
                             is_float ? ocl__attr_float(node, "value", &f)
                                      : ocl__attr_int(node, "value", &i))) != SES_DRV_OK)
        return st;
    switch (y->dtype) {
        case SES_DRV_DTYPE_F32: {
            float v = (float)f;
            memcpy(pattern, &v, 4);
            break;
        }
        case SES_DRV_DTYPE_F64: memcpy(pattern, &f, 8); break;
        case SES_DRV_DTYPE_I32: {
            int32_t v = (int32_t)i;
            memcpy(pattern, &v, 4);
            break;
        }
        case SES_DRV_DTYPE_I64: memcpy(pattern, &i, 8); break;
        case SES_DRV_DTYPE_BOOL: pattern[0] = i != 0; break;
        default:
            return ocl__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                                  "ConstantOfShape of dtype %" PRIu32 " is not implemented",
                                  y->dtype);
    }
    if (!y->bytes)
        return SES_DRV_OK;
    pthread_mutex_lock(&device->lock);
    err = clEnqueueFillBuffer(device->queue, y->buf->mem, pattern, y->esize, (size_t)y->byte_off,
                              (size_t)y->bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "clEnqueueFillBuffer failed: %s",
                              ocl__error_name(err));
    return SES_DRV_OK;
}

/* Range: the three scalars are read back, the count checked against the output's (the host
 * sized it at compile time) and the values computed on the host as the CPU driver does, in T,
 * then written: one small transfer each way, and bit-identical results. */
int32_t ocl__k_range(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    unsigned char raw[3][8];
    double f[3];
    int64_t v[3] = {0, 0, 0};
    int32_t st;
    cl_int err = CL_SUCCESS;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *y = &out[0];
    const uint32_t dt = y->dtype;
    for (uint32_t k = 0; k < 3; k++)
        if (in[k].count != 1 || in[k].dtype != dt)
            return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "start, limit and delta must be scalars of the output's dtype");
    pthread_mutex_lock(&device->lock);
    for (uint32_t k = 0; k < 3 && err == CL_SUCCESS; k++)
        err = clEnqueueReadBuffer(device->queue, in[k].buf->mem, CL_TRUE, (size_t)in[k].byte_off,
                                  in[k].esize, raw[k], 0, NULL, NULL);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "reading the scalars failed: %s",
                              ocl__error_name(err));
    for (uint32_t k = 0; k < 3; k++) {
        switch (dt) {
            case SES_DRV_DTYPE_F32: {
                float x;
                memcpy(&x, raw[k], 4);
                f[k] = x;
                break;
            }
            case SES_DRV_DTYPE_F64: memcpy(&f[k], raw[k], 8); break;
            case SES_DRV_DTYPE_I32: {
                int32_t x;
                memcpy(&x, raw[k], 4);
                v[k] = x;
                f[k] = (double)x;
                break;
            }
            case SES_DRV_DTYPE_I64:
                memcpy(&v[k], raw[k], 8);
                f[k] = (double)v[k];
                break;
            default:
                return ocl__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                                      "Range of dtype %" PRIu32 " is not implemented", dt);
        }
    }
    double c = f[2] != 0.0 ? ceil((f[1] - f[0]) / f[2]) : -1.0;
    int64_t count = c > 0 && c < 9.0e15 ? (int64_t)c : 0;
    if (f[2] == 0.0 || y->rank != 1 || y->dims[0] != count)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "start %g, limit %g, delta %g give %" PRId64
                              " elements, but the output holds %" PRIu64
                              " (did the values change since the plan was compiled?)",
                              f[0], f[1], f[2], count, y->count);
    if (!count)
        return SES_DRV_OK;
    unsigned char *host = malloc((size_t)y->bytes);
    if (!host)
        return ocl__node_fail(device, node, SES_DRV_OUT_OF_MEMORY, "out of host memory");
    for (int64_t q = 0; q < count; q++) {
        switch (dt) {
            case SES_DRV_DTYPE_F32:
                ((float *)(void *)host)[q] = (float)((float)f[0] + (float)q * (float)f[2]);
                break;
            case SES_DRV_DTYPE_F64: ((double *)(void *)host)[q] = f[0] + (double)q * f[2]; break;
            case SES_DRV_DTYPE_I32:
                ((int32_t *)(void *)host)[q] = (int32_t)(v[0] + q * v[2]);
                break;
            default: ((int64_t *)(void *)host)[q] = v[0] + q * v[2]; break;
        }
    }
    st = ocl_write_out(device, node, y, host, (size_t)y->bytes);
    free(host);
    return st;
}
