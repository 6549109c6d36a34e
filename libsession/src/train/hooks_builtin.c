/*
 * The built-in hooks that need no checkpoint: stop at a step, stop after a time, log the loss
 * (hooks_checkpoint.c has the other two). Each is a ses_hook_t at the start of a private struct,
 * freed by its destroy callback; they use only the public API.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <session/hooks.h>

#include "../error.h"
#include "../log.h"
#include "hooks_internal.h"

double ses__now_seconds(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void *ses__hook_alloc(size_t size, const char *name, void (*destroy)(ses_hook_t *h)) {
    ses_hook_t *h = ses__calloc(1, size);

    if (!h)
        return NULL;
    ses_hook_init(h);
    h->name = name;
    h->destroy = destroy;
    return h;
}

static void free_hook(ses_hook_t *h) {
    free(h);
}

/* ---- stop at step ----------------------------------------------------------------------- */

typedef struct stop_at_step {
    ses_hook_t hook;
    uint64_t last_step;
} stop_at_step_t;

static ses_status_t stop_at_step_check(ses_hook_t *h, ses_monitored_t *m) {
    if (ses_monitored_step(m) >= ((stop_at_step_t *)h)->last_step)
        ses_monitored_request_stop(m);
    return SES_OK;
}

static ses_status_t stop_at_step_after_create(ses_hook_t *h, ses_monitored_t *m,
                                              ses_session_t *s) {
    (void)s;
    return stop_at_step_check(h, m);
}

static ses_status_t stop_at_step_after_run(ses_hook_t *h, ses_monitored_t *m,
                                           const ses_run_args_t *args) {
    (void)args;
    return stop_at_step_check(h, m);
}

ses_status_t ses_hook_stop_at_step(uint64_t last_step, ses_hook_t **out_hook) {
    stop_at_step_t *hook;

    if (!out_hook)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_hook is NULL", __func__);
    *out_hook = NULL;
    hook = ses__hook_alloc(sizeof *hook, "stop_at_step", free_hook);
    if (!hook)
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", __func__);
    hook->last_step = last_step;
    hook->hook.after_create = stop_at_step_after_create;
    hook->hook.after_run = stop_at_step_after_run;
    *out_hook = &hook->hook;
    return SES_OK;
}

/* ---- stop at time ----------------------------------------------------------------------- */

typedef struct stop_at_time {
    ses_hook_t hook;
    double seconds;
    double start;
} stop_at_time_t;

static ses_status_t stop_at_time_begin(ses_hook_t *h, ses_monitored_t *m) {
    (void)m;
    ((stop_at_time_t *)h)->start = ses__now_seconds();
    return SES_OK;
}

static ses_status_t stop_at_time_after_run(ses_hook_t *h, ses_monitored_t *m,
                                           const ses_run_args_t *args) {
    const stop_at_time_t *hook = (const stop_at_time_t *)h;

    (void)args;
    if (ses__now_seconds() - hook->start >= hook->seconds)
        ses_monitored_request_stop(m);
    return SES_OK;
}

ses_status_t ses_hook_stop_at_time(double seconds, ses_hook_t **out_hook) {
    stop_at_time_t *hook;

    if (!out_hook)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_hook is NULL", __func__);
    *out_hook = NULL;
    if (!(seconds >= 0) || isinf(seconds))
        return ses__fail(SES_INVALID_ARGUMENT, "%s: seconds is %g; it must be finite and >= 0",
                         __func__, seconds);
    hook = ses__hook_alloc(sizeof *hook, "stop_at_time", free_hook);
    if (!hook)
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", __func__);
    hook->seconds = seconds;
    hook->hook.begin = stop_at_time_begin;
    hook->hook.after_run = stop_at_time_after_run;
    *out_hook = &hook->hook;
    return SES_OK;
}

/* ---- step logger ------------------------------------------------------------------------ */

typedef struct logger {
    ses_hook_t hook;
    uint64_t every_steps;
    ses_edge_t loss;
    FILE *out;
    int logging;       /* this run prints a line */
    size_t loss_index; /* the loss's fetch index in this run */
    uint64_t last_step;
    double last_time;
} logger_t;

static float bits_to_float(uint32_t bits) {
    float f;

    memcpy(&f, &bits, sizeof f);
    return f;
}

/* IEEE half to float, without libm: normal numbers by rebiasing the exponent. */
static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;

    if (exponent == 0) /* zero or subnormal: mantissa * 2^-24 */
        return bits_to_float(sign) + (sign ? -1.0f : 1.0f) * (float)mantissa * 0x1p-24f;
    if (exponent == 31)
        return bits_to_float(sign | 0x7f800000u | (mantissa << 13));
    return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/* Element @p i of @p data as a double; 0 for a dtype that is not a number. */
static double element(ses_dtype_t dtype, const void *data, size_t i) {
    switch (dtype) {
    case SES_F32: return ((const float *)data)[i];
    case SES_F64: return ((const double *)data)[i];
    case SES_F16: return half_to_float(((const uint16_t *)data)[i]);
    case SES_BF16: return bits_to_float((uint32_t)((const uint16_t *)data)[i] << 16);
    case SES_I8: return ((const int8_t *)data)[i];
    case SES_I16: return ((const int16_t *)data)[i];
    case SES_I32: return ((const int32_t *)data)[i];
    case SES_I64: return (double)((const int64_t *)data)[i];
    case SES_U8: return ((const uint8_t *)data)[i];
    case SES_U16: return ((const uint16_t *)data)[i];
    case SES_U32: return ((const uint32_t *)data)[i];
    case SES_U64: return (double)((const uint64_t *)data)[i];
    case SES_BOOL: return ((const uint8_t *)data)[i] != 0;
    default: return 0;
    }
}

static ses_status_t logger_after_create(ses_hook_t *h, ses_monitored_t *m, ses_session_t *s) {
    logger_t *hook = (logger_t *)h;

    (void)s;
    hook->last_step = ses_monitored_step(m);
    hook->last_time = ses__now_seconds();
    return SES_OK;
}

static ses_status_t logger_before_run(ses_hook_t *h, ses_monitored_t *m, ses_run_args_t *args) {
    logger_t *hook = (logger_t *)h;

    hook->logging = (ses_monitored_step(m) + 1) % hook->every_steps == 0;
    if (!hook->logging || !hook->loss.node)
        return SES_OK;
    return ses_run_args_add_fetch(args, hook->loss, &hook->loss_index);
}

static ses_status_t logger_after_run(ses_hook_t *h, ses_monitored_t *m,
                                     const ses_run_args_t *args) {
    logger_t *hook = (logger_t *)h;
    uint64_t step = ses_monitored_step(m);
    double now = ses__now_seconds(), elapsed = now - hook->last_time, rate = 0;
    char loss[64] = "";
    int written;

    if (!hook->logging)
        return SES_OK;
    hook->logging = 0;
    if (hook->loss.node) {
        ses_tensor_t *value = ses_run_args_value(args, hook->loss_index);
        const void *data = value ? ses_tensor_data(value) : NULL;
        size_t count = value ? ses_tensor_count(value) : 0;
        double sum = 0;

        if (!data && count)
            return ses__fail(SES_FAILED_PRECONDITION,
                             "the loss \"%s:%u\" is not on the host (on %s)",
                             ses_node_name(hook->loss.node), hook->loss.index,
                             value ? ses_tensor_device(value) : "nothing");
        for (size_t i = 0; i < count; i++)
            sum += element(ses_tensor_dtype(value), data, i);
        snprintf(loss, sizeof loss, ": loss %g", count ? sum / (double)count : NAN);
    }
    if (step > hook->last_step && elapsed > 0)
        rate = (double)(step - hook->last_step) / elapsed;
    written = fprintf(hook->out ? hook->out : stderr, "step %" PRIu64 "%s (%.1f steps/s)\n", step,
                      loss, rate);
    fflush(hook->out ? hook->out : stderr);
    hook->last_step = step;
    hook->last_time = now;
    if (written < 0)
        return ses__fail(SES_UNAVAILABLE, "cannot write the log line of step %" PRIu64, step);
    return SES_OK;
}

ses_status_t ses_hook_step_logger(uint64_t every_steps, ses_edge_t loss, FILE *out,
                                  ses_hook_t **out_hook) {
    logger_t *hook;

    if (!out_hook)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_hook is NULL", __func__);
    *out_hook = NULL;
    if (!every_steps)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: every_steps is 0; it must be at least 1",
                         __func__);
    hook = ses__hook_alloc(sizeof *hook, "step_logger", free_hook);
    if (!hook)
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", __func__);
    hook->every_steps = every_steps;
    hook->loss = loss;
    hook->out = out;
    hook->hook.after_create = logger_after_create;
    hook->hook.before_run = logger_before_run;
    hook->hook.after_run = logger_after_run;
    *out_hook = &hook->hook;
    return SES_OK;
}
