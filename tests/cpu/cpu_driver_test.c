/*
 * Unit tests of the CPU driver plugin (plugins/cpu), driven through its ABI exactly as the host
 * drives it: dlopen the module, look up ses_drv_negotiate, and call the table it returns.
 *
 * The module's path comes from the build as the string literal SES_CPU_DRIVER_PATH. The test
 * host's error entry keeps the last formatted message so tests can check what it says.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/driver.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#ifndef SES_CPU_DRIVER_PATH
#error "compile with -DSES_CPU_DRIVER_PATH=\"/path/to/ses_cpu.so\""
#endif

#include "../support/test_host.h"

/* ---------------------------------------------------------------------------------------------
 * Fixture: the module loaded and negotiated, one driver instance and its device open.
 * ------------------------------------------------------------------------------------------- */

typedef struct fixture {
    void *lib;
    ses_drv_negotiate_fn negotiate;
    const ses_drv_api_t *api;
    struct ses_drv_host_ctx ctx;
    ses_drv_driver_t *driver;
    ses_drv_device_t *device;
} fixture_t;

/* Arguments as the host fills them for ABI 1.0. */
static ses_drv_negotiate_t host_args(fixture_t *f) {
    ses_drv_negotiate_t args;

    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.abi_major = SES_DRV_ABI_MAJOR;
    args.host_minor_min = 0;
    args.host_minor_max = SES_DRV_ABI_MINOR;
    args.host = &test_host;
    args.host_ctx = &f->ctx;
    return args;
}

static void clear_error(fixture_t *f) {
    memset(&f->ctx, 0, sizeof f->ctx);
}

static int teardown(void **state) {
    fixture_t *f = *state;

    if (!f)
        return 0;
    test_driver_close(&(test_driver_t){f->lib, f->negotiate, f->api, f->driver, f->device});
    free(f);
    *state = NULL;
    return 0;
}

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    test_driver_t d;

    if (!f)
        return -1;
    *state = f;
    /* cmocka does not call teardown after a failed setup. */
    if (test_driver_open(&d, SES_CPU_DRIVER_PATH, &test_host, &f->ctx) != 0) {
        teardown(state);
        return -1;
    }
    f->lib = d.lib;
    f->negotiate = d.negotiate;
    f->api = d.api;
    f->driver = d.driver;
    f->device = d.device;
    clear_error(f);
    return 0;
}

/* Fails with both the message and the expected fragment printed. */
#define assert_message_contains(f, fragment)                                           \
    do {                                                                               \
        if (!strstr((f)->ctx.message, (fragment)))                                     \
            fail_msg("error message \"%s\" does not contain \"%s\"", (f)->ctx.message, \
                     (fragment));                                                      \
    } while (0)

static ses_drv_buffer_t *alloc_or_fail(fixture_t *f, uint64_t bytes) {
    ses_drv_buffer_t *b = NULL;

    assert_int_equal(f->api->alloc(f->device, bytes, SES_DRV_MEM_DEVICE, &b), SES_DRV_OK);
    assert_non_null(b);
    return b;
}

/* ---------------------------------------------------------------------------------------------
 * Negotiation
 * ------------------------------------------------------------------------------------------- */

static void negotiate_accepts_abi_1_1_and_returns_a_complete_table(void **state) {
    fixture_t *f = *state;
    ses_drv_negotiate_t args = host_args(f);

    assert_int_equal(f->negotiate(&args), SES_DRV_OK);

    assert_int_equal(args.driver_abi_major, 1);
    assert_int_equal(args.driver_minor_max, SES_DRV_ABI_MINOR);
    assert_int_equal(args.chosen_minor, SES_DRV_ABI_MINOR);
    const ses_drv_api_t *api = args.api;
    assert_non_null(api);
    assert_int_equal(api->struct_size, sizeof(ses_drv_api_t));
    assert_non_null(api->info);
    assert_non_null(api->open);
    assert_non_null(api->close);
    assert_non_null(api->enumerate_devices);
    assert_non_null(api->open_device);
    assert_non_null(api->close_device);
    assert_non_null(api->get_kernels);
    assert_non_null(api->memory_info);
    assert_non_null(api->alloc);
    assert_non_null(api->free);
    assert_non_null(api->map);
    assert_non_null(api->unmap);
    assert_non_null(api->import_host_ptr);
    assert_non_null(api->copy_h2d);
    assert_non_null(api->copy_d2h);
    assert_non_null(api->copy_d2d);
    /* No SES_DRV_CAP_STREAMS or SES_DRV_CAP_EVENTS: those entries must be NULL. */
    assert_null(api->stream_create);
    assert_null(api->stream_destroy);
    assert_null(api->stream_synchronize);
    assert_null(api->event_create);
    assert_null(api->event_destroy);
    assert_null(api->event_record);
    assert_null(api->stream_wait_event);
    assert_null(api->event_synchronize);
    assert_int_equal(f->ctx.calls, 0);
}

/* A newer host offering minors up to 7 gets the driver's newest, which is all it speaks. */
static void negotiate_chooses_the_drivers_newest_minor_when_the_host_is_newer(void **state) {
    fixture_t *f = *state;
    ses_drv_negotiate_t args = host_args(f);
    args.host_minor_max = 7;

    assert_int_equal(f->negotiate(&args), SES_DRV_OK);

    assert_int_equal(args.chosen_minor, SES_DRV_ABI_MINOR);
    assert_non_null(args.api);
}

/* Another major may lay out the host table differently, so the driver must not call it: the
 * host names both majors from driver_abi_major (session-driver-test checks this of every
 * driver). */
static void negotiate_rejects_another_abi_major_without_calling_the_host(void **state) {
    fixture_t *f = *state;
    ses_drv_negotiate_t args = host_args(f);
    const int errors_before = f->ctx.calls;
    args.abi_major = 2;

    assert_int_equal(f->negotiate(&args), SES_DRV_INCOMPATIBLE);

    assert_int_equal(args.driver_abi_major, 1);
    assert_int_equal(args.driver_minor_max, SES_DRV_ABI_MINOR);
    assert_null(args.api);
    assert_int_equal(f->ctx.calls, errors_before); /* host->error was not called */
}

static void negotiate_rejects_a_host_whose_oldest_minor_is_newer_than_the_driver(void **state) {
    fixture_t *f = *state;
    ses_drv_negotiate_t args = host_args(f);
    args.host_minor_min = SES_DRV_ABI_MINOR + 1;
    args.host_minor_max = SES_DRV_ABI_MINOR + 3;

    assert_int_equal(f->negotiate(&args), SES_DRV_INCOMPATIBLE);

    assert_int_equal(args.driver_abi_major, 1);
    assert_int_equal(args.driver_minor_max, SES_DRV_ABI_MINOR);
    assert_null(args.api);
    char host_side[32];
    snprintf(host_side, sizeof host_side, "1.%d", SES_DRV_ABI_MINOR + 1);
    assert_message_contains(f, host_side);
}

/* The host table is optional during negotiate; without one the code alone must come back. */
static void negotiate_without_a_host_table_still_reports_the_mismatch(void **state) {
    fixture_t *f = *state;
    ses_drv_negotiate_t args = host_args(f);
    args.host = NULL;
    args.host_ctx = NULL;
    args.abi_major = 3;

    assert_int_equal(f->negotiate(&args), SES_DRV_INCOMPATIBLE);

    assert_int_equal(args.driver_abi_major, 1);
    assert_int_equal(f->ctx.calls, 0);
}

/* DRV-6: below the frozen prefix nothing is written; with the prefix but short of ABI 1.0 the
 * driver says who it is, writes nothing past struct_size and calls no host entry. */
static void negotiate_rejects_null_and_undersized_arguments(void **state) {
    fixture_t *f = *state;
    ses_drv_negotiate_t args = host_args(f);
    args.struct_size = (uint32_t)offsetof(ses_drv_negotiate_t, driver_abi_major);

    assert_int_equal(f->negotiate(NULL), SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(f->negotiate(&args), SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(args.driver_abi_major, 0);
    assert_null(args.api);

    args = host_args(f);
    args.struct_size = (uint32_t)offsetof(ses_drv_negotiate_t, api);
    assert_int_equal(f->negotiate(&args), SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(args.driver_abi_major, 1);
    assert_int_equal(args.chosen_minor, 0);
    assert_null(args.api);
    assert_int_equal(f->ctx.calls, 0);
}

/* A host built against a later minor passes a larger struct; the driver reads its 1.0 part. */
static void negotiate_accepts_a_larger_struct_from_a_newer_host(void **state) {
    fixture_t *f = *state;
    struct {
        ses_drv_negotiate_t args;
        uint64_t newer_field;
    } big;
    big.args = host_args(f);
    big.args.struct_size = sizeof big;
    big.newer_field = 0xfeedfacecafebeefu;

    assert_int_equal(f->negotiate(&big.args), SES_DRV_OK);

    assert_non_null(big.args.api);
    assert_int_equal(big.newer_field, 0xfeedfacecafebeefu);
}

/* ---------------------------------------------------------------------------------------------
 * Info and driver instances
 * ------------------------------------------------------------------------------------------- */

static void info_describes_the_cpu_driver(void **state) {
    fixture_t *f = *state;
    const ses_drv_info_t *info = f->api->info;

    assert_true(info->struct_size >= SES_DRV_SIZEOF_1_0(ses_drv_info_t, flags));
    assert_string_equal(info->name, "cpu");
    assert_string_equal(info->vendor, "libsession");
    assert_non_null(info->version);
    assert_non_null(strchr(info->version, '.'));
    assert_non_null(info->build_features);
    /* A comma-separated list: no empty items at either end. */
    size_t n = strlen(info->build_features);
    if (n > 0) {
        assert_true(info->build_features[0] != ',');
        assert_true(info->build_features[n - 1] != ',');
        assert_null(strstr(info->build_features, ",,"));
    }
#if defined(__AVX2__)
    assert_non_null(strstr(info->build_features, "avx2"));
#endif
    assert_int_equal(info->opset_version, 1);
    assert_int_equal(info->flags, SES_DRV_INFO_UNLOADABLE);
}

static void open_rejects_a_null_host_table_or_out_pointer(void **state) {
    fixture_t *f = *state;
    ses_drv_driver_t *driver = (ses_drv_driver_t *)(uintptr_t)1;

    assert_int_equal(f->api->open(NULL, &f->ctx, &driver), SES_DRV_INVALID_ARGUMENT);
    assert_null(driver);
    assert_int_equal(f->api->open(&test_host, &f->ctx, NULL), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "out_driver");
}

/* One library opened by two registries: each instance reports errors to its own host. */
static void two_instances_of_the_driver_coexist_in_one_process(void **state) {
    fixture_t *f = *state;
    struct ses_drv_host_ctx other_ctx;
    ses_drv_driver_t *other = NULL;
    ses_drv_device_t *other_dev = NULL;
    uint32_t count = 0;

    memset(&other_ctx, 0, sizeof other_ctx);
    assert_int_equal(f->api->open(&test_host, &other_ctx, &other), SES_DRV_OK);
    assert_non_null(other);
    assert_ptr_not_equal(other, f->driver);

    assert_int_equal(f->api->enumerate_devices(other, &count, NULL), SES_DRV_OK);
    assert_int_equal(count, 1);
    assert_int_equal(f->api->open_device(other, 5, &other_dev), SES_DRV_NOT_FOUND);
    assert_int_equal(other_ctx.calls, 1);
    assert_int_equal(f->ctx.calls, 0);

    f->api->close(other);
    /* The first instance is unaffected by the second's close. */
    count = 0;
    assert_int_equal(f->api->enumerate_devices(f->driver, &count, NULL), SES_DRV_OK);
    assert_int_equal(count, 1);
}

static void close_and_close_device_accept_null(void **state) {
    fixture_t *f = *state;

    f->api->close_device(NULL);
    f->api->close(NULL);
    f->api->free(f->device, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Enumeration
 * ------------------------------------------------------------------------------------------- */

static void check_host_device(const ses_drv_device_desc_t *d) {
    assert_int_equal(d->kind, SES_DRV_DEVICE_CPU);
    assert_int_equal(d->ordinal, 0);
    assert_string_equal(d->stable_id, "host");
    assert_non_null(d->name);
    assert_non_null(strstr(d->name, " threads)"));
    assert_true(d->memory_bytes > 0);
    assert_true(d->memory_free <= d->memory_bytes);
    uint64_t caps = SES_DRV_CAP_HOST_VISIBLE | SES_DRV_CAP_MAP | SES_DRV_CAP_HOST_IMPORT |
                    SES_DRV_CAP_F64 | SES_DRV_CAP_CONCURRENT;
    assert_int_equal(d->caps, caps);
    assert_int_equal(d->mem_kinds, (1u << SES_DRV_MEM_DEVICE) | (1u << SES_DRV_MEM_HOST_PINNED) |
                                       (1u << SES_DRV_MEM_SHARED));
    assert_int_equal(d->alignment, 64);
    assert_int_equal(d->max_alloc, 0);
}

static void enumerate_counts_then_fills_one_host_device(void **state) {
    fixture_t *f = *state;
    ses_drv_device_desc_t descs[2];
    uint32_t count = 0;

    assert_int_equal(f->api->enumerate_devices(f->driver, &count, NULL), SES_DRV_OK);
    assert_int_equal(count, 1);

    memset(descs, 0, sizeof descs);
    descs[0].struct_size = sizeof descs[0];
    descs[1].struct_size = sizeof descs[1];
    count = 2;
    assert_int_equal(f->api->enumerate_devices(f->driver, &count, descs), SES_DRV_OK);

    assert_int_equal(count, 1);
    assert_int_equal(descs[0].struct_size, sizeof descs[0]);
    check_host_device(&descs[0]);
    /* The second slot had no device to describe. */
    assert_int_equal(descs[1].kind, 0);
    assert_null(descs[1].name);
}

static void enumerate_with_room_for_none_fills_nothing(void **state) {
    fixture_t *f = *state;
    ses_drv_device_desc_t desc;
    uint32_t count = 0;

    memset(&desc, 0, sizeof desc);
    desc.struct_size = sizeof desc;
    assert_int_equal(f->api->enumerate_devices(f->driver, &count, &desc), SES_DRV_OK);

    assert_int_equal(count, 0);
    assert_null(desc.name);
}

/* A host of a later minor has a larger descriptor; its newer fields are none of our business,
 * and its array's stride is its own struct_size. */
static void enumerate_leaves_the_newer_fields_of_a_larger_descriptor_untouched(void **state) {
    fixture_t *f = *state;
    typedef struct {
        ses_drv_device_desc_t desc;
        uint64_t newer_field;
    } newer_desc_t;
    newer_desc_t descs[2];
    uint32_t count = 2;

    memset(descs, 0, sizeof descs);
    for (int i = 0; i < 2; i++) {
        descs[i].desc.struct_size = sizeof(newer_desc_t);
        descs[i].desc.next = &descs[i];
        descs[i].newer_field = 0xabcdef0123456789u;
    }

    assert_int_equal(f->api->enumerate_devices(f->driver, &count, &descs[0].desc), SES_DRV_OK);

    assert_int_equal(count, 1);
    check_host_device(&descs[0].desc);
    assert_int_equal(descs[0].desc.struct_size, sizeof(newer_desc_t));
    assert_ptr_equal(descs[0].desc.next, &descs[0]);
    assert_int_equal(descs[0].newer_field, 0xabcdef0123456789u);
    assert_int_equal(descs[1].desc.kind, 0);
    assert_int_equal(descs[1].newer_field, 0xabcdef0123456789u);
}

static void enumerate_rejects_a_descriptor_smaller_than_abi_1_0(void **state) {
    fixture_t *f = *state;
    ses_drv_device_desc_t desc;
    uint32_t count = 1;
    uint32_t small = (uint32_t)offsetof(ses_drv_device_desc_t, max_alloc);

    memset(&desc, 0, sizeof desc);
    desc.struct_size = small;
    assert_int_equal(f->api->enumerate_devices(f->driver, &count, &desc), SES_DRV_INVALID_ARGUMENT);

    /* Nothing was written, and the message names both sizes. */
    assert_int_equal(desc.kind, 0);
    assert_null(desc.name);
    char sizes[64];
    snprintf(sizes, sizeof sizes, "%u", (unsigned)small);
    assert_message_contains(f, sizes);
    snprintf(sizes, sizeof sizes, "%zu", SES_DRV_SIZEOF_1_0(ses_drv_device_desc_t, max_alloc));
    assert_message_contains(f, sizes);
}

static void open_device_rejects_an_ordinal_that_does_not_exist(void **state) {
    fixture_t *f = *state;
    ses_drv_device_t *dev = (ses_drv_device_t *)(uintptr_t)1;

    assert_int_equal(f->api->open_device(f->driver, 1, &dev), SES_DRV_NOT_FOUND);

    assert_null(dev);
    assert_message_contains(f, "device 1");
    assert_message_contains(f, "ordinal 0");
}

static void memory_info_reports_total_and_free_host_memory(void **state) {
    fixture_t *f = *state;
    uint64_t free_bytes = 0, total = 0;

    assert_int_equal(f->api->memory_info(f->device, &free_bytes, &total), SES_DRV_OK);

    assert_true(total > 0);
    assert_true(free_bytes <= total);
}

/* ---------------------------------------------------------------------------------------------
 * Memory
 * ------------------------------------------------------------------------------------------- */

static void alloc_returns_aligned_writable_memory_of_every_kind(void **state) {
    fixture_t *f = *state;

    for (uint32_t kind = SES_DRV_MEM_DEVICE; kind <= SES_DRV_MEM_SHARED; kind++) {
        ses_drv_buffer_t *b = NULL;
        void *p = NULL;

        assert_int_equal(f->api->alloc(f->device, 1000, kind, &b), SES_DRV_OK);
        assert_int_equal(f->api->map(f->device, b, 0, 1000, SES_DRV_MAP_WRITE, &p), SES_DRV_OK);
        assert_int_equal((uintptr_t)p % 64, 0);
        memset(p, 0x5a, 1000);
        assert_int_equal(f->api->unmap(f->device, b, p), SES_DRV_OK);
        f->api->free(f->device, b);
    }
}

static void alloc_rejects_zero_bytes(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *b = (ses_drv_buffer_t *)(uintptr_t)1;

    assert_int_equal(f->api->alloc(f->device, 0, SES_DRV_MEM_DEVICE, &b), SES_DRV_INVALID_ARGUMENT);

    assert_null(b);
    assert_message_contains(f, "bytes is 0");
}

static void alloc_rejects_an_unknown_memory_kind(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *b = (ses_drv_buffer_t *)(uintptr_t)1;

    assert_int_equal(f->api->alloc(f->device, 16, 3, &b), SES_DRV_INVALID_ARGUMENT);

    assert_null(b);
    assert_message_contains(f, "memory kind 3");
}

/* ---------------------------------------------------------------------------------------------
 * Copies
 * ------------------------------------------------------------------------------------------- */

static void copies_move_bytes_to_the_device_between_buffers_and_back(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *a = alloc_or_fail(f, 64);
    ses_drv_buffer_t *b = alloc_or_fail(f, 64);
    uint8_t src[16], dst[16];

    for (int i = 0; i < 16; i++)
        src[i] = (uint8_t)(i * 7 + 1);
    memset(dst, 0, sizeof dst);

    assert_int_equal(f->api->copy_h2d(f->device, NULL, src, a, 48, 16), SES_DRV_OK);
    assert_int_equal(f->api->copy_d2d(f->device, NULL, a, 48, b, 8, 16), SES_DRV_OK);
    assert_int_equal(f->api->copy_d2h(f->device, NULL, b, 8, dst, 16), SES_DRV_OK);
    assert_memory_equal(src, dst, 16);

    /* Overlapping ranges of one buffer behave like memmove. */
    assert_int_equal(f->api->copy_d2d(f->device, NULL, b, 8, b, 12, 16), SES_DRV_OK);
    assert_int_equal(f->api->copy_d2h(f->device, NULL, b, 12, dst, 16), SES_DRV_OK);
    assert_memory_equal(src, dst, 16);

    f->api->free(f->device, a);
    f->api->free(f->device, b);
}

static void copy_h2d_rejects_a_range_past_the_end_naming_both_numbers(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *b = alloc_or_fail(f, 64);
    uint8_t src[8] = {0};

    assert_int_equal(f->api->copy_h2d(f->device, NULL, src, b, 60, 8), SES_DRV_INVALID_ARGUMENT);

    assert_message_contains(f, "copy_h2d");
    assert_message_contains(f, "68");
    assert_message_contains(f, "64 bytes");
    f->api->free(f->device, b);
}

static void copy_d2h_rejects_a_range_past_the_end_naming_both_numbers(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *b = alloc_or_fail(f, 32);
    uint8_t dst[40];

    assert_int_equal(f->api->copy_d2h(f->device, NULL, b, 0, dst, 40), SES_DRV_INVALID_ARGUMENT);

    assert_message_contains(f, "copy_d2h");
    assert_message_contains(f, "40");
    assert_message_contains(f, "32 bytes");
    f->api->free(f->device, b);
}

static void copy_d2d_rejects_a_range_past_the_end_of_either_buffer(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *big = alloc_or_fail(f, 128);
    ses_drv_buffer_t *small = alloc_or_fail(f, 16);

    assert_int_equal(f->api->copy_d2d(f->device, NULL, big, 0, small, 8, 16),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "dst");
    assert_message_contains(f, "24");
    assert_message_contains(f, "16 bytes");

    clear_error(f);
    assert_int_equal(f->api->copy_d2d(f->device, NULL, small, 4, big, 0, 16),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "src");
    assert_message_contains(f, "20");

    f->api->free(f->device, big);
    f->api->free(f->device, small);
}

/* offset + bytes wrapping around 2^64 must not pass as a small end. */
static void copies_reject_an_offset_that_overflows(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *b = alloc_or_fail(f, 64);
    uint8_t host[8] = {0};

    assert_int_equal(f->api->copy_h2d(f->device, NULL, host, b, UINT64_MAX - 2, 8),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "overflows");
    assert_int_equal(f->api->copy_d2h(f->device, NULL, b, UINT64_MAX, host, 1),
                     SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(f->api->copy_d2d(f->device, NULL, b, 0, b, UINT64_MAX - 1, 8),
                     SES_DRV_INVALID_ARGUMENT);

    f->api->free(f->device, b);
}

static void copies_reject_null_pointers(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *b = alloc_or_fail(f, 64);
    uint8_t host[8] = {0};

    assert_int_equal(f->api->copy_h2d(f->device, NULL, NULL, b, 0, 8), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "src is NULL");
    assert_int_equal(f->api->copy_h2d(f->device, NULL, host, NULL, 0, 8), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "dst is NULL");
    assert_int_equal(f->api->copy_d2h(f->device, NULL, b, 0, NULL, 8), SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(f->api->copy_d2h(f->device, NULL, NULL, 0, host, 8), SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(f->api->copy_d2d(f->device, NULL, NULL, 0, b, 0, 8), SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(f->api->copy_d2d(f->device, NULL, b, 0, NULL, 0, 8), SES_DRV_INVALID_ARGUMENT);

    f->api->free(f->device, b);
}

static void copies_reject_a_stream_because_the_cpu_driver_has_none(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *b = alloc_or_fail(f, 64);
    ses_drv_stream_t *stream = (ses_drv_stream_t *)(uintptr_t)0x1000;
    uint8_t host[8] = {0};

    assert_int_equal(f->api->copy_h2d(f->device, stream, host, b, 0, 8), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "no streams");
    clear_error(f);
    assert_int_equal(f->api->copy_d2h(f->device, stream, b, 0, host, 8), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "no streams");
    clear_error(f);
    assert_int_equal(f->api->copy_d2d(f->device, stream, b, 0, b, 8, 8), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "no streams");

    f->api->free(f->device, b);
}

/* ---------------------------------------------------------------------------------------------
 * Map and import
 * ------------------------------------------------------------------------------------------- */

static void map_exposes_the_buffer_and_unmap_accepts_the_pointer(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *b = alloc_or_fail(f, 64);
    uint8_t src[4] = {1, 2, 3, 4};
    void *p = NULL;

    assert_int_equal(f->api->copy_h2d(f->device, NULL, src, b, 32, 4), SES_DRV_OK);
    assert_int_equal(f->api->map(f->device, b, 32, 4, SES_DRV_MAP_READ | SES_DRV_MAP_WRITE, &p),
                     SES_DRV_OK);
    assert_memory_equal(p, src, 4);
    ((uint8_t *)p)[0] = 9;
    assert_int_equal(f->api->unmap(f->device, b, p), SES_DRV_OK);

    uint8_t back = 0;
    assert_int_equal(f->api->copy_d2h(f->device, NULL, b, 32, &back, 1), SES_DRV_OK);
    assert_int_equal(back, 9);
    f->api->free(f->device, b);
}

static void map_rejects_a_range_past_the_end_and_unknown_flags(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *b = alloc_or_fail(f, 64);
    void *p = (void *)(uintptr_t)1;

    assert_int_equal(f->api->map(f->device, b, 32, 33, SES_DRV_MAP_READ, &p),
                     SES_DRV_INVALID_ARGUMENT);
    assert_null(p);
    assert_message_contains(f, "65");
    assert_message_contains(f, "64 bytes");

    assert_int_equal(f->api->map(f->device, b, 0, 8, 0x80, &p), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "0x80");

    f->api->free(f->device, b);
}

static void unmap_rejects_a_pointer_outside_the_buffer(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *a = alloc_or_fail(f, 64);
    ses_drv_buffer_t *b = alloc_or_fail(f, 64);
    void *pa = NULL;

    assert_int_equal(f->api->map(f->device, a, 0, 64, SES_DRV_MAP_READ, &pa), SES_DRV_OK);
    assert_int_equal(f->api->unmap(f->device, b, pa), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "not inside the buffer");
    assert_int_equal(f->api->unmap(f->device, a, pa), SES_DRV_OK);

    f->api->free(f->device, a);
    f->api->free(f->device, b);
}

/* Under ASan, a free of the caller's stack array would be reported as a bad free. */
static void import_wraps_caller_memory_without_copying_and_free_leaves_it_alone(void **state) {
    fixture_t *f = *state;
    uint32_t caller[8] = {0};
    uint32_t values[2] = {0xdeadbeefu, 0x12345678u};
    ses_drv_buffer_t *b = NULL;
    void *p = NULL;

    assert_int_equal(f->api->import_host_ptr(f->device, caller, sizeof caller, &b), SES_DRV_OK);
    assert_non_null(b);
    assert_int_equal(f->api->copy_h2d(f->device, NULL, values, b, 8, sizeof values), SES_DRV_OK);
    assert_int_equal(caller[2], 0xdeadbeefu);
    assert_int_equal(caller[3], 0x12345678u);
    assert_int_equal(f->api->map(f->device, b, 0, sizeof caller, SES_DRV_MAP_READ, &p), SES_DRV_OK);
    assert_ptr_equal(p, caller);
    assert_int_equal(f->api->unmap(f->device, b, p), SES_DRV_OK);
    /* Past the end of the imported range is out of bounds like any buffer. */
    assert_int_equal(f->api->copy_h2d(f->device, NULL, values, b, 28, sizeof values),
                     SES_DRV_INVALID_ARGUMENT);

    f->api->free(f->device, b);
    caller[0] = 1; /* still the caller's */
    assert_int_equal(caller[0], 1);
}

static void import_rejects_null_and_empty_memory(void **state) {
    fixture_t *f = *state;
    uint8_t caller[4];
    ses_drv_buffer_t *b = (ses_drv_buffer_t *)(uintptr_t)1;

    assert_int_equal(f->api->import_host_ptr(f->device, NULL, 4, &b), SES_DRV_INVALID_ARGUMENT);
    assert_null(b);
    assert_message_contains(f, "host_ptr is NULL");
    assert_int_equal(f->api->import_host_ptr(f->device, caller, 0, &b), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "bytes is 0");
}

/* ---------------------------------------------------------------------------------------------
 * Kernels
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_kernel_t *find_kernel(fixture_t *f, const char *op, const char *signature) {
    const ses_drv_kernel_t *table = NULL;
    uint32_t count = 0, stride = 0;

    assert_int_equal(f->api->get_kernels(f->device, &table, &count, &stride), SES_DRV_OK);
    for (uint32_t i = 0; i < count; i++) {
        const ses_drv_kernel_t *k =
            (const ses_drv_kernel_t *)(const void *)((const char *)table + (size_t)i * stride);
        if (strcmp(k->op, op) == 0 && strcmp(k->signature, signature) == 0)
            return k;
    }
    return NULL;
}

static void the_kernel_table_has_identity_for_all_13_dtypes(void **state) {
    fixture_t *f = *state;
    static const char *const signatures[] = {
        "f32->f32", "f64->f64", "f16->f16", "bf16->bf16", "i8->i8",   "i16->i16",   "i32->i32",
        "i64->i64", "u8->u8",   "u16->u16", "u32->u32",   "u64->u64", "bool->bool",
    };
    const ses_drv_kernel_t *table = NULL;
    uint32_t count = 0, stride = 0;

    assert_int_equal(f->api->get_kernels(f->device, &table, &count, &stride), SES_DRV_OK);
    assert_true(count >= 13); /* Identity at every dtype, and the other kernels */
    assert_int_equal(stride, sizeof(ses_drv_kernel_t));

    for (size_t i = 0; i < sizeof signatures / sizeof signatures[0]; i++) {
        const ses_drv_kernel_t *k = find_kernel(f, "Identity", signatures[i]);
        if (!k)
            fail_msg("no Identity kernel for %s", signatures[i]);
        assert_int_equal(k->struct_size, sizeof(ses_drv_kernel_t));
        assert_int_equal(k->flags, 0);
        assert_null(k->supports_node);
        assert_null(k->create);
        assert_null(k->destroy);
        assert_non_null(k->compute);
    }
}

/* One Identity launch with rank-1 tensors; everything points into the struct itself. */
typedef struct identity_launch {
    int64_t in_dims[1];
    int64_t out_dims[1];
    ses_drv_tensor_desc_t in;
    ses_drv_tensor_desc_t out;
    ses_drv_node_t node;
    ses_drv_buffer_t *inputs[1];
    ses_drv_buffer_t *outputs[1];
    uint64_t input_offsets[1];
    uint64_t output_offsets[1];
    ses_drv_launch_t launch;
} identity_launch_t;

static void make_identity_launch(identity_launch_t *l, uint32_t dtype, int64_t n_in,
                                 ses_drv_buffer_t *in, uint64_t in_offset, int64_t n_out,
                                 ses_drv_buffer_t *out, uint64_t out_offset) {
    memset(l, 0, sizeof *l);
    l->in_dims[0] = n_in;
    l->out_dims[0] = n_out;
    l->in.struct_size = sizeof l->in;
    l->in.dtype = dtype;
    l->in.rank = 1;
    l->in.dims = l->in_dims;
    l->out = l->in;
    l->out.dims = l->out_dims;
    l->node.struct_size = sizeof l->node;
    l->node.op = "Identity";
    l->node.name = "id1";
    l->node.n_inputs = 1;
    l->node.n_outputs = 1;
    l->node.inputs = &l->in;
    l->node.outputs = &l->out;
    l->inputs[0] = in;
    l->outputs[0] = out;
    l->input_offsets[0] = in_offset;
    l->output_offsets[0] = out_offset;
    l->launch.struct_size = sizeof l->launch;
    l->launch.node = &l->node;
    l->launch.inputs = l->inputs;
    l->launch.input_offsets = l->input_offsets;
    l->launch.outputs = l->outputs;
    l->launch.output_offsets = l->output_offsets;
}

static void identity_copies_f32_values_unchanged(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel(f, "Identity", "f32->f32");
    float src[5] = {1.5f, -0.0f, 3.25e-7f, 1e30f, -42.0f};
    float dst[5] = {0};
    ses_drv_buffer_t *a = alloc_or_fail(f, sizeof src);
    ses_drv_buffer_t *b = alloc_or_fail(f, sizeof dst);
    identity_launch_t l;

    assert_non_null(k);
    assert_int_equal(f->api->copy_h2d(f->device, NULL, src, a, 0, sizeof src), SES_DRV_OK);
    make_identity_launch(&l, SES_DRV_DTYPE_F32, 5, a, 0, 5, b, 0);

    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_OK);

    assert_int_equal(f->api->copy_d2h(f->device, NULL, b, 0, dst, sizeof dst), SES_DRV_OK);
    assert_memory_equal(src, dst, sizeof src);
    f->api->free(f->device, a);
    f->api->free(f->device, b);
}

/* Both tensors in one arena at different offsets, as a plan lays them out. */
static void identity_copies_i64_values_between_offsets_of_one_arena(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel(f, "Identity", "i64->i64");
    int64_t src[3] = {INT64_MIN, -1, INT64_MAX};
    int64_t dst[3] = {0};
    ses_drv_buffer_t *arena = alloc_or_fail(f, 128);
    identity_launch_t l;

    assert_non_null(k);
    assert_int_equal(f->api->copy_h2d(f->device, NULL, src, arena, 64, sizeof src), SES_DRV_OK);
    make_identity_launch(&l, SES_DRV_DTYPE_I64, 3, arena, 64, 3, arena, 8);

    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_OK);

    assert_int_equal(f->api->copy_d2h(f->device, NULL, arena, 8, dst, sizeof dst), SES_DRV_OK);
    assert_memory_equal(src, dst, sizeof src);
    f->api->free(f->device, arena);
}

static void identity_rejects_mismatched_element_counts(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel(f, "Identity", "f32->f32");
    ses_drv_buffer_t *a = alloc_or_fail(f, 64);
    ses_drv_buffer_t *b = alloc_or_fail(f, 64);
    identity_launch_t l;

    make_identity_launch(&l, SES_DRV_DTYPE_F32, 4, a, 0, 3, b, 0);

    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_INVALID_ARGUMENT);

    assert_message_contains(f, "\"id1\"");
    assert_message_contains(f, "input has 4");
    assert_message_contains(f, "output has 3");
    f->api->free(f->device, a);
    f->api->free(f->device, b);
}

static void identity_rejects_an_output_range_past_the_end_of_its_buffer(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel(f, "Identity", "f32->f32");
    ses_drv_buffer_t *a = alloc_or_fail(f, 64);
    ses_drv_buffer_t *b = alloc_or_fail(f, 16);
    identity_launch_t l;

    make_identity_launch(&l, SES_DRV_DTYPE_F32, 4, a, 0, 4, b, 4);

    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_INVALID_ARGUMENT);

    assert_message_contains(f, "output 0");
    assert_message_contains(f, "20");
    assert_message_contains(f, "16 bytes");
    f->api->free(f->device, a);
    f->api->free(f->device, b);
}

static void identity_rejects_tensors_whose_dtypes_differ_from_each_other_or_the_kernel(
    void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel(f, "Identity", "f32->f32");
    ses_drv_buffer_t *a = alloc_or_fail(f, 64);
    ses_drv_buffer_t *b = alloc_or_fail(f, 64);
    identity_launch_t l;

    make_identity_launch(&l, SES_DRV_DTYPE_F32, 4, a, 0, 4, b, 0);
    l.out.dtype = SES_DRV_DTYPE_I32;
    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input is f32, output is i32");

    make_identity_launch(&l, SES_DRV_DTYPE_I64, 4, a, 0, 4, b, 0);
    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input is i64");
    assert_message_contains(f, "f32->f32");

    f->api->free(f->device, a);
    f->api->free(f->device, b);
}

static void identity_rejects_a_malformed_launch(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel(f, "Identity", "u8->u8");
    ses_drv_buffer_t *a = alloc_or_fail(f, 64);
    identity_launch_t l;

    make_identity_launch(&l, SES_DRV_DTYPE_U8, 4, a, 0, 4, a, 8);
    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_OK);

    l.launch.struct_size = (uint32_t)offsetof(ses_drv_launch_t, output_offsets);
    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "struct_size");

    make_identity_launch(&l, SES_DRV_DTYPE_U8, 4, a, 0, 4, a, 8);
    l.node.n_inputs = 2;
    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "2 inputs");

    make_identity_launch(&l, SES_DRV_DTYPE_U8, 4, a, 0, 4, a, 8);
    l.out_dims[0] = -4;
    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "-4");

    make_identity_launch(&l, SES_DRV_DTYPE_U8, 4, a, 0, 4, NULL, 8);
    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output 0 buffer is NULL");

    make_identity_launch(&l, SES_DRV_DTYPE_U8, 4, a, 0, 4, a, 8);
    l.launch.stream = (ses_drv_stream_t *)(uintptr_t)0x1000;
    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "no streams");

    assert_int_equal(k->compute(f->device, NULL, NULL), SES_DRV_INVALID_ARGUMENT);
    f->api->free(f->device, a);
}

/* A rank-0 tensor is one element. */
static void identity_copies_a_scalar_bool(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel(f, "Identity", "bool->bool");
    ses_drv_buffer_t *a = alloc_or_fail(f, 2);
    uint8_t in[2] = {1, 0}, out[2] = {9, 9};
    identity_launch_t l;

    assert_int_equal(f->api->copy_h2d(f->device, NULL, in, a, 0, 2), SES_DRV_OK);
    make_identity_launch(&l, SES_DRV_DTYPE_BOOL, 1, a, 0, 1, a, 1);
    l.in.rank = 0;
    l.out.rank = 0;

    assert_int_equal(k->compute(f->device, NULL, &l.launch), SES_DRV_OK);

    assert_int_equal(f->api->copy_d2h(f->device, NULL, a, 0, out, 2), SES_DRV_OK);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 1);
    f->api->free(f->device, a);
}

/* ---------------------------------------------------------------------------------------------
 * Runner
 * ------------------------------------------------------------------------------------------- */

#define TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        TEST(negotiate_accepts_abi_1_1_and_returns_a_complete_table),
        TEST(negotiate_chooses_the_drivers_newest_minor_when_the_host_is_newer),
        TEST(negotiate_rejects_another_abi_major_without_calling_the_host),
        TEST(negotiate_rejects_a_host_whose_oldest_minor_is_newer_than_the_driver),
        TEST(negotiate_without_a_host_table_still_reports_the_mismatch),
        TEST(negotiate_rejects_null_and_undersized_arguments),
        TEST(negotiate_accepts_a_larger_struct_from_a_newer_host),
        TEST(info_describes_the_cpu_driver),
        TEST(open_rejects_a_null_host_table_or_out_pointer),
        TEST(two_instances_of_the_driver_coexist_in_one_process),
        TEST(close_and_close_device_accept_null),
        TEST(enumerate_counts_then_fills_one_host_device),
        TEST(enumerate_with_room_for_none_fills_nothing),
        TEST(enumerate_leaves_the_newer_fields_of_a_larger_descriptor_untouched),
        TEST(enumerate_rejects_a_descriptor_smaller_than_abi_1_0),
        TEST(open_device_rejects_an_ordinal_that_does_not_exist),
        TEST(memory_info_reports_total_and_free_host_memory),
        TEST(alloc_returns_aligned_writable_memory_of_every_kind),
        TEST(alloc_rejects_zero_bytes),
        TEST(alloc_rejects_an_unknown_memory_kind),
        TEST(copies_move_bytes_to_the_device_between_buffers_and_back),
        TEST(copy_h2d_rejects_a_range_past_the_end_naming_both_numbers),
        TEST(copy_d2h_rejects_a_range_past_the_end_naming_both_numbers),
        TEST(copy_d2d_rejects_a_range_past_the_end_of_either_buffer),
        TEST(copies_reject_an_offset_that_overflows),
        TEST(copies_reject_null_pointers),
        TEST(copies_reject_a_stream_because_the_cpu_driver_has_none),
        TEST(map_exposes_the_buffer_and_unmap_accepts_the_pointer),
        TEST(map_rejects_a_range_past_the_end_and_unknown_flags),
        TEST(unmap_rejects_a_pointer_outside_the_buffer),
        TEST(import_wraps_caller_memory_without_copying_and_free_leaves_it_alone),
        TEST(import_rejects_null_and_empty_memory),
        TEST(the_kernel_table_has_identity_for_all_13_dtypes),
        TEST(identity_copies_f32_values_unchanged),
        TEST(identity_copies_i64_values_between_offsets_of_one_arena),
        TEST(identity_rejects_mismatched_element_counts),
        TEST(identity_rejects_an_output_range_past_the_end_of_its_buffer),
        TEST(identity_rejects_tensors_whose_dtypes_differ_from_each_other_or_the_kernel),
        TEST(identity_rejects_a_malformed_launch),
        TEST(identity_copies_a_scalar_bool),
    };
    return cmocka_run_group_tests_name("cpu_driver", tests, NULL, NULL);
}
