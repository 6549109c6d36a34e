/*
 * ses_opencl.so: the libsession driver for OpenCL devices.
 *
 * It links the ICD loader (ocl-icd's libOpenCL.so.1), never a vendor library, and offers every
 * device of every installed platform. Memory is cl_mem; work runs on one in-order command queue
 * per opened device and completes before each entry returns (no streams yet). Kernels are OpenCL
 * C (ocl_kernels.cl), built once per device context and cached on disk as program binaries;
 * GEMM goes through CLBlast (ocl_gemm.c).
 *
 * It never prints and never aborts: every failure is a code with a message through the host's
 * error service, naming the entry and the OpenCL error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* secure_getenv */
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h> /* snprintf and file I/O for the program cache; never prints */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ocl_internal.h"

#include <CL/cl_ext.h>

#ifndef SES_OCL_VERSION
#define SES_OCL_VERSION "0.1.0"
#endif

/* ---------------------------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------------------------- */

int32_t ocl__fail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx, int32_t code,
                  const char *format, ...) {
    va_list ap;
    int32_t st;

    va_start(ap, format);
    st = ses_drv_util_vfail(host, ctx, code, format, ap);
    va_end(ap);
    return st;
}

const char *ocl__error_name(cl_int err) {
    switch (err) {
#define N(x) \
    case x:  \
        return #x;
        N(CL_SUCCESS) N(CL_DEVICE_NOT_FOUND) N(CL_DEVICE_NOT_AVAILABLE)
        N(CL_COMPILER_NOT_AVAILABLE) N(CL_MEM_OBJECT_ALLOCATION_FAILURE) N(CL_OUT_OF_RESOURCES)
        N(CL_OUT_OF_HOST_MEMORY) N(CL_PROFILING_INFO_NOT_AVAILABLE) N(CL_MEM_COPY_OVERLAP)
        N(CL_IMAGE_FORMAT_MISMATCH) N(CL_IMAGE_FORMAT_NOT_SUPPORTED) N(CL_BUILD_PROGRAM_FAILURE)
        N(CL_MAP_FAILURE) N(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) N(CL_COMPILE_PROGRAM_FAILURE)
        N(CL_LINKER_NOT_AVAILABLE) N(CL_LINK_PROGRAM_FAILURE) N(CL_DEVICE_PARTITION_FAILED)
        N(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) N(CL_INVALID_VALUE) N(CL_INVALID_DEVICE_TYPE)
        N(CL_INVALID_PLATFORM) N(CL_INVALID_DEVICE) N(CL_INVALID_CONTEXT)
        N(CL_INVALID_QUEUE_PROPERTIES) N(CL_INVALID_COMMAND_QUEUE) N(CL_INVALID_HOST_PTR)
        N(CL_INVALID_MEM_OBJECT) N(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) N(CL_INVALID_IMAGE_SIZE)
        N(CL_INVALID_SAMPLER) N(CL_INVALID_BINARY) N(CL_INVALID_BUILD_OPTIONS)
        N(CL_INVALID_PROGRAM) N(CL_INVALID_PROGRAM_EXECUTABLE) N(CL_INVALID_KERNEL_NAME)
        N(CL_INVALID_KERNEL_DEFINITION) N(CL_INVALID_KERNEL) N(CL_INVALID_ARG_INDEX)
        N(CL_INVALID_ARG_VALUE) N(CL_INVALID_ARG_SIZE) N(CL_INVALID_KERNEL_ARGS)
        N(CL_INVALID_WORK_DIMENSION) N(CL_INVALID_WORK_GROUP_SIZE) N(CL_INVALID_WORK_ITEM_SIZE)
        N(CL_INVALID_GLOBAL_OFFSET) N(CL_INVALID_EVENT_WAIT_LIST) N(CL_INVALID_EVENT)
        N(CL_INVALID_OPERATION) N(CL_INVALID_GL_OBJECT) N(CL_INVALID_BUFFER_SIZE)
        N(CL_INVALID_MIP_LEVEL) N(CL_INVALID_GLOBAL_WORK_SIZE) N(CL_INVALID_PROPERTY)
        N(CL_INVALID_IMAGE_DESCRIPTOR) N(CL_INVALID_COMPILER_OPTIONS) N(CL_INVALID_LINKER_OPTIONS)
        N(CL_INVALID_DEVICE_PARTITION_COUNT) N(CL_PLATFORM_NOT_FOUND_KHR)
#undef N
    default:
        return "unknown OpenCL error";
    }
}

/* ---------------------------------------------------------------------------------------------
 * Driver
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_info_t ocl_info = {
    .struct_size = sizeof(ses_drv_info_t),
    .name = OCL_NAME,
    .vendor = "libsession",
    .version = SES_OCL_VERSION,
    .build_features = "ocl-icd,clblast",
    .opset_version = 1,
    /* Not unloadable: OpenCL implementations (PoCL among them) keep threads and atexit
     * handlers past clRelease*, so the library must stay mapped. */
    .flags = 0,
};

/* A device string property into @p buf (always NUL-terminated; "" when it cannot be read). */
static void ocl_device_string(cl_device_id id, cl_device_info what, char *buf, size_t size) {
    buf[0] = '\0';
    if (clGetDeviceInfo(id, what, size - 1, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[size - 1] = '\0';
}

/* Describes one device of @p platform into @p d. */
static void ocl_describe(cl_platform_id platform, cl_device_id id, ocl_devinfo_t *d) {
    char pname[256] = "", version[128] = "", ext[8192] = "";
    cl_device_type type = 0;
    cl_ulong mem = 0, max_alloc = 0;
    cl_device_fp_config fp = 0;

    d->platform = platform;
    d->id = id;
    if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL) != CL_SUCCESS)
        pname[0] = '\0';
    pname[sizeof pname - 1] = '\0';
    ocl_device_string(id, CL_DEVICE_NAME, d->name, sizeof d->name);
    ocl_device_string(id, CL_DRIVER_VERSION, version, sizeof version);
    ocl_device_string(id, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
    (void)clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    (void)clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    (void)clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    (void)clGetDeviceInfo(id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    d->kind = (type & CL_DEVICE_TYPE_GPU)           ? SES_DRV_DEVICE_GPU
              : (type & CL_DEVICE_TYPE_ACCELERATOR) ? SES_DRV_DEVICE_ACCEL
                                                    : SES_DRV_DEVICE_CPU;
    d->memory_bytes = mem;
    d->max_alloc = max_alloc;
    d->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
    d->correct_div_sqrt = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    cl_device_pci_bus_info_khr pci;
    if (strstr(ext, "cl_khr_pci_bus_info") &&
        clGetDeviceInfo(id, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof pci, &pci, NULL) == CL_SUCCESS)
        snprintf(d->stable_id, sizeof d->stable_id, "pci:%04x:%02x:%02x.%x", pci.pci_domain,
                 pci.pci_bus, pci.pci_device, pci.pci_function);
    else
        snprintf(d->stable_id, sizeof d->stable_id, "opencl:%s/%s", pname, d->name);
    snprintf(d->cache_key, sizeof d->cache_key, "%s|%s|%s|%s", pname, d->name, version,
             SES_OCL_VERSION);
}

static int32_t ocl_open(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                        ses_drv_driver_t **out_driver) {
    ses_drv_driver_t *driver = NULL;
    cl_platform_id *platforms = NULL;
    cl_uint n_platforms = 0;
    int32_t st;
    cl_int err;

    if (!host || host->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort))
        return ocl__fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                         "open: the host table is older than ABI 1.0");
    if (!out_driver)
        return ocl__fail(host, ctx, SES_DRV_INVALID_ARGUMENT, "open: out_driver is NULL");
    *out_driver = NULL;

    err = clGetPlatformIDs(0, NULL, &n_platforms);
    if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && n_platforms == 0))
        return ocl__fail(host, ctx, SES_DRV_UNAVAILABLE,
                         "no OpenCL platform installed (ocl-icd found no ICD in "
                         "/etc/OpenCL/vendors)");
    if (err != CL_SUCCESS)
        return ocl__fail(host, ctx, SES_DRV_UNAVAILABLE, "open: clGetPlatformIDs failed: %s",
                         ocl__error_name(err));
    driver = calloc(1, sizeof *driver);
    platforms = calloc(n_platforms, sizeof *platforms);
    if (!driver || !platforms) {
        st = ocl__fail(host, ctx, SES_DRV_OUT_OF_MEMORY, "open: out of host memory");
        goto fail;
    }
    driver->host = host;
    driver->ctx = ctx;
    err = clGetPlatformIDs(n_platforms, platforms, NULL);
    if (err != CL_SUCCESS) {
        st = ocl__fail(host, ctx, SES_DRV_UNAVAILABLE, "open: clGetPlatformIDs failed: %s",
                       ocl__error_name(err));
        goto fail;
    }
    for (cl_uint p = 0; p < n_platforms; p++) {
        cl_uint n = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n) != CL_SUCCESS || n == 0)
            continue; /* CL_DEVICE_NOT_FOUND: a platform without devices */
        cl_device_id *ids = calloc(n, sizeof *ids);
        ocl_devinfo_t *grown = realloc(driver->devs, (driver->n_devices + n) * sizeof *grown);
        if (!ids || !grown) {
            free(ids);
            if (grown)
                driver->devs = grown;
            st = ocl__fail(host, ctx, SES_DRV_OUT_OF_MEMORY, "open: out of host memory");
            goto fail;
        }
        driver->devs = grown;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, n, ids, NULL) == CL_SUCCESS) {
            for (cl_uint i = 0; i < n; i++) {
                memset(&driver->devs[driver->n_devices], 0, sizeof driver->devs[0]);
                ocl_describe(platforms[p], ids[i], &driver->devs[driver->n_devices]);
                driver->n_devices++;
            }
        }
        free(ids);
    }
    free(platforms);
    if (driver->n_devices == 0) {
        st = ocl__fail(host, ctx, SES_DRV_UNAVAILABLE,
                       "the installed OpenCL platforms (%" PRIu32 ") have no devices",
                       (uint32_t)n_platforms);
        platforms = NULL;
        goto fail;
    }
    *out_driver = driver;
    return SES_DRV_OK;

fail:
    free(platforms);
    if (driver)
        free(driver->devs);
    free(driver);
    return st;
}

static void ocl_close(ses_drv_driver_t *driver) {
    if (!driver)
        return;
    free(driver->devs);
    free(driver);
}

static int32_t ocl_enumerate_devices(ses_drv_driver_t *driver, uint32_t *inout_count,
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
        const ocl_devinfo_t *info = &driver->devs[i];
        ses_drv_device_desc_t desc;

        memset(&desc, 0, sizeof desc);
        desc.kind = info->kind;
        desc.ordinal = i;
        desc.stable_id = info->stable_id;
        desc.name = info->name;
        desc.memory_bytes = info->memory_bytes;
        desc.memory_free = 0; /* OpenCL does not say */
        desc.caps = SES_DRV_CAP_MAP;
        desc.mem_kinds = 1u << SES_DRV_MEM_DEVICE;
        desc.alignment = OCL_ALIGNMENT;
        desc.max_alloc = info->max_alloc;
        ses_drv_util_put_device(out_descs, i, &desc);
    }
    *inout_count = n;
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The program cache: binaries under <cache>/libsession/opencl/<hash>.bin, keyed by the device
 * (platform, device name, driver version), the build options and the source. A file holds a
 * header (magic, binary size, the binary's hash) and the binary; one that does not check out is
 * rebuilt from source and rewritten.
 * ------------------------------------------------------------------------------------------- */

#define OCL_CACHE_MAGIC UINT64_C(0x31424c4353534553) /* "SESSCLB1" */

static uint64_t ocl_fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* The option naming the program cache's folder ("off": no cache). */
#define OCL_CACHE_DIR_OPTION "driver.opencl.cache_dir"

/* The cache folder into @p buf, created; 0 when there is none (the cache is then skipped).
 * @p options: the opening session's (ABI 1.5), or NULL for the host's get_option. */
static int ocl_cache_dir(ses_drv_device_t *device, const ses_drv_options_t *options, char *buf,
                         size_t size) {
    uint64_t need = 0;
    char base[3072];
    int n;

    if (ses_drv_util_get_option(device->driver->host, device->driver->ctx, options,
                                OCL_CACHE_DIR_OPTION, buf, size, &need) == SES_DRV_OK) {
        if (!strcmp(buf, "off") || !buf[0])
            return 0;
        n = snprintf(base, sizeof base, "%s", buf);
    } else {
        const char *xdg = secure_getenv("XDG_CACHE_HOME"), *home = secure_getenv("HOME");
        if (xdg && xdg[0] == '/')
            n = snprintf(base, sizeof base, "%s/libsession/opencl", xdg);
        else if (home && home[0] == '/')
            n = snprintf(base, sizeof base, "%s/.cache/libsession/opencl", home);
        else
            return 0;
    }
    if (n < 0 || (size_t)n >= sizeof base || (size_t)n >= size)
        return 0;
    /* mkdir -p: create each component, ignoring those that exist. */
    for (char *p = base + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(base, 0700) != 0 && errno != EEXIST)
            return 0;
        *p = '/';
    }
    if (mkdir(base, 0700) != 0 && errno != EEXIST)
        return 0;
    memcpy(buf, base, (size_t)n + 1);
    return 1;
}

/* Reads a cached binary; NULL when absent or corrupt. */
static unsigned char *ocl_cache_read(const char *path, size_t *out_size) {
    uint64_t header[3];
    unsigned char *bin = NULL;
    FILE *f = fopen(path, "rb");

    if (!f)
        return NULL;
    if (fread(header, sizeof header, 1, f) != 1 || header[0] != OCL_CACHE_MAGIC ||
        header[1] == 0 || header[1] > (UINT64_C(1) << 30))
        goto fail;
    bin = malloc((size_t)header[1]);
    if (!bin || fread(bin, (size_t)header[1], 1, f) != 1 ||
        ocl_fnv(UINT64_C(0xcbf29ce484222325), bin, (size_t)header[1]) != header[2] ||
        fgetc(f) != EOF)
        goto fail;
    fclose(f);
    *out_size = (size_t)header[1];
    return bin;

fail:
    free(bin);
    fclose(f);
    return NULL;
}

/* Writes a binary to a temporary file and renames it over @p path; failures are ignored (the
 * cache only saves time). */
static void ocl_cache_write(const char *path, const unsigned char *bin, size_t size) {
    char tmp[4300];
    uint64_t header[3] = {OCL_CACHE_MAGIC, size,
                          ocl_fnv(UINT64_C(0xcbf29ce484222325), bin, size)};
    FILE *f;

    /* Unique per process and per call: two devices may be opened at once in one process. */
    snprintf(tmp, sizeof tmp, "%s.%ld.%p.tmp", path, (long)getpid(), (const void *)&header);
    f = fopen(tmp, "wb");
    if (!f)
        return;
    int ok = fwrite(header, sizeof header, 1, f) == 1 && fwrite(bin, size, 1, f) == 1;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0)
        (void)unlink(tmp);
}

/* A build failure's message, with the build log. */
static int32_t ocl_build_error(ses_drv_device_t *device, cl_program program, cl_int err) {
    char log[8192] = "";
    size_t n = 0;

    if (clGetProgramBuildInfo(program, device->info->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1,
                              log, &n) != CL_SUCCESS)
        log[0] = '\0';
    log[sizeof log - 1] = '\0';
    for (char *p = log; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return OCL_DEVICE_FAIL(device, SES_DRV_INTERNAL,
                           "open_device: building the kernels for %s failed: %s; build log: %s",
                           device->info->name, ocl__error_name(err), log[0] ? log : "(empty)");
}

/* Builds (or loads from the cache) the device's program. */
static int32_t ocl_build_program(ses_drv_device_t *device,
                                 const ses_drv_options_t *session_options) {
    const char *options = device->info->correct_div_sqrt
                              ? "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"
                              : "-cl-std=CL1.2";
    char dir[4096], path[4200];
    int cached = ocl_cache_dir(device, session_options, dir, sizeof dir);
    cl_int err;

    if (cached) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        h = ocl_fnv(h, device->info->cache_key, strlen(device->info->cache_key) + 1);
        h = ocl_fnv(h, options, strlen(options) + 1);
        for (unsigned i = 0; i < ocl__kernel_source_count; i++)
            h = ocl_fnv(h, ocl__kernel_source[i], strlen(ocl__kernel_source[i]));
        snprintf(path, sizeof path, "%s/%016" PRIx64 ".bin", dir, h);
        size_t size = 0;
        unsigned char *bin = ocl_cache_read(path, &size);
        if (bin) {
            const unsigned char *bins[1] = {bin};
            cl_int status = CL_SUCCESS;
            cl_program p = clCreateProgramWithBinary(device->context, 1, &device->info->id,
                                                     &size, bins, &status, &err);
            free(bin);
            if (p && err == CL_SUCCESS && status == CL_SUCCESS &&
                clBuildProgram(p, 1, &device->info->id, options, NULL, NULL) == CL_SUCCESS) {
                device->program = p;
                return SES_DRV_OK;
            }
            if (p)
                clReleaseProgram(p); /* a corrupt or stale entry: rebuild below */
        }
    }
    cl_program p = clCreateProgramWithSource(device->context, ocl__kernel_source_count,
                                             (const char **)(uintptr_t)ocl__kernel_source, NULL,
                                             &err);
    if (!p || err != CL_SUCCESS)
        return OCL_DEVICE_FAIL(device, SES_DRV_INTERNAL,
                               "open_device: clCreateProgramWithSource failed: %s",
                               ocl__error_name(err));
    err = clBuildProgram(p, 1, &device->info->id, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        int32_t st = ocl_build_error(device, p, err);
        clReleaseProgram(p);
        return st;
    }
    device->program = p;
    if (cached) {
        size_t size = 0;
        if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) ==
                CL_SUCCESS &&
            size > 0) {
            unsigned char *bin = malloc(size);
            unsigned char *bins[1] = {bin};
            if (bin &&
                clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
                ocl_cache_write(path, bin, size);
            free(bin);
        }
    }
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------------------------- */

static const char *const ocl_kernel_names[OCL_K_COUNT] = {OCL_KERNELS(OCL_KERNEL_NAME_)};

static void ocl_close_device(ses_drv_device_t *device) {
    if (!device)
        return;
    ocl__free_table(device);
    for (int k = 0; k < OCL_K_COUNT; k++)
        if (device->kernels[k])
            clReleaseKernel(device->kernels[k]);
    if (device->program)
        clReleaseProgram(device->program);
    if (device->queue)
        clReleaseCommandQueue(device->queue);
    if (device->context)
        clReleaseContext(device->context);
    pthread_mutex_destroy(&device->lock);
    free(device);
}

/* open_device of ABI 1.5 (DRV-87): the session's options in @p options, or NULL from
 * open_device (the host's get_option then answers on the opening thread). */
static int32_t ocl_open_device_with_options(ses_drv_driver_t *driver, uint32_t ordinal,
                                            const ses_drv_options_t *options,
                                            ses_drv_device_t **out_device) {
    static const char *const known[] = {OCL_CACHE_DIR_OPTION};
    ses_drv_device_t *device;
    int32_t st;
    cl_int err;

    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_device)
        return ocl__fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                         "open_device: out_device is NULL");
    *out_device = NULL;
    if ((st = ses_drv_util_check_options(driver->host, driver->ctx, options, known, 1)) !=
        SES_DRV_OK)
        return st;
    if (ordinal >= driver->n_devices)
        return ocl__fail(driver->host, driver->ctx, SES_DRV_NOT_FOUND,
                         "open_device: no " OCL_NAME " device %" PRIu32 "; there are %" PRIu32
                         " (" OCL_NAME ":0 to " OCL_NAME ":%" PRIu32 ")",
                         ordinal, driver->n_devices, driver->n_devices - 1);
    device = calloc(1, sizeof *device);
    if (!device)
        return ocl__fail(driver->host, driver->ctx, SES_DRV_OUT_OF_MEMORY,
                         "open_device: out of host memory");
    if (pthread_mutex_init(&device->lock, NULL) != 0) {
        free(device);
        return ocl__fail(driver->host, driver->ctx, SES_DRV_INTERNAL,
                         "open_device: pthread_mutex_init failed");
    }
    device->driver = driver;
    device->info = &driver->devs[ordinal];
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                      (cl_context_properties)device->info->platform, 0};
    device->context = clCreateContext(props, 1, &device->info->id, NULL, NULL, &err);
    if (!device->context || err != CL_SUCCESS) {
        st = OCL_DEVICE_FAIL(device, SES_DRV_UNAVAILABLE,
                             "open_device: clCreateContext for %s failed: %s",
                             device->info->name, ocl__error_name(err));
        goto fail;
    }
    device->queue = clCreateCommandQueue(device->context, device->info->id, 0, &err);
    if (!device->queue || err != CL_SUCCESS) {
        st = OCL_DEVICE_FAIL(device, SES_DRV_UNAVAILABLE,
                             "open_device: clCreateCommandQueue for %s failed: %s",
                             device->info->name, ocl__error_name(err));
        goto fail;
    }
    if ((st = ocl_build_program(device, options)) != SES_DRV_OK)
        goto fail;
    for (int k = 0; k < OCL_K_COUNT; k++) {
        device->kernels[k] = clCreateKernel(device->program, ocl_kernel_names[k], &err);
        if (!device->kernels[k] || err != CL_SUCCESS) {
            st = OCL_DEVICE_FAIL(device, SES_DRV_INTERNAL,
                                 "open_device: clCreateKernel(%s) failed: %s",
                                 ocl_kernel_names[k], ocl__error_name(err));
            goto fail;
        }
    }
    if ((st = ocl__make_table(device)) != SES_DRV_OK)
        goto fail;
    *out_device = device;
    return SES_DRV_OK;

fail:
    ocl_close_device(device);
    return st;
}

static int32_t ocl_open_device(ses_drv_driver_t *driver, uint32_t ordinal,
                               ses_drv_device_t **out_device) {
    return ocl_open_device_with_options(driver, ordinal, NULL, out_device);
}

static int32_t ocl_get_kernels(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                               uint32_t *out_count, uint32_t *out_stride) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_kernels || !out_count || !out_stride)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "get_kernels: an out parameter is NULL");
    *out_kernels = device->table;
    *out_count = device->n_table;
    *out_stride = (uint32_t)sizeof(ses_drv_kernel_t);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Memory and copies. Everything here completes before it returns (no streams).
 * ------------------------------------------------------------------------------------------- */

static int32_t ocl_check_range(ses_drv_device_t *device, const char *what,
                               const ses_drv_buffer_t *b, uint64_t offset, uint64_t bytes) {
    if (!b)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "%s: buffer is NULL", what);
    if (offset > b->size || bytes > b->size - offset)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "%s: %" PRIu64 " bytes at offset %" PRIu64
                               " end past the buffer's %" PRIu64 " bytes",
                               what, bytes, offset, b->size);
    return SES_DRV_OK;
}

static int32_t ocl_no_stream(ses_drv_device_t *device, const char *what,
                             const ses_drv_stream_t *stream) {
    if (stream)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "%s: got a stream, but " OCL_NAME
                               " has no streams (no SES_DRV_CAP_ASYNC_COPY); pass NULL",
                               what);
    return SES_DRV_OK;
}

static int32_t ocl_alloc(ses_drv_device_t *device, uint64_t bytes, uint32_t mem_kind,
                         ses_drv_buffer_t **out_buffer) {
    ses_drv_buffer_t *b;
    cl_int err;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_buffer)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "alloc: out_buffer is NULL");
    *out_buffer = NULL;
    if (bytes == 0)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "alloc: bytes is 0; an allocation needs at least 1 byte");
    if (mem_kind != SES_DRV_MEM_DEVICE)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "alloc: memory kind %" PRIu32 " is not supported; " OCL_NAME
                               " supports 0 (device)",
                               mem_kind);
    if (bytes > device->info->max_alloc || bytes > SIZE_MAX)
        return OCL_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY,
                               "alloc: %" PRIu64 " bytes asked, the largest allocation of %s is %" PRIu64
                               " bytes",
                               bytes, device->info->name, device->info->max_alloc);
    b = calloc(1, sizeof *b);
    if (!b)
        return OCL_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY, "alloc: out of host memory");
    b->mem = clCreateBuffer(device->context, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &err);
    if (!b->mem || err != CL_SUCCESS) {
        free(b);
        return OCL_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY,
                               "alloc: clCreateBuffer of %" PRIu64 " bytes failed: %s", bytes,
                               ocl__error_name(err));
    }
    b->size = bytes;
    *out_buffer = b;
    return SES_DRV_OK;
}

static void ocl_free(ses_drv_device_t *device, ses_drv_buffer_t *buffer) {
    if (!device || !buffer)
        return;
    clReleaseMemObject(buffer->mem);
    free(buffer);
}

static int32_t ocl_map(ses_drv_device_t *device, ses_drv_buffer_t *buffer, uint64_t offset,
                       uint64_t bytes, uint32_t map_flags, void **out_host_ptr) {
    int32_t st;
    cl_int err;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_host_ptr)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "map: out_host_ptr is NULL");
    *out_host_ptr = NULL;
    if ((map_flags & ~(SES_DRV_MAP_READ | SES_DRV_MAP_WRITE)) != 0)
        return OCL_DEVICE_FAIL(
            device, SES_DRV_INVALID_ARGUMENT,
            "map: unknown flags 0x%" PRIx32 "; known are READ (0x1), WRITE (0x2)", map_flags);
    if ((st = ocl_check_range(device, "map", buffer, offset, bytes)) != SES_DRV_OK)
        return st;
    cl_map_flags flags = 0;
    if (map_flags & SES_DRV_MAP_READ)
        flags |= CL_MAP_READ;
    if (map_flags & SES_DRV_MAP_WRITE)
        flags |= CL_MAP_WRITE;
    if (!flags)
        flags = CL_MAP_READ;
    /* A 0-byte map at the end is legal for us but not for OpenCL: map one byte before it. */
    uint64_t at = offset, n = bytes;
    if (n == 0) {
        at = offset > 0 ? offset - 1 : 0;
        n = 1;
    }
    void *p = clEnqueueMapBuffer(device->queue, buffer->mem, CL_TRUE, flags, (size_t)at,
                                 (size_t)n, 0, NULL, NULL, &err);
    if (!p || err != CL_SUCCESS)
        return OCL_DEVICE_FAIL(device, SES_DRV_INTERNAL,
                               "map: clEnqueueMapBuffer of %" PRIu64 " bytes at %" PRIu64
                               " failed: %s",
                               bytes, offset, ocl__error_name(err));
    *out_host_ptr = (unsigned char *)p + (offset - at);
    return SES_DRV_OK;
}

static int32_t ocl_unmap(ses_drv_device_t *device, ses_drv_buffer_t *buffer, void *host_ptr) {
    cl_int err;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!buffer || !host_ptr)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "unmap: buffer or host_ptr is NULL");
    err = clEnqueueUnmapMemObject(device->queue, buffer->mem, host_ptr, 0, NULL, NULL);
    if (err == CL_INVALID_VALUE) {
        /* A 0-byte map at the end handed out the byte after the one mapped. */
        err = clEnqueueUnmapMemObject(device->queue, buffer->mem,
                                      (unsigned char *)host_ptr - 1, 0, NULL, NULL);
    }
    if (err == CL_SUCCESS)
        err = clFinish(device->queue);
    if (err != CL_SUCCESS)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "unmap: clEnqueueUnmapMemObject(%p) failed: %s; was it mapped "
                               "from this buffer?",
                               host_ptr, ocl__error_name(err));
    return SES_DRV_OK;
}

/*
 * copy_h2d (@p h2d, from @p from_host) or copy_d2h (into @p to_host): checks the stream, the
 * buffer's range and the host pointer, then reads or writes @p bytes, blocking.
 */
static int32_t ocl_host_copy(ses_drv_device_t *device, const ses_drv_stream_t *stream, int h2d,
                             ses_drv_buffer_t *buffer, uint64_t offset, const void *from_host,
                             void *to_host, uint64_t bytes) {
    const char *op = h2d ? "copy_h2d" : "copy_d2h";
    int32_t st;
    cl_int err;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = ocl_no_stream(device, op, stream)) != SES_DRV_OK ||
        (st = ocl_check_range(device, h2d ? "copy_h2d: dst" : "copy_d2h: src", buffer, offset,
                              bytes)) != SES_DRV_OK)
        return st;
    /* DRV-43: 0 bytes inside the buffer (offset == size included) succeed, the host pointer NULL
     * or not. */
    if (bytes == 0)
        return SES_DRV_OK;
    if (h2d ? !from_host : !to_host)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "%s: %s is NULL", op,
                               h2d ? "src" : "dst");
    if (h2d)
        err = clEnqueueWriteBuffer(device->queue, buffer->mem, CL_TRUE, (size_t)offset,
                                   (size_t)bytes, from_host, 0, NULL, NULL);
    else
        err = clEnqueueReadBuffer(device->queue, buffer->mem, CL_TRUE, (size_t)offset,
                                  (size_t)bytes, to_host, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return OCL_DEVICE_FAIL(device, SES_DRV_INTERNAL, "%s: %s of %" PRIu64 " bytes failed: %s",
                               op, h2d ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", bytes,
                               ocl__error_name(err));
    return SES_DRV_OK;
}

static int32_t ocl_copy_h2d(ses_drv_device_t *device, ses_drv_stream_t *stream, const void *src,
                            ses_drv_buffer_t *dst, uint64_t dst_offset, uint64_t bytes) {
    return ocl_host_copy(device, stream, 1, dst, dst_offset, src, NULL, bytes);
}

static int32_t ocl_copy_d2h(ses_drv_device_t *device, ses_drv_stream_t *stream,
                            ses_drv_buffer_t *src, uint64_t src_offset, void *dst,
                            uint64_t bytes) {
    return ocl_host_copy(device, stream, 0, src, src_offset, NULL, dst, bytes);
}

static int32_t ocl_copy_d2d(ses_drv_device_t *device, ses_drv_stream_t *stream,
                            ses_drv_buffer_t *src, uint64_t src_offset, ses_drv_buffer_t *dst,
                            uint64_t dst_offset, uint64_t bytes) {
    int32_t st;
    cl_int err;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = ocl_no_stream(device, "copy_d2d", stream)) != SES_DRV_OK ||
        (st = ocl_check_range(device, "copy_d2d: src", src, src_offset, bytes)) != SES_DRV_OK ||
        (st = ocl_check_range(device, "copy_d2d: dst", dst, dst_offset, bytes)) != SES_DRV_OK)
        return st;
    if (bytes == 0)
        return SES_DRV_OK;
    if (src == dst && src_offset < dst_offset + bytes && dst_offset < src_offset + bytes)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "copy_d2d: the ranges at %" PRIu64 " and %" PRIu64
                               " of one buffer overlap (%" PRIu64 " bytes)",
                               src_offset, dst_offset, bytes);
    err = clEnqueueCopyBuffer(device->queue, src->mem, dst->mem, (size_t)src_offset,
                              (size_t)dst_offset, (size_t)bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(device->queue);
    if (err != CL_SUCCESS)
        return OCL_DEVICE_FAIL(device, SES_DRV_INTERNAL,
                               "copy_d2d: clEnqueueCopyBuffer of %" PRIu64 " bytes failed: %s",
                               bytes, ocl__error_name(err));
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The function table and negotiation
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_api_t ocl_api = {
    .struct_size = sizeof(ses_drv_api_t),
    .info = &ocl_info,
    .open = ocl_open,
    .close = ocl_close,
    .enumerate_devices = ocl_enumerate_devices,
    .open_device = ocl_open_device,
    .open_device_with_options = ocl_open_device_with_options,
    .close_device = ocl_close_device,
    .get_kernels = ocl_get_kernels,
    .alloc = ocl_alloc,
    .free = ocl_free,
    .map = ocl_map,
    .unmap = ocl_unmap,
    .copy_h2d = ocl_copy_h2d,
    .copy_d2h = ocl_copy_d2h,
    .copy_d2d = ocl_copy_d2d,
    /* No SES_DRV_CAP_STREAMS or SES_DRV_CAP_EVENTS yet: those entries stay NULL. */
};

static const uint32_t ocl_minor_min = 0;

SES_DRV_EXPORT int32_t ses_drv_negotiate(ses_drv_negotiate_t *args) {
    return ses_drv_util_negotiate(args, OCL_NAME, ocl_minor_min, SES_DRV_ABI_MINOR, &ocl_api);
}
