/*
 * Layout: activations kept in NCHWc16 (ops/nchwc.c) from one convolution to the next, so that
 * a CPU kernel built on blocked layouts (oneDNN's) does not reorder its input and output at
 * every call, the way ONNX Runtime's NCHWc transformer does.
 *
 * compile.c asks this file three things as it compiles the plan node by node, in order:
 *
 *   - the blocked variant of a node: Conv and FusedConv become NchwcConv (X NCHW or blocked,
 *     Y blocked), a fused chain's pooled node too (FusedConv with pool_ attributes, fuse.c:
 *     NchwcConv whose Y is max-pooled, which has no other form); MaxPool, AveragePool,
 *     GlobalAveragePool and GlobalMaxPool whose input is blocked become their Nchwc ops. The
 *     variant is compiled first, as a trial: where the driver has no kernel for it or refuses
 *     it (another dtype, a 3-D window, channels not a multiple of 16, a driver option, the
 *     fused pool), the node is compiled as it is (a pooled node: compile.c's fallback);
 *   - which inputs a node reads as they are when they are blocked: the Nchwc ops, the unary
 *     activations (Relu, LeakyRelu, Sigmoid, Tanh, Clip's X, Identity), Add, Sub, Mul and Div of
 *     two blocked tensors of one shape, and Concat on axis 1 of blocked tensors (with no
 *     padding channels, axis 1 of NCHWc16 is whole blocks of channels). Every other reader gets
 *     the value in NCHW: one NchwcReorderOutput step per blocked value, made the first time a
 *     reader needs it (fetches too);
 *   - whether a node's output is blocked: a blocked variant's, or a pass-through op's that read
 *     blocked inputs Only the pass's own values count: a Nchwc node the user wrote has 5-D
 *     values in the graph itself, which are fetched and read as they are.
 *
 * Decisions are local, so a refusal anywhere leaves a correct plan: a refused NchwcConv gives
 * an NCHW output, and whatever reads it runs as in the user's graph. The pass runs only in a
 * session whose one device is the CPU: with several devices a pass-through op could be placed
 * where the blocked value would have to be copied and reordered back, for nothing.
 */
#include <stdio.h>
#include <string.h>

#include "../error.h"
#include "plan.h"

static int is(const char *op, const char *name) { return strcmp(op, name) == 0; }

const char *ses__layout_variant(const ses_node_t *n, int input_blocked) {
    if (n->kind != SES__NODE_OP || n->n_outputs != 1)
        return NULL;
    if (is(n->op, "Conv") || is(n->op, "FusedConv"))
        return "NchwcConv";
    if (!input_blocked)
        return NULL;
    if (is(n->op, "MaxPool"))
        return "NchwcMaxPool";
    if (is(n->op, "AveragePool"))
        return "NchwcAveragePool";
    if (is(n->op, "GlobalAveragePool"))
        return "NchwcGlobalAveragePool";
    if (is(n->op, "GlobalMaxPool"))
        return "NchwcGlobalMaxPool";
    return NULL;
}

static int same_type(const ses__type_t *a, const ses__type_t *b) {
    if (a->dtype != b->dtype || a->rank != b->rank)
        return 0;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

/* The ops that compute each element from the same element of their inputs alone. */
static int unary_pass(const char *op) {
    return is(op, "Relu") || is(op, "LeakyRelu") || is(op, "Sigmoid") || is(op, "Tanh") ||
           is(op, "Clip") || is(op, "Identity");
}

static int binary_pass(const char *op) {
    return is(op, "Add") || is(op, "Sub") || is(op, "Mul") || is(op, "Div");
}

int ses__layout_accepts(const ses_node_t *n, size_t i, const unsigned char *blocked,
                        const ses__type_t *types) {
    const char *op = n->op;

    if (n->kind != SES__NODE_OP)
        return 0;
    if (is(op, "NchwcConv"))
        return i == 0 || i == 3;
    if (is(op, "NchwcMaxPool") || is(op, "NchwcAveragePool") || is(op, "NchwcGlobalAveragePool") ||
        is(op, "NchwcGlobalMaxPool") || is(op, "NchwcReorderOutput"))
        return i == 0;
    if (unary_pass(op))
        return i == 0;
    if (binary_pass(op))
        return n->n_inputs == 2 && blocked[0] && blocked[1] && same_type(&types[0], &types[1]);
    if (is(op, "Concat")) {
        int64_t axis = 0;
        if (ses__attrs_get_int(&n->attrs, "axis", &axis) != 1 || axis != 1)
            return 0;
        for (size_t k = 0; k < n->n_inputs; k++)
            if (!blocked[k])
                return 0;
        return 1;
    }
    return 0;
}

int ses__layout_makes_blocked(const ses_node_t *n, int variant, int read_blocked) {
    if (n->kind != SES__NODE_OP || n->n_outputs != 1 || is(n->op, "NchwcReorderOutput"))
        return 0;
    if (variant)
        return 1;
    return read_blocked && (unary_pass(n->op) || binary_pass(n->op) || is(n->op, "Concat"));
}

ses_node_t *ses__layout_variant_node(const ses_node_t *n, const char *op) {
    ses_node_t *v = ses__plan_node(n, n->id, n->name, op, SES__NODE_OP, n->n_inputs);

    if (!v)
        return NULL;
    for (size_t i = 0; i < n->n_inputs; i++)
        v->inputs[i] = n->inputs[i];
    if (ses__attrs_copy(&v->attrs, &n->attrs) != SES_OK) {
        ses__node_free(v);
        return NULL;
    }
    return v;
}

ses_node_t *ses__layout_reorder_node(ses_edge_t blocked, size_t id) {
    char name[512];
    ses_node_t *r;

    snprintf(name, sizeof name, "%s:%u/nchw", blocked.node->name, blocked.index);
    r = ses__plan_node(blocked.node, id, name, "NchwcReorderOutput", SES__NODE_OP, 1);
    if (r)
        r->inputs[0] = blocked;
    return r;
}
