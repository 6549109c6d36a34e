/* Elementwise ops: Identity, unary math, binary arithmetic and comparisons with numpy
 * broadcasting, and Where. */
#include "infer.h"

ses_status_t ses__infer_identity(ses__infer_ctx_t *ctx) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);
    if (st == SES_OK)
        ctx->outputs[0] = ctx->inputs[0];
    return st;
}

/* A and B: the same dtype, one of @p allowed, broadcast together. The output has
 * @p out_dtype, or the inputs' dtype when that is SES_DTYPE_INVALID. */
static ses_status_t binary(ses__infer_ctx_t *ctx, uint32_t allowed, ses_dtype_t out_dtype) {
    static const size_t indices[] = {0, 1};
    static const char *const names[] = {"A", "B"};
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "A", allowed);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "A", 1, "B");
    if (st == SES_OK)
        st = ses__op_broadcast(ctx, indices, names, 2, &ctx->outputs[0]);
    if (st == SES_OK)
        ctx->outputs[0].dtype = out_dtype != SES_DTYPE_INVALID ? out_dtype : ctx->inputs[0].dtype;
    return st;
}

ses_status_t ses__infer_arithmetic(ses__infer_ctx_t *ctx) {
    return binary(ctx, SES__DT_NUMERIC, SES_DTYPE_INVALID);
}

/* ONNX lets the exponent have its own dtype; we ask for the base's, so kernels have one
 * signature per dtype. */
ses_status_t ses__infer_pow(ses__infer_ctx_t *ctx) {
    return binary(ctx, SES__DT_FLOAT, SES_DTYPE_INVALID);
}

ses_status_t ses__infer_equal(ses__infer_ctx_t *ctx) {
    return binary(ctx, SES__DT_BASIC, SES_BOOL);
}

/* Greater and Less: orderings, so no bool. */
ses_status_t ses__infer_compare(ses__infer_ctx_t *ctx) {
    return binary(ctx, SES__DT_NUMERIC | SES__DT(SES_U8), SES_BOOL);
}

ses_status_t ses__infer_where(ses__infer_ctx_t *ctx) {
    static const size_t indices[] = {0, 1, 2};
    static const char *const names[] = {"condition", "X", "Y"};
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "condition", SES__DT(SES_BOOL));
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "X", SES__DT_BASIC);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 1, "X", 2, "Y");
    if (st == SES_OK)
        st = ses__op_broadcast(ctx, indices, names, 3, &ctx->outputs[0]);
    if (st == SES_OK)
        ctx->outputs[0].dtype = ctx->inputs[1].dtype;
    return st;
}

static ses_status_t unary(ses__infer_ctx_t *ctx, uint32_t allowed) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, "X", allowed);
    if (st == SES_OK)
        ctx->outputs[0] = ctx->inputs[0];
    return st;
}

/* Neg, Abs, Relu. */
ses_status_t ses__infer_unary_numeric(ses__infer_ctx_t *ctx) {
    return unary(ctx, SES__DT_NUMERIC);
}

/* Exp, Log, Sqrt, Reciprocal, Sigmoid, Tanh, Softplus, Erf. */
ses_status_t ses__infer_unary_float(ses__infer_ctx_t *ctx) {
    return unary(ctx, SES__DT_FLOAT);
}

ses_status_t ses__infer_leaky_relu(ses__infer_ctx_t *ctx) {
    double alpha;
    ses_status_t st = unary(ctx, SES__DT_FLOAT);

    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "alpha", 0.01, &alpha);
    /* Kernels always get alpha, so they never need to know the default. */
    if (st == SES_OK)
        st = ses__attrs_set_float(&ctx->kernel_attrs, "alpha", alpha);
    return st;
}
