/*
 * ses_cuda.so: the libsession driver for NVIDIA GPUs, on the CUDA runtime (cudart) and cuBLAS.
 *
 * It never links the driver API library libcuda directly: cudart loads libcuda.so.1 itself, so
 * the module loads on machines without the NVIDIA driver and open answers SES_DRV_UNAVAILABLE
 * with a reason that tells "no driver" from "driver but no GPU".
 *
 * This file: negotiation, the driver and its devices, memory (a caching allocator per device,
 * pinned host memory), copies (synchronous, or enqueued on a stream), streams and events.
 * cuda_table.c has the kernel table, whose entries are in one file per op family (cuda_ops.h);
 * cuda_kernels_*.cu the device code (one file per op family too).
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h> /* vsnprintf and snprintf only: a driver never prints */
#include <stdlib.h>
#include <string.h>

#include "cuda_private.h"

#ifndef SES_CUDA_VERSION
#define SES_CUDA_VERSION "0.0.0"
#endif
#ifndef SES_CUDA_FEATURES
#define SES_CUDA_FEATURES "cudart,cublas"
#endif

/* Blocks are rounded up so that a freed block fits the next request of about its size. */
#define CUDA_SMALL_ROUND (UINT64_C(512))
#define CUDA_LARGE_ROUND (UINT64_C(2) << 20)
#define CUDA_LARGE (UINT64_C(1) << 20)

int32_t cuda__fail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx, int32_t code,
                   const char *format, ...) {
    va_list ap;
    int32_t st;

    va_start(ap, format);
    st = ses_drv_util_vfail(host, ctx, code, format, ap);
    va_end(ap);
    return st;
}

void cuda__log(ses_drv_driver_t *driver, uint32_t level, const char *format, ...) {
    char message[768];
    va_list ap;

    if (!SES_DRV_UTIL_HOST_HAS(driver->host, log))
        return;
    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    driver->host->log(driver->ctx, level, message);
}

int32_t cuda__use(ses_drv_device_t *device, const char *what) {
    cudaError_t e = cudaSetDevice(device->ordinal);
    if (e != cudaSuccess)
        return CUDA_DEVICE_FAIL(device, SES_DRV_UNAVAILABLE, "%s: cudaSetDevice(%d): %s", what,
                                device->ordinal, cudaGetErrorString(e));
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Driver
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_info_t cuda_info = {
    .struct_size = sizeof(ses_drv_info_t),
    .name = CUDA_NAME,
    .vendor = "libsession",
    .version = SES_CUDA_VERSION,
    .build_features = SES_CUDA_FEATURES,
    .opset_version = 1,
    /* cudart keeps threads and state after the last call: never unload it. */
    .flags = 0,
};

/* Describes GPU @p i into @p g; 0 on success. */
static int cuda_describe(int i, cuda_gpu_t *g) {
    struct cudaDeviceProp prop;
    char bus[32] = "";
    const unsigned char *u;

    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess)
        return -1;
    g->major = prop.major;
    g->minor = prop.minor;
    g->total = (uint64_t)prop.totalGlobalMem;
    u = (const unsigned char *)prop.uuid.bytes;
    snprintf(g->name, sizeof g->name,
             "%.200s (sm_%d%d, GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x"
             "%02x)",
             prop.name, prop.major, prop.minor, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
             u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, i) == cudaSuccess) {
        for (char *c = bus; *c; c++)
            if (*c >= 'A' && *c <= 'F')
                *c = (char)(*c - 'A' + 'a');
        snprintf(g->stable_id, sizeof g->stable_id, "pci:%s", bus);
    }
    return 0;
}

/*
 * Loads cuDNN as driver.cuda.cudnn (SESSION_DRIVER_CUDA_CUDNN) says: unset, the loader's search
 * for libcudnn.so.9; a path or a folder; 0/off/none. Never fails: without cuDNN, Conv and
 * ConvGrad use im2col + cuBLAS and the pools their own kernels. Logged at debug level, or as a
 * warning when an explicit setting could not be honoured.
 */
static void cuda_load_cudnn(ses_drv_driver_t *driver) {
    char spec[512] = "", why[512], version[32];
    uint64_t size = 0;
    int32_t rc = SES_DRV_NOT_FOUND;

    if (SES_DRV_UTIL_HOST_HAS(driver->host, get_option))
        rc = driver->host->get_option(driver->ctx, "driver.cuda.cudnn", spec, sizeof spec, &size);
    if (rc != SES_DRV_OK && rc != SES_DRV_NOT_FOUND) {
        snprintf(driver->cudnn_note, sizeof driver->cudnn_note,
                 "no cudnn (driver.cuda.cudnn is longer than %zu bytes); Conv by im2col + cuBLAS",
                 sizeof spec - 1);
        cuda__log(driver, SES_DRV_LOG_WARN, "cuda: %s", driver->cudnn_note);
        return;
    }
    if (rc == SES_DRV_NOT_FOUND)
        spec[0] = '\0';
    if (cuda__cudnn_load(spec, CUDA_CUDNN_DEFAULT_NAME, &driver->cudnn, why, sizeof why) != 0) {
        snprintf(driver->cudnn_note, sizeof driver->cudnn_note,
                 "no cudnn (%s); Conv by im2col + cuBLAS", why);
        /* Not finding cuDNN on the default search is a normal setup; a path that does not work
         * is a mistake worth a warning. */
        cuda__log(driver,
                  spec[0] && strcmp(spec, "0") != 0 && strcmp(spec, "off") != 0 &&
                          strcmp(spec, "none") != 0
                      ? SES_DRV_LOG_WARN
                      : SES_DRV_LOG_DEBUG,
                  "cuda: %s; set driver.cuda.cudnn (SESSION_DRIVER_CUDA_CUDNN) to libcudnn.so.9 "
                  "or its folder to use cuDNN",
                  driver->cudnn_note);
        return;
    }
    cuda__cudnn_version_str(driver->cudnn.version, version, sizeof version);
    snprintf(driver->cudnn_note, sizeof driver->cudnn_note, "cudnn %s", version);
    cuda__log(driver, SES_DRV_LOG_DEBUG,
              "cuda: cuDNN %s loaded from %s; Conv, ConvGrad, MaxPool and AveragePool use it",
              version, driver->cudnn.path);
}

static int32_t cuda_open(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                         ses_drv_driver_t **out_driver) {
    ses_drv_driver_t *driver;
    int driver_version = 0, runtime_version = 0, count = 0;
    cudaError_t e;

    if (!host || host->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort))
        return cuda__fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                          "open: the host table is older than ABI 1.0");
    if (!out_driver)
        return cuda__fail(host, ctx, SES_DRV_INVALID_ARGUMENT, "open: out_driver is NULL");
    *out_driver = NULL;

    /* cudaDriverGetVersion answers 0 when libcuda.so.1 cannot be loaded. */
    cudaRuntimeGetVersion(&runtime_version);
    e = cudaDriverGetVersion(&driver_version);
    if (e != cudaSuccess || driver_version == 0)
        return cuda__fail(host, ctx, SES_DRV_UNAVAILABLE,
                          "the NVIDIA driver (libcuda.so.1) is not installed; the CUDA runtime "
                          "%d.%d needs it to reach a GPU",
                          runtime_version / 1000, runtime_version % 1000 / 10);
    /* Without a device (or with a driver too old for this runtime) the count is not written. */
    e = cudaGetDeviceCount(&count);
    if (e == cudaErrorInsufficientDriver)
        return cuda__fail(host, ctx, SES_DRV_UNAVAILABLE,
                          "the NVIDIA driver (CUDA %d.%d) is older than the CUDA runtime %d.%d "
                          "this driver was built with; update the driver",
                          driver_version / 1000, driver_version % 1000 / 10, runtime_version / 1000,
                          runtime_version % 1000 / 10);
    if (e == cudaErrorNoDevice || (e == cudaSuccess && count <= 0))
        return cuda__fail(host, ctx, SES_DRV_UNAVAILABLE,
                          "no CUDA device found (NVIDIA driver for CUDA %d.%d is installed)",
                          driver_version / 1000, driver_version % 1000 / 10);
    if (e != cudaSuccess)
        return cuda__fail(host, ctx, SES_DRV_UNAVAILABLE, "cudaGetDeviceCount: %s (error %d)",
                          cudaGetErrorString(e), (int)e);

    driver = calloc(1, sizeof *driver);
    if (driver)
        driver->gpus = calloc((size_t)count, sizeof *driver->gpus);
    if (!driver || !driver->gpus) {
        free(driver);
        return cuda__fail(host, ctx, SES_DRV_OUT_OF_MEMORY, "open: out of host memory");
    }
    driver->host = host;
    driver->ctx = ctx;
    cuda_load_cudnn(driver);
    for (int i = 0; i < count; i++) {
        cuda_gpu_t *g = &driver->gpus[driver->n_gpus];
        if (cuda_describe(i, g) == 0) {
            snprintf(g->desc, sizeof g->desc, "%s, %s", g->name, driver->cudnn_note);
            driver->n_gpus++;
        }
    }
    *out_driver = driver;
    return SES_DRV_OK;
}

static void cuda_close(ses_drv_driver_t *driver) {
    if (!driver)
        return;
    cuda__cudnn_unload(&driver->cudnn);
    free(driver->gpus);
    free(driver);
}

static int32_t cuda_enumerate_devices(ses_drv_driver_t *driver, uint32_t *inout_count,
                                      ses_drv_device_desc_t *out_descs) {
    uint32_t n;
    int32_t st;

    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    st = ses_drv_util_enumerate_begin(driver->host, driver->ctx, inout_count, out_descs,
                                      driver->n_gpus, &n);
    if (st != SES_DRV_OK || !out_descs)
        return st;
    for (uint32_t i = 0; i < n; i++) {
        ses_drv_device_desc_t desc;
        const cuda_gpu_t *g = &driver->gpus[i];
        size_t free_b = 0, total_b = 0;

        memset(&desc, 0, sizeof desc);
        if (cudaSetDevice((int)i) == cudaSuccess &&
            cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
            desc.memory_free = (uint64_t)free_b;
        desc.kind = SES_DRV_DEVICE_GPU;
        desc.ordinal = i;
        desc.stable_id = g->stable_id;
        desc.name = g->desc;
        desc.memory_bytes = g->total;
        desc.caps = SES_DRV_CAP_STREAMS | SES_DRV_CAP_EVENTS | SES_DRV_CAP_ASYNC_COPY |
                    SES_DRV_CAP_GRAPHS | SES_DRV_CAP_NATIVE |
                    SES_DRV_CAP_F16 | SES_DRV_CAP_CONCURRENT |
                    (g->major >= 8 ? SES_DRV_CAP_BF16 : 0);
        desc.mem_kinds = (1u << SES_DRV_MEM_DEVICE) | (1u << SES_DRV_MEM_HOST_PINNED);
        desc.alignment = CUDA_ALIGNMENT;
        desc.max_alloc = g->total;
        ses_drv_util_put_device(out_descs, i, &desc);
    }
    *inout_count = n;
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------------------------- */

/* Reads driver.cuda.allow_tf32 (from @p options, the opening session's, or NULL for the host's
 * get_option): 1 allows TF32 tensor cores for f32 GEMMs. */
static int cuda_allow_tf32(ses_drv_driver_t *driver, const ses_drv_options_t *options) {
    char value[16];
    uint64_t size = 0;

    if (ses_drv_util_get_option(driver->host, driver->ctx, options, "driver.cuda.allow_tf32",
                                value, sizeof value, &size) != SES_DRV_OK)
        return 0;
    return strcmp(value, "1") == 0;
}

static void cuda_release_cache(ses_drv_device_t *device) {
    cuda_block_t *b = device->cache;
    while (b) {
        cuda_block_t *next = b->next;
        cudaFree(b->ptr);
        free(b);
        b = next;
    }
    device->cache = NULL;
    device->cached_bytes = 0;
}

/* ---- cuBLAS workspaces ------------------------------------------------------------------ */

/* NVIDIA's recommendation: 32 MiB on Hopper (sm_90) and newer, 4 MiB before. */
static uint64_t cuda_workspace_bytes(const ses_drv_device_t *device) {
    const cuda_gpu_t *g = &device->driver->gpus[device->ordinal];
    return g->major >= 9 ? UINT64_C(32) << 20 : UINT64_C(4) << 20;
}

/* Gives @p stream a workspace; takes device->lock. Returns 0, or -1 (no message recorded:
 * the caller says what failed) when device or host memory ran out. */
static int cuda_workspace_add(ses_drv_device_t *device, void *stream) {
    struct cuda_workspace *grown;
    void *ptr = NULL;
    uint64_t bytes = cuda_workspace_bytes(device);

    if (cudaMalloc(&ptr, (size_t)bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    pthread_mutex_lock(&device->lock);
    grown = realloc(device->workspaces, (device->n_workspaces + 1) * sizeof *grown);
    if (grown) {
        grown[device->n_workspaces].stream = stream;
        grown[device->n_workspaces].ptr = ptr;
        grown[device->n_workspaces].bytes = bytes;
        device->workspaces = grown;
        device->n_workspaces++;
    }
    pthread_mutex_unlock(&device->lock);
    if (!grown) {
        cudaFree(ptr);
        return -1;
    }
    return 0;
}

/* Frees @p stream's workspace (after the stream is synchronized); takes device->lock. */
static void cuda_workspace_remove(ses_drv_device_t *device, void *stream) {
    void *ptr = NULL;

    pthread_mutex_lock(&device->lock);
    for (uint32_t i = 0; i < device->n_workspaces; i++)
        if (device->workspaces[i].stream == stream) {
            ptr = device->workspaces[i].ptr;
            device->workspaces[i] = device->workspaces[--device->n_workspaces];
            break;
        }
    pthread_mutex_unlock(&device->lock);
    if (ptr)
        cudaFree(ptr);
}

int cuda__stream_workspace(ses_drv_device_t *device, void *stream, void **ptr, uint64_t *bytes) {
    *ptr = NULL;
    *bytes = 0;
    for (uint32_t i = 0; i < device->n_workspaces; i++)
        if (device->workspaces[i].stream == stream) {
            *ptr = device->workspaces[i].ptr;
            *bytes = device->workspaces[i].bytes;
            return 1;
        }
    return 0;
}

/* open_device of ABI 1.5 (DRV-87): the session's options in @p options, or NULL from
 * open_device (the host's get_option then answers on the opening thread). */
static int32_t cuda_open_device_with_options(ses_drv_driver_t *driver, uint32_t ordinal,
                                             const ses_drv_options_t *options,
                                             ses_drv_device_t **out_device) {
    static const char *const known[] = {"driver.cuda.cudnn", "driver.cuda.allow_tf32"};
    ses_drv_device_t *device;
    cudaStream_t stream = NULL;
    cudaError_t e;
    int32_t st;

    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_device)
        return cuda__fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                          "open_device: out_device is NULL");
    *out_device = NULL;
    if ((st = ses_drv_util_check_options(driver->host, driver->ctx, options, known, 2)) !=
        SES_DRV_OK)
        return st;
    if (ordinal >= driver->n_gpus)
        return cuda__fail(driver->host, driver->ctx, SES_DRV_NOT_FOUND,
                          "open_device: no cuda device %" PRIu32 "; there are %" PRIu32
                          " (cuda:0 to cuda:%" PRIu32 ")",
                          ordinal, driver->n_gpus, driver->n_gpus ? driver->n_gpus - 1 : 0);
    device = calloc(1, sizeof *device);
    if (!device)
        return cuda__fail(driver->host, driver->ctx, SES_DRV_OUT_OF_MEMORY,
                          "open_device: out of host memory");
    device->driver = driver;
    device->ordinal = (int)ordinal;
    if (pthread_mutex_init(&device->lock, NULL) != 0) {
        free(device);
        return cuda__fail(driver->host, driver->ctx, SES_DRV_INTERNAL,
                          "open_device: pthread_mutex_init failed");
    }
    if ((e = cudaSetDevice((int)ordinal)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess) {
        pthread_mutex_destroy(&device->lock);
        free(device);
        return cuda__fail(driver->host, driver->ctx, SES_DRV_UNAVAILABLE,
                          "open_device: cuda:%" PRIu32 ": %s", ordinal, cudaGetErrorString(e));
    }
    device->stream = stream;
    if ((e = cudaMalloc((void **)&device->bad_dev, sizeof *device->bad_dev)) != cudaSuccess ||
        (e = cudaMallocHost((void **)&device->bad_host, sizeof *device->bad_host)) != cudaSuccess ||
        pthread_mutex_init(&device->check_lock, NULL) != 0) {
        if (device->bad_dev)
            cudaFree(device->bad_dev);
        if (device->bad_host)
            cudaFreeHost(device->bad_host);
        cudaStreamDestroy(stream);
        pthread_mutex_destroy(&device->lock);
        free(device);
        return cuda__fail(driver->host, driver->ctx, SES_DRV_UNAVAILABLE,
                          "open_device: cuda:%" PRIu32 ": %s", ordinal,
                          e != cudaSuccess ? cudaGetErrorString(e) : "pthread_mutex_init failed");
    }
    if (pthread_mutex_init(&device->cudnn_lock, NULL) != 0) {
        cudaFree(device->bad_dev);
        cudaFreeHost(device->bad_host);
        cudaStreamDestroy(stream);
        pthread_mutex_destroy(&device->check_lock);
        pthread_mutex_destroy(&device->lock);
        free(device);
        return cuda__fail(driver->host, driver->ctx, SES_DRV_INTERNAL,
                          "open_device: pthread_mutex_init failed");
    }
    device->allow_tf32 = cuda_allow_tf32(driver, options);
    /* Without its workspace the device still works: cuBLAS falls back to its own pool. */
    if (cuda_workspace_add(device, device->stream) != 0 && SES_DRV_UTIL_HOST_HAS(driver->host, log))
        driver->host->log(driver->ctx, SES_DRV_LOG_WARN,
                          "no memory for a cuBLAS workspace on the device's own stream; cuBLAS "
                          "uses its default pool");
    {
        cublasHandle_t h = NULL;
        if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {
            /* f16 and bf16 GEMMs sum in f32 to the end: cuBLAS may otherwise reduce split-K
             * partial sums in the output's 11 or 8 bits. */
            cublasSetMathMode(h, (cublasMath_t)((device->allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                     : CUBLAS_DEFAULT_MATH) |
                                                CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
            device->cublas = h;
        }
    }
    *out_device = device;
    return SES_DRV_OK;
}

static int32_t cuda_open_device(ses_drv_driver_t *driver, uint32_t ordinal,
                                ses_drv_device_t **out_device) {
    return cuda_open_device_with_options(driver, ordinal, NULL, out_device);
}

static void cuda_close_device(ses_drv_device_t *device) {
    if (!device)
        return;
    cudaSetDevice(device->ordinal);
    if (device->stream)
        cudaStreamSynchronize((cudaStream_t)device->stream);
    if (device->cublas)
        cublasDestroy((cublasHandle_t)device->cublas);
    if (device->cudnn)
        device->driver->cudnn.Destroy(device->cudnn);
    pthread_mutex_destroy(&device->cudnn_lock);
    if (device->stream) {
        cuda_workspace_remove(device, device->stream);
        cudaStreamDestroy((cudaStream_t)device->stream);
    }
    while (device->n_workspaces) /* streams the host did not destroy */
        cuda_workspace_remove(device, device->workspaces[0].stream);
    free(device->workspaces);
    cuda_release_cache(device);
    cudaFree(device->bad_dev);
    cudaFreeHost(device->bad_host);
    pthread_mutex_destroy(&device->check_lock);
    pthread_mutex_destroy(&device->lock);
    free(device);
}

void *cuda__cudnn_handle(ses_drv_device_t *device) {
    const cuda_cudnn_t *c = &device->driver->cudnn;
    void *h;

    if (!c->lib)
        return NULL;
    pthread_mutex_lock(&device->cudnn_lock);
    if (!device->cudnn_tried) {
        cudnn_status_t cs;
        device->cudnn_tried = 1;
        cs = c->Create(&device->cudnn);
        if (cs != CUDNN__STATUS_SUCCESS) {
            device->cudnn = NULL;
            cuda__log(device->driver, SES_DRV_LOG_WARN,
                      "cuda:%d: cudnnCreate failed (%s); Conv by im2col + cuBLAS", device->ordinal,
                      c->GetErrorString(cs));
        }
    }
    h = device->cudnn;
    pthread_mutex_unlock(&device->cudnn_lock);
    return h;
}

static int32_t cuda_memory_info(ses_drv_device_t *device, uint64_t *out_free, uint64_t *out_total) {
    size_t f = 0, t = 0;
    cudaError_t e;
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_free || !out_total)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "memory_info: out_free or out_total is NULL");
    if ((st = cuda__use(device, "memory_info")) != SES_DRV_OK)
        return st;
    if ((e = cudaMemGetInfo(&f, &t)) != cudaSuccess)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INTERNAL, "memory_info: cudaMemGetInfo: %s",
                                cudaGetErrorString(e));
    /* Cached blocks are free for this driver's allocations. */
    pthread_mutex_lock(&device->lock);
    *out_free = (uint64_t)f + device->cached_bytes;
    pthread_mutex_unlock(&device->lock);
    *out_total = (uint64_t)t;
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Memory: device blocks come from a per-device cache of freed blocks (rounded sizes, exact
 * match), so that a plan compiled and freed again, or a repeated eval, does not cudaMalloc.
 * ------------------------------------------------------------------------------------------- */

static uint64_t cuda_round(uint64_t bytes) {
    const uint64_t r = bytes < CUDA_LARGE ? CUDA_SMALL_ROUND : CUDA_LARGE_ROUND;
    return (bytes + r - 1) / r * r;
}

static int32_t cuda_check_range(ses_drv_device_t *device, const char *what,
                                const ses_drv_buffer_t *b, uint64_t offset, uint64_t bytes) {
    if (!b)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "%s: buffer is NULL", what);
    if (offset > b->size || bytes > b->size - offset)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "%s: %" PRIu64 " bytes at offset %" PRIu64
                                " end past the buffer's %" PRIu64 " bytes",
                                what, bytes, offset, b->size);
    return SES_DRV_OK;
}

static int32_t cuda_alloc(ses_drv_device_t *device, uint64_t bytes, uint32_t mem_kind,
                          ses_drv_buffer_t **out_buffer) {
    ses_drv_buffer_t *b;
    cudaError_t e;
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_buffer)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "alloc: out_buffer is NULL");
    *out_buffer = NULL;
    if (bytes == 0)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "alloc: bytes is 0; an allocation needs at least 1 byte");
    if (mem_kind != SES_DRV_MEM_DEVICE && mem_kind != SES_DRV_MEM_HOST_PINNED)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "alloc: memory kind %" PRIu32
                                " is not supported; cuda has 0 (device) and 1 (host pinned)",
                                mem_kind);
    if (bytes > UINT64_MAX - CUDA_LARGE_ROUND)
        return CUDA_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY, "alloc: %" PRIu64 " bytes", bytes);
    if ((st = cuda__use(device, "alloc")) != SES_DRV_OK)
        return st;
    b = calloc(1, sizeof *b);
    if (!b)
        return CUDA_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY, "alloc: out of host memory");
    b->size = bytes;
    b->mem_kind = mem_kind;
    b->capacity = cuda_round(bytes);
    if (mem_kind == SES_DRV_MEM_HOST_PINNED) {
        e = cudaMallocHost(&b->ptr, (size_t)b->capacity);
    } else {
        pthread_mutex_lock(&device->lock);
        for (cuda_block_t **p = &device->cache; *p; p = &(*p)->next)
            if ((*p)->capacity == b->capacity) {
                cuda_block_t *hit = *p;
                *p = hit->next;
                device->cached_bytes -= hit->capacity;
                b->ptr = hit->ptr;
                free(hit);
                break;
            }
        pthread_mutex_unlock(&device->lock);
        e = cudaSuccess;
        if (!b->ptr) {
            e = cudaMalloc(&b->ptr, (size_t)b->capacity);
            if (e == cudaErrorMemoryAllocation) {
                /* Give the cached blocks back and try once more. */
                (void)cudaGetLastError();
                pthread_mutex_lock(&device->lock);
                cuda_release_cache(device);
                pthread_mutex_unlock(&device->lock);
                e = cudaMalloc(&b->ptr, (size_t)b->capacity);
            }
        }
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        free(b);
        return CUDA_DEVICE_FAIL(
            device, e == cudaErrorMemoryAllocation ? SES_DRV_OUT_OF_MEMORY : SES_DRV_INTERNAL,
            "alloc: %" PRIu64 " bytes of %s memory on cuda:%d: %s", bytes,
            mem_kind == SES_DRV_MEM_DEVICE ? "device" : "pinned host", device->ordinal,
            cudaGetErrorString(e));
    }
    *out_buffer = b;
    return SES_DRV_OK;
}

static void cuda_free(ses_drv_device_t *device, ses_drv_buffer_t *buffer) {
    if (!device || !buffer)
        return;
    if (buffer->mem_kind == CUDA_MEM_IMPORTED) {
        /* DRV-84: the memory is the importer's; only the handle goes. */
    } else if (buffer->mem_kind == SES_DRV_MEM_HOST_PINNED) {
        cudaFreeHost(buffer->ptr);
    } else {
        cuda_block_t *blk = malloc(sizeof *blk);
        if (!blk) {
            cudaSetDevice(device->ordinal);
            cudaFree(buffer->ptr);
        } else {
            blk->ptr = buffer->ptr;
            blk->capacity = buffer->capacity;
            pthread_mutex_lock(&device->lock);
            blk->next = device->cache;
            device->cache = blk;
            device->cached_bytes += blk->capacity;
            pthread_mutex_unlock(&device->lock);
        }
    }
    free(buffer);
}

/* DRV-83: a buffer's device pointer, as cudaMalloc gave it (or as import_native took it). */
static int32_t cuda_buffer_native(ses_drv_device_t *device, ses_drv_buffer_t *buffer,
                                  void **out_native) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!buffer || !out_native)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "buffer_native: %s is NULL",
                                !buffer ? "buffer" : "out_native");
    *out_native = buffer->ptr;
    return SES_DRV_OK;
}

/* DRV-84: device memory someone else allocated, wrapped without a copy. */
static int32_t cuda_import_native(ses_drv_device_t *device, void *native, uint64_t bytes,
                                  ses_drv_buffer_t **out_buffer) {
    ses_drv_buffer_t *b;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_buffer)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "import_native: out_buffer is NULL");
    *out_buffer = NULL;
    if (!native || bytes == 0)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "import_native: %s", !native ? "the address is NULL"
                                                             : "bytes is 0");
    b = calloc(1, sizeof *b);
    if (!b)
        return CUDA_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY,
                                "import_native: out of host memory");
    b->ptr = native;
    b->size = bytes;
    b->capacity = bytes;
    b->mem_kind = CUDA_MEM_IMPORTED;
    *out_buffer = b;
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Copies. With a stream they are enqueued (cudaMemcpyAsync); without one, complete on return.
 * ------------------------------------------------------------------------------------------- */

static int32_t cuda_copy(ses_drv_device_t *device, ses_drv_stream_t *stream, const char *what,
                         void *dst, const void *src, uint64_t bytes) {
    cudaError_t e;
    int32_t st;

    if (bytes == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, what)) != SES_DRV_OK)
        return st;
    if (stream) {
        e = cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDefault, (cudaStream_t)stream);
    } else {
        e = cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDefault,
                            (cudaStream_t)device->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize((cudaStream_t)device->stream);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return CUDA_DEVICE_FAIL(device, SES_DRV_INTERNAL, "%s: %" PRIu64 " bytes: %s", what, bytes,
                                cudaGetErrorString(e));
    }
    return SES_DRV_OK;
}

static int32_t cuda_copy_h2d(ses_drv_device_t *device, ses_drv_stream_t *stream, const void *src,
                             ses_drv_buffer_t *dst, uint64_t dst_offset, uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = cuda_check_range(device, "copy_h2d: dst", dst, dst_offset, bytes)) != SES_DRV_OK)
        return st;
    /* DRV-43: 0 bytes inside the buffer (offset == size included) succeed, src NULL or not. */
    if (bytes == 0)
        return SES_DRV_OK;
    if (!src)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "copy_h2d: src is NULL");
    return cuda_copy(device, stream, "copy_h2d", (char *)dst->ptr + dst_offset, src, bytes);
}

static int32_t cuda_copy_d2h(ses_drv_device_t *device, ses_drv_stream_t *stream,
                             ses_drv_buffer_t *src, uint64_t src_offset, void *dst,
                             uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = cuda_check_range(device, "copy_d2h: src", src, src_offset, bytes)) != SES_DRV_OK)
        return st;
    /* DRV-43: 0 bytes inside the buffer (offset == size included) succeed, dst NULL or not. */
    if (bytes == 0)
        return SES_DRV_OK;
    if (!dst)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "copy_d2h: dst is NULL");
    return cuda_copy(device, stream, "copy_d2h", dst, (const char *)src->ptr + src_offset, bytes);
}

static int32_t cuda_copy_d2d(ses_drv_device_t *device, ses_drv_stream_t *stream,
                             ses_drv_buffer_t *src, uint64_t src_offset, ses_drv_buffer_t *dst,
                             uint64_t dst_offset, uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = cuda_check_range(device, "copy_d2d: src", src, src_offset, bytes)) != SES_DRV_OK ||
        (st = cuda_check_range(device, "copy_d2d: dst", dst, dst_offset, bytes)) != SES_DRV_OK)
        return st;
    /* cudaMemcpy does not promise memmove semantics: an overlapping copy within one buffer
     * goes through a temporary block. */
    if (src == dst && src_offset != dst_offset &&
        (src_offset < dst_offset ? dst_offset - src_offset : src_offset - dst_offset) < bytes) {
        ses_drv_buffer_t *tmp = NULL;
        if ((st = cuda_alloc(device, bytes, SES_DRV_MEM_DEVICE, &tmp)) != SES_DRV_OK)
            return st;
        st = cuda_copy(device, stream, "copy_d2d", tmp->ptr, (const char *)src->ptr + src_offset,
                       bytes);
        if (st == SES_DRV_OK)
            st = cuda_copy(device, stream, "copy_d2d", (char *)dst->ptr + dst_offset, tmp->ptr,
                           bytes);
        if (stream && st == SES_DRV_OK)
            cudaStreamSynchronize((cudaStream_t)stream); /* before tmp returns to the cache */
        cuda_free(device, tmp);
        return st;
    }
    return cuda_copy(device, stream, "copy_d2d", (char *)dst->ptr + dst_offset,
                     (const char *)src->ptr + src_offset, bytes);
}

/* ---------------------------------------------------------------------------------------------
 * Streams and events: a ses_drv_stream_t * is a cudaStream_t, a ses_drv_event_t * a cudaEvent_t.
 * ------------------------------------------------------------------------------------------- */

static int32_t cuda_check_call(ses_drv_device_t *device, const char *what, cudaError_t e) {
    if (e == cudaSuccess)
        return SES_DRV_OK;
    (void)cudaGetLastError();
    return CUDA_DEVICE_FAIL(device, SES_DRV_INTERNAL, "%s on cuda:%d: %s", what, device->ordinal,
                            cudaGetErrorString(e));
}

/* What stream_create and event_create (@p what) check first: the device, and the result pointer
 * @p out (named @p out_name); then the device is made current. */
static int32_t cuda_create_start(ses_drv_device_t *device, const char *what, const void *out,
                                 const char *out_name) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "%s: %s is NULL", what, out_name);
    return cuda__use(device, what);
}

static int32_t cuda_stream_create(ses_drv_device_t *device, ses_drv_stream_t **out_stream) {
    cudaStream_t s = NULL;
    int32_t st;

    if (out_stream)
        *out_stream = NULL;
    if ((st = cuda_create_start(device, "stream_create", out_stream, "out_stream")) != SES_DRV_OK)
        return st;
    st = cuda_check_call(device, "cudaStreamCreate",
                         cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (st == SES_DRV_OK && cuda_workspace_add(device, (void *)s) != 0) {
        cudaStreamDestroy(s);
        st = CUDA_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY,
                              "stream_create: cuda:%d has no memory for the stream's %llu-byte "
                              "cuBLAS workspace",
                              device->ordinal, (unsigned long long)cuda_workspace_bytes(device));
    }
    if (st == SES_DRV_OK)
        *out_stream = (ses_drv_stream_t *)(void *)s;
    return st;
}

static void cuda_stream_destroy(ses_drv_device_t *device, ses_drv_stream_t *stream) {
    if (!device || !stream)
        return;
    cudaSetDevice(device->ordinal);
    cudaStreamSynchronize((cudaStream_t)(void *)stream);
    cuda_workspace_remove(device, (void *)stream);
    cudaStreamDestroy((cudaStream_t)(void *)stream);
}

static int32_t cuda_stream_synchronize(ses_drv_device_t *device, ses_drv_stream_t *stream) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!stream)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "stream_synchronize: stream is NULL");
    return cuda_check_call(device, "cudaStreamSynchronize",
                           cudaStreamSynchronize((cudaStream_t)(void *)stream));
}

static int32_t cuda_event_create(ses_drv_device_t *device, ses_drv_event_t **out_event) {
    cudaEvent_t ev = NULL;
    int32_t st;

    if (out_event)
        *out_event = NULL;
    if ((st = cuda_create_start(device, "event_create", out_event, "out_event")) != SES_DRV_OK)
        return st;
    st = cuda_check_call(device, "cudaEventCreate",
                         cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    if (st == SES_DRV_OK)
        *out_event = (ses_drv_event_t *)(void *)ev;
    return st;
}

static void cuda_event_destroy(ses_drv_device_t *device, ses_drv_event_t *event) {
    if (!device || !event)
        return;
    cudaSetDevice(device->ordinal);
    cudaEventDestroy((cudaEvent_t)(void *)event);
}

static int32_t cuda_event_record(ses_drv_device_t *device, ses_drv_event_t *event,
                                 ses_drv_stream_t *stream) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!event || !stream)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "event_record: event or stream is NULL");
    return cuda_check_call(
        device, "cudaEventRecord",
        cudaEventRecord((cudaEvent_t)(void *)event, (cudaStream_t)(void *)stream));
}

static int32_t cuda_stream_wait_event(ses_drv_device_t *device, ses_drv_stream_t *stream,
                                      ses_drv_event_t *event) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!event || !stream)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "stream_wait_event: event or stream is NULL");
    return cuda_check_call(
        device, "cudaStreamWaitEvent",
        cudaStreamWaitEvent((cudaStream_t)(void *)stream, (cudaEvent_t)(void *)event, 0));
}

static int32_t cuda_event_synchronize(ses_drv_device_t *device, ses_drv_event_t *event) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!event)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "event_synchronize: event is NULL");
    return cuda_check_call(device, "cudaEventSynchronize",
                           cudaEventSynchronize((cudaEvent_t)(void *)event));
}

/* ---------------------------------------------------------------------------------------------
 * Graphs (ABI 1.1): stream capture into a cudaGraph_t, instantiated once; a ses_drv_graph_t *
 * is the cudaGraphExec_t. Thread-local capture mode, so that other threads' allocations and
 * synchronizations (other plans, other sessions) are not disturbed by this capture.
 * ------------------------------------------------------------------------------------------- */

static int32_t cuda_capture_begin(ses_drv_device_t *device, ses_drv_stream_t *stream) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!stream)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "capture_begin: stream is NULL");
    if ((st = cuda__use(device, "capture_begin")) != SES_DRV_OK)
        return st;
    return cuda_check_call(device, "cudaStreamBeginCapture",
                           cudaStreamBeginCapture((cudaStream_t)(void *)stream,
                                                  cudaStreamCaptureModeThreadLocal));
}

static int32_t cuda_capture_end(ses_drv_device_t *device, ses_drv_stream_t *stream,
                                ses_drv_graph_t **out_graph) {
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t e;

    if (out_graph)
        *out_graph = NULL;
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!stream)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "capture_end: stream is NULL");
    cudaSetDevice(device->ordinal);
    /* Ends the capture in every case; an invalidated capture gives an error and no graph. */
    e = cudaStreamEndCapture((cudaStream_t)(void *)stream, &graph);
    if (e != cudaSuccess || !out_graph) {
        if (graph)
            cudaGraphDestroy(graph);
        return out_graph ? cuda_check_call(device, "cudaStreamEndCapture", e) : SES_DRV_OK;
    }
    e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess)
        return cuda_check_call(device, "cudaGraphInstantiate", e);
    *out_graph = (ses_drv_graph_t *)(void *)exec;
    return SES_DRV_OK;
}

static int32_t cuda_graph_launch(ses_drv_device_t *device, ses_drv_graph_t *graph,
                                 ses_drv_stream_t *stream) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!graph || !stream)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "graph_launch: graph or stream is NULL");
    if ((st = cuda__use(device, "graph_launch")) != SES_DRV_OK)
        return st;
    return cuda_check_call(
        device, "cudaGraphLaunch",
        cudaGraphLaunch((cudaGraphExec_t)(void *)graph, (cudaStream_t)(void *)stream));
}

static void cuda_graph_destroy(ses_drv_device_t *device, ses_drv_graph_t *graph) {
    if (!device || !graph)
        return;
    cudaSetDevice(device->ordinal);
    cudaGraphExecDestroy((cudaGraphExec_t)(void *)graph);
}

/* ---------------------------------------------------------------------------------------------
 * The function table and negotiation.
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_api_t cuda_api = {
    .struct_size = sizeof(ses_drv_api_t),
    .info = &cuda_info,
    .open = cuda_open,
    .close = cuda_close,
    .enumerate_devices = cuda_enumerate_devices,
    .open_device = cuda_open_device,
    .open_device_with_options = cuda_open_device_with_options,
    .close_device = cuda_close_device,
    .get_kernels = cuda__get_kernels,
    .memory_info = cuda_memory_info,
    .alloc = cuda_alloc,
    .free = cuda_free,
    /* No map/unmap: device memory is not host visible. No import_host_ptr either: registered
     * host memory would make kernels read across PCIe; feeds are copied through copy_h2d. */
    .copy_h2d = cuda_copy_h2d,
    .copy_d2h = cuda_copy_d2h,
    .copy_d2d = cuda_copy_d2d,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .stream_wait_event = cuda_stream_wait_event,
    .event_synchronize = cuda_event_synchronize,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
    .buffer_native = cuda_buffer_native,
    .import_native = cuda_import_native,
};

static const uint32_t cuda_minor_min = 0;

SES_DRV_EXPORT int32_t ses_drv_negotiate(ses_drv_negotiate_t *args) {
    return ses_drv_util_negotiate(args, CUDA_NAME, cuda_minor_min, SES_DRV_ABI_MINOR, &cuda_api);
}
