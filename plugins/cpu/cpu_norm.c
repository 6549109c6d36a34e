/*
 * The normalization kernels, at f32 and f64: BatchNormalization (inference) and Dropout's mask,
 * LayerNormalization and its gradient (below), InstanceNormalization (statistics per image and
 * channel), LRN (a window across channels) and MeanVarianceNormalization (statistics over the
 * axes the host normalized). Sums run in double, in a fixed order, one
 * thread per group of values, so results do not depend on the thread count. General entries.
 */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

static inline double cpu__nm_get(const cpu__tensor_t *t, int64_t i) {
    if (t->dtype == SES_DRV_DTYPE_F32)
        return ((const float *)(const void *)t->data)[i];
    return ((const double *)(const void *)t->data)[i];
}

static inline void cpu__nm_put(const cpu__tensor_t *t, int64_t i, double v) {
    if (t->dtype == SES_DRV_DTYPE_F32)
        ((float *)(void *)t->data)[i] = (float)v;
    else
        ((double *)(void *)t->data)[i] = v;
}

/* ---- InstanceNormalization ----------------------------------------------------------------- */

typedef struct cpu__in_job {
    const cpu__tensor_t *x, *scale, *b, *y;
    int64_t c, plane;
    double epsilon;
} cpu__in_job_t;

/* Item p is plane p (image, channel). */
static void cpu__in_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__in_job_t *j = ctx;
    for (uint64_t p = begin; p < end; p++) {
        const int64_t base = (int64_t)p * j->plane, ch = (int64_t)p % j->c;
        double mean = 0.0, var = 0.0;
        for (int64_t i = 0; i < j->plane; i++)
            mean += cpu__nm_get(j->x, base + i);
        mean /= (double)j->plane;
        for (int64_t i = 0; i < j->plane; i++) {
            const double d = cpu__nm_get(j->x, base + i) - mean;
            var += d * d;
        }
        var /= (double)j->plane;
        const double k = cpu__nm_get(j->scale, ch) / sqrt(var + j->epsilon);
        const double shift = cpu__nm_get(j->b, ch);
        for (int64_t i = 0; i < j->plane; i++)
            cpu__nm_put(j->y, base + i, (cpu__nm_get(j->x, base + i) - mean) * k + shift);
    }
}

int32_t cpu__instance_norm(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    cpu__in_job_t j = {x, &call->in[1], &call->in[2], y, 0, 1, 0.0};
    char a[96];
    int32_t st;

    if ((st = cpu__attr_float(call, "epsilon", 1e-5, &j.epsilon)) != SES_DRV_OK)
        return st;
    if (x->rank < 3 || !cpu__same_shape(x, y) || j.scale->rank != 1 || j.b->rank != 1 ||
        j.scale->dims[0] != x->dims[1] || j.b->dims[0] != x->dims[1])
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected input [N, C, spatial...], scale and B [C], output the "
                              "input's shape: input is %s",
                              cpu__format_dims(x->dims, x->rank, a, sizeof a));
    j.c = x->dims[1];
    for (uint32_t d = 2; d < x->rank; d++)
        j.plane *= x->dims[d];
    if (y->count == 0)
        return SES_DRV_OK;
    cpu__parallel(call, (uint64_t)(x->dims[0] * j.c), (uint64_t)(3 * j.plane), cpu__in_task, &j);
    return SES_DRV_OK;
}

/* ---- LRN ------------------------------------------------------------------------------------ */

typedef struct cpu__lrn_job {
    const cpu__tensor_t *x, *y;
    int64_t c, plane, lo, hi; /* the window: channels [c - lo, c + hi] */
    double alpha_n, beta, bias;
} cpu__lrn_job_t;

/* Item p is plane p (image, channel). */
static void cpu__lrn_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__lrn_job_t *j = ctx;
    for (uint64_t p = begin; p < end; p++) {
        const int64_t n = (int64_t)p / j->c, ch = (int64_t)p % j->c;
        const int64_t first = ch - j->lo < 0 ? 0 : ch - j->lo;
        const int64_t last = ch + j->hi > j->c - 1 ? j->c - 1 : ch + j->hi;
        for (int64_t i = 0; i < j->plane; i++) {
            double sum = 0.0;
            for (int64_t k = first; k <= last; k++) {
                const double v = cpu__nm_get(j->x, (n * j->c + k) * j->plane + i);
                sum += v * v;
            }
            const int64_t at = (int64_t)p * j->plane + i;
            cpu__nm_put(j->y, at, cpu__nm_get(j->x, at) / pow(j->bias + j->alpha_n * sum, j->beta));
        }
    }
}

int32_t cpu__lrn(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    cpu__lrn_job_t j = {x, y, 0, 1, 0, 0, 0.0, 0.0, 0.0};
    double alpha;
    int64_t size;
    char a[96];
    int32_t st;

    if ((st = cpu__attr_int(call, "size", 0, 0, &size)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "alpha", 1e-4, &alpha)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "beta", 0.75, &j.beta)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "bias", 1.0, &j.bias)) != SES_DRV_OK)
        return st;
    if (x->rank < 2 || !cpu__same_shape(x, y) || size < 1)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected X [N, C, ...] and Y of its shape, size >= 1: X is %s, "
                              "size %" PRId64,
                              cpu__format_dims(x->dims, x->rank, a, sizeof a), size);
    j.c = x->dims[1];
    for (uint32_t d = 2; d < x->rank; d++)
        j.plane *= x->dims[d];
    j.lo = (size - 1) / 2;
    j.hi = size / 2; /* ceil((size - 1) / 2) */
    j.alpha_n = alpha / (double)size;
    if (y->count == 0)
        return SES_DRV_OK;
    cpu__parallel(call, (uint64_t)(x->dims[0] * j.c), (uint64_t)(j.plane * (size + 4)),
                  cpu__lrn_task, &j);
    return SES_DRV_OK;
}

/* ---- MeanVarianceNormalization ------------------------------------------------------------ */

typedef struct cpu__mvn_job {
    const cpu__tensor_t *x, *y;
    uint32_t rank;
    int reduced[CPU__MAX_RANK];
    int64_t kept_count, red_count;
} cpu__mvn_job_t;

/* The flat offset of the element at kept index @p g and reduced index @p r. */
static int64_t cpu__mvn_offset(const cpu__mvn_job_t *j, int64_t g, int64_t r) {
    int64_t off = 0, mult = 1;
    for (uint32_t d = j->rank; d-- > 0;) {
        const int64_t dim = j->x->dims[d];
        int64_t coord;
        if (j->reduced[d]) {
            coord = r % dim;
            r /= dim;
        } else {
            coord = g % dim;
            g /= dim;
        }
        off += coord * mult;
        mult *= dim;
    }
    return off;
}

/* Item g is group g: the elements that share the kept coordinates. */
static void cpu__mvn_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__mvn_job_t *j = ctx;
    for (uint64_t g = begin; g < end; g++) {
        double mean = 0.0, var = 0.0;
        for (int64_t r = 0; r < j->red_count; r++)
            mean += cpu__nm_get(j->x, cpu__mvn_offset(j, (int64_t)g, r));
        mean /= (double)j->red_count;
        for (int64_t r = 0; r < j->red_count; r++) {
            const double d = cpu__nm_get(j->x, cpu__mvn_offset(j, (int64_t)g, r)) - mean;
            var += d * d;
        }
        const double scale = 1.0 / (sqrt(var / (double)j->red_count) + 1e-9);
        for (int64_t r = 0; r < j->red_count; r++) {
            const int64_t at = cpu__mvn_offset(j, (int64_t)g, r);
            cpu__nm_put(j->y, at, (cpu__nm_get(j->x, at) - mean) * scale);
        }
    }
}

int32_t cpu__mvn(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    cpu__mvn_job_t j;
    int64_t axes[CPU__MAX_RANK];
    uint32_t n_axes = 0;
    char a[96];
    int32_t st;

    memset(&j, 0, sizeof j);
    j.x = x;
    j.y = y;
    j.rank = x->rank;
    if ((st = cpu__check_rank(call, "input 0", x)) != SES_DRV_OK ||
        (st = cpu__attr_ints(call, "axes", axes, CPU__MAX_RANK, &n_axes)) != SES_DRV_OK)
        return st;
    for (uint32_t k = 0; k < n_axes; k++) {
        if (axes[k] < 0 || axes[k] >= (int64_t)x->rank || j.reduced[axes[k]])
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "axes must be distinct dims of X: axis %" PRId64 ", X is %s",
                                  axes[k], cpu__format_dims(x->dims, x->rank, a, sizeof a));
        j.reduced[axes[k]] = 1;
    }
    if (!cpu__same_shape(x, y))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "Y must have X's shape");
    j.kept_count = 1;
    j.red_count = 1;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (j.reduced[d])
            j.red_count *= x->dims[d];
        else
            j.kept_count *= x->dims[d];
    }
    if (y->count == 0)
        return SES_DRV_OK;
    cpu__parallel(call, (uint64_t)j.kept_count, (uint64_t)(3 * j.red_count * (int64_t)x->rank),
                  cpu__mvn_task, &j);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * BatchNormalization (inference) and Dropout's mask
 * ------------------------------------------------------------------------------------------- */

int32_t cpu__batch_norm(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0];
    cpu__tensor_t p[4];
    const cpu__tensor_t *y = &call->outs[0];
    double eps;
    int32_t st;

    for (uint32_t i = 0; i < 4; i++)
        p[i] = cpu__input(call, i + 1);
    if ((st = cpu__attr_float(call, "epsilon", 1e-5, &eps)) != SES_DRV_OK)
        return st;
    int ok = x->rank >= 2 && cpu__same_shape(x, y);
    for (uint32_t i = 0; ok && i < 4; i++)
        ok = p[i].rank == 1 && p[i].dims[0] == x->dims[1];
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "X must be [N, C, ...] with Y its shape and each parameter [C]");
    if (y->count == 0)
        return SES_DRV_OK;
    const int64_t c = x->dims[1], inner = (int64_t)x->count / (x->dims[0] * c);
    for (int64_t plane = 0; plane < x->dims[0] * c; plane++) {
        const int64_t ch = plane % c;
        const double scale =
            cpu__get(x->dtype, p[0].data, ch) / sqrt(cpu__get(x->dtype, p[3].data, ch) + eps);
        const double shift =
            cpu__get(x->dtype, p[1].data, ch) - cpu__get(x->dtype, p[2].data, ch) * scale;
        if (x->dtype == SES_DRV_DTYPE_F32) {
            const float *in = (const float *)(const void *)x->data + plane * inner;
            float *out = (float *)(void *)y->data + plane * inner;
            for (int64_t q = 0; q < inner; q++)
                out[q] = (float)(in[q] * scale + shift);
        } else {
            const double *in = (const double *)(const void *)x->data + plane * inner;
            double *out = (double *)(void *)y->data + plane * inner;
            for (int64_t q = 0; q < inner; q++)
                out[q] = in[q] * scale + shift;
        }
    }
    return SES_DRV_OK;
}

/* Dropout in inference: the data unchanged, and a mask of all true. */
int32_t cpu__dropout(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0];
    if (!cpu__same_shape(x, &call->outs[0]) || !cpu__same_shape(x, &call->outs[1]))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "output and mask must have the data's shape");
    if (x->count) {
        memcpy(call->outs[0].data, x->data, (size_t)(x->count * x->esize));
        memset(call->outs[1].data, 1, (size_t)x->count);
    }
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * LayerNormalization and LayerNormalizationGrad
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__layer_norm_job {
    const unsigned char *x, *scale, *bias, *dy; /* bias and dy may be NULL */
    unsigned char *y, *mean, *inv_std;          /* mean and inv_std may be NULL */
    int64_t n;                                  /* elements per row: X.dims[axis:] */
    int64_t rows;
    double eps;
} cpu__layer_norm_job_t;

/*
 * Row r's mean and 1 / sqrt(variance + epsilon), two passes in T (as Softmax sums in T). The
 * forward task normalizes rows [begin, end) and keeps the statistics when asked; it reads a row
 * fully before writing it. The dX task computes
 *   dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)), g = dy * scale,
 * and the dScale task (run once, over every column) sums dy * xhat over the rows.
 */
#define CPU__LAYER_NORM_TASKS(T, SQRT, suffix)                                                  \
    static void cpu__layer_norm_stats_##suffix(const T *xr, int64_t n, double eps, T *out_mean, \
                                               T *out_inv_std) {                                \
        T m = 0, v = 0;                                                                         \
        for (int64_t d = 0; d < n; d++)                                                         \
            m += xr[d];                                                                         \
        m /= (T)n;                                                                              \
        for (int64_t d = 0; d < n; d++) {                                                       \
            const T c = xr[d] - m;                                                              \
            v += c * c;                                                                         \
        }                                                                                       \
        v /= (T)n;                                                                              \
        *out_mean = m;                                                                          \
        *out_inv_std = 1 / SQRT(v + (T)eps);                                                    \
    }                                                                                           \
    static void cpu__layer_norm_task_##suffix(void *ctx, uint64_t begin, uint64_t end) {        \
        const cpu__layer_norm_job_t *job = ctx;                                                 \
        const T *scale = (const T *)(const void *)job->scale;                                   \
        const T *bias = (const T *)(const void *)job->bias;                                     \
        const int64_t n = job->n;                                                               \
        for (uint64_t r = begin; r < end; r++) {                                                \
            const T *xr = (const T *)(const void *)job->x + r * (uint64_t)n;                    \
            T *yr = (T *)(void *)job->y + r * (uint64_t)n;                                      \
            T m, is;                                                                            \
            cpu__layer_norm_stats_##suffix(xr, n, job->eps, &m, &is);                           \
            if (job->mean)                                                                      \
                ((T *)(void *)job->mean)[r] = m;                                                \
            if (job->inv_std)                                                                   \
                ((T *)(void *)job->inv_std)[r] = is;                                            \
            if (bias) {                                                                         \
                for (int64_t d = 0; d < n; d++)                                                 \
                    yr[d] = (xr[d] - m) * is * scale[d] + bias[d];                              \
            } else {                                                                            \
                for (int64_t d = 0; d < n; d++)                                                 \
                    yr[d] = (xr[d] - m) * is * scale[d];                                        \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    static void cpu__layer_norm_dx_task_##suffix(void *ctx, uint64_t begin, uint64_t end) {     \
        const cpu__layer_norm_job_t *job = ctx;                                                 \
        const T *scale = (const T *)(const void *)job->scale;                                   \
        const int64_t n = job->n;                                                               \
        for (uint64_t r = begin; r < end; r++) {                                                \
            const T *xr = (const T *)(const void *)job->x + r * (uint64_t)n;                    \
            const T *gr = (const T *)(const void *)job->dy + r * (uint64_t)n;                   \
            T *dxr = (T *)(void *)job->y + r * (uint64_t)n;                                     \
            T m, is, a = 0, b = 0;                                                              \
            cpu__layer_norm_stats_##suffix(xr, n, job->eps, &m, &is);                           \
            for (int64_t d = 0; d < n; d++) {                                                   \
                const T g = gr[d] * scale[d];                                                   \
                a += g;                                                                         \
                b += g * (xr[d] - m) * is;                                                      \
            }                                                                                   \
            a /= (T)n;                                                                          \
            b /= (T)n;                                                                          \
            for (int64_t d = 0; d < n; d++)                                                     \
                dxr[d] = is * (gr[d] * scale[d] - a - (xr[d] - m) * is * b);                    \
        }                                                                                       \
    }                                                                                           \
    static void cpu__layer_norm_dscale_##suffix(const cpu__layer_norm_job_t *job) {             \
        const int64_t n = job->n;                                                               \
        T *ds = (T *)(void *)job->y;                                                            \
        for (int64_t d = 0; d < n; d++)                                                         \
            ds[d] = 0;                                                                          \
        for (int64_t r = 0; r < job->rows; r++) {                                               \
            const T *xr = (const T *)(const void *)job->x + r * n;                              \
            const T *gr = (const T *)(const void *)job->dy + r * n;                             \
            T m, is;                                                                            \
            cpu__layer_norm_stats_##suffix(xr, n, job->eps, &m, &is);                           \
            for (int64_t d = 0; d < n; d++)                                                     \
                ds[d] += gr[d] * (xr[d] - m) * is;                                              \
        }                                                                                       \
    }

CPU__LAYER_NORM_TASKS(float, sqrtf, f32)
CPU__LAYER_NORM_TASKS(double, sqrt, f64)

/*
 * Checks what LayerNormalization and its gradient share: X (input @p xi) of rank 1 or more, the
 * axis attribute within it, Scale (the input after X) of X's dimensions from axis on. Fills the
 * job's row count, row length and epsilon.
 */
static int32_t cpu__layer_norm_setup(const cpu__call_t *call, uint32_t xi,
                                     cpu__layer_norm_job_t *job) {
    const cpu__tensor_t *x = &call->in[xi], *scale = &call->in[xi + 1];
    int64_t axis = 0;
    int32_t st;
    char a[96], b[96];

    memset(job, 0, sizeof *job);
    if ((st = cpu__attr_int(call, "axis", 0, 0, &axis)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "epsilon", 1e-5, &job->eps)) != SES_DRV_OK)
        return st;
    int ok = x->rank >= 1 && axis >= 0 && axis < (int64_t)x->rank &&
             scale->rank == x->rank - (uint32_t)axis;
    for (uint32_t d = 0; ok && d < scale->rank; d++)
        ok = scale->dims[d] == x->dims[(uint32_t)axis + d];
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64
                              " must index X %s and Scale %s must have X's "
                              "dimensions from it on (the host normalizes axis)",
                              axis, cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(scale->dims, scale->rank, b, sizeof b));
    job->n = (int64_t)scale->count;
    job->rows = job->n ? (int64_t)(x->count / (uint64_t)job->n) : 0;
    job->x = x->data;
    job->scale = scale->data;
    return SES_DRV_OK;
}

int32_t cpu__layer_norm(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0];
    cpu__layer_norm_job_t job;
    int32_t st;

    if ((st = cpu__layer_norm_setup(call, 0, &job)) != SES_DRV_OK)
        return st;
    int ok = cpu__same_shape(x, &call->outs[0]) &&
             (call->n_in < 3 || cpu__same_shape(&call->in[1], &call->in[2]));
    for (uint32_t o = 1; ok && o < call->n_out; o++)
        ok = call->outs[o].count == (uint64_t)job.rows;
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "Y must have X's shape, B Scale's, Mean and InvStdDev one element "
                              "per row");
    if (x->count == 0)
        return SES_DRV_OK;
    job.bias = call->n_in > 2 ? call->in[2].data : NULL;
    job.y = call->outs[0].data;
    job.mean = call->n_out > 1 ? call->outs[1].data : NULL;
    job.inv_std = call->n_out > 2 ? call->outs[2].data : NULL;
    cpu__parallel(
        call, (uint64_t)job.rows, (uint64_t)job.n * 6,
        x->dtype == SES_DRV_DTYPE_F32 ? cpu__layer_norm_task_f32 : cpu__layer_norm_task_f64, &job);
    return SES_DRV_OK;
}

int32_t cpu__layer_norm_grad(const cpu__call_t *call) {
    const cpu__tensor_t *dy = &call->in[0], *x = &call->in[1];
    const int f32 = x->dtype == SES_DRV_DTYPE_F32;
    cpu__layer_norm_job_t job;
    int64_t input = 0;
    int32_t st;

    if ((st = cpu__layer_norm_setup(call, 1, &job)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "input", 0, 0, &input)) != SES_DRV_OK)
        return st;
    if (!cpu__same_shape(dy, x) ||
        !cpu__same_shape(input == 0 ? x : &call->in[2], &call->outs[0]) || input < 0 || input > 1)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "dY must have X's shape and the output that of input %" PRId64
                              " (0: X, 1: Scale)",
                              input);
    job.dy = dy->data;
    job.y = call->outs[0].data;
    if (input == 1) {
        /* A sum over the rows into each column: one pass, not split (each part would need
         * every row's statistics again). */
        if (f32)
            cpu__layer_norm_dscale_f32(&job);
        else
            cpu__layer_norm_dscale_f64(&job);
        return SES_DRV_OK;
    }
    if (x->count == 0)
        return SES_DRV_OK;
    cpu__parallel(call, (uint64_t)job.rows, (uint64_t)job.n * 8,
                  f32 ? cpu__layer_norm_dx_task_f32 : cpu__layer_norm_dx_task_f64, &job);
    return SES_DRV_OK;
}
