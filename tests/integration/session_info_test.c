/*
 * session-info as an administrator runs it: every driver with its state, one line of cause for
 * each broken one, every device, and --json with the same content. It exits 0 whatever drivers
 * are broken.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "run_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define FAKE(name) FAKE_DIR "/" name

static run_result_t session_info(const char *add, const char *args) {
    char command[4096];

    setenv("SESSION_DRIVER_FILES", CPU_MANIFEST, 1);
    if (add)
        setenv("SESSION_ADD_DRIVER_FILES", add, 1);
    else
        unsetenv("SESSION_ADD_DRIVER_FILES");
    snprintf(command, sizeof command, "'%s' %s", SESSION_INFO, args);
    return run_command(command);
}

static void it_lists_the_cpu_driver_and_its_device(void **state) {
    run_result_t r = session_info(NULL, "");
    char line[512];

    (void)state;
    assert_int_equal(r.exit_code, 0);
    assert_true(line_containing(r.output, "  cpu ", line, sizeof line));
    assert_non_null(strstr(line, "ready"));
    assert_non_null(strstr(line, "ABI 1.5"));
    assert_true(line_containing(r.output, "cpu:0", line, sizeof line));
    assert_non_null(strstr(line, "cpu"));
    /* The CPU device's name says which convolution path it runs (driver.cpu.conv). */
    assert_non_null(strstr(line, "; conv: "));
    assert_non_null(strstr(r.output, "manifest: " CPU_MANIFEST));
    assert_non_null(strstr(r.output, "ses_cpu.so"));
    free(r.output);
}

static const struct {
    const char *manifest;
    const char *cause;
} broken[] = {
    {"fake_no_entry.json", "does not export ses_drv_negotiate"},
    {"fake_abi2.json", "speaks driver ABI 2.0"},
    {"fake_abi2_manifest.json", "declares driver ABI 2"},
    {"fake_small_table.json", "ses_drv_api_t of 16 bytes"},
    {"fake_negotiate_fails.json", "license server unreachable"},
    {"fake_null_required.json", "required entry enumerate_devices NULL"},
    {"fake_missing_dep.json", "libses_fake_gone.so.1: cannot open shared object file"},
    {"fake_malformed.json", "fake_malformed.json:4:"},
    {"fake_missing_file.json", "library not found"},
    {"fake_bad_fields.json", "\"name\" must be a string"},
    {"fake_no_devices.json", "no fake hardware present"},
};

/* Each broken manifest in turn: its cause in one line, and cpu:0 still listed. */
static void each_broken_driver_gets_a_one_line_cause_and_cpu_is_still_listed(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        char path[1024], line[2048];
        run_result_t r;

        snprintf(path, sizeof path, "%s/%s", FAKE_DIR, broken[i].manifest);
        r = session_info(path, "");
        if (r.exit_code != 0 || !line_containing(r.output, broken[i].cause, line, sizeof line) ||
            !strstr(line, "cause:") || !strstr(r.output, "cpu:0"))
            fail_msg("%s: exit %d, output:\n%s", broken[i].manifest, r.exit_code, r.output);
        free(r.output);
    }
}

static void json_output_is_one_document_with_drivers_devices_and_errors(void **state) {
    run_result_t r = session_info(FAKE("fake_abi2.json") ":" FAKE("fake_good.json"), "--json");
    cJSON *root, *drivers, *devices, *item;
    int saw_cpu = 0, saw_abi2 = 0;

    (void)state;
    assert_int_equal(r.exit_code, 0);
    root = cJSON_Parse(r.output);
    if (!root)
        fail_msg("not JSON:\n%s", r.output);
    assert_int_equal(cJSON_GetObjectItem(root, "abi_major")->valueint, 1);
    drivers = cJSON_GetObjectItem(root, "drivers");
    devices = cJSON_GetObjectItem(root, "devices");
    assert_int_equal(cJSON_GetArraySize(drivers), 3);
    assert_int_equal(cJSON_GetArraySize(devices), 2);
    cJSON_ArrayForEach(item, drivers) {
        const char *name = cJSON_GetObjectItem(item, "name")->valuestring;
        cJSON *error = cJSON_GetObjectItem(item, "error");
        if (strcmp(name, "cpu") == 0) {
            saw_cpu = 1;
            assert_string_equal(cJSON_GetObjectItem(item, "state")->valuestring, "ready");
            assert_true(cJSON_IsNull(error));
            assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(item, "devices"), 0)->valuestring,
                                "cpu:0");
        } else if (strcmp(name, "fake_abi2") == 0) {
            saw_abi2 = 1;
            assert_string_equal(cJSON_GetObjectItem(item, "state")->valuestring, "failed");
            assert_string_equal(cJSON_GetObjectItem(error, "code")->valuestring,
                                "SES_INCOMPATIBLE");
            assert_non_null(strstr(cJSON_GetObjectItem(error, "message")->valuestring, "ABI 2.0"));
        }
    }
    assert_true(saw_cpu && saw_abi2);
    item = cJSON_GetArrayItem(devices, 1);
    assert_string_equal(cJSON_GetObjectItem(item, "name")->valuestring, "cpu:0");
    assert_string_equal(cJSON_GetObjectItem(item, "kind")->valuestring, "cpu");
    assert_true(cJSON_GetObjectItem(item, "memory_bytes")->valuedouble > 0);
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(item, "caps")));
    cJSON_Delete(root);
    free(r.output);
}

static int starts_with(const char *text, const char *prefix) {
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

/* The "source" and the "path" of each entry of --json's search.entries, in order, each list
 * joined by spaces. */
static void json_search_sources(const char *output, char *buffer, size_t size, char *paths,
                                size_t paths_size) {
    cJSON *root = cJSON_Parse(output), *entries, *item;
    size_t used = 0, paths_used = 0;

    if (!root)
        fail_msg("not JSON:\n%s", output);
    entries = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "search"), "entries");
    if (!cJSON_IsArray(entries))
        fail_msg("no search.entries array:\n%s", output);
    buffer[0] = paths[0] = '\0';
    cJSON_ArrayForEach(item, entries) {
        used += (size_t)snprintf(buffer + used, size - used, "%s%s", used ? " " : "",
                                 cJSON_GetObjectItem(item, "source")->valuestring);
        paths_used +=
            (size_t)snprintf(paths + paths_used, paths_size - paths_used, "%s%s",
                             paths_used ? " " : "", cJSON_GetObjectItem(item, "path")->valuestring);
    }
    cJSON_Delete(root);
}

/*
 * Each entry of the manifest search is labelled with where it came from. SESSION_ADD_DRIVER_FILES's
 * entries used to be printed under "manifest search (default)", and with SESSION_DRIVER_FILES set
 * the whole list was "(environment)" without saying which variable replaced what. --json says the
 * same as the text.
 */
static void the_manifest_search_labels_each_entry_with_the_variable_it_came_from(void **state) {
    run_result_t r;
    char line[2048], sources[512], paths[4096];

    (void)state;
    /* Only SESSION_ADD_DRIVER_FILES: its file, then the default folders. */
    unsetenv("SESSION_DRIVER_FILES");
    setenv("SESSION_ADD_DRIVER_FILES", FAKE("fake_good.json"), 1);
    setenv("XDG_CONFIG_HOME", "/nonexistent-ses-test", 1);
    r = run_command("'" SESSION_INFO "'");
    if (r.exit_code != 0 ||
        !line_containing(r.output, "  SESSION_ADD_DRIVER_FILES ", line, sizeof line) ||
        !strstr(line, FAKE("fake_good.json")) ||
        !line_containing(r.output, "/nonexistent-ses-test/session/drivers.d", line, sizeof line) ||
        !strstr(line, "  default ") ||
        !line_containing(r.output, "/etc/session/drivers.d", line, sizeof line) ||
        !strstr(line, "  default ") || strstr(r.output, "(default)"))
        fail_msg("SESSION_ADD_DRIVER_FILES alone: exit %d, output:\n%s", r.exit_code, r.output);
    free(r.output);
    r = run_command("'" SESSION_INFO "' --json");
    assert_int_equal(r.exit_code, 0);
    json_search_sources(r.output, sources, sizeof sources, paths, sizeof paths);
    /* Then <datadir>/session/drivers.d, unless the install's datadir is /etc. */
    if (!starts_with(sources, "SESSION_ADD_DRIVER_FILES default default") ||
        !starts_with(paths, FAKE("fake_good.json") " /nonexistent-ses-test/session/drivers.d "
                                                   "/etc/session/drivers.d"))
        fail_msg("search.entries: sources \"%s\", paths \"%s\"", sources, paths);
    free(r.output);
    unsetenv("XDG_CONFIG_HOME");

    /* Both: SESSION_DRIVER_FILES replaces the default folders, which are not listed. */
    r = session_info(FAKE("fake_good.json"), "");
    if (r.exit_code != 0 ||
        !line_containing(r.output, "  SESSION_ADD_DRIVER_FILES ", line, sizeof line) ||
        !strstr(line, FAKE("fake_good.json")) ||
        !line_containing(r.output, "  SESSION_DRIVER_FILES ", line, sizeof line) ||
        !strstr(line, CPU_MANIFEST) ||
        !strstr(r.output, "SESSION_DRIVER_FILES replaces the default folders") ||
        strstr(r.output, "/etc/session/drivers.d") || strstr(r.output, "(environment)"))
        fail_msg("both variables: exit %d, output:\n%s", r.exit_code, r.output);
    free(r.output);
    r = session_info(FAKE("fake_good.json"), "--json");
    assert_int_equal(r.exit_code, 0);
    json_search_sources(r.output, sources, sizeof sources, paths, sizeof paths);
    assert_string_equal(sources, "SESSION_ADD_DRIVER_FILES SESSION_DRIVER_FILES");
    assert_string_equal(paths, FAKE("fake_good.json") " " CPU_MANIFEST);
    free(r.output);
}

static void an_unknown_argument_exits_2_with_usage(void **state) {
    run_result_t r = session_info(NULL, "--frobnicate");

    (void)state;
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.output, "unknown argument \"--frobnicate\""));
    assert_non_null(strstr(r.output, "usage: session-info"));
    free(r.output);
}

static void help_and_version_exit_0(void **state) {
    run_result_t r = session_info(NULL, "--help");

    (void)state;
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.output, "SESSION_DRIVERS_SELECT"));
    free(r.output);
    r = session_info(NULL, "--version");
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.output, "driver ABI 1.5"));
    free(r.output);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(it_lists_the_cpu_driver_and_its_device),
        cmocka_unit_test(each_broken_driver_gets_a_one_line_cause_and_cpu_is_still_listed),
        cmocka_unit_test(json_output_is_one_document_with_drivers_devices_and_errors),
        cmocka_unit_test(the_manifest_search_labels_each_entry_with_the_variable_it_came_from),
        cmocka_unit_test(an_unknown_argument_exits_2_with_usage),
        cmocka_unit_test(help_and_version_exit_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
