/*
 * Drivers that fail while a session runs (tests/fakes, DRV-26 and DRV-81): a kernel that fails
 * mid-plan, an alloc that returns no buffer or runs out of memory, a device lost mid-plan. Each
 * eval fails with a message naming the node, the op and the driver (or the device and the bytes
 * for an allocation); after a kernel or allocation failure the same session evaluates again
 * correctly; after a lost device it reports itself closed until it is closed and destroyed.
 * The ASan build checks that nothing leaks on any of these paths.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/registry.h>
#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

typedef struct fixture {
    ses_registry_t *reg;
    ses_graph_t *g;
    ses_edge_t x, c; /* c = Identity(Identity(Identity(x))): nodes "a", "b", "c" */
    ses_session_t *s;
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    const int64_t any = -1;
    ses_edge_t a, b;

    if (!f)
        return -1;
    setenv("SESSION_ADD_DRIVER_FILES",
           FAKE_DIR "/fake_kernel_fails.json:" FAKE_DIR "/fake_alloc_null.json:" FAKE_DIR
                    "/fake_device_lost.json",
           1);
    if (ses_registry_create(&f->reg) != SES_OK || ses_graph_create(&f->g) != SES_OK) {
        print_error("setup: %s\n", ses_last_error());
        return -1;
    }
    unsetenv("SESSION_ADD_DRIVER_FILES");
    if (ses_graph_placeholder(f->g, "x", SES_F32, 1, &any, &f->x) != SES_OK ||
        ses_graph_op(f->g, "Identity", "a", &f->x, 1, NULL, 0, &a) != SES_OK ||
        ses_graph_op(f->g, "Identity", "b", &a, 1, NULL, 0, &b) != SES_OK ||
        ses_graph_op(f->g, "Identity", "c", &b, 1, NULL, 0, &f->c) != SES_OK) {
        print_error("setup: %s\n", ses_last_error());
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;

    ses_session_destroy(f->s);
    ses_graph_release(f->g);
    ses_registry_destroy(f->reg);
    free(f);
    return 0;
}

/* Every node on the fake device: a fallback to the CPU would hide the fault. */
static void open_on(fixture_t *f, const char *device) {
    ses_session_options_t so;

    ses_session_options_init(&so);
    so.registry = f->reg;
    so.fallback = SES_FALLBACK_DENY;
    assert_int_equal(ses_session_open(f->g, &device, 1, &so, &f->s), SES_OK);
}

/* Evaluates c with x = [base, base + 1, ...] of @p n elements; on success checks c == x. */
static ses_status_t eval(fixture_t *f, int64_t n, float base) {
    ses_tensor_t *x, *c = (ses_tensor_t *)0x1;
    ses_feed_t feed;
    ses_status_t st;
    float *xv;

    assert_int_equal(ses_tensor_create(SES_F32, 1, &n, &x), SES_OK);
    xv = ses_tensor_data(x);
    for (int64_t i = 0; i < n; i++)
        xv[i] = base + (float)i;
    feed = (ses_feed_t){f->x, x};
    st = ses_session_eval(f->s, &f->c, 1, &feed, 1, NULL, 0, &c);
    if (st == SES_OK) {
        const float *cv = ses_tensor_data(c);
        assert_int_equal(ses_tensor_count(c), n);
        for (int64_t i = 0; i < n; i++)
            assert_float_equal(cv[i], xv[i], 0);
        ses_tensor_release(c);
    } else {
        assert_null(c);
    }
    ses_tensor_release(x);
    return st;
}

/* Shows each error once in the test log, so a reader sees what a user would. */
static void assert_error_has(const char *what) {
    static char shown[2048];

    if (strcmp(shown, ses_last_error()) != 0) {
        snprintf(shown, sizeof shown, "%s", ses_last_error());
        print_message("error: %s\n", shown);
    }
    if (!strstr(ses_last_error(), what))
        fail_msg("the error \"%s\" does not contain \"%s\"", ses_last_error(), what);
}

/* The 3rd kernel call (node "c", after "a" and "b" ran) fails once; later evals are right. */
static void a_kernel_failing_mid_plan_names_node_op_and_driver_and_the_session_stays_usable(
    void **state) {
    fixture_t *f = *state;

    open_on(f, "fake_kernel_fails:0");

    assert_int_equal(eval(f, 4, 1.0f), SES_INTERNAL);
    assert_error_has("Identity \"c\"");
    assert_error_has("driver fake_kernel_fails");
    assert_error_has("injected failure on call 3");

    assert_int_equal(eval(f, 4, 10.0f), SES_OK);
    assert_int_equal(eval(f, 8, -3.0f), SES_OK);
}

/* Small plans fit; a driver answering OK without a buffer, or out of memory, fails the eval
 * with the device, the driver and the bytes, and smaller evals still work afterwards. */
static void a_failed_allocation_names_device_driver_and_bytes_and_the_session_stays_usable(
    void **state) {
    fixture_t *f = *state;
    unsigned long long bytes = 0;
    const char *at;

    open_on(f, "fake_alloc_null:0");
    assert_int_equal(eval(f, 4, 1.0f), SES_OK);

    /* 2048 floats: 8 KiB at least, where the fake returns OK and no buffer. */
    assert_int_equal(eval(f, 2048, 1.0f), SES_OUT_OF_MEMORY);
    assert_error_has("fake_alloc_null:0 (driver fake_alloc_null)");
    assert_error_has("alloc returned OK but no buffer");
    at = strstr(ses_last_error(), "the plan's ");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "the plan's %llu bytes", &bytes), 1);
    assert_true(bytes >= 2048 * sizeof(float));
    assert_true(bytes <= (1u << 20));

    /* 2^19 floats: 2 MiB, more than the fake's 1 MiB: its own out-of-memory message. */
    assert_int_equal(eval(f, (int64_t)1 << 19, 0.0f), SES_OUT_OF_MEMORY);
    assert_error_has("fake_alloc_null:0 (driver fake_alloc_null)");
    assert_error_has("bytes asked, 1048576 free");

    assert_int_equal(eval(f, 4, 7.0f), SES_OK);
    assert_int_equal(eval(f, 16, 2.0f), SES_OK);
}

/* DRV-81: the device stops answering at node "c"; the session closes itself. */
static void a_lost_device_fails_the_eval_and_closes_the_session(void **state) {
    fixture_t *f = *state;
    ses_tensor_t *out = (ses_tensor_t *)0x1, *x;
    ses_plan_t *plan = NULL;
    const int64_t n = 4;

    open_on(f, "fake_device_lost:0");
    /* A plan compiled before the loss (compiling runs no kernel), run after it. */
    assert_int_equal(ses_session_compile(f->s, &f->c, 1, &f->x, 1, NULL, 0, &plan), SES_OK);

    assert_int_equal(eval(f, 4, 1.0f), SES_UNAVAILABLE);
    assert_error_has("Identity \"c\"");
    assert_error_has("driver fake_device_lost");
    assert_error_has("device lost");
    assert_error_has("device fake_device_lost:0 (driver fake_device_lost) was lost");
    assert_error_has("the session is closed");

    /* Every later eval is refused before it reaches the driver. */
    assert_int_equal(eval(f, 4, 1.0f), SES_UNAVAILABLE);
    assert_error_has("the session is closed: device fake_device_lost:0");
    assert_int_equal(ses_session_eval(f->s, &f->c, 1, NULL, 0, NULL, 0, &out), SES_UNAVAILABLE);
    assert_null(out);
    assert_int_equal(ses_tensor_create(SES_F32, 1, &n, &x), SES_OK);
    out = (ses_tensor_t *)0x1;
    assert_int_equal(ses_plan_run(plan, &x, 1, &out), SES_UNAVAILABLE);
    assert_error_has("ses_plan_run: the session is closed: device fake_device_lost:0");
    assert_null(out);
    ses_tensor_release(x);

    /* Closing frees what the session held on the lost device; then it is closed as usual. */
    assert_int_equal(ses_session_close(f->s), SES_OK);
    assert_int_equal(eval(f, 4, 1.0f), SES_FAILED_PRECONDITION);
    assert_error_has("closed");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            a_kernel_failing_mid_plan_names_node_op_and_driver_and_the_session_stays_usable, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            a_failed_allocation_names_device_driver_and_bytes_and_the_session_stays_usable, setup,
            teardown),
        cmocka_unit_test_setup_teardown(a_lost_device_fails_the_eval_and_closes_the_session, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
