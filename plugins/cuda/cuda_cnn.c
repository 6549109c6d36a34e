/*
 * The CNN ops: Conv, ConvGrad, the pools and their gradients, BatchNormalization
 * (inference), Dropout (inference), Pad, PadGrad.
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
 * The CNN ops: Conv, ConvGrad, the pools and their gradients, BatchNormalization (inference),
 * Dropout (inference), Pad, PadGrad. Direct kernels, f32 and f64 (Pad: number types).
 * ------------------------------------------------------------------------------------------- */

/* The window from x ([N, C, in...]) to y ([N, M, out...]) and the attributes, checked. */
static int32_t cuda_window(ses_drv_device_t *device, const ses_drv_node_t *node,
                           const cuda_arg_t *x, const cuda_arg_t *y, cuda_win_t *w) {
    int64_t pads[2 * CUDA_SPATIAL_MAX];
    uint32_t nk = 0, ns = 0, nd = 0, np = 0;
    int32_t st;

    memset(w, 0, sizeof *w);
    if (x->rank < 3 || y->rank != x->rank || y->dims[0] != x->dims[0])
        return cuda__shape_fail(device, node, "expected [N, C, spatial...] in and out", x, y);
    w->n = x->rank - 2;
    if ((st = cuda__attr_ints_max(device, node, "kernel_shape", w->k, CUDA_SPATIAL_MAX, &nk)) !=
            SES_DRV_OK ||
        (st = cuda__attr_ints_max(device, node, "strides", w->s, CUDA_SPATIAL_MAX, &ns)) !=
            SES_DRV_OK ||
        (st = cuda__attr_ints_max(device, node, "dilations", w->d, CUDA_SPATIAL_MAX, &nd)) !=
            SES_DRV_OK ||
        (st = cuda__attr_ints_max(device, node, "pads", pads, 2 * CUDA_SPATIAL_MAX, &np)) !=
            SES_DRV_OK)
        return st;
    if (nk != w->n || ns != w->n || nd != w->n || np != 2 * w->n)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "kernel_shape, strides, dilations and pads have %" PRIu32
                               ", %" PRIu32 ", %" PRIu32 " and %" PRIu32
                               " entries; the input has %" PRIu32 " spatial dims",
                               nk, ns, nd, np, w->n);
    w->k_count = w->in_count = w->out_count = 1;
    for (uint32_t i = 0; i < w->n; i++) {
        w->pb[i] = pads[i];
        w->pe[i] = pads[w->n + i];
        w->in[i] = x->dims[2 + i];
        w->out[i] = y->dims[2 + i];
        if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1 || w->pb[i] < 0 || w->pe[i] < 0 ||
            w->k[i] > INT32_MAX || w->s[i] > INT32_MAX || w->d[i] > INT32_MAX ||
            w->pb[i] > INT32_MAX || w->pe[i] > INT32_MAX)
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "window attributes out of range along spatial dim %" PRIu32
                                   ": kernel %" PRId64 ", stride %" PRId64 ", dilation %" PRId64
                                   ", pads %" PRId64 " and %" PRId64,
                                   i, w->k[i], w->s[i], w->d[i], w->pb[i], w->pe[i]);
        w->k_count *= w->k[i];
        w->in_count *= w->in[i];
        w->out_count *= w->out[i];
    }
    w->batch = x->dims[0];
    w->c = x->dims[1];
    w->m = y->dims[1];
    return SES_DRV_OK;
}

/* Conv's shapes: W [M, C / group, k...] and the group. */
static int32_t cuda_conv_shapes(ses_drv_device_t *device, const ses_drv_node_t *node,
                                const cuda_arg_t *x, const cuda_arg_t *wt, const cuda_arg_t *y,
                                cuda_win_t *w) {
    int32_t st;
    if ((st = cuda_window(device, node, x, y, w)) != SES_DRV_OK)
        return st;
    if (cuda__attr_int(node, "group", 1, &w->group) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "group is not an INT");
    int ok = wt->rank == x->rank && w->group >= 1 && wt->dims[0] == w->m && w->c % w->group == 0 &&
             w->m % w->group == 0 && wt->dims[1] == w->c / w->group;
    for (uint32_t i = 0; ok && i < w->n; i++)
        ok = wt->dims[2 + i] == w->k[i];
    if (!ok)
        return cuda__shape_fail(device, node, "X and W do not fit a convolution", x, wt);
    return SES_DRV_OK;
}

/*
 * Per-node state of Conv, ConvGrad, MaxPool and AveragePool, made by create at compile time: the
 * path the node takes, chosen once, and what it needs, allocated once.
 * - cuDNN (when loaded, cuda_cudnn.h): descriptors, the algorithm (cuDNN's heuristics, the
 *   fastest whose workspace is at most CUDA_CUDNN_WS_MAX; f32 without TF32 unless
 *   driver.cuda.allow_tf32=1) and its workspace. create runs the node once on scratch buffers,
 *   so that cuDNN loads its kernels and builds its plans before any capture, and so that a
 *   configuration cuDNN turns down at run time takes the fallback instead of failing.
 * - GEMM (Conv and ConvGrad without cuDNN, or with forms cuDNN lacks: asymmetric pads, more than
 *   3 spatial dims): im2col over as many images as fit in CUDA_IM2COL_BYTES, then one
 *   strided-batched cuBLAS GEMM per group over those images (dX: the transposed GEMM, then a
 *   col2im gather; dW: one GEMM over the images side by side, accumulated over the passes).
 * - direct: the kernels of cuda_kernels_cnn.cu (the pools without cuDNN or in forms it lacks,
 *   ceil_mode or dilations; empty tensors; or when the GEMM path cannot get its memory).
 * Every path only enqueues on the launch's stream, so each is captured into CUDA Graphs.
 */
#define CUDA_CNN_DIRECT 0
#define CUDA_CNN_GEMM 1
#define CUDA_CNN_CUDNN 2
#define CUDA_IM2COL_BYTES (UINT64_C(256) << 20)
#define CUDA_CUDNN_WS_MAX (UINT64_C(1) << 30)

/* What a node computes: CONV (Conv), DATA and FILTER (ConvGrad input 0 and 1), POOL. */
#define CUDA_CNN_CONV 0
#define CUDA_CNN_DATA 1
#define CUDA_CNN_FILTER 2
#define CUDA_CNN_POOL 3

typedef struct cuda_cnn_state {
    int path, what;
    cudnn_tensor_desc_t xd, yd, bd; /* X, Y (dy for ConvGrad), Conv's B as [1, M, 1...] */
    cudnn_filter_desc_t wd;
    cudnn_conv_desc_t cd;
    cudnn_pool_desc_t pd;
    int algo;
    void *ws; /* cuDNN's workspace, or the GEMM path's columns (then dy transposed, for dW) */
    uint64_t ws_bytes;
    int64_t chunk; /* GEMM path: images per im2col pass */
    int identity;  /* GEMM path: a 1x1 window, stride 1, no pads: the columns are X itself */
} cuda_cnn_state_t;

static const char *const cuda_cnn_path_names[] = {"direct kernels", "im2col + cuBLAS", "cuDNN"};

static void cuda_arg_of_desc(const ses_drv_tensor_desc_t *t, cuda_arg_t *a) {
    memset(a, 0, sizeof *a);
    a->dims = t->dims;
    a->rank = t->rank;
    a->dtype = t->dtype;
    a->count = 1;
    for (uint32_t d = 0; d < t->rank; d++)
        a->count *= t->dims[d];
}

static void cuda_cnn_release(ses_drv_device_t *device, cuda_cnn_state_t *st) {
    const cuda_cudnn_t *c = &device->driver->cudnn;
    if (st->xd)
        c->DestroyTensorDescriptor(st->xd);
    if (st->yd)
        c->DestroyTensorDescriptor(st->yd);
    if (st->bd)
        c->DestroyTensorDescriptor(st->bd);
    if (st->wd)
        c->DestroyFilterDescriptor(st->wd);
    if (st->cd)
        c->DestroyConvolutionDescriptor(st->cd);
    if (st->pd)
        c->DestroyPoolingDescriptor(st->pd);
    if (st->ws) {
        cudaSetDevice(device->ordinal);
        cudaFree(st->ws);
    }
    memset(st, 0, sizeof *st);
}

void cuda__cnn_destroy(ses_drv_device_t *device, void *state) {
    if (!device || !state)
        return;
    cuda_cnn_release(device, (cuda_cnn_state_t *)state);
    free(state);
}

/* A tensor descriptor of [n, c, spatial...] (a 1-D window as [n, c, 1, len]), dense. */
static int cuda_cudnn_tensor(const cuda_cudnn_t *c, cudnn_tensor_desc_t *out, int type, int64_t n,
                             int64_t ch, const int64_t *sp, uint32_t ns) {
    int dims[5], strides[5], nd = 0;
    dims[nd++] = (int)n;
    dims[nd++] = (int)ch;
    if (ns == 1)
        dims[nd++] = 1;
    for (uint32_t i = 0; i < ns; i++)
        dims[nd++] = (int)sp[i];
    strides[nd - 1] = 1;
    for (int i = nd - 1; i-- > 0;)
        strides[i] = strides[i + 1] * dims[i + 1];
    if (c->CreateTensorDescriptor(out) != CUDNN__STATUS_SUCCESS) {
        *out = NULL;
        return -1;
    }
    return c->SetTensorNdDescriptor(*out, type, nd, dims, strides) == CUDNN__STATUS_SUCCESS ? 0
                                                                                           : -1;
}

/* Runs the node's cuDNN call on @p s with state @p st, under the handle's lock. */
static cudnn_status_t cuda_cudnn_run(ses_drv_device_t *device, const cuda_cnn_state_t *st,
                                     uint32_t dtype, void *s, const void *in0, const void *in1,
                                     const void *bias, void *out) {
    const cuda_cudnn_t *c = &device->driver->cudnn;
    const float one_f = 1.0f, zero_f = 0.0f;
    const double one_d = 1.0, zero_d = 0.0;
    const void *one = dtype == SES_DRV_DTYPE_F64 ? (const void *)&one_d : (const void *)&one_f;
    const void *zero = dtype == SES_DRV_DTYPE_F64 ? (const void *)&zero_d : (const void *)&zero_f;
    cudnn_status_t cs;

    pthread_mutex_lock(&device->cudnn_lock);
    cs = c->SetStream(device->cudnn, s);
    if (cs == CUDNN__STATUS_SUCCESS) {
        switch (st->what) {
            case CUDA_CNN_CONV: /* in0 X, in1 W */
                cs = c->ConvolutionForward(device->cudnn, one, st->xd, in0, st->wd, in1, st->cd,
                                           st->algo, st->ws, (size_t)st->ws_bytes, zero, st->yd,
                                           out);
                if (cs == CUDNN__STATUS_SUCCESS && bias)
                    cs = c->AddTensor(device->cudnn, one, st->bd, bias, one, st->yd, out);
                break;
            case CUDA_CNN_DATA: /* in0 dy, in1 W */
                cs = c->ConvolutionBackwardData(device->cudnn, one, st->wd, in1, st->yd, in0,
                                                st->cd, st->algo, st->ws, (size_t)st->ws_bytes,
                                                zero, st->xd, out);
                break;
            case CUDA_CNN_FILTER: /* in0 dy, in1 X */
                cs = c->ConvolutionBackwardFilter(device->cudnn, one, st->xd, in1, st->yd, in0,
                                                  st->cd, st->algo, st->ws, (size_t)st->ws_bytes,
                                                  zero, st->wd, out);
                break;
            default: /* in0 X */
                cs = c->PoolingForward(device->cudnn, st->pd, one, st->xd, in0, zero, st->yd, out);
                break;
        }
    }
    pthread_mutex_unlock(&device->cudnn_lock);
    return cs;
}

/* Picks the first algorithm of @p perf (fastest first) that succeeded, fits the workspace limit
 * and, with @p fma, computes in plain f32 (no tensor-op math). -1 when none. */
static int cuda_cudnn_pick(const cudnn_perf_t *perf, int n, int fma) {
    for (int i = 0; i < n; i++)
        if (perf[i].status == CUDNN__STATUS_SUCCESS && perf[i].memory <= CUDA_CUDNN_WS_MAX &&
            (!fma || (perf[i].math_type != 1 && perf[i].math_type != 2)))
            return i;
    return -1;
}

/*
 * Sets @p st up for cuDNN: descriptors, algorithm, workspace, then one run on scratch buffers.
 * 0 on success; -1 with @p why (for the debug log) when cuDNN cannot take this node, with
 * everything made here released.
 */
static int cuda_cudnn_setup(ses_drv_device_t *device, cuda_cnn_state_t *st, const cuda_win_t *w,
                            uint32_t dtype, int64_t include_pad, int max, int has_bias,
                            char *why, size_t why_size) {
    const cuda_cudnn_t *c = &device->driver->cudnn;
    const int type = dtype == SES_DRV_DTYPE_F64 ? CUDNN__DATA_DOUBLE : CUDNN__DATA_FLOAT;
    const uint64_t es = ses_drv_util_dtype_size(dtype);
    const int conv = st->what != CUDA_CNN_POOL;
    const int64_t out_c = conv ? w->m : w->c;
    int pads[3], strides[3], dil[3], kern[3], wdims[5];
    uint32_t ns = w->n == 1 ? 2 : w->n;
    void *tmp[3] = {NULL, NULL, NULL};
    cudnn_status_t cs = CUDNN__STATUS_SUCCESS;

    if (!cuda__cudnn_handle(device)) {
        snprintf(why, why_size, "no cuDNN handle");
        return -1;
    }
    if (w->n > 3) {
        snprintf(why, why_size, "%" PRIu32 " spatial dims; cuDNN takes 1 to 3", w->n);
        return -1;
    }
    int64_t biggest = w->batch * (w->c > out_c ? w->c : out_c) *
                      (w->in_count > w->out_count ? w->in_count : w->out_count);
    if (biggest > INT32_MAX || (conv && w->m * (w->c / w->group) * w->k_count > INT32_MAX)) {
        snprintf(why, why_size, "a tensor of 2^31 elements or more");
        return -1;
    }
    for (uint32_t i = 0; i < w->n; i++) {
        if (w->pb[i] != w->pe[i]) {
            snprintf(why, why_size, "asymmetric pads");
            return -1;
        }
        if (!conv && (w->d[i] != 1 || w->pb[i] >= w->k[i] ||
                      w->out[i] != (w->in[i] + 2 * w->pb[i] - w->k[i]) / w->s[i] + 1)) {
            snprintf(why, why_size, "dilations, pads as large as the window, or ceil_mode");
            return -1;
        }
    }
    /* A 1-D window is a 2-D one of height 1. */
    for (uint32_t i = 0, j = ns - w->n; i < ns; i++) {
        const int pad1 = i < j;
        pads[i] = pad1 ? 0 : (int)w->pb[i - j];
        strides[i] = pad1 ? 1 : (int)w->s[i - j];
        dil[i] = pad1 ? 1 : (int)w->d[i - j];
        kern[i] = pad1 ? 1 : (int)w->k[i - j];
    }
    if (cuda_cudnn_tensor(c, &st->xd, type, w->batch, w->c, w->in, w->n) != 0 ||
        cuda_cudnn_tensor(c, &st->yd, type, w->batch, out_c, w->out, w->n) != 0) {
        snprintf(why, why_size, "cudnnSetTensorNdDescriptor refused the shapes");
        goto fail;
    }
    if (!conv) {
        const int mode = max ? CUDNN__POOLING_MAX_DETERMINISTIC
                         : include_pad ? CUDNN__POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                       : CUDNN__POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
        if (c->CreatePoolingDescriptor(&st->pd) != CUDNN__STATUS_SUCCESS ||
            (cs = c->SetPoolingNdDescriptor(st->pd, mode, CUDNN__PROPAGATE_NAN, (int)ns, kern,
                                            pads, strides)) != CUDNN__STATUS_SUCCESS) {
            snprintf(why, why_size, "cudnnSetPoolingNdDescriptor: %s", c->GetErrorString(cs));
            goto fail;
        }
    } else {
        const int fma = dtype == SES_DRV_DTYPE_F32 && !device->allow_tf32;
        cudnn_perf_t perf[8];
        int returned = 0, pick, odims[5];
        int64_t ones[3] = {1, 1, 1};
        size_t bytes = 0;

        wdims[0] = (int)w->m;
        wdims[1] = (int)(w->c / w->group);
        for (uint32_t i = 0; i < ns; i++)
            wdims[2 + i] = kern[i];
        if (c->CreateFilterDescriptor(&st->wd) != CUDNN__STATUS_SUCCESS ||
            (cs = c->SetFilterNdDescriptor(st->wd, type, CUDNN__TENSOR_NCHW, (int)ns + 2, wdims)) !=
                CUDNN__STATUS_SUCCESS ||
            c->CreateConvolutionDescriptor(&st->cd) != CUDNN__STATUS_SUCCESS ||
            (cs = c->SetConvolutionNdDescriptor(st->cd, (int)ns, pads, strides, dil,
                                                CUDNN__CROSS_CORRELATION, type)) !=
                CUDNN__STATUS_SUCCESS ||
            (cs = c->SetConvolutionGroupCount(st->cd, (int)w->group)) != CUDNN__STATUS_SUCCESS ||
            (cs = c->SetConvolutionMathType(st->cd, fma ? CUDNN__FMA_MATH
                                                        : CUDNN__DEFAULT_MATH)) !=
                CUDNN__STATUS_SUCCESS ||
            (cs = c->GetConvolutionNdForwardOutputDim(st->cd, st->xd, st->wd, (int)ns + 2,
                                                      odims)) != CUDNN__STATUS_SUCCESS) {
            snprintf(why, why_size, "a convolution descriptor: %s",
                     cs != CUDNN__STATUS_SUCCESS ? c->GetErrorString(cs) : "cannot be made");
            goto fail;
        }
        for (uint32_t i = 0; i < ns; i++)
            if (odims[2 + i] != (i < ns - w->n ? 1 : (int)w->out[i - (ns - w->n)])) {
                snprintf(why, why_size, "cuDNN's output shape differs from the node's");
                goto fail;
            }
        if (st->what == CUDA_CNN_CONV)
            cs = c->GetConvolutionForwardAlgorithm_v7(device->cudnn, st->xd, st->wd, st->cd,
                                                      st->yd, 8, &returned, perf);
        else if (st->what == CUDA_CNN_DATA)
            cs = c->GetConvolutionBackwardDataAlgorithm_v7(device->cudnn, st->wd, st->yd, st->cd,
                                                           st->xd, 8, &returned, perf);
        else
            cs = c->GetConvolutionBackwardFilterAlgorithm_v7(device->cudnn, st->xd, st->yd,
                                                             st->cd, st->wd, 8, &returned, perf);
        if (cs != CUDNN__STATUS_SUCCESS || (pick = cuda_cudnn_pick(perf, returned, fma)) < 0) {
            snprintf(why, why_size, "no algorithm: %s",
                     cs != CUDNN__STATUS_SUCCESS ? c->GetErrorString(cs)
                                                 : "none fits (workspace, precision)");
            goto fail;
        }
        st->algo = perf[pick].algo;
        if (!fma && (cs = c->SetConvolutionMathType(st->cd, perf[pick].math_type)) !=
                        CUDNN__STATUS_SUCCESS) {
            snprintf(why, why_size, "cudnnSetConvolutionMathType: %s", c->GetErrorString(cs));
            goto fail;
        }
        if (st->what == CUDA_CNN_CONV)
            cs = c->GetConvolutionForwardWorkspaceSize(device->cudnn, st->xd, st->wd, st->cd,
                                                       st->yd, st->algo, &bytes);
        else if (st->what == CUDA_CNN_DATA)
            cs = c->GetConvolutionBackwardDataWorkspaceSize(device->cudnn, st->wd, st->yd, st->cd,
                                                            st->xd, st->algo, &bytes);
        else
            cs = c->GetConvolutionBackwardFilterWorkspaceSize(device->cudnn, st->xd, st->yd,
                                                              st->cd, st->wd, st->algo, &bytes);
        if (cs != CUDNN__STATUS_SUCCESS) {
            snprintf(why, why_size, "workspace size: %s", c->GetErrorString(cs));
            goto fail;
        }
        if (bytes && cudaMalloc(&st->ws, bytes) != cudaSuccess) {
            (void)cudaGetLastError();
            st->ws = NULL;
            snprintf(why, why_size, "no memory for cuDNN's %zu-byte workspace", bytes);
            goto fail;
        }
        st->ws_bytes = bytes;
        if (st->what == CUDA_CNN_CONV && has_bias &&
            cuda_cudnn_tensor(c, &st->bd, type, 1, w->m, ones, w->n) != 0) {
            snprintf(why, why_size, "the bias descriptor");
            goto fail;
        }
    }

    /* The trial run, on zeros: X, W (or dy), Y. */
    {
        const uint64_t xb = (uint64_t)(w->batch * w->c * w->in_count) * es;
        const uint64_t yb = (uint64_t)(w->batch * out_c * w->out_count) * es;
        const uint64_t wb = conv ? (uint64_t)(w->m * (w->c / w->group) * w->k_count) * es : es;
        const uint64_t sizes[3] = {xb, wb, yb};
        cudaError_t e = cudaSuccess;
        for (int i = 0; i < 3 && e == cudaSuccess; i++)
            if ((e = cudaMalloc(&tmp[i], sizes[i])) == cudaSuccess)
                e = cudaMemsetAsync(tmp[i], 0, sizes[i], (cudaStream_t)device->stream);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(why, why_size, "no memory for a trial run: %s", cudaGetErrorString(e));
            goto fail;
        }
        switch (st->what) {
            case CUDA_CNN_CONV:
                cs = cuda_cudnn_run(device, st, dtype, device->stream, tmp[0], tmp[1],
                                    has_bias ? tmp[1] : NULL, tmp[2]);
                break;
            case CUDA_CNN_DATA:
                cs = cuda_cudnn_run(device, st, dtype, device->stream, tmp[2], tmp[1], NULL,
                                    tmp[0]);
                break;
            case CUDA_CNN_FILTER:
                cs = cuda_cudnn_run(device, st, dtype, device->stream, tmp[2], tmp[0], NULL,
                                    tmp[1]);
                break;
            default:
                cs = cuda_cudnn_run(device, st, dtype, device->stream, tmp[0], NULL, NULL, tmp[2]);
                break;
        }
        e = cudaStreamSynchronize((cudaStream_t)device->stream);
        if (cs != CUDNN__STATUS_SUCCESS || e != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(why, why_size, "the trial run failed: %s",
                     cs != CUDNN__STATUS_SUCCESS ? c->GetErrorString(cs) : cudaGetErrorString(e));
            goto fail;
        }
        for (int i = 0; i < 3; i++)
            cudaFree(tmp[i]);
    }
    st->path = CUDA_CNN_CUDNN;
    return 0;

fail:
    for (int i = 0; i < 3; i++)
        if (tmp[i])
            cudaFree(tmp[i]);
    {
        const int what = st->what;
        cuda_cnn_release(device, st);
        st->what = what;
    }
    return -1;
}

/* Sets @p st up for im2col + cuBLAS; -1 with @p why when its memory cannot be had. */
static int cuda_gemm_setup(ses_drv_device_t *device, cuda_cnn_state_t *st, const cuda_win_t *w,
                           uint32_t dtype, char *why, size_t why_size) {
    const uint64_t es = ses_drv_util_dtype_size(dtype);
    const uint64_t rows = (uint64_t)(w->c * w->k_count);
    uint64_t per_image = rows * (uint64_t)w->out_count * es;
    int identity = st->what != CUDA_CNN_FILTER;

    if (!device->cublas) {
        snprintf(why, why_size, "cuBLAS could not start");
        return -1;
    }
    for (uint32_t i = 0; i < w->n; i++)
        identity = identity && w->k[i] == 1 && w->s[i] == 1 && w->pb[i] == 0 && w->pe[i] == 0;
    if (st->what == CUDA_CNN_FILTER)
        per_image += (uint64_t)(w->m * w->out_count) * es;
    st->identity = identity;
    st->chunk = (int64_t)(CUDA_IM2COL_BYTES / (per_image ? per_image : 1));
    if (st->chunk < 1)
        st->chunk = 1;
    if (st->chunk > w->batch)
        st->chunk = w->batch;
    /* cuBLAS takes int dimensions: dW's GEMM runs over chunk * out_count columns. */
    while (st->chunk > 1 && st->chunk * w->out_count > INT32_MAX)
        st->chunk /= 2;
    st->ws_bytes = identity ? 0 : (uint64_t)st->chunk * per_image;
    if (st->ws_bytes && cudaMalloc(&st->ws, (size_t)st->ws_bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, why_size, "no memory for %" PRIu64 " bytes of im2col columns", st->ws_bytes);
        st->ws = NULL;
        st->ws_bytes = 0;
        return -1;
    }
    st->path = CUDA_CNN_GEMM;
    return 0;
}

/* The window and dtype of node @p node (Conv, ConvGrad, MaxPool, AveragePool), from its
 * descriptors; what it computes into st->what. */
static int32_t cuda_cnn_geometry(ses_drv_device_t *device, const ses_drv_node_t *node,
                                 cuda_cnn_state_t *st, cuda_win_t *w, uint32_t *dtype,
                                 int64_t *include_pad, int *max, int *has_bias) {
    cuda_arg_t a[4];
    int32_t rc;
    const int conv = strcmp(node->op, "Conv") == 0, grad = strcmp(node->op, "ConvGrad") == 0;
    const int transpose = strcmp(node->op, "ConvTranspose") == 0;
    const uint32_t lo = conv || transpose ? 2 : grad ? 3 : 1;
    const uint32_t hi = conv || transpose || grad ? 3 : 1;

    if ((rc = cuda__check_node(device, node, lo, hi, 1)) != SES_DRV_OK)
        return rc;
    for (uint32_t i = 0; i < node->n_inputs; i++)
        cuda_arg_of_desc(ses_drv_util_tensor_at(node->inputs, i), &a[i]);
    cuda_arg_of_desc(node->outputs, &a[node->n_inputs]);
    *dtype = a[0].dtype;
    *max = strcmp(node->op, "MaxPool") == 0;
    *has_bias = conv && node->n_inputs == 3;
    *include_pad = 0;
    if (conv) {
        st->what = CUDA_CNN_CONV;
        return cuda_conv_shapes(device, node, &a[0], &a[1], &a[node->n_inputs], w);
    }
    if (transpose) { /* h-cuda: Conv's dX, with Y as Conv's X and X as its dy */
        st->what = CUDA_CNN_DATA;
        return cuda_conv_shapes(device, node, &a[node->n_inputs], &a[1], &a[0], w);
    }
    if (grad) {
        int64_t input = 0;
        if (cuda__attr_int(node, "input", 0, &input) != SES_DRV_OK || (input != 0 && input != 1))
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "attribute input must be 0 or 1");
        st->what = input ? CUDA_CNN_FILTER : CUDA_CNN_DATA;
        return cuda_conv_shapes(device, node, &a[1], &a[2], &a[0], w);
    }
    st->what = CUDA_CNN_POOL;
    if (!*max && cuda__attr_int(node, "count_include_pad", 0, include_pad) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "count_include_pad is not an INT");
    return cuda_window(device, node, &a[0], &a[1], w);
}

/* create of Conv, ConvGrad, MaxPool and AveragePool: picks the node's path (above). */
int32_t cuda__cnn_create(ses_drv_device_t *device, const ses_drv_node_t *node, void **out_state) {
    cuda_cnn_state_t *st;
    cuda_win_t w;
    uint32_t dtype = 0;
    int64_t include_pad = 0;
    int max = 0, has_bias = 0;
    char why_cudnn[256] = "", why_gemm[256] = "";
    int32_t rc;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_state)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "create: out_state is NULL");
    *out_state = NULL;
    if (!node || node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx) || !node->op)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "the node is NULL or older than ABI 1.0");
    st = calloc(1, sizeof *st);
    if (!st)
        return CUDA_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY, "create: out of host memory");
    rc = cuda_cnn_geometry(device, node, st, &w, &dtype, &include_pad, &max, &has_bias);
    if (rc != SES_DRV_OK) {
        free(st);
        return rc;
    }
    st->path = CUDA_CNN_DIRECT;
    if (w.batch * w.c * w.in_count == 0 || w.out_count == 0 ||
        (dtype != SES_DRV_DTYPE_F32 && dtype != SES_DRV_DTYPE_F64)) {
        *out_state = st; /* nothing to compute, or a dtype the compute refuses */
        return SES_DRV_OK;
    }
    if ((rc = cuda__use(device, node->op)) != SES_DRV_OK) {
        free(st);
        return rc;
    }
    if (!device->driver->cudnn.lib)
        snprintf(why_cudnn, sizeof why_cudnn, "cuDNN is not loaded");
    else
        cuda_cudnn_setup(device, st, &w, dtype, include_pad, max, has_bias, why_cudnn,
                         sizeof why_cudnn);
    if (st->path == CUDA_CNN_DIRECT && st->what != CUDA_CNN_POOL)
        cuda_gemm_setup(device, st, &w, dtype, why_gemm, sizeof why_gemm);
    cuda__log(
        device->driver, SES_DRV_LOG_DEBUG, "cuda:%d: %s \"%s\": %s%s%s%s%s%s", device->ordinal,
        node->op, node->name ? node->name : "(unnamed)", cuda_cnn_path_names[st->path],
        st->path == CUDA_CNN_CUDNN ? "" : " (cuDNN: ", st->path == CUDA_CNN_CUDNN ? "" : why_cudnn,
        st->path == CUDA_CNN_CUDNN ? "" : ")", why_gemm[0] ? "; im2col: " : "", why_gemm);
    *out_state = st;
    return SES_DRV_OK;
}

/* Conv or ConvGrad by im2col + cuBLAS; @p in the launch's inputs (dy/X/W as the node has them),
 * @p out its output. */
static int32_t cuda_conv_gemm(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                              const cuda_cnn_state_t *st, const cuda_win_t *w, uint32_t dtype,
                              const cuda_arg_t *a, const cuda_arg_t *out) {
    const int64_t es = ses_drv_util_dtype_size(dtype);
    const int64_t G = w->group, cg = w->c / G, mg = w->m / G, K = w->k_count;
    const int64_t P = w->out_count, rows = w->c * K, ckg = cg * K;
    void *s = cuda__stream_of(device, launch);
    char *col = (char *)st->ws;
    int32_t rc = SES_DRV_OK;
    int e = 0;

    for (int64_t n0 = 0; n0 < w->batch && rc == SES_DRV_OK && e == 0; n0 += st->chunk) {
        const int64_t nb = w->batch - n0 < st->chunk ? w->batch - n0 : st->chunk;
        if (st->what == CUDA_CNN_CONV) {
            const char *x = (const char *)a[0].ptr + n0 * w->c * w->in_count * es;
            const char *src = st->identity ? x : col;
            char *y = (char *)out->ptr + n0 * w->m * P * es;
            if (!st->identity && (e = cuda__im2col(dtype, w, n0, nb, 0, a[0].ptr, col, s)) != 0)
                break;
            for (int64_t g = 0; g < G && rc == SES_DRV_OK; g++)
                rc = cuda__gemm(device, launch, dtype, 0, 0, mg, P, ckg, 1.0,
                                (const char *)a[1].ptr + g * mg * ckg * es, 0,
                                src + g * ckg * P * es, rows * P, 0.0, y + g * mg * P * es,
                                w->m * P, nb);
            if (rc == SES_DRV_OK && launch->node->n_inputs == 3)
                e = cuda__channel_bias(dtype, nb, w->m, P, a[2].ptr, y, s);
        } else if (st->what == CUDA_CNN_DATA) {
            const char *dy = (const char *)a[0].ptr + n0 * w->m * P * es;
            char *dx = (char *)out->ptr + n0 * w->c * w->in_count * es;
            char *dst = st->identity ? dx : col;
            for (int64_t g = 0; g < G && rc == SES_DRV_OK; g++)
                rc = cuda__gemm(device, launch, dtype, 1, 0, ckg, P, mg, 1.0,
                                (const char *)a[2].ptr + g * mg * ckg * es, 0, dy + g * mg * P * es,
                                w->m * P, 0.0, dst + g * ckg * P * es, rows * P, nb);
            if (rc == SES_DRV_OK && !st->identity)
                e = cuda__col2im(dtype, w, nb, col, dx, s);
        } else {
            char *dyt = col + nb * rows * P * es;
            if ((e = cuda__im2col(dtype, w, n0, nb, 1, a[1].ptr, col, s)) != 0 ||
                (e = cuda__nmp_to_mnp(dtype, nb, w->m, P,
                                      (const char *)a[0].ptr + n0 * w->m * P * es, dyt, s)) != 0)
                break;
            for (int64_t g = 0; g < G && rc == SES_DRV_OK; g++)
                rc = cuda__gemm(device, launch, dtype, 0, 1, mg, ckg, nb * P, 1.0,
                                dyt + g * mg * nb * P * es, 0, col + g * ckg * nb * P * es, 0,
                                n0 ? 1.0 : 0.0, (char *)out->ptr + g * mg * ckg * es, 0, 1);
        }
    }
    if (rc != SES_DRV_OK)
        return rc;
    return cuda__finish(device, launch, e);
}

/* Runs Conv, ConvGrad or a pool through cuDNN. */
static int32_t cuda_cnn_cudnn(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                              const cuda_cnn_state_t *st, uint32_t dtype, const cuda_arg_t *a,
                              const cuda_arg_t *out) {
    const void *in1 = st->what == CUDA_CNN_CONV   ? a[1].ptr
                      : st->what == CUDA_CNN_DATA ? a[2].ptr
                      : st->what == CUDA_CNN_FILTER ? a[1].ptr
                                                    : NULL;
    const void *bias =
        st->what == CUDA_CNN_CONV && launch->node->n_inputs == 3 ? a[2].ptr : NULL;
    cudnn_status_t cs = cuda_cudnn_run(device, st, dtype, cuda__stream_of(device, launch), a[0].ptr,
                                       in1, bias, out->ptr);
    if (cs != CUDNN__STATUS_SUCCESS)
        return cuda__node_fail(device, launch->node, SES_DRV_INTERNAL, "cuDNN on cuda:%d: %s",
                               device->ordinal, device->driver->cudnn.GetErrorString(cs));
    return cuda__finish(device, launch, (int)cudaGetLastError());
}

/* Whether @p state (made by create for this node) has a path other than the direct kernels. */
static const cuda_cnn_state_t *cuda_cnn_fast(void *state) {
    const cuda_cnn_state_t *st = (const cuda_cnn_state_t *)state;
    return st && st->path != CUDA_CNN_DIRECT ? st : NULL;
}

int32_t cuda__k_conv(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    cuda_win_t w;
    int32_t st;
    const cuda_cnn_state_t *fast = cuda_cnn_fast(state);

    if ((st = cuda__check_launch(device, launch, 2, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    if ((st = cuda__dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK ||
        (st = cuda_conv_shapes(device, node, &a[0], &a[1], &a[ni], &w)) != SES_DRV_OK)
        return st;
    if (ni == 3 && (a[2].rank != 1 || a[2].dims[0] != w.m))
        return cuda__shape_fail(device, node, "B must have one entry per filter", &a[2], &a[1]);
    if (a[ni].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    if (fast && fast->path == CUDA_CNN_CUDNN)
        return cuda_cnn_cudnn(device, launch, fast, a[0].dtype, a, &a[ni]);
    if (fast && fast->path == CUDA_CNN_GEMM)
        return cuda_conv_gemm(device, launch, fast, &w, a[0].dtype, a, &a[ni]);
    return cuda__finish(device, launch,
                        cuda__conv(a[0].dtype, &w, a[0].ptr, a[1].ptr, ni == 3 ? a[2].ptr : NULL,
                                   a[ni].ptr, cuda__stream_of(device, launch)));
}

/* ConvGrad(dy, X, W; input): dX (input 0) or dW (input 1). */
int32_t cuda__k_conv_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    cuda_win_t w;
    int64_t input = 0;
    int32_t st;
    const cuda_cnn_state_t *fast = cuda_cnn_fast(state);

    if ((st = cuda__check_launch(device, launch, 3, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda__dtypes_agree(device, node, a, 4)) != SES_DRV_OK ||
        (st = cuda_conv_shapes(device, node, &a[1], &a[2], &a[0], &w)) != SES_DRV_OK)
        return st;
    if (cuda__attr_int(node, "input", 0, &input) != SES_DRV_OK || (input != 0 && input != 1) ||
        !cuda__same_shape(&a[3], input ? &a[2] : &a[1]))
        return cuda__node_fail(
            device, node, SES_DRV_INVALID_ARGUMENT,
            "attribute input is %" PRId64 "; it must be 0 (output shaped as X) or 1 (as W)", input);
    if (a[3].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    if (fast && fast->what != (input ? CUDA_CNN_FILTER : CUDA_CNN_DATA))
        fast = NULL;
    if (fast && fast->path == CUDA_CNN_CUDNN)
        return cuda_cnn_cudnn(device, launch, fast, a[0].dtype, a, &a[3]);
    if (fast && fast->path == CUDA_CNN_GEMM)
        return cuda_conv_gemm(device, launch, fast, &w, a[0].dtype, a, &a[3]);
    return cuda__finish(device, launch,
                        cuda__conv_grad(a[3].dtype, &w, (int)input, a[0].ptr, a[1].ptr, a[2].ptr,
                                        a[3].ptr, cuda__stream_of(device, launch)));
}

/* MaxPool, AveragePool (X), MaxPoolGrad (dy, X), AveragePoolGrad (dy). */
int32_t cuda__k_pool(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    cuda_win_t w;
    int64_t include_pad = 0;
    int32_t st;

    if ((st = cuda__check_launch(device, launch, 1, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    const int max = strncmp(node->op, "MaxPool", 7) == 0;
    const int grad = strstr(node->op, "Grad") != NULL;
    if ((ni == 2) != (max && grad))
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "has %" PRIu32 " inputs; %s takes %d", ni, node->op,
                               max && grad ? 2 : 1);
    if ((st = cuda__dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK)
        return st;
    /* The forward pool's input and output. */
    const cuda_arg_t *fx = grad ? &a[ni] : &a[0], *fy = grad ? &a[0] : &a[ni];
    if ((st = cuda_window(device, node, fx, fy, &w)) != SES_DRV_OK)
        return st;
    if (fx->dims[1] != fy->dims[1] || (max && grad && !cuda__same_shape(&a[1], &a[2])))
        return cuda__shape_fail(device, node, "channels differ between the pool's input and output",
                                fx, fy);
    if (!max && cuda__attr_int(node, "count_include_pad", 0, &include_pad) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "count_include_pad is not an INT");
    if (a[ni].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    const cuda_cnn_state_t *fast = grad ? NULL : cuda_cnn_fast(state);
    if (fast && fast->path == CUDA_CNN_CUDNN)
        return cuda_cnn_cudnn(device, launch, fast, a[0].dtype, a, &a[ni]);
    const int op = max ? CUDA_POOL_MAX : CUDA_POOL_AVG;
    const int64_t planes = fx->dims[0] * fx->dims[1];
    void *s = cuda__stream_of(device, launch);
    return cuda__finish(
        device, launch,
        grad ? cuda__pool_grad(a[ni].dtype, &w, planes, op, include_pad != 0, a[0].ptr,
                               max ? a[1].ptr : NULL, a[ni].ptr, s)
             : cuda__pool(a[ni].dtype, &w, planes, op, include_pad != 0, a[0].ptr, a[ni].ptr, s));
}

/* BatchNormalization in inference: X [N, C, ...], scale, B, mean, var [C]. */
int32_t cuda__k_batch_norm(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[6];
    double eps = 1e-5;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 5, 5, 1, a)) != SES_DRV_OK ||
        (st = cuda__dtypes_agree(device, launch->node, a, 6)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (cuda__attr_double(node, "epsilon", 1e-5, &eps) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "epsilon is not a FLOAT");
    int ok = a[0].rank >= 2 && cuda__same_shape(&a[0], &a[5]);
    for (uint32_t i = 1; ok && i < 5; i++)
        ok = a[i].rank == 1 && a[i].dims[0] == a[0].dims[1];
    if (!ok)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "X must be [N, C, ...] with Y its shape and each parameter [C]");
    if (a[5].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    const int64_t c = a[0].dims[1], inner = a[0].count / (a[0].dims[0] * c);
    return cuda__finish(
        device, launch,
        cuda__batch_norm(a[0].dtype, a[0].count, c, inner, a[0].ptr, a[1].ptr, a[2].ptr, a[3].ptr,
                         a[4].ptr, eps, a[5].ptr, cuda__stream_of(device, launch)));
}

/* Dropout in inference: the data unchanged and a mask of all true. */
int32_t cuda__k_dropout(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 2, a)) != SES_DRV_OK)
        return st;
    if (a[0].dtype != a[1].dtype || a[2].dtype != SES_DRV_DTYPE_BOOL ||
        !cuda__same_shape(&a[0], &a[1]) || !cuda__same_shape(&a[0], &a[2]))
        return cuda__shape_fail(device, launch->node,
                                "output and mask (bool) must have the data's shape", &a[0], &a[1]);
    if (a[0].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    cudaStream_t s = (cudaStream_t)cuda__stream_of(device, launch);
    cudaError_t e = cudaSuccess;
    if (a[0].ptr != a[1].ptr)
        e = cudaMemcpyAsync(a[1].ptr, a[0].ptr, (size_t)a[0].bytes, cudaMemcpyDeviceToDevice, s);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(a[2].ptr, 1, (size_t)a[2].bytes, s);
    return cuda__finish(device, launch, (int)e);
}

/* Pad's and PadGrad's geometry: @p x the unpadded tensor, @p y the padded one. */
static int32_t cuda_pad_shapes(ses_drv_device_t *device, const ses_drv_node_t *node,
                               const cuda_arg_t *x, const cuda_arg_t *y, int64_t *begin,
                               int64_t *mode) {
    int64_t pads[2 * CUDA_MAX_RANK];
    uint32_t np = 0;
    int32_t st;

    if ((st = cuda__attr_ints_max(device, node, "pads", pads, 2 * CUDA_MAX_RANK, &np)) !=
        SES_DRV_OK)
        return st;
    if (cuda__attr_int(node, "mode", 0, mode) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "mode is not an INT");
    int ok = np == 2 * x->rank && y->rank == x->rank && *mode >= 0 && *mode <= 2;
    for (uint32_t d = 0; ok && d < x->rank; d++) {
        begin[d] = pads[d];
        ok = x->dims[d] + pads[d] + pads[x->rank + d] == y->dims[d] &&
             (*mode != CUDA_PAD_REFLECT || x->dims[d] > 0 || y->dims[d] == 0);
    }
    if (!ok)
        return cuda__shape_fail(device, node, "pads and mode do not take the input to the output",
                                x, y);
    return SES_DRV_OK;
}

int32_t cuda__k_pad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int64_t begin[CUDA_MAX_RANK], mode = 0;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    if ((st = cuda__dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK ||
        (st = cuda_pad_shapes(device, node, &a[0], &a[ni], begin, &mode)) != SES_DRV_OK)
        return st;
    if (ni == 2 && a[1].count != 1)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "constant_value must hold one element");
    if (a[ni].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__pad(ses_drv_util_dtype_size(a[0].dtype), a[0].rank, a[0].dims, a[ni].dims,
                                  begin, (int)mode, a[0].ptr, ni == 2 ? a[1].ptr : NULL, a[ni].ptr,
                                  a[ni].count, cuda__stream_of(device, launch)));
}

/* PadGrad(dy): dx of Pad's input shape, each dy element added where Pad read it. */
int32_t cuda__k_pad_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t begin[CUDA_MAX_RANK], mode = 0;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda__dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK ||
        (st = cuda_pad_shapes(device, launch->node, &a[1], &a[0], begin, &mode)) != SES_DRV_OK)
        return st;
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(
        device, launch,
        cuda__pad_grad(a[1].dtype, a[1].rank, a[1].dims, a[0].dims, begin, (int)mode, a[0].ptr,
                       a[1].ptr, a[1].count, a[0].count, cuda__stream_of(device, launch)));
}

/* ---------------------------------------------------------------------------------------------
 * h-cuda (issue #22): ConvTranspose(X, W[, B]), f32 and f64: Conv's gradient of its input, with
 * ConvTranspose's Y as Conv's X and its X as Conv's dy (W [C, M / group, k...] is Conv's
 * [M', C' / group, k...] as it is). The window is the host's (explicit pads; output_padding
 * and output_shape are already in Y's shape). It takes ConvGrad's paths (create picks one):
 * cuDNN's backward data, im2col + cuBLAS's transposed GEMM and col2im, or the direct kernel;
 * then B is added per channel.
 * ------------------------------------------------------------------------------------------- */

int32_t cuda__k_conv_transpose(ses_drv_device_t *device, void *state,
                               const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    cuda_win_t w;
    int32_t st;
    const cuda_cnn_state_t *fast = cuda_cnn_fast(state);

    if ((st = cuda__check_launch(device, launch, 2, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    const cuda_arg_t *x = &a[0], *wt = &a[1], *y = &a[ni];
    if ((st = cuda__dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK ||
        (st = cuda_conv_shapes(device, node, y, wt, x, &w)) != SES_DRV_OK)
        return st;
    if (ni == 3 && (a[2].rank != 1 || a[2].dims[0] != w.c))
        return cuda__shape_fail(device, node, "B must have one entry per Y channel", &a[2], y);
    if (y->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    void *s = cuda__stream_of(device, launch);
    if (x->count == 0 || wt->count == 0) {
        /* Nothing adds into Y: zeros (then B). */
        st = cuda__finish(device, launch,
                          (int)cudaMemsetAsync(y->ptr, 0, (size_t)y->bytes, (cudaStream_t)s));
    } else {
        /* ConvGrad's inputs: dy (X here), Conv's X (Y here, not read), W. */
        const cuda_arg_t g[3] = {*x, *y, *wt};
        if (fast && fast->what != CUDA_CNN_DATA)
            fast = NULL;
        if (fast && fast->path == CUDA_CNN_CUDNN)
            st = cuda_cnn_cudnn(device, launch, fast, x->dtype, g, y);
        else if (fast && fast->path == CUDA_CNN_GEMM)
            st = cuda_conv_gemm(device, launch, fast, &w, x->dtype, g, y);
        else
            st = cuda__finish(device, launch,
                              cuda__conv_grad(y->dtype, &w, 0, x->ptr, NULL, wt->ptr, y->ptr, s));
    }
    if (st == SES_DRV_OK && ni == 3)
        st = cuda__finish(device, launch,
                          cuda__channel_bias(y->dtype, w.batch, w.c, w.in_count, a[2].ptr, y->ptr,
                                             s));
    return st;
}
