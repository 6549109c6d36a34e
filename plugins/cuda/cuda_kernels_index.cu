/*
 * The CUDA driver's indexing kernels (cuda_index.c): GatherElements and TopK.
 */
#include "cuda_kernels.cuh"

namespace {

/* GatherElements: output element q (walked over the indices' dims, g.dims) reads data at its own
 * coordinates but along @p axis, where the index says (negative counts from the end). Indices out
 * of range were reported by check_indices_kernel; their elements are skipped. */
template <typename T>
__global__ void gather_elements_kernel(cuda_bcast_t g, int axis, int64_t dim, const T *x,
                                       const void *idx, int idx64, T *y) {
    FOR_EACH(q, g.count) {
        int64_t off = 0, rest = q;
        bool ok = true;
        for (int d = (int)g.rank - 1; d >= 0; d--) {
            int64_t c = rest % g.dims[d];
            rest /= g.dims[d];
            if (d == axis) {
                c = index_at(idx, idx64, q);
                if (c < 0)
                    c += dim;
                ok = c >= 0 && c < dim;
            }
            off += c * g.stride[0][d];
        }
        if (ok)
            y[q] = x[off];
    }
}

/* TopK's order (the CPU's): whether @p a goes strictly before @p b, larger (or smaller) first,
 * NaN above every number. Ties keep the index order. */
template <typename T>
__device__ __forceinline__ bool topk_before(T a, T b, int largest) {
    const bool an = is_nan(a), bn = is_nan(b);
    if (an || bn)
        return largest ? an && !bn : bn && !an;
    return largest ? a > b : a < b;
}

/* One thread per element j of a slice [outer, n, inner] along the axis: its place in the
 * stable order is the number of elements before it plus the equal ones at smaller indices; the
 * first k places are written. The count stops at k, so that most elements leave early. */
template <typename T>
__global__ void topk_kernel(int64_t outer, int64_t n, int64_t inner, int64_t k, int largest,
                            const T *x, T *values, int64_t *indices) {
    FOR_EACH(t, outer * n * inner) {
        const int64_t in = t % inner, j = (t / inner) % n, o = t / (inner * n);
        const T *p = x + o * n * inner + in;
        const T v = p[j * inner];
        int64_t place = 0;
        for (int64_t i = 0; i < n && place < k; i++) {
            const T u = p[i * inner];
            if (topk_before(u, v, largest) || (i < j && !topk_before(v, u, largest)))
                place++;
        }
        if (place < k) {
            values[(o * k + place) * inner + in] = v;
            indices[(o * k + place) * inner + in] = j;
        }
    }
}

} /* namespace */

#define LAUNCH(n, s, ...) __VA_ARGS__<<<blocks_for(n), 256, 0, (cudaStream_t)(s)>>>

extern "C" int cuda__gather_elements(uint32_t esize, const cuda_bcast_t *g, int axis, int64_t dim,
                                     const void *x, const void *idx, int idx64, void *y,
                                     void *stream) {
    switch (esize) {
#define CASE(N, T)                                                                          \
    case N:                                                                                 \
        LAUNCH(g->count, stream, gather_elements_kernel<T>)                                 \
        (*g, axis, dim, (const T *)x, idx, idx64, (T *)y);                                  \
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

extern "C" int cuda__topk(uint32_t dtype, int64_t outer, int64_t n, int64_t inner, int64_t k,
                          int largest, const void *x, void *values, int64_t *indices,
                          void *stream) {
    const int64_t count = outer * n * inner;
    switch (dtype) {
#define CASE(DT, T)                                                                           \
    case DT:                                                                                  \
        LAUNCH(count, stream, topk_kernel<T>)                                                 \
        (outer, n, inner, k, largest, (const T *)x, (T *)values, indices);                    \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
        CASE(CUDA_DT_I32, int32_t)
        CASE(CUDA_DT_I64, int64_t)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}
