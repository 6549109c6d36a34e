/*
 * The CPU driver's kernels, part of the cpu_kernels test (runner in cpu_kernels_test.c):
 * MatMul, Gemm, the reductions, Softmax, LogSoftmax, ArgMax and ArgMin.
 */
#include "cpu_kernels_harness.h"

/* ---------------------------------------------------------------------------------------------
 * MatMul Gemm
 * ------------------------------------------------------------------------------------------- */

/* out[b] = a[b mod] @ b[b mod] with numpy broadcasting, by hand, in double. */
static void naive_batched_matmul(const float *a, const int64_t *ad, int ar, const float *b,
                                 const int64_t *bd, int br, float *out, int64_t batches,
                                 const int64_t *bdims, int nb) {
    int64_t m = ad[ar - 2], k = ad[ar - 1], n = bd[br - 1];
    for (int64_t i = 0; i < batches; i++) {
        int64_t rest = i, aoff = 0, boff = 0, astep = 1, bstep = 1;
        for (int d = nb - 1; d >= 0; d--) {
            int64_t idx = rest % bdims[d];
            rest /= bdims[d];
            int ai = ar - 2 - (nb - d), bi = br - 2 - (nb - d);
            int64_t adim = ai >= 0 ? ad[ai] : 1, bdim = bi >= 0 ? bd[bi] : 1;
            aoff += (adim == 1 ? 0 : idx) * astep;
            boff += (bdim == 1 ? 0 : idx) * bstep;
            astep *= adim;
            bstep *= bdim;
        }
        for (int64_t r = 0; r < m; r++)
            for (int64_t c = 0; c < n; c++) {
                double s = 0;
                for (int64_t t = 0; t < k; t++)
                    s += (double)a[aoff * m * k + r * k + t] * b[boff * k * n + t * n + c];
                out[i * m * n + r * n + c] = (float)s;
            }
    }
}

void matmul_multiplies_matrices_in_f32_and_f64(void **state) {
    fixture_t *f = *state;
    const float a[6] = {1, 2, 3, 4, 5, 6};
    const float b[6] = {7, 8, 9, 10, 11, 12};
    float got[4];
    targ_t in[2] = {tensor(F32, a, 2, 2, 3), tensor(F32, b, 2, 3, 2)};

    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){58, 64, 139, 154}, got, 4, 0);

    const double da[4] = {1, 2, 3, 4};
    const double db[4] = {0.5, -1, 2, 0};
    double dgot[4];
    targ_t din[2] = {tensor(F64, da, 2, 2, 2), tensor(F64, db, 2, 2, 2)};
    RUN_OK(f, "MatMul", "f64,f64->f64", NULL, 2, din, tensor(F64, NULL, 2, 2, 2), dgot);
    expect_f64((const double[]){4.5, -1, 9.5, -3}, dgot, 4, 0);
}

void matmul_promotes_one_dimensional_operands_and_drops_the_added_dim(void **state) {
    fixture_t *f = *state;
    const float v[3] = {1, 2, 3};
    const float m[6] = {1, 2, 3, 4, 5, 6}; /* [3,2] or [2,3] */
    float got[2];

    targ_t vm[2] = {tensor(F32, v, 1, 3), tensor(F32, m, 2, 3, 2)};
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, vm, tensor(F32, NULL, 1, 2), got);
    expect_f32((const float[]){22, 28}, got, 2, 0);
    targ_t mv[2] = {tensor(F32, m, 2, 2, 3), tensor(F32, v, 1, 3)};
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, mv, tensor(F32, NULL, 1, 2), got);
    expect_f32((const float[]){14, 32}, got, 2, 0);
    targ_t vv[2] = {tensor(F32, v, 1, 3), tensor(F32, v, 1, 3)};
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, vv, tensor(F32, NULL, 0), got);
    assert_true(got[0] == 14.0f);
    /* A batch of matrices times a vector: [2,2,3] x [3] -> [2,2]. */
    const float bm[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
    float got4[4];
    targ_t bv[2] = {tensor(F32, bm, 3, 2, 2, 3), tensor(F32, v, 1, 3)};
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, bv, tensor(F32, NULL, 2, 2, 2), got4);
    expect_f32((const float[]){1, 2, 3, 6}, got4, 4, 0);
}

void matmul_broadcasts_batch_dims_against_a_naive_loop(void **state) {
    fixture_t *f = *state;
    /* a [2,1,3,4], b [3,4,2] -> [2,3,3,2]; then a [3,4] against b [2,4,5] (a broadcast);
     * then a [2,3,3,4] against b [4,2] (one stacked GEMM). */
    static float a[2 * 3 * 3 * 4], b[3 * 4 * 5 * 2], got[2 * 3 * 3 * 5], want[2 * 3 * 3 * 5];
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        a[i] = (float)((int)(i * 7 % 11) - 5);
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        b[i] = (float)((int)(i * 5 % 13) - 6) * 0.5f;

    {
        const int64_t ad[4] = {2, 1, 3, 4}, bd[3] = {3, 4, 2}, batch[2] = {2, 3};
        targ_t in[2] = {tensor(F32, a, 4, 2, 1, 3, 4), tensor(F32, b, 3, 3, 4, 2)};
        RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 4, 2, 3, 3, 2), got);
        naive_batched_matmul(a, ad, 4, b, bd, 3, want, 6, batch, 2);
        expect_f32(want, got, 36, 1e-6);
    }
    {
        const int64_t ad[2] = {3, 4}, bd[3] = {2, 4, 5}, batch[1] = {2};
        targ_t in[2] = {tensor(F32, a, 2, 3, 4), tensor(F32, b, 3, 2, 4, 5)};
        RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 3, 2, 3, 5), got);
        naive_batched_matmul(a, ad, 2, b, bd, 3, want, 2, batch, 1);
        expect_f32(want, got, 30, 1e-6);
    }
    {
        const int64_t ad[4] = {2, 3, 3, 4}, bd[2] = {4, 2}, batch[2] = {2, 3};
        targ_t in[2] = {tensor(F32, a, 4, 2, 3, 3, 4), tensor(F32, b, 2, 4, 2)};
        RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 4, 2, 3, 3, 2), got);
        naive_batched_matmul(a, ad, 4, b, bd, 2, want, 6, batch, 2);
        expect_f32(want, got, 36, 1e-6);
    }
}

void matmul_with_an_empty_inner_dim_gives_zeros_and_empty_outputs_are_no_ops(void **state) {
    fixture_t *f = *state;
    const float x[1] = {0};
    float got[6];

    targ_t k0[2] = {tensor(F32, x, 2, 2, 0), tensor(F32, x, 2, 0, 3)};
    memset(got, 0xff, sizeof got);
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, k0, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){0, 0, 0, 0, 0, 0}, got, 6, 0);
    targ_t m0[2] = {tensor(F32, x, 2, 0, 4), tensor(F32, NULL, 2, 4, 3)};
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, m0, tensor(F32, NULL, 2, 0, 3), NULL);
}

void matmul_refuses_inner_dimensions_that_differ_naming_both_shapes(void **state) {
    fixture_t *f = *state;
    targ_t in[2] = {tensor(F32, NULL, 2, 64, 784), tensor(F32, NULL, 2, 748, 256)};
    f->name = "fc1";

    assert_int_equal(
        run(f, "MatMul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 64, 256), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f,
                            "MatMul \"fc1\": inner dimensions differ: input 0 is [64,784], "
                            "input 1 is [748,256]");

    targ_t batch[2] = {tensor(F32, NULL, 3, 2, 1, 1), tensor(F32, NULL, 3, 3, 1, 1)};
    assert_int_equal(
        run(f, "MatMul", "f32,f32->f32", NULL, 2, batch, tensor(F32, NULL, 3, 3, 1, 1), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "batch dimensions do not broadcast");
    targ_t ok[2] = {tensor(F32, NULL, 2, 1, 1), tensor(F32, NULL, 2, 1, 1)};
    assert_int_equal(run(f, "MatMul", "f32,f32->f32", NULL, 2, ok, tensor(F32, NULL, 1, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [1]");
}

void gemm_applies_transposes_alpha_beta_and_broadcasts_c(void **state) {
    fixture_t *f = *state;
    const float a[6] = {1, 4, 2, 5, 3, 6};    /* [3,2]: A^T is [[1,2,3],[4,5,6]] */
    const float b[6] = {7, 9, 11, 8, 10, 12}; /* [2,3]: B^T is [[7,8],[9,10],[11,12]] */
    const float c_row[2] = {1, 2};
    const float c_col[2] = {100, 200};
    const float c_scalar[1] = {0.5f};
    const test_attr_t attrs[] = {A_INT("transA", 1), A_INT("transB", 1), A_FLOAT("alpha", 2.0),
                                 A_FLOAT("beta", 3.0), A_END};
    float got[4];

    /* A^T B^T = [[58,64],[139,154]]; 2 * that + 3 * C */
    targ_t in[3] = {tensor(F32, a, 2, 3, 2), tensor(F32, b, 2, 2, 3), tensor(F32, c_row, 1, 2)};
    RUN_OK(f, "Gemm", "f32,f32,f32->f32", attrs, 3, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){119, 134, 281, 314}, got, 4, 0);
    in[2] = tensor(F32, c_col, 2, 2, 1);
    RUN_OK(f, "Gemm", "f32,f32,f32->f32", attrs, 3, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){416, 428, 878, 908}, got, 4, 0);
    in[2] = tensor(F32, c_scalar, 0);
    RUN_OK(f, "Gemm", "f32,f32,f32->f32", attrs, 3, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){117.5f, 129.5f, 279.5f, 309.5f}, got, 4, 0);
    /* Without C, and with the default attributes: plain A B. */
    const float a2[4] = {1, 2, 3, 4};
    targ_t plain[2] = {tensor(F32, a2, 2, 2, 2), tensor(F32, a2, 2, 2, 2)};
    RUN_OK(f, "Gemm", "f32,f32->f32", NULL, 2, plain, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){7, 10, 15, 22}, got, 4, 0);

    const double da[2] = {1, 2};
    const double db[2] = {3, 4};
    const double dc[1] = {10};
    double dgot[4];
    const test_attr_t beta0[] = {A_FLOAT("beta", 0.0), A_END};
    targ_t din[3] = {tensor(F64, da, 2, 2, 1), tensor(F64, db, 2, 1, 2), tensor(F64, dc, 1, 1)};
    RUN_OK(f, "Gemm", "f64,f64,f64->f64", NULL, 3, din, tensor(F64, NULL, 2, 2, 2), dgot);
    expect_f64((const double[]){13, 14, 16, 18}, dgot, 4, 0);
    RUN_OK(f, "Gemm", "f64,f64,f64->f64", beta0, 3, din, tensor(F64, NULL, 2, 2, 2), dgot);
    expect_f64((const double[]){3, 4, 6, 8}, dgot, 4, 0);
    /* K = 0: Y = beta * C. */
    targ_t k0[3] = {tensor(F64, da, 2, 2, 0), tensor(F64, db, 2, 0, 2), tensor(F64, dc, 0)};
    const test_attr_t beta2[] = {A_FLOAT("beta", 2.0), A_END};
    RUN_OK(f, "Gemm", "f64,f64,f64->f64", beta2, 3, k0, tensor(F64, NULL, 2, 2, 2), dgot);
    expect_f64((const double[]){20, 20, 20, 20}, dgot, 4, 0);
}

void gemm_refuses_a_c_that_does_not_broadcast_to_the_output(void **state) {
    fixture_t *f = *state;
    const float x[6] = {0};
    targ_t in[3] = {tensor(F32, x, 2, 2, 2), tensor(F32, x, 2, 2, 3), tensor(F32, x, 1, 2)};
    f->name = "g";

    assert_int_equal(
        run(f, "Gemm", "f32,f32,f32->f32", NULL, 3, in, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Gemm \"g\"");
    assert_message_contains(f, "input 2 (C) is [2]");
    assert_message_contains(f, "[2,3]");
}

/* ---------------------------------------------------------------------------------------------
 * Reductions
 * ------------------------------------------------------------------------------------------- */

void reduce_sum_over_one_axis_with_and_without_keepdims(void **state) {
    fixture_t *f = *state;
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_END};
    const test_attr_t ax0_flat[] = {A_INTS("axes", 0), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3);
    float got[3];

    RUN_OK(f, "ReduceSum", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){6, 15}, got, 2, 0);
    RUN_OK(f, "ReduceSum", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){5, 7, 9}, got, 3, 0);
    RUN_OK(f, "ReduceMean", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){2, 5}, got, 2, 0);
    RUN_OK(f, "ReduceMax", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){4, 5, 6}, got, 3, 0);

    const int32_t ix[6] = {INT32_MAX, 1, -5, 7, 0, -1};
    int32_t igot[3];
    targ_t iin = tensor(I32, ix, 2, 2, 3);
    RUN_OK(f, "ReduceSum", "i32->i32", ax1, 1, &iin, tensor(I32, NULL, 2, 2, 1), igot);
    /* MAX + 1 - 5 wraps twice on the way and lands in range. */
    expect_i32((const int32_t[]){INT32_MAX - 4, 6}, igot, 2);
    RUN_OK(f, "ReduceMax", "i32->i32", ax0_flat, 1, &iin, tensor(I32, NULL, 1, 3), igot);
    expect_i32((const int32_t[]){INT32_MAX, 1, -1}, igot, 3);
}

/* Sum of x[i,j,k,l] over the axes flagged in @p red, for a [2,3,4,5] input, by hand. */
static void naive_reduce_sum_2345(const double *x, const int *red, double *out) {
    const int dims[4] = {2, 3, 4, 5};
    int od[4];
    for (int d = 0; d < 4; d++)
        od[d] = red[d] ? 1 : dims[d];
    memset(out, 0, sizeof(double) * (size_t)(od[0] * od[1] * od[2] * od[3]));
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                for (int l = 0; l < 5; l++) {
                    int oi = red[0] ? 0 : i, oj = red[1] ? 0 : j, ok = red[2] ? 0 : k,
                        ol = red[3] ? 0 : l;
                    out[((oi * od[1] + oj) * od[2] + ok) * od[3] + ol] +=
                        x[((i * 3 + j) * 4 + k) * 5 + l];
                }
}

void reduce_over_every_combination_of_axes_matches_a_naive_loop(void **state) {
    fixture_t *f = *state;
    double x[120], want[120], got[120];
    const int dims[4] = {2, 3, 4, 5};

    for (int i = 0; i < 120; i++)
        x[i] = (double)((i * 37) % 19) - 9.0 + 0.25 * (i % 3);
    for (int mask = 1; mask < 16; mask++) {
        int red[4];
        int64_t axes[4];
        uint64_t n_axes = 0;
        targ_t out = tensor(F64, NULL, 4, 1, 1, 1, 1);
        size_t count = 1;
        for (int d = 0; d < 4; d++) {
            red[d] = (mask >> d) & 1;
            if (red[d])
                axes[n_axes++] = d;
            out.dims[d] = red[d] ? 1 : dims[d];
            count *= (size_t)out.dims[d];
        }
        test_attr_t attrs[2] = {
            {.name = "axes", .type = SES_DRV_ATTR_INTS, .ints = axes, .n_ints = n_axes}, A_END};
        targ_t in = tensor(F64, x, 4, 2, 3, 4, 5);
        RUN_OK(f, "ReduceSum", "f64->f64", attrs, 1, &in, out, got);
        naive_reduce_sum_2345(x, red, want);
        expect_f64(want, got, count, 1e-12);
    }
}

void reduce_max_propagates_nan_and_reduce_mean_divides_by_the_count(void **state) {
    fixture_t *f = *state;
    const float x[20] = {1, NAN, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
    const test_attr_t all[] = {A_INTS("axes", 0), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, x, 1, 20);
    float got[1];

    RUN_OK(f, "ReduceMax", "f32->f32", all, 1, &in, tensor(F32, NULL, 0), got);
    assert_true(isnan(got[0]));
    targ_t tail = tensor(F32, x + 2, 1, 18);
    RUN_OK(f, "ReduceMax", "f32->f32", all, 1, &tail, tensor(F32, NULL, 0), got);
    assert_true(got[0] == 20.0f);
    RUN_OK(f, "ReduceMean", "f32->f32", all, 1, &tail, tensor(F32, NULL, 0), got);
    assert_true(got[0] == 11.5f);
    RUN_OK(f, "ReduceSum", "f32->f32", all, 1, &tail, tensor(F32, NULL, 0), got);
    assert_true(got[0] == 207.0f);

    const int64_t l[4] = {-3, -9, -1, -4};
    int64_t lgot[2];
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_INT("keepdims", 0), A_END};
    targ_t lin = tensor(I64, l, 2, 2, 2);
    RUN_OK(f, "ReduceMax", "i64->i64", ax1, 1, &lin, tensor(I64, NULL, 1, 2), lgot);
    expect_i64((const int64_t[]){-3, -1}, lgot, 2);
}

void reducing_an_empty_axis_sums_to_zero_averages_to_nan_and_has_no_max(void **state) {
    fixture_t *f = *state;
    const double x[1] = {0};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_END};
    targ_t in = tensor(F64, x, 2, 2, 0);
    double got[2];

    RUN_OK(f, "ReduceSum", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    expect_f64((const double[]){0, 0}, got, 2, 0);
    RUN_OK(f, "ReduceMean", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    assert_true(isnan(got[0]) && isnan(got[1]));
    f->name = "rmax";
    assert_int_equal(run(f, "ReduceMax", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ReduceMax \"rmax\"");
    assert_message_contains(f, "empty");
    /* Reducing the non-empty axis of [2,0] leaves an empty output: a no-op for all three. */
    const test_attr_t ax0[] = {A_INTS("axes", 0), A_END};
    RUN_OK(f, "ReduceMax", "f64->f64", ax0, 1, &in, tensor(F64, NULL, 2, 1, 0), NULL);
}

/* ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare: the
 * entries exist in the dtypes they carry, and each agrees with its definition over the
 * innermost axis (a contiguous row) and the outer one (whole rows folded in). */
void the_other_reductions_match_their_definitions(void **state) {
    fixture_t *f = *state;
    static const char *const have[][2] = {
        {"ReduceMin", "i32->i32"},       {"ReduceProd", "i64->i64"},
        {"ReduceL1", "f64->f64"},        {"ReduceL2", "f32->f32"},
        {"ReduceLogSum", "f64->f64"},    {"ReduceLogSumExp", "f32->f32"},
        {"ReduceSumSquare", "i32->i32"}, {"ArgMin", "i64->i64"},
    };
    static const char *const lack[][2] = {
        {"ReduceL2", "i32->i32"},
        {"ReduceLogSum", "i64->i64"},
        {"ReduceLogSumExp", "i32->i32"},
    };
    const float x[6] = {1, -2, 3, -4, 5, -6}, p[6] = {1, 2, 3, 4, 5, 6};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_END};
    const test_attr_t ax0_flat[] = {A_INTS("axes", 0), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3), pin = tensor(F32, p, 2, 2, 3);
    float got[3];

    for (size_t i = 0; i < sizeof have / sizeof have[0]; i++)
        if (!find_kernel_on(f->api, f->device, have[i][0], have[i][1]))
            fail_msg("no %s %s", have[i][0], have[i][1]);
    for (size_t i = 0; i < sizeof lack / sizeof lack[0]; i++)
        if (find_kernel_on(f->api, f->device, lack[i][0], lack[i][1]))
            fail_msg("%s %s should not exist", lack[i][0], lack[i][1]);

    RUN_OK(f, "ReduceMin", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){-2, -6}, got, 2, 0);
    RUN_OK(f, "ReduceMin", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){-4, -2, -6}, got, 3, 0);
    RUN_OK(f, "ReduceProd", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){-6, 120}, got, 2, 0);
    RUN_OK(f, "ReduceProd", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){-4, -10, -18}, got, 3, 0);
    RUN_OK(f, "ReduceL1", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){6, 15}, got, 2, 0);
    RUN_OK(f, "ReduceL1", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){5, 7, 9}, got, 3, 0);
    RUN_OK(f, "ReduceSumSquare", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){14, 77}, got, 2, 0);
    RUN_OK(f, "ReduceSumSquare", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){17, 29, 45}, got, 3, 0);
    RUN_OK(f, "ReduceL2", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){sqrtf(14), sqrtf(77)}, got, 2, 1e-6);
    RUN_OK(f, "ReduceL2", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){sqrtf(17), sqrtf(29), sqrtf(45)}, got, 3, 1e-6);
    RUN_OK(f, "ReduceLogSum", "f32->f32", ax1, 1, &pin, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){logf(6), logf(15)}, got, 2, 1e-6);
    RUN_OK(f, "ReduceLogSum", "f32->f32", ax0_flat, 1, &pin, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){logf(5), logf(7), logf(9)}, got, 3, 1e-6);
    RUN_OK(f, "ReduceLogSumExp", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){(float)log(exp(1) + exp(-2) + exp(3)),
                               (float)log(exp(-4) + exp(5) + exp(-6))},
               got, 2, 1e-6);
    RUN_OK(f, "ReduceLogSumExp", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){(float)log(exp(1) + exp(-4)), (float)log(exp(-2) + exp(5)),
                               (float)log(exp(3) + exp(-6))},
               got, 3, 1e-6);

    /* Rows of 20 go through the 8-lane loops, mapped. */
    double r[40], want[2] = {0, 0}, sq[2] = {0, 0}, dgot[2];
    for (int i = 0; i < 40; i++) {
        r[i] = (double)((i * 7) % 11) - 5.5;
        want[i / 20] += fabs(r[i]);
        sq[i / 20] += r[i] * r[i];
    }
    targ_t rin = tensor(F64, r, 2, 2, 20);
    RUN_OK(f, "ReduceL1", "f64->f64", ax1, 1, &rin, tensor(F64, NULL, 2, 2, 1), dgot);
    expect_f64(want, dgot, 2, 1e-12);
    RUN_OK(f, "ReduceSumSquare", "f64->f64", ax1, 1, &rin, tensor(F64, NULL, 2, 2, 1), dgot);
    expect_f64(sq, dgot, 2, 1e-12);

    /* Integers wrap as unsigned arithmetic does; |INT32_MIN| is INT32_MIN. */
    const int32_t ix[4] = {65536, 65537, INT32_MIN, 3};
    int32_t igot[2];
    targ_t iin = tensor(I32, ix, 2, 2, 2);
    RUN_OK(f, "ReduceProd", "i32->i32", ax1, 1, &iin, tensor(I32, NULL, 2, 2, 1), igot);
    expect_i32((const int32_t[]){65536, INT32_MIN}, igot, 2);
    RUN_OK(f, "ReduceL1", "i32->i32", ax1, 1, &iin, tensor(I32, NULL, 2, 2, 1), igot);
    expect_i32((const int32_t[]){131073, INT32_MIN + 3}, igot, 2);
    RUN_OK(f, "ReduceMin", "i32->i32", ax0_flat, 1, &iin, tensor(I32, NULL, 1, 2), igot);
    expect_i32((const int32_t[]){INT32_MIN, 3}, igot, 2);
    const int64_t lx[2] = {-3000000000, 2};
    int64_t lgot[1];
    const test_attr_t all[] = {A_INTS("axes", 0), A_INT("keepdims", 0), A_END};
    targ_t lin = tensor(I64, lx, 1, 2);
    RUN_OK(f, "ReduceSumSquare", "i64->i64", all, 1, &lin, tensor(I64, NULL, 0), lgot);
    assert_true(lgot[0] == INT64_C(9000000000000000004));
}

/* ReduceLogSumExp subtracts the max: large values do not overflow, and infinities and NaN come
 * out as themselves. Reducing a size-1 axis still maps and finishes each element. */
void reduce_log_sum_exp_is_stable_and_size_one_axes_still_map(void **state) {
    fixture_t *f = *state;
    const float big[8] = {1000, 1000, -INFINITY, -INFINITY, INFINITY, 1, NAN, 1};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, big, 2, 4, 2);
    float got[4];

    RUN_OK(f, "ReduceLogSumExp", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 1, 4), got);
    expect_f32((const float[]){1000 + logf(2), -INFINITY, INFINITY, NAN}, got, 4, 1e-6);
    /* Over the outer axis, [2,4] read down its columns: the same values, transposed. */
    const float t[8] = {1000, -INFINITY, INFINITY, NAN, 1000, -INFINITY, 1, 1};
    const test_attr_t ax0[] = {A_INTS("axes", 0), A_INT("keepdims", 0), A_END};
    targ_t tin = tensor(F32, t, 2, 2, 4);
    RUN_OK(f, "ReduceLogSumExp", "f32->f32", ax0, 1, &tin, tensor(F32, NULL, 1, 4), got);
    expect_f32((const float[]){1000 + logf(2), -INFINITY, INFINITY, NAN}, got, 4, 1e-6);

    const double one[2] = {-3, 2.718281828459045};
    double dgot[2];
    targ_t oin = tensor(F64, one, 2, 2, 1);
    RUN_OK(f, "ReduceL1", "f64->f64", ax1, 1, &oin, tensor(F64, NULL, 1, 2), dgot);
    expect_f64((const double[]){3, 2.718281828459045}, dgot, 2, 0);
    RUN_OK(f, "ReduceL2", "f64->f64", ax1, 1, &oin, tensor(F64, NULL, 1, 2), dgot);
    expect_f64((const double[]){3, 2.718281828459045}, dgot, 2, 1e-15);
    RUN_OK(f, "ReduceSumSquare", "f64->f64", ax1, 1, &oin, tensor(F64, NULL, 1, 2), dgot);
    expect_f64((const double[]){9, 2.718281828459045 * 2.718281828459045}, dgot, 2, 1e-15);
    RUN_OK(f, "ReduceLogSum", "f64->f64", ax1, 1, &oin, tensor(F64, NULL, 1, 2), dgot);
    assert_true(isnan(dgot[0]));
    expect_f64((const double[]){1}, dgot + 1, 1, 1e-15);
    RUN_OK(f, "ReduceLogSumExp", "f64->f64", ax1, 1, &oin, tensor(F64, NULL, 1, 2), dgot);
    expect_f64(one, dgot, 2, 0);
}

/* The empty product is 1, the logs of the empty sum -inf, the norms 0; the min does not
 * exist. */
void the_other_reductions_of_an_empty_axis(void **state) {
    fixture_t *f = *state;
    const double x[1] = {0};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_END};
    targ_t in = tensor(F64, x, 2, 2, 0);
    double got[2];

    RUN_OK(f, "ReduceProd", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    expect_f64((const double[]){1, 1}, got, 2, 0);
    RUN_OK(f, "ReduceLogSum", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    expect_f64((const double[]){-INFINITY, -INFINITY}, got, 2, 0);
    RUN_OK(f, "ReduceLogSumExp", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    expect_f64((const double[]){-INFINITY, -INFINITY}, got, 2, 0);
    RUN_OK(f, "ReduceL2", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    expect_f64((const double[]){0, 0}, got, 2, 0);
    const int64_t l[1] = {0};
    int64_t lgot[2];
    targ_t lin = tensor(I64, l, 2, 2, 0);
    RUN_OK(f, "ReduceProd", "i64->i64", ax1, 1, &lin, tensor(I64, NULL, 2, 2, 1), lgot);
    expect_i64((const int64_t[]){1, 1}, lgot, 2);
    f->name = "rmin";
    assert_int_equal(run(f, "ReduceMin", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ReduceMin \"rmin\"");
    assert_message_contains(f, "the min of no elements");
}

void reductions_refuse_bad_axes_and_wrong_output_shapes(void **state) {
    fixture_t *f = *state;
    const float x[6] = {0};
    targ_t in = tensor(F32, x, 2, 2, 3);
    const test_attr_t unsorted[] = {A_INTS("axes", 1, 0), A_END};
    const test_attr_t out_of_range[] = {A_INTS("axes", 2), A_END};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_END};
    f->name = "red";

    assert_int_equal(
        run(f, "ReduceSum", "f32->f32", unsorted, 1, &in, tensor(F32, NULL, 2, 1, 1), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "axes is [1,0]");
    assert_int_equal(
        run(f, "ReduceSum", "f32->f32", out_of_range, 1, &in, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(
        run(f, "ReduceSum", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "axes is missing");
    assert_int_equal(run(f, "ReduceSum", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 1, 2), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [2]");
    assert_message_contains(f, "is [2,1]");
}

/* ---------------------------------------------------------------------------------------------
 * Softmax LogSoftmax ArgMax
 * ------------------------------------------------------------------------------------------- */

void softmax_normalizes_along_the_axis_without_overflow(void **state) {
    fixture_t *f = *state;
    /* Rows [1,2,3] and [1000,1001,1002]: the same softmax, since it ignores shifts. */
    const float x[6] = {1, 2, 3, 1000, 1001, 1002};
    const test_attr_t ax1[] = {A_INT("axis", 1), A_END};
    const test_attr_t ax0[] = {A_INT("axis", 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3);
    float got[6];
    const float e = 0.09003057f, g = 0.24472847f, h = 0.66524096f;

    RUN_OK(f, "Softmax", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){e, g, h, e, g, h}, got, 6, 1e-6);
    RUN_OK(f, "LogSoftmax", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){logf(e), logf(g), logf(h), logf(e), logf(g), logf(h)}, got, 6, 1e-6);
    /* Along axis 0 (strided): each column is [small, small + 999]: [0, 1]. */
    RUN_OK(f, "Softmax", "f32->f32", ax0, 1, &in, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){0, 0, 0, 1, 1, 1}, got, 6, 1e-6);
    RUN_OK(f, "LogSoftmax", "f32->f32", ax0, 1, &in, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){-999, -999, -999, 0, 0, 0}, got, 6, 1e-6);

    /* [2,2,2] along the middle axis, in f64. */
    const double d[8] = {0, 1, 2, 3, 0, 0, 0, 0};
    const double s = 1.0 / (1.0 + exp(2.0));
    double dgot[8];
    targ_t din = tensor(F64, d, 3, 2, 2, 2);
    RUN_OK(f, "Softmax", "f64->f64", ax1, 1, &din, tensor(F64, NULL, 3, 2, 2, 2), dgot);
    expect_f64((const double[]){s, s, 1 - s, 1 - s, 0.5, 0.5, 0.5, 0.5}, dgot, 8, 1e-14);
    /* An empty axis has nothing to normalize. */
    targ_t empty = tensor(F64, d, 2, 3, 0);
    RUN_OK(f, "Softmax", "f64->f64", ax1, 1, &empty, tensor(F64, NULL, 2, 3, 0), NULL);
    f->name = "sm";
    assert_int_equal(
        run(f, "Softmax", "f64->f64", NULL, 1, &din, tensor(F64, NULL, 3, 2, 2, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "axis is missing");
}

void argmax_returns_the_first_or_last_index_of_the_largest(void **state) {
    fixture_t *f = *state;
    const float x[6] = {1, 5, 5, 7, 2, 7};
    const test_attr_t first[] = {A_INT("axis", 1), A_END};
    const test_attr_t last[] = {A_INT("axis", 1), A_INT("select_last_index", 1),
                                A_INT("keepdims", 0), A_END};
    const test_attr_t cols[] = {A_INT("axis", 0), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3);
    int64_t got[3];

    RUN_OK(f, "ArgMax", "f32->i64", first, 1, &in, tensor(I64, NULL, 2, 2, 1), got);
    expect_i64((const int64_t[]){1, 0}, got, 2);
    RUN_OK(f, "ArgMax", "f32->i64", last, 1, &in, tensor(I64, NULL, 1, 2), got);
    expect_i64((const int64_t[]){2, 2}, got, 2);
    RUN_OK(f, "ArgMax", "f32->i64", cols, 1, &in, tensor(I64, NULL, 1, 3), got);
    expect_i64((const int64_t[]){1, 0, 1}, got, 3);

    const float n[4] = {1, NAN, 9, NAN};
    targ_t nin = tensor(F32, n, 1, 4);
    const test_attr_t flat[] = {A_INT("axis", 0), A_INT("keepdims", 0), A_END};
    const test_attr_t flat_last[] = {A_INT("axis", 0), A_INT("keepdims", 0),
                                     A_INT("select_last_index", 1), A_END};
    RUN_OK(f, "ArgMax", "f32->i64", flat, 1, &nin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 1);
    RUN_OK(f, "ArgMax", "f32->i64", flat_last, 1, &nin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 3);

    const int32_t i[3] = {-4, -2, -3};
    targ_t iin = tensor(I32, i, 1, 3);
    RUN_OK(f, "ArgMax", "i32->i64", flat, 1, &iin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 1);
    const int64_t l[2] = {INT64_MIN, INT64_MIN};
    targ_t lin = tensor(I64, l, 1, 2);
    RUN_OK(f, "ArgMax", "i64->i64", flat_last, 1, &lin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 1);

    targ_t empty = tensor(F32, x, 2, 2, 0);
    f->name = "am";
    assert_int_equal(
        run(f, "ArgMax", "f32->i64", first, 1, &empty, tensor(I64, NULL, 2, 2, 1), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ArgMax \"am\"");
    assert_message_contains(f, "empty");
}

/* ArgMin: the first or last index of the smallest, NaN counting as the smallest (numpy). */
void argmin_returns_the_first_or_last_index_of_the_smallest(void **state) {
    fixture_t *f = *state;
    const float x[6] = {4, 1, 1, 0, 2, 0};
    const test_attr_t first[] = {A_INT("axis", 1), A_END};
    const test_attr_t last[] = {A_INT("axis", 1), A_INT("select_last_index", 1),
                                A_INT("keepdims", 0), A_END};
    const test_attr_t cols[] = {A_INT("axis", 0), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3);
    int64_t got[3];

    RUN_OK(f, "ArgMin", "f32->i64", first, 1, &in, tensor(I64, NULL, 2, 2, 1), got);
    expect_i64((const int64_t[]){1, 0}, got, 2);
    RUN_OK(f, "ArgMin", "f32->i64", last, 1, &in, tensor(I64, NULL, 1, 2), got);
    expect_i64((const int64_t[]){2, 2}, got, 2);
    RUN_OK(f, "ArgMin", "f32->i64", cols, 1, &in, tensor(I64, NULL, 1, 3), got);
    expect_i64((const int64_t[]){1, 0, 1}, got, 3);

    const float n[4] = {1, NAN, -9, NAN};
    targ_t nin = tensor(F32, n, 1, 4);
    const test_attr_t flat[] = {A_INT("axis", 0), A_INT("keepdims", 0), A_END};
    const test_attr_t flat_last[] = {A_INT("axis", 0), A_INT("keepdims", 0),
                                     A_INT("select_last_index", 1), A_END};
    RUN_OK(f, "ArgMin", "f32->i64", flat, 1, &nin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 1);
    RUN_OK(f, "ArgMin", "f32->i64", flat_last, 1, &nin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 3);
    const int64_t l[3] = {INT64_MAX, INT64_MIN, INT64_MIN};
    targ_t lin = tensor(I64, l, 1, 3);
    RUN_OK(f, "ArgMin", "i64->i64", flat, 1, &lin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 1);

    targ_t empty = tensor(F32, x, 2, 2, 0);
    f->name = "amin";
    assert_int_equal(
        run(f, "ArgMin", "f32->i64", first, 1, &empty, tensor(I64, NULL, 2, 2, 1), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ArgMin \"amin\"");
    assert_message_contains(f, "no smallest element");
}
