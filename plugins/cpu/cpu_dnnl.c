/*
 * Convolution through oneDNN, loaded at run time (see cpu_dnnl.h).
 *
 * oneDNN's fast f32 convolutions (brgconv, jit on AVX-512 or AVX2) want blocked layouts (nChw16c
 * and the like) for the source, weights and destination; with plain nchw/oihw it falls back to
 * im2col and a GEMM, no better than the driver's own. So the primitive is created with
 * format_tag_any for all three, and the caller's dense tensors are reordered into the layouts it
 * chose (X in, Z in when there is one, Y back out), each reorder skipped where the chosen layout
 * is the plain one. The weights are reordered at every call unless the caller says they are
 * constant (CPU__DNNL_W_CONSTANT, from the host's DRV-85 bit), in which case the reordered copy
 * is kept and reused while their address stays the same. Bias, the sum input Z and the
 * activation are the primitive's own (bias argument, "sum" then "eltwise" post-ops).
 *
 * Like OpenBLAS (cpu_gemm.c) the library is not linked: the driver must load and run where
 * oneDNN is not installed. Its headers are needed at build time only (meson checks for them;
 * without them this file builds a stub that answers SES_DRV_UNAVAILABLE). The library is loaded
 * once per process, under a mutex, and never closed (its OpenMP threads cannot be stopped
 * safely).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* setenv, unsetenv under -std=c11 */
#endif

#include "cpu_dnnl.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cpu__dnnl_conv_supported(const cpu__dnnl_conv_params_t *p) {
    if (!p || p->spatial < 1 || p->spatial > CPU__DNNL_MAX_SPATIAL || p->batch < 1 ||
        p->in_channels < 1 || p->out_channels < 1 || p->group < 1 ||
        p->in_channels % p->group != 0 || p->out_channels % p->group != 0)
        return 0;
    for (uint32_t i = 0; i < p->spatial; i++)
        if (p->in[i] < 1 || p->out[i] < 1 || p->kernel[i] < 1 || p->strides[i] < 1 ||
            p->dilations[i] < 1 || p->pads_begin[i] < 0 || p->pads_end[i] < 0)
            return 0;
    return 1;
}

#ifndef SES_CPU_HAVE_DNNL

/* Built without oneDNN's headers: the driver keeps its im2col convolution. */

int32_t cpu__dnnl_load(char *why, size_t why_size) {
    snprintf(why, why_size, "the driver was built without oneDNN's headers (libdnnl-dev)");
    return SES_DRV_UNAVAILABLE;
}

const char *cpu__dnnl_describe(void) {
    return "";
}

void *cpu__dnnl_handle(void) {
    return NULL;
}

int cpu__dnnl_native_16c(void) {
    return 0;
}

int32_t cpu__dnnl_conv_cache_create(cpu__dnnl_conv_cache_t **out_cache) {
    *out_cache = NULL;
    return SES_DRV_OK;
}

void cpu__dnnl_conv_cache_destroy(cpu__dnnl_conv_cache_t *cache) {
    (void)cache;
}

int32_t cpu__dnnl_conv(cpu__dnnl_conv_cache_t *cache, const cpu__dnnl_conv_params_t *p,
                       const float *x, const float *w, const float *b, const float *z, float *y,
                       int activation, float alpha, float beta, uint32_t threads, uint32_t flags,
                       char *why, size_t why_size) {
    (void)cache, (void)p, (void)x, (void)w, (void)b, (void)z, (void)y, (void)activation;
    (void)alpha, (void)beta, (void)threads, (void)flags;
    return cpu__dnnl_load(why, why_size);
}

int32_t cpu__dnnl_conv_slices(cpu__dnnl_conv_cache_t *cache, const cpu__dnnl_conv_params_t *p,
                              const float *w, const float *b, int has_z, int activation,
                              float alpha, float beta, uint32_t n_slots, uint32_t flags, char *why,
                              size_t why_size) {
    (void)cache, (void)p, (void)w, (void)b, (void)has_z, (void)activation, (void)alpha;
    (void)beta, (void)n_slots, (void)flags;
    return cpu__dnnl_load(why, why_size);
}

int32_t cpu__dnnl_conv_slice(cpu__dnnl_conv_cache_t *cache, uint32_t slot, const float *x, float *y,
                             char *why, size_t why_size) {
    (void)cache, (void)slot, (void)x, (void)y;
    return cpu__dnnl_load(why, why_size);
}

int32_t cpu__dnnl_conv_parts(cpu__dnnl_conv_cache_t *cache, const cpu__dnnl_conv_params_t *p,
                             uint32_t n_parts, int has_b, int has_z, int activation, float alpha,
                             float beta, uint32_t flags, char *why, size_t why_size) {
    (void)cache, (void)p, (void)n_parts, (void)has_b, (void)has_z;
    (void)activation, (void)alpha, (void)beta, (void)flags;
    return cpu__dnnl_load(why, why_size);
}

int32_t cpu__dnnl_conv_part(cpu__dnnl_conv_cache_t *cache, uint32_t part, const float *x,
                            const float *w, const float *b, float *y, uint32_t flags, char *why,
                            size_t why_size) {
    (void)cache, (void)part, (void)x, (void)w, (void)b, (void)y, (void)flags;
    return cpu__dnnl_load(why, why_size);
}

int32_t cpu__dnnl_mm_cache_create(cpu__dnnl_mm_cache_t **out_cache) {
    *out_cache = NULL;
    return SES_DRV_OK;
}

void cpu__dnnl_mm_cache_destroy(cpu__dnnl_mm_cache_t *cache) {
    (void)cache;
}

int32_t cpu__dnnl_matmul(cpu__dnnl_mm_cache_t *cache, const cpu__dnnl_mm_params_t *p,
                         const float *a, const float *w, const float *bias, float *y,
                         uint32_t threads, uint32_t flags, char *why, size_t why_size) {
    (void)cache, (void)p, (void)a, (void)w, (void)bias, (void)y, (void)threads, (void)flags;
    return cpu__dnnl_load(why, why_size);
}

int32_t cpu__dnnl_matmul_slices(cpu__dnnl_mm_cache_t *cache, const cpu__dnnl_mm_params_t *p,
                                const float *a, const float *w, const float *bias, float *y,
                                int64_t slices, uint32_t flags, char *why, size_t why_size) {
    (void)cache, (void)p, (void)a, (void)w, (void)bias, (void)y, (void)slices, (void)flags;
    return cpu__dnnl_load(why, why_size);
}

int32_t cpu__dnnl_matmul_slice(cpu__dnnl_mm_cache_t *cache, int64_t slice, char *why,
                               size_t why_size) {
    (void)cache, (void)slice;
    return cpu__dnnl_load(why, why_size);
}

#else /* SES_CPU_HAVE_DNNL */

#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>

/* The soname of oneDNN 2.x (Debian's libdnnl2). */
#define CPU__DNNL_SONAME "libdnnl.so.2"

/* ---------------------------------------------------------------------------------------------
 * The library
 * ------------------------------------------------------------------------------------------- */

/* Every entry point used, with the type of its declaration in oneDNN's header. */
#define CPU__DNNL_FUNCTIONS(X)                    \
    X(dnnl_version)                               \
    X(dnnl_get_effective_cpu_isa)                 \
    X(dnnl_engine_create)                         \
    X(dnnl_stream_create)                         \
    X(dnnl_stream_destroy)                        \
    X(dnnl_stream_wait)                           \
    X(dnnl_memory_desc_init_by_tag)               \
    X(dnnl_memory_desc_init_by_strides)           \
    X(dnnl_memory_desc_equal)                     \
    X(dnnl_memory_desc_get_size)                  \
    X(dnnl_memory_create)                         \
    X(dnnl_memory_destroy)                        \
    X(dnnl_memory_set_data_handle)                \
    X(dnnl_dilated_convolution_forward_desc_init) \
    X(dnnl_matmul_desc_init)                      \
    X(dnnl_primitive_attr_create)                 \
    X(dnnl_primitive_attr_destroy)                \
    X(dnnl_primitive_attr_set_post_ops)           \
    X(dnnl_primitive_attr_set_scratchpad_mode)    \
    X(dnnl_post_ops_create)                       \
    X(dnnl_post_ops_destroy)                      \
    X(dnnl_post_ops_append_sum)                   \
    X(dnnl_post_ops_append_eltwise)               \
    X(dnnl_primitive_desc_create)                 \
    X(dnnl_primitive_desc_destroy)                \
    X(dnnl_primitive_desc_query)                  \
    X(dnnl_primitive_desc_query_md)               \
    X(dnnl_reorder_primitive_desc_create)         \
    X(dnnl_primitive_create)                      \
    X(dnnl_primitive_destroy)                     \
    X(dnnl_primitive_execute)

typedef struct cpu__dnnl_lib {
    int tried;  /* cpu__dnnl_load ran; the fields below are its answer */
    int loaded; /* every entry found and the engine made */
    char why[256];
    char desc[128];
    void *handle;
    dnnl_engine_t engine; /* one CPU engine for the process, shared by every cache */
#define CPU__DNNL_POINTER(name) __typeof__(name) *name;
    CPU__DNNL_FUNCTIONS(CPU__DNNL_POINTER)
#undef CPU__DNNL_POINTER
    void (*omp_set_num_threads)(int); /* OpenMP's, from the libgomp oneDNN brought; may be NULL */
    int (*omp_get_max_threads)(void); /* likewise */
} cpu__dnnl_lib_t;

static pthread_mutex_t cpu_dnnl_lock = PTHREAD_MUTEX_INITIALIZER;
static cpu__dnnl_lib_t cpu_dnnl;

static const char *cpu__dnnl_isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
        case dnnl_cpu_isa_sse41:
            return "sse41";
        case dnnl_cpu_isa_avx:
            return "avx";
        case dnnl_cpu_isa_avx2:
            return "avx2";
        case dnnl_cpu_isa_avx2_vnni:
            return "avx2_vnni";
        case dnnl_cpu_isa_avx512_mic:
        case dnnl_cpu_isa_avx512_mic_4ops:
            return "avx512_mic";
        case dnnl_cpu_isa_avx512_core:
            return "avx512_core";
        case dnnl_cpu_isa_avx512_core_vnni:
            return "avx512_core_vnni";
        case dnnl_cpu_isa_avx512_core_bf16:
            return "avx512_core_bf16";
        case dnnl_cpu_isa_avx512_core_amx:
            return "avx512_core_amx";
        default:
            return "no jit ISA";
    }
}

/*
 * How libgomp's threads wait between parallel regions. By default they spin 300000 rounds
 * (GOMP_SPINCOUNT) before they sleep; OMP_WAIT_POLICY=PASSIVE makes them sleep at once, and a
 * sleeping thread costs a futex wake at the next convolution. Which is better depends on what
 * runs between convolutions and on whether the cores are shared. Measured with session-run on
 * the ONNX models of bench/onnx_bench.sh, 2 threads, 2-core Xeon (AVX-512), medians of three
 * interleaved rounds, ms:
 *
 *   - before the blocked layout (pools and reorders on the driver's pool between every two
 *     convolutions), PASSIVE was as fast quiet and far faster loaded: CNN 6.8 / 6.3 / 5.4
 *     against 15.6 / 6.2 / 8.4 with the default;
 *   - with the layout (convolution after convolution), quiet: resnet50 35.1 PASSIVE, 32.4 with
 *     a spin count of 3000, 31.0 with 30000, 31.3 with the default; squeezenet 8.8, 7.1, 7.0,
 *     6.9;
 *   - the same with another process spinning on one of the two cores: resnet50 60.0 PASSIVE,
 *     64.0 with 3000, 96.0 with 30000, 356 with the default (a spinning thread then waits for
 *     one the kernel has descheduled).
 *
 * So a short spin, GOMP_SPINCOUNT=3000: most of the default's gain on idle cores, a few percent
 * lost on shared ones. It is set for the load (libgomp reads it then) and put back; a user's
 * own OMP_WAIT_POLICY or GOMP_SPINCOUNT, even an empty one, is left alone, and so is a libgomp
 * already in the process.
 */
#define CPU__DNNL_SPINCOUNT "3000"

int32_t cpu__dnnl_load(char *why, size_t why_size) {
    cpu__dnnl_lib_t *l = &cpu_dnnl;
    int32_t st;

    pthread_mutex_lock(&cpu_dnnl_lock);
    if (!l->tried) {
        l->tried = 1;
        const int set_spin = !getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT");
        if (set_spin)
            setenv("GOMP_SPINCOUNT", CPU__DNNL_SPINCOUNT, 1);
        l->handle = dlopen(CPU__DNNL_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (set_spin)
            unsetenv("GOMP_SPINCOUNT");
        if (!l->handle) {
            const char *e = dlerror();
            snprintf(l->why, sizeof l->why, "cannot load %s (install libdnnl2): %s",
                     CPU__DNNL_SONAME, e ? e : "unknown error");
            goto done;
        }
#define CPU__DNNL_SYM(name)                                                                       \
    *(void **)(&l->name) = dlsym(l->handle, #name);                                               \
    if (!l->name) {                                                                               \
        snprintf(l->why, sizeof l->why, "%s has no %s: not oneDNN 2.x", CPU__DNNL_SONAME, #name); \
        goto done;                                                                                \
    }
        CPU__DNNL_FUNCTIONS(CPU__DNNL_SYM)
#undef CPU__DNNL_SYM
        /* dlsym on the handle searches oneDNN's dependencies too: its OpenMP runtime. */
        *(void **)(&l->omp_set_num_threads) = dlsym(l->handle, "omp_set_num_threads");
        *(void **)(&l->omp_get_max_threads) = dlsym(l->handle, "omp_get_max_threads");
        if (l->dnnl_engine_create(&l->engine, dnnl_cpu, 0) != dnnl_success) {
            snprintf(l->why, sizeof l->why, "oneDNN could not make a CPU engine");
            goto done;
        }
        const dnnl_version_t *v = l->dnnl_version();
        snprintf(l->desc, sizeof l->desc, "onednn %d.%d.%d (%s)", v->major, v->minor, v->patch,
                 cpu__dnnl_isa_name(l->dnnl_get_effective_cpu_isa()));
        l->loaded = 1;
    }
done:
    st = l->loaded ? SES_DRV_OK : SES_DRV_UNAVAILABLE;
    if (!l->loaded && why)
        snprintf(why, why_size, "%s", l->why);
    pthread_mutex_unlock(&cpu_dnnl_lock);
    return st;
}

const char *cpu__dnnl_describe(void) {
    return cpu_dnnl.loaded ? cpu_dnnl.desc : "";
}

void *cpu__dnnl_handle(void) {
    return cpu_dnnl.loaded ? cpu_dnnl.handle : NULL;
}

/* AVX-512's vectors hold 16 floats; oneDNN's avx2_vnni sits above avx512_core in the enum's
 * order but has 8-float vectors. */
static int cpu__dnnl_wide(dnnl_cpu_isa_t isa) {
    return isa >= dnnl_cpu_isa_avx512_core && isa != dnnl_cpu_isa_avx2_vnni;
}

int cpu__dnnl_native_16c(void) {
    return cpu_dnnl.loaded && cpu__dnnl_wide(cpu_dnnl.dnnl_get_effective_cpu_isa());
}

/* ---------------------------------------------------------------------------------------------
 * The cache
 * ------------------------------------------------------------------------------------------- */

/* A buffer of ours, 64-byte aligned, grown when a bigger one is needed, never shrunk. */
typedef struct cpu__dnnl_buf {
    void *data;
    size_t size;
} cpu__dnnl_buf_t;

/* A memory object and the address it was last pointed at (set again only when it changes:
 * setting a handle may zero a blocked layout's padding). */
typedef struct cpu__dnnl_mem {
    dnnl_memory_t m;
    const void *at;
} cpu__dnnl_mem_t;

/* What one thread slot of cpu__dnnl_conv_slices runs with: its own memory objects (a handle is
 * set per slice), scratchpad and stream, so that slots execute the primitive concurrently. */
typedef struct cpu__dnnl_slot {
    cpu__dnnl_mem_t src, dst, scratch;
    cpu__dnnl_buf_t scratch_buf;
    dnnl_stream_t stream;
} cpu__dnnl_slot_t;

struct cpu__dnnl_conv_cache {
    /* What the primitives were built for. */
    int built;
    cpu__dnnl_conv_params_t p;
    int activation, has_b, has_z;
    uint32_t layout; /* CPU__DNNL_X_BLOCKED and CPU__DNNL_YZ_BLOCKED of the caller's tensors */
    int threads;     /* the OpenMP thread count they were built under */
    float alpha, beta;
    /* The convolution and its layouts. */
    dnnl_primitive_t conv;
    dnnl_memory_desc_t src_user, w_user, dst_user, bias_md;
    dnnl_memory_desc_t src_md, w_md, dst_md, scratch_md;
    int src_plain, w_plain, dst_plain;
    /* Reorders, NULL where the layout is the plain one. */
    dnnl_primitive_t r_src, r_w, r_dst_in, r_dst_out;
    /* Memory objects: the caller's tensors (plain) and ours (blocked). */
    cpu__dnnl_mem_t x_u, w_u, z_u, y_u, b_u, src, w, dst, scratch;
    /* Our buffers. */
    cpu__dnnl_buf_t src_buf, w_buf, dst_buf, scratch_buf;
    /* The weights in w_buf are those at w_addr, valid while w_ready (constant weights only). */
    const void *w_addr;
    int w_ready;
    dnnl_stream_t stream;
    /* cpu__dnnl_conv_slices's slots, made for the primitive built (dropped with it). */
    cpu__dnnl_slot_t *slots;
    uint32_t n_slots;
    /* cpu__dnnl_conv_parts's: a cache per part of the output channels, each with its own
     * parameters (kept while the whole one is rebuilt for another path), and in a part, the
     * first of its channels. */
    struct cpu__dnnl_conv_cache *parts;
    uint32_t n_parts;
    int64_t part_c0;
};

int32_t cpu__dnnl_conv_cache_create(cpu__dnnl_conv_cache_t **out_cache) {
    *out_cache = calloc(1, sizeof **out_cache);
    return *out_cache ? SES_DRV_OK : SES_DRV_OUT_OF_MEMORY;
}

static void cpu__dnnl_mem_destroy(cpu__dnnl_mem_t *m) {
    if (m->m)
        cpu_dnnl.dnnl_memory_destroy(m->m);
    m->m = NULL;
    m->at = NULL;
}

static void cpu__dnnl_prim_destroy(dnnl_primitive_t *p) {
    if (*p)
        cpu_dnnl.dnnl_primitive_destroy(*p);
    *p = NULL;
}

/* What a cache's unbuild ends with: @p mems destroyed, the cache marked unbuilt and its
 * reordered weights stale. */
static void cpu__dnnl_forget(cpu__dnnl_mem_t *const *mems, size_t n, int *built, int *w_ready,
                             const void **w_addr) {
    for (size_t i = 0; i < n; i++)
        cpu__dnnl_mem_destroy(mems[i]);
    *built = 0;
    *w_ready = 0;
    *w_addr = NULL;
}

static void cpu__dnnl_stream_free(dnnl_stream_t stream) {
    if (stream)
        cpu_dnnl.dnnl_stream_destroy(stream);
}

/* Frees what cpu__dnnl_slot_make made of @p t (all of it zeroed or made). */
static void cpu__dnnl_slot_free(cpu__dnnl_slot_t *t) {
    cpu__dnnl_mem_destroy(&t->src);
    cpu__dnnl_mem_destroy(&t->dst);
    cpu__dnnl_mem_destroy(&t->scratch);
    cpu__dnnl_stream_free(t->stream);
    t->stream = NULL;
    free(t->scratch_buf.data);
    t->scratch_buf.data = NULL;
    t->scratch_buf.size = 0;
}

/* Frees @p c's slots. */
static void cpu__dnnl_slots_free(cpu__dnnl_conv_cache_t *c) {
    for (uint32_t i = 0; i < c->n_slots; i++)
        cpu__dnnl_slot_free(&c->slots[i]);
    free(c->slots);
    c->slots = NULL;
    c->n_slots = 0;
}

/* Drops what was built for the last parameters; keeps the buffers and the stream. */
static void cpu__dnnl_unbuild(cpu__dnnl_conv_cache_t *c) {
    if (!cpu_dnnl.loaded)
        return;
    cpu__dnnl_slots_free(c);
    cpu__dnnl_prim_destroy(&c->conv);
    cpu__dnnl_prim_destroy(&c->r_src);
    cpu__dnnl_prim_destroy(&c->r_w);
    cpu__dnnl_prim_destroy(&c->r_dst_in);
    cpu__dnnl_prim_destroy(&c->r_dst_out);
    cpu__dnnl_mem_t *mems[] = {&c->x_u, &c->w_u, &c->z_u, &c->y_u,    &c->b_u,
                               &c->src, &c->w,   &c->dst, &c->scratch};
    cpu__dnnl_forget(mems, sizeof mems / sizeof mems[0], &c->built, &c->w_ready, &c->w_addr);
}

/* Frees everything @p c holds, its parts included, and leaves it empty. */
static void cpu__dnnl_cache_clear(cpu__dnnl_conv_cache_t *c) {
    for (uint32_t i = 0; i < c->n_parts; i++)
        cpu__dnnl_cache_clear(&c->parts[i]);
    free(c->parts);
    cpu__dnnl_unbuild(c);
    cpu__dnnl_stream_free(c->stream);
    free(c->src_buf.data);
    free(c->w_buf.data);
    free(c->dst_buf.data);
    free(c->scratch_buf.data);
    memset(c, 0, sizeof *c);
}

void cpu__dnnl_conv_cache_destroy(cpu__dnnl_conv_cache_t *cache) {
    if (!cache)
        return;
    cpu__dnnl_cache_clear(cache);
    free(cache);
}

static int cpu__dnnl_grow(cpu__dnnl_buf_t *b, size_t size) {
    if (b->size >= size)
        return 1;
    size_t rounded = (size + 63) & ~(size_t)63;
    void *data = aligned_alloc(64, rounded ? rounded : 64);
    if (!data)
        return 0;
    free(b->data);
    b->data = data;
    b->size = rounded;
    return 1;
}

/* Points @p m at @p at, when it is not there already. */
static dnnl_status_t cpu__dnnl_point(cpu__dnnl_mem_t *m, const void *at) {
    if (m->at == at)
        return dnnl_success;
    dnnl_status_t s = cpu_dnnl.dnnl_memory_set_data_handle(m->m, (void *)at);
    m->at = s == dnnl_success ? at : NULL;
    return s;
}

/* A dense row-major tag for @p rank dims. */
static dnnl_format_tag_t cpu__dnnl_plain_tag(int rank) {
    switch (rank) {
        case 1:
            return dnnl_a;
        case 3:
            return dnnl_abc;
        case 4:
            return dnnl_abcd;
        case 5:
            return dnnl_abcde;
        case 6:
            return dnnl_abcdef;
        default:
            return dnnl_format_tag_undef;
    }
}

/* The channel-blocked-by-16 tag for @p rank dims (nCw16c, nChw16c, nCdhw16c). */
static dnnl_format_tag_t cpu__dnnl_blocked16_tag(int rank) {
    switch (rank) {
        case 3:
            return dnnl_aBc16b;
        case 4:
            return dnnl_aBcd16b;
        case 5:
            return dnnl_aBcde16b;
        default:
            return dnnl_format_tag_undef;
    }
}

static int cpu__dnnl_same_params(const cpu__dnnl_conv_cache_t *c, const cpu__dnnl_conv_params_t *p,
                                 int activation, float alpha, float beta, int has_b, int has_z,
                                 uint32_t layout) {
    return c->built && memcmp(&c->p, p, sizeof *p) == 0 && c->activation == activation &&
           c->alpha == alpha && c->beta == beta && c->has_b == has_b && c->has_z == has_z &&
           c->layout == layout;
}

#define CPU__DNNL_CHECK(call, what)                                                   \
    do {                                                                              \
        dnnl_status_t s_ = (call);                                                    \
        if (s_ != dnnl_success) {                                                     \
            snprintf(why, why_size, "oneDNN: %s failed (status %d)", what, (int)s_);  \
            st = s_ == dnnl_out_of_memory ? SES_DRV_OUT_OF_MEMORY : SES_DRV_INTERNAL; \
            goto fail;                                                                \
        }                                                                             \
    } while (0)

/* A reorder from @p from to @p to, or NULL in *out when they are the same layout. */
static dnnl_status_t cpu__dnnl_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                                       dnnl_primitive_t *out) {
    const cpu__dnnl_lib_t *l = &cpu_dnnl;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s;

    *out = NULL;
    if (l->dnnl_memory_desc_equal(from, to))
        return dnnl_success;
    s = l->dnnl_reorder_primitive_desc_create(&pd, from, l->engine, to, l->engine, NULL);
    if (s == dnnl_success)
        s = l->dnnl_primitive_create(out, pd);
    if (pd)
        l->dnnl_primitive_desc_destroy(pd);
    return s;
}

/* Frees what building a primitive made along the way (NULL when not made). */
static void cpu__dnnl_build_free(dnnl_primitive_desc_t pd, dnnl_post_ops_t po,
                                 dnnl_primitive_attr_t attr) {
    if (pd)
        cpu_dnnl.dnnl_primitive_desc_destroy(pd);
    if (po)
        cpu_dnnl.dnnl_post_ops_destroy(po);
    if (attr)
        cpu_dnnl.dnnl_primitive_attr_destroy(attr);
}

/* Appends the activation @p activation (enum cpu__dnnl_activation) as an eltwise post-op. */
static int32_t cpu__dnnl_append_act(dnnl_post_ops_t po, int activation, float alpha, float beta,
                                    char *why, size_t why_size) {
    int32_t st = SES_DRV_OK;

    switch (activation) {
        case CPU__DNNL_ACT_NONE:
            break;
        case CPU__DNNL_ACT_RELU:
            CPU__DNNL_CHECK(
                cpu_dnnl.dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f),
                "the Relu post-op");
            break;
        case CPU__DNNL_ACT_LEAKY_RELU:
            CPU__DNNL_CHECK(
                cpu_dnnl.dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, alpha, 0.0f),
                "the LeakyRelu post-op");
            break;
        case CPU__DNNL_ACT_SIGMOID:
            CPU__DNNL_CHECK(
                cpu_dnnl.dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_logistic, 0.0f, 0.0f),
                "the Sigmoid post-op");
            break;
        case CPU__DNNL_ACT_TANH:
            CPU__DNNL_CHECK(
                cpu_dnnl.dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_tanh, 0.0f, 0.0f),
                "the Tanh post-op");
            break;
        case CPU__DNNL_ACT_CLIP:
            CPU__DNNL_CHECK(
                cpu_dnnl.dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, alpha, beta),
                "the Clip post-op");
            break;
        default:
            snprintf(why, why_size, "unknown activation %d", activation);
            return SES_DRV_INVALID_ARGUMENT;
    }
    return SES_DRV_OK;

fail:
    return st;
}

/* Builds the primitives, memory objects and buffers for @p p. */
static int32_t cpu__dnnl_build(cpu__dnnl_conv_cache_t *c, const cpu__dnnl_conv_params_t *p,
                               int activation, float alpha, float beta, int has_b, int has_z,
                               uint32_t layout, char *why, size_t why_size) {
    const cpu__dnnl_lib_t *l = &cpu_dnnl;
    const int n = (int)p->spatial, grouped = p->group > 1;
    dnnl_dims_t sd, wd, dd, bd, strides, dilates, pl, pr;
    dnnl_memory_desc_t src_any, w_any;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    int32_t st = SES_DRV_OK;

    cpu__dnnl_unbuild(c);
    sd[0] = p->batch;
    sd[1] = p->in_channels;
    dd[0] = p->batch;
    dd[1] = p->out_channels;
    int wr = 0;
    if (grouped)
        wd[wr++] = p->group;
    wd[wr++] = p->out_channels / p->group;
    wd[wr++] = p->in_channels / p->group;
    bd[0] = p->out_channels;
    for (int i = 0; i < n; i++) {
        sd[2 + i] = p->in[i];
        dd[2 + i] = p->out[i];
        wd[wr++] = p->kernel[i];
        strides[i] = p->strides[i];
        dilates[i] = p->dilations[i] - 1; /* oneDNN counts the gaps: 0 is a dense kernel */
        pl[i] = p->pads_begin[i];
        pr[i] = p->pads_end[i];
    }
    const int rank = n + 2;
    /* The caller's layouts: dense, or channels blocked by 16 (the NCHWc16 tensors). */
    const int x_blocked = (layout & CPU__DNNL_X_BLOCKED) != 0;
    const int yz_blocked = (layout & CPU__DNNL_YZ_BLOCKED) != 0;
    CPU__DNNL_CHECK(l->dnnl_memory_desc_init_by_tag(
                        &c->src_user, rank, sd, dnnl_f32,
                        x_blocked ? cpu__dnnl_blocked16_tag(rank) : cpu__dnnl_plain_tag(rank)),
                    "the source's descriptor");
    CPU__DNNL_CHECK(l->dnnl_memory_desc_init_by_tag(
                        &c->dst_user, rank, dd, dnnl_f32,
                        yz_blocked ? cpu__dnnl_blocked16_tag(rank) : cpu__dnnl_plain_tag(rank)),
                    "the destination's descriptor");
    CPU__DNNL_CHECK(
        l->dnnl_memory_desc_init_by_tag(&c->w_user, wr, wd, dnnl_f32, cpu__dnnl_plain_tag(wr)),
        "the weights' descriptor");
    CPU__DNNL_CHECK(l->dnnl_memory_desc_init_by_tag(&c->bias_md, 1, bd, dnnl_f32, dnnl_a),
                    "the bias's descriptor");
    CPU__DNNL_CHECK(
        l->dnnl_memory_desc_init_by_tag(&src_any, rank, sd, dnnl_f32, dnnl_format_tag_any),
        "the source's descriptor");
    CPU__DNNL_CHECK(l->dnnl_memory_desc_init_by_tag(&w_any, wr, wd, dnnl_f32, dnnl_format_tag_any),
                    "the weights' descriptor");
    dnnl_status_t s;

    /* Y = act(conv + B + Z): the sum post-op adds what dst holds before the primitive runs. */
    CPU__DNNL_CHECK(l->dnnl_primitive_attr_create(&attr), "primitive_attr_create");
    CPU__DNNL_CHECK(l->dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
                    "set_scratchpad_mode");
    CPU__DNNL_CHECK(l->dnnl_post_ops_create(&po), "post_ops_create");
    if (has_z)
        CPU__DNNL_CHECK(l->dnnl_post_ops_append_sum(po, 1.0f), "the sum post-op");
    if ((st = cpu__dnnl_append_act(po, activation, alpha, beta, why, why_size)) != SES_DRV_OK)
        goto fail;
    CPU__DNNL_CHECK(l->dnnl_primitive_attr_set_post_ops(attr, po), "set_post_ops");
    /*
     * The destination's layout. Left to oneDNN (format_tag_any), brgconv picks channels-last
     * (acdb), and the reorder of Y back to nchw is a transpose that oneDNN's generic reorder
     * does slowly: 1.5 ms for the bench CNN's first layer at batch 64 (6.4 MB) on the shared
     * 2-core Xeon, against 0.54 ms for the convolution itself. Asked for channels blocked by the
     * vector width (nChw16c on AVX-512, nChw8c below), it picks the jit convolution, as fast
     * (0.33 ms there; 2.37 against brgconv's 2.38 ms for the second layer), and the reorders are
     * oneDNN's blocked ones: 0.45 and 0.27 ms instead of 1.5 and 0.34 ms (DNNL_VERBOSE=1, the
     * pool at 1 thread, though OpenMP then still ran 2: see the thread count in cpu__dnnl_conv;
     * with 1 OpenMP thread the blocked path's steps take 0.27 + 0.43-0.51 ms and 0.12 + 2.51 +
     * 0.26 ms). So that is
     * tried first, and everything left to oneDNN when it has no implementation for that or only
     * a GEMM or reference one. Source and weights are its choice, except that a source the
     * caller holds blocked by 16 is asked for as it is (so it is read in place, no reorder).
     * A caller's blocked-by-16 destination is asked for as it is whatever the ISA: then Y is
     * written in place.
     */
    const int wide = cpu__dnnl_wide(l->dnnl_get_effective_cpu_isa());
    const dnnl_format_tag_t blocked[3] = {wide ? dnnl_aBc16b : dnnl_aBc8b,
                                          wide ? dnnl_aBcd16b : dnnl_aBcd8b,
                                          wide ? dnnl_aBcde16b : dnnl_aBcde8b};
    /* Winograd first where asked and the shape is its (attempt -1), on the caller's blocked X
     * and Y: 3x3 stride-1 layers of resnet50 at batch 1 took 1.38 -> 0.81 ms (56x56x64),
     * 1.36 -> 0.87 (28x28x128), 1.47 -> 1.23 (14x14x256), 1.99 -> 1.99 (7x7x512) on 1 thread
     * of the 2-core Xeon (DNNL_VERBOSE, medians of 12 runs), the whole model 53.3 -> 49.5 ms,
     * its output within 2.5e-7 of the direct one's (relative to its largest). */
    const int wino = (layout & CPU__DNNL_WINOGRAD) && x_blocked && yz_blocked && n == 2 &&
                     !grouped && p->kernel[0] == 3 && p->kernel[1] == 3 && p->strides[0] == 1 &&
                     p->strides[1] == 1 && p->dilations[0] == 1 && p->dilations[1] == 1;
    for (int attempt = wino ? -1 : 0; attempt < 2 && !pd; attempt++) {
        dnnl_memory_desc_t dst_want;
        const dnnl_format_tag_t dst_tag =
            yz_blocked ? cpu__dnnl_blocked16_tag(rank) : blocked[n - 1];
        CPU__DNNL_CHECK(
            l->dnnl_memory_desc_init_by_tag(&dst_want, rank, dd, dnnl_f32,
                                            attempt <= 0 ? dst_tag : dnnl_format_tag_any),
            "the destination's descriptor");
        s = l->dnnl_dilated_convolution_forward_desc_init(
            &cd, dnnl_forward_inference,
            attempt < 0 ? dnnl_convolution_winograd : dnnl_convolution_direct,
            attempt <= 0 && x_blocked ? &c->src_user : &src_any, &w_any, has_b ? &c->bias_md : NULL,
            &dst_want, strides, dilates, pl, pr);
        if (s != dnnl_success && attempt < 0)
            continue;
        if (s != dnnl_success) {
            snprintf(why, why_size, "oneDNN refuses the convolution's parameters (status %d)",
                     (int)s);
            st = SES_DRV_INVALID_ARGUMENT;
            goto fail;
        }
        s = l->dnnl_primitive_desc_create(&pd, &cd, attr, l->engine, NULL);
        if ((s == dnnl_unimplemented && attempt <= 0) || (s != dnnl_success && attempt < 0)) {
            pd = NULL;
            continue;
        }
        /* Winograd only in place: X and Y as the caller holds them. */
        if (attempt < 0 && s == dnnl_success &&
            (!l->dnnl_memory_desc_equal(l->dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                                        &c->src_user) ||
             !l->dnnl_memory_desc_equal(l->dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0),
                                        &c->dst_user))) {
            l->dnnl_primitive_desc_destroy(pd);
            pd = NULL;
            continue;
        }
        if (s == dnnl_unimplemented) {
            snprintf(why, why_size, "oneDNN has no convolution for these parameters");
            st = SES_DRV_UNIMPLEMENTED;
            goto fail;
        }
        CPU__DNNL_CHECK(s, "creating the convolution's primitive descriptor");
        const char *impl = NULL;
        if (attempt == 0 && (l->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0,
                                                          (void *)&impl) != dnnl_success ||
                             !impl || strstr(impl, "gemm") || strstr(impl, "ref"))) {
            l->dnnl_primitive_desc_destroy(pd);
            pd = NULL;
        }
    }
    c->src_md = *l->dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    c->w_md = *l->dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    c->dst_md = *l->dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    c->scratch_md = *l->dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    const dnnl_memory_desc_t scratch_md = c->scratch_md;
    CPU__DNNL_CHECK(l->dnnl_primitive_create(&c->conv, pd), "creating the convolution");

    c->src_plain = l->dnnl_memory_desc_equal(&c->src_md, &c->src_user);
    c->w_plain = l->dnnl_memory_desc_equal(&c->w_md, &c->w_user);
    c->dst_plain = l->dnnl_memory_desc_equal(&c->dst_md, &c->dst_user);
    CPU__DNNL_CHECK(cpu__dnnl_reorder(&c->src_user, &c->src_md, &c->r_src), "the source's reorder");
    CPU__DNNL_CHECK(cpu__dnnl_reorder(&c->w_user, &c->w_md, &c->r_w), "the weights' reorder");
    CPU__DNNL_CHECK(cpu__dnnl_reorder(&c->dst_user, &c->dst_md, &c->r_dst_in), "Z's reorder");
    CPU__DNNL_CHECK(cpu__dnnl_reorder(&c->dst_md, &c->dst_user, &c->r_dst_out),
                    "the destination's reorder");

    /* Our buffers, sized now: no run allocates. */
    const size_t scratch_size = l->dnnl_memory_desc_get_size(&scratch_md);
    if ((!c->src_plain && !cpu__dnnl_grow(&c->src_buf, l->dnnl_memory_desc_get_size(&c->src_md))) ||
        (!c->w_plain && !cpu__dnnl_grow(&c->w_buf, l->dnnl_memory_desc_get_size(&c->w_md))) ||
        (!c->dst_plain && !cpu__dnnl_grow(&c->dst_buf, l->dnnl_memory_desc_get_size(&c->dst_md))) ||
        (scratch_size && !cpu__dnnl_grow(&c->scratch_buf, scratch_size))) {
        snprintf(why, why_size, "out of memory for oneDNN's blocked tensors");
        st = SES_DRV_OUT_OF_MEMORY;
        goto fail;
    }
    /* Memory objects, pointed at their data per call (ours once, here). */
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->x_u.m, &c->src_user, l->engine, DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->w_u.m, &c->w_user, l->engine, DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->z_u.m, &c->dst_user, l->engine, DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->y_u.m, &c->dst_user, l->engine, DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->b_u.m, &c->bias_md, l->engine, DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->src.m, &c->src_md, l->engine,
                                          c->src_plain ? DNNL_MEMORY_NONE : c->src_buf.data),
                    "memory_create");
    c->src.at = c->src_plain ? NULL : c->src_buf.data;
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->w.m, &c->w_md, l->engine,
                                          c->w_plain ? DNNL_MEMORY_NONE : c->w_buf.data),
                    "memory_create");
    c->w.at = c->w_plain ? NULL : c->w_buf.data;
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->dst.m, &c->dst_md, l->engine,
                                          c->dst_plain ? DNNL_MEMORY_NONE : c->dst_buf.data),
                    "memory_create");
    c->dst.at = c->dst_plain ? NULL : c->dst_buf.data;
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->scratch.m, &scratch_md, l->engine,
                                          scratch_size ? c->scratch_buf.data : DNNL_MEMORY_NONE),
                    "memory_create");
    if (!c->stream)
        CPU__DNNL_CHECK(l->dnnl_stream_create(&c->stream, l->engine, dnnl_stream_default_flags),
                        "stream_create");

    c->p = *p;
    c->activation = activation;
    c->alpha = alpha;
    c->beta = beta;
    c->has_b = has_b;
    c->has_z = has_z;
    c->layout = layout;
    c->built = 1;
    cpu__dnnl_build_free(pd, po, attr);
    return SES_DRV_OK;

fail:
    cpu__dnnl_build_free(pd, po, attr);
    cpu__dnnl_unbuild(c);
    return st;
}

static dnnl_status_t cpu__dnnl_run(dnnl_primitive_t prim, dnnl_stream_t stream, dnnl_memory_t from,
                                   dnnl_memory_t to) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return cpu_dnnl.dnnl_primitive_execute(prim, stream, 2, args);
}

/* The weights where the primitive reads them: @p w itself when its layout is oneDNN's, else
 * reordered into our buffer at every call, or once while they are constant at one address. */
static int32_t cpu__dnnl_ready_weights(cpu__dnnl_conv_cache_t *c, const float *w, uint32_t flags,
                                       char *why, size_t why_size) {
    int32_t st = SES_DRV_OK;

    if (c->w_plain) {
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->w, w), "set_data_handle");
    } else if (!(flags & CPU__DNNL_W_CONSTANT) || !c->w_ready || c->w_addr != (const void *)w) {
        c->w_ready = 0;
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->w_u, w), "set_data_handle");
        CPU__DNNL_CHECK(cpu__dnnl_run(c->r_w, c->stream, c->w_u.m, c->w.m),
                        "reordering the weights");
        CPU__DNNL_CHECK(cpu_dnnl.dnnl_stream_wait(c->stream), "stream_wait");
        c->w_addr = w;
        c->w_ready = (flags & CPU__DNNL_W_CONSTANT) != 0;
    }
    return SES_DRV_OK;

fail:
    c->w_ready = 0;
    return st;
}

/* What cpu__dnnl_conv and cpu__dnnl_conv_slices refuse before building anything. */
static int32_t cpu__dnnl_conv_check(const cpu__dnnl_conv_params_t *p, uint32_t flags, char *why,
                                    size_t why_size) {
    if (!cpu__dnnl_conv_supported(p)) {
        snprintf(why, why_size, "oneDNN takes 1 to 3 spatial dims of positive sizes");
        return SES_DRV_UNIMPLEMENTED;
    }
    if (((flags & CPU__DNNL_X_BLOCKED) && p->in_channels % 16 != 0) ||
        ((flags & CPU__DNNL_YZ_BLOCKED) && p->out_channels % 16 != 0)) {
        snprintf(why, why_size,
                 "channels blocked by 16 must be a multiple of 16: %" PRId64 " in, %" PRId64 " out",
                 p->in_channels, p->out_channels);
        return SES_DRV_INVALID_ARGUMENT;
    }
    return SES_DRV_OK;
}

int32_t cpu__dnnl_conv(cpu__dnnl_conv_cache_t *c, const cpu__dnnl_conv_params_t *p, const float *x,
                       const float *w, const float *b, const float *z, float *y, int activation,
                       float alpha, float beta, uint32_t threads, uint32_t flags, char *why,
                       size_t why_size) {
    const cpu__dnnl_lib_t *l = &cpu_dnnl;
    int32_t st;

    if (!l->loaded)
        return cpu__dnnl_load(why, why_size);
    if (!c || !p || !x || !w || !y) {
        snprintf(why, why_size, "cpu__dnnl_conv: NULL argument");
        return SES_DRV_INVALID_ARGUMENT;
    }
    if ((st = cpu__dnnl_conv_check(p, flags, why, why_size)) != SES_DRV_OK)
        return st;
    /* oneDNN runs on OpenMP's threads, as many as the calling thread's OpenMP setting says:
     * never more than the device's pool, whose cores they share. The setting must hold when
     * the primitive is created too: oneDNN's jit kernels split their work for the thread count
     * of that moment and ask OpenMP for that many threads at every run (seen with 2.6.3: built
     * under the default of 2, a run after omp_set_num_threads(1) still used 2). So the count is
     * part of what the primitive was built for. */
    const int nthr = threads ? (int)threads : 1;
    if (l->omp_set_num_threads)
        l->omp_set_num_threads(nthr);
    const int has_b = b != NULL, has_z = z != NULL;
    const uint32_t layout =
        flags & (CPU__DNNL_X_BLOCKED | CPU__DNNL_YZ_BLOCKED | CPU__DNNL_WINOGRAD);
    if ((!cpu__dnnl_same_params(c, p, activation, alpha, beta, has_b, has_z, layout) ||
         c->threads != nthr) &&
        (st = cpu__dnnl_build(c, p, activation, alpha, beta, has_b, has_z, layout, why,
                              why_size)) != SES_DRV_OK)
        return st;
    c->threads = nthr;

    /* The source: the caller's X itself, or reordered into our buffer. */
    if (c->src_plain) {
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->src, x), "set_data_handle");
    } else {
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->x_u, x), "set_data_handle");
        CPU__DNNL_CHECK(cpu__dnnl_run(c->r_src, c->stream, c->x_u.m, c->src.m),
                        "reordering the source");
    }
    if ((st = cpu__dnnl_ready_weights(c, w, flags, why, why_size)) != SES_DRV_OK)
        goto fail;
    /* The destination, holding Z first when there is one (the sum post-op adds it). */
    if (c->dst_plain) {
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->dst, y), "set_data_handle");
        if (z && z != y)
            memcpy(y, z, l->dnnl_memory_desc_get_size(&c->dst_user));
    } else if (z) {
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->z_u, z), "set_data_handle");
        CPU__DNNL_CHECK(cpu__dnnl_run(c->r_dst_in, c->stream, c->z_u.m, c->dst.m), "reordering Z");
    }
    if (b)
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->b_u, b), "set_data_handle");

    dnnl_exec_arg_t args[5] = {
        {DNNL_ARG_SRC, c->src.m},  {DNNL_ARG_WEIGHTS, c->w.m},
        {DNNL_ARG_DST, c->dst.m},  {DNNL_ARG_SCRATCHPAD, c->scratch.m},
        {DNNL_ARG_BIAS, c->b_u.m},
    };
    CPU__DNNL_CHECK(l->dnnl_primitive_execute(c->conv, c->stream, b ? 5 : 4, args),
                    "the convolution");
    if (!c->dst_plain) {
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->y_u, y), "set_data_handle");
        CPU__DNNL_CHECK(cpu__dnnl_run(c->r_dst_out, c->stream, c->dst.m, c->y_u.m),
                        "reordering the destination");
    }
    CPU__DNNL_CHECK(l->dnnl_stream_wait(c->stream), "stream_wait");
    return SES_DRV_OK;

fail:
    /* The reordered weights may be half written. */
    c->w_ready = 0;
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * By slices of images, on the caller's threads
 * ------------------------------------------------------------------------------------------- */

/* Sets the calling thread's OpenMP count to 1 (a per-thread setting) and returns the one it
 * had, for cpu__dnnl_alone_end: what slices are made and run under, on the thread that makes or
 * runs them, which may be the application's. */
static int cpu__dnnl_alone_begin(void) {
    const cpu__dnnl_lib_t *l = &cpu_dnnl;
    const int team = l->omp_get_max_threads ? l->omp_get_max_threads() : 1;
    if (team != 1 && l->omp_set_num_threads)
        l->omp_set_num_threads(1);
    return team;
}

static void cpu__dnnl_alone_end(int team) {
    if (team != 1 && cpu_dnnl.omp_set_num_threads)
        cpu_dnnl.omp_set_num_threads(team);
}

/*
 * Runs @p prim with @p args on the calling thread alone and waits for it. The primitive was made
 * for one OpenMP thread, but oneDNN's GEMM-based implementations (gemm:jit, which it picks for a
 * matmul of few columns) ask OpenMP for the calling thread's count at every run: on a pool
 * thread that is one per CPU, and 16 pool threads each started a team of 16 (the MLP 784-256-10
 * at batch 64 took 28 ms instead of 0.2 on a 16-core host). The count is the thread's own
 * setting, given back after.
 */
static dnnl_status_t cpu__dnnl_run_alone(dnnl_primitive_t prim, dnnl_stream_t stream, int n_args,
                                         const dnnl_exec_arg_t *args) {
    const int team = cpu__dnnl_alone_begin();
    dnnl_status_t s = cpu_dnnl.dnnl_primitive_execute(prim, stream, n_args, args);
    if (s == dnnl_success)
        s = cpu_dnnl.dnnl_stream_wait(stream);
    cpu__dnnl_alone_end(team);
    return s;
}

/* One thread slot (zeroed) for a primitive of these layouts: memory objects for its source
 * and destination (pointed per run), its own scratchpad and stream. */
static int32_t cpu__dnnl_slot_make(cpu__dnnl_slot_t *t, const dnnl_memory_desc_t *src_md,
                                   const dnnl_memory_desc_t *dst_md,
                                   const dnnl_memory_desc_t *scratch_md, char *why,
                                   size_t why_size) {
    const cpu__dnnl_lib_t *l = &cpu_dnnl;
    const size_t scratch_size = l->dnnl_memory_desc_get_size(scratch_md);
    int32_t st = SES_DRV_OK;

    if (scratch_size && !cpu__dnnl_grow(&t->scratch_buf, scratch_size)) {
        snprintf(why, why_size, "out of memory for oneDNN's scratchpads");
        return SES_DRV_OUT_OF_MEMORY;
    }
    CPU__DNNL_CHECK(l->dnnl_memory_create(&t->src.m, src_md, l->engine, DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_memory_create(&t->dst.m, dst_md, l->engine, DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_memory_create(&t->scratch.m, scratch_md, l->engine,
                                          scratch_size ? t->scratch_buf.data : DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_stream_create(&t->stream, l->engine, dnnl_stream_default_flags),
                    "stream_create");
    return SES_DRV_OK;

fail:
    return st;
}

/* The slots of a convolution cache, for the primitive just built. */
static int32_t cpu__dnnl_slots_make(cpu__dnnl_conv_cache_t *c, uint32_t n_slots, char *why,
                                    size_t why_size) {
    int32_t st = SES_DRV_OK;

    cpu__dnnl_slots_free(c);
    c->slots = calloc(n_slots, sizeof *c->slots);
    if (!c->slots) {
        snprintf(why, why_size, "out of memory for %" PRIu32 " thread slots", n_slots);
        return SES_DRV_OUT_OF_MEMORY;
    }
    c->n_slots = n_slots;
    for (uint32_t i = 0; i < n_slots && st == SES_DRV_OK; i++)
        st = cpu__dnnl_slot_make(&c->slots[i], &c->src_md, &c->dst_md, &c->scratch_md, why,
                                 why_size);
    if (st != SES_DRV_OK)
        cpu__dnnl_slots_free(c);
    return st;
}

int32_t cpu__dnnl_conv_slices(cpu__dnnl_conv_cache_t *c, const cpu__dnnl_conv_params_t *p,
                              const float *w, const float *b, int has_z, int activation,
                              float alpha, float beta, uint32_t n_slots, uint32_t flags, char *why,
                              size_t why_size) {
    const cpu__dnnl_lib_t *l = &cpu_dnnl;
    int32_t st = SES_DRV_OK;

    if (!l->loaded)
        return cpu__dnnl_load(why, why_size);
    if (!c || !p || !w || n_slots < 1) {
        snprintf(why, why_size, "cpu__dnnl_conv_slices: NULL argument or no slot");
        return SES_DRV_INVALID_ARGUMENT;
    }
    if ((st = cpu__dnnl_conv_check(p, flags, why, why_size)) != SES_DRV_OK)
        return st;
    /* One OpenMP thread while the primitive is made: its kernels then split nothing, and a
     * slot's execute runs on the thread that calls it (no OpenMP team). The caller's count
     * is put back after. */
    const int team = cpu__dnnl_alone_begin();
    const uint32_t layout =
        flags & (CPU__DNNL_X_BLOCKED | CPU__DNNL_YZ_BLOCKED | CPU__DNNL_WINOGRAD);
    if (!cpu__dnnl_same_params(c, p, activation, alpha, beta, b != NULL, has_z, layout) ||
        c->threads != 1) {
        if ((st = cpu__dnnl_build(c, p, activation, alpha, beta, b != NULL, has_z, layout, why,
                                  why_size)) != SES_DRV_OK)
            goto out;
        c->threads = 1;
    }
    /* A slice is pointed at where it is: X's and Y's layouts must be the primitive's. */
    if (!c->src_plain || !c->dst_plain) {
        snprintf(why, why_size, "oneDNN wants X or Y in another layout than the caller's");
        st = SES_DRV_UNIMPLEMENTED;
        goto out;
    }
    if (c->n_slots < n_slots &&
        (st = cpu__dnnl_slots_make(c, n_slots, why, why_size)) != SES_DRV_OK)
        goto out;
    if ((st = cpu__dnnl_ready_weights(c, w, flags, why, why_size)) != SES_DRV_OK)
        goto out;
    if (b && cpu__dnnl_point(&c->b_u, b) != dnnl_success) {
        snprintf(why, why_size, "oneDNN: set_data_handle of the bias failed");
        st = SES_DRV_INTERNAL;
    }
out:
    cpu__dnnl_alone_end(team);
    return st;
}

int32_t cpu__dnnl_conv_slice(cpu__dnnl_conv_cache_t *c, uint32_t slot, const float *x, float *y,
                             char *why, size_t why_size) {
    int32_t st = SES_DRV_OK;

    if (!c || !c->built || slot >= c->n_slots || !x || !y) {
        snprintf(why, why_size, "cpu__dnnl_conv_slice: no slot %" PRIu32 " prepared", slot);
        return SES_DRV_INVALID_ARGUMENT;
    }
    cpu__dnnl_slot_t *t = &c->slots[slot];
    CPU__DNNL_CHECK(cpu__dnnl_point(&t->src, x), "set_data_handle");
    CPU__DNNL_CHECK(cpu__dnnl_point(&t->dst, y), "set_data_handle");
    dnnl_exec_arg_t args[5] = {
        {DNNL_ARG_SRC, t->src.m},  {DNNL_ARG_WEIGHTS, c->w.m},
        {DNNL_ARG_DST, t->dst.m},  {DNNL_ARG_SCRATCHPAD, t->scratch.m},
        {DNNL_ARG_BIAS, c->b_u.m},
    };
    CPU__DNNL_CHECK(cpu__dnnl_run_alone(c->conv, t->stream, c->has_b ? 5 : 4, args),
                    "the convolution");
    return SES_DRV_OK;

fail:
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * By slices of output channels, on the caller's threads
 * ------------------------------------------------------------------------------------------- */

int32_t cpu__dnnl_conv_parts(cpu__dnnl_conv_cache_t *c, const cpu__dnnl_conv_params_t *p,
                             uint32_t n_parts, int has_b, int has_z, int activation, float alpha,
                             float beta, uint32_t flags, char *why, size_t why_size) {
    const cpu__dnnl_lib_t *l = &cpu_dnnl;
    int32_t st = SES_DRV_OK;

    if (!l->loaded)
        return cpu__dnnl_load(why, why_size);
    if (!c || !p || n_parts < 1) {
        snprintf(why, why_size, "cpu__dnnl_conv_parts: NULL argument or no part");
        return SES_DRV_INVALID_ARGUMENT;
    }
    if ((st = cpu__dnnl_conv_check(p, flags, why, why_size)) != SES_DRV_OK)
        return st;
    /* A part's weights are a run of W's rows only when nothing is grouped. */
    if (p->group != 1) {
        snprintf(why, why_size, "slices of output channels need an ungrouped convolution");
        return SES_DRV_UNIMPLEMENTED;
    }
    const int64_t block = (flags & CPU__DNNL_YZ_BLOCKED) ? 16 : 1;
    if ((int64_t)n_parts > p->out_channels / block) {
        snprintf(why, why_size,
                 "cpu__dnnl_conv_parts: %" PRIu32 " parts of %" PRId64
                 " channels, in blocks of %" PRId64,
                 n_parts, p->out_channels, block);
        return SES_DRV_INVALID_ARGUMENT;
    }
    if (c->n_parts != n_parts) {
        for (uint32_t i = 0; i < c->n_parts; i++)
            cpu__dnnl_cache_clear(&c->parts[i]);
        free(c->parts);
        c->n_parts = 0;
        c->parts = calloc(n_parts, sizeof *c->parts);
        if (!c->parts) {
            snprintf(why, why_size, "out of memory for %" PRIu32 " parts", n_parts);
            return SES_DRV_OUT_OF_MEMORY;
        }
        c->n_parts = n_parts;
    }
    /* Made under one OpenMP thread, as the slices of images are: each part's execute then runs
     * on the thread that calls it. */
    const int team = cpu__dnnl_alone_begin();
    const uint32_t layout =
        flags & (CPU__DNNL_X_BLOCKED | CPU__DNNL_YZ_BLOCKED | CPU__DNNL_WINOGRAD);
    for (uint32_t k = 0; k < n_parts; k++) {
        cpu__dnnl_conv_cache_t *part = &c->parts[k];
        cpu__dnnl_conv_params_t pp = *p;
        pp.batch = 1;
        const int64_t c0 = cpu__dnnl_part_first(p->out_channels, block, n_parts, k);
        pp.out_channels = cpu__dnnl_part_first(p->out_channels, block, n_parts, k + 1) - c0;
        if (!cpu__dnnl_same_params(part, &pp, activation, alpha, beta, has_b, has_z, layout) ||
            part->threads != 1) {
            if ((st = cpu__dnnl_build(part, &pp, activation, alpha, beta, has_b, has_z, layout, why,
                                      why_size)) != SES_DRV_OK)
                break;
            part->threads = 1;
        }
        /* X is read and the part's Y written where they are. */
        if (!part->src_plain || !part->dst_plain) {
            snprintf(why, why_size, "oneDNN wants X or Y in another layout than the caller's");
            st = SES_DRV_UNIMPLEMENTED;
            break;
        }
        part->part_c0 = c0;
    }
    cpu__dnnl_alone_end(team);
    return st;
}

int32_t cpu__dnnl_conv_part(cpu__dnnl_conv_cache_t *c, uint32_t part, const float *x,
                            const float *w, const float *b, float *y, uint32_t flags, char *why,
                            size_t why_size) {
    int32_t st = SES_DRV_OK;

    if (!c || part >= c->n_parts || !c->parts[part].built || !x || !w || !y ||
        (c->parts[part].has_b && !b)) {
        snprintf(why, why_size, "cpu__dnnl_conv_part: no part %" PRIu32 " prepared", part);
        return SES_DRV_INVALID_ARGUMENT;
    }
    cpu__dnnl_conv_cache_t *t = &c->parts[part];
    const int team = cpu__dnnl_alone_begin();
    /* The part's rows of the plain W [out_channels, in_channels, kernel...]. */
    size_t row = (size_t)t->p.in_channels;
    for (uint32_t i = 0; i < t->p.spatial; i++)
        row *= (size_t)t->p.kernel[i];
    if ((st = cpu__dnnl_ready_weights(t, w + (size_t)t->part_c0 * row, flags, why, why_size)) !=
        SES_DRV_OK)
        goto out;
    CPU__DNNL_CHECK(cpu__dnnl_point(&t->src, x), "set_data_handle");
    CPU__DNNL_CHECK(cpu__dnnl_point(&t->dst, y), "set_data_handle");
    if (t->has_b)
        CPU__DNNL_CHECK(cpu__dnnl_point(&t->b_u, b + t->part_c0), "set_data_handle");
    dnnl_exec_arg_t args[5] = {
        {DNNL_ARG_SRC, t->src.m},  {DNNL_ARG_WEIGHTS, t->w.m},
        {DNNL_ARG_DST, t->dst.m},  {DNNL_ARG_SCRATCHPAD, t->scratch.m},
        {DNNL_ARG_BIAS, t->b_u.m},
    };
    CPU__DNNL_CHECK(cpu_dnnl.dnnl_primitive_execute(t->conv, t->stream, t->has_b ? 5 : 4, args),
                    "the convolution");
    CPU__DNNL_CHECK(cpu_dnnl.dnnl_stream_wait(t->stream), "stream_wait");
    goto out;

fail:
    t->w_ready = 0;
out:
    cpu__dnnl_alone_end(team);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Matmul with constant weights
 * ------------------------------------------------------------------------------------------- */

struct cpu__dnnl_mm_cache {
    /* What the primitive was built for. */
    int built;
    cpu__dnnl_mm_params_t p;
    int threads; /* the OpenMP thread count it was built under */
    dnnl_primitive_t mm, r_w;
    dnnl_memory_desc_t w_user, w_md;
    int w_plain;
    /* The caller's A, W, bias and Y, ours for the weights (w_buf) and the scratchpad. */
    cpu__dnnl_mem_t a, w_u, w, bias, y, scratch;
    cpu__dnnl_buf_t w_buf, scratch_buf;
    const void *w_addr; /* the weights in w_buf are those at w_addr while w_ready */
    int w_ready;
    dnnl_stream_t stream;
    /* By column slices (cpu__dnnl_matmul_slices): the primitive above is for one slice of
     * p.n / slices columns; each slice has its weights packed at w_buf + s * w_slice_bytes and
     * a slot of its own. 0: not built by slices. */
    int64_t slices;
    size_t w_slice_bytes;
    cpu__dnnl_slot_t *slots; /* src is A, dst Y's columns; w and bias below */
    cpu__dnnl_mem_t *w_s, *bias_s;
    const float *a_at, *bias_at;
    float *y_at;
};

int32_t cpu__dnnl_mm_cache_create(cpu__dnnl_mm_cache_t **out_cache) {
    *out_cache = calloc(1, sizeof **out_cache);
    return *out_cache ? SES_DRV_OK : SES_DRV_OUT_OF_MEMORY;
}

/* Frees a matmul cache's slices: slot memory objects, scratchpads, streams. */
static void cpu__dnnl_mm_slices_free(cpu__dnnl_mm_cache_t *c) {
    for (int64_t i = 0; c->slots && i < c->slices; i++) {
        cpu__dnnl_slot_free(&c->slots[i]);
        cpu__dnnl_mem_destroy(&c->w_s[i]);
        cpu__dnnl_mem_destroy(&c->bias_s[i]);
    }
    free(c->slots);
    free(c->w_s);
    free(c->bias_s);
    c->slots = NULL;
    c->w_s = c->bias_s = NULL;
    c->slices = 0;
}

static void cpu__dnnl_mm_unbuild(cpu__dnnl_mm_cache_t *c) {
    if (!cpu_dnnl.loaded)
        return;
    cpu__dnnl_mm_slices_free(c);
    cpu__dnnl_prim_destroy(&c->mm);
    cpu__dnnl_prim_destroy(&c->r_w);
    cpu__dnnl_mem_t *mems[] = {&c->a, &c->w_u, &c->w, &c->bias, &c->y, &c->scratch};
    cpu__dnnl_forget(mems, sizeof mems / sizeof mems[0], &c->built, &c->w_ready, &c->w_addr);
}

void cpu__dnnl_mm_cache_destroy(cpu__dnnl_mm_cache_t *cache) {
    if (!cache)
        return;
    cpu__dnnl_mm_unbuild(cache);
    cpu__dnnl_stream_free(cache->stream);
    free(cache->w_buf.data);
    free(cache->scratch_buf.data);
    free(cache);
}

/*
 * The matmul of @p p: A [M, K] (stored [K, M] when transposed), weights [K, N] (stored [N, K]
 * when transposed) in the layout oneDNN prefers ("any": blocked for its brgemm kernels), Y
 * [M, N] row-major; post-ops: alpha as a linear eltwise, the sum of what Y holds (C) scaled by
 * beta, the activation. The bias argument only where alpha is 1, since oneDNN adds it before
 * any post-op.
 */
static int32_t cpu__dnnl_mm_build(cpu__dnnl_mm_cache_t *c, const cpu__dnnl_mm_params_t *p,
                                  int64_t slices, char *why, size_t why_size) {
    const cpu__dnnl_lib_t *l = &cpu_dnnl;
    dnnl_memory_desc_t a_md, w_any, y_md, bias_md;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    /* By slices: each primitive run covers ns of Y's n columns, Y read with its full rows. */
    const int64_t ns = slices > 1 ? p->n / slices : p->n;
    dnnl_dims_t ad = {p->m, p->k}, wd = {p->k, ns}, yd = {p->m, ns}, bd = {1, ns};
    dnnl_dims_t y_strides = {p->n, 1}, w_strides = {p->trans_b ? 1 : p->n, p->trans_b ? p->k : 1};
    int32_t st = SES_DRV_OK;
    dnnl_status_t s;

    cpu__dnnl_mm_unbuild(c);
    CPU__DNNL_CHECK(
        l->dnnl_memory_desc_init_by_tag(&a_md, 2, ad, dnnl_f32, p->trans_a ? dnnl_ba : dnnl_ab),
        "A's descriptor");
    CPU__DNNL_CHECK(l->dnnl_memory_desc_init_by_strides(&c->w_user, 2, wd, dnnl_f32, w_strides),
                    "the weights' descriptor");
    CPU__DNNL_CHECK(l->dnnl_memory_desc_init_by_tag(&w_any, 2, wd, dnnl_f32, dnnl_format_tag_any),
                    "the weights' descriptor");
    CPU__DNNL_CHECK(l->dnnl_memory_desc_init_by_strides(&y_md, 2, yd, dnnl_f32, y_strides),
                    "Y's descriptor");
    CPU__DNNL_CHECK(l->dnnl_memory_desc_init_by_tag(&bias_md, 2, bd, dnnl_f32, dnnl_ab),
                    "the bias's descriptor");
    CPU__DNNL_CHECK(l->dnnl_primitive_attr_create(&attr), "primitive_attr_create");
    CPU__DNNL_CHECK(l->dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
                    "set_scratchpad_mode");
    CPU__DNNL_CHECK(l->dnnl_post_ops_create(&po), "post_ops_create");
    if (p->alpha != 1.0f)
        CPU__DNNL_CHECK(
            l->dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, p->alpha, 0.0f),
            "the alpha post-op");
    if (p->sum)
        CPU__DNNL_CHECK(l->dnnl_post_ops_append_sum(po, p->beta), "the sum post-op");
    if ((st = cpu__dnnl_append_act(po, p->activation, p->act_alpha, p->act_beta, why, why_size)) !=
        SES_DRV_OK)
        goto fail;
    CPU__DNNL_CHECK(l->dnnl_primitive_attr_set_post_ops(attr, po), "set_post_ops");
    s = l->dnnl_matmul_desc_init(&md, &a_md, &w_any, p->bias ? &bias_md : NULL, &y_md);
    if (s != dnnl_success) {
        snprintf(why, why_size, "oneDNN refuses the matmul's parameters (status %d)", (int)s);
        st = SES_DRV_UNIMPLEMENTED;
        goto fail;
    }
    s = l->dnnl_primitive_desc_create(&pd, &md, attr, l->engine, NULL);
    if (s == dnnl_unimplemented) {
        snprintf(why, why_size, "oneDNN has no matmul for these parameters");
        st = SES_DRV_UNIMPLEMENTED;
        pd = NULL;
        goto fail;
    }
    CPU__DNNL_CHECK(s, "creating the matmul's primitive descriptor");
    c->w_md = *l->dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t scratch_md =
        *l->dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    CPU__DNNL_CHECK(l->dnnl_primitive_create(&c->mm, pd), "creating the matmul");
    c->w_plain = l->dnnl_memory_desc_equal(&c->w_md, &c->w_user);
    CPU__DNNL_CHECK(cpu__dnnl_reorder(&c->w_user, &c->w_md, &c->r_w), "the weights' reorder");
    const size_t scratch_size = l->dnnl_memory_desc_get_size(&scratch_md);
    c->w_slice_bytes = (l->dnnl_memory_desc_get_size(&c->w_md) + 63) & ~(size_t)63;
    if ((!c->w_plain &&
         !cpu__dnnl_grow(&c->w_buf, c->w_slice_bytes * (size_t)(slices > 1 ? slices : 1))) ||
        (scratch_size && !cpu__dnnl_grow(&c->scratch_buf, scratch_size))) {
        snprintf(why, why_size, "out of memory for oneDNN's blocked weights");
        st = SES_DRV_OUT_OF_MEMORY;
        goto fail;
    }
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->a.m, &a_md, l->engine, DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->w_u.m, &c->w_user, l->engine, DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->w.m, &c->w_md, l->engine,
                                          c->w_plain ? DNNL_MEMORY_NONE : c->w_buf.data),
                    "memory_create");
    c->w.at = c->w_plain ? NULL : c->w_buf.data;
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->bias.m, &bias_md, l->engine, DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->y.m, &y_md, l->engine, DNNL_MEMORY_NONE),
                    "memory_create");
    CPU__DNNL_CHECK(l->dnnl_memory_create(&c->scratch.m, &scratch_md, l->engine,
                                          scratch_size ? c->scratch_buf.data : DNNL_MEMORY_NONE),
                    "memory_create");
    if (!c->stream)
        CPU__DNNL_CHECK(l->dnnl_stream_create(&c->stream, l->engine, dnnl_stream_default_flags),
                        "stream_create");
    if (slices > 1) {
        /* A slot per slice: its A and Y, its packed weights, its bias, scratchpad, stream. */
        c->slots = calloc((size_t)slices, sizeof *c->slots);
        c->w_s = calloc((size_t)slices, sizeof *c->w_s);
        c->bias_s = calloc((size_t)slices, sizeof *c->bias_s);
        if (!c->slots || !c->w_s || !c->bias_s) {
            snprintf(why, why_size, "out of memory for the matmul's slices");
            st = SES_DRV_OUT_OF_MEMORY;
            goto fail;
        }
        c->slices = slices;
        for (int64_t i = 0; i < slices; i++) {
            if ((st = cpu__dnnl_slot_make(&c->slots[i], &a_md, &y_md, &scratch_md, why,
                                          why_size)) != SES_DRV_OK)
                goto fail;
            void *w_at = c->w_plain
                             ? DNNL_MEMORY_NONE
                             : (void *)((char *)c->w_buf.data + (size_t)i * c->w_slice_bytes);
            CPU__DNNL_CHECK(l->dnnl_memory_create(&c->w_s[i].m, &c->w_md, l->engine, w_at),
                            "memory_create");
            c->w_s[i].at = c->w_plain ? NULL : w_at;
            CPU__DNNL_CHECK(
                l->dnnl_memory_create(&c->bias_s[i].m, &bias_md, l->engine, DNNL_MEMORY_NONE),
                "memory_create");
        }
    }
    memcpy(&c->p, p, sizeof *p); /* padding too: compared with memcmp */
    c->built = 1;
    cpu__dnnl_build_free(pd, po, attr);
    return SES_DRV_OK;

fail:
    cpu__dnnl_build_free(pd, po, attr);
    cpu__dnnl_mm_unbuild(c);
    return st;
}

int32_t cpu__dnnl_matmul(cpu__dnnl_mm_cache_t *c, const cpu__dnnl_mm_params_t *p, const float *a,
                         const float *w, const float *bias, float *y, uint32_t threads,
                         uint32_t flags, char *why, size_t why_size) {
    const cpu__dnnl_lib_t *l = &cpu_dnnl;
    int32_t st;

    if (!l->loaded)
        return cpu__dnnl_load(why, why_size);
    if (!c || !p || !a || !w || !y || (p->bias && !bias)) {
        snprintf(why, why_size, "cpu__dnnl_matmul: NULL argument");
        return SES_DRV_INVALID_ARGUMENT;
    }
    if (p->m < 1 || p->n < 1 || p->k < 1) {
        snprintf(why, why_size, "oneDNN's matmul takes positive sizes");
        return SES_DRV_UNIMPLEMENTED;
    }
    /* As for the convolution: the OpenMP thread count must hold when the primitive is made. */
    const int nthr = threads ? (int)threads : 1;
    if (l->omp_set_num_threads)
        l->omp_set_num_threads(nthr);
    if ((!c->built || memcmp(&c->p, p, sizeof *p) != 0 || c->threads != nthr || c->slices) &&
        (st = cpu__dnnl_mm_build(c, p, 0, why, why_size)) != SES_DRV_OK)
        return st;
    c->threads = nthr;
    CPU__DNNL_CHECK(cpu__dnnl_point(&c->a, a), "set_data_handle");
    if (c->w_plain) {
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->w, w), "set_data_handle");
    } else if (!(flags & CPU__DNNL_W_CONSTANT) || !c->w_ready || c->w_addr != (const void *)w) {
        c->w_ready = 0;
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->w_u, w), "set_data_handle");
        CPU__DNNL_CHECK(cpu__dnnl_run(c->r_w, c->stream, c->w_u.m, c->w.m),
                        "reordering the weights");
        c->w_addr = w;
        c->w_ready = (flags & CPU__DNNL_W_CONSTANT) != 0;
    }
    CPU__DNNL_CHECK(cpu__dnnl_point(&c->y, y), "set_data_handle");
    if (p->bias)
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->bias, bias), "set_data_handle");
    dnnl_exec_arg_t args[5] = {
        {DNNL_ARG_SRC, c->a.m},     {DNNL_ARG_WEIGHTS, c->w.m},
        {DNNL_ARG_DST, c->y.m},     {DNNL_ARG_SCRATCHPAD, c->scratch.m},
        {DNNL_ARG_BIAS, c->bias.m},
    };
    CPU__DNNL_CHECK(l->dnnl_primitive_execute(c->mm, c->stream, p->bias ? 5 : 4, args),
                    "the matmul");
    CPU__DNNL_CHECK(l->dnnl_stream_wait(c->stream), "stream_wait");
    return SES_DRV_OK;

fail:
    c->w_ready = 0;
    return st;
}

int32_t cpu__dnnl_matmul_slices(cpu__dnnl_mm_cache_t *c, const cpu__dnnl_mm_params_t *p,
                                const float *a, const float *w, const float *bias, float *y,
                                int64_t slices, uint32_t flags, char *why, size_t why_size) {
    const cpu__dnnl_lib_t *l = &cpu_dnnl;
    int32_t st = SES_DRV_OK;

    if (!l->loaded)
        return cpu__dnnl_load(why, why_size);
    if (!c || !p || !a || !w || !y || (p->bias && !bias) || slices < 2 || p->n % slices != 0) {
        snprintf(why, why_size,
                 "cpu__dnnl_matmul_slices: NULL argument or %" PRId64 " slices of %" PRId64
                 " columns",
                 slices, p ? p->n : 0);
        return SES_DRV_INVALID_ARGUMENT;
    }
    if (p->m < 1 || p->n < 1 || p->k < 1) {
        snprintf(why, why_size, "oneDNN's matmul takes positive sizes");
        return SES_DRV_UNIMPLEMENTED;
    }
    /* Made for one OpenMP thread: a slice runs on the thread that calls it. */
    const int team = cpu__dnnl_alone_begin();
    if (!c->built || memcmp(&c->p, p, sizeof *p) != 0 || c->threads != 1 || c->slices != slices) {
        if ((st = cpu__dnnl_mm_build(c, p, slices, why, why_size)) != SES_DRV_OK)
            goto out;
        c->threads = 1;
    }
    const int64_t ns = p->n / slices;
    if (!(flags & CPU__DNNL_W_CONSTANT) || !c->w_ready || c->w_addr != (const void *)w) {
        c->w_ready = 0;
        for (int64_t i = 0; i < slices; i++) {
            /* Slice i of W: columns [i * ns, (i + 1) * ns), rows of n (or of k transposed). */
            const float *wi = w + (p->trans_b ? i * ns * p->k : i * ns);
            if (c->w_plain) {
                if (cpu__dnnl_point(&c->w_s[i], wi) != dnnl_success)
                    goto handle;
                continue;
            }
            if (cpu__dnnl_point(&c->w_u, wi) != dnnl_success ||
                cpu__dnnl_run(c->r_w, c->stream, c->w_u.m, c->w_s[i].m) != dnnl_success ||
                l->dnnl_stream_wait(c->stream) != dnnl_success) {
                snprintf(why, why_size, "oneDNN: reordering the weights' slice %" PRId64 " failed",
                         i);
                st = SES_DRV_INTERNAL;
                goto out;
            }
        }
        c->w_addr = w;
        c->w_ready = (flags & CPU__DNNL_W_CONSTANT) != 0;
    }
    c->a_at = a;
    c->bias_at = bias;
    c->y_at = y;
    goto out;
handle:
    snprintf(why, why_size, "oneDNN: set_data_handle failed");
    st = SES_DRV_INTERNAL;
out:
    cpu__dnnl_alone_end(team);
    return st;
}

int32_t cpu__dnnl_matmul_slice(cpu__dnnl_mm_cache_t *c, int64_t slice, char *why, size_t why_size) {
    int32_t st = SES_DRV_OK;

    if (!c || !c->built || slice < 0 || slice >= c->slices || !c->y_at) {
        snprintf(why, why_size, "cpu__dnnl_matmul_slice: no slice %" PRId64 " prepared", slice);
        return SES_DRV_INVALID_ARGUMENT;
    }
    const int64_t ns = c->p.n / c->slices;
    cpu__dnnl_slot_t *t = &c->slots[slice];
    CPU__DNNL_CHECK(cpu__dnnl_point(&t->src, c->a_at), "set_data_handle");
    CPU__DNNL_CHECK(cpu__dnnl_point(&t->dst, c->y_at + slice * ns), "set_data_handle");
    if (c->p.bias)
        CPU__DNNL_CHECK(cpu__dnnl_point(&c->bias_s[slice], c->bias_at + slice * ns),
                        "set_data_handle");
    dnnl_exec_arg_t args[5] = {
        {DNNL_ARG_SRC, t->src.m},
        {DNNL_ARG_WEIGHTS, c->w_s[slice].m},
        {DNNL_ARG_DST, t->dst.m},
        {DNNL_ARG_SCRATCHPAD, t->scratch.m},
        {DNNL_ARG_BIAS, c->bias_s[slice].m},
    };
    CPU__DNNL_CHECK(cpu__dnnl_run_alone(c->mm, t->stream, c->p.bias ? 5 : 4, args), "the matmul");
    return SES_DRV_OK;

fail:
    return st;
}

#endif /* SES_CPU_HAVE_DNNL */
