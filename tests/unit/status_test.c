/* Status codes: names, the thread-local message, and agreement with the driver ABI's codes. */
#include <pthread.h>
#include <string.h>

#include <session/driver.h>
#include <session/session.h>

#include "error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* A driver's code must mean the same to the application: the host passes them through. */
static void public_codes_equal_driver_abi_codes(void **state) {
    (void)state;
    assert_int_equal(SES_OK, SES_DRV_OK);
    assert_int_equal(SES_INVALID_ARGUMENT, SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(SES_NOT_FOUND, SES_DRV_NOT_FOUND);
    assert_int_equal(SES_FAILED_PRECONDITION, SES_DRV_FAILED_PRECONDITION);
    assert_int_equal(SES_OUT_OF_MEMORY, SES_DRV_OUT_OF_MEMORY);
    assert_int_equal(SES_UNIMPLEMENTED, SES_DRV_UNIMPLEMENTED);
    assert_int_equal(SES_INCOMPATIBLE, SES_DRV_INCOMPATIBLE);
    assert_int_equal(SES_UNAVAILABLE, SES_DRV_UNAVAILABLE);
    assert_int_equal(SES_INTERNAL, SES_DRV_INTERNAL);
    assert_int_equal(SES_CANCELLED, SES_DRV_CANCELLED);
    assert_int_equal(SES_ALREADY_EXISTS, SES_DRV_ALREADY_EXISTS);
    assert_int_equal(SES_DEVICE_CAP_CONCURRENT, SES_DRV_CAP_CONCURRENT);
    assert_int_equal(SES_DEVICE_CAP_GRAPHS, SES_DRV_CAP_GRAPHS);
    assert_int_equal(SES_DEVICE_ACCEL, SES_DRV_DEVICE_ACCEL);
}

static void every_code_has_a_name_and_unknown_values_say_so(void **state) {
    (void)state;
    assert_string_equal(ses_status_name(SES_OK), "SES_OK");
    assert_string_equal(ses_status_name(SES_INCOMPATIBLE), "SES_INCOMPATIBLE");
    assert_string_equal(ses_status_name(SES_ALREADY_EXISTS), "SES_ALREADY_EXISTS");
    assert_string_equal(ses_status_name((ses_status_t)99), "SES_UNKNOWN_STATUS");
}

static void fail_sets_the_message_and_returns_the_code(void **state) {
    (void)state;
    assert_int_equal(ses__fail(SES_NOT_FOUND, "device %s: %d", "gpu:7", 42), SES_NOT_FOUND);
    assert_string_equal(ses_last_error(), "device gpu:7: 42");
    ses__clear_error();
    assert_string_equal(ses_last_error(), "");
}

static void *fail_on_other_thread(void *arg) {
    (void)arg;
    ses__fail(SES_INTERNAL, "other thread");
    return NULL;
}

/* One thread's error must never overwrite another's. */
static void messages_are_per_thread(void **state) {
    pthread_t thread;

    (void)state;
    ses__fail(SES_NOT_FOUND, "this thread");
    assert_int_equal(pthread_create(&thread, NULL, fail_on_other_thread, NULL), 0);
    pthread_join(thread, NULL);
    assert_string_equal(ses_last_error(), "this thread");
}

static void long_messages_are_truncated_not_overflowed(void **state) {
    char big[10000];

    (void)state;
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ses__fail(SES_INTERNAL, "%s", big);
    assert_true(strlen(ses_last_error()) < sizeof big);
    assert_true(strlen(ses_last_error()) > 1000);
}

static void version_is_the_project_version(void **state) {
    (void)state;
    assert_string_equal(ses_version(), SES_VERSION);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(public_codes_equal_driver_abi_codes),
        cmocka_unit_test(every_code_has_a_name_and_unknown_values_say_so),
        cmocka_unit_test(fail_sets_the_message_and_returns_the_code),
        cmocka_unit_test(messages_are_per_thread),
        cmocka_unit_test(long_messages_are_truncated_not_overflowed),
        cmocka_unit_test(version_is_the_project_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
