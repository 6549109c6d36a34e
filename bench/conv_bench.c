/*
 * session-conv-bench: the CPU driver's convolution kernels, one node per plan, timed in process.
 *
 *   session-conv-bench [CASE]
 *
 * runs, on f32 and with a bias, Conv 3x3 pads 1 stride 1 on [64, 1, 28, 28] to 32 channels and
 * on [64, 32, 14, 14] to 64 channels (the two convolutions of the ONNX CNN of
 * bench/gpu/make_models.py at batch 64), and for each ConvGrad of X (dX) and of W (dW) on a dy
 * of ones, and prints the median of 21 runs of each: "bench: <name>: <value> ms". With CASE,
 * only the cases whose name contains it. The thread count is SESSION_DRIVER_CPU_THREADS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timing.h"

#include <session/session.h>
#include <session/train.h>

#define RUNS 21

static void die(const char *what) {
    fprintf(stderr, "session-conv-bench: %s: %s\n", what, ses_last_error());
    exit(1);
}

typedef struct conv_case {
    const char *name;
    int64_t n, c, hw, m;
    int grad; /* 0: Conv; 1: dX; 2: dW */
} conv_case_t;

static ses_tensor_t *random_tensor(size_t rank, const int64_t *dims) {
    ses_tensor_t *t = NULL;
    if (ses_tensor_create(SES_F32, rank, dims, &t) != SES_OK)
        die("tensor");
    for (size_t i = 0; i < ses_tensor_count(t); i++)
        ((float *)ses_tensor_data(t))[i] = (float)(rand() % 1000) / 1000.0f - 0.5f;
    return t;
}

/* Median milliseconds per run of one Conv node (or the gradient of one of its inputs). */
static double bench_conv(const conv_case_t *c) {
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t in[3], y, target;
    const int64_t xd[4] = {c->n, c->c, c->hw, c->hw}, wd[4] = {c->m, c->c, 3, 3}, bd[1] = {c->m};
    const int64_t k[2] = {3, 3}, st[2] = {1, 1}, p[4] = {1, 1, 1, 1};
    ses_attr_t a[3] = {ses_attr_ints("kernel_shape", k, 2), ses_attr_ints("strides", st, 2),
                       ses_attr_ints("pads", p, 4)};
    const char *devices[] = {"cpu"};
    ses_tensor_t *feeds[3] = {random_tensor(4, xd), random_tensor(4, wd), random_tensor(1, bd)};
    double t[RUNS];

    if (ses_graph_create(&g) != SES_OK ||
        ses_graph_placeholder(g, "x", SES_F32, 4, xd, &in[0]) != SES_OK ||
        ses_graph_placeholder(g, "w", SES_F32, 4, wd, &in[1]) != SES_OK ||
        ses_graph_placeholder(g, "b", SES_F32, 1, bd, &in[2]) != SES_OK ||
        ses_graph_op(g, "Conv", "conv", in, 3, a, 3, &y) != SES_OK)
        die(c->name);
    target = y;
    if (c->grad) {
        ses_edge_t d;
        if (ses_gradients(g, NULL, &y, 1, &in[c->grad - 1], 1, NULL, &d) != SES_OK)
            die(c->name);
        target = d;
    }
    if (ses_session_open(g, devices, 1, NULL, &s) != SES_OK ||
        ses_session_compile(s, &target, 1, in, 3, NULL, 0, &plan) != SES_OK)
        die(c->name);
    for (int r = -3; r < RUNS; r++) {
        ses_tensor_t *out = NULL;
        double t0 = bench_now();
        if (ses_plan_run(plan, feeds, 3, &out) != SES_OK)
            die(c->name);
        if (r >= 0)
            t[r] = bench_now() - t0;
        ses_tensor_release(out);
    }
    ses_session_destroy(s);
    ses_graph_release(g);
    for (int i = 0; i < 3; i++)
        ses_tensor_release(feeds[i]);
    return bench_median(t, RUNS) * 1e3;
}

int main(int argc, char **argv) {
    static const conv_case_t cases[] = {
        {"conv_3x3_p1_64x1x28x28_to_32", 64, 1, 28, 32, 0},
        {"conv_3x3_p1_64x32x14x14_to_64", 64, 32, 14, 64, 0},
        {"conv_3x3_p1_64x1x28x28_to_32_dx", 64, 1, 28, 32, 1},
        {"conv_3x3_p1_64x32x14x14_to_64_dx", 64, 32, 14, 64, 1},
        {"conv_3x3_p1_64x1x28x28_to_32_dw", 64, 1, 28, 32, 2},
        {"conv_3x3_p1_64x32x14x14_to_64_dw", 64, 32, 14, 64, 2},
    };

    if (argc > 2) {
        fprintf(stderr, "usage: session-conv-bench [CASE]\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (argc == 1 || strstr(cases[i].name, argv[1]))
            printf("bench: %s: %.3f ms\n", cases[i].name, bench_conv(&cases[i]));
    return 0;
}
