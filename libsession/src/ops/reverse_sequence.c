/*
 * ReverseSequence: each batch entry's first sequence_lens[b] steps along the time axis reversed,
 * the rest copied. batch_axis and time_axis are 0 and 1 (either way round); the kernel gets them
 * as they are and checks the lengths it reads.
 */
#include <inttypes.h>

#include "../graph/attrs.h"
#include "infer.h"
#include "reverse_sequence.h"

ses_status_t ses__infer_reverse_sequence(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0], *lens = &ctx->inputs[1];
    int64_t batch_axis, time_axis;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "sequence_lens", SES__DT(SES_I64));
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "batch_axis", 1, &batch_axis);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "time_axis", 0, &time_axis);
    if (st != SES_OK)
        return st;
    if (x->rank < 2)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input must have rank 2 or more, got %s",
                            ses__tstr(x).s);
    if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "batch_axis %" PRId64 " and time_axis %" PRId64
                            " must be 0 and 1, one each",
                            batch_axis, time_axis);
    if (lens->rank != 1 || lens->dims[0] != x->dims[batch_axis])
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "sequence_lens %s must be 1-D with one length per batch entry: input "
                            "%s has %" PRId64 " along batch_axis %" PRId64,
                            ses__tstr(lens).s, ses__tstr(x).s, x->dims[batch_axis], batch_axis);
    ctx->outputs[0] = *x;
    if ((st = ses__attrs_set_int(&ctx->kernel_attrs, "batch_axis", batch_axis)) != SES_OK)
        return st;
    return ses__attrs_set_int(&ctx->kernel_attrs, "time_axis", time_axis);
}
