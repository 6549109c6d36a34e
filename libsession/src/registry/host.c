/*
 * The host services libsession gives every driver (ses_drv_host_t): logging, error messages,
 * option lookup and the abort check.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../log.h"
#include "registry_internal.h"

/* The message a driver attached to the error it is about to return, per thread. */
static _Thread_local char tls_driver_message[2048];
static _Thread_local int tls_driver_message_set;
/* The abort flag of the eval running on this thread, if any. */
static _Thread_local const volatile int *tls_abort_flag;
/* The options of the session whose devices this thread is opening, if any. */
static _Thread_local const char *const *tls_session_options;
static _Thread_local size_t tls_n_session_options;

static const char *driver_name(ses_drv_host_ctx_t *ctx) {
    return ctx && ctx->driver && ctx->driver->manifest.name ? ctx->driver->manifest.name : "?";
}

static void host_log(ses_drv_host_ctx_t *ctx, uint32_t level, const char *message) {
    ses__log(level, "driver %s: %s", driver_name(ctx), message ? message : "(null)");
}

static int32_t host_log_enabled(ses_drv_host_ctx_t *ctx, uint32_t level) {
    (void)ctx;
    return ses__log_enabled(level);
}

static int32_t host_error(ses_drv_host_ctx_t *ctx, int32_t code, const char *format, ...) {
    va_list ap;

    (void)ctx;
    if (!format) {
        snprintf(tls_driver_message, sizeof tls_driver_message, "(no message)");
    } else {
        va_start(ap, format);
        vsnprintf(tls_driver_message, sizeof tls_driver_message, format, ap);
        va_end(ap);
    }
    tls_driver_message_set = 1;
    return code;
}

/* "driver.xrt.xclbin" → "SESSION_DRIVER_XRT_XCLBIN". Returns 0 when it does not fit. */
static int option_variable(const char *key, char *buffer, size_t size) {
    size_t n = strlen("SESSION_");

    if (n + strlen(key) + 1 > size)
        return 0;
    memcpy(buffer, "SESSION_", n);
    for (const char *p = key; *p; p++)
        buffer[n++] = (*p == '.' || *p == '-') ? '_' : (char)toupper((unsigned char)*p);
    buffer[n] = '\0';
    return 1;
}

static int32_t host_get_option(ses_drv_host_ctx_t *ctx, const char *key, char *buffer,
                               uint64_t buffer_size, uint64_t *out_size) {
    char variable[256];
    const char *value = NULL;
    size_t needed;

    if (!key || !out_size)
        return host_error(ctx, SES_DRV_INVALID_ARGUMENT, "get_option: NULL %s",
                          key ? "out_size" : "key");
    *out_size = 0;
    /* Session options come first, then the environment, then the manifest. Values may be
     * paths, so the environment is read securely. */
    for (size_t i = 0; i < tls_n_session_options; i++) {
        const char *entry = tls_session_options[i];
        size_t n = strlen(key);
        if (entry && strncmp(entry, key, n) == 0 && entry[n] == '=')
            value = entry + n + 1;
    }
    if (!value && option_variable(key, variable, sizeof variable))
        value = secure_getenv(variable);
    if (!value && ctx && ctx->driver) {
        const ses__manifest_t *m = &ctx->driver->manifest;
        for (size_t i = 0; i < m->n_options; i++)
            if (strcmp(m->option_keys[i], key) == 0)
                value = m->option_values[i];
    }
    if (!value)
        return SES_DRV_NOT_FOUND;
    needed = strlen(value) + 1;
    *out_size = needed;
    if (!buffer || buffer_size < needed)
        return SES_DRV_INVALID_ARGUMENT;
    memcpy(buffer, value, needed);
    return SES_DRV_OK;
}

static int32_t host_should_abort(ses_drv_host_ctx_t *ctx) {
    (void)ctx;
    return tls_abort_flag && *tls_abort_flag ? 1 : 0;
}

const ses_drv_host_t ses__host_services = {
    .struct_size = sizeof(ses_drv_host_t),
    .reserved = 0,
    .next = NULL,
    .log = host_log,
    .log_enabled = host_log_enabled,
    .error = host_error,
    .get_option = host_get_option,
    .should_abort = host_should_abort,
};

int ses__host_take_message(char *buffer, size_t size) {
    int had = tls_driver_message_set;

    if (size)
        snprintf(buffer, size, "%s", had ? tls_driver_message : "");
    tls_driver_message_set = 0;
    tls_driver_message[0] = '\0';
    return had;
}

void ses__host_set_abort_flag(const volatile int *flag) {
    tls_abort_flag = flag;
}

void ses__host_set_session_options(const char *const *options, size_t n_options) {
    tls_session_options = options;
    tls_n_session_options = options ? n_options : 0;
}
