/*
 * The OpenCL driver, run as a vendor and an administrator would: session-driver-test passes
 * every check and every kernel the driver claims on the machine's OpenCL device (PoCL in CI),
 * and with no platform installed the driver says so instead of failing.
 * Skips, saying why, where no OpenCL device exists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../integration/run_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* The test environment's shared program cache, restored after a test that uses its own. */
static char saved_cache_dir[1024] = "off";

static run_result_t run_tool(const char *tool, const char *args) {
    char command[4096];

    snprintf(command, sizeof command, "'%s' %s 2>&1", tool, args);
    return run_command(command);
}

static void session_driver_test_passes_every_opencl_kernel(void **state) {
    run_result_t r = run_tool(SESSION_DRIVER_TEST, "opencl");
    char line[1024];

    (void)state;
    if (strstr(r.output, "no devices on this machine")) {
        printf("SKIP: no OpenCL device on this machine:\n%s\n", r.output);
        free(r.output);
        skip();
    }
    if (r.exit_code != 0) {
        /* The whole report is long: print it, then fail naming the first failed check. */
        const char *first = strstr(r.output, "\nFAIL ");
        printf("%s\n", r.output);
        if (first)
            line_containing(first + 1, "FAIL ", line, sizeof line);
        fail_msg("exit %d: %s", r.exit_code, first ? line : "(no FAIL line; see above)");
    }
    assert_null(strstr(r.output, "\nFAIL "));
    assert_true(line_containing(r.output, "kernels: ", line, sizeof line));
    assert_non_null(strstr(line, " 0 failed"));
    assert_true(line_containing(r.output, "kernel  MatMul f32,f32->f32", line, sizeof line));
    assert_true(strncmp(line, "PASS", 4) == 0);
    assert_non_null(strstr(r.output, "PASSED: 0 of "));
    free(r.output);
}

static void no_platform_is_no_devices_with_the_reason(void **state) {
    char dir[] = "/tmp/ses-ocl-vendors-XXXXXX";
    run_result_t r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    setenv("OCL_ICD_VENDORS", dir, 1);
    r = run_tool(SESSION_INFO, "");
    unsetenv("OCL_ICD_VENDORS");
    rmdir(dir);
    if (r.exit_code != 0)
        fail_msg("exit %d:\n%s", r.exit_code, r.output);
    assert_non_null(strstr(r.output, "no-devices"));
    assert_non_null(strstr(r.output, "no OpenCL platform installed (ocl-icd found no ICD in "
                                     "/etc/OpenCL/vendors)"));
    free(r.output);
}

/* The one cached binary in @p dir into @p path; 0 when there is not exactly one. */
static int cached_binary(const char *dir, char *path, size_t size) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".bin")) {
            snprintf(path, size, "%s/%s", dir, e->d_name);
            n++;
        }
    }
    closedir(d);
    return n == 1;
}

static void a_corrupt_program_cache_entry_is_rebuilt(void **state) {
    char dir[] = "/tmp/ses-ocl-cache-XXXXXX", path[512];
    struct stat before, after;
    run_result_t r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    setenv("SESSION_DRIVER_OPENCL_CACHE_DIR", dir, 1);
    r = run_tool(SESSION_DRIVER_TEST, "--op Relu opencl");
    if (strstr(r.output, "no devices on this machine")) {
        printf("SKIP: no OpenCL device on this machine\n");
        free(r.output);
        rmdir(dir);
        skip();
    }
    if (r.exit_code != 0)
        fail_msg("first run: exit %d:\n%s", r.exit_code, r.output);
    free(r.output);
    assert_true(cached_binary(dir, path, sizeof path));
    assert_int_equal(stat(path, &before), 0);

    /* Overwrite bytes in the middle of the binary: its checksum no longer matches. */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, (long)(before.st_size / 2), SEEK_SET), 0);
    assert_int_equal(fwrite("garbage!", 8, 1, f), 1);
    assert_int_equal(fclose(f), 0);

    r = run_tool(SESSION_DRIVER_TEST, "--op Relu opencl");
    if (r.exit_code != 0)
        fail_msg("run on the corrupt cache: exit %d:\n%s", r.exit_code, r.output);
    assert_non_null(strstr(r.output, "PASS  kernel  Relu f32->f32"));
    free(r.output);
    /* Rebuilt and rewritten: an entry without the garbage is back. (Not necessarily of the
     * same size: PoCL's binary depends on what its own cache held when it built, which tests
     * running beside this one change.) */
    assert_true(cached_binary(dir, path, sizeof path));
    assert_int_equal(stat(path, &after), 0);
    assert_true(after.st_size > 0);
    {
        char bytes[8] = {0};
        f = fopen(path, "rb");
        assert_non_null(f);
        if (after.st_size >= before.st_size / 2 + 8 &&
            fseek(f, (long)(before.st_size / 2), SEEK_SET) == 0)
            assert_int_equal(fread(bytes, 8, 1, f), 1);
        fclose(f);
        assert_false(memcmp(bytes, "garbage!", 8) == 0);
    }
    unlink(path);
    rmdir(dir);
    setenv("SESSION_DRIVER_OPENCL_CACHE_DIR", saved_cache_dir, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(session_driver_test_passes_every_opencl_kernel),
        cmocka_unit_test(no_platform_is_no_devices_with_the_reason),
        cmocka_unit_test(a_corrupt_program_cache_entry_is_rebuilt),
    };
    const char *cache = getenv("SESSION_DRIVER_OPENCL_CACHE_DIR");
    if (cache)
        snprintf(saved_cache_dir, sizeof saved_cache_dir, "%s", cache);
    setenv("SESSION_ADD_DRIVER_FILES", OPENCL_MANIFEST, 1);
    /* PoCL compiling through LLVM keeps process-lifetime allocations; under LeakSanitizer the
     * child tools ignore those, and only those (lsan.supp). */
    setenv("LSAN_OPTIONS", "suppressions=" LSAN_SUPP ":print_suppressions=0", 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
