/* Logging to stderr. The level is process-wide because stderr is. */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <strings.h>

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/* Warnings are shown by default: a driver that fails to load must never fail silently. */
static atomic_uint current_level = SES__LOG_WARN;

void ses__log_set_level(uint32_t level) {
    atomic_store(&current_level, level > SES__LOG_DEBUG ? SES__LOG_DEBUG : level);
}

int ses__log_parse_level(const char *text) {
    for (int i = 0; i < 4; i++)
        if (text && strcasecmp(text, level_names[i]) == 0)
            return i;
    return -1;
}

int ses__log_enabled(uint32_t level) {
    return level <= atomic_load(&current_level);
}

void ses__log(uint32_t level, const char *format, ...) {
    char line[2048];
    va_list ap;

    if (!ses__log_enabled(level))
        return;
    va_start(ap, format);
    vsnprintf(line, sizeof line, format, ap);
    va_end(ap);
    /* One fprintf per line keeps lines from concurrent threads whole. */
    fprintf(stderr, "libsession: %s: %s\n", level_names[level > 3 ? 3 : level], line);
}
