/*
 * The CUDA driver's own code on an emulated GPU: cuda_driver.c, cuda_ops.c and the kernels of
 * cuda_kernels_*.cu compiled as host C++ (one thread a block), over the emulated cudart and cuBLAS
 * of this folder. session-driver-test runs it as the "cuda" driver and compares every kernel
 * with the CPU driver's; a kernel whose result differs fails this test. The CPU driver has no
 * f16 or bf16 arithmetic: the kit checks those kernels against it in f32 on the same (narrow)
 * values ("ref f32"), so no kernel may be skipped, for want of a reference or for any other
 * reason. README.md in plugins/cuda says what this proves and what only a GPU can.
 *
 * Built without a C++ compiler, python3 or the CUDA toolkit's headers, it skips (exit 77) with
 * the reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#ifndef EMU_SKIP
/* One run of session-driver-test for every test of the group. */
static run_result_t run;

/* Every line of the run that starts with @p prefix, for a failure's message. */
static void print_lines_starting(const char *prefix) {
    const size_t length = strlen(prefix);

    for (const char *line = run.output; line && *line;) {
        const char *end = strchr(line, '\n');
        const int size = end ? (int)(end - line) : (int)strlen(line);
        if (strncmp(line, prefix, length) == 0)
            print_message("%.*s\n", size, line);
        line = end ? end + 1 : NULL;
    }
}

/* The last @p n lines of the run: where a crash or a sanitizer's report shows. */
static void print_tail(int n) {
    const char *start = run.output + strlen(run.output);

    while (start > run.output && n >= 0)
        if (*--start == '\n')
            n--;
    print_message("[   INFO   ] the end of the output of session-driver-test cuda:\n%s\n", start);
}

static int run_driver_test(void **state) {
    char command[4096];

    (void)state;
    setenv("SESSION_DRIVER_FILES", CPU_MANIFEST, 1);
    setenv("SESSION_ADD_DRIVER_FILES", EMU_MANIFEST, 1);
    /* The emulator has no cuDNN (a real one would find no GPU): Conv and ConvGrad take the
     * im2col + cuBLAS path, and that is what the kit compares with the CPU here. */
    setenv("SESSION_DRIVER_CUDA_CUDNN", "off", 1);
    snprintf(command, sizeof command, "'%s' cuda", SESSION_DRIVER_TEST);
    run = run_command(command);
    return 0;
}

static int free_run(void **state) {
    (void)state;
    free(run.output);
    return 0;
}

/* Starts with "PASS" or names the line's check in the failure. */
static void assert_line_passes(const char *needle) {
    char line[1024];

    if (!line_containing(run.output, needle, line, sizeof line)) {
        print_tail(40);
        fail_msg("no \"%s\" line in the output of session-driver-test cuda", needle);
    }
    if (strncmp(line, "PASS", 4) != 0)
        fail_msg("%s", line);
}

static void session_driver_test_passes_on_the_emulated_gpu(void **state) {
    (void)state;
    if (run.exit_code != 0) {
        print_lines_starting("FAIL");
        print_tail(40);
        fail_msg("session-driver-test cuda: exit %d; its FAIL lines and its end are above",
                 run.exit_code);
    }
    assert_null(strstr(run.output, "\nFAIL "));
    assert_non_null(strstr(run.output, "PASSED: 0 of "));
}

static void the_emulated_gpu_is_open_as_cuda_0(void **state) {
    (void)state;
    assert_line_passes("device  open\n");
    assert_line_passes("device  descriptor cuda:0: libsession CUDA emulator");
}

/* The description says how Conv runs: here without cuDNN, by im2col + cuBLAS. */
static void the_description_names_the_conv_fallback(void **state) {
    (void)state;
    assert_line_passes("no cudnn (turned off by driver.cuda.cudnn=off); Conv by im2col + cuBLAS");
}

/* Capture records the kernels on the stream; each graph_launch replays them. */
static void graphs_capture_replay_and_abandon_on_the_emulated_streams(void **state) {
    (void)state;
    assert_line_passes("graph   capture, launch twice, synchronize");
    assert_line_passes("graph   abandon a capture");
}

/* h-cuda (issue #22): the kernels for transformers and detection models are in the table and
 * match the CPU driver's, each form at least once (Gelu's two forms, LayerNormalization with its
 * optional outputs and its gradients, GatherElements with both index types, TopK, Resize and
 * its gradient, ConvTranspose, NonMaxSuppression). */
static void the_issue_22_kernels_match_the_cpu_driver(void **state) {
    static const char *const lines[] = {
        "kernel  Gelu f32->f32  cases ",
        "kernel  GeluGrad f64,f64->f64  cases ",
        "kernel  LayerNormalization f32,f32,f32->f32,f32,f32  cases ",
        "kernel  LayerNormalization f64,f64->f64  cases ",
        "kernel  LayerNormalizationGrad f32,f32,f32->f32  cases ",
        "kernel  GatherElements f32,i64->f32  cases ",
        "kernel  GatherElements u8,i32->u8  cases ",
        "kernel  TopK f32->f32,i64  cases ",
        "kernel  TopK i64->i64,i64  cases ",
        "kernel  Resize f32->f32  cases ",
        "kernel  Resize u8->u8  cases ",
        "kernel  ResizeGrad f64->f64  cases ",
        "kernel  ConvTranspose f32,f32,f32->f32  cases ",
        "kernel  NonMaxSuppression f32,f32->i64  cases ",
    };
    (void)state;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        assert_line_passes(lines[i]);
}

/* session-info on the emulated GPU with driver.cuda.cudnn set to @p value: its output. */
static char *session_info_with_cudnn(const char *value) {
    char command[4096];
    run_result_t r;

    setenv("SESSION_DRIVER_CUDA_CUDNN", value, 1);
    snprintf(command, sizeof command, "'%s' 2>&1", SESSION_INFO);
    r = run_command(command);
    setenv("SESSION_DRIVER_CUDA_CUDNN", "off", 1);
    assert_int_equal(r.exit_code, 0);
    return r.output;
}

/* A cuDNN that cannot be had leaves the device working, and its description says why. */
static void a_bad_cudnn_setting_is_reported_and_conv_falls_back(void **state) {
    char *out;
    (void)state;
    out = session_info_with_cudnn("/nonexistent/libcudnn.so.9");
    if (!strstr(out, "no cudnn (cannot load /nonexistent/libcudnn.so.9: ") ||
        !strstr(out, "Conv by im2col + cuBLAS"))
        fail_msg("session-info does not report the missing library:\n%s", out);
    free(out);
    out = session_info_with_cudnn("libm.so.6");
    if (!strstr(out, "no cudnn (libm.so.6 has no cudnnGetVersion: not cuDNN 9)"))
        fail_msg("session-info does not report a library without cuDNN's functions:\n%s", out);
    free(out);
}

/* Whether the kernel line at @p line (up to @p end) names an f16 or bf16 signature. */
static int line_is_narrow(const char *line, const char *end) {
    const char *f16 = strstr(line, "f16"), *figures = strstr(line, "  cases ");

    if (figures && (!end || figures < end))
        end = figures; /* the signature only, not the detail */
    return f16 && (!end || f16 < end);
}

/* The line at @p p (after its '\n') contains @p needle before its end. */
static int line_has(const char *p, const char *end, const char *needle) {
    const char *hit = strstr(p, needle);

    return hit && (!end || hit < end);
}

static void every_kernel_matches_the_cpu_driver(void **state) {
    unsigned passed = 0, failed = 0, skipped = 0, total = 0;
    unsigned narrow = 0, narrow_f32 = 0;
    char line[1024];

    (void)state;
    if (!line_containing(run.output, "  kernels: ", line, sizeof line) ||
        sscanf(strstr(line, "kernels: "), "kernels: %u passed, %u failed, %u skipped (of %u)",
               &passed, &failed, &skipped, &total) != 4) {
        print_tail(40);
        fail_msg("no kernel summary in the output of session-driver-test cuda (its end is above)");
    }
    if (failed) {
        print_lines_starting("FAIL  kernel");
        fail_msg("%u of %u kernels differ from the CPU driver's (listed above)", failed, total);
    }
    assert_true(passed > 0);
    assert_int_equal(passed + skipped, total);
    for (const char *p = run.output; (p = strstr(p, "\n")) != NULL;) {
        const char *end;
        p++;
        end = strchr(p, '\n');
        if (strncmp(p, "PASS  kernel", 12) != 0 && strncmp(p, "SKIP  kernel", 12) != 0)
            continue;
        if (line_is_narrow(p, end)) {
            narrow++;
            narrow_f32 += line_has(p, end, "  ref f32") ? 1u : 0u;
        }
        if (strncmp(p, "SKIP", 4) != 0)
            continue;
        /* A skipped kernel (no reference, every case refused, libsession refusing the node)
         * would be a kernel nobody checked. */
        fail_msg("a kernel was skipped:%.*s", end ? (int)(end - p) : (int)strlen(p), p);
    }
    print_message("[   INFO   ] emulated cuda kernels: %u passed, %u failed, %u skipped (of %u); "
                  "f16/bf16: %u, %u of them against the f32 reference\n",
                  passed, failed, skipped, total, narrow, narrow_f32);
    assert_true(narrow > 0);
    assert_true(narrow_f32 > 0);
}
#endif

int main(void) {
#ifdef EMU_SKIP
    printf("cuda_emulated: skipped: %s\n", EMU_SKIP);
    return 77;
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(session_driver_test_passes_on_the_emulated_gpu),
        cmocka_unit_test(the_emulated_gpu_is_open_as_cuda_0),
        cmocka_unit_test(the_description_names_the_conv_fallback),
        cmocka_unit_test(a_bad_cudnn_setting_is_reported_and_conv_falls_back),
        cmocka_unit_test(graphs_capture_replay_and_abandon_on_the_emulated_streams),
        cmocka_unit_test(every_kernel_matches_the_cpu_driver),
        cmocka_unit_test(the_issue_22_kernels_match_the_cpu_driver),
    };
    return cmocka_run_group_tests(tests, run_driver_test, free_run);
#endif
}
