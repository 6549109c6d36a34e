/*
 * Status codes and error messages shared by every libsession call.
 */
#ifndef SESSION_STATUS_H
#define SESSION_STATUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the public API; libsession builds with hidden visibility so only these are exported. */
#if defined(SES_BUILDING_LIBSESSION) && defined(__GNUC__)
#define SES_API __attribute__((visibility("default")))
#else
#define SES_API
#endif

/**
 * What a fallible call returns. The values equal the driver ABI's SES_DRV_* codes.
 * On any code but SES_OK, ses_last_error() says what failed, where, and both sides of a mismatch.
 */
typedef enum ses_status {
    SES_OK = 0,
    /** A bad argument: NULL, out of range, malformed name or file. */
    SES_INVALID_ARGUMENT = 1,
    /** A named thing does not exist: file, symbol, driver, device, edge. */
    SES_NOT_FOUND = 2,
    /** The call is valid but the object is in the wrong state for it (a closed session). */
    SES_FAILED_PRECONDITION = 3,
    /** Host or device memory ran out. */
    SES_OUT_OF_MEMORY = 4,
    /** Not implemented: an op with no kernel, an optional driver entry that is absent. */
    SES_UNIMPLEMENTED = 5,
    /** Versions do not match: driver ABI, manifest format, op set. */
    SES_INCOMPATIBLE = 6,
    /** A resource is missing for now: vendor runtime, device; retrying later may work. */
    SES_UNAVAILABLE = 7,
    /** A bug in libsession or a driver. */
    SES_INTERNAL = 8,
    /** The work was cancelled. */
    SES_CANCELLED = 9,
    /** The thing being created exists already (a driver name claimed twice). */
    SES_ALREADY_EXISTS = 10,
} ses_status_t;

/**
 * The message of the last failed call on the calling thread; "" if none failed yet.
 * Read it only right after a call returned a status other than SES_OK: as with errno, a call
 * that succeeds does not clear it (and may leave a message of a failure it recovered from), so
 * after a success it can be stale. The pointer is valid until the next libsession call on this
 * thread. Thread-safe.
 */
SES_API const char *ses_last_error(void);

/**
 * Sets the calling thread's last error to the printf-formatted message and returns @p status:
 * for code libsession calls back (hooks, communicators) to say why it failed,
 * `return ses_set_error(SES_UNAVAILABLE, "rank %d is gone", r);`.
 */
SES_API ses_status_t ses_set_error(ses_status_t status, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** The code's name, "SES_NOT_FOUND"; "SES_UNKNOWN_STATUS" for a value outside the set. */
SES_API const char *ses_status_name(ses_status_t status);

/** libsession's version, "0.1.0". */
SES_API const char *ses_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_STATUS_H */
