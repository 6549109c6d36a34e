/*
 * Internal declarations shared by the CPU driver's source files. Nothing here is exported: the
 * module is built with hidden visibility and exports only ses_drv_negotiate.
 *
 * Internal non-static names use the `cpu__` prefix.
 *
 * How a kernel runs: every entry of the kernel table (cpu_kernels.c) has a static description,
 * a cpu__spec_t (op, signature, dtypes, the family's body function). Its compute entry hands the
 * launch and that spec to cpu__run (cpu_launch.c), which checks everything the host passed
 * against the spec once (struct sizes, counts, dtypes, dims, byte ranges, alignment) and builds
 * a cpu__call_t: the node, and a typed view of each argument. The body (cpu_elementwise.c,
 * cpu_matmul.c, cpu_reduce.c, cpu_shape.c) then checks the shapes its op needs, reads its
 * normalized attributes and computes, splitting large work over the device's thread pool
 * (cpu_threadpool.c).
 *
 * cpu__run checks a good launch in one pass of predicates that format nothing, and only when one
 * fails checks again step by step (cpu__run_checked) to say what is wrong, so that snprintf is
 * never on the path of a good launch.
 *
 * The training ops are general entries, of any number of inputs and outputs (none for the
 * optimizers, which write inputs in place): their compute is cpu__run_general, which checks the
 * launch the same way and runs the body (cpu_train.c) without per-node state. The CNN ops are
 * general entries too; Conv alone has a create, whose state (the host's constant-input bits,
 * oneDNN's cache) reaches its body as call->state.
 *
 * The elementwise entries also have a create: once per plan node, cpu__create checks the node
 * (counts, dtypes, dims) as a launch would and keeps what it found in a cpu__prep_t, with the
 * broadcasting walk and, for a small output, the loop to run. A launch of that node through
 * cpu__run_prepared compares its descriptors with the state and checks only its buffers (ranges,
 * alignment, overlap); one that differs in anything goes through cpu__run as if there were no
 * state.
 */
#ifndef SES_CPU_INTERNAL_H
#define SES_CPU_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <session/driver.h>
#include <session/driver_util.h>

#if defined(__GNUC__)
#define CPU__PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
/* A function only failing launches reach: kept out of line, so the hot path stays small. */
#define CPU__COLD __attribute__((cold, noinline))
/* A function kept out of its callers, whose hot path would otherwise carry its stack frame. */
#define CPU__NOINLINE __attribute__((noinline))
#else
#define CPU__PRINTF(fmt_index, first_arg)
#define CPU__COLD
#define CPU__NOINLINE
#endif

/*
 * Kernels chosen by the ISA at load time: GCC compiles a function so marked three times, for
 * x86-64-v4 (AVX-512 F/BW/CD/DQ/VL), x86-64-v3 (AVX2, FMA) and the baseline (SSE2), and the
 * dynamic loader binds the best one the CPU runs (an ifunc resolver reading cpuid). For the
 * vectorized loops: elementwise maps, broadcasting rows, fused activations. Results are the
 * same bits on every clone: -std=c11 keeps GCC from contracting a * b + c into an FMA, and no
 * loop is reassociated. Clang, another architecture, ThreadSanitizer (the clones' ifunc
 * resolvers run while the dynamic loader relocates the driver, where TSan takes cmocka's calloc
 * for a call inside a signal handler), or -DCPU__NO_ISA_CLONES: one baseline version.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(CPU__NO_ISA_CLONES)
#define CPU__ISA_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CPU__ISA_CLONES
#endif

/** Every allocation is aligned to a cache line, which also suits every SIMD width up to AVX-512. */
#define CPU__ALIGNMENT 64u

/**
 * Longest device name we keep: the model name from /proc/cpuinfo plus " (N threads)", then
 * "; gemm: ..." naming the GEMM library's kernels and "; conv: ..." the convolution path.
 */
#define CPU__NAME_MAX 768

/** How long the "gemm: ..." part of the device name may be. */
#define CPU__GEMM_DESC_MAX 256

/** The option that sizes each device's thread pool; unset or "0" means the online CPUs. */
#define CPU__THREADS_OPTION "driver.cpu.threads"

/**
 * The option that forces OpenBLAS's core type (its kernels), e.g. "Haswell"; unset means the
 * one the CPU's ISA calls for (cpu_gemm.c).
 */
#define CPU__GEMM_KERNELS_OPTION "driver.cpu.gemm_kernels"

/**
 * The option that picks the f32 GEMM library: "auto" (unset: oneDNN where it loads, else
 * OpenBLAS), "onednn" (an error where it cannot load) or "openblas" (cpu_gemm.c).
 */
#define CPU__GEMM_OPTION "driver.cpu.gemm"

/**
 * The option that chooses the f32 Conv path: "auto" (oneDNN where it loads, else im2col),
 * "dnnl" (oneDNN, and open fails when it cannot load) or "im2col" (the driver's own).
 */
#define CPU__CONV_OPTION "driver.cpu.conv"
/** How long the "conv: ..." part of the device name may be. */
#define CPU__CONV_DESC_MAX 160
/** The Conv paths option driver.cpu.conv chooses between. */
enum cpu__conv_mode {
    CPU__CONV_AUTO = 0,
    CPU__CONV_DNNL,
    CPU__CONV_IM2COL,
};
/**
 * The option that says how long, in microseconds, an idle pool worker watches for the next job
 * before it sleeps (cpu_threadpool.c): 0 sleeps at once; 50 suits machines whose cores are shared.
 */
#define CPU__SPIN_OPTION "driver.cpu.spin_us"
/* 1 ms: on the 16-core Xeon host of a lent GPU machine (a KVM guest, where a sleeping worker
 * wakes late) 50 us left the bench CNN at 16 threads 1.37x slower; see cpu_threadpool.c. */
#define CPU__SPIN_US_DEFAULT 1000
/* The spin time "auto" (the default) as cpu__pool_create's spin_us: CPU__SPIN_US_DEFAULT,
 * except while a kernel of the device runs on oneDNN's OpenMP team (cpu__pool_park_for). */
#define CPU__SPIN_AUTO UINT32_MAX
#define CPU__MAX_SPIN_US 100000

/**
 * The option that says whose threads run the pool's work: "own" (the default: the pool's own
 * workers) or "openmp" (OpenMP's team, libgomp.so.1, the one oneDNN's primitives run on, so that
 * one set of threads serves every kernel; the pool starts no worker then).
 */
#define CPU__POOL_OPTION "driver.cpu.pool"
#define CPU__WINOGRAD_OPTION "driver.cpu.winograd"
/**
 * The option that says how NchwcConv shares its work among the pool's threads
 * (cpu_conv_slices.c): "auto" (slices of images where the batch has one per thread, else slices
 * of output channels), "images" (slices of images only; other batches on oneDNN's OpenMP team)
 * or "off" (everything on oneDNN's team).
 */
#define CPU__CONV_SLICES_OPTION "driver.cpu.conv_slices"

/** What driver.cpu.conv_slices said. */
enum cpu__conv_slices {
    CPU__CONV_SLICES_AUTO = 0,
    CPU__CONV_SLICES_IMAGES,
    CPU__CONV_SLICES_OFF,
};
/* The choice when the option is not set: slices of images only, as measured in
 * cpu_conv_slices.c's header. */
#define CPU__CONV_SLICES_DEFAULT CPU__CONV_SLICES_IMAGES

/** The largest pool the option may ask for. */
#define CPU__MAX_THREADS 1024

/**
 * The largest rank a kernel that keeps per-dimension arrays accepts (broadcasting, Transpose,
 * Slice, reductions). Pure copies (Identity, Reshape, ...) take any rank.
 */
#define CPU__MAX_RANK 16

/** Work below this many element operations runs on the calling thread, without the pool. */
#define CPU__PARALLEL_MIN 32768u

/* ---------------------------------------------------------------------------------------------
 * Thread pool (cpu_threadpool.c)
 * ------------------------------------------------------------------------------------------- */

/** A fixed set of worker threads owned by one device. */
typedef struct cpu__pool cpu__pool_t;

/** A piece of parallel work: handles items [begin, end). Must not fail; errors are found first. */
typedef void (*cpu__task_fn)(void *ctx, uint64_t begin, uint64_t end);

/**
 * Starts a pool that runs work on @p n_threads threads in all: the caller of cpu__parallel_for
 * is one of them, so n_threads - 1 workers are started (none for 1). With @p openmp set, the work
 * runs on OpenMP's team instead (GOMP_parallel of libgomp.so.1) and no worker is started.
 * Returns 0, or the errno of the thread creation that failed (ENOENT: libgomp.so.1 or its
 * GOMP_parallel could not be loaded), with nothing left running; *out_pool is NULL then.
 */
int cpu__pool_create(uint32_t n_threads, uint32_t spin_us, int openmp, cpu__pool_t **out_pool);

/** Stops and joins the workers and frees the pool. No work may be in flight. Accepts NULL. */
void cpu__pool_destroy(cpu__pool_t *pool);

/** The threads the pool runs work on, the caller included: 1 for NULL. */
uint32_t cpu__pool_threads(const cpu__pool_t *pool);

/**
 * Sends the pool's spinning idle workers to sleep now: for a kernel about to run on another
 * runtime's threads (oneDNN's OpenMP team) on the same cores, which a worker spinning for the
 * pool's next job would slow. Accepts NULL; thread-safe.
 */
void cpu__pool_park(cpu__pool_t *pool);

/* A kernel state's mark as one that runs on OpenMP's team: the pool it counts in, or NULL. */
typedef struct cpu__team_user {
    cpu__pool_t *pool;
} cpu__team_user_t;

/**
 * cpu__pool_park, and counts @p user (once) among the pool's team users: while any is counted,
 * a pool whose spin is "auto" does not spin at all. Its workers' spin between the pool's jobs
 * takes the cores from the OpenMP team of the convolutions between them, whose threads then
 * wait for each other (squeezenet at batch 1 on the 16-core Xeon host: 4.8-6.8 ms with a spin
 * of 50 us, 2.7-2.8 ms with none), while a model whose kernels all run on the pool (an MLP)
 * needs it (0.06 ms against 0.16 without). Not thread-safe for one @p user: a kernel state's
 * launches never overlap.
 */
void cpu__pool_park_for(cpu__pool_t *pool, cpu__team_user_t *user);

/** Uncounts @p user (when its state is destroyed); accepts one never counted, and NULL. */
void cpu__team_user_release(cpu__team_user_t *user);

/** How long the pool's idle workers spin now, in ns (0 for NULL). */
uint64_t cpu__pool_spin_ns(const cpu__pool_t *pool);

/**
 * Runs @p fn over items [0, @p n_items), each costing about @p item_cost element operations,
 * and returns when all are done. Below CPU__PARALLEL_MIN operations in all, with a pool of one
 * thread, or when another thread's work holds the pool, it is one call fn(ctx, 0, n_items) on
 * the calling thread, with no synchronisation. Otherwise the items are cut into chunks that the
 * caller and the workers take in turn. Thread-safe: callers on several threads share the pool.
 */
void cpu__parallel_for(cpu__pool_t *pool, uint64_t n_items, uint64_t item_cost, cpu__task_fn fn,
                       void *ctx);

/* ---------------------------------------------------------------------------------------------
 * The GEMM library (cpu_gemm.c): OpenBLAS, loaded at the first open with kernels chosen by ISA
 * ------------------------------------------------------------------------------------------- */

/**
 * Loads OpenBLAS once per process (later calls only check), with the core type that option
 * driver.cpu.gemm_kernels forces, that OPENBLAS_CORETYPE names, or that cpuid calls for, and
 * writes "gemm: openblas 0.3.21, SkylakeX kernels (AVX-512; detected ...)" into @p out_desc.
 * Fails (message through the host) when the library cannot be loaded, or the forced core is
 * unknown, beyond the CPU, or not the one in use. Thread-safe.
 */
int32_t cpu__gemm_open(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx, char *out_desc,
                       size_t desc_size, int *out_onednn);

/**
 * Reads option driver.cpu.conv (its enum cpu__conv_mode into *@p out_mode) and, unless it says
 * im2col, loads oneDNN (cpu_dnnl.c); stores whether f32 Conv runs through oneDNN in *@p out_dnnl
 * and writes "conv: onednn 2.6.3
 * (avx512_core)" or "conv: im2col (...why...)" into @p out_desc. Fails for an unknown value
 * (SES_DRV_INVALID_ARGUMENT, naming the accepted ones) and for "dnnl" where oneDNN cannot load
 * (SES_DRV_UNAVAILABLE, saying why). Thread-safe.
 */
int32_t cpu__conv_open(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                       const ses_drv_options_t *options, uint32_t *out_dnnl, uint32_t *out_mode,
                       char *out_desc, size_t desc_size);
/**
 * Sizes OpenBLAS's threads to @p threads, the device pool's. OpenBLAS has one thread count per
 * process, so the device opened last sets it. Call only after a successful cpu__gemm_open.
 */
void cpu__gemm_set_threads(uint32_t threads);

/**
 * With @p on non-zero, makes every GEMM in the process run on its calling thread alone
 * (openblas_set_num_threads(1)); with @p on zero, undoes one such call, and the last undo gives
 * OpenBLAS back the count cpu__gemm_set_threads gave it. For kernels that run single-threaded
 * GEMMs on the pool's threads (Conv by images): OpenBLAS 0.3.21 has no per-call thread count,
 * only the process-wide one. The calls are counted, so kernels running concurrently (one device
 * called from several host threads, or two devices) may nest them; while any of them is inside,
 * every other GEMM of the process (another kernel's, another device's) is single-threaded too:
 * slower, never wrong. A device of another thread count does not get its own count back either:
 * the count restored is the process-wide one, the last device opened's. Thread-safe; call only
 * after a successful cpu__gemm_open, and pair every on with an off on the same thread.
 */
void cpu__gemm_single_threaded(int on);

/* ---------------------------------------------------------------------------------------------
 * Driver objects (cpu_driver.c)
 * ------------------------------------------------------------------------------------------- */

/**
 * One opened driver instance. The library may be opened several times in one process (one per
 * registry), so everything mutable lives here and not in globals. Read-only after open, hence
 * safe to share between threads.
 */
struct ses_drv_driver {
    const ses_drv_host_t *host;
    ses_drv_host_ctx_t *ctx;
    char device_name[CPU__NAME_MAX]; /* ses_drv_device_desc_t.name; lives until close */
    int gemm_onednn; /* f32 GEMMs go to oneDNN's sgemm on the pool (option driver.cpu.gemm) */
};

/**
 * One opened device. The CPU has a single device, but each open_device gives a new handle with
 * its own thread pool, created there and destroyed by close_device.
 */
struct ses_drv_device {
    struct ses_drv_driver *driver;
    cpu__pool_t *pool; /* never NULL once open; thread-safe */
    uint32_t conv_dnnl; /* non-zero: f32 Conv runs through oneDNN (driver.cpu.conv, cpu_dnnl.c) */
    uint32_t conv_mode; /* enum cpu__conv_mode: what driver.cpu.conv said */
    uint32_t winograd;  /* driver.cpu.winograd: NchwcConv's 3x3 stride-1 filters try Winograd's
                           algorithm (CPU__DNNL_WINOGRAD) */
    uint32_t conv_slices; /* enum cpu__conv_slices: driver.cpu.conv_slices */
};

/** What a ses_drv_buffer_t handle points at. */
typedef struct cpu__buffer {
    void *data;        /* 64-byte aligned when allocated here; any alignment when imported */
    uint64_t size;     /* bytes */
    uint32_t imported; /* non-zero: data belongs to the host and free must not release it */
    uint32_t reserved;
} cpu__buffer_t;

/** The handle's view of a buffer. The host only ever sees the opaque ses_drv_buffer_t. */
static inline cpu__buffer_t *cpu__buffer(ses_drv_buffer_t *buffer) {
    return (cpu__buffer_t *)(void *)buffer;
}

/**
 * Formats a message, attaches it through @p host->error, and returns @p code. When the host
 * table is NULL or too old to carry an error entry the message is dropped and only the code
 * is returned: a driver never prints.
 */
int32_t cpu__fail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx, int32_t code,
                  const char *format, ...) CPU__PRINTF(4, 5);

/**
 * Reads string option @p key into @p out ("" when it is not set): from @p options, the opening
 * session's (open_device_with_options, ABI 1.5), or NULL for the host's get_option. A value
 * longer than @p size is SES_DRV_INVALID_ARGUMENT with a message naming the option and
 * @p expected.
 */
int32_t cpu__read_option(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                         const ses_drv_options_t *options, const char *key, const char *expected,
                         char *out, size_t size);

/** cpu__fail with the host services of @p device's driver instance. */
int32_t cpu__device_fail(const ses_drv_device_t *device, int32_t code, const char *format, ...)
    CPU__PRINTF(3, 4);

/**
 * Checks that [offset, offset + bytes) lies inside @p buffer. @p what names the call and the
 * argument for the message ("copy_h2d: dst"). Returns SES_DRV_OK or SES_DRV_INVALID_ARGUMENT
 * with a message naming the offset, the byte count and the buffer's size.
 */
int32_t cpu__check_range(const ses_drv_device_t *device, const char *what,
                         const cpu__buffer_t *buffer, uint64_t offset, uint64_t bytes);

/* ---------------------------------------------------------------------------------------------
 * Dtypes (cpu_kernels.c)
 * ------------------------------------------------------------------------------------------- */

/** The short name of a dtype as used in kernel signatures ("f32"), or NULL when unknown. */
const char *cpu__dtype_name(uint32_t dtype);

/** A dtype's name for messages, never NULL. */
const char *cpu__dtype_label(uint32_t dtype);

/** The size in bytes of one element of @p dtype, or 0 when the dtype is unknown. */
static inline size_t cpu__dtype_size(uint32_t dtype) {
    return ses_drv_util_dtype_size(dtype);
}

/** The api entry get_kernels: the same static table for every device. */
int32_t cpu__get_kernels(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                         uint32_t *out_count, uint32_t *out_stride);

/* ---------------------------------------------------------------------------------------------
 * Launches (cpu_launch.c)
 * ------------------------------------------------------------------------------------------- */

/** Which op of a family a spec stands for; the family's body switches on it. */
enum cpu__op {
    CPU__OP_COPY, /* Identity, Reshape, Flatten, Squeeze, Unsqueeze */
    CPU__OP_ADD,
    CPU__OP_SUB,
    CPU__OP_MUL,
    CPU__OP_DIV,
    CPU__OP_POW,
    CPU__OP_EQUAL,
    CPU__OP_GREATER,
    CPU__OP_LESS,
    CPU__OP_WHERE,
    CPU__OP_NEG,
    CPU__OP_ABS,
    CPU__OP_EXP,
    CPU__OP_LOG,
    CPU__OP_SQRT,
    CPU__OP_RECIPROCAL,
    CPU__OP_RELU,
    CPU__OP_SIGMOID,
    CPU__OP_TANH,
    CPU__OP_SOFTPLUS,
    CPU__OP_ERF,
    CPU__OP_LEAKYRELU,
    CPU__OP_PRELU,
    CPU__OP_MIN,
    CPU__OP_MAX,
    CPU__OP_MOD,
    CPU__OP_AND,
    CPU__OP_OR,
    CPU__OP_XOR,
    CPU__OP_BITSHIFT,
    CPU__OP_NOT,
    CPU__OP_SIGN,
    CPU__OP_ISNAN,
    CPU__OP_ISINF,
    CPU__OP_ROUND,
    CPU__OP_FLOOR,
    CPU__OP_CEIL,
    CPU__OP_COS,
    CPU__OP_SIN,
    CPU__OP_TAN,
    CPU__OP_ACOS,
    CPU__OP_ASIN,
    CPU__OP_ATAN,
    CPU__OP_COSH,
    CPU__OP_SINH,
    CPU__OP_ASINH,
    CPU__OP_ACOSH,
    CPU__OP_ATANH,
    CPU__OP_CAST,
    CPU__OP_MATMUL,
    CPU__OP_GEMM,
    CPU__OP_REDUCESUM,
    CPU__OP_REDUCEMAX,
    CPU__OP_REDUCEMEAN,
    CPU__OP_SOFTMAX,
    CPU__OP_LOGSOFTMAX,
    CPU__OP_ARGMAX,
    CPU__OP_REDUCEMIN,
    CPU__OP_REDUCEPROD,
    CPU__OP_REDUCEL1,
    CPU__OP_REDUCEL2,
    CPU__OP_REDUCELOGSUM,
    CPU__OP_REDUCELOGSUMEXP,
    CPU__OP_REDUCESUMSQUARE,
    CPU__OP_ARGMIN,
    CPU__OP_TRANSPOSE,
    CPU__OP_CONCAT,
    CPU__OP_SLICE,
    CPU__OP_GATHER,
    CPU__OP_GATHERELEMENTS,
    CPU__OP_SCATTERELEMENTS,
    CPU__OP_GATHERND,
    CPU__OP_SCATTERND,
    CPU__OP_ONEHOT,
    CPU__OP_TRILU,
    CPU__OP_CUMSUM,
    CPU__OP_HARDMAX,
    CPU__OP_SCE_LOSS, /* SoftmaxCrossEntropyLoss */
    CPU__OP_SCE_GRAD, /* SoftmaxCrossEntropyLossGrad */
    CPU__OP_NLL_LOSS, /* NegativeLogLikelihoodLoss (cpu__sce_loss) */
    CPU__OP_NLL_GRAD, /* NegativeLogLikelihoodLossGrad (cpu__sce_grad) */
    CPU__OP_SGD,
    CPU__OP_MOMENTUM,
    CPU__OP_ADAM,
    CPU__OP_MATMULGRADSGD, /* SGD of a MatMulGrad, one GEMM (fused by libsession) */
    /* The gradient ops (cpu_grad.c) */
    CPU__OP_EXPANDLIKE,
    CPU__OP_REDUCESUMLIKE,
    CPU__OP_SCALARLIKE,
    CPU__OP_RELUGRAD,
    CPU__OP_LEAKYRELUGRAD,
    CPU__OP_SIGMOIDGRAD,
    CPU__OP_TANHGRAD,
    CPU__OP_SOFTMAXGRAD,
    CPU__OP_LOGSOFTMAXGRAD,
    CPU__OP_MATMULGRAD,
    CPU__OP_REDUCEGRAD,
    CPU__OP_GATHERGRAD,
    CPU__OP_SLICEGRAD,
    /* The CNN ops (cpu_cnn.c), all general entries */
    CPU__OP_CONV,
    CPU__OP_CONVGRAD,
    CPU__OP_MAXPOOL,
    CPU__OP_AVGPOOL,
    CPU__OP_MAXPOOLGRAD,
    CPU__OP_AVGPOOLGRAD,
    CPU__OP_BATCHNORM,
    CPU__OP_DROPOUT,
    CPU__OP_LAYERNORM,
    CPU__OP_LAYERNORMGRAD,
    CPU__OP_PAD,
    CPU__OP_PADGRAD,
    CPU__OP_CLIP,
    CPU__OP_SPLIT,
    CPU__OP_SHAPE,
    CPU__OP_SIZE,
    CPU__OP_CONSTANTOFSHAPE,
    CPU__OP_RANGE,
    /* The fused ops (cpu_fused.c, FusedConv's body in cpu_cnn.c), general entries */
    CPU__OP_FUSEDCONV,
    CPU__OP_FUSEDGEMM,
    /* The NCHWc16 ops (cpu_nchwc.c, NchwcConv's body in cpu_cnn.c), general entries */
    CPU__OP_NCHWC_CONV,
    CPU__OP_NCHWC_MAXPOOL,
    CPU__OP_NCHWC_AVGPOOL,
    CPU__OP_NCHWC_GLOBALAVGPOOL,
    CPU__OP_NCHWC_GLOBALMAXPOOL,
    CPU__OP_NCHWC_REORDER_OUTPUT,
    /* g-rnnq: the recurrent layers (cpu_rnn.c) and linear quantization (cpu_quant.c) */
    CPU__OP_RNN,
    CPU__OP_GRU,
    CPU__OP_LSTM,
    CPU__OP_QUANTIZE,
    CPU__OP_DEQUANTIZE,
    CPU__OP_DYNAMICQUANTIZE,
    CPU__OP_MATMULINTEGER,
    CPU__OP_CONVINTEGER,
    CPU__OP_QLINEARMATMUL,
    CPU__OP_QLINEARCONV,
    /* group g-act: the activations and their gradients, Sum and Mean (cpu_activation.c), Det,
     * the window generators, MelWeightMatrix, DFT, STFT (cpu_signal.c) */
    CPU__OP_ELU,
    CPU__OP_SELU,
    CPU__OP_CELU,
    CPU__OP_HARDSIGMOID,
    CPU__OP_HARDSWISH,
    CPU__OP_THRESHOLDEDRELU,
    CPU__OP_SOFTSIGN,
    CPU__OP_SHRINK,
    CPU__OP_GELU,
    CPU__OP_MISH,
    CPU__OP_ELUGRAD,
    CPU__OP_SELUGRAD,
    CPU__OP_CELUGRAD,
    CPU__OP_HARDSIGMOIDGRAD,
    CPU__OP_HARDSWISHGRAD,
    CPU__OP_THRESHOLDEDRELUGRAD,
    CPU__OP_SOFTSIGNGRAD,
    CPU__OP_SHRINKGRAD,
    CPU__OP_GELUGRAD,
    CPU__OP_MISHGRAD,
    CPU__OP_SUM,
    CPU__OP_MEAN,
    CPU__OP_DET,
    CPU__OP_HANNWINDOW,
    CPU__OP_HAMMINGWINDOW,
    CPU__OP_BLACKMANWINDOW,
    CPU__OP_MELWEIGHTMATRIX,
    CPU__OP_DFT,
    CPU__OP_STFT,
    /* g-convfam: the spatial and normalization ops (cpu_conv_transpose.c, ...), general
     * entries */
    CPU__OP_CONVTRANSPOSE,
    CPU__OP_DEPTHTOSPACE,
    CPU__OP_SPACETODEPTH,
    CPU__OP_TILE,
    CPU__OP_MAXUNPOOL,
    CPU__OP_MAXPOOL_INDICES, /* MaxPool with Indices, and at i8 and u8 */
    CPU__OP_INSTANCENORM,
    CPU__OP_LRN,
    CPU__OP_MVN,
    CPU__OP_ROIALIGN,
    /* Output shapes that depend on input values (cpu_value_shape.c), general entries */
    CPU__OP_NONZERO,
    CPU__OP_COMPRESS,
    CPU__OP_TOPK,
    CPU__OP_UNIQUE,
    CPU__OP_NMS, /* NonMaxSuppression */
    CPU__OP_REVERSESEQUENCE, /* cpu_reverse_sequence.c */
    CPU__OP_EINSUM,          /* cpu_einsum.c */
    CPU__OP_TFIDF,           /* cpu_tfidf.c: TfIdfVectorizer */
    /* group g-resize (cpu_resize.c), general entries */
    CPU__OP_RESIZE,
    CPU__OP_RESIZEGRAD,
    CPU__OP_GRIDSAMPLE,
    /* g-dtypes */
    CPU__OP_GREATEREQUAL,
    CPU__OP_LESSEQUAL,
    CPU__OP_EYELIKE,
    CPU__OP_BATCHNORM_TRAIN,
    CPU__OP_DROPOUT_TRAIN,
    CPU__OP_BERNOULLI,
    CPU__OP_RANDOMUNIFORMLIKE,
    CPU__OP_RANDOMNORMALLIKE,
};

/** The most inputs an op of this driver takes, variadic ops (Concat) aside. */
#define CPU__MAX_INPUTS 3

/**
 * The most inputs and outputs of a general entry (cpu__run_general): QLinearConv, which takes
 * 9, the training ops, which take up to 6 inputs (Adam) and give 0 (the in-place optimizers), 1 or 2 outputs, and Split,
 * which gives up to 8 (libsession's SES__MAX_OUTPUTS).
 */
#define CPU__GENERAL_MAX_INPUTS 9 /* QLinearConv with its bias */
#define CPU__MAX_OUTPUTS 8

/** A checked argument of a launch: where its elements are and what shape they have. */
typedef struct cpu__tensor {
    unsigned char *data; /* first element; aligned to the element size */
    const int64_t *dims; /* rank entries, each >= 0 (the host's array) */
    uint64_t count;      /* elements */
    size_t esize;        /* bytes per element */
    uint32_t dtype;      /* SES_DRV_DTYPE_* */
    uint32_t rank;
} cpu__tensor_t;

typedef struct cpu__call cpu__call_t;

/** What one kernel table entry is: its op, signature and the body that computes it. */
typedef struct cpu__spec {
    const char *op;        /* ONNX op type, as in the table */
    const char *signature; /* as in the table */
    int32_t (*body)(const cpu__call_t *call);
    uint32_t code;     /* enum cpu__op */
    uint32_t n_inputs; /* exact count; 1 for variadic entries, which take 1 or more */
    uint32_t variadic; /* non-zero: every input has dtype in[0] */
    uint32_t in[CPU__GENERAL_MAX_INPUTS]; /* input dtypes; unused slots 0 */
    uint32_t out; /* the output's dtype (for a general entry, its first output's or 0) */
    /* General entries (cpu_kernels.c's CPU__GENERAL_KERNELS), checked by cpu__run_general: any
     * number of inputs up to CPU__GENERAL_MAX_INPUTS and of outputs up to CPU__MAX_OUTPUTS,
     * zero included. The other entries leave these fields zero and have one output, `out`. */
    uint32_t n_outputs;              /* general: exact count, 0 to CPU__MAX_OUTPUTS */
    uint32_t outs[CPU__MAX_OUTPUTS]; /* general: output dtypes */
    uint64_t inplace;                /* general: bit i, input i is written in place */
    /* general: the entry's reuse_inputs (DRV-86), or NULL */
    uint64_t (*reuse)(ses_drv_device_t *device, const ses_drv_node_t *node, uint32_t output);
} cpu__spec_t;

/** One checked launch, as a body sees it. Valid during the compute call only. */
struct cpu__call {
    ses_drv_device_t *device;
    const ses_drv_launch_t *launch;
    const ses_drv_node_t *node;
    const cpu__spec_t *spec;
    const char *name;                  /* the node's name, never NULL */
    uint32_t n_in;                     /* node->n_inputs */
    cpu__tensor_t in[CPU__MAX_INPUTS]; /* the first inputs; see cpu__input for the others */
    cpu__tensor_t out;
    /* What create prepared for this node, when the launch has exactly the shapes and dtypes
     * create saw; NULL otherwise, and the body works everything out itself. */
    const struct cpu__prep *prep;
    /* General entries only (cpu__run_general): every output; out is outs[0] when there is one
     * and zeroed when there is none. Inputs past CPU__MAX_INPUTS are read with cpu__input. */
    uint32_t n_out;
    cpu__tensor_t outs[CPU__MAX_OUTPUTS];
    /* General entries with a create (Conv): the state it made, or NULL. Mutable: the ABI never
     * overlaps two computes on one state. */
    void *state;
};

/**
 * Checks @p launch against @p spec, builds the call and runs spec->body. Every compute entry of
 * the table without a state is this function with its own spec.
 */
int32_t cpu__run(ses_drv_device_t *device, const ses_drv_launch_t *launch, const cpu__spec_t *spec);

/**
 * The compute of a general entry (cpu_kernels.c's CPU__GENERAL_KERNELS): checks @p launch
 * against @p spec as cpu__run does (struct sizes, counts, every dtype, dims, byte ranges,
 * alignment), with any number of inputs and of outputs, none included (node->outputs and the
 * launch's output arrays are not read then), and refuses overlaps: an output may share no byte
 * with an input or another output, and an input written in place (spec->inplace) none with
 * any other argument. Then builds the call, with call->outs, and runs spec->body.
 */
int32_t cpu__run_general(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                         const cpu__spec_t *spec, void *state);

/** Input @p i of a checked call (any i < n_in, also past CPU__MAX_INPUTS). */
cpu__tensor_t cpu__input(const cpu__call_t *call, uint32_t i);

/** Fails with @p code and a message prefixed `<op> "<node name>": `. Returns @p code. */
int32_t cpu__call_fail(const cpu__call_t *call, int32_t code, const char *format, ...)
    CPU__PRINTF(3, 4);

/**
 * Writes "[2,3]" (or "[]" for a scalar) into @p buf, cut with "..." when it does not fit, and
 * returns @p buf. Also used for int lists such as attributes.
 */
const char *cpu__format_dims(const int64_t *dims, uint32_t rank, char *buf, size_t size);

/** Non-zero when both tensors have the same rank and dims. */
int cpu__same_shape(const cpu__tensor_t *a, const cpu__tensor_t *b);

/**
 * Fails unless @p t has rank <= CPU__MAX_RANK, naming @p role ("input 0"). Kernels that keep
 * per-dimension arrays call it first.
 */
int32_t cpu__check_rank(const cpu__call_t *call, const char *role, const cpu__tensor_t *t);

/**
 * Reads INT attribute @p key into @p out. When absent: *out = @p def if @p has_default, else
 * SES_DRV_INVALID_ARGUMENT naming the attribute. Another type is SES_DRV_INVALID_ARGUMENT.
 */
int32_t cpu__attr_int(const cpu__call_t *call, const char *key, int has_default, int64_t def,
                      int64_t *out);

/** FLOAT attribute @p key, @p def when absent. */
int32_t cpu__attr_float(const cpu__call_t *call, const char *key, double def, double *out);

/**
 * Required INTS attribute @p key: stores at most @p max values in @p out and the count in
 * @p out_count. More than @p max values is SES_DRV_INVALID_ARGUMENT.
 */
int32_t cpu__attr_ints(const cpu__call_t *call, const char *key, int64_t *out, uint32_t max,
                       uint32_t *out_count);

/** Required FLOATS attribute @p key, as cpu__attr_ints. */
int32_t cpu__attr_floats(const cpu__call_t *call, const char *key, double *out, uint32_t max,
                         uint32_t *out_count);

/**
 * Non-zero when the host's should_abort says the calling thread's eval should stop. Only for
 * the thread that called compute (the host answers per thread), between long steps.
 */
int cpu__cancelled(const cpu__call_t *call);

/**
 * Non-zero when @p n_items of @p item_cost each are below CPU__PARALLEL_MIN element operations
 * in all, so that cpu__parallel_for would run them inline: a caller may then call its task
 * directly and skip building the job.
 */
static inline int cpu__parallel_small(uint64_t n_items, uint64_t item_cost) {
    return n_items <= (CPU__PARALLEL_MIN - 1) / (item_cost ? item_cost : 1);
}

/* The first failure among the tasks of one parallel job (the others see `failed` and stop):
 * its code and message, reported by the caller after the job. Zero it, then atomic_init
 * `failed` to 0. */
typedef struct cpu__first_error {
    atomic_int failed;
    int32_t st;
    char why[256];
} cpu__first_error_t;

static inline void cpu__first_error_set(cpu__first_error_t *e, int32_t st, const char *why) {
    if (atomic_exchange(&e->failed, 1) == 0) {
        e->st = st;
        snprintf(e->why, sizeof e->why, "%s", why);
    }
}

/** Runs @p fn over @p n_items on the call's device pool (see cpu__parallel_for). */
void cpu__parallel(const cpu__call_t *call, uint64_t n_items, uint64_t item_cost, cpu__task_fn fn,
                   void *ctx);

/* ---------------------------------------------------------------------------------------------
 * Strided iteration (cpu_strided.c): a dense output walked in row-major order while up to three
 * inputs are read through per-dimension strides. Broadcasting (stride 0), Transpose (permuted
 * strides) and Slice (scaled, possibly negative strides) are all this.
 * ------------------------------------------------------------------------------------------- */

/**
 * Computes @p n output elements into @p out. Input k's first element is @p in[k]; it moves
 * @p step[k] elements per output element (0 for a broadcast input).
 */
typedef void (*cpu__row_fn)(void *out, const void *const *in, const int64_t *step, size_t n,
                            const void *params);

typedef struct cpu__strided {
    uint32_t rank; /* >= 1 */
    uint32_t n_in; /* <= CPU__MAX_INPUTS */
    int64_t dims[CPU__MAX_RANK];
    int64_t stride[CPU__MAX_INPUTS][CPU__MAX_RANK]; /* elements, per output dim */
    const unsigned char *base[CPU__MAX_INPUTS];     /* input k's element at output index 0 */
    size_t esize[CPU__MAX_INPUTS];
    unsigned char *out;
    size_t out_esize;
    uint64_t count; /* output elements */
} cpu__strided_t;

/**
 * Drops output dims of size 1 and merges neighbours whose strides chain for every input, so
 * the innermost loop is as long as possible. Call after filling dims and strides.
 */
void cpu__strided_merge(cpu__strided_t *s);

/** Computes output elements [begin, end) row by row with @p row. */
void cpu__strided_run(const cpu__strided_t *s, uint64_t begin, uint64_t end, cpu__row_fn row,
                      const void *params);

/** cpu__strided_run over the whole output, split over the pool; @p cost per element. */
void cpu__strided_parallel(const cpu__call_t *call, const cpu__strided_t *s, cpu__row_fn row,
                           const void *params, uint64_t cost);

/**
 * Sets up @p s for numpy broadcasting of call->in[0 .. n_in) to call->out: checks that the
 * output rank is the largest input rank and each output dim is the broadcast of the inputs'
 * (naming all shapes otherwise), and merges. Ranks over CPU__MAX_RANK are refused. Takes the
 * walk from call->prep when create prepared one, and a single row without strides when no input
 * broadcasts but single elements (cpu__broadcast_flat).
 */
int32_t cpu__broadcast_setup(const cpu__call_t *call, uint32_t n_in, cpu__strided_t *s);

/**
 * Non-zero when broadcasting @p in[0 .. n_in) to @p out needs no strides: some input has the
 * output's shape and every other is a single element of no larger rank. Then @p step[k] is 1
 * (same shape) or 0 (one element) and the output is one row. Requires out->rank <=
 * CPU__MAX_RANK.
 */
int cpu__broadcast_flat(const cpu__tensor_t *in, uint32_t n_in, const cpu__tensor_t *out,
                        int64_t *step);

/**
 * The strided walk of numpy broadcasting @p in[0 .. n_in) to @p out, merged, into @p s; zero
 * when the shapes do not broadcast to @p out (no message: cpu__broadcast_setup names them).
 * Requires ranks <= CPU__MAX_RANK. Data pointers are copied from the tensors as they are.
 */
int cpu__broadcast_plan(const cpu__tensor_t *in, uint32_t n_in, const cpu__tensor_t *out,
                        cpu__strided_t *s);

/* ---------------------------------------------------------------------------------------------
 * Per-node state (cpu_launch.c): what the kernel entry's create works out once per plan node, so
 * that a launch of that node only has to check its buffers. Used by the elementwise entries.
 * ------------------------------------------------------------------------------------------- */

/** One argument of a node as create checked it. */
typedef struct cpu__arg {
    const int64_t *dims; /* rank entries, a copy in the state */
    uint64_t count;      /* elements */
    uint64_t bytes;      /* count * esize, known not to overflow */
    size_t esize;
    uint32_t dtype;
    uint32_t rank; /* <= CPU__MAX_RANK */
} cpu__arg_t;

/** How an elementwise body walks its arguments, worked out by create. */
enum cpu__walk {
    CPU__WALK_NONE,    /* not prepared: the body sets up its walk at each launch */
    CPU__WALK_FLAT,    /* one row: each input has the output's shape (step 1) or one element (0) */
    CPU__WALK_STRIDED, /* numpy broadcasting through prep->strided */
};

/**
 * A kernel entry's state for one plan node: the node's shapes and dtypes, already checked
 * against the entry, and for broadcasting ops the walk. Built by cpu__create, freed by
 * cpu__destroy, and read-only in between, so launches on several threads may share it.
 */
typedef struct cpu__prep {
    const cpu__spec_t *spec; /* the entry it was made for; another entry's state is ignored */
    uint32_t n_in;           /* node->n_inputs, <= CPU__MAX_INPUTS */
    uint32_t overlap;        /* the op's overlap rule (cpu_launch.c) */
    cpu__arg_t in[CPU__MAX_INPUTS];
    cpu__arg_t out;
    uint32_t walk;                      /* enum cpu__walk */
    int64_t flat_step[CPU__MAX_INPUTS]; /* CPU__WALK_FLAT: 1 or 0 per input */
    struct cpu__strided *strided;       /* CPU__WALK_STRIDED, its own allocation; bases unset */
    /* CPU__WALK_FLAT, for an op that checks nothing in its data (cpu__elementwise_row): its row
     * function, and non-zero direct when the output is not empty and small enough to run
     * inline (cpu__parallel_small), so that cpu__run_prepared calls the row itself. */
    cpu__row_fn row;
    uint32_t direct;
    /* MatMul and Gemm at f32 whose input 1 (the weights) is constant (DRV-85): the state of
     * their oneDNN matmul path (cpu_matmul.c); NULL otherwise. */
    struct cpu__gemm_state *gemm;
    int64_t dims[]; /* the args' dims: as many as their ranks add up to */
} cpu__prep_t;

/**
 * The create entry of the kernels that prepare: checks @p node against @p spec as a launch
 * would be checked, and when all is well builds the node's cpu__prep_t. A node that would fail
 * (or that has no use for a state: more than CPU__MAX_INPUTS inputs, ranks over CPU__MAX_RANK)
 * gets a NULL state and SES_DRV_OK, so that its launches take the unprepared path and fail
 * there with the usual message. SES_DRV_OUT_OF_MEMORY when the state cannot be allocated.
 */
int32_t cpu__create(ses_drv_device_t *device, const ses_drv_node_t *node, const cpu__spec_t *spec,
                    void **out_state);

/** The destroy entry: frees a state from cpu__create. Accepts NULL. */
void cpu__destroy(ses_drv_device_t *device, void *state);

/**
 * The compute entry of the kernels that prepare. With a state made for @p spec, a launch whose
 * node has the shapes and dtypes create saw has only its buffers checked (ranges, alignment,
 * overlap) before spec->body runs with call->prep set. Any other launch, or a NULL state, goes
 * through cpu__run.
 */
int32_t cpu__run_prepared(ses_drv_device_t *device, const void *state,
                          const ses_drv_launch_t *launch, const cpu__spec_t *spec);

/* ---------------------------------------------------------------------------------------------
 * Bodies, one per op family.
 * ------------------------------------------------------------------------------------------- */

/* cpu_elementwise.c */
/**
 * The row function the body of a broadcasting op (Add ... Where) of @p spec walks with, and its
 * cost per element in *@p out_cost; NULL for ops that must look at their data first (integer
 * Div, which refuses a zero divisor) and for the other families.
 */
cpu__row_fn cpu__elementwise_row(const cpu__spec_t *spec, uint64_t *out_cost);
int32_t cpu__binary(const cpu__call_t *call);  /* Add Sub Mul Div Pow Mod BitShift And Or Xor */
int32_t cpu__compare(const cpu__call_t *call); /* Equal Greater Less */
int32_t cpu__where(const cpu__call_t *call);
int32_t cpu__min_max(const cpu__call_t *call); /* Min Max, variadic */
int32_t cpu__unary(const cpu__call_t *call); /* Neg Abs Exp ... LeakyRelu Not Sign Round Floor
                                                 Ceil Cos ... */
int32_t cpu__cast(const cpu__call_t *call);

/* cpu_matmul.c */
/* The shape of a numpy matmul of a by b: 1-D operands promoted (the added dim dropped from the
 * product), batch dims broadcast. Strides step whole matrices, 0 where an operand broadcasts. */
typedef struct cpu__matmul_shape {
    int64_t m, k, n;
    uint32_t n_batch;
    int64_t batch[CPU__MAX_RANK], a_stride[CPU__MAX_RANK], b_stride[CPU__MAX_RANK];
    int64_t n_matrices;
    int a_broadcast; /* some batch dim of a is 1 where the product's is not */
    int b_batched;   /* b has a batch dim other than 1 */
} cpu__matmul_shape_t;

/*
 * Works out @p shape for a (named @p a_name) times b (@p b_name), and checks that @p product
 * (named @p product_name) has the product's shape. Errors name the three with their dims.
 */
int32_t cpu__matmul_shape(const cpu__call_t *call, const cpu__tensor_t *a, const char *a_name,
                          const cpu__tensor_t *b, const char *b_name,
                          const cpu__tensor_t *product, const char *product_name,
                          cpu__matmul_shape_t *shape);

int32_t cpu__matmul(const cpu__call_t *call);
int32_t cpu__gemm(const cpu__call_t *call);

/**
 * The state of an f32 MatMul, Gemm or FusedGemm node whose weights (input 1) are constant: the
 * node's DRV-85 bits and oneDNN's matmul cache (the primitive and the weights reordered once
 * into its layout), made at the first launch that takes that path. Gemm and MatMul keep it in
 * their cpu__prep_t, FusedGemm as its general state.
 */
typedef struct cpu__gemm_state {
    uint64_t constant_inputs;
    struct cpu__dnnl_mm_cache *mm;
    cpu__team_user_t team; /* counted once it has run on oneDNN's OpenMP team */
} cpu__gemm_state_t;

/** A new state for @p node, or NULL when its input 1 is not constant or it has no DRV-85 bits
 * (*@p out_oom set when allocation failed). */
cpu__gemm_state_t *cpu__gemm_state_new(const ses_drv_node_t *node, int *out_oom);
/** Frees a state of cpu__gemm_state_new. Accepts NULL. */
void cpu__gemm_state_free(cpu__gemm_state_t *state);
/** FusedGemm's create and destroy entries: its state is a cpu__gemm_state_t or NULL. */
int32_t cpu__fused_gemm_create(ses_drv_device_t *device, const ses_drv_node_t *node,
                               void **out_state);
void cpu__fused_gemm_destroy(ses_drv_device_t *device, void *state);

/* The activation of a FusedGemm (cpu_act.h). */
struct cpu__act;
/**
 * Gemm's body with FusedGemm's activation @p act (NULL: none). Sets *@p out_act_done when the
 * activation was applied (oneDNN's matmul path, as a post-op); otherwise the caller applies it.
 */
int32_t cpu__gemm_act(const cpu__call_t *call, const struct cpu__act *act, int *out_act_done);
/**
 * One row-major GEMM at @p dtype (f32 or f64): C = alpha * op(A) * op(B) + beta * C, op(A)
 * m x k, op(B) k x n. Dimensions and leading dimensions must be at least 1 and fit an int
 * (cpu__check_blas_dims). f32 on a @p device whose driver chose oneDNN runs oneDNN's sgemm: with
 * @p split non-zero cut into blocks of C on the device's pool, with @p split zero on the calling
 * thread alone (for callers already running on a pool thread). Otherwise OpenBLAS, on its own
 * threads (cpu__gemm_set_threads, cpu__gemm_single_threaded). @p device may be NULL (OpenBLAS).
 */
void cpu__gemm_call(const ses_drv_device_t *device, int split, uint32_t dtype, int trans_a,
                    int trans_b, int64_t m, int64_t n, int64_t k, double alpha, const void *a,
                    int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc);
/** Refuses, with SES_DRV_UNIMPLEMENTED naming them, GEMM dimensions over OpenBLAS's int. */
int32_t cpu__check_blas_dims(const cpu__call_t *call, int64_t m, int64_t n, int64_t k);

/* cpu_reduce.c */
/* ReduceSum ReduceMax ReduceMean ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum
 * ReduceLogSumExp ReduceSumSquare */
int32_t cpu__reduce(const cpu__call_t *call);
/**
 * The reduction body shared with ReduceSumLike: reduces call->in[0] over its dims flagged in
 * @p reduced (rank entries) into call->out, whose elements are the kept ones in order (the
 * caller checked the output's shape), by @p code: CPU__OP_REDUCESUM, CPU__OP_REDUCEMEAN or
 * CPU__OP_REDUCEMAX. An empty reduction sums to 0 and averages to NaN; the caller refuses the
 * max of one.
 */
int32_t cpu__reduce_dims(const cpu__call_t *call, const int *reduced, uint32_t code);
int32_t cpu__softmax(const cpu__call_t *call); /* Softmax LogSoftmax */
int32_t cpu__argmax(const cpu__call_t *call); /* ArgMax ArgMin */

/* cpu_shape.c */
int32_t cpu__copy(const cpu__call_t *call); /* Identity Reshape Flatten Squeeze Unsqueeze */
int32_t cpu__transpose(const cpu__call_t *call);
int32_t cpu__concat(const cpu__call_t *call);
int32_t cpu__slice(const cpu__call_t *call);
/* Index @p q of @p indices (i32 or i64), as int64. */
static inline int64_t cpu__index_at(const cpu__tensor_t *indices, uint64_t q) {
    if (indices->dtype == SES_DRV_DTYPE_I32)
        return ((const int32_t *)(const void *)indices->data)[q];
    return ((const int64_t *)(const void *)indices->data)[q];
}

/*
 * The checks Gather and GatherGrad share: attribute axis in range for @p data (the tensor
 * gathered from: Gather's input 0, GatherGrad's output), @p gathered (Gather's output,
 * GatherGrad's dy) shaped as data's dims before the axis, the indices' dims, data's dims after
 * it, and every index in range. @p data_name and @p gathered_name name them in messages.
 * Stores the axis in @p out_axis.
 */
int32_t cpu__check_gather(const cpu__call_t *call, const cpu__tensor_t *data,
                          const char *data_name, const cpu__tensor_t *indices,
                          const cpu__tensor_t *gathered, const char *gathered_name,
                          uint32_t *out_axis);
/*
 * The checks Slice and SliceGrad share: @p whole (Slice's input, SliceGrad's output; its rank
 * checked as @p whole_rank_name) and @p part (Slice's output, SliceGrad's dy) of one rank, and
 * attributes starts and steps, one per axis ("per @p axis_owner axis"), that place part's
 * elements inside whole. Messages name @p first then @p second. Fills @p starts and @p steps.
 */
int32_t cpu__check_slice(const cpu__call_t *call, const cpu__tensor_t *whole,
                         const char *whole_rank_name, const cpu__tensor_t *part,
                         const char *axis_owner, const cpu__tensor_t *first,
                         const char *first_name, const cpu__tensor_t *second,
                         const char *second_name, int64_t *starts, int64_t *steps);

int32_t cpu__gather(const cpu__call_t *call);
/* cpu_index.c: GatherElements ScatterElements GatherND ScatterND OneHot Trilu CumSum Hardmax */
int32_t cpu__gather_elements(const cpu__call_t *call);
int32_t cpu__scatter_elements(const cpu__call_t *call);
int32_t cpu__gather_nd(const cpu__call_t *call);
int32_t cpu__scatter_nd(const cpu__call_t *call);
int32_t cpu__one_hot(const cpu__call_t *call);
int32_t cpu__trilu(const cpu__call_t *call);
int32_t cpu__cumsum(const cpu__call_t *call);
int32_t cpu__hardmax(const cpu__call_t *call);
/** The strided copy row for elements of @p esize bytes (1, 2, 4 or 8), or NULL. */
cpu__row_fn cpu__strided_copy_row(size_t esize);
/** Whether taking @p n elements from @p start by @p step stays inside [0, @p dim). */
int cpu__slice_fits(int64_t dim, int64_t start, int64_t step, int64_t n);

/* cpu_grad.c */
int32_t cpu__expand_like(const cpu__call_t *call);      /* ExpandLike */
int32_t cpu__reduce_sum_like(const cpu__call_t *call);  /* ReduceSumLike */
int32_t cpu__scalar_like(const cpu__call_t *call);      /* ScalarLike */
int32_t cpu__activation_grad(const cpu__call_t *call);  /* ReluGrad ... TanhGrad */
int32_t cpu__softmax_grad(const cpu__call_t *call);     /* SoftmaxGrad LogSoftmaxGrad */
int32_t cpu__matmul_grad(const cpu__call_t *call);      /* MatMulGrad */
/**
 * MatMulGrad's gradient of A (@p input 0) or of B (1) from @p dy when it is one GEMM: @p sh (dy
 * = A * B's shape) with neither b_batched nor a_broadcast, and a sum over at least one element
 * (sh->n_matrices and the inner dim, m for B's gradient and n for A's, not 0). @p operand is
 * the operand the gradient is computed from: B for input 0, A for input 1. Computes out =
 * alpha * gradient + beta * out, out of A's or B's shape.
 */
int32_t cpu__matmul_grad_gemm(const cpu__call_t *call, int input, const cpu__matmul_shape_t *sh,
                              uint32_t dtype, const void *dy, const void *operand, double alpha,
                              double beta, void *out);
int32_t cpu__reduce_grad(const cpu__call_t *call);      /* ReduceGrad */
int32_t cpu__gather_grad(const cpu__call_t *call);      /* GatherGrad */
int32_t cpu__slice_grad(const cpu__call_t *call);       /* SliceGrad */

/* cpu_cnn.c: the sliding window of the convolutions and pools, shared with cpu_nchwc.c */
#define CPU__SPATIAL_MAX (CPU__MAX_RANK - 2)

/** A convolution's or pool's window, one entry per spatial dim, as the host normalized it. */
typedef struct cpu__win {
    uint32_t n; /* spatial dims */
    int64_t k[CPU__SPATIAL_MAX], s[CPU__SPATIAL_MAX], d[CPU__SPATIAL_MAX];
    int64_t pb[CPU__SPATIAL_MAX], pe[CPU__SPATIAL_MAX];
    int64_t in[CPU__SPATIAL_MAX], out[CPU__SPATIAL_MAX];
    int64_t k_count, in_count, out_count; /* products over the spatial dims */
} cpu__win_t;

/**
 * Reads the window of a pool or convolution from @p x ([N, C, in...]) to @p y ([N, M, out...]):
 * ranks agree, at least 3 and at most CPU__MAX_RANK, N agrees, and the four attributes
 * (kernel_shape, strides, dilations, pads) have one entry (pads two) per spatial dim, kernel,
 * strides and dilations >= 1 and pads >= 0. Messages name the node and the values.
 */
int32_t cpu__read_window(const cpu__call_t *call, const cpu__tensor_t *x, const cpu__tensor_t *y,
                         cpu__win_t *w);

/*
 * Whether @p t is @p dims reduced over the axes flagged in @p reduced, each kept as 1 with
 * @p keepdims or else removed; @p want gets that shape, @p want_rank its rank (for messages).
 */
static inline int cpu__is_reduced(const cpu__tensor_t *t, const int64_t *dims, uint32_t rank,
                                  const int *reduced, int keepdims, int64_t *want,
                                  uint32_t *want_rank) {
    uint32_t n = 0;
    for (uint32_t d = 0; d < rank; d++) {
        if (!reduced[d])
            want[n++] = dims[d];
        else if (keepdims)
            want[n++] = 1;
    }
    *want_rank = n;
    if (t->rank != n)
        return 0;
    for (uint32_t d = 0; d < n; d++)
        if (t->dims[d] != want[d])
            return 0;
    return 1;
}

/*
 * Softmax's and SoftmaxGrad's walk over the lanes of an axis (flat lane l of outer * inner, the
 * axis dim long with stride inner): the next run from lane @p l, below @p end, at most @p block
 * lanes and within one outer row. Returns its length; @p base gets its first element's offset.
 */
static inline size_t cpu__lane_block(uint64_t l, uint64_t end, int64_t inner, int64_t dim,
                                     size_t block, size_t *base) {
    const uint64_t o = l / (uint64_t)inner, i0 = l % (uint64_t)inner;
    size_t n = (size_t)((uint64_t)inner - i0);
    if (n > end - l)
        n = (size_t)(end - l);
    if (n > block)
        n = block;
    *base = (size_t)(o * (uint64_t)(dim * inner) + i0);
    return n;
}

/* Small helpers of the windowed families (cpu_cnn.c, cpu_pool.c, cpu_norm.c, cpu_pad_shape.c):
 * the product of n dims; the next row-major coordinates (0 after the last); a tensor zeroed; an
 * f32 or f64 element as double. */
static inline int64_t cpu__product(const int64_t *dims, uint32_t n) {
    int64_t p = 1;
    for (uint32_t i = 0; i < n; i++)
        p *= dims[i];
    return p;
}

static inline int cpu__next(int64_t *coords, const int64_t *dims, uint32_t n) {
    for (uint32_t i = n; i-- > 0;) {
        if (++coords[i] < dims[i])
            return 1;
        coords[i] = 0;
    }
    return 0;
}

static inline void cpu__zero(const cpu__tensor_t *t) {
    if (t->count)
        memset(t->data, 0, (size_t)(t->count * t->esize));
}

static inline double cpu__get(uint32_t dtype, const unsigned char *base, int64_t i) {
    return dtype == SES_DRV_DTYPE_F32 ? (double)((const float *)(const void *)base)[i]
                                      : ((const double *)(const void *)base)[i];
}

/** A 2-D pool's geometry: cpu__win_t's two spatial dims, and the interior output columns. */
typedef struct cpu__pool2d {
    int64_t h, w, oh, ow;   /* input and output rows and columns */
    int64_t kh, kw, sh, sw; /* kernel, strides */
    int64_t dh, dw, ph, pw; /* dilations, begin pads */
    int64_t peh, pew;       /* end pads */
    int64_t lo, hi;         /* interior output columns: windows wholly inside the input's width */
} cpu__pool2d_t;

/** Fills @p g from a window of two spatial dims. */
void cpu__pool2d_init(const cpu__win_t *w, cpu__pool2d_t *g);

/** Along one axis from @p start: the taps inside [0, n) and inside the padded [-pb, n + pe). */
void cpu__pool2d_count(int64_t start, int64_t k, int64_t d, int64_t n, int64_t pb, int64_t pe,
                       int64_t *out_valid, int64_t *out_padded);

/*
 * MaxPool's max keeps NaN: a NaN tap replaces the running value, and nothing replaces a NaN
 * (v > NaN is false). Otherwise the first of equal values stays (strict >). Shared by the NCHWc16
 * pools so that they give MaxPool's numbers.
 */
#define CPU__MAXNAN(m, v) ((v) > (m) || (v) != (v) ? (v) : (m))

/* cpu_cnn.c (general entries) */
int32_t cpu__conv(const cpu__call_t *call);              /* Conv */
int32_t cpu__fused_conv(const cpu__call_t *call);        /* FusedConv */
int32_t cpu__nchwc_conv(const cpu__call_t *call);        /* NchwcConv (oneDNN only) */
int32_t cpu__conv_grad(const cpu__call_t *call);         /* ConvGrad */
/**
 * Conv's per-node state: the host's constant-input bits (DRV-85) and, made at the first f32
 * launch that runs through oneDNN, its cache. create never fails but for memory.
 */
int32_t cpu__conv_create(ses_drv_device_t *device, const ses_drv_node_t *node, void **out_state);
void cpu__conv_destroy(ses_drv_device_t *device, void *state);
int32_t cpu__pool(const cpu__call_t *call);              /* MaxPool AveragePool and grads */
int32_t cpu__batch_norm(const cpu__call_t *call);        /* BatchNormalization */
int32_t cpu__dropout(const cpu__call_t *call);           /* Dropout (with its mask) */
int32_t cpu__layer_norm(const cpu__call_t *call);        /* LayerNormalization */
int32_t cpu__layer_norm_grad(const cpu__call_t *call);   /* LayerNormalizationGrad */
int32_t cpu__pad(const cpu__call_t *call);               /* Pad */
int32_t cpu__pad_grad(const cpu__call_t *call);          /* PadGrad */
int32_t cpu__clip(const cpu__call_t *call);              /* Clip */
int32_t cpu__split(const cpu__call_t *call);             /* Split */
int32_t cpu__shape(const cpu__call_t *call);             /* Shape */
int32_t cpu__size(const cpu__call_t *call);              /* Size */
int32_t cpu__constant_of_shape(const cpu__call_t *call); /* ConstantOfShape */
int32_t cpu__range(const cpu__call_t *call);             /* Range */

/* cpu_train.c (general entries) */
int32_t cpu__sce_loss(const cpu__call_t *call);  /* SoftmaxCrossEntropyLoss, NLL loss */
int32_t cpu__sce_grad(const cpu__call_t *call);  /* SoftmaxCrossEntropyLossGrad, NLL grad */
int32_t cpu__optimizer(const cpu__call_t *call); /* SGD Momentum Adam, in place */
int32_t cpu__matmul_grad_sgd(const cpu__call_t *call); /* MatMulGradSGD, var in place */
/** supports_node of MatMulGradSGD: refuses a gradient that is not one GEMM (a batched B). */
int32_t cpu__matmul_grad_sgd_supports(ses_drv_device_t *device, const ses_drv_node_t *node);

/* cpu_fused.c */
int32_t cpu__fused_gemm(const cpu__call_t *call); /* FusedGemm (general entry) */
/** supports_node of FusedConv and FusedGemm: refuses an activation this driver does not apply
 *  and a FusedConv (or NchwcConv) whose inputs disagree with has_bias and has_z. */
int32_t cpu__fused_supports(ses_drv_device_t *device, const ses_drv_node_t *node);
/** reuse_inputs of the entries of @p spec (DRV-86): output 0 over any input, for the ops that
 *  compute through an output on exactly an input's bytes (cpu_launch.c's overlap rule: the
 *  elementwise ops, Cast, the softmaxes and activation gradients, and the copies Identity,
 *  Reshape, Flatten, Squeeze and Unsqueeze, which then have nothing to do). */
uint64_t cpu__reuse_by_rule(ses_drv_device_t *device, const ses_drv_node_t *node, uint32_t output,
                            const cpu__spec_t *spec);
/** reuse_inputs of FusedConv and NchwcConv (DRV-86): Y over Z, when the node has one. */
uint64_t cpu__fused_conv_reuse(ses_drv_device_t *device, const ses_drv_node_t *node,
                               uint32_t output);

/* cpu_nchwc.c: the NCHWc16 layout's ops (general entries with a supports_node). Tensors are
 * [N, C/16, H, W, 16], channel c of pixel (n, h, w) at [n, c/16, h, w, c%16]. */
int32_t cpu__nchwc_pool(const cpu__call_t *call);           /* NchwcMaxPool NchwcAveragePool */
int32_t cpu__nchwc_global_pool(const cpu__call_t *call);    /* NchwcGlobal{Average,Max}Pool */
int32_t cpu__nchwc_reorder_output(const cpu__call_t *call); /* NchwcReorderOutput */
/**
 * supports_node of the six NCHWc16 ops: f32 only, ranks and dims[4] == 16 as the layout says,
 * 2-D windows, one output, MaxPool's storage_order 0; NchwcConv also needs oneDNN loaded on an
 * AVX-512 ISA and driver.cpu.conv not im2col. SES_DRV_UNIMPLEMENTED naming the node and the
 * value at fault otherwise.
 */
int32_t cpu__nchwc_supports(ses_drv_device_t *device, const ses_drv_node_t *node);
/**
 * NchwcMaxPool's (@p max) or NchwcAveragePool's output rows [@p begin, @p end) on the calling
 * thread (cpu_pool2d.c), row r being row r % g->oh of plane r / g->oh: @p x [planes, g->h,
 * g->w, 16], @p y [planes, g->oh, g->ow, 16]; @p include_pad is AveragePool's
 * count_include_pad. The values are MaxPool's and AveragePool's bit for bit.
 */
void cpu__nchwc_pool_rows(const cpu__pool2d_t *g, int max, int64_t include_pad, const float *x,
                          float *y, uint64_t begin, uint64_t end);

/* g-rnnq: cpu_rnn.c and cpu_quant.c (general entries) */
int32_t cpu__rnn(const cpu__call_t *call);              /* RNN GRU LSTM */
int32_t cpu__quantize(const cpu__call_t *call);         /* QuantizeLinear DequantizeLinear */
int32_t cpu__dynamic_quantize(const cpu__call_t *call); /* DynamicQuantizeLinear */
int32_t cpu__matmul_integer(const cpu__call_t *call);   /* MatMulInteger ConvInteger */
int32_t cpu__qlinear(const cpu__call_t *call);          /* QLinearMatMul QLinearConv */
/* group g-act */
/* cpu_activation.c */
int32_t cpu__act(const cpu__call_t *call);      /* Elu Selu Celu HardSigmoid HardSwish ... Mish */
int32_t cpu__act_grad(const cpu__call_t *call); /* EluGrad ... MishGrad: (dy, x) -> dx */
int32_t cpu__sum_mean(const cpu__call_t *call); /* Sum Mean, variadic */
/* cpu_signal.c */
int32_t cpu__det(const cpu__call_t *call);
int32_t cpu__window(const cpu__call_t *call); /* HannWindow HammingWindow BlackmanWindow */
int32_t cpu__mel_weight_matrix(const cpu__call_t *call);
int32_t cpu__dft(const cpu__call_t *call);
int32_t cpu__stft(const cpu__call_t *call);
/* g-convfam: cpu_conv_transpose.c (general entries) */
int32_t cpu__conv_transpose(const cpu__call_t *call); /* ConvTranspose */
/** ConvTranspose's per-node state: its column matrix, kept between launches. */
int32_t cpu__conv_transpose_create(ses_drv_device_t *device, const ses_drv_node_t *node,
                                   void **out_state);
void cpu__conv_transpose_destroy(ses_drv_device_t *device, void *state);
/* g-convfam: cpu_spatial.c and cpu_norm.c (general entries) */
int32_t cpu__depth_space(const cpu__call_t *call);      /* DepthToSpace SpaceToDepth */
int32_t cpu__tile(const cpu__call_t *call);             /* Tile */
int32_t cpu__max_unpool(const cpu__call_t *call);       /* MaxUnpool */
int32_t cpu__max_pool_indices(const cpu__call_t *call); /* MaxPool with Indices; i8, u8 */
int32_t cpu__instance_norm(const cpu__call_t *call);    /* InstanceNormalization */
int32_t cpu__lrn(const cpu__call_t *call);              /* LRN */
int32_t cpu__mvn(const cpu__call_t *call);              /* MeanVarianceNormalization */
int32_t cpu__roi_align(const cpu__call_t *call);        /* RoiAlign */
/* cpu_value_shape.c: output shapes that depend on input values (general entries) */
int32_t cpu__nonzero(const cpu__call_t *call);  /* NonZero */
int32_t cpu__compress(const cpu__call_t *call); /* Compress */
int32_t cpu__topk(const cpu__call_t *call);     /* TopK: Values and Indices */
int32_t cpu__unique(const cpu__call_t *call);   /* Unique: Y and 0 to 3 of its index outputs */
int32_t cpu__nms(const cpu__call_t *call);      /* NonMaxSuppression: boxes, scores */
/* cpu_reverse_sequence.c (general entry) */
int32_t cpu__reverse_sequence(const cpu__call_t *call); /* ReverseSequence */
/* cpu_einsum.c (general entries) */
int32_t cpu__einsum(const cpu__call_t *call); /* Einsum, 1 to 3 inputs */
/* cpu_tfidf.c (general entries) */
int32_t cpu__tfidf(const cpu__call_t *call); /* TfIdfVectorizer */
/* cpu_resize.c (group g-resize; general entries) */
int32_t cpu__resize(const cpu__call_t *call);      /* Resize */
int32_t cpu__resize_grad(const cpu__call_t *call); /* ResizeGrad */
int32_t cpu__grid_sample(const cpu__call_t *call); /* GridSample */
/* g-dtypes: the dtype gaps (cpu_cast.c, cpu_dtypes.c) */
/** A Cast loop: @p n elements of @p in converted into @p out (@p params unused). */
typedef void (*cpu__cast_fn)(void *out, const void *in, size_t n, const void *params);
/** The Cast loop from dtype @p from to dtype @p to (any two of the driver's), or NULL. */
cpu__cast_fn cpu__cast_loop(uint32_t from, uint32_t to);
/**
 * The elementwise loops cpu_elementwise.c lacks, for op @p code with inputs of dtypes @p a and
 * @p b: Add Sub Mul Div on i8 i16 u8 u16 u32 u64, Min Max Mod (@p variant: fmod) on f16 and
 * bf16, Pow with any exponent dtype, GreaterOrEqual and LessOrEqual on every number dtype.
 * NULL when there is none.
 */
cpu__row_fn cpu__dtypes_binary_row(uint32_t code, uint32_t a, uint32_t b, int64_t variant);
/* General entries: cpu_eye_like.c, cpu_batch_norm_train.c, cpu_random.c */
int32_t cpu__eye_like(const cpu__call_t *call);         /* EyeLike */
int32_t cpu__batch_norm_train(const cpu__call_t *call); /* BatchNormalization, training_mode 1 */
/* Dropout (training_mode 1), Bernoulli, RandomUniformLike, RandomNormalLike: per-node state, a
 * random stream (cpu_random.c) */
int32_t cpu__random(const cpu__call_t *call);
int32_t cpu__random_create(ses_drv_device_t *device, const ses_drv_node_t *node, void **out_state);
void cpu__random_destroy(ses_drv_device_t *device, void *state);

#endif /* SES_CPU_INTERNAL_H */
