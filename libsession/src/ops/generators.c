/*
 * Ops that make a tensor shaped like their input: EyeLike, and the random ones (Bernoulli,
 * RandomUniformLike, RandomNormalLike).
 *
 *   op (inputs; attributes)                           kernel (inputs passed; normalized attrs)
 *   EyeLike(input; dtype, k)                          EyeLike (input, never read; k)
 *   Bernoulli(input; dtype, seed)                     Bernoulli (input; has_seed, seed)
 *   RandomUniformLike(input; dtype, low, high, seed)  RandomUniformLike (input, never read; low,
 *                                                     high, has_seed, seed)
 *   RandomNormalLike(input; dtype, mean, scale, seed) RandomNormalLike (input, never read; mean,
 *                                                     scale, has_seed, seed)
 *
 * dtype is an ONNX TensorProto number; absent, the output has the input's dtype. The random ops'
 * seed is a FLOAT in ONNX; kernels get it as an INT in [0, 2^32): the value truncated toward
 * zero, modulo 2^32 (a seed of 0.0 is 0). Without one the kernel seeds itself from the clock,
 * once per plan node, and every run continues that node's stream.
 */
#include <math.h>

#include "infer.h"

/* EyeLike: a 2-D input; ones on diagonal k (0 the main one, > 0 above it), zeros elsewhere. */
ses_status_t ses__infer_eye_like(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    ses_dtype_t dtype = SES_DTYPE_INVALID;
    int64_t k = 0;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);

    if (st == SES_OK && x->rank != 2)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input must be 2-D, got %s", ses__tstr(x).s);
    if (st == SES_OK)
        st = ses__op_attr_onnx_dtype(ctx, "dtype", x->dtype, &dtype);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "k", 0, &k);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    ctx->outputs[0].dtype = dtype;
    return ses__attrs_set_int(&ctx->kernel_attrs, "k", k);
}

/* The random ops' seed attribute (FLOAT) as the kernels get it: has_seed, and seed. */
static ses_status_t random_seed(ses__infer_ctx_t *ctx) {
    double seed = 0.0;
    const int has_seed = ses__attrs_find(ctx->attrs, "seed") != NULL;
    ses_status_t st = ses__op_attr_float(ctx, "seed", 0.0, &seed);

    if (st == SES_OK && has_seed && !isfinite(seed))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute seed is %g; it must be finite",
                          seed);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "has_seed", has_seed);
    if (st == SES_OK) {
        /* Truncated, then modulo 2^32 (fmod keeps it exact for any finite double). */
        double t = fmod(trunc(seed), 4294967296.0);
        if (t < 0)
            t += 4294967296.0;
        st = ses__attrs_set_int(&ctx->kernel_attrs, "seed", (int64_t)t);
    }
    return st;
}

/* Bernoulli: input holds probabilities (floats); the output is 1 with that probability. */
ses_status_t ses__infer_bernoulli(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    ses_dtype_t dtype = SES_DTYPE_INVALID;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_FLOAT);

    if (st == SES_OK)
        st = ses__op_attr_onnx_dtype(ctx, "dtype", x->dtype, &dtype);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    ctx->outputs[0].dtype = dtype;
    return random_seed(ctx);
}

/* RandomUniformLike (low, high) and RandomNormalLike (mean, scale): a float output shaped as
 * the input, whose values are never read. */
ses_status_t ses__infer_random_like(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    const int uniform = ctx->op[6] == 'U'; /* "RandomUniformLike" or "RandomNormalLike" */
    const char *a_name = uniform ? "low" : "mean", *b_name = uniform ? "high" : "scale";
    ses_dtype_t dtype = SES_DTYPE_INVALID;
    double a = 0.0, b = 1.0;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);

    if (st == SES_OK)
        st = ses__op_attr_onnx_dtype(ctx, "dtype", x->dtype, &dtype);
    if (st == SES_OK && !(SES__DT(dtype) & SES__DT_FLOAT))
        st = ses__op_fail(
            ctx, SES_INVALID_ARGUMENT,
            "the output must be a float dtype, but it would be %s (%s); set "
            "attribute dtype",
            ses__dtype_str(dtype),
            ses__attrs_find(ctx->attrs, "dtype") ? "attribute dtype" : "the input's dtype");
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, a_name, 0.0, &a);
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, b_name, 1.0, &b);
    if (st == SES_OK && uniform && !(a <= b))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute low (%g) is above high (%g)", a, b);
    if (st == SES_OK && !uniform && !(b >= 0))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute scale is %g; it must be >= 0", b);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    ctx->outputs[0].dtype = dtype;
    st = ses__attrs_set_float(&ctx->kernel_attrs, a_name, a);
    if (st == SES_OK)
        st = ses__attrs_set_float(&ctx->kernel_attrs, b_name, b);
    return st == SES_OK ? random_seed(ctx) : st;
}
