/*
 * CumSum and Trilu, whose shape-like inputs (CumSum's axis, Trilu's k) are read at compile
 * time into the kernels' attributes: CumSum's kernel gets the data and "axis" (normalized),
 * "exclusive" and "reverse" (0 or 1); Trilu's the data and "upper" (0 or 1) and "k".
 */
#include "infer.h"

ses_status_t ses__infer_cumsum(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    int64_t axis, exclusive, reverse;
    size_t n = 0;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "x", SES__DT_NUMERIC);
    if (st == SES_OK)
        st = ses__op_read_ints(ctx, 1, "axis", SES__DT_INDEX, &axis, 1, &n);
    if (st == SES_OK && n != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "axis must hold one value, got %s",
                          ses__tstr(&ctx->inputs[1]).s);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, x->rank, x, &axis);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "exclusive", 0, &exclusive);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "reverse", 0, &reverse);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    ctx->kernel_inputs = 0x1;
    st = ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "exclusive", exclusive);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "reverse", reverse);
    return st;
}

ses_status_t ses__infer_trilu(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    int64_t upper, k = 0;
    size_t n = 1;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);
    if (st == SES_OK && x->rank < 2)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input must have rank 2 or more, got %s",
                          ses__tstr(x).s);
    if (st == SES_OK && ses__op_has_input(ctx, 1))
        st = ses__op_read_ints(ctx, 1, "k", SES__DT(SES_I64), &k, 1, &n);
    if (st == SES_OK && n != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "k must hold one value, got %s",
                          ses__tstr(&ctx->inputs[1]).s);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "upper", 1, &upper);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    ctx->kernel_inputs = 0x1;
    st = ses__attrs_set_int(&ctx->kernel_attrs, "upper", upper);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "k", k);
    return st;
}
