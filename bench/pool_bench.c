/*
 * session-pool-bench: the CPU driver's pooling kernels, one node per plan, timed in process.
 *
 *   session-pool-bench [N C H W]
 *
 * runs MaxPool 2x2 stride 2, MaxPool 3x3 stride 1 pads 1, AveragePool 3x3 stride 2 pads 1
 * ceil_mode, and MaxPoolGrad of the first on an f32 [N, C, H, W] input (default [64, 32, 28, 28],
 * the first pool of the CNN at batch 64), and prints the median of 21 runs of each:
 * "bench: <name>: <value> ms". The thread count is SESSION_DRIVER_CPU_THREADS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timing.h"

#include <session/session.h>
#include <session/train.h>

#define RUNS 21

static void die(const char *what) {
    fprintf(stderr, "session-pool-bench: %s: %s\n", what, ses_last_error());
    exit(1);
}

typedef struct pool_case {
    const char *name, *op;
    int64_t k, s, p;
    int ceil_mode, grad;
} pool_case_t;

/* Median milliseconds per run of one pool node (or the gradient of its input) on @p x. */
static double bench_pool(const pool_case_t *c, ses_tensor_t *x) {
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t in, y, target;
    const int64_t k[2] = {c->k, c->k}, st[2] = {c->s, c->s}, p[4] = {c->p, c->p, c->p, c->p};
    ses_attr_t a[4] = {ses_attr_ints("kernel_shape", k, 2), ses_attr_ints("strides", st, 2),
                       ses_attr_ints("pads", p, 4), ses_attr_int("ceil_mode", c->ceil_mode)};
    const char *devices[] = {"cpu"};
    double t[RUNS];

    if (ses_graph_create(&g) != SES_OK ||
        ses_graph_placeholder(g, "x", SES_F32, 4, ses_tensor_dims(x), &in) != SES_OK ||
        ses_graph_op(g, c->op, "pool", &in, 1, a, 4, &y) != SES_OK)
        die(c->name);
    target = y;
    if (c->grad) {
        /* d(sum(pool(x)))/dx: the pool's gradient on a dy of ones (and the pool for its X). */
        ses_edge_t dx;
        if (ses_gradients(g, NULL, &y, 1, &in, 1, NULL, &dx) != SES_OK)
            die(c->name);
        target = dx;
    }
    if (ses_session_open(g, devices, 1, NULL, &s) != SES_OK ||
        ses_session_compile(s, &target, 1, &in, 1, NULL, 0, &plan) != SES_OK)
        die(c->name);
    for (int r = -3; r < RUNS; r++) {
        ses_tensor_t *out = NULL;
        double t0 = bench_now();
        if (ses_plan_run(plan, &x, 1, &out) != SES_OK)
            die(c->name);
        if (r >= 0)
            t[r] = bench_now() - t0;
        ses_tensor_release(out);
    }
    ses_session_destroy(s);
    ses_graph_release(g);
    return bench_median(t, RUNS) * 1e3;
}

int main(int argc, char **argv) {
    static const pool_case_t cases[] = {
        {"maxpool_2x2_s2", "MaxPool", 2, 2, 0, 0, 0},
        {"maxpool_3x3_s1_p1", "MaxPool", 3, 1, 1, 0, 0},
        {"averagepool_3x3_s2_p1_ceil", "AveragePool", 3, 2, 1, 1, 0},
        {"maxpool_2x2_s2_grad", "MaxPool", 2, 2, 0, 0, 1},
    };
    int64_t dims[4] = {64, 32, 28, 28};
    ses_tensor_t *x = NULL;

    if (argc == 5)
        for (int i = 0; i < 4; i++)
            dims[i] = strtoll(argv[i + 1], NULL, 10);
    else if (argc != 1) {
        fprintf(stderr, "usage: session-pool-bench [N C H W]\n");
        return 2;
    }
    if (ses_tensor_create(SES_F32, 4, dims, &x) != SES_OK)
        die("input");
    for (size_t i = 0; i < ses_tensor_count(x); i++)
        ((float *)ses_tensor_data(x))[i] = (float)(rand() % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        printf("bench: %s [%lld,%lld,%lld,%lld]: %.3f ms\n", cases[i].name, (long long)dims[0],
               (long long)dims[1], (long long)dims[2], (long long)dims[3],
               bench_pool(&cases[i], x));
    ses_tensor_release(x);
    return 0;
}
