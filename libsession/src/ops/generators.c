/*
 * Ops that make a tensor from a shape rather than from data: the ones shaped like their input
 * (EyeLike, and the random ones: Bernoulli, RandomUniformLike, RandomNormalLike), and
 * ConstantOfShape and Range, whose output shape is the value of their inputs.
 *
 *   op (inputs; attributes)                           kernel (inputs passed; normalized attrs)
 *   EyeLike(input; dtype, k)                          EyeLike (input, never read; k)
 *   Bernoulli(input; dtype, seed)                     Bernoulli (input; has_seed, seed)
 *   RandomUniformLike(input; dtype, low, high, seed)  RandomUniformLike (input, never read; low,
 *                                                     high, has_seed, seed)
 *   RandomNormalLike(input; dtype, mean, scale, seed) RandomNormalLike (input, never read; mean,
 *                                                     scale, has_seed, seed)
 *   ConstantOfShape(input; value[, dtype])            ConstantOfShape (input, never read; value)
 *   Range(start, limit, delta)                        Range (all three)
 *
 * dtype is an ONNX TensorProto number; absent, the output has the input's dtype. The random ops'
 * seed is a FLOAT in ONNX; kernels get it as an INT in [0, 2^32): the value truncated toward
 * zero, modulo 2^32 (a seed of 0.0 is 0). Without one the kernel seeds itself from the clock,
 * once per plan node, and every run continues that node's stream. ConstantOfShape's input and
 * Range's three scalars must be constants or fed, as Reshape's shape.
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

/*
 * ONNX's value is a one-element tensor attribute; here it is a FLOAT attribute (an f32 output)
 * or an INT one (i64), and an optional INT attribute dtype (a ses_dtype_t: f32, f64, i32, i64 or
 * bool) picks another output dtype. Absent, the output is f32 zeros.
 */
ses_status_t ses__infer_constant_of_shape(ses__infer_ctx_t *ctx) {
    const ses__type_t *shape_t = &ctx->inputs[0];
    const ses__attr_t *value = ses__attrs_find(ctx->attrs, "value");
    int64_t shape[SES_MAX_RANK], dtype, ivalue = 0;
    double fvalue = 0.0;
    size_t n = 0;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT(SES_I64));

    if (st == SES_OK && shape_t->rank != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input must be 1-D, got %s",
                          ses__tstr(shape_t).s);
    if (st == SES_OK)
        st = ses__op_check_out_rank(ctx, (size_t)shape_t->dims[0]);
    if (st == SES_OK)
        st = ses__op_read_ints(ctx, 0, "input", SES__DT(SES_I64), shape, SES_MAX_RANK, &n);
    if (st != SES_OK)
        return st;
    if (value && value->type == SES_ATTR_INT) {
        ivalue = value->i;
        fvalue = (double)value->i;
        dtype = SES_I64;
    } else if (value && value->type == SES_ATTR_FLOAT) {
        fvalue = value->f;
        dtype = SES_F32;
    } else if (value) {
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute value must be a FLOAT or an INT (ONNX's one-element "
                            "tensor), got %s",
                            ses__attr_type_name(value->type));
    } else {
        dtype = SES_F32;
    }
    st = ses__op_attr_int(ctx, "dtype", dtype, &dtype);
    if (st != SES_OK)
        return st;
    if (dtype != SES_F32 && dtype != SES_F64 && dtype != SES_I32 && dtype != SES_I64 &&
        dtype != SES_BOOL)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute dtype is %lld; it must be a ses_dtype_t among f32, f64, "
                            "i32, i64, bool",
                            (long long)dtype);
    if (dtype != SES_F32 && dtype != SES_F64) {
        if (value && value->type == SES_ATTR_FLOAT) {
            if (fvalue != floor(fvalue) || fabs(fvalue) > 9.2e18)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "attribute value %g is not an integer, but dtype is %s", fvalue,
                                    ses__dtype_str((ses_dtype_t)dtype));
            ivalue = (int64_t)fvalue;
        }
        if (dtype == SES_BOOL)
            ivalue = ivalue != 0;
        else if (dtype == SES_I32 && (ivalue < INT32_MIN || ivalue > INT32_MAX))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute value %lld does not fit i32",
                                (long long)ivalue);
    }
    ctx->outputs[0].dtype = (ses_dtype_t)dtype;
    ctx->outputs[0].rank = (uint32_t)n;
    for (size_t k = 0; k < n; k++) {
        if (shape[k] < 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %s has a negative dimension",
                                ses__ints_str(shape, n).s);
        ctx->outputs[0].dims[k] = shape[k];
    }
    ctx->kernel_inputs = 0x1;
    if (dtype == SES_F32 || dtype == SES_F64)
        return ses__attrs_set_float(&ctx->kernel_attrs, "value", fvalue);
    return ses__attrs_set_int(&ctx->kernel_attrs, "value", ivalue);
}

ses_status_t ses__infer_range(ses__infer_ctx_t *ctx) {
    static const char *const names[] = {"start", "limit", "delta"};
    const uint32_t allowed = SES__DT_NUMERIC;
    double f[3];
    int64_t i[3], count;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "start", allowed);

    for (size_t k = 1; st == SES_OK && k < 3; k++)
        st = ses__op_check_same_dtype(ctx, 0, "start", k, names[k]);
    for (size_t k = 0; st == SES_OK && k < 3; k++)
        st = ses__op_read_scalar(ctx, k, names[k], &f[k], &i[k]);
    if (st != SES_OK)
        return st;
    if (ctx->inputs[0].dtype == SES_F32 || ctx->inputs[0].dtype == SES_F64) {
        if (f[2] == 0.0 || !isfinite(f[0]) || !isfinite(f[1]) || !isfinite(f[2]))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "start %g, limit %g, delta %g: delta must be non-zero and all "
                                "finite",
                                f[0], f[1], f[2]);
        double c = ceil((f[1] - f[0]) / f[2]);
        if (c > 9.0e15)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "start %g, limit %g, delta %g give too many elements", f[0], f[1],
                                f[2]);
        count = c > 0 ? (int64_t)c : 0;
    } else {
        if (i[2] == 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "delta must be non-zero");
        /* In double: exact enough for any count a buffer can hold, and it cannot overflow. */
        double c = ceil(((double)i[1] - (double)i[0]) / (double)i[2]);
        count = c > 0 ? (int64_t)c : 0;
    }
    ctx->outputs[0].dtype = ctx->inputs[0].dtype;
    ctx->outputs[0].rank = 1;
    ctx->outputs[0].dims[0] = count;
    return SES_OK;
}
