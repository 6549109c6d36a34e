/*
 * Reductions: ReduceSum, ReduceMax, ReduceMean, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
 * ReduceLogSum, ReduceLogSumExp, ReduceSumSquare over a normalized list of axes; Softmax and
 * LogSoftmax along one axis; ArgMax and ArgMin.
 *
 * Work is split over the pool by output element (or by lane for Softmax), never inside one
 * reduction, so the order of the additions, and with it the result, is the same whatever the
 * number of threads.
 *
 * ReduceMax and ReduceMin propagate NaN, as numpy's max and min do. ArgMax counts NaN as the
 * largest value and ArgMin as the smallest, as numpy's argmax and argmin do (the first NaN wins).
 * ReduceLogSumExp subtracts each output's max before exp, so it overflows only where its
 * result does.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_math.h"

/* ---------------------------------------------------------------------------------------------
 * Per-dtype loops
 * ------------------------------------------------------------------------------------------- */

/* dst[i] = dst[i] (op) src[i], over a row: the innermost loop of a reduction whose innermost
 * dim is kept. */
typedef void (*cpu__acc_fn)(void *dst, const void *src, size_t n);
/* *acc = reduce(src[0 .. n)) when @p first, else *acc = *acc (op) reduce(src[0 .. n)). */
typedef void (*cpu__red_fn)(void *acc, const void *src, size_t n, int first);
/* The last step on each output element: dst[i] /= divisor (ReduceMean), sqrt (ReduceL2) or log
 * (ReduceLogSum), which ignore the divisor. */
typedef void (*cpu__scale_fn)(void *dst, size_t n, double divisor);

/* Lanes of the 8-way split used to reduce a contiguous row: independent sums vectorise and
 * keep the rounding error lower than one running sum. */
#define CPU__LANES 8

#define CPU__SUM_OP(T, U, a, b) ((T)((U)(a) + (U)(b)))
#define CPU__MAX_OP(T, U, a, b) (((b) > (a) || CPU__ISNAN_##T(b)) ? (b) : (a))
#define CPU__MIN_OP(T, U, a, b) (((b) < (a) || CPU__ISNAN_##T(b)) ? (b) : (a))
#define CPU__PROD_OP(T, U, a, b) ((T)((U)(a) * (U)(b)))
#define CPU__ISNAN_float(v) ((v) != (v))
#define CPU__ISNAN_double(v) ((v) != (v))
#define CPU__ISNAN_int32_t(v) 0
#define CPU__ISNAN_int64_t(v) 0

/* The loops of a sum of MAP(x) (ReduceL1: |x|, ReduceSumSquare and ReduceL2: x * x); plain
 * reductions are these with the identity map. */
#define CPU__ID_MAP(T, U, v) (v)
#define CPU__ABS_MAP(T, U, v) ((v) < 0 ? (T)(0 - (U)(v)) : (v))
#define CPU__SQUARE_MAP(T, U, v) ((T)((U)(v) * (U)(v)))
#define CPU__REDUCE_LOOPS(kind, OP, T, U, suffix) \
    CPU__REDUCE_MAP_LOOPS(kind, OP, CPU__ID_MAP, T, U, suffix)

#define CPU__REDUCE_MAP_LOOPS(kind, OP, MAP, T, U, suffix)                                      \
    static void cpu__acc_##kind##_##suffix(void *dst_, const void *src_, size_t n) {            \
        T *dst = dst_;                                                                          \
        const T *src = src_;                                                                    \
        for (size_t i = 0; i < n; i++)                                                          \
            dst[i] = OP(T, U, dst[i], MAP(T, U, src[i]));                                       \
    }                                                                                           \
    static void cpu__red_##kind##_##suffix(void *acc_, const void *src_, size_t n, int first) { \
        T *acc = acc_;                                                                          \
        const T *src = src_;                                                                    \
        T lane[CPU__LANES];                                                                     \
        size_t i = 0;                                                                           \
        T r;                                                                                    \
        if (n >= CPU__LANES) {                                                                  \
            for (size_t j = 0; j < CPU__LANES; j++)                                             \
                lane[j] = MAP(T, U, src[j]);                                                    \
            for (i = CPU__LANES; i + CPU__LANES <= n; i += CPU__LANES)                          \
                for (size_t j = 0; j < CPU__LANES; j++)                                         \
                    lane[j] = OP(T, U, lane[j], MAP(T, U, src[i + j]));                         \
            r = lane[0];                                                                        \
            for (size_t j = 1; j < CPU__LANES; j++)                                             \
                r = OP(T, U, r, lane[j]);                                                       \
        } else {                                                                                \
            r = MAP(T, U, src[0]);                                                              \
            i = 1;                                                                              \
        }                                                                                       \
        for (; i < n; i++)                                                                      \
            r = OP(T, U, r, MAP(T, U, src[i]));                                                 \
        *acc = first ? r : OP(T, U, *acc, r);                                                   \
    }

CPU__REDUCE_LOOPS(sum, CPU__SUM_OP, float, float, f32)
CPU__REDUCE_LOOPS(sum, CPU__SUM_OP, double, double, f64)
CPU__REDUCE_LOOPS(sum, CPU__SUM_OP, int32_t, uint32_t, i32)
CPU__REDUCE_LOOPS(sum, CPU__SUM_OP, int64_t, uint64_t, i64)
CPU__REDUCE_LOOPS(max, CPU__MAX_OP, float, float, f32)
CPU__REDUCE_LOOPS(max, CPU__MAX_OP, double, double, f64)
CPU__REDUCE_LOOPS(max, CPU__MAX_OP, int32_t, int32_t, i32)
CPU__REDUCE_LOOPS(max, CPU__MAX_OP, int64_t, int64_t, i64)
CPU__REDUCE_LOOPS(min, CPU__MIN_OP, float, float, f32)
CPU__REDUCE_LOOPS(min, CPU__MIN_OP, double, double, f64)
CPU__REDUCE_LOOPS(min, CPU__MIN_OP, int32_t, int32_t, i32)
CPU__REDUCE_LOOPS(min, CPU__MIN_OP, int64_t, int64_t, i64)
CPU__REDUCE_LOOPS(prod, CPU__PROD_OP, float, float, f32)
CPU__REDUCE_LOOPS(prod, CPU__PROD_OP, double, double, f64)
CPU__REDUCE_LOOPS(prod, CPU__PROD_OP, int32_t, uint32_t, i32)
CPU__REDUCE_LOOPS(prod, CPU__PROD_OP, int64_t, uint64_t, i64)

/* The mapped sums, with dst[i] = MAP(src[i]) for the first row a reduction folds in. */
#define CPU__REDUCE_SUM_OF(kind, MAP, T, U, suffix)                                   \
    CPU__REDUCE_MAP_LOOPS(kind, CPU__SUM_OP, MAP, T, U, suffix)                       \
    static void cpu__init_##kind##_##suffix(void *dst_, const void *src_, size_t n) { \
        T *dst = dst_;                                                                \
        const T *src = src_;                                                          \
        for (size_t i = 0; i < n; i++)                                                \
            dst[i] = MAP(T, U, src[i]);                                               \
    }
CPU__REDUCE_SUM_OF(abs, CPU__ABS_MAP, float, float, f32)
CPU__REDUCE_SUM_OF(abs, CPU__ABS_MAP, double, double, f64)
CPU__REDUCE_SUM_OF(abs, CPU__ABS_MAP, int32_t, uint32_t, i32)
CPU__REDUCE_SUM_OF(abs, CPU__ABS_MAP, int64_t, uint64_t, i64)
CPU__REDUCE_SUM_OF(square, CPU__SQUARE_MAP, float, float, f32)
CPU__REDUCE_SUM_OF(square, CPU__SQUARE_MAP, double, double, f64)
CPU__REDUCE_SUM_OF(square, CPU__SQUARE_MAP, int32_t, uint32_t, i32)
CPU__REDUCE_SUM_OF(square, CPU__SQUARE_MAP, int64_t, uint64_t, i64)

static void cpu__scale_f32(void *dst_, size_t n, double divisor) {
    float *dst = dst_;
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)((double)dst[i] / divisor);
}

static void cpu__scale_f64(void *dst_, size_t n, double divisor) {
    double *dst = dst_;
    for (size_t i = 0; i < n; i++)
        dst[i] = dst[i] / divisor;
}

#define CPU__FINISH(name, F, T, suffix)                                        \
    static void cpu__##name##_##suffix(void *dst_, size_t n, double divisor) { \
        T *dst = dst_;                                                         \
        (void)divisor;                                                         \
        for (size_t i = 0; i < n; i++)                                         \
            dst[i] = F(dst[i]);                                                \
    }
CPU__FINISH(sqrt, sqrtf, float, f32)
CPU__FINISH(sqrt, sqrt, double, f64)
CPU__FINISH(log, logf, float, f32)
CPU__FINISH(log, log, double, f64)

/* ---------------------------------------------------------------------------------------------
 * ReduceSum ReduceMax ReduceMean ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum
 * ReduceLogSumExp ReduceSumSquare
 * ------------------------------------------------------------------------------------------- */

/*
 * When the innermost dim is kept, each input row is folded into a row of output. Threads take
 * blocks of this many output elements: cutting rows into narrower pieces would turn every
 * thread's long contiguous reads into short ones a page apart, slower than one thread.
 */
#define CPU__REDUCE_BLOCK 1024u

/*
 * The input seen as alternating groups of kept and reduced dims (size-1 dims dropped,
 * neighbours of one kind merged). The output is the kept groups in order, dense.
 */
typedef struct cpu__reduce_job {
    uint32_t n_kept, n_red;
    int64_t kept[CPU__MAX_RANK], kept_stride[CPU__MAX_RANK];
    int64_t red[CPU__MAX_RANK], red_stride[CPU__MAX_RANK];
    /* Non-zero: the innermost group is kept (its size is `inner`, stride 1) and whole rows
     * of output are accumulated. Zero: the innermost group is reduced (size `inner`, stride 1)
     * and each output element reduces contiguous rows; it is left out of red[]. */
    int inner_kept;
    int64_t inner;
    uint64_t block; /* inner_kept: output elements per work item (see CPU__REDUCE_BLOCK) */
    const unsigned char *in;
    unsigned char *out;
    size_t es;
    cpu__acc_fn acc;
    cpu__acc_fn init; /* the first row folded in, mapped (ReduceL1...); NULL: copied as it is */
    cpu__red_fn red_row;
    cpu__scale_fn scale; /* NULL unless ReduceMean, ReduceL2 or ReduceLogSum */
    double divisor;
} cpu__reduce_job_t;

/* Advances an odometer over @p dims, keeping @p off (input elements) in step. */
static inline void cpu__odometer_next(int64_t *idx, const int64_t *dims, const int64_t *strides,
                                      uint32_t n, int64_t *off) {
    for (uint32_t d = n; d-- > 0;) {
        *off += strides[d];
        if (++idx[d] < dims[d])
            return;
        *off -= strides[d] * dims[d];
        idx[d] = 0;
    }
}

/* The number of reduced-group combinations (each a row or an element to fold in). */
static uint64_t cpu__reduce_combos(const cpu__reduce_job_t *job) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < job->n_red; d++)
        n *= (uint64_t)job->red[d];
    return n;
}

static void cpu__reduce_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__reduce_job_t *job = ctx;
    const size_t es = job->es;
    const uint64_t combos = cpu__reduce_combos(job);
    int64_t ridx[CPU__MAX_RANK];

    if (job->inner_kept) {
        /* Items are blocks of at most `block` elements of one output row; the kept groups
         * before the last pick the row. */
        const uint64_t inner = (uint64_t)job->inner, block = job->block;
        const uint64_t per_row = (inner + block - 1) / block;
        const uint32_t outer_n = job->n_kept - 1;
        for (uint64_t item = begin; item < end; item++) {
            uint64_t row = item / per_row, col = (item % per_row) * block;
            uint64_t n = inner - col < block ? inner - col : block;
            unsigned char *dst = job->out + (row * inner + col) * es;
            int64_t base = 0;
            for (uint32_t d = outer_n; d-- > 0;) {
                base += (int64_t)(row % (uint64_t)job->kept[d]) * job->kept_stride[d];
                row /= (uint64_t)job->kept[d];
            }
            int64_t roff = 0;
            memset(ridx, 0, sizeof ridx);
            for (uint64_t c = 0; c < combos; c++) {
                const unsigned char *src = job->in + (size_t)(base + roff + (int64_t)col) * es;
                if (c == 0 && job->init)
                    job->init(dst, src, (size_t)n);
                else if (c == 0)
                    memcpy(dst, src, (size_t)n * es);
                else
                    job->acc(dst, src, (size_t)n);
                cpu__odometer_next(ridx, job->red, job->red_stride, job->n_red, &roff);
            }
            if (job->scale)
                job->scale(dst, (size_t)n, job->divisor);
        }
        return;
    }

    /* One output element per kept position; each folds in `combos` contiguous rows. */
    int64_t kidx[CPU__MAX_RANK];
    int64_t base = 0;
    uint64_t rest = begin;
    for (uint32_t d = job->n_kept; d-- > 0;) {
        kidx[d] = (int64_t)(rest % (uint64_t)job->kept[d]);
        rest /= (uint64_t)job->kept[d];
        base += kidx[d] * job->kept_stride[d];
    }
    for (uint64_t e = begin; e < end; e++) {
        unsigned char *dst = job->out + e * es;
        int64_t roff = 0;
        memset(ridx, 0, sizeof ridx);
        for (uint64_t c = 0; c < combos; c++) {
            job->red_row(dst, job->in + (size_t)(base + roff) * es, (size_t)job->inner, c == 0);
            cpu__odometer_next(ridx, job->red, job->red_stride, job->n_red, &roff);
        }
        if (job->scale)
            job->scale(dst, 1, job->divisor);
        cpu__odometer_next(kidx, job->kept, job->kept_stride, job->n_kept, &base);
    }
}

/*
 * ReduceLogSumExp's second pass, over output elements [begin, end): each holds its max from
 * the first, and becomes max + log(sum(exp(x - max))). A max of NaN or an infinity is the
 * result already (every element -inf, or one +inf or NaN).
 */
#define CPU__LSE_TASK(T, EXP, LOG, suffix)                                              \
    static void cpu__lse_task_##suffix(void *ctx, uint64_t begin, uint64_t end) {       \
        const cpu__reduce_job_t *job = ctx;                                             \
        const T *x = (const T *)(const void *)job->in;                                  \
        T *y = (T *)(void *)job->out;                                                   \
        const uint64_t combos = cpu__reduce_combos(job);                                \
        /* The innermost group is a contiguous reduced row, or (kept) one element. */   \
        const int64_t row = job->inner_kept ? 1 : job->inner;                           \
        int64_t ridx[CPU__MAX_RANK];                                                    \
        for (uint64_t e = begin; e < end; e++) {                                        \
            const T mx = y[e];                                                          \
            if (mx != mx || mx == (T)INFINITY || mx == -(T)INFINITY)                    \
                continue;                                                               \
            int64_t base = 0, roff = 0;                                                 \
            uint64_t rest = e;                                                          \
            for (uint32_t d = job->n_kept; d-- > 0;) {                                  \
                base += (int64_t)(rest % (uint64_t)job->kept[d]) * job->kept_stride[d]; \
                rest /= (uint64_t)job->kept[d];                                         \
            }                                                                           \
            T sum = 0;                                                                  \
            memset(ridx, 0, sizeof ridx);                                               \
            for (uint64_t c = 0; c < combos; c++) {                                     \
                const T *p = x + base + roff;                                           \
                for (int64_t k = 0; k < row; k++)                                       \
                    sum += EXP(p[k] - mx);                                              \
                cpu__odometer_next(ridx, job->red, job->red_stride, job->n_red, &roff); \
            }                                                                           \
            y[e] = mx + LOG(sum);                                                       \
        }                                                                               \
    }

CPU__LSE_TASK(float, expf, logf, f32)
CPU__LSE_TASK(double, exp, log, f64)

/* Checks the axes attribute: sorted, unique, each < rank, at least one (none for a scalar,
 * whose reduction is the scalar itself). */
static int32_t cpu__check_axes(const cpu__call_t *call, const int64_t *axes, uint32_t n_axes,
                               uint32_t rank) {
    int ok = n_axes > 0 || rank == 0;
    for (uint32_t i = 0; ok && i < n_axes; i++)
        if (axes[i] < 0 || axes[i] >= (int64_t)rank || (i > 0 && axes[i] <= axes[i - 1]))
            ok = 0;
    if (!ok) {
        char a[96];
        return cpu__call_fail(
            call, SES_DRV_INVALID_ARGUMENT,
            "attribute axes is %s; expected sorted, distinct axes from 0 to %" PRId64
            " (the host normalizes them)",
            cpu__format_dims(axes, n_axes, a, sizeof a), (int64_t)rank - 1);
    }
    return SES_DRV_OK;
}

int32_t cpu__reduce(const cpu__call_t *call) {
    const cpu__tensor_t *in = &call->in[0];
    const cpu__tensor_t *out = &call->out;
    const uint32_t code = call->spec->code;
    int64_t axes[CPU__MAX_RANK], want[CPU__MAX_RANK];
    uint32_t n_axes = 0;
    int64_t keepdims = 1;
    int reduced[CPU__MAX_RANK] = {0};
    int32_t st;
    char a[96], o[96], w[96], x[96];

    if ((st = cpu__check_rank(call, "input 0", in)) != SES_DRV_OK)
        return st;
    if ((st = cpu__attr_ints(call, "axes", axes, CPU__MAX_RANK, &n_axes)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "keepdims", 1, 1, &keepdims)) != SES_DRV_OK)
        return st;
    if ((st = cpu__check_axes(call, axes, n_axes, in->rank)) != SES_DRV_OK)
        return st;
    for (uint32_t i = 0; i < n_axes; i++)
        reduced[axes[i]] = 1;

    /* The output: the input with the reduced dims set to 1 (keepdims) or removed. */
    uint32_t want_rank;
    uint64_t r_total = 1;
    for (uint32_t d = 0; d < in->rank; d++)
        if (reduced[d])
            r_total *= (uint64_t)in->dims[d];
    if (!cpu__is_reduced(out, in->dims, in->rank, reduced, (int)keepdims, want, &want_rank))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "output is %s, but input %s reduced over axes %s with keepdims "
                              "%" PRId64 " is %s",
                              cpu__format_dims(out->dims, out->rank, o, sizeof o),
                              cpu__format_dims(in->dims, in->rank, a, sizeof a),
                              cpu__format_dims(axes, n_axes, w, sizeof w), keepdims,
                              cpu__format_dims(want, want_rank, x, sizeof x));
    /* Reducing nothing: the sum is 0, the mean 0/0, and the max and min do not exist. */
    if (out->count > 0 && r_total == 0 && (code == CPU__OP_REDUCEMAX || code == CPU__OP_REDUCEMIN))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "reduces over an empty axis: input is %s, axes %s; the %s "
                              "of no elements is undefined",
                              cpu__format_dims(in->dims, in->rank, a, sizeof a),
                              cpu__format_dims(axes, n_axes, w, sizeof w),
                              code == CPU__OP_REDUCEMAX ? "max" : "min");
    return cpu__reduce_dims(call, reduced, code);
}

/* Sets @p job's loops for @p code over @p dtype; 0 when there are none. ReduceLogSumExp's
 * first pass is ReduceMax's. */
static int cpu__reduce_pick(cpu__reduce_job_t *job, uint32_t code, uint32_t dtype) {
    const int f32 = dtype == SES_DRV_DTYPE_F32;
    int ok = 1;

#define CPU__PICK(kind)                           \
    do {                                          \
        switch (dtype) {                          \
        case SES_DRV_DTYPE_F32:                   \
            job->acc = cpu__acc_##kind##_f32;     \
            job->red_row = cpu__red_##kind##_f32; \
            break;                                \
        case SES_DRV_DTYPE_F64:                   \
            job->acc = cpu__acc_##kind##_f64;     \
            job->red_row = cpu__red_##kind##_f64; \
            break;                                \
        case SES_DRV_DTYPE_I32:                   \
            job->acc = cpu__acc_##kind##_i32;     \
            job->red_row = cpu__red_##kind##_i32; \
            break;                                \
        case SES_DRV_DTYPE_I64:                   \
            job->acc = cpu__acc_##kind##_i64;     \
            job->red_row = cpu__red_##kind##_i64; \
            break;                                \
        default: return 0;                        \
        }                                         \
    } while (0)
#define CPU__PICK_INIT(kind)                                          \
    job->init = dtype == SES_DRV_DTYPE_F32   ? cpu__init_##kind##_f32 \
                : dtype == SES_DRV_DTYPE_F64 ? cpu__init_##kind##_f64 \
                : dtype == SES_DRV_DTYPE_I32 ? cpu__init_##kind##_i32 \
                                             : cpu__init_##kind##_i64

    switch (code) {
    case CPU__OP_REDUCESUM:
    case CPU__OP_REDUCEMEAN:
    case CPU__OP_REDUCELOGSUM: CPU__PICK(sum); break;
    case CPU__OP_REDUCEMAX:
    case CPU__OP_REDUCELOGSUMEXP: CPU__PICK(max); break;
    case CPU__OP_REDUCEMIN: CPU__PICK(min); break;
    case CPU__OP_REDUCEPROD: CPU__PICK(prod); break;
    case CPU__OP_REDUCEL1:
        CPU__PICK(abs);
        CPU__PICK_INIT(abs);
        break;
    case CPU__OP_REDUCEL2:
    case CPU__OP_REDUCESUMSQUARE:
        CPU__PICK(square);
        CPU__PICK_INIT(square);
        break;
    default: return 0;
    }
#undef CPU__PICK
#undef CPU__PICK_INIT
    /* The last steps are defined for floats only; the kernel table has no integer entries
     * for these ops. */
    if (code == CPU__OP_REDUCEMEAN || code == CPU__OP_REDUCEL2 || code == CPU__OP_REDUCELOGSUM) {
        ok = f32 || dtype == SES_DRV_DTYPE_F64;
        job->scale = code == CPU__OP_REDUCEMEAN ? (f32 ? cpu__scale_f32 : cpu__scale_f64)
                     : code == CPU__OP_REDUCEL2 ? (f32 ? cpu__sqrt_f32 : cpu__sqrt_f64)
                                                : (f32 ? cpu__log_f32 : cpu__log_f64);
    }
    if (code == CPU__OP_REDUCELOGSUMEXP)
        ok = f32 || dtype == SES_DRV_DTYPE_F64;
    return ok;
}

int32_t cpu__reduce_dims(const cpu__call_t *call, const int *reduced, uint32_t code) {
    const cpu__tensor_t *in = &call->in[0];
    const cpu__tensor_t *out = &call->out;
    uint64_t r_total = 1;

    for (uint32_t d = 0; d < in->rank; d++)
        if (reduced[d])
            r_total *= (uint64_t)in->dims[d];
    if (out->count == 0)
        return SES_DRV_OK;

    const uint32_t dtype = out->dtype;
    cpu__reduce_job_t job;
    memset(&job, 0, sizeof job);
    if (!cpu__reduce_pick(&job, code, dtype))
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s", cpu__dtype_label(dtype));
    if (r_total == 0) {
        if (code == CPU__OP_REDUCEMAX || code == CPU__OP_REDUCEMIN)
            return cpu__call_fail(call, SES_DRV_INTERNAL, "the max or min of an empty reduction");
        memset(out->data, 0, (size_t)(out->count * out->esize));
        /* The mean of nothing is 0/0, the product 1, the logs of the sum log(0). */
        double fill = code == CPU__OP_REDUCEMEAN   ? (double)NAN
                      : code == CPU__OP_REDUCEPROD ? 1.0
                      : code == CPU__OP_REDUCELOGSUM || code == CPU__OP_REDUCELOGSUMEXP
                          ? -(double)INFINITY
                          : 0.0;
        for (uint64_t i = 0; fill != 0.0 && i < out->count; i++) {
            if (dtype == SES_DRV_DTYPE_F32)
                ((float *)(void *)out->data)[i] = (float)fill;
            else if (dtype == SES_DRV_DTYPE_F64)
                ((double *)(void *)out->data)[i] = fill;
            else if (dtype == SES_DRV_DTYPE_I32)
                ((int32_t *)(void *)out->data)[i] = (int32_t)fill;
            else
                ((int64_t *)(void *)out->data)[i] = (int64_t)fill;
        }
        return SES_DRV_OK;
    }
    if (r_total == 1) {
        /* Only size-1 dims are reduced: every output element is its one input element, mapped
         * and finished where the op does (ReduceL1's |x|, ReduceLogSum's log x...). */
        if (job.init)
            job.init(out->data, in->data, (size_t)out->count);
        else
            memcpy(out->data, in->data, (size_t)(out->count * out->esize));
        if (job.scale)
            job.scale(out->data, (size_t)out->count, 1.0);
        return SES_DRV_OK;
    }

    /* Group the dims, innermost first, so each group's stride is the product after it. */
    int64_t g_size[CPU__MAX_RANK], g_stride[CPU__MAX_RANK];
    int g_red[CPU__MAX_RANK];
    uint32_t n_groups = 0;
    int64_t stride = 1;
    for (uint32_t d = in->rank; d-- > 0;) {
        int64_t dim = in->dims[d];
        if (dim == 1)
            continue;
        if (n_groups > 0 && g_red[n_groups - 1] == reduced[d]) {
            g_size[n_groups - 1] *= dim;
        } else {
            g_size[n_groups] = dim;
            g_stride[n_groups] = stride;
            g_red[n_groups] = reduced[d];
            n_groups++;
        }
        stride *= dim;
    }
    /* Groups are innermost first here; the job wants them outermost first. */
    job.inner_kept = !g_red[0];
    job.inner = g_size[0];
    for (uint32_t g = n_groups; g-- > 0;) {
        if (g == 0 && !job.inner_kept)
            continue; /* the contiguous reduced row, handled by red_row */
        if (g_red[g]) {
            job.red[job.n_red] = g_size[g];
            job.red_stride[job.n_red++] = g_stride[g];
        } else {
            job.kept[job.n_kept] = g_size[g];
            job.kept_stride[job.n_kept++] = g_stride[g];
        }
    }
    job.in = in->data;
    job.out = out->data;
    job.es = out->esize;
    job.divisor = (double)r_total;
    if (job.inner_kept) {
        job.block =
            (uint64_t)job.inner < CPU__REDUCE_BLOCK ? (uint64_t)job.inner : CPU__REDUCE_BLOCK;
        uint64_t per_row = ((uint64_t)job.inner + job.block - 1) / job.block;
        uint64_t rows = out->count / (uint64_t)job.inner;
        cpu__parallel(call, rows * per_row, job.block * r_total, cpu__reduce_task, &job);
    } else {
        cpu__parallel(call, out->count, r_total, cpu__reduce_task, &job);
    }
    if (code == CPU__OP_REDUCELOGSUMEXP)
        cpu__parallel(call, out->count, r_total * 4,
                      dtype == SES_DRV_DTYPE_F32 ? cpu__lse_task_f32 : cpu__lse_task_f64, &job);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Softmax LogSoftmax
 * ------------------------------------------------------------------------------------------- */

/* Lanes handled together when the axis is not innermost: their rows are contiguous. */
#define CPU__SOFTMAX_BLOCK 128

typedef struct cpu__softmax_job {
    const unsigned char *in;
    unsigned char *out;
    int64_t dim;   /* along the axis */
    int64_t inner; /* product of the dims after the axis */
    int log;       /* LogSoftmax */
} cpu__softmax_job_t;

/*
 * Softmax over lanes [begin, end); lane l is (outer o, inner i) with l = o * inner + i, and its
 * elements are dim apart by inner. Every lane subtracts its max first, so exp never overflows.
 * In place is fine: each element is read before the same element is written.
 */
#define CPU__SOFTMAX_TASK(T, EXP, LOG, suffix)                                               \
    static void cpu__softmax_task_##suffix(void *ctx, uint64_t begin, uint64_t end) {        \
        const cpu__softmax_job_t *job = ctx;                                                 \
        const T *x = (const T *)(const void *)job->in;                                       \
        T *y = (T *)(void *)job->out;                                                        \
        const int64_t dim = job->dim, inner = job->inner;                                    \
        T m[CPU__SOFTMAX_BLOCK], s[CPU__SOFTMAX_BLOCK];                                      \
        uint64_t l = begin;                                                                  \
        if (inner == 1) {                                                                    \
            /* The axis is innermost: each lane is one contiguous row. */                    \
            for (; l < end; l++) {                                                           \
                const T *xr = x + l * (uint64_t)dim;                                         \
                T *yr = y + l * (uint64_t)dim;                                               \
                T mx = xr[0], sum = 0;                                                       \
                for (int64_t d = 1; d < dim; d++)                                            \
                    mx = (xr[d] > mx || xr[d] != xr[d]) ? xr[d] : mx;                        \
                if (job->log) {                                                              \
                    for (int64_t d = 0; d < dim; d++)                                        \
                        sum += EXP(xr[d] - mx);                                              \
                    const T ls = LOG(sum);                                                   \
                    for (int64_t d = 0; d < dim; d++)                                        \
                        yr[d] = (xr[d] - mx) - ls;                                           \
                } else {                                                                     \
                    for (int64_t d = 0; d < dim; d++) {                                      \
                        const T e = EXP(xr[d] - mx);                                         \
                        yr[d] = e;                                                           \
                        sum += e;                                                            \
                    }                                                                        \
                    const T inv = 1 / sum;                                                   \
                    for (int64_t d = 0; d < dim; d++)                                        \
                        yr[d] *= inv;                                                        \
                }                                                                            \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        while (l < end) {                                                                    \
            size_t base;                                                                     \
            const size_t n = cpu__lane_block(l, end, inner, dim, CPU__SOFTMAX_BLOCK, &base); \
            const T *xb = x + base;                                                          \
            T *yb = y + base;                                                                \
            for (size_t j = 0; j < n; j++)                                                   \
                m[j] = xb[j];                                                                \
            for (int64_t d = 1; d < dim; d++) {                                              \
                const T *row = xb + d * inner;                                               \
                for (size_t j = 0; j < n; j++)                                               \
                    m[j] = (row[j] > m[j] || row[j] != row[j]) ? row[j] : m[j];              \
            }                                                                                \
            for (size_t j = 0; j < n; j++)                                                   \
                s[j] = 0;                                                                    \
            for (int64_t d = 0; d < dim; d++) {                                              \
                const T *row = xb + d * inner;                                               \
                T *yrow = yb + d * inner;                                                    \
                if (job->log) {                                                              \
                    for (size_t j = 0; j < n; j++)                                           \
                        s[j] += EXP(row[j] - m[j]);                                          \
                } else {                                                                     \
                    for (size_t j = 0; j < n; j++) {                                         \
                        T e = EXP(row[j] - m[j]);                                            \
                        yrow[j] = e;                                                         \
                        s[j] += e;                                                           \
                    }                                                                        \
                }                                                                            \
            }                                                                                \
            if (job->log) {                                                                  \
                /* (x - max) - log(sum): x - max is exact near the max, where it matters. */ \
                for (size_t j = 0; j < n; j++)                                               \
                    s[j] = LOG(s[j]);                                                        \
                for (int64_t d = 0; d < dim; d++) {                                          \
                    const T *row = xb + d * inner;                                           \
                    T *yrow = yb + d * inner;                                                \
                    for (size_t j = 0; j < n; j++)                                           \
                        yrow[j] = (row[j] - m[j]) - s[j];                                    \
                }                                                                            \
            } else {                                                                         \
                for (size_t j = 0; j < n; j++)                                               \
                    s[j] = 1 / s[j];                                                         \
                for (int64_t d = 0; d < dim; d++) {                                          \
                    T *yrow = yb + d * inner;                                                \
                    for (size_t j = 0; j < n; j++)                                           \
                        yrow[j] *= s[j];                                                     \
                }                                                                            \
            }                                                                                \
            l += n;                                                                          \
        }                                                                                    \
    }

CPU__SOFTMAX_TASK(float, cpu__expf, logf, f32)
CPU__SOFTMAX_TASK(double, exp, log, f64)

/* The axis attribute of Softmax and ArgMax, checked against @p rank. */
static int32_t cpu__axis_attr(const cpu__call_t *call, uint32_t rank, int64_t *out_axis) {
    int64_t axis = 0;
    int32_t st;
    char a[96];

    if ((st = cpu__attr_int(call, "axis", 0, 0, &axis)) != SES_DRV_OK)
        return st;
    if (axis < 0 || axis >= (int64_t)rank)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute axis is %" PRId64 ", expected 0 to %" PRId64
                              " for the rank-%" PRIu32 " input %s (the host normalizes it)",
                              axis, (int64_t)rank - 1, rank,
                              cpu__format_dims(call->in[0].dims, call->in[0].rank, a, sizeof a));
    *out_axis = axis;
    return SES_DRV_OK;
}

/* The product of @p dims over [from, to). */
static uint64_t cpu__dims_product(const int64_t *dims, uint32_t from, uint32_t to) {
    uint64_t n = 1;
    for (uint32_t d = from; d < to; d++)
        n *= (uint64_t)dims[d];
    return n;
}

int32_t cpu__softmax(const cpu__call_t *call) {
    const cpu__tensor_t *in = &call->in[0];
    const cpu__tensor_t *out = &call->out;
    int64_t axis = 0;
    int32_t st;
    char a[96], o[96];

    if ((st = cpu__axis_attr(call, in->rank, &axis)) != SES_DRV_OK)
        return st;
    if (!cpu__same_shape(in, out))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "shapes differ: input 0 is %s, output is %s",
                              cpu__format_dims(in->dims, in->rank, a, sizeof a),
                              cpu__format_dims(out->dims, out->rank, o, sizeof o));
    if (out->count == 0)
        return SES_DRV_OK;

    cpu__softmax_job_t job;
    job.in = in->data;
    job.out = out->data;
    job.dim = in->dims[axis];
    job.inner = (int64_t)cpu__dims_product(in->dims, (uint32_t)axis + 1, in->rank);
    job.log = call->spec->code == CPU__OP_LOGSOFTMAX;
    uint64_t lanes = out->count / (uint64_t)job.dim;
    cpu__parallel(call, lanes, (uint64_t)job.dim * 8,
                  out->dtype == SES_DRV_DTYPE_F32 ? cpu__softmax_task_f32 : cpu__softmax_task_f64,
                  &job);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * ArgMax ArgMin
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__argmax_job {
    const unsigned char *in;
    int64_t *out;
    int64_t dim, inner;
    int last; /* select_last_index */
    int min;  /* ArgMin */
} cpu__argmax_job_t;

/* NaN counts as the largest value (ArgMin: the smallest); among equals the first wins, or the
 * last when asked. */
#define CPU__ARGMAX_TASK(T, suffix)                                                  \
    static void cpu__argmax_task_##suffix(void *ctx, uint64_t begin, uint64_t end) { \
        const cpu__argmax_job_t *job = ctx;                                          \
        const T *x = (const T *)(const void *)job->in;                               \
        const uint64_t inner = (uint64_t)job->inner;                                 \
        const int mn = job->min;                                                     \
        for (uint64_t l = begin; l < end; l++) {                                     \
            const T *p = x + (l / inner) * (uint64_t)job->dim * inner + l % inner;   \
            T best = p[0];                                                           \
            int64_t at = 0;                                                          \
            for (int64_t d = 1; d < job->dim; d++) {                                 \
                T v = p[(uint64_t)d * inner];                                        \
                int take;                                                            \
                if (v != v)                                                          \
                    take = best == best || job->last;                                \
                else                                                                 \
                    take = (mn ? v < best : v > best) || (job->last && v == best);   \
                if (take) {                                                          \
                    best = v;                                                        \
                    at = d;                                                          \
                }                                                                    \
            }                                                                        \
            job->out[l] = at;                                                        \
        }                                                                            \
    }

/* v != v is false for integers; the compiler drops the branch. Both spellings are kept in one
 * macro so every dtype follows the same rule. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtautological-compare"
#endif
CPU__ARGMAX_TASK(float, f32)
CPU__ARGMAX_TASK(double, f64)
CPU__ARGMAX_TASK(int32_t, i32)
CPU__ARGMAX_TASK(int64_t, i64)
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int32_t cpu__argmax(const cpu__call_t *call) {
    const cpu__tensor_t *in = &call->in[0];
    const cpu__tensor_t *out = &call->out;
    int64_t axis = 0, keepdims = 1, last = 0, want[CPU__MAX_RANK];
    int32_t st;
    char a[96], o[96], w[96];

    if ((st = cpu__check_rank(call, "input 0", in)) != SES_DRV_OK)
        return st;
    if ((st = cpu__axis_attr(call, in->rank, &axis)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "keepdims", 1, 1, &keepdims)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "select_last_index", 1, 0, &last)) != SES_DRV_OK)
        return st;
    uint32_t want_rank = 0;
    for (uint32_t d = 0; d < in->rank; d++) {
        if (d != (uint32_t)axis)
            want[want_rank++] = in->dims[d];
        else if (keepdims)
            want[want_rank++] = 1;
    }
    int ok = out->rank == want_rank;
    for (uint32_t d = 0; ok && d < want_rank; d++)
        if (out->dims[d] != want[d])
            ok = 0;
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "output is %s, but input %s along axis %" PRId64
                              " with keepdims %" PRId64 " gives %s",
                              cpu__format_dims(out->dims, out->rank, o, sizeof o),
                              cpu__format_dims(in->dims, in->rank, a, sizeof a), axis, keepdims,
                              cpu__format_dims(want, want_rank, w, sizeof w));
    if (out->count == 0)
        return SES_DRV_OK;
    if (in->dims[axis] == 0)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " of input %s is empty; there is no %s element", axis,
                              cpu__format_dims(in->dims, in->rank, a, sizeof a),
                              call->spec->code == CPU__OP_ARGMIN ? "smallest" : "largest");

    cpu__argmax_job_t job;
    job.in = in->data;
    job.out = (int64_t *)(void *)out->data;
    job.dim = in->dims[axis];
    job.inner = (int64_t)cpu__dims_product(in->dims, (uint32_t)axis + 1, in->rank);
    job.last = last != 0;
    job.min = call->spec->code == CPU__OP_ARGMIN;
    cpu__task_fn fn;
    switch (in->dtype) {
    case SES_DRV_DTYPE_F32: fn = cpu__argmax_task_f32; break;
    case SES_DRV_DTYPE_F64: fn = cpu__argmax_task_f64; break;
    case SES_DRV_DTYPE_I32: fn = cpu__argmax_task_i32; break;
    case SES_DRV_DTYPE_I64: fn = cpu__argmax_task_i64; break;
    default:
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s",
                              cpu__dtype_label(in->dtype));
    }
    cpu__parallel(call, out->count, (uint64_t)job.dim, fn, &job);
    return SES_DRV_OK;
}
