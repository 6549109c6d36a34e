/* The thread-local error message, status names and small string helpers. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Long enough for a message that lists every device of a machine. */
#define SES_ERROR_CAPACITY 4096

static _Thread_local char tls_message[SES_ERROR_CAPACITY];

ses_status_t ses__fail(ses_status_t status, const char *format, ...) {
    va_list ap;

    va_start(ap, format);
    vsnprintf(tls_message, sizeof tls_message, format, ap);
    va_end(ap);
    return status;
}

ses_status_t ses_set_error(ses_status_t status, const char *format, ...) {
    va_list ap;

    if (!format)
        format = "";
    va_start(ap, format);
    vsnprintf(tls_message, sizeof tls_message, format, ap);
    va_end(ap);
    return status;
}

void ses__clear_error(void) {
    tls_message[0] = '\0';
}

const char *ses_last_error(void) {
    return tls_message;
}

const char *ses_status_name(ses_status_t status) {
    switch (status) {
    case SES_OK: return "SES_OK";
    case SES_INVALID_ARGUMENT: return "SES_INVALID_ARGUMENT";
    case SES_NOT_FOUND: return "SES_NOT_FOUND";
    case SES_FAILED_PRECONDITION: return "SES_FAILED_PRECONDITION";
    case SES_OUT_OF_MEMORY: return "SES_OUT_OF_MEMORY";
    case SES_UNIMPLEMENTED: return "SES_UNIMPLEMENTED";
    case SES_INCOMPATIBLE: return "SES_INCOMPATIBLE";
    case SES_UNAVAILABLE: return "SES_UNAVAILABLE";
    case SES_INTERNAL: return "SES_INTERNAL";
    case SES_CANCELLED: return "SES_CANCELLED";
    case SES_ALREADY_EXISTS: return "SES_ALREADY_EXISTS";
    }
    return "SES_UNKNOWN_STATUS";
}

const char *ses_version(void) {
    return SES_VERSION;
}

char *ses__strdup_printf(const char *format, ...) {
    va_list ap;
    int n;
    char *s;

    va_start(ap, format);
    n = vsnprintf(NULL, 0, format, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    s = ses__malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, format);
    vsnprintf(s, (size_t)n + 1, format, ap);
    va_end(ap);
    return s;
}
