/*
 * A remote session over MPI processes: starts a job of two session-worker processes, places a
 * small network across them and this process (a variable and its MatMul on worker 0, Tanh on
 * worker 1, the loss here), trains it for a few steps, and compares every loss and the final
 * weights with a local session on the same graph without device requests. Prints
 * "remote session: 2 workers, N steps, max difference D" and exits 0 when they match.
 *
 *   remote_session [--missing-device]   (the second asks each worker for a device it lacks)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/mpi.h>
#include <session/train.h>

#define STEPS 4

#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != SES_OK) {                                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ses_last_error());       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef struct net {
    ses_graph_t *g;
    ses_edge_t x, target, w, loss;
    ses_node_t *step;
} net_t;

static ses_edge_t pinned(ses_graph_t *g, const char *op, const char *name, ses_edge_t *in,
                         size_t n_in, const char *device, int pin) {
    ses_edge_t out;
    CHECK(ses_graph_op(g, op, name, in, n_in, NULL, 0, &out));
    if (pin)
        CHECK(ses_node_set_device(out.node, device));
    return out;
}

static void build(net_t *n, int pin) {
    int64_t xd[2] = {-1, 3}, wd[2] = {3, 4};
    ses_tensor_t *init;
    ses_edge_t init_edge, in[2], a, b;
    ses_optimizer_t sgd;

    CHECK(ses_graph_create(&n->g));
    CHECK(ses_graph_placeholder(n->g, "x", SES_F32, 2, xd, &n->x));
    CHECK(ses_graph_placeholder(n->g, "target", SES_F32, 2, (int64_t[]){-1, 4}, &n->target));
    CHECK(ses_tensor_create(SES_F32, 2, wd, &init));
    for (int i = 0; i < 12; i++)
        ((float *)ses_tensor_data(init))[i] = (float)(i % 5) / 5.0f - 0.4f;
    CHECK(ses_graph_constant(n->g, "w/init", init, &init_edge));
    ses_tensor_release(init);
    CHECK(ses_graph_variable(n->g, "w", init_edge, &n->w));
    if (pin)
        CHECK(ses_node_set_device(n->w.node, "/task:0/cpu:0"));
    in[0] = n->x;
    in[1] = n->w;
    a = pinned(n->g, "MatMul", "a", in, 2, "/task:0/cpu:0", pin);
    b = pinned(n->g, "Tanh", "b", &a, 1, "/task:1/cpu:0", pin);
    CHECK(ses_mean_squared_error(n->g, "loss", b, n->target, SES_REDUCTION_MEAN, &n->loss));
    ses_optimizer_sgd(&sgd, 0.5);
    CHECK(ses_minimize(n->g, "train", n->loss, &sgd, NULL, 0, &n->step));
}

/* Trains STEPS steps, writing each loss and then the weights into @p out. */
static void train(ses_session_t *s, const net_t *n, float *out) {
    int64_t xd[2] = {5, 3}, td[2] = {5, 4};
    ses_tensor_t *x, *t, *loss, *w;

    CHECK(ses_tensor_create(SES_F32, 2, xd, &x));
    CHECK(ses_tensor_create(SES_F32, 2, td, &t));
    for (int k = 0; k < STEPS; k++) {
        ses_feed_t feeds[2] = {{n->x, x}, {n->target, t}};
        for (int i = 0; i < 15; i++)
            ((float *)ses_tensor_data(x))[i] = (float)((i * 3 + k) % 7) / 7.0f;
        for (int i = 0; i < 20; i++)
            ((float *)ses_tensor_data(t))[i] = (float)((i + k) % 3) / 3.0f;
        CHECK(ses_session_eval(s, &n->loss, 1, feeds, 2, &n->step, 1, &loss));
        out[k] = *(float *)ses_tensor_data(loss);
        ses_tensor_release(loss);
    }
    CHECK(ses_session_eval(s, &n->w, 1, NULL, 0, NULL, 0, &w));
    memcpy(out + STEPS, ses_tensor_data(w), 12 * sizeof(float));
    ses_tensor_release(w);
    ses_tensor_release(x);
    ses_tensor_release(t);
}

int main(int argc, char **argv) {
    ses_mpi_t *mpi;
    ses_job_t *job = NULL;
    ses_job_options_t options;
    const char *cpu = "cpu", *missing = "nosuchdevice:0";
    net_t local, remote;
    ses_session_t *ls, *rs;
    float expected[STEPS + 12], got[STEPS + 12], diff = 0;
    int missing_device = argc > 1 && strcmp(argv[1], "--missing-device") == 0;
    ses_status_t st;

    CHECK(ses_mpi_init(&argc, &argv, &mpi));
    /* Bad options are refused before anything starts. */
    ses_job_options_init(&options);
    options.workers = 0;
    if (ses_mpi_job_create(mpi, &options, &job) != SES_INVALID_ARGUMENT || job)
        return fprintf(stderr, "0 workers accepted\n"), 1;
    options.workers = 1;
    options.devices = (const char *[]){"/task:1/cpu"};
    options.n_devices = 1;
    if (ses_mpi_job_create(mpi, &options, &job) != SES_INVALID_ARGUMENT ||
        !strstr(ses_last_error(), "worker's own device"))
        return fprintf(stderr, "a /task: job device accepted: %s\n", ses_last_error()), 1;
    options.struct_size = 4;
    if (ses_mpi_job_create(mpi, &options, &job) != SES_INVALID_ARGUMENT ||
        ses_mpi_job_create(mpi, NULL, &job) != SES_INVALID_ARGUMENT ||
        ses_mpi_job_session_open(NULL, NULL, NULL, 0, NULL, &rs) != SES_INVALID_ARGUMENT)
        return fprintf(stderr, "bad job arguments accepted\n"), 1;
    ses_job_options_init(&options);
    options.name = "remote-test";
    options.workers = 2;
    options.devices = missing_device ? &missing : &cpu;
    options.n_devices = 1;
    st = ses_mpi_job_create(mpi, &options, &job);
    if (missing_device) {
        printf("job: status %s: %s\n", ses_status_name(st), ses_last_error());
        ses_mpi_job_destroy(job);
        ses_mpi_finalize(mpi);
        return st == SES_OK;
    }
    CHECK(st);
    build(&local, 0);
    build(&remote, 1);
    CHECK(ses_session_open(local.g, &cpu, 1, NULL, &ls));
    CHECK(ses_mpi_job_session_open(job, remote.g, &cpu, 1, NULL, &rs));
    train(ls, &local, expected);
    train(rs, &remote, got);
    for (int i = 0; i < STEPS + 12; i++)
        diff = fmaxf(diff, fabsf(got[i] - expected[i]));
    printf("remote session: 2 workers, %d steps, loss %.5f -> %.5f, max difference %g\n", STEPS,
           expected[0], expected[STEPS - 1], (double)diff);
    /* Closing the session ends the job: both workers exit. */
    CHECK(ses_session_close(rs));
    ses_session_destroy(rs);
    ses_session_destroy(ls);
    ses_graph_release(local.g);
    ses_graph_release(remote.g);
    ses_mpi_finalize(mpi);
    return diff <= 1e-5f && expected[STEPS - 1] < expected[0] ? 0 : 1;
}
