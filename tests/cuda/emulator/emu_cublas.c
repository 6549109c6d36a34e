/*
 * Test-only: the cuBLAS entry points the CUDA driver calls, emulated on the host: a handle with
 * its stream, workspace and math mode, and cublasGemmEx / cublasGemmStridedBatchedEx as a
 * naive column-major GEMM, enqueued on the handle's stream (so that a capture records it).
 *
 * The arguments are checked as cuBLAS documents (sizes, leading dimensions, the pairs of data
 * and compute types the driver uses), and every matrix a GEMM reads or writes must lie in one
 * block of emulated device memory. f64 computes in f64; f32, f16 and bf16 compute in f32, one
 * product after another, with alpha and beta in f32; C is not read when beta is 0.
 */
#include <cublas_v2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_half.h"
#include "emu_runtime.h"

#define EMU_HANDLE_MAGIC 0x43424c53u /* "CBLS" */

struct cublasContext {
    uint32_t magic;
    cudaStream_t stream;
    void *workspace;
    size_t workspace_bytes;
    cublasMath_t math;
};

static int emu_handle_ok(const struct cublasContext *h) {
    return h && h->magic == EMU_HANDLE_MAGIC;
}

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
    struct cublasContext *h;

    if (!handle)
        return CUBLAS_STATUS_INVALID_VALUE;
    h = calloc(1, sizeof *h);
    if (!h)
        return CUBLAS_STATUS_ALLOC_FAILED;
    h->magic = EMU_HANDLE_MAGIC;
    h->math = CUBLAS_DEFAULT_MATH;
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
    if (!emu_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->magic = 0;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

/* As in cuBLAS, a new stream drops the workspace the caller set: the default one is used until
 * cublasSetWorkspace is called again. */
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
    if (!emu_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = stream;
    handle->workspace = NULL;
    handle->workspace_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
}

/* The workspace must be device memory aligned to 256 bytes. */
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace, size_t bytes) {
    if (!emu_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes && (!workspace || (uintptr_t)workspace % 256 != 0 ||
                  !emu_device_range(workspace, bytes)))
        return CUBLAS_STATUS_INVALID_VALUE;
    handle->workspace = workspace;
    handle->workspace_bytes = bytes;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    const unsigned base =
        (unsigned)mode & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;

    if (!emu_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH &&
        base != CUBLAS_PEDANTIC_MATH && base != CUBLAS_TF32_TENSOR_OP_MATH)
        return CUBLAS_STATUS_INVALID_VALUE;
    handle->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------------------------------------
 * GEMM
 * ------------------------------------------------------------------------------------------- */

/* One GEMM call, copied at the call (alpha and beta too: host pointer mode). */
typedef struct emu_gemm {
    cublasOperation_t ta, tb;
    int64_t m, n, k, lda, ldb, ldc, sa, sb, sc, count;
    const void *A, *B;
    void *C;
    cudaDataType type;
    int f64; /* compute in double; otherwise in float */
    double alpha, beta;
} emu_gemm_t;

static size_t emu_type_size(cudaDataType t) {
    return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : 2;
}

static double emu_load(const void *p, int64_t i, cudaDataType t) {
    switch (t) {
    case CUDA_R_64F:
        return ((const double *)p)[i];
    case CUDA_R_32F:
        return ((const float *)p)[i];
    case CUDA_R_16F:
        return emu_f16_to_double(((const uint16_t *)p)[i]);
    default:
        return emu_bf16_to_double(((const uint16_t *)p)[i]);
    }
}

/* Rounded once to the storage type (RNE), as cuBLAS's epilogue does. */
static void emu_store(void *p, int64_t i, cudaDataType t, double v) {
    switch (t) {
    case CUDA_R_64F:
        ((double *)p)[i] = v;
        break;
    case CUDA_R_32F:
        ((float *)p)[i] = (float)v;
        break;
    case CUDA_R_16F:
        ((uint16_t *)p)[i] = emu_f16_from_double(v);
        break;
    default:
        ((uint16_t *)p)[i] = emu_bf16_from_double(v);
        break;
    }
}

/* Element (row, col) of op(X), X column-major with leading dimension ld. */
static int64_t emu_at(cublasOperation_t op, int64_t row, int64_t col, int64_t ld) {
    return op == CUBLAS_OP_N ? row + col * ld : col + row * ld;
}

static void emu_run_gemm(void *ctx) {
    const emu_gemm_t *g = ctx;
    const cudaDataType t = g->type;

    for (int64_t b = 0; b < g->count; b++) {
        const char *A = (const char *)g->A + (size_t)(b * g->sa) * emu_type_size(t);
        const char *B = (const char *)g->B + (size_t)(b * g->sb) * emu_type_size(t);
        char *C = (char *)g->C + (size_t)(b * g->sc) * emu_type_size(t);
        for (int64_t j = 0; j < g->n; j++)
            for (int64_t i = 0; i < g->m; i++) {
                const int64_t c = i + j * g->ldc;
                if (g->f64) {
                    double acc = 0.0;
                    for (int64_t l = 0; l < g->k; l++)
                        acc += emu_load(A, emu_at(g->ta, i, l, g->lda), t) *
                               emu_load(B, emu_at(g->tb, l, j, g->ldb), t);
                    acc *= g->alpha;
                    if (g->beta != 0.0)
                        acc += g->beta * emu_load(C, c, t);
                    emu_store(C, c, t, acc);
                } else {
                    const float alpha = (float)g->alpha, beta = (float)g->beta;
                    float acc = 0.0f;
                    for (int64_t l = 0; l < g->k; l++)
                        acc += (float)emu_load(A, emu_at(g->ta, i, l, g->lda), t) *
                               (float)emu_load(B, emu_at(g->tb, l, j, g->ldb), t);
                    acc *= alpha;
                    if (beta != 0.0f)
                        acc += beta * (float)emu_load(C, c, t);
                    emu_store(C, c, t, acc);
                }
            }
    }
}

/* Whether a rows x cols column-major matrix (leading dimension ld), count times stride
 * elements apart, lies in one block of device memory. */
static int emu_matrix_ok(const void *p, int64_t rows, int64_t cols, int64_t ld, int64_t stride,
                         int64_t count, cudaDataType t) {
    int64_t elements;

    if (rows == 0 || cols == 0 || count == 0)
        return 1;
    if (stride < 0)
        return 0;
    elements = (cols - 1) * ld + rows + (count - 1) * stride;
    return p && emu_device_range(p, (size_t)elements * emu_type_size(t));
}

static cublasStatus_t emu_gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                               int m, int n, int k, const void *alpha, const void *A,
                               cudaDataType at, int lda, long long sa, const void *B,
                               cudaDataType bt, int ldb, long long sb, const void *beta, void *C,
                               cudaDataType ct, int ldc, long long sc, int count,
                               cublasComputeType_t compute) {
    const int f64 = compute == CUBLAS_COMPUTE_64F || compute == CUBLAS_COMPUTE_64F_PEDANTIC;
    const int f32 = compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
                    compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    const int a_rows = ta == CUBLAS_OP_N ? m : k, b_rows = tb == CUBLAS_OP_N ? k : n;
    emu_gemm_t *g;

    if (!emu_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T) ||
        m < 0 || n < 0 || k < 0 || count < 0 || lda < (a_rows > 1 ? a_rows : 1) ||
        ldb < (b_rows > 1 ? b_rows : 1) || ldc < (m > 1 ? m : 1) || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    /* The combinations the driver uses: one data type, computed in f64 for f64, else in f32
     * (TF32 only for f32 data). */
    if (at != bt || at != ct ||
        !(f64 ? at == CUDA_R_64F
              : f32 && (at == CUDA_R_32F || ((at == CUDA_R_16F || at == CUDA_R_16BF) &&
                                              compute != CUBLAS_COMPUTE_32F_FAST_TF32))))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (m == 0 || n == 0 || count == 0)
        return CUBLAS_STATUS_SUCCESS;
    /* A GPU would fault on a matrix outside device memory; here the call fails instead. */
    if (!emu_matrix_ok(C, m, n, ldc, sc, count, ct) ||
        (k > 0 && (!emu_matrix_ok(A, a_rows, ta == CUBLAS_OP_N ? k : m, lda, sa, count, at) ||
                   !emu_matrix_ok(B, b_rows, tb == CUBLAS_OP_N ? n : k, ldb, sb, count, bt))))
        return CUBLAS_STATUS_EXECUTION_FAILED;
    g = malloc(sizeof *g);
    if (!g)
        return CUBLAS_STATUS_ALLOC_FAILED;
    g->ta = ta;
    g->tb = tb;
    g->m = m;
    g->n = n;
    g->k = k;
    g->lda = lda;
    g->ldb = ldb;
    g->ldc = ldc;
    g->sa = sa;
    g->sb = sb;
    g->sc = sc;
    g->count = count;
    g->A = A;
    g->B = B;
    g->C = C;
    g->type = at;
    g->f64 = f64;
    g->alpha = f64 ? *(const double *)alpha : *(const float *)alpha;
    g->beta = f64 ? *(const double *)beta : *(const float *)beta;
    return emu_enqueue(handle->stream, emu_run_gemm, free, g) == 0 ? CUBLAS_STATUS_SUCCESS
                                                                 : CUBLAS_STATUS_EXECUTION_FAILED;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
    (void)algo;
    return emu_gemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0,
                    beta, C, Ctype, ldc, 0, 1, computeType);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType Atype,
                                          int lda, long long int strideA, const void *B,
                                          cudaDataType Btype, int ldb, long long int strideB,
                                          const void *beta, void *C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType,
                                          cublasGemmAlgo_t algo) {
    (void)algo;
    return emu_gemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
                    strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType);
}
