/*
 * Fusion: chains of the pruned plan that run as one kernel, the way ONNX Runtime's FusedConv
 * and FusedGemm do, so that an activation does not write and read the whole tensor again:
 *
 *   Conv -> act                   FusedConv(X, W[, B])      activation(Conv(X, W, B))
 *   Conv -> Add(other) -> act     FusedConv(X, W, B, Z)     activation(Conv(X, W, B) + Z)
 *   Gemm -> act                   FusedGemm(A, B[, C])      activation(Gemm(A, B, C))
 *   MatMul -> Add(bias) -> act    FusedGemm(A, B, bias)     activation(A B + bias)
 *
 * with act one of Relu, LeakyRelu (its alpha), Sigmoid, Tanh, Clip (min and max from constant
 * inputs: ONNX import turns opset-6 attributes into such inputs). A chain is a candidate only
 * when every intermediate edge has exactly one consumer in the plan and is not fetched, not fed
 * and not a target's, and its nodes ask for the same device (or none). Either operand of the
 * Add may be the Conv; the other must have exactly the Conv output's shape, which FusedConv's
 * inference checks when the plan is compiled. A Conv without B but with Z gets an empty
 * constant for B (absent, as an empty optional input is everywhere in libsession). MatMul ->
 * Add fuses only when the bias is a constant or a variable (what ses_fc and exporters make)
 * and FusedGemm's inference accepts it: A and B matrices, the bias broadcasting one way to
 * [M, N] (a [N] vector); a batched MatMul stays as it is.
 *
 * A Conv chain whose activation output is read by a MaxPool alone (hidden as the other
 * intermediates are, same device), a MaxPool of one input and one output (no Indices), takes
 * that pool as its last member: besides the fused node of the chain without it, the candidate
 * gets a "pooled" one, FusedConv's attributes plus the MaxPool's own ones prefixed pool_
 * (pool_kernel_shape, pool_strides, pool_pads, pool_dilations, pool_ceil_mode, pool_auto_pad,
 * pool_storage_order: those the MaxPool has), named after every member ("conv1+relu1+pool1").
 * It is only ever compiled as its blocked variant, NchwcConv (ops/nchwc.c), which convolves and
 * max-pools in one kernel where the CPU driver takes it, so the convolution's output is never
 * written whole; FusedConv itself never sees the pool_ attributes.
 *
 * This file only finds the candidates and builds their nodes; compile.c decides at the chain's
 * last node: the fused node is compiled only on the device the chain's first node would take,
 * and only if that device's driver binds a kernel for the fused op that accepts the node
 * (supports_node). A chain with a pool tries the pooled NchwcConv first, then the chain without
 * the pool followed by the MaxPool on its own. Otherwise the members are compiled one by one as
 * if nothing happened, so a driver never sees an op or attribute it does not know. The user's
 * graph is never touched: the fused nodes belong to the compiled plan, named after the members
 * ("conv1+relu1"), so that an error at run time names nodes the user recognizes.
 *
 * In a training graph the forward chains mostly stay apart: a gradient reads the forward
 * activations, so their edges have several consumers. What fuses there is a weight's update:
 *
 *   MatMulGrad -> SGD             MatMulGradSGD(var, dy, A, B, lr)   SGD(var, MatMulGrad, lr)
 *
 * when the gradient is hidden (its SGD is its one reader, as the gradient of a weight that one
 * MatMul reads is) and the two ask for the same device. The gradient is then never written: a
 * driver computes var += (-lr) * (its GEMM) with beta 1 on var (the CPU driver's sgemm, for the
 * gradients one GEMM computes; it refuses batched ones, which then run unfused), instead of
 * writing the whole gradient and reading it back in an SGD pass over it. The fused node has no
 * outputs and updates var in place as the SGD does (the same schema bit), so the compiler
 * checks var, marks it written and orders the node as it does the SGD: at the SGD's place,
 * after every other step. The MatMulGrad's GEMM moves there with it; it must then read
 * nothing that an update of the plan writes (dy and the operand the gradient is computed from
 * are not variables updated in place), or it would read them after an update. The product
 * rounds once where SGD rounded the gradient first, so the values agree with the unfused
 * plan's within the GEMM's rounding, not bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../tensor/tensor_internal.h"
#include "plan.h"

/* How many times the plan's op nodes read @p e. */
static size_t consumers(const ses__pruned_t *p, ses_edge_t e) {
    size_t n = 0;
    for (size_t i = 0; i < p->n_nodes; i++) {
        const ses_node_t *x = p->nodes[i];
        if (x->kind != SES__NODE_OP)
            continue;
        for (size_t j = 0; j < x->n_inputs; j++)
            n += x->inputs[j].node == e.node && x->inputs[j].index == e.index;
    }
    return n;
}

/* Whether output 0 of @p n is an intermediate a fusion may hide: one reader in the plan, not
 * fetched, not fed, and @p n not a target. */
static int hidden(const ses_plan_t *plan, const ses__pruned_t *p, const ses_node_t *n) {
    const ses_edge_t e = {(ses_node_t *)n, 0};

    if (n->kind != SES__NODE_OP || n->n_outputs != 1 || consumers(p, e) != 1 ||
        ses__fed_index(plan->fed, plan->n_fed, e) != SIZE_MAX)
        return 0;
    for (size_t i = 0; i < plan->n_fetches; i++)
        if (plan->fetches[i].node == n)
            return 0;
    for (size_t i = 0; i < plan->n_targets; i++)
        if (plan->targets[i] == n)
            return 0;
    return 1;
}

static int same_device(const ses_node_t *a, const ses_node_t *b) {
    return (!a->device && !b->device) || (a->device && b->device && !strcmp(a->device, b->device));
}

/* A scalar bound of Clip from input @p i: absent (an empty constant, or no input) gives
 * @p fallback; a one-element f32 or f64 constant that is not fed gives its value. */
static int clip_bound(const ses_plan_t *plan, const ses_node_t *clip, size_t i, double fallback,
                      double *out) {
    const ses_node_t *c;
    const ses_tensor_t *t;

    *out = fallback;
    if (i >= clip->n_inputs)
        return 1;
    c = clip->inputs[i].node;
    if (c->kind != SES__NODE_CONSTANT ||
        ses__fed_index(plan->fed, plan->n_fed, clip->inputs[i]) != SIZE_MAX || !c->value)
        return 0;
    t = c->value;
    if (t->count == 0)
        return 1;
    if (t->count != 1)
        return 0;
    if (t->dtype == SES_F32)
        *out = *(const float *)t->data;
    else if (t->dtype == SES_F64)
        *out = *(const double *)t->data;
    else
        return 0;
    return 1;
}

/* The activation @p act applies, with its parameters: 0 when it is not one a fused op takes. */
static int activation_of(const ses_plan_t *plan, const ses_node_t *act, double *params,
                         size_t *out_n) {
    *out_n = 0;
    if (act->kind != SES__NODE_OP || act->n_outputs != 1)
        return 0;
    if (!strcmp(act->op, "Relu") || !strcmp(act->op, "Sigmoid") || !strcmp(act->op, "Tanh"))
        return act->n_inputs == 1;
    if (!strcmp(act->op, "LeakyRelu")) {
        params[0] = 0.01;
        if (act->n_inputs != 1 || ses__attrs_get_float(&act->attrs, "alpha", &params[0]) < 0)
            return 0;
        *out_n = 1;
        return 1;
    }
    if (!strcmp(act->op, "Clip")) {
        if (act->n_inputs < 1 || act->n_inputs > 3 ||
            !clip_bound(plan, act, 1, -INFINITY, &params[0]) ||
            !clip_bound(plan, act, 2, INFINITY, &params[1]) || !(params[0] <= params[1]))
            return 0;
        *out_n = 2;
        return 1;
    }
    return 0;
}

ses_node_t *ses__plan_node(const ses_node_t *like, size_t id, const char *name, const char *op,
                           ses__node_kind_t kind, size_t n_inputs) {
    ses_node_t *n = ses__calloc(1, sizeof *n);

    if (!n)
        return NULL;
    n->graph = like->graph;
    n->id = id;
    n->kind = kind;
    n->name = ses__strdup(name);
    n->op = ses__strdup(op);
    n->device = like->device ? ses__strdup(like->device) : NULL;
    n->inputs = ses__calloc(n_inputs + 1, sizeof *n->inputs);
    n->n_inputs = n_inputs;
    n->n_outputs = 1;
    if (!n->name || !n->op || !n->inputs || (like->device && !n->device)) {
        ses__node_free(n);
        return NULL;
    }
    if (kind == SES__NODE_OP) {
        n->schema = ses__op_schema_find(op);
        if (!n->schema) {
            ses__node_free(n);
            return NULL;
        }
    }
    return n;
}

/* Builds @p f's fused node: the head's inputs (plus B and Z for Conv -> Add), the head's
 * attributes and the activation's. */
static ses_status_t build_fused(ses__fusion_t *f, size_t id, ses_edge_t z, const double *params,
                                size_t n_params) {
    const ses_node_t *head = f->members[0], *act = f->members[f->n_members - 1];
    const int conv = !strcmp(head->op, "Conv");
    size_t n_inputs = !z.node ? head->n_inputs : conv ? 4 : 3;
    char name[512];
    ses_attr_t a;
    ses_status_t st;

    snprintf(name, sizeof name, "%s+%s%s%s", head->name,
             f->n_members == 3 ? f->members[1]->name : "", f->n_members == 3 ? "+" : "", act->name);
    f->node =
        ses__plan_node(head, id, name, conv ? "FusedConv" : "FusedGemm", SES__NODE_OP, n_inputs);
    if (!f->node)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory fusing %s", name);
    for (size_t i = 0; i < head->n_inputs; i++)
        f->node->inputs[i] = head->inputs[i];
    if (z.node && !conv) {
        f->node->inputs[2] = z; /* MatMul's bias: Gemm's C */
    } else if (z.node) {
        if (head->n_inputs < 3) {
            int64_t zero = 0;
            snprintf(name, sizeof name, "%s:B", head->name);
            f->empty = ses__plan_node(head, id + 1, name, "Constant", SES__NODE_CONSTANT, 0);
            if (!f->empty || ses_tensor_create(SES_F32, 1, &zero, &f->empty->value) != SES_OK)
                return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory fusing %s", name);
            f->node->inputs[2] = (ses_edge_t){f->empty, 0};
        }
        f->node->inputs[3] = z;
    }
    st = ses__attrs_copy(&f->node->attrs, &head->attrs);
    if (st != SES_OK)
        return st;
    a = ses_attr_string("activation", act->op);
    st = ses__attrs_set(&f->node->attrs, &a);
    if (st == SES_OK && n_params) {
        a = ses_attr_floats("activation_params", params, n_params);
        st = ses__attrs_set(&f->node->attrs, &a);
    }
    return st;
}

/* The MaxPool that alone reads @p act's output, with one input and one output (no Indices), on
 * act's device, when that output is one a fusion may hide; NULL otherwise. */
static const ses_node_t *trailing_pool(const ses_plan_t *plan, const ses__pruned_t *p,
                                       const ses_node_t *act) {
    const ses_node_t *pool = NULL;

    if (!hidden(plan, p, act))
        return NULL;
    for (size_t i = 0; i < p->n_nodes && !pool; i++) {
        const ses_node_t *x = p->nodes[i];
        for (size_t j = 0; x->kind == SES__NODE_OP && j < x->n_inputs; j++)
            if (x->inputs[j].node == act)
                pool = x;
    }
    if (!pool || strcmp(pool->op, "MaxPool") || pool->n_inputs != 1 || pool->n_outputs != 1 ||
        !same_device(act, pool))
        return NULL;
    return pool;
}

/* The MaxPool attributes a pooled node carries, each as pool_<name>. */
static const char *const pool_attrs[] = {"kernel_shape", "strides",  "pads",         "dilations",
                                         "ceil_mode",    "auto_pad", "storage_order"};

/* Builds @p f's pooled node (its last member is the MaxPool): f->node's inputs and attributes
 * plus the pool's, prefixed pool_. */
static ses_status_t build_pooled(ses__fusion_t *f, size_t id) {
    const ses_node_t *pool = f->members[f->n_members - 1];
    char name[512];
    ses_status_t st;

    snprintf(name, sizeof name, "%s+%s", f->node->name, pool->name);
    f->pooled = ses__plan_node(f->node, id, name, f->node->op, SES__NODE_OP, f->node->n_inputs);
    if (!f->pooled)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory fusing %s", name);
    for (size_t i = 0; i < f->node->n_inputs; i++)
        f->pooled->inputs[i] = f->node->inputs[i];
    st = ses__attrs_copy(&f->pooled->attrs, &f->node->attrs);
    for (size_t k = 0; st == SES_OK && k < sizeof pool_attrs / sizeof pool_attrs[0]; k++) {
        const ses__attr_t *a = ses__attrs_find(&pool->attrs, pool_attrs[k]);
        if (!a)
            continue;
        snprintf(name, sizeof name, "pool_%s", pool_attrs[k]);
        st = ses__attrs_set_as(&f->pooled->attrs, name, a);
    }
    return st;
}

/* Whether an in-place update of the plan (an optimizer) writes what @p e holds. */
static int updated_in_place(const ses__pruned_t *p, ses_edge_t e) {
    for (size_t i = 0; i < p->n_nodes; i++) {
        const ses_node_t *x = p->nodes[i];
        if (x->kind != SES__NODE_OP || !x->schema || !x->schema->inplace_inputs)
            continue;
        for (size_t j = 0; j < x->n_inputs && j < 64; j++)
            if ((x->schema->inplace_inputs >> j & 1) && x->inputs[j].node == e.node &&
                x->inputs[j].index == e.index)
                return 1;
    }
    return 0;
}

/*
 * The MatMulGrad whose gradient @p sgd alone reads, when the pair may run as MatMulGradSGD:
 * the gradient hidden as a chain's intermediates are, on the SGD's device, with an input
 * attribute of 0 or 1, and var a variable that is not fed (otherwise the members' own compile
 * reports the error, naming them). The fused node runs where the SGD runs, after every other
 * step, so what its GEMM reads (dy and the operand the gradient is computed from) must not be
 * a variable that an update of the plan writes: an update before it would change it, and var
 * itself is written by the GEMM that reads it.
 */
static const ses_node_t *sgd_gradient(const ses_plan_t *plan, const ses__pruned_t *p,
                                      const ses_node_t *sgd) {
    const ses_node_t *mg;
    int64_t input = -1;

    if (sgd->kind != SES__NODE_OP || strcmp(sgd->op, "SGD") || sgd->n_inputs != 3 ||
        sgd->inputs[1].index != 0 || sgd->inputs[0].node->kind != SES__NODE_VARIABLE ||
        ses__fed_index(plan->fed, plan->n_fed, sgd->inputs[0]) != SIZE_MAX)
        return NULL;
    mg = sgd->inputs[1].node;
    if (mg->kind != SES__NODE_OP || strcmp(mg->op, "MatMulGrad") || mg->n_inputs != 3 ||
        !hidden(plan, p, mg) || !same_device(mg, sgd) ||
        ses__attrs_get_int(&mg->attrs, "input", &input) != 1 || (input != 0 && input != 1))
        return NULL;
    if (updated_in_place(p, mg->inputs[0]) || updated_in_place(p, mg->inputs[input ? 1 : 2]))
        return NULL;
    return mg;
}

/* Builds @p f's MatMulGradSGD(var, dy, A, B, lr) with the MatMulGrad's attributes: members[0]
 * is the MatMulGrad, members[1] the SGD. Like the SGD, it has no outputs. */
static ses_status_t build_update(ses__fusion_t *f, size_t id) {
    const ses_node_t *mg = f->members[0], *sgd = f->members[1];
    char name[512];

    snprintf(name, sizeof name, "%s+%s", mg->name, sgd->name);
    f->node = ses__plan_node(sgd, id, name, "MatMulGradSGD", SES__NODE_OP, 5);
    if (!f->node)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory fusing %s", name);
    f->node->n_outputs = 0;
    f->node->inputs[0] = sgd->inputs[0];
    for (size_t i = 0; i < 3; i++)
        f->node->inputs[1 + i] = mg->inputs[i];
    f->node->inputs[4] = sgd->inputs[2];
    return ses__attrs_copy(&f->node->attrs, &mg->attrs);
}

/* Room for one more candidate in @p out, zeroed. NULL when memory runs out. */
static ses__fusion_t *new_candidate(ses__fusions_t *out) {
    ses__fusion_t *f;

    if (out->count % 16 == 0) {
        ses__fusion_t *items = ses__realloc(out->items, (out->count + 16) * sizeof *items);
        if (!items) {
            ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory for fusions");
            return NULL;
        }
        out->items = items;
    }
    f = &out->items[out->count++];
    memset(f, 0, sizeof *f);
    return f;
}

ses_status_t ses__fuse_find(const ses_plan_t *plan, const ses__pruned_t *pruned, size_t first_id,
                            ses__fusions_t *out) {
    ses_status_t st = SES_OK;

    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < pruned->n_nodes; i++) {
        const ses_node_t *act = pruned->nodes[i], *src, *head = NULL, *add = NULL, *pool;
        ses_edge_t z = {NULL, 0};
        double params[2];
        size_t n_params;
        ses__fusion_t *f;

        /* An SGD update (the chain's last node, as the activation is) of a MatMulGrad's
         * gradient that nothing else reads: the GEMM updates the variable itself. */
        const ses_node_t *const update = pruned->nodes[i],
                                *grad = sgd_gradient(plan, pruned, update);
        if (grad) {
            if (!(f = new_candidate(out))) {
                st = SES_OUT_OF_MEMORY;
                break;
            }
            f->members[f->n_members++] = grad;
            f->members[f->n_members++] = update;
            st = build_update(f, first_id + SES__FUSION_IDS * (out->count - 1));
            if (st != SES_OK)
                break;
            continue;
        }
        if (!activation_of(plan, act, params, &n_params) || act->inputs[0].index != 0)
            continue;
        src = act->inputs[0].node;
        if (!hidden(plan, pruned, src) || !same_device(src, act))
            continue;
        if ((!strcmp(src->op, "Conv") || !strcmp(src->op, "Gemm")) && src->n_inputs >= 2 &&
            src->n_inputs <= 3) {
            head = src;
        } else if (!strcmp(src->op, "Add") && src->n_inputs == 2) {
            for (size_t k = 0; k < 2 && !head; k++) {
                const ses_node_t *c = src->inputs[k].node, *o = src->inputs[1 - k].node;
                const int conv = !strcmp(c->op, "Conv") && c->n_inputs >= 2 && c->n_inputs <= 3;
                const int matmul =
                    !strcmp(c->op, "MatMul") && c->n_inputs == 2 &&
                    (o->kind == SES__NODE_CONSTANT || o->kind == SES__NODE_VARIABLE) &&
                    ses__fed_index(plan->fed, plan->n_fed, src->inputs[1 - k]) == SIZE_MAX;
                if (src->inputs[k].index == 0 && (conv || matmul) && o != c &&
                    hidden(plan, pruned, c) && same_device(c, src)) {
                    head = c;
                    add = src;
                    z = src->inputs[1 - k];
                }
            }
        }
        if (!head)
            continue;
        if (!(f = new_candidate(out))) {
            st = SES_OUT_OF_MEMORY;
            break;
        }
        f->members[f->n_members++] = head;
        if (add)
            f->members[f->n_members++] = add;
        f->members[f->n_members++] = act;
        st = build_fused(f, first_id + SES__FUSION_IDS * (out->count - 1), z, params, n_params);
        if (st != SES_OK)
            break;
        pool = !strcmp(head->op, "Conv") ? trailing_pool(plan, pruned, act) : NULL;
        if (pool) {
            f->members[f->n_members++] = pool;
            st = build_pooled(f, first_id + SES__FUSION_IDS * (out->count - 1) + 2);
            if (st != SES_OK)
                break;
        }
    }
    if (st != SES_OK)
        ses__fusions_clear(out);
    return st;
}

ses__fusion_t *ses__fusion_of(const ses__fusions_t *f, const ses_node_t *n) {
    for (size_t i = 0; i < f->count; i++)
        for (size_t m = 0; m < f->items[i].n_members; m++)
            if (f->items[i].members[m] == n)
                return &f->items[i];
    return NULL;
}

void ses__fusions_clear(ses__fusions_t *f) {
    for (size_t i = 0; i < f->count; i++) {
        ses__node_free(f->items[i].node);
        ses__node_free(f->items[i].empty);
        ses__node_free(f->items[i].pooled);
    }
    free(f->items);
    memset(f, 0, sizeof *f);
}
