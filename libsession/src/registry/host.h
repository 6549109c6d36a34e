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
#include <session/registry.h>

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
 * Opens @p device for a session whose options are @p options ("key=value" strings): through
 * open_device_with_options when the driver chose ABI minor 5 and sets it (DRV-87), the options
 * of that driver passed in; else through open_device, whose host->get_option sees them on this
 * thread only (ses__host_set_session_options). Returns the driver's code; a message it attached
 * is taken with ses__host_take_message.
 */
int32_t ses__host_open_device(const ses_device_t *device, const char *const *options,
                              size_t n_options, ses_drv_device_t **out_handle);

/**
 * Makes host->should_abort on the calling thread read @p flag (NULL: never abort). Sessions set
 * it around the kernels of a cancellable eval.
 */
void ses__host_set_abort_flag(const volatile int *flag);

#endif /* SES_REGISTRY_HOST_H */
