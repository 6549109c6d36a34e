/*
 * The CUDA driver's Resize and ResizeGrad (cuda_resize.c), as the CPU driver's (cpu_resize.c):
 * separable taps, worked out per axis from the output index alone (nearest 1, linear 2, cubic 4),
 * an output element the sum over the product of its axes' taps, in f64, in the CPU's order (the
 * last axis's taps summed inside each combination of the other axes' taps).
 *
 * One thread per Y element (Resize) or dY element (ResizeGrad, adding onto dX with atomicAdd:
 * the order of the additions to one element then varies on a GPU).
 */
#include "cuda_kernels.cuh"

namespace {

enum { RZ_NEAREST = 0, RZ_LINEAR = 1, RZ_CUBIC = 2 };
enum {
    RZ_HALF_PIXEL_SYMMETRIC = 1,
    RZ_PYTORCH_HALF_PIXEL = 2,
    RZ_ALIGN_CORNERS = 3,
    RZ_ASYMMETRIC = 4,
    RZ_TF_HALF_PIXEL_FOR_NN = 5,
    RZ_TF_CROP_AND_RESIZE = 6,
};
enum { RZ_ROUND_PREFER_CEIL = 1, RZ_FLOOR = 2, RZ_CEIL = 3 };

/* An axis's taps at one output index: n input indices and weights; n < 0: extrapolate. */
struct rz_taps {
    int n;
    int64_t idx[4];
    double w[4];
};

__device__ __forceinline__ int64_t rz_clamp(int64_t i, int64_t n) {
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* The cubic convolution kernel at distance @p s (0 <= s <= 2) with coefficient @p a. */
__device__ __forceinline__ double rz_cubic(double s, double a) {
    if (s <= 1.0)
        return ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0;
    return ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a;
}

/* Axis @p d's taps at output index @p o. */
__device__ void rz_axis(const cuda_resize_t &p, uint32_t d, int64_t o, rz_taps *t) {
    const double in = (double)p.in[d], s = p.scales[d], len = p.lengths[d];
    const double xo = (double)o;
    double x;

    switch (p.coord) {
        case RZ_HALF_PIXEL_SYMMETRIC: {
            const double adjustment = (double)p.out[d] / (s * in);
            const double center = in / 2.0;
            x = center * (1.0 - adjustment) + (xo + 0.5) / s - 0.5;
            break;
        }
        case RZ_PYTORCH_HALF_PIXEL:
            x = len > 1.0 ? (xo + 0.5) / s - 0.5 : 0.0;
            break;
        case RZ_ALIGN_CORNERS:
            x = len == 1.0 ? 0.0 : xo * (in - 1.0) / (len - 1.0);
            break;
        case RZ_ASYMMETRIC:
            x = xo / s;
            break;
        case RZ_TF_HALF_PIXEL_FOR_NN:
            x = (xo + 0.5) / s;
            break;
        case RZ_TF_CROP_AND_RESIZE: {
            const double start = p.roi[d], end = p.roi[p.rank + d];
            if (len == 1.0)
                x = (end - start) * (in - 1.0) / 2.0;
            else
                x = xo * (end - start) * (in - 1.0) / (len - 1.0);
            x += start * (in - 1.0);
            if (!(x >= 0.0 && x <= in - 1.0)) {
                t->n = -1;
                return;
            }
            break;
        }
        default: /* half_pixel */
            x = (xo + 0.5) / s - 0.5;
            break;
    }

    const double f = floor(x), r = x - f;
    const int64_t i = (int64_t)f, n = p.in[d];
    if (p.mode == RZ_NEAREST) {
        int64_t k = i;
        if (r > 0.0) {
            switch (p.nearest) {
                case RZ_ROUND_PREFER_CEIL:
                    k = r < 0.5 ? i : i + 1;
                    break;
                case RZ_FLOOR:
                    k = i;
                    break;
                case RZ_CEIL:
                    k = i + 1;
                    break;
                default:
                    k = r <= 0.5 ? i : i + 1;
                    break;
            }
        }
        t->n = 1;
        t->idx[0] = rz_clamp(k, n);
        t->w[0] = 1.0;
        return;
    }
    int64_t first;
    int count;
    double w[4];
    if (p.mode == RZ_LINEAR) {
        first = i;
        count = 2;
        w[0] = 1.0 - r;
        w[1] = r;
    } else {
        first = i - 1;
        count = 4;
        w[0] = rz_cubic(r + 1.0, p.cubic_a);
        w[1] = rz_cubic(r, p.cubic_a);
        w[2] = rz_cubic(1.0 - r, p.cubic_a);
        w[3] = rz_cubic(2.0 - r, p.cubic_a);
        if (p.exclude) {
            double sum = 0.0;
            for (int k = 0; k < 4; k++) {
                if (first + k < 0 || first + k >= n)
                    w[k] = 0.0;
                sum += w[k];
            }
            for (int k = 0; k < 4 && sum != 0.0; k++)
                w[k] /= sum;
        }
    }
    /* Taps of weight 0 read nothing (an axis resized by 1 keeps one tap per index). */
    t->n = 0;
    for (int k = 0; k < count; k++) {
        if (w[k] == 0.0)
            continue;
        t->idx[t->n] = rz_clamp(first + k, n);
        t->w[t->n] = w[k];
        t->n++;
    }
}

/* The taps of every axis of output element @p e; false when one is outside (extrapolate). */
__device__ bool rz_element_taps(const cuda_resize_t &p, int64_t e, rz_taps *taps) {
    for (uint32_t d = p.rank; d-- > 0;) {
        rz_axis(p, d, e % p.out[d], &taps[d]);
        e /= p.out[d];
        if (taps[d].n < 0)
            return false;
    }
    return true;
}

/* Walks the combinations of one tap per axis but the last, in the CPU's order (axis 0 the
 * slowest): calls f(offset of the X row, product of the weights) for each. */
template <typename F>
__device__ __forceinline__ void rz_combos(const cuda_resize_t &p, const rz_taps *taps, F f) {
    int k[CUDA_MAX_RANK] = {0};
    const uint32_t last = p.rank - 1;
    for (;;) {
        int64_t off = 0;
        double w = 1.0;
        for (uint32_t d = 0; d < last; d++) {
            off = off * p.in[d] + taps[d].idx[k[d]];
            w = w * taps[d].w[k[d]];
        }
        f(off, w);
        uint32_t d = last;
        while (d-- > 0) {
            if (++k[d] < taps[d].n)
                break;
            k[d] = 0;
        }
        if (d == UINT32_MAX)
            return;
    }
}

template <typename T>
__global__ void resize_kernel(cuda_resize_t p, const T *x, T *y) {
    FOR_EACH(e, p.count) {
        rz_taps taps[CUDA_MAX_RANK];
        if (!rz_element_taps(p, e, taps)) {
            y[e] = (T)p.extrapolation;
            continue;
        }
        const rz_taps &tl = taps[p.rank - 1];
        const int64_t il = p.in[p.rank - 1];
        double v = 0.0;
        rz_combos(p, taps, [&](int64_t off, double w) {
            const T *xr = x + off * il;
            double r = 0.0;
            for (int k = 0; k < tl.n; k++)
                r += tl.w[k] * (double)xr[tl.idx[k]];
            v += w * r;
        });
        y[e] = (T)v;
    }
}

/* Nearest: one tap per axis, the element copied (any dtype, by size). */
template <typename T>
__global__ void resize_nearest_kernel(cuda_resize_t p, const T *x, T *y) {
    FOR_EACH(e, p.count) {
        rz_taps taps[CUDA_MAX_RANK];
        if (!rz_element_taps(p, e, taps)) {
            y[e] = (T)p.fill;
            continue;
        }
        int64_t off = 0;
        for (uint32_t d = 0; d < p.rank; d++)
            off = off * p.in[d] + taps[d].idx[0];
        y[e] = x[off];
    }
}

/* dY's element e added onto the dX elements its taps read, weighted. */
template <typename T>
__global__ void resize_grad_kernel(cuda_resize_t p, const T *dy, T *dx) {
    FOR_EACH(e, p.count) {
        rz_taps taps[CUDA_MAX_RANK];
        if (!rz_element_taps(p, e, taps))
            continue;
        const rz_taps &tl = taps[p.rank - 1];
        const int64_t il = p.in[p.rank - 1];
        const double g = (double)dy[e];
        rz_combos(p, taps, [&](int64_t off, double w) {
            for (int k = 0; k < tl.n; k++)
                atomicAdd(dx + off * il + tl.idx[k], (T)(g * w * tl.w[k]));
        });
    }
}

/* Rank 0: the one element. */
template <typename T>
__global__ void resize_scalar_kernel(const T *x, T *y) {
    *y = *x;
}

} /* namespace */

#define LAUNCH(n, s, ...) __VA_ARGS__<<<blocks_for(n), 256, 0, (cudaStream_t)(s)>>>

/* Nearest (every dtype, by element size: a copy, as on the CPU) or the weighted sums (f32,
 * f64). Rank 0 is nearest's copy of the one element. */
extern "C" int cuda__resize(uint32_t dtype, const cuda_resize_t *r, const void *x, void *y,
                            void *stream) {
    if (r->mode == RZ_NEAREST || r->rank == 0) {
        switch (dtype) {
            case CUDA_DT_I8:
            case CUDA_DT_U8:
                LAUNCH(r->count, stream, resize_nearest_kernel<uint8_t>)
                (*r, (const uint8_t *)x, (uint8_t *)y);
                break;
            case CUDA_DT_F32:
            case CUDA_DT_I32:
                LAUNCH(r->count, stream, resize_nearest_kernel<uint32_t>)
                (*r, (const uint32_t *)x, (uint32_t *)y);
                break;
            case CUDA_DT_F64:
            case CUDA_DT_I64:
                LAUNCH(r->count, stream, resize_nearest_kernel<uint64_t>)
                (*r, (const uint64_t *)x, (uint64_t *)y);
                break;
            default:
                return (int)cudaErrorInvalidValue;
        }
        return (int)cudaGetLastError();
    }
    switch (dtype) {
        case CUDA_DT_F32:
            LAUNCH(r->count, stream, resize_kernel<float>)(*r, (const float *)x, (float *)y);
            break;
        case CUDA_DT_F64:
            LAUNCH(r->count, stream, resize_kernel<double>)(*r, (const double *)x, (double *)y);
            break;
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int cuda__resize_grad(uint32_t dtype, const cuda_resize_t *r, const void *dy, void *dx,
                                 void *stream) {
    if (r->rank == 0) {
        if (dtype == CUDA_DT_F64)
            LAUNCH(1, stream, resize_scalar_kernel<double>)((const double *)dy, (double *)dx);
        else
            LAUNCH(1, stream, resize_scalar_kernel<float>)((const float *)dy, (float *)dx);
        return (int)cudaGetLastError();
    }
    switch (dtype) {
        case CUDA_DT_F32:
            LAUNCH(r->count, stream, resize_grad_kernel<float>)(*r, (const float *)dy, (float *)dx);
            break;
        case CUDA_DT_F64:
            LAUNCH(r->count, stream, resize_grad_kernel<double>)
            (*r, (const double *)dy, (double *)dx);
            break;
        default:
            return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}
