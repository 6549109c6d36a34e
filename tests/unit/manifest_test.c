/* Manifest parsing: every field, every malformed input, and the messages that name them. */
#include <limits.h>
#include <string.h>

#include "registry/registry_internal.h"
#include "test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[64];
    char path[PATH_MAX];
    ses__manifest_t m;
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    test_mkdtemp(f->dir, sizeof f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    ses__manifest_clear(&f->m);
    test_rmtree(f->dir);
    free(f);
    return 0;
}

static ses_status_t read_text(fixture_t *f, const char *name, const char *text) {
    ses__manifest_clear(&f->m);
    test_write_file(f->dir, name, text, f->path, sizeof f->path);
    return ses__manifest_read(f->path, &f->m);
}

static void a_complete_manifest_gives_every_field(void **state) {
    fixture_t *f = *state;
    char expected[PATH_MAX + 32];
    FILE *lib;

    /* The library exists so that its real path can be taken. */
    snprintf(expected, sizeof expected, "%s/libs/ses_x.so", f->dir);
    snprintf(f->path, sizeof f->path, "%s/libs", f->dir);
    assert_int_equal(mkdir(f->path, 0700), 0);
    lib = fopen(expected, "wb");
    assert_non_null(lib);
    fclose(lib);

    assert_int_equal(read_text(f, "x.json",
                               "{\"file_format_version\": \"1.2.0\", \"name\": \"x_drv-2\",\n"
                               " \"library_path\": \"libs/ses_x.so\", \"abi_major\": 1,\n"
                               " \"device_kinds\": [\"gpu\", \"accel\"], \"priority\": -5,\n"
                               " \"requires\": [\"libfoo.so.1\", \"libbar.so.2\"],\n"
                               " \"options\": {\"driver.x_drv-2.mode\": \"fast\"},\n"
                               " \"future_key\": {\"ignored\": true}}"),
                     SES_OK);
    assert_string_equal(f->m.name, "x_drv-2");
    assert_string_equal(f->m.library_path, "libs/ses_x.so");
    assert_string_equal(f->m.library_resolved, expected);
    assert_int_equal(f->m.abi_major, 1);
    assert_int_equal(f->m.priority, -5);
    assert_int_equal(f->m.kinds_mask, (1u << SES_DEVICE_GPU) | (1u << SES_DEVICE_ACCEL));
    assert_int_equal(f->m.n_requires, 2);
    assert_string_equal(f->m.requires[1], "libbar.so.2");
    assert_int_equal(f->m.n_options, 1);
    assert_string_equal(f->m.option_keys[0], "driver.x_drv-2.mode");
    assert_string_equal(f->m.option_values[0], "fast");
}

static void optional_fields_take_their_defaults(void **state) {
    fixture_t *f = *state;

    assert_int_equal(read_text(f, "min.json",
                               "{\"file_format_version\": \"1.0.0\", \"name\": \"min\", "
                               "\"library_path\": \"/opt/min/ses_min.so\", \"abi_major\": 1}"),
                     SES_OK);
    assert_int_equal(f->m.priority, 0);
    assert_int_equal(f->m.kinds_mask, SES__ALL_KINDS);
    assert_int_equal(f->m.n_requires, 0);
    assert_int_equal(f->m.n_options, 0);
    /* An absolute path stays as written when the file is absent. */
    assert_string_equal(f->m.library_resolved, "/opt/min/ses_min.so");
}

/* An administrator must be pointed at the line to fix. */
static void a_syntax_error_names_the_file_line_and_column(void **state) {
    fixture_t *f = *state;
    char expected[PATH_MAX + 16];

    assert_int_equal(read_text(f, "broken.json",
                               "{\n  \"file_format_version\": \"1.0.0\",\n"
                               "  \"name\": \"broken\"\n  \"library_path\": \"x.so\"\n}"),
                     SES_INVALID_ARGUMENT);
    snprintf(expected, sizeof expected, "%s:4:3", f->path);
    assert_non_null(strstr(ses_last_error(), expected));
    assert_non_null(strstr(ses_last_error(), "JSON syntax error"));
    /* A broken manifest is still listed, under its file's stem. */
    assert_string_equal(f->m.name, "broken");
}

static void an_empty_file_is_a_syntax_error(void **state) {
    fixture_t *f = *state;

    assert_int_equal(read_text(f, "empty.json", ""), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "empty.json:1:1"));
}

static void schema_errors_name_the_field_and_what_was_found(void **state) {
    static const struct {
        const char *text;
        const char *expect;
    } cases[] = {
        {"[1, 2]", "the top level must be an object, found an array"},
        {"{\"name\": \"a\"}", "\"file_format_version\" is missing"},
        {"{\"file_format_version\": 1}", "\"file_format_version\" must be a string, found a number"},
        {"{\"file_format_version\": \"one\"}", "must look like \"1.0.0\""},
        {"{\"file_format_version\": \"1.0.0\", \"name\": 7}", "\"name\" must be a string, found a number"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"Bad Name\"}", "found \"Bad Name\""},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"\"}", "\"name\" must be 1 to 32"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"gpu\"}", "may not be the device kind \"gpu\""},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"a\"}", "\"library_path\" is missing"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"a\", \"library_path\": \"\"}",
         "\"library_path\" is empty"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"a\", \"library_path\": \"a.so\"}",
         "\"abi_major\" is missing"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"a\", \"library_path\": \"a.so\", "
         "\"abi_major\": \"1\"}",
         "\"abi_major\" must be an integer, found a string"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"a\", \"library_path\": \"a.so\", "
         "\"abi_major\": 1.5}",
         "\"abi_major\" must be an integer in [1, 1000000], found 1.5"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"a\", \"library_path\": \"a.so\", "
         "\"abi_major\": 1, \"priority\": 1e12}",
         "\"priority\" must be an integer in"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"a\", \"library_path\": \"a.so\", "
         "\"abi_major\": 1, \"device_kinds\": \"gpu\"}",
         "\"device_kinds\" must be an array of strings, found a string"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"a\", \"library_path\": \"a.so\", "
         "\"abi_major\": 1, \"device_kinds\": [\"gpu\", \"tpu\"]}",
         "\"device_kinds\" entry 1 must be one of"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"a\", \"library_path\": \"a.so\", "
         "\"abi_major\": 1, \"requires\": [\"ok.so\", 3]}",
         "\"requires\" entry 1 must be a string, found a number"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"a\", \"library_path\": \"a.so\", "
         "\"abi_major\": 1, \"options\": []}",
         "\"options\" must be an object, found an array"},
        {"{\"file_format_version\": \"1.0.0\", \"name\": \"a\", \"library_path\": \"a.so\", "
         "\"abi_major\": 1, \"options\": {\"k\": 1}}",
         "option \"k\" must be a string, found a number"},
    };
    fixture_t *f = *state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ses_status_t st = read_text(f, "bad.json", cases[i].text);
        if (st != SES_INVALID_ARGUMENT || !strstr(ses_last_error(), cases[i].expect) ||
            !strstr(ses_last_error(), f->path))
            fail_msg("case %zu (%s): got %s \"%s\", expected \"%s\"", i, cases[i].text,
                     ses_status_name(st), ses_last_error(), cases[i].expect);
    }
}

static void a_newer_file_format_major_is_incompatible(void **state) {
    fixture_t *f = *state;

    assert_int_equal(read_text(f, "v2.json", "{\"file_format_version\": \"2.0.0\"}"),
                     SES_INCOMPATIBLE);
    assert_non_null(strstr(ses_last_error(), "file format 2.x is not supported"));
}

static void a_missing_manifest_is_not_found(void **state) {
    fixture_t *f = *state;

    ses__manifest_clear(&f->m);
    snprintf(f->path, sizeof f->path, "%s/nope.json", f->dir);
    assert_int_equal(ses__manifest_read(f->path, &f->m), SES_NOT_FOUND);
    assert_non_null(strstr(ses_last_error(), f->path));
    assert_string_equal(f->m.name, "nope");
}

/* A hostile or mistaken huge file must not be read into memory. */
static void an_oversized_manifest_is_refused_before_parsing(void **state) {
    fixture_t *f = *state;
    FILE *file;

    snprintf(f->path, sizeof f->path, "%s/huge.json", f->dir);
    file = fopen(f->path, "wb");
    assert_non_null(file);
    assert_int_equal(fseek(file, SES__MANIFEST_MAX_BYTES + 1, SEEK_SET), 0);
    fputc(' ', file);
    fclose(file);
    ses__manifest_clear(&f->m);
    assert_int_equal(ses__manifest_read(f->path, &f->m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "the limit is"));
}

static void a_folder_is_not_a_manifest(void **state) {
    fixture_t *f = *state;

    ses__manifest_clear(&f->m);
    assert_int_equal(ses__manifest_read(f->dir, &f->m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "not a regular file"));
}

/* A relative library path with a ".." component is refused, whether or not the file exists. */
static void a_library_path_escaping_through_dotdot_is_refused(void **state) {
    fixture_t *f = *state;

    assert_int_equal(read_text(f, "x.json",
                               "{\"file_format_version\": \"1.0.0\", \"name\": \"x\",\n"
                               " \"library_path\": \"libs/../../ses_x.so\", \"abi_major\": 1}"),
                     SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "x.json"));
    assert_non_null(strstr(ses_last_error(), "libs/../../ses_x.so"));
    assert_non_null(strstr(ses_last_error(), "\"..\""));
}

/* A relative path through a symlink that points outside the manifest's folder is refused. */
static void a_library_path_escaping_through_a_symlink_is_refused(void **state) {
    fixture_t *f = *state;
    char outside[64];
    char link_path[PATH_MAX];
    char lib[PATH_MAX];

    test_mkdtemp(outside, sizeof outside);
    test_write_file(outside, "ses_x.so", "", lib, sizeof lib);
    snprintf(link_path, sizeof link_path, "%s/libs", f->dir);
    assert_int_equal(symlink(outside, link_path), 0);

    ses_status_t st = read_text(f, "x.json",
                                "{\"file_format_version\": \"1.0.0\", \"name\": \"x\",\n"
                                " \"library_path\": \"libs/ses_x.so\", \"abi_major\": 1}");
    char message[1024];
    snprintf(message, sizeof message, "%s", ses_last_error());
    test_rmtree(outside);

    assert_int_equal(st, SES_INVALID_ARGUMENT);
    assert_non_null(strstr(message, "x.json"));
    assert_non_null(strstr(message, "symlink"));
    assert_non_null(strstr(message, "outside"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_complete_manifest_gives_every_field, setup, teardown),
        cmocka_unit_test_setup_teardown(optional_fields_take_their_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(a_syntax_error_names_the_file_line_and_column, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_empty_file_is_a_syntax_error, setup, teardown),
        cmocka_unit_test_setup_teardown(schema_errors_name_the_field_and_what_was_found, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_newer_file_format_major_is_incompatible, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_missing_manifest_is_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(an_oversized_manifest_is_refused_before_parsing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_folder_is_not_a_manifest, setup, teardown),
        cmocka_unit_test_setup_teardown(a_library_path_escaping_through_dotdot_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_library_path_escaping_through_a_symlink_is_refused,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
