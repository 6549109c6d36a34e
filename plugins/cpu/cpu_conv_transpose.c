/*
 * ConvTranspose at f32 and f64, any number of spatial dims, groups, bias: per image and group a
 * GEMM of the filters' transpose by the image (W_g^T [Mg * K, Cg] x X_g [Cg, P], K the kernel's
 * taps, P the input's positions) gives every tap's contribution, which col2im adds into Y at
 * position i * strides - pad_begin + tap * dilations (those that land inside Y; the pads and
 * output_padding only crop or extend Y). Y starts as the bias (or zero).
 *
 * The column matrix is cut into blocks of output channels of at most CPU__CT_BLOCK_BYTES, kept
 * in the node's state between launches (no allocation after the first run of a plan). col2im
 * runs on the device's pool by output channel; each Y element adds its taps in a fixed order.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* The most bytes of one column block. */
#define CPU__CT_BLOCK_BYTES ((uint64_t)8 << 20)

typedef struct cpu__ct_state {
    unsigned char *scratch;
    size_t size;
} cpu__ct_state_t;

int32_t cpu__conv_transpose_create(ses_drv_device_t *device, const ses_drv_node_t *node,
                                   void **out_state) {
    (void)node;
    if (!out_state)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "ConvTranspose: create: out_state is NULL");
    *out_state = calloc(1, sizeof(cpu__ct_state_t));
    if (!*out_state)
        return cpu__device_fail(device, SES_DRV_OUT_OF_MEMORY,
                                "ConvTranspose: cannot allocate the kernel's state");
    return SES_DRV_OK;
}

void cpu__conv_transpose_destroy(ses_drv_device_t *device, void *state) {
    cpu__ct_state_t *s = state;
    (void)device;
    if (s)
        free(s->scratch);
    free(s);
}

typedef struct cpu__ct_job {
    const cpu__win_t *w;
    uint32_t dtype;
    const unsigned char *col; /* [mb * K, P] for output channels [m0, m0 + mb) of the group */
    unsigned char *y;         /* Y's plane of the block's first channel */
    int64_t k_count;
} cpu__ct_job_t;

/* Adds column row r (one tap of one channel) into plane @p y, in T. */
#define CPU__CT_ADD(T)                                                                         \
    static void cpu__ct_add_##T(const cpu__win_t *w, const int64_t *tap, const T *col, T *y) { \
        const uint32_t n = w->n, last = n - 1;                                                 \
        int64_t lo, hi, coords[CPU__SPATIAL_MAX] = {0};                                        \
        /* Along the last dim: the inputs i with 0 <= i * s - pb + tap * d < out. */           \
        const int64_t s = w->s[last], off = tap[last] * w->d[last] - w->pb[last];              \
        lo = off >= 0 ? 0 : (-off + s - 1) / s;                                                \
        hi = w->out[last] - off <= 0 ? 0 : (w->out[last] - off - 1) / s + 1;                   \
        if (hi > w->in[last])                                                                  \
            hi = w->in[last];                                                                  \
        if (lo >= hi)                                                                          \
            return;                                                                            \
        const int64_t rows = w->in_count / w->in[last];                                        \
        for (int64_t row = 0; row < rows; row++) {                                             \
            int64_t at = 0, inside = 1;                                                        \
            for (uint32_t k = 0; k < last; k++) {                                              \
                const int64_t o = coords[k] * w->s[k] - w->pb[k] + tap[k] * w->d[k];           \
                inside &= o >= 0 && o < w->out[k];                                             \
                at = at * w->out[k] + o;                                                       \
            }                                                                                  \
            if (inside) {                                                                      \
                T *yr = y + at * w->out[last];                                                 \
                const T *cr = col + row * w->in[last];                                         \
                for (int64_t i = lo; i < hi; i++)                                              \
                    yr[off + i * s] += cr[i];                                                  \
            }                                                                                  \
            for (uint32_t k = last; k-- > 0;) {                                                \
                if (++coords[k] < w->in[k])                                                    \
                    break;                                                                     \
                coords[k] = 0;                                                                 \
            }                                                                                  \
        }                                                                                      \
    }
CPU__CT_ADD(float)
CPU__CT_ADD(double)

/* col2im: item i is output channel i of the block; its K rows add into its own plane. */
static void cpu__ct_col2im_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__ct_job_t *j = ctx;
    const cpu__win_t *w = j->w;
    const size_t es = j->dtype == SES_DRV_DTYPE_F32 ? 4 : 8;
    int64_t tap[CPU__SPATIAL_MAX];

    for (uint64_t m = begin; m < end; m++) {
        unsigned char *plane = j->y + (size_t)m * (size_t)w->out_count * es;
        for (int64_t t = 0; t < j->k_count; t++) {
            const unsigned char *row =
                j->col + ((size_t)m * (size_t)j->k_count + (size_t)t) * (size_t)w->in_count * es;
            int64_t idx = t;
            for (uint32_t k = w->n; k-- > 0;) {
                tap[k] = idx % w->k[k];
                idx /= w->k[k];
            }
            if (j->dtype == SES_DRV_DTYPE_F32)
                cpu__ct_add_float(w, tap, (const float *)(const void *)row, (float *)(void *)plane);
            else
                cpu__ct_add_double(w, tap, (const double *)(const void *)row,
                                   (double *)(void *)plane);
        }
    }
}

/* ConvTranspose: inputs X, W[, B]; normalized window (pads explicit) and group. */
int32_t cpu__conv_transpose(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *wt = &call->in[1], *y = &call->outs[0];
    const cpu__tensor_t *b = call->n_in > 2 ? &call->in[2] : NULL;
    cpu__ct_state_t *state = call->state;
    cpu__win_t w;
    int64_t group;
    char xs[96], ws[96], ys[96];
    int32_t st;

    if ((st = cpu__read_window(call, x, y, &w)) != SES_DRV_OK)
        return st;
    if ((st = cpu__attr_int(call, "group", 1, 1, &group)) != SES_DRV_OK)
        return st;
    const int64_t c = x->dims[1], m = y->dims[1];
    int ok = group >= 1 && wt->rank == x->rank && c % group == 0 && m % group == 0 &&
             wt->dims[0] == c && wt->dims[1] == m / group &&
             (!b || (b->rank == 1 && b->dims[0] == m));
    for (uint32_t k = 0; ok && k < w.n; k++)
        ok = wt->dims[2 + k] == w.k[k];
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "shapes do not fit a transposed convolution with group %" PRId64
                              ": X is %s, W is %s, Y is %s%s",
                              group, cpu__format_dims(x->dims, x->rank, xs, sizeof xs),
                              cpu__format_dims(wt->dims, wt->rank, ws, sizeof ws),
                              cpu__format_dims(y->dims, y->rank, ys, sizeof ys),
                              b ? " (with a bias of one entry per Y channel)" : "");
    const size_t es = x->esize;
    const int64_t cg = c / group, mg = m / group, p = w.in_count, kk = w.k_count;
    /* Y starts as the bias. */
    for (int64_t i = 0; i < y->dims[0] * m; i++) {
        unsigned char *plane = y->data + (size_t)i * (size_t)w.out_count * es;
        if (!b) {
            memset(plane, 0, (size_t)w.out_count * es);
            continue;
        }
        for (int64_t q = 0; q < w.out_count; q++) {
            if (x->dtype == SES_DRV_DTYPE_F32)
                ((float *)(void *)plane)[q] = ((const float *)(const void *)b->data)[i % m];
            else
                ((double *)(void *)plane)[q] = ((const double *)(const void *)b->data)[i % m];
        }
    }
    if (y->count == 0 || x->count == 0 || wt->count == 0)
        return SES_DRV_OK;
    /* Channels per block: as many as fit CPU__CT_BLOCK_BYTES, at least one. */
    const uint64_t per_channel = (uint64_t)kk * (uint64_t)p * es;
    int64_t mb = (int64_t)(CPU__CT_BLOCK_BYTES / (per_channel ? per_channel : 1));
    mb = mb < 1 ? 1 : mb > mg ? mg : mb;
    if ((st = cpu__check_blas_dims(call, mb * kk, p, cg)) != SES_DRV_OK ||
        (st = cpu__check_blas_dims(call, mg * kk, p, cg)) != SES_DRV_OK)
        return st;
    const size_t bytes = (size_t)mb * (size_t)per_channel;
    unsigned char *col;
    if (state && state->size >= bytes) {
        col = state->scratch;
    } else {
        col = malloc(bytes);
        if (!col)
            return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY,
                                  "cannot allocate %zu bytes of columns", bytes);
        if (state) {
            free(state->scratch);
            state->scratch = col;
            state->size = bytes;
        }
    }
    cpu__ct_job_t j = {&w, x->dtype, col, NULL, kk};
    for (int64_t n = 0; n < x->dims[0]; n++) {
        for (int64_t g = 0; g < group; g++) {
            const unsigned char *xg = x->data + (size_t)((n * c + g * cg) * p) * es;
            const unsigned char *wg = wt->data + (size_t)(g * cg * mg * kk) * es;
            for (int64_t m0 = 0; m0 < mg; m0 += mb) {
                const int64_t nm = mg - m0 < mb ? mg - m0 : mb;
                /* col [nm * K, P] = (W_g's columns m0 * K ..)^T x X_g */
                cpu__gemm_call(call->device, 1, x->dtype, 1, 0, nm * kk, p, cg, 1.0,
                               wg + (size_t)(m0 * kk) * es, mg * kk, xg, p, 0.0, col, p);
                j.y = y->data + (size_t)((n * m + g * mg + m0) * w.out_count) * es;
                cpu__parallel(call, (uint64_t)nm, (uint64_t)(kk * p), cpu__ct_col2im_task, &j);
            }
        }
        if (cpu__cancelled(call)) {
            if (!state)
                free(col);
            return cpu__call_fail(call, SES_DRV_CANCELLED, "cancelled");
        }
    }
    if (!state)
        free(col);
    return SES_DRV_OK;
}
