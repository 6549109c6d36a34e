/*
 * Internal declarations shared by the CPU driver's source files. Nothing here is exported: the
 * module is built with hidden visibility and exports only ses_drv_negotiate.
 *
 * Internal non-static names use the `cpu__` prefix.
 */
#ifndef SES_CPU_INTERNAL_H
#define SES_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <session/driver.h>

#if defined(__GNUC__)
#define CPU__PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define CPU__PRINTF(fmt_index, first_arg)
#endif

/** Every allocation is aligned to a cache line, which also suits every SIMD width up to AVX-512. */
#define CPU__ALIGNMENT 64u

/** Longest device name we keep: the model name from /proc/cpuinfo plus " (N threads)". */
#define CPU__NAME_MAX 256

/**
 * One opened driver instance. The library may be opened several times in one process (one per
 * registry), so everything mutable lives here and not in globals. Read-only after open, hence
 * safe to share between threads.
 */
struct ses_drv_driver {
    const ses_drv_host_t *host;
    ses_drv_host_ctx_t *ctx;
    char device_name[CPU__NAME_MAX]; /* ses_drv_device_desc_t.name; lives until close */
};

/** One opened device. The CPU has a single device, but each open_device gives a new handle. */
struct ses_drv_device {
    struct ses_drv_driver *driver;
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

/** cpu__fail with the host services of @p device's driver instance. */
int32_t cpu__device_fail(const ses_drv_device_t *device, int32_t code, const char *format, ...)
    CPU__PRINTF(3, 4);

/** The short name of a dtype as used in kernel signatures ("f32"), or NULL when unknown. */
const char *cpu__dtype_name(uint32_t dtype);

/** The size in bytes of one element of @p dtype, or 0 when the dtype is unknown. */
size_t cpu__dtype_size(uint32_t dtype);

/**
 * Checks that [offset, offset + bytes) lies inside @p buffer. @p what names the call and the
 * argument for the message ("copy_h2d: dst"). Returns SES_DRV_OK or SES_DRV_INVALID_ARGUMENT
 * with a message naming the offset, the byte count and the buffer's size.
 */
int32_t cpu__check_range(const ses_drv_device_t *device, const char *what,
                         const cpu__buffer_t *buffer, uint64_t offset, uint64_t bytes);

/** The api entry get_kernels: the same static table for every device. */
int32_t cpu__get_kernels(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                         uint32_t *out_count, uint32_t *out_stride);

#endif /* SES_CPU_INTERNAL_H */
