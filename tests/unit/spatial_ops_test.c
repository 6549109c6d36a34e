/*
 * The spatial and normalization ops of src/ops/conv_transpose.c, spatial.c and norm.c evaluated
 * on the CPU driver: values against references written here in double (a direct scatter for
 * ConvTranspose, no GEMM), and errors that name the node and the input or attribute at fault.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "cpu_eval_util.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static double uniform(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return -1.0 + 2.0 * (double)(rng >> 11) / 9007199254740992.0;
}

static int64_t count_of(size_t rank, const int64_t *dims) {
    int64_t n = 1;
    for (size_t d = 0; d < rank; d++)
        n *= dims[d];
    return n;
}

/* A constant of @p dtype (f32 or f64) holding @p values (doubles, converted). */
static ses_edge_t constant(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                           const double *values) {
    ses_tensor_t *t = NULL;
    ses_edge_t e = {NULL, 0};
    const int64_t n = count_of(rank, dims);

    assert_int_equal(ses_tensor_create(dtype, rank, dims, &t), SES_OK);
    for (int64_t i = 0; i < n; i++) {
        if (dtype == SES_F32)
            ((float *)ses_tensor_data(t))[i] = (float)values[i];
        else
            ((double *)ses_tensor_data(t))[i] = values[i];
    }
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

/* Element @p i of a float tensor as a double. */
static double at(ses_tensor_t *t, int64_t i) {
    if (ses_tensor_dtype(t) == SES_F32)
        return ((const float *)ses_tensor_data(t))[i];
    return ((const double *)ses_tensor_data(t))[i];
}

/* @p got has @p rank and @p dims and its values are within @p tol of @p want. */
static void expect_values(const char *label, ses_tensor_t *got, size_t rank, const int64_t *dims,
                          const double *want, double tol) {
    const int64_t *gd = ses_tensor_dims(got);
    if (ses_tensor_rank(got) != rank)
        fail_msg("%s: rank %zu, want %zu", label, (size_t)ses_tensor_rank(got), rank);
    for (size_t d = 0; d < rank; d++)
        if (gd[d] != dims[d])
            fail_msg("%s: dim %zu is %lld, want %lld", label, d, (long long)gd[d],
                     (long long)dims[d]);
    for (int64_t i = 0; i < count_of(rank, dims); i++)
        if (fabs(at(got, i) - want[i]) > tol * fmax(1.0, fabs(want[i])))
            fail_msg("%s: element %lld is %.9g, want %.9g", label, (long long)i, at(got, i),
                     want[i]);
}

/* ---- ConvTranspose ------------------------------------------------------------------------ */

typedef struct ct_case {
    const char *label;
    ses_dtype_t dtype;
    size_t n; /* spatial dims, 1 to 3 */
    int64_t batch, c, mg, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], op[3];
    int bias;
    const char *auto_pad;    /* NULL: explicit pads */
    int64_t output_shape[3]; /* used when [0] > 0 */
} ct_case_t;

/*
 * Y[n, g * mg + m, o] += X[n, g * cg + c, i] * W[g * cg + c, m, t] wherever
 * o = i * s - pb + t * d lands inside Y: the definition, one tap at a time.
 */
static void ct_reference(const ct_case_t *c, const int64_t *out, const double *x, const double *w,
                         const double *b, double *y) {
    const int64_t cg = c->c / c->group, m = c->mg * c->group;
    int64_t in_count = 1, out_count = 1, k_count = 1;
    for (size_t d = 0; d < c->n; d++) {
        in_count *= c->in[d];
        out_count *= out[d];
        k_count *= c->k[d];
    }
    for (int64_t i = 0; i < c->batch * m * out_count; i++)
        y[i] = b ? b[(i / out_count) % m] : 0.0;
    for (int64_t n = 0; n < c->batch; n++)
        for (int64_t ch = 0; ch < c->c; ch++)
            for (int64_t mm = 0; mm < c->mg; mm++)
                for (int64_t i = 0; i < in_count; i++)
                    for (int64_t t = 0; t < k_count; t++) {
                        int64_t ii = i, tt = t, o = 0, inside = 1, pos[3], tap[3];
                        for (size_t d = c->n; d-- > 0;) {
                            pos[d] = ii % c->in[d];
                            ii /= c->in[d];
                            tap[d] = tt % c->k[d];
                            tt /= c->k[d];
                        }
                        for (size_t d = 0; d < c->n; d++) {
                            const int64_t od = pos[d] * c->s[d] - c->pb[d] + tap[d] * c->d[d];
                            inside = inside && od >= 0 && od < out[d];
                            o = o * out[d] + od;
                        }
                        if (!inside)
                            continue;
                        const int64_t g = ch / cg, oc = g * c->mg + mm;
                        y[(n * m + oc) * out_count + o] +=
                            x[(n * c->c + ch) * in_count + i] * w[(ch * c->mg + mm) * k_count + t];
                    }
}

static void run_ct_case(const ct_case_t *c) {
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y;
    ses_attr_t a[8];
    size_t na = 0;
    int64_t xd[5], wd[5], yd[5], bd[1], out[3], pads[6];
    const int64_t m = c->mg * c->group;
    double *x, *w, *b, *want;

    xd[0] = c->batch;
    xd[1] = c->c;
    wd[0] = c->c;
    wd[1] = c->mg;
    yd[0] = c->batch;
    yd[1] = m;
    bd[0] = m;
    for (size_t d = 0; d < c->n; d++) {
        xd[2 + d] = c->in[d];
        wd[2 + d] = c->k[d];
        out[d] = c->output_shape[0] > 0 ? c->output_shape[d]
                                        : c->s[d] * (c->in[d] - 1) + c->op[d] +
                                              (c->k[d] - 1) * c->d[d] + 1 - c->pb[d] - c->pe[d];
        yd[2 + d] = out[d];
        pads[d] = c->pb[d];
        pads[c->n + d] = c->pe[d];
    }
    x = malloc(sizeof *x * (size_t)count_of(2 + c->n, xd));
    w = malloc(sizeof *w * (size_t)count_of(2 + c->n, wd));
    b = malloc(sizeof *b * (size_t)m);
    want = malloc(sizeof *want * (size_t)count_of(2 + c->n, yd));
    for (int64_t i = 0; i < count_of(2 + c->n, xd); i++)
        x[i] = uniform();
    for (int64_t i = 0; i < count_of(2 + c->n, wd); i++)
        w[i] = uniform();
    for (int64_t i = 0; i < m; i++)
        b[i] = uniform();
    ct_reference(c, out, x, w, c->bias ? b : NULL, want);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, c->dtype, 2 + c->n, xd, x);
    in[1] = constant(g, c->dtype, 2 + c->n, wd, w);
    in[2] = constant(g, c->dtype, 1, bd, b);
    a[na++] = ses_attr_ints("strides", c->s, c->n);
    a[na++] = ses_attr_ints("dilations", c->d, c->n);
    a[na++] = ses_attr_int("group", c->group);
    a[na++] = ses_attr_ints("output_padding", c->op, c->n);
    if (c->output_shape[0] > 0)
        a[na++] = ses_attr_ints("output_shape", c->output_shape, c->n);
    else if (c->auto_pad)
        a[na++] = ses_attr_string("auto_pad", c->auto_pad);
    else
        a[na++] = ses_attr_ints("pads", pads, 2 * c->n);
    assert_int_equal(ses_graph_op(g, "ConvTranspose", "ct", in, c->bias ? 3 : 2, a, na, &y),
                     SES_OK);
    ses_tensor_t *got = eval1(g, y);
    expect_values(c->label, got, 2 + c->n, yd, want, c->dtype == SES_F32 ? 1e-5 : 1e-12);
    ses_tensor_release(got);
    ses_graph_release(g);
    free(x);
    free(w);
    free(b);
    free(want);
}

/* The pads the cases with auto_pad or output_shape give are worked out by hand in the case. */
static void conv_transpose_matches_a_direct_scatter(void **state) {
    /* clang-format off: one case per entry */
    static const ct_case_t cases[] = {
        {"1-D f32, bias", SES_F32, 1, 2, 3, 2, 1, {5}, {3}, {1}, {1}, {0}, {0}, {0}, 1, NULL, {0}},
        {"1-D f64, stride 3, dilation 2, output_padding 2",
         SES_F64,
         1,
         1,
         2,
         3,
         1,
         {4},
         {2},
         {3},
         {2},
         {1},
         {0},
         {2},
         0,
         NULL,
         {0}},
        {"2-D f32, strides, pads, 2 groups, bias",
         SES_F32,
         2,
         2,
         4,
         3,
         2,
         {4, 3},
         {3, 2},
         {2, 1},
         {1, 1},
         {1, 0},
         {0, 1},
         {1, 0},
         1,
         NULL,
         {0}},
        {"2-D f64, dilations, depthwise",
         SES_F64,
         2,
         1,
         3,
         1,
         3,
         {3, 4},
         {2, 3},
         {1, 2},
         {2, 1},
         {0, 1},
         {1, 0},
         {0, 1},
         1,
         NULL,
         {0}},
        {"2-D f32, many channels (blocks of the column matrix)",
         SES_F32,
         2,
         2,
         5,
         40,
         1,
         {6, 5},
         {3, 3},
         {2, 2},
         {1, 1},
         {1, 1},
         {1, 1},
         {1, 1},
         1,
         NULL,
         {0}},
        {"3-D f32, strides, bias",
         SES_F32,
         3,
         1,
         2,
         2,
         1,
         {2, 3, 2},
         {2, 2, 3},
         {2, 1, 2},
         {1, 1, 1},
         {0, 1, 0},
         {1, 0, 0},
         {0, 0, 1},
         1,
         NULL,
         {0}},
        /* SAME_LOWER, stride 2, kernel 3, in 3: out 6, total pads 2*2+3-6 = 1, at the begin. */
        {"2-D f64, auto_pad SAME_LOWER",
         SES_F64,
         2,
         1,
         2,
         2,
         1,
         {3, 3},
         {3, 3},
         {2, 2},
         {1, 1},
         {1, 1},
         {0, 0},
         {0, 0},
         0,
         "SAME_LOWER",
         {0}},
        /* SAME_UPPER: the odd pad at the end. */
        {"2-D f32, auto_pad SAME_UPPER",
         SES_F32,
         2,
         1,
         2,
         2,
         1,
         {3, 3},
         {3, 3},
         {2, 2},
         {1, 1},
         {0, 0},
         {1, 1},
         {0, 0},
         1,
         "SAME_UPPER",
         {0}},
        /* output_shape [8, 9] from in [3, 4], stride 3, kernel 3: natural 9 and 12; pads
         * 1 at the begin, 0 at the end along the first (total 1) and 2, 1 along the second. */
        {"2-D f32, output_shape",
         SES_F32,
         2,
         1,
         1,
         2,
         1,
         {3, 4},
         {3, 3},
         {3, 3},
         {1, 1},
         {1, 2},
         {0, 1},
         {0, 0},
         0,
         NULL,
         {8, 9}},
    };
    /* clang-format on */
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_ct_case(&cases[i]);
}

/* An output_shape larger than the taps reach is zeros at the end (ONNX's own test). */
static void conv_transpose_output_shape_past_the_taps_is_zeros_at_the_end(void **state) {
    ses_graph_t *g = NULL;
    ses_edge_t in[2], y;
    const int64_t xd[] = {1, 1, 2}, wd[] = {1, 1, 2}, os[] = {5}, yd[] = {1, 1, 5};
    const double x[] = {1, 2}, w[] = {1, 10}, want[] = {1, 10, 2, 20, 0};
    const int64_t strides[] = {2};
    ses_attr_t a[] = {ses_attr_ints("output_shape", os, 1), ses_attr_ints("strides", strides, 1)};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 3, xd, x);
    in[1] = constant(g, SES_F32, 3, wd, w);
    assert_int_equal(ses_graph_op(g, "ConvTranspose", "ct", in, 2, a, 2, &y), SES_OK);
    ses_tensor_t *got = eval1(g, y);
    expect_values("output_shape 5", got, 3, yd, want, 0);
    ses_tensor_release(got);
    ses_graph_release(g);
}

/* Builds ConvTranspose of X @p xd and W @p wd (f32 zeros, rank @p rank) with @p attrs and checks
 * the error. */
static void ct_error(size_t rank, const int64_t *xd, const int64_t *wd, ses_dtype_t wdtype,
                     const ses_attr_t *attrs, size_t n_attrs, const char *const *parts,
                     size_t n_parts) {
    ses_graph_t *g = NULL;
    ses_edge_t in[2], y;
    double zeros[64] = {0};

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, rank, xd, zeros);
    in[1] = constant(g, wdtype, rank, wd, zeros);
    assert_int_equal(ses_graph_op(g, "ConvTranspose", "bad", in, 2, attrs, n_attrs, &y), SES_OK);
    expect_error(g, y, SES_INVALID_ARGUMENT, parts, n_parts);
    ses_graph_release(g);
}

static void conv_transpose_errors_name_the_node_and_what_is_wrong(void **state) {
    const int64_t x3[] = {1, 2, 3}, w3[] = {2, 1, 2}, w_c[] = {3, 1, 2}, x2[] = {2, 3};
    const int64_t two[] = {2, 2}, neg[] = {-1}, big_op[] = {2};
    (void)state;
    {
        const char *parts[] = {"ConvTranspose \"bad\"", "W's dimension 0 must be X's channels",
                               "f32[3,1,2]"};
        ct_error(3, x3, w_c, SES_F32, NULL, 0, parts, 3);
    }
    {
        const char *parts[] = {"ConvTranspose \"bad\"", "X must be [N, C, spatial...]"};
        ct_error(2, x2, x2, SES_F32, NULL, 0, parts, 2);
    }
    {
        const char *parts[] = {"\"bad\"", "W", "f64"};
        ct_error(3, x3, w3, SES_F64, NULL, 0, parts, 3);
    }
    {
        ses_attr_t a = ses_attr_ints("strides", two, 2);
        const char *parts[] = {"attribute strides [2,2] has 2 entries; it needs 1"};
        ct_error(3, x3, w3, SES_F32, &a, 1, parts, 1);
    }
    {
        ses_attr_t a = ses_attr_ints("dilations", neg, 1);
        const char *parts[] = {"attribute dilations [-1]", ">= 1"};
        ct_error(3, x3, w3, SES_F32, &a, 1, parts, 2);
    }
    {
        ses_attr_t a = ses_attr_ints("output_padding", big_op, 1);
        const char *parts[] = {"output_padding [2]", "smaller than the stride or the dilation"};
        ct_error(3, x3, w3, SES_F32, &a, 1, parts, 2);
    }
    {
        ses_attr_t a = ses_attr_int("group", 3);
        const char *parts[] = {"attribute group is 3", "divide X's channels"};
        ct_error(3, x3, w3, SES_F32, &a, 1, parts, 2);
    }
    {
        ses_attr_t a[] = {ses_attr_string("auto_pad", "SAME_UPPER"), ses_attr_ints("pads", two, 2)};
        const char *parts[] = {"pads and auto_pad=SAME_UPPER are both given"};
        ct_error(3, x3, w3, SES_F32, a, 2, parts, 1);
    }
    {
        ses_attr_t a = ses_attr_string("auto_pad", "SAME");
        const char *parts[] = {"auto_pad is \"SAME\""};
        ct_error(3, x3, w3, SES_F32, &a, 1, parts, 1);
    }
    {
        const int64_t pads[] = {3, 3};
        ses_attr_t a = ses_attr_ints("pads", pads, 2);
        const char *parts[] = {"pads [3,3] removes more than the output has"};
        ct_error(3, x3, w3, SES_F32, &a, 1, parts, 1);
    }
    {
        const int64_t ks[] = {3};
        ses_attr_t a = ses_attr_ints("kernel_shape", ks, 1);
        const char *parts[] = {"kernel_shape [3] does not match W's spatial dims"};
        ct_error(3, x3, w3, SES_F32, &a, 1, parts, 1);
    }
    /* A bias of the wrong length. */
    {
        ses_graph_t *g = NULL;
        ses_edge_t in[3], y;
        const int64_t bd[] = {2};
        double zeros[8] = {0};
        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = constant(g, SES_F32, 3, x3, zeros);
        in[1] = constant(g, SES_F32, 3, w3, zeros);
        in[2] = constant(g, SES_F32, 1, bd, zeros);
        assert_int_equal(ses_graph_op(g, "ConvTranspose", "bad", in, 3, NULL, 0, &y), SES_OK);
        const char *parts[] = {"B must be 1-D with one entry per output channel", "f32[2]"};
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
        ses_graph_release(g);
    }
}

/* ---- DepthToSpace, SpaceToDepth, Tile ----------------------------------------------------- */

/* A 1-input op @p op of @p x (f32, values 0, 1, 2, ...) with @p attrs, evaluated. */
static ses_tensor_t *run1(const char *op, size_t rank, const int64_t *xd, const ses_attr_t *attrs,
                          size_t n_attrs) {
    ses_graph_t *g = NULL;
    ses_edge_t in, y;
    const int64_t n = count_of(rank, xd);
    double *x = malloc(sizeof *x * (size_t)(n ? n : 1));

    for (int64_t i = 0; i < n; i++)
        x[i] = (double)i;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in = constant(g, SES_F32, rank, xd, x);
    assert_int_equal(ses_graph_op(g, op, "op", &in, 1, attrs, n_attrs, &y), SES_OK);
    ses_tensor_t *got = eval1(g, y);
    ses_graph_release(g);
    free(x);
    return got;
}

/* DCR and CRD on a [1, 8, 2, 1] input with blocksize 2, worked by the reshape-transpose-reshape
 * of ONNX's definition (here by hand); SpaceToDepth undoes DCR. */
static void depth_to_space_and_back(void **state) {
    const int64_t xd[] = {1, 8, 2, 1}, yd[] = {1, 2, 4, 2};
    /* x[c, h] = 2c + h. DCR: y[c', 2h+i, j] = x[(2i+j)*2 + c', h]. */
    const double dcr[] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
    /* CRD: y[c', 2h+i, j] = x[4c' + 2i + j, h]. */
    const double crd[] = {0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};
    ses_attr_t a[] = {ses_attr_int("blocksize", 2), ses_attr_string("mode", "CRD")};
    (void)state;

    ses_tensor_t *got = run1("DepthToSpace", 4, xd, a, 1);
    expect_values("DCR", got, 4, yd, dcr, 0);
    ses_tensor_release(got);
    got = run1("DepthToSpace", 4, xd, a, 2);
    expect_values("CRD", got, 4, yd, crd, 0);
    ses_tensor_release(got);

    /* SpaceToDepth of the DCR result's layout: y [1,2,4,2] -> [1,8,2,1] is DCR's inverse. */
    {
        ses_graph_t *g = NULL;
        ses_edge_t in, y, back;
        double x[16];
        for (int i = 0; i < 16; i++)
            x[i] = i;
        assert_int_equal(ses_graph_create(&g), SES_OK);
        in = constant(g, SES_F64, 4, xd, x);
        assert_int_equal(ses_graph_op(g, "DepthToSpace", "d2s", &in, 1, a, 1, &y), SES_OK);
        assert_int_equal(ses_graph_op(g, "SpaceToDepth", "s2d", &y, 1, a, 1, &back), SES_OK);
        got = eval1(g, back);
        expect_values("SpaceToDepth(DepthToSpace(x))", got, 4, xd, x, 0);
        ses_tensor_release(got);
        ses_graph_release(g);
    }
}

static void depth_space_errors_name_the_node(void **state) {
    const int64_t x[] = {1, 6, 2, 2}, x3[] = {6, 2, 2};
    ses_attr_t b2 = ses_attr_int("blocksize", 2), b0 = ses_attr_int("blocksize", 0);
    ses_attr_t a[] = {ses_attr_int("blocksize", 1), ses_attr_string("mode", "RDC")};
    ses_graph_t *g = NULL;
    ses_edge_t in, y;
    double zeros[24] = {0};
    (void)state;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in = constant(g, SES_F32, 4, x, zeros);
    {
        const char *parts[] = {"DepthToSpace \"d\"", "multiple of blocksize^2 = 4", "f32[1,6,2,2]"};
        assert_int_equal(ses_graph_op(g, "DepthToSpace", "d", &in, 1, &b2, 1, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    {
        const char *parts[] = {"DepthToSpace \"m\"", "mode is \"RDC\""};
        assert_int_equal(ses_graph_op(g, "DepthToSpace", "m", &in, 1, a, 2, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        const char *parts[] = {"SpaceToDepth \"z\"", "blocksize is 0"};
        assert_int_equal(ses_graph_op(g, "SpaceToDepth", "z", &in, 1, &b0, 1, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        const char *parts[] = {"SpaceToDepth \"none\"", "blocksize"};
        assert_int_equal(ses_graph_op(g, "SpaceToDepth", "none", &in, 1, NULL, 0, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    in = constant(g, SES_F32, 3, x3, zeros);
    {
        const char *parts[] = {"SpaceToDepth \"r\"", "must be 4-D", "f32[6,2,2]"};
        assert_int_equal(ses_graph_op(g, "SpaceToDepth", "r", &in, 1, &b2, 1, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    ses_graph_release(g);
}

/* Tile at i32 (any dtype is a copy of elements) with a constant repeats, and at f32 with a
 * repeats that is fed; a zero repeat empties the output. */
static void tile_repeats_each_dim(void **state) {
    const int64_t xd[] = {2, 3}, rd[] = {2}, yd[] = {4, 6};
    const int32_t x[] = {1, 2, 3, 4, 5, 6};
    const int64_t reps[] = {2, 2}, zero[] = {0, 3};
    ses_graph_t *g = NULL;
    ses_tensor_t *xt = NULL, *rt = NULL, *got = NULL;
    ses_edge_t in[2], y, r;
    const char *cpu = "cpu";
    ses_session_t *s = NULL;
    (void)state;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_I32, 2, xd, x, sizeof x, &xt), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, xt, &in[0]), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, rd, reps, sizeof reps, &rt), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, rt, &in[1]), SES_OK);
    assert_int_equal(ses_graph_op(g, "Tile", "t", in, 2, NULL, 0, &y), SES_OK);
    got = eval1(g, y);
    {
        const int32_t want[] = {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6,
                                1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6};
        assert_int_equal(ses_tensor_rank(got), 2);
        assert_int_equal(ses_tensor_dims(got)[0], yd[0]);
        assert_int_equal(ses_tensor_dims(got)[1], yd[1]);
        assert_memory_equal(ses_tensor_data(got), want, sizeof want);
    }
    ses_tensor_release(got);
    ses_tensor_release(rt);
    /* repeats fed: a placeholder. */
    assert_int_equal(ses_graph_placeholder(g, "reps", SES_I64, 1, rd, &r), SES_OK);
    in[1] = r;
    assert_int_equal(ses_graph_op(g, "Tile", "fed", in, 2, NULL, 0, &y), SES_OK);
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, rd, zero, sizeof zero, &rt), SES_OK);
    {
        const ses_feed_t feed = {r, rt};
        got = NULL;
        if (ses_session_eval(s, &y, 1, &feed, 1, NULL, 0, &got) != SES_OK)
            fail_msg("eval: %s", ses_last_error());
        assert_int_equal(ses_tensor_dims(got)[0], 0);
        assert_int_equal(ses_tensor_dims(got)[1], 9);
        ses_tensor_release(got);
    }
    ses_tensor_release(rt);
    ses_session_destroy(s);
    ses_tensor_release(xt);
    ses_graph_release(g);
}

static void tile_errors_name_the_node_and_repeats(void **state) {
    const int64_t xd[] = {2, 3}, rd1[] = {1}, rd2[] = {2};
    const int64_t one[] = {2}, neg[] = {1, -1};
    double zeros[6] = {0};
    ses_graph_t *g = NULL;
    ses_edge_t in[2], y;
    (void)state;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 2, xd, zeros);
    {
        ses_tensor_t *t = NULL;
        assert_int_equal(ses_tensor_create_from(SES_I64, 1, rd1, one, sizeof one, &t), SES_OK);
        assert_int_equal(ses_graph_constant(g, NULL, t, &in[1]), SES_OK);
        ses_tensor_release(t);
        const char *parts[] = {"Tile \"short\"", "one entry per input dimension", "i64[1]"};
        assert_int_equal(ses_graph_op(g, "Tile", "short", in, 2, NULL, 0, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    {
        ses_tensor_t *t = NULL;
        assert_int_equal(ses_tensor_create_from(SES_I64, 1, rd2, neg, sizeof neg, &t), SES_OK);
        assert_int_equal(ses_graph_constant(g, NULL, t, &in[1]), SES_OK);
        ses_tensor_release(t);
        const char *parts[] = {"Tile \"neg\"", "repeats [1,-1] has a negative entry"};
        assert_int_equal(ses_graph_op(g, "Tile", "neg", in, 2, NULL, 0, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        in[1] = constant(g, SES_F32, 1, rd2, zeros);
        const char *parts[] = {"Tile \"f\"", "repeats", "i64"};
        assert_int_equal(ses_graph_op(g, "Tile", "f", in, 2, NULL, 0, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    ses_graph_release(g);
}

/* ---- MaxPool's Indices, MaxPool at u8 and i8, MaxUnpool -------------------------------------- */

/* x [1,1,3,4]; a 2x2 pool, stride 2, pads end 1 on the rows: windows rows {0,1}, {2}, cols
 * {0,1}, {2,3}. Values chosen with the max of each window at a known place. */
static void max_pool_gives_indices_in_either_storage_order(void **state) {
    const int64_t xd[] = {1, 2, 3, 4}, yd[] = {1, 2, 2, 2};
    const int64_t ks[] = {2, 2}, st[] = {2, 2}, pads[] = {0, 0, 1, 0};
    double x[24];
    ses_graph_t *g = NULL;
    ses_node_t *node = NULL;
    ses_edge_t in;
    (void)state;

    for (int i = 0; i < 24; i++)
        x[i] = (double)((i * 7) % 24); /* a permutation of 0..23 */
    /* Reference: for each window the largest value and its flat offset. */
    double want_y[8], want_row[8], want_col[8];
    for (int c = 0; c < 2; c++)
        for (int oh = 0; oh < 2; oh++)
            for (int ow = 0; ow < 2; ow++) {
                double best = -1;
                int bh = 0, bw = 0;
                for (int h = 2 * oh; h < 2 * oh + 2 && h < 3; h++)
                    for (int w = 2 * ow; w < 2 * ow + 2; w++)
                        if (x[c * 12 + h * 4 + w] > best) {
                            best = x[c * 12 + h * 4 + w];
                            bh = h;
                            bw = w;
                        }
                const int o = c * 4 + oh * 2 + ow;
                want_y[o] = best;
                want_row[o] = c * 12 + bh * 4 + bw;
                want_col[o] = c * 12 + bh + bw * 3;
            }
    for (int order = 0; order <= 1; order++) {
        ses_attr_t a[] = {ses_attr_ints("kernel_shape", ks, 2), ses_attr_ints("strides", st, 2),
                          ses_attr_ints("pads", pads, 4), ses_attr_int("storage_order", order)};
        for (int dt = 0; dt < 3; dt++) {
            const ses_dtype_t dtype = dt == 0 ? SES_F32 : dt == 1 ? SES_F64 : SES_U8;
            assert_int_equal(ses_graph_create(&g), SES_OK);
            if (dtype == SES_U8) {
                ses_tensor_t *t = NULL;
                uint8_t bytes[24];
                for (int i = 0; i < 24; i++)
                    bytes[i] = (uint8_t)x[i];
                assert_int_equal(ses_tensor_create_from(SES_U8, 4, xd, bytes, sizeof bytes, &t),
                                 SES_OK);
                assert_int_equal(ses_graph_constant(g, NULL, t, &in), SES_OK);
                ses_tensor_release(t);
            } else {
                in = constant(g, dtype, 4, xd, x);
            }
            assert_int_equal(ses_graph_add_node(g, "MaxPool", "mp", &in, 1, a, 4, 2, &node),
                             SES_OK);
            const ses_edge_t outs[2] = {ses_node_output(node, 0), ses_node_output(node, 1)};
            const char *cpu = "cpu";
            ses_session_t *s = NULL;
            ses_tensor_t *got[2] = {NULL, NULL};
            assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
            if (ses_session_eval(s, outs, 2, NULL, 0, NULL, 0, got) != SES_OK)
                fail_msg("eval: %s", ses_last_error());
            if (dtype == SES_U8) {
                for (int i = 0; i < 8; i++)
                    assert_int_equal(((uint8_t *)ses_tensor_data(got[0]))[i], (int)want_y[i]);
            } else {
                expect_values("MaxPool Y", got[0], 4, yd, want_y, 0);
            }
            assert_int_equal(ses_tensor_dtype(got[1]), SES_I64);
            for (int i = 0; i < 8; i++)
                assert_int_equal(((int64_t *)ses_tensor_data(got[1]))[i],
                                 (int64_t)(order ? want_col[i] : want_row[i]));
            ses_tensor_release(got[0]);
            ses_tensor_release(got[1]);
            ses_session_destroy(s);
            ses_graph_release(g);
        }
    }
}

/* MaxPool at i8 without Indices keeps negative values. */
static void max_pool_at_i8_keeps_signs(void **state) {
    const int64_t xd[] = {1, 1, 2, 2}, ks[] = {2, 2};
    const int8_t x[] = {-5, -3, -128, -7};
    ses_attr_t a = ses_attr_ints("kernel_shape", ks, 2);
    ses_graph_t *g = NULL;
    ses_tensor_t *t = NULL;
    ses_edge_t in, y;
    (void)state;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_I8, 4, xd, x, sizeof x, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &in), SES_OK);
    ses_tensor_release(t);
    assert_int_equal(ses_graph_op(g, "MaxPool", "q", &in, 1, &a, 1, &y), SES_OK);
    ses_tensor_t *got = eval1(g, y);
    assert_int_equal(ses_tensor_count(got), 1);
    assert_int_equal(((int8_t *)ses_tensor_data(got))[0], -3);
    ses_tensor_release(got);
    ses_graph_release(g);
}

/* MaxUnpool puts X at I's offsets into zeros; with output_shape the coordinates are kept. */
static void max_unpool_places_values_at_their_indices(void **state) {
    const int64_t xd[] = {1, 1, 2, 2}, ks[] = {2, 2}, st[] = {2, 2}, os[] = {1, 1, 5, 5};
    const int64_t idx[] = {0, 3, 9, 15}, osd[] = {4};
    const double x[] = {1, 2, 3, 4};
    ses_attr_t a[] = {ses_attr_ints("kernel_shape", ks, 2), ses_attr_ints("strides", st, 2)};
    ses_graph_t *g = NULL;
    ses_tensor_t *t = NULL;
    ses_edge_t in[3], y;
    (void)state;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 4, xd, x);
    assert_int_equal(ses_tensor_create_from(SES_I64, 4, xd, idx, sizeof idx, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &in[1]), SES_OK);
    ses_tensor_release(t);
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, osd, os, sizeof os, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &in[2]), SES_OK);
    ses_tensor_release(t);
    assert_int_equal(ses_graph_op(g, "MaxUnpool", "u", in, 2, a, 2, &y), SES_OK);
    ses_tensor_t *got = eval1(g, y);
    {
        const int64_t yd[] = {1, 1, 4, 4};
        double want[16] = {0};
        want[0] = 1, want[3] = 2, want[9] = 3, want[15] = 4;
        expect_values("MaxUnpool", got, 4, yd, want, 0);
    }
    ses_tensor_release(got);
    assert_int_equal(ses_graph_op(g, "MaxUnpool", "u5", in, 3, a, 2, &y), SES_OK);
    got = eval1(g, y);
    {
        const int64_t yd[] = {1, 1, 5, 5};
        double want[25] = {0};
        want[0] = 1, want[3] = 2, want[2 * 5 + 1] = 3, want[3 * 5 + 3] = 4;
        expect_values("MaxUnpool with output_shape", got, 4, yd, want, 0);
    }
    ses_tensor_release(got);
    /* An index outside the output is named. */
    {
        const int64_t bad[] = {0, 3, 9, 16};
        assert_int_equal(ses_tensor_create_from(SES_I64, 4, xd, bad, sizeof bad, &t), SES_OK);
        assert_int_equal(ses_graph_constant(g, NULL, t, &in[1]), SES_OK);
        ses_tensor_release(t);
        const char *parts[] = {"MaxUnpool \"bad\"", "index 16", "outside the output"};
        assert_int_equal(ses_graph_op(g, "MaxUnpool", "bad", in, 2, a, 2, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    /* I of another shape. */
    {
        const int64_t small[] = {1, 1, 1, 2}, two[] = {0, 1};
        assert_int_equal(ses_tensor_create_from(SES_I64, 4, small, two, sizeof two, &t), SES_OK);
        assert_int_equal(ses_graph_constant(g, NULL, t, &in[1]), SES_OK);
        ses_tensor_release(t);
        const char *parts[] = {"MaxUnpool \"shape\"", "I must have X's shape"};
        assert_int_equal(ses_graph_op(g, "MaxUnpool", "shape", in, 2, a, 2, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    ses_graph_release(g);
}

/* ---- InstanceNormalization, LRN, MeanVarianceNormalization ---------------------------------- */

static void normalizations_match_references_in_double(void **state) {
    const int64_t xd[] = {2, 3, 2, 2}, cd[] = {3};
    double x[24], scale[3], bias[3];
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y;
    (void)state;

    for (int i = 0; i < 24; i++)
        x[i] = uniform() * 3.0;
    for (int i = 0; i < 3; i++) {
        scale[i] = uniform();
        bias[i] = uniform();
    }
    for (int dt = 0; dt < 2; dt++) {
        const ses_dtype_t dtype = dt ? SES_F64 : SES_F32;
        const double tol = dt ? 1e-12 : 1e-5;
        double want[24];
        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = constant(g, dtype, 4, xd, x);
        in[1] = constant(g, dtype, 1, cd, scale);
        in[2] = constant(g, dtype, 1, cd, bias);
        /* InstanceNormalization, epsilon 0.01: per (image, channel) of 4 values. */
        for (int p = 0; p < 6; p++) {
            double m = 0, v = 0;
            for (int i = 0; i < 4; i++)
                m += x[p * 4 + i] / 4;
            for (int i = 0; i < 4; i++)
                v += (x[p * 4 + i] - m) * (x[p * 4 + i] - m) / 4;
            for (int i = 0; i < 4; i++)
                want[p * 4 + i] = scale[p % 3] * (x[p * 4 + i] - m) / sqrt(v + 0.01) + bias[p % 3];
        }
        {
            ses_attr_t a = ses_attr_float("epsilon", 0.01);
            assert_int_equal(ses_graph_op(g, "InstanceNormalization", "in", in, 3, &a, 1, &y),
                             SES_OK);
            ses_tensor_t *got = eval1(g, y);
            expect_values("InstanceNormalization", got, 4, xd, want, tol);
            ses_tensor_release(got);
        }
        /* LRN, size 2: channels c and c + 1 (floor((2-1)/2) = 0 before, ceil = 1 after). */
        for (int n = 0; n < 2; n++)
            for (int c = 0; c < 3; c++)
                for (int i = 0; i < 4; i++) {
                    double sum = 0;
                    for (int k = c; k <= c + 1 && k < 3; k++)
                        sum += x[(n * 3 + k) * 4 + i] * x[(n * 3 + k) * 4 + i];
                    want[(n * 3 + c) * 4 + i] =
                        x[(n * 3 + c) * 4 + i] / pow(2.0 + 0.5 / 2 * sum, 0.6);
                }
        {
            ses_attr_t a[] = {ses_attr_int("size", 2), ses_attr_float("alpha", 0.5),
                              ses_attr_float("beta", 0.6), ses_attr_float("bias", 2.0)};
            assert_int_equal(ses_graph_op(g, "LRN", "lrn", in, 1, a, 4, &y), SES_OK);
            ses_tensor_t *got = eval1(g, y);
            expect_values("LRN", got, 4, xd, want, tol);
            ses_tensor_release(got);
        }
        /* MeanVarianceNormalization over the default axes 0, 2, 3: per channel. */
        for (int c = 0; c < 3; c++) {
            double m = 0, v = 0;
            for (int n = 0; n < 2; n++)
                for (int i = 0; i < 4; i++)
                    m += x[(n * 3 + c) * 4 + i] / 8;
            for (int n = 0; n < 2; n++)
                for (int i = 0; i < 4; i++)
                    v += (x[(n * 3 + c) * 4 + i] - m) * (x[(n * 3 + c) * 4 + i] - m) / 8;
            for (int n = 0; n < 2; n++)
                for (int i = 0; i < 4; i++)
                    want[(n * 3 + c) * 4 + i] = (x[(n * 3 + c) * 4 + i] - m) / (sqrt(v) + 1e-9);
        }
        {
            assert_int_equal(
                ses_graph_op(g, "MeanVarianceNormalization", "mvn", in, 1, NULL, 0, &y), SES_OK);
            ses_tensor_t *got = eval1(g, y);
            expect_values("MeanVarianceNormalization", got, 4, xd, want, tol);
            ses_tensor_release(got);
        }
        ses_graph_release(g);
    }
}

static void normalization_errors_name_the_node_and_input(void **state) {
    const int64_t xd[] = {2, 3, 2}, bad[] = {2}, x1[] = {4};
    const int64_t dup[] = {0, -3};
    double zeros[12] = {0};
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y;
    (void)state;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 3, xd, zeros);
    in[1] = constant(g, SES_F32, 1, bad, zeros);
    in[2] = constant(g, SES_F32, 1, bad, zeros);
    {
        const char *parts[] = {"InstanceNormalization \"in\"",
                               "scale must be 1-D with one entry "
                               "per channel",
                               "f32[2]"};
        assert_int_equal(ses_graph_op(g, "InstanceNormalization", "in", in, 3, NULL, 0, &y),
                         SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    {
        const char *parts[] = {"LRN \"lrn\"", "size"};
        assert_int_equal(ses_graph_op(g, "LRN", "lrn", in, 1, NULL, 0, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        ses_attr_t a = ses_attr_int("size", 0);
        const char *parts[] = {"LRN \"zero\"", "size is 0"};
        assert_int_equal(ses_graph_op(g, "LRN", "zero", in, 1, &a, 1, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        ses_attr_t a = ses_attr_ints("axes", dup, 2);
        const char *parts[] = {"MeanVarianceNormalization \"mvn\"", "axes"};
        assert_int_equal(ses_graph_op(g, "MeanVarianceNormalization", "mvn", in, 1, &a, 1, &y),
                         SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        /* The default axes 0, 2, 3 need rank 4. */
        const char *parts[] = {"MeanVarianceNormalization \"rank\"", "3"};
        assert_int_equal(ses_graph_op(g, "MeanVarianceNormalization", "rank", in, 1, NULL, 0, &y),
                         SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    in[0] = constant(g, SES_F32, 1, x1, zeros);
    {
        const char *parts[] = {"LRN \"r\"", "X must be [N, C, ...]", "f32[4]"};
        ses_attr_t a = ses_attr_int("size", 3);
        assert_int_equal(ses_graph_op(g, "LRN", "r", in, 1, &a, 1, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    ses_graph_release(g);
}

/* ---- RoiAlign -------------------------------------------------------------------------------- */

/* X = 1 + x + 2y on a 2x2 image (bilinear reproduces it): the average of a 2x2 sampling grid
 * over the box [0, 1]^2 is its value at the centre, 2.5, with output_half_pixel and with
 * half_pixel (the box shifted by half a pixel); max mode takes the largest weighted tap, 2.25
 * (the sample at (0.75, 0.75): 0.5625 * 4), worked by hand. */
static void roi_align_averages_and_takes_the_max_of_its_samples(void **state) {
    const int64_t xd[] = {1, 1, 2, 2}, rd[] = {3, 4}, bd[] = {3}, yd[] = {3, 1, 1, 1};
    const double x[] = {1, 2, 3, 4};
    const double rois[] = {0, 0, 1, 1, 0.5, 0.5, 1.5, 1.5, 0, 0, 1, 1};
    const int64_t batch[] = {0, 0, 0}, bad[] = {0, 1, 0};
    ses_graph_t *g = NULL;
    ses_tensor_t *t = NULL;
    ses_edge_t in[3], y;
    (void)state;

    for (int half = 0; half <= 1; half++)
        for (int max = 0; max <= 1; max++) {
            ses_attr_t a[] = {ses_attr_int("sampling_ratio", 2),
                              ses_attr_string("coordinate_transformation_mode",
                                              half ? "half_pixel" : "output_half_pixel"),
                              ses_attr_string("mode", max ? "max" : "avg")};
            assert_int_equal(ses_graph_create(&g), SES_OK);
            in[0] = constant(g, SES_F32, 4, xd, x);
            in[1] = constant(g, SES_F32, 2, rd, rois);
            assert_int_equal(ses_tensor_create_from(SES_I64, 1, bd, batch, sizeof batch, &t),
                             SES_OK);
            assert_int_equal(ses_graph_constant(g, NULL, t, &in[2]), SES_OK);
            ses_tensor_release(t);
            assert_int_equal(ses_graph_op(g, "RoiAlign", "roi", in, 3, a, 3, &y), SES_OK);
            ses_tensor_t *got = eval1(g, y);
            /* The second box lands on [0, 1]^2 only with half_pixel. */
            const double centre = max ? 2.25 : 2.5;
            if (!half) {
                /* [0.5, 1.5]^2 without the shift: samples at 0.75 and 1.25; past the last
                 * pixel the tap clamps to it. avg: (f(.75,.75) + f(.75,1.25->1) + f(1.25->1,.75)
                 * + f(1,1)) / 4 with f = 1 + x + 2y. */
                const double f1 = 1 + 0.75 + 1.5, f2 = 1 + 1 + 1.5, f3 = 1 + 0.75 + 2,
                             f4 = 1 + 1 + 2;
                const double want[] = {centre, max ? 4.0 : (f1 + f2 + f3 + f4) / 4, centre};
                expect_values("RoiAlign output_half_pixel", got, 4, yd, want, 1e-6);
            } else {
                /* With the shift the first and third boxes are [-0.5, 0.5]^2: samples at -0.25
                 * and 0.25, -0.25 clamped to pixel 0 (weight 1 on it). avg: f at (0,0), (0,.25),
                 * (.25,0), (.25,.25); max: the sample at (0, 0), 1 * X[0,0] = 1. */
                const double f_lo = 1, f_mid = 1 + 0.25, f_hi = 1 + 0.5, f_both = 1 + 0.25 + 0.5;
                const double first = max ? 1.0 : (f_lo + f_mid + f_hi + f_both) / 4;
                const double want[] = {first, centre, first};
                expect_values("RoiAlign half_pixel", got, 4, yd, want, 1e-6);
            }
            ses_tensor_release(got);
            ses_graph_release(g);
        }
    /* A batch index past X's images is named. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 4, xd, x);
    in[1] = constant(g, SES_F32, 2, rd, rois);
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, bd, bad, sizeof bad, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &in[2]), SES_OK);
    ses_tensor_release(t);
    {
        const char *parts[] = {"RoiAlign \"b\"", "batch_indices[1] is 1"};
        assert_int_equal(ses_graph_op(g, "RoiAlign", "b", in, 3, NULL, 0, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        ses_attr_t a = ses_attr_string("mode", "sum");
        const char *parts[] = {"RoiAlign \"m\"", "mode is \"sum\""};
        assert_int_equal(ses_graph_op(g, "RoiAlign", "m", in, 3, &a, 1, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    in[1] = constant(g, SES_F32, 1, bd, rois);
    {
        const char *parts[] = {"RoiAlign \"r\"", "rois must be [num_rois, 4]", "f32[3]"};
        assert_int_equal(ses_graph_op(g, "RoiAlign", "r", in, 3, NULL, 0, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_transpose_matches_a_direct_scatter),
        cmocka_unit_test(conv_transpose_output_shape_past_the_taps_is_zeros_at_the_end),
        cmocka_unit_test(conv_transpose_errors_name_the_node_and_what_is_wrong),
        cmocka_unit_test(depth_to_space_and_back),
        cmocka_unit_test(depth_space_errors_name_the_node),
        cmocka_unit_test(tile_repeats_each_dim),
        cmocka_unit_test(tile_errors_name_the_node_and_repeats),
        cmocka_unit_test(max_pool_gives_indices_in_either_storage_order),
        cmocka_unit_test(max_pool_at_i8_keeps_signs),
        cmocka_unit_test(max_unpool_places_values_at_their_indices),
        cmocka_unit_test(normalizations_match_references_in_double),
        cmocka_unit_test(normalization_errors_name_the_node_and_input),
        cmocka_unit_test(roi_align_averages_and_takes_the_max_of_its_samples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
