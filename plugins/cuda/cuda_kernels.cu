/*
 * The CUDA driver's own kernels: a broadcasting elementwise template (arithmetic, comparisons,
 * Where, the unary ops, the activation gradients), Cast, a strided copy (Transpose, Slice,
 * Concat, ExpandLike, SliceGrad), Gather and its gradient, reductions over any axes, sums of
 * matrix products over broadcast batches (MatMulGrad in f16 and bf16), the softmax family,
 * ArgMax, the loss and the optimizers. Everything else (checks, shapes, cuBLAS, the kernel
 * table) is C in the op-family files (cuda_ops.h); this file only launches, so that it compiles
 * fast.
 *
 * Every launcher returns a cudaError_t as int (0 = success) and takes its stream as void *. It
 * only enqueues (no allocation, no synchronization, no copy to the host), so that a launch may
 * be captured into a CUDA Graph. f32, f16 and bf16 are computed in f32, f64 in f64, integers in
 * their own type with wrapping arithmetic (done in the unsigned type), as the CPU driver does.
 */
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

/* Math by compute type, so that f64 never goes through f32. */
__device__ __forceinline__ float m_exp(float x) {
    return expf(x);
}
__device__ __forceinline__ double m_exp(double x) {
    return exp(x);
}
__device__ __forceinline__ float m_log(float x) {
    return logf(x);
}
__device__ __forceinline__ double m_log(double x) {
    return log(x);
}
__device__ __forceinline__ float m_log1p(float x) {
    return log1pf(x);
}
__device__ __forceinline__ double m_log1p(double x) {
    return log1p(x);
}
__device__ __forceinline__ float m_sqrt(float x) {
    return sqrtf(x);
}
__device__ __forceinline__ double m_sqrt(double x) {
    return sqrt(x);
}
__device__ __forceinline__ float m_tanh(float x) {
    return tanhf(x);
}
__device__ __forceinline__ double m_tanh(double x) {
    return tanh(x);
}
__device__ __forceinline__ float m_erf(float x) {
    return erff(x);
}
__device__ __forceinline__ double m_erf(double x) {
    return erf(x);
}
__device__ __forceinline__ float m_pow(float x, float y) {
    return powf(x, y);
}
__device__ __forceinline__ double m_pow(double x, double y) {
    return pow(x, y);
}
__device__ __forceinline__ float m_abs(float x) {
    return fabsf(x);
}
__device__ __forceinline__ double m_abs(double x) {
    return fabs(x);
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
        /* The gradients: a is dy, b the forward input (Relu, LeakyRelu) or output (the others). */
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

#define FOR_EACH(i, n)                                                        \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t)gridDim.x * blockDim.x)

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

template <typename T>
__global__ void strided_kernel(cuda_bcast_t g, const T *x, T *y) {
    FOR_EACH(i, g.count) {
        y[walk_offset(g, 1, i)] = x[walk_offset(g, 0, i)];
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

/* ---------------------------------------------------------------------------------------------
 * Reductions: ReduceSum, ReduceMean, ReduceMax over any axes, ReduceSumLike.
 * ------------------------------------------------------------------------------------------- */

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

/* ---------------------------------------------------------------------------------------------
 * Indices: checks, Gather, GatherGrad.
 * ------------------------------------------------------------------------------------------- */

__device__ __forceinline__ int64_t index_at(const void *idx, int idx64, int64_t j) {
    return idx64 ? ((const int64_t *)idx)[j] : (int64_t)((const int32_t *)idx)[j];
}

__global__ void check_indices_kernel(int64_t n, const void *idx, int idx64, int64_t dim,
                                     unsigned long long *bad) {
    FOR_EACH(j, n) {
        const int64_t k = index_at(idx, idx64, j);
        if (k < -dim || k >= dim)
            atomicMin(bad, (unsigned long long)j);
    }
}

template <typename T>
__global__ void find_zero_kernel(int64_t n, const T *x, unsigned long long *bad) {
    FOR_EACH(j, n) {
        if (x[j] == 0)
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

/* ---------------------------------------------------------------------------------------------
 * Pools, BatchNormalization, Pad, Conv: one thread per output element (or, for the gradients
 * that scatter, per source element with atomicAdd), walking its window in the CPU's order.
 * ------------------------------------------------------------------------------------------- */

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

/* The pooled window of output position @p p: the max's offset (or -1) and value, the sum, the
 * number of elements inside the input and inside the padded input. A is the arithmetic's type:
 * float for f32 (no double in the inner loop), double for f64. */
template <typename T, typename A>
__device__ void pool_window(const cuda_win_t &w, int64_t p, int max, const T *xp, int64_t *best,
                            A *best_v, A *acc, int64_t *valid, int64_t *padded) {
    int64_t o[CUDA_SPATIAL_MAX], kk[CUDA_SPATIAL_MAX], start[CUDA_SPATIAL_MAX];
    unravel(p, w.out, w.n, o);
    for (uint32_t i = 0; i < w.n; i++)
        start[i] = o[i] * w.s[i] - w.pb[i];
    *best = -1;
    *best_v = -(A)INFINITY;
    *acc = (A)0;
    *valid = *padded = 0;
    for (int64_t kq = 0; kq < w.k_count; kq++) {
        unravel(kq, w.k, w.n, kk);
        int64_t off = 0;
        bool inside = true, in_pad = true;
        for (uint32_t i = 0; i < w.n; i++) {
            const int64_t c = start[i] + kk[i] * w.d[i];
            inside = inside && c >= 0 && c < w.in[i];
            in_pad = in_pad && c >= -w.pb[i] && c < w.in[i] + w.pe[i];
            off = off * w.in[i] + c;
        }
        *padded += in_pad;
        if (!inside)
            continue;
        ++*valid;
        const A v = (A)xp[off];
        if (max) {
            if (*best < 0 || v > *best_v || (v != v && *best_v == *best_v)) {
                *best_v = v;
                *best = off;
            }
        } else {
            *acc += v;
        }
    }
}

template <typename T>
__global__ void pool_kernel(cuda_win_t w, int64_t planes, int op, int include_pad, const T *x,
                            T *y) {
    FOR_EACH(t, planes * w.out_count) {
        int64_t best, valid, padded;
        T best_v, acc;
        const int64_t plane = t / w.out_count;
        pool_window<T, T>(w, t % w.out_count, op == CUDA_POOL_MAX, x + plane * w.in_count, &best,
                          &best_v, &acc, &valid, &padded);
        const int64_t divisor = include_pad ? padded : valid;
        if (op == CUDA_POOL_MAX)
            y[t] = best >= 0 ? best_v : -(T)INFINITY;
        else
            y[t] = divisor ? acc / (T)divisor : (T)NAN;
    }
}

template <typename T>
__global__ void pool_grad_kernel(cuda_win_t w, int64_t planes, int op, int include_pad, const T *dy,
                                 const T *x, T *dx) {
    FOR_EACH(t, planes * w.out_count) {
        int64_t best, valid, padded;
        T best_v, acc;
        const int64_t plane = t / w.out_count, p = t % w.out_count;
        T *dp = dx + plane * w.in_count;
        pool_window<T, T>(w, p, op == CUDA_POOL_MAX,
                          op == CUDA_POOL_MAX ? x + plane * w.in_count : dy, &best, &best_v, &acc,
                          &valid, &padded);
        if (op == CUDA_POOL_MAX) {
            if (best >= 0)
                atomicAdd(dp + best, dy[t]);
            continue;
        }
        const int64_t divisor = include_pad ? padded : valid;
        if (!divisor)
            continue;
        const T g = dy[t] / (T)divisor;
        int64_t o[CUDA_SPATIAL_MAX], kk[CUDA_SPATIAL_MAX];
        unravel(p, w.out, w.n, o);
        for (int64_t kq = 0; kq < w.k_count; kq++) {
            unravel(kq, w.k, w.n, kk);
            const int64_t off = tap_input(w, o, kk);
            const bool inside = off >= 0;
            if (inside)
                atomicAdd(dp + off, g);
        }
    }
}

/* The CPU's arithmetic in f64, without contraction: scale = gamma / sqrt(var + eps), shift =
 * beta - mean * scale, y = x * scale + shift. */
template <typename T>
__global__ void batch_norm_kernel(int64_t count, int64_t channels, int64_t inner, const T *x,
                                  const T *scale, const T *bias, const T *mean, const T *var,
                                  double eps, T *y) {
    FOR_EACH(i, count) {
        const int64_t ch = (i / inner) % channels;
        const double sc = __ddiv_rn((double)scale[ch], __dsqrt_rn(__dadd_rn((double)var[ch], eps)));
        const double sh = __dadd_rn((double)bias[ch], -__dmul_rn((double)mean[ch], sc));
        y[i] = (T)__dadd_rn(__dmul_rn((double)x[i], sc), sh);
    }
}

struct pad_geo {
    int64_t xd[CUDA_MAX_RANK], yd[CUDA_MAX_RANK], begin[CUDA_MAX_RANK];
    uint32_t rank;
    int mode;
};

/* Where padded coordinate @p o reads from along one axis: an input index, or -1 (the constant). */
__device__ __forceinline__ int64_t pad_source(int64_t o, int64_t begin, int64_t dim, int mode) {
    int64_t i = o - begin;
    if (i >= 0 && i < dim)
        return i;
    if (mode == CUDA_PAD_CONSTANT || dim == 0)
        return -1;
    if (mode == CUDA_PAD_EDGE)
        return i < 0 ? 0 : dim - 1;
    if (dim == 1)
        return 0;
    if (i < 0)
        i = -i;
    if (i >= dim)
        i = 2 * (dim - 1) - i;
    return i < 0 ? 0 : i >= dim ? dim - 1 : i;
}

/* The flat input index padded element @p t reads, or -1. */
__device__ __forceinline__ int64_t pad_index(const pad_geo &g, int64_t t) {
    int64_t off = 0, mul = 1;
    for (uint32_t d = g.rank; d-- > 0;) {
        const int64_t o = t % g.yd[d];
        t /= g.yd[d];
        const int64_t s = pad_source(o, g.begin[d], g.xd[d], g.mode);
        if (s < 0)
            return -1;
        off += s * mul;
        mul *= g.xd[d];
    }
    return off;
}

template <typename T>
__global__ void pad_kernel(pad_geo g, int64_t count, const T *x, const T *fill, T *y) {
    const T c = fill ? *fill : (T)0;
    FOR_EACH(t, count) {
        const int64_t s = pad_index(g, t);
        y[t] = s < 0 ? c : x[s];
    }
}

template <typename T>
__global__ void pad_grad_kernel(pad_geo g, int64_t count, const T *dy, T *dx) {
    FOR_EACH(t, count) {
        const int64_t s = pad_index(g, t);
        if (s >= 0)
            atomicAdd(dx + s, dy[t]);
    }
}

template <typename T>
__global__ void conv_kernel(cuda_win_t w, const T *x, const T *wt, const T *b, T *y) {
    const int64_t cg = w.c / w.group, mg = w.m / w.group;
    FOR_EACH(t, w.batch * w.m * w.out_count) {
        const int64_t p = t % w.out_count, m = (t / w.out_count) % w.m;
        const int64_t n = t / (w.out_count * w.m), g = m / mg;
        int64_t o[CUDA_SPATIAL_MAX], kk[CUDA_SPATIAL_MAX];
        unravel(p, w.out, w.n, o);
        T acc = (T)0;
        for (int64_t cl = 0; cl < cg; cl++) {
            const T *xp = x + (n * w.c + g * cg + cl) * w.in_count;
            const T *wp = wt + (m * cg + cl) * w.k_count;
            for (int64_t kq = 0; kq < w.k_count; kq++) {
                unravel(kq, w.k, w.n, kk);
                const int64_t off = tap_input(w, o, kk);
                const bool inside = off >= 0;
                if (inside)
                    acc += xp[off] * wp[kq];
            }
        }
        y[t] = b ? acc + b[m] : acc;
    }
}

/* dX: each input element gathers dy * W over the outputs whose windows reached it. */
template <typename T>
__global__ void conv_grad_x_kernel(cuda_win_t w, const T *dy, const T *wt, T *dx) {
    const int64_t cg = w.c / w.group, mg = w.m / w.group;
    FOR_EACH(t, w.batch * w.c * w.in_count) {
        const int64_t q = t % w.in_count, c = (t / w.in_count) % w.c;
        const int64_t n = t / (w.in_count * w.c), g = c / cg, cl = c % cg;
        int64_t ic[CUDA_SPATIAL_MAX], kk[CUDA_SPATIAL_MAX];
        unravel(q, w.in, w.n, ic);
        T acc = (T)0;
        for (int64_t m = g * mg; m < (g + 1) * mg; m++) {
            const T *dp = dy + (n * w.m + m) * w.out_count;
            const T *wp = wt + (m * cg + cl) * w.k_count;
            for (int64_t kq = 0; kq < w.k_count; kq++) {
                unravel(kq, w.k, w.n, kk);
                const int64_t off = tap_output(w, ic, kk);
                const bool ok = off >= 0;
                if (ok)
                    acc += dp[off] * wp[kq];
            }
        }
        dx[t] = acc;
    }
}

/* dW: each weight sums x * dy over the batch and the output positions. */
template <typename T>
__global__ void conv_grad_w_kernel(cuda_win_t w, const T *dy, const T *x, T *dw) {
    const int64_t cg = w.c / w.group, mg = w.m / w.group;
    FOR_EACH(t, w.m * cg * w.k_count) {
        const int64_t kq = t % w.k_count, cl = (t / w.k_count) % cg, m = t / (w.k_count * cg);
        const int64_t c = (m / mg) * cg + cl;
        int64_t kk[CUDA_SPATIAL_MAX], o[CUDA_SPATIAL_MAX];
        unravel(kq, w.k, w.n, kk);
        T acc = (T)0;
        for (int64_t n = 0; n < w.batch; n++) {
            const T *xp = x + (n * w.c + c) * w.in_count;
            const T *dp = dy + (n * w.m + m) * w.out_count;
            for (int64_t p = 0; p < w.out_count; p++) {
                unravel(p, w.out, w.n, o);
                const int64_t off = tap_input(w, o, kk);
                const bool inside = off >= 0;
                if (inside)
                    acc += xp[off] * dp[p];
            }
        }
        dw[t] = acc;
    }
}

/* im2col for @p nb images from image @p n0: column element (image n, row r = c * k_count + kq,
 * position p) at n * sn + r * sr + p, the input value its window reads or 0 in the padding.
 * (sn, sr) = (rows * out_count, out_count) for the forward pass and dX, (out_count,
 * nb * out_count) for dW, where the rows of all images lie side by side. */
template <typename T>
__global__ void im2col_kernel(cuda_win_t w, int64_t n0, int64_t nb, int64_t sn, int64_t sr,
                              const T *x, T *col) {
    const int64_t rows = w.c * w.k_count;
    FOR_EACH(t, nb * rows * w.out_count) {
        const int64_t p = t % w.out_count, r = (t / w.out_count) % rows;
        const int64_t n = t / (w.out_count * rows), c = r / w.k_count, kq = r % w.k_count;
        int64_t o[CUDA_SPATIAL_MAX], kk[CUDA_SPATIAL_MAX];
        unravel(p, w.out, w.n, o);
        unravel(kq, w.k, w.n, kk);
        const int64_t off = tap_input(w, o, kk);
        const bool inside = off >= 0;
        col[n * sn + r * sr + p] = inside ? x[((n0 + n) * w.c + c) * w.in_count + off] : (T)0;
    }
}

/* col2im as a gather: each dX element of the @p nb images sums the column entries (layout
 * [image][c * k_count + kq][out_count]) of the windows that read it; no atomics. */
template <typename T>
__global__ void col2im_kernel(cuda_win_t w, int64_t nb, const T *col, T *dx) {
    const int64_t rows = w.c * w.k_count;
    FOR_EACH(t, nb * w.c * w.in_count) {
        const int64_t q = t % w.in_count, c = (t / w.in_count) % w.c, n = t / (w.in_count * w.c);
        int64_t ic[CUDA_SPATIAL_MAX], kk[CUDA_SPATIAL_MAX];
        unravel(q, w.in, w.n, ic);
        const T *cp = col + (n * rows + c * w.k_count) * w.out_count;
        T acc = (T)0;
        for (int64_t kq = 0; kq < w.k_count; kq++) {
            unravel(kq, w.k, w.n, kk);
            const int64_t off = tap_output(w, ic, kk);
            const bool ok = off >= 0;
            if (ok)
                acc += cp[kq * w.out_count + off];
        }
        dx[t] = acc;
    }
}

/* dst [m][nb * p] = src [nb][m][p]: dy's images side by side for dW's one GEMM. */
template <typename T>
__global__ void nmp_to_mnp_kernel(int64_t nb, int64_t m, int64_t p, const T *src, T *dst) {
    FOR_EACH(t, nb * m * p) {
        const int64_t pp = t % p, mm = (t / p) % m, n = t / (p * m);
        dst[(mm * nb + n) * p + pp] = src[t];
    }
}

/* y [nb, m, p] += b[m]. */
template <typename T>
__global__ void channel_bias_kernel(int64_t count, int64_t m, int64_t p, const T *b, T *y) {
    FOR_EACH(t, count) {
        y[t] += b[(t / p) % m];
    }
}

/* ---------------------------------------------------------------------------------------------
 * SoftmaxCrossEntropyLoss, its gradient and the optimizers (f32).
 * ------------------------------------------------------------------------------------------- */

/* The class of position p, -1 when ignored; out of range is reported through *bad. */
__device__ __forceinline__ int64_t sce_class(const void *labels, int labels64, int64_t p,
                                             int64_t classes, int has_ignore, int64_t ignore_index,
                                             unsigned long long *bad) {
    const int64_t y =
        labels64 ? ((const int64_t *)labels)[p] : (int64_t)((const int32_t *)labels)[p];
    if (has_ignore && y == ignore_index)
        return -1;
    if (y < 0 || y >= classes) {
        atomicMin(bad, (unsigned long long)p);
        return -1;
    }
    return y;
}

/* Sums v over the block (256 threads) into element 0 of sh; every thread gets the total. */
__device__ double block_sum(double v, double *sh) {
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

template <typename T>
__global__ void sce_loss_kernel(int64_t positions, int64_t classes, int64_t inner, const T *x,
                                const void *labels, int labels64, const T *weights, int has_ignore,
                                int64_t ignore_index, int reduction, T *loss, T *log_prob,
                                unsigned long long *bad) {
    __shared__ double sh[256];
    double total = 0.0, weight = 0.0;
    for (int64_t p = threadIdx.x; p < positions; p += blockDim.x) {
        const int64_t y = sce_class(labels, labels64, p, classes, has_ignore, ignore_index, bad);
        const int64_t base = (p / inner) * classes * inner + p % inner;
        T mx = lowest<T>(), sum = (T)0;
        for (int64_t c = 0; c < classes; c++) {
            const T v = x[base + c * inner];
            mx = (v > mx || v != v) ? v : mx;
        }
        for (int64_t c = 0; c < classes; c++)
            sum += m_exp(x[base + c * inner] - mx);
        const T ls = m_log(sum);
        if (log_prob)
            for (int64_t c = 0; c < classes; c++)
                log_prob[base + c * inner] = (x[base + c * inner] - mx) - ls;
        const T lp = y < 0 ? (T)0 : (x[base + y * inner] - mx) - ls;
        const T w = y < 0 ? (T)0 : (weights ? weights[y] : (T)1);
        if (reduction == 2)
            loss[p] = y < 0 ? (T)0 : -w * lp;
        else if (y >= 0) {
            total += (double)(-w * lp);
            weight += (double)w;
        }
    }
    if (reduction == 2)
        return;
    total = block_sum(total, sh);
    weight = block_sum(weight, sh);
    if (threadIdx.x == 0)
        *loss = (T)(reduction == 0 ? total / weight : total);
}

template <typename T>
__global__ void sce_grad_kernel(int64_t positions, int64_t classes, int64_t inner, const T *dloss,
                                const T *lp, const void *labels, int labels64, const T *weights,
                                int has_ignore, int64_t ignore_index, int reduction, T *dx,
                                unsigned long long *bad) {
    __shared__ double sh[256];
    double scale = 0.0;
    if (reduction != 2) {
        double weight = 0.0;
        for (int64_t p = threadIdx.x; p < positions; p += blockDim.x) {
            const int64_t y =
                sce_class(labels, labels64, p, classes, has_ignore, ignore_index, bad);
            if (y >= 0)
                weight += weights ? (double)weights[y] : 1.0;
        }
        weight = block_sum(weight, sh);
        scale = reduction == 0 ? (double)*dloss / weight : (double)*dloss;
    }
    for (int64_t p = threadIdx.x; p < positions; p += blockDim.x) {
        const int64_t y = sce_class(labels, labels64, p, classes, has_ignore, ignore_index, bad);
        const int64_t base = (p / inner) * classes * inner + p % inner;
        if (y < 0) {
            for (int64_t c = 0; c < classes; c++)
                dx[base + c * inner] = (T)0;
            continue;
        }
        const T factor = (reduction == 2 ? dloss[p] : (T)scale) * (weights ? weights[y] : (T)1);
        for (int64_t c = 0; c < classes; c++)
            dx[base + c * inner] = m_exp(lp[base + c * inner]) * factor;
        dx[base + y * inner] = (m_exp(lp[base + y * inner]) - (T)1) * factor;
    }
}

template <typename T>
__global__ void sgd_kernel(int64_t n, T *var, const T *grad, const T *lr) {
    const T l = *lr;
    FOR_EACH(i, n) {
        var[i] -= l * grad[i];
    }
}

template <typename T>
__global__ void momentum_kernel(int64_t n, T *var, const T *grad, const T *lr, T *vel,
                                double momentum, int nesterov) {
    const T l = *lr, mu = (T)momentum;
    FOR_EACH(i, n) {
        const T v = mu * vel[i] + grad[i];
        vel[i] = v;
        var[i] -= nesterov ? l * (grad[i] + mu * v) : l * v;
    }
}

/* Reads t before any thread of the step writes it: the increment is a second launch. The bias
 * corrections are computed in f64 from the f64 betas, as the CPU driver does (in f32 they would
 * differ by about 1e-5 relative for beta2 = 0.999). */
template <typename T>
__global__ void adam_kernel(int64_t n, T *var, const T *grad, const T *lr, T *m, T *v, const T *t,
                            double beta1, double beta2, double eps) {
    const double step = (double)(*t + (T)1);
    const T l = *lr, b1 = (T)beta1, b2 = (T)beta2, e = (T)eps;
    const T c1 = (T)(1.0 - pow(beta1, step)), c2 = (T)(1.0 - pow(beta2, step));
    FOR_EACH(i, n) {
        const T g = grad[i];
        const T mi = b1 * m[i] + ((T)1 - b1) * g;
        const T vi = b2 * v[i] + ((T)1 - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        var[i] -= l * (mi / c1) / (m_sqrt(vi / c2) + e);
    }
}

template <typename T>
__global__ void increment_kernel(T *t) {
    *t += (T)1;
}

/* Grid size for @p n elements: enough blocks to fill the device, grid-stride beyond that. */
unsigned blocks_for(int64_t n) {
    const int64_t b = (n + 255) / 256;
    return (unsigned)(b < 65535 ? (b > 0 ? b : 1) : 65535);
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

extern "C" int cuda__binary(uint32_t dtype, const cuda_bcast_t *g, int op, double alpha,
                            const void *a, const void *b, void *o, void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                          \
    case DT:                                                 \
        LAUNCH(g->count, stream, binary_kernel<T>)           \
        (*g, op, alpha, (const T *)a, (const T *)b, (T *)o); \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
        CASE(CUDA_DT_F16, __half)
        CASE(CUDA_DT_BF16, __nv_bfloat16)
        CASE(CUDA_DT_I32, int32_t)
        CASE(CUDA_DT_I64, int64_t)
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
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
        CASE(CUDA_DT_F16, __half)
        CASE(CUDA_DT_BF16, __nv_bfloat16)
        CASE(CUDA_DT_I32, int32_t)
        CASE(CUDA_DT_I64, int64_t)
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

extern "C" int cuda__check_indices(int64_t n, const void *idx, int idx64, int64_t dim,
                                   unsigned long long *bad, void *stream) {
    LAUNCH(n, stream, check_indices_kernel)(n, idx, idx64, dim, bad);
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

extern "C" int cuda__pool(uint32_t dtype, const cuda_win_t *w, int64_t planes, int op,
                          int include_pad, const void *x, void *y, void *stream) {
    const int64_t n = planes * w->out_count;
    if (dtype == CUDA_DT_F32)
        LAUNCH(n, stream, pool_kernel<float>)
        (*w, planes, op, include_pad, (const float *)x, (float *)y);
    else if (dtype == CUDA_DT_F64)
        LAUNCH(n, stream, pool_kernel<double>)
        (*w, planes, op, include_pad, (const double *)x, (double *)y);
    else
        return (int)cudaErrorInvalidValue;
    return (int)cudaGetLastError();
}

extern "C" int cuda__pool_grad(uint32_t dtype, const cuda_win_t *w, int64_t planes, int op,
                               int include_pad, const void *dy, const void *x, void *dx,
                               void *stream) {
    const int64_t n = planes * w->out_count;
    const size_t es = dtype == CUDA_DT_F64 ? 8 : 4;
    if (dtype != CUDA_DT_F32 && dtype != CUDA_DT_F64)
        return (int)cudaErrorInvalidValue;
    cudaError_t e =
        cudaMemsetAsync(dx, 0, (size_t)(planes * w->in_count) * es, (cudaStream_t)stream);
    if (e != cudaSuccess || n == 0)
        return (int)e;
    if (dtype == CUDA_DT_F32)
        LAUNCH(n, stream, pool_grad_kernel<float>)
        (*w, planes, op, include_pad, (const float *)dy, (const float *)x, (float *)dx);
    else
        LAUNCH(n, stream, pool_grad_kernel<double>)
        (*w, planes, op, include_pad, (const double *)dy, (const double *)x, (double *)dx);
    return (int)cudaGetLastError();
}

extern "C" int cuda__batch_norm(uint32_t dtype, int64_t n, int64_t channels, int64_t inner,
                                const void *x, const void *scale, const void *bias,
                                const void *mean, const void *var, double eps, void *y,
                                void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                                                            \
    case DT:                                                                                   \
        LAUNCH(n, stream, batch_norm_kernel<T>)                                                \
        (n, channels, inner, (const T *)x, (const T *)scale, (const T *)bias, (const T *)mean, \
         (const T *)var, eps, (T *)y);                                                         \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

static pad_geo pad_geometry(uint32_t rank, const int64_t *xd, const int64_t *yd,
                            const int64_t *begin, int mode) {
    pad_geo g;
    memset(&g, 0, sizeof g);
    g.rank = rank;
    g.mode = mode;
    for (uint32_t d = 0; d < rank && d < CUDA_MAX_RANK; d++) {
        g.xd[d] = xd[d];
        g.yd[d] = yd[d];
        g.begin[d] = begin[d];
    }
    return g;
}

extern "C" int cuda__pad(uint32_t esize, uint32_t rank, const int64_t *xd, const int64_t *yd,
                         const int64_t *begin, int mode, const void *x, const void *fill, void *y,
                         int64_t count, void *stream) {
    const pad_geo g = pad_geometry(rank, xd, yd, begin, mode);
    switch (esize) {
#define CASE(N, T)                                                                             \
    case N:                                                                                    \
        LAUNCH(count, stream, pad_kernel<T>)(g, count, (const T *)x, (const T *)fill, (T *)y); \
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

extern "C" int cuda__pad_grad(uint32_t dtype, uint32_t rank, const int64_t *xd, const int64_t *yd,
                              const int64_t *begin, int mode, const void *dy, void *dx,
                              int64_t dx_count, int64_t dy_count, void *stream) {
    const pad_geo g = pad_geometry(rank, xd, yd, begin, mode);
    if (dtype != CUDA_DT_F32 && dtype != CUDA_DT_F64)
        return (int)cudaErrorInvalidValue;
    cudaError_t e = cudaMemsetAsync(dx, 0, (size_t)dx_count * (dtype == CUDA_DT_F64 ? 8 : 4),
                                    (cudaStream_t)stream);
    if (e != cudaSuccess || dy_count == 0)
        return (int)e;
    if (dtype == CUDA_DT_F32)
        LAUNCH(dy_count, stream, pad_grad_kernel<float>)
        (g, dy_count, (const float *)dy, (float *)dx);
    else
        LAUNCH(dy_count, stream, pad_grad_kernel<double>)
        (g, dy_count, (const double *)dy, (double *)dx);
    return (int)cudaGetLastError();
}

#define CNN_DISPATCH(dtype, CALL)           \
    switch (dtype) {                        \
        case CUDA_DT_F32: {                 \
            typedef float T;                \
            CALL;                           \
            break;                          \
        }                                   \
        case CUDA_DT_F64: {                 \
            typedef double T;               \
            CALL;                           \
            break;                          \
        }                                   \
        default:                            \
            return (int)cudaErrorInvalidValue; \
    }

extern "C" int cuda__im2col(uint32_t dtype, const cuda_win_t *w, int64_t n0, int64_t nb, int dw,
                            const void *x, void *col, void *stream) {
    const int64_t rows = w->c * w->k_count, n = nb * rows * w->out_count;
    const int64_t sn = dw ? w->out_count : rows * w->out_count;
    const int64_t sr = dw ? nb * w->out_count : w->out_count;
    if (n == 0)
        return 0;
    CNN_DISPATCH(dtype, LAUNCH(n, stream, im2col_kernel<T>)(*w, n0, nb, sn, sr, (const T *)x,
                                                              (T *)col))
    return (int)cudaGetLastError();
}

extern "C" int cuda__col2im(uint32_t dtype, const cuda_win_t *w, int64_t nb, const void *col,
                            void *dx, void *stream) {
    const int64_t n = nb * w->c * w->in_count;
    if (n == 0)
        return 0;
    CNN_DISPATCH(dtype, LAUNCH(n, stream, col2im_kernel<T>)(*w, nb, (const T *)col, (T *)dx))
    return (int)cudaGetLastError();
}

extern "C" int cuda__nmp_to_mnp(uint32_t dtype, int64_t nb, int64_t m, int64_t p, const void *src,
                                void *dst, void *stream) {
    const int64_t n = nb * m * p;
    if (n == 0)
        return 0;
    CNN_DISPATCH(dtype, LAUNCH(n, stream, nmp_to_mnp_kernel<T>)(nb, m, p, (const T *)src, (T *)dst))
    return (int)cudaGetLastError();
}

extern "C" int cuda__channel_bias(uint32_t dtype, int64_t nb, int64_t m, int64_t p, const void *b,
                                  void *y, void *stream) {
    const int64_t n = nb * m * p;
    if (n == 0)
        return 0;
    CNN_DISPATCH(dtype, LAUNCH(n, stream, channel_bias_kernel<T>)(n, m, p, (const T *)b, (T *)y))
    return (int)cudaGetLastError();
}

extern "C" int cuda__conv(uint32_t dtype, const cuda_win_t *w, const void *x, const void *wt,
                          const void *b, void *y, void *stream) {
    const int64_t n = w->batch * w->m * w->out_count;
    switch (dtype) {
#define CASE(DT, T)                                                                               \
    case DT:                                                                                      \
        LAUNCH(n, stream, conv_kernel<T>)(*w, (const T *)x, (const T *)wt, (const T *)b, (T *)y); \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__conv_grad(uint32_t dtype, const cuda_win_t *w, int input, const void *dy,
                               const void *x, const void *wt, void *out, void *stream) {
    const int64_t nx = w->batch * w->c * w->in_count;
    const int64_t nw = w->m * (w->c / w->group) * w->k_count;
    switch (dtype) {
#define CASE(DT, T)                                                                                \
    case DT:                                                                                       \
        if (input == 0)                                                                            \
            LAUNCH(nx, stream, conv_grad_x_kernel<T>)(*w, (const T *)dy, (const T *)wt, (T *)out); \
        else                                                                                       \
            LAUNCH(nw, stream, conv_grad_w_kernel<T>)(*w, (const T *)dy, (const T *)x, (T *)out);  \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__sce_loss(uint32_t dtype, int64_t positions, int64_t classes, int64_t inner,
                              const void *x, const void *labels, int labels64, const void *weights,
                              int has_ignore, int64_t ignore_index, int reduction, void *loss,
                              void *log_prob, unsigned long long *bad, void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                                                        \
    case DT:                                                                               \
        sce_loss_kernel<T><<<1, 256, 0, (cudaStream_t)stream>>>(                           \
            positions, classes, inner, (const T *)x, labels, labels64, (const T *)weights, \
            has_ignore, ignore_index, reduction, (T *)loss, (T *)log_prob, bad);           \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__sce_grad(uint32_t dtype, int64_t positions, int64_t classes, int64_t inner,
                              const void *dloss, const void *log_prob, const void *labels,
                              int labels64, const void *weights, int has_ignore,
                              int64_t ignore_index, int reduction, void *dx,
                              unsigned long long *bad, void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                                                             \
    case DT:                                                                                    \
        sce_grad_kernel<T><<<1, 256, 0, (cudaStream_t)stream>>>(                                \
            positions, classes, inner, (const T *)dloss, (const T *)log_prob, labels, labels64, \
            (const T *)weights, has_ignore, ignore_index, reduction, (T *)dx, bad);             \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__sgd(uint32_t dtype, int64_t n, void *var, const void *grad, const void *lr,
                         void *stream) {
    if (dtype == CUDA_DT_F32)
        LAUNCH(n, stream, sgd_kernel<float>)
        (n, (float *)var, (const float *)grad, (const float *)lr);
    else if (dtype == CUDA_DT_F64)
        LAUNCH(n, stream, sgd_kernel<double>)
        (n, (double *)var, (const double *)grad, (const double *)lr);
    else
        return (int)cudaErrorInvalidValue;
    return (int)cudaGetLastError();
}

extern "C" int cuda__momentum(uint32_t dtype, int64_t n, void *var, const void *grad,
                              const void *lr, void *vel, double momentum, int nesterov,
                              void *stream) {
    if (dtype == CUDA_DT_F32)
        LAUNCH(n, stream, momentum_kernel<float>)
        (n, (float *)var, (const float *)grad, (const float *)lr, (float *)vel, momentum, nesterov);
    else if (dtype == CUDA_DT_F64)
        LAUNCH(n, stream, momentum_kernel<double>)
        (n, (double *)var, (const double *)grad, (const double *)lr, (double *)vel, momentum,
         nesterov);
    else
        return (int)cudaErrorInvalidValue;
    return (int)cudaGetLastError();
}

extern "C" int cuda__adam(uint32_t dtype, int64_t n, void *var, const void *grad, const void *lr,
                          void *m, void *v, void *t, double beta1, double beta2, double eps,
                          void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    switch (dtype) {
#define CASE(DT, T)                                                                            \
    case DT:                                                                                   \
        if (n > 0)                                                                             \
            LAUNCH(n, stream, adam_kernel<T>)                                                  \
            (n, (T *)var, (const T *)grad, (const T *)lr, (T *)m, (T *)v, (const T *)t, beta1, \
             beta2, eps);                                                                      \
        increment_kernel<T><<<1, 1, 0, s>>>((T *)t);                                           \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}
