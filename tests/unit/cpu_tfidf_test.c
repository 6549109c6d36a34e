/*
 * TfIdfVectorizer (ops/tfidf.c, plugins/cpu/cpu_tfidf.c) on integer tokens, against counts
 * worked out by hand: 1-grams and 2-grams without and with skips, IDF and TFIDF weights, a
 * batch of rows; and the refusals naming the node (pool_strings, mode, the gram lengths,
 * ngram_counts too short for max_gram_length).
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

/* The pool: 1-grams 2, 3; 2-grams (3,5), (2,5), (6,7); output index = pool order. */
static const int64_t pool[8] = {2, 3, 3, 5, 2, 5, 6, 7}, starts[2] = {0, 2},
                     indexes[5] = {0, 1, 2, 3, 4};
static const double weights[5] = {0.5, 1, 2, 3, 4};

typedef struct tf {
    const char *mode;
    int64_t min_n, max_n, skip;
    int with_weights;
} tf_t;

/* TfIdfVectorizer "tf" of int32 tokens @p x (shape @p rank, @p dims) with @p t; the output or
 * the status (extra attributes in @p more). */
static ses_status_t run(tf_t t, size_t rank, const int64_t *dims, const int32_t *x,
                        const ses_attr_t *more, size_t n_more, ses_tensor_t **out) {
    ses_graph_t *g;
    ses_tensor_t *xt = NULL;
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_edge_t xe, y;
    ses_attr_t attrs[10] = {
        ses_attr_string("mode", t.mode),
        ses_attr_int("min_gram_length", t.min_n),
        ses_attr_int("max_gram_length", t.max_n),
        ses_attr_int("max_skip_count", t.skip),
        ses_attr_ints("pool_int64s", pool, 8),
        ses_attr_ints("ngram_counts", starts, 2),
        ses_attr_ints("ngram_indexes", indexes, 5),
    };
    size_t n = 7;
    ses_status_t st;

    if (t.with_weights)
        attrs[n++] = ses_attr_floats("weights", weights, 5);
    for (size_t i = 0; i < n_more; i++)
        attrs[n++] = more[i];
    *out = NULL;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    size_t count = 1;
    for (size_t d = 0; d < rank; d++)
        count *= (size_t)dims[d];
    assert_int_equal(ses_tensor_create_from(SES_I32, rank, dims, x, count * 4, &xt), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, xt, &xe), SES_OK);
    st = ses_graph_op(g, "TfIdfVectorizer", "tf", &xe, 1, attrs, n, &y);
    if (st == SES_OK) {
        ses_session_options_init(&so);
        so.fallback = SES_FALLBACK_DENY;
        assert_int_equal(ses_session_open(g, NULL, 0, &so, &s), SES_OK);
        st = ses_session_eval(s, &y, 1, NULL, 0, NULL, 0, out);
        ses_session_destroy(s);
    }
    ses_tensor_release(xt);
    ses_graph_release(g);
    return st;
}

static void assert_row(ses_tensor_t *y, size_t offset, const float *want) {
    assert_non_null(y);
    assert_int_equal(ses_tensor_dtype(y), SES_F32);
    for (size_t i = 0; i < 5; i++)
        assert_float_equal(((const float *)ses_tensor_data(y))[offset + i], want[i], 1e-6);
}

/* [2,3,5,6,7]: 1-grams 2 and 3 once; 2-grams without skips (2,3) (3,5) (5,6) (6,7) find (3,5)
 * and (6,7); with one skip also (2,5) (3,6) (5,7), which finds (2,5). */
static void grams_without_and_with_skips(void **state) {
    (void)state;
    const int32_t x[5] = {2, 3, 5, 6, 7};
    const int64_t d = 5;
    ses_tensor_t *y = NULL;

    assert_int_equal(run((tf_t){"TF", 1, 2, 0, 0}, 1, &d, x, NULL, 0, &y), SES_OK);
    assert_int_equal(ses_tensor_rank(y), 1);
    assert_int_equal(ses_tensor_dims(y)[0], 5);
    const float no_skip[5] = {1, 1, 1, 0, 1};
    assert_row(y, 0, no_skip);
    ses_tensor_release(y);
    assert_int_equal(run((tf_t){"TF", 1, 2, 1, 0}, 1, &d, x, NULL, 0, &y), SES_OK);
    const float skip1[5] = {1, 1, 1, 1, 1};
    assert_row(y, 0, skip1);
    ses_tensor_release(y);
    assert_int_equal(run((tf_t){"TF", 2, 2, 1, 0}, 1, &d, x, NULL, 0, &y), SES_OK);
    const float only2[5] = {0, 0, 1, 1, 1};
    assert_row(y, 0, only2);
    ses_tensor_release(y);
}

/* [2,2,3]: counts 2 and 1; IDF keeps 1 per found n-gram times its weight, TFIDF the count. */
static void idf_and_tfidf_weights_and_a_batch(void **state) {
    (void)state;
    const int32_t x[3] = {2, 2, 3}, b[4] = {2, 3, 3, 3};
    const int64_t d = 3, bd[2] = {2, 2};
    ses_tensor_t *y = NULL;

    if (run((tf_t){"IDF", 1, 1, 0, 1}, 1, &d, x, NULL, 0, &y) != SES_OK)
        fail_msg("%s", ses_last_error());
    const float idf[5] = {0.5f, 1, 0, 0, 0};
    assert_row(y, 0, idf);
    ses_tensor_release(y);
    assert_int_equal(run((tf_t){"TFIDF", 1, 1, 0, 1}, 1, &d, x, NULL, 0, &y), SES_OK);
    const float tfidf[5] = {1, 1, 0, 0, 0};
    assert_row(y, 0, tfidf);
    ses_tensor_release(y);
    assert_int_equal(run((tf_t){"TF", 1, 1, 0, 0}, 2, bd, b, NULL, 0, &y), SES_OK);
    assert_int_equal(ses_tensor_rank(y), 2);
    assert_int_equal(ses_tensor_dims(y)[0], 2);
    const float r0[5] = {1, 1, 0, 0, 0}, r1[5] = {0, 2, 0, 0, 0};
    assert_row(y, 0, r0);
    assert_row(y, 5, r1);
    ses_tensor_release(y);
}

static void expect(ses_status_t st, ses_tensor_t *y, const char *part) {
    assert_true(st == SES_INVALID_ARGUMENT || st == SES_UNIMPLEMENTED);
    assert_null(y);
    if (!strstr(ses_last_error(), part) || !strstr(ses_last_error(), "TfIdfVectorizer \"tf\""))
        fail_msg("message: %s\nwanted: %s", ses_last_error(), part);
}

static void bad_attributes_are_refused_naming_the_node(void **state) {
    (void)state;
    const int32_t x[3] = {2, 2, 3};
    const int64_t d = 3;
    ses_tensor_t *y = NULL;
    const ses_attr_t strings = ses_attr_string("pool_strings", "a");

    expect(run((tf_t){"TF", 1, 2, 0, 0}, 1, &d, x, &strings, 1, &y), y,
           "pool_strings: string inputs are not supported");
    expect(run((tf_t){"BM25", 1, 2, 0, 0}, 1, &d, x, NULL, 0, &y), y,
           "mode \"BM25\" is not TF, IDF or TFIDF");
    expect(run((tf_t){"TF", 2, 1, 0, 0}, 1, &d, x, NULL, 0, &y), y,
           "lengths must be 1 <= min <= max");
    expect(run((tf_t){"TF", 1, 3, 0, 0}, 1, &d, x, NULL, 0, &y), y,
           "ngram_counts (a start per n-gram length, up to 3 at least) are required");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grams_without_and_with_skips),
        cmocka_unit_test(idf_and_tfidf_weights_and_a_batch),
        cmocka_unit_test(bad_attributes_are_refused_naming_the_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
