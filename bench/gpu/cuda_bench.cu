/*
 * cuda-bench: the CUDA driver's kernels through the driver ABI, side by side with the same work
 * done directly in CUDA, in one run. Built and run by bench/gpu/run.sh (nvcc, on a GPU machine).
 *
 *   cuda-bench PATH/ses_cuda.so [--reps N]
 *
 * Prints:
 *   bench: gemm4096_f32_driver_tflops / _cublas_tflops / _vs_cublas   MatMul 4096^3 f32
 *   bench: gemm4096_bf16_driver_tflops / ...                           the same in bf16
 *   bench: add_chain256_driver_us_per_node           256 dependent tiny Adds, one compute each
 *   bench: add_chain256_driver_graph_us_per_node     the same 256 computes captured once into a
 *                                                    CUDA Graph and replayed
 *   bench: add_chain256_raw_launch_us_per_node       a raw chain of 256 kernel launches
 * The driver is used exactly as libsession uses it: negotiate, open, alloc, compute with a stream.
 * TF32 is off unless SESSION_DRIVER_CUDA_ALLOW_TF32=1 (then cuBLAS raw uses it too).
 *
 *   cuda-bench PATH/ses_cuda.so --train-gemms 64,512,4096 [--reps N]
 *
 * prints instead the GPU reference for session-train-bench --device gpu:0 (the seeds' network,
 * 784-256-10), per batch B: the GEMMs of one training step as raw cublasSgemm calls on a stream
 * of the driver's (stream_create, as a session's), after a warm-up, timed over blocks of steps:
 *   bench: train_gemm5_b<B>_gpu_0_us      the 5 GEMMs of a step (forward 2, backward 3), then one
 *                                         stream synchronize per step, as a step waits once for
 *                                         its loss: the step's lower bound for its math
 *   bench: train_gemm6_b<B>_gpu_0_us      the same plus the input's gradient (not needed)
 *   bench: train_gemm5_b<B>_gpu_0_device_us
 *                                         the 5 GEMMs' device time alone (CUDA events around a
 *                                         block of steps with no host wait inside)
 *   bench: train_floor_b<B>_gpu_0_us      what any step must do: the batch (B x 784 f32 and
 *                                         B int64 labels) copied in from pageable host memory,
 *                                         the 5 GEMMs, the loss (4 bytes) copied out, one wait
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <session/driver.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "cuda-bench: %s\n", what);
    exit(1);
}

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "cuda-bench: %s: %s\n", #x, cudaGetErrorString(e_));                \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

/* ---- a minimal host ------------------------------------------------------------------------ */

static void h_log(ses_drv_host_ctx_t *, uint32_t, const char *) {}
static int32_t h_log_enabled(ses_drv_host_ctx_t *, uint32_t) {
    return 0;
}
static int32_t h_error(ses_drv_host_ctx_t *, int32_t code, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    fprintf(stderr, "cuda-bench: driver error %d: ", code);
    vfprintf(stderr, format, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}
static int32_t h_get_option(ses_drv_host_ctx_t *, const char *key, char *buffer,
                            uint64_t buffer_size, uint64_t *out_size) {
    const char *v = strcmp(key, "driver.cuda.allow_tf32") == 0
                        ? getenv("SESSION_DRIVER_CUDA_ALLOW_TF32")
                        : NULL;
    if (!v)
        return SES_DRV_NOT_FOUND;
    *out_size = strlen(v) + 1;
    if (*out_size > buffer_size)
        return SES_DRV_INVALID_ARGUMENT;
    memcpy(buffer, v, *out_size);
    return SES_DRV_OK;
}
static int32_t h_should_abort(ses_drv_host_ctx_t *) {
    return 0;
}
static int32_t no_attr(const ses_drv_node_t *, const char *, uint32_t, uint64_t *, void *) {
    return SES_DRV_NOT_FOUND;
}

static const ses_drv_api_t *api;
static ses_drv_device_t *dev;
static const ses_drv_kernel_t *kernels;
static uint32_t n_kernels, stride;

static const ses_drv_kernel_t *find(const char *op, const char *sig) {
    for (uint32_t i = 0; i < n_kernels; i++) {
        const ses_drv_kernel_t *k =
            (const ses_drv_kernel_t *)(const void *)((const char *)kernels + (size_t)i * stride);
        if (strcmp(k->op, op) == 0 && strcmp(k->signature, sig) == 0)
            return k;
    }
    die("kernel not in the table");
    return NULL;
}

static ses_drv_tensor_desc_t desc(uint32_t dtype, uint32_t rank, const int64_t *dims) {
    ses_drv_tensor_desc_t t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.dtype = dtype;
    t.rank = rank;
    t.dims = dims;
    return t;
}

/* One 1-output node of @p n_in inputs, buffers at offset 0. */
typedef struct call {
    ses_drv_tensor_desc_t in[2], out;
    ses_drv_node_t node;
    ses_drv_buffer_t *bin[2], *bout[1];
    uint64_t zero[2];
    ses_drv_launch_t launch;
} call_t;

static void make_call(call_t *c, const char *op, uint32_t n_in, ses_drv_stream_t *s) {
    memset(&c->node, 0, sizeof c->node);
    c->node.struct_size = sizeof c->node;
    c->node.op = op;
    c->node.name = op;
    c->node.n_inputs = n_in;
    c->node.n_outputs = 1;
    c->node.inputs = c->in;
    c->node.outputs = &c->out;
    c->node.attr = no_attr;
    c->zero[0] = c->zero[1] = 0;
    memset(&c->launch, 0, sizeof c->launch);
    c->launch.struct_size = sizeof c->launch;
    c->launch.node = &c->node;
    c->launch.stream = s;
    c->launch.inputs = c->bin;
    c->launch.input_offsets = c->zero;
    c->launch.outputs = c->bout;
    c->launch.output_offsets = c->zero;
}

/* ---- GEMM ---------------------------------------------------------------------------------- */

static void bench_gemm(int bf16, int reps, ses_drv_stream_t *s, cublasHandle_t h) {
    const int64_t n = 4096;
    const int64_t dims[2] = {n, n};
    const uint32_t dt = bf16 ? SES_DRV_DTYPE_BF16 : SES_DRV_DTYPE_F32;
    const uint64_t bytes = (uint64_t)(n * n) * (bf16 ? 2 : 4);
    const ses_drv_kernel_t *k = find("MatMul", bf16 ? "bf16,bf16->bf16" : "f32,f32->f32");
    call_t c;
    cudaStream_t cs = (cudaStream_t)(void *)s;
    const char *name = bf16 ? "bf16" : "f32";

    make_call(&c, "MatMul", 2, s);
    c.in[0] = c.in[1] = c.out = desc(dt, 2, dims);
    for (int i = 0; i < 2; i++)
        if (api->alloc(dev, bytes, SES_DRV_MEM_DEVICE, &c.bin[i]) != SES_DRV_OK)
            die("alloc");
    if (api->alloc(dev, bytes, SES_DRV_MEM_DEVICE, &c.bout[0]) != SES_DRV_OK)
        die("alloc");
    /* Inputs: zero bytes are fine for timing (no denormals, no NaN). */
    void *ha = calloc(1, bytes);
    api->copy_h2d(dev, NULL, ha, c.bin[0], 0, bytes);
    api->copy_h2d(dev, NULL, ha, c.bin[1], 0, bytes);
    free(ha);

    const double flop = 2.0 * (double)n * (double)n * (double)n;
    double best_drv = 1e30, best_raw = 1e30;
    /* Raw cuBLAS needs the device addresses: copy them out through a d2d of a known pattern
     * would be roundabout, so it gets its own buffers of the same size. */
    void *A, *B, *C;
    CK(cudaMalloc(&A, bytes));
    CK(cudaMalloc(&B, bytes));
    CK(cudaMalloc(&C, bytes));
    CK(cudaMemset(A, 0, bytes));
    CK(cudaMemset(B, 0, bytes));
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType t = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    const char *tf32 = getenv("SESSION_DRIVER_CUDA_ALLOW_TF32");
    const cublasComputeType_t ct =
        !bf16 && tf32 && strcmp(tf32, "1") == 0 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasSetStream(h, cs);
    for (int r = 0; r < reps + 1; r++) {
        /* Alternate the two so that clocks and temperature treat them alike. */
        CK(cudaStreamSynchronize(cs));
        double t0 = now();
        if (k->compute(dev, NULL, &c.launch) != SES_DRV_OK)
            die("MatMul compute");
        CK(cudaStreamSynchronize(cs));
        double t1 = now();
        if (cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, B, t, (int)n,
                         A, t, (int)n, &zero, C, t, (int)n, ct,
                         CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
            die("cublasGemmEx");
        CK(cudaStreamSynchronize(cs));
        double t2 = now();
        if (r > 0) { /* the first is warm-up */
            best_drv = t1 - t0 < best_drv ? t1 - t0 : best_drv;
            best_raw = t2 - t1 < best_raw ? t2 - t1 : best_raw;
        }
    }
    printf("bench: gemm4096_%s_driver_tflops: %.2f TFLOP/s\n", name, flop / best_drv * 1e-12);
    printf("bench: gemm4096_%s_cublas_tflops: %.2f TFLOP/s\n", name, flop / best_raw * 1e-12);
    printf("bench: gemm4096_%s_driver_vs_cublas: %.3f x\n", name, best_raw / best_drv);
    cudaFree(A);
    cudaFree(B);
    cudaFree(C);
    for (int i = 0; i < 2; i++)
        api->free(dev, c.bin[i]);
    api->free(dev, c.bout[0]);
}

/* ---- a chain of tiny Adds ------------------------------------------------------------------ */

__global__ void raw_add(const float *a, const float *b, float *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        o[i] = a[i] + b[i];
}

static void bench_chain(int reps, ses_drv_stream_t *s) {
    enum { N = 256, LEN = 256 };
    const int64_t dims[1] = {N};
    const ses_drv_kernel_t *k = find("Add", "f32,f32->f32");
    cudaStream_t cs = (cudaStream_t)(void *)s;
    ses_drv_buffer_t *x[LEN + 1], *y;
    static call_t calls[LEN];

    for (int i = 0; i <= LEN; i++)
        if (api->alloc(dev, N * 4, SES_DRV_MEM_DEVICE, &x[i]) != SES_DRV_OK)
            die("alloc");
    if (api->alloc(dev, N * 4, SES_DRV_MEM_DEVICE, &y) != SES_DRV_OK)
        die("alloc");
    for (int i = 0; i < LEN; i++) {
        make_call(&calls[i], "Add", 2, s);
        calls[i].in[0] = calls[i].in[1] = calls[i].out = desc(SES_DRV_DTYPE_F32, 1, dims);
        calls[i].bin[0] = x[i];
        calls[i].bin[1] = y;
        calls[i].bout[0] = x[i + 1];
    }
    /* Plain: one compute per node, as a plan's run does it. */
    double best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        CK(cudaStreamSynchronize(cs));
        double t0 = now();
        for (int i = 0; i < LEN; i++)
            if (k->compute(dev, NULL, &calls[i].launch) != SES_DRV_OK)
                die("Add compute");
        CK(cudaStreamSynchronize(cs));
        if (r > 0 && now() - t0 < best)
            best = now() - t0;
    }
    printf("bench: add_chain256_driver_us_per_node: %.2f us\n", best / LEN * 1e6);

    /* Captured once into a CUDA Graph, replayed: where a plan-level capture would take us. */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < LEN; i++)
        if (k->compute(dev, NULL, &calls[i].launch) != SES_DRV_OK)
            die("Add compute under capture");
    CK(cudaStreamEndCapture(cs, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        CK(cudaStreamSynchronize(cs));
        double t0 = now();
        CK(cudaGraphLaunch(exec, cs));
        CK(cudaStreamSynchronize(cs));
        if (r > 0 && now() - t0 < best)
            best = now() - t0;
    }
    printf("bench: add_chain256_driver_graph_us_per_node: %.2f us\n", best / LEN * 1e6);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);

    /* Raw: the same chain as plain kernel launches on separate buffers. */
    float *rx, *ry;
    CK(cudaMalloc(&rx, (size_t)(LEN + 1) * N * 4));
    CK(cudaMalloc(&ry, N * 4));
    best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        CK(cudaStreamSynchronize(cs));
        double t0 = now();
        for (int i = 0; i < LEN; i++)
            raw_add<<<1, N, 0, cs>>>(rx + (size_t)i * N, ry, rx + (size_t)(i + 1) * N, N);
        CK(cudaStreamSynchronize(cs));
        if (r > 0 && now() - t0 < best)
            best = now() - t0;
    }
    printf("bench: add_chain256_raw_launch_us_per_node: %.2f us\n", best / LEN * 1e6);
    cudaFree(rx);
    cudaFree(ry);
    for (int i = 0; i <= LEN; i++)
        api->free(dev, x[i]);
    api->free(dev, y);
}

/* ---- the training step's GEMMs (reference for session-train-bench --device gpu:0) ----------- */

enum { PIXELS = 784, HIDDEN = 256, CLASSES = 10 };

/* Row-major C[m,n] = op(A)[m,k] op(B)[k,n], as cblas_sgemm(CblasRowMajor, ...) would: cuBLAS is
 * column-major, so it computes C^T = op(B)^T op(A)^T with the operands swapped. */
static void sgemm_rm(cublasHandle_t h, int ta, int tb, int m, int n, int k, const float *a,
                     int lda, const float *b, int ldb, float *c, int ldc) {
    const float one = 1.0f, zero = 0.0f;
    if (cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                    &one, b, ldb, a, lda, &zero, c, ldc) != CUBLAS_STATUS_SUCCESS)
        die("cublasSgemm");
}

typedef struct train_bufs {
    int b;
    float *x, *w1, *w2, *h, *z2, *dz2, *dw2, *dh, *dz1, *dw1, *dx, *loss;
    long long *labels;
} train_bufs_t;

/* The GEMMs of bench/train_bench.c's gemm_step_run, on the device. */
static void train_gemms(cublasHandle_t hd, const train_bufs_t *g, int with_dx) {
    const int b = g->b;
    sgemm_rm(hd, 0, 0, b, HIDDEN, PIXELS, g->x, PIXELS, g->w1, HIDDEN, g->h, HIDDEN);
    sgemm_rm(hd, 0, 0, b, CLASSES, HIDDEN, g->h, HIDDEN, g->w2, CLASSES, g->z2, CLASSES);
    sgemm_rm(hd, 1, 0, HIDDEN, CLASSES, b, g->h, HIDDEN, g->dz2, CLASSES, g->dw2, CLASSES);
    sgemm_rm(hd, 0, 1, b, HIDDEN, CLASSES, g->dz2, CLASSES, g->w2, CLASSES, g->dh, HIDDEN);
    sgemm_rm(hd, 1, 0, PIXELS, HIDDEN, b, g->x, PIXELS, g->dz1, HIDDEN, g->dw1, HIDDEN);
    if (with_dx)
        sgemm_rm(hd, 0, 1, b, PIXELS, HIDDEN, g->dz1, HIDDEN, g->w1, HIDDEN, g->dx, PIXELS);
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void bench_train_gemms(int b, int reps, ses_drv_stream_t *s, cublasHandle_t h) {
    enum { MAX_REPS = 101 };
    cudaStream_t cs = (cudaStream_t)(void *)s;
    const int steps = b <= 64 ? 200 : 60; /* as session-train-bench */
    const size_t xbytes = (size_t)b * PIXELS * sizeof(float), lbytes = (size_t)b * 8;
    train_bufs_t g;
    float **fs[] = {&g.x, &g.w1, &g.w2, &g.h, &g.z2, &g.dz2, &g.dw2, &g.dh, &g.dz1, &g.dw1, &g.dx};
    const size_t counts[] = {(size_t)b * PIXELS, (size_t)PIXELS * HIDDEN, (size_t)HIDDEN * CLASSES,
                             (size_t)b * HIDDEN,  (size_t)b * CLASSES,      (size_t)b * CLASSES,
                             (size_t)HIDDEN * CLASSES, (size_t)b * HIDDEN, (size_t)b * HIDDEN,
                             (size_t)PIXELS * HIDDEN, (size_t)b * PIXELS};
    double g5[MAX_REPS], g6[MAX_REPS], dev5[MAX_REPS], floor_t[MAX_REPS];
    cudaEvent_t e0, e1;

    if (reps > MAX_REPS)
        reps = MAX_REPS;
    g.b = b;
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
        CK(cudaMalloc((void **)fs[i], counts[i] * sizeof(float)));
        CK(cudaMemsetAsync(*fs[i], 0, counts[i] * sizeof(float), cs)); /* no NaN, no denormals */
    }
    CK(cudaMalloc((void **)&g.loss, sizeof(float)));
    CK(cudaMalloc((void **)&g.labels, lbytes));
    /* The host side of a step's copies: ordinary (pageable) memory, as a fed ses_tensor_t. */
    float *hx = (float *)calloc(1, xbytes), hloss = 0;
    long long *hl = (long long *)calloc(1, lbytes);
    if (!hx || !hl)
        die("out of host memory");
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaStreamSynchronize(cs));

    for (int i = 0; i < 50; i++) { /* warm-up: cuBLAS picks and loads its kernels */
        train_gemms(h, &g, 1);
        CK(cudaStreamSynchronize(cs));
    }
    /* Interleaved blocks, as session-train-bench alternates its step and its GEMMs. */
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int i = 0; i < steps; i++) {
            train_gemms(h, &g, 0);
            CK(cudaStreamSynchronize(cs));
        }
        double t1 = now();
        for (int i = 0; i < steps; i++) {
            train_gemms(h, &g, 1);
            CK(cudaStreamSynchronize(cs));
        }
        double t2 = now();
        for (int i = 0; i < steps; i++) {
            CK(cudaMemcpyAsync(g.x, hx, xbytes, cudaMemcpyHostToDevice, cs));
            CK(cudaMemcpyAsync(g.labels, hl, lbytes, cudaMemcpyHostToDevice, cs));
            train_gemms(h, &g, 0);
            CK(cudaMemcpyAsync(&hloss, g.loss, sizeof hloss, cudaMemcpyDeviceToHost, cs));
            CK(cudaStreamSynchronize(cs));
        }
        double t3 = now();
        CK(cudaEventRecord(e0, cs));
        for (int i = 0; i < steps; i++)
            train_gemms(h, &g, 0);
        CK(cudaEventRecord(e1, cs));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        g5[r] = (t1 - t0) / steps;
        g6[r] = (t2 - t1) / steps;
        floor_t[r] = (t3 - t2) / steps;
        dev5[r] = (double)ms * 1e-3 / steps;
    }
    printf("train GEMMs batch %d on the driver's stream: %d steps x %d reps, medians\n", b, steps,
           reps);
    printf("bench: train_gemm5_b%d_gpu_0_us: %.1f us\n", b, median_of(g5, reps) * 1e6);
    printf("bench: train_gemm6_b%d_gpu_0_us: %.1f us\n", b, median_of(g6, reps) * 1e6);
    printf("bench: train_gemm5_b%d_gpu_0_device_us: %.1f us\n", b, median_of(dev5, reps) * 1e6);
    printf("bench: train_floor_b%d_gpu_0_us: %.1f us\n", b, median_of(floor_t, reps) * 1e6);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
        cudaFree(*fs[i]);
    cudaFree(g.loss);
    cudaFree(g.labels);
    free(hx);
    free(hl);
}

int main(int argc, char **argv) {
    int reps = 10;
    const char *train_batches = NULL;
    if (argc < 2)
        die("usage: cuda-bench PATH/ses_cuda.so [--reps N] [--train-gemms B,B,...]");
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 10;
        else if (strcmp(argv[i], "--train-gemms") == 0)
            train_batches = argv[i + 1];
        else
            die("usage: cuda-bench PATH/ses_cuda.so [--reps N] [--train-gemms B,B,...]");
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        die(dlerror());
    ses_drv_negotiate_fn negotiate = (ses_drv_negotiate_fn)dlsym(lib, SES_DRV_NEGOTIATE_SYMBOL);
    if (!negotiate)
        die("no ses_drv_negotiate");
    static ses_drv_host_t host;
    host.struct_size = sizeof host;
    host.log = h_log;
    host.log_enabled = h_log_enabled;
    host.error = h_error;
    host.get_option = h_get_option;
    host.should_abort = h_should_abort;
    ses_drv_negotiate_t args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.abi_major = SES_DRV_ABI_MAJOR;
    args.host_minor_min = 0;
    args.host_minor_max = SES_DRV_ABI_MINOR;
    args.host = &host;
    if (negotiate(&args) != SES_DRV_OK)
        die("negotiate failed");
    api = args.api;
    ses_drv_driver_t *drv;
    if (api->open(&host, NULL, &drv) != SES_DRV_OK)
        die("open failed: no GPU?");
    if (api->open_device(drv, 0, &dev) != SES_DRV_OK)
        die("open_device failed");
    if (api->get_kernels(dev, &kernels, &n_kernels, &stride) != SES_DRV_OK)
        die("get_kernels failed");
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("bench: gpu: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);

    ses_drv_stream_t *s;
    if (api->stream_create(dev, &s) != SES_DRV_OK)
        die("stream_create");
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
        die("cublasCreate");
    if (train_batches) {
        /* As the driver's own handles: TF32 only when allowed, f32 sums to the end. */
        const char *tf32 = getenv("SESSION_DRIVER_CUDA_ALLOW_TF32");
        cublasSetMathMode(h, (cublasMath_t)((tf32 && strcmp(tf32, "1") == 0
                                                 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                 : CUBLAS_DEFAULT_MATH) |
                                            CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
        cublasSetStream(h, (cudaStream_t)(void *)s);
        for (const char *p = train_batches; *p;) {
            char *end;
            long b = strtol(p, &end, 10);
            if (end == p || b < 1 || b > 1000000 || (*end && *end != ','))
                die("--train-gemms wants batch sizes separated by commas, e.g. 64,512,4096");
            bench_train_gemms((int)b, reps, s, h);
            p = *end ? end + 1 : end;
        }
    } else {
        bench_gemm(0, reps, s, h);
        bench_gemm(1, reps, s, h);
        bench_chain(reps * 10, s);
    }
    cublasDestroy(h);
    api->stream_destroy(dev, s);
    api->close_device(dev);
    api->close(drv);
    return 0;
}
