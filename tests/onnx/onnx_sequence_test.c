/*
 * ONNX sequences, optionals and Gradient, which the importer resolves into tensor edges
 * (formats/onnx/onnx_sequence.c, the SelectInput op). The models are tests/onnx/models/sequence,
 * written by make_sequence_models.py; the expected values are worked out here by hand.
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

#define MODELS SOURCE_ROOT "/tests/onnx/models/sequence"

#include "onnx_model_harness.h"

/* f32[n] filled with @p v. */
static ses_tensor_t *filled(int64_t n, float v) {
    ses_tensor_t *t;
    assert_int_equal(ses_tensor_create(SES_F32, 1, &n, &t), SES_OK);
    for (int64_t i = 0; i < n; i++)
        ((float *)ses_tensor_data(t))[i] = v;
    return t;
}

/*
 * [a, b] (lengths 1 and 2), c (length 3) inserted at p_insert, then p_erase erased, then p_at
 * taken: every fed combination, worked out on lists of lengths, against the element's length
 * and value. Each new set of positions compiles the plan again (they shape it).
 */
static void fed_positions_pick_the_element_of_every_combination(void **state) {
    model_t mo;

    (void)state;
    open_model(&mo, "insert_erase_at");
    feed(&mo, "a", filled(1, 1));
    feed(&mo, "b", filled(2, 2));
    feed(&mo, "c", filled(3, 3));
    for (int64_t pi = -2; pi <= 2; pi++)
        for (int64_t pe = -3; pe <= 2; pe++)
            for (int64_t pa = -2; pa <= 1; pa++) {
                int list[3] = {1, 2, 0}, n = 2, ins = (int)(pi < 0 ? pi + 2 : pi);
                int er = (int)(pe < 0 ? pe + 3 : pe), take = (int)(pa < 0 ? pa + 2 : pa);
                ses_tensor_t *y;
                for (int k = n; k > ins; k--)
                    list[k] = list[k - 1];
                list[ins] = 3;
                for (int k = er; k < 2; k++)
                    list[k] = list[k + 1];
                feed(&mo, "p_insert", scalar_i64(pi));
                feed(&mo, "p_erase", scalar_i64(pe));
                feed(&mo, "p_at", scalar_i64(pa));
                if (eval(&mo, 0, &y) != SES_OK)
                    fail_msg("%lld %lld %lld: %s", (long long)pi, (long long)pe, (long long)pa,
                             ses_last_error());
                assert_int_equal(ses_tensor_count(y), list[take]);
                assert_float_equal(((float *)ses_tensor_data(y))[0], (float)list[take], 0);
                ses_tensor_release(y);
            }
    close_model(&mo);
}

/* A fed position outside the sequence is refused when the plan compiles, naming the value. */
static void a_fed_position_outside_the_sequence_names_the_value(void **state) {
    model_t mo;
    ses_tensor_t *y;

    (void)state;
    open_model(&mo, "insert_erase_at");
    feed(&mo, "a", filled(1, 1));
    feed(&mo, "b", filled(2, 2));
    feed(&mo, "c", filled(3, 3));
    feed(&mo, "p_insert", scalar_i64(3));
    feed(&mo, "p_erase", scalar_i64(0));
    feed(&mo, "p_at", scalar_i64(0));
    assert_int_equal(eval(&mo, 0, &y), SES_INVALID_ARGUMENT);
    assert_null(y);
    assert_non_null(strstr(ses_last_error(), "SelectInput \"s2/0\""));
    assert_non_null(strstr(ses_last_error(), "position 3 is outside [-2, 2] for a sequence of 2"));
    close_model(&mo);
}

/* Constant positions are resolved at import: [a] → [b, a] → [b, a, c] → [b, a]; at 0 is b. */
static void constant_positions_resolve_at_import(void **state) {
    model_t mo;
    ses_tensor_t *y, *n;

    (void)state;
    open_model(&mo, "constant_positions");
    feed(&mo, "a", filled(1, 1));
    feed(&mo, "b", filled(2, 2));
    feed(&mo, "c", filled(3, 3));
    assert_int_equal(eval(&mo, 0, &y), SES_OK);
    assert_int_equal(ses_tensor_count(y), 2);
    assert_float_equal(((float *)ses_tensor_data(y))[1], 2, 0);
    assert_int_equal(eval(&mo, 1, &n), SES_OK);
    assert_int_equal(ses_tensor_dtype(n), SES_I64);
    assert_int_equal(ses_tensor_rank(n), 0);
    assert_int_equal(*(int64_t *)ses_tensor_data(n), 2);
    ses_tensor_release(y);
    ses_tensor_release(n);
    close_model(&mo);
}

/* x = [[0,1,2],[3,4,5]]: its columns stacked on a new last axis are x again; its rows (a fed
 * split [1, 1]) concatenated along 1 are [0..5] in one row; there are 3 columns. */
static void split_and_concat_round_trip(void **state) {
    model_t mo;
    ses_tensor_t *x, *split, *y, *z, *n;
    const int64_t dims[2] = {2, 3}, two = 2, ones[2] = {1, 1};
    const float xs[6] = {0, 1, 2, 3, 4, 5};

    (void)state;
    open_model(&mo, "split_concat");
    assert_int_equal(ses_tensor_create_from(SES_F32, 2, dims, xs, sizeof xs, &x), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, &two, ones, sizeof ones, &split), SES_OK);
    feed(&mo, "x", x);
    feed(&mo, "split", split);
    if (eval(&mo, 0, &y) != SES_OK || eval(&mo, 1, &z) != SES_OK || eval(&mo, 2, &n) != SES_OK)
        fail_msg("%s", ses_last_error());
    assert_int_equal(ses_tensor_rank(y), 2);
    assert_int_equal(ses_tensor_dims(y)[0], 2);
    assert_int_equal(ses_tensor_dims(y)[1], 3);
    assert_int_equal(ses_tensor_rank(z), 2);
    assert_int_equal(ses_tensor_dims(z)[0], 1);
    assert_int_equal(ses_tensor_dims(z)[1], 6);
    for (int i = 0; i < 6; i++) {
        assert_float_equal(((float *)ses_tensor_data(y))[i], xs[i], 0);
        assert_float_equal(((float *)ses_tensor_data(z))[i], xs[i], 0);
    }
    assert_int_equal(*(int64_t *)ses_tensor_data(n), 3);
    ses_tensor_release(y);
    ses_tensor_release(z);
    ses_tensor_release(n);
    close_model(&mo);
}

/* Optional(a) has an element, which is a; a typed Optional() has none. */
static void optionals_are_known_at_import(void **state) {
    model_t mo;
    ses_tensor_t *y, *h1, *h2;

    (void)state;
    open_model(&mo, "optionals");
    feed(&mo, "a", filled(1, 7));
    assert_int_equal(eval(&mo, 0, &y), SES_OK);
    assert_int_equal(eval(&mo, 1, &h1), SES_OK);
    assert_int_equal(eval(&mo, 2, &h2), SES_OK);
    assert_float_equal(((float *)ses_tensor_data(y))[0], 7, 0);
    assert_int_equal(ses_tensor_dtype(h1), SES_BOOL);
    assert_int_equal(*(uint8_t *)ses_tensor_data(h1), 1);
    assert_int_equal(*(uint8_t *)ses_tensor_data(h2), 0);
    ses_tensor_release(y);
    ses_tensor_release(h1);
    ses_tensor_release(h2);
    close_model(&mo);
}

/* Identity passes optionals and sequences through, also while the importer's table grows. */
static void identities_of_optionals_and_sequences_pass_them_through(void **state) {
    model_t mo;
    ses_tensor_t *y;

    (void)state;
    open_model(&mo, "identity_chain");
    feed(&mo, "a", filled(1, 5));
    feed(&mo, "p", scalar_i64(-1));
    assert_int_equal(eval(&mo, 0, &y), SES_OK);
    assert_float_equal(((float *)ses_tensor_data(y))[0], 5, 0);
    ses_tensor_release(y);
    close_model(&mo);
}

/* d = (a + b) * a: dd/da = 2a + b, dd/db = a. */
static void gradient_is_built_by_reverse_mode_differentiation(void **state) {
    model_t mo;
    ses_tensor_t *a, *b, *da, *db;
    const int64_t two = 2;
    const float as[2] = {1.5f, -2}, bs[2] = {3, 0.25f};

    (void)state;
    open_model(&mo, "gradient");
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, &two, as, sizeof as, &a), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, &two, bs, sizeof bs, &b), SES_OK);
    feed(&mo, "a", a);
    feed(&mo, "b", b);
    if (eval(&mo, 1, &da) != SES_OK || eval(&mo, 2, &db) != SES_OK)
        fail_msg("%s", ses_last_error());
    for (int i = 0; i < 2; i++) {
        assert_float_equal(((float *)ses_tensor_data(da))[i], 2 * as[i] + bs[i], 1e-6);
        assert_float_equal(((float *)ses_tensor_data(db))[i], as[i], 1e-6);
    }
    ses_tensor_release(da);
    ses_tensor_release(db);
    close_model(&mo);
}

/* What cannot be resolved is refused with the node and the reason. */
static void what_cannot_be_resolved_is_named(void **state) {
    (void)state;
    expect_import_error("position_out_of_range", SES_INVALID_ARGUMENT,
                        "(SequenceAt \"take\"): position 5 is outside [-2, 1] for a sequence of "
                        "2 tensors");
    expect_import_error("split_of_unknown_length", SES_UNIMPLEMENTED,
                        "(SplitToSequence \"pieces\"): the length of the sequence must be known "
                        "at import, but dimension 0 of \"x\" is not");
    expect_import_error("split_too_long", SES_UNIMPLEMENTED,
                        "(SplitToSequence \"pieces\"): dimension 0 of \"x\" is 5000; a sequence "
                        "split at import has at most 4096 elements");
    expect_import_error("sequence_output", SES_UNIMPLEMENTED,
                        "graph output 0, \"s1\", is a sequence; only tensors can be fetched");
    expect_import_error("sequence_into_add", SES_UNIMPLEMENTED,
                        "(Add \"plus\"): input 0, \"s1\", is a sequence");
}

/* A position the graph computes from fed values (p + 1) is computed when the plan compiles,
 * as every value inference needs is (compile.c, mark_needed): the plan takes the element it
 * names, and compiles again when p changes. */
static void a_position_computed_from_fed_values_is_resolved(void **state) {
    model_t mo;
    ses_tensor_t *y;

    (void)state;
    open_model(&mo, "computed_position");
    feed(&mo, "a", filled(1, 1));
    feed(&mo, "b", filled(2, 2));
    feed(&mo, "p", scalar_i64(0));
    if (eval(&mo, 0, &y) != SES_OK)
        fail_msg("%s", ses_last_error());
    assert_int_equal(ses_tensor_count(y), 2); /* q = 1: b */
    assert_true(((const float *)ses_tensor_data(y))[0] == 2.0f);
    ses_tensor_release(y);
    feed(&mo, "p", scalar_i64(-1));
    if (eval(&mo, 0, &y) != SES_OK)
        fail_msg("%s", ses_last_error());
    assert_int_equal(ses_tensor_count(y), 1); /* q = 0: a */
    assert_true(((const float *)ses_tensor_data(y))[0] == 1.0f);
    ses_tensor_release(y);
    close_model(&mo);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fed_positions_pick_the_element_of_every_combination),
        cmocka_unit_test(a_fed_position_outside_the_sequence_names_the_value),
        cmocka_unit_test(constant_positions_resolve_at_import),
        cmocka_unit_test(split_and_concat_round_trip),
        cmocka_unit_test(optionals_are_known_at_import),
        cmocka_unit_test(identities_of_optionals_and_sequences_pass_them_through),
        cmocka_unit_test(gradient_is_built_by_reverse_mode_differentiation),
        cmocka_unit_test(what_cannot_be_resolved_is_named),
        cmocka_unit_test(a_position_computed_from_fed_values_is_resolved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
