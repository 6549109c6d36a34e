/*
 * The normalization kernels of exported CNNs, at f32 and f64: InstanceNormalization (statistics
 * per image and channel), LRN (a window across channels) and MeanVarianceNormalization
 * (statistics over the axes the host normalized). Sums run in double, in a fixed order, one
 * thread per group of values, so results do not depend on the thread count. General entries.
 */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
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
