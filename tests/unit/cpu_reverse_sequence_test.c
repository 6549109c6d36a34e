/*
 * ReverseSequence (ops/reverse_sequence.c, plugins/cpu/cpu_reverse_sequence.c) on the CPU
 * driver: ONNX's two examples (time first, batch first) against their hand-written outputs, a
 * 3-D input with a zero length, and the refusals: axes, ranks, sequence_lens' shape and dtype,
 * and a length beyond the time axis (found by the kernel, from a fed value).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <session/session.h>

static ses_edge_t constant(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                           const void *data) {
    ses_tensor_t *t = NULL;
    ses_edge_t e;
    assert_int_equal(ses_tensor_create(dtype, rank, dims, &t), SES_OK);
    if (ses_tensor_bytes(t))
        memcpy(ses_tensor_data(t), data, ses_tensor_bytes(t));
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

/* ReverseSequence "r" of @p x and @p lens with the two axes; its value or the error. */
static ses_status_t reverse(ses_graph_t *g, ses_edge_t x, ses_edge_t lens, int64_t batch_axis,
                            int64_t time_axis, const ses_feed_t *feeds, size_t n_feeds,
                            ses_tensor_t **out) {
    const ses_edge_t in[2] = {x, lens};
    const ses_attr_t attrs[2] = {ses_attr_int("batch_axis", batch_axis),
                                 ses_attr_int("time_axis", time_axis)};
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_edge_t y;
    ses_status_t st;

    *out = NULL;
    st = ses_graph_op(g, "ReverseSequence", NULL, in, 2, attrs, 2, &y);
    if (st != SES_OK)
        return st;
    ses_session_options_init(&so);
    so.fallback = SES_FALLBACK_DENY;
    assert_int_equal(ses_session_open(g, NULL, 0, &so, &s), SES_OK);
    st = ses_session_eval(s, &y, 1, feeds, n_feeds, NULL, 0, out);
    ses_session_destroy(s);
    return st;
}

static const float example_input[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};

static void time_first_reverses_each_column_up_to_its_length(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t xd[2] = {4, 4}, n = 4, lens[4] = {4, 3, 2, 1};
    const float want[16] = {3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15};
    ses_tensor_t *y = NULL;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(reverse(g, constant(g, SES_F32, 2, xd, example_input),
                             constant(g, SES_I64, 1, &n, lens), 1, 0, NULL, 0, &y),
                     SES_OK);
    for (int i = 0; i < 16; i++)
        assert_float_equal(((const float *)ses_tensor_data(y))[i], want[i], 0);
    ses_tensor_release(y);
    ses_graph_release(g);
}

static void batch_first_reverses_each_row_up_to_its_length(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t xd[2] = {4, 4}, n = 4, lens[4] = {1, 2, 3, 4};
    const float x[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const float want[16] = {0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12};
    ses_tensor_t *y = NULL;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(reverse(g, constant(g, SES_F32, 2, xd, x), constant(g, SES_I64, 1, &n, lens),
                             0, 1, NULL, 0, &y),
                     SES_OK);
    for (int i = 0; i < 16; i++)
        assert_float_equal(((const float *)ses_tensor_data(y))[i], want[i], 0);
    ses_tensor_release(y);
    ses_graph_release(g);
}

/* [time 3, batch 2, 2] of int64 with lengths 3 and 0: batch 0 reversed, batch 1 as it was. */
static void inner_dimensions_move_with_their_step_and_a_zero_length_copies(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t xd[3] = {3, 2, 2}, n = 2, lens[2] = {3, 0};
    int64_t x[12], want[12];
    ses_tensor_t *y = NULL;

    for (int i = 0; i < 12; i++)
        x[i] = i;
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 2; k++) {
            want[(t * 2 + 0) * 2 + k] = ((2 - t) * 2 + 0) * 2 + k;
            want[(t * 2 + 1) * 2 + k] = (t * 2 + 1) * 2 + k;
        }
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(reverse(g, constant(g, SES_I64, 3, xd, x), constant(g, SES_I64, 1, &n, lens),
                             1, 0, NULL, 0, &y),
                     SES_OK);
    for (int i = 0; i < 12; i++)
        assert_int_equal(((const int64_t *)ses_tensor_data(y))[i], want[i]);
    ses_tensor_release(y);
    ses_graph_release(g);
}

static void expect(ses_status_t st, ses_tensor_t *y, const char *part) {
    assert_int_equal(st, SES_INVALID_ARGUMENT);
    assert_null(y);
    if (!strstr(ses_last_error(), part))
        fail_msg("message: %s\nwanted: %s", ses_last_error(), part);
}

static void bad_axes_ranks_lengths_and_a_length_past_the_time_axis_are_refused(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t xd[2] = {4, 4}, n = 4, three = 3, lens[4] = {4, 3, 2, 1};
    const int32_t lens32[4] = {1, 1, 1, 1};
    ses_tensor_t *y = NULL;
    ses_edge_t fed;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t x = constant(g, SES_F32, 2, xd, example_input);
    ses_edge_t l = constant(g, SES_I64, 1, &n, lens);
    expect(reverse(g, x, l, 1, 1, NULL, 0, &y), y,
           "batch_axis 1 and time_axis 1 must be 0 and 1, one each");
    expect(reverse(g, x, constant(g, SES_I64, 1, &three, lens), 1, 0, NULL, 0, &y), y,
           "sequence_lens i64[3] must be 1-D with one length per batch entry: input f32[4,4] "
           "has 4 along batch_axis 1");
    expect(reverse(g, x, constant(g, SES_I32, 1, &n, lens32), 1, 0, NULL, 0, &y), y,
           "input 1 (sequence_lens) is i32[4]; allowed dtypes: i64");
    expect(reverse(g, constant(g, SES_F32, 1, &n, example_input), l, 1, 0, NULL, 0, &y), y,
           "input must have rank 2 or more, got f32[4]");
    /* A fed length of 5 on a time axis of 4: the kernel refuses it. */
    assert_int_equal(ses_graph_placeholder(g, "lens", SES_I64, 1, &n, &fed), SES_OK);
    const int64_t bad[4] = {1, 5, 1, 1};
    ses_tensor_t *bv = NULL;
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, &n, bad, sizeof bad, &bv), SES_OK);
    const ses_feed_t f = {fed, bv};
    expect(reverse(g, x, fed, 1, 0, &f, 1, &y), y,
           "sequence_lens[1] is 5: it must be in [0, 4], the size of the time axis");
    ses_tensor_release(bv);
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(time_first_reverses_each_column_up_to_its_length),
        cmocka_unit_test(batch_first_reverses_each_row_up_to_its_length),
        cmocka_unit_test(inner_dimensions_move_with_their_step_and_a_zero_length_copies),
        cmocka_unit_test(bad_axes_ranks_lengths_and_a_length_past_the_time_axis_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
