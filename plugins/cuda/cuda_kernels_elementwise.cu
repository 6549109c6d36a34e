/*
 * The CUDA driver's elementwise kernels (cuda_elementwise.c): the broadcasting binary template
 * (arithmetic, the activation gradients), the unary ops, comparisons, Where, Cast, fills of one
 * value (ScalarLike) and the zero-divisor check of integer Div.
 */
#include "cuda_kernels.cuh"

namespace {

/* Gelu as the CPU computes it: x Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2, or x sigmoid(2u)
 * with u = sqrt(2 / pi) (x + 0.044715 x^3) (the tanh form); neither cancels for negative x. */
#define CUDA_SQRT1_2 0.70710678118654752440
#define CUDA_SQRT2_PI 0.79788456080286535588    /* sqrt(2 / pi) */
#define CUDA_INV_SQRT2PI 0.39894228040143267794 /* 1 / sqrt(2 pi) */
#define CUDA_GELU_C 0.044715

/* The CPU's sigmoid: from e^-|x|, so that neither side overflows. */
template <typename C>
__device__ __forceinline__ C sigmoid_of(C x) {
    const C e = m_exp(x < (C)0 ? x : -x);
    const C s = (C)1 / ((C)1 + e);
    return x < (C)0 ? e * s : s;
}
template <typename C>
__device__ __forceinline__ C gelu_u(C x) {
    return (C)2 * (C)CUDA_SQRT2_PI * (x + (C)CUDA_GELU_C * x * x * x);
}
template <typename C>
__device__ __forceinline__ C gelu_grad(C x) {
    return (C)0.5 * m_erfc(-x * (C)CUDA_SQRT1_2) +
           x * m_exp((C)-0.5 * x * x) * (C)CUDA_INV_SQRT2PI;
}
template <typename C>
__device__ __forceinline__ C gelu_tanh_grad(C x) {
    const C s = sigmoid_of(gelu_u(x));
    return s + x * s * ((C)1 - s) * (C)2 * (C)CUDA_SQRT2_PI *
                   ((C)1 + (C)3 * (C)CUDA_GELU_C * x * x);
}

template <typename C>
__device__ __forceinline__ C fbinary(int op, C a, C b, C alpha) {
    switch (op) {
        case CUDA_BIN_ADD:
            return a + b;
        case CUDA_BIN_SUB:
            return a - b;
        case CUDA_BIN_MUL:
            return a * b;
        case CUDA_BIN_DIV:
            return a / b;
        case CUDA_BIN_POW:
            return m_pow(a, b);
        /* The gradients: a is dy, b the forward input (Relu, LeakyRelu, Gelu) or output (the
         * others). */
        case CUDA_BIN_RELU_GRAD:
            return b > (C)0 ? a : (C)0;
        case CUDA_BIN_LEAKY_RELU_GRAD:
            return b > (C)0 ? a : alpha * a;
        case CUDA_BIN_SIGMOID_GRAD:
            return a * b * ((C)1 - b);
        case CUDA_BIN_TANH_GRAD:
            return a * ((C)1 - b * b);
        case CUDA_BIN_FIRST:
            return alpha * a;
        case CUDA_BIN_GELU_GRAD: /* b is the forward input */
            return a * gelu_grad(b);
        case CUDA_BIN_GELU_TANH_GRAD:
            return a * gelu_tanh_grad(b);
        default:
            return (C)0;
    }
}

template <typename T>
__device__ __forceinline__ T ibinary(int op, T a, T b) {
    typedef typename Int<T>::U U;
    switch (op) {
        case CUDA_BIN_ADD:
            return (T)((U)a + (U)b);
        case CUDA_BIN_SUB:
            return (T)((U)a - (U)b);
        case CUDA_BIN_MUL:
            return (T)((U)a * (U)b);
        case CUDA_BIN_DIV: /* x / 0 is reported by the caller; MIN / -1 wraps */
            return b == 0 ? (T)0 : (a == Int<T>::min() && b == (T)-1) ? a : (T)(a / b);
        default:
            return (T)0;
    }
}

__device__ __forceinline__ float bin(int op, float a, float b, float alpha) {
    return fbinary<float>(op, a, b, alpha);
}
__device__ __forceinline__ double bin(int op, double a, double b, double alpha) {
    return fbinary<double>(op, a, b, alpha);
}
__device__ __forceinline__ int32_t bin(int op, int32_t a, int32_t b, int32_t) {
    return ibinary<int32_t>(op, a, b);
}
__device__ __forceinline__ int64_t bin(int op, int64_t a, int64_t b, int64_t) {
    return ibinary<int64_t>(op, a, b);
}

template <typename C>
__device__ __forceinline__ C funary(int op, C x, C alpha) {
    switch (op) {
        case CUDA_UN_NEG:
            return -x;
        case CUDA_UN_ABS:
            return m_abs(x);
        case CUDA_UN_RELU:
            return x < (C)0 ? (C)0 : x; /* NaN stays NaN, as on the CPU */
        case CUDA_UN_EXP:
            return m_exp(x);
        case CUDA_UN_LOG:
            return m_log(x);
        case CUDA_UN_SQRT:
            return m_sqrt(x);
        case CUDA_UN_RECIPROCAL:
            return (C)1 / x;
        case CUDA_UN_SIGMOID:
            return (C)1 / ((C)1 + m_exp(-x));
        case CUDA_UN_TANH:
            return m_tanh(x);
        case CUDA_UN_LEAKY_RELU:
            return x < (C)0 ? alpha * x : x;
        case CUDA_UN_SOFTPLUS: /* log(1 + e^x) without overflow, the CPU's formula */
            return x > (C)0 ? x + m_log1p(m_exp(-x)) : m_log1p(m_exp(x));
        case CUDA_UN_ERF:
            return m_erf(x);
        case CUDA_UN_GELU:
            return (C)0.5 * x * m_erfc(-x * (C)CUDA_SQRT1_2);
        case CUDA_UN_GELU_TANH:
            return x * sigmoid_of(gelu_u(x));
        default:
            return (C)0;
    }
}

template <typename T>
__device__ __forceinline__ T iunary(int op, T x) {
    typedef typename Int<T>::U U;
    switch (op) {
        case CUDA_UN_NEG:
            return (T)((U)0 - (U)x);
        case CUDA_UN_ABS:
            return x < 0 ? (T)((U)0 - (U)x) : x;
        case CUDA_UN_RELU:
            return x < 0 ? (T)0 : x;
        default:
            return (T)0;
    }
}

__device__ __forceinline__ float un(int op, float x, float alpha) {
    return funary<float>(op, x, alpha);
}
__device__ __forceinline__ double un(int op, double x, double alpha) {
    return funary<double>(op, x, alpha);
}
__device__ __forceinline__ int32_t un(int op, int32_t x, int32_t) {
    return iunary<int32_t>(op, x);
}
__device__ __forceinline__ int64_t un(int op, int64_t x, int64_t) {
    return iunary<int64_t>(op, x);
}

template <typename T>
__global__ void binary_kernel(cuda_bcast_t g, int op, double alpha, const T *a, const T *b, T *o) {
    typedef typename Acc<T>::type C;
    const C al = (C)alpha;
    FOR_EACH(i, g.count) {
        const int64_t ia = g.same ? i : walk_offset(g, 0, i);
        const int64_t ib = g.same ? i : walk_offset(g, 1, i);
        st(o, i, bin(op, ld(a, ia), ld(b, ib), al));
    }
}

template <typename T>
__global__ void unary_kernel(int64_t n, int op, double alpha, const T *x, T *y) {
    typedef typename Acc<T>::type C;
    const C al = (C)alpha;
    FOR_EACH(i, n) {
        st(y, i, un(op, ld(x, i), al));
    }
}

/* NaN compares false, so it equals nothing. */
template <typename T>
__global__ void compare_kernel(cuda_bcast_t g, int op, const T *a, const T *b, uint8_t *o) {
    FOR_EACH(i, g.count) {
        const T u = a[g.same ? i : walk_offset(g, 0, i)];
        const T v = b[g.same ? i : walk_offset(g, 1, i)];
        const bool r = op == CUDA_CMP_EQUAL ? u == v : op == CUDA_CMP_GREATER ? u > v : u < v;
        o[i] = r ? 1 : 0;
    }
}

/* The values are only moved, never computed on: one kernel per element size. */
template <typename T>
__global__ void where_kernel(cuda_bcast_t g, const uint8_t *c, const T *a, const T *b, T *o) {
    FOR_EACH(i, g.count) {
        const bool take_a = c[g.same ? i : walk_offset(g, 0, i)] != 0;
        o[i] = take_a ? a[g.same ? i : walk_offset(g, 1, i)] : b[g.same ? i : walk_offset(g, 2, i)];
    }
}

/* ---------------------------------------------------------------------------------------------
 * Cast. Float sources go through f64: to an integer they truncate toward zero and saturate
 * (NaN gives 0), exactly as the CPU driver's casts; integer sources wrap when they narrow; to
 * bool is x != 0; from bool is 0 or 1.
 * ------------------------------------------------------------------------------------------- */

__device__ __forceinline__ double to_d(float x) {
    return (double)x;
}
__device__ __forceinline__ double to_d(double x) {
    return x;
}
__device__ __forceinline__ double to_d(__half x) {
    return (double)__half2float(x);
}
__device__ __forceinline__ double to_d(__nv_bfloat16 x) {
    return (double)__bfloat162float(x);
}

/* From a float value (already f64). */
template <typename TO>
__device__ __forceinline__ TO from_f(double v);
template <>
__device__ __forceinline__ float from_f<float>(double v) {
    return (float)v;
}
template <>
__device__ __forceinline__ double from_f<double>(double v) {
    return v;
}
template <>
__device__ __forceinline__ __half from_f<__half>(double v) {
    return __double2half(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(double v) {
    return __double2bfloat16(v);
}
template <>
__device__ __forceinline__ int32_t from_f<int32_t>(double v) {
    return v != v              ? 0
           : v < -2147483648.0 ? (int32_t)0x80000000u
           : v >= 2147483648.0 ? (int32_t)0x7fffffff
                               : (int32_t)v;
}
template <>
__device__ __forceinline__ int64_t from_f<int64_t>(double v) {
    return v != v                       ? 0
           : v < -9223372036854775808.0 ? (int64_t)0x8000000000000000ull
           : v >= 9223372036854775808.0 ? (int64_t)0x7fffffffffffffffll
                                        : (int64_t)v;
}
template <>
__device__ __forceinline__ uint8_t from_f<uint8_t>(double v) {
    return v != v ? 0 : v < 0.0 ? 0 : v >= 256.0 ? 255 : (uint8_t)v;
}

/* The narrower integer types, for ScalarLike only (Cast has none of them). */
template <typename TO>
__device__ __forceinline__ TO saturate(double v, double lo, double hi, TO min, TO max) {
    return v != v ? (TO)0 : v < lo ? min : v >= hi ? max : (TO)v;
}
template <>
__device__ __forceinline__ int8_t from_f<int8_t>(double v) {
    return saturate<int8_t>(v, -128.0, 128.0, (int8_t)-128, (int8_t)127);
}
template <>
__device__ __forceinline__ int16_t from_f<int16_t>(double v) {
    return saturate<int16_t>(v, -32768.0, 32768.0, (int16_t)-32768, (int16_t)32767);
}
template <>
__device__ __forceinline__ uint16_t from_f<uint16_t>(double v) {
    return saturate<uint16_t>(v, 0.0, 65536.0, (uint16_t)0, (uint16_t)0xffff);
}
template <>
__device__ __forceinline__ uint32_t from_f<uint32_t>(double v) {
    return saturate<uint32_t>(v, 0.0, 4294967296.0, 0u, 0xffffffffu);
}
template <>
__device__ __forceinline__ uint64_t from_f<uint64_t>(double v) {
    return saturate<uint64_t>(v, 0.0, 18446744073709551616.0, 0ull, ~0ull);
}

/* From an integer value (widened to i64): narrowing wraps. */
template <typename TO>
__device__ __forceinline__ TO from_i(int64_t v);
template <>
__device__ __forceinline__ float from_i<float>(int64_t v) {
    return (float)v;
}
template <>
__device__ __forceinline__ double from_i<double>(int64_t v) {
    return (double)v;
}
template <>
__device__ __forceinline__ int32_t from_i<int32_t>(int64_t v) {
    return (int32_t)(uint32_t)(uint64_t)v;
}
template <>
__device__ __forceinline__ int64_t from_i<int64_t>(int64_t v) {
    return v;
}
template <>
__device__ __forceinline__ uint8_t from_i<uint8_t>(int64_t v) {
    return (uint8_t)(uint64_t)v;
}

/* SRC: 0 a float type, 1 an integer type, 2 bool. TO_BOOL: the target is bool. */
template <typename TI, typename TO, int SRC, int TO_BOOL>
__global__ void cast_kernel(int64_t n, const TI *x, TO *y) {
    FOR_EACH(i, n) {
        if constexpr (TO_BOOL && SRC == 0)
            y[i] = (TO)(to_d(x[i]) != 0.0 ? 1 : 0);
        else if constexpr (TO_BOOL)
            y[i] = (TO)(x[i] != 0 ? 1 : 0);
        else if constexpr (SRC == 0)
            y[i] = from_f<TO>(to_d(x[i]));
        else if constexpr (SRC == 1)
            y[i] = from_i<TO>((int64_t)x[i]);
        else
            y[i] = from_i<TO>(x[i] != 0 ? 1 : 0);
    }
}

template <typename TO, int TO_BOOL>
__global__ void fill_kernel(int64_t n, double value, TO *y) {
    TO v;
    if constexpr (TO_BOOL)
        v = (TO)(value != 0.0 ? 1 : 0);
    else
        v = from_f<TO>(value);
    FOR_EACH(i, n) {
        y[i] = v;
    }
}

template <typename T>
__global__ void find_zero_kernel(int64_t n, const T *x, unsigned long long *bad) {
    FOR_EACH(j, n) {
        if (x[j] == 0)
            atomicMin(bad, (unsigned long long)j);
    }
}

} /* namespace */

/* kernel<<<blocks for n elements, 256 threads, stream s>>>; the kernel comes last because a
 * template's commas would split a macro argument. */
#define LAUNCH(n, s, ...) __VA_ARGS__<<<blocks_for(n), 256, 0, (cudaStream_t)(s)>>>

extern "C" int cuda__binary(uint32_t dtype, const cuda_bcast_t *g, int op, double alpha,
                            const void *a, const void *b, void *o, void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                          \
    case DT:                                                 \
        LAUNCH(g->count, stream, binary_kernel<T>)           \
        (*g, op, alpha, (const T *)a, (const T *)b, (T *)o); \
        break;
        CUDA_CASES_ARITH
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__unary(uint32_t dtype, int64_t n, int op, double alpha, const void *x, void *y,
                           void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                                             \
    case DT:                                                                    \
        LAUNCH(n, stream, unary_kernel<T>)(n, op, alpha, (const T *)x, (T *)y); \
        break;
        CUDA_CASES_ARITH
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__compare(uint32_t dtype, const cuda_bcast_t *g, int op, const void *a,
                             const void *b, uint8_t *o, void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                                                         \
    case DT:                                                                                \
        LAUNCH(g->count, stream, compare_kernel<T>)(*g, op, (const T *)a, (const T *)b, o); \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
        CASE(CUDA_DT_I32, int32_t)
        CASE(CUDA_DT_I64, int64_t)
        CASE(CUDA_DT_U8, uint8_t)
        CASE(CUDA_DT_BOOL, uint8_t)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__where(uint32_t esize, const cuda_bcast_t *g, const uint8_t *c, const void *a,
                           const void *b, void *o, void *stream) {
    switch (esize) {
#define CASE(N, T)                                                                            \
    case N:                                                                                   \
        LAUNCH(g->count, stream, where_kernel<T>)(*g, c, (const T *)a, (const T *)b, (T *)o); \
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

/* Cast pairs: the 36 of f32, f64, i32, i64, u8, bool, and f32 <-> f16, bf16. */
extern "C" int cuda__cast(uint32_t from, uint32_t to, int64_t n, const void *x, void *y,
                          void *stream) {
#define PAIR(F, TT) ((F)*16u + (TT))
#define CAST(F, TI, SRC, TT, TO, TO_BOOL)                                                \
    case PAIR(F, TT):                                                                    \
        LAUNCH(n, stream, cast_kernel<TI, TO, SRC, TO_BOOL>)(n, (const TI *)x, (TO *)y); \
        break;
#define CAST_TO(F, TI, SRC)                   \
    CAST(F, TI, SRC, CUDA_DT_F32, float, 0)   \
    CAST(F, TI, SRC, CUDA_DT_F64, double, 0)  \
    CAST(F, TI, SRC, CUDA_DT_I32, int32_t, 0) \
    CAST(F, TI, SRC, CUDA_DT_I64, int64_t, 0) \
    CAST(F, TI, SRC, CUDA_DT_U8, uint8_t, 0)  \
    CAST(F, TI, SRC, CUDA_DT_BOOL, uint8_t, 1)
    switch (PAIR(from, to)) {
        CAST_TO(CUDA_DT_F32, float, 0)
        CAST_TO(CUDA_DT_F64, double, 0)
        CAST_TO(CUDA_DT_I32, int32_t, 1)
        CAST_TO(CUDA_DT_I64, int64_t, 1)
        CAST_TO(CUDA_DT_U8, uint8_t, 1)
        CAST_TO(CUDA_DT_BOOL, uint8_t, 2)
        CAST(CUDA_DT_F32, float, 0, CUDA_DT_F16, __half, 0)
        CAST(CUDA_DT_F32, float, 0, CUDA_DT_BF16, __nv_bfloat16, 0)
        CAST(CUDA_DT_F16, __half, 0, CUDA_DT_F32, float, 0)
        CAST(CUDA_DT_BF16, __nv_bfloat16, 0, CUDA_DT_F32, float, 0)
        default:
            return (int)cudaErrorInvalidValue;
    }
#undef CAST_TO
#undef CAST
#undef PAIR
    return (int)cudaGetLastError();
}

extern "C" int cuda__fill(uint32_t dtype, int64_t n, double value, void *y, void *stream) {
    /* The CPU driver rounds to f32 first, then to f16 or bf16. */
    if (dtype == CUDA_DT_F16 || dtype == CUDA_DT_BF16)
        value = (double)(float)value;
    switch (dtype) {
#define CASE(DT, T, TO_BOOL)                                          \
    case DT:                                                          \
        LAUNCH(n, stream, fill_kernel<T, TO_BOOL>)(n, value, (T *)y); \
        break;
        CASE(CUDA_DT_F32, float, 0)
        CASE(CUDA_DT_F64, double, 0)
        CASE(CUDA_DT_F16, __half, 0)
        CASE(CUDA_DT_BF16, __nv_bfloat16, 0)
        CASE(CUDA_DT_I32, int32_t, 0)
        CASE(CUDA_DT_I64, int64_t, 0)
        CASE(CUDA_DT_U8, uint8_t, 0)
        CASE(CUDA_DT_BOOL, uint8_t, 1)
        CASE(CUDA_DT_I8, int8_t, 0)
        CASE(CUDA_DT_I16, int16_t, 0)
        CASE(CUDA_DT_U16, uint16_t, 0)
        CASE(CUDA_DT_U32, uint32_t, 0)
        CASE(CUDA_DT_U64, uint64_t, 0)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__find_zero(uint32_t dtype, int64_t n, const void *x, unsigned long long *bad,
                               void *stream) {
    if (dtype == CUDA_DT_I32)
        LAUNCH(n, stream, find_zero_kernel<int32_t>)(n, (const int32_t *)x, bad);
    else if (dtype == CUDA_DT_I64)
        LAUNCH(n, stream, find_zero_kernel<int64_t>)(n, (const int64_t *)x, bad);
    else
        return (int)cudaErrorInvalidValue;
    return (int)cudaGetLastError();
}
