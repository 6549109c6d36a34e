/*
 * Resize, its gradient, and GridSample: sampling a tensor at other coordinates.
 *
 *   op (inputs; attributes)                         kernel (inputs passed; normalized attributes)
 *   Resize(X[, roi, scales, sizes]; mode, ...)      Resize (X; mode, coord, nearest_mode,
 *                                                   cubic_coeff_a, exclude_outside, antialias,
 *                                                   extrapolation_value, scales, lengths, roi)
 *   ResizeGrad(dY, X[, roi, scales, sizes]; ...)    ResizeGrad (dY; as Resize)
 *   GridSample(X, grid; mode, padding_mode, ...)    GridSample (X, grid; mode 0 linear, 1 nearest,
 *                                                   2 cubic; padding_mode 0 zeros, 1 border,
 *                                                   2 reflection; align_corners)
 *
 * Resize's roi, scales and sizes are shape-like: inference reads them (a constant or a fed
 * value) and gives the kernel, per axis of X, the scale its coordinate transform divides by
 * (FLOATS scales), the resized length align_corners and tf_crop_and_resize use (FLOATS lengths:
 * the scaled length scale * in when scales were given, as ONNX's reference computes it, the
 * output length when sizes were), and the region of interest (FLOATS roi: rank starts then rank
 * ends; 0 and 1 where none was given). Axes that the attribute axes leaves out keep scale 1. The
 * strings become ints: mode 0 nearest, 1 linear, 2 cubic; coord the RESIZE_COORD_* below;
 * nearest_mode the RESIZE_NEAREST_* below. An empty roi, scales or sizes counts as absent, as
 * the importer passes a left-out middle input.
 */
#include <math.h>
#include <string.h>

#include "infer.h"

enum { RESIZE_NEAREST = 0, RESIZE_LINEAR = 1, RESIZE_CUBIC = 2 };

/* The most taps along one axis a kernel keeps (plugins/cpu/cpu_resize.c's CPU__RZ_MAX_TAPS):
 * an antialiased shrink beyond them is refused. */
#define RESIZE_MAX_TAPS 64

/* The most spatial dimensions GridSample takes (plugins/cpu/cpu_resize.c's
 * CPU__GS_MAX_SPATIAL): linear reads 2^r corners. */
#define GRID_SAMPLE_MAX_SPATIAL 6

/* The kernels' coord values; plugins/cpu/cpu_resize.c has the same list. */
enum {
    RESIZE_COORD_HALF_PIXEL = 0,
    RESIZE_COORD_HALF_PIXEL_SYMMETRIC = 1,
    RESIZE_COORD_PYTORCH_HALF_PIXEL = 2,
    RESIZE_COORD_ALIGN_CORNERS = 3,
    RESIZE_COORD_ASYMMETRIC = 4,
    RESIZE_COORD_TF_HALF_PIXEL_FOR_NN = 5,
    RESIZE_COORD_TF_CROP_AND_RESIZE = 6,
};

static int pick(const char *text, const char *const *names, int n) {
    for (int k = 0; k < n; k++)
        if (!strcmp(text, names[k]))
            return k;
    return -1;
}

/* String attribute @p name, one of @p names[0..n) (its position into @p out), @p fallback when
 * absent. */
static ses_status_t string_choice(ses__infer_ctx_t *ctx, const char *name, const char *fallback,
                                  const char *const *names, int n, const char *allowed,
                                  int64_t *out) {
    const char *text = fallback;
    int k;

    if (ses__attrs_get_string(ctx->attrs, name, &text) < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute %s must be a string", name);
    k = pick(text, names, n);
    if (k < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute %s is \"%s\"; it must be %s",
                            name, text, allowed);
    *out = k;
    return SES_OK;
}

/* Reads a 1-D f32 or f64 input's compile-time values into @p out (at most @p cap). */
static ses_status_t read_floats(const ses__infer_ctx_t *ctx, size_t index, const char *name,
                                double *out, size_t cap, size_t *out_n) {
    const ses__type_t *t = &ctx->inputs[index];
    const unsigned char *bytes = ctx->values ? ctx->values[index] : NULL;
    ses_status_t st = ses__op_check_dtype(ctx, index, name, SES__DT(SES_F32) | SES__DT(SES_F64));
    int64_t n = ses__type_count(t);

    if (st != SES_OK)
        return st;
    if (t->rank != 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) must be 1-D, got %s", index,
                            name, ses__tstr(t).s);
    if (n > (int64_t)cap)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input %zu (%s) has %lld values; at most %zu are allowed here", index,
                            name, (long long)n, cap);
    if (!bytes)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input %zu (%s) must be a constant or fed: the output's shape "
                            "depends on its value",
                            index, name);
    for (int64_t k = 0; k < n; k++) {
        if (t->dtype == SES_F32) {
            float f;
            memcpy(&f, bytes + k * 4, 4);
            out[k] = f;
        } else {
            memcpy(&out[k], bytes + k * 8, 8);
        }
    }
    *out_n = (size_t)n;
    return SES_OK;
}

/*
 * Resize's normalization, with X at input @p xi and roi, scales and sizes after it: checks the
 * inputs and attributes, sets the kernel's attributes and the output type @p out.
 */
static ses_status_t resize_normalize(ses__infer_ctx_t *ctx, size_t xi, ses__type_t *out) {
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {
        "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
        "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                           "ceil"};
    static const char *const policies[] = {"stretch", "not_larger", "not_smaller"};
    const ses__type_t *x = &ctx->inputs[xi];
    const uint32_t rank = x->rank;
    int64_t mode = 0, coord = 0, nearest = 0, policy = 0, exclude = 0, antialias = 0;
    int64_t axes[SES_MAX_RANK];
    double cubic_a, extrapolation;
    double given_scales[SES_MAX_RANK], given_roi[2 * SES_MAX_RANK];
    double scales[SES_MAX_RANK], lengths[SES_MAX_RANK], roi[2 * SES_MAX_RANK];
    int64_t sizes[SES_MAX_RANK];
    const int64_t *axes_attr = NULL;
    size_t n_axes = rank, n_axes_attr = 0, n;
    int axes_present = 0, seen[SES_MAX_RANK] = {0};
    ses_status_t st;

    /* Integers (quantized models) take nearest only, a copy; ResizeGrad takes floats. */
    st = ses__op_check_dtype(ctx, xi, "X",
                             SES__DT_FLOAT | (xi == 0 ? SES__DT(SES_I8) | SES__DT(SES_U8) |
                                                            SES__DT(SES_I32) | SES__DT(SES_I64)
                                                      : 0));
    if (st == SES_OK)
        st = string_choice(ctx, "mode", "nearest", modes, 3, "nearest, linear or cubic", &mode);
    if (st == SES_OK && mode != RESIZE_NEAREST && !(SES__DT(x->dtype) & SES__DT_FLOAT))
        st = ses__op_fail(ctx, SES_UNIMPLEMENTED,
                          "%s mode of an integer X (%s) is not supported; nearest is", modes[mode],
                          ses__tstr(x).s);
    if (st == SES_OK)
        st = string_choice(ctx, "coordinate_transformation_mode", "half_pixel", coords, 7,
                           "half_pixel, half_pixel_symmetric, pytorch_half_pixel, "
                           "align_corners, asymmetric, tf_half_pixel_for_nn or "
                           "tf_crop_and_resize",
                           &coord);
    if (st == SES_OK)
        st = string_choice(ctx, "nearest_mode", "round_prefer_floor", nearests, 4,
                           "round_prefer_floor, round_prefer_ceil, floor or ceil", &nearest);
    if (st == SES_OK)
        st = string_choice(ctx, "keep_aspect_ratio_policy", "stretch", policies, 3,
                           "stretch, not_larger or not_smaller", &policy);
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "cubic_coeff_a", -0.75, &cubic_a);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "exclude_outside", 0, &exclude);
    if (st == SES_OK)
        st = ses__op_attr_float(ctx, "extrapolation_value", 0.0, &extrapolation);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "antialias", 0, &antialias);
    if (st == SES_OK)
        st = ses__op_attr_ints(ctx, "axes", &axes_attr, &n_axes_attr, &axes_present);
    if (st != SES_OK)
        return st;
    if (rank < 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "X must have rank 1 or more, got %s",
                            ses__tstr(x).s);

    /* The resized axes: all of them in order, or the attribute's. */
    if (axes_present) {
        if (n_axes_attr > rank)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute axes %s has more entries than X %s has axes",
                                ses__ints_str(axes_attr, n_axes_attr).s, ses__tstr(x).s);
        n_axes = n_axes_attr;
        for (size_t k = 0; k < n_axes; k++) {
            st = ses__op_axis(ctx, "axes value", axes_attr[k], rank, x, &axes[k]);
            if (st != SES_OK)
                return st;
            if (seen[axes[k]]++)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "attribute axes names axis %lld twice", (long long)axes[k]);
        }
    } else {
        for (size_t k = 0; k < n_axes; k++)
            axes[k] = (int64_t)k;
    }

    /* roi: read only where it is used. */
    for (uint32_t d = 0; d < rank; d++) {
        roi[d] = 0.0;
        roi[rank + d] = 1.0;
    }
    if (coord == RESIZE_COORD_TF_CROP_AND_RESIZE) {
        if (!ses__op_given(ctx, xi + 1))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "input %zu (roi) is required with coordinate_transformation_mode "
                                "tf_crop_and_resize",
                                xi + 1);
        st = read_floats(ctx, xi + 1, "roi", given_roi, 2 * SES_MAX_RANK, &n);
        if (st != SES_OK)
            return st;
        if (n != 2 * n_axes)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "input %zu (roi) has %zu values; it needs 2 per resized axis "
                                "(%zu): X is %s",
                                xi + 1, n, 2 * n_axes, ses__tstr(x).s);
        for (size_t k = 0; k < 2 * n_axes; k++)
            if (!isfinite(given_roi[k]))
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "input %zu (roi) value %zu is %g; it must be finite", xi + 1, k,
                                    given_roi[k]);
        for (size_t k = 0; k < n_axes; k++) {
            roi[axes[k]] = given_roi[k];
            roi[rank + axes[k]] = given_roi[n_axes + k];
        }
    } else if (ses__op_has_input(ctx, xi + 1)) {
        st = ses__op_check_dtype(ctx, xi + 1, "roi", SES__DT_FLOAT);
        if (st != SES_OK)
            return st;
    }

    const int has_scales = ses__op_given(ctx, xi + 2), has_sizes = ses__op_given(ctx, xi + 3);
    if (has_scales == has_sizes)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "exactly one of input %zu (scales) and input %zu (sizes) must be "
                            "given and not empty; %s",
                            xi + 2, xi + 3, has_scales ? "both are" : "neither is");
    *out = *x;
    for (uint32_t d = 0; d < rank; d++) {
        scales[d] = 1.0;
        lengths[d] = (double)x->dims[d];
    }
    if (has_scales) {
        st = read_floats(ctx, xi + 2, "scales", given_scales, SES_MAX_RANK, &n);
        if (st == SES_OK && ctx->inputs[xi + 2].dtype != SES_F32)
            st = ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (scales) must be f32, got %s",
                              xi + 2, ses__tstr(&ctx->inputs[xi + 2]).s);
        if (st != SES_OK)
            return st;
        if (n != n_axes)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "input %zu (scales) has %zu values; it needs one per resized axis "
                                "(%zu): X is %s",
                                xi + 2, n, n_axes, ses__tstr(x).s);
        for (size_t k = 0; k < n_axes; k++) {
            const int64_t d = axes[k];
            const double s = given_scales[k];
            if (!(s > 0.0) || !isfinite(s))
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "scales value %g (axis %lld) must be positive", s,
                                    (long long)d);
            double len = (double)x->dims[d] * s;
            if (coord == RESIZE_COORD_TF_CROP_AND_RESIZE)
                len *= roi[rank + d] - roi[d];
            if (!(len < 9.0e15))
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "scales value %g makes axis %lld too long", s, (long long)d);
            scales[d] = s;
            lengths[d] = (double)x->dims[d] * s;
            out->dims[d] = len > 0.0 ? (int64_t)floor(len) : 0;
        }
    } else {
        st = ses__op_read_ints(ctx, xi + 3, "sizes", SES__DT(SES_I64), sizes, SES_MAX_RANK, &n);
        if (st != SES_OK)
            return st;
        if (n != n_axes)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "input %zu (sizes) has %zu values; it needs one per resized axis "
                                "(%zu): X is %s",
                                xi + 3, n, n_axes, ses__tstr(x).s);
        double keep = policy == 1 ? INFINITY : 0.0;
        for (size_t k = 0; k < n_axes; k++) {
            const int64_t d = axes[k];
            if (sizes[k] < 0 || (sizes[k] > 0 && x->dims[d] == 0))
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "sizes value %lld (axis %lld) must be at least 0, and 0 for "
                                    "an empty axis: X is %s",
                                    (long long)sizes[k], (long long)d, ses__tstr(x).s);
            const double r = x->dims[d] ? (double)sizes[k] / (double)x->dims[d] : 1.0;
            keep = policy == 1 ? fmin(keep, r) : fmax(keep, r);
        }
        for (size_t k = 0; k < n_axes; k++) {
            const int64_t d = axes[k];
            if (policy == 0) {
                out->dims[d] = sizes[k];
                scales[d] = x->dims[d] ? (double)sizes[k] / (double)x->dims[d] : 1.0;
                lengths[d] = (double)sizes[k];
            } else {
                /* keep_aspect_ratio_policy: one scale for every resized axis, the output
                 * rounded from it. */
                out->dims[d] = (int64_t)round(keep * (double)x->dims[d]);
                scales[d] = keep;
                lengths[d] = keep * (double)x->dims[d];
            }
        }
    }
    /* antialias widens linear and cubic filters by 1 / scale where an axis shrinks (nearest
     * ignores it): 2 ceil(1 / scale) taps for linear, 2 ceil(2 / scale) for cubic, of which
     * kernels keep RESIZE_MAX_TAPS. */
    if (mode == RESIZE_NEAREST)
        antialias = 0;
    for (uint32_t d = 0; antialias && d < rank; d++) {
        const double reach = mode == RESIZE_LINEAR ? 1.0 : 2.0;
        if (out->dims[d] > 0 && scales[d] < 1.0 && 2.0 * ceil(reach / scales[d]) > RESIZE_MAX_TAPS)
            return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                                "antialias: axis %u shrinks by %g, which needs %.0f taps; at most "
                                "%d are supported (scales down to %g for %s)",
                                d, scales[d], 2.0 * ceil(reach / scales[d]), RESIZE_MAX_TAPS,
                                2.0 * reach / RESIZE_MAX_TAPS, modes[mode]);
    }
    for (uint32_t d = 0; d < rank; d++)
        if (out->dims[d] > 0 && !(scales[d] > 0.0))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "axis %u: a scale of 0 cannot give %lld elements", d,
                                (long long)out->dims[d]);

    ses__attrs_t *ka = &ctx->kernel_attrs;
    ses_attr_t fl;
    st = ses__attrs_set_int(ka, "mode", mode);
    if (st == SES_OK)
        st = ses__attrs_set_int(ka, "coord", coord);
    if (st == SES_OK)
        st = ses__attrs_set_int(ka, "nearest_mode", nearest);
    if (st == SES_OK)
        st = ses__attrs_set_float(ka, "cubic_coeff_a", cubic_a);
    if (st == SES_OK)
        st = ses__attrs_set_int(ka, "exclude_outside", exclude);
    if (st == SES_OK)
        st = ses__attrs_set_int(ka, "antialias", antialias);
    if (st == SES_OK)
        st = ses__attrs_set_float(ka, "extrapolation_value", extrapolation);
    if (st == SES_OK) {
        fl = ses_attr_floats("scales", scales, rank);
        st = ses__attrs_set(ka, &fl);
    }
    if (st == SES_OK) {
        fl = ses_attr_floats("lengths", lengths, rank);
        st = ses__attrs_set(ka, &fl);
    }
    if (st == SES_OK) {
        fl = ses_attr_floats("roi", roi, 2 * (size_t)rank);
        st = ses__attrs_set(ka, &fl);
    }
    return st;
}

ses_status_t ses__infer_resize(ses__infer_ctx_t *ctx) {
    ses_status_t st = resize_normalize(ctx, 0, &ctx->outputs[0]);
    if (st != SES_OK)
        return st;
    ctx->kernel_inputs = 0x1;
    return SES_OK;
}

/* The gradient of Resize(X, ...) for X: dY (of Resize's output shape) spread back onto the
 * elements each output read, with the weights it read them with. */
ses_status_t ses__infer_resize_grad(ses__infer_ctx_t *ctx) {
    const ses__type_t *dy = &ctx->inputs[0];
    ses__type_t y;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "dY", SES__DT_FLOAT);

    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "dY", 1, "X");
    if (st == SES_OK)
        st = resize_normalize(ctx, 1, &y);
    if (st != SES_OK)
        return st;
    int ok = dy->rank == y.rank;
    for (uint32_t d = 0; ok && d < y.rank; d++)
        ok = dy->dims[d] == y.dims[d];
    if (!ok)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "dY %s must have the shape Resize gives, %s",
                            ses__tstr(dy).s, ses__tstr(&y).s);
    ctx->outputs[0] = ctx->inputs[1];
    ctx->kernel_inputs = 0x1;
    return SES_OK;
}

/* GridSample (opsets 16 and 20): X [N, C, D1..Dr], grid [N, O1..Or, r] of points in [-1, 1]
 * (entry 0 along Dr), Y [N, C, O1..Or]; cubic takes r = 2 only. Opset 20's mode names linear
 * and cubic are opset 16's bilinear and bicubic. */
ses_status_t ses__infer_grid_sample(ses__infer_ctx_t *ctx) {
    static const char *const modes[] = {"bilinear", "nearest", "bicubic", "linear", "cubic"};
    static const char *const paddings[] = {"zeros", "border", "reflection"};
    const ses__type_t *x = &ctx->inputs[0], *grid = &ctx->inputs[1];
    ses__type_t *out = &ctx->outputs[0];
    int64_t mode = 0, padding = 0, align = 0;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT);
    if (st == SES_OK)
        st = ses__op_check_same_dtype(ctx, 0, "X", 1, "grid");
    if (st == SES_OK)
        st = string_choice(ctx, "mode", "bilinear", modes, 5,
                           "bilinear, nearest, bicubic, linear or cubic", &mode);
    if (st == SES_OK)
        st = string_choice(ctx, "padding_mode", "zeros", paddings, 3, "zeros, border or reflection",
                           &padding);
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "align_corners", 0, &align);
    if (st != SES_OK)
        return st;
    mode = mode == 3 ? 0 : mode == 4 ? 2 : mode; /* 0 linear, 1 nearest, 2 cubic */
    if (x->rank < 3)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "X must be [N, C, D1, ...] with a spatial dimension or more, got %s",
                            ses__tstr(x).s);
    if (x->rank > 2 + GRID_SAMPLE_MAX_SPATIAL)
        return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                            "X %s has %u spatial dimensions; at most %d are supported",
                            ses__tstr(x).s, x->rank - 2, GRID_SAMPLE_MAX_SPATIAL);
    if (mode == 2 && x->rank != 4)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "cubic mode takes a 4-D X [N, C, H, W] only, got %s", ses__tstr(x).s);
    int ok = grid->rank == x->rank && grid->dims[0] == x->dims[0] &&
             grid->dims[grid->rank - 1] == (int64_t)x->rank - 2;
    if (!ok)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "grid %s must be [N, O1..Or, r] with X's N and r = %u, its spatial "
                            "dimensions: X is %s",
                            ses__tstr(grid).s, x->rank - 2, ses__tstr(x).s);
    out->dtype = x->dtype;
    out->rank = x->rank;
    out->dims[0] = x->dims[0];
    out->dims[1] = x->dims[1];
    for (uint32_t a = 2; a < x->rank; a++)
        out->dims[a] = grid->dims[a - 1];
    st = ses__attrs_set_int(&ctx->kernel_attrs, "mode", mode);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "padding_mode", padding);
    if (st == SES_OK)
        st = ses__attrs_set_int(&ctx->kernel_attrs, "align_corners", align);
    return st;
}
