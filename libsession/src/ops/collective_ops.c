/*
 * Collectives, run by the runtime itself (exec/host_ops.c) through the session's communicator
 * (ses_session_set_communicator; libsession-mpi provides one on MPI):
 *
 *   AllReduce(x0, ..., xk) -> (y0, ..., yk)   each yi is xi summed over every rank, divided by
 *                                              the number of ranks when "reduction" is "mean"
 *                                              (the default) rather than "sum". The inputs are
 *                                              fused into one buffer: one collective per node.
 *
 *   RankWeight(like) -> y                      like's shape and dtype, every element 1/N for a
 *                                              job of N ranks: the seed of data-parallel
 *                                              training's backward pass, so that summing the
 *                                              gradients gives their mean with no pass over them
 *
 * Without a communicator a session is a job of one rank, so AllReduce copies its inputs and
 * RankWeight is 1. The gradients of data-parallel training go through them
 * (ses_minimize_distributed).
 */
#include <string.h>

#include "infer.h"

ses_status_t ses__infer_allreduce(ses__infer_ctx_t *ctx) {
    const char *text = "mean";
    int rc;

    if (ctx->n_outputs != ctx->n_inputs)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "wants one output per input; it has %zu inputs and %zu outputs",
                            ctx->n_inputs, ctx->n_outputs);
    rc = ses__attrs_get_string(ctx->attrs, "reduction", &text);
    if (rc < 0 || (strcmp(text, "mean") != 0 && strcmp(text, "sum") != 0))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute reduction must be the string \"mean\" or \"sum\"");
    for (size_t i = 0; i < ctx->n_inputs; i++) {
        ses_status_t st = ses__op_check_dtype(ctx, i, "x", SES__DT(SES_F32) | SES__DT(SES_F64));
        if (st != SES_OK)
            return st;
        ctx->outputs[i] = ctx->inputs[i];
    }
    return SES_OK;
}

ses_status_t ses__infer_rank_weight(ses__infer_ctx_t *ctx) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, "like", SES__DT(SES_F32) | SES__DT(SES_F64));

    if (st == SES_OK)
        ctx->outputs[0] = ctx->inputs[0];
    return st;
}
