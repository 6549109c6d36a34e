/*
 * Resize, ResizeGrad and GridSample (general entries, f32 and f64; Resize's nearest also i8, u8,
 * i32 and i64, a copy of each element), with the attributes the host
 * normalized (libsession/src/ops/resize.c): Resize's mode, coord, nearest_mode, cubic_coeff_a,
 * exclude_outside, extrapolation_value, and per axis scales, lengths and roi.
 *
 * Resize is separable: along each axis an output index reads at most 4 input indices with
 * weights (nearest 1, linear 2, cubic 4), worked out from the output index alone, and an output
 * element is the sum over the product of its axes' taps. The kernel walks the output in
 * row-major order and recomputes an axis's taps only when that axis's index moves. ResizeGrad
 * walks the same taps and adds dY's elements, weighted, onto dX.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* libsession/src/ops/resize.c's codes. */
enum { RZ_NEAREST = 0, RZ_LINEAR = 1, RZ_CUBIC = 2 };
enum {
    RZ_HALF_PIXEL = 0,
    RZ_HALF_PIXEL_SYMMETRIC = 1,
    RZ_PYTORCH_HALF_PIXEL = 2,
    RZ_ALIGN_CORNERS = 3,
    RZ_ASYMMETRIC = 4,
    RZ_TF_HALF_PIXEL_FOR_NN = 5,
    RZ_TF_CROP_AND_RESIZE = 6,
};
enum { RZ_ROUND_PREFER_FLOOR = 0, RZ_ROUND_PREFER_CEIL = 1, RZ_FLOOR = 2, RZ_CEIL = 3 };

/* One Resize node's parameters, with X's and Y's dims. */
typedef struct cpu__rz {
    uint32_t rank;
    int64_t mode, coord, nearest, exclude, antialias;
    double cubic_a, extrapolation;
    int64_t in[CPU__MAX_RANK], out[CPU__MAX_RANK];
    double scales[CPU__MAX_RANK], lengths[CPU__MAX_RANK], roi[2 * CPU__MAX_RANK];
} cpu__rz_t;

/* The most taps along one axis: 4 (cubic) without antialias; with it, 2 ceil(1 / scale) for
 * linear and 2 ceil(2 / scale) for cubic, which the host bounds by this (RESIZE_MAX_TAPS). */
#define CPU__RZ_MAX_TAPS 64

/* An axis's taps at one output index: n input indices and weights; n < 0: extrapolate. */
typedef struct cpu__rz_taps {
    int n;
    int64_t idx[CPU__RZ_MAX_TAPS];
    double w[CPU__RZ_MAX_TAPS];
} cpu__rz_taps_t;

static int32_t cpu__rz_floats(const cpu__call_t *call, const char *key, double *out,
                              uint32_t want) {
    uint32_t n = 0;
    int32_t st = cpu__attr_floats(call, key, out, want, &n);
    if (st != SES_DRV_OK)
        return st;
    if (n != want)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute %s holds %" PRIu32 " values; X's rank needs %" PRIu32, key,
                              n, want);
    return SES_DRV_OK;
}

/* Reads the attributes and checks @p x (X) against @p y (Y): same rank, and an axis of Y not
 * empty only where X's is not. */
static int32_t cpu__rz_read(const cpu__call_t *call, const cpu__tensor_t *x, const cpu__tensor_t *y,
                            cpu__rz_t *p) {
    int32_t st;

    if ((st = cpu__check_rank(call, "X", x)) != SES_DRV_OK)
        return st;
    if (x->rank != y->rank)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "X has rank %" PRIu32 " and Y rank %" PRIu32 "; they must agree",
                              x->rank, y->rank);
    memset(p, 0, sizeof *p);
    p->rank = x->rank;
    if ((st = cpu__attr_int(call, "mode", 0, 0, &p->mode)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "coord", 0, 0, &p->coord)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "nearest_mode", 1, 0, &p->nearest)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "exclude_outside", 1, 0, &p->exclude)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "antialias", 1, 0, &p->antialias)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "cubic_coeff_a", -0.75, &p->cubic_a)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "extrapolation_value", 0.0, &p->extrapolation)) != SES_DRV_OK ||
        (st = cpu__rz_floats(call, "scales", p->scales, p->rank)) != SES_DRV_OK ||
        (st = cpu__rz_floats(call, "lengths", p->lengths, p->rank)) != SES_DRV_OK ||
        (st = cpu__rz_floats(call, "roi", p->roi, 2 * p->rank)) != SES_DRV_OK)
        return st;
    if (p->mode < RZ_NEAREST || p->mode > RZ_CUBIC || p->coord < RZ_HALF_PIXEL ||
        p->coord > RZ_TF_CROP_AND_RESIZE || p->nearest < 0 || p->nearest > RZ_CEIL)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "mode %" PRId64 ", coord %" PRId64 " or nearest_mode %" PRId64
                              " is out of range",
                              p->mode, p->coord, p->nearest);
    for (uint32_t d = 0; d < p->rank; d++) {
        p->in[d] = x->dims[d];
        p->out[d] = y->dims[d];
        if (p->out[d] > 0 && (p->in[d] == 0 || !(p->scales[d] > 0.0)))
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "axis %" PRIu32 ": Y has %" PRId64 " elements but X %" PRId64
                                  " (scale %g)",
                                  d, p->out[d], p->in[d], p->scales[d]);
        const double reach = p->mode == RZ_LINEAR ? 1.0 : 2.0;
        if (p->antialias && p->mode != RZ_NEAREST && p->out[d] > 0 && p->scales[d] < 1.0 &&
            2.0 * ceil(reach / p->scales[d]) > CPU__RZ_MAX_TAPS)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "antialias: axis %" PRIu32 " shrinks by %g, beyond %d taps", d,
                                  p->scales[d], CPU__RZ_MAX_TAPS);
    }
    return SES_DRV_OK;
}

static int64_t cpu__rz_clamp(int64_t i, int64_t n) {
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* The cubic convolution kernel at distance @p s (0 <= s <= 2) with coefficient @p a. */
static double cpu__rz_cubic(double s, double a) {
    if (s <= 1.0)
        return ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0;
    return ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a;
}

/* Axis @p d's taps at output index @p o. */
static void cpu__rz_axis(const cpu__rz_t *p, uint32_t d, int64_t o, cpu__rz_taps_t *t) {
    const double in = (double)p->in[d], s = p->scales[d], len = p->lengths[d];
    const double xo = (double)o;
    double x;

    switch (p->coord) {
    case RZ_HALF_PIXEL_SYMMETRIC: {
        const double adjustment = (double)p->out[d] / (s * in);
        const double center = in / 2.0;
        x = center * (1.0 - adjustment) + (xo + 0.5) / s - 0.5;
        break;
    }
    case RZ_PYTORCH_HALF_PIXEL: x = len > 1.0 ? (xo + 0.5) / s - 0.5 : 0.0; break;
    case RZ_ALIGN_CORNERS: x = len == 1.0 ? 0.0 : xo * (in - 1.0) / (len - 1.0); break;
    case RZ_ASYMMETRIC: x = xo / s; break;
    case RZ_TF_HALF_PIXEL_FOR_NN: x = (xo + 0.5) / s; break;
    case RZ_TF_CROP_AND_RESIZE: {
        const double start = p->roi[d], end = p->roi[p->rank + d];
        if (len == 1.0)
            x = (end - start) * (in - 1.0) / 2.0;
        else
            x = xo * (end - start) * (in - 1.0) / (len - 1.0);
        x += start * (in - 1.0);
        if (!(x >= 0.0 && x <= in - 1.0)) { /* NaN too: the host checks roi, not every sum */
            t->n = -1;
            return;
        }
        break;
    }
    default: x = (xo + 0.5) / s - 0.5; break;
    }

    const double f = floor(x), r = x - f;
    const int64_t i = (int64_t)f, n = p->in[d];
    if (p->mode == RZ_NEAREST) {
        int64_t k = i;
        if (r > 0.0) {
            switch (p->nearest) {
            case RZ_ROUND_PREFER_CEIL: k = r < 0.5 ? i : i + 1; break;
            case RZ_FLOOR: k = i; break;
            case RZ_CEIL: k = i + 1; break;
            default: k = r <= 0.5 ? i : i + 1; break;
            }
        }
        t->n = 1;
        t->idx[0] = cpu__rz_clamp(k, n);
        t->w[0] = 1.0;
        return;
    }
    int64_t first;
    int count;
    double w[CPU__RZ_MAX_TAPS];
    if (p->antialias && s < 1.0) {
        /* The filter stretched by 1 / s: taps at offsets 1 - k .. k from floor(x), weighed at
         * their distance times s, then normalized. */
        const double reach = p->mode == RZ_LINEAR ? 1.0 : 2.0;
        const int k = (int)ceil(reach / s);
        double sum = 0.0;
        first = i + 1 - k;
        count = 2 * k;
        for (int j = 0; j < count; j++) {
            const double a = fabs(((double)(j + 1 - k) - r) * s);
            w[j] = p->mode == RZ_LINEAR ? fmax(0.0, 1.0 - a)
                   : a < 2.0            ? cpu__rz_cubic(a, p->cubic_a)
                                        : 0.0;
            if (p->exclude && (first + j < 0 || first + j >= n))
                w[j] = 0.0;
            sum += w[j];
        }
        for (int j = 0; j < count && sum != 0.0; j++)
            w[j] /= sum;
    } else if (p->mode == RZ_LINEAR) {
        first = i;
        count = 2;
        w[0] = 1.0 - r;
        w[1] = r;
    } else {
        first = i - 1;
        count = 4;
        w[0] = cpu__rz_cubic(r + 1.0, p->cubic_a);
        w[1] = cpu__rz_cubic(r, p->cubic_a);
        w[2] = cpu__rz_cubic(1.0 - r, p->cubic_a);
        w[3] = cpu__rz_cubic(2.0 - r, p->cubic_a);
        if (p->exclude) {
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
        t->idx[t->n] = cpu__rz_clamp(first + k, n);
        t->w[t->n] = w[k];
        t->n++;
    }
}

static double cpu__rz_load(const unsigned char *base, int64_t i, int f64) {
    return f64 ? ((const double *)(const void *)base)[i] : ((const float *)(const void *)base)[i];
}

/*
 * Every axis's taps, worked out once per launch: for axis d and output index o, cnt[d][o] taps
 * (-1: outside, extrapolate) at idx[d][o * t + k] with weights w[d][o * t + k], t = max[d].
 */
typedef struct cpu__rz_table {
    int max[CPU__MAX_RANK];
    int *cnt[CPU__MAX_RANK];
    int64_t *idx[CPU__MAX_RANK];
    double *w[CPU__MAX_RANK];
    void *block;
} cpu__rz_table_t;

static int32_t cpu__rz_table(const cpu__call_t *call, const cpu__rz_t *p, cpu__rz_table_t *t) {
    size_t bytes = 0;
    cpu__rz_taps_t taps;

    memset(t, 0, sizeof *t);
    for (uint32_t d = 0; d < p->rank; d++) {
        const double reach = p->mode == RZ_LINEAR ? 1.0 : 2.0;
        t->max[d] = p->mode == RZ_NEAREST ? 1
                    : p->antialias && p->scales[d] > 0.0 && p->scales[d] < 1.0
                        ? (int)(2.0 * ceil(reach / p->scales[d]))
                        : (int)(2.0 * reach);
        bytes += (size_t)p->out[d] * (sizeof(int) + (size_t)t->max[d] * 16u);
    }
    t->block = malloc(bytes ? bytes : 1);
    if (!t->block)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "no memory for %zu bytes of taps",
                              bytes);
    /* Doubles and int64s first, then the counts: each part stays aligned. */
    unsigned char *at = t->block;
    for (uint32_t d = 0; d < p->rank; d++) {
        t->w[d] = (double *)(void *)at;
        at += (size_t)p->out[d] * (size_t)t->max[d] * 8u;
        t->idx[d] = (int64_t *)(void *)at;
        at += (size_t)p->out[d] * (size_t)t->max[d] * 8u;
    }
    for (uint32_t d = 0; d < p->rank; d++) {
        t->cnt[d] = (int *)(void *)at;
        at += (size_t)p->out[d] * sizeof(int);
    }
    for (uint32_t d = 0; d < p->rank; d++)
        for (int64_t o = 0; o < p->out[d]; o++) {
            cpu__rz_axis(p, d, o, &taps);
            t->cnt[d][o] = taps.n;
            for (int k = 0; k < taps.n; k++) {
                t->idx[d][o * t->max[d] + k] = taps.idx[k];
                t->w[d][o * t->max[d] + k] = taps.w[k];
            }
        }
    return SES_DRV_OK;
}

/* What a walk over Y's rows (the last axis) does: Resize reads X, ResizeGrad writes dX. */
typedef struct cpu__rz_walk {
    const cpu__rz_t *p;
    const cpu__rz_table_t *t;
    const unsigned char *src; /* Resize: X; ResizeGrad: dY */
    unsigned char *dst;       /* Resize: Y; ResizeGrad: dX */
    int f64;
    int grad;
    size_t esize;
    unsigned char fill[8]; /* extrapolation_value in Y's dtype */
    size_t max_combos;     /* the product of the taps of every axis but the last */
    /* Room for max_combos combinations when they exceed CPU__RZ_COMBOS (one thread then) */
    int64_t *heap_off;
    double *heap_w;
} cpu__rz_walk_t;

/* The outer tap combinations a task keeps on its stack; more run on one thread from the heap. */
#define CPU__RZ_COMBOS 256

/*
 * The outer taps of row @p row (Y's index over every axis but the last): each combination of one
 * tap per outer axis, as the offset of an X row (in rows) and the product of the weights. Returns
 * their count, or -1 when an outer axis is outside.
 */
static int64_t cpu__rz_combos(const cpu__rz_walk_t *c, uint64_t row, int64_t *off, double *w) {
    const cpu__rz_t *p = c->p;
    const cpu__rz_table_t *t = c->t;
    int64_t pos[CPU__MAX_RANK], n = 1;

    for (uint32_t d = p->rank - 1; d-- > 0;) {
        pos[d] = (int64_t)(row % (uint64_t)p->out[d]);
        row /= (uint64_t)p->out[d];
    }
    off[0] = 0;
    w[0] = 1.0;
    for (uint32_t d = 0; d + 1 < p->rank; d++) {
        const int m = t->cnt[d][pos[d]];
        const int64_t *idx = t->idx[d] + pos[d] * t->max[d];
        const double *wd = t->w[d] + pos[d] * t->max[d];
        if (m < 0)
            return -1;
        /* Expand in place from the back: entry j becomes entries j * m .. j * m + m - 1. */
        for (int64_t j = n; j-- > 0;)
            for (int k = m; k-- > 0;) {
                off[j * m + k] = off[j] * p->in[d] + idx[k];
                w[j * m + k] = w[j] * wd[k];
            }
        n *= m;
    }
    return n;
}

/* Resize's float rows [begin, end), T the element type. */
#define CPU__RZ_ROWS(T)                                       \
    do {                                                      \
        const T *x = (const T *)(const void *)c->src;         \
        for (uint64_t row = begin; row < end; row++) {        \
            T *y = (T *)(void *)c->dst + row * (uint64_t)ol;  \
            const int64_t n = cpu__rz_combos(c, row, off, w); \
            for (int64_t o = 0; o < ol; o++) {                \
                const int m = cnt[o];                         \
                if (n < 0 || m < 0) {                         \
                    y[o] = (T)p->extrapolation;               \
                    continue;                                 \
                }                                             \
                const int64_t *ix = idx + o * tmax;           \
                const double *wx = wl + o * tmax;             \
                double v = 0.0;                               \
                for (int64_t j = 0; j < n; j++) {             \
                    const T *xr = x + off[j] * il;            \
                    double r = 0.0;                           \
                    for (int k = 0; k < m; k++)               \
                        r += wx[k] * (double)xr[ix[k]];       \
                    v += w[j] * r;                            \
                }                                             \
                y[o] = (T)v;                                  \
            }                                                 \
        }                                                     \
    } while (0)

/* Resize's nearest rows, elements of T copied. */
#define CPU__RZ_COPY(T)                                         \
    do {                                                        \
        const T *x = (const T *)(const void *)c->src;           \
        T fill;                                                 \
        memcpy(&fill, c->fill, sizeof fill);                    \
        for (uint64_t row = begin; row < end; row++) {          \
            T *y = (T *)(void *)c->dst + row * (uint64_t)ol;    \
            const int64_t n = cpu__rz_combos(c, row, off, w);   \
            const T *xr = x + (n < 0 ? 0 : off[0] * il);        \
            for (int64_t o = 0; o < ol; o++)                    \
                y[o] = n < 0 || cnt[o] < 0 ? fill : xr[idx[o]]; \
        }                                                       \
    } while (0)

static void cpu__rz_run(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__rz_walk_t *c = ctx;
    const cpu__rz_t *p = c->p;
    const uint32_t last = p->rank - 1;
    const int64_t ol = p->out[last], il = p->in[last];
    const int tmax = c->t->max[last];
    const int *cnt = c->t->cnt[last];
    const int64_t *idx = c->t->idx[last];
    const double *wl = c->t->w[last];
    int64_t off_stack[CPU__RZ_COMBOS];
    double w_stack[CPU__RZ_COMBOS];
    int64_t *off = c->heap_off ? c->heap_off : off_stack;
    double *w = c->heap_w ? c->heap_w : w_stack;

    if (begin >= end)
        return;
    if (p->mode == RZ_NEAREST) {
        switch (c->esize) {
        case 1: CPU__RZ_COPY(uint8_t); break;
        case 2: CPU__RZ_COPY(uint16_t); break;
        case 4: CPU__RZ_COPY(uint32_t); break;
        default: CPU__RZ_COPY(uint64_t); break;
        }
    } else if (c->f64) {
        CPU__RZ_ROWS(double);
    } else {
        CPU__RZ_ROWS(float);
    }
}

/* ResizeGrad over every dY row, on one thread: rows share the dX elements they add onto. */
static void cpu__rz_grad_run(const cpu__rz_walk_t *c, int64_t *off, double *w) {
    const cpu__rz_t *p = c->p;
    const uint32_t last = p->rank - 1;
    const int64_t ol = p->out[last], il = p->in[last];
    const int tmax = c->t->max[last];
    uint64_t rows = 1;

    for (uint32_t d = 0; d < last; d++)
        rows *= (uint64_t)p->out[d];
    for (uint64_t row = 0; row < rows; row++) {
        const int64_t n = cpu__rz_combos(c, row, off, w);
        if (n < 0)
            continue;
        for (int64_t o = 0; o < ol; o++) {
            const int m = c->t->cnt[last][o];
            const double g = cpu__rz_load(c->src, (int64_t)row * ol + o, c->f64);
            for (int64_t j = 0; j < n; j++)
                for (int k = 0; k < m; k++) {
                    const int64_t at = off[j] * il + c->t->idx[last][o * tmax + k];
                    const double v = g * w[j] * c->t->w[last][o * tmax + k];
                    if (c->f64)
                        ((double *)(void *)c->dst)[at] += v;
                    else
                        ((float *)(void *)c->dst)[at] += (float)v;
                }
        }
    }
}

/* extrapolation_value in @p dtype (integers: truncated and saturated) into c->fill. */
static void cpu__rz_fill(cpu__rz_walk_t *c, uint32_t dtype, double v) {
    const double lo = dtype == SES_DRV_DTYPE_I8    ? -128.0
                      : dtype == SES_DRV_DTYPE_U8  ? 0.0
                      : dtype == SES_DRV_DTYPE_I32 ? -2147483648.0
                                                   : -9.2e18;
    const double hi = dtype == SES_DRV_DTYPE_I8    ? 127.0
                      : dtype == SES_DRV_DTYPE_U8  ? 255.0
                      : dtype == SES_DRV_DTYPE_I32 ? 2147483647.0
                                                   : 9.2e18;
    const double t = v != v ? 0.0 : fmin(hi, fmax(lo, v));
    switch (dtype) {
    case SES_DRV_DTYPE_F32: {
        const float f = (float)v;
        memcpy(c->fill, &f, 4);
        break;
    }
    case SES_DRV_DTYPE_F64: memcpy(c->fill, &v, 8); break;
    case SES_DRV_DTYPE_I8: {
        const int8_t i = (int8_t)t;
        memcpy(c->fill, &i, 1);
        break;
    }
    case SES_DRV_DTYPE_U8: {
        const uint8_t u = (uint8_t)t;
        memcpy(c->fill, &u, 1);
        break;
    }
    case SES_DRV_DTYPE_I32: {
        const int32_t i = (int32_t)t;
        memcpy(c->fill, &i, 4);
        break;
    }
    default: {
        const int64_t i = (int64_t)t;
        memcpy(c->fill, &i, 8);
        break;
    }
    }
}

/* The walk of @p p over src and dst with its tap table; the table's memory is the caller's to
 * free (table->block) on success. */
static int32_t cpu__rz_walk(const cpu__call_t *call, const cpu__rz_t *p, cpu__rz_table_t *table,
                            const cpu__tensor_t *src, const cpu__tensor_t *dst, int grad,
                            cpu__rz_walk_t *c) {
    int32_t st = cpu__rz_table(call, p, table);
    if (st != SES_DRV_OK)
        return st;
    memset(c, 0, sizeof *c);
    c->p = p;
    c->t = table;
    c->src = src->data;
    c->dst = dst->data;
    c->f64 = src->dtype == SES_DRV_DTYPE_F64;
    c->grad = grad;
    c->esize = src->esize;
    c->max_combos = 1;
    for (uint32_t d = 0; d + 1 < p->rank; d++)
        c->max_combos *= (size_t)table->max[d];
    cpu__rz_fill(c, src->dtype, p->extrapolation);
    return SES_DRV_OK;
}

int32_t cpu__resize(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    cpu__rz_t p;
    cpu__rz_table_t table;
    cpu__rz_walk_t c;
    int32_t st;

    if ((st = cpu__rz_read(call, x, y, &p)) != SES_DRV_OK)
        return st;
    if (x->dtype != SES_DRV_DTYPE_F32 && x->dtype != SES_DRV_DTYPE_F64 && p.mode != RZ_NEAREST)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "mode %" PRId64 " needs a float X; integers take nearest only",
                              p.mode);
    if (y->count == 0)
        return SES_DRV_OK;
    if (p.rank == 0) {
        memcpy(y->data, x->data, y->esize);
        return SES_DRV_OK;
    }
    if ((st = cpu__rz_walk(call, &p, &table, x, y, 0, &c)) != SES_DRV_OK)
        return st;
    const uint64_t cost = (uint64_t)c.max_combos * (uint64_t)table.max[p.rank - 1];
    const uint64_t rows = y->count / (uint64_t)p.out[p.rank - 1];
    if (c.max_combos <= CPU__RZ_COMBOS) {
        cpu__parallel(call, rows, cost * (uint64_t)p.out[p.rank - 1] + 16, cpu__rz_run, &c);
    } else {
        c.heap_off = malloc(c.max_combos * sizeof *c.heap_off);
        c.heap_w = malloc(c.max_combos * sizeof *c.heap_w);
        if (c.heap_off && c.heap_w)
            cpu__rz_run(&c, 0, rows);
        else
            st = cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "no memory for %zu tap combinations",
                                c.max_combos);
        free(c.heap_off);
        free(c.heap_w);
    }
    free(table.block);
    return st;
}

int32_t cpu__resize_grad(const cpu__call_t *call) {
    const cpu__tensor_t *dy = &call->in[0], *dx = &call->outs[0];
    cpu__rz_t p;
    cpu__rz_table_t table;
    cpu__rz_walk_t c;
    int32_t st;

    if ((st = cpu__rz_read(call, dx, dy, &p)) != SES_DRV_OK)
        return st;
    memset(dx->data, 0, (size_t)dx->count * dx->esize);
    if (dy->count == 0)
        return SES_DRV_OK;
    if (p.rank == 0) {
        memcpy(dx->data, dy->data, dx->esize);
        return SES_DRV_OK;
    }
    if ((st = cpu__rz_walk(call, &p, &table, dy, dx, 1, &c)) != SES_DRV_OK)
        return st;
    int64_t *off = malloc(c.max_combos * sizeof *off);
    double *w = malloc(c.max_combos * sizeof *w);
    if (!off || !w) {
        free(off);
        free(w);
        free(table.block);
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "no memory for the taps");
    }
    cpu__rz_grad_run(&c, off, w);
    free(off);
    free(w);
    free(table.block);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * GridSample: X [N, C, D1..Dr] read at grid [N, O1..Or, r]'s points, as torch's grid_sample. The
 * grid's last dimension is in reverse axis order: entry 0 indexes Dr (x, the width), entry r - 1
 * indexes D1. Linear reads the 2^r corners around a point, nearest one element, cubic (r = 2
 * only) 4x4.
 * ------------------------------------------------------------------------------------------- */

enum { GS_LINEAR = 0, GS_NEAREST = 1, GS_CUBIC = 2 };
enum { GS_ZEROS = 0, GS_BORDER = 1, GS_REFLECTION = 2 };

/* The most spatial dims: linear reads 2^r corners per point. */
#define CPU__GS_MAX_SPATIAL 6

typedef struct cpu__gs {
    const cpu__tensor_t *x, *grid, *y;
    int64_t mode, padding, align;
    uint32_t r;                  /* spatial dims */
    int64_t in_plane, out_plane; /* elements of one channel of X and of Y */
    int f64;
} cpu__gs_t;

/* A grid coordinate in [-1, 1] to a pixel coordinate along an axis of @p size. */
static double cpu__gs_unnormalize(double v, int64_t size, int64_t align) {
    return align ? (v + 1.0) / 2.0 * (double)(size - 1) : ((v + 1.0) * (double)size - 1.0) / 2.0;
}

/* @p v reflected into [lo2 / 2, hi2 / 2] (bounds given doubled). */
static double cpu__gs_reflect(double v, double lo2, double hi2) {
    if (lo2 == hi2)
        return 0.0;
    const double lo = lo2 / 2.0, span = (hi2 - lo2) / 2.0;
    v = fabs(v - lo);
    const double extra = fmod(v, span);
    const int64_t flips = (int64_t)floor(v / span);
    return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

/* The padding mode applied to pixel coordinate @p v along an axis of @p size. */
static double cpu__gs_pad(const cpu__gs_t *g, double v, int64_t size) {
    if (g->padding == GS_BORDER) {
        v = fmin((double)(size - 1), fmax(v, 0.0));
    } else if (g->padding == GS_REFLECTION) {
        v = g->align ? cpu__gs_reflect(v, 0.0, 2.0 * (double)(size - 1))
                     : cpu__gs_reflect(v, -1.0, 2.0 * (double)size - 1.0);
        v = fmin((double)(size - 1), fmax(v, 0.0));
    }
    return v;
}

/* The taps of one point: offsets into a channel of X and weights; taps outside are left out
 * (they read 0). */
typedef struct cpu__gs_taps {
    int n;
    int64_t at[1 << CPU__GS_MAX_SPATIAL];
    double w[1 << CPU__GS_MAX_SPATIAL];
} cpu__gs_taps_t;

static void cpu__gs_add(cpu__gs_taps_t *t, const cpu__gs_t *g, const int64_t *idx, double w) {
    const int64_t *dims = g->x->dims + 2;
    int64_t at = 0;
    for (uint32_t a = 0; a < g->r; a++) {
        if (idx[a] < 0 || idx[a] >= dims[a])
            return;
        at = at * dims[a] + idx[a];
    }
    t->at[t->n] = at;
    t->w[t->n] = w;
    t->n++;
}

/* The taps at unnormalized coordinates @p u (one per spatial axis, in X's order). */
static void cpu__gs_taps(const cpu__gs_t *g, const double *u, cpu__gs_taps_t *t) {
    const int64_t *dims = g->x->dims + 2;
    int64_t idx[CPU__GS_MAX_SPATIAL];

    t->n = 0;
    if (g->mode == GS_CUBIC) {
        /* r = 2: taps around the unpadded coordinate, each padded on its own. */
        const double fy = floor(u[0]), fx = floor(u[1]), ty = u[0] - fy, tx = u[1] - fx;
        double wx[4], wy[4];
        wx[0] = cpu__rz_cubic(tx + 1.0, -0.75);
        wx[1] = cpu__rz_cubic(tx, -0.75);
        wx[2] = cpu__rz_cubic(1.0 - tx, -0.75);
        wx[3] = cpu__rz_cubic(2.0 - tx, -0.75);
        wy[0] = cpu__rz_cubic(ty + 1.0, -0.75);
        wy[1] = cpu__rz_cubic(ty, -0.75);
        wy[2] = cpu__rz_cubic(1.0 - ty, -0.75);
        wy[3] = cpu__rz_cubic(2.0 - ty, -0.75);
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++) {
                idx[0] = (int64_t)cpu__gs_pad(g, fy - 1.0 + j, dims[0]);
                idx[1] = (int64_t)cpu__gs_pad(g, fx - 1.0 + i, dims[1]);
                cpu__gs_add(t, g, idx, wy[j] * wx[i]);
            }
        return;
    }
    double p[CPU__GS_MAX_SPATIAL];
    for (uint32_t a = 0; a < g->r; a++)
        p[a] = cpu__gs_pad(g, u[a], dims[a]);
    if (g->mode == GS_NEAREST) {
        for (uint32_t a = 0; a < g->r; a++)
            idx[a] = (int64_t)nearbyint(p[a]);
        cpu__gs_add(t, g, idx, 1.0);
        return;
    }
    for (uint32_t corner = 0; corner < (1u << g->r); corner++) {
        double w = 1.0;
        for (uint32_t a = 0; a < g->r; a++) {
            const double f = floor(p[a]), frac = p[a] - f;
            const int up = (corner >> (g->r - 1 - a)) & 1;
            idx[a] = (int64_t)f + up;
            w *= up ? frac : 1.0 - frac;
        }
        cpu__gs_add(t, g, idx, w);
    }
}

static void cpu__gs_run(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__gs_t *g = ctx;
    const int64_t channels = g->x->dims[1];
    const uint32_t r = g->r;
    cpu__gs_taps_t taps;

    /* An item is one (n, output point); every channel is read at the same taps. */
    for (uint64_t item = begin; item < end; item++) {
        const int64_t n = (int64_t)item / g->out_plane, pix = (int64_t)item % g->out_plane;
        double u[CPU__GS_MAX_SPATIAL];
        for (uint32_t k = 0; k < r; k++) {
            const uint32_t a = r - 1 - k;
            const double v = cpu__rz_load(g->grid->data, (int64_t)item * r + k, g->f64);
            u[a] = cpu__gs_unnormalize(v, g->x->dims[2 + a], g->align);
            /* Keep floor's result in range of an int64: a point beyond 1e15 pixels is as far
             * outside as 1e15 (zeros reads nothing there, border the edge), and a NaN one is
             * taken as far before the first pixel. */
            u[a] = u[a] != u[a] ? -1e15 : fmin(1e15, fmax(-1e15, u[a]));
        }
        cpu__gs_taps(g, u, &taps);
        for (int64_t ch = 0; ch < channels; ch++) {
            const int64_t base = (n * channels + ch) * g->in_plane;
            double v = 0.0;
            for (int k = 0; k < taps.n; k++)
                v += taps.w[k] * cpu__rz_load(g->x->data, base + taps.at[k], g->f64);
            const int64_t at = (n * channels + ch) * g->out_plane + pix;
            if (g->f64)
                ((double *)(void *)g->y->data)[at] = v;
            else
                ((float *)(void *)g->y->data)[at] = (float)v;
        }
    }
}

int32_t cpu__grid_sample(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *grid = &call->in[1], *y = &call->outs[0];
    cpu__gs_t g = {x, grid, y, 0, 0, 0, 0, 1, 1, x->dtype == SES_DRV_DTYPE_F64};
    int32_t st;

    if ((st = cpu__attr_int(call, "mode", 1, 0, &g.mode)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "padding_mode", 1, 0, &g.padding)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "align_corners", 1, 0, &g.align)) != SES_DRV_OK)
        return st;
    if (g.mode < GS_LINEAR || g.mode > GS_CUBIC || g.padding < GS_ZEROS ||
        g.padding > GS_REFLECTION)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "mode %" PRId64 " or padding_mode %" PRId64 " is out of range",
                              g.mode, g.padding);
    int ok = x->rank >= 3 && x->rank - 2 <= CPU__GS_MAX_SPATIAL && grid->rank == x->rank &&
             y->rank == x->rank && (g.mode != GS_CUBIC || x->rank == 4);
    if (ok) {
        g.r = x->rank - 2;
        ok = grid->dims[0] == x->dims[0] && grid->dims[x->rank - 1] == (int64_t)g.r &&
             y->dims[0] == x->dims[0] && y->dims[1] == x->dims[1];
        for (uint32_t a = 0; ok && a < g.r; a++) {
            ok = y->dims[2 + a] == grid->dims[1 + a];
            g.in_plane *= x->dims[2 + a];
            g.out_plane *= y->dims[2 + a];
        }
    }
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected X [N, C, D1..Dr] (r 1 to %d; 2 for cubic), grid [N, "
                              "O1..Or, r] and Y [N, C, O1..Or]",
                              CPU__GS_MAX_SPATIAL);
    if (y->count == 0)
        return SES_DRV_OK;
    if (g.in_plane == 0) {
        memset(y->data, 0, (size_t)y->count * y->esize);
        return SES_DRV_OK;
    }
    const uint64_t items = (uint64_t)(y->dims[0] * g.out_plane);
    cpu__parallel(call, items, (uint64_t)x->dims[1] * (g.mode == GS_CUBIC ? 16u : 1u << g.r),
                  cpu__gs_run, &g);
    return SES_DRV_OK;
}
