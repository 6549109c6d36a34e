/*
 * The CUDA driver's own kernels: one broadcasting elementwise template (binary and unary ops,
 * the activation gradients), one naive reduction template (ReduceSum/Mean/Max, Softmax,
 * LogSoftmax along one axis) and the optimizers. Everything else (checks, shapes, the kernel
 * table) is C in cuda_driver.c and cuda_ops.c; this file only launches, so that it compiles fast.
 *
 * Every launcher returns a cudaError_t as int (0 = success) and takes its stream as void *.
 * Arithmetic is done in f32 for every storage type (f32, f16, bf16), as the CPU driver's f32.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_internal.h"

namespace {

template <typename T>
__device__ __forceinline__ float load_f(const T *p, int64_t i);
template <>
__device__ __forceinline__ float load_f<float>(const float *p, int64_t i) {
    return p[i];
}
template <>
__device__ __forceinline__ float load_f<__half>(const __half *p, int64_t i) {
    return __half2float(p[i]);
}
template <>
__device__ __forceinline__ float load_f<__nv_bfloat16>(const __nv_bfloat16 *p, int64_t i) {
    return __bfloat162float(p[i]);
}

template <typename T>
__device__ __forceinline__ void store_f(T *p, int64_t i, float v);
template <>
__device__ __forceinline__ void store_f<float>(float *p, int64_t i, float v) {
    p[i] = v;
}
template <>
__device__ __forceinline__ void store_f<__half>(__half *p, int64_t i, float v) {
    p[i] = __float2half_rn(v);
}
template <>
__device__ __forceinline__ void store_f<__nv_bfloat16>(__nv_bfloat16 *p, int64_t i, float v) {
    p[i] = __float2bfloat16_rn(v);
}

__device__ __forceinline__ float binary_op(int op, float a, float b, float alpha) {
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
        return powf(a, b);
    /* The gradients: a is dy, b the forward input (Relu, LeakyRelu) or output (the others). */
    case CUDA_BIN_RELU_GRAD:
        return b > 0.0f ? a : 0.0f;
    case CUDA_BIN_LEAKY_RELU_GRAD:
        return b > 0.0f ? a : alpha * a;
    case CUDA_BIN_SIGMOID_GRAD:
        return a * b * (1.0f - b);
    case CUDA_BIN_TANH_GRAD:
        return a * (1.0f - b * b);
    case CUDA_BIN_FIRST:
        return alpha * a;
    default:
        return 0.0f;
    }
}

__device__ __forceinline__ float unary_op(int op, float x, float alpha) {
    switch (op) {
    case CUDA_UN_NEG:
        return -x;
    case CUDA_UN_ABS:
        return fabsf(x);
    case CUDA_UN_RELU:
        return x < 0.0f ? 0.0f : x; /* NaN stays NaN, as on the CPU */
    case CUDA_UN_EXP:
        return expf(x);
    case CUDA_UN_LOG:
        return logf(x);
    case CUDA_UN_SQRT:
        return sqrtf(x);
    case CUDA_UN_RECIPROCAL:
        return 1.0f / x;
    case CUDA_UN_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case CUDA_UN_TANH:
        return tanhf(x);
    case CUDA_UN_LEAKY_RELU:
        return x < 0.0f ? alpha * x : x;
    case CUDA_UN_FILL:
        return alpha;
    default:
        return 0.0f;
    }
}

/* Offset of output element @p i in an input with element strides @p s (0 where broadcast). */
__device__ __forceinline__ int64_t bcast_offset(const cuda_bcast_t &g, const int64_t *s, int64_t i) {
    int64_t off = 0;
    for (int d = (int)g.rank - 1; d >= 0; d--) {
        const int64_t idx = i % g.dims[d];
        i /= g.dims[d];
        off += idx * s[d];
    }
    return off;
}

template <typename T>
__global__ void binary_kernel(cuda_bcast_t g, int op, float alpha, const T *a, const T *b, T *o) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.count;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t ia = g.same ? i : bcast_offset(g, g.stride[0], i);
        const int64_t ib = g.same ? i : bcast_offset(g, g.stride[1], i);
        store_f(o, i, binary_op(op, load_f(a, ia), load_f(b, ib), alpha));
    }
}

template <typename T>
__global__ void unary_kernel(int64_t n, int op, float alpha, const T *x, T *y) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        store_f(y, i, unary_op(op, op == CUDA_UN_FILL ? 0.0f : load_f(x, i), alpha));
}

/* Grid size for @p n elements: enough blocks to fill the device, grid-stride beyond that. */
unsigned blocks_for(int64_t n) {
    const int64_t b = (n + 255) / 256;
    return (unsigned)(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

/*
 * Reductions over a [outer, reduced, inner] view: one thread per output element, walking the
 * reduced elements in order (the CPU's summation order along the axis). Naive but exact in
 * semantics; reduced dims that are not contiguous are described by (outer, red, inner) after
 * the C side merged the axes, or refused there.
 */
__global__ void reduce_kernel(int64_t outer, int64_t red, int64_t inner, int op, const float *x,
                              float *y) {
    const int64_t n = outer * inner;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = i / inner, in = i % inner;
        const float *p = x + o * red * inner + in;
        float acc = op == CUDA_RED_MAX ? -INFINITY : 0.0f;
        for (int64_t r = 0; r < red; r++) {
            const float v = p[r * inner];
            if (op == CUDA_RED_MAX)
                acc = (v > acc || v != v) ? v : acc; /* NaN wins, as on the CPU */
            else
                acc += v;
        }
        if (op == CUDA_RED_MEAN)
            acc = red > 0 ? acc / (float)red : NAN;
        y[i] = acc;
    }
}

__global__ void softmax_kernel(int64_t outer, int64_t red, int64_t inner, int log_softmax,
                               const float *x, float *y) {
    const int64_t n = outer * inner;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = i / inner, in = i % inner;
        const float *p = x + o * red * inner + in;
        float *q = y + o * red * inner + in;
        float m = -INFINITY, s = 0.0f;
        for (int64_t r = 0; r < red; r++)
            m = fmaxf(m, p[r * inner]);
        for (int64_t r = 0; r < red; r++)
            s += expf(p[r * inner] - m);
        for (int64_t r = 0; r < red; r++)
            q[r * inner] = log_softmax ? p[r * inner] - m - logf(s) : expf(p[r * inner] - m) / s;
    }
}

__global__ void rsum_kernel(cuda_rsum_t r, const float *x, float *y) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < r.out_count;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = 0, rest = i;
        for (int d = (int)r.n_keep - 1; d >= 0; d--) {
            base += (rest % r.keep_dims[d]) * r.keep_stride[d];
            rest /= r.keep_dims[d];
        }
        float acc = 0.0f;
        for (int64_t k = 0; k < r.red_count; k++) {
            int64_t off = base, q = k;
            for (int d = (int)r.n_red - 1; d >= 0; d--) {
                off += (q % r.red_dims[d]) * r.red_stride[d];
                q /= r.red_dims[d];
            }
            acc += x[off];
        }
        y[i] = acc;
    }
}

__global__ void softmax_grad_kernel(int64_t outer, int64_t red, int64_t inner, int log_softmax,
                                    const float *dy, const float *y, float *dx) {
    const int64_t n = outer * inner;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t base = i / inner * red * inner + i % inner;
        float s = 0.0f;
        for (int64_t r = 0; r < red; r++)
            s += log_softmax ? dy[base + r * inner] : dy[base + r * inner] * y[base + r * inner];
        for (int64_t r = 0; r < red; r++) {
            const int64_t j = base + r * inner;
            dx[j] = log_softmax ? dy[j] - expf(y[j]) * s : y[j] * (dy[j] - s);
        }
    }
}

/* The class of position p, -1 when ignored; out of range is reported through *bad. */
__device__ __forceinline__ int64_t sce_class(const void *labels, int labels64, int64_t p,
                                             int64_t classes, int has_ignore,
                                             int64_t ignore_index, unsigned long long *bad) {
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

__global__ void sce_loss_kernel(int64_t positions, int64_t classes, int64_t inner, const float *x,
                                const void *labels, int labels64, const float *weights,
                                int has_ignore, int64_t ignore_index, int reduction, float *loss,
                                float *log_prob, unsigned long long *bad) {
    __shared__ double sh[256];
    double total = 0.0, weight = 0.0;
    for (int64_t p = threadIdx.x; p < positions; p += blockDim.x) {
        const int64_t y = sce_class(labels, labels64, p, classes, has_ignore, ignore_index, bad);
        const int64_t base = (p / inner) * classes * inner + p % inner;
        float mx = -INFINITY, sum = 0.0f;
        for (int64_t c = 0; c < classes; c++) {
            const float v = x[base + c * inner];
            mx = (v > mx || v != v) ? v : mx;
        }
        for (int64_t c = 0; c < classes; c++)
            sum += expf(x[base + c * inner] - mx);
        const float ls = logf(sum);
        if (log_prob)
            for (int64_t c = 0; c < classes; c++)
                log_prob[base + c * inner] = (x[base + c * inner] - mx) - ls;
        const float lp = y < 0 ? 0.0f : (x[base + y * inner] - mx) - ls;
        const float w = y < 0 ? 0.0f : (weights ? weights[y] : 1.0f);
        if (reduction == 2)
            loss[p] = y < 0 ? 0.0f : -w * lp;
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
        *loss = (float)(reduction == 0 ? total / weight : total);
}

__global__ void sce_grad_kernel(int64_t positions, int64_t classes, int64_t inner,
                                const float *dloss, const float *lp, const void *labels,
                                int labels64, const float *weights, int has_ignore,
                                int64_t ignore_index, int reduction, float *dx,
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
                dx[base + c * inner] = 0.0f;
            continue;
        }
        const float factor =
            (reduction == 2 ? dloss[p] : (float)scale) * (weights ? weights[y] : 1.0f);
        for (int64_t c = 0; c < classes; c++)
            dx[base + c * inner] = expf(lp[base + c * inner]) * factor;
        dx[base + y * inner] = (expf(lp[base + y * inner]) - 1.0f) * factor;
    }
}

__global__ void sgd_kernel(int64_t n, float *var, const float *grad, const float *lr) {
    const float l = *lr;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        var[i] -= l * grad[i];
}

__global__ void momentum_kernel(int64_t n, float *var, const float *grad, const float *lr,
                                float *vel, float momentum, int nesterov) {
    const float l = *lr;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float v = momentum * vel[i] + grad[i];
        vel[i] = v;
        var[i] -= nesterov ? l * (grad[i] + momentum * v) : l * v;
    }
}

/* Reads t before any thread of the step writes it: the increment is a second launch. */
__global__ void adam_kernel(int64_t n, float *var, const float *grad, const float *lr, float *m,
                            float *v, const float *t, float beta1, float beta2, float eps) {
    const float step = *t + 1.0f, l = *lr;
    const float c1 = 1.0f - powf(beta1, step), c2 = 1.0f - powf(beta2, step);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float g = grad[i];
        const float mi = beta1 * m[i] + (1.0f - beta1) * g;
        const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        var[i] -= l * (mi / c1) / (sqrtf(vi / c2) + eps);
    }
}

__global__ void increment_kernel(float *t) {
    *t += 1.0f;
}

} /* namespace */

extern "C" int cuda__binary(uint32_t dtype, const cuda_bcast_t *g, int op, float alpha,
                            const void *a, const void *b, void *o, void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    const unsigned nb = blocks_for(g->count);
    switch (dtype) {
    case CUDA_DT_F32:
        binary_kernel<float><<<nb, 256, 0, s>>>(*g, op, alpha, (const float *)a, (const float *)b,
                                                 (float *)o);
        break;
    case CUDA_DT_F16:
        binary_kernel<__half><<<nb, 256, 0, s>>>(*g, op, alpha, (const __half *)a,
                                                  (const __half *)b, (__half *)o);
        break;
    case CUDA_DT_BF16:
        binary_kernel<__nv_bfloat16><<<nb, 256, 0, s>>>(*g, op, alpha,
                                                         (const __nv_bfloat16 *)a,
                                                         (const __nv_bfloat16 *)b,
                                                         (__nv_bfloat16 *)o);
        break;
    default:
        return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__unary(uint32_t dtype, int64_t n, int op, float alpha, const void *x, void *y,
                           void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    const unsigned nb = blocks_for(n);
    switch (dtype) {
    case CUDA_DT_F32:
        unary_kernel<float><<<nb, 256, 0, s>>>(n, op, alpha, (const float *)x, (float *)y);
        break;
    case CUDA_DT_F16:
        unary_kernel<__half><<<nb, 256, 0, s>>>(n, op, alpha, (const __half *)x, (__half *)y);
        break;
    case CUDA_DT_BF16:
        unary_kernel<__nv_bfloat16><<<nb, 256, 0, s>>>(n, op, alpha,
                                                        (const __nv_bfloat16 *)x,
                                                        (__nv_bfloat16 *)y);
        break;
    default:
        return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__reduce(int64_t outer, int64_t red, int64_t inner, int op, const float *x,
                            float *y, void *stream) {
    reduce_kernel<<<blocks_for(outer * inner), 256, 0, (cudaStream_t)stream>>>(outer, red, inner,
                                                                                op, x, y);
    return (int)cudaGetLastError();
}

extern "C" int cuda__softmax(int64_t outer, int64_t red, int64_t inner, int log_softmax,
                             const float *x, float *y, void *stream) {
    softmax_kernel<<<blocks_for(outer * inner), 256, 0, (cudaStream_t)stream>>>(
        outer, red, inner, log_softmax, x, y);
    return (int)cudaGetLastError();
}

extern "C" int cuda__rsum(const cuda_rsum_t *r, const float *x, float *y, void *stream) {
    rsum_kernel<<<blocks_for(r->out_count), 256, 0, (cudaStream_t)stream>>>(*r, x, y);
    return (int)cudaGetLastError();
}

extern "C" int cuda__softmax_grad(int64_t outer, int64_t red, int64_t inner, int log_softmax,
                                  const float *dy, const float *y, float *dx, void *stream) {
    softmax_grad_kernel<<<blocks_for(outer * inner), 256, 0, (cudaStream_t)stream>>>(
        outer, red, inner, log_softmax, dy, y, dx);
    return (int)cudaGetLastError();
}

extern "C" int cuda__sce_loss(int64_t positions, int64_t classes, int64_t inner, const float *x,
                              const void *labels, int labels64, const float *weights,
                              int has_ignore, int64_t ignore_index, int reduction, float *loss,
                              float *log_prob, unsigned long long *bad, void *stream) {
    sce_loss_kernel<<<1, 256, 0, (cudaStream_t)stream>>>(positions, classes, inner, x, labels,
                                                          labels64, weights, has_ignore,
                                                          ignore_index, reduction, loss, log_prob,
                                                          bad);
    return (int)cudaGetLastError();
}

extern "C" int cuda__sce_grad(int64_t positions, int64_t classes, int64_t inner,
                              const float *dloss, const float *log_prob, const void *labels,
                              int labels64, const float *weights, int has_ignore,
                              int64_t ignore_index, int reduction, float *dx,
                              unsigned long long *bad, void *stream) {
    sce_grad_kernel<<<1, 256, 0, (cudaStream_t)stream>>>(positions, classes, inner, dloss,
                                                          log_prob, labels, labels64, weights,
                                                          has_ignore, ignore_index, reduction, dx,
                                                          bad);
    return (int)cudaGetLastError();
}

extern "C" int cuda__sgd(int64_t n, float *var, const float *grad, const float *lr, void *stream) {
    sgd_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(n, var, grad, lr);
    return (int)cudaGetLastError();
}

extern "C" int cuda__momentum(int64_t n, float *var, const float *grad, const float *lr,
                              float *vel, float momentum, int nesterov, void *stream) {
    momentum_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(n, var, grad, lr, vel,
                                                                      momentum, nesterov);
    return (int)cudaGetLastError();
}

extern "C" int cuda__adam(int64_t n, float *var, const float *grad, const float *lr, float *m,
                          float *v, float *t, float beta1, float beta2, float eps, void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    if (n > 0)
        adam_kernel<<<blocks_for(n), 256, 0, s>>>(n, var, grad, lr, m, v, t, beta1, beta2, eps);
    increment_kernel<<<1, 1, 0, s>>>(t);
    return (int)cudaGetLastError();
}
