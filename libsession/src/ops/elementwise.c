/* Elementwise ops: Identity, unary math, binary arithmetic, comparisons and logic with numpy
 * broadcasting, Where, the variadic Min and Max, and Clip. */
#include <stdio.h>
#include <string.h>

#include "infer.h"

ses_status_t ses__infer_identity(ses__infer_ctx_t *ctx) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY | SES__DT(SES_STRING));
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

/* Every integer dtype, and every number: the ops ONNX defines on all of them (Add Sub Mul Div,
 * Min, Max, Mod, Sign, GreaterOrEqual, LessOrEqual) take them all; a driver without a kernel for
 * one refuses it when the plan is compiled. */
#define DT_INTEGER                                                                                \
    (SES__DT(SES_I8) | SES__DT(SES_I16) | SES__DT(SES_I32) | SES__DT(SES_I64) | SES__DT(SES_U8) | \
     SES__DT(SES_U16) | SES__DT(SES_U32) | SES__DT(SES_U64))
#define DT_UNSIGNED (SES__DT(SES_U8) | SES__DT(SES_U16) | SES__DT(SES_U32) | SES__DT(SES_U64))
#define DT_ALL_NUMERIC (SES__DT_FLOAT | DT_INTEGER)

ses_status_t ses__infer_arithmetic(ses__infer_ctx_t *ctx) {
    return binary(ctx, DT_ALL_NUMERIC, SES_DTYPE_INVALID);
}

/* Pow: the base (ONNX's T: a float, i32 or i64) gives the output's dtype; the exponent (T1)
 * may be any number dtype. The two broadcast together. */
ses_status_t ses__infer_pow(ses__infer_ctx_t *ctx) {
    static const size_t indices[] = {0, 1};
    static const char *const names[] = {"X", "Y"};
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT | SES__DT(SES_I32) | SES__DT(SES_I64));
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "Y", DT_ALL_NUMERIC);
    if (st == SES_OK)
        st = ses__op_broadcast(ctx, indices, names, 2, &ctx->outputs[0]);
    if (st == SES_OK)
        ctx->outputs[0].dtype = ctx->inputs[0].dtype;
    return st;
}

/* GreaterOrEqual and LessOrEqual: every number dtype, both inputs the same. */
ses_status_t ses__infer_compare_or_equal(ses__infer_ctx_t *ctx) {
    return binary(ctx, DT_ALL_NUMERIC, SES_BOOL);
}

ses_status_t ses__infer_equal(ses__infer_ctx_t *ctx) {
    /* Strings are compared on the host (exec/host_strings.c). */
    return binary(ctx, SES__DT_BASIC | SES__DT(SES_STRING), SES_BOOL);
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

/* Exp, Log, Sqrt, Reciprocal, Sigmoid, Tanh, Softplus, Erf, Round and the trigonometric and
 * hyperbolic functions. */
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

/* PRelu: slope broadcasts to X unidirectionally (the output is X's shape). */
ses_status_t ses__infer_prelu(ses__infer_ctx_t *ctx) {
    static const size_t indices[] = {0, 1};
    static const char *const names[] = {"X", "slope"};
    const ses__type_t *x = &ctx->inputs[0];
    ses__type_t out;
    ses_status_t st = unary(ctx, SES__DT_FLOAT);

    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "X", 1, "slope");
    if (st == SES_OK)
        st = ses__op_broadcast(ctx, indices, names, 2, &out);
    if (st != SES_OK)
        return st;
    int same = out.rank == x->rank;
    for (uint32_t d = 0; same && d < x->rank; d++)
        same = out.dims[d] == x->dims[d];
    if (!same)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "slope must broadcast to X's shape: X is %s, slope is %s",
                            ses__tstr(x).s, ses__tstr(&ctx->inputs[1]).s);
    return SES_OK;
}

/* Min and Max: one or more inputs (data_0, data_1, ...) of one dtype, all broadcast together. */
ses_status_t ses__infer_min_max(ses__infer_ctx_t *ctx) {
    size_t indices[SES__MAX_INPUTS];
    char labels[SES__MAX_INPUTS][32]; /* "data_" and any size_t */
    const char *names[SES__MAX_INPUTS];
    ses_status_t st = ses__op_check_dtype(ctx, 0, "data_0", DT_ALL_NUMERIC);

    for (size_t i = 0; i < ctx->n_inputs; i++) {
        snprintf(labels[i], sizeof labels[i], "data_%zu", i);
        indices[i] = i;
        names[i] = labels[i];
        if (st == SES_OK && i > 0)
            st = ses__op_check_same_dtype(ctx, 0, names[0], i, names[i]);
    }
    if (st == SES_OK)
        st = ses__op_broadcast(ctx, indices, names, ctx->n_inputs, &ctx->outputs[0]);
    if (st == SES_OK)
        ctx->outputs[0].dtype = ctx->inputs[0].dtype;
    return st;
}

/* Mod: integers and floats; fmod (0 or 1) says whose sign the result has, the divisor's (0, as
 * Python's %) or the dividend's (1, as C's fmod). ONNX requires fmod=1 for floats. Kernels
 * always get fmod. */
ses_status_t ses__infer_mod(ses__infer_ctx_t *ctx) {
    int64_t fmod_flag = 0;
    ses_status_t st = binary(ctx, DT_ALL_NUMERIC, SES_DTYPE_INVALID);

    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "fmod", 0, &fmod_flag);
    if (st == SES_OK && fmod_flag == 0 && (SES__DT(ctx->inputs[0].dtype) & SES__DT_FLOAT))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "attribute fmod must be 1 for floating-point inputs (A is %s)",
                          ses__tstr(&ctx->inputs[0]).s);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "fmod", fmod_flag);
    return st;
}

/* And, Or, Xor: bool with bool, broadcast. */
ses_status_t ses__infer_logical(ses__infer_ctx_t *ctx) {
    return binary(ctx, SES__DT(SES_BOOL), SES_BOOL);
}

/* BitShift: unsigned integers; direction (STRING "LEFT" or "RIGHT", required) reaches kernels
 * as the INT direction, 0 for LEFT and 1 for RIGHT. */
ses_status_t ses__infer_bit_shift(ses__infer_ctx_t *ctx) {
    const char *text = NULL;
    int rc;
    ses_status_t st = binary(ctx, DT_UNSIGNED, SES_DTYPE_INVALID);

    if (st != SES_OK)
        return st;
    rc = ses__attrs_get_string(ctx->attrs, "direction", &text);
    if (rc < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute direction must be of type string, got %s",
                            ses__attr_type_name(ses__attrs_find(ctx->attrs, "direction")->type));
    if (rc == 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute direction is required (\"LEFT\" or \"RIGHT\")");
    if (strcmp(text, "LEFT") != 0 && strcmp(text, "RIGHT") != 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute direction is \"%s\"; expected \"LEFT\" or \"RIGHT\"", text);
    return ses__attrs_set_int(&ctx->kernel_attrs, "direction", strcmp(text, "RIGHT") == 0);
}

/* Not: bool. */
ses_status_t ses__infer_not(ses__infer_ctx_t *ctx) {
    return unary(ctx, SES__DT(SES_BOOL));
}

/* Sign: every number. */
ses_status_t ses__infer_sign(ses__infer_ctx_t *ctx) {
    return unary(ctx, DT_ALL_NUMERIC);
}

/* IsNaN and IsInf: floats to bool. IsInf's kernels always get detect_negative and
 * detect_positive (0 or 1, default 1). */
ses_status_t ses__infer_is_nan(ses__infer_ctx_t *ctx) {
    ses_status_t st = unary(ctx, SES__DT_FLOAT);
    if (st == SES_OK)
        ctx->outputs[0].dtype = SES_BOOL;
    return st;
}

ses_status_t ses__infer_is_inf(ses__infer_ctx_t *ctx) {
    int64_t negative = 1, positive = 1;
    ses_status_t st = ses__infer_is_nan(ctx);

    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "detect_negative", 1, &negative);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "detect_positive", 1, &positive);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "detect_negative", negative);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "detect_positive", positive);
    return st;
}

/* Clip(x[, min, max]): kernel Clip (x and the bounds given; has_min, has_max). A bound given as
 * an empty tensor counts as absent, since a graph cannot leave a middle input out. */
ses_status_t ses__infer_clip(ses__infer_ctx_t *ctx) {
    static const char *const names[] = {"input", "min", "max"};
    int present[3] = {1, 0, 0};
    ses_status_t st =
        ses__op_check_dtype(ctx, 0, "input",
                            SES__DT_NUMERIC | SES__DT(SES_I8) | SES__DT(SES_I16) | SES__DT(SES_U8) |
                                SES__DT(SES_U16) | SES__DT(SES_U32) | SES__DT(SES_U64));

    for (size_t i = 1; st == SES_OK && i < 3; i++) {
        present[i] = ses__op_given(ctx, i);
        if (!present[i])
            continue;
        st = ses__op_check_same_dtype(ctx, 0, "input", i, names[i]);
        if (st == SES_OK && ses__type_count(&ctx->inputs[i]) != 1)
            st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) must be a scalar, got %s",
                              i, names[i], ses__tstr(&ctx->inputs[i]).s);
    }
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = ctx->inputs[0];
    ctx->kernel_inputs = 0x1 | (present[1] ? 0x2u : 0u) | (present[2] ? 0x4u : 0u);
    st = ses__attrs_set_int(&ctx->kernel_attrs, "has_min", present[1]);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "has_max", present[2]);
    return st;
}
