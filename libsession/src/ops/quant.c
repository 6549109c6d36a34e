/*
 * Linear quantization (ONNX op sets 10 to 21): the ops that move between float values and
 * 8- or 16-bit integers with a scale and a zero point, and the integer products exported
 * quantized models run.
 *
 *   op (inputs; attributes)                           kernel (inputs passed; normalized attributes)
 *   QuantizeLinear(x, y_scale[, y_zero_point];        QuantizeLinear (x, y_scale[, y_zero_point];
 *                  axis, block_size, saturate,        axis, block_size, has_zp)
 *                  output_dtype)
 *   DequantizeLinear(x, x_scale[, x_zero_point];      DequantizeLinear (the same)
 *                    axis, block_size)
 *   DynamicQuantizeLinear(x)                          DynamicQuantizeLinear (x)
 *   MatMulInteger(A, B[, a_zero_point,                MatMulInteger (A, B and the zero points
 *                 b_zero_point])                      given; has_a_zp, has_b_zp)
 *   ConvInteger(x, w[, x_zero_point, w_zero_point];   ConvInteger (as MatMulInteger; Conv's
 *               Conv's attributes)                    window and group)
 *   QLinearMatMul(a, a_scale, a_zp, b, b_scale,       QLinearMatMul (all eight)
 *                 b_zp, y_scale, y_zp)
 *   QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp,   QLinearConv (all given; Conv's window and
 *               y_scale, y_zp[, B]; Conv's)           group)
 *
 * A scale and its zero point have one shape: one element (per tensor), a vector along `axis`
 * (per axis), or with block_size > 0 (op set 21) x's shape with dimension `axis` cut into
 * blocks of block_size. An empty zero point is absent (a graph cannot leave a middle input
 * out); absent, it is 0, and QuantizeLinear's output is u8 unless output_dtype says otherwise.
 * Integers are i8, u8, i16 and u16 (i32 too for DequantizeLinear's x); the float side is f32
 * (f16, bf16 and the float8 types are not implemented: no kernel has them).
 */
#include <string.h>

#include "infer.h"

#define QUANT_INTS (SES__DT(SES_I8) | SES__DT(SES_U8) | SES__DT(SES_I16) | SES__DT(SES_U16))
#define BYTE_INTS (SES__DT(SES_I8) | SES__DT(SES_U8))
/* The float side ONNX allows (f16 and bf16 from op set 19; the CPU computes f32 only). */
#define QUANT_FLOATS (SES__DT(SES_F32) | SES__DT(SES_F16) | SES__DT(SES_BF16))

/*
 * The scale (input @p si, named @p sname) and zero point (@p zi, when given) of quantized
 * or float tensor @p x (input @p xi): their shapes agree, and say per tensor, per axis or
 * blocked. Sets the kernel's axis (non-negative) and block_size.
 */
static ses_status_t quant_params(ses__infer_ctx_t *ctx, size_t xi, size_t si, const char *sname,
                                 size_t zi, const char *zname) {
    const ses__type_t *x = &ctx->inputs[xi], *s = &ctx->inputs[si];
    int64_t axis = 1, block = 0;
    ses_status_t st = ses__op_attr_int(ctx, "axis", 1, &axis);

    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "block_size", 0, &block);
    if (st != SES_OK)
        return st;
    if (block < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute block_size is %lld; it must be >= 0", (long long)block);
    if (ses__op_given(ctx, zi)) {
        const ses__type_t *z = &ctx->inputs[zi];
        int same = z->rank == s->rank;
        for (uint32_t d = 0; same && d < s->rank; d++)
            same = z->dims[d] == s->dims[d];
        if (!same)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "%s and %s must have one shape: %s is %s, %s is %s", sname, zname,
                                sname, ses__tstr(s).s, zname, ses__tstr(z).s);
    }
    if (block == 0 && s->rank <= 1 && ses__type_count(s) == 1) {
        axis = 0; /* per tensor: the axis is not used */
    } else {
        if (x->rank == 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "%s must have one element for a scalar input: input is %s, %s "
                                "is %s",
                                sname, ses__tstr(x).s, sname, ses__tstr(s).s);
        st = ses__op_axis(ctx, "axis", axis, x->rank, x, &axis);
        if (st != SES_OK)
            return st;
        if (block == 0 && (s->rank != 1 || s->dims[0] != x->dims[axis]))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "%s must have one element, or one per entry of axis %lld (%lld): "
                                "input is %s, %s is %s",
                                sname, (long long)axis, (long long)x->dims[axis], ses__tstr(x).s,
                                sname, ses__tstr(s).s);
        for (uint32_t d = 0; block > 0 && d < x->rank; d++) {
            const int64_t want = d == axis ? (x->dims[d] + block - 1) / block : x->dims[d];
            if (s->rank != x->rank || s->dims[d] != want)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "with block_size %lld along axis %lld, %s must have the "
                                    "input's shape with that dimension in blocks: input is %s, "
                                    "%s is %s",
                                    (long long)block, (long long)axis, sname, ses__tstr(x).s, sname,
                                    ses__tstr(s).s);
        }
    }
    st = ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "block_size", block);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "has_zp", ses__op_given(ctx, zi));
    return st;
}

/* ONNX's TensorProto data types of the integers QuantizeLinear makes (output_dtype). */
static ses_dtype_t onnx_int_dtype(int64_t code) {
    switch (code) {
    case 2: return SES_U8;
    case 3: return SES_I8;
    case 4: return SES_U16;
    case 5: return SES_I16;
    default: return SES_DTYPE_INVALID;
    }
}

ses_status_t ses__infer_quantize_linear(ses__infer_ctx_t *ctx) {
    ses_dtype_t out = SES_U8;
    int64_t code = 0, saturate = 1;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "x", QUANT_FLOATS | SES__DT(SES_I32));

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "y_scale", QUANT_FLOATS);
    if (st == SES_OK && ses__op_given(ctx, 2))
        st = ses__op_check_dtype(ctx, 2, "y_zero_point", QUANT_INTS);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "output_dtype", 0, &code);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "saturate", 1, &saturate);
    if (st != SES_OK)
        return st;
    if (code != 0) {
        out = onnx_int_dtype(code);
        if (out == SES_DTYPE_INVALID)
            return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                                "attribute output_dtype %lld is not supported (2 u8, 3 i8, 4 "
                                "u16, 5 i16 are)",
                                (long long)code);
        if (ses__op_given(ctx, 2) && ctx->inputs[2].dtype != out)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute output_dtype says %s but y_zero_point is %s",
                                ses__dtype_str(out), ses__tstr(&ctx->inputs[2]).s);
    } else if (ses__op_given(ctx, 2)) {
        out = ctx->inputs[2].dtype;
    }
    if ((st = quant_params(ctx, 0, 1, "y_scale", 2, "y_zero_point")) != SES_OK)
        return st;
    ctx->outputs[0] = ctx->inputs[0];
    ctx->outputs[0].dtype = out;
    ctx->kernel_inputs = ses__op_given(ctx, 2) ? 0x7 : 0x3;
    return SES_OK;
}

ses_status_t ses__infer_dequantize_linear(ses__infer_ctx_t *ctx) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, "x", QUANT_INTS | SES__DT(SES_I32));

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "x_scale", QUANT_FLOATS);
    if (st == SES_OK && ses__op_given(ctx, 2))
        st = ses__op_check_same_dtype(ctx, 0, "x", 2, "x_zero_point");
    if (st == SES_OK)
        st = quant_params(ctx, 0, 1, "x_scale", 2, "x_zero_point");
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = ctx->inputs[0];
    ctx->outputs[0].dtype = ctx->inputs[1].dtype;
    ctx->kernel_inputs = ses__op_given(ctx, 2) ? 0x7 : 0x3;
    return SES_OK;
}

ses_status_t ses__infer_dynamic_quantize_linear(ses__infer_ctx_t *ctx) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, "x", SES__DT(SES_F32));

    if (st != SES_OK)
        return st;
    ctx->outputs[0] = ctx->inputs[0];
    ctx->outputs[0].dtype = SES_U8;
    memset(&ctx->outputs[1], 0, sizeof ctx->outputs[1]);
    ctx->outputs[1].dtype = ctx->inputs[0].dtype;
    memset(&ctx->outputs[2], 0, sizeof ctx->outputs[2]);
    ctx->outputs[2].dtype = SES_U8;
    return SES_OK;
}

/*
 * The zero point of an integer product's operand @p oi (@p oname, whose rows, or columns for
 * @p per_column, number @p n): one element, one per row (column), or one per row (column) of
 * each matrix of the operand, shaped [..., n, 1] ([..., 1, n]).
 */
static ses_status_t check_product_zp(ses__infer_ctx_t *ctx, size_t zi, const char *zname, size_t oi,
                                     const char *oname, int per_column) {
    const ses__type_t *z = &ctx->inputs[zi], *o = &ctx->inputs[oi];
    const int64_t n = o->rank < 2 && per_column ? 1 : o->dims[o->rank - (per_column ? 1 : 2)];
    int fits = ses__type_count(z) == 1 || (z->rank == 1 && z->dims[0] == n);
    ses_status_t st = ses__op_check_same_dtype(ctx, oi, oname, zi, zname);

    if (!fits && o->rank >= 2 && z->rank == o->rank) {
        fits = 1;
        for (uint32_t d = 0; fits && d + 2 < o->rank; d++)
            fits = z->dims[d] == o->dims[d];
        fits = fits && z->dims[o->rank - (per_column ? 1 : 2)] == n &&
               z->dims[o->rank - (per_column ? 2 : 1)] == 1;
    }
    if (st == SES_OK && !fits)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "%s must have one element, one per %s of %s (%lld), or %s's batch "
                          "dims with one per %s: %s is %s, %s is %s",
                          zname, per_column ? "column" : "row", oname, (long long)n, oname,
                          per_column ? "column" : "row", oname, ses__tstr(o).s, zname,
                          ses__tstr(z).s);
    return st;
}

/* numpy matmul's shape of inputs @p ai and @p bi (2-D or more; 1-D promoted), into @p out. */
static ses_status_t product_shape(ses__infer_ctx_t *ctx, size_t ai, const char *aname, size_t bi,
                                  const char *bname, ses__type_t *out) {
    const ses__type_t *a = &ctx->inputs[ai], *b = &ctx->inputs[bi];
    ses__type_t batch_a = {0}, batch_b = {0};
    const ses__type_t *batches[2] = {&batch_a, &batch_b};

    if (a->rank == 0 || b->rank == 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "inputs must have at least 1 dimension: %s is %s, %s is %s", aname,
                            ses__tstr(a).s, bname, ses__tstr(b).s);
    if (a->dims[a->rank - 1] != (b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2]))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "inner dimensions differ: %s is %s, %s is %s", aname, ses__tstr(a).s,
                            bname, ses__tstr(b).s);
    batch_a.rank = a->rank > 2 ? a->rank - 2 : 0;
    batch_b.rank = b->rank > 2 ? b->rank - 2 : 0;
    memcpy(batch_a.dims, a->dims, batch_a.rank * sizeof *a->dims);
    memcpy(batch_b.dims, b->dims, batch_b.rank * sizeof *b->dims);
    memset(out, 0, sizeof *out);
    if (!ses__broadcast_shapes(batches, 2, out))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "batch dimensions cannot broadcast: %s is %s, %s is %s", aname,
                            ses__tstr(a).s, bname, ses__tstr(b).s);
    if (a->rank >= 2)
        out->dims[out->rank++] = a->dims[a->rank - 2];
    if (b->rank >= 2)
        out->dims[out->rank++] = b->dims[b->rank - 1];
    return SES_OK;
}

ses_status_t ses__infer_matmul_integer(ses__infer_ctx_t *ctx) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, "A", BYTE_INTS);

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "B", BYTE_INTS);
    if (st == SES_OK)
        st = product_shape(ctx, 0, "A", 1, "B", &ctx->outputs[0]);
    if (st == SES_OK && ses__op_given(ctx, 2))
        st = check_product_zp(ctx, 2, "a_zero_point", 0, "A", 0);
    if (st == SES_OK && ses__op_given(ctx, 3))
        st = check_product_zp(ctx, 3, "b_zero_point", 1, "B", 1);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "has_a_zp", ses__op_given(ctx, 2));
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "has_b_zp", ses__op_given(ctx, 3));
    if (st != SES_OK)
        return st;
    ctx->outputs[0].dtype = SES_I32;
    ctx->kernel_inputs =
        0x3 | (ses__op_given(ctx, 2) ? 0x4u : 0u) | (ses__op_given(ctx, 3) ? 0x8u : 0u);
    return SES_OK;
}

/* A per-tensor scale or zero point (input @p i): one element. */
static ses_status_t check_one(ses__infer_ctx_t *ctx, size_t i, const char *name) {
    if (ses__type_count(&ctx->inputs[i]) != 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input %zu (%s) must have one element, got %s", i, name,
                            ses__tstr(&ctx->inputs[i]).s);
    return SES_OK;
}

/* A per-tensor or per-channel (@p n of them, 1-D) scale or zero point (input @p i). */
static ses_status_t check_one_or_n(ses__infer_ctx_t *ctx, size_t i, const char *name, int64_t n,
                                   const char *per) {
    const ses__type_t *t = &ctx->inputs[i];
    if (ses__type_count(t) != 1 && !(t->rank == 1 && t->dims[0] == n))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input %zu (%s) must have one element or one per %s (%lld), got %s", i,
                            name, per, (long long)n, ses__tstr(t).s);
    return SES_OK;
}

ses_status_t ses__infer_conv_integer(ses__infer_ctx_t *ctx) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, "x", BYTE_INTS);

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "w", BYTE_INTS);
    if (st == SES_OK)
        st = ses__conv_shape(ctx, 0, 1, &ctx->outputs[0]);
    if (st == SES_OK && ses__op_given(ctx, 2))
        st = ses__op_check_same_dtype(ctx, 0, "x", 2, "x_zero_point");
    if (st == SES_OK && ses__op_given(ctx, 2))
        st = check_one(ctx, 2, "x_zero_point");
    if (st == SES_OK && ses__op_given(ctx, 3))
        st = ses__op_check_same_dtype(ctx, 1, "w", 3, "w_zero_point");
    if (st == SES_OK && ses__op_given(ctx, 3))
        st = check_one_or_n(ctx, 3, "w_zero_point", ctx->inputs[1].dims[0], "filter");
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "has_a_zp", ses__op_given(ctx, 2));
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "has_b_zp", ses__op_given(ctx, 3));
    if (st != SES_OK)
        return st;
    ctx->outputs[0].dtype = SES_I32;
    ctx->kernel_inputs =
        0x3 | (ses__op_given(ctx, 2) ? 0x4u : 0u) | (ses__op_given(ctx, 3) ? 0x8u : 0u);
    return SES_OK;
}

/* The scales (f32) and zero points of a QLinear op: inputs 0-2 the first operand, 3-5 the
 * second, 6-7 the output. */
static ses_status_t qlinear_params(ses__infer_ctx_t *ctx, const char *const *names) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, names[0], BYTE_INTS);

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 3, names[3], BYTE_INTS);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 7, names[7], BYTE_INTS);
    for (size_t i = 1; st == SES_OK && i < 8; i += i == 1 ? 3 : 2) /* 1, 4, 6 */
        st = ses__op_check_dtype(ctx, i, names[i], SES__DT(SES_F32));
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, names[0], 2, names[2]);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 3, names[3], 5, names[5]);
    for (size_t i = 1; st == SES_OK && i <= 4; i += 3) {
        const ses__type_t *sc = &ctx->inputs[i], *zp = &ctx->inputs[i + 1];
        int same = sc->rank == zp->rank;
        for (uint32_t d = 0; same && d < sc->rank; d++)
            same = sc->dims[d] == zp->dims[d];
        if (!same)
            st = ses__op_fail(
                ctx, SES_INVALID_ARGUMENT, "%s and %s must have one shape: %s is %s, %s is %s",
                names[i], names[i + 1], names[i], ses__tstr(sc).s, names[i + 1], ses__tstr(zp).s);
    }
    if (st == SES_OK)
        st = check_one(ctx, 6, names[6]);
    if (st == SES_OK)
        st = check_one(ctx, 7, names[7]);
    return st;
}

ses_status_t ses__infer_qlinear_matmul(ses__infer_ctx_t *ctx) {
    static const char *const names[] = {"a",       "a_scale",      "a_zero_point", "b",
                                        "b_scale", "b_zero_point", "y_scale",      "y_zero_point"};
    const ses__type_t *a = &ctx->inputs[0], *b = &ctx->inputs[3];
    ses_status_t st = qlinear_params(ctx, names);

    if (st == SES_OK)
        st = product_shape(ctx, 0, "a", 3, "b", &ctx->outputs[0]);
    if (st != SES_OK)
        return st;
    /* a's scale and zero point per tensor or per row, b's per tensor or per column. */
    for (size_t i = 1; i <= 2; i++)
        if ((st = check_one_or_n(ctx, i, names[i], a->rank >= 2 ? a->dims[a->rank - 2] : 1,
                                 "row of a")) != SES_OK)
            return st;
    for (size_t i = 4; i <= 5; i++)
        if ((st = check_one_or_n(ctx, i, names[i], b->rank >= 2 ? b->dims[b->rank - 1] : 1,
                                 "column of b")) != SES_OK)
            return st;
    ctx->outputs[0].dtype = ctx->inputs[7].dtype;
    return SES_OK;
}

ses_status_t ses__infer_qlinear_conv(ses__infer_ctx_t *ctx) {
    static const char *const names[] = {"x",       "x_scale",      "x_zero_point", "w",
                                        "w_scale", "w_zero_point", "y_scale",      "y_zero_point"};
    ses_status_t st = qlinear_params(ctx, names);

    if (st == SES_OK)
        st = ses__conv_shape(ctx, 0, 3, &ctx->outputs[0]);
    if (st == SES_OK)
        st = check_one(ctx, 1, "x_scale");
    if (st == SES_OK)
        st = check_one(ctx, 2, "x_zero_point");
    for (size_t i = 4; st == SES_OK && i <= 5; i++)
        st = check_one_or_n(ctx, i, names[i], ctx->inputs[3].dims[0], "filter");
    if (st == SES_OK && ses__op_given(ctx, 8)) {
        const ses__type_t *bias = &ctx->inputs[8];
        st = ses__op_check_dtype(ctx, 8, "B", SES__DT(SES_I32));
        if (st == SES_OK && (bias->rank != 1 || bias->dims[0] != ctx->inputs[3].dims[0]))
            st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                              "B must be 1-D with one entry per filter: w is %s, B is %s",
                              ses__tstr(&ctx->inputs[3]).s, ses__tstr(bias).s);
    }
    if (st != SES_OK)
        return st;
    ctx->outputs[0].dtype = ctx->inputs[7].dtype;
    ctx->kernel_inputs = ses__op_given(ctx, 8) ? 0x1ff : 0xff;
    return SES_OK;
}
