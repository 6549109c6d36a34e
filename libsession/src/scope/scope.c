/* Scopes: name → tensor maps in a tree, ordered by insertion, with a hash index per scope. */
#include "scope_internal.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../tensor/tensor_internal.h"

/*
 * Locking: one reader-writer lock per tree, owned by the root and shared by every descendant.
 *
 * A find walks from a scope up to the root; with one lock for the whole tree the walk sees a
 * single consistent state (an entry cannot move between a child and its parent half-way through
 * it), and there is no lock order to get wrong. Creating and destroying a child update the
 * parent's child count under that same lock. The cost is that writers in sibling scopes
 * serialize; the critical sections are a hash probe and a few pointer moves, so that is cheap
 * next to evaluating a graph. Finds, counts and names take the lock shared; set, remove,
 * create_child and destroy take it exclusively.
 *
 * Tensors are released, and names freed, only after the lock is dropped: releasing a wrapped
 * tensor runs the caller's deleter, which may itself call into this scope tree.
 *
 * The tree (its lock) is shared by every scope in it and freed with the last of them: a
 * session's root is destroyed with its session even while a caller's child scope lives on,
 * detached (ses__scope_detach_children), and that child still needs the lock.
 */
typedef struct ses_scope_tree {
    pthread_rwlock_t lock;
    size_t n_scopes; /* scopes that use this tree; guarded by lock */
} ses_scope_tree_t;

typedef struct scope_entry {
    char *name; /* own copy; never moves while the entry exists (ses_scope_name_at) */
    uint64_t hash;
    ses_tensor_t *value; /* one reference */
} scope_entry_t;

struct ses_scope {
    ses_scope_tree_t *tree; /* the root's; freed with the root */
    ses_scope_t *parent;    /* NULL for a root (or a child detached from its root) */
    size_t n_children;
    ses_scope_t *first_child; /* children, linked through next and prev */
    ses_scope_t *next, *prev;
    scope_entry_t *entries; /* insertion order */
    size_t count;
    size_t capacity;
    /* Open addressing with linear probing: slot = entry position + 1, 0 = empty. The table
     * size is a power of two at least twice count, or 0 while there are no entries. */
    size_t *index;
    size_t index_size;
};

#define SCOPE_NO_ENTRY SIZE_MAX

static uint64_t hash_name(const char *name) {
    /* FNV-1a, 64 bits. */
    uint64_t h = 14695981039346656037ull;

    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    return h;
}

static void tree_read_lock(const ses_scope_t *scope) {
    int rc = pthread_rwlock_rdlock(&scope->tree->lock);
    assert(rc == 0);
    (void)rc;
}

static void tree_write_lock(const ses_scope_t *scope) {
    int rc = pthread_rwlock_wrlock(&scope->tree->lock);
    assert(rc == 0);
    (void)rc;
}

static void tree_unlock(const ses_scope_t *scope) {
    int rc = pthread_rwlock_unlock(&scope->tree->lock);
    assert(rc == 0);
    (void)rc;
}

/* The position of local entry @p name, or SCOPE_NO_ENTRY. Caller holds the lock. */
static size_t find_local(const ses_scope_t *scope, const char *name, uint64_t hash) {
    size_t mask, i;

    if (scope->index_size == 0)
        return SCOPE_NO_ENTRY;
    mask = scope->index_size - 1;
    for (i = (size_t)hash & mask; scope->index[i] != 0; i = (i + 1) & mask) {
        const scope_entry_t *e = &scope->entries[scope->index[i] - 1];
        if (e->hash == hash && strcmp(e->name, name) == 0)
            return scope->index[i] - 1;
    }
    return SCOPE_NO_ENTRY;
}

static void index_insert(size_t *index, size_t size, uint64_t hash, size_t position) {
    size_t mask = size - 1;
    size_t i = (size_t)hash & mask;

    while (index[i] != 0)
        i = (i + 1) & mask;
    index[i] = position + 1;
}

/* Refills @p index (of @p size slots) from the entries, in place. Caller holds the lock. */
static void index_rebuild(ses_scope_t *scope, size_t *index, size_t size) {
    memset(index, 0, size * sizeof index[0]);
    for (size_t pos = 0; pos < scope->count; pos++)
        index_insert(index, size, scope->entries[pos].hash, pos);
}

/* Makes room for one more entry, in the array and in the index. Caller holds the write lock.
 * On failure nothing has changed. */
static ses_status_t reserve_one(ses_scope_t *scope) {
    if (scope->count == scope->capacity) {
        size_t capacity = scope->capacity ? scope->capacity * 2 : 8;
        scope_entry_t *entries;

        if (capacity > SIZE_MAX / sizeof entries[0])
            return ses__fail(SES_OUT_OF_MEMORY, "ses_scope_set: too many entries");
        entries = ses__realloc(scope->entries, capacity * sizeof entries[0]);
        if (!entries)
            return ses__fail(SES_OUT_OF_MEMORY, "ses_scope_set: out of memory for %zu entries",
                             capacity);
        scope->entries = entries;
        scope->capacity = capacity;
    }
    if ((scope->count + 1) * 2 > scope->index_size) {
        size_t size = scope->index_size ? scope->index_size * 2 : 16;
        size_t *index;

        if (size > SIZE_MAX / sizeof index[0])
            return ses__fail(SES_OUT_OF_MEMORY, "ses_scope_set: too many entries");
        index = ses__malloc(size * sizeof index[0]);
        if (!index)
            return ses__fail(SES_OUT_OF_MEMORY, "ses_scope_set: out of memory for the index");
        index_rebuild(scope, index, size);
        free(scope->index);
        scope->index = index;
        scope->index_size = size;
    }
    return SES_OK;
}

static ses_status_t scope_new(const char *what, ses_scope_t *parent, ses_scope_t **out_scope) {
    ses_scope_t *scope;

    *out_scope = NULL;
    scope = ses__calloc(1, sizeof *scope);
    if (!scope)
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory for a scope", what);
    scope->parent = parent;
    if (parent) {
        scope->tree = parent->tree; /* counted by the caller under the tree's lock */
    } else {
        scope->tree = ses__malloc(sizeof *scope->tree);
        if (!scope->tree) {
            free(scope);
            return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory for a scope", what);
        }
        if (pthread_rwlock_init(&scope->tree->lock, NULL) != 0) {
            free(scope->tree);
            free(scope);
            return ses__fail(SES_OUT_OF_MEMORY, "%s: cannot create the scope's lock", what);
        }
        scope->tree->n_scopes = 1;
    }
    *out_scope = scope;
    return SES_OK;
}

ses_status_t ses_scope_create(ses_scope_t **out_scope) {
    if (!out_scope)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_scope is NULL", __func__);
    return scope_new(__func__, NULL, out_scope);
}

ses_status_t ses_scope_create_child(ses_scope_t *parent, ses_scope_t **out_scope) {
    ses_status_t st;

    if (!out_scope)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_scope is NULL", __func__);
    *out_scope = NULL;
    if (!parent)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: parent is NULL", __func__);

    st = scope_new(__func__, parent, out_scope);
    if (st != SES_OK)
        return st;
    tree_write_lock(parent);
    parent->n_children++;
    parent->tree->n_scopes++;
    (*out_scope)->next = parent->first_child;
    if (parent->first_child)
        parent->first_child->prev = *out_scope;
    parent->first_child = *out_scope;
    tree_unlock(parent);
    return SES_OK;
}

/* Takes @p scope out of its parent's list of children. Caller holds the write lock. */
static void unlink_child(ses_scope_t *scope) {
    ses_scope_t *parent = scope->parent;

    if (!parent)
        return;
    parent->n_children--;
    if (scope->prev)
        scope->prev->next = scope->next;
    else
        parent->first_child = scope->next;
    if (scope->next)
        scope->next->prev = scope->prev;
    scope->parent = scope->next = scope->prev = NULL;
}

ses_status_t ses_scope_destroy(ses_scope_t *scope) {
    size_t n_children;
    int last = 0;

    if (!scope)
        return SES_OK;

    tree_write_lock(scope);
    n_children = scope->n_children;
    if (n_children == 0) {
        unlink_child(scope);
        last = --scope->tree->n_scopes == 0;
    }
    tree_unlock(scope);
    if (n_children > 0)
        return ses__fail(SES_FAILED_PRECONDITION,
                         "%s: the scope still has %zu child scope%s; destroy them first",
                         __func__, n_children, n_children == 1 ? "" : "s");

    /* The scope is out of the tree now: nothing else can reach its entries. */
    for (size_t pos = 0; pos < scope->count; pos++) {
        free(scope->entries[pos].name);
        ses_tensor_release(scope->entries[pos].value);
    }
    if (last) {
        pthread_rwlock_destroy(&scope->tree->lock);
        free(scope->tree);
    }
    free(scope->entries);
    free(scope->index);
    free(scope);
    return SES_OK;
}

ses_scope_t *ses_scope_parent(const ses_scope_t *scope) {
    ses_scope_t *parent;

    if (!scope)
        return NULL;
    /* Detaching (a session destroyed under a child) clears the link: read it under the lock. */
    tree_read_lock(scope);
    parent = scope->parent;
    tree_unlock(scope);
    return parent;
}

ses_status_t ses_scope_find(const ses_scope_t *scope, const char *name,
                            ses_tensor_t **out_value) {
    ses_status_t st = ses__scope_find_raw(scope, name, out_value);

    /* The caller reads it: a newer copy a device holds comes to the host first. */
    if (st == SES_OK)
        ses__tensor_materialize(*out_value);
    return st;
}

ses_status_t ses__scope_find_raw(const ses_scope_t *scope, const char *name,
                                 ses_tensor_t **out_value) {
    ses_tensor_t *value = NULL;
    uint64_t hash;

    if (!out_value)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_value is NULL", "ses_scope_find");
    *out_value = NULL;
    if (!scope)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: scope is NULL", "ses_scope_find");
    if (!name)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: name is NULL", "ses_scope_find");

    hash = hash_name(name);
    tree_read_lock(scope);
    for (const ses_scope_t *s = scope; s && !value; s = s->parent) {
        size_t pos = find_local(s, name, hash);
        if (pos != SCOPE_NO_ENTRY)
            value = ses_tensor_retain(s->entries[pos].value);
    }
    tree_unlock(scope);

    if (!value)
        return ses__fail(SES_NOT_FOUND, "%s: \"%s\" is not set in this scope or its parents",
                         "ses_scope_find", name);
    *out_value = value;
    return SES_OK;
}

int ses_scope_has_local(const ses_scope_t *scope, const char *name) {
    size_t pos;

    if (!scope || !name)
        return 0;
    tree_read_lock(scope);
    pos = find_local(scope, name, hash_name(name));
    tree_unlock(scope);
    return pos != SCOPE_NO_ENTRY;
}

ses_status_t ses_scope_set(ses_scope_t *scope, const char *name, ses_tensor_t *value) {
    ses_status_t st;
    ses_tensor_t *old = NULL;
    char *copy = NULL;
    uint64_t hash;
    size_t pos;

    if (!scope)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: scope is NULL", __func__);
    if (!name)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: name is NULL", __func__);
    if (!value)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: value for \"%s\" is NULL", __func__, name);
    /* Variables are host tensors that the session moves to devices itself (resident.c). */
    if ((st = ses__tensor_require_host(value, "ses_scope_set")) != SES_OK)
        return st;

    /* A set is a host write: device copies of this tensor are stale from now on. */
    ses__tensor_host_wrote(value);
    hash = hash_name(name);
    tree_write_lock(scope);
    pos = find_local(scope, name, hash);
    if (pos != SCOPE_NO_ENTRY) {
        /* Replacing keeps the entry's place and its name string (ses_scope_name_at). */
        old = scope->entries[pos].value;
        scope->entries[pos].value = ses_tensor_retain(value);
    } else {
        st = reserve_one(scope);
        if (st != SES_OK)
            goto fail;
        copy = ses__strdup(name);
        if (!copy) {
            st = ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory for the name \"%s\"", __func__,
                           name);
            goto fail;
        }
        pos = scope->count++;
        scope->entries[pos].name = copy;
        scope->entries[pos].hash = hash;
        scope->entries[pos].value = ses_tensor_retain(value);
        index_insert(scope->index, scope->index_size, hash, pos);
    }
    tree_unlock(scope);
    ses_tensor_release(old);
    return SES_OK;

fail:
    tree_unlock(scope);
    return st;
}

ses_status_t ses_scope_remove(ses_scope_t *scope, const char *name) {
    scope_entry_t removed;
    size_t pos;

    if (!scope)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: scope is NULL", __func__);
    if (!name)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: name is NULL", __func__);

    tree_write_lock(scope);
    pos = find_local(scope, name, hash_name(name));
    if (pos == SCOPE_NO_ENTRY) {
        tree_unlock(scope);
        return ses__fail(SES_NOT_FOUND, "%s: \"%s\" is not set in this scope", __func__, name);
    }
    removed = scope->entries[pos];
    /* Shifting keeps insertion order; positions after pos change, so the index is refilled
     * in place, which cannot fail. */
    memmove(&scope->entries[pos], &scope->entries[pos + 1],
            (scope->count - pos - 1) * sizeof scope->entries[0]);
    scope->count--;
    index_rebuild(scope, scope->index, scope->index_size);
    tree_unlock(scope);

    free(removed.name);
    ses_tensor_release(removed.value);
    return SES_OK;
}

size_t ses_scope_count(const ses_scope_t *scope) {
    size_t count;

    if (!scope)
        return 0;
    tree_read_lock(scope);
    count = scope->count;
    tree_unlock(scope);
    return count;
}

const char *ses_scope_name_at(const ses_scope_t *scope, size_t index) {
    const char *name = NULL;

    if (!scope)
        return NULL;
    tree_read_lock(scope);
    if (index < scope->count)
        name = scope->entries[index].name;
    tree_unlock(scope);
    return name;
}

/* The first scope at or below @p scope (depth first) that holds entries, or NULL. Caller holds
 * the lock. */
static ses_scope_t *first_nonempty(ses_scope_t *scope) {
    if (scope->count)
        return scope;
    for (ses_scope_t *c = scope->first_child; c; c = c->next) {
        ses_scope_t *found = first_nonempty(c);
        if (found)
            return found;
    }
    return NULL;
}

void ses__scope_clear_tree(ses_scope_t *scope) {
    /* One scope at a time: its entries are taken under the lock and released after it, since a
     * wrapped tensor's deleter may call back into the tree; taking needs no allocation. */
    for (;;) {
        scope_entry_t *entries;
        size_t count;
        ses_scope_t *s;

        tree_write_lock(scope);
        s = first_nonempty(scope);
        if (!s) {
            tree_unlock(scope);
            return;
        }
        entries = s->entries;
        count = s->count;
        s->entries = NULL;
        s->count = s->capacity = 0;
        if (s->index)
            memset(s->index, 0, s->index_size * sizeof s->index[0]);
        tree_unlock(scope);
        for (size_t pos = 0; pos < count; pos++) {
            free(entries[pos].name);
            ses_tensor_release(entries[pos].value);
        }
        free(entries);
    }
}

void ses__scope_detach_children(ses_scope_t *scope) {
    tree_write_lock(scope);
    while (scope->first_child)
        unlink_child(scope->first_child);
    tree_unlock(scope);
}
