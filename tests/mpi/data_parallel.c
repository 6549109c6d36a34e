/*
 * Runs under mpirun (tests/mpi/mpi_test.c starts it with 2 and 4 ranks): N steps of
 * data-parallel training of a small network, each rank on its shard of a fixed global batch,
 * must give the parameters that one process gets on the whole batch.
 *
 * Every rank initializes its variables from its own seed; ses_mpi_session_open must replace
 * them with the chief's. The chief then trains the same network alone, without MPI, and every
 * rank compares its parameters with the chief's distributed ones (MPI max of the difference).
 * Prints "ranks R: max difference to one process D" on the chief; exit 0 when D < 1e-5.
 *
 * With a checkpoint folder argument the chief saves a checkpoint after every step, and under
 * SESSION_EVALUATOR=1 the last rank does not train: it restores each checkpoint as it appears,
 * prints its loss on the whole batch ("evaluator: checkpoint of step K: loss L") and stops
 * when training has ended; the chief prints the loss of its final parameters to compare.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <session/checkpoint.h>
#include <session/mpi.h>
#include <session/train.h>

#define GLOBAL_BATCH 8
#define IN 4
#define HIDDEN 3
#define STEPS 5

typedef struct net {
    ses_graph_t *g;
    ses_edge_t x, t, loss;
    ses_node_t *step;
} net_t;

static int check(ses_status_t st, const char *what) {
    if (st != SES_OK) {
        fprintf(stderr, "data_parallel: %s: %s\n", what, ses_last_error());
        exit(1);
    }
    return 0;
}

/* A constant of @p n values from a small LCG seeded with @p seed. */
static ses_edge_t random_constant(ses_graph_t *g, size_t rank, const int64_t *dims, unsigned seed) {
    ses_tensor_t *t;
    ses_edge_t e;
    unsigned s = seed * 2654435761u + 1;

    check(ses_tensor_create(SES_F32, rank, dims, &t), "tensor");
    for (size_t i = 0; i < ses_tensor_count(t); i++) {
        s = s * 1103515245u + 12345u;
        ((float *)ses_tensor_data(t))[i] = (float)((s >> 8) % 2001) / 1000.0f - 1.0f;
    }
    check(ses_graph_constant(g, NULL, t, &e), "constant");
    ses_tensor_release(t);
    return e;
}

/* y = relu(x W1 + b1) W2, MSE against t, SGD; distributed: through AllReduce. */
static void build(net_t *n, unsigned seed, int distributed) {
    const int64_t any_in[2] = {-1, IN}, any_out[2] = {-1, 1}, d1[2] = {IN, HIDDEN},
                  db[1] = {HIDDEN}, d2[2] = {HIDDEN, 1};
    ses_edge_t w1, b1, w2, h, r, y;
    ses_optimizer_t opt;

    check(ses_graph_create(&n->g), "graph");
    check(ses_graph_placeholder(n->g, "x", SES_F32, 2, any_in, &n->x), "x");
    check(ses_graph_placeholder(n->g, "t", SES_F32, 2, any_out, &n->t), "t");
    check(ses_graph_variable(n->g, "w1", random_constant(n->g, 2, d1, seed), &w1), "w1");
    check(ses_graph_variable(n->g, "b1", random_constant(n->g, 1, db, seed + 7), &b1), "b1");
    check(ses_graph_variable(n->g, "w2", random_constant(n->g, 2, d2, seed + 13), &w2), "w2");
    check(ses_graph_op(n->g, "MatMul", NULL, (ses_edge_t[]){n->x, w1}, 2, NULL, 0, &h), "h");
    check(ses_graph_op(n->g, "Add", NULL, (ses_edge_t[]){h, b1}, 2, NULL, 0, &h), "h+b");
    check(ses_graph_op(n->g, "Relu", NULL, &h, 1, NULL, 0, &r), "relu");
    check(ses_graph_op(n->g, "MatMul", NULL, (ses_edge_t[]){r, w2}, 2, NULL, 0, &y), "y");
    check(ses_mean_squared_error(n->g, "loss", y, n->t, SES_REDUCTION_MEAN, &n->loss), "loss");
    ses_optimizer_sgd(&opt, 0.1);
    check((distributed ? ses_minimize_distributed : ses_minimize)(n->g, "train", n->loss, &opt,
                                                                  NULL, 0, &n->step),
          "minimize");
}

/* Rows [begin, end) of the fixed global batch. */
static void batch(size_t begin, size_t end, ses_tensor_t **x, ses_tensor_t **t) {
    const int64_t dx[2] = {(int64_t)(end - begin), IN}, dt[2] = {(int64_t)(end - begin), 1};

    check(ses_tensor_create(SES_F32, 2, dx, x), "x");
    check(ses_tensor_create(SES_F32, 2, dt, t), "t");
    for (size_t r = begin; r < end; r++) {
        float sum = 0;
        for (size_t c = 0; c < IN; c++) {
            float v = (float)sin((double)(r * IN + c + 1));
            ((float *)ses_tensor_data(*x))[(r - begin) * IN + c] = v;
            sum += v * (float)(c + 1);
        }
        ((float *)ses_tensor_data(*t))[r - begin] = sum / 4.0f;
    }
}

/* STEPS steps on rows [begin, end); with @p dir, a checkpoint after each. */
static void train(net_t *n, ses_session_t *s, size_t begin, size_t end, const char *dir) {
    ses_tensor_t *x, *t;
    ses_feed_t feeds[2];

    batch(begin, end, &x, &t);
    feeds[0] = (ses_feed_t){n->x, x};
    feeds[1] = (ses_feed_t){n->t, t};
    for (int i = 0; i < STEPS; i++) {
        check(ses_session_eval(s, NULL, 0, feeds, 2, &n->step, 1, NULL), "step");
        if (dir)
            check(ses_checkpoint_save(s, dir, (uint64_t)i + 1, 0), "checkpoint");
    }
    ses_tensor_release(x);
    ses_tensor_release(t);
}

/* The loss of @p s's parameters on the whole global batch. */
static double batch_loss(net_t *n, ses_session_t *s) {
    ses_tensor_t *x, *t, *loss = NULL;
    ses_feed_t feeds[2];
    double value;

    batch(0, GLOBAL_BATCH, &x, &t);
    feeds[0] = (ses_feed_t){n->x, x};
    feeds[1] = (ses_feed_t){n->t, t};
    check(ses_session_eval(s, &n->loss, 1, feeds, 2, NULL, 0, &loss), "loss");
    value = *(const float *)ses_tensor_data(loss);
    ses_tensor_release(loss);
    ses_tensor_release(x);
    ses_tensor_release(t);
    return value;
}

/*
 * The evaluator: restores each new checkpoint of @p dir and prints its loss, until training
 * has ended and its last checkpoint is evaluated. 0 when it evaluated the checkpoint of the
 * last step.
 */
static int evaluate_checkpoints(ses_mpi_t *mpi, net_t *n, ses_session_t *s, const char *dir) {
    uint64_t last = 0;
    int evaluated = 0, ended = 0;
    double loss = 0;
    float probe = 1;

    /* It takes no part in the training ranks' collectives. */
    if (ses_mpi_communicator(mpi) != NULL ||
        ses_mpi_allreduce_sum(mpi, &probe, 1, SES_F32) != SES_FAILED_PRECONDITION) {
        fprintf(stderr, "data_parallel: the evaluator has a communicator\n");
        return 1;
    }
    while (!ended) {
        char *path = NULL, latest[4096];
        uint64_t step = 0;
        /* Asked before looking: a checkpoint saved before the end is in the folder then. */
        ended = ses_mpi_training_ended(mpi);
        /* Until the chief's first save has written "latest", ses_checkpoint_latest would
         * fall back to scanning the folder and say so in a warning. */
        snprintf(latest, sizeof latest, "%s/latest", dir);
        if (access(latest, F_OK) == 0 && ses_checkpoint_latest(dir, &path, &step) == SES_OK &&
            step > last) {
            check(ses_session_restore(s, path, 0, NULL), path);
            loss = batch_loss(n, s);
            printf("evaluator: checkpoint of step %llu: loss %.9g\n", (unsigned long long)step,
                   loss);
            last = step;
            evaluated++;
        }
        free(path);
        if (!ended)
            usleep(1000);
    }
    printf("evaluator: %d checkpoints evaluated, the last of step %llu: loss %.9g\n", evaluated,
           (unsigned long long)last, loss);
    return last == STEPS ? 0 : 1;
}

/* Copies variable @p name's values into @p out (at most @p n). */
static size_t read_var(ses_session_t *s, const char *name, float *out, size_t n) {
    ses_tensor_t *v = NULL;
    size_t k;

    check(ses_scope_find(ses_session_scope(s), name, &v), name);
    k = ses_tensor_count(v) < n ? ses_tensor_count(v) : n;
    memcpy(out, ses_tensor_data(v), k * sizeof *out);
    ses_tensor_release(v);
    return k;
}

int main(int argc, char **argv) {
    static const char *const vars[] = {"w1", "b1", "w2"};
    ses_mpi_t *mpi;
    const ses_task_spec_t *task;
    net_t dist, alone;
    ses_session_t *s, *ref = NULL;
    size_t begin, end, n = 0;
    float mine[64], chief[64];
    double diff = 0, worst;
    int status;
    uint32_t workers;
    const char *dir;

    check(ses_mpi_init(&argc, &argv, &mpi), "ses_mpi_init");
    task = ses_mpi_task(mpi);
    workers = ses_task_workers(task);
    dir = argc > 1 ? argv[1] : NULL;
    if (task->has_evaluator && !dir) {
        fprintf(stderr, "data_parallel: an evaluator needs a checkpoint folder argument\n");
        ses_mpi_finalize(mpi);
        return 2;
    }
    if (GLOBAL_BATCH % workers != 0) {
        fprintf(stderr, "data_parallel: run with a number of ranks that divides %d\n",
                GLOBAL_BATCH);
        ses_mpi_finalize(mpi);
        return 2;
    }
    /* Each rank its own seed: the broadcast at open must make them the chief's. */
    build(&dist, 1 + task->rank, 1);
    check(ses_mpi_session_open(mpi, dist.g, NULL, 0, NULL, &s), "ses_mpi_session_open");
    if (task->is_evaluator) {
        status = evaluate_checkpoints(mpi, &dist, s, dir);
        ses_session_destroy(s);
        ses_graph_release(dist.g);
        ses_mpi_finalize(mpi);
        return status;
    }
    ses_task_shard_range(task, GLOBAL_BATCH, &begin, &end);
    train(&dist, s, begin, end, task->is_chief ? dir : NULL);
    for (size_t v = 0; v < 3; v++)
        n += read_var(s, vars[v], mine + n, 64 - n);
    memcpy(chief, mine, n * sizeof *mine);
    /* Every rank holds the chief's parameters ... */
    check(ses_mpi_allreduce_sum(mpi, chief, n, SES_F32), "sum");
    if (task->is_chief) {
        /* ... and the chief compares with one process on the whole batch. */
        build(&alone, 1, 0);
        check(ses_session_open(alone.g, NULL, 0, NULL, &ref), "reference session");
        train(&alone, ref, 0, GLOBAL_BATCH, NULL);
        n = 0;
        for (size_t v = 0; v < 3; v++)
            n += read_var(ref, vars[v], chief + n, 64 - n);
        for (size_t i = 0; i < n; i++)
            diff = fmax(diff, fabs((double)mine[i] - chief[i]));
    } else {
        /* The sum of identical parameters is size times them. */
        for (size_t i = 0; i < n; i++)
            diff = fmax(diff, fabs((double)mine[i] * workers - chief[i]) / workers);
    }
    worst = diff;
    check(ses_mpi_allreduce_sum(mpi, &worst, 1, SES_F64), "max"); /* a sum bounds the max */
    if (task->is_chief)
        printf("ranks %u: shards of %zu, max difference to one process %.3g%s; launcher %s\n",
               workers, end - begin, worst, worst < 1e-5 ? "" : " (too large)",
               task->launcher);
    status = worst < 1e-5 && !ses_mpi_any(mpi, 0) ? 0 : 1;
    if (task->is_chief && dir)
        printf("chief: the parameters of step %d: loss %.9g\n", STEPS, batch_loss(&dist, s));
    fflush(stdout);
    check(ses_mpi_end_training(mpi), "ses_mpi_end_training");
    ses_session_destroy(ref);
    ses_session_destroy(s);
    ses_graph_release(dist.g);
    if (task->is_chief)
        ses_graph_release(alone.g);
    ses_mpi_finalize(mpi);
    return status;
}
