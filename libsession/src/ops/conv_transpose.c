/*
 * ConvTranspose (ONNX op sets 1 and 11: the same attributes) and its gradient op.
 *
 *   op (inputs; attributes)                      kernel (inputs passed; normalized attributes)
 *   ConvTranspose(X, W[, B]; group, strides,     ConvTranspose (X, W[, B]; kernel_shape,
 *     dilations, pads, auto_pad, output_padding,   strides, dilations, pads, group)
 *     output_shape, kernel_shape)
 *   ConvTransposeGrad(X, dY, W; as ConvTranspose,
 *     input)                                     input 0: Conv (dY, W; window, group)
 *                                                input 1: ConvGrad (X, dY, W; window, group,
 *                                                  input 1)
 *                                                input 2: ReduceSum (dY; axes 0, 2.., keepdims 0)
 *
 * X is [N, C, in...], W [C, M/group, kernel...], B [M], Y [N, M, out...]. The window is
 * normalized as Conv's (cnn.c): explicit pads, begins then ends, whatever auto_pad, output_shape
 * and output_padding said; the kernel reads the output's dims from Y. Along each spatial axis
 * out = strides * (in - 1) + output_padding + (kernel - 1) * dilations + 1 - pad_begin - pad_end,
 * or output_shape with the pads that make it (ONNX's rule: the odd one at the end for SAME_UPPER,
 * at the beginning otherwise; a larger output_shape is zeros at the end), or in * strides for
 * auto_pad SAME_UPPER and SAME_LOWER.
 *
 * ConvTranspose is the gradient of a Conv with respect to its input: the Conv of Y's shape by W
 * (as [C filters, M/group channels]) gives X's shape. So its gradient of X is that Conv of dY,
 * and its gradient of W is that Conv's weight gradient with X in the place of dy, which is why
 * ConvTransposeGrad takes X first: the kernels' inputs are a subset of the node's, in order.
 */
#include "spatial.h"

#include <string.h>

#include "cnn.h"
#include "infer.h"

/* X (input @p xi) and W (input @p wi): checks them and the attributes, fills @p w, @p group
 * and the output type @p y. */
static ses_status_t ct_core(ses__infer_ctx_t *ctx, size_t xi, size_t wi, ses__window_t *w,
                            int64_t *group, ses__type_t *y) {
    const ses__type_t *x = &ctx->inputs[xi], *wt = &ctx->inputs[wi];
    const char *auto_pad;
    int64_t out_pad[SES__SPATIAL_MAX], shape[SES_MAX_RANK];
    const int64_t *ks, *os;
    size_t n_ks, n_os;
    int has_ks, has_os;
    ses_status_t st = ses__op_check_dtype(ctx, xi, "X", SES__DT_FLOAT);

    if (st == SES_OK && x->rank < 3)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "X must be [N, C, spatial...] with at least one spatial dimension, got "
                          "%s",
                          ses__tstr(x).s);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, xi, "X", wi, "W");
    if (st == SES_OK && wt->rank != x->rank)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "W must be [C, M/group, kernel...] of X's rank: X is %s, W is %s",
                          ses__tstr(x).s, ses__tstr(wt).s);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "group", 1, group);
    if (st != SES_OK)
        return st;
    if (*group < 1 || x->dims[1] % *group != 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute group is %lld; it must be >= 1 and divide X's channels: X "
                            "is %s",
                            (long long)*group, ses__tstr(x).s);
    if (wt->dims[0] != x->dims[1])
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "W's dimension 0 must be X's channels: X is %s, W is %s",
                            ses__tstr(x).s, ses__tstr(wt).s);
    w->n = x->rank - 2;
    const uint32_t n = w->n;
    for (uint32_t k = 0; k < n; k++) {
        w->kernel[k] = wt->dims[2 + k];
        if (w->kernel[k] < 1)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "W has an empty kernel: W is %s",
                                ses__tstr(wt).s);
    }
    st = ses__op_attr_ints(ctx, "kernel_shape", &ks, &n_ks, &has_ks);
    if (st == SES_OK && has_ks && (n_ks != n || memcmp(ks, w->kernel, n * sizeof *ks) != 0))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "attribute kernel_shape %s does not match W's spatial dims: W is %s",
                          ses__ints_str(ks, n_ks).s, ses__tstr(wt).s);
    if (st == SES_OK)
        st = ses__window_read(ctx, w, &auto_pad);
    if (st == SES_OK)
        st = ses__window_ints(ctx, "output_padding", n, 0, 0, out_pad, NULL);
    if (st == SES_OK)
        st = ses__op_attr_ints(ctx, "output_shape", &os, &n_os, &has_os);
    if (st != SES_OK)
        return st;
    const int same_upper = !strcmp(auto_pad, "SAME_UPPER");
    const int same = same_upper || !strcmp(auto_pad, "SAME_LOWER");
    /* output_shape lists the spatial dims; some exporters write N and C too. */
    if (has_os && n_os != n && n_os != x->rank)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute output_shape %s must have one entry per spatial dimension "
                            "(%u): X is %s",
                            ses__ints_str(os, n_os).s, n, ses__tstr(x).s);
    for (uint32_t k = 0; k < n; k++) {
        const int64_t s = w->strides[k], in = x->dims[2 + k];
        int64_t full; /* the output before any pads: s * (in - 1) + output_padding + extent */
        if (out_pad[k] >= s && out_pad[k] >= w->dilations[k])
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute output_padding %s: each entry must be smaller than the "
                                "stride or the dilation (strides %s, dilations %s)",
                                ses__ints_str(out_pad, n).s, ses__ints_str(w->strides, n).s,
                                ses__ints_str(w->dilations, n).s);
        if (__builtin_mul_overflow(w->kernel[k] - 1, w->dilations[k], &full) ||
            __builtin_add_overflow(full, 1 + out_pad[k], &full) ||
            __builtin_mul_overflow(s, in > 0 ? in - 1 : 0, &shape[k]) ||
            __builtin_add_overflow(full, shape[k], &full) || full > (INT64_C(1) << 48))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "the output is too large: X is %s, W is %s, strides %s, "
                                "dilations %s",
                                ses__tstr(x).s, ses__tstr(wt).s, ses__ints_str(w->strides, n).s,
                                ses__ints_str(w->dilations, n).s);
        int64_t *pb = &w->pads[k], *pe = &w->pads[n + k];
        if (has_os || same) {
            const int64_t target = has_os ? os[n_os - n + k] : in * s;
            int64_t total = full - target;
            if (target < 0 || target > (INT64_C(1) << 48))
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "attribute output_shape %s has %lld along spatial dimension "
                                    "%u; it must be >= 0",
                                    ses__ints_str(os, n_os).s, (long long)target, k);
            /* A larger output than the taps reach is extended with zeros at the end, as
             * output_padding does (ONNX's test_convtranspose_output_shape). */
            if (total < 0)
                total = 0;
            *pb = same_upper ? total / 2 : total - total / 2;
            *pe = total - *pb;
            w->out[k] = target;
            continue;
        }
        if (!strcmp(auto_pad, "VALID"))
            *pb = *pe = 0;
        if (*pb + *pe > full)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute pads %s removes more than the output has along "
                                "spatial dimension %u (%lld)",
                                ses__ints_str(w->pads, 2 * (size_t)n).s, k, (long long)full);
        w->out[k] = full - *pb - *pe;
    }
    memset(y, 0, sizeof *y);
    y->dtype = x->dtype;
    y->rank = x->rank;
    y->dims[0] = x->dims[0];
    if (__builtin_mul_overflow(wt->dims[1], *group, &y->dims[1]))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "W %s times group %lld overflows",
                            ses__tstr(wt).s, (long long)*group);
    for (uint32_t k = 0; k < n; k++)
        y->dims[2 + k] = w->out[k];
    return SES_OK;
}

ses_status_t ses__infer_conv_transpose(ses__infer_ctx_t *ctx) {
    ses__window_t w;
    int64_t group;
    ses_status_t st = ct_core(ctx, 0, 1, &w, &group, &ctx->outputs[0]);

    if (st != SES_OK)
        return st;
    ctx->kernel_inputs = 0x3;
    if (ses__op_has_input(ctx, 2) && ses__type_count(&ctx->inputs[2]) != 0) {
        const ses__type_t *b = &ctx->inputs[2];
        st = ses__op_check_same_dtype(ctx, 0, "X", 2, "B");
        if (st == SES_OK && (b->rank != 1 || b->dims[0] != ctx->outputs[0].dims[1]))
            st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                              "B must be 1-D with one entry per output channel (W's dimension 1 "
                              "times group %lld): W is %s, B is %s",
                              (long long)group, ses__tstr(&ctx->inputs[1]).s, ses__tstr(b).s);
        if (st != SES_OK)
            return st;
        ctx->kernel_inputs = 0x7;
    }
    return ses__conv_attrs(ctx, &w, group);
}

ses_status_t ses__infer_conv_transpose_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0], *dy = &ctx->inputs[1];
    ses__type_t y;
    ses__window_t w;
    int64_t group, input;
    int ok;
    ses_status_t st = ses__op_check_same_dtype(ctx, 0, "X", 1, "dY");

    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "input", &input);
    if (st == SES_OK && (input < 0 || input > 2))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "attribute input must be 0 (the gradient of X), 1 (of W) or 2 (of B), "
                          "got %lld",
                          (long long)input);
    if (st == SES_OK)
        st = ct_core(ctx, 0, 2, &w, &group, &y);
    if (st != SES_OK)
        return st;
    ok = dy->rank == y.rank;
    for (uint32_t d = 0; ok && d < y.rank; d++)
        ok = dy->dims[d] == y.dims[d];
    if (!ok)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "dY does not match ConvTranspose(X, W): dY is %s, X is %s, W is %s, "
                            "the output is %s",
                            ses__tstr(dy).s, ses__tstr(x).s, ses__tstr(&ctx->inputs[2]).s,
                            ses__tstr(&y).s);
    if (input == 2) {
        int64_t axes[SES_MAX_RANK];
        size_t n = 0;
        axes[n++] = 0;
        for (uint32_t d = 2; d < dy->rank; d++)
            axes[n++] = d;
        ctx->outputs[0].dtype = dy->dtype;
        ctx->outputs[0].rank = 1;
        ctx->outputs[0].dims[0] = dy->dims[1];
        ctx->kernel_op = "ReduceSum";
        ctx->kernel_inputs = 0x2;
        st = ses__attrs_set_ints(&ctx->kernel_attrs, "axes", axes, n);
        if (st == SES_OK)
            st = ses__attrs_set_int(&ctx->kernel_attrs, "keepdims", 0);
        return st;
    }
    /* The Conv of dY by W must give X's shape back; an output_padding of a stride or more
     * (allowed when the dilation is larger) adds a whole step, and the Conv then gives one more. */
    for (uint32_t k = 0; k < w.n; k++) {
        const int64_t ext = (w.kernel[k] - 1) * w.dilations[k] + 1;
        const int64_t back = (w.out[k] + w.pads[k] + w.pads[w.n + k] - ext) / w.strides[k] + 1;
        if (back != x->dims[2 + k])
            return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                                "no gradient for an output_padding of a stride or more: X is %s, "
                                "dY is %s, strides %s",
                                ses__tstr(x).s, ses__tstr(dy).s, ses__ints_str(w.strides, w.n).s);
    }
    if (input == 0) {
        ctx->outputs[0] = *x;
        ctx->kernel_op = "Conv";
        ctx->kernel_inputs = 0x6;
        return ses__conv_attrs(ctx, &w, group);
    }
    ctx->outputs[0] = ctx->inputs[2];
    ctx->kernel_op = "ConvGrad";
    ctx->kernel_inputs = 0x7;
    st = ses__conv_attrs(ctx, &w, group);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "input", 1);
    return st;
}
