/*
 * The CUDA driver's copies (cuda_copy.c): the strided copy (Transpose, Slice, Concat,
 * ExpandLike, SliceGrad), index checks, Gather and its gradient.
 */
#include "cuda_kernels.cuh"

namespace {

template <typename T>
__global__ void strided_kernel(cuda_bcast_t g, const T *x, T *y) {
    FOR_EACH(i, g.count) {
        y[walk_offset(g, 1, i)] = x[walk_offset(g, 0, i)];
    }
}

/* ---------------------------------------------------------------------------------------------
 * Indices: checks, Gather, GatherGrad.
 * ------------------------------------------------------------------------------------------- */

__global__ void check_indices_kernel(int64_t n, const void *idx, int idx64, int64_t dim,
                                     unsigned long long *bad) {
    FOR_EACH(j, n) {
        const int64_t k = index_at(idx, idx64, j);
        if (k < -dim || k >= dim)
            atomicMin(bad, (unsigned long long)j);
    }
}

/* Indices out of range were reported by check_indices_kernel; they are skipped here. */
template <typename T>
__global__ void gather_kernel(int64_t outer, int64_t dim, int64_t nidx, int64_t inner, const T *x,
                              const void *idx, int idx64, T *y) {
    FOR_EACH(t, outer * nidx * inner) {
        const int64_t i = t % inner, j = (t / inner) % nidx, o = t / (inner * nidx);
        int64_t k = index_at(idx, idx64, j);
        if (k < 0)
            k += dim;
        if (k >= 0 && k < dim)
            y[t] = x[(o * dim + k) * inner + i];
    }
}

/* One thread per output element, adding dy's blocks in the order of the indices: the CPU's
 * order, so that repeated indices sum exactly as there. */
template <typename T>
__global__ void gather_grad_kernel(int64_t outer, int64_t dim, int64_t nidx, int64_t inner,
                                   const T *dy, const void *idx, int idx64, T *out) {
    FOR_EACH(t, outer * dim * inner) {
        const int64_t i = t % inner, a = (t / inner) % dim, o = t / (inner * dim);
        T acc = (T)0;
        for (int64_t j = 0; j < nidx; j++) {
            int64_t k = index_at(idx, idx64, j);
            if (k < 0)
                k += dim;
            if (k == a)
                acc += dy[(o * nidx + j) * inner + i];
        }
        out[t] = acc;
    }
}

/* For large cases: each element of dy added into its place with atomicAdd (the output zeroed
 * first). The order of the additions to one element then varies from run to run. */
template <typename T>
__global__ void gather_grad_atomic_kernel(int64_t outer, int64_t dim, int64_t nidx, int64_t inner,
                                          const T *dy, const void *idx, int idx64, T *out) {
    FOR_EACH(t, outer * nidx * inner) {
        const int64_t i = t % inner, j = (t / inner) % nidx, o = t / (inner * nidx);
        int64_t k = index_at(idx, idx64, j);
        if (k < 0)
            k += dim;
        if (k >= 0 && k < dim)
            atomicAdd(out + (o * dim + k) * inner + i, dy[t]);
    }
}

} /* namespace */

/* GatherGrad scans every index for every output element up to this many index reads, then
 * uses atomicAdd. A test build may lower it to exercise the atomic kernel. */
#ifndef CUDA_GATHER_GRAD_SCAN
#define CUDA_GATHER_GRAD_SCAN (INT64_C(1) << 28)
#endif

/* kernel<<<blocks for n elements, 256 threads, stream s>>>; the kernel comes last because a
 * template's commas would split a macro argument. */
#define LAUNCH(n, s, ...) __VA_ARGS__<<<blocks_for(n), 256, 0, (cudaStream_t)(s)>>>

extern "C" int cuda__strided(uint32_t esize, const cuda_bcast_t *g, const void *x, void *y,
                             void *stream) {
    switch (esize) {
#define CASE(N, T)                                                             \
    case N:                                                                    \
        LAUNCH(g->count, stream, strided_kernel<T>)(*g, (const T *)x, (T *)y); \
        break;
        CASE(1, uint8_t)
        CASE(2, uint16_t)
        CASE(4, uint32_t)
        CASE(8, uint64_t)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__check_indices(int64_t n, const void *idx, int idx64, int64_t dim,
                                   unsigned long long *bad, void *stream) {
    LAUNCH(n, stream, check_indices_kernel)(n, idx, idx64, dim, bad);
    return (int)cudaGetLastError();
}

extern "C" int cuda__gather(uint32_t esize, int64_t outer, int64_t dim, int64_t nidx, int64_t inner,
                            const void *x, const void *idx, int idx64, void *y, void *stream) {
    const int64_t n = outer * nidx * inner;
    switch (esize) {
#define CASE(N, T)                                                   \
    case N:                                                          \
        LAUNCH(n, stream, gather_kernel<T>)                          \
        (outer, dim, nidx, inner, (const T *)x, idx, idx64, (T *)y); \
        break;
        CASE(1, uint8_t)
        CASE(2, uint16_t)
        CASE(4, uint32_t)
        CASE(8, uint64_t)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__gather_grad(uint32_t dtype, int64_t outer, int64_t dim, int64_t nidx,
                                 int64_t inner, const void *dy, const void *idx, int idx64,
                                 void *out, void *stream) {
    const int64_t n = outer * dim * inner;
    if (dtype != CUDA_DT_F32 && dtype != CUDA_DT_F64)
        return (int)cudaErrorInvalidValue;
    /* Scanning every index for every output element keeps the CPU's order of additions; past
     * CUDA_GATHER_GRAD_SCAN index reads (a large table, many indices) the atomic kernel takes
     * over. */
    const int scan = nidx == 0 || n <= CUDA_GATHER_GRAD_SCAN / nidx;
    if (!scan) {
        const cudaError_t e = cudaMemsetAsync(out, 0, (size_t)n * (dtype == CUDA_DT_F64 ? 8 : 4),
                                              (cudaStream_t)stream);
        if (e != cudaSuccess)
            return (int)e;
    }
    switch (dtype) {
#define CASE(DT, T)                                                          \
    case DT:                                                                 \
        if (scan)                                                            \
            LAUNCH(n, stream, gather_grad_kernel<T>)                         \
            (outer, dim, nidx, inner, (const T *)dy, idx, idx64, (T *)out);  \
        else                                                                 \
            LAUNCH(outer *nidx *inner, stream, gather_grad_atomic_kernel<T>) \
            (outer, dim, nidx, inner, (const T *)dy, idx, idx64, (T *)out);  \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}
