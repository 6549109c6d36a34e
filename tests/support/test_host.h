/*
 * A stand-in for libsession's host services, for tests that drive a driver through the ABI
 * directly (dlopen + ses_drv_negotiate) without libsession. Its error entry keeps the last
 * formatted message and code so tests can check what a driver said; the rest do nothing.
 * Include it in one .c file; it defines static functions and the table `test_host`.
 */
#ifndef SES_TEST_HOST_H
#define SES_TEST_HOST_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

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

#endif /* SES_TEST_HOST_H */
