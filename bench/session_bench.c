/*
 * session-bench: libsession's overheads measured side by side in one run.
 *
 *   matmul_<M>x<K>x<N>_ratio  MatMul through a compiled plan vs a direct cblas_sgemm on the same
 *                             data (interleaved, medians; 1.0 = no overhead)
 *   plan_fixed_cost           run of a compiled one-node plan (a scalar Add), per run
 *   plan_per_node_cost        per node on a chain of 256 scalar Adds, beyond the fixed cost
 *   rss_growth_100k_runs      resident memory after 100,000 runs minus before
 *
 * The output ends with one line per figure: "bench: <name>: <value> <unit>". Run it with one
 * CPU thread for the per-node figures: SESSION_DRIVER_CPU_THREADS=1.
 *
 *   session-bench --device gpu:0 --chain-only
 *
 * measures only the chain on that device, with and without graphs (ses_session_options_t.graphs):
 *   plan_per_node_cost_<device>_graphs, plan_per_node_cost_<device>_no_graphs
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "bench_timing.h"

#include <session/session.h>

static void die(const char *what) {
    fprintf(stderr, "session-bench: %s: %s\n", what, ses_last_error());
    exit(1);
}

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;

    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static ses_tensor_t *random_matrix(int64_t rows, int64_t cols) {
    int64_t dims[2] = {rows, cols};
    ses_tensor_t *t = NULL;

    if (ses_tensor_create(SES_F32, 2, dims, &t) != SES_OK)
        die("tensor");
    for (size_t i = 0; i < ses_tensor_count(t); i++)
        ((float *)ses_tensor_data(t))[i] = (float)(rand() % 1000) / 1000.0f - 0.5f;
    return t;
}

static void bench_matmul(int64_t m, int64_t k, int64_t n) {
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t in[2], y;
    int64_t da[2] = {m, k}, db[2] = {k, n};
    ses_tensor_t *a = random_matrix(m, k), *b = random_matrix(k, n), *feeds[2] = {a, b};
    float *c = malloc((size_t)(m * n) * sizeof *c);
    const char *devices[] = {"cpu"};
    int reps = m * k * n > 100000000 ? 9 : 41;
    double plan_t[41], blas_t[41];

    if (ses_graph_create(&g) != SES_OK ||
        ses_graph_placeholder(g, "a", SES_F32, 2, da, &in[0]) != SES_OK ||
        ses_graph_placeholder(g, "b", SES_F32, 2, db, &in[1]) != SES_OK ||
        ses_graph_op(g, "MatMul", "y", in, 2, NULL, 0, &y) != SES_OK ||
        ses_session_open(g, devices, 1, NULL, &s) != SES_OK ||
        ses_session_compile(s, &y, 1, in, 2, NULL, 0, &plan) != SES_OK)
        die("matmul setup");
    for (int r = -2; r < reps; r++) {
        ses_tensor_t *out = NULL;
        double t0 = bench_now(), t1, t2;
        if (ses_plan_run(plan, feeds, 2, &out) != SES_OK)
            die("matmul run");
        t1 = bench_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f,
                    ses_tensor_data(a), (int)k, ses_tensor_data(b), (int)n, 0.0f, c, (int)n);
        t2 = bench_now();
        ses_tensor_release(out);
        if (r >= 0) {
            plan_t[r] = t1 - t0;
            blas_t[r] = t2 - t1;
        }
    }
    {
        double p = bench_median(plan_t, (size_t)reps), q = bench_median(blas_t, (size_t)reps);
        printf("matmul %lldx%lldx%lld: plan %.1f us (%.1f GFLOP/s), cblas_sgemm %.1f us\n",
               (long long)m, (long long)k, (long long)n, p * 1e6, 2.0 * m * k * n / p * 1e-9,
               q * 1e6);
        printf("bench: matmul_%lldx%lldx%lld_ratio: %.3f x\n", (long long)m, (long long)k,
               (long long)n, q / p);
    }
    free(c);
    ses_tensor_release(a);
    ses_tensor_release(b);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* Where the chain runs, and whether its kernels may be captured as graphs. */
static const char *chain_device = "cpu";
static uint32_t chain_graphs = 1;

/* Median seconds per run of a chain of @p nodes scalar Adds. */
static double chain_run_time(int nodes, int runs, long *rss_before, long *rss_after) {
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t x, y, in[2];
    ses_tensor_t *one = NULL;
    float v = 1;
    ses_session_options_t so;
    double samples[15];

    if (ses_graph_create(&g) != SES_OK ||
        ses_graph_placeholder(g, "x", SES_F32, 0, NULL, &x) != SES_OK ||
        ses_tensor_create_from(SES_F32, 0, NULL, &v, sizeof v, &one) != SES_OK)
        die("chain setup");
    y = x;
    for (int i = 0; i < nodes; i++) {
        in[0] = y;
        in[1] = x;
        if (ses_graph_op(g, "Add", NULL, in, 2, NULL, 0, &y) != SES_OK)
            die("chain node");
    }
    ses_session_options_init(&so);
    so.fallback = SES_FALLBACK_DENY; /* every Add on the device, or no figure */
    so.graphs = chain_graphs;
    if (ses_session_open(g, &chain_device, 1, &so, &s) != SES_OK ||
        ses_session_compile(s, &y, 1, &x, 1, NULL, 0, &plan) != SES_OK)
        die("chain compile");
    for (int w = 0; w < 1000; w++) {
        ses_tensor_t *out = NULL;
        if (ses_plan_run(plan, &one, 1, &out) != SES_OK)
            die("chain run");
        ses_tensor_release(out);
    }
    if (rss_before)
        *rss_before = rss_kib();
    for (int r = 0; r < 15; r++) {
        double t0 = bench_now();
        for (int i = 0; i < runs / 15; i++) {
            ses_tensor_t *out = NULL;
            if (ses_plan_run(plan, &one, 1, &out) != SES_OK)
                die("chain run");
            ses_tensor_release(out);
        }
        samples[r] = (bench_now() - t0) / (runs / 15);
    }
    if (rss_after)
        *rss_after = rss_kib();
    ses_tensor_release(one);
    ses_session_destroy(s);
    ses_graph_release(g);
    return bench_median(samples, 15);
}

/* The chain on --device, with graphs and without; a name fit for a figure: gpu:0 -> gpu_0. */
static void bench_chain_on_device(void) {
    char name[64];

    snprintf(name, sizeof name, "%s", chain_device);
    for (char *p = name; *p; p++)
        if (*p == ':' || *p == '/')
            *p = '_';
    for (int graphs = 1; graphs >= 0; graphs--) {
        double one, chain;
        chain_graphs = (uint32_t)graphs;
        one = chain_run_time(1, 30000, NULL, NULL);
        chain = chain_run_time(256, 1500, NULL, NULL);
        printf("chain on %s, graphs %s: one node %.1f us per run, 256 nodes %.1f us per run\n",
               chain_device, graphs ? "on" : "off", one * 1e6, chain * 1e6);
        printf("bench: plan_per_node_cost_%s_%s: %.1f ns\n", name, graphs ? "graphs" : "no_graphs",
               (chain - one) / 255 * 1e9);
    }
}

int main(int argc, char **argv) {
    long before = 0, after = 0;
    double one, chain;
    int chain_only = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            chain_device = argv[++i];
        } else if (strcmp(argv[i], "--chain-only") == 0) {
            chain_only = 1;
        } else {
            fprintf(stderr, "usage: session-bench [--device NAME] [--chain-only]\n");
            return 2;
        }
    }
    if (chain_only) {
        bench_chain_on_device();
        return 0;
    }
    srand(1);
    bench_matmul(64, 784, 256);
    bench_matmul(256, 784, 256);
    bench_matmul(1024, 1024, 1024);
    one = chain_run_time(1, 100005, &before, &after);
    chain = chain_run_time(256, 1500, NULL, NULL);
    printf("bench: plan_fixed_cost: %.0f ns\n", one * 1e9);
    printf("bench: plan_per_node_cost: %.1f ns\n", (chain - one) / 255 * 1e9);
    printf("bench: rss_growth_100k_runs: %ld KiB\n", after - before);
    return 0;
}
