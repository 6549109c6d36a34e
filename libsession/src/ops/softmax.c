/* Softmax and LogSoftmax (opset 13: along one axis, not a flattened 2-D view). */
#include "infer.h"

ses_status_t ses__infer_softmax(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    int64_t axis;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "input", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "axis", -1, &axis);
    if (st == SES_OK)
        st = ses__op_axis(ctx, "axis", axis, x->rank, x, &axis);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    return ses__attrs_set_int(&ctx->kernel_attrs, "axis", axis);
}
