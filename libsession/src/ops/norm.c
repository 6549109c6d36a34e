/*
 * The normalizations of exported CNNs beyond BatchNormalization and LayerNormalization (cnn.c):
 *
 *   op (inputs; attributes)                      kernel (inputs passed; normalized attributes)
 *   InstanceNormalization(X, scale, B; epsilon)  InstanceNormalization (all three; epsilon)
 *   LRN(X; alpha, beta, bias, size)              LRN (X; alpha, beta, bias, size)
 *   MeanVarianceNormalization(X; axes)           MeanVarianceNormalization (X; axes: sorted,
 *                                                  non-negative, each once)
 *
 * MeanVarianceNormalization is ONNX's function (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9) over
 * the axes (default 0, 2, 3); the kernel computes the variance as E[(X - E[X])^2].
 */
#include "spatial.h"

#include "infer.h"

ses_status_t ses__infer_instance_norm(ses__infer_ctx_t *ctx) {
    static const char *const names[] = {"input", "scale", "B"};
    const ses__type_t *x = &ctx->inputs[0];
    double epsilon;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_FLOAT);

    if (st == SES_OK && x->rank < 3)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "input must be [N, C, spatial...] with at least one spatial dimension, "
                          "got %s",
                          ses__tstr(x).s);
    for (size_t i = 1; st == SES_OK && i < 3; i++) {
        const ses__type_t *p = &ctx->inputs[i];
        st = ses__op_check_same_dtype(ctx, 0, "input", i, names[i]);
        if (st == SES_OK && (p->rank != 1 || p->dims[0] != x->dims[1]))
            st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                              "%s must be 1-D with one entry per channel: input is %s, %s is %s",
                              names[i], ses__tstr(x).s, names[i], ses__tstr(p).s);
    }
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "epsilon", 1e-5, &epsilon);
    if (st == SES_OK && !(epsilon >= 0.0))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute epsilon is %g; it must be >= 0",
                          epsilon);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    return ses__attrs_set_float(&ctx->kernel_attrs, "epsilon", epsilon);
}

ses_status_t ses__infer_lrn(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    double alpha, beta, bias;
    int64_t size;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT);

    if (st == SES_OK && x->rank < 2)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "X must be [N, C, ...], got %s",
                          ses__tstr(x).s);
    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "size", &size);
    if (st == SES_OK && size < 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute size is %lld; it must be >= 1",
                          (long long)size);
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "alpha", 1e-4, &alpha);
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "beta", 0.75, &beta);
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "bias", 1.0, &bias);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    st = ses__attrs_set_int(&ctx->kernel_attrs, "size", size);
    if (st == SES_OK)
        st = ses__attrs_set_float(&ctx->kernel_attrs, "alpha", alpha);
    if (st == SES_OK)
        st = ses__attrs_set_float(&ctx->kernel_attrs, "beta", beta);
    if (st == SES_OK)
        st = ses__attrs_set_float(&ctx->kernel_attrs, "bias", bias);
    return st;
}

ses_status_t ses__infer_mvn(ses__infer_ctx_t *ctx) {
    static const int64_t default_axes[] = {0, 2, 3};
    const ses__type_t *x = &ctx->inputs[0];
    const int64_t *given;
    int64_t axes[SES_MAX_RANK];
    size_t n_given, n = 0;
    int present;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT);

    if (st == SES_OK)
        st = ses__op_attr_ints(ctx, "axes", &given, &n_given, &present);
    if (st != SES_OK)
        return st;
    if (!present) {
        given = default_axes;
        n_given = 3;
    }
    st = ses__op_axes(ctx, "axes value", given, n_given, x->rank, x, SES__AXES_REJECT_DUPLICATES,
                      axes, &n);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    return ses__attrs_set_ints(&ctx->kernel_attrs, "axes", axes, n);
}
