/*
 * Constant folding (compile/fold.c) on the CPU driver: a chain that computes a shape from Shape
 * (Shape -> Gather -> Add -> Div -> Unsqueeze -> Concat) reaches Reshape's shape and Slice's ends
 * as a known value, as ShuffleNet's exports need, with the values of the same graph written with
 * constants; without folding those nodes are computed all the same, since inference needs their
 * values (fold_fed_test.c has more). Shape follows a fed value's shape from run to run; a node
 * reading a fed value is not folded. Shape of an NCHWc16 value gives the NCHW dims, Shape's start
 * and end and Size fold too. Outputs above the folding limit run as usual; the option and
 * SESSION_FOLD turn off the folding of values no inference needs; a bad option value is
 * refused.
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

static ses_edge_t op(ses_graph_t *g, const char *type, const ses_edge_t *in, size_t n_in,
                     const ses_attr_t *attrs, size_t n_attrs) {
    ses_edge_t e;
    if (ses_graph_op(g, type, NULL, in, n_in, attrs, n_attrs, &e) != SES_OK)
        fail_msg("%s: %s", type, ses_last_error());
    return e;
}

static ses_edge_t binary(ses_graph_t *g, const char *type, ses_edge_t a, ses_edge_t b) {
    const ses_edge_t in[2] = {a, b};
    return op(g, type, in, 2, NULL, 0);
}

/* An int64 constant: a scalar when @p rank is 0, else the vector v[0..n). */
static ses_edge_t ints(ses_graph_t *g, size_t rank, const int64_t *v, int64_t n) {
    ses_tensor_t *t = NULL;
    ses_edge_t e;
    assert_int_equal(ses_tensor_create_from(SES_I64, rank, rank ? &n : NULL, v,
                                            (size_t)n * sizeof(int64_t), &t),
                     SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_edge_t scalar(ses_graph_t *g, int64_t v) {
    return ints(g, 0, &v, 1);
}

static ses_tensor_t *f32_tensor(size_t rank, const int64_t *dims) {
    ses_tensor_t *t = NULL;
    assert_int_equal(ses_tensor_create(SES_F32, rank, dims, &t), SES_OK);
    for (size_t i = 0; i < ses_tensor_count(t); i++)
        ((float *)ses_tensor_data(t))[i] = (float)i * 0.5f - 3.0f;
    return t;
}

typedef struct run_opts {
    uint32_t fold, layout;
} run_opts_t;

/* Compiles and runs @p fetch with @p n_feeds feeds; the values, the count of the placement's
 * "folded:" line (0 without one) and the steps. */
static ses_status_t run(ses_graph_t *g, run_opts_t o, ses_edge_t fetch, const ses_feed_t *feeds,
                        size_t n_feeds, ses_tensor_t **out, size_t *folded, size_t *steps) {
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t fed[2];
    ses_tensor_t *values[2];
    ses_status_t st;

    for (size_t i = 0; i < n_feeds; i++) {
        fed[i] = feeds[i].edge;
        values[i] = feeds[i].value;
    }
    ses_session_options_init(&so);
    so.fold = o.fold;
    so.layout = o.layout;
    so.fallback = SES_FALLBACK_DENY;
    *out = NULL;
    *folded = *steps = 0;
    st = ses_session_open(g, NULL, 0, &so, &s);
    if (st == SES_OK)
        st = ses_session_compile(s, &fetch, 1, fed, n_feeds, NULL, 0, &plan);
    if (st == SES_OK)
        st = ses_plan_run(plan, values, n_feeds, out);
    if (st == SES_OK) {
        const char *line = strstr(ses_plan_placement(plan), "folded: ");
        if (line)
            assert_int_equal(sscanf(line, "folded: %zu", folded), 1);
        *steps = ses_plan_step_count(plan);
    }
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    return st;
}

static void assert_dims(ses_tensor_t *t, size_t rank, const int64_t *dims) {
    assert_non_null(t);
    assert_int_equal(ses_tensor_rank(t), rank);
    for (size_t d = 0; d < rank; d++)
        assert_int_equal(ses_tensor_dims(t)[d], dims[d]);
}

static void assert_ints(ses_tensor_t *t, const int64_t *want, size_t n) {
    assert_non_null(t);
    assert_int_equal(ses_tensor_dtype(t), SES_I64);
    assert_int_equal(ses_tensor_count(t), n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(((const int64_t *)ses_tensor_data(t))[i], want[i]);
}

/*
 * x [N, C, 4] -> Relu -> r; half = (Shape(r)[1] + 1) / 2; the shufflenet pattern:
 * Slice(r, starts [0], ends [half], axes [1]), then Reshape to [N, half * 4] through a shape
 * built by Concat(Unsqueeze(Shape(r)[0]), Unsqueeze(half * 4)).
 */
typedef struct chain {
    ses_graph_t *g;
    ses_edge_t x, y;
} chain_t;

static void make_chain(chain_t *c) {
    const int64_t xd[3] = {-1, -1, 4}, zero = 0, axis1 = 1;
    assert_int_equal(ses_graph_create(&c->g), SES_OK);
    assert_int_equal(ses_graph_placeholder(c->g, "x", SES_F32, 3, xd, &c->x), SES_OK);
    ses_edge_t r = op(c->g, "Relu", &c->x, 1, NULL, 0);
    ses_edge_t shape = op(c->g, "Shape", &r, 1, NULL, 0);
    ses_edge_t channels = binary(c->g, "Gather", shape, scalar(c->g, 1));
    ses_edge_t half = binary(c->g, "Div", binary(c->g, "Add", channels, scalar(c->g, 1)),
                             scalar(c->g, 2));
    const ses_edge_t ax0 = ints(c->g, 1, &zero, 1);
    ses_edge_t ends = binary(c->g, "Unsqueeze", half, ax0);
    const ses_edge_t slice_in[4] = {r, ints(c->g, 1, &zero, 1), ends, ints(c->g, 1, &axis1, 1)};
    ses_edge_t sliced = op(c->g, "Slice", slice_in, 4, NULL, 0);
    ses_edge_t n = binary(c->g, "Unsqueeze", binary(c->g, "Gather", shape, scalar(c->g, 0)), ax0);
    ses_edge_t width = binary(c->g, "Unsqueeze", binary(c->g, "Mul", half, scalar(c->g, 4)), ax0);
    const ses_edge_t parts[2] = {n, width};
    const ses_attr_t cat_axis = ses_attr_int("axis", 0);
    ses_edge_t target = op(c->g, "Concat", parts, 2, &cat_axis, 1);
    c->y = binary(c->g, "Reshape", sliced, target);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void a_shape_chain_reaches_slice_and_reshape(void **state) {
    (void)state;
    chain_t c;
    const int64_t xd[3] = {2, 5, 4}, want[2] = {2, 12};
    ses_tensor_t *x = f32_tensor(3, xd), *y = NULL, *y_off = NULL;
    size_t folded, steps, folded_off, steps_off;

    make_chain(&c);
    const ses_feed_t f = {c.x, x};
    assert_int_equal(run(c.g, (run_opts_t){1, 1}, c.y, &f, 1, &y, &folded, &steps), SES_OK);
    assert_dims(y, 2, want);
    /* Channels 0..2 of each image, in order: x[n][ch][k] at n * 20 + ch * 4 + k, Relu'd. */
    for (int64_t n = 0; n < 2; n++)
        for (int64_t k = 0; k < 12; k++) {
            const float v = (float)(n * 20 + k) * 0.5f - 3.0f;
            assert_float_equal(((float *)ses_tensor_data(y))[n * 12 + k], v > 0 ? v : 0, 0);
        }
    /* Shape, both Gathers, Add, Div, Mul, three Unsqueezes and Concat: all folded. */
    assert_int_equal(folded, 10);
    assert_int_equal(steps, 3); /* Relu, Slice, Reshape */

    /* Without folding, values inference needs are still computed at compile time: every node
     * of this chain gives Slice's ends or Reshape's shape. */
    assert_int_equal(run(c.g, (run_opts_t){0, 1}, c.y, &f, 1, &y_off, &folded_off, &steps_off),
                     SES_OK);
    assert_dims(y_off, 2, want);
    assert_int_equal(folded_off, 10);
    assert_int_equal(steps_off, 3);
    ses_tensor_release(y_off);
    ses_tensor_release(y);
    ses_tensor_release(x);
    ses_graph_release(c.g);
}

static void shapes_follow_the_fed_value_from_run_to_run(void **state) {
    (void)state;
    chain_t c;
    const int64_t d1[3] = {2, 5, 4}, d2[3] = {3, 8, 4}, w1[2] = {2, 12}, w2[2] = {3, 16};
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_tensor_t *x1 = f32_tensor(3, d1), *x2 = f32_tensor(3, d2), *y = NULL;

    make_chain(&c);
    ses_session_options_init(&so);
    so.fallback = SES_FALLBACK_DENY;
    assert_int_equal(ses_session_open(c.g, NULL, 0, &so, &s), SES_OK);
    ses_feed_t f = {c.x, x1};
    assert_int_equal(ses_session_eval(s, &c.y, 1, &f, 1, NULL, 0, &y), SES_OK);
    assert_dims(y, 2, w1);
    ses_tensor_release(y);
    f.value = x2;
    assert_int_equal(ses_session_eval(s, &c.y, 1, &f, 1, NULL, 0, &y), SES_OK);
    assert_dims(y, 2, w2);
    ses_tensor_release(y);
    ses_session_destroy(s);
    ses_tensor_release(x1);
    ses_tensor_release(x2);
    ses_graph_release(c.g);
}

static void a_node_reading_a_fed_value_runs_each_time(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t k, y;
    const int64_t kd[1] = {1};
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_tensor_t *kv = NULL, *out = NULL;

    /* y = k + 1 with k fed: a step, so that each run's k gives its own y. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "k", SES_I64, 1, kd, &k), SES_OK);
    y = binary(g, "Add", k, scalar(g, 1));
    ses_session_options_init(&so);
    so.fallback = SES_FALLBACK_DENY;
    assert_int_equal(ses_session_open(g, NULL, 0, &so, &s), SES_OK);
    assert_int_equal(ses_session_compile(s, &y, 1, &k, 1, NULL, 0, &plan), SES_OK);
    for (int64_t value = 5; value < 7; value++) {
        const int64_t want = value + 1;
        assert_int_equal(ses_tensor_create_from(SES_I64, 1, kd, &value, sizeof value, &kv),
                         SES_OK);
        assert_int_equal(ses_plan_run(plan, &kv, 1, &out), SES_OK);
        assert_ints(out, &want, 1);
        assert_null(strstr(ses_plan_placement(plan), "folded"));
        assert_int_equal(ses_plan_step_count(plan), 1);
        ses_tensor_release(out);
        ses_tensor_release(kv);
    }
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void shape_of_a_blocked_value_start_end_and_size(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_edge_t x, conv, shape, tail, size;
    const int64_t xd[4] = {1, 16, 5, 5}, wd[4] = {16, 16, 3, 3}, pads[4] = {1, 1, 1, 1};
    ses_tensor_t *xv = f32_tensor(4, xd), *w = f32_tensor(4, wd), *out = NULL;
    size_t folded, steps;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    ses_edge_t in[2] = {x, {NULL, 0}};
    assert_int_equal(ses_graph_constant(g, "w", w, &in[1]), SES_OK);
    const ses_attr_t pad_attr = ses_attr_ints("pads", pads, 4);
    /* Two convolutions, so that the first one's output is an NCHWc16 value where the CPU
     * driver has NchwcConv; its shape is still the NCHW one. */
    conv = op(g, "Conv", in, 2, &pad_attr, 1);
    in[0] = conv;
    ses_edge_t conv2 = op(g, "Conv", in, 2, &pad_attr, 1);
    shape = op(g, "Shape", &conv, 1, NULL, 0);
    const ses_attr_t range[2] = {ses_attr_int("start", -2), ses_attr_int("end", 10)};
    tail = op(g, "Shape", &conv2, 1, range, 2);
    size = op(g, "Size", &conv, 1, NULL, 0);
    const ses_feed_t f = {x, xv};
    const int64_t want_shape[4] = {1, 16, 5, 5}, want_tail[2] = {5, 5}, want_size = 400;
    assert_int_equal(run(g, (run_opts_t){1, 1}, shape, &f, 1, &out, &folded, &steps), SES_OK);
    assert_ints(out, want_shape, 4);
    assert_int_equal(folded, 1);
    ses_tensor_release(out);
    assert_int_equal(run(g, (run_opts_t){1, 1}, tail, &f, 1, &out, &folded, &steps), SES_OK);
    assert_ints(out, want_tail, 2);
    ses_tensor_release(out);
    assert_int_equal(run(g, (run_opts_t){1, 1}, size, &f, 1, &out, &folded, &steps), SES_OK);
    assert_ints(out, &want_size, 1);
    assert_int_equal(ses_tensor_rank(out), 0);
    ses_tensor_release(out);
    ses_tensor_release(w);
    ses_tensor_release(xv);
    ses_graph_release(g);
}

static void large_outputs_run_as_usual(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t big[2] = {300, 300}, small[2] = {2, 3};
    ses_tensor_t *out = NULL;
    size_t folded, steps;

    /* ConstantOfShape of a constant shape: 90000 elements stay a step, 6 fold. */
    for (int k = 0; k < 2; k++) {
        const int64_t *dims = k == 0 ? big : small;
        assert_int_equal(ses_graph_create(&g), SES_OK);
        ses_edge_t shape = ints(g, 1, dims, 2);
        ses_edge_t y = op(g, "ConstantOfShape", &shape, 1, NULL, 0);
        assert_int_equal(run(g, (run_opts_t){1, 1}, y, NULL, 0, &out, &folded, &steps), SES_OK);
        assert_dims(out, 2, dims);
        assert_int_equal(folded, k == 0 ? 0 : 1);
        assert_int_equal(steps, k == 0 ? 1 : 0);
        ses_tensor_release(out);
        ses_graph_release(g);
    }
}

static void the_option_and_the_environment_turn_it_off(void **state) {
    (void)state;
    chain_t c;
    const int64_t xd[3] = {2, 5, 4};
    ses_tensor_t *x = f32_tensor(3, xd), *y = NULL;
    ses_session_options_t so;
    ses_session_t *s = NULL;
    size_t folded, steps;

    make_chain(&c);
    const ses_feed_t f = {c.x, x};
    /* SESSION_FOLD=0: a sum of constants no inference needs is a step; the shape chain, which
     * inference needs, is computed all the same. */
    setenv("SESSION_FOLD", "0", 1);
    ses_edge_t sum = binary(c.g, "Add", scalar(c.g, 2), scalar(c.g, 3));
    assert_int_equal(run(c.g, (run_opts_t){1, 1}, sum, NULL, 0, &y, &folded, &steps), SES_OK);
    assert_int_equal(folded, 0);
    assert_int_equal(steps, 1);
    ses_tensor_release(y);
    assert_int_equal(run(c.g, (run_opts_t){1, 1}, c.y, &f, 1, &y, &folded, &steps), SES_OK);
    assert_int_equal(folded, 10);
    ses_tensor_release(y);
    unsetenv("SESSION_FOLD");
    assert_int_equal(run(c.g, (run_opts_t){1, 1}, sum, NULL, 0, &y, &folded, &steps), SES_OK);
    assert_int_equal(folded, 1);
    assert_int_equal(steps, 0);
    ses_tensor_release(y);
    assert_int_equal(run(c.g, (run_opts_t){1, 1}, c.y, &f, 1, &y, &folded, &steps), SES_OK);
    assert_int_equal(folded, 10);
    ses_tensor_release(y);

    ses_session_options_init(&so);
    assert_int_equal(so.fold, 1);
    so.fold = 2;
    assert_int_equal(ses_session_open(c.g, NULL, 0, &so, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "fold is 2"));
    assert_null(s);
    ses_tensor_release(x);
    ses_graph_release(c.g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_shape_chain_reaches_slice_and_reshape),
        cmocka_unit_test(shapes_follow_the_fed_value_from_run_to_run),
        cmocka_unit_test(a_node_reading_a_fed_value_runs_each_time),
        cmocka_unit_test(shape_of_a_blocked_value_start_end_and_size),
        cmocka_unit_test(large_outputs_run_as_usual),
        cmocka_unit_test(the_option_and_the_environment_turn_it_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
