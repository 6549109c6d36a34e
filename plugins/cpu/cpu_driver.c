/*
 * The CPU driver: negotiation, driver info, the one host device, memory and copies.
 *
 * The CPU's "device memory" is ordinary host memory, so every memory kind is the same
 * posix_memalign'd block, map is pointer arithmetic and copies are memcpy/memmove. There are no
 * streams: every call completes before it returns.
 *
 * No mutable globals but one: the library may be opened by several registries in one process,
 * and each open gets its own ses_drv_driver_t; the tables below are static and const. The
 * exception is the GEMM library (cpu_gemm.c), which is process-wide like OpenBLAS itself:
 * loaded once, at the first open, with its kernels chosen by what the CPU can do.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* posix_memalign, sysconf(_SC_PHYS_PAGES) under -std=c11 */
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <session/driver.h>

#include "cpu_internal.h"

#ifndef SES_CPU_VERSION
#error "SES_CPU_VERSION must be defined by the build (meson passes the project version)"
#endif

/* ---------------------------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------------------------- */

/* Messages go through the host's error service (<session/driver_util.h>). */
int32_t cpu__fail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx, int32_t code,
                  const char *format, ...) {
    va_list ap;
    int32_t st;

    va_start(ap, format);
    st = ses_drv_util_vfail(host, ctx, code, format, ap);
    va_end(ap);
    return st;
}

int32_t cpu__device_fail(const ses_drv_device_t *device, int32_t code, const char *format, ...) {
    va_list ap;
    int32_t st;

    va_start(ap, format);
    st = ses_drv_util_vfail(device->driver->host, device->driver->ctx, code, format, ap);
    va_end(ap);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Driver info
 * ------------------------------------------------------------------------------------------- */

/*
 * Build features: what the compiler was told it may use, as defined by -march and friends.
 * Each fact contributes ",name"; the leading comma is skipped below, so an empty list reads "".
 */
#if defined(__x86_64__)
#define CPU__F_ARCH ",x86_64"
#elif defined(__aarch64__)
#define CPU__F_ARCH ",aarch64"
#else
#define CPU__F_ARCH ""
#endif
#if defined(__SSE2__)
#define CPU__F_SSE2 ",sse2"
#else
#define CPU__F_SSE2 ""
#endif
#if defined(__AVX__)
#define CPU__F_AVX ",avx"
#else
#define CPU__F_AVX ""
#endif
#if defined(__AVX2__)
#define CPU__F_AVX2 ",avx2"
#else
#define CPU__F_AVX2 ""
#endif
#if defined(__FMA__)
#define CPU__F_FMA ",fma"
#else
#define CPU__F_FMA ""
#endif
#if defined(__AVX512F__)
#define CPU__F_AVX512F ",avx512f"
#else
#define CPU__F_AVX512F ""
#endif
#if defined(__ARM_NEON)
#define CPU__F_NEON ",neon"
#else
#define CPU__F_NEON ""
#endif

static const char cpu_build_features[] =
    "" CPU__F_ARCH CPU__F_SSE2 CPU__F_AVX CPU__F_AVX2 CPU__F_FMA CPU__F_AVX512F CPU__F_NEON;

static const ses_drv_info_t cpu_info = {
    .struct_size = sizeof(ses_drv_info_t),
    .name = "cpu",
    .vendor = "libsession",
    .version = SES_CPU_VERSION,
    /* Skip the leading comma when there is at least one feature. */
    .build_features = cpu_build_features + (sizeof cpu_build_features > 1 ? 1 : 0),
    .opset_version = 1,
    .flags = SES_DRV_INFO_UNLOADABLE,
};

/* ---------------------------------------------------------------------------------------------
 * Driver instances
 * ------------------------------------------------------------------------------------------- */

/* Host memory as sysconf reports it; 0 when unknown. */
static uint64_t cpu__pages_bytes(int pages_name) {
    long pages = sysconf(pages_name);
    long page_size = sysconf(_SC_PAGESIZE);

    if (pages <= 0 || page_size <= 0)
        return 0;
    return (uint64_t)pages * (uint64_t)page_size;
}

/*
 * Reads the "model name" line of /proc/cpuinfo into @p out (at most @p size bytes with the NUL).
 * Returns 0 when there is none: some architectures (many ARM kernels) do not report one.
 */
static int cpu__read_model_name(char *out, size_t size) {
    static const char key[] = "model name";
    char line[512];
    int at_line_start = 1;
    int found = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");

    if (!f)
        return 0;
    while (!found && fgets(line, sizeof line, f)) {
        /* A line longer than the buffer (the "flags" line) arrives in pieces; only the first
         * piece of a line can hold the key. */
        int starts_line = at_line_start;
        size_t len = strlen(line);

        at_line_start = len > 0 && line[len - 1] == '\n';
        if (!starts_line || strncmp(line, key, sizeof key - 1) != 0)
            continue;
        const char *colon = strchr(line, ':');
        if (!colon)
            continue;
        const char *value = colon + 1;
        while (*value == ' ' || *value == '\t')
            value++;
        size_t n = strlen(value);
        while (n > 0 && (value[n - 1] == '\n' || value[n - 1] == ' ' || value[n - 1] == '\t'))
            n--;
        if (n == 0)
            continue;
        if (n >= size)
            n = size - 1;
        memcpy(out, value, n);
        out[n] = '\0';
        found = 1;
    }
    fclose(f);
    return found;
}

static void cpu__describe_host(char *out, size_t size) {
    char model[CPU__NAME_MAX - CPU__GEMM_DESC_MAX - CPU__CONV_DESC_MAX - 32];
    long threads = sysconf(_SC_NPROCESSORS_ONLN);

    if (!cpu__read_model_name(model, sizeof model))
        snprintf(model, sizeof model, "host CPU");
    if (threads > 0)
        snprintf(out, size, "%s (%ld threads)", model, threads);
    else
        snprintf(out, size, "%s", model);
}

static int32_t cpu_open(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                        ses_drv_driver_t **out_driver) {
    ses_drv_driver_t *driver;
    char gemm[CPU__GEMM_DESC_MAX], conv[CPU__CONV_DESC_MAX];
    int onednn = 0;
    uint32_t conv_dnnl = 0, conv_mode = 0;
    int32_t st;

    if (!out_driver)
        return cpu__fail(host, ctx, SES_DRV_INVALID_ARGUMENT, "open: out_driver is NULL");
    *out_driver = NULL;
    /* Without a host table of at least ABI 1.0 size, errors could not be reported later. */
    if (!host)
        return SES_DRV_INVALID_ARGUMENT;
    if (host->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort))
        return cpu__fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                         "open: the host table is %" PRIu32 " bytes, ABI 1.0 needs %zu",
                         host->struct_size, SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort));
    /* The GEMM library is loaded (once per process) before anything else: without it the
     * driver cannot run a MatMul, and a forced kernel choice it cannot honour is an error. */
    if ((st = cpu__gemm_open(host, ctx, gemm, sizeof gemm, &onednn)) != SES_DRV_OK)
        return st;
    /* Then the convolution's path: oneDNN unless the option says im2col. */
    if ((st = cpu__conv_open(host, ctx, NULL, &conv_dnnl, &conv_mode, conv, sizeof conv)) !=
        SES_DRV_OK)
        return st;

    driver = calloc(1, sizeof *driver);
    if (!driver)
        return cpu__fail(host, ctx, SES_DRV_OUT_OF_MEMORY,
                         "open: cannot allocate the driver instance (%zu bytes)", sizeof *driver);
    driver->host = host;
    driver->ctx = ctx;
    driver->gemm_onednn = onednn;
    /* Computed once so the name string lives as long as the instance, as the ABI asks. */
    cpu__describe_host(driver->device_name, sizeof driver->device_name);
    size_t used = strlen(driver->device_name);
    snprintf(driver->device_name + used, sizeof driver->device_name - used, "; %s; %s", gemm,
             conv);
    *out_driver = driver;
    return SES_DRV_OK;
}

static void cpu_close(ses_drv_driver_t *driver) {
    free(driver);
}

/*
 * Count then fill. The host sets each descriptor's struct_size; the array's stride is that
 * size, which may be larger than ours when the host was built against a newer minor. Only the
 * fields both sides know are written. struct_size and the extension pointer `next` belong to
 * the host and are left as it set them; fields of a newer minor keep whatever the host put
 * there (it zeroes them, and 0 reads as "unknown").
 */
static int32_t cpu_enumerate_devices(ses_drv_driver_t *driver, uint32_t *inout_count,
                                     ses_drv_device_desc_t *out_descs) {
    const uint32_t n_devices = 1;
    ses_drv_device_desc_t desc;
    uint32_t n_fill;
    int32_t st;

    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    st = ses_drv_util_enumerate_begin(driver->host, driver->ctx, inout_count, out_descs, n_devices,
                                      &n_fill);
    if (st != SES_DRV_OK || !out_descs)
        return st;

    memset(&desc, 0, sizeof desc);
    desc.kind = SES_DRV_DEVICE_CPU;
    desc.ordinal = 0;
    desc.stable_id = "host";
    desc.name = driver->device_name;
    desc.memory_bytes = cpu__pages_bytes(_SC_PHYS_PAGES);
    desc.memory_free = cpu__pages_bytes(_SC_AVPHYS_PAGES);
    desc.caps = SES_DRV_CAP_HOST_VISIBLE | SES_DRV_CAP_MAP | SES_DRV_CAP_HOST_IMPORT |
                SES_DRV_CAP_F64 | SES_DRV_CAP_CONCURRENT;
    desc.mem_kinds =
        (1u << SES_DRV_MEM_DEVICE) | (1u << SES_DRV_MEM_HOST_PINNED) | (1u << SES_DRV_MEM_SHARED);
    desc.alignment = CPU__ALIGNMENT;
    desc.max_alloc = 0;

    for (uint32_t i = 0; i < n_fill; i++)
        ses_drv_util_put_device(out_descs, i, &desc);
    *inout_count = n_fill;
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------------------------- */

/* Reads a string option into @p out ("" when unset), naming @p expected in the error. */
int32_t cpu__read_option(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                         const ses_drv_options_t *options, const char *key, const char *expected,
                         char *out, size_t size) {
    uint64_t needed = 0;
    int32_t st;

    out[0] = '\0';
    st = ses_drv_util_get_option(host, ctx, options, key, out, size, &needed);
    if (st == SES_DRV_NOT_FOUND) {
        out[0] = '\0';
        return SES_DRV_OK;
    }
    if (st == SES_DRV_INVALID_ARGUMENT)
        return cpu__fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                         "option %s is %" PRIu64 " bytes long; expected %s", key, needed,
                         expected);
    if (st != SES_DRV_OK)
        return st;
    out[size - 1] = '\0';
    return SES_DRV_OK;
}

/* A whole number from 0 to @p max, blanks around it allowed: 1 and *@p out, or 0. */
static int cpu__parse_count(const char *value, unsigned long max, unsigned long *out) {
    const char *p = value;
    unsigned long n = 0;
    int digits = 0;

    while (*p == ' ' || *p == '\t')
        p++;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        n = n * 10 + (unsigned long)(*p - '0');
        if (n > max)
            return 0;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (digits == 0 || *p != '\0')
        return 0;
    *out = n;
    return 1;
}

/*
 * How long the pool's idle workers watch for the next job before they sleep: option
 * driver.cpu.spin_us, 0 to CPU__MAX_SPIN_US microseconds, or "auto" (the default,
 * CPU__SPIN_AUTO): CPU__SPIN_US_DEFAULT, none while a kernel runs on oneDNN's OpenMP team.
 */
static int32_t cpu__pool_spin(ses_drv_driver_t *driver, const ses_drv_options_t *options,
                              uint32_t *out_us) {
    char value[32];
    uint64_t size = 0;
    unsigned long n = 0;

    *out_us = CPU__SPIN_AUTO;
    int32_t st = ses_drv_util_get_option(driver->host, driver->ctx, options, CPU__SPIN_OPTION,
                                         value, sizeof value, &size);
    if (st == SES_DRV_NOT_FOUND)
        return SES_DRV_OK;
    if (st == SES_DRV_OK) {
        value[sizeof value - 1] = '\0';
        if (strcmp(value, "auto") == 0)
            return SES_DRV_OK;
        if (cpu__parse_count(value, CPU__MAX_SPIN_US, &n)) {
            *out_us = (uint32_t)n;
            return SES_DRV_OK;
        }
    } else if (st != SES_DRV_INVALID_ARGUMENT) {
        return st;
    }
    return cpu__fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                     "open_device: option %s is \"%s\"; expected microseconds from 0 (idle "
                     "workers sleep at once) to %d, or auto (the default: %d, none while a "
                     "kernel runs on oneDNN's OpenMP team)",
                     CPU__SPIN_OPTION, st == SES_DRV_OK ? value : "(too long)", CPU__MAX_SPIN_US,
                     CPU__SPIN_US_DEFAULT);
}

/*
 * The size of a device's thread pool: option driver.cpu.threads when set (a whole number from 1
 * to CPU__MAX_THREADS, or 0 for the default), else the number of online CPUs.
 */
static int32_t cpu__pool_size(ses_drv_driver_t *driver, const ses_drv_options_t *options,
                              uint32_t *out_threads) {
    char value[32];
    uint64_t size = 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t fallback =
        online > 0 ? (online > CPU__MAX_THREADS ? CPU__MAX_THREADS : (uint32_t)online) : 1;

    *out_threads = fallback;
    int32_t st = ses_drv_util_get_option(driver->host, driver->ctx, options, CPU__THREADS_OPTION,
                                         value, sizeof value, &size);
    if (st == SES_DRV_NOT_FOUND)
        return SES_DRV_OK;
    if (st == SES_DRV_INVALID_ARGUMENT)
        return cpu__fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                         "open_device: option %s is %" PRIu64
                         " bytes long; expected a thread count from 0 to %d",
                         CPU__THREADS_OPTION, size, CPU__MAX_THREADS);
    if (st != SES_DRV_OK)
        return st;

    value[sizeof value - 1] = '\0';
    unsigned long n = 0;
    if (!cpu__parse_count(value, CPU__MAX_THREADS, &n))
        return cpu__fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                         "open_device: option %s is \"%s\"; expected a thread count from 0 to %d "
                         "(0: one per online CPU, here %" PRIu32 ")",
                         CPU__THREADS_OPTION, value, CPU__MAX_THREADS, fallback);
    if (n > 0)
        *out_threads = (uint32_t)n;
    return SES_DRV_OK;
}

/* Every option the CPU driver reads, for refusing one it does not (DRV-87). */
static const char *const cpu__options[] = {
    CPU__THREADS_OPTION, CPU__SPIN_OPTION,         CPU__POOL_OPTION,     CPU__CONV_OPTION,
    CPU__GEMM_OPTION,    CPU__GEMM_KERNELS_OPTION, CPU__WINOGRAD_OPTION, CPU__CONV_SLICES_OPTION};

/* open_device of ABI 1.5: the session's options come in @p options (NULL from open_device: the
 * host's get_option then answers for the thread that opens the device). */
static int32_t cpu_open_device_with_options(ses_drv_driver_t *driver, uint32_t ordinal,
                                            const ses_drv_options_t *options,
                                            ses_drv_device_t **out_device) {
    ses_drv_device_t *device = NULL;
    uint32_t threads;
    int32_t st;

    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_device)
        return cpu__fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                         "open_device: out_device is NULL");
    *out_device = NULL;
    if (ordinal != 0)
        return cpu__fail(driver->host, driver->ctx, SES_DRV_NOT_FOUND,
                         "open_device: no cpu device %" PRIu32
                         "; the cpu driver has 1 device, ordinal 0 (cpu:0)",
                         ordinal);
    uint32_t spin_us;
    if ((st = ses_drv_util_check_options(driver->host, driver->ctx, options, cpu__options,
                                         sizeof cpu__options / sizeof cpu__options[0])) !=
            SES_DRV_OK ||
        (st = cpu__pool_size(driver, options, &threads)) != SES_DRV_OK ||
        (st = cpu__pool_spin(driver, options, &spin_us)) != SES_DRV_OK)
        return st;
    /* Whose threads run the pool's work: its own workers, or OpenMP's team. */
    char pool_mode[16];
    if ((st = cpu__read_option(driver->host, driver->ctx, options, CPU__POOL_OPTION,
                               "own or openmp", pool_mode, sizeof pool_mode)) != SES_DRV_OK)
        return st;
    const int openmp = strcmp(pool_mode, "openmp") == 0;
    if (!openmp && pool_mode[0] && strcmp(pool_mode, "own") != 0)
        return cpu__fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                         "open_device: option %s is \"%s\"; accepted are own (the pool's own "
                         "workers, the default) and openmp (OpenMP's team, libgomp.so.1)",
                         CPU__POOL_OPTION, pool_mode);
    /* Winograd's algorithm for NchwcConv's 3x3 stride-1 filters: on unless it says off. */
    char winograd[16];
    if ((st = cpu__read_option(driver->host, driver->ctx, options, CPU__WINOGRAD_OPTION,
                               "auto or off", winograd, sizeof winograd)) != SES_DRV_OK)
        return st;
    if (winograd[0] && strcmp(winograd, "auto") != 0 && strcmp(winograd, "off") != 0)
        return cpu__fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                         "open_device: option %s is \"%s\"; accepted are auto (Winograd's "
                         "algorithm for 3x3 stride-1 blocked convolutions where oneDNN has it, "
                         "the default) and off (direct convolutions only)",
                         CPU__WINOGRAD_OPTION, winograd);
    /* How NchwcConv shares its work among the pool's threads (cpu_conv_slices.c). */
    char slices[16];
    uint32_t conv_slices = CPU__CONV_SLICES_DEFAULT;
    if ((st = cpu__read_option(driver->host, driver->ctx, options, CPU__CONV_SLICES_OPTION,
                               "auto, images or off", slices, sizeof slices)) != SES_DRV_OK)
        return st;
    if (strcmp(slices, "auto") == 0)
        conv_slices = CPU__CONV_SLICES_AUTO;
    else if (strcmp(slices, "images") == 0)
        conv_slices = CPU__CONV_SLICES_IMAGES;
    else if (strcmp(slices, "off") == 0)
        conv_slices = CPU__CONV_SLICES_OFF;
    else if (slices[0])
        return cpu__fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                         "open_device: option %s is \"%s\"; accepted are auto (slices of "
                         "images where the batch has one per thread, else slices of output "
                         "channels), images (slices of images only) and off (every convolution "
                         "on oneDNN's OpenMP team)",
                         CPU__CONV_SLICES_OPTION, slices);
    /* The Conv path is read again here, as the pool's size is, so that a session's own
     * driver.cpu.conv applies to its device (open saw only the options of its time). */
    char conv[CPU__CONV_DESC_MAX];
    uint32_t conv_dnnl = 0, conv_mode = 0;
    if ((st = cpu__conv_open(driver->host, driver->ctx, options, &conv_dnnl, &conv_mode, conv,
                             sizeof conv)) != SES_DRV_OK)
        return st;

    device = calloc(1, sizeof *device);
    if (!device)
        return cpu__fail(driver->host, driver->ctx, SES_DRV_OUT_OF_MEMORY,
                         "open_device: cannot allocate the device (%zu bytes)", sizeof *device);
    device->driver = driver;
    device->conv_dnnl = conv_dnnl;
    device->conv_mode = conv_mode;
    device->winograd = strcmp(winograd, "off") != 0;
    device->conv_slices = conv_slices;
    int err = cpu__pool_create(threads, spin_us, openmp, &device->pool);
    if (err == ENOENT) {
        st = cpu__fail(driver->host, driver->ctx, SES_DRV_UNAVAILABLE,
                       "open_device: option %s is \"openmp\", but libgomp.so.1 (GOMP_parallel) "
                       "cannot be loaded; set it to own",
                       CPU__POOL_OPTION);
        goto fail;
    }
    if (err != 0) {
        st = cpu__fail(
            driver->host, driver->ctx, err == ENOMEM ? SES_DRV_OUT_OF_MEMORY : SES_DRV_UNAVAILABLE,
            "open_device: cannot start a pool of %" PRIu32 " threads: %s (errno %d); set %s lower",
            threads,
            err == EAGAIN   ? "the process's thread limit was reached"
            : err == ENOMEM ? "out of memory"
                            : "pthread_create failed",
            err, CPU__THREADS_OPTION);
        goto fail;
    }
    /* The GEMM library shares the pool's threads: as many as the pool runs work on. */
    cpu__gemm_set_threads(threads);
    *out_device = device;
    return SES_DRV_OK;

fail:
    free(device);
    return st;
}

static int32_t cpu_open_device(ses_drv_driver_t *driver, uint32_t ordinal,
                               ses_drv_device_t **out_device) {
    return cpu_open_device_with_options(driver, ordinal, NULL, out_device);
}

static void cpu_close_device(ses_drv_device_t *device) {
    if (!device)
        return;
    cpu__pool_destroy(device->pool);
    free(device);
}

static int32_t cpu_memory_info(ses_drv_device_t *device, uint64_t *out_free, uint64_t *out_total) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_free || !out_total)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "memory_info: out_free or out_total is NULL");
    *out_free = cpu__pages_bytes(_SC_AVPHYS_PAGES);
    *out_total = cpu__pages_bytes(_SC_PHYS_PAGES);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Memory
 * ------------------------------------------------------------------------------------------- */

int32_t cpu__check_range(const ses_drv_device_t *device, const char *what,
                         const cpu__buffer_t *buffer, uint64_t offset, uint64_t bytes) {
    if (offset > UINT64_MAX - bytes)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "%s: offset %" PRIu64 " + %" PRIu64 " bytes overflows 64 bits",
                                what, offset, bytes);
    if (offset + bytes > buffer->size)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "%s: range [%" PRIu64 ", %" PRIu64
                                ") ends past the buffer's %" PRIu64 " bytes (offset %" PRIu64
                                " + %" PRIu64 " bytes)",
                                what, offset, offset + bytes, buffer->size, offset, bytes);
    return SES_DRV_OK;
}

static int32_t cpu__wrap(ses_drv_device_t *device, const char *what, void *data, uint64_t bytes,
                         uint32_t imported, ses_drv_buffer_t **out_buffer) {
    cpu__buffer_t *b = malloc(sizeof *b);

    if (!b)
        return cpu__device_fail(device, SES_DRV_OUT_OF_MEMORY,
                                "%s: cannot allocate a buffer handle (%zu bytes)", what, sizeof *b);
    b->data = data;
    b->size = bytes;
    b->imported = imported;
    b->reserved = 0;
    *out_buffer = (ses_drv_buffer_t *)(void *)b;
    return SES_DRV_OK;
}

static int32_t cpu_alloc(ses_drv_device_t *device, uint64_t bytes, uint32_t mem_kind,
                         ses_drv_buffer_t **out_buffer) {
    void *data = NULL;
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_buffer)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "alloc: out_buffer is NULL");
    *out_buffer = NULL;
    if (bytes == 0)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "alloc: bytes is 0; an allocation needs at least 1 byte");
    if (mem_kind > SES_DRV_MEM_SHARED)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "alloc: unknown memory kind %" PRIu32
                                "; the cpu device supports kinds 0 (device), 1 (host pinned) "
                                "and 2 (shared)",
                                mem_kind);
    if (bytes > SIZE_MAX)
        return cpu__device_fail(device, SES_DRV_OUT_OF_MEMORY,
                                "alloc: %" PRIu64 " bytes exceed this process's address space",
                                bytes);

    /* All three kinds are plain host memory on the CPU. */
    if (posix_memalign(&data, CPU__ALIGNMENT, (size_t)bytes) != 0)
        return cpu__device_fail(device, SES_DRV_OUT_OF_MEMORY,
                                "alloc: cannot allocate %" PRIu64 " bytes of host memory", bytes);
    st = cpu__wrap(device, "alloc", data, bytes, 0, out_buffer);
    if (st != SES_DRV_OK)
        goto fail;
    return SES_DRV_OK;

fail:
    free(data);
    return st;
}

static void cpu_free(ses_drv_device_t *device, ses_drv_buffer_t *buffer) {
    cpu__buffer_t *b = cpu__buffer(buffer);

    (void)device;
    if (!b)
        return;
    if (!b->imported)
        free(b->data);
    free(b);
}

static int32_t cpu_map(ses_drv_device_t *device, ses_drv_buffer_t *buffer, uint64_t offset,
                       uint64_t bytes, uint32_t map_flags, void **out_host_ptr) {
    const cpu__buffer_t *b = cpu__buffer(buffer);
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_host_ptr)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "map: out_host_ptr is NULL");
    *out_host_ptr = NULL;
    if (!b)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "map: buffer is NULL");
    if ((map_flags & ~(SES_DRV_MAP_READ | SES_DRV_MAP_WRITE)) != 0)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "map: unknown map flags 0x%" PRIx32
                                "; known are READ (0x1) and WRITE (0x2)",
                                map_flags);
    st = cpu__check_range(device, "map", b, offset, bytes);
    if (st != SES_DRV_OK)
        return st;
    /* Host-visible memory: mapping is the address itself, and unmapping has nothing to flush. */
    *out_host_ptr = (unsigned char *)b->data + offset;
    return SES_DRV_OK;
}

static int32_t cpu_unmap(ses_drv_device_t *device, ses_drv_buffer_t *buffer, void *host_ptr) {
    const cpu__buffer_t *b = cpu__buffer(buffer);

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!b || !host_ptr)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "unmap: buffer or host_ptr is NULL");
    /* Compare as integers: relational operators on pointers into different objects are
     * undefined, and a wrong pointer is exactly what this check exists to catch. A mapping of
     * 0 bytes at the end of the buffer yields data + size, so that address is accepted too. */
    uintptr_t p = (uintptr_t)host_ptr;
    uintptr_t begin = (uintptr_t)b->data;
    if (p < begin || p - begin > b->size)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "unmap: pointer %p is not inside the buffer [%p, +%" PRIu64
                                " bytes)",
                                host_ptr, b->data, b->size);
    return SES_DRV_OK;
}

static int32_t cpu_import_host_ptr(ses_drv_device_t *device, void *host_ptr, uint64_t bytes,
                                   ses_drv_buffer_t **out_buffer) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_buffer)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "import_host_ptr: out_buffer is NULL");
    *out_buffer = NULL;
    if (!host_ptr)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "import_host_ptr: host_ptr is NULL");
    if (bytes == 0)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "import_host_ptr: bytes is 0; a buffer needs at least 1 byte");
    /* No alignment is required here; a kernel refuses a tensor that is not aligned to its
     * element size, since it reads elements as their C types. */
    return cpu__wrap(device, "import_host_ptr", host_ptr, bytes, 1, out_buffer);
}

/* ---------------------------------------------------------------------------------------------
 * Copies. All synchronous; a stream is refused rather than ignored, since a host that passes
 * one expects work to be enqueued and would otherwise misread the ordering.
 * ------------------------------------------------------------------------------------------- */

static int32_t cpu__no_stream(ses_drv_device_t *device, const char *what,
                              const ses_drv_stream_t *stream) {
    if (stream)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "%s: got a stream, but the cpu driver has no streams "
                                "(SES_DRV_CAP_ASYNC_COPY is not set); pass NULL",
                                what);
    return SES_DRV_OK;
}

/*
 * copy_h2d (@p h2d, from @p from_host) or copy_d2h (into @p to_host): checks the stream, @p buffer
 * and its range, and the host pointer, then moves @p bytes. memmove: the host side may be a
 * mapped pointer into this very buffer.
 */
static int32_t cpu__host_copy(ses_drv_device_t *device, const ses_drv_stream_t *stream, int h2d,
                              ses_drv_buffer_t *buffer, uint64_t offset, const void *from_host,
                              void *to_host, uint64_t bytes) {
    const char *op = h2d ? "copy_h2d" : "copy_d2h";
    const cpu__buffer_t *b = cpu__buffer(buffer);
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = cpu__no_stream(device, op, stream)) != SES_DRV_OK)
        return st;
    if (!b)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "%s: %s is NULL", op,
                                h2d ? "dst" : "src");
    if ((st = cpu__check_range(device, h2d ? "copy_h2d: dst" : "copy_d2h: src", b, offset,
                               bytes)) != SES_DRV_OK)
        return st;
    /* DRV-43: 0 bytes inside the buffer (offset == size included) succeed, the host pointer NULL
     * or not. */
    if (bytes == 0)
        return SES_DRV_OK;
    if (h2d ? !from_host : !to_host)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "%s: %s is NULL for %" PRIu64 " bytes", op, h2d ? "src" : "dst",
                                bytes);
    if (h2d)
        memmove((unsigned char *)b->data + offset, from_host, (size_t)bytes);
    else
        memmove(to_host, (const unsigned char *)b->data + offset, (size_t)bytes);
    return SES_DRV_OK;
}

static int32_t cpu_copy_h2d(ses_drv_device_t *device, ses_drv_stream_t *stream, const void *src,
                            ses_drv_buffer_t *dst, uint64_t dst_offset, uint64_t bytes) {
    return cpu__host_copy(device, stream, 1, dst, dst_offset, src, NULL, bytes);
}

static int32_t cpu_copy_d2h(ses_drv_device_t *device, ses_drv_stream_t *stream,
                            ses_drv_buffer_t *src, uint64_t src_offset, void *dst, uint64_t bytes) {
    return cpu__host_copy(device, stream, 0, src, src_offset, NULL, dst, bytes);
}

static int32_t cpu_copy_d2d(ses_drv_device_t *device, ses_drv_stream_t *stream,
                            ses_drv_buffer_t *src, uint64_t src_offset, ses_drv_buffer_t *dst,
                            uint64_t dst_offset, uint64_t bytes) {
    const cpu__buffer_t *s = cpu__buffer(src);
    const cpu__buffer_t *d = cpu__buffer(dst);
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = cpu__no_stream(device, "copy_d2d", stream)) != SES_DRV_OK)
        return st;
    if (!s || !d)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "copy_d2d: %s is NULL",
                                !s ? "src" : "dst");
    if ((st = cpu__check_range(device, "copy_d2d: src", s, src_offset, bytes)) != SES_DRV_OK)
        return st;
    if ((st = cpu__check_range(device, "copy_d2d: dst", d, dst_offset, bytes)) != SES_DRV_OK)
        return st;
    if (bytes == 0)
        return SES_DRV_OK;
    /* memmove: src and dst may be overlapping ranges of one buffer. */
    memmove((unsigned char *)d->data + dst_offset, (const unsigned char *)s->data + src_offset,
            (size_t)bytes);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Negotiation
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_api_t cpu_api = {
    .struct_size = sizeof(ses_drv_api_t),
    .info = &cpu_info,
    .open = cpu_open,
    .close = cpu_close,
    .enumerate_devices = cpu_enumerate_devices,
    .open_device = cpu_open_device,
    .open_device_with_options = cpu_open_device_with_options,
    .close_device = cpu_close_device,
    .get_kernels = cpu__get_kernels,
    .memory_info = cpu_memory_info,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .map = cpu_map,
    .unmap = cpu_unmap,
    .import_host_ptr = cpu_import_host_ptr,
    .copy_h2d = cpu_copy_h2d,
    .copy_d2h = cpu_copy_d2h,
    .copy_d2d = cpu_copy_d2d,
    /* No SES_DRV_CAP_STREAMS / SES_DRV_CAP_EVENTS: stream and event entries stay NULL. */
};

/* The oldest minor this driver speaks. Every driver of major 1 speaks 1.0. */
#define CPU__MINOR_MIN 0u

SES_DRV_EXPORT int32_t ses_drv_negotiate(ses_drv_negotiate_t *args);

SES_DRV_EXPORT int32_t ses_drv_negotiate(ses_drv_negotiate_t *args) {
    return ses_drv_util_negotiate(args, "cpu", CPU__MINOR_MIN, SES_DRV_ABI_MINOR, &cpu_api);
}
