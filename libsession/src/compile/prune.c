/*
 * Pruning: from the fetches and targets back through the inputs, stopping at fed edges and at
 * variables (a variable's initializer runs only when the variable is first set). Checks the
 * request: edges of this graph, outputs that exist, no edge fed twice, every needed placeholder
 * fed, no cycle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "plan.h"

size_t ses__fed_index(const ses_edge_t *fed, size_t n_fed, ses_edge_t edge) {
    for (size_t i = 0; i < n_fed; i++)
        if (fed[i].node == edge.node && fed[i].index == edge.index)
            return i;
    return SIZE_MAX;
}

static ses_status_t check_edge(const ses_graph_t *g, const char *what, size_t i, ses_edge_t e) {
    char text[300];

    if (!e.node)
        return ses__fail(SES_INVALID_ARGUMENT, "%s %zu is a NULL edge", what, i);
    if (e.node->graph != g)
        return ses__fail(SES_INVALID_ARGUMENT, "%s %zu (%s) belongs to another graph", what, i,
                         ses__edge_format(e, text, sizeof text));
    if (e.node->n_outputs == 0)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s %zu: node \"%s\" (%s) has no outputs; pass it as a target to run it",
                         what, i, e.node->name, e.node->op);
    if (e.index >= e.node->n_outputs)
        return ses__fail(SES_INVALID_ARGUMENT, "%s %zu: node \"%s\" (%s) has no output %u, only %zu",
                         what, i, e.node->name, e.node->op, e.index, e.node->n_outputs);
    return SES_OK;
}

typedef struct walker {
    const ses_edge_t *fed;
    size_t n_fed;
    unsigned char *color; /* 0 unseen, 1 on the stack, 2 done */
    const ses_node_t **order;
    size_t n_order;
    const ses_node_t **stack;
    size_t *next_input;
} walker_t;

static ses_status_t not_fed(const ses_node_t *placeholder, const ses_node_t *consumer) {
    if (consumer)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "placeholder \"%s\" is not fed, and node \"%s\" (%s) needs it",
                         placeholder->name, consumer->name, consumer->op);
    return ses__fail(SES_INVALID_ARGUMENT, "placeholder \"%s\" is fetched but not fed",
                     placeholder->name);
}

/* Depth-first from @p root, appending nodes in post-order (inputs before their consumers). */
static ses_status_t visit(walker_t *w, const ses_node_t *root, const ses_node_t *consumer) {
    size_t depth = 0;

    if (w->color[root->id] == 2)
        return SES_OK;
    if (root->kind == SES__NODE_PLACEHOLDER)
        return not_fed(root, consumer);
    w->stack[depth] = root;
    w->next_input[depth] = 0;
    w->color[root->id] = 1;
    depth = 1;
    while (depth) {
        const ses_node_t *n = w->stack[depth - 1];
        size_t i = w->next_input[depth - 1]++;

        /* A variable's input is its initializer, which eval runs separately. */
        if (i < n->n_inputs && n->kind != SES__NODE_VARIABLE) {
            ses_edge_t in = n->inputs[i];
            const ses_node_t *p = in.node;
            if (ses__fed_index(w->fed, w->n_fed, in) != SIZE_MAX || w->color[p->id] == 2)
                continue;
            if (w->color[p->id] == 1)
                return ses__fail(SES_INVALID_ARGUMENT,
                                 "the graph has a cycle: node \"%s\" (%s) depends on itself "
                                 "through input %zu of \"%s\"",
                                 p->name, p->op, i, n->name);
            if (p->kind == SES__NODE_PLACEHOLDER)
                return not_fed(p, n);
            w->color[p->id] = 1;
            w->stack[depth] = p;
            w->next_input[depth] = 0;
            depth++;
            continue;
        }
        w->color[n->id] = 2;
        w->order[w->n_order++] = n;
        depth--;
    }
    return SES_OK;
}

ses_status_t ses__prune(const ses_graph_t *g, const ses_edge_t *fetches, size_t n_fetches,
                        const ses_edge_t *fed, size_t n_fed, ses_node_t *const *targets,
                        size_t n_targets, ses__pruned_t *out) {
    walker_t w = {fed, n_fed, NULL, NULL, 0, NULL, NULL};
    ses_status_t st = SES_OK;
    size_t n_vars = 0;

    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n_fetches; i++)
        if ((st = check_edge(g, "fetch", i, fetches[i])) != SES_OK)
            return st;
    for (size_t i = 0; i < n_fed; i++) {
        char text[300];
        if ((st = check_edge(g, "feed", i, fed[i])) != SES_OK)
            return st;
        if (ses__fed_index(fed, i, fed[i]) != SIZE_MAX)
            return ses__fail(SES_INVALID_ARGUMENT, "edge %s is fed twice (feeds %zu and %zu)",
                             ses__edge_format(fed[i], text, sizeof text),
                             ses__fed_index(fed, i, fed[i]), i);
    }
    for (size_t i = 0; i < n_targets; i++) {
        if (!targets[i])
            return ses__fail(SES_INVALID_ARGUMENT, "target %zu is NULL", i);
        if (targets[i]->graph != g)
            return ses__fail(SES_INVALID_ARGUMENT, "target %zu (\"%s\") belongs to another graph",
                             i, targets[i]->name);
    }

    w.color = ses__calloc(g->n_nodes + 1, 1);
    w.order = ses__malloc((g->n_nodes + 1) * sizeof *w.order);
    w.stack = ses__malloc((g->n_nodes + 1) * sizeof *w.stack);
    w.next_input = ses__malloc((g->n_nodes + 1) * sizeof *w.next_input);
    if (!w.color || !w.order || !w.stack || !w.next_input) {
        st = ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
        goto done;
    }
    for (size_t i = 0; i < n_fetches && st == SES_OK; i++)
        if (ses__fed_index(fed, n_fed, fetches[i]) == SIZE_MAX)
            st = visit(&w, fetches[i].node, NULL);
    for (size_t i = 0; i < n_targets && st == SES_OK; i++)
        st = visit(&w, targets[i], NULL);
    if (st != SES_OK)
        goto done;

    for (size_t i = 0; i < w.n_order; i++)
        n_vars += w.order[i]->kind == SES__NODE_VARIABLE;
    out->variables = ses__malloc((n_vars + 1) * sizeof *out->variables);
    if (!out->variables) {
        st = ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
        goto done;
    }
    for (size_t i = 0; i < w.n_order; i++)
        if (w.order[i]->kind == SES__NODE_VARIABLE)
            out->variables[out->n_variables++] = w.order[i];
    out->nodes = w.order;
    out->n_nodes = w.n_order;
    w.order = NULL;

done:
    free(w.color);
    free(w.order);
    free(w.stack);
    free(w.next_input);
    return st;
}

void ses__pruned_clear(ses__pruned_t *p) {
    free(p->nodes);
    free(p->variables);
    memset(p, 0, sizeof *p);
}
