/*
 * The registry's internal structures, shared by manifest.c, search.c, host.c, loader.c,
 * device_name.c and registry.c.
 *
 * Locking: everything a driver gains when it is loaded (state, error, api, devices) is written
 * only while holding its registry's lock. Manifest fields are written once, at creation.
 */
#ifndef SES_REGISTRY_INTERNAL_H
#define SES_REGISTRY_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <ltdl.h>

#include <session/driver.h>
#include <session/registry.h>

/* The manifest format this libsession reads; a file with another major is refused. */
#define SES__MANIFEST_FORMAT_MAJOR 1
/* Manifests larger than this are refused before parsing. */
#define SES__MANIFEST_MAX_BYTES (1024 * 1024)
/* The ABI minors this host speaks. */
#define SES__HOST_MINOR_MIN 0
#define SES__HOST_MINOR_MAX SES_DRV_ABI_MINOR
/* All four device kinds. */
#define SES__ALL_KINDS 0xFu

/** A parsed manifest. Strings are heap-owned; NULL where the file did not say. */
typedef struct ses__manifest {
    char *path;             /* the manifest file */
    char *name;             /* the driver's name */
    char *library_path;     /* as written in the file */
    char *library_resolved; /* absolute: relative paths resolved against the manifest's folder */
    uint32_t abi_major;
    uint32_t kinds_mask; /* bit (1 << SES_DEVICE_*) per kind the driver may offer */
    int32_t priority;    /* higher is preferred */
    char **requires;     /* shared libraries the driver needs (sonames) */
    size_t n_requires;
    char **option_keys; /* "options": driver settings, key → value */
    char **option_values;
    size_t n_options;
} ses__manifest_t;

/**
 * Reads and validates the manifest at @p path into @p out (zeroed first; out->path is always
 * set). On failure returns SES_INVALID_ARGUMENT or SES_INCOMPATIBLE with a message naming the file
 * and, for syntax errors, the line and column; out->name is then the file's stem unless the file
 * named a valid one.
 */
ses_status_t ses__manifest_read(const char *path, ses__manifest_t *out);

/** Frees what a manifest owns (not the struct). Accepts a zeroed manifest. */
void ses__manifest_clear(ses__manifest_t *m);

/** The host context a driver instance is given: which driver it is. */
struct ses_drv_host_ctx {
    struct ses_driver *driver;
};

struct ses_device {
    struct ses_driver *driver;
    char *name; /* "<driver>:<ordinal>" */
    uint32_t ordinal;
    uint32_t kind;
    char *description;
    char *stable_id;
    uint64_t memory;
    uint64_t memory_free;
    uint64_t caps;
    uint32_t mem_kinds;
    uint32_t alignment;
    uint64_t max_alloc;
};

struct ses_driver {
    struct ses_registry *registry;
    ses__manifest_t manifest; /* manifest.name is the driver's name */
    ses_driver_state_t state;
    ses_status_t error_code;
    char *error; /* one line, or NULL */
    int is_duplicate; /* refused at creation because an earlier manifest had its name or library */

    /* Set once loaded. */
    lt_dlhandle library;
    const ses_drv_api_t *api;
    uint32_t abi_minor;
    ses_drv_driver_t *instance;
    struct ses_drv_host_ctx host_ctx;
    char *vendor;
    char *version;
    char *build_features;
    uint32_t opset_version;
    uint32_t info_flags;
    ses_device_t *devices;
    size_t n_devices;
};

struct ses_registry {
    pthread_mutex_t lock;
    struct ses_driver **drivers; /* sorted: priority high to low, then discovery order */
    size_t n_drivers;
    char **notes;
    size_t n_notes;
    char *search_path;
    const char *search_origin;
    char **search_entries;       /* each file or folder of the search, in search order */
    const char **search_sources; /* per entry: the variable it came from, or "default" */
    size_t n_search_entries;
    const char *const *fallbacks; /* searched last, claimed names skipped (default registry) */
    size_t n_fallbacks;
};

#include "host.h"

/** Marks @p driver failed with @p code and a printf message; logs it at warn level. */
void ses__driver_fail(struct ses_driver *driver, ses_status_t code, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * Opens, negotiates and enumerates @p driver if it is FOUND; afterwards its state is READY,
 * NO_DEVICES or FAILED. Call with the registry lock held.
 */
void ses__driver_load(struct ses_driver *driver);

/** Closes a loaded driver and unloads its library when the driver allows it. */
void ses__driver_unload(struct ses_driver *driver);

/**
 * Builds the list of manifest files to read from the environment and the default folders, then
 * @p reg's fallbacks. Appends notes (ignored variables) to @p reg. On success *out_files holds
 * *out_count heap paths, of which those from *out_first_fallback on come from the fallbacks.
 */
ses_status_t ses__search_manifests(struct ses_registry *reg, char ***out_files, size_t *out_count,
                                   size_t *out_first_fallback);

/** Appends a printf note to the registry's notes and logs it at @p level. */
void ses__registry_note(struct ses_registry *reg, uint32_t level, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * Resolves a device name (see ses_registry_find_device). Call with the registry lock held.
 */
ses_status_t ses__resolve_device(struct ses_registry *reg, const char *name,
                                 const ses_device_t **out_device);

/** "cpu", "gpu", "fpga", "accel" → SES_DEVICE_*, or -1. */
int ses__device_kind_from_name(const char *name, size_t length);

/** Loads every enabled driver. Call with the registry lock held. */
void ses__registry_load_all_locked(struct ses_registry *reg);

/**
 * Appends "name (kind), ..." for every device of every loaded driver to @p buffer, or "none".
 * Call with the registry lock held.
 */
void ses__registry_describe_devices(struct ses_registry *reg, char *buffer, size_t size);

#endif /* SES_REGISTRY_INTERNAL_H */
