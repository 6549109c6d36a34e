/*
 * A stand-in for libsession's host services, for tests that drive a driver through the ABI
 * directly (dlopen + ses_drv_negotiate) without libsession. Its error entry keeps the last
 * formatted message and code so tests can check what a driver said; the rest do nothing.
 * Include it in one .c file; it defines static functions and the table `test_host`.
 */
#ifndef SES_TEST_HOST_H
#define SES_TEST_HOST_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <session/driver.h>

/* What the host side remembers of the driver's error reports. */
struct ses_drv_host_ctx {
    char message[1024]; /* the last message */
    int32_t code;       /* the last code */
    int calls;          /* how many errors were reported */
};

static void test_host_log(ses_drv_host_ctx_t *ctx, uint32_t level, const char *message) {
    (void)ctx;
    (void)level;
    (void)message;
}

static int32_t test_host_log_enabled(ses_drv_host_ctx_t *ctx, uint32_t level) {
    (void)ctx;
    (void)level;
    return 0;
}

__attribute__((format(printf, 3, 4))) static int32_t test_host_error(ses_drv_host_ctx_t *ctx,
                                                                     int32_t code,
                                                                     const char *format, ...) {
    va_list ap;

    va_start(ap, format);
    vsnprintf(ctx->message, sizeof ctx->message, format, ap);
    va_end(ap);
    ctx->code = code;
    ctx->calls++;
    return code;
}

static int32_t test_host_get_option(ses_drv_host_ctx_t *ctx, const char *key, char *buffer,
                                    uint64_t buffer_size, uint64_t *out_size) {
    (void)ctx;
    (void)key;
    (void)buffer;
    (void)buffer_size;
    if (out_size)
        *out_size = 0;
    return SES_DRV_NOT_FOUND;
}

/* How a host answers get_option with @p value (NULL: not set): its size with the NUL in
 * *@p out_size, and the value copied when @p buffer_size holds it. */
static inline int32_t test_host_answer(const char *value, char *buffer, uint64_t buffer_size,
                                       uint64_t *out_size) {
    if (!value)
        return SES_DRV_NOT_FOUND;
    uint64_t need = strlen(value) + 1;
    *out_size = need;
    if (need > buffer_size)
        return SES_DRV_INVALID_ARGUMENT;
    memcpy(buffer, value, need);
    return SES_DRV_OK;
}

static int32_t test_host_should_abort(ses_drv_host_ctx_t *ctx) {
    (void)ctx;
    return 0;
}

static const ses_drv_host_t test_host = {
    .struct_size = sizeof(ses_drv_host_t),
    .log = test_host_log,
    .log_enabled = test_host_log_enabled,
    .error = test_host_error,
    .get_option = test_host_get_option,
    .should_abort = test_host_should_abort,
};

/* A driver module loaded as libsession's loader loads one: dlopen, ses_drv_negotiate for this
 * ABI, open, and its device 0 opened. */
typedef struct test_driver {
    void *lib;
    ses_drv_negotiate_fn negotiate;
    const ses_drv_api_t *api;
    ses_drv_driver_t *driver;
    ses_drv_device_t *device;
} test_driver_t;

/* Closes what test_driver_open opened, in reverse; accepts a partly opened @p d. */
static inline void test_driver_close(test_driver_t *d) {
    if (d->api && d->device)
        d->api->close_device(d->device);
    if (d->api && d->driver)
        d->api->close(d->driver);
    if (d->lib)
        dlclose(d->lib);
    memset(d, 0, sizeof *d);
}

/* Opens the driver at @p path through @p host, whose context is @p ctx: 0, or -1 with the reason
 * printed to stderr and nothing left open. */
static inline int test_driver_open(test_driver_t *d, const char *path, const ses_drv_host_t *host,
                                   ses_drv_host_ctx_t *ctx) {
    ses_drv_negotiate_t args;
    const char *step = "negotiate";

    memset(d, 0, sizeof *d);
    d->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!d->lib) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return -1;
    }
    /* POSIX allows converting dlsym's void * to a function pointer; ISO C does not, hence the
     * memcpy, which -Wpedantic accepts. */
    void *sym = dlsym(d->lib, SES_DRV_NEGOTIATE_SYMBOL);
    if (!sym) {
        fprintf(stderr, "%s has no %s\n", path, SES_DRV_NEGOTIATE_SYMBOL);
        test_driver_close(d);
        return -1;
    }
    memcpy(&d->negotiate, &sym, sizeof d->negotiate);
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.abi_major = SES_DRV_ABI_MAJOR;
    args.host_minor_min = 0;
    args.host_minor_max = SES_DRV_ABI_MINOR;
    args.host = host;
    args.host_ctx = ctx;
    if (d->negotiate(&args) == SES_DRV_OK) {
        d->api = args.api;
        step = "open";
        if (d->api->open(host, ctx, &d->driver) == SES_DRV_OK) {
            step = "open_device";
            if (d->api->open_device(d->driver, 0, &d->device) == SES_DRV_OK)
                return 0;
        }
    }
    fprintf(stderr, "%s: %s failed: %s\n", path, step, ctx->message);
    test_driver_close(d);
    return -1;
}

#endif /* SES_TEST_HOST_H */
