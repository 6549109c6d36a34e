/*
 * Pad and PadGrad, Clip, Split, Shape, ConstantOfShape and Range.
 */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Pad and PadGrad
 * ------------------------------------------------------------------------------------------- */

/* Where output coordinate @p o of a padded axis reads from: an input index, or -1 (the
 * constant). */
static int64_t cpu__pad_source(int64_t o, int64_t begin, int64_t dim, int64_t mode) {
    int64_t i = o - begin;
    if (i >= 0 && i < dim)
        return i;
    if (mode == 0 || dim == 0)
        return -1;
    if (mode == 2) /* edge */
        return i < 0 ? 0 : dim - 1;
    /* reflect, without repeating the edge; pads are smaller than dim, so one bounce is enough */
    if (dim == 1)
        return 0;
    if (i < 0)
        i = -i;
    if (i >= dim)
        i = 2 * (dim - 1) - i;
    return i < 0 ? 0 : i >= dim ? dim - 1 : i;
}

/* Checks pads and mode for input @p x padded into @p y; fills @p begin. */
static int32_t cpu__pad_check(const cpu__call_t *call, const cpu__tensor_t *x,
                              const cpu__tensor_t *y, int64_t *begin, int64_t *mode) {
    int64_t pads[2 * CPU__MAX_RANK];
    uint32_t np = 0;
    char a[96], b[96], c[96];
    int32_t st;

    if ((st = cpu__check_rank(call, "input 0", x)) != SES_DRV_OK ||
        (st = cpu__attr_ints(call, "pads", pads, 2 * CPU__MAX_RANK, &np)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "mode", 1, 0, mode)) != SES_DRV_OK)
        return st;
    int ok = np == 2 * x->rank && y->rank == x->rank && *mode >= 0 && *mode <= 2;
    for (uint32_t d = 0; ok && d < x->rank; d++) {
        begin[d] = pads[d];
        ok = x->dims[d] + pads[d] + pads[x->rank + d] == y->dims[d] &&
             (*mode != 1 || x->dims[d] > 0 || y->dims[d] == 0);
    }
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "pads %s (mode %" PRId64 ") do not take %s to %s",
                              cpu__format_dims(pads, np, a, sizeof a), *mode,
                              cpu__format_dims(x->dims, x->rank, b, sizeof b),
                              cpu__format_dims(y->dims, y->rank, c, sizeof c));
    return SES_DRV_OK;
}

/*
 * Walks every element of the padded tensor @p y: @p fn gets its flat index and the flat index
 * of the element of @p x it reads (-1 for the constant). Rows along the last axis share the
 * leading axes' mapping.
 */
typedef void (*cpu__pad_fn)(void *ctx, int64_t out_index, int64_t in_index);

static void cpu__pad_walk(const cpu__tensor_t *x, const cpu__tensor_t *y, const int64_t *begin,
                          int64_t mode, cpu__pad_fn fn, void *ctx) {
    const uint32_t r = y->rank;
    int64_t o[CPU__MAX_RANK] = {0};
    int64_t index = 0;

    if (y->count == 0)
        return;
    if (r == 0) {
        fn(ctx, 0, 0);
        return;
    }
    do {
        int64_t off = 0, valid = 1;
        for (uint32_t d = 0; d + 1 < r; d++) {
            const int64_t s = cpu__pad_source(o[d], begin[d], x->dims[d], mode);
            valid &= s >= 0;
            off = off * x->dims[d] + (s < 0 ? 0 : s);
        }
        const int64_t last = x->dims[r - 1];
        for (int64_t q = 0; q < y->dims[r - 1]; q++) {
            const int64_t s = valid ? cpu__pad_source(q, begin[r - 1], last, mode) : -1;
            fn(ctx, index++, s < 0 ? -1 : off * last + s);
        }
    } while (r > 1 && cpu__next(o, y->dims, r - 1));
}

typedef struct cpu__pad_ctx {
    const unsigned char *in;
    unsigned char *out;
    size_t esize;
    const unsigned char *fill; /* esize bytes */
    uint32_t dtype;
} cpu__pad_ctx_t;

static void cpu__pad_copy(void *ctx, int64_t out_index, int64_t in_index) {
    const cpu__pad_ctx_t *c = ctx;
    memcpy(c->out + (size_t)out_index * c->esize,
           in_index < 0 ? c->fill : c->in + (size_t)in_index * c->esize, c->esize);
}

/* PadGrad: out is dx (x's shape), in is dy; each dy element adds onto the x element it read. */
static void cpu__pad_add(void *ctx, int64_t dy_index, int64_t x_index) {
    const cpu__pad_ctx_t *c = ctx;
    if (x_index < 0)
        return;
    if (c->dtype == SES_DRV_DTYPE_F32)
        ((float *)(void *)c->out)[x_index] += ((const float *)(const void *)c->in)[dy_index];
    else
        ((double *)(void *)c->out)[x_index] += ((const double *)(const void *)c->in)[dy_index];
}

int32_t cpu__pad(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0];
    const cpu__tensor_t *y = &call->outs[0];
    unsigned char zero[16] = {0};
    int64_t begin[CPU__MAX_RANK], mode;
    int32_t st;

    if ((st = cpu__pad_check(call, x, y, begin, &mode)) != SES_DRV_OK)
        return st;
    if (call->n_in == 2 && call->in[1].count != 1)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "constant_value must hold one element");
    cpu__pad_ctx_t c = {x->data, y->data, x->esize, call->n_in == 2 ? call->in[1].data : zero,
                        x->dtype};
    cpu__pad_walk(x, y, begin, mode, cpu__pad_copy, &c);
    return SES_DRV_OK;
}

int32_t cpu__pad_grad(const cpu__call_t *call) {
    const cpu__tensor_t *dy = &call->in[0];
    const cpu__tensor_t *dx = &call->outs[0];
    int64_t begin[CPU__MAX_RANK], mode;
    int32_t st;

    if ((st = cpu__pad_check(call, dx, dy, begin, &mode)) != SES_DRV_OK)
        return st;
    cpu__zero(dx);
    cpu__pad_ctx_t c = {dy->data, dx->data, dy->esize, NULL, dy->dtype};
    cpu__pad_walk(dx, dy, begin, mode, cpu__pad_add, &c);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Clip, Split, Shape, ConstantOfShape, Range
 * ------------------------------------------------------------------------------------------- */

#define CPU__CLIP(T)                                                                        \
    do {                                                                                    \
        const T *in = (const T *)(const void *)x->data;                                     \
        T *out = (T *)(void *)y->data;                                                      \
        const T lo = has_min ? *(const T *)(const void *)call->in[1].data : (T)0;           \
        const T hi = has_max ? *(const T *)(const void *)call->in[1 + has_min].data : (T)0; \
        for (uint64_t q = 0; q < x->count; q++) {                                           \
            T v = in[q];                                                                    \
            if (has_min && v < lo)                                                          \
                v = lo;                                                                     \
            if (has_max && v > hi)                                                          \
                v = hi;                                                                     \
            out[q] = v;                                                                     \
        }                                                                                   \
    } while (0)

int32_t cpu__clip(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0];
    const cpu__tensor_t *y = &call->outs[0];
    int64_t has_min, has_max;
    int32_t st;

    if ((st = cpu__attr_int(call, "has_min", 1, 0, &has_min)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "has_max", 1, 0, &has_max)) != SES_DRV_OK)
        return st;
    has_min = has_min != 0;
    has_max = has_max != 0;
    int ok = (int64_t)call->n_in == 1 + has_min + has_max && cpu__same_shape(x, y);
    for (uint32_t i = 1; ok && i < call->n_in; i++)
        ok = call->in[i].count == 1;
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected the input, then one element per bound given (has_min "
                              "%" PRId64 ", has_max %" PRId64
                              "), and an output of the input's "
                              "shape; got %" PRIu32 " inputs",
                              has_min, has_max, call->n_in);
    switch (x->dtype) {
    case SES_DRV_DTYPE_F32: CPU__CLIP(float); break;
    case SES_DRV_DTYPE_F64: CPU__CLIP(double); break;
    case SES_DRV_DTYPE_I32: CPU__CLIP(int32_t); break;
    case SES_DRV_DTYPE_I64: CPU__CLIP(int64_t); break;
    case SES_DRV_DTYPE_I8: CPU__CLIP(int8_t); break;
    case SES_DRV_DTYPE_I16: CPU__CLIP(int16_t); break;
    case SES_DRV_DTYPE_U8: CPU__CLIP(uint8_t); break;
    case SES_DRV_DTYPE_U16: CPU__CLIP(uint16_t); break;
    case SES_DRV_DTYPE_U32: CPU__CLIP(uint32_t); break;
    case SES_DRV_DTYPE_U64: CPU__CLIP(uint64_t); break;
    default:
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s",
                              cpu__dtype_label(x->dtype));
    }
    return SES_DRV_OK;
}

int32_t cpu__split(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0];
    int64_t axis, total = 0;
    int32_t st;

    if ((st = cpu__attr_int(call, "axis", 0, 0, &axis)) != SES_DRV_OK)
        return st;
    int ok = axis >= 0 && axis < (int64_t)x->rank;
    for (uint32_t k = 0; ok && k < call->n_out; k++) {
        const cpu__tensor_t *o = &call->outs[k];
        ok = o->rank == x->rank;
        for (uint32_t d = 0; ok && d < x->rank; d++)
            ok = (int64_t)d == axis || o->dims[d] == x->dims[d];
        total += ok ? o->dims[axis] : 0;
    }
    if (!ok || total != x->dims[axis])
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "the outputs do not split the input along axis %" PRId64, axis);
    if (x->count == 0)
        return SES_DRV_OK;
    const int64_t outer = cpu__product(x->dims, (uint32_t)axis);
    const int64_t inner = (int64_t)x->count / (outer * x->dims[axis]);
    const size_t row = (size_t)(inner * (int64_t)x->esize);
    int64_t offset = 0;
    for (uint32_t k = 0; k < call->n_out; k++) {
        const int64_t size = call->outs[k].dims[axis];
        for (int64_t o = 0; o < outer && size; o++)
            memcpy(call->outs[k].data + (size_t)(o * size) * row,
                   x->data + (size_t)(o * x->dims[axis] + offset) * row, (size_t)size * row);
        offset += size;
    }
    return SES_DRV_OK;
}

int32_t cpu__shape(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0];
    const cpu__tensor_t *y = &call->outs[0];
    int64_t start, end;
    int32_t st;

    if ((st = cpu__attr_int(call, "start", 1, 0, &start)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "end", 1, (int64_t)x->rank, &end)) != SES_DRV_OK)
        return st;
    if (start < 0 || end < start || end > (int64_t)x->rank || y->rank != 1 ||
        y->dims[0] != end - start)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "start %" PRId64 " and end %" PRId64 " do not fit rank %" PRIu32
                              " and the output",
                              start, end, x->rank);
    for (int64_t d = start; d < end; d++)
        ((int64_t *)(void *)y->data)[d - start] = x->dims[d];
    return SES_DRV_OK;
}

int32_t cpu__size(const cpu__call_t *call) {
    const cpu__tensor_t *y = &call->outs[0];

    if (y->rank != 0 || y->dtype != SES_DRV_DTYPE_I64)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "the output must be an i64 scalar");
    ((int64_t *)(void *)y->data)[0] = (int64_t)call->in[0].count;
    return SES_DRV_OK;
}

int32_t cpu__constant_of_shape(const cpu__call_t *call) {
    const cpu__tensor_t *y = &call->outs[0];
    const int is_float = y->dtype == SES_DRV_DTYPE_F32 || y->dtype == SES_DRV_DTYPE_F64;
    double f = 0.0;
    int64_t i = 0;
    int32_t st;

    if (is_float)
        st = cpu__attr_float(call, "value", 0.0, &f);
    else
        st = cpu__attr_int(call, "value", 1, 0, &i);
    if (st != SES_DRV_OK)
        return st;
    for (uint64_t q = 0; q < y->count; q++) {
        switch (y->dtype) {
        case SES_DRV_DTYPE_F32: ((float *)(void *)y->data)[q] = (float)f; break;
        case SES_DRV_DTYPE_F64: ((double *)(void *)y->data)[q] = f; break;
        case SES_DRV_DTYPE_I32: ((int32_t *)(void *)y->data)[q] = (int32_t)i; break;
        case SES_DRV_DTYPE_I64: ((int64_t *)(void *)y->data)[q] = i; break;
        default: y->data[q] = i != 0; break;
        }
    }
    return SES_DRV_OK;
}

int32_t cpu__range(const cpu__call_t *call) {
    const cpu__tensor_t *y = &call->outs[0];
    const uint32_t dt = y->dtype;
    const int is_float = dt == SES_DRV_DTYPE_F32 || dt == SES_DRV_DTYPE_F64;
    double f[3];
    int64_t v[3];
    int64_t count;

    for (uint32_t k = 0; k < 3; k++) {
        if (call->in[k].count != 1)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "start, limit and delta must be scalars");
        const unsigned char *p = call->in[k].data;
        switch (dt) {
        case SES_DRV_DTYPE_F32: f[k] = *(const float *)(const void *)p; break;
        case SES_DRV_DTYPE_F64: f[k] = *(const double *)(const void *)p; break;
        case SES_DRV_DTYPE_I32:
            v[k] = *(const int32_t *)(const void *)p;
            f[k] = (double)v[k];
            break;
        default:
            v[k] = *(const int64_t *)(const void *)p;
            f[k] = (double)v[k];
            break;
        }
    }
    /* The host sized the output from the values it saw at compile time. */
    {
        double c = f[2] != 0.0 ? ceil((f[1] - f[0]) / f[2]) : -1.0;
        count = c > 0 && c < 9.0e15 ? (int64_t)c : 0;
    }
    if (f[2] == 0.0 || y->rank != 1 || y->dims[0] != count)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "start %g, limit %g, delta %g give %" PRId64
                              " elements, but the output holds %" PRIu64
                              " (did the values change since the plan was compiled?)",
                              f[0], f[1], f[2], count, y->count);
    for (int64_t q = 0; q < count; q++) {
        switch (dt) {
        case SES_DRV_DTYPE_F32:
            ((float *)(void *)y->data)[q] = (float)((float)f[0] + (float)q * (float)f[2]);
            break;
        case SES_DRV_DTYPE_F64: ((double *)(void *)y->data)[q] = f[0] + (double)q * f[2]; break;
        case SES_DRV_DTYPE_I32: ((int32_t *)(void *)y->data)[q] = (int32_t)(v[0] + q * v[2]); break;
        default: ((int64_t *)(void *)y->data)[q] = v[0] + q * v[2]; break;
        }
    }
    (void)is_float;
    return SES_DRV_OK;
}
