/*
 * Graph helpers for training: fully connected layers, losses, optimizers and minimize. Each
 * helper either adds all of its nodes or, on failure, none (the graph is truncated back).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/train.h>

#include "../error.h"
#include "../graph/graph_internal.h"
#include "../tensor/tensor_internal.h"

/* ---- small helpers ------------------------------------------------------------------------ */

static ses_status_t add_op(ses_graph_t *g, const char *op, const char *name,
                           const ses_edge_t *inputs, size_t n_inputs, const ses_attr_t *attrs,
                           size_t n_attrs, ses_edge_t *out) {
    return ses_graph_op(g, op, name, inputs, n_inputs, attrs, n_attrs, out);
}

/* "<base>/<suffix>" into @p buffer. */
static const char *join(char *buffer, size_t size, const char *base, const char *suffix) {
    snprintf(buffer, size, "%s/%s", base, suffix);
    return buffer;
}

/* The size of the last dimension of @p e as far as the graph tells before running, or -1. */
static int64_t last_dim(ses_edge_t e) {
    for (int depth = 0; e.node && depth < 64; depth++) {
        const ses_node_t *n = e.node;
        switch (n->kind) {
        case SES__NODE_PLACEHOLDER:
            return n->rank ? n->dims[n->rank - 1] : -1;
        case SES__NODE_CONSTANT:
            return n->value->rank ? n->value->dims[n->value->rank - 1] : -1;
        case SES__NODE_VARIABLE:
            e = n->inputs[0];
            continue;
        case SES__NODE_NOOP:
            return -1;
        case SES__NODE_OP:
            break;
        }
        if (!strcmp(n->op, "MatMul") || !strcmp(n->op, "Gemm")) {
            int64_t tb = 0;
            if (!strcmp(n->op, "Gemm") && ses__attrs_get_int(&n->attrs, "transB", &tb) == 1 && tb)
                return -1; /* the first dim of B; not followed */
            e = n->inputs[1];
        } else if (!strcmp(n->op, "Add") || !strcmp(n->op, "Sub") || !strcmp(n->op, "Mul") ||
                   !strcmp(n->op, "Relu") || !strcmp(n->op, "Sigmoid") ||
                   !strcmp(n->op, "Tanh") || !strcmp(n->op, "Identity") ||
                   !strcmp(n->op, "LeakyRelu") || !strcmp(n->op, "Softmax")) {
            e = n->inputs[0];
        } else {
            return -1;
        }
    }
    return -1;
}

/* xorshift64*, for reproducible initial weights. */
static uint64_t next_random(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * UINT64_C(2685821657736338717);
}

/* ---- layers ----------------------------------------------------------------------------- */

ses_status_t ses_fc(ses_graph_t *g, const char *name, ses_edge_t x, int64_t size,
                    ses_activation_t activation, uint64_t seed, ses_edge_t *out) {
    static const char *const activations[] = {NULL, "Relu", "Sigmoid", "Tanh"};
    char buf[512];
    ses_tensor_t *w_init = NULL, *b_init = NULL;
    ses_edge_t w_value, b_value, w, b, y, in[2];
    size_t n_before;
    int64_t k, dims[2];
    uint64_t state;
    float *data;
    double limit;
    ses_status_t st;

    if (!out)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_fc: out is NULL");
    *out = (ses_edge_t){NULL, 0};
    if (!g || !name || !*name || !x.node)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_fc: NULL %s",
                         !g ? "graph" : !x.node ? "input edge" : "name (layers need one)");
    if (size <= 0 || size > (INT64_C(1) << 31))
        return ses__fail(SES_INVALID_ARGUMENT, "ses_fc \"%s\": size %lld is not in 1..2^31", name,
                         (long long)size);
    if ((unsigned)activation >= sizeof activations / sizeof activations[0])
        return ses__fail(SES_INVALID_ARGUMENT, "ses_fc \"%s\": unknown activation %d", name,
                         (int)activation);
    k = last_dim(x);
    if (k <= 0)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_fc \"%s\": cannot tell the input's last dimension from the graph; "
                         "give the placeholder a fixed last dimension (e.g. [-1, 784])",
                         name);
    if (k > (INT64_C(1) << 31) || k * size > (INT64_C(1) << 34))
        return ses__fail(SES_INVALID_ARGUMENT, "ses_fc \"%s\": a %lld x %lld weight is too large",
                         name, (long long)k, (long long)size);

    /* Glorot (Xavier) uniform weights, zero biases. */
    dims[0] = k;
    dims[1] = size;
    st = ses_tensor_create(SES_F32, 2, dims, &w_init);
    if (st == SES_OK)
        st = ses_tensor_create(SES_F32, 1, &dims[1], &b_init);
    if (st != SES_OK) {
        ses_tensor_release(w_init);
        return st;
    }
    data = ses_tensor_data(w_init);
    limit = sqrt(6.0 / (double)(k + size));
    state = seed * UINT64_C(0x9E3779B97F4A7C15) + 0x2545F4914F6CDD1Dull;
    for (int64_t i = 0; i < k * size; i++)
        data[i] = (float)(limit * (2.0 * (double)(next_random(&state) >> 11) / 9007199254740992.0 -
                                   1.0));

    n_before = g->n_nodes;
    st = ses_graph_constant(g, join(buf, sizeof buf, name, "W/init"), w_init, &w_value);
    if (st == SES_OK)
        st = ses_graph_constant(g, join(buf, sizeof buf, name, "b/init"), b_init, &b_value);
    if (st == SES_OK)
        st = ses_graph_variable(g, join(buf, sizeof buf, name, "W"), w_value, &w);
    if (st == SES_OK)
        st = ses_graph_variable(g, join(buf, sizeof buf, name, "b"), b_value, &b);
    in[0] = x;
    in[1] = w;
    if (st == SES_OK)
        st = add_op(g, "MatMul", join(buf, sizeof buf, name, "MatMul"), in, 2, NULL, 0, &y);
    in[0] = y;
    in[1] = b;
    if (st == SES_OK)
        st = add_op(g, "Add", activation ? join(buf, sizeof buf, name, "Add") : name, in, 2, NULL,
                    0, &y);
    if (st == SES_OK && activation) {
        ses_edge_t pre = y;
        st = add_op(g, activations[activation], name, &pre, 1, NULL, 0, &y);
    }
    ses_tensor_release(w_init);
    ses_tensor_release(b_init);
    if (st != SES_OK) {
        ses__graph_truncate(g, n_before);
        return st;
    }
    *out = y;
    return SES_OK;
}

/* ---- losses ----------------------------------------------------------------------------- */

static const char *reduction_name(ses_reduction_t r) {
    return r == SES_REDUCTION_MEAN ? "mean" : r == SES_REDUCTION_SUM ? "sum" : r == SES_REDUCTION_NONE ? "none" : NULL;
}

ses_status_t ses_softmax_cross_entropy(ses_graph_t *g, const char *name, ses_edge_t scores,
                                       ses_edge_t labels, ses_reduction_t reduction,
                                       ses_edge_t *out_loss) {
    ses_edge_t in[2] = {scores, labels};
    ses_attr_t a;
    ses_node_t *node = NULL;
    ses_status_t st;

    if (!out_loss)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_softmax_cross_entropy: out_loss is NULL");
    *out_loss = (ses_edge_t){NULL, 0};
    if (!reduction_name(reduction))
        return ses__fail(SES_INVALID_ARGUMENT, "ses_softmax_cross_entropy: unknown reduction %d",
                         (int)reduction);
    a = ses_attr_string("reduction", reduction_name(reduction));
    /* Two outputs: the loss, and log_prob, which its gradient reads. */
    st = ses_graph_add_node(g, "SoftmaxCrossEntropyLoss", name, in, 2, &a, 1, 2, &node);
    if (st != SES_OK)
        return st;
    *out_loss = ses_node_output(node, 0);
    return SES_OK;
}

ses_status_t ses_mean_squared_error(ses_graph_t *g, const char *name, ses_edge_t a, ses_edge_t b,
                                    ses_reduction_t reduction, ses_edge_t *out_loss) {
    char buf[512];
    ses_edge_t in[2] = {a, b}, d, sq;
    ses_attr_t keep = ses_attr_int("keepdims", 0);
    size_t n_before;
    ses_status_t st;

    if (!out_loss)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_mean_squared_error: out_loss is NULL");
    *out_loss = (ses_edge_t){NULL, 0};
    if (!g || !name || !*name)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_mean_squared_error: NULL %s",
                         !g ? "graph" : "name");
    if (!reduction_name(reduction))
        return ses__fail(SES_INVALID_ARGUMENT, "ses_mean_squared_error: unknown reduction %d",
                         (int)reduction);
    n_before = g->n_nodes;
    st = add_op(g, "Sub", join(buf, sizeof buf, name, "diff"), in, 2, NULL, 0, &d);
    in[0] = in[1] = d;
    if (st == SES_OK)
        st = add_op(g, "Mul", reduction == SES_REDUCTION_NONE ? name : join(buf, sizeof buf, name, "square"), in, 2, NULL, 0, &sq);
    if (st == SES_OK && reduction != SES_REDUCTION_NONE) {
        ses_edge_t squares = sq;
        st = add_op(g, reduction == SES_REDUCTION_MEAN ? "ReduceMean" : "ReduceSum", name,
                    &squares, 1, &keep, 1, &sq);
    }
    if (st != SES_OK) {
        ses__graph_truncate(g, n_before);
        return st;
    }
    *out_loss = sq;
    return SES_OK;
}

/* ---- optimizers ------------------------------------------------------------------------- */

static void optimizer_init(ses_optimizer_t *o, ses_optimizer_kind_t kind, double lr) {
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->kind = kind;
    o->learning_rate = lr;
    o->momentum = 0.9;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->epsilon = 1e-8;
}

void ses_optimizer_sgd(ses_optimizer_t *o, double learning_rate) {
    if (o)
        optimizer_init(o, SES_OPTIMIZER_SGD, learning_rate);
}

void ses_optimizer_momentum(ses_optimizer_t *o, double learning_rate, double momentum,
                            int nesterov) {
    if (!o)
        return;
    optimizer_init(o, SES_OPTIMIZER_MOMENTUM, learning_rate);
    o->momentum = momentum;
    o->nesterov = nesterov != 0;
}

void ses_optimizer_adam(ses_optimizer_t *o, double learning_rate) {
    if (o)
        optimizer_init(o, SES_OPTIMIZER_ADAM, learning_rate);
}

/* A variable "<var>/<suffix>" that starts as zeros shaped like @p var (rank 0 when scalar). */
static ses_status_t state_variable(ses_graph_t *g, ses_edge_t var, const char *suffix,
                                   int scalar, ses_edge_t *out) {
    char state[400], buf[512];
    ses_attr_t zero = ses_attr_float("value", 0.0);
    ses_edge_t z, in[2];
    ses_status_t st;

    join(state, sizeof state, var.node->name, suffix);
    st = add_op(g, "ScalarLike", join(buf, sizeof buf, state, "zero"), &var, 1, &zero, 1, &z);
    if (st == SES_OK && !scalar) {
        in[0] = z;
        in[1] = var;
        st = add_op(g, "ExpandLike", join(buf, sizeof buf, state, "init"), in, 2, NULL, 0, &z);
    }
    if (st == SES_OK)
        st = ses_graph_variable(g, state, z, out);
    return st;
}

static ses_status_t update_op(ses_graph_t *g, const char *name, const ses_optimizer_t *o,
                              ses_node_t *var_node, ses_edge_t grad, ses_node_t **out) {
    char buf[512], opname[512];
    ses_edge_t var = ses_node_output(var_node, 0), lr, in[6];
    ses_attr_t attrs[3];
    size_t n_in = 3, n_attrs = 0;
    const char *op = o->kind == SES_OPTIMIZER_SGD ? "SGD" : o->kind == SES_OPTIMIZER_MOMENTUM ? "Momentum" : "Adam";
    ses_status_t st = SES_OK;

    if (o->learning_rate_edge.node) {
        lr = o->learning_rate_edge;
    } else {
        ses_attr_t value = ses_attr_float("value", o->learning_rate);
        st = add_op(g, "ScalarLike", join(buf, sizeof buf, var_node->name, "learning_rate"), &var, 1,
                    &value, 1, &lr);
    }
    in[0] = var;
    in[1] = grad;
    in[2] = lr;
    if (st == SES_OK && o->kind == SES_OPTIMIZER_MOMENTUM) {
        st = state_variable(g, var, "momentum", 0, &in[3]);
        n_in = 4;
        attrs[n_attrs++] = ses_attr_float("momentum", o->momentum);
        attrs[n_attrs++] = ses_attr_int("nesterov", o->nesterov != 0);
    } else if (st == SES_OK && o->kind == SES_OPTIMIZER_ADAM) {
        st = state_variable(g, var, "adam_m", 0, &in[3]);
        if (st == SES_OK)
            st = state_variable(g, var, "adam_v", 0, &in[4]);
        if (st == SES_OK)
            st = state_variable(g, var, "adam_t", 1, &in[5]);
        n_in = 6;
        attrs[n_attrs++] = ses_attr_float("beta1", o->beta1);
        attrs[n_attrs++] = ses_attr_float("beta2", o->beta2);
        attrs[n_attrs++] = ses_attr_float("epsilon", o->epsilon);
    }
    snprintf(opname, sizeof opname, "%s/%s/%s", name, var_node->name, op);
    if (st == SES_OK)
        st = ses_graph_add_node(g, op, opname, in, n_in, attrs, n_attrs, 0, out);
    return st;
}

/* Every variable @p loss depends on (not through a variable's initializer). */
static ses_status_t loss_variables(ses_graph_t *g, ses_edge_t loss, ses_node_t ***out,
                                   size_t *out_n) {
    unsigned char *needed = ses__calloc(g->n_nodes + 1, 1);
    ses_node_t **vars = ses__calloc(g->n_nodes + 1, sizeof *vars);
    size_t n = 0;

    if (!needed || !vars) {
        free(needed);
        free(vars);
        return ses__fail(SES_OUT_OF_MEMORY, "ses_minimize: out of memory");
    }
    needed[loss.node->id] = 1;
    for (size_t id = g->n_nodes; id-- > 0;) {
        ses_node_t *node = g->nodes[id];
        if (!needed[id])
            continue;
        if (node->kind == SES__NODE_VARIABLE) {
            vars[n++] = node;
            continue;
        }
        for (size_t i = 0; i < node->n_inputs; i++)
            needed[node->inputs[i].node->id] = 1;
    }
    free(needed);
    /* Creation order, which is the order users think of them in. */
    for (size_t i = 0; i < n / 2; i++) {
        ses_node_t *t = vars[i];
        vars[i] = vars[n - 1 - i];
        vars[n - 1 - i] = t;
    }
    *out = vars;
    *out_n = n;
    return SES_OK;
}

/* Routes the gradients through AllReduce nodes (mean over the job's processes), up to
 * SES__MAX_OUTPUTS per node: each node is one fused collective. */
/* The gradients summed over the job: their mean, since each rank's were seeded with 1/N. */
static ses_status_t allreduce_gradients(ses_graph_t *g, const char *name, ses_edge_t *dxs,
                                        size_t n) {
    const ses_attr_t sum = ses_attr_string("reduction", "sum");

    for (size_t first = 0; first < n; first += SES__MAX_OUTPUTS) {
        size_t k = n - first < SES__MAX_OUTPUTS ? n - first : SES__MAX_OUTPUTS;
        char node_name[600];
        ses_node_t *node;
        ses_status_t st;

        snprintf(node_name, sizeof node_name, "%s/allreduce_%zu", name, first / SES__MAX_OUTPUTS);
        st = ses_graph_add_node(g, "AllReduce", node_name, dxs + first, k, &sum, 1, k, &node);
        if (st != SES_OK)
            return st;
        for (size_t i = 0; i < k; i++)
            dxs[first + i] = ses_node_output(node, (uint32_t)i);
    }
    return SES_OK;
}

static ses_status_t minimize(ses_graph_t *g, const char *name, ses_edge_t loss,
                             const ses_optimizer_t *optimizer, ses_node_t *const *vars,
                             size_t n_vars, int distributed, ses_node_t **out_step);

ses_status_t ses_minimize(ses_graph_t *g, const char *name, ses_edge_t loss,
                          const ses_optimizer_t *optimizer, ses_node_t *const *vars,
                          size_t n_vars, ses_node_t **out_step) {
    return minimize(g, name, loss, optimizer, vars, n_vars, 0, out_step);
}

ses_status_t ses_minimize_distributed(ses_graph_t *g, const char *name, ses_edge_t loss,
                                      const ses_optimizer_t *optimizer, ses_node_t *const *vars,
                                      size_t n_vars, ses_node_t **out_step) {
    return minimize(g, name, loss, optimizer, vars, n_vars, 1, out_step);
}

static ses_status_t minimize(ses_graph_t *g, const char *name, ses_edge_t loss,
                             const ses_optimizer_t *optimizer, ses_node_t *const *vars,
                             size_t n_vars, int distributed, ses_node_t **out_step) {
    ses_node_t **own_vars = NULL, **updates = NULL;
    ses_edge_t *xs = NULL, *dxs = NULL, seed;
    char prefix[512], seed_name[600];
    size_t n_before, n = n_vars;
    ses_status_t st;

    if (!out_step)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_minimize: out_step is NULL");
    *out_step = NULL;
    if (!g || !name || !*name || !loss.node || !optimizer)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_minimize: NULL %s",
                         !g ? "graph" : !loss.node ? "loss edge" : !optimizer ? "optimizer" : "name");
    if (optimizer->struct_size < sizeof *optimizer || (unsigned)optimizer->kind > SES_OPTIMIZER_ADAM)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_minimize \"%s\": the optimizer is not initialized (use "
                         "ses_optimizer_sgd, _momentum or _adam)",
                         name);
    if (!optimizer->learning_rate_edge.node &&
        !(optimizer->learning_rate > 0.0 && isfinite(optimizer->learning_rate)))
        return ses__fail(SES_INVALID_ARGUMENT, "ses_minimize \"%s\": learning rate %g is not positive",
                         name, optimizer->learning_rate);
    if (n_vars && !vars)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_minimize \"%s\": vars is NULL with %zu", name, n_vars);
    if (loss.node->graph != g)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_minimize \"%s\": the loss belongs to another graph", name);

    n_before = g->n_nodes;
    if (!vars) {
        st = loss_variables(g, loss, &own_vars, &n);
        if (st != SES_OK)
            return st;
        vars = own_vars;
        if (n == 0) {
            free(own_vars);
            return ses__fail(SES_INVALID_ARGUMENT,
                             "ses_minimize \"%s\": the loss \"%s\" depends on no variable", name,
                             loss.node->name);
        }
    }
    xs = ses__calloc(n + 1, sizeof *xs);
    dxs = ses__calloc(n + 1, sizeof *dxs);
    updates = ses__calloc(n + 1, sizeof *updates);
    if (!xs || !dxs || !updates) {
        st = ses__fail(SES_OUT_OF_MEMORY, "ses_minimize: out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (!vars[i] || vars[i]->graph != g || vars[i]->kind != SES__NODE_VARIABLE) {
            st = ses__fail(SES_INVALID_ARGUMENT, "ses_minimize \"%s\": vars[%zu]%s%s is not a variable of this graph",
                           name, i, vars[i] ? " " : "", vars[i] ? vars[i]->name : " (NULL)");
            goto done;
        }
        xs[i] = ses_node_output(vars[i], 0);
    }
    snprintf(prefix, sizeof prefix, "%s/gradients", name);
    /* Distributed: the backward pass starts from 1/N rather than 1, so that the sum of every
     * rank's gradients is their mean without a pass over them (allreduce_gradients). */
    if (distributed)
        st = add_op(g, "RankWeight", join(seed_name, sizeof seed_name, name, "rank_weight"),
                    &loss, 1, NULL, 0, &seed);
    else
        st = SES_OK;
    if (st == SES_OK)
        st = ses_gradients(g, prefix, &loss, 1, xs, n, distributed ? &seed : NULL, dxs);
    for (size_t i = 0; i < n && st == SES_OK; i++)
        if (!dxs[i].node)
            st = ses__fail(SES_INVALID_ARGUMENT,
                           "ses_minimize \"%s\": the loss \"%s\" does not depend on variable \"%s\"",
                           name, loss.node->name, vars[i]->name);
    if (st == SES_OK && distributed)
        st = allreduce_gradients(g, name, dxs, n);
    for (size_t i = 0; i < n && st == SES_OK; i++)
        st = update_op(g, name, optimizer, vars[i], dxs[i], &updates[i]);
    if (st == SES_OK)
        st = ses_graph_group(g, name, updates, n, out_step);

done:
    if (st != SES_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ses_last_error());
        ses__graph_truncate(g, n_before);
        ses__fail(st, "%s", message);
        *out_step = NULL;
    }
    free(own_vars);
    free(xs);
    free(dxs);
    free(updates);
    return st;
}
