/*
 * Session options reaching drivers (DRV-28, DRV-29, DRV-87): a driver of ABI 1.5 gets the
 * opening session's options as open_device_with_options' argument, readable on any thread; a
 * driver of 1.4 gets open_device and reads them through get_option on the opening thread only.
 * The fake_options drivers report what they saw when driver.<name>.report is set; the CPU driver
 * refuses an option of its own name that it does not read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include <session/graph.h>
#include <session/registry.h>
#include <session/session.h>
#include <session/status.h>
#include <session/tensor.h>

typedef struct fixture {
    ses_registry_t *reg;
    ses_graph_t *g;
    ses_session_t *s;
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    ses_edge_t x;
    const int64_t n = 4;

    if (!f)
        return -1;
    setenv("SESSION_ADD_DRIVER_FILES",
           FAKE_DIR "/fake_options.json:" FAKE_DIR "/fake_options_1_4.json", 1);
    if (ses_registry_create(&f->reg) != SES_OK || ses_graph_create(&f->g) != SES_OK ||
        ses_graph_placeholder(f->g, "x", SES_F32, 1, &n, &x) != SES_OK)
        return -1;
    unsetenv("SESSION_ADD_DRIVER_FILES");
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

/* Opens a session on @p device with the @p n driver options, returning its status. */
static ses_status_t open_with(fixture_t *f, const char *device, const char *const *options,
                              size_t n) {
    ses_session_options_t so;

    ses_session_options_init(&so);
    so.registry = f->reg;
    so.driver_options = options;
    so.n_driver_options = n;
    ses_session_destroy(f->s);
    f->s = NULL;
    return ses_session_open(f->g, &device, 1, &so, &f->s);
}

static void assert_contains(const char *text, const char *part) {
    if (!strstr(text, part))
        fail_msg("expected \"%s\" in: %s", part, text);
}

static void a_1_5_driver_gets_its_own_options_as_an_argument_readable_on_any_thread(void **state) {
    fixture_t *f = *state;
    const char *options[] = {"driver.fake_options.report=1", "driver.cpu.threads=1",
                             "driver.fake_options.x=seven", "driver.fake_options_1_4.x=other"};

    assert_int_equal(open_with(f, "fake_options:0", options, 4), SES_INVALID_ARGUMENT);
    /* Only the keys of its own name, in order; the other thread reads x through options->get. */
    assert_contains(ses_last_error(),
                    "fake_options report: open_device_with_options, 2 options: "
                    "driver.fake_options.report=1 driver.fake_options.x=seven; "
                    "x on another thread: seven; get without a key: 1, without a buffer: 1 "
                    "needing 6 bytes"); /* SES_DRV_INVALID_ARGUMENT, "seven" and its NUL */
}

static void a_1_5_driver_opens_normally_without_the_report_option(void **state) {
    fixture_t *f = *state;
    const char *options[] = {"driver.fake_options.x=seven"};

    assert_int_equal(open_with(f, "fake_options:0", options, 1), SES_OK);
    assert_non_null(f->s);
}

static void a_1_4_driver_gets_open_device_and_thread_local_options(void **state) {
    fixture_t *f = *state;
    const char *options[] = {"driver.fake_options_1_4.report=1", "driver.fake_options_1_4.x=seven"};

    assert_int_equal(open_with(f, "fake_options_1_4:0", options, 2), SES_INVALID_ARGUMENT);
    /* get_option saw report on the opening thread, and not x on the driver's own thread. */
    assert_contains(ses_last_error(),
                    "fake_options_1_4 report: open_device; x on another thread: not found");
}

static void the_cpu_driver_refuses_an_option_it_does_not_read(void **state) {
    fixture_t *f = *state;
    const char *typo[] = {"driver.cpu.thread=2"};
    const char *good[] = {"driver.cpu.threads=2", "driver.cpu.spin_us=0", "driver.cpu.conv=auto"};

    assert_int_equal(open_with(f, "cpu:0", typo, 1), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(),
                    "unknown option driver.cpu.thread; this driver reads "
                    "driver.cpu.threads, driver.cpu.spin_us");
    assert_null(f->s);
    assert_int_equal(open_with(f, "cpu:0", good, 3), SES_OK);
}

static void the_cpu_driver_reads_its_options_from_the_argument(void **state) {
    fixture_t *f = *state;
    const char *bad_threads[] = {"driver.cpu.threads=lots"};
    const char *bad_conv[] = {"driver.cpu.conv=fft"};

    assert_int_equal(open_with(f, "cpu:0", bad_threads, 1), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "driver.cpu.threads is \"lots\"");
    assert_int_equal(open_with(f, "cpu:0", bad_conv, 1), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "driver.cpu.conv is \"fft\"");
}

static void the_cpu_driver_refuses_an_unknown_pool(void **state) {
    fixture_t *f = *state;
    const char *pool[] = {"driver.cpu.pool=threads"};

    assert_int_equal(open_with(f, "cpu:0", pool, 1), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "driver.cpu.pool is \"threads\"; accepted are own");
}

static void the_cpu_driver_refuses_an_unknown_winograd_choice(void **state) {
    fixture_t *f = *state;
    const char *bad[] = {"driver.cpu.winograd=on"};
    const char *off[] = {"driver.cpu.winograd=off"};
    const char *on[] = {"driver.cpu.winograd=auto"};

    assert_int_equal(open_with(f, "cpu:0", bad, 1), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "driver.cpu.winograd is \"on\"; accepted are auto");
    assert_int_equal(open_with(f, "cpu:0", off, 1), SES_OK);
    assert_int_equal(open_with(f, "cpu:0", on, 1), SES_OK);
}

static void the_cpu_driver_refuses_an_unknown_conv_slices_choice(void **state) {
    fixture_t *f = *state;
    const char *bad[] = {"driver.cpu.conv_slices=channels"};
    const char *good[][1] = {{"driver.cpu.conv_slices=auto"},
                             {"driver.cpu.conv_slices=images"},
                             {"driver.cpu.conv_slices=off"}};

    assert_int_equal(open_with(f, "cpu:0", bad, 1), SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(), "driver.cpu.conv_slices is \"channels\"; accepted are auto");
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_int_equal(open_with(f, "cpu:0", good[i], 1), SES_OK);
}

/* sigmoid(x) * x over 2^17 elements on a pool of 2 threads run by @p pool. */
static void run_on_pool(const char *pool, const ses_tensor_t *x, ses_tensor_t **out_y) {
    const char *options[] = {"driver.cpu.threads=2", pool};
    const char *device = "cpu:0";
    const int64_t n = (int64_t)ses_tensor_count(x);
    ses_graph_t *g;
    ses_edge_t in, sig, y;
    ses_session_options_t so;
    ses_session_t *s = NULL;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 1, &n, &in), SES_OK);
    assert_int_equal(ses_graph_op(g, "Sigmoid", "sig", &in, 1, NULL, 0, &sig), SES_OK);
    ses_edge_t both[2] = {sig, in};
    assert_int_equal(ses_graph_op(g, "Mul", "mul", both, 2, NULL, 0, &y), SES_OK);
    ses_session_options_init(&so);
    so.driver_options = options;
    so.n_driver_options = 2;
    assert_int_equal(ses_session_open(g, &device, 1, &so, &s), SES_OK);
    ses_feed_t feed = {in, (ses_tensor_t *)x};
    assert_int_equal(ses_session_eval(s, &y, 1, &feed, 1, NULL, 0, out_y), SES_OK);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void openmps_team_computes_what_the_pools_own_workers_do(void **state) {
    (void)state;
#if defined(__SANITIZE_THREAD__)
    /* libgomp is not built for ThreadSanitizer, which cannot see its team's barriers. */
    skip();
#endif
    enum { N = 1 << 17 };
    const int64_t n = N;
    float *values = malloc(N * sizeof *values);
    ses_tensor_t *x, *own = NULL, *omp = NULL;

    assert_non_null(values);
    for (int i = 0; i < N; i++)
        values[i] = (float)((i * 37) % 1001 - 500) / 97.0f;
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, &n, values, N * sizeof *values, &x),
                     SES_OK);
    run_on_pool("driver.cpu.pool=own", x, &own);
    run_on_pool("driver.cpu.pool=openmp", x, &omp);
    /* The same chunks on other threads: the same bits. */
    assert_memory_equal(ses_tensor_data(own), ses_tensor_data(omp), N * sizeof(float));
    const float *y = ses_tensor_data(omp);
    assert_float_equal(y[1], values[1] / (1.0f + expf(-values[1])), 1e-6);
    ses_tensor_release(x);
    ses_tensor_release(own);
    ses_tensor_release(omp);
    free(values);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            a_1_5_driver_gets_its_own_options_as_an_argument_readable_on_any_thread, setup,
            teardown),
        cmocka_unit_test_setup_teardown(a_1_5_driver_opens_normally_without_the_report_option,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_1_4_driver_gets_open_device_and_thread_local_options,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(the_cpu_driver_refuses_an_option_it_does_not_read, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_cpu_driver_reads_its_options_from_the_argument, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_cpu_driver_refuses_an_unknown_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(the_cpu_driver_refuses_an_unknown_winograd_choice, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_cpu_driver_refuses_an_unknown_conv_slices_choice, setup,
                                        teardown),
        cmocka_unit_test(openmps_team_computes_what_the_pools_own_workers_do),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
