/*
 * The strict host the ABI checks give a driver. It behaves like libsession's host, and also
 * records, per thread, whether the driver attached a message before returning an error and
 * whether it called any host service at all (a driver must not when negotiating another major).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

static _Thread_local char tls_message[1024];
static _Thread_local int tls_has_message;
static _Thread_local uint32_t tls_calls;
static atomic_uint log_count;

void ses_conf_host_reset(void) {
    tls_message[0] = '\0';
    tls_has_message = 0;
    tls_calls = 0;
}

const char *ses_conf_host_message(void) {
    return tls_has_message ? tls_message : NULL;
}

uint32_t ses_conf_host_calls(void) {
    return tls_calls;
}

uint32_t ses_conf_host_log_count(void) {
    return atomic_load(&log_count);
}

static void host_log(ses_drv_host_ctx_t *ctx, uint32_t level, const char *message) {
    tls_calls++;
    atomic_fetch_add(&log_count, 1);
    /* Drivers' log lines are kept out of the report; SESSION_LOADER_DEBUG=debug shows them. */
    if (ctx && level <= ctx->log_level && message)
        fprintf(stderr, "[driver log %u] %s\n", level, message);
}

static int32_t host_log_enabled(ses_drv_host_ctx_t *ctx, uint32_t level) {
    tls_calls++;
    return ctx && level <= ctx->log_level;
}

static int32_t host_error(ses_drv_host_ctx_t *ctx, int32_t code, const char *format, ...) {
    va_list ap;

    (void)ctx;
    tls_calls++;
    if (!format) {
        snprintf(tls_message, sizeof tls_message, "(the driver passed a NULL format)");
    } else {
        va_start(ap, format);
        vsnprintf(tls_message, sizeof tls_message, format, ap);
        va_end(ap);
    }
    tls_has_message = 1;
    return code;
}

/* "driver.cpu.threads" → "SESSION_DRIVER_CPU_THREADS". */
static int option_variable(const char *key, char *buffer, size_t size) {
    size_t n = 0;
    const char *prefix = "SESSION_";

    for (; *prefix && n + 1 < size; prefix++)
        buffer[n++] = *prefix;
    for (; *key && n + 1 < size; key++)
        buffer[n++] = *key == '.' ? '_' : (char)toupper((unsigned char)*key);
    buffer[n] = '\0';
    return *key == '\0';
}

static int32_t host_get_option(ses_drv_host_ctx_t *ctx, const char *key, char *buffer,
                               uint64_t buffer_size, uint64_t *out_size) {
    const char *value = NULL;
    char variable[256];
    size_t needed;

    tls_calls++;
    if (!key || !out_size)
        return host_error(ctx, SES_DRV_INVALID_ARGUMENT, "get_option: NULL %s",
                          key ? "out_size" : "key");
    *out_size = 0;
    for (size_t i = 0; ctx && i < ctx->n_options; i++) {
        size_t n = strlen(key);
        if (!strncmp(ctx->options[i], key, n) && ctx->options[i][n] == '=')
            value = ctx->options[i] + n + 1;
    }
    if (!value && option_variable(key, variable, sizeof variable))
        value = secure_getenv(variable);
    if (!value && ctx && ctx->driver)
        value = ses_driver_manifest_option(ctx->driver, key);
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
    tls_calls++;
    return 0;
}

/* open_device_with_options' get: get_option for the context the options were made from. */
static int32_t options_get(const ses_drv_options_t *options, const char *key, char *buffer,
                           uint64_t buffer_size, uint64_t *out_size) {
    const ses_conf_options_arg_t *o = (const ses_conf_options_arg_t *)(const void *)options;

    if (!options)
        return host_error(NULL, SES_DRV_INVALID_ARGUMENT, "options->get: NULL options");
    return host_get_option(o->ctx, key, buffer, buffer_size, out_size);
}

int ses_conf_options_make(ses_conf_options_arg_t *o, ses_drv_host_ctx_t *ctx, const char *name,
                          const char *extra_key, const char *extra_value) {
    char prefix[160];
    size_t n = ctx->n_options + 1;

    snprintf(prefix, sizeof prefix, "driver.%s.", name);
    const size_t n_prefix = strlen(prefix);

    memset(o, 0, sizeof *o);
    o->pub.struct_size = sizeof o->pub;
    o->pub.get = options_get;
    o->ctx = ctx;
    o->keys = calloc(n, sizeof *o->keys);
    o->values = calloc(n, sizeof *o->values);
    if (!o->keys || !o->values)
        return -1;
    o->pub.keys = (const char *const *)o->keys;
    o->pub.values = o->values;
    for (size_t i = 0; i < ctx->n_options; i++) {
        const char *entry = ctx->options[i], *equals = strchr(entry, '=');
        if (!equals || strncmp(entry, prefix, n_prefix) != 0)
            continue;
        if (!(o->keys[o->pub.count] = strndup(entry, (size_t)(equals - entry))))
            return -1;
        o->values[o->pub.count++] = equals + 1;
    }
    if (extra_key) {
        if (!(o->keys[o->pub.count] = strdup(extra_key)))
            return -1;
        o->values[o->pub.count++] = extra_value;
    }
    return 0;
}

void ses_conf_options_free(ses_conf_options_arg_t *o) {
    for (uint32_t i = 0; i < o->pub.count; i++)
        free(o->keys[i]);
    free(o->keys);
    free(o->values);
}

const ses_drv_host_t ses_conf_host = {
    .struct_size = sizeof(ses_drv_host_t),
    .log = host_log,
    .log_enabled = host_log_enabled,
    .error = host_error,
    .get_option = host_get_option,
    .should_abort = host_should_abort,
};
