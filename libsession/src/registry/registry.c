/*
 * The registry: reads manifests at creation, applies SESSION_DRIVERS_SELECT/_DISABLE, refuses
 * duplicates, and loads drivers lazily when their devices are asked for.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include "../error.h"
#include "../log.h"
#include "registry_internal.h"

void ses__registry_note(struct ses_registry *reg, uint32_t level, const char *format, ...) {
    va_list ap;
    char line[2048];
    char **notes;

    va_start(ap, format);
    vsnprintf(line, sizeof line, format, ap);
    va_end(ap);
    ses__log(level, "%s", line);
    notes = ses__realloc(reg->notes, (reg->n_notes + 1) * sizeof *notes);
    if (!notes)
        return;
    reg->notes = notes;
    reg->notes[reg->n_notes] = ses__strdup(line);
    if (reg->notes[reg->n_notes])
        reg->n_notes++;
}

/*
 * Whether @p name matches one of the comma-separated globs in @p globs. On a match the glob is
 * copied into @p out_glob (@p glob_size bytes), so that a message can say which one it was.
 */
static int matches_any(const char *globs, const char *name, char *out_glob, size_t glob_size) {
    const char *p = globs;

    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char pattern[128];

        /* Spaces around commas are forgiven: "cuda, opencl". */
        while (n > 0 && *p == ' ') {
            p++;
            n--;
        }
        while (n > 0 && p[n - 1] == ' ')
            n--;
        if (n > 0 && n < sizeof pattern) {
            memcpy(pattern, p, n);
            pattern[n] = '\0';
            if (fnmatch(pattern, name, 0) == 0) {
                snprintf(out_glob, glob_size, "%s", pattern);
                return 1;
            }
        }
        p += end ? (size_t)(end - p) + 1 : strlen(p);
    }
    return 0;
}

/* The causes name the variable, its value, the glob that decided and how to undo it, because
 * they are what a lookup of the driver's devices reports ("device \"accel:0\" not found: ..."). */
static void apply_selection(struct ses_registry *reg, struct ses_driver *driver) {
    const char *select = getenv("SESSION_DRIVERS_SELECT");
    const char *disable = getenv("SESSION_DRIVERS_DISABLE");
    const char *name = driver->manifest.name;
    char glob[128];

    (void)reg;
    if (driver->state != SES_DRIVER_FOUND)
        return;
    if (disable && *disable && matches_any(disable, name, glob, sizeof glob)) {
        driver->state = SES_DRIVER_DISABLED;
        driver->error_code = SES_FAILED_PRECONDITION;
        driver->error = ses__strdup_printf(
            "disabled by SESSION_DRIVERS_DISABLE=%s (the glob \"%s\" matches \"%s\"); remove "
            "that glob to use the driver",
            disable, glob, name);
    } else if (select && *select && !matches_any(select, name, glob, sizeof glob)) {
        driver->state = SES_DRIVER_DISABLED;
        driver->error_code = SES_FAILED_PRECONDITION;
        driver->error = ses__strdup_printf(
            "not selected by SESSION_DRIVERS_SELECT=%s (no glob in it matches \"%s\"); add "
            "\"%s\" to it to use the driver",
            select, name, name);
    }
}

/* Refuses a second driver with the same name, or a second manifest for the same library.
 * The first one found wins, so earlier search folders override later ones. */
static void refuse_duplicate(struct ses_registry *reg, struct ses_driver *driver) {
    const ses__manifest_t *m = &driver->manifest;

    if (driver->state == SES_DRIVER_FAILED && !m->library_path)
        return; /* an unreadable manifest has no identity to clash with */
    for (size_t i = 0; i < reg->n_drivers; i++) {
        const struct ses_driver *other = reg->drivers[i];
        const ses__manifest_t *o = &other->manifest;

        if (!o->library_path)
            continue;
        if (strcmp(o->name, m->name) == 0) {
            driver->is_duplicate = 1;
            ses__driver_fail(driver, SES_ALREADY_EXISTS,
                             "duplicate driver name \"%s\": manifest %s is ignored because %s "
                             "claimed the name first",
                             m->name, m->path, o->path);
            return;
        }
        if (m->library_resolved && o->library_resolved &&
            strcmp(o->library_resolved, m->library_resolved) == 0) {
            driver->is_duplicate = 1;
            ses__driver_fail(driver, SES_ALREADY_EXISTS,
                             "duplicate library %s: manifest %s is ignored because %s (driver "
                             "\"%s\") loads the same file",
                             m->library_resolved, m->path, o->path, o->name);
            return;
        }
    }
}

/*
 * Anyone may rewrite a world-writable manifest or library, and so choose the code this process
 * runs: a warning naming the file, and in an elevated process the driver is refused.
 */
static int world_writable(struct ses_driver *driver, const char *what, const char *path) {
    struct stat st;

    if (stat(path, &st) != 0 || !(st.st_mode & S_IWOTH))
        return 0;
    if (getauxval(AT_SECURE) != 0) {
        ses__driver_fail(driver, SES_FAILED_PRECONDITION,
                         "%s %s is world-writable: refused because the process runs with "
                         "elevated privileges",
                         what, path);
        return 1;
    }
    ses__registry_note(driver->registry, SES__LOG_WARN,
                       "%s %s: world-writable; any user can change the code this process runs",
                       what, path);
    return 0;
}

static void check_library_exists(struct ses_driver *driver) {
    const ses__manifest_t *m = &driver->manifest;
    FILE *f;

    if (driver->state != SES_DRIVER_FOUND)
        return;
    /* Opening for reading is not loading: no code of the driver runs. */
    f = fopen(m->library_resolved, "rb");
    if (!f) {
        ses__driver_fail(driver, SES_NOT_FOUND,
                         "library not found: %s (named by manifest %s as \"%s\")",
                         m->library_resolved, m->path, m->library_path);
        return;
    }
    fclose(f);
    if (!world_writable(driver, "manifest", m->path))
        world_writable(driver, "driver library", m->library_resolved); /* unless refused */
}

/* Whether a driver already listed claims @p m's name or library (see refuse_duplicate). */
static int is_claimed(const struct ses_registry *reg, const ses__manifest_t *m) {
    for (size_t i = 0; i < reg->n_drivers; i++) {
        const ses__manifest_t *o = &reg->drivers[i]->manifest;

        if (!o->library_path)
            continue;
        if (strcmp(o->name, m->name) == 0)
            return 1;
        if (m->library_resolved && o->library_resolved &&
            strcmp(o->library_resolved, m->library_resolved) == 0)
            return 1;
    }
    return 0;
}

/*
 * Reads the manifest at @p manifest_path and lists its driver. A @p fallback manifest whose name
 * or library is claimed already is dropped without a message: *out_skipped is then 1 and the
 * result NULL. NULL otherwise means out of memory.
 */
static struct ses_driver *add_driver(struct ses_registry *reg, const char *manifest_path,
                                     int fallback, int *out_skipped) {
    struct ses_driver *driver = ses__calloc(1, sizeof *driver);
    struct ses_driver **drivers;
    ses_status_t st;

    *out_skipped = 0;
    if (!driver)
        return NULL;
    drivers = ses__realloc(reg->drivers, (reg->n_drivers + 1) * sizeof *drivers);
    if (!drivers) {
        free(driver);
        return NULL;
    }
    reg->drivers = drivers;
    driver->registry = reg;
    driver->state = SES_DRIVER_FOUND;
    driver->host_ctx.driver = driver;

    st = ses__manifest_read(manifest_path, &driver->manifest);
    if (!driver->manifest.path || !driver->manifest.name) {
        ses__manifest_clear(&driver->manifest);
        free(driver);
        return NULL;
    }
    if (fallback && is_claimed(reg, &driver->manifest)) {
        ses__log(SES__LOG_DEBUG, "fallback manifest %s: skipped, its driver is installed already",
                 manifest_path);
        ses__manifest_clear(&driver->manifest);
        free(driver);
        ses__clear_error();
        *out_skipped = 1;
        return NULL;
    }
    if (st != SES_OK) {
        /* Keep only the identity: a broken manifest must not half-describe a driver. */
        free(driver->manifest.library_path);
        driver->manifest.library_path = NULL;
        ses__driver_fail(driver, st, "%s", ses_last_error());
    } else if (driver->manifest.abi_major != SES_DRV_ABI_MAJOR) {
        ses__driver_fail(driver, SES_INCOMPATIBLE,
                         "ABI mismatch: manifest %s declares driver ABI %u, this libsession speaks "
                         "ABI %d; install a %s driver built for ABI %d",
                         manifest_path, driver->manifest.abi_major, SES_DRV_ABI_MAJOR,
                         driver->manifest.name, SES_DRV_ABI_MAJOR);
    }
    refuse_duplicate(reg, driver);
    check_library_exists(driver);
    apply_selection(reg, driver);
    reg->drivers[reg->n_drivers++] = driver;
    return driver;
}

/* Priority high to low; discovery order among equals. */
static void sort_by_priority(struct ses_registry *reg) {
    for (size_t i = 1; i < reg->n_drivers; i++) {
        struct ses_driver *d = reg->drivers[i];
        size_t j = i;
        while (j > 0 && reg->drivers[j - 1]->manifest.priority < d->manifest.priority) {
            reg->drivers[j] = reg->drivers[j - 1];
            j--;
        }
        reg->drivers[j] = d;
    }
}

static void read_debug_level(struct ses_registry *reg) {
    const char *value = getenv("SESSION_LOADER_DEBUG");
    int level;

    if (!value || !*value)
        return;
    level = ses__log_parse_level(value);
    if (level < 0)
        ses__registry_note(reg, SES__LOG_WARN,
                           "SESSION_LOADER_DEBUG=%s ignored: use error, warn, info or debug", value);
    else
        ses__log_set_level((uint32_t)level);
}

/* A registry that reads, after the rest of its search, the manifest files and folders in
 * @p fallbacks (borrowed for the registry's lifetime). */
static ses_status_t registry_create(ses_registry_t **out_registry, const char *const *fallbacks,
                                    size_t n_fallbacks) {
    ses_registry_t *reg = NULL;
    char **files = NULL;
    size_t n_files = 0, first_fallback = 0;
    ses_status_t st;

    if (!out_registry)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_registry is NULL", __func__);
    *out_registry = NULL;
    reg = ses__calloc(1, sizeof *reg);
    if (!reg)
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", __func__);
    pthread_mutex_init(&reg->lock, NULL);
    reg->fallbacks = fallbacks;
    reg->n_fallbacks = n_fallbacks;
    read_debug_level(reg);

    st = ses__search_manifests(reg, &files, &n_files, &first_fallback);
    if (st != SES_OK)
        goto fail;
    for (size_t i = 0; i < n_files; i++) {
        int skipped;

        if (!add_driver(reg, files[i], i >= first_fallback, &skipped) && !skipped) {
            st = ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory reading %s", __func__, files[i]);
            goto fail;
        }
    }
    sort_by_priority(reg);
    if (reg->n_drivers == 0)
        ses__registry_note(reg, SES__LOG_WARN, "no driver manifests found in %s",
                           reg->search_path[0] ? reg->search_path : "(empty search path)");
    for (size_t i = 0; i < n_files; i++)
        free(files[i]);
    free(files);
    ses__clear_error();
    *out_registry = reg;
    return SES_OK;

fail:
    for (size_t i = 0; i < n_files; i++)
        free(files[i]);
    free(files);
    ses_registry_destroy(reg);
    return st;
}

void ses_registry_destroy(ses_registry_t *reg) {
    if (!reg)
        return;
    for (size_t i = 0; i < reg->n_drivers; i++) {
        struct ses_driver *d = reg->drivers[i];
        ses__driver_unload(d);
        ses__manifest_clear(&d->manifest);
        free(d->error);
        free(d->vendor);
        free(d->version);
        free(d->build_features);
        free(d);
    }
    free(reg->drivers);
    for (size_t i = 0; i < reg->n_notes; i++)
        free(reg->notes[i]);
    free(reg->notes);
    free(reg->search_path);
    for (size_t i = 0; i < reg->n_search_entries; i++)
        free(reg->search_entries[i]);
    free(reg->search_entries);
    free(reg->search_sources);
    pthread_mutex_destroy(&reg->lock);
    free(reg);
}

ses_status_t ses_registry_create(ses_registry_t **out_registry) {
    return registry_create(out_registry, NULL, 0);
}

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static ses_registry_t *default_registry;
static ses_status_t default_status;
static char default_error[1024];

/* ses_registry_default_add_fallback's entries; frozen (and kept) once the default registry is
 * being made. */
static pthread_mutex_t fallback_lock = PTHREAD_MUTEX_INITIALIZER;
static char **fallbacks;
static size_t n_fallbacks;
static int default_begun;

static void create_default(void) {
    pthread_mutex_lock(&fallback_lock);
    default_begun = 1;
    pthread_mutex_unlock(&fallback_lock);
    default_status =
        registry_create(&default_registry, (const char *const *)fallbacks, n_fallbacks);
    if (default_status != SES_OK)
        snprintf(default_error, sizeof default_error, "%s", ses_last_error());
}

/* Why @p path may not be a fallback entry, or NULL when it may. */
static const char *fallback_path_problem(const char *path) {
    if (path[0] != '/')
        return "not an absolute path";
    if (strchr(path, ':'))
        return "contains ':', which separates search entries";
    if (strlen(path) >= PATH_MAX)
        return "longer than PATH_MAX";
    for (const char *p = path; *p;) {
        size_t n;

        while (*p == '/')
            p++;
        n = strcspn(p, "/");
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return "has a '.' or '..' component";
        p += n;
    }
    return NULL;
}

ses_status_t ses_registry_default_add_fallback(const char *path) {
    const char *problem;
    char **grown, *copy;

    if (!path || !*path)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: path is NULL or empty", __func__);
    problem = fallback_path_problem(path);
    if (problem)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: %s: %s", __func__, path, problem);
    pthread_mutex_lock(&fallback_lock);
    if (default_begun) {
        pthread_mutex_unlock(&fallback_lock);
        return ses__fail(SES_FAILED_PRECONDITION,
                         "%s: %s: the default registry exists already; add fallbacks before "
                         "its first use",
                         __func__, path);
    }
    copy = ses__strdup(path);
    grown = copy ? ses__realloc(fallbacks, (n_fallbacks + 1) * sizeof *grown) : NULL;
    if (!grown) {
        pthread_mutex_unlock(&fallback_lock);
        free(copy);
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", __func__);
    }
    fallbacks = grown;
    fallbacks[n_fallbacks++] = copy;
    pthread_mutex_unlock(&fallback_lock);
    return SES_OK;
}

ses_status_t ses_registry_default(ses_registry_t **out_registry) {
    if (!out_registry)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_registry is NULL", __func__);
    pthread_once(&default_once, create_default);
    *out_registry = default_registry;
    if (default_status != SES_OK)
        return ses__fail(default_status, "%s", default_error);
    return SES_OK;
}

void ses__registry_load_all_locked(struct ses_registry *reg) {
    for (size_t i = 0; i < reg->n_drivers; i++)
        ses__driver_load(reg->drivers[i]);
}

ses_status_t ses_registry_load_all(ses_registry_t *reg) {
    if (!reg)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: registry is NULL", __func__);
    pthread_mutex_lock(&reg->lock);
    ses__registry_load_all_locked(reg);
    pthread_mutex_unlock(&reg->lock);
    return SES_OK;
}

/* Whether @p a and @p b name the same file (both must exist). */
static int same_file(const char *a, const char *b) {
    char ra[PATH_MAX], rb[PATH_MAX];

    return a && b && realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

ses_status_t ses_registry_add_driver_file(ses_registry_t *reg, const char *manifest_path,
                                          const ses_driver_t **out_driver) {
    struct ses_driver *driver;
    ses_status_t st = SES_OK;
    int skipped;
    FILE *f;

    if (out_driver)
        *out_driver = NULL;
    if (!reg || !manifest_path || !*manifest_path)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: %s", __func__,
                         !reg ? "registry is NULL" : "manifest_path is NULL or empty");
    f = fopen(manifest_path, "rb");
    if (!f)
        return ses__fail(SES_NOT_FOUND, "%s: cannot open manifest %s: %s", __func__,
                         manifest_path, strerror(errno));
    fclose(f);

    pthread_mutex_lock(&reg->lock);
    for (size_t i = 0; i < reg->n_drivers; i++) {
        if (same_file(reg->drivers[i]->manifest.path, manifest_path)) {
            if (out_driver)
                *out_driver = reg->drivers[i];
            pthread_mutex_unlock(&reg->lock);
            return SES_OK;
        }
    }
    driver = add_driver(reg, manifest_path, 0, &skipped);
    if (!driver) {
        pthread_mutex_unlock(&reg->lock);
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory reading %s", __func__,
                         manifest_path);
    }
    sort_by_priority(reg);
    if (driver->state == SES_DRIVER_FAILED) {
        st = ses__fail(driver->error_code, "%s", driver->error ? driver->error : "driver failed");
    }
    pthread_mutex_unlock(&reg->lock);
    if (out_driver)
        *out_driver = driver;
    return st;
}

size_t ses_registry_driver_count(const ses_registry_t *reg) {
    return reg ? reg->n_drivers : 0;
}

const ses_driver_t *ses_registry_driver(const ses_registry_t *reg, size_t index) {
    return reg && index < reg->n_drivers ? reg->drivers[index] : NULL;
}

ses_status_t ses_registry_find_driver(const ses_registry_t *reg, const char *name,
                                      const ses_driver_t **out_driver) {
    char known[1024] = "";
    size_t used = 0;

    if (!reg || !name || !out_driver)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: NULL %s", __func__,
                         !reg ? "registry" : !name ? "name" : "out_driver");
    *out_driver = NULL;
    for (size_t i = 0; i < reg->n_drivers; i++) {
        const struct ses_driver *d = reg->drivers[i];
        /* A refused duplicate may share the name; the driver that claimed it first answers, and
         * a duplicate answers only when nothing else has its name. */
        if (strcmp(d->manifest.name, name) == 0) {
            if (!d->is_duplicate) {
                *out_driver = d;
                return SES_OK;
            }
            if (!*out_driver)
                *out_driver = d;
        }
        if (used < sizeof known)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                                     d->manifest.name);
    }
    if (*out_driver)
        return SES_OK;
    return ses__fail(SES_NOT_FOUND, "no driver named \"%s\"; drivers found: %s", name,
                     reg->n_drivers ? known : "none");
}

size_t ses_registry_device_count(ses_registry_t *reg) {
    size_t n = 0;

    if (!reg)
        return 0;
    pthread_mutex_lock(&reg->lock);
    ses__registry_load_all_locked(reg);
    for (size_t i = 0; i < reg->n_drivers; i++)
        n += reg->drivers[i]->n_devices;
    pthread_mutex_unlock(&reg->lock);
    return n;
}

const ses_device_t *ses_registry_device(ses_registry_t *reg, size_t index) {
    const ses_device_t *found = NULL;

    if (!reg)
        return NULL;
    pthread_mutex_lock(&reg->lock);
    ses__registry_load_all_locked(reg);
    for (size_t i = 0; i < reg->n_drivers && !found; i++) {
        struct ses_driver *d = reg->drivers[i];
        if (index < d->n_devices)
            found = &d->devices[index];
        else
            index -= d->n_devices;
    }
    pthread_mutex_unlock(&reg->lock);
    return found;
}

ses_status_t ses_registry_find_device(ses_registry_t *reg, const char *name,
                                      const ses_device_t **out_device) {
    ses_status_t st;

    if (!reg || !name || !out_device)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: NULL %s", __func__,
                         !reg ? "registry" : !name ? "name" : "out_device");
    *out_device = NULL;
    pthread_mutex_lock(&reg->lock);
    st = ses__resolve_device(reg, name, out_device);
    pthread_mutex_unlock(&reg->lock);
    return st;
}

size_t ses_registry_note_count(const ses_registry_t *reg) {
    return reg ? reg->n_notes : 0;
}

const char *ses_registry_note(const ses_registry_t *reg, size_t index) {
    return reg && index < reg->n_notes ? reg->notes[index] : NULL;
}

const char *ses_registry_search_path(const ses_registry_t *reg) {
    return reg && reg->search_path ? reg->search_path : "";
}

const char *ses_registry_search_origin(const ses_registry_t *reg) {
    return reg && reg->search_origin ? reg->search_origin : "";
}

size_t ses_registry_search_entry_count(const ses_registry_t *reg) {
    return reg ? reg->n_search_entries : 0;
}

const char *ses_registry_search_entry(const ses_registry_t *reg, size_t index,
                                      const char **out_source) {
    if (out_source)
        *out_source = NULL;
    if (!reg || index >= reg->n_search_entries)
        return NULL;
    if (out_source)
        *out_source = reg->search_sources[index];
    return reg->search_entries[index];
}

void ses__registry_describe_devices(struct ses_registry *reg, char *buffer, size_t size) {
    size_t used = 0;

    buffer[0] = '\0';
    for (size_t i = 0; i < reg->n_drivers; i++) {
        const struct ses_driver *d = reg->drivers[i];
        for (size_t j = 0; j < d->n_devices && used < size; j++)
            used += (size_t)snprintf(buffer + used, size - used, "%s%s (%s)", used ? ", " : "",
                                     d->devices[j].name,
                                     ses_device_kind_name((ses_device_kind_t)d->devices[j].kind));
    }
    if (!used)
        snprintf(buffer, size, "none");
}

/* ---- driver accessors -------------------------------------------------------------------- */

/* Fields a load may change are read under the registry's lock. */
#define LOCKED_READ(driver, type, expr, fallback)                       \
    do {                                                                \
        type value_;                                                    \
        if (!(driver))                                                  \
            return fallback;                                            \
        pthread_mutex_lock(&(driver)->registry->lock);                  \
        value_ = (expr);                                                \
        pthread_mutex_unlock(&(driver)->registry->lock);                \
        return value_;                                                  \
    } while (0)

const char *ses_driver_name(const ses_driver_t *d) {
    return d ? d->manifest.name : "";
}

ses_driver_state_t ses_driver_state(const ses_driver_t *d) {
    LOCKED_READ(d, ses_driver_state_t, d->state, SES_DRIVER_FAILED);
}

const char *ses_driver_state_name(ses_driver_state_t state) {
    switch (state) {
    case SES_DRIVER_FOUND: return "found";
    case SES_DRIVER_READY: return "ready";
    case SES_DRIVER_NO_DEVICES: return "no-devices";
    case SES_DRIVER_DISABLED: return "disabled";
    case SES_DRIVER_FAILED: return "failed";
    }
    return "unknown";
}

ses_status_t ses_driver_error_code(const ses_driver_t *d) {
    LOCKED_READ(d, ses_status_t, d->error_code, SES_INVALID_ARGUMENT);
}

const char *ses_driver_error(const ses_driver_t *d) {
    LOCKED_READ(d, const char *, d->error ? d->error : "", "");
}

const char *ses_driver_manifest_path(const ses_driver_t *d) {
    return d && d->manifest.path ? d->manifest.path : "";
}

const char *ses_driver_library_path(const ses_driver_t *d) {
    return d && d->manifest.library_resolved ? d->manifest.library_resolved : "";
}

const char *ses_driver_manifest_option(const ses_driver_t *d, const char *key) {
    if (!d || !key)
        return NULL;
    for (size_t i = 0; i < d->manifest.n_options; i++)
        if (strcmp(d->manifest.option_keys[i], key) == 0)
            return d->manifest.option_values[i];
    return NULL;
}

const char *ses_driver_vendor(const ses_driver_t *d) {
    LOCKED_READ(d, const char *, d->vendor ? d->vendor : "", "");
}

const char *ses_driver_version(const ses_driver_t *d) {
    LOCKED_READ(d, const char *, d->version ? d->version : "", "");
}

const char *ses_driver_build_features(const ses_driver_t *d) {
    LOCKED_READ(d, const char *, d->build_features ? d->build_features : "", "");
}

uint32_t ses_driver_abi_major(const ses_driver_t *d) {
    return d ? d->manifest.abi_major : 0;
}

uint32_t ses_driver_abi_minor(const ses_driver_t *d) {
    LOCKED_READ(d, uint32_t, d->api ? d->abi_minor : 0, 0);
}

uint32_t ses_driver_opset_version(const ses_driver_t *d) {
    LOCKED_READ(d, uint32_t, d->opset_version, 0);
}

int32_t ses_driver_priority(const ses_driver_t *d) {
    return d ? d->manifest.priority : 0;
}

size_t ses_driver_device_count(const ses_driver_t *d) {
    LOCKED_READ(d, size_t, d->n_devices, 0);
}

const ses_device_t *ses_driver_device(const ses_driver_t *d, size_t index) {
    LOCKED_READ(d, const ses_device_t *, index < d->n_devices ? &d->devices[index] : NULL, NULL);
}
