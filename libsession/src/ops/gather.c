/* Gather, GatherElements, ScatterElements, GatherND, ScatterND and OneHot: pick or place elements
 * by index. The indices are data for the kernel, which checks their range; inference needs only
 * their shape (OneHot's depth, a shape-like input, excepted). */
#include <string.h>

#include "infer.h"

ses_status_t ses__infer_gather(ses__infer_ctx_t *ctx) {
    const ses__type_t *data = &ctx->inputs[0], *indices = &ctx->inputs[1];
    ses__type_t *out = &ctx->outputs[0];
    int64_t axis;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "indices", SES__DT_INDEX);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", 0, &axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, data->rank, data, &axis);
    if (st == SES_OK)
        st = ses__op_check_out_rank(ctx, data->rank - 1 + indices->rank);
    if (st != SES_OK)
        return st;

    /* data[:axis] + indices.shape + data[axis+1:] */
    out->dtype = data->dtype;
    out->rank = 0;
    for (int64_t d = 0; d < axis; d++)
        out->dims[out->rank++] = data->dims[d];
    for (uint32_t d = 0; d < indices->rank; d++)
        out->dims[out->rank++] = indices->dims[d];
    for (uint32_t d = (uint32_t)axis + 1; d < data->rank; d++)
        out->dims[out->rank++] = data->dims[d];
    return ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
}

/*
 * GatherElements and ScatterElements: indices of data's rank, each naming an element along the
 * axis and standing for itself along the others, so every other dimension of the indices is at
 * most data's. Checks that, with @p updates (ScatterElements', NULL for GatherElements) shaped
 * as the indices, and stores the normalized axis in @p out_axis and the kernels' attribute.
 */
static ses_status_t infer_elements(ses__infer_ctx_t *ctx, const ses__type_t *updates,
                                   int64_t *out_axis) {
    const ses__type_t *data = &ctx->inputs[0], *indices = &ctx->inputs[1];
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "indices", SES__DT_INDEX);
    if (st == SES_OK && updates)
        st = ses__op_check_same_dtype(ctx, 0, "data", 2, "updates");
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", 0, out_axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", *out_axis, data->rank, data, out_axis);
    if (st != SES_OK)
        return st;
    int ok = indices->rank == data->rank;
    for (uint32_t d = 0; ok && d < data->rank; d++)
        ok = (int64_t)d == *out_axis || indices->dims[d] <= data->dims[d];
    if (!ok)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "indices %s must have the rank of data %s and no dimension larger "
                            "than data's but along axis %lld",
                            ses__tstr(indices).s, ses__tstr(data).s, (long long)*out_axis);
    if (updates) {
        ok = updates->rank == indices->rank;
        for (uint32_t d = 0; ok && d < indices->rank; d++)
            ok = updates->dims[d] == indices->dims[d];
        if (!ok)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "updates %s and indices %s must have the same shape",
                                ses__tstr(updates).s, ses__tstr(indices).s);
    }
    return ses__attrs_set_int(&ctx->kernel_attrs, "axis", *out_axis);
}

ses_status_t ses__infer_gather_elements(ses__infer_ctx_t *ctx) {
    int64_t axis;
    ses_status_t st = infer_elements(ctx, NULL, &axis);

    if (st != SES_OK)
        return st;
    ctx->outputs[0] = ctx->inputs[1];
    ctx->outputs[0].dtype = ctx->inputs[0].dtype;
    return SES_OK;
}

/* ScatterElements' and ScatterND's "reduction", a string, into the kernels' INT. */
static ses_status_t scatter_reduction(ses__infer_ctx_t *ctx) {
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *text = "none";
    int rc = ses__attrs_get_string(ctx->attrs, "reduction", &text);

    if (rc < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute reduction must be a string");
    for (int64_t r = 0; r < 5; r++)
        if (!strcmp(text, names[r])) {
            if (r != SES__SCATTER_NONE &&
                !(SES__DT(ctx->inputs[0].dtype) &
                  (SES__DT_NUMERIC | SES__DT(SES_I8) | SES__DT(SES_I16) | SES__DT(SES_U8) |
                   SES__DT(SES_U16) | SES__DT(SES_U32) | SES__DT(SES_U64))))
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "reduction %s needs numbers; data is %s", text,
                                    ses__tstr(&ctx->inputs[0]).s);
            return ses__attrs_set_int(&ctx->kernel_attrs, "reduction", r);
        }
    return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                        "attribute reduction is \"%s\"; it must be none, add, mul, max or min",
                        text);
}

ses_status_t ses__infer_scatter_elements(ses__infer_ctx_t *ctx) {
    int64_t axis;
    ses_status_t st = ses__op_check_dtype(ctx, 2, "updates", SES__DT_ANY);

    if (st == SES_OK)
        st = infer_elements(ctx, &ctx->inputs[2], &axis);
    if (st == SES_OK)
        st = scatter_reduction(ctx);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = ctx->inputs[0];
    return SES_OK;
}

/* OneHot's depth: a scalar (or one-element 1-D) of any number dtype, truncated to an int. */
static ses_status_t read_depth(ses__infer_ctx_t *ctx, int64_t *out) {
    const ses__type_t *t = &ctx->inputs[1];
    const unsigned char *p = ctx->values ? ctx->values[1] : NULL;
    double v;

    if (ses__type_count(t) != 1 || t->rank > 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "depth must be a scalar, got %s",
                            ses__tstr(t).s);
    if (!p)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input 1 (depth) must be a constant or fed: the output's shape "
                            "depends on its value");
    switch (t->dtype) {
    case SES_F32: {
        float f;
        memcpy(&f, p, sizeof f);
        v = f;
        break;
    }
    case SES_F64: memcpy(&v, p, sizeof v); break;
    case SES_I32: {
        int32_t i;
        memcpy(&i, p, sizeof i);
        v = i;
        break;
    }
    default: {
        int64_t i;
        memcpy(&i, p, sizeof i);
        v = (double)i;
        break;
    }
    }
    if (!(v >= 1.0 && v < 9.0e15))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "depth is %g; it must be at least 1", v);
    *out = (int64_t)v;
    return SES_OK;
}

ses_status_t ses__infer_one_hot(ses__infer_ctx_t *ctx) {
    const ses__type_t *indices = &ctx->inputs[0], *values = &ctx->inputs[2];
    ses__type_t *out = &ctx->outputs[0];
    int64_t axis, depth = 0;
    ses_status_t st;

    st =
        ses__op_check_dtype(ctx, 0, "indices", SES__DT(SES_F32) | SES__DT(SES_F64) | SES__DT_INDEX);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "depth",
                                 SES__DT(SES_F32) | SES__DT(SES_F64) | SES__DT_INDEX);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 2, "values", SES__DT_BASIC);
    if (st == SES_OK && (values->rank != 1 || values->dims[0] != 2))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "values must be [off_value, on_value], a 1-D tensor of 2, got %s",
                          ses__tstr(values).s);
    if (st == SES_OK)
        st = ses__op_check_out_rank(ctx, indices->rank + 1);
    if (st == SES_OK)
        st = read_depth(ctx, &depth);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", -1, &axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, indices->rank + 1, indices, &axis);
    if (st != SES_OK)
        return st;

    /* indices.shape with depth inserted at the axis */
    out->dtype = values->dtype;
    out->rank = 0;
    for (uint32_t d = 0; d < indices->rank + 1; d++)
        out->dims[out->rank++] = (int64_t)d == axis  ? depth
                                 : (int64_t)d < axis ? indices->dims[d]
                                                     : indices->dims[d - 1];
    ctx->kernel_inputs = 0x5;
    st = ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "depth", depth);
    return st;
}

/*
 * GatherND's and ScatterND's common check: indices [..., m] whose last dimension m indexes
 * data's dims batch_dims to batch_dims + m - 1, with the first batch_dims dims of both equal.
 * Stores m.
 */
static ses_status_t infer_nd(ses__infer_ctx_t *ctx, int64_t batch_dims, int64_t *out_m) {
    const ses__type_t *data = &ctx->inputs[0], *indices = &ctx->inputs[1];
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "indices", SES__DT_INDEX);
    if (st != SES_OK)
        return st;
    if (indices->rank < 1 || batch_dims < 0 || batch_dims >= (int64_t)indices->rank ||
        batch_dims >= (int64_t)data->rank)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "indices %s must have rank 1 or more and batch_dims %lld must be "
                            "below both its rank and data's (%s)",
                            ses__tstr(indices).s, (long long)batch_dims, ses__tstr(data).s);
    int64_t m = indices->dims[indices->rank - 1];
    int ok = m >= 1 && batch_dims + m <= (int64_t)data->rank;
    for (int64_t d = 0; ok && d < batch_dims; d++)
        ok = indices->dims[d] == data->dims[d];
    if (!ok)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "indices %s and data %s do not fit: the last dimension of indices "
                            "must be 1 to data's rank - batch_dims (%lld), and the first "
                            "batch_dims dims of both equal",
                            ses__tstr(indices).s, ses__tstr(data).s, (long long)batch_dims);
    *out_m = m;
    return SES_OK;
}

/* indices.shape[:-1] + data.shape[batch_dims + m:] into @p out; fails when too deep. */
static ses_status_t nd_shape(ses__infer_ctx_t *ctx, int64_t batch_dims, int64_t m,
                             ses__type_t *out) {
    const ses__type_t *data = &ctx->inputs[0], *indices = &ctx->inputs[1];
    ses_status_t st =
        ses__op_check_out_rank(ctx, indices->rank - 1 + data->rank - (size_t)(batch_dims + m));

    if (st != SES_OK)
        return st;
    memset(out, 0, sizeof *out);
    out->dtype = data->dtype;
    for (uint32_t d = 0; d + 1 < indices->rank; d++)
        out->dims[out->rank++] = indices->dims[d];
    for (uint32_t d = (uint32_t)(batch_dims + m); d < data->rank; d++)
        out->dims[out->rank++] = data->dims[d];
    return SES_OK;
}

ses_status_t ses__infer_gather_nd(ses__infer_ctx_t *ctx) {
    int64_t batch_dims, m;
    ses_status_t st = ses__op_attr_int(ctx, "batch_dims", 0, &batch_dims);

    if (st == SES_OK)
        st = infer_nd(ctx, batch_dims, &m);
    if (st == SES_OK)
        st = nd_shape(ctx, batch_dims, m, &ctx->outputs[0]);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "batch_dims", batch_dims);
    return st;
}

ses_status_t ses__infer_scatter_nd(ses__infer_ctx_t *ctx) {
    const ses__type_t *updates = &ctx->inputs[2];
    ses__type_t want;
    int64_t m;
    ses_status_t st = ses__op_check_dtype(ctx, 2, "updates", SES__DT_ANY);

    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "data", 2, "updates");
    if (st == SES_OK)
        st = infer_nd(ctx, 0, &m);
    if (st == SES_OK)
        st = nd_shape(ctx, 0, m, &want);
    if (st != SES_OK)
        return st;
    int ok = want.rank == updates->rank;
    for (uint32_t d = 0; ok && d < want.rank; d++)
        ok = want.dims[d] == updates->dims[d];
    if (!ok)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "updates is %s; indices %s into data %s want %s", ses__tstr(updates).s,
                            ses__tstr(&ctx->inputs[1]).s, ses__tstr(&ctx->inputs[0]).s,
                            ses__tstr(&want).s);
    st = scatter_reduction(ctx);
    if (st == SES_OK)
        ctx->outputs[0] = ctx->inputs[0];
    return st;
}
