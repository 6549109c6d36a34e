/*
 * safetensors files: an atomic writer, and a reader that checks every part of the header against
 * the file before it allocates a tensor, so that a corrupt file is reported and never half-read.
 *
 * Layout: 8 bytes (little-endian u64) header length N, N bytes of JSON (an object: tensor name
 * -> {"dtype", "shape", "data_offsets"}, plus an optional "__metadata__" object of strings),
 * then the data. Offsets are relative to the start of the data; together the tensors must cover
 * the data exactly, without gaps or overlaps (the rules of the reference implementation).
 */
#include "checkpoint_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../error.h"
#include "../tensor/tensor_internal.h"

/* Tensors are written as they lie in memory, and safetensors is little-endian. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libsession writes safetensors data as stored in memory; big-endian hosts need byte swapping"
#endif

/* The reference implementation's limit; a larger length is a corrupt or foreign file. */
#define MAX_HEADER_BYTES 100000000u

/* JSON numbers are doubles in cJSON; integers above 2^53 would not be exact. */
#define MAX_JSON_INTEGER 9007199254740992.0

#define METADATA_KEY "__metadata__"

static const struct {
    const char *name;
    ses_dtype_t dtype;
} dtype_names[] = {
    {"F32", SES_F32}, {"F64", SES_F64}, {"F16", SES_F16}, {"BF16", SES_BF16}, {"I8", SES_I8},
    {"I16", SES_I16}, {"I32", SES_I32}, {"I64", SES_I64}, {"U8", SES_U8},     {"U16", SES_U16},
    {"U32", SES_U32}, {"U64", SES_U64}, {"BOOL", SES_BOOL},
};
#define N_DTYPES (sizeof dtype_names / sizeof dtype_names[0])

static const char *dtype_to_name(ses_dtype_t dtype) {
    for (size_t i = 0; i < N_DTYPES; i++)
        if (dtype_names[i].dtype == dtype)
            return dtype_names[i].name;
    return NULL;
}

static ses_dtype_t dtype_from_name(const char *name) {
    for (size_t i = 0; i < N_DTYPES; i++)
        if (strcmp(dtype_names[i].name, name) == 0)
            return dtype_names[i].dtype;
    return SES_DTYPE_INVALID;
}

/* "F32[2,3]" into @p buffer. */
static const char *format_type(char *buffer, size_t size, const char *dtype, size_t rank,
                               const int64_t *dims) {
    size_t used = 0;
    int k = snprintf(buffer, size, "%s[", dtype);

    if (k < 0 || (size_t)k >= size)
        return buffer;
    used = (size_t)k;
    for (size_t i = 0; i < rank && used < size; i++) {
        k = snprintf(buffer + used, size - used, "%s%" PRId64, i ? "," : "", dims[i]);
        if (k < 0)
            return buffer;
        used += (size_t)k;
    }
    if (used < size)
        snprintf(buffer + used, size - used, "]");
    return buffer;
}

static int compare_strings(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first name that occurs twice in @p names[@p n], or NULL; sorts a copy of the pointers.
 * Sets *oom when the copy cannot be made. */
static const char *find_duplicate(const char *const *names, size_t n, int *oom) {
    const char **sorted;
    const char *dup = NULL;

    *oom = 0;
    if (n < 2)
        return NULL;
    sorted = ses__malloc(n * sizeof *sorted);
    if (!sorted) {
        *oom = 1;
        return NULL;
    }
    memcpy(sorted, names, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, compare_strings);
    for (size_t i = 1; i < n && !dup; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            dup = sorted[i];
    free(sorted);
    return dup;
}

/* ---- files ------------------------------------------------------------------------------ */

ses_status_t ses__errno_status(int err) {
    switch (err) {
    case ENOENT:
    case ENOTDIR:
        return SES_NOT_FOUND;
    case EACCES:
    case EPERM:
    case EROFS:
    case EEXIST:
        return SES_FAILED_PRECONDITION;
    case EISDIR:
    case ENAMETOOLONG:
    case ELOOP:
        return SES_INVALID_ARGUMENT;
    case ENOMEM:
        return SES_OUT_OF_MEMORY;
    default: /* ENOSPC, EDQUOT, EIO, ... */
        return SES_UNAVAILABLE;
    }
}

/* Distinguishes the temporary files of concurrent writers in one process. */
static atomic_uint temp_counter;

static int write_all(int fd, const void *data, size_t size) {
    const char *p = data;

    while (size > 0) {
        /* Linux writes at most about 2 GiB per call; smaller pieces also keep EINTR cheap. */
        size_t piece = size > ((size_t)1 << 30) ? ((size_t)1 << 30) : size;
        ssize_t k = write(fd, p, piece);

        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (k == 0) {
            errno = EIO;
            return -1;
        }
        p += k;
        size -= (size_t)k;
    }
    return 0;
}

/* Reads exactly @p size bytes at @p offset; returns 0, or -1 with errno (0 for end of file). */
static int read_exact(int fd, uint64_t offset, void *data, size_t size) {
    char *p = data;

    while (size > 0) {
        size_t piece = size > ((size_t)1 << 30) ? ((size_t)1 << 30) : size;
        ssize_t k = pread(fd, p, piece, (off_t)offset);

        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (k == 0) {
            errno = 0;
            return -1;
        }
        p += k;
        offset += (uint64_t)k;
        size -= (size_t)k;
    }
    return 0;
}

/* The folder part of @p path ("." when it has none). */
static char *folder_of(const char *path) {
    const char *slash = strrchr(path, '/');

    if (!slash)
        return ses__strdup(".");
    if (slash == path)
        return ses__strdup("/");
    return ses__strndup(path, (size_t)(slash - path));
}

/* fsyncs the folder holding @p path, so that a rename into it survives a crash. */
static ses_status_t sync_folder_of(const char *path) {
    char *folder = folder_of(path);
    ses_status_t st = SES_OK;
    int fd, err;

    if (!folder)
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", path);
    fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL)) {
        /* EINVAL: the file system cannot sync folders, and needs not. */
        err = errno;
        st = ses__fail(ses__errno_status(err),
                       "%s: written and renamed, but syncing its folder %s failed (%s): the "
                       "file may not survive a crash",
                       path, folder, strerror(err));
    }
    if (fd >= 0)
        close(fd);
    free(folder);
    return st;
}

ses_status_t ses__write_file_atomic(const char *path, const ses__chunk_t *chunks, size_t n) {
    ses_status_t st;
    char *temp;
    int fd = -1, err;

    temp = ses__strdup_printf("%s.tmp-%ld-%u", path, (long)getpid(),
                              atomic_fetch_add(&temp_counter, 1u));
    if (!temp)
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", path);
    fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        err = errno;
        st = ses__fail(ses__errno_status(err), "%s: cannot create the temporary file %s: %s",
                       path, temp, strerror(err));
        free(temp);
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        if (chunks[i].size && write_all(fd, chunks[i].data, chunks[i].size) != 0) {
            err = errno;
            st = ses__fail(ses__errno_status(err), "%s: cannot write %s: %s", path, temp,
                           strerror(err));
            goto fail;
        }
    }
    if (fsync(fd) != 0) {
        err = errno;
        st = ses__fail(ses__errno_status(err), "%s: cannot sync %s: %s", path, temp,
                       strerror(err));
        goto fail;
    }
    if (close(fd) != 0) {
        err = errno;
        fd = -1;
        st = ses__fail(ses__errno_status(err), "%s: cannot close %s: %s", path, temp,
                       strerror(err));
        goto fail;
    }
    fd = -1;
    if (rename(temp, path) != 0) {
        err = errno;
        st = ses__fail(ses__errno_status(err), "%s: cannot rename %s over it: %s", path, temp,
                       strerror(err));
        goto fail;
    }
    free(temp);
    return sync_folder_of(path);

fail:
    if (fd >= 0)
        close(fd);
    unlink(temp);
    free(temp);
    return st;
}

/* ---- writing ---------------------------------------------------------------------------- */

/* A JSON integer printed exactly (cJSON prints doubles, which may switch to exponents). */
static cJSON *json_u64(uint64_t v) {
    char text[24];

    snprintf(text, sizeof text, "%" PRIu64, v);
    return cJSON_CreateRaw(text);
}

/* Adds @p item to @p object (or @p array when key is NULL); frees it on failure. */
static int json_add(cJSON *parent, const char *key, cJSON *item) {
    int ok;

    if (!item)
        return 0;
    ok = key ? cJSON_AddItemToObject(parent, key, item) : cJSON_AddItemToArray(parent, item);
    if (!ok)
        cJSON_Delete(item);
    return ok;
}

static ses_status_t check_write_args(const char *path, const char *const *names,
                                     ses_tensor_t *const *tensors, size_t n,
                                     const char *const *keys, const char *const *values,
                                     size_t n_metadata) {
    const char *dup;
    int oom;

    if (!path || !*path)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_safetensors_write: path is %s",
                         path ? "empty" : "NULL");
    if (n && (!names || !tensors))
        return ses__fail(SES_INVALID_ARGUMENT, "ses_safetensors_write %s: %s is NULL with n = %zu",
                         path, names ? "tensors" : "names", n);
    if (n_metadata && (!keys || !values))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_safetensors_write %s: metadata_%s is NULL with n_metadata = %zu",
                         path, keys ? "values" : "keys", n_metadata);
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || !*names[i])
            return ses__fail(SES_INVALID_ARGUMENT,
                             "ses_safetensors_write %s: the name of tensor %zu is %s", path, i,
                             names[i] ? "empty" : "NULL");
        if (strcmp(names[i], METADATA_KEY) == 0)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "ses_safetensors_write %s: \"%s\" is reserved for the metadata and "
                             "cannot name a tensor",
                             path, METADATA_KEY);
        if (!tensors[i])
            return ses__fail(SES_INVALID_ARGUMENT,
                             "ses_safetensors_write %s: tensor \"%s\" is NULL", path, names[i]);
        if (ses_tensor_dtype(tensors[i]) == SES_STRING)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "ses_safetensors_write %s: tensor \"%s\" is a string tensor; "
                             "safetensors holds numbers only, so it cannot be saved",
                             path, names[i]);
        if (!dtype_to_name(ses_tensor_dtype(tensors[i])))
            return ses__fail(SES_INVALID_ARGUMENT,
                             "ses_safetensors_write %s: tensor \"%s\" has invalid dtype %d",
                             path, names[i], (int)ses_tensor_dtype(tensors[i]));
        if (ses_tensor_bytes(tensors[i]) && !ses_tensor_data(tensors[i]))
            return ses__fail(SES_INVALID_ARGUMENT,
                             "ses_safetensors_write %s: tensor \"%s\" is on %s, not in host "
                             "memory; copy it to the host first",
                             path, names[i], ses_tensor_device(tensors[i]));
    }
    for (size_t i = 0; i < n_metadata; i++)
        if (!keys[i] || !values[i])
            return ses__fail(SES_INVALID_ARGUMENT,
                             "ses_safetensors_write %s: metadata %s %zu is NULL", path,
                             keys[i] ? "value" : "key", i);
    dup = find_duplicate(names, n, &oom);
    if (!oom && dup)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_safetensors_write %s: two tensors are named \"%s\"", path, dup);
    if (!oom)
        dup = find_duplicate(keys, n_metadata, &oom);
    if (oom)
        return ses__fail(SES_OUT_OF_MEMORY, "ses_safetensors_write %s: out of memory", path);
    if (dup)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_safetensors_write %s: metadata key \"%s\" is given twice", path,
                         dup);
    return SES_OK;
}

/* The JSON header, unpadded; NULL when memory runs out. */
static char *make_header(const char *const *names, ses_tensor_t *const *tensors, size_t n,
                         const char *const *keys, const char *const *values, size_t n_metadata) {
    cJSON *root = cJSON_CreateObject();
    uint64_t offset = 0;
    char *text = NULL;
    int ok = root != NULL;

    for (size_t i = 0; i < n && ok; i++) {
        ses_tensor_t *t = tensors[i];
        const int64_t *dims = ses_tensor_dims(t);
        cJSON *entry = cJSON_CreateObject();
        cJSON *shape = NULL, *offsets = NULL;

        ok = json_add(root, names[i], entry);
        ok = ok && cJSON_AddStringToObject(entry, "dtype", dtype_to_name(ses_tensor_dtype(t)));
        ok = ok && json_add(entry, "shape", shape = cJSON_CreateArray());
        for (size_t d = 0; d < ses_tensor_rank(t) && ok; d++)
            ok = json_add(shape, NULL, json_u64((uint64_t)dims[d]));
        ok = ok && json_add(entry, "data_offsets", offsets = cJSON_CreateArray());
        ok = ok && json_add(offsets, NULL, json_u64(offset));
        offset += ses_tensor_bytes(t);
        ok = ok && json_add(offsets, NULL, json_u64(offset));
    }
    if (ok && n_metadata) {
        cJSON *metadata = cJSON_CreateObject();

        ok = json_add(root, METADATA_KEY, metadata);
        for (size_t i = 0; i < n_metadata && ok; i++)
            ok = cJSON_AddStringToObject(metadata, keys[i], values[i]) != NULL;
    }
    if (ok)
        text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

ses_status_t ses_safetensors_write(const char *path, const char *const *names,
                                   ses_tensor_t *const *tensors, size_t n,
                                   const char *const *metadata_keys,
                                   const char *const *metadata_values, size_t n_metadata) {
    ses__chunk_t *chunks = NULL;
    unsigned char *header = NULL;
    char *json = NULL;
    size_t json_len, padded;
    ses_status_t st;

    st = check_write_args(path, names, tensors, n, metadata_keys, metadata_values, n_metadata);
    if (st != SES_OK)
        return st;
    json = make_header(names, tensors, n, metadata_keys, metadata_values, n_metadata);
    if (!json) {
        st = ses__fail(SES_OUT_OF_MEMORY, "ses_safetensors_write %s: out of memory for the header",
                       path);
        goto fail;
    }
    json_len = strlen(json);
    padded = (json_len + 7) & ~(size_t)7;
    header = ses__malloc(8 + padded);
    chunks = ses__malloc((n + 1) * sizeof *chunks);
    if (!header || !chunks) {
        st = ses__fail(SES_OUT_OF_MEMORY, "ses_safetensors_write %s: out of memory", path);
        goto fail;
    }
    for (int b = 0; b < 8; b++)
        header[b] = (unsigned char)((uint64_t)padded >> (8 * b));
    memcpy(header + 8, json, json_len);
    memset(header + 8 + json_len, ' ', padded - json_len);
    chunks[0].data = header;
    chunks[0].size = 8 + padded;
    for (size_t i = 0; i < n; i++) {
        chunks[i + 1].data = ses_tensor_data(tensors[i]);
        chunks[i + 1].size = ses_tensor_bytes(tensors[i]);
    }
    st = ses__write_file_atomic(path, chunks, n + 1);

fail:
    free(chunks);
    free(header);
    cJSON_free(json);
    return st;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* One tensor of the header, checked. */
typedef struct entry {
    const char *name; /* in the cJSON tree */
    ses_dtype_t dtype;
    uint32_t rank;
    int64_t dims[SES_MAX_RANK];
    uint64_t begin, end;
    size_t order; /* position in the header */
} entry_t;

/* A non-negative JSON integer that a double holds exactly. */
static int json_get_u64(const cJSON *item, uint64_t *out) {
    double d;

    if (!cJSON_IsNumber(item))
        return 0;
    d = item->valuedouble;
    if (!(d >= 0.0) || d > MAX_JSON_INTEGER || (double)(uint64_t)d != d)
        return 0;
    *out = (uint64_t)d;
    return 1;
}

/* Checks one tensor's header entry (everything but its place among the others). */
static ses_status_t parse_entry(const char *path, const cJSON *item, size_t order,
                                uint64_t data_size, entry_t *e) {
    const char *name = item->string;
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    const cJSON *d;
    char what[512], type[256];
    size_t bytes = 0;
    ses_status_t st;
    int rank;

    memset(e, 0, sizeof *e);
    e->name = name;
    e->order = order;
    if (!*name)
        return ses__fail(SES_INVALID_ARGUMENT, "safetensors %s: a tensor has an empty name",
                         path);
    if (!cJSON_IsObject(item))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\" is not a JSON object", path, name);
    if (!cJSON_IsString(dtype))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\" has no \"dtype\" string", path, name);
    e->dtype = dtype_from_name(dtype->valuestring);
    if (e->dtype == SES_DTYPE_INVALID)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\" has unknown dtype \"%s\" (libsession "
                         "reads F32 F64 F16 BF16 I8 I16 I32 I64 U8 U16 U32 U64 BOOL)",
                         path, name, dtype->valuestring);
    if (!cJSON_IsArray(shape))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\" has no \"shape\" array", path, name);
    rank = cJSON_GetArraySize(shape);
    if (rank > SES_MAX_RANK)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\" has rank %d; libsession supports up to %d",
                         path, name, rank, SES_MAX_RANK);
    e->rank = (uint32_t)rank;
    rank = 0;
    cJSON_ArrayForEach(d, shape) {
        uint64_t v;
        if (!json_get_u64(d, &v))
            return ses__fail(SES_INVALID_ARGUMENT,
                             "safetensors %s: tensor \"%s\": shape entry %d is not a "
                             "non-negative integer",
                             path, name, rank);
        e->dims[rank++] = (int64_t)v;
    }
    format_type(type, sizeof type, dtype->valuestring, e->rank, e->dims);
    snprintf(what, sizeof what, "safetensors %s: tensor \"%s\"", path, name);
    st = ses__tensor_check_shape(what, e->dtype, e->rank, e->dims, NULL, &bytes);
    if (st != SES_OK)
        return st;
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
        !json_get_u64(cJSON_GetArrayItem(offsets, 0), &e->begin) ||
        !json_get_u64(cJSON_GetArrayItem(offsets, 1), &e->end))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\" (%s): \"data_offsets\" is not an array "
                         "of two non-negative integers",
                         path, name, type);
    if (e->end < e->begin)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\" (%s): data_offsets [%" PRIu64
                         ",%" PRIu64 "] end before they begin",
                         path, name, type, e->begin, e->end);
    if (e->end > data_size)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\" (%s): data_offsets [%" PRIu64
                         ",%" PRIu64 "] exceed the file, whose data has %" PRIu64
                         " bytes (truncated?)",
                         path, name, type, e->begin, e->end, data_size);
    if (e->end - e->begin != (uint64_t)bytes)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\": data_offsets [%" PRIu64 ",%" PRIu64
                         "] hold %" PRIu64 " bytes, but %s needs %zu",
                         path, name, e->begin, e->end, e->end - e->begin, type, bytes);
    return SES_OK;
}

static int compare_entries(const void *a, const void *b) {
    const entry_t *x = a, *y = b;

    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The tensors, sorted by offset, must cover [0, data_size) exactly. */
static ses_status_t check_layout(const char *path, entry_t *entries, size_t n,
                                 uint64_t data_size) {
    uint64_t expected = 0;

    qsort(entries, n, sizeof *entries, compare_entries);
    for (size_t i = 0; i < n; i++) {
        const entry_t *e = &entries[i];

        if (e->begin > expected)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "safetensors %s: data bytes [%" PRIu64 ",%" PRIu64
                             ") belong to no tensor (a gap before \"%s\" at [%" PRIu64
                             ",%" PRIu64 "])",
                             path, expected, e->begin, e->name, e->begin, e->end);
        if (e->begin < expected)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "safetensors %s: tensors \"%s\" [%" PRIu64 ",%" PRIu64
                             "] and \"%s\" [%" PRIu64 ",%" PRIu64 "] overlap",
                             path, entries[i - 1].name, entries[i - 1].begin, entries[i - 1].end,
                             e->name, e->begin, e->end);
        expected = e->end;
    }
    if (expected != data_size)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: data bytes [%" PRIu64 ",%" PRIu64
                         ") after the last tensor belong to no tensor",
                         path, expected, data_size);
    return SES_OK;
}

/* Fills out's metadata from the "__metadata__" object. */
static ses_status_t parse_metadata(const char *path, const cJSON *metadata,
                                   ses_safetensors_t *out) {
    const cJSON *item;
    const char *dup;
    size_t n = 0;
    int oom;

    if (!cJSON_IsObject(metadata))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: \"%s\" is not an object of strings", path,
                         METADATA_KEY);
    n = (size_t)cJSON_GetArraySize(metadata);
    if (n == 0)
        return SES_OK;
    out->metadata_keys = ses__calloc(n, sizeof *out->metadata_keys);
    out->metadata_values = ses__calloc(n, sizeof *out->metadata_values);
    if (!out->metadata_keys || !out->metadata_values)
        return ses__fail(SES_OUT_OF_MEMORY, "safetensors %s: out of memory", path);
    cJSON_ArrayForEach(item, metadata) {
        if (!cJSON_IsString(item))
            return ses__fail(SES_INVALID_ARGUMENT,
                             "safetensors %s: metadata \"%s\" is not a string", path,
                             item->string);
        out->metadata_keys[out->n_metadata] = ses__strdup(item->string);
        out->metadata_values[out->n_metadata] = ses__strdup(item->valuestring);
        out->n_metadata++;
        if (!out->metadata_keys[out->n_metadata - 1] ||
            !out->metadata_values[out->n_metadata - 1])
            return ses__fail(SES_OUT_OF_MEMORY, "safetensors %s: out of memory", path);
    }
    dup = find_duplicate((const char *const *)out->metadata_keys, out->n_metadata, &oom);
    if (oom)
        return ses__fail(SES_OUT_OF_MEMORY, "safetensors %s: out of memory", path);
    if (dup)
        return ses__fail(SES_INVALID_ARGUMENT, "safetensors %s: metadata key \"%s\" appears twice",
                         path, dup);
    return SES_OK;
}

/* Reads and parses the header; *out_root owns the JSON. */
static ses_status_t read_header(const char *path, int fd, uint64_t file_size,
                                uint64_t *out_header_len, cJSON **out_root) {
    unsigned char length[8];
    uint64_t header_len = 0;
    const char *end = NULL;
    char *header = NULL;
    ses_status_t st = SES_OK;
    cJSON *root = NULL;

    *out_root = NULL;
    if (file_size < 8)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: truncated header length: the file has %" PRIu64
                         " bytes, fewer than the 8 of the header length",
                         path, file_size);
    if (read_exact(fd, 0, length, 8) != 0)
        return ses__fail(errno ? ses__errno_status(errno) : SES_INVALID_ARGUMENT,
                         "safetensors %s: cannot read the header length: %s", path,
                         errno ? strerror(errno) : "end of file");
    for (int b = 7; b >= 0; b--)
        header_len = (header_len << 8) | length[b];
    if (header_len > MAX_HEADER_BYTES)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: the header length is %" PRIu64
                         " bytes, over the 100 MB limit (not a safetensors file, or corrupt)",
                         path, header_len);
    if (header_len > file_size - 8)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: truncated header: its length is %" PRIu64
                         " bytes but only %" PRIu64 " follow",
                         path, header_len, file_size - 8);
    if (header_len < 2)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "safetensors %s: bad JSON: the header has %" PRIu64 " bytes", path,
                         header_len);
    header = ses__malloc((size_t)header_len + 1);
    if (!header)
        return ses__fail(SES_OUT_OF_MEMORY, "safetensors %s: out of memory for a %" PRIu64
                         "-byte header", path, header_len);
    if (read_exact(fd, 8, header, (size_t)header_len) != 0) {
        st = ses__fail(errno ? ses__errno_status(errno) : SES_INVALID_ARGUMENT,
                       "safetensors %s: cannot read the header: %s", path,
                       errno ? strerror(errno) : "end of file");
        goto done;
    }
    header[header_len] = '\0';
    if (header[0] != '{') {
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "safetensors %s: bad JSON: the header does not start with '{'", path);
        goto done;
    }
    errno = 0;
    root = cJSON_ParseWithLengthOpts(header, (size_t)header_len, &end, 0);
    if (!root) {
        /* cJSON reports a failed allocation as a parse error; malloc's ENOMEM tells them apart. */
        if (errno == ENOMEM) {
            st = ses__fail(SES_OUT_OF_MEMORY, "safetensors %s: out of memory parsing the header",
                           path);
            goto done;
        }
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "safetensors %s: bad JSON in the header near byte %td of %" PRIu64, path,
                       end ? end - header : (ptrdiff_t)0, header_len);
        goto done;
    }
    /* Only padding may follow the object. */
    for (const char *p = end; p < header + header_len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            st = ses__fail(SES_INVALID_ARGUMENT,
                           "safetensors %s: bad JSON: unexpected bytes after the header object "
                           "at byte %td",
                           path, p - header);
            goto done;
        }
    }
    if (!cJSON_IsObject(root)) {
        st = ses__fail(SES_INVALID_ARGUMENT, "safetensors %s: the header is not a JSON object",
                       path);
        goto done;
    }
    *out_header_len = header_len;
    *out_root = root;
    root = NULL;

done:
    cJSON_Delete(root);
    free(header);
    return st;
}

ses_status_t ses__safetensors_read(const char *path, int load_data, ses_safetensors_t *out) {
    ses_safetensors_t result;
    entry_t *entries = NULL;
    const char **names = NULL;
    const cJSON *metadata = NULL, *item;
    cJSON *root = NULL;
    uint64_t file_size, header_len = 0, data_size;
    struct stat info;
    ses_status_t st = SES_OK;
    size_t n = 0, order = 0;
    const char *dup;
    int fd, oom;

    memset(&result, 0, sizeof result);
    if (!out)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_safetensors_read: out is NULL");
    memset(out, 0, sizeof *out);
    if (!path)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_safetensors_read: path is NULL");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ses__fail(ses__errno_status(errno), "safetensors %s: cannot open: %s", path,
                         strerror(errno));
    if (fstat(fd, &info) != 0) {
        st = ses__fail(ses__errno_status(errno), "safetensors %s: cannot stat: %s", path,
                       strerror(errno));
        goto fail;
    }
    if (!S_ISREG(info.st_mode)) {
        st = ses__fail(SES_INVALID_ARGUMENT, "safetensors %s: not a regular file", path);
        goto fail;
    }
    file_size = (uint64_t)info.st_size;
    st = read_header(path, fd, file_size, &header_len, &root);
    if (st != SES_OK)
        goto fail;
    data_size = file_size - 8 - header_len;

    cJSON_ArrayForEach(item, root) {
        if (strcmp(item->string, METADATA_KEY) != 0)
            n++;
        else if (metadata) {
            st = ses__fail(SES_INVALID_ARGUMENT, "safetensors %s: \"%s\" appears twice", path,
                           METADATA_KEY);
            goto fail;
        } else
            metadata = item;
    }
    entries = ses__calloc(n ? n : 1, sizeof *entries);
    names = ses__calloc(n ? n : 1, sizeof *names);
    if (!entries || !names) {
        st = ses__fail(SES_OUT_OF_MEMORY, "safetensors %s: out of memory for %zu tensors", path,
                       n);
        goto fail;
    }
    cJSON_ArrayForEach(item, root) {
        if (item == metadata)
            continue;
        st = parse_entry(path, item, order, data_size, &entries[order]);
        if (st != SES_OK)
            goto fail;
        names[order] = entries[order].name;
        order++;
    }
    dup = find_duplicate(names, n, &oom);
    if (oom || dup) {
        st = oom ? ses__fail(SES_OUT_OF_MEMORY, "safetensors %s: out of memory", path)
                 : ses__fail(SES_INVALID_ARGUMENT,
                             "safetensors %s: two tensors are named \"%s\"", path, dup);
        goto fail;
    }
    st = check_layout(path, entries, n, data_size);
    if (st != SES_OK)
        goto fail;
    if (metadata && (st = parse_metadata(path, metadata, &result)) != SES_OK)
        goto fail;

    /* The header is sound: only now is memory for the tensors allocated. */
    result.names = ses__calloc(n ? n : 1, sizeof *result.names);
    if (load_data)
        result.tensors = ses__calloc(n ? n : 1, sizeof *result.tensors);
    if (!result.names || (load_data && !result.tensors)) {
        st = ses__fail(SES_OUT_OF_MEMORY, "safetensors %s: out of memory", path);
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        const entry_t *e = &entries[i];

        result.names[i] = ses__strdup(e->name);
        result.n = i + 1;
        if (!result.names[i]) {
            st = ses__fail(SES_OUT_OF_MEMORY, "safetensors %s: out of memory", path);
            goto fail;
        }
        if (!load_data)
            continue;
        st = ses_tensor_create(e->dtype, e->rank, e->dims, &result.tensors[i]);
        if (st != SES_OK) {
            char message[1024];
            snprintf(message, sizeof message, "%s", ses_last_error());
            st = ses__fail(st, "safetensors %s: tensor \"%s\": %s", path, e->name, message);
            goto fail;
        }
        if (e->end > e->begin &&
            read_exact(fd, 8 + header_len + e->begin, ses_tensor_data(result.tensors[i]),
                       (size_t)(e->end - e->begin)) != 0) {
            /* The file shrank after fstat, or the disk failed. */
            st = ses__fail(errno ? ses__errno_status(errno) : SES_INVALID_ARGUMENT,
                           "safetensors %s: cannot read the data of tensor \"%s\": %s", path,
                           e->name, errno ? strerror(errno) : "truncated data");
            goto fail;
        }
    }
    close(fd);
    free(entries);
    free(names);
    cJSON_Delete(root);
    *out = result;
    return SES_OK;

fail:
    close(fd);
    free(entries);
    free(names);
    cJSON_Delete(root);
    ses_safetensors_free(&result);
    return st;
}

ses_status_t ses_safetensors_read(const char *path, ses_safetensors_t *out) {
    return ses__safetensors_read(path, 1, out);
}

void ses_safetensors_free(ses_safetensors_t *st) {
    if (!st)
        return;
    for (size_t i = 0; i < st->n; i++) {
        if (st->names)
            free(st->names[i]);
        if (st->tensors)
            ses_tensor_release(st->tensors[i]);
    }
    for (size_t i = 0; i < st->n_metadata; i++) {
        if (st->metadata_keys)
            free(st->metadata_keys[i]);
        if (st->metadata_values)
            free(st->metadata_values[i]);
    }
    free(st->names);
    free(st->tensors);
    free(st->metadata_keys);
    free(st->metadata_values);
    memset(st, 0, sizeof *st);
}
