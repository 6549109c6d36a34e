/*
 * The FPGA (Xilinx XRT) driver's internal declarations, shared by xrt_driver.c (environment
 * checks, instances, devices, memory, copies), xrt_xclbin.c (reading the kernels and their
 * arguments out of an xclbin file) and xrt_kernels.c (the naming rule, the kernel table and
 * runs).
 */
#ifndef SES_XRT_INTERNAL_H
#define SES_XRT_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include <session/driver.h>
#include <session/driver_util.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

#define XRT_NAME "xrt"
/* XRT buffer objects are page-aligned. */
#define XRT_ALIGNMENT 4096u
/* DRV-34: a driver offers at most 4096 devices. */
#define XRT_MAX_DEVICES 4096u
/* Arguments a kernel of the naming rule may have (MatMul has the most: 6). */
#define XRT_MAX_ARGS 8u
/* Kernel names are at most this long in an xclbin's IP_LAYOUT (ip_data.m_name is 64 bytes). */
#define XRT_NAME_MAX 64u

#if defined(__GNUC__)
#define XRT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define XRT_PRINTF(f, a)
#endif

/* ---- the xclbin file (xrt_xclbin.c) ----------------------------------------------------- */

/* One argument of a kernel, as the xclbin's EMBEDDED_METADATA describes it. */
typedef struct xrt_xarg {
    uint32_t qualifier; /* addressQualifier: 0 a scalar, 1 a global pointer, others (streams,
                           local memory) unusable here */
    uint32_t host_size; /* bytes the host passes (4 or 8 for scalars, 8 for pointers); 0 when
                           the metadata has no argument with this index */
} xrt_xarg_t;

/* One kernel of an xclbin: its name and arguments in index order. */
typedef struct xrt_xkernel {
    char name[XRT_NAME_MAX + 1];
    uint32_t n_args;     /* arguments found, up to XRT_MAX_ARGS + 1 (one more means "too many") */
    uint32_t args_found; /* 1 when the metadata had an entry for this kernel */
    xrt_xarg_t args[XRT_MAX_ARGS + 1];
} xrt_xkernel_t;

/*
 * Reads the kernel names (IP_LAYOUT compute units, "kernel:instance") and each kernel's
 * arguments (EMBEDDED_METADATA) of the xclbin at @p path. *out_kernels is malloc'ed, owned by
 * the caller. On failure writes a one-line reason into @p why and returns SES_DRV_NOT_FOUND (no
 * file) or SES_DRV_INVALID_ARGUMENT (not an xclbin, or a damaged one).
 */
int32_t xrt__read_xclbin(const char *path, xrt_xkernel_t **out_kernels, uint32_t *out_count,
                         char *why, size_t why_size);

/* ---- objects (xrt_driver.c) ------------------------------------------------------------- */

/* What enumeration found out about one device. */
typedef struct xrt_devinfo {
    char name[300];
    char stable_id[64];
    uint64_t memory_bytes;
} xrt_devinfo_t;

struct ses_drv_driver {
    const ses_drv_host_t *host;
    ses_drv_host_ctx_t *ctx;
    char mode[16]; /* "" for hardware, else XCL_EMULATION_MODE: "noop", "sw_emu", "hw_emu" */
    uint32_t n_devices;
    xrt_devinfo_t *devs;
};

/* Op classes: they fix a kernel's argument convention (README.md, "Argument convention"). */
enum { XRT_CLASS_MATMUL, XRT_CLASS_BINARY, XRT_CLASS_UNARY };

/* One usable kernel of the loaded xclbin. */
typedef struct xrt_kernel {
    char xrt_name[XRT_NAME_MAX + 1]; /* "ses_matmul_f32" */
    const char *op;                  /* "MatMul" (static) */
    char signature[32];              /* "f32,f32->f32" */
    uint32_t cls;                    /* XRT_CLASS_* */
    uint32_t dtype;                  /* SES_DRV_DTYPE_* of every argument */
    uint32_t elem_size;              /* bytes of one element */
    uint32_t n_buffers, n_scalars;
    uint32_t scalar_size[XRT_MAX_ARGS]; /* bytes of scalar argument i (4 or 8), by scalar index */
    xrtKernelHandle handle;
} xrt_kernel_t;

struct ses_drv_device {
    ses_drv_driver_t *driver;
    uint32_t ordinal;
    xrtDeviceHandle handle;
    int32_t group;     /* memory bank group every buffer goes to (the kernels' common one) */
    char xclbin[4096]; /* the loaded xclbin's path; "" when none */
    uint32_t n_kernels;
    xrt_kernel_t *kernels;
    ses_drv_kernel_t *table; /* n_kernels ABI entries pointing into kernels[] by op/signature */
    _Atomic uint64_t next_buffer_id;
};

struct ses_drv_buffer {
    xrtBufferHandle bo;
    unsigned char *host; /* xrtBOMap: the host side of the buffer object */
    uint64_t size;
    uint64_t id;  /* unique per device handle: tells a new buffer at a reused address */
    void *mapped; /* the pointer map returned, NULL when not mapped */
    uint64_t map_offset, map_bytes;
    uint32_t map_flags;
};

/* ---- helpers (xrt_driver.c) ------------------------------------------------------------- */

/* Attaches a message to @p code through the host and returns @p code. */
int32_t xrt__fail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx, int32_t code,
                  const char *format, ...) XRT_PRINTF(4, 5);
#define XRT_DEVICE_FAIL(device, code, ...) \
    xrt__fail((device)->driver->host, (device)->driver->ctx, (code), __VA_ARGS__)

/* Logs one XRT call at debug level ("XRT call: xrtBOAlloc(...) -> ..."); cheap when debug is off.
 */
void xrt__trace(const ses_drv_driver_t *driver, const char *format, ...) XRT_PRINTF(2, 3);
/* Logs at @p level (SES_DRV_LOG_*). */
void xrt__log(const ses_drv_driver_t *driver, uint32_t level, const char *format, ...)
    XRT_PRINTF(3, 4);
/* Non-zero when debug messages are shown: callers skip building trace arguments otherwise. */
int xrt__tracing(const ses_drv_driver_t *driver);

/* Syncs [offset, offset + bytes) of @p b in direction @p dir, tracing the call. */
int32_t xrt__sync(ses_drv_device_t *device, ses_drv_buffer_t *b, enum xclBOSyncDirection dir,
                  uint64_t offset, uint64_t bytes, const char *what);

/* ---- kernels (xrt_kernels.c) ------------------------------------------------------------ */

/*
 * Builds @p device's kernel table from @p found[@p n_found], the kernels xrt__read_xclbin read
 * from the xclbin @p path, which is loaded with UUID @p uuid: every kernel named by the rule
 * ses_<op>_<dtype> whose arguments follow the convention. Kernels that do not are skipped with
 * a warning saying why. Sets device->group. Frees @p found.
 */
int32_t xrt__build_kernels(ses_drv_device_t *device, const char *path, const xuid_t uuid,
                           xrt_xkernel_t *found, uint32_t n_found);
/* Closes the kernels and frees the table. */
void xrt__free_kernels(ses_drv_device_t *device);

const char *xrt__dtype_name(uint32_t dtype);

#endif /* SES_XRT_INTERNAL_H */
