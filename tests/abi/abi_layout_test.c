/*
 * Pins the driver ABI of <session/driver.h> for x86-64 LP64: the size of every struct, the
 * offset and size of every field, and the value of every constant. The numbers are literals on
 * purpose, computed once from the header: a change that moves, resizes, reorders or renumbers
 * anything fails here, because drivers already built against ABI 1.0 would silently misread it.
 *
 * If this test fails, the change broke ABI 1.0. Append fields at the end of a struct under a
 * new minor instead, or bump SES_DRV_ABI_MAJOR; in both cases pin the new layout here.
 */
#include <session/driver.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* The layouts below are those of the x86-64 System V ABI (LP64). */
#if defined(__x86_64__) && defined(__LP64__)
#define PINNED_TARGET 1
#else
#define PINNED_TARGET 0
#endif

/* Skips a layout test, saying why, on a target whose layout is not the pinned one. */
#define SKIP_UNLESS_PINNED_TARGET()                                                         \
    do {                                                                                    \
        if (!PINNED_TARGET) {                                                               \
            print_message("layouts are pinned for x86-64 LP64 only; this target is not\n"); \
            skip();                                                                         \
        }                                                                                   \
    } while (0)

#define FIELD_SIZE(type, field) sizeof(((type *)0)->field)

/* Checks the size of one struct against its pinned size, naming it and both sides. */
static void check_size(const char *type, size_t size, size_t pinned_size) {
    if (size != pinned_size)
        fail_msg("sizeof(%s) is %zu, but ABI 1.0 pins %zu", type, size, pinned_size);
}

#define SIZE(type, pinned_size) check_size(#type, sizeof(type), pinned_size)

/* Checks one field against its pinned offset and size, naming the field and both sides. */
static void check_field(const char *type, const char *field, size_t offset, size_t size,
                        size_t pinned_offset, size_t pinned_size) {
    if (offset != pinned_offset || size != pinned_size)
        fail_msg("%s.%s: offset %zu size %zu, but ABI 1.0 pins offset %zu size %zu", type, field,
                 offset, size, pinned_offset, pinned_size);
}

#define FIELD(type, field, pinned_offset, pinned_size)                                        \
    check_field(#type, #field, offsetof(type, field), FIELD_SIZE(type, field), pinned_offset, \
                pinned_size)

/* Checks the common header every ABI struct starts with. */
#define HEADER(type)                    \
    do {                                \
        FIELD(type, struct_size, 0, 4); \
        FIELD(type, reserved, 4, 4);    \
        FIELD(type, next, 8, 8);        \
    } while (0)

/* -- the common header ---------------------------------------------------------------------- */

static void every_struct_starts_with_size_reserved_and_next(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    HEADER(ses_drv_host_t);
    HEADER(ses_drv_info_t);
    HEADER(ses_drv_device_desc_t);
    HEADER(ses_drv_tensor_desc_t);
    HEADER(ses_drv_node_t);
    HEADER(ses_drv_launch_t);
    HEADER(ses_drv_kernel_t);
    HEADER(ses_drv_api_t);
    HEADER(ses_drv_negotiate_t);
}

/* -- one test per struct -------------------------------------------------------------------- */

static void host_services_keep_their_abi_1_0_layout(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    SIZE(ses_drv_host_t, 56);
    FIELD(ses_drv_host_t, log, 16, 8);
    FIELD(ses_drv_host_t, log_enabled, 24, 8);
    FIELD(ses_drv_host_t, error, 32, 8);
    FIELD(ses_drv_host_t, get_option, 40, 8);
    FIELD(ses_drv_host_t, should_abort, 48, 8);
}

static void driver_info_keeps_its_abi_1_0_layout(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    SIZE(ses_drv_info_t, 56);
    FIELD(ses_drv_info_t, name, 16, 8);
    FIELD(ses_drv_info_t, vendor, 24, 8);
    FIELD(ses_drv_info_t, version, 32, 8);
    FIELD(ses_drv_info_t, build_features, 40, 8);
    FIELD(ses_drv_info_t, opset_version, 48, 4);
    FIELD(ses_drv_info_t, flags, 52, 4);
}

static void device_desc_keeps_its_abi_1_0_layout(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    SIZE(ses_drv_device_desc_t, 80);
    FIELD(ses_drv_device_desc_t, kind, 16, 4);
    FIELD(ses_drv_device_desc_t, ordinal, 20, 4);
    FIELD(ses_drv_device_desc_t, stable_id, 24, 8);
    FIELD(ses_drv_device_desc_t, name, 32, 8);
    FIELD(ses_drv_device_desc_t, memory_bytes, 40, 8);
    FIELD(ses_drv_device_desc_t, memory_free, 48, 8);
    FIELD(ses_drv_device_desc_t, caps, 56, 8);
    FIELD(ses_drv_device_desc_t, mem_kinds, 64, 4);
    FIELD(ses_drv_device_desc_t, alignment, 68, 4);
    FIELD(ses_drv_device_desc_t, max_alloc, 72, 8);
}

static void tensor_desc_keeps_its_abi_1_0_layout(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    SIZE(ses_drv_tensor_desc_t, 32);
    FIELD(ses_drv_tensor_desc_t, dtype, 16, 4);
    FIELD(ses_drv_tensor_desc_t, rank, 20, 4);
    FIELD(ses_drv_tensor_desc_t, dims, 24, 8);
}

static void node_keeps_its_abi_1_0_layout(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    SIZE(ses_drv_node_t, 80); /* 72 in 1.0; constant_inputs in 1.3 */
    FIELD(ses_drv_node_t, op, 16, 8);
    FIELD(ses_drv_node_t, name, 24, 8);
    FIELD(ses_drv_node_t, n_inputs, 32, 4);
    FIELD(ses_drv_node_t, n_outputs, 36, 4);
    FIELD(ses_drv_node_t, inputs, 40, 8);
    FIELD(ses_drv_node_t, outputs, 48, 8);
    FIELD(ses_drv_node_t, attr, 56, 8);
    FIELD(ses_drv_node_t, attr_ctx, 64, 8);
    /* ABI 1.3 */
    FIELD(ses_drv_node_t, constant_inputs, 72, 8);
}

static void launch_keeps_its_abi_1_0_layout(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    SIZE(ses_drv_launch_t, 64);
    FIELD(ses_drv_launch_t, node, 16, 8);
    FIELD(ses_drv_launch_t, stream, 24, 8);
    FIELD(ses_drv_launch_t, inputs, 32, 8);
    FIELD(ses_drv_launch_t, input_offsets, 40, 8);
    FIELD(ses_drv_launch_t, outputs, 48, 8);
    FIELD(ses_drv_launch_t, output_offsets, 56, 8);
}

static void kernel_keeps_its_abi_1_0_layout(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    SIZE(ses_drv_kernel_t, 80); /* 72 until 1.3; reuse_inputs in 1.4 */
    FIELD(ses_drv_kernel_t, op, 16, 8);
    FIELD(ses_drv_kernel_t, signature, 24, 8);
    FIELD(ses_drv_kernel_t, priority, 32, 4);
    FIELD(ses_drv_kernel_t, flags, 36, 4);
    FIELD(ses_drv_kernel_t, supports_node, 40, 8);
    FIELD(ses_drv_kernel_t, create, 48, 8);
    FIELD(ses_drv_kernel_t, destroy, 56, 8);
    FIELD(ses_drv_kernel_t, compute, 64, 8);
    FIELD(ses_drv_kernel_t, reuse_inputs, 72, 8);
}

static void api_table_keeps_its_abi_1_0_layout(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    SIZE(ses_drv_api_t, 264); /* 208 in 1.0, four graph entries in 1.1, two native in 1.2,
                                 open_device_with_options in 1.5 */
    FIELD(ses_drv_api_t, info, 16, 8);
    FIELD(ses_drv_api_t, open, 24, 8);
    FIELD(ses_drv_api_t, close, 32, 8);
    FIELD(ses_drv_api_t, enumerate_devices, 40, 8);
    FIELD(ses_drv_api_t, open_device, 48, 8);
    FIELD(ses_drv_api_t, close_device, 56, 8);
    FIELD(ses_drv_api_t, get_kernels, 64, 8);
    FIELD(ses_drv_api_t, memory_info, 72, 8);
    FIELD(ses_drv_api_t, alloc, 80, 8);
    FIELD(ses_drv_api_t, free, 88, 8);
    FIELD(ses_drv_api_t, map, 96, 8);
    FIELD(ses_drv_api_t, unmap, 104, 8);
    FIELD(ses_drv_api_t, import_host_ptr, 112, 8);
    FIELD(ses_drv_api_t, copy_h2d, 120, 8);
    FIELD(ses_drv_api_t, copy_d2h, 128, 8);
    FIELD(ses_drv_api_t, copy_d2d, 136, 8);
    FIELD(ses_drv_api_t, stream_create, 144, 8);
    FIELD(ses_drv_api_t, stream_destroy, 152, 8);
    FIELD(ses_drv_api_t, stream_synchronize, 160, 8);
    FIELD(ses_drv_api_t, event_create, 168, 8);
    FIELD(ses_drv_api_t, event_destroy, 176, 8);
    FIELD(ses_drv_api_t, event_record, 184, 8);
    FIELD(ses_drv_api_t, stream_wait_event, 192, 8);
    FIELD(ses_drv_api_t, event_synchronize, 200, 8);
    /* ABI 1.1 */
    FIELD(ses_drv_api_t, capture_begin, 208, 8);
    FIELD(ses_drv_api_t, capture_end, 216, 8);
    FIELD(ses_drv_api_t, graph_launch, 224, 8);
    FIELD(ses_drv_api_t, graph_destroy, 232, 8);
    /* ABI 1.2 */
    FIELD(ses_drv_api_t, buffer_native, 240, 8);
    FIELD(ses_drv_api_t, import_native, 248, 8);
    /* ABI 1.5 */
    FIELD(ses_drv_api_t, open_device_with_options, 256, 8);
}

static void options_keep_their_abi_1_5_layout(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    SIZE(ses_drv_options_t, 48);
    FIELD(ses_drv_options_t, struct_size, 0, 4);
    FIELD(ses_drv_options_t, reserved, 4, 4);
    FIELD(ses_drv_options_t, next, 8, 8);
    FIELD(ses_drv_options_t, count, 16, 4);
    FIELD(ses_drv_options_t, reserved1, 20, 4);
    FIELD(ses_drv_options_t, keys, 24, 8);
    FIELD(ses_drv_options_t, values, 32, 8);
    FIELD(ses_drv_options_t, get, 40, 8);
}

static void negotiate_args_keep_their_abi_1_0_layout(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    SIZE(ses_drv_negotiate_t, 72);
    FIELD(ses_drv_negotiate_t, abi_major, 16, 4);
    FIELD(ses_drv_negotiate_t, host_minor_min, 20, 4);
    FIELD(ses_drv_negotiate_t, host_minor_max, 24, 4);
    FIELD(ses_drv_negotiate_t, reserved2, 28, 4);
    FIELD(ses_drv_negotiate_t, host, 32, 8);
    FIELD(ses_drv_negotiate_t, host_ctx, 40, 8);
    FIELD(ses_drv_negotiate_t, driver_abi_major, 48, 4);
    FIELD(ses_drv_negotiate_t, driver_minor_max, 52, 4);
    FIELD(ses_drv_negotiate_t, chosen_minor, 56, 4);
    FIELD(ses_drv_negotiate_t, reserved3, 60, 4);
    FIELD(ses_drv_negotiate_t, api, 64, 8);
}

/* -- SES_DRV_SIZEOF_1_0 --------------------------------------------------------------------- */

/*
 * Today every struct is exactly its 1.0 fields, with no tail padding, so the 1.0 size the host
 * demands equals sizeof. When a minor appends fields, sizeof grows and the 1.0 size must not:
 * change the sizeof half of these checks then, never the literals.
 */
static void sizeof_1_0_equals_the_full_size_of_every_struct_but_the_api_table_and_node(void **state) {
    (void)state;
    SKIP_UNLESS_PINNED_TARGET();
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort), 56);
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_info_t, flags), 56);
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_device_desc_t, max_alloc), 80);
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims), 32);
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx), 72);
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets), 64);
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_kernel_t, compute), 72);
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_api_t, event_synchronize), 208);
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_negotiate_t, api), 72);

    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort), sizeof(ses_drv_host_t));
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_info_t, flags), sizeof(ses_drv_info_t));
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_device_desc_t, max_alloc),
                     sizeof(ses_drv_device_desc_t));
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims),
                     sizeof(ses_drv_tensor_desc_t));
    /* ABI 1.3 grew the node: the 1.0 part ends where constant_inputs starts. */
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx),
                     offsetof(ses_drv_node_t, constant_inputs));
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets),
                     sizeof(ses_drv_launch_t));
    /* ABI 1.4 grew the kernel entry: the 1.0 part ends where reuse_inputs starts. */
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_kernel_t, compute),
                     offsetof(ses_drv_kernel_t, reuse_inputs));
    /* The one struct ABI 1.1 grew: the 1.0 part ends where the graph entries start. */
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_api_t, event_synchronize),
                     offsetof(ses_drv_api_t, capture_begin));
    assert_int_equal(SES_DRV_SIZEOF_1_0(ses_drv_negotiate_t, api), sizeof(ses_drv_negotiate_t));
}

/* -- constants ------------------------------------------------------------------------------ */

static void abi_version_is_1_5_and_the_entry_point_keeps_its_name(void **state) {
    (void)state;
    assert_int_equal(SES_DRV_ABI_MAJOR, 1);
    assert_int_equal(SES_DRV_ABI_MINOR, 5);
    assert_string_equal(SES_DRV_NEGOTIATE_SYMBOL, "ses_drv_negotiate");
}

static void status_codes_keep_their_values(void **state) {
    (void)state;
    assert_int_equal(SES_DRV_OK, 0);
    assert_int_equal(SES_DRV_INVALID_ARGUMENT, 1);
    assert_int_equal(SES_DRV_NOT_FOUND, 2);
    assert_int_equal(SES_DRV_FAILED_PRECONDITION, 3);
    assert_int_equal(SES_DRV_OUT_OF_MEMORY, 4);
    assert_int_equal(SES_DRV_UNIMPLEMENTED, 5);
    assert_int_equal(SES_DRV_INCOMPATIBLE, 6);
    assert_int_equal(SES_DRV_UNAVAILABLE, 7);
    assert_int_equal(SES_DRV_INTERNAL, 8);
    assert_int_equal(SES_DRV_CANCELLED, 9);
    assert_int_equal(SES_DRV_ALREADY_EXISTS, 10);
}

static void dtype_codes_keep_their_values(void **state) {
    (void)state;
    assert_int_equal(SES_DRV_DTYPE_INVALID, 0);
    assert_int_equal(SES_DRV_DTYPE_F32, 1);
    assert_int_equal(SES_DRV_DTYPE_F64, 2);
    assert_int_equal(SES_DRV_DTYPE_F16, 3);
    assert_int_equal(SES_DRV_DTYPE_BF16, 4);
    assert_int_equal(SES_DRV_DTYPE_I8, 5);
    assert_int_equal(SES_DRV_DTYPE_I16, 6);
    assert_int_equal(SES_DRV_DTYPE_I32, 7);
    assert_int_equal(SES_DRV_DTYPE_I64, 8);
    assert_int_equal(SES_DRV_DTYPE_U8, 9);
    assert_int_equal(SES_DRV_DTYPE_U16, 10);
    assert_int_equal(SES_DRV_DTYPE_U32, 11);
    assert_int_equal(SES_DRV_DTYPE_U64, 12);
    assert_int_equal(SES_DRV_DTYPE_BOOL, 13);
}

static void device_kinds_and_memory_kinds_keep_their_values(void **state) {
    (void)state;
    assert_int_equal(SES_DRV_DEVICE_CPU, 0);
    assert_int_equal(SES_DRV_DEVICE_GPU, 1);
    assert_int_equal(SES_DRV_DEVICE_FPGA, 2);
    assert_int_equal(SES_DRV_DEVICE_ACCEL, 3);

    assert_int_equal(SES_DRV_MEM_DEVICE, 0);
    assert_int_equal(SES_DRV_MEM_HOST_PINNED, 1);
    assert_int_equal(SES_DRV_MEM_SHARED, 2);
}

/* The caps field is 64 bits wide, so every bit constant must be a 64-bit value too. */
static void capability_bits_keep_their_values_and_are_64_bit(void **state) {
    (void)state;
    assert_int_equal(SES_DRV_CAP_HOST_VISIBLE, 0x001);
    assert_int_equal(SES_DRV_CAP_STREAMS, 0x002);
    assert_int_equal(SES_DRV_CAP_EVENTS, 0x004);
    assert_int_equal(SES_DRV_CAP_ASYNC_COPY, 0x008);
    assert_int_equal(SES_DRV_CAP_HOST_IMPORT, 0x010);
    assert_int_equal(SES_DRV_CAP_MAP, 0x020);
    assert_int_equal(SES_DRV_CAP_F16, 0x040);
    assert_int_equal(SES_DRV_CAP_BF16, 0x080);
    assert_int_equal(SES_DRV_CAP_F64, 0x100);
    assert_int_equal(SES_DRV_CAP_CONCURRENT, 0x200);
    assert_int_equal(SES_DRV_CAP_GRAPHS, 0x400);
    assert_int_equal(SES_DRV_CAP_NATIVE, 0x800);
    assert_int_equal(sizeof(SES_DRV_CAP_HOST_VISIBLE), 8);
    assert_int_equal(sizeof(SES_DRV_CAP_CONCURRENT), 8);
}

static void log_levels_map_flags_attr_types_and_info_flags_keep_their_values(void **state) {
    (void)state;
    assert_int_equal(SES_DRV_LOG_ERROR, 0);
    assert_int_equal(SES_DRV_LOG_WARN, 1);
    assert_int_equal(SES_DRV_LOG_INFO, 2);
    assert_int_equal(SES_DRV_LOG_DEBUG, 3);

    assert_int_equal(SES_DRV_MAP_READ, 1);
    assert_int_equal(SES_DRV_MAP_WRITE, 2);

    assert_int_equal(SES_DRV_ATTR_INT, 1);
    assert_int_equal(SES_DRV_ATTR_FLOAT, 2);
    assert_int_equal(SES_DRV_ATTR_STRING, 3);
    assert_int_equal(SES_DRV_ATTR_INTS, 4);
    assert_int_equal(SES_DRV_ATTR_FLOATS, 5);

    assert_int_equal(SES_DRV_INFO_UNLOADABLE, 1);
    assert_int_equal(SES_DRV_KERNEL_NO_CAPTURE, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_struct_starts_with_size_reserved_and_next),
        cmocka_unit_test(host_services_keep_their_abi_1_0_layout),
        cmocka_unit_test(driver_info_keeps_its_abi_1_0_layout),
        cmocka_unit_test(device_desc_keeps_its_abi_1_0_layout),
        cmocka_unit_test(tensor_desc_keeps_its_abi_1_0_layout),
        cmocka_unit_test(node_keeps_its_abi_1_0_layout),
        cmocka_unit_test(launch_keeps_its_abi_1_0_layout),
        cmocka_unit_test(kernel_keeps_its_abi_1_0_layout),
        cmocka_unit_test(api_table_keeps_its_abi_1_0_layout),
        cmocka_unit_test(options_keep_their_abi_1_5_layout),
        cmocka_unit_test(negotiate_args_keep_their_abi_1_0_layout),
        cmocka_unit_test(
            sizeof_1_0_equals_the_full_size_of_every_struct_but_the_api_table_and_node),
        cmocka_unit_test(abi_version_is_1_5_and_the_entry_point_keeps_its_name),
        cmocka_unit_test(status_codes_keep_their_values),
        cmocka_unit_test(dtype_codes_keep_their_values),
        cmocka_unit_test(device_kinds_and_memory_kinds_keep_their_values),
        cmocka_unit_test(capability_bits_keep_their_values_and_are_64_bit),
        cmocka_unit_test(log_levels_map_flags_attr_types_and_info_flags_keep_their_values),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
