/*
 * Ops that move data without computing on it: Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
 * Concat, Expand, Split; and the ones that read a tensor's shape: Shape, Size. The first four
 * only relabel the shape, so their kernels get the data alone and no attributes: the output type
 * says everything.
 *
 *   op (inputs; attributes)                      kernel (inputs passed; normalized attributes)
 *   Expand(input, shape)                         ExpandLike (input)
 *   Split(input[, split]; axis, num_outputs)     Split (input; axis)
 *   Shape(data; start, end)                      Shape (data; start, end)
 *   Size(data)                                   Size (data)
 *
 * Expand's shape and Split's split must be constants or fed, as Reshape's shape.
 */
#include <string.h>

#include "infer.h"

/* The product of @p dims[from, to) into @p out. Returns 0 when it does not fit in int64. */
static int dims_product(const int64_t *dims, uint32_t from, uint32_t to, int64_t *out) {
    int64_t p = 1;

    for (uint32_t d = from; d < to; d++)
        if (dims[d] == 0) {
            *out = 0;
            return 1;
        }
    for (uint32_t d = from; d < to; d++)
        if (__builtin_mul_overflow(p, dims[d], &p))
            return 0;
    *out = p;
    return 1;
}

/* Resolves 0 (copy the data's dimension, unless allowzero) and -1 (at most one: whatever makes
 * the counts agree) in @p shape[0..n) into @p out. */
static ses_status_t reshape_dims(ses__infer_ctx_t *ctx, const int64_t *shape, size_t n,
                                 int64_t allowzero, ses__type_t *out) {
    const ses__type_t *data = &ctx->inputs[0];
    int64_t count = ses__type_count(data), known;
    size_t infer_at = n; /* n: no -1 */
    int has_zero = 0;

    out->dtype = data->dtype;
    out->rank = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        int64_t v = shape[i];
        if (v < -1 || (v == -1 && infer_at < n))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "shape %s: entries must be >= 0, with at most one -1",
                                ses__ints_str(shape, n).s);
        if (v == 0 && !allowzero && i >= data->rank)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "shape %s copies dimension %zu with 0, but data is %s",
                                ses__ints_str(shape, n).s, i, ses__tstr(data).s);
        if (v == -1)
            infer_at = i;
        has_zero |= v == 0;
        out->dims[i] = v == -1 ? 1 : v == 0 && !allowzero ? data->dims[i] : v;
    }
    /* With allowzero a 0 is literal, and a -1 beside it could be anything. */
    if (allowzero && has_zero && infer_at < n)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "shape %s has both 0 and -1, which allowzero=1 makes ambiguous",
                            ses__ints_str(shape, n).s);
    if (!dims_product(out->dims, 0, out->rank, &known))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "shape %s has too many elements",
                            ses__ints_str(shape, n).s);
    if (infer_at < n) {
        if (known == 0 || count % known != 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "cannot infer the -1 in shape %s: data is %s (%lld elements), "
                                "the other dimensions hold %lld",
                                ses__ints_str(shape, n).s, ses__tstr(data).s, (long long)count,
                                (long long)known);
        out->dims[infer_at] = count / known;
    } else if (known != count) {
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "element counts differ: data is %s (%lld elements), shape %s gives %s "
                            "(%lld elements)",
                            ses__tstr(data).s, (long long)count, ses__ints_str(shape, n).s,
                            ses__tstr(out).s, (long long)known);
    }
    return SES_OK;
}

ses_status_t ses__infer_reshape(ses__infer_ctx_t *ctx) {
    const ses__type_t *shape_type = &ctx->inputs[1];
    int64_t shape[SES_MAX_RANK], allowzero;
    size_t n = 0;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "shape", SES__DT(SES_I64));
    if (st == SES_OK && shape_type->rank != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input 1 (shape) must be 1-D, got %s",
                          ses__tstr(shape_type).s);
    if (st == SES_OK)
        st = ses__op_check_out_rank(ctx, (size_t)shape_type->dims[0]);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "allowzero", 0, &allowzero);
    if (st == SES_OK)
        st = ses__op_read_ints(ctx, 1, "shape", SES__DT(SES_I64), shape, SES_MAX_RANK, &n);
    if (st == SES_OK)
        st = reshape_dims(ctx, shape, n, allowzero, &ctx->outputs[0]);
    if (st == SES_OK)
        ctx->kernel_inputs = 0x1;
    return st;
}

ses_status_t ses__infer_flatten(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    ses__type_t *out = &ctx->outputs[0];
    int64_t axis, r = x->rank;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", 1, &axis);
    if (st != SES_OK)
        return st;
    /* Unlike most axes, Flatten's may equal the rank: everything goes into the first dim. */
    if (axis < -r || axis > r)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "axis %lld is out of range for rank %lld (valid: %lld to %lld): input "
                            "is %s",
                            (long long)axis, (long long)r, (long long)-r, (long long)r,
                            ses__tstr(x).s);
    if (axis < 0)
        axis += r;
    out->dtype = x->dtype;
    out->rank = 2;
    if (!dims_product(x->dims, 0, (uint32_t)axis, &out->dims[0]) ||
        !dims_product(x->dims, (uint32_t)axis, x->rank, &out->dims[1]))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "the flattened dims overflow: input is %s",
                            ses__tstr(x).s);
    return SES_OK;
}

ses_status_t ses__infer_squeeze(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    ses__type_t *out = &ctx->outputs[0];
    int64_t given[SES_MAX_RANK * 2], axes[SES_MAX_RANK];
    size_t n_given = 0, n = 0, next = 0;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);
    if (st == SES_OK && ses__op_has_input(ctx, 1))
        st = ses__op_read_ints(ctx, 1, "axes", SES__DT(SES_I64), given,
                               sizeof given / sizeof given[0], &n_given);
    if (st == SES_OK)
        st = ses__op_axes(ctx, "axes value", given, n_given, x->rank, x, SES__AXES_MERGE_DUPLICATES,
                          axes, &n);
    if (st != SES_OK)
        return st;
    for (size_t k = 0; k < n; k++)
        if (x->dims[axes[k]] != 1)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "cannot squeeze axis %lld, whose size is %lld, not 1: data is %s",
                                (long long)axes[k], (long long)x->dims[axes[k]], ses__tstr(x).s);

    /* No axes (absent or empty) removes every dimension of size 1. */
    out->dtype = x->dtype;
    out->rank = 0;
    for (uint32_t d = 0; d < x->rank; d++) {
        int squeezed = n ? next < n && axes[next] == (int64_t)d : x->dims[d] == 1;
        if (n && squeezed)
            next++;
        if (!squeezed)
            out->dims[out->rank++] = x->dims[d];
    }
    ctx->kernel_inputs = 0x1;
    return SES_OK;
}

ses_status_t ses__infer_unsqueeze(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    ses__type_t *out = &ctx->outputs[0];
    int64_t given[SES_MAX_RANK * 2], axes[SES_MAX_RANK * 2];
    size_t n_given = 0, n = 0, next = 0, in = 0;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_read_ints(ctx, 1, "axes", SES__DT(SES_I64), given,
                               sizeof given / sizeof given[0], &n_given);
    if (st == SES_OK)
        st = ses__op_check_out_rank(ctx, x->rank + n_given);
    /* The axes index the output, so they are checked against its rank. */
    if (st == SES_OK)
        st = ses__op_axes(ctx, "axes value", given, n_given, x->rank + (uint32_t)n_given, x,
                          SES__AXES_REJECT_DUPLICATES, axes, &n);
    if (st != SES_OK)
        return st;
    out->dtype = x->dtype;
    out->rank = x->rank + (uint32_t)n;
    for (uint32_t d = 0; d < out->rank; d++) {
        if (next < n && axes[next] == (int64_t)d) {
            out->dims[d] = 1;
            next++;
        } else {
            out->dims[d] = x->dims[in++];
        }
    }
    ctx->kernel_inputs = 0x1;
    return SES_OK;
}

/* Reads perm (default: the dimensions reversed) and checks that it is a permutation. */
static ses_status_t transpose_perm(ses__infer_ctx_t *ctx, int64_t *perm) {
    const ses__type_t *x = &ctx->inputs[0];
    const int64_t *given;
    size_t n;
    int present, seen[SES_MAX_RANK] = {0};
    ses_status_t st = ses__op_attr_ints(ctx, "perm", &given, &n, &present);

    if (st != SES_OK)
        return st;
    if (!present) {
        for (uint32_t d = 0; d < x->rank; d++)
            perm[d] = x->rank - 1 - d;
        return SES_OK;
    }
    if (n != x->rank)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute perm %s has %zu entries for rank %u: data is %s",
                            ses__ints_str(given, n).s, n, x->rank, ses__tstr(x).s);
    for (size_t d = 0; d < n; d++) {
        if (given[d] < 0 || given[d] >= (int64_t)n || seen[given[d]]++)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute perm %s is not a permutation of 0..%zu: data is %s",
                                ses__ints_str(given, n).s, n - 1, ses__tstr(x).s);
        perm[d] = given[d];
    }
    return SES_OK;
}

ses_status_t ses__infer_transpose(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    int64_t perm[SES_MAX_RANK];
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);
    if (st == SES_OK)
        st = transpose_perm(ctx, perm);
    if (st != SES_OK)
        return st;
    ctx->outputs[0].dtype = x->dtype;
    ctx->outputs[0].rank = x->rank;
    for (uint32_t d = 0; d < x->rank; d++)
        ctx->outputs[0].dims[d] = x->dims[perm[d]];
    return ses__attrs_set_ints(&ctx->kernel_attrs, "perm", perm, x->rank);
}

/* Input @p i against input 0: present, same dtype and rank, same dims but on @p axis. */
static ses_status_t concat_check_input(ses__infer_ctx_t *ctx, size_t i, int64_t axis) {
    const ses__type_t *first = &ctx->inputs[0], *t = &ctx->inputs[i];
    const char *what = NULL;

    if (!ses__op_has_input(ctx, i))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu is missing", i);
    if (t->dtype != first->dtype)
        what = "dtypes differ";
    else if (t->rank != first->rank)
        what = "ranks differ";
    for (uint32_t d = 0; !what && d < t->rank; d++)
        if ((int64_t)d != axis && t->dims[d] != first->dims[d])
            what = "dimensions other than the axis differ";
    if (!what)
        return SES_OK;
    return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "%s: input 0 is %s, input %zu is %s", what,
                        ses__tstr(first).s, i, ses__tstr(t).s);
}

ses_status_t ses__infer_concat(ses__infer_ctx_t *ctx) {
    const ses__type_t *first = &ctx->inputs[0];
    ses__type_t *out = &ctx->outputs[0];
    int64_t axis;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "inputs", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "axis", &axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, first->rank, first, &axis);
    if (st != SES_OK)
        return st;
    *out = *first;
    for (size_t i = 1; i < ctx->n_inputs; i++) {
        st = concat_check_input(ctx, i, axis);
        if (st != SES_OK)
            return st;
        if (__builtin_add_overflow(out->dims[axis], ctx->inputs[i].dims[axis], &out->dims[axis]))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "the concatenated axis overflows");
    }
    return ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
}

/* Expand: input and shape broadcast both ways (numpy), lowered onto ExpandLike. */
ses_status_t ses__infer_expand(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0], *shape_t = &ctx->inputs[1];
    ses__type_t *out = &ctx->outputs[0];
    int64_t shape[SES_MAX_RANK];
    size_t n = 0;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "shape", SES__DT(SES_I64));
    if (st == SES_OK && shape_t->rank != 1)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input 1 (shape) must be 1-D, got %s",
                          ses__tstr(shape_t).s);
    if (st == SES_OK)
        st = ses__op_check_out_rank(ctx, (size_t)shape_t->dims[0]);
    if (st == SES_OK)
        st = ses__op_read_ints(ctx, 1, "shape", SES__DT(SES_I64), shape, SES_MAX_RANK, &n);
    if (st != SES_OK)
        return st;
    out->dtype = x->dtype;
    out->rank = x->rank > n ? x->rank : (uint32_t)n;
    for (uint32_t d = 0; d < out->rank; d++) {
        const int64_t a = d < x->rank ? x->dims[x->rank - 1 - d] : 1;
        const int64_t b = d < n ? shape[n - 1 - d] : 1;
        if (b < 0 || (a != b && a != 1 && b != 1))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "input cannot broadcast with shape %s: input is %s",
                                ses__ints_str(shape, n).s, ses__tstr(x).s);
        out->dims[out->rank - 1 - d] = a == 1 ? b : a;
    }
    ctx->kernel_op = "ExpandLike";
    ctx->kernel_inputs = 0x1;
    return SES_OK;
}

ses_status_t ses__infer_split(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    const size_t n = ctx->n_outputs;
    int64_t axis, sizes[SES__MAX_OUTPUTS + 1], num = 0, total = 0;
    size_t n_sizes = 0;
    const int64_t *attr_split;
    size_t n_attr;
    int has_attr;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);

    if (st == SES_OK && x->rank == 0)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input cannot be a scalar");
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", 0, &axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, x->rank, x, &axis);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "num_outputs", 0, &num);
    if (st == SES_OK)
        st = ses__op_attr_ints(ctx, "split", &attr_split, &n_attr, &has_attr);
    if (st != SES_OK)
        return st;
    const int64_t dim = x->dims[axis];
    if (ses__op_has_input(ctx, 1) && ses__type_count(&ctx->inputs[1]) != 0) {
        st = ses__op_read_ints(ctx, 1, "split", SES__DT(SES_I64), sizes, SES__MAX_OUTPUTS + 1,
                               &n_sizes);
        if (st != SES_OK)
            return st;
        has_attr = 1;
    } else if (has_attr) {
        if (n_attr > SES__MAX_OUTPUTS + 1)
            n_attr = SES__MAX_OUTPUTS + 1;
        memcpy(sizes, attr_split, n_attr * sizeof *sizes);
        n_sizes = n_attr;
    }
    if (has_attr) {
        if (n_sizes != n)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "split %s has %zu entries but the node has %zu outputs",
                                ses__ints_str(sizes, n_sizes).s, n_sizes, n);
        for (size_t k = 0; k < n; k++) {
            if (sizes[k] < 0)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "split %s has a negative entry",
                                    ses__ints_str(sizes, n).s);
            total += sizes[k];
        }
        if (total != dim)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "split %s adds up to %lld, but axis %lld of the input has %lld: "
                                "input is %s",
                                ses__ints_str(sizes, n).s, (long long)total, (long long)axis,
                                (long long)dim, ses__tstr(x).s);
    } else if (num) {
        if (num != (int64_t)n)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute num_outputs is %lld but the node has %zu outputs",
                                (long long)num, n);
        /* Opset 18: chunks of ceil(dim / n), the last one smaller. */
        const int64_t chunk = (dim + num - 1) / num;
        if (dim - chunk * (num - 1) < 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "axis %lld of %s cannot be cut into %lld chunks of %lld",
                                (long long)axis, ses__tstr(x).s, (long long)num, (long long)chunk);
        for (size_t k = 0; k < n; k++)
            sizes[k] = k + 1 < n ? chunk : dim - chunk * (num - 1);
    } else {
        if (dim % (int64_t)n != 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "axis %lld of %s does not split into %zu equal parts; give split",
                                (long long)axis, ses__tstr(x).s, n);
        for (size_t k = 0; k < n; k++)
            sizes[k] = dim / (int64_t)n;
    }
    for (size_t k = 0; k < n; k++) {
        ctx->outputs[k] = *x;
        ctx->outputs[k].dims[axis] = sizes[k];
    }
    ctx->kernel_inputs = 0x1;
    return ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
}

ses_status_t ses__infer_shape(ses__infer_ctx_t *ctx) {
    const int64_t rank = ctx->inputs[0].rank;
    int64_t start, end;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);

    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "start", 0, &start);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "end", rank, &end);
    if (st != SES_OK)
        return st;
    /* Opset 15: negative values count from the end; both are clamped into [0, rank]. */
    start = start < 0 ? start + rank : start;
    end = end < 0 ? end + rank : end;
    start = start < 0 ? 0 : start > rank ? rank : start;
    end = end < 0 ? 0 : end > rank ? rank : end;
    if (end < start)
        end = start;
    ctx->outputs[0].dtype = SES_I64;
    ctx->outputs[0].rank = 1;
    ctx->outputs[0].dims[0] = end - start;
    st = ses__attrs_set_int(&ctx->kernel_attrs, "start", start);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "end", end);
    return st;
}

/* Size: the element count of any tensor, an i64 scalar. */
ses_status_t ses__infer_size(ses__infer_ctx_t *ctx) {
    ses_status_t st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);

    if (st != SES_OK)
        return st;
    ctx->outputs[0].dtype = SES_I64;
    ctx->outputs[0].rank = 0;
    return SES_OK;
}
