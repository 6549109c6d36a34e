/*
 * Slice (opset 13): starts, ends and the optional axes and steps are inputs whose values
 * inference reads. Kernels get the data alone and two attributes with one entry per data
 * dimension: "starts", clamped into range for the direction of the step, and "steps", non-zero;
 * dimensions the node does not slice start at 0 with step 1. The output shape tells the kernel
 * how many elements to take along each dimension. Where that is 0, the start is 0, so a kernel
 * may assume every start is in [0, dim) or the slice is empty.
 */
#include "infer.h"

/* Room for more entries than a tensor has dimensions, so that a list too long for the data is
 * reported as such rather than as an unreadable input. */
#define SLICE_CAP (SES_MAX_RANK * 2)

typedef struct slice_args {
    int64_t starts[SLICE_CAP], ends[SLICE_CAP], axes[SLICE_CAP], steps[SLICE_CAP];
    size_t n;
} slice_args_t;

/* Reads optional input @p index into @p out, checking that it has as many entries as starts.
 * When absent it defaults to 0, 1, 2, ... (axes: @p identity_fallback) or to all 1 (steps). */
static ses_status_t read_optional(ses__infer_ctx_t *ctx, size_t index, const char *name, size_t n,
                                  int64_t *out, int identity_fallback) {
    size_t got = n;
    ses_status_t st = SES_OK;

    if (ses__op_has_input(ctx, index))
        st = ses__op_read_ints(ctx, index, name, SES__DT_INDEX, out, SLICE_CAP, &got);
    else
        for (size_t k = 0; k < n; k++)
            out[k] = identity_fallback ? (int64_t)k : 1;
    if (st == SES_OK && got != n)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "starts has %zu values but %s has %zu; they must match", n, name, got);
    return st;
}

/* Reads starts, ends, axes and steps from inputs @p first to first + 3, for slicing the input
 * @p data named @p data_name. */
static ses_status_t read_args(ses__infer_ctx_t *ctx, const ses__type_t *data, const char *data_name,
                              size_t first, slice_args_t *a) {
    size_t n_ends = 0;
    ses_status_t st;

    st = ses__op_read_ints(ctx, first, "starts", SES__DT_INDEX, a->starts, SLICE_CAP, &a->n);
    if (st == SES_OK)
        st = ses__op_read_ints(ctx, first + 1, "ends", SES__DT_INDEX, a->ends, SLICE_CAP, &n_ends);
    if (st == SES_OK && n_ends != a->n)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "starts has %zu values but ends has %zu; they must match", a->n, n_ends);
    /* Without axes, starts[k] applies to dimension k. */
    if (st == SES_OK && !ses__op_has_input(ctx, first + 2) && a->n > data->rank)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "starts has %zu values, more than the %s's rank: %s is %s", a->n,
                          data_name, data_name, ses__tstr(data).s);
    if (st == SES_OK)
        st = read_optional(ctx, first + 2, "axes", a->n, a->axes, 1);
    if (st == SES_OK)
        st = read_optional(ctx, first + 3, "steps", a->n, a->steps, 0);
    return st;
}

/*
 * ONNX's rule for one dimension of size @p dim: negative start and end count from the end;
 * then both are clamped, to [0, dim] for a positive step and to [0, dim-1] and [-1, dim-1] for
 * a negative one. Returns the number of elements taken, ceil((end - start) / step) or 0, and
 * leaves the clamped start in @p start.
 */
static int64_t slice_dim(int64_t dim, int64_t *start, int64_t end, int64_t step) {
    int64_t s = *start < 0 ? *start + dim : *start; /* cannot overflow: dim >= 0 */
    int64_t e = end < 0 ? end + dim : end;
    int64_t count;

    if (step > 0) {
        s = s < 0 ? 0 : s > dim ? dim : s;
        e = e < 0 ? 0 : e > dim ? dim : e;
        count = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
        s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
        e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        /* Unsigned: -step overflows for INT64_MIN. */
        count = s > e ? (int64_t)((uint64_t)(s - e - 1) / ((uint64_t)0 - (uint64_t)step)) + 1 : 0;
    }
    *start = count ? s : 0;
    return count;
}

ses_status_t ses__slice_normalize(ses__infer_ctx_t *ctx, size_t data_index, const char *data_name,
                                  int64_t *starts, int64_t *steps, ses__type_t *out) {
    const ses__type_t *data = &ctx->inputs[data_index];
    int sliced[SES_MAX_RANK] = {0};
    slice_args_t a;
    ses_status_t st;

    st = read_args(ctx, data, data_name, data_index + 1, &a);
    if (st != SES_OK)
        return st;
    *out = *data;
    for (uint32_t d = 0; d < data->rank; d++) {
        starts[d] = 0;
        steps[d] = 1;
    }
    for (size_t k = 0; k < a.n; k++) {
        int64_t axis;
        st = ses__op_axis(ctx, "axes value", a.axes[k], data->rank, data, &axis);
        if (st != SES_OK)
            return st;
        if (sliced[axis]++)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "axes %s name axis %lld twice",
                                ses__ints_str(a.axes, a.n).s, (long long)axis);
        if (a.steps[k] == 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "steps %s has a 0 (for axis %lld)",
                                ses__ints_str(a.steps, a.n).s, (long long)axis);
        starts[axis] = a.starts[k];
        steps[axis] = a.steps[k];
        out->dims[axis] = slice_dim(data->dims[axis], &starts[axis], a.ends[k], a.steps[k]);
    }
    return SES_OK;
}

ses_status_t ses__infer_slice(ses__infer_ctx_t *ctx) {
    const ses__type_t *data = &ctx->inputs[0];
    int64_t starts[SES_MAX_RANK], steps[SES_MAX_RANK];
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "data", SES__DT_ANY);
    if (st == SES_OK)
        st = ses__slice_normalize(ctx, 0, "data", starts, steps, &ctx->outputs[0]);
    if (st != SES_OK)
        return st;
    ctx->kernel_inputs = 0x1;
    st = ses__attrs_set_ints(&ctx->kernel_attrs, "starts", starts, data->rank);
    if (st == SES_OK)
        st = ses__attrs_set_ints(&ctx->kernel_attrs, "steps", steps, data->rank);
    return st;
}
