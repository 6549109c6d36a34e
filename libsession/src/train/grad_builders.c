/*
 * One gradient builder per differentiable op of the core set. Each reads the forward node's
 * inputs, outputs and attributes, and emits nodes for the gradients of its inputs. Broadcasting
 * ops reduce a gradient back to its input's shape with ReduceSumLike.
 */
#include <stdio.h>
#include <string.h>

#include "../error.h"
#include "../graph/graph_internal.h"
#include "gradients_internal.h"

#define IN(i) (n->inputs[i])
#define OUT(o) ((ses_edge_t){(ses_node_t *)n, (o)})
#define TRY(call)                      \
    do {                               \
        ses_status_t st_ = (call);     \
        if (st_ != SES_OK)             \
            return st_;                \
    } while (0)

/* The forward node's attribute @p name as a ses_attr_t (pointing into the node). */
static int forward_attr(const ses_node_t *n, const char *name, ses_attr_t *out) {
    const ses__attr_t *a = ses__attrs_find(&n->attrs, name);

    if (!a)
        return 0;
    memset(out, 0, sizeof *out);
    out->name = a->name;
    out->type = a->type;
    out->i = a->i;
    out->f = a->f;
    out->s = a->s;
    out->ints = a->ints;
    out->floats = a->floats;
    out->count = a->count;
    return 1;
}

/* Copies the forward attributes in @p names (those present) into @p attrs; returns the count. */
static size_t forward_attrs(const ses_node_t *n, const char *const *names, size_t n_names,
                            ses_attr_t *attrs) {
    size_t k = 0;
    for (size_t i = 0; i < n_names; i++)
        k += (size_t)forward_attr(n, names[i], &attrs[k]);
    return k;
}

static ses_status_t reduce_like(ses__grad_ctx_t *c, ses_edge_t e, ses_edge_t like,
                                ses_edge_t *out) {
    return ses__grad_binary(c, "ReduceSumLike", e, like, out);
}

/* ---- elementwise ------------------------------------------------------------------------ */

static ses_status_t grad_identity(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                  ses_edge_t *dx) {
    (void)c;
    (void)n;
    dx[0] = dy[0];
    return SES_OK;
}

static ses_status_t grad_add(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                             ses_edge_t *dx) {
    TRY(reduce_like(c, dy[0], IN(0), &dx[0]));
    return reduce_like(c, dy[0], IN(1), &dx[1]);
}

static ses_status_t grad_sub(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                             ses_edge_t *dx) {
    ses_edge_t neg;
    TRY(reduce_like(c, dy[0], IN(0), &dx[0]));
    TRY(ses__grad_unary(c, "Neg", dy[0], &neg));
    return reduce_like(c, neg, IN(1), &dx[1]);
}

static ses_status_t grad_mul(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                             ses_edge_t *dx) {
    ses_edge_t t;
    TRY(ses__grad_binary(c, "Mul", dy[0], IN(1), &t));
    TRY(reduce_like(c, t, IN(0), &dx[0]));
    TRY(ses__grad_binary(c, "Mul", dy[0], IN(0), &t));
    return reduce_like(c, t, IN(1), &dx[1]);
}

/* y = a / b: da = dy / b, db = -dy * y / b. */
static ses_status_t grad_div(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                             ses_edge_t *dx) {
    ses_edge_t t, u;
    TRY(ses__grad_binary(c, "Div", dy[0], IN(1), &t));
    TRY(reduce_like(c, t, IN(0), &dx[0]));
    TRY(ses__grad_binary(c, "Mul", t, OUT(0), &u));
    TRY(ses__grad_unary(c, "Neg", u, &u));
    return reduce_like(c, u, IN(1), &dx[1]);
}

/* y = a ^ b: da = dy * b * a^(b-1), db = dy * y * log(a). */
static ses_status_t grad_pow(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                             ses_edge_t *dx) {
    ses_edge_t one, bm1, p, t;
    TRY(ses__grad_scalar(c, IN(1), 1.0, &one));
    TRY(ses__grad_binary(c, "Sub", IN(1), one, &bm1));
    TRY(ses__grad_binary(c, "Pow", IN(0), bm1, &p));
    TRY(ses__grad_binary(c, "Mul", p, IN(1), &t));
    TRY(ses__grad_binary(c, "Mul", dy[0], t, &t));
    TRY(reduce_like(c, t, IN(0), &dx[0]));
    TRY(ses__grad_unary(c, "Log", IN(0), &t));
    TRY(ses__grad_binary(c, "Mul", t, OUT(0), &t));
    TRY(ses__grad_binary(c, "Mul", dy[0], t, &t));
    return reduce_like(c, t, IN(1), &dx[1]);
}

static ses_status_t grad_neg(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                             ses_edge_t *dx) {
    (void)n;
    return ses__grad_unary(c, "Neg", dy[0], &dx[0]);
}

/* d|x| = dy * sign(x); at 0 the subgradient dy is taken. */
static ses_status_t grad_abs(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                             ses_edge_t *dx) {
    ses_edge_t zero, negative, neg_dy, in[3];
    TRY(ses__grad_scalar(c, IN(0), 0.0, &zero));
    TRY(ses__grad_binary(c, "Less", IN(0), zero, &negative));
    TRY(ses__grad_unary(c, "Neg", dy[0], &neg_dy));
    in[0] = negative;
    in[1] = neg_dy;
    in[2] = dy[0];
    return ses__grad_op(c, "Where", in, 3, NULL, 0, &dx[0]);
}

/* An op whose gradient is a fused op of (dy, x) or (dy, y), with some forward attributes. */
static ses_status_t fused(ses__grad_ctx_t *c, const ses_node_t *n, const char *op, ses_edge_t dy,
                          ses_edge_t other, const char *const *attr_names, size_t n_attr_names,
                          ses_edge_t *out) {
    ses_attr_t attrs[4];
    ses_edge_t in[2] = {dy, other};
    size_t k;

    memset(attrs, 0, sizeof attrs);
    k = forward_attrs(n, attr_names, n_attr_names, attrs);
    return ses__grad_op(c, op, in, 2, attrs, k, out);
}

static ses_status_t grad_relu(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                              ses_edge_t *dx) {
    return fused(c, n, "ReluGrad", dy[0], IN(0), NULL, 0, &dx[0]);
}

static ses_status_t grad_leaky_relu(ses__grad_ctx_t *c, const ses_node_t *n,
                                    const ses_edge_t *dy, ses_edge_t *dx) {
    static const char *const names[] = {"alpha"};
    return fused(c, n, "LeakyReluGrad", dy[0], IN(0), names, 1, &dx[0]);
}

/* y = x < 0 ? slope * x : x: dx = x < 0 ? slope * dy : dy, dslope = x < 0 ? x * dy : 0, summed
 * back to slope's shape. */
static ses_status_t grad_prelu(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                               ses_edge_t *dx) {
    ses_edge_t zero, negative, t, in[3];
    TRY(ses__grad_scalar(c, IN(0), 0.0, &zero));
    TRY(ses__grad_binary(c, "Less", IN(0), zero, &negative));
    TRY(ses__grad_binary(c, "Mul", dy[0], IN(1), &t));
    in[0] = negative;
    in[1] = t;
    in[2] = dy[0];
    TRY(ses__grad_op(c, "Where", in, 3, NULL, 0, &dx[0]));
    TRY(ses__grad_binary(c, "Mul", dy[0], IN(0), &t));
    in[1] = t;
    in[2] = zero;
    TRY(ses__grad_op(c, "Where", in, 3, NULL, 0, &t));
    return reduce_like(c, t, IN(1), &dx[1]);
}

static ses_status_t grad_sigmoid(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                 ses_edge_t *dx) {
    return fused(c, n, "SigmoidGrad", dy[0], OUT(0), NULL, 0, &dx[0]);
}

static ses_status_t grad_tanh(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                              ses_edge_t *dx) {
    return fused(c, n, "TanhGrad", dy[0], OUT(0), NULL, 0, &dx[0]);
}

static ses_status_t grad_softmax(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                 ses_edge_t *dx) {
    static const char *const names[] = {"axis"};
    return fused(c, n, "SoftmaxGrad", dy[0], OUT(0), names, 1, &dx[0]);
}

static ses_status_t grad_log_softmax(ses__grad_ctx_t *c, const ses_node_t *n,
                                     const ses_edge_t *dy, ses_edge_t *dx) {
    static const char *const names[] = {"axis"};
    return fused(c, n, "LogSoftmaxGrad", dy[0], OUT(0), names, 1, &dx[0]);
}

static ses_status_t grad_exp(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                             ses_edge_t *dx) {
    return ses__grad_binary(c, "Mul", dy[0], OUT(0), &dx[0]);
}

static ses_status_t grad_log(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                             ses_edge_t *dx) {
    return ses__grad_binary(c, "Div", dy[0], IN(0), &dx[0]);
}

/* y = sqrt(x): dx = dy / (2 y). */
static ses_status_t grad_sqrt(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                              ses_edge_t *dx) {
    ses_edge_t two, t;
    TRY(ses__grad_scalar(c, OUT(0), 2.0, &two));
    TRY(ses__grad_binary(c, "Mul", OUT(0), two, &t));
    return ses__grad_binary(c, "Div", dy[0], t, &dx[0]);
}

/* y = 1/x: dx = -dy * y^2. */
static ses_status_t grad_reciprocal(ses__grad_ctx_t *c, const ses_node_t *n,
                                    const ses_edge_t *dy, ses_edge_t *dx) {
    ses_edge_t t;
    TRY(ses__grad_binary(c, "Mul", OUT(0), OUT(0), &t));
    TRY(ses__grad_binary(c, "Mul", dy[0], t, &t));
    return ses__grad_unary(c, "Neg", t, &dx[0]);
}

/* softplus'(x) = sigmoid(x). */
static ses_status_t grad_softplus(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                  ses_edge_t *dx) {
    ses_edge_t s;
    TRY(ses__grad_unary(c, "Sigmoid", IN(0), &s));
    return ses__grad_binary(c, "Mul", dy[0], s, &dx[0]);
}

/* erf'(x) = 2/sqrt(pi) * exp(-x^2). */
static ses_status_t grad_erf(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                             ses_edge_t *dx) {
    ses_edge_t k, t;
    TRY(ses__grad_binary(c, "Mul", IN(0), IN(0), &t));
    TRY(ses__grad_unary(c, "Neg", t, &t));
    TRY(ses__grad_unary(c, "Exp", t, &t));
    TRY(ses__grad_scalar(c, IN(0), 1.12837916709551257390, &k));
    TRY(ses__grad_binary(c, "Mul", t, k, &t));
    return ses__grad_binary(c, "Mul", dy[0], t, &dx[0]);
}

/* y = min or max of the inputs: dy flows to each input where it equals y (to every one of them
 * on a tie), reduced to the input's shape. */
static ses_status_t grad_min_max(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                 ses_edge_t *dx) {
    ses_edge_t zero, t, in[3];
    TRY(ses__grad_scalar(c, dy[0], 0.0, &zero));
    for (size_t i = 0; i < n->n_inputs; i++) {
        TRY(ses__grad_binary(c, "Equal", IN(i), OUT(0), &in[0]));
        in[1] = dy[0];
        in[2] = zero;
        TRY(ses__grad_op(c, "Where", in, 3, NULL, 0, &t));
        TRY(reduce_like(c, t, IN(i), &dx[i]));
    }
    return SES_OK;
}

static ses_status_t grad_cast(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                              ses_edge_t *dx) {
    return ses__grad_binary(c, "CastLike", dy[0], IN(0), &dx[0]);
}

/* y = where(cond, a, b): da = where(cond, dy, 0), db = where(cond, 0, dy). */
static ses_status_t grad_where(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                               ses_edge_t *dx) {
    ses_edge_t zero, t, in[3];
    TRY(ses__grad_scalar(c, dy[0], 0.0, &zero));
    in[0] = IN(0);
    in[1] = dy[0];
    in[2] = zero;
    TRY(ses__grad_op(c, "Where", in, 3, NULL, 0, &t));
    TRY(reduce_like(c, t, IN(1), &dx[1]));
    in[1] = zero;
    in[2] = dy[0];
    TRY(ses__grad_op(c, "Where", in, 3, NULL, 0, &t));
    return reduce_like(c, t, IN(2), &dx[2]);
}

/* ---- linear algebra ------------------------------------------------------------------------ */

static ses_status_t grad_matmul(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                ses_edge_t *dx) {
    ses_edge_t in[3] = {dy[0], IN(0), IN(1)};
    ses_attr_t which = ses_attr_int("input", 0);
    TRY(ses__grad_op(c, "MatMulGrad", in, 3, &which, 1, &dx[0]));
    which = ses_attr_int("input", 1);
    return ses__grad_op(c, "MatMulGrad", in, 3, &which, 1, &dx[1]);
}

static ses_status_t gemm(ses__grad_ctx_t *c, ses_edge_t a, ses_edge_t b, double alpha,
                         int64_t trans_a, int64_t trans_b, ses_edge_t *out) {
    ses_edge_t in[2] = {a, b};
    ses_attr_t attrs[3] = {ses_attr_float("alpha", alpha), ses_attr_int("transA", trans_a),
                           ses_attr_int("transB", trans_b)};
    return ses__grad_op(c, "Gemm", in, 2, attrs, 3, out);
}

/*
 * y = alpha * op(A) op(B) + beta * C with A' = op(A) [M,K], B' = op(B) [K,N]:
 * dA' = alpha dy B'^T, dB' = alpha A'^T dy; transposed back where op transposed.
 */
static ses_status_t grad_gemm(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                              ses_edge_t *dx) {
    double alpha = 1.0, beta = 1.0;
    int64_t ta = 0, tb = 0;

    ses__attrs_get_float(&n->attrs, "alpha", &alpha);
    ses__attrs_get_float(&n->attrs, "beta", &beta);
    ses__attrs_get_int(&n->attrs, "transA", &ta);
    ses__attrs_get_int(&n->attrs, "transB", &tb);
    ta = ta != 0;
    tb = tb != 0;
    if (!ta)
        TRY(gemm(c, dy[0], IN(1), alpha, 0, !tb, &dx[0]));
    else
        TRY(gemm(c, IN(1), dy[0], alpha, tb, 1, &dx[0]));
    if (!tb)
        TRY(gemm(c, IN(0), dy[0], alpha, !ta, 0, &dx[1]));
    else
        TRY(gemm(c, dy[0], IN(0), alpha, 1, ta, &dx[1]));
    if (n->n_inputs > 2) {
        ses_edge_t t;
        TRY(reduce_like(c, dy[0], IN(2), &t));
        if (beta != 1.0) {
            ses_edge_t k;
            TRY(ses__grad_scalar(c, IN(2), beta, &k));
            TRY(ses__grad_binary(c, "Mul", t, k, &t));
        }
        dx[2] = t;
    }
    return SES_OK;
}

/* ---- reductions ------------------------------------------------------------------------- */

/* ReduceGrad broadcasts @p e back to x's shape over the forward node's axes. */
static ses_status_t reduce_back(ses__grad_ctx_t *c, const ses_node_t *n, ses_edge_t e, int mean,
                                ses_edge_t *out) {
    static const char *const names[] = {"axes", "keepdims", "noop_with_empty_axes"};
    ses_attr_t attrs[4];
    ses_edge_t in[3] = {e, IN(0), {NULL, 0}};
    size_t k = forward_attrs(n, names, 3, attrs);

    attrs[k++] = ses_attr_int("mean", mean);
    if (n->n_inputs > 1) /* ReduceSum's axes input (a constant) */
        in[2] = IN(1);
    return ses__grad_op(c, "ReduceGrad", in, n->n_inputs > 1 ? 3 : 2, attrs, k, out);
}

static ses_status_t grad_reduce_sum(ses__grad_ctx_t *c, const ses_node_t *n,
                                    const ses_edge_t *dy, ses_edge_t *dx) {
    return reduce_back(c, n, dy[0], 0, &dx[0]);
}

static ses_status_t grad_reduce_mean(ses__grad_ctx_t *c, const ses_node_t *n,
                                     const ses_edge_t *dy, ses_edge_t *dx) {
    return reduce_back(c, n, dy[0], 1, &dx[0]);
}

/* The gradient goes to every element equal to the max (each gets all of it on ties); the same
 * for ReduceMin and the min. */
static ses_status_t grad_reduce_max(ses__grad_ctx_t *c, const ses_node_t *n,
                                    const ses_edge_t *dy, ses_edge_t *dx) {
    ses_edge_t ymax, g, is_max, zero, in[3];
    TRY(reduce_back(c, n, OUT(0), 0, &ymax));
    TRY(reduce_back(c, n, dy[0], 0, &g));
    TRY(ses__grad_binary(c, "Equal", IN(0), ymax, &is_max));
    TRY(ses__grad_scalar(c, IN(0), 0.0, &zero));
    in[0] = is_max;
    in[1] = g;
    in[2] = zero;
    return ses__grad_op(c, "Where", in, 3, NULL, 0, &dx[0]);
}

/* d(sum x^2)/dx = 2x. */
static ses_status_t grad_reduce_sum_square(ses__grad_ctx_t *c, const ses_node_t *n,
                                           const ses_edge_t *dy, ses_edge_t *dx) {
    ses_edge_t g, two, t;
    TRY(reduce_back(c, n, dy[0], 0, &g));
    TRY(ses__grad_scalar(c, IN(0), 2.0, &two));
    TRY(ses__grad_binary(c, "Mul", IN(0), two, &t));
    return ses__grad_binary(c, "Mul", g, t, &dx[0]);
}

/* d(sqrt(sum x^2))/dx = x / y: where y is 0 (every reduced x is 0) this is 0/0, NaN. */
static ses_status_t grad_reduce_l2(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                   ses_edge_t *dx) {
    ses_edge_t g, y, t;
    TRY(reduce_back(c, n, dy[0], 0, &g));
    TRY(reduce_back(c, n, OUT(0), 0, &y));
    TRY(ses__grad_binary(c, "Div", IN(0), y, &t));
    return ses__grad_binary(c, "Mul", g, t, &dx[0]);
}

/* d(log(sum exp x))/dx = exp(x - y), the softmax over the reduced axes. */
static ses_status_t grad_reduce_log_sum_exp(ses__grad_ctx_t *c, const ses_node_t *n,
                                            const ses_edge_t *dy, ses_edge_t *dx) {
    ses_edge_t g, y, t;
    TRY(reduce_back(c, n, dy[0], 0, &g));
    TRY(reduce_back(c, n, OUT(0), 0, &y));
    TRY(ses__grad_binary(c, "Sub", IN(0), y, &t));
    TRY(ses__grad_unary(c, "Exp", t, &t));
    return ses__grad_binary(c, "Mul", g, t, &dx[0]);
}

/* ---- data movement ---------------------------------------------------------------------- */

static ses_status_t grad_reshape_like(ses__grad_ctx_t *c, const ses_node_t *n,
                                      const ses_edge_t *dy, ses_edge_t *dx) {
    return ses__grad_binary(c, "ReshapeLike", dy[0], IN(0), &dx[0]);
}

static ses_status_t grad_transpose(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                   ses_edge_t *dx) {
    const int64_t *perm = NULL;
    size_t count = 0;
    int64_t inverse[SES_MAX_RANK];
    ses_attr_t a;

    if (ses__attrs_get_ints(&n->attrs, "perm", &perm, &count) != 1)
        return ses__grad_unary(c, "Transpose", dy[0], &dx[0]); /* reversal is its own inverse */
    if (count > SES_MAX_RANK)
        return ses__fail(SES_INVALID_ARGUMENT, "Transpose \"%s\": perm has %zu entries",
                         n->name, count);
    for (size_t i = 0; i < count; i++) {
        if (perm[i] < 0 || (size_t)perm[i] >= count)
            return ses__fail(SES_INVALID_ARGUMENT, "Transpose \"%s\": perm[%zu] = %lld",
                             n->name, i, (long long)perm[i]);
        inverse[perm[i]] = (int64_t)i;
    }
    a = ses_attr_ints("perm", inverse, count);
    return ses__grad_op(c, "Transpose", &dy[0], 1, &a, 1, &dx[0]);
}

static ses_status_t grad_concat(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                ses_edge_t *dx) {
    ses_edge_t in[SES__MAX_INPUTS + 1];
    ses_attr_t attrs[2];
    int64_t axis = 0;

    ses__attrs_get_int(&n->attrs, "axis", &axis);
    in[0] = dy[0];
    for (size_t i = 0; i < n->n_inputs; i++)
        in[i + 1] = IN(i);
    attrs[0] = ses_attr_int("axis", axis);
    for (size_t i = 0; i < n->n_inputs; i++) {
        attrs[1] = ses_attr_int("index", (int64_t)i);
        TRY(ses__grad_op(c, "ConcatGrad", in, n->n_inputs + 1, attrs, 2, &dx[i]));
    }
    return SES_OK;
}

static ses_status_t grad_slice(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                               ses_edge_t *dx) {
    ses_edge_t in[6];
    in[0] = dy[0];
    for (size_t i = 0; i < n->n_inputs; i++)
        in[i + 1] = IN(i);
    return ses__grad_op(c, "SliceGrad", in, n->n_inputs + 1, NULL, 0, &dx[0]);
}

static ses_status_t grad_gather(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                ses_edge_t *dx) {
    static const char *const names[] = {"axis"};
    ses_attr_t attrs[1];
    ses_edge_t in[3] = {dy[0], IN(1), IN(0)};
    size_t k = forward_attrs(n, names, 1, attrs);
    return ses__grad_op(c, "GatherGrad", in, 3, attrs, k, &dx[0]);
}

/* GatherElements: the gradient added where each element was taken, into zeros of x's shape. */
static ses_status_t grad_gather_elements(ses__grad_ctx_t *c, const ses_node_t *n,
                                         const ses_edge_t *dy, ses_edge_t *dx) {
    static const char *const names[] = {"axis"};
    ses_attr_t attrs[2];
    ses_edge_t zero, in[3];
    size_t k = forward_attrs(n, names, 1, attrs);

    TRY(ses__grad_scalar(c, IN(0), 0.0, &zero));
    TRY(ses__grad_binary(c, "ExpandLike", zero, IN(0), &in[0]));
    in[1] = IN(1);
    in[2] = dy[0];
    attrs[k++] = ses_attr_string("reduction", "add");
    return ses__grad_op(c, "ScatterElements", in, 3, attrs, k, &dx[0]);
}

/* CumSum: each x[i] counts in every sum from it onwards, so dx is dy summed the other way. */
static ses_status_t grad_cumsum(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                ses_edge_t *dx) {
    int64_t exclusive = 0, reverse = 0;
    ses_attr_t attrs[2];
    ses_edge_t in[2] = {dy[0], IN(1)};

    ses__attrs_get_int(&n->attrs, "exclusive", &exclusive);
    ses__attrs_get_int(&n->attrs, "reverse", &reverse);
    attrs[0] = ses_attr_int("exclusive", exclusive);
    attrs[1] = ses_attr_int("reverse", !reverse);
    return ses__grad_op(c, "CumSum", in, 2, attrs, 2, &dx[0]);
}

/* ---- losses ----------------------------------------------------------------------------- */

static ses_status_t grad_softmax_cross_entropy(ses__grad_ctx_t *c, const ses_node_t *n,
                                               const ses_edge_t *dy, ses_edge_t *dx) {
    static const char *const names[] = {"reduction", "ignore_index"};
    ses_attr_t attrs[2];
    ses_edge_t in[3];
    size_t k;

    if (n->n_outputs < 2)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "SoftmaxCrossEntropyLoss \"%s\": its gradient needs the log_prob output; "
                         "create the node with 2 outputs (ses_softmax_cross_entropy does)",
                         n->name);
    if (dy[1].node)
        return ses__fail(SES_UNIMPLEMENTED,
                         "SoftmaxCrossEntropyLoss \"%s\": no gradient flows through its log_prob "
                         "output yet; differentiate LogSoftmax instead",
                         n->name);
    if (n->n_inputs > 2)
        return ses__fail(SES_UNIMPLEMENTED,
                         "SoftmaxCrossEntropyLoss \"%s\": no gradient with class weights yet",
                         n->name);
    k = forward_attrs(n, names, 2, attrs);
    in[0] = dy[0];
    in[1] = OUT(1);
    in[2] = IN(1);
    return ses__grad_op(c, "SoftmaxCrossEntropyLossGrad", in, 3, attrs, k, &dx[0]);
}

/* NegativeLogLikelihoodLoss: -weight[target] * dloss (scaled by the reduction) at the target
 * class, 0 elsewhere; the target and the weights get none. */
static ses_status_t grad_nll_loss(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                  ses_edge_t *dx) {
    static const char *const names[] = {"reduction", "ignore_index"};
    ses_attr_t attrs[2];
    ses_edge_t in[4];
    size_t k = forward_attrs(n, names, 2, attrs);

    in[0] = dy[0];
    for (size_t i = 0; i < n->n_inputs; i++)
        in[i + 1] = IN(i);
    return ses__grad_op(c, "NegativeLogLikelihoodLossGrad", in, n->n_inputs + 1, attrs, k, &dx[0]);
}

/* ---- convolution, pooling and the model ops (src/ops/cnn.c) ------------------------------ */

/* The forward attributes of the window ops. */
static const char *const window_names[] = {"kernel_shape", "strides",   "dilations",        "pads",
                                           "auto_pad",     "ceil_mode", "count_include_pad", "group"};
#define N_WINDOW_NAMES (sizeof window_names / sizeof window_names[0])

/* Conv(X, W[, B]): ConvGrad gives dX (input 0) and dW (1), and dB (2) is dy summed over the
 * batch and spatial axes. */
static ses_status_t grad_conv(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                              ses_edge_t *dx) {
    ses_attr_t attrs[N_WINDOW_NAMES + 1];
    ses_edge_t in[3] = {dy[0], IN(0), IN(1)};
    size_t k = forward_attrs(n, window_names, N_WINDOW_NAMES, attrs);

    for (int64_t i = 0; i < (n->n_inputs > 2 ? 3 : 2); i++) {
        attrs[k] = ses_attr_int("input", i);
        TRY(ses__grad_op(c, "ConvGrad", in, 3, attrs, k + 1, &dx[i]));
    }
    return SES_OK;
}

/* MaxPool and AveragePool: their gradient ops take dy and the forward input. */
static ses_status_t grad_pool(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                              ses_edge_t *dx) {
    ses_attr_t attrs[N_WINDOW_NAMES];
    ses_edge_t in[2] = {dy[0], IN(0)};
    size_t k = forward_attrs(n, window_names, N_WINDOW_NAMES - 1, attrs);
    const char *op = strcmp(n->op, "MaxPool") == 0 ? "MaxPoolGrad" : "AveragePoolGrad";

    if (n->n_outputs > 1 && dy[1].node)
        return ses__fail(SES_UNIMPLEMENTED, "MaxPool \"%s\": no gradient flows through Indices",
                         n->name);
    return ses__grad_op(c, op, in, 2, attrs, k, &dx[0]);
}

static ses_status_t grad_global_average_pool(ses__grad_ctx_t *c, const ses_node_t *n,
                                             const ses_edge_t *dy, ses_edge_t *dx) {
    return ses__grad_binary(c, "GlobalAveragePoolGrad", dy[0], IN(0), &dx[0]);
}

/* Dropout in inference is the identity; its mask takes no gradient. In training mode (input 2,
 * training_mode, not a constant false) the kept elements were scaled by 1 / (1 - ratio) and the
 * others dropped, as the mask output says: dx = dy * mask * (training_mode ? 1 / (1 - ratio) :
 * 1). Without the mask output nothing says which elements were kept: refused, naming the node. */
static ses_status_t grad_dropout(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                 ses_edge_t *dx) {
    ses_edge_t one, ratio, inv, scale, mask, t, in[3];
    const ses_node_t *training = n->n_inputs > 2 ? IN(2).node : NULL;

    if (!training ||
        (training->kind == SES__NODE_CONSTANT && ses_tensor_count(training->value) == 1 &&
         *(const uint8_t *)ses_tensor_data(training->value) == 0)) {
        dx[0] = dy[0];
        return SES_OK;
    }
    if (n->n_outputs < 2)
        return ses__fail(SES_UNIMPLEMENTED,
                         "Dropout \"%s\": the gradient of its training mode needs the mask "
                         "output, to know which elements were kept; give the node 2 outputs",
                         n->name);
    TRY(ses__grad_scalar(c, dy[0], 1.0, &one));
    in[0] = IN(1);
    in[1] = dy[0];
    TRY(ses__grad_op(c, "CastLike", in, 2, NULL, 0, &ratio));
    TRY(ses__grad_binary(c, "Sub", one, ratio, &t));
    TRY(ses__grad_binary(c, "Div", one, t, &inv));
    in[0] = IN(2);
    in[1] = inv;
    in[2] = one;
    TRY(ses__grad_op(c, "Where", in, 3, NULL, 0, &scale));
    in[0] = OUT(1);
    in[1] = dy[0];
    TRY(ses__grad_op(c, "CastLike", in, 2, NULL, 0, &mask));
    TRY(ses__grad_binary(c, "Mul", dy[0], mask, &t));
    return ses__grad_binary(c, "Mul", t, scale, &dx[0]);
}

/* LayerNormalization(X, Scale[, B]): LayerNormalizationGrad gives dX (input 0) and dScale (1),
 * and dB is dY summed over the axes before axis. No gradient flows through Mean and
 * InvStdDev. */
static ses_status_t grad_layer_norm(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                    ses_edge_t *dx) {
    static const char *const names[] = {"axis", "epsilon", "stash_type"};
    ses_attr_t attrs[4];
    ses_edge_t in[3] = {dy[0], IN(0), IN(1)};
    size_t k = forward_attrs(n, names, 3, attrs);

    for (uint32_t o = 1; o < n->n_outputs && o < 3; o++)
        if (dy[o].node)
            return ses__fail(SES_UNIMPLEMENTED,
                             "LayerNormalization \"%s\": no gradient flows through %s", n->name,
                             o == 1 ? "Mean" : "InvStdDev");
    for (int64_t i = 0; i < 2; i++) {
        attrs[k] = ses_attr_int("input", i);
        TRY(ses__grad_op(c, "LayerNormalizationGrad", in, 3, attrs, k + 1, &dx[i]));
    }
    if (n->n_inputs > 2)
        TRY(reduce_like(c, dy[0], IN(2), &dx[2]));
    return SES_OK;
}

/* Clip(x, min, max): dy where min <= x <= max, 0 where x was clipped (min and max get none).
 * A bound given as an empty constant is absent, as Clip's inference reads it. */
static ses_status_t grad_clip(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                              ses_edge_t *dx) {
    static const char *const compare[] = {"Less", "Greater"};
    ses_edge_t zero, out = dy[0];

    TRY(ses__grad_scalar(c, dy[0], 0.0, &zero));
    for (size_t i = 1; i < n->n_inputs && i < 3; i++) {
        const ses_node_t *bound = IN(i).node;
        ses_edge_t clipped, in[3];
        if (bound->kind == SES__NODE_CONSTANT && ses_tensor_count(bound->value) == 0)
            continue;
        TRY(ses__grad_binary(c, compare[i - 1], IN(0), IN(i), &clipped));
        in[0] = clipped;
        in[1] = zero;
        in[2] = out;
        TRY(ses__grad_op(c, "Where", in, 3, NULL, 0, &out));
    }
    dx[0] = out;
    return SES_OK;
}

static ses_status_t grad_expand(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                ses_edge_t *dx) {
    return reduce_like(c, dy[0], IN(0), &dx[0]);
}

/* Pad(data, pads[, constant_value, axes]): PadGrad sums dy back onto the data. */
static ses_status_t grad_pad(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                             ses_edge_t *dx) {
    static const char *const names[] = {"mode"};
    ses_attr_t attrs[1];
    ses_edge_t in[5];
    size_t k = forward_attrs(n, names, 1, attrs);

    if (n->n_inputs < 2)
        return ses__fail(SES_INVALID_ARGUMENT, "Pad \"%s\": input 1 (pads) is required",
                         n->name);
    in[0] = dy[0];
    for (size_t i = 0; i < n->n_inputs && i < 4; i++)
        in[i + 1] = IN(i);
    return ses__grad_op(c, "PadGrad", in, n->n_inputs + 1, attrs, k, &dx[0]);
}

/* Split: the outputs' gradients concatenated back, zeros for outputs none flows into. */
static ses_status_t grad_split(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                               ses_edge_t *dx) {
    ses_edge_t parts[SES__MAX_OUTPUTS];
    ses_attr_t axis_attr;
    int64_t axis = 0;

    ses__attrs_get_int(&n->attrs, "axis", &axis);
    for (uint32_t o = 0; o < n->n_outputs && o < SES__MAX_OUTPUTS; o++) {
        if (dy[o].node) {
            parts[o] = dy[o];
            continue;
        }
        ses_edge_t zero;
        TRY(ses__grad_scalar(c, OUT(o), 0.0, &zero));
        TRY(ses__grad_binary(c, "ExpandLike", zero, OUT(o), &parts[o]));
    }
    axis_attr = ses_attr_int("axis", axis);
    return ses__grad_op(c, "Concat", parts, n->n_outputs, &axis_attr, 1, &dx[0]);
}

/* ---- group g-act: the activations, Sum, Mean ---------------------------------------------- */

/* An activation of activation.c: its gradient op is <Op>Grad(dy, x) with the forward node's
 * attributes (those it has; the gradient op fills in the same defaults). */
static ses_status_t grad_activation(ses__grad_ctx_t *c, const ses_node_t *n,
                                    const ses_edge_t *dy, ses_edge_t *dx) {
    static const struct {
        const char *op;
        const char *names[2];
    } params[] = {
        {"Elu", {"alpha", NULL}},         {"Celu", {"alpha", NULL}},
        {"ThresholdedRelu", {"alpha", NULL}}, {"Selu", {"alpha", "gamma"}},
        {"HardSigmoid", {"alpha", "beta"}},   {"Shrink", {"bias", "lambd"}},
        {"Gelu", {"approximate", NULL}},
    };
    const char *const *names = NULL;
    size_t n_names = 0;
    char op[64];

    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
        if (!strcmp(params[i].op, n->op)) {
            names = params[i].names;
            n_names = params[i].names[1] ? 2 : 1;
        }
    snprintf(op, sizeof op, "%sGrad", n->op);
    return fused(c, n, op, dy[0], IN(0), names, n_names, &dx[0]);
}

/* y = sum of the inputs (times 1 / n for Mean): dy (scaled) flows to each, reduced to its
 * shape. */
static ses_status_t grad_sum_mean(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                  ses_edge_t *dx) {
    ses_edge_t g = dy[0];

    if (!strcmp(n->op, "Mean")) {
        ses_edge_t k;
        TRY(ses__grad_scalar(c, dy[0], 1.0 / (double)n->n_inputs, &k));
        TRY(ses__grad_binary(c, "Mul", dy[0], k, &g));
    }
    for (size_t i = 0; i < n->n_inputs; i++)
        TRY(reduce_like(c, g, IN(i), &dx[i]));
    return SES_OK;
}

/* ---- g-convfam: ConvTranspose and the spatial ops (src/ops/conv_transpose.c, spatial.c) -- */

/* ConvTranspose(X, W[, B]): ConvTransposeGrad(X, dY, W) gives dX (input 0: the Conv of dY by
 * W), dW (1) and dB (2: dY summed over the batch and spatial axes), from the forward
 * attributes as given (the op normalizes them again from the shapes). */
static ses_status_t grad_conv_transpose(ses__grad_ctx_t *c, const ses_node_t *n,
                                        const ses_edge_t *dy, ses_edge_t *dx) {
    static const char *const names[] = {"kernel_shape",   "strides",     "dilations",
                                        "pads",           "auto_pad",    "group",
                                        "output_padding", "output_shape"};
    ses_attr_t attrs[sizeof names / sizeof names[0] + 1];
    ses_edge_t in[3] = {IN(0), dy[0], IN(1)};
    size_t k = forward_attrs(n, names, sizeof names / sizeof names[0], attrs);

    for (int64_t i = 0; i < (n->n_inputs > 2 ? 3 : 2); i++) {
        attrs[k] = ses_attr_int("input", i);
        TRY(ses__grad_op(c, "ConvTransposeGrad", in, 3, attrs, k + 1, &dx[i]));
    }
    return SES_OK;
}

/* group g-resize: Resize(X[, roi, scales, sizes]): ResizeGrad spreads dY back onto X with the
 * weights each output read X with (every mode; roi, scales and sizes get none). */
static ses_status_t grad_resize(ses__grad_ctx_t *c, const ses_node_t *n, const ses_edge_t *dy,
                                ses_edge_t *dx) {
    static const char *const names[] = {"mode",
                                        "coordinate_transformation_mode",
                                        "nearest_mode",
                                        "cubic_coeff_a",
                                        "exclude_outside",
                                        "extrapolation_value",
                                        "keep_aspect_ratio_policy",
                                        "axes",
                                        "antialias"};
    ses_attr_t attrs[9];
    ses_edge_t in[5];
    size_t k = forward_attrs(n, names, 9, attrs);

    in[0] = dy[0];
    for (size_t i = 0; i < n->n_inputs && i < 4; i++)
        in[i + 1] = IN(i);
    return ses__grad_op(c, "ResizeGrad", in, n->n_inputs + 1, attrs, k, &dx[0]);
}

/* ---- the table -------------------------------------------------------------------------- */

static const ses__grad_builder_t builders[] = {
    {"Identity", grad_identity},
    {"Add", grad_add},
    {"Sub", grad_sub},
    {"Mul", grad_mul},
    {"Div", grad_div},
    {"Pow", grad_pow},
    {"Neg", grad_neg},
    {"Abs", grad_abs},
    {"Relu", grad_relu},
    {"LeakyRelu", grad_leaky_relu},
    {"PRelu", grad_prelu},
    {"Sigmoid", grad_sigmoid},
    {"Tanh", grad_tanh},
    {"Exp", grad_exp},
    {"Log", grad_log},
    {"Sqrt", grad_sqrt},
    {"Reciprocal", grad_reciprocal},
    {"Softplus", grad_softplus},
    {"Erf", grad_erf},
    {"Min", grad_min_max},
    {"Max", grad_min_max},
    {"Cast", grad_cast},
    {"Where", grad_where},
    {"MatMul", grad_matmul},
    {"Gemm", grad_gemm},
    {"ReduceSum", grad_reduce_sum},
    {"ReduceMean", grad_reduce_mean},
    {"ReduceMax", grad_reduce_max},
    {"ReduceMin", grad_reduce_max},
    {"ReduceSumSquare", grad_reduce_sum_square},
    {"ReduceL2", grad_reduce_l2},
    {"ReduceLogSumExp", grad_reduce_log_sum_exp},
    {"Softmax", grad_softmax},
    {"LogSoftmax", grad_log_softmax},
    {"Reshape", grad_reshape_like},
    {"Flatten", grad_reshape_like},
    {"Squeeze", grad_reshape_like},
    {"Unsqueeze", grad_reshape_like},
    {"Transpose", grad_transpose},
    {"Concat", grad_concat},
    {"Slice", grad_slice},
    {"Gather", grad_gather},
    {"GatherElements", grad_gather_elements},
    {"CumSum", grad_cumsum},
    {"SoftmaxCrossEntropyLoss", grad_softmax_cross_entropy},
    {"NegativeLogLikelihoodLoss", grad_nll_loss},
    {"Conv", grad_conv},
    {"MaxPool", grad_pool},
    {"AveragePool", grad_pool},
    {"GlobalAveragePool", grad_global_average_pool},
    {"Dropout", grad_dropout},
    {"LayerNormalization", grad_layer_norm},
    {"Clip", grad_clip},
    {"Expand", grad_expand},
    {"Pad", grad_pad},
    {"Split", grad_split},
    /* group g-act */
    {"Elu", grad_activation},
    {"Selu", grad_activation},
    {"Celu", grad_activation},
    {"HardSigmoid", grad_activation},
    {"HardSwish", grad_activation},
    {"ThresholdedRelu", grad_activation},
    {"Softsign", grad_activation},
    {"Shrink", grad_activation},
    {"Gelu", grad_activation},
    {"Mish", grad_activation},
    {"Sum", grad_sum_mean},
    {"Mean", grad_sum_mean},
    /* g-convfam */
    {"ConvTranspose", grad_conv_transpose},
    /* Not differentiable: nothing flows back through them. */
    {"Equal", NULL},
    {"Greater", NULL},
    {"Less", NULL},
    {"ArgMax", NULL},
    {"ArgMin", NULL},
    {"ScalarLike", NULL},
    {"Shape", NULL},
    {"ConstantOfShape", NULL},
    {"Range", NULL},
    /* group g-resize */
    {"Resize", grad_resize},
};

const ses__grad_builder_t *ses__grad_builder_find(const char *op) {
    for (size_t i = 0; i < sizeof builders / sizeof builders[0]; i++)
        if (!strcmp(builders[i].op, op))
            return &builders[i];
    return NULL;
}
