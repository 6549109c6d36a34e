/* Matrix products: MatMul (numpy matmul) and Gemm (alpha * A' * B' + beta * C). */
#include "infer.h"

/*
 * numpy matmul: a 1-D A is a row [1,K] and a 1-D B a column [K,1], and the added dimension is
 * dropped from the result; dimensions before the last two broadcast.
 */
ses_status_t ses__infer_matmul(ses__infer_ctx_t *ctx) {
    const ses__type_t *a = &ctx->inputs[0], *b = &ctx->inputs[1];
    ses__type_t batch_a = {0}, batch_b = {0}, *out = &ctx->outputs[0];
    const ses__type_t *batches[2] = {&batch_a, &batch_b};
    ses_status_t st;
    int64_t k_a, k_b;

    st = ses__op_check_dtype(ctx, 0, "A", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "A", 1, "B");
    if (st != SES_OK)
        return st;
    if (a->rank == 0 || b->rank == 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "inputs must have at least 1 dimension: A is %s, B is %s",
                            ses__tstr(a).s, ses__tstr(b).s);
    k_a = a->dims[a->rank - 1];
    k_b = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    if (k_a != k_b)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "inner dimensions differ: A is %s, B is %s",
                            ses__tstr(a).s, ses__tstr(b).s);

    /* The batch dimensions are all but the matrix ones. */
    batch_a.rank = a->rank > 2 ? a->rank - 2 : 0;
    batch_b.rank = b->rank > 2 ? b->rank - 2 : 0;
    for (uint32_t d = 0; d < batch_a.rank; d++)
        batch_a.dims[d] = a->dims[d];
    for (uint32_t d = 0; d < batch_b.rank; d++)
        batch_b.dims[d] = b->dims[d];
    if (!ses__broadcast_shapes(batches, 2, out))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "batch dimensions cannot broadcast: A is %s, B is %s", ses__tstr(a).s,
                            ses__tstr(b).s);

    out->dtype = a->dtype;
    if (a->rank >= 2)
        out->dims[out->rank++] = a->dims[a->rank - 2];
    if (b->rank >= 2)
        out->dims[out->rank++] = b->dims[b->rank - 1];
    return SES_OK;
}

/* The matrix operands: rank 2, one float dtype. */
static ses_status_t gemm_operands(ses__infer_ctx_t *ctx) {
    const ses__type_t *a = &ctx->inputs[0], *b = &ctx->inputs[1];
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "A", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "A", 1, "B");
    if (st == SES_OK && (a->rank != 2 || b->rank != 2))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "A and B must be 2-D: A is %s, B is %s",
                          ses__tstr(a).s, ses__tstr(b).s);
    return st;
}

/* C must broadcast one way to the product's [M,N]: each of its dimensions 1 or equal. */
static ses_status_t gemm_bias(ses__infer_ctx_t *ctx) {
    const ses__type_t *c = &ctx->inputs[2], *y = &ctx->outputs[0];
    ses_status_t st = ses__op_check_same_dtype(ctx, 0, "A", 2, "C");
    int fits = c->rank <= 2;

    for (uint32_t d = 0; fits && d < c->rank; d++) {
        int64_t dim = c->dims[c->rank - 1 - d];
        fits = dim == 1 || dim == y->dims[1 - d];
    }
    if (st == SES_OK && !fits)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "C cannot broadcast to the product: C is %s, A * B is %s", ses__tstr(c).s,
                          ses__tstr(y).s);
    return st;
}

ses_status_t ses__infer_gemm(ses__infer_ctx_t *ctx) {
    const ses__type_t *a = &ctx->inputs[0], *b = &ctx->inputs[1];
    ses__attrs_t *ka = &ctx->kernel_attrs;
    int64_t trans_a, trans_b, k_a, k_b;
    double alpha, beta;
    ses_status_t st;

    st = gemm_operands(ctx);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "transA", 0, &trans_a);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "transB", 0, &trans_b);
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "alpha", 1.0, &alpha);
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "beta", 1.0, &beta);
    if (st != SES_OK)
        return st;

    k_a = a->dims[trans_a ? 0 : 1];
    k_b = b->dims[trans_b ? 1 : 0];
    if (k_a != k_b)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "inner dimensions differ: A is %s (transA=%lld), B is %s (transB=%lld)",
                            ses__tstr(a).s, (long long)trans_a, ses__tstr(b).s, (long long)trans_b);
    ctx->outputs[0].dtype = a->dtype;
    ctx->outputs[0].rank = 2;
    ctx->outputs[0].dims[0] = a->dims[trans_a ? 1 : 0];
    ctx->outputs[0].dims[1] = b->dims[trans_b ? 0 : 1];

    /* An absent C (no third input, or an empty optional one) is not passed to the kernel. */
    ctx->kernel_inputs = 0x3;
    if (ses__op_has_input(ctx, 2)) {
        st = gemm_bias(ctx);
        if (st != SES_OK)
            return st;
        ctx->kernel_inputs = 0x7;
    }
    st = ses__attrs_set_float(ka, "alpha", alpha);
    if (st == SES_OK)
        st = ses__attrs_set_float(ka, "beta", beta);
    if (st == SES_OK)
        st = ses__attrs_set_int(ka, "transA", trans_a);
    if (st == SES_OK)
        st = ses__attrs_set_int(ka, "transB", trans_b);
    return st;
}

/*
 * FusedGemm(A, B[, C]): activation(Gemm(A, B, C)), ONNX Runtime's com.microsoft contrib op; the
 * compiler makes it from Gemm -> activation. Gemm's inference and normalized attributes, plus the
 * activation's (ses__op_activation).
 */
ses_status_t ses__infer_fused_gemm(ses__infer_ctx_t *ctx) {
    ses_status_t st = ses__infer_gemm(ctx);
    if (st == SES_OK)
        st = ses__op_activation(ctx);
    return st;
}
