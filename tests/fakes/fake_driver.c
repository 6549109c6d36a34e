/*
 * Fake driver plugins that misbehave on purpose, for the registry's tests.
 *
 * Every fake in this folder is this one file, compiled with exactly one -DFAKE_MODE_* flag and
 * -DFAKE_NAME="<manifest name>" (see meson.build and README.md). Without a misbehaviour the
 * fake is a minimal but real driver per <session/driver.h>: one ACCEL device backed by host
 * memory, alloc/free and bounds-checked copies, and one kernel, Identity at "f32->f32".
 * It reports every error through ses_drv_host_t.error and never prints.
 *
 * Modes:
 *   FAKE_MODE_GOOD             healthy (also the two "fake_dup" libraries)
 *   FAKE_MODE_NO_DEVICES       open returns SES_DRV_UNAVAILABLE unless FAKE_HW=1
 *   FAKE_MODE_NO_ENTRY         exports ses_driver_negotiate instead of ses_drv_negotiate
 *   FAKE_MODE_ABI2             negotiate claims ABI 2.0 and returns SES_DRV_INCOMPATIBLE
 *   FAKE_MODE_SMALL_TABLE      negotiate returns a table whose struct_size is 16
 *   FAKE_MODE_NEGOTIATE_FAILS  negotiate reports "license server unreachable", SES_DRV_INTERNAL
 *   FAKE_MODE_NULL_REQUIRED    the table's enumerate_devices (required) is NULL
 *   FAKE_MODE_MISSING_DEP      healthy, but linked against a library that is never there
 *   FAKE_MODE_ADD_ULP          healthy, plus Add "f32,f32->f32" (same shapes only) whose results
 *                              are one ulp high: within the conformance tolerance
 *   FAKE_MODE_ADD_WRONG        the same Add, but 0.01 high: session-driver-test must fail it
 *                              (both also have a correct SGD "f32,f32,f32->", an in-place update,
 *                              and a priority-5 Add entry that refuses every node, so the host
 *                              must fall back to the priority-0 entry)
 *   FAKE_MODE_GRAPHS           healthy, with streams and ABI 1.1 graphs: Add (same shapes),
 *                              Relu, Mul flagged SES_DRV_KERNEL_NO_CAPTURE, Identity, which
 *                              refuses to be recorded, and Reshape, which fails if ever run (the
 *                              host makes it a view); work on a stream runs at once unless the
 *                              stream is capturing, and a graph replays its records in order
 *                              (also ABI 1.2 native pointers, SES_DRV_CAP_NATIVE: a buffer's
 *                              native address is its host memory, import_native wraps one)
 *   FAKE_MODE_GRAPHS_1_0       the same code speaking ABI 1.0 with a 1.0-sized table: the host
 *                              must never call its graph or native entries
 *   FAKE_MODE_KERNEL_FAILS     healthy, but the 3rd Identity call on a device fails (INTERNAL,
 *                              "injected failure"); every other call works
 *   FAKE_MODE_ALLOC_NULL       healthy for allocations up to 4 KiB; up to 1 MiB alloc returns OK
 *                              without a buffer (a driver bug), above that OUT_OF_MEMORY
 *   FAKE_MODE_DEVICE_LOST      healthy until the 3rd Identity call on a device: from then on
 *                              compute, alloc and every copy return UNAVAILABLE, "device lost"
 *                              (DRV-81)
 *   FAKE_MODE_LAX              works, but breaks the rules a vendor used to have to guess at, so
 *                              that session-driver-test must fail each: negotiate checks the 1.0
 *                              size before the major (DRV-6, DRV-7); open accepts a host table
 *                              shorter than 1.0 (DRV-13); the stable id "fake_lax:0" reads as a
 *                              device name (DRV-35); map (CAP_MAP) takes unknown map_flags bits
 *                              (DRV-15); copy_h2d refuses a NULL source for 0 bytes and takes
 *                              0 bytes past the end (DRV-43); Relu is `x > 0 ? x : 0`, which
 *                              drops NaN (DRV-54)
 *   FAKE_MODE_LAX_CAPS         works, but sets CAP_HOST_VISIBLE without CAP_MAP and has a map
 *                              that works on a device without CAP_MAP (DRV-16, DRV-41)
 *   FAKE_MODE_OPTIONS          healthy, with ABI 1.5's open_device_with_options (DRV-87). When
 *                              the option driver.<name>.report is set, opening a device fails on
 *                              purpose with a message saying which entry the host called and
 *                              what it saw: the options argument's keys and values, and what
 *                              options->get and host->get_option answer for driver.<name>.x on
 *                              a thread of the driver's own (where thread-local options are gone)
 *   FAKE_MODE_OPTIONS_1_4      the same code speaking ABI 1.4: the host must call open_device
 */
#include <session/driver.h>

#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if (defined(FAKE_MODE_GOOD) + defined(FAKE_MODE_NO_DEVICES) + defined(FAKE_MODE_NO_ENTRY) + \
     defined(FAKE_MODE_ABI2) + defined(FAKE_MODE_SMALL_TABLE) +                              \
     defined(FAKE_MODE_NEGOTIATE_FAILS) + defined(FAKE_MODE_NULL_REQUIRED) +                 \
     defined(FAKE_MODE_MISSING_DEP) + defined(FAKE_MODE_ADD_ULP) +                          \
     defined(FAKE_MODE_ADD_WRONG) + defined(FAKE_MODE_GRAPHS) +                             \
     defined(FAKE_MODE_GRAPHS_1_0) + defined(FAKE_MODE_KERNEL_FAILS) +                      \
     defined(FAKE_MODE_ALLOC_NULL) + defined(FAKE_MODE_DEVICE_LOST) +                       \
     defined(FAKE_MODE_LAX) + defined(FAKE_MODE_LAX_CAPS) + defined(FAKE_MODE_OPTIONS) +    \
     defined(FAKE_MODE_OPTIONS_1_4)) != 1
#error "compile fake_driver.c with exactly one -DFAKE_MODE_* flag"
#endif

#ifndef FAKE_NAME
#error "compile fake_driver.c with -DFAKE_NAME=\"<the manifest's name>\""
#endif

/* Extra build facts, so a test can tell apart two libraries that claim one name. */
#ifndef FAKE_FEATURES
#define FAKE_FEATURES ""
#endif

/* The modes whose negotiate never hands out the real function table do not compile it, so that
 * -Werror does not trip over unused static functions. */
#if defined(FAKE_MODE_ABI2) || defined(FAKE_MODE_SMALL_TABLE) || defined(FAKE_MODE_NEGOTIATE_FAILS)
#define FAKE_HAS_TABLE 0
#else
#define FAKE_HAS_TABLE 1
#endif

#if defined(FAKE_MODE_GRAPHS) || defined(FAKE_MODE_GRAPHS_1_0)
#define FAKE_HAS_GRAPHS 1
#else
#define FAKE_HAS_GRAPHS 0
#endif

#if defined(FAKE_MODE_LAX) || defined(FAKE_MODE_LAX_CAPS)
#define FAKE_HAS_MAP 1
#else
#define FAKE_HAS_MAP 0
#endif

#if defined(FAKE_MODE_OPTIONS) || defined(FAKE_MODE_OPTIONS_1_4)
#define FAKE_HAS_OPTIONS 1
#include <pthread.h>
#include <stdio.h>
#else
#define FAKE_HAS_OPTIONS 0
#endif

/* The newest minor this fake speaks. */
#if defined(FAKE_MODE_GRAPHS_1_0)
#define FAKE_MINOR 0
#elif defined(FAKE_MODE_OPTIONS_1_4)
#define FAKE_MINOR 4
#else
#define FAKE_MINOR SES_DRV_ABI_MINOR
#endif

#define FAKE_DEVICE_NAME "Fake Accelerator"
#define FAKE_ALIGNMENT 64u
/* What the fake device claims to have; one allocation may use all of it. */
#define FAKE_MEMORY_BYTES (UINT64_C(256) << 20)

/* The oldest ABI 1.0 struct sizes this driver can read. */
#define FAKE_NEGOTIATE_MIN_SIZE SES_DRV_SIZEOF_1_0(ses_drv_negotiate_t, api)
#define FAKE_HOST_MIN_SIZE SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort)

#if !defined(FAKE_MODE_ABI2)
/* The host table is usable for error reports only when it is an ABI 1.0 table or newer. */
static int fake_host_usable(const ses_drv_host_t *host) {
    return host && host->struct_size >= FAKE_HOST_MIN_SIZE && host->error;
}
#endif

#if FAKE_HAS_TABLE

#if defined(FAKE_MODE_MISSING_DEP)
/* Defined by the helper library ses_fake_dep, whose SONAME names a file that never exists. */
extern int32_t ses_fake_dep_answer(void);
#endif

struct ses_drv_driver {
    const ses_drv_host_t *host;
    ses_drv_host_ctx_t *ctx;
};

struct ses_drv_device {
    ses_drv_driver_t *driver;
    atomic_uint calls; /* Identity computes so far (KERNEL_FAILS, DEVICE_LOST) */
    atomic_int lost;   /* DEVICE_LOST: every entry fails from now on */
};

/* KERNEL_FAILS fails this Identity call; DEVICE_LOST loses the device on it. */
#define FAKE_FAULT_AT_CALL 3u
/* ALLOC_NULL: allocations up to the first size work, up to the second return no buffer. */
#define FAKE_ALLOC_WORKS_BYTES 4096u
#define FAKE_ALLOC_NULL_BYTES (UINT64_C(1) << 20)

struct ses_drv_buffer {
    uint64_t size;
    unsigned char *data; /* FAKE_ALIGNMENT-aligned host memory */
    int imported;        /* made by import_native: data is the importer's, never freed here */
};

#if FAKE_HAS_GRAPHS
/* One elementwise operation with its arguments resolved, run now or recorded into a graph. */
typedef struct fake_op {
    char kind; /* '+', '*', 'r' (Relu) or '=' (Identity) */
    const ses_drv_buffer_t *in[2];
    uint64_t in_offset[2];
    ses_drv_buffer_t *out;
    uint64_t out_offset;
    uint64_t n; /* elements */
} fake_op_t;

struct ses_drv_graph {
    fake_op_t *ops;
    size_t n_ops, capacity;
};

/* Work given a stream runs at once, in order, unless the stream is recording. */
struct ses_drv_stream {
    ses_drv_graph_t *recording; /* non-NULL between capture_begin and capture_end */
};
#endif

static const ses_drv_info_t fake_info = {
    .struct_size = sizeof(ses_drv_info_t),
    .name = FAKE_NAME,
    .vendor = "libsession tests",
    .version = "1.0.0",
    .build_features = FAKE_FEATURES,
    .opset_version = 1,
    .flags = SES_DRV_INFO_UNLOADABLE,
};

/* Attaches a message to @p code through the host; every driver-level error goes through here. */
#define FAKE_FAIL(driver, code, ...) ((driver)->host->error((driver)->ctx, (code), __VA_ARGS__))

#if defined(FAKE_MODE_DEVICE_LOST)
/* After the device is lost every entry fails with UNAVAILABLE, as a GPU that fell off the bus. */
#define FAKE_CHECK_LOST(device, entry)                                                         \
    do {                                                                                       \
        if (atomic_load(&(device)->lost))                                                      \
            return FAKE_FAIL((device)->driver, SES_DRV_UNAVAILABLE,                            \
                             "%s %s: device lost (it stopped answering)", FAKE_NAME, (entry)); \
    } while (0)
#else
#define FAKE_CHECK_LOST(device, entry) ((void)0)
#endif

/* -- driver --------------------------------------------------------------------------------- */

static int32_t fake_open(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                         ses_drv_driver_t **out_driver) {
    ses_drv_driver_t *driver;

    if (out_driver)
        *out_driver = NULL;
#if defined(FAKE_MODE_LAX)
    /* The misbehaviour: any host table is taken, however short (DRV-13). */
    if (!host || !host->error)
        return SES_DRV_INVALID_ARGUMENT;
#else
    /* DRV-13: a table shorter than 1.0 is refused, with a message when it holds `error`. */
    if (!fake_host_usable(host)) {
        if (host && host->struct_size >= SES_DRV_SIZEOF_1_0(ses_drv_host_t, error) && host->error)
            return host->error(ctx, SES_DRV_INVALID_ARGUMENT,
                               "%s open: the host table is %" PRIu32 " bytes, ABI 1.0 needs %zu",
                               FAKE_NAME, host->struct_size, FAKE_HOST_MIN_SIZE);
        return SES_DRV_INVALID_ARGUMENT;
    }
#endif
    if (!out_driver)
        return host->error(ctx, SES_DRV_INVALID_ARGUMENT, "%s open: out_driver is NULL", FAKE_NAME);

#if defined(FAKE_MODE_NO_DEVICES)
    {
        /* A stand-in for "the vendor runtime found no hardware"; FAKE_HW=1 pretends there is. */
        const char *hw = getenv("FAKE_HW");
        if (!hw || strcmp(hw, "1") != 0)
            return host->error(ctx, SES_DRV_UNAVAILABLE,
                               "no fake hardware present (set FAKE_HW=1 to pretend)");
    }
#endif
#if defined(FAKE_MODE_MISSING_DEP)
    /* The call keeps the helper library a real dependency even under --as-needed. */
    if (ses_fake_dep_answer() != 42)
        return host->error(ctx, SES_DRV_INTERNAL, "%s open: helper library answered wrong",
                           FAKE_NAME);
#endif

    driver = calloc(1, sizeof(*driver));
    if (!driver)
        return host->error(ctx, SES_DRV_OUT_OF_MEMORY, "%s open: out of host memory", FAKE_NAME);
    driver->host = host;
    driver->ctx = ctx;
    *out_driver = driver;
    return SES_DRV_OK;
}

static void fake_close(ses_drv_driver_t *driver) {
    free(driver);
}

#if !defined(FAKE_MODE_NULL_REQUIRED)
static int32_t fake_enumerate_devices(ses_drv_driver_t *driver, uint32_t *inout_count,
                                      ses_drv_device_desc_t *out_descs) {
    ses_drv_device_desc_t *d;

    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    if (!inout_count)
        return FAKE_FAIL(driver, SES_DRV_INVALID_ARGUMENT, "%s enumerate_devices: count is NULL",
                         FAKE_NAME);
    if (!out_descs) {
        *inout_count = 1;
        return SES_DRV_OK;
    }
    if (*inout_count == 0)
        return SES_DRV_OK;
    d = &out_descs[0];
    if (d->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_device_desc_t, max_alloc))
        return FAKE_FAIL(driver, SES_DRV_INVALID_ARGUMENT,
                         "%s enumerate_devices: descriptor struct_size is %" PRIu32
                         ", ABI 1.0 needs at least %zu",
                         FAKE_NAME, d->struct_size,
                         SES_DRV_SIZEOF_1_0(ses_drv_device_desc_t, max_alloc));
    /* Only the 1.0 fields are written: struct_size and the host's extension chain stay as the
     * host set them. */
    d->reserved = 0;
    d->kind = SES_DRV_DEVICE_ACCEL;
    d->ordinal = 0;
#if defined(FAKE_MODE_LAX)
    d->stable_id = FAKE_NAME ":0"; /* the misbehaviour: reads as the device name (DRV-35) */
#else
    d->stable_id = "fake:" FAKE_NAME ":0";
#endif
    d->name = FAKE_DEVICE_NAME;
    d->memory_bytes = FAKE_MEMORY_BYTES;
    d->memory_free = 0; /* unknown: several instances share the one budget */
#if defined(FAKE_MODE_LAX)
    d->caps = SES_DRV_CAP_MAP;
#elif defined(FAKE_MODE_LAX_CAPS)
    d->caps = SES_DRV_CAP_HOST_VISIBLE; /* the misbehaviour: no CAP_MAP, yet map is set */
#else
    d->caps = FAKE_HAS_GRAPHS ? SES_DRV_CAP_STREAMS | SES_DRV_CAP_GRAPHS | SES_DRV_CAP_NATIVE : 0;
#endif
    d->mem_kinds = 1u << SES_DRV_MEM_DEVICE;
    d->alignment = FAKE_ALIGNMENT;
    d->max_alloc = FAKE_MEMORY_BYTES;
    *inout_count = 1;
    return SES_DRV_OK;
}
#endif

/* -- devices -------------------------------------------------------------------------------- */

static int32_t fake_open_device(ses_drv_driver_t *driver, uint32_t ordinal,
                                ses_drv_device_t **out_device) {
    ses_drv_device_t *device;

    if (out_device)
        *out_device = NULL;
    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_device)
        return FAKE_FAIL(driver, SES_DRV_INVALID_ARGUMENT, "%s open_device: out_device is NULL",
                         FAKE_NAME);
    if (ordinal != 0)
        return FAKE_FAIL(driver, SES_DRV_NOT_FOUND,
                         "%s open_device: no device %" PRIu32 "; the fake has 1 device (0)",
                         FAKE_NAME, ordinal);
    device = calloc(1, sizeof(*device));
    if (!device)
        return FAKE_FAIL(driver, SES_DRV_OUT_OF_MEMORY, "%s open_device: out of host memory",
                         FAKE_NAME);
    device->driver = driver;
    atomic_init(&device->calls, 0);
    atomic_init(&device->lost, 0);
    *out_device = device;
    return SES_DRV_OK;
}

static void fake_close_device(ses_drv_device_t *device) {
    free(device);
}

#if FAKE_HAS_OPTIONS
/* One option read on a thread of the fake's own: through options->get when @p options is set,
 * else through host->get_option. */
typedef struct fake_probe {
    ses_drv_driver_t *driver;
    const ses_drv_options_t *options;
    char value[64];
    int32_t code;
} fake_probe_t;

static void *fake_probe_thread(void *arg) {
    fake_probe_t *p = arg;
    uint64_t size = 0;

    p->value[0] = '\0';
    p->code = p->options ? p->options->get(p->options, "driver." FAKE_NAME ".x", p->value,
                                           sizeof p->value, &size)
                         : p->driver->host->get_option(p->driver->ctx, "driver." FAKE_NAME ".x",
                                                       p->value, sizeof p->value, &size);
    return NULL;
}

/* What an open saw, as a failure message, when driver.<name>.report is set (read on the
 * calling thread); otherwise the device opens as usual. */
static int32_t fake_open_report(ses_drv_driver_t *driver, uint32_t ordinal,
                                const ses_drv_options_t *options, ses_drv_device_t **out_device) {
    char report[8], seen[512] = "", other[64];
    uint64_t size = 0;
    fake_probe_t probe = {driver, options, "", 0};
    pthread_t thread;
    size_t used = 0;

    if (!driver)
        return SES_DRV_INVALID_ARGUMENT;
    if ((options
             ? options->get(options, "driver." FAKE_NAME ".report", report, sizeof report, &size)
             : driver->host->get_option(driver->ctx, "driver." FAKE_NAME ".report", report,
                                        sizeof report, &size)) != SES_DRV_OK)
        return fake_open_device(driver, ordinal, out_device);
    for (uint32_t i = 0; options && i < options->count && used < sizeof seen; i++) {
        int n = snprintf(seen + used, sizeof seen - used, " %s=%s", options->keys[i],
                         options->values[i]);
        used += n > 0 ? (size_t)n : 0;
    }
    if (pthread_create(&thread, NULL, fake_probe_thread, &probe) != 0)
        return FAKE_FAIL(driver, SES_DRV_INTERNAL, "%s: pthread_create failed", FAKE_NAME);
    pthread_join(thread, NULL);
    snprintf(other, sizeof other, "%s", probe.code == SES_DRV_OK ? probe.value : "not found");
    if (options) {
        /* The bad calls a driver can make: no key, and no buffer (which sizes the value). */
        uint64_t need = 0;
        int32_t no_key = options->get(options, NULL, report, sizeof report, &size);
        int32_t no_buffer = options->get(options, "driver." FAKE_NAME ".x", NULL, 0, &need);
        return FAKE_FAIL(driver, SES_DRV_INVALID_ARGUMENT,
                         "%s report: open_device_with_options, %" PRIu32
                         " options:%s; x on another thread: %s; get without a key: %" PRId32
                         ", without a buffer: %" PRId32 " needing %" PRIu64 " bytes",
                         FAKE_NAME, options->count, seen, other, no_key, no_buffer, need);
    }
    return FAKE_FAIL(driver, SES_DRV_INVALID_ARGUMENT,
                     "%s report: open_device; x on another thread: %s", FAKE_NAME, other);
}

static int32_t fake_open_device_old(ses_drv_driver_t *driver, uint32_t ordinal,
                                    ses_drv_device_t **out_device) {
    return fake_open_report(driver, ordinal, NULL, out_device);
}
#endif

/* -- memory --------------------------------------------------------------------------------- */

static int32_t fake_alloc(ses_drv_device_t *device, uint64_t bytes, uint32_t mem_kind,
                          ses_drv_buffer_t **out_buffer) {
    ses_drv_driver_t *driver;
    ses_drv_buffer_t *buffer;
    uint64_t rounded;

    if (out_buffer)
        *out_buffer = NULL;
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    driver = device->driver;
    if (!out_buffer)
        return FAKE_FAIL(driver, SES_DRV_INVALID_ARGUMENT, "%s alloc: out_buffer is NULL",
                         FAKE_NAME);
    if (bytes == 0)
        return FAKE_FAIL(driver, SES_DRV_INVALID_ARGUMENT, "%s alloc: size is 0", FAKE_NAME);
    if (mem_kind > SES_DRV_MEM_SHARED)
        return FAKE_FAIL(driver, SES_DRV_INVALID_ARGUMENT, "%s alloc: unknown memory kind %" PRIu32,
                         FAKE_NAME, mem_kind);
    if (mem_kind != SES_DRV_MEM_DEVICE)
        return FAKE_FAIL(driver, SES_DRV_UNIMPLEMENTED,
                         "%s alloc: memory kind %" PRIu32 " is not supported; only device (%d)",
                         FAKE_NAME, mem_kind, SES_DRV_MEM_DEVICE);
    if (bytes > FAKE_MEMORY_BYTES)
        return FAKE_FAIL(driver, SES_DRV_OUT_OF_MEMORY,
                         "%s alloc: %" PRIu64 " bytes asked, the device has %" PRIu64, FAKE_NAME,
                         bytes, FAKE_MEMORY_BYTES);
    FAKE_CHECK_LOST(device, "alloc");
#if defined(FAKE_MODE_ALLOC_NULL)
    if (bytes > FAKE_ALLOC_NULL_BYTES)
        return FAKE_FAIL(driver, SES_DRV_OUT_OF_MEMORY,
                         "%s alloc: %" PRIu64 " bytes asked, %" PRIu64 " free", FAKE_NAME, bytes,
                         FAKE_ALLOC_NULL_BYTES);
    if (bytes > FAKE_ALLOC_WORKS_BYTES)
        return SES_DRV_OK; /* the bug: OK, and *out_buffer still NULL */
#endif

    buffer = calloc(1, sizeof(*buffer));
    if (!buffer)
        goto oom;
    /* C11 aligned_alloc wants a size that is a multiple of the alignment; bytes is bounded
     * above, so the rounding cannot overflow. */
    rounded = (bytes + FAKE_ALIGNMENT - 1) / FAKE_ALIGNMENT * FAKE_ALIGNMENT;
    buffer->data = aligned_alloc(FAKE_ALIGNMENT, (size_t)rounded);
    if (!buffer->data)
        goto oom;
    buffer->size = bytes;
    *out_buffer = buffer;
    return SES_DRV_OK;

oom:
    free(buffer);
    return FAKE_FAIL(driver, SES_DRV_OUT_OF_MEMORY,
                     "%s alloc: out of host memory for %" PRIu64 " bytes", FAKE_NAME, bytes);
}

static void fake_free(ses_drv_device_t *device, ses_drv_buffer_t *buffer) {
    (void)device;
    if (!buffer)
        return;
    if (!buffer->imported)
        free(buffer->data);
    free(buffer);
}

#if FAKE_HAS_GRAPHS
/* DRV-83: the fake's device memory is host memory, so its native address is that pointer. */
static int32_t fake_buffer_native(ses_drv_device_t *device, ses_drv_buffer_t *buffer,
                                  void **out_native) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!buffer || !out_native)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s buffer_native: %s is NULL", FAKE_NAME,
                         !buffer ? "buffer" : "out_native");
    *out_native = buffer->data;
    return SES_DRV_OK;
}

/* DRV-84: wraps someone else's memory; free leaves it alone. */
static int32_t fake_import_native(ses_drv_device_t *device, void *native, uint64_t bytes,
                                  ses_drv_buffer_t **out_buffer) {
    ses_drv_buffer_t *buffer;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_buffer)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s import_native: out_buffer is NULL", FAKE_NAME);
    *out_buffer = NULL;
    if (!native || !bytes)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT, "%s import_native: %s",
                         FAKE_NAME, !native ? "the address is NULL" : "bytes is 0");
    buffer = calloc(1, sizeof *buffer);
    if (!buffer)
        return FAKE_FAIL(device->driver, SES_DRV_OUT_OF_MEMORY,
                         "%s import_native: out of host memory", FAKE_NAME);
    buffer->data = native;
    buffer->size = bytes;
    buffer->imported = 1;
    *out_buffer = buffer;
    return SES_DRV_OK;
}
#endif

/* Checks that [offset, offset + bytes) lies inside @p buffer; @p what names it in the message. */
static int32_t fake_check_range(ses_drv_device_t *device, const char *entry, const char *what,
                                const ses_drv_buffer_t *buffer, uint64_t offset, uint64_t bytes) {
    if (!buffer)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT, "%s %s: %s buffer is NULL",
                         FAKE_NAME, entry, what);
    if (offset > buffer->size || bytes > buffer->size - offset)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s %s: %s range [%" PRIu64 ", %" PRIu64 " + %" PRIu64
                         ") overruns a %" PRIu64 "-byte buffer",
                         FAKE_NAME, entry, what, offset, offset, bytes, buffer->size);
    return SES_DRV_OK;
}

/* The fake has no streams (no SES_DRV_CAP_STREAMS), so a host that passes one is wrong. */
static int32_t fake_check_no_stream(ses_drv_device_t *device, const char *entry,
                                    const ses_drv_stream_t *stream) {
    if (stream)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s %s: got a stream, but the device has no SES_DRV_CAP_STREAMS",
                         FAKE_NAME, entry);
    return SES_DRV_OK;
}

/* -- copies --------------------------------------------------------------------------------- */

static int32_t fake_copy_h2d(ses_drv_device_t *device, ses_drv_stream_t *stream, const void *src,
                             ses_drv_buffer_t *dst, uint64_t dst_offset, uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    FAKE_CHECK_LOST(device, "copy_h2d");
    if ((st = fake_check_no_stream(device, "copy_h2d", stream)) != SES_DRV_OK)
        return st;
#if defined(FAKE_MODE_LAX)
    /* The misbehaviour (DRV-43): a NULL source is refused even for 0 bytes, and 0 bytes are
     * taken before the bounds are checked, wherever they are. */
    if (!src)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT, "%s copy_h2d: source is NULL",
                         FAKE_NAME);
    if (bytes == 0)
        return SES_DRV_OK;
#endif
    if ((st = fake_check_range(device, "copy_h2d", "destination", dst, dst_offset, bytes)) !=
        SES_DRV_OK)
        return st;
    if (bytes == 0)
        return SES_DRV_OK;
    if (!src)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT, "%s copy_h2d: source is NULL",
                         FAKE_NAME);
    memcpy(dst->data + dst_offset, src, (size_t)bytes);
    return SES_DRV_OK;
}

static int32_t fake_copy_d2h(ses_drv_device_t *device, ses_drv_stream_t *stream,
                             ses_drv_buffer_t *src, uint64_t src_offset, void *dst,
                             uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    FAKE_CHECK_LOST(device, "copy_d2h");
    if ((st = fake_check_no_stream(device, "copy_d2h", stream)) != SES_DRV_OK)
        return st;
    if ((st = fake_check_range(device, "copy_d2h", "source", src, src_offset, bytes)) != SES_DRV_OK)
        return st;
    if (bytes == 0)
        return SES_DRV_OK;
    if (!dst)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s copy_d2h: destination is NULL", FAKE_NAME);
    memcpy(dst, src->data + src_offset, (size_t)bytes);
    return SES_DRV_OK;
}

static int32_t fake_copy_d2d(ses_drv_device_t *device, ses_drv_stream_t *stream,
                             ses_drv_buffer_t *src, uint64_t src_offset, ses_drv_buffer_t *dst,
                             uint64_t dst_offset, uint64_t bytes) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    FAKE_CHECK_LOST(device, "copy_d2d");
    if ((st = fake_check_no_stream(device, "copy_d2d", stream)) != SES_DRV_OK)
        return st;
    if ((st = fake_check_range(device, "copy_d2d", "source", src, src_offset, bytes)) != SES_DRV_OK)
        return st;
    if ((st = fake_check_range(device, "copy_d2d", "destination", dst, dst_offset, bytes)) !=
        SES_DRV_OK)
        return st;
    /* Source and destination may be ranges of one buffer, so they may overlap. */
    if (bytes != 0)
        memmove(dst->data + dst_offset, src->data + src_offset, (size_t)bytes);
    return SES_DRV_OK;
}

#if FAKE_HAS_MAP
/* map and unmap: buffers are host memory, so a map is a pointer into them. */
static int32_t fake_map(ses_drv_device_t *device, ses_drv_buffer_t *buffer, uint64_t offset,
                        uint64_t bytes, uint32_t map_flags, void **out_host_ptr) {
    int32_t st;

    if (!device || !out_host_ptr)
        return SES_DRV_INVALID_ARGUMENT;
    *out_host_ptr = NULL;
#if defined(FAKE_MODE_LAX_CAPS)
    /* Right about flags, so that the one misbehaviour is working without CAP_MAP. */
    if (map_flags & ~(SES_DRV_MAP_READ | SES_DRV_MAP_WRITE))
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s map: unknown map_flags 0x%" PRIx32, FAKE_NAME, map_flags);
#else
    (void)map_flags; /* the misbehaviour: unknown bits are ignored (DRV-15) */
#endif
    if ((st = fake_check_range(device, "map", "mapped", buffer, offset, bytes)) != SES_DRV_OK)
        return st;
    *out_host_ptr = buffer->data + offset;
    return SES_DRV_OK;
}

static int32_t fake_unmap(ses_drv_device_t *device, ses_drv_buffer_t *buffer, void *host_ptr) {
    if (!device || !buffer || !host_ptr)
        return SES_DRV_INVALID_ARGUMENT;
    return SES_DRV_OK;
}
#endif

/* -- kernels -------------------------------------------------------------------------------- */

/* Stores the element count of @p t in *out_count; fails on a negative or overflowing shape. */
static int32_t fake_element_count(ses_drv_device_t *device, const char *node_name, const char *what,
                                  const ses_drv_tensor_desc_t *t, uint64_t *out_count) {
    uint64_t count = 1;

    if (t->rank > 0 && !t->dims)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s Identity \"%s\": %s has rank %" PRIu32 " but no dims", FAKE_NAME,
                         node_name, what, t->rank);
    for (uint32_t i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0)
            return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                             "%s Identity \"%s\": %s dimension %" PRIu32 " is %" PRId64, FAKE_NAME,
                             node_name, what, i, t->dims[i]);
        if (t->dims[i] != 0 && count > UINT64_MAX / 4 / (uint64_t)t->dims[i])
            return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                             "%s Identity \"%s\": %s is too large", FAKE_NAME, node_name, what);
        count *= (uint64_t)t->dims[i];
    }
    *out_count = count;
    return SES_DRV_OK;
}

static int32_t fake_identity_compute(ses_drv_device_t *device, void *state,
                                     const ses_drv_launch_t *launch) {
    const ses_drv_node_t *node;
    const char *name;
    uint64_t n_in, n_out, bytes;
    int32_t st;

    (void)state;
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets) ||
        !launch->node || launch->node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx))
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s Identity: launch or node is NULL or older than ABI 1.0", FAKE_NAME);
    node = launch->node;
    name = node->name ? node->name : "?";
#if defined(FAKE_MODE_KERNEL_FAILS)
    if (atomic_fetch_add(&device->calls, 1) + 1 == FAKE_FAULT_AT_CALL)
        return FAKE_FAIL(device->driver, SES_DRV_INTERNAL,
                         "%s Identity \"%s\": injected failure on call %u", FAKE_NAME, name,
                         FAKE_FAULT_AT_CALL);
#elif defined(FAKE_MODE_DEVICE_LOST)
    if (atomic_fetch_add(&device->calls, 1) + 1 >= FAKE_FAULT_AT_CALL)
        atomic_store(&device->lost, 1);
#endif
    FAKE_CHECK_LOST(device, "Identity");
#if FAKE_HAS_GRAPHS
    /* Streams are fine; being recorded is not (the host must run it outside the graph). */
    if (launch->stream && launch->stream->recording)
        return FAKE_FAIL(device->driver, SES_DRV_UNIMPLEMENTED,
                         "%s Identity \"%s\": cannot be recorded into a graph", FAKE_NAME, name);
#else
    if ((st = fake_check_no_stream(device, "Identity", launch->stream)) != SES_DRV_OK)
        return st;
#endif
    if (node->n_inputs != 1 || node->n_outputs != 1 || !node->inputs || !node->outputs)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s Identity \"%s\": wants 1 input and 1 output, got %" PRIu32
                         " and %" PRIu32,
                         FAKE_NAME, name, node->n_inputs, node->n_outputs);
    if (node->inputs[0].dtype != SES_DRV_DTYPE_F32 || node->outputs[0].dtype != SES_DRV_DTYPE_F32)
        return FAKE_FAIL(
            device->driver, SES_DRV_UNIMPLEMENTED,
            "%s Identity \"%s\": only f32 (dtype %d); input is %" PRIu32 ", output is %" PRIu32,
            FAKE_NAME, name, SES_DRV_DTYPE_F32, node->inputs[0].dtype, node->outputs[0].dtype);
    if ((st = fake_element_count(device, name, "input", &node->inputs[0], &n_in)) != SES_DRV_OK)
        return st;
    if ((st = fake_element_count(device, name, "output", &node->outputs[0], &n_out)) != SES_DRV_OK)
        return st;
    if (n_in != n_out)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s Identity \"%s\": input has %" PRIu64 " elements, output has %" PRIu64,
                         FAKE_NAME, name, n_in, n_out);
    if (!launch->inputs || !launch->outputs || !launch->input_offsets || !launch->output_offsets)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s Identity \"%s\": launch lacks buffers or offsets", FAKE_NAME, name);
    bytes = n_in * sizeof(float);
    if ((st = fake_check_range(device, "Identity", "input", launch->inputs[0],
                               launch->input_offsets[0], bytes)) != SES_DRV_OK)
        return st;
    if ((st = fake_check_range(device, "Identity", "output", launch->outputs[0],
                               launch->output_offsets[0], bytes)) != SES_DRV_OK)
        return st;
    /* Input and output may be ranges of one arena buffer. */
    if (bytes != 0)
        memmove(launch->outputs[0]->data + launch->output_offsets[0],
                launch->inputs[0]->data + launch->input_offsets[0], (size_t)bytes);
    return SES_DRV_OK;
}

#if defined(FAKE_MODE_LAX)
/* Relu "f32->f32" written the tempting way, `x > 0 ? x : 0`: NaN gives 0 (DRV-54 wants NaN). */
static int32_t fake_relu_lax_compute(ses_drv_device_t *device, void *state,
                                     const ses_drv_launch_t *launch) {
    const ses_drv_node_t *node = launch->node;
    uint64_t n, bytes;
    int32_t st;

    (void)state;
    if ((st = fake_check_no_stream(device, "Relu", launch->stream)) != SES_DRV_OK)
        return st;
    if (node->n_inputs != 1 || node->n_outputs != 1)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s Relu: wants 1 input and 1 output", FAKE_NAME);
    if ((st = fake_element_count(device, node->name, "output", &node->outputs[0], &n)) !=
        SES_DRV_OK)
        return st;
    bytes = n * sizeof(float);
    if ((st = fake_check_range(device, "Relu", "input", launch->inputs[0],
                               launch->input_offsets[0], bytes)) != SES_DRV_OK ||
        (st = fake_check_range(device, "Relu", "output", launch->outputs[0],
                               launch->output_offsets[0], bytes)) != SES_DRV_OK)
        return st;
    for (uint64_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, launch->inputs[0]->data + launch->input_offsets[0] + i * 4, 4);
        x = x > 0 ? x : 0; /* the misbehaviour */
        memcpy(launch->outputs[0]->data + launch->output_offsets[0] + i * 4, &x, 4);
    }
    return SES_DRV_OK;
}
#endif

#if defined(FAKE_MODE_ADD_ULP) || defined(FAKE_MODE_ADD_WRONG) || FAKE_HAS_GRAPHS
/* Add of two f32 tensors of one shape; other shapes are refused, as a real driver may. */
static int32_t fake_add_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    const ses_drv_tensor_desc_t *a = &node->inputs[0], *b = &node->inputs[1];

    if (node->n_inputs != 2 || a->rank != b->rank ||
        (a->rank && memcmp(a->dims, b->dims, a->rank * sizeof(int64_t)) != 0))
        return FAKE_FAIL(device->driver, SES_DRV_UNIMPLEMENTED,
                         "%s Add \"%s\": only inputs of one shape", FAKE_NAME,
                         node->name ? node->name : "?");
    return SES_DRV_OK;
}
#endif

#if defined(FAKE_MODE_ADD_ULP) || defined(FAKE_MODE_ADD_WRONG)
#define FAKE_HAS_ADD 1

static int32_t fake_add_compute(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    const ses_drv_node_t *node = launch->node;
    uint64_t n, bytes;
    int32_t st;

    (void)state;
    if ((st = fake_check_no_stream(device, "Add", launch->stream)) != SES_DRV_OK)
        return st;
    if ((st = fake_add_supports(device, node)) != SES_DRV_OK)
        return st;
    if ((st = fake_element_count(device, node->name, "output", &node->outputs[0], &n)) !=
        SES_DRV_OK)
        return st;
    bytes = n * sizeof(float);
    if ((st = fake_check_range(device, "Add", "input 0", launch->inputs[0],
                               launch->input_offsets[0], bytes)) != SES_DRV_OK ||
        (st = fake_check_range(device, "Add", "input 1", launch->inputs[1],
                               launch->input_offsets[1], bytes)) != SES_DRV_OK ||
        (st = fake_check_range(device, "Add", "output", launch->outputs[0],
                               launch->output_offsets[0], bytes)) != SES_DRV_OK)
        return st;
    for (uint64_t i = 0; i < n; i++) {
        float x, y, sum;
        memcpy(&x, launch->inputs[0]->data + launch->input_offsets[0] + i * 4, 4);
        memcpy(&y, launch->inputs[1]->data + launch->input_offsets[1] + i * 4, 4);
#if defined(FAKE_MODE_ADD_ULP)
        sum = nextafterf(x + y, INFINITY); /* the misbehaviour: one ulp high */
#else
        sum = x + y + 0.01f; /* the misbehaviour: 0.01 high */
#endif
        memcpy(launch->outputs[0]->data + launch->output_offsets[0] + i * 4, &sum, 4);
    }
    return SES_DRV_OK;
}
/* A higher-priority Add entry that refuses every node, so the host must fall back to the next
 * entry of the same op and signature on the same device rather than leave the device. */
static int32_t fake_add_refuse_all(ses_drv_device_t *device, const ses_drv_node_t *node) {
    return FAKE_FAIL(device->driver, SES_DRV_UNIMPLEMENTED,
                     "%s Add \"%s\" (priority 5 entry): refuses every node", FAKE_NAME,
                     node->name ? node->name : "?");
}

/* SGD "f32,f32,f32->": var -= lr * grad in the device's own memory, so that a test sees an
 * in-place update run on a device that is not the variables' home. */
static int32_t fake_sgd_compute(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    const ses_drv_node_t *node = launch->node;
    uint64_t n, bytes;
    float lr;
    int32_t st;

    (void)state;
    if ((st = fake_check_no_stream(device, "SGD", launch->stream)) != SES_DRV_OK)
        return st;
    if (node->n_inputs != 3 || node->n_outputs != 0 || node->inputs[2].rank != 0)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s SGD: wants var, grad and a scalar lr", FAKE_NAME);
    if ((st = fake_element_count(device, node->name, "var", &node->inputs[0], &n)) != SES_DRV_OK)
        return st;
    bytes = n * sizeof(float);
    if ((st = fake_check_range(device, "SGD", "var", launch->inputs[0], launch->input_offsets[0],
                               bytes)) != SES_DRV_OK ||
        (st = fake_check_range(device, "SGD", "grad", launch->inputs[1],
                               launch->input_offsets[1], bytes)) != SES_DRV_OK ||
        (st = fake_check_range(device, "SGD", "lr", launch->inputs[2], launch->input_offsets[2],
                               sizeof(float))) != SES_DRV_OK)
        return st;
    memcpy(&lr, launch->inputs[2]->data + launch->input_offsets[2], sizeof lr);
    for (uint64_t i = 0; i < n; i++) {
        float v, g;
        memcpy(&v, launch->inputs[0]->data + launch->input_offsets[0] + i * 4, 4);
        memcpy(&g, launch->inputs[1]->data + launch->input_offsets[1] + i * 4, 4);
        v -= lr * g;
        memcpy(launch->inputs[0]->data + launch->input_offsets[0] + i * 4, &v, 4);
    }
    return SES_DRV_OK;
}
#else
#define FAKE_HAS_ADD 0
#endif

#if FAKE_HAS_GRAPHS
static void fake_op_run(const fake_op_t *op) {
    for (uint64_t i = 0; i < op->n; i++) {
        float x, y = 0.0f, z;
        memcpy(&x, op->in[0]->data + op->in_offset[0] + i * 4, 4);
        if (op->in[1])
            memcpy(&y, op->in[1]->data + op->in_offset[1] + i * 4, 4);
        /* Relu as x < 0 ? 0 : x, so that NaN stays NaN (DRV-54). */
        z = op->kind == '+' ? x + y : op->kind == '*' ? x * y : op->kind == 'r' ? (x < 0 ? 0 : x) : x;
        memcpy(op->out->data + op->out_offset + i * 4, &z, 4);
    }
}

/* Appends @p op to @p graph. */
static int32_t fake_record(ses_drv_device_t *device, ses_drv_graph_t *graph, const fake_op_t *op) {
    if (graph->n_ops == graph->capacity) {
        size_t capacity = graph->capacity ? graph->capacity * 2 : 16;
        fake_op_t *ops = realloc(graph->ops, capacity * sizeof *ops);
        if (!ops)
            return FAKE_FAIL(device->driver, SES_DRV_OUT_OF_MEMORY,
                             "%s: out of host memory recording a graph", FAKE_NAME);
        graph->ops = ops;
        graph->capacity = capacity;
    }
    graph->ops[graph->n_ops++] = *op;
    return SES_DRV_OK;
}

/* Add, Mul and Relu of f32 tensors of one shape: checked, then run or recorded. */
static int32_t fake_elementwise(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                                char kind, const char *op_name) {
    const ses_drv_node_t *node = launch->node;
    uint32_t n_in = kind == 'r' ? 1 : 2;
    fake_op_t op;
    uint64_t bytes;
    int32_t st;

    if (node->n_inputs != n_in || node->n_outputs != 1)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT, "%s %s: wrong argument count",
                         FAKE_NAME, op_name);
    if (n_in == 2 && (st = fake_add_supports(device, node)) != SES_DRV_OK)
        return st;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    if ((st = fake_element_count(device, node->name, "output", &node->outputs[0], &op.n)) !=
        SES_DRV_OK)
        return st;
    bytes = op.n * sizeof(float);
    for (uint32_t i = 0; i < n_in; i++) {
        if ((st = fake_check_range(device, op_name, "input", launch->inputs[i],
                                   launch->input_offsets[i], bytes)) != SES_DRV_OK)
            return st;
        op.in[i] = launch->inputs[i];
        op.in_offset[i] = launch->input_offsets[i];
    }
    if ((st = fake_check_range(device, op_name, "output", launch->outputs[0],
                               launch->output_offsets[0], bytes)) != SES_DRV_OK)
        return st;
    op.out = launch->outputs[0];
    op.out_offset = launch->output_offsets[0];
    if (launch->stream && launch->stream->recording)
        return fake_record(device, launch->stream->recording, &op);
    fake_op_run(&op);
    return SES_DRV_OK;
}

static int32_t fake_add_graphs_compute(ses_drv_device_t *device, void *state,
                                       const ses_drv_launch_t *launch) {
    (void)state;
    return fake_elementwise(device, launch, '+', "Add");
}

static int32_t fake_mul_compute(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    (void)state;
    /* Flagged SES_DRV_KERNEL_NO_CAPTURE: being asked to record it is the host's mistake. */
    if (launch->stream && launch->stream->recording)
        return FAKE_FAIL(device->driver, SES_DRV_INTERNAL,
                         "%s Mul: recorded although flagged SES_DRV_KERNEL_NO_CAPTURE", FAKE_NAME);
    return fake_elementwise(device, launch, '*', "Mul");
}

static int32_t fake_relu_compute(ses_drv_device_t *device, void *state,
                                 const ses_drv_launch_t *launch) {
    (void)state;
    return fake_elementwise(device, launch, 'r', "Relu");
}

/* Reshape: the host makes it a view of its input (compile/memory.c), so it is never run. */
static int32_t fake_reshape_compute(ses_drv_device_t *device, void *state,
                                    const ses_drv_launch_t *launch) {
    (void)state;
    (void)launch;
    return FAKE_FAIL(device->driver, SES_DRV_INTERNAL,
                     "%s Reshape: run, though it moves no bytes (the host makes it a view)",
                     FAKE_NAME);
}

/* -- streams and graphs --------------------------------------------------------------------- */

static int32_t fake_stream_create(ses_drv_device_t *device, ses_drv_stream_t **out_stream) {
    if (!device || !out_stream)
        return SES_DRV_INVALID_ARGUMENT;
    *out_stream = calloc(1, sizeof **out_stream);
    return *out_stream ? SES_DRV_OK
                       : FAKE_FAIL(device->driver, SES_DRV_OUT_OF_MEMORY,
                                   "%s stream_create: out of host memory", FAKE_NAME);
}

static void fake_graph_destroy(ses_drv_device_t *device, ses_drv_graph_t *graph) {
    (void)device;
    if (graph)
        free(graph->ops);
    free(graph);
}

static void fake_stream_destroy(ses_drv_device_t *device, ses_drv_stream_t *stream) {
    if (stream)
        fake_graph_destroy(device, stream->recording);
    free(stream);
}

static int32_t fake_stream_synchronize(ses_drv_device_t *device, ses_drv_stream_t *stream) {
    if (!device || !stream)
        return SES_DRV_INVALID_ARGUMENT;
    if (stream->recording)
        return FAKE_FAIL(device->driver, SES_DRV_FAILED_PRECONDITION,
                         "%s stream_synchronize: the stream is recording a graph", FAKE_NAME);
    return SES_DRV_OK; /* its work ran when it was enqueued */
}

static int32_t fake_capture_begin(ses_drv_device_t *device, ses_drv_stream_t *stream) {
    if (!device || !stream)
        return SES_DRV_INVALID_ARGUMENT;
    if (stream->recording)
        return FAKE_FAIL(device->driver, SES_DRV_FAILED_PRECONDITION,
                         "%s capture_begin: the stream is recording already", FAKE_NAME);
    stream->recording = calloc(1, sizeof *stream->recording);
    return stream->recording ? SES_DRV_OK
                             : FAKE_FAIL(device->driver, SES_DRV_OUT_OF_MEMORY,
                                         "%s capture_begin: out of host memory", FAKE_NAME);
}

static int32_t fake_capture_end(ses_drv_device_t *device, ses_drv_stream_t *stream,
                                ses_drv_graph_t **out_graph) {
    if (!device || !stream)
        return SES_DRV_INVALID_ARGUMENT;
    if (!stream->recording)
        return FAKE_FAIL(device->driver, SES_DRV_FAILED_PRECONDITION,
                         "%s capture_end: the stream is not recording", FAKE_NAME);
    if (out_graph)
        *out_graph = stream->recording;
    else
        fake_graph_destroy(device, stream->recording);
    stream->recording = NULL;
    return SES_DRV_OK;
}

static int32_t fake_graph_launch(ses_drv_device_t *device, ses_drv_graph_t *graph,
                                 ses_drv_stream_t *stream) {
    if (!device || !graph || !stream)
        return SES_DRV_INVALID_ARGUMENT;
    if (stream->recording)
        return FAKE_FAIL(device->driver, SES_DRV_FAILED_PRECONDITION,
                         "%s graph_launch: the stream is recording", FAKE_NAME);
    for (size_t i = 0; i < graph->n_ops; i++)
        fake_op_run(&graph->ops[i]);
    return SES_DRV_OK;
}
#endif /* FAKE_HAS_GRAPHS */

static const ses_drv_kernel_t fake_kernels[] = {
    {
        .struct_size = sizeof(ses_drv_kernel_t),
        .op = "Identity",
        .signature = "f32->f32",
        .priority = 0,
        .flags = 0,
        .compute = fake_identity_compute,
    },
#if FAKE_HAS_ADD
    {
        .struct_size = sizeof(ses_drv_kernel_t),
        .op = "Add",
        .signature = "f32,f32->f32",
        .supports_node = fake_add_supports,
        .compute = fake_add_compute,
    },
    {
        .struct_size = sizeof(ses_drv_kernel_t),
        .op = "Add",
        .signature = "f32,f32->f32",
        .priority = 5,
        .supports_node = fake_add_refuse_all,
        .compute = fake_add_compute,
    },
    {
        .struct_size = sizeof(ses_drv_kernel_t),
        .op = "SGD",
        .signature = "f32,f32,f32->",
        .compute = fake_sgd_compute,
    },
#endif
#if defined(FAKE_MODE_LAX)
    {
        .struct_size = sizeof(ses_drv_kernel_t),
        .op = "Relu",
        .signature = "f32->f32",
        .compute = fake_relu_lax_compute,
    },
#endif
#if FAKE_HAS_GRAPHS
    {
        .struct_size = sizeof(ses_drv_kernel_t),
        .op = "Add",
        .signature = "f32,f32->f32",
        .supports_node = fake_add_supports,
        .compute = fake_add_graphs_compute,
    },
    {
        .struct_size = sizeof(ses_drv_kernel_t),
        .op = "Mul",
        .signature = "f32,f32->f32",
        .flags = FAKE_MINOR >= 1 ? SES_DRV_KERNEL_NO_CAPTURE : 0, /* a 1.1 flag */
        .supports_node = fake_add_supports,
        .compute = fake_mul_compute,
    },
    {
        .struct_size = sizeof(ses_drv_kernel_t),
        .op = "Relu",
        .signature = "f32->f32",
        .compute = fake_relu_compute,
    },
    {
        .struct_size = sizeof(ses_drv_kernel_t),
        .op = "Reshape",
        .signature = "f32->f32",
        .compute = fake_reshape_compute,
    },
#endif
};

static int32_t fake_get_kernels(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                                uint32_t *out_count, uint32_t *out_stride) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_kernels || !out_count || !out_stride)
        return FAKE_FAIL(device->driver, SES_DRV_INVALID_ARGUMENT,
                         "%s get_kernels: an out parameter is NULL", FAKE_NAME);
    *out_kernels = fake_kernels;
    *out_count = (uint32_t)(sizeof(fake_kernels) / sizeof(fake_kernels[0]));
    *out_stride = (uint32_t)sizeof(ses_drv_kernel_t);
    return SES_DRV_OK;
}

/* -- the table ------------------------------------------------------------------------------ */

static const ses_drv_api_t fake_api = {
#if defined(FAKE_MODE_GRAPHS_1_0)
    /* A 1.0 table: the graph entries below lie past struct_size, where the host must not look. */
    .struct_size = SES_DRV_SIZEOF_1_0(ses_drv_api_t, event_synchronize),
#else
    .struct_size = sizeof(ses_drv_api_t),
#endif
    .info = &fake_info,
    .open = fake_open,
    .close = fake_close,
#if defined(FAKE_MODE_NULL_REQUIRED)
    .enumerate_devices = NULL, /* the misbehaviour: a required entry is missing */
#else
    .enumerate_devices = fake_enumerate_devices,
#endif
#if FAKE_HAS_OPTIONS
    .open_device = fake_open_device_old,
    .open_device_with_options = fake_open_report,
#else
    .open_device = fake_open_device,
#endif
    .close_device = fake_close_device,
    .get_kernels = fake_get_kernels,
    .alloc = fake_alloc,
    .free = fake_free,
    .copy_h2d = fake_copy_h2d,
    .copy_d2h = fake_copy_d2h,
    .copy_d2d = fake_copy_d2d,
#if FAKE_HAS_MAP
    .map = fake_map,
    .unmap = fake_unmap,
#endif
#if FAKE_HAS_GRAPHS
    .stream_create = fake_stream_create,
    .stream_destroy = fake_stream_destroy,
    .stream_synchronize = fake_stream_synchronize,
    .capture_begin = fake_capture_begin,
    .capture_end = fake_capture_end,
    .graph_launch = fake_graph_launch,
    .graph_destroy = fake_graph_destroy,
    .buffer_native = fake_buffer_native, /* ABI 1.2; past the 1.0 table's end in GRAPHS_1_0 */
    .import_native = fake_import_native,
#endif
    /* memory_info, import_host_ptr and events (and map and unmap but in the LAX modes):
     * optional, not offered. */
};

#endif /* FAKE_HAS_TABLE */

#if defined(FAKE_MODE_SMALL_TABLE)
/*
 * The misbehaviour: a table that is only the common header. It really is 16 bytes, not a full
 * table with a small struct_size, so a host that reads past struct_size reads past the object
 * (and AddressSanitizer says so in a sanitized build).
 */
static const struct {
    uint32_t struct_size;
    uint32_t reserved;
    const void *next;
} fake_small_api = {.struct_size = 16};
#endif

/* -- negotiation ---------------------------------------------------------------------------- */

static int32_t fake_negotiate(ses_drv_negotiate_t *args) {
#if defined(FAKE_MODE_LAX)
    /* The misbehaviour: this major's 1.0 size is checked first, so a host of another major whose
     * struct holds only the frozen prefix never learns who the driver is (DRV-6, DRV-7). */
    if (!args || args->struct_size < FAKE_NEGOTIATE_MIN_SIZE)
        return SES_DRV_INVALID_ARGUMENT;
#else
    /* DRV-6: without the frozen prefix there is nothing to say and nobody to say it to. */
    if (!args || args->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_negotiate_t, driver_minor_max))
        return SES_DRV_INVALID_ARGUMENT;
#endif

#if defined(FAKE_MODE_ABI2)
    /* The misbehaviour: the manifest says ABI 1, the library speaks only ABI 2.0. */
    args->driver_abi_major = 2;
    args->driver_minor_max = 0;
    return SES_DRV_INCOMPATIBLE;
#else
    args->driver_abi_major = SES_DRV_ABI_MAJOR;
    args->driver_minor_max = FAKE_MINOR;
#if defined(FAKE_MODE_NEGOTIATE_FAILS)
    if (!fake_host_usable(args->host))
        return SES_DRV_INTERNAL;
    return args->host->error(args->host_ctx, SES_DRV_INTERNAL, "license server unreachable");
#else
    /* Another major means another host table layout, so no message: the host names both
     * versions from driver_abi_major and driver_minor_max. */
    if (args->abi_major != SES_DRV_ABI_MAJOR)
        return SES_DRV_INCOMPATIBLE;
    /* This major, shorter than 1.0: no message (DRV-6). */
    if (args->struct_size < FAKE_NEGOTIATE_MIN_SIZE)
        return SES_DRV_INVALID_ARGUMENT;
    if (args->host_minor_min > FAKE_MINOR) {
        if (fake_host_usable(args->host))
            return args->host->error(args->host_ctx, SES_DRV_INCOMPATIBLE,
                                     "%s speaks ABI 1.0 to 1.%d; the host wants 1.%" PRIu32
                                     " or newer",
                                     FAKE_NAME, FAKE_MINOR, args->host_minor_min);
        return SES_DRV_INCOMPATIBLE;
    }
    {
        const uint32_t own_minor = FAKE_MINOR; /* a variable: `x < 0` would trip -Wtype-limits */
        args->chosen_minor = args->host_minor_max < own_minor ? args->host_minor_max : own_minor;
    }
#if defined(FAKE_MODE_SMALL_TABLE)
    args->api = (const ses_drv_api_t *)(const void *)&fake_small_api;
#else
    args->api = &fake_api;
#endif
    return SES_DRV_OK;
#endif /* FAKE_MODE_NEGOTIATE_FAILS */
#endif /* FAKE_MODE_ABI2 */
}

/* driver.h names the entry point but does not declare it, so each driver declares it. */
#if defined(FAKE_MODE_NO_ENTRY)
/* The misbehaviour: a near-miss name, so the library loads but has no ses_drv_negotiate. */
SES_DRV_EXPORT int32_t ses_driver_negotiate(ses_drv_negotiate_t *args);

SES_DRV_EXPORT int32_t ses_driver_negotiate(ses_drv_negotiate_t *args) {
    return fake_negotiate(args);
}
#else
SES_DRV_EXPORT int32_t ses_drv_negotiate(ses_drv_negotiate_t *args);

SES_DRV_EXPORT int32_t ses_drv_negotiate(ses_drv_negotiate_t *args) {
    return fake_negotiate(args);
}
#endif
