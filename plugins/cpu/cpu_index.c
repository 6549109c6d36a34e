/*
 * Indexing and scan kernels next to Gather's: GatherElements, ScatterElements, OneHot, Trilu,
 * CumSum and Hardmax. The host normalized their axes and read their shape-like inputs (CumSum's
 * axis, OneHot's depth, Trilu's k) into attributes; shapes are still checked here, and every
 * index against the dimension it indexes, because a wrong one would touch bytes outside a
 * tensor. GatherElements, ScatterElements, Trilu and OneHot only move elements, so they work on
 * any dtype by element size; the arithmetic (ScatterElements' reductions, CumSum, Hardmax) is
 * typed. They run on the calling thread: none is on a hot path of the models that use them.
 */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"

/* The row-major strides of @p t, in elements. */
static void cpu__index_strides(const cpu__tensor_t *t, int64_t *strides) {
    int64_t s = 1;
    for (uint32_t d = t->rank; d-- > 0;) {
        strides[d] = s;
        s *= t->dims[d];
    }
}

/*
 * GatherElements' and ScatterElements' checks: @p indices of @p data's rank, no larger along
 * any dimension but the axis, and every index in [-dim, dim) of the axis. @p shaped (the output
 * or the updates, named @p shaped_name) must have the indices' shape. Stores the axis.
 */
static int32_t cpu__check_elements(const cpu__call_t *call, const cpu__tensor_t *data,
                                   const cpu__tensor_t *indices, const cpu__tensor_t *shaped,
                                   const char *shaped_name, uint32_t *out_axis) {
    int64_t axis = 0;
    int32_t st;
    char a[96], b[96], o[96];

    if ((st = cpu__check_rank(call, "input 0 (data)", data)) != SES_DRV_OK)
        return st;
    if ((st = cpu__attr_int(call, "axis", 1, 0, &axis)) != SES_DRV_OK)
        return st;
    int ok = axis >= 0 && axis < (int64_t)data->rank && indices->rank == data->rank &&
             cpu__same_shape(indices, shaped);
    for (uint32_t d = 0; ok && d < data->rank; d++)
        ok = (int64_t)d == axis || indices->dims[d] <= data->dims[d];
    if (!ok)
        return cpu__call_fail(
            call, SES_DRV_INVALID_ARGUMENT,
            "data %s, indices %s, %s %s and axis %" PRId64
            " do not fit: indices must have data's rank, no dimension larger "
            "than data's but along the axis, and the shape of the %s",
            cpu__format_dims(data->dims, data->rank, a, sizeof a),
            cpu__format_dims(indices->dims, indices->rank, b, sizeof b), shaped_name,
            cpu__format_dims(shaped->dims, shaped->rank, o, sizeof o), axis, shaped_name);
    const int64_t dim = data->dims[axis];
    for (uint64_t q = 0; q < indices->count; q++) {
        int64_t idx = cpu__index_at(indices, q);
        if (idx < -dim || idx >= dim)
            return cpu__call_fail(
                call, SES_DRV_INVALID_ARGUMENT,
                "index %" PRId64 " (element %" PRIu64
                " of the indices) is out of range for axis %" PRId64 " of size %" PRId64
                " (data is %s); valid are %" PRId64 " to %" PRId64,
                idx, q, axis, dim, cpu__format_dims(data->dims, data->rank, a, sizeof a), -dim,
                dim - 1);
    }
    *out_axis = (uint32_t)axis;
    return SES_DRV_OK;
}

/* The element of data that element @p q of the indices names, as an element offset. */
static int64_t cpu__element_offset(const cpu__tensor_t *data, const cpu__tensor_t *indices,
                                   const int64_t *data_strides, uint32_t axis, uint64_t q) {
    int64_t offset = 0, rest = (int64_t)q;
    for (uint32_t d = indices->rank; d-- > 0;) {
        int64_t coord = rest % indices->dims[d];
        rest /= indices->dims[d];
        if (d == axis) {
            coord = cpu__index_at(indices, q);
            if (coord < 0)
                coord += data->dims[d];
        }
        offset += coord * data_strides[d];
    }
    return offset;
}

int32_t cpu__gather_elements(const cpu__call_t *call) {
    const cpu__tensor_t *data = &call->in[0], *indices = &call->in[1], *out = &call->out;
    int64_t strides[CPU__MAX_RANK];
    uint32_t axis = 0;
    int32_t st;

    if ((st = cpu__check_elements(call, data, indices, out, "output", &axis)) != SES_DRV_OK)
        return st;
    cpu__index_strides(data, strides);
    for (uint64_t q = 0; q < out->count; q++)
        memcpy(out->data + q * out->esize,
               data->data + cpu__element_offset(data, indices, strides, axis, q) * data->esize,
               out->esize);
    return SES_DRV_OK;
}

/* dst = dst (reduction) src for one element of type T. */
#define CPU__SCATTER_APPLY(T)                   \
    do {                                        \
        T x_, y_;                               \
        memcpy(&x_, dst, sizeof x_);            \
        memcpy(&y_, src, sizeof y_);            \
        switch (reduction) {                    \
        case 1: x_ = (T)(x_ + y_); break;       \
        case 2: x_ = (T)(x_ * y_); break;       \
        case 3: x_ = y_ > x_ ? y_ : x_; break;  \
        default: x_ = y_ < x_ ? y_ : x_; break; \
        }                                       \
        memcpy(dst, &x_, sizeof x_);            \
    } while (0)

/* Applies ScatterElements' @p reduction (1 add, 2 mul, 3 max, 4 min) of @p src to @p dst.
 * The caller refused the dtypes without arithmetic here (f16, bf16, bool). */
static void cpu__scatter_reduce(uint32_t dtype, int64_t reduction, unsigned char *dst,
                                const unsigned char *src) {
    switch (dtype) {
    case SES_DRV_DTYPE_F32: CPU__SCATTER_APPLY(float); break;
    case SES_DRV_DTYPE_F64: CPU__SCATTER_APPLY(double); break;
    case SES_DRV_DTYPE_I8: CPU__SCATTER_APPLY(int8_t); break;
    case SES_DRV_DTYPE_I16: CPU__SCATTER_APPLY(int16_t); break;
    case SES_DRV_DTYPE_I32: CPU__SCATTER_APPLY(int32_t); break;
    case SES_DRV_DTYPE_I64: CPU__SCATTER_APPLY(int64_t); break;
    case SES_DRV_DTYPE_U8: CPU__SCATTER_APPLY(uint8_t); break;
    case SES_DRV_DTYPE_U16: CPU__SCATTER_APPLY(uint16_t); break;
    case SES_DRV_DTYPE_U32: CPU__SCATTER_APPLY(uint32_t); break;
    case SES_DRV_DTYPE_U64: CPU__SCATTER_APPLY(uint64_t); break;
    default: break;
    }
}

/*
 * What ScatterElements and ScatterND do first: the output has data's shape, reduction is 0 (none),
 * 1 (add), 2 (mul), 3 (max) or 4 (min), one with arithmetic only where this driver has it (f16,
 * bf16 and bool have none here; the host refuses reductions on bool), and the output starts as a
 * copy of data.
 */
static int32_t cpu__scatter_start(const cpu__call_t *call, const cpu__tensor_t *data,
                                  const cpu__tensor_t *out, int64_t reduction) {
    char a[96], o[96];

    if (!cpu__same_shape(data, out))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "output is %s but data is %s; they must match",
                              cpu__format_dims(out->dims, out->rank, o, sizeof o),
                              cpu__format_dims(data->dims, data->rank, a, sizeof a));
    if (reduction < 0 || reduction > 4)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute reduction is %" PRId64
                              "; expected 0 (none), 1 (add), 2 (mul), 3 (max) or 4 (min)",
                              reduction);
    if (reduction && (data->dtype == SES_DRV_DTYPE_F16 || data->dtype == SES_DRV_DTYPE_BF16 ||
                      data->dtype == SES_DRV_DTYPE_BOOL))
        return cpu__call_fail(call, SES_DRV_UNIMPLEMENTED,
                              "reduction %" PRId64 " on %s is not implemented", reduction,
                              cpu__dtype_label(data->dtype));
    if (out->count)
        memcpy(out->data, data->data, (size_t)(out->count * out->esize));
    return SES_DRV_OK;
}

int32_t cpu__scatter_elements(const cpu__call_t *call) {
    const cpu__tensor_t *data = &call->in[0], *indices = &call->in[1], *updates = &call->in[2];
    const cpu__tensor_t *out = &call->out;
    int64_t strides[CPU__MAX_RANK], reduction = 0;
    uint32_t axis = 0;
    int32_t st;

    if ((st = cpu__check_elements(call, data, indices, updates, "updates", &axis)) != SES_DRV_OK)
        return st;
    if ((st = cpu__attr_int(call, "reduction", 1, 0, &reduction)) != SES_DRV_OK)
        return st;
    if ((st = cpu__scatter_start(call, data, out, reduction)) != SES_DRV_OK)
        return st;
    cpu__index_strides(data, strides);
    for (uint64_t q = 0; q < updates->count; q++) {
        unsigned char *dst =
            out->data + cpu__element_offset(data, indices, strides, axis, q) * out->esize;
        const unsigned char *src = updates->data + q * updates->esize;
        if (reduction == 0)
            memcpy(dst, src, out->esize);
        else
            cpu__scatter_reduce(data->dtype, reduction, dst, src);
    }
    return SES_DRV_OK;
}

/* Index @p q of OneHot's indices (f32, f64, i32 or i64), truncated toward zero as ONNX casts
 * them; a value beyond int64 comes back as -1 - depth's bound, out of range. */
static int64_t cpu__one_hot_index(const cpu__tensor_t *t, uint64_t q) {
    double v;
    if (t->dtype == SES_DRV_DTYPE_F32)
        v = ((const float *)(const void *)t->data)[q];
    else if (t->dtype == SES_DRV_DTYPE_F64)
        v = ((const double *)(const void *)t->data)[q];
    else
        return cpu__index_at(t, q);
    return v > -9.0e18 && v < 9.0e18 ? (int64_t)v : INT64_MIN;
}

int32_t cpu__one_hot(const cpu__call_t *call) {
    const cpu__tensor_t *indices = &call->in[0], *values = &call->in[1], *out = &call->out;
    int64_t axis = 0, depth = 0;
    int32_t st;
    char a[96], o[96];

    if ((st = cpu__attr_int(call, "axis", 1, 0, &axis)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "depth", 0, 0, &depth)) != SES_DRV_OK)
        return st;
    int ok = values->count == 2 && out->rank == indices->rank + 1 && axis >= 0 &&
             axis < (int64_t)out->rank && out->dims[axis] == depth;
    for (uint32_t d = 0; ok && d < out->rank; d++)
        ok = (int64_t)d == axis || out->dims[d] == indices->dims[(int64_t)d < axis ? d : d - 1];
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "output %s is not indices %s with depth %" PRId64
                              " inserted at axis %" PRId64 ", or values has %" PRIu64
                              " elements, not 2",
                              cpu__format_dims(out->dims, out->rank, o, sizeof o),
                              cpu__format_dims(indices->dims, indices->rank, a, sizeof a), depth,
                              axis, values->count);
    const size_t es = out->esize;
    for (uint64_t e = 0; e < out->count; e++)
        memcpy(out->data + e * es, values->data, es);
    /* Output [before, depth, after]: index q of the indices is (before, after) = (q / after,
     * q % after). Indices outside [-depth, depth) leave their row off. */
    uint64_t after = 1;
    for (uint32_t d = (uint32_t)axis + 1; d < out->rank; d++)
        after *= (uint64_t)out->dims[d];
    for (uint64_t q = 0; q < indices->count; q++) {
        int64_t k = cpu__one_hot_index(indices, q);
        if (k < -depth || k >= depth)
            continue;
        if (k < 0)
            k += depth;
        uint64_t e = (q / after * (uint64_t)depth + (uint64_t)k) * after + q % after;
        memcpy(out->data + e * es, values->data + es, es);
    }
    return SES_DRV_OK;
}

int32_t cpu__trilu(const cpu__call_t *call) {
    const cpu__tensor_t *in = &call->in[0], *out = &call->out;
    int64_t upper = 1, k = 0;
    int32_t st;
    char a[96], o[96];

    if ((st = cpu__attr_int(call, "upper", 1, 1, &upper)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "k", 1, 0, &k)) != SES_DRV_OK)
        return st;
    if (in->rank < 2 || !cpu__same_shape(in, out))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "input %s and output %s must have one shape, of rank 2 or more",
                              cpu__format_dims(in->dims, in->rank, a, sizeof a),
                              cpu__format_dims(out->dims, out->rank, o, sizeof o));
    const uint64_t rows = (uint64_t)in->dims[in->rank - 2], cols = (uint64_t)in->dims[in->rank - 1];
    const size_t es = out->esize;
    /* Element (i, j) of each matrix stays when j - i >= k (upper) or j - i <= k (lower); the
     * others become zero, all-zero bytes in every dtype. */
    for (uint64_t e = 0; e < out->count; e++) {
        int64_t j = (int64_t)(e % cols), i = (int64_t)(e / cols % rows);
        int keep = upper ? j - i >= k : j - i <= k;
        if (keep)
            memcpy(out->data + e * es, in->data + e * es, es);
        else
            memset(out->data + e * es, 0, es);
    }
    return SES_DRV_OK;
}

/* The layout of a scan or Hardmax along @p axis of @p t: before, the axis, after. */
static void cpu__axis_layout(const cpu__tensor_t *t, uint32_t axis, uint64_t *before, uint64_t *dim,
                             uint64_t *after) {
    *before = *after = 1;
    for (uint32_t d = 0; d < axis; d++)
        *before *= (uint64_t)t->dims[d];
    *dim = (uint64_t)t->dims[axis];
    for (uint32_t d = axis + 1; d < t->rank; d++)
        *after *= (uint64_t)t->dims[d];
}

/* The checks CumSum and Hardmax share: one shape in and out, attribute axis in range. */
static int32_t cpu__check_axis_op(const cpu__call_t *call, uint32_t *out_axis) {
    const cpu__tensor_t *in = &call->in[0], *out = &call->out;
    int64_t axis = 0;
    int32_t st;
    char a[96], o[96];

    if ((st = cpu__attr_int(call, "axis", 1, 0, &axis)) != SES_DRV_OK)
        return st;
    if (!cpu__same_shape(in, out) || axis < 0 || axis >= (int64_t)in->rank)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "input %s and output %s must have one shape, and axis %" PRId64
                              " must be in [0, rank)",
                              cpu__format_dims(in->dims, in->rank, a, sizeof a),
                              cpu__format_dims(out->dims, out->rank, o, sizeof o), axis);
    *out_axis = (uint32_t)axis;
    return SES_DRV_OK;
}

#define CPU__CUMSUM(T)                                                                     \
    do {                                                                                   \
        const T *x_ = (const T *)(const void *)in->data;                                   \
        T *y_ = (T *)(void *)out->data;                                                    \
        for (uint64_t b = 0; b < before; b++)                                              \
            for (uint64_t c = 0; c < after; c++) {                                         \
                T sum = 0;                                                                 \
                for (uint64_t n = 0; n < dim; n++) {                                       \
                    uint64_t m = reverse ? dim - 1 - n : n, e = (b * dim + m) * after + c; \
                    T v = x_[e];                                                           \
                    if (!exclusive)                                                        \
                        sum = (T)(sum + v);                                                \
                    y_[e] = sum;                                                           \
                    if (exclusive)                                                         \
                        sum = (T)(sum + v);                                                \
                }                                                                          \
            }                                                                              \
    } while (0)

int32_t cpu__cumsum(const cpu__call_t *call) {
    const cpu__tensor_t *in = &call->in[0], *out = &call->out;
    int64_t exclusive = 0, reverse = 0;
    uint64_t before, dim, after;
    uint32_t axis = 0;
    int32_t st;

    if ((st = cpu__check_axis_op(call, &axis)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "exclusive", 1, 0, &exclusive)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "reverse", 1, 0, &reverse)) != SES_DRV_OK)
        return st;
    cpu__axis_layout(in, axis, &before, &dim, &after);
    switch (out->dtype) {
    case SES_DRV_DTYPE_F32: CPU__CUMSUM(float); break;
    case SES_DRV_DTYPE_F64: CPU__CUMSUM(double); break;
    case SES_DRV_DTYPE_I32: CPU__CUMSUM(int32_t); break;
    case SES_DRV_DTYPE_I64: CPU__CUMSUM(int64_t); break;
    default:
        return cpu__call_fail(call, SES_DRV_UNIMPLEMENTED, "CumSum of %s is not implemented",
                              cpu__dtype_label(out->dtype));
    }
    return SES_DRV_OK;
}

/* 1 at the first largest element along the axis, 0 elsewhere; NaN is never the largest. */
#define CPU__HARDMAX(T)                                                                   \
    do {                                                                                  \
        const T *x_ = (const T *)(const void *)in->data;                                  \
        T *y_ = (T *)(void *)out->data;                                                   \
        for (uint64_t b = 0; b < before; b++)                                             \
            for (uint64_t c = 0; c < after; c++) {                                        \
                uint64_t best = 0;                                                        \
                for (uint64_t n = 1; n < dim; n++)                                        \
                    if (x_[(b * dim + n) * after + c] > x_[(b * dim + best) * after + c]) \
                        best = n;                                                         \
                for (uint64_t n = 0; n < dim; n++)                                        \
                    y_[(b * dim + n) * after + c] = n == best ? (T)1 : (T)0;              \
            }                                                                             \
    } while (0)

int32_t cpu__hardmax(const cpu__call_t *call) {
    const cpu__tensor_t *in = &call->in[0], *out = &call->out;
    uint64_t before, dim, after;
    uint32_t axis = 0;
    int32_t st;

    if ((st = cpu__check_axis_op(call, &axis)) != SES_DRV_OK)
        return st;
    cpu__axis_layout(in, axis, &before, &dim, &after);
    if (out->dtype == SES_DRV_DTYPE_F64)
        CPU__HARDMAX(double);
    else
        CPU__HARDMAX(float);
    return SES_DRV_OK;
}

/*
 * GatherND's and ScatterND's checks: indices [..., m] naming blocks data[batch, i_0, ...,
 * i_{m-1}, :] after batch_dims leading dims shared by data and indices; @p shaped (GatherND's
 * output, ScatterND's updates) is indices.shape[:-1] + data.shape[batch_dims + m:]. Every index
 * must lie in [-dim, dim). Stores m, the number of blocks per batch (tuples), the batches and the
 * block's elements.
 */
typedef struct cpu__nd {
    int64_t m, batch_dims;
    uint64_t batches, tuples, block, batch_stride;
    int64_t strides[CPU__MAX_RANK];
} cpu__nd_t;

static int32_t cpu__check_nd(const cpu__call_t *call, const cpu__tensor_t *data,
                             const cpu__tensor_t *indices, const cpu__tensor_t *shaped,
                             const char *shaped_name, int64_t batch_dims, cpu__nd_t *nd) {
    int32_t st;
    char a[96], b[96], o[96];

    if ((st = cpu__check_rank(call, "input 0 (data)", data)) != SES_DRV_OK ||
        (st = cpu__check_rank(call, "input 1 (indices)", indices)) != SES_DRV_OK)
        return st;
    const int64_t m = indices->rank ? indices->dims[indices->rank - 1] : 0;
    int ok = indices->rank >= 1 && batch_dims >= 0 && batch_dims < (int64_t)indices->rank &&
             m >= 1 && batch_dims + m <= (int64_t)data->rank &&
             shaped->rank == indices->rank - 1 + data->rank - (uint32_t)(batch_dims + m);
    for (int64_t d = 0; ok && d < batch_dims; d++)
        ok = indices->dims[d] == data->dims[d];
    for (uint32_t d = 0; ok && d < shaped->rank; d++)
        ok = shaped->dims[d] == (d + 1 < indices->rank
                                     ? indices->dims[d]
                                     : data->dims[d - (indices->rank - 1) + batch_dims + m]);
    if (!ok)
        return cpu__call_fail(
            call, SES_DRV_INVALID_ARGUMENT,
            "data %s, indices %s, %s %s and batch_dims %" PRId64
            " do not fit: %s must be indices.shape[:-1] + "
            "data.shape[batch_dims + indices.shape[-1]:]",
            cpu__format_dims(data->dims, data->rank, a, sizeof a),
            cpu__format_dims(indices->dims, indices->rank, b, sizeof b), shaped_name,
            cpu__format_dims(shaped->dims, shaped->rank, o, sizeof o), batch_dims, shaped_name);
    for (uint64_t q = 0; q < indices->count; q++) {
        const int64_t dim = data->dims[batch_dims + (int64_t)(q % (uint64_t)m)];
        const int64_t idx = cpu__index_at(indices, q);
        if (idx < -dim || idx >= dim)
            return cpu__call_fail(
                call, SES_DRV_INVALID_ARGUMENT,
                "index %" PRId64 " (element %" PRIu64
                " of the indices) is out of range for axis %" PRId64 " of size %" PRId64
                " (data is %s); valid are %" PRId64 " to %" PRId64,
                idx, q, batch_dims + (int64_t)(q % (uint64_t)m), dim,
                cpu__format_dims(data->dims, data->rank, a, sizeof a), -dim, dim - 1);
    }
    nd->m = m;
    nd->batch_dims = batch_dims;
    nd->batches = nd->block = nd->batch_stride = 1;
    for (int64_t d = 0; d < batch_dims; d++)
        nd->batches *= (uint64_t)data->dims[d];
    for (uint32_t d = (uint32_t)batch_dims; d < data->rank; d++)
        nd->batch_stride *= (uint64_t)data->dims[d];
    for (uint32_t d = (uint32_t)(batch_dims + m); d < data->rank; d++)
        nd->block *= (uint64_t)data->dims[d];
    nd->tuples = (indices->count / (uint64_t)m) / (nd->batches ? nd->batches : 1);
    cpu__index_strides(data, nd->strides);
    return SES_DRV_OK;
}

/* The first element of the block that index tuple @p t names, as an element offset. */
static uint64_t cpu__nd_offset(const cpu__nd_t *nd, const cpu__tensor_t *data,
                               const cpu__tensor_t *indices, uint64_t t) {
    uint64_t offset = (nd->tuples ? t / nd->tuples : 0) * nd->batch_stride;
    for (int64_t k = 0; k < nd->m; k++) {
        const int64_t d = nd->batch_dims + k;
        int64_t idx = cpu__index_at(indices, t * (uint64_t)nd->m + (uint64_t)k);
        if (idx < 0)
            idx += data->dims[d];
        offset += (uint64_t)idx * (uint64_t)nd->strides[d];
    }
    return offset;
}

int32_t cpu__gather_nd(const cpu__call_t *call) {
    const cpu__tensor_t *data = &call->in[0], *indices = &call->in[1], *out = &call->out;
    int64_t batch_dims = 0;
    cpu__nd_t nd;
    int32_t st;

    if ((st = cpu__attr_int(call, "batch_dims", 1, 0, &batch_dims)) != SES_DRV_OK ||
        (st = cpu__check_nd(call, data, indices, out, "output", batch_dims, &nd)) != SES_DRV_OK)
        return st;
    if (out->count == 0)
        return SES_DRV_OK;
    const size_t bytes = (size_t)nd.block * out->esize;
    for (uint64_t t = 0; t < nd.batches * nd.tuples; t++)
        memcpy(out->data + t * bytes,
               data->data + cpu__nd_offset(&nd, data, indices, t) * data->esize, bytes);
    return SES_DRV_OK;
}

int32_t cpu__scatter_nd(const cpu__call_t *call) {
    const cpu__tensor_t *data = &call->in[0], *indices = &call->in[1], *updates = &call->in[2];
    const cpu__tensor_t *out = &call->out;
    int64_t reduction = 0;
    cpu__nd_t nd;
    int32_t st;

    if ((st = cpu__attr_int(call, "reduction", 1, 0, &reduction)) != SES_DRV_OK ||
        (st = cpu__check_nd(call, data, indices, updates, "updates", 0, &nd)) != SES_DRV_OK)
        return st;
    if ((st = cpu__scatter_start(call, data, out, reduction)) != SES_DRV_OK)
        return st;
    const size_t es = out->esize;
    for (uint64_t t = 0; t < nd.batches * nd.tuples && updates->count; t++) {
        unsigned char *dst = out->data + cpu__nd_offset(&nd, data, indices, t) * es;
        const unsigned char *src = updates->data + t * nd.block * es;
        if (reduction == 0)
            memcpy(dst, src, (size_t)nd.block * es);
        else
            for (uint64_t e = 0; e < nd.block; e++)
                cpu__scatter_reduce(data->dtype, reduction, dst + e * es, src + e * es);
    }
    return SES_DRV_OK;
}
