/*
 * What the CUDA driver's kernel files (cuda_kernels_*.cu, one per op family, as the C side's
 * cuda_*.c) share: storage and compute types, math by compute type, walks over broadcast and
 * strided operands, index math of windows (pools, convolutions), a block sum, the grid size.
 * Device helpers only: no kernel and no launch here (the emulator turns each .cu file's launches
 * into host calls and only includes this file).
 *
 * Every launcher returns a cudaError_t as int (0 = success) and takes its stream as void *. It
 * only enqueues (no allocation, no synchronization, no copy to the host), so that a launch may
 * be captured into a CUDA Graph. f32, f16 and bf16 are computed in f32, f64 in f64, integers in
 * their own type with wrapping arithmetic (done in the unsigned type), as the CPU driver does.
 */
#ifndef SES_CUDA_KERNELS_CUH
#define SES_CUDA_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_internal.h"

namespace {

/* ---------------------------------------------------------------------------------------------
 * Storage and compute types
 * ------------------------------------------------------------------------------------------- */

/* The type element arithmetic is done in. */
template <typename T>
struct Acc {
    typedef T type;
};
template <>
struct Acc<__half> {
    typedef float type;
};
template <>
struct Acc<__nv_bfloat16> {
    typedef float type;
};

template <typename T>
__device__ __forceinline__ typename Acc<T>::type ld(const T *p, int64_t i) {
    return p[i];
}
template <>
__device__ __forceinline__ float ld<__half>(const __half *p, int64_t i) {
    return __half2float(p[i]);
}
template <>
__device__ __forceinline__ float ld<__nv_bfloat16>(const __nv_bfloat16 *p, int64_t i) {
    return __bfloat162float(p[i]);
}

template <typename T>
__device__ __forceinline__ void st(T *p, int64_t i, typename Acc<T>::type v) {
    p[i] = v;
}
template <>
__device__ __forceinline__ void st<__half>(__half *p, int64_t i, float v) {
    p[i] = __float2half_rn(v);
}
template <>
__device__ __forceinline__ void st<__nv_bfloat16>(__nv_bfloat16 *p, int64_t i, float v) {
    p[i] = __float2bfloat16_rn(v);
}

/* Math by compute type, so that f64 never goes through f32: NAME(float) calls F, NAME(double)
 * calls D. */
#define CUDA_MATH1(NAME, F, D)                                      \
    __device__ __forceinline__ float NAME(float x) { return F(x); } \
    __device__ __forceinline__ double NAME(double x) { return D(x); }
CUDA_MATH1(m_exp, expf, exp)
CUDA_MATH1(m_log, logf, log)
CUDA_MATH1(m_log1p, log1pf, log1p)
CUDA_MATH1(m_sqrt, sqrtf, sqrt)
CUDA_MATH1(m_tanh, tanhf, tanh)
CUDA_MATH1(m_erf, erff, erf)
CUDA_MATH1(m_erfc, erfcf, erfc)
CUDA_MATH1(m_abs, fabsf, fabs)
#undef CUDA_MATH1
__device__ __forceinline__ float m_pow(float x, float y) {
    return powf(x, y);
}
__device__ __forceinline__ double m_pow(double x, double y) {
    return pow(x, y);
}

/* The smallest value of a signed integer type, and wrapping arithmetic in its unsigned one. */
template <typename T>
struct Int;
template <>
struct Int<int32_t> {
    typedef uint32_t U;
    static __device__ __forceinline__ int32_t min() {
        return (int32_t)0x80000000u;
    }
};
template <>
struct Int<int64_t> {
    typedef uint64_t U;
    static __device__ __forceinline__ int64_t min() {
        return (int64_t)0x8000000000000000ull;
    }
};

/* ---------------------------------------------------------------------------------------------
 * Walks
 * ------------------------------------------------------------------------------------------- */

/* Offset of walk element @p i in operand @p k (its strides per output dim). */
__device__ __forceinline__ int64_t walk_offset(const cuda_bcast_t &g, int k, int64_t i) {
    int64_t off = 0;
    for (int d = (int)g.rank - 1; d >= 0; d--) {
        const int64_t n = g.dims[d];
        off += (i % n) * g.stride[k][d];
        i /= n;
    }
    return off;
}

/* CASE(DT, T) for the six dtypes of the arithmetic templates (CASE defined where it is used). */
#define CUDA_CASES_ARITH              \
    CASE(CUDA_DT_F32, float)          \
    CASE(CUDA_DT_F64, double)         \
    CASE(CUDA_DT_F16, __half)         \
    CASE(CUDA_DT_BF16, __nv_bfloat16) \
    CASE(CUDA_DT_I32, int32_t)        \
    CASE(CUDA_DT_I64, int64_t)

#define FOR_EACH(i, n)                                                        \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t)gridDim.x * blockDim.x)

template <typename T>
__device__ __forceinline__ bool is_nan(T v) {
    return v != v;
}
template <>
__device__ __forceinline__ bool is_nan<int32_t>(int32_t) {
    return false;
}
template <>
__device__ __forceinline__ bool is_nan<int64_t>(int64_t) {
    return false;
}

template <typename T>
__device__ __forceinline__ T lowest();
template <>
__device__ __forceinline__ float lowest<float>() {
    return -INFINITY;
}
template <>
__device__ __forceinline__ double lowest<double>() {
    return -(double)INFINITY;
}
template <>
__device__ __forceinline__ int32_t lowest<int32_t>() {
    return (int32_t)0x80000000u;
}
template <>
__device__ __forceinline__ int64_t lowest<int64_t>() {
    return (int64_t)0x8000000000000000ull;
}

__device__ __forceinline__ int64_t index_at(const void *idx, int idx64, int64_t j) {
    return idx64 ? ((const int64_t *)idx)[j] : (int64_t)((const int32_t *)idx)[j];
}

/* Row-major coordinates of @p idx over @p n dims. */
__device__ __forceinline__ void unravel(int64_t idx, const int64_t *dims, uint32_t n,
                                        int64_t *coords) {
    for (uint32_t i = n; i-- > 0;) {
        coords[i] = idx % dims[i];
        idx /= dims[i];
    }
}

/* The offset, in an input plane, of the element that tap @p kk of output position @p o reads,
 * or -1 when the tap falls in the padding. */
__device__ __forceinline__ int64_t tap_input(const cuda_win_t &w, const int64_t *o,
                                             const int64_t *kk) {
    int64_t off = 0;
    for (uint32_t i = 0; i < w.n; i++) {
        const int64_t c = o[i] * w.s[i] - w.pb[i] + kk[i] * w.d[i];
        if (c < 0 || c >= w.in[i])
            return -1;
        off = off * w.in[i] + c;
    }
    return off;
}

/* The offset, in an output plane, of the position whose tap @p kk reads input element @p ic,
 * or -1 when no output's window reads it through that tap. */
__device__ __forceinline__ int64_t tap_output(const cuda_win_t &w, const int64_t *ic,
                                              const int64_t *kk) {
    int64_t off = 0;
    for (uint32_t i = 0; i < w.n; i++) {
        const int64_t u = ic[i] + w.pb[i] - kk[i] * w.d[i];
        if (u < 0 || u % w.s[i] != 0 || u / w.s[i] >= w.out[i])
            return -1;
        off = off * w.out[i] + u / w.s[i];
    }
    return off;
}

/* Sums v over the block (256 threads) into element 0 of sh; every thread gets the total. */
__device__ __forceinline__ double block_sum(double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    const double total = sh[0];
    __syncthreads();
    return total;
}

/* Grid size for @p n elements: enough blocks to fill the device, grid-stride beyond that. */
inline unsigned blocks_for(int64_t n) {
    const int64_t b = (n + 255) / 256;
    return (unsigned)(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

} /* namespace */

/* kernel<<<blocks for n elements, 256 threads, stream s>>> is written out in each .cu file
 * (LAUNCH there), so that emu_launches.py sees every launch in the file it converts. */

#endif /* SES_CUDA_KERNELS_CUH */
