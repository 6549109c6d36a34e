/*
 * Pad (ONNX op set 11 and later: pads, constant_value and axes are inputs) and its gradient op.
 *
 *   op (inputs; attributes)                      kernel (inputs passed; normalized attributes)
 *   Pad(data, pads[, constant_value, axes])      Pad (data[, constant_value]; pads, mode)
 *   PadGrad(dy, x, pads[, constant_value, axes]) PadGrad (dy; pads, mode)
 *
 * Kernels get one begin and one end pad per dimension of the data (begins, then ends; negative
 * ones crop) and mode 0 constant, 1 reflect, 2 edge. pads and axes must be constants or fed, as
 * Reshape's shape; constant_value given as an empty tensor counts as absent.
 */
#include <string.h>

#include "infer.h"

enum { PAD_CONSTANT = 0, PAD_REFLECT = 1, PAD_EDGE = 2 };

/*
 * Pad's normalization of input @p di (the data; pads, constant_value and axes follow it):
 * @p pads gets 2 * rank entries (begins, then ends), @p mode its code, @p out the padded type.
 */
static ses_status_t pad_normalize(ses__infer_ctx_t *ctx, size_t di, int64_t *pads, int64_t *mode,
                                  ses__type_t *out) {
    const ses__type_t *x = &ctx->inputs[di];
    const char *mode_s = "constant";
    int64_t given_pads[4 * SES_MAX_RANK], axes[2 * SES_MAX_RANK];
    size_t n_pads = 0, n_axes = x->rank;
    int seen[SES_MAX_RANK] = {0};
    ses_status_t st;

    if (ses__attrs_get_string(ctx->attrs, "mode", &mode_s) < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute mode must be a string");
    if (!strcmp(mode_s, "constant"))
        *mode = PAD_CONSTANT;
    else if (!strcmp(mode_s, "reflect"))
        *mode = PAD_REFLECT;
    else if (!strcmp(mode_s, "edge"))
        *mode = PAD_EDGE;
    else
        return ses__op_fail(ctx, !strcmp(mode_s, "wrap") ? SES_UNIMPLEMENTED : SES_INVALID_ARGUMENT,
                            "attribute mode is \"%s\"; supported: constant, reflect, edge", mode_s);
    if (!ses__op_has_input(ctx, di + 1))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input %zu (pads) is required (the opset-11 form; a pads attribute is "
                            "not read)",
                            di + 1);
    if (ses__op_has_input(ctx, di + 3)) {
        st = ses__op_read_ints(ctx, di + 3, "axes", SES__DT_INDEX, axes, 2 * SES_MAX_RANK, &n_axes);
        for (size_t k = 0; st == SES_OK && k < n_axes; k++) {
            st = ses__op_axis(ctx, "axes value", axes[k], x->rank, x, &axes[k]);
            if (st == SES_OK && seen[axes[k]]++)
                st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "axes name axis %lld twice",
                                  (long long)axes[k]);
        }
        if (st != SES_OK)
            return st;
    } else {
        for (size_t k = 0; k < n_axes; k++)
            axes[k] = (int64_t)k;
    }
    st = ses__op_read_ints(ctx, di + 1, "pads", SES__DT(SES_I64), given_pads, 4 * SES_MAX_RANK,
                           &n_pads);
    if (st != SES_OK)
        return st;
    if (n_pads != 2 * n_axes)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "pads %s has %zu values; it needs 2 per padded axis (%zu): data is %s",
                            ses__ints_str(given_pads, n_pads).s, n_pads, 2 * n_axes,
                            ses__tstr(x).s);
    for (uint32_t d = 0; d < 2 * x->rank; d++)
        pads[d] = 0;
    for (size_t k = 0; k < n_axes; k++) {
        pads[axes[k]] = given_pads[k];
        pads[x->rank + axes[k]] = given_pads[n_axes + k];
    }
    *out = *x;
    for (uint32_t d = 0; d < x->rank; d++) {
        const int64_t b = pads[d], e = pads[x->rank + d], dim = x->dims[d];
        int64_t o;
        if (__builtin_add_overflow(dim, b, &o) || __builtin_add_overflow(o, e, &o) || o < 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "pads %s remove more than axis %u holds: data is %s",
                                ses__ints_str(given_pads, n_pads).s, d, ses__tstr(x).s);
        if (*mode == PAD_REFLECT && (b >= dim || e >= dim) && (b > 0 || e > 0))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "reflect pads must be smaller than the axis they pad: pads %s, "
                                "axis %u, data is %s",
                                ses__ints_str(given_pads, n_pads).s, d, ses__tstr(x).s);
        if (*mode == PAD_EDGE && dim == 0 && (b > 0 || e > 0))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "edge mode cannot pad the empty axis %u: data is %s", d,
                                ses__tstr(x).s);
        out->dims[d] = o;
    }
    return SES_OK;
}

static ses_status_t pad_attrs(ses__infer_ctx_t *ctx, const int64_t *pads, uint32_t rank,
                              int64_t mode) {
    ses_status_t st = ses__attrs_set_ints(&ctx->kernel_attrs, "pads", pads, 2 * (size_t)rank);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "mode", mode);
    return st;
}

ses_status_t ses__infer_pad(ses__infer_ctx_t *ctx) {
    int64_t pads[2 * SES_MAX_RANK], mode;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "data", SES__DT_NUMERIC);

    if (st == SES_OK)
        st = pad_normalize(ctx, 0, pads, &mode, &ctx->outputs[0]);
    if (st != SES_OK)
        return st;
    ctx->kernel_inputs = 0x1;
    if (mode == PAD_CONSTANT && ses__op_given(ctx, 2)) {
        st = ses__op_check_same_dtype(ctx, 0, "data", 2, "constant_value");
        if (st == SES_OK && ses__type_count(&ctx->inputs[2]) != 1)
            st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                              "input 2 (constant_value) must be a scalar, got %s",
                              ses__tstr(&ctx->inputs[2]).s);
        if (st != SES_OK)
            return st;
        ctx->kernel_inputs = 0x5;
    }
    return pad_attrs(ctx, pads, ctx->inputs[0].rank, mode);
}

/* The gradient of Pad(x, pads, ...) for x: dy summed back onto the elements it was read from. */
ses_status_t ses__infer_pad_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *dy = &ctx->inputs[0];
    int64_t pads[2 * SES_MAX_RANK], mode;
    ses__type_t padded;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "dy", SES__DT_FLOAT);

    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dy", 1, "x");
    if (st == SES_OK)
        st = pad_normalize(ctx, 1, pads, &mode, &padded);
    if (st != SES_OK)
        return st;
    if (!ses__same_dims(dy, &padded))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "dy does not match the padded x: dy is %s, x is %s, padded is %s",
                            ses__tstr(dy).s, ses__tstr(&ctx->inputs[1]).s, ses__tstr(&padded).s);
    ctx->outputs[0] = ctx->inputs[1];
    ctx->kernel_inputs = 0x1;
    return pad_attrs(ctx, pads, dy->rank, mode);
}
