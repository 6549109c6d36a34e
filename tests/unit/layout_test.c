/*
 * The layout pass (libsession/src/compile/layout.c) on the CPU driver: CNN graphs give the
 * values they give in NCHW, with convolutions and pools on NCHWc16 values and one reorder back
 * per value an NCHW reader needs; fetched values come back in NCHW; ops that need NCHW, a
 * convolution of another channel count or dtype, and gradients read NCHW; the option and
 * SESSION_LAYOUT turn it off, and a bad option value is refused.
 *
 * Where the CPU driver has no NchwcConv (oneDNN missing, or a CPU below AVX-512) the plans stay
 * in NCHW: the values are still checked, and the counts of blocked nodes are checked only where
 * the simplest convolution is blocked.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <session/session.h>
#include <session/train.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double next_uniform(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0; /* [-1, 1) */
}

static ses_tensor_t *random_tensor(ses_dtype_t dtype, size_t rank, const int64_t *dims) {
    ses_tensor_t *t = NULL;
    size_t n = 1;

    for (size_t i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    assert_int_equal(ses_tensor_create(dtype, rank, dims, &t), SES_OK);
    for (size_t i = 0; i < n; i++) {
        if (dtype == SES_F32)
            ((float *)ses_tensor_data(t))[i] = (float)next_uniform();
        else
            ((double *)ses_tensor_data(t))[i] = next_uniform();
    }
    return t;
}

static ses_edge_t constant(ses_graph_t *g, ses_tensor_t *t) {
    ses_edge_t e;
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_edge_t op(ses_graph_t *g, const char *type, const char *name, const ses_edge_t *in,
                     size_t n_in, const ses_attr_t *attrs, size_t n_attrs) {
    ses_edge_t e;
    if (ses_graph_op(g, type, name, in, n_in, attrs, n_attrs, &e) != SES_OK)
        fail_msg("%s %s: %s", type, name, ses_last_error());
    return e;
}

static ses_edge_t unary(ses_graph_t *g, const char *type, const char *name, ses_edge_t x) {
    return op(g, type, name, &x, 1, NULL, 0);
}

static ses_edge_t binary(ses_graph_t *g, const char *type, const char *name, ses_edge_t a,
                         ses_edge_t b) {
    const ses_edge_t in[2] = {a, b};
    return op(g, type, name, in, 2, NULL, 0);
}

static ses_edge_t last_weights; /* of the last conv() */

/* Conv of @p x ([N, C, H, W], dtype @p dtype) to @p m channels, k x k, with a bias, stride and
 * pads @p pad on every side; random weights, whose edge goes to last_weights. */
static ses_edge_t conv(ses_graph_t *g, const char *name, ses_edge_t x, int64_t c, int64_t m,
                       int64_t k, int64_t stride, int64_t pad, ses_dtype_t dtype) {
    const int64_t wd[4] = {m, c, k, k}, bd[1] = {m};
    const int64_t strides[2] = {stride, stride}, pads[4] = {pad, pad, pad, pad};
    const ses_attr_t attrs[2] = {ses_attr_ints("strides", strides, 2),
                                 ses_attr_ints("pads", pads, 4)};
    ses_edge_t in[3] = {x, {NULL, 0}, {NULL, 0}};
    ses_tensor_t *w = random_tensor(dtype, 4, wd);

    /* Weights of about unit gain, so that values stay of order one through the layers. */
    for (size_t i = 0; i < (size_t)(m * c * k * k); i++) {
        if (dtype == SES_F32)
            ((float *)ses_tensor_data(w))[i] /= (float)sqrt((double)(c * k * k));
        else
            ((double *)ses_tensor_data(w))[i] /= sqrt((double)(c * k * k));
    }
    in[1] = last_weights = constant(g, w);
    in[2] = constant(g, random_tensor(dtype, 1, bd));
    return op(g, "Conv", name, in, 3, attrs, 2);
}

static ses_edge_t pool(ses_graph_t *g, const char *type, const char *name, ses_edge_t x, int64_t k,
                       int64_t stride, int64_t pad, int64_t ceil_mode) {
    const int64_t kernel[2] = {k, k}, strides[2] = {stride, stride}, pads[4] = {pad, pad, pad, pad};
    const ses_attr_t attrs[4] = {
        ses_attr_ints("kernel_shape", kernel, 2), ses_attr_ints("strides", strides, 2),
        ses_attr_ints("pads", pads, 4), ses_attr_int("ceil_mode", ceil_mode)};
    return op(g, type, name, &x, 1, attrs, 4);
}

static ses_edge_t concat(ses_graph_t *g, const char *name, ses_edge_t a, ses_edge_t b,
                         int64_t axis) {
    const ses_edge_t in[2] = {a, b};
    const ses_attr_t attr = ses_attr_int("axis", axis);
    return op(g, "Concat", name, in, 2, &attr, 1);
}

typedef struct result {
    ses_tensor_t *values[4];
    size_t blocked, reorders; /* from the placement's "layout:" line; 0 without one */
    size_t steps;
} result_t;

/* Compiles and runs @p fetches of @p g on the CPU with @p layout, feeding x = @p feed. */
static ses_status_t run(ses_graph_t *g, uint32_t layout, const ses_edge_t *fetches,
                        size_t n_fetches, ses_edge_t x, ses_tensor_t *feed, result_t *out) {
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    const char *line;
    ses_status_t st;

    memset(out, 0, sizeof *out);
    ses_session_options_init(&so);
    so.layout = layout;
    so.fallback = SES_FALLBACK_DENY;
    st = ses_session_open(g, NULL, 0, &so, &s);
    if (st != SES_OK)
        return st;
    st = ses_session_compile(s, fetches, n_fetches, &x, 1, NULL, 0, &plan);
    if (st == SES_OK)
        st = ses_plan_run(plan, &feed, 1, out->values);
    if (st == SES_OK) {
        out->steps = ses_plan_step_count(plan);
        line = strstr(ses_plan_placement(plan), "layout: ");
        if (line) {
            const char *comma = strstr(line, "pools), ");
            assert_int_equal(sscanf(line, "layout: %zu", &out->blocked), 1);
            assert_non_null(comma);
            assert_int_equal(sscanf(comma, "pools), %zu reorder", &out->reorders), 1);
        }
    } else {
        printf("# layout %u: %s\n", layout, ses_last_error());
    }
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    return st;
}

static void result_clear(result_t *r) {
    for (size_t i = 0; i < 4; i++)
        ses_tensor_release(r->values[i]);
}

/* Same shape, and |a - b| <= 1e-5 * max(1, |b|) element by element (the blocked kernels may
 * sum in another order). */
static void assert_close(ses_tensor_t *a, ses_tensor_t *b, const char *what) {
    size_t n = ses_tensor_count(b);

    assert_int_equal(ses_tensor_dtype(a), ses_tensor_dtype(b));
    assert_int_equal(ses_tensor_rank(a), ses_tensor_rank(b));
    for (size_t d = 0; d < ses_tensor_rank(b); d++)
        assert_int_equal(ses_tensor_dims(a)[d], ses_tensor_dims(b)[d]);
    for (size_t i = 0; i < n; i++) {
        double x, y;
        if (ses_tensor_dtype(b) == SES_F32) {
            x = ((const float *)ses_tensor_data(a))[i];
            y = ((const float *)ses_tensor_data(b))[i];
        } else {
            x = ((const double *)ses_tensor_data(a))[i];
            y = ((const double *)ses_tensor_data(b))[i];
        }
        if (!(fabs(x - y) <= 1e-5 * fmax(1.0, fabs(y))))
            fail_msg("%s: element %zu is %.9g with the layout, %.9g in NCHW", what, i, x, y);
    }
}

/* Whether the CPU driver runs NchwcConv here: a 16-channel 3x3 convolution is blocked. */
static int driver_blocks(void) {
    const int64_t xd[4] = {1, 16, 8, 8};
    ses_graph_t *g = NULL;
    ses_edge_t x, y;
    ses_tensor_t *feed = random_tensor(SES_F32, 4, xd);
    result_t r;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    y = conv(g, "c", x, 16, 16, 3, 1, 1, SES_F32);
    assert_int_equal(run(g, 1, &y, 1, x, feed, &r), SES_OK);
    result_clear(&r);
    ses_tensor_release(feed);
    ses_graph_release(g);
    if (!r.blocked)
        printf("# the CPU driver has no NchwcConv here: plans stay in NCHW\n");
    return r.blocked != 0;
}

/* Runs @p fetches with the layout and without; the values agree; returns the layout's counts. */
static void check_same(ses_graph_t *g, const ses_edge_t *fetches, size_t n, ses_edge_t x,
                       ses_tensor_t *feed, const char *what, result_t *counts) {
    result_t on, off;

    assert_int_equal(run(g, 1, fetches, n, x, feed, &on), SES_OK);
    assert_int_equal(run(g, 0, fetches, n, x, feed, &off), SES_OK);
    assert_int_equal(off.blocked, 0);
    for (size_t i = 0; i < n; i++)
        assert_close(on.values[i], off.values[i], what);
    *counts = on;
    memset(counts->values, 0, sizeof counts->values);
    result_clear(&on);
    result_clear(&off);
}

/* ---- the tests ---------------------------------------------------------------------------- */

/*
 * x [2,3,20,20] -> conv 16 3x3 -> relu -> maxpool 2 -> conv 32 3x3 s2 -> relu (a) ->
 * conv 32 1x1 + a -> relu (b) -> concat(b, conv 16 1x1 of b) -> averagepool 3 s1 p1 ->
 * globalaveragepool -> flatten -> gemm 10: the convolutions, pools, Add and Concat run blocked,
 * and only Flatten reads NCHW. With fusion on and off (FusedConv, Conv -> Relu unfused).
 */
static void a_cnn_gives_the_nchw_values_with_one_reorder(void **state) {
    const int64_t xd[4] = {2, 3, 20, 20}, wd[2] = {48, 10};
    const int blocks = *(int *)*state;
    ses_graph_t *g = NULL;
    ses_edge_t x, h, a, b, y;
    ses_tensor_t *feed = random_tensor(SES_F32, 4, xd);
    result_t r;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    h = unary(g, "Relu", "r1", conv(g, "c1", x, 3, 16, 3, 1, 1, SES_F32));
    h = pool(g, "MaxPool", "p1", h, 2, 2, 0, 0);
    a = unary(g, "Relu", "r2", conv(g, "c2", h, 16, 32, 3, 2, 1, SES_F32));
    b = unary(g, "Relu", "r3",
              binary(g, "Add", "add", conv(g, "c3", a, 32, 32, 1, 1, 0, SES_F32), a));
    h = concat(g, "cat", b, conv(g, "c4", b, 32, 16, 1, 1, 0, SES_F32), 1);
    {
        const int64_t kernel[2] = {3, 3}, ones[2] = {1, 1}, pads[4] = {1, 1, 1, 1};
        const ses_attr_t attrs[4] = {
            ses_attr_ints("kernel_shape", kernel, 2), ses_attr_ints("strides", ones, 2),
            ses_attr_ints("pads", pads, 4), ses_attr_int("count_include_pad", 0)};
        h = op(g, "AveragePool", "avg", &h, 1, attrs, 4);
    }
    h = unary(g, "GlobalAveragePool", "gap", h);
    h = unary(g, "Flatten", "flat", h);
    {
        ses_edge_t in[2] = {h, constant(g, random_tensor(SES_F32, 2, wd))};
        y = op(g, "Gemm", "fc", in, 2, NULL, 0);
    }
    for (int fusion = 1; fusion >= 0; fusion--) {
        if (!fusion)
            setenv("SESSION_FUSION", "0", 1);
        check_same(g, &y, 1, x, feed, fusion ? "the CNN, fused" : "the CNN, unfused", &r);
        unsetenv("SESSION_FUSION");
        if (blocks) {
            /* c1..c4, the MaxPool (fused: c1 -> r1 -> p1 is one NchwcConv with its pool),
             * the AveragePool, the GlobalAveragePool; one reorder, for Flatten. */
            assert_int_equal(r.blocked, fusion ? 6 : 7);
            assert_int_equal(r.reorders, 1);
        }
    }
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* An intermediate value fetched from the middle of a blocked chain comes back in NCHW, its
 * shape the graph's; so does the last convolution's output. */
static void fetched_values_come_back_in_nchw(void **state) {
    const int64_t xd[4] = {1, 16, 9, 9};
    const int blocks = *(int *)*state;
    ses_graph_t *g = NULL;
    ses_edge_t x, f[3];
    ses_tensor_t *feed = random_tensor(SES_F32, 4, xd);
    result_t r;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    f[0] = unary(g, "Relu", "r1", conv(g, "c1", x, 16, 32, 3, 1, 1, SES_F32));
    f[1] = pool(g, "MaxPool", "p1", f[0], 3, 2, 0, 1); /* ceil_mode: 4x4 */
    f[2] = conv(g, "c2", f[1], 32, 16, 3, 1, 1, SES_F32);
    check_same(g, f, 3, x, feed, "fetched values", &r);
    if (blocks) {
        assert_int_equal(r.blocked, 3);
        assert_int_equal(r.reorders, 3); /* one per fetch; MaxPool reads r1 blocked */
    }
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* Readers that need NCHW get it: Softmax on axis 1, an Add that broadcasts a [C,1,1] bias,
 * Reshape, Transpose, and a Concat on axis 2; one reorder serves all of them. */
static void readers_that_need_nchw_get_it(void **state) {
    const int64_t xd[4] = {2, 16, 6, 6}, bd[3] = {16, 1, 1}, shape[2] = {2, -1};
    const int64_t perm[4] = {0, 2, 3, 1}, sd[1] = {2};
    const int blocks = *(int *)*state;
    ses_graph_t *g = NULL;
    ses_edge_t x, c, f[4];
    ses_tensor_t *feed = random_tensor(SES_F32, 4, xd), *st;
    result_t r;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    c = unary(g, "Relu", "r", conv(g, "c", x, 16, 16, 3, 1, 1, SES_F32));
    {
        const ses_attr_t axis = ses_attr_int("axis", 1);
        f[0] = op(g, "Softmax", "softmax", &c, 1, &axis, 1);
    }
    f[1] = binary(g, "Add", "bias", c, constant(g, random_tensor(SES_F32, 3, bd)));
    assert_int_equal(ses_tensor_create_from(SES_I64, 1, sd, shape, sizeof shape, &st), SES_OK);
    f[2] = binary(g, "Reshape", "reshape", c, constant(g, st));
    {
        const ses_attr_t p = ses_attr_ints("perm", perm, 4);
        f[3] = op(g, "Transpose", "transpose", &c, 1, &p, 1);
    }
    check_same(g, f, 4, x, feed, "NCHW readers", &r);
    if (blocks) {
        assert_int_equal(r.blocked, 1);
        assert_int_equal(r.reorders, 1);
    }
    {
        ses_edge_t h = concat(g, "cat2", c, c, 2);
        check_same(g, &h, 1, x, feed, "Concat on axis 2", &r);
        if (blocks)
            assert_int_equal(r.reorders, 1);
    }
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* A convolution to 10 channels (not a multiple of 16) and an f64 one stay in NCHW, and so does
 * what reads them; the values are the same. */
static void other_channel_counts_and_dtypes_stay_nchw(void **state) {
    const int64_t xd[4] = {1, 16, 7, 7};
    ses_tensor_t *feed;
    ses_graph_t *g = NULL;
    ses_edge_t x, y;
    result_t r;

    (void)state;
    for (int d = 0; d < 2; d++) {
        const ses_dtype_t dtype = d ? SES_F64 : SES_F32;
        feed = random_tensor(dtype, 4, xd);
        assert_int_equal(ses_graph_create(&g), SES_OK);
        assert_int_equal(ses_graph_placeholder(g, "x", dtype, 4, xd, &x), SES_OK);
        y = conv(g, "c", x, 16, d ? 16 : 10, 3, 1, 1, dtype);
        y = pool(g, "MaxPool", "p", unary(g, "Relu", "r", y), 2, 2, 0, 0);
        check_same(g, &y, 1, x, feed, d ? "f64" : "10 channels", &r);
        assert_int_equal(r.blocked, 0);
        assert_int_equal(r.reorders, 0);
        ses_tensor_release(feed);
        ses_graph_release(g);
    }
}

/* Gradients of a blocked CNN: ConvGrad and the pool gradients read NCHW; the weights' gradients
 * are those of the NCHW plan. */
static void gradients_read_nchw(void **state) {
    const int64_t xd[4] = {2, 16, 8, 8};
    ses_graph_t *g = NULL;
    ses_edge_t x, h, loss, w, dw[1];
    ses_tensor_t *feed = random_tensor(SES_F32, 4, xd);
    result_t r;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    h = conv(g, "c1", x, 16, 16, 3, 1, 1, SES_F32);
    w = last_weights;
    h = pool(g, "MaxPool", "p", unary(g, "Relu", "r1", h), 2, 2, 0, 0);
    h = unary(g, "Relu", "r2", conv(g, "c2", h, 16, 32, 3, 1, 1, SES_F32));
    loss = unary(g, "ReduceMean", "loss", unary(g, "GlobalAveragePool", "gap", h));
    assert_int_equal(ses_gradients(g, NULL, &loss, 1, &w, 1, NULL, dw), SES_OK);
    check_same(g, dw, 1, x, feed, "dL/dW of c1", &r);
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* A NchwcConv the user wrote keeps its 5-D output, fetched and read by Relu as the graph says;
 * its values are those of the same Conv in NCHW, reordered. */
static void a_users_nchwc_node_keeps_its_blocked_output(void **state) {
    const int64_t xd[4] = {1, 16, 6, 6}, wd[4] = {16, 16, 3, 3}, pads[4] = {1, 1, 1, 1};
    const int blocks = *(int *)*state;
    const ses_attr_t attr = ses_attr_ints("pads", pads, 4);
    ses_graph_t *g = NULL;
    ses_edge_t x, in[2], f[2], plain;
    ses_tensor_t *feed = random_tensor(SES_F32, 4, xd);
    result_t on, off;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    in[0] = x;
    in[1] = constant(g, random_tensor(SES_F32, 4, wd));
    plain = op(g, "Conv", "plain", in, 2, &attr, 1);
    if (!blocks) {
        printf("# skipped: the CPU driver has no NchwcConv here\n");
    } else {
        f[0] = op(g, "NchwcConv", "mine", in, 2, &attr, 1);
        f[1] = unary(g, "Relu", "relu", f[0]);
        assert_int_equal(run(g, 1, f, 2, x, feed, &on), SES_OK);
        assert_int_equal(run(g, 0, &plain, 1, x, feed, &off), SES_OK);
        for (size_t k = 0; k < 2; k++) {
            ses_tensor_t *t = on.values[k];
            const float *y = ses_tensor_data(t), *ref = ses_tensor_data(off.values[0]);
            assert_int_equal(ses_tensor_rank(t), 5);
            assert_int_equal(ses_tensor_dims(t)[1], 1);
            assert_int_equal(ses_tensor_dims(t)[4], 16);
            for (size_t c = 0; c < 16; c++)
                for (size_t p = 0; p < 36; p++) {
                    const double want = k ? fmax(0.0, ref[c * 36 + p]) : ref[c * 36 + p];
                    if (!(fabs(y[p * 16 + c] - want) <= 1e-5 * fmax(1.0, fabs(want))))
                        fail_msg("output %zu, channel %zu, pixel %zu: %.9g, want %.9g", k, c, p,
                                 y[p * 16 + c], want);
                }
        }
        result_clear(&on);
        result_clear(&off);
    }
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* layout = 0 and SESSION_LAYOUT=0 (or off) keep NCHW; a layout of 2 is refused. */
static void the_option_and_the_environment_turn_it_off(void **state) {
    const int64_t xd[4] = {1, 16, 5, 5};
    const int blocks = *(int *)*state;
    const char *const off[2] = {"0", "off"};
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_graph_t *g = NULL;
    ses_edge_t x, y;
    ses_tensor_t *feed = random_tensor(SES_F32, 4, xd);
    result_t r;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    y = conv(g, "c", x, 16, 16, 3, 1, 1, SES_F32);
    assert_int_equal(run(g, 1, &y, 1, x, feed, &r), SES_OK);
    assert_int_equal(r.blocked, blocks ? 1 : 0);
    result_clear(&r);
    assert_int_equal(run(g, 0, &y, 1, x, feed, &r), SES_OK);
    assert_int_equal(r.blocked, 0);
    result_clear(&r);
    for (size_t i = 0; i < 2; i++) {
        setenv("SESSION_LAYOUT", off[i], 1);
        assert_int_equal(run(g, 1, &y, 1, x, feed, &r), SES_OK);
        unsetenv("SESSION_LAYOUT");
        assert_int_equal(r.blocked, 0);
        result_clear(&r);
    }
    ses_session_options_init(&so);
    so.layout = 2;
    assert_int_equal(ses_session_open(g, NULL, 0, &so, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "layout is 2; use 1 or 0"));
    assert_null(s);
    ses_tensor_release(feed);
    ses_graph_release(g);
}

static int setup(void **state) {
    static int blocks;
    blocks = driver_blocks();
    *state = &blocks;
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_cnn_gives_the_nchw_values_with_one_reorder),
        cmocka_unit_test(fetched_values_come_back_in_nchw),
        cmocka_unit_test(readers_that_need_nchw_get_it),
        cmocka_unit_test(other_channel_counts_and_dtypes_stay_nchw),
        cmocka_unit_test(gradients_read_nchw),
        cmocka_unit_test(a_users_nchwc_node_keeps_its_blocked_output),
        cmocka_unit_test(the_option_and_the_environment_turn_it_off),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
