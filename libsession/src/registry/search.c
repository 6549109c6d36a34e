/*
 * Where manifests are found.
 *
 *   SESSION_DRIVER_FILES      replaces the default search: manifest files or folders, ':'-separated
 *   SESSION_ADD_DRIVER_FILES  searched before the rest: manifest files or folders, ':'-separated
 *   default search            $XDG_CONFIG_HOME/session/drivers.d (or ~/.config/...), skipped when
 *                             the process is elevated; /etc/session/drivers.d;
 *                             <datadir>/session/drivers.d of this libsession's install
 *   fallbacks                 last, default registry only: ses_registry_default_add_fallback
 *
 * Folders contribute their *.json files in byte order of the name. The current directory is never
 * searched. Path variables are read with secure_getenv, so a setuid program ignores them.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include "../error.h"
#include "../log.h"
#include "registry_internal.h"

typedef struct path_list {
    char **items;
    size_t count;
    size_t capacity;
} path_list_t;

static int list_push(path_list_t *list, char *owned) {
    if (!owned)
        return -1;
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? list->capacity * 2 : 16;
        char **items = ses__realloc(list->items, capacity * sizeof *items);
        if (!items) {
            free(owned);
            return -1;
        }
        list->items = items;
        list->capacity = capacity;
    }
    list->items[list->count++] = owned;
    return 0;
}

static void list_free(path_list_t *list) {
    for (size_t i = 0; i < list->count; i++)
        free(list->items[i]);
    free(list->items);
    memset(list, 0, sizeof *list);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_json_suffix(const char *name) {
    size_t n = strlen(name);
    return n > 5 && name[0] != '.' && strcmp(name + n - 5, ".json") == 0;
}

/* Adds the *.json files of @p folder, sorted. A folder that does not exist adds nothing. */
static int add_folder(struct ses_registry *reg, path_list_t *files, const char *folder) {
    DIR *dir = opendir(folder);
    struct dirent *entry;
    path_list_t names = {0};

    if (!dir) {
        if (errno != ENOENT && errno != ENOTDIR)
            ses__registry_note(reg, SES__LOG_WARN, "manifest folder %s: cannot read: %s", folder,
                               strerror(errno));
        else
            ses__log(SES__LOG_DEBUG, "manifest folder %s: absent", folder);
        return 0;
    }
    /* Anyone may drop a manifest into a world-writable folder, and so run code in this process. */
    struct stat st;
    if (fstat(dirfd(dir), &st) == 0 && (st.st_mode & S_IWOTH)) {
        if (getauxval(AT_SECURE) != 0) {
            ses__registry_note(reg, SES__LOG_WARN,
                               "manifest folder %s: world-writable; skipped because the process "
                               "runs with elevated privileges",
                               folder);
            closedir(dir);
            return 0;
        }
        ses__registry_note(reg, SES__LOG_WARN,
                           "manifest folder %s: world-writable; any user can add drivers to it",
                           folder);
    }
    while ((entry = readdir(dir)) != NULL) {
        if (has_json_suffix(entry->d_name) && list_push(&names, ses__strdup(entry->d_name)) != 0) {
            closedir(dir);
            list_free(&names);
            return -1;
        }
    }
    closedir(dir);
    if (names.count)
        qsort(names.items, names.count, sizeof(char *), compare_names);
    for (size_t i = 0; i < names.count; i++) {
        if (list_push(files, ses__strdup_printf("%s/%s", folder, names.items[i])) != 0) {
            list_free(&names);
            return -1;
        }
    }
    list_free(&names);
    return 0;
}

/* Adds each ':'-separated entry: a folder's manifests, or the file itself (even if missing, so
 * that the registry reports it). */
static int add_entries(struct ses_registry *reg, path_list_t *files, const char *value) {
    const char *p = value;

    while (*p) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        struct stat st;
        char *entry;

        if (n > 0) {
            entry = ses__malloc(n + 1);
            if (!entry)
                return -1;
            memcpy(entry, p, n);
            entry[n] = '\0';
            if (stat(entry, &st) == 0 && S_ISDIR(st.st_mode)) {
                int rc = add_folder(reg, files, entry);
                free(entry);
                if (rc != 0)
                    return -1;
            } else if (list_push(files, entry) != 0) {
                return -1;
            }
        }
        p += n;
        if (*p == ':')
            p++;
    }
    return 0;
}

/* Whether the process runs with elevated privileges (setuid, setgid, file capabilities). */
static int process_is_elevated(void) {
    return getauxval(AT_SECURE) != 0;
}

/* Reads a path variable; notes it when the process is elevated and so it is ignored. */
static const char *path_variable(struct ses_registry *reg, const char *name) {
    const char *value = secure_getenv(name);

    if (!value && getenv(name))
        ses__registry_note(reg, SES__LOG_WARN,
                           "%s ignored: the process runs with elevated privileges", name);
    return value && *value ? value : NULL;
}

/* Records the first @p n bytes of @p entry as searched, with @p source (a static string) saying
 * where the entry came from, for ses_registry_search_entry. */
static int record_entry(struct ses_registry *reg, const char *entry, size_t n, const char *source) {
    size_t count = reg->n_search_entries + 1;
    char **entries = ses__realloc(reg->search_entries, count * sizeof *entries);
    const char **sources;

    if (!entries)
        return -1;
    reg->search_entries = entries;
    sources = ses__realloc(reg->search_sources, count * sizeof *sources);
    if (!sources)
        return -1;
    reg->search_sources = sources;
    entries[reg->n_search_entries] = ses__malloc(n + 1);
    if (!entries[reg->n_search_entries])
        return -1;
    memcpy(entries[reg->n_search_entries], entry, n);
    entries[reg->n_search_entries][n] = '\0';
    sources[reg->n_search_entries] = source;
    reg->n_search_entries = count;
    return 0;
}

/* Records each ':'-separated entry of a path variable's @p value (empty ones are not searched). */
static int record_entries(struct ses_registry *reg, const char *value, const char *source) {
    const char *p = value;

    while (*p) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);

        if (n > 0 && record_entry(reg, p, n, source) != 0)
            return -1;
        p += n;
        if (*p == ':')
            p++;
    }
    return 0;
}

/* The entries joined by ':', as ses_registry_search_path gives them; NULL when memory runs out. */
static char *join_entries(const struct ses_registry *reg) {
    size_t length = 1;
    char *joined, *q;

    for (size_t i = 0; i < reg->n_search_entries; i++)
        length += strlen(reg->search_entries[i]) + 1;
    joined = ses__malloc(length);
    if (!joined)
        return NULL;
    q = joined;
    for (size_t i = 0; i < reg->n_search_entries; i++) {
        size_t n = strlen(reg->search_entries[i]);
        if (i)
            *q++ = ':';
        memcpy(q, reg->search_entries[i], n);
        q += n;
    }
    *q = '\0';
    return joined;
}

ses_status_t ses__search_manifests(struct ses_registry *reg, char ***out_files, size_t *out_count,
                                   size_t *out_first_fallback) {
    path_list_t files = {0};
    const char *replace = path_variable(reg, "SESSION_DRIVER_FILES");
    const char *add = path_variable(reg, "SESSION_ADD_DRIVER_FILES");
    int rc = 0;

    *out_files = NULL;
    *out_count = 0;
    if (add) {
        rc |= add_entries(reg, &files, add);
        rc |= record_entries(reg, add, "SESSION_ADD_DRIVER_FILES");
    }
    if (replace) {
        reg->search_origin = "environment";
        rc |= add_entries(reg, &files, replace);
        rc |= record_entries(reg, replace, "SESSION_DRIVER_FILES");
    } else {
        char user[PATH_MAX];
        const char *folders[3];
        size_t n_folders = 0;

        reg->search_origin = "default";
        /* A user's own drivers must not reach a privileged process. */
        if (!process_is_elevated()) {
            const char *config = secure_getenv("XDG_CONFIG_HOME");
            const char *home = secure_getenv("HOME");
            if (config && config[0] == '/')
                snprintf(user, sizeof user, "%s/session/drivers.d", config);
            else if (home && *home)
                snprintf(user, sizeof user, "%s/.config/session/drivers.d", home);
            else
                user[0] = '\0';
            if (user[0])
                folders[n_folders++] = user;
        } else {
            ses__registry_note(reg, SES__LOG_WARN,
                               "user manifest folder skipped: the process runs with elevated "
                               "privileges (setuid, setgid or file capabilities)");
        }
        folders[n_folders++] = "/etc/session/drivers.d";
        if (strcmp(SES_MANIFEST_DIR, "/etc/session/drivers.d") != 0)
            folders[n_folders++] = SES_MANIFEST_DIR;
        for (size_t i = 0; i < n_folders; i++) {
            rc |= add_folder(reg, &files, folders[i]);
            rc |= record_entry(reg, folders[i], strlen(folders[i]), "default");
        }
    }
    /* The application's own entries (absolute, checked when given): not from the environment. */
    *out_first_fallback = files.count;
    for (size_t i = 0; i < reg->n_fallbacks; i++) {
        rc |= add_entries(reg, &files, reg->fallbacks[i]);
        rc |= record_entry(reg, reg->fallbacks[i], strlen(reg->fallbacks[i]), "fallback");
    }
    if (rc == 0)
        reg->search_path = join_entries(reg);
    if (rc != 0 || !reg->search_path) {
        list_free(&files);
        return ses__fail(SES_OUT_OF_MEMORY, "driver search: out of memory");
    }
    *out_files = files.items;
    *out_count = files.count;
    return SES_OK;
}
