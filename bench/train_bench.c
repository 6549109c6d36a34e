/*
 * session-train-bench: one training step of the seeds' network (784-256-10, sigmoid, softmax
 * cross-entropy, SGD lr 0.1) on random data, through a compiled plan, against the same step's
 * GEMMs called directly with cblas_sgemm — interleaved in one run, medians.
 *
 *   session-train-bench [--batch N] [--steps N] [--reps N] [--profile]
 *
 * Threads come from the environment, as for any libsession program: SESSION_DRIVER_CPU_THREADS
 * (the CPU driver's pool) and OPENBLAS_NUM_THREADS (GEMM). bench/train_bench.sh runs it at batch
 * 64 and 256 on 1 and 2 threads, side by side with PyTorch (bench/torch_train_step.py).
 *
 * A step is what a training loop does: feed a batch, run the forward pass, the loss (fetched),
 * the backward pass and the SGD updates. Its GEMMs, row-major, for batch B:
 *   forward   X[B,784]·W1[784,256]   H[B,256]·W2[256,10]
 *   backward  H^T·dZ2 → dW2[256,10]   dZ2·W2^T → dH[B,256]   X^T·dZ1 → dW1[784,256]
 * and one more that a step does not need, the input's gradient dZ1·W1^T → dX[B,784] (neither
 * libsession nor PyTorch computes it: nothing asks for the gradient of a placeholder).
 *
 * Output, one line per figure:
 *   bench: train_step_b<B>_t<T>: <steps/s> steps/s
 *   bench: train_step_b<B>_t<T>_us: <µs> us
 *   bench: train_gemm5_b<B>_t<T>_us: <µs> us             the 5 GEMMs of a step, isolated
 *   bench: train_gemm6_b<B>_t<T>_us: <µs> us             the same plus dX
 *   bench: train_step_b<B>_t<T>_vs_gemm5: <ratio> x      step time / the 5 GEMMs (1 = no overhead)
 *   bench: train_step_b<B>_t<T>_vs_gemm6: <ratio> x
 *
 * With --device NAME other than cpu the tag ends in the device ("b64_tdefault_gpu_0") and only
 * the step's lines are printed: the GEMM reference here is cblas_sgemm on the host, no lower bound
 * for a step on another device (at batch 4096 it took 18 ms on the H100 host against a 1.7 ms
 * step). The GPU's reference, the same GEMMs as cuBLAS calls on a stream of the CUDA driver, is
 * `cuda-bench ses_cuda.so --train-gemms B` (bench/gpu/cuda_bench.cu), which bench/gpu/run.sh
 * prints next to this program's step.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "bench_timing.h"

#include <session/session.h>
#include <session/train.h>

#define PIXELS 784
#define HIDDEN 256
#define CLASSES 10
#define MAX_REPS 101

static void die(const char *what) {
    fprintf(stderr, "session-train-bench: %s: %s\n", what, ses_last_error());
    exit(1);
}

static float random_unit(void) {
    return (float)rand() / (float)RAND_MAX;
}

static float *random_floats(size_t n) {
    float *p = malloc(n * sizeof *p);
    if (!p)
        die("out of memory");
    for (size_t i = 0; i < n; i++)
        p[i] = random_unit() - 0.5f;
    return p;
}

/* The GEMM-only step: the shapes and transpositions of the real one, on buffers of its sizes. */
typedef struct gemm_step {
    int b;
    float *x, *w1, *w2, *h, *z2, *dz2, *dw2, *dh, *dz1, *dw1, *dx;
} gemm_step_t;

static void gemm_step_init(gemm_step_t *g, int b) {
    g->b = b;
    g->x = random_floats((size_t)b * PIXELS);
    g->w1 = random_floats((size_t)PIXELS * HIDDEN);
    g->w2 = random_floats((size_t)HIDDEN * CLASSES);
    g->h = random_floats((size_t)b * HIDDEN);
    g->z2 = random_floats((size_t)b * CLASSES);
    g->dz2 = random_floats((size_t)b * CLASSES);
    g->dw2 = random_floats((size_t)HIDDEN * CLASSES);
    g->dh = random_floats((size_t)b * HIDDEN);
    g->dz1 = random_floats((size_t)b * HIDDEN);
    g->dw1 = random_floats((size_t)PIXELS * HIDDEN);
    g->dx = random_floats((size_t)b * PIXELS);
}

static void gemm_step_free(gemm_step_t *g) {
    float *all[] = {g->x, g->w1, g->w2, g->h, g->z2, g->dz2, g->dw2, g->dh, g->dz1, g->dw1, g->dx};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

static void gemm_step_run(const gemm_step_t *g, int with_dx) {
    const int b = g->b;

    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b, HIDDEN, PIXELS, 1.0f, g->x, PIXELS,
                g->w1, HIDDEN, 0.0f, g->h, HIDDEN);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b, CLASSES, HIDDEN, 1.0f, g->h, HIDDEN,
                g->w2, CLASSES, 0.0f, g->z2, CLASSES);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, HIDDEN, CLASSES, b, 1.0f, g->h, HIDDEN,
                g->dz2, CLASSES, 0.0f, g->dw2, CLASSES);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b, HIDDEN, CLASSES, 1.0f, g->dz2, CLASSES,
                g->w2, CLASSES, 0.0f, g->dh, HIDDEN);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, PIXELS, HIDDEN, b, 1.0f, g->x, PIXELS,
                g->dz1, HIDDEN, 0.0f, g->dw1, HIDDEN);
    if (with_dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b, PIXELS, HIDDEN, 1.0f, g->dz1,
                    HIDDEN, g->w1, HIDDEN, 0.0f, g->dx, PIXELS);
}

static long parse_positive(const char *option, const char *text) {
    char *end = NULL;
    long v;

    errno = 0;
    v = strtol(text, &end, 10);
    if (errno || !*text || *end || v <= 0 || v > 1000000) {
        fprintf(stderr, "session-train-bench: %s: '%s' is not a whole number from 1 to 1000000\n",
                option, text);
        exit(2);
    }
    return v;
}

/* Each step of the plan with its mean time per run, on stderr (the stdout lines stay the
 * bench's); profiled runs wait for each kernel, so the step time above is the profiled one. */
static void print_profile(ses_plan_t *plan) {
    size_t n = 0;
    ses_step_time_t *t;

    if (ses_plan_profile(plan, NULL, 0, &n) != SES_OK || !n || !(t = calloc(n, sizeof *t)))
        die("the profile");
    t[0].struct_size = sizeof *t;
    if (ses_plan_profile(plan, t, n, &n) != SES_OK)
        die("the profile");
    fprintf(stderr, "%-28s %-44s %10s\n", "op", "node", "us/run");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%-28s %-44s %10.1f\n", t[i].op, t[i].node,
                t[i].calls ? (double)t[i].total_ns / 1e3 / (double)t[i].calls : 0.0);
    free(t);
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"batch", required_argument, NULL, 'b'},
        {"steps", required_argument, NULL, 's'},
        {"reps", required_argument, NULL, 'r'},
        {"device", required_argument, NULL, 'd'},
        {"profile", no_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const int64_t x_dims[] = {-1, PIXELS}, y_dims[] = {-1};
    const char *devices[] = {"cpu"};
    const char *threads_env = getenv("SESSION_DRIVER_CPU_THREADS");
    long batch = 64, steps = 0, reps = 9;
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t x, y, hidden, logits, loss, fed[2];
    ses_node_t *train = NULL;
    ses_optimizer_t sgd;
    ses_tensor_t *xv = NULL, *yv = NULL, *feeds[2];
    gemm_step_t gs;
    double step_t[MAX_REPS], gemm5_t[MAX_REPS], gemm6_t[MAX_REPS];
    char tag[64];
    int c, host_reference, profile = 0;

    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': batch = parse_positive("--batch", optarg); break;
        case 's': steps = parse_positive("--steps", optarg); break;
        case 'r': reps = parse_positive("--reps", optarg); break;
        case 'd': devices[0] = optarg; break;
        case 'p':
            profile = 1;
            break;
        case 'h':
            printf(
                "Usage: session-train-bench [--batch N] [--steps N per rep] [--reps N] "
                "[--device NAME (default cpu)] [--profile]\n"
                "Threads: SESSION_DRIVER_CPU_THREADS and OPENBLAS_NUM_THREADS.\n"
                "--profile: the step's time per op and step of the plan (ses_plan_profile), "
                "on stderr.\n");
            return 0;
        default: fprintf(stderr, "Try 'session-train-bench --help'.\n"); return 2;
        }
    }
    if (reps > MAX_REPS) {
        fprintf(stderr, "session-train-bench: --reps: at most %d\n", MAX_REPS);
        return 2;
    }
    /* About 0.2 s per repetition of each side. */
    if (!steps)
        steps = batch <= 64 ? 200 : 60;
    snprintf(tag, sizeof tag, "b%ld_t%s", batch, threads_env ? threads_env : "default");
    if (strcmp(devices[0], "cpu") != 0) { /* "..._gpu_0" for --device gpu:0 */
        size_t used = strlen(tag);
        snprintf(tag + used, sizeof tag - used, "_%s", devices[0]);
        for (char *p = tag + used; *p; p++)
            if (*p == ':')
                *p = '_';
    }

    srand(1);
    ses_optimizer_sgd(&sgd, 0.1);
    if (ses_graph_create(&g) != SES_OK ||
        ses_graph_placeholder(g, "x", SES_F32, 2, x_dims, &x) != SES_OK ||
        ses_graph_placeholder(g, "labels", SES_I64, 1, y_dims, &y) != SES_OK ||
        ses_fc(g, "fc1", x, HIDDEN, SES_ACTIVATION_SIGMOID, 1, &hidden) != SES_OK ||
        ses_fc(g, "fc2", hidden, CLASSES, SES_ACTIVATION_NONE, 2, &logits) != SES_OK ||
        ses_softmax_cross_entropy(g, "loss", logits, y, SES_REDUCTION_MEAN, &loss) != SES_OK ||
        ses_minimize(g, "train", loss, &sgd, NULL, 0, &train) != SES_OK)
        die("building the network");
    {
        const int64_t xd[] = {batch, PIXELS}, yd[] = {batch};
        if (ses_tensor_create(SES_F32, 2, xd, &xv) != SES_OK ||
            ses_tensor_create(SES_I64, 1, yd, &yv) != SES_OK)
            die("batch tensors");
        for (long i = 0; i < batch * PIXELS; i++)
            ((float *)ses_tensor_data(xv))[i] = random_unit();
        for (long i = 0; i < batch; i++)
            ((int64_t *)ses_tensor_data(yv))[i] = rand() % CLASSES;
    }
    fed[0] = x;
    fed[1] = y;
    feeds[0] = xv;
    feeds[1] = yv;
    ses_session_options_t so;
    ses_session_options_init(&so);
    so.profile = (uint32_t)profile;
    if (ses_session_open(g, devices, 1, &so, &s) != SES_OK ||
        ses_session_compile(s, &loss, 1, fed, 2, &train, 1, &plan) != SES_OK)
        die("compiling the step");
    /* The host GEMMs are a reference only for a step on the host (see the top of this file). */
    host_reference = strcmp(devices[0], "cpu") == 0 || strncmp(devices[0], "cpu:", 4) == 0;
    if (host_reference)
        gemm_step_init(&gs, (int)batch);

    /* Warm up both sides: 200 steps (first runs allocate, OpenBLAS starts its threads). */
    for (int i = 0; i < 200; i++) {
        ses_tensor_t *out = NULL;
        if (ses_plan_run(plan, feeds, 2, &out) != SES_OK)
            die("a training step");
        ses_tensor_release(out);
        if (host_reference)
            gemm_step_run(&gs, 1);
    }
    /* Interleaved: a block of steps, a block of GEMM-only steps, with and without dX. */
    for (long r = 0; r < reps; r++) {
        double t0 = bench_now(), t1, t2, t3;
        for (long i = 0; i < steps; i++) {
            ses_tensor_t *out = NULL;
            if (ses_plan_run(plan, feeds, 2, &out) != SES_OK)
                die("a training step");
            ses_tensor_release(out);
        }
        t1 = t2 = t3 = bench_now();
        if (host_reference) {
            for (long i = 0; i < steps; i++)
                gemm_step_run(&gs, 0);
            t2 = bench_now();
            for (long i = 0; i < steps; i++)
                gemm_step_run(&gs, 1);
            t3 = bench_now();
        }
        step_t[r] = (t1 - t0) / (double)steps;
        gemm5_t[r] = (t2 - t1) / (double)steps;
        gemm6_t[r] = (t3 - t2) / (double)steps;
    }
    if (profile)
        print_profile(plan);
    {
        double st = bench_median(step_t, (size_t)reps), g5 = bench_median(gemm5_t, (size_t)reps),
               g6 = bench_median(gemm6_t, (size_t)reps);
        double lo = step_t[0], hi = step_t[reps - 1]; /* sorted by bench_median() */
        printf("train step batch %ld, threads %s, device %s: %.1f us (spread %.1f-%.1f), %ld "
               "steps x %ld reps",
               batch, threads_env ? threads_env : "default", devices[0], st * 1e6, lo * 1e6,
               hi * 1e6, steps, reps);
        if (host_reference)
            printf("; GEMMs alone %.1f us (5), %.1f us (6 with dX)\n", g5 * 1e6, g6 * 1e6);
        else
            printf("; no host GEMM reference for %s\n", devices[0]);
        printf("bench: train_step_%s: %.1f steps/s\n", tag, 1.0 / st);
        printf("bench: train_step_%s_us: %.1f us\n", tag, st * 1e6);
        if (host_reference) {
            printf("bench: train_gemm5_%s_us: %.1f us\n", tag, g5 * 1e6);
            printf("bench: train_gemm6_%s_us: %.1f us\n", tag, g6 * 1e6);
            printf("bench: train_step_%s_vs_gemm5: %.3f x\n", tag, st / g5);
            printf("bench: train_step_%s_vs_gemm6: %.3f x\n", tag, st / g6);
        }
    }

    if (host_reference)
        gemm_step_free(&gs);
    ses_tensor_release(xv);
    ses_tensor_release(yv);
    ses_session_destroy(s);
    ses_graph_release(g);
    return 0;
}
