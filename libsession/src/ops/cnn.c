/*
 * Convolution, pooling and the normalizations exported CNNs and MLPs need (ONNX opset 13 and
 * later semantics), with the gradient ops their training needs. The shape ops they use live in
 * shape_ops.c, pad.c and generators.c, Clip in elementwise.c.
 *
 * Conv, MaxPool and AveragePool share one normalization of their sliding window: kernel_shape,
 * strides, dilations and explicit pads (auto_pad resolved, ceil_mode folded into the output
 * shape), one entry per spatial dimension (pads: the begins, then the ends). Kernels get those
 * four lists and trust the output dims. Any number of spatial dimensions (1-D, 2-D, 3-D, ...)
 * is accepted.
 *
 *   op (inputs; attributes)                      kernel (inputs passed; normalized attributes)
 *   Conv(X, W[, B]; group, ...)                  Conv (X, W[, B]; window, group)
 *   ConvGrad(dy, X, W; as Conv, input)           input 0/1: ConvGrad (dy, X, W; window, group,
 *                                                input); input 2: ReduceSum of dy
 *   MaxPool(X; ..., ceil_mode)                   MaxPool (X; window[, storage_order when
 *                                                  Indices is asked for])
 *   AveragePool(X; ..., count_include_pad)       AveragePool (X; window, count_include_pad)
 *   MaxPoolGrad(dy, X; as MaxPool)               MaxPoolGrad (dy, X; window)
 *   AveragePoolGrad(dy, X; as AveragePool)       AveragePoolGrad (dy; window, count_include_pad)
 *   GlobalAveragePool(X), GlobalMaxPool(X)       ReduceMean, ReduceMax (axes 2.., keepdims 1)
 *   GlobalAveragePoolGrad(dy, X)                 ReduceGrad (axes 2.., scale 1/count)
 *   BatchNormalization(X, scale, B, mean, var)   BatchNormalization (all five; epsilon), and
 *                                                with training_mode 1 (epsilon, momentum,
 *                                                training_mode): X, scale, B giving Y, or all
 *                                                five giving Y and running_mean[, running_var]
 *   Dropout(data[, ratio, training_mode])        Identity, or Dropout (data) with the mask;
 *                                                training: Dropout (data, ratio; has_seed,
 *                                                seed) giving the output[, mask]
 *   LayerNormalization(X, Scale[, B]; axis, ...) LayerNormalization (all; axis, epsilon)
 *   LayerNormalizationGrad(dY, X, Scale; ...)    LayerNormalizationGrad (all; axis, epsilon,
 *                                                input: 0 dX, 1 dScale)
 *
 * Dropout's training_mode must be a constant or fed, as Reshape's shape. Conv's optional B given
 * as an empty tensor counts as absent, since a graph cannot leave a middle input out.
 */
#include "cnn.h"

#include <string.h>

#include "infer.h"

/* ---- the sliding window ------------------------------------------------------------------ */

typedef ses__window_t window_t;

ses_status_t ses__window_ints(ses__infer_ctx_t *ctx, const char *name, size_t n, int64_t fallback,
                              int64_t min, int64_t *out, int *out_present) {
    const int64_t *v;
    size_t count;
    int present;
    ses_status_t st = ses__op_attr_ints(ctx, name, &v, &count, &present);

    if (st != SES_OK)
        return st;
    if (out_present)
        *out_present = present;
    if (!present) {
        for (size_t k = 0; k < n; k++)
            out[k] = fallback;
        return SES_OK;
    }
    const size_t spatial = strcmp(name, "pads") ? n : n / 2;
    if (count != n)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute %s %s has %zu entries; it needs %zu (the input has %zu "
                            "spatial dimension%s)",
                            name, ses__ints_str(v, count).s, count, n, spatial,
                            spatial == 1 ? "" : "s");
    for (size_t k = 0; k < n; k++) {
        if (v[k] < min)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute %s %s has %lld; every entry must be >= %lld%s", name,
                                ses__ints_str(v, count).s, (long long)v[k], (long long)min,
                                strcmp(name, "pads") ? "" : " (negative pads are not allowed)");
        out[k] = v[k];
    }
    return SES_OK;
}

ses_status_t ses__window_read(ses__infer_ctx_t *ctx, ses__window_t *w, const char **out_auto_pad) {
    const char *auto_pad = "NOTSET";
    int pads_given = 0;
    const uint32_t n = w->n;
    ses_status_t st = ses__window_ints(ctx, "strides", n, 1, 1, w->strides, NULL);

    if (st == SES_OK)
        st = ses__window_ints(ctx, "dilations", n, 1, 1, w->dilations, NULL);
    if (st == SES_OK)
        st = ses__window_ints(ctx, "pads", 2 * (size_t)n, 0, 0, w->pads, &pads_given);
    if (st != SES_OK)
        return st;
    if (ses__attrs_get_string(ctx->attrs, "auto_pad", &auto_pad) < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute auto_pad must be a string");
    if (strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID") && strcmp(auto_pad, "SAME_UPPER") &&
        strcmp(auto_pad, "SAME_LOWER"))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute auto_pad is \"%s\"; it must be NOTSET, SAME_UPPER, "
                            "SAME_LOWER or VALID",
                            auto_pad);
    if (strcmp(auto_pad, "NOTSET") && pads_given)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attributes pads and auto_pad=%s are both given; give one", auto_pad);
    *out_auto_pad = auto_pad;
    return SES_OK;
}

/*
 * Fills @p w for sliding @p kernel (w->n entries, set by the caller along with w->kernel) over
 * input @p x ([N, C, spatial...]): strides, dilations, pads or auto_pad, and the output's
 * spatial dims. @p ceil_mode rounds the output up (pools); @p pool adds ONNX's pool rule that
 * each pad is smaller than the kernel.
 */
static ses_status_t window_resolve(ses__infer_ctx_t *ctx, const ses__type_t *x, int64_t ceil_mode,
                                   int pool, window_t *w) {
    const char *auto_pad;
    const uint32_t n = w->n;
    ses_status_t st = ses__window_read(ctx, w, &auto_pad);

    if (st != SES_OK)
        return st;
    for (uint32_t k = 0; k < n; k++) {
        const int64_t in = x->dims[2 + k], s = w->strides[k];
        int64_t ext, *pb = &w->pads[k], *pe = &w->pads[n + k];
        if (__builtin_mul_overflow(w->kernel[k] - 1, w->dilations[k], &ext) ||
            __builtin_add_overflow(ext, 1, &ext))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "kernel_shape %s with dilations %s is too large",
                                ses__ints_str(w->kernel, n).s, ses__ints_str(w->dilations, n).s);
        if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER")) {
            int64_t out = in == 0 ? 0 : (in - 1) / s + 1, total;
            total = out ? (out - 1) * s + ext - in : 0;
            if (total < 0)
                total = 0;
            *pb = !strcmp(auto_pad, "SAME_UPPER") ? total / 2 : total - total / 2;
            *pe = total - *pb;
            w->out[k] = out;
            continue;
        }
        if (!strcmp(auto_pad, "VALID"))
            *pb = *pe = 0;
        if (pool && (*pb >= w->kernel[k] || *pe >= w->kernel[k]))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute pads %s: each pad must be smaller than the kernel "
                                "(kernel_shape %s)",
                                ses__ints_str(w->pads, 2 * n).s, ses__ints_str(w->kernel, n).s);
        const int64_t padded = in + *pb + *pe;
        if (padded < ext)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "the kernel is bigger than the padded input along spatial "
                                "dimension %u: input is %s, pads %s, kernel_shape %s, dilations "
                                "%s (extent %lld > %lld)",
                                k, ses__tstr(x).s, ses__ints_str(w->pads, 2 * n).s,
                                ses__ints_str(w->kernel, n).s, ses__ints_str(w->dilations, n).s,
                                (long long)ext, (long long)padded);
        int64_t out = ceil_mode ? (padded - ext + s - 1) / s + 1 : (padded - ext) / s + 1;
        /* The last window must start inside the input or its begin padding (ceil_mode). */
        if (ceil_mode && out > 1 && (out - 1) * s >= in + *pb)
            out--;
        w->out[k] = out;
    }
    return SES_OK;
}

static ses_status_t window_attrs(ses__infer_ctx_t *ctx, const window_t *w) {
    ses__attrs_t *ka = &ctx->kernel_attrs;
    ses_status_t st = ses__attrs_set_ints(ka, "kernel_shape", w->kernel, w->n);
    if (st == SES_OK)
        st = ses__attrs_set_ints(ka, "strides", w->strides, w->n);
    if (st == SES_OK)
        st = ses__attrs_set_ints(ka, "dilations", w->dilations, w->n);
    if (st == SES_OK)
        st = ses__attrs_set_ints(ka, "pads", w->pads, 2 * (size_t)w->n);
    return st;
}

/* Input @p index (named @p name) has a dtype in @p allowed and rank >= 3: [N, C, spatial...]. */
static ses_status_t check_image_of(ses__infer_ctx_t *ctx, size_t index, const char *name,
                                   uint32_t allowed) {
    const ses__type_t *x = &ctx->inputs[index];
    ses_status_t st = ses__op_check_dtype(ctx, index, name, allowed);

    if (st == SES_OK && x->rank < 3)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "input %zu (%s) must be [N, C, spatial...] with at least one spatial "
                          "dimension, got %s",
                          index, name, ses__tstr(x).s);
    return st;
}

/* Input @p index is float with rank >= 3. */
static ses_status_t check_image(ses__infer_ctx_t *ctx, size_t index, const char *name) {
    return check_image_of(ctx, index, name, SES__DT_FLOAT);
}

/* ---- Conv ----------------------------------------------------------------------------------- */

/* Conv's bias, input 2 (given): X's dtype, 1-D with one entry per filter (Y's dim 1). */
static ses_status_t check_conv_bias(ses__infer_ctx_t *ctx) {
    const ses__type_t *b = &ctx->inputs[2];
    ses_status_t st = ses__op_check_same_dtype(ctx, 0, "X", 2, "B");

    if (st == SES_OK && (b->rank != 1 || b->dims[0] != ctx->outputs[0].dims[1]))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "B must be 1-D with one entry per filter: W is %s, B is %s",
                          ses__tstr(&ctx->inputs[1]).s, ses__tstr(b).s);
    return st;
}

/* Conv of inputs @p xi (X) and xi + 1 (W): checks them and the attributes, fills @p w, @p group
 * and the output type @p y. */
static ses_status_t conv_window(ses__infer_ctx_t *ctx, size_t xi, size_t wi, window_t *w,
                                int64_t *group, ses__type_t *y);

static ses_status_t conv_core(ses__infer_ctx_t *ctx, size_t xi, window_t *w, int64_t *group,
                              ses__type_t *y) {
    ses_status_t st = check_image(ctx, xi, "X");

    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, xi, "X", xi + 1, "W");
    return st != SES_OK ? st : conv_window(ctx, xi, xi + 1, w, group, y);
}

/* conv_core's shapes and attributes of X (input @p xi) and W (@p wi), whatever their dtypes. */
static ses_status_t conv_window(ses__infer_ctx_t *ctx, size_t xi, size_t wi, window_t *w,
                                int64_t *group, ses__type_t *y) {
    const ses__type_t *x = &ctx->inputs[xi], *wt = &ctx->inputs[wi];
    const int64_t *ks;
    size_t n_ks;
    int has_ks;
    ses_status_t st = SES_OK;

    if (x->rank < 3)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "input %zu (X) must be [N, C, spatial...] with at least one spatial "
                          "dimension, got %s",
                          xi, ses__tstr(x).s);
    if (st == SES_OK && wt->rank != x->rank)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "W must be [M, C/group, kernel...] of X's rank: X is %s, W is %s",
                          ses__tstr(x).s, ses__tstr(wt).s);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "group", 1, group);
    if (st != SES_OK)
        return st;
    const int64_t c = x->dims[1], m = wt->dims[0];
    if (*group < 1 || c % *group != 0 || m % *group != 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute group is %lld; it must be >= 1 and divide both X's "
                            "channels and W's filters: X is %s, W is %s",
                            (long long)*group, ses__tstr(x).s, ses__tstr(wt).s);
    if (wt->dims[1] != c / *group)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "W's dimension 1 must be X's channels / group = %lld / %lld = %lld: "
                            "X is %s, W is %s",
                            (long long)c, (long long)*group, (long long)(c / *group),
                            ses__tstr(x).s, ses__tstr(wt).s);
    w->n = x->rank - 2;
    for (uint32_t k = 0; k < w->n; k++)
        w->kernel[k] = wt->dims[2 + k];
    st = ses__op_attr_ints(ctx, "kernel_shape", &ks, &n_ks, &has_ks);
    if (st != SES_OK)
        return st;
    if (has_ks && (n_ks != w->n || memcmp(ks, w->kernel, n_ks * sizeof *ks) != 0))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute kernel_shape %s does not match W's spatial dims: W is %s",
                            ses__ints_str(ks, n_ks).s, ses__tstr(wt).s);
    for (uint32_t k = 0; k < w->n; k++)
        if (w->kernel[k] < 1)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "W has an empty kernel: W is %s",
                                ses__tstr(wt).s);
    st = window_resolve(ctx, x, 0, 0, w);
    if (st != SES_OK)
        return st;
    memset(y, 0, sizeof *y);
    y->dtype = x->dtype;
    y->rank = x->rank;
    y->dims[0] = x->dims[0];
    y->dims[1] = m;
    for (uint32_t k = 0; k < w->n; k++)
        y->dims[2 + k] = w->out[k];
    return SES_OK;
}

ses_status_t ses__conv_attrs(ses__infer_ctx_t *ctx, const ses__window_t *w, int64_t group) {
    ses_status_t st = window_attrs(ctx, w);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "group", group);
    return st;
}

/* The integer convolutions' shapes (quant.c): Conv's checks but the dtypes, and its kernel
 * attributes. */
ses_status_t ses__conv_shape(ses__infer_ctx_t *ctx, size_t xi, size_t wi, ses__type_t *out_y) {
    window_t w;
    int64_t group;
    ses_status_t st = conv_window(ctx, xi, wi, &w, &group, out_y);

    return st != SES_OK ? st : ses__conv_attrs(ctx, &w, group);
}

ses_status_t ses__infer_conv(ses__infer_ctx_t *ctx) {
    window_t w;
    int64_t group;
    ses_status_t st = conv_core(ctx, 0, &w, &group, &ctx->outputs[0]);

    if (st != SES_OK)
        return st;
    ctx->kernel_inputs = 0x3;
    if (ses__op_given(ctx, 2)) {
        if ((st = check_conv_bias(ctx)) != SES_OK)
            return st;
        ctx->kernel_inputs = 0x7;
    }
    return ses__conv_attrs(ctx, &w, group);
}

/*
 * FusedConv(X, W[, B[, Z]]): activation(Conv(X, W, B) + Z), ONNX Runtime's com.microsoft
 * contrib op; the compiler makes it from Conv -> [Add ->] activation. An empty B is absent (a
 * graph cannot leave a middle input out), so Z may come without a bias. Z, when given, has Y's
 * exact shape. The kernel gets X, W, then B and Z when given, told apart by has_bias and has_z,
 * with Conv's normalized attributes and the activation's (ses__op_activation).
 */
ses_status_t ses__infer_fused_conv(ses__infer_ctx_t *ctx) {
    window_t w;
    int64_t group, has_bias = 0, has_z = 0;
    ses_status_t st = conv_core(ctx, 0, &w, &group, &ctx->outputs[0]);

    if (st != SES_OK)
        return st;
    ctx->kernel_inputs = 0x3;
    if (ses__op_given(ctx, 2)) {
        if ((st = check_conv_bias(ctx)) != SES_OK)
            return st;
        ctx->kernel_inputs |= 0x4;
        has_bias = 1;
    }
    if (ses__op_has_input(ctx, 3)) {
        st = ses__op_check_same_dtype(ctx, 0, "X", 3, "Z");
        if (st == SES_OK && !ses__same_dims(&ctx->inputs[3], &ctx->outputs[0]))
            st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                              "Z must have the convolution's shape: Y is %s, Z is %s",
                              ses__tstr(&ctx->outputs[0]).s, ses__tstr(&ctx->inputs[3]).s);
        if (st != SES_OK)
            return st;
        ctx->kernel_inputs |= 0x8;
        has_z = 1;
    }
    st = ses__conv_attrs(ctx, &w, group);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "has_bias", has_bias);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "has_z", has_z);
    if (st == SES_OK)
        st = ses__op_activation(ctx);
    return st;
}

/* The gradient of Conv(X, W[, B]) with respect to X (input 0), W (1) or B (2). */
ses_status_t ses__infer_conv_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *dy = &ctx->inputs[0];
    ses__type_t y;
    window_t w;
    int64_t group, input;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "dy", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dy", 1, "X");
    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "input", &input);
    if (st == SES_OK && (input < 0 || input > 2))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "attribute input must be 0 (the gradient of X), 1 (of W) or 2 (of B), "
                          "got %lld",
                          (long long)input);
    if (st == SES_OK)
        st = conv_core(ctx, 1, &w, &group, &y);
    if (st != SES_OK)
        return st;
    if (!ses__same_dims(dy, &y))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "dy does not match Conv(X, W): dy is %s, X is %s, W is %s, the "
                            "convolution is %s",
                            ses__tstr(dy).s, ses__tstr(&ctx->inputs[1]).s,
                            ses__tstr(&ctx->inputs[2]).s, ses__tstr(&y).s);
    if (input == 2) {
        int64_t axes[SES_MAX_RANK];
        size_t n = 0;
        axes[n++] = 0;
        for (uint32_t d = 2; d < dy->rank; d++)
            axes[n++] = d;
        memset(&ctx->outputs[0], 0, sizeof ctx->outputs[0]);
        ctx->outputs[0].dtype = dy->dtype;
        ctx->outputs[0].rank = 1;
        ctx->outputs[0].dims[0] = dy->dims[1];
        ctx->kernel_op = "ReduceSum";
        ctx->kernel_inputs = 0x1;
        st = ses__attrs_set_ints(&ctx->kernel_attrs, "axes", axes, n);
        if (st == SES_OK)
            st = ses__attrs_set_int(&ctx->kernel_attrs, "keepdims", 0);
        return st;
    }
    ctx->outputs[0] = ctx->inputs[1 + input];
    st = ses__conv_attrs(ctx, &w, group);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "input", input);
    return st;
}

/* ---- pools ------------------------------------------------------------------------------------
 */

/* The window of a pool over input @p xi: kernel_shape required, ceil_mode. MaxPool also takes
 * i8 and u8 (op set 12). */
static ses_status_t pool_core(ses__infer_ctx_t *ctx, size_t xi, window_t *w, ses__type_t *y) {
    const ses__type_t *x = &ctx->inputs[xi];
    int64_t ceil_mode;
    int present;
    ses_status_t st = check_image_of(
        ctx, xi, "X",
        SES__DT_FLOAT | (strcmp(ctx->op, "MaxPool") ? 0u : SES__DT(SES_I8) | SES__DT(SES_U8)));

    if (st != SES_OK)
        return st;
    w->n = x->rank - 2;
    st = ses__window_ints(ctx, "kernel_shape", w->n, 0, 1, w->kernel, &present);
    if (st == SES_OK && !present)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute kernel_shape is required");
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "ceil_mode", 0, &ceil_mode);
    if (st == SES_OK)
        st = window_resolve(ctx, x, ceil_mode, 1, w);
    if (st != SES_OK)
        return st;
    *y = *x;
    for (uint32_t k = 0; k < w->n; k++)
        y->dims[2 + k] = w->out[k];
    return SES_OK;
}

/* MaxPool's optional Indices output (i64, Y's shape): flat offsets into X, whose spatial part
 * is row-major (storage_order 0) or column-major (1); the kernel gets storage_order then. */
ses_status_t ses__infer_max_pool(ses__infer_ctx_t *ctx) {
    window_t w;
    int64_t order;
    ses_status_t st = ses__op_attr_flag(ctx, "storage_order", 0, &order);

    if (st == SES_OK)
        st = pool_core(ctx, 0, &w, &ctx->outputs[0]);
    if (st == SES_OK)
        st = window_attrs(ctx, &w);
    if (st == SES_OK && ctx->n_outputs > 1) {
        ctx->outputs[1] = ctx->outputs[0];
        ctx->outputs[1].dtype = SES_I64;
        st = ses__attrs_set_int(&ctx->kernel_attrs, "storage_order", order);
    }
    return st;
}

ses_status_t ses__infer_average_pool(ses__infer_ctx_t *ctx) {
    window_t w;
    int64_t include;
    ses_status_t st = ses__op_attr_flag(ctx, "count_include_pad", 0, &include);

    if (st == SES_OK)
        st = pool_core(ctx, 0, &w, &ctx->outputs[0]);
    if (st == SES_OK)
        st = window_attrs(ctx, &w);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "count_include_pad", include);
    return st;
}

/* MaxPoolGrad(dy, X) and AveragePoolGrad(dy, X), with the forward pool's attributes. */
ses_status_t ses__infer_pool_grad(ses__infer_ctx_t *ctx) {
    const int average = strcmp(ctx->op, "AveragePoolGrad") == 0;
    const ses__type_t *dy = &ctx->inputs[0];
    ses__type_t y;
    window_t w;
    int64_t include = 0;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "dy", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dy", 1, "X");
    if (st == SES_OK && average)
        st = ses__op_attr_flag(ctx, "count_include_pad", 0, &include);
    if (st == SES_OK)
        st = pool_core(ctx, 1, &w, &y);
    if (st != SES_OK)
        return st;
    if (!ses__same_dims(dy, &y))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "dy does not match the pool of X: dy is %s, X is %s, the pool is %s",
                            ses__tstr(dy).s, ses__tstr(&ctx->inputs[1]).s, ses__tstr(&y).s);
    ctx->outputs[0] = ctx->inputs[1];
    ctx->kernel_inputs = average ? 0x1 : 0x3;
    st = window_attrs(ctx, &w);
    if (st == SES_OK && average)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "count_include_pad", include);
    return st;
}

/* The spatial axes 2 .. rank-1 of @p x into @p axes; returns how many. */
static size_t spatial_axes(const ses__type_t *x, int64_t *axes) {
    size_t n = 0;
    for (uint32_t d = 2; d < x->rank; d++)
        axes[n++] = d;
    return n;
}

/* GlobalAveragePool and GlobalMaxPool: the reductions over every spatial axis, kept as 1. */
ses_status_t ses__infer_global_pool(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    int64_t axes[SES_MAX_RANK];
    size_t n;
    ses_status_t st = check_image(ctx, 0, "X");

    if (st != SES_OK)
        return st;
    n = spatial_axes(x, axes);
    if (strcmp(ctx->op, "GlobalMaxPool") == 0) {
        for (size_t k = 0; k < n; k++)
            if (x->dims[axes[k]] == 0)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "the max of an empty window is undefined: X is %s",
                                    ses__tstr(x).s);
        ctx->kernel_op = "ReduceMax";
    } else {
        ctx->kernel_op = "ReduceMean";
    }
    ctx->outputs[0] = *x;
    for (size_t k = 0; k < n; k++)
        ctx->outputs[0].dims[axes[k]] = 1;
    ctx->kernel_inputs = 0x1;
    st = ses__attrs_set_ints(&ctx->kernel_attrs, "axes", axes, n);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "keepdims", 1);
    return st;
}

ses_status_t ses__infer_global_average_pool_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *dy = &ctx->inputs[0], *x = &ctx->inputs[1];
    int64_t axes[SES_MAX_RANK];
    ses__type_t pooled;
    double count = 1.0;
    size_t n;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "dy", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dy", 1, "X");
    if (st == SES_OK)
        st = check_image(ctx, 1, "X");
    if (st != SES_OK)
        return st;
    n = spatial_axes(x, axes);
    pooled = *x;
    for (size_t k = 0; k < n; k++) {
        pooled.dims[axes[k]] = 1;
        count *= (double)x->dims[axes[k]];
    }
    if (!ses__same_dims(dy, &pooled))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "dy does not match GlobalAveragePool(X): dy is %s, X is %s",
                            ses__tstr(dy).s, ses__tstr(x).s);
    ctx->outputs[0] = *x;
    ctx->kernel_op = "ReduceGrad";
    ctx->kernel_inputs = 0x1;
    st = ses__attrs_set_ints(&ctx->kernel_attrs, "axes", axes, n);
    if (st == SES_OK)
        st = ses__attrs_set_float(&ctx->kernel_attrs, "scale", count > 0.0 ? 1.0 / count : 1.0);
    return st;
}

/* ---- BatchNormalization, Dropout ------------------------------------------------------------ */

ses_status_t ses__infer_batch_norm(ses__infer_ctx_t *ctx) {
    static const char *const names[] = {"X", "scale", "B", "input_mean", "input_var"};
    const ses__type_t *x = &ctx->inputs[0];
    int64_t training;
    double epsilon, momentum = 0.9;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT);
    if (st == SES_OK && x->rank < 2)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "X must be [N, C, ...], got %s",
                          ses__tstr(x).s);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "training_mode", 0, &training);
    if (st == SES_OK && !training && ctx->n_outputs > 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "outputs running_mean and running_var exist only in training mode "
                          "(training_mode 1); asked for %zu outputs with training_mode 0",
                          ctx->n_outputs);
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "epsilon", 1e-5, &epsilon);
    if (st == SES_OK && training)
        st = ses__op_attr_float(ctx, "momentum", 0.9, &momentum);
    /* ONNX gives all five inputs; the training form normalizes with the batch's statistics, so
     * for Y alone we also take X, scale and B (a libsession extension). */
    if (st == SES_OK && ctx->n_inputs != 5 && (!training || ctx->n_outputs > 1))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "takes 5 inputs (X, scale, B, input_mean, input_var)%s; got %zu",
                          training ? " to give running_mean and running_var" : "", ctx->n_inputs);
    for (size_t i = 1; st == SES_OK && i < ctx->n_inputs; i++) {
        const ses__type_t *p = &ctx->inputs[i];
        st = ses__op_check_same_dtype(ctx, 0, "X", i, names[i]);
        if (st == SES_OK && (p->rank != 1 || p->dims[0] != x->dims[1]))
            st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                              "%s must be 1-D with one entry per channel: X is %s, %s is %s",
                              names[i], ses__tstr(x).s, names[i], ses__tstr(p).s);
    }
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    if (training) {
        /* The training form normalizes with the batch's statistics: with Y alone it needs
         * neither input_mean nor input_var, and its kernel (3 inputs) is told apart from the
         * inference one (5) by its signature; running_mean and running_var blend them in. */
        for (size_t i = 1; i < ctx->n_outputs; i++)
            ctx->outputs[i] = ctx->inputs[2 + i];
        if (ctx->n_outputs == 1)
            ctx->kernel_inputs = 0x7;
        st = ses__attrs_set_float(&ctx->kernel_attrs, "momentum", momentum);
        if (st == SES_OK)
            st = ses__attrs_set_int(&ctx->kernel_attrs, "training_mode", 1);
        if (st != SES_OK)
            return st;
    }
    return ses__attrs_set_float(&ctx->kernel_attrs, "epsilon", epsilon);
}

ses_status_t ses__infer_dropout(ses__infer_ctx_t *ctx) {
    int64_t training = 0;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "data", SES__DT_FLOAT);

    if (st == SES_OK && ses__op_has_input(ctx, 1))
        st = ses__op_check_dtype(ctx, 1, "ratio", SES__DT_FLOAT);
    if (st == SES_OK && ses__op_has_input(ctx, 1) && ses__type_count(&ctx->inputs[1]) != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input 1 (ratio) must be a scalar, got %s",
                          ses__tstr(&ctx->inputs[1]).s);
    if (st == SES_OK && ses__op_has_input(ctx, 2)) {
        double f;
        st = ses__op_check_dtype(ctx, 2, "training_mode", SES__DT(SES_BOOL));
        if (st == SES_OK)
            st = ses__op_read_scalar(ctx, 2, "training_mode", &f, &training);
    }
    if (st == SES_OK && training && !ses__op_has_input(ctx, 1))
        st = ses__op_fail(ctx, SES_UNIMPLEMENTED,
                          "training_mode is true but input 1 (ratio) is not given; give it "
                          "(ONNX's default is 0.5)");
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = ctx->inputs[0];
    if (training) {
        /* The training form: data and ratio reach the kernel (a signature no inference kernel
         * has), with the seed: kernels get has_seed and seed modulo 2^32. */
        int64_t seed = 0;
        const int has_seed = ses__attrs_find(ctx->attrs, "seed") != NULL;
        st = ses__op_attr_int(ctx, "seed", 0, &seed);
        if (st == SES_OK)
            st = ses__attrs_set_int(&ctx->kernel_attrs, "has_seed", has_seed);
        if (st == SES_OK)
            st = ses__attrs_set_int(&ctx->kernel_attrs, "seed", (int64_t)(uint32_t)seed);
        if (st != SES_OK)
            return st;
        ctx->kernel_inputs = 0x3;
        if (ctx->n_outputs > 1) {
            ctx->outputs[1] = ctx->inputs[0];
            ctx->outputs[1].dtype = SES_BOOL;
        }
        return SES_OK;
    }
    ctx->kernel_inputs = 0x1;
    if (ctx->n_outputs == 1) {
        ctx->kernel_op = "Identity";
        return SES_OK;
    }
    ctx->outputs[1] = ctx->inputs[0];
    ctx->outputs[1].dtype = SES_BOOL;
    return SES_OK;
}

/* ---- LayerNormalization ------------------------------------------------------------------- */

/*
 * What LayerNormalization and its gradient share: X (input @p xi) is normalized over the axes
 * from axis on, Scale (input @p xi + 1) has those dimensions exactly (X.dims[axis:]). Stores the
 * non-negative axis and epsilon in the kernel attributes.
 */
static ses_status_t layer_norm_common(ses__infer_ctx_t *ctx, size_t xi, int64_t *out_axis) {
    const ses__type_t *x = &ctx->inputs[xi], *scale = &ctx->inputs[xi + 1];
    int64_t axis, stash_type;
    double epsilon;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, xi, "X", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, xi, "X", xi + 1, "Scale");
    if (st == SES_OK && x->rank == 0)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "X must have rank 1 or more, got %s",
                          ses__tstr(x).s);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", -1, &axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, x->rank, x, &axis);
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "epsilon", 1e-5, &epsilon);
    /* Mean and InvStdDev are computed and kept in X's dtype (f32 sums in double), which is the
     * stash_type 1 (float) ONNX asks of f32 and more than it asks of f64. */
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "stash_type", 1, &stash_type);
    if (st == SES_OK && stash_type != 1 && stash_type != 11)
        st = ses__op_fail(ctx, SES_UNIMPLEMENTED,
                          "attribute stash_type is %lld; supported: 1 (float), 11 (double)",
                          (long long)stash_type);
    if (st != SES_OK)
        return st;
    int ok = scale->rank == x->rank - (uint32_t)axis;
    for (uint32_t d = 0; ok && d < scale->rank; d++)
        ok = scale->dims[d] == x->dims[(uint32_t)axis + d];
    if (!ok)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "Scale must have X's dimensions from axis %lld on: X is %s, Scale is "
                            "%s",
                            (long long)axis, ses__tstr(x).s, ses__tstr(scale).s);
    *out_axis = axis;
    st = ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
    if (st == SES_OK)
        st = ses__attrs_set_float(&ctx->kernel_attrs, "epsilon", epsilon);
    return st;
}

ses_status_t ses__infer_layer_norm(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    int64_t axis = 0; /* set when layer_norm_common succeeds */
    ses_status_t st = layer_norm_common(ctx, 0, &axis);

    if (st == SES_OK && ses__op_has_input(ctx, 2)) {
        st = ses__op_check_same_dtype(ctx, 0, "X", 2, "B");
        if (st == SES_OK && !ses__same_dims(&ctx->inputs[1], &ctx->inputs[2]))
            st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                              "B must have Scale's shape: Scale is %s, B is %s",
                              ses__tstr(&ctx->inputs[1]).s, ses__tstr(&ctx->inputs[2]).s);
    }
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    /* Mean and InvStdDev: X's shape with the normalized dimensions 1. */
    for (size_t o = 1; o < ctx->n_outputs; o++) {
        ctx->outputs[o] = *x;
        for (uint32_t d = (uint32_t)axis; d < x->rank; d++)
            ctx->outputs[o].dims[d] = 1;
    }
    return SES_OK;
}

/* LayerNormalizationGrad(dY, X, Scale; axis, epsilon, stash_type, input): the gradient of X
 * (input 0) or of Scale (input 1); the statistics are recomputed from X. */
ses_status_t ses__infer_layer_norm_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *dy = &ctx->inputs[0], *x = &ctx->inputs[1];
    int64_t axis, input;
    ses_status_t st = layer_norm_common(ctx, 1, &axis);

    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 1, "X", 0, "dY");
    if (st == SES_OK && !ses__same_dims(dy, x))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "dY must have X's shape: dY is %s, X is %s",
                          ses__tstr(dy).s, ses__tstr(x).s);
    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "input", &input);
    if (st == SES_OK && input != 0 && input != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "attribute input must be 0 (the gradient of X) or 1 (of Scale), got "
                          "%lld",
                          (long long)input);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "input", input);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = input == 0 ? *x : ctx->inputs[2];
    return SES_OK;
}
