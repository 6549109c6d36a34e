/*
 * String tensors (issue #22): the SES_STRING API (tensor/string_tensor.c) and its refusals, and
 * string values in sessions (exec/host_strings.c): StringNormalizer, Cast and CastLike to and
 * from strings, string Equal and Identity, fed and fetched strings, against hand-worked answers;
 * and what is refused, naming the node and input: strings into other ops, a numeric output of a
 * string whose shape is known only at run time, strings in checkpoints.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <session/checkpoint.h>
#include <session/session.h>

#include "distributed/remote_wire.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static ses_tensor_t *strings(size_t rank, const int64_t *dims, const char *const *values) {
    ses_tensor_t *t = NULL;
    size_t count = 1;

    for (size_t d = 0; d < rank; d++)
        count *= (size_t)dims[d];
    if (ses_tensor_create_from(SES_STRING, rank, dims, values, count * sizeof(char *), &t) !=
        SES_OK)
        fail_msg("create_from: %s", ses_last_error());
    return t;
}

static void assert_strings(const ses_tensor_t *t, size_t rank, const int64_t *dims,
                           const char *const *want) {
    assert_non_null(t);
    assert_int_equal(ses_tensor_dtype(t), SES_STRING);
    assert_int_equal(ses_tensor_rank(t), rank);
    for (size_t d = 0; d < rank; d++)
        assert_int_equal(ses_tensor_dims(t)[d], dims[d]);
    for (size_t i = 0; i < ses_tensor_count(t); i++) {
        const char *got = NULL;
        assert_int_equal(ses_tensor_string(t, i, &got), SES_OK);
        assert_string_equal(got, want[i]);
    }
}

static void assert_error(ses_status_t st, ses_status_t want, const char *part) {
    if (st != want)
        fail_msg("got status %d (want %d): %s", (int)st, (int)want, ses_last_error());
    if (part && !strstr(ses_last_error(), part))
        fail_msg("message lacks \"%s\": %s", part, ses_last_error());
}

/* Evaluates @p fetch of @p g with @p x fed to @p in (if any) on the CPU. */
static ses_status_t eval_fed(ses_graph_t *g, ses_edge_t fetch, ses_edge_t in, ses_tensor_t *x,
                             ses_tensor_t **out) {
    const char *cpu = "cpu";
    ses_session_t *s = NULL;
    ses_feed_t feed = {in, x};
    ses_status_t st;

    *out = NULL;
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    st = ses_session_eval(s, &fetch, 1, x ? &feed : NULL, x ? 1 : 0, NULL, 0, out);
    ses_session_destroy(s);
    return st;
}

/* StringNormalizer of @p x (a constant) with @p attrs. */
static ses_status_t normalize(ses_tensor_t *x, const ses_attr_t *attrs, size_t n_attrs,
                              ses_tensor_t **out) {
    ses_graph_t *g;
    ses_edge_t xe, y;
    ses_status_t st;

    *out = NULL;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "x", x, &xe), SES_OK);
    st = ses_graph_op(g, "StringNormalizer", "sn", &xe, 1, attrs, n_attrs, &y);
    if (st == SES_OK)
        st = eval_fed(g, y, xe, NULL, out);
    ses_graph_release(g);
    return st;
}

/* ---- the tensor API --------------------------------------------------------------------- */

static void create_makes_empty_strings(void **state) {
    const int64_t dims[2] = {2, 3};
    ses_tensor_t *t = NULL;
    const char *v = NULL;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_STRING, 2, dims, &t), SES_OK);
    assert_int_equal(ses_tensor_count(t), 6);
    assert_int_equal(ses_dtype_size(SES_STRING), sizeof(char *));
    assert_string_equal(ses_dtype_name(SES_STRING), "string");
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(ses_tensor_string(t, i, &v), SES_OK);
        assert_string_equal(v, "");
    }
    assert_int_equal(ses_tensor_set_string(t, 4, "héllo"), SES_OK);
    assert_int_equal(ses_tensor_set_string(t, 4, "again"), SES_OK); /* the old one is freed */
    assert_int_equal(ses_tensor_string(t, 4, &v), SES_OK);
    assert_string_equal(v, "again");
    assert_string_equal(((char *const *)ses_tensor_data(t))[4], "again");
    ses_tensor_release(t);
}

static void create_from_copies_every_string(void **state) {
    char buffer[8] = "abc";
    const char *values[3] = {buffer, "", "日本語"};
    const int64_t dims[1] = {3};
    ses_tensor_t *t = strings(1, dims, values);

    (void)state;
    buffer[0] = 'X'; /* the tensor holds its own copy */
    assert_strings(t, 1, dims, (const char *const[]){"abc", "", "日本語"});
    ses_tensor_release(t);
}

static void create_from_refuses_null_and_bad_utf8(void **state) {
    const int64_t dims[1] = {2};
    ses_tensor_t *t = (ses_tensor_t *)0x1;
    const char *with_null[2] = {"a", NULL};
    /* An overlong "/", a UTF-16 surrogate, a cut sequence, a code point past U+10FFFF. */
    const char *bad[] = {"\xC0\xAF", "\xED\xA0\x80", "ab\xE6\x97", "\xF4\x90\x80\x80", "\xFF"};

    (void)state;
    assert_error(ses_tensor_create_from(SES_STRING, 1, dims, with_null, 2 * sizeof(char *), &t),
                 SES_INVALID_ARGUMENT, "string 1 is NULL");
    assert_null(t);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *values[2] = {"ok", bad[i]};
        t = (ses_tensor_t *)0x1;
        assert_error(ses_tensor_create_from(SES_STRING, 1, dims, values, 2 * sizeof(char *), &t),
                     SES_INVALID_ARGUMENT, "string 1 is not valid UTF-8");
        assert_null(t);
    }
    assert_error(ses_tensor_create_from(SES_STRING, 1, dims, with_null, 8, &t),
                 SES_INVALID_ARGUMENT, "bytes");
}

static void wrap_refuses_strings(void **state) {
    const int64_t dims[1] = {1};
    const char *values[1] = {"x"};
    ses_tensor_t *t = (ses_tensor_t *)0x1;

    (void)state;
    assert_error(ses_tensor_wrap(SES_STRING, 1, dims, (void *)values, NULL, NULL, &t),
                 SES_INVALID_ARGUMENT, "cannot wrap caller memory");
    assert_null(t);
}

static void accessors_refuse_bad_arguments(void **state) {
    const int64_t dims[1] = {2};
    ses_tensor_t *t = strings(1, dims, (const char *const[]){"a", "b"});
    ses_tensor_t *f = NULL;
    const char *v = (const char *)0x1;

    (void)state;
    assert_error(ses_tensor_string(NULL, 0, &v), SES_INVALID_ARGUMENT, "tensor is NULL");
    assert_null(v);
    assert_error(ses_tensor_string(t, 0, NULL), SES_INVALID_ARGUMENT, "out_value is NULL");
    assert_error(ses_tensor_string(t, 2, &v), SES_INVALID_ARGUMENT,
                 "index 2 is outside the tensor's 2 elements");
    assert_int_equal(ses_tensor_create(SES_F32, 1, dims, &f), SES_OK);
    assert_error(ses_tensor_string(f, 0, &v), SES_INVALID_ARGUMENT,
                 "the tensor is f32, not string");
    assert_error(ses_tensor_set_string(f, 0, "x"), SES_INVALID_ARGUMENT, "not string");
    assert_error(ses_tensor_set_string(NULL, 0, "x"), SES_INVALID_ARGUMENT, "tensor is NULL");
    assert_error(ses_tensor_set_string(t, 5, "x"), SES_INVALID_ARGUMENT, "index 5");
    assert_error(ses_tensor_set_string(t, 0, NULL), SES_INVALID_ARGUMENT, "value is NULL");
    assert_error(ses_tensor_set_string(t, 0, "bad \xC3"), SES_INVALID_ARGUMENT,
                 "not valid UTF-8 (byte 4");
    assert_strings(t, 1, dims, (const char *const[]){"a", "b"}); /* unchanged */
    ses_tensor_release(f);
    ses_tensor_release(t);
}

static void copy_to_host_copies_the_strings(void **state) {
    const int64_t dims[1] = {2};
    ses_tensor_t *t = strings(1, dims, (const char *const[]){"one", "two"}), *c = NULL;

    (void)state;
    assert_int_equal(ses_tensor_copy_to_host(t, &c), SES_OK);
    assert_int_equal(ses_tensor_set_string(c, 0, "changed"), SES_OK);
    assert_strings(t, 1, dims, (const char *const[]){"one", "two"});
    assert_strings(c, 1, dims, (const char *const[]){"changed", "two"});
    ses_tensor_release(c);
    ses_tensor_release(t);
}

static void safetensors_refuses_a_string_tensor_naming_it(void **state) {
    const int64_t dims[1] = {1};
    ses_tensor_t *t = strings(1, dims, (const char *const[]){"w"});
    const char *names[1] = {"words"};
    char path[] = "/tmp/string_tensor_test_XXXXXX";
    int fd = mkstemp(path);

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    assert_error(ses_safetensors_write(path, names, &t, 1, NULL, NULL, 0), SES_INVALID_ARGUMENT,
                 "tensor \"words\" is a string tensor");
    unlink(path);
    ses_tensor_release(t);
}

/* ---- StringNormalizer ------------------------------------------------------------------- */

static void string_normalizer_drops_stopwords_ignoring_case_and_lowers(void **state) {
    const int64_t dims[2] = {1, 5}, want_dims[2] = {1, 2};
    ses_tensor_t *x =
        strings(2, dims, (const char *const[]){"Monday", "TUESDAY", "monday", "ÀÉÎ Wed", "the"});
    ses_attr_t attrs[2] = {ses_attr_string("case_change_action", "LOWER"),
                           ses_attr_string("stopwords", "monday,THE")};
    ses_tensor_t *y = NULL;

    (void)state;
    assert_int_equal(normalize(x, attrs, 2, &y), SES_OK);
    assert_strings(y, 2, want_dims, (const char *const[]){"tuesday", "àéî wed"});
    ses_tensor_release(y);
    ses_tensor_release(x);
}

static void string_normalizer_case_sensitive_keeps_other_cases_and_uppers(void **state) {
    const int64_t dims[1] = {4}, want_dims[1] = {3};
    ses_tensor_t *x = strings(1, dims, (const char *const[]){"monday", "Monday", "straße", "ÿ"});
    ses_attr_t attrs[3] = {
        ses_attr_string("case_change_action", "UPPER"),
        ses_attr_int("is_case_sensitive", 1),
        ses_attr_string("stopwords", "monday"),
    };
    ses_tensor_t *y = NULL;

    (void)state;
    assert_int_equal(normalize(x, attrs, 3, &y), SES_OK);
    /* ß and ÿ have no same-length upper case: left as they are. */
    assert_strings(y, 1, want_dims, (const char *const[]){"MONDAY", "STRAßE", "ÿ"});
    ses_tensor_release(y);
    ses_tensor_release(x);
}

static void string_normalizer_of_only_stopwords_gives_one_empty_string(void **state) {
    const int64_t d1[1] = {2}, d2[2] = {1, 2}, w1[1] = {1}, w2[2] = {1, 1};
    const char *const values[2] = {"a", "A"};
    ses_tensor_t *x1 = strings(1, d1, values), *x2 = strings(2, d2, values), *y = NULL;
    ses_attr_t attrs[1] = {ses_attr_string("stopwords", "a")};

    (void)state;
    assert_int_equal(normalize(x1, attrs, 1, &y), SES_OK);
    assert_strings(y, 1, w1, (const char *const[]){""});
    ses_tensor_release(y);
    assert_int_equal(normalize(x2, attrs, 1, &y), SES_OK);
    assert_strings(y, 2, w2, (const char *const[]){""});
    ses_tensor_release(y);
    ses_tensor_release(x1);
    ses_tensor_release(x2);
}

static void string_normalizer_refuses_bad_attributes_and_shapes(void **state) {
    const int64_t d1[1] = {1}, d3[3] = {1, 1, 1}, d22[2] = {2, 1};
    ses_tensor_t *x = strings(1, d1, (const char *const[]){"a"}), *y = NULL;
    ses_tensor_t *x3 = strings(3, d3, (const char *const[]){"a"});
    ses_tensor_t *x22 = strings(2, d22, (const char *const[]){"a", "b"});
    ses_tensor_t *f = NULL;
    ses_attr_t bad_action = ses_attr_string("case_change_action", "TITLE");
    ses_attr_t turkish = ses_attr_string("locale", "tr_TR.UTF-8");
    ses_attr_t english = ses_attr_string("locale", "en_US");
    ses_attr_t flag = ses_attr_int("is_case_sensitive", 2);

    (void)state;
    assert_error(normalize(x, &bad_action, 1, &y), SES_INVALID_ARGUMENT,
                 "StringNormalizer \"sn\": attribute case_change_action is \"TITLE\"");
    assert_error(normalize(x, &turkish, 1, &y), SES_UNIMPLEMENTED, "locale \"tr_TR.UTF-8\"");
    assert_error(normalize(x, &flag, 1, &y), SES_INVALID_ARGUMENT, "is_case_sensitive");
    assert_error(normalize(x3, NULL, 0, &y), SES_INVALID_ARGUMENT, "it must be [C] or [1, C]");
    assert_error(normalize(x22, NULL, 0, &y), SES_INVALID_ARGUMENT, "it must be [C] or [1, C]");
    assert_int_equal(normalize(x, &english, 1, &y), SES_OK);
    ses_tensor_release(y);
    assert_int_equal(ses_tensor_create(SES_F32, 1, d1, &f), SES_OK);
    assert_error(normalize(f, NULL, 0, &y), SES_INVALID_ARGUMENT, "input 0 (X) is f32");
    assert_null(y);
    ses_tensor_release(f);
    ses_tensor_release(x);
    ses_tensor_release(x3);
    ses_tensor_release(x22);
}

/* The plan is compiled once; each run's output has the shape its values give. */
static void string_normalizer_output_shape_follows_each_run(void **state) {
    const int64_t dims[1] = {3};
    ses_tensor_t *a = strings(1, dims, (const char *const[]){"x", "y", "z"});
    ses_tensor_t *b = strings(1, dims, (const char *const[]){"x", "x", "z"});
    ses_attr_t attrs[1] = {ses_attr_string("stopwords", "x")};
    const char *cpu = "cpu";
    ses_graph_t *g;
    ses_session_t *s = NULL;
    ses_edge_t in, y;
    ses_tensor_t *out = NULL;
    ses_feed_t feed;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "in", SES_STRING, 1, dims, &in), SES_OK);
    assert_int_equal(ses_graph_op(g, "StringNormalizer", "sn", &in, 1, attrs, 1, &y), SES_OK);
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    feed.edge = in;
    feed.value = a;
    assert_int_equal(ses_session_eval(s, &y, 1, &feed, 1, NULL, 0, &out), SES_OK);
    assert_strings(out, 1, (const int64_t[]){2}, (const char *const[]){"y", "z"});
    ses_tensor_release(out);
    feed.value = b;
    assert_int_equal(ses_session_eval(s, &y, 1, &feed, 1, NULL, 0, &out), SES_OK);
    assert_strings(out, 1, (const int64_t[]){1}, (const char *const[]){"z"});
    ses_tensor_release(out);
    /* A fed string fetched is a copy: changing it leaves the caller's feed alone. */
    assert_int_equal(ses_session_eval(s, &in, 1, &feed, 1, NULL, 0, &out), SES_OK);
    assert_ptr_not_equal(out, b);
    assert_int_equal(ses_tensor_set_string(out, 0, "changed"), SES_OK);
    assert_strings(b, 1, dims, (const char *const[]){"x", "x", "z"});
    ses_tensor_release(out);
    ses_session_destroy(s);
    ses_graph_release(g);
    ses_tensor_release(a);
    ses_tensor_release(b);
}

/* A run-time shape flows through string readers: StringNormalizer of StringNormalizer, then
 * Identity, on [1, C]. */
static void string_readers_take_a_run_time_shape(void **state) {
    const int64_t dims[2] = {1, 4}, want[2] = {1, 1};
    ses_tensor_t *x = strings(2, dims, (const char *const[]){"a", "B", "c", "b"}), *out = NULL;
    ses_attr_t drop_a = ses_attr_string("stopwords", "a"),
               drop_b = ses_attr_string("stopwords", "b");
    ses_attr_t upper = ses_attr_string("case_change_action", "UPPER");
    ses_attr_t second[2] = {drop_b, upper};
    ses_graph_t *g;
    ses_edge_t xe, n1, n2, y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "x", x, &xe), SES_OK);
    assert_int_equal(ses_graph_op(g, "StringNormalizer", "n1", &xe, 1, &drop_a, 1, &n1), SES_OK);
    assert_int_equal(ses_graph_op(g, "StringNormalizer", "n2", &n1, 1, second, 2, &n2), SES_OK);
    assert_int_equal(ses_graph_op(g, "Identity", "id", &n2, 1, NULL, 0, &y), SES_OK);
    assert_int_equal(eval_fed(g, y, xe, NULL, &out), SES_OK);
    assert_strings(out, 2, want, (const char *const[]){"C"});
    ses_tensor_release(out);
    ses_graph_release(g);
    ses_tensor_release(x);
}

/* A string variable is read where it lives, in the session's scope. */
static void a_string_variable_feeds_string_ops(void **state) {
    const int64_t dims[1] = {2};
    ses_tensor_t *init = strings(1, dims, (const char *const[]){"x", "y"});
    ses_tensor_t *other = strings(1, dims, (const char *const[]){"Hi", "y"}), *out = NULL;
    ses_attr_t lower = ses_attr_string("case_change_action", "LOWER");
    const char *cpu = "cpu";
    ses_graph_t *g;
    ses_session_t *s = NULL;
    ses_edge_t ie, ve, y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "init", init, &ie), SES_OK);
    assert_int_equal(ses_graph_variable(g, "v", ie, &ve), SES_OK);
    assert_int_equal(ses_graph_op(g, "StringNormalizer", "sn", &ve, 1, &lower, 1, &y), SES_OK);
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    assert_int_equal(ses_scope_set(ses_session_scope(s), "v", other), SES_OK);
    assert_int_equal(ses_session_eval(s, &y, 1, NULL, 0, NULL, 0, &out), SES_OK);
    assert_strings(out, 1, dims, (const char *const[]){"hi", "y"});
    ses_tensor_release(out);
    ses_session_destroy(s);
    ses_graph_release(g);
    ses_tensor_release(init);
    ses_tensor_release(other);
}

/* ---- Cast, CastLike, Equal, Identity ---------------------------------------------------- */

static ses_status_t cast(ses_tensor_t *x, int64_t to, ses_tensor_t **out) {
    ses_graph_t *g;
    ses_edge_t xe, y;
    ses_attr_t attr = ses_attr_int("to", to);
    ses_status_t st;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "x", x, &xe), SES_OK);
    st = ses_graph_op(g, "Cast", "c", &xe, 1, &attr, 1, &y);
    if (st == SES_OK)
        st = eval_fed(g, y, xe, NULL, out);
    ses_graph_release(g);
    return st;
}

static void cast_float_to_string_prints_the_shortest_round_trip(void **state) {
    const int64_t dims[1] = {7};
    const float x[7] = {0.1f, 0.039187793f, 1e-5f, 123456789.0f, -2.5f, 1.0f / 0.0f, 0.0f / 0.0f};
    ses_tensor_t *t = NULL, *y = NULL;

    (void)state;
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, dims, x, sizeof x, &t), SES_OK);
    assert_int_equal(cast(t, 8, &y), SES_OK);
    assert_strings(y, 1, dims,
                   (const char *const[]){"0.1", "0.039187793", "1e-05", "1.2345679e+08", "-2.5",
                                         "INF", "NaN"});
    ses_tensor_release(y);
    ses_tensor_release(t);
}

static void cast_integers_and_bool_to_string(void **state) {
    const int64_t dims[1] = {3};
    const int64_t i64[3] = {-9000000000LL, 0, 42};
    const uint8_t b[3] = {1, 0, 1};
    ses_tensor_t *t = NULL, *y = NULL;

    (void)state;
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, dims, i64, sizeof i64, &t), SES_OK);
    assert_int_equal(cast(t, 8, &y), SES_OK);
    assert_strings(y, 1, dims, (const char *const[]){"-9000000000", "0", "42"});
    ses_tensor_release(y);
    ses_tensor_release(t);
    assert_int_equal(ses_tensor_create_from(SES_BOOL, 1, dims, b, sizeof b, &t), SES_OK);
    assert_int_equal(cast(t, 8, &y), SES_OK);
    assert_strings(y, 1, dims, (const char *const[]){"1", "0", "1"});
    ses_tensor_release(y);
    ses_tensor_release(t);
}

static void cast_string_to_numbers(void **state) {
    const int64_t dims[1] = {6};
    ses_tensor_t *x =
        strings(1, dims, (const char *const[]){"0.5", "1E3", "-inf", "+INF", "nan", " 7 "});
    ses_tensor_t *i = strings(1, (const int64_t[]){3}, (const char *const[]){"100.5", "-3", "1e2"});
    ses_tensor_t *y = NULL;
    const float *f;
    const int32_t *n;

    (void)state;
    assert_int_equal(cast(x, 1, &y), SES_OK);
    assert_int_equal(ses_tensor_dtype(y), SES_F32);
    f = ses_tensor_data(y);
    assert_float_equal(f[0], 0.5, 0);
    assert_float_equal(f[1], 1000, 0);
    assert_true(f[2] < 0 && f[2] * 0 != 0); /* -inf */
    assert_true(f[3] > 0 && f[3] * 0 != 0);
    assert_true(f[4] != f[4]);
    assert_float_equal(f[5], 7, 0);
    ses_tensor_release(y);
    assert_int_equal(cast(i, 6, &y), SES_OK); /* INT32: "100.5" becomes 100 */
    n = ses_tensor_data(y);
    assert_int_equal(n[0], 100);
    assert_int_equal(n[1], -3);
    assert_int_equal(n[2], 100);
    ses_tensor_release(y);
    ses_tensor_release(x);
    ses_tensor_release(i);
}

static void cast_refuses_what_is_not_a_number_or_out_of_range(void **state) {
    const int64_t dims[2] = {1, 2};
    ses_tensor_t *x = strings(2, dims, (const char *const[]){"1", "hello"});
    ses_tensor_t *big = strings(2, dims, (const char *const[]){"1", "300"});
    ses_tensor_t *f = NULL, *y = NULL;

    (void)state;
    assert_error(cast(x, 1, &y), SES_INVALID_ARGUMENT,
                 "Cast \"c\": element 1 of input 0, \"hello\", is not a number");
    assert_null(y);
    assert_error(cast(big, 3, &y), SES_INVALID_ARGUMENT, "\"300\", is outside the range of i8");
    assert_error(cast(x, 10, &y), SES_UNIMPLEMENTED, "casting string to f16 is not supported");
    assert_int_equal(ses_tensor_create(SES_BF16, 2, dims, &f), SES_OK);
    assert_error(cast(f, 8, &y), SES_UNIMPLEMENTED, "casting bf16 to string");
    ses_tensor_release(f);
    ses_tensor_release(x);
    ses_tensor_release(big);
}

static void cast_like_a_string_makes_strings(void **state) {
    const int64_t dims[1] = {2};
    const double x[2] = {0.1, 2.0};
    ses_tensor_t *t = NULL, *like = strings(1, (const int64_t[]){1}, (const char *const[]){"?"});
    ses_graph_t *g;
    ses_edge_t in[2], y;
    ses_tensor_t *out = NULL;

    (void)state;
    assert_int_equal(ses_tensor_create_from(SES_F64, 1, dims, x, sizeof x, &t), SES_OK);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "x", t, &in[0]), SES_OK);
    assert_int_equal(ses_graph_constant(g, "like", like, &in[1]), SES_OK);
    assert_int_equal(ses_graph_op(g, "CastLike", "cl", in, 2, NULL, 0, &y), SES_OK);
    assert_int_equal(eval_fed(g, y, in[0], NULL, &out), SES_OK);
    assert_strings(out, 1, dims, (const char *const[]){"0.1", "2"});
    ses_tensor_release(out);
    ses_graph_release(g);
    ses_tensor_release(t);
    ses_tensor_release(like);
}

static void equal_compares_strings_broadcasting(void **state) {
    ses_tensor_t *a = strings(2, (const int64_t[]){2, 1}, (const char *const[]){"x", "é"});
    ses_tensor_t *b = strings(1, (const int64_t[]){3}, (const char *const[]){"é", "x", "X"});
    ses_graph_t *g;
    ses_edge_t in[2], y;
    ses_tensor_t *out = NULL;
    const uint8_t want[6] = {0, 1, 0, 1, 0, 0};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "a", a, &in[0]), SES_OK);
    assert_int_equal(ses_graph_constant(g, "b", b, &in[1]), SES_OK);
    assert_int_equal(ses_graph_op(g, "Equal", "eq", in, 2, NULL, 0, &y), SES_OK);
    assert_int_equal(eval_fed(g, y, in[0], NULL, &out), SES_OK);
    assert_int_equal(ses_tensor_dtype(out), SES_BOOL);
    assert_int_equal(ses_tensor_dims(out)[0], 2);
    assert_int_equal(ses_tensor_dims(out)[1], 3);
    assert_memory_equal(ses_tensor_data(out), want, 6);
    ses_tensor_release(out);
    ses_graph_release(g);
    ses_tensor_release(a);
    ses_tensor_release(b);
}

/* Identity of a constant: the fetched value is a copy, the constant stays as it was. */
static void identity_of_a_string_constant_fetches_a_copy(void **state) {
    const int64_t dims[1] = {2};
    ses_tensor_t *c = strings(1, dims, (const char *const[]){"keep", "me"}), *out = NULL;
    ses_graph_t *g;
    ses_edge_t ce, y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "c", c, &ce), SES_OK);
    assert_int_equal(ses_graph_op(g, "Identity", "id", &ce, 1, NULL, 0, &y), SES_OK);
    assert_int_equal(eval_fed(g, y, ce, NULL, &out), SES_OK);
    assert_int_equal(ses_tensor_set_string(out, 0, "changed"), SES_OK);
    ses_tensor_release(out);
    assert_int_equal(eval_fed(g, ce, ce, NULL, &out), SES_OK); /* the constant itself */
    assert_strings(out, 1, dims, (const char *const[]){"keep", "me"});
    ses_tensor_release(out);
    ses_graph_release(g);
    ses_tensor_release(c);
}

/* ---- refusals in plans ------------------------------------------------------------------ */

static void other_ops_refuse_strings_naming_node_and_input(void **state) {
    const int64_t dims[1] = {2};
    ses_tensor_t *x = strings(1, dims, (const char *const[]){"a", "b"}), *out = NULL;
    const int64_t shape[1] = {2};
    ses_tensor_t *st = NULL;
    ses_graph_t *g;
    ses_edge_t xe, se, in[2], y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "x", x, &xe), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, (const int64_t[]){1}, shape, 8, &st),
                     SES_OK);
    assert_int_equal(ses_graph_constant(g, "shape", st, &se), SES_OK);
    in[0] = xe;
    in[1] = se;
    assert_int_equal(ses_graph_op(g, "Reshape", "r", in, 2, NULL, 0, &y), SES_OK);
    assert_error(eval_fed(g, y, xe, NULL, &out), SES_INVALID_ARGUMENT,
                 "Reshape \"r\": input 0 is a string tensor; only StringNormalizer");
    assert_int_equal(ses_graph_op(g, "Relu", "relu", &xe, 1, NULL, 0, &y), SES_OK);
    assert_error(eval_fed(g, y, xe, NULL, &out), SES_INVALID_ARGUMENT, "Relu \"relu\": input 0");
    assert_null(out);
    ses_graph_release(g);
    ses_tensor_release(x);
    ses_tensor_release(st);
}

static void numeric_output_of_a_run_time_shape_is_refused(void **state) {
    const int64_t dims[1] = {2};
    ses_tensor_t *x = strings(1, dims, (const char *const[]){"1", "2"}), *out = NULL;
    ses_attr_t to = ses_attr_int("to", 1);
    ses_graph_t *g;
    ses_edge_t xe, n, y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "x", x, &xe), SES_OK);
    assert_int_equal(ses_graph_op(g, "StringNormalizer", "sn", &xe, 1, NULL, 0, &n), SES_OK);
    assert_int_equal(ses_graph_op(g, "Cast", "c", &n, 1, &to, 1, &y), SES_OK);
    assert_error(eval_fed(g, y, xe, NULL, &out), SES_INVALID_ARGUMENT,
                 "Cast \"c\": input 0 is a string tensor whose shape is known only when it is "
                 "computed");
    assert_null(out);
    ses_graph_release(g);
    ses_tensor_release(x);
}

static void saving_a_string_variable_is_refused_naming_it(void **state) {
    const int64_t dims[1] = {1};
    ses_tensor_t *init = strings(1, dims, (const char *const[]){"v"});
    const char *cpu = "cpu";
    char path[] = "/tmp/string_tensor_save_XXXXXX";
    int fd = mkstemp(path);
    ses_graph_t *g;
    ses_session_t *s = NULL;
    ses_edge_t ie, ve;

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "init", init, &ie), SES_OK);
    assert_int_equal(ses_graph_variable(g, "vocabulary", ie, &ve), SES_OK);
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    assert_int_equal(ses_scope_set(ses_session_scope(s), "vocabulary", init), SES_OK);
    assert_error(ses_session_save(s, path, 1), SES_INVALID_ARGUMENT,
                 "\"vocabulary\" is a string tensor");
    ses_session_destroy(s);
    ses_graph_release(g);
    ses_tensor_release(init);
    unlink(path);
}

/* Only Cast makes strings: a dtype attribute of another op naming STRING is refused. */
static void other_ops_cannot_be_asked_for_strings(void **state) {
    const int64_t dims[2] = {2, 2};
    ses_tensor_t *x = NULL, *out = NULL;
    ses_attr_t dtype = ses_attr_int("dtype", 8);
    ses_graph_t *g;
    ses_edge_t xe, y;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_F32, 2, dims, &x), SES_OK);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "x", x, &xe), SES_OK);
    assert_int_equal(ses_graph_op(g, "EyeLike", "eye", &xe, 1, &dtype, 1, &y), SES_OK);
    assert_error(eval_fed(g, y, xe, NULL, &out), SES_UNIMPLEMENTED,
                 "EyeLike \"eye\": attribute dtype is 8 (STRING); this op makes numbers");
    ses_graph_release(g);
    ses_tensor_release(x);
}

/* Remote messages carry the strings, never the element pointers; a lying count is refused
 * before anything is allocated for it. */
static void remote_messages_carry_strings(void **state) {
    const int64_t dims[2] = {1, 3};
    ses_tensor_t *t = strings(2, dims, (const char *const[]){"a", "", "ü"}), *back = NULL;
    ses__wire_writer_t w;
    ses__wire_reader_t r;

    (void)state;
    memset(&w, 0, sizeof w);
    ses__wire_tensor(&w, t);
    assert_int_equal(ses__wire_check(&w, "test"), SES_OK);
    memset(&r, 0, sizeof r);
    r.data = w.data;
    r.size = w.used;
    assert_int_equal(ses__wire_read_tensor(&r, &back), SES_OK);
    assert_strings(back, 2, dims, (const char *const[]){"a", "", "ü"});
    ses_tensor_release(back);
    /* The same message with dimension 1 claiming 2^40 strings. */
    memcpy(w.data + 16, &(uint64_t){UINT64_C(1) << 40}, 8);
    memset(&r, 0, sizeof r);
    r.data = w.data;
    r.size = w.used;
    assert_error(ses__wire_read_tensor(&r, &back), SES_INTERNAL, "string tensor cut short");
    assert_null(back);
    free(w.data);
    ses_tensor_release(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(create_makes_empty_strings),
        cmocka_unit_test(create_from_copies_every_string),
        cmocka_unit_test(create_from_refuses_null_and_bad_utf8),
        cmocka_unit_test(wrap_refuses_strings),
        cmocka_unit_test(accessors_refuse_bad_arguments),
        cmocka_unit_test(copy_to_host_copies_the_strings),
        cmocka_unit_test(safetensors_refuses_a_string_tensor_naming_it),
        cmocka_unit_test(string_normalizer_drops_stopwords_ignoring_case_and_lowers),
        cmocka_unit_test(string_normalizer_case_sensitive_keeps_other_cases_and_uppers),
        cmocka_unit_test(string_normalizer_of_only_stopwords_gives_one_empty_string),
        cmocka_unit_test(string_normalizer_refuses_bad_attributes_and_shapes),
        cmocka_unit_test(string_normalizer_output_shape_follows_each_run),
        cmocka_unit_test(string_readers_take_a_run_time_shape),
        cmocka_unit_test(a_string_variable_feeds_string_ops),
        cmocka_unit_test(cast_float_to_string_prints_the_shortest_round_trip),
        cmocka_unit_test(cast_integers_and_bool_to_string),
        cmocka_unit_test(cast_string_to_numbers),
        cmocka_unit_test(cast_refuses_what_is_not_a_number_or_out_of_range),
        cmocka_unit_test(cast_like_a_string_makes_strings),
        cmocka_unit_test(equal_compares_strings_broadcasting),
        cmocka_unit_test(identity_of_a_string_constant_fetches_a_copy),
        cmocka_unit_test(other_ops_refuse_strings_naming_node_and_input),
        cmocka_unit_test(numeric_output_of_a_run_time_shape_is_refused),
        cmocka_unit_test(saving_a_string_variable_is_refused_naming_it),
        cmocka_unit_test(other_ops_cannot_be_asked_for_strings),
        cmocka_unit_test(remote_messages_carry_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
