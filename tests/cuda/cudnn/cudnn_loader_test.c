/*
 * The CUDA driver's cuDNN loader (plugins/cuda/cuda_cudnn.c) on its own: every way of not getting
 * cuDNN gives a one-line reason (the driver puts it in the device description and falls back to
 * im2col + cuBLAS), and a real cuDNN 9, where the toolkit has one, resolves every function.
 * No GPU needed: nothing here calls into cuDNN beyond cudnnGetVersion.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_cudnn.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static char why[512];
static cuda_cudnn_t c;

static void assert_contains(const char *text, const char *needle) {
    if (!strstr(text, needle))
        fail_msg("\"%s\" does not contain \"%s\"", text, needle);
}

/* The default search (nothing set) finding no library names the file it looked for. */
static void a_missing_library_is_named_with_the_loaders_reason(void **state) {
    (void)state;
    assert_int_equal(cuda__cudnn_load(NULL, "libcudnn_absent_for_this_test.so.9", &c, why,
                                      sizeof why),
                     -1);
    assert_null(c.lib);
    assert_contains(why, "cannot load libcudnn_absent_for_this_test.so.9: ");
    assert_null(strchr(why, '\n'));
}

static void an_explicit_bad_path_says_the_file_is_not_there(void **state) {
    (void)state;
    assert_int_equal(cuda__cudnn_load("/nonexistent/dir/libcudnn.so.9", CUDA_CUDNN_DEFAULT_NAME,
                                      &c, why, sizeof why),
                     -1);
    assert_null(c.lib);
    assert_contains(why, "cannot load /nonexistent/dir/libcudnn.so.9: ");
    assert_contains(why, "No such file");
}

/* A folder (PyTorch's nvidia/cudnn/lib) means libcudnn.so.9 inside it. */
static void a_folder_is_searched_for_libcudnn_so_9(void **state) {
    (void)state;
    assert_int_equal(cuda__cudnn_load(TEST_EMPTY_DIR, CUDA_CUDNN_DEFAULT_NAME, &c, why, sizeof why),
                     -1);
    assert_contains(why, "cannot load " TEST_EMPTY_DIR "/libcudnn.so.9: ");
}

/* libm loads but is not cuDNN: the first missing function is named. */
static void a_library_without_the_symbols_is_not_cudnn_9(void **state) {
    (void)state;
    assert_int_equal(cuda__cudnn_load("libm.so.6", CUDA_CUDNN_DEFAULT_NAME, &c, why, sizeof why),
                     -1);
    assert_null(c.lib);
    assert_contains(why, "libm.so.6 has no cudnnGetVersion: not cuDNN 9");
}

static void cudnn_8_is_refused_by_its_version(void **state) {
    (void)state;
    assert_int_equal(cuda__cudnn_load(FAKE_CUDNN8, CUDA_CUDNN_DEFAULT_NAME, &c, why, sizeof why),
                     -1);
    assert_null(c.lib);
    assert_contains(why, "is cuDNN 8.9.7; the cuda driver needs cuDNN 9");
}

static void off_turns_cudnn_off(void **state) {
    (void)state;
    assert_int_equal(cuda__cudnn_load("off", CUDA_CUDNN_DEFAULT_NAME, &c, why, sizeof why), -1);
    assert_contains(why, "turned off by driver.cuda.cudnn=off");
    assert_int_equal(cuda__cudnn_load("0", CUDA_CUDNN_DEFAULT_NAME, &c, why, sizeof why), -1);
    assert_null(c.lib);
}

static void versions_print_as_cudnn_encodes_them(void **state) {
    char v[32];
    (void)state;
    cuda__cudnn_version_str(91900, v, sizeof v);
    assert_string_equal(v, "9.19.0");
    cuda__cudnn_version_str(90102, v, sizeof v);
    assert_string_equal(v, "9.1.2");
    cuda__cudnn_version_str(8907, v, sizeof v);
    assert_string_equal(v, "8.9.7");
}

/* The toolkit's own cuDNN 9, where there is one: every function the driver uses resolves. */
static void the_toolkits_cudnn_9_resolves_every_function(void **state) {
    (void)state;
    if (!REAL_CUDNN[0] || !fopen(REAL_CUDNN, "r")) {
        print_message("[  SKIPPED ] no cuDNN 9 in the toolkit (%s)\n",
                      REAL_CUDNN[0] ? REAL_CUDNN : "not configured");
        skip();
    }
    if (cuda__cudnn_load(REAL_CUDNN, CUDA_CUDNN_DEFAULT_NAME, &c, why, sizeof why) != 0)
        fail_msg("%s", why);
    assert_non_null(c.lib);
    assert_true(c.version >= 90000);
    assert_non_null(c.PoolingForward);
    assert_non_null(c.ConvolutionBackwardFilter);
    cuda__cudnn_unload(&c);
    assert_null(c.lib);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_missing_library_is_named_with_the_loaders_reason),
        cmocka_unit_test(an_explicit_bad_path_says_the_file_is_not_there),
        cmocka_unit_test(a_folder_is_searched_for_libcudnn_so_9),
        cmocka_unit_test(a_library_without_the_symbols_is_not_cudnn_9),
        cmocka_unit_test(cudnn_8_is_refused_by_its_version),
        cmocka_unit_test(off_turns_cudnn_off),
        cmocka_unit_test(versions_print_as_cudnn_encodes_them),
        cmocka_unit_test(the_toolkits_cudnn_9_resolves_every_function),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
