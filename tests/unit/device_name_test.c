/* Device names: parsing, driver names vs kind names, dedupe of one physical device, messages. */
#include <limits.h>
#include <string.h>

#include <session/session.h>

#include "registry/registry_internal.h"
#include "test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define FAKE(name) FAKE_DIR "/" name

static ses_registry_t *registry_with(const char *add) {
    ses_registry_t *reg = NULL;

    unsetenv("SESSION_DRIVERS_SELECT");
    unsetenv("SESSION_DRIVERS_DISABLE");
    setenv("SESSION_DRIVER_FILES", CPU_MANIFEST, 1);
    if (add)
        setenv("SESSION_ADD_DRIVER_FILES", add, 1);
    else
        unsetenv("SESSION_ADD_DRIVER_FILES");
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    return reg;
}

static void resolves_to(ses_registry_t *reg, const char *name, const char *expected) {
    const ses_device_t *dev = NULL;

    if (ses_registry_find_device(reg, name, &dev) != SES_OK)
        fail_msg("%s: %s", name, ses_last_error());
    assert_string_equal(ses_device_name(dev), expected);
}

static void fails_with(ses_registry_t *reg, const char *name, ses_status_t code,
                       const char *part1, const char *part2) {
    const ses_device_t *dev = (const ses_device_t *)0x1;
    ses_status_t st = ses_registry_find_device(reg, name, &dev);

    if (st != code || dev != NULL || !strstr(ses_last_error(), part1) ||
        (part2 && !strstr(ses_last_error(), part2)))
        fail_msg("\"%s\": got %s \"%s\"; expected %s with \"%s\" and \"%s\"", name,
                 ses_status_name(st), ses_last_error(), ses_status_name(code), part1,
                 part2 ? part2 : "");
}

static void driver_names_and_kind_names_resolve(void **state) {
    ses_registry_t *reg = registry_with(FAKE("fake_good.json"));

    (void)state;
    resolves_to(reg, "cpu", "cpu:0");
    resolves_to(reg, "cpu:0", "cpu:0");
    resolves_to(reg, "fake_good", "fake_good:0");
    resolves_to(reg, "fake_good:0", "fake_good:0");
    resolves_to(reg, "accel", "fake_good:0");
    resolves_to(reg, "accel:0", "fake_good:0");
    ses_registry_destroy(reg);
}

static void malformed_names_are_invalid_arguments(void **state) {
    static const char *const bad[] = {"",       ":0",     "gpu:",    "gpu:-1",      "gpu:01",
                                      "gpu:x",  "GPU:0",  "gpu:0:1", "gpu:1234567890", "gp u",
                                      "/task:0/gpu:0"};
    ses_registry_t *reg = registry_with(NULL);

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        fails_with(reg, bad[i], SES_INVALID_ARGUMENT, "is malformed", "e.g. \"cpu\"");
    ses_registry_destroy(reg);
}

/* Every "not found" lists what does exist, so the user can pick. */
static void absent_devices_are_not_found_and_the_message_lists_what_exists(void **state) {
    ses_registry_t *reg = registry_with(FAKE("fake_good.json") ":" FAKE("fake_no_devices.json") ":" FAKE(
        "fake_abi2.json"));

    (void)state;
    fails_with(reg, "cpu:1", SES_NOT_FOUND, "driver cpu has 1 device(s), cpu:0 to cpu:0",
               "devices here: fake_good:0 (accel), cpu:0 (cpu)");
    fails_with(reg, "gpu:0", SES_NOT_FOUND, "there are 0 gpu devices", "cpu:0 (cpu)");
    fails_with(reg, "accel:1", SES_NOT_FOUND, "there is 1 accel device", "fake_good:0");
    fails_with(reg, "tpu:0", SES_NOT_FOUND, "no driver and no device kind has that name",
               "cpu:0 (cpu)");
    fails_with(reg, "fake_no_devices:0", SES_NOT_FOUND, "driver fake_no_devices has no devices",
               "no fake hardware present");
    fails_with(reg, "fake_abi2", SES_NOT_FOUND, "driver fake_abi2 failed: ABI mismatch", NULL);
    ses_registry_destroy(reg);
}

/* The message of a failed lookup of @p name must contain every string of @p parts (NULL-ended)
 * and none of @p absent (NULL-ended, may be NULL). */
static void fails_naming(ses_registry_t *reg, const char *name, const char *const *parts,
                         const char *const *absent) {
    const ses_device_t *dev = (const ses_device_t *)0x1;
    ses_status_t st = ses_registry_find_device(reg, name, &dev);

    if (st != SES_NOT_FOUND || dev != NULL)
        fail_msg("\"%s\": got %s \"%s\"; expected SES_NOT_FOUND", name, ses_status_name(st),
                 ses_last_error());
    for (size_t i = 0; parts[i]; i++)
        if (!strstr(ses_last_error(), parts[i]))
            fail_msg("\"%s\": the message \"%s\" lacks \"%s\"", name, ses_last_error(), parts[i]);
    for (size_t i = 0; absent && absent[i]; i++)
        if (strstr(ses_last_error(), absent[i]))
            fail_msg("\"%s\": the message \"%s\" should not say \"%s\"", name, ses_last_error(),
                     absent[i]);
}

/* Writes manifest @p file into @p dir: driver @p name, library @p library, offering @p kinds (a
 * JSON array), plus the members in @p extra. Its path goes to @p out_path. */
static void write_manifest(const char *dir, const char *file, const char *name, const char *library,
                           const char *kinds, const char *extra, char *out_path, size_t size) {
    char text[PATH_MAX + 512];

    snprintf(text, sizeof text,
             "{\"file_format_version\": \"1.0.0\", \"name\": \"%s\", \"library_path\": \"%s\", "
             "\"abi_major\": 1, \"device_kinds\": %s%s}",
             name, library, kinds, extra);
    test_write_file(dir, file, text, out_path, size);
}

/*
 * registry.h promises that a missing device gives its driver's cause. "cuda:0" always did; a kind
 * name ("gpu:0") said only "there are 0 gpu devices". Now it names every driver of that kind that
 * gave none, and why: no devices (the driver's message), a vendor runtime missing, a ready driver
 * offering other kinds only; and it still lists the devices that exist.
 */
static void a_kind_name_short_of_devices_names_each_driver_that_gave_none_and_why(void **state) {
    char dir[64], no_devices[PATH_MAX], missing_dep[PATH_MAX], good[PATH_MAX],
        add[3 * PATH_MAX + 8];
    ses_registry_t *reg;

    (void)state;
    test_mkdtemp(dir, sizeof dir);
    /* Like cuda here: a gpu driver whose runtime is there but finds no device... */
    write_manifest(dir, "a.json", "fake_no_devices", FAKE("ses_fake_no_devices.so"), "[\"gpu\"]",
                   "", no_devices, sizeof no_devices);
    /* ...one whose vendor runtime is not installed... */
    write_manifest(dir, "b.json", "fake_missing_dep", FAKE("ses_fake_missing_dep.so"), "[\"gpu\"]",
                   ", \"requires\": [\"libses_fake_gone.so.1\"]", missing_dep, sizeof missing_dep);
    /* ...and one that may offer gpus but has only an accelerator (like opencl with a CPU). */
    write_manifest(dir, "c.json", "fake_good", FAKE("ses_fake_good.so"), "[\"gpu\", \"accel\"]", "",
                   good, sizeof good);
    snprintf(add, sizeof add, "%s:%s:%s", no_devices, missing_dep, good);
    reg = registry_with(add);
    fails_naming(
        reg, "gpu:0",
        (const char *const[]){
            "device \"gpu:0\" not found: there are 0 gpu devices",
            "driver fake_no_devices has no devices: no fake hardware present",
            "driver fake_missing_dep failed: vendor runtime missing: libses_fake_gone.so.1",
            "driver fake_good has no gpu device, only fake_good:0 (accel)",
            "devices here: fake_good:0 (accel), cpu:0 (cpu)", NULL},
        /* cpu's manifest offers only "cpu": it is no cause. */
        (const char *const[]){"driver cpu", NULL});
    ses_registry_destroy(reg);

    /* Too few rather than none: the drivers that gave some are not causes. */
    reg = registry_with(FAKE("fake_good.json") ":" FAKE("fake_no_devices.json"));
    fails_naming(
        reg, "accel:1",
        (const char *const[]){"there is 1 accel device",
                              "driver fake_no_devices has no devices: no fake hardware present",
                              "devices here: fake_good:0 (accel), cpu:0 (cpu)", NULL},
        (const char *const[]){"driver fake_good", NULL});
    /* No driver of the kind at all: say so, and the fix. */
    fails_naming(reg, "fpga:0",
                 (const char *const[]){"there are 0 fpga devices",
                                       "no driver found lists \"fpga\" in its manifest's "
                                       "device_kinds: install a driver for fpga devices",
                                       NULL},
                 NULL);
    ses_registry_destroy(reg);
    test_rmtree(dir);
}

/* Two drivers reaching one physical device (same stable id) count it once for kind names. */
static void one_physical_device_seen_by_two_drivers_counts_once(void **state) {
    struct ses_registry reg;
    struct ses_driver a, b;
    struct ses_driver *drivers[2] = {&a, &b};
    ses_device_t devs_a[2], devs_b[2];
    const ses_device_t *found = NULL;

    (void)state;
    memset(&reg, 0, sizeof reg);
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(devs_a, 0, sizeof devs_a);
    memset(devs_b, 0, sizeof devs_b);
    pthread_mutex_init(&reg.lock, NULL);
    reg.drivers = drivers;
    reg.n_drivers = 2;
    a.manifest.name = "cuda";
    a.manifest.kinds_mask = SES__ALL_KINDS;
    a.state = SES_DRIVER_READY;
    a.devices = devs_a;
    a.n_devices = 2;
    b.manifest.name = "opencl";
    b.manifest.kinds_mask = SES__ALL_KINDS;
    b.state = SES_DRIVER_READY;
    b.devices = devs_b;
    b.n_devices = 2;
    devs_a[0] = (ses_device_t){.driver = &a, .name = "cuda:0", .kind = SES_DEVICE_GPU,
                               .stable_id = "pci:0000:01:00.0"};
    devs_a[1] = (ses_device_t){.driver = &a, .name = "cuda:1", .kind = SES_DEVICE_GPU,
                               .stable_id = "pci:0000:02:00.0"};
    devs_b[0] = (ses_device_t){.driver = &b, .name = "opencl:0", .kind = SES_DEVICE_GPU,
                               .stable_id = "pci:0000:02:00.0"};
    devs_b[1] = (ses_device_t){.driver = &b, .name = "opencl:1", .kind = SES_DEVICE_GPU,
                               .stable_id = ""};

    assert_int_equal(ses__resolve_device(&reg, "gpu:0", &found), SES_OK);
    assert_string_equal(found->name, "cuda:0");
    assert_int_equal(ses__resolve_device(&reg, "gpu:1", &found), SES_OK);
    assert_string_equal(found->name, "cuda:1");
    /* opencl:0 is cuda:1 again; an empty id never matches, so opencl:1 counts. */
    assert_int_equal(ses__resolve_device(&reg, "gpu:2", &found), SES_OK);
    assert_string_equal(found->name, "opencl:1");
    assert_int_equal(ses__resolve_device(&reg, "gpu:3", &found), SES_NOT_FOUND);
    assert_non_null(strstr(ses_last_error(), "there are 3 gpu devices"));
    /* A driver whose every device was counted through another is named as such. */
    b.n_devices = 1;
    assert_int_equal(ses__resolve_device(&reg, "gpu:2", &found), SES_NOT_FOUND);
    assert_non_null(strstr(ses_last_error(),
                           "driver opencl: its 1 gpu device(s) are the same "
                           "physical devices as ones counted before"));
    b.n_devices = 2;
    /* Pinning a driver still reaches its own view of the shared device. */
    assert_int_equal(ses__resolve_device(&reg, "opencl:0", &found), SES_OK);
    assert_string_equal(found->name, "opencl:0");
    pthread_mutex_destroy(&reg.lock);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(driver_names_and_kind_names_resolve),
        cmocka_unit_test(malformed_names_are_invalid_arguments),
        cmocka_unit_test(absent_devices_are_not_found_and_the_message_lists_what_exists),
        cmocka_unit_test(a_kind_name_short_of_devices_names_each_driver_that_gave_none_and_why),
        cmocka_unit_test(one_physical_device_seen_by_two_drivers_counts_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
