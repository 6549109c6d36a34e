/*
 * Scopes: name → tensor, in a tree. A lookup walks up the parents; setting is local and shadows
 * a parent's entry. A session owns its root scope (ses_session_scope); children are made with
 * ses_scope_create_child and must be destroyed before their parent, except a session's scope:
 * closing the session empties its children, destroying it detaches them (see
 * ses_session_close).
 *
 * Thread-safety: find, set, remove, has_local, count and create_child may be called concurrently
 * on one scope tree. Destroying a scope must not race other calls on that scope, and a pointer
 * from ses_scope_name_at is valid until that entry is removed or the scope destroyed.
 */
#ifndef SESSION_SCOPE_H
#define SESSION_SCOPE_H

#include <session/status.h>
#include <session/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ses_scope ses_scope_t;

/** Creates an empty root scope owned by the caller. */
SES_API ses_status_t ses_scope_create(ses_scope_t **out_scope);

/** Creates a child of @p parent, owned by the caller; @p parent must outlive it. */
SES_API ses_status_t ses_scope_create_child(ses_scope_t *parent, ses_scope_t **out_scope);

/**
 * Destroys a scope and releases its tensors. Accepts NULL. Fails (returns SES_FAILED_PRECONDITION
 * and destroys nothing) while the scope still has children.
 */
SES_API ses_status_t ses_scope_destroy(ses_scope_t *scope);

/** The parent, or NULL for a root. */
SES_API ses_scope_t *ses_scope_parent(const ses_scope_t *scope);

/**
 * Finds @p name here or in the nearest ancestor that has it. @p out_value receives a new
 * reference (release it). SES_NOT_FOUND when no scope up the chain has it.
 */
SES_API ses_status_t ses_scope_find(const ses_scope_t *scope, const char *name,
                                    ses_tensor_t **out_value);

/** Whether @p name is set in this scope itself (parents are not searched). */
SES_API int ses_scope_has_local(const ses_scope_t *scope, const char *name);

/** Sets @p name in this scope to @p value (retained); replaces a local entry, shadows a parent's. */
SES_API ses_status_t ses_scope_set(ses_scope_t *scope, const char *name, ses_tensor_t *value);

/** Removes the local entry @p name; SES_NOT_FOUND when this scope has none. */
SES_API ses_status_t ses_scope_remove(ses_scope_t *scope, const char *name);

/** Number of local entries, and the name of entry @p index (in insertion order) or NULL. */
SES_API size_t ses_scope_count(const ses_scope_t *scope);
SES_API const char *ses_scope_name_at(const ses_scope_t *scope, size_t index);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_SCOPE_H */
