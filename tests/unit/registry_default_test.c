/*
 * The default registry's fallbacks (ses_registry_default_add_fallback): in a program of their own,
 * since the default registry is made once per process. The tests run in order: the refused paths,
 * then the fallbacks given before the default registry exists, then one given after.
 */
#include <stdlib.h>
#include <string.h>

#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define FAKE(name) FAKE_DIR "/" name

static void relative_and_dotted_paths_are_refused(void **state) {
    static const char *const bad[] = {"",       "drivers", "./drivers", "/a/../b",
                                      "/a/./b", "/a/b/..", "/a:/b",     "/a/b/."};

    (void)state;
    assert_int_equal(ses_registry_default_add_fallback(NULL), SES_INVALID_ARGUMENT);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(ses_registry_default_add_fallback(bad[i]), SES_INVALID_ARGUMENT);
        assert_non_null(strstr(ses_last_error(), "ses_registry_default_add_fallback"));
    }
}

static const ses_driver_t *driver_named(ses_registry_t *reg, const char *name) {
    const ses_driver_t *d = NULL;

    if (ses_registry_find_driver(reg, name, &d) != SES_OK)
        fail_msg("driver %s not listed: %s", name, ses_last_error());
    return d;
}

/* The fallbacks come last; one whose name or library is claimed already is left out quietly. */
static void fallbacks_are_read_last_and_yield_to_claimed_names(void **state) {
    ses_registry_t *reg = NULL, *plain = NULL;
    const char *source = NULL;

    (void)state;
    unsetenv("SESSION_ADD_DRIVER_FILES");
    unsetenv("SESSION_DRIVERS_SELECT");
    unsetenv("SESSION_DRIVERS_DISABLE");
    setenv("SESSION_DRIVER_FILES", FAKE("fake_good.json"), 1);
    assert_int_equal(ses_registry_default_add_fallback(FAKE("fake_dup_a.json")), SES_OK);
    /* the name fake_good is claimed by SESSION_DRIVER_FILES's manifest */
    assert_int_equal(ses_registry_default_add_fallback(FAKE("fake_good.json")), SES_OK);
    /* another name for fake_good's library */
    assert_int_equal(ses_registry_default_add_fallback(FAKE("fake_dup_same_lib.json")), SES_OK);

    assert_int_equal(ses_registry_default(&reg), SES_OK);
    assert_int_equal(ses_registry_driver_count(reg), 2);
    assert_string_equal(ses_driver_manifest_path(driver_named(reg, "fake_good")),
                        FAKE("fake_good.json"));
    assert_string_equal(ses_driver_manifest_path(driver_named(reg, "fake_dup")),
                        FAKE("fake_dup_a.json"));
    assert_int_not_equal(ses_driver_state(driver_named(reg, "fake_dup")), SES_DRIVER_FAILED);
    assert_int_equal(ses_registry_note_count(reg), 0);

    assert_int_equal(ses_registry_search_entry_count(reg), 4);
    assert_string_equal(ses_registry_search_entry(reg, 0, &source), FAKE("fake_good.json"));
    assert_string_equal(source, "SESSION_DRIVER_FILES");
    assert_string_equal(ses_registry_search_entry(reg, 1, &source), FAKE("fake_dup_a.json"));
    assert_string_equal(source, "fallback");
    assert_string_equal(ses_registry_search_entry(reg, 3, &source), FAKE("fake_dup_same_lib.json"));
    assert_string_equal(source, "fallback");
    assert_string_equal(ses_registry_search_origin(reg), "environment");
    assert_string_equal(ses_registry_search_path(reg),
                        FAKE("fake_good.json") ":" FAKE("fake_dup_a.json") ":" FAKE(
                            "fake_good.json") ":" FAKE("fake_dup_same_lib.json"));

    /* Registries of one's own do not read them. */
    assert_int_equal(ses_registry_create(&plain), SES_OK);
    assert_int_equal(ses_registry_driver_count(plain), 1);
    assert_int_equal(ses_registry_search_entry_count(plain), 1);
    ses_registry_destroy(plain);
}

static void a_fallback_after_the_default_registry_exists_is_refused(void **state) {
    ses_registry_t *reg = NULL;

    (void)state;
    assert_int_equal(ses_registry_default_add_fallback(FAKE("fake_dup_b.json")),
                     SES_FAILED_PRECONDITION);
    assert_non_null(strstr(ses_last_error(), "exists already"));
    assert_int_equal(ses_registry_default(&reg), SES_OK);
    assert_int_equal(ses_registry_driver_count(reg), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(relative_and_dotted_paths_are_refused),
        cmocka_unit_test(fallbacks_are_read_last_and_yield_to_claimed_names),
        cmocka_unit_test(a_fallback_after_the_default_registry_exists_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
