/*
 * The registry against real plugins: the CPU driver and the fakes that misbehave on purpose.
 * For every broken driver: the state and code, a message naming the file and the cause, and the
 * good drivers still loading beside it.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <session/session.h>

#include "test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define FAKE(name) FAKE_DIR "/" name

static void clear_environment(void) {
    unsetenv("SESSION_ADD_DRIVER_FILES");
    unsetenv("SESSION_DRIVERS_SELECT");
    unsetenv("SESSION_DRIVERS_DISABLE");
    unsetenv("SESSION_LOADER_DEBUG");
    setenv("SESSION_DRIVER_FILES", CPU_MANIFEST, 1);
}

/* A registry over the CPU driver plus the manifests in @p add (':'-separated), or NULL. */
static ses_registry_t *registry_with(const char *add) {
    ses_registry_t *reg = NULL;

    clear_environment();
    if (add)
        setenv("SESSION_ADD_DRIVER_FILES", add, 1);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    assert_non_null(reg);
    return reg;
}

static const ses_driver_t *driver_named(ses_registry_t *reg, const char *name) {
    const ses_driver_t *d = NULL;

    if (ses_registry_find_driver(reg, name, &d) != SES_OK)
        fail_msg("driver %s not listed: %s", name, ses_last_error());
    return d;
}

/* The CPU driver must be usable whatever else is broken. */
static void assert_cpu_still_works(ses_registry_t *reg) {
    const ses_device_t *dev = NULL;

    assert_int_equal(ses_registry_find_device(reg, "cpu:0", &dev), SES_OK);
    assert_string_equal(ses_device_name(dev), "cpu:0");
    assert_int_equal(ses_driver_state(driver_named(reg, "cpu")), SES_DRIVER_READY);
}

typedef struct broken_case {
    const char *manifest;
    const char *driver;
    ses_driver_state_t state;
    ses_status_t code;
    const char *cause; /* must appear in the message */
    const char *file;  /* the file the message must name */
} broken_case_t;

static const broken_case_t broken_cases[] = {
    {"fake_no_entry.json", "fake_no_entry", SES_DRIVER_FAILED, SES_NOT_FOUND,
     "does not export ses_drv_negotiate", "ses_fake_no_entry.so"},
    {"fake_abi2.json", "fake_abi2", SES_DRIVER_FAILED, SES_INCOMPATIBLE,
     "speaks driver ABI 2.0, this libsession speaks ABI 1.0", "ses_fake_abi2.so"},
    {"fake_abi2_manifest.json", "fake_abi2_manifest", SES_DRIVER_FAILED, SES_INCOMPATIBLE,
     "declares driver ABI 2, this libsession speaks ABI 1", "fake_abi2_manifest.json"},
    {"fake_small_table.json", "fake_small_table", SES_DRIVER_FAILED, SES_INCOMPATIBLE,
     "ses_drv_api_t of 16 bytes", "ses_fake_small_table.so"},
    {"fake_negotiate_fails.json", "fake_negotiate_fails", SES_DRIVER_FAILED, SES_INTERNAL,
     "license server unreachable", "ses_fake_negotiate_fails.so"},
    {"fake_null_required.json", "fake_null_required", SES_DRIVER_FAILED, SES_INCOMPATIBLE,
     "required entry enumerate_devices NULL", "ses_fake_null_required.so"},
    {"fake_missing_dep.json", "fake_missing_dep", SES_DRIVER_FAILED, SES_UNAVAILABLE,
     "libses_fake_gone.so.1: cannot open shared object file", "ses_fake_missing_dep.so"},
    {"fake_malformed.json", "fake_malformed", SES_DRIVER_FAILED, SES_INVALID_ARGUMENT,
     "JSON syntax error", "fake_malformed.json:4:"},
    {"fake_missing_file.json", "fake_missing_file", SES_DRIVER_FAILED, SES_NOT_FOUND,
     "library not found", "ses_fake_does_not_exist.so"},
    {"fake_bad_fields.json", "fake_bad_fields", SES_DRIVER_FAILED, SES_INVALID_ARGUMENT,
     "\"name\" must be a string, found a number", "fake_bad_fields.json"},
    {"fake_no_devices.json", "fake_no_devices", SES_DRIVER_NO_DEVICES, SES_UNAVAILABLE,
     "no fake hardware present", NULL},
};

static void each_broken_driver_is_reported_and_cpu_still_loads(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof broken_cases / sizeof broken_cases[0]; i++) {
        const broken_case_t *c = &broken_cases[i];
        char path[PATH_MAX];
        ses_registry_t *reg;
        const ses_driver_t *d;

        snprintf(path, sizeof path, "%s/%s", FAKE_DIR, c->manifest);
        reg = registry_with(path);
        assert_int_equal(ses_registry_load_all(reg), SES_OK);
        d = driver_named(reg, c->driver);
        if (ses_driver_state(d) != c->state || ses_driver_error_code(d) != c->code ||
            !strstr(ses_driver_error(d), c->cause) ||
            (c->file && !strstr(ses_driver_error(d), c->file)))
            fail_msg("%s: state %s, code %s, message \"%s\"; expected %s, %s, \"%s\" naming %s",
                     c->manifest, ses_driver_state_name(ses_driver_state(d)),
                     ses_status_name(ses_driver_error_code(d)), ses_driver_error(d),
                     ses_driver_state_name(c->state), ses_status_name(c->code), c->cause,
                     c->file ? c->file : "-");
        /* One line: session-info prints it as the cause. */
        assert_null(strchr(ses_driver_error(d), '\n'));
        assert_string_equal(ses_driver_manifest_path(d), path);
        assert_cpu_still_works(reg);
        ses_registry_destroy(reg);
    }
}

static void every_broken_driver_at_once_still_leaves_the_good_ones(void **state) {
    char all[8192] = "";
    size_t used = 0;
    ses_registry_t *reg;
    const ses_device_t *dev = NULL;

    (void)state;
    for (size_t i = 0; i < sizeof broken_cases / sizeof broken_cases[0]; i++)
        used += (size_t)snprintf(all + used, sizeof all - used, "%s/%s:", FAKE_DIR,
                                 broken_cases[i].manifest);
    snprintf(all + used, sizeof all - used, "%s", FAKE("fake_good.json"));
    reg = registry_with(all);
    assert_int_equal(ses_registry_driver_count(reg), 13);
    assert_int_equal(ses_registry_device_count(reg), 2);
    assert_int_equal(ses_registry_find_device(reg, "fake_good:0", &dev), SES_OK);
    assert_int_equal(ses_device_kind(dev), SES_DEVICE_ACCEL);
    assert_cpu_still_works(reg);
    ses_registry_destroy(reg);
}

static void the_first_driver_to_claim_a_name_wins_and_the_second_is_refused(void **state) {
    ses_registry_t *reg = registry_with(FAKE("fake_dup_a.json") ":" FAKE("fake_dup_b.json"));
    const ses_driver_t *first, *second;

    (void)state;
    assert_int_equal(ses_registry_driver_count(reg), 3);
    first = ses_registry_driver(reg, 0);
    second = ses_registry_driver(reg, 1);
    assert_string_equal(ses_driver_manifest_path(first), FAKE("fake_dup_a.json"));
    assert_int_equal(ses_driver_state(second), SES_DRIVER_FAILED);
    assert_int_equal(ses_driver_error_code(second), SES_ALREADY_EXISTS);
    assert_non_null(strstr(ses_driver_error(second), "duplicate driver name \"fake_dup\""));
    assert_non_null(strstr(ses_driver_error(second), "fake_dup_a.json"));
    assert_non_null(strstr(ses_driver_error(second), "fake_dup_b.json"));
    /* Lookups by name reach the winner, and its device works. */
    assert_ptr_equal(driver_named(reg, "fake_dup"), first);
    ses_registry_load_all(reg);
    assert_int_equal(ses_driver_state(first), SES_DRIVER_READY);
    assert_string_equal(ses_driver_build_features(first), "dup_a");
    ses_registry_destroy(reg);
}

static void two_manifests_for_one_library_load_it_once(void **state) {
    ses_registry_t *reg = registry_with(FAKE("fake_good.json") ":" FAKE("fake_dup_same_lib.json"));
    const ses_driver_t *d;

    (void)state;
    ses_registry_load_all(reg);
    d = driver_named(reg, "fake_dup_same");
    assert_int_equal(ses_driver_error_code(d), SES_ALREADY_EXISTS);
    assert_non_null(strstr(ses_driver_error(d), "ses_fake_good.so"));
    assert_non_null(strstr(ses_driver_error(d), "loads the same file"));
    assert_int_equal(ses_driver_state(driver_named(reg, "fake_good")), SES_DRIVER_READY);
    ses_registry_destroy(reg);
}

/* Creating a registry opens nothing; a device lookup opens only the drivers it needs. */
static void libraries_are_opened_only_when_their_devices_are_needed(void **state) {
    ses_registry_t *reg = registry_with(FAKE("fake_good.json") ":" FAKE("fake_abi2.json"));
    const ses_device_t *dev = NULL;

    (void)state;
    assert_int_equal(ses_driver_state(driver_named(reg, "fake_good")), SES_DRIVER_FOUND);
    assert_int_equal(ses_driver_state(driver_named(reg, "cpu")), SES_DRIVER_FOUND);
    assert_int_equal(ses_driver_device_count(driver_named(reg, "fake_good")), 0);
    assert_string_equal(ses_driver_version(driver_named(reg, "fake_good")), "");

    assert_int_equal(ses_registry_find_device(reg, "cpu", &dev), SES_OK);
    assert_int_equal(ses_driver_state(driver_named(reg, "cpu")), SES_DRIVER_READY);
    assert_int_equal(ses_driver_state(driver_named(reg, "fake_good")), SES_DRIVER_FOUND);
    assert_int_equal(ses_driver_state(driver_named(reg, "fake_abi2")), SES_DRIVER_FOUND);

    ses_registry_destroy(reg);

    /* A kind lookup skips drivers whose manifest rules the kind out (cpu offers only "cpu") and
     * stops at the first match, so the broken fake_abi2 after fake_good is never opened. */
    reg = registry_with(FAKE("fake_good.json") ":" FAKE("fake_abi2.json"));
    assert_int_equal(ses_registry_find_device(reg, "accel:0", &dev), SES_OK);
    assert_string_equal(ses_device_name(dev), "fake_good:0");
    assert_int_equal(ses_driver_state(driver_named(reg, "cpu")), SES_DRIVER_FOUND);
    assert_int_equal(ses_driver_state(driver_named(reg, "fake_abi2")), SES_DRIVER_FOUND);

    /* A failed lookup lists every device, so it opens every driver. */
    assert_int_equal(ses_registry_find_device(reg, "gpu:0", &dev), SES_NOT_FOUND);
    assert_int_equal(ses_driver_state(driver_named(reg, "fake_abi2")), SES_DRIVER_FAILED);
    ses_registry_destroy(reg);
}

static void drivers_are_listed_by_priority_then_discovery_order(void **state) {
    ses_registry_t *reg = registry_with(FAKE("fake_good.json"));

    (void)state;
    /* fake_good has priority 50, cpu 0. */
    assert_string_equal(ses_driver_name(ses_registry_driver(reg, 0)), "fake_good");
    assert_int_equal(ses_driver_priority(ses_registry_driver(reg, 0)), 50);
    assert_string_equal(ses_driver_name(ses_registry_driver(reg, 1)), "cpu");
    assert_null(ses_registry_driver(reg, 2));
    ses_registry_destroy(reg);
}

static void disable_globs_turn_drivers_off_with_a_reason(void **state) {
    ses_registry_t *reg;
    const ses_driver_t *d;
    const ses_device_t *dev = NULL;

    (void)state;
    clear_environment();
    setenv("SESSION_ADD_DRIVER_FILES", FAKE("fake_good.json") ":" FAKE("fake_abi2.json"), 1);
    setenv("SESSION_DRIVERS_DISABLE", "nothing, fake_*", 1);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    ses_registry_load_all(reg);
    d = driver_named(reg, "fake_good");
    assert_int_equal(ses_driver_state(d), SES_DRIVER_DISABLED);
    assert_non_null(strstr(ses_driver_error(d), "SESSION_DRIVERS_DISABLE=nothing, fake_*"));
    /* A disabled driver is never opened, so a broken one raises nothing. */
    assert_int_equal(ses_driver_state(driver_named(reg, "fake_abi2")), SES_DRIVER_DISABLED);
    assert_int_equal(ses_registry_find_device(reg, "fake_good:0", &dev), SES_NOT_FOUND);
    assert_non_null(strstr(ses_last_error(), "disabled by SESSION_DRIVERS_DISABLE"));
    assert_cpu_still_works(reg);
    ses_registry_destroy(reg);
}

static void select_globs_keep_only_the_matching_drivers(void **state) {
    ses_registry_t *reg;

    (void)state;
    clear_environment();
    setenv("SESSION_ADD_DRIVER_FILES", FAKE("fake_good.json") ":" FAKE("fake_dup_a.json"), 1);
    setenv("SESSION_DRIVERS_SELECT", "cpu,fake_g?od", 1);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    assert_int_equal(ses_driver_state(driver_named(reg, "fake_good")), SES_DRIVER_FOUND);
    assert_int_equal(ses_driver_state(driver_named(reg, "fake_dup")), SES_DRIVER_DISABLED);
    assert_non_null(strstr(ses_driver_error(driver_named(reg, "fake_dup")),
                           "not selected by SESSION_DRIVERS_SELECT=cpu,fake_g?od"));
    assert_int_equal(ses_registry_device_count(reg), 2);
    ses_registry_destroy(reg);
}

/*
 * A device asked for by kind or by driver name, when the only driver that has it was turned off by
 * the environment: the message names the variable, its value, the glob that matched (or that none
 * did) and how to undo it. It used to say only "there are 0 accel devices".
 */
static void a_device_whose_driver_the_environment_turned_off_says_which_variable_and_glob(
    void **state) {
    ses_registry_t *reg;
    const ses_device_t *dev = (const ses_device_t *)0x1;
    const ses_driver_t *d;

    (void)state;
    clear_environment();
    setenv("SESSION_ADD_DRIVER_FILES", FAKE("fake_good.json"), 1);
    setenv("SESSION_DRIVERS_DISABLE", "nothing, fake_*", 1);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    d = driver_named(reg, "fake_good");
    assert_int_equal(ses_driver_state(d), SES_DRIVER_DISABLED);
    /* registry.h: a driver that is not FOUND or READY has the code of its failure. */
    assert_int_equal(ses_driver_error_code(d), SES_FAILED_PRECONDITION);
    for (int i = 0; i < 2; i++) {
        const char *name = i == 0 ? "accel:0" : "fake_good:0";
        assert_int_equal(ses_registry_find_device(reg, name, &dev), SES_NOT_FOUND);
        assert_null(dev);
        if (!strstr(ses_last_error(),
                    "driver fake_good is disabled by "
                    "SESSION_DRIVERS_DISABLE=nothing, fake_* (the glob "
                    "\"fake_*\" matches \"fake_good\"); remove that glob") ||
            !strstr(ses_last_error(), "devices here: cpu:0 (cpu)"))
            fail_msg("%s: \"%s\"", name, ses_last_error());
    }
    ses_registry_destroy(reg);

    clear_environment();
    setenv("SESSION_ADD_DRIVER_FILES", FAKE("fake_good.json"), 1);
    setenv("SESSION_DRIVERS_SELECT", "cpu", 1);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    assert_int_equal(ses_registry_find_device(reg, "accel:0", &dev), SES_NOT_FOUND);
    if (!strstr(ses_last_error(),
                "driver fake_good is not selected by SESSION_DRIVERS_SELECT=cpu "
                "(no glob in it matches \"fake_good\"); add \"fake_good\" to it"))
        fail_msg("accel:0: \"%s\"", ses_last_error());
    assert_int_equal(ses_driver_error_code(driver_named(reg, "fake_good")),
                     SES_FAILED_PRECONDITION);
    ses_registry_destroy(reg);
}

static void a_folder_contributes_its_json_files_in_name_order(void **state) {
    char dir[64], path[PATH_MAX], text[PATH_MAX + 256];
    ses_registry_t *reg = NULL;

    (void)state;
    test_mkdtemp(dir, sizeof dir);
    snprintf(text, sizeof text,
             "{\"file_format_version\": \"1.0.0\", \"name\": \"fake_good\", \"library_path\": "
             "\"%s\", \"abi_major\": 1}",
             FAKE("ses_fake_good.so"));
    test_write_file(dir, "b.json", text, path, sizeof path);
    snprintf(text, sizeof text,
             "{\"file_format_version\": \"1.0.0\", \"name\": \"fake_dup\", \"library_path\": "
             "\"%s\", \"abi_major\": 1}",
             FAKE("ses_fake_dup_a.so"));
    test_write_file(dir, "a.json", text, path, sizeof path);
    test_write_file(dir, "notes.txt", "not a manifest", path, sizeof path);
    test_write_file(dir, ".hidden.json", "{", path, sizeof path);

    clear_environment();
    setenv("SESSION_DRIVER_FILES", dir, 1);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    assert_int_equal(ses_registry_driver_count(reg), 2);
    assert_string_equal(ses_driver_name(ses_registry_driver(reg, 0)), "fake_dup");
    assert_string_equal(ses_driver_name(ses_registry_driver(reg, 1)), "fake_good");
    assert_string_equal(ses_registry_search_origin(reg), "environment");
    assert_string_equal(ses_registry_search_path(reg), dir);
    assert_int_equal(ses_registry_search_entry_count(reg), 1);
    {
        const char *source = NULL;
        assert_string_equal(ses_registry_search_entry(reg, 0, &source), dir);
        assert_string_equal(source, "SESSION_DRIVER_FILES");
        assert_null(ses_registry_search_entry(reg, 1, &source));
        assert_null(source);
    }
    assert_int_equal(ses_registry_device_count(reg), 2);
    ses_registry_destroy(reg);
    test_rmtree(dir);
}

/* Without SESSION_DRIVER_FILES the user's config folder is searched (the process is not
 * elevated), before /etc and the install's datadir. */
static void the_default_search_reads_the_users_config_folder(void **state) {
    char dir[64], folder[PATH_MAX], path[PATH_MAX], text[PATH_MAX + 256];
    ses_registry_t *reg = NULL;
    const ses_driver_t *d = NULL;

    (void)state;
    test_mkdtemp(dir, sizeof dir);
    snprintf(folder, sizeof folder, "%s/session", dir);
    assert_int_equal(mkdir(folder, 0700), 0);
    snprintf(folder, sizeof folder, "%s/session/drivers.d", dir);
    assert_int_equal(mkdir(folder, 0700), 0);
    snprintf(text, sizeof text,
             "{\"file_format_version\": \"1.0.0\", \"name\": \"fake_good\", \"library_path\": "
             "\"%s\", \"abi_major\": 1}",
             FAKE("ses_fake_good.so"));
    test_write_file(folder, "fake_good.json", text, path, sizeof path);

    clear_environment();
    unsetenv("SESSION_DRIVER_FILES");
    setenv("XDG_CONFIG_HOME", dir, 1);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    assert_string_equal(ses_registry_search_origin(reg), "default");
    assert_non_null(strstr(ses_registry_search_path(reg), folder));
    {
        const char *source = NULL;
        assert_string_equal(ses_registry_search_entry(reg, 0, &source), folder);
        assert_string_equal(source, "default");
    }
    assert_non_null(strstr(ses_registry_search_path(reg), "/etc/session/drivers.d"));
    assert_int_equal(ses_registry_find_driver(reg, "fake_good", &d), SES_OK);
    assert_string_equal(ses_driver_manifest_path(d), path);
    ses_registry_destroy(reg);
    unsetenv("XDG_CONFIG_HOME");
    test_rmtree(dir);
}

static void a_listed_manifest_that_does_not_exist_is_reported(void **state) {
    ses_registry_t *reg = registry_with("/nonexistent/folder/ghost.json");
    const ses_driver_t *d = driver_named(reg, "ghost");

    (void)state;
    assert_int_equal(ses_driver_state(d), SES_DRIVER_FAILED);
    assert_int_equal(ses_driver_error_code(d), SES_NOT_FOUND);
    assert_non_null(strstr(ses_driver_error(d), "/nonexistent/folder/ghost.json"));
    assert_cpu_still_works(reg);
    ses_registry_destroy(reg);
}

static void environment_mistakes_become_notes(void **state) {
    ses_registry_t *reg = NULL;
    char dir[64];

    (void)state;
    test_mkdtemp(dir, sizeof dir);
    clear_environment();
    setenv("SESSION_LOADER_DEBUG", "loud", 1);
    setenv("SESSION_DRIVER_FILES", dir, 1);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    assert_int_equal(ses_registry_note_count(reg), 2);
    assert_non_null(strstr(ses_registry_note(reg, 0), "SESSION_LOADER_DEBUG=loud ignored"));
    assert_non_null(strstr(ses_registry_note(reg, 1), "no driver manifests found"));
    assert_null(ses_registry_note(reg, 2));
    assert_int_equal(ses_registry_device_count(reg), 0);
    ses_registry_destroy(reg);
    test_rmtree(dir);
}

/* Anyone could add a driver to a world-writable folder: the registry warns, naming it. */
static void a_world_writable_manifest_folder_is_warned_about(void **state) {
    ses_registry_t *reg = NULL;
    char dir[64];
    const char *note;

    (void)state;
    test_mkdtemp(dir, sizeof dir);
    assert_int_equal(chmod(dir, 0777), 0);
    clear_environment();
    setenv("SESSION_DRIVER_FILES", dir, 1);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    note = ses_registry_note(reg, 0);
    assert_non_null(note);
    assert_non_null(strstr(note, dir));
    assert_non_null(strstr(note, "world-writable"));
    ses_registry_destroy(reg);

    /* The same folder without write permission for others draws no such warning. */
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    for (size_t i = 0; ses_registry_note(reg, i); i++)
        assert_null(strstr(ses_registry_note(reg, i), "world-writable"));
    ses_registry_destroy(reg);
    test_rmtree(dir);
}

/* Copies @p from to @p to, byte for byte. */
static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buffer[65536];
    size_t n;

    assert_non_null(in);
    assert_non_null(out);
    while ((n = fread(buffer, 1, sizeof buffer, in)) > 0)
        assert_int_equal(fwrite(buffer, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* The number of the registry's notes that contain both @p a and @p b. */
static int notes_with(const ses_registry_t *reg, const char *a, const char *b) {
    int count = 0;

    for (size_t i = 0; ses_registry_note(reg, i); i++)
        count += strstr(ses_registry_note(reg, i), a) && strstr(ses_registry_note(reg, i), b);
    return count;
}

/* Anyone could change a world-writable manifest or driver library, and so the code this process
 * runs: the registry warns, naming the file; the driver still loads (an elevated process refuses
 * it). */
static void a_world_writable_manifest_or_library_is_warned_about(void **state) {
    char dir[64], manifest[PATH_MAX], library[PATH_MAX];
    const char *text = "{\"file_format_version\": \"1.0.0\", \"name\": \"fake_good\", "
                       "\"library_path\": \"lib.so\", \"abi_major\": 1}";
    static const struct {
        mode_t manifest, library;
        int manifest_notes, library_notes;
    } cases[] = {{0644, 0755, 0, 0}, {0666, 0755, 1, 0}, {0644, 0777, 0, 1}, {0646, 0757, 1, 1}};

    (void)state;
    test_mkdtemp(dir, sizeof dir);
    test_write_file(dir, "m.json", text, manifest, sizeof manifest);
    snprintf(library, sizeof library, "%s/lib.so", dir);
    copy_file(FAKE("ses_fake_good.so"), library);
    clear_environment();
    setenv("SESSION_DRIVER_FILES", manifest, 1);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ses_registry_t *reg = NULL;
        assert_int_equal(chmod(manifest, cases[k].manifest), 0);
        assert_int_equal(chmod(library, cases[k].library), 0);
        assert_int_equal(ses_registry_create(&reg), SES_OK);
        assert_int_equal(notes_with(reg, "world-writable", manifest), cases[k].manifest_notes);
        assert_int_equal(notes_with(reg, "world-writable", library), cases[k].library_notes);
        assert_int_equal(ses_registry_device_count(reg), 1);
        ses_registry_destroy(reg);
    }
    test_rmtree(dir);
}

static void a_loaded_driver_reports_what_it_says_about_itself(void **state) {
    ses_registry_t *reg = registry_with(NULL);
    const ses_driver_t *cpu;
    const ses_device_t *dev;

    (void)state;
    ses_registry_load_all(reg);
    cpu = driver_named(reg, "cpu");
    assert_string_equal(ses_driver_vendor(cpu), "libsession");
    assert_string_equal(ses_driver_version(cpu), SES_VERSION);
    assert_int_equal(ses_driver_abi_major(cpu), 1);
    assert_int_equal(ses_driver_abi_minor(cpu), 5); /* the newest minor, as the host */
    assert_int_equal(ses_driver_opset_version(cpu), 1);
    assert_int_equal(ses_driver_error_code(cpu), SES_OK);
    assert_string_equal(ses_driver_error(cpu), "");
    assert_non_null(strstr(ses_driver_library_path(cpu), "ses_cpu.so"));
    assert_int_equal(ses_driver_device_count(cpu), 1);
    dev = ses_driver_device(cpu, 0);
    assert_ptr_equal(ses_registry_device(reg, 0), dev);
    assert_null(ses_driver_device(cpu, 1));
    assert_ptr_equal(ses_device_driver(dev), cpu);
    assert_int_equal(ses_device_kind(dev), SES_DEVICE_CPU);
    assert_string_equal(ses_device_kind_name(SES_DEVICE_CPU), "cpu");
    assert_int_equal(ses_device_ordinal(dev), 0);
    assert_string_equal(ses_device_stable_id(dev), "host");
    assert_true(ses_device_memory(dev) > 0);
    assert_true(ses_device_caps(dev) & SES_DEVICE_CAP_HOST_VISIBLE);
    assert_string_equal(ses_device_cap_name(SES_DEVICE_CAP_HOST_VISIBLE), "host-visible");
    assert_null(ses_device_cap_name(UINT64_C(1) << 40));
    assert_true(strlen(ses_device_description(dev)) > 0);
    ses_registry_destroy(reg);
}

/* An application or a tool adds a manifest by path: once, with its options readable. */
static void a_manifest_added_by_path_joins_the_registry_once(void **state) {
    ses_registry_t *reg = registry_with(NULL);
    const ses_driver_t *d = NULL, *again = NULL, *dup = NULL;
    const ses_device_t *device = NULL;
    char path[] = "/tmp/ses-registry-XXXXXX.json";
    int fd = mkstemps(path, 5);
    FILE *f;

    (void)state;
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"file_format_version\": \"1.0.0\", \"name\": \"fake_good\", \"abi_major\": 1,\n"
            " \"library_path\": \"%s/ses_fake_good.so\",\n"
            " \"options\": {\"driver.fake_good.mode\": \"fast\"}}\n",
            FAKE_DIR);
    fclose(f);

    assert_int_equal(ses_registry_add_driver_file(reg, path, &d), SES_OK);
    assert_non_null(d);
    assert_int_equal(ses_registry_driver_count(reg), 2);
    assert_ptr_equal(driver_named(reg, "fake_good"), d);
    assert_string_equal(ses_driver_manifest_option(d, "driver.fake_good.mode"), "fast");
    assert_null(ses_driver_manifest_option(d, "driver.fake_good.other"));
    assert_null(ses_driver_manifest_option(d, NULL));
    assert_int_equal(ses_registry_find_device(reg, "fake_good:0", &device), SES_OK);
    assert_ptr_equal(ses_device_driver(device), d);

    /* The same file again (by another spelling of its path) adds nothing. */
    {
        char other[PATH_MAX];
        snprintf(other, sizeof other, "/tmp/.//%s", path + 5);
        assert_int_equal(ses_registry_add_driver_file(reg, other, &again), SES_OK);
        assert_ptr_equal(again, d);
        assert_int_equal(ses_registry_driver_count(reg), 2);
    }
    /* Another manifest that claims the same name is kept, failed, with the reason. */
    assert_int_equal(ses_registry_add_driver_file(reg, FAKE("fake_good.json"), &dup),
                     SES_ALREADY_EXISTS);
    assert_non_null(dup);
    assert_int_equal(ses_driver_state(dup), SES_DRIVER_FAILED);
    assert_non_null(strstr(ses_last_error(), "duplicate driver name \"fake_good\""));
    assert_ptr_equal(driver_named(reg, "fake_good"), d);

    assert_int_equal(ses_registry_add_driver_file(reg, "/nonexistent/x.json", &dup), SES_NOT_FOUND);
    assert_null(dup);
    assert_non_null(strstr(ses_last_error(), "/nonexistent/x.json"));
    assert_int_equal(ses_registry_add_driver_file(NULL, path, NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_registry_add_driver_file(reg, "", NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_registry_add_driver_file(reg, NULL, NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_registry_driver_count(reg), 3);
    ses_registry_destroy(reg);
    unlink(path);
}

static void null_arguments_are_refused_with_a_message(void **state) {
    ses_registry_t *reg = registry_with(NULL);
    const ses_device_t *dev = (const ses_device_t *)0x1;
    const ses_driver_t *drv = (const ses_driver_t *)0x1;

    (void)state;
    assert_int_equal(ses_registry_create(NULL), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "out_registry"));
    assert_int_equal(ses_registry_find_device(reg, NULL, &dev), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_registry_find_device(NULL, "cpu", &dev), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_registry_find_device(reg, "cpu", NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_registry_find_driver(reg, NULL, &drv), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_registry_find_driver(reg, "nope", &drv), SES_NOT_FOUND);
    assert_null(drv);
    assert_non_null(strstr(ses_last_error(), "drivers found: cpu"));
    assert_int_equal(ses_registry_load_all(NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_registry_default(NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_registry_driver_count(NULL), 0);
    assert_int_equal(ses_registry_device_count(NULL), 0);
    assert_null(ses_registry_device(NULL, 0));
    assert_null(ses_registry_device(reg, 99));
    assert_string_equal(ses_driver_name(NULL), "");
    assert_string_equal(ses_driver_error(NULL), "");
    assert_string_equal(ses_device_name(NULL), "");
    assert_int_equal(ses_device_memory(NULL), 0);
    ses_registry_destroy(NULL);
    ses_registry_destroy(reg);
}

static void the_default_registry_is_created_once(void **state) {
    ses_registry_t *a = NULL, *b = NULL;

    (void)state;
    clear_environment();
    assert_int_equal(ses_registry_default(&a), SES_OK);
    assert_int_equal(ses_registry_default(&b), SES_OK);
    assert_non_null(a);
    assert_ptr_equal(a, b);
}

typedef struct race {
    ses_registry_t *reg;
    const ses_device_t *found;
    ses_status_t status;
} race_t;

static void *look_up_from_a_thread(void *arg) {
    race_t *r = arg;

    r->status = ses_registry_find_device(r->reg, "accel:0", &r->found);
    ses_registry_device_count(r->reg);
    ses_driver_state(ses_registry_driver(r->reg, 0));
    return NULL;
}

/* Lazy loading from several threads at once loads each driver once. */
static void concurrent_lookups_load_each_driver_once(void **state) {
    ses_registry_t *reg = registry_with(FAKE("fake_good.json"));
    pthread_t threads[4];
    race_t races[4];

    (void)state;
    for (int i = 0; i < 4; i++) {
        races[i].reg = reg;
        assert_int_equal(pthread_create(&threads[i], NULL, look_up_from_a_thread, &races[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(races[i].status, SES_OK);
        assert_ptr_equal(races[i].found, races[0].found);
    }
    assert_int_equal(ses_registry_device_count(reg), 2);
    ses_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_broken_driver_is_reported_and_cpu_still_loads),
        cmocka_unit_test(every_broken_driver_at_once_still_leaves_the_good_ones),
        cmocka_unit_test(the_first_driver_to_claim_a_name_wins_and_the_second_is_refused),
        cmocka_unit_test(two_manifests_for_one_library_load_it_once),
        cmocka_unit_test(libraries_are_opened_only_when_their_devices_are_needed),
        cmocka_unit_test(drivers_are_listed_by_priority_then_discovery_order),
        cmocka_unit_test(disable_globs_turn_drivers_off_with_a_reason),
        cmocka_unit_test(select_globs_keep_only_the_matching_drivers),
        cmocka_unit_test(
            a_device_whose_driver_the_environment_turned_off_says_which_variable_and_glob),
        cmocka_unit_test(a_folder_contributes_its_json_files_in_name_order),
        cmocka_unit_test(the_default_search_reads_the_users_config_folder),
        cmocka_unit_test(a_listed_manifest_that_does_not_exist_is_reported),
        cmocka_unit_test(environment_mistakes_become_notes),
        cmocka_unit_test(a_world_writable_manifest_folder_is_warned_about),
        cmocka_unit_test(a_world_writable_manifest_or_library_is_warned_about),
        cmocka_unit_test(a_loaded_driver_reports_what_it_says_about_itself),
        cmocka_unit_test(a_manifest_added_by_path_joins_the_registry_once),
        cmocka_unit_test(null_arguments_are_refused_with_a_message),
        cmocka_unit_test(the_default_registry_is_created_once),
        cmocka_unit_test(concurrent_lookups_load_each_driver_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
