/*
 * mpi-bench: libsession-mpi's costs, under mpirun (bench/mpi_bench.sh runs it with 1, 2 and 4
 * ranks). Prints on rank 0:
 *
 *   bench: allreduce_<N>r_vs_raw: R x      the AllReduce op in a plan as data-parallel
 *                                          training runs it (reduction "sum": the mean comes
 *                                          from the backward pass's RankWeight seed), on the
 *                                          gradients of the 784-256-10 network (203,530 floats
 *                                          in 4 tensors) computed in the plan, run as a target:
 *                                          a plan run with the op minus one without it (the
 *                                          same gradients computed), per repetition / one raw
 *                                          MPI_Allreduce of the same bytes in the same place:
 *                                          after the same plan run without the op and a copy
 *                                          of the bytes, minus those alone (so that both wait
 *                                          alike for the ranks that finish that work last;
 *                                          medians, interleaved; target <= 1.1)
 *   bench: allreduce_mean_<N>r_vs_raw: R x the same with reduction "mean" (a pass dividing
 *                                          the sums)
 *   bench: allreduce_fed_<N>r_vs_raw: R x  the same op on fed tensors (the caller's: summed
 *                                          from them into the plan's outputs, not in place)
 *   bench: train_step_<N>r: T ms           one data-parallel step of that network at a global
 *                                          batch of 64 (64/N examples per rank), median
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timing.h"

#include <session/mpi.h>
#include <session/train.h>

static void die(const char *what) {
    fprintf(stderr, "mpi-bench: %s: %s\n", what, ses_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The AllReduce op on the network's gradient shapes vs one MPI_Allreduce of the same bytes. */
static void bench_allreduce(ses_mpi_t *mpi, const ses_task_spec_t *task) {
    static const int64_t shapes[4][2] = {{784, 256}, {256, 1}, {256, 10}, {10, 1}};
    enum { REPS = 41 };
    ses_graph_t *g;
    ses_session_t *s;
    ses_edge_t in[4], grads[4];
    ses_tensor_t *values[4];
    ses_node_t *fed_op, *op, *mean_op, *producers[4];
    ses_plan_t *fed_plan, *with_plan, *mean_plan, *without_plan;
    const ses_attr_t sum = ses_attr_string("reduction", "sum");
    size_t total = 0;
    float *raw, *raw_src;
    double fed_t[REPS], op_t[REPS], mean_t[REPS], raw_t[REPS];

    if (ses_graph_create(&g) != SES_OK)
        die("graph");
    for (int i = 0; i < 4; i++) {
        if (ses_graph_placeholder(g, NULL, SES_F32, 2, shapes[i], &in[i]) != SES_OK ||
            ses_tensor_create(SES_F32, 2, shapes[i], &values[i]) != SES_OK)
            die("inputs");
        memset(ses_tensor_data(values[i]), 0, ses_tensor_bytes(values[i]));
        total += ses_tensor_count(values[i]);
        /* "Gradients" computed in the plan, as in training. */
        if (ses_graph_op(g, "Identity", NULL, &in[i], 1, NULL, 0, &grads[i]) != SES_OK)
            die("Identity");
        producers[i] = grads[i].node;
    }
    /* As ses_minimize_distributed builds it (the mean comes from the backward pass's seed,
     * RankWeight), with the mean taken by the op, and on the fed tensors. */
    if (ses_graph_add_node(g, "AllReduce", "fed", in, 4, NULL, 0, 4, &fed_op) != SES_OK ||
        ses_graph_add_node(g, "AllReduce", "gradients", grads, 4, &sum, 1, 4, &op) != SES_OK ||
        ses_graph_add_node(g, "AllReduce", "mean", grads, 4, NULL, 0, 4, &mean_op) != SES_OK)
        die("AllReduce");
    if (ses_mpi_session_open(mpi, g, NULL, 0, NULL, &s) != SES_OK)
        die("session");
    /* Run as targets, as in training: the fed tensors straight into the op; the computed ones
     * with and without the op (its cost is the difference). */
    if (ses_session_compile(s, NULL, 0, in, 4, &fed_op, 1, &fed_plan) != SES_OK ||
        ses_session_compile(s, NULL, 0, in, 4, &op, 1, &with_plan) != SES_OK ||
        ses_session_compile(s, NULL, 0, in, 4, &mean_op, 1, &mean_plan) != SES_OK ||
        ses_session_compile(s, NULL, 0, in, 4, producers, 4, &without_plan) != SES_OK)
        die("compile");
    raw = calloc(total, sizeof *raw);
    raw_src = calloc(total, sizeof *raw_src);
    if (!raw || !raw_src)
        die("out of memory");
    for (int r = -3; r < REPS; r++) {
        double t0, t1, t2, t3, t4, t5;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = bench_now();
        if (ses_plan_run(fed_plan, values, 4, NULL) != SES_OK)
            die("run");
        t1 = bench_now();
        MPI_Barrier(MPI_COMM_WORLD);
        t2 = bench_now();
        if (ses_plan_run(with_plan, values, 4, NULL) != SES_OK)
            die("run");
        t3 = bench_now();
        MPI_Barrier(MPI_COMM_WORLD);
        t3 -= t2;
        t2 = bench_now();
        if (ses_plan_run(without_plan, values, 4, NULL) != SES_OK)
            die("run");
        t4 = bench_now() - t2;
        t3 -= t4;
        MPI_Barrier(MPI_COMM_WORLD);
        t2 = bench_now();
        if (ses_plan_run(mean_plan, values, 4, NULL) != SES_OK)
            die("run");
        t4 = bench_now() - t2 - t4;
        MPI_Barrier(MPI_COMM_WORLD);
        t2 = bench_now();
        if (ses_plan_run(without_plan, values, 4, NULL) != SES_OK)
            die("run");
        memcpy(raw, raw_src, total * sizeof *raw);
        MPI_Allreduce(MPI_IN_PLACE, raw, (int)total, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t5 = bench_now() - t2;
        MPI_Barrier(MPI_COMM_WORLD);
        t2 = bench_now();
        if (ses_plan_run(without_plan, values, 4, NULL) != SES_OK)
            die("run");
        memcpy(raw, raw_src, total * sizeof *raw);
        t5 -= bench_now() - t2;
        if (r >= 0) {
            fed_t[r] = t1 - t0;
            op_t[r] = t3;
            mean_t[r] = t4;
            raw_t[r] = t5;
        }
    }
    if (task->is_chief) {
        double a = bench_median(op_t, REPS), m = bench_median(mean_t, REPS), f = bench_median(fed_t, REPS),
               b = bench_median(raw_t, REPS);
        printf("allreduce of %zu floats (%.2f MB) on %u ranks: op %.1f us on computed gradients "
               "(%.1f us taking the mean), %.1f us on fed ones, raw MPI_Allreduce %.1f us\n",
               total, total * 4.0 / 1e6, task->size, a * 1e6, m * 1e6, f * 1e6, b * 1e6);
        if (task->size > 1) {
            printf("bench: allreduce_%ur_vs_raw: %.3f x\n", task->size, a / b);
            printf("bench: allreduce_mean_%ur_vs_raw: %.3f x\n", task->size, m / b);
            printf("bench: allreduce_fed_%ur_vs_raw: %.3f x\n", task->size, f / b);
        } else { /* one rank: MPI does nothing, the op still reads and writes the plan's values */
            printf("bench: allreduce_1r_op: %.1f us\n", a * 1e6);
        }
    }
    free(raw);
    free(raw_src);
    for (int i = 0; i < 4; i++)
        ses_tensor_release(values[i]);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* One data-parallel step of the 784-256-10 network at a global batch of 64. */
static void bench_train(ses_mpi_t *mpi, const ses_task_spec_t *task) {
    enum { GLOBAL = 64, STEPS = 60 };
    const int64_t xd[2] = {-1, 784}, ld[1] = {-1};
    int64_t local = GLOBAL / task->size, bx[2] = {local, 784};
    ses_graph_t *g;
    ses_session_t *s;
    ses_edge_t x, labels, h, logits, loss;
    ses_node_t *step;
    ses_optimizer_t opt;
    ses_tensor_t *tx, *tl;
    double t[STEPS];

    if (ses_graph_create(&g) != SES_OK || ses_graph_placeholder(g, "x", SES_F32, 2, xd, &x) ||
        ses_graph_placeholder(g, "labels", SES_I64, 1, ld, &labels) ||
        ses_fc(g, "fc1", x, 256, SES_ACTIVATION_SIGMOID, 1, &h) ||
        ses_fc(g, "fc2", h, 10, SES_ACTIVATION_NONE, 2, &logits) ||
        ses_softmax_cross_entropy(g, "loss", logits, labels, SES_REDUCTION_MEAN, &loss))
        die("network");
    ses_optimizer_sgd(&opt, 0.1);
    if (ses_minimize_distributed(g, "train", loss, &opt, NULL, 0, &step) != SES_OK ||
        ses_mpi_session_open(mpi, g, NULL, 0, NULL, &s) != SES_OK ||
        ses_tensor_create(SES_F32, 2, bx, &tx) != SES_OK ||
        ses_tensor_create(SES_I64, 1, &local, &tl) != SES_OK)
        die("training setup");
    for (int64_t i = 0; i < local * 784; i++)
        ((float *)ses_tensor_data(tx))[i] = (float)((i * 7919) % 255) / 255.0f;
    for (int64_t i = 0; i < local; i++)
        ((int64_t *)ses_tensor_data(tl))[i] = (i + task->rank) % 10;
    for (int r = -5; r < STEPS; r++) {
        ses_feed_t feeds[2] = {{x, tx}, {labels, tl}};
        double t0;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = bench_now();
        if (ses_session_eval(s, NULL, 0, feeds, 2, &step, 1, NULL) != SES_OK)
            die("step");
        if (r >= 0)
            t[r] = bench_now() - t0;
    }
    if (task->is_chief)
        printf("bench: train_step_%ur: %.3f ms\n", task->size, bench_median(t, STEPS) * 1e3);
    ses_tensor_release(tx);
    ses_tensor_release(tl);
    ses_session_destroy(s);
    ses_graph_release(g);
}

int main(int argc, char **argv) {
    ses_mpi_t *mpi;
    const ses_task_spec_t *task;

    if (ses_mpi_init(&argc, &argv, &mpi) != SES_OK) {
        fprintf(stderr, "mpi-bench: %s\n", ses_last_error());
        return 1;
    }
    task = ses_mpi_task(mpi);
    if (64 % task->size) {
        fprintf(stderr, "mpi-bench: run with 1, 2, 4, 8, ... ranks\n");
        ses_mpi_finalize(mpi);
        return 2;
    }
    bench_allreduce(mpi, task);
    bench_train(mpi, task);
    ses_mpi_finalize(mpi);
    return 0;
}
