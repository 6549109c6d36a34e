/*
 * Reverse-mode gradients built as graph nodes.
 *
 * The backward graph is built before shapes are known, so builders never read a shape or dtype:
 * reductions back to an input's shape use ReduceSumLike, constants use ScalarLike, and the
 * awkward cases have fused gradient ops (ReluGrad, MatMulGrad, ReduceGrad, ...).
 *
 * Order: node ids are topological (inputs are created first), so visiting the nodes between
 * the xs and the ys from the highest id down sees every consumer of an edge before the edge's
 * producer, and an edge's gradient is complete (summed over its consumers) when its producer
 * is visited.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/train.h>

#include "../error.h"
#include "../graph/graph_internal.h"
#include "gradients_internal.h"

/* ---- emitting nodes --------------------------------------------------------------------- */

/* Adds op @p op named "<prefix>/<for>/<op>" (made unique) and stores output 0 in @p out. */
ses_status_t ses__grad_op(ses__grad_ctx_t *c, const char *op, const ses_edge_t *inputs,
                          size_t n_inputs, const ses_attr_t *attrs, size_t n_attrs,
                          ses_edge_t *out) {
    char name[512];
    ses_node_t *existing = NULL;
    ses_node_t *node = NULL;
    ses_status_t st;

    snprintf(name, sizeof name, "%s/%s/%s", c->prefix, c->current ? c->current : "", op);
    for (unsigned k = 1; ses_graph_find_node(c->g, name, &existing) == SES_OK; k++)
        snprintf(name, sizeof name, "%s/%s/%s_%u", c->prefix, c->current ? c->current : "", op,
                 k);
    st = ses_graph_add_node(c->g, op, name, inputs, n_inputs, attrs, n_attrs, 1, &node);
    if (st != SES_OK)
        return st;
    *out = ses_node_output(node, 0);
    return SES_OK;
}

ses_status_t ses__grad_unary(ses__grad_ctx_t *c, const char *op, ses_edge_t a, ses_edge_t *out) {
    return ses__grad_op(c, op, &a, 1, NULL, 0, out);
}

ses_status_t ses__grad_binary(ses__grad_ctx_t *c, const char *op, ses_edge_t a, ses_edge_t b,
                              ses_edge_t *out) {
    ses_edge_t in[2] = {a, b};
    return ses__grad_op(c, op, in, 2, NULL, 0, out);
}

ses_status_t ses__grad_scalar(ses__grad_ctx_t *c, ses_edge_t like, double value, ses_edge_t *out) {
    ses_attr_t a = ses_attr_float("value", value);
    return ses__grad_op(c, "ScalarLike", &like, 1, &a, 1, out);
}

/* ---- the walk ----------------------------------------------------------------------------- */

/* Per node: does it depend on an x (through op inputs, never through a variable's
 * initializer), and does a y depend on it. */
typedef struct marks {
    unsigned char *from_x;
    unsigned char *to_y;
    size_t n; /* nodes marked: those of the graph before any gradient node was added */
} marks_t;

static int is_x(const ses_edge_t *xs, size_t n_xs, ses_edge_t e) {
    for (size_t i = 0; i < n_xs; i++)
        if (xs[i].node == e.node && xs[i].index == e.index)
            return 1;
    return 0;
}

/* Whether input @p i of node @p n carries something that depends on an x. */
static int input_from_x(const marks_t *m, const ses_edge_t *xs, size_t n_xs, const ses_node_t *n,
                        size_t i) {
    ses_edge_t in = n->inputs[i];
    if (in.index == SES_EDGE_CONTROL)
        return 0;
    return is_x(xs, n_xs, in) || m->from_x[in.node->id];
}

static void mark(const ses_graph_t *g, const ses_edge_t *xs, size_t n_xs, const ses_edge_t *ys,
                 size_t n_ys, marks_t *m) {
    for (size_t id = 0; id < g->n_nodes; id++) {
        const ses_node_t *n = g->nodes[id];
        if (n->kind != SES__NODE_OP)
            continue;
        for (size_t i = 0; i < n->n_inputs && !m->from_x[id]; i++)
            m->from_x[id] = (unsigned char)input_from_x(m, xs, n_xs, n, i);
    }
    for (size_t i = 0; i < n_ys; i++)
        m->to_y[ys[i].node->id] = 1;
    for (size_t id = g->n_nodes; id-- > 0;) {
        const ses_node_t *n = g->nodes[id];
        if (!m->to_y[id] || n->kind != SES__NODE_OP)
            continue;
        for (size_t i = 0; i < n->n_inputs; i++)
            if (n->inputs[i].index != SES_EDGE_CONTROL)
                m->to_y[n->inputs[i].node->id] = 1;
    }
}

/* "x -> a -> n -> b -> y": one path from an x through @p n to a y, for error messages. */
static void describe_path(const ses_graph_t *g, const marks_t *m, const ses_edge_t *xs,
                          size_t n_xs, const ses_node_t *n, char *out, size_t size) {
    const ses_node_t *back[32], *fwd[32];
    size_t nb = 0, nf = 0, used = 0;
    const ses_node_t *cur = n;

    /* Backward to an x. */
    while (cur && nb < 32) {
        const ses_node_t *next = NULL;
        back[nb++] = cur;
        if (cur->kind != SES__NODE_OP)
            break;
        for (size_t i = 0; i < cur->n_inputs && !next; i++) {
            if (cur->inputs[i].index == SES_EDGE_CONTROL)
                continue;
            if (is_x(xs, n_xs, cur->inputs[i])) {
                if (nb < 32)
                    back[nb++] = cur->inputs[i].node;
                cur = NULL;
                break;
            }
            if (m->from_x[cur->inputs[i].node->id])
                next = cur->inputs[i].node;
        }
        if (cur)
            cur = next;
    }
    /* Forward to a y: the first consumer on the way. */
    cur = n;
    while (cur && nf < 32) {
        const ses_node_t *next = NULL;
        for (size_t id = cur->id + 1; id < m->n && !next; id++) {
            const ses_node_t *c = g->nodes[id];
            if (c->kind != SES__NODE_OP || !m->to_y[id])
                continue;
            for (size_t i = 0; i < c->n_inputs; i++)
                if (c->inputs[i].node == cur && c->inputs[i].index != SES_EDGE_CONTROL)
                    next = c;
        }
        if (next)
            fwd[nf++] = next;
        cur = next;
    }
    out[0] = '\0';
    for (size_t i = nb; i-- > 0 && used < size;)
        used += (size_t)snprintf(out + used, size - used, "%s%s", i + 1 < nb ? " -> " : "",
                                 back[i]->name);
    for (size_t i = 0; i < nf && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, " -> %s", fwd[i]->name);
}

/* Adds @p dx to what edge @p e has gathered so far. */
static ses_status_t accumulate(ses__grad_ctx_t *c, ses_edge_t *sums, ses_edge_t e, ses_edge_t dx) {
    size_t k = e.node->id * SES__MAX_OUTPUTS + e.index;
    const char *saved = c->current;
    ses_status_t st;

    if (!sums[k].node) {
        sums[k] = dx;
        return SES_OK;
    }
    c->current = e.node->name;
    st = ses__grad_binary(c, "Add", sums[k], dx, &sums[k]);
    c->current = saved;
    return st;
}

ses_status_t ses_gradients(ses_graph_t *g, const char *prefix, const ses_edge_t *ys, size_t n_ys,
                           const ses_edge_t *xs, size_t n_xs, const ses_edge_t *dys,
                           ses_edge_t *out_dxs) {
    ses__grad_ctx_t c;
    marks_t m = {NULL, NULL, 0};
    ses_edge_t *sums = NULL;
    size_t n_before, n_nodes;
    ses_status_t st = SES_OK;

    if (!g || !out_dxs || (n_ys && !ys) || (n_xs && !xs) || n_ys == 0)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_gradients: %s",
                         !g         ? "graph is NULL"
                         : !out_dxs ? "out_dxs is NULL"
                         : n_ys == 0 ? "no ys"
                                     : "ys or xs is NULL");
    for (size_t i = 0; i < n_xs; i++)
        out_dxs[i] = (ses_edge_t){NULL, 0};
    for (size_t i = 0; i < n_ys + n_xs; i++) {
        ses_edge_t e = i < n_ys ? ys[i] : xs[i - n_ys];
        if (!e.node || e.node->graph != g || e.index >= e.node->n_outputs)
            return ses__fail(SES_INVALID_ARGUMENT, "ses_gradients: %s %zu is %s",
                             i < n_ys ? "y" : "x", i < n_ys ? i : i - n_ys,
                             !e.node ? "a NULL edge"
                             : e.node->graph != g ? "from another graph"
                                                  : "an output the node does not have");
    }
    for (size_t i = 0; dys && i < n_ys; i++)
        if (!dys[i].node || dys[i].node->graph != g)
            return ses__fail(SES_INVALID_ARGUMENT, "ses_gradients: dy %zu is %s", i,
                             !dys[i].node ? "a NULL edge" : "from another graph");

    n_before = n_nodes = g->n_nodes;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.prefix = prefix && *prefix ? prefix : "gradients";
    m.n = n_nodes;
    m.from_x = ses__calloc(n_nodes + 1, 1);
    m.to_y = ses__calloc(n_nodes + 1, 1);
    /* Sums for the edges of the nodes that exist now; new nodes never need one. */
    sums = ses__calloc(n_nodes * SES__MAX_OUTPUTS + 1, sizeof *sums);
    if (!m.from_x || !m.to_y || !sums) {
        st = ses__fail(SES_OUT_OF_MEMORY, "ses_gradients: out of memory");
        goto done;
    }
    mark(g, xs, n_xs, ys, n_ys, &m);

    /* Seeds: dy, or ones shaped like y. */
    for (size_t i = 0; i < n_ys && st == SES_OK; i++) {
        ses_edge_t seed = dys ? dys[i] : (ses_edge_t){NULL, 0};
        if (!dys) {
            ses_edge_t one, in[2];
            c.current = ys[i].node->name;
            st = ses__grad_scalar(&c, ys[i], 1.0, &one);
            in[0] = one;
            in[1] = ys[i];
            if (st == SES_OK)
                st = ses__grad_op(&c, "ExpandLike", in, 2, NULL, 0, &seed);
        }
        if (st == SES_OK)
            st = accumulate(&c, sums, ys[i], seed);
    }

    for (size_t id = n_nodes; id-- > 0 && st == SES_OK;) {
        const ses_node_t *n = g->nodes[id];
        ses_edge_t dy[SES__MAX_OUTPUTS], dx[SES__MAX_INPUTS];
        const ses__grad_builder_t *builder;
        int any = 0;

        if (n->kind != SES__NODE_OP || !m.from_x[id] || !m.to_y[id])
            continue;
        for (size_t o = 0; o < n->n_outputs && o < SES__MAX_OUTPUTS; o++) {
            dy[o] = sums[id * SES__MAX_OUTPUTS + o];
            any |= dy[o].node != NULL;
        }
        if (!any)
            continue;
        builder = ses__grad_builder_find(n->op);
        if (!builder) {
            char path[1024];
            describe_path(g, &m, xs, n_xs, n, path, sizeof path);
            st = ses__fail(SES_UNIMPLEMENTED,
                           "ses_gradients: %s \"%s\" has no gradient; it is on the path %s", n->op,
                           n->name, path);
            break;
        }
        if (!builder->fn) /* not differentiable: no gradient flows through (like comparisons) */
            continue;
        for (size_t i = 0; i < n->n_inputs; i++)
            dx[i] = (ses_edge_t){NULL, 0};
        c.current = n->name;
        st = builder->fn(&c, n, dy, dx);
        if (st != SES_OK) {
            char message[2048];
            snprintf(message, sizeof message, "%s", ses_last_error());
            st = ses__fail(st, "ses_gradients: gradient of %s \"%s\": %s", n->op, n->name,
                           message);
            break;
        }
        for (size_t i = 0; i < n->n_inputs && st == SES_OK; i++)
            if (dx[i].node && input_from_x(&m, xs, n_xs, n, i))
                st = accumulate(&c, sums, n->inputs[i], dx[i]);
    }
    for (size_t i = 0; i < n_xs && st == SES_OK; i++)
        out_dxs[i] = sums[xs[i].node->id * SES__MAX_OUTPUTS + xs[i].index];

done:
    if (st != SES_OK) {
        ses__graph_truncate(g, n_before);
        for (size_t i = 0; i < n_xs; i++)
            out_dxs[i] = (ses_edge_t){NULL, 0};
    }
    free(m.from_x);
    free(m.to_y);
    free(sums);
    return st;
}
