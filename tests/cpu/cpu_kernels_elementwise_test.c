/*
 * The CPU driver's kernels, part of the cpu_kernels test (runner in cpu_kernels_test.c):
 * Copies (Identity Reshape Flatten Squeeze Unsqueeze), arithmetic, comparisons,
 * Where, the unary ops and Cast.
 */
#include "cpu_kernels_harness.h"

/* ---------------------------------------------------------------------------------------------
 * Copies: Identity Reshape Flatten Squeeze Unsqueeze
 * ------------------------------------------------------------------------------------------- */

void shape_only_ops_copy_the_bytes_unchanged_at_every_dtype(void **state) {
    fixture_t *f = *state;
    static const char *const names[] = {"f32", "f64", "f16", "bf16", "i8",  "i16", "i32",
                                        "i64", "u8",  "u16", "u32",  "u64", "bool"};
    static const char *const ops[] = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"};
    uint8_t src[48], dst[48];
    char sig[32];

    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(i * 37 + 5);
    for (uint32_t dtype = 1; dtype <= 13; dtype++) {
        snprintf(sig, sizeof sig, "%s->%s", names[dtype - 1], names[dtype - 1]);
        size_t bytes = 6 * dtype_size(dtype);
        if (dtype == BOOL)
            for (size_t i = 0; i < 6; i++)
                src[i] &= 1;
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            targ_t in = tensor(dtype, src, 2, 2, 3);
            targ_t out = o == 3 ? tensor(dtype, NULL, 1, 6) : tensor(dtype, NULL, 3, 3, 1, 2);
            memset(dst, 0, sizeof dst);
            RUN_OK(f, ops[o], sig, NULL, 1, &in, out, dst);
            assert_memory_equal(src, dst, bytes);
        }
    }
}

void copies_handle_scalars_and_empty_tensors(void **state) {
    fixture_t *f = *state;
    const int64_t x[1] = {-42};
    int64_t got[1] = {0};

    targ_t scalar = tensor(I64, x, 0);
    RUN_OK(f, "Unsqueeze", "i64->i64", NULL, 1, &scalar, tensor(I64, NULL, 2, 1, 1), got);
    assert_int_equal(got[0], -42);
    targ_t one = tensor(I64, x, 3, 1, 1, 1);
    RUN_OK(f, "Squeeze", "i64->i64", NULL, 1, &one, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], -42);
    targ_t empty = tensor(I64, x, 2, 0, 3);
    RUN_OK(f, "Flatten", "i64->i64", NULL, 1, &empty, tensor(I64, NULL, 2, 1, 0), NULL);

    const test_attr_t to_f32[] = {A_INT("to", F32), A_END};
    float fgot[1];
    RUN_OK(f, "Cast", "i64->f32", to_f32, 1, &scalar, tensor(F32, NULL, 0), fgot);
    assert_true(fgot[0] == -42.0f);
    RUN_OK(f, "Cast", "i64->f32", to_f32, 1, &empty, tensor(F32, NULL, 2, 0, 3), NULL);
}

void reshape_refuses_an_output_with_another_element_count(void **state) {
    fixture_t *f = *state;
    const float x[6] = {0};
    targ_t in = tensor(F32, x, 2, 2, 3);
    f->name = "r1";

    assert_int_equal(run(f, "Reshape", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 5), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Reshape \"r1\"");
    assert_message_contains(f, "input has 6");
    assert_message_contains(f, "output has 5");
}

/* ---------------------------------------------------------------------------------------------
 * Add Sub Mul Div Pow
 * ------------------------------------------------------------------------------------------- */

void arithmetic_on_equal_shapes_computes_elementwise_in_f32_and_f64(void **state) {
    fixture_t *f = *state;
    const float a[4] = {1.5f, -2.0f, 3.0f, 0.25f};
    const float b[4] = {0.5f, 4.0f, -3.0f, 2.0f};
    const double da[3] = {1e300, -1.0, 2.5};
    const double db[3] = {1e300, 3.0, -0.5};
    targ_t in[2] = {tensor(F32, a, 2, 2, 2), tensor(F32, b, 2, 2, 2)};
    targ_t din[2] = {tensor(F64, da, 1, 3), tensor(F64, db, 1, 3)};
    float got[4];
    double dgot[3];

    RUN_OK(f, "Add", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){2.0f, 2.0f, 0.0f, 2.25f}, got, 4, 0);
    RUN_OK(f, "Sub", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){1.0f, -6.0f, 6.0f, -1.75f}, got, 4, 0);
    RUN_OK(f, "Mul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){0.75f, -8.0f, -9.0f, 0.5f}, got, 4, 0);
    RUN_OK(f, "Div", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){3.0f, -0.5f, -1.0f, 0.125f}, got, 4, 0);
    RUN_OK(f, "Pow", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){sqrtf(1.5f), 16.0f, 1.0f / 27.0f, 0.0625f}, got, 4, 1e-6);

    RUN_OK(f, "Add", "f64,f64->f64", NULL, 2, din, tensor(F64, NULL, 1, 3), dgot);
    expect_f64((const double[]){2e300, 2.0, 2.0}, dgot, 3, 0);
    RUN_OK(f, "Mul", "f64,f64->f64", NULL, 2, din, tensor(F64, NULL, 1, 3), dgot);
    expect_f64((const double[]){INFINITY, -3.0, -1.25}, dgot, 3, 0);
}

void float_division_by_zero_gives_infinity_not_an_error(void **state) {
    fixture_t *f = *state;
    const float a[3] = {1.0f, -1.0f, 0.0f};
    const float b[1] = {0.0f};
    targ_t in[2] = {tensor(F32, a, 1, 3), tensor(F32, b, 0)};
    float got[3];

    RUN_OK(f, "Div", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 1, 3), got);
    assert_true(isinf(got[0]) && got[0] > 0);
    assert_true(isinf(got[1]) && got[1] < 0);
    assert_true(isnan(got[2]));
}

/* [2,3] + [3]: the row is added to each row; [2,1] * [1,3]: an outer product. */
void arithmetic_broadcasts_rows_columns_and_outer_products(void **state) {
    fixture_t *f = *state;
    const float m[6] = {1, 2, 3, 4, 5, 6};
    const float row[3] = {10, 20, 30};
    const float col[2] = {2, 3};
    float got[6];

    targ_t a[2] = {tensor(F32, m, 2, 2, 3), tensor(F32, row, 1, 3)};
    RUN_OK(f, "Add", "f32,f32->f32", NULL, 2, a, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){11, 22, 33, 14, 25, 36}, got, 6, 0);

    targ_t b[2] = {tensor(F32, row, 1, 3), tensor(F32, m, 2, 2, 3)};
    RUN_OK(f, "Sub", "f32,f32->f32", NULL, 2, b, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){9, 18, 27, 6, 15, 24}, got, 6, 0);

    targ_t c[2] = {tensor(F32, col, 2, 2, 1), tensor(F32, row, 2, 1, 3)};
    RUN_OK(f, "Mul", "f32,f32->f32", NULL, 2, c, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){20, 40, 60, 30, 60, 90}, got, 6, 0);

    /* [2,1,3] / [2,1] -> [2,2,3]: both sides broadcast in different dims. */
    const float big[6] = {2, 4, 6, 8, 10, 12};
    float got12[12];
    targ_t d[2] = {tensor(F32, big, 3, 2, 1, 3), tensor(F32, col, 2, 2, 1)};
    RUN_OK(f, "Div", "f32,f32->f32", NULL, 2, d, tensor(F32, NULL, 3, 2, 2, 3), got12);
    expect_f32((const float[]){1, 2, 3, 2.0f / 3, 4.0f / 3, 2, 4, 5, 6, 8.0f / 3, 10.0f / 3, 4},
               got12, 12, 1e-6);
}

void arithmetic_works_on_scalars_and_zero_size_tensors(void **state) {
    fixture_t *f = *state;
    const int64_t s[1] = {7};
    const int64_t t[1] = {-3};
    const int64_t v[3] = {1, 2, 3};
    int64_t got[3];

    targ_t scalars[2] = {tensor(I64, s, 0), tensor(I64, t, 0)};
    RUN_OK(f, "Mul", "i64,i64->i64", NULL, 2, scalars, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], -21);

    targ_t sv[2] = {tensor(I64, s, 0), tensor(I64, v, 1, 3)};
    RUN_OK(f, "Sub", "i64,i64->i64", NULL, 2, sv, tensor(I64, NULL, 1, 3), got);
    expect_i64((const int64_t[]){6, 5, 4}, got, 3);

    /* [0,3] + [3] -> [0,3]: nothing to compute, and nothing written. */
    targ_t empty[2] = {tensor(I64, v, 2, 0, 3), tensor(I64, v, 1, 3)};
    RUN_OK(f, "Add", "i64,i64->i64", NULL, 2, empty, tensor(I64, NULL, 2, 0, 3), NULL);
    /* [0] + scalar, [1] broadcast against [0]. */
    targ_t empty2[2] = {tensor(I64, v, 1, 1), tensor(I64, v, 1, 0)};
    RUN_OK(f, "Div", "i64,i64->i64", NULL, 2, empty2, tensor(I64, NULL, 1, 0), NULL);
}

void integer_arithmetic_wraps_and_division_truncates_toward_zero(void **state) {
    fixture_t *f = *state;
    const int32_t a[6] = {INT32_MAX, -7, 7, -7, INT32_MIN, 9};
    const int32_t b[6] = {1, 2, -2, -2, -1, 3};
    int32_t got[6];
    targ_t in[2] = {tensor(I32, a, 1, 6), tensor(I32, b, 1, 6)};

    RUN_OK(f, "Add", "i32,i32->i32", NULL, 2, in, tensor(I32, NULL, 1, 6), got);
    assert_int_equal(got[0], INT32_MIN);
    RUN_OK(f, "Div", "i32,i32->i32", NULL, 2, in, tensor(I32, NULL, 1, 6), got);
    expect_i32((const int32_t[]){INT32_MAX, -3, -3, 3, INT32_MIN, 3}, got, 6);
    RUN_OK(f, "Mul", "i32,i32->i32", NULL, 2, in, tensor(I32, NULL, 1, 6), got);
    expect_i32((const int32_t[]){INT32_MAX, -14, -14, 14, INT32_MIN, 27}, got, 6);

    const int64_t c[2] = {INT64_MIN, -9};
    const int64_t d[2] = {1, 4};
    int64_t got64[2];
    targ_t in64[2] = {tensor(I64, c, 1, 2), tensor(I64, d, 1, 2)};
    RUN_OK(f, "Sub", "i64,i64->i64", NULL, 2, in64, tensor(I64, NULL, 1, 2), got64);
    expect_i64((const int64_t[]){INT64_MAX, -13}, got64, 2);
    RUN_OK(f, "Div", "i64,i64->i64", NULL, 2, in64, tensor(I64, NULL, 1, 2), got64);
    expect_i64((const int64_t[]){INT64_MIN, -2}, got64, 2);
}

void integer_division_by_zero_is_refused_naming_the_node(void **state) {
    fixture_t *f = *state;
    const int64_t a[3] = {1, 2, 3};
    const int64_t b[3] = {1, 0, 1};
    targ_t in[2] = {tensor(I64, a, 1, 3), tensor(I64, b, 1, 3)};
    f->name = "ratio";

    assert_int_equal(run(f, "Div", "i64,i64->i64", NULL, 2, in, tensor(I64, NULL, 1, 3), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Div \"ratio\"");
    assert_message_contains(f, "division by zero");
    assert_message_contains(f, "element 1");

    const int32_t x[2] = {4, 5};
    const int32_t zero[1] = {0};
    targ_t in32[2] = {tensor(I32, x, 1, 2), tensor(I32, zero, 0)};
    assert_int_equal(run(f, "Div", "i32,i32->i32", NULL, 2, in32, tensor(I32, NULL, 1, 2), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "division by zero");
}

void arithmetic_refuses_shapes_that_do_not_broadcast_naming_all_of_them(void **state) {
    fixture_t *f = *state;
    const float a[6] = {0};
    const float b[4] = {0};
    targ_t in[2] = {tensor(F32, a, 2, 2, 3), tensor(F32, b, 1, 4)};
    f->name = "bad_add";

    assert_int_equal(run(f, "Add", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 4), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Add \"bad_add\"");
    assert_message_contains(f, "input 0 is [2,3]");
    assert_message_contains(f, "input 1 is [4]");
    assert_message_contains(f, "output is [2,4]");

    /* Inputs that broadcast, but to another shape than the host's output. */
    targ_t ok[2] = {tensor(F32, a, 2, 2, 3), tensor(F32, a, 1, 3)};
    assert_int_equal(run(f, "Add", "f32,f32->f32", NULL, 2, ok, tensor(F32, NULL, 2, 3, 3), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [3,3]");
    assert_int_equal(
        run(f, "Add", "f32,f32->f32", NULL, 2, ok, tensor(F32, NULL, 3, 1, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
}

/* ---------------------------------------------------------------------------------------------
 * Equal Greater Less Where
 * ------------------------------------------------------------------------------------------- */

void comparisons_give_bools_with_broadcasting_and_nan_unequal(void **state) {
    fixture_t *f = *state;
    const float a[4] = {1.0f, 2.0f, NAN, -0.0f};
    const float b[1] = {2.0f};
    const float z[4] = {0.0f, 3.0f, NAN, 0.0f};
    uint8_t got[6];

    targ_t ab[2] = {tensor(F32, a, 1, 4), tensor(F32, b, 0)};
    RUN_OK(f, "Equal", "f32,f32->bool", NULL, 2, ab, tensor(BOOL, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){0, 1, 0, 0}, got, 4);
    RUN_OK(f, "Greater", "f32,f32->bool", NULL, 2, ab, tensor(BOOL, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){0, 0, 0, 0}, got, 4);
    RUN_OK(f, "Less", "f32,f32->bool", NULL, 2, ab, tensor(BOOL, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){1, 0, 0, 1}, got, 4);
    targ_t az[2] = {tensor(F32, a, 1, 4), tensor(F32, z, 1, 4)};
    RUN_OK(f, "Equal", "f32,f32->bool", NULL, 2, az, tensor(BOOL, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){0, 0, 0, 1}, got, 4); /* -0 == 0, NaN != NaN */

    const int64_t i[3] = {-5, 0, 5};
    const int64_t j[2] = {0, 5};
    targ_t ij[2] = {tensor(I64, i, 2, 3, 1), tensor(I64, j, 2, 1, 2)};
    RUN_OK(f, "Greater", "i64,i64->bool", NULL, 2, ij, tensor(BOOL, NULL, 2, 3, 2), got);
    expect_u8((const uint8_t[]){0, 0, 0, 0, 1, 0}, got, 6);

    const uint8_t u[3] = {0, 200, 255};
    const uint8_t v[3] = {1, 100, 255};
    targ_t uv[2] = {tensor(U8, u, 1, 3), tensor(U8, v, 1, 3)};
    RUN_OK(f, "Less", "u8,u8->bool", NULL, 2, uv, tensor(BOOL, NULL, 1, 3), got);
    expect_u8((const uint8_t[]){1, 0, 0}, got, 3);
    RUN_OK(f, "Equal", "u8,u8->bool", NULL, 2, uv, tensor(BOOL, NULL, 1, 3), got);
    expect_u8((const uint8_t[]){0, 0, 1}, got, 3);

    const uint8_t p[4] = {0, 1, 0, 1};
    const uint8_t q[4] = {0, 0, 1, 1};
    targ_t pq[2] = {tensor(BOOL, p, 1, 4), tensor(BOOL, q, 1, 4)};
    RUN_OK(f, "Equal", "bool,bool->bool", NULL, 2, pq, tensor(BOOL, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){1, 0, 0, 1}, got, 4);

    const int32_t r[2] = {3, 4};
    const double d[2] = {3.0, 4.5};
    targ_t rr[2] = {tensor(I32, r, 1, 2), tensor(I32, r + 1, 0)};
    RUN_OK(f, "Equal", "i32,i32->bool", NULL, 2, rr, tensor(BOOL, NULL, 1, 2), got);
    expect_u8((const uint8_t[]){0, 1}, got, 2);
    targ_t dd[2] = {tensor(F64, d, 1, 2), tensor(F64, d, 0)};
    RUN_OK(f, "Greater", "f64,f64->bool", NULL, 2, dd, tensor(BOOL, NULL, 1, 2), got);
    expect_u8((const uint8_t[]){0, 1}, got, 2);
}

void where_selects_with_three_way_broadcasting_at_each_width(void **state) {
    fixture_t *f = *state;
    const uint8_t cond[2] = {1, 0};
    const float x[3] = {1, 2, 3};
    const float y[1] = {-1};
    float got[6];

    /* cond [2,1], x [1,3], y [] -> [2,3] */
    targ_t in[3] = {tensor(BOOL, cond, 2, 2, 1), tensor(F32, x, 2, 1, 3), tensor(F32, y, 0)};
    RUN_OK(f, "Where", "bool,f32,f32->f32", NULL, 3, in, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){1, 2, 3, -1, -1, -1}, got, 6, 0);

    const uint8_t c4[4] = {0, 1, 1, 0};
    const int64_t a64[4] = {1, 2, 3, 4};
    const int64_t b64[4] = {-1, -2, -3, -4};
    int64_t got64[4];
    targ_t in64[3] = {tensor(BOOL, c4, 1, 4), tensor(I64, a64, 1, 4), tensor(I64, b64, 1, 4)};
    RUN_OK(f, "Where", "bool,i64,i64->i64", NULL, 3, in64, tensor(I64, NULL, 1, 4), got64);
    expect_i64((const int64_t[]){-1, 2, 3, -4}, got64, 4);

    const uint8_t a8[2] = {7, 8};
    const uint8_t b8[2] = {0, 1};
    uint8_t got8[4];
    targ_t in8[3] = {tensor(BOOL, c4, 2, 2, 2), tensor(U8, a8, 1, 2), tensor(U8, b8, 2, 2, 1)};
    RUN_OK(f, "Where", "bool,u8,u8->u8", NULL, 3, in8, tensor(U8, NULL, 2, 2, 2), got8);
    expect_u8((const uint8_t[]){0, 8, 7, 1}, got8, 4);

    /* A scalar condition over an empty output is a no-op. */
    targ_t empty[3] = {tensor(BOOL, c4, 0), tensor(U8, a8, 1, 0), tensor(U8, b8, 0)};
    RUN_OK(f, "Where", "bool,u8,u8->u8", NULL, 3, empty, tensor(U8, NULL, 1, 0), NULL);

    targ_t bad[3] = {tensor(BOOL, c4, 1, 4), tensor(U8, a8, 1, 2), tensor(U8, b8, 0)};
    assert_int_equal(run(f, "Where", "bool,u8,u8->u8", NULL, 3, bad, tensor(U8, NULL, 1, 4), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 2 is []");
}

/* ---------------------------------------------------------------------------------------------
 * Unary ops
 * ------------------------------------------------------------------------------------------- */

void unary_float_ops_match_libm_in_f32_and_f64(void **state) {
    fixture_t *f = *state;
    const float x[5] = {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f};
    const double dx[5] = {-2.0, -0.5, 0.0, 0.5, 3.0};
    const float pos[3] = {0.25f, 1.0f, 4.0f};
    float got[5], want[5];
    double dgot[5], dwant[5];

    targ_t in = tensor(F32, x, 1, 5), din = tensor(F64, dx, 1, 5), pin = tensor(F32, pos, 1, 3);
#define CHECK_UNARY(op, fexpr, dexpr)                                            \
    do {                                                                         \
        RUN_OK(f, op, "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 5), got);   \
        for (int i = 0; i < 5; i++) {                                            \
            float v = x[i];                                                      \
            want[i] = (fexpr);                                                   \
        }                                                                        \
        expect_f32(want, got, 5, 1e-6);                                          \
        RUN_OK(f, op, "f64->f64", NULL, 1, &din, tensor(F64, NULL, 1, 5), dgot); \
        for (int i = 0; i < 5; i++) {                                            \
            double v = dx[i];                                                    \
            dwant[i] = (dexpr);                                                  \
        }                                                                        \
        expect_f64(dwant, dgot, 5, 1e-14);                                       \
    } while (0)
    CHECK_UNARY("Neg", -v, -v);
    CHECK_UNARY("Abs", fabsf(v), fabs(v));
    CHECK_UNARY("Exp", expf(v), exp(v));
    CHECK_UNARY("Relu", v < 0 ? 0.0f : v, v < 0 ? 0.0 : v);
    CHECK_UNARY("Sigmoid", 1.0f / (1.0f + expf(-v)), 1.0 / (1.0 + exp(-v)));
    CHECK_UNARY("Tanh", tanhf(v), tanh(v));
    CHECK_UNARY("Softplus", logf(1.0f + expf(v)), log(1.0 + exp(v)));
    CHECK_UNARY("Erf", erff(v), erf(v));
    CHECK_UNARY("LeakyRelu", v < 0 ? 0.01f * v : v, v < 0 ? 0.01 * v : v);
    CHECK_UNARY("Cos", cosf(v), cos(v));
    CHECK_UNARY("Sin", sinf(v), sin(v));
    CHECK_UNARY("Tan", tanf(v), tan(v));
    CHECK_UNARY("Atan", atanf(v), atan(v));
    CHECK_UNARY("Cosh", coshf(v), cosh(v));
    CHECK_UNARY("Sinh", sinhf(v), sinh(v));
    CHECK_UNARY("Asinh", asinhf(v), asinh(v));
    /* Outside their domains (|x| > 1, x < 1) these give NaN, which the checks match. */
    CHECK_UNARY("Acos", acosf(v), acos(v));
    CHECK_UNARY("Asin", asinf(v), asin(v));
    CHECK_UNARY("Atanh", atanhf(v), atanh(v));
    CHECK_UNARY("Acosh", acoshf(v), acosh(v));
#undef CHECK_UNARY
    /* Hand values for the ones with a domain. */
    RUN_OK(f, "Log", "f32->f32", NULL, 1, &pin, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){-1.3862944f, 0.0f, 1.3862944f}, got, 3, 1e-6);
    RUN_OK(f, "Sqrt", "f32->f32", NULL, 1, &pin, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){0.5f, 1.0f, 2.0f}, got, 3, 0);
    RUN_OK(f, "Reciprocal", "f32->f32", NULL, 1, &pin, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){4.0f, 1.0f, 0.25f}, got, 3, 0);
    RUN_OK(f, "Sqrt", "f64->f64", NULL, 1, &din, tensor(F64, NULL, 1, 5), dgot);
    assert_true(isnan(dgot[0]));
    expect_f64((const double[]){0.0, sqrt(0.5), sqrt(3.0)}, dgot + 2, 3, 0);
    RUN_OK(f, "Log", "f64->f64", NULL, 1, &din, tensor(F64, NULL, 1, 5), dgot);
    assert_true(isinf(dgot[2]) && dgot[2] < 0);
    RUN_OK(f, "Reciprocal", "f64->f64", NULL, 1, &din, tensor(F64, NULL, 1, 5), dgot);
    expect_f64((const double[]){-0.5, -2.0}, dgot, 2, 0);
}

void sigmoid_and_softplus_stay_finite_for_large_inputs(void **state) {
    fixture_t *f = *state;
    const float x[4] = {-1000.0f, -100.0f, 100.0f, 1000.0f};
    float got[4];
    targ_t in = tensor(F32, x, 1, 4);

    RUN_OK(f, "Sigmoid", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 4), got);
    expect_f32((const float[]){0.0f, expf(-100.0f), 1.0f, 1.0f}, got, 4, 1e-6);
    RUN_OK(f, "Softplus", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 4), got);
    expect_f32((const float[]){0.0f, expf(-100.0f), 100.0f, 1000.0f}, got, 4, 1e-6);
}

void leaky_relu_reads_alpha_and_integer_unary_ops_wrap(void **state) {
    fixture_t *f = *state;
    const float x[3] = {-4.0f, 0.0f, 2.0f};
    const test_attr_t alpha[] = {A_FLOAT("alpha", 0.5), A_END};
    float got[3];
    targ_t in = tensor(F32, x, 1, 3);

    RUN_OK(f, "LeakyRelu", "f32->f32", alpha, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){-2.0f, 0.0f, 2.0f}, got, 3, 0);

    const int32_t i[4] = {INT32_MIN, -3, 0, 5};
    int32_t igot[4];
    targ_t iin = tensor(I32, i, 1, 4);
    RUN_OK(f, "Neg", "i32->i32", NULL, 1, &iin, tensor(I32, NULL, 1, 4), igot);
    expect_i32((const int32_t[]){INT32_MIN, 3, 0, -5}, igot, 4);
    RUN_OK(f, "Abs", "i32->i32", NULL, 1, &iin, tensor(I32, NULL, 1, 4), igot);
    expect_i32((const int32_t[]){INT32_MIN, 3, 0, 5}, igot, 4);
    RUN_OK(f, "Relu", "i32->i32", NULL, 1, &iin, tensor(I32, NULL, 1, 4), igot);
    expect_i32((const int32_t[]){0, 0, 0, 5}, igot, 4);

    const int64_t l[2] = {-7, 8};
    int64_t lgot[2];
    targ_t lin = tensor(I64, l, 2, 1, 2);
    RUN_OK(f, "Abs", "i64->i64", NULL, 1, &lin, tensor(I64, NULL, 2, 1, 2), lgot);
    expect_i64((const int64_t[]){7, 8}, lgot, 2);
    RUN_OK(f, "Relu", "i64->i64", NULL, 1, &lin, tensor(I64, NULL, 2, 1, 2), lgot);
    expect_i64((const int64_t[]){0, 8}, lgot, 2);
}

void sign_round_is_nan_and_is_inf_handle_zeros_halves_and_infinities(void **state) {
    fixture_t *f = *state;
    const float x[7] = {-2.5f, -0.5f, 0.5f, 1.5f, 2.5f, -INFINITY, NAN};
    const test_attr_t positive_only[] = {A_INT("detect_negative", 0), A_INT("detect_positive", 1),
                                         A_END};
    float got[7];
    uint8_t bits[7];
    targ_t in = tensor(F32, x, 1, 7);

    /* Halves round to even, as ONNX says. */
    RUN_OK(f, "Round", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 7), got);
    expect_f32((const float[]){-2.0f, -0.0f, 0.0f, 2.0f, 2.0f, -INFINITY, NAN}, got, 7, 0);
    RUN_OK(f, "Floor", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 7), got);
    expect_f32((const float[]){-3.0f, -1.0f, 0.0f, 1.0f, 2.0f, -INFINITY, NAN}, got, 7, 0);
    RUN_OK(f, "Ceil", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 7), got);
    expect_f32((const float[]){-2.0f, -0.0f, 1.0f, 2.0f, 3.0f, -INFINITY, NAN}, got, 7, 0);
    RUN_OK(f, "Sign", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 7), got);
    expect_f32((const float[]){-1, -1, 1, 1, 1, -1, NAN}, got, 7, 0);
    RUN_OK(f, "IsNaN", "f32->bool", NULL, 1, &in, tensor(BOOL, NULL, 1, 7), bits);
    expect_u8((const uint8_t[]){0, 0, 0, 0, 0, 0, 1}, bits, 7);
    RUN_OK(f, "IsInf", "f32->bool", NULL, 1, &in, tensor(BOOL, NULL, 1, 7), bits);
    expect_u8((const uint8_t[]){0, 0, 0, 0, 0, 1, 0}, bits, 7);

    const double dx[3] = {INFINITY, -INFINITY, 1e308};
    targ_t din = tensor(F64, dx, 1, 3);
    RUN_OK(f, "IsInf", "f64->bool", positive_only, 1, &din, tensor(BOOL, NULL, 1, 3), bits);
    expect_u8((const uint8_t[]){1, 0, 0}, bits, 3);

    const int8_t i[4] = {INT8_MIN, -3, 0, 5};
    int8_t igot[4];
    targ_t iin = tensor(I8, i, 1, 4);
    RUN_OK(f, "Sign", "i8->i8", NULL, 1, &iin, tensor(I8, NULL, 1, 4), igot);
    assert_memory_equal(igot, ((const int8_t[]){-1, -1, 0, 1}), 4);
}

void logic_ops_broadcast_and_read_any_nonzero_byte_as_true(void **state) {
    fixture_t *f = *state;
    const uint8_t a[4] = {0, 1, 2, 0}; /* [2,2]; 2 is a true bool byte */
    const uint8_t b[2] = {1, 0};       /* [2] */
    uint8_t got[4];
    targ_t in[2] = {tensor(BOOL, a, 2, 2, 2), tensor(BOOL, b, 1, 2)};

    RUN_OK(f, "And", "bool,bool->bool", NULL, 2, in, tensor(BOOL, NULL, 2, 2, 2), got);
    expect_u8((const uint8_t[]){0, 0, 1, 0}, got, 4);
    RUN_OK(f, "Or", "bool,bool->bool", NULL, 2, in, tensor(BOOL, NULL, 2, 2, 2), got);
    expect_u8((const uint8_t[]){1, 1, 1, 0}, got, 4);
    RUN_OK(f, "Xor", "bool,bool->bool", NULL, 2, in, tensor(BOOL, NULL, 2, 2, 2), got);
    expect_u8((const uint8_t[]){1, 1, 0, 0}, got, 4);
    RUN_OK(f, "Not", "bool->bool", NULL, 1, in, tensor(BOOL, NULL, 2, 2, 2), got);
    expect_u8((const uint8_t[]){1, 0, 0, 1}, got, 4);
}

void mod_takes_the_divisors_sign_or_with_fmod_the_dividends(void **state) {
    fixture_t *f = *state;
    const int32_t a[5] = {7, -7, 7, -7, INT32_MIN};
    const int32_t b[5] = {3, 3, -3, -3, -1};
    const test_attr_t floor_mod[] = {A_INT("fmod", 0), A_END};
    const test_attr_t trunc_mod[] = {A_INT("fmod", 1), A_END};
    int32_t got[5];
    targ_t in[2] = {tensor(I32, a, 1, 5), tensor(I32, b, 1, 5)};

    RUN_OK(f, "Mod", "i32,i32->i32", floor_mod, 2, in, tensor(I32, NULL, 1, 5), got);
    expect_i32((const int32_t[]){1, 2, -2, -1, 0}, got, 5);
    RUN_OK(f, "Mod", "i32,i32->i32", trunc_mod, 2, in, tensor(I32, NULL, 1, 5), got);
    expect_i32((const int32_t[]){1, -1, 1, -1, 0}, got, 5);

    const float x[3] = {5.5f, -5.5f, 5.5f};
    const float y[1] = {2.0f};
    float fgot[3];
    targ_t fin[2] = {tensor(F32, x, 1, 3), tensor(F32, y, 0)};
    RUN_OK(f, "Mod", "f32,f32->f32", trunc_mod, 2, fin, tensor(F32, NULL, 1, 3), fgot);
    expect_f32((const float[]){1.5f, -1.5f, 1.5f}, fgot, 3, 0);

    const uint64_t u[2] = {UINT64_MAX, 9};
    const uint64_t zero[2] = {4, 0};
    targ_t uin[2] = {tensor(U64, u, 1, 2), tensor(U64, zero, 1, 2)};
    f->name = "rem";
    assert_int_equal(
        run(f, "Mod", "u64,u64->u64", floor_mod, 2, uin, tensor(U64, NULL, 1, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Mod \"rem\"");
    assert_message_contains(f, "division by zero");
    assert_message_contains(f, "element 1");
}

void bit_shift_moves_bits_either_way_and_gives_zero_past_the_width(void **state) {
    fixture_t *f = *state;
    const uint8_t x[4] = {1, 0x80, 0xff, 3};
    const uint8_t y[4] = {1, 1, 8, 0};
    const test_attr_t left[] = {A_INT("direction", 0), A_END};
    const test_attr_t right[] = {A_INT("direction", 1), A_END};
    uint8_t got[4];
    targ_t in[2] = {tensor(U8, x, 1, 4), tensor(U8, y, 1, 4)};

    RUN_OK(f, "BitShift", "u8,u8->u8", left, 2, in, tensor(U8, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){2, 0, 0, 3}, got, 4);
    RUN_OK(f, "BitShift", "u8,u8->u8", right, 2, in, tensor(U8, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){0, 0x40, 0, 3}, got, 4);

    const uint64_t big[2] = {1, UINT64_MAX};
    const uint64_t by[1] = {63};
    uint64_t bgot[2];
    targ_t bin[2] = {tensor(U64, big, 1, 2), tensor(U64, by, 0)};
    RUN_OK(f, "BitShift", "u64,u64->u64", left, 2, bin, tensor(U64, NULL, 1, 2), bgot);
    assert_true(bgot[0] == UINT64_C(1) << 63 && bgot[1] == UINT64_C(1) << 63);
}

void min_and_max_fold_any_number_of_inputs_with_broadcasting(void **state) {
    fixture_t *f = *state;
    const float a[4] = {1, 5, -2, 8}; /* [2,2] */
    const float b[2] = {3, NAN};      /* [2] */
    const float c[1] = {0};           /* [] */
    float got[4];
    targ_t in[3] = {tensor(F32, a, 2, 2, 2), tensor(F32, b, 1, 2), tensor(F32, c, 0)};

    /* NaN wins, as in numpy's minimum and maximum. */
    RUN_OK(f, "Min", "f32...->f32", NULL, 3, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){0, NAN, -2, NAN}, got, 4, 0);
    RUN_OK(f, "Max", "f32...->f32", NULL, 3, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){3, NAN, 3, NAN}, got, 4, 0);
    /* One input is a copy. */
    RUN_OK(f, "Max", "f32...->f32", NULL, 1, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32(a, got, 4, 0);

    /* Five inputs: more than the three a kernel call keeps views of. */
    const int8_t v[5][2] = {{1, -9}, {4, 2}, {INT8_MIN, 3}, {0, 0}, {7, INT8_MAX}};
    int8_t igot[2];
    targ_t many[5];
    for (int i = 0; i < 5; i++)
        many[i] = tensor(I8, v[i], 1, 2);
    RUN_OK(f, "Max", "i8...->i8", NULL, 5, many, tensor(I8, NULL, 1, 2), igot);
    assert_memory_equal(igot, ((const int8_t[]){7, INT8_MAX}), 2);
    RUN_OK(f, "Min", "i8...->i8", NULL, 5, many, tensor(I8, NULL, 1, 2), igot);
    assert_memory_equal(igot, ((const int8_t[]){INT8_MIN, -9}), 2);

    f->name = "lo";
    targ_t bad[2] = {tensor(F32, a, 2, 2, 2), tensor(F32, a, 1, 3)};
    assert_int_equal(run(f, "Min", "f32...->f32", NULL, 2, bad, tensor(F32, NULL, 2, 2, 2), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Min \"lo\"");
    assert_message_contains(f, "do not broadcast");
}

void unary_ops_handle_scalars_and_empty_tensors_and_refuse_other_shapes(void **state) {
    fixture_t *f = *state;
    const double x[1] = {0.0};
    double got[1];
    targ_t scalar = tensor(F64, x, 0);

    RUN_OK(f, "Exp", "f64->f64", NULL, 1, &scalar, tensor(F64, NULL, 0), got);
    assert_true(got[0] == 1.0);
    targ_t empty = tensor(F64, x, 3, 2, 0, 4);
    RUN_OK(f, "Tanh", "f64->f64", NULL, 1, &empty, tensor(F64, NULL, 3, 2, 0, 4), NULL);

    f->name = "act";
    targ_t two = tensor(F64, x, 1, 1);
    assert_int_equal(run(f, "Exp", "f64->f64", NULL, 1, &two, tensor(F64, NULL, 2, 1, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Exp \"act\"");
    assert_message_contains(f, "input 0 is [1], output is [1,1]");
}

/* ---------------------------------------------------------------------------------------------
 * Cast
 * ------------------------------------------------------------------------------------------- */

void cast_truncates_toward_zero_and_maps_bools_to_0_and_1(void **state) {
    fixture_t *f = *state;
    const float x[6] = {2.7f, -2.7f, 0.0f, -0.0f, 255.9f, NAN};
    const test_attr_t to_i64[] = {A_INT("to", I64), A_END};
    const test_attr_t to_bool[] = {A_INT("to", BOOL), A_END};
    const test_attr_t to_u8[] = {A_INT("to", U8), A_END};
    targ_t in = tensor(F32, x, 1, 6);
    int64_t got64[6];
    uint8_t got8[6];

    RUN_OK(f, "Cast", "f32->i64", to_i64, 1, &in, tensor(I64, NULL, 1, 6), got64);
    expect_i64((const int64_t[]){2, -2, 0, 0, 255, 0}, got64, 6);
    RUN_OK(f, "Cast", "f32->bool", to_bool, 1, &in, tensor(BOOL, NULL, 1, 6), got8);
    expect_u8((const uint8_t[]){1, 1, 0, 0, 1, 1}, got8, 6);
    RUN_OK(f, "Cast", "f32->u8", to_u8, 1, &in, tensor(U8, NULL, 1, 6), got8);
    expect_u8((const uint8_t[]){2, 0, 0, 0, 255, 0}, got8, 6);

    const uint8_t b[3] = {0, 1, 1};
    const test_attr_t to_f64[] = {A_INT("to", F64), A_END};
    double gotd[3];
    targ_t bin = tensor(BOOL, b, 1, 3);
    RUN_OK(f, "Cast", "bool->f64", to_f64, 1, &bin, tensor(F64, NULL, 1, 3), gotd);
    expect_f64((const double[]){0.0, 1.0, 1.0}, gotd, 3, 0);

    const int64_t big[3] = {(int64_t)1 << 32 | 5, -1, 300};
    const test_attr_t to_i32[] = {A_INT("to", I32), A_END};
    int32_t got32[3];
    targ_t lin = tensor(I64, big, 1, 3);
    RUN_OK(f, "Cast", "i64->i32", to_i32, 1, &lin, tensor(I32, NULL, 1, 3), got32);
    expect_i32((const int32_t[]){5, -1, 300}, got32, 3);
    RUN_OK(f, "Cast", "i64->u8", to_u8, 1, &lin, tensor(U8, NULL, 1, 3), got8);
    expect_u8((const uint8_t[]){5, 255, 44}, got8, 3);

    const double huge[3] = {1e30, -1e30, -2147483648.9};
    targ_t hin = tensor(F64, huge, 1, 3);
    RUN_OK(f, "Cast", "f64->i32", to_i32, 1, &hin, tensor(I32, NULL, 1, 3), got32);
    expect_i32((const int32_t[]){INT32_MAX, INT32_MIN, INT32_MIN}, got32, 3);

    const int32_t small[2] = {16777217, -3};
    const test_attr_t to_f32[] = {A_INT("to", F32), A_END};
    float gotf[2];
    targ_t sin_ = tensor(I32, small, 1, 2);
    RUN_OK(f, "Cast", "i32->f32", to_f32, 1, &sin_, tensor(F32, NULL, 1, 2), gotf);
    expect_f32((const float[]){16777216.0f, -3.0f}, gotf, 2, 0);
}

void cast_refuses_a_to_attribute_that_disagrees_with_the_output(void **state) {
    fixture_t *f = *state;
    const float x[1] = {1.0f};
    const test_attr_t to_f64[] = {A_INT("to", F64), A_END};
    targ_t in = tensor(F32, x, 0);
    f->name = "c1";

    assert_int_equal(run(f, "Cast", "f32->i32", to_f64, 1, &in, tensor(I32, NULL, 0), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Cast \"c1\"");
    assert_message_contains(f, "f64");
    assert_message_contains(f, "i32");
}
