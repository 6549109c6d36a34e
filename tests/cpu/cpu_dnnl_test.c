/*
 * The CPU driver's oneDNN convolution (plugins/cpu/cpu_dnnl.c), called directly as the fused ops
 * call it: Y = act(conv(X, W) + B + Z) for each activation, with and without B and Z, against a
 * direct convolution in double written here; the cache rebuilt when the shapes change, and the
 * constant weights' copy kept for one address and redone for another. Skips, saying why, where
 * oneDNN cannot be loaded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_dnnl.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static uint64_t rng = 0x243F6A8885A308D3ull;

static float uniform(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)(2.0 * (double)(rng >> 11) / 9007199254740992.0 - 1.0);
}

static int setup(void **state) {
    char why[256];
    (void)state;
    if (cpu__dnnl_load(why, sizeof why) != SES_DRV_OK)
        printf("oneDNN is not usable here, its tests skip: %s\n", why);
    return 0;
}

#define SKIP_WITHOUT_DNNL()                      \
    do {                                         \
        char why_[256];                          \
        if (cpu__dnnl_load(why_, sizeof why_)) { \
            printf("skipped: %s\n", why_);       \
            skip();                              \
            return;                              \
        }                                        \
    } while (0)

static size_t count_of(const cpu__dnnl_conv_params_t *p, int what) {
    size_t n = (size_t)p->batch * (size_t)(what == 0 ? p->in_channels : p->out_channels);
    if (what == 2)
        n = (size_t)p->out_channels * (size_t)(p->in_channels / p->group);
    for (uint32_t i = 0; i < p->spatial; i++)
        n *= (size_t)(what == 0 ? p->in[i] : what == 1 ? p->out[i] : p->kernel[i]);
    return n;
}

static double activate(int act, double v, double alpha, double beta) {
    switch (act) {
        case CPU__DNNL_ACT_RELU:
            return v > 0 ? v : 0;
        case CPU__DNNL_ACT_LEAKY_RELU:
            return v > 0 ? v : alpha * v;
        case CPU__DNNL_ACT_SIGMOID:
            return 1 / (1 + exp(-v));
        case CPU__DNNL_ACT_TANH:
            return tanh(v);
        case CPU__DNNL_ACT_CLIP:
            return v < alpha ? alpha : v > beta ? beta : v;
        default:
            return v;
    }
}

/* The reference: each output position summed in double, every spatial dim padded to 3. */
static void direct(const cpu__dnnl_conv_params_t *p, const float *x, const float *w, const float *b,
                   const float *z, int act, double alpha, double beta, double *y) {
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1};
    int64_t d[3] = {1, 1, 1}, pb[3] = {0, 0, 0};
    for (uint32_t i = 0; i < p->spatial; i++) {
        in[i] = p->in[i], out[i] = p->out[i], k[i] = p->kernel[i], s[i] = p->strides[i];
        d[i] = p->dilations[i], pb[i] = p->pads_begin[i];
    }
    const int64_t cg = p->in_channels / p->group, mg = p->out_channels / p->group;
    size_t o = 0;
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t m = 0; m < p->out_channels; m++)
            for (int64_t a = 0; a < out[0]; a++)
                for (int64_t bb = 0; bb < out[1]; bb++)
                    for (int64_t c = 0; c < out[2]; c++, o++) {
                        double acc = b ? b[m] : 0;
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t k0 = 0; k0 < k[0]; k0++)
                                for (int64_t k1 = 0; k1 < k[1]; k1++)
                                    for (int64_t k2 = 0; k2 < k[2]; k2++) {
                                        int64_t i0 = a * s[0] - pb[0] + k0 * d[0];
                                        int64_t i1 = bb * s[1] - pb[1] + k1 * d[1];
                                        int64_t i2 = c * s[2] - pb[2] + k2 * d[2];
                                        if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] ||
                                            i2 < 0 || i2 >= in[2])
                                            continue;
                                        int64_t xc = (m / mg) * cg + ci;
                                        acc +=
                                            (double)x[(((n * p->in_channels + xc) * in[0] + i0) *
                                                           in[1] +
                                                       i1) *
                                                          in[2] +
                                                      i2] *
                                            (double)
                                                w[(((m * cg + ci) * k[0] + k0) * k[1] + k1) * k[2] +
                                                  k2];
                                    }
                        if (z)
                            acc += z[o];
                        y[o] = activate(act, acc, alpha, beta);
                    }
}

static cpu__dnnl_conv_params_t params(uint32_t spatial, int64_t n, int64_t c, int64_t m,
                                      int64_t group, const int64_t *in, const int64_t *k,
                                      const int64_t *s, const int64_t *d, const int64_t *pb,
                                      const int64_t *pe) {
    cpu__dnnl_conv_params_t p;
    memset(&p, 0, sizeof p);
    p.spatial = spatial, p.batch = n, p.in_channels = c, p.out_channels = m, p.group = group;
    for (uint32_t i = 0; i < spatial; i++) {
        p.in[i] = in[i], p.kernel[i] = k[i], p.strides[i] = s[i], p.dilations[i] = d[i];
        p.pads_begin[i] = pb[i], p.pads_end[i] = pe[i];
        p.out[i] = (in[i] + pb[i] + pe[i] - (k[i] - 1) * d[i] - 1) / s[i] + 1;
    }
    return p;
}

/* Runs one case through @p cache and compares with the reference to 1e-4 relative. */
static void check(cpu__dnnl_conv_cache_t *cache, const char *label,
                  const cpu__dnnl_conv_params_t *p, int with_b, int with_z, int act, float alpha,
                  float beta) {
    const size_t nx = count_of(p, 0), ny = count_of(p, 1), nw = count_of(p, 2);
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *z = malloc(ny * sizeof *z);
    float *y = malloc(ny * sizeof *y), *b = malloc((size_t)p->out_channels * sizeof *b);
    double *want = malloc(ny * sizeof *want);
    char why[256] = "";

    assert_true(x && w && z && y && b && want);
    for (size_t i = 0; i < nx; i++)
        x[i] = uniform();
    for (size_t i = 0; i < nw; i++)
        w[i] = uniform();
    for (size_t i = 0; i < ny; i++)
        z[i] = uniform();
    for (int64_t i = 0; i < p->out_channels; i++)
        b[i] = uniform();
    direct(p, x, w, with_b ? b : NULL, with_z ? z : NULL, act, alpha, beta, want);
    int32_t st = cpu__dnnl_conv(cache, p, x, w, with_b ? b : NULL, with_z ? z : NULL, y, act, alpha,
                                beta, 2, 0, why, sizeof why);
    if (st != SES_DRV_OK)
        fail_msg("%s: status %d: %s", label, (int)st, why);
    for (size_t i = 0; i < ny; i++)
        if (!(fabs((double)y[i] - want[i]) <= 1e-4 * fmax(1.0, fabs(want[i]))))
            fail_msg("%s (act %d, b %d, z %d): element %zu: got %.9g, want %.9g", label, act,
                     with_b, with_z, i, (double)y[i], want[i]);
    free(x), free(w), free(z), free(y), free(b), free(want);
}

/* Every activation, with and without bias and Z, over 1-D, 2-D (grouped, depthwise, strided,
 * dilated, asymmetric pads) and 3-D convolutions. One cache runs them all: each change of
 * parameters rebuilds it. */
static void every_activation_with_and_without_bias_and_z_matches_a_direct_convolution(
    void **state) {
    static const struct {
        int act;
        float alpha, beta;
    } acts[] = {
        {CPU__DNNL_ACT_NONE, 0, 0},          {CPU__DNNL_ACT_RELU, 0, 0},
        {CPU__DNNL_ACT_LEAKY_RELU, 0.1f, 0}, {CPU__DNNL_ACT_SIGMOID, 0, 0},
        {CPU__DNNL_ACT_TANH, 0, 0},          {CPU__DNNL_ACT_CLIP, -0.5f, 0.75f},
    };
    const int64_t one[3] = {1, 1, 1}, two[3] = {2, 2, 2}, zero[3] = {0, 0, 0};
    const int64_t in2[2] = {9, 8}, k3[3] = {3, 3, 3}, s21[2] = {2, 1}, d12[2] = {1, 2};
    const int64_t pb2[2] = {1, 0}, pe2[2] = {2, 1}, in1[1] = {17}, k1[1] = {5};
    const int64_t in3[3] = {5, 6, 4}, k232[3] = {2, 3, 2}, pe3[3] = {0, 1, 1};
    cpu__dnnl_conv_params_t cases[] = {
        params(2, 2, 6, 8, 1, in2, k3, s21, d12, pb2, pe2),
        params(2, 2, 8, 12, 4, in2, k3, one, one, one, one),
        params(2, 3, 16, 16, 16, in2, k3, two, one, one, one), /* depthwise */
        params(1, 2, 5, 7, 1, in1, k1, two, two, two, one),
        params(3, 1, 3, 4, 1, in3, k232, one, one, zero, pe3),
    };
    const char *labels[] = {"2-D", "2-D group 4", "2-D depthwise", "1-D", "3-D"};
    cpu__dnnl_conv_cache_t *cache = NULL;

    (void)state;
    SKIP_WITHOUT_DNNL();
    assert_int_equal(cpu__dnnl_conv_cache_create(&cache), SES_DRV_OK);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
            for (int bz = 0; bz < 4; bz++)
                check(cache, labels[c], &cases[c], bz & 1, bz >> 1, acts[a].act, acts[a].alpha,
                      acts[a].beta);
    cpu__dnnl_conv_cache_destroy(cache);
}

/* Z may be Y itself (a sum computed in place). */
static void z_may_be_the_output_itself(void **state) {
    const int64_t in[2] = {6, 6}, k[2] = {3, 3}, one[2] = {1, 1};
    cpu__dnnl_conv_params_t p = params(2, 2, 4, 8, 1, in, k, one, one, one, one);
    const size_t nx = count_of(&p, 0), ny = count_of(&p, 1), nw = count_of(&p, 2);
    float x[2 * 4 * 36] = {0}, w[8 * 4 * 9] = {0}, y[2 * 8 * 36] = {0}, z[2 * 8 * 36] = {0};
    double want[2 * 8 * 36];
    cpu__dnnl_conv_cache_t *cache = NULL;
    char why[256];

    (void)state;
    SKIP_WITHOUT_DNNL();
    for (size_t i = 0; i < nx; i++)
        x[i] = uniform();
    for (size_t i = 0; i < nw; i++)
        w[i] = uniform();
    for (size_t i = 0; i < ny; i++)
        y[i] = z[i] = uniform();
    direct(&p, x, w, NULL, z, CPU__DNNL_ACT_RELU, 0, 0, want);
    assert_int_equal(cpu__dnnl_conv_cache_create(&cache), SES_DRV_OK);
    assert_int_equal(cpu__dnnl_conv(cache, &p, x, w, NULL, y, y, CPU__DNNL_ACT_RELU, 0, 0, 1, 0,
                                    why, sizeof why),
                     SES_DRV_OK);
    for (size_t i = 0; i < ny; i++)
        assert_true(fabs((double)y[i] - want[i]) <= 1e-4 * fmax(1.0, fabs(want[i])));
    cpu__dnnl_conv_cache_destroy(cache);
}

/* Constant weights are keyed by their address: another address takes the new ones, and without
 * the flag every call reads them, even at the same address. */
static void constant_weights_are_kept_per_address_and_others_read_every_call(void **state) {
    const int64_t in[2] = {8, 8}, k[2] = {3, 3}, one[2] = {1, 1};
    cpu__dnnl_conv_params_t p = params(2, 2, 16, 16, 1, in, k, one, one, one, one);
    const size_t nx = count_of(&p, 0), ny = count_of(&p, 1), nw = count_of(&p, 2);
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *w2 = malloc(nw * 4);
    float *y0 = malloc(ny * 4), *y1 = malloc(ny * 4);
    cpu__dnnl_conv_cache_t *cache = NULL;
    char why[256];

    (void)state;
    SKIP_WITHOUT_DNNL();
    for (size_t i = 0; i < nx; i++)
        x[i] = uniform();
    for (size_t i = 0; i < nw; i++)
        w[i] = uniform();
    assert_int_equal(cpu__dnnl_conv_cache_create(&cache), SES_DRV_OK);
    assert_int_equal(cpu__dnnl_conv(cache, &p, x, w, NULL, NULL, y0, 0, 0, 0, 1,
                                    CPU__DNNL_W_CONSTANT, why, sizeof why),
                     SES_DRV_OK);
    for (size_t i = 0; i < nw; i++)
        w2[i] = w[i] = 2 * w[i];
    /* Same address, flagged constant: the kept copy may be used (unless oneDNN chose the
     * plain layout, which needs no copy), so the result is not checked; the call must work. */
    assert_int_equal(cpu__dnnl_conv(cache, &p, x, w, NULL, NULL, y1, 0, 0, 0, 1,
                                    CPU__DNNL_W_CONSTANT, why, sizeof why),
                     SES_DRV_OK);
    /* Another address: reordered again, so doubled. */
    assert_int_equal(cpu__dnnl_conv(cache, &p, x, w2, NULL, NULL, y1, 0, 0, 0, 1,
                                    CPU__DNNL_W_CONSTANT, why, sizeof why),
                     SES_DRV_OK);
    for (size_t i = 0; i < ny; i++)
        assert_true(fabsf(y1[i] - 2 * y0[i]) <= 1e-4f * fmaxf(1.0f, fabsf(y1[i])));
    /* Not constant: the same address is read afresh (on 2 threads: the cache is rebuilt for
     * the new thread count, and the kept weights with it). */
    for (size_t i = 0; i < nw; i++)
        w2[i] = -w2[i];
    assert_int_equal(
        cpu__dnnl_conv(cache, &p, x, w2, NULL, NULL, y1, 0, 0, 0, 2, 0, why, sizeof why),
        SES_DRV_OK);
    for (size_t i = 0; i < ny; i++)
        assert_true(fabsf(y1[i] + 2 * y0[i]) <= 1e-4f * fmaxf(1.0f, fabsf(y1[i])));
    cpu__dnnl_conv_cache_destroy(cache);
    free(x), free(w), free(w2), free(y0), free(y1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_activation_with_and_without_bias_and_z_matches_a_direct_convolution),
        cmocka_unit_test(z_may_be_the_output_itself),
        cmocka_unit_test(constant_weights_are_kept_per_address_and_others_read_every_call),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
