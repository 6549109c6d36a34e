/*
 * Loading one driver: open its library with libltdl (local symbols), negotiate the ABI, check the
 * table it returns, open an instance and enumerate its devices. Every failure is recorded on the
 * driver with a code and one line that names the file and the cause.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../log.h"
#include "registry_internal.h"

/* A driver that claims more devices than this is treated as broken. */
#define SES__MAX_DEVICES_PER_DRIVER 4096

void ses__driver_fail(struct ses_driver *driver, ses_status_t code, const char *format, ...) {
    va_list ap;
    char line[2048];

    va_start(ap, format);
    vsnprintf(line, sizeof line, format, ap);
    va_end(ap);
    free(driver->error);
    driver->error = ses__strdup(line);
    driver->error_code = code;
    driver->state = SES_DRIVER_FAILED;
    ses__log(SES__LOG_WARN, "driver %s: %s", driver->manifest.name, line);
}

/* The driver's message for a failed call, or a stand-in naming the call. */
static void take_message(const char *call, int32_t code, char *buffer, size_t size) {
    if (!ses__host_take_message(buffer, size) || !buffer[0])
        snprintf(buffer, size, "%s returned %s with no message", call,
                 ses_status_name((ses_status_t)code));
}

static pthread_once_t ltdl_once = PTHREAD_ONCE_INIT;
static int ltdl_ready;

static void ltdl_init(void) {
    ltdl_ready = lt_dlinit() == 0;
}

/*
 * libltdl reports most failures as "file not found". dlopen's own text names the missing
 * dependency or the bad ELF class, which is what an administrator needs, so on failure we ask
 * the dynamic loader directly for it.
 */
static void loader_error_text(const char *path, char *buffer, size_t size) {
    void *handle;
    const char *why;

    dlerror();
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle) {
        dlclose(handle);
        snprintf(buffer, size, "%s", lt_dlerror() ? lt_dlerror() : "unknown error");
        return;
    }
    why = dlerror();
    snprintf(buffer, size, "%s", why ? why : "unknown error");
}

/* The first library of the manifest's "requires" that cannot be loaded, or NULL. */
static const char *missing_requirement(const ses__manifest_t *m) {
    for (size_t i = 0; i < m->n_requires; i++) {
        void *handle = dlopen(m->requires[i], RTLD_LAZY | RTLD_LOCAL);
        if (!handle)
            return m->requires[i];
        dlclose(handle);
    }
    return NULL;
}

static lt_dlhandle open_library(struct ses_driver *driver) {
    const ses__manifest_t *m = &driver->manifest;
    lt_dladvise advise;
    lt_dlhandle library = NULL;
    char why[1024];
    const char *missing;

    pthread_once(&ltdl_once, ltdl_init);
    if (!ltdl_ready) {
        ses__driver_fail(driver, SES_INTERNAL, "libltdl failed to initialise: %s",
                         lt_dlerror() ? lt_dlerror() : "unknown error");
        return NULL;
    }
    /* Local symbols keep two drivers' private symbols from clashing. */
    if (lt_dladvise_init(&advise) == 0 && lt_dladvise_local(&advise) == 0)
        library = lt_dlopenadvise(m->library_resolved, advise);
    lt_dladvise_destroy(&advise);
    if (library)
        return library;

    loader_error_text(m->library_resolved, why, sizeof why);
    missing = missing_requirement(m);
    if (missing)
        ses__driver_fail(driver, SES_UNAVAILABLE,
                         "vendor runtime missing: %s, which the driver requires, cannot be loaded "
                         "(library %s: %s)",
                         missing, m->library_resolved, why);
    else
        ses__driver_fail(driver, SES_UNAVAILABLE, "library %s cannot be loaded: %s (manifest %s)",
                         m->library_resolved, why, m->path);
    return NULL;
}

/* Entries of ses_drv_api_t that ABI 1.0 requires, by name for the report. */
static const struct {
    const char *name;
    size_t offset;
} required_entries[] = {
#define REQUIRED(field) {#field, offsetof(ses_drv_api_t, field)}
    REQUIRED(info),        REQUIRED(open),         REQUIRED(close),        REQUIRED(enumerate_devices),
    REQUIRED(open_device), REQUIRED(close_device), REQUIRED(get_kernels),  REQUIRED(alloc),
    REQUIRED(free),        REQUIRED(copy_h2d),     REQUIRED(copy_d2h),     REQUIRED(copy_d2d),
#undef REQUIRED
};

/* Checks the table a driver returned; on failure marks the driver and returns non-zero. */
static int check_table(struct ses_driver *driver, const ses_drv_api_t *api) {
    const char *lib = driver->manifest.library_resolved;
    const size_t api_min = SES_DRV_SIZEOF_1_0(ses_drv_api_t, event_synchronize);
    const size_t info_min = SES_DRV_SIZEOF_1_0(ses_drv_info_t, flags);
    const ses_drv_info_t *info;

    if (!api) {
        ses__driver_fail(driver, SES_INCOMPATIBLE,
                         "malformed table: %s negotiated but returned no function table", lib);
        return -1;
    }
    if (api->struct_size < api_min) {
        ses__driver_fail(driver, SES_INCOMPATIBLE,
                         "malformed table: %s returned a ses_drv_api_t of %u bytes; ABI 1.0 needs "
                         "at least %zu",
                         lib, api->struct_size, api_min);
        return -1;
    }
    for (size_t i = 0; i < sizeof required_entries / sizeof required_entries[0]; i++) {
        const void *entry;
        memcpy(&entry, (const char *)api + required_entries[i].offset, sizeof entry);
        if (!entry) {
            ses__driver_fail(driver, SES_INCOMPATIBLE,
                             "malformed table: %s leaves the required entry %s NULL", lib,
                             required_entries[i].name);
            return -1;
        }
    }
    info = api->info;
    if (info->struct_size < info_min) {
        ses__driver_fail(driver, SES_INCOMPATIBLE,
                         "malformed table: %s returned a ses_drv_info_t of %u bytes; ABI 1.0 "
                         "needs at least %zu",
                         lib, info->struct_size, info_min);
        return -1;
    }
    if (!info->name || strcmp(info->name, driver->manifest.name) != 0) {
        ses__driver_fail(driver, SES_INCOMPATIBLE,
                         "name mismatch: %s calls itself \"%s\" but manifest %s names it \"%s\"",
                         lib, info->name ? info->name : "(null)", driver->manifest.path,
                         driver->manifest.name);
        return -1;
    }
    return 0;
}

/* A variable, not the macro, so that the range check reads the same whatever the minimum is. */
static const uint32_t host_minor_min = SES__HOST_MINOR_MIN;

static const ses_drv_api_t *negotiate(struct ses_driver *driver, lt_dlhandle library) {
    const char *lib = driver->manifest.library_resolved;
    ses_drv_negotiate_fn entry;
    ses_drv_negotiate_t args;
    char message[2048];
    int32_t rc;

    /* Casting a data pointer to a function pointer is what dlsym requires on POSIX. */
    *(void **)&entry = lt_dlsym(library, SES_DRV_NEGOTIATE_SYMBOL);
    if (!entry) {
        ses__driver_fail(driver, SES_NOT_FOUND,
                         "not a libsession driver: %s does not export %s (manifest %s)", lib,
                         SES_DRV_NEGOTIATE_SYMBOL, driver->manifest.path);
        return NULL;
    }
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.abi_major = SES_DRV_ABI_MAJOR;
    args.host_minor_min = SES__HOST_MINOR_MIN;
    args.host_minor_max = SES__HOST_MINOR_MAX;
    args.host = &ses__host_services;
    args.host_ctx = &driver->host_ctx;
    ses__host_take_message(message, sizeof message);
    rc = entry(&args);
    if (rc == SES_DRV_INCOMPATIBLE || (rc == SES_DRV_OK && args.driver_abi_major != 0 &&
                                       args.driver_abi_major != SES_DRV_ABI_MAJOR)) {
        ses__host_take_message(message, sizeof message);
        ses__driver_fail(driver, SES_INCOMPATIBLE,
                         "ABI mismatch: %s speaks driver ABI %u.%u, this libsession speaks ABI "
                         "%d.%d to %d.%d; install a %s driver built for ABI %d%s%s",
                         lib, args.driver_abi_major, args.driver_minor_max, SES_DRV_ABI_MAJOR,
                         SES__HOST_MINOR_MIN, SES_DRV_ABI_MAJOR, SES__HOST_MINOR_MAX,
                         driver->manifest.name, SES_DRV_ABI_MAJOR, message[0] ? " — driver says: " : "",
                         message);
        return NULL;
    }
    if (rc != SES_DRV_OK) {
        take_message(SES_DRV_NEGOTIATE_SYMBOL, rc, message, sizeof message);
        ses__driver_fail(driver, (ses_status_t)rc, "negotiation failed: %s: %s", lib, message);
        return NULL;
    }
    ses__host_take_message(message, sizeof message);
    if (args.chosen_minor < host_minor_min || args.chosen_minor > SES__HOST_MINOR_MAX) {
        ses__driver_fail(driver, SES_INCOMPATIBLE,
                         "ABI mismatch: %s chose ABI minor %u, outside the %d to %d this "
                         "libsession speaks",
                         lib, args.chosen_minor, SES__HOST_MINOR_MIN, SES__HOST_MINOR_MAX);
        return NULL;
    }
    if (check_table(driver, args.api) != 0)
        return NULL;
    driver->abi_minor = args.chosen_minor;
    return args.api;
}

static int copy_info(struct ses_driver *driver, const ses_drv_info_t *info) {
    driver->vendor = ses__strdup(info->vendor ? info->vendor : "");
    driver->version = ses__strdup(info->version ? info->version : "");
    driver->build_features = ses__strdup(info->build_features ? info->build_features : "");
    driver->opset_version = info->opset_version;
    driver->info_flags = info->flags;
    return driver->vendor && driver->version && driver->build_features ? 0 : -1;
}

static int enumerate(struct ses_driver *driver) {
    const ses_drv_api_t *api = driver->api;
    ses_drv_device_desc_t *descs = NULL;
    uint32_t count = 0;
    char message[2048];
    int32_t rc;

    rc = api->enumerate_devices(driver->instance, &count, NULL);
    if (rc == SES_DRV_OK && count > SES__MAX_DEVICES_PER_DRIVER) {
        ses__driver_fail(driver, SES_INTERNAL, "enumerate_devices claims %u devices; the limit is %d",
                         count, SES__MAX_DEVICES_PER_DRIVER);
        return -1;
    }
    if (rc == SES_DRV_OK && count > 0) {
        descs = ses__calloc(count, sizeof *descs);
        if (!descs) {
            ses__driver_fail(driver, SES_OUT_OF_MEMORY, "enumerate_devices: out of memory");
            return -1;
        }
        for (uint32_t i = 0; i < count; i++)
            descs[i].struct_size = sizeof descs[i];
        rc = api->enumerate_devices(driver->instance, &count, descs);
    }
    if (rc != SES_DRV_OK) {
        take_message("enumerate_devices", rc, message, sizeof message);
        free(descs);
        if (rc == SES_DRV_UNAVAILABLE) {
            driver->state = SES_DRIVER_NO_DEVICES;
            driver->error_code = SES_UNAVAILABLE;
            driver->error = ses__strdup(message);
            return 0;
        }
        ses__driver_fail(driver, (ses_status_t)rc, "enumerate_devices failed: %s", message);
        return -1;
    }
    ses__host_take_message(message, sizeof message);
    if (count == 0) {
        free(descs);
        driver->state = SES_DRIVER_NO_DEVICES;
        driver->error_code = SES_UNAVAILABLE;
        driver->error = ses__strdup(message[0] ? message : "the driver found no devices");
        return 0;
    }
    driver->devices = ses__calloc(count, sizeof *driver->devices);
    if (!driver->devices) {
        free(descs);
        ses__driver_fail(driver, SES_OUT_OF_MEMORY, "enumerate_devices: out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < count; i++) {
        const ses_drv_device_desc_t *d = &descs[i];
        ses_device_t *dev = &driver->devices[i];

        if (d->kind > SES_DRV_DEVICE_ACCEL) {
            ses__driver_fail(driver, SES_INCOMPATIBLE, "device %u has unknown kind %u", i, d->kind);
            free(descs);
            return -1;
        }
        dev->driver = driver;
        dev->ordinal = i;
        dev->kind = d->kind;
        dev->name = ses__strdup_printf("%s:%u", driver->manifest.name, i);
        dev->description = ses__strdup(d->name ? d->name : "");
        dev->stable_id = ses__strdup(d->stable_id ? d->stable_id : "");
        dev->memory = d->memory_bytes;
        dev->memory_free = d->memory_free;
        dev->caps = d->caps;
        dev->mem_kinds = d->mem_kinds;
        dev->alignment = d->alignment;
        dev->max_alloc = d->max_alloc;
        driver->n_devices = i + 1;
        if (!dev->name || !dev->description || !dev->stable_id) {
            free(descs);
            ses__driver_fail(driver, SES_OUT_OF_MEMORY, "enumerate_devices: out of memory");
            return -1;
        }
    }
    free(descs);
    driver->state = SES_DRIVER_READY;
    return 0;
}

static void free_devices(struct ses_driver *driver) {
    for (size_t i = 0; i < driver->n_devices; i++) {
        free(driver->devices[i].name);
        free(driver->devices[i].description);
        free(driver->devices[i].stable_id);
    }
    free(driver->devices);
    driver->devices = NULL;
    driver->n_devices = 0;
}

void ses__driver_load(struct ses_driver *driver) {
    char message[2048];
    int32_t rc;

    if (driver->state != SES_DRIVER_FOUND)
        return;
    ses__log(SES__LOG_DEBUG, "driver %s: loading %s", driver->manifest.name,
             driver->manifest.library_resolved);
    driver->library = open_library(driver);
    if (!driver->library)
        return;
    driver->api = negotiate(driver, driver->library);
    if (!driver->api)
        goto unload;
    if (copy_info(driver, driver->api->info) != 0) {
        ses__driver_fail(driver, SES_OUT_OF_MEMORY, "out of memory");
        goto unload;
    }
    driver->host_ctx.driver = driver;
    ses__host_take_message(message, sizeof message);
    rc = driver->api->open(&ses__host_services, &driver->host_ctx, &driver->instance);
    if (rc != SES_DRV_OK || !driver->instance) {
        take_message("open", rc, message, sizeof message);
        driver->instance = NULL;
        if (rc == SES_DRV_UNAVAILABLE) {
            /* The driver is healthy; the machine has nothing for it. Not a failure. */
            driver->state = SES_DRIVER_NO_DEVICES;
            driver->error_code = SES_UNAVAILABLE;
            driver->error = ses__strdup(message);
            ses__log(SES__LOG_INFO, "driver %s: no devices: %s", driver->manifest.name, message);
            return;
        }
        ses__driver_fail(driver, rc == SES_DRV_OK ? SES_INTERNAL : (ses_status_t)rc,
                         "open failed: %s", rc == SES_DRV_OK ? "returned no instance" : message);
        goto unload;
    }
    if (enumerate(driver) != 0) {
        free_devices(driver);
        driver->api->close(driver->instance);
        driver->instance = NULL;
        goto unload;
    }
    ses__log(SES__LOG_INFO, "driver %s: %s, %zu device(s)", driver->manifest.name,
             ses_driver_state_name(driver->state), driver->n_devices);
    return;

unload:
    /* Nothing of the driver is in use yet, so its library can go. */
    driver->api = NULL;
    lt_dlclose(driver->library);
    driver->library = NULL;
}

void ses__driver_unload(struct ses_driver *driver) {
    free_devices(driver);
    if (driver->api && driver->instance)
        driver->api->close(driver->instance);
    driver->instance = NULL;
    /* Vendor runtimes often cannot be unloaded safely; only drivers that say so are. */
    if (driver->library && (driver->info_flags & SES_DRV_INFO_UNLOADABLE))
        lt_dlclose(driver->library);
    driver->library = NULL;
    driver->api = NULL;
}
