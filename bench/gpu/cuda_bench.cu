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

int main(int argc, char **argv) {
    int reps = 10;
    if (argc < 2)
        die("usage: cuda-bench PATH/ses_cuda.so [--reps N]");
    if (argc >= 4 && strcmp(argv[2], "--reps") == 0)
        reps = atoi(argv[3]) > 0 ? atoi(argv[3]) : 10;
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
    bench_gemm(0, reps, s, h);
    bench_gemm(1, reps, s, h);
    bench_chain(reps * 10, s);
    cublasDestroy(h);
    api->stream_destroy(dev, s);
    api->close_device(dev);
    api->close(drv);
    return 0;
}
