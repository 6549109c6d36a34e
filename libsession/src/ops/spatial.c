/*
 * The data-movement ops of exported models (ONNX op set 13 forms): DepthToSpace, SpaceToDepth,
 * Tile, MaxUnpool, RoiAlign.
 *
 *   op (inputs; attributes)                      kernel (inputs passed; normalized attributes)
 *   DepthToSpace(X; blocksize, mode)             DepthToSpace (X; blocksize, mode 0 DCR, 1 CRD)
 *   SpaceToDepth(X; blocksize)                   SpaceToDepth (X; blocksize)
 *   Tile(input, repeats)                         Tile (input; Y's dims are the input's times
 *                                                  repeats)
 *   MaxUnpool(X, I[, output_shape]; kernel_shape, MaxUnpool (X, I; index_dims: the default
 *     strides, pads)                               output's dims, which I's offsets index)
 *
 * Tile's repeats and MaxUnpool's output_shape are shape-like: constants or fed. MaxUnpool's
 * indices are MaxPool's: flat offsets (batch and channel included) into the default output,
 * [N, C, (in - 1) * strides + kernel - pads]; an output_shape extends (or cuts) that output at
 * the end of each spatial dim, keeping each element's coordinates, as ONNX's test expects.
 */
#include "spatial.h"

#include <string.h>

#include "infer.h"

/* ---- DepthToSpace, SpaceToDepth ------------------------------------------------------------ */

ses_status_t ses__infer_depth_space(ses__infer_ctx_t *ctx) {
    const int to_space = strcmp(ctx->op, "DepthToSpace") == 0;
    const ses__type_t *x = &ctx->inputs[0];
    ses__type_t *y = &ctx->outputs[0];
    const char *mode = "DCR";
    int64_t b, bb;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);

    if (st == SES_OK && x->rank != 4)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input must be 4-D [N, C, H, W], got %s",
                          ses__tstr(x).s);
    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "blocksize", &b);
    if (st != SES_OK)
        return st;
    if (b < 1 || b > (INT64_C(1) << 20))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute blocksize is %lld; it must be >= 1", (long long)b);
    bb = b * b;
    if (to_space) {
        if (ses__attrs_get_string(ctx->attrs, "mode", &mode) < 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute mode must be a string");
        if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute mode is \"%s\"; it must be DCR or CRD", mode);
        if (x->dims[1] % bb != 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "the channels must be a multiple of blocksize^2 = %lld: input is "
                                "%s",
                                (long long)bb, ses__tstr(x).s);
    } else if (x->dims[2] % b != 0 || x->dims[3] % b != 0) {
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "the height and width must be multiples of blocksize %lld: input is "
                            "%s",
                            (long long)b, ses__tstr(x).s);
    }
    *y = *x;
    if (to_space) {
        y->dims[1] = x->dims[1] / bb;
        if (__builtin_mul_overflow(x->dims[2], b, &y->dims[2]) ||
            __builtin_mul_overflow(x->dims[3], b, &y->dims[3]))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "the output of %s is too large",
                                ses__tstr(x).s);
    } else {
        if (__builtin_mul_overflow(x->dims[1], bb, &y->dims[1]))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "the output of %s is too large",
                                ses__tstr(x).s);
        y->dims[2] = x->dims[2] / b;
        y->dims[3] = x->dims[3] / b;
    }
    st = ses__attrs_set_int(&ctx->kernel_attrs, "blocksize", b);
    if (st == SES_OK && to_space)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "mode", strcmp(mode, "CRD") == 0);
    return st;
}

/* ---- Tile ----------------------------------------------------------------------------------- */

ses_status_t ses__infer_tile(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0], *r = &ctx->inputs[1];
    int64_t repeats[SES_MAX_RANK];
    size_t n = 0;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY);

    if (st == SES_OK && (r->rank != 1 || r->dims[0] != (int64_t)x->rank))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "repeats must be 1-D with one entry per input dimension: input is %s, "
                          "repeats is %s",
                          ses__tstr(x).s, ses__tstr(r).s);
    if (st == SES_OK)
        st = ses__op_read_ints(ctx, 1, "repeats", SES__DT(SES_I64), repeats, SES_MAX_RANK, &n);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (repeats[d] < 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "repeats %s has a negative entry",
                                ses__ints_str(repeats, n).s);
        if (__builtin_mul_overflow(x->dims[d], repeats[d], &ctx->outputs[0].dims[d]) ||
            ctx->outputs[0].dims[d] > (INT64_C(1) << 48))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "the output of %s repeated %s is too large", ses__tstr(x).s,
                                ses__ints_str(repeats, n).s);
    }
    if (ses__type_count(&ctx->outputs[0]) < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "the output of %s repeated %s is too large",
                            ses__tstr(x).s, ses__ints_str(repeats, n).s);
    ctx->kernel_inputs = 0x1;
    return SES_OK;
}

/* ---- MaxUnpool ------------------------------------------------------------------------------ */

/* Whether output_shape (input 2) is given and not empty. */
static int given_shape(const ses__infer_ctx_t *ctx) {
    return ses__op_has_input(ctx, 2) && ses__type_count(&ctx->inputs[2]) != 0;
}

ses_status_t ses__infer_max_unpool(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0], *idx = &ctx->inputs[1];
    ses__type_t *y = &ctx->outputs[0];
    const int64_t *ks, *ss, *ps;
    size_t n_ks, n_ss, n_ps;
    int has_ks, has_ss, has_ps, same = 1;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT);

    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 1, "I", SES__DT(SES_I64));
    if (st == SES_OK && x->rank < 3)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "X must be [N, C, spatial...] with at least one spatial dimension, got "
                          "%s",
                          ses__tstr(x).s);
    same = idx->rank == x->rank;
    for (uint32_t d = 0; same && d < x->rank; d++)
        same = idx->dims[d] == x->dims[d];
    if (st == SES_OK && !same)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "I must have X's shape: X is %s, I is %s",
                          ses__tstr(x).s, ses__tstr(idx).s);
    if (st == SES_OK)
        st = ses__op_attr_ints(ctx, "kernel_shape", &ks, &n_ks, &has_ks);
    if (st == SES_OK)
        st = ses__op_attr_ints(ctx, "strides", &ss, &n_ss, &has_ss);
    if (st == SES_OK)
        st = ses__op_attr_ints(ctx, "pads", &ps, &n_ps, &has_ps);
    if (st != SES_OK)
        return st;
    const uint32_t n = x->rank - 2;
    if (!has_ks || n_ks != n || (has_ss && n_ss != n) || (has_ps && n_ps != 2 * n))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attributes kernel_shape (required), strides and pads need %u, %u "
                            "and %u entries for X %s; got kernel_shape %s, strides %s, pads %s",
                            n, n, 2 * n, ses__tstr(x).s, ses__ints_str(ks, n_ks).s,
                            ses__ints_str(ss, n_ss).s, ses__ints_str(ps, n_ps).s);
    /* The indices are flat offsets into the default output (the pool's input); output_shape,
     * when given, is that output extended or cut at the end of each spatial dim. */
    int64_t index_dims[SES_MAX_RANK];
    index_dims[0] = x->dims[0];
    index_dims[1] = x->dims[1];
    for (uint32_t d = 0; d < n; d++) {
        const int64_t s = has_ss ? ss[d] : 1, pb = has_ps ? ps[d] : 0, pe = has_ps ? ps[n + d] : 0;
        if (ks[d] < 1 || s < 1 || pb < 0 || pe < 0 || ks[d] > (INT64_C(1) << 30) ||
            s > (INT64_C(1) << 30) || x->dims[2 + d] > (INT64_C(1) << 30))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "kernel_shape %s, strides %s and pads %s must be >= 1, >= 1 and "
                                ">= 0",
                                ses__ints_str(ks, n_ks).s, ses__ints_str(ss, n_ss).s,
                                ses__ints_str(ps, n_ps).s);
        const int64_t out = x->dims[2 + d] == 0 ? 0 : (x->dims[2 + d] - 1) * s + ks[d] - pb - pe;
        if (out < 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "pads %s leave no output along spatial dimension %u",
                                ses__ints_str(ps, n_ps).s, d);
        index_dims[2 + d] = out;
    }
    *y = *x;
    for (uint32_t d = 0; d < n; d++)
        y->dims[2 + d] = index_dims[2 + d];
    if (given_shape(ctx)) {
        int64_t shape[SES_MAX_RANK];
        size_t n_shape = 0;
        st = ses__op_read_ints(ctx, 2, "output_shape", SES__DT(SES_I64), shape, SES_MAX_RANK,
                               &n_shape);
        if (st != SES_OK)
            return st;
        int ok = n_shape == x->rank && shape[0] == x->dims[0] && shape[1] == x->dims[1];
        for (uint32_t d = 0; ok && d < n; d++)
            ok = shape[2 + d] >= 0 && shape[2 + d] <= (INT64_C(1) << 40);
        if (!ok)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "output_shape %s must be [N, C, spatial...] with X's N and C: X "
                                "is %s",
                                ses__ints_str(shape, n_shape).s, ses__tstr(x).s);
        for (uint32_t d = 0; d < n; d++)
            y->dims[2 + d] = shape[2 + d];
    }
    st = ses__attrs_set_ints(&ctx->kernel_attrs, "index_dims", index_dims, x->rank);
    if (st != SES_OK)
        return st;
    ctx->kernel_inputs = 0x3;
    return SES_OK;
}

/* ---- RoiAlign ------------------------------------------------------------------------------- */

/*
 * RoiAlign(X, rois, batch_indices; mode, output_height, output_width, sampling_ratio,
 * spatial_scale, coordinate_transformation_mode) (op set 16; op set 10's form is the same with
 * output_half_pixel). The kernel gets mode 0 (avg) or 1 (max) and half_pixel 0 or 1.
 */
ses_status_t ses__infer_roi_align(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0], *rois = &ctx->inputs[1], *bi = &ctx->inputs[2];
    const char *mode = "avg", *ctm = "half_pixel";
    int64_t oh, ow, sampling;
    double scale;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT);

    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "X", 1, "rois");
    if (st == SES_OK)
        st = ses__op_check_dtype(ctx, 2, "batch_indices", SES__DT(SES_I64));
    if (st == SES_OK && x->rank != 4)
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "X must be 4-D [N, C, H, W], got %s",
                          ses__tstr(x).s);
    if (st == SES_OK &&
        (rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 || bi->dims[0] != rois->dims[0]))
        st = ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                          "rois must be [num_rois, 4] and batch_indices [num_rois]: rois is %s, "
                          "batch_indices is %s",
                          ses__tstr(rois).s, ses__tstr(bi).s);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "output_height", 1, &oh);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "output_width", 1, &ow);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "sampling_ratio", 0, &sampling);
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "spatial_scale", 1.0, &scale);
    if (st != SES_OK)
        return st;
    if (oh < 1 || ow < 1 || oh > (INT64_C(1) << 20) || ow > (INT64_C(1) << 20) || sampling < 0 ||
        sampling > 4096)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attributes output_height %lld and output_width %lld must be >= 1, "
                            "sampling_ratio %lld >= 0",
                            (long long)oh, (long long)ow, (long long)sampling);
    if (ses__attrs_get_string(ctx->attrs, "mode", &mode) < 0 ||
        ses__attrs_get_string(ctx->attrs, "coordinate_transformation_mode", &ctm) < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attributes mode and coordinate_transformation_mode must be strings");
    if ((strcmp(mode, "avg") && strcmp(mode, "max")) ||
        (strcmp(ctm, "half_pixel") && strcmp(ctm, "output_half_pixel")))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "mode is \"%s\" (avg or max) and coordinate_transformation_mode "
                            "\"%s\" (half_pixel or output_half_pixel)",
                            mode, ctm);
    ctx->outputs[0].dtype = x->dtype;
    ctx->outputs[0].rank = 4;
    ctx->outputs[0].dims[0] = rois->dims[0];
    ctx->outputs[0].dims[1] = x->dims[1];
    ctx->outputs[0].dims[2] = oh;
    ctx->outputs[0].dims[3] = ow;
    st = ses__attrs_set_int(&ctx->kernel_attrs, "mode", strcmp(mode, "max") == 0);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "half_pixel", strcmp(ctm, "half_pixel") == 0);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "sampling_ratio", sampling);
    if (st == SES_OK)
        st = ses__attrs_set_float(&ctx->kernel_attrs, "spatial_scale", scale);
    return st;
}
