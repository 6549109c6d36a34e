/*
 * Sessions: eval semantics (pruning, feeds on any edge, variables, scopes), compiled plans,
 * placement across devices with copies, errors and close. Each semantic has a test that fails
 * if it breaks; kernel launches are counted with ses_session_kernel_calls.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <session/session.h>

#include "compile/plan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define FAKE(name) FAKE_DIR "/" name

/* ---- helpers ---------------------------------------------------------------------------- */

static ses_tensor_t *scalar(float v) {
    ses_tensor_t *t = NULL;
    assert_int_equal(ses_tensor_create_from(SES_F32, 0, NULL, &v, sizeof v, &t), SES_OK);
    return t;
}

static ses_tensor_t *vector(const float *v, int64_t n) {
    ses_tensor_t *t = NULL;
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, &n, v, (size_t)n * sizeof *v, &t), SES_OK);
    return t;
}

static float value_of(ses_tensor_t *t) {
    float v;
    assert_non_null(t);
    assert_int_equal(ses_tensor_dtype(t), SES_F32);
    memcpy(&v, ses_tensor_data(t), sizeof v);
    return v;
}

static ses_edge_t constant(ses_graph_t *g, const char *name, float v) {
    ses_tensor_t *t = scalar(v);
    ses_edge_t e;
    assert_int_equal(ses_graph_constant(g, name, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_edge_t placeholder(ses_graph_t *g, const char *name) {
    ses_edge_t e;
    assert_int_equal(ses_graph_placeholder(g, name, SES_F32, 0, NULL, &e), SES_OK);
    return e;
}

static ses_edge_t binary(ses_graph_t *g, const char *op, const char *name, ses_edge_t a,
                         ses_edge_t b) {
    ses_edge_t in[2] = {a, b}, out;
    if (ses_graph_op(g, op, name, in, 2, NULL, 0, &out) != SES_OK)
        fail_msg("%s: %s", name ? name : "(unnamed)", ses_last_error());
    return out;
}

/* A session on the CPU that runs every node as a step: these tests count kernel calls and
 * steps of graphs made of constants, which folding (fold_test.c) would compute at compile time. */
static ses_session_t *open_cpu(ses_graph_t *g) {
    ses_session_t *s = NULL;
    const char *devices[] = {"cpu"};
    ses_session_options_t options;
    ses_session_options_init(&options);
    options.fold = 0;
    if (ses_session_open(g, devices, 1, &options, &s) != SES_OK)
        fail_msg("open: %s", ses_last_error());
    return s;
}

/* Evaluates one fetch with up to two feeds and returns its float value. */
static float eval1(ses_session_t *s, ses_edge_t fetch, const ses_feed_t *feeds, size_t n_feeds) {
    ses_tensor_t *out = NULL;
    float v;
    if (ses_session_eval(s, &fetch, 1, feeds, n_feeds, NULL, 0, &out) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    v = value_of(out);
    ses_tensor_release(out);
    return v;
}

/* ---- eval semantics --------------------------------------------------------------------- */

static void only_what_the_fetches_need_runs(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t a, b, c, d;
    uint64_t before;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    a = constant(g, "a", 2);
    b = constant(g, "b", 5);
    c = binary(g, "Add", "c", a, b);
    d = binary(g, "Mul", "d", c, c);
    binary(g, "Sub", "unused", a, b);
    s = open_cpu(g);
    before = ses_session_kernel_calls(s);
    assert_true(eval1(s, c, NULL, 0) == 7.0f);
    assert_int_equal(ses_session_kernel_calls(s) - before, 1);
    before = ses_session_kernel_calls(s);
    assert_true(eval1(s, d, NULL, 0) == 49.0f);
    assert_int_equal(ses_session_kernel_calls(s) - before, 2);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* The seeds' example: c = a * b, and a feed of a overrides the constant. */
static void a_feed_overrides_a_constant_a_placeholder_and_an_intermediate(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t a, b, p, c, d, e;
    ses_tensor_t *three = scalar(3), *hundred = scalar(100), *four = scalar(4);
    uint64_t before;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    a = constant(g, "a", 2);
    b = constant(g, "b", 5);
    p = placeholder(g, "p");
    c = binary(g, "Mul", "c", a, b);
    d = binary(g, "Add", "d", c, constant(g, "one", 1));
    e = binary(g, "Mul", "e", p, b);
    s = open_cpu(g);
    assert_true(eval1(s, c, NULL, 0) == 10.0f);
    assert_true(eval1(s, c, &(ses_feed_t){a, three}, 1) == 15.0f);
    assert_true(eval1(s, e, &(ses_feed_t){p, four}, 1) == 20.0f);
    /* Feeding the intermediate c: only d runs. */
    before = ses_session_kernel_calls(s);
    assert_true(eval1(s, d, &(ses_feed_t){c, hundred}, 1) == 101.0f);
    assert_int_equal(ses_session_kernel_calls(s) - before, 1);
    ses_tensor_release(three);
    ses_tensor_release(hundred);
    ses_tensor_release(four);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void fetching_a_fed_edge_returns_the_fed_value(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t c;
    ses_tensor_t *seven = scalar(7);
    uint64_t before;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    c = binary(g, "Add", "c", constant(g, "a", 1), constant(g, "b", 2));
    s = open_cpu(g);
    before = ses_session_kernel_calls(s);
    assert_true(eval1(s, c, &(ses_feed_t){c, seven}, 1) == 7.0f);
    assert_int_equal(ses_session_kernel_calls(s) - before, 0);
    ses_tensor_release(seven);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void an_unfed_placeholder_and_an_edge_fed_twice_are_errors(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t x, y;
    ses_tensor_t *one = scalar(1), *out = (ses_tensor_t *)0x1;
    ses_feed_t twice[2];

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    x = placeholder(g, "x");
    y = binary(g, "Add", "y", x, constant(g, "k", 1));
    s = open_cpu(g);
    assert_int_equal(ses_session_eval(s, &y, 1, NULL, 0, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_null(out);
    assert_non_null(strstr(ses_last_error(), "placeholder \"x\" is not fed"));
    assert_non_null(strstr(ses_last_error(), "\"y\""));
    twice[0] = (ses_feed_t){x, one};
    twice[1] = (ses_feed_t){x, one};
    assert_int_equal(ses_session_eval(s, &y, 1, twice, 2, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "edge x is fed twice"));
    ses_tensor_release(one);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void variables_are_initialized_once_and_keep_their_values(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t init, v, twice;
    ses_tensor_t *value = NULL, *fortytwo = scalar(42);
    uint64_t before;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    init = binary(g, "Add", "init", constant(g, "one", 1), constant(g, "two", 2));
    assert_int_equal(ses_graph_variable(g, "v", init, &v), SES_OK);
    twice = binary(g, "Add", "twice", v, v);
    s = open_cpu(g);
    before = ses_session_kernel_calls(s);
    assert_true(eval1(s, twice, NULL, 0) == 6.0f);
    assert_int_equal(ses_session_kernel_calls(s) - before, 2); /* init once, then twice */
    before = ses_session_kernel_calls(s);
    assert_true(eval1(s, twice, NULL, 0) == 6.0f);
    assert_int_equal(ses_session_kernel_calls(s) - before, 1);
    /* The value lives in the session's scope, and a new value there is what evals read. */
    assert_int_equal(ses_scope_find(ses_session_scope(s), "v", &value), SES_OK);
    assert_true(value_of(value) == 3.0f);
    ses_tensor_release(value);
    assert_int_equal(ses_scope_set(ses_session_scope(s), "v", fortytwo), SES_OK);
    assert_true(eval1(s, twice, NULL, 0) == 84.0f);
    ses_tensor_release(fortytwo);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* The seeds' example: a stale model for inference beside a fresh one for training. */
static void two_sessions_on_one_graph_have_their_own_variables(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *stale, *fresh;
    ses_edge_t w, y;
    ses_tensor_t *ten = scalar(10);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_variable(g, "w", constant(g, "w0", 3), &w), SES_OK);
    y = binary(g, "Mul", "y", w, constant(g, "x", 2));
    stale = open_cpu(g);
    fresh = open_cpu(g);
    assert_true(eval1(stale, y, NULL, 0) == 6.0f);
    assert_int_equal(ses_scope_set(ses_session_scope(fresh), "w", ten), SES_OK);
    assert_true(eval1(fresh, y, NULL, 0) == 20.0f);
    assert_true(eval1(stale, y, NULL, 0) == 6.0f);
    /* Copying refreshes the stale model, and the copy is not shared. */
    assert_int_equal(ses_session_copy_variables(stale, fresh), SES_OK);
    assert_true(eval1(stale, y, NULL, 0) == 20.0f);
    *(float *)ses_tensor_data(ten) = 1;
    assert_true(eval1(stale, y, NULL, 0) == 20.0f);
    ses_tensor_release(ten);
    ses_session_destroy(stale);
    ses_session_destroy(fresh);
    ses_graph_release(g);
}

static void an_eval_in_a_private_scope_leaves_the_session_scope_alone(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t v;
    ses_tensor_t *out = NULL;
    ses_eval_options_t options = {.struct_size = sizeof options, .private_scope = 1};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_variable(g, "v", constant(g, "v0", 5), &v), SES_OK);
    s = open_cpu(g);
    assert_int_equal(ses_session_eval_ex(s, &v, 1, NULL, 0, NULL, 0, &options, &out), SES_OK);
    assert_true(value_of(out) == 5.0f);
    ses_tensor_release(out);
    assert_int_equal(ses_scope_count(ses_session_scope(s)), 0);
    assert_false(ses_scope_has_local(ses_session_scope(s), "v"));
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void fetching_a_node_without_outputs_says_to_pass_it_as_a_target(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_node_t *group = NULL;
    ses_edge_t c, bad;
    ses_tensor_t *out = NULL;
    uint64_t before;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    c = binary(g, "Add", "c", constant(g, "a", 1), constant(g, "b", 2));
    assert_int_equal(ses_graph_add_node(g, "NoOp", "group", &c, 1, NULL, 0, 0, &group), SES_OK);
    s = open_cpu(g);
    bad = (ses_edge_t){group, 0};
    assert_int_equal(ses_session_eval(s, &bad, 1, NULL, 0, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "\"group\" (NoOp) has no outputs; pass it as a target"));
    before = ses_session_kernel_calls(s);
    assert_int_equal(ses_session_eval(s, NULL, 0, NULL, 0, &group, 1, NULL), SES_OK);
    assert_int_equal(ses_session_kernel_calls(s) - before, 1);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* ---- compiled plans --------------------------------------------------------------------- */

static void a_compiled_plan_runs_with_new_feed_values_and_new_shapes(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_plan_t *plan = NULL;
    ses_edge_t x, y;
    int64_t any = -1;
    float a[3] = {1, 2, 3}, b[5] = {1, 1, 1, 1, 10};
    ses_tensor_t *ta = vector(a, 3), *tb = vector(b, 5), *out = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 1, &any, &x), SES_OK);
    y = binary(g, "Mul", "y", x, x);
    s = open_cpu(g);
    assert_int_equal(ses_session_compile(s, &y, 1, &x, 1, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_run(plan, &ta, 1, &out), SES_OK);
    assert_int_equal(ses_tensor_count(out), 3);
    assert_true(((float *)ses_tensor_data(out))[2] == 9.0f);
    ses_tensor_release(out);
    assert_int_equal(ses_plan_step_count(plan), 1);
    assert_non_null(strstr(ses_plan_placement(plan), "cpu:0 1 node"));
    assert_string_equal(ses_plan_node_device(plan, y.node), "cpu:0");
    assert_int_equal(ses_plan_run(plan, &tb, 1, &out), SES_OK);
    assert_int_equal(ses_tensor_count(out), 5);
    assert_true(((float *)ses_tensor_data(out))[4] == 100.0f);
    ses_tensor_release(out);
    /* Wrong arity is refused. */
    assert_int_equal(ses_plan_run(plan, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "1 fed edges, got 0"));
    ses_plan_destroy(plan);
    ses_tensor_release(ta);
    ses_tensor_release(tb);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/*
 * A fed value that shapes the plan (Reshape's shape, Slice's starts, Pad's pads, ...) is part
 * of what the plan was compiled for: the same shape with other values recompiles, through eval's
 * cached plans and a compiled plan alike.
 */
static void a_fed_shape_value_that_changes_recompiles_the_plan(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_plan_t *plan = NULL;
    ses_edge_t x, shape, y, fed[2];
    const int64_t six = 6, two = 2;
    const float v[6] = {1, 2, 3, 4, 5, 6};
    const int64_t as23[2] = {2, 3}, as32[2] = {3, 2};
    ses_tensor_t *tx, *t23, *t32, *out = NULL, *values[2];

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 1, &six, &x), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "shape", SES_I64, 1, &two, &shape), SES_OK);
    assert_int_equal(ses_graph_op(g, "Reshape", "y", (ses_edge_t[]){x, shape}, 2, NULL, 0, &y),
                     SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, &six, v, sizeof v, &tx), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, &two, as23, sizeof as23, &t23), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, &two, as32, sizeof as32, &t32), SES_OK);
    s = open_cpu(g);
    for (int round = 0; round < 2; round++) {
        ses_tensor_t *shapes[3] = {t23, t32, t23};
        for (int k = 0; k < 3; k++) {
            const int64_t *want = k == 1 ? as32 : as23;
            fed[0] = x;
            fed[1] = shape;
            values[0] = tx;
            values[1] = shapes[k];
            if (round == 0) {
                ses_feed_t feeds[2] = {{x, tx}, {shape, shapes[k]}};
                assert_int_equal(ses_session_eval(s, &y, 1, feeds, 2, NULL, 0, &out), SES_OK);
            } else {
                if (!plan)
                    assert_int_equal(ses_session_compile(s, &y, 1, fed, 2, NULL, 0, &plan),
                                     SES_OK);
                assert_int_equal(ses_plan_run(plan, values, 2, &out), SES_OK);
            }
            assert_int_equal(ses_tensor_rank(out), 2);
            assert_int_equal(ses_tensor_dims(out)[0], want[0]);
            assert_int_equal(ses_tensor_dims(out)[1], want[1]);
            assert_true(((float *)ses_tensor_data(out))[5] == 6.0f);
            ses_tensor_release(out);
            out = NULL;
        }
    }
    ses_plan_destroy(plan);
    ses_tensor_release(tx);
    ses_tensor_release(t23);
    ses_tensor_release(t32);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* A fetched value is written into the caller's tensor; fetched twice, or read by another
 * node too, every consumer still sees it. */
static void a_value_fetched_twice_and_read_downstream_is_right_everywhere(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t y, z, fetches[3];
    ses_tensor_t *out[3] = {NULL, NULL, NULL};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    y = binary(g, "Add", "y", constant(g, "a", 1), constant(g, "b", 2));
    z = binary(g, "Mul", "z", y, y);
    s = open_cpu(g);
    fetches[0] = y;
    fetches[1] = z;
    fetches[2] = y;
    for (int run = 0; run < 2; run++) {
        assert_int_equal(ses_session_eval(s, fetches, 3, NULL, 0, NULL, 0, out), SES_OK);
        assert_true(value_of(out[0]) == 3.0f);
        assert_true(value_of(out[1]) == 9.0f);
        assert_true(value_of(out[2]) == 3.0f);
        assert_ptr_not_equal(out[0], out[2]);
        for (int i = 0; i < 3; i++)
            ses_tensor_release(out[i]);
    }
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* A chain's intermediates share arena memory once their reader ran. */
static void the_memory_plan_reuses_buffers_along_a_chain(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_plan_t *plan = NULL;
    ses_edge_t x, y;
    int64_t n = 1024;
    ses_tensor_t *in = NULL, *out = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 1, &n, &x), SES_OK);
    y = x;
    for (int i = 0; i < 10; i++)
        y = binary(g, "Add", NULL, y, x);
    s = open_cpu(g);
    assert_int_equal(ses_tensor_create(SES_F32, 1, &n, &in), SES_OK);
    ((float *)ses_tensor_data(in))[7] = 1;
    assert_int_equal(ses_session_compile(s, &y, 1, &x, 1, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_run(plan, &in, 1, &out), SES_OK);
    assert_true(((float *)ses_tensor_data(out))[7] == 11.0f);
    /* Ten 4 KiB values; at most two are live at once. */
    assert_true(plan->compiled->arena_bytes[s->n_devices - 1] <= 2 * 4096);
    ses_tensor_release(out);
    ses_tensor_release(in);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* The kernel step of node @p name in a compiled plan. */
static const ses__step_t *kernel_step(const ses_plan_t *plan, const char *name) {
    for (size_t i = 0; i < plan->compiled->n_steps; i++) {
        const ses__step_t *step = &plan->compiled->steps[i];
        if (step->kind == SES__STEP_KERNEL && strcmp(step->node->name, name) == 0)
            return step;
    }
    fail_msg("no kernel step for \"%s\"", name);
    return NULL;
}

/* DRV-85: the host marks the inputs bound to a graph constant, and never a variable, a feed or
 * a computed value; the node given to create carries the same bits. */
static void the_host_marks_constant_inputs_and_only_those(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_plan_t *plan = NULL;
    ses_edge_t c, v, x, sum, fetches[3];
    ses_tensor_t *in = scalar(1), *out[3] = {NULL, NULL, NULL};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    c = constant(g, "c", 2);
    assert_int_equal(ses_graph_variable(g, "v", constant(g, "init", 3), &v), SES_OK);
    x = placeholder(g, "x");
    fetches[0] = binary(g, "Add", "feed_const", x, c);        /* bits: 0b10 */
    fetches[1] = binary(g, "Add", "var_const", v, c);         /* 0b10 */
    sum = binary(g, "Add", "computed", fetches[0], x);        /* 0 */
    fetches[2] = binary(g, "Add", "const_var", c, sum);       /* 0b01 */
    s = open_cpu(g);
    assert_int_equal(ses_session_compile(s, fetches, 3, &x, 1, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_run(plan, &in, 1, out), SES_OK);
    assert_true(value_of(out[0]) == 3.0f && value_of(out[1]) == 5.0f);
    assert_int_equal(kernel_step(plan, "feed_const")->drv_node.constant_inputs, 2);
    assert_int_equal(kernel_step(plan, "var_const")->drv_node.constant_inputs, 2);
    assert_int_equal(kernel_step(plan, "computed")->drv_node.constant_inputs, 0);
    assert_int_equal(kernel_step(plan, "const_var")->drv_node.constant_inputs, 1);
    assert_true(kernel_step(plan, "feed_const")->drv_node.struct_size >=
                offsetof(ses_drv_node_t, constant_inputs) + sizeof(uint64_t));
    for (size_t i = 0; i < 3; i++)
        ses_tensor_release(out[i]);
    ses_tensor_release(in);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* Empty tensors flow through a plan: inference, placement, binding and fetch all cope. */
static void zero_size_values_flow_through_a_plan(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t x, b, y, r;
    int64_t dims[2] = {0, 3}, three = 3, axes[1] = {1};
    float bias[3] = {1, 2, 3};
    ses_tensor_t *in = NULL, *tb = vector(bias, 3), *out[2] = {NULL, NULL};
    ses_attr_t keep = ses_attr_int("keepdims", 0);
    ses_edge_t fetches[2];

    (void)state;
    (void)three;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 2, dims, &x), SES_OK);
    assert_int_equal(ses_graph_constant(g, "b", tb, &b), SES_OK);
    y = binary(g, "Add", "y", x, b);
    {
        ses_tensor_t *axes_t = NULL;
        int64_t one = 1;
        ses_edge_t in2[2];
        assert_int_equal(ses_tensor_create_from(SES_I64, 1, &one, axes, sizeof axes, &axes_t), SES_OK);
        assert_int_equal(ses_graph_constant(g, "axes", axes_t, &in2[1]), SES_OK);
        in2[0] = y;
        assert_int_equal(ses_graph_op(g, "ReduceSum", "r", in2, 2, &keep, 1, &r), SES_OK);
        ses_tensor_release(axes_t);
    }
    assert_int_equal(ses_tensor_create(SES_F32, 2, dims, &in), SES_OK);
    s = open_cpu(g);
    fetches[0] = y;
    fetches[1] = r;
    if (ses_session_eval(s, fetches, 2, &(ses_feed_t){x, in}, 1, NULL, 0, out) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    assert_int_equal(ses_tensor_rank(out[0]), 2);
    assert_int_equal(ses_tensor_dims(out[0])[0], 0);
    assert_int_equal(ses_tensor_dims(out[0])[1], 3);
    assert_int_equal(ses_tensor_count(out[0]), 0);
    assert_int_equal(ses_tensor_rank(out[1]), 1);
    assert_int_equal(ses_tensor_count(out[1]), 0);
    ses_tensor_release(out[0]);
    ses_tensor_release(out[1]);
    ses_tensor_release(in);
    ses_tensor_release(tb);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* ---- devices and placement -------------------------------------------------------------- */

static ses_registry_t *registry_with_fake(void) {
    ses_registry_t *reg = NULL;
    setenv("SESSION_ADD_DRIVER_FILES", FAKE("fake_good.json"), 1);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    unsetenv("SESSION_ADD_DRIVER_FILES");
    return reg;
}

/* The fake accelerator has only Identity f32: Identity runs there, Add falls back to the CPU,
 * and the values cross between the devices through copies. */
static void nodes_fall_back_to_the_cpu_and_values_are_copied_between_devices(void **state) {
    ses_registry_t *reg = registry_with_fake();
    ses_session_options_t options;
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t x, id, y, id2;
    const char *devices[] = {"accel:0"};
    float values[2] = {1.5f, -2};
    ses_tensor_t *in = vector(values, 2), *out = NULL;
    int64_t two = 2;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 1, &two, &x), SES_OK);
    assert_int_equal(ses_graph_op(g, "Identity", "id", &x, 1, NULL, 0, &id), SES_OK);
    y = binary(g, "Add", "y", id, id);
    assert_int_equal(ses_graph_op(g, "Identity", "id2", &y, 1, NULL, 0, &id2), SES_OK);
    ses_session_options_init(&options);
    options.registry = reg;
    options.fallback = SES_FALLBACK_ALLOW;
    assert_int_equal(ses_session_open(g, devices, 1, &options, &s), SES_OK);
    assert_int_equal(ses_session_compile(s, &id2, 1, &x, 1, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_run(plan, &in, 1, &out), SES_OK);
    assert_true(((float *)ses_tensor_data(out))[0] == 3.0f);
    assert_true(((float *)ses_tensor_data(out))[1] == -4.0f);
    assert_string_equal(ses_plan_node_device(plan, id.node), "fake_good:0");
    assert_string_equal(ses_plan_node_device(plan, y.node), "cpu:0");
    assert_string_equal(ses_plan_node_device(plan, id2.node), "fake_good:0");
    /* x → accel, id → cpu, y → accel: three copies and three kernels. */
    assert_int_equal(ses_plan_step_count(plan), 6);
    assert_non_null(strstr(ses_plan_placement(plan), "fallback: Add \"y\""));
    assert_non_null(strstr(ses_plan_placement(plan), "fake_good:0 has no Add f32,f32->f32 kernel"));
    ses_tensor_release(out);
    ses_session_destroy(s);

    /* Denied, the same graph fails to compile, naming the node, the op and the device tried. */
    options.fallback = SES_FALLBACK_DENY;
    assert_int_equal(ses_session_open(g, devices, 1, &options, &s), SES_OK);
    plan = (ses_plan_t *)0x1;
    assert_int_equal(ses_session_compile(s, &id2, 1, &x, 1, NULL, 0, &plan), SES_UNIMPLEMENTED);
    assert_null(plan);
    assert_non_null(strstr(ses_last_error(), "Add \"y\": cannot run on fake_good:0"));
    /* An eval of it fails the same way. */
    {
        ses_feed_t feed = {x, in};
        assert_int_equal(ses_session_eval(s, &id2, 1, &feed, 1, NULL, 0, &out), SES_UNIMPLEMENTED);
        assert_null(out);
        assert_non_null(strstr(ses_last_error(), "Add \"y\": cannot run on fake_good:0"));
    }
    ses_session_destroy(s);
    ses_tensor_release(in);
    ses_graph_release(g);
    ses_registry_destroy(reg);
}

/* ses_node_set_device: the device asked for comes first, whatever the session's order. */
static void a_device_request_comes_before_the_priority_order(void **state) {
    ses_registry_t *reg = registry_with_fake();
    ses_session_options_t options;
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t x, id, id2, y;
    const char *devices[] = {"accel:0"};
    float values[2] = {1.5f, -2};
    ses_tensor_t *in = vector(values, 2), *out = NULL;
    int64_t two = 2;
    char long_name[300];

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 1, &two, &x), SES_OK);
    assert_int_equal(ses_graph_op(g, "Identity", "id", &x, 1, NULL, 0, &id), SES_OK);
    assert_int_equal(ses_graph_op(g, "Identity", "id2", &id, 1, NULL, 0, &id2), SES_OK);
    y = binary(g, "Add", "y", id2, id2);
    assert_null(ses_node_device(id.node));
    assert_int_equal(ses_node_set_device(id.node, "cpu"), SES_OK);
    assert_string_equal(ses_node_device(id.node), "cpu");
    ses_session_options_init(&options);
    options.registry = reg;
    options.fallback = SES_FALLBACK_DENY;
    assert_int_equal(ses_session_open(g, devices, 1, &options, &s), SES_OK);
    assert_int_equal(ses_session_compile(s, &id2, 1, &x, 1, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_run(plan, &in, 1, &out), SES_OK);
    assert_true(((float *)ses_tensor_data(out))[1] == -2.0f);
    assert_string_equal(ses_plan_node_device(plan, id.node), "cpu:0");
    assert_string_equal(ses_plan_node_device(plan, id2.node), "fake_good:0");
    ses_tensor_release(out);
    out = NULL;

    /* A request for a device without the kernel falls under the fallback policy. */
    assert_int_equal(ses_node_set_device(y.node, "fake_good:0"), SES_OK);
    assert_int_equal(ses_session_compile(s, &y, 1, &x, 1, NULL, 0, &plan), SES_UNIMPLEMENTED);
    assert_null(plan);
    assert_non_null(strstr(ses_last_error(), "Add \"y\": cannot run on fake_good:0"));

    /* A device the session does not have names the node and the session's devices. */
    assert_int_equal(ses_node_set_device(y.node, "gpu:7"), SES_OK);
    assert_int_equal(ses_session_compile(s, &y, 1, &x, 1, NULL, 0, &plan), SES_NOT_FOUND);
    assert_null(plan);
    assert_non_null(strstr(ses_last_error(), "Add \"y\" asks for device gpu:7"));
    assert_non_null(strstr(ses_last_error(), "fake_good:0, cpu:0"));

    /* Removing the request, and bad arguments. */
    assert_int_equal(ses_node_set_device(y.node, NULL), SES_OK);
    assert_null(ses_node_device(y.node));
    assert_int_equal(ses_node_set_device(NULL, "cpu"), SES_INVALID_ARGUMENT);
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    assert_int_equal(ses_node_set_device(y.node, long_name), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "299 characters"));
    ses_session_destroy(s);
    ses_tensor_release(in);
    ses_graph_release(g);
    ses_registry_destroy(reg);
}

static void an_unknown_device_name_fails_listing_the_devices(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s = (ses_session_t *)0x1;
    const char *devices[] = {"tpu:0"};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_session_open(g, devices, 1, NULL, &s), SES_NOT_FOUND);
    assert_null(s);
    assert_non_null(strstr(ses_last_error(), "\"tpu:0\""));
    assert_non_null(strstr(ses_last_error(), "cpu:0 (cpu)"));
    ses_graph_release(g);
}

/* Session options reach drivers through the host's option lookup: a bad thread count is the
 * CPU driver's to refuse, which shows it got there. */
static void session_options_reach_the_drivers_and_bad_ones_are_refused(void **state) {
    ses_session_options_t options;
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    const char *bad_threads[] = {"driver.cpu.threads=lots"};
    const char *malformed[] = {"cpu.threads=2"};
    const char *devices[] = {"cpu"};
    ses_edge_t c;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    c = binary(g, "Add", "c", constant(g, "a", 1), constant(g, "b", 2));

    ses_session_options_init(&options);
    options.driver_options = bad_threads;
    options.n_driver_options = 1;
    assert_int_equal(ses_session_open(g, devices, 1, &options, &s), SES_INVALID_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(ses_last_error(), "driver.cpu.threads is \"lots\""));

    options.driver_options = malformed;
    assert_int_equal(ses_session_open(g, devices, 1, &options, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "(\"cpu.threads=2\") must look like"));

    ses_session_options_init(&options);
    options.log_level = 9;
    assert_int_equal(ses_session_open(g, devices, 1, &options, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "log_level 9"));
    options.log_level = 1;
    options.fallback = (ses_fallback_t)7;
    assert_int_equal(ses_session_open(g, devices, 1, &options, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "unknown fallback policy 7"));

    /* A good thread count opens, and the session computes. */
    ses_session_options_init(&options);
    options.threads = 2;
    assert_int_equal(ses_session_open(g, devices, 1, &options, &s), SES_OK);
    assert_true(eval1(s, c, NULL, 0) == 3.0f);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* log_level 3 prints each plan's placement; the default prints nothing for a plain plan. */
static void a_debug_log_level_prints_the_placement_of_each_plan(void **state) {
    ses_session_options_t options;
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    const char *devices[] = {"cpu"};
    char path[] = "/tmp/ses-test-log-XXXXXX", text[4096] = "";
    int fd = mkstemp(path), saved = dup(2);
    FILE *f;
    ses_edge_t c;

    (void)state;
    assert_true(fd >= 0 && saved >= 0);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    c = binary(g, "Add", "c", constant(g, "a", 1), constant(g, "b", 2));
    ses_session_options_init(&options);
    options.log_level = 3;
    options.fold = 0;
    assert_int_equal(ses_session_open(g, devices, 1, &options, &s), SES_OK);
    fflush(stderr);
    dup2(fd, 2);
    assert_true(eval1(s, c, NULL, 0) == 3.0f);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    f = fdopen(fd, "r");
    rewind(f);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    unlink(path);
    assert_non_null(strstr(text, "libsession: debug: compiled a plan of 1 steps; placement: cpu:0 1 node"));
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* ---- errors ----------------------------------------------------------------------------- */

static void a_shape_mismatch_names_the_node_and_both_sides(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t a, b, c;
    float x[3] = {0}, y[4] = {0};
    ses_tensor_t *ta = vector(x, 3), *tb = vector(y, 4), *out = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "a", ta, &a), SES_OK);
    assert_int_equal(ses_graph_constant(g, "b", tb, &b), SES_OK);
    c = binary(g, "Add", "sum", a, b);
    s = open_cpu(g);
    assert_int_equal(ses_session_eval(s, &c, 1, NULL, 0, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_null(out);
    assert_non_null(strstr(ses_last_error(), "\"sum\""));
    assert_non_null(strstr(ses_last_error(), "f32[3]"));
    assert_non_null(strstr(ses_last_error(), "f32[4]"));
    ses_tensor_release(ta);
    ses_tensor_release(tb);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void a_dtype_mismatch_names_the_node_and_both_dtypes(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t a, b, c;
    int64_t seven = 7;
    ses_tensor_t *ti = NULL, *out = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    a = constant(g, "a", 1);
    assert_int_equal(ses_tensor_create_from(SES_I64, 0, NULL, &seven, sizeof seven, &ti), SES_OK);
    assert_int_equal(ses_graph_constant(g, "b", ti, &b), SES_OK);
    c = binary(g, "Add", "mixed", a, b);
    s = open_cpu(g);
    assert_int_equal(ses_session_eval(s, &c, 1, NULL, 0, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_null(out);
    assert_non_null(strstr(ses_last_error(), "\"mixed\""));
    assert_non_null(strstr(ses_last_error(), "f32"));
    assert_non_null(strstr(ses_last_error(), "i64"));
    ses_tensor_release(ti);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void an_unknown_op_type_is_not_found(void **state) {
    ses_graph_t *g = NULL;
    ses_node_t *n = (ses_node_t *)0x1;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_add_node(g, "Frobnicate", "f", NULL, 0, NULL, 0, 0, &n),
                     SES_NOT_FOUND);
    assert_null(n);
    assert_non_null(strstr(ses_last_error(), "unknown op type \"Frobnicate\""));
    ses_graph_release(g);
}

/* The public API cannot build a cycle; an importer could, and the compiler refuses it. */
static void a_cycle_is_refused_naming_a_node_on_it(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t a, b, c;
    ses_tensor_t *out = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    a = constant(g, "a", 1);
    b = binary(g, "Add", "b", a, a);
    c = binary(g, "Add", "c", b, a);
    b.node->inputs[1] = c; /* b reads c, which reads b */
    s = open_cpu(g);
    assert_int_equal(ses_session_eval(s, &c, 1, NULL, 0, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "cycle"));
    assert_non_null(strstr(ses_last_error(), "\"c\""));
    b.node->inputs[1] = a;
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void null_arguments_and_eval_after_close_are_refused(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t c;
    ses_tensor_t *out = NULL;
    ses_plan_t *plan = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    c = binary(g, "Add", "c", constant(g, "a", 1), constant(g, "b", 2));
    assert_int_equal(ses_session_open(NULL, NULL, 0, NULL, &s), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_session_open(g, NULL, 0, NULL, NULL), SES_INVALID_ARGUMENT);
    s = open_cpu(g);
    assert_int_equal(ses_session_eval(NULL, &c, 1, NULL, 0, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_session_eval(s, &c, 1, NULL, 0, NULL, 0, NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_session_eval(s, NULL, 0, NULL, 0, NULL, 0, NULL), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "nothing to fetch or run"));
    assert_int_equal(ses_session_eval(s, &c, 1, &(ses_feed_t){c, NULL}, 1, NULL, 0, &out),
                     SES_INVALID_ARGUMENT);
    assert_int_equal(ses_session_compile(s, &c, 1, NULL, 0, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_session_close(s), SES_OK);
    assert_int_equal(ses_session_close(s), SES_OK);
    assert_int_equal(ses_session_eval(s, &c, 1, NULL, 0, NULL, 0, &out), SES_FAILED_PRECONDITION);
    assert_non_null(strstr(ses_last_error(), "the session is closed"));
    assert_null(out);
    ses_session_destroy(s);
    ses_session_destroy(NULL);
    ses_graph_release(g);
}

/* ---- threads ---------------------------------------------------------------------------- */

typedef struct worker {
    ses_session_t *s;
    ses_edge_t x, y;
    float input;
    int ok;
} worker_t;

static void *evaluate_many(void *arg) {
    worker_t *w = arg;
    ses_tensor_t *in = NULL;
    float v = w->input;

    w->ok = ses_tensor_create_from(SES_F32, 0, NULL, &v, sizeof v, &in) == SES_OK;
    for (int i = 0; i < 200 && w->ok; i++) {
        ses_tensor_t *out = NULL;
        ses_feed_t feed = {w->x, in};
        w->ok = ses_session_eval(w->s, &w->y, 1, &feed, 1, NULL, 0, &out) == SES_OK &&
                *(float *)ses_tensor_data(out) == 2 * v;
        ses_tensor_release(out);
    }
    ses_tensor_release(in);
    return NULL;
}

static void evals_run_concurrently_on_one_session(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t x, y;
    pthread_t threads[4];
    worker_t workers[4];

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    x = placeholder(g, "x");
    y = binary(g, "Add", "y", x, x);
    s = open_cpu(g);
    for (int i = 0; i < 4; i++) {
        workers[i] = (worker_t){s, x, y, (float)i + 1, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, evaluate_many, &workers[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        assert_true(workers[i].ok);
    }
    ses_session_destroy(s);
    ses_graph_release(g);
}


/* ---- issue 18: scopes across close, private scopes, compile, plan keys, messages -------- */

static float scope_value(ses_scope_t *scope, const char *name) {
    ses_tensor_t *t = NULL;
    float v;
    if (ses_scope_find(scope, name, &t) != SES_OK)
        fail_msg("find %s: %s", name, ses_last_error());
    v = value_of(t);
    ses_tensor_release(t);
    return v;
}

/* The header promises the scope is emptied and owned by the session: the pointer taken before
 * a close must stay usable until destroy (under ASan, a use after free fails here). */
static void the_session_scope_stays_valid_and_empty_after_close(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_scope_t *scope;
    ses_edge_t v;
    ses_tensor_t *out = NULL, *seven = scalar(7);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_variable(g, "v", constant(g, "v0", 5), &v), SES_OK);
    s = open_cpu(g);
    scope = ses_session_scope(s);
    assert_int_equal(ses_session_eval(s, &v, 1, NULL, 0, NULL, 0, &out), SES_OK);
    ses_tensor_release(out);
    assert_int_equal(ses_scope_count(scope), 1);
    assert_true(ses_session_is_open(s));

    assert_int_equal(ses_session_close(s), SES_OK);
    assert_false(ses_session_is_open(s));
    assert_ptr_equal(ses_session_scope(s), scope);
    assert_int_equal(ses_scope_count(scope), 0);
    assert_false(ses_scope_has_local(scope, "v"));
    assert_int_equal(ses_scope_set(scope, "after", seven), SES_OK);
    assert_int_equal(ses_scope_count(scope), 1);
    /* Closing twice changes nothing; destroy frees what is left. */
    assert_int_equal(ses_session_close(s), SES_OK);
    assert_int_equal(ses_scope_count(scope), 1);
    ses_session_destroy(s);
    assert_false(ses_session_is_open(NULL));
    ses_tensor_release(seven);
    ses_graph_release(g);
}

/* Close succeeds with a caller's child scope alive, emptying it; destroy detaches it, and the
 * caller destroys it after (nothing leaks under ASan). */
static void a_close_with_a_child_scope_alive_empties_it_and_destroy_detaches_it(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_scope_t *child = NULL, *grandchild = NULL;
    ses_tensor_t *one = scalar(1), *found = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    s = open_cpu(g);
    assert_int_equal(ses_scope_set(ses_session_scope(s), "root", one), SES_OK);
    assert_int_equal(ses_scope_create_child(ses_session_scope(s), &child), SES_OK);
    assert_int_equal(ses_scope_create_child(child, &grandchild), SES_OK);
    assert_int_equal(ses_scope_set(child, "mine", one), SES_OK);
    assert_int_equal(ses_scope_set(grandchild, "deep", one), SES_OK);
    assert_int_equal(ses_scope_find(grandchild, "root", &found), SES_OK);
    ses_tensor_release(found);

    assert_int_equal(ses_session_close(s), SES_OK);
    assert_false(ses_session_is_open(s));
    assert_int_equal(ses_scope_count(child), 0);
    assert_int_equal(ses_scope_count(grandchild), 0);
    assert_ptr_equal(ses_scope_parent(child), ses_session_scope(s));

    ses_session_destroy(s);
    assert_null(ses_scope_parent(child));
    assert_ptr_equal(ses_scope_parent(grandchild), child);
    assert_int_equal(ses_scope_set(grandchild, "later", one), SES_OK);
    assert_int_equal(ses_scope_find(grandchild, "root", &found), SES_NOT_FOUND);
    assert_int_equal(ses_scope_destroy(child), SES_FAILED_PRECONDITION);
    assert_int_equal(ses_scope_destroy(grandchild), SES_OK);
    assert_int_equal(ses_scope_destroy(child), SES_OK);
    ses_tensor_release(one);
    ses_graph_release(g);
}

/* A training step in a private scope (the example's probe) moves neither the weights nor the
 * optimizer's state of the session: copy-on-write. */
static void a_training_step_in_a_private_scope_leaves_the_weights_alone(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_scope_t *root;
    ses_node_t *step = NULL;
    ses_edge_t w, loss;
    ses_optimizer_t o;
    ses_tensor_t *out = NULL;
    ses_eval_options_t private_eval = {.struct_size = sizeof private_eval, .private_scope = 1};
    float w1, m1;
    size_t entries;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_variable(g, "w", constant(g, "w0", 0.5f), &w), SES_OK);
    loss = binary(g, "Mul", "loss", w, w);
    ses_optimizer_momentum(&o, 0.1, 0.5, 0);
    assert_int_equal(ses_minimize(g, "train", loss, &o, NULL, 0, &step), SES_OK);
    s = open_cpu(g);
    root = ses_session_scope(s);

    /* One real step: w and its momentum live in the session's scope. */
    assert_int_equal(ses_session_eval(s, NULL, 0, NULL, 0, &step, 1, NULL), SES_OK);
    w1 = scope_value(root, "w");
    m1 = scope_value(root, "w/momentum");
    assert_true(w1 < 0.5f);
    entries = ses_scope_count(root);

    /* A private step sees the session's values, updates its own copies, and they vanish. */
    assert_int_equal(ses_session_eval_ex(s, &w, 1, NULL, 0, &step, 1, &private_eval, &out), SES_OK);
    assert_true(value_of(out) < w1);
    ses_tensor_release(out);
    assert_true(scope_value(root, "w") == w1);
    assert_true(scope_value(root, "w/momentum") == m1);
    assert_int_equal(ses_scope_count(root), entries);

    /* And the session's next step starts from where the session was. */
    assert_int_equal(ses_session_eval_ex(s, &w, 1, NULL, 0, &step, 1, &private_eval, &out), SES_OK);
    {
        float private_w = value_of(out);
        ses_tensor_release(out);
        assert_int_equal(ses_session_eval(s, &w, 1, NULL, 0, &step, 1, &out), SES_OK);
        assert_true(value_of(out) == private_w);
        ses_tensor_release(out);
    }
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* ses_session_compile infers, places, binds and plans memory for the declared types: its errors
 * come from it, and the placement is there before any run. */
static void compile_reports_what_the_declared_types_decide_before_any_run(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_plan_t *plan = (ses_plan_t *)0x1;
    ses_edge_t a, b, bad, x, y, any, z;
    ses_tensor_t *ta = NULL, *tb = NULL, *in = NULL, *out = NULL;
    const int64_t da[] = {2, 3}, db[] = {4, 5}, dx[] = {2}, dany[] = {-1};
    const float values[] = {1, 2};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 2, da, &ta), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 2, db, &tb), SES_OK);
    assert_int_equal(ses_graph_constant(g, "a", ta, &a), SES_OK);
    assert_int_equal(ses_graph_constant(g, "b", tb, &b), SES_OK);
    bad = binary(g, "MatMul", "bad", a, b);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 1, dx, &x), SES_OK);
    y = binary(g, "Add", "y", x, x);
    assert_int_equal(ses_graph_placeholder(g, "any", SES_F32, 1, dany, &any), SES_OK);
    z = binary(g, "Mul", "z", any, any);
    s = open_cpu(g);

    /* A shape error: the compile fails naming the node and both sides. */
    assert_int_equal(ses_session_compile(s, &bad, 1, NULL, 0, NULL, 0, &plan), SES_INVALID_ARGUMENT);
    assert_null(plan);
    assert_non_null(strstr(ses_last_error(), "\"bad\""));
    assert_non_null(strstr(ses_last_error(), "[2,3]"));

    /* Declared types: compiled now. */
    assert_int_equal(ses_session_compile(s, &y, 1, &x, 1, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_step_count(plan), 1);
    assert_string_equal(ses_plan_node_device(plan, y.node), "cpu:0");
    assert_non_null(strstr(ses_plan_placement(plan), "cpu:0"));
    in = vector(values, 2);
    assert_int_equal(ses_plan_run(plan, &in, 1, &out), SES_OK);
    assert_true(((float *)ses_tensor_data(out))[1] == 4.0f);
    ses_tensor_release(out);

    /* A -1 dimension: only a run (or ses_plan_prepare) can tell the type. */
    assert_int_equal(ses_session_compile(s, &z, 1, &any, 1, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_step_count(plan), 0);
    assert_int_equal(ses_plan_prepare(plan, &in, 1), SES_OK);
    assert_int_equal(ses_plan_step_count(plan), 1);
    assert_string_equal(ses_plan_node_device(plan, z.node), "cpu:0");
    assert_int_equal(ses_plan_prepare(plan, NULL, 1), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_plan_prepare(plan, &in, 2), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_plan_prepare(NULL, &in, 1), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_plan_run(plan, NULL, 1, &out), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_plan_run(plan, &in, 1, &out), SES_OK);
    assert_true(((float *)ses_tensor_data(out))[1] == 4.0f);
    ses_tensor_release(out);

    ses_session_destroy(s);
    ses_tensor_release(in);
    ses_tensor_release(ta);
    ses_tensor_release(tb);
    ses_graph_release(g);
}

/* A fed value that shapes the plan (Reshape's shape) cannot be known at compile: the compile
 * succeeds and the plan compiles at its first run. */
static void a_fed_shape_value_defers_the_compile_to_the_first_run(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_plan_t *plan = NULL;
    ses_edge_t data, shape, r, in[2];
    ses_tensor_t *tdata = NULL, *tshape = NULL, *feeds[2], *out = NULL;
    const int64_t d6[] = {6}, d2[] = {2}, want[] = {2, 3};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "data", SES_F32, 1, d6, &data), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "shape", SES_I64, 1, d2, &shape), SES_OK);
    in[0] = data;
    in[1] = shape;
    assert_int_equal(ses_graph_op(g, "Reshape", "r", in, 2, NULL, 0, &r), SES_OK);
    s = open_cpu(g);
    assert_int_equal(ses_session_compile(s, &r, 1, in, 2, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_step_count(plan), 0);
    assert_int_equal(ses_tensor_create(SES_F32, 1, d6, &tdata), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, d2, want, sizeof want, &tshape), SES_OK);
    feeds[0] = tdata;
    feeds[1] = tshape;
    assert_int_equal(ses_plan_run(plan, feeds, 2, &out), SES_OK);
    assert_int_equal(ses_tensor_rank(out), 2);
    ses_tensor_release(out);
    ses_session_destroy(s);
    ses_tensor_release(tdata);
    ses_tensor_release(tshape);
    ses_graph_release(g);
}

/* Plan-cache keys compare edges by their fields: the same request with other bytes in each
 * ses_edge_t's padding finds the same plan (before, memcmp saw the padding: a new plan each). */
static void edges_that_differ_only_in_padding_find_the_same_plan(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t x, y, fetch, fed;
    ses_tensor_t *one = scalar(1), *out = NULL;
    ses_feed_t feed;
    size_t plans;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    x = placeholder(g, "x");
    y = binary(g, "Add", "y", x, x);
    s = open_cpu(g);
    for (int fill = 0; fill < 3; fill++) {
        memset(&fetch, fill == 0 ? 0 : fill == 1 ? 0xA5 : 0x5A, sizeof fetch);
        memset(&fed, fill == 0 ? 0xFF : fill == 1 ? 0 : 0x33, sizeof fed);
        fetch.node = y.node;
        fetch.index = y.index;
        fed.node = x.node;
        fed.index = x.index;
        feed.edge = fed;
        feed.value = one;
        assert_int_equal(ses_session_eval(s, &fetch, 1, &feed, 1, NULL, 0, &out), SES_OK);
        assert_true(value_of(out) == 2.0f);
        ses_tensor_release(out);
        if (fill == 0)
            plans = s->n_plans;
        assert_int_equal(s->n_plans, plans);
    }
    ses_session_destroy(s);
    ses_tensor_release(one);
    ses_graph_release(g);
}

/* Nobody fetched the placeholder an initializer reads: the message says what needs it. */
static void a_variable_initialized_from_a_placeholder_says_so(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t p, v, y;
    ses_tensor_t *out = NULL, *two = scalar(2);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    p = placeholder(g, "init");
    assert_int_equal(ses_graph_variable(g, "v", p, &v), SES_OK);
    y = binary(g, "Add", "y", v, v);
    s = open_cpu(g);
    assert_int_equal(ses_session_eval(s, &y, 1, NULL, 0, NULL, 0, &out), SES_FAILED_PRECONDITION);
    assert_null(out);
    assert_null(strstr(ses_last_error(), "fetched"));
    assert_non_null(strstr(ses_last_error(), "variable \"v\""));
    assert_non_null(strstr(ses_last_error(), "placeholder \"init\""));
    /* Set, it needs no initializer. */
    assert_int_equal(ses_scope_set(ses_session_scope(s), "v", two), SES_OK);
    assert_true(eval1(s, y, NULL, 0) == 4.0f);
    ses_session_destroy(s);
    ses_tensor_release(two);
    ses_graph_release(g);
}

/* "(-1: any size)" explains a -1 in the expected type; without one it is noise. */
static void the_any_size_hint_appears_only_with_a_minus_one(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_edge_t fixed, open, a, b;
    const int64_t d3[] = {3}, dany[] = {-1, 3}, d2[] = {2};
    const float v[2] = {1, 2};
    ses_tensor_t *wrong = vector(v, 2), *out = NULL;
    ses_feed_t feed;

    (void)state;
    (void)d2;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "fixed", SES_F32, 1, d3, &fixed), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "open", SES_F32, 2, dany, &open), SES_OK);
    a = binary(g, "Add", "a", fixed, fixed);
    b = binary(g, "Add", "b", open, open);
    s = open_cpu(g);
    feed = (ses_feed_t){fixed, wrong};
    assert_int_equal(ses_session_eval(s, &a, 1, &feed, 1, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "expected f32[3], got f32[2]"));
    assert_null(strstr(ses_last_error(), "any size"));
    feed = (ses_feed_t){open, wrong};
    assert_int_equal(ses_session_eval(s, &b, 1, &feed, 1, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "(-1: any size)"));
    ses_session_destroy(s);
    ses_tensor_release(wrong);
    ses_graph_release(g);
}


/* A constant read on another device is uploaded once and stays there: later runs move only
 * their feeds in and their fetches out, and the counters say so. */
static void a_constant_on_a_device_is_uploaded_once_and_transfers_are_counted(void **state) {
    ses_registry_t *reg = registry_with_fake();
    ses_session_options_t options;
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t c, x, id_c, id_x;
    const char *devices[] = {"accel:0"};
    const float cv[4] = {1, 2, 3, 4}, xv[2] = {5, 6};
    int64_t four = 4, two = 2;
    ses_tensor_t *tc = NULL, *tx = vector(xv, 2), *out[2] = {NULL, NULL};
    ses_edge_t fetches[2];
    ses_transfer_stats_t first = {sizeof first, 0, 0, 0, 0, 0, 0, 0}, last = first, total = first;
    ses_transfer_stats_t small = {4, 0, 0, 0, 0, 0, 0, 0};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, &four, cv, sizeof cv, &tc), SES_OK);
    assert_int_equal(ses_graph_constant(g, "c", tc, &c), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 1, &two, &x), SES_OK);
    assert_int_equal(ses_graph_op(g, "Identity", "id_c", &c, 1, NULL, 0, &id_c), SES_OK);
    assert_int_equal(ses_graph_op(g, "Identity", "id_x", &x, 1, NULL, 0, &id_x), SES_OK);
    fetches[0] = id_c;
    fetches[1] = id_x;
    ses_session_options_init(&options);
    options.registry = reg;
    options.fallback = SES_FALLBACK_DENY;
    options.fold = 0; /* Identity of a constant would be folded on the host */
    assert_int_equal(ses_session_open(g, devices, 1, &options, &s), SES_OK);
    assert_int_equal(ses_session_compile(s, fetches, 2, &x, 1, NULL, 0, &plan), SES_OK);
    assert_string_equal(ses_plan_node_device(plan, id_c.node), "fake_good:0");
    /* Compiling uploaded the constant: 16 bytes, once, for the session. */
    assert_int_equal(ses_session_transfers(s, &total), SES_OK);
    assert_int_equal(total.h2d_bytes, 16);
    assert_int_equal(total.h2d_copies, 1);
    for (int r = 0; r < 3; r++) {
        assert_int_equal(ses_plan_run(plan, &tx, 1, out), SES_OK);
        assert_true(((float *)ses_tensor_data(out[0]))[3] == 4.0f);
        assert_true(((float *)ses_tensor_data(out[1]))[1] == 6.0f);
        ses_tensor_release(out[0]);
        ses_tensor_release(out[1]);
        if (r == 0)
            assert_int_equal(ses_plan_transfers(plan, &first), SES_OK);
    }
    assert_int_equal(ses_plan_transfers(plan, &last), SES_OK);
    assert_int_equal(last.runs, 3);
    /* Runs 2 and 3: the feed in (8 bytes) and both fetches out (16 + 8 bytes), nothing else. */
    assert_int_equal(last.h2d_bytes - first.h2d_bytes, 2 * 8);
    assert_int_equal(last.h2d_copies - first.h2d_copies, 2);
    assert_int_equal(last.d2h_bytes - first.d2h_bytes, 2 * 24);
    assert_int_equal(last.d2h_copies - first.d2h_copies, 4);
    assert_int_equal(last.d2d_copies, 0);
    /* The session saw the upload and the three runs. */
    assert_int_equal(ses_session_transfers(s, &total), SES_OK);
    assert_int_equal(total.runs, 3);
    assert_int_equal(total.h2d_bytes, 16 + 3 * 8);
    assert_int_equal(ses_plan_transfers(plan, &small), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_plan_transfers(NULL, &last), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_session_transfers(s, NULL), SES_INVALID_ARGUMENT);
    ses_session_destroy(s);
    ses_tensor_release(tc);
    ses_tensor_release(tx);
    ses_graph_release(g);
    ses_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(only_what_the_fetches_need_runs),
        cmocka_unit_test(a_feed_overrides_a_constant_a_placeholder_and_an_intermediate),
        cmocka_unit_test(fetching_a_fed_edge_returns_the_fed_value),
        cmocka_unit_test(an_unfed_placeholder_and_an_edge_fed_twice_are_errors),
        cmocka_unit_test(variables_are_initialized_once_and_keep_their_values),
        cmocka_unit_test(two_sessions_on_one_graph_have_their_own_variables),
        cmocka_unit_test(an_eval_in_a_private_scope_leaves_the_session_scope_alone),
        cmocka_unit_test(fetching_a_node_without_outputs_says_to_pass_it_as_a_target),
        cmocka_unit_test(a_compiled_plan_runs_with_new_feed_values_and_new_shapes),
        cmocka_unit_test(a_fed_shape_value_that_changes_recompiles_the_plan),
        cmocka_unit_test(a_value_fetched_twice_and_read_downstream_is_right_everywhere),
        cmocka_unit_test(the_memory_plan_reuses_buffers_along_a_chain),
        cmocka_unit_test(the_host_marks_constant_inputs_and_only_those),
        cmocka_unit_test(zero_size_values_flow_through_a_plan),
        cmocka_unit_test(nodes_fall_back_to_the_cpu_and_values_are_copied_between_devices),
        cmocka_unit_test(a_device_request_comes_before_the_priority_order),
        cmocka_unit_test(an_unknown_device_name_fails_listing_the_devices),
        cmocka_unit_test(session_options_reach_the_drivers_and_bad_ones_are_refused),
        cmocka_unit_test(a_debug_log_level_prints_the_placement_of_each_plan),
        cmocka_unit_test(a_shape_mismatch_names_the_node_and_both_sides),
        cmocka_unit_test(a_dtype_mismatch_names_the_node_and_both_dtypes),
        cmocka_unit_test(an_unknown_op_type_is_not_found),
        cmocka_unit_test(a_cycle_is_refused_naming_a_node_on_it),
        cmocka_unit_test(null_arguments_and_eval_after_close_are_refused),
        cmocka_unit_test(evals_run_concurrently_on_one_session),
        cmocka_unit_test(the_session_scope_stays_valid_and_empty_after_close),
        cmocka_unit_test(a_close_with_a_child_scope_alive_empties_it_and_destroy_detaches_it),
        cmocka_unit_test(a_training_step_in_a_private_scope_leaves_the_weights_alone),
        cmocka_unit_test(compile_reports_what_the_declared_types_decide_before_any_run),
        cmocka_unit_test(a_fed_shape_value_defers_the_compile_to_the_first_run),
        cmocka_unit_test(edges_that_differ_only_in_padding_find_the_same_plan),
        cmocka_unit_test(a_variable_initialized_from_a_placeholder_says_so),
        cmocka_unit_test(the_any_size_hint_appears_only_with_a_minus_one),
        cmocka_unit_test(a_constant_on_a_device_is_uploaded_once_and_transfers_are_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
