/*
 * The CNN kernels: Conv (f32 through oneDNN where option driver.cpu.conv lets it, cpu_dnnl.c;
 * otherwise im2col and OpenBLAS GEMM, any number of spatial dims, groups), its
 * gradients (col2im), MaxPool and AveragePool with their gradients, BatchNormalization
 * (inference), Dropout's mask, Pad and its gradient, Clip, Split, Shape, ConstantOfShape and
 * Range. All are general entries (cpu__run_general), so no output shares bytes with an input.
 *
 * The window attributes (kernel_shape, strides, dilations, pads: begins then ends) come
 * normalized from the host, one entry per spatial dim; every input coordinate a window reaches
 * is checked against the input's dims, so whatever the attributes say nothing is read outside
 * the input. Work is split over (image, channel) planes or im2col rows on the device's pool;
 * each output element is computed by one thread in a fixed order, so results do not depend on
 * the number of threads, with one exception: Conv and ConvGrad group images into larger GEMMs on
 * a pool of several threads when there are fewer images (x groups) than threads or an image's
 * columns are large (see cpu__conv_by_images, cpu__conv_scratch), which may round f32 sums
 * differently (the last bits) from one thread's per-image GEMMs. Those GEMMs run on the calling
 * thread with OpenBLAS's own threads, sized to the pool. Otherwise Conv and ConvGrad run images
 * as tasks on the pool, each with a single-threaded GEMM, which gives one thread's values for Y
 * and dX; dW is then summed per thread over a fixed run of images, then across the threads in
 * order, so it depends on the thread count (never on timing).
 */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_act.h"
#include "cpu_dnnl.h"
#include "cpu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * The window (cpu__win_t, cpu_internal.h)
 * ------------------------------------------------------------------------------------------- */

static int64_t cpu__product(const int64_t *dims, uint32_t n) {
    int64_t p = 1;
    for (uint32_t i = 0; i < n; i++)
        p *= dims[i];
    return p;
}

int32_t cpu__read_window(const cpu__call_t *call, const cpu__tensor_t *x,
                                const cpu__tensor_t *y, cpu__win_t *w) {
    int64_t pads[2 * CPU__SPATIAL_MAX];
    uint32_t nk = 0, ns = 0, nd = 0, np = 0;
    char a[96], b[96];
    int32_t st;

    if ((st = cpu__check_rank(call, "input 0", x)) != SES_DRV_OK)
        return st;
    if (x->rank < 3 || y->rank != x->rank || y->dims[0] != x->dims[0])
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected [N, C, spatial...] in and out: input is %s, output is %s",
                              cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(y->dims, y->rank, b, sizeof b));
    w->n = x->rank - 2;
    if ((st = cpu__attr_ints(call, "kernel_shape", w->k, CPU__SPATIAL_MAX, &nk)) != SES_DRV_OK ||
        (st = cpu__attr_ints(call, "strides", w->s, CPU__SPATIAL_MAX, &ns)) != SES_DRV_OK ||
        (st = cpu__attr_ints(call, "dilations", w->d, CPU__SPATIAL_MAX, &nd)) != SES_DRV_OK ||
        (st = cpu__attr_ints(call, "pads", pads, 2 * CPU__SPATIAL_MAX, &np)) != SES_DRV_OK)
        return st;
    if (nk != w->n || ns != w->n || nd != w->n || np != 2 * w->n)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "kernel_shape, strides, dilations and pads have %" PRIu32 ", %" PRIu32
                              ", %" PRIu32 " and %" PRIu32 " entries; the input has %" PRIu32
                              " spatial dims",
                              nk, ns, nd, np, w->n);
    for (uint32_t i = 0; i < w->n; i++) {
        w->pb[i] = pads[i];
        w->pe[i] = pads[w->n + i];
        w->in[i] = x->dims[2 + i];
        w->out[i] = y->dims[2 + i];
        if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1 || w->pb[i] < 0 || w->pe[i] < 0 ||
            w->k[i] > INT32_MAX || w->s[i] > INT32_MAX || w->d[i] > INT32_MAX ||
            w->pb[i] > INT32_MAX || w->pe[i] > INT32_MAX)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "window attributes out of range along spatial dim %" PRIu32
                                  ": kernel %" PRId64 ", stride %" PRId64 ", dilation %" PRId64
                                  ", pads %" PRId64 " and %" PRId64,
                                  i, w->k[i], w->s[i], w->d[i], w->pb[i], w->pe[i]);
    }
    w->k_count = cpu__product(w->k, w->n);
    w->in_count = cpu__product(w->in, w->n);
    w->out_count = cpu__product(w->out, w->n);
    return SES_DRV_OK;
}

/* Kernel offset @p kidx (row-major over the kernel dims) into per-dim offsets @p kk. */
static void cpu__unravel(int64_t idx, const int64_t *dims, uint32_t n, int64_t *coords) {
    for (uint32_t i = n; i-- > 0;) {
        coords[i] = idx % dims[i];
        idx /= dims[i];
    }
}

/* Advances @p coords (row-major over @p dims) by one; returns 0 when it wrapped around. */
static int cpu__next(int64_t *coords, const int64_t *dims, uint32_t n) {
    for (uint32_t i = n; i-- > 0;) {
        if (++coords[i] < dims[i])
            return 1;
        coords[i] = 0;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * im2col and col2im: row r of the column matrix is (channel c, kernel offset kk), and its
 * column p is output position p; the entry is the input at p * stride - pad_begin + kk *
 * dilation, or 0 outside the input.
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__cols {
    const cpu__win_t *w;
    uint32_t dtype;
    const unsigned char *image; /* [channels, in...] of one image's group */
    unsigned char *col;         /* [channels * k_count, out_count] */
    unsigned char *grad;        /* col2im: [channels, in...], accumulated */
    const unsigned char *dcol;  /* col2im: the column gradient */
    int64_t ld;                 /* the column matrix's row length (images side by side) */
} cpu__cols_t;

/* Row @p r of the column matrix: the first input offset of each output row along the last
 * spatial dim is worked out per outer position; the inner loop walks the last dim. With
 * @p to_image, adds column entries into the image instead (col2im). */
static void cpu__col_row(const cpu__cols_t *c, int64_t r, int to_image) {
    const cpu__win_t *w = c->w;
    const uint32_t n = w->n, last = n - 1;
    const int64_t ch = r / w->k_count;
    int64_t kk[CPU__SPATIAL_MAX], o[CPU__SPATIAL_MAX] = {0}, outer[CPU__SPATIAL_MAX];
    const int64_t out_last = w->out[last], in_last = w->in[last], s = w->s[last];
    int64_t p = 0;

    cpu__unravel(r % w->k_count, w->k, n, kk);
    for (uint32_t i = 0; i < last; i++)
        outer[i] = w->out[i];
    const int64_t first = kk[last] * w->d[last] - w->pb[last];
    /* The valid ow range: 0 <= ow * s + first < in_last. */
    int64_t lo = first >= 0 ? 0 : (-first + s - 1) / s;
    int64_t hi = in_last - first <= 0 ? 0 : (in_last - first - 1) / s + 1;
    if (hi > out_last)
        hi = out_last;
    if (lo > hi)
        lo = hi;
    do {
        /* The input offset of this outer position's row, or -1 when it lies outside. */
        int64_t off = ch, valid = 1;
        for (uint32_t i = 0; i < last; i++) {
            const int64_t coord = o[i] * w->s[i] - w->pb[i] + kk[i] * w->d[i];
            valid &= coord >= 0 && coord < w->in[i];
            off = off * w->in[i] + coord;
        }
        off = off * in_last + first;
        const int64_t row = r * c->ld + p;
        if (c->dtype == SES_DRV_DTYPE_F32) {
            if (!to_image) {
                float *dst = (float *)(void *)c->col + row;
                const float *src = (const float *)(const void *)c->image;
                if (!valid) {
                    memset(dst, 0, (size_t)out_last * sizeof *dst);
                } else {
                    for (int64_t q = 0; q < lo; q++)
                        dst[q] = 0.0f;
                    if (s == 1 && hi > lo)
                        memcpy(dst + lo, src + off + lo, (size_t)(hi - lo) * sizeof *dst);
                    else
                        for (int64_t q = lo; q < hi; q++)
                            dst[q] = src[off + q * s];
                    for (int64_t q = hi; q < out_last; q++)
                        dst[q] = 0.0f;
                }
            } else if (valid) {
                const float *src = (const float *)(const void *)c->dcol + row;
                float *dst = (float *)(void *)c->grad;
                for (int64_t q = lo; q < hi; q++)
                    dst[off + q * s] += src[q];
            }
        } else {
            if (!to_image) {
                double *dst = (double *)(void *)c->col + row;
                const double *src = (const double *)(const void *)c->image;
                for (int64_t q = 0; q < out_last; q++)
                    dst[q] = valid && q >= lo && q < hi ? src[off + q * s] : 0.0;
            } else if (valid) {
                const double *src = (const double *)(const void *)c->dcol + row;
                double *dst = (double *)(void *)c->grad;
                for (int64_t q = lo; q < hi; q++)
                    dst[off + q * s] += src[q];
            }
        }
        p += out_last;
    } while (last > 0 && cpu__next(o, outer, last));
}

/* ---------------------------------------------------------------------------------------------
 * Conv and ConvGrad
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__conv_shape {
    cpu__win_t w;
    int64_t batch, c, m, group, cg, mg, kdim; /* kdim = cg * k_count */
} cpu__conv_shape_t;

/* Checks x, w and y (the convolution's output, or dy) against each other and the attributes. */
static int32_t cpu__conv_check(const cpu__call_t *call, const cpu__tensor_t *x,
                               const cpu__tensor_t *wt, const cpu__tensor_t *y,
                               cpu__conv_shape_t *sh) {
    char a[96], b[96], o[96];
    int32_t st;

    if ((st = cpu__read_window(call, x, y, &sh->w)) != SES_DRV_OK)
        return st;
    if ((st = cpu__attr_int(call, "group", 0, 1, &sh->group)) != SES_DRV_OK)
        return st;
    sh->batch = x->dims[0];
    sh->c = x->dims[1];
    sh->m = y->dims[1];
    int ok = wt->rank == x->rank && sh->group >= 1 && wt->dims[0] == sh->m &&
             sh->c % sh->group == 0 && sh->m % sh->group == 0 && wt->dims[1] == sh->c / sh->group;
    for (uint32_t i = 0; ok && i < sh->w.n; i++)
        ok = wt->dims[2 + i] == sh->w.k[i];
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "shapes do not fit a convolution with group %" PRId64
                              ": X is %s, W is %s, Y is %s",
                              sh->group, cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(wt->dims, wt->rank, b, sizeof b),
                              cpu__format_dims(y->dims, y->rank, o, sizeof o));
    sh->cg = sh->c / sh->group;
    sh->mg = sh->m / sh->group;
    sh->kdim = sh->cg * sh->w.k_count;
    return cpu__check_blas_dims(call, sh->kdim, sh->w.out_count, sh->mg);
}

static void cpu__zero(const cpu__tensor_t *t) {
    if (t->count)
        memset(t->data, 0, (size_t)(t->count * t->esize));
}

/*
 * Conv and ConvGrad work on a block of nb images of one group at a time, so that one GEMM covers
 * them all: the column matrix holds the images side by side ([kdim, nb * P], P the output
 * positions of one image), and the filters meet it in one call, W_g [mg, kdim] x col, whose
 * output [mg, nb * P] is then scattered to Y [N, M, P] with the bias added in the same pass.
 * dW is dy [mg, nb * P] x col^T accumulated block by block; dX is W_g^T x dy, then col2im. One
 * large GEMM keeps OpenBLAS's threads (sized to the pool) busy where one small GEMM per image
 * spent its time starting and joining them; im2col, col2im and the scatter run on the pool. With
 * a pool of several threads a block is as many images as fit CPU__CONV_BLOCK_BYTES of scratch;
 * with one thread it is one image, whose GEMM reads and writes the tensors in place, without the
 * scatter or gather, and whose columns stay in cache. So is it when a filter has fewer than
 * CPU__CONV_BLOCK_MIN_KDIM taps (C/group x kernel): the CNN's first layer (1 x 3x3) has K = 9,
 * its GEMMs are as cheap as the scatter, and blocks measured 1.5-2x slower there on 2 threads
 * (the 32 x 3x3 second layer, K = 288, 1.2x faster). Most shapes on several threads rather run by
 * images (below), which leaves blocks to few large images.
 */
#define CPU__CONV_BLOCK_BYTES ((uint64_t)4 << 20)
#define CPU__CONV_BLOCK_MIN_KDIM 64

/*
 * By images: with several threads, Conv and ConvGrad's dX rather run each (image, group) as a
 * task on the pool: im2col into that thread's own column matrix, one GEMM with OpenBLAS set to a
 * single thread (cpu__gemm_single_threaded), the output written in place, so a task is what one
 * thread does per image, and the values are one thread's. One GEMM per image is too small for
 * OpenBLAS to share out (0.3.21 runs a GEMM of m * n * k <= CPU__OPENBLAS_ONE_THREAD_MNK on one
 * thread, as the CNN's first layer's 32 x 784 x 9), and a block's one large GEMM left the
 * im2col, scatter and gather to the pool between GEMMs. The rule: by images when the pool has
 * several threads, there are at least two tasks, one image's columns fit
 * CPU__CONV_BLOCK_BYTES (a column matrix per thread: at most 4 MiB each), and either every
 * thread gets a task (batch x group >= threads) or OpenBLAS would run the image's GEMM on one
 * thread anyway. Otherwise, few large images (batch 1 inference with wide layers) keep blocks
 * and OpenBLAS's threads inside each GEMM. dW sums over the images, so by images it gives each
 * thread's slot a fixed run of images (image n to slot n * threads / batch) and a dW of its own
 * (slot 0 writes dW itself), summed in slot order after: its values depend on the thread count,
 * never on timing, and differ from one thread's in the last bits as blocks do.
 */
#define CPU__OPENBLAS_ONE_THREAD_MNK 262144.0 /* SMP_THRESHOLD_MIN x GEMM_MULTITHREAD_THRESHOLD */

typedef struct cpu__conv_job {
    const cpu__conv_shape_t *sh;
    uint32_t dtype;
    size_t es;
    const unsigned char *x;    /* im2col: X */
    const unsigned char *src;  /* scatter: the GEMM output [mg, nb * P]; gather: dy */
    const unsigned char *bias; /* scatter: B, or NULL */
    unsigned char *dst;        /* scatter: Y; gather: [mg, nb * P]; col2im: dX */
    unsigned char *col;        /* [kdim, nb * P] */
    int64_t n0, nb, g;         /* images [n0, n0 + nb) of group g */
    /* FusedConv: Z (Y's shape, or NULL) and the activation, applied in the scatter's pass that
     * adds the bias; NULL for Conv, which then leaves the scatter to blocks and a bias alone. */
    const unsigned char *z;
    const cpu__act_t *act;
    const ses_drv_device_t *device; /* whose GEMM library runs the products */
} cpu__conv_job_t;

/* The byte offset of plane (image n, channel ch) of a [N, channels, count] tensor. */
static size_t cpu__plane(const cpu__conv_job_t *j, int64_t n, int64_t channels, int64_t ch,
                         int64_t count) {
    return (size_t)((n * channels + ch) * count) * j->es;
}

/* im2col: item i is row i / nb of image i % nb, so that a thread writes one stretch of a row. */
static void cpu__conv_im2col_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__conv_job_t *j = ctx;
    const cpu__conv_shape_t *sh = j->sh;
    const int64_t p = sh->w.out_count;
    for (uint64_t i = begin; i < end; i++) {
        const int64_t r = (int64_t)i / j->nb, img = (int64_t)i % j->nb;
        const cpu__cols_t c = {&sh->w,
                               j->dtype,
                               j->x + cpu__plane(j, j->n0 + img, sh->c, j->g * sh->cg,
                                                 sh->w.in_count),
                               j->col + (size_t)(img * p) * j->es,
                               NULL,
                               NULL,
                               j->nb * p};
        cpu__col_row(&c, r, 0);
    }
}

/* col2im: item i is channel i % cg of image i / cg; its rows write only that channel. */
static void cpu__conv_col2im_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__conv_job_t *j = ctx;
    const cpu__conv_shape_t *sh = j->sh;
    const int64_t p = sh->w.out_count;
    for (uint64_t i = begin; i < end; i++) {
        const int64_t img = (int64_t)i / sh->cg, ch = (int64_t)i % sh->cg;
        const cpu__cols_t c = {&sh->w,
                               j->dtype,
                               NULL,
                               NULL,
                               j->dst + cpu__plane(j, j->n0 + img, sh->c, j->g * sh->cg,
                                                   sh->w.in_count),
                               j->col + (size_t)(img * p) * j->es,
                               j->nb * p};
        for (int64_t k = 0; k < sh->w.k_count; k++)
            cpu__col_row(&c, ch * sh->w.k_count + k, 1);
    }
}

/* d = s + b over @p p values (d += b when the GEMM wrote d itself), in T. */
#define CPU__ROW_PLUS_BIAS_DEFINE(T, SUFFIX)                                                      \
    static void cpu__row_plus_bias_##SUFFIX(void *dst, const void *src, const void *bias,         \
                                            int64_t filter, int64_t p) {                          \
        T *restrict d = (T *)dst;                                                                 \
        const T *s = (const T *)src;                                                              \
        const T b = bias ? ((const T *)bias)[filter] : (T)0;                                      \
        if (s == d)                                                                               \
            for (int64_t q = 0; q < p; q++)                                                       \
                d[q] += b;                                                                        \
        else                                                                                      \
            for (int64_t q = 0; q < p; q++)                                                       \
                d[q] = s[q] + b;                                                                  \
    }
CPU__ROW_PLUS_BIAS_DEFINE(float, f32)
CPU__ROW_PLUS_BIAS_DEFINE(double, f64)

/* Scatter: item i is filter i % mg of image i / mg: its GEMM row, plus the bias, into Y. When
 * the GEMM wrote Y itself (one image per block) only the bias is added. FusedConv adds Z and
 * applies its activation in the same pass. */
static void cpu__conv_scatter_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__conv_job_t *j = ctx;
    const cpu__conv_shape_t *sh = j->sh;
    const int64_t p = sh->w.out_count;
    for (uint64_t i = begin; i < end; i++) {
        const int64_t img = (int64_t)i / sh->mg, m = (int64_t)i % sh->mg;
        const int64_t filter = j->g * sh->mg + m;
        unsigned char *dst = j->dst + cpu__plane(j, j->n0 + img, sh->m, filter, p);
        const unsigned char *src = j->src + (size_t)(m * j->nb * p + img * p) * j->es;
        if (j->act) {
            const unsigned char *z = j->z ? j->z + cpu__plane(j, j->n0 + img, sh->m, filter, p)
                                          : NULL;
            if (j->dtype == SES_DRV_DTYPE_F32)
                cpu__act_row_f32((float *)(void *)dst, (const float *)(const void *)src,
                                 j->bias ? ((const float *)(const void *)j->bias)[filter] : 0.0f,
                                 (const float *)(const void *)z, p, j->act);
            else
                cpu__act_row_f64((double *)(void *)dst, (const double *)(const void *)src,
                                 j->bias ? ((const double *)(const void *)j->bias)[filter] : 0.0,
                                 (const double *)(const void *)z, p, j->act);
            continue;
        }
        if (j->dtype == SES_DRV_DTYPE_F32)
            cpu__row_plus_bias_f32(dst, src, j->bias, filter, p);
        else
            cpu__row_plus_bias_f64(dst, src, j->bias, filter, p);
    }
}

/* Gather: item i is filter i % mg of image i / mg: its dy row into the [mg, nb * P] matrix. */
static void cpu__conv_gather_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__conv_job_t *j = ctx;
    const cpu__conv_shape_t *sh = j->sh;
    const int64_t p = sh->w.out_count;
    for (uint64_t i = begin; i < end; i++) {
        const int64_t img = (int64_t)i / sh->mg, m = (int64_t)i % sh->mg;
        memcpy(j->dst + (size_t)(m * j->nb * p + img * p) * j->es,
               j->src + cpu__plane(j, j->n0 + img, sh->m, j->g * sh->mg + m, p),
               (size_t)p * j->es);
    }
}

/* Conv's and FusedConv's per-node state (cpu__conv_create); ConvGrad has none. */
typedef struct cpu__conv_state {
    uint64_t constant_inputs;     /* the node's DRV-85 bits; 0 from a host older than 1.3 */
    cpu__dnnl_conv_cache_t *dnnl; /* made at the first launch through oneDNN */
    unsigned char *scratch;       /* the im2col path's column matrices, kept between launches */
    size_t scratch_size;
} cpu__conv_state_t;

/*
 * @p bytes of scratch for one launch: the node's kept buffer, grown when too small, so a plan's
 * runs allocate nothing after the first (DESIGN §8); malloc'd for a launch without state
 * (ConvGrad, or a host that called no create). Give it back with cpu__conv_give. Launches of
 * one node never overlap (the ABI's per-node state rule), so the buffer is theirs alone.
 */
static unsigned char *cpu__conv_take(const cpu__call_t *call, size_t bytes) {
    cpu__conv_state_t *state = call->state;

    if (bytes == 0)
        bytes = 1;
    if (!state)
        return malloc(bytes);
    if (state->scratch_size < bytes) {
        free(state->scratch);
        state->scratch_size = 0;
        if (!(state->scratch = malloc(bytes)))
            return NULL;
        state->scratch_size = bytes;
    }
    return state->scratch;
}

static void cpu__conv_give(const cpu__call_t *call, unsigned char *scratch) {
    if (!call->state)
        free(scratch);
}

/* Whether the column matrix of one image is the image itself: 1x1 kernel, stride 1, no pads. */
static int cpu__col_is_image(const cpu__win_t *w) {
    for (uint32_t i = 0; i < w->n; i++)
        if (w->k[i] != 1 || w->s[i] != 1 || w->pb[i] || w->pe[i] || w->in[i] != w->out[i])
            return 0;
    return 1;
}

/*
 * The images per block (see above) and the scratch for one block: @p out_col [kdim, nb * P]
 * and, with more than one image, @p out_mat [mg, nb * P]. Fails when even one image's scratch
 * cannot be had, or a block's columns would not fit OpenBLAS's int.
 */
static int32_t cpu__conv_scratch(const cpu__call_t *call, const cpu__conv_shape_t *sh, size_t es,
                                 int64_t *out_nb, unsigned char **out_col,
                                 unsigned char **out_mat) {
    const uint64_t p = (uint64_t)sh->w.out_count;
    uint64_t per_image, col_bytes, mat_bytes;

    *out_col = *out_mat = NULL;
    if (__builtin_mul_overflow((uint64_t)(sh->kdim + sh->mg), p, &per_image) ||
        __builtin_mul_overflow(per_image, (uint64_t)es, &per_image) || per_image > SIZE_MAX / 4)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "the column matrix is too large");
    /* One thread, or few taps: one image per block (its columns stay in cache, no scatter).
     * Otherwise as many images as the budget holds, so that OpenBLAS's threads get one large
     * GEMM. */
    const uint64_t budget =
        cpu__pool_threads(call->device->pool) > 1 && sh->kdim >= CPU__CONV_BLOCK_MIN_KDIM
            ? CPU__CONV_BLOCK_BYTES
            : 0;
    uint64_t nb = per_image ? budget / per_image : (uint64_t)sh->batch;
    if (nb > (uint64_t)sh->batch)
        nb = (uint64_t)sh->batch;
    if (p && nb > (uint64_t)INT32_MAX / p)
        nb = (uint64_t)INT32_MAX / p;
    if (nb < 1)
        nb = 1;
    col_bytes = (uint64_t)sh->kdim * p * nb * es;
    mat_bytes = nb > 1 ? (uint64_t)sh->mg * p * nb * es : 0;
    *out_nb = (int64_t)nb;
    /* One block (give back only the column matrix): mat from the first cache line after it. */
    col_bytes = (col_bytes + 63) & ~(uint64_t)63;
    *out_col = cpu__conv_take(call, (size_t)(col_bytes + mat_bytes));
    if (!*out_col)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY,
                              "cannot allocate %" PRIu64 " bytes of column matrices",
                              col_bytes + mat_bytes);
    if (mat_bytes)
        *out_mat = *out_col + col_bytes;
    return SES_DRV_OK;
}

/* Fills the column matrix of the job's block (the one image itself when it is its own). */
static const unsigned char *cpu__conv_cols(const cpu__call_t *call, cpu__conv_job_t *j) {
    const cpu__conv_shape_t *sh = j->sh;
    if (j->nb == 1 && cpu__col_is_image(&sh->w))
        return j->x + cpu__plane(j, j->n0, sh->c, j->g * sh->cg, sh->w.in_count);
    cpu__parallel(call, (uint64_t)(sh->kdim * j->nb), (uint64_t)sh->w.out_count,
                  cpu__conv_im2col_task, j);
    return j->col;
}

/* dy of the job's block as [mg, nb * P]: in place for one image, else gathered into @p mat. */
static const unsigned char *cpu__conv_dy(const cpu__call_t *call, cpu__conv_job_t *j,
                                         const unsigned char *dy, unsigned char *mat) {
    const cpu__conv_shape_t *sh = j->sh;
    if (j->nb == 1)
        return dy + cpu__plane(j, j->n0, sh->m, j->g * sh->mg, sh->w.out_count);
    j->src = dy;
    j->dst = mat;
    cpu__parallel(call, (uint64_t)(sh->mg * j->nb), (uint64_t)sh->w.out_count,
                  cpu__conv_gather_task, j);
    return mat;
}

/* Whether Conv (or ConvGrad's dX) runs by images: the rule above. */
static int cpu__conv_by_images(const cpu__call_t *call, const cpu__conv_shape_t *sh, size_t es) {
    const uint32_t threads = cpu__pool_threads(call->device->pool);
    const double tasks = (double)sh->batch * (double)sh->group;
    const double col_bytes =
        cpu__col_is_image(&sh->w) ? 0.0 : (double)sh->kdim * (double)sh->w.out_count * (double)es;
    const double mnk = (double)sh->mg * (double)sh->w.out_count * (double)sh->kdim;

    if (threads < 2 || tasks < 2 || col_bytes > (double)CPU__CONV_BLOCK_BYTES)
        return 0;
    return tasks >= (double)threads || mnk <= CPU__OPENBLAS_ONE_THREAD_MNK;
}

/* The tasks of a launch by images. Item s of the pool's work is scratch slot s: it takes
 * (image, group) tasks from `next` until none are left, so a slot is only ever used by one
 * thread at a time, and the tasks still spread evenly whatever the threads' speeds. */
typedef struct cpu__conv_images {
    cpu__conv_job_t base;     /* sh, dtype, es, x, bias; dst: Y, dX or dW */
    const unsigned char *w;   /* W */
    const unsigned char *dy;  /* dX and dW: dy */
    unsigned char *scratch;   /* one [kdim, P] column matrix per slot */
    size_t slot_bytes;
    int64_t tasks;            /* batch * group: task t is image t / group, group t % group */
    int mode;                 /* CPU__CONV_Y, CPU__CONV_DX or CPU__CONV_DW */
    unsigned char *dw;        /* dW: slot s > 0 sums into dw + (s - 1) * dw_bytes */
    size_t dw_bytes;
    uint64_t slots;           /* the pool's threads */
    atomic_int_fast64_t next; /* the next task to take */
} cpu__conv_images_t;

enum { CPU__CONV_Y, CPU__CONV_DX, CPU__CONV_DW };

/* One (image, group) of the forward pass on the calling thread: what a pool of one does. */
static void cpu__conv_image(const cpu__conv_images_t *im, cpu__conv_job_t *j) {
    const cpu__conv_shape_t *sh = j->sh;
    const int64_t p = sh->w.out_count;
    const unsigned char *cols = j->x + cpu__plane(j, j->n0, sh->c, j->g * sh->cg, sh->w.in_count);
    unsigned char *out = j->dst + cpu__plane(j, j->n0, sh->m, j->g * sh->mg, p);

    if (!cpu__col_is_image(&sh->w)) {
        cpu__conv_im2col_task(j, 0, (uint64_t)sh->kdim);
        cols = j->col;
    }
    cpu__gemm_call(j->device, 0, j->dtype, 0, 0, sh->mg, p, sh->kdim, 1.0,
                   im->w + (size_t)(j->g * sh->mg * sh->kdim) * j->es, sh->kdim, cols, p, 0.0, out,
                   p);
    if (j->bias || j->act) {
        j->src = out;
        cpu__conv_scatter_task(j, 0, (uint64_t)sh->mg);
    }
}

/* One (image, group) of dX, into the zeroed dX: W_g^T dy, then col2im. */
static void cpu__conv_image_dx(const cpu__conv_images_t *im, cpu__conv_job_t *j) {
    const cpu__conv_shape_t *sh = j->sh;
    const int64_t p = sh->w.out_count;
    const unsigned char *dy_g = im->dy + cpu__plane(j, j->n0, sh->m, j->g * sh->mg, p);
    const unsigned char *w_g = im->w + (size_t)(j->g * sh->mg * sh->kdim) * j->es;

    if (cpu__col_is_image(&sh->w)) {
        /* The column gradient is the image gradient itself. */
        cpu__gemm_call(j->device, 0, j->dtype, 1, 0, sh->kdim, p, sh->mg, 1.0, w_g, sh->kdim, dy_g,
                       p, 0.0, j->dst + cpu__plane(j, j->n0, sh->c, j->g * sh->cg, sh->w.in_count),
                       p);
        return;
    }
    cpu__gemm_call(j->device, 0, j->dtype, 1, 0, sh->kdim, p, sh->mg, 1.0, w_g, sh->kdim, dy_g, p,
                   0.0, j->col, p);
    cpu__conv_col2im_task(j, 0, (uint64_t)sh->cg);
}

/* Slot @p s's images of dW, summed (GEMMs with beta 1) into its own zeroed dW, one image and
 * group at a time in order, as one thread sums them all. */
static void cpu__conv_slot_dw(const cpu__conv_images_t *im, uint64_t s) {
    const cpu__conv_shape_t *sh = im->base.sh;
    const int64_t p = sh->w.out_count;
    const int64_t n_begin = (int64_t)((uint64_t)sh->batch * s / im->slots);
    const int64_t n_end = (int64_t)((uint64_t)sh->batch * (s + 1) / im->slots);
    unsigned char *dw = s ? im->dw + (s - 1) * im->dw_bytes : im->base.dst;
    cpu__conv_job_t j = im->base;

    j.nb = 1;
    j.col = im->scratch + s * im->slot_bytes;
    for (j.n0 = n_begin; j.n0 < n_end; j.n0++)
        for (j.g = 0; j.g < sh->group; j.g++) {
            const unsigned char *cols =
                j.x + cpu__plane(&j, j.n0, sh->c, j.g * sh->cg, sh->w.in_count);
            if (!cpu__col_is_image(&sh->w)) {
                cpu__conv_im2col_task(&j, 0, (uint64_t)sh->kdim);
                cols = j.col;
            }
            cpu__gemm_call(j.device, 0, j.dtype, 0, 1, sh->mg, sh->kdim, p, 1.0,
                           im->dy + cpu__plane(&j, j.n0, sh->m, j.g * sh->mg, p), p, cols, p, 1.0,
                           dw + (size_t)(j.g * sh->mg * sh->kdim) * j.es, sh->kdim);
        }
}

/* dW's sum: item i is element i of dW, plus the other slots' element i in slot order. */
static void cpu__conv_sum_dw_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__conv_images_t *im = ctx;
    const size_t n = im->dw_bytes / im->base.es;
    for (uint64_t s = 1; s < im->slots; s++) {
        const unsigned char *part = im->dw + (s - 1) * im->dw_bytes;
        if (im->base.dtype == SES_DRV_DTYPE_F32) {
            float *restrict d = (float *)(void *)im->base.dst;
            const float *restrict a = (const float *)(const void *)part;
            for (uint64_t i = begin; i < end && i < n; i++)
                d[i] += a[i];
        } else {
            double *restrict d = (double *)(void *)im->base.dst;
            const double *restrict a = (const double *)(const void *)part;
            for (uint64_t i = begin; i < end && i < n; i++)
                d[i] += a[i];
        }
    }
}

static void cpu__conv_images_task(void *ctx, uint64_t begin, uint64_t end) {
    cpu__conv_images_t *im = ctx;
    for (uint64_t s = begin; s < end; s++) {
        if (im->mode == CPU__CONV_DW) {
            cpu__conv_slot_dw(im, s);
            continue;
        }
        for (;;) {
            const int64_t t = (int64_t)atomic_fetch_add_explicit(&im->next, 1,
                                                                 memory_order_relaxed);
            if (t >= im->tasks)
                break;
            cpu__conv_job_t j = im->base;
            j.n0 = t / j.sh->group;
            j.g = t % j.sh->group;
            j.nb = 1;
            j.col = im->scratch + s * im->slot_bytes;
            if (im->mode == CPU__CONV_DX)
                cpu__conv_image_dx(im, &j);
            else
                cpu__conv_image(im, &j);
        }
    }
}

/*
 * Runs Conv (@p mode CPU__CONV_Y: @p base's dst is Y), ConvGrad's dX (CPU__CONV_DX: dst is the
 * zeroed dX) or its dW (CPU__CONV_DW: dst is the zeroed dW) by images: a column matrix per pool
 * thread, and for dW a dW per thread but the first, allocated here once for the launch, and
 * OpenBLAS on one thread for the duration.
 */
static int32_t cpu__conv_run_images(const cpu__call_t *call, const cpu__conv_job_t *base,
                                    const unsigned char *w, const unsigned char *dy, int mode) {
    const cpu__conv_shape_t *sh = base->sh;
    const uint32_t threads = cpu__pool_threads(call->device->pool);
    /* Whole cache lines per slot, so that no two threads write one line. */
    const size_t slot = cpu__col_is_image(&sh->w)
                            ? 0
                            : ((size_t)(sh->kdim * sh->w.out_count) * base->es + 63) & ~(size_t)63;
    const size_t dw_count = (size_t)(sh->m * sh->kdim);
    const size_t dw_bytes = mode == CPU__CONV_DW ? (dw_count * base->es + 63) & ~(size_t)63 : 0;
    const size_t bytes = slot * threads + dw_bytes * (threads - 1);
    cpu__conv_images_t im = {.base = *base,
                             .w = w,
                             .dy = dy,
                             .slot_bytes = slot,
                             .tasks = sh->batch * sh->group,
                             .mode = mode,
                             .dw_bytes = dw_bytes,
                             .slots = threads};
    /* Each slot's share of the work, in element operations, so that cpu__parallel keeps tiny
     * convolutions on the calling thread. */
    double cost = (double)im.tasks * (double)sh->mg * (double)sh->w.out_count *
                  (double)(sh->kdim + 1) / (double)threads;

    im.scratch = cpu__conv_take(call, bytes);
    if (!im.scratch)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY,
                              "cannot allocate %zu bytes of column matrices", bytes);
    im.dw = im.scratch + slot * threads;
    if (dw_bytes)
        memset(im.dw, 0, dw_bytes * (threads - 1));
    atomic_init(&im.next, 0);
    if (cost > (double)UINT32_MAX)
        cost = (double)UINT32_MAX;
    cpu__gemm_single_threaded(1);
    cpu__parallel(call, threads, (uint64_t)cost + 1, cpu__conv_images_task, &im);
    cpu__gemm_single_threaded(0);
    if (mode == CPU__CONV_DW)
        cpu__parallel(call, dw_count, threads - 1, cpu__conv_sum_dw_task, &im);
    cpu__conv_give(call, im.scratch);
    if (cpu__cancelled(call))
        return cpu__call_fail(call, SES_DRV_CANCELLED, "cancelled");
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Conv through oneDNN (cpu_dnnl.c): the path, its state, and the switch
 * ------------------------------------------------------------------------------------------- */

int32_t cpu__conv_open(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx, uint32_t *out_dnnl,
                       uint32_t *out_mode, char *out_desc, size_t desc_size) {
    char value[32], why[256];
    uint32_t mode = CPU__CONV_AUTO;
    int32_t st;

    *out_dnnl = 0;
    *out_mode = CPU__CONV_AUTO;
    out_desc[0] = '\0';
    if ((st = cpu__read_option(host, ctx, CPU__CONV_OPTION, "auto, dnnl or im2col", value,
                               sizeof value)) != SES_DRV_OK)
        return st;
    if (value[0] == '\0' || strcmp(value, "auto") == 0)
        mode = CPU__CONV_AUTO;
    else if (strcmp(value, "dnnl") == 0)
        mode = CPU__CONV_DNNL;
    else if (strcmp(value, "im2col") == 0)
        mode = CPU__CONV_IM2COL;
    else
        return cpu__fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                         "option %s is \"%s\"; accepted are auto (oneDNN where it loads, "
                         "else im2col), dnnl and im2col",
                         CPU__CONV_OPTION, value);
    *out_mode = mode;
    if (mode == CPU__CONV_IM2COL) {
        snprintf(out_desc, desc_size, "conv: im2col (forced by %s)", CPU__CONV_OPTION);
        return SES_DRV_OK;
    }
    if (cpu__dnnl_load(why, sizeof why) != SES_DRV_OK) {
        if (mode == CPU__CONV_DNNL)
            return cpu__fail(host, ctx, SES_DRV_UNAVAILABLE,
                             "option %s is dnnl, but oneDNN cannot be used: %s",
                             CPU__CONV_OPTION, why);
        snprintf(out_desc, desc_size, "conv: im2col (no oneDNN: %.120s)", why);
        return SES_DRV_OK;
    }
    *out_dnnl = 1;
    snprintf(out_desc, desc_size, "conv: %s%s", cpu__dnnl_describe(),
             mode == CPU__CONV_DNNL ? ", forced" : "");
    return SES_DRV_OK;
}

int32_t cpu__conv_create(ses_drv_device_t *device, const ses_drv_node_t *node, void **out_state) {
    if (!out_state)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Conv: create: out_state is NULL");
    *out_state = NULL;
    cpu__conv_state_t *state = calloc(1, sizeof *state);
    if (!state)
        return cpu__device_fail(device, SES_DRV_OUT_OF_MEMORY,
                                "Conv: cannot allocate the kernel's state");
    /* DRV-85: read only from a node that has the field. */
    if (node && node->struct_size >= offsetof(ses_drv_node_t, constant_inputs) + sizeof(uint64_t))
        state->constant_inputs = node->constant_inputs;
    *out_state = state;
    return SES_DRV_OK;
}

void cpu__conv_destroy(ses_drv_device_t *device, void *state) {
    cpu__conv_state_t *s = state;
    (void)device;
    if (!s)
        return;
    cpu__dnnl_conv_cache_destroy(s->dnnl);
    free(s->scratch);
    free(s);
}

/*
 * The convolution of @p sh through oneDNN, with the caller's tensors in @p layout
 * (CPU__DNNL_X_BLOCKED, CPU__DNNL_YZ_BLOCKED: NchwcConv's) or dense (0), keeping oneDNN's cache
 * in @p state: SES_DRV_OK when done, SES_DRV_UNIMPLEMENTED (no message) when oneDNN has no
 * convolution for it, another code with a message when it failed.
 */
static int32_t cpu__conv_dnnl_run(const cpu__call_t *call, cpu__conv_state_t *state,
                                  const cpu__conv_shape_t *sh, const cpu__tensor_t *b,
                                  const cpu__tensor_t *z, const cpu__act_t *act, uint32_t layout) {
    const cpu__tensor_t *x = &call->in[0], *wt = &call->in[1];
    cpu__dnnl_conv_params_t p;
    char why[256];

    memset(&p, 0, sizeof p);
    p.spatial = sh->w.n;
    p.batch = sh->batch;
    p.in_channels = sh->c;
    p.out_channels = sh->m;
    p.group = sh->group;
    for (uint32_t i = 0; i < sh->w.n; i++) {
        p.in[i] = sh->w.in[i];
        p.out[i] = sh->w.out[i];
        p.kernel[i] = sh->w.k[i];
        p.strides[i] = sh->w.s[i];
        p.dilations[i] = sh->w.d[i];
        p.pads_begin[i] = sh->w.pb[i];
        p.pads_end[i] = sh->w.pe[i];
    }
    if (!cpu__dnnl_conv_supported(&p))
        return SES_DRV_UNIMPLEMENTED;
    if (!state->dnnl && cpu__dnnl_conv_cache_create(&state->dnnl) != SES_DRV_OK)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "cannot allocate oneDNN's cache");
    /* The activation as oneDNN's post-op: Clip's alpha and beta are its bounds. */
    int dnnl_act = CPU__DNNL_ACT_NONE;
    float alpha = 0.0f, beta = 0.0f;
    if (act) {
        switch (act->kind) {
        case CPU__ACT_IDENTITY: break;
        case CPU__ACT_RELU: dnnl_act = CPU__DNNL_ACT_RELU; break;
        case CPU__ACT_LEAKYRELU:
            dnnl_act = CPU__DNNL_ACT_LEAKY_RELU;
            alpha = (float)act->alpha;
            break;
        case CPU__ACT_SIGMOID: dnnl_act = CPU__DNNL_ACT_SIGMOID; break;
        case CPU__ACT_TANH: dnnl_act = CPU__DNNL_ACT_TANH; break;
        case CPU__ACT_CLIP:
            dnnl_act = CPU__DNNL_ACT_CLIP;
            alpha = (float)act->lo;
            beta = (float)act->hi;
            break;
        default: return SES_DRV_UNIMPLEMENTED;
        }
    }
    const uint32_t flags = ((state->constant_inputs & 2u) ? CPU__DNNL_W_CONSTANT : 0) | layout;
    /* oneDNN's OpenMP team takes the cores now: the pool's idle workers stop spinning. */
    if (cpu__pool_threads(call->device->pool) > 1)
        cpu__pool_park(call->device->pool);
    int32_t st = cpu__dnnl_conv(state->dnnl, &p, (const float *)(const void *)x->data,
                                (const float *)(const void *)wt->data,
                                b ? (const float *)(const void *)b->data : NULL,
                                z ? (const float *)(const void *)z->data : NULL,
                                (float *)(void *)call->outs[0].data, dnnl_act, alpha, beta,
                                cpu__pool_threads(call->device->pool), flags, why, sizeof why);
    if (st == SES_DRV_OK || st == SES_DRV_UNIMPLEMENTED)
        return st;
    return cpu__call_fail(call, st, "%s", why);
}

/*
 * Runs an f32 Conv through oneDNN when the driver chose it and the node fits: SES_DRV_OK when
 * done, SES_DRV_UNIMPLEMENTED when the caller should take the im2col path, another code (with a
 * message) when it failed.
 */
static int32_t cpu__conv_dnnl(const cpu__call_t *call, const cpu__conv_shape_t *sh,
                              const cpu__tensor_t *b, const cpu__tensor_t *z,
                              const cpu__act_t *act) {
    const cpu__conv_state_t *state = call->state;
    const cpu__tensor_t *x = &call->in[0];

    if (!state || !call->device->conv_dnnl || x->dtype != SES_DRV_DTYPE_F32 ||
        sh->w.n > CPU__DNNL_MAX_SPATIAL)
        return SES_DRV_UNIMPLEMENTED;
    /* Chosen, not forced: a filter of few taps (C/group x kernel) is little arithmetic per
     * output, and oneDNN's reorder of Y back to nchw then costs more than it saves. The bench
     * CNN's first layer (1 channel, 3x3: 9 taps, batch 64) takes 0.50-0.56 ms by im2col against
     * 0.78-0.79 ms through oneDNN (0.27 of which is the convolution, the rest the reorder of Y)
     * on 1 thread of the shared 2-core Xeon. Grouped convolutions (depthwise) are one small GEMM
     * per group by im2col, so they always go to oneDNN. */
    if (call->device->conv_mode == CPU__CONV_AUTO && sh->group == 1 && sh->kdim < 32)
        return SES_DRV_UNIMPLEMENTED;
    /* Nor a 1x1 filter with stride 1 and no pads, ungrouped: its im2col is the image itself, so
     * that path is one GEMM per image straight from X into Y (oneDNN's sgemm on the pool), with
     * no reorder either way. On 1 thread of the shared 2-core Xeon, squeezenet1_0 (mostly 1x1
     * squeeze and expand layers) went from 13.8-14.3 to 12.7-12.9 ms and resnet50 from 63.8-65.2
     * to 58.9-59.7 ms (session-run, medians of runs 2..N, the two alternated). */
    if (call->device->conv_mode == CPU__CONV_AUTO && sh->group == 1 &&
        cpu__col_is_image(&sh->w))
        return SES_DRV_UNIMPLEMENTED;
    return cpu__conv_dnnl_run(call, call->state, sh, b, z, act, 0);
}

/* Conv's paths other than oneDNN's: no taps, image by image, or im2col and GEMM over blocks. */
static int32_t cpu__conv_forward_direct(const cpu__call_t *call, const cpu__conv_shape_t *sh_in,
                                        const cpu__conv_job_t *job) {
    const cpu__tensor_t *x = &call->in[0], *wt = &call->in[1];
    const cpu__tensor_t *y = &call->outs[0];
    const cpu__conv_shape_t sh = *sh_in;
    cpu__conv_job_t j = *job;
    unsigned char *col = NULL, *mat = NULL;
    const size_t es = x->esize;
    const int64_t p = sh.w.out_count;
    int64_t nb;
    int32_t st;

    j.sh = &sh;
    if (sh.kdim == 0) {
        /* No taps: the output is the bias (or 0), one image per block. */
        cpu__zero(y);
        for (j.n0 = 0; j.n0 < sh.batch; j.n0++)
            for (j.g = 0; j.g < sh.group; j.g++) {
                j.src = y->data + cpu__plane(&j, j.n0, sh.m, j.g * sh.mg, p);
                cpu__conv_scatter_task(&j, 0, (uint64_t)sh.mg);
            }
        return SES_DRV_OK;
    }
    if (cpu__conv_by_images(call, &sh, es))
        return cpu__conv_run_images(call, &j, wt->data, NULL, CPU__CONV_Y);
    if ((st = cpu__conv_scratch(call, &sh, es, &nb, &col, &mat)) != SES_DRV_OK)
        return st;
    j.col = col;
    for (j.n0 = 0; j.n0 < sh.batch; j.n0 += j.nb) {
        j.nb = sh.batch - j.n0 < nb ? sh.batch - j.n0 : nb;
        for (j.g = 0; j.g < sh.group; j.g++) {
            const unsigned char *cols = cpu__conv_cols(call, &j);
            /* One image writes its own Y block; several write mat, scattered below. */
            unsigned char *out =
                j.nb == 1 ? y->data + cpu__plane(&j, j.n0, sh.m, j.g * sh.mg, p) : mat;
            cpu__gemm_call(call->device, 1, x->dtype, 0, 0, sh.mg, j.nb * p, sh.kdim, 1.0,
                           wt->data + (size_t)(j.g * sh.mg * sh.kdim) * es, sh.kdim, cols, j.nb * p,
                           0.0, out, j.nb * p);
            if (j.nb > 1 || j.bias || j.act) {
                j.src = out;
                cpu__parallel(call, (uint64_t)(sh.mg * j.nb), (uint64_t)p, cpu__conv_scatter_task,
                              &j);
            }
        }
        if (cpu__cancelled(call)) {
            cpu__conv_give(call, col);
            return cpu__call_fail(call, SES_DRV_CANCELLED, "cancelled");
        }
    }
    cpu__conv_give(call, col);
    return SES_DRV_OK;
}

/*
 * Conv's forward pass, with bias @p b (or NULL), and for FusedConv addend @p z (Y's shape, or
 * NULL) and activation @p act (NULL for Conv).
 */
static int32_t cpu__conv_forward(const cpu__call_t *call, const cpu__tensor_t *b,
                                 const cpu__tensor_t *z, const cpu__act_t *act) {
    const cpu__tensor_t *x = &call->in[0], *wt = &call->in[1];
    const cpu__tensor_t *y = &call->outs[0];
    cpu__conv_shape_t sh;
    unsigned char *z_aside = NULL;
    int32_t st;

    if ((st = cpu__conv_check(call, x, wt, y, &sh)) != SES_DRV_OK)
        return st;
    if (b && (b->rank != 1 || b->dims[0] != sh.m))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "B must have one entry per filter");
    if (z && !cpu__same_shape(z, y))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "Z must have Y's shape");
    if (y->count == 0)
        return SES_DRV_OK;
    if (sh.kdim != 0 && (st = cpu__conv_dnnl(call, &sh, b, z, act)) != SES_DRV_UNIMPLEMENTED)
        return st;
    /* Y written over Z (DRV-86): oneDNN, above, reads each element of Z before it writes Y's;
     * the paths below write Y before they add Z, so they read a copy of it. */
    if (z && z->data == y->data) {
        const size_t bytes = (size_t)z->count * z->esize;
        if (!(z_aside = malloc(bytes)))
            return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "no memory to set Z aside");
        memcpy(z_aside, z->data, bytes);
    }
    const cpu__conv_job_t j = {&sh, x->dtype, x->esize, x->data, NULL,
                               b ? b->data : NULL, y->data, NULL, 0, 1, 0,
                               z_aside ? z_aside : z ? z->data : NULL, act, call->device};
    st = cpu__conv_forward_direct(call, &sh, &j);
    free(z_aside);
    return st;
}

int32_t cpu__conv(const cpu__call_t *call) {
    return cpu__conv_forward(call, call->n_in == 3 ? &call->in[2] : NULL, NULL, NULL);
}

/*
 * The fused convolutions' inputs: X, W, then B and Z as attributes has_bias and has_z say (a
 * 3-input node's third is either), and the activation. *@p out_b and *@p out_z point at B and
 * at @p z (filled) or are NULL.
 */
static int32_t cpu__fused_conv_inputs(const cpu__call_t *call, const cpu__tensor_t **out_b,
                                      cpu__tensor_t *z, const cpu__tensor_t **out_z,
                                      cpu__act_t *act) {
    int64_t has_bias, has_z;
    char why[160];
    int32_t st;

    if ((st = cpu__attr_int(call, "has_bias", 1, 0, &has_bias)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "has_z", 1, 0, &has_z)) != SES_DRV_OK)
        return st;
    has_bias = has_bias != 0;
    has_z = has_z != 0;
    if ((int64_t)call->n_in != 2 + has_bias + has_z)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "%" PRIu32 " inputs, but has_bias is %" PRId64 " and has_z %" PRId64,
                              call->n_in, has_bias, has_z);
    if (cpu__act_read(call->node, act, why, sizeof why) != SES_DRV_OK)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "%s", why);
    if (has_z)
        *z = cpu__input(call, (uint32_t)(2 + has_bias));
    *out_b = has_bias ? &call->in[2] : NULL;
    *out_z = has_z ? z : NULL;
    return SES_DRV_OK;
}

/* FusedConv: inputs X, W, then B and Z as has_bias and has_z say; Conv's pass, with Z and the
 * activation applied where the bias is added. */
int32_t cpu__fused_conv(const cpu__call_t *call) {
    const cpu__tensor_t *b = NULL, *zp = NULL;
    cpu__tensor_t z;
    cpu__act_t act;
    int32_t st;

    if ((st = cpu__fused_conv_inputs(call, &b, &z, &zp, &act)) != SES_DRV_OK)
        return st;
    return cpu__conv_forward(call, b, zp, &act);
}

/*
 * NchwcConv: FusedConv with Y (and Z) in the NCHWc16 layout, [N, M/16, OH, OW, 16], and X either
 * plain [N, C, H, W] (the first convolution of a blocked region, any C) or blocked
 * [N, C/16, H, W, 16]. oneDNN reads X and writes Y where they are (nChw16c is its aBcd16b);
 * there is no im2col path, so supports_node (cpu_nchwc.c) refuses the node where oneDNN is not
 * loaded, and a launch that reaches here anyway fails saying why.
 */
int32_t cpu__nchwc_conv(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *wt = &call->in[1], *y = &call->outs[0];
    const cpu__tensor_t *b = NULL, *zp = NULL;
    cpu__tensor_t z, xv, yv;
    int64_t xd[4], yd[4];
    cpu__conv_shape_t sh;
    cpu__act_t act;
    char a[96], c[96], o[96];
    int32_t st;

    if ((st = cpu__fused_conv_inputs(call, &b, &z, &zp, &act)) != SES_DRV_OK)
        return st;
    const int x_blocked = x->rank == 5;
    if ((x->rank != 4 && !(x_blocked && x->dims[4] == 16)) || wt->rank != 4 || y->rank != 5 ||
        y->dims[4] != 16)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected X [N, C, H, W] or [N, C/16, H, W, 16], W [M, C/group, "
                              "kh, kw] and Y [N, M/16, OH, OW, 16]: X is %s, W is %s, Y is %s",
                              cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(wt->dims, wt->rank, c, sizeof c),
                              cpu__format_dims(y->dims, y->rank, o, sizeof o));
    /* The plain NCHW shapes the blocked tensors stand for: Conv's checks then apply as they are. */
    xd[0] = x->dims[0], xd[1] = x_blocked ? x->dims[1] * 16 : x->dims[1];
    xd[2] = x->dims[2], xd[3] = x->dims[3];
    yd[0] = y->dims[0], yd[1] = y->dims[1] * 16, yd[2] = y->dims[2], yd[3] = y->dims[3];
    xv = *x, xv.rank = 4, xv.dims = xd;
    yv = *y, yv.rank = 4, yv.dims = yd;
    if ((st = cpu__conv_check(call, &xv, wt, &yv, &sh)) != SES_DRV_OK)
        return st;
    if (b && (b->rank != 1 || b->dims[0] != sh.m))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "B must have one entry per filter (%" PRId64 "): B is %s", sh.m,
                              cpu__format_dims(b->dims, b->rank, a, sizeof a));
    if (zp && !cpu__same_shape(zp, y))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "Z must have Y's shape %s: Z is %s",
                              cpu__format_dims(y->dims, y->rank, o, sizeof o),
                              cpu__format_dims(zp->dims, zp->rank, a, sizeof a));
    if (y->count == 0)
        return SES_DRV_OK;
    if (!call->device->conv_dnnl || x->dtype != SES_DRV_DTYPE_F32)
        return cpu__call_fail(call, SES_DRV_UNIMPLEMENTED, "runs only through oneDNN, %s",
                              call->device->conv_dnnl ? "at f32"
                                                      : "which this device does not use");
    /* A host that made no per-node state (create is the host's to call) gets a cache for this
     * launch alone: the primitive is built and dropped again, slow but right. */
    cpu__conv_state_t launch_state = {0};
    cpu__conv_state_t *state = call->state ? call->state : &launch_state;
    st = cpu__conv_dnnl_run(call, state, &sh, b, zp, &act,
                            (x_blocked ? CPU__DNNL_X_BLOCKED : 0) | CPU__DNNL_YZ_BLOCKED);
    cpu__dnnl_conv_cache_destroy(launch_state.dnnl);
    if (st == SES_DRV_UNIMPLEMENTED)
        return cpu__call_fail(call, st, "oneDNN has no convolution for X %s, W %s, group %" PRId64,
                              cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(wt->dims, wt->rank, c, sizeof c), sh.group);
    return st;
}

/* ConvGrad: inputs dy, X, W; input 0 gives dX (col2im of W^T dy), 1 gives dW (dy col^T). */
int32_t cpu__conv_grad(const cpu__call_t *call) {
    const cpu__tensor_t *dy = &call->in[0], *x = &call->in[1], *wt = &call->in[2];
    const cpu__tensor_t *out = &call->outs[0];
    cpu__conv_shape_t sh;
    unsigned char *col = NULL, *mat = NULL;
    int64_t input, nb;
    int32_t st;

    if ((st = cpu__conv_check(call, x, wt, dy, &sh)) != SES_DRV_OK)
        return st;
    if ((st = cpu__attr_int(call, "input", 0, 0, &input)) != SES_DRV_OK)
        return st;
    if ((input != 0 && input != 1) || !cpu__same_shape(out, input ? wt : x))
        return cpu__call_fail(
            call, SES_DRV_INVALID_ARGUMENT,
            "attribute input is %" PRId64 "; it must be 0 (output shaped as X) or 1 (as W)", input);
    cpu__zero(out);
    if (out->count == 0 || dy->count == 0 || sh.kdim == 0)
        return SES_DRV_OK;
    const size_t es = x->esize;
    const int64_t p = sh.w.out_count;
    /* dW by images needs a dW per thread: only for filters of at most CPU__CONV_BLOCK_BYTES. */
    if (cpu__conv_by_images(call, &sh, es) &&
        (input == 0 ||
         (double)sh.m * (double)sh.kdim * (double)es <= (double)CPU__CONV_BLOCK_BYTES)) {
        const cpu__conv_job_t base = {&sh, x->dtype, es, x->data, NULL, NULL, out->data,
                                      NULL, 0,   1,        0,       NULL,    NULL, call->device};
        return cpu__conv_run_images(call, &base, wt->data, dy->data,
                                    input ? CPU__CONV_DW : CPU__CONV_DX);
    }
    if ((st = cpu__conv_scratch(call, &sh, es, &nb, &col, &mat)) != SES_DRV_OK)
        return st;
    cpu__conv_job_t j = {&sh, x->dtype, es, x->data, NULL, NULL, NULL, col, 0, 1, 0, NULL, NULL,
                         call->device};
    for (j.n0 = 0; j.n0 < sh.batch; j.n0 += j.nb) {
        j.nb = sh.batch - j.n0 < nb ? sh.batch - j.n0 : nb;
        const int64_t cols_n = j.nb * p;
        for (j.g = 0; j.g < sh.group; j.g++) {
            const unsigned char *dy_g = cpu__conv_dy(call, &j, dy->data, mat);
            const unsigned char *w_g = wt->data + (size_t)(j.g * sh.mg * sh.kdim) * es;
            if (input == 1) {
                const unsigned char *cols = cpu__conv_cols(call, &j);
                cpu__gemm_call(call->device, 1, x->dtype, 0, 1, sh.mg, sh.kdim, cols_n, 1.0, dy_g,
                               cols_n, cols, cols_n, 1.0,
                               out->data + (size_t)(j.g * sh.mg * sh.kdim) * es, sh.kdim);
                continue;
            }
            if (j.nb == 1 && cpu__col_is_image(&sh.w)) {
                /* The column gradient is the image gradient itself. */
                cpu__gemm_call(
                    call->device, 1, x->dtype, 1, 0, sh.kdim, p, sh.mg, 1.0, w_g, sh.kdim, dy_g, p,
                    0.0, out->data + cpu__plane(&j, j.n0, sh.c, j.g * sh.cg, sh.w.in_count), p);
                continue;
            }
            cpu__gemm_call(call->device, 1, x->dtype, 1, 0, sh.kdim, cols_n, sh.mg, 1.0, w_g,
                           sh.kdim, dy_g, cols_n, 0.0, col, cols_n);
            j.dst = out->data;
            cpu__parallel(call, (uint64_t)(sh.cg * j.nb), (uint64_t)(sh.w.k_count * p),
                          cpu__conv_col2im_task, &j);
        }
        if (cpu__cancelled(call)) {
            cpu__conv_give(call, col);
            return cpu__call_fail(call, SES_DRV_CANCELLED, "cancelled");
        }
    }
    cpu__conv_give(call, col);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Pools
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__pool_job {
    const cpu__win_t *w;
    uint32_t code, dtype;
    int64_t include_pad;
    const unsigned char *x;  /* forward input (MaxPool, MaxPoolGrad) */
    const unsigned char *dy; /* gradients: [planes, out...] */
    unsigned char *y;        /* forward output, or the gradient [planes, in...] */
    const struct cpu__pool2d *g2; /* the 2-D geometry when there are two spatial dims */
} cpu__pool_job_t;

static double cpu__get(uint32_t dtype, const unsigned char *base, int64_t i) {
    return dtype == SES_DRV_DTYPE_F32 ? (double)((const float *)(const void *)base)[i]
                                      : ((const double *)(const void *)base)[i];
}

static void cpu__put(uint32_t dtype, unsigned char *base, int64_t i, double v) {
    if (dtype == SES_DRV_DTYPE_F32)
        ((float *)(void *)base)[i] = (float)v;
    else
        ((double *)(void *)base)[i] = v;
}

/* One plane of a pool or pool gradient, any number of spatial dims (the 2-D ones below). */
static void cpu__pool_plane(const cpu__pool_job_t *j, int64_t plane) {
    const cpu__win_t *w = j->w;
    const uint32_t n = w->n;
    const int64_t in_base = plane * w->in_count, out_base = plane * w->out_count;
    int64_t o[CPU__SPATIAL_MAX] = {0};
    int64_t p = 0;

    do {
        int64_t kk[CPU__SPATIAL_MAX] = {0}, start[CPU__SPATIAL_MAX];
        int64_t valid = 0, padded = 0, best = -1;
        double acc = 0.0, best_v = -INFINITY;
        for (uint32_t i = 0; i < n; i++)
            start[i] = o[i] * w->s[i] - w->pb[i];
        /* First pass: reduce (forward, MaxPoolGrad's argmax) and count. */
        do {
            int64_t off = 0, inside = 1, in_pad = 1;
            for (uint32_t i = 0; i < n; i++) {
                const int64_t c = start[i] + kk[i] * w->d[i];
                inside &= c >= 0 && c < w->in[i];
                in_pad &= c >= -w->pb[i] && c < w->in[i] + w->pe[i];
                off = off * w->in[i] + c;
            }
            padded += in_pad;
            if (!inside)
                continue;
            valid++;
            if (j->code == CPU__OP_MAXPOOL || j->code == CPU__OP_MAXPOOLGRAD) {
                const double v = cpu__get(j->dtype, j->x, in_base + off);
                if (best < 0 || v > best_v || (isnan(v) && !isnan(best_v))) {
                    best_v = v;
                    best = off;
                }
            } else if (j->code == CPU__OP_AVGPOOL) {
                acc += cpu__get(j->dtype, j->x, in_base + off);
            }
        } while (cpu__next(kk, w->k, n));
        const int64_t divisor = j->include_pad ? padded : valid;
        switch (j->code) {
        case CPU__OP_MAXPOOL:
            cpu__put(j->dtype, j->y, out_base + p, best >= 0 ? best_v : -INFINITY);
            break;
        case CPU__OP_AVGPOOL:
            cpu__put(j->dtype, j->y, out_base + p, divisor ? acc / (double)divisor : NAN);
            break;
        case CPU__OP_MAXPOOLGRAD:
            if (best >= 0)
                cpu__put(j->dtype, j->y, in_base + best,
                         cpu__get(j->dtype, j->y, in_base + best) +
                             cpu__get(j->dtype, j->dy, out_base + p));
            break;
        default: { /* AveragePoolGrad: spread dy / divisor over the window's input elements */
            if (!divisor)
                break;
            const double g = cpu__get(j->dtype, j->dy, out_base + p) / (double)divisor;
            memset(kk, 0, sizeof kk);
            do {
                int64_t off = 0, inside = 1;
                for (uint32_t i = 0; i < n; i++) {
                    const int64_t c = start[i] + kk[i] * w->d[i];
                    inside &= c >= 0 && c < w->in[i];
                    off = off * w->in[i] + c;
                }
                if (inside)
                    cpu__put(j->dtype, j->y, in_base + off,
                             cpu__get(j->dtype, j->y, in_base + off) + g);
            } while (cpu__next(kk, w->k, n));
        }
        }
        p++;
    } while (cpu__next(o, w->out, n));
}

/*
 * The 2-D pools ([N, C, H, W]), the common case, at the tensor's own precision (f32 math for
 * f32). Per plane and output row, the kernel rows that fall inside the input are found once.
 * Along a row, the interior output columns [lo, hi) (those whose windows lie wholly inside the
 * input) are computed in one pass over the row per kernel tap, without bounds checks, which the
 * compiler vectorizes over the output columns; the border columns check each tap. Each output
 * element still meets its taps in the generic path's order (kernel rows, then columns), so a
 * max picks the same element, and f64 sums add in the same order as before. The geometry
 * (cpu__pool2d_t) is in cpu_internal.h: the NCHWc16 pools (cpu_nchwc.c) share it.
 */

/* The interior columns: ow * sw - pw >= 0 and ow * sw - pw + (kw - 1) * dw < w. */
void cpu__pool2d_init(const cpu__win_t *w, cpu__pool2d_t *g) {
    g->h = w->in[0], g->w = w->in[1], g->oh = w->out[0], g->ow = w->out[1];
    g->kh = w->k[0], g->kw = w->k[1], g->sh = w->s[0], g->sw = w->s[1];
    g->dh = w->d[0], g->dw = w->d[1], g->ph = w->pb[0], g->pw = w->pb[1];
    g->peh = w->pe[0], g->pew = w->pe[1];
    const int64_t last = g->w - 1 - (g->kw - 1) * g->dw + g->pw; /* ow * sw <= last */
    g->lo = (g->pw + g->sw - 1) / g->sw;
    g->hi = last < 0 ? 0 : last / g->sw + 1;
    if (g->lo > g->ow)
        g->lo = g->ow;
    if (g->hi > g->ow)
        g->hi = g->ow;
    if (g->hi < g->lo)
        g->hi = g->lo;
}

void cpu__pool2d_count(int64_t start, int64_t k, int64_t d, int64_t n, int64_t pb,
                              int64_t pe, int64_t *out_valid, int64_t *out_padded) {
    int64_t valid = 0, padded = 0;
    for (int64_t i = 0; i < k; i++) {
        const int64_t c = start + i * d;
        valid += c >= 0 && c < n;
        padded += c >= -pb && c < n + pe;
    }
    *out_valid = valid;
    *out_padded = padded;
}

#define CPU__POOL2D_DEFINE(T, SUFFIX)                                                              \
    static void cpu__maxpool2d_##SUFFIX(const cpu__pool2d_t *g, const T *restrict x,              \
                                        T *restrict y) {                                           \
        for (int64_t oh = 0; oh < g->oh; oh++) {                                                   \
            T *restrict yr = y + oh * g->ow;                                                       \
            const int64_t r0 = oh * g->sh - g->ph;                                                 \
            for (int64_t ow = 0; ow < g->ow; ow++)                                                 \
                yr[ow] = (T)-INFINITY;                                                             \
            for (int64_t i = 0; i < g->kh; i++) {                                                  \
                const int64_t r = r0 + i * g->dh;                                                  \
                if (r < 0 || r >= g->h)                                                            \
                    continue;                                                                      \
                const T *restrict xr = x + r * g->w;                                               \
                for (int64_t ow = 0; ow < g->lo; ow++)                                             \
                    for (int64_t j = 0; j < g->kw; j++) {                                          \
                        const int64_t c = ow * g->sw - g->pw + j * g->dw;                          \
                        if (c >= 0 && c < g->w)                                                    \
                            yr[ow] = CPU__MAXNAN(yr[ow], xr[c]);                                   \
                    }                                                                              \
                for (int64_t j = 0; j < g->kw; j++) {                                              \
                    const int64_t off = j * g->dw - g->pw, sw = g->sw;                             \
                    if (sw == 1)                                                                   \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] = CPU__MAXNAN(yr[ow], xr[ow + off]);                            \
                    else if (sw == 2)                                                              \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] = CPU__MAXNAN(yr[ow], xr[2 * ow + off]);                        \
                    else                                                                           \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] = CPU__MAXNAN(yr[ow], xr[ow * sw + off]);                       \
                }                                                                                  \
                for (int64_t ow = g->hi; ow < g->ow; ow++)                                         \
                    for (int64_t j = 0; j < g->kw; j++) {                                          \
                        const int64_t c = ow * g->sw - g->pw + j * g->dw;                          \
                        if (c >= 0 && c < g->w)                                                    \
                            yr[ow] = CPU__MAXNAN(yr[ow], xr[c]);                                   \
                    }                                                                              \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static void cpu__avgpool2d_##SUFFIX(const cpu__pool2d_t *g, int64_t include_pad,              \
                                        const T *restrict x, T *restrict y) {                      \
        for (int64_t oh = 0; oh < g->oh; oh++) {                                                   \
            T *restrict yr = y + oh * g->ow;                                                       \
            const int64_t r0 = oh * g->sh - g->ph;                                                 \
            int64_t vh, ph;                                                                        \
            cpu__pool2d_count(r0, g->kh, g->dh, g->h, g->ph, g->peh, &vh, &ph);                    \
            for (int64_t ow = 0; ow < g->ow; ow++)                                                 \
                yr[ow] = 0;                                                                        \
            for (int64_t i = 0; i < g->kh; i++) {                                                  \
                const int64_t r = r0 + i * g->dh;                                                  \
                if (r < 0 || r >= g->h)                                                            \
                    continue;                                                                      \
                const T *restrict xr = x + r * g->w;                                               \
                for (int64_t ow = 0; ow < g->lo; ow++)                                             \
                    for (int64_t j = 0; j < g->kw; j++) {                                          \
                        const int64_t c = ow * g->sw - g->pw + j * g->dw;                          \
                        if (c >= 0 && c < g->w)                                                    \
                            yr[ow] += xr[c];                                                       \
                    }                                                                              \
                for (int64_t j = 0; j < g->kw; j++) {                                              \
                    const int64_t off = j * g->dw - g->pw, sw = g->sw;                             \
                    if (sw == 1)                                                                   \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] += xr[ow + off];                                                \
                    else if (sw == 2)                                                              \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] += xr[2 * ow + off];                                            \
                    else                                                                           \
                        for (int64_t ow = g->lo; ow < g->hi; ow++)                                 \
                            yr[ow] += xr[ow * sw + off];                                           \
                }                                                                                  \
                for (int64_t ow = g->hi; ow < g->ow; ow++)                                         \
                    for (int64_t j = 0; j < g->kw; j++) {                                          \
                        const int64_t c = ow * g->sw - g->pw + j * g->dw;                          \
                        if (c >= 0 && c < g->w)                                                    \
                            yr[ow] += xr[c];                                                       \
                    }                                                                              \
            }                                                                                      \
            /* An interior window has all kw columns inside the input, hence inside the pads. */   \
            const int64_t div_in = (include_pad ? ph : vh) * g->kw;                                \
            for (int64_t ow = 0; ow < g->ow; ow++) {                                               \
                int64_t div = div_in;                                                              \
                if (ow < g->lo || ow >= g->hi) {                                                   \
                    int64_t vw, pw;                                                                \
                    cpu__pool2d_count(ow * g->sw - g->pw, g->kw, g->dw, g->w, g->pw, g->pew, &vw,  \
                                      &pw);                                                        \
                    div = include_pad ? ph * pw : vh * vw;                                         \
                }                                                                                  \
                yr[ow] = div ? yr[ow] / (T)div : (T)NAN;                                           \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* MaxPoolGrad: dy onto the window's max (first on ties, the first NaN if any); AveragePool-  \
     * Grad (x NULL): dy / divisor spread over the window's input elements. dx starts at zero. */  \
    static void cpu__pool2d_grad_##SUFFIX(const cpu__pool2d_t *g, int64_t include_pad,           \
                                          const T *restrict x, const T *restrict dy,               \
                                          T *restrict dx) {                                        \
        for (int64_t oh = 0; oh < g->oh; oh++) {                                                   \
            const int64_t r0 = oh * g->sh - g->ph;                                                 \
            int64_t vh, ph;                                                                        \
            cpu__pool2d_count(r0, g->kh, g->dh, g->h, g->ph, g->peh, &vh, &ph);                    \
            for (int64_t ow = 0; ow < g->ow; ow++) {                                               \
                const int64_t c0 = ow * g->sw - g->pw;                                             \
                const T d = dy[oh * g->ow + ow];                                                   \
                if (x) {                                                                           \
                    int64_t best = -1;                                                             \
                    T best_v = (T)-INFINITY;                                                       \
                    for (int64_t i = 0; i < g->kh; i++) {                                          \
                        const int64_t r = r0 + i * g->dh;                                          \
                        if (r < 0 || r >= g->h)                                                    \
                            continue;                                                              \
                        for (int64_t j = 0; j < g->kw; j++) {                                      \
                            const int64_t c = c0 + j * g->dw;                                      \
                            if (c < 0 || c >= g->w)                                                \
                                continue;                                                          \
                            const T v = x[r * g->w + c];                                           \
                            if (best < 0 || v > best_v || (v != v && best_v == best_v)) {          \
                                best_v = v;                                                        \
                                best = r * g->w + c;                                               \
                            }                                                                      \
                        }                                                                          \
                    }                                                                              \
                    if (best >= 0)                                                                 \
                        dx[best] += d;                                                             \
                    continue;                                                                      \
                }                                                                                  \
                int64_t vw, pw;                                                                    \
                cpu__pool2d_count(c0, g->kw, g->dw, g->w, g->pw, g->pew, &vw, &pw);                \
                const int64_t div = include_pad ? ph * pw : vh * vw;                               \
                if (!div)                                                                          \
                    continue;                                                                      \
                const T share = d / (T)div;                                                        \
                for (int64_t i = 0; i < g->kh; i++) {                                              \
                    const int64_t r = r0 + i * g->dh;                                              \
                    if (r < 0 || r >= g->h)                                                        \
                        continue;                                                                  \
                    for (int64_t j = 0; j < g->kw; j++) {                                          \
                        const int64_t c = c0 + j * g->dw;                                          \
                        if (c >= 0 && c < g->w)                                                    \
                            dx[r * g->w + c] += share;                                             \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

CPU__POOL2D_DEFINE(float, f32)
CPU__POOL2D_DEFINE(double, f64)

/*
 * f32 MaxPool 2x2 with stride 2, no dilation and every window inside the input (VGG's, LeNet's
 * and the bench CNN's): each output is the max of its four taps in the order above (row 0's two,
 * then row 1's), one pass over the two input rows, which the compiler vectorizes as interleaved
 * loads. The generic 2-D loop makes four passes per output row and starts from -inf.
 */
static int cpu__maxpool2x2_fits(const cpu__pool2d_t *g) {
    return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->dh == 1 && g->dw == 1 &&
           g->ph == 0 && g->pw == 0 && 2 * g->oh <= g->h && 2 * g->ow <= g->w;
}

static void cpu__maxpool2x2_f32(const cpu__pool2d_t *g, const float *restrict x,
                                float *restrict y) {
    for (int64_t oh = 0; oh < g->oh; oh++) {
        const float *restrict a = x + 2 * oh * g->w;
        const float *restrict b = a + g->w;
        float *restrict yr = y + oh * g->ow;
        for (int64_t ow = 0; ow < g->ow; ow++) {
            float m = a[2 * ow];
            m = CPU__MAXNAN(m, a[2 * ow + 1]);
            m = CPU__MAXNAN(m, b[2 * ow]);
            yr[ow] = CPU__MAXNAN(m, b[2 * ow + 1]);
        }
    }
}

/* One plane of a 2-D pool or pool gradient. */
static void cpu__pool2d_plane(const cpu__pool_job_t *j, int64_t plane) {
    const cpu__pool2d_t *g = j->g2;
    const int64_t in_off = plane * g->h * g->w, out_off = plane * g->oh * g->ow;
    const int f32 = j->dtype == SES_DRV_DTYPE_F32;
    const void *x = j->x, *dy = j->dy;
    void *y = j->y;

#define CPU__AT(p, T, off) ((p) ? (T *)(void *)(p) + (off) : NULL)
    switch (j->code) {
    case CPU__OP_MAXPOOL:
        if (f32 && cpu__maxpool2x2_fits(g))
            cpu__maxpool2x2_f32(g, CPU__AT(x, const float, in_off), CPU__AT(y, float, out_off));
        else if (f32)
            cpu__maxpool2d_f32(g, CPU__AT(x, const float, in_off), CPU__AT(y, float, out_off));
        else
            cpu__maxpool2d_f64(g, CPU__AT(x, const double, in_off), CPU__AT(y, double, out_off));
        break;
    case CPU__OP_AVGPOOL:
        if (f32)
            cpu__avgpool2d_f32(g, j->include_pad, CPU__AT(x, const float, in_off),
                               CPU__AT(y, float, out_off));
        else
            cpu__avgpool2d_f64(g, j->include_pad, CPU__AT(x, const double, in_off),
                               CPU__AT(y, double, out_off));
        break;
    default: /* the gradients: x is NULL for AveragePoolGrad */
        if (j->code != CPU__OP_MAXPOOLGRAD)
            x = NULL;
        if (f32)
            cpu__pool2d_grad_f32(g, j->include_pad, CPU__AT(x, const float, in_off),
                                 CPU__AT(dy, const float, out_off), CPU__AT(y, float, in_off));
        else
            cpu__pool2d_grad_f64(g, j->include_pad, CPU__AT(x, const double, in_off),
                                 CPU__AT(dy, const double, out_off), CPU__AT(y, double, in_off));
    }
#undef CPU__AT
}

static void cpu__pool_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__pool_job_t *j = ctx;

    for (uint64_t plane = begin; plane < end; plane++) {
        if (j->g2)
            cpu__pool2d_plane(j, (int64_t)plane);
        else
            cpu__pool_plane(j, (int64_t)plane);
    }
}

/* MaxPool, AveragePool (input X) and MaxPoolGrad (dy, X), AveragePoolGrad (dy). */
int32_t cpu__pool(const cpu__call_t *call) {
    const uint32_t code = call->spec->code;
    const int grad = code == CPU__OP_MAXPOOLGRAD || code == CPU__OP_AVGPOOLGRAD;
    const cpu__tensor_t *out = &call->outs[0];
    /* The forward pool's input and output shapes. */
    const cpu__tensor_t *fx = grad ? out : &call->in[0];
    const cpu__tensor_t *fy = grad ? &call->in[0] : out;
    cpu__pool_job_t j;
    cpu__win_t w;
    char a[96], b[96];
    int32_t st;

    if ((st = cpu__read_window(call, fx, fy, &w)) != SES_DRV_OK)
        return st;
    if (fx->dims[1] != fy->dims[1] ||
        (code == CPU__OP_MAXPOOLGRAD && !cpu__same_shape(&call->in[1], out)))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "channels differ: the pool's input is %s, its output %s",
                              cpu__format_dims(fx->dims, fx->rank, a, sizeof a),
                              cpu__format_dims(fy->dims, fy->rank, b, sizeof b));
    memset(&j, 0, sizeof j);
    j.w = &w;
    j.code = code;
    j.dtype = out->dtype;
    if (code == CPU__OP_AVGPOOL || code == CPU__OP_AVGPOOLGRAD)
        if ((st = cpu__attr_int(call, "count_include_pad", 1, 0, &j.include_pad)) != SES_DRV_OK)
            return st;
    j.x = code == CPU__OP_MAXPOOLGRAD ? call->in[1].data : call->in[0].data;
    j.dy = grad ? call->in[0].data : NULL;
    j.y = out->data;
    if (grad)
        cpu__zero(out);
    if (fy->count == 0)
        return SES_DRV_OK;
    cpu__pool2d_t g2;
    if (w.n == 2) {
        cpu__pool2d_init(&w, &g2);
        j.g2 = &g2;
    }
    cpu__parallel(call, (uint64_t)(fx->dims[0] * fx->dims[1]), (uint64_t)(w.out_count * w.k_count),
                  cpu__pool_task, &j);
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
