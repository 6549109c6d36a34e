/*
 * Signal processing: the window generators (HannWindow, HammingWindow, BlackmanWindow),
 * MelWeightMatrix, DFT and STFT (op set 17 forms).
 *
 * Their scalar inputs (a window's size, MelWeightMatrix's five, DFT's dft_length, STFT's
 * frame_step and frame_length) give the output's shape, so they are read at compile time and
 * reach kernels as attributes of the same names. A kernel is still found by a data input's
 * dtype: the window generators and MelWeightMatrix pass their first input (the size, or
 * num_mel_bins) on, and their kernels read only its dtype.
 */
#include <math.h>
#include <string.h>

#include "infer.h"

/* ONNX's output_datatype (a TensorProto.DataType) of the generators: the float dtypes. */
static ses_status_t output_datatype(ses__infer_ctx_t *ctx, ses_dtype_t *out) {
    int64_t code;
    ses_status_t st = ses__op_attr_int(ctx, "output_datatype", 1, &code);

    if (st != SES_OK)
        return st;
    switch (code) {
        case 1:
            *out = SES_F32;
            return SES_OK;
        case 10:
            *out = SES_F16;
            return SES_OK;
        case 11:
            *out = SES_F64;
            return SES_OK;
        case 16:
            *out = SES_BF16;
            return SES_OK;
        default:
            return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                                "attribute output_datatype is %lld; supported: 1 (FLOAT), 10 "
                                "(FLOAT16), 11 (DOUBLE), 16 (BFLOAT16)",
                                (long long)code);
    }
}

/* Input @p index (named @p name): a scalar (or one-element 1-D) integer whose value is known. */
static ses_status_t read_int_scalar(ses__infer_ctx_t *ctx, size_t index, const char *name,
                                    int64_t *out) {
    size_t n = 0;
    ses_status_t st = ses__op_read_ints(ctx, index, name, SES__DT_INDEX, out, 1, &n);

    if (st == SES_OK && n != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) must be a scalar, got %s",
                          index, name, ses__tstr(&ctx->inputs[index]).s);
    return st;
}

/* Input @p index (named @p name): a float scalar whose value is known (an integer one is taken
 * too, beyond ONNX, which asks for a float). */
static ses_status_t read_float_scalar(ses__infer_ctx_t *ctx, size_t index, const char *name,
                                      double *out) {
    const ses__type_t *t = &ctx->inputs[index];
    const unsigned char *p = ctx->values ? ctx->values[index] : NULL;
    ses_status_t st =
        ses__op_check_dtype(ctx, index, name, SES__DT(SES_F32) | SES__DT(SES_F64) | SES__DT_INDEX);

    if (st != SES_OK)
        return st;
    if (t->rank > 1 || ses__type_count(t) != 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) must be a scalar, got %s",
                            index, name, ses__tstr(t).s);
    if (!p)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) must be a constant or fed",
                            index, name);
    if (t->dtype == SES_F32) {
        float v;
        memcpy(&v, p, sizeof v);
        *out = v;
    } else if (t->dtype == SES_I32) {
        int32_t v;
        memcpy(&v, p, sizeof v);
        *out = v;
    } else if (t->dtype == SES_I64) {
        int64_t v;
        memcpy(&v, p, sizeof v);
        *out = (double)v;
    } else {
        memcpy(out, p, sizeof *out);
    }
    return SES_OK;
}

/* HannWindow, HammingWindow, BlackmanWindow: size (a known integer scalar) -> [size]. */
ses_status_t ses__infer_window(ses__infer_ctx_t *ctx) {
    int64_t size, periodic;
    ses_dtype_t dtype = SES_F32;
    ses_status_t st = read_int_scalar(ctx, 0, "size", &size);

    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "periodic", 1, &periodic);
    if (st == SES_OK)
        st = output_datatype(ctx, &dtype);
    if (st == SES_OK && size < 0)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input 0 (size) is %lld; it must be 0 or more",
                          (long long)size);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "periodic", periodic);
    if (st != SES_OK)
        return st;
    ctx->outputs[0].dtype = dtype;
    ctx->outputs[0].rank = 1;
    ctx->outputs[0].dims[0] = size;
    return SES_OK;
}

/* MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz),
 * all known scalars -> [dft_length / 2 + 1, num_mel_bins]. */
ses_status_t ses__infer_mel_weight_matrix(ses__infer_ctx_t *ctx) {
    int64_t bins, length, rate;
    double lower, upper;
    ses_dtype_t dtype = SES_F32;
    ses_status_t st = read_int_scalar(ctx, 0, "num_mel_bins", &bins);

    if (st == SES_OK)
        st = read_int_scalar(ctx, 1, "dft_length", &length);
    if (st == SES_OK)
        st = read_int_scalar(ctx, 2, "sample_rate", &rate);
    if (st == SES_OK)
        st = read_float_scalar(ctx, 3, "lower_edge_hertz", &lower);
    if (st == SES_OK)
        st = read_float_scalar(ctx, 4, "upper_edge_hertz", &upper);
    if (st == SES_OK)
        st = output_datatype(ctx, &dtype);
    if (st != SES_OK)
        return st;
    if (bins < 1 || length < 1 || rate < 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "num_mel_bins (%lld), dft_length (%lld) and sample_rate (%lld) must "
                            "be positive",
                            (long long)bins, (long long)length, (long long)rate);
    if (!(lower >= 0.0) || !(upper > lower) || !isfinite(upper) || upper > (double)rate)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "the edges must satisfy 0 <= lower_edge_hertz < upper_edge_hertz <= "
                            "sample_rate: lower %g, upper %g, sample_rate %lld",
                            lower, upper, (long long)rate);
    if ((st = ses__attrs_set_int(&ctx->kernel_attrs, "num_mel_bins", bins)) != SES_OK ||
        (st = ses__attrs_set_int(&ctx->kernel_attrs, "dft_length", length)) != SES_OK ||
        (st = ses__attrs_set_int(&ctx->kernel_attrs, "sample_rate", rate)) != SES_OK ||
        (st = ses__attrs_set_float(&ctx->kernel_attrs, "lower_edge_hertz", lower)) != SES_OK ||
        (st = ses__attrs_set_float(&ctx->kernel_attrs, "upper_edge_hertz", upper)) != SES_OK)
        return st;
    ctx->kernel_inputs = 0x1;
    ctx->outputs[0].dtype = dtype;
    ctx->outputs[0].rank = 2;
    ctx->outputs[0].dims[0] = length / 2 + 1;
    ctx->outputs[0].dims[1] = bins;
    return SES_OK;
}

/*
 * DFT(input[, dft_length][, axis]; axis, inverse, onesided): input is [..., n, 1] (real) or
 * [..., n, 2] (complex); the transform runs along axis, which counts from the front or, when
 * negative, from the back ([-rank, -2] or [0, rank - 2]; the last dimension is the complex
 * one). Op set 17 gives axis as an attribute (default 1), op set 20 as input 2, a known scalar
 * (the ONNX importer gives the attribute -2 when it is left out); an empty dft_length is an
 * absent one. The output is complex, with dft_length (or dft_length / 2 + 1 when onesided)
 * along axis. Kernels get axis non-negative, dft_length, inverse and onesided.
 */
ses_status_t ses__infer_dft(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    int64_t axis, inverse, onesided, length;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_FLOAT);

    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", 1, &axis);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "inverse", 0, &inverse);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "onesided", 0, &onesided);
    if (st == SES_OK && ses__op_has_input(ctx, 2)) {
        if (ses__attrs_find(ctx->attrs, "axis"))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "axis is given twice, as an attribute and as input 2");
        st = read_int_scalar(ctx, 2, "axis", &axis);
    }
    if (st != SES_OK)
        return st;
    if (x->rank < 2 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input must be [..., n, 1] (real) or [..., n, 2] (complex), got %s",
                            ses__tstr(x).s);
    const int64_t given = axis;
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > (int64_t)x->rank - 2)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "axis %lld is out of range for input %s: it must be in [%d, %d] "
                            "or [0, %d]",
                            (long long)given, ses__tstr(x).s, -(int)x->rank, -2, (int)x->rank - 2);
    length = x->dims[axis];
    if (ses__op_has_input(ctx, 1) && ses__type_count(&ctx->inputs[1]) != 0) {
        st = read_int_scalar(ctx, 1, "dft_length", &length);
        if (st != SES_OK)
            return st;
        if (length < 1)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "input 1 (dft_length) is %lld; it must be positive",
                                (long long)length);
    }
    if (length < 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input %s has no samples along axis %lld; give dft_length",
                            ses__tstr(x).s, (long long)axis);
    if (inverse && onesided)
        return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                            "inverse and onesided together are not supported");
    if ((st = ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis)) != SES_OK ||
        (st = ses__attrs_set_int(&ctx->kernel_attrs, "inverse", inverse)) != SES_OK ||
        (st = ses__attrs_set_int(&ctx->kernel_attrs, "onesided", onesided)) != SES_OK ||
        (st = ses__attrs_set_int(&ctx->kernel_attrs, "dft_length", length)) != SES_OK)
        return st;
    ctx->kernel_inputs = 0x1;
    ctx->outputs[0] = *x;
    ctx->outputs[0].dims[axis] = onesided ? length / 2 + 1 : length;
    ctx->outputs[0].dims[x->rank - 1] = 2;
    return SES_OK;
}

/*
 * STFT(signal, frame_step[, window][, frame_length]; onesided): signal is [batch, length, 1]
 * or [batch, length, 2]; frames of frame_length samples (the window's length when it is not
 * given) start every frame_step samples, each multiplied by the window and transformed. The
 * output is [batch, frames, bins, 2] with frames = 1 + (length - frame_length) / frame_step
 * and bins = frame_length / 2 + 1 when onesided, else frame_length. Kernels get the signal and
 * the window, and frame_step, frame_length and onesided as attributes.
 */
ses_status_t ses__infer_stft(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    /* An empty window is an absent one (the ONNX importer gives one for a left-out window). */
    const int has_window = ses__op_has_input(ctx, 2) && ses__type_count(&ctx->inputs[2]) != 0;
    int64_t step, length = -1, onesided;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "signal", SES__DT_FLOAT);

    if (st == SES_OK)
        st = read_int_scalar(ctx, 1, "frame_step", &step);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "onesided", 1, &onesided);
    if (st == SES_OK && has_window)
        st = ses__op_check_same_dtype(ctx, 0, "signal", 2, "window");
    if (st == SES_OK && ses__op_has_input(ctx, 3))
        st = read_int_scalar(ctx, 3, "frame_length", &length);
    if (st != SES_OK)
        return st;
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "signal must be [batch, length, 1] (real) or [batch, length, 2] "
                            "(complex), got %s",
                            ses__tstr(x).s);
    if (has_window) {
        const ses__type_t *w = &ctx->inputs[2];
        if (w->rank != 1 || (length >= 0 && w->dims[0] != length))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "window must be 1-D of frame_length (%lld) values, got %s",
                                (long long)length, ses__tstr(w).s);
        length = w->dims[0];
    }
    if (length < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "frame_length is needed: give input 3 (frame_length) or input 2 "
                            "(window)");
    if (step < 1 || length < 1 || length > x->dims[1])
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "frame_step (%lld) and frame_length (%lld) must be positive and "
                            "frame_length at most the signal's length: signal is %s",
                            (long long)step, (long long)length, ses__tstr(x).s);
    if (onesided && x->dims[2] == 2)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "onesided is 1 but the signal is complex (%s); set onesided to 0",
                            ses__tstr(x).s);
    if ((st = ses__attrs_set_int(&ctx->kernel_attrs, "frame_step", step)) != SES_OK ||
        (st = ses__attrs_set_int(&ctx->kernel_attrs, "frame_length", length)) != SES_OK ||
        (st = ses__attrs_set_int(&ctx->kernel_attrs, "onesided", onesided)) != SES_OK)
        return st;
    ctx->kernel_inputs = has_window ? 0x5 : 0x1;
    ctx->outputs[0].dtype = x->dtype;
    ctx->outputs[0].rank = 4;
    ctx->outputs[0].dims[0] = x->dims[0];
    ctx->outputs[0].dims[1] = 1 + (x->dims[1] - length) / step;
    ctx->outputs[0].dims[2] = onesided ? length / 2 + 1 : length;
    ctx->outputs[0].dims[3] = 2;
    return SES_OK;
}
