/*
 * The geometry of 2-D pools (cpu__pool2d_t) and the rows of the NCHWc16 pools: leaf code, which
 * calls nothing else of the driver, shared by the plain pools (cpu_pool.c), NchwcMaxPool and
 * NchwcAveragePool (cpu_nchwc.c) and the max pool fused into NchwcConv (cpu_conv_slices.c).
 *
 * An NCHWc16 row runs over the 16 channels of a block innermost: 16 contiguous floats, one
 * AVX-512 vector (the _avx512 rows where the CPU has it, else the x86-64-v4 clone of the plain
 * loops, CPU__ISA_CLONES), so a window's tap is one vector max or add. Each output is computed
 * in MaxPool's and AveragePool's tap order (kernel rows, then columns) with the same
 * arithmetic, so the values are theirs bit for bit, NaN included (CPU__MAXNAN).
 */
#include <math.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CPU__NCHWC_AVX512 1
#endif

#include "cpu_internal.h"

/* Channels per block, the layout's last dim. */
#define CPU__NB 16

/* The interior columns: ow * sw - pw >= 0 and ow * sw - pw + (kw - 1) * dw < w. */
void cpu__pool2d_init(const cpu__win_t *w, cpu__pool2d_t *g) {
    g->h = w->in[0], g->w = w->in[1], g->oh = w->out[0], g->ow = w->out[1];
    g->kh = w->k[0], g->kw = w->k[1], g->sh = w->s[0], g->sw = w->s[1];
    g->dh = w->d[0], g->dw = w->d[1], g->ph = w->pb[0], g->pw = w->pb[1];
    g->peh = w->pe[0], g->pew = w->pe[1];
    const int64_t last = g->w - 1 - (g->kw - 1) * g->dw + g->pw; /* ow * sw <= last */
    g->lo = (g->pw + g->sw - 1) / g->sw;
    g->hi = last < 0 ? 0 : last / g->sw + 1;
    if (g->lo > g->ow)
        g->lo = g->ow;
    if (g->hi > g->ow)
        g->hi = g->ow;
    if (g->hi < g->lo)
        g->hi = g->lo;
}

void cpu__pool2d_count(int64_t start, int64_t k, int64_t d, int64_t n, int64_t pb, int64_t pe,
                       int64_t *out_valid, int64_t *out_padded) {
    int64_t valid = 0, padded = 0;
    for (int64_t i = 0; i < k; i++) {
        const int64_t c = start + i * d;
        valid += c >= 0 && c < n;
        padded += c >= -pb && c < n + pe;
    }
    *out_valid = valid;
    *out_padded = padded;
}

/* Output row @p oh of one plane: @p x the plane's input, @p y the row's output. */
CPU__ISA_CLONES static void cpu__nchwc_maxpool_row(const cpu__pool2d_t *g, const float *restrict x,
                                                   float *restrict y, int64_t oh) {
    const int64_t r0 = oh * g->sh - g->ph;

    for (int64_t ow = 0; ow < g->ow; ow++) {
        const int64_t c0 = ow * g->sw - g->pw;
        float acc[CPU__NB];
        for (int l = 0; l < CPU__NB; l++)
            acc[l] = -INFINITY;
        for (int64_t i = 0; i < g->kh; i++) {
            const int64_t r = r0 + i * g->dh;
            if (r < 0 || r >= g->h)
                continue;
            for (int64_t j = 0; j < g->kw; j++) {
                const int64_t c = c0 + j * g->dw;
                if (c < 0 || c >= g->w)
                    continue;
                const float *restrict t = x + (r * g->w + c) * CPU__NB;
                for (int l = 0; l < CPU__NB; l++)
                    acc[l] = CPU__MAXNAN(acc[l], t[l]);
            }
        }
        for (int l = 0; l < CPU__NB; l++)
            y[ow * CPU__NB + l] = acc[l];
    }
}

/* AveragePool's row: the sum in MaxPool's tap order from 0, then one division by the count of
 * taps inside the input (or inside the pads, with count_include_pad), as cpu_cnn.c does. */
CPU__ISA_CLONES static void cpu__nchwc_avgpool_row(const cpu__pool2d_t *g, int64_t include_pad,
                                                   const float *restrict x, float *restrict y,
                                                   int64_t oh) {
    const int64_t r0 = oh * g->sh - g->ph;
    int64_t vh, ph;

    cpu__pool2d_count(r0, g->kh, g->dh, g->h, g->ph, g->peh, &vh, &ph);
    for (int64_t ow = 0; ow < g->ow; ow++) {
        const int64_t c0 = ow * g->sw - g->pw;
        float acc[CPU__NB];
        for (int l = 0; l < CPU__NB; l++)
            acc[l] = 0.0f;
        for (int64_t i = 0; i < g->kh; i++) {
            const int64_t r = r0 + i * g->dh;
            if (r < 0 || r >= g->h)
                continue;
            for (int64_t j = 0; j < g->kw; j++) {
                const int64_t c = c0 + j * g->dw;
                if (c < 0 || c >= g->w)
                    continue;
                const float *restrict t = x + (r * g->w + c) * CPU__NB;
                for (int l = 0; l < CPU__NB; l++)
                    acc[l] += t[l];
            }
        }
        int64_t vw, pw;
        cpu__pool2d_count(c0, g->kw, g->dw, g->w, g->pw, g->pew, &vw, &pw);
        const int64_t div = include_pad ? ph * pw : vh * vw;
        for (int l = 0; l < CPU__NB; l++)
            y[ow * CPU__NB + l] = div ? acc[l] / (float)div : NAN;
    }
}

#ifdef CPU__NCHWC_AVX512
/*
 * The rows above with AVX-512 intrinsics, one block of 16 channels per register, chosen at run
 * time where the CPU has AVX-512F (where NchwcConv runs, so where blocked values exist). GCC 12
 * does not vectorize the 16-lane loops above around CPU__MAXNAN's NaN test, not even in the
 * x86-64-v4 clone: the max pool ran a vucomiss and a branch per float, 20% of squeezenet's
 * time at 1 thread. Same taps in the same order, same arithmetic: the same bits.
 */
__attribute__((target("avx512f"))) static void cpu__nchwc_maxpool_row_avx512(
    const cpu__pool2d_t *g, const float *restrict x, float *restrict y, int64_t oh) {
    const int64_t r0 = oh * g->sh - g->ph;

    for (int64_t ow = 0; ow < g->ow; ow++) {
        const int64_t c0 = ow * g->sw - g->pw;
        __m512 acc = _mm512_set1_ps(-INFINITY);
        for (int64_t i = 0; i < g->kh; i++) {
            const int64_t r = r0 + i * g->dh;
            if (r < 0 || r >= g->h)
                continue;
            for (int64_t j = 0; j < g->kw; j++) {
                const int64_t c = c0 + j * g->dw;
                if (c < 0 || c >= g->w)
                    continue;
                const __m512 v = _mm512_loadu_ps(x + (r * g->w + c) * CPU__NB);
                /* CPU__MAXNAN: v where v > acc or v is NaN */
                const __mmask16 take =
                    _mm512_cmp_ps_mask(v, acc, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
                acc = _mm512_mask_blend_ps(take, acc, v);
            }
        }
        _mm512_storeu_ps(y + ow * CPU__NB, acc);
    }
}

__attribute__((target("avx512f"))) static void cpu__nchwc_avgpool_row_avx512(
    const cpu__pool2d_t *g, int64_t include_pad, const float *restrict x, float *restrict y,
    int64_t oh) {
    const int64_t r0 = oh * g->sh - g->ph;
    int64_t vh, ph;

    cpu__pool2d_count(r0, g->kh, g->dh, g->h, g->ph, g->peh, &vh, &ph);
    for (int64_t ow = 0; ow < g->ow; ow++) {
        const int64_t c0 = ow * g->sw - g->pw;
        __m512 acc = _mm512_setzero_ps();
        for (int64_t i = 0; i < g->kh; i++) {
            const int64_t r = r0 + i * g->dh;
            if (r < 0 || r >= g->h)
                continue;
            for (int64_t j = 0; j < g->kw; j++) {
                const int64_t c = c0 + j * g->dw;
                if (c >= 0 && c < g->w)
                    acc = _mm512_add_ps(acc, _mm512_loadu_ps(x + (r * g->w + c) * CPU__NB));
            }
        }
        int64_t vw, pw;
        cpu__pool2d_count(c0, g->kw, g->dw, g->w, g->pw, g->pew, &vw, &pw);
        const int64_t div = include_pad ? ph * pw : vh * vw;
        _mm512_storeu_ps(y + ow * CPU__NB, div ? _mm512_div_ps(acc, _mm512_set1_ps((float)div))
                                               : _mm512_set1_ps(NAN));
    }
}
#endif

void cpu__nchwc_pool_rows(const cpu__pool2d_t *g, int max, int64_t include_pad, const float *x,
                          float *y, uint64_t begin, uint64_t end) {
#ifdef CPU__NCHWC_AVX512
    const int avx512 = __builtin_cpu_supports("avx512f");
#endif

    for (uint64_t item = begin; item < end; item++) {
        const int64_t plane = (int64_t)item / g->oh, oh = (int64_t)item % g->oh;
        const float *xp = x + plane * g->h * g->w * CPU__NB;
        float *yr = y + (plane * g->oh + oh) * g->ow * CPU__NB;
#ifdef CPU__NCHWC_AVX512
        if (avx512 && max) {
            cpu__nchwc_maxpool_row_avx512(g, xp, yr, oh);
            continue;
        }
        if (avx512) {
            cpu__nchwc_avgpool_row_avx512(g, include_pad, xp, yr, oh);
            continue;
        }
#endif
        if (max)
            cpu__nchwc_maxpool_row(g, xp, yr, oh);
        else
            cpu__nchwc_avgpool_row(g, include_pad, xp, yr, oh);
    }
}
