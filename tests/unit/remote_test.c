/*
 * Remote sessions (<session/remote.h>) with the workers in this process: a transport that hands
 * each request to a ses_remote_worker_t. A small network placed across two workers and this
 * process trains to the same values as a local session; variables live on their workers; the
 * graph may grow; closing says goodbye to every worker; bad names, a lost worker and hostile
 * messages give clear errors. tests/mpi/remote_mpi_test.c runs the same over MPI processes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/remote.h>
#include <session/train.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define TASKS 2

/* Asserts SES_OK, printing the error message otherwise. */
#define assert_ok(call)                                                                            \
    do {                                                                                           \
        ses_status_t st_ = (call);                                                                 \
        if (st_ != SES_OK)                                                                         \
            print_error("%s: %s\n", #call, ses_last_error());                                      \
        assert_int_equal(st_, SES_OK);                                                             \
    } while (0)

typedef struct in_process {
    ses_remote_worker_t *workers[TASKS];
    int evals[TASKS], exits[TASKS], closes;
    int fail_calls; /* the transport breaks */
} in_process_t;

static ses_status_t call(void *user, uint32_t task, const void *request, size_t bytes,
                         void **out_reply, size_t *out_bytes) {
    in_process_t *p = user;
    void *copy;
    int exit_now = 0;
    ses_status_t st;

    assert_true(task < TASKS);
    if (p->fail_calls)
        return ses_set_error(SES_UNAVAILABLE, "worker %u is gone", task);
    /* The worker sees its own copy, as it would after a transfer. */
    copy = malloc(bytes ? bytes : 1);
    assert_non_null(copy);
    memcpy(copy, request, bytes);
    if (bytes >= 4 && ((unsigned char *)copy)[0] == 2)
        p->evals[task]++;
    st = ses_remote_worker_handle(p->workers[task], copy, bytes, out_reply, out_bytes, &exit_now);
    free(copy);
    p->exits[task] += exit_now;
    return st;
}

static void close_job(void *user) {
    ((in_process_t *)user)->closes++;
}

static ses_remote_transport_t transport_of(in_process_t *p) {
    ses_remote_transport_t t = {sizeof t, TASKS, p, call, close_job};
    for (int i = 0; i < TASKS; i++)
        if (!p->workers[i])
            assert_int_equal(ses_remote_worker_create(&p->workers[i]), SES_OK);
    return t;
}

static void free_workers(in_process_t *p) {
    for (int i = 0; i < TASKS; i++)
        ses_remote_worker_destroy(p->workers[i]);
}

/* ---- a network ----------------------------------------------------------------------------- */

typedef struct net {
    ses_graph_t *g;
    ses_edge_t x, target, h, y, z, q, loss, w1, w2;
    ses_node_t *step;
} net_t;

static ses_edge_t constant(ses_graph_t *g, const char *name, size_t rank, const int64_t *dims,
                           float seed) {
    ses_tensor_t *t;
    ses_edge_t e;
    float *d;

    assert_int_equal(ses_tensor_create(SES_F32, rank, dims, &t), SES_OK);
    d = ses_tensor_data(t);
    for (size_t i = 0; i < ses_tensor_count(t); i++)
        d[i] = seed * (float)((i * 7 + 3) % 11) / 11.0f - 0.3f;
    assert_int_equal(ses_graph_constant(g, name, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_edge_t op2(ses_graph_t *g, const char *op, const char *name, ses_edge_t a,
                      ses_edge_t b, const char *device) {
    ses_edge_t in[2] = {a, b}, out;
    assert_int_equal(ses_graph_op(g, op, name, in, 2, NULL, 0, &out), SES_OK);
    if (device)
        assert_int_equal(ses_node_set_device(out.node, device), SES_OK);
    return out;
}

/*
 * x [4,3] → h = Relu(x·W1) on task 0 → y = h·W2 on task 1 → z = y + b here → q = z * c back on
 * task 0; the loss (z against a target) here; SGD over W1 and W2. @p pin 0 builds the same graph
 * without device requests, for a local session.
 */
static void build(net_t *n, int pin) {
    int64_t xd[2] = {-1, 3}, w1d[2] = {3, 5}, w2d[2] = {5, 2}, bd[1] = {2}, td[2] = {-1, 2};
    ses_edge_t in;
    ses_optimizer_t sgd;

    assert_int_equal(ses_graph_create(&n->g), SES_OK);
    assert_int_equal(ses_graph_placeholder(n->g, "x", SES_F32, 2, xd, &n->x), SES_OK);
    assert_int_equal(ses_graph_placeholder(n->g, "target", SES_F32, 2, td, &n->target), SES_OK);
    assert_int_equal(ses_graph_variable(n->g, "W1", constant(n->g, "W1/init", 2, w1d, 1.0f),
                                        &n->w1),
                     SES_OK);
    assert_int_equal(ses_graph_variable(n->g, "W2", constant(n->g, "W2/init", 2, w2d, 0.7f),
                                        &n->w2),
                     SES_OK);
    if (pin) {
        assert_int_equal(ses_node_set_device(n->w1.node, "/task:0/cpu:0"), SES_OK);
        assert_int_equal(ses_node_set_device(n->w2.node, "/task:1/cpu"), SES_OK);
    }
    in = op2(n->g, "MatMul", "xw1", n->x, n->w1, pin ? "/task:0/cpu:0" : NULL);
    assert_int_equal(ses_graph_op(n->g, "Relu", "h", &in, 1, NULL, 0, &n->h), SES_OK);
    if (pin)
        assert_int_equal(ses_node_set_device(n->h.node, "/task:0/cpu:0"), SES_OK);
    n->y = op2(n->g, "MatMul", "y", n->h, n->w2, pin ? "/task:1/cpu" : NULL);
    n->z = op2(n->g, "Add", "z", n->y, constant(n->g, "b", 1, bd, 0.5f), NULL);
    n->q = op2(n->g, "Mul", "q", n->z, constant(n->g, "c", 1, bd, 2.0f),
               pin ? "/task:0/cpu:0" : NULL);
    assert_int_equal(ses_mean_squared_error(n->g, "loss", n->z, n->target,
                                            SES_REDUCTION_MEAN, &n->loss), SES_OK);
    ses_optimizer_sgd(&sgd, 0.1);
    assert_int_equal(ses_minimize(n->g, "train", n->loss, &sgd, NULL, 0, &n->step), SES_OK);
}

static void feeds_for(const net_t *n, int step, ses_feed_t feeds[2]) {
    int64_t xd[2] = {4, 3}, td[2] = {4, 2};
    ses_tensor_t *x, *t;
    float *xv, *tv;

    assert_int_equal(ses_tensor_create(SES_F32, 2, xd, &x), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 2, td, &t), SES_OK);
    xv = ses_tensor_data(x);
    tv = ses_tensor_data(t);
    for (int i = 0; i < 12; i++)
        xv[i] = (float)((i * 5 + step) % 7) / 7.0f;
    for (int i = 0; i < 8; i++)
        tv[i] = (float)((i + step) % 3) - 1.0f;
    feeds[0] = (ses_feed_t){n->x, x};
    feeds[1] = (ses_feed_t){n->target, t};
}

/* Runs @p steps training steps, fetching loss, h, z, q each time, into @p out (4 per step). */
static void train(ses_session_t *s, const net_t *n, int steps, float *out) {
    for (int k = 0; k < steps; k++) {
        ses_feed_t feeds[2];
        ses_edge_t fetches[4] = {n->loss, n->h, n->z, n->q};
        ses_tensor_t *values[4];

        feeds_for(n, k, feeds);
        assert_ok(ses_session_eval(s, fetches, 4, feeds, 2, &n->step, 1, values));
        for (int i = 0; i < 4; i++) {
            out[k * 4 + i] = ((float *)ses_tensor_data(values[i]))[i];
            ses_tensor_release(values[i]);
        }
        ses_tensor_release(feeds[0].value);
        ses_tensor_release(feeds[1].value);
    }
}

static void fetch_weights(ses_session_t *s, const net_t *n, float *out) {
    ses_edge_t fetches[2] = {n->w1, n->w2};
    ses_tensor_t *values[2];

    assert_int_equal(ses_session_eval(s, fetches, 2, NULL, 0, NULL, 0, values), SES_OK);
    memcpy(out, ses_tensor_data(values[0]), 15 * sizeof(float));
    memcpy(out + 15, ses_tensor_data(values[1]), 10 * sizeof(float));
    ses_tensor_release(values[0]);
    ses_tensor_release(values[1]);
}

static void a_graph_placed_across_two_workers_trains_as_a_local_session(void **state) {
    in_process_t p = {0};
    ses_remote_transport_t t = transport_of(&p);
    net_t local, remote;
    ses_session_t *ls, *rs;
    const char *cpu = "cpu";
    float expected[5 * 4], got[5 * 4], wl[25], wr[25];
    ses_tensor_t *found = NULL;

    (void)state;
    build(&local, 0);
    build(&remote, 1);
    assert_int_equal(ses_session_open(local.g, &cpu, 1, NULL, &ls), SES_OK);
    assert_int_equal(ses_remote_session_open(remote.g, &t, &cpu, 1, NULL, &rs), SES_OK);
    /* Initializing runs on the workers, which hold the variables. */
    assert_int_equal(ses_session_initialize_variables(rs), SES_OK);
    assert_int_equal(p.evals[0], 1);
    assert_int_equal(p.evals[1], 1);
    train(ls, &local, 5, expected);
    train(rs, &remote, 5, got);
    for (int i = 0; i < 5 * 4; i++)
        assert_float_equal(got[i], expected[i], 1e-5);
    assert_true(expected[0] > expected[16]); /* it learns */
    fetch_weights(ls, &local, wl);
    fetch_weights(rs, &remote, wr);
    for (int i = 0; i < 25; i++)
        assert_float_equal(wr[i], wl[i], 1e-5);
    /* Both workers computed; the variables live there, not here. */
    assert_true(p.evals[0] >= 5 && p.evals[1] >= 5);
    assert_int_equal(ses_scope_find(ses_session_scope(rs), "W1", &found), SES_NOT_FOUND);
    assert_int_equal(ses_scope_find(ses_session_scope(rs), "W2", &found), SES_NOT_FOUND);
    assert_int_equal(ses_scope_find(ses_session_scope(ls), "W2", &found), SES_OK);
    ses_tensor_release(found);

    /* The graph grows: workers get it again and keep their variables. */
    {
        ses_edge_t lw = op2(local.g, "Add", "w2x2", local.w2, local.w2, NULL);
        ses_edge_t rw = op2(remote.g, "Add", "w2x2", remote.w2, remote.w2, "/task:1/cpu");
        ses_tensor_t *lv, *rv;
        assert_int_equal(ses_session_eval(ls, &lw, 1, NULL, 0, NULL, 0, &lv), SES_OK);
        assert_int_equal(ses_session_eval(rs, &rw, 1, NULL, 0, NULL, 0, &rv), SES_OK);
        for (int i = 0; i < 10; i++)
            assert_float_equal(((float *)ses_tensor_data(rv))[i],
                               ((float *)ses_tensor_data(lv))[i], 1e-6);
        ses_tensor_release(lv);
        ses_tensor_release(rv);
    }

    /* Closing ends the job: every worker told once, the transport closed once. */
    assert_int_equal(ses_session_close(rs), SES_OK);
    assert_int_equal(p.exits[0], 1);
    assert_int_equal(p.exits[1], 1);
    assert_int_equal(p.closes, 1);
    {
        ses_tensor_t *v = NULL;
        assert_int_not_equal(ses_session_eval(rs, &remote.z, 1, NULL, 0, NULL, 0, &v), SES_OK);
        assert_null(v);
    }
    ses_session_destroy(rs);
    assert_int_equal(p.closes, 1);
    ses_session_destroy(ls);
    ses_graph_release(local.g);
    ses_graph_release(remote.g);
    free_workers(&p);
}

static void fed_and_fetched_edges_cross_in_both_directions(void **state) {
    in_process_t p = {0};
    ses_remote_transport_t t = transport_of(&p);
    net_t n;
    ses_session_t *s;
    const char *devices[2] = {"/task:1/cpu:0", "cpu"};
    ses_feed_t feeds[2];
    ses_tensor_t *values[2], *h = NULL;

    (void)state;
    build(&n, 1);
    /* Unrequested nodes go to the first device's task: here worker 1. */
    assert_int_equal(ses_remote_session_open(n.g, &t, devices, 2, NULL, &s), SES_OK);
    feeds_for(&n, 0, feeds);
    /* Feeding h (made on worker 0) means worker 0 runs nothing. */
    {
        ses_edge_t fetch[2] = {n.q, n.h};
        ses_feed_t f[2] = {feeds[0], {n.h, NULL}};
        int64_t hd[2] = {4, 5};
        assert_int_equal(ses_tensor_create(SES_F32, 2, hd, &h), SES_OK);
        for (int i = 0; i < 20; i++)
            ((float *)ses_tensor_data(h))[i] = 1.0f;
        f[1].value = h;
        assert_int_equal(ses_session_eval(s, fetch, 2, f, 2, NULL, 0, values), SES_OK);
        assert_int_equal(p.evals[0], 1); /* only q, after z */
        assert_float_equal(((float *)ses_tensor_data(values[1]))[3], 1.0f, 0);
        ses_tensor_release(values[0]);
        ses_tensor_release(values[1]);
    }
    ses_tensor_release(h);
    ses_tensor_release(feeds[0].value);
    ses_tensor_release(feeds[1].value);
    ses_session_destroy(s);
    ses_graph_release(n.g);
    free_workers(&p);
}

static void bad_names_and_a_lost_worker_are_clear_errors(void **state) {
    in_process_t p = {0};
    ses_remote_transport_t t = transport_of(&p);
    net_t n;
    ses_session_t *s = NULL;
    const char *bad_task[1] = {"/task:2/cpu"}, *malformed[1] = {"/task:x/cpu"};
    const char *no_device[1] = {"/task:1/nosuchdevice:0"}, *cpu = "cpu";
    ses_plan_t *plan = NULL;
    ses_tensor_t *v = NULL;

    (void)state;
    build(&n, 1);
    assert_int_equal(ses_remote_session_open(n.g, &t, bad_task, 1, NULL, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "2 workers"));
    assert_null(s);
    assert_int_equal(ses_remote_session_open(n.g, &t, malformed, 1, NULL, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "/task:K/<device>"));
    assert_int_equal(ses_remote_session_open(n.g, &t, no_device, 1, NULL, &s), SES_NOT_FOUND);
    assert_non_null(strstr(ses_last_error(), "task 1:"));
    assert_non_null(strstr(ses_last_error(), "nosuchdevice"));
    assert_int_equal(p.closes, 0); /* a failed open leaves the job to its owner */

    /* A node asking for a task the job does not have. */
    {
        ses_node_t *node;
        assert_int_equal(ses_graph_find_node(n.g, "q", &node), SES_OK);
        assert_int_equal(ses_node_set_device(node, "/task:5/gpu:0"), SES_OK);
        assert_int_equal(ses_remote_session_open(n.g, &t, &cpu, 1, NULL, &s), SES_INVALID_ARGUMENT);
        assert_non_null(strstr(ses_last_error(), "\"q\""));
        /* A local session names the node and says what is missing. */
        ses_feed_t feeds[2];
        feeds_for(&n, 0, feeds);
        assert_int_equal(ses_session_open(n.g, &cpu, 1, NULL, &s), SES_OK);
        assert_int_equal(ses_session_eval(s, &n.q, 1, feeds, 1, NULL, 0, &v), SES_NOT_FOUND);
        assert_non_null(strstr(ses_last_error(), "asks for device /task:0/cpu:0"));
        assert_non_null(strstr(ses_last_error(), "remote session"));
        ses_session_destroy(s);
        ses_tensor_release(feeds[0].value);
        ses_tensor_release(feeds[1].value);
        assert_int_equal(ses_node_set_device(node, "/task:0/cpu:0"), SES_OK);
    }

    assert_int_equal(ses_remote_session_open(n.g, &t, &cpu, 1, NULL, &s), SES_OK);
    assert_int_equal(ses_session_compile(s, &n.z, 1, NULL, 0, NULL, 0, &plan), SES_UNIMPLEMENTED);
    /* A worker's own error comes back with its task. */
    assert_int_equal(ses_session_eval(s, &n.z, 1, NULL, 0, NULL, 0, &v), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "task 0:"));
    assert_non_null(strstr(ses_last_error(), "x"));
    /* The transport breaks: the job is over for this session. */
    p.fail_calls = 1;
    {
        ses_feed_t feeds[2];
        feeds_for(&n, 0, feeds);
        assert_int_equal(ses_session_eval(s, &n.z, 1, feeds, 2, NULL, 0, &v), SES_UNAVAILABLE);
        assert_non_null(strstr(ses_last_error(), "worker 0 is gone"));
        assert_int_equal(ses_session_eval(s, &n.z, 1, feeds, 2, NULL, 0, &v), SES_UNAVAILABLE);
        assert_non_null(strstr(ses_last_error(), "job has ended"));
        assert_null(v);
        ses_tensor_release(feeds[0].value);
        ses_tensor_release(feeds[1].value);
    }
    ses_session_destroy(s);
    assert_int_equal(p.closes, 1);
    ses_graph_release(n.g);
    free_workers(&p);
}

static void null_and_malformed_arguments_are_refused(void **state) {
    in_process_t p = {0};
    ses_remote_transport_t t = transport_of(&p), bad;
    ses_graph_t *g = NULL;
    ses_session_t *s = (ses_session_t *)&p;
    const char *null_name[1] = {NULL};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_remote_session_open(g, &t, NULL, 0, NULL, NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_remote_session_open(NULL, &t, NULL, 0, NULL, &s), SES_INVALID_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(ses_last_error(), "graph"));
    assert_int_equal(ses_remote_session_open(g, NULL, NULL, 0, NULL, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "transport"));
    assert_int_equal(ses_remote_session_open(g, &t, NULL, 1, NULL, &s), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_remote_session_open(g, &t, null_name, 1, NULL, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "NULL"));
    bad = t;
    bad.struct_size = 8;
    assert_int_equal(ses_remote_session_open(g, &bad, NULL, 0, NULL, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "struct_size"));
    bad = t;
    bad.call = NULL;
    assert_int_equal(ses_remote_session_open(g, &bad, NULL, 0, NULL, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "call"));
    bad = t;
    bad.n_tasks = 0;
    assert_int_equal(ses_remote_session_open(g, &bad, NULL, 0, NULL, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "no workers"));
    assert_int_equal(ses_remote_worker_create(NULL), SES_INVALID_ARGUMENT);
    ses_remote_worker_destroy(NULL);
    assert_int_equal(p.closes, 0);
    ses_graph_release(g);
    free_workers(&p);
}

/* Requests cut at every length and with bytes flipped: an error in the reply, never a crash. */
static void hostile_requests_to_a_worker_are_refused(void **state) {
    ses_remote_worker_t *w;
    unsigned char junk[64];
    void *reply = NULL;
    size_t bytes = 0;
    int exit_now = 0;

    (void)state;
    assert_int_equal(ses_remote_worker_create(&w), SES_OK);
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)(i * 37 + 1);
    for (uint32_t kind = 0; kind < 5; kind++) {
        if (kind == 3)
            continue; /* goodbye is a valid request of any length */
        memcpy(junk, &kind, 4);
        for (size_t len = 0; len <= sizeof junk; len++) {
            assert_int_equal(ses_remote_worker_handle(w, junk, len, &reply, &bytes, &exit_now),
                             SES_OK);
            assert_true(bytes >= 8);
            assert_int_not_equal(*(uint32_t *)reply, SES_OK);
            assert_int_equal(exit_now, 0);
            free(reply);
        }
    }
    assert_int_equal(ses_remote_worker_handle(NULL, junk, 4, &reply, &bytes, &exit_now),
                     SES_INVALID_ARGUMENT);
    ses_remote_worker_destroy(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_graph_placed_across_two_workers_trains_as_a_local_session),
        cmocka_unit_test(fed_and_fetched_edges_cross_in_both_directions),
        cmocka_unit_test(bad_names_and_a_lost_worker_are_clear_errors),
        cmocka_unit_test(null_and_malformed_arguments_are_refused),
        cmocka_unit_test(hostile_requests_to_a_worker_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
