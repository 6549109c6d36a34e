/*
 * The CUDA driver's CNN kernels (cuda_cnn.c): pools, BatchNormalization, Pad, Conv and their
 * gradients, with the im2col/col2im helpers of the GEMM path.
 */
#include "cuda_kernels.cuh"

namespace {

/* ---------------------------------------------------------------------------------------------
 * Pools, BatchNormalization, Pad, Conv: one thread per output element (or, for the gradients
 * that scatter, per source element with atomicAdd), walking its window in the CPU's order.
 * ------------------------------------------------------------------------------------------- */

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

} /* namespace */

/* kernel<<<blocks for n elements, 256 threads, stream s>>>; the kernel comes last because a
 * template's commas would split a macro argument. */
#define LAUNCH(n, s, ...) __VA_ARGS__<<<blocks_for(n), 256, 0, (cudaStream_t)(s)>>>

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
