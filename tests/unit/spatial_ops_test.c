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

/* Evaluates @p fetch on the CPU; fails the test with the library's message on error. */
static ses_tensor_t *eval1(ses_graph_t *g, ses_edge_t fetch) {
    const char *cpu = "cpu";
    ses_session_t *s = NULL;
    ses_tensor_t *out = NULL;

    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    if (ses_session_eval(s, &fetch, 1, NULL, 0, NULL, 0, &out) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    ses_session_destroy(s);
    return out;
}

/* Evaluating @p fetch fails with @p status and a message holding every string in @p parts. */
static void expect_error(ses_graph_t *g, ses_edge_t fetch, ses_status_t status,
                         const char *const *parts, size_t n_parts) {
    const char *cpu = "cpu";
    ses_session_t *s = NULL;
    ses_tensor_t *out = NULL;
    ses_status_t st;

    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    st = ses_session_eval(s, &fetch, 1, NULL, 0, NULL, 0, &out);
    if (st != status)
        fail_msg("got status %d (want %d): %s", (int)st, (int)status, ses_last_error());
    for (size_t i = 0; i < n_parts; i++)
        if (!strstr(ses_last_error(), parts[i]))
            fail_msg("message lacks \"%s\": %s", parts[i], ses_last_error());
    assert_null(out);
    ses_session_destroy(s);
}

/* Element @p i of a float tensor as a double. */
static double at(ses_tensor_t *t, int64_t i) {
    if (ses_tensor_dtype(t) == SES_F32)
        return ((const float *)ses_tensor_data(t))[i];
    return ((const double *)ses_tensor_data(t))[i];
}

/* @p got has @p rank and @p dims and its values are within @p tol of @p want. */
static void expect_values(const char *label, ses_tensor_t *got, size_t rank,
                          const int64_t *dims, const double *want, double tol) {
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
    size_t n;            /* spatial dims, 1 to 3 */
    int64_t batch, c, mg, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], op[3];
    int bias;
    const char *auto_pad;   /* NULL: explicit pads */
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
        out[d] = c->output_shape[0] > 0
                     ? c->output_shape[d]
                     : c->s[d] * (c->in[d] - 1) + c->op[d] + (c->k[d] - 1) * c->d[d] + 1 -
                           c->pb[d] - c->pe[d];
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
    static const ct_case_t cases[] = {
        {"1-D f32, bias", SES_F32, 1, 2, 3, 2, 1, {5}, {3}, {1}, {1}, {0}, {0}, {0}, 1, NULL, {0}},
        {"1-D f64, stride 3, dilation 2, output_padding 2", SES_F64, 1, 1, 2, 3, 1, {4}, {2},
         {3}, {2}, {1}, {0}, {2}, 0, NULL, {0}},
        {"2-D f32, strides, pads, 2 groups, bias", SES_F32, 2, 2, 4, 3, 2, {4, 3}, {3, 2}, {2, 1},
         {1, 1}, {1, 0}, {0, 1}, {1, 0}, 1, NULL, {0}},
        {"2-D f64, dilations, depthwise", SES_F64, 2, 1, 3, 1, 3, {3, 4}, {2, 3}, {1, 2}, {2, 1},
         {0, 1}, {1, 0}, {0, 1}, 1, NULL, {0}},
        {"2-D f32, many channels (blocks of the column matrix)", SES_F32, 2, 2, 5, 40, 1,
         {6, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, NULL, {0}},
        {"3-D f32, strides, bias", SES_F32, 3, 1, 2, 2, 1, {2, 3, 2}, {2, 2, 3}, {2, 1, 2},
         {1, 1, 1}, {0, 1, 0}, {1, 0, 0}, {0, 0, 1}, 1, NULL, {0}},
        /* SAME_LOWER, stride 2, kernel 3, in 3: out 6, total pads 2*2+3-6 = 1, at the begin. */
        {"2-D f64, auto_pad SAME_LOWER", SES_F64, 2, 1, 2, 2, 1, {3, 3}, {3, 3}, {2, 2}, {1, 1},
         {1, 1}, {0, 0}, {0, 0}, 0, "SAME_LOWER", {0}},
        /* SAME_UPPER: the odd pad at the end. */
        {"2-D f32, auto_pad SAME_UPPER", SES_F32, 2, 1, 2, 2, 1, {3, 3}, {3, 3}, {2, 2}, {1, 1},
         {0, 0}, {1, 1}, {0, 0}, 1, "SAME_UPPER", {0}},
        /* output_shape [8, 9] from in [3, 4], stride 3, kernel 3: natural 9 and 12; pads
         * 1 at the begin, 0 at the end along the first (total 1) and 2, 1 along the second. */
        {"2-D f32, output_shape", SES_F32, 2, 1, 1, 2, 1, {3, 4}, {3, 3}, {3, 3}, {1, 1}, {1, 2},
         {0, 1}, {0, 0}, 0, NULL, {8, 9}},
    };
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
        ses_attr_t a[] = {ses_attr_string("auto_pad", "SAME_UPPER"),
                          ses_attr_ints("pads", two, 2)};
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_transpose_matches_a_direct_scatter),
        cmocka_unit_test(conv_transpose_output_shape_past_the_taps_is_zeros_at_the_end),
        cmocka_unit_test(conv_transpose_errors_name_the_node_and_what_is_wrong),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
