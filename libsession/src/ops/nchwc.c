/*
 * The blocked-layout ops (ONNX Runtime's com.microsoft.nchwc ops, under names of our own), which
 * the compiler's layout pass (compile/layout.c) puts between convolutions on a device whose
 * driver binds them, so that activations stay in the layout the convolution kernels want:
 *
 *   NCHWc16: a 4-D NCHW tensor [N, C, H, W] with C a multiple of 16, held as the 5-D tensor
 *   [N, C/16, H, W, 16]; channel c of pixel (n, h, w) at [n, c/16, h, w, c%16] (oneDNN's
 *   nChw16c). There is no channel padding: the pass makes no blocked tensor of other C.
 *
 *   op (inputs; attributes)                   kernel (inputs passed; normalized attributes)
 *   NchwcConv(X, W[, B[, Z]]; as FusedConv)   NchwcConv (as FusedConv's); X NCHW or NCHWc16,
 *                                             W [M, C/group, kh, kw], Z and Y NCHWc16
 *     [, pool_kernel_shape, pool_strides,       with pool_kernel_shape: Y max-pooled, plus
 *        pool_pads, pool_dilations,             pool_kernel_shape, pool_strides,
 *        pool_ceil_mode, pool_auto_pad,         pool_dilations, pool_pads (MaxPool's window)
 *        pool_storage_order]                    and pool_input (the convolution's [H, W])
 *   NchwcMaxPool(X; as MaxPool)               NchwcMaxPool (X; window), 2-D, Y only
 *   NchwcAveragePool(X; as AveragePool)       NchwcAveragePool (X; window, count_include_pad)
 *   NchwcGlobalAveragePool(X)                 NchwcGlobalAveragePool (X): [N, Cb, 1, 1, 16]
 *   NchwcGlobalMaxPool(X)                     NchwcGlobalMaxPool (X)
 *   NchwcReorderOutput(X)                     NchwcReorderOutput (X): NCHWc16 -> NCHW
 *
 * Each is inferred as its plain op on the NCHW view of its blocked tensors, whose checks and
 * messages it keeps, and its output is blocked again. Float dtypes as the plain ops say; which
 * a driver runs is the driver's business (the CPU's: f32).
 *
 * NchwcConv with pool_ attributes is a convolution followed by a MaxPool of those attributes
 * (unprefixed) in one kernel: what the compiler's fusion makes of Conv -> [Add ->] act ->
 * MaxPool (compile/fuse.c) where the driver takes it, so that the convolution's output is
 * pooled while it is in cache rather than written whole and read back. Y is the pooled output,
 * so the kernel gets the convolution's own spatial dims as pool_input. The pool is MaxPool's
 * inference on the convolution's NCHW output, with MaxPool's checks; their messages say they
 * are the fused pool's. Only Y is given (no Indices).
 */
#include <stdio.h>
#include <string.h>

#include "cnn.h"
#include "infer.h"

#define BLOCK 16

/* Whether @p t is an NCHWc16 tensor: rank 5, the last dimension 16. */
static int blocked(const ses__type_t *t) { return t->rank == 5 && t->dims[4] == BLOCK; }

static ses_status_t check_blocked(ses__infer_ctx_t *ctx, size_t i, const char *name) {
    if (blocked(&ctx->inputs[i]))
        return SES_OK;
    return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                        "%s must be NCHWc16, [N, C/16, H, W, 16]; it is %s", name,
                        ses__tstr(&ctx->inputs[i]).s);
}

/* The NCHW view [N, C, H, W] of blocked @p t. */
static ses__type_t plain_view(const ses__type_t *t) {
    ses__type_t p = *t;
    p.rank = 4;
    p.dims[1] = t->dims[1] * BLOCK;
    p.dims[4] = 0;
    return p;
}

/* @p y, NCHW, as NCHWc16; fails unless its C is a multiple of 16. */
static ses_status_t block_output(ses__infer_ctx_t *ctx, ses__type_t *y) {
    if (y->rank != 4)
        return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                            "the blocked ops are 2-D; the output would be %s", ses__tstr(y).s);
    if (y->dims[1] % BLOCK)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "the output has %lld channels; NCHWc16 needs a multiple of 16",
                            (long long)y->dims[1]);
    y->rank = 5;
    y->dims[4] = BLOCK;
    y->dims[1] /= BLOCK;
    return SES_OK;
}

/* Runs @p plain on ctx with the NCHW views of the inputs in @p blocked_inputs (bits), then
 * blocks output 0. */
static ses_status_t infer_as(ses__infer_ctx_t *ctx, ses_status_t (*plain)(ses__infer_ctx_t *),
                             uint64_t blocked_inputs) {
    ses__type_t views[SES__MAX_INPUTS];
    const ses__type_t *inputs = ctx->inputs;
    ses_status_t st;

    for (size_t i = 0; i < ctx->n_inputs && i < SES__MAX_INPUTS; i++)
        views[i] = (blocked_inputs >> i) & 1 ? plain_view(&inputs[i]) : inputs[i];
    ctx->inputs = views;
    st = plain(ctx);
    ctx->inputs = inputs;
    return st == SES_OK ? block_output(ctx, &ctx->outputs[0]) : st;
}

/* MaxPool's attributes as an NchwcConv's, each prefixed pool_. */
static const char *const pool_attrs[] = {"kernel_shape", "strides",  "pads",         "dilations",
                                         "ceil_mode",    "auto_pad", "storage_order"};
/* MaxPool's normalized window, which the kernel gets prefixed pool_. */
static const char *const pool_window[] = {"kernel_shape", "strides", "dilations", "pads"};

/* The fused max pool's failure: `NchwcConv "<node>": the fused max pool (pool_ attributes) of
 * the convolution's output <y>: <MaxPool's message without its op and node>`. */
static ses_status_t pool_fail(const ses__infer_ctx_t *ctx, ses_status_t st, const ses__type_t *y) {
    char message[1024], prefix[600];
    const char *detail = ses_last_error();
    int n = snprintf(prefix, sizeof prefix, "%s \"%s\": ", ctx->op, ctx->node ? ctx->node : "");

    if (n > 0 && strncmp(detail, prefix, (size_t)n) == 0)
        detail += n;
    snprintf(message, sizeof message, "%s", detail);
    return ses__op_fail(ctx, st,
                        "the fused max pool (pool_ attributes) of the convolution's output %s: %s",
                        ses__tstr(y).s, message);
}

/*
 * The pool of an NchwcConv with pool_kernel_shape: MaxPool's inference, with the pool_
 * attributes unprefixed, on the NCHW view of blocked output 0, which it replaces by the pooled
 * one; adds the pool's kernel attributes.
 */
static ses_status_t infer_pool(ses__infer_ctx_t *ctx) {
    const ses__type_t y = plain_view(&ctx->outputs[0]);
    const void *values[1] = {NULL};
    ses__attrs_t attrs = {NULL, 0};
    ses__infer_ctx_t sub;
    char name[64];
    ses_status_t st = SES_OK;

    /* A pool_ attribute MaxPool does not have would be ignored silently: a typo. */
    for (size_t i = 0; i < ctx->attrs->count; i++) {
        const char *a = ctx->attrs->items[i].name;
        int known = 0;
        if (strncmp(a, "pool_", 5) != 0)
            continue;
        for (size_t k = 0; k < sizeof pool_attrs / sizeof pool_attrs[0]; k++)
            known |= strcmp(a + 5, pool_attrs[k]) == 0;
        if (!known)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute %s is not one of the fused max pool's (pool_ and "
                                "MaxPool's kernel_shape, strides, pads, dilations, ceil_mode, "
                                "auto_pad, storage_order)",
                                a);
    }
    for (size_t k = 0; st == SES_OK && k < sizeof pool_attrs / sizeof pool_attrs[0]; k++) {
        const ses__attr_t *a;
        snprintf(name, sizeof name, "pool_%s", pool_attrs[k]);
        if ((a = ses__attrs_find(ctx->attrs, name)) != NULL)
            st = ses__attrs_set_as(&attrs, pool_attrs[k], a);
    }
    memset(&sub, 0, sizeof sub);
    sub.node = ctx->node;
    sub.op = ctx->op;
    sub.n_inputs = 1;
    sub.inputs = &y;
    sub.values = values;
    sub.attrs = &attrs;
    sub.n_outputs = 1;
    if (st == SES_OK && (st = ses__infer_max_pool(&sub)) != SES_OK)
        st = pool_fail(ctx, st, &y);
    for (size_t k = 0; st == SES_OK && k < sizeof pool_window / sizeof pool_window[0]; k++) {
        const ses__attr_t *a = ses__attrs_find(&sub.kernel_attrs, pool_window[k]);
        snprintf(name, sizeof name, "pool_%s", pool_window[k]);
        st = a ? ses__attrs_set_as(&ctx->kernel_attrs, name, a)
               : ses__op_fail(ctx, SES_INTERNAL, "MaxPool gave no %s", pool_window[k]);
    }
    if (st == SES_OK)
        st = ses__attrs_set_ints(&ctx->kernel_attrs, "pool_input", &y.dims[2], 2);
    if (st == SES_OK) {
        ctx->outputs[0] = sub.outputs[0];
        st = block_output(ctx, &ctx->outputs[0]);
    }
    ses__attrs_clear(&sub.kernel_attrs);
    ses__attrs_clear(&attrs);
    return st;
}

ses_status_t ses__infer_nchwc_conv(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    uint64_t views = 0;
    ses_status_t st;

    if (x->rank == 5) {
        st = check_blocked(ctx, 0, "X");
        if (st != SES_OK)
            return st;
        views |= 1;
    } else if (x->rank != 4) {
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "X must be NCHW or NCHWc16 ([N, C/16, H, W, 16]); it is %s",
                            ses__tstr(x).s);
    }
    if (ses__op_has_input(ctx, 3)) {
        st = check_blocked(ctx, 3, "Z");
        if (st != SES_OK)
            return st;
        views |= 8;
    }
    if (ctx->inputs[1].rank != 4)
        return ses__op_fail(ctx, SES_UNIMPLEMENTED, "only 2-D convolutions are blocked; W is %s",
                            ses__tstr(&ctx->inputs[1]).s);
    st = infer_as(ctx, ses__infer_fused_conv, views);
    if (st == SES_OK && ses__attrs_find(ctx->attrs, "pool_kernel_shape"))
        return infer_pool(ctx);
    if (st == SES_OK) {
        for (size_t i = 0; i < ctx->attrs->count; i++)
            if (strncmp(ctx->attrs->items[i].name, "pool_", 5) == 0)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "attribute %s without pool_kernel_shape: a fused max pool "
                                    "needs its kernel_shape",
                                    ctx->attrs->items[i].name);
    }
    return st;
}

ses_status_t ses__infer_nchwc_pool(ses__infer_ctx_t *ctx) {
    ses_status_t st = check_blocked(ctx, 0, "X");

    if (st != SES_OK)
        return st;
    return infer_as(
        ctx, strcmp(ctx->op, "NchwcMaxPool") == 0 ? ses__infer_max_pool : ses__infer_average_pool,
        1);
}

ses_status_t ses__infer_nchwc_global_pool(ses__infer_ctx_t *ctx) {
    ses_status_t st = check_blocked(ctx, 0, "X");

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT);
    if (st != SES_OK)
        return st;
    if (strcmp(ctx->op, "NchwcGlobalMaxPool") == 0 &&
        (ctx->inputs[0].dims[2] == 0 || ctx->inputs[0].dims[3] == 0))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "the max of an empty window is undefined: X is %s",
                            ses__tstr(&ctx->inputs[0]).s);
    ctx->outputs[0] = ctx->inputs[0];
    ctx->outputs[0].dims[2] = ctx->outputs[0].dims[3] = 1;
    return SES_OK;
}

ses_status_t ses__infer_nchwc_reorder_output(ses__infer_ctx_t *ctx) {
    ses_status_t st = check_blocked(ctx, 0, "X");

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT);
    if (st == SES_OK)
        ctx->outputs[0] = plain_view(&ctx->inputs[0]);
    return st;
}
