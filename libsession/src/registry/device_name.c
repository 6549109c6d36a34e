/*
 * Device names and device accessors.
 *
 *   <driver>[:N]   device N (default 0) of the named driver: "cpu", "cuda:1"
 *   <kind>[:N]     the Nth device of a kind across drivers in priority order, one physical device
 *                  (same non-empty stable id) counted once: "gpu:0", "fpga:1", "accel"
 *
 * A driver name wins over a kind name, so "cpu" is always the CPU driver's device even when
 * another driver also offers CPU devices (those are "cpu:1", ... only through their driver's
 * name, e.g. "opencl:0"). Manifests may not name a driver "gpu", "fpga" or "accel".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "registry_internal.h"

static const char *const kind_names[] = {"cpu", "gpu", "fpga", "accel"};

int ses__device_kind_from_name(const char *name, size_t length) {
    for (int i = 0; i < 4; i++)
        if (strlen(kind_names[i]) == length && strncmp(name, kind_names[i], length) == 0)
            return i;
    return -1;
}

const char *ses_device_kind_name(ses_device_kind_t kind) {
    return (unsigned)kind < 4 ? kind_names[kind] : "unknown";
}

/* Splits "name:N"; returns 0 and fills the parts, or -1 when the name is malformed. */
static int parse_name(const char *text, size_t *out_prefix_length, uint32_t *out_index) {
    const char *colon = strchr(text, ':');
    size_t prefix = colon ? (size_t)(colon - text) : strlen(text);
    uint64_t index = 0;

    if (prefix == 0)
        return -1;
    for (size_t i = 0; i < prefix; i++) {
        char c = text[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return -1;
    }
    if (colon) {
        const char *digits = colon + 1;
        if (!*digits || strlen(digits) > 9)
            return -1;
        /* "gpu:01" is refused so that every device has one spelling. */
        if (digits[0] == '0' && digits[1])
            return -1;
        for (const char *p = digits; *p; p++) {
            if (*p < '0' || *p > '9')
                return -1;
            index = index * 10 + (uint64_t)(*p - '0');
        }
    }
    *out_prefix_length = prefix;
    *out_index = (uint32_t)index;
    return 0;
}

static ses_status_t not_found(struct ses_registry *reg, const char *name, const char *why) {
    char devices[2048];

    ses__registry_load_all_locked(reg);
    ses__registry_describe_devices(reg, devices, sizeof devices);
    return ses__fail(SES_NOT_FOUND, "device \"%s\" not found: %s; devices here: %s", name, why,
                     devices);
}

/*
 * Appends to @p buffer why driver @p d gave no device for a lookup: "driver cuda has no devices:
 * <the driver's message>", "driver x failed: <cause>", "driver x is disabled by ...".
 * A driver that is ready gets nothing here; its caller says what it lacks.
 */
static void append_driver_cause(const struct ses_driver *d, char *buffer, size_t size) {
    size_t used = strlen(buffer);

    if (used >= size)
        return;
    switch (d->state) {
    case SES_DRIVER_NO_DEVICES:
        snprintf(buffer + used, size - used, "driver %s has no devices: %s", d->manifest.name,
                 d->error ? d->error : "the driver found none");
        break;
    case SES_DRIVER_DISABLED:
        snprintf(buffer + used, size - used, "driver %s is %s", d->manifest.name,
                 d->error ? d->error : "disabled");
        break;
    case SES_DRIVER_FAILED:
        snprintf(buffer + used, size - used, "driver %s failed: %s", d->manifest.name,
                 d->error ? d->error : "unknown cause");
        break;
    case SES_DRIVER_FOUND:
        snprintf(buffer + used, size - used, "driver %s was not loaded", d->manifest.name);
        break;
    case SES_DRIVER_READY:
        break;
    }
}

static ses_status_t resolve_in_driver(struct ses_registry *reg, struct ses_driver *d,
                                      const char *name, uint32_t index,
                                      const ses_device_t **out_device) {
    char why[2048] = "";

    ses__driver_load(d);
    if (d->state == SES_DRIVER_READY && index < d->n_devices) {
        *out_device = &d->devices[index];
        return SES_OK;
    }
    /* Running out of memory is no verdict on the driver: report it as such, not as a device
     * that does not exist. */
    if (d->state == SES_DRIVER_FAILED && d->error_code == SES_OUT_OF_MEMORY)
        return ses__fail(SES_OUT_OF_MEMORY, "device \"%s\": driver %s ran out of memory: %s", name,
                         d->manifest.name, d->error ? d->error : "out of memory");
    if (d->state == SES_DRIVER_READY)
        snprintf(why, sizeof why, "driver %s has %zu device(s), %s:0 to %s:%zu", d->manifest.name,
                 d->n_devices, d->manifest.name, d->manifest.name, d->n_devices - 1);
    else
        append_driver_cause(d, why, sizeof why);
    return not_found(reg, name, why);
}

/*
 * Appends to @p buffer why driver @p d, whose manifest lists @p kind, counted none of that kind:
 * its state's cause, or for a ready driver the kinds it offers instead, or that its devices were
 * already counted through another driver (same stable id).
 */
static void append_kind_cause(const struct ses_driver *d, int kind, char *buffer, size_t size) {
    size_t used = strlen(buffer);
    size_t n_of_kind = 0;

    if (d->state != SES_DRIVER_READY) {
        append_driver_cause(d, buffer, size);
        return;
    }
    for (size_t j = 0; j < d->n_devices; j++)
        n_of_kind += d->devices[j].kind == (uint32_t)kind;
    if (used >= size)
        return;
    if (n_of_kind > 0) {
        snprintf(buffer + used, size - used,
                 "driver %s: its %zu %s device(s) are the same physical devices as ones counted "
                 "before (same stable id)",
                 d->manifest.name, n_of_kind, kind_names[kind]);
        return;
    }
    used += (size_t)snprintf(buffer + used, size - used, "driver %s has no %s device, only",
                             d->manifest.name, kind_names[kind]);
    for (size_t j = 0; j < d->n_devices && used < size; j++)
        used += (size_t)snprintf(buffer + used, size - used, "%s %s (%s)", j ? "," : "",
                                 d->devices[j].name,
                                 ses_device_kind_name((ses_device_kind_t)d->devices[j].kind));
}

static ses_status_t resolve_kind(struct ses_registry *reg, int kind, const char *name,
                                 uint32_t index, const ses_device_t **out_device) {
    const ses_device_t *seen[256];
    size_t n_seen = 0;
    char why[3072];
    size_t used, n_candidates = 0;
    const struct ses_driver *oom = NULL;

    for (size_t i = 0; i < reg->n_drivers; i++) {
        struct ses_driver *d = reg->drivers[i];

        /* Lazy: a driver whose manifest rules out this kind is not opened. */
        if (!(d->manifest.kinds_mask & (1u << kind)))
            continue;
        ses__driver_load(d);
        if (d->state == SES_DRIVER_FAILED && d->error_code == SES_OUT_OF_MEMORY && !oom)
            oom = d;
        for (size_t j = 0; j < d->n_devices; j++) {
            const ses_device_t *dev = &d->devices[j];
            int duplicate = 0;

            if (dev->kind != (uint32_t)kind)
                continue;
            for (size_t k = 0; k < n_seen && dev->stable_id[0]; k++)
                if (strcmp(seen[k]->stable_id, dev->stable_id) == 0)
                    duplicate = 1;
            if (duplicate)
                continue;
            if (n_seen == index) {
                *out_device = dev;
                return SES_OK;
            }
            if (n_seen < sizeof seen / sizeof seen[0])
                seen[n_seen++] = dev;
        }
    }
    /* The device may be on a driver that could not be loaded for want of memory. */
    if (oom)
        return ses__fail(SES_OUT_OF_MEMORY, "device \"%s\": driver %s ran out of memory: %s", name,
                         oom->manifest.name, oom->error ? oom->error : "out of memory");
    used = (size_t)snprintf(why, sizeof why, "there %s %zu %s device%s", n_seen == 1 ? "is" : "are",
                            n_seen, kind_names[kind], n_seen == 1 ? "" : "s");
    /* registry.h promises the driver's cause: name every driver of the kind that gave none. */
    for (size_t i = 0; i < reg->n_drivers && used < sizeof why; i++) {
        const struct ses_driver *d = reg->drivers[i];
        int counted = 0;

        if (!(d->manifest.kinds_mask & (1u << kind)))
            continue;
        n_candidates++;
        for (size_t k = 0; k < n_seen && !counted; k++)
            counted = seen[k]->driver == d;
        if (counted)
            continue;
        used += (size_t)snprintf(why + used, sizeof why - used, "; ");
        if (used < sizeof why) {
            append_kind_cause(d, kind, why, sizeof why);
            used = strlen(why);
        }
    }
    if (n_candidates == 0 && used < sizeof why)
        snprintf(why + used, sizeof why - used,
                 "; no driver found lists \"%s\" in its manifest's device_kinds: install a "
                 "driver for %s devices (session-info lists the drivers found)",
                 kind_names[kind], kind_names[kind]);
    return not_found(reg, name, why);
}

ses_status_t ses__resolve_device(struct ses_registry *reg, const char *name,
                                 const ses_device_t **out_device) {
    size_t prefix;
    uint32_t index;
    int kind;

    if (parse_name(name, &prefix, &index) != 0)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "device name \"%s\" is malformed: use <driver>[:N] or <kind>[:N] with "
                         "kind cpu, gpu, fpga or accel, e.g. \"cpu\", \"gpu:0\", \"cuda:1\"",
                         name);
    for (size_t i = 0; i < reg->n_drivers; i++) {
        struct ses_driver *d = reg->drivers[i];
        if (!d->is_duplicate && strlen(d->manifest.name) == prefix &&
            strncmp(d->manifest.name, name, prefix) == 0)
            return resolve_in_driver(reg, d, name, index, out_device);
    }
    kind = ses__device_kind_from_name(name, prefix);
    if (kind >= 0)
        return resolve_kind(reg, kind, name, index, out_device);
    return not_found(reg, name, "no driver and no device kind has that name");
}

/* ---- device accessors: a device never changes once enumerated ------------------------- */

const char *ses_device_name(const ses_device_t *dev) {
    return dev ? dev->name : "";
}

ses_device_kind_t ses_device_kind(const ses_device_t *dev) {
    return dev ? (ses_device_kind_t)dev->kind : SES_DEVICE_CPU;
}

const ses_driver_t *ses_device_driver(const ses_device_t *dev) {
    return dev ? dev->driver : NULL;
}

uint32_t ses_device_ordinal(const ses_device_t *dev) {
    return dev ? dev->ordinal : 0;
}

const char *ses_device_description(const ses_device_t *dev) {
    return dev ? dev->description : "";
}

const char *ses_device_stable_id(const ses_device_t *dev) {
    return dev ? dev->stable_id : "";
}

uint64_t ses_device_memory(const ses_device_t *dev) {
    return dev ? dev->memory : 0;
}

uint64_t ses_device_caps(const ses_device_t *dev) {
    return dev ? dev->caps : 0;
}

const char *ses_device_cap_name(uint64_t cap_bit) {
    static const char *const names[] = {"host-visible", "streams", "events", "async-copy",
                                        "host-import", "map",     "f16",    "bf16",
                                        "f64",          "concurrent", "graphs",     "native"};

    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (cap_bit == (UINT64_C(1) << i))
            return names[i];
    return NULL;
}
