/*
 * The parameterised activations (Elu, Selu, Celu, HardSigmoid, HardSwish, ThresholdedRelu,
 * Softsign, Shrink, Gelu, Mish) and their gradient ops (<Op>Grad(dy, x) -> dx), the variadic
 * Sum and Mean, and Det.
 *
 * The activations keep X's type. Their kernels always get every float attribute the op has,
 * defaults filled in, so that they never need to know a default; Gelu's approximate (STRING
 * "none" or "tanh") reaches them as the INT approximate, 0 or 1. A gradient op takes the
 * forward op's attributes and is normalized the same way.
 */
#include <stdio.h>
#include <string.h>

#include "infer.h"

typedef struct act_param {
    const char *name;
    double fallback;
} act_param_t;

typedef struct act {
    const char *op;
    size_t n_params;
    act_param_t params[2];
} act_t;

static const act_t acts[] = {
    {"Elu", 1, {{"alpha", 1.0}}},
    {"Selu", 2, {{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}}},
    {"Celu", 1, {{"alpha", 1.0}}},
    {"HardSigmoid", 2, {{"alpha", 0.2}, {"beta", 0.5}}},
    {"HardSwish", 0, {{NULL, 0}}},
    {"ThresholdedRelu", 1, {{"alpha", 1.0}}},
    {"Softsign", 0, {{NULL, 0}}},
    {"Shrink", 2, {{"bias", 0.0}, {"lambd", 0.5}}},
    {"Gelu", 0, {{NULL, 0}}},
    {"Mish", 0, {{NULL, 0}}},
};

/* The activation @p op names, or its gradient's (@p op ends in "Grad"). */
static const act_t *act_find(const char *op) {
    size_t len = strlen(op);

    if (len > 4 && strcmp(op + len - 4, "Grad") == 0)
        len -= 4;
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        if (strlen(acts[i].op) == len && strncmp(acts[i].op, op, len) == 0)
            return &acts[i];
    return NULL;
}

/* Reads and checks the attributes of @p a and sets them for the kernel. */
static ses_status_t act_attrs(ses__infer_ctx_t *ctx, const act_t *a) {
    double v[2] = {0, 0};
    ses_status_t st = SES_OK;

    for (size_t i = 0; st == SES_OK && i < a->n_params; i++)
        st = ses__op_attr_float(ctx, a->params[i].name, a->params[i].fallback, &v[i]);
    if (st != SES_OK)
        return st;
    /* Celu divides by alpha. */
    if (strcmp(a->op, "Celu") == 0 && v[0] == 0.0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute alpha must not be 0");
    if (strcmp(a->op, "Shrink") == 0 && !(v[1] >= 0.0))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute lambd must be 0 or more, got %g",
                            v[1]);
    if (strcmp(a->op, "Gelu") == 0) {
        const char *text = "none";
        int rc = ses__attrs_get_string(ctx->attrs, "approximate", &text);
        if (rc < 0)
            return ses__op_fail(
                ctx, SES_INVALID_ARGUMENT, "attribute approximate must be of type string, got %s",
                ses__attr_type_name(ses__attrs_find(ctx->attrs, "approximate")->type));
        if (strcmp(text, "none") != 0 && strcmp(text, "tanh") != 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute approximate is \"%s\"; expected \"none\" or \"tanh\"",
                                text);
        st = ses__attrs_set_int(&ctx->kernel_attrs, "approximate", strcmp(text, "tanh") == 0);
    }
    for (size_t i = 0; st == SES_OK && i < a->n_params; i++)
        st = ses__attrs_set_float(&ctx->kernel_attrs, a->params[i].name, v[i]);
    return st;
}

ses_status_t ses__infer_activation(ses__infer_ctx_t *ctx) {
    const act_t *a = act_find(ctx->op);
    ses_status_t st;

    if (!a)
        return ses__op_fail(ctx, SES_INTERNAL, "not an activation");
    st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT);
    if (st == SES_OK)
        st = act_attrs(ctx, a);
    if (st == SES_OK)
        ctx->outputs[0] = ctx->inputs[0];
    return st;
}

/* <Op>Grad(dy, x): dy and the forward input x, of one dtype and shape; dx is their type. */
ses_status_t ses__infer_activation_grad2(ses__infer_ctx_t *ctx) {
    const act_t *a = act_find(ctx->op);
    const ses__type_t *dy = &ctx->inputs[0], *x = &ctx->inputs[1];
    ses_status_t st;
    int same;

    if (!a)
        return ses__op_fail(ctx, SES_INTERNAL, "not an activation's gradient");
    st = ses__op_check_dtype(ctx, 0, "dy", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dy", 1, "x");
    if (st != SES_OK)
        return st;
    same = dy->rank == x->rank;
    for (uint32_t d = 0; same && d < dy->rank; d++)
        same = dy->dims[d] == x->dims[d];
    if (!same)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "shapes differ: dy is %s, x is %s",
                            ses__tstr(dy).s, ses__tstr(x).s);
    st = act_attrs(ctx, a);
    if (st == SES_OK)
        ctx->outputs[0] = *dy;
    return st;
}

/* Sum and Mean: one or more float inputs (data_0, data_1, ...) of one dtype, broadcast. */
ses_status_t ses__infer_sum_mean(ses__infer_ctx_t *ctx) {
    size_t indices[SES__MAX_INPUTS];
    char labels[SES__MAX_INPUTS][32];
    const char *names[SES__MAX_INPUTS];
    ses_status_t st = ses__op_check_dtype(ctx, 0, "data_0", SES__DT_FLOAT);

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

/* Det: X is [*, M, M] of floats; Y is [*]. */
ses_status_t ses__infer_det(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    ses_status_t st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT);

    if (st != SES_OK)
        return st;
    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "X must be square matrices [*, M, M], got %s", ses__tstr(x).s);
    ctx->outputs[0] = *x;
    ctx->outputs[0].rank = x->rank - 2;
    return SES_OK;
}
