/*
 * Unit tests of the CPU driver's NCHWc16 kernels (plugins/cpu/cpu_nchwc.c, NchwcConv in
 * cpu_cnn.c), driven through the ABI as the host drives them: dlopen the module, negotiate, open
 * the device, find each kernel by op and signature, ask its supports_node, create its state,
 * compute.
 *
 * Each op is checked against the driver's own plain op run on the NCHW tensor: NchwcConv against
 * FusedConv, the pools against MaxPool and AveragePool (bit for bit), the global pools against
 * ReduceMax and ReduceMean over axes 2 and 3 (what the host lowers GlobalMaxPool and
 * GlobalAveragePool to), NchwcReorderOutput against the reference reorder written here. A
 * blocked tensor is [N, C/16, H, W, 16], channel c of pixel (n, h, w) at [n, c/16, h, w, c%16].
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NOLOAD, dup, pread under -std=c11 */
#endif
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <session/driver.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#ifndef SES_CPU_DRIVER_PATH
#error "compile with -DSES_CPU_DRIVER_PATH=\"/path/to/ses_cpu.so\""
#endif

#include "../support/test_host.h"
#include "cpu_node_harness.h"

#define F32 SES_DRV_DTYPE_F32
#define F64 SES_DRV_DTYPE_F64

/* ---------------------------------------------------------------------------------------------
 * Fixture
 * ------------------------------------------------------------------------------------------- */

typedef struct fixture {
    void *lib;
    const ses_drv_api_t *api;
    harness_host_ctx_t ctx;
    ses_drv_driver_t *driver;
    ses_drv_device_t *device;
    int dnnl; /* NchwcConv is offered here: oneDNN loaded, on AVX-512 */
} fixture_t;

static int teardown(void **state) {
    fixture_t *f = *state;

    if (!f)
        return 0;
    harness_cpu_t c = {f->lib, NULL, f->api, f->driver, f->device};
    harness_cpu_close(&c);
    free(f);
    *state = NULL;
    return 0;
}

static const ses_drv_kernel_t *find_kernel(fixture_t *f, const char *op, const char *sig);
static int32_t supports(fixture_t *f, ses_drv_device_t *device, const char *op, const char *sig,
                        int conv_x_rank);

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    *state = f;
    /* Two threads, so that the pools' rows and the convolutions' slices are split. */
    harness_set_option(&f->ctx, "driver.cpu.threads", "2");
    harness_cpu_t c;
    const int opened = harness_cpu_open(&c, SES_CPU_DRIVER_PATH, &f->ctx);
    f->lib = c.lib, f->api = c.api, f->driver = c.driver, f->device = c.device;
    if (opened != 0)
        goto fail;
    /* Whether this machine offers NchwcConv at all: its refusal here says why not. */
    f->dnnl = supports(f, f->device, "NchwcConv", "f32,f32->f32", 5) == SES_DRV_OK;
    if (!f->dnnl)
        print_message("NchwcConv not offered here: %s\n", f->ctx.base.message);
    return 0;

fail:
    teardown(state);
    return -1;
}

#define assert_message_contains(f, fragment)                                                \
    do {                                                                                    \
        if (!strstr((f)->ctx.base.message, (fragment)))                                     \
            fail_msg("error message \"%s\" does not contain \"%s\"", (f)->ctx.base.message, \
                     (fragment));                                                           \
    } while (0)

/* Tests of NchwcConv's values skip where the driver does not offer it. */
#define SKIP_WITHOUT_NCHWC_CONV(f)                                                \
    do {                                                                          \
        if (!(f)->dnnl) {                                                         \
            print_message("skipped: NchwcConv needs oneDNN on an AVX-512 CPU\n"); \
            skip();                                                               \
        }                                                                         \
    } while (0)

static const ses_drv_kernel_t *find_kernel(fixture_t *f, const char *op, const char *sig) {
    return node_find_kernel(f->api, f->device, op, sig);
}

/* The usual attributes of a 3x3 pad-1 convolution or pool (compound literals, so each function
 * declares its own copy: CONV_ATTRS_DECL). */
#define CONV_ATTRS_DECL                \
    const test_attr_t conv_attrs[] = { \
        A_INTS("kernel_shape", 3, 3),  \
        A_INTS("strides", 1, 1),       \
        A_INTS("dilations", 1, 1),     \
        A_INTS("pads", 1, 1, 1, 1),    \
        A_INT("group", 1),             \
        A_INT("has_bias", 0),          \
        A_INT("has_z", 0),             \
        A_END,                         \
    }

/* Describes the node (not yet any buffer): the shared harness's, with this fixture's kernel. */
static void node_describe(noderun_t *r, fixture_t *f, ses_drv_device_t *device, const char *op,
                          const char *sig, const test_attr_t *attrs, uint32_t n_in,
                          const targ_t *in, targ_t out) {
    node_describe_kernel(r, f->api, &f->ctx.base, sizeof f->ctx.base, device,
                         find_kernel(f, op, sig), op, attrs, n_in, in, out);
}

/* Runs one node once, as a plan would (supports_node asked first, then create and compute). */
static int32_t run(fixture_t *f, const char *op, const char *sig, const test_attr_t *attrs,
                   uint32_t n_in, const targ_t *in, targ_t out, float *out_host) {
    noderun_t r;
    int32_t st = SES_DRV_OK;

    node_describe(&r, f, f->device, op, sig, attrs, n_in, in, out);
    memset(&f->ctx.base, 0, sizeof f->ctx.base);
    if (r.k->supports_node && (st = r.k->supports_node(f->device, &r.node)) != SES_DRV_OK)
        return st;
    node_open(&r, 0);
    st = node_compute(&r, out_host);
    node_close(&r);
    return st;
}

#define RUN_OK(f, op, sig, attrs, n_in, in, out, out_host)                                   \
    do {                                                                                     \
        int32_t st_ = run((f), (op), (sig), (attrs), (n_in), (in), (out), (out_host));       \
        if (st_ != SES_DRV_OK)                                                               \
            fail_msg("%s %s returned %d: %s", (op), (sig), (int)st_, (f)->ctx.base.message); \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * Data and the reference reorders
 * ------------------------------------------------------------------------------------------- */

static uint32_t rng = 12345;

/* Values in [-1, 1), a few exactly equal (ties for the max). */
static float *random_values(size_t n) {
    float *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++) {
        rng = rng * 1664525u + 1013904223u;
        v[i] = (float)((int)(rng >> 20) % 512 - 256) / 256.0f;
    }
    return v;
}

static float *new_floats(size_t n) {
    float *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    return v;
}

/* [N, C, H, W] -> [N, C/16, H, W, 16]. */
static float *to_blocked(const float *x, int n, int c, int h, int w) {
    float *b = new_floats((size_t)n * c * h * w);
    for (int in = 0; in < n; in++)
        for (int ic = 0; ic < c; ic++)
            for (int p = 0; p < h * w; p++)
                b[(((size_t)in * (c / 16) + ic / 16) * h * w + p) * 16 + ic % 16] =
                    x[((size_t)in * c + ic) * h * w + p];
    return b;
}

/* [N, C/16, H, W, 16] -> [N, C, H, W]. */
static float *from_blocked(const float *b, int n, int c, int h, int w) {
    float *x = new_floats((size_t)n * c * h * w);
    for (int in = 0; in < n; in++)
        for (int ic = 0; ic < c; ic++)
            for (int p = 0; p < h * w; p++)
                x[((size_t)in * c + ic) * h * w + p] =
                    b[(((size_t)in * (c / 16) + ic / 16) * h * w + p) * 16 + ic % 16];
    return x;
}

static void expect_close(const float *want, const float *got, size_t n, double tol) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(want[i]) && isnan(got[i]))
            continue;
        if (isinf(want[i]) && want[i] == got[i])
            continue;
        double err = fabs((double)want[i] - (double)got[i]);
        if (!(err <= tol * (1.0 + fabs((double)want[i]))))
            fail_msg("element %zu: want %.9g, got %.9g", i, (double)want[i], (double)got[i]);
    }
}

/* Bit for bit, NaN matching NaN. */
static void expect_same(const float *want, const float *got, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!(isnan(want[i]) && isnan(got[i])) && memcmp(&want[i], &got[i], sizeof(float)) != 0)
            fail_msg("element %zu: want %.9g, got %.9g", i, (double)want[i], (double)got[i]);
}

/* ONNX's output size of a window along one axis (ceil_mode's last window starts inside). */
static int out_size(int in, int k, int s, int d, int pb, int pe, int ceil_mode) {
    const int ext = (k - 1) * d + 1, padded = in + pb + pe;
    int out = ceil_mode ? (padded - ext + s - 1) / s + 1 : (padded - ext) / s + 1;
    if (ceil_mode && out > 1 && (out - 1) * s >= in + pb)
        out--;
    return out;
}

/* ---------------------------------------------------------------------------------------------
 * The table
 * ------------------------------------------------------------------------------------------- */

/* Every op of the spec at f32, with supports_node; NchwcConv keeps FusedConv's per-node state. */
static void the_table_offers_the_six_ops_at_f32_with_supports_node(void **state) {
    fixture_t *f = *state;
    static const char *const entries[][2] = {
        {"NchwcConv", "f32,f32->f32"},         {"NchwcConv", "f32,f32,f32->f32"},
        {"NchwcConv", "f32,f32,f32,f32->f32"}, {"NchwcMaxPool", "f32->f32"},
        {"NchwcAveragePool", "f32->f32"},      {"NchwcGlobalAveragePool", "f32->f32"},
        {"NchwcGlobalMaxPool", "f32->f32"},    {"NchwcReorderOutput", "f32->f32"},
    };
    const ses_drv_kernel_t *fused = find_kernel(f, "FusedConv", "f32,f32->f32");

    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        const ses_drv_kernel_t *k = find_kernel(f, entries[i][0], entries[i][1]);
        assert_non_null(k->supports_node);
        if (strcmp(entries[i][0], "NchwcConv") == 0) {
            assert_ptr_equal(k->create, fused->create);
            assert_ptr_equal(k->destroy, fused->destroy);
        } else {
            assert_null(k->create);
            assert_null(k->destroy);
        }
    }
}

/* ---------------------------------------------------------------------------------------------
 * NchwcConv against FusedConv
 * ------------------------------------------------------------------------------------------- */

typedef struct conv_case {
    const char *what;
    int n, c, h, w, m, k, stride, pad, group;
    int x_blocked; /* X rank 5; else rank 4 */
    int bias, z;
    const char *act; /* NULL: no activation attribute */
} conv_case_t;

/* Runs one case both ways and compares: NchwcConv on the blocked tensors, FusedConv on NCHW. */
static void check_conv_case(fixture_t *f, const conv_case_t *cc) {
    const int oh = out_size(cc->h, cc->k, cc->stride, 1, cc->pad, cc->pad, 0);
    const int ow = out_size(cc->w, cc->k, cc->stride, 1, cc->pad, cc->pad, 0);
    const size_t nx = (size_t)cc->n * cc->c * cc->h * cc->w;
    const size_t nw = (size_t)cc->m * (cc->c / cc->group) * cc->k * cc->k;
    const size_t ny = (size_t)cc->n * cc->m * oh * ow;
    float *x = random_values(nx), *wt = random_values(nw), *b = random_values((size_t)cc->m);
    float *z = random_values(ny);
    float *xb = cc->x_blocked ? to_blocked(x, cc->n, cc->c, cc->h, cc->w) : NULL;
    float *zb = to_blocked(z, cc->n, cc->m, oh, ow);
    float *want = new_floats(ny), *got_b = new_floats(ny);
    const int64_t p = cc->pad;
    const test_attr_t leaky_alpha = A_FLOATS("activation_params", 0.1);
    test_attr_t attrs[12] = {
        A_INTS("kernel_shape", cc->k, cc->k),
        A_INTS("strides", cc->stride, cc->stride),
        A_INTS("dilations", 1, 1),
        A_INTS("pads", p, p, p, p),
        A_INT("group", cc->group),
        A_INT("has_bias", cc->bias),
        A_INT("has_z", cc->z),
    };
    size_t na = 7;
    if (cc->act)
        attrs[na++] = (test_attr_t)A_STR("activation", cc->act);
    if (cc->act && strcmp(cc->act, "LeakyRelu") == 0)
        attrs[na++] = leaky_alpha; /* its compound literal must outlive the if */
    attrs[na] = (test_attr_t)A_END;

    targ_t in[4], bin[4];
    uint32_t n_in = 0;
    in[n_in] = tensor(x, 4, cc->n, cc->c, cc->h, cc->w);
    bin[n_in++] = cc->x_blocked ? tensor(xb, 5, cc->n, cc->c / 16, cc->h, cc->w, 16) : in[0];
    in[n_in] = tensor(wt, 4, cc->m, cc->c / cc->group, cc->k, cc->k);
    bin[n_in] = in[n_in];
    n_in++;
    if (cc->bias) {
        in[n_in] = tensor(b, 1, cc->m);
        bin[n_in] = in[n_in];
        n_in++;
    }
    if (cc->z) {
        in[n_in] = tensor(z, 4, cc->n, cc->m, oh, ow);
        bin[n_in++] = tensor(zb, 5, cc->n, cc->m / 16, oh, ow, 16);
    }
    static const char *const sigs[] = {"", "", "f32,f32->f32", "f32,f32,f32->f32",
                                       "f32,f32,f32,f32->f32"};
    RUN_OK(f, "FusedConv", sigs[n_in], attrs, n_in, in, tensor(NULL, 4, cc->n, cc->m, oh, ow),
           want);
    int32_t st = run(f, "NchwcConv", sigs[n_in], attrs, n_in, bin,
                     tensor(NULL, 5, cc->n, cc->m / 16, oh, ow, 16), got_b);
    if (st != SES_DRV_OK)
        fail_msg("%s: NchwcConv returned %d: %s", cc->what, (int)st, f->ctx.base.message);
    float *got = from_blocked(got_b, cc->n, cc->m, oh, ow);
    expect_close(want, got, ny, 1e-4);
    free(x), free(wt), free(b), free(z), free(xb), free(zb), free(want), free(got_b), free(got);
}

static void nchwc_conv_matches_fused_conv(void **state) {
    fixture_t *f = *state;
    static const conv_case_t cases[] = {
        {"1x1, blocked X, no B or Z", 1, 32, 9, 9, 16, 1, 1, 0, 1, 1, 0, 0, NULL},
        {"1x1 stride 2, blocked X, B, Relu", 2, 16, 8, 8, 32, 1, 2, 0, 1, 1, 1, 0, "Relu"},
        {"3x3 pad 1 stride 1, blocked X, B, Relu", 1, 16, 10, 11, 32, 3, 1, 1, 1, 1, 1, 0, "Relu"},
        {"3x3 pad 1 stride 2, blocked X, B and Z, LeakyRelu", 2, 32, 13, 12, 16, 3, 2, 1, 1, 1, 1,
         1, "LeakyRelu"},
        {"3x3 pad 1 stride 1, blocked X, Z only, no activation", 1, 32, 7, 7, 32, 3, 1, 1, 1, 1, 0,
         1, NULL},
        {"7x7 stride 2 pad 3, plain X of 3 channels, B, Relu", 1, 3, 23, 23, 16, 7, 2, 3, 1, 0, 1,
         0, "Relu"},
        {"3x3 pad 1, plain X of 1 channel, Z only", 2, 1, 12, 12, 16, 3, 1, 1, 1, 0, 0, 1,
         "Identity"},
        {"3x3 pad 1 stride 2, plain X of 32 channels, B and Z, Relu", 1, 32, 9, 9, 16, 3, 2, 1, 1,
         0, 1, 1, "Relu"},
        {"3x3 depthwise (group 32), blocked X, B, Relu", 1, 32, 8, 8, 32, 3, 1, 1, 32, 1, 1, 0,
         "Relu"},
    };

    SKIP_WITHOUT_NCHWC_CONV(f);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_conv_case(f, &cases[i]);
}

/* ---------------------------------------------------------------------------------------------
 * NchwcConv with a fused max pool against NchwcConv, then NchwcMaxPool
 * ------------------------------------------------------------------------------------------- */

typedef struct pooled_case {
    const char *what;
    int n, c, h, w, m, k, pad;
    int x_blocked, bias, z;
    const char *act;
    int pk, ps, pb, pe, ceil_mode; /* the pool: square kernel, stride, begin and end pads */
} pooled_case_t;

/* Runs one case both ways: the convolution then the pool as two kernels, and as one. On two
 * threads, a batch of two or more goes by slices of images, a batch of one whole; the
 * values must be the same bit for bit either way. */
static void check_pooled_case(fixture_t *f, const pooled_case_t *pc) {
    const int oh = out_size(pc->h, pc->k, 1, 1, pc->pad, pc->pad, 0);
    const int ow = out_size(pc->w, pc->k, 1, 1, pc->pad, pc->pad, 0);
    const int ph = out_size(oh, pc->pk, pc->ps, 1, pc->pb, pc->pe, pc->ceil_mode);
    const int pw = out_size(ow, pc->pk, pc->ps, 1, pc->pb, pc->pe, pc->ceil_mode);
    const size_t nx = (size_t)pc->n * pc->c * pc->h * pc->w;
    const size_t nw = (size_t)pc->m * pc->c * pc->k * pc->k;
    const size_t nc = (size_t)pc->n * pc->m * oh * ow, ny = (size_t)pc->n * pc->m * ph * pw;
    float *x = random_values(nx), *wt = random_values(nw), *b = random_values((size_t)pc->m);
    float *z = random_values(nc);
    float *xb = pc->x_blocked ? to_blocked(x, pc->n, pc->c, pc->h, pc->w) : NULL;
    float *zb = to_blocked(z, pc->n, pc->m, oh, ow);
    float *conv = new_floats(nc), *want = new_floats(ny), *got = new_floats(ny);
    const int64_t p = pc->pad;
    test_attr_t attrs[16] = {
        A_INTS("kernel_shape", pc->k, pc->k),
        A_INTS("strides", 1, 1),
        A_INTS("dilations", 1, 1),
        A_INTS("pads", p, p, p, p),
        A_INT("group", 1),
        A_INT("has_bias", pc->bias),
        A_INT("has_z", pc->z),
        A_STR("activation", pc->act),
        A_FLOATS("activation_params", 0.1),
        A_END,
    };
    const size_t plain_end = strcmp(pc->act, "LeakyRelu") == 0 ? 9 : 8;
    attrs[plain_end] = (test_attr_t)A_END;
    const test_attr_t window[] = {
        A_INTS("kernel_shape", pc->pk, pc->pk),
        A_INTS("strides", pc->ps, pc->ps),
        A_INTS("dilations", 1, 1),
        A_INTS("pads", pc->pb, pc->pb, pc->pe, pc->pe),
        A_END,
    };

    targ_t in[4];
    uint32_t n_in = 0;
    in[n_in++] = pc->x_blocked ? tensor(xb, 5, pc->n, pc->c / 16, pc->h, pc->w, 16)
                               : tensor(x, 4, pc->n, pc->c, pc->h, pc->w);
    in[n_in++] = tensor(wt, 4, pc->m, pc->c, pc->k, pc->k);
    if (pc->bias)
        in[n_in++] = tensor(b, 1, pc->m);
    if (pc->z)
        in[n_in++] = tensor(zb, 5, pc->n, pc->m / 16, oh, ow, 16);
    static const char *const sigs[] = {"", "", "f32,f32->f32", "f32,f32,f32->f32",
                                       "f32,f32,f32,f32->f32"};
    const targ_t conv_t = tensor(NULL, 5, pc->n, pc->m / 16, oh, ow, 16);
    RUN_OK(f, "NchwcConv", sigs[n_in], attrs, n_in, in, conv_t, conv);
    const targ_t conv_in = tensor(conv, 5, pc->n, pc->m / 16, oh, ow, 16);
    RUN_OK(f, "NchwcMaxPool", "f32->f32", window, 1, &conv_in,
           tensor(NULL, 5, pc->n, pc->m / 16, ph, pw, 16), want);

    size_t na = plain_end;
    attrs[na++] = (test_attr_t)A_INTS("pool_kernel_shape", pc->pk, pc->pk);
    attrs[na++] = (test_attr_t)A_INTS("pool_strides", pc->ps, pc->ps);
    attrs[na++] = (test_attr_t)A_INTS("pool_dilations", 1, 1);
    attrs[na++] = (test_attr_t)A_INTS("pool_pads", pc->pb, pc->pb, pc->pe, pc->pe);
    attrs[na++] = (test_attr_t)A_INTS("pool_input", oh, ow);
    attrs[na] = (test_attr_t)A_END;
    /* Twice: the second launch reuses the node's primitive, slots and scratch. */
    noderun_t r;
    node_describe(&r, f, f->device, "NchwcConv", sigs[n_in], attrs, n_in, in,
                  tensor(NULL, 5, pc->n, pc->m / 16, ph, pw, 16));
    node_open(&r, 2);
    for (int round = 0; round < 2; round++) {
        memset(got, 0, ny * sizeof *got);
        if (node_compute(&r, got) != SES_DRV_OK)
            fail_msg("%s: NchwcConv with its pool: %s", pc->what, f->ctx.base.message);
        expect_same(want, got, ny);
    }
    node_close(&r);
    free(x), free(wt), free(b), free(z), free(xb), free(zb), free(conv), free(want), free(got);
}

static void nchwc_conv_with_a_fused_pool_matches_conv_then_pool(void **state) {
    fixture_t *f = *state;
    static const pooled_case_t cases[] = {
        {"the bench CNN's first layer: plain X of 1 channel, 2x2 stride 2", 4, 1, 12, 12, 32, 3, 1,
         0, 1, 0, "Relu", 2, 2, 0, 0, 0},
        {"its second: blocked X, odd rows (the last dropped)", 4, 32, 7, 7, 64, 3, 1, 1, 1, 0,
         "Relu", 2, 2, 0, 0, 0},
        {"a batch of one (the whole convolution, then the pool split)", 1, 16, 9, 9, 16, 3, 1, 1, 1,
         0, "Relu", 3, 2, 1, 1, 0},
        {"Z and LeakyRelu, 3x3 stride 2 with ceil_mode", 2, 16, 8, 8, 16, 3, 1, 1, 0, 1,
         "LeakyRelu", 3, 2, 0, 0, 1},
        {"an odd batch (slices of one image), 1x1, 2x2 stride 1", 3, 16, 5, 6, 32, 1, 0, 1, 1, 0,
         "Identity", 2, 1, 0, 0, 0},
    };

    SKIP_WITHOUT_NCHWC_CONV(f);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_pooled_case(f, &cases[i]);
}

/* The fused pool's attributes are checked at compute: each named in the message. */
static void nchwc_conv_checks_its_fused_pool(void **state) {
    fixture_t *f = *state;
    const int n = 2, c = 16, h = 6, w = 6, m = 16;
    float *x = random_values((size_t)n * c * h * w), *wt = random_values((size_t)m * c);
    float *xb = to_blocked(x, n, c, h, w), *got = new_floats((size_t)n * m * h * w);
    const targ_t in[2] = {tensor(xb, 5, n, c / 16, h, w, 16), tensor(wt, 4, m, c, 1, 1)};
    const targ_t y3 = tensor(NULL, 5, n, m / 16, 3, 3, 16);
#define POOL_NODE(input_h, pk, pads_end)                                                          \
    {                                                                                             \
        A_INTS("kernel_shape", 1, 1), A_INTS("strides", 1, 1), A_INTS("dilations", 1, 1),         \
            A_INTS("pads", 0, 0, 0, 0), A_INT("group", 1), A_INT("has_bias", 0),                  \
            A_INT("has_z", 0), A_INTS("pool_kernel_shape", pk, pk), A_INTS("pool_strides", 2, 2), \
            A_INTS("pool_dilations", 1, 1), A_INTS("pool_pads", 0, 0, pads_end, pads_end),        \
            A_INTS("pool_input", input_h, 6), A_END                                               \
    }
    const test_attr_t good[] = POOL_NODE(6, 2, 0);
    RUN_OK(f, "NchwcConv", "f32,f32->f32", good, 2, in, y3, got);
    /* pool_input that is not the convolution's output: X has 6 rows. */
    const test_attr_t bad_input[] = POOL_NODE(7, 2, 0);
    assert_int_equal(run(f, "NchwcConv", "f32,f32->f32", bad_input, 2, in, y3, got),
                     SES_DRV_INVALID_ARGUMENT);
    /* A window that does not give Y's 3 rows: a 4x4 kernel over 6 gives 2. */
    const test_attr_t bad_window[] = POOL_NODE(6, 4, 0);
    assert_int_equal(run(f, "NchwcConv", "f32,f32->f32", bad_window, 2, in, y3, got),
                     SES_DRV_INVALID_ARGUMENT);
    assert_non_null(strstr(f->ctx.base.message, "spatial dim 0"));
    /* A negative pad. */
    const test_attr_t bad_pad[] = POOL_NODE(6, 2, -1);
    assert_int_equal(run(f, "NchwcConv", "f32,f32->f32", bad_pad, 2, in, y3, got),
                     SES_DRV_INVALID_ARGUMENT);
    assert_non_null(strstr(f->ctx.base.message, "out of range"));
    /* pool_strides of one entry. */
    const test_attr_t short_strides[] = {
        A_INTS("kernel_shape", 1, 1),
        A_INTS("strides", 1, 1),
        A_INTS("dilations", 1, 1),
        A_INTS("pads", 0, 0, 0, 0),
        A_INT("group", 1),
        A_INT("has_bias", 0),
        A_INT("has_z", 0),
        A_INTS("pool_kernel_shape", 2, 2),
        A_INTS("pool_strides", 2),
        A_INTS("pool_dilations", 1, 1),
        A_INTS("pool_pads", 0, 0, 0, 0),
        A_INTS("pool_input", 6, 6),
        A_END,
    };
    /* supports_node refuses it already. */
    assert_int_equal(run(f, "NchwcConv", "f32,f32->f32", short_strides, 2, in, y3, got),
                     SES_DRV_UNIMPLEMENTED);
    assert_non_null(strstr(f->ctx.base.message, "pool_strides"));
#undef POOL_NODE
    free(x), free(wt), free(xb), free(got);
}

/*
 * DRV-85: with W's constant bit set, the weights reordered at the first run are reused, so new
 * bytes at the same address are not seen (the host never does that to a constant); with the bit
 * clear, every run reads W again and new weights give the new result. Without any state (a host
 * that skips create) a launch still runs.
 */
static void nchwc_conv_caches_constant_weights_and_rereads_others(void **state) {
    fixture_t *f = *state;
    const int n = 1, c = 16, h = 8, w = 8, m = 16;
    const size_t nx = (size_t)n * c * h * w, nw = (size_t)m * c * 9, ny = (size_t)n * m * h * w;
    const test_attr_t attrs[] = {
        A_INTS("kernel_shape", 3, 3),
        A_INTS("strides", 1, 1),
        A_INTS("dilations", 1, 1),
        A_INTS("pads", 1, 1, 1, 1),
        A_INT("group", 1),
        A_INT("has_bias", 0),
        A_INT("has_z", 0),
        A_END,
    };

    SKIP_WITHOUT_NCHWC_CONV(f);
    float *x = random_values(nx), *w1 = random_values(nw), *w2 = random_values(nw);
    float *xb = to_blocked(x, n, c, h, w);
    float *want1 = new_floats(ny), *want2 = new_floats(ny), *got = new_floats(ny);
    const targ_t xt = tensor(x, 4, n, c, h, w), yt = tensor(NULL, 4, n, m, h, w);
    targ_t in[2] = {xt, tensor(w1, 4, m, c, 3, 3)};
    RUN_OK(f, "FusedConv", "f32,f32->f32", attrs, 2, in, yt, want1);
    in[1].data = w2;
    RUN_OK(f, "FusedConv", "f32,f32->f32", attrs, 2, in, yt, want2);

    for (uint64_t bits = 0; bits <= 2; bits += 2) {
        noderun_t r;
        const targ_t bin[2] = {tensor(xb, 5, n, c / 16, h, w, 16), tensor(w1, 4, m, c, 3, 3)};
        node_describe(&r, f, f->device, "NchwcConv", "f32,f32->f32", attrs, 2, bin,
                      tensor(NULL, 5, n, m / 16, h, w, 16));
        node_open(&r, bits);
        for (int round = 0; round < 2; round++) {
            if (round == 1)
                node_set_input(&r, 1, w2);
            if (node_compute(&r, got) != SES_DRV_OK)
                fail_msg("NchwcConv: %s", f->ctx.base.message);
            float *plain = from_blocked(got, n, m, h, w);
            expect_close(round == 0 || bits ? want1 : want2, plain, ny, 1e-4);
            free(plain);
        }
        node_close(&r);
    }
    /* A host that calls no create: the launch builds oneDNN's primitive for itself. */
    noderun_t r;
    const targ_t bin[2] = {tensor(xb, 5, n, c / 16, h, w, 16), tensor(w2, 4, m, c, 3, 3)};
    node_describe(&r, f, f->device, "NchwcConv", "f32,f32->f32", attrs, 2, bin,
                  tensor(NULL, 5, n, m / 16, h, w, 16));
    node_open(&r, 2);
    r.k->destroy(r.device, r.state);
    r.state = NULL;
    if (node_compute(&r, got) != SES_DRV_OK)
        fail_msg("NchwcConv without state: %s", f->ctx.base.message);
    float *plain = from_blocked(got, n, m, h, w);
    expect_close(want2, plain, ny, 1e-4);
    free(plain);
    node_close(&r);
    free(x), free(w1), free(w2), free(xb), free(want1), free(want2), free(got);
}

/* ---------------------------------------------------------------------------------------------
 * The pools against MaxPool and AveragePool on NCHW, bit for bit
 * ------------------------------------------------------------------------------------------- */

typedef struct pool_case {
    int n, c, h, w, k, stride, dilation, pb, pe, ceil_mode, include_pad;
} pool_case_t;

static void check_pool_case(fixture_t *f, int max, const pool_case_t *pc, int with_nan) {
    const int oh = out_size(pc->h, pc->k, pc->stride, pc->dilation, pc->pb, pc->pe, pc->ceil_mode);
    const int ow = out_size(pc->w, pc->k, pc->stride, pc->dilation, pc->pb, pc->pe, pc->ceil_mode);
    const size_t nx = (size_t)pc->n * pc->c * pc->h * pc->w, ny = (size_t)pc->n * pc->c * oh * ow;
    float *x = random_values(nx);
    if (with_nan)
        for (size_t i = 0; i < nx; i += 37)
            x[i] = NAN;
    float *xb = to_blocked(x, pc->n, pc->c, pc->h, pc->w);
    float *want = new_floats(ny), *got_b = new_floats(ny);
    const test_attr_t attrs[] = {
        A_INTS("kernel_shape", pc->k, pc->k),
        A_INTS("strides", pc->stride, pc->stride),
        A_INTS("dilations", pc->dilation, pc->dilation),
        A_INTS("pads", pc->pb, pc->pb, pc->pe, pc->pe),
        A_INT("count_include_pad", pc->include_pad),
        A_END,
    };
    const targ_t in = tensor(x, 4, pc->n, pc->c, pc->h, pc->w);
    const targ_t bin = tensor(xb, 5, pc->n, pc->c / 16, pc->h, pc->w, 16);

    RUN_OK(f, max ? "MaxPool" : "AveragePool", "f32->f32", attrs, 1, &in,
           tensor(NULL, 4, pc->n, pc->c, oh, ow), want);
    RUN_OK(f, max ? "NchwcMaxPool" : "NchwcAveragePool", "f32->f32", attrs, 1, &bin,
           tensor(NULL, 5, pc->n, pc->c / 16, oh, ow, 16), got_b);
    float *got = from_blocked(got_b, pc->n, pc->c, oh, ow);
    expect_same(want, got, ny);
    free(x), free(xb), free(want), free(got_b), free(got);
}

static const pool_case_t pool_cases[] = {
    /* n, c, h, w, k, stride, dilation, pads begin, end, ceil_mode, count_include_pad */
    {1, 16, 12, 12, 3, 2, 1, 0, 0, 1, 0}, /* ceil_mode: 6x6 where floor gives 5x5 */
    {2, 32, 8, 8, 2, 2, 1, 0, 0, 0, 0},   /* MaxPool's own 2x2 loop on the plain side */
    {1, 16, 9, 10, 3, 1, 1, 1, 1, 0, 0},  /* pads 1, stride 1 */
    {1, 32, 11, 11, 3, 2, 1, 1, 1, 1, 1}, /* pads and ceil_mode, count_include_pad */
    {1, 16, 10, 9, 3, 2, 1, 1, 0, 0, 1},  /* pads at the beginning only */
    {1, 16, 13, 13, 3, 1, 2, 2, 2, 0, 0}, /* dilation 2 */
    {2, 48, 7, 7, 7, 1, 1, 0, 0, 0, 0},   /* one window over the whole plane */
};

static void nchwc_max_pool_matches_max_pool_bit_for_bit(void **state) {
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++)
        check_pool_case(*state, 1, &pool_cases[i], 0);
}

/* MaxPool keeps a NaN of its window (CPU__MAXNAN); the blocked pool must too. */
static void nchwc_max_pool_keeps_nan_as_max_pool_does(void **state) {
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++)
        check_pool_case(*state, 1, &pool_cases[i], 1);
}

static void nchwc_average_pool_matches_average_pool_bit_for_bit(void **state) {
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) {
        pool_case_t pc = pool_cases[i];
        if (pc.dilation != 1)
            continue;
        check_pool_case(*state, 0, &pc, 0);
        pc.include_pad = !pc.include_pad;
        check_pool_case(*state, 0, &pc, 0);
    }
}

/* ---------------------------------------------------------------------------------------------
 * The global pools against ReduceMax and ReduceMean over H and W
 * ------------------------------------------------------------------------------------------- */

static void check_global(fixture_t *f, int max, int n, int c, int h, int w) {
    const size_t nx = (size_t)n * c * h * w, ny = (size_t)n * c;
    float *x = random_values(nx), *xb = to_blocked(x, n, c, h, w);
    float *want = new_floats(ny), *got_b = new_floats(ny);
    const test_attr_t reduce[] = {A_INTS("axes", 2, 3), A_INT("keepdims", 1), A_END};
    const targ_t in = tensor(x, 4, n, c, h, w), bin = tensor(xb, 5, n, c / 16, h, w, 16);

    RUN_OK(f, max ? "ReduceMax" : "ReduceMean", "f32->f32", reduce, 1, &in,
           tensor(NULL, 4, n, c, 1, 1), want);
    RUN_OK(f, max ? "NchwcGlobalMaxPool" : "NchwcGlobalAveragePool", "f32->f32", NULL, 1, &bin,
           tensor(NULL, 5, n, c / 16, 1, 1, 16), got_b);
    float *got = from_blocked(got_b, n, c, 1, 1);
    if (max)
        expect_same(want, got, ny);
    else
        expect_close(want, got, ny, 1e-6);
    free(x), free(xb), free(want), free(got_b), free(got);
}

static void nchwc_global_pools_match_reduce_max_and_mean(void **state) {
    check_global(*state, 1, 2, 32, 7, 7);
    check_global(*state, 0, 2, 32, 7, 7);
    check_global(*state, 1, 1, 64, 56, 56);
    check_global(*state, 0, 1, 64, 56, 56);
    check_global(*state, 0, 3, 16, 1, 1);
}

/* ---------------------------------------------------------------------------------------------
 * NchwcReorderOutput against the reference reorder
 * ------------------------------------------------------------------------------------------- */

static void nchwc_reorder_output_matches_the_reference(void **state) {
    fixture_t *f = *state;
    static const int shapes[][4] = {{1, 16, 1, 1}, {2, 48, 5, 7}, {1, 32, 20, 37}, {1, 64, 56, 56}};

    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int n = shapes[i][0], c = shapes[i][1], h = shapes[i][2], w = shapes[i][3];
        const size_t count = (size_t)n * c * h * w;
        float *xb = random_values(count), *got = new_floats(count);
        float *want = from_blocked(xb, n, c, h, w);
        const targ_t bin = tensor(xb, 5, n, c / 16, h, w, 16);
        RUN_OK(f, "NchwcReorderOutput", "f32->f32", NULL, 1, &bin, tensor(NULL, 4, n, c, h, w),
               got);
        expect_same(want, got, count);
        free(xb), free(got), free(want);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Refusals: supports_node, and compute where a host skipped it
 * ------------------------------------------------------------------------------------------- */

/* supports_node of a good node of @p op (X rank @p conv_x_rank for NchwcConv) on @p device. */
static int32_t supports(fixture_t *f, ses_drv_device_t *device, const char *op, const char *sig,
                        int conv_x_rank) {
    CONV_ATTRS_DECL;
    noderun_t r;
    targ_t in[2];

    if (strcmp(op, "NchwcConv") == 0) {
        in[0] = conv_x_rank == 5 ? tensor(NULL, 5, 1, 2, 8, 8, 16) : tensor(NULL, 4, 1, 32, 8, 8);
        in[1] = tensor(NULL, 4, 16, 32, 3, 3);
        node_describe(&r, f, device, op, sig, conv_attrs, 2, in, tensor(NULL, 5, 1, 1, 8, 8, 16));
    } else {
        in[0] = tensor(NULL, 5, 1, 2, 8, 8, 16);
        node_describe(&r, f, device, op, sig, conv_attrs, 1, in, tensor(NULL, 5, 1, 2, 8, 8, 16));
    }
    memset(&f->ctx.base, 0, sizeof f->ctx.base);
    return r.k->supports_node(device, &r.node);
}

/* One refusal: the node @p r as described, then @p fragments found in the message. */
static void expect_refused(fixture_t *f, noderun_t *r, const char *fragment) {
    memset(&f->ctx.base, 0, sizeof f->ctx.base);
    int32_t st = r->k->supports_node(r->device, &r->node);
    if (st != SES_DRV_UNIMPLEMENTED)
        fail_msg("%s: supports_node returned %d, want SES_DRV_UNIMPLEMENTED (message \"%s\")",
                 fragment, (int)st, f->ctx.base.message);
    /* Every refusal names the node. */
    assert_message_contains(f, "\"n1\"");
    assert_message_contains(f, fragment);
}

static void nchwc_conv_refuses_what_it_cannot_run(void **state) {
    CONV_ATTRS_DECL;
    fixture_t *f = *state;
    noderun_t r;
    targ_t in[2];
    const test_attr_t attrs3d[] = {
        A_INTS("kernel_shape", 3, 3, 3),
        A_INTS("strides", 1, 1, 1),
        A_INTS("dilations", 1, 1, 1),
        A_INTS("pads", 1, 1, 1, 1, 1, 1),
        A_END,
    };
    const test_attr_t bad_act[] = {A_STR("activation", "Gelu"), A_END};

    /* X of rank 3. */
    in[0] = tensor(NULL, 3, 1, 32, 8);
    in[1] = tensor(NULL, 4, 16, 32, 3, 3);
    node_describe(&r, f, f->device, "NchwcConv", "f32,f32->f32", conv_attrs, 2, in,
                  tensor(NULL, 5, 1, 1, 8, 8, 16));
    expect_refused(f, &r, "X is [1,32,8]");
    /* Rank-5 X whose last dim is not 16. */
    in[0] = tensor(NULL, 5, 1, 4, 8, 8, 8);
    node_describe(&r, f, f->device, "NchwcConv", "f32,f32->f32", conv_attrs, 2, in,
                  tensor(NULL, 5, 1, 1, 8, 8, 16));
    expect_refused(f, &r, "X is [1,4,8,8,8]");
    /* Y whose last dim is not 16. */
    in[0] = tensor(NULL, 5, 1, 2, 8, 8, 16);
    node_describe(&r, f, f->device, "NchwcConv", "f32,f32->f32", conv_attrs, 2, in,
                  tensor(NULL, 5, 1, 2, 8, 8, 8));
    expect_refused(f, &r, "Y is [1,2,8,8,8]");
    /* M = 24 filters. */
    in[1] = tensor(NULL, 4, 24, 32, 3, 3);
    node_describe(&r, f, f->device, "NchwcConv", "f32,f32->f32", conv_attrs, 2, in,
                  tensor(NULL, 5, 1, 2, 8, 8, 16));
    expect_refused(f, &r, "24 filters must be a multiple of 16");
    /* A 3-D convolution: plain X [N, C, D, H, W] and W of rank 5. */
    in[0] = tensor(NULL, 5, 1, 16, 8, 8, 16);
    in[1] = tensor(NULL, 5, 16, 16, 3, 3, 3);
    node_describe(&r, f, f->device, "NchwcConv", "f32,f32->f32", attrs3d, 2, in,
                  tensor(NULL, 5, 1, 1, 8, 8, 16));
    expect_refused(f, &r, "only 2-D convolutions");
    /* An f64 node. */
    in[0] = tensor(NULL, 5, 1, 2, 8, 8, 16);
    in[0].dtype = F64;
    in[1] = tensor(NULL, 4, 16, 32, 3, 3);
    in[1].dtype = F64;
    targ_t y64 = tensor(NULL, 5, 1, 1, 8, 8, 16);
    y64.dtype = F64;
    node_describe(&r, f, f->device, "NchwcConv", "f32,f32->f32", conv_attrs, 2, in, y64);
    expect_refused(f, &r, "input 0 is f64; the NCHWc16 ops are f32 only");
    /* An activation the driver does not apply. */
    in[0] = tensor(NULL, 5, 1, 2, 8, 8, 16);
    in[1] = tensor(NULL, 4, 16, 32, 3, 3);
    node_describe(&r, f, f->device, "NchwcConv", "f32,f32->f32", bad_act, 2, in,
                  tensor(NULL, 5, 1, 1, 8, 8, 16));
    expect_refused(f, &r, "Gelu");
    /* Three inputs, but has_bias and has_z say two. */
    targ_t in3[3] = {tensor(NULL, 5, 1, 2, 8, 8, 16), tensor(NULL, 4, 16, 32, 3, 3),
                     tensor(NULL, 1, 16)};
    node_describe(&r, f, f->device, "NchwcConv", "f32,f32,f32->f32", conv_attrs, 3, in3,
                  tensor(NULL, 5, 1, 1, 8, 8, 16));
    expect_refused(f, &r, "do not agree");
}

/* With driver.cpu.conv=im2col the device never loads oneDNN's path: NchwcConv is refused, so the
 * host keeps the plain layout. */
static void nchwc_conv_is_refused_when_driver_cpu_conv_is_im2col(void **state) {
    fixture_t *f = *state;
    ses_drv_device_t *device = NULL;

    harness_set_option(&f->ctx, "driver.cpu.conv", "im2col");
    int32_t st = f->api->open_device(f->driver, 0, &device);
    harness_set_option(&f->ctx, "driver.cpu.conv", NULL);
    assert_int_equal(st, SES_DRV_OK);
    st = supports(f, device, "NchwcConv", "f32,f32->f32", 5);
    f->api->close_device(device);
    assert_int_equal(st, SES_DRV_UNIMPLEMENTED);
    assert_message_contains(f, "driver.cpu.conv is im2col");
    /* The pools and the reorder are the driver's own loops: still offered. */
    assert_int_equal(supports(f, f->device, "NchwcMaxPool", "f32->f32", 0), SES_DRV_OK);
}

/*
 * driver.cpu.winograd: a 3x3 stride-1 convolution of blocked X runs through Winograd's algorithm
 * by default (auto) and directly with off. Both are within 1e-4 of FusedConv on NCHW, and they
 * differ in their last bits: the option is what chose.
 */
static void nchwc_conv_takes_winograd_unless_the_option_says_off(void **state) {
    fixture_t *f = *state;
    const int n = 1, c = 32, h = 14, w = 14, m = 32;
    const size_t nx = (size_t)n * c * h * w, ny = (size_t)n * m * h * w;
    const test_attr_t attrs[] = {
        A_INTS("kernel_shape", 3, 3),
        A_INTS("strides", 1, 1),
        A_INTS("dilations", 1, 1),
        A_INTS("pads", 1, 1, 1, 1),
        A_INT("group", 1),
        A_INT("has_bias", 0),
        A_INT("has_z", 0),
        A_END,
    };
    ses_drv_device_t *direct = NULL;

    SKIP_WITHOUT_NCHWC_CONV(f);
    float *x = random_values(nx), *wt = random_values((size_t)m * c * 9);
    /* Full mantissas: random_values' few bits would make both algorithms' sums exact. */
    for (size_t i = 0; i < nx; i++)
        x[i] = x[i] / 3.0f + 0.1f * sinf((float)i);
    float *xb = to_blocked(x, n, c, h, w), *want = new_floats(ny);
    float *got[2] = {new_floats(ny), new_floats(ny)};
    const targ_t in[2] = {tensor(x, 4, n, c, h, w), tensor(wt, 4, m, c, 3, 3)};
    const targ_t bin[2] = {tensor(xb, 5, n, c / 16, h, w, 16), in[1]};
    RUN_OK(f, "FusedConv", "f32,f32->f32", attrs, 2, in, tensor(NULL, 4, n, m, h, w), want);

    harness_set_option(&f->ctx, "driver.cpu.winograd", "off");
    int32_t st = f->api->open_device(f->driver, 0, &direct);
    harness_set_option(&f->ctx, "driver.cpu.winograd", NULL);
    assert_int_equal(st, SES_DRV_OK);
    for (int i = 0; i < 2; i++) {
        noderun_t r;
        node_describe(&r, f, i ? direct : f->device, "NchwcConv", "f32,f32->f32", attrs, 2, bin,
                      tensor(NULL, 5, n, m / 16, h, w, 16));
        node_open(&r, 2);
        if (node_compute(&r, got[i]) != SES_DRV_OK)
            fail_msg("NchwcConv (winograd %s): %s", i ? "off" : "auto", f->ctx.base.message);
        node_close(&r);
        float *plain = from_blocked(got[i], n, m, h, w);
        expect_close(want, plain, ny, 1e-4);
        free(plain);
    }
    f->api->close_device(direct);
    assert_true(memcmp(got[0], got[1], ny * sizeof(float)) != 0);
    free(x), free(wt), free(xb), free(want), free(got[0]), free(got[1]);
}

/*
 * driver.cpu.conv_slices: a batch smaller than the pool's threads runs by slices of output
 * channels under auto, each part a primitive made for its own channels, and whole on oneDNN's
 * team under off. The values agree within 1e-5 (relative). Which one ran is read from oneDNN's
 * own log (dnnl_set_verbose): the convolutions auto executes are made for one image and a
 * part's channels, never for all of them; off's for the whole batch and all of them.
 */
typedef struct slices_case {
    const char *what;
    int n, c, h, w, m, k;
    int bias, z;
    const char *act; /* NULL: none */
    int pool;        /* a fused 2x2 stride-2 max pool */
} slices_case_t;

/* The device's threads: more than the batches below, and not a divisor of every M. */
#define SLICES_THREADS 4

/* Computes @p r once into @p out (its status in *@p st) and returns what oneDNN's verbose log
 * (executions) wrote meanwhile, a string the caller frees; NULL where the library the driver
 * loaded has no dnnl_set_verbose. */
static char *dnnl_log_of(noderun_t *r, float *out, int32_t *st) {
    void *lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_NOLOAD);
    void *sym = lib ? dlsym(lib, "dnnl_set_verbose") : NULL;
    int (*set_verbose)(int) = NULL;
    /* POSIX guarantees the object-to-function pointer conversion dlsym needs. */
    memcpy(&set_verbose, &sym, sizeof set_verbose);
    if (!set_verbose) {
        if (lib)
            dlclose(lib);
        *st = node_compute(r, out);
        return NULL;
    }
    FILE *log = tmpfile();
    assert_non_null(log);
    fflush(stdout);
    const int saved = dup(1);
    assert_true(saved >= 0 && dup2(fileno(log), 1) >= 0);
    set_verbose(1);
    *st = node_compute(r, out);
    set_verbose(0);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    const off_t size = lseek(fileno(log), 0, SEEK_END);
    assert_true(size >= 0);
    char *text = calloc((size_t)size + 1, 1);
    assert_non_null(text);
    assert_true(pread(fileno(log), text, (size_t)size, 0) == (ssize_t)size);
    fclose(log);
    dlclose(lib);
    return text;
}

static void check_slices_case(fixture_t *f, ses_drv_device_t *by_parts, ses_drv_device_t *whole,
                              const slices_case_t *sc) {
    const int pad = sc->k / 2, oh = sc->h, ow = sc->w;
    const int ph = sc->pool ? oh / 2 : oh, pw = sc->pool ? ow / 2 : ow;
    const size_t nx = (size_t)sc->n * sc->c * sc->h * sc->w;
    const size_t nz = (size_t)sc->n * sc->m * oh * ow, ny = (size_t)sc->n * sc->m * ph * pw;
    float *x = random_values(nx), *wt = random_values((size_t)sc->m * sc->c * sc->k * sc->k);
    float *b = random_values((size_t)sc->m), *z = random_values(nz);
    for (size_t i = 0; i < nx; i++)
        x[i] = x[i] / 3.0f + 0.1f * sinf((float)i);
    float *xb = to_blocked(x, sc->n, sc->c, sc->h, sc->w);
    float *zb = to_blocked(z, sc->n, sc->m, oh, ow);
    float *got[2] = {new_floats(ny), new_floats(ny)};
    test_attr_t attrs[16] = {
        A_INTS("kernel_shape", sc->k, sc->k),
        A_INTS("strides", 1, 1),
        A_INTS("dilations", 1, 1),
        A_INTS("pads", pad, pad, pad, pad),
        A_INT("group", 1),
        A_INT("has_bias", sc->bias),
        A_INT("has_z", sc->z),
    };
    /* Compound literals of this block: they must outlive the ifs below. */
    const test_attr_t pool_attrs[] = {
        A_INTS("pool_kernel_shape", 2, 2), A_INTS("pool_strides", 2, 2),
        A_INTS("pool_dilations", 1, 1),    A_INTS("pool_pads", 0, 0, 0, 0),
        A_INTS("pool_input", oh, ow),
    };
    const test_attr_t act = A_STR("activation", sc->act ? sc->act : "Identity");
    size_t na = 7;
    if (sc->act)
        attrs[na++] = act;
    for (size_t i = 0; sc->pool && i < sizeof pool_attrs / sizeof pool_attrs[0]; i++)
        attrs[na++] = pool_attrs[i];
    attrs[na] = (test_attr_t)A_END;
    targ_t in[4];
    uint32_t n_in = 0;
    in[n_in++] = tensor(xb, 5, sc->n, sc->c / 16, sc->h, sc->w, 16);
    in[n_in++] = tensor(wt, 4, sc->m, sc->c, sc->k, sc->k);
    if (sc->bias)
        in[n_in++] = tensor(b, 1, sc->m);
    if (sc->z)
        in[n_in++] = tensor(zb, 5, sc->n, sc->m / 16, oh, ow, 16);
    static const char *const sigs[] = {"", "", "f32,f32->f32", "f32,f32,f32->f32",
                                       "f32,f32,f32,f32->f32"};
    /* What oneDNN's log names: the whole convolution, and the first part's. */
    const int blocks = sc->m / 16, parts = blocks < SLICES_THREADS ? blocks : SLICES_THREADS;
    char whole_desc[64], part_desc[64];
    snprintf(whole_desc, sizeof whole_desc, "mb%d_ic%doc%d_", sc->n, sc->c, sc->m);
    snprintf(part_desc, sizeof part_desc, "mb1_ic%doc%d_", sc->c, 16 * (blocks / parts));

    for (int i = 0; i < 2; i++) {
        noderun_t r;
        node_describe(&r, f, i ? whole : by_parts, "NchwcConv", sigs[n_in], attrs, n_in, in,
                      tensor(NULL, 5, sc->n, sc->m / 16, ph, pw, 16));
        node_open(&r, 2);
        /* Twice: the second launch reuses the parts' primitives and their weights. */
        for (int round = 0; round < 2; round++) {
            int32_t st;
            memset(got[i], 0, ny * sizeof(float));
            char *log = dnnl_log_of(&r, got[i], &st);
            if (st != SES_DRV_OK)
                fail_msg("%s (conv_slices %s): %s", sc->what, i ? "off" : "auto",
                         f->ctx.base.message);
            if (log && !strstr(log, i ? whole_desc : part_desc))
                fail_msg("%s (conv_slices %s): oneDNN ran no convolution %s...: %s", sc->what,
                         i ? "off" : "auto", i ? whole_desc : part_desc, log);
            /* (One part of one image is the whole convolution: the same name.) */
            if (log && !i && strcmp(whole_desc, part_desc) != 0 && strstr(log, whole_desc))
                fail_msg("%s: conv_slices auto ran the whole convolution %s...: %s", sc->what,
                         whole_desc, log);
            free(log);
        }
        node_close(&r);
    }
    expect_close(got[1], got[0], ny, 1e-5);
    free(x), free(wt), free(b), free(z), free(xb), free(zb), free(got[0]), free(got[1]);
}

static void nchwc_conv_by_channel_slices_matches_the_whole(void **state) {
    fixture_t *f = *state;
    static const slices_case_t cases[] = {
        {"64 filters: 4 parts of one block", 1, 32, 10, 10, 64, 3, 0, 0, NULL, 0},
        {"B, Z and Relu", 1, 32, 10, 10, 64, 3, 1, 1, "Relu", 0},
        {"80 filters: 4 parts, the last of two blocks", 1, 16, 7, 9, 80, 3, 1, 0, "Relu", 0},
        {"112 filters: 4 parts of 1, 2, 2, 2 blocks, Z, 1x1", 1, 48, 6, 6, 112, 1, 0, 1, NULL, 0},
        {"48 filters: 3 parts for 4 threads", 1, 32, 6, 6, 48, 3, 1, 0, "Relu", 0},
        {"16 filters: one part", 1, 16, 6, 6, 16, 3, 1, 0, NULL, 0},
        {"a batch of 2, image by image in each part", 2, 32, 6, 6, 80, 3, 1, 1, "Relu", 0},
        {"a fused 2x2 max pool on uneven parts, B and Z", 1, 32, 8, 10, 80, 3, 1, 1, "Relu", 1},
    };
    ses_drv_device_t *dev[2] = {NULL, NULL};
    static const char *const modes[2] = {"auto", "off"};

    SKIP_WITHOUT_NCHWC_CONV(f);
    harness_set_option(&f->ctx, "driver.cpu.threads", "4");
    for (int i = 0; i < 2; i++) {
        harness_set_option(&f->ctx, "driver.cpu.conv_slices", modes[i]);
        if (f->api->open_device(f->driver, 0, &dev[i]) != SES_DRV_OK)
            fail_msg("open_device (conv_slices %s): %s", modes[i], f->ctx.base.message);
    }
    harness_set_option(&f->ctx, "driver.cpu.conv_slices", NULL);
    harness_set_option(&f->ctx, "driver.cpu.threads", "2");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_slices_case(f, dev[0], dev[1], &cases[i]);
    f->api->close_device(dev[0]);
    f->api->close_device(dev[1]);
}

static void nchwc_pools_refuse_what_they_cannot_run(void **state) {
    CONV_ATTRS_DECL;
    fixture_t *f = *state;
    noderun_t r;
    targ_t x = tensor(NULL, 5, 1, 2, 8, 8, 16), y = tensor(NULL, 5, 1, 2, 8, 8, 16);
    const test_attr_t order1[] = {
        A_INTS("kernel_shape", 3, 3), A_INTS("strides", 1, 1),   A_INTS("dilations", 1, 1),
        A_INTS("pads", 1, 1, 1, 1),   A_INT("storage_order", 1), A_END,
    };
    const test_attr_t pool3d[] = {
        A_INTS("kernel_shape", 3, 3, 3),
        A_INTS("strides", 1, 1, 1),
        A_INTS("dilations", 1, 1, 1),
        A_INTS("pads", 1, 1, 1, 1, 1, 1),
        A_END,
    };
    const test_attr_t no_dilations[] = {
        A_INTS("kernel_shape", 3, 3),
        A_INTS("strides", 1, 1),
        A_INTS("pads", 1, 1, 1, 1),
        A_END,
    };

    node_describe(&r, f, f->device, "NchwcMaxPool", "f32->f32", order1, 1, &x, y);
    expect_refused(f, &r, "storage_order is 1");
    /* MaxPool's Indices output. */
    node_describe(&r, f, f->device, "NchwcMaxPool", "f32->f32", conv_attrs, 1, &x, y);
    r.node.n_outputs = 2;
    expect_refused(f, &r, "2 outputs; only one, Y, is supported (no Indices)");
    /* Plain X. */
    targ_t x4 = tensor(NULL, 4, 1, 32, 8, 8);
    node_describe(&r, f, f->device, "NchwcAveragePool", "f32->f32", conv_attrs, 1, &x4, y);
    expect_refused(f, &r, "X is [1,32,8,8]");
    /* Blocks of 8. */
    targ_t x8 = tensor(NULL, 5, 1, 4, 8, 8, 8), y8 = tensor(NULL, 5, 1, 4, 8, 8, 8);
    node_describe(&r, f, f->device, "NchwcMaxPool", "f32->f32", conv_attrs, 1, &x8, y8);
    expect_refused(f, &r, "X is [1,4,8,8,8]");
    /* A 3-D window. */
    node_describe(&r, f, f->device, "NchwcMaxPool", "f32->f32", pool3d, 1, &x, y);
    expect_refused(f, &r, "kernel_shape has 3 entries, not 2: 2-D pools only");
    /* A window the host did not normalize. */
    node_describe(&r, f, f->device, "NchwcAveragePool", "f32->f32", no_dilations, 1, &x, y);
    expect_refused(f, &r, "dilations");
    /* f64. */
    targ_t x64 = x, y64 = y;
    x64.dtype = y64.dtype = F64;
    node_describe(&r, f, f->device, "NchwcAveragePool", "f32->f32", conv_attrs, 1, &x64, y64);
    expect_refused(f, &r, "f64");
    /* The global pools want Y [N, Cb, 1, 1, 16]. */
    node_describe(&r, f, f->device, "NchwcGlobalAveragePool", "f32->f32", NULL, 1, &x, y);
    expect_refused(f, &r, "Y is [1,2,8,8,16]: expected [N, Cb, 1, 1, 16]");
    node_describe(&r, f, f->device, "NchwcGlobalMaxPool", "f32->f32", NULL, 1, &x4,
                  tensor(NULL, 5, 1, 2, 1, 1, 16));
    expect_refused(f, &r, "X is [1,32,8,8]");
    /* The reorder wants Y [N, Cb * 16, H, W]. */
    node_describe(&r, f, f->device, "NchwcReorderOutput", "f32->f32", NULL, 1, &x,
                  tensor(NULL, 4, 1, 16, 8, 8));
    expect_refused(f, &r, "Y is [1,16,8,8]");
    /* Good nodes pass. */
    node_describe(&r, f, f->device, "NchwcReorderOutput", "f32->f32", NULL, 1, &x,
                  tensor(NULL, 4, 1, 32, 8, 8));
    assert_int_equal(r.k->supports_node(f->device, &r.node), SES_DRV_OK);
    node_describe(&r, f, f->device, "NchwcGlobalMaxPool", "f32->f32", NULL, 1, &x,
                  tensor(NULL, 5, 1, 2, 1, 1, 16));
    assert_int_equal(r.k->supports_node(f->device, &r.node), SES_DRV_OK);
}

/* A host that computes without asking supports_node still gets an error naming the node and
 * both shapes, and nothing is written out of bounds. */
static void nchwc_kernels_check_shapes_at_compute(void **state) {
    CONV_ATTRS_DECL;
    fixture_t *f = *state;
    const targ_t x = tensor(NULL, 5, 1, 2, 8, 8, 16);
    noderun_t r;

    node_describe(&r, f, f->device, "NchwcMaxPool", "f32->f32", conv_attrs, 1, &x,
                  tensor(NULL, 5, 1, 3, 8, 8, 16));
    node_open(&r, 0);
    assert_int_equal(node_compute(&r, NULL), SES_DRV_INVALID_ARGUMENT);
    node_close(&r);
    assert_message_contains(f, "NchwcMaxPool \"n1\"");
    assert_message_contains(f, "Y is [1,3,8,8,16]");

    node_describe(&r, f, f->device, "NchwcReorderOutput", "f32->f32", NULL, 1, &x,
                  tensor(NULL, 4, 1, 16, 8, 8));
    node_open(&r, 0);
    assert_int_equal(node_compute(&r, NULL), SES_DRV_INVALID_ARGUMENT);
    node_close(&r);
    assert_message_contains(f, "NchwcReorderOutput \"n1\"");

    const targ_t in[2] = {x, tensor(NULL, 4, 16, 32, 3, 3)};
    node_describe(&r, f, f->device, "NchwcConv", "f32,f32->f32", conv_attrs, 2, in,
                  tensor(NULL, 4, 1, 16, 8, 8));
    node_open(&r, 0);
    assert_int_equal(node_compute(&r, NULL), SES_DRV_INVALID_ARGUMENT);
    node_close(&r);
    assert_message_contains(f, "NchwcConv \"n1\"");
    assert_message_contains(f, "Y is [1,16,8,8]");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_table_offers_the_six_ops_at_f32_with_supports_node,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(nchwc_conv_matches_fused_conv, setup, teardown),
        cmocka_unit_test_setup_teardown(nchwc_conv_caches_constant_weights_and_rereads_others,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(nchwc_conv_with_a_fused_pool_matches_conv_then_pool, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nchwc_conv_checks_its_fused_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(nchwc_max_pool_matches_max_pool_bit_for_bit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nchwc_max_pool_keeps_nan_as_max_pool_does, setup, teardown),
        cmocka_unit_test_setup_teardown(nchwc_average_pool_matches_average_pool_bit_for_bit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nchwc_global_pools_match_reduce_max_and_mean, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nchwc_reorder_output_matches_the_reference, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nchwc_conv_refuses_what_it_cannot_run, setup, teardown),
        cmocka_unit_test_setup_teardown(nchwc_conv_is_refused_when_driver_cpu_conv_is_im2col, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nchwc_conv_takes_winograd_unless_the_option_says_off, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nchwc_conv_by_channel_slices_matches_the_whole, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nchwc_pools_refuse_what_they_cannot_run, setup, teardown),
        cmocka_unit_test_setup_teardown(nchwc_kernels_check_shapes_at_compute, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
