/*
 * Gradients: for every differentiable op, the gradient ses_gradients builds agrees with central
 * finite differences in f64 on the CPU driver. The loss is sum(y*y) + sum(y), so the gradient
 * flowing into each op's output (2y + 1) differs per element. Also: errors for ops without a
 * gradient name the op and the path, nothing is added on failure, and xs the ys do not depend
 * on get no gradient.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define MAX_X 3

typedef enum domain { ANY, POS, NZ, AWAY } domain_t; /* AWAY: |x| >= 0.2 (kinks at 0) */

typedef struct xspec {
    size_t rank;
    int64_t dims[4];
    domain_t domain;
} xspec_t;

typedef ses_status_t (*build_fn)(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y);

typedef struct gcase {
    const char *label;
    size_t n_x;
    xspec_t x[MAX_X];
    build_fn build;
} gcase_t;

/* ---- building blocks ---------------------------------------------------------------------- */

static ses_status_t op1(ses_graph_t *g, const char *op, ses_edge_t a, const ses_attr_t *attrs,
                        size_t n_attrs, ses_edge_t *y) {
    return ses_graph_op(g, op, NULL, &a, 1, attrs, n_attrs, y);
}

static ses_status_t op2(ses_graph_t *g, const char *op, ses_edge_t a, ses_edge_t b,
                        const ses_attr_t *attrs, size_t n_attrs, ses_edge_t *y) {
    ses_edge_t in[2] = {a, b};
    return ses_graph_op(g, op, NULL, in, 2, attrs, n_attrs, y);
}

static ses_edge_t const_i64(ses_graph_t *g, size_t n, const int64_t *values) {
    int64_t dims[1] = {(int64_t)n};
    ses_tensor_t *t = NULL;
    ses_edge_t e = {NULL, 0};

    assert_int_equal(ses_tensor_create_from(SES_I64, 1, dims, values, n * sizeof *values, &t),
                     SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

#define UNARY(fn, OP)                                                              \
    static ses_status_t fn(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {   \
        return op1(g, OP, x[0], NULL, 0, y);                                       \
    }
#define BINARY(fn, OP)                                                             \
    static ses_status_t fn(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {   \
        return op2(g, OP, x[0], x[1], NULL, 0, y);                                 \
    }

UNARY(b_identity, "Identity")
UNARY(b_neg, "Neg")
UNARY(b_abs, "Abs")
UNARY(b_relu, "Relu")
UNARY(b_sigmoid, "Sigmoid")
UNARY(b_tanh, "Tanh")
UNARY(b_exp, "Exp")
UNARY(b_log, "Log")
UNARY(b_sqrt, "Sqrt")
UNARY(b_reciprocal, "Reciprocal")
UNARY(b_softplus, "Softplus")
UNARY(b_erf, "Erf")
BINARY(b_add, "Add")
BINARY(b_sub, "Sub")
BINARY(b_mul, "Mul")
BINARY(b_div, "Div")
BINARY(b_pow, "Pow")
BINARY(b_min, "Min")

static ses_status_t b_max3(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    return ses_graph_op(g, "Max", NULL, x, 3, NULL, 0, y);
}
BINARY(b_matmul, "MatMul")

static ses_status_t b_leaky_relu(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a = ses_attr_float("alpha", 0.2);
    return op1(g, "LeakyRelu", x[0], &a, 1, y);
}

BINARY(b_prelu, "PRelu")

/* X, Scale and B normalized over the last two axes; Y only. */
static ses_status_t b_layer_norm(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a[2] = {ses_attr_int("axis", 1), ses_attr_float("epsilon", 0.01)};
    return ses_graph_op(g, "LayerNormalization", NULL, x, 3, a, 2, y);
}

/* X and Scale over the last axis, the node with its Mean and InvStdDev outputs too. */
static ses_status_t b_layer_norm_stats(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_node_t *node = NULL;
    ses_status_t st = ses_graph_add_node(g, "LayerNormalization", "ln", x, 2, NULL, 0, 3, &node);
    if (st == SES_OK)
        *y = ses_node_output(node, 0);
    return st;
}

static ses_status_t b_gemm(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a[4] = {ses_attr_float("alpha", 0.5), ses_attr_float("beta", 2.0),
                       ses_attr_int("transA", 1), ses_attr_int("transB", 0)};
    return ses_graph_op(g, "Gemm", NULL, x, 3, a, 4, y);
}

static ses_status_t b_gemm_tb(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a = ses_attr_int("transB", 1);
    return ses_graph_op(g, "Gemm", NULL, x, 2, &a, 1, y);
}

static ses_status_t b_reduce_sum(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t axes[] = {-1};
    ses_attr_t a = ses_attr_int("keepdims", 0);
    return op2(g, "ReduceSum", x[0], const_i64(g, 1, axes), &a, 1, y);
}

static ses_status_t b_reduce_mean(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t axes[] = {0, 2};
    ses_attr_t a = ses_attr_ints("axes", axes, 2);
    return op1(g, "ReduceMean", x[0], &a, 1, y);
}

static ses_status_t b_reduce_max(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t axes[] = {1};
    ses_attr_t a[2] = {ses_attr_ints("axes", axes, 1), ses_attr_int("keepdims", 0)};
    return op1(g, "ReduceMax", x[0], a, 2, y);
}

static ses_status_t b_reduce_min(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t axes[] = {0};
    ses_attr_t a = ses_attr_ints("axes", axes, 1);
    return op1(g, "ReduceMin", x[0], &a, 1, y);
}

static ses_status_t b_reduce_sum_square(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t axes[] = {-1};
    ses_attr_t a[2] = {ses_attr_ints("axes", axes, 1), ses_attr_int("keepdims", 0)};
    return op1(g, "ReduceSumSquare", x[0], a, 2, y);
}

static ses_status_t b_reduce_l2(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t axes[] = {0, 2};
    ses_attr_t a = ses_attr_ints("axes", axes, 2);
    return op1(g, "ReduceL2", x[0], &a, 1, y);
}

static ses_status_t b_reduce_log_sum_exp(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t axes[] = {1};
    ses_attr_t a = ses_attr_ints("axes", axes, 1);
    return op1(g, "ReduceLogSumExp", x[0], &a, 1, y);
}

static ses_status_t b_softmax(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a = ses_attr_int("axis", 1);
    return op1(g, "Softmax", x[0], &a, 1, y);
}

static ses_status_t b_log_softmax(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    return op1(g, "LogSoftmax", x[0], NULL, 0, y);
}

static ses_status_t b_transpose(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t perm[] = {2, 0, 1};
    ses_attr_t a = ses_attr_ints("perm", perm, 3);
    return op1(g, "Transpose", x[0], &a, 1, y);
}

static ses_status_t b_reshape(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t shape[] = {3, -1};
    return op2(g, "Reshape", x[0], const_i64(g, 2, shape), NULL, 0, y);
}

static ses_status_t b_flatten(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    return op1(g, "Flatten", x[0], NULL, 0, y);
}

static ses_status_t b_squeeze(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t axes[] = {1};
    return op2(g, "Squeeze", x[0], const_i64(g, 1, axes), NULL, 0, y);
}

static ses_status_t b_unsqueeze(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t axes[] = {0};
    return op2(g, "Unsqueeze", x[0], const_i64(g, 1, axes), NULL, 0, y);
}

static ses_status_t b_concat(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a = ses_attr_int("axis", 1);
    return ses_graph_op(g, "Concat", NULL, x, 3, &a, 1, y);
}

static ses_status_t b_slice(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t starts[] = {1, 4}, ends[] = {3, 0}, axes[] = {0, 1}, steps[] = {1, -2};
    ses_edge_t in[5] = {x[0], const_i64(g, 2, starts), const_i64(g, 2, ends),
                        const_i64(g, 2, axes), const_i64(g, 2, steps)};
    return ses_graph_op(g, "Slice", NULL, in, 5, NULL, 0, y);
}

static ses_status_t b_gather(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t indices[] = {2, 0, -1, 2};
    ses_attr_t a = ses_attr_int("axis", 1);
    return op2(g, "Gather", x[0], const_i64(g, 4, indices), &a, 1, y);
}

static ses_status_t b_gather_elements(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t indices[] = {2, 0, 2, -1, 1, 1, 0, -3}; /* [2,4], repeats */
    int64_t dims[2] = {2, 4};
    ses_attr_t a = ses_attr_int("axis", 1);
    ses_tensor_t *t = NULL;
    ses_edge_t i;

    assert_int_equal(ses_tensor_create_from(SES_I64, 2, dims, indices, sizeof indices, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &i), SES_OK);
    ses_tensor_release(t);
    return op2(g, "GatherElements", x[0], i, &a, 1, y);
}

static ses_status_t b_cumsum(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t axis[] = {-2};
    ses_attr_t a = ses_attr_int("exclusive", 1);
    return op2(g, "CumSum", x[0], const_i64(g, 1, axis), &a, 1, y);
}

static ses_status_t b_cumsum_reverse(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t axis[] = {1};
    ses_attr_t a = ses_attr_int("reverse", 1);
    return op2(g, "CumSum", x[0], const_i64(g, 1, axis), &a, 1, y);
}

static ses_status_t b_where(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const unsigned char cond[] = {1, 0, 0, 1, 1, 0};
    int64_t dims[2] = {2, 3};
    ses_tensor_t *t = NULL;
    ses_edge_t c, in[3];

    assert_int_equal(ses_tensor_create_from(SES_BOOL, 2, dims, cond, sizeof cond, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &c), SES_OK);
    ses_tensor_release(t);
    in[0] = c;
    in[1] = x[0];
    in[2] = x[1];
    return ses_graph_op(g, "Where", NULL, in, 3, NULL, 0, y);
}

static ses_status_t b_cast(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a = ses_attr_int("to", 11); /* DOUBLE */
    return op1(g, "Cast", x[0], &a, 1, y);
}

static ses_status_t b_cross_entropy(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t labels[] = {2, 0, 3};
    return ses_softmax_cross_entropy(g, NULL, x[0], const_i64(g, 3, labels), SES_REDUCTION_MEAN,
                                     y);
}

static ses_status_t b_cross_entropy_sum(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t labels[] = {1, 3, 0};
    return ses_softmax_cross_entropy(g, NULL, x[0], const_i64(g, 3, labels), SES_REDUCTION_NONE,
                                     y);
}

static ses_status_t b_nll_loss(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t target[] = {2, 0, 3};
    return op2(g, "NegativeLogLikelihoodLoss", x[0], const_i64(g, 3, target), NULL, 0, y);
}

/* [N, C, d] input, constant class weights, ignore_index, reduction none. */
static ses_status_t b_nll_loss_weighted(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t target[] = {1, 0, 2, 1, -1, 2}; /* [2, 3] */
    static const double weight[] = {0.5, 2.0, 1.5};
    int64_t tdims[2] = {2, 3}, wdims[1] = {3};
    ses_attr_t attrs[2] = {ses_attr_string("reduction", "none"), ses_attr_int("ignore_index", -1)};
    ses_tensor_t *t = NULL;
    ses_edge_t in[3];

    assert_int_equal(ses_tensor_create_from(SES_I64, 2, tdims, target, sizeof target, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &in[1]), SES_OK);
    ses_tensor_release(t);
    assert_int_equal(ses_tensor_create_from(SES_F64, 1, wdims, weight, sizeof weight, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &in[2]), SES_OK);
    ses_tensor_release(t);
    in[0] = x[0];
    return ses_graph_op(g, "NegativeLogLikelihoodLoss", NULL, in, 3, attrs, 2, y);
}

static ses_status_t b_mse(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    return ses_mean_squared_error(g, "mse", x[0], x[1], SES_REDUCTION_MEAN, y);
}

/* group g-act: the activations with attributes away from their defaults, Sum and Mean. */
static ses_status_t b_elu(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a = ses_attr_float("alpha", 0.7);
    return op1(g, "Elu", x[0], &a, 1, y);
}
UNARY(b_selu, "Selu")
static ses_status_t b_celu(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a = ses_attr_float("alpha", 1.5);
    return op1(g, "Celu", x[0], &a, 1, y);
}
static ses_status_t b_hard_sigmoid(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a[2] = {ses_attr_float("alpha", 0.3), ses_attr_float("beta", 0.4)};
    return op1(g, "HardSigmoid", x[0], a, 2, y);
}
UNARY(b_hard_swish, "HardSwish")
static ses_status_t b_thresholded_relu(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a = ses_attr_float("alpha", 0.5);
    return op1(g, "ThresholdedRelu", x[0], &a, 1, y);
}
UNARY(b_softsign, "Softsign")
static ses_status_t b_shrink(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a[2] = {ses_attr_float("bias", 0.3), ses_attr_float("lambd", 0.6)};
    return op1(g, "Shrink", x[0], a, 2, y);
}
UNARY(b_gelu, "Gelu")
static ses_status_t b_gelu_tanh(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    ses_attr_t a = ses_attr_string("approximate", "tanh");
    return op1(g, "Gelu", x[0], &a, 1, y);
}
UNARY(b_mish, "Mish")
static ses_status_t b_sum3(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    return ses_graph_op(g, "Sum", NULL, x, 3, NULL, 0, y);
}
BINARY(b_mean, "Mean")
/* g-convfam: ConvTranspose, 2-D with strides, pads, output_padding, two groups and a bias; 1-D
 * with dilations and auto_pad SAME_UPPER. */
static ses_status_t b_conv_transpose_2d(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    const int64_t strides[] = {2, 1}, pads[] = {1, 0, 0, 1}, out_pad[] = {1, 0};
    ses_attr_t a[] = {ses_attr_ints("strides", strides, 2), ses_attr_ints("pads", pads, 4),
                      ses_attr_ints("output_padding", out_pad, 2), ses_attr_int("group", 2)};
    return ses_graph_op(g, "ConvTranspose", NULL, x, 3, a, 4, y);
}

static ses_status_t b_conv_transpose_1d(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    const int64_t strides[] = {2}, dilations[] = {2};
    ses_attr_t a[] = {ses_attr_ints("strides", strides, 1),
                      ses_attr_ints("dilations", dilations, 1),
                      ses_attr_string("auto_pad", "SAME_UPPER")};
    return ses_graph_op(g, "ConvTranspose", NULL, x, 2, a, 3, y);
}

/* group g-resize: Resize(x, roi, scales[, sizes]) with x [1, 2, 3] (3-D: the cases' rank
 * limit), resized along the last two axes, by scales or by sizes. */
static ses_status_t b_resize(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y, const char *mode,
                             const char *coord, const float *scales, const int64_t *sizes) {
    int64_t one[1] = {3}, none[1] = {0};
    ses_tensor_t *t = NULL;
    ses_edge_t in[4];
    ses_attr_t a[2] = {ses_attr_string("mode", mode),
                       ses_attr_string("coordinate_transformation_mode", coord)};

    in[0] = x[0];
    assert_int_equal(ses_tensor_create(SES_F32, 1, none, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &in[1]), SES_OK);
    ses_tensor_release(t);
    if (scales) {
        assert_int_equal(ses_tensor_create_from(SES_F32, 1, one, scales, 3 * sizeof *scales, &t),
                         SES_OK);
        assert_int_equal(ses_graph_constant(g, NULL, t, &in[2]), SES_OK);
        ses_tensor_release(t);
        return ses_graph_op(g, "Resize", NULL, in, 3, a, 2, y);
    }
    in[2] = in[1];
    in[3] = const_i64(g, 3, sizes);
    return ses_graph_op(g, "Resize", NULL, in, 4, a, 2, y);
}

static ses_status_t b_resize_linear_up(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const float scales[3] = {1.0f, 2.0f, 1.5f};
    return b_resize(g, x, y, "linear", "half_pixel", scales, NULL);
}

static ses_status_t b_resize_linear_down(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t sizes[3] = {1, 3, 3};
    return b_resize(g, x, y, "linear", "align_corners", NULL, sizes);
}

static ses_status_t b_resize_nearest(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t sizes[3] = {1, 5, 2};
    return b_resize(g, x, y, "nearest", "asymmetric", NULL, sizes);
}

static ses_status_t b_resize_cubic(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const float scales[3] = {1.0f, 1.5f, 0.8f};
    return b_resize(g, x, y, "cubic", "pytorch_half_pixel", scales, NULL);
}

#define X(r, d0, d1, d2, dom) {r, {d0, d1, d2, 0}, dom}

static const gcase_t cases[] = {
    {"Identity", 1, {X(2, 2, 3, 0, ANY)}, b_identity},
    {"Add broadcast", 2, {X(2, 2, 3, 0, ANY), X(1, 3, 0, 0, ANY)}, b_add},
    {"Sub both stretched", 2, {X(2, 3, 1, 0, ANY), X(2, 1, 4, 0, ANY)}, b_sub},
    {"Mul scalar", 2, {X(2, 2, 3, 0, ANY), X(0, 0, 0, 0, ANY)}, b_mul},
    {"Div", 2, {X(2, 2, 3, 0, ANY), X(1, 3, 0, 0, NZ)}, b_div},
    {"Pow", 2, {X(2, 2, 3, 0, POS), X(2, 2, 3, 0, ANY)}, b_pow},
    {"Neg", 1, {X(1, 5, 0, 0, ANY)}, b_neg},
    {"Abs", 1, {X(1, 5, 0, 0, AWAY)}, b_abs},
    {"Relu", 1, {X(2, 2, 3, 0, AWAY)}, b_relu},
    {"LeakyRelu", 1, {X(2, 2, 3, 0, AWAY)}, b_leaky_relu},
    {"PRelu channel slope", 2, {X(3, 2, 3, 4, AWAY), X(2, 3, 1, 0, ANY)}, b_prelu},
    {"PRelu scalar slope", 2, {X(2, 2, 3, 0, AWAY), X(0, 0, 0, 0, ANY)}, b_prelu},
    {"Sigmoid", 1, {X(2, 2, 3, 0, ANY)}, b_sigmoid},
    {"Tanh", 1, {X(2, 2, 3, 0, ANY)}, b_tanh},
    {"Exp", 1, {X(2, 2, 3, 0, ANY)}, b_exp},
    {"Log", 1, {X(2, 2, 3, 0, POS)}, b_log},
    {"Sqrt", 1, {X(2, 2, 3, 0, POS)}, b_sqrt},
    {"Reciprocal", 1, {X(2, 2, 3, 0, NZ)}, b_reciprocal},
    {"Softplus", 1, {X(2, 2, 3, 0, ANY)}, b_softplus},
    {"Erf", 1, {X(2, 2, 3, 0, ANY)}, b_erf},
    {"Min broadcast", 2, {X(2, 2, 3, 0, ANY), X(1, 3, 0, 0, ANY)}, b_min},
    {"Max of three", 3, {X(2, 2, 3, 0, ANY), X(1, 3, 0, 0, ANY), X(0, 0, 0, 0, ANY)}, b_max3},
    {"MatMul 2-D", 2, {X(2, 2, 3, 0, ANY), X(2, 3, 4, 0, ANY)}, b_matmul},
    {"MatMul batched, broadcast", 2, {X(3, 2, 2, 3, ANY), X(2, 3, 4, 0, ANY)}, b_matmul},
    {"MatMul vector", 2, {X(1, 3, 0, 0, ANY), X(2, 3, 4, 0, ANY)}, b_matmul},
    {"Gemm transA alpha beta C",
     3,
     {X(2, 3, 2, 0, ANY), X(2, 3, 4, 0, ANY), X(1, 4, 0, 0, ANY)},
     b_gemm},
    {"Gemm transB", 2, {X(2, 2, 3, 0, ANY), X(2, 4, 3, 0, ANY)}, b_gemm_tb},
    {"ReduceSum", 1, {X(3, 2, 3, 4, ANY)}, b_reduce_sum},
    {"ReduceMean", 1, {X(3, 2, 3, 4, ANY)}, b_reduce_mean},
    {"ReduceMax", 1, {X(2, 3, 4, 0, ANY)}, b_reduce_max},
    {"ReduceMin", 1, {X(2, 3, 4, 0, ANY)}, b_reduce_min},
    {"ReduceSumSquare", 1, {X(2, 3, 4, 0, ANY)}, b_reduce_sum_square},
    {"ReduceL2", 1, {X(3, 2, 3, 4, AWAY)}, b_reduce_l2},
    {"ReduceLogSumExp", 1, {X(3, 2, 3, 4, ANY)}, b_reduce_log_sum_exp},
    {"Softmax", 1, {X(2, 2, 4, 0, ANY)}, b_softmax},
    {"LogSoftmax", 1, {X(2, 2, 4, 0, ANY)}, b_log_softmax},
    {"Transpose", 1, {X(3, 2, 3, 4, ANY)}, b_transpose},
    {"Reshape", 1, {X(2, 2, 3, 0, ANY)}, b_reshape},
    {"Flatten", 1, {X(3, 2, 3, 2, ANY)}, b_flatten},
    {"Squeeze", 1, {X(3, 2, 1, 3, ANY)}, b_squeeze},
    {"Unsqueeze", 1, {X(2, 2, 3, 0, ANY)}, b_unsqueeze},
    {"Concat", 3, {X(2, 2, 1, 0, ANY), X(2, 2, 3, 0, ANY), X(2, 2, 2, 0, ANY)}, b_concat},
    {"Slice", 1, {X(2, 4, 5, 0, ANY)}, b_slice},
    {"Gather", 1, {X(2, 2, 3, 0, ANY)}, b_gather},
    {"GatherElements", 1, {X(2, 2, 3, 0, ANY)}, b_gather_elements},
    {"CumSum exclusive", 1, {X(3, 2, 3, 4, ANY)}, b_cumsum},
    {"CumSum reverse", 1, {X(2, 2, 3, 0, ANY)}, b_cumsum_reverse},
    {"Where", 2, {X(2, 2, 3, 0, ANY), X(1, 3, 0, 0, ANY)}, b_where},
    {"Cast", 1, {X(2, 2, 3, 0, ANY)}, b_cast},
    {"SoftmaxCrossEntropyLoss mean", 1, {X(2, 3, 4, 0, ANY)}, b_cross_entropy},
    {"SoftmaxCrossEntropyLoss none", 1, {X(2, 3, 4, 0, ANY)}, b_cross_entropy_sum},
    {"NegativeLogLikelihoodLoss mean", 1, {X(2, 3, 4, 0, ANY)}, b_nll_loss},
    {"NegativeLogLikelihoodLoss weighted none", 1, {X(3, 2, 3, 3, ANY)}, b_nll_loss_weighted},
    {"mean squared error", 2, {X(2, 2, 3, 0, ANY), X(2, 2, 3, 0, ANY)}, b_mse},
    {"LayerNormalization axis 1 with B",
     3,
     {X(3, 2, 3, 4, ANY), X(2, 3, 4, 0, ANY), X(2, 3, 4, 0, ANY)},
     b_layer_norm},
    {"LayerNormalization with Mean and InvStdDev",
     2,
     {X(2, 3, 5, 0, ANY), X(1, 5, 0, 0, ANY)},
     b_layer_norm_stats},
    /* group g-act. HardSigmoid's kinks (-4/3 and 2) and those of ThresholdedRelu and Shrink lie
     * inside the draws, but a draw within the step of one has no chance worth counting. */
    {"Elu", 1, {X(2, 2, 3, 0, AWAY)}, b_elu},
    {"Selu", 1, {X(2, 2, 3, 0, AWAY)}, b_selu},
    {"Celu", 1, {X(2, 2, 3, 0, ANY)}, b_celu},
    {"HardSigmoid", 1, {X(2, 3, 4, 0, ANY)}, b_hard_sigmoid},
    {"HardSwish", 1, {X(2, 2, 3, 0, ANY)}, b_hard_swish},
    {"ThresholdedRelu", 1, {X(2, 2, 3, 0, ANY)}, b_thresholded_relu},
    {"Softsign", 1, {X(2, 2, 3, 0, ANY)}, b_softsign},
    {"Shrink", 1, {X(2, 3, 4, 0, ANY)}, b_shrink},
    {"Gelu", 1, {X(2, 2, 3, 0, ANY)}, b_gelu},
    {"Gelu tanh", 1, {X(2, 2, 3, 0, ANY)}, b_gelu_tanh},
    {"Mish", 1, {X(2, 2, 3, 0, ANY)}, b_mish},
    {"Sum of three, broadcast", 3, {X(2, 2, 3, 0, ANY), X(1, 3, 0, 0, ANY), X(0, 0, 0, 0, ANY)},
     b_sum3},
    {"Mean broadcast", 2, {X(2, 2, 3, 0, ANY), X(2, 2, 1, 0, ANY)}, b_mean},
    /* g-convfam */
    {"ConvTranspose 2-D strided, padded, grouped, with B",
     3,
     {{4, {2, 4, 3, 2}, ANY}, {4, {4, 1, 3, 2}, ANY}, X(1, 2, 0, 0, ANY)},
     b_conv_transpose_2d},
    {"ConvTranspose 1-D dilated, SAME_UPPER",
     2,
     {X(3, 1, 2, 3, ANY), X(3, 2, 3, 2, ANY)},
     b_conv_transpose_1d},
    /* group g-resize */
    {"Resize linear half_pixel upsampling by scales", 1, {X(3, 1, 2, 3, ANY)}, b_resize_linear_up},
    {"Resize linear align_corners to sizes", 1, {X(3, 1, 4, 5, ANY)}, b_resize_linear_down},
    {"Resize nearest asymmetric to sizes", 1, {X(3, 1, 2, 3, ANY)}, b_resize_nearest},
    {"Resize cubic pytorch_half_pixel", 1, {X(3, 1, 4, 5, ANY)}, b_resize_cubic},
};

/* ---- the check ---------------------------------------------------------------------------- */

static uint64_t rng_state = 88172645463325252ull;

static double uniform(double lo, double hi) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static double draw(domain_t d) {
    double v = uniform(-2.0, 2.0);
    switch (d) {
    case POS: return uniform(0.3, 2.5);
    case NZ: return (uniform(0, 1) < 0.5 ? -1 : 1) * uniform(0.5, 2.0);
    case AWAY: return (uniform(0, 1) < 0.5 ? -1 : 1) * uniform(0.2, 2.0);
    case ANY: break;
    }
    return v;
}

static double eval_loss(ses_session_t *s, ses_edge_t loss, const ses_feed_t *feeds, size_t n) {
    ses_tensor_t *value = NULL;
    const double *v;
    double sum = 0.0;

    if (ses_session_eval(s, &loss, 1, feeds, n, NULL, 0, &value) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    v = ses_tensor_data(value);
    for (size_t i = 0; i < ses_tensor_count(value); i++)
        sum += v[i];
    ses_tensor_release(value);
    return sum;
}

static void check_case(const gcase_t *c) {
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_edge_t x[MAX_X], y, sq, loss1, loss2, loss, dx[MAX_X];
    ses_feed_t feeds[MAX_X];
    ses_tensor_t *grads[MAX_X] = {0};
    const char *cpu = "cpu";
    ses_attr_t keep = ses_attr_int("keepdims", 0);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    for (size_t i = 0; i < c->n_x; i++) {
        char name[32];
        ses_tensor_t *t = NULL;
        snprintf(name, sizeof name, "x%zu", i);
        assert_int_equal(ses_graph_placeholder(g, name, SES_F64, c->x[i].rank, c->x[i].dims, &x[i]),
                         SES_OK);
        assert_int_equal(ses_tensor_create(SES_F64, c->x[i].rank, c->x[i].dims, &t), SES_OK);
        for (size_t k = 0; k < ses_tensor_count(t); k++)
            ((double *)ses_tensor_data(t))[k] = draw(c->x[i].domain);
        feeds[i].edge = x[i];
        feeds[i].value = t;
    }
    if (c->build(g, x, &y) != SES_OK)
        fail_msg("%s: building: %s", c->label, ses_last_error());
    /* loss = sum(y*y) + sum(y) */
    assert_int_equal(op2(g, "Mul", y, y, NULL, 0, &sq), SES_OK);
    assert_int_equal(op1(g, "ReduceSum", sq, &keep, 1, &loss1), SES_OK);
    assert_int_equal(op1(g, "ReduceSum", y, &keep, 1, &loss2), SES_OK);
    assert_int_equal(op2(g, "Add", loss1, loss2, NULL, 0, &loss), SES_OK);
    if (ses_gradients(g, NULL, &loss, 1, x, c->n_x, NULL, dx) != SES_OK)
        fail_msg("%s: ses_gradients: %s", c->label, ses_last_error());

    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    for (size_t i = 0; i < c->n_x; i++) {
        if (!dx[i].node)
            fail_msg("%s: no gradient for x%zu", c->label, i);
    }
    if (ses_session_eval(s, dx, c->n_x, feeds, c->n_x, NULL, 0, grads) != SES_OK)
        fail_msg("%s: evaluating the gradients: %s", c->label, ses_last_error());

    for (size_t i = 0; i < c->n_x; i++) {
        double *v = ses_tensor_data(feeds[i].value);
        const double *analytic = ses_tensor_data(grads[i]);
        assert_int_equal(ses_tensor_count(grads[i]), ses_tensor_count(feeds[i].value));
        for (size_t k = 0; k < ses_tensor_count(feeds[i].value); k++) {
            const double h = 1e-6, keep_v = v[k];
            double up, down, numeric;
            v[k] = keep_v + h;
            up = eval_loss(s, loss, feeds, c->n_x);
            v[k] = keep_v - h;
            down = eval_loss(s, loss, feeds, c->n_x);
            v[k] = keep_v;
            numeric = (up - down) / (2 * h);
            if (fabs(numeric - analytic[k]) > 1e-5 * fmax(1.0, fabs(numeric)))
                fail_msg("%s: d loss / d x%zu[%zu]: gradient %.10g, finite difference %.10g",
                         c->label, i, k, analytic[k], numeric);
        }
    }
    for (size_t i = 0; i < c->n_x; i++) {
        ses_tensor_release(feeds[i].value);
        ses_tensor_release(grads[i]);
    }
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void every_op_matches_finite_differences(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i]);
}

/* ---- errors ------------------------------------------------------------------------------- */

static void an_op_without_gradient_is_named_with_its_path_and_nothing_is_added(void **state) {
    ses_graph_t *g = NULL;
    int64_t dims[2] = {2, 3};
    ses_edge_t x, a, b, y, dx;
    size_t before;
    ses_node_t *found = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 2, dims, &x), SES_OK);
    assert_int_equal(ses_graph_op(g, "Exp", "a", &x, 1, NULL, 0, &a), SES_OK);
    /* A gradient op itself has no gradient (no second order yet). */
    {
        ses_edge_t in[2] = {a, x};
        assert_int_equal(ses_graph_op(g, "ReluGrad", "b", in, 2, NULL, 0, &b), SES_OK);
    }
    assert_int_equal(ses_graph_op(g, "Neg", "y", &b, 1, NULL, 0, &y), SES_OK);
    before = ses_graph_version(g);
    assert_int_equal(ses_gradients(g, NULL, &y, 1, &x, 1, NULL, &dx), SES_UNIMPLEMENTED);
    assert_non_null(strstr(ses_last_error(), "ReluGrad \"b\" has no gradient"));
    assert_non_null(strstr(ses_last_error(), "x -> a -> b -> y"));
    assert_null(dx.node);
    /* The seed nodes added before the failure are gone again. */
    assert_int_equal(ses_graph_find_node(g, "gradients/y/ScalarLike", &found), SES_NOT_FOUND);
    assert_true(ses_graph_version(g) >= before);
    ses_graph_release(g);
}

static void an_x_the_y_does_not_depend_on_gets_no_gradient(void **state) {
    ses_graph_t *g = NULL;
    int64_t dims[1] = {3};
    ses_edge_t x, z, y, xs[2], dx[2];

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 1, dims, &x), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "z", SES_F32, 1, dims, &z), SES_OK);
    assert_int_equal(ses_graph_op(g, "Exp", "y", &x, 1, NULL, 0, &y), SES_OK);
    xs[0] = x;
    xs[1] = z;
    assert_int_equal(ses_gradients(g, NULL, &y, 1, xs, 2, NULL, dx), SES_OK);
    assert_non_null(dx[0].node);
    assert_null(dx[1].node);
    assert_int_equal(ses_gradients(g, NULL, &y, 0, xs, 2, NULL, dx), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_gradients(NULL, NULL, &y, 1, xs, 2, NULL, dx), SES_INVALID_ARGUMENT);
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_op_matches_finite_differences),
        cmocka_unit_test(an_op_without_gradient_is_named_with_its_path_and_nothing_is_added),
        cmocka_unit_test(an_x_the_y_does_not_depend_on_gets_no_gradient),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
