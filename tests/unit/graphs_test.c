/*
 * Streams and graphs (DRV-77 to DRV-80): a plan's runs of kernels on a device that records
 * graphs are captured on the first run and replayed after, with the same results as launching
 * every kernel; a view (a Reshape that moves no bytes, run by nothing) does not split a graph.
 * The fake_graphs driver runs work at once, records it while a stream captures, and replays its
 * records; its Mul is flagged SES_DRV_KERNEL_NO_CAPTURE, its Identity refuses to be recorded,
 * and its Reshape fails if it is ever run. fake_graphs_1_0 is the same code speaking ABI 1.0. A session that profiles
 * (ses_session_options_t.profile) captures nothing and times each kernel and copy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <session/registry.h>
#include <session/session.h>

#define N 4

typedef struct fixture {
    ses_registry_t *reg;
    ses_graph_t *g;
    ses_edge_t x, c, y;
    ses_session_t *s;
    ses_plan_t *plan;
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);

    if (!f)
        return -1;
    setenv("SESSION_ADD_DRIVER_FILES", FAKE_DIR "/fake_graphs.json:" FAKE_DIR "/fake_graphs_1_0.json",
           1);
    if (ses_registry_create(&f->reg) != SES_OK || ses_graph_create(&f->g) != SES_OK)
        return -1;
    unsetenv("SESSION_ADD_DRIVER_FILES");
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;

    ses_plan_destroy(f->plan);
    ses_session_destroy(f->s);
    ses_graph_release(f->g);
    ses_registry_destroy(f->reg);
    free(f);
    return 0;
}

/* x: a placeholder [-1]; c: the constant [1, 2, -30, 4] (repeated for longer feeds). */
static void add_inputs(fixture_t *f) {
    static const float c[N] = {1, 2, -30, 4};
    const int64_t any = -1, n = N;
    ses_tensor_t *t;

    assert_int_equal(ses_graph_placeholder(f->g, "x", SES_F32, 1, &any, &f->x), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, &n, c, sizeof c, &t), SES_OK);
    assert_int_equal(ses_graph_constant(f->g, "c", t, &f->c), SES_OK);
    ses_tensor_release(t);
}

/* Appends op(prev, c) (or op(prev) for Relu and Identity) and returns its output. */
static ses_edge_t chain(fixture_t *f, const char *op, ses_edge_t prev) {
    ses_edge_t in[2] = {prev, f->c}, out;
    int unary = strcmp(op, "Relu") == 0 || strcmp(op, "Identity") == 0;

    assert_int_equal(ses_graph_op(f->g, op, NULL, in, unary ? 1 : 2, NULL, 0, &out), SES_OK);
    return out;
}

static void open_on(fixture_t *f, const char *device, uint32_t graphs) {
    ses_session_options_t so;

    ses_session_options_init(&so);
    so.registry = f->reg;
    so.fallback = SES_FALLBACK_DENY; /* every node on the fake device, or the test fails */
    so.graphs = graphs;
    assert_int_equal(ses_session_open(f->g, &device, 1, &so, &f->s), SES_OK);
    assert_int_equal(ses_session_compile(f->s, &f->y, 1, &f->x, 1, NULL, 0, &f->plan), SES_OK);
}

/* Runs the plan on x = base + i and checks y against @p expect computed on the host. */
static void run_and_check(fixture_t *f, float base, float (*expect)(float x, float c)) {
    static const float c[N] = {1, 2, -30, 4};
    const int64_t n = N;
    float x[N];
    ses_tensor_t *t, *y = NULL;

    for (int i = 0; i < N; i++)
        x[i] = base + (float)i;
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, &n, x, sizeof x, &t), SES_OK);
    assert_int_equal(ses_plan_run(f->plan, &t, 1, &y), SES_OK);
    for (int i = 0; i < N; i++)
        assert_float_equal(((const float *)ses_tensor_data(y))[i], expect(x[i], c[i]), 0);
    ses_tensor_release(t);
    ses_tensor_release(y);
}

static float relu(float v) {
    return v > 0 ? v : 0;
}

/* y = relu(x + c) + c */
static float add_relu_add(float x, float c) {
    return relu(x + c) + c;
}

static void a_chain_on_one_device_is_captured_once_and_replayed(void **state) {
    fixture_t *f = *state;

    add_inputs(f);
    f->y = chain(f, "Add", chain(f, "Relu", chain(f, "Add", f->x)));
    open_on(f, "fake_graphs:0", 1);
    run_and_check(f, 0, add_relu_add);
    run_and_check(f, 10, add_relu_add);
    run_and_check(f, -100, add_relu_add);
    /* The three kernels were called once, while recording; each run launched the graph. */
    assert_int_equal(ses_session_graph_captures(f->s), 1);
    assert_int_equal(ses_session_graph_launches(f->s), 3);
    assert_int_equal(ses_session_kernel_calls(f->s), 3);
}

/* A Reshape in the chain is a view of its input (compile/memory.c): nothing runs for it, and
 * the kernels around it are still one graph. The fake's Reshape fails if it is ever run. */
static void a_view_in_the_chain_does_not_split_the_graph(void **state) {
    fixture_t *f = *state;
    const int64_t one = 1, shape[1] = {N};
    ses_tensor_t *t;
    ses_edge_t in[2], view;

    add_inputs(f);
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, &one, shape, sizeof shape, &t), SES_OK);
    in[0] = chain(f, "Relu", chain(f, "Add", f->x));
    assert_int_equal(ses_graph_constant(f->g, "shape", t, &in[1]), SES_OK);
    ses_tensor_release(t);
    assert_int_equal(ses_graph_op(f->g, "Reshape", "view", in, 2, NULL, 0, &view), SES_OK);
    f->y = chain(f, "Add", view);
    open_on(f, "fake_graphs:0", 1);
    run_and_check(f, 0, add_relu_add);
    run_and_check(f, 10, add_relu_add);
    assert_int_equal(ses_session_graph_captures(f->s), 1);
    assert_int_equal(ses_session_graph_launches(f->s), 2);
    assert_int_equal(ses_session_kernel_calls(f->s), 3);
}

static void with_graphs_off_every_kernel_is_launched_every_run(void **state) {
    fixture_t *f = *state;

    add_inputs(f);
    f->y = chain(f, "Add", chain(f, "Relu", chain(f, "Add", f->x)));
    open_on(f, "fake_graphs:0", 0);
    run_and_check(f, 0, add_relu_add);
    run_and_check(f, 10, add_relu_add);
    run_and_check(f, -100, add_relu_add);
    assert_int_equal(ses_session_graph_captures(f->s), 0);
    assert_int_equal(ses_session_graph_launches(f->s), 0);
    assert_int_equal(ses_session_kernel_calls(f->s), 9);
}

/* y = relu((x + c + c) * c + c) */
static float split_expect(float x, float c) {
    return relu((x + c + c) * c + c);
}

static void a_kernel_flagged_no_capture_splits_the_chain(void **state) {
    fixture_t *f = *state;

    add_inputs(f);
    f->y = chain(f, "Relu", chain(f, "Add", chain(f, "Mul", chain(f, "Add", chain(f, "Add", f->x)))));
    open_on(f, "fake_graphs:0", 1);
    run_and_check(f, 0, split_expect);
    run_and_check(f, 3, split_expect);
    /* [Add, Add] and [Add, Relu] are graphs; Mul runs between them, every run (the fake fails
     * a Mul that is recorded). */
    assert_int_equal(ses_session_graph_captures(f->s), 2);
    assert_int_equal(ses_session_graph_launches(f->s), 4);
    assert_int_equal(ses_session_kernel_calls(f->s), 4 + 2);
}

/* y = x + c + c + c (through an Identity) */
static float add3(float x, float c) {
    return x + c + c + c;
}

static void a_kernel_that_refuses_recording_makes_its_run_go_one_by_one(void **state) {
    fixture_t *f = *state;

    add_inputs(f);
    f->y = chain(f, "Add", chain(f, "Add", chain(f, "Identity", chain(f, "Add", f->x))));
    open_on(f, "fake_graphs:0", 1);
    run_and_check(f, 0, add3);
    /* The capture recorded Add, Identity refused: abandoned, then all four ran. */
    assert_int_equal(ses_session_kernel_calls(f->s), 2 + 4);
    run_and_check(f, 7, add3);
    /* No second attempt. */
    assert_int_equal(ses_session_kernel_calls(f->s), 2 + 4 + 4);
    assert_int_equal(ses_session_graph_captures(f->s), 0);
    assert_int_equal(ses_session_graph_launches(f->s), 0);
}

/* With the profiler on (ses_session_options_t.profile) nothing is captured: every kernel runs,
 * and is waited for, as a step of its own, and each step is timed, the copies included. */
static void a_profiled_session_runs_a_graph_device_step_by_step(void **state) {
    fixture_t *f = *state;
    const char *device = "fake_graphs:0";
    ses_session_options_t so;
    ses_step_time_t t[16];
    size_t count = 0, kernels = 0, copies = 0;

    add_inputs(f);
    f->y = chain(f, "Add", chain(f, "Relu", chain(f, "Add", f->x)));
    ses_session_options_init(&so);
    so.registry = f->reg;
    so.fallback = SES_FALLBACK_DENY;
    so.profile = 1;
    assert_int_equal(ses_session_open(f->g, &device, 1, &so, &f->s), SES_OK);
    assert_int_equal(ses_session_compile(f->s, &f->y, 1, &f->x, 1, NULL, 0, &f->plan), SES_OK);
    run_and_check(f, 0, add_relu_add);
    run_and_check(f, 10, add_relu_add);
    run_and_check(f, -100, add_relu_add);
    assert_int_equal(ses_session_graph_captures(f->s), 0);
    assert_int_equal(ses_session_graph_launches(f->s), 0);
    assert_int_equal(ses_session_kernel_calls(f->s), 9);
    memset(t, 0, sizeof t);
    t[0].struct_size = sizeof t[0];
    assert_int_equal(ses_plan_profile(f->plan, t, 16, &count), SES_OK);
    for (size_t i = 0; i < count; i++) {
        assert_int_equal(t[i].calls, 3);
        assert_true(t[i].total_ns > 0);
        if (!strcmp(t[i].op, "Copy")) {
            copies++;
            continue;
        }
        assert_string_equal(t[i].device, "fake_graphs:0");
        kernels++;
    }
    assert_int_equal(kernels, 3);
    assert_true(copies >= 1); /* x comes from the host; y may be read from host memory */
}

static void an_abi_1_0_driver_is_never_asked_for_graphs(void **state) {
    fixture_t *f = *state;
    const ses_driver_t *d = NULL;
    const ses_device_t *dev = NULL;

    assert_int_equal(ses_registry_find_driver(f->reg, "fake_graphs_1_0", &d), SES_OK);
    assert_int_equal(ses_registry_find_device(f->reg, "fake_graphs_1_0:0", &dev), SES_OK);
    add_inputs(f);
    f->y = chain(f, "Add", chain(f, "Relu", chain(f, "Add", f->x)));
    open_on(f, "fake_graphs_1_0:0", 1);
    assert_int_equal(ses_driver_abi_minor(d), 0);
    /* The device says it records graphs, but its 1.0 table has no such entries. */
    assert_true(ses_device_caps(dev) & SES_DEVICE_CAP_GRAPHS);
    run_and_check(f, 0, add_relu_add);
    run_and_check(f, 1, add_relu_add);
    assert_int_equal(ses_session_graph_captures(f->s), 0);
    assert_int_equal(ses_session_kernel_calls(f->s), 6);
}

/* Runs the plan on @p n elements x[i] = i - 3 and checks relu(relu(x)). */
static void run_relu2(fixture_t *f, int64_t n) {
    float x[16];
    ses_tensor_t *t, *y = NULL;

    for (int64_t i = 0; i < n; i++)
        x[i] = (float)i - 3;
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, &n, x, (size_t)n * sizeof *x, &t), SES_OK);
    assert_int_equal(ses_plan_run(f->plan, &t, 1, &y), SES_OK);
    assert_int_equal(ses_tensor_dims(y)[0], n);
    for (int64_t i = 0; i < n; i++)
        assert_float_equal(((const float *)ses_tensor_data(y))[i], relu(x[i]), 0);
    ses_tensor_release(t);
    ses_tensor_release(y);
}

static void a_new_shape_recompiles_and_captures_again(void **state) {
    fixture_t *f = *state;

    add_inputs(f);
    f->y = chain(f, "Relu", chain(f, "Relu", f->x));
    open_on(f, "fake_graphs:0", 1);
    run_relu2(f, 4);
    run_relu2(f, 4);
    assert_int_equal(ses_session_graph_captures(f->s), 1);
    run_relu2(f, 16); /* a new shape: compiled again, so captured again */
    run_relu2(f, 16);
    assert_int_equal(ses_session_graph_captures(f->s), 2);
    assert_int_equal(ses_session_graph_launches(f->s), 4);
    assert_int_equal(ses_session_kernel_calls(f->s), 4);
}

static void a_failed_recompile_keeps_the_captured_graph(void **state) {
    fixture_t *f = *state;
    static const float x8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const int64_t eight = 8;
    ses_tensor_t *t, *y = NULL;

    add_inputs(f);
    f->y = chain(f, "Add", chain(f, "Relu", chain(f, "Add", f->x)));
    open_on(f, "fake_graphs:0", 1);
    run_and_check(f, 0, add_relu_add);
    /* Eight elements against the four-element constant: the fake's Add refuses other shapes,
     * so with fallback DENY the compile fails and names the node. */
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, &eight, x8, sizeof x8, &t), SES_OK);
    assert_int_not_equal(ses_plan_run(f->plan, &t, 1, &y), SES_OK);
    assert_non_null(strstr(ses_last_error(), "Add"));
    assert_null(y);
    ses_tensor_release(t);
    run_and_check(f, 5, add_relu_add);
    assert_int_equal(ses_session_graph_captures(f->s), 1);
    assert_int_equal(ses_session_graph_launches(f->s), 2);
}

static void graphs_must_be_0_or_1(void **state) {
    fixture_t *f = *state;
    ses_session_options_t so;
    const char *device = "cpu";

    ses_session_options_init(&so);
    assert_int_equal(so.graphs, 1);
    so.registry = f->reg;
    so.graphs = 2;
    assert_int_equal(ses_session_open(f->g, &device, 1, &so, &f->s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "graphs is 2"));
    assert_null(f->s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_chain_on_one_device_is_captured_once_and_replayed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_view_in_the_chain_does_not_split_the_graph, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(with_graphs_off_every_kernel_is_launched_every_run, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_kernel_flagged_no_capture_splits_the_chain, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_kernel_that_refuses_recording_makes_its_run_go_one_by_one,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_profiled_session_runs_a_graph_device_step_by_step, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_abi_1_0_driver_is_never_asked_for_graphs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_new_shape_recompiles_and_captures_again, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failed_recompile_keeps_the_captured_graph, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(graphs_must_be_0_or_1, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
