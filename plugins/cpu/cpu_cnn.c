/*
 * The convolution kernels: Conv (f32 through oneDNN where option driver.cpu.conv lets it,
 * cpu_dnnl.c; otherwise im2col and OpenBLAS GEMM, any number of spatial dims, groups) and its
 * gradients (col2im), and the window every windowed op reads. The other CNN families are in
 * cpu_pool.c (MaxPool, AveragePool and their gradients), cpu_norm.c (BatchNormalization,
 * Dropout's mask, LayerNormalization) and cpu_pad_shape.c (Pad, PadGrad, Clip, Split, Shape,
 * ConstantOfShape, Range). All are general entries (cpu__run_general), so no output shares
 * bytes with an input.
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
#include "cpu_conv_slices.h"
#include "cpu_dnnl.h"
#include "cpu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * The window (cpu__win_t, cpu_internal.h)
 * ------------------------------------------------------------------------------------------- */

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
    cpu__team_user_t team; /* counted once it has run on oneDNN's OpenMP team */
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

int32_t cpu__conv_open(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                       const ses_drv_options_t *options, uint32_t *out_dnnl, uint32_t *out_mode,
                       char *out_desc, size_t desc_size) {
    char value[32], why[256];
    uint32_t mode = CPU__CONV_AUTO;
    int32_t st;

    *out_dnnl = 0;
    *out_mode = CPU__CONV_AUTO;
    out_desc[0] = '\0';
    if ((st = cpu__read_option(host, ctx, options, CPU__CONV_OPTION, "auto, dnnl or im2col", value,
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
    cpu__team_user_release(&s->team);
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
                                  const cpu__tensor_t *z, const cpu__act_t *act, uint32_t layout,
                                  const cpu__pool2d_t *pool) {
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
    const uint32_t flags = ((state->constant_inputs & 2u) ? CPU__DNNL_W_CONSTANT : 0) | layout |
                           (call->device->winograd ? CPU__DNNL_WINOGRAD : 0);
    /* NchwcConv: by slices of images on the pool's threads where it can, and its fused pool. */
    if (layout & CPU__DNNL_YZ_BLOCKED) {
        int32_t st = cpu__conv_slices_run(
            call->device->pool, state->dnnl, &p, dnnl_act, alpha, beta,
            (const float *)(const void *)x->data, (const float *)(const void *)wt->data,
            b ? (const float *)(const void *)b->data : NULL,
            z ? (const float *)(const void *)z->data : NULL, (float *)(void *)call->outs[0].data,
            pool, flags, call->device->conv_slices, &state->scratch, &state->scratch_size,
            &state->team, why, sizeof why);
        if (st != SES_DRV_OK && st != SES_DRV_UNIMPLEMENTED)
            return cpu__call_fail(call, st, "%s", why);
        if (st != SES_DRV_UNIMPLEMENTED || pool)
            return st;
    }
    /* oneDNN's OpenMP team takes the cores now: the pool's idle workers stop spinning. */
    if (cpu__pool_threads(call->device->pool) > 1)
        cpu__pool_park_for(call->device->pool, &state->team);
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
    return cpu__conv_dnnl_run(call, call->state, sh, b, z, act, 0, NULL);
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
 * The max pool an NchwcConv node carries (attributes pool_kernel_shape, pool_strides,
 * pool_dilations, pool_pads, the host's normalized 2-D window, and pool_input, the
 * convolution's output rows and columns): *@p out_has 0 when it has none, and then @p conv_out
 * is Y's own [OH, OW]. Otherwise @p g is the pool's geometry from @p conv_out to Y's dims,
 * checked (each window attribute in range, Y's rows and columns those of the window with or
 * without ceil_mode). Errors name the node.
 */
static int32_t cpu__nchwc_conv_window(const cpu__call_t *call, const cpu__tensor_t *y,
                                      int64_t conv_out[2], cpu__pool2d_t *g, int *out_has) {
    static const char *const names[] = {"pool_input", "pool_kernel_shape", "pool_strides",
                                        "pool_dilations", "pool_pads"};
    int64_t v[5][4];
    uint64_t count = 0;
    uint32_t n;
    cpu__win_t w;
    int32_t st;

    *out_has = 0;
    conv_out[0] = y->dims[2];
    conv_out[1] = y->dims[3];
    if (!call->node->attr || call->node->attr(call->node, "pool_kernel_shape", SES_DRV_ATTR_INTS,
                                              &count, NULL) != SES_DRV_OK)
        return SES_DRV_OK;
    for (int i = 0; i < 5; i++) {
        const uint32_t want = i == 4 ? 4 : 2;
        if ((st = cpu__attr_ints(call, names[i], v[i], 4, &n)) != SES_DRV_OK)
            return st;
        if (n != want)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "attribute %s has %" PRIu32 " entries, not %" PRIu32
                                  ": the fused pool is 2-D",
                                  names[i], n, want);
    }
    memset(&w, 0, sizeof w);
    w.n = 2;
    for (int d = 0; d < 2; d++) {
        w.in[d] = v[0][d];
        w.k[d] = v[1][d];
        w.s[d] = v[2][d];
        w.d[d] = v[3][d];
        w.pb[d] = v[4][d];
        w.pe[d] = v[4][2 + d];
        w.out[d] = y->dims[2 + d];
        if (w.in[d] < 1 || w.k[d] < 1 || w.s[d] < 1 || w.d[d] < 1 || w.pb[d] < 0 || w.pe[d] < 0 ||
            w.in[d] > INT32_MAX || w.k[d] > INT32_MAX || w.s[d] > INT32_MAX || w.d[d] > INT32_MAX ||
            w.pb[d] > INT32_MAX || w.pe[d] > INT32_MAX)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "the fused pool's window is out of range along spatial dim %d: "
                                  "input %" PRId64 ", kernel %" PRId64 ", stride %" PRId64
                                  ", dilation %" PRId64 ", pads %" PRId64 " and %" PRId64,
                                  d, w.in[d], w.k[d], w.s[d], w.d[d], w.pb[d], w.pe[d]);
        /* Y's size along d: the window's count, rounded down or (ceil_mode) up. */
        const int64_t span = w.in[d] + w.pb[d] + w.pe[d] - ((w.k[d] - 1) * w.d[d] + 1);
        const int64_t lo = span < 0 ? 0 : span / w.s[d] + 1;
        const int64_t hi = span < 0 ? 0 : (span + w.s[d] - 1) / w.s[d] + 1;
        if (span < 0 || w.out[d] < lo || w.out[d] > hi)
            return cpu__call_fail(
                call, SES_DRV_INVALID_ARGUMENT,
                "Y has %" PRId64 " along spatial dim %d; a pool of kernel %" PRId64
                ", stride %" PRId64 ", dilation %" PRId64 " and pads %" PRId64 " and %" PRId64
                " over %" PRId64 " gives %" PRId64 " (or %" PRId64 " with ceil_mode)",
                w.out[d], d, w.k[d], w.s[d], w.d[d], w.pb[d], w.pe[d], w.in[d], lo, hi);
        conv_out[d] = w.in[d];
    }
    cpu__pool2d_init(&w, g);
    *out_has = 1;
    return SES_DRV_OK;
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
    int64_t xd[4], yd[4], conv_out[2], zd[5];
    cpu__conv_shape_t sh;
    cpu__pool2d_t pool;
    cpu__act_t act;
    char a[96], c[96], o[96];
    int has_pool = 0;
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
    /* A fused max pool: the convolution's output is [N, M/16, conv_out..., 16], pooled into Y. */
    if ((st = cpu__nchwc_conv_window(call, y, conv_out, &pool, &has_pool)) != SES_DRV_OK)
        return st;
    /* The plain NCHW shapes the blocked tensors stand for: Conv's checks then apply as they are. */
    xd[0] = x->dims[0], xd[1] = x_blocked ? x->dims[1] * 16 : x->dims[1];
    xd[2] = x->dims[2], xd[3] = x->dims[3];
    yd[0] = y->dims[0], yd[1] = y->dims[1] * 16, yd[2] = conv_out[0], yd[3] = conv_out[1];
    zd[0] = y->dims[0], zd[1] = y->dims[1], zd[2] = conv_out[0], zd[3] = conv_out[1], zd[4] = 16;
    xv = *x, xv.rank = 4, xv.dims = xd;
    yv = *y, yv.rank = 4, yv.dims = yd;
    if ((st = cpu__conv_check(call, &xv, wt, &yv, &sh)) != SES_DRV_OK)
        return st;
    if (b && (b->rank != 1 || b->dims[0] != sh.m))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "B must have one entry per filter (%" PRId64 "): B is %s", sh.m,
                              cpu__format_dims(b->dims, b->rank, a, sizeof a));
    if (zp && (zp->rank != 5 || memcmp(zp->dims, zd, sizeof zd) != 0))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "Z must have the convolution's shape %s: Z is %s",
                              cpu__format_dims(zd, 5, o, sizeof o),
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
                            (x_blocked ? CPU__DNNL_X_BLOCKED : 0) | CPU__DNNL_YZ_BLOCKED,
                            has_pool ? &pool : NULL);
    cpu__dnnl_conv_cache_destroy(launch_state.dnnl);
    free(launch_state.scratch);
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
