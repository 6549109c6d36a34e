/*
 * NchwcConv by slices of images, or of output channels, on the pool's threads, and the max
 * pool fused after it (issue #20).
 *
 * oneDNN runs on OpenMP's team, a second set of threads beside the pool's: between a
 * convolution and the pool's next kernel, one set sleeps while the other wakes, and on a
 * 16-core machine the bench CNN (batch 64) did not scale past 1.5 ms where ONNX Runtime took
 * 0.7. A batch of several images needs no team: each thread of the pool runs the primitive,
 * made for one OpenMP thread and a slice of a few images, on slices it takes in turn
 * (cpu__dnnl_conv_slices). So one set of threads runs the whole model.
 *
 * A slice is sized for the cache: its convolution output about CPU__SLICE_BYTES, so that the
 * max pool fused after the convolution (a FusedConv -> MaxPool chain the compiler merged into
 * one NchwcConv with pool_ attributes, compile/fuse.c) reads it from the core's own cache rather
 * than memory, and writes only the pooled slice into Y. The pool is NchwcMaxPool's rows
 * (cpu__nchwc_pool_rows), so its values are NchwcMaxPool's bit for bit; the convolution's
 * are oneDNN's for a batch of that slice, which do not depend on the batch (each image is
 * computed alone).
 *
 * A batch of too few images for the threads runs, with driver.cpu.conv_slices=auto and an
 * ungrouped convolution, by slices of output channels (cpu__dnnl_conv_parts): each slot a part
 * of whole blocks of 16 channels, a primitive of its own for those channels and one image. At
 * batch 1 a part's blocks of Y and Z are one run in nChw16c, its weights a run of W's rows and
 * its bias a run of B, so each is pointed at where it is; a larger batch goes image by image
 * in each part. A fused pool works per channel: each slot pools its part from its own scratch.
 * The values are oneDNN's for those channels, within 1e-5 of the whole convolution's.
 *
 * That is not the default (driver.cpu.conv_slices=images): alternating the two on 2 threads of
 * the shared 2-core Xeon (session-run --repeat 60 and 25, medians of runs 2..N, 4 rounds),
 * squeezenet1_0 at batch 1 took 4.21-4.38 ms by channels against 4.42-5.18 ms on the team, but
 * resnet50 25.1-27.2 against 22.7-25.0 ms: each slot reads all of X, and resnet50's 56x56 layers
 * of 64 to 256 channels (0.8 to 3.2 MB) stream it from memory once per slot where the team's
 * threads read half each (its 1x1 256->64 layer: 0.42 ms a part against 0.27 ms whole), and a
 * Winograd part of 32 channels took 0.72 ms where the whole 64 took 0.38. One thread is the
 * same either way. A 16-core machine may answer otherwise; the option is there to A/B it.
 *
 * Otherwise (driver.cpu.conv_slices=images, or =off for every batch) the convolution runs whole
 * on oneDNN's team (cpu__dnnl_conv), and a fused pool then reads a scratch of the whole output,
 * split over the pool by planes.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_conv_slices.h"

/* The convolution output of one slice, at most: half the 2 MiB L2 of a core of the machines
 * measured, where the pool reads it back. */
#define CPU__SLICE_BYTES (1u << 20)

typedef struct cpu__slices_job {
    cpu__dnnl_conv_cache_t *cache;
    const float *x, *z;
    float *y;
    int64_t n_slices;
    size_t x_slice;            /* floats of X per slice */
    size_t conv_slice;         /* floats of the convolution's output (and Z) per slice */
    size_t y_slice;            /* floats of Y per slice: conv_slice, or pooled */
    const cpu__pool2d_t *pool; /* NULL: no pool; the convolution writes Y */
    int64_t planes;            /* (image, channel block) planes per slice */
    float *scratch;            /* pooled: one conv_slice per slot */
    atomic_int_fast64_t next;  /* the next slice to take */
    cpu__first_error_t error;  /* the first slot that fails; the others stop */
} cpu__slices_job_t;

/* Items are thread slots: each takes slices until none is left, on its own memory objects. */
static void cpu__slices_task(void *ctx, uint64_t begin, uint64_t end) {
    cpu__slices_job_t *j = ctx;
    char why[256];

    for (uint64_t slot = begin; slot < end; slot++) {
        float *conv_out = j->pool ? j->scratch + slot * j->conv_slice : NULL;
        for (;;) {
            const int64_t s = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
            if (s >= j->n_slices || atomic_load_explicit(&j->error.failed, memory_order_relaxed))
                break;
            float *out = j->pool ? conv_out : j->y + (size_t)s * j->conv_slice;
            /* The sum post-op adds what the destination holds: Z's slice. */
            if (j->z && j->z + (size_t)s * j->conv_slice != out)
                memcpy(out, j->z + (size_t)s * j->conv_slice, j->conv_slice * sizeof(float));
            const int32_t st = cpu__dnnl_conv_slice(
                j->cache, (uint32_t)slot, j->x + (size_t)s * j->x_slice, out, why, sizeof why);
            if (st != SES_DRV_OK) {
                cpu__first_error_set(&j->error, st, why);
                break;
            }
            if (j->pool)
                cpu__nchwc_pool_rows(j->pool, 1, 0, out, j->y + (size_t)s * j->y_slice, 0,
                                     (uint64_t)(j->planes * j->pool->oh));
        }
    }
}

/* Slices of output channels: each slot runs its part of the channels for every image. */
typedef struct cpu__parts_job {
    cpu__dnnl_conv_cache_t *cache;
    const float *x, *w, *b, *z;
    float *y;
    int64_t batch, out_channels, n_parts;
    size_t x_image;            /* floats of X per image */
    size_t conv_plane;         /* floats of the convolution's output (and Z) per channel */
    size_t y_plane;            /* floats of Y per channel: conv_plane, or pooled */
    const cpu__pool2d_t *pool; /* NULL: no pool; the convolution writes Y */
    float *scratch;            /* pooled: scratch_slot floats per slot */
    size_t scratch_slot;
    uint32_t flags;
    cpu__first_error_t error; /* the first slot that fails; the others stop */
} cpu__parts_job_t;

/* Items are thread slots, one part each. At batch 1 (or any batch, image by image) the part's
 * channels of Y and Z are one contiguous run of blocks in nChw16c, so they are pointed at where
 * they are. */
static void cpu__parts_task(void *ctx, uint64_t begin, uint64_t end) {
    cpu__parts_job_t *j = ctx;
    char why[256];

    for (uint64_t slot = begin; slot < end; slot++) {
        const int64_t c0 =
            cpu__dnnl_part_first(j->out_channels, 16, (uint32_t)j->n_parts, (uint32_t)slot);
        const int64_t c1 =
            cpu__dnnl_part_first(j->out_channels, 16, (uint32_t)j->n_parts, (uint32_t)slot + 1);
        const size_t conv_part = (size_t)(c1 - c0) * j->conv_plane;
        for (int64_t i = 0; i < j->batch; i++) {
            if (atomic_load_explicit(&j->error.failed, memory_order_relaxed))
                return;
            const size_t at = ((size_t)i * (size_t)j->out_channels + (size_t)c0) * j->conv_plane;
            float *out = j->pool ? j->scratch + slot * j->scratch_slot : j->y + at;
            if (j->z && j->z + at != out)
                memcpy(out, j->z + at, conv_part * sizeof(float));
            const int32_t st =
                cpu__dnnl_conv_part(j->cache, (uint32_t)slot, j->x + (size_t)i * j->x_image, j->w,
                                    j->b, out, j->flags, why, sizeof why);
            if (st != SES_DRV_OK) {
                cpu__first_error_set(&j->error, st, why);
                return;
            }
            if (j->pool)
                cpu__nchwc_pool_rows(
                    j->pool, 1, 0, out,
                    j->y + ((size_t)i * (size_t)j->out_channels + (size_t)c0) * j->y_plane, 0,
                    (uint64_t)((c1 - c0) / 16 * j->pool->oh));
        }
    }
}

/* Items are output rows of the whole output's planes (the fused pool after a whole
 * convolution). */
typedef struct cpu__slices_pool_job {
    const cpu__pool2d_t *g;
    const float *x;
    float *y;
} cpu__slices_pool_job_t;

static void cpu__slices_pool_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__slices_pool_job_t *j = ctx;
    cpu__nchwc_pool_rows(j->g, 1, 0, j->x, j->y, begin, end);
}

/* The node's scratch @p buf of *@p size bytes, 64-byte aligned, grown to @p need when smaller
 * (never shrunk): SES_DRV_OK, or SES_DRV_OUT_OF_MEMORY with @p why saying the scratch was for
 * @p what (the old buffer kept). */
static int32_t cpu__slices_grow(unsigned char **buf, size_t *size, size_t need, const char *what,
                                char *why, size_t why_size) {
    if (*size >= need)
        return SES_DRV_OK;
    void *grown = aligned_alloc(64, (need + 63) & ~(size_t)63);
    if (!grown) {
        snprintf(why, why_size, "cannot allocate %zu bytes for %s", need, what);
        return SES_DRV_OUT_OF_MEMORY;
    }
    free(*buf);
    *buf = grown;
    *size = need;
    return SES_DRV_OK;
}

/* Images per slice: the largest divisor of @p n whose output fits CPU__SLICE_BYTES (at least
 * 1), leaving at least @p threads slices. */
static int64_t cpu__slice_images(int64_t n, uint32_t threads, size_t out_image_bytes) {
    int64_t per = out_image_bytes ? (int64_t)(CPU__SLICE_BYTES / out_image_bytes) : n;
    if (per > n / (int64_t)threads)
        per = n / (int64_t)threads;
    if (per < 1)
        per = 1;
    while (n % per != 0)
        per--;
    return per;
}

int32_t cpu__conv_slices_run(cpu__pool_t *threads_pool, cpu__dnnl_conv_cache_t *cache,
                             const cpu__dnnl_conv_params_t *p, int activation, float alpha,
                             float beta, const float *x, const float *w, const float *b,
                             const float *z, float *y, const cpu__pool2d_t *pool, uint32_t flags,
                             uint32_t mode, unsigned char **buf, size_t *buf_size,
                             cpu__team_user_t *team, char *why, size_t why_size) {
    const uint32_t threads = cpu__pool_threads(threads_pool);
    size_t in_image = (size_t)p->in_channels, out_image = (size_t)p->out_channels;
    for (uint32_t i = 0; i < p->spatial; i++) {
        in_image *= (size_t)p->in[i];
        out_image *= (size_t)p->out[i];
    }
    const size_t pooled_image =
        pool ? (size_t)p->out_channels * (size_t)pool->oh * (size_t)pool->ow : out_image;
    int32_t st;

    why[0] = '\0';
    /* Slices: on several threads where each has an image at least; on one, for the pool's
     * sake only. */
    const int sliced = mode != CPU__CONV_SLICES_OFF &&
                       (threads > 1 ? p->batch >= (int64_t)threads : pool && p->batch >= 2);
    if (sliced) {
        const int64_t per = cpu__slice_images(p->batch, threads, out_image * sizeof(float));
        const int64_t n_slices = p->batch / per;
        const uint32_t slots = n_slices < (int64_t)threads ? (uint32_t)n_slices : threads;
        cpu__dnnl_conv_params_t sp = *p;
        sp.batch = per;
        st = cpu__dnnl_conv_slices(cache, &sp, w, b, z != NULL, activation, alpha, beta, slots,
                                   flags, why, why_size);
        if (st == SES_DRV_OK) {
            const size_t conv_slice = (size_t)per * out_image;
            if (pool) {
                const size_t need = (size_t)slots * conv_slice * sizeof(float);
                st =
                    cpu__slices_grow(buf, buf_size, need, "the fused pool's slices", why, why_size);
                if (st != SES_DRV_OK)
                    return st;
            }
            cpu__slices_job_t j;
            memset(&j, 0, sizeof j);
            j.cache = cache;
            j.x = x;
            j.z = z;
            j.y = y;
            j.n_slices = n_slices;
            j.x_slice = (size_t)per * in_image;
            j.conv_slice = conv_slice;
            j.y_slice = (size_t)per * pooled_image;
            j.pool = pool;
            j.planes = per * (p->out_channels / 16);
            j.scratch = pool ? (float *)(void *)*buf : NULL;
            atomic_init(&j.next, 0);
            atomic_init(&j.error.failed, 0);
            /* One item per slot, each far above the pool's threshold: every slot is a chunk. */
            cpu__parallel_for(threads_pool, slots, UINT64_C(1) << 32, cpu__slices_task, &j);
            if (atomic_load(&j.error.failed)) {
                snprintf(why, why_size, "%s", j.error.why);
                return j.error.st;
            }
            return SES_DRV_OK;
        }
        if (st != SES_DRV_UNIMPLEMENTED)
            return st;
    }
    why[0] = '\0';
    /* Too few images for the threads: slices of output channels, a part of whole blocks per
     * slot, as many as the threads where there are blocks enough. A layer of one block runs as
     * one part, the other threads idle, rather than on oneDNN's team: handing the cores from
     * the pool to the team and back costs more than the idle thread (squeezenet1_0 at batch 1,
     * whose squeeze layers have 16 channels: 6.1-6.3 ms with those on the team, 4.4-4.6 with
     * them as one part, against 4.8-4.9 ms with slices of images only, 2 threads of the 2-core
     * Xeon). */
    const int64_t blocks = p->out_channels / 16;
    if (!sliced && mode == CPU__CONV_SLICES_AUTO && threads > 1 && p->group == 1) {
        const uint32_t parts = blocks < (int64_t)threads ? (uint32_t)blocks : threads;
        st = cpu__dnnl_conv_parts(cache, p, parts, b != NULL, z != NULL, activation, alpha, beta,
                                  flags, why, why_size);
        if (st == SES_DRV_OK) {
            const size_t plane = out_image / (size_t)p->out_channels;
            /* The largest part's output of one image, per slot, for the pool to read. */
            const size_t scratch_slot = (size_t)((blocks + parts - 1) / parts * 16) * plane;
            if (pool) {
                const size_t need = (size_t)parts * scratch_slot * sizeof(float);
                st = cpu__slices_grow(buf, buf_size, need, "the fused pool's channel slices", why,
                                      why_size);
                if (st != SES_DRV_OK)
                    return st;
            }
            cpu__parts_job_t j;
            memset(&j, 0, sizeof j);
            j.cache = cache;
            j.x = x;
            j.w = w;
            j.b = b;
            j.z = z;
            j.y = y;
            j.batch = p->batch;
            j.out_channels = p->out_channels;
            j.n_parts = parts;
            j.x_image = in_image;
            j.conv_plane = plane;
            j.y_plane = pooled_image / (size_t)p->out_channels;
            j.pool = pool;
            j.scratch = pool ? (float *)(void *)*buf : NULL;
            j.scratch_slot = scratch_slot;
            j.flags = flags;
            atomic_init(&j.error.failed, 0);
            cpu__parallel_for(threads_pool, parts, UINT64_C(1) << 32, cpu__parts_task, &j);
            if (atomic_load(&j.error.failed)) {
                snprintf(why, why_size, "%s", j.error.why);
                return j.error.st;
            }
            return SES_DRV_OK;
        }
        if (st != SES_DRV_UNIMPLEMENTED)
            return st;
        why[0] = '\0';
    }
    if (!pool)
        return SES_DRV_UNIMPLEMENTED;

    /* The whole convolution on oneDNN's team into a scratch, then the pool over the pool's
     * threads. */
    const size_t need = (size_t)p->batch * out_image * sizeof(float);
    st = cpu__slices_grow(buf, buf_size, need, "the convolution before its pool", why, why_size);
    if (st != SES_DRV_OK)
        return st;
    if (threads > 1)
        cpu__pool_park_for(threads_pool, team);
    st = cpu__dnnl_conv(cache, p, x, w, b, z, (float *)(void *)*buf, activation, alpha, beta,
                        threads, flags, why, why_size);
    if (st != SES_DRV_OK)
        return st;
    cpu__slices_pool_job_t pj = {pool, (const float *)(const void *)*buf, y};
    const int64_t planes = p->batch * (p->out_channels / 16);
    cpu__parallel_for(threads_pool, (uint64_t)(planes * pool->oh),
                      (uint64_t)(pool->ow * pool->kh * pool->kw * 16), cpu__slices_pool_task, &pj);
    return SES_DRV_OK;
}
