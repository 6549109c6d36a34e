/*
 * Resize and ResizeGrad, as the CPU driver's (cpu_resize.c), with the attributes the host
 * normalized (libsession/src/ops/resize.c): mode, coord, nearest_mode, cubic_coeff_a,
 * exclude_outside, extrapolation_value, and per axis scales, lengths and roi. Resize: f32 and f64
 * in every mode, i8, u8, i32 and i64 in nearest; ResizeGrad: f32 and f64. antialias (and an
 * integer X with another mode than nearest) is refused in supports_node, so that the node runs
 * elsewhere.
 */
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda_ops.h"

/* FLOATS attribute @p key of exactly @p want values. */
static int32_t cuda_rz_floats(ses_drv_device_t *device, const ses_drv_node_t *node, const char *key,
                              double *out, uint32_t want) {
    uint64_t n = 0;

    if (!node->attr || node->attr(node, key, SES_DRV_ATTR_FLOATS, &n, NULL) != SES_DRV_OK ||
        n != want || (n && node->attr(node, key, SES_DRV_ATTR_FLOATS, &n, out) != SES_DRV_OK))
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute %s is missing, not FLOATS or not of %" PRIu32
                               " values (X's rank%s)",
                               key, want, want > CUDA_MAX_RANK ? " times 2" : "");
    return SES_DRV_OK;
}

/* The node's integer attribute @p key (default @p def) into @p out. */
static int32_t cuda_rz_int(ses_drv_device_t *device, const ses_drv_node_t *node, const char *key,
                           int64_t def, int32_t *out) {
    int64_t v = def;
    if (cuda__attr_int(node, key, def, &v) != SES_DRV_OK || v < INT32_MIN || v > INT32_MAX)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute %s is not an INT of 32 bits", key);
    *out = (int32_t)v;
    return SES_DRV_OK;
}

/* Whether cuda runs this Resize: no antialias; an integer X with nearest only. */
int32_t cuda__resize_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    int64_t antialias = 0, mode = 0;
    int32_t st;

    if ((st = cuda__rank_supports(device, node)) != SES_DRV_OK)
        return st;
    if (cuda__attr_int(node, "antialias", 0, &antialias) != SES_DRV_OK ||
        cuda__attr_int(node, "mode", 0, &mode) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute antialias or mode is not an INT");
    if (antialias != 0)
        return cuda__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                               "antialias is not implemented on cuda");
    const uint32_t dt = node->n_inputs ? ses_drv_util_tensor_at(node->inputs, 0)->dtype : 0;
    if (mode != 0 && dt != SES_DRV_DTYPE_F32 && dt != SES_DRV_DTYPE_F64)
        return cuda__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                               "mode %" PRId64 " needs a float X; integers take nearest only",
                               mode);
    return SES_DRV_OK;
}

/* extrapolation_value in @p dtype's bits (integers: truncated and saturated, NaN 0). */
static uint64_t cuda_rz_fill(uint32_t dtype, double v) {
    const double lo = dtype == SES_DRV_DTYPE_I8    ? -128.0
                      : dtype == SES_DRV_DTYPE_U8  ? 0.0
                      : dtype == SES_DRV_DTYPE_I32 ? -2147483648.0
                                                   : -9.2e18;
    const double hi = dtype == SES_DRV_DTYPE_I8    ? 127.0
                      : dtype == SES_DRV_DTYPE_U8  ? 255.0
                      : dtype == SES_DRV_DTYPE_I32 ? 2147483647.0
                                                   : 9.2e18;
    const double t = v != v ? 0.0 : fmin(hi, fmax(lo, v));
    uint64_t bits = 0;
    switch (dtype) {
        case SES_DRV_DTYPE_F32: {
            const float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            bits = u;
            break;
        }
        case SES_DRV_DTYPE_F64:
            memcpy(&bits, &v, 8);
            break;
        case SES_DRV_DTYPE_I8:
            bits = (uint8_t)(int8_t)t;
            break;
        case SES_DRV_DTYPE_U8:
            bits = (uint8_t)t;
            break;
        case SES_DRV_DTYPE_I32:
            bits = (uint32_t)(int32_t)t;
            break;
        default:
            bits = (uint64_t)(int64_t)t;
            break;
    }
    return bits;
}

/* Reads the attributes and checks @p x (X, or dX) against @p y (Y, or dY): same rank, and an axis
 * of Y not empty only where X's is not and its scale is positive. */
static int32_t cuda_rz_read(ses_drv_device_t *device, const ses_drv_node_t *node,
                            const cuda_arg_t *x, const cuda_arg_t *y, cuda_resize_t *p) {
    int64_t antialias = 0;
    int32_t st;

    memset(p, 0, sizeof *p);
    if (x->rank != y->rank || x->dtype != y->dtype)
        return cuda__shape_fail(device, node, "X and Y must have one rank and dtype", x, y);
    p->rank = x->rank;
    if ((st = cuda_rz_int(device, node, "mode", 0, &p->mode)) != SES_DRV_OK ||
        (st = cuda_rz_int(device, node, "coord", 0, &p->coord)) != SES_DRV_OK ||
        (st = cuda_rz_int(device, node, "nearest_mode", 0, &p->nearest)) != SES_DRV_OK ||
        (st = cuda_rz_int(device, node, "exclude_outside", 0, &p->exclude)) != SES_DRV_OK ||
        (st = cuda_rz_floats(device, node, "scales", p->scales, p->rank)) != SES_DRV_OK ||
        (st = cuda_rz_floats(device, node, "lengths", p->lengths, p->rank)) != SES_DRV_OK ||
        (st = cuda_rz_floats(device, node, "roi", p->roi, 2 * p->rank)) != SES_DRV_OK)
        return st;
    if (cuda__attr_double(node, "cubic_coeff_a", -0.75, &p->cubic_a) != SES_DRV_OK ||
        cuda__attr_double(node, "extrapolation_value", 0.0, &p->extrapolation) != SES_DRV_OK ||
        cuda__attr_int(node, "antialias", 0, &antialias) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute cubic_coeff_a, extrapolation_value or antialias has "
                               "the wrong type");
    if (p->mode < 0 || p->mode > 2 || p->coord < 0 || p->coord > 6 || p->nearest < 0 ||
        p->nearest > 3)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "mode %" PRId32 ", coord %" PRId32 " or nearest_mode %" PRId32
                               " is out of range",
                               p->mode, p->coord, p->nearest);
    if (antialias != 0)
        return cuda__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                               "antialias is not implemented on cuda");
    for (uint32_t d = 0; d < p->rank; d++) {
        p->in[d] = x->dims[d];
        p->out[d] = y->dims[d];
        if (p->out[d] > 0 && (p->in[d] == 0 || !(p->scales[d] > 0.0)))
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "axis %" PRIu32 ": Y has %" PRId64 " elements but X %" PRId64
                                   " (scale %g)",
                                   d, p->out[d], p->in[d], p->scales[d]);
    }
    p->count = y->count;
    p->fill = cuda_rz_fill(x->dtype, p->extrapolation);
    return SES_DRV_OK;
}

int32_t cuda__k_resize(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    cuda_resize_t p;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_rz_read(device, node, &a[0], &a[1], &p)) != SES_DRV_OK)
        return st;
    const int is_float = a[0].dtype == SES_DRV_DTYPE_F32 || a[0].dtype == SES_DRV_DTYPE_F64;
    if (!is_float && p.mode != 0)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "mode %" PRId32 " needs a float X; integers take nearest only",
                               p.mode);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(
        device, launch,
        cuda__resize(a[0].dtype, &p, a[0].ptr, a[1].ptr, cuda__stream_of(device, launch)));
}

/* dY -> dX (X's shape): zeros, then each dY element added where Resize read. */
int32_t cuda__k_resize_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    cuda_resize_t p;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_rz_read(device, node, &a[1], &a[0], &p)) != SES_DRV_OK)
        return st;
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    void *s = cuda__stream_of(device, launch);
    int e = (int)cudaMemsetAsync(a[1].ptr, 0, (size_t)a[1].bytes, (cudaStream_t)s);
    if (e == 0 && a[0].count > 0)
        e = cuda__resize_grad(a[0].dtype, &p, a[0].ptr, a[1].ptr, s);
    return cuda__finish(device, launch, e);
}
