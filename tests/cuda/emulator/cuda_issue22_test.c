/*
 * h-cuda (issue #22): the CUDA driver's new kernels on the emulated GPU, each node on cuda:0 with
 * fallback denied: results against values computed by hand or in double here (independent of
 * the CPU driver, which session-driver-test compares them with), and bad inputs refused with an
 * error naming the node and the input: a GatherElements index out of range (checked on the
 * device), and Resize's antialias, which cuda refuses so that the node runs elsewhere (here:
 * nowhere, so the run fails naming why).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/graph.h>
#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#ifndef EMU_SKIP
/* A session on cuda:0 alone: nodes it cannot run fail the compile. */
static ses_session_t *open_cuda(ses_graph_t *g) {
    const char *name = "cuda:0";
    ses_session_options_t options;
    ses_session_t *s = NULL;

    ses_session_options_init(&options);
    options.fallback = SES_FALLBACK_DENY;
    options.log_level = 0;
    if (ses_session_open(g, &name, 1, &options, &s) != SES_OK)
        fail_msg("open cuda:0: %s", ses_last_error());
    return s;
}

static void assert_error_contains(const char *needle) {
    const char *e = ses_last_error();
    if (!e || !strstr(e, needle))
        fail_msg("the error does not contain \"%s\": %s", needle, e ? e : "(none)");
}

/* Element 5 of the indices is 7, outside [-5, 5) of data's axis 0. */
static void gather_elements_names_an_index_out_of_range(void **state) {
    const int64_t dd[] = {5, 4}, id[] = {3, 2};
    ses_graph_t *g = NULL;
    ses_edge_t in[2], y;
    ses_tensor_t *data = NULL, *idx = NULL, *out = NULL;
    const ses_attr_t axis = ses_attr_int("axis", 0);
    (void)state;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "data", SES_F32, 2, dd, &in[0]), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "indices", SES_I64, 2, id, &in[1]), SES_OK);
    assert_int_equal(ses_graph_op(g, "GatherElements", "ge", in, 2, &axis, 1, &y), SES_OK);
    ses_session_t *s = open_cuda(g);
    assert_int_equal(ses_tensor_create(SES_F32, 2, dd, &data), SES_OK);
    assert_int_equal(ses_tensor_create(SES_I64, 2, id, &idx), SES_OK);
    memset(ses_tensor_data(data), 0, 20 * sizeof(float));
    int64_t *iv = ses_tensor_data(idx);
    const int64_t values[] = {0, 1, -5, 4, 2, 7};
    memcpy(iv, values, sizeof values);
    const ses_feed_t feeds[] = {{in[0], data}, {in[1], idx}};
    assert_int_not_equal(ses_session_eval(s, &y, 1, feeds, 2, NULL, 0, &out), SES_OK);
    assert_null(out);
    assert_error_contains(
        "GatherElements \"ge\": index 7 (element 5 of the indices) is outside "
        "[-5, 5) of axis 0");
    /* The same with every index inside runs. */
    iv[5] = -1;
    assert_int_equal(ses_session_eval(s, &y, 1, feeds, 2, NULL, 0, &out), SES_OK);
    ses_tensor_release(out);
    ses_tensor_release(data);
    ses_tensor_release(idx);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* Resize with antialias: refused by cuda's supports_node, named in the compile's failure. */
static void resize_refuses_antialias(void **state) {
    const int64_t xd[] = {1, 1, 8, 8}, rd[] = {0}, sd[] = {4};
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y;
    ses_tensor_t *roi = NULL, *scales = NULL;
    const ses_attr_t attrs[] = {ses_attr_string("mode", "linear"), ses_attr_int("antialias", 1)};
    const char *name = "cuda:0";
    ses_session_options_t options;
    ses_session_t *s = NULL;
    (void)state;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &in[0]), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 1, rd, &roi), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 1, sd, &scales), SES_OK);
    const float sv[] = {1.0f, 1.0f, 0.5f, 0.5f};
    memcpy(ses_tensor_data(scales), sv, sizeof sv);
    assert_int_equal(ses_graph_constant(g, "roi", roi, &in[1]), SES_OK);
    assert_int_equal(ses_graph_constant(g, "scales", scales, &in[2]), SES_OK);
    assert_int_equal(ses_graph_op(g, "Resize", "rz", in, 3, attrs, 2, &y), SES_OK);
    ses_session_options_init(&options);
    options.fallback = SES_FALLBACK_DENY;
    options.log_level = 0;
    assert_int_equal(ses_session_open(g, &name, 1, &options, &s), SES_OK);
    ses_tensor_t *x = NULL, *out = NULL;
    assert_int_equal(ses_tensor_create(SES_F32, 4, xd, &x), SES_OK);
    memset(ses_tensor_data(x), 0, 64 * sizeof(float));
    const ses_feed_t feed = {in[0], x};
    assert_int_not_equal(ses_session_eval(s, &y, 1, &feed, 1, NULL, 0, &out), SES_OK);
    assert_error_contains("Resize \"rz\": antialias is not implemented on cuda");
    ses_tensor_release(x);
    ses_tensor_release(roi);
    ses_tensor_release(scales);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* ---------------------------------------------------------------------------------------------
 * Results against independent references
 * ------------------------------------------------------------------------------------------- */

/* An input of a test node: fed (a placeholder) or a constant of the graph. */
typedef struct input {
    ses_dtype_t dtype;
    size_t rank;
    int64_t dims[4];
    const void *values;
    size_t bytes;
    int constant;
} input_t;

static ses_tensor_t *make_tensor(const input_t *in) {
    ses_tensor_t *t = NULL;
    assert_int_equal(ses_tensor_create(in->dtype, in->rank, in->dims, &t), SES_OK);
    if (in->bytes)
        memcpy(ses_tensor_data(t), in->values, in->bytes);
    return t;
}

/* Runs one @p op node on cuda:0 alone and stores its @p n_out outputs in @p outs. */
static void run_on_cuda(const char *op, const input_t *ins, size_t n_in, const ses_attr_t *attrs,
                        size_t n_attrs, size_t n_out, ses_tensor_t **outs) {
    ses_graph_t *g = NULL;
    ses_edge_t edges[5], fetches[3];
    ses_feed_t feeds[5];
    ses_tensor_t *values[5] = {NULL};
    ses_node_t *node = NULL;
    size_t n_feeds = 0;
    char name[16];

    assert_int_equal(ses_graph_create(&g), SES_OK);
    for (size_t i = 0; i < n_in; i++) {
        values[i] = make_tensor(&ins[i]);
        snprintf(name, sizeof name, "in%zu", i);
        if (ins[i].constant) {
            assert_int_equal(ses_graph_constant(g, name, values[i], &edges[i]), SES_OK);
        } else {
            assert_int_equal(ses_graph_placeholder(g, name, ins[i].dtype, ins[i].rank, ins[i].dims,
                                                   &edges[i]),
                             SES_OK);
            feeds[n_feeds].edge = edges[i];
            feeds[n_feeds++].value = values[i];
        }
    }
    if (ses_graph_add_node(g, op, "node", edges, n_in, attrs, n_attrs, n_out, &node) != SES_OK)
        fail_msg("add %s: %s", op, ses_last_error());
    for (size_t o = 0; o < n_out; o++)
        fetches[o] = ses_node_output(node, (uint32_t)o);
    ses_session_t *s = open_cuda(g);
    if (ses_session_eval(s, fetches, n_out, feeds, n_feeds, NULL, 0, outs) != SES_OK)
        fail_msg("%s on cuda:0: %s", op, ses_last_error());
    for (size_t i = 0; i < n_in; i++)
        ses_tensor_release(values[i]);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void assert_floats_near(const ses_tensor_t *t, const double *want, size_t n, double tol) {
    assert_int_equal(ses_tensor_count(t), n);
    const float *got = ses_tensor_data((ses_tensor_t *)t);
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= tol))
            fail_msg("element %zu: got %.9g, want %.9g", i, (double)got[i], want[i]);
}

static void assert_i64s(const ses_tensor_t *t, const int64_t *want, size_t n) {
    assert_int_equal(ses_tensor_count(t), n);
    const int64_t *got = ses_tensor_data((ses_tensor_t *)t);
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("element %zu: got %lld, want %lld", i, (long long)got[i], (long long)want[i]);
}

/* X [2, 4] over the last axis: mean, 1 / sqrt(var + eps) and Y worked out in double here. */
static void layer_norm_matches_double(void **state) {
    const float x[] = {1, 2, 3, 4, -2, 0, 0, 6}, scale[] = {1, 2, 0.5f, 1}, b[] = {0, 1, 0, -1};
    const input_t ins[] = {{SES_F32, 2, {2, 4}, x, sizeof x, 0},
                           {SES_F32, 1, {4}, scale, sizeof scale, 0},
                           {SES_F32, 1, {4}, b, sizeof b, 0}};
    const ses_attr_t attrs[] = {ses_attr_int("axis", -1), ses_attr_float("epsilon", 0.01)};
    ses_tensor_t *outs[3] = {NULL};
    double y[8], mean[2], inv[2];
    (void)state;

    for (int r = 0; r < 2; r++) {
        double m = 0, v = 0;
        for (int d = 0; d < 4; d++)
            m += x[r * 4 + d] / 4.0;
        for (int d = 0; d < 4; d++)
            v += (x[r * 4 + d] - m) * (x[r * 4 + d] - m) / 4.0;
        mean[r] = m;
        inv[r] = 1.0 / sqrt(v + 0.01);
        for (int d = 0; d < 4; d++)
            y[r * 4 + d] = (x[r * 4 + d] - m) * inv[r] * scale[d] + b[d];
    }
    run_on_cuda("LayerNormalization", ins, 3, attrs, 2, 3, outs);
    assert_floats_near(outs[0], y, 8, 1e-5);
    assert_floats_near(outs[1], mean, 2, 1e-6);
    assert_floats_near(outs[2], inv, 2, 1e-5);
    for (int o = 0; o < 3; o++)
        ses_tensor_release(outs[o]);
}

/* Gelu's two forms against libm in double: x Phi(x), and x (1 + tanh(u)) / 2. */
static void gelu_matches_double(void **state) {
    const float x[] = {-3, -1, -0.25f, 0, 0.5f, 1, 2, 4};
    const input_t in = {SES_F32, 1, {8}, x, sizeof x, 0};
    double exact[8], approx[8];
    (void)state;

    for (int i = 0; i < 8; i++) {
        exact[i] = 0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0)));
        const double u = sqrt(2.0 / 3.14159265358979323846) * (x[i] + 0.044715 * x[i] * x[i] * x[i]);
        approx[i] = 0.5 * x[i] * (1.0 + tanh(u));
    }
    for (int form = 0; form < 2; form++) {
        const ses_attr_t attr = ses_attr_string("approximate", form ? "tanh" : "none");
        ses_tensor_t *y = NULL;
        run_on_cuda("Gelu", &in, 1, &attr, 1, 1, &y);
        assert_floats_near(y, form ? approx : exact, 8, 1e-6);
        ses_tensor_release(y);
    }
}

/* Negative indices count from the end of the axis. */
static void gather_elements_takes_negative_indices(void **state) {
    const float data[] = {1, 2, 3, 4, 5, 6};
    const int32_t idx[] = {-1, 0, 2, 1, -3, -2};
    const input_t ins[] = {{SES_F32, 2, {2, 3}, data, sizeof data, 0},
                           {SES_I32, 2, {2, 3}, idx, sizeof idx, 0}};
    const ses_attr_t axis = ses_attr_int("axis", 1);
    const double want[] = {3, 1, 3, 5, 4, 5};
    ses_tensor_t *y = NULL;
    (void)state;

    run_on_cuda("GatherElements", ins, 2, &axis, 1, 1, &y);
    assert_floats_near(y, want, 6, 0.0);
    ses_tensor_release(y);
}

/* Largest first, NaN above every number, ties in index order. */
static void topk_orders_nan_first_and_ties_by_index(void **state) {
    const float x[] = {3, NAN, 5, 5, 1, 7};
    const int64_t k[] = {4};
    const input_t ins[] = {{SES_F32, 1, {6}, x, sizeof x, 0}, {SES_I64, 1, {1}, k, sizeof k, 1}};
    const int64_t want_idx[] = {1, 5, 2, 3};
    ses_tensor_t *outs[2] = {NULL};
    (void)state;

    run_on_cuda("TopK", ins, 2, NULL, 0, 2, outs);
    assert_i64s(outs[1], want_idx, 4);
    const float *v = ses_tensor_data(outs[0]);
    assert_true(isnan(v[0]));
    assert_true(v[1] == 7.0f && v[2] == 5.0f && v[3] == 5.0f);
    ses_tensor_release(outs[0]);
    ses_tensor_release(outs[1]);
}

/* Nearest, asymmetric, twice as large: each element repeated 2 x 2. */
static void resize_nearest_repeats_each_element(void **state) {
    const float x[] = {1, 2, 3, 4}, roi[] = {0}, scales[] = {1, 1, 2, 2};
    const input_t ins[] = {{SES_F32, 4, {1, 1, 2, 2}, x, sizeof x, 0},
                           {SES_F32, 1, {0}, roi, 0, 1},
                           {SES_F32, 1, {4}, scales, sizeof scales, 1}};
    const ses_attr_t attrs[] = {ses_attr_string("coordinate_transformation_mode", "asymmetric")};
    const double want[] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    ses_tensor_t *y = NULL;
    (void)state;

    run_on_cuda("Resize", ins, 3, attrs, 1, 1, &y);
    assert_floats_near(y, want, 16, 0.0);
    ses_tensor_release(y);
}

/* A 2 x 2 image through a 2 x 2 kernel of ones, stride 1: each output sums the inputs that reach
 * it; plus a bias of 0.5. */
static void conv_transpose_sums_by_hand(void **state) {
    const float x[] = {1, 2, 3, 4}, w[] = {1, 1, 1, 1}, b[] = {0.5f};
    const input_t ins[] = {{SES_F32, 4, {1, 1, 2, 2}, x, sizeof x, 0},
                           {SES_F32, 4, {1, 1, 2, 2}, w, sizeof w, 0},
                           {SES_F32, 1, {1}, b, sizeof b, 0}};
    const double want[] = {1.5, 3.5, 2.5, 4.5, 10.5, 6.5, 3.5, 7.5, 4.5};
    ses_tensor_t *y = NULL;
    (void)state;

    run_on_cuda("ConvTranspose", ins, 3, NULL, 0, 1, &y);
    assert_floats_near(y, want, 9, 0.0);
    ses_tensor_release(y);
}

/* ONNX's suppress-by-IoU example: boxes 0..2 overlap, 3..4 overlap, 5 alone; 3 of them kept. */
static void nms_keeps_the_best_of_each_overlap(void **state) {
    const float boxes[] = {0, 0, 1, 1, 0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                           0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101};
    const float scores[] = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};
    const int64_t max_out[] = {3};
    const float iou[] = {0.5f}, score_th[] = {0.0f};
    const input_t ins[] = {{SES_F32, 3, {1, 6, 4}, boxes, sizeof boxes, 0},
                           {SES_F32, 3, {1, 1, 6}, scores, sizeof scores, 0},
                           {SES_I64, 1, {1}, max_out, sizeof max_out, 1},
                           {SES_F32, 1, {1}, iou, sizeof iou, 1},
                           {SES_F32, 1, {1}, score_th, sizeof score_th, 1}};
    const int64_t want[] = {0, 0, 3, 0, 0, 0, 0, 0, 5};
    ses_tensor_t *y = NULL;
    (void)state;

    run_on_cuda("NonMaxSuppression", ins, 5, NULL, 0, 1, &y);
    assert_i64s(y, want, 9);
    ses_tensor_release(y);
}

#endif

int main(void) {
#ifdef EMU_SKIP
    printf("cuda_issue22: skipped: %s\n", EMU_SKIP);
    return 77;
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gather_elements_names_an_index_out_of_range),
        cmocka_unit_test(resize_refuses_antialias),
        cmocka_unit_test(layer_norm_matches_double),
        cmocka_unit_test(gelu_matches_double),
        cmocka_unit_test(gather_elements_takes_negative_indices),
        cmocka_unit_test(topk_orders_nan_first_and_ties_by_index),
        cmocka_unit_test(resize_nearest_repeats_each_element),
        cmocka_unit_test(conv_transpose_sums_by_hand),
        cmocka_unit_test(nms_keeps_the_best_of_each_overlap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
