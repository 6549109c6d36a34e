/*
 * The dtype gaps of the ONNX node tests (issue #22), evaluated on the CPU driver: Cast between
 * every dtype (f16 and bf16 rounding checked on hand-computed bit patterns, ties and double
 * rounding included), integer Add Sub Mul Div on the narrow and unsigned types, Pow with mixed
 * dtypes, Min Max Mod on f16, GreaterOrEqual and LessOrEqual, Clip on integers, EyeLike,
 * BatchNormalization's training form against a reference in double, and the random ops
 * (Dropout's training form, Bernoulli, RandomUniformLike, RandomNormalLike) against numpy's
 * legacy generator: np.random.seed(0) then uniform() gives 0.5488135, 0.71518937, ... and
 * normal() 1.76405235, 0.40015721, 0.97873798. Errors name the node and the input or attribute.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <session/session.h>
#include <session/train.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* np.random.seed(0); np.random.uniform(size=20) */
static const double numpy_uniform[20] = {
    0.5488135039273248,  0.7151893663724195, 0.6027633760716439,  0.5448831829968969,
    0.4236547993389047,  0.6458941130666561, 0.4375872112626925,  0.8917730007820798,
    0.9636627605010293,  0.3834415188257777, 0.7917250380826646,  0.5288949197529045,
    0.5680445610939323,  0.925596638292661,  0.07103605819788694, 0.08712929970154071,
    0.02021839744032572, 0.832619845547938,  0.7781567509498505,  0.8700121482212363,
};

/* ---- helpers -------------------------------------------------------------------------------- */

static size_t dtype_size(ses_dtype_t d) {
    switch (d) {
        case SES_F64:
        case SES_I64:
        case SES_U64:
            return 8;
        case SES_F32:
        case SES_I32:
        case SES_U32:
            return 4;
        case SES_F16:
        case SES_BF16:
        case SES_I16:
        case SES_U16:
            return 2;
        default:
            return 1;
    }
}

static ses_edge_t constant(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                           const void *values) {
    size_t n = 1;
    ses_tensor_t *t = NULL;
    ses_edge_t e = {NULL, 0};

    for (size_t d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    assert_int_equal(ses_tensor_create_from(dtype, rank, dims, values, n * dtype_size(dtype), &t),
                     SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_edge_t vec(ses_graph_t *g, ses_dtype_t dtype, int64_t n, const void *values) {
    return constant(g, dtype, 1, &n, values);
}

static ses_edge_t op(ses_graph_t *g, const char *type, const char *name, const ses_edge_t *in,
                     size_t n_in, const ses_attr_t *attrs, size_t n_attrs) {
    ses_edge_t y = {NULL, 0};
    if (ses_graph_op(g, type, name, in, n_in, attrs, n_attrs, &y) != SES_OK)
        fail_msg("%s: %s", type, ses_last_error());
    return y;
}

/* Evaluates @p n fetches on the CPU in session @p s (opened when NULL, then closed). */
static void eval_in(ses_session_t *s, ses_graph_t *g, const ses_edge_t *fetch, size_t n,
                    ses_tensor_t **out) {
    const char *cpu = "cpu";
    ses_session_t *own = NULL;

    if (!s) {
        assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &own), SES_OK);
        s = own;
    }
    if (ses_session_eval(s, fetch, n, NULL, 0, NULL, 0, out) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    ses_session_destroy(own);
}

static ses_tensor_t *eval1(ses_graph_t *g, ses_edge_t fetch) {
    ses_tensor_t *out = NULL;
    eval_in(NULL, g, &fetch, 1, &out);
    return out;
}

/* Evaluating @p fetch fails with @p status and a message holding @p a and @p b. */
static void expect_error(ses_graph_t *g, ses_edge_t fetch, ses_status_t status, const char *a,
                         const char *b) {
    const char *cpu = "cpu";
    ses_session_t *s = NULL;
    ses_tensor_t *out = NULL;
    ses_status_t st;

    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    st = ses_session_eval(s, &fetch, 1, NULL, 0, NULL, 0, &out);
    if (st != status)
        fail_msg("got status %d (want %d): %s", (int)st, (int)status, ses_last_error());
    if (!strstr(ses_last_error(), a) || (b && !strstr(ses_last_error(), b)))
        fail_msg("message lacks \"%s\" or \"%s\": %s", a, b ? b : "", ses_last_error());
    assert_null(out);
    ses_session_destroy(s);
}

/* @p t has dtype @p d, @p n elements and exactly the bytes of @p want; releases @p t. */
static void expect_bytes(ses_tensor_t *t, ses_dtype_t d, size_t n, const void *want) {
    assert_int_equal(ses_tensor_dtype(t), d);
    assert_int_equal(ses_tensor_count(t), n);
    const unsigned char *got = ses_tensor_data(t);
    const size_t es = dtype_size(d);
    for (size_t i = 0; i < n; i++)
        if (memcmp(got + i * es, (const unsigned char *)want + i * es, es) != 0) {
            uint64_t gv = 0, wv = 0;
            memcpy(&gv, got + i * es, es);
            memcpy(&wv, (const unsigned char *)want + i * es, es);
            fail_msg("element %zu: got bits 0x%llx, want 0x%llx", i, (unsigned long long)gv,
                     (unsigned long long)wv);
        }
    ses_tensor_release(t);
}

/* @p t is f32 or f64 with @p n elements within @p tol of @p want (NaN matches NaN). */
static void expect_near(ses_tensor_t *t, ses_dtype_t d, size_t n, const double *want, double tol) {
    assert_int_equal(ses_tensor_dtype(t), d);
    assert_int_equal(ses_tensor_count(t), n);
    for (size_t i = 0; i < n; i++) {
        const double g = d == SES_F32 ? ((const float *)ses_tensor_data(t))[i]
                                      : ((const double *)ses_tensor_data(t))[i];
        if (isnan(want[i]) ? !isnan(g) : !(g == want[i] || fabs(g - want[i]) <= tol))
            fail_msg("element %zu: got %.17g, want %.17g", i, g, want[i]);
    }
    ses_tensor_release(t);
}

static ses_tensor_t *cast_to(ses_graph_t *g, ses_edge_t x, int64_t onnx_to) {
    const ses_attr_t to = ses_attr_int("to", onnx_to);
    return eval1(g, op(g, "Cast", NULL, &x, 1, &to, 1));
}

/* ---- Cast ----------------------------------------------------------------------------------- */

/* f16: 10 fraction bits, exponent bias 15; halfway cases round to the even neighbour. */
static void cast_to_f16_rounds_once_to_nearest_even(void **state) {
    ses_graph_t *g = NULL;
    const float x[] = {
        1.0f,
        65504.0f,          /* the largest f16 */
        65519.99f,         /* just below the tie with infinity: 65504 */
        65520.0f,          /* the tie: even is infinity */
        0x1p-24f,          /* the smallest subnormal */
        0x1p-25f,          /* half of it, a tie: 0 */
        0x1.8p-25f,        /* three quarters of it: rounds up to it */
        1.0f + 0x1p-11f,   /* a tie between 1 and 1 + 2^-10: even is 1 */
        1.0f + 0x1.8p-10f, /* a tie between 1 + 2^-10 and 1 + 2^-9: even is the latter */
        -0.0f,
        -INFINITY,
        NAN,
        0x1p-15f, /* -0, -inf, NaN, a subnormal f16 (0x0200) */
    };
    const uint16_t want[] = {0x3C00, 0x7BFF, 0x7BFF, 0x7C00, 0x0001, 0x0000, 0x0001,
                             0x3C00, 0x3C02, 0x8000, 0xFC00, 0x7E00, 0x0200};
    /* f64 1 + 2^-11 + 2^-40 lies above the tie; through f32 it would become the tie (1 + 2^-11)
     * and round to 1: once from the double it is 1 + 2^-10. */
    const double d[] = {1.0 + 0x1p-11 + 0x1p-40, -2.5, 1e300, 5.960464477539063e-08};
    const uint16_t want_d[] = {0x3C01, 0xC100, 0x7C00, 0x0001};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_tensor_t *t = cast_to(g, vec(g, SES_F32, 13, x), 10);
    /* NaN: any quiet NaN with the sign; ours keeps the top payload bit, 0x7E00. */
    expect_bytes(t, SES_F16, 13, want);
    expect_bytes(cast_to(g, vec(g, SES_F64, 4, d), 10), SES_F16, 4, want_d);
    ses_graph_release(g);
}

static void cast_to_bf16_rounds_once_to_nearest_even(void **state) {
    ses_graph_t *g = NULL;
    const float x[] = {1.0f, 1.0f + 0x1p-8f, 1.0f + 0x1.8p-7f, 3.4028235e38f, -0.0f,
                       NAN,  0x1p-133f};
    /* 1 + 2^-8 is a tie (even: 1); 1 + 3 * 2^-8 a tie (even: 1 + 2^-6); FLT_MAX rounds up past
     * the largest bf16 to infinity; 2^-133 is the smallest bf16 subnormal. */
    const uint16_t want[] = {0x3F80, 0x3F80, 0x3F82, 0x7F80, 0x8000, 0x7FC0, 0x0001};
    const double d[] = {1.0 + 0x1p-8 + 0x1p-30, -3.0};
    const uint16_t want_d[] = {0x3F81, 0xC040};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    expect_bytes(cast_to(g, vec(g, SES_F32, 7, x), 16), SES_BF16, 7, want);
    expect_bytes(cast_to(g, vec(g, SES_F64, 2, d), 16), SES_BF16, 2, want_d);
    ses_graph_release(g);
}

/* Widening is exact: subnormals, the extremes, signed zero, infinity and NaN. */
static void cast_from_f16_and_bf16_is_exact(void **state) {
    ses_graph_t *g = NULL;
    const uint16_t h[] = {0x0001, 0x03FF, 0x7BFF, 0x8000, 0xFC00, 0x7E00, 0x3555};
    const double want[] = {0x1p-24, 0x3FFp-24, 65504.0, -0.0, -INFINITY, NAN, 0x1.554p-2};
    const uint16_t b[] = {0x3F80, 0xC2F7, 0x0001, 0x7F80};
    const double want_b[] = {1.0, -123.5, 0x1p-133, INFINITY};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    expect_near(cast_to(g, vec(g, SES_F16, 7, h), 11), SES_F64, 7, want, 0);
    expect_near(cast_to(g, vec(g, SES_F16, 7, h), 1), SES_F32, 7, want, 0);
    expect_near(cast_to(g, vec(g, SES_BF16, 4, b), 1), SES_F32, 4, want_b, 0);
    /* f16 to i32 truncates toward zero (65504, 0.333 -> 0); -inf saturates. */
    const int32_t want_i[] = {0, 0, 65504, 0, INT32_MIN, 0, 0};
    expect_bytes(cast_to(g, vec(g, SES_F16, 7, h), 6), SES_I32, 7, want_i);
    ses_graph_release(g);
}

/* Between integers: wrapping (modulo 2^bits); from floats: toward zero, saturating, NaN 0. */
static void cast_between_the_narrow_and_unsigned_integers(void **state) {
    ses_graph_t *g = NULL;
    const int32_t i[] = {200, -1, 70000, -129};
    const float f[] = {-1e10f, 3.9f, NAN, 1e20f};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    expect_bytes(cast_to(g, vec(g, SES_I32, 4, i), 3), SES_I8, 4,
                 (const int8_t[]){-56, -1, 112, 127});
    expect_bytes(cast_to(g, vec(g, SES_I32, 4, i), 4), SES_U16, 4,
                 (const uint16_t[]){200, 65535, 4464, 65407});
    expect_bytes(cast_to(g, vec(g, SES_I32, 4, i), 13), SES_U64, 4,
                 (const uint64_t[]){200, UINT64_MAX, 70000, UINT64_MAX - 128});
    expect_bytes(cast_to(g, vec(g, SES_F32, 4, f), 5), SES_I16, 4,
                 (const int16_t[]){INT16_MIN, 3, 0, INT16_MAX});
    expect_bytes(cast_to(g, vec(g, SES_F32, 4, f), 12), SES_U32, 4,
                 (const uint32_t[]){0, 3, 0, UINT32_MAX});
    /* u32 70000 is past the f16 maximum: infinity. */
    const uint32_t u[] = {70000, 2048, 2049};
    expect_bytes(cast_to(g, vec(g, SES_U32, 3, u), 10), SES_F16, 3,
                 (const uint16_t[]){0x7C00, 0x6800, 0x6800});
    /* bool: non-zero is true, NaN included. */
    expect_bytes(cast_to(g, vec(g, SES_F32, 4, f), 9), SES_BOOL, 4, (const uint8_t[]){1, 1, 1, 1});
    ses_graph_release(g);
}

/* ---- arithmetic ----------------------------------------------------------------------------- */

static ses_tensor_t *binary(ses_graph_t *g, const char *type, ses_edge_t a, ses_edge_t b) {
    const ses_edge_t in[2] = {a, b};
    return eval1(g, op(g, type, NULL, in, 2, NULL, 0));
}

static void narrow_and_unsigned_integer_arithmetic_wraps_and_divides_toward_zero(void **state) {
    ses_graph_t *g = NULL;
    const uint8_t a8[] = {200, 3, 16, 7}, b8[] = {100, 5, 16, 2};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t a = vec(g, SES_U8, 4, a8), b = vec(g, SES_U8, 4, b8);
    expect_bytes(binary(g, "Add", a, b), SES_U8, 4, (const uint8_t[]){44, 8, 32, 9});
    expect_bytes(binary(g, "Sub", a, b), SES_U8, 4, (const uint8_t[]){100, 254, 0, 5});
    expect_bytes(binary(g, "Mul", a, b), SES_U8, 4, (const uint8_t[]){32, 15, 0, 14});
    expect_bytes(binary(g, "Div", a, b), SES_U8, 4, (const uint8_t[]){2, 0, 1, 3});
    /* i8: -128 / -1 wraps to -128; -7 / 2 truncates to -3. */
    const int8_t ia[] = {-128, -7, 100, -100}, ib[] = {-1, 2, 100, 100};
    expect_bytes(binary(g, "Div", vec(g, SES_I8, 4, ia), vec(g, SES_I8, 4, ib)), SES_I8, 4,
                 (const int8_t[]){-128, -3, 1, -1});
    expect_bytes(binary(g, "Add", vec(g, SES_I8, 4, ia), vec(g, SES_I8, 4, ib)), SES_I8, 4,
                 (const int8_t[]){127, -5, -56, 0});
    /* u16: 65535 * 65535 = 1 modulo 2^16 (and no signed overflow on the way). */
    const uint16_t u16[] = {65535, 300};
    expect_bytes(binary(g, "Mul", vec(g, SES_U16, 2, u16), vec(g, SES_U16, 2, u16)), SES_U16, 2,
                 (const uint16_t[]){1, 24464});
    const int16_t i16[] = {32767, -32768};
    expect_bytes(binary(g, "Mul", vec(g, SES_I16, 2, i16), vec(g, SES_I16, 2, i16)), SES_I16, 2,
                 (const int16_t[]){1, 0});
    const uint64_t u64[] = {UINT64_MAX, 10};
    expect_bytes(binary(g, "Add", vec(g, SES_U64, 2, u64), vec(g, SES_U64, 2, u64)), SES_U64, 2,
                 (const uint64_t[]){UINT64_MAX - 1, 20});
    const uint32_t u32a[] = {7, 9}, u32b[] = {0, 3};
    ses_edge_t div0 =
        op(g, "Div", "div0",
           (const ses_edge_t[]){vec(g, SES_U32, 2, u32a), vec(g, SES_U32, 2, u32b)}, 2, NULL, 0);
    expect_error(g, div0, SES_INVALID_ARGUMENT, "Div \"div0\"", "division by zero");
    ses_graph_release(g);
}

/* Pow's exponent has its own dtype; the base's dtype is the output's. */
static void pow_takes_an_exponent_of_any_number_dtype(void **state) {
    ses_graph_t *g = NULL;
    const float xf[] = {2, -3, 0.5f, 4};
    const int64_t e64[] = {3, 2, -2, 0};
    const int32_t xi[] = {3, 2, -1, 1, 0, 2, 3}, ei[] = {4, -1, -3, -5, 5, 31, 40};
    const float ef[] = {0.5f, 2.0f, 1.0f / 3, -1};
    const int64_t xl[] = {2, 10, -8, 4};
    /* 3^40 modulo 2^32, as int32: the product wraps. */
    uint32_t p = 1;
    for (int k = 0; k < 40; k++)
        p *= 3u;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    expect_near(binary(g, "Pow", vec(g, SES_F32, 4, xf), vec(g, SES_I64, 4, e64)), SES_F32, 4,
                (const double[]){8, 9, 4, 1}, 0);
    expect_bytes(binary(g, "Pow", vec(g, SES_I32, 7, xi), vec(g, SES_I32, 7, ei)), SES_I32, 7,
                 (const int32_t[]){81, 0, -1, 1, 0, INT32_MIN, (int32_t)p});
    /* i64 base, f32 exponent: through double, truncated toward zero; (-8)^(1/3) is NaN: 0. */
    expect_bytes(binary(g, "Pow", vec(g, SES_I64, 4, xl), vec(g, SES_F32, 4, ef)), SES_I64, 4,
                 (const int64_t[]){1, 100, 0, 0});
    const uint8_t eu[] = {0, 1, 2, 3};
    expect_near(binary(g, "Pow", vec(g, SES_F32, 4, xf), vec(g, SES_U8, 4, eu)), SES_F32, 4,
                (const double[]){1, -3, 0.25, 64}, 0);
    ses_graph_release(g);
}

static void min_max_and_mod_work_on_f16(void **state) {
    ses_graph_t *g = NULL;
    /* 1, -2, NaN, 65504 and 0.5, -1, 3, -65504 */
    const uint16_t a[] = {0x3C00, 0xC000, 0x7E00, 0x7BFF}, b[] = {0x3800, 0xBC00, 0x4200, 0xFBFF};
    const ses_attr_t fmod1 = ses_attr_int("fmod", 1);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t ea = vec(g, SES_F16, 4, a), eb = vec(g, SES_F16, 4, b);
    expect_bytes(binary(g, "Min", ea, eb), SES_F16, 4,
                 (const uint16_t[]){0x3800, 0xC000, 0x7E00, 0xFBFF});
    expect_bytes(binary(g, "Max", ea, eb), SES_F16, 4,
                 (const uint16_t[]){0x3C00, 0xBC00, 0x7E00, 0x7BFF});
    /* fmod: the dividend's sign; 1 % 0.5 = 0, -2 % -1 = -0, 65504 % -65504 = 0. */
    const ses_edge_t in[2] = {ea, eb};
    expect_bytes(eval1(g, op(g, "Mod", NULL, in, 2, &fmod1, 1)), SES_F16, 4,
                 (const uint16_t[]){0x0000, 0x8000, 0x7E00, 0x0000});
    ses_graph_release(g);
}

static void greater_or_equal_and_less_or_equal_broadcast_and_refuse_nan(void **state) {
    ses_graph_t *g = NULL;
    const float a[] = {1, 2, 3, NAN}, b[] = {2};
    const uint16_t ua[] = {0, 65535}, ub[] = {65535, 65535};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t ea = vec(g, SES_F32, 4, a), eb = vec(g, SES_F32, 1, b);
    expect_bytes(binary(g, "GreaterOrEqual", ea, eb), SES_BOOL, 4, (const uint8_t[]){0, 1, 1, 0});
    expect_bytes(binary(g, "LessOrEqual", ea, eb), SES_BOOL, 4, (const uint8_t[]){1, 1, 0, 0});
    expect_bytes(binary(g, "LessOrEqual", vec(g, SES_U16, 2, ua), vec(g, SES_U16, 2, ub)), SES_BOOL,
                 2, (const uint8_t[]){1, 1});
    const uint8_t t[] = {1};
    ses_edge_t bad =
        op(g, "GreaterOrEqual", "ge",
           (const ses_edge_t[]){vec(g, SES_BOOL, 1, t), vec(g, SES_BOOL, 1, t)}, 2, NULL, 0);
    expect_error(g, bad, SES_INVALID_ARGUMENT, "GreaterOrEqual \"ge\": input 0 (A) is bool[1]",
                 "allowed dtypes");
    ses_graph_release(g);
}

static void clip_bounds_every_integer_dtype(void **state) {
    ses_graph_t *g = NULL;
    const int8_t x[] = {-128, -5, 0, 5, 127}, lo = -3, hi = 4;
    const uint64_t ux[] = {0, 7, UINT64_MAX}, uhi = 9;
    const int64_t empty_dims[1] = {0};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t ex = vec(g, SES_I8, 5, x);
    ses_edge_t in[3] = {ex, constant(g, SES_I8, 0, NULL, &lo), constant(g, SES_I8, 0, NULL, &hi)};
    expect_bytes(eval1(g, op(g, "Clip", NULL, in, 3, NULL, 0)), SES_I8, 5,
                 (const int8_t[]){-3, -3, 0, 4, 4});
    /* min left out (an empty tensor stands for it), max given: the importer's form. */
    in[1] = constant(g, SES_F32, 1, empty_dims, NULL);
    expect_bytes(eval1(g, op(g, "Clip", NULL, in, 3, NULL, 0)), SES_I8, 5,
                 (const int8_t[]){-128, -5, 0, 4, 4});
    ses_edge_t uin[3] = {vec(g, SES_U64, 3, ux), constant(g, SES_F32, 1, empty_dims, NULL),
                         constant(g, SES_U64, 0, NULL, &uhi)};
    expect_bytes(eval1(g, op(g, "Clip", NULL, uin, 3, NULL, 0)), SES_U64, 3,
                 (const uint64_t[]){0, 7, 9});
    ses_graph_release(g);
}

/* ---- EyeLike -------------------------------------------------------------------------------- */

static void eye_like_puts_ones_on_diagonal_k_in_the_asked_dtype(void **state) {
    ses_graph_t *g = NULL;
    const int32_t x[12] = {0};
    const int64_t d34[2] = {3, 4};
    const ses_attr_t f64 = ses_attr_int("dtype", 11), k1 = ses_attr_int("k", 1),
                     km2 = ses_attr_int("k", -2), kfar = ses_attr_int("k", 9),
                     f16 = ses_attr_int("dtype", 10);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t ex = constant(g, SES_I32, 2, d34, x);
    expect_near(eval1(g, op(g, "EyeLike", NULL, &ex, 1, &f64, 1)), SES_F64, 12,
                (const double[]){1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, 0);
    expect_bytes(eval1(g, op(g, "EyeLike", NULL, &ex, 1, &k1, 1)), SES_I32, 12,
                 (const int32_t[]){0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
    const ses_attr_t a[2] = {km2, f16};
    expect_bytes(eval1(g, op(g, "EyeLike", NULL, &ex, 1, a, 2)), SES_F16, 12,
                 (const uint16_t[]){0, 0, 0, 0, 0, 0, 0, 0, 0x3C00, 0, 0, 0});
    expect_bytes(eval1(g, op(g, "EyeLike", NULL, &ex, 1, &kfar, 1)), SES_I32, 12, x);
    /* Not a matrix; a dtype we do not have. */
    ses_edge_t v = vec(g, SES_I32, 3, x);
    expect_error(g, op(g, "EyeLike", "eye", &v, 1, NULL, 0), SES_INVALID_ARGUMENT,
                 "EyeLike \"eye\": input must be 2-D, got i32[3]", NULL);
    const ses_attr_t str = ses_attr_int("dtype", 8);
    expect_error(g, op(g, "EyeLike", "eye_s", &ex, 1, &str, 1), SES_UNIMPLEMENTED,
                 "EyeLike \"eye_s\": attribute dtype is 8 (STRING)", NULL);
    ses_graph_release(g);
}

/* ---- BatchNormalization's training form ------------------------------------------------------ */

static void batch_norm_training_uses_the_batch_statistics_and_blends_the_running_ones(
    void **state) {
    enum { N = 2, C = 3, S = 4 };
    const int64_t xd[3] = {N, C, S};
    float x[N * C * S];
    const float scale[C] = {0.5f, -1, 2}, bias[C] = {0.1f, 0.2f, -0.3f};
    const float mean[C] = {1, 2, 3}, var[C] = {0.5f, 1.5f, 2.5f};
    const double eps = 1e-3, momentum = 0.8;
    double want_y[N * C * S], want_mean[C], want_var[C];
    ses_graph_t *g = NULL;
    ses_node_t *node = NULL;

    (void)state;
    for (int i = 0; i < N * C * S; i++)
        x[i] = (float)sin(1.7 * i) * 3;
    /* The reference: per channel over N and the spatial positions, population variance. */
    for (int c = 0; c < C; c++) {
        double m = 0, v = 0;
        for (int n = 0; n < N; n++)
            for (int s = 0; s < S; s++)
                m += x[(n * C + c) * S + s];
        m /= N * S;
        for (int n = 0; n < N; n++)
            for (int s = 0; s < S; s++)
                v += (x[(n * C + c) * S + s] - m) * (x[(n * C + c) * S + s] - m);
        v /= N * S;
        for (int n = 0; n < N; n++)
            for (int s = 0; s < S; s++)
                want_y[(n * C + c) * S + s] =
                    (x[(n * C + c) * S + s] - m) / sqrt(v + eps) * scale[c] + bias[c];
        want_mean[c] = mean[c] * momentum + m * (1 - momentum);
        want_var[c] = var[c] * momentum + v * (1 - momentum);
    }
    assert_int_equal(ses_graph_create(&g), SES_OK);
    const ses_edge_t in[5] = {constant(g, SES_F32, 3, xd, x), vec(g, SES_F32, C, scale),
                              vec(g, SES_F32, C, bias), vec(g, SES_F32, C, mean),
                              vec(g, SES_F32, C, var)};
    const ses_attr_t attrs[3] = {ses_attr_int("training_mode", 1), ses_attr_float("epsilon", eps),
                                 ses_attr_float("momentum", momentum)};
    assert_int_equal(ses_graph_add_node(g, "BatchNormalization", "bn", in, 5, attrs, 3, 3, &node),
                     SES_OK);
    const ses_edge_t outs[3] = {ses_node_output(node, 0), ses_node_output(node, 1),
                                ses_node_output(node, 2)};
    ses_tensor_t *got[3] = {NULL};
    eval_in(NULL, g, outs, 3, got);
    expect_near(got[0], SES_F32, N * C * S, want_y, 1e-5);
    expect_near(got[1], SES_F32, C, want_mean, 1e-6);
    expect_near(got[2], SES_F32, C, want_var, 1e-6);
    /* Y alone: the same values, from the node's X, scale and B. */
    expect_near(eval1(g, op(g, "BatchNormalization", NULL, in, 5, attrs, 3)), SES_F32, N * C * S,
                want_y, 1e-5);
    expect_near(eval1(g, op(g, "BatchNormalization", NULL, in, 3, attrs, 3)), SES_F32, N * C * S,
                want_y, 1e-5);
    /* The running statistics need input_mean and input_var; inference needs all five. */
    assert_int_equal(ses_graph_add_node(g, "BatchNormalization", "bn3", in, 3, attrs, 3, 2, &node),
                     SES_OK);
    expect_error(g, ses_node_output(node, 1), SES_INVALID_ARGUMENT,
                 "BatchNormalization \"bn3\": takes 5 inputs (X, scale, B, input_mean, "
                 "input_var) to give running_mean and running_var; got 3",
                 NULL);
    expect_error(g, op(g, "BatchNormalization", "bn_inf", in, 3, NULL, 0), SES_INVALID_ARGUMENT,
                 "BatchNormalization \"bn_inf\": takes 5 inputs", NULL);
    assert_int_equal(ses_graph_add_node(g, "BatchNormalization", "bn2", in, 5, NULL, 0, 2, &node),
                     SES_OK);
    expect_error(g, ses_node_output(node, 0), SES_INVALID_ARGUMENT,
                 "BatchNormalization \"bn2\": outputs running_mean and running_var exist only in "
                 "training mode",
                 NULL);
    ses_graph_release(g);
}

/* ---- the random ops ------------------------------------------------------------------------- */

/* Dropout in training mode with seed 0 drops exactly where numpy's reference does (uniform <
 * ratio), scales the rest by 1 / (1 - ratio), and its next run continues the stream. */
static void dropout_training_follows_numpys_stream_and_continues_it(void **state) {
    const float ones[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const float ratio = 0.5f, zero = 0.0f, one = 1.0f;
    const uint8_t yes = 1;
    ses_graph_t *g = NULL;
    ses_node_t *node = NULL;
    ses_session_t *s = NULL;
    const char *cpu = "cpu";
    const ses_attr_t seed = ses_attr_int("seed", 0);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t in[3] = {vec(g, SES_F32, 10, ones), constant(g, SES_F32, 0, NULL, &ratio),
                        constant(g, SES_BOOL, 0, NULL, &yes)};
    assert_int_equal(ses_graph_add_node(g, "Dropout", "drop", in, 3, &seed, 1, 2, &node), SES_OK);
    const ses_edge_t outs[2] = {ses_node_output(node, 0), ses_node_output(node, 1)};
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    for (int run = 0; run < 2; run++) {
        ses_tensor_t *got[2] = {NULL};
        double want[10];
        uint8_t mask[10];
        for (int i = 0; i < 10; i++) {
            mask[i] = numpy_uniform[run * 10 + i] >= ratio;
            want[i] = mask[i] ? 2.0 : 0.0;
        }
        eval_in(s, g, outs, 2, got);
        expect_near(got[0], SES_F32, 10, want, 0);
        expect_bytes(got[1], SES_BOOL, 10, mask);
    }
    ses_session_destroy(s);
    /* Ratio 0 keeps everything; a ratio of 1 or more is refused at run time. */
    in[1] = constant(g, SES_F32, 0, NULL, &zero);
    expect_near(eval1(g, op(g, "Dropout", NULL, in, 3, &seed, 1)), SES_F32, 10,
                (const double[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0);
    in[1] = constant(g, SES_F32, 0, NULL, &one);
    expect_error(g, op(g, "Dropout", "drop1", in, 3, &seed, 1), SES_INVALID_ARGUMENT,
                 "Dropout \"drop1\": ratio is 1; it must lie in [0, 1)", NULL);
    /* Training needs the ratio; it must be a scalar. */
    ses_edge_t bad_in[3] = {in[0], vec(g, SES_F32, 10, ones), in[2]};
    expect_error(g, op(g, "Dropout", "drop_v", bad_in, 3, NULL, 0), SES_INVALID_ARGUMENT,
                 "Dropout \"drop_v\": input 1 (ratio) must be a scalar, got f32[10]", NULL);
    ses_graph_release(g);
}

/* The gradient of Dropout in training mode is dy scaled where the mask kept, 0 elsewhere: it
 * reads the same run's mask. Without a mask output it is refused, naming the node. */
static void dropout_training_gradient_follows_the_mask(void **state) {
    const float x[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    const float ratio = 0.75f;
    const uint8_t yes = 1;
    ses_graph_t *g = NULL;
    ses_node_t *node = NULL;
    ses_edge_t dx = {NULL, 0};
    const ses_attr_t seed = ses_attr_int("seed", 3);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t in[3] = {vec(g, SES_F32, 10, x), constant(g, SES_F32, 0, NULL, &ratio),
                        constant(g, SES_BOOL, 0, NULL, &yes)};
    assert_int_equal(ses_graph_add_node(g, "Dropout", "drop", in, 3, &seed, 1, 2, &node), SES_OK);
    const ses_edge_t y = ses_node_output(node, 0);
    if (ses_gradients(g, NULL, &y, 1, &in[0], 1, NULL, &dx) != SES_OK)
        fail_msg("gradients: %s", ses_last_error());
    const ses_edge_t fetch[3] = {y, ses_node_output(node, 1), dx};
    ses_tensor_t *got[3] = {NULL};
    eval_in(NULL, g, fetch, 3, got);
    const uint8_t *mask = ses_tensor_data(got[1]);
    double want_y[10], want_dx[10];
    int kept = 0;
    for (int i = 0; i < 10; i++) {
        want_y[i] = mask[i] ? x[i] * 4.0 : 0.0;
        want_dx[i] = mask[i] ? 4.0 : 0.0;
        kept += mask[i];
    }
    assert_true(kept > 0 && kept < 10); /* seed 3 keeps some and drops some */
    expect_near(got[0], SES_F32, 10, want_y, 0);
    expect_near(got[2], SES_F32, 10, want_dx, 0);
    ses_tensor_release(got[1]);

    ses_edge_t y1 = op(g, "Dropout", "drop1", in, 3, &seed, 1);
    assert_int_equal(ses_gradients(g, NULL, &y1, 1, &in[0], 1, NULL, &dx), SES_UNIMPLEMENTED);
    if (!strstr(ses_last_error(),
                "Dropout \"drop1\": the gradient of its training mode needs "
                "the mask output"))
        fail_msg("message: %s", ses_last_error());
    ses_graph_release(g);
}

static void bernoulli_and_random_like_ops_draw_numpys_values_for_a_seed(void **state) {
    const double p[10] = {0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6};
    const double edge[4] = {0, 1, 0, 1};
    const int32_t shape[3] = {0};
    ses_graph_t *g = NULL;
    const ses_attr_t seed = ses_attr_float("seed", 0.0), to_i32 = ses_attr_int("dtype", 6);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t ep = vec(g, SES_F64, 10, p);
    double want[10];
    for (int i = 0; i < 10; i++)
        want[i] = numpy_uniform[i] < 0.6 ? 1 : 0;
    expect_near(eval1(g, op(g, "Bernoulli", NULL, &ep, 1, &seed, 1)), SES_F64, 10, want, 0);
    /* p = 0 never, p = 1 always, in the dtype asked for, seeded or not. */
    ses_edge_t ee = vec(g, SES_F64, 4, edge);
    expect_bytes(eval1(g, op(g, "Bernoulli", NULL, &ee, 1, &to_i32, 1)), SES_I32, 4,
                 (const int32_t[]){0, 1, 0, 1});
    const double bad_p[1] = {1.5};
    ses_edge_t eb = vec(g, SES_F64, 1, bad_p);
    expect_error(g, op(g, "Bernoulli", "bern", &eb, 1, NULL, 0), SES_INVALID_ARGUMENT,
                 "Bernoulli \"bern\": input element 0 is 1.5, not a probability in [0, 1]", NULL);

    /* RandomUniformLike: low + (high - low) u, f64 asked of an i32 input. */
    ses_edge_t es = vec(g, SES_I32, 3, shape);
    const ses_attr_t u_attrs[4] = {ses_attr_float("low", 2.0), ses_attr_float("high", 4.0),
                                   ses_attr_float("seed", 0.0), ses_attr_int("dtype", 11)};
    expect_near(eval1(g, op(g, "RandomUniformLike", NULL, &es, 1, u_attrs, 4)), SES_F64, 3,
                (const double[]){2 + 2 * numpy_uniform[0], 2 + 2 * numpy_uniform[1],
                                 2 + 2 * numpy_uniform[2]},
                1e-15);
    /* RandomNormalLike: numpy's legacy normal(): mean + scale * (1.76405235, 0.40015721,
     * 0.97873798) for seed 0. */
    const ses_attr_t n_attrs[4] = {ses_attr_float("mean", 1.0), ses_attr_float("scale", 2.0),
                                   ses_attr_float("seed", 0.0), ses_attr_int("dtype", 11)};
    expect_near(eval1(g, op(g, "RandomNormalLike", NULL, &es, 1, n_attrs, 4)), SES_F64, 3,
                (const double[]){1 + 2 * 1.764052345967664, 1 + 2 * 0.4001572083672233,
                                 1 + 2 * 0.9787379841057392},
                1e-12);
    /* An integer output is refused naming where the dtype came from; low above high too. */
    expect_error(g, op(g, "RandomUniformLike", "ru", &es, 1, NULL, 0), SES_INVALID_ARGUMENT,
                 "RandomUniformLike \"ru\": the output must be a float dtype, but it would be "
                 "i32 (the input's dtype)",
                 NULL);
    const ses_attr_t lh[3] = {ses_attr_float("low", 2.0), ses_attr_float("high", 1.0),
                              ses_attr_int("dtype", 1)};
    expect_error(g, op(g, "RandomUniformLike", "ru2", &es, 1, lh, 3), SES_INVALID_ARGUMENT,
                 "RandomUniformLike \"ru2\": attribute low (2) is above high (1)", NULL);
    ses_graph_release(g);
}

/* Without a seed, two nodes draw different values (each seeds itself from the clock). */
static void unseeded_random_ops_differ_between_nodes(void **state) {
    const int32_t shape[64] = {0};
    const ses_attr_t f32 = ses_attr_int("dtype", 1);
    ses_graph_t *g = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t es = vec(g, SES_I32, 64, shape);
    ses_tensor_t *a = eval1(g, op(g, "RandomUniformLike", NULL, &es, 1, &f32, 1));
    ses_tensor_t *b = eval1(g, op(g, "RandomUniformLike", NULL, &es, 1, &f32, 1));
    assert_memory_not_equal(ses_tensor_data(a), ses_tensor_data(b), 64 * sizeof(float));
    for (int i = 0; i < 64; i++) {
        const float v = ((const float *)ses_tensor_data(a))[i];
        assert_true(v >= 0 && v < 1);
    }
    ses_tensor_release(a);
    ses_tensor_release(b);
    ses_graph_release(g);
}

/* The inputs and attributes the new forms refuse, each named with the node. */
static void bad_inputs_are_named_with_the_node(void **state) {
    const float f[2] = {1, 2};
    const uint8_t u[2] = {1, 2}, t[2] = {1, 0};
    const int32_t i[2] = {1, 2};
    ses_graph_t *g = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t ef = vec(g, SES_F32, 2, f), eu = vec(g, SES_U8, 2, u), eb = vec(g, SES_BOOL, 2, t),
               ei = vec(g, SES_I32, 2, i);
    expect_error(g, op(g, "Pow", "pb", (const ses_edge_t[]){ef, eb}, 2, NULL, 0),
                 SES_INVALID_ARGUMENT, "Pow \"pb\": input 1 (Y) is bool[2]", "allowed dtypes");
    expect_error(g, op(g, "Pow", "pu", (const ses_edge_t[]){eu, eu}, 2, NULL, 0),
                 SES_INVALID_ARGUMENT, "Pow \"pu\": input 0 (X) is u8[2]", "allowed dtypes");
    expect_error(g, op(g, "Bernoulli", "bi", &ei, 1, NULL, 0), SES_INVALID_ARGUMENT,
                 "Bernoulli \"bi\": input 0 (input) is i32[2]", "allowed dtypes");
    const ses_attr_t neg[2] = {ses_attr_float("scale", -1.0), ses_attr_int("dtype", 1)};
    expect_error(g, op(g, "RandomNormalLike", "rn", &ei, 1, neg, 2), SES_INVALID_ARGUMENT,
                 "RandomNormalLike \"rn\": attribute scale is -1; it must be >= 0", NULL);
    const ses_attr_t inf_seed = ses_attr_float("seed", INFINITY);
    expect_error(g, op(g, "Bernoulli", "bs", &ef, 1, &inf_seed, 1), SES_INVALID_ARGUMENT,
                 "Bernoulli \"bs\": attribute seed is inf; it must be finite", NULL);
    const ses_attr_t bad_dtype = ses_attr_int("dtype", 99);
    expect_error(g, op(g, "RandomUniformLike", "rd", &ef, 1, &bad_dtype, 1), SES_INVALID_ARGUMENT,
                 "RandomUniformLike \"rd\": attribute dtype is 99, not an ONNX TensorProto dtype",
                 NULL);
    expect_error(g, op(g, "Clip", "cb", &eb, 1, NULL, 0), SES_INVALID_ARGUMENT,
                 "Clip \"cb\": input 0 (input) is bool[2]", "allowed dtypes");
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cast_to_f16_rounds_once_to_nearest_even),
        cmocka_unit_test(cast_to_bf16_rounds_once_to_nearest_even),
        cmocka_unit_test(cast_from_f16_and_bf16_is_exact),
        cmocka_unit_test(cast_between_the_narrow_and_unsigned_integers),
        cmocka_unit_test(narrow_and_unsigned_integer_arithmetic_wraps_and_divides_toward_zero),
        cmocka_unit_test(pow_takes_an_exponent_of_any_number_dtype),
        cmocka_unit_test(min_max_and_mod_work_on_f16),
        cmocka_unit_test(greater_or_equal_and_less_or_equal_broadcast_and_refuse_nan),
        cmocka_unit_test(clip_bounds_every_integer_dtype),
        cmocka_unit_test(eye_like_puts_ones_on_diagonal_k_in_the_asked_dtype),
        cmocka_unit_test(batch_norm_training_uses_the_batch_statistics_and_blends_the_running_ones),
        cmocka_unit_test(dropout_training_follows_numpys_stream_and_continues_it),
        cmocka_unit_test(dropout_training_gradient_follows_the_mask),
        cmocka_unit_test(bernoulli_and_random_like_ops_draw_numpys_values_for_a_seed),
        cmocka_unit_test(unseeded_random_ops_differ_between_nodes),
        cmocka_unit_test(bad_inputs_are_named_with_the_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
