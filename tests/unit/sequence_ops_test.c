/*
 * SelectInput (src/ops/sequence.c), the op the ONNX importer makes for a sequence element whose
 * position is fed: its inference reads the position and lowers the node to an Identity of the
 * one candidate it names; every bad position, mode or index is refused naming the node.
 */
#include <stdint.h>
#include <string.h>

#include <session/status.h>

#include "ops/infer.h"
#include "ops/op_schema.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

typedef struct run {
    ses__type_t in[SES__MAX_INPUTS];
    const void *values[SES__MAX_INPUTS];
    ses__attrs_t attrs;
    ses__infer_ctx_t ctx;
    int64_t pos;
} run_t;

/* Position @p pos (i64 scalar, known) then @p n candidates f32[k+1] (candidate k has k+1
 * elements, so the chosen one shows in the output type). */
static void setup_run(run_t *r, int64_t pos, size_t n, int64_t mode, int64_t index) {
    memset(r, 0, sizeof *r);
    r->pos = pos;
    r->in[0].dtype = SES_I64;
    r->values[0] = &r->pos;
    for (size_t k = 0; k < n; k++) {
        r->in[1 + k].dtype = SES_F32;
        r->in[1 + k].rank = 1;
        r->in[1 + k].dims[0] = (int64_t)k + 1;
    }
    assert_int_equal(ses__attrs_set_int(&r->attrs, "mode", mode), SES_OK);
    assert_int_equal(ses__attrs_set_int(&r->attrs, "index", index), SES_OK);
    r->ctx.node = "s/0";
    r->ctx.op = "SelectInput";
    r->ctx.n_inputs = n + 1;
    r->ctx.inputs = r->in;
    r->ctx.values = r->values;
    r->ctx.attrs = &r->attrs;
    r->ctx.n_outputs = 1;
}

static ses_status_t infer(run_t *r) {
    return ses__op_infer(ses__op_schema_find("SelectInput"), &r->ctx);
}

/* The candidate the node was lowered to (its index among the candidates), checking the rest. */
static int64_t chosen(run_t *r) {
    ses_status_t st = infer(r);
    if (st != SES_OK)
        fail_msg("%s", ses_last_error());
    assert_string_equal(r->ctx.kernel_op, "Identity");
    assert_int_equal(__builtin_popcountll(r->ctx.kernel_inputs), 1);
    assert_int_equal(r->ctx.outputs[0].dims[0], __builtin_ctzll(r->ctx.kernel_inputs));
    ses__attrs_clear(&r->attrs);
    return __builtin_ctzll(r->ctx.kernel_inputs) - 1;
}

static void expect_error(run_t *r, const char *message) {
    assert_int_equal(infer(r), SES_INVALID_ARGUMENT);
    assert_string_equal(ses_last_error(), message);
    assert_int_equal(r->ctx.outputs[0].dtype, SES_DTYPE_INVALID);
    ses__attrs_clear(&r->attrs);
}

/* at: position p (negative from the end) of 3 candidates. */
static void at_takes_the_element_at_the_position(void **state) {
    static const int64_t want[] = {0, 1, 2, 0, 1, 2}; /* positions -3..2 */
    run_t r;

    (void)state;
    for (int64_t p = -3; p <= 2; p++) {
        setup_run(&r, p, 3, SES__SELECT_AT, 0);
        assert_int_equal(chosen(&r), want[p + 3]);
    }
}

/* insert into [s0, s1] (candidates s0, s1, t at 2): position 1 gives [s0, t, s1]; position -2
 * (= 0) gives [t, s0, s1]; position 2 (the end) gives [s0, s1, t]. */
static void insert_shifts_the_elements_after_the_position(void **state) {
    static const int64_t p1[] = {0, 2, 1}, p0[] = {2, 0, 1}, p2[] = {0, 1, 2};
    run_t r;

    (void)state;
    for (int64_t i = 0; i < 3; i++) {
        setup_run(&r, 1, 3, SES__SELECT_INSERT, i);
        assert_int_equal(chosen(&r), p1[i]);
        setup_run(&r, -2, 3, SES__SELECT_INSERT, i);
        assert_int_equal(chosen(&r), p0[i]);
        setup_run(&r, 2, 3, SES__SELECT_INSERT, i);
        assert_int_equal(chosen(&r), p2[i]);
    }
}

/* erase from [s0, s1, s2] at 1 gives [s0, s2]; at -1 (= 2) gives [s0, s1]. */
static void erase_closes_the_gap(void **state) {
    run_t r;

    (void)state;
    setup_run(&r, 1, 3, SES__SELECT_ERASE, 0);
    assert_int_equal(chosen(&r), 0);
    setup_run(&r, 1, 3, SES__SELECT_ERASE, 1);
    assert_int_equal(chosen(&r), 2);
    setup_run(&r, -1, 3, SES__SELECT_ERASE, 1);
    assert_int_equal(chosen(&r), 1);
}

/* An i32 position of one element in a vector is read as well. */
static void an_i32_position_of_shape_1_is_read(void **state) {
    run_t r;
    int32_t p = -1;

    (void)state;
    setup_run(&r, 0, 2, SES__SELECT_AT, 0);
    r.in[0].dtype = SES_I32;
    r.in[0].rank = 1;
    r.in[0].dims[0] = 1;
    r.values[0] = &p;
    assert_int_equal(chosen(&r), 1);
}

static void bad_positions_modes_and_indices_are_named(void **state) {
    run_t r;

    (void)state;
    setup_run(&r, 3, 3, SES__SELECT_AT, 0);
    expect_error(&r,
                 "SelectInput \"s/0\": position 3 is outside [-3, 2] for a sequence of 3 "
                 "tensors");
    setup_run(&r, -3, 3, SES__SELECT_INSERT, 0);
    expect_error(&r,
                 "SelectInput \"s/0\": position -3 is outside [-2, 2] for a sequence of 2 "
                 "tensors");
    setup_run(&r, 0, 3, SES__SELECT_ERASE, 2);
    expect_error(&r, "SelectInput \"s/0\": attribute index 2 is outside the result's 2 elements");
    setup_run(&r, 0, 3, 7, 0);
    expect_error(&r, "SelectInput \"s/0\": attribute mode is 7; 0 (at), 1 (insert) or 2 (erase)");
    setup_run(&r, 0, 3, SES__SELECT_AT, 0);
    r.in[0].dtype = SES_F32;
    assert_int_equal(infer(&r), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "position"));
    ses__attrs_clear(&r.attrs);
    setup_run(&r, 0, 3, SES__SELECT_AT, 0);
    r.in[0].rank = 1;
    r.in[0].dims[0] = 2;
    expect_error(&r, "SelectInput \"s/0\": position is i64[2]; it must hold one element");
    setup_run(&r, 0, 3, SES__SELECT_AT, 0);
    r.values[0] = NULL;
    expect_error(&r,
                 "SelectInput \"s/0\": position must be a constant or fed: the element is "
                 "chosen when the plan compiles, and a position the graph computes is known "
                 "only when it runs");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(at_takes_the_element_at_the_position),
        cmocka_unit_test(insert_shifts_the_elements_after_the_position),
        cmocka_unit_test(erase_closes_the_gap),
        cmocka_unit_test(an_i32_position_of_shape_1_is_read),
        cmocka_unit_test(bad_positions_modes_and_indices_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
