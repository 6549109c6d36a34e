/*
 * Fusion (libsession/src/compile/fuse.c): chains Conv -> [Add ->] activation and Gemm ->
 * activation run as one FusedConv or FusedGemm step where the device's driver has the kernel,
 * with the values of the unfused plan; chains whose intermediate has another reader or is
 * fetched stay as they are; a device without the fused kernels keeps the user's nodes. Also the
 * fused ops built by hand, as ONNX Runtime's contrib ops, and their attribute errors.
 *
 * A trailing MaxPool (Conv -> [Add ->] act -> MaxPool) joins the chain as a pooled node, only
 * ever compiled as NchwcConv with pool_ attributes: the candidates are checked through the
 * internal archive (ses__fuse_find), the plan's values and placement with the CPU driver
 * refusing the fused pool for now (the chain without it runs, then the MaxPool), and the
 * inference of NchwcConv with pool_ attributes, which a user may also write.
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

#include <session/registry.h>
#include <session/session.h>
#include <session/train.h>

#include "compile/plan.h"
#include "ops/op_schema.h"

/* The CPU driver and, where the build has it, the OpenCL driver (OPENCL_MANIFEST). */
static ses_registry_t *registry;

/* ---- helpers ------------------------------------------------------------------------------ */

static uint64_t rng_state = 88172645463325252ull;

static double next_uniform(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0; /* [-1, 1) */
}

/* A tensor of @p dtype with uniform values in [-1, 1). */
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

static ses_edge_t constant(ses_graph_t *g, const char *name, ses_tensor_t *t) {
    ses_edge_t e;
    assert_int_equal(ses_graph_constant(g, name, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_edge_t scalar(ses_graph_t *g, const char *name, ses_dtype_t dtype, double v) {
    ses_tensor_t *t = NULL;
    assert_int_equal(ses_tensor_create(dtype, 0, NULL, &t), SES_OK);
    if (dtype == SES_F32)
        *(float *)ses_tensor_data(t) = (float)v;
    else
        *(double *)ses_tensor_data(t) = v;
    return constant(g, name, t);
}

static ses_edge_t op(ses_graph_t *g, const char *type, const char *name, const ses_edge_t *in,
                     size_t n_in, const ses_attr_t *attrs, size_t n_attrs) {
    ses_edge_t e;
    ses_status_t st = ses_graph_op(g, type, name, in, n_in, attrs, n_attrs, &e);
    if (st != SES_OK)
        fail_msg("%s %s: %s", type, name, ses_last_error());
    return e;
}

/* Appends activation @p act ("Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "ClipMin") named
 * @p name to @p x. */
static ses_edge_t activation(ses_graph_t *g, const char *act, const char *name, ses_edge_t x,
                             ses_dtype_t dtype) {
    char bound[64];
    if (!strcmp(act, "LeakyRelu")) {
        ses_attr_t alpha = ses_attr_float("alpha", 0.2);
        return op(g, act, name, &x, 1, &alpha, 1);
    }
    if (!strcmp(act, "Clip") || !strcmp(act, "ClipMin")) {
        ses_edge_t in[3] = {x, {NULL, 0}, {NULL, 0}};
        snprintf(bound, sizeof bound, "%s/min", name);
        in[1] = scalar(g, bound, dtype, -0.5);
        if (!strcmp(act, "ClipMin"))
            return op(g, "Clip", name, in, 2, NULL, 0);
        snprintf(bound, sizeof bound, "%s/max", name);
        in[2] = scalar(g, bound, dtype, 0.25);
        return op(g, "Clip", name, in, 3, NULL, 0);
    }
    return op(g, act, name, &x, 1, NULL, 0);
}

typedef struct result {
    ses_tensor_t *values[4];
    size_t steps;
    const char *devices[4]; /* of the nodes asked for */
} result_t;

/*
 * Compiles and runs @p fetches of @p g on @p device (NULL: the CPU) with fusion on or off, feeding
 * @p fed with @p feeds; @p nodes (up to 4) get their device in out->devices.
 */
static ses_status_t run(ses_graph_t *g, const char *device, uint32_t fusion,
                        const ses_edge_t *fetches, size_t n_fetches, const ses_edge_t *fed,
                        ses_tensor_t *const *feeds, size_t n_fed, ses_node_t *const *nodes,
                        size_t n_nodes, result_t *out) {
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_status_t st;

    memset(out, 0, sizeof *out);
    ses_session_options_init(&so);
    so.fusion = fusion;
    so.layout = 0; /* steps counted here are fusion's alone (layout_test.c counts the reorders) */
    so.fallback = SES_FALLBACK_DENY;
    so.registry = registry;
    st = ses_session_open(g, device ? &device : NULL, device ? 1 : 0, &so, &s);
    if (st != SES_OK) {
        printf("# %s: %s\n", device ? device : "cpu", ses_last_error());
        return st;
    }
    st = ses_session_compile(s, fetches, n_fetches, fed, n_fed, NULL, 0, &plan);
    if (st == SES_OK)
        st = ses_plan_run(plan, feeds, n_fed, out->values);
    if (st == SES_OK) {
        out->steps = ses_plan_step_count(plan);
        for (size_t i = 0; i < n_nodes; i++)
            out->devices[i] = ses_plan_node_device(plan, nodes[i]);
        /* Copied: the plan's strings go with the session. */
        for (size_t i = 0; i < n_nodes; i++)
            out->devices[i] = out->devices[i] && !strncmp(out->devices[i], "opencl", 6) ? "opencl"
                              : out->devices[i]                                         ? "cpu"
                                                                                        : NULL;
    }
    if (st != SES_OK)
        printf("# %s (fusion %u): %s\n", device ? device : "cpu", fusion, ses_last_error());
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    return st;
}

static void result_clear(result_t *r) {
    for (size_t i = 0; i < 4; i++)
        ses_tensor_release(r->values[i]);
}

/* |a - b| <= 1e-6 * max(1, |b|) element by element, with both values in the message. */
static void assert_close(ses_tensor_t *a, ses_tensor_t *b, const char *what) {
    size_t n = ses_tensor_count(b);

    assert_int_equal(ses_tensor_dtype(a), ses_tensor_dtype(b));
    assert_int_equal(ses_tensor_count(a), n);
    for (size_t i = 0; i < n; i++) {
        double x, y;
        if (ses_tensor_dtype(b) == SES_F32) {
            x = ((const float *)ses_tensor_data(a))[i];
            y = ((const float *)ses_tensor_data(b))[i];
        } else {
            x = ((const double *)ses_tensor_data(a))[i];
            y = ((const double *)ses_tensor_data(b))[i];
        }
        if (!(fabs(x - y) <= 1e-6 * fmax(1.0, fabs(y))))
            fail_msg("%s: element %zu is %.9g fused, %.9g unfused", what, i, x, y);
    }
}

static const char *const acts[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "ClipMin"};
static const ses_dtype_t dtypes[] = {SES_F32, SES_F64};

/* Runs fetch @p y of @p g fused and unfused, checks the values agree and that fusion saved
 * @p saved steps. */
static void check_fused(ses_graph_t *g, ses_edge_t y, const ses_edge_t *fed,
                        ses_tensor_t *const *feeds, size_t n_fed, size_t saved, const char *what) {
    result_t on, off;

    assert_int_equal(run(g, NULL, 1, &y, 1, fed, feeds, n_fed, NULL, 0, &on), SES_OK);
    assert_int_equal(run(g, NULL, 0, &y, 1, fed, feeds, n_fed, NULL, 0, &off), SES_OK);
    assert_close(on.values[0], off.values[0], what);
    if (on.steps + saved != off.steps)
        fail_msg("%s: %zu steps fused, %zu unfused; expected %zu fewer", what, on.steps, off.steps,
                 saved);
    result_clear(&on);
    result_clear(&off);
}

/* ---- the patterns ------------------------------------------------------------------------- */

/* Conv (with and without B, strided and padded) -> each activation, f32 and f64. */
static void conv_then_each_activation_fuses_with_the_unfused_values(void **state) {
    (void)state;
    for (size_t d = 0; d < 2; d++)
        for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
            for (int bias = 0; bias < 2; bias++) {
                const int64_t xd[4] = {2, 3, 9, 9}, wd[4] = {8, 3, 3, 3}, bd[1] = {8};
                const int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {2, 2};
                ses_attr_t attrs[2] = {ses_attr_ints("pads", pads, 4),
                                       ses_attr_ints("strides", strides, 2)};
                ses_graph_t *g = NULL;
                ses_edge_t x, in[3], y;
                ses_tensor_t *feed = random_tensor(dtypes[d], 4, xd);
                char what[128];

                assert_int_equal(ses_graph_create(&g), SES_OK);
                assert_int_equal(ses_graph_placeholder(g, "x", dtypes[d], 4, xd, &x), SES_OK);
                in[0] = x;
                in[1] = constant(g, "w", random_tensor(dtypes[d], 4, wd));
                if (bias)
                    in[2] = constant(g, "b", random_tensor(dtypes[d], 1, bd));
                y = op(g, "Conv", "conv1", in, bias ? 3 : 2, attrs, 2);
                y = activation(g, acts[a], "act1", y, dtypes[d]);
                snprintf(what, sizeof what, "Conv%s -> %s in %s", bias ? " with B" : "", acts[a],
                         ses_dtype_name(dtypes[d]));
                check_fused(g, y, &x, &feed, 1, 1, what);
                ses_tensor_release(feed);
                ses_graph_release(g);
            }
}

/* Conv -> Add(other) -> act, with other on either side, from a placeholder or another Conv,
 * with and without B (an empty constant stands for B). */
static void conv_add_activation_fuses_with_either_operand_and_no_bias(void **state) {
    (void)state;
    for (size_t d = 0; d < 2; d++)
        for (int variant = 0; variant < 4; variant++) {
            const int64_t xd[4] = {2, 4, 6, 6}, wd[4] = {4, 4, 3, 3}, bd[1] = {4};
            const int64_t pads[4] = {1, 1, 1, 1};
            ses_attr_t attrs[1] = {ses_attr_ints("pads", pads, 4)};
            const int bias = variant & 1, left = variant & 2;
            ses_graph_t *g = NULL;
            ses_edge_t x, in[3], conv, other, sum, y;
            ses_tensor_t *feed = random_tensor(dtypes[d], 4, xd);
            char what[128];

            assert_int_equal(ses_graph_create(&g), SES_OK);
            assert_int_equal(ses_graph_placeholder(g, "x", dtypes[d], 4, xd, &x), SES_OK);
            /* other: a residual branch, Conv(x) + x's identity, computed before conv2. */
            in[0] = x;
            in[1] = constant(g, "w1", random_tensor(dtypes[d], 4, wd));
            other = op(g, "Conv", "conv1", in, 2, attrs, 1);
            other = op(g, "Relu", "relu1", &other, 1, NULL, 0);
            in[0] = other;
            in[1] = constant(g, "w2", random_tensor(dtypes[d], 4, wd));
            if (bias)
                in[2] = constant(g, "b2", random_tensor(dtypes[d], 1, bd));
            conv = op(g, "Conv", "conv2", in, bias ? 3 : 2, attrs, 1);
            in[0] = left ? conv : x;
            in[1] = left ? x : conv;
            sum = op(g, "Add", "add2", in, 2, NULL, 0);
            y = activation(g, d ? "Relu" : "Clip", "relu2", sum, dtypes[d]);
            snprintf(what, sizeof what, "Conv%s -> Add(%s) -> act in %s", bias ? " with B" : "",
                     left ? "conv, x" : "x, conv", ses_dtype_name(dtypes[d]));
            /* conv1 + relu1 fuse (1 step saved), conv2 + add2 + relu2 too (2 saved). */
            check_fused(g, y, &x, &feed, 1, 3, what);
            ses_tensor_release(feed);
            ses_graph_release(g);
        }
}

/* An Add whose other operand broadcasts (a [C,1,1] tensor) is not Z: unfused, same values. */
static void conv_add_of_a_broadcast_operand_is_not_fused_into_z(void **state) {
    const int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, od[3] = {3, 1, 1};
    ses_graph_t *g = NULL;
    ses_edge_t x, in[2], y;
    ses_tensor_t *feed = random_tensor(SES_F32, 4, xd);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    in[0] = x;
    in[1] = constant(g, "w", random_tensor(SES_F32, 4, wd));
    y = op(g, "Conv", "conv", in, 2, NULL, 0);
    in[0] = y;
    in[1] = constant(g, "o", random_tensor(SES_F32, 3, od));
    y = op(g, "Add", "add", in, 2, NULL, 0);
    y = op(g, "Relu", "relu", &y, 1, NULL, 0);
    check_fused(g, y, &x, &feed, 1, 0, "Conv -> Add(broadcast) -> Relu");
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* Gemm (with and without C, transposed B, alpha and beta) -> each activation, f32 and f64. */
static void gemm_then_each_activation_fuses_with_the_unfused_values(void **state) {
    (void)state;
    for (size_t d = 0; d < 2; d++)
        for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
            for (int with_c = 0; with_c < 2; with_c++) {
                const int64_t xd[2] = {33, 20}, wd[2] = {17, 20}, cd[1] = {17};
                ses_attr_t attrs[3] = {ses_attr_int("transB", 1), ses_attr_float("alpha", 0.5),
                                       ses_attr_float("beta", 2.0)};
                ses_graph_t *g = NULL;
                ses_edge_t x, in[3], y;
                ses_tensor_t *feed = random_tensor(dtypes[d], 2, xd);
                char what[128];

                assert_int_equal(ses_graph_create(&g), SES_OK);
                assert_int_equal(ses_graph_placeholder(g, "x", dtypes[d], 2, xd, &x), SES_OK);
                in[0] = x;
                in[1] = constant(g, "w", random_tensor(dtypes[d], 2, wd));
                if (with_c)
                    in[2] = constant(g, "c", random_tensor(dtypes[d], 1, cd));
                y = op(g, "Gemm", "fc1", in, with_c ? 3 : 2, attrs, 3);
                y = activation(g, acts[a], "act1", y, dtypes[d]);
                snprintf(what, sizeof what, "Gemm%s -> %s in %s", with_c ? " with C" : "", acts[a],
                         ses_dtype_name(dtypes[d]));
                check_fused(g, y, &x, &feed, 1, 1, what);
                ses_tensor_release(feed);
                ses_graph_release(g);
            }
}

/* MatMul -> Add(bias, either side) -> act becomes FusedGemm(A, B, bias); a batched MatMul
 * (rank 3) stays as it is, with the same values. */
static void matmul_add_bias_activation_fuses_as_gemm_and_batched_does_not(void **state) {
    (void)state;
    for (size_t d = 0; d < 2; d++)
        for (int variant = 0; variant < 3; variant++) {
            const int64_t xd2[2] = {16, 12}, xd3[3] = {2, 8, 12}, wd[2] = {12, 7}, bd[1] = {7};
            const int batched = variant == 2, left = variant == 1;
            ses_graph_t *g = NULL;
            ses_edge_t x, in[2], y;
            ses_tensor_t *feed = random_tensor(dtypes[d], batched ? 3 : 2, batched ? xd3 : xd2);
            char what[128];

            assert_int_equal(ses_graph_create(&g), SES_OK);
            assert_int_equal(
                ses_graph_placeholder(g, "x", dtypes[d], batched ? 3 : 2, batched ? xd3 : xd2, &x),
                SES_OK);
            in[0] = x;
            in[1] = constant(g, "w", random_tensor(dtypes[d], 2, wd));
            y = op(g, "MatMul", "mm", in, 2, NULL, 0);
            in[left ? 1 : 0] = y;
            in[left ? 0 : 1] = constant(g, "b", random_tensor(dtypes[d], 1, bd));
            y = op(g, "Add", "bias", in, 2, NULL, 0);
            y = op(g, d ? "Tanh" : "Relu", "act", &y, 1, NULL, 0);
            snprintf(what, sizeof what, "%sMatMul -> Add(%s) -> act in %s",
                     batched ? "batched " : "", left ? "b, mm" : "mm, b",
                     ses_dtype_name(dtypes[d]));
            check_fused(g, y, &x, &feed, 1, batched ? 0 : 2, what);
            ses_tensor_release(feed);
            ses_graph_release(g);
        }
}

/* ---- what is not fused --------------------------------------------------------------------- */

/* Gemm's output read by Relu and by an Add: both kept, the same steps as unfused. */
static void an_intermediate_with_two_readers_is_not_fused(void **state) {
    const int64_t xd[2] = {4, 6}, wd[2] = {6, 5};
    ses_graph_t *g = NULL;
    ses_edge_t x, in[2], h, r, y;
    ses_tensor_t *feed = random_tensor(SES_F32, 2, xd);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 2, xd, &x), SES_OK);
    in[0] = x;
    in[1] = constant(g, "w", random_tensor(SES_F32, 2, wd));
    h = op(g, "Gemm", "fc", in, 2, NULL, 0);
    r = op(g, "Relu", "relu", &h, 1, NULL, 0);
    in[0] = r;
    in[1] = h;
    y = op(g, "Add", "add", in, 2, NULL, 0);
    check_fused(g, y, &x, &feed, 1, 0, "Gemm read by Relu and Add");
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* Fetching Conv's output too keeps Conv and Relu apart, and both values are right. */
static void a_fetched_intermediate_is_not_fused_and_is_fetched(void **state) {
    const int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3};
    ses_graph_t *g = NULL;
    ses_edge_t x, in[2], fetches[2];
    ses_tensor_t *feed = random_tensor(SES_F32, 4, xd);
    result_t on, off;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    in[0] = x;
    in[1] = constant(g, "w", random_tensor(SES_F32, 4, wd));
    fetches[0] = op(g, "Conv", "conv", in, 2, NULL, 0);
    fetches[1] = op(g, "Relu", "relu", &fetches[0], 1, NULL, 0);
    assert_int_equal(run(g, NULL, 1, fetches, 2, &x, &feed, 1, NULL, 0, &on), SES_OK);
    assert_int_equal(run(g, NULL, 0, fetches, 2, &x, &feed, 1, NULL, 0, &off), SES_OK);
    assert_int_equal(on.steps, off.steps);
    assert_close(on.values[0], off.values[0], "the fetched Conv output");
    assert_close(on.values[1], off.values[1], "the Relu");
    for (size_t i = 0; i < ses_tensor_count(on.values[1]); i++) {
        float c = ((const float *)ses_tensor_data(on.values[0]))[i];
        assert_float_equal(((const float *)ses_tensor_data(on.values[1]))[i], c > 0 ? c : 0, 0);
    }
    result_clear(&on);
    result_clear(&off);
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* A fused plan still answers for the user's nodes: each member placed on the CPU. */
static void placement_still_names_the_users_nodes(void **state) {
    const int64_t xd[2] = {4, 6}, wd[2] = {6, 5};
    ses_graph_t *g = NULL;
    ses_edge_t x, in[2], h, y;
    ses_tensor_t *feed = random_tensor(SES_F32, 2, xd);
    ses_node_t *nodes[2];
    result_t on;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 2, xd, &x), SES_OK);
    in[0] = x;
    in[1] = constant(g, "w", random_tensor(SES_F32, 2, wd));
    h = op(g, "Gemm", "fc", in, 2, NULL, 0);
    y = op(g, "Sigmoid", "sig", &h, 1, NULL, 0);
    nodes[0] = h.node;
    nodes[1] = y.node;
    assert_int_equal(run(g, NULL, 1, &y, 1, &x, &feed, 1, nodes, 2, &on), SES_OK);
    assert_int_equal(on.steps, 1);
    assert_string_equal(on.devices[0], "cpu");
    assert_string_equal(on.devices[1], "cpu");
    result_clear(&on);
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* SESSION_FUSION=0 turns fusion off whatever the options say. */
static void session_fusion_0_in_the_environment_turns_fusion_off(void **state) {
    const int64_t xd[2] = {4, 6}, wd[2] = {6, 5};
    ses_graph_t *g = NULL;
    ses_edge_t x, in[2], y;
    ses_tensor_t *feed = random_tensor(SES_F32, 2, xd);
    result_t on;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 2, xd, &x), SES_OK);
    in[0] = x;
    in[1] = constant(g, "w", random_tensor(SES_F32, 2, wd));
    y = op(g, "Gemm", "fc", in, 2, NULL, 0);
    y = op(g, "Relu", "relu", &y, 1, NULL, 0);
    setenv("SESSION_FUSION", "0", 1);
    assert_int_equal(run(g, NULL, 1, &y, 1, &x, &feed, 1, NULL, 0, &on), SES_OK);
    unsetenv("SESSION_FUSION");
    assert_int_equal(on.steps, 2);
    result_clear(&on);
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* On the OpenCL driver (PoCL), which has Gemm, Conv and Relu but no fused kernels, the chains
 * stay unfused there, on the device, with the CPU's values. */
static void a_device_without_fused_kernels_keeps_the_unfused_nodes(void **state) {
    const int64_t xd[4] = {1, 2, 6, 6}, wd[4] = {3, 2, 3, 3}, gd[2] = {48, 4};
    const int64_t shape_v[2] = {1, 48};
    ses_graph_t *g = NULL;
    ses_edge_t x, in[2], c, r, y;
    ses_tensor_t *feed = random_tensor(SES_F32, 4, xd), *shape = NULL;
    ses_node_t *nodes[4];
    result_t ocl, cpu;
    ses_status_t st;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    in[0] = x;
    in[1] = constant(g, "w", random_tensor(SES_F32, 4, wd));
    c = op(g, "Conv", "conv", in, 2, NULL, 0);
    r = op(g, "Relu", "relu", &c, 1, NULL, 0);
    assert_int_equal(
        ses_tensor_create_from(SES_I64, 1, (const int64_t[]){2}, shape_v, sizeof shape_v, &shape),
        SES_OK);
    in[0] = r;
    in[1] = constant(g, "shape", shape);
    in[0] = op(g, "Reshape", "flat", in, 2, NULL, 0);
    in[1] = constant(g, "fcw", random_tensor(SES_F32, 2, gd));
    y = op(g, "Gemm", "fc", in, 2, NULL, 0);
    y = op(g, "Tanh", "tanh", &y, 1, NULL, 0);
    nodes[0] = c.node;
    nodes[1] = r.node;
    nodes[2] = y.node;
    st = run(g, "opencl:0", 1, &y, 1, &x, &feed, 1, nodes, 3, &ocl);
    if (st == SES_NOT_FOUND || st == SES_UNAVAILABLE) {
        ses_tensor_release(feed);
        ses_graph_release(g);
        skip(); /* no OpenCL driver or device here */
    }
    assert_int_equal(st, SES_OK);
    assert_string_equal(ocl.devices[0], "opencl");
    assert_string_equal(ocl.devices[1], "opencl");
    assert_string_equal(ocl.devices[2], "opencl");
    assert_int_equal(run(g, NULL, 1, &y, 1, &x, &feed, 1, NULL, 0, &cpu), SES_OK);
    for (size_t i = 0; i < ses_tensor_count(cpu.values[0]); i++)
        assert_float_equal(((const float *)ses_tensor_data(ocl.values[0]))[i],
                           ((const float *)ses_tensor_data(cpu.values[0]))[i], 1e-4);
    result_clear(&ocl);
    result_clear(&cpu);
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* A training step's gradients: the forward activations have several readers (the gradient
 * reads them), so what fuses leaves every gradient as it was. */
static void gradients_are_the_same_with_fusion_on_and_off(void **state) {
    const int64_t xd[4] = {2, 2, 6, 6}, wd[4] = {3, 2, 3, 3}, bd[1] = {3}, fd[2] = {48, 4};
    const int64_t fc_c[1] = {4}, shape_v[2] = {2, 48};
    ses_graph_t *g = NULL;
    ses_edge_t x, in[3], h, loss, vars[5], grads[5], inits[5];
    ses_tensor_t *feed = random_tensor(SES_F32, 4, xd), *shape = NULL;
    result_t on, off;
    const char *names[5] = {"w", "b", "fw", "fb", "fw2"};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    inits[0] = constant(g, "w0", random_tensor(SES_F32, 4, wd));
    inits[1] = constant(g, "b0", random_tensor(SES_F32, 1, bd));
    inits[2] = constant(g, "fw0", random_tensor(SES_F32, 2, fd));
    inits[3] = constant(g, "fb0", random_tensor(SES_F32, 1, fc_c));
    {
        const int64_t d2[2] = {4, 4};
        inits[4] = constant(g, "fw20", random_tensor(SES_F32, 2, d2));
    }
    for (int i = 0; i < 5; i++)
        assert_int_equal(ses_graph_variable(g, names[i], inits[i], &vars[i]), SES_OK);
    in[0] = x;
    in[1] = vars[0];
    in[2] = vars[1];
    h = op(g, "Conv", "conv", in, 3, NULL, 0);
    h = op(g, "Relu", "relu", &h, 1, NULL, 0);
    assert_int_equal(
        ses_tensor_create_from(SES_I64, 1, (const int64_t[]){2}, shape_v, sizeof shape_v, &shape),
        SES_OK);
    in[0] = h;
    in[1] = constant(g, "shape", shape);
    in[0] = op(g, "Reshape", "flat", in, 2, NULL, 0);
    in[1] = vars[2];
    in[2] = vars[3];
    h = op(g, "Gemm", "fc", in, 3, NULL, 0);
    h = op(g, "Sigmoid", "sig", &h, 1, NULL, 0);
    in[0] = h;
    in[1] = vars[4];
    h = op(g, "Gemm", "fc2", in, 2, NULL, 0);
    h = op(g, "Tanh", "tanh", &h, 1, NULL, 0);
    loss = op(g, "ReduceSum", "loss", &h, 1, (ses_attr_t[]){ses_attr_int("keepdims", 0)}, 1);
    assert_int_equal(ses_gradients(g, NULL, &loss, 1, vars, 5, NULL, grads), SES_OK);
    {
        ses_edge_t fetches[5];
        memcpy(fetches, grads, sizeof fetches);
        /* run() fetches up to 4: the first four gradients, then the last with the loss. */
        assert_int_equal(run(g, NULL, 1, fetches, 4, &x, &feed, 1, NULL, 0, &on), SES_OK);
        assert_int_equal(run(g, NULL, 0, fetches, 4, &x, &feed, 1, NULL, 0, &off), SES_OK);
        for (int i = 0; i < 4; i++)
            assert_close(on.values[i], off.values[i], names[i]);
        result_clear(&on);
        result_clear(&off);
        fetches[0] = grads[4];
        fetches[1] = loss;
        assert_int_equal(run(g, NULL, 1, fetches, 2, &x, &feed, 1, NULL, 0, &on), SES_OK);
        assert_int_equal(run(g, NULL, 0, fetches, 2, &x, &feed, 1, NULL, 0, &off), SES_OK);
        assert_close(on.values[0], off.values[0], names[4]);
        assert_close(on.values[1], off.values[1], "loss");
        result_clear(&on);
        result_clear(&off);
    }
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* ---- the fused ops by hand ---------------------------------------------------------------- */

/* FusedConv(X, W, B, Z) and FusedGemm built by the user give activation(op + Z). */
static void fused_ops_built_by_hand_give_the_composite_values(void **state) {
    const int64_t xd[4] = {2, 3, 5, 5}, wd[4] = {4, 3, 3, 3}, bd[1] = {4}, zd[4] = {2, 4, 3, 3};
    const double clip[2] = {-0.5, 0.5};
    ses_attr_t attrs[2] = {ses_attr_string("activation", "Clip"),
                           ses_attr_floats("activation_params", clip, 2)};
    ses_graph_t *g = NULL;
    ses_edge_t x, in[4], fused, composite;
    ses_tensor_t *feed = random_tensor(SES_F64, 4, xd);
    result_t r;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F64, 4, xd, &x), SES_OK);
    in[0] = x;
    in[1] = constant(g, "w", random_tensor(SES_F64, 4, wd));
    in[2] = constant(g, "b", random_tensor(SES_F64, 1, bd));
    in[3] = constant(g, "z", random_tensor(SES_F64, 4, zd));
    fused = op(g, "FusedConv", "fconv", in, 4, attrs, 2);
    composite = op(g, "Conv", "conv", in, 3, NULL, 0);
    {
        ses_edge_t add_in[2] = {composite, in[3]};
        composite = op(g, "Add", "add", add_in, 2, NULL, 0);
    }
    {
        ses_edge_t clip_in[3] = {composite, scalar(g, "lo", SES_F64, -0.5),
                                 scalar(g, "hi", SES_F64, 0.5)};
        composite = op(g, "Clip", "clip", clip_in, 3, NULL, 0);
    }
    {
        ses_edge_t fetches[2] = {fused, composite};
        assert_int_equal(run(g, NULL, 0, fetches, 2, &x, &feed, 1, NULL, 0, &r), SES_OK);
        assert_close(r.values[0], r.values[1], "FusedConv by hand");
        result_clear(&r);
    }
    ses_tensor_release(feed);
    ses_graph_release(g);
}

/* An unknown activation or a wrong count of parameters fails naming the node and the rule. */
static void bad_fused_attributes_fail_naming_the_node(void **state) {
    const int64_t ad[2] = {3, 4}, bd[2] = {4, 5};
    const double two[2] = {1.0, 2.0};
    static const struct {
        const char *activation;
        size_t n_params;
        const char *want;
    } cases[] = {
        {"Gelu", 0, "attribute activation is \"Gelu\""},
        {"LeakyRelu", 2, "activation LeakyRelu takes 0 or 1"},
        {"Clip", 1, "activation Clip takes 2 (min, max)"},
        {"Relu", 1, "activation Relu takes none"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ses_attr_t attrs[2] = {ses_attr_string("activation", cases[i].activation),
                               ses_attr_floats("activation_params", two, cases[i].n_params)};
        ses_graph_t *g = NULL;
        ses_edge_t in[2], y;
        result_t r;

        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = constant(g, "a", random_tensor(SES_F32, 2, ad));
        in[1] = constant(g, "b", random_tensor(SES_F32, 2, bd));
        y = op(g, "FusedGemm", "my_fc", in, 2, attrs, cases[i].n_params ? 2 : 1);
        assert_int_equal(run(g, NULL, 1, &y, 1, NULL, NULL, 0, NULL, 0, &r), SES_INVALID_ARGUMENT);
        if (!strstr(ses_last_error(), "FusedGemm \"my_fc\"") ||
            !strstr(ses_last_error(), cases[i].want))
            fail_msg("expected \"%s\" naming FusedGemm \"my_fc\", got: %s", cases[i].want,
                     ses_last_error());
        ses_graph_release(g);
    }
}

/* FusedConv built by hand refuses a Z without the convolution's shape and a B of another dtype,
 * naming the node and both shapes or dtypes. */
static void fused_conv_refuses_a_z_or_b_that_does_not_fit(void **state) {
    const int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, bd[1] = {3};
    static const int64_t z_bad[4] = {1, 3, 4, 4}, z_good[4] = {1, 3, 3, 3};
    static const struct {
        ses_dtype_t b_dtype;
        const int64_t *zd;
        const char *want;
    } cases[] = {
        {SES_F32, z_bad, "Z must have the convolution's shape"},
        {SES_F64, z_good, "dtypes differ: X is f32[1,2,5,5], B is f64[3]"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ses_graph_t *g = NULL;
        ses_edge_t in[4], y;
        result_t r;

        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = constant(g, "x", random_tensor(SES_F32, 4, xd));
        in[1] = constant(g, "w", random_tensor(SES_F32, 4, wd));
        in[2] = constant(g, "b", random_tensor(cases[i].b_dtype, 1, bd));
        in[3] = constant(g, "z", random_tensor(SES_F32, 4, cases[i].zd));
        y = op(g, "FusedConv", "my_conv", in, 4, NULL, 0);
        assert_int_equal(run(g, NULL, 1, &y, 1, NULL, NULL, 0, NULL, 0, &r), SES_INVALID_ARGUMENT);
        if (!strstr(ses_last_error(), "my_conv") || !strstr(ses_last_error(), cases[i].want))
            fail_msg("expected \"%s\" naming FusedConv \"my_conv\", got: %s", cases[i].want,
                     ses_last_error());
        ses_graph_release(g);
    }
}

/* ---- a trailing MaxPool ------------------------------------------------------------------- */

/* MaxPool attributes of one case: kernel_shape [k, k], strides [s, s], pads all p (when
 * non-zero), ceil_mode c (when non-zero). */
typedef struct pool_case {
    int64_t k, s, p, c;
} pool_case_t;

static size_t pool_attrs(const pool_case_t *pc, int64_t *kernel, int64_t *strides, int64_t *pads,
                         ses_attr_t *out) {
    size_t n = 0;
    kernel[0] = kernel[1] = pc->k;
    strides[0] = strides[1] = pc->s;
    pads[0] = pads[1] = pads[2] = pads[3] = pc->p;
    out[n++] = ses_attr_ints("kernel_shape", kernel, 2);
    out[n++] = ses_attr_ints("strides", strides, 2);
    if (pc->p)
        out[n++] = ses_attr_ints("pads", pads, 4);
    if (pc->c)
        out[n++] = ses_attr_int("ceil_mode", pc->c);
    return n;
}

/* x [n, 3, 9, 9] -> Conv "conv1" (W [16, 3, 3, 3], B, pads 1) -> Relu "relu1" -> MaxPool
 * "pool1" of @p pc, with 1 or 2 (Indices) outputs; the graph's nodes in @p nodes. */
static ses_graph_t *conv_relu_pool(int64_t n, const pool_case_t *pc, size_t pool_outputs,
                                   ses_edge_t *x, ses_node_t **nodes, ses_edge_t *out_relu) {
    const int64_t xd[4] = {n, 3, 9, 9}, wd[4] = {16, 3, 3, 3}, bd[1] = {16};
    const int64_t conv_pads[4] = {1, 1, 1, 1};
    int64_t kernel[2], strides[2], pads[4];
    ses_attr_t conv_attr = ses_attr_ints("pads", conv_pads, 4), attrs[4];
    const size_t n_attrs = pool_attrs(pc, kernel, strides, pads, attrs);
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y, pooled[2];

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, x), SES_OK);
    in[0] = *x;
    in[1] = constant(g, "w", random_tensor(SES_F32, 4, wd));
    in[2] = constant(g, "b", random_tensor(SES_F32, 1, bd));
    y = op(g, "Conv", "conv1", in, 3, &conv_attr, 1);
    nodes[0] = y.node;
    y = op(g, "Relu", "relu1", &y, 1, NULL, 0);
    nodes[1] = y.node;
    if (out_relu)
        *out_relu = y;
    if (pool_outputs == 1) {
        pooled[0] = op(g, "MaxPool", "pool1", &y, 1, attrs, n_attrs);
    } else {
        ses_node_t *pool = NULL;
        if (ses_graph_add_node(g, "MaxPool", "pool1", &y, 1, attrs, n_attrs, 2, &pool) != SES_OK)
            fail_msg("MaxPool with Indices: %s", ses_last_error());
        pooled[0] = ses_node_output(pool, 0);
    }
    nodes[2] = pooled[0].node;
    return g;
}

/* A compiled and run plan's numbers: steps, the placement text (copied), kernel calls. */
typedef struct cnn_run {
    ses_tensor_t *values[2];
    size_t steps;
    char placement[1024];
    uint64_t kernel_calls;
    const char *devices[3];
} cnn_run_t;

/* Runs @p fetches of @p g on the CPU with fusion and layout as given, feeding @p x. */
static void run_cnn(ses_graph_t *g, uint32_t fusion, uint32_t layout, const ses_edge_t *fetches,
                    size_t n_fetches, ses_edge_t x, ses_tensor_t *feed, ses_node_t *const *nodes,
                    cnn_run_t *out) {
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;

    memset(out, 0, sizeof *out);
    ses_session_options_init(&so);
    so.fusion = fusion;
    so.layout = layout;
    so.fallback = SES_FALLBACK_DENY;
    so.registry = registry;
    assert_int_equal(ses_session_open(g, NULL, 0, &so, &s), SES_OK);
    if (ses_session_compile(s, fetches, n_fetches, &x, 1, NULL, 0, &plan) != SES_OK ||
        ses_plan_run(plan, &feed, 1, out->values) != SES_OK)
        fail_msg("fusion %u, layout %u: %s", fusion, layout, ses_last_error());
    out->steps = ses_plan_step_count(plan);
    snprintf(out->placement, sizeof out->placement, "%s", ses_plan_placement(plan));
    out->kernel_calls = ses_session_kernel_calls(s);
    for (size_t i = 0; i < 3; i++) {
        const char *d = ses_plan_node_device(plan, nodes[i]);
        out->devices[i] = d && !strcmp(d, "cpu:0") ? "cpu:0" : d ? "other" : NULL;
    }
    ses_plan_destroy(plan);
    ses_session_destroy(s);
}

static void cnn_run_clear(cnn_run_t *r) {
    for (size_t i = 0; i < 2; i++)
        ses_tensor_release(r->values[i]);
}

/*
 * Conv -> Relu -> MaxPool at batch 2 and 1, the bench's 2x2 pool, ceil_mode, pads. With the
 * layout the CPU runs the whole chain as one NchwcConv with its pool (then the reorder of the
 * fetched value); without it, the pooled node has no kernel (FusedConv never takes a pool), so
 * the chain without the pool fuses into FusedConv and the MaxPool runs after it. Either way the
 * values are the plan's without fusion, and every node of the three is placed on the CPU.
 */
static void conv_relu_maxpool_fuses_with_its_pool_on_the_layout_and_without_it_elsewhere(
    void **state) {
    static const pool_case_t cases[] = {{2, 2, 0, 0}, {2, 2, 0, 1}, {3, 2, 1, 1}, {3, 1, 1, 0}};

    (void)state;
    for (int64_t n = 2; n >= 1; n--)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const int64_t xd[4] = {n, 3, 9, 9};
            ses_node_t *nodes[3];
            ses_edge_t x, y;
            ses_graph_t *g = conv_relu_pool(n, &cases[c], 1, &x, nodes, NULL);
            ses_tensor_t *feed = random_tensor(SES_F32, 4, xd);
            cnn_run_t plain, fused, plain_blocked, fused_blocked;
            char what[128];

            y = (ses_edge_t){nodes[2], 0};
            snprintf(what, sizeof what, "batch %lld, pool k%lld s%lld p%lld ceil_mode %lld",
                     (long long)n, (long long)cases[c].k, (long long)cases[c].s,
                     (long long)cases[c].p, (long long)cases[c].c);
            run_cnn(g, 0, 0, &y, 1, x, feed, nodes, &plain);
            run_cnn(g, 1, 0, &y, 1, x, feed, nodes, &fused);
            run_cnn(g, 0, 1, &y, 1, x, feed, nodes, &plain_blocked);
            run_cnn(g, 1, 1, &y, 1, x, feed, nodes, &fused_blocked);
            assert_close(fused.values[0], plain.values[0], what);
            assert_close(fused_blocked.values[0], plain_blocked.values[0], what);
            /* FusedConv then MaxPool: one step fewer than Conv, Relu, MaxPool. */
            if (fused.steps != 2 || plain.steps != 3 || fused.kernel_calls != 2 ||
                plain.kernel_calls != 3)
                fail_msg("%s: %zu steps and %llu kernel calls fused, %zu and %llu unfused", what,
                         fused.steps, (unsigned long long)fused.kernel_calls, plain.steps,
                         (unsigned long long)plain.kernel_calls);
            /* With the layout: one NchwcConv with its pool, and the reorder of Y to NCHW. */
            if (fused_blocked.steps != 2 || fused_blocked.kernel_calls != 2)
                fail_msg("%s: %zu steps and %llu kernel calls fused on the layout", what,
                         fused_blocked.steps, (unsigned long long)fused_blocked.kernel_calls);
            for (size_t i = 0; i < 2; i++) {
                const cnn_run_t *r = i ? &fused_blocked : &fused;
                if ((!i && !strstr(r->placement, "placement: cpu:0 3 nodes\n")) ||
                    !strstr(r->placement, i ? "  fused: 1 chain into FusedConv or FusedGemm, 1 of "
                                              "them with their MaxPool into NchwcConv\n"
                                            : "  fused: 1 chain into FusedConv or FusedGemm\n"))
                    fail_msg("%s, layout %zu: the placement says\n%s", what, i, r->placement);
                for (size_t m = 0; m < 3; m++)
                    assert_string_equal(r->devices[m], "cpu:0");
            }
            assert_null(strstr(plain.placement, "fused"));
            cnn_run_clear(&plain);
            cnn_run_clear(&fused);
            cnn_run_clear(&plain_blocked);
            cnn_run_clear(&fused_blocked);
            ses_tensor_release(feed);
            ses_graph_release(g);
        }
}

/* The fusion candidates of @p g for @p fetches, @p x fed (through the internal archive). */
static void find_fusions(ses_graph_t *g, const ses_edge_t *fetches, size_t n_fetches, ses_edge_t x,
                         ses__pruned_t *pruned, ses__fusions_t *out) {
    ses_plan_t plan;

    memset(&plan, 0, sizeof plan);
    plan.fetches = (ses_edge_t *)fetches;
    plan.n_fetches = n_fetches;
    plan.fed = &x;
    plan.n_fed = 1;
    if (ses__prune(g, fetches, n_fetches, &x, 1, NULL, 0, pruned) != SES_OK)
        fail_msg("%s", ses_last_error());
    assert_int_equal(ses__fuse_find(&plan, pruned, 100000, out), SES_OK);
}

static void assert_attr_ints(const ses__attrs_t *a, const char *name, const int64_t *want,
                             size_t n) {
    const int64_t *v;
    size_t count;

    if (ses__attrs_get_ints(a, name, &v, &count) != 1)
        fail_msg("attribute %s is missing", name);
    assert_int_equal(count, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(v[i], want[i]);
}

/* Conv -> Relu -> MaxPool: one candidate of three members, whose fused node keeps FusedConv's
 * attributes without the pool's and whose pooled node adds those the MaxPool has, prefixed. */
static void a_trailing_maxpool_joins_the_chain_with_its_attributes_prefixed(void **state) {
    static const pool_case_t pc = {3, 2, 1, 1};
    const int64_t kernel[2] = {3, 3}, strides[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
    ses_node_t *nodes[3];
    ses_edge_t x, y;
    ses_graph_t *g = conv_relu_pool(2, &pc, 1, &x, nodes, NULL);
    ses__pruned_t pruned;
    ses__fusions_t f;
    const char *act;
    int64_t ceil_mode = 0;

    (void)state;
    y = (ses_edge_t){nodes[2], 0};
    find_fusions(g, &y, 1, x, &pruned, &f);
    assert_int_equal(f.count, 1);
    assert_int_equal(f.items[0].n_members, 3);
    assert_ptr_equal(f.items[0].members[0], nodes[0]);
    assert_ptr_equal(f.items[0].members[1], nodes[1]);
    assert_ptr_equal(f.items[0].members[2], nodes[2]);
    assert_string_equal(f.items[0].node->op, "FusedConv");
    assert_string_equal(f.items[0].node->name, "conv1+relu1");
    assert_null(ses__attrs_find(&f.items[0].node->attrs, "pool_kernel_shape"));
    assert_non_null(f.items[0].pooled);
    assert_string_equal(f.items[0].pooled->op, "FusedConv");
    assert_string_equal(f.items[0].pooled->name, "conv1+relu1+pool1");
    assert_int_equal(f.items[0].pooled->n_inputs, 3);
    assert_ptr_equal(f.items[0].pooled->inputs[0].node, x.node);
    assert_int_equal(ses__attrs_get_string(&f.items[0].pooled->attrs, "activation", &act), 1);
    assert_string_equal(act, "Relu");
    assert_attr_ints(&f.items[0].pooled->attrs, "pads", pads, 4); /* the conv's */
    assert_attr_ints(&f.items[0].pooled->attrs, "pool_kernel_shape", kernel, 2);
    assert_attr_ints(&f.items[0].pooled->attrs, "pool_strides", strides, 2);
    assert_attr_ints(&f.items[0].pooled->attrs, "pool_pads", pads, 4);
    assert_int_equal(ses__attrs_get_int(&f.items[0].pooled->attrs, "pool_ceil_mode", &ceil_mode),
                     1);
    assert_int_equal(ceil_mode, 1);
    /* Only those the MaxPool has. */
    assert_null(ses__attrs_find(&f.items[0].pooled->attrs, "pool_dilations"));
    assert_null(ses__attrs_find(&f.items[0].pooled->attrs, "pool_auto_pad"));
    assert_null(ses__attrs_find(&f.items[0].pooled->attrs, "pool_storage_order"));
    ses__fusions_clear(&f);
    ses__pruned_clear(&pruned);
    ses_graph_release(g);
}

/* Conv -> Add -> Relu -> MaxPool: the pool follows the three-member chain. */
static void a_maxpool_after_conv_add_relu_joins_too(void **state) {
    const int64_t xd[4] = {1, 16, 6, 6}, wd[4] = {16, 16, 3, 3}, pads[4] = {1, 1, 1, 1};
    const int64_t kernel[2] = {2, 2};
    ses_attr_t conv_attr = ses_attr_ints("pads", pads, 4),
               pool_attr = ses_attr_ints("kernel_shape", kernel, 2);
    ses_graph_t *g = NULL;
    ses_edge_t x, in[2], y;
    ses__pruned_t pruned;
    ses__fusions_t f;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &x), SES_OK);
    in[0] = x;
    in[1] = constant(g, "w", random_tensor(SES_F32, 4, wd));
    in[0] = op(g, "Conv", "conv", in, 2, &conv_attr, 1);
    in[1] = x;
    y = op(g, "Add", "add", in, 2, NULL, 0);
    y = op(g, "Relu", "relu", &y, 1, NULL, 0);
    y = op(g, "MaxPool", "pool", &y, 1, &pool_attr, 1);
    find_fusions(g, &y, 1, x, &pruned, &f);
    assert_int_equal(f.count, 1);
    assert_int_equal(f.items[0].n_members, 4);
    assert_string_equal(f.items[0].node->name, "conv+add+relu");
    assert_string_equal(f.items[0].pooled->name, "conv+add+relu+pool");
    assert_int_equal(f.items[0].pooled->n_inputs, 4);
    ses__fusions_clear(&f);
    ses__pruned_clear(&pruned);
    ses_graph_release(g);
}

/*
 * A MaxPool with Indices, or whose input (the activation's output) is fetched too, is never in
 * a chain: Conv -> Relu still is, alone. Their plans give the unfused values, the fetched Relu
 * included.
 */
static void a_maxpool_with_indices_or_a_fetched_input_stays_out_of_the_chain(void **state) {
    static const pool_case_t pc = {2, 2, 0, 0};

    (void)state;
    for (int variant = 0; variant < 2; variant++) {
        const int64_t xd[4] = {2, 3, 9, 9};
        const int indices = variant == 0;
        ses_node_t *nodes[3];
        ses_edge_t x, relu, fetches[2];
        ses_graph_t *g = conv_relu_pool(2, &pc, indices ? 2 : 1, &x, nodes, &relu);
        ses_tensor_t *feed = random_tensor(SES_F32, 4, xd);
        ses__pruned_t pruned;
        ses__fusions_t f;
        cnn_run_t plain, fused;
        const size_t n_fetches = 2;

        fetches[0] = (ses_edge_t){nodes[2], 0};
        fetches[1] = indices ? (ses_edge_t){nodes[2], 1} : relu;
        find_fusions(g, fetches, n_fetches, x, &pruned, &f);
        assert_int_equal(f.count, 1);
        assert_int_equal(f.items[0].n_members, 2);
        assert_null(f.items[0].pooled);
        ses__fusions_clear(&f);
        ses__pruned_clear(&pruned);
        /* The CPU driver has no MaxPool kernel giving Indices: only the other plan runs. */
        if (!indices) {
            run_cnn(g, 0, 0, fetches, n_fetches, x, feed, nodes, &plain);
            run_cnn(g, 1, 1, fetches, n_fetches, x, feed, nodes, &fused);
            assert_close(fused.values[0], plain.values[0], "the pool of a fetched Relu");
            assert_close(fused.values[1], plain.values[1], "the fetched Relu");
            cnn_run_clear(&plain);
            cnn_run_clear(&fused);
        }
        ses_tensor_release(feed);
        ses_graph_release(g);
    }
}

/* One inference of NchwcConv through the internal archive. */
typedef struct pooled_infer {
    ses__type_t in[2];
    const void *values[2];
    ses__attrs_t attrs;
    ses__infer_ctx_t ctx;
} pooled_infer_t;

/* Infers NchwcConv @p node over @p x (NCHW or NCHWc16) and W [@p m, C, 3, 3], pads 1 and Relu,
 * with the attributes @p pool added. */
static ses_status_t infer_pooled_conv(pooled_infer_t *r, const char *node, ses__type_t x, int64_t m,
                                      const ses__attrs_t *pool) {
    const int64_t pads[4] = {1, 1, 1, 1};
    const ses_attr_t act = ses_attr_string("activation", "Relu");

    memset(r, 0, sizeof *r);
    assert_int_equal(ses__attrs_copy(&r->attrs, pool), SES_OK);
    assert_int_equal(ses__attrs_set_ints(&r->attrs, "pads", pads, 4), SES_OK);
    assert_int_equal(ses__attrs_set(&r->attrs, &act), SES_OK);
    r->in[0] = x;
    r->in[1] = (ses__type_t){SES_F32, 4, {m, x.rank == 4 ? x.dims[1] : x.dims[1] * 16, 3, 3}};
    r->ctx.node = node;
    r->ctx.op = "NchwcConv";
    r->ctx.n_inputs = 2;
    r->ctx.inputs = r->in;
    r->ctx.values = r->values;
    r->ctx.attrs = &r->attrs;
    r->ctx.n_outputs = 1;
    return ses__op_infer(ses__op_schema_find("NchwcConv"), &r->ctx);
}

static void pooled_infer_clear(pooled_infer_t *r) {
    ses__attrs_clear(&r->attrs);
    ses__attrs_clear(&r->ctx.kernel_attrs);
}

static void assert_dims(const ses__type_t *t, uint32_t rank, const int64_t *dims) {
    assert_int_equal(t->rank, rank);
    for (uint32_t d = 0; d < rank; d++)
        assert_int_equal(t->dims[d], dims[d]);
}

/*
 * NchwcConv with pool_ attributes (the bench CNN's first layer: X [64, 1, 28, 28], W
 * [32, 1, 3, 3], pads 1, Relu, MaxPool 2x2 stride 2): Y is the pooled blocked output, and the
 * kernel gets the conv's attributes, the pool's window prefixed pool_ and pool_input. Then a
 * blocked X with a padded 3x3 pool in ceil_mode.
 */
static void nchwc_conv_with_pool_attributes_infers_the_pooled_output(void **state) {
    const int64_t two[2] = {2, 2}, one[2] = {1, 1}, zeros[4] = {0, 0, 0, 0}, ones[4] = {1, 1, 1, 1};
    const int64_t three[2] = {3, 3}, input[2] = {28, 28}, nine[2] = {9, 9};
    const int64_t bench_y[5] = {64, 2, 14, 14, 16}, blocked_y[5] = {2, 1, 5, 5, 16};
    ses__attrs_t pool = {NULL, 0};
    pooled_infer_t r;
    int64_t v = -1;
    const char *act;

    (void)state;
    assert_int_equal(ses__attrs_set_ints(&pool, "pool_kernel_shape", two, 2), SES_OK);
    assert_int_equal(ses__attrs_set_ints(&pool, "pool_strides", two, 2), SES_OK);
    if (infer_pooled_conv(&r, "conv1+relu1+pool1", (ses__type_t){SES_F32, 4, {64, 1, 28, 28}}, 32,
                          &pool) != SES_OK)
        fail_msg("%s", ses_last_error());
    assert_dims(&r.ctx.outputs[0], 5, bench_y);
    assert_attr_ints(&r.ctx.kernel_attrs, "kernel_shape", three, 2);
    assert_attr_ints(&r.ctx.kernel_attrs, "strides", one, 2);
    assert_attr_ints(&r.ctx.kernel_attrs, "dilations", one, 2);
    assert_attr_ints(&r.ctx.kernel_attrs, "pads", ones, 4);
    assert_int_equal(ses__attrs_get_int(&r.ctx.kernel_attrs, "group", &v), 1);
    assert_int_equal(v, 1);
    assert_int_equal(ses__attrs_get_int(&r.ctx.kernel_attrs, "has_bias", &v), 1);
    assert_int_equal(v, 0);
    assert_int_equal(ses__attrs_get_string(&r.ctx.kernel_attrs, "activation", &act), 1);
    assert_string_equal(act, "Relu");
    assert_attr_ints(&r.ctx.kernel_attrs, "pool_kernel_shape", two, 2);
    assert_attr_ints(&r.ctx.kernel_attrs, "pool_strides", two, 2);
    assert_attr_ints(&r.ctx.kernel_attrs, "pool_dilations", one, 2);
    assert_attr_ints(&r.ctx.kernel_attrs, "pool_pads", zeros, 4);
    assert_attr_ints(&r.ctx.kernel_attrs, "pool_input", input, 2);
    /* The user's pool_ attributes are read, not passed: the kernel gets the normalized ones. */
    assert_null(ses__attrs_find(&r.ctx.kernel_attrs, "pool_ceil_mode"));
    pooled_infer_clear(&r);

    /* Blocked X [2, 16, 9, 9], pool 3x3 stride 2, pads 1, ceil_mode: conv 9x9, pooled 5x5. */
    assert_int_equal(ses__attrs_set_ints(&pool, "pool_kernel_shape", three, 2), SES_OK);
    assert_int_equal(ses__attrs_set_ints(&pool, "pool_pads", ones, 4), SES_OK);
    assert_int_equal(ses__attrs_set_int(&pool, "pool_ceil_mode", 1), SES_OK);
    if (infer_pooled_conv(&r, "fconv", (ses__type_t){SES_F32, 5, {2, 1, 9, 9, 16}}, 16, &pool) !=
        SES_OK)
        fail_msg("%s", ses_last_error());
    assert_dims(&r.ctx.outputs[0], 5, blocked_y);
    assert_attr_ints(&r.ctx.kernel_attrs, "pool_input", nine, 2);
    assert_attr_ints(&r.ctx.kernel_attrs, "pool_pads", ones, 4);
    pooled_infer_clear(&r);
    ses__attrs_clear(&pool);
}

/* Bad pool_ attributes fail naming the node, saying it is the fused pool's. */
static void nchwc_conv_with_bad_pool_attributes_fails_naming_the_node(void **state) {
    static const int64_t big[2] = {6, 6}, three_d[3] = {2, 2, 2}, two[2] = {2, 2};
    static const struct {
        const char *name;
        const int64_t *ints;
        size_t n;
        const char *want;
    } cases[] = {
        {"pool_kernel_shape", big, 2, "the kernel is bigger than the padded input"},
        {"pool_kernel_shape", three_d, 3, "kernel_shape [2,2,2] has 3 entries; it needs 2"},
        {"pool_stride", two, 2, "attribute pool_stride is not one of the fused max pool's"},
        {"pool_strides", two, 2, "attribute pool_strides without pool_kernel_shape"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ses__attrs_t pool = {NULL, 0};
        pooled_infer_t r;
        const char *e;
        if (i == 2)
            assert_int_equal(ses__attrs_set_ints(&pool, "pool_kernel_shape", two, 2), SES_OK);
        assert_int_equal(ses__attrs_set_ints(&pool, cases[i].name, cases[i].ints, cases[i].n),
                         SES_OK);
        assert_int_equal(
            infer_pooled_conv(&r, "fconv", (ses__type_t){SES_F32, 4, {1, 3, 5, 5}}, 16, &pool),
            SES_INVALID_ARGUMENT);
        e = ses_last_error();
        if (strncmp(e, "NchwcConv \"fconv\": ", 19) || !strstr(e, cases[i].want) ||
            (i < 2 && !strstr(e,
                              "the fused max pool (pool_ attributes) of the convolution's "
                              "output f32[1,16,5,5]: ")))
            fail_msg(
                "case %zu: expected \"%s\" naming NchwcConv \"fconv\" and its fused pool, "
                "got: %s",
                i, cases[i].want, e);
        pooled_infer_clear(&r);
        ses__attrs_clear(&pool);
    }
}

/* A user's NchwcConv with pool_ attributes in a graph runs on the CPU, giving the pooled
 * blocked shape; a pool that does not fit is an error naming the node. */
static void a_users_pooled_nchwc_conv_runs_on_the_cpu_and_a_bad_pool_is_named(void **state) {
    const int64_t xd[4] = {1, 16, 6, 6}, wd[4] = {16, 16, 3, 3}, two[2] = {2, 2}, big[2] = {9, 9};

    (void)state;
    for (int bad = 0; bad < 2; bad++) {
        ses_attr_t attrs[2] = {ses_attr_ints("pool_kernel_shape", bad ? big : two, 2),
                               ses_attr_ints("pool_strides", two, 2)};
        ses_graph_t *g = NULL;
        ses_edge_t in[2], y;
        result_t r;
        ses_status_t st;

        assert_int_equal(ses_graph_create(&g), SES_OK);
        in[0] = constant(g, "x", random_tensor(SES_F32, 4, xd));
        in[1] = constant(g, "w", random_tensor(SES_F32, 4, wd));
        y = op(g, "NchwcConv", "my_conv", in, 2, attrs, 2);
        st = run(g, NULL, 1, &y, 1, NULL, NULL, 0, NULL, 0, &r);
        if (!bad) {
            /* 6x6, a 3x3 filter: 4x4, pooled 2x2 stride 2: 2x2, in one block of 16. */
            static const int64_t want[5] = {1, 1, 2, 2, 16};
            if (st != SES_OK)
                fail_msg("%s", ses_last_error());
            assert_int_equal(ses_tensor_rank(r.values[0]), 5);
            assert_memory_equal(ses_tensor_dims(r.values[0]), want, sizeof want);
            result_clear(&r);
        } else {
            assert_int_equal(st, SES_INVALID_ARGUMENT);
            if (!strstr(ses_last_error(), "NchwcConv \"my_conv\"") ||
                !strstr(ses_last_error(), "the fused max pool (pool_ attributes)"))
                fail_msg("got: %s", ses_last_error());
        }
        ses_graph_release(g);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_then_each_activation_fuses_with_the_unfused_values),
        cmocka_unit_test(conv_add_activation_fuses_with_either_operand_and_no_bias),
        cmocka_unit_test(conv_add_of_a_broadcast_operand_is_not_fused_into_z),
        cmocka_unit_test(gemm_then_each_activation_fuses_with_the_unfused_values),
        cmocka_unit_test(matmul_add_bias_activation_fuses_as_gemm_and_batched_does_not),
        cmocka_unit_test(an_intermediate_with_two_readers_is_not_fused),
        cmocka_unit_test(a_fetched_intermediate_is_not_fused_and_is_fetched),
        cmocka_unit_test(placement_still_names_the_users_nodes),
        cmocka_unit_test(session_fusion_0_in_the_environment_turns_fusion_off),
        cmocka_unit_test(a_device_without_fused_kernels_keeps_the_unfused_nodes),
        cmocka_unit_test(gradients_are_the_same_with_fusion_on_and_off),
        cmocka_unit_test(fused_ops_built_by_hand_give_the_composite_values),
        cmocka_unit_test(bad_fused_attributes_fail_naming_the_node),
        cmocka_unit_test(fused_conv_refuses_a_z_or_b_that_does_not_fit),
        cmocka_unit_test(
            conv_relu_maxpool_fuses_with_its_pool_on_the_layout_and_without_it_elsewhere),
        cmocka_unit_test(a_trailing_maxpool_joins_the_chain_with_its_attributes_prefixed),
        cmocka_unit_test(a_maxpool_after_conv_add_relu_joins_too),
        cmocka_unit_test(a_maxpool_with_indices_or_a_fetched_input_stays_out_of_the_chain),
        cmocka_unit_test(nchwc_conv_with_pool_attributes_infers_the_pooled_output),
        cmocka_unit_test(nchwc_conv_with_bad_pool_attributes_fails_naming_the_node),
        cmocka_unit_test(a_users_pooled_nchwc_conv_runs_on_the_cpu_and_a_bad_pool_is_named),
    };
    int failed;

#ifdef OPENCL_MANIFEST
    setenv("SESSION_ADD_DRIVER_FILES", OPENCL_MANIFEST, 1);
#endif
    if (ses_registry_create(&registry) != SES_OK)
        return 1;
    unsetenv("SESSION_ADD_DRIVER_FILES");
    failed = cmocka_run_group_tests(tests, NULL, NULL);
    ses_registry_destroy(registry);
    return failed;
}
