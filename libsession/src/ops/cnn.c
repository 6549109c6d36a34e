/*
 * Convolution, pooling and the other ops exported CNNs and MLPs need (ONNX opset 13 and later
 * semantics), with the gradient ops their training needs.
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
 *   Pad(data, pads[, constant_value, axes])      Pad (data[, constant_value]; pads, mode)
 *   PadGrad(dy, x, pads[, constant_value, axes]) PadGrad (dy; pads, mode)
 *   Clip(x[, min, max])                          Clip (x and the bounds given; has_min, has_max)
 *   Expand(input, shape)                         ExpandLike (input)
 *   Split(input[, split]; axis, num_outputs)     Split (input; axis)
 *   Shape(data; start, end)                      Shape (data; start, end)
 *   ConstantOfShape(input; value[, dtype])       ConstantOfShape (input, never read; value)
 *   Range(start, limit, delta)                   Range (all three)
 *
 * Shape-like inputs (Pad's pads and axes, Expand's shape, Split's split, ConstantOfShape's
 * input, Range's three scalars, Dropout's training_mode) must be constants or fed, as
 * Reshape's shape. An optional input given as an empty tensor counts as absent (Clip's min or
 * max, Pad's constant_value), since a graph cannot leave a middle input out.
 */
#include "cnn.h"

#include <math.h>
#include <string.h>

#include "infer.h"

/* The most spatial dimensions: a tensor has N and C besides. */
#define SPATIAL_MAX (SES_MAX_RANK - 2)

/* ---- the sliding window ------------------------------------------------------------------ */

typedef struct window {
    uint32_t n; /* spatial dimensions */
    int64_t kernel[SPATIAL_MAX], strides[SPATIAL_MAX], dilations[SPATIAL_MAX];
    int64_t pads[2 * SPATIAL_MAX]; /* begins, then ends */
    int64_t out[SPATIAL_MAX];
} window_t;

/* Ints attribute @p name with @p n entries, each at least @p min; all @p fallback when absent. */
static ses_status_t spatial_ints(ses__infer_ctx_t *ctx, const char *name, size_t n,
                                 int64_t fallback, int64_t min, int64_t *out, int *out_present) {
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
    if (count != n)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute %s %s has %zu entries; the input has %zu spatial "
                            "dimension%s, so it needs %zu",
                            name, ses__ints_str(v, count).s, count,
                            n / (strcmp(name, "pads") ? 1 : 2), n == 1 ? "" : "s", n);
    for (size_t k = 0; k < n; k++) {
        if (v[k] < min)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute %s %s has %lld; every entry must be %s", name,
                                ses__ints_str(v, count).s, (long long)v[k],
                                min == 0 ? ">= 0 (negative pads are not allowed)" : ">= 1");
        out[k] = v[k];
    }
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
    const char *auto_pad = "NOTSET";
    int pads_given = 0, rc;
    ses_status_t st;
    const uint32_t n = w->n;

    st = spatial_ints(ctx, "strides", n, 1, 1, w->strides, NULL);
    if (st == SES_OK)
        st = spatial_ints(ctx, "dilations", n, 1, 1, w->dilations, NULL);
    if (st == SES_OK)
        st = spatial_ints(ctx, "pads", 2 * n, 0, 0, w->pads, &pads_given);
    if (st != SES_OK)
        return st;
    rc = ses__attrs_get_string(ctx->attrs, "auto_pad", &auto_pad);
    if (rc < 0)
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

/* Whether optional input @p i is given and not empty. */
static int given(const ses__infer_ctx_t *ctx, size_t i) {
    return ses__op_has_input(ctx, i) && ses__type_count(&ctx->inputs[i]) != 0;
}

static int same_dims(const ses__type_t *a, const ses__type_t *b) {
    if (a->rank != b->rank)
        return 0;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
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

static ses_status_t conv_attrs(ses__infer_ctx_t *ctx, const window_t *w, int64_t group) {
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

    return st != SES_OK ? st : conv_attrs(ctx, &w, group);
}

ses_status_t ses__infer_conv(ses__infer_ctx_t *ctx) {
    window_t w;
    int64_t group;
    ses_status_t st = conv_core(ctx, 0, &w, &group, &ctx->outputs[0]);

    if (st != SES_OK)
        return st;
    ctx->kernel_inputs = 0x3;
    if (given(ctx, 2)) {
        if ((st = check_conv_bias(ctx)) != SES_OK)
            return st;
        ctx->kernel_inputs = 0x7;
    }
    return conv_attrs(ctx, &w, group);
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
    if (given(ctx, 2)) {
        if ((st = check_conv_bias(ctx)) != SES_OK)
            return st;
        ctx->kernel_inputs |= 0x4;
        has_bias = 1;
    }
    if (ses__op_has_input(ctx, 3)) {
        st = ses__op_check_same_dtype(ctx, 0, "X", 3, "Z");
        if (st == SES_OK && !same_dims(&ctx->inputs[3], &ctx->outputs[0]))
            st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                              "Z must have the convolution's shape: Y is %s, Z is %s",
                              ses__tstr(&ctx->outputs[0]).s, ses__tstr(&ctx->inputs[3]).s);
        if (st != SES_OK)
            return st;
        ctx->kernel_inputs |= 0x8;
        has_z = 1;
    }
    st = conv_attrs(ctx, &w, group);
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
    if (!same_dims(dy, &y))
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
    st = conv_attrs(ctx, &w, group);
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
    st = spatial_ints(ctx, "kernel_shape", w->n, 0, 1, w->kernel, &present);
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
    if (!same_dims(dy, &y))
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
    if (!same_dims(dy, &pooled))
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

/* Reads one element of input @p index as a double (and exactly as an int64 for integers). */
static ses_status_t read_scalar(ses__infer_ctx_t *ctx, size_t index, const char *name,
                                double *out_f, int64_t *out_i) {
    const ses__type_t *t = &ctx->inputs[index];
    const unsigned char *p = ctx->values ? ctx->values[index] : NULL;

    if (ses__type_count(t) != 1 || t->rank > 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) must be a scalar, got %s",
                            index, name, ses__tstr(t).s);
    if (!p)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input %zu (%s) must be a constant or fed: the output's shape "
                            "depends on its value",
                            index, name);
    switch (t->dtype) {
    case SES_F32: {
        float v;
        memcpy(&v, p, sizeof v);
        *out_f = v;
        *out_i = 0;
        break;
    }
    case SES_F64:
        memcpy(out_f, p, sizeof *out_f);
        *out_i = 0;
        break;
    case SES_I32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        *out_i = v;
        *out_f = v;
        break;
    }
    case SES_I64:
        memcpy(out_i, p, sizeof *out_i);
        *out_f = (double)*out_i;
        break;
    case SES_BOOL:
    case SES_U8:
        *out_i = *p;
        *out_f = *p;
        break;
    default:
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) is %s; unsupported here",
                            index, name, ses__tstr(t).s);
    }
    return SES_OK;
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
            st = read_scalar(ctx, 2, "training_mode", &f, &training);
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
        if (st == SES_OK && !same_dims(&ctx->inputs[1], &ctx->inputs[2]))
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
    if (st == SES_OK && !same_dims(dy, x))
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

/* ---- Pad ------------------------------------------------------------------------------------ */

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
    if (mode == PAD_CONSTANT && given(ctx, 2)) {
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
    if (!same_dims(dy, &padded))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "dy does not match the padded x: dy is %s, x is %s, padded is %s",
                            ses__tstr(dy).s, ses__tstr(&ctx->inputs[1]).s, ses__tstr(&padded).s);
    ctx->outputs[0] = ctx->inputs[1];
    ctx->kernel_inputs = 0x1;
    return pad_attrs(ctx, pads, dy->rank, mode);
}

/* ---- Clip, Expand, Split, Shape ------------------------------------------------------------- */

ses_status_t ses__infer_clip(ses__infer_ctx_t *ctx) {
    static const char *const names[] = {"input", "min", "max"};
    int present[3] = {1, 0, 0};
    ses_status_t st =
        ses__op_check_dtype(ctx, 0, "input",
                            SES__DT_NUMERIC | SES__DT(SES_I8) | SES__DT(SES_I16) | SES__DT(SES_U8) |
                                SES__DT(SES_U16) | SES__DT(SES_U32) | SES__DT(SES_U64));

    for (size_t i = 1; st == SES_OK && i < 3; i++) {
        present[i] = given(ctx, i);
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

/* Expand: input and shape broadcast both ways (numpy), lowered onto ExpandLike. */
ses_status_t ses__infer_expand(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0], *shape_t = &ctx->inputs[1];
    ses__type_t *out = &ctx->outputs[0];
    int64_t shape[SES_MAX_RANK];
    size_t n = 0;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "shape", SES__DT(SES_I64));
    if (st == SES_OK && shape_t->rank != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input 1 (shape) must be 1-D, got %s",
                          ses__tstr(shape_t).s);
    if (st == SES_OK)
        st = ses__op_check_out_rank(ctx, (size_t)shape_t->dims[0]);
    if (st == SES_OK)
        st = ses__op_read_ints(ctx, 1, "shape", SES__DT(SES_I64), shape, SES_MAX_RANK, &n);
    if (st != SES_OK)
        return st;
    out->dtype = x->dtype;
    out->rank = x->rank > n ? x->rank : (uint32_t)n;
    for (uint32_t d = 0; d < out->rank; d++) {
        const int64_t a = d < x->rank ? x->dims[x->rank - 1 - d] : 1;
        const int64_t b = d < n ? shape[n - 1 - d] : 1;
        if (b < 0 || (a != b && a != 1 && b != 1))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "input cannot broadcast with shape %s: input is %s",
                                ses__ints_str(shape, n).s, ses__tstr(x).s);
        out->dims[out->rank - 1 - d] = a == 1 ? b : a;
    }
    ctx->kernel_op = "ExpandLike";
    ctx->kernel_inputs = 0x1;
    return SES_OK;
}

ses_status_t ses__infer_split(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    const size_t n = ctx->n_outputs;
    int64_t axis, sizes[SES__MAX_OUTPUTS + 1], num = 0, total = 0;
    size_t n_sizes = 0;
    const int64_t *attr_split;
    size_t n_attr;
    int has_attr;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);

    if (st == SES_OK && x->rank == 0)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input cannot be a scalar");
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", 0, &axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, x->rank, x, &axis);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "num_outputs", 0, &num);
    if (st == SES_OK)
        st = ses__op_attr_ints(ctx, "split", &attr_split, &n_attr, &has_attr);
    if (st != SES_OK)
        return st;
    const int64_t dim = x->dims[axis];
    if (ses__op_has_input(ctx, 1) && ses__type_count(&ctx->inputs[1]) != 0) {
        st = ses__op_read_ints(ctx, 1, "split", SES__DT(SES_I64), sizes, SES__MAX_OUTPUTS + 1,
                               &n_sizes);
        if (st != SES_OK)
            return st;
        has_attr = 1;
    } else if (has_attr) {
        if (n_attr > SES__MAX_OUTPUTS + 1)
            n_attr = SES__MAX_OUTPUTS + 1;
        memcpy(sizes, attr_split, n_attr * sizeof *sizes);
        n_sizes = n_attr;
    }
    if (has_attr) {
        if (n_sizes != n)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "split %s has %zu entries but the node has %zu outputs",
                                ses__ints_str(sizes, n_sizes).s, n_sizes, n);
        for (size_t k = 0; k < n; k++) {
            if (sizes[k] < 0)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "split %s has a negative entry",
                                    ses__ints_str(sizes, n).s);
            total += sizes[k];
        }
        if (total != dim)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "split %s adds up to %lld, but axis %lld of the input has %lld: "
                                "input is %s",
                                ses__ints_str(sizes, n).s, (long long)total, (long long)axis,
                                (long long)dim, ses__tstr(x).s);
    } else if (num) {
        if (num != (int64_t)n)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute num_outputs is %lld but the node has %zu outputs",
                                (long long)num, n);
        /* Opset 18: chunks of ceil(dim / n), the last one smaller. */
        const int64_t chunk = (dim + num - 1) / num;
        if (dim - chunk * (num - 1) < 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "axis %lld of %s cannot be cut into %lld chunks of %lld",
                                (long long)axis, ses__tstr(x).s, (long long)num, (long long)chunk);
        for (size_t k = 0; k < n; k++)
            sizes[k] = k + 1 < n ? chunk : dim - chunk * (num - 1);
    } else {
        if (dim % (int64_t)n != 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "axis %lld of %s does not split into %zu equal parts; give split",
                                (long long)axis, ses__tstr(x).s, n);
        for (size_t k = 0; k < n; k++)
            sizes[k] = dim / (int64_t)n;
    }
    for (size_t k = 0; k < n; k++) {
        ctx->outputs[k] = *x;
        ctx->outputs[k].dims[axis] = sizes[k];
    }
    ctx->kernel_inputs = 0x1;
    return ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
}

ses_status_t ses__infer_shape(ses__infer_ctx_t *ctx) {
    const int64_t rank = ctx->inputs[0].rank;
    int64_t start, end;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);

    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "start", 0, &start);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "end", rank, &end);
    if (st != SES_OK)
        return st;
    /* Opset 15: negative values count from the end; both are clamped into [0, rank]. */
    start = start < 0 ? start + rank : start;
    end = end < 0 ? end + rank : end;
    start = start < 0 ? 0 : start > rank ? rank : start;
    end = end < 0 ? 0 : end > rank ? rank : end;
    if (end < start)
        end = start;
    ctx->outputs[0].dtype = SES_I64;
    ctx->outputs[0].rank = 1;
    ctx->outputs[0].dims[0] = end - start;
    st = ses__attrs_set_int(&ctx->kernel_attrs, "start", start);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "end", end);
    return st;
}

/* Size: the element count of any tensor, an i64 scalar. */
ses_status_t ses__infer_size(ses__infer_ctx_t *ctx) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);

    if (st != SES_OK)
        return st;
    ctx->outputs[0].dtype = SES_I64;
    ctx->outputs[0].rank = 0;
    return SES_OK;
}

/* ---- ConstantOfShape, Range ----------------------------------------------------------------- */

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
        st = read_scalar(ctx, k, names[k], &f[k], &i[k]);
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
