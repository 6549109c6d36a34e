/* Internal logging to stderr, filtered by SESSION_LOADER_DEBUG (error|warn|info|debug). */
#ifndef SES_LOG_H
#define SES_LOG_H

#include <stdint.h>

/* Levels, most severe first; equal to the ABI's SES_DRV_LOG_*. */
#define SES__LOG_ERROR 0
#define SES__LOG_WARN 1
#define SES__LOG_INFO 2
#define SES__LOG_DEBUG 3

/** Sets the level at and above which messages are printed. */
void ses__log_set_level(uint32_t level);

/** Parses "error", "warn", "info", "debug" (case-insensitive); returns -1 for anything else. */
int ses__log_parse_level(const char *text);

/** Non-zero when a message at @p level would be printed. */
int ses__log_enabled(uint32_t level);

/** Prints "libsession: <level>: <message>" to stderr when @p level is enabled. */
void ses__log(uint32_t level, const char *format, ...) __attribute__((format(printf, 2, 3)));

#endif /* SES_LOG_H */
