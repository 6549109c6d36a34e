/*
 * The CUDA driver's objects, shared by cuda_driver.c (driver, devices, memory, copies, streams)
 * and the op families (cuda_ops.h, cuda_table.c). C only; links cudart and cuBLAS, never libcuda.
 */
#ifndef SES_CUDA_PRIVATE_H
#define SES_CUDA_PRIVATE_H

#include <pthread.h>
#include <session/driver.h>
#include <session/driver_util.h>
#include <stdint.h>

#include "cuda_cudnn.h"
#include "cuda_internal.h"

#if defined(__GNUC__)
#define CUDA_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CUDA_PRINTF(f, a)
#endif

#define CUDA_NAME "cuda"
/* Every allocation is aligned to this; cudaMalloc gives 256. */
#define CUDA_ALIGNMENT 256u

/* What open found about one GPU. */
typedef struct cuda_gpu {
    char name[256];     /* "NVIDIA H100 80GB HBM3 (sm_90, GPU-…)" */
    char desc[1024];    /* name, then how Conv and the pools run: "…, cudnn 9.19.0" */
    char stable_id[64]; /* "pci:0000:65:00.0" */
    uint64_t total;
    int major, minor; /* compute capability */
} cuda_gpu_t;

struct ses_drv_driver {
    const ses_drv_host_t *host;
    ses_drv_host_ctx_t *ctx;
    uint32_t n_gpus;
    cuda_gpu_t *gpus;
    /* cuDNN, dlopen-ed at open (cuda_cudnn.h); cudnn.lib NULL when absent, cudnn_note says why
     * ("cudnn 9.19.0" or "no cudnn (…)"), for the device descriptions and the debug log. */
    cuda_cudnn_t cudnn;
    char cudnn_note[640];
};

/* A cached block of device memory, free for reuse (the caching allocator's free list). */
typedef struct cuda_block {
    struct cuda_block *next;
    void *ptr;
    uint64_t capacity;
} cuda_block_t;

struct ses_drv_device {
    ses_drv_driver_t *driver;
    int ordinal;
    void *stream;         /* cudaStream_t: the device's own stream for launches without one */
    void *cublas;         /* cublasHandle_t, NULL when cuBLAS could not start */
    int allow_tf32;       /* option driver.cuda.allow_tf32=1 */
    pthread_mutex_t lock; /* guards the cache and the cuBLAS handle's stream */
    cuda_block_t *cache;  /* freed device blocks kept for reuse */
    /* The loss kernels report a bad label here; check_lock serializes its users. */
    unsigned long long *bad_dev, *bad_host;
    pthread_mutex_t check_lock;
    uint64_t cached_bytes;
    /* cuBLAS workspaces, one per stream (the device's own included), so that a GEMM never
     * allocates (CUDA Graph capture) and GEMMs on two streams never share one; guarded by
     * lock. cublasSetStream resets the handle's workspace, so each GEMM sets it after. */
    struct cuda_workspace {
        void *stream; /* cudaStream_t */
        void *ptr;
        uint64_t bytes;
    } *workspaces;
    uint32_t n_workspaces;
    /* cuDNN's handle on this device, made at the first Conv or pool compiled here (NULL: none,
     * or cudnnCreate failed, see cudnn_tried); guarded by cudnn_lock, which also serializes
     * cudnnSetStream with the call that follows it. */
    void *cudnn;
    int cudnn_tried;
    pthread_mutex_t cudnn_lock;
};

struct ses_drv_buffer {
    void *ptr;         /* device or pinned host address */
    uint64_t size;     /* bytes asked */
    uint64_t capacity; /* bytes of the block (size rounded up) */
    uint32_t mem_kind; /* SES_DRV_MEM_*, or CUDA_MEM_IMPORTED */
};

/* A buffer made by import_native: the memory is the caller's, free releases only the handle. */
#define CUDA_MEM_IMPORTED 0xffffffffu

int32_t cuda__fail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx, int32_t code,
                   const char *format, ...) CUDA_PRINTF(4, 5);

#define CUDA_DEVICE_FAIL(device, code, ...) \
    cuda__fail((device)->driver->host, (device)->driver->ctx, (code), __VA_ARGS__)

/* Makes @p device current on the calling thread; a message and code when that fails. */
int32_t cuda__use(ses_drv_device_t *device, const char *what);

/* The cuBLAS workspace of @p stream (a cudaStream_t); call with device->lock held. Returns 0 and
 * leaves *ptr NULL when the stream has none (cuBLAS then uses its default pool). */
int cuda__stream_workspace(ses_drv_device_t *device, void *stream, void **ptr, uint64_t *bytes);

/* The device's cuDNN handle, made on first use; NULL without cuDNN (the reason is logged once).
 * Call with the device current. */
void *cuda__cudnn_handle(ses_drv_device_t *device);

/* Logs @p message at @p level (SES_DRV_LOG_*) when the host takes logs. */
void cuda__log(ses_drv_driver_t *driver, uint32_t level, const char *format, ...)
    CUDA_PRINTF(3, 4);

/* The kernel table (cuda_table.c). */
int32_t cuda__get_kernels(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                          uint32_t *out_count, uint32_t *out_stride);

#endif /* SES_CUDA_PRIVATE_H */
