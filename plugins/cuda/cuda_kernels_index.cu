/*
 * The CUDA driver's indexing kernels (cuda_index.c): GatherElements, TopK and
 * NonMaxSuppression.
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

/* NonMaxSuppression: the most boxes a (batch, class) may have here (their order is kept in
 * shared memory; cuda_index.c refuses more). */
#define NMS_MAX_BOXES CUDA_NMS_MAX_BOXES
#define NMS_THREADS 256

/* The CPU's intersection over union of boxes @p a and @p b (corners in any order, or center and
 * size); 0 when either has no area. */
__device__ __forceinline__ double box_iou(const float *a, const float *b, int center) {
    double ay0, ax0, ay1, ax1, by0, bx0, by1, bx1;
    if (center) {
        ax0 = a[0] - a[2] / 2.0, ax1 = a[0] + a[2] / 2.0, ay0 = a[1] - a[3] / 2.0,
        ay1 = a[1] + a[3] / 2.0;
        bx0 = b[0] - b[2] / 2.0, bx1 = b[0] + b[2] / 2.0, by0 = b[1] - b[3] / 2.0,
        by1 = b[1] + b[3] / 2.0;
    } else {
        ay0 = fmin((double)a[0], (double)a[2]), ay1 = fmax((double)a[0], (double)a[2]);
        ax0 = fmin((double)a[1], (double)a[3]), ax1 = fmax((double)a[1], (double)a[3]);
        by0 = fmin((double)b[0], (double)b[2]), by1 = fmax((double)b[0], (double)b[2]);
        bx0 = fmin((double)b[1], (double)b[3]), bx1 = fmax((double)b[1], (double)b[3]);
    }
    const double area_a = (ay1 - ay0) * (ax1 - ax0), area_b = (by1 - by0) * (bx1 - bx0);
    if (area_a <= 0 || area_b <= 0)
        return 0.0;
    const double ih = fmin(ay1, by1) - fmax(ay0, by0), iw = fmin(ax1, bx1) - fmax(ax0, bx0);
    const double inter = ih > 0 && iw > 0 ? ih * iw : 0.0;
    return inter / (area_a + area_b - inter);
}

/*
 * One block for the whole op, (batch, class) after (batch, class) as on the CPU. The candidates
 * (scores above the threshold, when there is one) are ordered as the CPU's insertion sort orders
 * them: highest first, ties to the lower index, and a NaN score stays where it came (after every
 * earlier candidate, before every later one), so that each thread places its own candidates by
 * counting. Then the greedy pass keeps a candidate whose IoU with every box kept so far is at
 * most the threshold (the block checks the kept boxes together). Selected boxes are written while
 * they fit the output; the total, when it is not the output's row count, goes to *bad.
 */
__global__ void nms_kernel(int64_t batch, int64_t n, int64_t classes, const float *boxes,
                           const float *scores, int center, int64_t max_out, int has_st,
                           double iou_th, double score_th, int64_t rows, int64_t *out,
                           unsigned long long *bad) {
    __shared__ int32_t order[NMS_MAX_BOXES];
    __shared__ double sh[NMS_THREADS];
    __shared__ int flag;
    __shared__ int64_t selected, total;

    if (threadIdx.x == 0)
        total = 0;
    __syncthreads();
    for (int64_t q = 0; q < batch && max_out > 0; q++)
        for (int64_t c = 0; c < classes; c++) {
            const float *bx = boxes + q * n * 4, *sc = scores + (q * classes + c) * n;
            double mine = 0.0;
            for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
                const float v = sc[i];
                if (has_st && !(v > score_th))
                    continue;
                mine += 1.0;
                int64_t place = 0, before = 0;
                for (int64_t j = 0; j < n; j++) {
                    const float u = sc[j];
                    if (j == i || (has_st && !(u > score_th)))
                        continue;
                    if (j < i) {
                        before++;
                        if (u != u)
                            place = before; /* a NaN before i: i comes after it */
                        else if (v == v && u >= v)
                            place++;
                    } else if (v == v) {
                        if (u != u)
                            break; /* a NaN after i: nothing beyond it comes before i */
                        if (u > v)
                            place++;
                    }
                }
                order[v != v ? before : place] = (int32_t)i;
            }
            const int64_t k = (int64_t)block_sum(mine, sh);
            if (threadIdx.x == 0)
                selected = 0;
            __syncthreads();
            for (int64_t r = 0; r < k && selected < max_out; r++) {
                const int32_t cur = order[r];
                if (threadIdx.x == 0)
                    flag = 0;
                __syncthreads();
                for (int64_t p = threadIdx.x; p < selected; p += blockDim.x)
                    if (!(box_iou(&bx[(int64_t)cur * 4], &bx[(int64_t)order[p] * 4], center) <=
                          iou_th))
                        flag = 1;
                __syncthreads();
                if (threadIdx.x == 0 && !flag) {
                    order[selected++] = cur;
                    if (total < rows) {
                        out[total * 3] = q;
                        out[total * 3 + 1] = c;
                        out[total * 3 + 2] = cur;
                    }
                    total++;
                }
                __syncthreads();
            }
        }
    if (threadIdx.x == 0 && total != rows)
        atomicMin(bad, (unsigned long long)total);
}

} /* namespace */

#define LAUNCH(n, s, ...) __VA_ARGS__<<<blocks_for(n), 256, 0, (cudaStream_t)(s)>>>

extern "C" int cuda__gather_elements(uint32_t esize, const cuda_bcast_t *g, int axis, int64_t dim,
                                     const void *x, const void *idx, int idx64, void *y,
                                     void *stream) {
    switch (esize) {
#define CASE(N, T)                                          \
    case N:                                                 \
        LAUNCH(g->count, stream, gather_elements_kernel<T>) \
        (*g, axis, dim, (const T *)x, idx, idx64, (T *)y);  \
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
#define CASE(DT, T)                                                        \
    case DT:                                                               \
        LAUNCH(count, stream, topk_kernel<T>)                              \
        (outer, n, inner, k, largest, (const T *)x, (T *)values, indices); \
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

extern "C" int cuda__nms(int64_t batch, int64_t n, int64_t classes, const float *boxes,
                         const float *scores, int center, int64_t max_out, int has_st,
                         double iou_th, double score_th, int64_t rows, int64_t *out,
                         unsigned long long *bad, void *stream) {
    if (n > NMS_MAX_BOXES)
        return (int)cudaErrorInvalidValue;
    nms_kernel<<<1, NMS_THREADS, 0, (cudaStream_t)stream>>>(batch, n, classes, boxes, scores,
                                                            center, max_out, has_st, iou_th,
                                                            score_th, rows, out, bad);
    return (int)cudaGetLastError();
}
