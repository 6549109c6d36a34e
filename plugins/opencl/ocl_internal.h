/*
 * The OpenCL driver's internal declarations, shared by ocl_driver.c (instances, devices, memory,
 * the program cache) and the op families (ocl_ops.h: the kernel table and its launches).
 */
#ifndef SES_OCL_INTERNAL_H
#define SES_OCL_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
/* clCreateCommandQueue: the 1.2 call, so that 1.2 platforms work too. */
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <pthread.h>
#include <stdint.h>

#include <CL/cl.h>
#include <session/driver.h>
#include <session/driver_util.h>

#define OCL_NAME "opencl"
#define OCL_MAX_RANK 8
#define OCL_ALIGNMENT 64u

#if defined(__GNUC__)
#define OCL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OCL_PRINTF(f, a)
#endif

/* Kernels of the device program, by index into ses_drv_device.kernels. */
enum {
    OCL_K_UNARY,
    OCL_K_BINARY,
    OCL_K_COMPARE,
    OCL_K_WHERE1,
    OCL_K_WHERE4,
    OCL_K_WHERE8,
    OCL_K_STRIDED1,
    OCL_K_STRIDED2,
    OCL_K_STRIDED4,
    OCL_K_STRIDED8,
    OCL_K_REDUCE,
    OCL_K_SOFTMAX,
    OCL_K_OPTIM,
    OCL_K_ARGMAX,
    OCL_K_SCE,
    OCL_K_SCE_GRAD,
    OCL_K_GATHER1,
    OCL_K_GATHER2,
    OCL_K_GATHER4,
    OCL_K_GATHER8,
    OCL_K_CAST_F32_I32,
    OCL_K_CAST_F32_I64,
    OCL_K_CAST_F32_U8,
    OCL_K_CAST_F32_BOOL,
    OCL_K_CAST_I32_F32,
    OCL_K_CAST_I64_F32,
    OCL_K_CAST_U8_F32,
    OCL_K_CAST_BOOL_F32,
    OCL_K_COUNT
};

/*
 * More kernels of the same program, created by ocl__make_table (ocl_table.c) into
 * ses_drv_device.xkernels and released by ocl__free_table. The f64 ones exist only on devices
 * with cl_khr_fp64 (the source compiles them only there); their slots stay NULL elsewhere.
 */
enum {
    OCL_X_COMPARE_I32,
    OCL_X_COMPARE_I64,
    OCL_X_COMPARE_U8,
    OCL_X_IM2COL,
    OCL_X_COL2IM,
    OCL_X_CHANNEL_FILL,
    OCL_X_POOL,
    OCL_X_POOL_GRAD,
    OCL_X_BATCH_NORM,
    OCL_X_PAD4,
    OCL_X_PAD8,
    OCL_X_CLIP_F32,
    OCL_X_CLIP_I32,
    OCL_X_CLIP_I64,
    OCL_X_PAD_GRAD,
    OCL_X_FP64_FIRST, /* the kernels below need cl_khr_fp64 */
    OCL_X_CAST_F32_F64 = OCL_X_FP64_FIRST,
    OCL_X_CAST_F64_F32,
    OCL_X_CLIP_F64,
    OCL_X_BATCH_NORM_F64,
    OCL_X_IM2COL_F64,
    OCL_X_COL2IM_F64,
    OCL_X_CHANNEL_FILL_F64,
    OCL_X_POOL_F64,
    OCL_X_POOL_GRAD_F64,
    OCL_X_PAD_GRAD_F64,
    OCL_X_COMPARE_F64,
    OCL_X_COUNT
};

/* What one platform device is, found at open. */
typedef struct ocl_devinfo {
    cl_platform_id platform;
    cl_device_id id;
    uint32_t kind;
    char name[256];
    char stable_id[600];
    char cache_key[1024]; /* platform, device, driver version: what a cached binary depends on */
    uint64_t memory_bytes;
    uint64_t max_alloc;
    int fp16;
    int correct_div_sqrt;
} ocl_devinfo_t;

struct ses_drv_driver {
    const ses_drv_host_t *host;
    ses_drv_host_ctx_t *ctx;
    uint32_t n_devices;
    ocl_devinfo_t *devs;
};

struct ses_drv_device {
    ses_drv_driver_t *driver;
    const ocl_devinfo_t *info;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernels[OCL_K_COUNT];
    cl_kernel xkernels[OCL_X_COUNT]; /* ocl_table.c's; NULL where the device lacks them */
    int fp64;                        /* the device has cl_khr_fp64 */
    /* cl_kernel arguments are shared state: one launch sets and enqueues at a time. */
    pthread_mutex_t lock;
    const ses_drv_kernel_t *table;
    uint32_t n_table;
};

struct ses_drv_buffer {
    cl_mem mem;
    uint64_t size;
};

/* The OpenCL name of an error code: "CL_OUT_OF_RESOURCES". */
const char *ocl__error_name(cl_int err);

int32_t ocl__fail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx, int32_t code,
                  const char *format, ...) OCL_PRINTF(4, 5);

#define OCL_DEVICE_FAIL(device, code, ...) \
    ocl__fail((device)->driver->host, (device)->driver->ctx, (code), __VA_ARGS__)

/* The OpenCL C source of every kernel, one string per line (ocl_source.c, generated from
 * ocl_kernels.cl; a single literal would exceed what ISO C compilers must accept). */
extern const char *const ocl__kernel_source[];
extern const unsigned ocl__kernel_source_count;

/* Builds the device's kernel table (ocl_table.c); frees it with ocl__free_table. */
int32_t ocl__make_table(ses_drv_device_t *device);
void ocl__free_table(ses_drv_device_t *device);

#endif
