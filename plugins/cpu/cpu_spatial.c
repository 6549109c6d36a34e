/*
 * The data-movement kernels of exported models: DepthToSpace, SpaceToDepth and Tile at every
 * dtype (copies of elements by their size), MaxUnpool (f32, f64; i64 indices), and MaxPool with
 * its Indices output (f32, f64, i8, u8) and at i8 and u8 without it (the float MaxPool without
 * Indices is cpu_cnn.c's), RoiAlign (f32, f64: ONNX Runtime's sampling, avg and max). All are
 * general entries: no output shares bytes with an input. The output's dims, checked against the
 * input's and the attributes, say what to compute.
 */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"

/* Copies one element of @p es bytes. */
static inline void cpu__sp_copy(unsigned char *dst, const unsigned char *src, size_t es) {
    switch (es) {
        case 1:
            *dst = *src;
            break;
        case 2:
            memcpy(dst, src, 2);
            break;
        case 4:
            memcpy(dst, src, 4);
            break;
        default:
            memcpy(dst, src, 8);
            break;
    }
}

/* ---- DepthToSpace, SpaceToDepth ------------------------------------------------------------ */

typedef struct cpu__d2s_job {
    const cpu__tensor_t *x, *y;
    int64_t b, crd, to_space;
} cpu__d2s_job_t;

/* Item r is row r of Y (image, channel, row): its columns, each read from X. */
static void cpu__d2s_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__d2s_job_t *j = ctx;
    const int64_t *xd = j->x->dims, *yd = j->y->dims, b = j->b;
    const size_t es = j->x->esize;

    for (uint64_t r = begin; r < end; r++) {
        const int64_t oh = (int64_t)r % yd[2], oc = ((int64_t)r / yd[2]) % yd[1];
        const int64_t n = (int64_t)r / (yd[2] * yd[1]);
        unsigned char *dst = j->y->data + (size_t)r * (size_t)yd[3] * es;
        for (int64_t ow = 0; ow < yd[3]; ow++) {
            int64_t c, h, w;
            if (j->to_space) {
                const int64_t i = oh % b, k = ow % b, cy = yd[1];
                c = j->crd ? oc * b * b + i * b + k : (i * b + k) * cy + oc;
                h = oh / b;
                w = ow / b;
            } else {
                /* SpaceToDepth: Y channel oc = (i * b + k) * C + c reads X[c, oh*b+i, ow*b+k]. */
                const int64_t cx = xd[1], blk = oc / cx;
                c = oc % cx;
                h = oh * b + blk / b;
                w = ow * b + blk % b;
            }
            const size_t src = (size_t)(((n * xd[1] + c) * xd[2] + h) * xd[3] + w);
            cpu__sp_copy(dst + (size_t)ow * es, j->x->data + src * es, es);
        }
    }
}

/* DepthToSpace (blocksize, mode 0 DCR or 1 CRD) and SpaceToDepth (blocksize). */
int32_t cpu__depth_space(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    const int to_space = call->spec->code == CPU__OP_DEPTHTOSPACE;
    cpu__d2s_job_t j = {x, y, 0, 0, to_space};
    char a[96], o[96];
    int32_t st;

    if ((st = cpu__attr_int(call, "blocksize", 0, 0, &j.b)) != SES_DRV_OK)
        return st;
    if (to_space && (st = cpu__attr_int(call, "mode", 1, 0, &j.crd)) != SES_DRV_OK)
        return st;
    const int64_t b = j.b;
    int ok = x->rank == 4 && y->rank == 4 && b >= 1 && x->dims[0] == y->dims[0];
    if (ok && to_space)
        ok = y->dims[1] * b * b == x->dims[1] && y->dims[2] == x->dims[2] * b &&
             y->dims[3] == x->dims[3] * b;
    else if (ok)
        ok = x->dims[1] * b * b == y->dims[1] && x->dims[2] == y->dims[2] * b &&
             x->dims[3] == y->dims[3] * b;
    if (!ok || (j.crd != 0 && j.crd != 1))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "shapes do not fit blocksize %" PRId64 " (mode %" PRId64
                              "): input is %s, output is %s",
                              b, j.crd, cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(y->dims, y->rank, o, sizeof o));
    if (y->count == 0)
        return SES_DRV_OK;
    cpu__parallel(call, (uint64_t)(y->dims[0] * y->dims[1] * y->dims[2]), (uint64_t)y->dims[3],
                  cpu__d2s_task, &j);
    return SES_DRV_OK;
}

/* ---- Tile ----------------------------------------------------------------------------------- */

typedef struct cpu__tile_job {
    const cpu__tensor_t *x, *y;
} cpu__tile_job_t;

/* Item r is row r of Y (every dim but the last): the input's row, repeated along it. */
static void cpu__tile_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__tile_job_t *j = ctx;
    const uint32_t rank = j->y->rank, last = rank - 1;
    const size_t es = j->x->esize;
    const int64_t xw = j->x->dims[last], yw = j->y->dims[last];

    for (uint64_t r = begin; r < end; r++) {
        int64_t rest = (int64_t)r, src_row = 0, stride = 1;
        for (uint32_t d = last; d-- > 0;) {
            const int64_t coord = rest % j->y->dims[d];
            rest /= j->y->dims[d];
            src_row += (coord % j->x->dims[d]) * stride;
            stride *= j->x->dims[d];
        }
        const unsigned char *src = j->x->data + (size_t)(src_row * xw) * es;
        unsigned char *dst = j->y->data + (size_t)r * (size_t)yw * es;
        for (int64_t k = 0; k < yw; k += xw)
            memcpy(dst + (size_t)k * es, src, (size_t)xw * es);
    }
}

int32_t cpu__tile(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    cpu__tile_job_t j = {x, y};
    char a[96], o[96];
    int ok = x->rank == y->rank;

    for (uint32_t d = 0; ok && d < x->rank; d++)
        ok = (x->dims[d] == 0 && y->dims[d] == 0) ||
             (x->dims[d] > 0 && y->dims[d] % x->dims[d] == 0) || y->dims[d] == 0;
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "the output must repeat the input a whole number of times along "
                              "each dim: input is %s, output is %s",
                              cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(y->dims, y->rank, o, sizeof o));
    if (y->count == 0)
        return SES_DRV_OK;
    if (y->rank == 0) {
        cpu__sp_copy(y->data, x->data, x->esize);
        return SES_DRV_OK;
    }
    const int64_t yw = y->dims[y->rank - 1];
    cpu__parallel(call, y->count / (uint64_t)yw, (uint64_t)yw, cpu__tile_task, &j);
    return SES_DRV_OK;
}

/* ---- MaxUnpool ------------------------------------------------------------------------------ */

/* Y = 0, then Y at I[i] = X[i]: I's offsets are flat into the default output (attribute
 * index_dims), whose coordinates Y keeps. A later X element at the same place wins. */
int32_t cpu__max_unpool(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *idx = &call->in[1], *y = &call->outs[0];
    const int64_t *ind = (const int64_t *)(const void *)idx->data;
    int64_t dims[CPU__MAX_RANK];
    uint32_t n_dims = 0;
    uint64_t index_count = 1;
    char a[96], o[96];
    int32_t st;

    if ((st = cpu__check_rank(call, "input 0", x)) != SES_DRV_OK ||
        (st = cpu__attr_ints(call, "index_dims", dims, CPU__MAX_RANK, &n_dims)) != SES_DRV_OK)
        return st;
    int ok = cpu__same_shape(x, idx) && x->rank >= 3 && y->rank == x->rank && n_dims == x->rank &&
             y->dims[0] == x->dims[0] && y->dims[1] == x->dims[1] && dims[0] == x->dims[0] &&
             dims[1] == x->dims[1];
    for (uint32_t d = 0; ok && d < n_dims; d++) {
        ok = dims[d] >= 0;
        index_count *= ok ? (uint64_t)dims[d] : 0;
    }
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "X and I must have one shape, Y and index_dims X's N and C: X is "
                              "%s, Y is %s",
                              cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(y->dims, y->rank, o, sizeof o));
    if (y->count)
        memset(y->data, 0, (size_t)y->count * y->esize);
    for (uint64_t i = 0; i < x->count; i++) {
        int64_t rest = ind[i], at = 0, mult = 1,
                inside = ind[i] >= 0 && (uint64_t)ind[i] < index_count;
        for (uint32_t d = x->rank; inside && d-- > 0;) {
            const int64_t c = rest % dims[d];
            rest /= dims[d];
            inside = c < y->dims[d];
            at += c * mult;
            mult *= y->dims[d];
        }
        if (!inside)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "index %" PRId64 " (element %" PRIu64
                                  " of I) is outside the output %s (indexing %s)",
                                  ind[i], i, cpu__format_dims(y->dims, y->rank, o, sizeof o),
                                  cpu__format_dims(dims, n_dims, a, sizeof a));
        cpu__sp_copy(y->data + (size_t)at * y->esize, x->data + (size_t)i * x->esize, x->esize);
    }
    return SES_DRV_OK;
}

/* ---- MaxPool with Indices, and at i8 and u8 ------------------------------------------------ */

typedef struct cpu__mpi_job {
    const cpu__win_t *w;
    const cpu__tensor_t *x, *y, *ind; /* ind NULL: no Indices */
    int64_t order;                    /* storage_order: 0 row-major, 1 column-major */
} cpu__mpi_job_t;

/* The value of element @p i of a float or int8 tensor, as a double (exact for these types). */
static inline double cpu__mpi_get(const cpu__tensor_t *t, int64_t i) {
    switch (t->dtype) {
        case SES_DRV_DTYPE_F32:
            return ((const float *)(const void *)t->data)[i];
        case SES_DRV_DTYPE_F64:
            return ((const double *)(const void *)t->data)[i];
        case SES_DRV_DTYPE_I8:
            return ((const int8_t *)(const void *)t->data)[i];
        default:
            return t->data[i];
    }
}

static inline void cpu__mpi_put(const cpu__tensor_t *t, int64_t i, double v) {
    switch (t->dtype) {
        case SES_DRV_DTYPE_F32:
            ((float *)(void *)t->data)[i] = (float)v;
            break;
        case SES_DRV_DTYPE_F64:
            ((double *)(void *)t->data)[i] = v;
            break;
        case SES_DRV_DTYPE_I8:
            ((int8_t *)(void *)t->data)[i] = (int8_t)v;
            break;
        default:
            t->data[i] = (unsigned char)v;
            break;
    }
}

/* Item p is plane p (image, channel): every output position's window. */
static void cpu__mpi_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__mpi_job_t *j = ctx;
    const cpu__win_t *w = j->w;
    const uint32_t n = w->n;

    for (uint64_t p = begin; p < end; p++) {
        const int64_t xbase = (int64_t)p * w->in_count, ybase = (int64_t)p * w->out_count;
        int64_t oc[CPU__SPATIAL_MAX] = {0};
        for (int64_t o = 0; o < w->out_count; o++) {
            int64_t tap[CPU__SPATIAL_MAX] = {0}, best_at = -1;
            double best = 0.0;
            for (int64_t t = 0; t < w->k_count; t++) {
                int64_t at = 0, inside = 1;
                for (uint32_t k = 0; k < n; k++) {
                    const int64_t c = oc[k] * w->s[k] - w->pb[k] + tap[k] * w->d[k];
                    inside &= c >= 0 && c < w->in[k];
                    at = at * w->in[k] + c;
                }
                if (inside) {
                    const double v = cpu__mpi_get(j->x, xbase + at);
                    if (best_at < 0 || v > best || (v != v && best == best)) {
                        best = v;
                        best_at = at;
                    }
                }
                for (uint32_t k = n; k-- > 0;) {
                    if (++tap[k] < w->k[k])
                        break;
                    tap[k] = 0;
                }
            }
            if (best_at < 0) /* a window wholly in the padding (dilations): the lowest value */
                best = j->x->dtype == SES_DRV_DTYPE_I8   ? -128.0
                       : j->x->dtype == SES_DRV_DTYPE_U8 ? 0.0
                                                         : -INFINITY;
            cpu__mpi_put(j->y, ybase + o, best);
            if (j->ind) {
                int64_t index = best_at;
                if (best_at >= 0 && j->order) {
                    /* Column-major over the spatial dims: the first varies fastest. */
                    int64_t rest = best_at, mult = 1;
                    index = 0;
                    int64_t coords[CPU__SPATIAL_MAX];
                    for (uint32_t k = n; k-- > 0;) {
                        coords[k] = rest % w->in[k];
                        rest /= w->in[k];
                    }
                    for (uint32_t k = 0; k < n; k++) {
                        index += coords[k] * mult;
                        mult *= w->in[k];
                    }
                }
                ((int64_t *)(void *)j->ind->data)[ybase + o] = index < 0 ? -1 : xbase + index;
            }
            for (uint32_t k = n; k-- > 0;) {
                if (++oc[k] < w->out[k])
                    break;
                oc[k] = 0;
            }
        }
    }
}

int32_t cpu__max_pool_indices(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    cpu__mpi_job_t j = {NULL, x, y, call->n_out > 1 ? &call->outs[1] : NULL, 0};
    cpu__win_t w;
    char a[96], o[96];
    int32_t st;

    if ((st = cpu__read_window(call, x, y, &w)) != SES_DRV_OK)
        return st;
    if (j.ind && (st = cpu__attr_int(call, "storage_order", 1, 0, &j.order)) != SES_DRV_OK)
        return st;
    int ok = y->dims[1] == x->dims[1] && (!j.ind || cpu__same_shape(y, j.ind));
    for (uint32_t k = 0; ok && k < w.n; k++)
        ok = w.out[k] == 0 ||
             (w.out[k] - 1) * w.s[k] - w.pb[k] < w.in[k] + w.pe[k]; /* each window starts inside */
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "the output does not fit the pool of the input: X is %s, Y is %s",
                              cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(y->dims, y->rank, o, sizeof o));
    j.w = &w;
    if (y->count == 0)
        return SES_DRV_OK;
    cpu__parallel(call, (uint64_t)(x->dims[0] * x->dims[1]), (uint64_t)(w.out_count * w.k_count),
                  cpu__mpi_task, &j);
    return SES_DRV_OK;
}

/* ---- RoiAlign ------------------------------------------------------------------------------- */

typedef struct cpu__roi_job {
    const cpu__tensor_t *x, *rois, *bi, *y;
    int64_t max_mode, half_pixel, sampling;
    double scale;
} cpu__roi_job_t;

/* One sample's four taps: offsets into a plane and bilinear weights (all 0 outside X). */
typedef struct cpu__roi_tap {
    int64_t at[4];
    double w[4];
} cpu__roi_tap_t;

static void cpu__roi_tap(double y, double x, int64_t h, int64_t w, cpu__roi_tap_t *t) {
    memset(t, 0, sizeof *t);
    if (y < -1.0 || y > (double)h || x < -1.0 || x > (double)w)
        return;
    y = y <= 0 ? 0 : y;
    x = x <= 0 ? 0 : x;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
    if (y0 >= h - 1) {
        y0 = y1 = h - 1;
        y = (double)y0;
    } else {
        y1 = y0 + 1;
    }
    if (x0 >= w - 1) {
        x0 = x1 = w - 1;
        x = (double)x0;
    } else {
        x1 = x0 + 1;
    }
    const double ly = y - (double)y0, lx = x - (double)x0, hy = 1.0 - ly, hx = 1.0 - lx;
    t->at[0] = y0 * w + x0;
    t->at[1] = y0 * w + x1;
    t->at[2] = y1 * w + x0;
    t->at[3] = y1 * w + x1;
    t->w[0] = hy * hx;
    t->w[1] = hy * lx;
    t->w[2] = ly * hx;
    t->w[3] = ly * lx;
}

/* Item i is (roi, channel) plane i of Y. */
static void cpu__roi_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__roi_job_t *j = ctx;
    const int64_t c = j->x->dims[1], h = j->x->dims[2], w = j->x->dims[3];
    const int64_t oh = j->y->dims[2], ow = j->y->dims[3];
    const double offset = j->half_pixel ? 0.5 : 0.0;

    for (uint64_t i = begin; i < end; i++) {
        const int64_t r = (int64_t)i / c, ch = (int64_t)i % c;
        const int64_t n = ((const int64_t *)(const void *)j->bi->data)[r];
        const int64_t xbase = (n * c + ch) * h * w;
        const double x1 = cpu__mpi_get(j->rois, r * 4) * j->scale - offset;
        const double y1 = cpu__mpi_get(j->rois, r * 4 + 1) * j->scale - offset;
        const double x2 = cpu__mpi_get(j->rois, r * 4 + 2) * j->scale - offset;
        const double y2 = cpu__mpi_get(j->rois, r * 4 + 3) * j->scale - offset;
        double rw = x2 - x1, rh = y2 - y1;
        if (!j->half_pixel) {
            rw = rw > 1.0 ? rw : 1.0;
            rh = rh > 1.0 ? rh : 1.0;
        }
        const double bh = rh / (double)oh, bw = rw / (double)ow;
        const int64_t gh = j->sampling > 0 ? j->sampling : (int64_t)ceil(rh / (double)oh);
        const int64_t gw = j->sampling > 0 ? j->sampling : (int64_t)ceil(rw / (double)ow);
        const double count = gh * gw > 0 ? (double)(gh * gw) : 1.0;
        for (int64_t py = 0; py < oh; py++)
            for (int64_t px = 0; px < ow; px++) {
                double acc = 0.0;
                int any = 0;
                for (int64_t iy = 0; iy < gh; iy++) {
                    const double sy = y1 + (double)py * bh + ((double)iy + 0.5) * bh / (double)gh;
                    for (int64_t ix = 0; ix < gw; ix++) {
                        const double sx =
                            x1 + (double)px * bw + ((double)ix + 0.5) * bw / (double)gw;
                        cpu__roi_tap_t t;
                        cpu__roi_tap(sy, sx, h, w, &t);
                        if (j->max_mode) {
                            double v = t.w[0] * cpu__mpi_get(j->x, xbase + t.at[0]);
                            for (int k = 1; k < 4; k++) {
                                const double u = t.w[k] * cpu__mpi_get(j->x, xbase + t.at[k]);
                                v = u > v ? u : v;
                            }
                            acc = !any || v > acc ? v : acc;
                            any = 1;
                        } else {
                            for (int k = 0; k < 4; k++)
                                acc += t.w[k] * cpu__mpi_get(j->x, xbase + t.at[k]);
                        }
                    }
                }
                cpu__mpi_put(j->y, (int64_t)i * oh * ow + py * ow + px,
                             j->max_mode ? acc : acc / count);
            }
    }
}

/* RoiAlign: X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] -> [R, C, oh, ow]. */
int32_t cpu__roi_align(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *rois = &call->in[1], *bi = &call->in[2];
    const cpu__tensor_t *y = &call->outs[0];
    cpu__roi_job_t j = {x, rois, bi, y, 0, 1, 0, 1.0};
    char a[96], o[96];
    int32_t st;

    if ((st = cpu__attr_int(call, "mode", 1, 0, &j.max_mode)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "half_pixel", 1, 1, &j.half_pixel)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "sampling_ratio", 1, 0, &j.sampling)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "spatial_scale", 1.0, &j.scale)) != SES_DRV_OK)
        return st;
    if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 ||
        bi->dims[0] != rois->dims[0] || y->rank != 4 || y->dims[0] != rois->dims[0] ||
        y->dims[1] != x->dims[1] || j.sampling < 0)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected X [N, C, H, W], rois [R, 4], batch_indices [R] and Y "
                              "[R, C, oh, ow]: X is %s, Y is %s",
                              cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(y->dims, y->rank, o, sizeof o));
    for (int64_t r = 0; r < bi->dims[0]; r++) {
        const int64_t n = ((const int64_t *)(const void *)bi->data)[r];
        if (n < 0 || n >= x->dims[0])
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "batch_indices[%" PRId64 "] is %" PRId64 "; X has %" PRId64
                                  " images",
                                  r, n, x->dims[0]);
    }
    if (y->count == 0)
        return SES_DRV_OK;
    if (x->dims[2] == 0 || x->dims[3] == 0) {
        memset(y->data, 0, (size_t)y->count * y->esize);
        return SES_DRV_OK;
    }
    cpu__parallel(call, (uint64_t)(y->dims[0] * y->dims[1]),
                  (uint64_t)(y->dims[2] * y->dims[3] * 16), cpu__roi_task, &j);
    return SES_DRV_OK;
}
