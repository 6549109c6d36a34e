/*
 * Convolution through oneDNN (Intel's DNNL), loaded at run time: the CPU driver's fast f32 Conv.
 *
 * Self-contained: it needs only this header, <session/driver.h> for the status codes, and the
 * driver's own cpu_dnnl.c. Nothing of oneDNN's headers leaks out, so callers build whether or
 * not oneDNN's headers were there (without them every call answers SES_DRV_UNAVAILABLE).
 *
 * Usage, for a kernel with per-node state:
 *
 *     create:  cpu__dnnl_conv_cache_create(&state->dnnl)      (cheap: builds nothing yet)
 *     compute: cpu__dnnl_conv(state->dnnl, &params, x, w, b, z, y, CPU__DNNL_ACT_RELU, 0, 0,
 *                             threads, flags, why, sizeof why)
 *     destroy: cpu__dnnl_conv_cache_destroy(state->dnnl)
 *
 * The first compute of a shape builds the oneDNN primitive (milliseconds) and the reorders
 * between the caller's dense layouts and the blocked ones oneDNN chose; later computes of the
 * same parameters reuse them. A compute with other parameters (shapes, activation, whether b or z
 * are given) builds again.
 */
#ifndef SES_CPU_DNNL_H
#define SES_CPU_DNNL_H

#include <session/driver.h>
#include <stddef.h>
#include <stdint.h>

/** The most spatial dims oneDNN's convolution takes (1-D, 2-D, 3-D). */
#define CPU__DNNL_MAX_SPATIAL 3

/**
 * The activation applied after the sum: Y = act(conv(X, W) + B + Z), ONNX Runtime's FusedConv.
 * Values as ORT's activation names: alpha and beta of cpu__dnnl_conv say the parameters.
 */
enum cpu__dnnl_activation {
    CPU__DNNL_ACT_NONE = 0,   /* identity; alpha, beta ignored */
    CPU__DNNL_ACT_RELU,       /* max(x, 0) */
    CPU__DNNL_ACT_LEAKY_RELU, /* x > 0 ? x : alpha * x */
    CPU__DNNL_ACT_SIGMOID,    /* 1 / (1 + exp(-x)) */
    CPU__DNNL_ACT_TANH,       /* tanh(x) */
    CPU__DNNL_ACT_CLIP,       /* min(max(x, alpha), beta): alpha is the min, beta the max */
};

/** Flags of cpu__dnnl_conv. */
#define CPU__DNNL_W_CONSTANT                                            \
    1u /* w holds the same bytes at this address for every call on this \
          cache (the host's constant_inputs bit, DRV-85): its reordered \
          copy is kept and reused while the address stays the same */
/* x is held channel-blocked by 16 (oneDNN's nChw16c, aBcd16b in 2-D): [batch, in_channels / 16,
 * in..., 16], in_channels a multiple of 16. Pointed at directly where oneDNN takes that layout. */
#define CPU__DNNL_X_BLOCKED 2u
/* y and z are held channel-blocked by 16 likewise: [batch, out_channels / 16, out..., 16],
 * out_channels a multiple of 16 (the NchwcConv of the NCHWc16 layout, plugins/cpu/cpu_nchwc.c). */
#define CPU__DNNL_YZ_BLOCKED 4u

/* Try Winograd's algorithm first (oneDNN's jit_wino kernels: 2-D 3x3 filters, stride 1, no
 * dilation, ungrouped): kept only where oneDNN reads X and writes Y in the caller's layouts,
 * else the direct convolution as without the flag. */
#define CPU__DNNL_WINOGRAD 8u
/**
 * One convolution's parameters, in ONNX's terms. X is [batch, in_channels, in...], W is
 * [out_channels, in_channels / group, kernel...], B [out_channels], Z and Y
 * [batch, out_channels, out...], all dense, row-major f32. Dilations count as in ONNX (1 is a
 * dense kernel); pads are added before (begin) and after (end) each spatial dim.
 */
typedef struct cpu__dnnl_conv_params {
    uint32_t spatial; /* 1 to CPU__DNNL_MAX_SPATIAL */
    int64_t batch, in_channels, out_channels, group;
    int64_t in[CPU__DNNL_MAX_SPATIAL], out[CPU__DNNL_MAX_SPATIAL];
    int64_t kernel[CPU__DNNL_MAX_SPATIAL], strides[CPU__DNNL_MAX_SPATIAL];
    int64_t dilations[CPU__DNNL_MAX_SPATIAL];
    int64_t pads_begin[CPU__DNNL_MAX_SPATIAL], pads_end[CPU__DNNL_MAX_SPATIAL];
} cpu__dnnl_conv_params_t;

/** The per-node state: the primitives of the last parameters, scratch buffers, the weights. */
typedef struct cpu__dnnl_conv_cache cpu__dnnl_conv_cache_t;

/**
 * Loads oneDNN once per process (later calls only answer): dlopen("libdnnl.so.2"), its entry
 * points, a CPU engine. Returns SES_DRV_OK, or SES_DRV_UNAVAILABLE with the reason in @p why
 * (built without oneDNN's headers, library not found, an entry missing); the answer is the same
 * for the life of the process. Unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT, the spin
 * count is 3000 while oneDNN's OpenMP runtime loads (measured in cpu_dnnl.c). The driver calls it at open unless
 * driver.cpu.conv is im2col. Thread-safe.
 */
int32_t cpu__dnnl_load(char *why, size_t why_size);

/**
 * "onednn 2.6.3 (avx512_core_bf16)": the version and the ISA oneDNN dispatches to, once loaded;
 * "" before. The string lives for the process. Thread-safe after cpu__dnnl_load.
 */
const char *cpu__dnnl_describe(void);

/**
 * The dlopen handle of the oneDNN cpu__dnnl_load loaded (dlsym on it also finds its OpenMP
 * runtime's functions), for other parts of the driver that call into oneDNN (cpu_gemm.c's
 * sgemm); NULL when it is not loaded. Never closed.
 */
void *cpu__dnnl_handle(void);

/**
 * Non-zero when oneDNN is loaded and dispatches to AVX-512 (avx512_core or above), where blocks
 * of 16 channels are its native layout: what the NCHWc16 ops (NchwcConv) ask for. On AVX2 its
 * kernels block by 8, and a 16-blocked tensor would be reordered at every convolution.
 */
int cpu__dnnl_native_16c(void);

/**
 * Non-zero when oneDNN's convolution takes these parameters: 1 to 3 spatial dims, positive
 * sizes, channels divisible by group. Cheap; loads nothing.
 */
int cpu__dnnl_conv_supported(const cpu__dnnl_conv_params_t *p);

/**
 * Makes an empty cache in *@p out_cache: SES_DRV_OK or SES_DRV_OUT_OF_MEMORY (*out_cache NULL).
 * Builds nothing, so it costs nothing for nodes that never run. Thread-safe.
 */
int32_t cpu__dnnl_conv_cache_create(cpu__dnnl_conv_cache_t **out_cache);

/** Frees a cache and everything it built. Accepts NULL. */
void cpu__dnnl_conv_cache_destroy(cpu__dnnl_conv_cache_t *cache);

/**
 * Y = act(conv(X, W) + B + Z) with oneDNN, on at most @p threads threads (OpenMP's, not the
 * driver's pool: oneDNN brings its own). @p b and @p z may be NULL (no bias, no sum); @p z may
 * be @p y itself. @p activation is an enum cpu__dnnl_activation, @p alpha and @p beta its
 * parameters. @p flags: CPU__DNNL_W_CONSTANT, CPU__DNNL_X_BLOCKED, CPU__DNNL_YZ_BLOCKED or 0
 * (the blocked layouts are aBc16b, aBcd16b or aBcde16b by the spatial rank; the channels they
 * block must be multiples of 16). Call
 * cpu__dnnl_load first.
 *
 * Returns SES_DRV_OK; SES_DRV_UNAVAILABLE when oneDNN is not loaded; SES_DRV_UNIMPLEMENTED when
 * oneDNN has no implementation for these parameters (the caller may fall back to another
 * path); SES_DRV_INVALID_ARGUMENT for parameters that do not describe a convolution;
 * SES_DRV_OUT_OF_MEMORY; SES_DRV_INTERNAL when a oneDNN call fails. On failure @p why says what
 * (without a node name: the caller adds it) and Y may be partly written.
 * Thread-safety: calls on one cache must not overlap (the ABI's per-node state rule); calls on
 * different caches may.
 */
int32_t cpu__dnnl_conv(cpu__dnnl_conv_cache_t *cache, const cpu__dnnl_conv_params_t *p,
                       const float *x, const float *w, const float *b, const float *z, float *y,
                       int activation, float alpha, float beta, uint32_t threads, uint32_t flags,
                       char *why, size_t why_size);

/**
 * A convolution run by slices of images on the caller's threads (no OpenMP team): prepare once
 * per launch on the calling thread, then each thread slot runs slices with
 * cpu__dnnl_conv_slice, concurrently with the other slots.
 *
 * cpu__dnnl_conv_slices builds (or keeps) the primitive for @p p, whose batch is the images of
 * ONE slice, made for one OpenMP thread, and @p n_slots sets of memory objects, scratchpads
 * and streams; readies the weights @p w (kept across launches as cpu__dnnl_conv keeps them,
 * per @p flags) and the bias @p b (may be NULL). @p has_z: the primitive adds what Y holds
 * (the sum post-op), so the caller copies Z's slice into Y's first. The layouts of X and Y
 * must be the primitive's own (a slice is read and written where it is): otherwise
 * SES_DRV_UNIMPLEMENTED, and the caller takes cpu__dnnl_conv. Returns as cpu__dnnl_conv does.
 * The calling thread's OpenMP count is put back before it returns.
 *
 * cpu__dnnl_conv_slice runs slot @p slot (< n_slots) on the slice at @p x (its first image)
 * into @p y. Two calls on one slot must not overlap; calls on different slots may.
 */
int32_t cpu__dnnl_conv_slices(cpu__dnnl_conv_cache_t *cache, const cpu__dnnl_conv_params_t *p,
                              const float *w, const float *b, int has_z, int activation,
                              float alpha, float beta, uint32_t n_slots, uint32_t flags, char *why,
                              size_t why_size);
int32_t cpu__dnnl_conv_slice(cpu__dnnl_conv_cache_t *cache, uint32_t slot, const float *x, float *y,
                             char *why, size_t why_size);

/**
 * The first of @p channels output channels in part @p k of @p n_parts (@p channels when k is
 * n_parts): whole blocks of @p block channels, the parts as even as they can be (their sizes
 * differ by one block at most).
 */
static inline int64_t cpu__dnnl_part_first(int64_t channels, int64_t block, uint32_t n_parts,
                                           uint32_t k) {
    return block * ((channels / block) * (int64_t)k / (int64_t)n_parts);
}

/**
 * A convolution run by slices of its output channels on the caller's threads (no OpenMP team),
 * for a batch too small for slices of images: prepare once per launch on the calling thread,
 * then each part runs with cpu__dnnl_conv_part, concurrently with the other parts.
 *
 * cpu__dnnl_conv_parts builds (or keeps) one primitive per part, part k being the output
 * channels [cpu__dnnl_part_first(k), cpu__dnnl_part_first(k + 1)) of @p p for one image, made
 * for one OpenMP thread, each with its own weights, scratchpad and stream; @p n_parts at most
 * the blocks of channels (16 with CPU__DNNL_YZ_BLOCKED, else 1). Ungrouped convolutions only
 * (p->group 1): the weights of a part are then a run of rows of the plain
 * [out_channels, in_channels, kernel...] W.
 * @p has_b, @p has_z, @p activation, @p alpha, @p beta as cpu__dnnl_conv_slices. The layouts of
 * X and Y must be the primitives' own: otherwise SES_DRV_UNIMPLEMENTED, and the caller takes
 * cpu__dnnl_conv (the refusal is kept with the parts: asking again costs no build). Returns
 * as cpu__dnnl_conv does; the calling thread's OpenMP count is put back.
 *
 * cpu__dnnl_conv_part runs part @p part (< n_parts) for one image: @p x that image's whole X,
 * @p w and @p b the whole W and B (B may be NULL when has_b was 0; the part reads its own rows),
 * @p y where the part's channels of that image go (as many channels as the part has, then
 * out..., holding Z's when has_z). The weights are reordered into the part's layout on the calling
 * thread at its first call, or at every call unless @p flags has CPU__DNNL_W_CONSTANT. Two calls on
 * one part must not overlap; calls on different parts may.
 */
int32_t cpu__dnnl_conv_parts(cpu__dnnl_conv_cache_t *cache, const cpu__dnnl_conv_params_t *p,
                             uint32_t n_parts, int has_b, int has_z, int activation, float alpha,
                             float beta, uint32_t flags, char *why, size_t why_size);
int32_t cpu__dnnl_conv_part(cpu__dnnl_conv_cache_t *cache, uint32_t part, const float *x,
                            const float *w, const float *b, float *y, uint32_t flags, char *why,
                            size_t why_size);
/**
 * One matmul Y = act(alpha * op(A) * op(W) + bias + beta * Y_before), all f32 row-major: A is
 * [m, k] ([k, m] when trans_a), W [k, n] ([n, k] when trans_b), bias a row of n added to every
 * row, Y [m, n]. Compared whole (memcmp): zero the struct before filling it.
 */
typedef struct cpu__dnnl_mm_params {
    int64_t m, n, k;
    int32_t trans_a, trans_b;
    int32_t bias;       /* non-zero: the bias argument is given (only with alpha 1) */
    int32_t sum;        /* non-zero: Y holds C when called, added times beta (a sum post-op) */
    float alpha, beta;  /* the product's scale; the scale of the sum */
    int32_t activation; /* enum cpu__dnnl_activation, after everything else */
    float act_alpha, act_beta;
} cpu__dnnl_mm_params_t;

/** The per-node state of a matmul: its primitive, the reordered constant weights. */
typedef struct cpu__dnnl_mm_cache cpu__dnnl_mm_cache_t;

/** Makes an empty matmul cache (builds nothing): SES_DRV_OK or SES_DRV_OUT_OF_MEMORY. */
int32_t cpu__dnnl_mm_cache_create(cpu__dnnl_mm_cache_t **out_cache);

/** Frees a matmul cache and everything it built. Accepts NULL. */
void cpu__dnnl_mm_cache_destroy(cpu__dnnl_mm_cache_t *cache);

/**
 * Y as cpu__dnnl_mm_params_t says, with oneDNN's matmul primitive (its brgemm kernels), made at
 * the first call of these parameters and thread count and kept; the weights are reordered into
 * the layout it prefers at every call, or once while @p w keeps its address when @p flags has
 * CPU__DNNL_W_CONSTANT. On at most @p threads OpenMP threads. Returns as cpu__dnnl_conv does
 * (SES_DRV_UNIMPLEMENTED: oneDNN has no matmul for this; the caller takes another path).
 * Calls on one cache must not overlap.
 */
int32_t cpu__dnnl_matmul(cpu__dnnl_mm_cache_t *cache, const cpu__dnnl_mm_params_t *p,
                         const float *a, const float *w, const float *bias, float *y,
                         uint32_t threads, uint32_t flags, char *why, size_t why_size);

/**
 * The matmul of @p p by column slices on the caller's threads (no OpenMP team): Y's n columns
 * cut into @p slices equal slices (n % slices == 0), each run by cpu__dnnl_matmul_slice with a
 * primitive made for one OpenMP thread, its own packed weights (kept across calls while
 * @p flags has CPU__DNNL_W_CONSTANT and @p w keeps its address), bias slice, scratchpad and
 * stream, reading all of A and writing its columns of Y. cpu__dnnl_matmul_slices prepares on
 * the calling thread (builds, packs, records @p a, @p bias and @p y); then the slices run,
 * concurrently, each once. Returns as cpu__dnnl_matmul; the calling thread's OpenMP count is
 * put back.
 */
int32_t cpu__dnnl_matmul_slices(cpu__dnnl_mm_cache_t *cache, const cpu__dnnl_mm_params_t *p,
                                const float *a, const float *w, const float *bias, float *y,
                                int64_t slices, uint32_t flags, char *why, size_t why_size);
int32_t cpu__dnnl_matmul_slice(cpu__dnnl_mm_cache_t *cache, int64_t slice, char *why,
                               size_t why_size);

#endif /* SES_CPU_DNNL_H */
