/* Internal error reporting: the thread-local message behind ses_last_error(). */
#ifndef SES_ERROR_H
#define SES_ERROR_H

#include <session/status.h>

#include "alloc.h" /* ses__malloc, ses__strdup (accepts NULL), ... */

/** Sets the calling thread's message (printf format) and returns @p status. */
ses_status_t ses__fail(ses_status_t status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/** Clears the calling thread's message. */
void ses__clear_error(void);

/** printf into a new heap string; NULL when memory runs out. */
char *ses__strdup_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif /* SES_ERROR_H */
