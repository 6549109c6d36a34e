/*
 * Reductions: ReduceSum (axes as an input, opset 13); ReduceMean, ReduceMax, ReduceMin,
 * ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp and ReduceSumSquare (axes as an
 * attribute, their opset-13 form; the importer turns the opset-18 axes input into it); ArgMax
 * and ArgMin.
 *
 * Kernels get the data alone and the attributes "axes" (explicit, non-negative, sorted, unique)
 * and "keepdims". An empty axes list reduces every axis, unless noop_with_empty_axes asks for
 * the data unchanged, which lowers to Identity.
 */
#include "infer.h"

void ses__reduced_shape(const ses__type_t *x, const int64_t *axes, size_t n, int64_t keepdims,
                        ses__type_t *out) {
    size_t next = 0;

    out->dtype = x->dtype;
    out->rank = 0;
    for (uint32_t d = 0; d < x->rank; d++) {
        int reduced = next < n && axes[next] == (int64_t)d;
        if (reduced)
            next++;
        if (!reduced)
            out->dims[out->rank++] = x->dims[d];
        else if (keepdims)
            out->dims[out->rank++] = 1;
    }
}

ses_status_t ses__reduce_axes(const ses__infer_ctx_t *ctx, const ses__type_t *x,
                              const int64_t *axes, size_t n, int64_t noop_with_empty_axes,
                              int64_t *out, size_t *out_n) {
    *out_n = 0;
    if (n == 0 && noop_with_empty_axes)
        return SES_OK;
    if (n > 0)
        return ses__op_axes(ctx, "axes value", axes, n, x->rank, x, SES__AXES_MERGE_DUPLICATES, out,
                            out_n);
    for (uint32_t d = 0; d < x->rank; d++)
        out[(*out_n)++] = d;
    return SES_OK;
}

/* Shared by the Reduce ops once their axes are read, whichever way they came. */
static ses_status_t reduce(ses__infer_ctx_t *ctx, const int64_t *axes, size_t n,
                           int64_t noop_with_empty_axes) {
    const ses__type_t *x = &ctx->inputs[0];
    int64_t keepdims, normal[SES_MAX_RANK];
    size_t count = 0;
    ses_status_t st;

    st = ses__op_attr_flag(ctx, "keepdims", 1, &keepdims);
    if (st != SES_OK)
        return st;
    ctx->kernel_inputs = 0x1;
    if (n == 0 && noop_with_empty_axes) {
        ctx->kernel_op = "Identity";
        ctx->outputs[0] = *x;
        return SES_OK;
    }
    st = ses__reduce_axes(ctx, x, axes, n, 0, normal, &count);
    if (st != SES_OK)
        return st;
    ses__reduced_shape(x, normal, count, keepdims, &ctx->outputs[0]);
    st = ses__attrs_set_ints(&ctx->kernel_attrs, "axes", normal, count);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "keepdims", keepdims);
    return st;
}

ses_status_t ses__infer_reduce_sum(ses__infer_ctx_t *ctx) {
    /* Room for every axis twice over: repeats are merged, anything longer is surely wrong. */
    int64_t axes[SES_MAX_RANK * 2];
    size_t n = 0;
    int64_t noop;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "data", SES__DT_NUMERIC);
    if (st != SES_OK)
        return st;
    if (ses__attrs_find(ctx->attrs, "axes"))
        return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                            "axes as an attribute (the opset-11 form) is not supported; pass "
                            "them as input 1");
    st = ses__op_attr_flag(ctx, "noop_with_empty_axes", 0, &noop);
    if (st == SES_OK && ses__op_has_input(ctx, 1))
        st = ses__op_read_ints(ctx, 1, "axes", SES__DT(SES_I64), axes, sizeof axes / sizeof axes[0],
                               &n);
    if (st != SES_OK)
        return st;
    return reduce(ctx, axes, n, noop);
}

/* The Reduce ops other than ReduceSum, at opset 13: axes is an optional ints attribute.
 * noop_with_empty_axes (opset 18, kept by the importer) applies when it is empty. */
static ses_status_t reduce_with_axes_attribute(ses__infer_ctx_t *ctx, uint32_t allowed) {
    const int64_t *axes;
    size_t n;
    int present;
    int64_t noop;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "data", allowed);
    if (st != SES_OK)
        return st;
    if (ses__op_has_input(ctx, 1))
        return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                            "axes as an input (the opset-18 form) is not supported; give them as "
                            "the axes attribute");
    st = ses__op_attr_ints(ctx, "axes", &axes, &n, &present);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "noop_with_empty_axes", 0, &noop);
    if (st != SES_OK)
        return st;
    return reduce(ctx, axes, n, noop);
}

ses_status_t ses__infer_reduce_mean(ses__infer_ctx_t *ctx) {
    return reduce_with_axes_attribute(ctx, SES__DT_FLOAT);
}

ses_status_t ses__infer_reduce_max(ses__infer_ctx_t *ctx) {
    return reduce_with_axes_attribute(ctx, SES__DT_NUMERIC);
}

/* ReduceMin, ReduceProd, ReduceL1 and ReduceSumSquare: integers too. */
ses_status_t ses__infer_reduce_numeric(ses__infer_ctx_t *ctx) {
    return reduce_with_axes_attribute(ctx, SES__DT_NUMERIC);
}

/* ReduceL2, ReduceLogSum and ReduceLogSumExp: a square root or a log of integers is not an
 * integer, so their kernels take floats only, as ReduceMean's. */
ses_status_t ses__infer_reduce_float(ses__infer_ctx_t *ctx) {
    return reduce_with_axes_attribute(ctx, SES__DT_FLOAT);
}

/* ArgMax and ArgMin. */
ses_status_t ses__infer_argmax(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    ses__attrs_t *ka = &ctx->kernel_attrs;
    int64_t axis, keepdims, last;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "data", SES__DT_NUMERIC);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", 0, &axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, x->rank, x, &axis);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "keepdims", 1, &keepdims);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "select_last_index", 0, &last);
    if (st != SES_OK)
        return st;
    /* An empty axis has no largest (smallest) element, so there is no index to return. */
    if (x->dims[axis] == 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "axis %lld has no elements to choose from: data is %s", (long long)axis,
                            ses__tstr(x).s);
    ses__reduced_shape(x, &axis, 1, keepdims, &ctx->outputs[0]);
    ctx->outputs[0].dtype = SES_I64;
    st = ses__attrs_set_int(ka, "axis", axis);
    if (st == SES_OK)
        st = ses__attrs_set_int(ka, "keepdims", keepdims);
    if (st == SES_OK)
        st = ses__attrs_set_int(ka, "select_last_index", last);
    return st;
}
