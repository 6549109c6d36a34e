/*
 * Driver manifests: drivers.d/<name>.json, parsed with cJSON.
 *
 *   {
 *     "file_format_version": "1.0.0",
 *     "name": "cpu",
 *     "library_path": "ses_cpu.so",        relative paths start at the manifest's folder
 *     "abi_major": 1,
 *     "device_kinds": ["cpu"],             optional; default: every kind
 *     "priority": 0,                       optional; default 0; higher is preferred
 *     "requires": ["libcudart.so.13"],     optional; vendor libraries, checked when loading fails
 *     "options": {"driver.cpu.threads": "2"}   optional; driver settings
 *   }
 *
 * Unknown keys are ignored so that newer manifests still load.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "../error.h"
#include "../log.h"
#include "registry_internal.h"

/* Driver names are short identifiers because they appear in device names ("cuda:0"). */
#define SES__DRIVER_NAME_MAX 32

static const char *json_type_name(const cJSON *item) {
    if (cJSON_IsNumber(item))
        return "a number";
    if (cJSON_IsString(item))
        return "a string";
    if (cJSON_IsBool(item))
        return "a boolean";
    if (cJSON_IsNull(item))
        return "null";
    if (cJSON_IsArray(item))
        return "an array";
    if (cJSON_IsObject(item))
        return "an object";
    return "invalid";
}

/* The file name without folder and ".json": the name a broken manifest is listed under. */
static char *file_stem(const char *path) {
    const char *base = strrchr(path, '/');
    size_t n;
    char *stem;

    base = base ? base + 1 : path;
    n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".json") == 0)
        n -= 5;
    stem = ses__malloc(n + 1);
    if (stem) {
        memcpy(stem, base, n);
        stem[n] = '\0';
    }
    return stem;
}

static int name_is_valid(const char *name) {
    size_t n = strlen(name);

    if (n == 0 || n > SES__DRIVER_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static ses_status_t read_file(const char *path, char **out_text, size_t *out_size) {
    FILE *f = NULL;
    char *text = NULL;
    struct stat st;
    size_t got;

    *out_text = NULL;
    f = fopen(path, "rb");
    if (!f)
        return ses__fail(errno == ENOENT ? SES_NOT_FOUND : SES_INVALID_ARGUMENT,
                         "manifest %s: cannot open: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return ses__fail(SES_INVALID_ARGUMENT, "manifest %s: not a regular file", path);
    }
    if (st.st_size > SES__MANIFEST_MAX_BYTES) {
        fclose(f);
        return ses__fail(SES_INVALID_ARGUMENT, "manifest %s: %lld bytes, the limit is %d", path,
                         (long long)st.st_size, SES__MANIFEST_MAX_BYTES);
    }
    text = ses__malloc((size_t)st.st_size + 1);
    if (!text) {
        fclose(f);
        return ses__fail(SES_OUT_OF_MEMORY, "manifest %s: out of memory", path);
    }
    got = fread(text, 1, (size_t)st.st_size, f);
    fclose(f);
    text[got] = '\0';
    *out_text = text;
    *out_size = got;
    return SES_OK;
}

/* Line and column (1-based) of @p at within @p text. */
static void locate(const char *text, const char *at, int *out_line, int *out_column) {
    int line = 1, column = 1;

    for (const char *p = text; p < at && *p; p++) {
        if (*p == '\n') {
            line++;
            column = 1;
        } else {
            column++;
        }
    }
    *out_line = line;
    *out_column = column;
}

/* A snippet of the text at the error, with control characters made visible. */
static void snippet(const char *at, char *buffer, size_t size) {
    size_t i = 0;

    for (; i + 1 < size && i < 16 && at[i]; i++)
        buffer[i] = (at[i] == '\n' || at[i] == '\t' || at[i] == '\r') ? ' ' : at[i];
    buffer[i] = '\0';
}

static ses_status_t require_string(const cJSON *root, const char *key, const char *path,
                                   const cJSON **out) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);

    if (!item)
        return ses__fail(SES_INVALID_ARGUMENT, "manifest %s: \"%s\" is missing", path, key);
    if (!cJSON_IsString(item) || !item->valuestring)
        return ses__fail(SES_INVALID_ARGUMENT, "manifest %s: \"%s\" must be a string, found %s",
                         path, key, json_type_name(item));
    *out = item;
    return SES_OK;
}

/* An integer-valued JSON number within [lo, hi]. */
static ses_status_t get_integer(const cJSON *item, const char *key, const char *path, double lo,
                                double hi, int64_t *out) {
    double v;

    if (!cJSON_IsNumber(item))
        return ses__fail(SES_INVALID_ARGUMENT, "manifest %s: \"%s\" must be an integer, found %s",
                         path, key, json_type_name(item));
    v = item->valuedouble;
    /* The range first: converting a double outside int64_t's range is undefined. */
    if (!(v >= lo && v <= hi) || v != (double)(int64_t)v)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "manifest %s: \"%s\" must be an integer in [%.0f, %.0f], found %g", path,
                         key, lo, hi, v);
    *out = (int64_t)v;
    return SES_OK;
}

static ses_status_t parse_format_version(const cJSON *root, const char *path) {
    const cJSON *item = NULL;
    ses_status_t st = require_string(root, "file_format_version", path, &item);
    unsigned major, minor, patch;
    char extra;

    if (st != SES_OK)
        return st;
    if (sscanf(item->valuestring, "%u.%u.%u%c", &major, &minor, &patch, &extra) != 3)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "manifest %s: \"file_format_version\" must look like \"1.0.0\", found "
                         "\"%s\"",
                         path, item->valuestring);
    if (major != SES__MANIFEST_FORMAT_MAJOR)
        return ses__fail(SES_INCOMPATIBLE,
                         "manifest %s: file format %u.x is not supported; this libsession reads "
                         "format %d.x",
                         path, major, SES__MANIFEST_FORMAT_MAJOR);
    return SES_OK;
}

/* Resolves the library path: absolute stays, relative starts at the manifest's folder. */
static char *resolve_library(const char *manifest_path, const char *library_path) {
    const char *slash;
    char *joined;
    char real[PATH_MAX];

    if (library_path[0] == '/') {
        joined = ses__strdup(library_path);
    } else {
        slash = strrchr(manifest_path, '/');
        if (slash)
            joined = ses__strdup_printf("%.*s/%s", (int)(slash - manifest_path), manifest_path,
                                        library_path);
        else
            joined = ses__strdup_printf("./%s", library_path);
    }
    /* The real path lets two manifests naming one library be told apart from two libraries. */
    if (joined && realpath(joined, real)) {
        free(joined);
        return ses__strdup(real);
    }
    return joined;
}

/*
 * A relative library path must stay inside the manifest's folder: no ".." component, and after
 * symlinks are resolved the library must still lie under the folder's real path. An absolute
 * path is the installer's explicit choice and is allowed.
 */
static ses_status_t check_library_inside(const char *manifest_path, const char *library_path,
                                         const char *resolved) {
    char folder[PATH_MAX];
    char real_folder[PATH_MAX];
    const char *slash = strrchr(manifest_path, '/');
    const char *p = library_path;
    size_t n;

    if (library_path[0] == '/')
        return SES_OK;
    for (;;) {
        n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return ses__fail(SES_INVALID_ARGUMENT,
                             "manifest %s: \"library_path\" \"%s\" leaves the manifest's "
                             "folder through \"..\"",
                             manifest_path, library_path);
        if (p[n] == '\0')
            break;
        p += n + 1;
    }
    if (slash)
        snprintf(folder, sizeof folder, "%.*s", (int)(slash - manifest_path), manifest_path);
    else
        snprintf(folder, sizeof folder, ".");
    /* A library that does not exist yet cannot escape; loading it reports it missing. */
    if (!resolved || resolved[0] != '/' || !realpath(folder[0] ? folder : "/", real_folder))
        return SES_OK;
    n = strlen(real_folder);
    if (strcmp(real_folder, "/") != 0 &&
        (strncmp(resolved, real_folder, n) != 0 || resolved[n] != '/'))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "manifest %s: \"library_path\" \"%s\" leaves the manifest's folder "
                         "through a symlink: it resolves to %s, outside %s",
                         manifest_path, library_path, resolved, real_folder);
    return SES_OK;
}

static ses_status_t parse_string_array(const cJSON *root, const char *key, const char *path,
                                       char ***out_items, size_t *out_count) {
    const cJSON *array = cJSON_GetObjectItemCaseSensitive(root, key);
    const cJSON *entry;
    size_t n = 0;

    *out_items = NULL;
    *out_count = 0;
    if (!array)
        return SES_OK;
    if (!cJSON_IsArray(array))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "manifest %s: \"%s\" must be an array of strings, found %s", path, key,
                         json_type_name(array));
    *out_items = ses__calloc((size_t)cJSON_GetArraySize(array) + 1, sizeof(char *));
    if (!*out_items)
        return ses__fail(SES_OUT_OF_MEMORY, "manifest %s: out of memory", path);
    cJSON_ArrayForEach(entry, array) {
        if (!cJSON_IsString(entry))
            return ses__fail(SES_INVALID_ARGUMENT,
                             "manifest %s: \"%s\" entry %zu must be a string, found %s", path, key,
                             n, json_type_name(entry));
        (*out_items)[n] = ses__strdup(entry->valuestring);
        if (!(*out_items)[n])
            return ses__fail(SES_OUT_OF_MEMORY, "manifest %s: out of memory", path);
        *out_count = ++n;
    }
    return SES_OK;
}

static ses_status_t parse_kinds(const cJSON *root, const char *path, uint32_t *out_mask) {
    const cJSON *array = cJSON_GetObjectItemCaseSensitive(root, "device_kinds");
    const cJSON *entry;
    size_t i = 0;

    *out_mask = SES__ALL_KINDS;
    if (!array)
        return SES_OK;
    if (!cJSON_IsArray(array))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "manifest %s: \"device_kinds\" must be an array of strings, found %s",
                         path, json_type_name(array));
    *out_mask = 0;
    cJSON_ArrayForEach(entry, array) {
        int kind = cJSON_IsString(entry)
                       ? ses__device_kind_from_name(entry->valuestring, strlen(entry->valuestring))
                       : -1;
        if (kind < 0)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "manifest %s: \"device_kinds\" entry %zu must be one of \"cpu\", "
                             "\"gpu\", \"fpga\", \"accel\", found %s%s%s",
                             path, i, cJSON_IsString(entry) ? "\"" : json_type_name(entry),
                             cJSON_IsString(entry) ? entry->valuestring : "",
                             cJSON_IsString(entry) ? "\"" : "");
        *out_mask |= 1u << kind;
        i++;
    }
    return SES_OK;
}

static ses_status_t parse_options(const cJSON *root, const char *path, ses__manifest_t *m) {
    const cJSON *object = cJSON_GetObjectItemCaseSensitive(root, "options");
    const cJSON *entry;
    size_t capacity;

    if (!object)
        return SES_OK;
    if (!cJSON_IsObject(object))
        return ses__fail(SES_INVALID_ARGUMENT, "manifest %s: \"options\" must be an object, found %s",
                         path, json_type_name(object));
    capacity = (size_t)cJSON_GetArraySize(object) + 1;
    m->option_keys = ses__calloc(capacity, sizeof(char *));
    m->option_values = ses__calloc(capacity, sizeof(char *));
    if (!m->option_keys || !m->option_values)
        return ses__fail(SES_OUT_OF_MEMORY, "manifest %s: out of memory", path);
    cJSON_ArrayForEach(entry, object) {
        if (!cJSON_IsString(entry))
            return ses__fail(SES_INVALID_ARGUMENT,
                             "manifest %s: option \"%s\" must be a string, found %s", path,
                             entry->string, json_type_name(entry));
        m->option_keys[m->n_options] = ses__strdup(entry->string);
        m->option_values[m->n_options] = ses__strdup(entry->valuestring);
        /* Counted before the check, so that clearing the manifest frees a half-made pair. */
        m->n_options++;
        if (!m->option_keys[m->n_options - 1] || !m->option_values[m->n_options - 1])
            return ses__fail(SES_OUT_OF_MEMORY, "manifest %s: out of memory", path);
    }
    return SES_OK;
}

static ses_status_t parse_root(const cJSON *root, const char *path, ses__manifest_t *m) {
    const cJSON *item = NULL;
    int64_t value = 0;
    ses_status_t st;

    if (!cJSON_IsObject(root))
        return ses__fail(SES_INVALID_ARGUMENT, "manifest %s: the top level must be an object, found %s",
                         path, json_type_name(root));
    st = parse_format_version(root, path);
    if (st != SES_OK)
        return st;

    st = require_string(root, "name", path, &item);
    if (st != SES_OK)
        return st;
    if (!name_is_valid(item->valuestring))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "manifest %s: \"name\" must be 1 to %d characters of a-z, 0-9, '_' and "
                         "'-', found \"%s\"",
                         path, SES__DRIVER_NAME_MAX, item->valuestring);
    /* Kind names are device names of their own ("gpu:0"); a driver may not take one. */
    if (ses__device_kind_from_name(item->valuestring, strlen(item->valuestring)) > 0)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "manifest %s: \"name\" may not be the device kind \"%s\"", path,
                         item->valuestring);
    free(m->name);
    m->name = ses__strdup(item->valuestring);

    st = require_string(root, "library_path", path, &item);
    if (st != SES_OK)
        return st;
    if (item->valuestring[0] == '\0')
        return ses__fail(SES_INVALID_ARGUMENT, "manifest %s: \"library_path\" is empty", path);
    m->library_path = ses__strdup(item->valuestring);
    m->library_resolved = resolve_library(path, item->valuestring);
    if (m->library_resolved) {
        st = check_library_inside(path, item->valuestring, m->library_resolved);
        if (st != SES_OK)
            return st;
    }

    item = cJSON_GetObjectItemCaseSensitive(root, "abi_major");
    if (!item)
        return ses__fail(SES_INVALID_ARGUMENT, "manifest %s: \"abi_major\" is missing", path);
    st = get_integer(item, "abi_major", path, 1, 1000000, &value);
    if (st != SES_OK)
        return st;
    m->abi_major = (uint32_t)value;

    item = cJSON_GetObjectItemCaseSensitive(root, "priority");
    if (item) {
        st = get_integer(item, "priority", path, -1000000, 1000000, &value);
        if (st != SES_OK)
            return st;
        m->priority = (int32_t)value;
    }

    st = parse_kinds(root, path, &m->kinds_mask);
    if (st != SES_OK)
        return st;
    st = parse_string_array(root, "requires", path, &m->requires, &m->n_requires);
    if (st != SES_OK)
        return st;
    st = parse_options(root, path, m);
    if (st != SES_OK)
        return st;
    if (!m->name || !m->library_path || !m->library_resolved)
        return ses__fail(SES_OUT_OF_MEMORY, "manifest %s: out of memory", path);
    return SES_OK;
}

ses_status_t ses__manifest_read(const char *path, ses__manifest_t *out) {
    char *text = NULL;
    size_t size = 0;
    const char *end = NULL;
    cJSON *root = NULL;
    ses_status_t st;

    memset(out, 0, sizeof *out);
    out->kinds_mask = SES__ALL_KINDS;
    out->path = ses__strdup(path);
    out->name = file_stem(path);
    if (!out->path || !out->name)
        return ses__fail(SES_OUT_OF_MEMORY, "manifest %s: out of memory", path);

    st = read_file(path, &text, &size);
    if (st != SES_OK)
        return st;
    errno = 0;
    root = cJSON_ParseWithLengthOpts(text, size, &end, 0);
    if (!root) {
        int line, column;
        char near[20];

        /* cJSON reports a failed allocation as a syntax error; malloc's ENOMEM tells them
         * apart. */
        if (errno == ENOMEM) {
            free(text);
            return ses__fail(SES_OUT_OF_MEMORY, "manifest %s: out of memory parsing it", path);
        }
        /* cJSON leaves end at the first character it could not take. */
        if (!end)
            end = text + size;
        locate(text, end, &line, &column);
        snippet(end, near, sizeof near);
        st = ses__fail(SES_INVALID_ARGUMENT, "manifest %s:%d:%d: JSON syntax error near \"%s\"",
                       path, line, column, near);
        free(text);
        return st;
    }
    st = parse_root(root, path, out);
    cJSON_Delete(root);
    free(text);
    return st;
}

static void free_strings(char **items, size_t n) {
    if (!items)
        return;
    for (size_t i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

void ses__manifest_clear(ses__manifest_t *m) {
    free(m->path);
    free(m->name);
    free(m->library_path);
    free(m->library_resolved);
    free_strings(m->requires, m->n_requires);
    free_strings(m->option_keys, m->n_options);
    free_strings(m->option_values, m->n_options);
    memset(m, 0, sizeof *m);
}
