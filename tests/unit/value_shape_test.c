/*
 * NonZero, Compress, TopK, Unique and NonMaxSuppression (ops/value_shape.c,
 * plugins/cpu/cpu_value_shape.c): output shapes that depend on input values, read at compile time
 * from constants, fed values or values the compiler computes from them. Results are checked against
 * hand-computed values; a fed value that changes between runs of one plan gives the new shape; an
 * input computed from a variable is refused naming the node; bad dtypes, ranks, axes and K are
 * refused naming the node.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <session/session.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static ses_edge_t op(ses_graph_t *g, const char *type, const char *name, const ses_edge_t *in,
                     size_t n_in, const ses_attr_t *attrs, size_t n_attrs, size_t n_out) {
    ses_node_t *n = NULL;
    if (ses_graph_add_node(g, type, name, in, n_in, attrs, n_attrs, n_out, &n) != SES_OK)
        fail_msg("%s: %s", type, ses_last_error());
    return ses_node_output(n, 0);
}

static ses_tensor_t *tensor(ses_dtype_t dtype, size_t rank, const int64_t *dims, const void *data) {
    ses_tensor_t *t = NULL;
    assert_int_equal(ses_tensor_create(dtype, rank, dims, &t), SES_OK);
    if (ses_tensor_bytes(t))
        memcpy(ses_tensor_data(t), data, ses_tensor_bytes(t));
    return t;
}

static ses_edge_t constant(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                           const void *data) {
    ses_tensor_t *t = tensor(dtype, rank, dims, data);
    ses_edge_t e;
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_session_t *open_session(ses_graph_t *g) {
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_session_options_init(&so);
    so.fallback = SES_FALLBACK_DENY;
    assert_int_equal(ses_session_open(g, NULL, 0, &so, &s), SES_OK);
    return s;
}

static void assert_shape(ses_tensor_t *t, size_t rank, const int64_t *dims) {
    assert_non_null(t);
    assert_int_equal(ses_tensor_rank(t), rank);
    for (size_t d = 0; d < rank; d++)
        assert_int_equal(ses_tensor_dims(t)[d], dims[d]);
}

static void assert_i64s(ses_tensor_t *t, const int64_t *want, size_t n) {
    assert_int_equal(ses_tensor_dtype(t), SES_I64);
    assert_int_equal(ses_tensor_count(t), n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(((const int64_t *)ses_tensor_data(t))[i], want[i]);
}

static void assert_f32s(ses_tensor_t *t, const float *want, size_t n) {
    assert_int_equal(ses_tensor_dtype(t), SES_F32);
    assert_int_equal(ses_tensor_count(t), n);
    for (size_t i = 0; i < n; i++)
        assert_float_equal(((const float *)ses_tensor_data(t))[i], want[i], 0);
}

/* Evaluates @p fetch of @p g, expecting @p code and a message containing @p part. */
static void assert_refused(ses_graph_t *g, ses_edge_t fetch, const ses_feed_t *feeds,
                           size_t n_feeds, const char *part) {
    ses_session_t *s = open_session(g);
    ses_tensor_t *out = (ses_tensor_t *)0x1;
    assert_int_equal(ses_session_eval(s, &fetch, 1, feeds, n_feeds, NULL, 0, &out),
                     SES_INVALID_ARGUMENT);
    assert_null(out);
    if (!strstr(ses_last_error(), part))
        fail_msg("message: %s\nwanted: %s", ses_last_error(), part);
    ses_session_destroy(s);
}

/* ---- NonZero ------------------------------------------------------------------------------ */

/* x fed [2,3]: its non-zero coordinates, row by row; a second run of the same plan with other
 * values gets its own count. */
static void nonzero_of_a_fed_value_follows_each_run(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t x, y;
    const int64_t xd[2] = {2, 3};
    const float a[6] = {0, 1.5f, 0, -2, 0, NAN}, b[6] = {1, 0, 0, 0, 0, -0.0f};
    ses_plan_t *plan = NULL;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 2, xd, &x), SES_OK);
    y = op(g, "NonZero", "nz", &x, 1, NULL, 0, 1);
    ses_session_t *s = open_session(g);
    assert_int_equal(ses_session_compile(s, &y, 1, &x, 1, NULL, 0, &plan), SES_OK);
    ses_tensor_t *xv = tensor(SES_F32, 2, xd, a), *out = NULL;
    assert_int_equal(ses_plan_run(plan, &xv, 1, &out), SES_OK);
    /* (0,1), (1,0), (1,2): NaN counts as non-zero. */
    const int64_t want_a[6] = {0, 1, 1, 1, 0, 2}, dims_a[2] = {2, 3};
    assert_shape(out, 2, dims_a);
    assert_i64s(out, want_a, 6);
    ses_tensor_release(out);
    ses_tensor_release(xv);
    xv = tensor(SES_F32, 2, xd, b);
    assert_int_equal(ses_plan_run(plan, &xv, 1, &out), SES_OK);
    /* -0.0 is zero: only (0,0). */
    const int64_t want_b[2] = {0, 0}, dims_b[2] = {2, 1};
    assert_shape(out, 2, dims_b);
    assert_i64s(out, want_b, 2);
    ses_tensor_release(out);
    ses_tensor_release(xv);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* NonZero of Greater(x, 2) with x fed: Greater is computed at compile time from x. Bool and
 * int32 constants too. */
static void nonzero_of_a_computed_value_and_of_bool_and_int_constants(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t x;
    const int64_t xd[1] = {5};
    const int64_t xs[5] = {3, 1, 4, 1, 5}, two = 2;
    const unsigned char flags[5] = {0, 1, 1, 0, 1};
    const int32_t ints[5] = {0, 0, 7, 0, -1};

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_I64, 1, xd, &x), SES_OK);
    const ses_edge_t gin[2] = {x, constant(g, SES_I64, 0, NULL, &two)};
    ses_edge_t big = op(g, "Greater", NULL, gin, 2, NULL, 0, 1);
    ses_edge_t y[3];
    y[0] = op(g, "NonZero", "nz", &big, 1, NULL, 0, 1);
    ses_edge_t cb = constant(g, SES_BOOL, 1, xd, flags), ci = constant(g, SES_I32, 1, xd, ints);
    y[1] = op(g, "NonZero", "nzb", &cb, 1, NULL, 0, 1);
    y[2] = op(g, "NonZero", "nzi", &ci, 1, NULL, 0, 1);
    ses_session_t *s = open_session(g);
    ses_tensor_t *xv = tensor(SES_I64, 1, xd, xs), *out[3] = {NULL};
    const ses_feed_t f = {x, xv};
    assert_int_equal(ses_session_eval(s, y, 3, &f, 1, NULL, 0, out), SES_OK);
    const int64_t w0[3] = {0, 2, 4}, w1[3] = {1, 2, 4}, w2[2] = {2, 4};
    const int64_t d0[2] = {1, 3}, d2[2] = {1, 2};
    assert_shape(out[0], 2, d0);
    assert_i64s(out[0], w0, 3);
    assert_i64s(out[1], w1, 3);
    assert_shape(out[2], 2, d2);
    assert_i64s(out[2], w2, 2);
    for (int i = 0; i < 3; i++)
        ses_tensor_release(out[i]);
    ses_tensor_release(xv);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void nonzero_refuses_a_variable_dependent_input_and_a_scalar(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t v, y;
    const int64_t vd[1] = {3};
    const float v0[3] = {1, 0, 2}, five = 5;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_variable(g, "v", constant(g, SES_F32, 1, vd, v0), &v), SES_OK);
    ses_edge_t r = op(g, "Relu", NULL, &v, 1, NULL, 0, 1);
    y = op(g, "NonZero", "nz", &r, 1, NULL, 0, 1);
    assert_refused(g, y, NULL, 0,
                   "NonZero \"nz\": input 0 (X) must be a constant or fed: the output's shape "
                   "depends on its value; it depends on variable \"v\"");
    ses_edge_t c = constant(g, SES_F32, 0, NULL, &five);
    y = op(g, "NonZero", "nz0", &c, 1, NULL, 0, 1);
    assert_refused(g, y, NULL, 0, "NonZero \"nz0\": X must have rank 1 or more, got f32[]");
    ses_graph_release(g);
}

/* ---- Compress ----------------------------------------------------------------------------- */

static void compress_selects_along_an_axis_and_over_the_flattened_input(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t x;
    const int64_t xd[2] = {3, 2}, c3 = 3, c2 = 2, c5 = 5;
    const float xs[6] = {1, 2, 3, 4, 5, 6};
    const unsigned char rows[3] = {1, 0, 1}, cols[2] = {0, 1}, flat[5] = {0, 1, 1, 0, 1};

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 2, xd, &x), SES_OK);
    const ses_attr_t ax0 = ses_attr_int("axis", 0), ax1 = ses_attr_int("axis", -1);
    const ses_edge_t in0[2] = {x, constant(g, SES_BOOL, 1, &c3, rows)};
    const ses_edge_t in1[2] = {x, constant(g, SES_BOOL, 1, &c2, cols)};
    const ses_edge_t in2[2] = {x, constant(g, SES_BOOL, 1, &c5, flat)};
    ses_edge_t y[3] = {op(g, "Compress", "c0", in0, 2, &ax0, 1, 1),
                       op(g, "Compress", "c1", in1, 2, &ax1, 1, 1),
                       op(g, "Compress", "cf", in2, 2, NULL, 0, 1)};
    ses_session_t *s = open_session(g);
    ses_tensor_t *xv = tensor(SES_F32, 2, xd, xs), *out[3] = {NULL};
    const ses_feed_t f = {x, xv};
    assert_int_equal(ses_session_eval(s, y, 3, &f, 1, NULL, 0, out), SES_OK);
    const int64_t d0[2] = {2, 2}, d1[2] = {3, 1}, df[1] = {3};
    const float w0[4] = {1, 2, 5, 6}, w1[3] = {2, 4, 6}, wf[3] = {2, 3, 5};
    assert_shape(out[0], 2, d0);
    assert_f32s(out[0], w0, 4);
    assert_shape(out[1], 2, d1);
    assert_f32s(out[1], w1, 3);
    assert_shape(out[2], 1, df);
    assert_f32s(out[2], wf, 3);
    for (int i = 0; i < 3; i++)
        ses_tensor_release(out[i]);
    ses_tensor_release(xv);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void compress_refuses_a_long_or_non_bool_condition_and_a_bad_axis(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t xd[2] = {3, 2}, c4 = 4, c2 = 2;
    const float xs[6] = {0};
    const unsigned char four[4] = {1, 1, 0, 1};
    const int64_t longs[2] = {1, 0};

    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t x = constant(g, SES_F32, 2, xd, xs);
    const ses_attr_t ax0 = ses_attr_int("axis", 0), ax2 = ses_attr_int("axis", 2);
    const ses_edge_t in0[2] = {x, constant(g, SES_BOOL, 1, &c4, four)};
    assert_refused(g, op(g, "Compress", "c", in0, 2, &ax0, 1, 1), NULL, 0,
                   "Compress \"c\": condition bool[4] is longer than the 3 entries along axis of "
                   "input f32[3,2]");
    const ses_edge_t in1[2] = {x, constant(g, SES_I64, 1, &c2, longs)};
    assert_refused(g, op(g, "Compress", "ci", in1, 2, NULL, 0, 1), NULL, 0,
                   "Compress \"ci\": input 1 (condition) is i64[2]; allowed dtypes: bool");
    assert_refused(g, op(g, "Compress", "ca", in0, 2, &ax2, 1, 1), NULL, 0,
                   "Compress \"ca\": axis 2 is out of range for rank 2");
    ses_graph_release(g);
}

/* ---- TopK --------------------------------------------------------------------------------- */

/* X [2,4] with ties: largest and smallest along the last axis, ties to the lower index. */
static void topk_largest_and_smallest_with_ties_by_lower_index(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t xd[2] = {2, 4}, one = 1, k2 = 2, k1 = 1;
    const float xs[8] = {3, 1, 3, 2, -1, 5, 5, -1};

    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t x = constant(g, SES_F32, 2, xd, xs);
    const ses_edge_t in[2] = {x, constant(g, SES_I64, 1, &one, &k2)};
    const ses_attr_t small[2] = {ses_attr_int("largest", 0), ses_attr_int("sorted", 1)};
    ses_edge_t big = op(g, "TopK", "big", in, 2, NULL, 0, 2);
    ses_edge_t low = op(g, "TopK", "low", in, 2, small, 2, 2);
    const ses_edge_t in0[2] = {x, constant(g, SES_I64, 1, &one, &k1)};
    const ses_attr_t axis0 = ses_attr_int("axis", 0);
    ses_edge_t col = op(g, "TopK", "col", in0, 2, &axis0, 1, 2);
    const ses_edge_t fetch[6] = {big, {big.node, 1}, low, {low.node, 1}, col, {col.node, 1}};
    ses_session_t *s = open_session(g);
    ses_tensor_t *out[6] = {NULL};
    assert_int_equal(ses_session_eval(s, fetch, 6, NULL, 0, NULL, 0, out), SES_OK);
    const float bv[4] = {3, 3, 5, 5}, lv[4] = {1, 2, -1, -1}, cv[4] = {3, 5, 5, 2};
    const int64_t bi[4] = {0, 2, 1, 2}, li[4] = {1, 3, 0, 3}, ci[4] = {0, 1, 1, 0};
    const int64_t d[2] = {2, 2}, dc[2] = {1, 4};
    assert_shape(out[0], 2, d);
    assert_f32s(out[0], bv, 4);
    assert_i64s(out[1], bi, 4);
    assert_f32s(out[2], lv, 4);
    assert_i64s(out[3], li, 4);
    assert_shape(out[4], 2, dc);
    assert_f32s(out[4], cv, 4);
    assert_i64s(out[5], ci, 4);
    for (int i = 0; i < 6; i++)
        ses_tensor_release(out[i]);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* K fed (two runs of one plan, 1 then 3) and K computed from constants (folded), on int32. */
static void topk_k_fed_or_computed(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t k;
    const int64_t xd[1] = {5}, one = 1, two = 2;
    const int32_t xs[5] = {4, 9, -3, 9, 0};

    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t x = constant(g, SES_I32, 1, xd, xs);
    assert_int_equal(ses_graph_placeholder(g, "k", SES_I64, 1, &one, &k), SES_OK);
    const ses_edge_t in[2] = {x, k};
    ses_edge_t t = op(g, "TopK", "t", in, 2, NULL, 0, 2);
    const ses_edge_t fetch[2] = {t, {t.node, 1}};
    ses_session_t *s = open_session(g);
    ses_plan_t *plan = NULL;
    assert_int_equal(ses_session_compile(s, fetch, 2, &k, 1, NULL, 0, &plan), SES_OK);
    for (int64_t kv = 1; kv <= 3; kv += 2) {
        ses_tensor_t *kt = tensor(SES_I64, 1, &one, &kv), *out[2] = {NULL};
        assert_int_equal(ses_plan_run(plan, &kt, 1, out), SES_OK);
        const int32_t want_v[3] = {9, 9, 4};
        const int64_t want_i[3] = {1, 3, 0};
        assert_int_equal(ses_tensor_dtype(out[0]), SES_I32);
        assert_int_equal(ses_tensor_count(out[0]), (size_t)kv);
        for (int64_t j = 0; j < kv; j++)
            assert_int_equal(((const int32_t *)ses_tensor_data(out[0]))[j], want_v[j]);
        assert_i64s(out[1], want_i, (size_t)kv);
        ses_tensor_release(out[0]);
        ses_tensor_release(out[1]);
        ses_tensor_release(kt);
    }
    ses_plan_destroy(plan);
    /* K = 1 + 1, computed at compile time. */
    const ses_edge_t sum_in[2] = {constant(g, SES_I64, 1, &one, &one),
                                  constant(g, SES_I64, 1, &one, &one)};
    const ses_edge_t in2[2] = {x, op(g, "Add", NULL, sum_in, 2, NULL, 0, 1)};
    ses_edge_t t2 = op(g, "TopK", "t2", in2, 2, NULL, 0, 2);
    ses_tensor_t *out = NULL;
    ses_session_destroy(s);
    s = open_session(g);
    const ses_edge_t idx = {t2.node, 1};
    assert_int_equal(ses_session_eval(s, &idx, 1, NULL, 0, NULL, 0, &out), SES_OK);
    const int64_t want2[2] = {1, 3};
    assert_i64s(out, want2, (size_t)two);
    ses_tensor_release(out);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void topk_refuses_a_large_k_a_k_list_a_scalar_and_a_variable_k(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t xd[2] = {2, 3}, one = 1, two = 2, k4 = 4, ks[2] = {1, 2};
    const float xs[6] = {0}, five = 5;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t x = constant(g, SES_F32, 2, xd, xs);
    const ses_edge_t in[2] = {x, constant(g, SES_I64, 1, &one, &k4)};
    assert_refused(g, op(g, "TopK", "t", in, 2, NULL, 0, 2), NULL, 0,
                   "TopK \"t\": K is 4: it must be in [0, 3], the size of axis 1 of X f32[2,3]");
    const ses_edge_t in2[2] = {x, constant(g, SES_I64, 1, &two, ks)};
    assert_refused(g, op(g, "TopK", "t2", in2, 2, NULL, 0, 2), NULL, 0,
                   "TopK \"t2\": K must hold one value, got i64[2]");
    const ses_edge_t in3[2] = {constant(g, SES_F32, 0, NULL, &five), in[1]};
    assert_refused(g, op(g, "TopK", "t3", in3, 2, NULL, 0, 2), NULL, 0,
                   "TopK \"t3\": X must have rank 1 or more, got f32[]");
    ses_edge_t kv;
    assert_int_equal(ses_graph_variable(g, "kvar", constant(g, SES_I64, 1, &one, &one), &kv),
                     SES_OK);
    const ses_edge_t in4[2] = {x, kv};
    assert_refused(g, op(g, "TopK", "t4", in4, 2, NULL, 0, 2), NULL, 0,
                   "TopK \"t4\": input 1 (K) must be a constant or fed");
    ses_graph_release(g);
}

/* ---- Unique ------------------------------------------------------------------------------- */

/* Evaluates the four outputs of Unique "u" of @p x with @p attrs into @p out. */
static void unique4(ses_graph_t *g, ses_edge_t x, const ses_attr_t *attrs, size_t n_attrs,
                    const ses_feed_t *feeds, size_t n_feeds, ses_tensor_t **out) {
    ses_node_t *n = NULL;
    assert_int_equal(ses_graph_add_node(g, "Unique", NULL, &x, 1, attrs, n_attrs, 4, &n), SES_OK);
    const ses_edge_t fetch[4] = {ses_node_output(n, 0), ses_node_output(n, 1),
                                 ses_node_output(n, 2), ses_node_output(n, 3)};
    ses_session_t *s = open_session(g);
    assert_int_equal(ses_session_eval(s, fetch, 4, feeds, n_feeds, NULL, 0, out), SES_OK);
    ses_session_destroy(s);
}

static void release4(ses_tensor_t **t) {
    for (int i = 0; i < 4; i++)
        ses_tensor_release(t[i]);
}

/* ONNX's example [2,1,1,3,4,3], sorted and in order of first occurrence, fed. */
static void unique_of_a_flattened_input_sorted_and_unsorted(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t x;
    const int64_t xd[2] = {2, 3};
    const int64_t xs[6] = {2, 1, 1, 3, 4, 3};
    ses_tensor_t *out[4] = {NULL};

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_I64, 2, xd, &x), SES_OK);
    ses_tensor_t *xv = tensor(SES_I64, 2, xd, xs);
    const ses_feed_t f = {x, xv};
    unique4(g, x, NULL, 0, &f, 1, out);
    const int64_t y[4] = {1, 2, 3, 4}, i[4] = {1, 0, 3, 4}, inv[6] = {1, 0, 0, 2, 3, 2},
                  c[4] = {2, 1, 2, 1};
    assert_i64s(out[0], y, 4);
    assert_i64s(out[1], i, 4);
    assert_i64s(out[2], inv, 6);
    assert_i64s(out[3], c, 4);
    release4(out);
    const ses_attr_t unsorted = ses_attr_int("sorted", 0);
    unique4(g, x, &unsorted, 1, &f, 1, out);
    const int64_t uy[4] = {2, 1, 3, 4}, ui[4] = {0, 1, 3, 4}, uinv[6] = {0, 1, 1, 2, 3, 2},
                  uc[4] = {1, 2, 2, 1};
    assert_i64s(out[0], uy, 4);
    assert_i64s(out[1], ui, 4);
    assert_i64s(out[2], uinv, 6);
    assert_i64s(out[3], uc, 4);
    release4(out);
    ses_tensor_release(xv);
    ses_graph_release(g);
}

/* Rows (axis 0) and columns (axis -1) of a matrix; NaN equals NaN and -0.0 equals 0.0. */
static void unique_slices_along_an_axis_and_nan_and_signed_zero(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t xd[2] = {3, 3}, cd[2] = {2, 3}, nd = 5;
    const float rows[9] = {1, 0, 0, 1, 0, 0, 2, 3, 4}, cols[6] = {1, 1, 0, 2, 2, 1};
    const float odd[5] = {NAN, 0.0f, -0.0f, NAN, 1};
    ses_tensor_t *out[4] = {NULL};

    assert_int_equal(ses_graph_create(&g), SES_OK);
    const ses_attr_t ax0 = ses_attr_int("axis", 0), axm1 = ses_attr_int("axis", -1);
    unique4(g, constant(g, SES_F32, 2, xd, rows), &ax0, 1, NULL, 0, out);
    const int64_t d0[2] = {2, 3};
    const float y0[6] = {1, 0, 0, 2, 3, 4};
    const int64_t i0[2] = {0, 2}, inv0[3] = {0, 0, 1}, c0[2] = {2, 1};
    assert_shape(out[0], 2, d0);
    assert_f32s(out[0], y0, 6);
    assert_i64s(out[1], i0, 2);
    assert_i64s(out[2], inv0, 3);
    assert_i64s(out[3], c0, 2);
    release4(out);
    /* Columns (1,2), (1,2), (0,1): sorted (0,1) then (1,2). */
    unique4(g, constant(g, SES_F32, 2, cd, cols), &axm1, 1, NULL, 0, out);
    const int64_t d1[2] = {2, 2};
    const float y1[4] = {0, 1, 1, 2};
    const int64_t i1[2] = {2, 0}, inv1[3] = {1, 1, 0}, c1[2] = {1, 2};
    assert_shape(out[0], 2, d1);
    assert_f32s(out[0], y1, 4);
    assert_i64s(out[1], i1, 2);
    assert_i64s(out[2], inv1, 3);
    assert_i64s(out[3], c1, 2);
    release4(out);
    unique4(g, constant(g, SES_F32, 1, &nd, odd), NULL, 0, NULL, 0, out);
    const int64_t i2[3] = {1, 4, 0}, inv2[5] = {2, 0, 0, 2, 1}, c2[3] = {2, 1, 2};
    assert_int_equal(ses_tensor_count(out[0]), 3);
    assert_float_equal(((const float *)ses_tensor_data(out[0]))[0], 0, 0);
    assert_float_equal(((const float *)ses_tensor_data(out[0]))[1], 1, 0);
    assert_true(isnan(((const float *)ses_tensor_data(out[0]))[2]));
    assert_i64s(out[1], i2, 3);
    assert_i64s(out[2], inv2, 5);
    assert_i64s(out[3], c2, 3);
    release4(out);
    ses_graph_release(g);
}

static void unique_refuses_a_variable_dependent_input_a_bad_axis_and_dtype(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t v;
    const int64_t vd = 3;
    const int32_t v0[3] = {1, 1, 2};
    const int16_t h[3] = {1, 2, 3};

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_variable(g, "v", constant(g, SES_I32, 1, &vd, v0), &v), SES_OK);
    assert_refused(g, op(g, "Unique", "u", &v, 1, NULL, 0, 1), NULL, 0,
                   "Unique \"u\": input 0 (X) must be a constant or fed: the output's shape "
                   "depends on its value; it depends on variable \"v\"");
    const ses_attr_t ax1 = ses_attr_int("axis", 1);
    ses_edge_t c = constant(g, SES_I32, 1, &vd, v0);
    assert_refused(g, op(g, "Unique", "ua", &c, 1, &ax1, 1, 1), NULL, 0,
                   "Unique \"ua\": axis 1 is out of range for rank 1");
    ses_edge_t ch = constant(g, SES_I16, 1, &vd, h);
    assert_refused(g, op(g, "Unique", "uh", &ch, 1, NULL, 0, 1), NULL, 0,
                   "Unique \"uh\": input 0 (X) is i16[3]; allowed dtypes:");
    ses_graph_release(g);
}

/* ---- NonMaxSuppression -------------------------------------------------------------------- */

static const float nms_boxes[24] = {0, 0,  1, 1,  0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                                    0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100,   1, 101};

/* NonMaxSuppression "nms" of the six boxes of ONNX's examples with @p scores fed, max 3 and
 * IoU 0.5, with score_threshold @p st when @p has_st; the selected indices. */
static ses_tensor_t *nms(const float *scores, int has_st, float st) {
    ses_graph_t *g;
    ses_edge_t sc;
    const int64_t bd[3] = {1, 6, 4}, sd[3] = {1, 1, 6}, one = 1, three = 3;
    const float half = 0.5f;
    ses_tensor_t *sv = tensor(SES_F32, 3, sd, scores), *out = NULL;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "scores", SES_F32, 3, sd, &sc), SES_OK);
    const ses_edge_t in[5] = {
        constant(g, SES_F32, 3, bd, nms_boxes), sc, constant(g, SES_I64, 1, &one, &three),
        constant(g, SES_F32, 1, &one, &half), constant(g, SES_F32, 1, &one, &st)};
    ses_edge_t y = op(g, "NonMaxSuppression", "nms", in, has_st ? 5 : 4, NULL, 0, 1);
    ses_session_t *s = open_session(g);
    const ses_feed_t f = {sc, sv};
    assert_int_equal(ses_session_eval(s, &y, 1, &f, 1, NULL, 0, &out), SES_OK);
    ses_session_destroy(s);
    ses_tensor_release(sv);
    ses_graph_release(g);
    return out;
}

/* Boxes 0-2 overlap (IoU above 0.5), 3-4 too, 5 is alone: the best of each group in score
 * order; a score threshold of 0.4 drops box 5 (0.3); other scores pick others. */
static void nms_selects_the_best_of_each_overlapping_group(void **state) {
    (void)state;
    const float scores[6] = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};
    const float other[6] = {0.1f, 0.75f, 0.6f, 0.2f, 0.5f, 0.3f};
    const int64_t d3[2] = {3, 3}, d2[2] = {2, 3};
    ses_tensor_t *y = nms(scores, 0, 0);
    const int64_t want[9] = {0, 0, 3, 0, 0, 0, 0, 0, 5};
    assert_shape(y, 2, d3);
    assert_i64s(y, want, 9);
    ses_tensor_release(y);
    y = nms(scores, 1, 0.4f);
    assert_shape(y, 2, d2);
    assert_i64s(y, want, 6);
    ses_tensor_release(y);
    y = nms(other, 1, 0.4f);
    const int64_t want_other[6] = {0, 0, 1, 0, 0, 4};
    assert_shape(y, 2, d2);
    assert_i64s(y, want_other, 6);
    ses_tensor_release(y);
}

static void nms_refuses_bad_shapes_thresholds_and_counts(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t bd[3] = {1, 6, 4}, sd[3] = {1, 1, 5}, sd6[3] = {1, 1, 6}, one = 1, two = 2;
    const float scores[6] = {0}, bad_iou = 1.5f;
    const int64_t maxes[2] = {1, 2};

    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t b = constant(g, SES_F32, 3, bd, nms_boxes);
    const ses_edge_t in0[2] = {b, constant(g, SES_F32, 3, sd, scores)};
    assert_refused(g, op(g, "NonMaxSuppression", "n0", in0, 2, NULL, 0, 1), NULL, 0,
                   "NonMaxSuppression \"n0\": boxes f32[1,6,4] must be [batch, boxes, 4] and "
                   "scores f32[1,1,5] [batch, classes, boxes]");
    ses_edge_t s6 = constant(g, SES_F32, 3, sd6, scores);
    const ses_edge_t in1[4] = {b, s6, constant(g, SES_I64, 1, &one, &two),
                               constant(g, SES_F32, 1, &one, &bad_iou)};
    assert_refused(g, op(g, "NonMaxSuppression", "n1", in1, 4, NULL, 0, 1), NULL, 0,
                   "NonMaxSuppression \"n1\": iou_threshold 1.5 must be in [0, 1]");
    const ses_edge_t in2[3] = {b, s6, constant(g, SES_I64, 1, &two, maxes)};
    assert_refused(g, op(g, "NonMaxSuppression", "n2", in2, 3, NULL, 0, 1), NULL, 0,
                   "NonMaxSuppression \"n2\": max_output_boxes_per_class must be a scalar or "
                   "hold one value, got i64[2]");
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nonzero_of_a_fed_value_follows_each_run),
        cmocka_unit_test(nonzero_of_a_computed_value_and_of_bool_and_int_constants),
        cmocka_unit_test(nonzero_refuses_a_variable_dependent_input_and_a_scalar),
        cmocka_unit_test(compress_selects_along_an_axis_and_over_the_flattened_input),
        cmocka_unit_test(compress_refuses_a_long_or_non_bool_condition_and_a_bad_axis),
        cmocka_unit_test(topk_largest_and_smallest_with_ties_by_lower_index),
        cmocka_unit_test(topk_k_fed_or_computed),
        cmocka_unit_test(topk_refuses_a_large_k_a_k_list_a_scalar_and_a_variable_k),
        cmocka_unit_test(unique_of_a_flattened_input_sorted_and_unsorted),
        cmocka_unit_test(unique_slices_along_an_axis_and_nan_and_signed_zero),
        cmocka_unit_test(unique_refuses_a_variable_dependent_input_a_bad_axis_and_dtype),
        cmocka_unit_test(nms_selects_the_best_of_each_overlapping_group),
        cmocka_unit_test(nms_refuses_bad_shapes_thresholds_and_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
