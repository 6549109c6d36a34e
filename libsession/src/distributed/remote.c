/*
 * Remote sessions (<session/remote.h>), the session's side: opening (each node's task, the graph
 * shipped to the workers), each eval cut into segments of one task each (remote_partition.c) and
 * run in order, here or on a worker, and close. The worker's side is remote_worker.c.
 *
 * Tasks are numbered here 0 for this process and K + 1 for worker K. Every worker holds the
 * whole graph; a segment's eval feeds every edge its nodes read from another segment, so nothing
 * upstream of it runs there. A node that asks for another task's device keeps its "/task:"
 * request in the worker's graph, so a worker (or this process) that was ever asked to run it
 * would fail its compile naming the node, never compute it quietly.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/remote.h>

#include "../compile/plan.h"
#include "../error.h"
#include "../graph/graph_internal.h"
#include "../log.h"
#include "remote_internal.h"
#include "remote_wire.h"

typedef struct ses__remote ses__remote_t;

struct ses__remote {
    ses_remote_transport_t transport;
    pthread_mutex_t lock;
    char **names;      /* the session's device names, as given */
    size_t n_names;
    uint32_t default_task;
    uint64_t shipped_version; /* the graph version the workers hold */
    int shipped;
    uint32_t *task_of; /* per node */
    size_t n_task_of;
    char broken[512];  /* a transport failure: the job is gone */
};

static ses_status_t check_task_name(const ses__remote_t *r, const char *what, const char *name,
                                    uint32_t *out_task) {
    uint32_t k = 0;
    size_t rest;
    int kind = ses__remote_parse_task(name, &k, &rest);

    *out_task = LOCAL_TASK;
    if (kind < 0)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: device \"%s\": a worker's device is /task:K/<device>, such as "
                         "/task:1/gpu:0",
                         what, name);
    if (kind > 0 && k >= r->transport.n_tasks)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: device \"%s\": the job has %u worker%s (/task:0 to /task:%u)",
                         what, name, r->transport.n_tasks, r->transport.n_tasks == 1 ? "" : "s",
                         r->transport.n_tasks - 1);
    if (kind > 0)
        *out_task = k + 1;
    return SES_OK;
}

/* ---- calling a worker ------------------------------------------------------------------- */

/* Sends a request to worker @p task and reads the status and message at the head of the reply.
 * On SES_OK, @p out_reply holds the reply and @p r_out reads the rest of it. */
static ses_status_t call_worker(ses__remote_t *r, uint32_t task, ses__wire_writer_t *request,
                                void **out_reply, ses__wire_reader_t *reader) {
    void *reply = NULL;
    size_t bytes = 0;
    ses_status_t st;
    uint32_t status;
    char *message;

    *out_reply = NULL;
    if (r->broken[0])
        return ses__fail(SES_UNAVAILABLE, "remote session: the job has ended: %s", r->broken);
    if ((st = ses__wire_check(request, "remote session")) != SES_OK)
        return st;
    st = r->transport.call(r->transport.user, task - 1, request->data, request->used, &reply,
                           &bytes);
    if (st != SES_OK || !reply) {
        snprintf(r->broken, sizeof r->broken, "task %u: %s", task - 1,
                 st != SES_OK ? ses_last_error() : "no reply");
        free(reply);
        /* The request's effect on the worker is unknown, so the job ends either way; running out
         * of memory (here or in the worker's reply) is still reported as such. */
        return ses__fail(st == SES_OUT_OF_MEMORY ? SES_OUT_OF_MEMORY : SES_UNAVAILABLE,
                         "remote session: %s", r->broken);
    }
    *reader = (ses__wire_reader_t){reply, bytes, 0, 0, 0};
    status = ses__wire_read_u32(reader);
    message = ses__wire_read_string(reader);
    if (reader->failed) {
        st = ses__wire_read_fail(reader, "remote session: task %u sent a malformed reply",
                                 task - 1);
    } else if (status != SES_OK) {
        st = ses__fail(status <= SES_ALREADY_EXISTS ? (ses_status_t)status : SES_INTERNAL,
                       "task %u: %s", task - 1, message ? message : "");
    }
    free(message);
    if (st != SES_OK) {
        free(reply);
        return st;
    }
    *out_reply = reply;
    return SES_OK;
}

/* ---- shipping the graph ----------------------------------------------------------------- */

/*
 * Decides each node's task: its request's task; without a request, the task of a variable it
 * reads that has one, else the task that every one of its consumers has (so constants and
 * initializers stay with what reads them), else the task of the session's first device.
 */
static ses_status_t assign_tasks(ses__remote_t *r, const ses_graph_t *g) {
    size_t n = g->n_nodes;
    uint32_t *task = ses__calloc(n ? n : 1, sizeof *task);
    uint32_t *consumer = ses__calloc(n ? n : 1, sizeof *consumer); /* UINT32_MAX: several */
    unsigned char *requested = ses__calloc(n ? n : 1, 1);
    ses_status_t st = SES_OK;

    if (!task || !consumer || !requested) {
        st = ses__fail(SES_OUT_OF_MEMORY, "remote session: out of memory");
        goto done;
    }
    for (size_t i = 0; i < n && st == SES_OK; i++) {
        const ses_node_t *node = g->nodes[i];
        if (node->device) {
            char what[300];
            snprintf(what, sizeof what, "%s \"%s\"", node->op, node->name);
            st = check_task_name(r, what, node->device, &task[i]);
            requested[i] = 1;
        }
    }
    /* Consumers come after their producers: walk backwards so a chain of unrequested nodes
     * inherits from its end. consumer[i] is 0 while none was seen, task + 1 for one task. */
    for (size_t i = n; i-- > 0 && st == SES_OK;) {
        const ses_node_t *node = g->nodes[i];
        if (!requested[i]) {
            task[i] = consumer[i] && consumer[i] != UINT32_MAX ? consumer[i] - 1 : r->default_task;
            /* An op reading a variable (an optimizer's update above all) runs where it lives. */
            for (size_t k = 0; k < node->n_inputs; k++) {
                const ses_node_t *in = node->inputs[k].node;
                if (in->kind == SES__NODE_VARIABLE && requested[in->id]) {
                    task[i] = task[in->id];
                    break;
                }
            }
        }
        for (size_t k = 0; k < node->n_inputs; k++) {
            size_t p = node->inputs[k].node->id;
            if (!consumer[p])
                consumer[p] = task[i] + 1;
            else if (consumer[p] != task[i] + 1)
                consumer[p] = UINT32_MAX;
        }
    }
    if (st == SES_OK) {
        free(r->task_of);
        r->task_of = task;
        r->n_task_of = n;
        task = NULL;
    }

done:
    free(task);
    free(consumer);
    free(requested);
    return st;
}

/* The device names worker @p task opens: the session's for it, in order, then those its nodes
 * ask for; "/task:K/" removed. Duplicates are left to the worker, which resolves names. */
static void write_worker_devices(const ses__remote_t *r, const ses_graph_t *g, uint32_t task,
                                 ses__wire_writer_t *w) {
    size_t count = 0, at;
    uint32_t k;
    size_t rest;

    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            ses__wire_u64(w, count);
        for (size_t i = 0; i < r->n_names; i++)
            if (ses__remote_parse_task(r->names[i], &k, &rest) > 0 && k + 1 == task) {
                count += pass == 0;
                if (pass == 1)
                    ses__wire_string(w, r->names[i] + rest);
            }
        for (size_t i = 0; i < g->n_nodes; i++) {
            const char *d = g->nodes[i]->device;
            if (d && ses__remote_parse_task(d, &k, &at) > 0 && k + 1 == task) {
                count += pass == 0;
                if (pass == 1)
                    ses__wire_string(w, d + at);
            }
        }
    }
}

/* Gives every worker the graph as it is now (variables they hold are kept). */
static ses_status_t ship_graph(ses__remote_t *r, ses_session_t *s) {
    ses_status_t st = assign_tasks(r, s->graph);

    for (uint32_t task = 1; task <= r->transport.n_tasks && st == SES_OK; task++) {
        ses__wire_writer_t w = {0};
        ses__wire_reader_t reader;
        void *reply = NULL;

        ses__wire_u32(&w, REQUEST_OPEN);
        ses__wire_u32(&w, task - 1);
        ses__wire_u32(&w, (uint32_t)s->options.fallback);
        ses__wire_u32(&w, s->options.threads);
        ses__wire_u32(&w, (uint32_t)s->options.graphs);
        ses__wire_u32(&w, s->options.fusion);
        write_worker_devices(r, s->graph, task, &w);
        ses__wire_graph(&w, s->graph);
        st = call_worker(r, task, &w, &reply, &reader);
        free(w.data);
        free(reply);
    }
    if (st == SES_OK) {
        r->shipped = 1;
        r->shipped_version = s->graph->version;
    }
    return st;
}

/* ---- opening and closing ---------------------------------------------------------------- */

static void remote_free(ses__remote_t *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->n_names; i++)
        free(r->names[i]);
    free(r->names);
    free(r->task_of);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* What the session's evals and close go through (session_internal.h); defined below. */
static void remote_close(ses__remote_t *r);
static ses_status_t remote_eval(ses_session_t *s, const ses_edge_t *fetches, size_t n_fetches,
                                const ses_feed_t *feeds, size_t n_feeds, ses_node_t *const *targets,
                                size_t n_targets, ses_tensor_t **out_values);
static const ses__remote_hooks_t remote_hooks = {
    .eval = remote_eval,
    .close = remote_close,
    .free = remote_free,
};

ses_status_t ses_remote_session_open(ses_graph_t *graph, const ses_remote_transport_t *transport,
                                     const char *const *devices, size_t n_devices,
                                     const ses_session_options_t *options,
                                     ses_session_t **out_session) {
    ses__remote_t *r = NULL;
    const char **local = NULL;
    size_t n_local = 0;
    ses_session_t *s = NULL;
    ses_status_t st;

    if (!out_session)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_remote_session_open: out_session is NULL");
    *out_session = NULL;
    if (!graph || !transport || (n_devices && !devices))
        return ses__fail(SES_INVALID_ARGUMENT, "ses_remote_session_open: NULL %s",
                         !graph ? "graph" : !transport ? "transport" : "devices");
    if (transport->struct_size < sizeof *transport || !transport->call || !transport->n_tasks)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_remote_session_open: transport has %s",
                         transport->struct_size < sizeof *transport ? "a struct_size too small"
                         : !transport->call                        ? "no call function"
                                                                   : "no workers");
    r = ses__calloc(1, sizeof *r);
    local = ses__calloc(n_devices + 1, sizeof *local);
    if (r)
        r->names = ses__calloc(n_devices + 1, sizeof *r->names);
    if (!r || !local || !r->names) {
        free(local);
        if (r)
            free(r->names);
        free(r);
        return ses__fail(SES_OUT_OF_MEMORY, "ses_remote_session_open: out of memory");
    }
    pthread_mutex_init(&r->lock, NULL);
    r->transport = *transport;
    r->transport.struct_size = sizeof r->transport;
    st = SES_OK;
    for (size_t i = 0; i < n_devices && st == SES_OK; i++) {
        uint32_t task;
        if (!devices[i]) {
            st = ses__fail(SES_INVALID_ARGUMENT, "ses_remote_session_open: device name %zu is NULL", i);
            break;
        }
        if ((st = check_task_name(r, "ses_remote_session_open", devices[i], &task)) != SES_OK)
            break;
        if (i == 0)
            r->default_task = task;
        if (task == LOCAL_TASK)
            local[n_local++] = devices[i];
        if (!(r->names[r->n_names] = ses__strdup(devices[i])))
            st = ses__fail(SES_OUT_OF_MEMORY, "ses_remote_session_open: out of memory");
        else
            r->n_names++;
    }
    if (st == SES_OK)
        st = ses_session_open(graph, local, n_local, options, &s);
    free(local);
    if (st == SES_OK)
        st = ship_graph(r, s);
    if (st != SES_OK) {
        /* The job stays the caller's: no goodbye to the workers. */
        ses_session_destroy(s);
        remote_free(r);
        return st;
    }
    s->remote = r;
    s->remote_hooks = &remote_hooks;
    *out_session = s;
    return SES_OK;
}

static void remote_close(ses__remote_t *r) {
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    for (uint32_t task = 1; task <= r->transport.n_tasks && !r->broken[0]; task++) {
        ses__wire_writer_t w = {0};
        ses__wire_reader_t reader;
        void *reply = NULL;

        ses__wire_u32(&w, REQUEST_EXIT);
        if (call_worker(r, task, &w, &reply, &reader) != SES_OK)
            ses__clear_error();
        free(w.data);
        free(reply);
    }
    if (r->transport.close)
        r->transport.close(r->transport.user);
    r->transport.close = NULL;
    snprintf(r->broken, sizeof r->broken, "the session was closed");
    pthread_mutex_unlock(&r->lock);
}

/* ---- evaluating ------------------------------------------------------------------------- */

static ses_status_t run_on_worker(ses__remote_t *r, uint32_t task, const segment_io_t *io,
                                  ses_tensor_t **outs) {
    ses__wire_writer_t w = {0};
    ses__wire_reader_t reader;
    void *reply = NULL;
    ses_status_t st;

    ses__wire_u32(&w, REQUEST_EVAL);
    ses__wire_u64(&w, io->n_fetches);
    for (size_t i = 0; i < io->n_fetches; i++) {
        ses__wire_u64(&w, io->fetches[i].node->id);
        ses__wire_u32(&w, io->fetches[i].index);
    }
    ses__wire_u64(&w, io->n_feeds);
    for (size_t i = 0; i < io->n_feeds; i++) {
        ses__wire_u64(&w, io->feeds[i].edge.node->id);
        ses__wire_u32(&w, io->feeds[i].edge.index);
        ses__wire_tensor(&w, io->feeds[i].value);
    }
    ses__wire_u64(&w, io->n_targets);
    for (size_t i = 0; i < io->n_targets; i++)
        ses__wire_u64(&w, io->targets[i]->id);
    st = call_worker(r, task, &w, &reply, &reader);
    free(w.data);
    if (st == SES_OK && ses__wire_read_u64(&reader) != io->n_fetches)
        st = ses__fail(SES_INTERNAL, "remote session: task %u sent the wrong number of values",
                       task - 1);
    for (size_t i = 0; i < io->n_fetches && st == SES_OK; i++)
        st = ses__wire_read_tensor(&reader, &outs[i]);
    free(reply);
    return st;
}

static ses_status_t remote_eval(ses_session_t *s, const ses_edge_t *fetches, size_t n_fetches,
                               const ses_feed_t *feeds, size_t n_feeds,
                               ses_node_t *const *targets, size_t n_targets,
                               ses_tensor_t **out_values) {
    ses__remote_t *r = s->remote;
    const ses_graph_t *g = s->graph;
    size_t n = g->n_nodes, n_edges, segments;
    eval_state_t e = {g, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    segment_io_t io = {0};
    unsigned char *seen = NULL;
    ses_tensor_t **outs = NULL;
    ses_status_t st = SES_OK;

    for (size_t i = 0; i < n_fetches; i++)
        if (fetches[i].node && fetches[i].node->graph != g)
            return ses__fail(SES_INVALID_ARGUMENT, "ses_session_eval: fetch %zu is an edge of another graph", i);
    pthread_mutex_lock(&r->lock);
    if (r->broken[0]) {
        st = ses__fail(SES_UNAVAILABLE, "ses_session_eval: the job has ended: %s", r->broken);
        goto done;
    }
    if ((!r->shipped || r->shipped_version != g->version) && (st = ship_graph(r, s)) != SES_OK)
        goto done;
    e.task_of = r->task_of;
    e.offset = ses__malloc((n + 1) * sizeof *e.offset);
    if (!e.offset) {
        st = ses__fail(SES_OUT_OF_MEMORY, "ses_session_eval: out of memory");
        goto done;
    }
    e.offset[0] = 0;
    for (size_t i = 0; i < n; i++)
        e.offset[i + 1] = e.offset[i] + g->nodes[i]->n_outputs;
    n_edges = e.offset[n];
    e.fed = ses__calloc(n_edges + 1, sizeof *e.fed);
    e.value = ses__calloc(n_edges + 1, sizeof *e.value);
    e.fetched = ses__calloc(n_edges + 1, 1);
    e.cross = ses__calloc(n_edges + 1, 1);
    seen = ses__calloc(n_edges + 1, 1);
    e.target = ses__calloc(n + 1, 1);
    e.segment = ses__calloc(n + 1, sizeof *e.segment);
    io.fetches = ses__malloc((n_edges + 1) * sizeof *io.fetches);
    io.feeds = ses__malloc((n_edges + 1) * sizeof *io.feeds);
    io.targets = ses__malloc((n + 1) * sizeof *io.targets);
    outs = ses__calloc(n_edges + 1, sizeof *outs);
    if (!e.fed || !e.value || !e.fetched || !e.cross || !seen || !e.target || !e.segment ||
        !io.fetches || !io.feeds || !io.targets || !outs) {
        st = ses__fail(SES_OUT_OF_MEMORY, "ses_session_eval: out of memory");
        goto done;
    }
    for (size_t i = 0; i < n_feeds; i++) {
        ses_edge_t edge = feeds[i].edge;
        if (!edge.node || edge.node->graph != g || edge.index >= edge.node->n_outputs) {
            st = ses__fail(SES_INVALID_ARGUMENT, "ses_session_eval: feed %zu is not an edge of the session's graph", i);
            goto done;
        }
        if (e.fed[e.offset[edge.node->id] + edge.index]) {
            st = ses__fail(SES_INVALID_ARGUMENT, "ses_session_eval: %s:%u is fed twice",
                           edge.node->name, edge.index);
            goto done;
        }
        e.fed[e.offset[edge.node->id] + edge.index] = feeds[i].value;
    }
    for (size_t i = 0; i < n_fetches; i++) {
        ses_edge_t edge = fetches[i];
        if (!edge.node || edge.index >= edge.node->n_outputs) {
            st = ses__fail(SES_INVALID_ARGUMENT,
                           "ses_session_eval: fetch %zu: %s has no output %u%s", i,
                           edge.node ? edge.node->name : "(NULL)", edge.index,
                           edge.node && !edge.node->n_outputs ? "; pass it as a target" : "");
            goto done;
        }
        e.fetched[e.offset[edge.node->id] + edge.index] = 1;
    }
    for (size_t i = 0; i < n_targets; i++)
        if (!targets[i] || targets[i]->graph != g) {
            st = ses__fail(SES_INVALID_ARGUMENT, "ses_session_eval: target %zu is not a node of the session's graph", i);
            goto done;
        }
    if ((st = ses__remote_mark_needed(&e, fetches, n_fetches, targets, n_targets)) != SES_OK)
        goto done;
    segments = ses__remote_cut_segments(&e, r->task_of);
    if (segments >= SIZE_MAX - 1) {
        st = segments == SIZE_MAX
                 ? ses__fail(SES_OUT_OF_MEMORY, "ses_session_eval: out of memory")
                 : ses__fail(SES_FAILED_PRECONDITION,
                             "ses_session_eval: a variable is read after its update in "
                             "a way that cannot be split across tasks");
        goto done;
    }
    ses__remote_mark_crossings(&e);
    for (size_t number = 1; number <= segments && st == SES_OK; number++) {
        uint32_t task = LOCAL_TASK;
        for (size_t i = 0; i < n; i++)
            if (e.segment[i] == number) {
                task = r->task_of[i];
                break;
            }
        ses__remote_segment_io(&e, number, &io, seen);
        {
            size_t nodes = 0;
            char where[32] = "this process";
            for (size_t i = 0; i < n; i++)
                nodes += e.segment[i] == number;
            if (task != LOCAL_TASK)
                snprintf(where, sizeof where, "task %u", task - 1);
            ses__session_log(s, SES__LOG_DEBUG,
                             "remote eval: segment %zu of %zu on %s: %zu nodes, %zu values in, "
                             "%zu out, %zu run for effect",
                             number, segments, where, nodes, io.n_feeds, io.n_fetches,
                             io.n_targets);
        }
        if (task == LOCAL_TASK)
            st = ses__session_eval_local(s, io.fetches, io.n_fetches, io.feeds, io.n_feeds,
                                         io.targets, io.n_targets, outs);
        else
            st = run_on_worker(r, task, &io, outs);
        for (size_t i = 0; i < io.n_fetches; i++) {
            size_t at = e.offset[io.fetches[i].node->id] + io.fetches[i].index;
            if (st == SES_OK)
                e.value[at] = outs[i];
            else
                ses_tensor_release(outs[i]);
            outs[i] = NULL;
        }
    }
    /* The caller's values: each fetch its own tensor. */
    for (size_t i = 0; i < n_fetches && st == SES_OK; i++) {
        size_t at = e.offset[fetches[i].node->id] + fetches[i].index;
        ses_tensor_t *v = e.fed[at] ? e.fed[at] : e.value[at];
        if (!v) {
            st = ses__fail(SES_INTERNAL, "ses_session_eval: %s:%u was not computed",
                           fetches[i].node->name, fetches[i].index);
            break;
        }
        st = ses_tensor_create_from(ses_tensor_dtype(v), ses_tensor_rank(v), ses_tensor_dims(v),
                                    ses_tensor_data(v), ses_tensor_bytes(v), &out_values[i]);
    }
    if (st != SES_OK)
        for (size_t i = 0; i < n_fetches; i++) {
            ses_tensor_release(out_values[i]);
            out_values[i] = NULL;
        }

done:
    pthread_mutex_unlock(&r->lock);
    if (e.value)
        for (size_t i = 0; i < e.offset[n]; i++)
            ses_tensor_release(e.value[i]);
    free(e.offset);
    free(e.fed);
    free(e.value);
    free(e.fetched);
    free(e.cross);
    free(e.target);
    free(e.segment);
    free(seen);
    free(io.fetches);
    free(io.feeds);
    free(io.targets);
    free(outs);
    return st;
}
