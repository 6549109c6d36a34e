/*
 * The CUDA driver's reductions (cuda_reduce.c, cuda_gemm.c): ReduceSum, ReduceMean, ReduceMax over
 * any axes, ReduceSumLike, sums of matrix products over broadcast batches (MatMulGrad in f16 and
 * bf16), the softmax family and ArgMax.
 */
#include "cuda_kernels.cuh"

namespace {

/* ---------------------------------------------------------------------------------------------
 * Reductions: ReduceSum, ReduceMean, ReduceMax over any axes, ReduceSumLike.
 * ------------------------------------------------------------------------------------------- */

template <typename T>
__device__ __forceinline__ T red_add(T a, T b) {
    return a + b;
}
template <>
__device__ __forceinline__ int32_t red_add<int32_t>(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}
template <>
__device__ __forceinline__ int64_t red_add<int64_t>(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* The CPU's max: NaN wins and stays. */
template <typename T>
__device__ __forceinline__ T red_max(T acc, T v) {
    return (v > acc || is_nan(v)) ? v : acc;
}

__device__ __forceinline__ int64_t keep_offset(const cuda_rsum_t &r, int64_t i) {
    int64_t off = 0;
    for (int d = (int)r.n_keep - 1; d >= 0; d--) {
        off += (i % r.keep_dims[d]) * r.keep_stride[d];
        i /= r.keep_dims[d];
    }
    return off;
}

__device__ __forceinline__ int64_t red_offset(const cuda_rsum_t &r, int64_t k) {
    int64_t off = 0;
    for (int d = (int)r.n_red - 1; d >= 0; d--) {
        off += (k % r.red_dims[d]) * r.red_stride[d];
        k /= r.red_dims[d];
    }
    return off;
}

template <typename T>
__device__ __forceinline__ T red_finish(int op, T acc, int64_t count) {
    (void)op;
    (void)count;
    return acc;
}
template <>
__device__ __forceinline__ float red_finish<float>(int op, float acc, int64_t count) {
    return op == CUDA_RED_MEAN ? (float)((double)acc / (double)count) : acc;
}
template <>
__device__ __forceinline__ double red_finish<double>(int op, double acc, int64_t count) {
    return op == CUDA_RED_MEAN ? acc / (double)count : acc;
}

/* One thread per output element, walking its reduced elements in order (the CPU's order along
 * the axes, though not its 8-lane split). */
template <typename T>
__global__ void reduce_kernel(cuda_rsum_t r, int op, const T *x, T *y) {
    FOR_EACH(i, r.out_count) {
        const T *p = x + keep_offset(r, i);
        T acc = op == CUDA_RED_MAX ? p[0] : (T)0;
        for (int64_t k = op == CUDA_RED_MAX ? 1 : 0; k < r.red_count; k++) {
            const T v = p[red_offset(r, k)];
            acc = op == CUDA_RED_MAX ? red_max(acc, v) : red_add(acc, v);
        }
        y[i] = red_finish(op, acc, r.red_count);
    }
}

/* One block of 256 threads per output element, for few outputs of long reductions: strided
 * partial results, then a tree in shared memory. */
template <typename T>
__global__ void reduce_block_kernel(cuda_rsum_t r, int op, const T *x, T *y) {
    __shared__ T sh[256];
    for (int64_t i = blockIdx.x; i < r.out_count; i += gridDim.x) {
        const T *p = x + keep_offset(r, i);
        T acc = op == CUDA_RED_MAX ? lowest<T>() : (T)0;
        for (int64_t k = threadIdx.x; k < r.red_count; k += blockDim.x) {
            const T v = p[red_offset(r, k)];
            acc = op == CUDA_RED_MAX ? red_max(acc, v) : red_add(acc, v);
        }
        sh[threadIdx.x] = acc;
        __syncthreads();
        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s)
                sh[threadIdx.x] = op == CUDA_RED_MAX
                                      ? red_max(sh[threadIdx.x], sh[threadIdx.x + s])
                                      : red_add(sh[threadIdx.x], sh[threadIdx.x + s]);
            __syncthreads();
        }
        if (threadIdx.x == 0)
            y[i] = red_finish(op, sh[0], r.red_count);
        __syncthreads();
    }
}

/* ---------------------------------------------------------------------------------------------
 * Sums of matrix products over broadcast batches (MatMulGrad in f16 and bf16): every output
 * element sums all its products in f32 and is rounded once.
 * ------------------------------------------------------------------------------------------- */

/* Where output element @p t reads X and Z (its kept batch, its row i of op(X) and column j of
 * op(Z)) and where it is written in Y. */
__device__ __forceinline__ void gsum_start(const cuda_gsum_t &g, int64_t t, int64_t *ox,
                                           int64_t *oz, int64_t *oy) {
    const int64_t j = t % g.n, i = (t / g.n) % g.m;
    int64_t b = t / (g.n * g.m);
    *ox = i * g.x_i;
    *oz = j * g.z_j;
    *oy = i * g.n + j;
    for (int d = (int)g.n_keep - 1; d >= 0; d--) {
        const int64_t idx = b % g.keep_dims[d];
        b /= g.keep_dims[d];
        *ox += idx * g.keep_stride[0][d];
        *oz += idx * g.keep_stride[1][d];
        *oy += idx * g.keep_stride[2][d];
    }
}

/* Offset of summed batch @p s in operand @p q (0: X, 1: Z). */
__device__ __forceinline__ int64_t gsum_batch(const cuda_gsum_t &g, int q, int64_t s) {
    int64_t off = 0;
    for (int d = (int)g.n_sum - 1; d >= 0; d--) {
        off += (s % g.sum_dims[d]) * g.sum_stride[q][d];
        s /= g.sum_dims[d];
    }
    return off;
}

/* One thread per output element, summing batch by batch. */
template <typename T>
__global__ void gemm_sum_kernel(cuda_gsum_t g, const T *x, const T *z, T *y) {
    typedef typename Acc<T>::type C;
    FOR_EACH(t, g.out_count) {
        int64_t ox, oz, oy;
        gsum_start(g, t, &ox, &oz, &oy);
        C acc = (C)0;
        for (int64_t s = 0; s < g.sum_count; s++) {
            const int64_t bx = ox + gsum_batch(g, 0, s), bz = oz + gsum_batch(g, 1, s);
            for (int64_t p = 0; p < g.k; p++)
                acc += ld(x, bx + p * g.x_p) * ld(z, bz + p * g.z_p);
        }
        st(y, oy, acc);
    }
}

/* One block of 256 threads per output element, for few outputs of long sums (a small weight's
 * gradient over many batches): strided partial sums, then a tree in shared memory. */
template <typename T>
__global__ void gemm_sum_block_kernel(cuda_gsum_t g, const T *x, const T *z, T *y) {
    typedef typename Acc<T>::type C;
    __shared__ C sh[256];
    const int64_t terms = g.sum_count * g.k;
    for (int64_t t = blockIdx.x; t < g.out_count; t += gridDim.x) {
        int64_t ox, oz, oy;
        gsum_start(g, t, &ox, &oz, &oy);
        C acc = (C)0;
        for (int64_t q = threadIdx.x; q < terms; q += blockDim.x) {
            const int64_t s = q / g.k, p = q % g.k;
            acc += ld(x, ox + gsum_batch(g, 0, s) + p * g.x_p) *
                   ld(z, oz + gsum_batch(g, 1, s) + p * g.z_p);
        }
        sh[threadIdx.x] = acc;
        __syncthreads();
        for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {
            if (threadIdx.x < h)
                sh[threadIdx.x] += sh[threadIdx.x + h];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            st(y, oy, sh[0]);
        __syncthreads();
    }
}

/* ---------------------------------------------------------------------------------------------
 * Softmax family and ArgMax along the middle dim of [outer, red, inner].
 * ------------------------------------------------------------------------------------------- */

template <typename C>
__global__ void softmax_kernel(int64_t outer, int64_t red, int64_t inner, int mode, const C *a,
                               const C *b, C *y) {
    FOR_EACH(i, outer * inner) {
        const int64_t base = i / inner * red * inner + i % inner;
        if (mode == CUDA_SM_SOFTMAX || mode == CUDA_SM_LOG_SOFTMAX) {
            C m = lowest<C>(), s = (C)0;
            for (int64_t r = 0; r < red; r++) {
                const C v = a[base + r * inner];
                m = (v > m || v != v) ? v : m;
            }
            for (int64_t r = 0; r < red; r++)
                s += m_exp(a[base + r * inner] - m);
            const C ls = m_log(s);
            for (int64_t r = 0; r < red; r++) {
                const C v = a[base + r * inner] - m;
                y[base + r * inner] = mode == CUDA_SM_SOFTMAX ? m_exp(v) / s : v - ls;
            }
        } else {
            C s = (C)0;
            for (int64_t r = 0; r < red; r++)
                s += mode == CUDA_SM_SOFTMAX_GRAD ? a[base + r * inner] * b[base + r * inner]
                                                  : a[base + r * inner];
            for (int64_t r = 0; r < red; r++) {
                const int64_t j = base + r * inner;
                y[j] = mode == CUDA_SM_SOFTMAX_GRAD ? b[j] * (a[j] - s) : a[j] - m_exp(b[j]) * s;
            }
        }
    }
}

/* The CPU's rule: NaN counts as the largest; the first NaN wins (the last with select_last);
 * among equals the first wins, or the last with select_last. */
template <typename T>
__global__ void argmax_kernel(int64_t outer, int64_t red, int64_t inner, int last, const T *x,
                              int64_t *y) {
    FOR_EACH(i, outer * inner) {
        const T *p = x + i / inner * red * inner + i % inner;
        T best = p[0];
        int64_t at = 0;
        for (int64_t r = 1; r < red; r++) {
            const T v = p[r * inner];
            bool take;
            if (is_nan(v))
                take = !is_nan(best) || last;
            else
                take = v > best || (last && v == best);
            if (take) {
                best = v;
                at = r;
            }
        }
        y[i] = at;
    }
}

} /* namespace */

/* kernel<<<blocks for n elements, 256 threads, stream s>>>; the kernel comes last because a
 * template's commas would split a macro argument. */
#define LAUNCH(n, s, ...) __VA_ARGS__<<<blocks_for(n), 256, 0, (cudaStream_t)(s)>>>

extern "C" int cuda__reduce(uint32_t dtype, const cuda_rsum_t *r, int op, const void *x, void *y,
                            void *stream) {
    /* Few outputs of long reductions get a block each; the rest a thread each. */
    const int by_block = r->out_count < 2048 && r->red_count >= 1024;
    const unsigned blocks =
        (unsigned)(r->out_count < 65535 ? (r->out_count > 0 ? r->out_count : 1) : 65535);
    switch (dtype) {
#define CASE(DT, T)                                                                       \
    case DT:                                                                              \
        if (by_block)                                                                     \
            reduce_block_kernel<T>                                                        \
                <<<blocks, 256, 0, (cudaStream_t)stream>>>(*r, op, (const T *)x, (T *)y); \
        else                                                                              \
            LAUNCH(r->out_count, stream, reduce_kernel<T>)(*r, op, (const T *)x, (T *)y); \
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

extern "C" int cuda__gemm_sum(uint32_t dtype, const cuda_gsum_t *g, const void *x, const void *z,
                              void *y, void *stream) {
    /* As the reductions: few outputs of long sums get a block each, the rest a thread each. */
    const int by_block = g->out_count < 2048 && g->sum_count * g->k >= 1024;
    const unsigned blocks =
        (unsigned)(g->out_count < 65535 ? (g->out_count > 0 ? g->out_count : 1) : 65535);
    switch (dtype) {
#define CASE(DT, T)                                                             \
    case DT:                                                                    \
        if (by_block)                                                           \
            gemm_sum_block_kernel<T><<<blocks, 256, 0, (cudaStream_t)stream>>>( \
                *g, (const T *)x, (const T *)z, (T *)y);                        \
        else                                                                    \
            LAUNCH(g->out_count, stream, gemm_sum_kernel<T>)                    \
            (*g, (const T *)x, (const T *)z, (T *)y);                           \
        break;
        CASE(CUDA_DT_F16, __half)
        CASE(CUDA_DT_BF16, __nv_bfloat16)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__softmax(uint32_t dtype, int64_t outer, int64_t red, int64_t inner, int mode,
                             const void *a, const void *b, void *y, void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                                    \
    case DT:                                                           \
        LAUNCH(outer *inner, stream, softmax_kernel<T>)                \
        (outer, red, inner, mode, (const T *)a, (const T *)b, (T *)y); \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__argmax(uint32_t dtype, int64_t outer, int64_t red, int64_t inner, int last,
                            const void *x, int64_t *y, void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                                                               \
    case DT:                                                                                      \
        LAUNCH(outer *inner, stream, argmax_kernel<T>)(outer, red, inner, last, (const T *)x, y); \
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
