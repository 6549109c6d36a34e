/*
 * ses_xrt.so: the libsession driver for Xilinx FPGAs (Alveo cards) through XRT's C API.
 *
 * Devices are what XRT opens (xrtDeviceOpen 0, 1, ...). Each opened device loads the xclbin
 * named by the option driver.xrt.xclbin, and its kernel table is built from the kernels of that
 * xclbin by a naming rule (xrt_kernels.c). Memory is XRT buffer objects in the memory bank the
 * kernels' arguments connect to; every buffer is mapped once, and copies move bytes through that
 * host side with xrtBOSync. Work completes before each entry returns (no streams).
 *
 * XRT aborts the process (an uncaught C++ exception) when XILINX_XRT is unset, when
 * XCL_EMULATION_MODE is set but empty, or when $XILINX_XRT/lib lacks the shim library of the
 * mode; open checks all three before its first XRT call and answers SES_DRV_UNAVAILABLE instead.
 * XRT's own console messages are routed to its "null" log (the option driver.xrt.runtime_log
 * changes that), because a driver never prints; every XRT call is logged at debug level.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NOLOAD */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h> /* snprintf only: a driver never prints */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xrt_internal.h"

#include <experimental/xrt_ini.h>
#include <xrt.h>

#ifndef SES_XRT_VERSION
#define SES_XRT_VERSION "0.1.0"
#endif
#ifndef SES_XRT_FEATURES
#define SES_XRT_FEATURES "xrt-c-api" /* meson adds the XRT version */
#endif

/* ---------------------------------------------------------------------------------------------
 * Errors and logging
 * ------------------------------------------------------------------------------------------- */

int32_t xrt__fail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx, int32_t code,
                  const char *format, ...) {
    va_list ap;
    int32_t st;

    va_start(ap, format);
    st = ses_drv_util_vfail(host, ctx, code, format, ap);
    va_end(ap);
    return st;
}

int xrt__tracing(const ses_drv_driver_t *driver) {
    return driver && SES_DRV_UTIL_HOST_HAS(driver->host, log) && SES_DRV_UTIL_HOST_HAS(driver->host, log_enabled) &&
           driver->host->log_enabled(driver->ctx, SES_DRV_LOG_DEBUG);
}

static void xrt_vlog(const ses_drv_driver_t *driver, uint32_t level, const char *prefix,
                     const char *format, va_list ap) {
    char message[1024];
    int n;

    if (!driver || !SES_DRV_UTIL_HOST_HAS(driver->host, log))
        return;
    if (SES_DRV_UTIL_HOST_HAS(driver->host, log_enabled) && !driver->host->log_enabled(driver->ctx, level))
        return;
    n = snprintf(message, sizeof message, "%s", prefix);
    vsnprintf(message + n, sizeof message - (size_t)n, format, ap);
    driver->host->log(driver->ctx, level, message);
}

void xrt__trace(const ses_drv_driver_t *driver, const char *format, ...) {
    va_list ap;

    va_start(ap, format);
    xrt_vlog(driver, SES_DRV_LOG_DEBUG, "XRT call: ", format, ap);
    va_end(ap);
}

void xrt__log(const ses_drv_driver_t *driver, uint32_t level, const char *format, ...) {
    va_list ap;

    va_start(ap, format);
    xrt_vlog(driver, level, "", format, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------------------------------------
 * The environment XRT needs. Everything here runs before the first XRT call.
 * ------------------------------------------------------------------------------------------- */

/* The shim library XRT's coreutil loads from $XILINX_XRT/lib for emulation mode @p mode. */
static const char *xrt_shim(const char *mode) {
    if (!mode[0])
        return "libxrt_core.so.2";
    if (!strcmp(mode, "noop"))
        return "libxrt_noop.so.2";
    if (!strcmp(mode, "sw_emu"))
        return "libxrt_swemu.so.2";
    if (!strcmp(mode, "hw_emu"))
        return "libxrt_hwemu.so.2";
    return NULL;
}

/*
 * Checks XCL_EMULATION_MODE and XILINX_XRT. XRT reads them with plain getenv (and caches them),
 * so the driver does too: it must see what XRT will see. Fills @p mode ("" for hardware).
 */
static int32_t xrt_check_environment(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                                     char *mode, size_t mode_size, char *shim_path,
                                     size_t shim_size) {
    const char *emu = getenv("XCL_EMULATION_MODE");
    const char *root = getenv("XILINX_XRT");
    const char *shim;

    if (emu && !emu[0])
        return xrt__fail(host, ctx, SES_DRV_UNAVAILABLE,
                         "XCL_EMULATION_MODE is set but empty, which makes XRT abort the process; "
                         "unset it to use FPGA hardware, or set it to noop, sw_emu or hw_emu");
    snprintf(mode, mode_size, "%s", emu ? emu : "");
    shim = xrt_shim(mode);
    if (!shim)
        return xrt__fail(host, ctx, SES_DRV_UNAVAILABLE,
                         "XCL_EMULATION_MODE=%s is not an XRT mode; use noop, sw_emu or hw_emu, "
                         "or unset it to use FPGA hardware",
                         emu);
    if (!root || !root[0])
        return xrt__fail(host, ctx, SES_DRV_UNAVAILABLE,
                         "XILINX_XRT is not set: XRT loads its %s from $XILINX_XRT/lib and aborts "
                         "the process without it; set XILINX_XRT to the XRT installation "
                         "(/opt/xilinx/xrt), or with Debian's libxrt to a folder whose lib links "
                         "to /usr/lib/x86_64-linux-gnu",
                         shim);
    int n = snprintf(shim_path, shim_size, "%s/lib/%s", root, shim);
    if (n < 0 || (size_t)n >= shim_size)
        return xrt__fail(host, ctx, SES_DRV_UNAVAILABLE, "XILINX_XRT is too long (%zu bytes)",
                         strlen(root));
    if (access(shim_path, R_OK) != 0)
        return xrt__fail(host, ctx, SES_DRV_UNAVAILABLE,
                         "XILINX_XRT=%s has no lib/%s (%s), which XRT loads in %s mode and "
                         "aborts the process without; point XILINX_XRT at the XRT installation "
                         "(with Debian's libxrt: a folder whose lib links to "
                         "/usr/lib/x86_64-linux-gnu)",
                         root, shim, strerror(errno), mode[0] ? mode : "hardware");
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Driver
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_info_t xrt_info = {
    .struct_size = sizeof(ses_drv_info_t),
    .name = XRT_NAME,
    .vendor = "libsession",
    .version = SES_XRT_VERSION,
    .build_features = SES_XRT_FEATURES,
    .opset_version = 1,
    /* Not unloadable: XRT keeps process-wide state (devices, threads, static destructors) in
     * libxrt_coreutil, so the library must stay mapped. */
    .flags = 0,
};

typedef int (*xrt_info2_fn)(xclDeviceHandle, struct xclDeviceInfo2 *);

/* Name, PCI address and memory of an opened device, where the shim tells them. */
static void xrt_describe(ses_drv_driver_t *driver, xrtDeviceHandle handle, uint32_t ordinal,
                         const char *shim_path, xrt_devinfo_t *d) {
    struct xclDeviceInfo2 info;
    int have = 0;

    /* xclGetDeviceInfo2 lives in the shim XRT loaded; ask that library, without loading it
     * again (RTLD_NOLOAD), so the driver never binds a shim of another mode. */
    void *shim = dlopen(shim_path, RTLD_LAZY | RTLD_NOLOAD);
    if (shim) {
        xrt_info2_fn info2;
        *(void **)&info2 = dlsym(shim, "xclGetDeviceInfo2");
        memset(&info, 0, sizeof info);
        if (info2) {
            have = info2(xrtDeviceToXclDevice(handle), &info) == 0;
            xrt__trace(driver, "xclGetDeviceInfo2(device %" PRIu32 ") -> %s", ordinal,
                       have ? "ok" : "failed");
        }
        dlclose(shim);
    }
    if (have) {
        info.mName[sizeof info.mName - 1] = '\0';
        d->memory_bytes = info.mDDRSize;
        /* XRT packs the PCI address as domain << 16 | bus << 8 | device << 3 | function. */
        if (!driver->mode[0] && info.mPciSlot)
            snprintf(d->stable_id, sizeof d->stable_id, "pci:%04x:%02x:%02x.%x",
                     (info.mPciSlot >> 16) & 0xFFFFu, (info.mPciSlot >> 8) & 0xFFu,
                     (info.mPciSlot >> 3) & 0x1Fu, info.mPciSlot & 0x7u);
    }
    if (have && info.mName[0])
        snprintf(d->name, sizeof d->name, "%s", info.mName);
    else if (driver->mode[0])
        snprintf(d->name, sizeof d->name, "Xilinx FPGA (XRT %s emulation)", driver->mode);
    else
        snprintf(d->name, sizeof d->name, "Xilinx FPGA (XRT device %" PRIu32 ")", ordinal);
}

/* The shim's device count (xclProbe), or 0 when it cannot be asked. */
static uint32_t xrt_probe(ses_drv_driver_t *driver, const char *shim_path) {
    unsigned (*probe)(void);
    uint32_t n = 0;

    void *shim = dlopen(shim_path, RTLD_LAZY | RTLD_NOLOAD);
    if (!shim)
        return 0;
    *(void **)&probe = dlsym(shim, "xclProbe");
    if (probe) {
        n = (uint32_t)probe();
        xrt__trace(driver, "xclProbe() -> %" PRIu32, n);
    }
    dlclose(shim);
    return n;
}

static int32_t xrt_open(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                        ses_drv_driver_t **out_driver) {
    ses_drv_driver_t *driver = NULL;
    char shim_path[4200], log_target[1024] = "null";
    uint64_t need = 0;
    int32_t st;

    if (!host || host->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort))
        return xrt__fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                         "open: the host table is older than ABI 1.0");
    if (!out_driver)
        return xrt__fail(host, ctx, SES_DRV_INVALID_ARGUMENT, "open: out_driver is NULL");
    *out_driver = NULL;
    driver = calloc(1, sizeof *driver);
    if (!driver)
        return xrt__fail(host, ctx, SES_DRV_OUT_OF_MEMORY, "open: out of host memory");
    driver->host = host;
    driver->ctx = ctx;
    st = xrt_check_environment(host, ctx, driver->mode, sizeof driver->mode, shim_path,
                               sizeof shim_path);
    if (st != SES_DRV_OK)
        goto fail;

    /* XRT prints its errors on the console by default; a driver never prints. This must come
     * before XRT reads its configuration (the first device call); later it fails harmlessly. */
    if (host->get_option(ctx, "driver.xrt.runtime_log", log_target, sizeof log_target, &need) !=
        SES_DRV_OK)
        snprintf(log_target, sizeof log_target, "null");
    int ini = xrtIniStringSet("Runtime.runtime_log", log_target);
    xrt__trace(driver, "xrtIniStringSet(Runtime.runtime_log, %s) -> %d", log_target, ini);

    /* XRT's C API has no device count. The shim's xclProbe has one, but the shim is loaded by
     * the first device call; so open device 0, then ask xclProbe (noop emulation opens any
     * index), and without it open 1, 2, ... until one fails. */
    uint32_t limit = XRT_MAX_DEVICES;
    for (uint32_t i = 0; i < limit; i++) {
        errno = 0;
        xrtDeviceHandle handle = xrtDeviceOpen(i);
        int err = errno;
        xrt__trace(driver, "xrtDeviceOpen(%" PRIu32 ") -> %s", i, handle ? "ok" : "NULL");
        if (!handle) {
            if (i == 0) {
                st = xrt__fail(host, ctx, SES_DRV_UNAVAILABLE,
                               "no FPGA: XRT found no device in %s mode (xrtDeviceOpen(0): %s); "
                               "install an Alveo card with the xocl and xclmgmt kernel drivers, "
                               "or set XCL_EMULATION_MODE=noop to emulate one",
                               driver->mode[0] ? driver->mode : "hardware",
                               err ? strerror(err) : "no device");
                goto fail;
            }
            break;
        }
        if (i == 0) {
            uint32_t probed = xrt_probe(driver, shim_path);
            if (probed)
                limit = probed < XRT_MAX_DEVICES ? probed : XRT_MAX_DEVICES;
        }
        xrt_devinfo_t *grown = realloc(driver->devs, (i + 1) * sizeof *grown);
        if (!grown) {
            xrtDeviceClose(handle);
            st = xrt__fail(host, ctx, SES_DRV_OUT_OF_MEMORY, "open: out of host memory");
            goto fail;
        }
        driver->devs = grown;
        memset(&driver->devs[i], 0, sizeof driver->devs[i]);
        xrt_describe(driver, handle, i, shim_path, &driver->devs[i]);
        driver->n_devices = i + 1;
        xrtDeviceClose(handle);
        xrt__trace(driver, "xrtDeviceClose(%" PRIu32 ")", i);
    }
    *out_driver = driver;
    return SES_DRV_OK;

fail:
    free(driver->devs);
    free(driver);
    return st;
}

static void xrt_close(ses_drv_driver_t *driver) {
    if (!driver)
        return;
    free(driver->devs);
    free(driver);
}

static int32_t xrt_enumerate_devices(ses_drv_driver_t *driver, uint32_t *inout_count,
                                     ses_drv_device_desc_t *out_descs) {
    uint32_t n;
    int32_t st;

    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    st = ses_drv_util_enumerate_begin(driver->host, driver->ctx, inout_count, out_descs,
                                      driver->n_devices, &n);
    if (st != SES_DRV_OK || !out_descs)
        return st;
    for (uint32_t i = 0; i < n; i++) {
        ses_drv_device_desc_t desc;

        memset(&desc, 0, sizeof desc);
        desc.kind = SES_DRV_DEVICE_FPGA;
        desc.ordinal = i;
        desc.stable_id = driver->devs[i].stable_id;
        desc.name = driver->devs[i].name;
        desc.memory_bytes = driver->devs[i].memory_bytes;
        desc.memory_free = 0; /* XRT's C API does not say */
        desc.caps = SES_DRV_CAP_MAP;
        desc.mem_kinds = 1u << SES_DRV_MEM_DEVICE;
        desc.alignment = XRT_ALIGNMENT;
        desc.max_alloc = 0;
        ses_drv_util_put_device(out_descs, i, &desc);
    }
    *inout_count = n;
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------------------------- */

static void xrt_close_device(ses_drv_device_t *device) {
    if (!device)
        return;
    xrt__free_kernels(device);
    if (device->handle) {
        xrtDeviceClose(device->handle);
        xrt__trace(device->driver, "xrtDeviceClose(%" PRIu32 ")", device->ordinal);
    }
    free(device);
}

/* open_device of ABI 1.5 (DRV-87): the session's options in @p options, or NULL from
 * open_device (the host's get_option then answers on the opening thread). */
static int32_t xrt_open_device_with_options(ses_drv_driver_t *driver, uint32_t ordinal,
                                            const ses_drv_options_t *options,
                                            ses_drv_device_t **out_device) {
    static const char *const known[] = {"driver.xrt.xclbin", "driver.xrt.runtime_log"};
    ses_drv_device_t *device = NULL;
    xrt_xkernel_t *found = NULL;
    uint32_t n_found = 0;
    uint64_t need = 0;
    int32_t st;

    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_device)
        return xrt__fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                         "open_device: out_device is NULL");
    *out_device = NULL;
    if ((st = ses_drv_util_check_options(driver->host, driver->ctx, options, known, 2)) !=
        SES_DRV_OK)
        return st;
    if (ordinal >= driver->n_devices)
        return xrt__fail(driver->host, driver->ctx, SES_DRV_NOT_FOUND,
                         "open_device: no " XRT_NAME " device %" PRIu32 "; there are %" PRIu32,
                         ordinal, driver->n_devices);
    device = calloc(1, sizeof *device);
    if (!device)
        return xrt__fail(driver->host, driver->ctx, SES_DRV_OUT_OF_MEMORY,
                         "open_device: out of host memory");
    device->driver = driver;
    device->ordinal = ordinal;
    atomic_init(&device->next_buffer_id, 1);

    /* Session options are visible only now (DRV-29, DRV-87): read the xclbin's path here. */
    st = ses_drv_util_get_option(driver->host, driver->ctx, options, "driver.xrt.xclbin",
                                 device->xclbin, sizeof device->xclbin, &need);
    if (st == SES_DRV_INVALID_ARGUMENT) {
        st = xrt__fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                       "open_device: driver.xrt.xclbin is %" PRIu64 " bytes long; at most %zu",
                       need, sizeof device->xclbin - 1);
        goto fail;
    }
    if (st != SES_DRV_OK)
        device->xclbin[0] = '\0';

    errno = 0;
    device->handle = xrtDeviceOpen(ordinal);
    xrt__trace(driver, "xrtDeviceOpen(%" PRIu32 ") -> %s", ordinal, device->handle ? "ok" : "NULL");
    if (!device->handle) {
        st = xrt__fail(driver->host, driver->ctx, SES_DRV_UNAVAILABLE,
                       "open_device: xrtDeviceOpen(%" PRIu32 ") failed: %s", ordinal,
                       errno ? strerror(errno) : "XRT gave no reason");
        goto fail;
    }
    if (!device->xclbin[0]) {
        xrt__log(driver, SES_DRV_LOG_INFO,
                 "%s:%" PRIu32
                 " has no kernels: no xclbin is set (option driver.xrt.xclbin, or "
                 "SESSION_DRIVER_XRT_XCLBIN); every node runs on another device",
                 XRT_NAME, ordinal);
        *out_device = device;
        return SES_DRV_OK;
    }
    if (access(device->xclbin, R_OK) != 0) {
        st = xrt__fail(driver->host, driver->ctx,
                       errno == ENOENT ? SES_DRV_NOT_FOUND : SES_DRV_INVALID_ARGUMENT,
                       "open_device: the xclbin %s (option driver.xrt.xclbin) cannot be read: %s",
                       device->xclbin, strerror(errno));
        goto fail;
    }
    /* Read and check the file first: XRT trusts what it indexes and crashes on a damaged
     * xclbin, and its C API cannot list the kernels anyway. */
    char why[1024];
    st = xrt__read_xclbin(device->xclbin, &found, &n_found, why, sizeof why);
    if (st != SES_DRV_OK) {
        st = xrt__fail(driver->host, driver->ctx, st, "open_device: %s", why);
        goto fail;
    }
    errno = 0;
    int rc = xrtDeviceLoadXclbinFile(device->handle, device->xclbin);
    int err = errno;
    xrt__trace(driver, "xrtDeviceLoadXclbinFile(%" PRIu32 ", %s) -> %d", ordinal, device->xclbin,
               rc);
    if (rc != 0) {
        st = xrt__fail(driver->host, driver->ctx, SES_DRV_UNAVAILABLE,
                       "open_device: XRT could not load %s onto " XRT_NAME ":%" PRIu32
                       " (xrtDeviceLoadXclbinFile: %d, %s); is it built for this card's "
                       "platform, and does no other session or process hold the card with "
                       "another xclbin?",
                       device->xclbin, ordinal, rc, err ? strerror(err) : "no reason given");
        goto fail;
    }
    xuid_t uuid;
    memset(uuid, 0, sizeof uuid);
    rc = xrtDeviceGetXclbinUUID(device->handle, uuid);
    xrt__trace(driver, "xrtDeviceGetXclbinUUID(%" PRIu32 ") -> %d", ordinal, rc);
    if (rc != 0) {
        st = xrt__fail(driver->host, driver->ctx, SES_DRV_INTERNAL,
                       "open_device: xrtDeviceGetXclbinUUID failed after loading %s: %d",
                       device->xclbin, rc);
        goto fail;
    }
    st = xrt__build_kernels(device, device->xclbin, uuid, found, n_found);
    found = NULL; /* freed by xrt__build_kernels */
    if (st != SES_DRV_OK)
        goto fail;
    *out_device = device;
    return SES_DRV_OK;

fail:
    free(found);
    xrt_close_device(device);
    return st;
}

static int32_t xrt_open_device(ses_drv_driver_t *driver, uint32_t ordinal,
                               ses_drv_device_t **out_device) {
    return xrt_open_device_with_options(driver, ordinal, NULL, out_device);
}

/* ---------------------------------------------------------------------------------------------
 * Memory: one buffer object per allocation, in the kernels' bank, mapped once.
 * ------------------------------------------------------------------------------------------- */

int32_t xrt__sync(ses_drv_device_t *device, ses_drv_buffer_t *b, enum xclBOSyncDirection dir,
                  uint64_t offset, uint64_t bytes, const char *what) {
    const char *name = dir == XCL_BO_SYNC_BO_TO_DEVICE ? "to device" : "from device";

    if (bytes == 0)
        return SES_DRV_OK;
    int rc = xrtBOSync(b->bo, dir, (size_t)bytes, (size_t)offset);
    xrt__trace(device->driver,
               "xrtBOSync(buffer %" PRIu64 ", %s, %" PRIu64 " bytes, offset %" PRIu64 ") -> %d",
               b->id, name, bytes, offset, rc);
    if (rc != 0)
        return XRT_DEVICE_FAIL(device, SES_DRV_INTERNAL,
                               "%s: xrtBOSync %s of %" PRIu64 " bytes at offset %" PRIu64
                               " failed: %d",
                               what, name, bytes, offset, rc);
    return SES_DRV_OK;
}

static int32_t xrt_alloc(ses_drv_device_t *device, uint64_t bytes, uint32_t mem_kind,
                         ses_drv_buffer_t **out_buffer) {
    ses_drv_buffer_t *b;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_buffer)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "alloc: out_buffer is NULL");
    *out_buffer = NULL;
    if (bytes == 0)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "alloc: bytes is 0; an allocation needs at least 1 byte");
    if (mem_kind != SES_DRV_MEM_DEVICE)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "alloc: memory kind %" PRIu32 " is not supported; " XRT_NAME
                               " has only 0 (device memory)",
                               mem_kind);
    if (bytes > SIZE_MAX - XRT_ALIGNMENT)
        return XRT_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY,
                               "alloc: %" PRIu64 " bytes do not fit in size_t", bytes);
    /* Whole pages: XRT backs a buffer object with aligned_alloc(4096, size), which C11 (and
     * AddressSanitizer) allow only for sizes that are multiples of the alignment. */
    const uint64_t bo_bytes = (bytes + XRT_ALIGNMENT - 1) / XRT_ALIGNMENT * XRT_ALIGNMENT;
    b = calloc(1, sizeof *b);
    if (!b)
        return XRT_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY, "alloc: out of host memory");
    b->id = atomic_fetch_add(&device->next_buffer_id, 1);
    b->size = bytes;
    errno = 0;
    b->bo = xrtBOAlloc(device->handle, (size_t)bo_bytes, XRT_BO_FLAGS_NONE,
                       (xrtMemoryGroup)device->group);
    int err = errno;
    xrt__trace(device->driver,
               "xrtBOAlloc(%" PRIu64 " bytes, flags 0, group %" PRId32 ") -> buffer %" PRIu64 "%s",
               bo_bytes, device->group, b->id, b->bo ? "" : " failed");
    if (!b->bo) {
        free(b);
        return XRT_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY,
                               "alloc: xrtBOAlloc of %" PRIu64 " bytes in memory group %" PRId32
                               " on " XRT_NAME ":%" PRIu32 " failed: %s",
                               bytes, device->group, device->ordinal,
                               err ? strerror(err) : "no reason given");
    }
    b->host = xrtBOMap(b->bo);
    xrt__trace(device->driver, "xrtBOMap(buffer %" PRIu64 ") -> %s", b->id,
               b->host ? "ok" : "NULL");
    if (!b->host) {
        xrtBOFree(b->bo);
        free(b);
        return XRT_DEVICE_FAIL(device, SES_DRV_INTERNAL,
                               "alloc: xrtBOMap of a %" PRIu64 "-byte buffer failed", bytes);
    }
    *out_buffer = b;
    return SES_DRV_OK;
}

static void xrt_free(ses_drv_device_t *device, ses_drv_buffer_t *buffer) {
    if (!device || !buffer)
        return;
    int rc = xrtBOFree(buffer->bo);
    xrt__trace(device->driver, "xrtBOFree(buffer %" PRIu64 ") -> %d", buffer->id, rc);
    free(buffer);
}

/* Checks that [offset, offset + bytes) lies inside @p b; @p what names the call and argument. */
static int32_t xrt_check_range(ses_drv_device_t *device, const char *what,
                               const ses_drv_buffer_t *b, uint64_t offset, uint64_t bytes) {
    if (!b)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "%s: buffer is NULL", what);
    if (offset > b->size || bytes > b->size - offset)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "%s: %" PRIu64 " bytes at offset %" PRIu64
                               " end past the buffer's %" PRIu64 " bytes",
                               what, bytes, offset, b->size);
    return SES_DRV_OK;
}

/*
 * map: the buffer's host side, brought up to date from the device; unmap writes a range mapped
 * for writing back to the device. One mapping per buffer at a time.
 */
static int32_t xrt_map(ses_drv_device_t *device, ses_drv_buffer_t *buffer, uint64_t offset,
                       uint64_t bytes, uint32_t map_flags, void **out_host_ptr) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_host_ptr)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "map: out_host_ptr is NULL");
    *out_host_ptr = NULL;
    if ((st = xrt_check_range(device, "map", buffer, offset, bytes)) != SES_DRV_OK)
        return st;
    if (!(map_flags & (SES_DRV_MAP_READ | SES_DRV_MAP_WRITE)) ||
        (map_flags & ~(SES_DRV_MAP_READ | SES_DRV_MAP_WRITE)))
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "map: flags 0x%" PRIx32
                               "; use SES_DRV_MAP_READ and/or "
                               "SES_DRV_MAP_WRITE",
                               map_flags);
    if (buffer->mapped)
        return XRT_DEVICE_FAIL(device, SES_DRV_FAILED_PRECONDITION,
                               "map: buffer %" PRIu64 " is mapped already; unmap it first",
                               buffer->id);
    /* Reading needs the device's bytes; a write-only map still needs them for the bytes of
     * the range the caller leaves alone, which unmap writes back too. */
    if ((st = xrt__sync(device, buffer, XCL_BO_SYNC_BO_FROM_DEVICE, offset, bytes, "map")) !=
        SES_DRV_OK)
        return st;
    buffer->mapped = buffer->host + offset;
    buffer->map_offset = offset;
    buffer->map_bytes = bytes;
    buffer->map_flags = map_flags;
    *out_host_ptr = buffer->mapped;
    return SES_DRV_OK;
}

static int32_t xrt_unmap(ses_drv_device_t *device, ses_drv_buffer_t *buffer, void *host_ptr) {
    int32_t st = SES_DRV_OK;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!buffer || !host_ptr || buffer->mapped != host_ptr)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "unmap: %s",
                               !buffer           ? "buffer is NULL"
                               : !buffer->mapped ? "the buffer is not mapped"
                                                 : "the pointer is not the one map returned");
    if (buffer->map_flags & SES_DRV_MAP_WRITE)
        st = xrt__sync(device, buffer, XCL_BO_SYNC_BO_TO_DEVICE, buffer->map_offset,
                       buffer->map_bytes, "unmap");
    buffer->mapped = NULL;
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Copies: through each buffer's host side, synced with the device.
 * ------------------------------------------------------------------------------------------- */

static int32_t xrt_no_stream(ses_drv_device_t *device, const char *what, ses_drv_stream_t *s) {
    if (s)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "%s: got a stream, but " XRT_NAME " has no streams; pass NULL",
                               what);
    return SES_DRV_OK;
}

static int32_t xrt_copy_h2d(ses_drv_device_t *device, ses_drv_stream_t *stream, const void *src,
                            ses_drv_buffer_t *dst, uint64_t dst_offset, uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = xrt_no_stream(device, "copy_h2d", stream)) != SES_DRV_OK ||
        (st = xrt_check_range(device, "copy_h2d", dst, dst_offset, bytes)) != SES_DRV_OK)
        return st;
    if (bytes == 0)
        return SES_DRV_OK;
    if (!src)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "copy_h2d: src is NULL");
    memcpy(dst->host + dst_offset, src, (size_t)bytes);
    return xrt__sync(device, dst, XCL_BO_SYNC_BO_TO_DEVICE, dst_offset, bytes, "copy_h2d");
}

static int32_t xrt_copy_d2h(ses_drv_device_t *device, ses_drv_stream_t *stream,
                            ses_drv_buffer_t *src, uint64_t src_offset, void *dst, uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = xrt_no_stream(device, "copy_d2h", stream)) != SES_DRV_OK ||
        (st = xrt_check_range(device, "copy_d2h", src, src_offset, bytes)) != SES_DRV_OK)
        return st;
    if (bytes == 0)
        return SES_DRV_OK;
    if (!dst)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "copy_d2h: dst is NULL");
    if ((st = xrt__sync(device, src, XCL_BO_SYNC_BO_FROM_DEVICE, src_offset, bytes, "copy_d2h")) !=
        SES_DRV_OK)
        return st;
    memcpy(dst, src->host + src_offset, (size_t)bytes);
    return SES_DRV_OK;
}

/*
 * On hardware xrtBOCopy copies on the card. Under emulation it may report success without
 * copying (noop does), and on hardware it fails for some bank pairs, so those cases go through
 * the host: sync the source range from the device, copy, sync the destination range back.
 */
static int32_t xrt_copy_d2d(ses_drv_device_t *device, ses_drv_stream_t *stream,
                            ses_drv_buffer_t *src, uint64_t src_offset, ses_drv_buffer_t *dst,
                            uint64_t dst_offset, uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = xrt_no_stream(device, "copy_d2d", stream)) != SES_DRV_OK ||
        (st = xrt_check_range(device, "copy_d2d source", src, src_offset, bytes)) != SES_DRV_OK ||
        (st = xrt_check_range(device, "copy_d2d destination", dst, dst_offset, bytes)) !=
            SES_DRV_OK)
        return st;
    if (bytes == 0)
        return SES_DRV_OK;
    if (!device->driver->mode[0]) {
        int rc = xrtBOCopy(dst->bo, src->bo, (size_t)bytes, (size_t)dst_offset, (size_t)src_offset);
        xrt__trace(device->driver,
                   "xrtBOCopy(buffer %" PRIu64 " at %" PRIu64 ", buffer %" PRIu64 " at %" PRIu64
                   ", %" PRIu64 " bytes) -> %d",
                   dst->id, dst_offset, src->id, src_offset, bytes, rc);
        if (rc == 0)
            return SES_DRV_OK;
    }
    if ((st = xrt__sync(device, src, XCL_BO_SYNC_BO_FROM_DEVICE, src_offset, bytes, "copy_d2d")) !=
        SES_DRV_OK)
        return st;
    memmove(dst->host + dst_offset, src->host + src_offset, (size_t)bytes);
    return xrt__sync(device, dst, XCL_BO_SYNC_BO_TO_DEVICE, dst_offset, bytes, "copy_d2d");
}

static int32_t xrt_get_kernels(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                               uint32_t *out_count, uint32_t *out_stride) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_kernels || !out_count || !out_stride)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "get_kernels: an out parameter is NULL");
    *out_kernels = device->table;
    *out_count = device->n_kernels;
    *out_stride = (uint32_t)sizeof(ses_drv_kernel_t);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The function table and negotiation.
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_api_t xrt_api = {
    .struct_size = sizeof(ses_drv_api_t),
    .info = &xrt_info,
    .open = xrt_open,
    .close = xrt_close,
    .enumerate_devices = xrt_enumerate_devices,
    .open_device = xrt_open_device,
    .open_device_with_options = xrt_open_device_with_options,
    .close_device = xrt_close_device,
    .get_kernels = xrt_get_kernels,
    .alloc = xrt_alloc,
    .free = xrt_free,
    .map = xrt_map,
    .unmap = xrt_unmap,
    .copy_h2d = xrt_copy_h2d,
    .copy_d2h = xrt_copy_d2h,
    .copy_d2d = xrt_copy_d2d,
    /* No streams, events or graphs: runs complete before compute returns. */
};

/* The oldest minor this driver speaks; a variable, so `x < 0` draws no -Wtype-limits. */
static const uint32_t xrt_minor_min = 0;

SES_DRV_EXPORT int32_t ses_drv_negotiate(ses_drv_negotiate_t *args) {
    return ses_drv_util_negotiate(args, XRT_NAME, xrt_minor_min, SES_DRV_ABI_MINOR, &xrt_api);
}
