/*
 * ses_acme.so: the libsession driver for the (fictional) Acme Compute accelerator.
 *
 * This file is a template. It is a complete, working driver whose "device" is simulated with
 * host memory, so that it builds and passes `session-driver-test` anywhere; copy it and replace
 * the simulation with calls into your vendor runtime. Places to change are marked REPLACE:
 *
 *   - the identity below (ACME_NAME, vendor, version, device name and stable id);
 *   - open: load your runtime and find your devices (answer SES_DRV_UNAVAILABLE when there are
 *     none); enumerate_devices and open_device: describe and open them;
 *   - alloc/free/map/unmap/import_host_ptr and the copies: your runtime's memory calls;
 *   - the kernels and the kernel table: your ops. Each kernel checks its launch first.
 *
 * The rules it follows (sdk/DRIVER_ABI.md states them in full):
 *   - it includes only <session/driver.h> and the C library, and never links libsession;
 *   - it exports one symbol, ses_drv_negotiate (built with -fvisibility=hidden);
 *   - it never prints and never aborts: every failure is a status code with a message given
 *     to the host's `error` service, naming the entry (or the node and op) and the values;
 *   - it keeps no mutable globals: the library may be opened several times in one process,
 *     and every open gets its own instance; the tables are static and const;
 *   - every entry may be called from any thread, concurrently.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h> /* vsnprintf and snprintf only: a driver never prints */
#include <stdlib.h>
#include <string.h>

#include <session/driver.h>
#include <session/driver_util.h> /* header-only helpers: still nothing of libsession linked */

/* ---------------------------------------------------------------------------------------------
 * Identity. REPLACE all of it: the name must equal the manifest's "name" and the file names.
 * ------------------------------------------------------------------------------------------- */

#define ACME_NAME "acme"
#define ACME_VENDOR "Acme Compute"
#ifndef ACME_VERSION
#define ACME_VERSION "0.1.0" /* meson passes the project's version */
#endif
#define ACME_DEVICE_NAME "Acme Compute Simulator (host memory)"
#define ACME_STABLE_ID "acme:sim0" /* a PCI bus id or UUID on real hardware */

/* The simulated device's memory: every buffer counts against it. */
#define ACME_MEMORY_BYTES (UINT64_C(4) << 30)
/* Every allocation is aligned to this (a power of two): a cache line. */
#define ACME_ALIGNMENT 64u
/* Add keeps per-dimension arrays for broadcasting; larger ranks are refused. */
#define ACME_MAX_RANK 8u

/* ---------------------------------------------------------------------------------------------
 * Objects. The host only ever sees the opaque handles; these are what they point at.
 * ------------------------------------------------------------------------------------------- */

/* One open driver instance: the host services, and the memory its device has handed out. */
struct ses_drv_driver {
    const ses_drv_host_t *host;
    ses_drv_host_ctx_t *ctx;
    _Atomic uint64_t used; /* bytes allocated on the device (alloc adds, free subtracts) */
};

/* One open device. REPLACE: keep your runtime's device, context or queue handles here. */
struct ses_drv_device {
    ses_drv_driver_t *driver;
    char fw_path[256]; /* option driver.acme.fw_path; "" when unset. REPLACE: what you read */
};

/* One buffer. REPLACE: your runtime's allocation handle. */
struct ses_drv_buffer {
    unsigned char *data; /* ACME_ALIGNMENT-aligned when allocated here; any when imported */
    uint64_t size;       /* bytes */
    uint32_t imported;   /* non-zero: the host owns data, and free must not release it */
};

/* ---------------------------------------------------------------------------------------------
 * Errors: format a message and hand it to the host with the code, which is returned.
 * ------------------------------------------------------------------------------------------- */

#if defined(__GNUC__)
#define ACME_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ACME_PRINTF(f, a)
#endif

/* Errors go to the host with ses_drv_util_fail (driver_util.h), which formats the message. */
#define acme_fail ses_drv_util_fail

/* Shorthand for the device-level entries. */
#define ACME_DEVICE_FAIL(device, code, ...) \
    acme_fail((device)->driver->host, (device)->driver->ctx, (code), __VA_ARGS__)

/* ---------------------------------------------------------------------------------------------
 * Driver
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_info_t acme_info = {
    .struct_size = sizeof(ses_drv_info_t),
    .name = ACME_NAME,
    .vendor = ACME_VENDOR,
    .version = ACME_VERSION,
    .build_features = "", /* REPLACE: e.g. the vendor runtime version it was built against */
    .opset_version = 1,
    .flags = SES_DRV_INFO_UNLOADABLE, /* no threads or atexit handlers outlive close */
};

static int32_t acme_open(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                         ses_drv_driver_t **out_driver) {
    ses_drv_driver_t *driver;

    if (!host || host->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort))
        return acme_fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                         "open: the host table is older than ABI 1.0");
    if (!out_driver)
        return acme_fail(host, ctx, SES_DRV_INVALID_ARGUMENT, "open: out_driver is NULL");
    *out_driver = NULL;
    /* REPLACE: load the vendor runtime here. Without it, or without hardware, answer
     *   return acme_fail(host, ctx, SES_DRV_UNAVAILABLE, "libacmert.so.2 not found: ...");
     * and the host reports "no devices: <why>" instead of a broken driver. */
    driver = calloc(1, sizeof *driver);
    if (!driver)
        return acme_fail(host, ctx, SES_DRV_OUT_OF_MEMORY, "open: out of host memory");
    driver->host = host;
    driver->ctx = ctx;
    atomic_init(&driver->used, 0);
    *out_driver = driver;
    return SES_DRV_OK;
}

static void acme_close(ses_drv_driver_t *driver) {
    free(driver);
}

/*
 * Count then fill. The host sets each descriptor's struct_size and the array's stride is that
 * size, which exceeds ours when the host is newer; we write only the fields both sides know and
 * leave struct_size and next as the host set them.
 */
static int32_t acme_enumerate_devices(ses_drv_driver_t *driver, uint32_t *inout_count,
                                      ses_drv_device_desc_t *out_descs) {
    const uint32_t n_devices = 1; /* REPLACE: ask your runtime */
    ses_drv_device_desc_t desc;
    uint32_t n;
    int32_t st;

    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    /* The count-then-fill protocol's checks: every slot the host gave is checked before any is
     * written, so that a refused call changes nothing. */
    st = ses_drv_util_enumerate_begin(driver->host, driver->ctx, inout_count, out_descs, n_devices,
                                      &n);
    if (st != SES_DRV_OK || !out_descs)
        return st;

    memset(&desc, 0, sizeof desc);
    desc.kind = SES_DRV_DEVICE_ACCEL;
    desc.ordinal = 0;
    desc.stable_id = ACME_STABLE_ID;
    desc.name = ACME_DEVICE_NAME;
    desc.memory_bytes = ACME_MEMORY_BYTES;
    desc.memory_free = ACME_MEMORY_BYTES - atomic_load(&driver->used);
    desc.caps = SES_DRV_CAP_HOST_VISIBLE | SES_DRV_CAP_MAP | SES_DRV_CAP_HOST_IMPORT;
    desc.mem_kinds =
        (1u << SES_DRV_MEM_DEVICE) | (1u << SES_DRV_MEM_HOST_PINNED) | (1u << SES_DRV_MEM_SHARED);
    desc.alignment = ACME_ALIGNMENT;
    desc.max_alloc = ACME_MEMORY_BYTES;

    for (uint32_t i = 0; i < n; i++)
        ses_drv_util_put_device(out_descs, i, &desc);
    *inout_count = n;
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------------------------- */

/* The options this driver reads; a session that sets another driver.acme.* is refused. */
static const char *const acme_options[] = {"driver.acme.fw_path"};

/*
 * open_device of ABI 1.5 (DRV-87): the opening session's options arrive in @p options; from
 * open_device (a host of 1.4 or older) @p options is NULL and ses_drv_util_get_option asks the
 * host's get_option instead, which sees them on this thread only (DRV-29).
 */
static int32_t acme_open_device_with_options(ses_drv_driver_t *driver, uint32_t ordinal,
                                             const ses_drv_options_t *options,
                                             ses_drv_device_t **out_device) {
    ses_drv_device_t *device;
    uint64_t need = 0;
    int32_t st;

    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_device)
        return acme_fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                         "open_device: out_device is NULL");
    *out_device = NULL;
    if (ordinal != 0)
        return acme_fail(driver->host, driver->ctx, SES_DRV_NOT_FOUND,
                         "open_device: no " ACME_NAME " device %" PRIu32
                         "; there is 1, ordinal 0 (" ACME_NAME ":0)",
                         ordinal);
    if ((st = ses_drv_util_check_options(driver->host, driver->ctx, options, acme_options,
                                         sizeof acme_options / sizeof acme_options[0])) !=
        SES_DRV_OK)
        return st;
    device = calloc(1, sizeof *device);
    if (!device)
        return acme_fail(driver->host, driver->ctx, SES_DRV_OUT_OF_MEMORY,
                         "open_device: out of host memory");
    device->driver = driver;
    st = ses_drv_util_get_option(driver->host, driver->ctx, options, "driver.acme.fw_path",
                                 device->fw_path, sizeof device->fw_path, &need);
    if (st != SES_DRV_OK && st != SES_DRV_NOT_FOUND) {
        free(device);
        return acme_fail(driver->host, driver->ctx, SES_DRV_INVALID_ARGUMENT,
                         "open_device: driver.acme.fw_path is %" PRIu64 " bytes; at most %zu", need,
                         sizeof device->fw_path - 1);
    }
    *out_device = device;
    return SES_DRV_OK;
}

static int32_t acme_open_device(ses_drv_driver_t *driver, uint32_t ordinal,
                                ses_drv_device_t **out_device) {
    return acme_open_device_with_options(driver, ordinal, NULL, out_device);
}

static void acme_close_device(ses_drv_device_t *device) {
    free(device);
}

static int32_t acme_memory_info(ses_drv_device_t *device, uint64_t *out_free, uint64_t *out_total) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_free || !out_total)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "memory_info: out_free or out_total is NULL");
    *out_total = ACME_MEMORY_BYTES;
    *out_free = ACME_MEMORY_BYTES - atomic_load(&device->driver->used);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Memory. REPLACE the bodies with your runtime's allocation and mapping calls.
 * ------------------------------------------------------------------------------------------- */

/* Checks that [offset, offset + bytes) lies inside @p b; @p what names the call and argument. */
static int32_t acme_check_range(ses_drv_device_t *device, const char *what,
                                const ses_drv_buffer_t *b, uint64_t offset, uint64_t bytes) {
    if (!b)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "%s: buffer is NULL", what);
    if (offset > b->size || bytes > b->size - offset)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "%s: %" PRIu64 " bytes at offset %" PRIu64
                                " end past the buffer's %" PRIu64 " bytes",
                                what, bytes, offset, b->size);
    return SES_DRV_OK;
}

/* Takes @p bytes from the device's budget; zero when they are not there. Thread-safe. */
static int acme_reserve(ses_drv_driver_t *driver, uint64_t bytes) {
    uint64_t used = atomic_load(&driver->used);

    do {
        if (bytes > ACME_MEMORY_BYTES - used)
            return 0;
    } while (!atomic_compare_exchange_weak(&driver->used, &used, used + bytes));
    return 1;
}

static int32_t acme_alloc(ses_drv_device_t *device, uint64_t bytes, uint32_t mem_kind,
                          ses_drv_buffer_t **out_buffer) {
    ses_drv_buffer_t *b;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_buffer)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "alloc: out_buffer is NULL");
    *out_buffer = NULL;
    if (bytes == 0)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "alloc: bytes is 0; an allocation needs at least 1 byte");
    if (mem_kind > SES_DRV_MEM_SHARED)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "alloc: unknown memory kind %" PRIu32 "; " ACME_NAME
                                " supports 0 (device), 1 (host pinned), 2 (shared)",
                                mem_kind);
    /* All three kinds are the same host memory in this simulation. */
    if (!acme_reserve(device->driver, bytes))
        return ACME_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY,
                                "alloc: %" PRIu64 " bytes asked, %" PRIu64 " of %" PRIu64
                                " bytes free on " ACME_NAME ":0",
                                bytes, ACME_MEMORY_BYTES - atomic_load(&device->driver->used),
                                ACME_MEMORY_BYTES);
    b = calloc(1, sizeof *b);
    /* aligned_alloc wants a multiple of the alignment; bytes <= ACME_MEMORY_BYTES, no overflow. */
    if (b)
        b->data = aligned_alloc(ACME_ALIGNMENT, (size_t)((bytes + ACME_ALIGNMENT - 1) /
                                                         ACME_ALIGNMENT * ACME_ALIGNMENT));
    if (!b || !b->data) {
        free(b);
        atomic_fetch_sub(&device->driver->used, bytes);
        return ACME_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY,
                                "alloc: out of host memory for %" PRIu64 " bytes", bytes);
    }
    b->size = bytes;
    *out_buffer = b;
    return SES_DRV_OK;
}

static void acme_free(ses_drv_device_t *device, ses_drv_buffer_t *buffer) {
    if (!device || !buffer)
        return;
    if (!buffer->imported) {
        atomic_fetch_sub(&device->driver->used, buffer->size);
        free(buffer->data);
    }
    free(buffer);
}

static int32_t acme_map(ses_drv_device_t *device, ses_drv_buffer_t *buffer, uint64_t offset,
                        uint64_t bytes, uint32_t map_flags, void **out_host_ptr) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_host_ptr)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "map: out_host_ptr is NULL");
    *out_host_ptr = NULL;
    if ((map_flags & ~(SES_DRV_MAP_READ | SES_DRV_MAP_WRITE)) != 0)
        return ACME_DEVICE_FAIL(
            device, SES_DRV_INVALID_ARGUMENT,
            "map: unknown flags 0x%" PRIx32 "; known are READ (0x1), WRITE (0x2)", map_flags);
    if ((st = acme_check_range(device, "map", buffer, offset, bytes)) != SES_DRV_OK)
        return st;
    /* Host-visible memory: the mapping is the address. A real device would map or stage. */
    *out_host_ptr = buffer->data + offset;
    return SES_DRV_OK;
}

static int32_t acme_unmap(ses_drv_device_t *device, ses_drv_buffer_t *buffer, void *host_ptr) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!buffer || !host_ptr)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "unmap: buffer or host_ptr is NULL");
    /* Compared as integers: relational operators on unrelated pointers are undefined. A map of
     * 0 bytes at the very end yields data + size, so that address is accepted too. */
    uintptr_t p = (uintptr_t)host_ptr, begin = (uintptr_t)buffer->data;
    if (p < begin || p - begin > buffer->size)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "unmap: %p is not inside the buffer [%p, +%" PRIu64 " bytes)",
                                host_ptr, (void *)buffer->data, buffer->size);
    return SES_DRV_OK;
}

static int32_t acme_import_host_ptr(ses_drv_device_t *device, void *host_ptr, uint64_t bytes,
                                    ses_drv_buffer_t **out_buffer) {
    ses_drv_buffer_t *b;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_buffer)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "import_host_ptr: out_buffer is NULL");
    *out_buffer = NULL;
    if (!host_ptr || bytes == 0)
        return ACME_DEVICE_FAIL(
            device, SES_DRV_INVALID_ARGUMENT, "import_host_ptr: %s",
            !host_ptr ? "host_ptr is NULL" : "bytes is 0; a buffer needs at least 1 byte");
    /* Any alignment is accepted; kernels refuse a tensor not aligned to its element size. */
    b = calloc(1, sizeof *b);
    if (!b)
        return ACME_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY,
                                "import_host_ptr: out of host memory");
    b->data = host_ptr;
    b->size = bytes;
    b->imported = 1;
    *out_buffer = b;
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Copies: synchronous. Without SES_DRV_CAP_ASYNC_COPY a stream is refused, not ignored: a host
 * that passes one expects the work enqueued and would misread the ordering.
 * ------------------------------------------------------------------------------------------- */

static int32_t acme_no_stream(ses_drv_device_t *device, const char *what,
                              const ses_drv_stream_t *stream) {
    if (stream)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "%s: got a stream, but " ACME_NAME
                                " has no streams (no SES_DRV_CAP_ASYNC_COPY); pass NULL",
                                what);
    return SES_DRV_OK;
}

static int32_t acme_copy_h2d(ses_drv_device_t *device, ses_drv_stream_t *stream, const void *src,
                             ses_drv_buffer_t *dst, uint64_t dst_offset, uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = acme_no_stream(device, "copy_h2d", stream)) != SES_DRV_OK ||
        (st = acme_check_range(device, "copy_h2d: dst", dst, dst_offset, bytes)) != SES_DRV_OK)
        return st;
    /* DRV-43: 0 bytes inside the buffer (offset == size included) succeed, src NULL or not. */
    if (bytes == 0)
        return SES_DRV_OK;
    if (!src)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "copy_h2d: src is NULL");
    /* memmove: src may be a mapped pointer into this very buffer. */
    memmove(dst->data + dst_offset, src, (size_t)bytes);
    return SES_DRV_OK;
}

static int32_t acme_copy_d2h(ses_drv_device_t *device, ses_drv_stream_t *stream,
                             ses_drv_buffer_t *src, uint64_t src_offset, void *dst,
                             uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = acme_no_stream(device, "copy_d2h", stream)) != SES_DRV_OK ||
        (st = acme_check_range(device, "copy_d2h: src", src, src_offset, bytes)) != SES_DRV_OK)
        return st;
    /* DRV-43: 0 bytes inside the buffer (offset == size included) succeed, dst NULL or not. */
    if (bytes == 0)
        return SES_DRV_OK;
    if (!dst)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "copy_d2h: dst is NULL");
    memmove(dst, src->data + src_offset, (size_t)bytes);
    return SES_DRV_OK;
}

static int32_t acme_copy_d2d(ses_drv_device_t *device, ses_drv_stream_t *stream,
                             ses_drv_buffer_t *src, uint64_t src_offset, ses_drv_buffer_t *dst,
                             uint64_t dst_offset, uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = acme_no_stream(device, "copy_d2d", stream)) != SES_DRV_OK ||
        (st = acme_check_range(device, "copy_d2d: src", src, src_offset, bytes)) != SES_DRV_OK ||
        (st = acme_check_range(device, "copy_d2d: dst", dst, dst_offset, bytes)) != SES_DRV_OK)
        return st;
    /* memmove: src and dst may be overlapping ranges of one buffer. */
    memmove(dst->data + dst_offset, src->data + src_offset, (size_t)bytes);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Kernels. Each compute entry first checks its launch against what the entry is (op, counts,
 * dtypes), then the shapes its op needs, and only then touches memory: a wrong launch from a
 * host bug would otherwise read or write outside a buffer.
 * ------------------------------------------------------------------------------------------- */

/* One checked f32 argument of a launch. */
typedef struct acme_tensor {
    float *data;
    const int64_t *dims; /* rank entries, the host's array */
    uint32_t rank;
    uint64_t count; /* elements */
} acme_tensor_t;

/* Entry @p i of a descriptor array whose stride is its first entry's struct_size (the host's). */
static const ses_drv_tensor_desc_t *acme_desc_at(const ses_drv_tensor_desc_t *base, uint32_t i) {
    return (const ses_drv_tensor_desc_t *)(const void *)((const unsigned char *)base +
                                                         (size_t)i * base->struct_size);
}

/* "[2,3]", "[]" for a scalar; cut with "..." when it does not fit. Returns @p buf. */
static const char *acme_dims(const int64_t *dims, uint32_t rank, char *buf, size_t size) {
    size_t used = 1;
    uint32_t d = 0;

    buf[0] = '[';
    /* An entry takes at most 21 bytes (",-9223372036854775808"); keep 5 for "...]" and NUL. */
    for (; d < rank && used + 26 <= size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, d ? "," : "", dims[d]);
    snprintf(buf + used, size - used, "%s]", d < rank ? "..." : "");
    return buf;
}

/* A dtype's signature name ("f32"), for messages. */
static const char *acme_dtype_name(uint32_t dtype) {
    static const char *const names[] = {"invalid", "f32", "f64", "f16", "bf16", "i8",  "i16",
                                        "i32",     "i64", "u8",  "u16", "u32",  "u64", "bool"};
    return dtype < sizeof names / sizeof names[0] ? names[dtype] : "unknown";
}

/* A failed launch: the message starts with the op and the node's name, as the host expects. */
static int32_t acme_node_fail(ses_drv_device_t *device, const char *op, const ses_drv_node_t *node,
                              int32_t code, const char *format, ...) ACME_PRINTF(5, 6);

static int32_t acme_node_fail(ses_drv_device_t *device, const char *op, const ses_drv_node_t *node,
                              int32_t code, const char *format, ...) {
    char message[448];
    va_list ap;

    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    return ACME_DEVICE_FAIL(device, code, "%s \"%s\": %s", op,
                            node && node->name ? node->name : "(unnamed)", message);
}

/* Checks the node's frame: struct sizes, argument counts, f32 everywhere (the signature). */
static int32_t acme_check_node(ses_drv_device_t *device, const char *op, const char *signature,
                               const ses_drv_node_t *node, uint32_t n_inputs) {
    const size_t desc_min = SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims);

    if (!node || node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx))
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "%s: the node is NULL or older than ABI 1.0", op);
    if (node->n_inputs != n_inputs || node->n_outputs != 1 || !node->inputs || !node->outputs)
        return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                              "has %" PRIu32 " inputs and %" PRIu32
                              " outputs; this kernel (%s) takes %" PRIu32 " and 1",
                              node->n_inputs, node->n_outputs, signature, n_inputs);
    if (node->inputs->struct_size < desc_min || node->outputs->struct_size < desc_min)
        return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                              "a tensor descriptor is older than ABI 1.0 (struct_size %" PRIu32
                              ", %" PRIu32 "; at least %zu)",
                              node->inputs->struct_size, node->outputs->struct_size, desc_min);
    for (uint32_t i = 0; i <= n_inputs; i++) {
        const ses_drv_tensor_desc_t *t =
            i < n_inputs ? acme_desc_at(node->inputs, i) : node->outputs;
        if (t->dtype != SES_DRV_DTYPE_F32)
            return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                                  "%s %" PRIu32 " is %s (dtype %" PRIu32 "), but this kernel is %s",
                                  i < n_inputs ? "input" : "output", i < n_inputs ? i : 0,
                                  acme_dtype_name(t->dtype), t->dtype, signature);
    }
    return SES_DRV_OK;
}

/* Checks one argument (dims, size, byte range, alignment) and fills @p out. */
static int32_t acme_check_tensor(ses_drv_device_t *device, const char *op,
                                 const ses_drv_node_t *node, const char *role, uint32_t index,
                                 const ses_drv_tensor_desc_t *t, ses_drv_buffer_t *buffer,
                                 uint64_t offset, acme_tensor_t *out) {
    uint64_t count = 1;

    if (t->rank > 0 && !t->dims)
        return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                              "%s %" PRIu32 " has rank %" PRIu32 " but no dims", role, index,
                              t->rank);
    for (uint32_t d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0)
            return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                                  "%s %" PRIu32 " dim %" PRIu32 " is %" PRId64
                                  "; dims must be >= 0",
                                  role, index, d, t->dims[d]);
        /* A zero dim makes the count 0 whatever follows; the bound keeps bytes in 64 bits. */
        if (t->dims[d] != 0 && count > (UINT64_MAX / sizeof(float)) / (uint64_t)t->dims[d])
            return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                                  "%s %" PRIu32 " has more elements than 64 bits can address", role,
                                  index);
        count *= (uint64_t)t->dims[d];
    }
    uint64_t bytes = count * sizeof(float);
    if (!buffer)
        return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                              "%s %" PRIu32 " buffer is NULL", role, index);
    if (offset > buffer->size || bytes > buffer->size - offset)
        return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                              "%s %" PRIu32 ": %" PRIu64 " bytes at offset %" PRIu64
                              " end past its buffer's %" PRIu64 " bytes",
                              role, index, bytes, offset, buffer->size);
    if (((uintptr_t)buffer->data + (uintptr_t)offset) % sizeof(float) != 0)
        return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                              "%s %" PRIu32 " at buffer offset %" PRIu64
                              " is not aligned to its 4-byte f32 elements",
                              role, index, offset);
    out->data = (float *)(void *)(buffer->data + offset);
    out->dims = t->dims;
    out->rank = t->rank;
    out->count = count;
    return SES_DRV_OK;
}

/*
 * Checks a whole launch of a 1-output f32 kernel and fills @p in[n_inputs] and @p out.
 * The output may be exactly one input's bytes (the loops read element i before writing it), but
 * must not partly overlap any input.
 */
static int32_t acme_check_launch(ses_drv_device_t *device, const char *op, const char *signature,
                                 const ses_drv_launch_t *launch, uint32_t n_inputs,
                                 acme_tensor_t *in, acme_tensor_t *out) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets))
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "%s: the launch is NULL or older than ABI 1.0", op);
    const ses_drv_node_t *node = launch->node;
    if ((st = acme_check_node(device, op, signature, node, n_inputs)) != SES_DRV_OK)
        return st;
    if (launch->stream)
        return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                              "got a stream, but " ACME_NAME " has no streams; pass NULL");
    if (!launch->inputs || !launch->input_offsets || !launch->outputs || !launch->output_offsets)
        return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                              "the launch lacks its buffer or offset arrays");
    for (uint32_t i = 0; i < n_inputs; i++)
        if ((st = acme_check_tensor(device, op, node, "input", i, acme_desc_at(node->inputs, i),
                                    launch->inputs[i], launch->input_offsets[i], &in[i])) !=
            SES_DRV_OK)
            return st;
    if ((st = acme_check_tensor(device, op, node, "output", 0, node->outputs, launch->outputs[0],
                                launch->output_offsets[0], out)) != SES_DRV_OK)
        return st;
    uintptr_t o = (uintptr_t)out->data, o_end = o + out->count * sizeof(float);
    for (uint32_t i = 0; i < n_inputs && o != o_end; i++) {
        uintptr_t a = (uintptr_t)in[i].data, a_end = a + in[i].count * sizeof(float);
        if (a != a_end && a < o_end && o < a_end && (a != o || a_end != o_end))
            return acme_node_fail(device, op, node, SES_DRV_INVALID_ARGUMENT,
                                  "output 0 partly overlaps input %" PRIu32
                                  "; it may only be exactly an input's bytes",
                                  i);
    }
    return SES_DRV_OK;
}

/* Refuses ranks over ACME_MAX_RANK, which Add's per-dimension arrays cannot hold. */
static int32_t acme_add_supports_node(ses_drv_device_t *device, const ses_drv_node_t *node) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = acme_check_node(device, "Add", "f32,f32->f32", node, 2)) != SES_DRV_OK)
        return st;
    for (uint32_t i = 0; i <= 2; i++) {
        const ses_drv_tensor_desc_t *t = i < 2 ? acme_desc_at(node->inputs, i) : node->outputs;
        if (t->rank > ACME_MAX_RANK)
            return acme_node_fail(
                device, "Add", node, SES_DRV_UNIMPLEMENTED,
                "%s %" PRIu32 " has rank %" PRIu32 "; " ACME_NAME " supports up to rank %u",
                i < 2 ? "input" : "output", i < 2 ? i : 0, t->rank, ACME_MAX_RANK);
    }
    return SES_DRV_OK;
}

/* Dim @p d of @p t seen from an output of @p rank: dims align at the right, missing ones are 1. */
static int64_t acme_dim(const acme_tensor_t *t, uint32_t rank, uint32_t d) {
    const uint32_t lead = rank - t->rank;
    return d < lead ? 1 : t->dims[d - lead];
}

/* Add "f32,f32->f32" with numpy broadcasting: a dim of 1 (or a missing one) stretches. */
static int32_t acme_add(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    acme_tensor_t in[2], out;
    int64_t stride[2][ACME_MAX_RANK], index[ACME_MAX_RANK] = {0};
    int32_t st;

    (void)state;
    if ((st = acme_check_launch(device, "Add", "f32,f32->f32", launch, 2, in, &out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t rank = out.rank;
    if (rank > ACME_MAX_RANK || in[0].rank > ACME_MAX_RANK || in[1].rank > ACME_MAX_RANK)
        return acme_add_supports_node(device, node); /* refuses, naming the argument */

    /* The output has the larger input rank, and each of its dims is the inputs' broadcast. */
    int ok = rank == (in[0].rank > in[1].rank ? in[0].rank : in[1].rank);
    for (uint32_t d = 0; d < rank && ok; d++) {
        int64_t want = 1;
        for (uint32_t k = 0; k < 2; k++) {
            const int64_t dim = acme_dim(&in[k], rank, d);
            if (dim != 1) {
                ok = ok && (want == 1 || want == dim);
                want = dim;
            }
        }
        ok = ok && out.dims[d] == want;
    }
    if (!ok) {
        char a[96], b[96], o[96];
        return acme_node_fail(device, "Add", node, SES_DRV_INVALID_ARGUMENT,
                              "shapes do not broadcast to the output: input 0 is %s, input 1 is "
                              "%s, output is %s",
                              acme_dims(in[0].dims, in[0].rank, a, sizeof a),
                              acme_dims(in[1].dims, in[1].rank, b, sizeof b),
                              acme_dims(out.dims, out.rank, o, sizeof o));
    }
    if (out.count == 0)
        return SES_DRV_OK;

    /* Each input's step in elements per output dim: 0 where it is broadcast. */
    for (uint32_t k = 0; k < 2; k++) {
        int64_t step = 1;
        for (uint32_t d = rank; d-- > 0;) {
            const int64_t dim = acme_dim(&in[k], rank, d);
            stride[k][d] = dim == 1 ? 0 : step;
            step *= dim;
        }
    }
    /* The innermost dim is a plain loop and an odometer walks the outer ones; rank 0 is one
     * element. Offsets, not pointers, so that nothing points outside a tensor in between. */
    const uint32_t outer = rank > 0 ? rank - 1 : 0;
    const uint64_t inner = rank > 0 ? (uint64_t)out.dims[outer] : 1;
    const int64_t s0 = rank > 0 ? stride[0][outer] : 0, s1 = rank > 0 ? stride[1][outer] : 0;
    int64_t off0 = 0, off1 = 0;
    float *o = out.data;
    for (uint64_t done = 0; done < out.count; done += inner, o += inner) {
        const float *a = in[0].data + off0, *b = in[1].data + off1;
        for (uint64_t j = 0; j < inner; j++)
            o[j] = a[(int64_t)j * s0] + b[(int64_t)j * s1];
        for (uint32_t d = outer; d-- > 0;) {
            off0 += stride[0][d];
            off1 += stride[1][d];
            if (++index[d] < out.dims[d])
                break;
            off0 -= stride[0][d] * out.dims[d];
            off1 -= stride[1][d] * out.dims[d];
            index[d] = 0;
        }
    }
    return SES_DRV_OK;
}

/* Relu "f32->f32": max(x, 0), written so that NaN stays NaN (as the CPU driver does). */
static int32_t acme_relu(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    acme_tensor_t in, out;
    int32_t st;

    (void)state;
    if ((st = acme_check_launch(device, "Relu", "f32->f32", launch, 1, &in, &out)) != SES_DRV_OK)
        return st;
    int same = in.rank == out.rank;
    for (uint32_t d = 0; d < out.rank && same; d++)
        same = in.dims[d] == out.dims[d];
    if (!same) {
        char a[96], o[96];
        return acme_node_fail(device, "Relu", launch->node, SES_DRV_INVALID_ARGUMENT,
                              "shapes differ: input 0 is %s, output is %s",
                              acme_dims(in.dims, in.rank, a, sizeof a),
                              acme_dims(out.dims, out.rank, o, sizeof o));
    }
    for (uint64_t i = 0; i < out.count; i++)
        out.data[i] = in.data[i] < 0.0f ? 0.0f : in.data[i];
    return SES_DRV_OK;
}

/* REPLACE: one entry per (op, dtype signature) your device runs. Unlisted ops run elsewhere. */
static const ses_drv_kernel_t acme_kernels[] = {
    {
        .struct_size = sizeof(ses_drv_kernel_t),
        .op = "Add",
        .signature = "f32,f32->f32",
        .supports_node = acme_add_supports_node,
        .compute = acme_add,
    },
    {
        .struct_size = sizeof(ses_drv_kernel_t),
        .op = "Relu",
        .signature = "f32->f32",
        .compute = acme_relu,
    },
};

static int32_t acme_get_kernels(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                                uint32_t *out_count, uint32_t *out_stride) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_kernels || !out_count || !out_stride)
        return ACME_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "get_kernels: an out parameter is NULL");
    *out_kernels = acme_kernels;
    *out_count = (uint32_t)(sizeof acme_kernels / sizeof acme_kernels[0]);
    *out_stride = (uint32_t)sizeof(ses_drv_kernel_t);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The function table and negotiation: usually nothing to replace here.
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_api_t acme_api = {
    .struct_size = sizeof(ses_drv_api_t),
    .info = &acme_info,
    .open = acme_open,
    .close = acme_close,
    .enumerate_devices = acme_enumerate_devices,
    .open_device = acme_open_device,
    .open_device_with_options = acme_open_device_with_options,
    .close_device = acme_close_device,
    .get_kernels = acme_get_kernels,
    .memory_info = acme_memory_info,
    .alloc = acme_alloc,
    .free = acme_free,
    .map = acme_map,
    .unmap = acme_unmap,
    .import_host_ptr = acme_import_host_ptr,
    .copy_h2d = acme_copy_h2d,
    .copy_d2h = acme_copy_d2h,
    .copy_d2d = acme_copy_d2d,
    /* No SES_DRV_CAP_STREAMS or SES_DRV_CAP_EVENTS: the stream and event entries stay NULL. */
};

/* The oldest minor this driver speaks. */
static const uint32_t acme_minor_min = 0;

/* DRV-6 and DRV-7's checks, the newest minor both sides speak, and this driver's table. */
SES_DRV_EXPORT int32_t ses_drv_negotiate(ses_drv_negotiate_t *args) {
    return ses_drv_util_negotiate(args, ACME_NAME, acme_minor_min, SES_DRV_ABI_MINOR, &acme_api);
}
