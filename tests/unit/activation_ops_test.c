/*
 * The ops of group g-act evaluated on the CPU driver through the public API: the activations
 * (Elu Selu Celu HardSigmoid HardSwish ThresholdedRelu Softsign Shrink Gelu Mish) against the
 * textbook formulas evaluated here in double, Sum and Mean by hand, Det on hand-checked
 * matrices, the window generators against their formulas and numpy's values, DFT and STFT
 * against a direct O(n^2) sum in double, MelWeightMatrix's triangles; and the errors, which
 * name the node and what is wrong. (Gradients: gradients_test.c.)
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

/* ---- helpers --------------------------------------------------------------------------------- */

static ses_edge_t constant(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                           const void *values) {
    ses_tensor_t *t = NULL;
    ses_edge_t e = {NULL, 0};
    size_t n = 1;

    for (size_t d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    assert_int_equal(
        ses_tensor_create_from(dtype, rank, dims, values, n * ses_dtype_size(dtype), &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_edge_t scalar_i64(ses_graph_t *g, int64_t v) {
    return constant(g, SES_I64, 0, NULL, &v);
}

/* Evaluates @p fetch on the CPU; fails the test with the library's message on error. */
static ses_tensor_t *eval1(ses_graph_t *g, ses_edge_t fetch) {
    const char *cpu = "cpu";
    ses_session_t *s = NULL;
    ses_tensor_t *out = NULL;

    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    if (ses_session_eval(s, &fetch, 1, NULL, 0, NULL, 0, &out) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    ses_session_destroy(s);
    return out;
}

/* Evaluating @p fetch fails with @p status and a message holding @p a and @p b. */
static void expect_error(ses_graph_t *g, ses_edge_t fetch, ses_status_t status, const char *a,
                         const char *b) {
    const char *cpu = "cpu";
    ses_session_t *s = NULL;
    ses_tensor_t *out = NULL;
    ses_status_t st;

    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    st = ses_session_eval(s, &fetch, 1, NULL, 0, NULL, 0, &out);
    if (st != status)
        fail_msg("got status %d (want %d): %s", (int)st, (int)status, ses_last_error());
    if (!strstr(ses_last_error(), a) || (b && !strstr(ses_last_error(), b)))
        fail_msg("message lacks \"%s\" or \"%s\": %s", a, b ? b : "", ses_last_error());
    assert_null(out);
    ses_session_destroy(s);
}

/* One op on constant inputs, evaluated; the caller releases the result. */
static ses_tensor_t *run(const char *op, const ses_edge_t *in, size_t n_in, const ses_attr_t *attrs,
                         size_t n_attrs, ses_graph_t *g) {
    ses_edge_t y;
    if (ses_graph_op(g, op, "node", in, n_in, attrs, n_attrs, &y) != SES_OK)
        fail_msg("%s: %s", op, ses_last_error());
    return eval1(g, y);
}

static void assert_dims(const ses_tensor_t *t, size_t rank, const int64_t *dims) {
    assert_int_equal(ses_tensor_rank(t), rank);
    for (size_t d = 0; d < rank; d++)
        assert_int_equal(ses_tensor_dims(t)[d], dims[d]);
}

/* Element @p i of a float tensor, as a double. */
static double at(ses_tensor_t *t, size_t i) {
    if (ses_tensor_dtype(t) == SES_F32)
        return ((const float *)ses_tensor_data(t))[i];
    return ((const double *)ses_tensor_data(t))[i];
}

static void expect_close(ses_tensor_t *t, const double *want, size_t n, double rtol, double atol,
                         const char *what) {
    assert_int_equal(ses_tensor_count(t), n);
    for (size_t i = 0; i < n; i++) {
        const double got = at(t, i);
        if (isnan(want[i]) ? !isnan(got) : !(fabs(got - want[i]) <= atol + rtol * fabs(want[i])))
            fail_msg("%s: element %zu: got %.17g, want %.17g", what, i, got, want[i]);
    }
}

/* A float tensor of @p dtype holding @p v (converted). */
static ses_edge_t floats(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                         const double *v) {
    size_t n = 1;
    for (size_t d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    if (dtype == SES_F64)
        return constant(g, SES_F64, rank, dims, v);
    float *f = malloc((n ? n : 1) * sizeof *f);
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)v[i];
    ses_edge_t e = constant(g, SES_F32, rank, dims, f);
    free(f);
    return e;
}

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static double uniform(double lo, double hi) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

/* ---- activations ------------------------------------------------------------------------------
 */

/* The formulas as ONNX writes them, with expm1 and log1p for e^x - 1 and log(1 + e^x), so
 * that the reference keeps its digits near 0. */

typedef double (*ref_fn)(double x, double a, double b);

static double r_elu(double x, double a, double b) {
    (void)b;
    return x < 0 ? a * expm1(x) : x;
}
static double r_selu(double x, double a, double g) { return x > 0 ? g * x : g * a * expm1(x); }
static double r_celu(double x, double a, double b) {
    (void)b;
    return fmax(0.0, x) + fmin(0.0, a * expm1(x / a));
}
static double r_hard_sigmoid(double x, double a, double b) {
    return fmax(0.0, fmin(1.0, a * x + b));
}
static double r_hard_swish(double x, double a, double b) {
    (void)a;
    (void)b;
    return x * fmax(0.0, fmin(1.0, x / 6 + 0.5));
}
static double r_thresholded_relu(double x, double a, double b) {
    (void)b;
    return x > a ? x : 0.0;
}
static double r_softsign(double x, double a, double b) {
    (void)a;
    (void)b;
    return x / (1 + fabs(x));
}
static double r_shrink(double x, double bias, double lambd) {
    return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0;
}
static double r_gelu(double x, double a, double b) {
    (void)a;
    (void)b;
    return x * 0.5 * erfc(-x / sqrt(2.0)); /* 1 + erf(x) = erfc(-x) */
}
static double r_gelu_tanh(double x, double a, double b) {
    (void)a;
    (void)b;
    /* 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u)) */
    return x / (1 + exp(-2 * sqrt(2 / M_PI) * (x + 0.044715 * pow(x, 3))));
}
static double r_mish(double x, double a, double b) {
    (void)a;
    (void)b;
    return x * tanh(log1p(exp(x)));
}

typedef struct act_case {
    const char *label, *op;
    ref_fn ref;
    double a, b;    /* the reference's parameters */
    size_t n_attrs; /* attributes given to the node (others take their defaults) */
    ses_attr_t attrs[2];
} act_case_t;

static const double act_inputs[] = {-30, -6,   -3.5, -2.5,   -1,    -0.4, -1e-3, -1e-6,
                                    0,   1e-6, 1e-3, 0.25,   0.5,   0.8,  1,     2.5,
                                    3.2, 6,    15,   -0.499, 0.501, 0.55, -0.7,  1.0001};
#define N_ACT_INPUTS (sizeof act_inputs / sizeof act_inputs[0])

static void activations_match_the_formulas_in_f32_and_f64(void **state) {
    const double selu_a = 1.67326319217681884765625, selu_g = 1.05070102214813232421875;
    const act_case_t cases[] = {
        {"Elu default", "Elu", r_elu, 1.0, 0, 0, {{0}}},
        {"Elu alpha 0.3", "Elu", r_elu, 0.3, 0, 1, {ses_attr_float("alpha", 0.3)}},
        {"Selu default", "Selu", r_selu, selu_a, selu_g, 0, {{0}}},
        {"Selu alpha gamma",
         "Selu",
         r_selu,
         2.0,
         3.0,
         2,
         {ses_attr_float("alpha", 2.0), ses_attr_float("gamma", 3.0)}},
        {"Celu default", "Celu", r_celu, 1.0, 0, 0, {{0}}},
        {"Celu alpha 2", "Celu", r_celu, 2.0, 0, 1, {ses_attr_float("alpha", 2.0)}},
        {"Celu alpha -0.5", "Celu", r_celu, -0.5, 0, 1, {ses_attr_float("alpha", -0.5)}},
        {"HardSigmoid default", "HardSigmoid", r_hard_sigmoid, 0.2, 0.5, 0, {{0}}},
        {"HardSigmoid alpha beta",
         "HardSigmoid",
         r_hard_sigmoid,
         0.5,
         0.6,
         2,
         {ses_attr_float("alpha", 0.5), ses_attr_float("beta", 0.6)}},
        {"HardSwish", "HardSwish", r_hard_swish, 0, 0, 0, {{0}}},
        {"ThresholdedRelu default", "ThresholdedRelu", r_thresholded_relu, 1.0, 0, 0, {{0}}},
        {"ThresholdedRelu alpha",
         "ThresholdedRelu",
         r_thresholded_relu,
         -0.4,
         0,
         1,
         {ses_attr_float("alpha", -0.4)}},
        {"Softsign", "Softsign", r_softsign, 0, 0, 0, {{0}}},
        {"Shrink default", "Shrink", r_shrink, 0.0, 0.5, 0, {{0}}},
        {"Shrink bias lambd",
         "Shrink",
         r_shrink,
         1.5,
         0.8,
         2,
         {ses_attr_float("bias", 1.5), ses_attr_float("lambd", 0.8)}},
        {"Gelu", "Gelu", r_gelu, 0, 0, 0, {{0}}},
        {"Gelu none", "Gelu", r_gelu, 0, 0, 1, {ses_attr_string("approximate", "none")}},
        {"Gelu tanh", "Gelu", r_gelu_tanh, 0, 0, 1, {ses_attr_string("approximate", "tanh")}},
        {"Mish", "Mish", r_mish, 0, 0, 0, {{0}}},
    };
    const int64_t dims[2] = {4, (int64_t)N_ACT_INPUTS / 4};
    double want[N_ACT_INPUTS];

    (void)state;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (size_t i = 0; i < N_ACT_INPUTS; i++)
            want[i] = cases[c].ref(act_inputs[i], cases[c].a, cases[c].b);
        for (int wide = 0; wide < 2; wide++) {
            ses_graph_t *g = NULL;
            char what[96];
            assert_int_equal(ses_graph_create(&g), SES_OK);
            ses_edge_t x = floats(g, wide ? SES_F64 : SES_F32, 2, dims, act_inputs);
            ses_tensor_t *y = run(cases[c].op, &x, 1, cases[c].attrs, cases[c].n_attrs, g);
            snprintf(what, sizeof what, "%s %s", cases[c].label, wide ? "f64" : "f32");
            assert_int_equal(ses_tensor_dtype(y), wide ? SES_F64 : SES_F32);
            assert_dims(y, 2, dims);
            /* f32: the inputs are exact in f32; the result within a few ulps of the double
             * value, or of 1e-7 of its scale near 0. */
            if (wide)
                expect_close(y, want, N_ACT_INPUTS, 1e-13, 1e-100, what);
            else
                expect_close(y, want, N_ACT_INPUTS, 6e-7, 1e-9, what);
            ses_tensor_release(y);
            ses_graph_release(g);
        }
    }
}

/* NaN comes out where it went in, whichever side of each op's test it would fall on. */
static void activations_keep_nan(void **state) {
    static const char *const ops[] = {
        "Elu",      "Selu",   "Celu", "HardSigmoid", "HardSwish", "ThresholdedRelu",
        "Softsign", "Shrink", "Gelu", "Mish"};
    const double x[3] = {NAN, 1.0, NAN};
    const int64_t dims[1] = {3};

    (void)state;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        ses_graph_t *g = NULL;
        assert_int_equal(ses_graph_create(&g), SES_OK);
        ses_edge_t in = floats(g, SES_F32, 1, dims, x);
        ses_tensor_t *y = run(ops[i], &in, 1, NULL, 0, g);
        if (!isnan(at(y, 0)) || !isnan(at(y, 2)))
            fail_msg("%s: NaN became %g", ops[i], at(y, 0));
        ses_tensor_release(y);
        ses_graph_release(g);
    }
}

static void activations_refuse_bad_attributes_and_dtypes(void **state) {
    const int64_t dims[1] = {2};
    const double x[2] = {1, 2};
    const int64_t xi[2] = {1, 2};
    struct {
        const char *op;
        ses_attr_t attr;
        int ints;
        const char *a, *b;
    } cases[] = {
        {"Celu", ses_attr_float("alpha", 0.0), 0, "Celu \"node\"", "alpha must not be 0"},
        {"Gelu", ses_attr_string("approximate", "fast"), 0, "Gelu \"node\"",
         "approximate is \"fast\"; expected \"none\" or \"tanh\""},
        {"Gelu", ses_attr_int("approximate", 1), 0, "Gelu \"node\"",
         "approximate must be of type string"},
        {"Shrink", ses_attr_float("lambd", -1.0), 0, "Shrink \"node\"", "lambd must be 0 or more"},
        {"Elu", ses_attr_string("alpha", "x"), 0, "Elu \"node\"", "alpha"},
        {"Elu", ses_attr_float("alpha", 1.0), 1, "Elu \"node\"", "i64"},
        {"Mish", ses_attr_float("unused", 1.0), 1, "Mish \"node\"", "X"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ses_graph_t *g = NULL;
        ses_edge_t y;
        assert_int_equal(ses_graph_create(&g), SES_OK);
        ses_edge_t in =
            cases[i].ints ? constant(g, SES_I64, 1, dims, xi) : floats(g, SES_F32, 1, dims, x);
        assert_int_equal(ses_graph_op(g, cases[i].op, "node", &in, 1, &cases[i].attr, 1, &y),
                         SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, cases[i].a, cases[i].b);
        ses_graph_release(g);
    }
}

/* ---- Sum and Mean -----------------------------------------------------------------------------
 */

static void sum_and_mean_broadcast_any_number_of_inputs(void **state) {
    const int64_t d23[2] = {2, 3}, d3[1] = {3}, d21[2] = {2, 1};
    const double a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, c[2] = {100, 200}, s = 0.5;

    (void)state;
    for (int wide = 0; wide < 2; wide++) {
        const ses_dtype_t dt = wide ? SES_F64 : SES_F32;
        ses_graph_t *g = NULL;
        assert_int_equal(ses_graph_create(&g), SES_OK);
        ses_edge_t in[4] = {floats(g, dt, 2, d23, a), floats(g, dt, 1, d3, b),
                            floats(g, dt, 2, d21, c), floats(g, dt, 0, NULL, &s)};
        ses_tensor_t *y = run("Sum", in, 4, NULL, 0, g);
        const double sum[6] = {111.5, 122.5, 133.5, 214.5, 225.5, 236.5};
        assert_dims(y, 2, d23);
        expect_close(y, sum, 6, 0, 0, "Sum of four");
        ses_tensor_release(y);
        ses_graph_release(g);

        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = floats(g, dt, 1, d3, b);
        in[1] = floats(g, dt, 2, d21, c);
        y = run("Mean", in, 2, NULL, 0, g);
        const double mean[6] = {55, 60, 65, 105, 110, 115};
        assert_dims(y, 2, d23);
        expect_close(y, mean, 6, 0, 0, "Mean of two");
        ses_tensor_release(y);
        ses_graph_release(g);

        /* One input: itself. */
        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = floats(g, dt, 2, d23, a);
        y = run("Mean", in, 1, NULL, 0, g);
        expect_close(y, a, 6, 0, 0, "Mean of one");
        ses_tensor_release(y);
        ses_graph_release(g);
    }
}

static void sum_refuses_mixed_dtypes_and_shapes_that_do_not_broadcast(void **state) {
    const int64_t d2[1] = {2}, d3[1] = {3};
    const double v[3] = {1, 2, 3};
    const int64_t vi[2] = {1, 2};
    ses_graph_t *g = NULL;
    ses_edge_t in[2], y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = floats(g, SES_F32, 1, d2, v);
    in[1] = floats(g, SES_F32, 1, d3, v);
    assert_int_equal(ses_graph_op(g, "Sum", "node", in, 2, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "Sum \"node\"", "f32[3]");
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = floats(g, SES_F32, 1, d2, v);
    in[1] = floats(g, SES_F64, 1, d2, v);
    assert_int_equal(ses_graph_op(g, "Mean", "node", in, 2, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "Mean \"node\"", "data_1");
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_I64, 1, d2, vi);
    assert_int_equal(ses_graph_op(g, "Sum", "node", in, 1, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "Sum \"node\"", "data_0");
    ses_graph_release(g);
}

/* ---- Det --------------------------------------------------------------------------------------
 */

static void det_of_hand_checked_matrices(void **state) {
    /* [[1,2],[3,4]] = -2; [[0,1],[1,0]] = -1 (needs a row swap); singular = 0; a 3x3 with a
     * zero pivot first: [[0,2,1],[1,1,1],[2,1,3]] = 0*(3-1) - 2*(3-2) + 1*(1-2) = -3;
     * diag(2,3,4) = 24; [[1,2,3],[4,5,6],[7,8,10]] = -3. */
    const double m2[3][4] = {{1, 2, 3, 4}, {0, 1, 1, 0}, {1, 2, 2, 4}};
    const double m3[3][9] = {
        {0, 2, 1, 1, 1, 1, 2, 1, 3}, {2, 0, 0, 0, 3, 0, 0, 0, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 10}};
    const int64_t d322[3] = {3, 2, 2}, d1333[4] = {1, 3, 3, 3};

    (void)state;
    for (int wide = 0; wide < 2; wide++) {
        const ses_dtype_t dt = wide ? SES_F64 : SES_F32;
        ses_graph_t *g = NULL;
        assert_int_equal(ses_graph_create(&g), SES_OK);
        ses_edge_t x = floats(g, dt, 3, d322, &m2[0][0]);
        ses_tensor_t *y = run("Det", &x, 1, NULL, 0, g);
        const double want2[3] = {-2, -1, 0};
        assert_dims(y, 1, d322);
        expect_close(y, want2, 3, 1e-6, 1e-6, "Det 2x2");
        ses_tensor_release(y);
        ses_graph_release(g);

        assert_int_equal(ses_graph_create(&g), SES_OK);
        x = floats(g, dt, 4, d1333, &m3[0][0]);
        y = run("Det", &x, 1, NULL, 0, g);
        const double want3[3] = {-3, 24, -3};
        assert_dims(y, 2, d1333);
        expect_close(y, want3, 3, 1e-6, 1e-6, "Det 3x3");
        ses_tensor_release(y);
        ses_graph_release(g);
    }
}

static void det_refuses_matrices_that_are_not_square(void **state) {
    const int64_t d23[2] = {2, 3}, d4[1] = {4};
    const double v[6] = {0};
    ses_graph_t *g = NULL;
    ses_edge_t x, y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    x = floats(g, SES_F32, 2, d23, v);
    assert_int_equal(ses_graph_op(g, "Det", "node", &x, 1, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "Det \"node\"",
                 "square matrices [*, M, M], got f32[2,3]");
    ses_graph_release(g);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    x = floats(g, SES_F32, 1, d4, v);
    assert_int_equal(ses_graph_op(g, "Det", "node", &x, 1, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "Det \"node\"", "got f32[4]");
    ses_graph_release(g);
}

/* ---- windows ----------------------------------------------------------------------------------
 */

static ses_tensor_t *window(const char *op, int64_t size, int64_t periodic, int64_t datatype) {
    ses_graph_t *g = NULL;
    ses_attr_t attrs[2] = {ses_attr_int("periodic", periodic),
                           ses_attr_int("output_datatype", datatype)};
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t n = scalar_i64(g, size);
    ses_tensor_t *y = run(op, &n, 1, attrs, 2, g);
    ses_graph_release(g);
    return y;
}

static void windows_match_their_formulas_and_numpy(void **state) {
    /* numpy.hanning(5), numpy.hamming(5) with ONNX's 25/46, numpy.blackman(5). */
    const double hann5[5] = {0, 0.5, 1, 0.5, 0};
    const double hamming5[5] = {4.0 / 46, 25.0 / 46, 1, 25.0 / 46, 4.0 / 46};
    const double blackman5[5] = {0, 0.34, 1, 0.34, 0};
    double want[10];
    ses_tensor_t *y;

    (void)state;
    y = window("HannWindow", 5, 0, 1);
    assert_int_equal(ses_tensor_dtype(y), SES_F32);
    expect_close(y, hann5, 5, 1e-6, 1e-7, "HannWindow symmetric");
    ses_tensor_release(y);
    y = window("HammingWindow", 5, 0, 11);
    assert_int_equal(ses_tensor_dtype(y), SES_F64);
    expect_close(y, hamming5, 5, 1e-15, 1e-15, "HammingWindow symmetric");
    ses_tensor_release(y);
    y = window("BlackmanWindow", 5, 0, 11);
    expect_close(y, blackman5, 5, 1e-15, 1e-15, "BlackmanWindow symmetric");
    ses_tensor_release(y);
    /* Periodic: the symmetric window of size + 1 without its last point. */
    for (int i = 0; i < 10; i++)
        want[i] = 0.5 - 0.5 * cos(2 * M_PI * i / 10);
    y = window("HannWindow", 10, 1, 11);
    expect_close(y, want, 10, 1e-15, 1e-15, "HannWindow periodic");
    ses_tensor_release(y);
    for (int i = 0; i < 10; i++)
        want[i] = 0.42 - 0.5 * cos(2 * M_PI * i / 10) + 0.08 * cos(4 * M_PI * i / 10);
    y = window("BlackmanWindow", 10, 1, 11);
    expect_close(y, want, 10, 1e-15, 1e-15, "BlackmanWindow periodic");
    ses_tensor_release(y);
    y = window("HammingWindow", 0, 1, 1);
    assert_int_equal(ses_tensor_count(y), 0);
    ses_tensor_release(y);
}

static void windows_refuse_unknown_sizes_and_datatypes(void **state) {
    ses_graph_t *g = NULL;
    ses_edge_t n, y;
    ses_attr_t bad = ses_attr_int("output_datatype", 7);
    ses_attr_t periodic = ses_attr_int("periodic", 2);
    const char *cpu = "cpu";
    ses_session_t *s = NULL;
    ses_tensor_t *out = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    n = scalar_i64(g, 4);
    assert_int_equal(ses_graph_op(g, "HannWindow", "node", &n, 1, &bad, 1, &y), SES_OK);
    expect_error(g, y, SES_UNIMPLEMENTED, "HannWindow \"node\"", "output_datatype is 7");
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    n = scalar_i64(g, -1);
    assert_int_equal(ses_graph_op(g, "BlackmanWindow", "node", &n, 1, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "BlackmanWindow \"node\"", "is -1");
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    n = scalar_i64(g, 4);
    assert_int_equal(ses_graph_op(g, "HammingWindow", "node", &n, 1, &periodic, 1, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "HammingWindow \"node\"", "periodic");
    ses_graph_release(g);

    /* A size computed at run time (here an unfed placeholder's) cannot give a shape. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "size", SES_I64, 0, NULL, &n), SES_OK);
    assert_int_equal(ses_graph_op(g, "HannWindow", "node", &n, 1, NULL, 0, &y), SES_OK);
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    assert_int_not_equal(ses_session_eval(s, &y, 1, NULL, 0, NULL, 0, &out), SES_OK);
    assert_null(out);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* ---- MelWeightMatrix ---------------------------------------------------------------------------
 */

/* The triangles: every column peaks at 1 (or is 1 at a single bin), values in [0, 1], the
 * peaks move up with the column, and nothing lies beyond the upper edge's bin. */
static void mel_weight_matrix_has_rising_triangles(void **state) {
    ses_graph_t *g = NULL;
    const int32_t bins = 8, length = 64, rate = 8000;
    const float lower = 100, upper = 3000;
    ses_edge_t in[5];
    const int64_t want_dims[2] = {33, 8};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_I32, 0, NULL, &bins);
    in[1] = constant(g, SES_I32, 0, NULL, &length);
    in[2] = constant(g, SES_I32, 0, NULL, &rate);
    in[3] = constant(g, SES_F32, 0, NULL, &lower);
    in[4] = constant(g, SES_F32, 0, NULL, &upper);
    ses_tensor_t *y = run("MelWeightMatrix", in, 5, NULL, 0, g);
    assert_dims(y, 2, want_dims);
    int last_peak = -1;
    for (int j = 0; j < 8; j++) {
        double peak = 0;
        int peak_at = -1;
        for (int k = 0; k < 33; k++) {
            const double v = at(y, (size_t)(k * 8 + j));
            assert_true(v >= 0 && v <= 1);
            if (v > peak) {
                peak = v;
                peak_at = k;
            }
            /* 3000 Hz is bin floor(65 * 3000 / 8000) = 24. */
            if (k > 24)
                assert_true(v == 0);
        }
        assert_true(peak == 1.0);
        assert_true(peak_at > last_peak);
        last_peak = peak_at;
    }
    ses_tensor_release(y);
    ses_graph_release(g);

    /* The upper edge past the sample rate is refused, naming the three. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    const float too_high = 9000;
    in[0] = constant(g, SES_I32, 0, NULL, &bins);
    in[1] = constant(g, SES_I32, 0, NULL, &length);
    in[2] = constant(g, SES_I32, 0, NULL, &rate);
    in[3] = constant(g, SES_F32, 0, NULL, &lower);
    in[4] = constant(g, SES_F32, 0, NULL, &too_high);
    ses_edge_t out;
    assert_int_equal(ses_graph_op(g, "MelWeightMatrix", "node", in, 5, NULL, 0, &out), SES_OK);
    expect_error(g, out, SES_INVALID_ARGUMENT, "MelWeightMatrix \"node\"",
                 "lower 100, upper 9000, sample_rate 8000");
    ses_graph_release(g);
}

/* ---- DFT and STFT -----------------------------------------------------------------------------
 */

/* The direct sum: out[k] = sum_j x[j] e^(-+2 pi i j k / n) over the first min(n, len) samples,
 * zero beyond (divided by n for the inverse). */
static void naive_dft(const double *re, const double *im, size_t len, size_t n, int inverse,
                      double *out_re, double *out_im) {
    for (size_t k = 0; k < n; k++) {
        double sr = 0, si = 0;
        for (size_t j = 0; j < len && j < n; j++) {
            const double t = (inverse ? 2 : -2) * M_PI * (double)((j * k) % n) / (double)n;
            sr += re[j] * cos(t) - im[j] * sin(t);
            si += re[j] * sin(t) + im[j] * cos(t);
        }
        out_re[k] = inverse ? sr / (double)n : sr;
        out_im[k] = inverse ? si / (double)n : si;
    }
}

static void dft_of_one_to_four_is_known(void **state) {
    const double x[4] = {1, 2, 3, 4};
    const int64_t dims[2] = {4, 1};
    const double want[8] = {10, 0, -2, 2, -2, 0, -2, -2};
    ses_graph_t *g = NULL;
    ses_attr_t axis = ses_attr_int("axis", 0);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t in = floats(g, SES_F32, 2, dims, x);
    ses_tensor_t *y = run("DFT", &in, 1, &axis, 1, g);
    const int64_t out_dims[2] = {4, 2};
    assert_dims(y, 2, out_dims);
    expect_close(y, want, 8, 1e-6, 1e-6, "DFT [1,2,3,4]");
    ses_tensor_release(y);
    ses_graph_release(g);
}

typedef struct dft_case {
    int64_t batch, n, c; /* input [batch, n, c] along axis 1, or [n, batch, c] along axis 0 */
    int axis0, inverse, onesided;
    int64_t length; /* dft_length, 0: none */
} dft_case_t;

static void dft_matches_the_direct_sum(void **state) {
    const dft_case_t cases[] = {
        {3, 8, 1, 0, 0, 0, 0},  {2, 10, 2, 0, 0, 0, 0}, {2, 7, 2, 0, 1, 0, 0},
        {2, 16, 1, 0, 0, 1, 0}, {2, 9, 1, 0, 0, 1, 0},  {3, 6, 2, 1, 0, 0, 0},
        {2, 6, 2, 0, 0, 0, 8},  {2, 12, 1, 0, 0, 1, 5}, {1, 64, 2, 0, 1, 0, 0},
    };

    (void)state;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const dft_case_t *c = &cases[ci];
        const int64_t len = c->length ? c->length : c->n;
        const int64_t bins = c->onesided ? len / 2 + 1 : len;
        const size_t count = (size_t)(c->batch * c->n * c->c);
        double *x = malloc(count * sizeof *x), *want = malloc((size_t)(c->batch * bins * 2) * 8);
        double re[64], im[64], ore[64], oim[64];
        assert_non_null(x);
        assert_non_null(want);
        for (size_t i = 0; i < count; i++)
            x[i] = uniform(-1, 1);
        /* The lines: line b, sample j is at [b, j] (axis 1) or [j, b] (axis 0). */
        for (int64_t b = 0; b < c->batch; b++) {
            for (int64_t j = 0; j < c->n; j++) {
                const int64_t at_ = (c->axis0 ? j * c->batch + b : b * c->n + j) * c->c;
                re[j] = x[at_];
                im[j] = c->c == 2 ? x[at_ + 1] : 0;
            }
            naive_dft(re, im, (size_t)c->n, (size_t)len, c->inverse, ore, oim);
            for (int64_t k = 0; k < bins; k++) {
                const int64_t o = (c->axis0 ? k * c->batch + b : b * bins + k) * 2;
                want[o] = ore[k];
                want[o + 1] = oim[k];
            }
        }
        for (int wide = 0; wide < 2; wide++) {
            ses_graph_t *g = NULL;
            ses_attr_t attrs[3] = {ses_attr_int("axis", c->axis0 ? 0 : 1),
                                   ses_attr_int("inverse", c->inverse),
                                   ses_attr_int("onesided", c->onesided)};
            const int64_t dims[3] = {c->axis0 ? c->n : c->batch, c->axis0 ? c->batch : c->n, c->c};
            ses_edge_t in[3];
            char what[64];
            assert_int_equal(ses_graph_create(&g), SES_OK);
            in[0] = floats(g, wide ? SES_F64 : SES_F32, 3, dims, x);
            in[1] = scalar_i64(g, len);
            ses_tensor_t *y;
            if (ci % 2 == 1) {
                /* Op set 20's form: dft_length (or an empty one) and axis as inputs. */
                const int64_t none[1] = {0};
                if (!c->length)
                    in[1] = constant(g, SES_I64, 1, none, NULL);
                in[2] = scalar_i64(g, c->axis0 ? -3 : -2);
                y = run("DFT", in, 3, attrs + 1, 2, g);
            } else {
                y = run("DFT", in, c->length ? 2 : 1, attrs, 3, g);
            }
            const int64_t out_dims[3] = {c->axis0 ? bins : c->batch, c->axis0 ? c->batch : bins, 2};
            snprintf(what, sizeof what, "DFT case %zu %s", ci, wide ? "f64" : "f32");
            assert_dims(y, 3, out_dims);
            if (wide)
                expect_close(y, want, (size_t)(c->batch * bins * 2), 1e-12, 1e-12, what);
            else
                expect_close(y, want, (size_t)(c->batch * bins * 2), 1e-5, 1e-5, what);
            ses_tensor_release(y);
            ses_graph_release(g);
        }
        free(x);
        free(want);
    }
}

static void stft_matches_framed_direct_sums(void **state) {
    const int64_t len = 40, fl = 12, step = 7, frames = 1 + (len - fl) / step, bins = fl / 2 + 1;
    double x[2 * 40], w[12], want[2 * 5 * 7 * 2];
    const int64_t sdims[3] = {2, 40, 1}, wdims[1] = {12};

    (void)state;
    for (size_t i = 0; i < 80; i++)
        x[i] = uniform(-1, 1);
    for (size_t j = 0; j < 12; j++)
        w[j] = uniform(0, 1);
    for (int with_window = 0; with_window < 2; with_window++) {
        for (int64_t b = 0; b < 2; b++)
            for (int64_t f = 0; f < frames; f++) {
                double re[12], im[12] = {0}, ore[12], oim[12];
                for (int64_t j = 0; j < fl; j++)
                    re[j] = x[b * len + f * step + j] * (with_window ? w[j] : 1.0);
                naive_dft(re, im, (size_t)fl, (size_t)fl, 0, ore, oim);
                for (int64_t k = 0; k < bins; k++) {
                    want[((b * frames + f) * bins + k) * 2] = ore[k];
                    want[((b * frames + f) * bins + k) * 2 + 1] = oim[k];
                }
            }
        ses_graph_t *g = NULL;
        ses_edge_t in[4];
        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = floats(g, SES_F64, 3, sdims, x);
        in[1] = scalar_i64(g, step);
        in[2] = floats(g, SES_F64, 1, wdims, w);
        ses_tensor_t *y;
        if (with_window) {
            y = run("STFT", in, 3, NULL, 0, g);
        } else {
            /* No window: an empty one stands for it, and frame_length gives the length. */
            const int64_t empty[1] = {0};
            in[2] = constant(g, SES_F64, 1, empty, NULL);
            in[3] = scalar_i64(g, fl);
            y = run("STFT", in, 4, NULL, 0, g);
        }
        const int64_t out_dims[4] = {2, frames, bins, 2};
        assert_dims(y, 4, out_dims);
        expect_close(y, want, (size_t)(2 * frames * bins * 2), 1e-12, 1e-12,
                     with_window ? "STFT with a window" : "STFT without one");
        ses_tensor_release(y);
        ses_graph_release(g);
    }
}

static void signal_ops_refuse_bad_shapes_and_attributes(void **state) {
    const int64_t d3[3] = {2, 8, 3}, d2[3] = {2, 8, 1}, dw[1] = {5};
    double v[48] = {0};
    ses_graph_t *g = NULL;
    ses_edge_t in[4], y;
    ses_attr_t axis = ses_attr_int("axis", 2);
    ses_attr_t both[2] = {ses_attr_int("inverse", 1), ses_attr_int("onesided", 1)};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = floats(g, SES_F32, 3, d3, v);
    assert_int_equal(ses_graph_op(g, "DFT", "node", in, 1, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "DFT \"node\"",
                 "[..., n, 2] (complex), got f32[2,8,3]");
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = floats(g, SES_F32, 3, d2, v);
    assert_int_equal(ses_graph_op(g, "DFT", "node", in, 1, &axis, 1, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "DFT \"node\"",
                 "axis 2 is out of range for input f32[2,8,1]: it must be in [-3, -2] or [0, 1]");
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    const int64_t d0[3] = {2, 0, 1};
    in[0] = floats(g, SES_F32, 3, d0, v);
    assert_int_equal(ses_graph_op(g, "DFT", "node", in, 1, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "DFT \"node\"",
                 "input f32[2,0,1] has no samples along axis 1; give dft_length");
    ses_graph_release(g);

    /* Op set 20's axis input, with the attribute too. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    const int64_t no_length[1] = {0};
    in[0] = floats(g, SES_F32, 3, d2, v);
    in[1] = constant(g, SES_I64, 1, no_length, NULL);
    in[2] = scalar_i64(g, 1);
    assert_int_equal(ses_graph_op(g, "DFT", "node", in, 3, &axis, 1, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "DFT \"node\"",
                 "axis is given twice, as an attribute and as input 2");
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = floats(g, SES_F32, 3, d2, v);
    assert_int_equal(ses_graph_op(g, "DFT", "node", in, 1, both, 2, &y), SES_OK);
    expect_error(g, y, SES_UNIMPLEMENTED, "DFT \"node\"", "inverse and onesided");
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = floats(g, SES_F32, 3, d2, v);
    in[1] = scalar_i64(g, 0);
    assert_int_equal(ses_graph_op(g, "DFT", "node", in, 2, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "DFT \"node\"", "dft_length) is 0");
    ses_graph_release(g);

    /* STFT: no frame length at all; a window of the wrong length; a frame longer than the
     * signal. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = floats(g, SES_F32, 3, d2, v);
    in[1] = scalar_i64(g, 2);
    assert_int_equal(ses_graph_op(g, "STFT", "node", in, 2, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "STFT \"node\"", "frame_length is needed");
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = floats(g, SES_F32, 3, d2, v);
    in[1] = scalar_i64(g, 2);
    in[2] = floats(g, SES_F32, 1, dw, v);
    in[3] = scalar_i64(g, 4);
    assert_int_equal(ses_graph_op(g, "STFT", "node", in, 4, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "STFT \"node\"",
                 "window must be 1-D of frame_length (4) values, got f32[5]");
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = floats(g, SES_F32, 3, d2, v);
    in[1] = scalar_i64(g, 2);
    in[2] = floats(g, SES_F64, 1, dw, v);
    assert_int_equal(ses_graph_op(g, "STFT", "node", in, 3, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "STFT \"node\"", "window");
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = floats(g, SES_F32, 3, d2, v);
    in[1] = scalar_i64(g, 2);
    const int64_t empty[1] = {0};
    in[2] = constant(g, SES_F32, 1, empty, NULL);
    in[3] = scalar_i64(g, 9);
    assert_int_equal(ses_graph_op(g, "STFT", "node", in, 4, NULL, 0, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, "STFT \"node\"", "frame_length (9)");
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(activations_match_the_formulas_in_f32_and_f64),
        cmocka_unit_test(activations_keep_nan),
        cmocka_unit_test(activations_refuse_bad_attributes_and_dtypes),
        cmocka_unit_test(sum_and_mean_broadcast_any_number_of_inputs),
        cmocka_unit_test(sum_refuses_mixed_dtypes_and_shapes_that_do_not_broadcast),
        cmocka_unit_test(det_of_hand_checked_matrices),
        cmocka_unit_test(det_refuses_matrices_that_are_not_square),
        cmocka_unit_test(windows_match_their_formulas_and_numpy),
        cmocka_unit_test(windows_refuse_unknown_sizes_and_datatypes),
        cmocka_unit_test(mel_weight_matrix_has_rising_triangles),
        cmocka_unit_test(dft_of_one_to_four_is_known),
        cmocka_unit_test(dft_matches_the_direct_sum),
        cmocka_unit_test(stft_matches_framed_direct_sums),
        cmocka_unit_test(signal_ops_refuse_bad_shapes_and_attributes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
