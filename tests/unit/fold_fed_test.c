/*
 * Values inference needs, computed from fed values (compile/compile.c, mark_needed): a Range whose
 * limit is computed from a fed scalar, and a Slice whose ends come from Shape -> Gather -> Div by
 * a fed divisor, are computed at compile time from the fed values; a run fed other values
 * compiles the plan again and gets the new shape. A needed value that depends on a variable, on
 * a random op or on a node over the folding limit is refused, naming the node and the cause.
 */
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
                     size_t n_in, const ses_attr_t *attrs, size_t n_attrs) {
    ses_edge_t e;
    if (ses_graph_op(g, type, name, in, n_in, attrs, n_attrs, &e) != SES_OK)
        fail_msg("%s: %s", type, ses_last_error());
    return e;
}

static ses_edge_t binary(ses_graph_t *g, const char *type, ses_edge_t a, ses_edge_t b) {
    const ses_edge_t in[2] = {a, b};
    return op(g, type, NULL, in, 2, NULL, 0);
}

/* An int64 constant: a scalar when @p rank is 0, else the vector v[0..n). */
static ses_edge_t ints(ses_graph_t *g, size_t rank, const int64_t *v, int64_t n) {
    ses_tensor_t *t = NULL;
    ses_edge_t e;
    assert_int_equal(
        ses_tensor_create_from(SES_I64, rank, rank ? &n : NULL, v, (size_t)n * sizeof(int64_t), &t),
        SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_edge_t scalar(ses_graph_t *g, int64_t v) { return ints(g, 0, &v, 1); }

static ses_tensor_t *i64_scalar(int64_t v) {
    ses_tensor_t *t = NULL;
    assert_int_equal(ses_tensor_create_from(SES_I64, 0, NULL, &v, sizeof v, &t), SES_OK);
    return t;
}

static void assert_ints(ses_tensor_t *t, const int64_t *want, size_t n) {
    assert_non_null(t);
    assert_int_equal(ses_tensor_dtype(t), SES_I64);
    assert_int_equal(ses_tensor_count(t), n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(((const int64_t *)ses_tensor_data(t))[i], want[i]);
}

static ses_session_t *open_session(ses_graph_t *g) {
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_session_options_init(&so);
    so.fallback = SES_FALLBACK_DENY;
    assert_int_equal(ses_session_open(g, NULL, 0, &so, &s), SES_OK);
    return s;
}

/* ---- tests -------------------------------------------------------------------------------- */

/* r = Range(0, n + 1, 1) with n fed: the limit is computed, not fed; each run's n gives its own
 * length through one compiled plan. */
static void a_range_limit_computed_from_a_fed_scalar_follows_each_run(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t n, r;
    ses_session_t *s;
    ses_plan_t *plan = NULL;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "n", SES_I64, 0, NULL, &n), SES_OK);
    const ses_edge_t in[3] = {scalar(g, 0), binary(g, "Add", n, scalar(g, 1)), scalar(g, 1)};
    r = op(g, "Range", "r", in, 3, NULL, 0);
    s = open_session(g);
    assert_int_equal(ses_session_compile(s, &r, 1, &n, 1, NULL, 0, &plan), SES_OK);
    for (int64_t value = 3; value <= 5; value += 2) {
        ses_tensor_t *nv = i64_scalar(value), *out = NULL;
        const int64_t want[6] = {0, 1, 2, 3, 4, 5};
        assert_int_equal(ses_plan_run(plan, &nv, 1, &out), SES_OK);
        assert_ints(out, want, (size_t)value + 1);
        /* Add and Range were computed at compile time: the plan has no step. */
        assert_non_null(strstr(ses_plan_placement(plan), "folded: 2"));
        ses_tensor_release(out);
        ses_tensor_release(nv);
    }
    /* The same value again: the same result (the plan compiled for it is kept or remade). */
    ses_tensor_t *nv = i64_scalar(3), *out = NULL;
    const int64_t want3[4] = {0, 1, 2, 3};
    ses_feed_t f = {n, nv};
    assert_int_equal(ses_session_eval(s, &r, 1, &f, 1, NULL, 0, &out), SES_OK);
    assert_ints(out, want3, 4);
    ses_tensor_release(out);
    ses_tensor_release(nv);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* y = Slice(x, [0], [Shape(x)[1] / d], axes [1]) with x and d fed. */
static void a_shape_chain_divided_by_a_fed_value_reaches_slice_ends(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t x, d, y;
    const int64_t xd[2] = {2, 6}, zero = 0, axes_v = 1;
    ses_session_t *s;
    ses_tensor_t *xv = NULL;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_I64, 2, xd, &x), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "d", SES_I64, 0, NULL, &d), SES_OK);
    ses_edge_t shape = op(g, "Shape", NULL, &x, 1, NULL, 0);
    const ses_edge_t gin[2] = {shape, scalar(g, 1)};
    ses_edge_t dim = op(g, "Gather", NULL, gin, 2, NULL, 0);
    ses_edge_t half = binary(g, "Div", dim, d);
    const ses_edge_t uin[2] = {half, ints(g, 1, &zero, 1)};
    ses_edge_t ends = op(g, "Unsqueeze", NULL, uin, 2, NULL, 0);
    const ses_edge_t sin[4] = {x, ints(g, 1, &zero, 1), ends, ints(g, 1, &axes_v, 1)};
    y = op(g, "Slice", "y", sin, 4, NULL, 0);
    s = open_session(g);
    assert_int_equal(ses_tensor_create(SES_I64, 2, xd, &xv), SES_OK);
    for (int64_t i = 0; i < 12; i++)
        ((int64_t *)ses_tensor_data(xv))[i] = i;
    for (int64_t div = 2; div <= 3; div++) {
        ses_tensor_t *dv = i64_scalar(div), *out = NULL;
        const ses_feed_t feeds[2] = {{x, xv}, {d, dv}};
        assert_int_equal(ses_session_eval(s, &y, 1, feeds, 2, NULL, 0, &out), SES_OK);
        const int64_t cols = 6 / div;
        assert_int_equal(ses_tensor_rank(out), 2);
        assert_int_equal(ses_tensor_dims(out)[0], 2);
        assert_int_equal(ses_tensor_dims(out)[1], cols);
        for (int64_t r = 0; r < 2; r++)
            for (int64_t c = 0; c < cols; c++)
                assert_int_equal(((const int64_t *)ses_tensor_data(out))[r * cols + c], r * 6 + c);
        ses_tensor_release(out);
        ses_tensor_release(dv);
    }
    ses_tensor_release(xv);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* Evaluates Range(0, limit, 1) and expects a refusal naming Range "r" and @p cause. */
static void assert_range_refused(ses_graph_t *g, ses_edge_t limit, const ses_feed_t *feeds,
                                 size_t n_feeds, const char *cause) {
    const ses_edge_t in[3] = {scalar(g, 0), limit, scalar(g, 1)};
    ses_edge_t r = op(g, "Range", "r", in, 3, NULL, 0);
    ses_session_t *s = open_session(g);
    ses_tensor_t *out = (ses_tensor_t *)0x1;
    ses_status_t st = ses_session_eval(s, &r, 1, feeds, n_feeds, NULL, 0, &out);
    assert_int_equal(st, SES_INVALID_ARGUMENT);
    assert_null(out);
    if (!strstr(ses_last_error(), "Range \"r\": input 1 (limit)") ||
        !strstr(ses_last_error(), cause))
        fail_msg("message: %s (wanted %s)", ses_last_error(), cause);
    ses_session_destroy(s);
}

static void a_needed_value_computed_from_a_variable_is_refused(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t v;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_variable(g, "v", scalar(g, 4), &v), SES_OK);
    assert_range_refused(g, binary(g, "Add", v, scalar(g, 1)), NULL, 0,
                         "it depends on variable \"v\"");
    ses_graph_release(g);
}

static void a_needed_value_computed_from_a_random_op_is_refused(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t x;
    ses_tensor_t *xv = NULL;
    const float three = 3.0f;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 0, NULL, &x), SES_OK);
    ses_edge_t dropped = op(g, "Dropout", "drop", &x, 1, NULL, 0);
    const ses_attr_t to = ses_attr_int("to", 7) /* ONNX INT64 */;
    ses_edge_t limit = op(g, "Cast", NULL, &dropped, 1, &to, 1);
    assert_int_equal(ses_tensor_create_from(SES_F32, 0, NULL, &three, sizeof three, &xv), SES_OK);
    const ses_feed_t f = {x, xv};
    assert_range_refused(g, limit, &f, 1, "Dropout \"drop\", whose values are random");
    ses_tensor_release(xv);
    ses_graph_release(g);
}

/* The limit is the largest of 70,000 values, over the folding limit: not computed at compile
 * time, and the message says which node stopped it. */
static void a_needed_value_over_the_folding_limit_is_refused(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t x;
    const int64_t n = 70000;
    ses_tensor_t *xv = NULL;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_I64, 1, &n, &x), SES_OK);
    ses_edge_t neg = op(g, "Neg", "neg", &x, 1, NULL, 0);
    const ses_attr_t keep = ses_attr_int("keepdims", 0);
    ses_edge_t limit = op(g, "ReduceMax", NULL, &neg, 1, &keep, 1);
    assert_int_equal(ses_tensor_create(SES_I64, 1, &n, &xv), SES_OK);
    memset(ses_tensor_data(xv), 0, (size_t)n * sizeof(int64_t));
    const ses_feed_t f = {x, xv};
    assert_range_refused(g, limit, &f, 1, "Neg \"neg\", which was not computed at compile time");
    ses_tensor_release(xv);
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_range_limit_computed_from_a_fed_scalar_follows_each_run),
        cmocka_unit_test(a_shape_chain_divided_by_a_fed_value_reaches_slice_ends),
        cmocka_unit_test(a_needed_value_computed_from_a_variable_is_refused),
        cmocka_unit_test(a_needed_value_computed_from_a_random_op_is_refused),
        cmocka_unit_test(a_needed_value_over_the_folding_limit_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
