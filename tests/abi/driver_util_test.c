/*
 * <session/driver_util.h>, the drivers' header-only helpers: negotiation answers every case of
 * DRV-6 to DRV-8 and reports through the host's error service; enumerate_devices' checks refuse
 * a short slot before writing anything and fill at the host's stride; the small helpers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <session/driver_util.h>

/* A host whose error service keeps the last message. */
static char last_message[1024];
static int errors;

static int32_t record_error(ses_drv_host_ctx_t *ctx, int32_t code, const char *format, ...) {
    va_list ap;

    (void)ctx;
    errors++;
    va_start(ap, format);
    vsnprintf(last_message, sizeof last_message, format, ap);
    va_end(ap);
    return code;
}

static ses_drv_host_t recording_host(void) {
    ses_drv_host_t host;

    memset(&host, 0, sizeof host);
    host.struct_size = sizeof host;
    host.error = record_error;
    errors = 0;
    last_message[0] = '\0';
    return host;
}

static const ses_drv_api_t some_api = {.struct_size = sizeof(ses_drv_api_t)};

static ses_drv_negotiate_t request(const ses_drv_host_t *host, uint32_t min, uint32_t max) {
    ses_drv_negotiate_t args;

    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.abi_major = SES_DRV_ABI_MAJOR;
    args.host_minor_min = min;
    args.host_minor_max = max;
    args.host = host;
    return args;
}

static void negotiation_picks_the_newest_common_minor(void **state) {
    ses_drv_host_t host = recording_host();
    ses_drv_negotiate_t args = request(&host, 0, 7);

    (void)state;
    assert_int_equal(ses_drv_util_negotiate(&args, "demo", 1, 3, &some_api), SES_DRV_OK);
    assert_int_equal(args.chosen_minor, 3);
    assert_ptr_equal(args.api, &some_api);
    assert_int_equal(args.driver_abi_major, SES_DRV_ABI_MAJOR);
    assert_int_equal(args.driver_minor_max, 3);

    args = request(&host, 0, 2);
    assert_int_equal(ses_drv_util_negotiate(&args, "demo", 1, 3, &some_api), SES_DRV_OK);
    assert_int_equal(args.chosen_minor, 2);
    assert_int_equal(errors, 0);
}

static void negotiation_refuses_minors_out_of_reach_with_a_message(void **state) {
    ses_drv_host_t host = recording_host();
    ses_drv_negotiate_t args = request(&host, 4, 6);

    (void)state;
    assert_int_equal(ses_drv_util_negotiate(&args, "demo", 1, 3, &some_api),
                     SES_DRV_INCOMPATIBLE);
    assert_null(args.api);
    assert_int_equal(args.driver_minor_max, 3);
    assert_non_null(strstr(last_message, "the demo driver speaks ABI 1.1 to 1.3"));
    assert_non_null(strstr(last_message, "install a newer driver"));

    args = request(&host, 0, 0);
    assert_int_equal(ses_drv_util_negotiate(&args, "demo", 1, 3, &some_api),
                     SES_DRV_INCOMPATIBLE);
    assert_non_null(strstr(last_message, "upgrade libsession"));

    args = request(&host, 5, 2);
    assert_int_equal(ses_drv_util_negotiate(&args, "demo", 0, 3, &some_api),
                     SES_DRV_INVALID_ARGUMENT);
    assert_non_null(strstr(last_message, "host_minor_min 5 is above host_minor_max 2"));
    assert_int_equal(errors, 3);
}

static void negotiation_of_short_structs_and_other_majors_touches_nothing(void **state) {
    ses_drv_host_t host = recording_host();
    ses_drv_negotiate_t args = request(&host, 0, 4);
    unsigned char before[sizeof args];

    (void)state;
    assert_int_equal(ses_drv_util_negotiate(NULL, "demo", 0, 4, &some_api),
                     SES_DRV_INVALID_ARGUMENT);
    /* DRV-6: below the frozen prefix nothing is written. */
    args.struct_size = (uint32_t)SES_DRV_SIZEOF_1_0(ses_drv_negotiate_t, driver_minor_max) - 1;
    memcpy(before, &args, sizeof args);
    assert_int_equal(ses_drv_util_negotiate(&args, "demo", 0, 4, &some_api),
                     SES_DRV_INVALID_ARGUMENT);
    assert_memory_equal(before, &args, sizeof args);
    /* DRV-7: another major gets the driver's major and INCOMPATIBLE, the host untouched, even
     * when the struct holds only the prefix. */
    args = request(&host, 0, 4);
    args.abi_major = SES_DRV_ABI_MAJOR + 1;
    args.struct_size = (uint32_t)SES_DRV_SIZEOF_1_0(ses_drv_negotiate_t, driver_minor_max);
    args.api = &some_api;
    assert_int_equal(ses_drv_util_negotiate(&args, "demo", 0, 4, &some_api),
                     SES_DRV_INCOMPATIBLE);
    assert_int_equal(args.driver_abi_major, SES_DRV_ABI_MAJOR);
    assert_ptr_equal(args.api, &some_api); /* past the prefix: not written */
    /* This major, shorter than 1.0: refused without a message. */
    args = request(&host, 0, 4);
    args.struct_size = (uint32_t)SES_DRV_SIZEOF_1_0(ses_drv_negotiate_t, api) - 1;
    assert_int_equal(ses_drv_util_negotiate(&args, "demo", 0, 4, &some_api),
                     SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(errors, 0);
}

static void a_host_without_an_error_service_gets_the_bare_code(void **state) {
    ses_drv_host_t host = recording_host();

    (void)state;
    host.struct_size = (uint32_t)offsetof(ses_drv_host_t, error); /* too short to hold it */
    assert_false(SES_DRV_UTIL_HOST_HAS(&host, error));
    assert_int_equal(ses_drv_util_fail(&host, NULL, SES_DRV_INTERNAL, "x %d", 1),
                     SES_DRV_INTERNAL);
    assert_int_equal(ses_drv_util_fail(NULL, NULL, SES_DRV_UNAVAILABLE, "y"),
                     SES_DRV_UNAVAILABLE);
    assert_int_equal(errors, 0);
    host.struct_size = sizeof host;
    assert_true(SES_DRV_UTIL_HOST_HAS(&host, error));
    assert_false(SES_DRV_UTIL_HOST_HAS(&host, log)); /* present but NULL */
    assert_int_equal(ses_drv_util_fail(&host, NULL, SES_DRV_INTERNAL, "z %d", 2),
                     SES_DRV_INTERNAL);
    assert_string_equal(last_message, "z 2");
}

/* Descriptors as a newer host lays them out: 24 more bytes each, which the driver must keep. */
typedef struct newer_desc {
    ses_drv_device_desc_t base;
    unsigned char newer[24];
} newer_desc_t;

static void enumeration_checks_every_slot_then_fills_at_the_host_stride(void **state) {
    ses_drv_host_t host = recording_host();
    newer_desc_t slots[3];
    ses_drv_device_desc_t mine;
    uint32_t count = 0, fill = 99;
    static const int marker = 0;

    (void)state;
    assert_int_equal(ses_drv_util_enumerate_begin(&host, NULL, NULL, NULL, 2, &fill),
                     SES_DRV_INVALID_ARGUMENT);
    assert_non_null(strstr(last_message, "inout_count is NULL"));
    assert_int_equal(ses_drv_util_enumerate_begin(&host, NULL, &count, NULL, 2, &fill),
                     SES_DRV_OK);
    assert_int_equal(count, 2);
    assert_int_equal(fill, 0);

    /* A short second slot: refused before the first is written. */
    memset(slots, 0xab, sizeof slots);
    for (int i = 0; i < 3; i++)
        slots[i].base.struct_size = sizeof(newer_desc_t);
    slots[1].base.struct_size = 16;
    count = 3;
    assert_int_equal(ses_drv_util_enumerate_begin(&host, NULL, &count,
                                                  &slots[0].base, 2, &fill),
                     SES_DRV_INVALID_ARGUMENT);
    assert_non_null(strstr(last_message, "descriptor 1 has struct_size 16"));
    assert_int_equal(count, 3);

    /* The host's slots are larger than ours: each is written at its own stride, struct_size,
     * next and the newer bytes kept. */
    memset(slots, 0xab, sizeof slots);
    for (int i = 0; i < 3; i++) {
        slots[i].base.struct_size = sizeof(newer_desc_t);
        slots[i].base.next = &marker;
    }
    count = 3;
    assert_int_equal(ses_drv_util_enumerate_begin(&host, NULL, &count, &slots[0].base, 2, &fill),
                     SES_DRV_OK);
    assert_int_equal(fill, 2); /* two devices, three slots */
    for (uint32_t i = 0; i < fill; i++) {
        memset(&mine, 0, sizeof mine);
        mine.struct_size = 1; /* the driver's own struct_size is never copied */
        mine.kind = SES_DRV_DEVICE_ACCEL;
        mine.ordinal = i;
        mine.name = "demo";
        mine.alignment = 64;
        ses_drv_util_put_device(&slots[0].base, i, &mine);
    }
    for (uint32_t i = 0; i < 2; i++) {
        assert_int_equal(slots[i].base.struct_size, sizeof(newer_desc_t));
        assert_ptr_equal(slots[i].base.next, &marker);
        assert_int_equal(slots[i].base.reserved, 0);
        assert_int_equal(slots[i].base.kind, SES_DRV_DEVICE_ACCEL);
        assert_int_equal(slots[i].base.ordinal, i);
        assert_string_equal(slots[i].base.name, "demo");
        assert_int_equal(slots[i].base.alignment, 64);
        for (size_t b = 0; b < sizeof slots[i].newer; b++)
            assert_int_equal(slots[i].newer[b], 0xab);
    }
    assert_int_equal(slots[2].base.kind, 0xabababab); /* the third slot untouched */
}

static void the_small_helpers(void **state) {
    struct {
        ses_drv_tensor_desc_t desc;
        uint64_t newer;
    } tensors[2];

    (void)state;
    assert_int_equal(ses_drv_util_dtype_size(SES_DRV_DTYPE_F32), 4);
    assert_int_equal(ses_drv_util_dtype_size(SES_DRV_DTYPE_F64), 8);
    assert_int_equal(ses_drv_util_dtype_size(SES_DRV_DTYPE_BF16), 2);
    assert_int_equal(ses_drv_util_dtype_size(SES_DRV_DTYPE_U64), 8);
    assert_int_equal(ses_drv_util_dtype_size(SES_DRV_DTYPE_BOOL), 1);
    assert_int_equal(ses_drv_util_dtype_size(SES_DRV_DTYPE_INVALID), 0);
    assert_int_equal(ses_drv_util_dtype_size(999), 0);

    memset(tensors, 0, sizeof tensors);
    tensors[0].desc.struct_size = sizeof tensors[0];
    tensors[1].desc.struct_size = sizeof tensors[1];
    tensors[1].desc.dtype = SES_DRV_DTYPE_I64;
    assert_ptr_equal(ses_drv_util_tensor_at(&tensors[0].desc, 1), &tensors[1].desc);
    assert_int_equal(ses_drv_util_tensor_at(&tensors[0].desc, 1)->dtype, SES_DRV_DTYPE_I64);

    tensors[0].desc.struct_size = (uint32_t)offsetof(ses_drv_tensor_desc_t, dims);
    assert_true(SES_DRV_UTIL_HAS(&tensors[0].desc, ses_drv_tensor_desc_t, rank));
    assert_false(SES_DRV_UTIL_HAS(&tensors[0].desc, ses_drv_tensor_desc_t, dims));
    assert_false(SES_DRV_UTIL_HAS((const ses_drv_tensor_desc_t *)NULL, ses_drv_tensor_desc_t,
                                  dtype));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(negotiation_picks_the_newest_common_minor),
        cmocka_unit_test(negotiation_refuses_minors_out_of_reach_with_a_message),
        cmocka_unit_test(negotiation_of_short_structs_and_other_majors_touches_nothing),
        cmocka_unit_test(a_host_without_an_error_service_gets_the_bare_code),
        cmocka_unit_test(enumeration_checks_every_slot_then_fills_at_the_host_stride),
        cmocka_unit_test(the_small_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
