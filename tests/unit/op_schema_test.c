/*
 * Op schemas and shape inference: for every op a hand-checked success (output type and the
 * attributes lowered for kernels), broadcasting, scalars and empty tensors, and each class of
 * error with its code and full message, which must name the node and both sides.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <session/status.h>

#include "ops/op_schema.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* One inference call: inputs, their known values, the node's attributes and the context. */
typedef struct run {
    ses__type_t in[SES__MAX_INPUTS];
    const void *values[SES__MAX_INPUTS];
    ses__attrs_t attrs;
    ses__infer_ctx_t ctx;
    char text[256];
} run_t;

/* A type of @p rank dims given as ints after it: ty(SES_F32, 2, 3, 4) is f32[3,4]. */
static ses__type_t ty(ses_dtype_t dtype, int rank, ...) {
    ses__type_t t = {dtype, (uint32_t)rank, {0}};
    va_list ap;

    va_start(ap, rank);
    for (int d = 0; d < rank; d++)
        t.dims[d] = va_arg(ap, int);
    va_end(ap);
    return t;
}

/* Input @p index is a 1-D i64 tensor whose value, @p values[0..n), is known. */
static void value_i64(run_t *r, size_t index, const int64_t *values, int n) {
    r->in[index] = ty(SES_I64, 1, n);
    r->values[index] = values;
}

static ses_status_t infer(run_t *r, const char *op, const char *node, size_t n_inputs) {
    const ses__op_schema_t *schema = ses__op_schema_find(op);

    assert_non_null(schema);
    ses__attrs_clear(&r->ctx.kernel_attrs);
    r->ctx.node = node;
    r->ctx.op = op;
    r->ctx.n_inputs = n_inputs;
    r->ctx.inputs = r->in;
    r->ctx.values = r->values;
    r->ctx.attrs = &r->attrs;
    r->ctx.n_outputs = 1;
    return ses__op_infer(schema, &r->ctx);
}

/* The first output, formatted: "f32[2,3]". */
static const char *out(run_t *r) {
    return ses__type_format(&r->ctx.outputs[0], r->text, sizeof r->text);
}

static void set_int(run_t *r, const char *name, int64_t value) {
    assert_int_equal(ses__attrs_set_int(&r->attrs, name, value), SES_OK);
}

static void set_float(run_t *r, const char *name, double value) {
    assert_int_equal(ses__attrs_set_float(&r->attrs, name, value), SES_OK);
}

static void set_ints(run_t *r, const char *name, const int64_t *values, size_t n) {
    assert_int_equal(ses__attrs_set_ints(&r->attrs, name, values, n), SES_OK);
}

static int64_t kernel_int(run_t *r, const char *name) {
    int64_t v = 0;
    assert_int_equal(ses__attrs_get_int(&r->ctx.kernel_attrs, name, &v), 1);
    return v;
}

static double kernel_float(run_t *r, const char *name) {
    double v = 0;
    assert_int_equal(ses__attrs_get_float(&r->ctx.kernel_attrs, name, &v), 1);
    return v;
}

/* A kernel ints attribute, formatted "[0,2]". */
static const char *kernel_ints(run_t *r, const char *name) {
    const int64_t *v = NULL;
    size_t n = 0, used = 0;

    assert_int_equal(ses__attrs_get_ints(&r->ctx.kernel_attrs, name, &v, &n), 1);
    used += (size_t)snprintf(r->text, sizeof r->text, "[");
    for (size_t i = 0; i < n; i++)
        used += (size_t)snprintf(r->text + used, sizeof r->text - used, "%s%lld", i ? "," : "",
                                 (long long)v[i]);
    snprintf(r->text + used, sizeof r->text - used, "]");
    return r->text;
}

/* Fails with @p code and exactly @p message, leaving no outputs or kernel attributes. */
static void assert_fails(run_t *r, const char *op, const char *node, size_t n_inputs,
                         ses_status_t code, const char *message) {
    assert_int_equal(infer(r, op, node, n_inputs), code);
    assert_string_equal(ses_last_error(), message);
    assert_int_equal(r->ctx.outputs[0].dtype, SES_DTYPE_INVALID);
    assert_int_equal(r->ctx.kernel_attrs.count, 0);
}

static void done(run_t *r) {
    ses__attrs_clear(&r->attrs);
    ses__attrs_clear(&r->ctx.kernel_attrs);
}

/* ---- the table ---------------------------------------------------------------------------- */

static void every_schema_has_an_infer_function_and_a_unique_name(void **state) {
    static const char *const expected[] = {
        "Identity",  "Add",        "Sub",       "Mul",       "Div",        "Pow",
        "Equal",     "Greater",    "Less",      "Where",     "Neg",        "Abs",
        "Relu",      "Exp",        "Log",       "Sqrt",      "Reciprocal", "Sigmoid",
        "Tanh",      "Softplus",   "Erf",       "LeakyRelu", "MatMul",     "Gemm",
        "ReduceSum", "ReduceMean", "ReduceMax", "ArgMax",    "Softmax",    "LogSoftmax",
        "Reshape",   "Flatten",    "Squeeze",   "Unsqueeze", "Transpose",  "Concat",
        "Slice",     "Gather",     "Cast",
        /* the other reductions of ONNX (reduce.c) */
        "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
        "ReduceSumSquare", "ArgMin",
        "SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLossGrad", "NegativeLogLikelihoodLoss",
        "NegativeLogLikelihoodLossGrad", "SGD", "Momentum", "Adam", "MatMulGradSGD",
        /* more elementwise ops (elementwise.c) */
        "Min", "Max", "Mod", "And", "Or", "Xor", "BitShift", "Not", "Sign", "IsNaN", "IsInf",
        "Round", "Floor", "Ceil", "Cos", "Sin", "Tan", "Acos", "Asin", "Atan", "Cosh", "Sinh",
        "Asinh", "Acosh",
        "Atanh", "PRelu",
        /* indexing and scans (gather.c, cumsum_trilu.c; Hardmax in softmax.c's table group) */
        "GatherElements", "ScatterElements", "GatherND", "ScatterND", "OneHot", "CumSum", "Trilu",
        "Hardmax",
        /* the gradient ops (grad_ops.c, tested in grad_ops_test.c) */
        "ExpandLike", "ReduceSumLike", "ScalarLike", "ReshapeLike", "CastLike", "ReluGrad",
        "LeakyReluGrad", "SigmoidGrad", "TanhGrad", "SoftmaxGrad", "LogSoftmaxGrad", "MatMulGrad",
        "ReduceGrad", "GatherGrad", "SliceGrad", "ConcatGrad",
        /* checkpoints as ops (checkpoint_ops.c, run by exec/host_ops.c) */
        "Save", "Restore",
        /* collectives (collective_ops.c, run by exec/host_ops.c; tested in collective_test.c) */
        "AllReduce", "RankWeight",
        /* CNN and model ops (cnn.c, tested in cnn_ops_test.c) */
        "Conv", "ConvGrad", "FusedConv", "FusedGemm", "MaxPool", "AveragePool", "MaxPoolGrad", "AveragePoolGrad",
        "GlobalAveragePool", "GlobalMaxPool", "GlobalAveragePoolGrad", "BatchNormalization",
        "Dropout", "LayerNormalization", "LayerNormalizationGrad", "Pad", "PadGrad", "Clip", "Expand", "Split", "Shape", "Size", "ConstantOfShape", "Range",
        /* the blocked-layout ops (nchwc.c; tested here and, compiled, in layout_test.c) */
        "NchwcConv", "NchwcMaxPool", "NchwcAveragePool", "NchwcGlobalAveragePool",
        "NchwcGlobalMaxPool", "NchwcReorderOutput",
        /* g-rnnq: recurrent layers (rnn.c) and quantization (quant.c); rnn_quant_test.c */
        "RNN", "GRU", "LSTM", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
        "MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv",
        /* ONNX sequences (sequence.c; tested in sequence_ops_test.c) */
        "SelectInput",
        /* group g-act: activations and their gradients, Sum, Mean, Det (activation.c), the
         * signal ops (signal.c); tested in activation_ops_test.c */
        "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "ThresholdedRelu", "Softsign",
        "Shrink", "Gelu", "Mish", "EluGrad", "SeluGrad", "CeluGrad", "HardSigmoidGrad",
        "HardSwishGrad", "ThresholdedReluGrad", "SoftsignGrad", "ShrinkGrad", "GeluGrad",
        "MishGrad", "Sum", "Mean", "Det", "HannWindow", "HammingWindow", "BlackmanWindow",
        "MelWeightMatrix", "DFT", "STFT",
        /* g-convfam (conv_transpose.c, spatial.c, norm.c; tested in spatial_ops_test.c) */
        "ConvTranspose", "ConvTransposeGrad", "DepthToSpace", "SpaceToDepth", "Tile", "MaxUnpool",
        "InstanceNormalization", "LRN", "MeanVarianceNormalization", "RoiAlign",
        /* output shapes that depend on input values (value_shape.c; value_shape_test.c) */
        "NonZero", "Compress", "TopK", "Unique", "NonMaxSuppression",
        /* reverse_sequence.c (tested in cpu_reverse_sequence_test.c) */
        "ReverseSequence",
        /* einsum.c (tested in cpu_einsum_test.c) */
        "Einsum",
        /* tfidf.c (tested in cpu_tfidf_test.c) */
        "TfIdfVectorizer",
        /* group g-resize (resize.c, tested in cpu_resize_test.c) */
        "Resize", "ResizeGrad", "GridSample",
        /* g-dtypes: elementwise.c, generators.c (tested in dtypes_ops_test.c) */
        "GreaterOrEqual", "LessOrEqual", "EyeLike", "Bernoulli", "RandomUniformLike",
        "RandomNormalLike",
        /* String tensors (issue #22): string_ops.c (tested in string_tensor_test.c) */
        "StringNormalizer",
    };
    size_t n = ses__op_schema_count();

    (void)state;
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!ses__op_schema_find(expected[i]))
            fail_msg("no schema for %s", expected[i]);
    assert_int_equal(n, sizeof expected / sizeof expected[0]);
    for (size_t i = 0; i < n; i++) {
        const ses__op_schema_t *s = ses__op_schema_at(i);
        assert_non_null(s);
        assert_non_null(s->name);
        assert_non_null(s->infer);
        assert_true(s->min_inputs <= s->max_inputs);
        assert_true(s->max_inputs <= SES__MAX_INPUTS);
        /* Ops without outputs are the in-place updates, and only they write inputs. */
        if (s->max_outputs == 0)
            assert_int_equal(s->default_outputs, 0);
        else
            assert_true(s->default_outputs >= 1 && s->default_outputs <= s->max_outputs);
        assert_true(s->inplace_inputs == 0 || s->max_outputs == 0);
        assert_true(s->max_outputs <= SES__MAX_OUTPUTS);
        assert_ptr_equal(ses__op_schema_find(s->name), s);
        for (size_t j = i + 1; j < n; j++)
            assert_string_not_equal(s->name, ses__op_schema_at(j)->name);
    }
    assert_null(ses__op_schema_at(n));
}

static void an_unknown_op_has_no_schema(void **state) {
    (void)state;
    assert_null(ses__op_schema_find("Nope"));
    assert_null(ses__op_schema_find("add"));
    assert_null(ses__op_schema_find(NULL));
    assert_non_null(ses__op_schema_find("MatMul"));
}

/* Shape-like inputs are exactly the ones whose values inference reads. */
static void value_inputs_mark_the_shape_like_inputs(void **state) {
    (void)state;
    assert_int_equal(ses__op_schema_find("Reshape")->value_inputs, 0x2);
    assert_int_equal(ses__op_schema_find("Slice")->value_inputs, 0x1e);
    assert_int_equal(ses__op_schema_find("ReduceSum")->value_inputs, 0x2);
    assert_int_equal(ses__op_schema_find("Squeeze")->value_inputs, 0x2);
    assert_int_equal(ses__op_schema_find("Unsqueeze")->value_inputs, 0x2);
    assert_int_equal(ses__op_schema_find("Gather")->value_inputs, 0);
    assert_int_equal(ses__op_schema_find("Concat")->max_inputs, SES__MAX_INPUTS);
}

static void type_format_writes_dtype_and_dims_with_empty_brackets_for_a_scalar(void **state) {
    char buffer[64], tiny[6];
    ses__type_t t = ty(SES_F32, 2, 2, 3), s = ty(SES_BOOL, 0), e = ty(SES_I64, 3, 4, 0, 5);

    (void)state;
    assert_string_equal(ses__type_format(&t, buffer, sizeof buffer), "f32[2,3]");
    assert_string_equal(ses__type_format(&s, buffer, sizeof buffer), "bool[]");
    assert_string_equal(ses__type_format(&e, buffer, sizeof buffer), "i64[4,0,5]");
    /* Too small a buffer truncates and stays terminated. */
    assert_string_equal(ses__type_format(&t, tiny, sizeof tiny), "f32[2");
}

static void type_count_is_one_for_a_scalar_and_zero_with_an_empty_dim(void **state) {
    ses__type_t t = ty(SES_F32, 2, 2, 3), s = ty(SES_F32, 0), e = ty(SES_F32, 2, 0, 7);

    (void)state;
    assert_int_equal(ses__type_count(&t), 6);
    assert_int_equal(ses__type_count(&s), 1);
    assert_int_equal(ses__type_count(&e), 0);
}

/* ---- counts and well-formed inputs -------------------------------------------------------- */

static void infer_checks_input_counts_naming_the_node(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 2);
    assert_fails(&r, "Gemm", "g", 1, SES_INVALID_ARGUMENT,
                 "Gemm \"g\": takes 2 to 3 inputs, got 1");
    assert_fails(&r, "Add", "a", 1, SES_INVALID_ARGUMENT, "Add \"a\": takes 2 inputs, got 1");
    assert_fails(&r, "Relu", "r", 2, SES_INVALID_ARGUMENT, "Relu \"r\": takes 1 input, got 2");
    assert_fails(&r, "Concat", "c", 0, SES_INVALID_ARGUMENT,
                 "Concat \"c\": takes at least 1 input, got 0");
    done(&r);
}

static void infer_checks_the_output_count(void **state) {
    run_t r = {0};
    const ses__op_schema_t *relu = ses__op_schema_find("Relu");

    (void)state;
    r.in[0] = ty(SES_F32, 1, 2);
    r.ctx = (ses__infer_ctx_t){.node = "r",
                               .op = "Relu",
                               .n_inputs = 1,
                               .inputs = r.in,
                               .attrs = &r.attrs,
                               .n_outputs = 2};
    assert_int_equal(ses__op_infer(relu, &r.ctx), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(), "Relu \"r\": takes 1 output, got 2");
    assert_int_equal(ses__op_infer(NULL, &r.ctx), SES_INVALID_ARGUMENT);
    done(&r);
}

static void a_required_input_may_not_be_absent(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 1, 2);
    r.in[1] = ty(SES_DTYPE_INVALID, 0);
    assert_fails(&r, "Add", "a", 2, SES_INVALID_ARGUMENT, "Add \"a\": input 1 is missing");
    done(&r);
}

static void malformed_input_types_are_refused(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, -1);
    assert_fails(&r, "Relu", "r", 1, SES_INVALID_ARGUMENT,
                 "Relu \"r\": input 0 is f32[2,-1]: a dimension is negative");
    r.in[0] = ty(SES_F32, 0);
    r.in[0].rank = SES_MAX_RANK + 1;
    assert_int_equal(infer(&r, "Relu", "r", 1), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "rank 9"));
    done(&r);
}

/* ---- elementwise -------------------------------------------------------------------------- */

static void identity_passes_any_dtype_scalars_and_empty_tensors(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_U16, 2, 0, 3);
    assert_int_equal(infer(&r, "Identity", "i", 1), SES_OK);
    assert_string_equal(out(&r), "u16[0,3]");
    r.in[0] = ty(SES_BOOL, 0);
    assert_int_equal(infer(&r, "Identity", "i", 1), SES_OK);
    assert_string_equal(out(&r), "bool[]");
    assert_null(r.ctx.kernel_op);
    assert_int_equal(r.ctx.kernel_inputs, 0);
    done(&r);
}

static void arithmetic_broadcasts_like_numpy(void **state) {
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div"};
    run_t r = {0};

    (void)state;
    for (size_t i = 0; i < 4; i++) {
        r.in[0] = ty(SES_I64, 3, 2, 1, 3);
        r.in[1] = ty(SES_I64, 2, 4, 1);
        assert_int_equal(infer(&r, ops[i], "n", 2), SES_OK);
        assert_string_equal(out(&r), "i64[2,4,3]");
    }
    r.in[0] = ty(SES_F32, 1, 3);
    r.in[1] = ty(SES_F32, 2, 2, 3);
    assert_int_equal(infer(&r, "Add", "n", 2), SES_OK);
    assert_string_equal(out(&r), "f32[2,3]");
    done(&r);
}

static void broadcasting_keeps_empty_dims_and_scalars(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 0, 3);
    r.in[1] = ty(SES_F32, 0);
    assert_int_equal(infer(&r, "Mul", "m", 2), SES_OK);
    assert_string_equal(out(&r), "f32[0,3]");
    r.in[0] = ty(SES_F32, 2, 0, 1);
    r.in[1] = ty(SES_F32, 2, 1, 5);
    assert_int_equal(infer(&r, "Mul", "m", 2), SES_OK);
    assert_string_equal(out(&r), "f32[0,5]");
    r.in[0] = ty(SES_F64, 0);
    r.in[1] = ty(SES_F64, 0);
    assert_int_equal(infer(&r, "Sub", "m", 2), SES_OK);
    assert_string_equal(out(&r), "f64[]");
    /* 0 is a size like any other: it does not stretch. */
    r.in[0] = ty(SES_F32, 1, 0);
    r.in[1] = ty(SES_F32, 1, 3);
    assert_fails(&r, "Mul", "m", 2, SES_INVALID_ARGUMENT,
                 "Mul \"m\": inputs cannot broadcast: A is f32[0], B is f32[3]");
    done(&r);
}

static void add_rejects_shapes_that_cannot_broadcast_naming_both(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    r.in[1] = ty(SES_F32, 1, 4);
    assert_fails(&r, "Add", "n3", 2, SES_INVALID_ARGUMENT,
                 "Add \"n3\": inputs cannot broadcast: A is f32[2,3], B is f32[4]");
    done(&r);
}

static void add_rejects_inputs_of_different_dtypes_naming_both(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 1, 2);
    r.in[1] = ty(SES_F64, 1, 2);
    assert_fails(&r, "Add", "a", 2, SES_INVALID_ARGUMENT,
                 "Add \"a\": dtypes differ: A is f32[2], B is f64[2]");
    done(&r);
}

static void a_dtype_outside_the_set_is_refused_listing_the_allowed_ones(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_BOOL, 1, 2);
    r.in[1] = ty(SES_BOOL, 1, 2);
    assert_fails(&r, "Add", "a", 2, SES_INVALID_ARGUMENT,
                 "Add \"a\": input 0 (A) is bool[2]; allowed dtypes: f32, f64, f16, bf16, i8, "
                 "i16, i32, i64, u8, u16, u32, u64");
    r.in[0] = ty(SES_U8, 0);
    r.in[1] = ty(SES_U8, 0);
    assert_fails(&r, "Pow", "p", 2, SES_INVALID_ARGUMENT,
                 "Pow \"p\": input 0 (X) is u8[]; allowed dtypes: f32, f64, f16, bf16, i32, i64");
    r.in[0] = ty(SES_F32, 1, 3);
    r.in[1] = ty(SES_F32, 0);
    assert_int_equal(infer(&r, "Pow", "p", 2), SES_OK);
    assert_string_equal(out(&r), "f32[3]");
    done(&r);
}

static void comparisons_give_bool_and_broadcast(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_I32, 2, 2, 1);
    r.in[1] = ty(SES_I32, 1, 3);
    assert_int_equal(infer(&r, "Less", "l", 2), SES_OK);
    assert_string_equal(out(&r), "bool[2,3]");
    r.in[0] = ty(SES_U8, 1, 4);
    r.in[1] = ty(SES_U8, 1, 4);
    assert_int_equal(infer(&r, "Greater", "g", 2), SES_OK);
    assert_string_equal(out(&r), "bool[4]");
    r.in[0] = ty(SES_BOOL, 0);
    r.in[1] = ty(SES_BOOL, 1, 0);
    assert_int_equal(infer(&r, "Equal", "e", 2), SES_OK);
    assert_string_equal(out(&r), "bool[0]");
    /* Booleans have no order. */
    assert_fails(&r, "Greater", "g", 2, SES_INVALID_ARGUMENT,
                 "Greater \"g\": input 0 (A) is bool[]; allowed dtypes: f32, f64, f16, bf16, i32, i64, u8");
    done(&r);
}

static void where_broadcasts_all_three_inputs(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_BOOL, 3, 2, 1, 1);
    r.in[1] = ty(SES_F32, 2, 3, 1);
    r.in[2] = ty(SES_F32, 1, 4);
    assert_int_equal(infer(&r, "Where", "w", 3), SES_OK);
    assert_string_equal(out(&r), "f32[2,3,4]");
    r.in[0] = ty(SES_BOOL, 0);
    r.in[1] = ty(SES_U8, 0);
    r.in[2] = ty(SES_U8, 1, 0);
    assert_int_equal(infer(&r, "Where", "w", 3), SES_OK);
    assert_string_equal(out(&r), "u8[0]");
    done(&r);
}

static void where_requires_a_bool_condition_and_equal_branches(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 1, 2);
    r.in[1] = ty(SES_F32, 1, 2);
    r.in[2] = ty(SES_F32, 1, 2);
    assert_fails(&r, "Where", "w", 3, SES_INVALID_ARGUMENT,
                 "Where \"w\": input 0 (condition) is f32[2]; allowed dtypes: bool");
    r.in[0] = ty(SES_BOOL, 1, 2);
    r.in[2] = ty(SES_I64, 1, 2);
    assert_fails(&r, "Where", "w", 3, SES_INVALID_ARGUMENT,
                 "Where \"w\": dtypes differ: X is f32[2], Y is i64[2]");
    r.in[2] = ty(SES_F32, 1, 3);
    assert_fails(&r, "Where", "w", 3, SES_INVALID_ARGUMENT,
                 "Where \"w\": inputs cannot broadcast: condition is bool[2], X is f32[2], Y is "
                 "f32[3]");
    done(&r);
}

static void unary_ops_keep_the_type_and_check_their_dtypes(void **state) {
    static const char *const any_numeric[] = {"Neg", "Abs", "Relu"};
    static const char *const float_only[] = {"Exp",  "Log",      "Sqrt",  "Reciprocal", "Sigmoid",
                                             "Tanh", "Softplus", "Erf",   "Round",      "Cos",
                                             "Sin",  "Tan",      "Acos",  "Asin",       "Atan",
                                             "Cosh", "Sinh",     "Asinh", "Acosh",      "Atanh",
                                             "Floor", "Ceil"};
    run_t r = {0};

    (void)state;
    for (size_t i = 0; i < 3; i++) {
        r.in[0] = ty(SES_I32, 2, 0, 2);
        assert_int_equal(infer(&r, any_numeric[i], "u", 1), SES_OK);
        assert_string_equal(out(&r), "i32[0,2]");
    }
    for (size_t i = 0; i < sizeof float_only / sizeof float_only[0]; i++) {
        r.in[0] = ty(SES_F64, 0);
        assert_int_equal(infer(&r, float_only[i], "u", 1), SES_OK);
        assert_string_equal(out(&r), "f64[]");
    }
    r.in[0] = ty(SES_I64, 1, 3);
    assert_fails(&r, "Exp", "e", 1, SES_INVALID_ARGUMENT,
                 "Exp \"e\": input 0 (X) is i64[3]; allowed dtypes: f32, f64, f16, bf16");
    assert_fails(&r, "Acosh", "a", 1, SES_INVALID_ARGUMENT,
                 "Acosh \"a\": input 0 (X) is i64[3]; allowed dtypes: f32, f64, f16, bf16");
    r.in[0] = ty(SES_BOOL, 1, 3);
    assert_fails(&r, "Relu", "r", 1, SES_INVALID_ARGUMENT,
                 "Relu \"r\": input 0 (X) is bool[3]; allowed dtypes: f32, f64, f16, bf16, i32, i64");
    done(&r);
}

static void set_string(run_t *r, const char *name, const char *value) {
    ses_attr_t a = ses_attr_string(name, value);
    assert_int_equal(ses__attrs_set(&r->attrs, &a), SES_OK);
}

static void min_and_max_take_any_number_of_inputs_and_broadcast_them_all(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_I8, 1, 3);
    assert_int_equal(infer(&r, "Min", "m", 1), SES_OK);
    assert_string_equal(out(&r), "i8[3]");
    r.in[0] = ty(SES_U64, 2, 2, 1);
    r.in[1] = ty(SES_U64, 1, 3);
    r.in[2] = ty(SES_U64, 0);
    assert_int_equal(infer(&r, "Max", "m", 3), SES_OK);
    assert_string_equal(out(&r), "u64[2,3]");
    r.in[0] = ty(SES_F16, 1, 0);
    r.in[1] = ty(SES_F16, 0);
    assert_int_equal(infer(&r, "Max", "m", 2), SES_OK);
    assert_string_equal(out(&r), "f16[0]");
    assert_fails(&r, "Max", "m", 0, SES_INVALID_ARGUMENT,
                 "Max \"m\": takes at least 1 input, got 0");
    done(&r);
}

static void min_and_max_name_the_input_that_differs(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 1, 2);
    r.in[1] = ty(SES_F32, 1, 2);
    r.in[2] = ty(SES_F64, 1, 2);
    assert_fails(&r, "Min", "m", 3, SES_INVALID_ARGUMENT,
                 "Min \"m\": dtypes differ: data_0 is f32[2], data_2 is f64[2]");
    r.in[2] = ty(SES_F32, 1, 3);
    assert_fails(&r, "Min", "m", 3, SES_INVALID_ARGUMENT,
                 "Min \"m\": inputs cannot broadcast: data_0 is f32[2], data_1 is f32[2], "
                 "data_2 is f32[3]");
    r.in[0] = ty(SES_BOOL, 1, 2);
    assert_fails(&r, "Max", "m", 1, SES_INVALID_ARGUMENT,
                 "Max \"m\": input 0 (data_0) is bool[2]; allowed dtypes: f32, f64, f16, bf16, "
                 "i8, i16, i32, i64, u8, u16, u32, u64");
    done(&r);
}

static void mod_lowers_fmod_and_refuses_the_floor_form_for_floats(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_I16, 2, 2, 3);
    r.in[1] = ty(SES_I16, 1, 3);
    assert_int_equal(infer(&r, "Mod", "m", 2), SES_OK);
    assert_string_equal(out(&r), "i16[2,3]");
    assert_int_equal(kernel_int(&r, "fmod"), 0);
    r.in[0] = ty(SES_F32, 1, 3);
    r.in[1] = ty(SES_F32, 0);
    assert_fails(&r, "Mod", "m", 2, SES_INVALID_ARGUMENT,
                 "Mod \"m\": attribute fmod must be 1 for floating-point inputs (A is f32[3])");
    set_int(&r, "fmod", 1);
    assert_int_equal(infer(&r, "Mod", "m", 2), SES_OK);
    assert_string_equal(out(&r), "f32[3]");
    assert_int_equal(kernel_int(&r, "fmod"), 1);
    done(&r);
}

static void bit_shift_lowers_its_direction_and_takes_unsigned_integers(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_U32, 1, 4);
    r.in[1] = ty(SES_U32, 0);
    assert_fails(&r, "BitShift", "b", 2, SES_INVALID_ARGUMENT,
                 "BitShift \"b\": attribute direction is required (\"LEFT\" or \"RIGHT\")");
    set_string(&r, "direction", "UP");
    assert_fails(&r, "BitShift", "b", 2, SES_INVALID_ARGUMENT,
                 "BitShift \"b\": attribute direction is \"UP\"; expected \"LEFT\" or \"RIGHT\"");
    set_string(&r, "direction", "RIGHT");
    assert_int_equal(infer(&r, "BitShift", "b", 2), SES_OK);
    assert_string_equal(out(&r), "u32[4]");
    assert_int_equal(kernel_int(&r, "direction"), 1);
    set_string(&r, "direction", "LEFT");
    assert_int_equal(infer(&r, "BitShift", "b", 2), SES_OK);
    assert_int_equal(kernel_int(&r, "direction"), 0);
    r.in[0] = ty(SES_I32, 1, 4);
    r.in[1] = ty(SES_I32, 0);
    assert_fails(&r, "BitShift", "b", 2, SES_INVALID_ARGUMENT,
                 "BitShift \"b\": input 0 (A) is i32[4]; allowed dtypes: u8, u16, u32, u64");
    done(&r);
}

static void logic_ops_take_and_give_bool(void **state) {
    static const char *const binary_ops[] = {"And", "Or", "Xor"};
    run_t r = {0};

    (void)state;
    for (size_t i = 0; i < 3; i++) {
        r.in[0] = ty(SES_BOOL, 2, 3, 1);
        r.in[1] = ty(SES_BOOL, 1, 4);
        assert_int_equal(infer(&r, binary_ops[i], "l", 2), SES_OK);
        assert_string_equal(out(&r), "bool[3,4]");
    }
    r.in[0] = ty(SES_BOOL, 0);
    assert_int_equal(infer(&r, "Not", "n", 1), SES_OK);
    assert_string_equal(out(&r), "bool[]");
    r.in[0] = ty(SES_U8, 1, 2);
    r.in[1] = ty(SES_U8, 1, 2);
    assert_fails(&r, "Xor", "x", 2, SES_INVALID_ARGUMENT,
                 "Xor \"x\": input 0 (A) is u8[2]; allowed dtypes: bool");
    assert_fails(&r, "Not", "n", 1, SES_INVALID_ARGUMENT,
                 "Not \"n\": input 0 (X) is u8[2]; allowed dtypes: bool");
    done(&r);
}

static void is_nan_and_is_inf_give_bool_and_sign_keeps_the_type(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F64, 2, 2, 3);
    assert_int_equal(infer(&r, "IsNaN", "n", 1), SES_OK);
    assert_string_equal(out(&r), "bool[2,3]");
    assert_int_equal(infer(&r, "IsInf", "i", 1), SES_OK);
    assert_string_equal(out(&r), "bool[2,3]");
    assert_int_equal(kernel_int(&r, "detect_negative"), 1);
    assert_int_equal(kernel_int(&r, "detect_positive"), 1);
    set_int(&r, "detect_negative", 0);
    assert_int_equal(infer(&r, "IsInf", "i", 1), SES_OK);
    assert_int_equal(kernel_int(&r, "detect_negative"), 0);
    assert_int_equal(kernel_int(&r, "detect_positive"), 1);
    set_int(&r, "detect_negative", 2);
    assert_fails(&r, "IsInf", "i", 1, SES_INVALID_ARGUMENT,
                 "IsInf \"i\": attribute detect_negative must be 0 or 1, got 2");
    r.in[0] = ty(SES_I32, 1, 2);
    assert_fails(&r, "IsNaN", "n", 1, SES_INVALID_ARGUMENT,
                 "IsNaN \"n\": input 0 (X) is i32[2]; allowed dtypes: f32, f64, f16, bf16");
    r.in[0] = ty(SES_I8, 1, 2);
    assert_int_equal(infer(&r, "Sign", "s", 1), SES_OK);
    assert_string_equal(out(&r), "i8[2]");
    done(&r);
}

static void leaky_relu_lowers_alpha_with_its_default(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    assert_int_equal(infer(&r, "LeakyRelu", "l", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,3]");
    assert_true(kernel_float(&r, "alpha") == 0.01);
    set_float(&r, "alpha", 0.2);
    assert_int_equal(infer(&r, "LeakyRelu", "l", 1), SES_OK);
    assert_true(kernel_float(&r, "alpha") == 0.2);
    done(&r);
}

/* PRelu's slope broadcasts to X, never X to the slope. */
static void prelu_broadcasts_the_slope_to_x_one_way_only(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    r.in[1] = ty(SES_F32, 2, 3, 1);
    assert_int_equal(infer(&r, "PRelu", "p", 2), SES_OK);
    assert_string_equal(out(&r), "f32[2,3,4]");
    r.ctx.outputs[0].dtype = SES_DTYPE_INVALID;
    r.in[0] = ty(SES_F32, 2, 3, 1);
    r.in[1] = ty(SES_F32, 2, 1, 4);
    assert_fails(&r, "PRelu", "p", 2, SES_INVALID_ARGUMENT,
                 "PRelu \"p\": slope must broadcast to X's shape: X is f32[3,1], slope is "
                 "f32[1,4]");
    r.in[1] = ty(SES_F64, 0);
    assert_fails(&r, "PRelu", "p", 2, SES_INVALID_ARGUMENT,
                 "PRelu \"p\": dtypes differ: X is f32[3,1], slope is f64[]");
    done(&r);
}

/* Y has X's shape, Mean and InvStdDev X's with the normalized dims 1; the kernel gets the axis
 * non-negative and epsilon. */
static void layer_normalization_infers_its_three_outputs(void **state) {
    const ses__op_schema_t *schema = ses__op_schema_find("LayerNormalization");
    run_t r = {0};
    char text[64];

    (void)state;
    assert_non_null(schema);
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    r.in[1] = ty(SES_F32, 2, 3, 4);
    r.in[2] = ty(SES_F32, 2, 3, 4);
    set_int(&r, "axis", -2);
    r.ctx.node = "ln";
    r.ctx.op = "LayerNormalization";
    r.ctx.n_inputs = 3;
    r.ctx.inputs = r.in;
    r.ctx.values = r.values;
    r.ctx.attrs = &r.attrs;
    r.ctx.n_outputs = 3;
    assert_int_equal(ses__op_infer(schema, &r.ctx), SES_OK);
    assert_string_equal(out(&r), "f32[2,3,4]");
    assert_string_equal(ses__type_format(&r.ctx.outputs[1], text, sizeof text), "f32[2,1,1]");
    assert_string_equal(ses__type_format(&r.ctx.outputs[2], text, sizeof text), "f32[2,1,1]");
    assert_int_equal(kernel_int(&r, "axis"), 1);
    assert_true(kernel_float(&r, "epsilon") == 1e-5);
    done(&r);
}

static void layer_normalization_names_a_mismatched_scale_or_bias(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    r.in[1] = ty(SES_F32, 1, 4);
    set_int(&r, "axis", 1);
    assert_fails(&r, "LayerNormalization", "ln", 2, SES_INVALID_ARGUMENT,
                 "LayerNormalization \"ln\": Scale must have X's dimensions from axis 1 on: X is "
                 "f32[2,3,4], Scale is f32[4]");
    r.in[1] = ty(SES_F32, 2, 3, 4);
    r.in[2] = ty(SES_F32, 1, 4);
    assert_fails(&r, "LayerNormalization", "ln", 3, SES_INVALID_ARGUMENT,
                 "LayerNormalization \"ln\": B must have Scale's shape: Scale is f32[3,4], B is "
                 "f32[4]");
    set_int(&r, "stash_type", 10);
    assert_fails(&r, "LayerNormalization", "ln", 2, SES_UNIMPLEMENTED,
                 "LayerNormalization \"ln\": attribute stash_type is 10; supported: 1 (float), "
                 "11 (double)");
    done(&r);
}

/* LayerNormalizationGrad gives dX (input 0) or dScale (input 1). */
static void layer_normalization_grad_gives_dx_or_dscale(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F64, 2, 5, 6);
    r.in[1] = ty(SES_F64, 2, 5, 6);
    r.in[2] = ty(SES_F64, 1, 6);
    set_int(&r, "input", 0);
    assert_int_equal(infer(&r, "LayerNormalizationGrad", "g", 3), SES_OK);
    assert_string_equal(out(&r), "f64[5,6]");
    assert_int_equal(kernel_int(&r, "input"), 0);
    set_int(&r, "input", 1);
    assert_int_equal(infer(&r, "LayerNormalizationGrad", "g", 3), SES_OK);
    assert_string_equal(out(&r), "f64[6]");
    r.ctx.outputs[0].dtype = SES_DTYPE_INVALID;
    set_int(&r, "input", 2);
    assert_fails(&r, "LayerNormalizationGrad", "g", 3, SES_INVALID_ARGUMENT,
                 "LayerNormalizationGrad \"g\": attribute input must be 0 (the gradient of X) or "
                 "1 (of Scale), got 2");
    set_int(&r, "input", 0);
    r.in[0] = ty(SES_F64, 2, 5, 5);
    assert_fails(&r, "LayerNormalizationGrad", "g", 3, SES_INVALID_ARGUMENT,
                 "LayerNormalizationGrad \"g\": dY must have X's shape: dY is f64[5,5], X is "
                 "f64[5,6]");
    done(&r);
}

static void an_attribute_of_the_wrong_type_is_named(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 1, 3);
    set_int(&r, "alpha", 1);
    assert_fails(&r, "LeakyRelu", "l", 1, SES_INVALID_ARGUMENT,
                 "LeakyRelu \"l\": attribute alpha must be of type float, got int");
    done(&r);
}

/* ---- MatMul and Gemm ---------------------------------------------------------------------- */

static void matmul_multiplies_matrices_and_broadcasts_batches(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 64, 784);
    r.in[1] = ty(SES_F32, 2, 784, 256);
    assert_int_equal(infer(&r, "MatMul", "fc1", 2), SES_OK);
    assert_string_equal(out(&r), "f32[64,256]");
    r.in[0] = ty(SES_F64, 4, 2, 1, 3, 4);
    r.in[1] = ty(SES_F64, 3, 5, 4, 6);
    assert_int_equal(infer(&r, "MatMul", "m", 2), SES_OK);
    assert_string_equal(out(&r), "f64[2,5,3,6]");
    done(&r);
}

static void matmul_promotes_and_removes_1d_operands(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 1, 4);
    r.in[1] = ty(SES_F32, 2, 4, 6);
    assert_int_equal(infer(&r, "MatMul", "m", 2), SES_OK);
    assert_string_equal(out(&r), "f32[6]");
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    r.in[1] = ty(SES_F32, 1, 4);
    assert_int_equal(infer(&r, "MatMul", "m", 2), SES_OK);
    assert_string_equal(out(&r), "f32[2,3]");
    r.in[0] = ty(SES_F32, 1, 4);
    r.in[1] = ty(SES_F32, 1, 4);
    assert_int_equal(infer(&r, "MatMul", "m", 2), SES_OK);
    assert_string_equal(out(&r), "f32[]");
    done(&r);
}

static void matmul_handles_empty_dimensions(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 0, 4);
    r.in[1] = ty(SES_F32, 2, 4, 5);
    assert_int_equal(infer(&r, "MatMul", "m", 2), SES_OK);
    assert_string_equal(out(&r), "f32[0,5]");
    /* An empty inner dimension gives a result of zeros, of full size. */
    r.in[0] = ty(SES_F32, 2, 3, 0);
    r.in[1] = ty(SES_F32, 2, 0, 5);
    assert_int_equal(infer(&r, "MatMul", "m", 2), SES_OK);
    assert_string_equal(out(&r), "f32[3,5]");
    done(&r);
}

static void matmul_reports_inner_dimensions_naming_both(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 64, 784);
    r.in[1] = ty(SES_F32, 2, 748, 256);
    assert_fails(&r, "MatMul", "fc1", 2, SES_INVALID_ARGUMENT,
                 "MatMul \"fc1\": inner dimensions differ: A is f32[64,784], B is f32[748,256]");
    done(&r);
}

static void matmul_rejects_batches_that_cannot_broadcast_and_scalars(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    r.in[1] = ty(SES_F32, 3, 5, 4, 6);
    assert_fails(&r, "MatMul", "m", 2, SES_INVALID_ARGUMENT,
                 "MatMul \"m\": batch dimensions cannot broadcast: A is f32[2,3,4], B is "
                 "f32[5,4,6]");
    r.in[0] = ty(SES_F32, 0);
    r.in[1] = ty(SES_F32, 1, 4);
    assert_fails(&r, "MatMul", "m", 2, SES_INVALID_ARGUMENT,
                 "MatMul \"m\": inputs must have at least 1 dimension: A is f32[], B is f32[4]");
    r.in[0] = ty(SES_I32, 2, 2, 2);
    r.in[1] = ty(SES_I32, 2, 2, 2);
    assert_fails(&r, "MatMul", "m", 2, SES_INVALID_ARGUMENT,
                 "MatMul \"m\": input 0 (A) is i32[2,2]; allowed dtypes: f32, f64, f16, bf16");
    done(&r);
}

static void gemm_transposes_and_lowers_all_four_attributes(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 4, 3); /* A' = [3,4] */
    r.in[1] = ty(SES_F32, 2, 5, 4); /* B' = [4,5] */
    set_int(&r, "transA", 1);
    set_int(&r, "transB", 1);
    set_float(&r, "alpha", 0.5);
    assert_int_equal(infer(&r, "Gemm", "g", 2), SES_OK);
    assert_string_equal(out(&r), "f32[3,5]");
    assert_int_equal(r.ctx.kernel_inputs, 0x3);
    assert_true(kernel_float(&r, "alpha") == 0.5);
    assert_true(kernel_float(&r, "beta") == 1.0);
    assert_int_equal(kernel_int(&r, "transA"), 1);
    assert_int_equal(kernel_int(&r, "transB"), 1);
    done(&r);
}

static void gemm_accepts_a_bias_that_broadcasts_one_way(void **state) {
    run_t r = {0};
    ses__type_t biases[] = {ty(SES_F64, 1, 5), ty(SES_F64, 2, 1, 5), ty(SES_F64, 2, 3, 1),
                            ty(SES_F64, 2, 3, 5), ty(SES_F64, 0)};

    (void)state;
    r.in[0] = ty(SES_F64, 2, 3, 4);
    r.in[1] = ty(SES_F64, 2, 4, 5);
    for (size_t i = 0; i < sizeof biases / sizeof biases[0]; i++) {
        r.in[2] = biases[i];
        assert_int_equal(infer(&r, "Gemm", "g", 3), SES_OK);
        assert_string_equal(out(&r), "f64[3,5]");
        assert_int_equal(r.ctx.kernel_inputs, 0x7);
        assert_int_equal(kernel_int(&r, "transA"), 0);
    }
    /* An empty optional C is as good as none. */
    r.in[2] = ty(SES_DTYPE_INVALID, 0);
    assert_int_equal(infer(&r, "Gemm", "g", 3), SES_OK);
    assert_int_equal(r.ctx.kernel_inputs, 0x3);
    done(&r);
}

static void gemm_rejects_bad_operands_and_attributes(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 3, 4);
    r.in[1] = ty(SES_F32, 2, 5, 6);
    assert_fails(&r, "Gemm", "g", 2, SES_INVALID_ARGUMENT,
                 "Gemm \"g\": inner dimensions differ: A is f32[3,4] (transA=0), B is f32[5,6] "
                 "(transB=0)");
    r.in[1] = ty(SES_F32, 2, 4, 5);
    r.in[2] = ty(SES_F32, 1, 3);
    assert_fails(&r, "Gemm", "g", 3, SES_INVALID_ARGUMENT,
                 "Gemm \"g\": C cannot broadcast to the product: C is f32[3], A * B is f32[3,5]");
    r.in[2] = ty(SES_F64, 1, 5);
    assert_fails(&r, "Gemm", "g", 3, SES_INVALID_ARGUMENT,
                 "Gemm \"g\": dtypes differ: A is f32[3,4], C is f64[5]");
    r.in[1] = ty(SES_F32, 1, 4);
    assert_fails(&r, "Gemm", "g", 2, SES_INVALID_ARGUMENT,
                 "Gemm \"g\": A and B must be 2-D: A is f32[3,4], B is f32[4]");
    r.in[1] = ty(SES_F32, 2, 4, 5);
    set_int(&r, "transA", 2);
    assert_fails(&r, "Gemm", "g", 2, SES_INVALID_ARGUMENT,
                 "Gemm \"g\": attribute transA must be 0 or 1, got 2");
    done(&r);
}

/* ---- reductions --------------------------------------------------------------------------- */

static void reduce_sum_reads_axes_from_its_input_and_lowers_them_sorted(void **state) {
    static const int64_t axes[] = {-1, 0, 2};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_I32, 3, 2, 3, 4);
    value_i64(&r, 1, axes, 3);
    assert_int_equal(infer(&r, "ReduceSum", "r", 2), SES_OK);
    assert_string_equal(out(&r), "i32[1,3,1]");
    assert_string_equal(kernel_ints(&r, "axes"), "[0,2]");
    assert_int_equal(kernel_int(&r, "keepdims"), 1);
    /* The axes input is for inference only. */
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    assert_null(r.ctx.kernel_op);
    set_int(&r, "keepdims", 0);
    assert_int_equal(infer(&r, "ReduceSum", "r", 2), SES_OK);
    assert_string_equal(out(&r), "i32[3]");
    assert_int_equal(kernel_int(&r, "keepdims"), 0);
    done(&r);
}

static void reduce_sum_without_axes_reduces_every_axis(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    set_int(&r, "keepdims", 0);
    assert_int_equal(infer(&r, "ReduceSum", "r", 1), SES_OK);
    assert_string_equal(out(&r), "f32[]");
    assert_string_equal(kernel_ints(&r, "axes"), "[0,1,2]");
    /* An empty axes input means the same, and needs no value: its type says it all. */
    value_i64(&r, 1, NULL, 0);
    assert_int_equal(infer(&r, "ReduceSum", "r", 2), SES_OK);
    assert_string_equal(out(&r), "f32[]");
    done(&r);
}

static void reduce_sum_with_noop_and_empty_axes_lowers_to_identity(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    set_int(&r, "noop_with_empty_axes", 1);
    assert_int_equal(infer(&r, "ReduceSum", "r", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,3]");
    assert_string_equal(r.ctx.kernel_op, "Identity");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    assert_int_equal(r.ctx.kernel_attrs.count, 0);
    done(&r);
}

static void reduce_works_on_scalars_and_empty_dims(void **state) {
    static const int64_t axis0[] = {0};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F64, 0);
    assert_int_equal(infer(&r, "ReduceSum", "r", 1), SES_OK);
    assert_string_equal(out(&r), "f64[]");
    assert_string_equal(kernel_ints(&r, "axes"), "[]");
    r.in[0] = ty(SES_F32, 2, 0, 3);
    value_i64(&r, 1, axis0, 1);
    assert_int_equal(infer(&r, "ReduceSum", "r", 2), SES_OK);
    assert_string_equal(out(&r), "f32[1,3]");
    set_ints(&r, "axes", axis0, 1);
    assert_int_equal(infer(&r, "ReduceMax", "r", 1), SES_OK);
    assert_string_equal(out(&r), "f32[1,3]");
    done(&r);
}

static void reduce_sum_needs_the_value_of_its_axes(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    r.in[1] = ty(SES_I64, 1, 1);
    assert_fails(&r, "ReduceSum", "r", 2, SES_INVALID_ARGUMENT,
                 "ReduceSum \"r\": input 1 (axes) must be a constant or fed");
    r.in[1] = ty(SES_I32, 1, 1);
    assert_fails(&r, "ReduceSum", "r", 2, SES_INVALID_ARGUMENT,
                 "ReduceSum \"r\": input 1 (axes) is i32[1]; allowed dtypes: i64");
    done(&r);
}

static void reduce_rejects_an_axis_out_of_range_naming_the_rank(void **state) {
    static const int64_t axes[] = {3};
    static const int64_t minus[] = {-4};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    value_i64(&r, 1, axes, 1);
    assert_fails(&r, "ReduceSum", "r", 2, SES_INVALID_ARGUMENT,
                 "ReduceSum \"r\": axes value 3 is out of range for rank 3 (valid: -3 to 2): "
                 "input is f32[2,3,4]");
    set_ints(&r, "axes", minus, 1);
    assert_fails(&r, "ReduceMean", "m", 1, SES_INVALID_ARGUMENT,
                 "ReduceMean \"m\": axes value -4 is out of range for rank 3 (valid: -3 to 2): "
                 "input is f32[2,3,4]");
    done(&r);
}

static void reduce_mean_and_max_take_axes_as_an_attribute(void **state) {
    static const int64_t axes[] = {1, -2, 2};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    set_ints(&r, "axes", axes, 3);
    assert_int_equal(infer(&r, "ReduceMean", "m", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,1,1]");
    assert_string_equal(kernel_ints(&r, "axes"), "[1,2]");
    set_int(&r, "keepdims", 0);
    r.in[0] = ty(SES_I64, 3, 2, 3, 4);
    assert_int_equal(infer(&r, "ReduceMax", "x", 1), SES_OK);
    assert_string_equal(out(&r), "i64[2]");
    assert_int_equal(kernel_int(&r, "keepdims"), 0);
    assert_fails(&r, "ReduceMean", "m", 1, SES_INVALID_ARGUMENT,
                 "ReduceMean \"m\": input 0 (data) is i64[2,3,4]; allowed dtypes: f32, f64, f16, bf16");
    done(&r);
}

static void reduce_refuses_the_other_opset_forms_as_unimplemented(void **state) {
    static const int64_t axes[] = {0};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 1, 3);
    value_i64(&r, 1, axes, 1);
    assert_fails(&r, "ReduceMean", "m", 2, SES_UNIMPLEMENTED,
                 "ReduceMean \"m\": axes as an input (the opset-18 form) is not supported; give "
                 "them as the axes attribute");
    set_ints(&r, "axes", axes, 1);
    assert_fails(&r, "ReduceSum", "s", 1, SES_UNIMPLEMENTED,
                 "ReduceSum \"s\": axes as an attribute (the opset-11 form) is not supported; "
                 "pass them as input 1");
    done(&r);
}

static void argmax_lowers_normalized_attributes_and_gives_i64(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    set_int(&r, "axis", -2);
    assert_int_equal(infer(&r, "ArgMax", "a", 1), SES_OK);
    assert_string_equal(out(&r), "i64[2,1,4]");
    assert_int_equal(kernel_int(&r, "axis"), 1);
    assert_int_equal(kernel_int(&r, "keepdims"), 1);
    assert_int_equal(kernel_int(&r, "select_last_index"), 0);
    set_int(&r, "keepdims", 0);
    set_int(&r, "select_last_index", 1);
    set_int(&r, "axis", -1);
    r.in[0] = ty(SES_I32, 2, 0, 3);
    assert_int_equal(infer(&r, "ArgMax", "a", 1), SES_OK);
    assert_string_equal(out(&r), "i64[0]");
    assert_int_equal(kernel_int(&r, "select_last_index"), 1);
    done(&r);
}

static void argmax_rejects_an_empty_axis_and_a_scalar(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 0);
    set_int(&r, "axis", 1);
    assert_fails(&r, "ArgMax", "a", 1, SES_INVALID_ARGUMENT,
                 "ArgMax \"a\": axis 1 has no elements to choose from: data is f32[2,0]");
    r.in[0] = ty(SES_F32, 0);
    set_int(&r, "axis", 0);
    assert_fails(&r, "ArgMax", "a", 1, SES_INVALID_ARGUMENT,
                 "ArgMax \"a\": axis 0 is out of range for rank 0 (a scalar has none): input is "
                 "f32[]");
    done(&r);
}

/* ReduceMin, ReduceProd, ReduceL1 and ReduceSumSquare take integers; ReduceL2, ReduceLogSum and
 * ReduceLogSumExp, whose results are square roots and logs, floats only. */
static void the_other_reductions_take_axes_as_an_attribute_with_their_dtypes(void **state) {
    static const char *const numeric[] = {"ReduceMin", "ReduceProd", "ReduceL1",
                                          "ReduceSumSquare"};
    static const char *const floats[] = {"ReduceL2", "ReduceLogSum", "ReduceLogSumExp"};
    static const int64_t axes[] = {-1, 0};
    char want[160];

    (void)state;
    for (size_t i = 0; i < 4; i++) {
        run_t r = {0};
        r.in[0] = ty(SES_I32, 3, 2, 3, 4);
        set_ints(&r, "axes", axes, 2);
        set_int(&r, "keepdims", 0);
        assert_int_equal(infer(&r, numeric[i], "r", 1), SES_OK);
        assert_string_equal(out(&r), "i32[3]");
        assert_string_equal(kernel_ints(&r, "axes"), "[0,2]");
        assert_int_equal(kernel_int(&r, "keepdims"), 0);
        done(&r);
    }
    for (size_t i = 0; i < 3; i++) {
        run_t r = {0};
        r.in[0] = ty(SES_F64, 3, 2, 3, 4);
        assert_int_equal(infer(&r, floats[i], "r", 1), SES_OK);
        assert_string_equal(out(&r), "f64[1,1,1]");
        assert_string_equal(kernel_ints(&r, "axes"), "[0,1,2]");
        r.in[0] = ty(SES_I64, 1, 5);
        snprintf(want, sizeof want,
                 "%s \"r\": input 0 (data) is i64[5]; allowed dtypes: f32, f64, f16, bf16",
                 floats[i]);
        assert_fails(&r, floats[i], "r", 1, SES_INVALID_ARGUMENT, want);
        done(&r);
    }
}

/* The opset-18 attribute noop_with_empty_axes holds for the attribute forms too. */
static void reduce_with_axes_attribute_and_noop_lowers_to_identity(void **state) {
    static const int64_t axes[] = {1};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    set_int(&r, "noop_with_empty_axes", 1);
    assert_int_equal(infer(&r, "ReduceLogSumExp", "r", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,3]");
    assert_string_equal(r.ctx.kernel_op, "Identity");
    /* With axes given, noop_with_empty_axes changes nothing. */
    set_ints(&r, "axes", axes, 1);
    assert_int_equal(infer(&r, "ReduceMin", "r", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,1]");
    assert_null(r.ctx.kernel_op);
    done(&r);
}

static void reduce_min_refuses_axes_as_an_input_and_one_out_of_range(void **state) {
    static const int64_t axes[] = {0}, bad[] = {2};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 1, 3);
    value_i64(&r, 1, axes, 1);
    assert_fails(&r, "ReduceMin", "m", 2, SES_UNIMPLEMENTED,
                 "ReduceMin \"m\": axes as an input (the opset-18 form) is not supported; give "
                 "them as the axes attribute");
    set_ints(&r, "axes", bad, 1);
    assert_fails(&r, "ReduceProd", "p", 1, SES_INVALID_ARGUMENT,
                 "ReduceProd \"p\": axes value 2 is out of range for rank 1 (valid: -1 to 0): "
                 "input is f32[3]");
    done(&r);
}

static void argmin_is_inferred_as_argmax(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_I64, 3, 2, 3, 4);
    set_int(&r, "axis", -1);
    set_int(&r, "select_last_index", 1);
    assert_int_equal(infer(&r, "ArgMin", "a", 1), SES_OK);
    assert_string_equal(out(&r), "i64[2,3,1]");
    assert_int_equal(kernel_int(&r, "axis"), 2);
    assert_int_equal(kernel_int(&r, "select_last_index"), 1);
    r.in[0] = ty(SES_F32, 2, 2, 0);
    assert_fails(&r, "ArgMin", "a", 1, SES_INVALID_ARGUMENT,
                 "ArgMin \"a\": axis 1 has no elements to choose from: data is f32[2,0]");
    done(&r);
}

/* ---- Softmax ------------------------------------------------------------------------------ */

static void softmax_normalizes_its_axis(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 2, 0, 4);
    assert_int_equal(infer(&r, "Softmax", "s", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,0,4]");
    assert_int_equal(kernel_int(&r, "axis"), 2);
    set_int(&r, "axis", -3);
    r.in[0] = ty(SES_F64, 3, 2, 3, 4);
    assert_int_equal(infer(&r, "LogSoftmax", "s", 1), SES_OK);
    assert_string_equal(out(&r), "f64[2,3,4]");
    assert_int_equal(kernel_int(&r, "axis"), 0);
    done(&r);
}

static void softmax_rejects_an_axis_out_of_range_and_a_float_axis(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    set_int(&r, "axis", 2);
    assert_fails(&r, "Softmax", "s", 1, SES_INVALID_ARGUMENT,
                 "Softmax \"s\": axis 2 is out of range for rank 2 (valid: -2 to 1): input is "
                 "f32[2,3]");
    set_float(&r, "axis", 1.0);
    assert_fails(&r, "Softmax", "s", 1, SES_INVALID_ARGUMENT,
                 "Softmax \"s\": attribute axis must be of type int, got float");
    done(&r);
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze ------------------------------------------------- */

static void reshape_copies_zeros_and_infers_minus_one(void **state) {
    static const int64_t shape[] = {0, -1, 2};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    value_i64(&r, 1, shape, 3);
    assert_int_equal(infer(&r, "Reshape", "r", 2), SES_OK);
    assert_string_equal(out(&r), "f32[2,6,2]");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    assert_int_equal(r.ctx.kernel_attrs.count, 0);
    done(&r);
}

static void reshape_handles_scalars_and_empty_tensors(void **state) {
    static const int64_t to_3_0[] = {3, 0};
    static const int64_t to_minus1_2[] = {-1, 2};
    static const int64_t to_minus1_0[] = {-1, 0};
    run_t r = {0};

    (void)state;
    /* A 1-element tensor to a scalar: the shape input is empty, so its value is not needed. */
    r.in[0] = ty(SES_I64, 2, 1, 1);
    value_i64(&r, 1, NULL, 0);
    assert_int_equal(infer(&r, "Reshape", "r", 2), SES_OK);
    assert_string_equal(out(&r), "i64[]");
    /* allowzero makes 0 a literal size. */
    r.in[0] = ty(SES_U8, 2, 0, 5);
    value_i64(&r, 1, to_3_0, 2);
    set_int(&r, "allowzero", 1);
    assert_int_equal(infer(&r, "Reshape", "r", 2), SES_OK);
    assert_string_equal(out(&r), "u8[3,0]");
    set_int(&r, "allowzero", 0);
    r.in[0] = ty(SES_U8, 2, 4, 0);
    value_i64(&r, 1, to_minus1_2, 2);
    assert_int_equal(infer(&r, "Reshape", "r", 2), SES_OK);
    assert_string_equal(out(&r), "u8[0,2]");
    /* Beside a 0, a -1 could be any size. */
    value_i64(&r, 1, to_minus1_0, 2);
    assert_fails(&r, "Reshape", "r", 2, SES_INVALID_ARGUMENT,
                 "Reshape \"r\": cannot infer the -1 in shape [-1,0]: data is u8[4,0] (0 "
                 "elements), the other dimensions hold 0");
    done(&r);
}

static void reshape_rejects_unequal_element_counts_naming_both_shapes(void **state) {
    static const int64_t shape[] = {4, 2};
    static const int64_t two_unknown[] = {-1, -1};
    static const int64_t uneven[] = {4, -1};
    static const int64_t copy_beyond[] = {6, 1, 0};
    static const int64_t zero_and_unknown[] = {0, -1};
    static const int64_t copy_then_4[] = {0, 4};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    value_i64(&r, 1, shape, 2);
    assert_fails(&r, "Reshape", "r", 2, SES_INVALID_ARGUMENT,
                 "Reshape \"r\": element counts differ: data is f32[2,3] (6 elements), shape "
                 "[4,2] gives f32[4,2] (8 elements)");
    value_i64(&r, 1, two_unknown, 2);
    assert_fails(&r, "Reshape", "r", 2, SES_INVALID_ARGUMENT,
                 "Reshape \"r\": shape [-1,-1]: entries must be >= 0, with at most one -1");
    value_i64(&r, 1, uneven, 2);
    assert_fails(&r, "Reshape", "r", 2, SES_INVALID_ARGUMENT,
                 "Reshape \"r\": cannot infer the -1 in shape [4,-1]: data is f32[2,3] (6 "
                 "elements), the other dimensions hold 4");
    value_i64(&r, 1, copy_beyond, 3);
    assert_fails(&r, "Reshape", "r", 2, SES_INVALID_ARGUMENT,
                 "Reshape \"r\": shape [6,1,0] copies dimension 2 with 0, but data is f32[2,3]");
    value_i64(&r, 1, zero_and_unknown, 2);
    set_int(&r, "allowzero", 1);
    assert_fails(&r, "Reshape", "r", 2, SES_INVALID_ARGUMENT,
                 "Reshape \"r\": shape [0,-1] has both 0 and -1, which allowzero=1 makes "
                 "ambiguous");
    /* Without allowzero the 0 copies a dimension, which names both shapes when wrong. */
    set_int(&r, "allowzero", 0);
    value_i64(&r, 1, copy_then_4, 2);
    assert_fails(&r, "Reshape", "r", 2, SES_INVALID_ARGUMENT,
                 "Reshape \"r\": element counts differ: data is f32[2,3] (6 elements), shape "
                 "[0,4] gives f32[2,4] (8 elements)");
    done(&r);
}

static void reshape_needs_the_value_of_its_shape(void **state) {
    static const int32_t shape32[] = {6};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    r.in[1] = ty(SES_I64, 1, 2);
    assert_fails(&r, "Reshape", "r", 2, SES_INVALID_ARGUMENT,
                 "Reshape \"r\": input 1 (shape) must be a constant or fed");
    r.in[1] = ty(SES_I32, 1, 1);
    r.values[1] = shape32;
    assert_fails(&r, "Reshape", "r", 2, SES_INVALID_ARGUMENT,
                 "Reshape \"r\": input 1 (shape) is i32[1]; allowed dtypes: i64");
    r.in[1] = ty(SES_I64, 1, 9);
    assert_fails(&r, "Reshape", "r", 2, SES_UNIMPLEMENTED,
                 "Reshape \"r\": the output would have rank 9; at most 8 dimensions are "
                 "supported");
    done(&r);
}

static void flatten_splits_at_the_axis(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    assert_int_equal(infer(&r, "Flatten", "f", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,12]");
    set_int(&r, "axis", -1);
    assert_int_equal(infer(&r, "Flatten", "f", 1), SES_OK);
    assert_string_equal(out(&r), "f32[6,4]");
    set_int(&r, "axis", 3);
    assert_int_equal(infer(&r, "Flatten", "f", 1), SES_OK);
    assert_string_equal(out(&r), "f32[24,1]");
    set_int(&r, "axis", 0);
    r.in[0] = ty(SES_BOOL, 0);
    assert_int_equal(infer(&r, "Flatten", "f", 1), SES_OK);
    assert_string_equal(out(&r), "bool[1,1]");
    assert_int_equal(r.ctx.kernel_attrs.count, 0);
    set_int(&r, "axis", 4);
    r.in[0] = ty(SES_F32, 3, 2, 0, 4);
    assert_fails(&r, "Flatten", "f", 1, SES_INVALID_ARGUMENT,
                 "Flatten \"f\": axis 4 is out of range for rank 3 (valid: -3 to 3): input is "
                 "f32[2,0,4]");
    done(&r);
}

static void squeeze_without_axes_removes_every_one(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 4, 1, 3, 1, 0);
    assert_int_equal(infer(&r, "Squeeze", "s", 1), SES_OK);
    assert_string_equal(out(&r), "f32[3,0]");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    r.in[0] = ty(SES_F32, 2, 1, 1);
    assert_int_equal(infer(&r, "Squeeze", "s", 1), SES_OK);
    assert_string_equal(out(&r), "f32[]");
    done(&r);
}

static void squeeze_with_axes_removes_those_and_rejects_other_sizes(void **state) {
    static const int64_t axes[] = {-1};
    static const int64_t bad[] = {1};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_I64, 3, 1, 3, 1);
    value_i64(&r, 1, axes, 1);
    assert_int_equal(infer(&r, "Squeeze", "s", 2), SES_OK);
    assert_string_equal(out(&r), "i64[1,3]");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    value_i64(&r, 1, bad, 1);
    assert_fails(&r, "Squeeze", "s", 2, SES_INVALID_ARGUMENT,
                 "Squeeze \"s\": cannot squeeze axis 1, whose size is 3, not 1: data is "
                 "i64[1,3,1]");
    r.values[1] = NULL;
    assert_fails(&r, "Squeeze", "s", 2, SES_INVALID_ARGUMENT,
                 "Squeeze \"s\": input 1 (axes) must be a constant or fed");
    done(&r);
}

static void unsqueeze_counts_negative_axes_from_the_output_rank(void **state) {
    static const int64_t axes[] = {-1, 0};
    static const int64_t scalar_axes[] = {0, 1};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    value_i64(&r, 1, axes, 2);
    assert_int_equal(infer(&r, "Unsqueeze", "u", 2), SES_OK);
    assert_string_equal(out(&r), "f32[1,2,3,1]");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    r.in[0] = ty(SES_BOOL, 0);
    value_i64(&r, 1, scalar_axes, 2);
    assert_int_equal(infer(&r, "Unsqueeze", "u", 2), SES_OK);
    assert_string_equal(out(&r), "bool[1,1]");
    done(&r);
}

static void unsqueeze_rejects_duplicates_ranges_and_too_many_dims(void **state) {
    static const int64_t twice[] = {1, -2};
    static const int64_t far[] = {3};
    static const int64_t many[] = {0, 1, 2, 3, 4, 5, 6};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 1, 2);
    value_i64(&r, 1, twice, 2);
    assert_fails(&r, "Unsqueeze", "u", 2, SES_INVALID_ARGUMENT,
                 "Unsqueeze \"u\": axes [1,-2] name axis 1 twice");
    value_i64(&r, 1, far, 1);
    assert_fails(&r, "Unsqueeze", "u", 2, SES_INVALID_ARGUMENT,
                 "Unsqueeze \"u\": axes value 3 is out of range for output rank 2 (valid: -2 to "
                 "1): input is f32[2]");
    r.in[0] = ty(SES_F32, 2, 2, 2);
    value_i64(&r, 1, many, 7);
    assert_fails(&r, "Unsqueeze", "u", 2, SES_UNIMPLEMENTED,
                 "Unsqueeze \"u\": the output would have rank 9; at most 8 dimensions are "
                 "supported");
    done(&r);
}

/* ---- Transpose and Concat ----------------------------------------------------------------- */

static void transpose_defaults_to_reversing_and_lowers_perm(void **state) {
    static const int64_t perm[] = {1, 2, 0};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_U8, 3, 2, 3, 4);
    assert_int_equal(infer(&r, "Transpose", "t", 1), SES_OK);
    assert_string_equal(out(&r), "u8[4,3,2]");
    assert_string_equal(kernel_ints(&r, "perm"), "[2,1,0]");
    set_ints(&r, "perm", perm, 3);
    assert_int_equal(infer(&r, "Transpose", "t", 1), SES_OK);
    assert_string_equal(out(&r), "u8[3,4,2]");
    assert_string_equal(kernel_ints(&r, "perm"), "[1,2,0]");
    done(&r);
    r.in[0] = ty(SES_F32, 0);
    assert_int_equal(infer(&r, "Transpose", "t", 1), SES_OK);
    assert_string_equal(out(&r), "f32[]");
    assert_string_equal(kernel_ints(&r, "perm"), "[]");
    done(&r);
}

static void transpose_rejects_a_perm_that_is_not_a_permutation(void **state) {
    static const int64_t repeated[] = {0, 0};
    static const int64_t short_perm[] = {0};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    set_ints(&r, "perm", repeated, 2);
    assert_fails(&r, "Transpose", "t", 1, SES_INVALID_ARGUMENT,
                 "Transpose \"t\": attribute perm [0,0] is not a permutation of 0..1: data is "
                 "f32[2,3]");
    set_ints(&r, "perm", short_perm, 1);
    assert_fails(&r, "Transpose", "t", 1, SES_INVALID_ARGUMENT,
                 "Transpose \"t\": attribute perm [0] has 1 entries for rank 2: data is f32[2,3]");
    done(&r);
}

static void concat_adds_along_the_axis_and_lowers_it_normalized(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    r.in[1] = ty(SES_F32, 2, 2, 0);
    r.in[2] = ty(SES_F32, 2, 2, 5);
    set_int(&r, "axis", -1);
    assert_int_equal(infer(&r, "Concat", "c", 3), SES_OK);
    assert_string_equal(out(&r), "f32[2,8]");
    assert_int_equal(kernel_int(&r, "axis"), 1);
    set_int(&r, "axis", 0);
    assert_int_equal(infer(&r, "Concat", "c", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,3]");
    done(&r);
}

static void concat_rejects_mismatched_inputs_naming_both(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    r.in[1] = ty(SES_F32, 2, 3, 3);
    r.in[2] = ty(SES_F32, 2, 3, 4);
    set_int(&r, "axis", 0);
    assert_fails(&r, "Concat", "c", 3, SES_INVALID_ARGUMENT,
                 "Concat \"c\": dimensions other than the axis differ: input 0 is f32[2,3], "
                 "input 2 is f32[3,4]");
    r.in[2] = ty(SES_I64, 2, 3, 3);
    assert_fails(&r, "Concat", "c", 3, SES_INVALID_ARGUMENT,
                 "Concat \"c\": dtypes differ: input 0 is f32[2,3], input 2 is i64[3,3]");
    r.in[2] = ty(SES_F32, 1, 3);
    assert_fails(&r, "Concat", "c", 3, SES_INVALID_ARGUMENT,
                 "Concat \"c\": ranks differ: input 0 is f32[2,3], input 2 is f32[3]");
    done(&r);
    r.in[0] = ty(SES_F32, 0);
    assert_fails(&r, "Concat", "c", 1, SES_INVALID_ARGUMENT,
                 "Concat \"c\": attribute axis is required");
    set_int(&r, "axis", 0);
    assert_fails(&r, "Concat", "c", 1, SES_INVALID_ARGUMENT,
                 "Concat \"c\": axis 0 is out of range for rank 0 (a scalar has none): input is "
                 "f32[]");
    done(&r);
}

/* ---- Slice -------------------------------------------------------------------------------- */

static void slice_clamps_and_counts_like_onnx(void **state) {
    static const int64_t starts[] = {1, -100};
    static const int64_t ends[] = {INT64_MAX, -1};
    static const int64_t axes[] = {-1, 0};
    static const int64_t steps[] = {2, 1};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 4, 5, 6);
    value_i64(&r, 1, starts, 2);
    value_i64(&r, 2, ends, 2);
    value_i64(&r, 3, axes, 2);
    value_i64(&r, 4, steps, 2);
    assert_int_equal(infer(&r, "Slice", "s", 5), SES_OK);
    /* Axis 2: 1, 3, 5. Axis 0: -100 clamps to 0, -1 is 3: 0, 1, 2. */
    assert_string_equal(out(&r), "f32[3,5,3]");
    assert_string_equal(kernel_ints(&r, "starts"), "[0,0,1]");
    assert_string_equal(kernel_ints(&r, "steps"), "[1,1,2]");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    done(&r);
}

static void slice_with_negative_steps_walks_backwards(void **state) {
    static const int64_t starts[] = {INT64_MAX, -2};
    static const int64_t ends[] = {INT64_MIN, 0};
    static const int64_t steps[] = {-1, -3};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_I32, 2, 4, 8);
    value_i64(&r, 1, starts, 2);
    value_i64(&r, 2, ends, 2);
    r.in[3] = ty(SES_DTYPE_INVALID, 0); /* axes left out: 0, 1 */
    value_i64(&r, 4, steps, 2);
    assert_int_equal(infer(&r, "Slice", "s", 5), SES_OK);
    /* Axis 0: 3, 2, 1, 0. Axis 1 from 6 down to but not 0 by 3: 6, 3. */
    assert_string_equal(out(&r), "i32[4,2]");
    assert_string_equal(kernel_ints(&r, "starts"), "[3,6]");
    assert_string_equal(kernel_ints(&r, "steps"), "[-1,-3]");
    done(&r);
}

static void slice_reads_i32_values_and_handles_empty_results_and_scalars(void **state) {
    static const int32_t starts[] = {5};
    static const int32_t ends[] = {2};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 7, 3);
    r.in[1] = ty(SES_I32, 1, 1);
    r.in[2] = ty(SES_I32, 1, 1);
    r.values[1] = starts;
    r.values[2] = ends;
    assert_int_equal(infer(&r, "Slice", "s", 3), SES_OK);
    /* Nothing between 5 and 2 going forwards; the start of an empty slice is 0. */
    assert_string_equal(out(&r), "f32[0,3]");
    assert_string_equal(kernel_ints(&r, "starts"), "[0,0]");
    r.in[0] = ty(SES_F32, 1, 0);
    assert_int_equal(infer(&r, "Slice", "s", 3), SES_OK);
    assert_string_equal(out(&r), "f32[0]");
    /* A scalar takes empty lists and stays a scalar. */
    r.in[0] = ty(SES_F64, 0);
    value_i64(&r, 1, NULL, 0);
    value_i64(&r, 2, NULL, 0);
    assert_int_equal(infer(&r, "Slice", "s", 3), SES_OK);
    assert_string_equal(out(&r), "f64[]");
    assert_string_equal(kernel_ints(&r, "steps"), "[]");
    done(&r);
}

static void slice_rejects_zero_steps_repeats_and_unknown_values(void **state) {
    static const int64_t one[] = {0};
    static const int64_t two[] = {0, 1};
    static const int64_t zero[] = {0};
    static const int64_t same_axis[] = {1, -1};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 4, 5);
    value_i64(&r, 1, one, 1);
    value_i64(&r, 2, two, 2);
    assert_fails(&r, "Slice", "s", 3, SES_INVALID_ARGUMENT,
                 "Slice \"s\": starts has 1 values but ends has 2; they must match");
    value_i64(&r, 2, one, 1);
    value_i64(&r, 3, one, 1);
    value_i64(&r, 4, zero, 1);
    assert_fails(&r, "Slice", "s", 5, SES_INVALID_ARGUMENT,
                 "Slice \"s\": steps [0] has a 0 (for axis 0)");
    value_i64(&r, 1, two, 2);
    value_i64(&r, 2, two, 2);
    value_i64(&r, 3, same_axis, 2);
    assert_fails(&r, "Slice", "s", 4, SES_INVALID_ARGUMENT,
                 "Slice \"s\": axes [1,-1] name axis 1 twice");
    r.values[3] = NULL;
    assert_fails(&r, "Slice", "s", 4, SES_INVALID_ARGUMENT,
                 "Slice \"s\": input 3 (axes) must be a constant or fed");
    r.in[2] = ty(SES_F32, 1, 2);
    assert_fails(&r, "Slice", "s", 3, SES_INVALID_ARGUMENT,
                 "Slice \"s\": input 2 (ends) is f32[2]; allowed dtypes: i32, i64");
    done(&r);
}

/* ---- Gather and Cast ---------------------------------------------------------------------- */

static void gather_puts_the_indices_shape_in_place_of_the_axis(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 5, 6, 7);
    r.in[1] = ty(SES_I64, 2, 2, 3);
    set_int(&r, "axis", -2);
    assert_int_equal(infer(&r, "Gather", "g", 2), SES_OK);
    assert_string_equal(out(&r), "f32[5,2,3,7]");
    assert_int_equal(kernel_int(&r, "axis"), 1);
    /* The indices reach the kernel: inference does not read them. */
    assert_int_equal(r.ctx.kernel_inputs, 0);
    set_int(&r, "axis", 0);
    r.in[0] = ty(SES_BOOL, 1, 4);
    r.in[1] = ty(SES_I32, 0);
    assert_int_equal(infer(&r, "Gather", "g", 2), SES_OK);
    assert_string_equal(out(&r), "bool[]");
    r.in[1] = ty(SES_I32, 1, 0);
    assert_int_equal(infer(&r, "Gather", "g", 2), SES_OK);
    assert_string_equal(out(&r), "bool[0]");
    done(&r);
}

static void gather_rejects_float_indices_and_an_axis_out_of_range(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 5, 6);
    r.in[1] = ty(SES_F32, 1, 2);
    assert_fails(&r, "Gather", "g", 2, SES_INVALID_ARGUMENT,
                 "Gather \"g\": input 1 (indices) is f32[2]; allowed dtypes: i32, i64");
    r.in[1] = ty(SES_I64, 1, 2);
    set_int(&r, "axis", 2);
    assert_fails(&r, "Gather", "g", 2, SES_INVALID_ARGUMENT,
                 "Gather \"g\": axis 2 is out of range for rank 2 (valid: -2 to 1): input is "
                 "f32[5,6]");
    done(&r);
}

/* ---- GatherElements, ScatterElements, GatherND, ScatterND, OneHot ---------------------------- */

static void gather_elements_takes_the_shape_of_the_indices(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F64, 2, 3, 4);
    r.in[1] = ty(SES_I32, 2, 7, 2);
    set_int(&r, "axis", -2);
    assert_int_equal(infer(&r, "GatherElements", "g", 2), SES_OK);
    assert_string_equal(out(&r), "f64[7,2]");
    assert_int_equal(kernel_int(&r, "axis"), 0);
    assert_int_equal(r.ctx.kernel_inputs, 0);
    done(&r);
}

static void gather_and_scatter_elements_reject_indices_larger_than_data(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 3, 4);
    r.in[1] = ty(SES_I64, 2, 2, 5);
    assert_fails(&r, "GatherElements", "g", 2, SES_INVALID_ARGUMENT,
                 "GatherElements \"g\": indices i64[2,5] must have the rank of data f32[3,4] and "
                 "no dimension larger than data's but along axis 0");
    r.in[1] = ty(SES_I64, 1, 2);
    assert_fails(&r, "GatherElements", "g", 2, SES_INVALID_ARGUMENT,
                 "GatherElements \"g\": indices i64[2] must have the rank of data f32[3,4] and "
                 "no dimension larger than data's but along axis 0");
    r.in[1] = ty(SES_I64, 2, 5, 4);
    r.in[2] = ty(SES_F32, 2, 5, 3);
    assert_fails(&r, "ScatterElements", "s", 3, SES_INVALID_ARGUMENT,
                 "ScatterElements \"s\": updates f32[5,3] and indices i64[5,4] must have the "
                 "same shape");
    done(&r);
}

static void scatter_elements_lowers_its_reduction_to_an_int(void **state) {
    ses_attr_t reduction = ses_attr_string("reduction", "mul");
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_I32, 2, 3, 4);
    r.in[1] = ty(SES_I64, 2, 3, 2);
    r.in[2] = ty(SES_I32, 2, 3, 2);
    set_int(&r, "axis", 1);
    assert_int_equal(infer(&r, "ScatterElements", "s", 3), SES_OK);
    assert_string_equal(out(&r), "i32[3,4]");
    assert_int_equal(kernel_int(&r, "reduction"), 0);
    assert_int_equal(ses__attrs_set(&r.attrs, &reduction), SES_OK);
    assert_int_equal(infer(&r, "ScatterElements", "s", 3), SES_OK);
    assert_int_equal(kernel_int(&r, "reduction"), 2);
    reduction = ses_attr_string("reduction", "sum");
    assert_int_equal(ses__attrs_set(&r.attrs, &reduction), SES_OK);
    assert_fails(&r, "ScatterElements", "s", 3, SES_INVALID_ARGUMENT,
                 "ScatterElements \"s\": attribute reduction is \"sum\"; it must be none, add, "
                 "mul, max or min");
    reduction = ses_attr_string("reduction", "add");
    assert_int_equal(ses__attrs_set(&r.attrs, &reduction), SES_OK);
    r.in[0] = ty(SES_BOOL, 2, 3, 4);
    r.in[2] = ty(SES_BOOL, 2, 3, 2);
    assert_fails(&r, "ScatterElements", "s", 3, SES_INVALID_ARGUMENT,
                 "ScatterElements \"s\": reduction add needs numbers; data is bool[3,4]");
    done(&r);
}

static void gather_nd_and_scatter_nd_infer_blocks_after_the_indexed_dims(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 4, 2, 5, 6, 7);
    r.in[1] = ty(SES_I64, 3, 2, 3, 2);
    set_int(&r, "batch_dims", 1);
    assert_int_equal(infer(&r, "GatherND", "g", 2), SES_OK);
    assert_string_equal(out(&r), "f32[2,3,7]");
    assert_int_equal(kernel_int(&r, "batch_dims"), 1);
    r.in[1] = ty(SES_I64, 3, 3, 3, 2);
    assert_fails(&r, "GatherND", "g", 2, SES_INVALID_ARGUMENT,
                 "GatherND \"g\": indices i64[3,3,2] and data f32[2,5,6,7] do not fit: the last "
                 "dimension of indices must be 1 to data's rank - batch_dims (1), and the first "
                 "batch_dims dims of both equal");
    done(&r);
    r = (run_t){0};
    r.in[0] = ty(SES_F32, 3, 4, 5, 6);
    r.in[1] = ty(SES_I64, 2, 3, 1);
    r.in[2] = ty(SES_F32, 3, 3, 5, 6);
    assert_int_equal(infer(&r, "ScatterND", "s", 3), SES_OK);
    assert_string_equal(out(&r), "f32[4,5,6]");
    r.in[2] = ty(SES_F32, 2, 3, 5);
    assert_fails(&r, "ScatterND", "s", 3, SES_INVALID_ARGUMENT,
                 "ScatterND \"s\": updates is f32[3,5]; indices i64[3,1] into data f32[4,5,6] "
                 "want f32[3,5,6]");
    done(&r);
}

static void one_hot_inserts_depth_at_the_axis_and_needs_its_value(void **state) {
    static const int64_t depth[] = {10};
    static const float depth_f32 = 4.0f;
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 2, 2, 3);
    value_i64(&r, 1, depth, 1);
    r.in[2] = ty(SES_BOOL, 1, 2);
    set_int(&r, "axis", -2);
    assert_int_equal(infer(&r, "OneHot", "o", 3), SES_OK);
    assert_string_equal(out(&r), "bool[2,10,3]");
    assert_int_equal(kernel_int(&r, "axis"), 1);
    assert_int_equal(kernel_int(&r, "depth"), 10);
    assert_int_equal(r.ctx.kernel_inputs, 0x5);
    r.in[1] = ty(SES_F32, 0);
    r.values[1] = &depth_f32;
    set_int(&r, "axis", -1);
    assert_int_equal(infer(&r, "OneHot", "o", 3), SES_OK);
    assert_string_equal(out(&r), "bool[2,3,4]");
    r.values[1] = NULL;
    assert_fails(&r, "OneHot", "o", 3, SES_INVALID_ARGUMENT,
                 "OneHot \"o\": input 1 (depth) must be a constant or fed: the output's shape "
                 "depends on its value");
    r.values[1] = &depth_f32;
    r.in[2] = ty(SES_BOOL, 1, 3);
    assert_fails(&r, "OneHot", "o", 3, SES_INVALID_ARGUMENT,
                 "OneHot \"o\": values must be [off_value, on_value], a 1-D tensor of 2, got "
                 "bool[3]");
    done(&r);
}

/* ---- CumSum, Trilu, Hardmax ------------------------------------------------------------------ */

static void cumsum_reads_its_axis_and_lowers_the_flags(void **state) {
    static const int64_t axis[] = {-1}, two[] = {0, 1};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_I64, 2, 3, 4);
    value_i64(&r, 1, axis, 1);
    set_int(&r, "reverse", 1);
    assert_int_equal(infer(&r, "CumSum", "c", 2), SES_OK);
    assert_string_equal(out(&r), "i64[3,4]");
    assert_int_equal(kernel_int(&r, "axis"), 1);
    assert_int_equal(kernel_int(&r, "reverse"), 1);
    assert_int_equal(kernel_int(&r, "exclusive"), 0);
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    value_i64(&r, 1, two, 2);
    assert_fails(&r, "CumSum", "c", 2, SES_INVALID_ARGUMENT,
                 "CumSum \"c\": input 1 (axis) has 2 values; at most 1 are allowed here");
    r.in[0] = ty(SES_BOOL, 1, 3);
    assert_fails(&r, "CumSum", "c", 2, SES_INVALID_ARGUMENT,
                 "CumSum \"c\": input 0 (x) is bool[3]; allowed dtypes: f32, f64, f16, bf16, "
                 "i32, i64");
    done(&r);
}

static void trilu_needs_a_matrix_and_reads_k(void **state) {
    static const int64_t k[] = {-2};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_U8, 3, 2, 3, 4);
    assert_int_equal(infer(&r, "Trilu", "t", 1), SES_OK);
    assert_string_equal(out(&r), "u8[2,3,4]");
    assert_int_equal(kernel_int(&r, "upper"), 1);
    assert_int_equal(kernel_int(&r, "k"), 0);
    value_i64(&r, 1, k, 1);
    set_int(&r, "upper", 0);
    assert_int_equal(infer(&r, "Trilu", "t", 2), SES_OK);
    assert_int_equal(kernel_int(&r, "upper"), 0);
    assert_int_equal(kernel_int(&r, "k"), -2);
    r.in[0] = ty(SES_U8, 1, 4);
    assert_fails(&r, "Trilu", "t", 2, SES_INVALID_ARGUMENT,
                 "Trilu \"t\": input must have rank 2 or more, got u8[4]");
    done(&r);
}

static void hardmax_is_inferred_as_softmax(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    set_int(&r, "axis", 1);
    assert_int_equal(infer(&r, "Hardmax", "h", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,3,4]");
    assert_int_equal(kernel_int(&r, "axis"), 1);
    r.in[0] = ty(SES_I32, 1, 4);
    assert_fails(&r, "Hardmax", "h", 1, SES_INVALID_ARGUMENT,
                 "Hardmax \"h\": input 0 (input) is i32[4]; allowed dtypes: f32, f64, f16, bf16");
    done(&r);
}

static void cast_maps_onnx_dtype_numbers_to_ses_dtypes(void **state) {
    static const struct {
        int64_t onnx;
        ses_dtype_t ses;
        const char *type;
    } cases[] = {{1, SES_F32, "f32[2,0]"}, {2, SES_U8, "u8[2,0]"},     {6, SES_I32, "i32[2,0]"},
                 {7, SES_I64, "i64[2,0]"}, {9, SES_BOOL, "bool[2,0]"}, {11, SES_F64, "f64[2,0]"}};
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_BOOL, 2, 2, 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        set_int(&r, "to", cases[i].onnx);
        assert_int_equal(infer(&r, "Cast", "c", 1), SES_OK);
        assert_string_equal(out(&r), cases[i].type);
        assert_int_equal(kernel_int(&r, "to"), cases[i].ses);
    }
    assert_int_equal(kernel_int(&r, "to"), 2); /* SES_F64's code, not ONNX's 11 */
    done(&r);
}

static void cast_rejects_unknown_and_unsupported_targets(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 1, 3);
    assert_fails(&r, "Cast", "c", 1, SES_INVALID_ARGUMENT, "Cast \"c\": attribute to is required");
    /* STRING is a target since issue #22 (run on the host); COMPLEX64 is not. */
    set_int(&r, "to", 8);
    assert_int_equal(infer(&r, "Cast", "c", 1), SES_OK);
    assert_string_equal(out(&r), "string[3]");
    set_int(&r, "to", 14);
    assert_fails(&r, "Cast", "c", 1, SES_UNIMPLEMENTED,
                 "Cast \"c\": attribute to is 14 (COMPLEX64), which is not supported; supported: "
                 "1 (FLOAT), 2 (UINT8), 3 (INT8), 4 (UINT16), 5 (INT16), 6 (INT32), 7 (INT64), 8 "
                 "(STRING), 9 (BOOL), 10 (FLOAT16), 11 (DOUBLE), 12 (UINT32), 13 (UINT64), 16 "
                 "(BFLOAT16)");
    set_int(&r, "to", 99);
    assert_fails(&r, "Cast", "c", 1, SES_INVALID_ARGUMENT,
                 "Cast \"c\": attribute to is 99, not an ONNX TensorProto dtype; supported: 1 "
                 "(FLOAT), 2 (UINT8), 3 (INT8), 4 (UINT16), 5 (INT16), 6 (INT32), 7 (INT64), 8 "
                 "(STRING), 9 (BOOL), 10 (FLOAT16), 11 (DOUBLE), 12 (UINT32), 13 (UINT64), 16 "
                 "(BFLOAT16)");
    set_int(&r, "to", 0);
    assert_fails(&r, "Cast", "c", 1, SES_INVALID_ARGUMENT,
                 "Cast \"c\": attribute to is 0, not an ONNX TensorProto dtype; supported: 1 "
                 "(FLOAT), 2 (UINT8), 3 (INT8), 4 (UINT16), 5 (INT16), 6 (INT32), 7 (INT64), 8 "
                 "(STRING), 9 (BOOL), 10 (FLOAT16), 11 (DOUBLE), 12 (UINT32), 13 (UINT64), 16 "
                 "(BFLOAT16)");
    /* Every dtype of ours, to and from (a device without a kernel for a pair refuses the
     * plan). */
    set_int(&r, "to", 10);
    assert_int_equal(infer(&r, "Cast", "c", 1), SES_OK);
    assert_string_equal(out(&r), "f16[3]");
    set_int(&r, "to", 16);
    assert_int_equal(infer(&r, "Cast", "c", 1), SES_OK);
    assert_string_equal(out(&r), "bf16[3]");
    set_int(&r, "to", 13);
    r.in[0] = ty(SES_I8, 1, 3);
    assert_int_equal(infer(&r, "Cast", "c", 1), SES_OK);
    assert_string_equal(out(&r), "u64[3]");
    done(&r);
}


/* ---- the blocked-layout ops (nchwc.c) --------------------------------------------------- */

/* NchwcConv: X NCHW (any C) or NCHWc16, Y NCHWc16, the window and the activation as FusedConv. */
static void nchwc_conv_infers_blocked_outputs_from_nchw_or_blocked_inputs(void **state) {
    const int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {2, 2};
    run_t r = {0};

    (void)state;
    set_ints(&r, "pads", pads, 4);
    set_ints(&r, "strides", strides, 2);
    r.in[0] = ty(SES_F32, 4, 2, 3, 9, 9);
    r.in[1] = ty(SES_F32, 4, 32, 3, 3, 3);
    assert_int_equal(infer(&r, "NchwcConv", "c", 2), SES_OK);
    assert_string_equal(out(&r), "f32[2,2,5,5,16]");
    assert_string_equal(kernel_ints(&r, "pads"), "[1,1,1,1]");
    assert_int_equal(kernel_int(&r, "has_bias"), 0);
    r.in[0] = ty(SES_F32, 5, 2, 2, 9, 9, 16);
    r.in[1] = ty(SES_F32, 4, 16, 32, 3, 3);
    r.in[2] = ty(SES_F32, 1, 16);
    r.in[3] = ty(SES_F32, 5, 2, 1, 5, 5, 16);
    assert_int_equal(infer(&r, "NchwcConv", "c", 4), SES_OK);
    assert_string_equal(out(&r), "f32[2,1,5,5,16]");
    assert_int_equal(kernel_int(&r, "has_z"), 1);
    done(&r);
}

static void nchwc_conv_refuses_what_is_not_blocked_naming_it(void **state) {
    run_t r = {0};

    (void)state;
    r.in[0] = ty(SES_F32, 5, 1, 2, 4, 4, 8);
    r.in[1] = ty(SES_F32, 4, 16, 32, 1, 1);
    assert_fails(&r, "NchwcConv", "c", 2, SES_INVALID_ARGUMENT,
                 "NchwcConv \"c\": X must be NCHWc16, [N, C/16, H, W, 16]; it is f32[1,2,4,4,8]");
    r.in[0] = ty(SES_F32, 3, 1, 2, 4);
    assert_fails(&r, "NchwcConv", "c", 2, SES_INVALID_ARGUMENT,
                 "NchwcConv \"c\": X must be NCHW or NCHWc16 ([N, C/16, H, W, 16]); it is "
                 "f32[1,2,4]");
    r.in[0] = ty(SES_F32, 4, 1, 32, 4, 4);
    r.in[1] = ty(SES_F32, 4, 10, 32, 1, 1);
    assert_fails(&r, "NchwcConv", "c", 2, SES_INVALID_ARGUMENT,
                 "NchwcConv \"c\": the output has 10 channels; NCHWc16 needs a multiple of 16");
    r.in[1] = ty(SES_F32, 4, 16, 32, 1, 1);
    r.in[2] = ty(SES_F32, 1, 16);
    r.in[3] = ty(SES_F32, 4, 1, 16, 4, 4);
    assert_fails(&r, "NchwcConv", "c", 4, SES_INVALID_ARGUMENT,
                 "NchwcConv \"c\": Z must be NCHWc16, [N, C/16, H, W, 16]; it is f32[1,16,4,4]");
    r.in[0] = ty(SES_F32, 5, 1, 2, 4, 4, 16);
    r.in[1] = ty(SES_F32, 3, 16, 32, 1);
    assert_fails(&r, "NchwcConv", "c", 2, SES_UNIMPLEMENTED,
                 "NchwcConv \"c\": only 2-D convolutions are blocked; W is f32[16,32,1]");
    done(&r);
}

/* The pools keep the blocks, the global ones reduce H and W to 1, the reorder gives NCHW back. */
static void nchwc_pools_and_the_reorder_infer_their_shapes(void **state) {
    const int64_t kernel[2] = {3, 3}, strides[2] = {2, 2};
    run_t r = {0};

    (void)state;
    set_ints(&r, "kernel_shape", kernel, 2);
    set_ints(&r, "strides", strides, 2);
    set_int(&r, "ceil_mode", 1);
    r.in[0] = ty(SES_F32, 5, 1, 6, 109, 109, 16);
    assert_int_equal(infer(&r, "NchwcMaxPool", "p", 1), SES_OK);
    assert_string_equal(out(&r), "f32[1,6,54,54,16]");
    assert_int_equal(infer(&r, "NchwcAveragePool", "p", 1), SES_OK);
    assert_string_equal(out(&r), "f32[1,6,54,54,16]");
    assert_int_equal(kernel_int(&r, "count_include_pad"), 0);
    done(&r);
    r.in[0] = ty(SES_F32, 5, 2, 4, 7, 7, 16);
    assert_int_equal(infer(&r, "NchwcGlobalAveragePool", "g", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,4,1,1,16]");
    assert_null(r.ctx.kernel_op);
    assert_int_equal(infer(&r, "NchwcGlobalMaxPool", "g", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,4,1,1,16]");
    r.in[0] = ty(SES_F32, 5, 2, 4, 0, 7, 16);
    assert_fails(&r, "NchwcGlobalMaxPool", "g", 1, SES_INVALID_ARGUMENT,
                 "NchwcGlobalMaxPool \"g\": the max of an empty window is undefined: X is "
                 "f32[2,4,0,7,16]");
    r.in[0] = ty(SES_F32, 5, 2, 4, 7, 7, 16);
    assert_int_equal(infer(&r, "NchwcReorderOutput", "o", 1), SES_OK);
    assert_string_equal(out(&r), "f32[2,64,7,7]");
    r.in[0] = ty(SES_F32, 4, 2, 64, 7, 7);
    assert_fails(&r, "NchwcReorderOutput", "o", 1, SES_INVALID_ARGUMENT,
                 "NchwcReorderOutput \"o\": X must be NCHWc16, [N, C/16, H, W, 16]; it is "
                 "f32[2,64,7,7]");
    assert_fails(&r, "NchwcMaxPool", "p", 1, SES_INVALID_ARGUMENT,
                 "NchwcMaxPool \"p\": X must be NCHWc16, [N, C/16, H, W, 16]; it is "
                 "f32[2,64,7,7]");
    r.in[0] = ty(SES_I64, 5, 2, 4, 7, 7, 16);
    assert_int_equal(infer(&r, "NchwcGlobalAveragePool", "g", 1), SES_INVALID_ARGUMENT);
    done(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_schema_has_an_infer_function_and_a_unique_name),
        cmocka_unit_test(nchwc_conv_infers_blocked_outputs_from_nchw_or_blocked_inputs),
        cmocka_unit_test(nchwc_conv_refuses_what_is_not_blocked_naming_it),
        cmocka_unit_test(nchwc_pools_and_the_reorder_infer_their_shapes),
        cmocka_unit_test(an_unknown_op_has_no_schema),
        cmocka_unit_test(value_inputs_mark_the_shape_like_inputs),
        cmocka_unit_test(type_format_writes_dtype_and_dims_with_empty_brackets_for_a_scalar),
        cmocka_unit_test(type_count_is_one_for_a_scalar_and_zero_with_an_empty_dim),
        cmocka_unit_test(infer_checks_input_counts_naming_the_node),
        cmocka_unit_test(infer_checks_the_output_count),
        cmocka_unit_test(a_required_input_may_not_be_absent),
        cmocka_unit_test(malformed_input_types_are_refused),
        cmocka_unit_test(identity_passes_any_dtype_scalars_and_empty_tensors),
        cmocka_unit_test(arithmetic_broadcasts_like_numpy),
        cmocka_unit_test(broadcasting_keeps_empty_dims_and_scalars),
        cmocka_unit_test(add_rejects_shapes_that_cannot_broadcast_naming_both),
        cmocka_unit_test(add_rejects_inputs_of_different_dtypes_naming_both),
        cmocka_unit_test(a_dtype_outside_the_set_is_refused_listing_the_allowed_ones),
        cmocka_unit_test(comparisons_give_bool_and_broadcast),
        cmocka_unit_test(where_broadcasts_all_three_inputs),
        cmocka_unit_test(where_requires_a_bool_condition_and_equal_branches),
        cmocka_unit_test(unary_ops_keep_the_type_and_check_their_dtypes),
        cmocka_unit_test(min_and_max_take_any_number_of_inputs_and_broadcast_them_all),
        cmocka_unit_test(min_and_max_name_the_input_that_differs),
        cmocka_unit_test(mod_lowers_fmod_and_refuses_the_floor_form_for_floats),
        cmocka_unit_test(bit_shift_lowers_its_direction_and_takes_unsigned_integers),
        cmocka_unit_test(logic_ops_take_and_give_bool),
        cmocka_unit_test(is_nan_and_is_inf_give_bool_and_sign_keeps_the_type),
        cmocka_unit_test(leaky_relu_lowers_alpha_with_its_default),
        cmocka_unit_test(prelu_broadcasts_the_slope_to_x_one_way_only),
        cmocka_unit_test(layer_normalization_infers_its_three_outputs),
        cmocka_unit_test(layer_normalization_names_a_mismatched_scale_or_bias),
        cmocka_unit_test(layer_normalization_grad_gives_dx_or_dscale),
        cmocka_unit_test(an_attribute_of_the_wrong_type_is_named),
        cmocka_unit_test(matmul_multiplies_matrices_and_broadcasts_batches),
        cmocka_unit_test(matmul_promotes_and_removes_1d_operands),
        cmocka_unit_test(matmul_handles_empty_dimensions),
        cmocka_unit_test(matmul_reports_inner_dimensions_naming_both),
        cmocka_unit_test(matmul_rejects_batches_that_cannot_broadcast_and_scalars),
        cmocka_unit_test(gemm_transposes_and_lowers_all_four_attributes),
        cmocka_unit_test(gemm_accepts_a_bias_that_broadcasts_one_way),
        cmocka_unit_test(gemm_rejects_bad_operands_and_attributes),
        cmocka_unit_test(reduce_sum_reads_axes_from_its_input_and_lowers_them_sorted),
        cmocka_unit_test(reduce_sum_without_axes_reduces_every_axis),
        cmocka_unit_test(reduce_sum_with_noop_and_empty_axes_lowers_to_identity),
        cmocka_unit_test(reduce_works_on_scalars_and_empty_dims),
        cmocka_unit_test(reduce_sum_needs_the_value_of_its_axes),
        cmocka_unit_test(reduce_rejects_an_axis_out_of_range_naming_the_rank),
        cmocka_unit_test(reduce_mean_and_max_take_axes_as_an_attribute),
        cmocka_unit_test(reduce_refuses_the_other_opset_forms_as_unimplemented),
        cmocka_unit_test(argmax_lowers_normalized_attributes_and_gives_i64),
        cmocka_unit_test(argmax_rejects_an_empty_axis_and_a_scalar),
        cmocka_unit_test(the_other_reductions_take_axes_as_an_attribute_with_their_dtypes),
        cmocka_unit_test(reduce_with_axes_attribute_and_noop_lowers_to_identity),
        cmocka_unit_test(reduce_min_refuses_axes_as_an_input_and_one_out_of_range),
        cmocka_unit_test(argmin_is_inferred_as_argmax),
        cmocka_unit_test(softmax_normalizes_its_axis),
        cmocka_unit_test(softmax_rejects_an_axis_out_of_range_and_a_float_axis),
        cmocka_unit_test(reshape_copies_zeros_and_infers_minus_one),
        cmocka_unit_test(reshape_handles_scalars_and_empty_tensors),
        cmocka_unit_test(reshape_rejects_unequal_element_counts_naming_both_shapes),
        cmocka_unit_test(reshape_needs_the_value_of_its_shape),
        cmocka_unit_test(flatten_splits_at_the_axis),
        cmocka_unit_test(squeeze_without_axes_removes_every_one),
        cmocka_unit_test(squeeze_with_axes_removes_those_and_rejects_other_sizes),
        cmocka_unit_test(unsqueeze_counts_negative_axes_from_the_output_rank),
        cmocka_unit_test(unsqueeze_rejects_duplicates_ranges_and_too_many_dims),
        cmocka_unit_test(transpose_defaults_to_reversing_and_lowers_perm),
        cmocka_unit_test(transpose_rejects_a_perm_that_is_not_a_permutation),
        cmocka_unit_test(concat_adds_along_the_axis_and_lowers_it_normalized),
        cmocka_unit_test(concat_rejects_mismatched_inputs_naming_both),
        cmocka_unit_test(slice_clamps_and_counts_like_onnx),
        cmocka_unit_test(slice_with_negative_steps_walks_backwards),
        cmocka_unit_test(slice_reads_i32_values_and_handles_empty_results_and_scalars),
        cmocka_unit_test(slice_rejects_zero_steps_repeats_and_unknown_values),
        cmocka_unit_test(gather_puts_the_indices_shape_in_place_of_the_axis),
        cmocka_unit_test(gather_rejects_float_indices_and_an_axis_out_of_range),
        cmocka_unit_test(gather_elements_takes_the_shape_of_the_indices),
        cmocka_unit_test(gather_and_scatter_elements_reject_indices_larger_than_data),
        cmocka_unit_test(scatter_elements_lowers_its_reduction_to_an_int),
        cmocka_unit_test(gather_nd_and_scatter_nd_infer_blocks_after_the_indexed_dims),
        cmocka_unit_test(one_hot_inserts_depth_at_the_axis_and_needs_its_value),
        cmocka_unit_test(cumsum_reads_its_axis_and_lowers_the_flags),
        cmocka_unit_test(trilu_needs_a_matrix_and_reads_k),
        cmocka_unit_test(hardmax_is_inferred_as_softmax),
        cmocka_unit_test(cast_maps_onnx_dtype_numbers_to_ses_dtypes),
        cmocka_unit_test(cast_rejects_unknown_and_unsupported_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
