/*
 * libFuzzer target: device names and option strings. The input's first line is a device name,
 * looked up in a registry without drivers (src/registry/device_name.c); its first line is also
 * an option key, and the other lines are "key=value" session options that drivers read through
 * the host's get_option (src/registry/host.c).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <session/registry.h>

#include "../../libsession/src/registry/registry_internal.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ses_registry_t *registry(void) {
    static ses_registry_t *reg;
    if (!reg) {
        /* An empty folder: names are parsed and looked up, no driver is loaded. */
        setenv("SESSION_DRIVER_FILES", fuzz_folder(), 1);
        unsetenv("SESSION_ADD_DRIVER_FILES");
        if (ses_registry_create(&reg) != SES_OK)
            abort();
    }
    return reg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1), *lines[64], *next;
    const ses_device_t *device;
    size_t n = 0;
    char value[64];
    uint64_t needed = 0;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    for (char *p = text; p && n < 64; p = next) {
        next = strchr(p, '\n');
        if (next)
            *next++ = 0;
        lines[n++] = p;
    }
    ses_registry_find_device(registry(), lines[0], &device);
    ses__host_set_session_options((const char *const *)lines + 1, n - 1);
    ses__host_services.get_option(NULL, lines[0], value, sizeof value, &needed);
    ses__host_services.get_option(NULL, lines[0], NULL, 0, &needed);
    ses__host_set_session_options(NULL, 0);
    free(text);
    return 0;
}
