/*
 * The training ops (libsession/src/ops/train_ops.c, plugins/cpu/cpu_train.c): the softmax
 * cross-entropy and negative log-likelihood losses and their gradients, and the in-place
 * optimizers SGD, Momentum and Adam (and the inference of MatMulGradSGD, fusion's SGD of a
 * MatMulGrad; its runs are in sgd_fusion_test.c).
 *
 * Three layers, each checked where it is decided:
 *   - inference (ses__op_infer): output types, the normalized kernel attributes, the inputs
 *     passed to kernels, zero outputs for the optimizers, and the errors;
 *   - the loss ops through the public API, as one-node graphs evaluated in a CPU session, against
 *     values worked out by hand and, for the gradient, a central finite difference of the loss;
 *   - the optimizer kernels through the driver ABI, as cpu_kernels_test.c drives kernels (dlopen
 *     the CPU module, find the entry by op and signature, launch it on buffers), since they
 *     update their inputs in place and have no outputs to fetch. One step, several steps and the
 *     launch checks.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/driver.h>
#include <session/session.h>

#include "ops/op_schema.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../support/test_host.h"

#ifndef SES_CPU_DRIVER_PATH
#error "compile with -DSES_CPU_DRIVER_PATH=\"/path/to/ses_cpu.so\""
#endif

/* Both values, and where, when they differ by more than @p tol. */
static void expect_near(double want, double got, double tol, const char *what, size_t i) {
    if (!(fabs(want - got) <= tol))
        fail_msg("%s[%zu]: got %.12g, want %.12g (tolerance %g)", what, i, got, want, tol);
}

#define assert_contains(text, fragment)                                             \
    do {                                                                            \
        if (!strstr((text), (fragment)))                                            \
            fail_msg("message \"%s\" does not contain \"%s\"", (text), (fragment)); \
    } while (0)

/* =============================================================================================
 * Inference
 * ========================================================================================== */

typedef struct infer_run {
    ses__type_t in[SES__MAX_INPUTS];
    ses__attrs_t attrs;
    ses__infer_ctx_t ctx;
} infer_run_t;

static ses__type_t ty(ses_dtype_t dtype, int rank, ...) {
    ses__type_t t;
    va_list ap;

    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.rank = (uint32_t)rank;
    va_start(ap, rank);
    for (int d = 0; d < rank; d++)
        t.dims[d] = va_arg(ap, int);
    va_end(ap);
    return t;
}

static ses_status_t infer(infer_run_t *r, const char *op, size_t n_inputs, size_t n_outputs) {
    const ses__op_schema_t *schema = ses__op_schema_find(op);

    assert_non_null(schema);
    ses__attrs_clear(&r->ctx.kernel_attrs);
    r->ctx.node = "n";
    r->ctx.op = op;
    r->ctx.n_inputs = n_inputs;
    r->ctx.inputs = r->in;
    r->ctx.values = NULL;
    r->ctx.attrs = &r->attrs;
    r->ctx.n_outputs = n_outputs;
    return ses__op_infer(schema, &r->ctx);
}

static void infer_done(infer_run_t *r) {
    ses__attrs_clear(&r->attrs);
    ses__attrs_clear(&r->ctx.kernel_attrs);
}

static const char *type_str(const ses__type_t *t, char *buffer, size_t size) {
    return ses__type_format(t, buffer, size);
}

static int64_t kernel_int(infer_run_t *r, const char *name) {
    int64_t v = -12345;
    assert_int_equal(ses__attrs_get_int(&r->ctx.kernel_attrs, name, &v), 1);
    return v;
}

static double kernel_float(infer_run_t *r, const char *name) {
    double v = -12345;
    assert_int_equal(ses__attrs_get_float(&r->ctx.kernel_attrs, name, &v), 1);
    return v;
}

/* The loss is a scalar for mean and sum, the labels' shape for none; log_prob is the scores'. */
static void the_loss_infers_a_scalar_or_per_position_loss_and_log_prob(void **state) {
    infer_run_t r;
    char text[64];
    ses_attr_t none = ses_attr_string("reduction", "none");

    (void)state;
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 3, 4, 10, 7);
    r.in[1] = ty(SES_I64, 2, 4, 7);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLoss", 2, 2), SES_OK);
    assert_string_equal(type_str(&r.ctx.outputs[0], text, sizeof text), "f32[]");
    assert_string_equal(type_str(&r.ctx.outputs[1], text, sizeof text), "f32[4,10,7]");
    assert_int_equal(kernel_int(&r, "reduction"), 0);
    assert_int_equal(kernel_int(&r, "has_ignore_index"), 0);
    assert_int_equal(kernel_int(&r, "ignore_index"), 0);

    assert_int_equal(ses__attrs_set(&r.attrs, &none), SES_OK);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "ignore_index", -100), SES_OK);
    r.in[1] = ty(SES_I32, 2, 4, 7);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLoss", 2, 1), SES_OK);
    assert_string_equal(type_str(&r.ctx.outputs[0], text, sizeof text), "f32[4,7]");
    assert_int_equal(kernel_int(&r, "reduction"), 2);
    assert_int_equal(kernel_int(&r, "has_ignore_index"), 1);
    assert_int_equal(kernel_int(&r, "ignore_index"), -100);
    infer_done(&r);
}

/* An absent optional weights input is not passed to the kernel; a given one is. */
static void the_loss_passes_weights_only_when_given(void **state) {
    infer_run_t r;

    (void)state;
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F64, 2, 3, 5);
    r.in[1] = ty(SES_I64, 1, 3);
    r.in[2] = ty(SES_DTYPE_INVALID, 0);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLoss", 3, 1), SES_OK);
    assert_int_equal(r.ctx.kernel_inputs, 0x3);
    r.in[2] = ty(SES_F64, 1, 5);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLoss", 3, 1), SES_OK);
    assert_true(r.ctx.kernel_inputs == 0 || r.ctx.kernel_inputs == 0x7);
    infer_done(&r);
}

static void the_loss_rejects_bad_shapes_dtypes_and_attributes_naming_them(void **state) {
    infer_run_t r;
    ses_attr_t mode = ses_attr_string("reduction", "average");

    (void)state;
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 2, 3, 5);
    r.in[1] = ty(SES_I64, 1, 4);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLoss", 2, 1), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "SoftmaxCrossEntropyLoss \"n\": labels must have the shape of scores "
                        "without its class axis 1: scores is f32[3,5], labels is i64[4]");
    r.in[1] = ty(SES_F32, 1, 3);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLoss", 2, 1), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "labels");
    r.in[0] = ty(SES_F32, 1, 5);
    r.in[1] = ty(SES_I64, 0);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLoss", 2, 1), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "rank 2 or more");
    r.in[0] = ty(SES_F32, 2, 3, 5);
    r.in[1] = ty(SES_I64, 1, 3);
    r.in[2] = ty(SES_F32, 1, 4);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLoss", 3, 1), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "SoftmaxCrossEntropyLoss \"n\": weights must be [C], one per class: "
                        "scores is f32[3,5], weights is f32[4]");
    assert_int_equal(ses__attrs_set(&r.attrs, &mode), SES_OK);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLoss", 2, 1), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "SoftmaxCrossEntropyLoss \"n\": attribute reduction is \"average\"; "
                        "expected \"mean\", \"sum\" or \"none\"");
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLoss", 2, 3), SES_INVALID_ARGUMENT);
    infer_done(&r);
}

static void the_gradient_checks_dloss_against_the_reduction(void **state) {
    infer_run_t r;
    char text[64];
    ses_attr_t none = ses_attr_string("reduction", "none");

    (void)state;
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 0);
    r.in[1] = ty(SES_F32, 3, 2, 4, 3);
    r.in[2] = ty(SES_I64, 2, 2, 3);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLossGrad", 3, 1), SES_OK);
    assert_string_equal(type_str(&r.ctx.outputs[0], text, sizeof text), "f32[2,4,3]");
    assert_int_equal(ses__attrs_set(&r.attrs, &none), SES_OK);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLossGrad", 3, 1), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "SoftmaxCrossEntropyLossGrad \"n\": dloss must have the loss's shape "
                        "f32[2,3] (reduction none), got f32[]");
    r.in[0] = ty(SES_F32, 2, 2, 3);
    assert_int_equal(infer(&r, "SoftmaxCrossEntropyLossGrad", 3, 1), SES_OK);
    assert_int_equal(kernel_int(&r, "reduction"), 2);
    infer_done(&r);
}

/* NegativeLogLikelihoodLoss infers as SoftmaxCrossEntropyLoss does, with one output, and its
 * errors name its input "input"; its gradient has the input's type. */
static void the_nll_loss_infers_like_the_softmax_loss_and_names_its_input(void **state) {
    infer_run_t r;
    char text[64];
    ses_attr_t none = ses_attr_string("reduction", "none");

    (void)state;
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F64, 3, 4, 10, 7);
    r.in[1] = ty(SES_I32, 2, 4, 7);
    r.in[2] = ty(SES_DTYPE_INVALID, 0);
    assert_int_equal(infer(&r, "NegativeLogLikelihoodLoss", 3, 1), SES_OK);
    assert_string_equal(type_str(&r.ctx.outputs[0], text, sizeof text), "f64[]");
    assert_int_equal(r.ctx.kernel_inputs, 0x3);
    assert_int_equal(kernel_int(&r, "reduction"), 0);
    assert_int_equal(infer(&r, "NegativeLogLikelihoodLoss", 2, 2), SES_INVALID_ARGUMENT);
    assert_int_equal(ses__attrs_set(&r.attrs, &none), SES_OK);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "ignore_index", -1), SES_OK);
    assert_int_equal(infer(&r, "NegativeLogLikelihoodLoss", 2, 1), SES_OK);
    assert_string_equal(type_str(&r.ctx.outputs[0], text, sizeof text), "f64[4,7]");
    assert_int_equal(kernel_int(&r, "reduction"), 2);
    assert_int_equal(kernel_int(&r, "has_ignore_index"), 1);
    assert_int_equal(kernel_int(&r, "ignore_index"), -1);

    r.in[1] = ty(SES_I64, 2, 4, 10);
    assert_int_equal(infer(&r, "NegativeLogLikelihoodLoss", 2, 1), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "NegativeLogLikelihoodLoss \"n\": labels must have the shape of input "
                        "without its class axis 1: input is f64[4,10,7], labels is i64[4,10]");
    r.in[1] = ty(SES_I64, 2, 4, 7);
    r.in[2] = ty(SES_F32, 1, 10);
    assert_int_equal(infer(&r, "NegativeLogLikelihoodLoss", 3, 1), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "NegativeLogLikelihoodLoss \"n\"");
    assert_contains(ses_last_error(), "weights");
    r.in[0] = ty(SES_I64, 2, 4, 10);
    r.in[1] = ty(SES_I64, 1, 4);
    assert_int_equal(infer(&r, "NegativeLogLikelihoodLoss", 2, 1), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "input");

    /* The gradient: dloss has the loss's shape, the output the input's type. */
    r.in[0] = ty(SES_F32, 2, 4, 7);
    r.in[1] = ty(SES_F32, 3, 4, 10, 7);
    r.in[2] = ty(SES_I64, 2, 4, 7);
    assert_int_equal(infer(&r, "NegativeLogLikelihoodLossGrad", 3, 1), SES_OK);
    assert_string_equal(type_str(&r.ctx.outputs[0], text, sizeof text), "f32[4,10,7]");
    r.in[0] = ty(SES_F32, 0);
    assert_int_equal(infer(&r, "NegativeLogLikelihoodLossGrad", 3, 1), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "NegativeLogLikelihoodLossGrad \"n\": dloss must have the loss's shape "
                        "f32[4,7] (reduction none), got f32[]");
    infer_done(&r);
}

/* The optimizers have no outputs, update the inputs the schema marks, and lower attributes. */
static void optimizers_have_no_outputs_and_mark_their_in_place_inputs(void **state) {
    infer_run_t r;

    (void)state;
    assert_int_equal(ses__op_schema_find("SGD")->inplace_inputs, 0x1);
    assert_int_equal(ses__op_schema_find("Momentum")->inplace_inputs, 0x9);
    assert_int_equal(ses__op_schema_find("Adam")->inplace_inputs, 0x39);
    assert_int_equal(ses__op_schema_find("Adam")->default_outputs, 0);
    assert_int_equal(ses__op_schema_find("SoftmaxCrossEntropyLoss")->inplace_inputs, 0);

    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 2, 3, 4);
    r.in[1] = ty(SES_F32, 2, 3, 4);
    r.in[2] = ty(SES_F32, 0);
    r.in[3] = ty(SES_F32, 2, 3, 4);
    r.in[4] = ty(SES_F32, 2, 3, 4);
    r.in[5] = ty(SES_F32, 0);
    assert_int_equal(infer(&r, "SGD", 3, 0), SES_OK);
    assert_int_equal(infer(&r, "SGD", 3, 1), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(), "SGD \"n\": takes 0 outputs, got 1");
    assert_int_equal(infer(&r, "Momentum", 4, 0), SES_OK);
    assert_true(fabs(kernel_float(&r, "momentum") - 0.9) < 1e-15);
    assert_int_equal(kernel_int(&r, "nesterov"), 0);
    assert_int_equal(infer(&r, "Adam", 6, 0), SES_OK);
    assert_true(fabs(kernel_float(&r, "beta1") - 0.9) < 1e-15);
    assert_true(fabs(kernel_float(&r, "beta2") - 0.999) < 1e-15);
    assert_true(fabs(kernel_float(&r, "epsilon") - 1e-8) < 1e-20);

    assert_int_equal(ses__attrs_set_float(&r.attrs, "beta1", 1.0), SES_OK);
    assert_int_equal(infer(&r, "Adam", 6, 0), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(), "Adam \"n\": attribute beta1 is 1; it must be in [0, 1)");
    infer_done(&r);
}

static void optimizers_refuse_mismatched_state_and_a_learning_rate_that_is_not_a_scalar(
    void **state) {
    infer_run_t r;

    (void)state;
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 2, 3, 4);
    r.in[1] = ty(SES_F32, 2, 4, 3);
    r.in[2] = ty(SES_F32, 0);
    assert_int_equal(infer(&r, "SGD", 3, 0), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "SGD \"n\": grad must have var's shape: var is f32[3,4], grad is f32[4,3]");
    r.in[1] = ty(SES_F32, 2, 3, 4);
    r.in[2] = ty(SES_F32, 1, 1);
    assert_int_equal(infer(&r, "SGD", 3, 0), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(), "SGD \"n\": lr must be a scalar (rank 0), got f32[1]");
    r.in[2] = ty(SES_F64, 0);
    assert_int_equal(infer(&r, "SGD", 3, 0), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(), "SGD \"n\": dtypes differ: var is f32[3,4], lr is f64[]");
    r.in[0] = ty(SES_I32, 1, 2);
    assert_int_equal(infer(&r, "SGD", 3, 0), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "var");
    infer_done(&r);
}

/* MatMulGradSGD(var, dy, A, B, lr; input), what fusion makes of MatMulGrad -> SGD, infers as
 * the two would: no outputs, var updated in place, MatMulGrad's input lowered, and the kernel
 * gets var, dy, the operand the gradient is computed from, and lr (the other operand has var's
 * shape, and is var in the graphs fusion makes). */
static void matmul_grad_sgd_infers_as_sgd_of_matmul_grad(void **state) {
    infer_run_t r;

    (void)state;
    assert_int_equal(ses__op_schema_find("MatMulGradSGD")->inplace_inputs, 0x1);
    assert_int_equal(ses__op_schema_find("MatMulGradSGD")->default_outputs, 0);
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 2, 4, 3); /* var: B's gradient, A^T dy */
    r.in[1] = ty(SES_F32, 2, 6, 3);
    r.in[2] = ty(SES_F32, 2, 6, 4);
    r.in[3] = ty(SES_F32, 2, 4, 3);
    r.in[4] = ty(SES_F32, 0);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "input", 1), SES_OK);
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 0), SES_OK);
    assert_int_equal(kernel_int(&r, "input"), 1);
    assert_int_equal(r.ctx.kernel_inputs, 0x17); /* var, dy, A, lr */
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 1), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(), "MatMulGradSGD \"n\": takes 0 outputs, got 1");

    r.in[0] = ty(SES_F64, 2, 6, 4); /* var: A's gradient, dy B^T */
    r.in[1] = ty(SES_F64, 2, 6, 3);
    r.in[2] = ty(SES_F64, 2, 6, 4);
    r.in[3] = ty(SES_F64, 2, 4, 3);
    r.in[4] = ty(SES_F64, 0);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "input", 0), SES_OK);
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 0), SES_OK);
    assert_int_equal(kernel_int(&r, "input"), 0);
    assert_int_equal(r.ctx.kernel_inputs, 0x1b); /* var, dy, B, lr */
    infer_done(&r);
}

/* Each check of MatMulGrad's and of SGD's names the node and the input at fault, with dy
 * numbered as this node's input 1; nothing is left in the kernel attributes. */
static void matmul_grad_sgd_refuses_what_either_op_would_naming_the_input(void **state) {
    infer_run_t r;

    (void)state;
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 2, 4, 3);
    r.in[1] = ty(SES_F32, 2, 6, 3);
    r.in[2] = ty(SES_F32, 2, 6, 4);
    r.in[3] = ty(SES_F32, 2, 4, 3);
    r.in[4] = ty(SES_F64, 0);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "input", 1), SES_OK);
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 0), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "MatMulGradSGD \"n\": dtypes differ: var is f32[4,3], lr is f64[]");
    assert_int_equal(r.ctx.kernel_attrs.count, 0);
    r.in[4] = ty(SES_F32, 1, 1);
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 0), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "MatMulGradSGD \"n\": lr must be a scalar (rank 0), got f32[1]");
    r.in[4] = ty(SES_F32, 0);

    /* The gradient of B is [4,3]: var [3,4] is not its shape, and an f64 var not its dtype. */
    r.in[0] = ty(SES_F32, 2, 3, 4);
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 0), SES_INVALID_ARGUMENT);
    assert_string_equal(
        ses_last_error(),
        "MatMulGradSGD \"n\": grad must have var's shape: var is f32[3,4], grad is f32[4,3]");
    assert_int_equal(r.ctx.kernel_attrs.count, 0);
    r.in[0] = ty(SES_F64, 2, 4, 3);
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 0), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "MatMulGradSGD \"n\": dtypes differ: var is f64[4,3], grad is f32[4,3]");
    r.in[0] = ty(SES_F32, 2, 4, 3);

    r.in[1] = ty(SES_I32, 2, 6, 3);
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 0), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "MatMulGradSGD \"n\": input 1 (dy) is i32[6,3]");
    r.in[1] = ty(SES_F32, 2, 5, 3);
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 0), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "MatMulGradSGD \"n\": dy does not match A * B: dy is f32[5,3], A is "
                        "f32[6,4], B is f32[4,3], A * B is f32[6,3]");
    r.in[1] = ty(SES_F32, 2, 6, 3);

    assert_int_equal(ses__attrs_set_int(&r.attrs, "input", 2), SES_OK);
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 0), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(),
                        "MatMulGradSGD \"n\": attribute input must be 0 (the gradient of A) or 1 "
                        "(of B), got 2");
    assert_int_equal(r.ctx.kernel_attrs.count, 0);
    assert_int_equal(ses__attrs_set_float(&r.attrs, "input", 1.0), SES_OK);
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 0), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "MatMulGradSGD \"n\": attribute input");
    ses__attrs_clear(&r.attrs);
    assert_int_equal(infer(&r, "MatMulGradSGD", 5, 0), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(), "MatMulGradSGD \"n\": attribute input is required");
    infer_done(&r);
}

/* A graph node of an optimizer has no outputs: fetching it says to pass it as a target. */
static void an_optimizer_node_has_no_outputs_in_the_graph(void **state) {
    ses_graph_t *g = NULL;
    ses_edge_t in[3];
    ses_node_t *node = NULL;
    int64_t dims[1] = {4};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "var", SES_F32, 1, dims, &in[0]), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "grad", SES_F32, 1, dims, &in[1]), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "lr", SES_F32, 0, NULL, &in[2]), SES_OK);
    assert_int_equal(ses_graph_add_node(g, "SGD", "step", in, 3, NULL, 0, 0, &node), SES_OK);
    assert_int_equal(ses_node_output_count(node), 0);
    assert_int_equal(ses_graph_add_node(g, "SGD", "step2", in, 3, NULL, 0, 1, &node),
                     SES_INVALID_ARGUMENT);
    ses_graph_release(g);
}

/* =============================================================================================
 * The loss ops in a session
 * ========================================================================================== */

typedef struct loss_graph {
    ses_graph_t *g;
    ses_session_t *s;
    ses_edge_t scores, labels, weights, dloss;
    ses_node_t *loss; /* the loss node, with 2 outputs (loss, log_prob) */
    ses_node_t *grad; /* SoftmaxCrossEntropyLossGrad(dloss, loss:1, labels[, weights]) */
} loss_graph_t;

/*
 * Builds scores (dtype @p dt, [N, C, d...] = @p sdims) and labels (@p label_dtype), optional
 * weights, the loss node with @p reduction and an optional ignore_index, and its gradient fed
 * by dloss and the loss's own log_prob. Opens a CPU session on it.
 */
static void loss_graph(loss_graph_t *lg, ses_dtype_t dt, ses_dtype_t label_dtype, size_t rank,
                       const int64_t *sdims, int with_weights, const char *reduction,
                       const int64_t *ignore_index) {
    ses_attr_t attrs[2];
    size_t n_attrs = 0;
    int64_t ldims[8], wdims[1] = {sdims[1]};
    ses_edge_t in[4];
    const char *devices[] = {"cpu"};

    memset(lg, 0, sizeof *lg);
    ldims[0] = sdims[0];
    for (size_t d = 2; d < rank; d++)
        ldims[d - 1] = sdims[d];
    assert_int_equal(ses_graph_create(&lg->g), SES_OK);
    assert_int_equal(ses_graph_placeholder(lg->g, "scores", dt, rank, sdims, &lg->scores), SES_OK);
    assert_int_equal(
        ses_graph_placeholder(lg->g, "labels", label_dtype, rank - 1, ldims, &lg->labels), SES_OK);
    attrs[n_attrs++] = ses_attr_string("reduction", reduction);
    if (ignore_index)
        attrs[n_attrs++] = ses_attr_int("ignore_index", *ignore_index);
    in[0] = lg->scores;
    in[1] = lg->labels;
    if (with_weights)
        assert_int_equal(ses_graph_placeholder(lg->g, "weights", dt, 1, wdims, &lg->weights),
                         SES_OK);
    in[2] = lg->weights;
    if (ses_graph_add_node(lg->g, "SoftmaxCrossEntropyLoss", "xent", in, with_weights ? 3 : 2,
                           attrs, n_attrs, 2, &lg->loss) != SES_OK)
        fail_msg("loss: %s", ses_last_error());
    assert_int_equal(
        ses_graph_placeholder(lg->g, "dloss", dt, strcmp(reduction, "none") ? 0 : rank - 1, ldims,
                              &lg->dloss),
        SES_OK);
    in[0] = lg->dloss;
    in[1] = ses_node_output(lg->loss, 1);
    in[2] = lg->labels;
    in[3] = lg->weights;
    if (ses_graph_add_node(lg->g, "SoftmaxCrossEntropyLossGrad", "xent_grad", in,
                           with_weights ? 4 : 3, attrs, n_attrs, 1, &lg->grad) != SES_OK)
        fail_msg("grad: %s", ses_last_error());
    if (ses_session_open(lg->g, devices, 1, NULL, &lg->s) != SES_OK)
        fail_msg("open: %s", ses_last_error());
}

static void loss_graph_done(loss_graph_t *lg) {
    ses_session_destroy(lg->s);
    ses_graph_release(lg->g);
}

static ses_tensor_t *make(ses_dtype_t dt, size_t rank, const int64_t *dims, const void *data) {
    ses_tensor_t *t = NULL;
    size_t count = 1;

    for (size_t d = 0; d < rank; d++)
        count *= (size_t)dims[d];
    assert_int_equal(ses_tensor_create_from(dt, rank, dims, data, count * ses_dtype_size(dt), &t),
                     SES_OK);
    return t;
}

/* Loads element @p i of an f32 or f64 tensor. */
static double at(ses_tensor_t *t, size_t i) {
    if (ses_tensor_dtype(t) == SES_F32)
        return ((const float *)ses_tensor_data(t))[i];
    return ((const double *)ses_tensor_data(t))[i];
}

/* Feeds scores, labels and (when the graph has them) weights and dloss; fetches @p n edges. */
static ses_status_t loss_eval(loss_graph_t *lg, ses_tensor_t *scores, ses_tensor_t *labels,
                              ses_tensor_t *weights, ses_tensor_t *dloss, const ses_edge_t *fetch,
                              size_t n, ses_tensor_t **out) {
    ses_feed_t feeds[4];
    size_t n_feeds = 0;

    feeds[n_feeds++] = (ses_feed_t){lg->scores, scores};
    feeds[n_feeds++] = (ses_feed_t){lg->labels, labels};
    if (weights)
        feeds[n_feeds++] = (ses_feed_t){lg->weights, weights};
    if (dloss)
        feeds[n_feeds++] = (ses_feed_t){lg->dloss, dloss};
    return ses_session_eval(lg->s, fetch, n, feeds, n_feeds, NULL, 0, out);
}

/* The loss of scores {1,2,3},{1,1,1} with labels 2 and 0, worked out by hand:
 *   row 0: log(e + e^2 + e^3) - 3 = 0.40760596444438
 *   row 1: log(3)                 = 1.09861228866811 */
#define NLL0 0.40760596444438
#define NLL1 1.09861228866811

static void the_loss_is_the_mean_sum_or_each_negative_log_probability(void **state) {
    static const float scores_v[] = {1, 2, 3, 1, 1, 1};
    static const int64_t labels_v[] = {2, 0};
    const int64_t sdims[] = {2, 3}, ldims[] = {2};
    static const char *const reductions[] = {"mean", "sum", "none"};

    (void)state;
    for (int r = 0; r < 3; r++) {
        loss_graph_t lg;
        ses_tensor_t *scores = make(SES_F32, 2, sdims, scores_v);
        ses_tensor_t *labels = make(SES_I64, 1, ldims, labels_v);
        ses_tensor_t *out[2] = {NULL, NULL};
        ses_edge_t fetch[2];

        loss_graph(&lg, SES_F32, SES_I64, 2, sdims, 0, reductions[r], NULL);
        fetch[0] = ses_node_output(lg.loss, 0);
        fetch[1] = ses_node_output(lg.loss, 1);
        if (loss_eval(&lg, scores, labels, NULL, NULL, fetch, 2, out) != SES_OK)
            fail_msg("%s: %s", reductions[r], ses_last_error());
        if (r == 0) {
            assert_int_equal(ses_tensor_rank(out[0]), 0);
            expect_near((NLL0 + NLL1) / 2, at(out[0], 0), 1e-6, "mean", 0);
        } else if (r == 1) {
            assert_int_equal(ses_tensor_rank(out[0]), 0);
            expect_near(NLL0 + NLL1, at(out[0], 0), 1e-6, "sum", 0);
        } else {
            assert_int_equal(ses_tensor_rank(out[0]), 1);
            assert_int_equal(ses_tensor_dims(out[0])[0], 2);
            expect_near(NLL0, at(out[0], 0), 1e-6, "none", 0);
            expect_near(NLL1, at(out[0], 1), 1e-6, "none", 1);
        }
        /* log_prob: scores minus their log-sum-exp, row by row. */
        assert_int_equal(ses_tensor_count(out[1]), 6);
        for (size_t i = 0; i < 6; i++)
            expect_near(scores_v[i] - (i < 3 ? 3 + NLL0 : 1 + NLL1), at(out[1], i), 1e-6,
                        "log_prob", i);
        ses_tensor_release(out[0]);
        ses_tensor_release(out[1]);
        ses_tensor_release(scores);
        ses_tensor_release(labels);
        loss_graph_done(&lg);
    }
}

/*
 * [N, C, d]: the class axis is 1, and each (n, d) is a position. Scores [1, 2, 2] with classes
 * (0, 0) at d = 0 and (1, 0) at d = 1, labels (0, 1):
 *   d = 0: log 2 = 0.693147180559945;  d = 1: log(e + 1) = 1.31326168751822.
 */
static void the_loss_takes_the_class_axis_1_of_higher_rank_scores(void **state) {
    static const double scores_v[] = {0, 1, 0, 0};
    static const int32_t labels_v[] = {0, 1};
    const int64_t sdims[] = {1, 2, 2}, ldims[] = {1, 2};
    loss_graph_t lg;
    ses_tensor_t *scores = make(SES_F64, 3, sdims, scores_v);
    ses_tensor_t *labels = make(SES_I32, 2, ldims, labels_v);
    ses_tensor_t *out[2] = {NULL, NULL};
    ses_edge_t fetch[2];

    (void)state;
    loss_graph(&lg, SES_F64, SES_I32, 3, sdims, 0, "none", NULL);
    fetch[0] = ses_node_output(lg.loss, 0);
    fetch[1] = ses_node_output(lg.loss, 1);
    if (loss_eval(&lg, scores, labels, NULL, NULL, fetch, 2, out) != SES_OK)
        fail_msg("%s", ses_last_error());
    assert_int_equal(ses_tensor_rank(out[0]), 2);
    expect_near(0.693147180559945, at(out[0], 0), 1e-12, "loss", 0);
    expect_near(1.31326168751822, at(out[0], 1), 1e-12, "loss", 1);
    /* log_prob[0, c, d]: d = 0 is log(1/2) for both classes; d = 1 is 1 - 1.3133 and -1.3133. */
    expect_near(-0.693147180559945, at(out[1], 0), 1e-12, "log_prob", 0);
    expect_near(1 - 1.31326168751822, at(out[1], 1), 1e-12, "log_prob", 1);
    expect_near(-0.693147180559945, at(out[1], 2), 1e-12, "log_prob", 2);
    expect_near(-1.31326168751822, at(out[1], 3), 1e-12, "log_prob", 3);
    ses_tensor_release(out[0]);
    ses_tensor_release(out[1]);
    loss_graph_done(&lg);

    /* The mean over both positions, with the loss alone (the one-output kernel). */
    {
        ses_node_t *mean = NULL;
        ses_edge_t in[2];
        ses_attr_t a = ses_attr_string("reduction", "mean");
        const char *devices[] = {"cpu"};
        ses_graph_t *g = NULL;
        ses_session_t *s = NULL;
        ses_tensor_t *v = NULL;
        ses_edge_t e;
        ses_feed_t feeds[2];

        assert_int_equal(ses_graph_create(&g), SES_OK);
        assert_int_equal(ses_graph_placeholder(g, "scores", SES_F64, 3, sdims, &in[0]), SES_OK);
        assert_int_equal(ses_graph_placeholder(g, "labels", SES_I32, 2, ldims, &in[1]), SES_OK);
        assert_int_equal(
            ses_graph_add_node(g, "SoftmaxCrossEntropyLoss", "m", in, 2, &a, 1, 0, &mean), SES_OK);
        assert_int_equal(ses_node_output_count(mean), 1);
        assert_int_equal(ses_session_open(g, devices, 1, NULL, &s), SES_OK);
        e = ses_node_output(mean, 0);
        feeds[0] = (ses_feed_t){in[0], scores};
        feeds[1] = (ses_feed_t){in[1], labels};
        if (ses_session_eval(s, &e, 1, feeds, 2, NULL, 0, &v) != SES_OK)
            fail_msg("%s", ses_last_error());
        expect_near((0.693147180559945 + 1.31326168751822) / 2, at(v, 0), 1e-12, "mean", 0);
        ses_tensor_release(v);
        ses_session_destroy(s);
        ses_graph_release(g);
    }
    ses_tensor_release(scores);
    ses_tensor_release(labels);
}

/* Ignored positions contribute 0, and the mean counts only the others. */
static void ignored_positions_add_nothing_and_are_not_counted_by_the_mean(void **state) {
    static const float scores_v[] = {1, 2, 3, 1, 1, 1, 5, 0, 0};
    static const int64_t labels_v[] = {2, -100, 0};
    const int64_t sdims[] = {3, 3}, ldims[] = {3}, ignore = -100;
    static const char *const reductions[] = {"mean", "sum", "none"};
    /* Row 2: log(e^5 + 2) - 5. */
    const double nll2 = log(exp(5.0) + 2.0) - 5.0;

    (void)state;
    for (int r = 0; r < 3; r++) {
        loss_graph_t lg;
        ses_tensor_t *scores = make(SES_F32, 2, sdims, scores_v);
        ses_tensor_t *labels = make(SES_I64, 1, ldims, labels_v);
        ses_tensor_t *out = NULL;
        ses_edge_t fetch;

        loss_graph(&lg, SES_F32, SES_I64, 2, sdims, 0, reductions[r], &ignore);
        fetch = ses_node_output(lg.loss, 0);
        if (loss_eval(&lg, scores, labels, NULL, NULL, &fetch, 1, &out) != SES_OK)
            fail_msg("%s: %s", reductions[r], ses_last_error());
        if (r == 0) {
            expect_near((NLL0 + nll2) / 2, at(out, 0), 1e-6, "mean", 0);
        } else if (r == 1) {
            expect_near(NLL0 + nll2, at(out, 0), 1e-6, "sum", 0);
        } else {
            expect_near(NLL0, at(out, 0), 1e-6, "none", 0);
            assert_true(at(out, 1) == 0.0);
            expect_near(nll2, at(out, 2), 1e-6, "none", 2);
        }
        ses_tensor_release(out);
        ses_tensor_release(scores);
        ses_tensor_release(labels);
        loss_graph_done(&lg);
    }
}

/* With weights, each position's loss is scaled by its class's weight and the mean divides by
 * the sum of the weights of the counted labels (ONNX). An ignore_index inside [0, C) wins. */
static void weights_scale_each_position_and_the_mean_divides_by_their_sum(void **state) {
    static const float scores_v[] = {1, 2, 3, 1, 1, 1, 5, 0, 0};
    static const int64_t labels_v[] = {2, 0, 1};
    static const float weights_v[] = {0.5f, 1.0f, 2.0f};
    const int64_t sdims[] = {3, 3}, ldims[] = {3}, wdims[] = {3}, ignore = 1;
    loss_graph_t lg;
    ses_tensor_t *scores = make(SES_F32, 2, sdims, scores_v);
    ses_tensor_t *labels = make(SES_I64, 1, ldims, labels_v);
    ses_tensor_t *weights = make(SES_F32, 1, wdims, weights_v);
    ses_tensor_t *out = NULL;
    ses_edge_t fetch;

    (void)state;
    loss_graph(&lg, SES_F32, SES_I64, 2, sdims, 1, "mean", &ignore);
    fetch = ses_node_output(lg.loss, 0);
    if (loss_eval(&lg, scores, labels, weights, NULL, &fetch, 1, &out) != SES_OK)
        fail_msg("%s", ses_last_error());
    /* Row 2 (label 1) is ignored: (2 * NLL0 + 0.5 * NLL1) / (2 + 0.5). */
    expect_near((2 * NLL0 + 0.5 * NLL1) / 2.5, at(out, 0), 1e-6, "mean", 0);
    ses_tensor_release(out);
    loss_graph_done(&lg);

    loss_graph(&lg, SES_F32, SES_I64, 2, sdims, 1, "none", NULL);
    fetch = ses_node_output(lg.loss, 0);
    if (loss_eval(&lg, scores, labels, weights, NULL, &fetch, 1, &out) != SES_OK)
        fail_msg("%s", ses_last_error());
    expect_near(2 * NLL0, at(out, 0), 1e-6, "none", 0);
    expect_near(0.5 * NLL1, at(out, 1), 1e-6, "none", 1);
    expect_near(1.0 * (log(exp(5.0) + 2.0) - 0.0), at(out, 2), 1e-5, "none", 2);
    ses_tensor_release(out);
    loss_graph_done(&lg);
    ses_tensor_release(scores);
    ses_tensor_release(labels);
    ses_tensor_release(weights);
}

/* A label outside [0, C) that is not ignore_index fails the eval naming node, position, value. */
static void a_label_out_of_range_is_an_error_naming_the_node_position_and_value(void **state) {
    static const double scores_v[12] = {0};
    static const int64_t labels_v[] = {0, 1, 2, 3};
    static const int32_t labels32_v[] = {0, -1, 0, 0};
    const int64_t sdims[] = {2, 3, 2}, ldims[] = {2, 2};
    loss_graph_t lg;
    ses_tensor_t *scores = make(SES_F64, 3, sdims, scores_v);
    ses_tensor_t *labels = make(SES_I64, 2, ldims, labels_v);
    ses_tensor_t *out = NULL;
    ses_edge_t fetch;
    ses_status_t st;

    (void)state;
    loss_graph(&lg, SES_F64, SES_I64, 3, sdims, 0, "mean", NULL);
    fetch = ses_node_output(lg.loss, 0);
    st = loss_eval(&lg, scores, labels, NULL, NULL, &fetch, 1, &out);
    assert_int_equal(st, SES_INVALID_ARGUMENT);
    assert_null(out);
    assert_contains(ses_last_error(), "SoftmaxCrossEntropyLoss \"xent\"");
    assert_contains(ses_last_error(), "label 3 at position [1,1] is out of range [0, 3)");
    loss_graph_done(&lg);
    ses_tensor_release(labels);

    /* i32 labels, and a negative one with an ignore_index that does not match it. */
    {
        const int64_t ignore = 2;
        labels = make(SES_I32, 2, ldims, labels32_v);
        loss_graph(&lg, SES_F64, SES_I32, 3, sdims, 0, "none", &ignore);
        fetch = ses_node_output(lg.loss, 0);
        st = loss_eval(&lg, scores, labels, NULL, NULL, &fetch, 1, &out);
        assert_int_equal(st, SES_INVALID_ARGUMENT);
        assert_contains(
            ses_last_error(),
            "label -1 at position [0,1] is out of range [0, 3) and is not ignore_index");
        loss_graph_done(&lg);
        ses_tensor_release(labels);
    }
    ses_tensor_release(scores);
}

/*
 * NegativeLogLikelihoodLoss picks -weight[target] * input[target]; ignored positions add nothing
 * and are not counted by the mean. Its gradient is -weight[target] * dloss (divided by the
 * counted weights for the mean) at the target class, 0 elsewhere. Input [3, 3], targets
 * {2, -1, 0} with ignore_index -1, weights {0.5, 1, 2}.
 */
static void the_nll_loss_and_its_gradient_pick_the_weighted_target_entries(void **state) {
    static const double input_v[] = {-1, -2, -3, -4, -5, -6, -7, -8, -9};
    static const int64_t target_v[] = {2, -1, 0};
    static const double weight_v[] = {0.5, 1, 2};
    static const char *const reductions[] = {"mean", "sum", "none"};
    const int64_t idims[] = {3, 3}, tdims[] = {3}, wdims[] = {3};
    /* Counted: row 0 (class 2, weight 2, input -3) and row 2 (class 0, weight 0.5, input -7). */
    const double want_loss[3][3] = {
        {(2 * 3 + 0.5 * 7) / 2.5, 0, 0}, {2 * 3 + 0.5 * 7, 0, 0}, {6, 0, 3.5}};
    const double scale[3] = {1 / 2.5, 1, 1};

    (void)state;
    for (int r = 0; r < 3; r++) {
        const int none = r == 2;
        const double dloss_v[3] = {1.5, 7, -2};
        ses_graph_t *g = NULL;
        ses_session_t *s = NULL;
        ses_edge_t in[4], loss, grad, fetch[2];
        ses_attr_t attrs[2] = {ses_attr_string("reduction", reductions[r]),
                               ses_attr_int("ignore_index", -1)};
        ses_tensor_t *input = make(SES_F64, 2, idims, input_v);
        ses_tensor_t *target = make(SES_I64, 1, tdims, target_v);
        ses_tensor_t *weight = make(SES_F64, 1, wdims, weight_v);
        ses_tensor_t *dloss = make(SES_F64, none ? 1 : 0, tdims, dloss_v);
        ses_tensor_t *out[2] = {NULL, NULL};
        ses_feed_t feeds[4];
        const char *devices[] = {"cpu"};

        assert_int_equal(ses_graph_create(&g), SES_OK);
        assert_int_equal(ses_graph_placeholder(g, "input", SES_F64, 2, idims, &in[0]), SES_OK);
        assert_int_equal(ses_graph_placeholder(g, "target", SES_I64, 1, tdims, &in[1]), SES_OK);
        assert_int_equal(ses_graph_placeholder(g, "weight", SES_F64, 1, wdims, &in[2]), SES_OK);
        if (ses_graph_op(g, "NegativeLogLikelihoodLoss", "nll", in, 3, attrs, 2, &loss) != SES_OK)
            fail_msg("loss: %s", ses_last_error());
        assert_int_equal(ses_graph_placeholder(g, "dloss", SES_F64, none ? 1 : 0, tdims, &in[3]),
                         SES_OK);
        {
            ses_edge_t gin[4] = {in[3], in[0], in[1], in[2]};
            if (ses_graph_op(g, "NegativeLogLikelihoodLossGrad", "nll_grad", gin, 4, attrs, 2,
                             &grad) != SES_OK)
                fail_msg("grad: %s", ses_last_error());
        }
        if (ses_session_open(g, devices, 1, NULL, &s) != SES_OK)
            fail_msg("open: %s", ses_last_error());
        feeds[0] = (ses_feed_t){in[0], input};
        feeds[1] = (ses_feed_t){in[1], target};
        feeds[2] = (ses_feed_t){in[2], weight};
        feeds[3] = (ses_feed_t){in[3], dloss};
        fetch[0] = loss;
        fetch[1] = grad;
        if (ses_session_eval(s, fetch, 2, feeds, 4, NULL, 0, out) != SES_OK)
            fail_msg("%s: %s", reductions[r], ses_last_error());
        assert_int_equal(ses_tensor_count(out[0]), none ? 3 : 1);
        for (size_t i = 0; i < ses_tensor_count(out[0]); i++)
            expect_near(want_loss[r][i], at(out[0], i), 1e-12, reductions[r], i);
        for (size_t i = 0; i < 9; i++) {
            double want = 0;
            if (i == 2)
                want = -2 * scale[r] * dloss_v[0];
            else if (i == 6)
                want = -0.5 * scale[r] * (none ? dloss_v[2] : dloss_v[0]);
            expect_near(want, at(out[1], i), 1e-12, "dinput", i);
        }
        ses_tensor_release(out[0]);
        ses_tensor_release(out[1]);
        ses_tensor_release(input);
        ses_tensor_release(target);
        ses_tensor_release(weight);
        ses_tensor_release(dloss);
        ses_session_destroy(s);
        ses_graph_release(g);
    }
}

/*
 * The gradient node, fed the loss's own log_prob, against a central finite difference of
 * sum(dloss * loss) in f64, for each reduction, with ignore_index, weights, and [N, C, d].
 */
static void check_gradient(ses_dtype_t label_dtype, size_t rank, const int64_t *sdims,
                           int with_weights, const char *reduction, const int64_t *ignore,
                           const int64_t *labels_v) {
    const int none = strcmp(reduction, "none") == 0;
    size_t n_scores = 1, n_pos = 1;
    int64_t ldims[8], wdims[1] = {sdims[1]};
    double scores_v[256], weights_v[16], dloss_v[64];
    int32_t labels32[64];
    loss_graph_t lg;
    ses_tensor_t *grad = NULL, *labels, *weights = NULL, *dloss;
    ses_edge_t fetch;

    for (size_t d = 0; d < rank; d++)
        n_scores *= (size_t)sdims[d];
    ldims[0] = sdims[0];
    for (size_t d = 2; d < rank; d++)
        ldims[d - 1] = sdims[d];
    for (size_t d = 0; d < rank - 1; d++)
        n_pos *= (size_t)ldims[d];
    assert_true(n_scores <= 256 && n_pos <= 64 && sdims[1] <= 16);
    /* Fixed, irregular values, so that no two scores tie. */
    for (size_t i = 0; i < n_scores; i++)
        scores_v[i] = sin(1.7 * (double)i + 0.3) * 2.0;
    for (int64_t c = 0; c < sdims[1]; c++)
        weights_v[c] = 0.5 + 0.25 * (double)c;
    for (size_t p = 0; p < n_pos; p++) {
        dloss_v[p] = none ? 0.3 + 0.1 * (double)p : 1.7;
        labels32[p] = (int32_t)labels_v[p];
    }
    labels = label_dtype == SES_I64 ? make(SES_I64, rank - 1, ldims, labels_v)
                                    : make(SES_I32, rank - 1, ldims, labels32);
    if (with_weights)
        weights = make(SES_F64, 1, wdims, weights_v);
    dloss = make(SES_F64, none ? rank - 1 : 0, ldims, dloss_v);

    loss_graph(&lg, SES_F64, label_dtype, rank, sdims, with_weights, reduction, ignore);
    {
        ses_tensor_t *scores = make(SES_F64, rank, sdims, scores_v);
        fetch = ses_node_output(lg.grad, 0);
        if (loss_eval(&lg, scores, labels, weights, dloss, &fetch, 1, &grad) != SES_OK)
            fail_msg("%s: %s", reduction, ses_last_error());
        ses_tensor_release(scores);
    }
    assert_int_equal(ses_tensor_count(grad), n_scores);
    fetch = ses_node_output(lg.loss, 0);
    for (size_t i = 0; i < n_scores; i++) {
        const double h = 1e-6;
        double objective[2];
        for (int side = 0; side < 2; side++) {
            ses_tensor_t *scores, *loss = NULL;
            double saved = scores_v[i];
            scores_v[i] = saved + (side ? -h : h);
            scores = make(SES_F64, rank, sdims, scores_v);
            scores_v[i] = saved;
            if (loss_eval(&lg, scores, labels, weights, NULL, &fetch, 1, &loss) != SES_OK)
                fail_msg("%s", ses_last_error());
            objective[side] = 0;
            for (size_t p = 0; p < ses_tensor_count(loss); p++)
                objective[side] += dloss_v[p] * at(loss, p);
            ses_tensor_release(loss);
            ses_tensor_release(scores);
        }
        expect_near((objective[0] - objective[1]) / (2 * h), at(grad, i), 1e-6, reduction, i);
    }
    ses_tensor_release(grad);
    ses_tensor_release(labels);
    ses_tensor_release(weights);
    ses_tensor_release(dloss);
    loss_graph_done(&lg);
}

static void the_gradient_matches_a_finite_difference_of_the_loss(void **state) {
    const int64_t s2[] = {3, 4}, s3[] = {2, 3, 2}, ignore = 1, ignore_out = -100;
    const int64_t l2[] = {3, 0, 1}, l3[] = {0, 2, 1, 1};
    const int64_t l2_ignored[] = {3, -100, 1};

    (void)state;
    check_gradient(SES_I64, 2, s2, 0, "mean", NULL, l2);
    check_gradient(SES_I64, 2, s2, 0, "sum", NULL, l2);
    check_gradient(SES_I32, 2, s2, 0, "none", NULL, l2);
    check_gradient(SES_I64, 2, s2, 0, "mean", &ignore_out, l2_ignored);
    check_gradient(SES_I64, 2, s2, 1, "mean", NULL, l2);
    check_gradient(SES_I64, 2, s2, 1, "sum", &ignore, l2);
    check_gradient(SES_I64, 3, s3, 0, "mean", NULL, l3);
    check_gradient(SES_I32, 3, s3, 1, "none", &ignore, l3);
    check_gradient(SES_I64, 3, s3, 1, "mean", &ignore, l3);
}

/* =============================================================================================
 * The optimizer kernels through the driver ABI
 * ========================================================================================== */

typedef struct driver {
    void *lib;
    const ses_drv_api_t *api;
    struct ses_drv_host_ctx ctx;
    ses_drv_driver_t *driver;
    ses_drv_device_t *device;
} driver_t;

static int driver_teardown(void **state) {
    driver_t *d = *state;

    if (!d)
        return 0;
    test_driver_close(&(test_driver_t){d->lib, NULL, d->api, d->driver, d->device});
    free(d);
    *state = NULL;
    return 0;
}

static int driver_setup(void **state) {
    driver_t *d = calloc(1, sizeof *d);
    test_driver_t t;

    if (!d)
        return -1;
    *state = d;
    if (test_driver_open(&t, SES_CPU_DRIVER_PATH, &test_host, &d->ctx) != 0) {
        driver_teardown(state);
        return -1;
    }
    d->lib = t.lib;
    d->api = t.api;
    d->driver = t.driver;
    d->device = t.device;
    return 0;
}

static const ses_drv_kernel_t *find_kernel(driver_t *d, const char *op, const char *sig) {
    const ses_drv_kernel_t *table = NULL;
    uint32_t count = 0, stride = 0;

    assert_int_equal(d->api->get_kernels(d->device, &table, &count, &stride), SES_DRV_OK);
    for (uint32_t i = 0; i < count; i++) {
        const ses_drv_kernel_t *k =
            (const ses_drv_kernel_t *)(const void *)((const char *)table + (size_t)i * stride);
        if (!strcmp(k->op, op) && !strcmp(k->signature, sig))
            return k;
    }
    fail_msg("no kernel %s %s", op, sig);
    return NULL;
}

/* Attributes behind the node's attr callback: INT or FLOAT by name. */
typedef struct attr {
    const char *name; /* NULL ends the list */
    uint32_t type;
    int64_t i;
    double f;
} attr_t;

static int32_t read_attr(const ses_drv_node_t *node, const char *name, uint32_t type,
                         uint64_t *inout_count, void *values) {
    for (const attr_t *a = node->attr_ctx; a && a->name; a++) {
        if (strcmp(a->name, name) != 0)
            continue;
        if (a->type != type)
            return SES_DRV_INVALID_ARGUMENT;
        if (values && *inout_count >= 1)
            memcpy(values, type == SES_DRV_ATTR_INT ? (const void *)&a->i : (const void *)&a->f, 8);
        *inout_count = 1;
        return SES_DRV_OK;
    }
    return SES_DRV_NOT_FOUND;
}

/* One tensor argument on the host: dtype, dims, and its values (read back after the launch). */
typedef struct harg {
    uint32_t dtype;
    uint32_t rank;
    int64_t dims[4];
    void *data; /* count elements of dtype */
} harg_t;

static size_t harg_bytes(const harg_t *a) {
    size_t n = a->dtype == SES_DRV_DTYPE_F64 ? 8 : 4;
    for (uint32_t d = 0; d < a->rank; d++)
        n *= (size_t)a->dims[d];
    return n;
}

/*
 * Launches @p op / @p sig with @p n inputs and no outputs, as a host would: one buffer per input
 * (input @p alias_of[i] >= 0 shares that input's buffer instead), copied in, computed, copied
 * back into the host arrays. Returns the kernel's status; the message is in d->ctx.
 */
static int32_t launch_inplace(driver_t *d, const char *op, const char *sig, const attr_t *attrs,
                              harg_t *in, uint32_t n, const int *alias_of) {
    const ses_drv_kernel_t *k = find_kernel(d, op, sig);
    ses_drv_tensor_desc_t desc[8];
    ses_drv_buffer_t *buf[8] = {0};
    uint64_t off[8] = {0};
    ses_drv_node_t node;
    ses_drv_launch_t launch;
    int32_t st;

    assert_true(n <= 8);
    memset(desc, 0, sizeof desc);
    for (uint32_t i = 0; i < n; i++) {
        size_t bytes = harg_bytes(&in[i]);
        desc[i].struct_size = sizeof desc[i];
        desc[i].dtype = in[i].dtype;
        desc[i].rank = in[i].rank;
        desc[i].dims = in[i].dims;
        if (alias_of && alias_of[i] >= 0) {
            buf[i] = buf[alias_of[i]];
            continue;
        }
        assert_int_equal(d->api->alloc(d->device, bytes ? bytes : 1, SES_DRV_MEM_DEVICE, &buf[i]),
                         SES_DRV_OK);
        if (bytes)
            assert_int_equal(d->api->copy_h2d(d->device, NULL, in[i].data, buf[i], 0, bytes),
                             SES_DRV_OK);
    }
    memset(&node, 0, sizeof node);
    node.struct_size = sizeof node;
    node.op = op;
    node.name = "opt";
    node.n_inputs = n;
    node.n_outputs = 0;
    node.inputs = desc;
    node.outputs = NULL; /* no outputs: the kernel must not read the arrays */
    node.attr = read_attr;
    node.attr_ctx = attrs;
    memset(&launch, 0, sizeof launch);
    launch.struct_size = sizeof launch;
    launch.node = &node;
    launch.inputs = buf;
    launch.input_offsets = off;
    launch.outputs = NULL;
    launch.output_offsets = NULL;
    memset(&d->ctx, 0, sizeof d->ctx);
    st = k->compute(d->device, NULL, &launch);
    for (uint32_t i = 0; i < n; i++) {
        size_t bytes = harg_bytes(&in[i]);
        if (alias_of && alias_of[i] >= 0)
            continue;
        if (st == SES_DRV_OK && bytes)
            assert_int_equal(d->api->copy_d2h(d->device, NULL, buf[i], 0, in[i].data, bytes),
                             SES_DRV_OK);
        d->api->free(d->device, buf[i]);
    }
    return st;
}

static harg_t vec32(float *data, int64_t n) {
    harg_t a = {SES_DRV_DTYPE_F32, 1, {n}, data};
    return a;
}

static harg_t vec64(double *data, int64_t n) {
    harg_t a = {SES_DRV_DTYPE_F64, 1, {n}, data};
    return a;
}

static harg_t scalar32(float *data) {
    harg_t a = {SES_DRV_DTYPE_F32, 0, {0}, data};
    return a;
}

static harg_t scalar64(double *data) {
    harg_t a = {SES_DRV_DTYPE_F64, 0, {0}, data};
    return a;
}

#define LAUNCH_OK(d, op, sig, attrs, in, n)                                             \
    do {                                                                                \
        int32_t st_ = launch_inplace((d), (op), (sig), (attrs), (in), (n), NULL);       \
        if (st_ != SES_DRV_OK)                                                          \
            fail_msg("%s %s returned %d: %s", (op), (sig), (int)st_, (d)->ctx.message); \
    } while (0)

/* var -= lr * grad, in place; grad and lr are left alone. */
static void sgd_subtracts_the_scaled_gradient_in_place(void **state) {
    driver_t *d = *state;
    float var[4] = {1.0f, -2.0f, 0.5f, 3.0f};
    float grad[4] = {0.5f, 1.0f, -2.0f, 0.0f};
    float lr = 0.1f;
    harg_t in[3] = {vec32(var, 4), vec32(grad, 4), scalar32(&lr)};
    const float want[4] = {0.95f, -2.1f, 0.7f, 3.0f};

    LAUNCH_OK(d, "SGD", "f32,f32,f32->", NULL, in, 3);
    for (size_t i = 0; i < 4; i++)
        expect_near(want[i], var[i], 1e-6, "var", i);
    assert_true(grad[2] == -2.0f && lr == 0.1f);

    /* f64, and an empty var is a no-op that succeeds. */
    double v64[2] = {1.0, 2.0}, g64[2] = {4.0, -4.0}, lr64 = 0.25;
    harg_t in64[3] = {vec64(v64, 2), vec64(g64, 2), scalar64(&lr64)};
    LAUNCH_OK(d, "SGD", "f64,f64,f64->", NULL, in64, 3);
    assert_true(v64[0] == 0.0 && v64[1] == 3.0);
    in64[0].dims[0] = 0;
    in64[1].dims[0] = 0;
    LAUNCH_OK(d, "SGD", "f64,f64,f64->", NULL, in64, 3);
}

/*
 * velocity = momentum * velocity + grad; var -= lr * velocity, or with Nesterov
 * var -= lr * (grad + momentum * velocity). Two steps, so the velocity carries over.
 */
static void momentum_keeps_a_velocity_with_and_without_nesterov(void **state) {
    driver_t *d = *state;

    for (int nesterov = 0; nesterov <= 1; nesterov++) {
        double var[3] = {1.0, 2.0, -1.0}, vel[3] = {0.0, 0.5, 0.0};
        const double grads[2][3] = {{1.0, -1.0, 0.5}, {0.5, 0.5, -0.5}};
        double want_var[3] = {1.0, 2.0, -1.0}, want_vel[3] = {0.0, 0.5, 0.0};
        double lr = 0.1, grad[3];
        const attr_t attrs[] = {{"momentum", SES_DRV_ATTR_FLOAT, 0, 0.5},
                                {"nesterov", SES_DRV_ATTR_INT, nesterov, 0},
                                {NULL, 0, 0, 0}};
        harg_t in[4] = {vec64(var, 3), vec64(grad, 3), scalar64(&lr), vec64(vel, 3)};

        for (int step = 0; step < 2; step++) {
            memcpy(grad, grads[step], sizeof grad);
            LAUNCH_OK(d, "Momentum", "f64,f64,f64,f64->", attrs, in, 4);
            for (size_t i = 0; i < 3; i++) {
                want_vel[i] = 0.5 * want_vel[i] + grad[i];
                want_var[i] -= lr * (nesterov ? grad[i] + 0.5 * want_vel[i] : want_vel[i]);
                expect_near(want_vel[i], vel[i], 1e-15, "velocity", i);
                expect_near(want_var[i], var[i], 1e-15, nesterov ? "nesterov var" : "var", i);
            }
        }
    }
    /* By hand, step 1 without Nesterov: velocity (1, -0.75, 0.5), var (0.9, 2.075, -1.05). */
    {
        float var[3] = {1.0f, 2.0f, -1.0f}, vel[3] = {0.0f, 0.5f, 0.0f};
        float grad[3] = {1.0f, -1.0f, 0.5f}, lr = 0.1f;
        const attr_t attrs[] = {{"momentum", SES_DRV_ATTR_FLOAT, 0, 0.5}, {NULL, 0, 0, 0}};
        harg_t in[4] = {vec32(var, 3), vec32(grad, 3), scalar32(&lr), vec32(vel, 3)};
        LAUNCH_OK(d, "Momentum", "f32,f32,f32,f32->", attrs, in, 4);
        expect_near(1.0, vel[0], 1e-7, "vel", 0);
        expect_near(-0.75, vel[1], 1e-7, "vel", 1);
        expect_near(0.5, vel[2], 1e-7, "vel", 2);
        expect_near(0.9, var[0], 1e-6, "var", 0);
        expect_near(2.075, var[1], 1e-6, "var", 1);
        expect_near(-1.05, var[2], 1e-6, "var", 2);
    }
}

/*
 * Adam over three steps, m, v and t carried between them: t counts up, and the bias
 * corrections 1 - beta^t make the first step move each element by about lr against its
 * gradient's sign, whatever the gradient's size.
 */
static void adam_corrects_its_bias_over_three_steps(void **state) {
    driver_t *d = *state;
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8, lr = 0.01;
    const attr_t attrs[] = {{"beta1", SES_DRV_ATTR_FLOAT, 0, b1},
                            {"beta2", SES_DRV_ATTR_FLOAT, 0, b2},
                            {"epsilon", SES_DRV_ATTR_FLOAT, 0, eps},
                            {NULL, 0, 0, 0}};
    const double grads[3][4] = {
        {100.0, -0.001, 3.0, 0.5}, {50.0, 0.002, -3.0, 0.5}, {-10.0, 0.001, 1.0, 0.25}};
    double var[4] = {1.0, 1.0, -2.0, 0.0}, m[4] = {0}, v[4] = {0}, t = 0, grad[4], lrv = lr;
    double want_var[4] = {1.0, 1.0, -2.0, 0.0}, want_m[4] = {0}, want_v[4] = {0};
    harg_t in[6] = {vec64(var, 4), vec64(grad, 4), scalar64(&lrv),
                    vec64(m, 4),   vec64(v, 4),    scalar64(&t)};

    for (int step = 1; step <= 3; step++) {
        memcpy(grad, grads[step - 1], sizeof grad);
        LAUNCH_OK(d, "Adam", "f64,f64,f64,f64,f64,f64->", attrs, in, 6);
        assert_true(t == (double)step);
        const double c1 = 1 - pow(b1, step), c2 = 1 - pow(b2, step);
        for (size_t i = 0; i < 4; i++) {
            want_m[i] = b1 * want_m[i] + (1 - b1) * grad[i];
            want_v[i] = b2 * want_v[i] + (1 - b2) * grad[i] * grad[i];
            want_var[i] -= lr * (want_m[i] / c1) / (sqrt(want_v[i] / c2) + eps);
            expect_near(want_m[i], m[i], 1e-12, "m", i);
            expect_near(want_v[i], v[i], 1e-12, "v", i);
            expect_near(want_var[i], var[i], 1e-12, "var", i);
        }
        if (step == 1) {
            /* m/(1 - b1) = g and v/(1 - b2) = g^2: each element moves by lr against sign(g). */
            expect_near(1.0 - lr, var[0], 1e-8, "step 1 var", 0);
            expect_near(1.0 + lr, var[1], 1e-5, "step 1 var", 1);
            expect_near(-2.0 - lr, var[2], 1e-8, "step 1 var", 2);
            expect_near(0.0 - lr, var[3], 1e-8, "step 1 var", 3);
        }
    }

    /* f32 with the default attributes gives the same numbers to f32 precision. */
    {
        float v32[2] = {1.0f, -1.0f}, g32[2] = {0.5f, 2.0f}, m32[2] = {0}, s32[2] = {0}, t32 = 0;
        float lr32 = 0.01f;
        harg_t in32[6] = {vec32(v32, 2), vec32(g32, 2), scalar32(&lr32),
                          vec32(m32, 2), vec32(s32, 2), scalar32(&t32)};
        for (int step = 0; step < 3; step++)
            LAUNCH_OK(d, "Adam", "f32,f32,f32,f32,f32,f32->", NULL, in32, 6);
        assert_true(t32 == 3.0f);
        /* A constant gradient keeps m/(1 - b1^t) = g and v/(1 - b2^t) = g^2: 3 steps of lr. */
        expect_near(1.0 - 0.03, v32[0], 1e-5, "f32 var", 0);
        expect_near(-1.0 - 0.03, v32[1], 1e-5, "f32 var", 1);
    }
}

/* In-place inputs must not share bytes with another argument; shapes and attributes are
 * checked and named. */
static void optimizer_launches_are_checked(void **state) {
    driver_t *d = *state;
    float var[4] = {0}, grad[4] = {0}, lr = 0.1f, vel[4] = {0}, other[3] = {0};
    harg_t in[4] = {vec32(var, 4), vec32(grad, 4), scalar32(&lr), vec32(vel, 4)};
    const int grad_is_var[4] = {-1, 0, -1, -1};
    const int vel_is_var[4] = {-1, -1, -1, 0};
    int32_t st;

    st = launch_inplace(d, "SGD", "f32,f32,f32->", NULL, in, 3, grad_is_var);
    assert_int_equal(st, SES_DRV_INVALID_ARGUMENT);
    assert_contains(d->ctx.message, "SGD \"opt\": input 0");
    assert_contains(d->ctx.message, "overlaps input 1");
    st = launch_inplace(d, "Momentum", "f32,f32,f32,f32->", NULL, in, 4, vel_is_var);
    assert_int_equal(st, SES_DRV_INVALID_ARGUMENT);
    assert_contains(d->ctx.message, "overlaps input 3");

    in[1] = vec32(other, 3);
    st = launch_inplace(d, "SGD", "f32,f32,f32->", NULL, in, 3, NULL);
    assert_int_equal(st, SES_DRV_INVALID_ARGUMENT);
    assert_string_equal(d->ctx.message,
                        "SGD \"opt\": input 1 (grad) is [3]; it must be var's shape [4]");
    in[1] = vec32(grad, 4);
    in[2] = vec32(&lr, 1);
    st = launch_inplace(d, "SGD", "f32,f32,f32->", NULL, in, 3, NULL);
    assert_int_equal(st, SES_DRV_INVALID_ARGUMENT);
    assert_contains(d->ctx.message, "input 2 (lr) is [1]; it must be a scalar []");
    in[2] = scalar32(&lr);

    /* A launch bound to the wrong entry names both signatures. */
    st = launch_inplace(d, "SGD", "f64,f64,f64->", NULL, in, 3, NULL);
    assert_int_equal(st, SES_DRV_INVALID_ARGUMENT);
    assert_contains(d->ctx.message,
                    "inputs are f32, f32, f32, no outputs, but this kernel is f64,f64,f64->");
    st = launch_inplace(d, "SGD", "f32,f32,f32->", NULL, in, 2, NULL);
    assert_int_equal(st, SES_DRV_INVALID_ARGUMENT);
    assert_contains(d->ctx.message, "takes 3 inputs and 0 outputs");

    {
        const attr_t bad[] = {{"nesterov", SES_DRV_ATTR_INT, 2, 0}, {NULL, 0, 0, 0}};
        st = launch_inplace(d, "Momentum", "f32,f32,f32,f32->", bad, in, 4, NULL);
        assert_int_equal(st, SES_DRV_INVALID_ARGUMENT);
        assert_contains(d->ctx.message, "attribute nesterov is 2");
    }
}

/* The loss entries: with one or two outputs, i32 or i64 labels, with or without weights; the
 * NLL loss with one output. */
static void the_cpu_driver_offers_every_training_signature(void **state) {
    driver_t *d = *state;
    static const char *const want[][2] = {
        {"SoftmaxCrossEntropyLoss", "f32,i64->f32"},
        {"SoftmaxCrossEntropyLoss", "f32,i64->f32,f32"},
        {"SoftmaxCrossEntropyLoss", "f64,i32,f64->f64,f64"},
        {"SoftmaxCrossEntropyLoss", "f64,i64,f64->f64"},
        {"SoftmaxCrossEntropyLossGrad", "f32,f32,i64->f32"},
        {"SoftmaxCrossEntropyLossGrad", "f64,f64,i32,f64->f64"},
        {"NegativeLogLikelihoodLoss", "f32,i64->f32"},
        {"NegativeLogLikelihoodLoss", "f64,i32,f64->f64"},
        {"NegativeLogLikelihoodLossGrad", "f32,f32,i64->f32"},
        {"NegativeLogLikelihoodLossGrad", "f64,f64,i32,f64->f64"},
        {"SGD", "f32,f32,f32->"},
        {"Momentum", "f64,f64,f64,f64->"},
        {"Adam", "f32,f32,f32,f32,f32,f32->"},
    };

    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const ses_drv_kernel_t *k = find_kernel(d, want[i][0], want[i][1]);
        assert_null(k->create);
        assert_null(k->destroy);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_loss_infers_a_scalar_or_per_position_loss_and_log_prob),
        cmocka_unit_test(the_loss_passes_weights_only_when_given),
        cmocka_unit_test(the_loss_rejects_bad_shapes_dtypes_and_attributes_naming_them),
        cmocka_unit_test(the_gradient_checks_dloss_against_the_reduction),
        cmocka_unit_test(the_nll_loss_infers_like_the_softmax_loss_and_names_its_input),
        cmocka_unit_test(optimizers_have_no_outputs_and_mark_their_in_place_inputs),
        cmocka_unit_test(
            optimizers_refuse_mismatched_state_and_a_learning_rate_that_is_not_a_scalar),
        cmocka_unit_test(matmul_grad_sgd_infers_as_sgd_of_matmul_grad),
        cmocka_unit_test(matmul_grad_sgd_refuses_what_either_op_would_naming_the_input),
        cmocka_unit_test(an_optimizer_node_has_no_outputs_in_the_graph),
        cmocka_unit_test(the_loss_is_the_mean_sum_or_each_negative_log_probability),
        cmocka_unit_test(the_loss_takes_the_class_axis_1_of_higher_rank_scores),
        cmocka_unit_test(ignored_positions_add_nothing_and_are_not_counted_by_the_mean),
        cmocka_unit_test(weights_scale_each_position_and_the_mean_divides_by_their_sum),
        cmocka_unit_test(a_label_out_of_range_is_an_error_naming_the_node_position_and_value),
        cmocka_unit_test(the_gradient_matches_a_finite_difference_of_the_loss),
        cmocka_unit_test(the_nll_loss_and_its_gradient_pick_the_weighted_target_entries),
        cmocka_unit_test_setup_teardown(sgd_subtracts_the_scaled_gradient_in_place, driver_setup,
                                        driver_teardown),
        cmocka_unit_test_setup_teardown(momentum_keeps_a_velocity_with_and_without_nesterov,
                                        driver_setup, driver_teardown),
        cmocka_unit_test_setup_teardown(adam_corrects_its_bias_over_three_steps, driver_setup,
                                        driver_teardown),
        cmocka_unit_test_setup_teardown(optimizer_launches_are_checked, driver_setup,
                                        driver_teardown),
        cmocka_unit_test_setup_teardown(the_cpu_driver_offers_every_training_signature,
                                        driver_setup, driver_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
