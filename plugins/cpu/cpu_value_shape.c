/*
 * Kernels of the ops whose output shape depends on input values (libsession infers it from the
 * values at compile time): NonZero, Compress, TopK and Unique. Each checks that the output it was
 * given is the shape the values make, and fails naming both when not.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* Whether element @p k of @p t is non-zero (NaN is; -0.0 is not). */
static int nonzero_at(const cpu__tensor_t *t, uint64_t k) {
    const unsigned char *p = t->data + k * t->esize;
    uint64_t bits = 0;

    switch (t->dtype) {
        case SES_DRV_DTYPE_F32:
            return *(const float *)(const void *)p != 0.0f;
        case SES_DRV_DTYPE_F64:
            return *(const double *)(const void *)p != 0.0;
        case SES_DRV_DTYPE_F16:
        case SES_DRV_DTYPE_BF16:
            return (*(const uint16_t *)(const void *)p & 0x7fffu) != 0;
        default:
            memcpy(&bits, p, t->esize);
            return bits != 0;
    }
}

int32_t cpu__nonzero(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    int64_t *out = (int64_t *)(void *)y->data;
    int64_t coord[CPU__MAX_RANK] = {0};
    uint64_t nz = 0, j = 0;
    int32_t st = cpu__check_rank(call, "X", x);

    if (st != SES_DRV_OK)
        return st;
    for (uint64_t k = 0; k < x->count; k++)
        nz += (uint64_t)nonzero_at(x, k);
    if (y->rank != 2 || y->dims[0] != (int64_t)x->rank || y->dims[1] != (int64_t)nz)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "X has %" PRIu64 " non-zero elements in %" PRIu32
                              " dimensions, but the output is not [%" PRIu32 ",%" PRIu64 "]",
                              nz, x->rank, x->rank, nz);
    for (uint64_t k = 0; k < x->count; k++) {
        if (nonzero_at(x, k)) {
            for (uint32_t d = 0; d < x->rank; d++)
                out[d * nz + j] = coord[d];
            j++;
        }
        /* The next element's coordinates, last dimension fastest. */
        for (uint32_t d = x->rank; d-- > 0;) {
            if (++coord[d] < x->dims[d])
                break;
            coord[d] = 0;
        }
    }
    return SES_DRV_OK;
}

int32_t cpu__compress(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *c = &call->in[1], *y = &call->outs[0];
    uint64_t outer = 1, n = x->count, inner = 1, count = 0;
    int64_t axis;
    int32_t st = cpu__attr_int(call, "axis", 1, -1, &axis);

    if (st != SES_DRV_OK)
        return st;
    if (axis >= (int64_t)x->rank || axis < -1 || c->rank != 1)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " (or -1 for the flattened input) for rank %" PRIu32
                              " and a 1-D condition of rank %" PRIu32,
                              axis, x->rank, c->rank);
    if (axis >= 0) {
        for (int64_t d = 0; d < axis; d++)
            outer *= (uint64_t)x->dims[d];
        n = (uint64_t)x->dims[axis];
        for (uint32_t d = (uint32_t)axis + 1; d < x->rank; d++)
            inner *= (uint64_t)x->dims[d];
    }
    if (c->count > n)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "condition has %" PRIu64 " entries, more than the %" PRIu64
                              " it selects from",
                              c->count, n);
    for (uint64_t j = 0; j < c->count; j++)
        count += c->data[j] != 0;
    if (y->count != outer * count * inner)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "condition selects %" PRIu64 " of %" PRIu64
                              ", but the output holds %" PRIu64 " elements",
                              count, n, y->count);
    const size_t row = (size_t)inner * x->esize;
    unsigned char *dst = y->data;
    for (uint64_t o = 0; o < outer; o++)
        for (uint64_t j = 0; j < c->count; j++)
            if (c->data[j]) {
                memcpy(dst, x->data + (o * n + j) * row, row);
                dst += row;
            }
    return SES_DRV_OK;
}

/* TopK's order: the keys of one slice, as doubles (floats) or int64 (integers). */
typedef struct topk_keys {
    const double *f;
    const int64_t *i;
    int largest;
} topk_keys_t;

/* Whether index @p a goes strictly before index @p b: larger (or smaller) first; NaN counts as
 * larger than every number. Ties keep index order (the sort is stable). */
static int before(const topk_keys_t *k, int64_t a, int64_t b) {
    if (k->f) {
        const double x = k->f[a], y = k->f[b];
        const int xn = isnan(x), yn = isnan(y);
        if (xn || yn)
            return k->largest ? xn && !yn : yn && !xn;
        return k->largest ? x > y : x < y;
    }
    return k->largest ? k->i[a] > k->i[b] : k->i[a] < k->i[b];
}

/* Stable merge sort of idx[0..n) by before(), with tmp[0..n) as scratch. */
static void sort_indices(const topk_keys_t *k, int64_t *idx, int64_t *tmp, int64_t n) {
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = before(k, idx[b], idx[a]) ? idx[b++] : idx[a++];
            while (a < mid)
                tmp[o++] = idx[a++];
            while (b < hi)
                tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

int32_t cpu__topk(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *v = &call->outs[0], *ix = &call->outs[1];
    const int is_float = x->dtype == SES_DRV_DTYPE_F32 || x->dtype == SES_DRV_DTYPE_F64;
    int64_t axis, largest, outer = 1, inner = 1, n, k;
    int32_t st = cpu__attr_int(call, "axis", 1, -1, &axis);

    if (st == SES_DRV_OK)
        st = cpu__attr_int(call, "largest", 1, 1, &largest);
    if (st != SES_DRV_OK)
        return st;
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis >= (int64_t)x->rank || v->rank != x->rank || !cpu__same_shape(v, ix))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " for X of rank %" PRIu32
                              ", and Values and Indices of X's rank and one shape",
                              axis, x->rank);
    for (uint32_t d = 0; d < x->rank; d++) {
        if (d != (uint32_t)axis && v->dims[d] != x->dims[d])
            return cpu__call_fail(
                call, SES_DRV_INVALID_ARGUMENT,
                "Values differ from X in dimension %" PRIu32 ", which is not the axis", d);
        if (d < (uint32_t)axis)
            outer *= x->dims[d];
        else if (d > (uint32_t)axis)
            inner *= x->dims[d];
    }
    n = x->dims[axis];
    k = v->dims[axis];
    if (k > n)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "K %" PRId64 " is more than the %" PRId64 " entries along the axis",
                              k, n);
    if (k == 0 || outer * inner == 0)
        return SES_DRV_OK;
    int64_t *idx = malloc((size_t)n * 3 * sizeof *idx);
    if (!idx)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "out of memory for %" PRId64 " keys", n);
    int64_t *tmp = idx + n, *ikeys = idx + 2 * n;
    double *fkeys = (double *)(void *)ikeys; /* the same bytes, as doubles for a float X */
    topk_keys_t keys = {is_float ? fkeys : NULL, is_float ? NULL : ikeys, (int)largest};
    int64_t *out_i = (int64_t *)(void *)ix->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            for (int64_t j = 0; j < n; j++) {
                const uint64_t at = (uint64_t)((o * n + j) * inner + in);
                idx[j] = j;
                switch (x->dtype) {
                    case SES_DRV_DTYPE_F32:
                        fkeys[j] = ((const float *)(const void *)x->data)[at];
                        break;
                    case SES_DRV_DTYPE_F64:
                        fkeys[j] = ((const double *)(const void *)x->data)[at];
                        break;
                    case SES_DRV_DTYPE_I32:
                        ikeys[j] = ((const int32_t *)(const void *)x->data)[at];
                        break;
                    default:
                        ikeys[j] = ((const int64_t *)(const void *)x->data)[at];
                        break;
                }
            }
            sort_indices(&keys, idx, tmp, n);
            for (int64_t j = 0; j < k; j++) {
                const uint64_t from = (uint64_t)((o * n + idx[j]) * inner + in);
                const uint64_t to = (uint64_t)((o * k + j) * inner + in);
                memcpy(v->data + to * v->esize, x->data + from * x->esize, x->esize);
                out_i[to] = idx[j];
            }
        }
    free(idx);
    return SES_DRV_OK;
}

/* Unique's rows: X flattened (one element a row), or its slices along the axis, each the
 * elements x[o, j, i] in (o, i) order. */
typedef struct rows {
    const cpu__tensor_t *x;
    int64_t outer, n, inner;
} rows_t;

/* -1, 0, 1 as element @p a compares with element @p b: numbers by value, NaN above every
 * number and equal to NaN, -0.0 equal to 0.0. */
static int element_cmp(const cpu__tensor_t *x, int64_t a, int64_t b) {
    const void *pa = x->data + (size_t)a * x->esize, *pb = x->data + (size_t)b * x->esize;
    switch (x->dtype) {
        case SES_DRV_DTYPE_F32:
        case SES_DRV_DTYPE_F64: {
            const double u =
                x->dtype == SES_DRV_DTYPE_F32 ? *(const float *)pa : *(const double *)pa;
            const double v =
                x->dtype == SES_DRV_DTYPE_F32 ? *(const float *)pb : *(const double *)pb;
            if (isnan(u) || isnan(v))
                return (isnan(u) != 0) - (isnan(v) != 0);
            return (u > v) - (u < v);
        }
        case SES_DRV_DTYPE_I32: {
            const int32_t u = *(const int32_t *)pa, v = *(const int32_t *)pb;
            return (u > v) - (u < v);
        }
        case SES_DRV_DTYPE_I64: {
            const int64_t u = *(const int64_t *)pa, v = *(const int64_t *)pb;
            return (u > v) - (u < v);
        }
        default: {
            uint64_t u = 0, v = 0;
            memcpy(&u, pa, x->esize);
            memcpy(&v, pb, x->esize);
            return (u > v) - (u < v);
        }
    }
}

static int row_cmp(const rows_t *r, int64_t a, int64_t b) {
    for (int64_t o = 0; o < r->outer; o++)
        for (int64_t i = 0; i < r->inner; i++) {
            int c = element_cmp(r->x, (o * r->n + a) * r->inner + i, (o * r->n + b) * r->inner + i);
            if (c)
                return c;
        }
    return 0;
}

/* Stable merge sort of idx[0..n) by @p less (rows, or first occurrences when @p first). */
static void sort_rows(const rows_t *r, const int64_t *first, int64_t *idx, int64_t *tmp,
                      int64_t n) {
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) {
                int b_first =
                    first ? first[idx[b]] < first[idx[a]] : row_cmp(r, idx[b], idx[a]) < 0;
                tmp[o++] = b_first ? idx[b++] : idx[a++];
            }
            while (a < mid)
                tmp[o++] = idx[a++];
            while (b < hi)
                tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

int32_t cpu__unique(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    int64_t axis, sorted, u = 0;
    rows_t r = {x, 1, (int64_t)x->count, 1};
    int32_t st = cpu__attr_int(call, "axis", 1, -1, &axis);

    if (st == SES_DRV_OK)
        st = cpu__attr_int(call, "sorted", 1, 1, &sorted);
    if (st != SES_DRV_OK)
        return st;
    if (axis < -1 || axis >= (int64_t)x->rank)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " (or -1 for the flattened input) for rank %" PRIu32,
                              axis, x->rank);
    if (axis >= 0) {
        r.n = x->dims[axis];
        for (uint32_t d = 0; d < x->rank; d++) {
            if ((int64_t)d < axis)
                r.outer *= x->dims[d];
            else if ((int64_t)d > axis)
                r.inner *= x->dims[d];
        }
    }
    /* idx: rows in sorted order; group: each row's group; first, count: per group (indexed
     * by group), order: the groups in output order; pos: each group's output position. */
    int64_t *mem = malloc(((size_t)r.n * 7 + 1) * sizeof *mem);
    if (!mem)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "out of memory for %" PRId64 " rows",
                              r.n);
    int64_t *idx = mem, *tmp = idx + r.n, *group = tmp + r.n, *first = group + r.n,
            *count = first + r.n, *order = count + r.n, *pos = order + r.n;
    for (int64_t j = 0; j < r.n; j++)
        idx[j] = j;
    sort_rows(&r, NULL, idx, tmp, r.n);
    for (int64_t j = 0; j < r.n; j++) {
        if (j == 0 || row_cmp(&r, idx[j - 1], idx[j]) != 0) {
            first[u] = idx[j]; /* the sort is stable: the first row of a run comes first */
            count[u++] = 0;
        }
        group[idx[j]] = u - 1;
        count[u - 1]++;
    }
    const int64_t want = axis >= 0 ? (x->dims[axis] ? u : 0) : u;
    if ((axis < 0 && (y->rank != 1 || y->dims[0] != u)) ||
        (axis >= 0 && (y->rank != x->rank || y->dims[axis] != want)))
        st = cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                            "X has %" PRId64 " distinct %s, but Y does not hold that many", u,
                            axis < 0 ? "elements" : "slices");
    for (uint32_t o = 1; st == SES_DRV_OK && o < call->n_out; o++)
        if (call->outs[o].count != (uint64_t)(o == 2 ? r.n : u))
            st = cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                "output %" PRIu32 " holds %" PRIu64 " values, not %" PRId64, o,
                                call->outs[o].count, o == 2 ? r.n : u);
    if (st != SES_DRV_OK) {
        free(mem);
        return st;
    }
    for (int64_t g = 0; g < u; g++)
        order[g] = g;
    if (!sorted)
        sort_rows(&r, first, order, tmp, u); /* by first occurrence */
    for (int64_t g = 0; g < u; g++)
        pos[order[g]] = g;
    const size_t row = (size_t)r.inner * x->esize;
    for (int64_t o = 0; o < r.outer; o++)
        for (int64_t g = 0; g < u; g++)
            memcpy(y->data + ((size_t)(o * u + g)) * row,
                   x->data + ((size_t)(o * r.n + first[order[g]])) * row, row);
    for (uint32_t o = 1; o < call->n_out; o++) {
        int64_t *out = (int64_t *)(void *)call->outs[o].data;
        if (o == 2) {
            for (int64_t j = 0; j < r.n; j++)
                out[j] = pos[group[j]];
        } else {
            for (int64_t g = 0; g < u; g++)
                out[g] = o == 1 ? first[order[g]] : count[order[g]];
        }
    }
    free(mem);
    return SES_DRV_OK;
}

/* ---- NonMaxSuppression ------------------------------------------------------------------- */

/* Intersection over union of boxes @p a and @p b (corners in any order, or center and size);
 * 0 when either has no area. */
static double box_iou(const float *a, const float *b, int center) {
    double ay0, ax0, ay1, ax1, by0, bx0, by1, bx1;
    if (center) {
        ax0 = a[0] - a[2] / 2.0, ax1 = a[0] + a[2] / 2.0, ay0 = a[1] - a[3] / 2.0,
        ay1 = a[1] + a[3] / 2.0;
        bx0 = b[0] - b[2] / 2.0, bx1 = b[0] + b[2] / 2.0, by0 = b[1] - b[3] / 2.0,
        by1 = b[1] + b[3] / 2.0;
    } else {
        ay0 = fmin(a[0], a[2]), ay1 = fmax(a[0], a[2]), ax0 = fmin(a[1], a[3]),
        ax1 = fmax(a[1], a[3]);
        by0 = fmin(b[0], b[2]), by1 = fmax(b[0], b[2]), bx0 = fmin(b[1], b[3]),
        bx1 = fmax(b[1], b[3]);
    }
    const double area_a = (ay1 - ay0) * (ax1 - ax0), area_b = (by1 - by0) * (bx1 - bx0);
    if (area_a <= 0 || area_b <= 0)
        return 0.0;
    const double ih = fmin(ay1, by1) - fmax(ay0, by0), iw = fmin(ax1, bx1) - fmax(ax0, bx0);
    const double inter = ih > 0 && iw > 0 ? ih * iw : 0.0;
    return inter / (area_a + area_b - inter);
}

int32_t cpu__nms(const cpu__call_t *call) {
    const cpu__tensor_t *b = &call->in[0], *s = &call->in[1], *y = &call->outs[0];
    int64_t center, max_out, has_st;
    double iou_th, score_th;
    int32_t st = cpu__attr_int(call, "center_point_box", 1, 0, &center);

    if (st == SES_DRV_OK)
        st = cpu__attr_int(call, "max_output_boxes_per_class", 1, 0, &max_out);
    if (st == SES_DRV_OK)
        st = cpu__attr_int(call, "has_score_threshold", 1, 0, &has_st);
    if (st == SES_DRV_OK)
        st = cpu__attr_float(call, "iou_threshold", 0.0, &iou_th);
    if (st == SES_DRV_OK)
        st = cpu__attr_float(call, "score_threshold", 0.0, &score_th);
    if (st != SES_DRV_OK)
        return st;
    if (b->rank != 3 || b->dims[2] != 4 || s->rank != 3 || s->dims[0] != b->dims[0] ||
        s->dims[2] != b->dims[1] || y->rank != 2 || y->dims[1] != 3)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "boxes [batch, boxes, 4], scores [batch, classes, boxes] and an "
                              "output [selected, 3]");
    const int64_t batch = b->dims[0], n = b->dims[1], classes = s->dims[1];
    const float *boxes = (const float *)(const void *)b->data;
    const float *scores = (const float *)(const void *)s->data;
    int64_t *out = (int64_t *)(void *)y->data, total = 0;
    int64_t *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "out of memory for %" PRId64 " boxes",
                              n);
    for (int64_t q = 0; q < batch && max_out > 0; q++)
        for (int64_t c = 0; c < classes; c++) {
            const float *bx = boxes + q * n * 4, *sc = scores + (q * classes + c) * n;
            int64_t k = 0, selected = 0;
            /* Scores above the threshold, highest first, ties to the lower index. */
            for (int64_t i = 0; i < n; i++) {
                if (has_st && !(sc[i] > score_th))
                    continue;
                int64_t j = k++;
                while (j > 0 && sc[order[j - 1]] < sc[i]) {
                    order[j] = order[j - 1];
                    j--;
                }
                order[j] = i;
            }
            for (int64_t r = 0; r < k && selected < max_out; r++) {
                int keep = 1;
                for (int64_t p = 0; p < selected && keep; p++)
                    keep = box_iou(&bx[order[r] * 4], &bx[order[p] * 4], (int)center) <= iou_th;
                if (!keep)
                    continue;
                order[selected++] = order[r];
                if (total < y->dims[0]) {
                    out[total * 3] = q;
                    out[total * 3 + 1] = c;
                    out[total * 3 + 2] = order[selected - 1];
                }
                total++;
            }
        }
    free(order);
    if (total != y->dims[0])
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "%" PRId64 " boxes are selected, but the output holds %" PRId64,
                              total, y->dims[0]);
    return SES_DRV_OK;
}
