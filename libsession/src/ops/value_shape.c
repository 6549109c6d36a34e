/*
 * Ops whose output shape depends on input values: NonZero, Compress and TopK. Their inference
 * reads the value at compile time (a constant, a fed value, or one computed from those: the
 * compiler computes it, compile.c's mark_needed), as Range's does; a plan fed another value is
 * compiled again. The kernels (plugins/cpu/cpu_value_shape.c) find the same shapes at run time
 * from the same values.
 */
#include <inttypes.h>
#include <string.h>

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
