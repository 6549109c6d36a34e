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

/* Where option @p key is set: in @p entries ("key=value", the later wins), the environment or
 * the manifest of @p driver, first to last (DRV-28). NULL when nowhere. */
static const char *option_value(const struct ses_driver *driver, const char *const *entries,
                                size_t n_entries, const char *key) {
    char variable[256];
    const char *value = NULL;
    size_t n = strlen(key);

    for (size_t i = 0; i < n_entries; i++) {
        const char *entry = entries[i];
        if (entry && strncmp(entry, key, n) == 0 && entry[n] == '=')
            value = entry + n + 1;
    }
    /* Values may be paths, so the environment is read securely. */
    if (!value && option_variable(key, variable, sizeof variable))
        value = secure_getenv(variable);
    if (!value && driver) {
        const ses__manifest_t *m = &driver->manifest;
        for (size_t i = 0; i < m->n_options; i++)
            if (strcmp(m->option_keys[i], key) == 0)
                value = m->option_values[i];
    }
    return value;
}

/* get_option's answer for @p value (NULL: not set), copied with its NUL when it fits. */
static int32_t option_answer(const char *value, char *buffer, uint64_t buffer_size,
                             uint64_t *out_size) {
    size_t needed;

    if (!value)
        return SES_DRV_NOT_FOUND;
    needed = strlen(value) + 1;
    *out_size = needed;
    if (!buffer || buffer_size < needed)
        return SES_DRV_INVALID_ARGUMENT;
    memcpy(buffer, value, needed);
    return SES_DRV_OK;
}

static int32_t host_get_option(ses_drv_host_ctx_t *ctx, const char *key, char *buffer,
                               uint64_t buffer_size, uint64_t *out_size) {
    if (!key || !out_size)
        return host_error(ctx, SES_DRV_INVALID_ARGUMENT, "get_option: NULL %s",
                          key ? "out_size" : "key");
    *out_size = 0;
    return option_answer(
        option_value(ctx ? ctx->driver : NULL, tls_session_options, tls_n_session_options, key),
        buffer, buffer_size, out_size);
}

/* The options open_device_with_options is given (ABI 1.5): the public struct first, then what
 * its get reads instead of the thread's state. */
typedef struct host_options {
    ses_drv_options_t pub;
    const struct ses_driver *driver;
    const char *const *entries; /* the session's "key=value" options, all drivers' */
    size_t n_entries;
    char **keys; /* pub.count keys of this driver, owned */
    const char **values;
} host_options_t;

static int32_t options_get(const ses_drv_options_t *options, const char *key, char *buffer,
                           uint64_t buffer_size, uint64_t *out_size) {
    const host_options_t *o = (const host_options_t *)(const void *)options;

    if (!options || !key || !out_size)
        return host_error(NULL, SES_DRV_INVALID_ARGUMENT, "options->get: NULL %s",
                          !options ? "options"
                          : !key   ? "key"
                                   : "out_size");
    *out_size = 0;
    return option_answer(option_value(o->driver, o->entries, o->n_entries, key), buffer,
                         buffer_size, out_size);
}

static void options_free(host_options_t *o) {
    for (uint32_t i = 0; i < o->pub.count; i++)
        free(o->keys[i]);
    free(o->keys);
    free(o->values);
}

/* Fills @p o with the session options @p entries that name @p driver ("driver.<name>."). */
static int options_make(host_options_t *o, const struct ses_driver *driver,
                        const char *const *entries, size_t n_entries) {
    char prefix[160];
    size_t n_prefix;

    memset(o, 0, sizeof *o);
    o->pub.struct_size = sizeof o->pub;
    o->pub.get = options_get;
    o->driver = driver;
    o->entries = entries;
    o->n_entries = entries ? n_entries : 0;
    snprintf(prefix, sizeof prefix, "driver.%s.", driver->manifest.name);
    n_prefix = strlen(prefix);
    o->keys = calloc(o->n_entries + 1, sizeof *o->keys);
    o->values = calloc(o->n_entries + 1, sizeof *o->values);
    if (!o->keys || !o->values)
        return -1;
    o->pub.keys = (const char *const *)o->keys;
    o->pub.values = o->values;
    for (size_t i = 0; i < o->n_entries; i++) {
        const char *entry = entries[i], *equals = entry ? strchr(entry, '=') : NULL;
        if (!equals || strncmp(entry, prefix, n_prefix) != 0)
            continue;
        size_t n = (size_t)(equals - entry);
        char *key = malloc(n + 1);
        if (!key)
            return -1;
        memcpy(key, entry, n);
        key[n] = '\0';
        o->keys[o->pub.count] = key;
        o->values[o->pub.count++] = equals + 1;
    }
    return 0;
}

int32_t ses__host_open_device(const ses_device_t *device, const char *const *options,
                              size_t n_options, ses_drv_device_t **out_handle) {
    const struct ses_driver *driver = device->driver;
    const ses_drv_api_t *api = driver->api;
    host_options_t o;
    int32_t rc;

    *out_handle = NULL;
    if (driver->abi_minor < 5 ||
        api->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_api_t, open_device_with_options) ||
        !api->open_device_with_options)
        return api->open_device(driver->instance, device->ordinal, out_handle);
    if (options_make(&o, driver, options, n_options) != 0) {
        options_free(&o);
        return host_error(NULL, SES_DRV_OUT_OF_MEMORY, "out of memory");
    }
    rc = api->open_device_with_options(driver->instance, device->ordinal, &o.pub, out_handle);
    options_free(&o);
    return rc;
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
