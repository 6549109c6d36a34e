/*
 * session-info: what drivers this machine has, what state each is in and why, and every device.
 *
 *   session-info           human-readable report
 *   session-info --json    the same as one JSON document
 *
 * Exits 0 even when some driver is broken (that is what it reports); non-zero only when it
 * cannot do its own job: a bad argument (2) or no registry (1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <session/driver.h>
#include <session/session.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: session-info [--json] [--help] [--version]\n"
            "Lists libsession's drivers (state, version, ABI, manifest, library, and the cause\n"
            "when one failed) and every device they offer.\n"
            "Environment: SESSION_DRIVER_FILES, SESSION_ADD_DRIVER_FILES, SESSION_DRIVERS_SELECT,\n"
            "SESSION_DRIVERS_DISABLE, SESSION_LOADER_DEBUG=error|warn|info|debug.\n");
}

/* "1.5 GiB", "512 MiB", "unknown". */
static void format_bytes(uint64_t bytes, char *buffer, size_t size) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = (double)bytes;
    int unit = 0;

    if (bytes == 0) {
        snprintf(buffer, size, "unknown");
        return;
    }
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        unit++;
    }
    snprintf(buffer, size, unit ? "%.1f %s" : "%.0f %s", value, units[unit]);
}

static void format_caps(uint64_t caps, char *buffer, size_t size) {
    size_t used = 0;

    buffer[0] = '\0';
    for (int bit = 0; bit < 64 && used < size; bit++) {
        uint64_t flag = UINT64_C(1) << bit;
        const char *name = ses_device_cap_name(flag);
        if (!(caps & flag))
            continue;
        if (name)
            used += (size_t)snprintf(buffer + used, size - used, "%s%s", used ? "," : "", name);
        else
            used += (size_t)snprintf(buffer + used, size - used, "%sbit%d", used ? "," : "", bit);
    }
    if (!used)
        snprintf(buffer, size, "-");
}

/*
 * Each file or folder searched, labelled with the variable it came from or "default". (One label
 * for the whole path used to call SESSION_ADD_DRIVER_FILES's entries "default".)
 */
static void print_search(ses_registry_t *reg) {
    size_t n = ses_registry_search_entry_count(reg);
    int replaced = 0;

    printf("manifest search, in order (the first manifest to claim a driver name wins):\n");
    for (size_t i = 0; i < n; i++) {
        const char *source = NULL;
        const char *entry = ses_registry_search_entry(reg, i, &source);

        printf("  %-24s  %s\n", source, entry);
        replaced |= strcmp(source, "SESSION_DRIVER_FILES") == 0;
    }
    if (n == 0)
        printf("  none\n");
    if (replaced)
        printf("  (SESSION_DRIVER_FILES replaces the default folders)\n");
    printf("\n");
}

static void print_text(ses_registry_t *reg) {
    size_t n_drivers = ses_registry_driver_count(reg);
    size_t n_devices = ses_registry_device_count(reg);

    printf("libsession %s, driver ABI %d.%d\n", ses_version(), SES_DRV_ABI_MAJOR,
           SES_DRV_ABI_MINOR);
    print_search(reg);

    printf("Drivers (%zu):\n", n_drivers);
    for (size_t i = 0; i < n_drivers; i++) {
        const ses_driver_t *d = ses_registry_driver(reg, i);
        ses_driver_state_t state = ses_driver_state(d);

        printf("  %-16s %-10s", ses_driver_name(d), ses_driver_state_name(state));
        if (ses_driver_version(d)[0])
            printf(" v%s  ABI %u.%u  %s", ses_driver_version(d), ses_driver_abi_major(d),
                   ses_driver_abi_minor(d), ses_driver_vendor(d));
        else if (ses_driver_abi_major(d))
            printf(" ABI %u (manifest)", ses_driver_abi_major(d));
        else
            printf(" ABI ?");
        printf("  priority %d\n", ses_driver_priority(d));
        if (state == SES_DRIVER_FAILED || state == SES_DRIVER_NO_DEVICES ||
            state == SES_DRIVER_DISABLED)
            printf("      cause:    %s%s%s\n",
                   state == SES_DRIVER_FAILED ? ses_status_name(ses_driver_error_code(d)) : "",
                   state == SES_DRIVER_FAILED ? ": " : "", ses_driver_error(d));
        printf("      manifest: %s\n", ses_driver_manifest_path(d));
        if (ses_driver_library_path(d)[0])
            printf("      library:  %s\n", ses_driver_library_path(d));
        if (ses_driver_build_features(d)[0])
            printf("      features: %s\n", ses_driver_build_features(d));
    }

    printf("\nDevices (%zu):\n", n_devices);
    for (size_t i = 0; i < n_devices; i++) {
        const ses_device_t *dev = ses_registry_device(reg, i);
        char memory[32], caps[256];

        format_bytes(ses_device_memory(dev), memory, sizeof memory);
        format_caps(ses_device_caps(dev), caps, sizeof caps);
        printf("  %-12s %-6s driver %-10s %10s  %s\n", ses_device_name(dev),
               ses_device_kind_name(ses_device_kind(dev)),
               ses_driver_name(ses_device_driver(dev)), memory, ses_device_description(dev));
        printf("      caps: %s\n", caps);
        if (ses_device_stable_id(dev)[0])
            printf("      id:   %s\n", ses_device_stable_id(dev));
    }
    if (n_devices == 0)
        printf("  none\n");

    if (ses_registry_note_count(reg)) {
        printf("\nNotes:\n");
        for (size_t i = 0; i < ses_registry_note_count(reg); i++)
            printf("  %s\n", ses_registry_note(reg, i));
    }
}

/* cJSON returns NULL when memory runs out; every Add below tolerates a NULL parent. */
static cJSON *device_json(const ses_device_t *dev) {
    cJSON *o = cJSON_CreateObject();
    cJSON *caps;

    cJSON_AddStringToObject(o, "name", ses_device_name(dev));
    cJSON_AddStringToObject(o, "kind", ses_device_kind_name(ses_device_kind(dev)));
    cJSON_AddStringToObject(o, "driver", ses_driver_name(ses_device_driver(dev)));
    cJSON_AddNumberToObject(o, "ordinal", ses_device_ordinal(dev));
    cJSON_AddStringToObject(o, "description", ses_device_description(dev));
    cJSON_AddStringToObject(o, "stable_id", ses_device_stable_id(dev));
    cJSON_AddNumberToObject(o, "memory_bytes", (double)ses_device_memory(dev));
    caps = cJSON_AddArrayToObject(o, "caps");
    for (int bit = 0; bit < 64; bit++) {
        uint64_t flag = UINT64_C(1) << bit;
        if ((ses_device_caps(dev) & flag) && ses_device_cap_name(flag))
            cJSON_AddItemToArray(caps, cJSON_CreateString(ses_device_cap_name(flag)));
    }
    return o;
}

static int print_json(ses_registry_t *reg) {
    cJSON *root = cJSON_CreateObject();
    cJSON *drivers, *devices, *notes, *search, *entries;
    size_t n_devices = ses_registry_device_count(reg);
    char *text;

    cJSON_AddStringToObject(root, "libsession_version", ses_version());
    cJSON_AddNumberToObject(root, "abi_major", SES_DRV_ABI_MAJOR);
    cJSON_AddNumberToObject(root, "abi_minor", SES_DRV_ABI_MINOR);
    search = cJSON_AddObjectToObject(root, "search");
    cJSON_AddStringToObject(search, "origin", ses_registry_search_origin(reg));
    cJSON_AddStringToObject(search, "path", ses_registry_search_path(reg));
    /* "origin" covers only the entries after SESSION_ADD_DRIVER_FILES's; each entry says its own.
     */
    entries = cJSON_AddArrayToObject(search, "entries");
    for (size_t i = 0; i < ses_registry_search_entry_count(reg); i++) {
        const char *source = NULL;
        const char *entry = ses_registry_search_entry(reg, i, &source);
        cJSON *o = cJSON_CreateObject();

        cJSON_AddStringToObject(o, "path", entry);
        cJSON_AddStringToObject(o, "source", source);
        cJSON_AddItemToArray(entries, o);
    }

    drivers = cJSON_AddArrayToObject(root, "drivers");
    for (size_t i = 0; i < ses_registry_driver_count(reg); i++) {
        const ses_driver_t *d = ses_registry_driver(reg, i);
        cJSON *o = cJSON_CreateObject();
        cJSON *devs = NULL;
        ses_driver_state_t state = ses_driver_state(d);

        cJSON_AddStringToObject(o, "name", ses_driver_name(d));
        cJSON_AddStringToObject(o, "state", ses_driver_state_name(state));
        cJSON_AddStringToObject(o, "version", ses_driver_version(d));
        cJSON_AddStringToObject(o, "vendor", ses_driver_vendor(d));
        cJSON_AddNumberToObject(o, "abi_major", ses_driver_abi_major(d));
        cJSON_AddNumberToObject(o, "abi_minor", ses_driver_abi_minor(d));
        cJSON_AddNumberToObject(o, "opset_version", ses_driver_opset_version(d));
        cJSON_AddNumberToObject(o, "priority", ses_driver_priority(d));
        cJSON_AddStringToObject(o, "build_features", ses_driver_build_features(d));
        cJSON_AddStringToObject(o, "manifest", ses_driver_manifest_path(d));
        cJSON_AddStringToObject(o, "library", ses_driver_library_path(d));
        if (ses_driver_error(d)[0]) {
            cJSON *err = cJSON_AddObjectToObject(o, "error");
            cJSON_AddStringToObject(err, "code", ses_status_name(ses_driver_error_code(d)));
            cJSON_AddStringToObject(err, "message", ses_driver_error(d));
        } else {
            cJSON_AddNullToObject(o, "error");
        }
        devs = cJSON_AddArrayToObject(o, "devices");
        for (size_t j = 0; j < ses_driver_device_count(d); j++)
            cJSON_AddItemToArray(devs,
                                 cJSON_CreateString(ses_device_name(ses_driver_device(d, j))));
        cJSON_AddItemToArray(drivers, o);
    }

    devices = cJSON_AddArrayToObject(root, "devices");
    for (size_t i = 0; i < n_devices; i++)
        cJSON_AddItemToArray(devices, device_json(ses_registry_device(reg, i)));

    notes = cJSON_AddArrayToObject(root, "notes");
    for (size_t i = 0; i < ses_registry_note_count(reg); i++)
        cJSON_AddItemToArray(notes, cJSON_CreateString(ses_registry_note(reg, i)));

    text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        fprintf(stderr, "session-info: out of memory writing JSON\n");
        return 1;
    }
    printf("%s\n", text);
    cJSON_free(text);
    return 0;
}

int main(int argc, char **argv) {
    ses_registry_t *reg = NULL;
    int json = 0, rc;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("session-info %s (driver ABI %d.%d)\n", ses_version(), SES_DRV_ABI_MAJOR,
                   SES_DRV_ABI_MINOR);
            return 0;
        } else {
            fprintf(stderr, "session-info: unknown argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (ses_registry_create(&reg) != SES_OK) {
        fprintf(stderr, "session-info: %s\n", ses_last_error());
        return 1;
    }
    ses_registry_load_all(reg);
    if (json) {
        rc = print_json(reg);
    } else {
        print_text(reg);
        rc = 0;
    }
    ses_registry_destroy(reg);
    return rc;
}
