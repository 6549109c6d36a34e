/*
 * The driver registry: which drivers are installed, what state each is in, which devices exist.
 *
 * A registry reads the driver manifests when it is created (see README "Where drivers come from")
 * and opens a driver's library only when its devices are first needed. Every failure lands in the
 * registry's report: ses_driver_state() says FAILED or NO_DEVICES and ses_driver_error() gives the
 * one-line cause. A bad driver never stops the good ones.
 *
 * Thread-safety: every function here may be called concurrently on one registry.
 * Lifetimes: drivers and devices are owned by their registry and valid until it is destroyed.
 */
#ifndef SESSION_REGISTRY_H
#define SESSION_REGISTRY_H

#include <session/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ses_registry ses_registry_t;
typedef struct ses_driver ses_driver_t;
typedef struct ses_device ses_device_t;

/** Where a driver stands. */
typedef enum ses_driver_state {
    /** Manifest read and valid; the library has not been opened yet. */
    SES_DRIVER_FOUND = 0,
    /** Library loaded and negotiated; it offers at least one device. */
    SES_DRIVER_READY = 1,
    /** Library loaded and healthy, but it offers no device here; ses_driver_error() says why. */
    SES_DRIVER_NO_DEVICES = 2,
    /** Left out by SESSION_DRIVERS_SELECT or SESSION_DRIVERS_DISABLE. */
    SES_DRIVER_DISABLED = 3,
    /** Cannot be used; ses_driver_error_code() and ses_driver_error() say why. */
    SES_DRIVER_FAILED = 4,
} ses_driver_state_t;

/** Device kinds; the values equal the ABI's SES_DRV_DEVICE_*. */
typedef enum ses_device_kind {
    SES_DEVICE_CPU = 0,
    SES_DEVICE_GPU = 1,
    SES_DEVICE_FPGA = 2,
    SES_DEVICE_ACCEL = 3,
} ses_device_kind_t;

/* ---- the registry ------------------------------------------------------------------------ */

/**
 * Creates a registry: reads the environment and every manifest on the search path, opens no
 * library. @p out_registry receives a registry owned by the caller (ses_registry_destroy).
 * Fails only on a NULL argument or when memory runs out; broken manifests are reported per driver.
 */
SES_API ses_status_t ses_registry_create(ses_registry_t **out_registry);

/** Closes every loaded driver and frees the registry. Accepts NULL. */
SES_API void ses_registry_destroy(ses_registry_t *registry);

/**
 * The process-wide registry sessions use, created on first call and never destroyed.
 * @p out_registry is not owned by the caller.
 */
SES_API ses_status_t ses_registry_default(ses_registry_t **out_registry);

/**
 * Adds a manifest file or folder that the default registry (ses_registry_default) reads after
 * every other entry of its search (README "Where drivers come from"), for applications and
 * language packages that carry their own drivers: such a driver is used where no other manifest
 * claims its name (one that is claimed is skipped without a message), and a default registry that
 * finds only these does not warn that it found no manifests. Call it before the default registry
 * is first used: SES_FAILED_PRECONDITION once it exists. A folder contributes its *.json files; a
 * file that does not exist is listed as a FAILED driver, as in SESSION_ADD_DRIVER_FILES. @p path must be absolute, without a "."
 * or ".." component and without ':' (SES_INVALID_ARGUMENT). Registries made by
 * ses_registry_create do not read it. Thread-safe.
 */
SES_API ses_status_t ses_registry_default_add_fallback(const char *path);

/**
 * Opens every enabled driver that is not open yet and enumerates its devices. Returns SES_OK even
 * when some drivers failed: their state says so.
 */
SES_API ses_status_t ses_registry_load_all(ses_registry_t *registry);

/** Number of drivers found, in every state. Drivers are ordered by priority, highest first. */
SES_API size_t ses_registry_driver_count(const ses_registry_t *registry);

/** Driver @p index (< ses_registry_driver_count), or NULL when out of range. */
SES_API const ses_driver_t *ses_registry_driver(const ses_registry_t *registry, size_t index);

/** The driver named @p name; SES_NOT_FOUND (listing the drivers that exist) when none is. */
SES_API ses_status_t ses_registry_find_driver(const ses_registry_t *registry, const char *name,
                                              const ses_driver_t **out_driver);

/**
 * Adds the driver described by the manifest at @p manifest_path, as if it had been listed in
 * SESSION_ADD_DRIVER_FILES: for applications that bundle a driver, and for tools given a manifest
 * by path. The driver is not loaded yet. When the same manifest file (by real path) is known
 * already, *out_driver is that driver and nothing is added. A driver whose manifest cannot be read
 * or whose name or library another driver has already claimed is still added, in state FAILED,
 * with the reason in ses_driver_error(); the call then returns that driver's error code.
 * Returns SES_NOT_FOUND when the file does not exist. @p out_driver may be NULL.
 * Not thread-safe with other calls on @p registry: add drivers before sharing it.
 */
SES_API ses_status_t ses_registry_add_driver_file(ses_registry_t *registry,
                                                  const char *manifest_path,
                                                  const ses_driver_t **out_driver);

/**
 * Loads every enabled driver, then gives the number of devices across all of them, in driver
 * priority order.
 */
SES_API size_t ses_registry_device_count(ses_registry_t *registry);

/** Device @p index (< ses_registry_device_count), or NULL when out of range. */
SES_API const ses_device_t *ses_registry_device(ses_registry_t *registry, size_t index);

/**
 * Resolves a device name, loading only the drivers it needs:
 *   "cpu", "cpu:0"           the CPU driver's device (a driver name pins that driver);
 *   "cuda:1", "opencl:0"     device 1 of the driver named cuda, device 0 of opencl;
 *   "gpu:0", "fpga:1", "accel:0"
 *                            the Nth device of that kind across drivers, by driver priority,
 *                            one physical device (same stable id) counted once;
 *   "gpu"                    the same as "gpu:0".
 * Fails with SES_INVALID_ARGUMENT for a malformed name, SES_NOT_FOUND otherwise; the message
 * lists the devices that exist and, when a driver is at fault, its cause.
 */
SES_API ses_status_t ses_registry_find_device(ses_registry_t *registry, const char *name,
                                              const ses_device_t **out_device);

/**
 * Registry-wide notes for administrators: environment variables that were ignored or malformed,
 * manifest folders that could not be read. Index < ses_registry_note_count.
 */
SES_API size_t ses_registry_note_count(const ses_registry_t *registry);
SES_API const char *ses_registry_note(const ses_registry_t *registry, size_t index);

/**
 * The manifest search path this registry used, as "dir-or-file:dir-or-file:...":
 * SESSION_ADD_DRIVER_FILES's entries first, then the rest, then (default registry only) the
 * entries of ses_registry_default_add_fallback. ses_registry_search_origin says where the rest came
 * from: SESSION_DRIVER_FILES ("environment") or the default folders ("default"); it covers neither
 * the first nor the last entries. ses_registry_search_entry labels each one.
 */
SES_API const char *ses_registry_search_path(const ses_registry_t *registry);
SES_API const char *ses_registry_search_origin(const ses_registry_t *registry);

/** The number of files and folders in the manifest search (the entries of the search path). */
SES_API size_t ses_registry_search_entry_count(const ses_registry_t *registry);

/**
 * File or folder @p index of the manifest search, in search order, or NULL when @p index is out
 * of range (< ses_registry_search_entry_count). @p out_source, when not NULL, receives where the
 * entry came from: "SESSION_ADD_DRIVER_FILES", "SESSION_DRIVER_FILES" (which replaces the default
 * folders), "default" (the user, system and install folders) or "fallback"
 * (ses_registry_default_add_fallback); NULL when out of range.
 * Both strings are owned by the registry.
 */
SES_API const char *ses_registry_search_entry(const ses_registry_t *registry, size_t index,
                                              const char **out_source);

/* ---- drivers ----------------------------------------------------------------------------- */

/** The driver's name from its manifest ("cpu"); for an unreadable manifest, the file's stem. */
SES_API const char *ses_driver_name(const ses_driver_t *driver);
SES_API ses_driver_state_t ses_driver_state(const ses_driver_t *driver);
/** "found", "ready", "no-devices", "disabled", "failed". */
SES_API const char *ses_driver_state_name(ses_driver_state_t state);
/** SES_OK when the driver is FOUND or READY; otherwise the code of its failure. */
SES_API ses_status_t ses_driver_error_code(const ses_driver_t *driver);
/** One line saying why the driver failed or has no devices; "" when nothing is wrong. */
SES_API const char *ses_driver_error(const ses_driver_t *driver);
SES_API const char *ses_driver_manifest_path(const ses_driver_t *driver);
/** The library as resolved from the manifest (relative paths made absolute); "" if unknown. */
SES_API const char *ses_driver_library_path(const ses_driver_t *driver);
/**
 * The value of option @p key ("driver.<name>.<option>") as the driver's manifest sets it under
 * "options", or NULL. (Session options and the environment override it; see driver.h.)
 */
SES_API const char *ses_driver_manifest_option(const ses_driver_t *driver, const char *key);
/** What the driver reports about itself; "" until it is loaded. */
SES_API const char *ses_driver_vendor(const ses_driver_t *driver);
SES_API const char *ses_driver_version(const ses_driver_t *driver);
SES_API const char *ses_driver_build_features(const ses_driver_t *driver);
/** The ABI major from the manifest, then the negotiated minor once loaded (0 before). */
SES_API uint32_t ses_driver_abi_major(const ses_driver_t *driver);
SES_API uint32_t ses_driver_abi_minor(const ses_driver_t *driver);
/** The op-set version the driver's kernels implement; 0 until loaded. */
SES_API uint32_t ses_driver_opset_version(const ses_driver_t *driver);
SES_API int32_t ses_driver_priority(const ses_driver_t *driver);
/** Devices of a loaded driver; 0 before it is loaded. */
SES_API size_t ses_driver_device_count(const ses_driver_t *driver);
SES_API const ses_device_t *ses_driver_device(const ses_driver_t *driver, size_t index);

/* ---- devices ----------------------------------------------------------------------------- */

/** Capability bits; the values equal the ABI's SES_DRV_CAP_*. */
#define SES_DEVICE_CAP_HOST_VISIBLE (UINT64_C(1) << 0)
#define SES_DEVICE_CAP_STREAMS (UINT64_C(1) << 1)
#define SES_DEVICE_CAP_EVENTS (UINT64_C(1) << 2)
#define SES_DEVICE_CAP_ASYNC_COPY (UINT64_C(1) << 3)
#define SES_DEVICE_CAP_HOST_IMPORT (UINT64_C(1) << 4)
#define SES_DEVICE_CAP_MAP (UINT64_C(1) << 5)
#define SES_DEVICE_CAP_F16 (UINT64_C(1) << 6)
#define SES_DEVICE_CAP_BF16 (UINT64_C(1) << 7)
#define SES_DEVICE_CAP_F64 (UINT64_C(1) << 8)
#define SES_DEVICE_CAP_CONCURRENT (UINT64_C(1) << 9)
#define SES_DEVICE_CAP_GRAPHS (UINT64_C(1) << 10) /* records work once and replays it */
#define SES_DEVICE_CAP_NATIVE (UINT64_C(1) << 11) /* hands out and takes in device addresses
                                                     (DLPack of device tensors) */

/** The device's canonical name, "<driver>:<ordinal>": "cpu:0", "cuda:1". */
SES_API const char *ses_device_name(const ses_device_t *device);
SES_API ses_device_kind_t ses_device_kind(const ses_device_t *device);
/** "cpu", "gpu", "fpga", "accel"; "unknown" outside the set. */
SES_API const char *ses_device_kind_name(ses_device_kind_t kind);
SES_API const ses_driver_t *ses_device_driver(const ses_device_t *device);
SES_API uint32_t ses_device_ordinal(const ses_device_t *device);
/** The model as the driver names it: "NVIDIA H100 80GB HBM3". */
SES_API const char *ses_device_description(const ses_device_t *device);
/** Same physical device, same id across drivers and boots: "pci:0000:65:00.0"; "" if unknown. */
SES_API const char *ses_device_stable_id(const ses_device_t *device);
/** Total memory in bytes at enumeration; 0 if unknown. */
SES_API uint64_t ses_device_memory(const ses_device_t *device);
SES_API uint64_t ses_device_caps(const ses_device_t *device);
/** The name of one capability bit, "host-visible"; NULL for a bit outside the set. */
SES_API const char *ses_device_cap_name(uint64_t cap_bit);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_REGISTRY_H */
