/* The host services drivers call: error messages, options, logging and the abort check. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "registry/registry_internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* A driver with a manifest that sets one option, enough for get_option's lookups. */
typedef struct fixture {
    struct ses_driver driver;
    char *keys[1];
    char *values[1];
    struct ses_drv_host_ctx ctx;
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);

    f->driver.manifest.name = "xrt";
    f->keys[0] = "driver.xrt.xclbin";
    f->values[0] = "/opt/manifest.xclbin";
    f->driver.manifest.option_keys = f->keys;
    f->driver.manifest.option_values = f->values;
    f->driver.manifest.n_options = 1;
    f->ctx.driver = &f->driver;
    unsetenv("SESSION_DRIVER_XRT_XCLBIN");
    *state = f;
    return 0;
}

static int teardown(void **state) {
    free(*state);
    unsetenv("SESSION_DRIVER_XRT_XCLBIN");
    return 0;
}

static void the_services_table_is_complete_and_sized(void **state) {
    (void)state;
    assert_int_equal(ses__host_services.struct_size, sizeof(ses_drv_host_t));
    assert_non_null(ses__host_services.log);
    assert_non_null(ses__host_services.log_enabled);
    assert_non_null(ses__host_services.error);
    assert_non_null(ses__host_services.get_option);
    assert_non_null(ses__host_services.should_abort);
}

static void error_returns_the_code_and_keeps_the_formatted_message(void **state) {
    fixture_t *f = *state;
    char message[256];

    assert_int_equal(ses__host_services.error(&f->ctx, SES_DRV_UNAVAILABLE, "no %s (%d)", "gpu", 3),
                     SES_DRV_UNAVAILABLE);
    assert_int_equal(ses__host_take_message(message, sizeof message), 1);
    assert_string_equal(message, "no gpu (3)");
    /* Taking clears it, so a stale message never sticks to a later error. */
    assert_int_equal(ses__host_take_message(message, sizeof message), 0);
    assert_string_equal(message, "");
}

static void *error_on_other_thread(void *arg) {
    ses__host_services.error(arg, SES_DRV_INTERNAL, "from another thread");
    return NULL;
}

static void driver_messages_are_per_thread(void **state) {
    fixture_t *f = *state;
    pthread_t thread;
    char message[64];

    assert_int_equal(pthread_create(&thread, NULL, error_on_other_thread, &f->ctx), 0);
    pthread_join(thread, NULL);
    assert_int_equal(ses__host_take_message(message, sizeof message), 0);
}

static void an_option_comes_from_the_manifest(void **state) {
    fixture_t *f = *state;
    char value[64];
    uint64_t size = 0;

    assert_int_equal(ses__host_services.get_option(&f->ctx, "driver.xrt.xclbin", value,
                                                   sizeof value, &size),
                     SES_DRV_OK);
    assert_string_equal(value, "/opt/manifest.xclbin");
    assert_int_equal(size, strlen("/opt/manifest.xclbin") + 1);
}

/* An administrator overrides a manifest's setting per process with the environment. */
static void the_environment_overrides_the_manifest(void **state) {
    fixture_t *f = *state;
    char value[64];
    uint64_t size = 0;

    setenv("SESSION_DRIVER_XRT_XCLBIN", "/env/image.xclbin", 1);
    assert_int_equal(ses__host_services.get_option(&f->ctx, "driver.xrt.xclbin", value,
                                                   sizeof value, &size),
                     SES_DRV_OK);
    assert_string_equal(value, "/env/image.xclbin");
}

static void a_small_buffer_gets_the_size_it_needs(void **state) {
    fixture_t *f = *state;
    char value[4] = "abc";
    uint64_t size = 0;

    assert_int_equal(ses__host_services.get_option(&f->ctx, "driver.xrt.xclbin", value,
                                                   sizeof value, &size),
                     SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(size, strlen("/opt/manifest.xclbin") + 1);
    assert_string_equal(value, "abc");
    /* Count then fill: a NULL buffer asks for the size only. */
    assert_int_equal(ses__host_services.get_option(&f->ctx, "driver.xrt.xclbin", NULL, 0, &size),
                     SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(size, strlen("/opt/manifest.xclbin") + 1);
}

static void an_unset_option_is_not_found_and_null_arguments_are_refused(void **state) {
    fixture_t *f = *state;
    char value[16];
    uint64_t size = 99;

    assert_int_equal(ses__host_services.get_option(&f->ctx, "driver.xrt.nothing", value,
                                                   sizeof value, &size),
                     SES_DRV_NOT_FOUND);
    assert_int_equal(size, 0);
    assert_int_equal(ses__host_services.get_option(&f->ctx, NULL, value, sizeof value, &size),
                     SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(ses__host_services.get_option(&f->ctx, "k", value, sizeof value, NULL),
                     SES_DRV_INVALID_ARGUMENT);
    ses__host_take_message(value, sizeof value);
}

static void should_abort_follows_the_threads_abort_flag(void **state) {
    fixture_t *f = *state;
    volatile int flag = 0;

    assert_int_equal(ses__host_services.should_abort(&f->ctx), 0);
    ses__host_set_abort_flag(&flag);
    assert_int_equal(ses__host_services.should_abort(&f->ctx), 0);
    flag = 1;
    assert_int_equal(ses__host_services.should_abort(&f->ctx), 1);
    ses__host_set_abort_flag(NULL);
    assert_int_equal(ses__host_services.should_abort(&f->ctx), 0);
}

static void log_enabled_follows_the_loader_level(void **state) {
    fixture_t *f = *state;

    ses__log_set_level(SES__LOG_WARN);
    assert_true(ses__host_services.log_enabled(&f->ctx, SES_DRV_LOG_ERROR));
    assert_true(ses__host_services.log_enabled(&f->ctx, SES_DRV_LOG_WARN));
    assert_false(ses__host_services.log_enabled(&f->ctx, SES_DRV_LOG_DEBUG));
    ses__log_set_level(SES__LOG_DEBUG);
    assert_true(ses__host_services.log_enabled(&f->ctx, SES_DRV_LOG_DEBUG));
    /* A driver's log line must not crash on a NULL message. */
    ses__host_services.log(&f->ctx, SES_DRV_LOG_DEBUG, NULL);
    ses__log_set_level(SES__LOG_ERROR);
    assert_int_equal(ses__log_parse_level("INFO"), SES__LOG_INFO);
    assert_int_equal(ses__log_parse_level("verbose"), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_services_table_is_complete_and_sized),
        cmocka_unit_test_setup_teardown(error_returns_the_code_and_keeps_the_formatted_message,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(driver_messages_are_per_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(an_option_comes_from_the_manifest, setup, teardown),
        cmocka_unit_test_setup_teardown(the_environment_overrides_the_manifest, setup, teardown),
        cmocka_unit_test_setup_teardown(a_small_buffer_gets_the_size_it_needs, setup, teardown),
        cmocka_unit_test_setup_teardown(
            an_unset_option_is_not_found_and_null_arguments_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(should_abort_follows_the_threads_abort_flag, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(log_enabled_follows_the_loader_level, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
