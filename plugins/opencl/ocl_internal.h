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

/*
 * Kernels of the device program, X(ID, name in ocl_kernels.cl): created at open into
 * ses_drv_device.kernels[OCL_K_ID] (ocl_driver.c).
 */
#define OCL_KERNELS(X)                                                                      \
    X(UNARY, "unary_f32") X(BINARY, "binary_f32") X(COMPARE, "compare_f32")                 \
    X(WHERE1, "where1") X(WHERE4, "where4") X(WHERE8, "where8") X(STRIDED1, "strided1")     \
    X(STRIDED2, "strided2") X(STRIDED4, "strided4") X(STRIDED8, "strided8")                 \
    X(REDUCE, "reduce_f32") X(SOFTMAX, "softmax_f32") X(OPTIM, "optim_f32")                 \
    X(ARGMAX, "argmax_f32") X(SCE, "sce_f32") X(SCE_GRAD, "sce_grad_f32")                   \
    X(GATHER1, "gather1") X(GATHER2, "gather2") X(GATHER4, "gather4") X(GATHER8, "gather8") \
    X(CAST_F32_I32, "cast_f32_i32") X(CAST_F32_I64, "cast_f32_i64")                         \
    X(CAST_F32_U8, "cast_f32_u8") X(CAST_F32_BOOL, "cast_f32_bool")                         \
    X(CAST_I32_F32, "cast_i32_f32") X(CAST_I64_F32, "cast_i64_f32")                         \
    X(CAST_U8_F32, "cast_u8_f32") X(CAST_BOOL_F32, "cast_bool_f32")

/*
 * More kernels of the same program, X(ID, name), created by ocl__make_table (ocl_table.c) into
 * ses_drv_device.xkernels[OCL_X_ID] and released by ocl__free_table. Those of
 * OCL_XKERNELS_FP64 exist only on devices with cl_khr_fp64 (the source compiles them only
 * there); their slots stay NULL elsewhere.
 */
#define OCL_XKERNELS(X)                                                                    \
    X(COMPARE_I32, "compare_i32") X(COMPARE_I64, "compare_i64") X(COMPARE_U8, "compare_u8") \
    X(IM2COL, "im2col_f32") X(COL2IM, "col2im_f32") X(CHANNEL_FILL, "channel_fill_f32")     \
    X(POOL, "pool_f32") X(POOL_GRAD, "pool_grad_f32") X(BATCH_NORM, "batch_norm_f32")       \
    X(PAD4, "pad4") X(PAD8, "pad8") X(CLIP_F32, "clip_f32") X(CLIP_I32, "clip_i32")         \
    X(CLIP_I64, "clip_i64") X(PAD_GRAD, "pad_grad_f32")
#define OCL_XKERNELS_FP64(X)                                                                  \
    X(CAST_F32_F64, "cast_f32_f64") X(CAST_F64_F32, "cast_f64_f32") X(CLIP_F64, "clip_f64")   \
    X(BATCH_NORM_F64, "batch_norm_f64") X(IM2COL_F64, "im2col_f64")                           \
    X(COL2IM_F64, "col2im_f64") X(CHANNEL_FILL_F64, "channel_fill_f64")                       \
    X(POOL_F64, "pool_f64") X(POOL_GRAD_F64, "pool_grad_f64")                                 \
    X(PAD_GRAD_F64, "pad_grad_f64") X(COMPARE_F64, "compare_f64")

#define OCL_K_ENUM_(ID, NAME) OCL_K_##ID,
#define OCL_X_ENUM_(ID, NAME) OCL_X_##ID,
/* A kernel's name, for the name tables built from the lists above. */
#define OCL_KERNEL_NAME_(ID, NAME) NAME,
enum { OCL_KERNELS(OCL_K_ENUM_) OCL_K_COUNT };
enum {
    OCL_XKERNELS(OCL_X_ENUM_) OCL_X_FP64_FIRST, /* the kernels from here on need cl_khr_fp64 */
    OCL_X_FP64_BEFORE_ = OCL_X_FP64_FIRST - 1,
    OCL_XKERNELS_FP64(OCL_X_ENUM_) OCL_X_COUNT
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
