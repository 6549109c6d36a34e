/*
 * session-run as a user runs it: the committed MLP and CNN (tests/onnx/models) from .npy inputs
 * to .npy outputs that match NumPy's answers; timings and placement printed; bad usage and
 * missing or unknown inputs named, with exit 2 and 1; --profile's tables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <session/npy.h>

#include "run_util.h"

#define MODELS SOURCE_ROOT "/tests/onnx/models"

static run_result_t session_run(const char *args) {
    char command[4096];
    snprintf(command, sizeof command, "'%s' %s 2>&1", SESSION_RUN, args);
    return run_command(command);
}

/* Runs @p model on its input_0.npy, writes y, and compares with expected_0.npy. */
static void check_model(const char *model) {
    char out[] = "/tmp/ses-run-XXXXXX", args[2048];
    int fd = mkstemp(out);
    ses_tensor_t *got = NULL, *want = NULL;
    run_result_t r;

    assert_true(fd >= 0);
    close(fd);
    snprintf(args, sizeof args,
             MODELS "/%s/model.onnx --input x=" MODELS "/%s/input_0.npy --output y=%s --repeat 5",
             model, model, out);
    r = session_run(args);
    if (r.exit_code != 0)
        fail_msg("exit %d:\n%s", r.exit_code, r.output);
    assert_non_null(strstr(r.output, "placement: cpu:0 5 nodes"));
    assert_non_null(strstr(r.output, "first run: "));
    assert_non_null(strstr(r.output, "runs 2 to 5: min "));
    assert_non_null(strstr(r.output, "output y: written to"));
    free(r.output);
    assert_int_equal(ses_npy_read_file(out, &got), SES_OK);
    unlink(out);
    snprintf(args, sizeof args, MODELS "/%s/expected_0.npy", model);
    assert_int_equal(ses_npy_read_file(args, &want), SES_OK);
    assert_int_equal(ses_tensor_count(got), ses_tensor_count(want));
    assert_int_equal(ses_tensor_rank(got), 2);
    for (size_t i = 0; i < ses_tensor_count(want); i++)
        assert_float_equal(((float *)ses_tensor_data(got))[i], ((float *)ses_tensor_data(want))[i],
                           1e-4);
    ses_tensor_release(got);
    ses_tensor_release(want);
}

static void an_exported_mlp_matches_numpy(void **state) {
    (void)state;
    check_model("mlp");
}

static void a_small_cnn_matches_numpy(void **state) {
    (void)state;
    check_model("cnn"); /* Conv, Relu, MaxPool, Flatten, Gemm */
}

static void outputs_not_written_are_summarized(void **state) {
    run_result_t r = session_run(MODELS "/mlp/model.onnx --input " MODELS "/mlp/input_0.npy");

    (void)state;
    if (r.exit_code != 0)
        fail_msg("exit %d:\n%s", r.exit_code, r.output);
    assert_non_null(strstr(r.output, "output y: f32[4,10] "));
    free(r.output);
}

/* The CNN's steps in the profile: per op, the slowest steps by node, the step time against a run's
 * (the times themselves are not checked). */
static void profile_prints_ops_and_slowest_steps(void **state) {
    run_result_t r = session_run(MODELS "/cnn/model.onnx --input " MODELS
                                        "/cnn/input_0.npy --repeat 3 --profile --quiet");

    (void)state;
    if (r.exit_code != 0)
        fail_msg("exit %d:\n%s", r.exit_code, r.output);
    assert_non_null(strstr(r.output, "profile of runs 2 to 3 ("));
    assert_non_null(strstr(r.output, "slowest steps, per run:"));
    assert_non_null(strstr(r.output, "Gemm"));
    assert_non_null(strstr(r.output, "cpu:0"));
    assert_non_null(strstr(r.output, "steps: "));
    assert_non_null(strstr(r.output, "outside the steps"));
    assert_null(strstr(r.output, "placement:")); /* --quiet still prints the profile only */
    free(r.output);
}

static void mistakes_are_named(void **state) {
    run_result_t r;

    (void)state;
    r = session_run("");
    assert_int_equal(r.exit_code, 2);
    free(r.output);
    r = session_run(MODELS "/mlp/model.onnx --repeat 0");
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.output, "--repeat wants 1 to 1000000"));
    free(r.output);
    r = session_run(MODELS "/mlp/model.onnx");
    assert_int_equal(r.exit_code, 1);
    assert_non_null(strstr(r.output, "no --input for \"x\"; the model's inputs are: x"));
    free(r.output);
    r = session_run(MODELS "/mlp/model.onnx --input x=" MODELS "/mlp/input_0.npy --input z=a.npy");
    assert_int_equal(r.exit_code, 1);
    assert_non_null(strstr(r.output, "the model has no input \"z\""));
    free(r.output);
    r = session_run(MODELS "/mlp/model.onnx --input x=" MODELS "/cnn/input_0.npy");
    assert_int_equal(r.exit_code, 1);
    assert_non_null(strstr(r.output, "feed for placeholder \"x\""));
    free(r.output);
    r = session_run(MODELS "/mlp/input_0.npy --input x=" MODELS "/mlp/input_0.npy");
    assert_int_equal(r.exit_code, 1);
    assert_non_null(strstr(r.output, "not an ONNX protobuf file"));
    free(r.output);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_exported_mlp_matches_numpy),
        cmocka_unit_test(a_small_cnn_matches_numpy),
        cmocka_unit_test(outputs_not_written_are_summarized),
        cmocka_unit_test(profile_prints_ops_and_slowest_steps),
        cmocka_unit_test(mistakes_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
