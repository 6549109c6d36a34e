/* Internal helpers shared by the built-in hooks (hooks_builtin.c, hooks_checkpoint.c). */
#ifndef SES_HOOKS_INTERNAL_H
#define SES_HOOKS_INTERNAL_H

#include <stddef.h>

#include <session/hooks.h>

/** Seconds on the monotonic clock, which wall-clock changes do not move. */
double ses__now_seconds(void);

/**
 * Allocates a zeroed built-in hook of @p size bytes whose first member is a ses_hook_t, filled
 * by ses_hook_init with @p name and @p destroy; NULL when memory runs out.
 */
void *ses__hook_alloc(size_t size, const char *name, void (*destroy)(ses_hook_t *h));

#endif /* SES_HOOKS_INTERNAL_H */
