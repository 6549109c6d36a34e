/*
 * Checkpoints of a session: its variables saved to and restored from safetensors files, and
 * checkpoint folders (dir/ckpt-<step>.safetensors, dir/latest, the last N kept).
 *
 * Restore is all or nothing: the whole file is read and every name, dtype and shape checked
 * before the first variable is replaced, and a failure while replacing puts the old values back.
 */
#include "checkpoint_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../compile/plan.h"
#include "../error.h"
#include "../log.h"
#include "../ops/static_types.h"
#include "../tensor/tensor_internal.h"

#define CHECKPOINT_FORMAT "libsession-checkpoint-1"
#define LATEST_NAME "latest"
#define CKPT_PREFIX "ckpt-"
#define CKPT_SUFFIX ".safetensors"

/* The part of ses_last_error()'s 4096 bytes that a list of mismatches may fill. */
#define MISMATCH_MESSAGE_BUDGET 3200

/* ---- save ------------------------------------------------------------------------------- */

ses_status_t ses_session_save(ses_session_t *s, const char *path, uint64_t step) {
    const char *keys[2] = {"step", "format"};
    const char *values[2];
    const char **names = NULL;
    ses_tensor_t **tensors = NULL;
    char step_text[24];
    size_t n_vars = 0, n = 0;
    ses_status_t st;

    if (!s || !path)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_save: %s is NULL",
                         !s ? "session" : "path");
    if ((st = ses__session_enter(s, "ses_session_save")) != SES_OK)
        return st;
    for (size_t i = 0; i < s->graph->n_nodes; i++)
        n_vars += s->graph->nodes[i]->kind == SES__NODE_VARIABLE;
    names = ses__calloc(n_vars ? n_vars : 1, sizeof *names);
    tensors = ses__calloc(n_vars ? n_vars : 1, sizeof *tensors);
    if (!names || !tensors) {
        st = ses__fail(SES_OUT_OF_MEMORY, "ses_session_save %s: out of memory", path);
        goto done;
    }
    /* Each value is referenced from here until the file is written: an eval that replaces a
     * variable meanwhile does not free the tensor being saved. */
    for (size_t i = 0; i < s->graph->n_nodes; i++) {
        const ses_node_t *node = s->graph->nodes[i];

        if (node->kind == SES__NODE_VARIABLE && ses_scope_has_local(s->scope, node->name) &&
            ses_scope_find(s->scope, node->name, &tensors[n]) == SES_OK)
            names[n++] = node->name;
    }
    snprintf(step_text, sizeof step_text, "%" PRIu64, step);
    values[0] = step_text;
    values[1] = CHECKPOINT_FORMAT;
    st = ses_safetensors_write(path, names, tensors, n, keys, values, 2);

done:
    for (size_t i = 0; i < n; i++)
        ses_tensor_release(tensors[i]);
    free(names);
    free(tensors);
    ses__session_leave(s);
    return st;
}

/* ---- restore ---------------------------------------------------------------------------- */

static int types_match(const ses__type_t *expected, const ses__type_t *actual) {
    if (expected->dtype != actual->dtype || expected->rank != actual->rank)
        return 0;
    for (uint32_t d = 0; d < expected->rank; d++)
        if (expected->dims[d] >= 0 && expected->dims[d] != actual->dims[d])
            return 0;
    return 1;
}

/* A list of mismatch lines. */
typedef struct mismatches {
    char **lines;
    size_t n, capacity;
    int oom;
} mismatches_t;

static void mismatch_add(mismatches_t *m, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static void mismatch_add(mismatches_t *m, const char *format, ...) {
    va_list ap;
    char line[1024];

    va_start(ap, format);
    vsnprintf(line, sizeof line, format, ap);
    va_end(ap);
    if (m->n == m->capacity) {
        size_t capacity = m->capacity ? m->capacity * 2 : 8;
        char **lines = ses__realloc(m->lines, capacity * sizeof *lines);
        if (!lines) {
            m->oom = 1;
            return;
        }
        m->lines = lines;
        m->capacity = capacity;
    }
    if (!(m->lines[m->n] = ses__strdup(line))) {
        m->oom = 1;
        return;
    }
    m->n++;
}

static void mismatches_clear(mismatches_t *m) {
    for (size_t i = 0; i < m->n; i++)
        free(m->lines[i]);
    free(m->lines);
    memset(m, 0, sizeof *m);
}

/* Fails with every mismatch in the message, or as many as fit and all of them in the log. */
static ses_status_t mismatches_fail(const char *path, const mismatches_t *m) {
    char list[MISMATCH_MESSAGE_BUDGET + 1];
    size_t used = 0, shown = 0;

    list[0] = '\0';
    for (; shown < m->n; shown++) {
        size_t len = strlen(m->lines[shown]) + (shown ? 2 : 0);
        if (used + len > MISMATCH_MESSAGE_BUDGET)
            break;
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", shown ? "; " : "",
                                 m->lines[shown]);
    }
    if (shown < m->n) {
        for (size_t i = 0; i < m->n; i++)
            ses__log(SES__LOG_ERROR, "restore %s: mismatch %zu of %zu: %s", path, i + 1, m->n,
                     m->lines[i]);
        return ses__fail(SES_INVALID_ARGUMENT,
                         "restore %s: %zu mismatches between the file and the graph, nothing "
                         "restored: %s; and %zu more (all are in the log)",
                         path, m->n, list, m->n - shown);
    }
    return ses__fail(SES_INVALID_ARGUMENT,
                     "restore %s: %zu mismatch%s between the file and the graph, nothing "
                     "restored: %s",
                     path, m->n, m->n == 1 ? "" : "es", list);
}

/* Parses the "step" metadata: decimal digits that fit in 64 bits. */
static int parse_step(const char *text, uint64_t *out) {
    uint64_t v = 0;

    if (!*text)
        return 0;
    for (const char *p = text; *p; p++) {
        unsigned digit = (unsigned)(*p - '0');
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - digit) / 10)
            return 0;
        v = v * 10 + digit;
    }
    *out = v;
    return 1;
}

/* The step in @p file's metadata: 0 when absent; -1 (with a message) when malformed. */
static int file_step(const char *path, const ses_safetensors_t *file, uint64_t *out) {
    *out = 0;
    for (size_t i = 0; i < file->n_metadata; i++) {
        if (strcmp(file->metadata_keys[i], "step") != 0)
            continue;
        if (!parse_step(file->metadata_values[i], out)) {
            ses__fail(SES_INVALID_ARGUMENT,
                      "safetensors %s: metadata \"step\" is \"%s\", not a decimal number", path,
                      file->metadata_values[i]);
            return -1;
        }
    }
    return 0;
}

/* Checks the file against the graph, collecting every mismatch; fills var_of_file (the node
 * of each file tensor). */
static ses_status_t check_file(ses_session_t *s, const char *path,
                               const ses_safetensors_t *file, int allow_missing,
                               const ses_node_t **var_of_file) {
    const ses_graph_t *g = s->graph;
    mismatches_t m = {0};
    ses__static_types_t *types = NULL;
    unsigned char *in_file = NULL;
    ses_status_t st = SES_OK;

    types = ses__static_types_new(g, s->scope);
    in_file = ses__calloc(g->n_nodes + 1, 1);
    if (!types || !in_file) {
        st = ses__fail(SES_OUT_OF_MEMORY, "restore %s: out of memory", path);
        goto done;
    }
    for (size_t i = 0; i < file->n; i++) {
        const char *name = file->names[i];
        ses__type_t actual, expected;
        char a[200], e[200];
        ses_node_t *node = NULL;
        ses_tensor_t *current = NULL;

        ses__type_of_tensor(file->tensors[i], &actual);
        ses__type_format(&actual, a, sizeof a);
        var_of_file[i] = NULL;
        if (ses_graph_find_node(g, name, &node) != SES_OK) {
            mismatch_add(&m, "\"%s\" (%s in the file) is not a variable of the graph", name, a);
            continue;
        }
        if (node->kind != SES__NODE_VARIABLE) {
            mismatch_add(&m, "\"%s\" (%s in the file) is a %s node of the graph, not a variable",
                         name, a, node->op);
            continue;
        }
        var_of_file[i] = node;
        in_file[node->id] = 1;
        if (ses_scope_find(s->scope, node->name, &current) == SES_OK) {
            ses__type_of_tensor(current, &expected);
            ses_tensor_release(current);
            if (!types_match(&expected, &actual))
                mismatch_add(&m, "\"%s\": the file has %s, the variable is %s", name, a,
                             ses__type_format(&expected, e, sizeof e));
        } else if (ses__static_type(types, node->inputs[0], &expected) &&
                   !types_match(&expected, &actual)) {
            mismatch_add(&m, "\"%s\": the file has %s, the variable's initializer gives %s", name,
                         a, ses__type_format(&expected, e, sizeof e));
        }
    }
    if (!allow_missing) {
        for (size_t i = 0; i < g->n_nodes; i++) {
            const ses_node_t *node = g->nodes[i];
            if (node->kind == SES__NODE_VARIABLE && !in_file[node->id])
                mismatch_add(&m, "variable \"%s\" is not in the file", node->name);
        }
    }
    if (m.oom)
        st = ses__fail(SES_OUT_OF_MEMORY, "restore %s: out of memory", path);
    else if (m.n)
        st = mismatches_fail(path, &m);

done:
    mismatches_clear(&m);
    ses__static_types_free(types);
    free(in_file);
    return st;
}

/* Puts the file's tensors into the scope; on failure the old values come back. */
static ses_status_t apply(ses_session_t *s, const char *path, const ses_safetensors_t *file,
                          const ses_node_t *const *var_of_file) {
    ses_tensor_t **old = ses__calloc(file->n ? file->n : 1, sizeof *old);
    ses_status_t st = SES_OK;
    size_t i;

    if (!old)
        return ses__fail(SES_OUT_OF_MEMORY, "restore %s: out of memory", path);
    for (i = 0; i < file->n; i++) {
        const char *name = var_of_file[i]->name;

        if (ses_scope_has_local(s->scope, name))
            ses_scope_find(s->scope, name, &old[i]);
        st = ses_scope_set(s->scope, name, file->tensors[i]);
        if (st != SES_OK)
            break;
    }
    if (st != SES_OK) {
        char message[2048];

        snprintf(message, sizeof message, "%s", ses_last_error());
        /* Entry i is unchanged; undo the ones before it. Replacing an existing entry and
         * removing one cannot fail. */
        for (size_t j = 0; j < i; j++) {
            const char *name = var_of_file[j]->name;
            if (old[j])
                ses_scope_set(s->scope, name, old[j]);
            else
                ses_scope_remove(s->scope, name);
        }
        st = ses__fail(st, "restore %s: %s; nothing restored", path, message);
    }
    for (size_t j = 0; j < file->n; j++)
        ses_tensor_release(old[j]);
    free(old);
    return st;
}

ses_status_t ses_session_restore(ses_session_t *s, const char *path, int allow_missing,
                                 uint64_t *out_step) {
    ses_safetensors_t file = {0};
    const ses_node_t **var_of_file = NULL;
    uint64_t step = 0;
    ses_status_t st;

    if (out_step)
        *out_step = 0;
    if (!s || !path)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_restore: %s is NULL",
                         !s ? "session" : "path");
    if ((st = ses__session_enter(s, "ses_session_restore")) != SES_OK)
        return st;
    st = ses_safetensors_read(path, &file);
    if (st != SES_OK)
        goto done;
    if (file_step(path, &file, &step) != 0) {
        st = SES_INVALID_ARGUMENT;
        goto done;
    }
    var_of_file = ses__calloc(file.n ? file.n : 1, sizeof *var_of_file);
    if (!var_of_file) {
        st = ses__fail(SES_OUT_OF_MEMORY, "restore %s: out of memory", path);
        goto done;
    }
    st = check_file(s, path, &file, allow_missing, var_of_file);
    if (st == SES_OK)
        st = apply(s, path, &file, var_of_file);
    if (st == SES_OK && out_step)
        *out_step = step;

done:
    free(var_of_file);
    ses_safetensors_free(&file);
    ses__session_leave(s);
    return st;
}

/* ---- checkpoint folders ----------------------------------------------------------------- */

/* The step of a checkpoint file name "ckpt-<digits>.safetensors"; 0 when it is not one. */
static int checkpoint_step(const char *name, uint64_t *out_step) {
    size_t len = strlen(name), prefix = strlen(CKPT_PREFIX), suffix = strlen(CKPT_SUFFIX);
    char digits[32];

    if (len <= prefix + suffix || strncmp(name, CKPT_PREFIX, prefix) != 0 ||
        strcmp(name + len - suffix, CKPT_SUFFIX) != 0 || len - prefix - suffix >= sizeof digits)
        return 0;
    memcpy(digits, name + prefix, len - prefix - suffix);
    digits[len - prefix - suffix] = '\0';
    return parse_step(digits, out_step);
}

typedef struct checkpoint_file {
    char *name;
    uint64_t step;
} checkpoint_file_t;

static int compare_newest_first(const void *a, const void *b) {
    const checkpoint_file_t *x = a, *y = b;

    if (x->step != y->step)
        return x->step > y->step ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void free_checkpoint_list(checkpoint_file_t *files, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(files[i].name);
    free(files);
}

/* The checkpoint files of @p dir, newest (highest step) first. */
static ses_status_t list_checkpoints(const char *dir, checkpoint_file_t **out_files,
                                     size_t *out_n) {
    checkpoint_file_t *files = NULL;
    size_t n = 0, capacity = 0;
    struct dirent *ent;
    DIR *d;

    *out_files = NULL;
    *out_n = 0;
    d = opendir(dir);
    if (!d)
        return ses__fail(ses__errno_status(errno), "checkpoint folder %s: cannot open: %s", dir,
                         strerror(errno));
    while ((ent = readdir(d)) != NULL) {
        uint64_t step;

        if (!checkpoint_step(ent->d_name, &step))
            continue;
        if (n == capacity) {
            size_t new_capacity = capacity ? capacity * 2 : 16;
            checkpoint_file_t *grown = ses__realloc(files, new_capacity * sizeof *grown);
            if (!grown)
                goto oom;
            files = grown;
            capacity = new_capacity;
        }
        files[n].name = ses__strdup(ent->d_name);
        if (!files[n].name)
            goto oom;
        files[n++].step = step;
    }
    closedir(d);
    if (n)
        qsort(files, n, sizeof *files, compare_newest_first);
    *out_files = files;
    *out_n = n;
    return SES_OK;

oom:
    closedir(d);
    free_checkpoint_list(files, n);
    return ses__fail(SES_OUT_OF_MEMORY, "checkpoint folder %s: out of memory", dir);
}

/* Creates @p dir and its missing parents (mode 0755), syncing each parent that gained one. */
static ses_status_t make_folders(const char *dir) {
    char *path = ses__strdup(dir);
    ses_status_t st = SES_OK;
    struct stat info;
    size_t len;

    if (!path)
        return ses__fail(SES_OUT_OF_MEMORY, "checkpoint folder %s: out of memory", dir);
    len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        path[--len] = '\0';
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0755) == 0) {
            /* Make the new folder's entry durable in its parent. */
            char *slash = strrchr(path, '/');
            const char *parent = slash ? (slash == path ? "/" : path) : ".";
            int fd;

            if (slash && slash != path)
                *slash = '\0';
            fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (fd >= 0) {
                fsync(fd);
                close(fd);
            }
            if (slash && slash != path)
                *slash = '/';
        } else if (errno != EEXIST) {
            st = ses__fail(ses__errno_status(errno), "checkpoint folder %s: cannot create %s: %s",
                           dir, path, strerror(errno));
            break;
        }
        *p = saved;
        if (saved == '\0')
            break;
    }
    if (st == SES_OK && (stat(path, &info) != 0 || !S_ISDIR(info.st_mode)))
        st = ses__fail(SES_INVALID_ARGUMENT, "checkpoint folder %s: exists and is not a folder",
                       dir);
    free(path);
    return st;
}

/* Deletes all but the newest @p keep_last checkpoints; @p current (just written) stays. */
static void prune_checkpoints(const char *dir, uint32_t keep_last, const char *current) {
    checkpoint_file_t *files = NULL;
    size_t n = 0, kept = 1; /* current */

    if (list_checkpoints(dir, &files, &n) != SES_OK) {
        ses__log(SES__LOG_WARN, "checkpoint folder %s: old checkpoints not deleted: %s", dir,
                 ses_last_error());
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char *path;

        if (strcmp(files[i].name, current) == 0)
            continue;
        if (kept < keep_last) {
            kept++;
            continue;
        }
        path = ses__strdup_printf("%s/%s", dir, files[i].name);
        if (!path || unlink(path) != 0)
            ses__log(SES__LOG_WARN, "checkpoint folder %s: cannot delete %s: %s", dir,
                     files[i].name, path ? strerror(errno) : "out of memory");
        free(path);
    }
    free_checkpoint_list(files, n);
}

ses_status_t ses_checkpoint_save(ses_session_t *s, const char *dir, uint64_t step,
                                 uint32_t keep_last) {
    char *name = NULL, *path = NULL, *latest = NULL, *text = NULL;
    ses__chunk_t chunk;
    ses_status_t st;

    if (!s || !dir || !*dir)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_checkpoint_save: %s",
                         !s ? "session is NULL" : !dir ? "dir is NULL" : "dir is empty");
    st = make_folders(dir);
    if (st != SES_OK)
        return st;
    name = ses__strdup_printf(CKPT_PREFIX "%" PRIu64 CKPT_SUFFIX, step);
    path = name ? ses__strdup_printf("%s/%s", dir, name) : NULL;
    latest = ses__strdup_printf("%s/" LATEST_NAME, dir);
    text = name ? ses__strdup_printf("%s\n", name) : NULL;
    if (!name || !path || !latest || !text) {
        st = ses__fail(SES_OUT_OF_MEMORY, "checkpoint folder %s: out of memory", dir);
        goto done;
    }
    /* The checkpoint is durable (synced and renamed, folder synced) before the pointer moves,
     * so "latest" never names a file a crash could lose. */
    st = ses_session_save(s, path, step);
    if (st != SES_OK)
        goto done;
    chunk.data = text;
    chunk.size = strlen(text);
    st = ses__write_file_atomic(latest, &chunk, 1);
    if (st != SES_OK)
        goto done;
    if (keep_last > 0)
        prune_checkpoints(dir, keep_last, name);

done:
    free(name);
    free(path);
    free(latest);
    free(text);
    return st;
}

static int has_metadata(const ses_safetensors_t *file, const char *key) {
    for (size_t i = 0; i < file->n_metadata; i++)
        if (strcmp(file->metadata_keys[i], key) == 0)
            return 1;
    return 0;
}

/* Whether @p dir/@p name reads correctly; its step in *out_step. The message says why not. */
static ses_status_t check_checkpoint(const char *dir, const char *name, char **out_path,
                                     uint64_t *out_step) {
    ses_safetensors_t header;
    char *path = ses__strdup_printf("%s/%s", dir, name);
    uint64_t step = 0;
    ses_status_t st;

    *out_path = NULL;
    if (!path)
        return ses__fail(SES_OUT_OF_MEMORY, "checkpoint folder %s: out of memory", dir);
    st = ses__safetensors_read(path, 0, &header);
    if (st != SES_OK) {
        free(path);
        return st;
    }
    if (file_step(path, &header, &step) != 0)
        st = SES_INVALID_ARGUMENT;
    else if (!has_metadata(&header, "step"))
        checkpoint_step(name, &step); /* a file from elsewhere: its name says the step */
    ses_safetensors_free(&header);
    if (st != SES_OK) {
        free(path);
        return st;
    }
    *out_path = path;
    *out_step = step;
    return SES_OK;
}

/*
 * The file name in dir/latest in *out_name, or NULL with the reason in @p why. Out of memory is
 * an error of its own (SES_OUT_OF_MEMORY), never a reason to fall back to another checkpoint.
 */
static ses_status_t read_latest(const char *dir, char **out_name, char *why, size_t why_size) {
    char *path = ses__strdup_printf("%s/" LATEST_NAME, dir);
    char text[512];
    ssize_t k;
    size_t len;
    int fd;

    *out_name = NULL;
    if (!path)
        return ses__fail(SES_OUT_OF_MEMORY, "checkpoint folder %s: out of memory", dir);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0) {
        snprintf(why, why_size, "\"" LATEST_NAME "\" cannot be opened (%s)", strerror(errno));
        return SES_OK;
    }
    k = read(fd, text, sizeof text - 1);
    close(fd);
    if (k < 0) {
        snprintf(why, why_size, "\"" LATEST_NAME "\" cannot be read (%s)", strerror(errno));
        return SES_OK;
    }
    len = (size_t)k;
    text[len] = '\0';
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
        text[--len] = '\0';
    /* A bare file name in this folder; anything else is corrupt, never followed. */
    if (len == 0 || len == sizeof text - 1 || strlen(text) != len || strchr(text, '/') ||
        strcmp(text, ".") == 0 || strcmp(text, "..") == 0) {
        snprintf(why, why_size, "\"" LATEST_NAME "\" does not hold a file name");
        return SES_OK;
    }
    *out_name = ses__strdup(text);
    if (!*out_name)
        return ses__fail(SES_OUT_OF_MEMORY, "checkpoint folder %s: out of memory", dir);
    return SES_OK;
}

ses_status_t ses_checkpoint_latest(const char *dir, char **out_path, uint64_t *out_step) {
    checkpoint_file_t *files = NULL;
    char why[1536], failures[2048];
    size_t n = 0, used = 0;
    char *latest = NULL;
    ses_status_t st;

    if (out_path)
        *out_path = NULL;
    if (out_step)
        *out_step = 0;
    if (!dir || !out_path || !out_step)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_checkpoint_latest: %s is NULL",
                         !dir ? "dir" : !out_path ? "out_path" : "out_step");
    why[0] = failures[0] = '\0';
    st = read_latest(dir, &latest, why, sizeof why);
    if (st != SES_OK)
        return st;
    if (latest) {
        st = check_checkpoint(dir, latest, out_path, out_step);
        if (st == SES_OK || st == SES_OUT_OF_MEMORY) {
            free(latest);
            return st;
        }
        snprintf(why, sizeof why, "\"" LATEST_NAME "\" names %s, which does not read: %s",
                 latest, ses_last_error());
    }
    st = list_checkpoints(dir, &files, &n);
    if (st != SES_OK) {
        free(latest);
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        if (latest && strcmp(files[i].name, latest) == 0)
            continue;
        st = check_checkpoint(dir, files[i].name, out_path, out_step);
        if (st == SES_OUT_OF_MEMORY) {
            free(latest);
            free_checkpoint_list(files, n);
            return st;
        }
        if (st == SES_OK) {
            ses__log(SES__LOG_WARN, "checkpoint folder %s: %s; using %s (step %" PRIu64 ")", dir,
                     why, files[i].name, *out_step);
            free(latest);
            free_checkpoint_list(files, n);
            return SES_OK;
        }
        if (used < sizeof failures)
            used += (size_t)snprintf(failures + used, sizeof failures - used, "; %s",
                                     ses_last_error());
    }
    if (n == 0)
        st = ses__fail(SES_NOT_FOUND, "checkpoint folder %s has no checkpoint (%s)", dir, why);
    else
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "checkpoint folder %s: no checkpoint reads correctly: %s%s", dir, why,
                       failures);
    free(latest);
    free_checkpoint_list(files, n);
    return st;
}

ses_status_t ses_checkpoint_restore_latest(ses_session_t *s, const char *dir,
                                           uint64_t *out_step) {
    char *path = NULL;
    uint64_t step = 0;
    ses_status_t st;

    if (out_step)
        *out_step = 0;
    if (!s || !dir)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_checkpoint_restore_latest: %s is NULL",
                         !s ? "session" : "dir");
    st = ses_checkpoint_latest(dir, &path, &step);
    if (st == SES_OK)
        st = ses_session_restore(s, path, 0, &step);
    if (st == SES_OK && out_step)
        *out_step = step;
    free(path);
    return st;
}
