/*
 * The CUDA driver's loss and optimizers (cuda_loss.c): SoftmaxCrossEntropyLoss, its gradient,
 * SGD, Momentum and Adam.
 */
#include "cuda_kernels.cuh"

namespace {

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

} /* namespace */

/* kernel<<<blocks for n elements, 256 threads, stream s>>>; the kernel comes last because a
 * template's commas would split a macro argument. */
#define LAUNCH(n, s, ...) __VA_ARGS__<<<blocks_for(n), 256, 0, (cudaStream_t)(s)>>>

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
