/*
 * ONNX control flow (If, Loop, Scan), which the importer lowers into the plain graph
 * (formats/onnx/onnx_control.c). The models are tests/onnx/models/control, written by
 * make_control_models.py; the expected values are worked out here by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <session/onnx.h>
#include <session/session.h>

#define MODELS SOURCE_ROOT "/tests/onnx/models/control"

#include "onnx_model_harness.h"

static ses_tensor_t *floats(int rank, const int64_t *dims, const float *v) {
    ses_tensor_t *t;
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    assert_int_equal(ses_tensor_create_from(SES_F32, (size_t)rank, dims, v, n * sizeof *v, &t),
                     SES_OK);
    return t;
}

static ses_tensor_t *scalar_bool(int v) {
    uint8_t b = (uint8_t)v;
    ses_tensor_t *t;
    assert_int_equal(ses_tensor_create_from(SES_BOOL, 0, NULL, &b, 1, &t), SES_OK);
    return t;
}

/* Output @p index must be f32 of the shape @p dims (rank @p rank) holding @p want exactly. */
static void expect_output(model_t *mo, size_t index, int rank, const int64_t *dims,
                          const float *want) {
    ses_tensor_t *y;
    size_t n = 1;

    if (eval(mo, index, &y) != SES_OK)
        fail_msg("output %zu: %s", index, ses_last_error());
    assert_int_equal(ses_tensor_dtype(y), SES_F32);
    assert_int_equal(ses_tensor_rank(y), rank);
    for (int i = 0; i < rank; i++) {
        assert_int_equal(ses_tensor_dims(y)[i], dims[i]);
        n *= (size_t)dims[i];
    }
    for (size_t i = 0; i < n; i++)
        if (((const float *)ses_tensor_data(y))[i] != want[i])
            fail_msg("output %zu, element %zu: %g, want %g", index, i,
                     ((const float *)ses_tensor_data(y))[i], want[i]);
    ses_tensor_release(y);
}

static const int64_t dim3[1] = {3}, dim2[1] = {2};
static const float x3[3] = {1, 2, 3}, x2[2] = {1, 2};

/* A constant condition imports only the branch taken (then: x + 1, x from the outer graph). */
static void if_on_a_constant_imports_the_branch_taken(void **state) {
    const float want[3] = {2, 3, 4};
    ses_node_t *node;
    model_t mo;

    (void)state;
    open_model(&mo, "if_constant");
    feed(&mo, "x", floats(1, dim3, x3));
    expect_output(&mo, 0, 1, dim3, want);
    assert_int_equal(ses_graph_find_node(ses_onnx_model_graph(mo.m), "pick/then/then_add", &node),
                     SES_OK);
    assert_int_equal(
        ses_graph_find_node(ses_onnx_model_graph(mo.m), "pick/else/else_concat", &node),
        SES_NOT_FOUND);
    close_model(&mo);
}

/* A fed condition picks the branch when the plan compiles; the shapes differ ([3] and [6]). */
static void if_on_a_fed_condition_picks_the_branch_each_time(void **state) {
    const float then_want[3] = {2, 3, 4}, else_want[6] = {1, 2, 3, 1, 2, 3};
    const int64_t dim6[1] = {6};
    model_t mo;

    (void)state;
    open_model(&mo, "if_fed");
    feed(&mo, "x", floats(1, dim3, x3));
    feed(&mo, "c", scalar_bool(1));
    expect_output(&mo, 0, 1, dim3, then_want);
    feed(&mo, "c", scalar_bool(0));
    expect_output(&mo, 0, 1, dim6, else_want);
    feed(&mo, "c", scalar_bool(1));
    expect_output(&mo, 0, 1, dim3, then_want);
    close_model(&mo);
}

/* s = 2 s + iter three times from x = [1, 2]: [2, 4], [5, 9], [12, 20]; the scan output stacks
 * them. */
static void loop_with_a_constant_trip_count_is_unrolled(void **state) {
    const float s[2] = {12, 20}, stack[6] = {2, 4, 5, 9, 12, 20};
    const int64_t dims[2] = {3, 2};
    model_t mo;

    (void)state;
    open_model(&mo, "loop_constant");
    feed(&mo, "x", floats(1, dim2, x2));
    expect_output(&mo, 0, 1, dim2, s);
    expect_output(&mo, 1, 2, dims, stack);
    close_model(&mo);
}

/* The same body with M and cond fed: the value after min-over-cond M iterations is picked. */
static void loop_with_a_fed_trip_count_picks_the_iterations_run(void **state) {
    const float s3[2] = {12, 20}, stack3[6] = {2, 4, 5, 9, 12, 20}, s1[2] = {2, 4};
    const int64_t dims3[2] = {3, 2}, dims1[2] = {1, 2}, dims0[2] = {0, 2};
    model_t mo;
    ses_tensor_t *y;

    (void)state;
    open_model(&mo, "loop_fed");
    feed(&mo, "x", floats(1, dim2, x2));
    feed(&mo, "m", scalar_i64(3));
    feed(&mo, "c", scalar_bool(1));
    expect_output(&mo, 0, 1, dim2, s3);
    expect_output(&mo, 1, 2, dims3, stack3);
    feed(&mo, "m", scalar_i64(1));
    expect_output(&mo, 0, 1, dim2, s1);
    expect_output(&mo, 1, 2, dims1, s1);
    /* No iteration: M = 0, a negative M, or cond false. */
    feed(&mo, "m", scalar_i64(0));
    expect_output(&mo, 0, 1, dim2, x2);
    expect_output(&mo, 1, 2, dims0, NULL);
    feed(&mo, "m", scalar_i64(-4));
    expect_output(&mo, 0, 1, dim2, x2);
    feed(&mo, "m", scalar_i64(3));
    feed(&mo, "c", scalar_bool(0));
    expect_output(&mo, 0, 1, dim2, x2);
    expect_output(&mo, 1, 2, dims0, NULL);
    /* More iterations than were unrolled: refused when the plan compiles, naming the output. */
    feed(&mo, "c", scalar_bool(1));
    feed(&mo, "m", scalar_i64(100));
    assert_int_not_equal(eval(&mo, 0, &y), SES_OK);
    assert_null(y);
    if (!strstr(ses_last_error(), "l1/s (Loop unrolled 62 times at most)") ||
        !strstr(ses_last_error(), "position 100 is outside"))
        fail_msg("%s", ses_last_error());
    close_model(&mo);
}

/* A constant M with a fed cond: three iterations, or none (x, and an empty stack). */
static void loop_with_a_fed_condition_runs_all_or_nothing(void **state) {
    const float s3[2] = {12, 20}, stack3[6] = {2, 4, 5, 9, 12, 20};
    const int64_t dims3[2] = {3, 2}, dims0[2] = {0, 2};
    model_t mo;

    (void)state;
    open_model(&mo, "loop_gated");
    feed(&mo, "x", floats(1, dim2, x2));
    feed(&mo, "c", scalar_bool(1));
    expect_output(&mo, 0, 1, dim2, s3);
    expect_output(&mo, 1, 2, dims3, stack3);
    feed(&mo, "c", scalar_bool(0));
    expect_output(&mo, 0, 1, dim2, x2);
    expect_output(&mo, 1, 2, dims0, NULL);
    close_model(&mo);
}

/* An If inside a Loop body: its condition (iter > 0) is computed, its then branch reads x from
 * the outermost graph and s_in from the body, its else branch gives s_in itself.
 * x = [1, 2]: iteration 0 keeps [1, 2], iteration 1 adds x: [2, 4]. */
static void nested_bodies_resolve_names_through_the_enclosing_scopes(void **state) {
    const float want[2] = {2, 4};
    model_t mo;

    (void)state;
    open_model(&mo, "loop_with_if");
    feed(&mo, "x", floats(1, dim2, x2));
    expect_output(&mo, 0, 1, dim2, want);
    close_model(&mo);
}

/* A sequence carried through a loop of constant trip count: [0], [1], [2] concatenated. */
static void a_sequence_is_carried_through_an_unrolled_loop(void **state) {
    const float want[3] = {0, 1, 2};
    model_t mo;

    (void)state;
    open_model(&mo, "loop_sequence");
    expect_output(&mo, 0, 1, dim3, want);
    close_model(&mo);
}

/* Running sums over x's columns last to first ([3,6], [2,5], [1,4]), stacked as columns. */
static void scan_takes_its_axes_and_directions(void **state) {
    const float x[6] = {1, 2, 3, 4, 5, 6}, init[2] = {0, 0};
    const float total[2] = {6, 15}, partial[6] = {3, 5, 6, 6, 11, 15};
    const int64_t dims[2] = {2, 3};
    model_t mo;

    (void)state;
    open_model(&mo, "scan_axes");
    feed(&mo, "init", floats(1, dim2, init));
    feed(&mo, "x", floats(2, dims, x));
    expect_output(&mo, 0, 1, dim2, total);
    expect_output(&mo, 1, 2, dims, partial);
    close_model(&mo);
}

/* Op set 8: a batch of two scans, each reversed: batch 0 from [0, 0] over [3, 4] then [1, 2];
 * batch 1 from [10, 10] over [7, 8] then [5, 6]. */
static void scan_of_op_set_8_runs_each_batch(void **state) {
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, init[4] = {0, 0, 10, 10};
    const float total[4] = {4, 6, 22, 24}, partial[8] = {3, 4, 4, 6, 17, 18, 22, 24};
    const int64_t dims2[2] = {2, 2}, dims3[3] = {2, 2, 2};
    model_t mo;

    (void)state;
    open_model(&mo, "scan8_batch");
    feed(&mo, "init", floats(2, dims2, init));
    feed(&mo, "x", floats(3, dims3, x));
    expect_output(&mo, 0, 2, dims2, total);
    expect_output(&mo, 1, 3, dims3, partial);
    close_model(&mo);
}

static void what_cannot_be_lowered_is_named(void **state) {
    (void)state;
    expect_import_error("loop_early_exit", SES_UNIMPLEMENTED,
                        "(Loop \"l1\"): the body's condition output \"cond_out\" is computed; a "
                        "loop that may stop before its trip count is not unrolled");
    expect_import_error("loop_too_long", SES_UNIMPLEMENTED,
                        "(Loop \"l1\"): 100000 iterations of a body of 10 nodes are more than the "
                        "4096 nodes a loop is unrolled into");
    expect_import_error("loop_nested_too_deep", SES_UNIMPLEMENTED,
                        "the control-flow bodies unrolled so far have more than 65536 nodes");
    expect_import_error("loop_without_trip_count", SES_UNIMPLEMENTED,
                        "(Loop \"l1\"): no trip count M; a loop that runs until its condition "
                        "turns false is not unrolled");
    expect_import_error("scan_unknown_length", SES_UNIMPLEMENTED,
                        "(Scan \"sc\"): the length of scan input 0 along axis 0 is not known at "
                        "import");
    expect_import_error("if_unknown_body_op", SES_UNIMPLEMENTED,
                        "the model uses 1 op libsession does not have: NoSuchOp");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(if_on_a_constant_imports_the_branch_taken),
        cmocka_unit_test(if_on_a_fed_condition_picks_the_branch_each_time),
        cmocka_unit_test(loop_with_a_constant_trip_count_is_unrolled),
        cmocka_unit_test(loop_with_a_fed_trip_count_picks_the_iterations_run),
        cmocka_unit_test(loop_with_a_fed_condition_runs_all_or_nothing),
        cmocka_unit_test(nested_bodies_resolve_names_through_the_enclosing_scopes),
        cmocka_unit_test(a_sequence_is_carried_through_an_unrolled_loop),
        cmocka_unit_test(scan_takes_its_axes_and_directions),
        cmocka_unit_test(scan_of_op_set_8_runs_each_batch),
        cmocka_unit_test(what_cannot_be_lowered_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
