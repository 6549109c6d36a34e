/*
 * MatMul, Gemm and MatMulGrad through cuBLAS.
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
 * MatMul, Gemm, MatMulGrad through cuBLAS (row-major: C^T = B^T A^T in cuBLAS's column-major).
 * ------------------------------------------------------------------------------------------- */

static cudaDataType cuda_blas_type(uint32_t dtype) {
    return dtype == SES_DRV_DTYPE_F16    ? CUDA_R_16F
           : dtype == SES_DRV_DTYPE_BF16 ? CUDA_R_16BF
           : dtype == SES_DRV_DTYPE_F64  ? CUDA_R_64F
                                         : CUDA_R_32F;
}

/*
 * Row-major Y[M,N] = alpha * op(A)[M,K] op(B)[K,N] + beta * Y, @p batch times, the batches
 * @p sa, @p sb, @p sy elements apart (0: the same matrix; sy is never 0 with batch > 1).
 * Enqueued on the launch's stream; f64 computes in f64, the others in f32 (TF32 when allowed).
 */
int32_t cuda__gemm(ses_drv_device_t *device, const ses_drv_launch_t *launch, uint32_t dtype, int ta,
                   int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *A, int64_t sa,
                   const void *B, int64_t sb, double beta, void *Y, int64_t sy, int64_t batch) {
    cublasStatus_t cs = CUBLAS_STATUS_SUCCESS;
    const cudaDataType type = cuda_blas_type(dtype);
    const int f64 = dtype == SES_DRV_DTYPE_F64;
    const cublasComputeType_t ct = f64 ? CUBLAS_COMPUTE_64F
                                   : dtype == SES_DRV_DTYPE_F32 && device->allow_tf32
                                       ? CUBLAS_COMPUTE_32F_FAST_TF32
                                       : CUBLAS_COMPUTE_32F;
    const float alpha_f = (float)alpha, beta_f = (float)beta;
    const void *al = f64 ? (const void *)&alpha : (const void *)&alpha_f;
    const void *be = f64 ? (const void *)&beta : (const void *)&beta_f;
    const int64_t es = ses_drv_util_dtype_size(dtype);

    if (!device->cublas)
        return cuda__node_fail(device, launch->node, SES_DRV_UNAVAILABLE,
                               "cuBLAS could not be initialised on cuda:%d", device->ordinal);
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return cuda__node_fail(device, launch->node, SES_DRV_UNIMPLEMENTED,
                               "dimensions beyond 2^31 are not supported");
    const int lda = ta ? (int)m : (int)k, ldb = tb ? (int)k : (int)n;
    const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                            opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    pthread_mutex_lock(&device->lock);
    cublasSetStream((cublasHandle_t)device->cublas, (cudaStream_t)cuda__stream_of(device, launch));
    {
        /* cublasSetStream reset the workspace: the stream's own, so capture never allocates. */
        void *ws;
        uint64_t ws_bytes;
        if (cuda__stream_workspace(device, cuda__stream_of(device, launch), &ws, &ws_bytes))
            cublasSetWorkspace((cublasHandle_t)device->cublas, ws, (size_t)ws_bytes);
    }
    for (int64_t done = 0; done < batch && cs == CUBLAS_STATUS_SUCCESS;) {
        const int64_t part = batch - done < INT32_MAX ? batch - done : INT32_MAX;
        const char *a = (const char *)A + done * sa * es, *b = (const char *)B + done * sb * es;
        char *y = (char *)Y + done * sy * es;
        if (part == 1)
            cs = cublasGemmEx((cublasHandle_t)device->cublas, opb, opa, (int)n, (int)m, (int)k, al,
                              b, type, ldb, a, type, lda, be, y, type, (int)n, ct,
                              CUBLAS_GEMM_DEFAULT);
        else
            cs = cublasGemmStridedBatchedEx((cublasHandle_t)device->cublas, opb, opa, (int)n,
                                            (int)m, (int)k, al, b, type, ldb, (long long)sb, a,
                                            type, lda, (long long)sa, be, y, type, (int)n,
                                            (long long)sy, (int)part, ct, CUBLAS_GEMM_DEFAULT);
        done += part;
    }
    pthread_mutex_unlock(&device->lock);
    if (cs != CUBLAS_STATUS_SUCCESS)
        return cuda__node_fail(device, launch->node, SES_DRV_INTERNAL,
                               "cuBLAS GEMM (%" PRId64 "x%" PRId64 "x%" PRId64 ", %" PRId64
                               " batches) failed: status %d",
                               m, n, k, batch, (int)cs);
    return cuda__finish(device, launch, (int)cudaGetLastError());
}

/* The batch walk of a batched product: dims and the element strides of its three matrices. */
typedef struct cuda_batches {
    uint32_t n;
    int64_t dims[CUDA_MAX_RANK];
    int64_t st[3][CUDA_MAX_RANK]; /* X (op(X) is [m,k]), Z ([k,n]), Y ([m,n]) */
} cuda_batches_t;

/* Drops batch dims of 1 and merges neighbours that every matrix walks contiguously. */
static void cuda_batches_merge(cuda_batches_t *b) {
    uint32_t w = 0;
    for (uint32_t d = 0; d < b->n; d++) {
        if (b->dims[d] == 1)
            continue;
        int merge = w > 0;
        for (int k = 0; merge && k < 3; k++)
            merge = b->st[k][w - 1] == b->st[k][d] * b->dims[d];
        if (merge) {
            b->dims[w - 1] *= b->dims[d];
            for (int k = 0; k < 3; k++)
                b->st[k][w - 1] = b->st[k][d];
        } else {
            b->dims[w] = b->dims[d];
            for (int k = 0; k < 3; k++)
                b->st[k][w] = b->st[k][d];
            w++;
        }
    }
    b->n = w;
}

/*
 * Whether the merged batches @p b of Y = op(X) op(Z) ([m,k] by [k,n]) fold into the inner
 * dimension: Y shared by every batch (summed over them), X and Z stacked along k (ta, !tb, so
 * that X^T and Z are each one [k * count, ...] matrix). Then one GEMM of k * count inner
 * elements is that sum, accumulated by cuBLAS in f32 (or f64) and rounded once.
 */
static int cuda_batches_fold(const cuda_batches_t *b, int ta, int tb, int64_t m, int64_t n,
                             int64_t k) {
    return b->n == 1 && ta && !tb && b->st[2][0] == 0 && b->st[0][0] == k * m &&
           b->st[1][0] == k * n;
}

/*
 * Y = sum over the batches of @p b (merged) of op(X_b) op(Z_b), where Y repeats along some
 * batch dims (stride 0): f16 and bf16, each output element summed in f32 by cuda__gemm_sum and
 * rounded once, where beta-1 GEMMs (cuda_gemm_batches) would round every partial sum. Writes
 * every element of Y.
 */
static int32_t cuda_gemm_sum(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                             uint32_t dtype, int ta, int tb, int64_t m, int64_t n, int64_t k,
                             const void *X, const void *Z, void *Y, const cuda_batches_t *b) {
    cuda_gsum_t g;

    memset(&g, 0, sizeof g);
    g.m = m;
    g.n = n;
    g.k = k;
    /* X is stored [k,m] when transposed, else [m,k]; Z [n,k] when transposed, else [k,n]. */
    g.x_i = ta ? 1 : k;
    g.x_p = ta ? m : 1;
    g.z_p = tb ? 1 : n;
    g.z_j = tb ? k : 1;
    g.out_count = m * n;
    g.sum_count = 1;
    for (uint32_t d = 0; d < b->n; d++) {
        if (b->st[2][d] == 0) {
            g.sum_dims[g.n_sum] = b->dims[d];
            g.sum_stride[0][g.n_sum] = b->st[0][d];
            g.sum_stride[1][g.n_sum] = b->st[1][d];
            g.sum_count *= b->dims[d];
            g.n_sum++;
        } else {
            g.keep_dims[g.n_keep] = b->dims[d];
            for (int q = 0; q < 3; q++)
                g.keep_stride[q][g.n_keep] = b->st[q][d];
            g.out_count *= b->dims[d];
            g.n_keep++;
        }
    }
    return cuda__finish(device, launch,
                        cuda__gemm_sum(dtype, &g, X, Z, Y, cuda__stream_of(device, launch)));
}

/*
 * Y_b = alpha op(X_b) op(Z_b) + beta Y_b over the batches of @p b: the innermost merged batch
 * dim is one strided-batched GEMM, the outer ones a loop on the stream. When Y repeats along
 * a batch dim (a gradient summed over broadcast batches), every batch is its own GEMM with
 * beta 1, in order, so that the sums accumulate (the caller zeroed Y).
 */
static int32_t cuda_gemm_batches(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                                 uint32_t dtype, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                 const void *X, const void *Z, void *Y, cuda_batches_t *b) {
    int32_t st = SES_DRV_OK;
    const int64_t es = ses_drv_util_dtype_size(dtype);

    cuda_batches_merge(b);
    if (b->n == 0)
        return cuda__gemm(device, launch, dtype, ta, tb, m, n, k, 1.0, X, 0, Z, 0, 0.0, Y, 0, 1);
    /* One batch dim, Z shared, X's and Y's rows stacked: one GEMM of m * count rows. */
    if (b->n == 1 && !ta && b->st[1][0] == 0 && b->st[0][0] == m * k && b->st[2][0] == m * n)
        return cuda__gemm(device, launch, dtype, 0, tb, m * b->dims[0], n, k, 1.0, X, 0, Z, 0, 0.0,
                          Y, 0, 1);
    /* Y shared (summed over the batch), X and Z stacked along k: one GEMM (cuda_batches_fold). */
    if (cuda_batches_fold(b, ta, tb, m, n, k))
        return cuda__gemm(device, launch, dtype, 1, 0, m, n, k * b->dims[0], 1.0, X, 0, Z, 0, 0.0,
                          Y, 0, 1);
    int accumulate = 0;
    for (uint32_t d = 0; d < b->n; d++)
        accumulate |= b->st[2][d] == 0;
    int64_t total = 1;
    for (uint32_t d = 0; d < b->n; d++)
        total *= b->dims[d];
    const uint32_t outer_n = accumulate ? b->n : b->n - 1;
    const int64_t inner = accumulate ? 1 : b->dims[b->n - 1];
    for (int64_t i = 0; i < total / inner && st == SES_DRV_OK; i++) {
        int64_t off[3] = {0, 0, 0}, rest = i;
        for (uint32_t d = outer_n; d-- > 0;) {
            const int64_t idx = rest % b->dims[d];
            rest /= b->dims[d];
            for (int q = 0; q < 3; q++)
                off[q] += idx * b->st[q][d];
        }
        const int64_t last = b->n - 1;
        st = cuda__gemm(device, launch, dtype, ta, tb, m, n, k, 1.0, (const char *)X + off[0] * es,
                        accumulate ? 0 : b->st[0][last], (const char *)Z + off[1] * es,
                        accumulate ? 0 : b->st[1][last], accumulate ? 1.0 : 0.0,
                        (char *)Y + off[2] * es, accumulate ? 0 : b->st[2][last], inner);
    }
    return st;
}

/*
 * numpy matmul shapes: A [..., M, K] (1-D: [K], M = 1), B [..., K, N] (1-D: [K], N = 1), Y
 * [batch..., M, N] without the dims of 1-D operands; batch dims broadcast. Fills @p b with A's,
 * B's and Y's matrix strides per batch dim of Y (in slots 0, 1, 2).
 */
static int32_t cuda_matmul_shapes(ses_drv_device_t *device, const ses_drv_node_t *node,
                                  const cuda_arg_t *A, const cuda_arg_t *B, const cuda_arg_t *Y,
                                  int64_t *m, int64_t *n, int64_t *k, cuda_batches_t *b) {
    if (A->rank < 1 || B->rank < 1)
        return cuda__shape_fail(device, node, "MatMul needs operands of rank >= 1", A, B);
    *m = A->rank == 1 ? 1 : A->dims[A->rank - 2];
    *k = A->dims[A->rank - 1];
    const int64_t kb = B->rank == 1 ? B->dims[0] : B->dims[B->rank - 2];
    *n = B->rank == 1 ? 1 : B->dims[B->rank - 1];
    if (*k != kb)
        return cuda__shape_fail(device, node, "inner dimensions differ", A, B);
    const uint32_t ab = A->rank > 2 ? A->rank - 2 : 0, bb = B->rank > 2 ? B->rank - 2 : 0;
    const uint32_t yb = ab > bb ? ab : bb;
    if (Y->rank != yb + (A->rank > 1) + (B->rank > 1) || (A->rank > 1 && Y->dims[yb] != *m) ||
        (B->rank > 1 && Y->dims[Y->rank - 1] != *n))
        return cuda__shape_fail(device, node, "the output (or dy) does not match MatMul(A, B)", A,
                                Y);
    int64_t sa = *m * *k, sb = *k * *n, sy = *m * *n;
    memset(b, 0, sizeof *b);
    b->n = yb;
    for (uint32_t d = yb; d-- > 0;) {
        const int64_t da = d + ab >= yb ? A->dims[d + ab - yb] : 1;
        const int64_t db = d + bb >= yb ? B->dims[d + bb - yb] : 1;
        if ((da != 1 && db != 1 && da != db) || Y->dims[d] != (da == 1 ? db : da))
            return cuda__shape_fail(device, node, "batch dims do not broadcast", A, B);
        b->dims[d] = Y->dims[d];
        b->st[0][d] = da == 1 ? 0 : sa;
        b->st[1][d] = db == 1 ? 0 : sb;
        b->st[2][d] = sy;
        sa *= da;
        sb *= db;
        sy *= Y->dims[d];
    }
    return SES_DRV_OK;
}

int32_t cuda__k_matmul(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    cuda_batches_t b;
    int64_t m = 0, n = 0, k = 0; /* set by cuda_matmul_shapes; 0 for -O3 */
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda__dtypes_agree(device, node, a, 3)) != SES_DRV_OK ||
        (st = cuda_matmul_shapes(device, node, &a[0], &a[1], &a[2], &m, &n, &k, &b)) != SES_DRV_OK)
        return st;
    if (a[2].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    if (k == 0)
        return cuda__finish(device, launch,
                            (int)cudaMemsetAsync(a[2].ptr, 0, (size_t)a[2].bytes,
                                                 (cudaStream_t)cuda__stream_of(device, launch)));
    return cuda_gemm_batches(device, launch, a[2].dtype, 0, 0, m, n, k, a[0].ptr, a[1].ptr,
                             a[2].ptr, &b);
}

/*
 * MatMulGrad (dy, A, B; `input` 0 or 1): the gradient of A (dy B^T) or of B (A^T dy), summed
 * over the batch dims that operand was broadcast along.
 */
int32_t cuda__k_matmul_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    cuda_batches_t b, g;
    int64_t which = 0, m = 0, n = 0, k = 0;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 3, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda__dtypes_agree(device, node, a, 4)) != SES_DRV_OK)
        return st;
    if (cuda__attr_int(node, "input", 0, &which) != SES_DRV_OK || (which != 0 && which != 1))
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "input must be 0 or 1");
    const cuda_arg_t *dy = &a[0], *A = &a[1], *B = &a[2], *out = &a[3];
    if ((st = cuda_matmul_shapes(device, node, A, B, dy, &m, &n, &k, &b)) != SES_DRV_OK)
        return st;
    if (!cuda__same_shape(out, which == 0 ? A : B))
        return cuda__shape_fail(device, node, "the output differs from the operand's shape", out,
                                which == 0 ? A : B);
    if (out->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    void *s = cuda__stream_of(device, launch);
    /* Nothing is summed into the output when dy is empty: zeros. */
    if (dy->count == 0)
        return cuda__finish(device, launch,
                            (int)cudaMemsetAsync(out->ptr, 0, (size_t)out->bytes, (cudaStream_t)s));
    /* The product as Y = op(X) op(Z) ([gm,gk] by [gk,gn]) per batch of g:
     * dA_b[M,K] = dy_b[M,N] B_b[K,N]^T, or dB_b[K,N] = A_b[M,K]^T dy_b[M,N]. */
    const int ta = which == 1, tb = which == 0;
    const int64_t gm = which == 0 ? m : k, gn = which == 0 ? k : n, gk = which == 0 ? n : m;
    const void *X = which == 0 ? dy->ptr : A->ptr, *Z = which == 0 ? B->ptr : dy->ptr;
    memset(&g, 0, sizeof g);
    g.n = b.n;
    memcpy(g.dims, b.dims, sizeof g.dims);
    memcpy(g.st[0], b.st[which == 0 ? 2 : 0], sizeof g.st[0]);
    memcpy(g.st[1], b.st[which == 0 ? 1 : 2], sizeof g.st[1]);
    memcpy(g.st[2], b.st[which == 0 ? 0 : 1], sizeof g.st[2]);
    cuda_batches_merge(&g);
    /* The output repeats along the batch dims its operand was broadcast over (now merged, dims
     * of 1 dropped): those batches accumulate into it. */
    int accumulate = 0;
    for (uint32_t d = 0; d < g.n; d++)
        accumulate |= g.st[2][d] == 0;
    if (accumulate && !cuda_batches_fold(&g, ta, tb, gm, gn, gk)) {
        /* An operand broadcast over every batch dim while the other two are dense (a weight's
         * gradient) folds into one GEMM in cuda_gemm_batches, exact in every dtype. Otherwise
         * f16 and bf16 sum each element in f32 and round once, since adding each batch's GEMM
         * into the output would round every partial sum to 8 or 11 bits; f32 and f64 keep
         * those beta-1 GEMMs into the zeroed output, rounding at their own precision. */
        if (out->dtype == SES_DRV_DTYPE_F16 || out->dtype == SES_DRV_DTYPE_BF16)
            return cuda_gemm_sum(device, launch, out->dtype, ta, tb, gm, gn, gk, X, Z, out->ptr,
                                 &g);
        int e = (int)cudaMemsetAsync(out->ptr, 0, (size_t)out->bytes, (cudaStream_t)s);
        if (e != 0)
            return cuda__finish(device, launch, e);
    }
    return cuda_gemm_batches(device, launch, out->dtype, ta, tb, gm, gn, gk, X, Z, out->ptr, &g);
}

int32_t cuda__k_gemm_op(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    double alpha = 1.0, beta = 1.0;
    int64_t ta = 0, tb = 0;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 2, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    cuda_arg_t *y = &a[ni];
    if ((st = cuda__dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK)
        return st;
    if (cuda__attr_double(node, "alpha", 1.0, &alpha) != SES_DRV_OK ||
        cuda__attr_double(node, "beta", 1.0, &beta) != SES_DRV_OK ||
        cuda__attr_int(node, "transA", 0, &ta) != SES_DRV_OK ||
        cuda__attr_int(node, "transB", 0, &tb) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "an attribute has the wrong type");
    if (a[0].rank != 2 || a[1].rank != 2 || y->rank != 2)
        return cuda__shape_fail(device, node, "A, B and Y must be 2-D", &a[0], &a[1]);
    const int64_t m = ta ? a[0].dims[1] : a[0].dims[0], k = ta ? a[0].dims[0] : a[0].dims[1];
    const int64_t kb = tb ? a[1].dims[1] : a[1].dims[0], n = tb ? a[1].dims[0] : a[1].dims[1];
    if (k != kb || y->dims[0] != m || y->dims[1] != n)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "shapes disagree: op(A) is [%" PRId64 ",%" PRId64
                               "], op(B) [%" PRId64 ",%" PRId64 "], Y [%" PRId64 ",%" PRId64 "]",
                               m, k, kb, n, y->dims[0], y->dims[1]);
    if (y->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    void *stream = cuda__stream_of(device, launch);
    double b = 0.0;
    if (ni == 3 && beta != 0.0) {
        /* Y = C broadcast, then the GEMM adds alpha op(A) op(B) to beta Y. */
        cuda_bcast_t g;
        if (!cuda__bcast(&a[2], &a[2], y, &g))
            return cuda__shape_fail(device, node, "C does not broadcast to (M, N)", &a[2], y);
        if (a[2].ptr == y->ptr && !g.same)
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "C shares the output's bytes but is broadcast");
        int e = cuda__binary(y->dtype, &g, CUDA_BIN_FIRST, k == 0 ? beta : 1.0, a[2].ptr, a[2].ptr,
                             y->ptr, stream);
        if (e != 0 || k == 0)
            return cuda__finish(device, launch, e);
        b = beta;
    } else if (k == 0) {
        return cuda__finish(
            device, launch,
            (int)cudaMemsetAsync(y->ptr, 0, (size_t)y->bytes, (cudaStream_t)stream));
    }
    return cuda__gemm(device, launch, y->dtype, (int)ta, (int)tb, m, n, k, alpha, a[0].ptr, 0,
                      a[1].ptr, 0, b, y->ptr, 0, 1);
}
