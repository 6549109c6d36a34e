/*
 * A session's state that compile/, exec/ and distributed/ call back into: evals in flight (close
 * waits for them), its log, and a lost device (DRV-81). Calls nothing above it: imports flow
 * one way (session_internal.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "../error.h"
#include "session_internal.h"

/* ---- evals in flight --------------------------------------------------------------------- */

ses_status_t ses__session_enter(ses_session_t *s, const char *what) {
    pthread_mutex_lock(&s->lock);
    if (s->closed) {
        pthread_mutex_unlock(&s->lock);
        return ses__fail(SES_FAILED_PRECONDITION, "%s: the session is closed", what);
    }
    if (s->lost[0]) {
        ses_status_t st = ses__fail(SES_UNAVAILABLE,
                                    "%s: the session is closed: %s; close it and open a new one",
                                    what, s->lost);
        pthread_mutex_unlock(&s->lock);
        return st;
    }
    s->in_flight++;
    pthread_mutex_unlock(&s->lock);
    return SES_OK;
}

void ses__session_leave(ses_session_t *s) {
    pthread_mutex_lock(&s->lock);
    if (--s->in_flight == 0)
        pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
}

/* ---- log and lost devices ---------------------------------------------------------------- */

void ses__session_log(const ses_session_t *s, uint32_t level, const char *format, ...) {
    static const char *const names[] = {"error", "warn", "info", "debug"};
    char line[4096];
    va_list ap;

    if (level > s->options.log_level)
        return;
    va_start(ap, format);
    vsnprintf(line, sizeof line, format, ap);
    va_end(ap);
    fprintf(stderr, "libsession: %s: %s\n", names[level > 3 ? 3 : level], line);
}

void ses__session_device_lost(ses_session_t *s, size_t d) {
    const ses_device_t *dev = s->devices[d].device;

    pthread_mutex_lock(&s->lock);
    if (!s->lost[0])
        snprintf(s->lost, sizeof s->lost, "device %s (driver %s) was lost", ses_device_name(dev),
                 ses_driver_name(ses_device_driver(dev)));
    pthread_mutex_unlock(&s->lock);
}

int ses__session_lost(ses_session_t *s, char *buf, size_t size) {
    int lost;

    pthread_mutex_lock(&s->lock);
    lost = s->lost[0] != 0;
    if (lost && size)
        snprintf(buf, size, "%s", s->lost);
    pthread_mutex_unlock(&s->lock);
    return lost;
}
