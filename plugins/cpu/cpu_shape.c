/*
 * Data movement kernels, at every dtype since only the element size matters: the copies
 * (Identity Reshape Flatten Squeeze Unsqueeze, whose shapes differ but whose bytes do not),
 * Transpose, Concat, Slice and Gather. Shape-like inputs (Reshape's shape, Slice's starts and
 * steps, ...) were resolved by the host into normalized attributes; they are still checked
 * here, because a wrong one would move bytes from outside the input.
 */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Copies
 * ------------------------------------------------------------------------------------------- */

int32_t cpu__copy(const cpu__call_t *call) {
    const cpu__tensor_t *in = &call->in[0];
    const cpu__tensor_t *out = &call->out;

    if (in->count != out->count)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "element counts differ: input has %" PRIu64 ", output has %" PRIu64,
                              in->count, out->count);
    /* In place (the planner may give the output the input's bytes) there is nothing to do;
     * memmove otherwise, since the two may still overlap within one arena. */
    if (out->count > 0 && out->data != in->data)
        memmove(out->data, in->data, (size_t)(out->count * out->esize));
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Strided copy rows: Transpose and Slice.
 * ------------------------------------------------------------------------------------------- */

#define CPU__GATHER_ROW(name, T)                                                       \
    static void name(void *out_, const void *const *in, const int64_t *step, size_t n, \
                     const void *params) {                                             \
        T *out = out_;                                                                 \
        const T *src = in[0];                                                          \
        const int64_t s = step[0];                                                     \
        (void)params;                                                                  \
        if (s == 1) {                                                                  \
            memcpy(out, src, n * sizeof(T));                                           \
            return;                                                                    \
        }                                                                              \
        for (size_t i = 0; i < n; i++)                                                 \
            out[i] = src[(int64_t)i * s];                                              \
    }

CPU__GATHER_ROW(cpu__strided_copy_1, uint8_t)
CPU__GATHER_ROW(cpu__strided_copy_2, uint16_t)
CPU__GATHER_ROW(cpu__strided_copy_4, uint32_t)
CPU__GATHER_ROW(cpu__strided_copy_8, uint64_t)

cpu__row_fn cpu__strided_copy_row(size_t esize) {
    switch (esize) {
    case 1: return cpu__strided_copy_1;
    case 2: return cpu__strided_copy_2;
    case 4: return cpu__strided_copy_4;
    case 8: return cpu__strided_copy_8;
    default: return NULL;
    }
}

/* Element strides of a dense row-major tensor. */
static void cpu__dense_strides(const cpu__tensor_t *t, int64_t *strides) {
    int64_t stride = 1;
    for (uint32_t d = t->rank; d-- > 0;) {
        strides[d] = stride;
        stride *= t->dims[d];
    }
}

/* ---------------------------------------------------------------------------------------------
 * Transpose
 * ------------------------------------------------------------------------------------------- */

/*
 * The common transposes (a matrix, the last two axes, NCHW <-> NHWC) merge into a batch of 2-D
 * transposes: out[b][r][c] = in[b][c][r]. Copying them element by element in output order
 * reads the input with a large stride, a cache miss per element; copying square tiles keeps
 * both sides in cache. The tiles are small: with a power-of-two stride every line of a tile
 * falls in one cache set, and a common 8-way set holds a tile of 8.
 */
#define CPU__TILE 8

typedef struct cpu__tile_job {
    const cpu__strided_t *s; /* merged: dims [batch..., rows, cols]; cols has the big stride */
    uint64_t row_tiles;      /* tiles per matrix along rows */
} cpu__tile_job_t;

#define CPU__TILE_COPY(name, T)                                                 \
    static void name(T *out, const T *in, int64_t cols, int64_t r0, int64_t r1, \
                     int64_t in_col_stride) {                                   \
        for (int64_t c0 = 0; c0 < cols; c0 += CPU__TILE) {                      \
            int64_t c1 = c0 + CPU__TILE < cols ? c0 + CPU__TILE : cols;         \
            for (int64_t c = c0; c < c1; c++)                                   \
                for (int64_t r = r0; r < r1; r++)                               \
                    out[r * cols + c] = in[r + c * in_col_stride];              \
        }                                                                       \
    }

CPU__TILE_COPY(cpu__tile_copy_1, uint8_t)
CPU__TILE_COPY(cpu__tile_copy_2, uint16_t)
CPU__TILE_COPY(cpu__tile_copy_4, uint32_t)
CPU__TILE_COPY(cpu__tile_copy_8, uint64_t)

/* Items are (matrix, band of CPU__TILE output rows). */
static void cpu__tile_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__tile_job_t *job = ctx;
    const cpu__strided_t *s = job->s;
    const uint32_t r_dim = s->rank - 2, c_dim = s->rank - 1;
    const int64_t rows = s->dims[r_dim], cols = s->dims[c_dim];
    const size_t es = s->out_esize;

    for (uint64_t item = begin; item < end; item++) {
        uint64_t matrix = item / job->row_tiles, band = item % job->row_tiles;
        /* The matrix's input offset, from its index over the batch dims. */
        int64_t off = 0;
        uint64_t rest = matrix;
        for (uint32_t d = r_dim; d-- > 0;) {
            off += (int64_t)(rest % (uint64_t)s->dims[d]) * s->stride[0][d];
            rest /= (uint64_t)s->dims[d];
        }
        const unsigned char *in = s->base[0] + off * (int64_t)es;
        unsigned char *out = s->out + (size_t)(matrix * (uint64_t)(rows * cols)) * es;
        int64_t r0 = (int64_t)band * CPU__TILE;
        int64_t r1 = r0 + CPU__TILE < rows ? r0 + CPU__TILE : rows;
        int64_t stride = s->stride[0][c_dim];
        switch (es) {
        case 1: cpu__tile_copy_1((uint8_t *)out, in, cols, r0, r1, stride); break;
        case 2:
            cpu__tile_copy_2((uint16_t *)(void *)out, (const uint16_t *)(const void *)in, cols, r0,
                             r1, stride);
            break;
        case 4:
            cpu__tile_copy_4((uint32_t *)(void *)out, (const uint32_t *)(const void *)in, cols, r0,
                             r1, stride);
            break;
        default:
            cpu__tile_copy_8((uint64_t *)(void *)out, (const uint64_t *)(const void *)in, cols, r0,
                             r1, stride);
            break;
        }
    }
}

int32_t cpu__transpose(const cpu__call_t *call) {
    const cpu__tensor_t *in = &call->in[0];
    const cpu__tensor_t *out = &call->out;
    int64_t perm[CPU__MAX_RANK], in_strides[CPU__MAX_RANK];
    uint32_t n_perm = 0;
    int32_t st;
    char a[96], b[96], p[96];

    if ((st = cpu__check_rank(call, "input 0", in)) != SES_DRV_OK)
        return st;
    if ((st = cpu__attr_ints(call, "perm", perm, CPU__MAX_RANK, &n_perm)) != SES_DRV_OK)
        return st;
    /* A permutation of 0 .. rank-1: each value in range, none twice. */
    uint32_t seen = 0;
    int ok = n_perm == in->rank;
    for (uint32_t d = 0; ok && d < n_perm; d++) {
        if (perm[d] < 0 || perm[d] >= (int64_t)in->rank || (seen & (1u << perm[d])))
            ok = 0;
        else
            seen |= 1u << perm[d];
    }
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute perm %s is not a permutation of the input's %" PRIu32
                              " axes (input is %s)",
                              cpu__format_dims(perm, n_perm, p, sizeof p), in->rank,
                              cpu__format_dims(in->dims, in->rank, a, sizeof a));
    ok = out->rank == in->rank;
    for (uint32_t d = 0; ok && d < out->rank; d++)
        if (out->dims[d] != in->dims[perm[d]])
            ok = 0;
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "output is %s, but input %s permuted by %s is not",
                              cpu__format_dims(out->dims, out->rank, b, sizeof b),
                              cpu__format_dims(in->dims, in->rank, a, sizeof a),
                              cpu__format_dims(perm, n_perm, p, sizeof p));
    if (out->count == 0)
        return SES_DRV_OK;

    cpu__strided_t s;
    memset(&s, 0, sizeof s);
    cpu__dense_strides(in, in_strides);
    s.rank = out->rank;
    s.n_in = 1;
    for (uint32_t d = 0; d < out->rank; d++) {
        s.dims[d] = out->dims[d];
        s.stride[0][d] = in_strides[perm[d]];
    }
    s.base[0] = in->data;
    s.esize[0] = in->esize;
    s.out = out->data;
    s.out_esize = out->esize;
    s.count = out->count;
    cpu__strided_merge(&s);
    /* A batch of 2-D transposes: the next-to-last output dim walks the input contiguously,
     * the last one does not. Worth tiling once the matrices are larger than a tile. */
    if (s.rank >= 2 && s.stride[0][s.rank - 2] == 1 && s.stride[0][s.rank - 1] > 1 &&
        s.dims[s.rank - 1] > CPU__TILE && s.dims[s.rank - 2] > CPU__TILE) {
        uint64_t rows = (uint64_t)s.dims[s.rank - 2];
        cpu__tile_job_t job = {&s, (rows + CPU__TILE - 1) / CPU__TILE};
        uint64_t matrices = s.count / (rows * (uint64_t)s.dims[s.rank - 1]);
        cpu__parallel(call, matrices * job.row_tiles, CPU__TILE * (uint64_t)s.dims[s.rank - 1],
                      cpu__tile_task, &job);
        return SES_DRV_OK;
    }
    cpu__strided_parallel(call, &s, cpu__strided_copy_row(out->esize), NULL, 1);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Slice
 * ------------------------------------------------------------------------------------------- */

/*
 * Whether taking @p n elements from @p start by @p step stays inside [0, @p dim). Written with
 * divisions so that no product can overflow.
 */
int cpu__slice_fits(int64_t dim, int64_t start, int64_t step, int64_t n) {
    if (n == 0)
        return 1;
    if (start < 0 || start >= dim)
        return 0;
    if (n == 1)
        return 1;
    if (step > 0)
        return n - 1 <= (dim - 1 - start) / step;
    if (step == INT64_MIN)
        return 0;
    return n - 1 <= start / -step;
}

int32_t cpu__check_slice(const cpu__call_t *call, const cpu__tensor_t *whole,
                         const char *whole_rank_name, const cpu__tensor_t *part,
                         const char *axis_owner, const cpu__tensor_t *first,
                         const char *first_name, const cpu__tensor_t *second,
                         const char *second_name, int64_t *starts, int64_t *steps) {
    uint32_t n_starts = 0, n_steps = 0;
    int32_t st;
    char a[96], o[96], x[96], y[96];

    if ((st = cpu__check_rank(call, whole_rank_name, whole)) != SES_DRV_OK)
        return st;
    if ((st = cpu__attr_ints(call, "starts", starts, CPU__MAX_RANK, &n_starts)) != SES_DRV_OK)
        return st;
    if ((st = cpu__attr_ints(call, "steps", steps, CPU__MAX_RANK, &n_steps)) != SES_DRV_OK)
        return st;
    if (n_starts != whole->rank || n_steps != whole->rank || part->rank != whole->rank)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected one start and step per %s axis: %s is %s, %s is %s, "
                              "starts %s, steps %s",
                              axis_owner, first_name,
                              cpu__format_dims(first->dims, first->rank, a, sizeof a),
                              second_name,
                              cpu__format_dims(second->dims, second->rank, o, sizeof o),
                              cpu__format_dims(starts, n_starts, x, sizeof x),
                              cpu__format_dims(steps, n_steps, y, sizeof y));
    for (uint32_t d = 0; d < whole->rank; d++)
        if (steps[d] == 0 ||
            !cpu__slice_fits(whole->dims[d], starts[d], steps[d], part->dims[d]))
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "axis %" PRIu32 ": %" PRId64 " elements from %" PRId64
                                  " by step %" PRId64 " do not fit in dim %" PRId64
                                  " (%s is %s, %s is %s)",
                                  d, part->dims[d], starts[d], steps[d], whole->dims[d],
                                  first_name,
                                  cpu__format_dims(first->dims, first->rank, a, sizeof a),
                                  second_name,
                                  cpu__format_dims(second->dims, second->rank, o, sizeof o));
    return SES_DRV_OK;
}

int32_t cpu__slice(const cpu__call_t *call) {
    const cpu__tensor_t *in = &call->in[0];
    const cpu__tensor_t *out = &call->out;
    int64_t starts[CPU__MAX_RANK], steps[CPU__MAX_RANK], in_strides[CPU__MAX_RANK];
    int32_t st;

    if ((st = cpu__check_slice(call, in, "input 0", out, "input", in, "input", out, "output",
                               starts, steps)) != SES_DRV_OK)
        return st;
    if (out->count == 0)
        return SES_DRV_OK;

    /* Every start is inside its dim here, since every output dim is at least 1. */
    cpu__strided_t s;
    memset(&s, 0, sizeof s);
    cpu__dense_strides(in, in_strides);
    int64_t first = 0;
    s.rank = in->rank;
    s.n_in = 1;
    for (uint32_t d = 0; d < in->rank; d++) {
        s.dims[d] = out->dims[d];
        s.stride[0][d] = steps[d] * in_strides[d];
        first += starts[d] * in_strides[d];
    }
    s.base[0] = in->data + first * (int64_t)in->esize;
    s.esize[0] = in->esize;
    s.out = out->data;
    s.out_esize = out->esize;
    s.count = out->count;
    cpu__strided_merge(&s);
    cpu__strided_parallel(call, &s, cpu__strided_copy_row(out->esize), NULL, 1);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Concat
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__concat_job {
    const cpu__call_t *call;
    uint32_t axis;
    uint64_t after; /* elements per step along the axis: the product of the dims after it */
} cpu__concat_job_t;

/*
 * Rows [begin, end) of the dims before the axis. An output row is each input's block of that
 * row, in input order; the loop runs input by input so each input's view is built once.
 */
static void cpu__concat_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__concat_job_t *job = ctx;
    const cpu__call_t *call = job->call;
    const size_t es = call->out.esize;
    const size_t out_row = (size_t)((uint64_t)call->out.dims[job->axis] * job->after) * es;
    size_t at = 0; /* bytes into the output row where this input's block goes */

    for (uint32_t i = 0; i < call->n_in; i++) {
        cpu__tensor_t t = cpu__input(call, i);
        size_t block = (size_t)((uint64_t)t.dims[job->axis] * job->after) * es;
        if (block > 0)
            for (uint64_t r = begin; r < end; r++)
                memcpy(call->out.data + r * out_row + at, t.data + r * block, block);
        at += block;
    }
}

int32_t cpu__concat(const cpu__call_t *call) {
    const cpu__tensor_t *out = &call->out;
    int64_t axis = 0;
    int64_t total = 0;
    int32_t st;
    char a[96], o[96];

    if ((st = cpu__attr_int(call, "axis", 0, 0, &axis)) != SES_DRV_OK)
        return st;
    if (axis < 0 || axis >= (int64_t)out->rank)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute axis is %" PRId64 ", expected 0 to %" PRId64
                              " for the rank-%" PRIu32 " output %s",
                              axis, (int64_t)out->rank - 1, out->rank,
                              cpu__format_dims(out->dims, out->rank, o, sizeof o));
    /* Every input has the output's rank and dims, except along the axis, where they add up. */
    for (uint32_t i = 0; i < call->n_in; i++) {
        cpu__tensor_t t = cpu__input(call, i);
        int ok = t.rank == out->rank;
        for (uint32_t d = 0; ok && d < t.rank; d++)
            if (d != (uint32_t)axis && t.dims[d] != out->dims[d])
                ok = 0;
        if (!ok)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "input %" PRIu32
                                  " is %s, but the output is %s: they must agree "
                                  "on every axis except %" PRId64,
                                  i, cpu__format_dims(t.dims, t.rank, a, sizeof a),
                                  cpu__format_dims(out->dims, out->rank, o, sizeof o), axis);
        total += t.dims[axis];
    }
    if (total != out->dims[axis])
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "the inputs' dims along axis %" PRId64 " add up to %" PRId64
                              ", but the output is %s",
                              axis, total, cpu__format_dims(out->dims, out->rank, o, sizeof o));
    if (out->count == 0)
        return SES_DRV_OK;

    uint64_t before = 1, after = 1;
    for (uint32_t d = 0; d < (uint32_t)axis; d++)
        before *= (uint64_t)out->dims[d];
    for (uint32_t d = (uint32_t)axis + 1; d < out->rank; d++)
        after *= (uint64_t)out->dims[d];
    cpu__concat_job_t job = {call, (uint32_t)axis, after};
    cpu__parallel(call, before, (uint64_t)out->dims[axis] * after, cpu__concat_task, &job);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Gather
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__gather_job {
    const cpu__call_t *call;
    uint64_t dim;   /* data dim along the axis */
    uint64_t after; /* elements per index: the product of the data dims after the axis */
} cpu__gather_job_t;

/* Items are (row before the axis, index) pairs, row-major; each copies one block. */
static void cpu__gather_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__gather_job_t *job = ctx;
    const cpu__tensor_t *data = &job->call->in[0];
    const cpu__tensor_t *indices = &job->call->in[1];
    const size_t block = (size_t)job->after * data->esize;
    const uint64_t n_idx = indices->count;

    for (uint64_t item = begin; item < end; item++) {
        uint64_t row = item / n_idx, q = item % n_idx;
        int64_t idx = cpu__index_at(indices, q);
        if (idx < 0)
            idx += (int64_t)job->dim; /* checked to land in range before the job started */
        memcpy(job->call->out.data + item * block,
               data->data + (row * job->dim + (uint64_t)idx) * block, block);
    }
}

int32_t cpu__check_gather(const cpu__call_t *call, const cpu__tensor_t *data,
                          const char *data_name, const cpu__tensor_t *indices,
                          const cpu__tensor_t *gathered, const char *gathered_name,
                          uint32_t *out_axis) {
    int64_t axis = 0;
    int32_t st;
    char a[96], b[96], o[96];

    if ((st = cpu__attr_int(call, "axis", 1, 0, &axis)) != SES_DRV_OK)
        return st;
    if (axis < 0 || axis >= (int64_t)data->rank)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute axis is %" PRId64 ", expected 0 to %" PRId64
                              " for the rank-%" PRIu32 " %s %s",
                              axis, (int64_t)data->rank - 1, data->rank, data_name,
                              cpu__format_dims(data->dims, data->rank, a, sizeof a));
    const uint32_t ax = (uint32_t)axis;
    int ok = gathered->rank == data->rank - 1 + indices->rank;
    for (uint32_t d = 0; ok && d < gathered->rank; d++) {
        int64_t want = d < ax                   ? data->dims[d]
                       : d < ax + indices->rank ? indices->dims[d - ax]
                                                : data->dims[d - indices->rank + 1];
        if (gathered->dims[d] != want)
            ok = 0;
    }
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "%s is %s, but %s %s gathered along axis %" PRId64
                              " by indices %s is not",
                              gathered_name,
                              cpu__format_dims(gathered->dims, gathered->rank, o, sizeof o),
                              data_name, cpu__format_dims(data->dims, data->rank, a, sizeof a),
                              axis, cpu__format_dims(indices->dims, indices->rank, b, sizeof b));
    const int64_t dim = data->dims[ax];
    for (uint64_t q = 0; data->count && q < indices->count; q++) {
        int64_t idx = cpu__index_at(indices, q);
        if (idx < -dim || idx >= dim)
            return cpu__call_fail(
                call, SES_DRV_INVALID_ARGUMENT,
                "index %" PRId64 " (element %" PRIu64
                " of the indices) is out of range for axis %" PRId64 " of size %" PRId64
                " (%s is %s); valid are %" PRId64 " to %" PRId64,
                idx, q, axis, dim, data_name, cpu__format_dims(data->dims, data->rank, a, sizeof a),
                -dim, dim - 1);
    }
    *out_axis = ax;
    return SES_DRV_OK;
}

int32_t cpu__gather(const cpu__call_t *call) {
    const cpu__tensor_t *data = &call->in[0];
    const cpu__tensor_t *indices = &call->in[1];
    const cpu__tensor_t *out = &call->out;
    uint32_t ax = 0;
    int32_t st;

    if ((st = cpu__check_gather(call, data, "data", indices, out, "output", &ax)) != SES_DRV_OK)
        return st;
    if (out->count == 0)
        return SES_DRV_OK;
    const int64_t dim = data->dims[ax];
    uint64_t before = 1, after = 1;
    for (uint32_t d = 0; d < ax; d++)
        before *= (uint64_t)data->dims[d];
    for (uint32_t d = ax + 1; d < data->rank; d++)
        after *= (uint64_t)data->dims[d];
    cpu__gather_job_t job = {call, (uint64_t)dim, after};
    cpu__parallel(call, before * indices->count, after, cpu__gather_task, &job);
    return SES_DRV_OK;
}
