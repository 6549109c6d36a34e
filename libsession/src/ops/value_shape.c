/*
 * Ops whose output shape depends on input values: NonZero, Compress, TopK, Unique and
 * NonMaxSuppression. Their inference
 * reads the value at compile time (a constant, a fed value, or one computed from those: the
 * compiler computes it, compile.c's mark_needed), as Range's does; a plan fed another value is
 * compiled again. The kernels (plugins/cpu/cpu_value_shape.c) find the same shapes at run time
 * from the same values.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../alloc.h"
#include "../graph/attrs.h"
#include "infer.h"
#include "value_shape.h"

/* Whether element @p k of host bytes @p p of @p dtype is non-zero (NaN is; -0.0 is not). */
static int nonzero_at(const unsigned char *p, ses_dtype_t dtype, int64_t k) {
    const size_t size = ses_dtype_size(dtype);
    uint64_t bits = 0;

    switch (dtype) {
        case SES_F32: {
            float f;
            memcpy(&f, p + k * 4, 4);
            return f != 0.0f;
        }
        case SES_F64: {
            double d;
            memcpy(&d, p + k * 8, 8);
            return d != 0.0;
        }
        case SES_F16:
        case SES_BF16: {
            uint16_t h;
            memcpy(&h, p + k * 2, 2);
            return (h & 0x7fffu) != 0;
        }
        default:
            memcpy(&bits, p + (size_t)k * size, size);
            return bits != 0;
    }
}

/* The value of input @p index, which must be known: a message naming it when it is not. */
static ses_status_t known_value(const ses__infer_ctx_t *ctx, size_t index, const char *name,
                                const unsigned char **out) {
    *out = ctx->values ? ctx->values[index] : NULL;
    if (*out || ses__type_count(&ctx->inputs[index]) == 0)
        return SES_OK;
    return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                        "input %zu (%s) must be a constant or fed: the output's shape depends on "
                        "its value",
                        index, name);
}

ses_status_t ses__infer_nonzero(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    const unsigned char *p;
    int64_t n = ses__type_count(x), nz = 0;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "X", SES__DT_ANY);

    if (st == SES_OK && x->rank == 0)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "X must have rank 1 or more, got %s",
                          ses__tstr(x).s);
    if (st == SES_OK)
        st = known_value(ctx, 0, "X", &p);
    if (st != SES_OK)
        return st;
    for (int64_t k = 0; k < n; k++)
        nz += nonzero_at(p, x->dtype, k);
    ctx->outputs[0].dtype = SES_I64;
    ctx->outputs[0].rank = 2;
    ctx->outputs[0].dims[0] = x->rank;
    ctx->outputs[0].dims[1] = nz;
    return SES_OK;
}

ses_status_t ses__infer_compress(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0], *c = &ctx->inputs[1];
    const unsigned char *p;
    const ses__attr_t *a = ses__attrs_find(ctx->attrs, "axis");
    int64_t axis = -1, along, count = 0;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "condition", SES__DT(SES_BOOL));
    if (st == SES_OK && c->rank != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "condition must be 1-D, got %s",
                          ses__tstr(c).s);
    if (st == SES_OK && a) {
        int64_t given;
        st = ses__op_attr_int(ctx, "axis", 0, &given);
        if (st == SES_OK)
            st = ses__op_axis(ctx, "axis", given, x->rank, x, &axis);
    }
    if (st != SES_OK)
        return st;
    along = axis < 0 ? ses__type_count(x) : x->dims[axis];
    if (c->dims[0] > along)
        return ses__op_fail(
            ctx, SES_INVALID_ARGUMENT, "condition %s is longer than the %" PRId64 " %s of input %s",
            ses__tstr(c).s, along, axis < 0 ? "elements" : "entries along axis", ses__tstr(x).s);
    if ((st = known_value(ctx, 1, "condition", &p)) != SES_OK)
        return st;
    for (int64_t k = 0; k < c->dims[0]; k++)
        count += p[k] != 0;
    ctx->outputs[0] = *x;
    if (axis < 0) {
        ctx->outputs[0].rank = 1;
        ctx->outputs[0].dims[0] = count;
    } else {
        ctx->outputs[0].dims[axis] = count;
    }
    return ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
}

ses_status_t ses__infer_topk(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    int64_t given, axis, largest, sorted, k;
    size_t n = 0;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "X", SES__DT_NUMERIC);

    if (st == SES_OK && x->rank == 0)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "X must have rank 1 or more, got %s",
                          ses__tstr(x).s);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", -1, &given);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", given, x->rank, x, &axis);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "largest", 1, &largest);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "sorted", 1, &sorted);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "K", SES__DT(SES_I64));
    if (st == SES_OK && ses__type_count(&ctx->inputs[1]) != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "K must hold one value, got %s",
                          ses__tstr(&ctx->inputs[1]).s);
    if (st == SES_OK)
        st = ses__op_read_ints(ctx, 1, "K", SES__DT(SES_I64), &k, 1, &n);
    if (st != SES_OK)
        return st;
    if (k < 0 || k > x->dims[axis])
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "K is %" PRId64 ": it must be in [0, %" PRId64
                            "], the size of axis "
                            "%" PRId64 " of X %s",
                            k, x->dims[axis], axis, ses__tstr(x).s);
    ctx->outputs[0] = *x;
    ctx->outputs[0].dims[axis] = k;
    ctx->outputs[1] = ctx->outputs[0];
    ctx->outputs[1].dtype = SES_I64;
    /* The kernel reads X only; K is the outputs' size along the axis. */
    ctx->kernel_inputs = UINT64_C(1);
    if ((st = ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis)) != SES_OK ||
        (st = ses__attrs_set_int(&ctx->kernel_attrs, "largest", largest)) != SES_OK)
        return st;
    return ses__attrs_set_int(&ctx->kernel_attrs, "sorted", sorted);
}

/* Unique's rows: X flattened (one element a row), or its slices along an axis, each the
 * elements x[o, j, i] in (o, i) order. */
typedef struct rows {
    const unsigned char *p;
    ses_dtype_t dtype;
    size_t esize;
    int64_t outer, n, inner;
} rows_t;

/* -1, 0, 1 as element @p a compares with element @p b (offsets): numbers by value, NaN above
 * every number and equal to NaN, -0.0 equal to 0.0. */
static int element_cmp(const rows_t *r, int64_t a, int64_t b) {
    const unsigned char *pa = r->p + (size_t)a * r->esize, *pb = r->p + (size_t)b * r->esize;
    switch (r->dtype) {
        case SES_F32:
        case SES_F64: {
            double x, y;
            if (r->dtype == SES_F32) {
                float fx, fy;
                memcpy(&fx, pa, 4);
                memcpy(&fy, pb, 4);
                x = fx;
                y = fy;
            } else {
                memcpy(&x, pa, 8);
                memcpy(&y, pb, 8);
            }
            if (x != x || y != y)
                return (x != x) - (y != y);
            return (x > y) - (x < y);
        }
        case SES_I32: {
            int32_t x, y;
            memcpy(&x, pa, 4);
            memcpy(&y, pb, 4);
            return (x > y) - (x < y);
        }
        case SES_I64: {
            int64_t x, y;
            memcpy(&x, pa, 8);
            memcpy(&y, pb, 8);
            return (x > y) - (x < y);
        }
        default: {
            uint64_t x = 0, y = 0;
            memcpy(&x, pa, r->esize);
            memcpy(&y, pb, r->esize);
            return (x > y) - (x < y);
        }
    }
}

static int row_cmp(const rows_t *r, int64_t a, int64_t b) {
    for (int64_t o = 0; o < r->outer; o++)
        for (int64_t i = 0; i < r->inner; i++) {
            int c = element_cmp(r, (o * r->n + a) * r->inner + i, (o * r->n + b) * r->inner + i);
            if (c)
                return c;
        }
    return 0;
}

/* How many distinct rows @p r has: a merge sort of the row indices, then the runs counted. */
static ses_status_t count_distinct(const ses__infer_ctx_t *ctx, const rows_t *r, int64_t *out) {
    int64_t *idx = r->n ? ses__malloc((size_t)r->n * 2 * sizeof *idx) : NULL, *tmp;

    *out = 0;
    if (!r->n)
        return SES_OK;
    if (!idx)
        return ses__op_fail(ctx, SES_OUT_OF_MEMORY, "out of memory for %" PRId64 " rows", r->n);
    tmp = idx + r->n;
    for (int64_t j = 0; j < r->n; j++)
        idx[j] = j;
    for (int64_t width = 1; width < r->n; width *= 2) {
        for (int64_t lo = 0; lo < r->n; lo += 2 * width) {
            int64_t mid = lo + width < r->n ? lo + width : r->n;
            int64_t hi = lo + 2 * width < r->n ? lo + 2 * width : r->n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = row_cmp(r, idx[b], idx[a]) < 0 ? idx[b++] : idx[a++];
            while (a < mid)
                tmp[o++] = idx[a++];
            while (b < hi)
                tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, (size_t)r->n * sizeof *idx);
    }
    *out = 1;
    for (int64_t j = 1; j < r->n; j++)
        *out += row_cmp(r, idx[j - 1], idx[j]) != 0;
    free(idx);
    return SES_OK;
}

ses_status_t ses__infer_unique(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    const ses__attr_t *a = ses__attrs_find(ctx->attrs, "axis");
    const uint32_t allowed = SES__DT(SES_F32) | SES__DT(SES_F64) | SES__DT(SES_I32) |
                             SES__DT(SES_I64) | SES__DT(SES_U8) | SES__DT(SES_BOOL);
    int64_t axis = -1, sorted, distinct;
    rows_t r;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "X", allowed);

    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "sorted", 1, &sorted);
    if (st == SES_OK && a) {
        int64_t given;
        st = ses__op_attr_int(ctx, "axis", 0, &given);
        if (st == SES_OK)
            st = ses__op_axis(ctx, "axis", given, x->rank, x, &axis);
    }
    if (st == SES_OK)
        st = known_value(ctx, 0, "X", &r.p);
    if (st != SES_OK)
        return st;
    r.dtype = x->dtype;
    r.esize = ses_dtype_size(x->dtype);
    r.outer = r.inner = 1;
    r.n = ses__type_count(x);
    if (axis >= 0) {
        for (int64_t d = 0; d < (int64_t)x->rank; d++) {
            if (d < axis)
                r.outer *= x->dims[d];
            else if (d > axis)
                r.inner *= x->dims[d];
        }
        r.n = x->dims[axis]; /* rows of no element are all the same row */
    }
    if ((st = count_distinct(ctx, &r, &distinct)) != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    if (axis < 0) {
        ctx->outputs[0].rank = 1;
        ctx->outputs[0].dims[0] = distinct;
    } else {
        ctx->outputs[0].dims[axis] = distinct;
    }
    for (size_t o = 1; o < 4; o++) {
        ctx->outputs[o].dtype = SES_I64;
        ctx->outputs[o].rank = 1;
        ctx->outputs[o].dims[0] = o == 2 ? r.n : distinct;
    }
    if ((st = ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis)) != SES_OK)
        return st;
    return ses__attrs_set_int(&ctx->kernel_attrs, "sorted", sorted);
}

/* ---- NonMaxSuppression ------------------------------------------------------------------- */

/* Intersection over union of boxes @p a and @p b (4 floats each: corners y1,x1,y2,x2 in any
 * order, or center x,y and width, height); 0 when either has no area. */
static double box_iou(const float *a, const float *b, int center) {
    double ay0, ax0, ay1, ax1, by0, bx0, by1, bx1;
    if (center) {
        ax0 = a[0] - a[2] / 2.0, ax1 = a[0] + a[2] / 2.0, ay0 = a[1] - a[3] / 2.0,
        ay1 = a[1] + a[3] / 2.0;
        bx0 = b[0] - b[2] / 2.0, bx1 = b[0] + b[2] / 2.0, by0 = b[1] - b[3] / 2.0,
        by1 = b[1] + b[3] / 2.0;
    } else {
        ay0 = a[0] < a[2] ? a[0] : a[2], ay1 = a[0] < a[2] ? a[2] : a[0];
        ax0 = a[1] < a[3] ? a[1] : a[3], ax1 = a[1] < a[3] ? a[3] : a[1];
        by0 = b[0] < b[2] ? b[0] : b[2], by1 = b[0] < b[2] ? b[2] : b[0];
        bx0 = b[1] < b[3] ? b[1] : b[3], bx1 = b[1] < b[3] ? b[3] : b[1];
    }
    const double area_a = (ay1 - ay0) * (ax1 - ax0), area_b = (by1 - by0) * (bx1 - bx0);
    if (area_a <= 0 || area_b <= 0)
        return 0.0;
    const double ih = (ay1 < by1 ? ay1 : by1) - (ay0 > by0 ? ay0 : by0);
    const double iw = (ax1 < bx1 ? ax1 : bx1) - (ax0 > bx0 ? ax0 : bx0);
    const double inter = ih > 0 && iw > 0 ? ih * iw : 0.0;
    return inter / (area_a + area_b - inter);
}

/* How many boxes one batch entry and class selects: scores above the threshold, highest first
 * (ties to the lower index), each dropped when its IoU with a selected one is above iou_th. */
static int64_t nms_count(const float *boxes, const float *scores, int64_t n, int center,
                         int64_t max_out, double iou_th, int has_st, double st, int64_t *order) {
    int64_t k = 0, selected = 0;
    for (int64_t i = 0; i < n; i++) {
        if (has_st && !(scores[i] > st))
            continue;
        int64_t j = k++;
        while (j > 0 && scores[order[j - 1]] < scores[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    for (int64_t q = 0; q < k && selected < max_out; q++) {
        int keep = 1;
        for (int64_t s = 0; s < selected && keep; s++)
            keep = box_iou(&boxes[order[q] * 4], &boxes[order[s] * 4], center) <= iou_th;
        if (keep)
            order[selected++] = order[q]; /* selected ones move to the front, in order */
    }
    return selected;
}

/* A scalar or 1-element optional input @p index read as double (floats) or int64. */
static ses_status_t nms_scalar(const ses__infer_ctx_t *ctx, size_t index, const char *name,
                               uint32_t allowed, int *present, double *f, int64_t *i) {
    const unsigned char *p;
    ses_status_t st;
    *present = ses__op_has_input(ctx, index);
    if (!*present)
        return SES_OK;
    if ((st = ses__op_check_dtype(ctx, index, name, allowed)) != SES_OK)
        return st;
    if (ses__type_count(&ctx->inputs[index]) != 1 || ctx->inputs[index].rank > 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "%s must be a scalar or hold one value, got %s", name,
                            ses__tstr(&ctx->inputs[index]).s);
    if ((st = known_value(ctx, index, name, &p)) != SES_OK)
        return st;
    if (ctx->inputs[index].dtype == SES_I64) {
        memcpy(i, p, 8);
    } else {
        float v;
        memcpy(&v, p, 4);
        *f = v;
    }
    return SES_OK;
}

ses_status_t ses__infer_nms(ses__infer_ctx_t *ctx) {
    const ses__type_t *b = &ctx->inputs[0], *s = &ctx->inputs[1];
    const unsigned char *bp, *sp;
    int64_t center, max_out = 0, total = 0;
    double iou_th = 0.0, score_th = 0.0, unused_f;
    int has_max, has_iou, has_st;
    int64_t unused_i;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "boxes", SES__DT(SES_F32));

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "scores", SES__DT(SES_F32));
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "center_point_box", 0, &center);
    if (st != SES_OK)
        return st;
    if (b->rank != 3 || b->dims[2] != 4 || s->rank != 3 || s->dims[0] != b->dims[0] ||
        s->dims[2] != b->dims[1])
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "boxes %s must be [batch, boxes, 4] and scores %s [batch, classes, "
                            "boxes]",
                            ses__tstr(b).s, ses__tstr(s).s);
    if ((st = nms_scalar(ctx, 2, "max_output_boxes_per_class", SES__DT(SES_I64), &has_max,
                         &unused_f, &max_out)) != SES_OK ||
        (st = nms_scalar(ctx, 3, "iou_threshold", SES__DT(SES_F32), &has_iou, &iou_th,
                         &unused_i)) != SES_OK ||
        (st = nms_scalar(ctx, 4, "score_threshold", SES__DT(SES_F32), &has_st, &score_th,
                         &unused_i)) != SES_OK ||
        (st = known_value(ctx, 0, "boxes", &bp)) != SES_OK ||
        (st = known_value(ctx, 1, "scores", &sp)) != SES_OK)
        return st;
    if (!has_max || max_out < 0)
        max_out = 0;
    if (has_iou && (iou_th < 0.0 || iou_th > 1.0))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "iou_threshold %g must be in [0, 1]",
                            iou_th);
    const int64_t batch = b->dims[0], n = b->dims[1], classes = s->dims[1];
    if (max_out > 0 && n > 0 && batch * classes > 0) {
        float *bx = ses__malloc((size_t)(batch * n * 4 + batch * classes * n) * sizeof(float));
        int64_t *order = ses__malloc((size_t)n * sizeof *order);
        if (!bx || !order) {
            free(bx);
            free(order);
            return ses__op_fail(ctx, SES_OUT_OF_MEMORY, "out of memory for %" PRId64 " boxes", n);
        }
        float *sc = bx + batch * n * 4;
        memcpy(bx, bp, (size_t)(batch * n * 4) * sizeof(float));
        memcpy(sc, sp, (size_t)(batch * classes * n) * sizeof(float));
        for (int64_t q = 0; q < batch; q++)
            for (int64_t c = 0; c < classes; c++)
                total += nms_count(bx + q * n * 4, sc + (q * classes + c) * n, n, (int)center,
                                   max_out, iou_th, has_st, score_th, order);
        free(bx);
        free(order);
    }
    ctx->outputs[0].dtype = SES_I64;
    ctx->outputs[0].rank = 2;
    ctx->outputs[0].dims[0] = total;
    ctx->outputs[0].dims[1] = 3;
    /* The kernel reads boxes and scores; the rest as attributes. */
    ctx->kernel_inputs = UINT64_C(3);
    if ((st = ses__attrs_set_int(&ctx->kernel_attrs, "center_point_box", center)) != SES_OK ||
        (st = ses__attrs_set_int(&ctx->kernel_attrs, "max_output_boxes_per_class", max_out)) !=
            SES_OK ||
        (st = ses__attrs_set_float(&ctx->kernel_attrs, "iou_threshold", iou_th)) != SES_OK ||
        (st = ses__attrs_set_int(&ctx->kernel_attrs, "has_score_threshold", has_st)) != SES_OK)
        return st;
    return ses__attrs_set_float(&ctx->kernel_attrs, "score_threshold", score_th);
}
