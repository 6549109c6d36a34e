/*
 * Remote sessions (<session/remote.h>), the worker's side: it keeps a session of its own on a
 * copy of the graph it was shipped and evaluates the segments it is sent, answering each request
 * (open, eval, exit) with one reply.
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
        if (node->device && ses__remote_parse_task(node->device, &k, &rest) > 0 && k == w->task) {
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
