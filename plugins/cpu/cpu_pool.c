/*
 * MaxPool and AveragePool and their gradients, any number of spatial dims (the 2-D ones with
 * vectorizable rows), work split over (image, channel) planes on the device's pool; the window
 * comes normalized from the host and is checked by cpu__read_window (cpu_cnn.c).
 */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Pools
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__pool_job {
    const cpu__win_t *w;
    uint32_t code, dtype;
    int64_t include_pad;
    const unsigned char *x;  /* forward input (MaxPool, MaxPoolGrad) */
    const unsigned char *dy; /* gradients: [planes, out...] */
    unsigned char *y;        /* forward output, or the gradient [planes, in...] */
    const struct cpu__pool2d *g2; /* the 2-D geometry when there are two spatial dims */
} cpu__pool_job_t;

static void cpu__put(uint32_t dtype, unsigned char *base, int64_t i, double v) {
    if (dtype == SES_DRV_DTYPE_F32)
        ((float *)(void *)base)[i] = (float)v;
    else
        ((double *)(void *)base)[i] = v;
}

/* One plane of a pool or pool gradient, any number of spatial dims (the 2-D ones below). */
static void cpu__pool_plane(const cpu__pool_job_t *j, int64_t plane) {
    const cpu__win_t *w = j->w;
    const uint32_t n = w->n;
    const int64_t in_base = plane * w->in_count, out_base = plane * w->out_count;
    int64_t o[CPU__SPATIAL_MAX] = {0};
    int64_t p = 0;

    do {
        int64_t kk[CPU__SPATIAL_MAX] = {0}, start[CPU__SPATIAL_MAX];
        int64_t valid = 0, padded = 0, best = -1;
        double acc = 0.0, best_v = -INFINITY;
        for (uint32_t i = 0; i < n; i++)
            start[i] = o[i] * w->s[i] - w->pb[i];
        /* First pass: reduce (forward, MaxPoolGrad's argmax) and count. */
        do {
            int64_t off = 0, inside = 1, in_pad = 1;
            for (uint32_t i = 0; i < n; i++) {
                const int64_t c = start[i] + kk[i] * w->d[i];
                inside &= c >= 0 && c < w->in[i];
                in_pad &= c >= -w->pb[i] && c < w->in[i] + w->pe[i];
                off = off * w->in[i] + c;
            }
            padded += in_pad;
            if (!inside)
                continue;
            valid++;
            if (j->code == CPU__OP_MAXPOOL || j->code == CPU__OP_MAXPOOLGRAD) {
                const double v = cpu__get(j->dtype, j->x, in_base + off);
                if (best < 0 || v > best_v || (isnan(v) && !isnan(best_v))) {
                    best_v = v;
                    best = off;
                }
            } else if (j->code == CPU__OP_AVGPOOL) {
                acc += cpu__get(j->dtype, j->x, in_base + off);
            }
        } while (cpu__next(kk, w->k, n));
        const int64_t divisor = j->include_pad ? padded : valid;
        switch (j->code) {
        case CPU__OP_MAXPOOL:
            cpu__put(j->dtype, j->y, out_base + p, best >= 0 ? best_v : -INFINITY);
            break;
        case CPU__OP_AVGPOOL:
            cpu__put(j->dtype, j->y, out_base + p, divisor ? acc / (double)divisor : NAN);
            break;
        case CPU__OP_MAXPOOLGRAD:
            if (best >= 0)
                cpu__put(j->dtype, j->y, in_base + best,
                         cpu__get(j->dtype, j->y, in_base + best) +
                             cpu__get(j->dtype, j->dy, out_base + p));
            break;
        default: { /* AveragePoolGrad: spread dy / divisor over the window's input elements */
            if (!divisor)
                break;
            const double g = cpu__get(j->dtype, j->dy, out_base + p) / (double)divisor;
            memset(kk, 0, sizeof kk);
            do {
                int64_t off = 0, inside = 1;
                for (uint32_t i = 0; i < n; i++) {
                    const int64_t c = start[i] + kk[i] * w->d[i];
                    inside &= c >= 0 && c < w->in[i];
                    off = off * w->in[i] + c;
                }
                if (inside)
                    cpu__put(j->dtype, j->y, in_base + off,
                             cpu__get(j->dtype, j->y, in_base + off) + g);
            } while (cpu__next(kk, w->k, n));
        }
        }
        p++;
    } while (cpu__next(o, w->out, n));
}

/*
 * The 2-D pools ([N, C, H, W]), the common case, at the tensor's own precision (f32 math for
 * f32). Per plane and output row, the kernel rows that fall inside the input are found once.
 * Along a row, the interior output columns [lo, hi) (those whose windows lie wholly inside the
 * input) are computed in one pass over the row per kernel tap, without bounds checks, which the
 * compiler vectorizes over the output columns; the border columns check each tap. Each output
 * element still meets its taps in the generic path's order (kernel rows, then columns), so a
 * max picks the same element, and f64 sums add in the same order as before. The geometry
 * (cpu__pool2d_t) is in cpu_internal.h and cpu_pool2d.c: the NCHWc16 pools share it.
 */

#define CPU__POOL2D_DEFINE(T, SUFFIX)                                                              \
    static void cpu__maxpool2d_##SUFFIX(const cpu__pool2d_t *g, const T *restrict x,              \
                                        T *restrict y) {                                           \
        for (int64_t oh = 0; oh < g->oh; oh++) {                                                   \
            T *restrict yr = y + oh * g->ow;                                                       \
            const int64_t r0 = oh * g->sh - g->ph;                                                 \
            for (int64_t ow = 0; ow < g->ow; ow++)                                                 \
                yr[ow] = (T)-INFINITY;                                                             \
            for (int64_t i = 0; i < g->kh; i++) {                                                  \
                const int64_t r = r0 + i * g->dh;                                                  \
                if (r < 0 || r >= g->h)                                                            \
                    continue;                                                                      \
                const T *restrict xr = x + r * g->w;                                               \
                for (int64_t ow = 0; ow < g->lo; ow++)                                             \
                    for (int64_t j = 0; j < g->kw; j++) {                                          \
                        const int64_t c = ow * g->sw - g->pw + j * g->dw;                          \
                        if (c >= 0 && c < g->w)                                                    \
                            yr[ow] = CPU__MAXNAN(yr[ow], xr[c]);                                   \
                    }                                                                              \
                for (int64_t j = 0; j < g->kw; j++) {                                              \
                    const int64_t off = j * g->dw - g->pw, sw = g->sw;                             \
                    if (sw == 1)                                                                   \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] = CPU__MAXNAN(yr[ow], xr[ow + off]);                            \
                    else if (sw == 2)                                                              \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] = CPU__MAXNAN(yr[ow], xr[2 * ow + off]);                        \
                    else                                                                           \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] = CPU__MAXNAN(yr[ow], xr[ow * sw + off]);                       \
                }                                                                                  \
                for (int64_t ow = g->hi; ow < g->ow; ow++)                                         \
                    for (int64_t j = 0; j < g->kw; j++) {                                          \
                        const int64_t c = ow * g->sw - g->pw + j * g->dw;                          \
                        if (c >= 0 && c < g->w)                                                    \
                            yr[ow] = CPU__MAXNAN(yr[ow], xr[c]);                                   \
                    }                                                                              \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static void cpu__avgpool2d_##SUFFIX(const cpu__pool2d_t *g, int64_t include_pad,              \
                                        const T *restrict x, T *restrict y) {                      \
        for (int64_t oh = 0; oh < g->oh; oh++) {                                                   \
            T *restrict yr = y + oh * g->ow;                                                       \
            const int64_t r0 = oh * g->sh - g->ph;                                                 \
            int64_t vh, ph;                                                                        \
            cpu__pool2d_count(r0, g->kh, g->dh, g->h, g->ph, g->peh, &vh, &ph);                    \
            for (int64_t ow = 0; ow < g->ow; ow++)                                                 \
                yr[ow] = 0;                                                                        \
            for (int64_t i = 0; i < g->kh; i++) {                                                  \
                const int64_t r = r0 + i * g->dh;                                                  \
                if (r < 0 || r >= g->h)                                                            \
                    continue;                                                                      \
                const T *restrict xr = x + r * g->w;                                               \
                for (int64_t ow = 0; ow < g->lo; ow++)                                             \
                    for (int64_t j = 0; j < g->kw; j++) {                                          \
                        const int64_t c = ow * g->sw - g->pw + j * g->dw;                          \
                        if (c >= 0 && c < g->w)                                                    \
                            yr[ow] += xr[c];                                                       \
                    }                                                                              \
                for (int64_t j = 0; j < g->kw; j++) {                                              \
                    const int64_t off = j * g->dw - g->pw, sw = g->sw;                             \
                    if (sw == 1)                                                                   \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] += xr[ow + off];                                                \
                    else if (sw == 2)                                                              \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] += xr[2 * ow + off];                                            \
                    else                                                                           \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] += xr[ow * sw + off];                                           \
                }                                                                                  \
                for (int64_t ow = g->hi; ow < g->ow; ow++)                                         \
                    for (int64_t j = 0; j < g->kw; j++) {                                          \
                        const int64_t c = ow * g->sw - g->pw + j * g->dw;                          \
                        if (c >= 0 && c < g->w)                                                    \
                            yr[ow] += xr[c];                                                       \
                    }                                                                              \
            }                                                                                      \
            /* An interior window has all kw columns inside the input, hence inside the pads. */   \
            const int64_t div_in = (include_pad ? ph : vh) * g->kw;                                \
            for (int64_t ow = 0; ow < g->ow; ow++) {                                               \
                int64_t div = div_in;                                                              \
                if (ow < g->lo || ow >= g->hi) {                                                   \
                    int64_t vw, pw;                                                                \
                    cpu__pool2d_count(ow * g->sw - g->pw, g->kw, g->dw, g->w, g->pw, g->pew, &vw,  \
                                      &pw);                                                        \
                    div = include_pad ? ph * pw : vh * vw;                                         \
                }                                                                                  \
                yr[ow] = div ? yr[ow] / (T)div : (T)NAN;                                           \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* MaxPoolGrad: dy onto the window's max (first on ties, the first NaN if any); AveragePool-  \
     * Grad (x NULL): dy / divisor spread over the window's input elements. dx starts at zero. */  \
    static void cpu__pool2d_grad_##SUFFIX(const cpu__pool2d_t *g, int64_t include_pad,           \
                                          const T *restrict x, const T *restrict dy,               \
                                          T *restrict dx) {                                        \
        for (int64_t oh = 0; oh < g->oh; oh++) {                                                   \
            const int64_t r0 = oh * g->sh - g->ph;                                                 \
            int64_t vh, ph;                                                                        \
            cpu__pool2d_count(r0, g->kh, g->dh, g->h, g->ph, g->peh, &vh, &ph);                    \
            for (int64_t ow = 0; ow < g->ow; ow++) {                                               \
                const int64_t c0 = ow * g->sw - g->pw;                                             \
                const T d = dy[oh * g->ow + ow];                                                   \
                if (x) {                                                                           \
                    int64_t best = -1;                                                             \
                    T best_v = (T)-INFINITY;                                                       \
                    for (int64_t i = 0; i < g->kh; i++) {                                          \
                        const int64_t r = r0 + i * g->dh;                                          \
                        if (r < 0 || r >= g->h)                                                    \
                            continue;                                                              \
                        for (int64_t j = 0; j < g->kw; j++) {                                      \
                            const int64_t c = c0 + j * g->dw;                                      \
                            if (c < 0 || c >= g->w)                                                \
                                continue;                                                          \
                            const T v = x[r * g->w + c];                                           \
                            if (best < 0 || v > best_v || (v != v && best_v == best_v)) {          \
                                best_v = v;                                                        \
                                best = r * g->w + c;                                               \
                            }                                                                      \
                        }                                                                          \
                    }                                                                              \
                    if (best >= 0)                                                                 \
                        dx[best] += d;                                                             \
                    continue;                                                                      \
                }                                                                                  \
                int64_t vw, pw;                                                                    \
                cpu__pool2d_count(c0, g->kw, g->dw, g->w, g->pw, g->pew, &vw, &pw);                \
                const int64_t div = include_pad ? ph * pw : vh * vw;                               \
                if (!div)                                                                          \
                    continue;                                                                      \
                const T share = d / (T)div;                                                        \
                for (int64_t i = 0; i < g->kh; i++) {                                              \
                    const int64_t r = r0 + i * g->dh;                                              \
                    if (r < 0 || r >= g->h)                                                        \
                        continue;                                                                  \
                    for (int64_t j = 0; j < g->kw; j++) {                                          \
                        const int64_t c = c0 + j * g->dw;                                          \
                        if (c >= 0 && c < g->w)                                                    \
                            dx[r * g->w + c] += share;                                             \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

CPU__POOL2D_DEFINE(float, f32)
CPU__POOL2D_DEFINE(double, f64)

/*
 * f32 MaxPool 2x2 with stride 2, no dilation and every window inside the input (VGG's, LeNet's
 * and the bench CNN's): each output is the max of its four taps in the order above (row 0's two,
 * then row 1's), one pass over the two input rows, which the compiler vectorizes as interleaved
 * loads. The generic 2-D loop makes four passes per output row and starts from -inf.
 */
static int cpu__maxpool2x2_fits(const cpu__pool2d_t *g) {
    return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->dh == 1 && g->dw == 1 &&
           g->ph == 0 && g->pw == 0 && 2 * g->oh <= g->h && 2 * g->ow <= g->w;
}

static void cpu__maxpool2x2_f32(const cpu__pool2d_t *g, const float *restrict x,
                                float *restrict y) {
    for (int64_t oh = 0; oh < g->oh; oh++) {
        const float *restrict a = x + 2 * oh * g->w;
        const float *restrict b = a + g->w;
        float *restrict yr = y + oh * g->ow;
        for (int64_t ow = 0; ow < g->ow; ow++) {
            float m = a[2 * ow];
            m = CPU__MAXNAN(m, a[2 * ow + 1]);
            m = CPU__MAXNAN(m, b[2 * ow]);
            yr[ow] = CPU__MAXNAN(m, b[2 * ow + 1]);
        }
    }
}

/* One plane of a 2-D pool or pool gradient. */
static void cpu__pool2d_plane(const cpu__pool_job_t *j, int64_t plane) {
    const cpu__pool2d_t *g = j->g2;
    const int64_t in_off = plane * g->h * g->w, out_off = plane * g->oh * g->ow;
    const int f32 = j->dtype == SES_DRV_DTYPE_F32;
    const void *x = j->x, *dy = j->dy;
    void *y = j->y;

#define CPU__AT(p, T, off) ((p) ? (T *)(void *)(p) + (off) : NULL)
    switch (j->code) {
    case CPU__OP_MAXPOOL:
        if (f32 && cpu__maxpool2x2_fits(g))
            cpu__maxpool2x2_f32(g, CPU__AT(x, const float, in_off), CPU__AT(y, float, out_off));
        else if (f32)
            cpu__maxpool2d_f32(g, CPU__AT(x, const float, in_off), CPU__AT(y, float, out_off));
        else
            cpu__maxpool2d_f64(g, CPU__AT(x, const double, in_off), CPU__AT(y, double, out_off));
        break;
    case CPU__OP_AVGPOOL:
        if (f32)
            cpu__avgpool2d_f32(g, j->include_pad, CPU__AT(x, const float, in_off),
                               CPU__AT(y, float, out_off));
        else
            cpu__avgpool2d_f64(g, j->include_pad, CPU__AT(x, const double, in_off),
                               CPU__AT(y, double, out_off));
        break;
    default: /* the gradients: x is NULL for AveragePoolGrad */
        if (j->code != CPU__OP_MAXPOOLGRAD)
            x = NULL;
        if (f32)
            cpu__pool2d_grad_f32(g, j->include_pad, CPU__AT(x, const float, in_off),
                                 CPU__AT(dy, const float, out_off), CPU__AT(y, float, in_off));
        else
            cpu__pool2d_grad_f64(g, j->include_pad, CPU__AT(x, const double, in_off),
                                 CPU__AT(dy, const double, out_off), CPU__AT(y, double, in_off));
    }
#undef CPU__AT
}

static void cpu__pool_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__pool_job_t *j = ctx;

    for (uint64_t plane = begin; plane < end; plane++) {
        if (j->g2)
            cpu__pool2d_plane(j, (int64_t)plane);
        else
            cpu__pool_plane(j, (int64_t)plane);
    }
}

/* MaxPool, AveragePool (input X) and MaxPoolGrad (dy, X), AveragePoolGrad (dy). */
int32_t cpu__pool(const cpu__call_t *call) {
    const uint32_t code = call->spec->code;
    const int grad = code == CPU__OP_MAXPOOLGRAD || code == CPU__OP_AVGPOOLGRAD;
    const cpu__tensor_t *out = &call->outs[0];
    /* The forward pool's input and output shapes. */
    const cpu__tensor_t *fx = grad ? out : &call->in[0];
    const cpu__tensor_t *fy = grad ? &call->in[0] : out;
    cpu__pool_job_t j;
    cpu__win_t w;
    char a[96], b[96];
    int32_t st;

    if ((st = cpu__read_window(call, fx, fy, &w)) != SES_DRV_OK)
        return st;
    if (fx->dims[1] != fy->dims[1] ||
        (code == CPU__OP_MAXPOOLGRAD && !cpu__same_shape(&call->in[1], out)))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "channels differ: the pool's input is %s, its output %s",
                              cpu__format_dims(fx->dims, fx->rank, a, sizeof a),
                              cpu__format_dims(fy->dims, fy->rank, b, sizeof b));
    memset(&j, 0, sizeof j);
    j.w = &w;
    j.code = code;
    j.dtype = out->dtype;
    if (code == CPU__OP_AVGPOOL || code == CPU__OP_AVGPOOLGRAD)
        if ((st = cpu__attr_int(call, "count_include_pad", 1, 0, &j.include_pad)) != SES_DRV_OK)
            return st;
    j.x = code == CPU__OP_MAXPOOLGRAD ? call->in[1].data : call->in[0].data;
    j.dy = grad ? call->in[0].data : NULL;
    j.y = out->data;
    if (grad)
        cpu__zero(out);
    if (fy->count == 0)
        return SES_DRV_OK;
    cpu__pool2d_t g2;
    if (w.n == 2) {
        cpu__pool2d_init(&w, &g2);
        j.g2 = &g2;
    }
    cpu__parallel(call, (uint64_t)(fx->dims[0] * fx->dims[1]), (uint64_t)(w.out_count * w.k_count),
                  cpu__pool_task, &j);
    return SES_DRV_OK;
}
