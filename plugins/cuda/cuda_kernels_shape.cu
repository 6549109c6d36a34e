/*
 * The CUDA driver's shape-family kernels (cuda_shape.c): Clip, Range, and fills of known values
 * (ConstantOfShape, Shape).
 */
#include "cuda_kernels.cuh"

namespace {

/* ---------------------------------------------------------------------------------------------
 * Clip, Range, and fills of known values (ConstantOfShape, Shape).
 * ------------------------------------------------------------------------------------------- */

/* Bounds read on the device; NULL when not given. NaN stays NaN, as on the CPU. */
template <typename T>
__global__ void clip_kernel(int64_t n, const T *x, const T *lo, const T *hi, T *y) {
    FOR_EACH(i, n) {
        T v = x[i];
        if (lo && v < *lo)
            v = *lo;
        if (hi && v > *hi)
            v = *hi;
        y[i] = v;
    }
}

/* start + i * delta: f32 in f32 without contraction (the CPU's rounding), f64 in f64, integers
 * in i64. */
__device__ __forceinline__ float range_at(float s, float d, int64_t i) {
    return __fadd_rn(s, __fmul_rn((float)i, d));
}
__device__ __forceinline__ double range_at(double s, double d, int64_t i) {
    return __dadd_rn(s, __dmul_rn((double)i, d));
}
__device__ __forceinline__ int32_t range_at(int32_t s, int32_t d, int64_t i) {
    return (int32_t)(uint32_t)(uint64_t)((int64_t)s + i * (int64_t)d);
}
__device__ __forceinline__ int64_t range_at(int64_t s, int64_t d, int64_t i) {
    return (int64_t)((uint64_t)s + (uint64_t)i * (uint64_t)d);
}

template <typename T>
__global__ void range_kernel(int64_t n, const T *start, const T *delta, T *y) {
    const T s = *start, d = *delta;
    FOR_EACH(i, n) {
        y[i] = range_at(s, d, i);
    }
}

template <typename T>
__global__ void fill_bits_kernel(int64_t n, uint64_t bits, T *y) {
    FOR_EACH(i, n) {
        y[i] = (T)bits;
    }
}

struct dims8 {
    int64_t v[CUDA_MAX_RANK];
};

__global__ void store_i64_kernel(int64_t n, dims8 values, int64_t *y) {
    FOR_EACH(i, n) {
        y[i] = values.v[i];
    }
}

} /* namespace */

/* kernel<<<blocks for n elements, 256 threads, stream s>>>; the kernel comes last because a
 * template's commas would split a macro argument. */
#define LAUNCH(n, s, ...) __VA_ARGS__<<<blocks_for(n), 256, 0, (cudaStream_t)(s)>>>

extern "C" int cuda__clip(uint32_t dtype, int64_t n, const void *x, const void *lo, const void *hi,
                          void *y, void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                                                               \
    case DT:                                                                                      \
        LAUNCH(n, stream, clip_kernel<T>)(n, (const T *)x, (const T *)lo, (const T *)hi, (T *)y); \
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

extern "C" int cuda__range(uint32_t dtype, int64_t n, const void *start, const void *delta, void *y,
                           void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                                                        \
    case DT:                                                                               \
        LAUNCH(n, stream, range_kernel<T>)(n, (const T *)start, (const T *)delta, (T *)y); \
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

extern "C" int cuda__fill_bits(uint32_t esize, int64_t n, uint64_t bits, void *y, void *stream) {
    switch (esize) {
#define CASE(N, T)                                               \
    case N:                                                      \
        LAUNCH(n, stream, fill_bits_kernel<T>)(n, bits, (T *)y); \
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

extern "C" int cuda__store_i64(int64_t n, const int64_t *values, int64_t *y, void *stream) {
    dims8 v;
    if (n < 0 || n > CUDA_MAX_RANK)
        return (int)cudaErrorInvalidValue;
    for (int64_t i = 0; i < CUDA_MAX_RANK; i++)
        v.v[i] = i < n ? values[i] : 0;
    LAUNCH(n, stream, store_i64_kernel)(n, v, y);
    return (int)cudaGetLastError();
}
