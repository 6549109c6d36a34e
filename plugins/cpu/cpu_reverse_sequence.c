/*
 * ReverseSequence: for each batch entry b, steps t < sequence_lens[b] along the time axis come
 * from step len - 1 - t, the others from themselves. batch_axis and time_axis are 0 and 1.
 */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"

int32_t cpu__reverse_sequence(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *lens = &call->in[1], *y = &call->outs[0];
    const int64_t *len = (const int64_t *)(const void *)lens->data;
    int64_t batch_axis, time_axis;
    int32_t st = cpu__attr_int(call, "batch_axis", 1, 1, &batch_axis);

    if (st == SES_DRV_OK)
        st = cpu__attr_int(call, "time_axis", 1, 0, &time_axis);
    if (st != SES_DRV_OK)
        return st;
    if (x->rank < 2 || !cpu__same_shape(x, y) || batch_axis + time_axis != 1 ||
        batch_axis * time_axis != 0 || lens->count != (uint64_t)x->dims[batch_axis])
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "input and output of one shape, rank 2 or more, batch_axis and "
                              "time_axis 0 and 1, and one length per batch entry");
    const int64_t batch = x->dims[batch_axis], steps = x->dims[time_axis];
    size_t inner = x->esize;
    for (uint32_t d = 2; d < x->rank; d++)
        inner *= (size_t)x->dims[d];
    for (int64_t b = 0; b < batch; b++)
        if (len[b] < 0 || len[b] > steps)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "sequence_lens[%" PRId64 "] is %" PRId64
                                  ": it must be in [0, %" PRId64 "], the size of the time axis",
                                  b, len[b], steps);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t t = 0; t < steps; t++) {
            const int64_t from = t < len[b] ? len[b] - 1 - t : t;
            /* Element (b, t) is at [b, t] with batch first, [t, b] with time first. */
            const int64_t to_row = batch_axis == 0 ? b * steps + t : t * batch + b;
            const int64_t from_row = batch_axis == 0 ? b * steps + from : from * batch + b;
            memcpy(y->data + (size_t)to_row * inner, x->data + (size_t)from_row * inner, inner);
        }
    return SES_DRV_OK;
}
