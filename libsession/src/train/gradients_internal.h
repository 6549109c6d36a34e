/*
 * What gradient builders see: the context to emit nodes with, and the table of builders
 * (grad_builders.c), one per differentiable op.
 */
#ifndef SES_GRADIENTS_INTERNAL_H
#define SES_GRADIENTS_INTERNAL_H

#include <session/graph.h>
#include <session/status.h>

typedef struct ses__grad_ctx {
    ses_graph_t *g;
    const char *prefix;  /* "gradients" */
    const char *current; /* the forward node being differentiated, for node names */
} ses__grad_ctx_t;

/*
 * Builds the gradients of node @p n's inputs: @p dy[o] is the gradient flowing into output o
 * ({NULL, 0} when none does); the builder stores in @p dx[i] the gradient of input i, or leaves
 * {NULL, 0} for inputs that take none (labels, indices, shape-like inputs).
 */
typedef ses_status_t (*ses__grad_fn)(ses__grad_ctx_t *c, const ses_node_t *n,
                                     const ses_edge_t *dy, ses_edge_t *dx);

typedef struct ses__grad_builder {
    const char *op;
    ses__grad_fn fn; /* NULL: the op is not differentiable, and no gradient flows through it */
} ses__grad_builder_t;

/** The builder of @p op, or NULL when the op has no gradient. */
const ses__grad_builder_t *ses__grad_builder_find(const char *op);

/* Emitting nodes, named "<prefix>/<current node>/<op>[_k]". */
ses_status_t ses__grad_op(ses__grad_ctx_t *c, const char *op, const ses_edge_t *inputs,
                          size_t n_inputs, const ses_attr_t *attrs, size_t n_attrs,
                          ses_edge_t *out);
ses_status_t ses__grad_unary(ses__grad_ctx_t *c, const char *op, ses_edge_t a, ses_edge_t *out);
ses_status_t ses__grad_binary(ses__grad_ctx_t *c, const char *op, ses_edge_t a, ses_edge_t b,
                              ses_edge_t *out);
/** A rank-0 tensor of @p like's dtype holding @p value. */
ses_status_t ses__grad_scalar(ses__grad_ctx_t *c, ses_edge_t like, double value, ses_edge_t *out);

#endif
