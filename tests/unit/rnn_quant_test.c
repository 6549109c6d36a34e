/*
 * The recurrent layers (src/ops/rnn.c, plugins/cpu/cpu_rnn.c) and the quantization ops
 * (src/ops/quant.c, plugins/cpu/cpu_quant.c) evaluated on the CPU driver: RNN, GRU and LSTM
 * against a direct double-precision recursion written here (one batch entry and step at a time,
 * no GEMM) in every form the op has; the quantization ops against hand-computed values (ties to
 * even, saturation) and direct integer loops; errors that name the node and the input at fault.
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

/* ---- helpers ---------------------------------------------------------------------------- */

static ses_edge_t constant(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                           const void *values) {
    ses_tensor_t *t = NULL;
    ses_edge_t e = {NULL, 0};
    size_t n = 1;
    for (size_t d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    assert_int_equal(
        ses_tensor_create_from(dtype, rank, dims, values, n * ses_dtype_size(dtype), &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

/* An empty f32 constant: an absent optional input. */
static ses_edge_t absent(ses_graph_t *g) {
    const int64_t dims[1] = {0};
    return constant(g, SES_F32, 1, dims, NULL);
}

/* Evaluates @p n fetches on the CPU; fails the test with the library's message on error. */
static void eval_n(ses_graph_t *g, const ses_edge_t *fetches, size_t n, ses_tensor_t **out) {
    const char *cpu = "cpu";
    ses_session_t *s = NULL;

    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    if (ses_session_eval(s, fetches, n, NULL, 0, NULL, 0, out) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    ses_session_destroy(s);
}

/* Evaluating @p fetch fails with @p status and a message holding @p part. */
static void expect_error(ses_graph_t *g, ses_edge_t fetch, ses_status_t status, const char *part) {
    const char *cpu = "cpu";
    ses_session_t *s = NULL;
    ses_tensor_t *out = NULL;
    ses_status_t st;

    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    st = ses_session_eval(s, &fetch, 1, NULL, 0, NULL, 0, &out);
    if (st != status)
        fail_msg("got status %d (want %d): %s", (int)st, (int)status, ses_last_error());
    if (!strstr(ses_last_error(), part))
        fail_msg("message lacks \"%s\": %s", part, ses_last_error());
    assert_null(out);
    ses_session_destroy(s);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static double uniform(double lo, double hi) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static double element(const ses_tensor_t *t, size_t i) {
    const void *p = ses_tensor_data((ses_tensor_t *)t);
    switch (ses_tensor_dtype(t)) {
    case SES_F32: return ((const float *)p)[i];
    case SES_F64: return ((const double *)p)[i];
    case SES_I8: return ((const int8_t *)p)[i];
    case SES_U8: return ((const uint8_t *)p)[i];
    case SES_I16: return ((const int16_t *)p)[i];
    case SES_U16: return ((const uint16_t *)p)[i];
    case SES_I32: return ((const int32_t *)p)[i];
    default: return NAN;
    }
}

static void assert_values(const ses_tensor_t *t, ses_dtype_t dtype, const double *want, size_t n,
                          double tol, const char *what) {
    assert_int_equal(ses_tensor_dtype(t), dtype);
    assert_int_equal(ses_tensor_count(t), n);
    for (size_t i = 0; i < n; i++)
        if (!(fabs(element(t, i) - want[i]) <= tol * (1.0 + fabs(want[i]))))
            fail_msg("%s: element %zu is %.12g, want %.12g", what, i, element(t, i), want[i]);
}

/* ---- the recurrent layers ---------------------------------------------------------------- */

typedef struct rnn_case {
    const char *op; /* RNN, GRU, LSTM */
    const char *direction;
    int layout, has_b, has_lens, has_h0, has_c0, has_p, lbr, input_forget;
    const char *activations; /* NULL: the defaults */
    double alpha[6], beta[6];
    size_t n_alpha, n_beta;
    double clip; /* 0: none */
    ses_dtype_t dtype;
} rnn_case_t;

static double ref_act(const char *name, double a, double b, double x) {
    if (!strcmp(name, "Relu"))
        return x > 0 ? x : 0;
    if (!strcmp(name, "Tanh"))
        return tanh(x);
    if (!strcmp(name, "Sigmoid"))
        return 1 / (1 + exp(-x));
    if (!strcmp(name, "Affine"))
        return a * x + b;
    if (!strcmp(name, "LeakyRelu"))
        return x < 0 ? a * x : x;
    if (!strcmp(name, "ThresholdedRelu"))
        return x > a ? x : 0;
    if (!strcmp(name, "ScaledTanh"))
        return a * tanh(b * x);
    if (!strcmp(name, "HardSigmoid"))
        return fmax(0, fmin(1, a * x + b));
    if (!strcmp(name, "Elu"))
        return x < 0 ? a * (exp(x) - 1) : x;
    if (!strcmp(name, "Softsign"))
        return x / (1 + fabs(x));
    return log(1 + exp(x)); /* Softplus */
}

/* The reference: every ONNX formula written out per batch entry, step and unit. */
typedef struct ref {
    const rnn_case_t *c;
    int64_t seq, batch, in, h, gates, dirs;
    const double *x, *w, *r, *b, *h0, *c0, *p;
    const int32_t *lens;
    char names[6][32];
    double a[6], bt[6];
    double *y, *yh, *yc;
} ref_t;

static double ref_f(const ref_t *f, int64_t d, int which, double x) {
    const int k = (int)(d * (f->gates == 1 ? 1 : f->gates == 3 ? 2 : 3) + which);
    if (f->c->clip > 0)
        x = fmax(-f->c->clip, fmin(f->c->clip, x));
    return ref_act(f->names[k], f->a[k], f->bt[k], x);
}

static double xat(const ref_t *f, int64_t t, int64_t b, int64_t i) {
    return f->c->layout ? f->x[(b * f->seq + t) * f->in + i] : f->x[(t * f->batch + b) * f->in + i];
}

static int64_t hidx(const ref_t *f, int64_t d, int64_t b) {
    return f->c->layout ? (b * f->dirs + d) * f->h : (d * f->batch + b) * f->h;
}

/* sum_i W[d][row][i] x_t[i] + sum_j R[d][row][j] hv[j] */
static double wx(const ref_t *f, int64_t d, int64_t row, int64_t t, int64_t b) {
    double s = 0;
    for (int64_t i = 0; i < f->in; i++)
        s += f->w[(d * f->gates * f->h + row) * f->in + i] * xat(f, t, b, i);
    return s;
}

static double rh(const ref_t *f, int64_t d, int64_t row, const double *hv) {
    double s = 0;
    for (int64_t j = 0; j < f->h; j++)
        s += f->r[(d * f->gates * f->h + row) * f->h + j] * hv[j];
    return s;
}

static double bias(const ref_t *f, int64_t d, int rec, int64_t row) {
    return f->b ? f->b[d * 2 * f->gates * f->h + rec * f->gates * f->h + row] : 0;
}

static void reference(ref_t *f) {
    const int64_t H = f->h;
    const int reverse = !strcmp(f->c->direction, "reverse");
    double hv[16], cv[16], nh[16], nc[16], rv[16];

    for (int64_t d = 0; d < f->dirs; d++)
        for (int64_t b = 0; b < f->batch; b++) {
            const int64_t len = f->lens ? f->lens[b] : f->seq;
            for (int64_t k = 0; k < H; k++) {
                hv[k] = f->h0 ? f->h0[hidx(f, d, b) + k] : 0;
                cv[k] = f->c0 ? f->c0[hidx(f, d, b) + k] : 0;
            }
            for (int64_t s = 0; s < len; s++) {
                const int64_t t = (reverse || d == 1) ? len - 1 - s : s;
                for (int64_t k = 0; k < H; k++) {
                    if (f->gates == 1) {
                        nh[k] = ref_f(f, d, 0,
                                      wx(f, d, k, t, b) + rh(f, d, k, hv) + bias(f, d, 0, k) +
                                          bias(f, d, 1, k));
                    } else if (f->gates == 3) {
                        /* z, r, h */
                        const double z = ref_f(f, d, 0,
                                               wx(f, d, k, t, b) + rh(f, d, k, hv) +
                                                   bias(f, d, 0, k) + bias(f, d, 1, k));
                        double hh;
                        for (int64_t j = 0; j < H; j++)
                            rv[j] = ref_f(f, d, 0,
                                          wx(f, d, H + j, t, b) + rh(f, d, H + j, hv) +
                                              bias(f, d, 0, H + j) + bias(f, d, 1, H + j));
                        if (f->c->lbr) {
                            hh = ref_f(
                                f, d, 1,
                                wx(f, d, 2 * H + k, t, b) + bias(f, d, 0, 2 * H + k) +
                                    rv[k] * (rh(f, d, 2 * H + k, hv) + bias(f, d, 1, 2 * H + k)));
                        } else {
                            double rhv[16];
                            for (int64_t j = 0; j < H; j++)
                                rhv[j] = rv[j] * hv[j];
                            hh = ref_f(f, d, 1,
                                       wx(f, d, 2 * H + k, t, b) + rh(f, d, 2 * H + k, rhv) +
                                           bias(f, d, 0, 2 * H + k) + bias(f, d, 1, 2 * H + k));
                        }
                        nh[k] = (1 - z) * hh + z * hv[k];
                    } else {
                        /* i, o, f, c; P is i, o, f */
                        const double *p = f->p ? f->p + d * 3 * H : NULL;
                        double g[4];
                        for (int q = 0; q < 4; q++)
                            g[q] = wx(f, d, q * H + k, t, b) + rh(f, d, q * H + k, hv) +
                                   bias(f, d, 0, q * H + k) + bias(f, d, 1, q * H + k);
                        const double i = ref_f(f, d, 0, g[0] + (p ? p[k] * cv[k] : 0));
                        const double fg =
                            f->c->input_forget
                                ? 1 - i
                                : ref_f(f, d, 0, g[2] + (p ? p[2 * H + k] * cv[k] : 0));
                        const double cc = ref_f(f, d, 1, g[3]);
                        nc[k] = fg * cv[k] + i * cc;
                        const double o = ref_f(f, d, 0, g[1] + (p ? p[H + k] * nc[k] : 0));
                        nh[k] = o * ref_f(f, d, 2, nc[k]);
                    }
                }
                for (int64_t k = 0; k < H; k++) {
                    hv[k] = nh[k];
                    if (f->gates == 4)
                        cv[k] = nc[k];
                    f->y[(f->c->layout ? (b * f->seq + t) * f->dirs + d
                                       : (t * f->dirs + d) * f->batch + b) *
                             H +
                         k] = hv[k];
                }
            }
            for (int64_t k = 0; k < H; k++) {
                f->yh[hidx(f, d, b) + k] = hv[k];
                f->yc[hidx(f, d, b) + k] = cv[k];
            }
        }
}

static ses_edge_t random_input(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                               double lo, double hi, double **out_values) {
    size_t n = 1;
    for (size_t d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    double *v = malloc((n ? n : 1) * sizeof *v);
    float *f = malloc((n ? n : 1) * sizeof *f);
    assert_non_null(v);
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) {
        v[i] = uniform(lo, hi);
        f[i] = (float)v[i];
        if (dtype == SES_F32)
            v[i] = f[i]; /* the reference sees the values the graph holds */
    }
    ses_edge_t e = constant(g, dtype, rank, dims, dtype == SES_F32 ? (const void *)f : v);
    free(f);
    *out_values = v;
    return e;
}

static void run_rnn_case(const rnn_case_t *c) {
    const int64_t seq = 4, batch = 3, in = 3, H = 5;
    const int64_t gates = !strcmp(c->op, "RNN") ? 1 : !strcmp(c->op, "GRU") ? 3 : 4;
    const int64_t dirs = !strcmp(c->direction, "bidirectional") ? 2 : 1;
    const int64_t xd[3] = {c->layout ? batch : seq, c->layout ? seq : batch, in};
    const int64_t wd[3] = {dirs, gates * H, in}, rd[3] = {dirs, gates * H, H};
    const int64_t bd[2] = {dirs, 2 * gates * H}, ld[1] = {batch}, pd[2] = {dirs, 3 * H};
    const int64_t hd[3] = {c->layout ? batch : dirs, c->layout ? dirs : batch, H};
    const int32_t lens[3] = {4, 2, 3};
    double *x, *w, *r, *b = NULL, *h0 = NULL, *c0 = NULL, *p = NULL;
    ses_graph_t *g = NULL;
    ses_edge_t in_e[8], out_e[3];
    ses_attr_t attrs[12];
    size_t n_attrs = 0, n_in;
    ses_node_t *node = NULL;
    ses_tensor_t *got[3] = {NULL, NULL, NULL};
    const size_t n_out = gates == 4 ? 3 : 2, state = (size_t)(dirs * batch * H);
    const double tol = c->dtype == SES_F64 ? 1e-11 : 2e-5;
    char what[160];
    ref_t f;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in_e[0] = random_input(g, c->dtype, 3, xd, -1, 1, &x);
    in_e[1] = random_input(g, c->dtype, 3, wd, -0.8, 0.8, &w);
    in_e[2] = random_input(g, c->dtype, 3, rd, -0.8, 0.8, &r);
    in_e[3] = c->has_b ? random_input(g, c->dtype, 2, bd, -0.5, 0.5, &b) : absent(g);
    in_e[4] = c->has_lens ? constant(g, SES_I32, 1, ld, lens) : absent(g);
    in_e[5] = c->has_h0 ? random_input(g, c->dtype, 3, hd, -1, 1, &h0) : absent(g);
    in_e[6] = c->has_c0 ? random_input(g, c->dtype, 3, hd, -1, 1, &c0) : absent(g);
    in_e[7] = c->has_p ? random_input(g, c->dtype, 2, pd, -0.5, 0.5, &p) : absent(g);
    n_in = gates == 4 ? 8 : 6;
    attrs[n_attrs++] = ses_attr_int("hidden_size", H);
    attrs[n_attrs++] = ses_attr_string("direction", c->direction);
    attrs[n_attrs++] = ses_attr_int("layout", c->layout);
    if (gates == 3)
        attrs[n_attrs++] = ses_attr_int("linear_before_reset", c->lbr);
    if (gates == 4)
        attrs[n_attrs++] = ses_attr_int("input_forget", c->input_forget);
    if (c->activations)
        attrs[n_attrs++] = ses_attr_string("activations", c->activations);
    if (c->n_alpha)
        attrs[n_attrs++] = ses_attr_floats("activation_alpha", c->alpha, c->n_alpha);
    if (c->n_beta)
        attrs[n_attrs++] = ses_attr_floats("activation_beta", c->beta, c->n_beta);
    if (c->clip > 0)
        attrs[n_attrs++] = ses_attr_float("clip", c->clip);
    assert_int_equal(
        ses_graph_add_node(g, c->op, "layer", in_e, n_in, attrs, n_attrs, n_out, &node), SES_OK);
    for (size_t o = 0; o < n_out; o++)
        out_e[o] = ses_node_output(node, (uint32_t)o);
    eval_n(g, out_e, n_out, got);

    /* The reference, with the activations and their alpha and beta as the op reads them. */
    memset(&f, 0, sizeof f);
    f.c = c;
    f.seq = seq;
    f.batch = batch;
    f.in = in;
    f.h = H;
    f.gates = gates;
    f.dirs = dirs;
    f.x = x;
    f.w = w;
    f.r = r;
    f.b = b;
    f.h0 = h0;
    f.c0 = c0;
    f.p = p;
    f.lens = c->has_lens ? lens : NULL;
    {
        const char *defaults = gates == 1   ? "Tanh"
                               : gates == 3 ? "Sigmoid,Tanh"
                                            : "Sigmoid,Tanh,Tanh";
        const char *list = c->activations ? c->activations : defaults;
        const size_t per = gates == 1 ? 1 : gates == 3 ? 2 : 3;
        size_t n = 0, ua = 0, ub = 0;
        for (const char *q = list; *q && n < 6;) {
            size_t len = strcspn(q, ",");
            snprintf(f.names[n++], sizeof f.names[0], "%.*s", (int)len, q);
            q += len + (q[len] == ',');
        }
        for (size_t i = n; i < per * (size_t)dirs; i++)
            memcpy(f.names[i], f.names[i - n], sizeof f.names[0]);
        for (size_t i = 0; i < per * (size_t)dirs; i++) {
            const char *nm = f.names[i];
            const int takes_a = !strcmp(nm, "Affine") || !strcmp(nm, "LeakyRelu") ||
                                !strcmp(nm, "ThresholdedRelu") || !strcmp(nm, "ScaledTanh") ||
                                !strcmp(nm, "HardSigmoid") || !strcmp(nm, "Elu");
            const int takes_b =
                !strcmp(nm, "Affine") || !strcmp(nm, "ScaledTanh") || !strcmp(nm, "HardSigmoid");
            f.a[i] = !strcmp(nm, "LeakyRelu") ? 0.01 : !strcmp(nm, "HardSigmoid") ? 0.2 : 1.0;
            f.bt[i] = !strcmp(nm, "HardSigmoid") ? 0.5 : !strcmp(nm, "ScaledTanh") ? 1.0 : 0.0;
            if (takes_a && ua < c->n_alpha)
                f.a[i] = c->alpha[ua++];
            if (takes_b && ub < c->n_beta)
                f.bt[i] = c->beta[ub++];
        }
    }
    f.y = calloc((size_t)seq * state, sizeof *f.y);
    f.yh = calloc(state, sizeof *f.yh);
    f.yc = calloc(state, sizeof *f.yc);
    assert_non_null(f.y);
    reference(&f);
    snprintf(what, sizeof what, "%s %s layout %d %s Y", c->op, c->direction, c->layout,
             c->activations ? c->activations : "");
    assert_values(got[0], c->dtype, f.y, (size_t)seq * state, tol, what);
    what[strlen(what) - 1] = 'h';
    assert_values(got[1], c->dtype, f.yh, state, tol, what);
    if (n_out == 3) {
        what[strlen(what) - 1] = 'c';
        assert_values(got[2], c->dtype, f.yc, state, tol, what);
    }
    for (size_t o = 0; o < n_out; o++)
        ses_tensor_release(got[o]);
    free(f.y);
    free(f.yh);
    free(f.yc);
    free(x);
    free(w);
    free(r);
    free(b);
    free(h0);
    free(c0);
    free(p);
    ses_graph_release(g);
}

/* Every direction, both layouts, each optional input, both GRU forms, coupled LSTM gates, other
 * activations with their alpha and beta, and clip, in f64 and f32. */
static void recurrent_layers_match_a_direct_recursion_in_every_form(void **state) {
    static const rnn_case_t cases[] = {
        {"RNN", "forward", 0, 0, 0, 0, 0, 0, 0, 0, NULL, {0}, {0}, 0, 0, 0, SES_F64},
        {"RNN", "reverse", 1, 1, 1, 1, 0, 0, 0, 0, NULL, {0}, {0}, 0, 0, 0, SES_F64},
        {"RNN",
         "bidirectional",
         0,
         1,
         1,
         1,
         0,
         0,
         0,
         0,
         "Relu,LeakyRelu",
         {0.3},
         {0},
         1,
         0,
         0,
         SES_F32},
        {"GRU", "forward", 0, 1, 1, 1, 0, 0, 0, 0, NULL, {0}, {0}, 0, 0, 0, SES_F64},
        {"GRU", "bidirectional", 1, 1, 1, 1, 0, 0, 1, 0, NULL, {0}, {0}, 0, 0, 0, SES_F64},
        {"GRU",
         "reverse",
         0,
         1,
         1,
         0,
         0,
         0,
         0,
         0,
         "HardSigmoid,ScaledTanh",
         {0.25, 0.9},
         {0.4, 1.2},
         2,
         2,
         1.5,
         SES_F64},
        {"GRU", "bidirectional", 0, 0, 0, 1, 0, 0, 1, 0, NULL, {0}, {0}, 0, 0, 0, SES_F32},
        {"LSTM", "forward", 0, 1, 1, 1, 1, 1, 0, 0, NULL, {0}, {0}, 0, 0, 0, SES_F64},
        {"LSTM", "bidirectional", 1, 1, 1, 1, 1, 1, 0, 0, NULL, {0}, {0}, 0, 0, 0, SES_F64},
        {"LSTM",
         "reverse",
         0,
         1,
         0,
         0,
         1,
         0,
         0,
         1,
         "Sigmoid,Elu,Softsign",
         {0.7},
         {0},
         1,
         0,
         0,
         SES_F64},
        {"LSTM",
         "forward",
         1,
         0,
         1,
         1,
         0,
         1,
         0,
         0,
         "Affine,Softplus,ThresholdedRelu",
         {0.5, 0.1},
         {0.2},
         2,
         1,
         0.8,
         SES_F64},
        {"LSTM", "bidirectional", 0, 1, 1, 1, 1, 1, 0, 0, NULL, {0}, {0}, 0, 0, 0, SES_F32},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_rnn_case(&cases[i]);
}

/* An RNN node over X [4,2,3] with W and R given, and @p attrs; returns Y_h's edge. */
static ses_edge_t small_rnn(ses_graph_t *g, const char *op, int64_t w_rows, ses_dtype_t r_dtype,
                            const ses_attr_t *attrs, size_t n_attrs) {
    const int64_t xd[3] = {4, 2, 3}, wd[3] = {1, w_rows, 3}, rd[3] = {1, w_rows, 4};
    double zeros[64] = {0}; /* R of an LSTM: 16 x 4 */
    float zf[64] = {0};
    ses_edge_t in[3];
    ses_node_t *node = NULL;

    in[0] = constant(g, SES_F32, 3, xd, zf);
    in[1] = constant(g, SES_F32, 3, wd, zf);
    in[2] = constant(g, r_dtype, 3, rd, r_dtype == SES_F64 ? (const void *)zeros : zf);
    assert_int_equal(ses_graph_add_node(g, op, "rnn1", in, 3, attrs, n_attrs, 2, &node), SES_OK);
    return ses_node_output(node, 1);
}

static void recurrent_layers_name_the_input_or_attribute_at_fault(void **state) {
    ses_graph_t *g = NULL;
    ses_attr_t a[2];

    (void)state;
    a[0] = ses_attr_int("hidden_size", 4);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    expect_error(g, small_rnn(g, "GRU", 4, SES_F32, a, 1), SES_INVALID_ARGUMENT,
                 "GRU \"rnn1\": input 1 (W) must be f32[1,12,3], got f32[1,4,3]");
    ses_graph_release(g);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    expect_error(g, small_rnn(g, "RNN", 4, SES_F64, a, 1), SES_INVALID_ARGUMENT,
                 "RNN \"rnn1\": dtypes differ: X is f32[4,2,3], R is f64[1,4,4]");
    ses_graph_release(g);
    a[1] = ses_attr_string("activations", "Tanh,Swish");
    assert_int_equal(ses_graph_create(&g), SES_OK);
    expect_error(g, small_rnn(g, "GRU", 12, SES_F32, a, 2), SES_INVALID_ARGUMENT,
                 "GRU \"rnn1\": attribute activations \"Tanh,Swish\": unknown activation "
                 "\"Swish\"");
    ses_graph_release(g);
    a[1] = ses_attr_string("direction", "sideways");
    assert_int_equal(ses_graph_create(&g), SES_OK);
    expect_error(g, small_rnn(g, "RNN", 4, SES_F32, a, 2), SES_INVALID_ARGUMENT,
                 "RNN \"rnn1\": attribute direction must be \"forward\", \"reverse\" or "
                 "\"bidirectional\"");
    ses_graph_release(g);
    a[1] = ses_attr_float("clip", -1.0);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    expect_error(g, small_rnn(g, "LSTM", 16, SES_F32, a, 2), SES_INVALID_ARGUMENT,
                 "LSTM \"rnn1\": attribute clip is -1; it must be > 0");
    ses_graph_release(g);
}

/* A sequence length past the sequence is found when the kernel reads it. */
static void recurrent_layers_refuse_a_sequence_length_out_of_range(void **state) {
    const int64_t xd[3] = {2, 2, 1}, wd[3] = {1, 1, 1}, ld[1] = {2};
    const float zf[4] = {0};
    const int32_t lens[2] = {1, 3};
    ses_graph_t *g = NULL;
    ses_edge_t in[5];
    ses_node_t *node = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 3, xd, zf);
    in[1] = constant(g, SES_F32, 3, wd, zf);
    in[2] = constant(g, SES_F32, 3, wd, zf);
    in[3] = absent(g);
    in[4] = constant(g, SES_I32, 1, ld, lens);
    assert_int_equal(ses_graph_add_node(g, "RNN", "r", in, 5, NULL, 0, 2, &node), SES_OK);
    expect_error(g, ses_node_output(node, 0), SES_INVALID_ARGUMENT,
                 "sequence_lens[1] is 3; it must be in [0, 2]");
    ses_graph_release(g);
}

/* ---- quantization ------------------------------------------------------------------------ */

/* One node of @p op over @p n inputs, evaluated; returns output @p which. */
static ses_tensor_t *eval_op(ses_graph_t *g, const char *op, const ses_edge_t *in, size_t n,
                             const ses_attr_t *attrs, size_t n_attrs, size_t n_out, size_t which) {
    ses_node_t *node = NULL;
    ses_tensor_t *out[3] = {NULL, NULL, NULL};
    ses_edge_t fetch[3];

    assert_int_equal(ses_graph_add_node(g, op, "q", in, n, attrs, n_attrs, n_out, &node), SES_OK);
    for (size_t o = 0; o < n_out; o++)
        fetch[o] = ses_node_output(node, (uint32_t)o);
    eval_n(g, fetch, n_out, out);
    for (size_t o = 0; o < n_out; o++)
        if (o != which)
            ses_tensor_release(out[o]);
    return out[which];
}

/* Halves round to even, values past the range saturate, NaN gives the zero point. */
static void quantize_linear_rounds_ties_to_even_and_saturates(void **state) {
    const float x[9] = {-1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 300.0f, -300.0f, NAN, 7.49f};
    const int64_t xd[1] = {9};
    const float one = 1.0f, half = 0.5f;
    const uint8_t zp_u8 = 10;
    const int16_t zp_i16 = -3;
    ses_graph_t *g = NULL;
    ses_edge_t in[3];
    ses_tensor_t *y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 1, xd, x);
    in[1] = constant(g, SES_F32, 0, NULL, &one);
    y = eval_op(g, "QuantizeLinear", in, 2, NULL, 0, 1, 0);
    assert_values(y, SES_U8, (const double[]){0, 0, 0, 2, 2, 255, 0, 0, 7}, 9, 0, "u8");
    ses_tensor_release(y);
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 1, xd, x);
    in[1] = constant(g, SES_F32, 0, NULL, &one);
    in[2] = constant(g, SES_U8, 0, NULL, &zp_u8);
    y = eval_op(g, "QuantizeLinear", in, 3, NULL, 0, 1, 0);
    assert_values(y, SES_U8, (const double[]){8, 10, 10, 12, 12, 255, 0, 10, 17}, 9, 0, "u8 zp");
    ses_tensor_release(y);
    ses_graph_release(g);

    /* i8 through output_dtype (op set 21), no zero point. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 1, xd, x);
    in[1] = constant(g, SES_F32, 0, NULL, &one);
    {
        const ses_attr_t a = ses_attr_int("output_dtype", 3);
        y = eval_op(g, "QuantizeLinear", in, 2, &a, 1, 1, 0);
    }
    assert_values(y, SES_I8, (const double[]){-2, 0, 0, 2, 2, 127, -128, 0, 7}, 9, 0, "i8");
    ses_tensor_release(y);
    ses_graph_release(g);

    /* i16, scale 0.5: x / 0.5 - 3. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 1, xd, x);
    in[1] = constant(g, SES_F32, 0, NULL, &half);
    in[2] = constant(g, SES_I16, 0, NULL, &zp_i16);
    y = eval_op(g, "QuantizeLinear", in, 3, NULL, 0, 1, 0);
    assert_values(y, SES_I16, (const double[]){-6, -4, -2, 0, 2, 597, -603, -3, 12}, 9, 0, "i16");
    ses_tensor_release(y);
    ses_graph_release(g);
}

/* Per axis (axis 1 of [2,3,2]) and blocked (op set 21: axis 2 in blocks of 2 of [1,2,5]), both
 * ways. */
static void quantize_and_dequantize_per_axis_and_in_blocks(void **state) {
    const int64_t xd[3] = {2, 3, 2}, sd[1] = {3};
    const float x[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    const float s[3] = {1.0f, 2.0f, 4.0f};
    const uint8_t zp[3] = {0, 1, 2};
    const int64_t bxd[3] = {1, 2, 5}, bsd[3] = {1, 2, 3};
    const float bx[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    const float bs[6] = {1, 2, 4, 0.5f, 1, 8};
    const int8_t bz[6] = {0, 1, -1, 2, 0, -2};
    ses_graph_t *g = NULL;
    ses_edge_t in[3];
    ses_attr_t a[2];
    ses_tensor_t *y;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 3, xd, x);
    in[1] = constant(g, SES_F32, 1, sd, s);
    in[2] = constant(g, SES_U8, 1, sd, zp);
    y = eval_op(g, "QuantizeLinear", in, 3, NULL, 0, 1, 0);
    /* channel 0: x; 1: x/2 + 1 (3/2 = 1.5 -> 2); 2: x/4 + 2 (10/4 = 2.5 -> 2) */
    assert_values(y, SES_U8, (const double[]){0, 1, 2, 3, 3, 3, 6, 7, 5, 5, 4, 5}, 12, 0,
                  "per axis");
    ses_tensor_release(y);
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    {
        const uint8_t q[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
        in[0] = constant(g, SES_U8, 3, xd, q);
    }
    in[1] = constant(g, SES_F32, 1, sd, s);
    in[2] = constant(g, SES_U8, 1, sd, zp);
    y = eval_op(g, "DequantizeLinear", in, 3, NULL, 0, 1, 0);
    assert_values(y, SES_F32, (const double[]){0, 1, 2, 4, 8, 12, 6, 7, 14, 16, 32, 36}, 12, 0,
                  "dequantize per axis");
    ses_tensor_release(y);
    ses_graph_release(g);

    /* Blocks [0,2), [2,4), [4,5) along axis 2; i8 out. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 3, bxd, bx);
    in[1] = constant(g, SES_F32, 3, bsd, bs);
    in[2] = constant(g, SES_I8, 3, bsd, bz);
    a[0] = ses_attr_int("axis", -1);
    a[1] = ses_attr_int("block_size", 2);
    y = eval_op(g, "QuantizeLinear", in, 3, a, 2, 1, 0);
    /* row 0: 1/1+0, 2/1+0, 3/2=1.5->2+1=3, 4/2+1=3, 5/4=1.25->1-1=0;
     * row 1: 6/0.5+2=14, 7/0.5+2=16, 8/1=8, 9, 10/8=1.25->1-2=-1 */
    assert_values(y, SES_I8, (const double[]){1, 2, 3, 3, 0, 14, 16, 8, 9, -1}, 10, 0, "blocked");
    ses_tensor_release(y);
    ses_graph_release(g);

    /* i32 dequantized without a zero point. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    {
        const int32_t q[3] = {-100000, 0, 7};
        const int64_t qd[1] = {3};
        const float sc = 0.25f;
        in[0] = constant(g, SES_I32, 1, qd, q);
        in[1] = constant(g, SES_F32, 0, NULL, &sc);
    }
    y = eval_op(g, "DequantizeLinear", in, 2, NULL, 0, 1, 0);
    assert_values(y, SES_F32, (const double[]){-25000, 0, 1.75}, 3, 0, "i32");
    ses_tensor_release(y);
    ses_graph_release(g);
}

/* ONNX's example: scale (2.34 + 3) / 255 ... and an all-zero input (scale 0, zero point 0). */
static void dynamic_quantize_linear_spans_the_range_with_zero(void **state) {
    const float x[6] = {0, 2, -3, -2.5f, 1.34f, 0.5f}, zeros[2] = {0, 0};
    const int64_t xd[1] = {6}, zd[1] = {2};
    ses_graph_t *g = NULL;
    ses_edge_t in[1], fetch[3];
    ses_node_t *node = NULL;
    ses_tensor_t *out[3];
    const float scale = 5.0f / 255.0f;
    double want[6];

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 1, xd, x);
    assert_int_equal(ses_graph_add_node(g, "DynamicQuantizeLinear", "d", in, 1, NULL, 0, 3, &node),
                     SES_OK);
    for (int o = 0; o < 3; o++)
        fetch[o] = ses_node_output(node, (uint32_t)o);
    eval_n(g, fetch, 3, out);
    for (int i = 0; i < 6; i++)
        want[i] = fmin(255, fmax(0, rint(x[i] / scale) + 153));
    assert_values(out[0], SES_U8, want, 6, 0, "y");
    assert_values(out[1], SES_F32, (const double[]){scale}, 1, 0, "y_scale");
    assert_values(out[2], SES_U8, (const double[]){153}, 1, 0, "y_zero_point");
    for (int o = 0; o < 3; o++)
        ses_tensor_release(out[o]);
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 1, zd, zeros);
    assert_int_equal(ses_graph_add_node(g, "DynamicQuantizeLinear", "d", in, 1, NULL, 0, 3, &node),
                     SES_OK);
    for (int o = 0; o < 3; o++)
        fetch[o] = ses_node_output(node, (uint32_t)o);
    eval_n(g, fetch, 3, out);
    assert_values(out[0], SES_U8, (const double[]){0, 0}, 2, 0, "zeros");
    assert_values(out[1], SES_F32, (const double[]){0}, 1, 0, "zero scale");
    assert_values(out[2], SES_U8, (const double[]){0}, 1, 0, "zero zero point");
    for (int o = 0; o < 3; o++)
        ses_tensor_release(out[o]);
    ses_graph_release(g);
}

/* Batched (A [2,3,4] times B [4,5]), a zero point per row of A and per column of B, i8 and u8;
 * against a direct sum. Then QLinearMatMul of the same with scales. */
static void integer_matmuls_match_a_direct_sum(void **state) {
    const int64_t ad[3] = {2, 3, 4}, bd[2] = {4, 5}, azd[1] = {3}, bzd[1] = {5};
    int8_t a[24];
    uint8_t b[20];
    const int8_t az[3] = {1, -2, 3};
    const uint8_t bz[5] = {128, 0, 255, 7, 100};
    double want[30], wantq[30];
    const float as = 0.02f, bs[5] = {0.1f, 0.05f, 0.2f, 0.01f, 0.03f}, ys = 0.5f;
    const int8_t yz = -5;
    ses_graph_t *g = NULL;
    ses_edge_t in[8];
    ses_tensor_t *y;

    (void)state;
    for (int i = 0; i < 24; i++)
        a[i] = (int8_t)(i * 37 % 256 - 128);
    for (int i = 0; i < 20; i++)
        b[i] = (uint8_t)(i * 53 % 256);
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 5; j++) {
                long acc = 0;
                for (int k = 0; k < 4; k++)
                    acc += (long)(a[(m * 3 + i) * 4 + k] - az[i]) * (long)(b[k * 5 + j] - bz[j]);
                want[(m * 3 + i) * 5 + j] = (double)acc;
                {
                    const float mult = as * bs[j] / ys;
                    wantq[(m * 3 + i) * 5 + j] =
                        fmin(127, fmax(-128, (double)rintf((float)acc * mult) + yz));
                }
            }
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_I8, 3, ad, a);
    in[1] = constant(g, SES_U8, 2, bd, b);
    in[2] = constant(g, SES_I8, 1, azd, az);
    in[3] = constant(g, SES_U8, 1, bzd, bz);
    y = eval_op(g, "MatMulInteger", in, 4, NULL, 0, 1, 0);
    assert_values(y, SES_I32, want, 30, 0, "MatMulInteger");
    ses_tensor_release(y);
    ses_graph_release(g);

    /* b's zero point alone (a's left out by an empty input). */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_I8, 3, ad, a);
    in[1] = constant(g, SES_U8, 2, bd, b);
    in[2] = absent(g);
    in[3] = constant(g, SES_U8, 1, bzd, bz);
    y = eval_op(g, "MatMulInteger", in, 4, NULL, 0, 1, 0);
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 5; j++) {
                long acc = 0;
                for (int k = 0; k < 4; k++)
                    acc += (long)a[(m * 3 + i) * 4 + k] * (long)(b[k * 5 + j] - bz[j]);
                want[(m * 3 + i) * 5 + j] = (double)acc;
            }
    assert_values(y, SES_I32, want, 30, 0, "MatMulInteger without a's zero point");
    ses_tensor_release(y);
    ses_graph_release(g);

    /* a's scale per tensor with its zero point per row: they must have one shape. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_I8, 3, ad, a);
    in[1] = constant(g, SES_F32, 0, NULL, &as);
    in[2] = constant(g, SES_I8, 1, azd, az);
    in[3] = constant(g, SES_U8, 2, bd, b);
    in[4] = constant(g, SES_F32, 1, bzd, bs);
    in[5] = constant(g, SES_U8, 1, bzd, bz);
    in[6] = constant(g, SES_F32, 0, NULL, &ys);
    in[7] = constant(g, SES_I8, 0, NULL, &yz);
    {
        ses_node_t *node = NULL;
        assert_int_equal(ses_graph_add_node(g, "QLinearMatMul", "qm", in, 8, NULL, 0, 1, &node),
                         SES_OK);
        expect_error(g, ses_node_output(node, 0), SES_INVALID_ARGUMENT,
                     "QLinearMatMul \"qm\": a_scale and a_zero_point must have one shape: "
                     "a_scale is f32[], a_zero_point is i8[3]");
    }
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    {
        const float as3[3] = {as, as, as};
        in[0] = constant(g, SES_I8, 3, ad, a);
        in[1] = constant(g, SES_F32, 1, azd, as3);
        in[2] = constant(g, SES_I8, 1, azd, az);
        in[3] = constant(g, SES_U8, 2, bd, b);
        in[4] = constant(g, SES_F32, 1, bzd, bs);
        in[5] = constant(g, SES_U8, 1, bzd, bz);
        in[6] = constant(g, SES_F32, 0, NULL, &ys);
        in[7] = constant(g, SES_I8, 0, NULL, &yz);
    }
    y = eval_op(g, "QLinearMatMul", in, 8, NULL, 0, 1, 0);
    assert_values(y, SES_I8, wantq, 30, 0, "QLinearMatMul");
    ses_tensor_release(y);
    ses_graph_release(g);
}

/* 40000 products of 255 * 255 sum to 2601000000, past int32: the result wraps as int32
 * accumulation does. */
static void matmul_integer_sums_wrap_as_int32(void **state) {
    const int64_t ad[2] = {1, 40000}, bd[2] = {40000, 1};
    uint8_t *ones = malloc(40000);
    ses_graph_t *g = NULL;
    ses_edge_t in[2];
    ses_tensor_t *y;

    (void)state;
    assert_non_null(ones);
    memset(ones, 255, 40000);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_U8, 2, ad, ones);
    in[1] = constant(g, SES_U8, 2, bd, ones);
    y = eval_op(g, "MatMulInteger", in, 2, NULL, 0, 1, 0);
    assert_values(y, SES_I32, (const double[]){2601000000.0 - 4294967296.0}, 1, 0, "wrapped");
    ses_tensor_release(y);
    ses_graph_release(g);
    free(ones);
}

/* x [2,4,5,5] u8, w [6,2,3,3] i8, group 2, stride 2, pads 1 (padding contributes 0 after the
 * zero point), a zero point per filter; then QLinearConv with a bias. */
static void integer_convolutions_match_a_direct_sum(void **state) {
    const int64_t xd[4] = {2, 4, 5, 5}, wd[4] = {6, 2, 3, 3}, md[1] = {6};
    uint8_t x[200];
    int8_t w[108];
    const uint8_t xz = 3;
    const int8_t wz[6] = {0, 1, -1, 2, -2, 5};
    const int32_t bias[6] = {100, -50, 0, 7, 3000, -3000};
    const float xs = 0.05f, ws[6] = {0.01f, 0.02f, 0.03f, 0.01f, 0.02f, 0.05f}, ys = 0.25f;
    const uint8_t yz = 120;
    double want[2 * 6 * 3 * 3], wantq[2 * 6 * 3 * 3];
    const int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {2, 2};
    ses_attr_t a[3];
    ses_graph_t *g = NULL;
    ses_edge_t in[9];
    ses_tensor_t *y;

    (void)state;
    for (int i = 0; i < 200; i++)
        x[i] = (uint8_t)(i * 29 % 256);
    for (int i = 0; i < 108; i++)
        w[i] = (int8_t)(i * 41 % 256 - 128);
    for (int n = 0; n < 2; n++)
        for (int m = 0; m < 6; m++)
            for (int oh = 0; oh < 3; oh++)
                for (int ow = 0; ow < 3; ow++) {
                    long acc = 0;
                    for (int c = 0; c < 2; c++)
                        for (int kh = 0; kh < 3; kh++)
                            for (int kw = 0; kw < 3; kw++) {
                                const int ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
                                const int xc = (m / 3) * 2 + c;
                                if (ih < 0 || ih >= 5 || iw < 0 || iw >= 5)
                                    continue;
                                acc += (long)(x[((n * 4 + xc) * 5 + ih) * 5 + iw] - xz) *
                                       (long)(w[((m * 2 + c) * 3 + kh) * 3 + kw] - wz[m]);
                            }
                    const int at = ((n * 6 + m) * 3 + oh) * 3 + ow;
                    want[at] = (double)acc;
                    {
                        const float mult = xs * ws[m] / ys;
                        wantq[at] =
                            fmin(255, fmax(0, (double)rintf((float)(acc + bias[m]) * mult) + yz));
                    }
                }
    a[0] = ses_attr_int("group", 2);
    a[1] = ses_attr_ints("pads", pads, 4);
    a[2] = ses_attr_ints("strides", strides, 2);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_U8, 4, xd, x);
    in[1] = constant(g, SES_I8, 4, wd, w);
    in[2] = constant(g, SES_U8, 0, NULL, &xz);
    in[3] = constant(g, SES_I8, 1, md, wz);
    y = eval_op(g, "ConvInteger", in, 4, a, 3, 1, 0);
    assert_values(y, SES_I32, want, 108, 0, "ConvInteger");
    ses_tensor_release(y);
    ses_graph_release(g);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_U8, 4, xd, x);
    in[1] = constant(g, SES_F32, 0, NULL, &xs);
    in[2] = constant(g, SES_U8, 0, NULL, &xz);
    in[3] = constant(g, SES_I8, 4, wd, w);
    in[4] = constant(g, SES_F32, 1, md, ws);
    in[5] = constant(g, SES_I8, 1, md, wz);
    in[6] = constant(g, SES_F32, 0, NULL, &ys);
    in[7] = constant(g, SES_U8, 0, NULL, &yz);
    in[8] = constant(g, SES_I32, 1, md, bias);
    y = eval_op(g, "QLinearConv", in, 9, a, 3, 1, 0);
    assert_values(y, SES_U8, wantq, 108, 0, "QLinearConv");
    ses_tensor_release(y);
    ses_graph_release(g);
}

static void quantization_ops_name_the_input_at_fault(void **state) {
    const int64_t xd[2] = {2, 3}, sd[1] = {2}, zd[1] = {3};
    const float x[6] = {0}, s[2] = {1, 1};
    const uint8_t z3[3] = {0};
    const int8_t q[6] = {0};
    ses_graph_t *g = NULL;
    ses_edge_t in[4];
    ses_node_t *node = NULL;

    (void)state;
    /* A per-axis scale that is not along axis 1. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 2, xd, x);
    in[1] = constant(g, SES_F32, 1, sd, s);
    assert_int_equal(ses_graph_add_node(g, "QuantizeLinear", "ql", in, 2, NULL, 0, 1, &node),
                     SES_OK);
    expect_error(g, ses_node_output(node, 0), SES_INVALID_ARGUMENT,
                 "QuantizeLinear \"ql\": y_scale must have one element, or one per entry of axis "
                 "1 (3): input is f32[2,3], y_scale is f32[2]");
    ses_graph_release(g);
    /* Scale and zero point of different shapes. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 2, xd, x);
    in[1] = constant(g, SES_F32, 1, sd, s);
    in[2] = constant(g, SES_U8, 1, zd, z3);
    assert_int_equal(ses_graph_add_node(g, "QuantizeLinear", "ql", in, 3, NULL, 0, 1, &node),
                     SES_OK);
    expect_error(g, ses_node_output(node, 0), SES_INVALID_ARGUMENT,
                 "y_scale and y_zero_point must have one shape: y_scale is f32[2], y_zero_point is "
                 "u8[3]");
    ses_graph_release(g);
    /* A zero point of another dtype than its operand. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_I8, 2, xd, q);
    in[1] = constant(g, SES_I8, 2, (const int64_t[]){3, 2}, q);
    in[2] = constant(g, SES_U8, 0, NULL, z3);
    assert_int_equal(ses_graph_add_node(g, "MatMulInteger", "mm", in, 3, NULL, 0, 1, &node),
                     SES_OK);
    expect_error(g, ses_node_output(node, 0), SES_INVALID_ARGUMENT,
                 "MatMulInteger \"mm\": dtypes differ: A is i8[2,3], a_zero_point is u8[]");
    ses_graph_release(g);
    /* Float inputs to an integer product. */
    assert_int_equal(ses_graph_create(&g), SES_OK);
    in[0] = constant(g, SES_F32, 2, xd, x);
    in[1] = constant(g, SES_F32, 2, (const int64_t[]){3, 2}, x);
    assert_int_equal(ses_graph_add_node(g, "MatMulInteger", "mm", in, 2, NULL, 0, 1, &node),
                     SES_OK);
    expect_error(g, ses_node_output(node, 0), SES_INVALID_ARGUMENT, "MatMulInteger \"mm\": ");
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(recurrent_layers_match_a_direct_recursion_in_every_form),
        cmocka_unit_test(recurrent_layers_name_the_input_or_attribute_at_fault),
        cmocka_unit_test(recurrent_layers_refuse_a_sequence_length_out_of_range),
        cmocka_unit_test(quantize_linear_rounds_ties_to_even_and_saturates),
        cmocka_unit_test(quantize_and_dequantize_per_axis_and_in_blocks),
        cmocka_unit_test(dynamic_quantize_linear_spans_the_range_with_zero),
        cmocka_unit_test(integer_matmuls_match_a_direct_sum),
        cmocka_unit_test(matmul_integer_sums_wrap_as_int32),
        cmocka_unit_test(integer_convolutions_match_a_direct_sum),
        cmocka_unit_test(quantization_ops_name_the_input_at_fault),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
