/*
 * Cutting a remote eval into segments (remote.c runs them): which nodes the fetches and targets
 * need, runs of nodes of one task each in an order that respects every edge, which edges cross
 * from one segment to a later one, and each segment's feeds, fetches and targets.
 */
#include <stdlib.h>
#include <string.h>

#include "../compile/plan.h"
#include "../error.h"
#include "../graph/graph_internal.h"
#include "remote_internal.h"

/* Parses "/task:K/device": 1 with K and the device's offset, 0 for a local name, -1 if bad. */
int ses__remote_parse_task(const char *name, uint32_t *out_task, size_t *out_rest) {
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
ses_status_t ses__remote_mark_needed(eval_state_t *e, const ses_edge_t *fetches, size_t n_fetches,
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
size_t ses__remote_cut_segments(eval_state_t *e, const uint32_t *task_of) {
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
void ses__remote_mark_crossings(eval_state_t *e) {
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

/* Collects segment @p number's feeds, fetches and targets; @p seen is per edge, zeroed. */
void ses__remote_segment_io(const eval_state_t *e, size_t number, segment_io_t *io,
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
