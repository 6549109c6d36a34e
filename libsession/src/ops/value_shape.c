/*
 * Ops whose output shape depends on input values: NonZero, Compress, TopK and Unique. Their inference
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
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "condition %s is longer than the %" PRId64 " %s of input %s",
                            ses__tstr(c).s, along, axis < 0 ? "elements" : "entries along axis",
                            ses__tstr(x).s);
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
                            "K is %" PRId64 ": it must be in [0, %" PRId64 "], the size of axis "
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
