/*
 * Remote sessions (<session/remote.h>): the session's side, which cuts each eval into segments
 * of one task each and runs them in order, and the worker's side, which keeps a session of its
 * own on a copy of the graph and evaluates the segments it is sent.
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
#include "remote_wire.h"

enum { REQUEST_OPEN = 1, REQUEST_EVAL = 2, REQUEST_EXIT = 3 };

#define LOCAL_TASK 0u

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

/* Parses "/task:K/device": 1 with K and the device's offset, 0 for a local name, -1 if bad. */
static int parse_task(const char *name, uint32_t *out_task, size_t *out_rest) {
    const char *p = name + 6;
    unsigned long k = 0;

    if (strncmp(name, "/task:", 6) != 0)
        return 0;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9' && k <= UINT32_MAX)
        k = k * 10 + (unsigned long)(*p++ - '0');
    if (k >= UINT32_MAX || *p != '/' || !p[1])
        return -1;
    *out_task = (uint32_t)k;
    *out_rest = (size_t)(p + 1 - name);
    return 1;
}

static ses_status_t check_task_name(const ses__remote_t *r, const char *what, const char *name,
                                    uint32_t *out_task) {
    uint32_t k = 0;
    size_t rest;
    int kind = parse_task(name, &k, &rest);

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
            if (parse_task(r->names[i], &k, &rest) > 0 && k + 1 == task) {
                count += pass == 0;
                if (pass == 1)
                    ses__wire_string(w, r->names[i] + rest);
            }
        for (size_t i = 0; i < g->n_nodes; i++) {
            const char *d = g->nodes[i]->device;
            if (d && parse_task(d, &k, &at) > 0 && k + 1 == task) {
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
                               const ses_feed_t *feeds, size_t n_feeds,
                               ses_node_t *const *targets, size_t n_targets,
                               ses_tensor_t **out_values);
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

typedef struct eval_state {
    const ses_graph_t *g;
    size_t *offset;         /* per node: its first edge's index; offset[n] edges in all */
    ses_tensor_t **fed;     /* per edge: the caller's value (borrowed) */
    ses_tensor_t **value;   /* per edge: computed by an earlier segment (owned) */
    unsigned char *fetched; /* per edge: the caller fetches it */
    unsigned char *cross;   /* per edge: a later segment reads it */
    unsigned char *target;  /* per node: run it for its effect */
    size_t *segment;        /* per node: its segment + 1; 0 when not needed */
    const uint32_t *task_of;
} eval_state_t;

/* The inputs an eval of a node needs from elsewhere: a variable's initializer is its owner's. */
static size_t needed_inputs(const ses_node_t *n) {
    return n->kind == SES__NODE_VARIABLE ? 0 : n->n_inputs;
}

/* Whether input @p k of @p node comes from elsewhere: fed inputs do not, and neither does a
 * variable of the node's own task, which its session reads in place (after any update). */
static int edge_fed(const eval_state_t *e, ses_edge_t edge) {
    return edge.index != SES_EDGE_CONTROL && e->fed[e->offset[edge.node->id] + edge.index];
}

static int input_elsewhere(const eval_state_t *e, const ses_node_t *node, size_t k) {
    ses_edge_t in = node->inputs[k];
    if (edge_fed(e, in))
        return 0;
    return in.node->kind != SES__NODE_VARIABLE ||
           e->task_of[in.node->id] != e->task_of[node->id];
}

/*
 * Marks what the fetches and targets need, with 1 in segment[] (numbered later). A NoOp is only
 * a group: it runs nowhere, and what it groups becomes targets of their own segments.
 */
static ses_status_t mark_needed(eval_state_t *e, const ses_edge_t *fetches, size_t n_fetches,
                                ses_node_t *const *targets, size_t n_targets) {
    size_t n = e->g->n_nodes, top = 0;
    size_t *stack = ses__malloc((n ? n : 1) * sizeof *stack);
    unsigned char *seen = ses__calloc(n ? n : 1, 1);

    if (!stack || !seen) {
        free(stack);
        free(seen);
        return ses__fail(SES_OUT_OF_MEMORY, "remote eval: out of memory");
    }
    for (size_t i = 0; i < n_fetches; i++)
        if (!edge_fed(e, fetches[i]) && !seen[fetches[i].node->id]) {
            seen[fetches[i].node->id] = 1;
            stack[top++] = fetches[i].node->id;
        }
    for (size_t i = 0; i < n_targets; i++) {
        e->target[targets[i]->id] = 1;
        if (!seen[targets[i]->id]) {
            seen[targets[i]->id] = 1;
            stack[top++] = targets[i]->id;
        }
    }
    while (top) {
        const ses_node_t *node = e->g->nodes[stack[--top]];
        int group = node->kind == SES__NODE_NOOP;
        if (!group)
            e->segment[node->id] = 1;
        for (size_t k = 0; k < needed_inputs(node); k++) {
            ses_edge_t in = node->inputs[k];
            if (group)
                e->target[in.node->id] = 1;
            if ((!group && !input_elsewhere(e, node, k)) || seen[in.node->id])
                continue;
            seen[in.node->id] = 1;
            stack[top++] = in.node->id;
        }
    }
    free(stack);
    free(seen);
    return SES_OK;
}

/* Whether @p node changes variable input @p k in place (an optimizer's update). */
static int updates_input(const ses_node_t *node, size_t k) {
    return node->kind == SES__NODE_OP && node->schema && k < 64 &&
           (node->schema->inplace_inputs >> k & 1) &&
           node->inputs[k].node->kind == SES__NODE_VARIABLE;
}

/* Whether every other needed node that reads a variable @p node updates is done: a session
 * orders reads before updates within one eval, and segments must keep that order. */
static int readers_done(const eval_state_t *e, const ses_node_t *node, const unsigned char *done) {
    for (size_t k = 0; k < node->n_inputs; k++) {
        const ses_node_t *v = node->inputs[k].node;
        if (!updates_input(node, k))
            continue;
        for (size_t i = v->id + 1; i < e->g->n_nodes; i++) {
            const ses_node_t *reader = e->g->nodes[i];
            if (reader == node || !e->segment[i] || done[i])
                continue;
            for (size_t j = 0; j < needed_inputs(reader); j++)
                if (reader->inputs[j].node == v && !updates_input(reader, j))
                    return 0;
        }
    }
    return 1;
}

static int ready(const eval_state_t *e, const ses_node_t *node, const unsigned char *done) {
    for (size_t k = 0; k < needed_inputs(node); k++)
        if (input_elsewhere(e, node, k) && !done[node->inputs[k].node->id])
            return 0;
    return readers_done(e, node, done);
}

/*
 * Numbers segments: each is every needed node of one task whose inputs are ready, found by
 * sweeping in node order until nothing more is; an update joins once the variable's readers
 * are done.
 */
static size_t cut_segments(eval_state_t *e, const uint32_t *task_of) {
    size_t n = e->g->n_nodes, count = 0;
    unsigned char *done = ses__calloc(n ? n : 1, 1);
    size_t left = 0;

    if (!done)
        return SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        left += e->segment[i] != 0;
    while (left) {
        uint32_t task = UINT32_MAX;
        int grew = 1;
        count++;
        /* The task of the first node that can run now. */
        for (size_t i = 0; i < n && task == UINT32_MAX; i++)
            if (e->segment[i] && !done[i] && ready(e, e->g->nodes[i], done))
                task = task_of[i];
        if (task == UINT32_MAX) {
            count = SIZE_MAX - 1; /* reads wait for an update that waits for them */
            break;
        }
        while (grew) {
            grew = 0;
            for (size_t i = 0; i < n; i++) {
                if (!e->segment[i] || done[i] || task_of[i] != task ||
                    !ready(e, e->g->nodes[i], done))
                    continue;
                done[i] = 1;
                e->segment[i] = count;
                left--;
                grew = 1;
            }
        }
    }
    free(done);
    return count;
}

/* What crosses segments: edges read by a later segment, nodes another segment runs for effect. */
static void mark_crossings(eval_state_t *e) {
    for (size_t i = 0; i < e->g->n_nodes; i++) {
        const ses_node_t *node = e->g->nodes[i];
        if (!e->segment[i])
            continue;
        if (!node->n_outputs)
            e->target[i] = 1;
        for (size_t k = 0; k < needed_inputs(node); k++) {
            ses_edge_t in = node->inputs[k];
            size_t p = in.node->id;
            if (!input_elsewhere(e, node, k) || e->segment[p] == e->segment[i])
                continue;
            if (in.index == SES_EDGE_CONTROL)
                e->target[p] = 1;
            else
                e->cross[e->offset[p] + in.index] = 1;
        }
    }
}

typedef struct segment_io {
    ses_edge_t *fetches;
    size_t n_fetches;
    ses_feed_t *feeds;
    size_t n_feeds;
    ses_node_t **targets;
    size_t n_targets;
} segment_io_t;

/* Collects segment @p number's feeds, fetches and targets; @p seen is per edge, zeroed. */
static void segment_io(const eval_state_t *e, size_t number, segment_io_t *io,
                       unsigned char *seen) {
    const ses_graph_t *g = e->g;

    io->n_fetches = io->n_feeds = io->n_targets = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        ses_node_t *node = g->nodes[i];
        if (e->segment[i] != number)
            continue;
        if (e->target[i])
            io->targets[io->n_targets++] = node;
        for (uint32_t j = 0; j < node->n_outputs; j++) {
            size_t at = e->offset[i] + j;
            if ((e->cross[at] || e->fetched[at]) && !e->fed[at])
                io->fetches[io->n_fetches++] = (ses_edge_t){node, j};
        }
        for (size_t k = 0; k < needed_inputs(node); k++) {
            ses_edge_t in = node->inputs[k];
            size_t at;
            if (in.index == SES_EDGE_CONTROL ||
                (!e->fed[e->offset[in.node->id] + in.index] && !input_elsewhere(e, node, k)))
                continue;
            at = e->offset[in.node->id] + in.index;
            if (seen[at] || (!e->fed[at] && e->segment[in.node->id] == number))
                continue;
            seen[at] = 1;
            io->feeds[io->n_feeds++] = (ses_feed_t){in, e->fed[at] ? e->fed[at] : e->value[at]};
        }
    }
    for (size_t i = 0; i < io->n_feeds; i++)
        seen[e->offset[io->feeds[i].edge.node->id] + io->feeds[i].edge.index] = 0;
}

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
    if ((st = mark_needed(&e, fetches, n_fetches, targets, n_targets)) != SES_OK)
        goto done;
    segments = cut_segments(&e, r->task_of);
    if (segments >= SIZE_MAX - 1) {
        st = segments == SIZE_MAX ? ses__fail(SES_OUT_OF_MEMORY, "ses_session_eval: out of memory")
                      : ses__fail(SES_FAILED_PRECONDITION,
                                  "ses_session_eval: a variable is read after its update in "
                                  "a way that cannot be split across tasks");
        goto done;
    }
    mark_crossings(&e);
    for (size_t number = 1; number <= segments && st == SES_OK; number++) {
        uint32_t task = LOCAL_TASK;
        for (size_t i = 0; i < n; i++)
            if (e.segment[i] == number) {
                task = r->task_of[i];
                break;
            }
        segment_io(&e, number, &io, seen);
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

/* ---- the worker ------------------------------------------------------------------------- */

struct ses_remote_worker {
    ses_graph_t *graph;
    ses_session_t *session;
    uint32_t task;
};

ses_status_t ses_remote_worker_create(ses_remote_worker_t **out) {
    if (!out)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_remote_worker_create: out_worker is NULL");
    *out = ses__calloc(1, sizeof **out);
    return *out ? SES_OK
                : ses__fail(SES_OUT_OF_MEMORY, "ses_remote_worker_create: out of memory");
}

void ses_remote_worker_destroy(ses_remote_worker_t *w) {
    if (!w)
        return;
    ses_session_destroy(w->session);
    ses_graph_release(w->graph);
    free(w);
}

/* OPEN: a new graph and a session on it, keeping the variables of the one before. */
static ses_status_t worker_open(ses_remote_worker_t *w, ses__wire_reader_t *r) {
    ses_session_options_t options;
    const ses_device_t **devices = NULL;
    char **names = NULL;
    size_t n_names = 0, n_devices = 0;
    ses_registry_t *registry = NULL;
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_status_t st = SES_OK;
    uint64_t count;

    ses_session_options_init(&options);
    w->task = ses__wire_read_u32(r);
    options.fallback = (ses_fallback_t)ses__wire_read_u32(r);
    options.threads = ses__wire_read_u32(r);
    options.graphs = (int)ses__wire_read_u32(r);
    options.fusion = ses__wire_read_u32(r);
    count = ses__wire_read_u64(r);
    if (r->failed || count > r->size)
        return ses__wire_read_fail(r, "remote message: device names cut short");
    names = ses__calloc((size_t)count + 1, sizeof *names);
    devices = ses__calloc((size_t)count + 1, sizeof *devices);
    if (!names || !devices) {
        st = ses__fail(SES_OUT_OF_MEMORY, "remote worker: out of memory");
        goto done;
    }
    for (uint64_t i = 0; i < count && st == SES_OK; i++)
        if (!(names[i] = ses__wire_read_string(r)))
            st = ses__wire_read_fail(r, "remote message: device names cut short");
    if (st == SES_OK)
        st = ses__wire_read_graph(r, &g);
    if (st == SES_OK)
        st = ses_registry_default(&registry);
    /* One name per device: "gpu:0" and "cuda:0" may be the same one. */
    for (uint64_t i = 0; i < count && st == SES_OK; i++) {
        const ses_device_t *device;
        int again = 0;
        if ((st = ses_registry_find_device(registry, names[i], &device)) != SES_OK)
            break;
        for (size_t k = 0; k < n_devices; k++)
            again |= devices[k] == device;
        if (again) {
            free(names[i]);
            names[i] = NULL;
            continue;
        }
        devices[n_devices++] = device;
        names[n_names++] = names[i];
        if (n_names - 1 != i)
            names[i] = NULL;
    }
    if (st != SES_OK)
        goto done;
    /* This worker's requests lose their "/task:K/"; other tasks' keep it (see the top). */
    for (size_t i = 0; i < g->n_nodes && st == SES_OK; i++) {
        ses_node_t *node = g->nodes[i];
        uint32_t k;
        size_t rest;
        if (node->device && parse_task(node->device, &k, &rest) > 0 && k == w->task) {
            char *local = ses__strdup(node->device + rest);
            st = local ? ses_node_set_device(node, local)
                       : ses__fail(SES_OUT_OF_MEMORY, "remote worker: out of memory");
            free(local);
        }
    }
    if (st == SES_OK)
        st = ses_session_open(g, (const char *const *)names, n_names, &options, &s);
    if (st == SES_OK && w->session)
        st = ses_session_copy_variables(s, w->session);
    if (st != SES_OK)
        goto done;
    ses_session_destroy(w->session);
    ses_graph_release(w->graph);
    w->session = s;
    w->graph = g;
    s = NULL;
    g = NULL;

done:
    ses_session_destroy(s);
    ses_graph_release(g);
    for (size_t i = 0; names && i < count; i++)
        free(names[i]);
    free(names);
    free(devices);
    return st;
}

static ses_status_t read_edge(ses_remote_worker_t *w, ses__wire_reader_t *r, ses_edge_t *out) {
    uint64_t id = ses__wire_read_u64(r);
    uint32_t index = ses__wire_read_u32(r);

    if (r->failed || id >= w->graph->n_nodes || index >= w->graph->nodes[id]->n_outputs)
        return ses__fail(SES_INTERNAL, "remote message: no edge %llu:%u in a graph of %zu nodes",
                         (unsigned long long)id, index, w->graph->n_nodes);
    *out = (ses_edge_t){w->graph->nodes[id], index};
    return SES_OK;
}

/* EVAL: one segment; its values follow the reply's status. */
static ses_status_t worker_eval(ses_remote_worker_t *w, ses__wire_reader_t *r,
                                ses__wire_writer_t *values) {
    uint64_t n_fetches = ses__wire_read_u64(r), n_feeds = 0, n_targets = 0;
    ses_edge_t *fetches = NULL;
    ses_feed_t *feeds = NULL;
    ses_node_t **targets = NULL;
    ses_tensor_t **outs = NULL;
    ses_status_t st = SES_OK;

    if (!w->session)
        return ses__fail(SES_FAILED_PRECONDITION, "remote worker: no session is open");
    if (r->failed || n_fetches > r->size)
        return ses__wire_read_fail(r, "remote message: fetches cut short");
    fetches = ses__calloc((size_t)n_fetches + 1, sizeof *fetches);
    outs = ses__calloc((size_t)n_fetches + 1, sizeof *outs);
    if (!fetches || !outs) {
        st = ses__fail(SES_OUT_OF_MEMORY, "remote worker: out of memory");
        goto done;
    }
    for (uint64_t i = 0; i < n_fetches && st == SES_OK; i++)
        st = read_edge(w, r, &fetches[i]);
    n_feeds = ses__wire_read_u64(r);
    if (st == SES_OK && (r->failed || n_feeds > r->size))
        st = ses__wire_read_fail(r, "remote message: feeds cut short");
    if (st == SES_OK && !(feeds = ses__calloc((size_t)n_feeds + 1, sizeof *feeds)))
        st = ses__fail(SES_OUT_OF_MEMORY, "remote worker: out of memory");
    for (uint64_t i = 0; i < n_feeds && st == SES_OK; i++) {
        st = read_edge(w, r, &feeds[i].edge);
        if (st == SES_OK)
            st = ses__wire_read_tensor(r, &feeds[i].value);
    }
    if (st == SES_OK) {
        n_targets = ses__wire_read_u64(r);
        if (r->failed || n_targets > r->size)
            st = ses__wire_read_fail(r, "remote message: targets cut short");
        else if (!(targets = ses__calloc((size_t)n_targets + 1, sizeof *targets)))
            st = ses__fail(SES_OUT_OF_MEMORY, "remote worker: out of memory");
    }
    for (uint64_t i = 0; i < n_targets && st == SES_OK; i++) {
        uint64_t id = ses__wire_read_u64(r);
        if (r->failed || id >= w->graph->n_nodes)
            st = ses__fail(SES_INTERNAL, "remote message: no target node %llu",
                           (unsigned long long)id);
        else
            targets[i] = w->graph->nodes[id];
    }
    if (st == SES_OK)
        st = ses_session_eval(w->session, fetches, (size_t)n_fetches, feeds, (size_t)n_feeds,
                              targets, (size_t)n_targets, outs);
    if (st == SES_OK) {
        ses__wire_u64(values, n_fetches);
        for (uint64_t i = 0; i < n_fetches; i++)
            ses__wire_tensor(values, outs[i]);
    }

done:
    for (uint64_t i = 0; outs && i < n_fetches; i++)
        ses_tensor_release(outs[i]);
    for (uint64_t i = 0; feeds && i < n_feeds; i++)
        ses_tensor_release(feeds[i].value);
    free(fetches);
    free(feeds);
    free(targets);
    free(outs);
    return st;
}

ses_status_t ses_remote_worker_handle(ses_remote_worker_t *w, const void *request,
                                      size_t request_bytes, void **out_reply,
                                      size_t *out_reply_bytes, int *out_exit) {
    ses__wire_reader_t r = {request, request_bytes, 0, 0, 0};
    ses__wire_writer_t values = {0}, reply = {0};
    ses_status_t st;
    uint32_t kind;

    if (!out_reply || !out_reply_bytes || !out_exit)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_remote_worker_handle: NULL out argument");
    *out_reply = NULL;
    *out_reply_bytes = 0;
    *out_exit = 0;
    if (!w || (!request && request_bytes))
        return ses__fail(SES_INVALID_ARGUMENT, "ses_remote_worker_handle: NULL %s",
                         !w ? "worker" : "request");
    kind = ses__wire_read_u32(&r);
    switch (r.failed ? 0 : kind) {
    case REQUEST_OPEN: st = worker_open(w, &r); break;
    case REQUEST_EVAL: st = worker_eval(w, &r, &values); break;
    case REQUEST_EXIT:
        ses_session_destroy(w->session);
        ses_graph_release(w->graph);
        w->session = NULL;
        w->graph = NULL;
        *out_exit = 1;
        st = SES_OK;
        break;
    default: st = ses__fail(SES_INTERNAL, "remote message: unknown request %u", kind);
    }
    ses__wire_u32(&reply, (uint32_t)st);
    ses__wire_string(&reply, st == SES_OK ? "" : ses_last_error());
    if (st == SES_OK)
        ses__wire_bytes(&reply, values.data, values.used);
    free(values.data);
    if (values.failed || reply.failed) {
        free(reply.data);
        return ses__fail(SES_OUT_OF_MEMORY, "remote worker: out of memory writing a reply");
    }
    *out_reply = reply.data;
    *out_reply_bytes = reply.used;
    return SES_OK;
}
