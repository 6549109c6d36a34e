/*
 * The CNN and model ops (src/ops/cnn.c, plugins/cpu/cpu_cnn.c) evaluated on the CPU driver:
 * values checked by hand or against a direct convolution written here (no im2col), errors that
 * name the node and the attribute at fault, and gradients that agree with central finite
 * differences in f64 (as gradients_test.c does for the core ops).
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

/* ---- helpers ----------------------------------------------------------------------------------
 */

static ses_edge_t constant(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                           const void *values, size_t bytes) {
    ses_tensor_t *t = NULL;
    ses_edge_t e = {NULL, 0};
    assert_int_equal(ses_tensor_create_from(dtype, rank, dims, values, bytes, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_edge_t const_i64(ses_graph_t *g, size_t n, const int64_t *values) {
    int64_t dims[1] = {(int64_t)n};
    return constant(g, SES_I64, 1, dims, values, n * sizeof *values);
}

static ses_edge_t const_f32(ses_graph_t *g, size_t rank, const int64_t *dims, const float *values) {
    size_t n = 1;
    for (size_t d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    return constant(g, SES_F32, rank, dims, values, n * sizeof *values);
}

static ses_edge_t scalar_f32(ses_graph_t *g, float v) {
    return constant(g, SES_F32, 0, NULL, &v, sizeof v);
}

static void assert_dims(const ses_tensor_t *t, size_t rank, const int64_t *dims) {
    assert_int_equal(ses_tensor_rank(t), rank);
    for (size_t d = 0; d < rank; d++)
        assert_int_equal(ses_tensor_dims(t)[d], dims[d]);
}

static void assert_f32(ses_tensor_t *t, const float *want, size_t n, double tol) {
    const float *got = ses_tensor_data(t);
    assert_int_equal(ses_tensor_dtype(t), SES_F32);
    assert_int_equal(ses_tensor_count(t), n);
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - (double)want[i]) <= tol))
            fail_msg("element %zu: got %.9g, want %.9g", i, (double)got[i], (double)want[i]);
}

static void assert_i64(ses_tensor_t *t, const int64_t *want, size_t n) {
    const int64_t *got = ses_tensor_data(t);
    assert_int_equal(ses_tensor_dtype(t), SES_I64);
    assert_int_equal(ses_tensor_count(t), n);
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("element %zu: got %lld, want %lld", i, (long long)got[i], (long long)want[i]);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static double uniform(double lo, double hi) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

/* ---- Conv against a direct convolution ------------------------------------------------------ */

typedef struct conv_case {
    const char *label;
    size_t rank;        /* of X and W: 3, 4 or 5 */
    int64_t x[5], w[5]; /* X [N,C,...], W [M,C/group,...] */
    int64_t group;
    int64_t strides[3], dilations[3], pads[6]; /* the attributes given (0 entries: absent) */
    const char *auto_pad;                      /* NULL: absent */
    int64_t want_pads[6]; /* the pads the test expects in effect (begins, then ends) */
    int bias;
} conv_case_t;

/* y[n][m][o] = b[m] + sum over c, k of x[n][g*Cg + c][o*s - pb + k*d] * w[m][c][k], with every
 * missing spatial dim taken as 1. Returns the output's dims in @p ydims. */
static double *direct_conv(const conv_case_t *c, const double *x, const double *w, const double *b,
                           int64_t *ydims) {
    const size_t sp = c->rank - 2;
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
    int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, out[3] = {1, 1, 1};
    const int64_t n_img = c->x[0], ch = c->x[1], m_all = c->w[0], cg = c->w[1];
    const int64_t mg = m_all / c->group;

    for (size_t i = 0; i < sp; i++) {
        in[i] = c->x[2 + i];
        k[i] = c->w[2 + i];
        s[i] = c->strides[i] ? c->strides[i] : 1;
        d[i] = c->dilations[i] ? c->dilations[i] : 1;
        pb[i] = c->want_pads[i];
        pe[i] = c->want_pads[sp + i];
        out[i] = (in[i] + pb[i] + pe[i] - (k[i] - 1) * d[i] - 1) / s[i] + 1;
    }
    ydims[0] = n_img;
    ydims[1] = m_all;
    for (size_t i = 0; i < sp; i++)
        ydims[2 + i] = out[i];
    double *y = calloc((size_t)(n_img * m_all * out[0] * out[1] * out[2]), sizeof *y);
    assert_non_null(y);
    for (int64_t n = 0; n < n_img; n++)
        for (int64_t m = 0; m < m_all; m++)
            for (int64_t o0 = 0; o0 < out[0]; o0++)
                for (int64_t o1 = 0; o1 < out[1]; o1++)
                    for (int64_t o2 = 0; o2 < out[2]; o2++) {
                        double acc = b ? b[m] : 0.0;
                        for (int64_t cc = 0; cc < cg; cc++)
                            for (int64_t k0 = 0; k0 < k[0]; k0++)
                                for (int64_t k1 = 0; k1 < k[1]; k1++)
                                    for (int64_t k2 = 0; k2 < k[2]; k2++) {
                                        int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0];
                                        int64_t i1 = o1 * s[1] - pb[1] + k1 * d[1];
                                        int64_t i2 = o2 * s[2] - pb[2] + k2 * d[2];
                                        if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] ||
                                            i2 < 0 || i2 >= in[2])
                                            continue;
                                        int64_t xc = (m / mg) * cg + cc;
                                        acc +=
                                            x[(((n * ch + xc) * in[0] + i0) * in[1] + i1) * in[2] +
                                              i2] *
                                            w[(((m * cg + cc) * k[0] + k0) * k[1] + k1) * k[2] +
                                              k2];
                                    }
                        y[(((n * m_all + m) * out[0] + o0) * out[1] + o1) * out[2] + o2] = acc;
                    }
    return y;
}

static const conv_case_t conv_cases[] = {
    {"2-D plain", 4, {1, 1, 5, 5}, {1, 1, 3, 3}, 1, {0}, {0}, {0}, NULL, {0}, 0},
    {"2-D stride 2 pads 1 bias",
     4,
     {2, 3, 7, 6},
     {4, 3, 3, 3},
     1,
     {2, 2},
     {0},
     {1, 1, 1, 1},
     NULL,
     {1, 1, 1, 1},
     1},
    {"2-D group 2 dilation 2 asymmetric pads",
     4,
     {1, 4, 7, 7},
     {6, 2, 3, 2},
     2,
     {1, 2},
     {2, 1},
     {1, 0, 2, 1},
     NULL,
     {1, 0, 2, 1},
     1},
    {"2-D depthwise SAME_UPPER stride 2",
     4,
     {1, 3, 6, 6},
     {3, 1, 3, 3},
     3,
     {2, 2},
     {0},
     {0},
     "SAME_UPPER",
     {0, 0, 1, 1},
     0},
    {"2-D SAME_LOWER",
     4,
     {1, 2, 5, 5},
     {2, 2, 2, 2},
     1,
     {0},
     {0},
     {0},
     "SAME_LOWER",
     {1, 1, 0, 0},
     1},
    {"2-D VALID", 4, {1, 2, 5, 6}, {3, 2, 2, 3}, 1, {2, 2}, {0}, {0}, "VALID", {0}, 0},
    {"2-D 1x1", 4, {2, 5, 3, 4}, {3, 5, 1, 1}, 1, {0}, {0}, {0}, NULL, {0}, 1},
    {"1-D", 3, {2, 3, 11}, {4, 3, 3}, 1, {2}, {3}, {2, 1}, NULL, {2, 1}, 1},
    {"3-D",
     5,
     {1, 2, 4, 5, 4},
     {3, 2, 2, 3, 2},
     1,
     {1, 2, 1},
     {0},
     {1, 1, 0, 0, 1, 1},
     NULL,
     {1, 1, 0, 0, 1, 1},
     1},
};

static void conv_matches_a_direct_convolution(void **state) {
    (void)state;
    for (size_t ci = 0; ci < sizeof conv_cases / sizeof conv_cases[0]; ci++) {
        const conv_case_t *c = &conv_cases[ci];
        const size_t sp = c->rank - 2;
        ses_graph_t *g = NULL;
        ses_attr_t attrs[5];
        size_t n_attrs = 0, nx = 1, nw = 1;
        ses_edge_t in[3], y;
        int64_t ydims[5];

        for (size_t d = 0; d < c->rank; d++) {
            nx *= (size_t)c->x[d];
            nw *= (size_t)c->w[d];
        }
        double *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), b[8];
        float *xf = malloc(nx * sizeof *xf), *wf = malloc(nw * sizeof *wf), bf[8];
        assert_true(x && w && xf && wf);
        for (size_t i = 0; i < nx; i++)
            xf[i] = (float)(x[i] = (double)(float)uniform(-1, 1));
        for (size_t i = 0; i < nw; i++)
            wf[i] = (float)(w[i] = (double)(float)uniform(-1, 1));
        for (size_t i = 0; i < 8; i++)
            bf[i] = (float)(b[i] = (double)(float)uniform(-1, 1));
        double *want = direct_conv(c, x, w, c->bias ? b : NULL, ydims);

        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = const_f32(g, c->rank, c->x, xf);
        in[1] = const_f32(g, c->rank, c->w, wf);
        in[2] = const_f32(g, 1, c->w, bf);
        if (c->group != 1)
            attrs[n_attrs++] = ses_attr_int("group", c->group);
        if (c->strides[0])
            attrs[n_attrs++] = ses_attr_ints("strides", c->strides, sp);
        if (c->dilations[0])
            attrs[n_attrs++] = ses_attr_ints("dilations", c->dilations, sp);
        if (c->pads[0] || c->pads[1] || c->pads[2] || c->pads[3])
            attrs[n_attrs++] = ses_attr_ints("pads", c->pads, 2 * sp);
        if (c->auto_pad)
            attrs[n_attrs++] = ses_attr_string("auto_pad", c->auto_pad);
        if (ses_graph_op(g, "Conv", "conv", in, c->bias ? 3 : 2, attrs, n_attrs, &y) != SES_OK)
            fail_msg("%s: %s", c->label, ses_last_error());
        ses_tensor_t *got = eval1(g, y);
        assert_dims(got, c->rank, ydims);
        const float *v = ses_tensor_data(got);
        for (size_t i = 0; i < ses_tensor_count(got); i++)
            if (fabs((double)v[i] - want[i]) > 1e-5 * (1 + fabs(want[i])))
                fail_msg("%s: element %zu: got %.9g, want %.9g", c->label, i, (double)v[i],
                         want[i]);
        ses_tensor_release(got);
        ses_graph_release(g);
        free(want);
        free(x);
        free(w);
        free(xf);
        free(wf);
    }
}

/* ---- Conv through oneDNN against the im2col path (driver.cpu.conv) ------------------------- */

/* Opens a CPU session with driver.cpu.conv = @p conv; NULL when the session cannot open (the
 * status in *out_status, the message in ses_last_error()). */
static ses_session_t *open_conv(ses_graph_t *g, const char *conv, ses_status_t *out_status) {
    char option[64];
    const char *options[1] = {option};
    const char *cpu = "cpu";
    ses_session_options_t o;
    ses_session_t *s = NULL;

    snprintf(option, sizeof option, "driver.cpu.conv=%s", conv);
    ses_session_options_init(&o);
    o.driver_options = options;
    o.n_driver_options = 1;
    *out_status = ses_session_open(g, &cpu, 1, &o, &s);
    return *out_status == SES_OK ? s : NULL;
}

/* Whether oneDNN can be used here; prints why not. Tests that need it skip without it. */
static int dnnl_usable(void) {
    ses_graph_t *g = NULL;
    ses_status_t st;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_session_t *s = open_conv(g, "dnnl", &st);
    if (!s && st != SES_UNAVAILABLE)
        fail_msg("open with driver.cpu.conv=dnnl: %s", ses_last_error());
    if (!s) {
        /* "dnnl" where oneDNN cannot load is refused, saying why. */
        assert_non_null(strstr(ses_last_error(), "driver.cpu.conv is dnnl, but oneDNN cannot"));
        printf("skipped: oneDNN is not usable here: %s\n", ses_last_error());
    }
    ses_session_destroy(s);
    ses_graph_release(g);
    return s != NULL;
}

static ses_tensor_t *eval_conv(ses_graph_t *g, ses_edge_t fetch, const char *conv) {
    ses_status_t st;
    ses_tensor_t *out = NULL;
    ses_session_t *s = open_conv(g, conv, &st);

    if (!s)
        fail_msg("open with driver.cpu.conv=%s: %s", conv, ses_last_error());
    if (ses_session_eval(s, &fetch, 1, NULL, 0, NULL, 0, &out) != SES_OK)
        fail_msg("eval with driver.cpu.conv=%s: %s", conv, ses_last_error());
    ses_session_destroy(s);
    return out;
}

/* Both tensors agree to 1e-4 relative (of the larger magnitude, at least 1). */
static void assert_close(const char *label, ses_tensor_t *a, ses_tensor_t *b) {
    const float *x = ses_tensor_data(a), *y = ses_tensor_data(b);

    assert_int_equal(ses_tensor_count(a), ses_tensor_count(b));
    for (size_t i = 0; i < ses_tensor_count(a); i++) {
        double scale = fmax(1.0, fmax(fabs((double)x[i]), fabs((double)y[i])));
        if (!(fabs((double)x[i] - (double)y[i]) <= 1e-4 * scale))
            fail_msg("%s: element %zu: dnnl %.9g, im2col %.9g", label, i, (double)x[i],
                     (double)y[i]);
    }
}

typedef struct dnnl_case {
    const char *label;
    size_t rank;
    int64_t x[5], w[5], group;
    int64_t strides[3], dilations[3], pads[6];
    int bias;
} dnnl_case_t;

static const dnnl_case_t dnnl_cases[] = {
    {"the bench CNN's first layer", 4, {8, 1, 28, 28}, {32, 1, 3, 3}, 1, {1, 1}, {1, 1},
     {1, 1, 1, 1}, 1},
    {"the bench CNN's second layer", 4, {4, 32, 14, 14}, {64, 32, 3, 3}, 1, {1, 1}, {1, 1},
     {1, 1, 1, 1}, 1},
    {"grouped, strided, dilated, asymmetric pads", 4, {3, 8, 11, 9}, {12, 4, 3, 2}, 2, {2, 1},
     {2, 3}, {1, 0, 2, 1}, 1},
    {"depthwise stride 2", 4, {2, 16, 10, 10}, {16, 1, 3, 3}, 16, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0},
    {"1x1 without bias", 4, {2, 24, 7, 5}, {40, 24, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, 0},
    {"1-D dilated", 3, {3, 6, 29}, {10, 6, 5}, 1, {2}, {2}, {3, 1}, 1},
    {"3-D", 5, {2, 4, 6, 7, 5}, {8, 4, 3, 2, 3}, 1, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 1, 1, 2}, 1},
};

/* The same random convolutions through oneDNN and through im2col agree to 1e-4 relative. */
static void conv_through_onednn_agrees_with_im2col(void **state) {
    (void)state;
    if (!dnnl_usable()) {
        skip();
        return;
    }
    for (size_t ci = 0; ci < sizeof dnnl_cases / sizeof dnnl_cases[0]; ci++) {
        const dnnl_case_t *c = &dnnl_cases[ci];
        const size_t sp = c->rank - 2;
        size_t nx = 1, nw = 1;
        ses_graph_t *g = NULL;
        ses_edge_t in[3], y;
        ses_attr_t attrs[4];
        size_t n_attrs = 0;

        for (size_t d = 0; d < c->rank; d++) {
            nx *= (size_t)c->x[d];
            nw *= (size_t)c->w[d];
        }
        float *xf = malloc(nx * sizeof *xf), *wf = malloc(nw * sizeof *wf), bf[64];
        assert_true(xf && wf);
        for (size_t i = 0; i < nx; i++)
            xf[i] = (float)uniform(-1, 1);
        for (size_t i = 0; i < nw; i++)
            wf[i] = (float)uniform(-1, 1);
        for (size_t i = 0; i < 64; i++)
            bf[i] = (float)uniform(-1, 1);
        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = const_f32(g, c->rank, c->x, xf);
        in[1] = const_f32(g, c->rank, c->w, wf);
        in[2] = const_f32(g, 1, c->w, bf);
        attrs[n_attrs++] = ses_attr_int("group", c->group);
        attrs[n_attrs++] = ses_attr_ints("strides", c->strides, sp);
        attrs[n_attrs++] = ses_attr_ints("dilations", c->dilations, sp);
        attrs[n_attrs++] = ses_attr_ints("pads", c->pads, 2 * sp);
        if (ses_graph_op(g, "Conv", "conv", in, c->bias ? 3 : 2, attrs, n_attrs, &y) != SES_OK)
            fail_msg("%s: %s", c->label, ses_last_error());
        ses_tensor_t *a = eval_conv(g, y, "dnnl"), *b = eval_conv(g, y, "im2col");
        assert_close(c->label, a, b);
        ses_tensor_release(a);
        ses_tensor_release(b);
        ses_graph_release(g);
        free(xf);
        free(wf);
    }
}

/* A variable's weights are not constant (DRV-85): changed in place between two runs of one
 * plan, at the same address, the second run must see them; oneDNN must not keep the first
 * run's reordered copy. A constant's run twice gives the same values both times. */
static void conv_through_onednn_sees_a_variable_change_between_runs(void **state) {
    const int64_t xd[4] = {2, 8, 6, 6}, wd[4] = {16, 8, 3, 3}, pads[4] = {1, 1, 1, 1};
    float xf[2 * 8 * 36], wf[16 * 8 * 9];
    ses_graph_t *g = NULL;
    ses_edge_t in[2], w, y;
    ses_tensor_t *first = NULL, *second = NULL, *third = NULL, *value = NULL;
    ses_plan_t *plan = NULL;
    ses_status_t st;

    (void)state;
    if (!dnnl_usable()) {
        skip();
        return;
    }
    for (size_t i = 0; i < sizeof xf / sizeof xf[0]; i++)
        xf[i] = (float)uniform(-1, 1);
    for (size_t i = 0; i < sizeof wf / sizeof wf[0]; i++)
        wf[i] = (float)uniform(-1, 1);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_f32(g, 4, xd, xf);
    assert_int_equal(ses_graph_variable(g, "w", const_f32(g, 4, wd, wf), &w), SES_OK);
    in[1] = w;
    ses_attr_t a = ses_attr_ints("pads", pads, 4);
    assert_int_equal(ses_graph_op(g, "Conv", "conv", in, 2, &a, 1, &y), SES_OK);
    ses_session_t *s = open_conv(g, "dnnl", &st);
    assert_non_null(s);
    assert_int_equal(ses_session_compile(s, &y, 1, NULL, 0, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_run(plan, NULL, 0, &first), SES_OK);
    assert_int_equal(ses_plan_run(plan, NULL, 0, &second), SES_OK);
    assert_memory_equal(ses_tensor_data(first), ses_tensor_data(second),
                        ses_tensor_count(first) * sizeof(float));
    /* The scope's tensor itself, changed in place: same address, other bytes. */
    assert_int_equal(ses_scope_find(ses_session_scope(s), "w", &value), SES_OK);
    float *wv = ses_tensor_data(value);
    for (size_t i = 0; i < sizeof wf / sizeof wf[0]; i++)
        wv[i] = -2.0f * wv[i];
    ses_tensor_release(value);
    assert_int_equal(ses_plan_run(plan, NULL, 0, &third), SES_OK);
    const float *p = ses_tensor_data(first), *q = ses_tensor_data(third);
    for (size_t i = 0; i < ses_tensor_count(first); i++)
        if (!(fabs((double)q[i] + 2.0 * (double)p[i]) <= 1e-4 * fmax(1.0, fabs((double)q[i]))))
            fail_msg("element %zu: %.9g after the change, want -2 * %.9g", i, (double)q[i],
                     (double)p[i]);
    ses_tensor_release(first);
    ses_tensor_release(second);
    ses_tensor_release(third);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/*
 * The im2col path keeps its column matrices in the node's state between runs: one compiled plan
 * run on images of 5x5, 11x11, 4x4 and 11x11 (a plan rebinds its kernels, with new states, when
 * a fed shape changes; cpu_kernels_test grows one state) gives each run the values a fresh
 * session gives, the second 11x11 run reusing what the first left.
 */
static void a_conv_plan_keeps_its_scratch_across_image_sizes(void **state) {
    static const int64_t xd_any[4] = {-1, 3, -1, -1}, wd[4] = {4, 3, 3, 3}, pads[4] = {1, 1, 1, 1};
    static const int64_t sizes[][2] = {{1, 5}, {2, 11}, {1, 4}, {2, 11}}; /* batch, side */
    float wf[4 * 3 * 9];
    ses_graph_t *g = NULL;
    ses_edge_t in[2], y;
    ses_plan_t *plan = NULL;
    ses_status_t st;

    (void)state;
    for (size_t i = 0; i < sizeof wf / sizeof wf[0]; i++)
        wf[i] = (float)uniform(-1, 1);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd_any, &in[0]), SES_OK);
    in[1] = const_f32(g, 4, wd, wf);
    ses_attr_t a = ses_attr_ints("pads", pads, 4);
    assert_int_equal(ses_graph_op(g, "Conv", "conv", in, 2, &a, 1, &y), SES_OK);
    ses_session_t *s = open_conv(g, "im2col", &st);
    assert_non_null(s);
    assert_int_equal(ses_session_compile(s, &y, 1, &in[0], 1, NULL, 0, &plan), SES_OK);
    for (size_t r = 0; r < sizeof sizes / sizeof sizes[0]; r++) {
        const int64_t xd[4] = {sizes[r][0], 3, sizes[r][1], sizes[r][1]};
        ses_tensor_t *x = NULL, *got = NULL, *want = NULL;
        assert_int_equal(ses_tensor_create(SES_F32, 4, xd, &x), SES_OK);
        float *xv = ses_tensor_data(x);
        for (size_t i = 0; i < ses_tensor_count(x); i++)
            xv[i] = (float)uniform(-1, 1);
        assert_int_equal(ses_plan_run(plan, &x, 1, &got), SES_OK);
        ses_session_t *fresh = open_conv(g, "im2col", &st);
        assert_non_null(fresh);
        ses_feed_t feed = {.edge = in[0], .value = x};
        assert_int_equal(ses_session_eval(fresh, &y, 1, &feed, 1, NULL, 0, &want), SES_OK);
        assert_int_equal(ses_tensor_count(got), ses_tensor_count(want));
        assert_memory_equal(ses_tensor_data(got), ses_tensor_data(want),
                            ses_tensor_count(want) * sizeof(float));
        ses_tensor_release(got);
        ses_tensor_release(want);
        ses_tensor_release(x);
        ses_session_destroy(fresh);
    }
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* driver.cpu.conv takes auto, dnnl and im2col; anything else is refused naming the three. */
static void the_conv_switch_refuses_unknown_values(void **state) {
    ses_graph_t *g = NULL;
    ses_status_t st;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_null(open_conv(g, "fast", &st));
    assert_int_equal(st, SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "driver.cpu.conv is \"fast\""));
    assert_non_null(strstr(ses_last_error(), "auto"));
    assert_non_null(strstr(ses_last_error(), "dnnl"));
    assert_non_null(strstr(ses_last_error(), "im2col"));
    ses_session_t *s = open_conv(g, "im2col", &st);
    assert_non_null(s);
    ses_session_destroy(s);
    s = open_conv(g, "auto", &st);
    assert_non_null(s);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* A 3x3 image of 1..9 against the 2x2 kernel [[1,0],[0,-1]] is x[i][j] - x[i+1][j+1] = -4. */
static void conv_gives_hand_checked_values(void **state) {
    static const float x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[] = {1, 0, 0, -1}, b[] = {10};
    static const int64_t xd[] = {1, 1, 3, 3}, wd[] = {1, 1, 2, 2}, bd[] = {1};
    static const float want[] = {6, 6, 6, 6};
    static const int64_t yd[] = {1, 1, 2, 2};
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_f32(g, 4, xd, x);
    in[1] = const_f32(g, 4, wd, w);
    in[2] = const_f32(g, 1, bd, b);
    assert_int_equal(ses_graph_op(g, "Conv", "c", in, 3, NULL, 0, &y), SES_OK);
    ses_tensor_t *t = eval1(g, y);
    assert_dims(t, 4, yd);
    assert_f32(t, want, 4, 0);
    ses_tensor_release(t);
    ses_graph_release(g);
}

/* ---- pools, normalization ------------------------------------------------------------------- */

static ses_tensor_t *unary(const char *op, size_t rank, const int64_t *dims, const float *x,
                           const ses_attr_t *attrs, size_t n_attrs) {
    ses_graph_t *g = NULL;
    ses_edge_t in, y;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in = const_f32(g, rank, dims, x);
    if (ses_graph_op(g, op, "node", &in, 1, attrs, n_attrs, &y) != SES_OK)
        fail_msg("%s: %s", op, ses_last_error());
    ses_tensor_t *t = eval1(g, y);
    ses_graph_release(g);
    return t;
}

static void max_pool_takes_window_maxima_with_ceil_mode(void **state) {
    static const int64_t k2[] = {2, 2};
    float x[25];
    static const int64_t d4[] = {1, 1, 4, 4}, d5[] = {1, 1, 5, 5};
    static const float want4[] = {6, 8, 14, 16};
    static const float want5[] = {7, 9, 10, 17, 19, 20, 22, 24, 25};
    ses_attr_t a[3] = {ses_attr_ints("kernel_shape", k2, 2), ses_attr_ints("strides", k2, 2),
                       ses_attr_int("ceil_mode", 1)};

    (void)state;
    for (int i = 0; i < 25; i++)
        x[i] = (float)(i + 1);
    ses_tensor_t *t = unary("MaxPool", 4, d4, x, a, 2);
    assert_f32(t, want4, 4, 0);
    ses_tensor_release(t);
    /* 5 = 2 + 2 + 1: ceil_mode adds a last window over the one remaining row and column. */
    t = unary("MaxPool", 4, d5, x, a, 3);
    static const int64_t yd[] = {1, 1, 3, 3};
    assert_dims(t, 4, yd);
    assert_f32(t, want5, 9, 0);
    ses_tensor_release(t);
    t = unary("MaxPool", 4, d5, x, a, 2); /* floor: 2x2 */
    assert_int_equal(ses_tensor_count(t), 4);
    ses_tensor_release(t);
}

static void average_pool_counts_padding_only_when_asked(void **state) {
    static const int64_t k3[] = {3, 3}, p1[] = {1, 1, 1, 1}, d[] = {1, 1, 3, 3};
    static const float ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const float with_pad[] = {4.f / 9, 6.f / 9, 4.f / 9, 6.f / 9, 1,
                                     6.f / 9, 4.f / 9, 6.f / 9, 4.f / 9};
    ses_attr_t a[3] = {ses_attr_ints("kernel_shape", k3, 2), ses_attr_ints("pads", p1, 4),
                       ses_attr_int("count_include_pad", 1)};

    (void)state;
    ses_tensor_t *t = unary("AveragePool", 4, d, ones, a, 2);
    assert_f32(t, ones, 9, 1e-7);
    ses_tensor_release(t);
    t = unary("AveragePool", 4, d, ones, a, 3);
    assert_f32(t, with_pad, 9, 1e-6);
    ses_tensor_release(t);
}

/*
 * Runs @p op on x ([N, C, H, W], or with a trailing 1 appended when @p rank5) with the window
 * @p win (kh, kw, sh, sw, dh, dw, pads top, left, bottom, right), and the gradient of
 * sum(y * y); returns 0 when the window does not fit the padded input. The 2-D pools have a
 * path of their own, and [N, C, H, W, 1] with a kernel of 1 along the last dim computes the same
 * through the generic N-d loop, so comparing the two checks the fast path against the general
 * one.
 */
static int pool_via(const char *op, ses_dtype_t dtype, int rank5, const int64_t *dims,
                    const void *x, const int64_t *win, int64_t ceil_mode, int64_t include_pad,
                    ses_tensor_t **out_y, ses_tensor_t **out_dx) {
    const size_t rank = rank5 ? 5 : 4, es = dtype == SES_F32 ? 4 : 8;
    const int64_t k[3] = {win[0], win[1], 1}, s[3] = {win[2], win[3], 1};
    const int64_t d[3] = {win[4], win[5], 1};
    int64_t p[6], xd[5] = {dims[0], dims[1], dims[2], dims[3], 1};
    ses_attr_t a[6];
    size_t n_attrs = 0;
    ses_graph_t *g = NULL;
    ses_edge_t in, y, pair[2], sq, dx, fetch[2];
    ses_tensor_t *t = NULL, *outs[2] = {NULL, NULL};
    ses_feed_t feed;
    const char *cpu = "cpu";
    ses_session_t *sess = NULL;

    if (rank5) {
        p[0] = win[6], p[1] = win[7], p[2] = 0, p[3] = win[8], p[4] = win[9], p[5] = 0;
    } else {
        p[0] = win[6], p[1] = win[7], p[2] = win[8], p[3] = win[9];
    }
    a[n_attrs++] = ses_attr_ints("kernel_shape", k, rank - 2);
    a[n_attrs++] = ses_attr_ints("strides", s, rank - 2);
    a[n_attrs++] = ses_attr_ints("dilations", d, rank - 2);
    a[n_attrs++] = ses_attr_ints("pads", p, 2 * (rank - 2));
    a[n_attrs++] = ses_attr_int("ceil_mode", ceil_mode);
    if (strcmp(op, "AveragePool") == 0)
        a[n_attrs++] = ses_attr_int("count_include_pad", include_pad);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", dtype, rank, xd, &in), SES_OK);
    if (ses_graph_op(g, op, "pool", &in, 1, a, n_attrs, &y) != SES_OK) {
        ses_graph_release(g);
        return 0;
    }
    /* The gradient of sum(y * y): dy = 2y differs per element. */
    pair[0] = pair[1] = y;
    assert_int_equal(ses_graph_op(g, "Mul", "sq", pair, 2, NULL, 0, &sq), SES_OK);
    if (ses_gradients(g, NULL, &sq, 1, &in, 1, NULL, &dx) != SES_OK)
        fail_msg("%s: ses_gradients: %s", op, ses_last_error());
    assert_int_equal(ses_tensor_create_from(dtype, rank, xd, x,
                                            (size_t)(dims[0] * dims[1] * dims[2] * dims[3]) * es,
                                            &t),
                     SES_OK);
    feed.edge = in;
    feed.value = t;
    fetch[0] = y;
    fetch[1] = dx;
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &sess), SES_OK);
    /* A window larger than the padded input is refused when the plan is compiled. */
    const int ran = ses_session_eval(sess, fetch, 2, &feed, 1, NULL, 0, outs) == SES_OK;
    if (!ran && !strstr(ses_last_error(), "bigger than the padded input"))
        fail_msg("%s: eval: %s", op, ses_last_error());
    ses_session_destroy(sess);
    ses_tensor_release(t);
    ses_graph_release(g);
    *out_y = outs[0];
    *out_dx = outs[1];
    return ran;
}

static double value_at(ses_tensor_t *t, size_t i) {
    return ses_tensor_dtype(t) == SES_F32 ? (double)((const float *)ses_tensor_data(t))[i]
                                          : ((const double *)ses_tensor_data(t))[i];
}

/* @p a and @p b hold the same values: NaN where the other has NaN, else within tol * (1 + |b|). */
static void assert_same_values(ses_tensor_t *a, ses_tensor_t *b, double tol,
                               const char *what) {
    assert_int_equal(ses_tensor_count(a), ses_tensor_count(b));
    for (size_t i = 0; i < ses_tensor_count(a); i++) {
        const double u = value_at(a, i), v = value_at(b, i);
        if (isnan(u) != isnan(v) || (!isnan(u) && !(u == v || fabs(u - v) <= tol * (1 + fabs(v)))))
            fail_msg("%s: element %zu is %.9g by the 2-D path, %.9g by the generic one", what, i,
                     u, v);
    }
}

/* Conv, dX and dW of sum(y * y) on @p threads threads (driver.cpu.threads): [y, dx, dw]. */
static void conv_on_threads(const char *threads, ses_dtype_t dtype, const int64_t *xd,
                            const int64_t *wd, const int64_t *win, int64_t group,
                            const void *x, const void *w, const void *b, ses_tensor_t **outs) {
    const size_t es = dtype == SES_F32 ? 4 : 8;
    const int64_t s[2] = {win[0], win[1]}, d[2] = {win[2], win[3]};
    const int64_t p[4] = {win[4], win[5], win[6], win[7]}, bd[1] = {wd[0]};
    ses_attr_t a[4] = {ses_attr_ints("strides", s, 2), ses_attr_ints("dilations", d, 2),
                       ses_attr_ints("pads", p, 4), ses_attr_int("group", group)};
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y, pair[2], sq, grads[2], fetch[3];
    ses_tensor_t *t[3] = {NULL, NULL, NULL};
    ses_feed_t feeds[3];
    ses_session_t *sess = NULL;
    ses_session_options_t opt;
    char option[64];
    const char *option_p = option, *cpu = "cpu";

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", dtype, 4, xd, &in[0]), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "w", dtype, 4, wd, &in[1]), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "b", dtype, 1, bd, &in[2]), SES_OK);
    if (ses_graph_op(g, "Conv", "conv", in, 3, a, 4, &y) != SES_OK)
        fail_msg("Conv: %s", ses_last_error());
    /* sum(y * y): dy = 2y differs per element, so every block's dy must land in its place. */
    pair[0] = pair[1] = y;
    assert_int_equal(ses_graph_op(g, "Mul", "sq", pair, 2, NULL, 0, &sq), SES_OK);
    if (ses_gradients(g, NULL, &sq, 1, in, 2, NULL, grads) != SES_OK)
        fail_msg("ses_gradients: %s", ses_last_error());
    assert_int_equal(ses_tensor_create_from(dtype, 4, xd, x,
                                            (size_t)(xd[0] * xd[1] * xd[2] * xd[3]) * es, &t[0]),
                     SES_OK);
    assert_int_equal(ses_tensor_create_from(dtype, 4, wd, w,
                                            (size_t)(wd[0] * wd[1] * wd[2] * wd[3]) * es, &t[1]),
                     SES_OK);
    assert_int_equal(ses_tensor_create_from(dtype, 1, bd, b, (size_t)wd[0] * es, &t[2]), SES_OK);
    for (int i = 0; i < 3; i++) {
        feeds[i].edge = in[i];
        feeds[i].value = t[i];
    }
    fetch[0] = y;
    fetch[1] = grads[0];
    fetch[2] = grads[1];
    snprintf(option, sizeof option, "driver.cpu.threads=%s", threads);
    ses_session_options_init(&opt);
    opt.driver_options = &option_p;
    opt.n_driver_options = 1;
    assert_int_equal(ses_session_open(g, &cpu, 1, &opt, &sess), SES_OK);
    if (ses_session_eval(sess, fetch, 3, feeds, 3, NULL, 0, outs) != SES_OK)
        fail_msg("eval on %s threads: %s", threads, ses_last_error());
    ses_session_destroy(sess);
    for (int i = 0; i < 3; i++)
        ses_tensor_release(t[i]);
    ses_graph_release(g);
}

/* Conv and ConvGrad give the same values whether the images go one per GEMM (a pool of one
 * thread, or few taps per filter) or in blocks with one GEMM each (several threads and 64 taps
 * or more: im2col side by side, the output scattered, dy gathered): C_in = 1, groups and depthwise, dilations, strides 2, asymmetric
 * pads, 1x1 kernels (the image is its own column matrix), odd sizes, at f32 and f64. */
static void conv_blocks_of_images_agree_with_one_image_per_gemm(void **state) {
    /* x [N, C, H, W], w [M, C / group, kh, kw], group */
    static const int64_t shapes[][9] = {
        {3, 1, 7, 9, 4, 1, 3, 3, 1}, {3, 4, 6, 5, 6, 2, 3, 2, 2}, {3, 3, 5, 5, 4, 3, 1, 1, 1},
        {2, 3, 5, 7, 2, 3, 1, 1, 1}, {3, 2, 9, 8, 3, 2, 3, 3, 1}, {5, 4, 5, 5, 4, 1, 3, 3, 4},
        {1, 2, 4, 4, 2, 2, 2, 2, 1},
        /* C / group x kernel >= 64: blocks of images on several threads */
        {3, 8, 7, 9, 4, 8, 3, 3, 1}, {3, 16, 6, 5, 6, 8, 3, 3, 2}, {3, 64, 5, 5, 4, 64, 1, 1, 1},
        {2, 33, 5, 7, 2, 33, 2, 1, 1}, {5, 8, 9, 8, 3, 8, 3, 3, 1}, {1, 32, 4, 4, 2, 16, 2, 2, 2},
    };
    /* strides, dilations, pads top, left, bottom, right */
    static const int64_t wins[][8] = {
        {1, 1, 1, 1, 1, 1, 1, 1}, {2, 1, 1, 2, 1, 0, 2, 1}, {1, 1, 1, 1, 0, 0, 0, 0},
        {2, 2, 1, 1, 0, 0, 0, 0}, {1, 2, 2, 2, 2, 1, 0, 3}, {2, 2, 1, 1, 1, 1, 1, 1},
    };
    static double xs[5 * 64 * 9 * 9], ws[6 * 64 * 3 * 3], bs[6];
    static float xf[sizeof xs / sizeof xs[0]], wf[sizeof ws / sizeof ws[0]], bf[6];
    int checked = 0;

    (void)state;
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        xf[i] = (float)(xs[i] = (double)(float)uniform(-1, 1));
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
        wf[i] = (float)(ws[i] = (double)(float)uniform(-1, 1));
    for (size_t i = 0; i < 6; i++)
        bf[i] = (float)(bs[i] = (double)(float)uniform(-1, 1));
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (size_t wi = 0; wi < sizeof wins / sizeof wins[0]; wi++)
            for (int f64 = 0; f64 < 2; f64++) {
                const int64_t *c = shapes[sh], *win = wins[wi];
                const ses_dtype_t dt = f64 ? SES_F64 : SES_F32;
                ses_tensor_t *one[3] = {NULL, NULL, NULL}, *many[3] = {NULL, NULL, NULL};
                /* Skip windows larger than the padded input (the op refuses them). */
                if ((c[6] - 1) * win[2] + 1 > c[2] + win[4] + win[6] ||
                    (c[7] - 1) * win[3] + 1 > c[3] + win[5] + win[7])
                    continue;
                conv_on_threads("1", dt, c, c + 4, win, c[8], f64 ? (void *)xs : (void *)xf,
                                f64 ? (void *)ws : (void *)wf, f64 ? (void *)bs : (void *)bf,
                                one);
                conv_on_threads("3", dt, c, c + 4, win, c[8], f64 ? (void *)xs : (void *)xf,
                                f64 ? (void *)ws : (void *)wf, f64 ? (void *)bs : (void *)bf,
                                many);
                for (int o = 0; o < 3; o++) {
                    assert_int_equal(ses_tensor_count(one[o]), ses_tensor_count(many[o]));
                    for (size_t i = 0; i < ses_tensor_count(one[o]); i++) {
                        const double u = value_at(one[o], i), v = value_at(many[o], i);
                        if (!(fabs(u - v) <= (f64 ? 1e-12 : 1e-5) * (1 + fabs(v))))
                            fail_msg("%s shape %zu window %zu output %d element %zu: %.9g on one "
                                     "thread, %.9g on three",
                                     f64 ? "f64" : "f32", sh, wi, o, i, u, v);
                    }
                    ses_tensor_release(one[o]);
                    ses_tensor_release(many[o]);
                }
                checked++;
            }
    assert_true(checked > 80);
}

/* Conv and ConvGrad on 4 threads agree with 1 thread on shapes that take each path: by images
 * (batch x group >= threads, or GEMMs OpenBLAS would not share out: each image a task on the
 * pool, a single-threaded GEMM each), whose Y and dX must be one thread's bit for bit; blocks
 * (fewer images than threads with large GEMMs); one image per GEMM with OpenBLAS's threads (an
 * image's columns over 4 MiB). dW always takes blocks; the sums of thousands of products round
 * differently, so f32 within 1e-5 of the largest value. */
static void conv_on_four_threads_agrees_with_one(void **state) {
    /* x [N, C, H, W], w [M, C / group, kh, kw], group, then 1 where Y and dX go by images */
    static const int64_t shapes[][10] = {
        {64, 1, 28, 28, 32, 1, 3, 3, 1, 1},   /* the CNN's first layer: K = 9 */
        {16, 32, 14, 14, 64, 32, 3, 3, 1, 1}, /* its second, on fewer images */
        {5, 8, 9, 8, 6, 4, 3, 3, 2, 1},       /* groups */
        {4, 6, 7, 5, 6, 1, 3, 3, 6, 1},       /* depthwise */
        {6, 16, 6, 6, 8, 16, 1, 1, 1, 1},     /* 1x1: the image is its own column matrix */
        {2, 2, 6, 6, 3, 2, 3, 3, 1, 1},       /* 2 images, tiny GEMMs */
        {1, 1, 9, 9, 4, 1, 3, 3, 1, 0},       /* one image: one task */
        {2, 64, 12, 12, 32, 64, 3, 3, 1, 0},  /* 2 images, large GEMMs: a block */
        {4, 64, 32, 64, 16, 64, 3, 3, 1, 0},  /* 4.5 MiB of columns an image: one per GEMM */
    };
    static const int64_t win[8] = {1, 1, 1, 1, 1, 1, 1, 1}; /* stride 1, pads 1 */
    static float x[4 * 64 * 32 * 64], w[64 * 64 * 3 * 3], b[64];

    (void)state;
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = (float)uniform(-1, 1);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = (float)uniform(-1, 1);
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        b[i] = (float)uniform(-1, 1);
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        const int64_t *c = shapes[sh];
        ses_tensor_t *one[3] = {NULL, NULL, NULL}, *four[3] = {NULL, NULL, NULL};
        conv_on_threads("1", SES_F32, c, c + 4, win, c[8], x, w, b, one);
        conv_on_threads("4", SES_F32, c, c + 4, win, c[8], x, w, b, four);
        for (int o = 0; o < 3; o++) {
            const int exact = c[9] && o < 2;
            double scale = 1;
            assert_int_equal(ses_tensor_count(one[o]), ses_tensor_count(four[o]));
            for (size_t i = 0; i < ses_tensor_count(four[o]); i++)
                scale = fmax(scale, fabs(value_at(four[o], i)));
            for (size_t i = 0; i < ses_tensor_count(one[o]); i++) {
                const double u = value_at(one[o], i), v = value_at(four[o], i);
                if (exact ? u != v : !(fabs(u - v) <= 1e-5 * scale))
                    fail_msg("shape %zu output %d element %zu: %.9g on one thread, %.9g on four%s",
                             sh, o, i, u, v, exact ? " (expected the same bits)" : "");
            }
            ses_tensor_release(one[o]);
            ses_tensor_release(four[o]);
        }
    }
}

/* The 2-D pools and their gradients agree with the generic N-d path on every edge: pads on either
 * side, strides and dilations, ceil_mode, count_include_pad, planes of 1x1 and planes narrower
 * than the window, NaN at the border and inside, at f32 and f64. */
static void two_d_pools_agree_with_the_generic_path_on_every_edge(void **state) {
    static const int64_t shapes[][4] = {{2, 3, 7, 9}, {1, 2, 1, 1}, {1, 1, 2, 19}, {2, 2, 6, 5}};
    /* kh, kw, sh, sw, dh, dw, pad top, left, bottom, right */
    static const int64_t wins[][10] = {
        {2, 2, 2, 2, 1, 1, 0, 0, 0, 0}, {3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {3, 2, 2, 1, 1, 1, 1, 0, 1, 1}, {3, 3, 2, 2, 1, 1, 1, 1, 0, 0},
        {2, 3, 1, 3, 2, 2, 1, 2, 0, 1}, {1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
        {3, 3, 3, 3, 1, 1, 2, 2, 2, 2}, {2, 2, 1, 2, 1, 3, 0, 1, 1, 0},
    };
    static const char *const ops[] = {"MaxPool", "AveragePool"};
    double xs[2 * 3 * 7 * 19];
    float xf[sizeof xs / sizeof xs[0]];
    int checked = 0;

    (void)state;
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        /* Few distinct values, so that windows hold ties (the first one must win in both). */
        xs[i] = (double)((i * 7919) % 11) - 5.0;
        xf[i] = (float)xs[i];
    }
    xs[3] = xs[40] = NAN; /* at a border and inside the larger planes */
    xf[3] = xf[40] = NAN;
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (size_t w = 0; w < sizeof wins / sizeof wins[0]; w++)
            for (int ceil_mode = 0; ceil_mode < 2; ceil_mode++)
                for (size_t o = 0; o < 2; o++)
                    for (int incl = 0; incl < (o == 1 ? 2 : 1); incl++)
                        for (int f64 = 0; f64 < 2; f64++) {
                            const ses_dtype_t dt = f64 ? SES_F64 : SES_F32;
                            const void *x = f64 ? (const void *)xs : (const void *)xf;
                            ses_tensor_t *y2 = NULL, *dx2 = NULL, *yn = NULL, *dxn = NULL;
                            char what[160];
                            int ok2 = pool_via(ops[o], dt, 0, shapes[sh], x, wins[w],
                                               ceil_mode, incl, &y2, &dx2);
                            int okn = pool_via(ops[o], dt, 1, shapes[sh], x, wins[w],
                                               ceil_mode, incl, &yn, &dxn);
                            assert_int_equal(ok2, okn);
                            if (!ok2)
                                continue;
                            snprintf(what, sizeof what,
                                     "%s %s shape %zu window %zu ceil_mode %d "
                                     "count_include_pad %d",
                                     ops[o], f64 ? "f64" : "f32", sh, w, ceil_mode, incl);
                            /* f32 sums are now f32 sums (they were double) */
                            const double tol = f64 || o == 0 ? 0 : 1e-5;
                            assert_same_values(y2, yn, tol, what);
                            assert_same_values(dx2, dxn, tol, what);
                            checked++;
                            ses_tensor_release(y2);
                            ses_tensor_release(dx2);
                            ses_tensor_release(yn);
                            ses_tensor_release(dxn);
                        }
    assert_true(checked > 100);
}

/* MaxPool propagates NaN (never fmaxf's "the other one"), wherever it sits in the window, in the
 * vectorised interior and at the borders alike; -inf stays -inf. */
static void max_pool_propagates_nan_in_the_interior_and_at_borders(void **state) {
    static const int64_t k2[] = {2, 2}, d[] = {1, 1, 4, 8};
    float x[32];
    ses_attr_t a[2] = {ses_attr_ints("kernel_shape", k2, 2), ses_attr_ints("strides", k2, 2)};

    (void)state;
    for (int i = 0; i < 32; i++)
        x[i] = (float)i;
    x[0] = NAN;             /* the first tap of the first window */
    x[8 + 3] = NAN;         /* the last tap of the second window */
    x[16 + 7] = -INFINITY;  /* a window of -inf and numbers keeps the numbers' max */
    x[24 + 4] = NAN;        /* a later tap after larger values */
    x[16 + 4] = 1000.0f;
    ses_tensor_t *t = unary("MaxPool", 4, d, x, a, 2);
    const float *y = ses_tensor_data(t);
    assert_true(isnan(y[0]));
    assert_true(isnan(y[1]));
    assert_true(y[2] == 13.0f && y[3] == 15.0f);
    assert_true(isnan(y[6]));
    assert_true(y[7] == 31.0f);
    ses_tensor_release(t);
}

static void global_pools_reduce_every_spatial_axis(void **state) {
    static const int64_t d[] = {1, 2, 2, 2}, yd[] = {1, 2, 1, 1};
    static const float x[] = {1, 2, 3, 6, -1, -2, -3, 10};
    static const float mean[] = {3, 1}, max[] = {6, 10};

    (void)state;
    ses_tensor_t *t = unary("GlobalAveragePool", 4, d, x, NULL, 0);
    assert_dims(t, 4, yd);
    assert_f32(t, mean, 2, 1e-7);
    ses_tensor_release(t);
    t = unary("GlobalMaxPool", 4, d, x, NULL, 0);
    assert_f32(t, max, 2, 0);
    ses_tensor_release(t);
}

/* y = scale * (x - mean) / sqrt(var + epsilon) + B per channel. */
static void batch_normalization_applies_the_running_statistics(void **state) {
    static const int64_t xd[] = {1, 2, 2}, cd[] = {2};
    static const float x[] = {1, 2, 3, 4}, scale[] = {1, 2}, b[] = {0, 1}, mean[] = {1, 2},
                       var[] = {1, 4};
    static const float want[] = {0, 1, 2, 3};
    ses_graph_t *g = NULL;
    ses_edge_t in[5], y;
    ses_attr_t eps = ses_attr_float("epsilon", 0.0);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_f32(g, 3, xd, x);
    in[1] = const_f32(g, 1, cd, scale);
    in[2] = const_f32(g, 1, cd, b);
    in[3] = const_f32(g, 1, cd, mean);
    in[4] = const_f32(g, 1, cd, var);
    assert_int_equal(ses_graph_op(g, "BatchNormalization", "bn", in, 5, &eps, 1, &y), SES_OK);
    ses_tensor_t *t = eval1(g, y);
    assert_f32(t, want, 4, 1e-6);
    ses_tensor_release(t);
    ses_graph_release(g);
}

/* Each row of [2,2,2] over axis 1 (four elements) normalized, then scaled and shifted; Mean and
 * InvStdDev one per row. Row 0 is 1..4 (mean 2.5, variance 1.25), row 1 all 5 (variance 0). */
static void layer_normalization_normalizes_rows_and_keeps_their_statistics(void **state) {
    static const int64_t xd[] = {2, 2, 2}, sd[] = {2, 2};
    static const float x[] = {1, 2, 3, 4, 5, 5, 5, 5}, scale[] = {1, 2, 1, 2}, b[] = {0, 0, 1, 1};
    const double is0 = 1 / sqrt(1.25 + 0.25), is1 = 1 / sqrt(0.25);
    float want[8] = {0, 0, 0, 0, 0, 0, 1, 1};
    for (int i = 0; i < 4; i++)
        want[i] = (float)((x[i] - 2.5) * is0 * scale[i] + b[i]);
    const float want_mean[] = {2.5f, 5}, want_is[] = {(float)is0, (float)is1};
    static const int64_t stats_dims[] = {2, 1, 1};
    ses_graph_t *g = NULL;
    ses_node_t *node = NULL;
    ses_edge_t in[3], outs[3];
    ses_attr_t a[2] = {ses_attr_int("axis", 1), ses_attr_float("epsilon", 0.25)};
    ses_tensor_t *got[3] = {NULL, NULL, NULL};
    ses_session_t *s = NULL;
    const char *cpu = "cpu";

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_f32(g, 3, xd, x);
    in[1] = const_f32(g, 2, sd, scale);
    in[2] = const_f32(g, 2, sd, b);
    assert_int_equal(ses_graph_add_node(g, "LayerNormalization", "ln", in, 3, a, 2, 3, &node),
                     SES_OK);
    for (uint32_t o = 0; o < 3; o++)
        outs[o] = ses_node_output(node, o);
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    if (ses_session_eval(s, outs, 3, NULL, 0, NULL, 0, got) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    assert_f32(got[0], want, 8, 1e-6);
    assert_dims(got[1], 3, stats_dims);
    assert_f32(got[1], want_mean, 2, 1e-6);
    assert_dims(got[2], 3, stats_dims);
    assert_f32(got[2], want_is, 2, 1e-6);
    for (int o = 0; o < 3; o++)
        ses_tensor_release(got[o]);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* PRelu with a per-channel slope [C,1,1] over [1,C,1,2]. */
static void prelu_scales_negative_values_by_their_channels_slope(void **state) {
    static const int64_t xd[] = {1, 2, 1, 2}, sd[] = {2, 1, 1};
    static const float x[] = {-2, 3, -4, 0}, slope[] = {0.5f, -1};
    static const float want[] = {-1, 3, 4, 0};
    ses_graph_t *g = NULL;
    ses_edge_t in[2], y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_f32(g, 4, xd, x);
    in[1] = const_f32(g, 3, sd, slope);
    assert_int_equal(ses_graph_op(g, "PRelu", "p", in, 2, NULL, 0, &y), SES_OK);
    ses_tensor_t *t = eval1(g, y);
    assert_dims(t, 4, xd);
    assert_f32(t, want, 4, 0);
    ses_tensor_release(t);
    ses_graph_release(g);
}

static void dropout_is_the_identity_with_a_true_mask(void **state) {
    static const int64_t d[] = {3};
    static const float x[] = {1, -2, 3};
    static const unsigned char yes = 1;
    ses_graph_t *g = NULL;
    ses_node_t *node = NULL;
    ses_edge_t in[3], outs[2], y;
    ses_tensor_t *got[2] = {0};
    ses_session_t *s = NULL;
    const char *cpu = "cpu";

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_f32(g, 1, d, x);
    in[1] = scalar_f32(g, 0.5f);
    assert_int_equal(ses_graph_add_node(g, "Dropout", "drop", in, 2, NULL, 0, 2, &node), SES_OK);
    outs[0] = ses_node_output(node, 0);
    outs[1] = ses_node_output(node, 1);
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    if (ses_session_eval(s, outs, 2, NULL, 0, NULL, 0, got) != SES_OK)
        fail_msg("%s", ses_last_error());
    assert_f32(got[0], x, 3, 0);
    assert_int_equal(ses_tensor_dtype(got[1]), SES_BOOL);
    for (int i = 0; i < 3; i++)
        assert_int_equal(((const unsigned char *)ses_tensor_data(got[1]))[i], 1);
    ses_tensor_release(got[0]);
    ses_tensor_release(got[1]);
    ses_session_destroy(s);

    /* Training mode drops elements at random and doubles the others (ratio 0.5); its own
     * tests are in dtypes_ops_test.c. */
    in[2] = constant(g, SES_BOOL, 0, NULL, &yes, 1);
    assert_int_equal(ses_graph_op(g, "Dropout", "train", in, 3, NULL, 0, &y), SES_OK);
    ses_tensor_t *t = eval1(g, y);
    for (int i = 0; i < 3; i++) {
        const float v = ((const float *)ses_tensor_data(t))[i];
        if (v != 0 && v != 2 * x[i])
            fail_msg("element %d is %g: neither 0 nor %g", i, (double)v, 2.0 * x[i]);
    }
    ses_tensor_release(t);
    ses_graph_release(g);
}

/* ---- Pad, Clip, Expand, Split, Shape, ConstantOfShape, Range -------------------------------- */

static ses_tensor_t *pad(const float *x, size_t rank, const int64_t *dims, const int64_t *pads,
                         size_t n_pads, const char *mode, const float *value) {
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y;
    ses_attr_t m = ses_attr_string("mode", mode);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_f32(g, rank, dims, x);
    in[1] = const_i64(g, n_pads, pads);
    if (value)
        in[2] = scalar_f32(g, *value);
    if (ses_graph_op(g, "Pad", "pad", in, value ? 3 : 2, &m, 1, &y) != SES_OK)
        fail_msg("%s", ses_last_error());
    ses_tensor_t *t = eval1(g, y);
    ses_graph_release(g);
    return t;
}

static void pad_supports_constant_reflect_and_edge(void **state) {
    static const float x[] = {1, 2, 3}, x2[] = {1, 2, 3, 4};
    static const int64_t d[] = {3}, p[] = {2, 2}, d2[] = {2, 2}, p2[] = {1, 0, 0, 1};
    static const int64_t crop[] = {-1, 1};
    static const float constant_want[] = {0, 0, 1, 2, 3, 0, 0};
    static const float reflect_want[] = {3, 2, 1, 2, 3, 2, 1};
    static const float edge_want[] = {1, 1, 1, 2, 3, 3, 3};
    static const float nine_want[] = {9, 9, 9, 1, 2, 9, 3, 4, 9};
    static const float crop_want[] = {2, 3, 0};
    const float nine = 9;

    (void)state;
    ses_tensor_t *t = pad(x, 1, d, p, 2, "constant", NULL);
    assert_f32(t, constant_want, 7, 0);
    ses_tensor_release(t);
    t = pad(x, 1, d, p, 2, "reflect", NULL);
    assert_f32(t, reflect_want, 7, 0);
    ses_tensor_release(t);
    t = pad(x, 1, d, p, 2, "edge", NULL);
    assert_f32(t, edge_want, 7, 0);
    ses_tensor_release(t);
    t = pad(x2, 2, d2, p2, 4, "constant", &nine);
    static const int64_t yd[] = {3, 3};
    assert_dims(t, 2, yd);
    assert_f32(t, nine_want, 9, 0);
    ses_tensor_release(t);
    /* A negative pad crops. */
    t = pad(x, 1, d, crop, 2, "constant", NULL);
    assert_f32(t, crop_want, 3, 0);
    ses_tensor_release(t);
}

static void clip_bounds_by_the_inputs_given(void **state) {
    static const int64_t d[] = {4}, e[] = {0};
    static const float x[] = {-2, -0.5f, 0.5f, 2}, want[] = {-1, -0.5f, 0.5f, 1},
                       want_max[] = {-2, -0.5f, 0.5f, 1};
    static const int64_t xi[] = {-5, 0, 5, 9}, want_i[] = {-5, 0, 3, 3}, three = 3;
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_f32(g, 1, d, x);
    in[1] = scalar_f32(g, -1);
    in[2] = scalar_f32(g, 1);
    assert_int_equal(ses_graph_op(g, "Clip", "both", in, 3, NULL, 0, &y), SES_OK);
    ses_tensor_t *t = eval1(g, y);
    assert_f32(t, want, 4, 0);
    ses_tensor_release(t);
    /* An empty min counts as absent. */
    in[1] = const_f32(g, 1, e, NULL);
    assert_int_equal(ses_graph_op(g, "Clip", "max_only", in, 3, NULL, 0, &y), SES_OK);
    t = eval1(g, y);
    assert_f32(t, want_max, 4, 0);
    ses_tensor_release(t);
    /* i64, max only. */
    in[0] = const_i64(g, 4, xi);
    in[1] = constant(g, SES_I64, 1, e, NULL, 0);
    in[2] = constant(g, SES_I64, 0, NULL, &three, sizeof three);
    assert_int_equal(ses_graph_op(g, "Clip", "ints", in, 3, NULL, 0, &y), SES_OK);
    t = eval1(g, y);
    assert_i64(t, want_i, 4);
    ses_tensor_release(t);
    ses_graph_release(g);
}

static void expand_broadcasts_both_ways(void **state) {
    static const int64_t d[] = {3, 1}, shape[] = {2, 1, 4}, yd[] = {2, 3, 4};
    static const float x[] = {1, 2, 3};
    ses_graph_t *g = NULL;
    ses_edge_t in[2], y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_f32(g, 2, d, x);
    in[1] = const_i64(g, 3, shape);
    assert_int_equal(ses_graph_op(g, "Expand", "e", in, 2, NULL, 0, &y), SES_OK);
    ses_tensor_t *t = eval1(g, y);
    assert_dims(t, 3, yd);
    const float *v = ses_tensor_data(t);
    for (int i = 0; i < 24; i++)
        assert_true(v[i] == x[(i / 4) % 3]);
    ses_tensor_release(t);
    ses_graph_release(g);
}

/* Splits @p x into @p n outputs and checks each against @p want (concatenated) and @p sizes. */
static void check_split(const float *x, size_t rank, const int64_t *dims, const int64_t *split,
                        const ses_attr_t *attrs, size_t n_attrs, size_t n, const int64_t *sizes,
                        int64_t axis, const float *want) {
    ses_graph_t *g = NULL;
    ses_node_t *node = NULL;
    ses_edge_t in[2], outs[8];
    ses_tensor_t *got[8] = {0};
    ses_session_t *s = NULL;
    const char *cpu = "cpu";
    size_t k = 0;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_f32(g, rank, dims, x);
    if (split)
        in[1] = const_i64(g, n, split);
    if (ses_graph_add_node(g, "Split", "split", in, split ? 2 : 1, attrs, n_attrs, n, &node) !=
        SES_OK)
        fail_msg("%s", ses_last_error());
    for (size_t o = 0; o < n; o++)
        outs[o] = ses_node_output(node, (uint32_t)o);
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    if (ses_session_eval(s, outs, n, NULL, 0, NULL, 0, got) != SES_OK)
        fail_msg("%s", ses_last_error());
    for (size_t o = 0; o < n; o++) {
        assert_int_equal(ses_tensor_dims(got[o])[axis], sizes[o]);
        assert_f32(got[o], want + k, ses_tensor_count(got[o]), 0);
        k += ses_tensor_count(got[o]);
        ses_tensor_release(got[o]);
    }
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void split_by_sizes_equal_parts_and_num_outputs(void **state) {
    static const float x[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const int64_t d6[] = {6}, split[] = {1, 2, 3}, s123[] = {1, 2, 3};
    static const int64_t d24[] = {2, 4}, s22[] = {2, 2}, d5[] = {5}, s221[] = {2, 2, 1};
    static const float by_columns[] = {0, 1, 4, 5, 2, 3, 6, 7};
    ses_attr_t axis1 = ses_attr_int("axis", 1), num3 = ses_attr_int("num_outputs", 3);

    (void)state;
    check_split(x, 1, d6, split, NULL, 0, 3, s123, 0, x);
    check_split(x, 2, d24, NULL, &axis1, 1, 2, s22, 1, by_columns);
    check_split(x, 1, d5, NULL, &num3, 1, 3, s221, 0, x);
}

static void shape_constant_of_shape_and_range(void **state) {
    static const int64_t d[] = {2, 3, 4}, want_shape[] = {3, 4}, dims[] = {2, 3};
    static const int64_t fives[] = {5, 5, 5, 5, 5, 5}, want_i[] = {10, 7};
    static const float want_f[] = {1, 1.25f, 1.5f, 1.75f};
    float x[24] = {0};
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y;
    ses_attr_t start = ses_attr_int("start", -2);

    (void)state;
    ses_tensor_t *t = unary("Shape", 3, d, x, &start, 1);
    assert_i64(t, want_shape, 2);
    ses_tensor_release(t);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_i64(g, 2, dims);
    ses_attr_t five = ses_attr_int("value", 5);
    assert_int_equal(ses_graph_op(g, "ConstantOfShape", "ints", in, 1, &five, 1, &y), SES_OK);
    t = eval1(g, y);
    assert_dims(t, 2, dims);
    assert_i64(t, fives, 6);
    ses_tensor_release(t);
    ses_attr_t half = ses_attr_float("value", 1.5);
    assert_int_equal(ses_graph_op(g, "ConstantOfShape", "floats", in, 1, &half, 1, &y), SES_OK);
    t = eval1(g, y);
    assert_int_equal(ses_tensor_dtype(t), SES_F32);
    assert_true(((const float *)ses_tensor_data(t))[5] == 1.5f);
    ses_tensor_release(t);

    in[0] = scalar_f32(g, 1);
    in[1] = scalar_f32(g, 2);
    in[2] = scalar_f32(g, 0.25f);
    assert_int_equal(ses_graph_op(g, "Range", "rf", in, 3, NULL, 0, &y), SES_OK);
    t = eval1(g, y);
    assert_f32(t, want_f, 4, 0);
    ses_tensor_release(t);
    static const int64_t ten = 10, four = 4, minus3 = -3;
    in[0] = constant(g, SES_I64, 0, NULL, &ten, 8);
    in[1] = constant(g, SES_I64, 0, NULL, &four, 8);
    in[2] = constant(g, SES_I64, 0, NULL, &minus3, 8);
    assert_int_equal(ses_graph_op(g, "Range", "ri", in, 3, NULL, 0, &y), SES_OK);
    t = eval1(g, y);
    assert_i64(t, want_i, 2);
    ses_tensor_release(t);
    ses_graph_release(g);
}

/* ---- errors --------------------------------------------------------------------------------- */

static void bad_attributes_and_inputs_are_named(void **state) {
    static const int64_t xd[] = {1, 3, 5, 5}, wd[] = {4, 3, 3, 3}, wd2[] = {4, 1, 3, 3};
    static const int64_t neg[] = {1, -1, 1, 1}, k9[] = {9, 9}, two[] = {2, 2};
    static const int64_t split_bad[] = {1, 1};
    float x[75] = {0}, w[108] = {0};
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y, t1;
    ses_node_t *node = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = const_f32(g, 4, xd, x);
    in[1] = const_f32(g, 4, wd2, w);
    {
        ses_attr_t a = ses_attr_int("group", 2);
        static const char *const parts[] = {"Conv \"grouped\"", "group is 2", "f32[1,3,5,5]"};
        assert_int_equal(ses_graph_op(g, "Conv", "grouped", in, 2, &a, 1, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    in[1] = const_f32(g, 4, wd, w);
    {
        ses_attr_t a = ses_attr_ints("pads", neg, 4);
        static const char *const parts[] = {"Conv \"negpad\"", "pads [1,-1,1,1]", "negative"};
        assert_int_equal(ses_graph_op(g, "Conv", "negpad", in, 2, &a, 1, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    {
        ses_attr_t a = ses_attr_ints("kernel_shape", k9, 2);
        static const char *const parts[] = {"MaxPool \"big\"", "bigger than the padded input"};
        assert_int_equal(ses_graph_op(g, "MaxPool", "big", in, 1, &a, 1, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        /* The Indices output is computed (spatial_ops_test.c); its storage_order is 0 or 1. */
        ses_attr_t a[] = {ses_attr_ints("kernel_shape", two, 2), ses_attr_int("storage_order", 2)};
        static const char *const parts[] = {"MaxPool \"indices\"", "storage_order"};
        assert_int_equal(ses_graph_add_node(g, "MaxPool", "indices", in, 1, a, 2, 2, &node),
                         SES_OK);
        expect_error(g, ses_node_output(node, 0), SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        static const char *const parts[] = {"MaxPool \"noks\"", "kernel_shape is required"};
        assert_int_equal(ses_graph_op(g, "MaxPool", "noks", in, 1, NULL, 0, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    /* A shape-like input computed from a variable is not known at compile time (from constants
     * it would be folded, fold_test.c). */
    {
        static const int64_t p[] = {1, 1, 1, 1, 0, 0, 0, 0};
        ses_edge_t pads, pin[2];
        static const char *const parts[] = {"Pad \"computed\"", "pads", "constant or fed"};
        assert_int_equal(ses_graph_variable(g, "pads", const_i64(g, 8, p), &pads), SES_OK);
        pin[0] = pads;
        pin[1] = pads;
        assert_int_equal(ses_graph_op(g, "Add", "sum", pin, 2, NULL, 0, &t1), SES_OK);
        pin[0] = in[0];
        pin[1] = t1;
        assert_int_equal(ses_graph_op(g, "Pad", "computed", pin, 2, NULL, 0, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 3);
    }
    {
        static const int64_t p[] = {0, 0, 5, 0, 0, 0, 0, 0};
        ses_edge_t pin[2] = {in[0], const_i64(g, 8, p)};
        ses_attr_t m = ses_attr_string("mode", "reflect");
        static const char *const parts[] = {"Pad \"reflect\"", "smaller than the axis"};
        assert_int_equal(ses_graph_op(g, "Pad", "reflect", pin, 2, &m, 1, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        ses_edge_t sin[2] = {in[0], const_i64(g, 2, split_bad)};
        static const char *const parts[] = {"Split \"s\"", "split [1,1] adds up to 2",
                                            "axis 0 of the input has 1"};
        assert_int_equal(ses_graph_add_node(g, "Split", "s", sin, 2, NULL, 0, 2, &node), SES_OK);
        expect_error(g, ses_node_output(node, 0), SES_INVALID_ARGUMENT, parts, 3);
    }
    {
        ses_edge_t rin[3] = {scalar_f32(g, 0), scalar_f32(g, 1), scalar_f32(g, 0)};
        static const char *const parts[] = {"Range \"r\"", "delta must be non-zero"};
        assert_int_equal(ses_graph_op(g, "Range", "r", rin, 3, NULL, 0, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    {
        ses_attr_t a = ses_attr_string("auto_pad", "SAME");
        static const char *const parts[] = {"Conv \"ap\"", "auto_pad is \"SAME\""};
        assert_int_equal(ses_graph_op(g, "Conv", "ap", in, 2, &a, 1, &y), SES_OK);
        expect_error(g, y, SES_INVALID_ARGUMENT, parts, 2);
    }
    ses_graph_release(g);
}

/* ---- gradients ------------------------------------------------------------------------------ */

#define MAX_X 3

typedef ses_status_t (*build_fn)(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y);

typedef struct gcase {
    const char *label;
    size_t n_x;
    size_t rank[MAX_X];
    int64_t dims[MAX_X][5];
    int away; /* values at least 0.3 from the Clip bounds */
    build_fn build;
} gcase_t;

static ses_status_t op(ses_graph_t *g, const char *name, const ses_edge_t *in, size_t n,
                       const ses_attr_t *a, size_t na, ses_edge_t *y) {
    return ses_graph_op(g, name, NULL, in, n, a, na, y);
}

static ses_status_t b_conv(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t s[] = {2, 1}, p[] = {1, 0, 1, 1}, d[] = {1, 2};
    ses_attr_t a[4] = {ses_attr_ints("strides", s, 2), ses_attr_ints("pads", p, 4),
                       ses_attr_ints("dilations", d, 2), ses_attr_int("group", 2)};
    return op(g, "Conv", x, 3, a, 4, y);
}

static ses_status_t b_conv_1d(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t s[] = {2};
    ses_attr_t a[2] = {ses_attr_ints("strides", s, 1), ses_attr_string("auto_pad", "SAME_UPPER")};
    return op(g, "Conv", x, 2, a, 2, y);
}

static ses_status_t b_conv_1x1(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    return op(g, "Conv", x, 3, NULL, 0, y);
}

static ses_status_t b_max_pool(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t k[] = {3, 2}, s[] = {2, 1}, p[] = {1, 0, 1, 1};
    ses_attr_t a[4] = {ses_attr_ints("kernel_shape", k, 2), ses_attr_ints("strides", s, 2),
                       ses_attr_ints("pads", p, 4), ses_attr_int("ceil_mode", 1)};
    return op(g, "MaxPool", x, 1, a, 4, y);
}

static ses_status_t b_average_pool(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t k[] = {3, 3}, s[] = {2, 2}, p[] = {1, 1, 1, 1};
    ses_attr_t a[4] = {ses_attr_ints("kernel_shape", k, 2), ses_attr_ints("strides", s, 2),
                       ses_attr_ints("pads", p, 4), ses_attr_int("ceil_mode", 1)};
    return op(g, "AveragePool", x, 1, a, 4, y);
}

static ses_status_t b_average_pool_incl(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t k[] = {2, 3}, p[] = {1, 1, 0, 1};
    ses_attr_t a[3] = {ses_attr_ints("kernel_shape", k, 2), ses_attr_ints("pads", p, 4),
                       ses_attr_int("count_include_pad", 1)};
    return op(g, "AveragePool", x, 1, a, 3, y);
}

static ses_status_t b_global_average_pool(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    return op(g, "GlobalAveragePool", x, 1, NULL, 0, y);
}

static ses_status_t b_clip(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    double lo = -0.5, hi = 0.7;
    ses_edge_t in[3] = {x[0], constant(g, SES_F64, 0, NULL, &lo, 8),
                        constant(g, SES_F64, 0, NULL, &hi, 8)};
    return op(g, "Clip", in, 3, NULL, 0, y);
}

static ses_status_t b_clip_max_only(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t empty[] = {0};
    double hi = 0.7;
    ses_edge_t in[3] = {x[0], constant(g, SES_F64, 1, empty, NULL, 0),
                        constant(g, SES_F64, 0, NULL, &hi, 8)};
    return op(g, "Clip", in, 3, NULL, 0, y);
}

static ses_status_t b_expand(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t shape[] = {2, 3, 1, 4};
    ses_edge_t in[2] = {x[0], const_i64(g, 4, shape)};
    return op(g, "Expand", in, 2, NULL, 0, y);
}

static ses_status_t b_pad(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y, const char *mode) {
    static const int64_t p[] = {1, 2, 2, 1};
    ses_edge_t in[2] = {x[0], const_i64(g, 4, p)};
    ses_attr_t m = ses_attr_string("mode", mode);
    return op(g, "Pad", in, 2, &m, 1, y);
}

static ses_status_t b_pad_constant(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t p[] = {1, -1, 0, 2};
    double v = 3.0;
    ses_edge_t in[3] = {x[0], const_i64(g, 4, p), constant(g, SES_F64, 0, NULL, &v, 8)};
    return op(g, "Pad", in, 3, NULL, 0, y);
}

static ses_status_t b_pad_reflect(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    return b_pad(g, x, y, "reflect");
}

static ses_status_t b_pad_edge(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    return b_pad(g, x, y, "edge");
}

/* Only outputs 0 and 2 of three reach the loss, so output 1's part of the gradient is zero. */
static ses_status_t b_split(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    static const int64_t split[] = {1, 3, 2};
    ses_edge_t in[2] = {x[0], const_i64(g, 3, split)}, parts[2];
    ses_attr_t axis = ses_attr_int("axis", 1);
    ses_node_t *node = NULL;
    ses_status_t st = ses_graph_add_node(g, "Split", NULL, in, 2, &axis, 1, 3, &node);
    if (st != SES_OK)
        return st;
    parts[0] = ses_node_output(node, 0);
    parts[1] = ses_node_output(node, 2);
    return op(g, "Concat", parts, 2, &axis, 1, y);
}

static ses_status_t b_dropout(ses_graph_t *g, const ses_edge_t *x, ses_edge_t *y) {
    return op(g, "Dropout", x, 1, NULL, 0, y);
}

#define D2(a, b) \
    { a, b }
#define D3(a, b, c) \
    { a, b, c }
#define D4(a, b, c, d) \
    { a, b, c, d }

static const gcase_t gcases[] = {
    {"Conv group 2 strides pads dilations bias",
     3,
     {4, 4, 1},
     {D4(2, 4, 5, 6), D4(4, 2, 3, 2), {4}},
     0,
     b_conv},
    {"Conv 1-D SAME_UPPER", 2, {3, 3}, {D3(2, 3, 7), D3(2, 3, 3)}, 0, b_conv_1d},
    {"Conv 1x1 bias", 3, {4, 4, 1}, {D4(2, 3, 2, 3), D4(4, 3, 1, 1), {4}}, 0, b_conv_1x1},
    {"MaxPool ceil_mode pads", 1, {4}, {D4(2, 2, 6, 5)}, 0, b_max_pool},
    {"AveragePool ceil_mode pads", 1, {4}, {D4(1, 2, 6, 6)}, 0, b_average_pool},
    {"AveragePool count_include_pad", 1, {4}, {D4(1, 2, 4, 5)}, 0, b_average_pool_incl},
    {"GlobalAveragePool", 1, {4}, {D4(2, 3, 2, 3)}, 0, b_global_average_pool},
    {"Clip", 1, {2}, {D2(3, 4)}, 1, b_clip},
    {"Clip max only", 1, {2}, {D2(3, 4)}, 1, b_clip_max_only},
    {"Expand", 1, {2}, {D2(3, 1)}, 0, b_expand},
    {"Pad constant, negative pads", 1, {2}, {D2(3, 4)}, 0, b_pad_constant},
    {"Pad reflect", 1, {2}, {D2(3, 4)}, 0, b_pad_reflect},
    {"Pad edge", 1, {2}, {D2(3, 4)}, 0, b_pad_edge},
    {"Split", 1, {2}, {D2(2, 6)}, 0, b_split},
    {"Dropout", 1, {2}, {D2(2, 3)}, 0, b_dropout},
};

static double eval_loss(ses_session_t *s, ses_edge_t loss, const ses_feed_t *feeds, size_t n) {
    ses_tensor_t *value = NULL;
    double sum = 0.0;
    if (ses_session_eval(s, &loss, 1, feeds, n, NULL, 0, &value) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    for (size_t i = 0; i < ses_tensor_count(value); i++)
        sum += ((const double *)ses_tensor_data(value))[i];
    ses_tensor_release(value);
    return sum;
}

static void check_gradient(const gcase_t *c) {
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_edge_t x[MAX_X], y, sq, l1, l2, loss, dx[MAX_X], pair[2];
    ses_feed_t feeds[MAX_X];
    ses_tensor_t *grads[MAX_X] = {0};
    const char *cpu = "cpu";
    ses_attr_t keep = ses_attr_int("keepdims", 0);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    for (size_t i = 0; i < c->n_x; i++) {
        ses_tensor_t *t = NULL;
        char name[32];
        snprintf(name, sizeof name, "x%zu", i);
        assert_int_equal(ses_graph_placeholder(g, name, SES_F64, c->rank[i], c->dims[i], &x[i]),
                         SES_OK);
        assert_int_equal(ses_tensor_create(SES_F64, c->rank[i], c->dims[i], &t), SES_OK);
        for (size_t k = 0; k < ses_tensor_count(t); k++) {
            double v = uniform(-1.5, 1.5);
            /* Keep Clip's inputs away from its kinks at -0.5 and 0.7. */
            while (c->away && (fabs(v + 0.5) < 0.1 || fabs(v - 0.7) < 0.1))
                v = uniform(-1.5, 1.5);
            ((double *)ses_tensor_data(t))[k] = v;
        }
        feeds[i].edge = x[i];
        feeds[i].value = t;
    }
    if (c->build(g, x, &y) != SES_OK)
        fail_msg("%s: building: %s", c->label, ses_last_error());
    /* loss = sum(y*y) + sum(y): the gradient flowing into y differs per element. */
    pair[0] = pair[1] = y;
    assert_int_equal(op(g, "Mul", pair, 2, NULL, 0, &sq), SES_OK);
    assert_int_equal(op(g, "ReduceSum", &sq, 1, &keep, 1, &l1), SES_OK);
    assert_int_equal(op(g, "ReduceSum", &y, 1, &keep, 1, &l2), SES_OK);
    pair[0] = l1;
    pair[1] = l2;
    assert_int_equal(op(g, "Add", pair, 2, NULL, 0, &loss), SES_OK);
    if (ses_gradients(g, NULL, &loss, 1, x, c->n_x, NULL, dx) != SES_OK)
        fail_msg("%s: ses_gradients: %s", c->label, ses_last_error());
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    if (ses_session_eval(s, dx, c->n_x, feeds, c->n_x, NULL, 0, grads) != SES_OK)
        fail_msg("%s: evaluating the gradients: %s", c->label, ses_last_error());
    for (size_t i = 0; i < c->n_x; i++) {
        double *v = ses_tensor_data(feeds[i].value);
        const double *analytic = ses_tensor_data(grads[i]);
        assert_int_equal(ses_tensor_count(grads[i]), ses_tensor_count(feeds[i].value));
        for (size_t k = 0; k < ses_tensor_count(feeds[i].value); k++) {
            const double h = 1e-6, keep_v = v[k];
            v[k] = keep_v + h;
            double up = eval_loss(s, loss, feeds, c->n_x);
            v[k] = keep_v - h;
            double down = eval_loss(s, loss, feeds, c->n_x);
            v[k] = keep_v;
            double numeric = (up - down) / (2 * h);
            if (fabs(numeric - analytic[k]) > 1e-5 * fmax(1.0, fabs(numeric)))
                fail_msg("%s: d loss / d x%zu[%zu]: gradient %.10g, finite difference %.10g",
                         c->label, i, k, analytic[k], numeric);
        }
    }
    for (size_t i = 0; i < c->n_x; i++) {
        ses_tensor_release(feeds[i].value);
        ses_tensor_release(grads[i]);
    }
    ses_session_destroy(s);
    ses_graph_release(g);
}

static void gradients_match_finite_differences(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof gcases / sizeof gcases[0]; i++)
        check_gradient(&gcases[i]);
}

/* A small CNN (Conv, Relu, MaxPool, Dropout, Flatten, Gemm) learns to tell images bright on the
 * left from images bright on the right with SGD: every op's gradient in one training graph. */
static ses_edge_t variable(ses_graph_t *g, const char *name, size_t rank, const int64_t *dims,
                           double scale) {
    size_t n = 1;
    float v[64];
    ses_edge_t e;
    for (size_t d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    assert_true(n <= 64);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)uniform(-scale, scale);
    assert_int_equal(ses_graph_variable(g, name, const_f32(g, rank, dims, v), &e), SES_OK);
    return e;
}

static void a_small_cnn_trains_with_sgd(void **state) {
    static const int64_t xd[] = {4, 1, 6, 6}, ld[] = {4}, wd[] = {3, 1, 3, 3}, bd[] = {3};
    static const int64_t fd[] = {27, 2}, fbd[] = {2}, p1[] = {1, 1, 1, 1}, k2[] = {2, 2};
    static const int64_t label_values[] = {0, 1, 0, 1};
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_edge_t x, labels, in[3], conv, relu, pool, drop, flat, logits, loss;
    ses_node_t *step = NULL;
    ses_optimizer_t sgd;
    ses_feed_t feeds[2];
    const char *cpu = "cpu";
    float images[4 * 36];
    double first = 0, last = 0;

    (void)state;
    for (int n = 0; n < 4; n++)
        for (int i = 0; i < 36; i++)
            images[n * 36 + i] = (float)(((i % 6 < 3) == (n % 2 == 0)) + uniform(-0.2, 0.2));
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "labels", SES_I64, 1, ld, &labels), SES_OK);
    in[0] = x;
    in[1] = variable(g, "conv/W", 4, wd, 0.5);
    in[2] = variable(g, "conv/B", 1, bd, 0.1);
    ses_attr_t pads = ses_attr_ints("pads", p1, 4);
    assert_int_equal(op(g, "Conv", in, 3, &pads, 1, &conv), SES_OK);
    assert_int_equal(op(g, "Relu", &conv, 1, NULL, 0, &relu), SES_OK);
    ses_attr_t pool_attrs[2] = {ses_attr_ints("kernel_shape", k2, 2),
                                ses_attr_ints("strides", k2, 2)};
    assert_int_equal(op(g, "MaxPool", &relu, 1, pool_attrs, 2, &pool), SES_OK);
    assert_int_equal(op(g, "Dropout", &pool, 1, NULL, 0, &drop), SES_OK);
    assert_int_equal(op(g, "Flatten", &drop, 1, NULL, 0, &flat), SES_OK);
    in[0] = flat;
    in[1] = variable(g, "fc/W", 2, fd, 0.3);
    in[2] = variable(g, "fc/b", 1, fbd, 0.1);
    assert_int_equal(op(g, "Gemm", in, 3, NULL, 0, &logits), SES_OK);
    assert_int_equal(
        ses_softmax_cross_entropy(g, "loss", logits, labels, SES_REDUCTION_MEAN, &loss), SES_OK);
    ses_optimizer_sgd(&sgd, 0.5);
    if (ses_minimize(g, "train", loss, &sgd, NULL, 0, &step) != SES_OK)
        fail_msg("ses_minimize: %s", ses_last_error());

    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    feeds[0].edge = x;
    feeds[1].edge = labels;
    assert_int_equal(ses_tensor_create_from(SES_F32, 4, xd, images, sizeof images, &feeds[0].value),
                     SES_OK);
    assert_int_equal(
        ses_tensor_create_from(SES_I64, 1, ld, label_values, sizeof label_values, &feeds[1].value),
        SES_OK);
    for (int i = 0; i < 40; i++) {
        ses_tensor_t *value = NULL;
        if (ses_session_eval(s, &loss, 1, feeds, 2, &step, 1, &value) != SES_OK)
            fail_msg("step %d: %s", i, ses_last_error());
        last = *(const float *)ses_tensor_data(value);
        if (i == 0)
            first = last;
        ses_tensor_release(value);
    }
    if (!(last < 0.2 * first))
        fail_msg("the loss went from %g to %g", first, last);
    ses_tensor_release(feeds[0].value);
    ses_tensor_release(feeds[1].value);
    ses_session_destroy(s);
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_matches_a_direct_convolution),
        cmocka_unit_test(conv_gives_hand_checked_values),
        cmocka_unit_test(conv_through_onednn_agrees_with_im2col),
        cmocka_unit_test(conv_through_onednn_sees_a_variable_change_between_runs),
        cmocka_unit_test(a_conv_plan_keeps_its_scratch_across_image_sizes),
        cmocka_unit_test(the_conv_switch_refuses_unknown_values),
        cmocka_unit_test(max_pool_takes_window_maxima_with_ceil_mode),
        cmocka_unit_test(average_pool_counts_padding_only_when_asked),
        cmocka_unit_test(conv_blocks_of_images_agree_with_one_image_per_gemm),
        cmocka_unit_test(conv_on_four_threads_agrees_with_one),
        cmocka_unit_test(two_d_pools_agree_with_the_generic_path_on_every_edge),
        cmocka_unit_test(max_pool_propagates_nan_in_the_interior_and_at_borders),
        cmocka_unit_test(global_pools_reduce_every_spatial_axis),
        cmocka_unit_test(batch_normalization_applies_the_running_statistics),
        cmocka_unit_test(layer_normalization_normalizes_rows_and_keeps_their_statistics),
        cmocka_unit_test(prelu_scales_negative_values_by_their_channels_slope),
        cmocka_unit_test(dropout_is_the_identity_with_a_true_mask),
        cmocka_unit_test(pad_supports_constant_reflect_and_edge),
        cmocka_unit_test(clip_bounds_by_the_inputs_given),
        cmocka_unit_test(expand_broadcasts_both_ways),
        cmocka_unit_test(split_by_sizes_equal_parts_and_num_outputs),
        cmocka_unit_test(shape_constant_of_shape_and_range),
        cmocka_unit_test(bad_attributes_and_inputs_are_named),
        cmocka_unit_test(gradients_match_finite_differences),
        cmocka_unit_test(a_small_cnn_trains_with_sgd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
