/* Gather: pick slices of data along one axis by index. The indices are data for the kernel,
 * which checks their range; inference needs only their shape. */
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
