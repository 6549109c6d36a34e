/*
 * The CPU driver's kernels, part of the cpu_kernels test (runner in cpu_kernels_test.c):
 * Transpose, Concat, Slice, Gather, the index ops of cpu_index.c and the gradient
 * kernels of cpu_grad.c.
 */
#include "cpu_kernels_harness.h"

/* ---------------------------------------------------------------------------------------------
 * Transpose Concat Slice Gather
 * ------------------------------------------------------------------------------------------- */

void transpose_permutes_axes_at_every_element_width(void **state) {
    fixture_t *f = *state;
    const test_attr_t swap[] = {A_INTS("perm", 1, 0), A_END};
    const int16_t m[6] = {1, 2, 3, 4, 5, 6};
    int16_t got[6];
    targ_t in = tensor(SES_DRV_DTYPE_I16, m, 2, 2, 3);

    RUN_OK(f, "Transpose", "i16->i16", swap, 1, &in, tensor(SES_DRV_DTYPE_I16, NULL, 2, 3, 2), got);
    assert_memory_equal(got, ((const int16_t[]){1, 4, 2, 5, 3, 6}), sizeof got);

    /* [2,3,4] by perm [2,0,1] -> [4,2,3], against index arithmetic, at 1, 4 and 8 bytes. */
    const test_attr_t rot[] = {A_INTS("perm", 2, 0, 1), A_END};
    uint8_t x8[24], g8[24];
    float x32[24], g32[24];
    double x64[24], g64[24];
    for (int i = 0; i < 24; i++) {
        x8[i] = (uint8_t)i;
        x32[i] = (float)i;
        x64[i] = (double)i;
    }
    targ_t in8 = tensor(U8, x8, 3, 2, 3, 4);
    targ_t in32 = tensor(F32, x32, 3, 2, 3, 4);
    targ_t in64 = tensor(F64, x64, 3, 2, 3, 4);
    RUN_OK(f, "Transpose", "u8->u8", rot, 1, &in8, tensor(U8, NULL, 3, 4, 2, 3), g8);
    RUN_OK(f, "Transpose", "f32->f32", rot, 1, &in32, tensor(F32, NULL, 3, 4, 2, 3), g32);
    RUN_OK(f, "Transpose", "f64->f64", rot, 1, &in64, tensor(F64, NULL, 3, 4, 2, 3), g64);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) {
                int o = (k * 2 + i) * 3 + j, s = (i * 3 + j) * 4 + k;
                assert_int_equal(g8[o], s);
                assert_true(g32[o] == (float)s);
                assert_true(g64[o] == (double)s);
            }
    /* Rank 0 and an empty tensor. */
    const test_attr_t none[] = {{.name = "perm", .type = SES_DRV_ATTR_INTS, .n_ints = 0}, A_END};
    targ_t scalar = tensor(F64, x64 + 5, 0);
    RUN_OK(f, "Transpose", "f64->f64", none, 1, &scalar, tensor(F64, NULL, 0), g64);
    assert_true(g64[0] == 5.0);
    targ_t empty = tensor(F64, x64, 2, 0, 3);
    RUN_OK(f, "Transpose", "f64->f64", swap, 1, &empty, tensor(F64, NULL, 2, 3, 0), NULL);
}

/* Shapes past the tile size take the tiled path: a batch of matrices whose sides are not
 * multiples of the tile, and NCHW -> NHWC, which merges into one. */
void transpose_of_large_batched_matrices_matches_index_arithmetic(void **state) {
    fixture_t *f = *state;
    enum { B = 3, R = 10, C = 13, N = B * R * C };
    const test_attr_t last2[] = {A_INTS("perm", 0, 2, 1), A_END};
    static uint8_t x8[N], g8[N];
    static int16_t x16[N], g16[N];
    static double x64[N], g64[N];
    for (int i = 0; i < N; i++) {
        x8[i] = (uint8_t)(i * 7);
        x16[i] = (int16_t)(i - 200);
        x64[i] = i * 0.5;
    }
    targ_t in8 = tensor(U8, x8, 3, B, R, C);
    targ_t in16 = tensor(SES_DRV_DTYPE_I16, x16, 3, B, R, C);
    targ_t in64 = tensor(F64, x64, 3, B, R, C);
    RUN_OK(f, "Transpose", "u8->u8", last2, 1, &in8, tensor(U8, NULL, 3, B, C, R), g8);
    RUN_OK(f, "Transpose", "i16->i16", last2, 1, &in16, tensor(SES_DRV_DTYPE_I16, NULL, 3, B, C, R),
           g16);
    RUN_OK(f, "Transpose", "f64->f64", last2, 1, &in64, tensor(F64, NULL, 3, B, C, R), g64);
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++)
            for (int r = 0; r < R; r++) {
                int o = (b * C + c) * R + r, s = (b * R + r) * C + c;
                if (g8[o] != x8[s] || g16[o] != x16[s] || g64[o] != x64[s])
                    fail_msg("element [%d,%d,%d] differs", b, c, r);
            }

    /* NCHW [2,12,9,11] -> NHWC [2,9,11,12] */
    const test_attr_t nhwc[] = {A_INTS("perm", 0, 2, 3, 1), A_END};
    static float img[2 * 12 * 9 * 11], got[2 * 12 * 9 * 11];
    for (int i = 0; i < 2 * 12 * 9 * 11; i++)
        img[i] = (float)i;
    targ_t in = tensor(F32, img, 4, 2, 12, 9, 11);
    RUN_OK(f, "Transpose", "f32->f32", nhwc, 1, &in, tensor(F32, NULL, 4, 2, 9, 11, 12), got);
    for (int n = 0; n < 2; n++)
        for (int h = 0; h < 9; h++)
            for (int w = 0; w < 11; w++)
                for (int c = 0; c < 12; c++)
                    if (got[((n * 9 + h) * 11 + w) * 12 + c] !=
                        img[((n * 12 + c) * 9 + h) * 11 + w])
                        fail_msg("NHWC element [%d,%d,%d,%d] differs", n, h, w, c);
}

void transpose_refuses_a_perm_that_is_not_a_permutation(void **state) {
    fixture_t *f = *state;
    const float x[6] = {0};
    const test_attr_t dup[] = {A_INTS("perm", 0, 0), A_END};
    const test_attr_t swap[] = {A_INTS("perm", 1, 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3);
    f->name = "t";

    assert_int_equal(run(f, "Transpose", "f32->f32", dup, 1, &in, tensor(F32, NULL, 2, 2, 2), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Transpose \"t\"");
    assert_message_contains(f, "perm [0,0]");
    assert_int_equal(
        run(f, "Transpose", "f32->f32", swap, 1, &in, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [2,3]");
}

void concat_joins_inputs_along_the_axis(void **state) {
    fixture_t *f = *state;
    const float a[4] = {1, 2, 3, 4};          /* [2,2] */
    const float b[2] = {5, 6};                /* [2,1] */
    const float c[6] = {7, 8, 9, 10, 11, 12}; /* [2,3] */
    const test_attr_t ax1[] = {A_INT("axis", 1), A_END};
    const test_attr_t ax0[] = {A_INT("axis", 0), A_END};
    float got[12];

    targ_t cols[4] = {tensor(F32, a, 2, 2, 2), tensor(F32, b, 2, 2, 1), tensor(F32, b, 2, 2, 0),
                      tensor(F32, c, 2, 2, 3)};
    RUN_OK(f, "Concat", "f32...->f32", ax1, 4, cols, tensor(F32, NULL, 2, 2, 6), got);
    expect_f32((const float[]){1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12}, got, 12, 0);
    targ_t rows[2] = {tensor(F32, a, 2, 2, 2), tensor(F32, c, 2, 1, 2)};
    RUN_OK(f, "Concat", "f32...->f32", ax0, 2, rows, tensor(F32, NULL, 2, 3, 2), got);
    expect_f32((const float[]){1, 2, 3, 4, 7, 8}, got, 6, 0);
    /* One input is a copy. */
    const uint8_t bits[3] = {1, 0, 1};
    uint8_t gb[3];
    targ_t one = tensor(BOOL, bits, 1, 3);
    RUN_OK(f, "Concat", "bool...->bool", ax0, 1, &one, tensor(BOOL, NULL, 1, 3), gb);
    expect_u8(bits, gb, 3);
    /* Six inputs: more than the three a kernel call keeps views of. */
    const int64_t v[7] = {1, 2, 3, 4, 5, 6, 7};
    int64_t gv[7];
    targ_t many[6];
    for (int i = 0; i < 5; i++)
        many[i] = tensor(I64, v + i, 1, 1);
    many[5] = tensor(I64, v + 5, 1, 2);
    RUN_OK(f, "Concat", "i64...->i64", ax0, 6, many, tensor(I64, NULL, 1, 7), gv);
    expect_i64(v, gv, 7);

    f->name = "cat";
    targ_t bad[2] = {tensor(F32, a, 2, 2, 2), tensor(F32, c, 2, 3, 2)};
    assert_int_equal(run(f, "Concat", "f32...->f32", ax1, 2, bad, tensor(F32, NULL, 2, 2, 4), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Concat \"cat\"");
    assert_message_contains(f, "input 1 is [3,2]");
    assert_int_equal(
        run(f, "Concat", "f32...->f32", ax1, 2, rows, tensor(F32, NULL, 2, 2, 5), NULL),
        SES_DRV_INVALID_ARGUMENT);
}

void slice_takes_forward_backward_and_strided_ranges(void **state) {
    fixture_t *f = *state;
    const int32_t x[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}; /* [3,4] */
    targ_t in = tensor(I32, x, 2, 3, 4);
    int32_t got[12];

    /* Rows 1.., columns 1, 3. */
    const test_attr_t fwd[] = {A_INTS("starts", 1, 1), A_INTS("steps", 1, 2), A_END};
    RUN_OK(f, "Slice", "i32->i32", fwd, 1, &in, tensor(I32, NULL, 2, 2, 2), got);
    expect_i32((const int32_t[]){5, 7, 9, 11}, got, 4);
    /* Everything, reversed on both axes. */
    const test_attr_t rev[] = {A_INTS("starts", 2, 3), A_INTS("steps", -1, -1), A_END};
    RUN_OK(f, "Slice", "i32->i32", rev, 1, &in, tensor(I32, NULL, 2, 3, 4), got);
    expect_i32((const int32_t[]){11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, got, 12);
    /* Column 3 then 0 of row 2: step -3 from 3. */
    const test_attr_t back3[] = {A_INTS("starts", 2, 3), A_INTS("steps", 1, -3), A_END};
    RUN_OK(f, "Slice", "i32->i32", back3, 1, &in, tensor(I32, NULL, 2, 1, 2), got);
    expect_i32((const int32_t[]){11, 8}, got, 2);
    /* Empty: start clamped to the end, nothing taken. */
    const test_attr_t end[] = {A_INTS("starts", 3, 0), A_INTS("steps", 1, 1), A_END};
    RUN_OK(f, "Slice", "i32->i32", end, 1, &in, tensor(I32, NULL, 2, 0, 4), NULL);

    f->name = "sl";
    assert_int_equal(run(f, "Slice", "i32->i32", fwd, 1, &in, tensor(I32, NULL, 2, 2, 3), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Slice \"sl\"");
    assert_message_contains(f, "axis 1");
    const test_attr_t zero[] = {A_INTS("starts", 0, 0), A_INTS("steps", 1, 0), A_END};
    assert_int_equal(run(f, "Slice", "i32->i32", zero, 1, &in, tensor(I32, NULL, 2, 3, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
}

void gather_picks_along_the_axis_with_negative_indices(void **state) {
    fixture_t *f = *state;
    const float data[6] = {1, 2, 3, 4, 5, 6}; /* [3,2] */
    const int64_t idx[4] = {2, 0, -1, 1};     /* [2,2] */
    const int32_t col[1] = {-2};
    const test_attr_t ax0[] = {A_INT("axis", 0), A_END};
    const test_attr_t ax1[] = {A_INT("axis", 1), A_END};
    float got[8];

    targ_t in[2] = {tensor(F32, data, 2, 3, 2), tensor(I64, idx, 2, 2, 2)};
    RUN_OK(f, "Gather", "f32,i64->f32", ax0, 2, in, tensor(F32, NULL, 3, 2, 2, 2), got);
    expect_f32((const float[]){5, 6, 1, 2, 5, 6, 3, 4}, got, 8, 0);
    /* A scalar index drops the axis: column -2 = 0 of each row. */
    targ_t in32[2] = {tensor(F32, data, 2, 3, 2), tensor(I32, col, 0)};
    RUN_OK(f, "Gather", "f32,i32->f32", ax1, 2, in32, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){1, 3, 5}, got, 3, 0);
    /* No indices: an empty output. */
    targ_t none[2] = {tensor(F32, data, 2, 3, 2), tensor(I64, idx, 1, 0)};
    RUN_OK(f, "Gather", "f32,i64->f32", ax0, 2, none, tensor(F32, NULL, 2, 0, 2), NULL);
    const uint16_t w[3] = {10, 20, 30};
    uint16_t gw[2];
    targ_t win[2] = {tensor(SES_DRV_DTYPE_U16, w, 1, 3),
                     tensor(I32, (const int32_t[]){2, 0}, 1, 2)};
    RUN_OK(f, "Gather", "u16,i32->u16", ax0, 2, win, tensor(SES_DRV_DTYPE_U16, NULL, 1, 2), gw);
    assert_int_equal(gw[0], 30);
    assert_int_equal(gw[1], 10);
}

void gather_refuses_an_index_out_of_range_naming_node_index_and_dim(void **state) {
    fixture_t *f = *state;
    const float data[6] = {0};
    const int64_t idx[3] = {0, 3, 1};
    const int32_t neg[1] = {-4};
    const test_attr_t ax0[] = {A_INT("axis", 0), A_END};
    f->name = "embed";

    targ_t in[2] = {tensor(F32, data, 2, 3, 2), tensor(I64, idx, 1, 3)};
    assert_int_equal(run(f, "Gather", "f32,i64->f32", ax0, 2, in, tensor(F32, NULL, 2, 3, 2), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Gather \"embed\"");
    assert_message_contains(f, "index 3");
    assert_message_contains(f, "size 3");
    targ_t in32[2] = {tensor(F32, data, 2, 3, 2), tensor(I32, neg, 1, 1)};
    assert_int_equal(
        run(f, "Gather", "f32,i32->f32", ax0, 2, in32, tensor(F32, NULL, 2, 1, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "index -4");
    targ_t shape[2] = {tensor(F32, data, 2, 3, 2), tensor(I64, idx, 1, 3)};
    assert_int_equal(
        run(f, "Gather", "f32,i64->f32", ax0, 2, shape, tensor(F32, NULL, 2, 3, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [3,3]");
}

/* ---------------------------------------------------------------------------------------------
 * GatherElements ScatterElements GatherND ScatterND OneHot Trilu CumSum Hardmax (cpu_index.c)
 * ------------------------------------------------------------------------------------------- */

void gather_and_scatter_elements_index_along_the_axis(void **state) {
    fixture_t *f = *state;
    const float data[6] = {1, 2, 3, 4, 5, 6}; /* [2,3] */
    const int64_t idx[4] = {2, -3, 1, 1};     /* [2,2] */
    const float upd[4] = {10, 20, 30, 40};
    const test_attr_t ax1[] = {A_INT("axis", 1), A_END};
    const test_attr_t add[] = {A_INT("axis", 1), A_INT("reduction", 1), A_END};
    float got[6];

    targ_t in[2] = {tensor(F32, data, 2, 2, 3), tensor(I64, idx, 2, 2, 2)};
    RUN_OK(f, "GatherElements", "f32,i64->f32", ax1, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){3, 1, 5, 5}, got, 4, 0);
    targ_t sin[3] = {tensor(F32, data, 2, 2, 3), tensor(I64, idx, 2, 2, 2),
                     tensor(F32, upd, 2, 2, 2)};
    RUN_OK(f, "ScatterElements", "f32,i64,f32->f32", ax1, 3, sin, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){20, 2, 10, 4, 40, 6}, got, 6, 0);
    /* add: the repeated index 1 of row 1 gets both updates. */
    RUN_OK(f, "ScatterElements", "f32,i64,f32->f32", add, 3, sin, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){21, 2, 13, 4, 75, 6}, got, 6, 0);

    const int64_t bad[4] = {0, 3, 1, 1};
    targ_t oob[2] = {tensor(F32, data, 2, 2, 3), tensor(I64, bad, 2, 2, 2)};
    f->name = "ge";
    assert_int_equal(
        run(f, "GatherElements", "f32,i64->f32", ax1, 2, oob, tensor(F32, NULL, 2, 2, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "GatherElements \"ge\"");
    assert_message_contains(f, "index 3");
    targ_t wide[2] = {tensor(F32, data, 2, 2, 3), tensor(I64, idx, 2, 4, 1)};
    assert_int_equal(
        run(f, "GatherElements", "f32,i64->f32", ax1, 2, wide, tensor(F32, NULL, 2, 4, 1), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "no dimension larger");
}

void gather_nd_and_scatter_nd_move_blocks(void **state) {
    fixture_t *f = *state;
    const int32_t data[8] = {0, 1, 2, 3, 4, 5, 6, 7}; /* [2,2,2] */
    const int64_t rows[4] = {1, 0, -2, 1};            /* [2,2]: data[1,0,:], data[0,1,:] */
    const int64_t batch[2] = {1, 0};                  /* [2,1] with batch_dims 1 */
    const test_attr_t none[] = {A_END};
    const test_attr_t b1[] = {A_INT("batch_dims", 1), A_END};
    const test_attr_t mul[] = {A_INT("reduction", 2), A_END};
    int32_t got[8];

    targ_t in[2] = {tensor(I32, data, 3, 2, 2, 2), tensor(I64, rows, 2, 2, 2)};
    RUN_OK(f, "GatherND", "i32,i64->i32", none, 2, in, tensor(I32, NULL, 2, 2, 2), got);
    expect_i32((const int32_t[]){4, 5, 2, 3}, got, 4);
    targ_t bin[2] = {tensor(I32, data, 3, 2, 2, 2), tensor(I64, batch, 2, 2, 1)};
    RUN_OK(f, "GatherND", "i32,i64->i32", b1, 2, bin, tensor(I32, NULL, 2, 2, 2), got);
    expect_i32((const int32_t[]){2, 3, 4, 5}, got, 4);
    const int32_t upd[4] = {10, 20, 30, 40};
    targ_t sin[3] = {tensor(I32, data, 3, 2, 2, 2), tensor(I64, rows, 2, 2, 2),
                     tensor(I32, upd, 2, 2, 2)};
    RUN_OK(f, "ScatterND", "i32,i64,i32->i32", none, 3, sin, tensor(I32, NULL, 3, 2, 2, 2), got);
    expect_i32((const int32_t[]){0, 1, 30, 40, 10, 20, 6, 7}, got, 8);
    RUN_OK(f, "ScatterND", "i32,i64,i32->i32", mul, 3, sin, tensor(I32, NULL, 3, 2, 2, 2), got);
    expect_i32((const int32_t[]){0, 1, 60, 120, 40, 100, 6, 7}, got, 8);

    const int64_t bad[2] = {0, 2};
    targ_t oob[2] = {tensor(I32, data, 3, 2, 2, 2), tensor(I64, bad, 1, 2)};
    f->name = "gnd";
    assert_int_equal(
        run(f, "GatherND", "i32,i64->i32", none, 2, oob, tensor(I32, NULL, 1, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "GatherND \"gnd\"");
    assert_message_contains(f, "index 2");
}

void one_hot_trilu_cumsum_and_hardmax_compute_like_onnx(void **state) {
    fixture_t *f = *state;
    const float idx[3] = {1.7f, -1, 5}; /* 1.7 truncates to 1; 5 is out of range: all off */
    const int64_t vals[2] = {-1, 7};
    const test_attr_t hot[] = {A_INT("axis", 1), A_INT("depth", 3), A_END};
    int64_t got[9];

    targ_t hin[2] = {tensor(F32, idx, 1, 3), tensor(I64, vals, 1, 2)};
    RUN_OK(f, "OneHot", "f32,i64->i64", hot, 2, hin, tensor(I64, NULL, 2, 3, 3), got);
    expect_i64((const int64_t[]){-1, 7, -1, -1, -1, 7, -1, -1, -1}, got, 9);

    const int32_t m[6] = {1, 2, 3, 4, 5, 6}; /* [2,3] */
    const test_attr_t up1[] = {A_INT("upper", 1), A_INT("k", 1), A_END};
    const test_attr_t low0[] = {A_INT("upper", 0), A_INT("k", 0), A_END};
    int32_t t[6];
    targ_t tin[1] = {tensor(I32, m, 2, 2, 3)};
    RUN_OK(f, "Trilu", "i32->i32", up1, 1, tin, tensor(I32, NULL, 2, 2, 3), t);
    expect_i32((const int32_t[]){0, 2, 3, 0, 0, 6}, t, 6);
    RUN_OK(f, "Trilu", "i32->i32", low0, 1, tin, tensor(I32, NULL, 2, 2, 3), t);
    expect_i32((const int32_t[]){1, 0, 0, 4, 5, 0}, t, 6);

    const test_attr_t sum1[] = {A_INT("axis", 1), A_END};
    const test_attr_t excl_rev[] = {A_INT("axis", 1), A_INT("exclusive", 1), A_INT("reverse", 1),
                                    A_END};
    RUN_OK(f, "CumSum", "i32->i32", sum1, 1, tin, tensor(I32, NULL, 2, 2, 3), t);
    expect_i32((const int32_t[]){1, 3, 6, 4, 9, 15}, t, 6);
    RUN_OK(f, "CumSum", "i32->i32", excl_rev, 1, tin, tensor(I32, NULL, 2, 2, 3), t);
    expect_i32((const int32_t[]){5, 3, 0, 11, 6, 0}, t, 6);

    const float x[6] = {3, 1, 3, -1, 2, 0}; /* [2,3]: ties go to the first */
    const test_attr_t ax0[] = {A_INT("axis", 0), A_END};
    float h[6];
    targ_t xin[1] = {tensor(F32, x, 2, 2, 3)};
    RUN_OK(f, "Hardmax", "f32->f32", sum1, 1, xin, tensor(F32, NULL, 2, 2, 3), h);
    expect_f32((const float[]){1, 0, 0, 0, 1, 0}, h, 6, 0);
    RUN_OK(f, "Hardmax", "f32->f32", ax0, 1, xin, tensor(F32, NULL, 2, 2, 3), h);
    expect_f32((const float[]){1, 0, 1, 0, 1, 0}, h, 6, 0);
}

/* ---------------------------------------------------------------------------------------------
 * The gradient ops (cpu_grad.c); their values are checked through sessions in grad_ops_test.c.
 * ------------------------------------------------------------------------------------------- */

void gradient_kernels_are_offered_at_their_dtypes(void **state) {
    fixture_t *f = *state;
    static const char *const all13[] = {"f32", "f64", "f16", "bf16", "i8",  "i16", "i32",
                                        "i64", "u8",  "u16", "u32",  "u64", "bool"};
    static const char *const expected[][2] = {
        {"ReduceSumLike", "i64->i64"},        {"ReduceSumLike", "f32->f32"},
        {"ReluGrad", "f64,f64->f64"},         {"LeakyReluGrad", "f32,f32->f32"},
        {"SigmoidGrad", "f32,f32->f32"},      {"TanhGrad", "f64,f64->f64"},
        {"SoftmaxGrad", "f32,f32->f32"},      {"LogSoftmaxGrad", "f64,f64->f64"},
        {"MatMulGrad", "f32,f32,f32->f32"},   {"MatMulGrad", "f64,f64,f64->f64"},
        {"ReduceGrad", "f64->f64"},           {"GatherGrad", "f32,i64->f32"},
        {"GatherGrad", "f64,i32->f64"},
    };
    static const char *const missing[][2] = {
        {"ReluGrad", "i32,i32->i32"},      /* the arithmetic gradients are float only */
        {"ReduceSumLike", "u8->u8"},       /* as ReduceSum */
        {"GatherGrad", "i32,i32->i32"},    /* a scatter-add of floats */
        {"ReshapeLike", "f32->f32"},       /* lowered to Reshape by the host */
        {"CastLike", "f32->i32"},          /* lowered to Cast */
        {"ConcatGrad", "f32->f32"},        /* lowered to Slice */
    };
    char sig[64];

    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!find_kernel_on(f->api, f->device, expected[i][0], expected[i][1]))
            fail_msg("no %s %s", expected[i][0], expected[i][1]);
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)
        if (find_kernel_on(f->api, f->device, missing[i][0], missing[i][1]))
            fail_msg("unexpected %s %s", missing[i][0], missing[i][1]);
    static const char *const movers[] = {"ExpandLike", "ScalarLike", "SliceGrad"};
    for (size_t m = 0; m < sizeof movers / sizeof movers[0]; m++)
        for (size_t d = 0; d < 13; d++) {
            snprintf(sig, sizeof sig, "%s->%s", all13[d], all13[d]);
            if (!find_kernel_on(f->api, f->device, movers[m], sig))
                fail_msg("no %s %s", movers[m], sig);
        }
}

/* Saturating toward zero for integers, round to nearest even for the half floats. */
void scalar_like_converts_its_value_as_cast_does(void **state) {
    fixture_t *f = *state;
    unsigned char got[8];
    static const struct {
        uint32_t dtype;
        double value;
        uint64_t want; /* the output's bytes, little-endian, as an integer */
        size_t size;
    } cases[] = {
        {SES_DRV_DTYPE_I8, 1e30, 0x7f, 1},
        {SES_DRV_DTYPE_I8, -1e30, 0x80, 1},
        {SES_DRV_DTYPE_U16, -5.5, 0, 2},
        {SES_DRV_DTYPE_U8, 300.7, 255, 1},
        {I32, NAN, 0, 4},
        {I64, -2.9, UINT64_C(0xfffffffffffffffe), 8},
        {SES_DRV_DTYPE_U64, 1e30, UINT64_MAX, 8},
        {SES_DRV_DTYPE_BF16, 1.0, 0x3f80, 2},
        {SES_DRV_DTYPE_F16, 65520.0, 0x7c00, 2}, /* halfway past the largest: even is inf */
        {SES_DRV_DTYPE_F16, -0.5, 0xb800, 2},
        {SES_DRV_DTYPE_F16, 1e-7, 0x0002, 2}, /* subnormal */
        {BOOL, -0.25, 1, 1},
    };
    char sig[32];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *name = cases[i].dtype == BOOL ? "bool"
                           : cases[i].dtype == I32 ? "i32"
                           : cases[i].dtype == I64 ? "i64"
                           : cases[i].dtype == SES_DRV_DTYPE_I8 ? "i8"
                           : cases[i].dtype == SES_DRV_DTYPE_U8 ? "u8"
                           : cases[i].dtype == SES_DRV_DTYPE_U16 ? "u16"
                           : cases[i].dtype == SES_DRV_DTYPE_U64 ? "u64"
                           : cases[i].dtype == SES_DRV_DTYPE_BF16 ? "bf16"
                                                                  : "f16";
        const test_attr_t value[] = {A_FLOAT("value", cases[i].value), A_END};
        uint64_t v = 0;
        snprintf(sig, sizeof sig, "%s->%s", name, name);
        /* like gives the dtype only; an empty one will do. */
        targ_t in = tensor(cases[i].dtype, NULL, 1, 0);
        memset(got, 0, sizeof got);
        RUN_OK(f, "ScalarLike", sig, value, 1, &in, tensor(cases[i].dtype, NULL, 0), got);
        memcpy(&v, got, cases[i].size);
        if (v != cases[i].want)
            fail_msg("ScalarLike %s of %g: got 0x%llx, want 0x%llx", name, cases[i].value,
                     (unsigned long long)v, (unsigned long long)cases[i].want);
    }
}

/* What the host never passes is still refused, naming the node and both sides. */
void gradient_kernels_refuse_shapes_and_attributes_that_do_not_fit(void **state) {
    fixture_t *f = *state;
    const float data[12] = {0};
    f->name = "g";

    /* ExpandLike: the input must broadcast to the output. */
    targ_t x23 = tensor(F32, data, 2, 2, 3);
    assert_int_equal(run(f, "ExpandLike", "f32->f32", NULL, 1, &x23, tensor(F32, NULL, 1, 3), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ExpandLike \"g\"");
    assert_message_contains(f, "input 0 is [2,3], output is [3]");
    /* ReduceSumLike: the output must broadcast to the input. */
    assert_int_equal(
        run(f, "ReduceSumLike", "f32->f32", NULL, 1, &x23, tensor(F32, NULL, 1, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0 is [2,3], output is [2]");
    /* ScalarLike gives a scalar. */
    const test_attr_t one[] = {A_FLOAT("value", 1.0), A_END};
    assert_int_equal(run(f, "ScalarLike", "f32->f32", one, 1, &x23, tensor(F32, NULL, 1, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "must be a scalar");
    /* ReluGrad: one shape for all three. */
    targ_t two[2] = {tensor(F32, data, 2, 2, 3), tensor(F32, data, 1, 6)};
    assert_int_equal(
        run(f, "ReluGrad", "f32,f32->f32", NULL, 2, two, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0 is [2,3], input 1 is [6], output is [2,3]");
    /* SoftmaxGrad: a normalized axis. */
    targ_t same[2] = {tensor(F32, data, 2, 2, 3), tensor(F32, data, 2, 2, 3)};
    const test_attr_t far[] = {A_INT("axis", -1), A_END};
    assert_int_equal(
        run(f, "SoftmaxGrad", "f32,f32->f32", far, 2, same, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "attribute axis is -1");
    /* MatMulGrad: input 0 or 1, dy of the product's shape, the output of the operand's. */
    targ_t mm[3] = {tensor(F32, data, 2, 2, 2), tensor(F32, data, 2, 2, 3),
                    tensor(F32, data, 2, 3, 2)};
    const test_attr_t in2[] = {A_INT("input", 2), A_END}, in0[] = {A_INT("input", 0), A_END};
    assert_int_equal(
        run(f, "MatMulGrad", "f32,f32,f32->f32", in2, 3, mm, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "attribute input is 2");
    assert_int_equal(
        run(f, "MatMulGrad", "f32,f32,f32->f32", in0, 3, mm, tensor(F32, NULL, 2, 3, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [3,2], but the gradient of input 1 is [2,3]");
    mm[0] = tensor(F32, data, 2, 2, 3);
    assert_int_equal(
        run(f, "MatMulGrad", "f32,f32,f32->f32", in0, 3, mm, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0 (dy) is [2,3], but input 1 [2,3] times input 2 [3,2] is [2,2]");
    /* ReduceGrad: sorted axes, and a dy that is the output reduced over them. */
    targ_t dy21 = tensor(F32, data, 2, 2, 1);
    const test_attr_t unsorted[] = {A_INTS("axes", 1, 0), A_END};
    assert_int_equal(
        run(f, "ReduceGrad", "f32->f32", unsorted, 1, &dy21, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "attribute axes is [1,0]");
    const test_attr_t axis0[] = {A_INTS("axes", 0), A_END};
    assert_int_equal(
        run(f, "ReduceGrad", "f32->f32", axis0, 1, &dy21, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0 (dy) is [2,1], but the output [2,3] reduced over axes [0]");
    /* GatherGrad: dy of the gather's shape. */
    targ_t gg[2] = {tensor(F32, data, 2, 2, 2), tensor(I64, (const int64_t[]){0, 1, 2}, 1, 3)};
    assert_int_equal(
        run(f, "GatherGrad", "f32,i64->f32", NULL, 2, gg, tensor(F32, NULL, 2, 4, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0 (dy) is [2,2]");
    /* SliceGrad: every start and step fits its dim. */
    targ_t dy = tensor(F32, data, 2, 2, 2);
    const test_attr_t past[] = {A_INTS("starts", 0, 2), A_INTS("steps", 1, 1), A_END};
    assert_int_equal(
        run(f, "SliceGrad", "f32->f32", past, 1, &dy, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "SliceGrad \"g\": axis 1: 2 elements from 2 by step 1 do not fit");
    const test_attr_t short_starts[] = {A_INTS("starts", 0), A_INTS("steps", 1), A_END};
    assert_int_equal(
        run(f, "SliceGrad", "f32->f32", short_starts, 1, &dy, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "expected one start and step per output axis");
}

/* A broadcast copy or a scatter cannot write over the input it reads; ScalarLike may. */
void gradient_kernels_refuse_an_output_over_their_input_but_scalar_like(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *arena = NULL;
    float init[16] = {0}, got;

    assert_int_equal(f->api->alloc(f->device, sizeof init, SES_DRV_MEM_DEVICE, &arena), SES_DRV_OK);
    assert_int_equal(f->api->copy_h2d(f->device, NULL, init, arena, 0, sizeof init), SES_DRV_OK);
    targ_t row[1] = {tensor(F32, NULL, 1, 4)};
    f->name = "over";
    assert_int_equal(run_in_arena(f, arena, "ExpandLike", "f32->f32", NULL, 1, row,
                                  (const uint64_t[]){0}, tensor(F32, NULL, 2, 2, 4), 0),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ExpandLike \"over\"");
    assert_message_contains(f, "cannot run in place");
    const test_attr_t value[] = {A_FLOAT("value", 4.5), A_END};
    assert_int_equal(run_in_arena(f, arena, "ScalarLike", "f32->f32", value, 1, row,
                                  (const uint64_t[]){0}, tensor(F32, NULL, 0), 4),
                     SES_DRV_OK);
    assert_int_equal(f->api->copy_d2h(f->device, NULL, arena, 4, &got, sizeof got), SES_DRV_OK);
    assert_true(got == 4.5f);
    f->api->free(f->device, arena);
}
