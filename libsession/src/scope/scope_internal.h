/* What the session does to its root scope beyond the public scope API. */
#ifndef SES_SCOPE_INTERNAL_H
#define SES_SCOPE_INTERNAL_H

#include <session/scope.h>

/**
 * Empties @p scope and every scope below it; the scopes themselves stay valid. A session's
 * close does this, so that a scope pointer a caller holds never dangles and no tensor of the
 * closed session stays reachable.
 */
void ses__scope_clear_tree(ses_scope_t *scope);

/**
 * Makes every child of @p scope a root of its own (its parent becomes NULL; lookups stop
 * there), so that @p scope can be destroyed while callers still own children. The children keep
 * their entries and their own children, and are destroyed by their owners as before.
 */
void ses__scope_detach_children(ses_scope_t *scope);

/**
 * ses_scope_find without bringing a device's newer copy to the host: for the runtime, which
 * binds the device copy itself or only reads the type.
 */
ses_status_t ses__scope_find_raw(const ses_scope_t *scope, const char *name,
                                 ses_tensor_t **out_value);

#endif /* SES_SCOPE_INTERNAL_H */
