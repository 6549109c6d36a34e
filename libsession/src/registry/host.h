/*
 * The registry's host services (host.c) as the rest of libsession sees them: the message a
 * driver attached to its last error, and the per-thread session options and abort flag that
 * host->get_option and host->should_abort read. This is all that session/, compile/ and exec/
 * need of the registry beyond its public API, so they include this and not
 * registry_internal.h.
 */
#ifndef SES_REGISTRY_HOST_H
#define SES_REGISTRY_HOST_H

#include <stddef.h>

#include <session/driver.h>

/** Host services given to every driver. */
extern const ses_drv_host_t ses__host_services;

/**
 * Takes the message a driver attached with host->error on this thread, if any: copies it into
 * @p buffer and clears it. Returns 1 when there was one, 0 otherwise (buffer then holds "").
 */
int ses__host_take_message(char *buffer, size_t size);

/**
 * Makes host->get_option on the calling thread look first in @p options ("key=value" strings;
 * NULL: none). Sessions set it while their devices open.
 */
void ses__host_set_session_options(const char *const *options, size_t n_options);

/**
 * Makes host->should_abort on the calling thread read @p flag (NULL: never abort). Sessions set
 * it around the kernels of a cancellable eval.
 */
void ses__host_set_abort_flag(const volatile int *flag);

#endif /* SES_REGISTRY_HOST_H */
