/*
 * Gradient ops: what the gradient builders (src/train/gradients.c) emit. Their op types are
 * libsession's own, except CastLike (ONNX opset 15).
 *
 * Gradient graphs are built before shapes are known, so several ops take the shape or dtype of
 * a "like" input, known at compile time. A like input is never passed to a kernel (kernel_inputs
 * leaves it out), with one exception: ScalarLike's kernel receives its like input, so that the
 * kernel is found by like's dtype, but reads nothing from it.
 *
 *   op (inputs; attributes)              what it gives                      kernel
 *   ExpandLike(x, like)                  x broadcast to like's shape        ExpandLike
 *   ReduceSumLike(x, like)               x summed down to like's shape      ReduceSumLike
 *   ScalarLike(like; value)              a scalar of like's dtype           ScalarLike
 *   ReshapeLike(x, like)                 x with like's shape                Reshape
 *   CastLike(input, target_type)         input cast to target_type's dtype  Cast
 *   ReluGrad, LeakyReluGrad(dy, x; alpha)  dy masked by x > 0               the op's own
 *   SigmoidGrad, TanhGrad(dy, y)         dy times the derivative at y       the op's own
 *   SoftmaxGrad, LogSoftmaxGrad(dy, y; axis)                                the op's own
 *   MatMulGrad(dy, A, B; input)          dA or dB of MatMul(A, B)           MatMulGrad
 *   ReduceGrad(dy, x[, axes]; ...)       dy broadcast back to x's shape     ReduceGrad
 *   GatherGrad(dy, indices, like; axis)  dy scatter-added into zeros        GatherGrad
 *   SliceGrad(dy, x, starts, ends[, axes, steps])  dy written into zeros    SliceGrad
 *   ConcatGrad(dy, x0, ...; axis, index) the block of dy from x_index       Slice
 */
#include <string.h>

#include "infer.h"
#include "string_ops.h"

/* Whether @p x broadcasts one way (numpy) to @p to: x has no more dimensions, and each of them,
 * aligned at the last, is 1 or to's. */
static int broadcasts_to(const ses__type_t *x, const ses__type_t *to) {
    if (x->rank > to->rank)
        return 0;
    for (uint32_t d = 0; d < x->rank; d++) {
        int64_t a = x->dims[x->rank - 1 - d], b = to->dims[to->rank - 1 - d];
        if (a != 1 && a != b)
            return 0;
    }
    return 1;
}

/* @p t with @p shape's dims: the output of the ...Like ops. */
static ses__type_t with_dims(const ses__type_t *t, const ses__type_t *shape) {
    ses__type_t r = *shape;
    r.dtype = t->dtype;
    return r;
}

/* ---- shape and dtype of another edge ------------------------------------------------------ */

ses_status_t ses__infer_expand_like(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0], *like = &ctx->inputs[1];
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "x", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "like", SES__DT_ANY);
    if (st != SES_OK)
        return st;
    if (!broadcasts_to(x, like))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "x cannot broadcast to like's shape: x is %s, like is %s",
                            ses__tstr(x).s, ses__tstr(like).s);
    ctx->outputs[0] = with_dims(x, like);
    ctx->kernel_inputs = 0x1;
    return SES_OK;
}

/* The reverse of broadcasting: the dimensions x has beyond like's, and those where like has 1,
 * are summed. The kernel reads which from the input and output shapes. */
ses_status_t ses__infer_reduce_sum_like(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0], *like = &ctx->inputs[1];
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "x", SES__DT_NUMERIC);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "like", SES__DT_ANY);
    if (st != SES_OK)
        return st;
    if (!broadcasts_to(like, x))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "like's shape does not broadcast to x's, so x cannot be summed down "
                            "to it: x is %s, like is %s",
                            ses__tstr(x).s, ses__tstr(like).s);
    ctx->outputs[0] = with_dims(x, like);
    ctx->kernel_inputs = 0x1;
    return SES_OK;
}

ses_status_t ses__infer_scalar_like(ses__infer_ctx_t *ctx) {
    double value;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "like", SES__DT_ANY);
    if (st != SES_OK)
        return st;
    if (!ses__attrs_find(ctx->attrs, "value"))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute value is required");
    st = ses__op_attr_float(ctx, "value", 0.0, &value);
    if (st != SES_OK)
        return st;
    ctx->outputs[0].dtype = ctx->inputs[0].dtype;
    ctx->outputs[0].rank = 0;
    /* The kernel gets like, so that it is found by like's dtype; it reads nothing from it. */
    ctx->kernel_inputs = 0x1;
    return ses__attrs_set_float(&ctx->kernel_attrs, "value", value);
}

ses_status_t ses__infer_reshape_like(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0], *like = &ctx->inputs[1];
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "x", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "like", SES__DT_ANY);
    if (st != SES_OK)
        return st;
    if (ses__type_count(x) != ses__type_count(like))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "element counts differ: x is %s (%lld elements), like is %s (%lld "
                            "elements)",
                            ses__tstr(x).s, (long long)ses__type_count(x), ses__tstr(like).s,
                            (long long)ses__type_count(like));
    ctx->outputs[0] = with_dims(x, like);
    ctx->kernel_op = "Reshape";
    ctx->kernel_inputs = 0x1;
    return SES_OK;
}

/* ONNX's CastLike (opset 15): Cast to target_type's dtype, lowered to the Cast kernel. */
ses_status_t ses__infer_cast_like(ses__infer_ctx_t *ctx) {
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY | SES__DT(SES_STRING));
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "target_type", SES__DT_ANY | SES__DT(SES_STRING));
    if (st == SES_OK)
        st = ses__op_check_string_cast(ctx, ctx->inputs[0].dtype, ctx->inputs[1].dtype);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = ctx->inputs[0];
    ctx->outputs[0].dtype = ctx->inputs[1].dtype;
    ctx->kernel_op = "Cast";
    ctx->kernel_inputs = 0x1;
    /* The kernel's "to" is the output's SES_DRV_DTYPE_* code, which ses_dtype_t's values are. */
    return ses__attrs_set_int(&ctx->kernel_attrs, "to", (int64_t)ctx->inputs[1].dtype);
}

/* ---- activations ------------------------------------------------------------------------- */

/* dy and input 1 (named @p name): float, the same dtype and the same shape. The output is dy's
 * type. */
static ses_status_t same_as_dy(ses__infer_ctx_t *ctx, const char *name) {
    const ses__type_t *dy = &ctx->inputs[0], *other = &ctx->inputs[1];
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "dy", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dy", 1, name);
    if (st == SES_OK && !ses__same_dims(dy, other))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "shapes differ: dy is %s, %s is %s",
                          ses__tstr(dy).s, name, ses__tstr(other).s);
    if (st == SES_OK)
        ctx->outputs[0] = *dy;
    return st;
}

/* ReluGrad and LeakyReluGrad take the forward input x; SigmoidGrad and TanhGrad the forward
 * output y. */
ses_status_t ses__infer_activation_grad(ses__infer_ctx_t *ctx) {
    const int leaky = strcmp(ctx->op, "LeakyReluGrad") == 0;
    const int takes_x = leaky || strcmp(ctx->op, "ReluGrad") == 0;
    double alpha;
    ses_status_t st;

    st = same_as_dy(ctx, takes_x ? "x" : "y");
    if (st != SES_OK || !leaky)
        return st;
    st = ses__op_attr_float(ctx, "alpha", 0.01, &alpha);
    if (st == SES_OK)
        st = ses__attrs_set_float(&ctx->kernel_attrs, "alpha", alpha);
    return st;
}

/* SoftmaxGrad and LogSoftmaxGrad: y is the forward output; the axis is normalized as
 * Softmax's. */
ses_status_t ses__infer_softmax_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *y = &ctx->inputs[1];
    int64_t axis;
    ses_status_t st;

    st = same_as_dy(ctx, "y");
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", -1, &axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, y->rank, y, &axis);
    if (st != SES_OK)
        return st;
    return ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
}

/* ---- MatMul ------------------------------------------------------------------------------ */

/* The gradient of y = MatMul(A, B) with respect to A (input = 0) or B (input = 1), summed over
 * the batch dimensions that operand was broadcast along. */
ses_status_t ses__infer_matmul_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *dy = &ctx->inputs[0], *a = &ctx->inputs[1], *b = &ctx->inputs[2];
    ses__infer_ctx_t product;
    int64_t input;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "dy", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dy", 1, "A");
    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "input", &input);
    if (st == SES_OK && input != 0 && input != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "attribute input must be 0 (the gradient of A) or 1 (of B), got %lld",
                          (long long)input);
    if (st != SES_OK)
        return st;

    /* The forward product's type, by MatMul's own inference on A and B (its messages name A
     * and B, and this node). */
    memset(&product, 0, sizeof product);
    product.node = ctx->node;
    product.op = ctx->op;
    product.n_inputs = 2;
    product.inputs = ctx->inputs + 1;
    product.attrs = ctx->attrs;
    product.n_outputs = 1;
    st = ses__infer_matmul(&product);
    if (st != SES_OK)
        return st;
    if (!ses__same_dims(dy, &product.outputs[0]))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "dy does not match A * B: dy is %s, A is %s, B is %s, A * B is %s",
                            ses__tstr(dy).s, ses__tstr(a).s, ses__tstr(b).s,
                            ses__tstr(&product.outputs[0]).s);
    ctx->outputs[0] = input ? *b : *a;
    return ses__attrs_set_int(&ctx->kernel_attrs, "input", input);
}

/* ---- reductions ---------------------------------------------------------------------------- */

/* The axes of a ReduceGrad: input 2 (ReduceSum's opset-13 form) or the attribute (ReduceMean's),
 * not both. */
static ses_status_t reduce_grad_axes(ses__infer_ctx_t *ctx, int64_t *axes, size_t cap,
                                     size_t *out_n) {
    const int64_t *given;
    int present;
    ses_status_t st = ses__op_attr_ints(ctx, "axes", &given, out_n, &present);

    if (st != SES_OK)
        return st;
    if (ses__op_has_input(ctx, 2)) {
        if (present)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "axes are given both as input 2 and as an attribute; give one");
        return ses__op_read_ints(ctx, 2, "axes", SES__DT(SES_I64), axes, cap, out_n);
    }
    if (*out_n > cap)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute axes %s has %zu entries, more than rank %u",
                            ses__ints_str(given, *out_n).s, *out_n, ctx->inputs[1].rank);
    for (size_t k = 0; k < *out_n; k++)
        axes[k] = given[k];
    return SES_OK;
}

/* The gradient of ReduceSum (mean = 0) or ReduceMean (mean = 1) of x: dy, which has the
 * reduction's shape, broadcast back over the reduced axes, times 1/count for the mean. */
ses_status_t ses__infer_reduce_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *dy = &ctx->inputs[0], *x = &ctx->inputs[1];
    /* Room for every axis twice over, as ReduceSum's: repeats are merged. */
    int64_t given[SES_MAX_RANK * 2], axes[SES_MAX_RANK];
    int64_t keepdims, noop, mean;
    size_t n_given = 0, n = 0;
    ses__type_t reduced;
    double count = 1.0;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "dy", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dy", 1, "x");
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "keepdims", 1, &keepdims);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "noop_with_empty_axes", 0, &noop);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "mean", 0, &mean);
    if (st == SES_OK)
        st = reduce_grad_axes(ctx, given, sizeof given / sizeof given[0], &n_given);
    if (st == SES_OK)
        st = ses__reduce_axes(ctx, x, given, n_given, noop, axes, &n);
    if (st != SES_OK)
        return st;
    /* No axes left (a no-op reduction, or a scalar's) means the reduction was Identity. */
    ses__reduced_shape(x, axes, n, keepdims, &reduced);
    if (!ses__same_dims(dy, &reduced))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "dy does not match x reduced over axes %s with keepdims=%lld: dy is "
                            "%s, x is %s, the reduction is %s",
                            ses__ints_str(axes, n).s, (long long)keepdims, ses__tstr(dy).s,
                            ses__tstr(x).s, ses__tstr(&reduced).s);
    for (size_t k = 0; k < n; k++)
        count *= (double)x->dims[axes[k]];
    ctx->outputs[0] = *x;
    ctx->kernel_inputs = 0x1;
    st = ses__attrs_set_ints(&ctx->kernel_attrs, "axes", axes, n);
    /* An empty reduction has an empty x, so its scale multiplies nothing. */
    if (st == SES_OK)
        st = ses__attrs_set_float(&ctx->kernel_attrs, "scale",
                                  mean && count > 0.0 ? 1.0 / count : 1.0);
    return st;
}

/* ---- data movement ------------------------------------------------------------------------- */

/* The gradient of Gather(like, indices, axis): zeros of like's type with dy added at the
 * gathered positions. */
ses_status_t ses__infer_gather_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *dy = &ctx->inputs[0], *indices = &ctx->inputs[1], *like = &ctx->inputs[2];
    ses__type_t gathered;
    int64_t axis;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "dy", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "indices", SES__DT_INDEX);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 2, "like", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dy", 2, "like");
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", 0, &axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, like->rank, like, &axis);
    if (st != SES_OK)
        return st;

    /* What Gather gave: like[:axis] + indices.shape + like[axis+1:]. */
    int fits = like->rank - 1 + indices->rank <= SES_MAX_RANK;
    memset(&gathered, 0, sizeof gathered);
    gathered.dtype = like->dtype;
    for (int64_t d = 0; fits && d < axis; d++)
        gathered.dims[gathered.rank++] = like->dims[d];
    for (uint32_t d = 0; fits && d < indices->rank; d++)
        gathered.dims[gathered.rank++] = indices->dims[d];
    for (uint32_t d = (uint32_t)axis + 1; fits && d < like->rank; d++)
        gathered.dims[gathered.rank++] = like->dims[d];
    if (!fits || !ses__same_dims(dy, &gathered))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "dy does not match Gather(like, indices, axis=%lld): dy is %s, like "
                            "is %s, indices is %s, the gather is %s",
                            (long long)axis, ses__tstr(dy).s, ses__tstr(like).s,
                            ses__tstr(indices).s, fits ? ses__tstr(&gathered).s : "too deep");
    ctx->outputs[0] = *like;
    ctx->kernel_inputs = 0x3;
    return ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
}

/* The gradient of Slice(x, starts, ends, axes, steps): zeros of x's type with dy written where
 * the slice read. Normalized exactly as Slice, so the kernel gets Slice's attributes. */
ses_status_t ses__infer_slice_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *dy = &ctx->inputs[0], *x = &ctx->inputs[1];
    int64_t starts[SES_MAX_RANK], steps[SES_MAX_RANK];
    ses__type_t sliced;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "dy", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dy", 1, "x");
    if (st == SES_OK)
        st = ses__slice_normalize(ctx, 1, "x", starts, steps, &sliced);
    if (st != SES_OK)
        return st;
    if (!ses__same_dims(dy, &sliced))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "dy does not match the slice of x: dy is %s, x is %s, the slice is %s",
                            ses__tstr(dy).s, ses__tstr(x).s, ses__tstr(&sliced).s);
    ctx->outputs[0] = *x;
    ctx->kernel_inputs = 0x1;
    st = ses__attrs_set_ints(&ctx->kernel_attrs, "starts", starts, x->rank);
    if (st == SES_OK)
        st = ses__attrs_set_ints(&ctx->kernel_attrs, "steps", steps, x->rank);
    return st;
}

/* The gradient of Concat(x0, ..., xn-1; axis) with respect to x_index: the block of dy that
 * came from it, which the Slice kernel cuts out. */
ses_status_t ses__infer_concat_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *dy = &ctx->inputs[0];
    const size_t n_xs = ctx->n_inputs - 1;
    int64_t axis, index, offset = 0, total = 0;
    int64_t starts[SES_MAX_RANK], steps[SES_MAX_RANK];
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "dy", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "axis", &axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, dy->rank, dy, &axis);
    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "index", &index);
    if (st == SES_OK && (index < 0 || (uint64_t)index >= n_xs))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "attribute index is %lld, but there are %zu concatenated inputs (valid: "
                          "0 to %zu)",
                          (long long)index, n_xs, n_xs - 1);
    if (st != SES_OK)
        return st;
    /* Each x has dy's dtype and rank and its dims but along the axis, where they add up. */
    for (size_t i = 1; i < ctx->n_inputs; i++) {
        const ses__type_t *x = &ctx->inputs[i];
        int ok = ses__op_has_input(ctx, i) && x->dtype == dy->dtype && x->rank == dy->rank;
        for (uint32_t d = 0; ok && d < x->rank; d++)
            if ((int64_t)d != axis && x->dims[d] != dy->dims[d])
                ok = 0;
        if (!ok)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "input %zu does not fit dy concatenated along axis %lld: dy is "
                                "%s, input %zu is %s",
                                i, (long long)axis, ses__tstr(dy).s, i, ses__tstr(x).s);
        if ((int64_t)i - 1 < index)
            offset += x->dims[axis];
        if (__builtin_add_overflow(total, x->dims[axis], &total))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "the concatenated axis overflows");
    }
    if (total != dy->dims[axis])
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "the inputs' dims along axis %lld add up to %lld, but dy is %s",
                            (long long)axis, (long long)total, ses__tstr(dy).s);
    ctx->outputs[0] = ctx->inputs[1 + index];
    for (uint32_t d = 0; d < dy->rank; d++) {
        starts[d] = 0;
        steps[d] = 1;
    }
    /* Slice's rule: an empty block starts at 0. */
    starts[axis] = ctx->outputs[0].dims[axis] ? offset : 0;
    ctx->kernel_op = "Slice";
    ctx->kernel_inputs = 0x1;
    st = ses__attrs_set_ints(&ctx->kernel_attrs, "starts", starts, dy->rank);
    if (st == SES_OK)
        st = ses__attrs_set_ints(&ctx->kernel_attrs, "steps", steps, dy->rank);
    return st;
}
