/*
 * Training ops: the softmax cross-entropy and negative log-likelihood losses and their gradients
 * (ONNX opset 13 semantics), and
 * the optimizers SGD, Momentum and Adam, and MatMulGradSGD (SGD of a MatMulGrad, made by
 * fusion), which have no outputs and update some of their inputs in place (the schema table
 * marks them in inplace_inputs; the compiler binds those inputs to the variables' own storage).
 *
 * Kernels get every given input (an absent optional weights input is not passed) and the
 * normalized attributes:
 *   - the losses and their gradients: "reduction" INT (0 mean, 1 sum, 2 none), "ignore_index" INT
 *     and "has_ignore_index" INT (0 or 1; ignore_index is 0 when there is none);
 *   - Momentum: "momentum" FLOAT, "nesterov" INT (0 or 1);
 *   - Adam: "beta1", "beta2", "epsilon" FLOAT;
 *   - MatMulGradSGD: MatMulGrad's "input" INT (0 or 1).
 */
#include <math.h>
#include <string.h>

#include "infer.h"

/* The values of the normalized "reduction" attribute. */
enum { REDUCTION_MEAN = 0, REDUCTION_SUM = 1, REDUCTION_NONE = 2 };

/* ---- the loss and its gradient ------------------------------------------------------------ */

/* Reads "reduction" (a string, "mean" by default) and "ignore_index" (an int, optional), and
 * lowers them for the kernel. */
static ses_status_t loss_attrs(ses__infer_ctx_t *ctx, int64_t *out_reduction) {
    static const char *const names[] = {"mean", "sum", "none"};
    const char *text = "mean";
    int64_t ignore_index = 0;
    int has_ignore, rc;
    ses_status_t st;

    rc = ses__attrs_get_string(ctx->attrs, "reduction", &text);
    if (rc < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute reduction must be of type string, got %s",
                            ses__attr_type_name(ses__attrs_find(ctx->attrs, "reduction")->type));
    *out_reduction = -1;
    for (int64_t r = 0; r < 3; r++)
        if (strcmp(text, names[r]) == 0)
            *out_reduction = r;
    if (*out_reduction < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute reduction is \"%s\"; expected \"mean\", \"sum\" or \"none\"",
                            text);
    rc = ses__attrs_get_int(ctx->attrs, "ignore_index", &ignore_index);
    if (rc < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute ignore_index must be of type int, got %s",
                            ses__attr_type_name(ses__attrs_find(ctx->attrs, "ignore_index")->type));
    has_ignore = rc == 1;
    st = ses__attrs_set_int(&ctx->kernel_attrs, "reduction", *out_reduction);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "ignore_index", has_ignore ? ignore_index : 0);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "has_ignore_index", has_ignore);
    return st;
}

/*
 * Checks @p labels (input @p li) against @p scores (input @p si, [N, C, d1, ...]): an index
 * dtype and the shape [N, d1, ...]. Checks the optional weights (input @p wi): [C] of the
 * scores' dtype. Sets kernel_inputs so that absent weights are not passed.
 */
static ses_status_t check_scores_labels_weights(ses__infer_ctx_t *ctx, size_t si,
                                                const char *s_name, size_t li, size_t wi) {
    const ses__type_t *s = &ctx->inputs[si], *l = &ctx->inputs[li];
    ses_status_t st;
    int shape_ok;

    st = ses__op_check_dtype(ctx, si, s_name, SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, li, "labels", SES__DT_INDEX);
    if (st != SES_OK)
        return st;
    if (s->rank < 2)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "%s must have rank 2 or more ([N, C, d1, ...]), got %s", s_name,
                            ses__tstr(s).s);
    shape_ok = l->rank == s->rank - 1 && l->dims[0] == s->dims[0];
    for (uint32_t d = 1; shape_ok && d < l->rank; d++)
        shape_ok = l->dims[d] == s->dims[d + 1];
    if (!shape_ok)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "labels must have the shape of %s without its class axis 1: %s is %s, "
                            "labels is %s",
                            s_name, s_name, ses__tstr(s).s, ses__tstr(l).s);
    if (!ses__op_has_input(ctx, wi)) {
        ctx->kernel_inputs = ((uint64_t)1 << wi) - 1;
        return SES_OK;
    }
    const ses__type_t *w = &ctx->inputs[wi];
    st = ses__op_check_same_dtype(ctx, si, s_name, wi, "weights");
    if (st != SES_OK)
        return st;
    if (w->rank != 1 || w->dims[0] != s->dims[1])
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "weights must be [C], one per class: %s is %s, weights is %s", s_name,
                            ses__tstr(s).s, ses__tstr(w).s);
    return SES_OK;
}

/* The loss's type for @p reduction: a scalar, or the labels' shape for "none". */
static ses__type_t loss_type(const ses__type_t *scores, const ses__type_t *labels,
                             int64_t reduction) {
    ses__type_t t = *labels;

    t.dtype = scores->dtype;
    if (reduction != REDUCTION_NONE)
        t.rank = 0;
    return t;
}

ses_status_t ses__infer_softmax_cross_entropy_loss(ses__infer_ctx_t *ctx) {
    int64_t reduction;
    ses_status_t st;

    st = check_scores_labels_weights(ctx, 0, "scores", 1, 2);
    if (st == SES_OK)
        st = loss_attrs(ctx, &reduction);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = loss_type(&ctx->inputs[0], &ctx->inputs[1], reduction);
    /* The optional second output is the log-softmax of the scores over the class axis. */
    if (ctx->n_outputs > 1)
        ctx->outputs[1] = ctx->inputs[0];
    return SES_OK;
}

/* A loss gradient (dloss, @p name, labels[, weights]): dloss has the loss's shape for the
 * reduction, and the output @p name's type. */
static ses_status_t infer_loss_grad(ses__infer_ctx_t *ctx, const char *name) {
    const ses__type_t *dloss = &ctx->inputs[0];
    ses__type_t want;
    int64_t reduction;
    ses_status_t st;

    st = check_scores_labels_weights(ctx, 1, name, 2, 3);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dloss", 1, name);
    if (st == SES_OK)
        st = loss_attrs(ctx, &reduction);
    if (st != SES_OK)
        return st;
    want = loss_type(&ctx->inputs[1], &ctx->inputs[2], reduction);
    if (dloss->rank != want.rank ||
        memcmp(dloss->dims, want.dims, want.rank * sizeof want.dims[0]) != 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "dloss must have the loss's shape %s (reduction %s), got %s",
                            ses__tstr(&want).s,
                            reduction == REDUCTION_MEAN  ? "mean"
                            : reduction == REDUCTION_SUM ? "sum"
                                                         : "none",
                            ses__tstr(dloss).s);
    ctx->outputs[0] = ctx->inputs[1];
    return SES_OK;
}

ses_status_t ses__infer_softmax_cross_entropy_loss_grad(ses__infer_ctx_t *ctx) {
    return infer_loss_grad(ctx, "log_prob");
}

/* NegativeLogLikelihoodLoss(input [N, C, d1, ...], target [N, d1, ...][, weight [C]]): the loss
 * -weight[target] * input[target], reduced as SoftmaxCrossEntropyLoss's is. */
ses_status_t ses__infer_nll_loss(ses__infer_ctx_t *ctx) {
    int64_t reduction;
    ses_status_t st;

    st = check_scores_labels_weights(ctx, 0, "input", 1, 2);
    if (st == SES_OK)
        st = loss_attrs(ctx, &reduction);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = loss_type(&ctx->inputs[0], &ctx->inputs[1], reduction);
    return SES_OK;
}

/* NegativeLogLikelihoodLossGrad(dloss, input, target[, weight]): dinput, input's shape. Only
 * input's shape and dtype are read. */
ses_status_t ses__infer_nll_loss_grad(ses__infer_ctx_t *ctx) {
    return infer_loss_grad(ctx, "input");
}

/* ---- optimizers --------------------------------------------------------------------------- */

/* Input @p i (named @p name) has var's dtype and shape. */
static ses_status_t check_like_var(const ses__infer_ctx_t *ctx, size_t i, const char *name) {
    const ses__type_t *var = &ctx->inputs[0], *t = &ctx->inputs[i];
    ses_status_t st = ses__op_check_same_dtype(ctx, 0, "var", i, name);

    if (st != SES_OK)
        return st;
    if (t->rank != var->rank || memcmp(t->dims, var->dims, var->rank * sizeof var->dims[0]) != 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "%s must have var's shape: var is %s, %s is %s", name, ses__tstr(var).s,
                            name, ses__tstr(t).s);
    return SES_OK;
}

/* Input @p i (named @p name) is a scalar of var's dtype. */
static ses_status_t check_scalar(const ses__infer_ctx_t *ctx, size_t i, const char *name) {
    const ses__type_t *t = &ctx->inputs[i];
    ses_status_t st = ses__op_check_same_dtype(ctx, 0, "var", i, name);

    if (st == SES_OK && t->rank != 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "%s must be a scalar (rank 0), got %s", name,
                            ses__tstr(t).s);
    return st;
}

/* The checks every optimizer starts with: var float, grad like var, lr a scalar. */
static ses_status_t check_var_grad_lr(const ses__infer_ctx_t *ctx) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, "var", SES__DT_FLOAT);

    if (st == SES_OK)
        st = check_like_var(ctx, 1, "grad");
    if (st == SES_OK)
        st = check_scalar(ctx, 2, "lr");
    return st;
}

/* A FLOAT attribute that must be finite and, when @p below_one, in [0, 1). */
static ses_status_t float_attr(ses__infer_ctx_t *ctx, const char *name, double fallback,
                               int below_one, double *out) {
    ses_status_t st = ses__op_attr_float(ctx, name, fallback, out);

    if (st != SES_OK)
        return st;
    if (!isfinite(*out) || (below_one && (*out < 0.0 || *out >= 1.0)))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute %s is %g; it must be %s", name,
                            *out, below_one ? "in [0, 1)" : "finite");
    return ses__attrs_set_float(&ctx->kernel_attrs, name, *out);
}

ses_status_t ses__infer_sgd(ses__infer_ctx_t *ctx) {
    return check_var_grad_lr(ctx);
}

/*
 * MatMulGradSGD(var, dy, A, B, lr; input): SGD(var, MatMulGrad(dy, A, B; input), lr) as one
 * node, which fusion (compile/fuse.c) makes of such a pair. Inferred as the two would be: the
 * gradient's type by MatMulGrad's inference on (dy, A, B), then SGD's checks on (var, that
 * type, lr). The kernel gets var, dy, the operand the gradient is computed from (A for input
 * 1, B for input 0) and lr: the other operand only gives the gradient its shape, var's, and in
 * the graphs fusion makes it is var itself (W's gradient updating W), which the kernel writes.
 */
ses_status_t ses__infer_matmul_grad_sgd(ses__infer_ctx_t *ctx) {
    ses__infer_ctx_t grad, sgd;
    ses__type_t sgd_inputs[3];
    int64_t input = 0;
    ses_status_t st;

    /* Checked here first so that the message numbers dy as this node's input 1. */
    st = ses__op_check_dtype(ctx, 1, "dy", SES__DT_FLOAT);
    if (st != SES_OK)
        return st;
    memset(&grad, 0, sizeof grad);
    grad.node = ctx->node;
    grad.op = ctx->op;
    grad.n_inputs = 3;
    grad.inputs = ctx->inputs + 1;
    grad.values = ctx->values ? ctx->values + 1 : NULL;
    grad.attrs = ctx->attrs;
    grad.n_outputs = 1;
    st = ses__infer_matmul_grad(&grad);
    /* Its normalized input attribute is this node's: the caller clears it on failure. */
    ctx->kernel_attrs = grad.kernel_attrs;
    if (st != SES_OK)
        return st;

    sgd_inputs[0] = ctx->inputs[0];
    sgd_inputs[1] = grad.outputs[0];
    sgd_inputs[2] = ctx->inputs[4];
    memset(&sgd, 0, sizeof sgd);
    sgd.node = ctx->node;
    sgd.op = ctx->op;
    sgd.n_inputs = 3;
    sgd.inputs = sgd_inputs;
    sgd.attrs = ctx->attrs;
    st = ses__infer_sgd(&sgd);
    if (st != SES_OK)
        return st;
    ses__attrs_get_int(&ctx->kernel_attrs, "input", &input);
    ctx->kernel_inputs = input ? 0x17 : 0x1b; /* var, dy, A or B, lr */
    return SES_OK;
}

ses_status_t ses__infer_momentum(ses__infer_ctx_t *ctx) {
    double momentum;
    int64_t nesterov;
    ses_status_t st;

    st = check_var_grad_lr(ctx);
    if (st == SES_OK)
        st = check_like_var(ctx, 3, "velocity");
    if (st == SES_OK)
        st = float_attr(ctx, "momentum", 0.9, 0, &momentum);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "nesterov", 0, &nesterov);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "nesterov", nesterov);
    return st;
}

ses_status_t ses__infer_adam(ses__infer_ctx_t *ctx) {
    double beta1, beta2, epsilon;
    ses_status_t st;

    st = check_var_grad_lr(ctx);
    if (st == SES_OK)
        st = check_like_var(ctx, 3, "m");
    if (st == SES_OK)
        st = check_like_var(ctx, 4, "v");
    if (st == SES_OK)
        st = check_scalar(ctx, 5, "t");
    /* beta1 and beta2 below 1, or the bias corrections 1 - beta^t would divide by zero. */
    if (st == SES_OK)
        st = float_attr(ctx, "beta1", 0.9, 1, &beta1);
    if (st == SES_OK)
        st = float_attr(ctx, "beta2", 0.999, 1, &beta2);
    if (st == SES_OK)
        st = float_attr(ctx, "epsilon", 1e-8, 0, &epsilon);
    return st;
}
