/*
 * Checks the fakes themselves: that each misbehaves exactly as README.md says and that the
 * healthy ones really work, so a registry test that fails points at the registry, not at a
 * broken fixture. It loads the fakes with dlopen and talks to them through <session/driver.h>
 * only; libsession is not involved. FAKE_DIR is the fakes' build folder.
 */
#include <session/driver.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <cjson/cJSON.h>

#ifndef FAKE_DIR
#error "compile with -DFAKE_DIR=\"<the fakes' build folder>\""
#endif

#include "../support/test_host.h"

/* -- helpers -------------------------------------------------------------------------------- */

/* Loads FAKE_DIR/<module>; fails the test with dlerror's text when it cannot. */
static void *load(const char *module) {
    char path[1024];
    void *lib;

    snprintf(path, sizeof(path), "%s/%s", FAKE_DIR, module);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        fail_msg("dlopen %s: %s", path, dlerror());
    return lib;
}

static ses_drv_negotiate_fn entry_point(void *lib) {
    ses_drv_negotiate_fn fn;
    void *sym = dlsym(lib, SES_DRV_NEGOTIATE_SYMBOL);

    assert_non_null(sym);
    /* POSIX guarantees the object-to-function pointer conversion dlsym needs. */
    memcpy(&fn, &sym, sizeof(fn));
    return fn;
}

/* Fills the "in" half of @p args the way the host does: major 1, minors 0 to 0. */
static void init_args(ses_drv_negotiate_t *args, ses_drv_host_ctx_t *ctx) {
    memset(args, 0, sizeof(*args));
    memset(ctx, 0, sizeof(*ctx));
    args->struct_size = sizeof(*args);
    args->abi_major = SES_DRV_ABI_MAJOR;
    args->host_minor_min = 0;
    args->host_minor_max = SES_DRV_ABI_MINOR;
    args->host = &test_host;
    args->host_ctx = ctx;
}

/* Negotiates with FAKE_DIR/<module>, which must succeed, and returns its table. */
static const ses_drv_api_t *negotiate_ok(void *lib) {
    ses_drv_negotiate_t args;
    ses_drv_host_ctx_t ctx;

    init_args(&args, &ctx);
    assert_int_equal(entry_point(lib)(&args), SES_DRV_OK);
    assert_int_equal(args.driver_abi_major, 1);
    assert_int_equal(args.driver_minor_max, SES_DRV_ABI_MINOR);
    assert_int_equal(args.chosen_minor, SES_DRV_ABI_MINOR);
    assert_non_null(args.api);
    return args.api;
}

static int is_healthy_table(const ses_drv_api_t *api) {
    return api->struct_size == sizeof(ses_drv_api_t) && api->info && api->open && api->close &&
           api->enumerate_devices && api->open_device && api->close_device && api->get_kernels &&
           api->alloc && api->free && api->copy_h2d && api->copy_d2h && api->copy_d2d;
}

/* Reads a whole manifest from the fakes' build folder; the caller frees it. */
static char *read_manifest(const char *name) {
    char path[1024];
    char *text;
    long size;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", FAKE_DIR, name);
    f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: cannot open", path);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    size = ftell(f);
    assert_true(size > 0);
    rewind(f);
    text = calloc(1, (size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    return text;
}

/* -- the healthy driver --------------------------------------------------------------------- */

static void good_driver_negotiates_abi_1_1_and_describes_itself(void **state) {
    void *lib = load("ses_fake_good.so");
    const ses_drv_api_t *api;

    (void)state;
    api = negotiate_ok(lib);
    assert_true(is_healthy_table(api));
    assert_int_equal(api->info->struct_size, sizeof(ses_drv_info_t));
    assert_string_equal(api->info->name, "fake_good");
    assert_string_equal(api->info->vendor, "libsession tests");
    assert_int_equal(api->info->flags, SES_DRV_INFO_UNLOADABLE);
    /* Only the negotiate entry is visible; everything else is hidden. */
    assert_null(dlsym(lib, "fake_open"));
    assert_null(dlsym(lib, "fake_api"));
    dlclose(lib);
}

static void good_driver_runs_identity_on_its_one_accel_device(void **state) {
    static const float in[6] = {1.0f, -2.5f, 3.0f, 0.0f, 1e30f, -7.0f};
    static const int64_t dims[2] = {2, 3};
    float out[6] = {0};
    void *lib = load("ses_fake_good.so");
    const ses_drv_api_t *api = negotiate_ok(lib);
    ses_drv_host_ctx_t ctx = {0};
    ses_drv_driver_t *driver = NULL;
    ses_drv_device_t *device = NULL;
    ses_drv_buffer_t *arena = NULL;
    ses_drv_device_desc_t desc = {.struct_size = sizeof(desc)};
    const ses_drv_kernel_t *kernels = NULL;
    uint32_t count = 0, stride = 0;

    (void)state;
    assert_int_equal(api->open(&test_host, &ctx, &driver), SES_DRV_OK);
    assert_int_equal(api->enumerate_devices(driver, &count, NULL), SES_DRV_OK);
    assert_int_equal(count, 1);
    assert_int_equal(api->enumerate_devices(driver, &count, &desc), SES_DRV_OK);
    assert_int_equal(count, 1);
    assert_int_equal(desc.struct_size, sizeof(desc));
    assert_int_equal(desc.kind, SES_DRV_DEVICE_ACCEL);
    assert_int_equal(desc.ordinal, 0);
    assert_string_equal(desc.name, "Fake Accelerator");
    assert_int_equal(desc.mem_kinds, 1u << SES_DRV_MEM_DEVICE);

    assert_int_equal(api->open_device(driver, 1, &device), SES_DRV_NOT_FOUND);
    assert_null(device);
    assert_int_equal(api->open_device(driver, 0, &device), SES_DRV_OK);
    assert_int_equal(api->get_kernels(device, &kernels, &count, &stride), SES_DRV_OK);
    assert_int_equal(count, 1);
    assert_int_equal(stride, sizeof(ses_drv_kernel_t));
    assert_string_equal(kernels[0].op, "Identity");
    assert_string_equal(kernels[0].signature, "f32->f32");
    assert_non_null(kernels[0].compute);

    /* One arena: the input at offset 0, the output at offset 64, as a plan would lay them out. */
    assert_int_equal(api->alloc(device, 128, SES_DRV_MEM_DEVICE, &arena), SES_DRV_OK);
    assert_int_equal(api->copy_h2d(device, NULL, in, arena, 0, sizeof(in)), SES_DRV_OK);
    {
        ses_drv_tensor_desc_t t = {
            .struct_size = sizeof(t), .dtype = SES_DRV_DTYPE_F32, .rank = 2, .dims = dims};
        ses_drv_node_t node = {.struct_size = sizeof(node),
                               .op = "Identity",
                               .name = "id0",
                               .n_inputs = 1,
                               .n_outputs = 1,
                               .inputs = &t,
                               .outputs = &t};
        ses_drv_buffer_t *bufs[1] = {arena};
        uint64_t in_off[1] = {0}, out_off[1] = {64};
        ses_drv_launch_t launch = {.struct_size = sizeof(launch),
                                   .node = &node,
                                   .inputs = bufs,
                                   .input_offsets = in_off,
                                   .outputs = bufs,
                                   .output_offsets = out_off};

        assert_int_equal(kernels[0].compute(device, NULL, &launch), SES_DRV_OK);
        /* An output range that runs past the arena is refused, not written. */
        out_off[0] = 128 - 8;
        assert_int_equal(kernels[0].compute(device, NULL, &launch), SES_DRV_INVALID_ARGUMENT);
    }
    assert_int_equal(api->copy_d2h(device, NULL, arena, 64, out, sizeof(out)), SES_DRV_OK);
    assert_memory_equal(in, out, sizeof(in));
    /* d2d within one buffer, overlapping ranges. */
    assert_int_equal(api->copy_d2d(device, NULL, arena, 64, arena, 60, sizeof(in)), SES_DRV_OK);

    api->free(device, arena);
    api->free(device, NULL);
    api->close_device(device);
    api->close(driver);
    assert_int_equal(ctx.calls, 2); /* the two refusals above, each with a message */
    dlclose(lib);
}

/* The message must say which range and how big the buffer is. */
static void good_driver_refuses_copies_past_the_end_of_a_buffer(void **state) {
    unsigned char bytes[32] = {0};
    void *lib = load("ses_fake_good.so");
    const ses_drv_api_t *api = negotiate_ok(lib);
    ses_drv_host_ctx_t ctx = {0};
    ses_drv_driver_t *driver = NULL;
    ses_drv_device_t *device = NULL;
    ses_drv_buffer_t *buf = NULL;
    ses_drv_buffer_t *refused = (ses_drv_buffer_t *)&ctx;

    (void)state;
    assert_int_equal(api->open(&test_host, &ctx, &driver), SES_DRV_OK);
    assert_int_equal(api->open_device(driver, 0, &device), SES_DRV_OK);
    assert_int_equal(api->alloc(device, 16, SES_DRV_MEM_DEVICE, &buf), SES_DRV_OK);

    assert_int_equal(api->copy_h2d(device, NULL, bytes, buf, 8, 16), SES_DRV_INVALID_ARGUMENT);
    assert_non_null(strstr(ctx.message, "16-byte buffer"));
    assert_int_equal(api->copy_d2h(device, NULL, buf, UINT64_MAX, bytes, 2),
                     SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(api->alloc(device, 0, SES_DRV_MEM_DEVICE, &refused), SES_DRV_INVALID_ARGUMENT);
    assert_null(refused);
    assert_int_equal(api->alloc(device, 16, SES_DRV_MEM_SHARED, &refused), SES_DRV_UNIMPLEMENTED);
    assert_int_equal(api->alloc(device, UINT64_MAX, SES_DRV_MEM_DEVICE, &refused),
                     SES_DRV_OUT_OF_MEMORY);
    assert_non_null(strstr(ctx.message, "18446744073709551615 bytes asked"));
    assert_int_equal(ctx.calls, 5);

    api->free(device, buf);
    api->close_device(device);
    api->close(driver);
    dlclose(lib);
}

static void good_driver_answers_incompatible_to_another_major_naming_its_own(void **state) {
    void *lib = load("ses_fake_good.so");
    ses_drv_negotiate_t args;
    ses_drv_host_ctx_t ctx;

    (void)state;
    init_args(&args, &ctx);
    args.abi_major = 2;
    assert_int_equal(entry_point(lib)(&args), SES_DRV_INCOMPATIBLE);
    assert_int_equal(args.driver_abi_major, 1);
    assert_int_equal(args.driver_minor_max, SES_DRV_ABI_MINOR);
    assert_null(args.api);

    init_args(&args, &ctx);
    args.host_minor_min = SES_DRV_ABI_MINOR + 1;
    args.host_minor_max = SES_DRV_ABI_MINOR + 3;
    assert_int_equal(entry_point(lib)(&args), SES_DRV_INCOMPATIBLE);
    char newest[16]; /* the fake speaks minors up to the header's newest */
    snprintf(newest, sizeof newest, "1.%d", SES_DRV_ABI_MINOR);
    assert_non_null(strstr(ctx.message, newest));
    dlclose(lib);
}

/* -- the misbehaving ones ------------------------------------------------------------------- */

static void no_devices_driver_open_reports_unavailable_with_its_reason(void **state) {
    void *lib = load("ses_fake_no_devices.so");
    const ses_drv_api_t *api = negotiate_ok(lib);
    ses_drv_host_ctx_t ctx = {0};
    ses_drv_driver_t *driver = (ses_drv_driver_t *)&ctx;

    (void)state;
    assert_true(is_healthy_table(api));
    unsetenv("FAKE_HW");
    assert_int_equal(api->open(&test_host, &ctx, &driver), SES_DRV_UNAVAILABLE);
    assert_null(driver);
    assert_string_equal(ctx.message, "no fake hardware present (set FAKE_HW=1 to pretend)");

    /* The message tells the truth: FAKE_HW=1 makes the device appear. */
    setenv("FAKE_HW", "1", 1);
    assert_int_equal(api->open(&test_host, &ctx, &driver), SES_DRV_OK);
    unsetenv("FAKE_HW");
    api->close(driver);
    dlclose(lib);
}

static void no_entry_driver_loads_but_lacks_the_negotiate_symbol(void **state) {
    void *lib = load("ses_fake_no_entry.so");

    (void)state;
    assert_null(dlsym(lib, SES_DRV_NEGOTIATE_SYMBOL));
    assert_non_null(dlsym(lib, "ses_driver_negotiate"));
    dlclose(lib);
}

static void abi2_driver_answers_incompatible_as_abi_2_0(void **state) {
    void *lib = load("ses_fake_abi2.so");
    ses_drv_negotiate_t args;
    ses_drv_host_ctx_t ctx;

    (void)state;
    init_args(&args, &ctx);
    assert_int_equal(entry_point(lib)(&args), SES_DRV_INCOMPATIBLE);
    assert_int_equal(args.driver_abi_major, 2);
    assert_int_equal(args.driver_minor_max, 0);
    assert_null(args.api);
    assert_int_equal(ctx.calls, 0); /* no message: the host must compose it from the fields */
    dlclose(lib);
}

static void small_table_driver_returns_a_16_byte_table(void **state) {
    void *lib = load("ses_fake_small_table.so");
    const ses_drv_api_t *api;

    (void)state;
    api = negotiate_ok(lib);
    /* Read nothing past the 16 bytes: the object really is that small. */
    assert_int_equal(api->struct_size, 16);
    dlclose(lib);
}

static void negotiate_fails_driver_reports_license_server_unreachable(void **state) {
    void *lib = load("ses_fake_negotiate_fails.so");
    ses_drv_negotiate_t args;
    ses_drv_host_ctx_t ctx;

    (void)state;
    init_args(&args, &ctx);
    assert_int_equal(entry_point(lib)(&args), SES_DRV_INTERNAL);
    assert_int_equal(ctx.calls, 1);
    assert_int_equal(ctx.code, SES_DRV_INTERNAL);
    assert_string_equal(ctx.message, "license server unreachable");
    assert_null(args.api);
    dlclose(lib);
}

static void null_required_driver_lacks_enumerate_devices(void **state) {
    void *lib = load("ses_fake_null_required.so");
    const ses_drv_api_t *api;

    (void)state;
    api = negotiate_ok(lib);
    assert_int_equal(api->struct_size, sizeof(ses_drv_api_t));
    assert_null(api->enumerate_devices);
    assert_non_null(api->open);
    assert_non_null(api->get_kernels);
    dlclose(lib);
}

static void dup_drivers_are_two_libraries_claiming_one_name(void **state) {
    void *a = load("ses_fake_dup_a.so");
    void *b = load("ses_fake_dup_b.so");
    const ses_drv_api_t *api_a = negotiate_ok(a);
    const ses_drv_api_t *api_b = negotiate_ok(b);

    (void)state;
    assert_ptr_not_equal(a, b);
    assert_true(is_healthy_table(api_a));
    assert_true(is_healthy_table(api_b));
    assert_string_equal(api_a->info->name, "fake_dup");
    assert_string_equal(api_b->info->name, "fake_dup");
    assert_string_equal(api_a->info->build_features, "dup_a");
    assert_string_equal(api_b->info->build_features, "dup_b");
    dlclose(b);
    dlclose(a);
}

/* The rpath of the build tree must not rescue it: the file it needs never exists anywhere. */
static void missing_dep_driver_cannot_be_loaded(void **state) {
    const char *err;
    void *lib;

    (void)state;
    lib = dlopen(FAKE_DIR "/ses_fake_missing_dep.so", RTLD_NOW | RTLD_LOCAL);
    err = dlerror();
    if (lib)
        dlclose(lib);
    assert_null(lib);
    assert_non_null(err);
    assert_non_null(strstr(err, "libses_fake_gone.so.1"));
    assert_non_null(strstr(err, "cannot open shared object file"));
}

/* -- the manifests -------------------------------------------------------------------------- */

static void generated_manifests_name_their_library_and_abi(void **state) {
    static const struct {
        const char *file, *name, *library;
        int abi_major;
    } want[] = {
        {"fake_good.json", "fake_good", "ses_fake_good.so", 1},
        {"fake_no_devices.json", "fake_no_devices", "ses_fake_no_devices.so", 1},
        {"fake_no_entry.json", "fake_no_entry", "ses_fake_no_entry.so", 1},
        {"fake_abi2.json", "fake_abi2", "ses_fake_abi2.so", 1},
        {"fake_abi2_manifest.json", "fake_abi2_manifest", "ses_fake_abi2.so", 2},
        {"fake_small_table.json", "fake_small_table", "ses_fake_small_table.so", 1},
        {"fake_negotiate_fails.json", "fake_negotiate_fails", "ses_fake_negotiate_fails.so", 1},
        {"fake_null_required.json", "fake_null_required", "ses_fake_null_required.so", 1},
        {"fake_dup_a.json", "fake_dup", "ses_fake_dup_a.so", 1},
        {"fake_dup_b.json", "fake_dup", "ses_fake_dup_b.so", 1},
        {"fake_dup_same_lib.json", "fake_dup_same", "ses_fake_good.so", 1},
        {"fake_missing_dep.json", "fake_missing_dep", "ses_fake_missing_dep.so", 1},
        {"fake_missing_file.json", "fake_missing_file", "ses_fake_does_not_exist.so", 1},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char *text = read_manifest(want[i].file);
        cJSON *m = cJSON_Parse(text);
        const cJSON *requires;

        if (!m)
            fail_msg("%s does not parse", want[i].file);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "file_format_version")),
                            "1.0.0");
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "name")), want[i].name);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "library_path")),
                            want[i].library);
        assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(m, "abi_major")),
                         want[i].abi_major);
        assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(m, "priority")), 50);
        assert_string_equal(
            cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "device_kinds"), 0)),
            "accel");
        requires = cJSON_GetObjectItem(m, "requires");
        if (strcmp(want[i].file, "fake_missing_dep.json") == 0)
            assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(requires, 0)),
                                "libses_fake_gone.so.1");
        else
            assert_null(requires);
        cJSON_Delete(m);
        free(text);
    }
}

/* Where cJSON stops is where the host will say the error is: line 4. */
static void malformed_manifest_fails_to_parse_on_line_4(void **state) {
    char *text = read_manifest("fake_malformed.json");
    const char *end = NULL;
    cJSON *m = cJSON_ParseWithOpts(text, &end, 1);
    int line = 1;

    (void)state;
    assert_null(m);
    assert_non_null(end);
    for (const char *p = text; p < end; p++) line += *p == '\n';
    assert_int_equal(line, 4);
    free(text);
}

static void bad_fields_manifest_parses_with_the_wrong_types(void **state) {
    char *text = read_manifest("fake_bad_fields.json");
    cJSON *m = cJSON_Parse(text);

    (void)state;
    assert_non_null(m);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(m, "name")));
    assert_true(cJSON_IsString(cJSON_GetObjectItem(m, "abi_major")));
    cJSON_Delete(m);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_driver_negotiates_abi_1_1_and_describes_itself),
        cmocka_unit_test(good_driver_runs_identity_on_its_one_accel_device),
        cmocka_unit_test(good_driver_refuses_copies_past_the_end_of_a_buffer),
        cmocka_unit_test(good_driver_answers_incompatible_to_another_major_naming_its_own),
        cmocka_unit_test(no_devices_driver_open_reports_unavailable_with_its_reason),
        cmocka_unit_test(no_entry_driver_loads_but_lacks_the_negotiate_symbol),
        cmocka_unit_test(abi2_driver_answers_incompatible_as_abi_2_0),
        cmocka_unit_test(small_table_driver_returns_a_16_byte_table),
        cmocka_unit_test(negotiate_fails_driver_reports_license_server_unreachable),
        cmocka_unit_test(null_required_driver_lacks_enumerate_devices),
        cmocka_unit_test(dup_drivers_are_two_libraries_claiming_one_name),
        cmocka_unit_test(missing_dep_driver_cannot_be_loaded),
        cmocka_unit_test(generated_manifests_name_their_library_and_abi),
        cmocka_unit_test(malformed_manifest_fails_to_parse_on_line_4),
        cmocka_unit_test(bad_fields_manifest_parses_with_the_wrong_types),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
