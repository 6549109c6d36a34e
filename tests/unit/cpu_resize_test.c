/*
 * Resize, ResizeGrad and GridSample (src/ops/resize.c, plugins/cpu/cpu_resize.c) evaluated on
 * the CPU driver: Resize against a reference written here the way ONNX's test generator works
 * (per axis, the n input indices nearest the source coordinate in the edge-padded axis, weights
 * from the fraction, a dense weight matrix per axis), values worked by hand, GridSample against
 * values torch.nn.functional.grid_sample gave, ResizeGrad as Resize's adjoint, and the errors
 * that name the node and the input or attribute at fault.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "cpu_eval_util.h"

/* ---- helpers --------------------------------------------------------------------------------- */

static ses_edge_t constant(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                           const void *values, size_t bytes) {
    ses_tensor_t *t = NULL;
    ses_edge_t e = {NULL, 0};
    assert_int_equal(ses_tensor_create_from(dtype, rank, dims, values, bytes, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_edge_t floats_f32(ses_graph_t *g, size_t n, const double *values) {
    float f[16];
    int64_t dims[1] = {(int64_t)n};
    for (size_t i = 0; i < n; i++)
        f[i] = (float)values[i];
    return constant(g, SES_F32, 1, dims, n ? f : NULL, n * sizeof *f);
}

static ses_edge_t ints_i64(ses_graph_t *g, size_t n, const int64_t *values) {
    int64_t dims[1] = {(int64_t)n};
    return constant(g, SES_I64, 1, dims, values, n * sizeof *values);
}

/* ---- Resize and its reference ---------------------------------------------------------------- */

#define MAXR 4

/* One Resize: X's shape and values, the attributes, scales or sizes, roi. */
typedef struct rcase {
    size_t rank;
    int64_t in[MAXR];
    const char *mode, *coord, *nearest; /* NULL: the attribute is left out */
    double cubic_a;                     /* 0: left out (-0.75) */
    int exclude;
    double extrapolation;
    int n_scales;
    double scales[MAXR];
    int n_sizes;
    int64_t sizes[MAXR];
    int n_roi;
    double roi[2 * MAXR];
} rcase_t;

static double x_value(int64_t i) {
    /* Not linear in the index, so that linear and cubic interpolation differ from it. */
    return sin(0.7 * (double)i) * 3.0 + 0.01 * (double)(i * i);
}

/* Builds Resize(X, roi, scales[, sizes]) of @p c with X of @p dtype; inputs left out are empty. */
static ses_edge_t build_resize(ses_graph_t *g, const rcase_t *c, ses_dtype_t dtype,
                               const char *name) {
    int64_t count = 1;
    ses_attr_t attrs[6];
    size_t n_attrs = 0;
    ses_edge_t in[4], y;

    for (size_t d = 0; d < c->rank; d++)
        count *= c->in[d];
    double *xd = malloc((size_t)count * sizeof *xd);
    float *xf = malloc((size_t)count * sizeof *xf);
    for (int64_t i = 0; i < count; i++) {
        xd[i] = x_value(i);
        xf[i] = (float)xd[i];
    }
    in[0] = dtype == SES_F64 ? constant(g, SES_F64, c->rank, c->in, xd, (size_t)count * 8)
                             : constant(g, SES_F32, c->rank, c->in, xf, (size_t)count * 4);
    free(xd);
    free(xf);
    in[1] = floats_f32(g, (size_t)c->n_roi, c->roi);
    in[2] = floats_f32(g, (size_t)c->n_scales, c->scales);
    if (c->mode)
        attrs[n_attrs++] = ses_attr_string("mode", c->mode);
    if (c->coord)
        attrs[n_attrs++] = ses_attr_string("coordinate_transformation_mode", c->coord);
    if (c->nearest)
        attrs[n_attrs++] = ses_attr_string("nearest_mode", c->nearest);
    if (c->cubic_a != 0.0)
        attrs[n_attrs++] = ses_attr_float("cubic_coeff_a", c->cubic_a);
    if (c->exclude)
        attrs[n_attrs++] = ses_attr_int("exclude_outside", 1);
    if (c->extrapolation != 0.0)
        attrs[n_attrs++] = ses_attr_float("extrapolation_value", c->extrapolation);
    if (c->n_sizes)
        in[3] = ints_i64(g, (size_t)c->n_sizes, c->sizes);
    assert_int_equal(ses_graph_op(g, "Resize", name, in, c->n_sizes ? 4 : 3, attrs, n_attrs, &y),
                     SES_OK);
    return y;
}

static int is_mode(const char *s, const char *want, const char *fallback) {
    return !strcmp(s ? s : fallback, want);
}

/*
 * The reference's weights of axis @p d at output index @p o over the axis's @p n_in input
 * indices, into @p w; returns 0 when the coordinate falls outside (tf_crop_and_resize).
 */
static int ref_axis(const rcase_t *c, size_t d, int64_t o, int64_t n_out, double *w) {
    const int64_t n_in = c->in[d];
    const double in = (double)n_in;
    /* The scale: given, or the sizes' ratio; the resized length as ONNX's reference has it. */
    const double scale = c->n_scales ? (double)(float)c->scales[d] : (double)n_out / in;
    const double len = c->n_scales ? scale * in : (double)n_out;
    const double start = c->n_roi ? (double)(float)c->roi[d] : 0.0;
    const double end = c->n_roi ? (double)(float)c->roi[c->rank + d] : 1.0;
    double x;

    if (is_mode(c->coord, "align_corners", "half_pixel"))
        x = len == 1.0 ? 0.0 : (double)o * (in - 1.0) / (len - 1.0);
    else if (is_mode(c->coord, "asymmetric", "half_pixel"))
        x = (double)o / scale;
    else if (is_mode(c->coord, "pytorch_half_pixel", "half_pixel"))
        x = len > 1.0 ? ((double)o + 0.5) / scale - 0.5 : 0.0;
    else if (is_mode(c->coord, "tf_half_pixel_for_nn", "half_pixel"))
        x = ((double)o + 0.5) / scale;
    else if (is_mode(c->coord, "half_pixel_symmetric", "half_pixel"))
        x = in / 2.0 * (1.0 - (double)n_out / (scale * in)) + ((double)o + 0.5) / scale - 0.5;
    else if (is_mode(c->coord, "tf_crop_and_resize", "half_pixel")) {
        x = len > 1.0 ? start * (in - 1.0) + (double)o * (end - start) * (in - 1.0) / (len - 1.0)
                      : 0.5 * (start + end) * (in - 1.0);
        if (x < 0.0 || x > in - 1.0)
            return 0;
    } else
        x = ((double)o + 0.5) / scale - 0.5;

    /* The n indices nearest x on the axis edge-padded by ceil(n / 2), ties to the smaller. */
    const int cubic = is_mode(c->mode, "cubic", "nearest");
    const int n = cubic ? 4 : 2, pad = n / 2;
    int64_t idx[4];
    int taken = 0;
    for (int k = 0; k < n; k++) {
        int64_t best = 0;
        double best_dist = INFINITY;
        for (int64_t i = -pad; i < n_in + pad; i++) {
            int used = 0;
            for (int j = 0; j < taken; j++)
                used |= idx[j] == i;
            if (!used && fabs(x - (double)i) < best_dist) {
                best_dist = fabs(x - (double)i);
                best = i;
            }
        }
        idx[taken++] = best;
    }
    for (int a = 0; a < n; a++) /* ascending */
        for (int b = a + 1; b < n; b++)
            if (idx[b] < idx[a]) {
                int64_t t = idx[a];
                idx[a] = idx[b];
                idx[b] = t;
            }
    const double ratio = x == floor(x) ? 1.0 : x - floor(x);
    double coeff[4];
    if (cubic) {
        const double A = c->cubic_a != 0.0 ? c->cubic_a : -0.75;
        coeff[0] = ((A * (ratio + 1) - 5 * A) * (ratio + 1) + 8 * A) * (ratio + 1) - 4 * A;
        coeff[1] = ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1;
        coeff[2] = ((A + 2) * (1 - ratio) - (A + 3)) * (1 - ratio) * (1 - ratio) + 1;
        coeff[3] =
            ((A * ((1 - ratio) + 1) - 5 * A) * ((1 - ratio) + 1) + 8 * A) * ((1 - ratio) + 1) -
            4 * A;
    } else if (is_mode(c->mode, "linear", "nearest")) {
        coeff[0] = 1 - ratio;
        coeff[1] = ratio;
    } else {
        int ceil_ = ratio == 1.0;
        if (!ceil_) {
            if (is_mode(c->nearest, "round_prefer_ceil", "round_prefer_floor"))
                ceil_ = ratio >= 0.5;
            else if (is_mode(c->nearest, "floor", "round_prefer_floor"))
                ceil_ = 0;
            else if (is_mode(c->nearest, "ceil", "round_prefer_floor"))
                ceil_ = 1;
            else
                ceil_ = ratio > 0.5;
        }
        coeff[0] = ceil_ ? 0.0 : 1.0;
        coeff[1] = ceil_ ? 1.0 : 0.0;
    }
    if (c->exclude) {
        double sum = 0.0;
        for (int k = 0; k < n; k++) {
            if (idx[k] < 0 || idx[k] >= n_in)
                coeff[k] = 0.0;
            sum += coeff[k];
        }
        for (int k = 0; k < n; k++)
            coeff[k] /= sum;
    }
    for (int64_t i = 0; i < n_in; i++)
        w[i] = 0.0;
    for (int k = 0; k < n; k++)
        w[idx[k] < 0 ? 0 : idx[k] >= n_in ? n_in - 1 : idx[k]] += coeff[k];
    return 1;
}

/* Output dims of @p c. */
static void ref_out_dims(const rcase_t *c, int64_t *out) {
    for (size_t d = 0; d < c->rank; d++) {
        if (c->n_sizes) {
            out[d] = c->sizes[d];
        } else {
            double len = (double)c->in[d] * (double)(float)c->scales[d];
            if (c->n_roi && c->coord && !strcmp(c->coord, "tf_crop_and_resize"))
                len *= (double)(float)c->roi[c->rank + d] - (double)(float)c->roi[d];
            out[d] = (int64_t)floor(len);
        }
    }
}

/* The reference output, a dense sum over X per output element. */
static double *ref_resize(const rcase_t *c, const int64_t *out, int64_t *out_count) {
    int64_t n_out = 1, n_in = 1;
    for (size_t d = 0; d < c->rank; d++) {
        n_out *= out[d];
        n_in *= c->in[d];
    }
    double *y = calloc((size_t)(n_out ? n_out : 1), sizeof *y);
    double w[MAXR][64];
    for (int64_t q = 0; q < n_out; q++) {
        int64_t o[MAXR], rest = q;
        int inside = 1;
        for (size_t d = c->rank; d-- > 0;) {
            o[d] = rest % out[d];
            rest /= out[d];
        }
        for (size_t d = 0; d < c->rank; d++)
            inside &= ref_axis(c, d, o[d], out[d], w[d]);
        if (!inside) {
            y[q] = c->extrapolation;
            continue;
        }
        double sum = 0.0;
        for (int64_t p = 0; p < n_in; p++) {
            int64_t i[MAXR], r2 = p;
            double weight = 1.0;
            for (size_t d = c->rank; d-- > 0;) {
                i[d] = r2 % c->in[d];
                r2 /= c->in[d];
            }
            for (size_t d = 0; d < c->rank; d++)
                weight *= w[d][i[d]];
            sum += weight * x_value(p);
        }
        y[q] = sum;
    }
    *out_count = n_out;
    return y;
}

static void check_against_reference(const rcase_t *c, ses_dtype_t dtype) {
    ses_graph_t *g = NULL;
    int64_t out[MAXR], n_out;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t y = build_resize(g, c, dtype, "r");
    ses_tensor_t *t = eval1(g, y);
    ref_out_dims(c, out);
    double *want = ref_resize(c, out, &n_out);
    assert_int_equal(ses_tensor_rank(t), c->rank);
    for (size_t d = 0; d < c->rank; d++)
        if (ses_tensor_dims(t)[d] != out[d])
            fail_msg("%s %s: axis %zu has %lld, want %lld", c->mode ? c->mode : "nearest",
                     c->coord ? c->coord : "half_pixel", d, (long long)ses_tensor_dims(t)[d],
                     (long long)out[d]);
    for (int64_t q = 0; q < n_out; q++) {
        const double got = dtype == SES_F64 ? ((const double *)ses_tensor_data(t))[q]
                                            : ((const float *)ses_tensor_data(t))[q];
        const double tol = dtype == SES_F64 ? 1e-12 : 1e-5 * fmax(1.0, fabs(want[q]));
        if (fabs(got - want[q]) > tol)
            fail_msg("%s %s %s (%s): element %lld is %.12g, want %.12g",
                     c->mode ? c->mode : "nearest", c->coord ? c->coord : "half_pixel",
                     c->nearest ? c->nearest : "", dtype == SES_F64 ? "f64" : "f32", (long long)q,
                     got, want[q]);
    }
    free(want);
    ses_tensor_release(t);
    ses_graph_release(g);
}

/* Every mode with every coordinate transform, up and down, by scales and by sizes, 2-D to
 * 4-D, f32 and f64, against the reference. */
static void resize_matches_the_reference_in_every_mode_and_transform(void **state) {
    static const char *const coords[] = {"half_pixel",         "half_pixel_symmetric",
                                         "pytorch_half_pixel", "align_corners",
                                         "asymmetric",         "tf_half_pixel_for_nn"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                           "ceil"};
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    (void)state;
    for (size_t m = 0; m < 3; m++)
        for (size_t k = 0; k < 6; k++) {
            if (m != 0 && !strcmp(coords[k], "tf_half_pixel_for_nn"))
                continue;
            for (size_t nm = 0; nm < (m == 0 ? 4u : 1u); nm++) {
                rcase_t up = {4,
                              {1, 2, 3, 4},
                              modes[m],
                              coords[k],
                              m == 0 ? nearests[nm] : NULL,
                              0,
                              0,
                              0,
                              4,
                              {1, 1, 1.7, 2.5},
                              0,
                              {0},
                              0,
                              {0}};
                rcase_t down = {3, {2, 7, 5}, modes[m], coords[k], m == 0 ? nearests[nm] : NULL,
                                0, 0,         0,        4,         {1, 0.6, 0.45},
                                0, {0},       0,        {0}};
                rcase_t sizes = {2, {5, 4}, modes[m], coords[k], m == 0 ? nearests[nm] : NULL,
                                 0, 0,      0,        0,         {0},
                                 2, {3, 7}, 0,        {0}};
                rcase_t one = {2, {3, 4}, modes[m], coords[k], m == 0 ? nearests[nm] : NULL,
                               0, 0,      0,        0,         {0},
                               2, {1, 1}, 0,        {0}};
                down.n_scales = 3;
                for (int f64 = 0; f64 <= 1; f64++) {
                    ses_dtype_t dt = f64 ? SES_F64 : SES_F32;
                    check_against_reference(&up, dt);
                    check_against_reference(&down, dt);
                    check_against_reference(&sizes, dt);
                    check_against_reference(&one, dt);
                }
            }
        }
}

/* cubic_coeff_a and exclude_outside, and tf_crop_and_resize with its roi and
 * extrapolation_value, by sizes and by scales (whose output length the roi shortens). */
static void resize_cubic_options_and_crop_match_the_reference(void **state) {
    rcase_t cubic_up = {2, {4, 4}, "cubic", NULL, NULL, -0.5, 1, 0, 2, {1.5, 0.8}, 0, {0}, 0, {0}};
    rcase_t cubic_align = {2, {4, 5}, "cubic", "align_corners", NULL, -0.5, 1, 0,
                           0, {0},    2,       {6, 3},          0,    {0}};
    rcase_t crop = {4,        {1, 1, 4, 4},
                    "linear", "tf_crop_and_resize",
                    NULL,     0,
                    0,        0,
                    0,        {0},
                    4,        {1, 1, 3, 3},
                    8,        {0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8}};
    rcase_t crop_out = {4,        {1, 1, 4, 4},
                        "linear", "tf_crop_and_resize",
                        NULL,     0,
                        0,        10.0,
                        0,        {0},
                        4,        {1, 1, 3, 3},
                        8,        {0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7}};
    rcase_t crop_scales = {
        2, {5, 6}, "cubic", "tf_crop_and_resize", NULL, 0, 0, -1.0, 2, {2.0, 1.5},
        0, {0},    4,       {0.1, -0.2, 0.7, 1.1}};
    rcase_t crop_nearest = {
        2, {5, 6}, "nearest", "tf_crop_and_resize", "ceil", 0, 0, 3.0, 2, {1.0, 2.0},
        0, {0},    4,         {0.2, 0.0, 0.9, 1.0}};
    (void)state;
    for (int f64 = 0; f64 <= 1; f64++) {
        ses_dtype_t dt = f64 ? SES_F64 : SES_F32;
        check_against_reference(&cubic_up, dt);
        check_against_reference(&cubic_align, dt);
        check_against_reference(&crop, dt);
        check_against_reference(&crop_out, dt);
        check_against_reference(&crop_scales, dt);
        check_against_reference(&crop_nearest, dt);
    }
}

/* Values worked by hand: [[1, 2], [3, 4]] linear align_corners to 3x3 is the midpoints, and
 * nearest half_pixel by 2 repeats each element twice along each axis. */
static void resize_gives_hand_computed_values(void **state) {
    const float x[4] = {1, 2, 3, 4};
    const int64_t dims[2] = {2, 2}, sizes[2] = {3, 3};
    const double scales[2] = {2, 2};
    const float want_linear[9] = {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4};
    const float want_nearest[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    ses_graph_t *g = NULL;
    ses_edge_t in[4], y;
    ses_attr_t a[2] = {ses_attr_string("mode", "linear"),
                       ses_attr_string("coordinate_transformation_mode", "align_corners")};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 2, dims, x, sizeof x);
    in[1] = floats_f32(g, 0, NULL);
    in[2] = in[1];
    in[3] = ints_i64(g, 2, sizes);
    assert_int_equal(ses_graph_op(g, "Resize", "lin", in, 4, a, 2, &y), SES_OK);
    ses_tensor_t *t = eval1(g, y);
    assert_int_equal(ses_tensor_count(t), 9);
    assert_memory_equal(ses_tensor_data(t), want_linear, sizeof want_linear);
    ses_tensor_release(t);
    in[2] = floats_f32(g, 2, scales);
    assert_int_equal(ses_graph_op(g, "Resize", "near", in, 3, NULL, 0, &y), SES_OK);
    t = eval1(g, y);
    assert_int_equal(ses_tensor_count(t), 16);
    assert_memory_equal(ses_tensor_data(t), want_nearest, sizeof want_nearest);
    ses_tensor_release(t);
    ses_graph_release(g);
}

/* Opset 18: axes names the resized axes (the others keep their length), and
 * keep_aspect_ratio_policy scales every resized axis by one factor: 4x6 to at most 3x3 is
 * 2x3 (scale 0.5), to at least 3x3 is 3x5 (scale 0.75, 4.5 rounded up). */
static void resize_axes_and_keep_aspect_ratio_policy_shape_the_output(void **state) {
    float x[24];
    const int64_t dims[2] = {4, 6}, sizes[2] = {3, 3}, one_size[1] = {9}, axes[1] = {1};
    ses_graph_t *g = NULL;
    ses_edge_t in[4], y;
    static const char *const policies[2] = {"not_larger", "not_smaller"};
    const int64_t want[2][2] = {{2, 3}, {3, 5}};

    (void)state;
    for (int i = 0; i < 24; i++)
        x[i] = (float)i;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 2, dims, x, sizeof x);
    in[1] = floats_f32(g, 0, NULL);
    in[2] = in[1];
    in[3] = ints_i64(g, 2, sizes);
    for (int p = 0; p < 2; p++) {
        ses_attr_t a = ses_attr_string("keep_aspect_ratio_policy", policies[p]);
        assert_int_equal(ses_graph_op(g, "Resize", NULL, in, 4, &a, 1, &y), SES_OK);
        ses_tensor_t *t = eval1(g, y);
        assert_int_equal(ses_tensor_dims(t)[0], want[p][0]);
        assert_int_equal(ses_tensor_dims(t)[1], want[p][1]);
        ses_tensor_release(t);
    }
    /* axes [1]: rows untouched, columns 6 -> 9 by nearest (half_pixel, round_prefer_floor). */
    in[3] = ints_i64(g, 1, one_size);
    ses_attr_t a = ses_attr_ints("axes", axes, 1);
    assert_int_equal(ses_graph_op(g, "Resize", NULL, in, 4, &a, 1, &y), SES_OK);
    ses_tensor_t *t = eval1(g, y);
    assert_int_equal(ses_tensor_dims(t)[0], 4);
    assert_int_equal(ses_tensor_dims(t)[1], 9);
    const float *v = ses_tensor_data(t);
    /* x_original = (o + 0.5) / 1.5 - 0.5: 0, 0.5, 1.17, 1.83, 2.5, 3.17, 3.83, 4.5, 5.17 */
    const float row1[9] = {6, 6, 7, 8, 8, 9, 10, 10, 11};
    assert_memory_equal(v + 9, row1, sizeof row1);
    ses_tensor_release(t);
    ses_graph_release(g);
}

/* Opset 18's antialias, where an axis shrinks: linear and cubic (cubic_coeff_a -0.5) with
 * exclude_outside against torch.nn.functional.interpolate(antialias=True) (torch 2, float64),
 * which weighs only the taps inside the input as exclude_outside does; x [1, 1, 7, 9] to
 * sizes [1, 1, 3, 4]. */
static void resize_antialias_matches_torch(void **state) {
    static const double want[2][12] = {
        {2.63254145090484, 3.75998244897597, 1.00793821326733, 0.190204695316067, 10.0405193422144,
         11.8324610258328, 9.92684332697736, 9.99945520150454, 24.2534042873877, 26.7091093556561,
         25.6538704048888, 26.618333009307},
        {2.05244271064423, 3.47843575688908, 0.252524843512452, -0.560178381604449,
         9.45882667096742, 11.6286636448545, 9.31969063944121, 9.52548856530401, 24.9746027914286,
         27.886961853953, 26.5002519808905, 27.7262826425104},
    };
    const int64_t dims[4] = {1, 1, 7, 9}, sizes[4] = {1, 1, 3, 4};
    double x[63];

    (void)state;
    for (int i = 0; i < 63; i++)
        x[i] = x_value(i);
    for (int cubic = 0; cubic <= 1; cubic++) {
        ses_graph_t *g = NULL;
        ses_edge_t in[4], y;
        ses_attr_t a[4] = {ses_attr_string("mode", cubic ? "cubic" : "linear"),
                           ses_attr_int("antialias", 1), ses_attr_int("exclude_outside", 1),
                           ses_attr_float("cubic_coeff_a", -0.5)};
        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = constant(g, SES_F64, 4, dims, x, sizeof x);
        in[1] = floats_f32(g, 0, NULL);
        in[2] = in[1];
        in[3] = ints_i64(g, 4, sizes);
        assert_int_equal(ses_graph_op(g, "Resize", "aa", in, 4, a, 4, &y), SES_OK);
        ses_tensor_t *t = eval1(g, y);
        assert_int_equal(ses_tensor_count(t), 12);
        for (int i = 0; i < 12; i++) {
            const double got = ((const double *)ses_tensor_data(t))[i];
            if (fabs(got - want[cubic][i]) > 1e-12)
                fail_msg("%s antialias: element %d is %.15g, want %.15g",
                         cubic ? "cubic" : "linear", i, got, want[cubic][i]);
        }
        ses_tensor_release(t);
        /* to an empty axis (scale 0): nothing to widen, no error */
        const int64_t empty_sizes[4] = {1, 1, 3, 0};
        in[3] = ints_i64(g, 4, empty_sizes);
        assert_int_equal(ses_graph_op(g, "Resize", "aa0", in, 4, a, 4, &y), SES_OK);
        t = eval1(g, y);
        assert_int_equal(ses_tensor_count(t), 0);
        ses_tensor_release(t);
        ses_graph_release(g);
    }
}

/* Integer X (quantized models) by nearest: each element copied, u8 and i64; tf_crop_and_resize's
 * extrapolation_value saturates to the dtype (300 is 255 in u8). */
static void resize_nearest_copies_integers(void **state) {
    const uint8_t x8[4] = {10, 200, 30, 255};
    const int64_t x64[4] = {-5, INT64_C(1) << 40, 7, -(INT64_C(1) << 50)};
    const int64_t dims[2] = {2, 2}, sizes[2] = {3, 3};
    const double scales[2] = {1, 2}, roi[4] = {0, 0, 1, 1.5};
    const uint8_t want8[8] = {10, 10, 200, 200, 30, 30, 255, 255};
    ses_graph_t *g = NULL;
    ses_edge_t in[4], y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_U8, 2, dims, x8, sizeof x8);
    in[1] = floats_f32(g, 0, NULL);
    in[2] = floats_f32(g, 2, scales);
    assert_int_equal(ses_graph_op(g, "Resize", "u8", in, 3, NULL, 0, &y), SES_OK);
    ses_tensor_t *t = eval1(g, y);
    assert_int_equal(ses_tensor_dtype(t), SES_U8);
    assert_memory_equal(ses_tensor_data(t), want8, sizeof want8);
    ses_tensor_release(t);
    in[0] = constant(g, SES_I64, 2, dims, x64, sizeof x64);
    assert_int_equal(ses_graph_op(g, "Resize", "i64", in, 3, NULL, 0, &y), SES_OK);
    t = eval1(g, y);
    const int64_t *v = ses_tensor_data(t);
    assert_int_equal(v[2], INT64_C(1) << 40);
    assert_int_equal(v[7], -(INT64_C(1) << 50));
    ses_tensor_release(t);
    /* columns from 0 to 1.5 of 2: x_original 0, 0.75, 1.5 (outside) */
    {
        ses_attr_t a[2] = {ses_attr_string("coordinate_transformation_mode", "tf_crop_and_resize"),
                           ses_attr_float("extrapolation_value", 300.0)};
        in[0] = constant(g, SES_U8, 2, dims, x8, sizeof x8);
        in[1] = floats_f32(g, 4, roi);
        in[2] = floats_f32(g, 0, NULL);
        in[3] = ints_i64(g, 2, sizes);
        assert_int_equal(ses_graph_op(g, "Resize", "crop", in, 4, a, 2, &y), SES_OK);
        t = eval1(g, y);
        /* rows: x_original 0, 0.5 (round_prefer_floor: 0), 1 */
        const uint8_t want[9] = {10, 200, 255, 10, 200, 255, 30, 255, 255};
        assert_memory_equal(ses_tensor_data(t), want, sizeof want);
        ses_tensor_release(t);
    }
    ses_graph_release(g);
}

/* Antialiased cubic shrinking two outer axes by 5 has 20 x 20 tap combinations per row, more
 * than a task keeps on its stack (the one-thread path): the same as resizing the transposed
 * tensor, whose shrinking axes are the last two. */
static void resize_many_outer_taps_match_the_transposed_resize(void **state) {
    const int64_t dims[3] = {30, 30, 4}, tdims[3] = {4, 30, 30};
    const double scales[3] = {0.2, 0.2, 1.0}, tscales[3] = {1.0, 0.2, 0.2};
    double x[3600], xt[3600];
    ses_graph_t *g = NULL;
    ses_edge_t in[3], tin[3], y, ty, back;
    ses_attr_t a[2] = {ses_attr_string("mode", "cubic"), ses_attr_int("antialias", 1)};

    (void)state;
    for (int i = 0; i < 30; i++)
        for (int j = 0; j < 30; j++)
            for (int k = 0; k < 4; k++) {
                x[(i * 30 + j) * 4 + k] = x_value((i * 30 + j) * 4 + k);
                xt[(k * 30 + i) * 30 + j] = x[(i * 30 + j) * 4 + k];
            }
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F64, 3, dims, x, sizeof x);
    in[1] = floats_f32(g, 0, NULL);
    in[2] = floats_f32(g, 3, scales);
    tin[0] = constant(g, SES_F64, 3, tdims, xt, sizeof xt);
    tin[1] = in[1];
    tin[2] = floats_f32(g, 3, tscales);
    assert_int_equal(ses_graph_op(g, "Resize", "outer", in, 3, a, 2, &y), SES_OK);
    assert_int_equal(ses_graph_op(g, "Resize", "inner", tin, 3, a, 2, &ty), SES_OK);
    const int64_t back_perm[3] = {1, 2, 0};
    ses_attr_t p = ses_attr_ints("perm", back_perm, 3);
    assert_int_equal(ses_graph_op(g, "Transpose", "back", &ty, 1, &p, 1, &back), SES_OK);
    ses_tensor_t *t1 = eval1(g, y), *t2 = eval1(g, back);
    assert_int_equal(ses_tensor_count(t1), 6 * 6 * 4);
    assert_int_equal(ses_tensor_count(t2), 6 * 6 * 4);
    for (size_t i = 0; i < 144; i++) {
        const double u = ((const double *)ses_tensor_data(t1))[i];
        const double v = ((const double *)ses_tensor_data(t2))[i];
        if (fabs(u - v) > 1e-12 * fmax(1.0, fabs(v)))
            fail_msg("element %zu: %.15g by outer axes, %.15g by inner ones", i, u, v);
    }
    ses_tensor_release(t1);
    ses_tensor_release(t2);
    ses_graph_release(g);
}

/* ResizeGrad is Resize's transpose: <Resize(x), u> == <x, ResizeGrad(u)> for any x, u (each
 * mode, and antialiased cubic). */
static void resize_grad_is_the_adjoint_of_resize(void **state) {
    const int64_t dims[3] = {2, 3, 4};
    static const char *const modes[4] = {"nearest", "linear", "cubic", "cubic"};
    double x[24];
    (void)state;
    for (int i = 0; i < 24; i++)
        x[i] = x_value(i);
    for (int m = 0; m < 4; m++) {
        const double scales[3] = {1.0, 1.7, 0.6};
        ses_graph_t *g = NULL;
        ses_edge_t in[4], y, u, gin[4], dx;
        /* the last: cubic antialiased where it shrinks */
        ses_attr_t a[3] = {ses_attr_string("mode", modes[m]),
                           ses_attr_string("coordinate_transformation_mode", "half_pixel"),
                           ses_attr_int("antialias", m == 3)};
        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = constant(g, SES_F64, 3, dims, x, sizeof x);
        in[1] = floats_f32(g, 0, NULL);
        in[2] = floats_f32(g, 3, scales);
        assert_int_equal(ses_graph_op(g, "Resize", NULL, in, 3, a, 3, &y), SES_OK);
        ses_tensor_t *yt = eval1(g, y);
        const size_t ny = ses_tensor_count(yt);
        double *uv = malloc(ny * sizeof *uv);
        for (size_t i = 0; i < ny; i++)
            uv[i] = cos(1.3 * (double)i);
        u = constant(g, SES_F64, 3, ses_tensor_dims(yt), uv, ny * sizeof *uv);
        gin[0] = u;
        gin[1] = in[0];
        gin[2] = in[1];
        gin[3] = in[2];
        assert_int_equal(ses_graph_op(g, "ResizeGrad", NULL, gin, 4, a, 3, &dx), SES_OK);
        ses_tensor_t *dxt = eval1(g, dx);
        double lhs = 0.0, rhs = 0.0;
        for (size_t i = 0; i < ny; i++)
            lhs += ((const double *)ses_tensor_data(yt))[i] * uv[i];
        for (size_t i = 0; i < 24; i++)
            rhs += x[i] * ((const double *)ses_tensor_data(dxt))[i];
        if (fabs(lhs - rhs) > 1e-10 * fmax(1.0, fabs(lhs)))
            fail_msg("%s: <Resize(x), u> = %.15g but <x, ResizeGrad(u)> = %.15g", modes[m], lhs,
                     rhs);
        free(uv);
        ses_tensor_release(yt);
        ses_tensor_release(dxt);
        ses_graph_release(g);
    }
}

/* Each bad input or attribute is refused naming the node and what is wrong. */
static void resize_errors_name_the_node_and_the_input(void **state) {
    const float x[4] = {1, 2, 3, 4};
    const int32_t xi[4] = {1, 2, 3, 4};
    const int64_t dims[2] = {2, 2}, sizes[2] = {3, 3}, bad_sizes[1] = {3};
    const double scales[2] = {2, 2}, small[2] = {1.0, 0.01}, bad_scales[3] = {1, 2, 2};
    ses_graph_t *g = NULL;
    ses_edge_t in[4], y, empty, sz, sc;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 2, dims, x, sizeof x);
    empty = floats_f32(g, 0, NULL);
    sz = ints_i64(g, 2, sizes);
    sc = floats_f32(g, 2, scales);

    /* both scales and sizes */
    in[1] = empty;
    in[2] = sc;
    in[3] = sz;
    assert_int_equal(ses_graph_op(g, "Resize", "both", in, 4, NULL, 0, &y), SES_OK);
    {
        const char *parts[] = {"Resize \"both\"",
                               "exactly one of input 2 (scales) and input 3 "
                               "(sizes)",
                               "both are"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    /* neither */
    in[2] = empty;
    assert_int_equal(ses_graph_op(g, "Resize", "neither", in, 3, NULL, 0, &y), SES_OK);
    {
        const char *parts[] = {"Resize \"neither\"", "neither is"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    /* scales of the wrong count, sizes of the wrong count */
    in[2] = floats_f32(g, 3, bad_scales);
    assert_int_equal(ses_graph_op(g, "Resize", "count", in, 3, NULL, 0, &y), SES_OK);
    {
        const char *parts[] = {"Resize \"count\"", "input 2 (scales) has 3 values",
                               "X is f32[2,2]"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    in[2] = empty;
    in[3] = ints_i64(g, 1, bad_sizes);
    assert_int_equal(ses_graph_op(g, "Resize", "sizes", in, 4, NULL, 0, &y), SES_OK);
    {
        const char *parts[] = {"Resize \"sizes\"", "input 3 (sizes) has 1 values"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    /* an unknown mode and coordinate transform, a roi missing for tf_crop_and_resize */
    in[2] = sc;
    {
        ses_attr_t a = ses_attr_string("mode", "bilinear");
        assert_int_equal(ses_graph_op(g, "Resize", "mode", in, 3, &a, 1, &y), SES_OK);
        const char *parts[] = {"Resize \"mode\"", "attribute mode is \"bilinear\"",
                               "nearest, linear or cubic"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    {
        ses_attr_t a = ses_attr_string("coordinate_transformation_mode", "corners");
        assert_int_equal(ses_graph_op(g, "Resize", "coord", in, 3, &a, 1, &y), SES_OK);
        const char *parts[] = {"Resize \"coord\"", "coordinate_transformation_mode is \"corners\""};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        ses_attr_t a = ses_attr_string("coordinate_transformation_mode", "tf_crop_and_resize");
        assert_int_equal(ses_graph_op(g, "Resize", "crop", in, 3, &a, 1, &y), SES_OK);
        const char *parts[] = {"Resize \"crop\"", "input 1 (roi) is required"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        ses_attr_t a = ses_attr_string("nearest_mode", "round");
        assert_int_equal(ses_graph_op(g, "Resize", "nearest", in, 3, &a, 1, &y), SES_OK);
        const char *parts[] = {"Resize \"nearest\"", "nearest_mode is \"round\""};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    /* antialias where linear shrinks [1, 300] by 100 would need over 200 taps */
    {
        static const float wide[300];
        const int64_t wide_dims[2] = {1, 300};
        ses_attr_t a[2] = {ses_attr_string("mode", "linear"), ses_attr_int("antialias", 1)};
        ses_edge_t aa[3] = {constant(g, SES_F32, 2, wide_dims, wide, sizeof wide), empty,
                            floats_f32(g, 2, small)};
        assert_int_equal(ses_graph_op(g, "Resize", "aa", aa, 3, a, 2, &y), SES_OK);
        const char *parts[] = {"Resize \"aa\"", "antialias: axis 1 shrinks by 0.01",
                               "taps; at most 64 are supported"};
        expect_error(g, y, SES_UNIMPLEMENTED, parts, 3);
    }
    /* X of i32 linear (integers take nearest only), of i16; scales of i64 */
    {
        ses_edge_t bad[3] = {constant(g, SES_I32, 2, dims, xi, sizeof xi), empty, sc};
        ses_attr_t a = ses_attr_string("mode", "linear");
        assert_int_equal(ses_graph_op(g, "Resize", "int", bad, 3, &a, 1, &y), SES_OK);
        const char *parts[] = {"Resize \"int\"", "linear mode of an integer X (i32[2,2])"};
        expect_error(g, y, SES_UNIMPLEMENTED, parts, 2);
        const int16_t x16[4] = {1, 2, 3, 4};
        bad[0] = constant(g, SES_I16, 2, dims, x16, sizeof x16);
        assert_int_equal(ses_graph_op(g, "Resize", "i16", bad, 3, NULL, 0, &y), SES_OK);
        const char *parts16[] = {"Resize \"i16\"", "X", "i16"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts16, 3);
        bad[0] = in[0];
        bad[2] = sz;
        assert_int_equal(ses_graph_op(g, "Resize", "scales_dtype", bad, 3, NULL, 0, &y), SES_OK);
        const char *parts2[] = {"Resize \"scales_dtype\"", "scales"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts2, 2);
    }
    /* a roi value that is not finite */
    {
        const double bad_roi[4] = {0, NAN, 1, 1};
        ses_attr_t a = ses_attr_string("coordinate_transformation_mode", "tf_crop_and_resize");
        ses_edge_t r[3] = {in[0], floats_f32(g, 4, bad_roi), sc};
        assert_int_equal(ses_graph_op(g, "Resize", "nanroi", r, 3, &a, 1, &y), SES_OK);
        const char *parts[] = {"Resize \"nanroi\"", "input 1 (roi) value 1 is nan",
                               "must be finite"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    /* a scales value that is 0 */
    {
        const double zero[2] = {1, 0};
        in[2] = floats_f32(g, 2, zero);
        assert_int_equal(ses_graph_op(g, "Resize", "zero", in, 3, NULL, 0, &y), SES_OK);
        const char *parts[] = {"Resize \"zero\"", "must be positive"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    ses_graph_release(g);
}

/* Resize's scales fed at run time: inference reads the fed value. */
static void resize_reads_fed_scales(void **state) {
    const float x[4] = {1, 2, 3, 4}, scales[2] = {1, 2};
    const int64_t dims[2] = {2, 2}, sdims[1] = {2};
    const char *cpu = "cpu";
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *st = NULL, *out = NULL;
    ses_edge_t in[3], y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 2, dims, x, sizeof x);
    in[1] = floats_f32(g, 0, NULL);
    assert_int_equal(ses_graph_placeholder(g, "scales", SES_F32, 1, sdims, &in[2]), SES_OK);
    assert_int_equal(ses_graph_op(g, "Resize", "fed", in, 3, NULL, 0, &y), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, sdims, scales, sizeof scales, &st), SES_OK);
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    const ses_feed_t feed = {in[2], st};
    if (ses_session_eval(s, &y, 1, &feed, 1, NULL, 0, &out) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    const float want[8] = {1, 1, 2, 2, 3, 3, 4, 4};
    assert_int_equal(ses_tensor_count(out), 8);
    assert_memory_equal(ses_tensor_data(out), want, sizeof want);
    ses_tensor_release(out);
    ses_tensor_release(st);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* An exported model's sizes computed from X's shape (Shape -> Mul -> Resize's sizes), as
 * torch.onnx writes interpolate(scale_factor=2): folded at compile time, so Resize reads it. */
static void resize_reads_sizes_computed_from_the_shape(void **state) {
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const int64_t dims[4] = {1, 1, 2, 3}, two[4] = {1, 1, 2, 2}, four[1] = {4};
    const char *cpu = "cpu";
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *xt = NULL, *out = NULL;
    ses_edge_t in[4], shape, y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, dims, &in[0]), SES_OK);
    assert_int_equal(ses_graph_op(g, "Shape", "shape", &in[0], 1, NULL, 0, &shape), SES_OK);
    ses_edge_t mul[2] = {shape, constant(g, SES_I64, 1, four, two, sizeof two)};
    assert_int_equal(ses_graph_op(g, "Mul", "sizes", mul, 2, NULL, 0, &in[3]), SES_OK);
    in[1] = floats_f32(g, 0, NULL);
    in[2] = in[1];
    assert_int_equal(ses_graph_op(g, "Resize", "computed", in, 4, NULL, 0, &y), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 4, dims, x, sizeof x, &xt), SES_OK);
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    const ses_feed_t feed = {in[0], xt};
    if (ses_session_eval(s, &y, 1, &feed, 1, NULL, 0, &out) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    assert_int_equal(ses_tensor_dims(out)[2], 4);
    assert_int_equal(ses_tensor_dims(out)[3], 6);
    const float row0[6] = {1, 1, 2, 2, 3, 3};
    assert_memory_equal(ses_tensor_data(out), row0, sizeof row0);
    ses_tensor_release(out);
    ses_tensor_release(xt);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* ---- GridSample ------------------------------------------------------------------------------ */

/* x [1, 1, 3, 4] = i * i * 0.1 - i, grid [1, 2, 3, 2]; the want rows are what
 * torch.nn.functional.grid_sample gave (torch 2, float64) for each mode, padding and
 * align_corners. */
static const double gs_grid[12] = {-1.2, -0.9, 0.3,   0.55, 1.1,  -1.3,
                                   0.0,  0.0,  -0.71, 1.4,  0.95, 0.2};
static const struct {
    const char *mode, *padding;
    int align;
    double want[6];
} gs_cases[] = {
    {"bilinear", "zeros", 0, {0, -0.323999999999999, -0.0314999999999999, -2.45, 0, -0.684}},
    {"bilinear", "zeros", 1, {-0.168, -1.107, -1.2495, -2.45, -0.7773, -1.4945}},
    {"bilinear", "border", 0, {0, -0.323999999999999, -2.1, -2.45, -1.544, -1.14}},
    {"bilinear", "border", 1, {-0.24, -1.107, -2.1, -2.45, -1.2955, -1.4945}},
    {"bilinear", "reflection", 0, {0, -0.323999999999999, -2.1, -2.45, -1.6304, -1.14}},
    {"bilinear", "reflection", 1, {-0.486, -1.107, -2.061, -2.45, -1.7547, -1.4945}},
    {"nearest", "zeros", 0, {0, 0, 0, -2.4, 0, -2.1}},
    {"nearest", "zeros", 1, {0, 0, -2.1, -2.4, -1.6, -2.1}},
    {"nearest", "border", 0, {0, 0, -2.1, -2.4, -1.6, -2.1}},
    {"nearest", "border", 1, {0, 0, -2.1, -2.4, -1.6, -2.1}},
    {"nearest", "reflection", 0, {0, 0, -2.1, -2.4, -1.6, -2.1}},
    {"nearest", "reflection", 1, {0, 0, -2.1, -2.4, -1.6, -2.1}},
    {"bicubic",
     "zeros",
     0,
     {0.0264776484374996, -0.231362860546873, -0.024029282812499, -2.4875, 0.0996329159999994,
      -0.6353532}},
    {"bicubic",
     "zeros",
     1,
     {-0.0471703312500017, -1.19005110585937, -1.357239253125, -2.4875, -0.8170499471625,
      -1.614550475}},
    {"bicubic",
     "border",
     0,
     {0.27284889375, -0.249119885156248, -2.12369233125, -2.4875, -1.5587936, -1.1411688}},
    {"bicubic",
     "border",
     1,
     {-0.109612050000002, -1.182765440625, -2.14780963125, -2.4875, -1.256891107525,
      -1.566750059375}},
    {"bicubic",
     "reflection",
     0,
     {0.47946375, -0.249119885156248, -2.18323875, -2.4875, -1.6442133056, -1.097148}},
    {"bicubic",
     "reflection",
     1,
     {-0.1737906, -0.943569993749998, -2.241153975, -2.4875, -1.8833422038, -1.4651964875}},
};

static void grid_sample_matches_torch_in_every_mode_and_padding(void **state) {
    const int64_t xd[4] = {1, 1, 3, 4}, gd[4] = {1, 2, 3, 2};
    double x[12];
    float xf[12], gf[12];

    (void)state;
    for (int i = 0; i < 12; i++) {
        x[i] = (double)i * (double)i * 0.1 - (double)i;
        xf[i] = (float)x[i];
        gf[i] = (float)gs_grid[i];
    }
    for (size_t c = 0; c < sizeof gs_cases / sizeof gs_cases[0]; c++)
        for (int f64 = 0; f64 <= 1; f64++) {
            ses_graph_t *g = NULL;
            ses_edge_t in[2], y;
            ses_attr_t a[3] = {ses_attr_string("mode", gs_cases[c].mode),
                               ses_attr_string("padding_mode", gs_cases[c].padding),
                               ses_attr_int("align_corners", gs_cases[c].align)};
            assert_int_equal(ses_graph_create(&g), SES_OK);
            in[0] = f64 ? constant(g, SES_F64, 4, xd, x, sizeof x)
                        : constant(g, SES_F32, 4, xd, xf, sizeof xf);
            in[1] = f64 ? constant(g, SES_F64, 4, gd, gs_grid, sizeof gs_grid)
                        : constant(g, SES_F32, 4, gd, gf, sizeof gf);
            assert_int_equal(ses_graph_op(g, "GridSample", "gs", in, 2, a, 3, &y), SES_OK);
            ses_tensor_t *t = eval1(g, y);
            assert_int_equal(ses_tensor_rank(t), 4);
            assert_int_equal(ses_tensor_dims(t)[2], 2);
            assert_int_equal(ses_tensor_dims(t)[3], 3);
            for (int i = 0; i < 6; i++) {
                const double got = f64 ? ((const double *)ses_tensor_data(t))[i]
                                       : ((const float *)ses_tensor_data(t))[i];
                if (fabs(got - gs_cases[c].want[i]) > (f64 ? 1e-12 : 1e-5))
                    fail_msg("%s %s align_corners %d (%s): element %d is %.15g, want %.15g",
                             gs_cases[c].mode, gs_cases[c].padding, gs_cases[c].align,
                             f64 ? "f64" : "f32", i, got, gs_cases[c].want[i]);
            }
            ses_tensor_release(t);
            ses_graph_release(g);
        }
}

/* Opset 20's volumetric GridSample: x [1, 2, 2, 3, 4] (x_value), grid [1, 1, 2, 2, 3] whose
 * entries are (W, H, D) coordinates; the want rows are torch's (float64) for linear and nearest
 * with each padding and align_corners. No coordinate falls on a half: torch's 5-D nearest rounds
 * halves away from zero where its 4-D one (and this driver, on every rank) rounds them to even. */
static const struct {
    const char *mode, *padding;
    int align;
    double want[8];
} gs3_cases[] = {
    {"bilinear",
     "zeros",
     0,
     {0.392419447590248, 1.68035446644572, 0.331921147396108, 4.55880329141138, 3.80043454720961,
      4.43324623166432, 3.32116224800157, 16.2885076318373}},
    {"bilinear",
     "zeros",
     1,
     {0.755063090102777, 3.02574895551935, 1.62894367519873, 2.70477988234879, 10.6846351170196,
      10.7889101951496, 13.697569445039, 14.5759690344708}},
    {"bilinear",
     "border",
     0,
     {1.30806482530083, 3.69308673944115, 1.65960573698054, 4.55880329141138, 12.6681151573654,
      9.74339831135014, 16.6058112400078, 16.2885076318373}},
    {"bilinear",
     "border",
     1,
     {0.888309517767973, 3.02574895551935, 1.91640432376321, 2.70477988234879, 12.5701589611996,
      10.7889101951496, 16.1147875823988, 14.5759690344708}},
    {"bilinear",
     "reflection",
     0,
     {1.30806482530083, 3.69308673944115, 1.65960573698054, 4.55880329141138, 12.6681151573654,
      9.74339831135014, 16.6058112400078, 16.2885076318373}},
    {"bilinear",
     "reflection",
     1,
     {0.893051211662218, 3.02574895551935, 1.7600632160269, 2.70477988234879, 12.6296039111816,
      10.7889101951496, 14.7681040538679, 14.5759690344708}},
    {"nearest",
     "zeros",
     0,
     {0, 4.174504701631, 0, 5.6187092865898, 0, 10.4759274104046, 0, 15.5869116035986}},
    {"nearest",
     "zeros",
     1,
     {-0.377533187453952, 2.97095979615637, 0.86056261224422, 5.6187092865898, 16.8127173649236,
      8.64460466276841, 17.4239343216335, 15.5869116035986}},
    {"nearest",
     "border",
     0,
     {-0.377533187453952, 4.174504701631, 0.86056261224422, 5.6187092865898, 16.8127173649236,
      10.4759274104046, 17.4239343216335, 15.5869116035986}},
    {"nearest",
     "border",
     1,
     {-0.377533187453952, 2.97095979615637, 0.86056261224422, 5.6187092865898, 16.8127173649236,
      8.64460466276841, 17.4239343216335, 15.5869116035986}},
    {"nearest",
     "reflection",
     0,
     {-0.377533187453952, 4.174504701631, 0.86056261224422, 5.6187092865898, 16.8127173649236,
      10.4759274104046, 17.4239343216335, 15.5869116035986}},
    {"nearest",
     "reflection",
     1,
     {-0.377533187453952, 2.97095979615637, 0.86056261224422, 5.6187092865898, 16.8127173649236,
      8.64460466276841, 17.4239343216335, 15.5869116035986}},
};

static void grid_sample_is_volumetric_as_torch_5d(void **state) {
    static const double grid[12] = {-1.1, -0.3, 0.2, 0.55, 0.9, -0.8,
                                    0.05, -0.6, 1.3, 0.7,  0.1, 0.4};
    const int64_t xd[5] = {1, 2, 2, 3, 4}, gd[5] = {1, 1, 2, 2, 3};
    double x[48];

    (void)state;
    for (int i = 0; i < 48; i++)
        x[i] = x_value(i);
    for (size_t c = 0; c < sizeof gs3_cases / sizeof gs3_cases[0]; c++) {
        ses_graph_t *g = NULL;
        ses_edge_t in[2], y;
        /* opset 20's name for bilinear */
        const char *mode = !strcmp(gs3_cases[c].mode, "bilinear") ? "linear" : "nearest";
        ses_attr_t a[3] = {ses_attr_string("mode", mode),
                           ses_attr_string("padding_mode", gs3_cases[c].padding),
                           ses_attr_int("align_corners", gs3_cases[c].align)};
        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = constant(g, SES_F64, 5, xd, x, sizeof x);
        in[1] = constant(g, SES_F64, 5, gd, grid, sizeof grid);
        assert_int_equal(ses_graph_op(g, "GridSample", "gs3", in, 2, a, 3, &y), SES_OK);
        ses_tensor_t *t = eval1(g, y);
        assert_int_equal(ses_tensor_rank(t), 5);
        assert_int_equal(ses_tensor_count(t), 8);
        for (int i = 0; i < 8; i++) {
            const double got = ((const double *)ses_tensor_data(t))[i];
            if (fabs(got - gs3_cases[c].want[i]) > 1e-12)
                fail_msg("%s %s align_corners %d: element %d is %.15g, want %.15g", mode,
                         gs3_cases[c].padding, gs3_cases[c].align, i, got, gs3_cases[c].want[i]);
        }
        ses_tensor_release(t);
        ses_graph_release(g);
    }
}

/* Points far outside or NaN read nothing with zeros padding and the edge with border (no
 * undefined conversion of a huge coordinate): x [1, 1, 3, 4] = 1..12 at rows 1 and 1.3. */
static void grid_sample_takes_far_and_nan_points(void **state) {
    const float x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const float grid[6] = {NAN, 0.0f, 1e30f, 0.0f, -INFINITY, 0.2f};
    const int64_t xd[4] = {1, 1, 3, 4}, gd[4] = {1, 1, 3, 2};
    static const char *const paddings[2] = {"zeros", "border"};
    const float want[2][3] = {{0, 0, 0}, {5, 8, 6.2f}};

    (void)state;
    for (int p = 0; p < 2; p++) {
        ses_graph_t *g = NULL;
        ses_edge_t in[2], y;
        ses_attr_t a = ses_attr_string("padding_mode", paddings[p]);
        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = constant(g, SES_F32, 4, xd, x, sizeof x);
        in[1] = constant(g, SES_F32, 4, gd, grid, sizeof grid);
        assert_int_equal(ses_graph_op(g, "GridSample", "far", in, 2, &a, 1, &y), SES_OK);
        ses_tensor_t *t = eval1(g, y);
        for (int i = 0; i < 3; i++) {
            const float got = ((const float *)ses_tensor_data(t))[i];
            if (fabsf(got - want[p][i]) > 1e-5f)
                fail_msg("%s: element %d is %g, want %g", paddings[p], i, got, want[p][i]);
        }
        ses_tensor_release(t);
        ses_graph_release(g);
    }
}

static void grid_sample_errors_name_the_node(void **state) {
    const float x[12] = {0}, grid[12] = {0};
    const double gridd[12] = {0};
    const int64_t xd[4] = {1, 1, 3, 4}, gd[4] = {1, 2, 3, 2}, gbad[4] = {1, 2, 2, 3},
                  x2[2] = {3, 4};
    ses_graph_t *g = NULL;
    ses_edge_t in[2], y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 4, xd, x, sizeof x);
    in[1] = constant(g, SES_F32, 4, gbad, grid, sizeof grid);
    assert_int_equal(ses_graph_op(g, "GridSample", "shape", in, 2, NULL, 0, &y), SES_OK);
    {
        const char *parts[] = {"GridSample \"shape\"", "grid f32[1,2,2,3]",
                               "[N, O1..Or, r] with X's N and r = 2"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    in[1] = constant(g, SES_F64, 4, gd, gridd, sizeof gridd);
    assert_int_equal(ses_graph_op(g, "GridSample", "dtype", in, 2, NULL, 0, &y), SES_OK);
    {
        const char *parts[] = {"GridSample \"dtype\"", "grid"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    in[1] = constant(g, SES_F32, 4, gd, grid, sizeof grid);
    {
        ses_attr_t a = ses_attr_string("padding_mode", "wrap");
        assert_int_equal(ses_graph_op(g, "GridSample", "pad", in, 2, &a, 1, &y), SES_OK);
        const char *parts[] = {"GridSample \"pad\"", "padding_mode is \"wrap\""};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        ses_attr_t a = ses_attr_string("mode", "area");
        assert_int_equal(ses_graph_op(g, "GridSample", "mode", in, 2, &a, 1, &y), SES_OK);
        const char *parts[] = {"GridSample \"mode\"", "attribute mode is \"area\""};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    in[0] = constant(g, SES_F32, 2, x2, x, sizeof x);
    assert_int_equal(ses_graph_op(g, "GridSample", "rank", in, 2, NULL, 0, &y), SES_OK);
    {
        const char *parts[] = {"GridSample \"rank\"", "X must be [N, C, D1, ...]"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    /* cubic is 4-D only */
    {
        const float x5[12] = {0}, g5[12] = {0};
        const int64_t d5[5] = {1, 1, 2, 2, 3}, gd5[5] = {1, 1, 2, 2, 3};
        ses_edge_t in5[2] = {constant(g, SES_F32, 5, d5, x5, sizeof x5),
                             constant(g, SES_F32, 5, gd5, g5, sizeof g5)};
        ses_attr_t a = ses_attr_string("mode", "cubic");
        assert_int_equal(ses_graph_op(g, "GridSample", "cubic3", in5, 2, &a, 1, &y), SES_OK);
        const char *parts[] = {"GridSample \"cubic3\"", "cubic mode takes a 4-D X"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resize_matches_the_reference_in_every_mode_and_transform),
        cmocka_unit_test(resize_cubic_options_and_crop_match_the_reference),
        cmocka_unit_test(resize_gives_hand_computed_values),
        cmocka_unit_test(resize_axes_and_keep_aspect_ratio_policy_shape_the_output),
        cmocka_unit_test(resize_antialias_matches_torch),
        cmocka_unit_test(resize_nearest_copies_integers),
        cmocka_unit_test(resize_many_outer_taps_match_the_transposed_resize),
        cmocka_unit_test(resize_grad_is_the_adjoint_of_resize),
        cmocka_unit_test(resize_errors_name_the_node_and_the_input),
        cmocka_unit_test(resize_reads_fed_scales),
        cmocka_unit_test(resize_reads_sizes_computed_from_the_shape),
        cmocka_unit_test(grid_sample_matches_torch_in_every_mode_and_padding),
        cmocka_unit_test(grid_sample_is_volumetric_as_torch_5d),
        cmocka_unit_test(grid_sample_takes_far_and_nan_points),
        cmocka_unit_test(grid_sample_errors_name_the_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
