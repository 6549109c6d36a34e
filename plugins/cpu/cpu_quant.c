/*
 * Linear quantization (general entries): QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, and the integer products MatMulInteger, ConvInteger, QLinearMatMul and
 * QLinearConv.
 *
 * Rounding is to the nearest integer, ties to even (rintf under the default rounding mode), and
 * results saturate to the output's range; NaN quantizes to the zero point. The products subtract
 * the zero points into copies of the operands first, then sum exactly, keeping the sums as int32
 * with wrap-around (ONNX's int32 accumulation): the matrix products in doubles through dgemm
 * (exact, see q_matmul; OpenBLAS has no integer GEMM), the convolutions in int64 loops.
 * QLinearMatMul and QLinearConv requantize as ONNX Runtime does: the accumulator times the f32
 * multiplier a_scale * b_scale / y_scale, rounded, plus y's zero point, saturated.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* Element @p i of integer tensor @p t (i8 u8 i16 u16 i32), widened. */
static inline int64_t q_load(const cpu__tensor_t *t, uint64_t i) {
    switch (t->dtype) {
    case SES_DRV_DTYPE_I8: return ((const int8_t *)(const void *)t->data)[i];
    case SES_DRV_DTYPE_U8: return t->data[i];
    case SES_DRV_DTYPE_I16: return ((const int16_t *)(const void *)t->data)[i];
    case SES_DRV_DTYPE_U16: return ((const uint16_t *)(const void *)t->data)[i];
    default: return ((const int32_t *)(const void *)t->data)[i];
    }
}

/* The range of integer dtype @p dtype. */
static void q_range(uint32_t dtype, double *lo, double *hi) {
    switch (dtype) {
    case SES_DRV_DTYPE_I8: *lo = -128.0, *hi = 127.0; break;
    case SES_DRV_DTYPE_U8: *lo = 0.0, *hi = 255.0; break;
    case SES_DRV_DTYPE_I16: *lo = -32768.0, *hi = 32767.0; break;
    case SES_DRV_DTYPE_U16: *lo = 0.0, *hi = 65535.0; break;
    default: *lo = -2147483648.0, *hi = 2147483647.0; break;
    }
}

/* Stores @p v (an integer value inside the dtype's range) as element @p i of @p t. */
static inline void q_store(const cpu__tensor_t *t, uint64_t i, double v) {
    switch (t->dtype) {
    case SES_DRV_DTYPE_I8: ((int8_t *)(void *)t->data)[i] = (int8_t)v; break;
    case SES_DRV_DTYPE_U8: t->data[i] = (uint8_t)v; break;
    case SES_DRV_DTYPE_I16: ((int16_t *)(void *)t->data)[i] = (int16_t)v; break;
    case SES_DRV_DTYPE_U16: ((uint16_t *)(void *)t->data)[i] = (uint16_t)v; break;
    default: ((int32_t *)(void *)t->data)[i] = (int32_t)v; break;
    }
}

/* round(@p q) + @p zp, saturated to [lo, hi]; NaN gives the zero point (saturated). */
static inline double q_saturate(float q, double zp, double lo, double hi) {
    double v = isnan(q) ? zp : (double)rintf(q) + zp;
    return v < lo ? lo : v > hi ? hi : v;
}

static inline double f_load(const cpu__tensor_t *t, uint64_t i) {
    return t->dtype == SES_DRV_DTYPE_F64 ? ((const double *)(const void *)t->data)[i]
                                         : ((const float *)(const void *)t->data)[i];
}

/* ---- QuantizeLinear, DequantizeLinear ------------------------------------------------------- */

/* Where x's element of coordinates (outer o, axis a, inner i) finds its scale. */
typedef struct q_layout {
    uint64_t outer, along, inner; /* x as [outer, along, inner] around the axis */
    int64_t block;                /* 0: per tensor (one scale) or per axis */
    uint64_t n_scales;
} q_layout_t;

static int32_t q_layout(const cpu__call_t *call, const cpu__tensor_t *x, const cpu__tensor_t *s,
                        const cpu__tensor_t *zp, q_layout_t *l) {
    int64_t axis = 0, block = 0;
    int32_t st = cpu__attr_int(call, "axis", 1, 0, &axis);
    uint64_t want;

    if (st == SES_DRV_OK)
        st = cpu__attr_int(call, "block_size", 1, 0, &block);
    if (st != SES_DRV_OK)
        return st;
    if (block < 0 || axis < 0 || (x->rank ? (uint64_t)axis >= x->rank : axis != 0))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attributes axis %" PRId64 " and block_size %" PRId64
                              " do not fit the input's rank %" PRIu32,
                              axis, block, x->rank);
    l->outer = l->inner = 1;
    l->along = x->rank ? (uint64_t)x->dims[axis] : 1;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (d < (uint32_t)axis)
            l->outer *= (uint64_t)x->dims[d];
        else if (d > (uint32_t)axis)
            l->inner *= (uint64_t)x->dims[d];
    }
    l->block = block;
    l->n_scales = s->count;
    if (block > 0)
        want = l->outer * ((l->along + (uint64_t)block - 1) / (uint64_t)block) * l->inner;
    else
        want = s->count == 1 ? 1 : l->along;
    if (s->count != want || (zp && zp->count != s->count))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "the scale has %" PRIu64 " elements and the zero point %" PRIu64
                              "; along axis %" PRId64 " (block_size %" PRId64
                              ") the input needs %" PRIu64,
                              s->count, zp ? zp->count : s->count, axis, block, want);
    return SES_DRV_OK;
}

/* The scale index of x's element @p e. */
static inline uint64_t q_scale_at(const q_layout_t *l, uint64_t e) {
    uint64_t a, o, i;
    if (l->n_scales == 1 && l->block == 0)
        return 0;
    i = e % l->inner;
    a = (e / l->inner) % l->along;
    if (l->block == 0)
        return a;
    o = e / (l->inner * l->along);
    return (o * ((l->along + (uint64_t)l->block - 1) / (uint64_t)l->block) +
            a / (uint64_t)l->block) *
               l->inner +
           i;
}

typedef struct q_job {
    const cpu__tensor_t *x, *s, *zp, *y;
    q_layout_t l;
    double lo, hi;
} q_job_t;

static void quantize_task(void *ctx, uint64_t begin, uint64_t end) {
    const q_job_t *j = ctx;
    for (uint64_t e = begin; e < end; e++) {
        const uint64_t k = q_scale_at(&j->l, e);
        const float q = (float)f_load(j->x, e) / (float)f_load(j->s, k);
        q_store(j->y, e, q_saturate(q, j->zp ? (double)q_load(j->zp, k) : 0.0, j->lo, j->hi));
    }
}

static void dequantize_task(void *ctx, uint64_t begin, uint64_t end) {
    const q_job_t *j = ctx;
    float *y = (float *)(void *)j->y->data;
    for (uint64_t e = begin; e < end; e++) {
        const uint64_t k = q_scale_at(&j->l, e);
        const float zp = j->zp ? (float)q_load(j->zp, k) : 0.0f;
        y[e] = ((float)q_load(j->x, e) - zp) * (float)f_load(j->s, k);
    }
}

int32_t cpu__quantize(const cpu__call_t *call) {
    q_job_t j;
    int64_t has_zp = 0;
    int32_t st = cpu__attr_int(call, "has_zp", 1, 0, &has_zp);

    if (st != SES_DRV_OK)
        return st;
    if ((uint32_t)(has_zp ? 3 : 2) != call->n_in)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute has_zp is %" PRId64 " but the node has %" PRIu32 " inputs",
                              has_zp, call->n_in);
    memset(&j, 0, sizeof j);
    j.x = &call->in[0];
    j.s = &call->in[1];
    j.zp = has_zp ? &call->in[2] : NULL;
    j.y = &call->outs[0];
    if (!cpu__same_shape(j.x, j.y))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "the output's shape differs from the input's");
    if ((st = q_layout(call, j.x, j.s, j.zp, &j.l)) != SES_DRV_OK)
        return st;
    if (call->spec->code == CPU__OP_QUANTIZE) {
        q_range(j.y->dtype, &j.lo, &j.hi);
        cpu__parallel(call, j.x->count, 8, quantize_task, &j);
    } else {
        cpu__parallel(call, j.x->count, 4, dequantize_task, &j);
    }
    return SES_DRV_OK;
}

/* ---- DynamicQuantizeLinear ----------------------------------------------------------------- */

int32_t cpu__dynamic_quantize(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    const float *xv = (const float *)(const void *)x->data;
    float lo = 0.0f, hi = 0.0f, scale;
    uint8_t zp = 0;

    if (!cpu__same_shape(x, y) || (call->n_out > 1 && call->outs[1].count != 1) ||
        (call->n_out > 2 && call->outs[2].count != 1))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "y must have x's shape, y_scale and y_zero_point one element");
    /* The range always holds 0, so that 0 is exact; NaN is left out of it. */
    for (uint64_t i = 0; i < x->count; i++) {
        lo = xv[i] < lo ? xv[i] : lo;
        hi = xv[i] > hi ? xv[i] : hi;
    }
    scale = (hi - lo) / 255.0f;
    if (scale > 0.0f && isfinite(scale))
        zp = (uint8_t)q_saturate((0.0f - lo) / scale, 0.0, 0.0, 255.0);
    else
        scale = scale > 0.0f ? scale : 0.0f;
    for (uint64_t i = 0; i < x->count; i++)
        y->data[i] = scale > 0.0f ? (uint8_t)q_saturate(xv[i] / scale, zp, 0.0, 255.0) : zp;
    if (call->n_out > 1)
        memcpy(call->outs[1].data, &scale, sizeof scale);
    if (call->n_out > 2)
        call->outs[2].data[0] = zp;
    return SES_DRV_OK;
}

/* ---- the integer products ------------------------------------------------------------------ */

/*
 * Each element of @p t (matrices of @p rows x @p cols) minus its zero point into int32 @p out.
 * @p zp (NULL: none) has one element, or one per row (@p per_column: column), or one per row
 * (column) of each matrix.
 */
static void q_widen(const cpu__tensor_t *t, const cpu__tensor_t *zp, uint64_t rows, uint64_t cols,
                    int per_column, int32_t *out) {
    for (uint64_t e = 0; e < t->count; e++) {
        uint64_t k = 0;
        if (zp && zp->count > 1 && !per_column)
            k = (e / cols) % zp->count;
        else if (zp && zp->count > 1)
            k = zp->count == cols ? e % cols : (e / (rows * cols)) * cols + e % cols;
        out[e] = (int32_t)(q_load(t, e) - (zp ? q_load(zp, k) : 0));
    }
}

/* q_widen into doubles, for the GEMM. */
static void q_widen_f64(const cpu__tensor_t *t, const cpu__tensor_t *zp, uint64_t rows,
                        uint64_t cols, int per_column, double *out) {
    for (uint64_t e = 0; e < t->count; e++) {
        uint64_t k = 0;
        if (zp && zp->count > 1 && !per_column)
            k = (e / cols) % zp->count;
        else if (zp && zp->count > 1)
            k = zp->count == cols ? e % cols : (e / (rows * cols)) * cols + e % cols;
        out[e] = (double)(q_load(t, e) - (zp ? q_load(zp, k) : 0));
    }
}

/* The requantization of QLinearMatMul and QLinearConv. */
typedef struct q_requant {
    const cpu__tensor_t *a_scale, *b_scale, *y_scale, *y_zp;
    double lo, hi;
} q_requant_t;

static inline double q_requantize(const q_requant_t *r, int32_t acc, uint64_t ai, uint64_t bi) {
    const float a_s = (float)f_load(r->a_scale, r->a_scale->count == 1 ? 0 : ai);
    const float b_s = (float)f_load(r->b_scale, r->b_scale->count == 1 ? 0 : bi);
    const float m = a_s * b_s / (float)f_load(r->y_scale, 0);
    return q_saturate((float)acc * m, (double)q_load(r->y_zp, 0), r->lo, r->hi);
}

/* The zero point of product operand @p t (matrices of @p rows x @p cols): one element, one per
 * row (@p per_column: column), or one per row (column) of each matrix. */
static int32_t q_product_zp(const cpu__call_t *call, const char *name, const cpu__tensor_t *t,
                            const cpu__tensor_t *zp, int64_t rows, int64_t cols, int per_column) {
    const uint64_t per = (uint64_t)(per_column ? cols : rows);
    const uint64_t matrices = rows > 0 && cols > 0 ? t->count / (uint64_t)(rows * cols) : 0;

    if (!zp || zp->count == 1 || zp->count == per || zp->count == per * matrices)
        return SES_DRV_OK;
    return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                          "the zero point of %s has %" PRIu64 " elements; it needs 1, %" PRIu64
                          " or %" PRIu64,
                          name, zp->count, per, per * matrices);
}

/*
 * MatMulInteger (@p rq NULL) or QLinearMatMul of a, b with their zero points: both operands
 * widened to double with the zero points subtracted, one dgemm per matrix of the product
 * (cpu__gemm_call, OpenBLAS on its threads). Exact: each product is at most 255 * 255 in
 * magnitude and every partial sum an integer below 2^53, whatever order the GEMM adds in; the
 * sums are then kept as int32 with wrap-around, which is what int32 accumulation gives.
 */
static int32_t q_matmul(const cpu__call_t *call, const cpu__tensor_t *a, const cpu__tensor_t *a_zp,
                        const cpu__tensor_t *b, const cpu__tensor_t *b_zp, const q_requant_t *rq) {
    cpu__matmul_shape_t sh;
    const cpu__tensor_t *y = &call->outs[0];
    double *wa = NULL, *wb = NULL, *acc = NULL;
    int32_t st;

    memset(&sh, 0, sizeof sh);
    st = cpu__matmul_shape(call, a, "A", b, "B", y, "Y", &sh);
    if (st == SES_DRV_OK)
        st = q_product_zp(call, "A", a, a_zp, sh.m, sh.k, 0);
    if (st == SES_DRV_OK)
        st = q_product_zp(call, "B", b, b_zp, sh.k, sh.n, 1);
    if (st != SES_DRV_OK)
        return st;
    if (rq && ((rq->a_scale->count != 1 && rq->a_scale->count != (uint64_t)sh.m) ||
               (rq->b_scale->count != 1 && rq->b_scale->count != (uint64_t)sh.n)))
        return cpu__call_fail(
            call, SES_DRV_INVALID_ARGUMENT,
            "a_scale must have 1 or %" PRId64 " elements and b_scale 1 or %" PRId64, sh.m, sh.n);
    if (y->count == 0)
        return SES_DRV_OK;
    if ((st = cpu__check_blas_dims(call, sh.m, sh.n, sh.k > 0 ? sh.k : 1)) != SES_DRV_OK)
        return st;
    wa = malloc((a->count ? a->count : 1) * sizeof *wa);
    wb = malloc((b->count ? b->count : 1) * sizeof *wb);
    acc = calloc(y->count, sizeof *acc);
    if (!wa || !wb || !acc) {
        free(wa);
        free(wb);
        free(acc);
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "out of memory for the operands");
    }
    q_widen_f64(a, a_zp, (uint64_t)sh.m, (uint64_t)sh.k, 0, wa);
    q_widen_f64(b, b_zp, (uint64_t)sh.k, (uint64_t)sh.n, 1, wb);
    for (int64_t mat = 0; mat < sh.n_matrices && sh.k > 0; mat++) {
        int64_t a_mat = 0, b_mat = 0, rest = mat;
        for (uint32_t d = sh.n_batch; d-- > 0;) {
            const int64_t idx = rest % sh.batch[d];
            rest /= sh.batch[d];
            a_mat += idx * sh.a_stride[d];
            b_mat += idx * sh.b_stride[d];
        }
        cpu__gemm_call(call->device, 1, SES_DRV_DTYPE_F64, 0, 0, sh.m, sh.n, sh.k, 1.0,
                       wa + a_mat * sh.m * sh.k, sh.k, wb + b_mat * sh.k * sh.n, sh.n, 0.0,
                       acc + mat * sh.m * sh.n, sh.n);
    }
    for (uint64_t e = 0; e < y->count; e++) {
        const int32_t v = (int32_t)(uint32_t)(uint64_t)(int64_t)acc[e];
        if (rq)
            q_store(y, e,
                    q_requantize(rq, v, (e / (uint64_t)sh.n) % (uint64_t)sh.m, e % (uint64_t)sh.n));
        else
            ((int32_t *)(void *)y->data)[e] = v;
    }
    free(wa);
    free(wb);
    free(acc);
    return SES_DRV_OK;
}

/* ---- the integer convolutions --------------------------------------------------------------- */

typedef struct conv_job {
    cpu__win_t w;
    int64_t n, c, m, group;
    const int32_t *x, *k; /* zero points subtracted */
    const cpu__tensor_t *bias, *y;
    const q_requant_t *rq;
} conv_job_t;

/* Output channels [begin, end) of the images: item i is image i / m, filter i % m. */
static void conv_task(void *ctx, uint64_t begin, uint64_t end) {
    const conv_job_t *j = ctx;
    const cpu__win_t *w = &j->w;
    const int64_t cg = j->c / j->group, mg = j->m / j->group;

    for (uint64_t item = begin; item < end; item++) {
        const int64_t img = (int64_t)item / j->m, f = (int64_t)item % j->m, g = f / mg;
        const int32_t *kf = j->k + f * cg * w->k_count;
        for (int64_t p = 0; p < w->out_count; p++) {
            int64_t oc[CPU__SPATIAL_MAX], rest = p, acc = 0;
            for (uint32_t d = w->n; d-- > 0;) {
                oc[d] = rest % w->out[d];
                rest /= w->out[d];
            }
            for (int64_t t = 0; t < w->k_count; t++) {
                int64_t at = 0, trest = t, inside = 1;
                for (uint32_t d = w->n; d-- > 0 && inside;) {
                    const int64_t kk = trest % w->k[d];
                    int64_t stride = 1;
                    const int64_t ic = oc[d] * w->s[d] + kk * w->d[d] - w->pb[d];
                    trest /= w->k[d];
                    inside = ic >= 0 && ic < w->in[d];
                    for (uint32_t e = d + 1; e < w->n; e++)
                        stride *= w->in[e];
                    at += ic * stride;
                }
                if (!inside)
                    continue; /* padding: x's zero point, 0 once subtracted */
                for (int64_t c = 0; c < cg; c++)
                    acc += (int64_t)j->x[((img * j->c) + g * cg + c) * w->in_count + at] *
                           kf[c * w->k_count + t];
            }
            if (j->bias)
                acc += ((const int32_t *)(const void *)j->bias->data)[f];
            {
                const uint64_t out = (uint64_t)item * (uint64_t)w->out_count + (uint64_t)p;
                const int32_t v = (int32_t)(uint32_t)(uint64_t)acc;
                if (j->rq)
                    q_store(j->y, out, q_requantize(j->rq, v, 0, (uint64_t)f));
                else
                    ((int32_t *)(void *)j->y->data)[out] = v;
            }
        }
    }
}

/* ConvInteger (@p rq NULL) or QLinearConv of x and w with their zero points and the bias. */
static int32_t q_conv(const cpu__call_t *call, const cpu__tensor_t *x, const cpu__tensor_t *x_zp,
                      const cpu__tensor_t *k, const cpu__tensor_t *k_zp, const cpu__tensor_t *bias,
                      const q_requant_t *rq) {
    conv_job_t j;
    int32_t *wx = NULL, *wk = NULL, st;

    memset(&j, 0, sizeof j);
    if ((st = cpu__read_window(call, x, &call->outs[0], &j.w)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "group", 1, 1, &j.group)) != SES_DRV_OK)
        return st;
    j.n = x->dims[0];
    j.c = x->dims[1];
    j.m = k->dims[0];
    if (k->rank != x->rank || j.group < 1 || j.c % j.group || j.m % j.group ||
        k->dims[1] != j.c / j.group || call->outs[0].dims[1] != j.m)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "x, w, group and y do not agree");
    for (uint32_t d = 0; d < j.w.n; d++)
        if (k->dims[2 + d] != j.w.k[d])
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "w's kernel dims differ from attribute kernel_shape");
    if ((x_zp && x_zp->count != 1) || (k_zp && k_zp->count != 1 && k_zp->count != (uint64_t)j.m) ||
        (bias && bias->count != (uint64_t)j.m) ||
        (rq && rq->b_scale->count != 1 && rq->b_scale->count != (uint64_t)j.m) ||
        (rq && rq->a_scale->count != 1))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "x's scale and zero point must have one element, w's one or one "
                              "per filter (%" PRId64 "), and B one per filter",
                              j.m);
    wx = malloc((x->count ? x->count : 1) * sizeof *wx);
    wk = malloc((k->count ? k->count : 1) * sizeof *wk);
    if (!wx || !wk) {
        free(wx);
        free(wk);
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "out of memory for the operands");
    }
    q_widen(x, x_zp, 1, 1, 0, wx);
    q_widen(k, k_zp, (uint64_t)j.m, j.m ? k->count / (uint64_t)j.m : 1, 0, wk);
    j.x = wx;
    j.k = wk;
    j.bias = bias;
    j.y = &call->outs[0];
    j.rq = rq;
    cpu__parallel(call, (uint64_t)(j.n * j.m),
                  (uint64_t)(j.w.out_count * j.w.k_count * (j.c / j.group) + 1), conv_task, &j);
    free(wx);
    free(wk);
    return SES_DRV_OK;
}

int32_t cpu__matmul_integer(const cpu__call_t *call) {
    int64_t has_a = 0, has_b = 0;
    int32_t st = cpu__attr_int(call, "has_a_zp", 1, 0, &has_a);
    cpu__tensor_t zps[2];
    uint32_t next = 2;

    if (st == SES_DRV_OK)
        st = cpu__attr_int(call, "has_b_zp", 1, 0, &has_b);
    if (st != SES_DRV_OK)
        return st;
    if (2u + (has_a != 0) + (has_b != 0) != call->n_in)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attributes has_a_zp %" PRId64 " and has_b_zp %" PRId64
                              " disagree with its %" PRIu32 " inputs",
                              has_a, has_b, call->n_in);
    if (has_a)
        zps[0] = cpu__input(call, next++);
    if (has_b)
        zps[1] = cpu__input(call, next++);
    if (call->spec->code == CPU__OP_CONVINTEGER)
        return q_conv(call, &call->in[0], has_a ? &zps[0] : NULL, &call->in[1],
                      has_b ? &zps[1] : NULL, NULL, NULL);
    return q_matmul(call, &call->in[0], has_a ? &zps[0] : NULL, &call->in[1],
                    has_b ? &zps[1] : NULL, NULL);
}

int32_t cpu__qlinear(const cpu__call_t *call) {
    cpu__tensor_t t[9];
    q_requant_t rq;

    for (uint32_t i = 0; i < call->n_in && i < 9; i++)
        t[i] = cpu__input(call, i);
    memset(&rq, 0, sizeof rq);
    rq.a_scale = &t[1];
    rq.b_scale = &t[4];
    rq.y_scale = &t[6];
    rq.y_zp = &t[7];
    if (t[1].count < 1 || t[4].count < 1 || t[6].count != 1 || t[7].count != 1 ||
        t[2].count != t[1].count || t[5].count != t[4].count)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "each zero point must have its scale's count, and y_scale and "
                              "y_zero_point one element");
    q_range(call->outs[0].dtype, &rq.lo, &rq.hi);
    if (call->spec->code == CPU__OP_QLINEARCONV)
        return q_conv(call, &t[0], &t[2], &t[3], &t[5], call->n_in > 8 ? &t[8] : NULL, &rq);
    return q_matmul(call, &t[0], &t[2], &t[3], &t[5], &rq);
}
