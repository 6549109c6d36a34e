/*
 * Training: gradients, layers, losses and optimizers, all built out of graph nodes.
 *
 * Everything here adds nodes to a graph; nothing runs until a session evaluates them. The
 * seeds' loop is
 *
 *     ses_edge_t h, logits, loss;
 *     ses_node_t *step;
 *     ses_fc(g, "fc1", x, 256, SES_ACTIVATION_SIGMOID, 1, &h);
 *     ses_fc(g, "fc2", h, 10, SES_ACTIVATION_NONE, 2, &logits);
 *     ses_softmax_cross_entropy(g, "loss", logits, labels, SES_REDUCTION_MEAN, &loss);
 *     ses_optimizer_t sgd; ses_optimizer_sgd(&sgd, 0.1);
 *     ses_minimize(g, "train", loss, &sgd, NULL, 0, &step);
 *     for (i = 0; i < 1000; i++) ses_session_eval(s, &loss, 1, feeds, 2, &step, 1, &value);
 *
 * Gradient graphs are built before shapes are known (a placeholder's batch dimension may be
 * -1), so they use ops whose output takes the shape or dtype of another edge (ExpandLike,
 * ReduceSumLike, ReshapeLike, CastLike, ScalarLike) and fused gradient ops (ReluGrad,
 * MatMulGrad, SoftmaxCrossEntropyLossGrad, ...); libsession/src/ops/grad_ops.c and the README
 * list them.
 */
#ifndef SESSION_TRAIN_H
#define SESSION_TRAIN_H

#include <session/graph.h>
#include <session/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- gradients --------------------------------------------------------------------------- */

/**
 * Adds the reverse-mode gradient of sum(ys[i] * dys[i]) with respect to each xs[j] to @p g, and
 * stores in out_dxs[j] the edge of that gradient, which has the shape and dtype of xs[j].
 * @p dys may be NULL: each y is then seeded with ones (the gradient of sum(y)). An x that no y
 * depends on gets {NULL, 0}. Every op on a path from an x to a y must have a gradient; when one
 * has none, fails with SES_UNIMPLEMENTED naming the op, the node and the path from x to y.
 * Nodes are named "<prefix>/..." (prefix "gradients" when NULL). On failure nothing is added.
 */
SES_API ses_status_t ses_gradients(ses_graph_t *g, const char *prefix, const ses_edge_t *ys,
                                   size_t n_ys, const ses_edge_t *xs, size_t n_xs,
                                   const ses_edge_t *dys, ses_edge_t *out_dxs);

/* ---- layers and losses -------------------------------------------------------------------- */

typedef enum ses_activation {
    SES_ACTIVATION_NONE = 0,
    SES_ACTIVATION_RELU = 1,
    SES_ACTIVATION_SIGMOID = 2,
    SES_ACTIVATION_TANH = 3,
} ses_activation_t;

/**
 * A fully connected layer: activation(x · W + b), x of shape [N, K] (any N) and f32.
 * Adds variables "<name>/W" ([K, size], Glorot-uniform with @p seed) and "<name>/b" ([size],
 * zeros); K is read from x's declared shape, which must be known (a placeholder's last dim or
 * a previous fc's size). Stores the layer's output edge in @p out.
 */
SES_API ses_status_t ses_fc(ses_graph_t *g, const char *name, ses_edge_t x, int64_t size,
                            ses_activation_t activation, uint64_t seed, ses_edge_t *out);

typedef enum ses_reduction {
    SES_REDUCTION_MEAN = 0,
    SES_REDUCTION_SUM = 1,
    SES_REDUCTION_NONE = 2,
} ses_reduction_t;

/**
 * SoftmaxCrossEntropyLoss with ONNX semantics: @p scores [N, C] (or [N, C, d...]) float,
 * @p labels [N] (or [N, d...]) i64 class indices. Stores the loss edge (a scalar for MEAN and
 * SUM, [N, ...] for NONE) in @p out_loss.
 */
SES_API ses_status_t ses_softmax_cross_entropy(ses_graph_t *g, const char *name,
                                               ses_edge_t scores, ses_edge_t labels,
                                               ses_reduction_t reduction, ses_edge_t *out_loss);

/** Mean squared error: mean((a - b)^2) over every element (or sum, or elementwise). */
SES_API ses_status_t ses_mean_squared_error(ses_graph_t *g, const char *name, ses_edge_t a,
                                            ses_edge_t b, ses_reduction_t reduction,
                                            ses_edge_t *out_loss);

/* ---- optimizers --------------------------------------------------------------------------- */

typedef enum ses_optimizer_kind {
    SES_OPTIMIZER_SGD = 0,
    SES_OPTIMIZER_MOMENTUM = 1,
    SES_OPTIMIZER_ADAM = 2,
} ses_optimizer_kind_t;

typedef struct ses_optimizer {
    uint32_t struct_size; /* set by the ses_optimizer_* initializers */
    ses_optimizer_kind_t kind;
    double learning_rate;       /* used when learning_rate_edge.node is NULL */
    ses_edge_t learning_rate_edge; /* a scalar edge (a placeholder to feed, say), or {NULL, 0} */
    double momentum;            /* MOMENTUM: 0.9 */
    int nesterov;               /* MOMENTUM: non-zero for Nesterov momentum */
    double beta1, beta2, epsilon; /* ADAM: 0.9, 0.999, 1e-8 */
} ses_optimizer_t;

SES_API void ses_optimizer_sgd(ses_optimizer_t *o, double learning_rate);
SES_API void ses_optimizer_momentum(ses_optimizer_t *o, double learning_rate, double momentum,
                                    int nesterov);
SES_API void ses_optimizer_adam(ses_optimizer_t *o, double learning_rate);

/**
 * Adds the gradients of @p loss with respect to @p vars (NULL: every float variable the loss
 * depends on) and one update op per variable (SGD, Momentum or Adam, which change the variable
 * in place where it lives, with their own state in variables "<var>/momentum", "<var>/adam_m",
 * "<var>/adam_v", "<var>/adam_t"), grouped under a NoOp named @p name, stored in @p out_step:
 * evaluating it as a target runs one training step. Updates run after every other node of the
 * same eval that reads the variable. Fails naming the variable when the loss does not depend
 * on it, and as ses_gradients does when an op has no gradient. A fetch of a variable itself in
 * the same eval sees its value after the update (fetches are read when every step is done).
 * An update placed on a device other than the variable's home (the host) works on a copy there
 * that is copied back after it.
 */
SES_API ses_status_t ses_minimize(ses_graph_t *g, const char *name, ses_edge_t loss,
                                  const ses_optimizer_t *optimizer, ses_node_t *const *vars,
                                  size_t n_vars, ses_node_t **out_step);

/**
 * ses_minimize for data-parallel training: the gradients pass through AllReduce nodes
 * ("<name>/allreduce_<k>", up to 8 gradients fused per node) that average them over every
 * process of the job before the updates. Each process feeds its own shard of the batch; with
 * equal shards and a mean loss, every process applies the gradient of the whole batch. The
 * session's communicator (ses_session_set_communicator; libsession-mpi's ses_mpi_session_open)
 * performs the collective; without one the graph trains exactly as ses_minimize's.
 */
SES_API ses_status_t ses_minimize_distributed(ses_graph_t *g, const char *name, ses_edge_t loss,
                                              const ses_optimizer_t *optimizer,
                                              ses_node_t *const *vars, size_t n_vars,
                                              ses_node_t **out_step);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_TRAIN_H */
