/*
 * ONNX control flow (If, Loop, Scan), lowered into the plain graph at import (issue #22).
 *
 * A body (a GraphProto attribute) is imported into the same ses_graph by a child importer: its
 * inputs are bound to the values the op gives them, a name it does not define is looked up in
 * the enclosing scopes (the child's table first, then its parent's, ...), and its nodes' names get
 * the body's place as a prefix ("loop/iter2/add"). The op's outputs are then the body outputs:
 *
 * - If: a constant condition imports the branch it picks. A fed or computed one imports both
 *   branches, and each output is a SelectInput over (else, then) whose position is the condition
 *   as 0 or 1: the compiler reads the condition (fed, or computed from constants and fed values)
 *   when the plan compiles, lowers the node to an Identity of the branch taken, and compiles
 *   again when it changes. Both branches are computed; outputs may differ in shape.
 * - Loop: the body is unrolled. A constant trip count M with a condition that is absent or
 *   constant true unrolls exactly M iterations. A fed or computed M (or a fed condition) unrolls
 *   up to FED_TRIP_MAX iterations, and each output is a SelectInput over the value after 0, 1, ...
 *   iterations at position max(M * cond, 0); an M beyond the unrolled count fails the compile
 *   naming the output. The body's condition output must be its condition input passed through
 *   (Identity) or a constant true: a loop that may stop early is refused.
 * - Scan (op set 8 with its batch axis, 9 and later with axes and directions): unrolled over the
 *   scan axis, whose length must be known at import (a graph input's or a constant's dimension).
 *
 * Carried values may be sequences where the iteration count is known at import (the sequence
 * machinery resolves their lists as the unrolled bodies build them). Every refusal names the
 * node, the op and why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "../../ops/op_schema.h"
#include "onnx_importer.h"

/* The most body nodes one control-flow node unrolls into. */
#define BODY_NODE_BUDGET 4096
/* Iterations unrolled for a trip count known only when the plan compiles: one SelectInput picks
 * among the values after 0..FED_TRIP_MAX iterations (a position and 63 candidates). */
#define FED_TRIP_MAX (SES__MAX_INPUTS - 2)
/* The most body nodes imported in one model, all bodies and iterations together (nested loops
 * and fed Ifs multiply). */
#define MODEL_BODY_NODE_BUDGET 65536

int ses__onnx_is_control_op(const char *op) {
    return !strcmp(op, "If") || !strcmp(op, "Loop") || !strcmp(op, "Scan");
}

/* ---- values ---------------------------------------------------------------------------------- */

static void value_clear(value_t *v) {
    free(v->items);
    memset(v, 0, sizeof *v);
    v->rank = -1;
}

static void values_clear(value_t *v, size_t n) {
    for (size_t i = 0; v && i < n; i++)
        value_clear(&v[i]);
}

/* A copy of @p src without its name, with its own list of items. */
static ses_status_t value_copy(value_t *dst, const value_t *src) {
    *dst = *src;
    dst->name = NULL;
    dst->items = NULL;
    if (src->kind == SES__ONNX_SEQUENCE) {
        dst->items = ses__malloc((src->n_items + 1) * sizeof *dst->items);
        if (!dst->items)
            return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        if (src->n_items)
            memcpy(dst->items, src->items, src->n_items * sizeof *dst->items);
    }
    return SES_OK;
}

/* A tensor value of edge @p e (what the import knows of it: nothing). */
static value_t tensor_value(ses_edge_t e) {
    value_t v;
    memset(&v, 0, sizeof v);
    v.edge = e;
    v.rank = -1;
    v.kind = SES__ONNX_TENSOR;
    return v;
}

/* Defines @p name in @p im's scope as a copy of @p v (a tensor, sequence or empty optional). */
static ses_status_t bind(importer_t *im, const char *name, const value_t *v) {
    value_t *w;
    ses_status_t st = ses__onnx_define(im, name, v->edge, v->constant);
    if (st != SES_OK)
        return st;
    w = ses__onnx_find(im, name);
    free(w->items);
    w->items = NULL;
    w->dtype = v->dtype;
    w->rank = v->rank;
    memcpy(w->dims, v->dims, sizeof w->dims);
    w->kind = v->kind;
    w->optional = v->optional;
    w->elem_dtype = v->elem_dtype;
    w->n_items = 0;
    if (v->kind == SES__ONNX_SEQUENCE) {
        w->items = ses__malloc((v->n_items + 1) * sizeof *w->items);
        if (!w->items)
            return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        if (v->n_items)
            memcpy(w->items, v->items, v->n_items * sizeof *w->items);
        w->n_items = v->n_items;
    }
    return SES_OK;
}

/* ---- small graph pieces --------------------------------------------------------------------- */

static ses_status_t scalar_i64(importer_t *im, int64_t value, ses_tensor_t **out_t,
                               ses_edge_t *out_edge) {
    ses_tensor_t *t;
    ses_status_t st = ses_tensor_create_from(SES_I64, 0, NULL, &value, sizeof value, &t);
    if (st == SES_OK)
        st = ses__onnx_add_constant(im, NULL, t, out_edge);
    if (out_t)
        *out_t = st == SES_OK ? t : NULL;
    return st;
}

static ses_status_t vector_i64(importer_t *im, int64_t value, ses_edge_t *out_edge) {
    const int64_t dims[1] = {1};
    ses_tensor_t *t;
    ses_status_t st = ses_tensor_create_from(SES_I64, 1, dims, &value, sizeof value, &t);
    return st != SES_OK ? st : ses__onnx_add_constant(im, NULL, t, out_edge);
}

static ses_status_t op2(importer_t *im, const char *op, ses_edge_t a, ses_edge_t b,
                        const ses_attr_t *attrs, size_t n_attrs, ses_edge_t *out) {
    ses_edge_t in[2] = {a, b};
    return ses_graph_op(im->m->graph, op, NULL, in, 2, attrs, n_attrs, out);
}

/* x with a new axis of length 1 at @p axis. */
static ses_status_t unsqueeze(importer_t *im, ses_edge_t x, int64_t axis, ses_edge_t *out) {
    ses_edge_t axes;
    ses_status_t st = vector_i64(im, axis, &axes);
    return st != SES_OK ? st : op2(im, "Unsqueeze", x, axes, NULL, 0, out);
}

/* Element @p index of x along @p axis, that axis removed. */
static ses_status_t take(importer_t *im, ses_edge_t x, int64_t index, int64_t axis,
                         ses_edge_t *out) {
    ses_attr_t a = ses_attr_int("axis", axis);
    ses_edge_t i;
    ses_status_t st = scalar_i64(im, index, NULL, &i);
    return st != SES_OK ? st : op2(im, "Gather", x, i, &a, 1, out);
}

/* The first 0 elements of x along @p axis (an empty scan output of the right shape). */
static ses_status_t empty_along(importer_t *im, ses_edge_t x, int64_t axis, ses_edge_t *out) {
    ses_edge_t in[4];
    ses_status_t st;
    in[0] = x;
    if ((st = vector_i64(im, 0, &in[1])) != SES_OK || (st = vector_i64(im, 0, &in[2])) != SES_OK ||
        (st = vector_i64(im, axis, &in[3])) != SES_OK)
        return st;
    return ses_graph_op(im->m->graph, "Slice", NULL, in, 4, NULL, 0, out);
}

/* Concat of @p n edges (taken every @p stride) along @p axis, in groups of at most 64. */
static ses_status_t concat_many(importer_t *im, const ses_edge_t *edges, size_t n, size_t stride,
                                int64_t axis, ses_edge_t *out) {
    ses_attr_t a = ses_attr_int("axis", axis);
    ses_edge_t groups[SES__MAX_INPUTS], in[SES__MAX_INPUTS];
    size_t n_groups = 0, per = 1;
    ses_status_t st;

    if (n == 1) {
        *out = edges[0];
        return SES_OK;
    }
    while ((n + per - 1) / per > SES__MAX_INPUTS)
        per *= SES__MAX_INPUTS;
    if (per == 1) {
        for (size_t i = 0; i < n; i++)
            in[i] = edges[i * stride];
        return ses_graph_op(im->m->graph, "Concat", NULL, in, n, &a, 1, out);
    }
    for (size_t at = 0; at < n; at += per) {
        size_t count = n - at < per ? n - at : per;
        if ((st = concat_many(im, edges + at * stride, count, stride, axis, &groups[n_groups++])) !=
            SES_OK)
            return st;
    }
    return concat_many(im, groups, n_groups, 1, axis, out);
}

/* A SelectInput over @p pos then @p cands (every @p stride), named @p name for its errors. */
static ses_status_t select_among(importer_t *im, const char *name, ses_edge_t pos,
                                 const ses_edge_t *cands, size_t n_cands, size_t stride,
                                 ses_edge_t *out) {
    ses_edge_t in[SES__MAX_INPUTS];
    ses_attr_t attrs[2] = {ses_attr_int("mode", 0), ses_attr_int("index", 0)};
    ses_status_t st;

    if (n_cands + 1 > SES__MAX_INPUTS)
        return ses__fail(SES_UNIMPLEMENTED, "%s: %zu candidates; the most is %d", name, n_cands,
                         SES__MAX_INPUTS - 1);
    in[0] = pos;
    for (size_t i = 0; i < n_cands; i++)
        in[i + 1] = cands[i * stride];
    st = ses_graph_op(im->m->graph, "SelectInput", name, in, n_cands + 1, attrs, 2, out);
    if (st == SES_INVALID_ARGUMENT) /* the name is taken */
        st = ses_graph_op(im->m->graph, "SelectInput", NULL, in, n_cands + 1, attrs, 2, out);
    return st;
}

/* ---- bodies ---------------------------------------------------------------------------------- */

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
            return n->attribute[i];
    return NULL;
}

static ses_status_t body_attr(const Onnx__NodeProto *n, const char *label, const char *name,
                              const Onnx__GraphProto **out) {
    const Onnx__AttributeProto *a = attr(n, name);
    if (!a || !a->g)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: the graph attribute %s is missing", label,
                         name);
    *out = a->g;
    return SES_OK;
}

/* The name this node's bodies are prefixed with: the node's, else its first output's. */
static void node_place(const importer_t *im, const Onnx__NodeProto *n, char *out, size_t size) {
    const char *own = n->name && *n->name ? n->name : n->n_output ? n->output[0] : "";
    snprintf(out, size, "%s%s%s", im->prefix, *im->prefix ? "/" : "", own);
}

/*
 * Imports body @p g under the prefix @p place: its first @p n_bound inputs are bound to
 * @p bound, its outputs copied into @p outs (g->n_output of them, cleared by the caller).
 */
static ses_status_t import_body(importer_t *im, const char *label, const char *what,
                                const Onnx__GraphProto *g, const char *place, const value_t *bound,
                                size_t n_bound, value_t *outs) {
    importer_t child, *top = im;
    ses_status_t st = SES_OK;

    while (top->parent)
        top = top->parent;
    top->body_nodes += g->n_node;
    if (top->body_nodes > MODEL_BODY_NODE_BUDGET || top->body_nodes > im->o.max_nodes)
        return ses__fail(
            SES_UNIMPLEMENTED,
            "%s: the control-flow bodies unrolled so far have more than %u nodes "
            "(nested loops and Ifs on fed conditions multiply them)",
            label,
            MODEL_BODY_NODE_BUDGET < im->o.max_nodes ? MODEL_BODY_NODE_BUDGET : im->o.max_nodes);

    if (g->n_input != n_bound)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: the %s body has %zu inputs; it takes %zu",
                         label, what, g->n_input, n_bound);
    if (g->n_sparse_initializer)
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: the %s body has sparse initializers (not "
                         "supported)",
                         label, what);
    memset(&child, 0, sizeof child);
    child.o = im->o;
    child.o.initializers_as_variables = 0;
    child.m = im->m;
    child.parent = im;
    child.import_node = im->import_node;
    child.graph = g;
    snprintf(child.prefix, sizeof child.prefix, "%s", place);
    for (size_t i = 0; i < g->n_initializer && st == SES_OK; i++) {
        const Onnx__TensorProto *tp = g->initializer[i];
        char name[300];
        ses_tensor_t *t;
        ses_edge_t edge;
        if (!tp->name || !*tp->name) {
            st = ses__fail(SES_INVALID_ARGUMENT, "%s: a %s body initializer has no name", label,
                           what);
            break;
        }
        snprintf(name, sizeof name, "initializer \"%s\"", tp->name);
        st = ses__onnx_tensor(tp, im->o.max_elements, name, &t);
        if (st == SES_OK)
            st = ses__onnx_add_constant(&child, NULL, t, &edge);
        if (st == SES_OK)
            st = ses__onnx_define(&child, tp->name, edge, t);
    }
    for (size_t i = 0; i < n_bound && st == SES_OK; i++)
        if (g->input[i]->name && *g->input[i]->name)
            st = bind(&child, g->input[i]->name, &bound[i]);
    for (size_t i = 0; i < g->n_node && st == SES_OK; i++)
        st = child.import_node(&child, g->node[i], i);
    for (size_t i = 0; i < g->n_output && st == SES_OK; i++) {
        const char *name = g->output[i]->name ? g->output[i]->name : "";
        const value_t *v = ses__onnx_find(&child, name);
        if (!v)
            st = ses__fail(SES_INVALID_ARGUMENT,
                           "%s: output %zu of the %s body, \"%s\", is not defined in it or around "
                           "it",
                           label, i, what, name);
        else
            st = value_copy(&outs[i], v);
    }
    ses__onnx_importer_clear(&child);
    if (st != SES_OK) {
        char message[1500];
        snprintf(message, sizeof message, "%s", ses_last_error());
        if (strncmp(message, label, strlen(label)) != 0)
            return ses__fail(st, "%s: in the %s body (%s): %s", label, what, place, message);
    }
    return st;
}

/* Defines the node's outputs as @p values (a left-out output name is skipped). */
static ses_status_t define_outputs(importer_t *im, const Onnx__NodeProto *n, const value_t *values,
                                   size_t count) {
    ses_status_t st = SES_OK;
    for (size_t i = 0; i < n->n_output && i < count && st == SES_OK; i++)
        if (*n->output[i])
            st = bind(im, n->output[i], &values[i]);
    return st;
}

/* A value's single bool, when it is a constant: 0 or 1; -1 when it is not a constant. */
static ses_status_t constant_bool(const value_t *v, const char *label, const char *what, int *out) {
    const ses_tensor_t *t = v->constant;
    *out = -1;
    if (!t)
        return SES_OK;
    if (ses_tensor_dtype(t) != SES_BOOL || ses_tensor_count(t) != 1)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: %s is %s with %zu elements; it must be one "
                         "bool",
                         label, what, ses_dtype_name(ses_tensor_dtype(t)), ses_tensor_count(t));
    *out = *(const uint8_t *)ses_tensor_data((ses_tensor_t *)t) != 0;
    return SES_OK;
}

/* A bool edge as an i64 0 or 1. */
static ses_status_t bool_to_i64(importer_t *im, ses_edge_t b, ses_edge_t *out) {
    ses_edge_t one, zero, in[3];
    ses_status_t st;
    if ((st = scalar_i64(im, 1, NULL, &one)) != SES_OK ||
        (st = scalar_i64(im, 0, NULL, &zero)) != SES_OK)
        return st;
    in[0] = b;
    in[1] = one;
    in[2] = zero;
    return ses_graph_op(im->m->graph, "Where", NULL, in, 3, NULL, 0, out);
}

/* ---- If -------------------------------------------------------------------------------------- */

static ses_status_t import_if(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    const Onnx__GraphProto *then_g = NULL, *else_g = NULL;
    const value_t *cond = n->n_input ? ses__onnx_find(im, n->input[0]) : NULL;
    value_t *outs = NULL;
    char place[600], name[1200];
    size_t n_out = n->n_output;
    int known;
    ses_edge_t pos;
    ses_status_t st;

    if (n->n_input != 1 || !cond)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: If takes one input, the condition, defined "
                         "before it",
                         label);
    if (cond->kind != SES__ONNX_TENSOR)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: the condition \"%s\" is not a tensor", label,
                         n->input[0]);
    if ((st = body_attr(n, label, "then_branch", &then_g)) != SES_OK ||
        (st = body_attr(n, label, "else_branch", &else_g)) != SES_OK)
        return st;
    if (then_g->n_output != n_out || else_g->n_output != n_out)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: %zu outputs, but then_branch gives %zu and "
                         "else_branch %zu",
                         label, n_out, then_g->n_output, else_g->n_output);
    if ((st = constant_bool(cond, label, "the condition", &known)) != SES_OK)
        return st;
    outs = ses__calloc(2 * n_out + 1, sizeof *outs);
    if (!outs)
        return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
    node_place(im, n, place, sizeof place);
    if (known >= 0) { /* the branch taken is known: only it is imported */
        snprintf(name, sizeof name, "%s/%s", place, known ? "then" : "else");
        st = import_body(im, label, known ? "then_branch" : "else_branch", known ? then_g : else_g,
                         name, NULL, 0, outs);
        if (st == SES_OK)
            st = define_outputs(im, n, outs, n_out);
        values_clear(outs, n_out);
        free(outs);
        return st;
    }
    /* Both branches; outputs[i] = SelectInput(cond as 0/1, else[i], then[i]). */
    snprintf(name, sizeof name, "%s/else", place);
    st = import_body(im, label, "else_branch", else_g, name, NULL, 0, outs);
    snprintf(name, sizeof name, "%s/then", place);
    if (st == SES_OK)
        st = import_body(im, label, "then_branch", then_g, name, NULL, 0, outs + n_out);
    if (st == SES_OK)
        st = bool_to_i64(im, cond->edge, &pos);
    for (size_t i = 0; i < n_out && st == SES_OK; i++) {
        value_t *e = &outs[i], *t = &outs[n_out + i];
        if (e->kind != t->kind || (e->kind == SES__ONNX_SEQUENCE && e->n_items != t->n_items)) {
            st = ses__fail(SES_UNIMPLEMENTED,
                           "%s: output %zu, \"%s\", is %s in one branch and %s in the other, and "
                           "the condition \"%s\" is known only when the plan compiles; only "
                           "tensors, or sequences of one length, are chosen then",
                           label, i, n->output[i],
                           e->kind == SES__ONNX_SEQUENCE ? "a sequence"
                           : e->kind == SES__ONNX_NONE   ? "an empty optional"
                                                         : "a tensor",
                           t->kind == SES__ONNX_SEQUENCE ? "a sequence"
                           : t->kind == SES__ONNX_NONE   ? "an empty optional"
                                                         : "a tensor",
                           n->input[0]);
            break;
        }
        snprintf(name, sizeof name, "%s/%s", place, n->output[i]);
        if (e->kind == SES__ONNX_TENSOR) {
            ses_edge_t pair[2] = {e->edge, t->edge};
            st = select_among(im, name, pos, pair, 2, 1, &e->edge);
            e->constant = NULL;
            e->rank = e->rank == t->rank ? e->rank : -1;
            e->dtype = e->dtype == t->dtype ? e->dtype : SES_DTYPE_INVALID;
        } else if (e->kind == SES__ONNX_SEQUENCE) {
            for (size_t k = 0; k < e->n_items && st == SES_OK; k++) {
                ses_edge_t pair[2] = {e->items[k], t->items[k]};
                char item[1300];
                snprintf(item, sizeof item, "%s/%zu", name, k);
                st = select_among(im, item, pos, pair, 2, 1, &e->items[k]);
            }
        }
    }
    if (st == SES_OK)
        st = define_outputs(im, n, outs, n_out);
    values_clear(outs, 2 * n_out);
    free(outs);
    return st;
}

/* ---- Loop ------------------------------------------------------------------------------------ */

/* Whether the body's condition output is its condition input passed through (never changes). */
static int condition_stays(const Onnx__GraphProto *g) {
    const char *in, *out;
    if (g->n_input < 2 || g->n_output < 1)
        return 0;
    in = g->input[1]->name ? g->input[1]->name : "";
    out = g->output[0]->name ? g->output[0]->name : "";
    if (!*in || !*out)
        return 0;
    if (!strcmp(in, out))
        return 1;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *d = g->node[i];
        if (d->n_output == 1 && !strcmp(d->output[0], out))
            return d->op_type && !strcmp(d->op_type, "Identity") && d->n_input == 1 &&
                   !strcmp(d->input[0], in);
    }
    return 0;
}

static ses_status_t import_loop(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    const Onnx__GraphProto *g = NULL;
    const value_t *m = n->n_input > 0 && *n->input[0] ? ses__onnx_find(im, n->input[0]) : NULL;
    const value_t *cond0 = n->n_input > 1 && *n->input[1] ? ses__onnx_find(im, n->input[1]) : NULL;
    size_t n_carried = n->n_input > 2 ? n->n_input - 2 : 0, n_scan, n_body_out, per_iteration;
    value_t *cur = NULL, *bound = NULL, *outs = NULL, *results = NULL;
    ses_edge_t *cands = NULL, *scans = NULL, pos, last = {NULL, 0};
    char place[600], name[1200];
    int64_t trips = -1, fixed, unrolled;
    int c0 = 1, stays, gate;
    ses_status_t st;

    if ((st = body_attr(n, label, "body", &g)) != SES_OK)
        return st;
    if (n->n_input < 2)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: Loop takes M, cond and the carried values",
                         label);
    if (g->n_input != 2 + n_carried || g->n_output < 1 + n_carried)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: the body has %zu inputs and %zu outputs for %zu carried values "
                         "(it takes 2 + N and gives 1 + N + K)",
                         label, g->n_input, g->n_output, n_carried);
    n_body_out = g->n_output;
    n_scan = n_body_out - 1 - n_carried;
    if (n->n_output > n_carried + n_scan)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: %zu outputs; the body gives %zu", label,
                         n->n_output, n_carried + n_scan);
    if (!m)
        return ses__fail(
            SES_UNIMPLEMENTED,
            "%s: %s; a loop that runs until its condition turns false is not "
            "unrolled (only a trip count M is)",
            label,
            n->n_input > 0 && *n->input[0] ? "M is not defined before it" : "no trip count M");
    if (m->kind != SES__ONNX_TENSOR || (cond0 && cond0->kind != SES__ONNX_TENSOR))
        return ses__fail(SES_INVALID_ARGUMENT, "%s: M and cond must be tensors", label);
    if (n->n_input > 1 && *n->input[1] && !cond0)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: cond \"%s\" is not defined before it", label,
                         n->input[1]);
    if (m->constant) {
        const ses_tensor_t *t = m->constant;
        if (ses_tensor_dtype(t) != SES_I64 || ses_tensor_count(t) != 1)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s: M is %s with %zu elements; it must be "
                             "one i64",
                             label, ses_dtype_name(ses_tensor_dtype(t)), ses_tensor_count(t));
        trips = *(const int64_t *)ses_tensor_data((ses_tensor_t *)t);
        if (trips < 0)
            trips = 0;
    }
    if (cond0 && (st = constant_bool(cond0, label, "cond", &c0)) != SES_OK)
        return st;
    stays = condition_stays(g);
    per_iteration = g->n_node + 2 * n_scan + n_carried + 1;
    /* A constant M with a fed cond unrolls M iterations, and each output is then a SelectInput
     * between its value before the loop and after them (gate). */
    fixed = c0 == 0 ? 0 : trips;
    gate = trips >= 0 && c0 < 0;
    if (fixed >= 0) {
        unrolled = fixed == 0 && n_scan ? 1 : fixed;
        if ((uint64_t)unrolled > BODY_NODE_BUDGET / per_iteration)
            return ses__fail(SES_UNIMPLEMENTED,
                             "%s: %lld iterations of a body of %zu nodes are more than the %d "
                             "nodes a loop is unrolled into",
                             label, (long long)fixed, per_iteration, BODY_NODE_BUDGET);
    } else {
        unrolled = BODY_NODE_BUDGET / per_iteration;
        if (unrolled > FED_TRIP_MAX)
            unrolled = FED_TRIP_MAX;
        if (unrolled < 1)
            return ses__fail(SES_UNIMPLEMENTED,
                             "%s: the trip count is known only when the plan compiles, and one "
                             "iteration of the body (%zu nodes) is more than the %d nodes a loop "
                             "is unrolled into",
                             label, per_iteration, BODY_NODE_BUDGET);
        for (size_t j = 0; j < n_carried; j++) {
            const value_t *v = ses__onnx_find(im, n->input[2 + j]);
            if (v && v->kind != SES__ONNX_TENSOR)
                return ses__fail(SES_UNIMPLEMENTED,
                                 "%s: carried value %zu, \"%s\", is not a tensor, and the trip "
                                 "count is known only when the plan compiles; sequences and "
                                 "optionals are carried only by a constant trip count",
                                 label, j, n->input[2 + j]);
        }
    }
    node_place(im, n, place, sizeof place);
    cur = ses__calloc(n_carried + 1, sizeof *cur);
    bound = ses__calloc(n_carried + 3, sizeof *bound);
    outs = ses__calloc(n_body_out + 1, sizeof *outs);
    results = ses__calloc(n_carried + n_scan + 1, sizeof *results);
    cands = ses__calloc((size_t)(unrolled + 1) * (n_carried + 1), sizeof *cands);
    scans = ses__calloc((size_t)(unrolled + 1) * (n_scan + 1), sizeof *scans);
    if (!cur || !bound || !outs || !results || !cands || !scans) {
        st = ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        goto done;
    }
    for (size_t j = 0; j < n_carried && st == SES_OK; j++) {
        const value_t *v = *n->input[2 + j] ? ses__onnx_find(im, n->input[2 + j]) : NULL;
        if (!v) {
            st = ses__fail(SES_INVALID_ARGUMENT,
                           "%s: carried value %zu, \"%s\", is not defined "
                           "before it",
                           label, j, n->input[2 + j]);
            break;
        }
        st = value_copy(&cur[j], v);
        cands[j] = v->edge;
    }
    if (fixed < 0 && st == SES_OK) {
        ses_edge_t one, zero;
        if ((st = scalar_i64(im, 1, NULL, &one)) != SES_OK ||
            (st = scalar_i64(im, 0, NULL, &zero)) != SES_OK ||
            (st = op2(im, "Sub", m->edge, one, NULL, 0, &last)) != SES_OK ||
            (st = op2(im, "Max", last, zero, NULL, 0, &last)) != SES_OK)
            goto done;
    }
    for (int64_t k = 0; k < unrolled && st == SES_OK; k++) {
        ses_tensor_t *t;
        uint8_t yes = 1;
        values_clear(bound, n_carried + 2);
        /* iteration number (a constant: each unrolled body knows its own), condition (true: an
         * iteration's values are used only when it runs), carried values */
        st = scalar_i64(im, k, &t, &bound[0].edge);
        if (st != SES_OK)
            break;
        bound[0] = tensor_value(bound[0].edge);
        bound[0].constant = t;
        bound[0].dtype = SES_I64;
        bound[0].rank = 0;
        if (fixed < 0) {
            /* The iterations past the trip count are computed too (their values are not
             * picked): they repeat the last one's number, min(k, max(M - 1, 0)), so that a body
             * indexing with it stays in range and keeps its shapes. */
            st = op2(im, "Min", bound[0].edge, last, NULL, 0, &bound[0].edge);
            if (st != SES_OK)
                break;
            bound[0].constant = NULL;
        }
        st = ses_tensor_create_from(SES_BOOL, 0, NULL, &yes, 1, &t);
        if (st == SES_OK)
            st = ses__onnx_add_constant(im, NULL, t, &bound[1].edge);
        if (st != SES_OK)
            break;
        bound[1] = tensor_value(bound[1].edge);
        bound[1].constant = t;
        bound[1].dtype = SES_BOOL;
        bound[1].rank = 0;
        for (size_t j = 0; j < n_carried && st == SES_OK; j++)
            st = value_copy(&bound[2 + j], &cur[j]);
        if (st != SES_OK)
            break;
        snprintf(name, sizeof name, "%s/iter%lld", place, (long long)k);
        values_clear(outs, n_body_out);
        st = import_body(im, label, "loop", g, name, bound, n_carried + 2, outs);
        if (st != SES_OK)
            break;
        if (!stays) { /* each iteration: a carried value may be constant only in the first */
            int c = -1;
            st = constant_bool(&outs[0], label, "the body's condition output", &c);
            if (st == SES_OK && c != 1)
                st = ses__fail(SES_UNIMPLEMENTED,
                               "%s: the body's condition output \"%s\" is computed; a loop that "
                               "may stop before its trip count is not unrolled (its condition "
                               "must pass through unchanged or be constant true)",
                               label, g->output[0]->name);
            if (st != SES_OK)
                break;
        }
        for (size_t j = 0; j < n_carried && st == SES_OK; j++) {
            value_clear(&cur[j]);
            st = value_copy(&cur[j], &outs[1 + j]);
            if (st == SES_OK && fixed < 0 && cur[j].kind != SES__ONNX_TENSOR)
                st = ses__fail(SES_UNIMPLEMENTED,
                               "%s: carried value %zu is not a tensor after an iteration, and "
                               "the trip count is known only when the plan compiles",
                               label, j);
            cands[(size_t)(k + 1) * n_carried + j] = cur[j].edge;
        }
        if (k + 1 == fixed)
            for (size_t j = 0; j < n_carried && st == SES_OK; j++)
                st = value_copy(&results[j], &cur[j]);
        for (size_t s = 0; s < n_scan && st == SES_OK; s++) {
            const value_t *u = &outs[1 + n_carried + s];
            if (u->kind != SES__ONNX_TENSOR) {
                st = ses__fail(SES_UNIMPLEMENTED,
                               "%s: scan output %zu of the body is not a "
                               "tensor (only tensors are stacked)",
                               label, s);
                break;
            }
            st = unsqueeze(im, u->edge, 0, &scans[(size_t)k * n_scan + s]);
        }
    }
    if (st != SES_OK)
        goto done;
    if (fixed == 0)
        for (size_t j = 0; j < n_carried && st == SES_OK; j++) {
            const value_t *v = ses__onnx_find(im, n->input[2 + j]);
            st = value_copy(&results[j], v);
        }
    if (fixed >= 0) {
        for (size_t s = 0; s < n_scan && st == SES_OK; s++) {
            ses_edge_t e;
            st = fixed ? concat_many(im, scans + s, (size_t)fixed, n_scan, 0, &e)
                       : empty_along(im, scans[s], 0, &e);
            results[n_carried + s] = tensor_value(e);
        }
        if (gate && st == SES_OK)
            st = bool_to_i64(im, cond0->edge, &pos);
        for (size_t o = 0; gate && o < n_carried + n_scan && st == SES_OK; o++) {
            ses_edge_t pair[2];
            const value_t *initial = o < n_carried ? ses__onnx_find(im, n->input[2 + o]) : NULL;
            if (results[o].kind != SES__ONNX_TENSOR ||
                (initial && initial->kind != SES__ONNX_TENSOR)) {
                st = ses__fail(SES_UNIMPLEMENTED,
                               "%s: output %zu is not a tensor, and cond \"%s\" is known only "
                               "when the plan compiles; sequences and optionals are carried only "
                               "when it is constant",
                               label, o, n->input[1]);
                break;
            }
            pair[1] = results[o].edge;
            if (o < n_carried)
                pair[0] = cands[o];
            else
                st = empty_along(im, scans[o - n_carried], 0, &pair[0]);
            snprintf(name, sizeof name, "%s/%s", place,
                     o < n->n_output && *n->output[o] ? n->output[o] : "output");
            if (st == SES_OK)
                st = select_among(im, name, pos, pair, 2, 1, &pair[0]);
            value_clear(&results[o]);
            results[o] = tensor_value(pair[0]);
        }
    } else {
        /* pos = max(M * cond, 0): the iterations that run, read when the plan compiles. */
        ses_edge_t zero;
        pos = m->edge;
        if (cond0 && !cond0->constant) {
            ses_edge_t c;
            st = bool_to_i64(im, cond0->edge, &c);
            if (st == SES_OK)
                st = op2(im, "Mul", pos, c, NULL, 0, &pos);
        }
        if (st == SES_OK)
            st = scalar_i64(im, 0, NULL, &zero);
        if (st == SES_OK)
            st = op2(im, "Max", pos, zero, NULL, 0, &pos);
        for (size_t j = 0; j < n_carried && st == SES_OK; j++) {
            ses_edge_t e;
            snprintf(name, sizeof name, "%s/%s (Loop unrolled %lld times at most)", place,
                     j < n->n_output && *n->output[j] ? n->output[j] : "carried",
                     (long long)unrolled);
            st = select_among(im, name, pos, cands + j, (size_t)unrolled + 1, n_carried, &e);
            results[j] = tensor_value(e);
        }
        for (size_t s = 0; s < n_scan && st == SES_OK; s++) {
            ses_attr_t axis0 = ses_attr_int("axis", 0);
            ses_edge_t stacked[FED_TRIP_MAX + 1], e;
            size_t o = n_carried + s;
            st = empty_along(im, scans[s], 0, &stacked[0]);
            for (int64_t k = 0; k < unrolled && st == SES_OK; k++)
                st = op2(im, "Concat", stacked[k], scans[(size_t)k * n_scan + s], &axis0, 1,
                         &stacked[k + 1]);
            snprintf(name, sizeof name, "%s/%s (Loop unrolled %lld times at most)", place,
                     o < n->n_output && *n->output[o] ? n->output[o] : "scan", (long long)unrolled);
            if (st == SES_OK)
                st = select_among(im, name, pos, stacked, (size_t)unrolled + 1, 1, &e);
            results[o] = tensor_value(e);
        }
    }
    if (st == SES_OK)
        st = define_outputs(im, n, results, n_carried + n_scan);
done:
    values_clear(cur, n_carried);
    values_clear(bound, n_carried + 2);
    values_clear(outs, n_body_out);
    values_clear(results, n_carried + n_scan);
    free(cur);
    free(bound);
    free(outs);
    free(results);
    free(cands);
    free(scans);
    return st;
}

/* ---- Scan ------------------------------------------------------------------------------------ */

/* Attribute @p name's ints, @p count of them, or @p def for each when it is absent. */
static ses_status_t ints_or(const Onnx__NodeProto *n, const char *label, const char *name,
                            size_t count, int64_t def, int64_t *out) {
    const Onnx__AttributeProto *a = attr(n, name);
    for (size_t i = 0; i < count; i++)
        out[i] = def;
    if (!a)
        return SES_OK;
    if (a->n_ints != count)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: attribute %s has %zu values for %zu %s", label,
                         name, a->n_ints, count,
                         count == 1 ? "input or output" : "inputs or outputs");
    for (size_t i = 0; i < count; i++)
        out[i] = a->ints[i];
    return SES_OK;
}

typedef struct scan_form {
    size_t n_state, n_in, n_out;
    int64_t in_axes[SES__MAX_INPUTS], in_dirs[SES__MAX_INPUTS];
    int64_t out_axes[SES__MAX_INPUTS], out_dirs[SES__MAX_INPUTS];
} scan_form_t;

/* One scan: @p states and @p ins (values whose rank and scan dimension are known) through the
 * body, unrolled; the final states then the stacked scan outputs into @p results. */
static ses_status_t scan_core(importer_t *im, const Onnx__NodeProto *n, const char *label,
                              const Onnx__GraphProto *g, const char *place, const scan_form_t *f,
                              const value_t *states, const value_t *ins, value_t *results) {
    size_t n_bound = f->n_state + f->n_in, n_body_out = f->n_state + f->n_out;
    int64_t length = -1;
    value_t *bound = NULL, *outs = NULL;
    ses_edge_t *stacked = NULL;
    char name[1200];
    ses_status_t st = SES_OK;

    for (size_t j = 0; j < f->n_in; j++) {
        const value_t *v = &ins[j];
        int64_t axis = f->in_axes[j];
        if (v->kind != SES__ONNX_TENSOR)
            return ses__fail(SES_INVALID_ARGUMENT, "%s: scan input %zu is not a tensor", label, j);
        if (v->rank < 0)
            return ses__fail(SES_UNIMPLEMENTED,
                             "%s: the rank of scan input %zu is not known at import; only a "
                             "scan whose length is static is unrolled",
                             label, j);
        if (axis < -v->rank || axis >= v->rank)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s: scan input %zu has rank %d; axis %lld is "
                             "outside it",
                             label, j, v->rank, (long long)axis);
        axis = axis < 0 ? axis + v->rank : axis;
        if (v->dims[axis] < 0)
            return ses__fail(SES_UNIMPLEMENTED,
                             "%s: the length of scan input %zu along axis %lld is not known at "
                             "import; only a scan whose length is static is unrolled",
                             label, j, (long long)axis);
        if (length >= 0 && v->dims[axis] != length)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s: scan input %zu has length %lld along its axis; input 0 has "
                             "%lld",
                             label, j, (long long)v->dims[axis], (long long)length);
        length = v->dims[axis];
    }
    if (length == 0)
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: a scan of length 0 (its outputs' shapes are "
                         "not known) is not supported",
                         label);
    if ((uint64_t)length > BODY_NODE_BUDGET / (g->n_node + f->n_in + f->n_out))
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: %lld iterations of a body of %zu nodes are more than the %d nodes a "
                         "scan is unrolled into",
                         label, (long long)length, g->n_node, BODY_NODE_BUDGET);
    bound = ses__calloc(n_bound + 1, sizeof *bound);
    outs = ses__calloc(n_body_out + 1, sizeof *outs);
    stacked = ses__calloc((size_t)length * (f->n_out + 1), sizeof *stacked);
    if (!bound || !outs || !stacked) {
        st = ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        goto done;
    }
    for (size_t j = 0; j < f->n_state && st == SES_OK; j++)
        st = value_copy(&results[j], &states[j]);
    for (int64_t t = 0; t < length && st == SES_OK; t++) {
        values_clear(bound, n_bound);
        for (size_t j = 0; j < f->n_state && st == SES_OK; j++)
            st = value_copy(&bound[j], &results[j]);
        for (size_t j = 0; j < f->n_in && st == SES_OK; j++) {
            const value_t *v = &ins[j];
            int64_t axis = f->in_axes[j] < 0 ? f->in_axes[j] + v->rank : f->in_axes[j];
            ses_edge_t e;
            st = take(im, v->edge, f->in_dirs[j] ? length - 1 - t : t, axis, &e);
            bound[f->n_state + j] = tensor_value(e);
            bound[f->n_state + j].dtype = v->dtype;
            bound[f->n_state + j].rank = v->rank - 1;
            for (int d = 0, o = 0; d < v->rank; d++)
                if (d != axis)
                    bound[f->n_state + j].dims[o++] = v->dims[d];
        }
        if (st != SES_OK)
            break;
        snprintf(name, sizeof name, "%s/iter%lld", place, (long long)t);
        values_clear(outs, n_body_out);
        st = import_body(im, label, "scan", g, name, bound, n_bound, outs);
        for (size_t j = 0; j < f->n_state && st == SES_OK; j++) {
            value_clear(&results[j]);
            st = value_copy(&results[j], &outs[j]);
        }
        for (size_t k = 0; k < f->n_out && st == SES_OK; k++) {
            const value_t *u = &outs[f->n_state + k];
            int64_t slot = f->out_dirs[k] ? length - 1 - t : t;
            if (u->kind != SES__ONNX_TENSOR) {
                st = ses__fail(SES_UNIMPLEMENTED,
                               "%s: scan output %zu of the body is not a "
                               "tensor (only tensors are stacked)",
                               label, k);
                break;
            }
            st = unsqueeze(im, u->edge, f->out_axes[k], &stacked[(size_t)slot * f->n_out + k]);
        }
    }
    for (size_t k = 0; k < f->n_out && st == SES_OK; k++) {
        ses_edge_t e;
        st = concat_many(im, stacked + k, (size_t)length, f->n_out, f->out_axes[k], &e);
        results[f->n_state + k] = tensor_value(e);
    }
done:
    values_clear(bound, n_bound);
    values_clear(outs, n_body_out);
    free(bound);
    free(outs);
    free(stacked);
    (void)n;
    return st;
}

static ses_status_t import_scan(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    const Onnx__GraphProto *g = NULL;
    const Onnx__AttributeProto *ns = attr(n, "num_scan_inputs");
    int batched = im->m->opset < 9;
    size_t first = batched ? 1 : 0, n_given, total;
    value_t *ins = NULL, *results = NULL, *part_in = NULL, *part_out = NULL;
    ses_edge_t *per_batch = NULL;
    scan_form_t f;
    char place[600], name[1200];
    int64_t batch = 1;
    ses_status_t st;

    if ((st = body_attr(n, label, "body", &g)) != SES_OK)
        return st;
    if (!ns || ns->i < 1)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: attribute num_scan_inputs (at least 1) is "
                         "missing",
                         label);
    if (batched && n->n_input && *n->input[0])
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: sequence_lens (op set 8) is not supported; all "
                         "sequences must have the full length",
                         label);
    n_given = n->n_input > first ? n->n_input - first : 0;
    memset(&f, 0, sizeof f);
    if ((size_t)ns->i > n_given || n_given > SES__MAX_INPUTS)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: num_scan_inputs is %lld of %zu inputs", label,
                         (long long)ns->i, n_given);
    f.n_in = (size_t)ns->i;
    f.n_state = n_given - f.n_in;
    if (n->n_output < f.n_state || n->n_output - f.n_state > SES__MAX_INPUTS)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: %zu outputs for %zu states", label, n->n_output,
                         f.n_state);
    f.n_out = n->n_output - f.n_state;
    if (g->n_output != f.n_state + f.n_out)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: the body gives %zu outputs; the node has %zu",
                         label, g->n_output, n->n_output);
    if (batched) {
        if ((st = ints_or(n, label, "directions", f.n_in, 0, f.in_dirs)) != SES_OK)
            return st;
    } else if ((st = ints_or(n, label, "scan_input_directions", f.n_in, 0, f.in_dirs)) != SES_OK ||
               (st = ints_or(n, label, "scan_output_directions", f.n_out, 0, f.out_dirs)) !=
                   SES_OK ||
               (st = ints_or(n, label, "scan_input_axes", f.n_in, 0, f.in_axes)) != SES_OK ||
               (st = ints_or(n, label, "scan_output_axes", f.n_out, 0, f.out_axes)) != SES_OK) {
        return st;
    }
    total = f.n_state + f.n_out;
    ins = ses__calloc(n_given + 1, sizeof *ins);
    results = ses__calloc(total + 1, sizeof *results);
    if (!ins || !results) {
        st = ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        goto done;
    }
    for (size_t j = 0; j < n_given && st == SES_OK; j++) {
        const value_t *v = *n->input[first + j] ? ses__onnx_find(im, n->input[first + j]) : NULL;
        if (!v)
            st = ses__fail(SES_INVALID_ARGUMENT, "%s: input %zu, \"%s\", is not defined before it",
                           label, first + j, n->input[first + j]);
        else
            st = value_copy(&ins[j], v);
    }
    if (st != SES_OK)
        goto done;
    node_place(im, n, place, sizeof place);
    if (!batched) {
        st = scan_core(im, n, label, g, place, &f, ins, ins + f.n_state, results);
        if (st == SES_OK)
            st = define_outputs(im, n, results, total);
        goto done;
    }
    /* Op set 8: axis 0 of every input and output is the batch, axis 1 the scan's. */
    for (size_t j = 0; j < n_given; j++) {
        if (ins[j].kind != SES__ONNX_TENSOR || ins[j].rank < 1 || ins[j].dims[0] < 0) {
            st = ses__fail(SES_UNIMPLEMENTED,
                           "%s: the batch size (axis 0) of input %zu is not "
                           "known at import; only a static batch is unrolled",
                           label, first + j);
            goto done;
        }
        if (j && ins[j].dims[0] != batch) {
            st = ses__fail(SES_INVALID_ARGUMENT,
                           "%s: input %zu has a batch of %lld; input %zu "
                           "has %lld",
                           label, first + j, (long long)ins[j].dims[0], first, (long long)batch);
            goto done;
        }
        batch = ins[j].dims[0];
    }
    if ((uint64_t)batch > BODY_NODE_BUDGET / (g->n_node + 1)) {
        st = ses__fail(SES_UNIMPLEMENTED,
                       "%s: a batch of %lld scans of a body of %zu nodes is more than the %d "
                       "nodes a scan is unrolled into",
                       label, (long long)batch, g->n_node, BODY_NODE_BUDGET);
        goto done;
    }
    if (batch < 1) {
        st = ses__fail(SES_UNIMPLEMENTED, "%s: an empty batch is not supported", label);
        goto done;
    }
    part_in = ses__calloc(n_given + 1, sizeof *part_in);
    part_out = ses__calloc(total + 1, sizeof *part_out);
    per_batch = ses__calloc((size_t)batch * (total + 1), sizeof *per_batch);
    if (!part_in || !part_out || !per_batch) {
        st = ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        goto done;
    }
    for (int64_t b = 0; b < batch && st == SES_OK; b++) {
        for (size_t j = 0; j < n_given && st == SES_OK; j++) {
            ses_edge_t e;
            st = take(im, ins[j].edge, b, 0, &e);
            part_in[j] = tensor_value(e);
            part_in[j].dtype = ins[j].dtype;
            part_in[j].rank = ins[j].rank - 1;
            memcpy(part_in[j].dims, ins[j].dims + 1, (size_t)(ins[j].rank - 1) * sizeof(int64_t));
        }
        snprintf(name, sizeof name, "%s/batch%lld", place, (long long)b);
        if (st == SES_OK)
            st = scan_core(im, n, label, g, name, &f, part_in, part_in + f.n_state, part_out);
        for (size_t k = 0; k < total && st == SES_OK; k++) {
            if (part_out[k].kind != SES__ONNX_TENSOR)
                st = ses__fail(SES_UNIMPLEMENTED, "%s: output %zu is not a tensor", label, k);
            else
                st = unsqueeze(im, part_out[k].edge, 0, &per_batch[(size_t)b * total + k]);
        }
        values_clear(part_out, total);
    }
    for (size_t k = 0; k < total && st == SES_OK; k++) {
        ses_edge_t e;
        st = concat_many(im, per_batch + k, (size_t)batch, total, 0, &e);
        results[k] = tensor_value(e);
    }
    if (st == SES_OK)
        st = define_outputs(im, n, results, total);
done:
    values_clear(ins, n_given);
    values_clear(results, total);
    free(ins);
    free(results);
    free(part_in);
    free(part_out);
    free(per_batch);
    return st;
}

ses_status_t ses__onnx_control_node(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    unsigned depth = 0;
    for (const importer_t *p = im; p; p = p->parent)
        depth++;
    if (depth > 32)
        return ses__fail(SES_UNIMPLEMENTED, "%s: control-flow bodies nest more than 32 deep",
                         label);
    if (!strcmp(n->op_type, "If"))
        return import_if(im, n, label);
    if (!strcmp(n->op_type, "Loop"))
        return import_loop(im, n, label);
    return import_scan(im, n, label);
}
