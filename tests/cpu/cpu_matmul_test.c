/*
 * Unit tests of the CPU driver's oneDNN matmul path for constant weights (plugins/cpu/
 * cpu_matmul.c, cpu_dnnl.c), driven through the ABI as the host drives them: f32 Gemm (both
 * transposes, alpha, beta, C of each broadcast), FusedGemm with each activation and MatMul
 * (2-D, and 3-D A stacked against 2-D B) at batch sizes 1, 7 and 128, each run with its weights
 * (input 1) marked constant (DRV-85: the matmul path, where oneDNN is there, from 2 rows of A on)
 * and not (the sgemm path), both against a reference summed in double. Then the constant node's
 * weights are kept: new bytes at the same address are not read (the DRV-85 promise is what lets the
 * driver keep them), weights at a new address are; the variable node reads new values at every
 * launch. Run on a pool of 1 thread, and of 2 (where only GEMMs of 2^26 multiply-adds take the
 * matmul path: large_gemms_match).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int onednn; /* f32 GEMMs go to oneDNN here (the device's name says "gemm: onednn") */
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
static int setup_threads(void **state, const char *threads) {
    fixture_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    *state = f;
    harness_set_option(&f->ctx, "driver.cpu.threads", threads);
    harness_cpu_t c;
    const int opened = harness_cpu_open(&c, SES_CPU_DRIVER_PATH, &f->ctx);
    f->lib = c.lib, f->api = c.api, f->driver = c.driver, f->device = c.device;
    if (opened != 0)
        goto fail;
    ses_drv_device_desc_t desc;
    uint32_t count = 1;
    memset(&desc, 0, sizeof desc);
    desc.struct_size = sizeof desc;
    f->onednn = f->api->enumerate_devices(f->driver, &count, &desc) == SES_DRV_OK && desc.name &&
                strstr(desc.name, "gemm: onednn") != NULL;
    if (!f->onednn)
        print_message("f32 GEMMs do not go to oneDNN here: the matmul path is not checked\n");
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

static const ses_drv_kernel_t *find_kernel(fixture_t *f, const char *op, const char *sig) {
    return node_find_kernel(f->api, f->device, op, sig);
}

/* Describes the node (not yet any buffer): the shared harness's, with this fixture's kernel. */
static void node_describe(noderun_t *r, fixture_t *f, ses_drv_device_t *device, const char *op,
                          const char *sig, const test_attr_t *attrs, uint32_t n_in,
                          const targ_t *in, targ_t out) {
    node_describe_kernel(r, f->api, &f->ctx.base, sizeof f->ctx.base, device,
                         find_kernel(f, op, sig), op, attrs, n_in, in, out);
}

/* ---------------------------------------------------------------------------------------------
 * Data and the reference
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

static void expect_close(const char *label, const double *want, const double *scale,
                         const float *got, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double err = fabs(want[i] - (double)got[i]);
        if (!(err <= 1e-5 * scale[i] + 1e-6))
            fail_msg("%s: element %zu: want %.9g, got %.9g (scale %.3g)", label, i, want[i],
                     (double)got[i], scale[i]);
    }
}

/* ---------------------------------------------------------------------------------------------
 * The cases
 * ------------------------------------------------------------------------------------------- */

enum { C_NONE, C_ROW, C_FULL, C_COL, C_ONE };

typedef struct gemm_case {
    const char *op; /* Gemm, FusedGemm or MatMul */
    int m, n, k;
    int trans_a, trans_b;
    double alpha, beta;
    int c;           /* enum above: none, [N], [M, N], [M, 1], [1] */
    const char *act; /* FusedGemm's activation */
    double p0, p1;   /* its parameters (LeakyRelu: p0; Clip: p0, p1) */
    int stacked;     /* MatMul: A is [2, M, K] */
} gemm_case_t;

static double act_of(const gemm_case_t *c, double v) {
    if (!c->act || strcmp(c->act, "Identity") == 0)
        return v;
    if (strcmp(c->act, "Relu") == 0)
        return v > 0 ? v : 0;
    if (strcmp(c->act, "LeakyRelu") == 0)
        return v > 0 ? v : c->p0 * v;
    if (strcmp(c->act, "Sigmoid") == 0)
        return 1 / (1 + exp(-v));
    if (strcmp(c->act, "Tanh") == 0)
        return tanh(v);
    return v < c->p0 ? c->p0 : v > c->p1 ? c->p1 : v; /* Clip */
}

/* The reference in double, and for each element the sum of its terms' magnitudes (the scale
 * of its rounding error). M counts the stacked rows. */
static void reference(const gemm_case_t *c, int m, const float *a, const float *b, const float *cv,
                      double *y, double *scale) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < c->n; j++) {
            double s = 0, mag = 0;
            for (int p = 0; p < c->k; p++) {
                const double av = c->trans_a ? a[(size_t)p * m + i] : a[(size_t)i * c->k + p];
                const double bv = c->trans_b ? b[(size_t)j * c->k + p] : b[(size_t)p * c->n + j];
                s += av * bv;
                mag += fabs(av * bv);
            }
            s *= c->alpha;
            mag *= fabs(c->alpha);
            if (c->c != C_NONE) {
                const double cij = c->c == C_ROW    ? cv[j]
                                   : c->c == C_FULL ? cv[(size_t)i * c->n + j]
                                   : c->c == C_COL  ? cv[i]
                                                    : cv[0];
                s += c->beta * cij;
                mag += fabs(c->beta * cij);
            }
            y[(size_t)i * c->n + j] = act_of(c, s);
            scale[(size_t)i * c->n + j] = mag + 1.0;
        }
}

/* Checks one case with the weights constant (@p constant) or not. */
static void check_case(fixture_t *f, const gemm_case_t *c, int constant) {
    const int matmul = strcmp(c->op, "MatMul") == 0;
    const int rows = c->m * (c->stacked ? 2 : 1);
    const size_t a_n = (size_t)rows * c->k, b_n = (size_t)c->k * c->n, y_n = (size_t)rows * c->n;
    size_t c_n = 0;
    targ_t in[3];
    uint32_t n_in = 2;
    char label[160];

    snprintf(label, sizeof label, "%s m %d n %d k %d tA %d tB %d alpha %g beta %g C %d %s%s%s",
             c->op, c->m, c->n, c->k, c->trans_a, c->trans_b, c->alpha, c->beta, c->c,
             c->act ? c->act : "", c->stacked ? " stacked" : "",
             constant ? " constant" : " variable");
    float *a = random_values(a_n), *b = random_values(b_n), *b2 = random_values(b_n);
    float *cv = NULL;
    if (c->stacked)
        in[0] = tensor(a, 3, 2, c->m, c->k);
    else
        in[0] = c->trans_a ? tensor(a, 2, c->k, c->m) : tensor(a, 2, c->m, c->k);
    in[1] = c->trans_b ? tensor(b, 2, c->n, c->k) : tensor(b, 2, c->k, c->n);
    if (c->c != C_NONE) {
        c_n = c->c == C_ROW    ? (size_t)c->n
              : c->c == C_FULL ? y_n
              : c->c == C_COL  ? (size_t)rows
                               : 1;
        cv = random_values(c_n);
        in[2] = c->c == C_ROW    ? tensor(cv, 1, c->n)
                : c->c == C_FULL ? tensor(cv, 2, c->m, c->n)
                : c->c == C_COL  ? tensor(cv, 2, c->m, 1)
                                 : tensor(cv, 1, 1);
        n_in = 3;
    }
    const targ_t out = c->stacked ? tensor(NULL, 3, 2, c->m, c->n) : tensor(NULL, 2, c->m, c->n);
    const char *sig = n_in == 3 ? "f32,f32,f32->f32" : "f32,f32->f32";
    const double lp[2] = {c->p0, c->p1};
    test_attr_t attrs[8];
    int na = 0;
    attrs[na++] = (test_attr_t)A_INT("transA", c->trans_a);
    attrs[na++] = (test_attr_t)A_INT("transB", c->trans_b);
    attrs[na++] = (test_attr_t)A_FLOAT("alpha", c->alpha);
    attrs[na++] = (test_attr_t)A_FLOAT("beta", c->beta);
    if (c->act) {
        attrs[na++] = (test_attr_t)A_STR("activation", c->act);
        if (strcmp(c->act, "LeakyRelu") == 0 || strcmp(c->act, "Clip") == 0) {
            attrs[na] = (test_attr_t){.name = "activation_params",
                                      .type = SES_DRV_ATTR_FLOATS,
                                      .floats = lp,
                                      .n = strcmp(c->act, "Clip") == 0 ? 2 : 1};
            na++;
        }
    }
    attrs[na] = (test_attr_t)A_END;

    double *want = malloc(y_n * sizeof *want), *scale = malloc(y_n * sizeof *scale);
    float *got = new_floats(y_n), *again = new_floats(y_n);
    assert_non_null(want);
    assert_non_null(scale);
    noderun_t r;
    node_describe(&r, f, f->device, c->op, sig, matmul ? NULL : attrs, n_in, in, out);
    if (r.k->supports_node)
        assert_int_equal(r.k->supports_node(f->device, &r.node), SES_DRV_OK);
    node_open(&r, constant ? 2u : 0u);
    if (node_compute(&r, got) != SES_DRV_OK)
        fail_msg("%s: compute failed: %s", label, f->ctx.base.message);
    reference(c, rows, a, b, cv, want, scale);
    expect_close(label, want, scale, got, y_n);

    /* New bytes at the weights' address: read by the variable node; the constant node's copy
     * is kept where the matmul path took it (oneDNN there and the GEMM large enough). */
    node_set_input(&r, 1, b2);
    if (node_compute(&r, again) != SES_DRV_OK)
        fail_msg("%s: second compute failed: %s", label, f->ctx.base.message);
    /* The driver's rule (cpu_matmul.c): at least 2 rows and 2^18 multiply-adds, and on a pool
     * of several threads 2^26 (OpenMP's team), or column slices on the pool: at least two, of
     * 16 columns and 2^18 multiply-adds each, dividing n. */
    const double macs = (double)rows * c->n * c->k;
    const int threads = atoi(harness_option(&f->ctx, "driver.cpu.threads"));
    int slices = threads;
    if ((double)slices > macs / (double)(1u << 18))
        slices = (int)(macs / (double)(1u << 18));
    if (slices > c->n / 16)
        slices = c->n / 16;
    while (slices > 1 && c->n % slices != 0)
        slices--;
    const int cached = constant && f->onednn && rows >= 2 && macs >= (double)(1u << 18) &&
                       (threads == 1 || macs >= (double)(1u << 26) || slices >= 2);
    if (cached) {
        if (memcmp(got, again, y_n * sizeof *got) != 0)
            fail_msg("%s: the constant weights were read again", label);
    } else {
        reference(c, rows, a, b2, cv, want, scale);
        expect_close(label, want, scale, again, y_n);
    }
    /* Weights at another address: read, constant or not. */
    ses_drv_buffer_t *other = NULL, *first = r.in_buf[1];
    assert_int_equal(f->api->alloc(f->device, b_n * sizeof(float), SES_DRV_MEM_DEVICE, &other),
                     SES_DRV_OK);
    assert_int_equal(f->api->copy_h2d(f->device, NULL, b2, other, 0, b_n * sizeof(float)),
                     SES_DRV_OK);
    r.in_buf[1] = other;
    if (node_compute(&r, again) != SES_DRV_OK)
        fail_msg("%s: third compute failed: %s", label, f->ctx.base.message);
    reference(c, rows, a, b2, cv, want, scale);
    expect_close(label, want, scale, again, y_n);
    r.in_buf[1] = first;
    f->api->free(f->device, other);
    node_close(&r);
    free(want);
    free(scale);
    free(got);
    free(again);
    free(a);
    free(b);
    free(b2);
    free(cv);
}

static void check_both(fixture_t *f, const gemm_case_t *c) {
    check_case(f, c, 1);
    check_case(f, c, 0);
}

/* Shapes of at least 2^22 multiply-adds at batch m (the matmul path takes 2^18 and more). */
static void shape_for(int m, int *n, int *k) {
    if (m == 1) {
        *n = 2048;
        *k = 2048;
    } else if (m == 7) {
        *n = 800;
        *k = 768;
    } else {
        *n = 160;
        *k = 256;
    }
}

static const int batches[] = {1, 7, 128};

static void gemm_with_transposes_alpha_beta_and_c_matches(void **state) {
    fixture_t *f = *state;
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
        gemm_case_t c = {.op = "Gemm", .m = batches[i], .alpha = 1, .beta = 1};
        shape_for(c.m, &c.n, &c.k);
        c.c = C_ROW; /* bias, the usual ONNX Gemm */
        check_both(f, &c);
        c.trans_b = 1;
        check_both(f, &c);
        c.trans_a = 1, c.trans_b = 0, c.alpha = 0.5, c.c = C_NONE;
        check_both(f, &c);
        c.trans_b = 1, c.alpha = 1, c.beta = 0.25, c.c = C_FULL;
        check_both(f, &c);
        c.trans_a = 0, c.alpha = 2, c.beta = 0.5, c.c = C_COL;
        check_both(f, &c);
        c.alpha = 0.5, c.beta = 1, c.c = C_ROW; /* a bias with alpha: the sum post-op */
        check_both(f, &c);
        c.trans_b = 0, c.alpha = 1, c.beta = 1, c.c = C_ONE;
        check_both(f, &c);
        c.beta = 0, c.c = C_ROW; /* C not read */
        check_both(f, &c);
    }
}

static void fused_gemm_with_each_activation_matches(void **state) {
    fixture_t *f = *state;
    static const struct {
        const char *act;
        double p0, p1;
    } acts[] = {{"Identity", 0, 0}, {"Relu", 0, 0}, {"LeakyRelu", 0.1, 0},
                {"Sigmoid", 0, 0},  {"Tanh", 0, 0}, {"Clip", -0.5, 0.75}};
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++)
        for (size_t j = 0; j < sizeof acts / sizeof acts[0]; j++) {
            gemm_case_t c = {.op = "FusedGemm",
                             .m = batches[i],
                             .trans_b = 1,
                             .alpha = 1,
                             .beta = 1,
                             .c = C_ROW,
                             .act = acts[j].act,
                             .p0 = acts[j].p0,
                             .p1 = acts[j].p1};
            shape_for(c.m, &c.n, &c.k);
            check_both(f, &c);
            /* Without C, and with alpha and a full C (the sum post-op before the activation). */
            c.c = C_NONE;
            check_both(f, &c);
            c.alpha = 0.5, c.beta = 2, c.c = C_FULL;
            check_both(f, &c);
        }
}

static void matmul_2d_and_stacked_matches(void **state) {
    fixture_t *f = *state;
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
        gemm_case_t c = {.op = "MatMul", .m = batches[i], .alpha = 1, .beta = 1};
        shape_for(c.m, &c.n, &c.k);
        check_both(f, &c);
        c.stacked = 1;
        check_both(f, &c);
    }
}

/* GEMMs of 2^26 multiply-adds, which take the matmul path on two threads too (on oneDNN's
 * OpenMP team). */
static void large_gemms_match(void **state) {
    fixture_t *f = *state;
    gemm_case_t c = {.op = "Gemm",
                     .m = 128,
                     .n = 512,
                     .k = 1024,
                     .trans_b = 1,
                     .alpha = 1,
                     .beta = 1,
                     .c = C_ROW};
    check_both(f, &c);
    c.op = "FusedGemm", c.act = "Relu";
    check_both(f, &c);
    c.act = "Sigmoid", c.alpha = 0.5, c.c = C_FULL;
    check_both(f, &c);
    gemm_case_t mm = {.op = "MatMul", .m = 128, .n = 512, .k = 1024, .alpha = 1, .beta = 1};
    check_both(f, &mm);
}

/* Threads of this process (entries of /proc/self/task). */
static int count_threads(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/*
 * On four threads, the MLP 784-256-10's first layer at batch 64 (12.8M multiply-adds) runs as
 * four column slices on the pool's threads, each on its thread alone: the values match, and no
 * thread is started for it. (oneDNN's GEMM-based matmul asks OpenMP for the calling thread's
 * count at every run; each pool thread once started a team of its own, 16 teams of 16 on a
 * 16-core host.)
 */
static void sliced_gemms_start_no_threads(void **state) {
    fixture_t *f = *state;
    gemm_case_t c = {.op = "FusedGemm",
                     .m = 64,
                     .n = 256,
                     .k = 784,
                     .trans_b = 1,
                     .alpha = 1,
                     .beta = 1,
                     .c = C_ROW,
                     .act = "Sigmoid"};
    const int before = count_threads();
    check_both(f, &c);
    c.op = "MatMul", c.act = NULL, c.trans_b = 0, c.c = C_NONE;
    check_both(f, &c);
    const int after = count_threads();
    if (f->onednn && after > before)
        fail_msg("%d threads before the sliced GEMMs, %d after", before, after);
}

static int setup1(void **state) { return setup_threads(state, "1"); }

static int setup4(void **state) { return setup_threads(state, "4"); }

static int setup2(void **state) { return setup_threads(state, "2"); }

int main(void) {
    const struct CMUnitTest one[] = {
        cmocka_unit_test(gemm_with_transposes_alpha_beta_and_c_matches),
        cmocka_unit_test(fused_gemm_with_each_activation_matches),
        cmocka_unit_test(matmul_2d_and_stacked_matches),
    };
    const struct CMUnitTest two[] = {
        cmocka_unit_test(gemm_with_transposes_alpha_beta_and_c_matches),
        cmocka_unit_test(fused_gemm_with_each_activation_matches),
        cmocka_unit_test(matmul_2d_and_stacked_matches),
        cmocka_unit_test(large_gemms_match),
    };
    int failed = cmocka_run_group_tests_name("one thread", one, setup1, teardown);
    failed += cmocka_run_group_tests_name("two threads", two, setup2, teardown);
    const struct CMUnitTest four[] = {
        cmocka_unit_test(sliced_gemms_start_no_threads),
    };
    failed += cmocka_run_group_tests_name("four threads", four, setup4, teardown);
    return failed;
}
