/*
 * What can be known of node outputs' types without compiling or running anything, computed on
 * demand and cached: constants and placeholders give theirs, a variable its scope value's or
 * else its initializer's, an op node its schema's inference over its inputs' (a shape still
 * open, a placeholder's -1, gives nothing definite). Used where a graph is checked before any
 * plan exists (checkpoint restore).
 */
#include <stdlib.h>
#include <string.h>

#include "../alloc.h"
#include "../graph/graph_internal.h"
#include "../tensor/tensor_internal.h"
#include "static_types.h"

/* How deep the search goes before it gives up (unknown). */
#define MAX_INFER_DEPTH 64

struct ses__static_types {
    const ses_graph_t *graph;
    ses_scope_t *scope;
    unsigned char *state; /* per node: 0 not yet, 1 known, 2 unknown */
    ses__type_t *types;   /* per node, SES__MAX_OUTPUTS each */
};

void ses__type_of_tensor(const ses_tensor_t *t, ses__type_t *out) {
    memset(out, 0, sizeof *out);
    out->dtype = t->dtype;
    out->rank = t->rank;
    for (uint32_t d = 0; d < t->rank; d++)
        out->dims[d] = t->dims[d];
}

static int type_has_wildcard(const ses__type_t *t) {
    for (uint32_t d = 0; d < t->rank; d++)
        if (t->dims[d] < 0)
            return 1;
    return 0;
}

static int infer_node(ses__static_types_t *c, const ses_node_t *node, int depth);

/* The type of @p e; 0 when it cannot be known statically. */
static int infer_edge(ses__static_types_t *c, ses_edge_t e, ses__type_t *out, int depth) {
    if (!e.node || e.index >= SES__MAX_OUTPUTS || !infer_node(c, e.node, depth))
        return 0;
    *out = c->types[e.node->id * SES__MAX_OUTPUTS + e.index];
    return 1;
}

static int infer_node(ses__static_types_t *c, const ses_node_t *node, int depth) {
    ses__type_t *out = &c->types[node->id * SES__MAX_OUTPUTS];
    int known = 0;

    if (c->state[node->id])
        return c->state[node->id] == 1;
    if (depth > MAX_INFER_DEPTH || node->n_outputs > SES__MAX_OUTPUTS)
        return 0; /* not cached: a shallower path may still get there */
    switch (node->kind) {
    case SES__NODE_CONSTANT:
        ses__type_of_tensor(node->value, out);
        known = 1;
        break;
    case SES__NODE_PLACEHOLDER:
        memset(out, 0, sizeof *out);
        out->dtype = node->dtype;
        out->rank = node->rank;
        memcpy(out->dims, node->dims, sizeof out->dims);
        known = 1;
        break;
    case SES__NODE_VARIABLE: {
        ses_tensor_t *value = NULL;
        if (ses_scope_find(c->scope, node->name, &value) == SES_OK) {
            ses__type_of_tensor(value, out);
            ses_tensor_release(value);
            known = 1;
        } else {
            known = infer_edge(c, node->inputs[0], out, depth + 1);
        }
        break;
    }
    case SES__NODE_OP: {
        ses__type_t in_types[SES__MAX_INPUTS];
        const void *values[SES__MAX_INPUTS];
        ses__infer_ctx_t ctx;

        if (node->n_inputs > SES__MAX_INPUTS || !node->schema)
            break;
        known = 1;
        for (size_t i = 0; i < node->n_inputs && known; i++) {
            /* An input of a shape still open (a placeholder's -1) gives no definite type. */
            known = infer_edge(c, node->inputs[i], &in_types[i], depth + 1) &&
                    !type_has_wildcard(&in_types[i]);
            values[i] = node->inputs[i].node->kind == SES__NODE_CONSTANT
                            ? node->inputs[i].node->value->data
                            : NULL;
        }
        if (!known)
            break;
        memset(&ctx, 0, sizeof ctx);
        ctx.node = node->name;
        ctx.op = node->op;
        ctx.n_inputs = node->n_inputs;
        ctx.inputs = in_types;
        ctx.values = values;
        ctx.attrs = &node->attrs;
        ctx.n_outputs = node->n_outputs;
        known = ses__op_infer(node->schema, &ctx) == SES_OK;
        ses__attrs_clear(&ctx.kernel_attrs);
        if (known)
            memcpy(out, ctx.outputs, node->n_outputs * sizeof *out);
        break;
    }
    default:
        break;
    }
    c->state[node->id] = known ? 1 : 2;
    return known;
}

ses__static_types_t *ses__static_types_new(const ses_graph_t *g, ses_scope_t *scope) {
    ses__static_types_t *c = ses__calloc(1, sizeof *c);

    if (!c)
        return NULL;
    c->graph = g;
    c->scope = scope;
    c->state = ses__calloc(g->n_nodes + 1, 1);
    c->types = ses__calloc((g->n_nodes + 1) * SES__MAX_OUTPUTS, sizeof *c->types);
    if (!c->state || !c->types) {
        ses__static_types_free(c);
        return NULL;
    }
    return c;
}

void ses__static_types_free(ses__static_types_t *c) {
    if (!c)
        return;
    free(c->state);
    free(c->types);
    free(c);
}

int ses__static_type(ses__static_types_t *c, ses_edge_t e, ses__type_t *out) {
    return infer_edge(c, e, out, 0);
}
