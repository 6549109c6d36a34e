/*
 * The CUDA driver's normalization kernels (cuda_norm.c): LayerNormalization and its gradient.
 *
 * One block of 256 threads per row (grid-stride over the rows): the row's mean and
 * 1 / sqrt(variance + epsilon) are block sums in f64, two passes as on the CPU, then each thread
 * writes its own elements (it read them itself, so Y may be X). The CPU sums in the element type
 * one element after the other; the sums here differ from its by roundings only.
 */
#include "cuda_kernels.cuh"

namespace {

#define NORM_THREADS 256

/* Row @p xr's mean and 1 / sqrt(variance + eps), on every thread of the block. */
template <typename T>
__device__ __forceinline__ void row_stats(const T *xr, int64_t n, double eps, double *sh,
                                          double *mean, double *inv_std) {
    double s = 0.0;
    for (int64_t d = threadIdx.x; d < n; d += blockDim.x)
        s += (double)xr[d];
    const double m = block_sum(s, sh) / (double)n;
    double v = 0.0;
    for (int64_t d = threadIdx.x; d < n; d += blockDim.x) {
        const double c = (double)xr[d] - m;
        v += c * c;
    }
    v = block_sum(v, sh) / (double)n;
    *mean = m;
    *inv_std = 1.0 / sqrt(v + eps);
}

/* Y = (X - mean) * inv_std * Scale [+ B] per row; Mean and InvStdDev when given. */
template <typename T>
__global__ void layer_norm_kernel(int64_t rows, int64_t n, double eps, const T *x, const T *scale,
                                  const T *bias, T *y, T *mean, T *inv_std) {
    __shared__ double sh[NORM_THREADS];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * n;
        T *yr = y + r * n;
        double md, isd;
        row_stats(xr, n, eps, sh, &md, &isd);
        const T m = (T)md, is = (T)isd;
        if (threadIdx.x == 0 && mean)
            mean[r] = m;
        if (threadIdx.x == 0 && inv_std)
            inv_std[r] = is;
        for (int64_t d = threadIdx.x; d < n; d += blockDim.x) {
            const T v = (xr[d] - m) * is * scale[d];
            yr[d] = bias ? v + bias[d] : v;
        }
    }
}

/* dX = inv_std * (g - mean(g) - xhat * mean(g * xhat)), g = dY * Scale, per row. */
template <typename T>
__global__ void layer_norm_dx_kernel(int64_t rows, int64_t n, double eps, const T *dy, const T *x,
                                     const T *scale, T *dx) {
    __shared__ double sh[NORM_THREADS];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * n, *gr = dy + r * n;
        double m, is;
        row_stats(xr, n, eps, sh, &m, &is);
        double a = 0.0, b = 0.0;
        for (int64_t d = threadIdx.x; d < n; d += blockDim.x) {
            const double g = (double)gr[d] * (double)scale[d];
            a += g;
            b += g * ((double)xr[d] - m) * is;
        }
        a = block_sum(a, sh) / (double)n;
        b = block_sum(b, sh) / (double)n;
        for (int64_t d = threadIdx.x; d < n; d += blockDim.x) {
            const double g = (double)gr[d] * (double)scale[d];
            dx[r * n + d] = (T)(is * (g - a - ((double)xr[d] - m) * is * b));
        }
    }
}

/* dScale[d] = sum over the rows of dY * xhat: each block owns NORM_THREADS columns (a thread
 * each) and walks every row, the block computing the row's statistics together, so that no
 * scratch memory is needed; the rows are added in order, as on the CPU. */
template <typename T>
__global__ void layer_norm_dscale_kernel(int64_t rows, int64_t n, double eps, const T *dy,
                                         const T *x, T *ds) {
    __shared__ double sh[NORM_THREADS];
    for (int64_t c0 = (int64_t)blockIdx.x * blockDim.x; c0 < n;
         c0 += (int64_t)gridDim.x * blockDim.x) {
        const int64_t d = c0 + threadIdx.x;
        double acc = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            double m, is;
            row_stats(x + r * n, n, eps, sh, &m, &is);
            if (d < n)
                acc += (double)dy[r * n + d] * ((double)x[r * n + d] - m) * is;
        }
        if (d < n)
            ds[d] = (T)acc;
    }
}

/* Blocks for @p n rows (or column tiles): one each, at most 65535 (grid-stride beyond). */
inline unsigned norm_blocks(int64_t n) { return (unsigned)(n < 65535 ? (n > 0 ? n : 1) : 65535); }

} /* namespace */

#define NORM_LAUNCH(blocks, s, ...) __VA_ARGS__<<<(blocks), NORM_THREADS, 0, (cudaStream_t)(s)>>>

extern "C" int cuda__layer_norm(uint32_t dtype, int64_t rows, int64_t n, double eps, const void *x,
                                const void *scale, const void *bias, void *y, void *mean,
                                void *inv_std, void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                                                        \
    case DT:                                                                               \
        NORM_LAUNCH(norm_blocks(rows), stream, layer_norm_kernel<T>)                       \
        (rows, n, eps, (const T *)x, (const T *)scale, (const T *)bias, (T *)y, (T *)mean, \
         (T *)inv_std);                                                                    \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__layer_norm_grad(uint32_t dtype, int input, int64_t rows, int64_t n, double eps,
                                     const void *dy, const void *x, const void *scale, void *out,
                                     void *stream) {
    switch (dtype) {
#define CASE(DT, T)                                                                  \
    case DT:                                                                         \
        if (input == 0) {                                                            \
            NORM_LAUNCH(norm_blocks(rows), stream, layer_norm_dx_kernel<T>)          \
            (rows, n, eps, (const T *)dy, (const T *)x, (const T *)scale, (T *)out); \
        } else {                                                                     \
            NORM_LAUNCH(norm_blocks((n + NORM_THREADS - 1) / NORM_THREADS), stream,  \
                        layer_norm_dscale_kernel<T>)                                 \
            (rows, n, eps, (const T *)dy, (const T *)x, (T *)out);                   \
        }                                                                            \
        break;
        CASE(CUDA_DT_F32, float)
        CASE(CUDA_DT_F64, double)
#undef CASE
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}
