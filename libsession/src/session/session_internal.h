/*
 * The session as compile/, exec/ and distributed/ see it: its struct, and the helpers they call
 * back into it with (evals in flight, its log, a lost device) -- all defined in
 * session_state.c, which calls nothing above it, so that imports flow one way: session.c ->
 * compile/ -> exec/ -> drivers, and distributed/ -> session.c. A remote session reaches
 * distributed/remote.c only through the hooks remote.c installs.
 */
#ifndef SES_SESSION_INTERNAL_H
#define SES_SESSION_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <session/driver.h>
#include <session/session.h>

#include "../registry/host.h"

/* One device a session runs on. */
typedef struct ses__device_ctx {
    const ses_device_t *device;
    struct ses_driver *driver;
    const ses_drv_api_t *api;
    ses_drv_device_t *handle;
    const ses_drv_kernel_t *kernels;
    uint32_t n_kernels;
    uint32_t kernel_stride;
    int host_visible; /* buffers are host memory reachable through map */
    int can_import;   /* import_host_ptr works: external host tensors need no copy */
    int streams;      /* plans enqueue this device's kernels on a stream of their own */
    int graphs;       /* ABI 1.1 graph entries: runs of kernels are captured and replayed */
    int native;       /* ABI 1.2 buffer_native and import_native (DLPack of device tensors) */
    uint32_t abi_minor; /* the minor its driver chose: optional entries of later minors */
} ses__device_ctx_t;

typedef struct ses__device_home ses__device_home_t;

struct ses_session {
    ses_graph_t *graph;
    ses_registry_t *registry;
    ses_session_options_t options; /* driver_options points at the copies below */
    char **driver_options;         /* "key=value", owned; threads becomes driver.cpu.threads */
    size_t n_driver_options;
    ses__device_ctx_t *devices; /* priority order; the CPU device last */
    size_t n_devices;
    ses_scope_t *scope;
    pthread_mutex_t lock;
    pthread_cond_t idle;
    int closed;
    size_t in_flight;
    /* Non-empty once a device is lost (DRV-81): "device D (driver N) was lost"; new evals are
     * refused with SES_UNAVAILABLE, as after a close. Guarded by lock. */
    char lost[256];
    struct ses_plan **plans;
    size_t n_plans;
    atomic_uint_fast64_t kernel_calls;
    atomic_uint_fast64_t graph_captures;
    atomic_uint_fast64_t graph_launches;
    /* ses_session_transfers: runs, then h2d, d2h, d2d bytes and copies (ses__count_transfer). */
    atomic_uint_fast64_t transfers[7];
    ses_communicator_t comm; /* comm.allreduce_sum NULL: a job of one process */
    /* A remote session (distributed/remote.c installs both): its workers, and the hooks evals
     * and close go through; NULL for a local session. */
    struct ses__remote *remote;
    const struct ses__remote_hooks *remote_hooks;
    /* Constants uploaded to devices (exec/resident.c), freed at close; guarded by
     * resident_lock. */
    struct ses__resident *resident;
    size_t n_resident;
    struct ses__resident_var **resident_vars; /* variables on devices, same file and lock */
    size_t n_resident_vars;
    pthread_mutex_t resident_lock;
    /* Device tensors' side of the session (session/device_tensor.c): shared with them, so they
     * may outlive it; close frees their buffers. */
    ses__device_home_t *home;
};



/* What a remote session's evals and close go through (distributed/remote.c). */
typedef struct ses__remote_hooks {
    /* Runs an eval across the job: this process's segments with ses__session_eval_local. */
    ses_status_t (*eval)(ses_session_t *s, const ses_edge_t *fetches, size_t n_fetches,
                         const ses_feed_t *feeds, size_t n_feeds, ses_node_t *const *targets,
                         size_t n_targets, ses_tensor_t **out_values);
    /* Says goodbye to the workers (they exit); then free releases the rest. */
    void (*close)(struct ses__remote *r);
    void (*free)(struct ses__remote *r);
} ses__remote_hooks_t;

/* An eval in this process alone (session.c): what a remote session's segments run with. */
ses_status_t ses__session_eval_local(ses_session_t *s, const ses_edge_t *fetches,
                                     size_t n_fetches, const ses_feed_t *feeds, size_t n_feeds,
                                     ses_node_t *const *targets, size_t n_targets,
                                     ses_tensor_t **out_values);

/* ---- session_state.c -------------------------------------------------------------------- */

/**
 * Counts a call in flight on @p s (close waits for it), or fails with FAILED_PRECONDITION naming
 * @p what when the session is closed or lost. Pair with ses__session_leave.
 */
ses_status_t ses__session_enter(ses_session_t *s, const char *what);
void ses__session_leave(ses_session_t *s);

/** Prints "libsession: <level>: ..." when @p level is within the session's log_level. */
void ses__session_log(const ses_session_t *s, uint32_t level, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Device @p d of @p s answered SES_DRV_UNAVAILABLE to work (DRV-81): marks the session lost, so
 * later evals fail with SES_UNAVAILABLE. Thread-safe. */
void ses__session_device_lost(ses_session_t *s, size_t d);
/* Copies the lost-device sentence into @p buf and returns 1 if a device of @p s was lost. */
int ses__session_lost(ses_session_t *s, char *buf, size_t size);

#endif /* SES_SESSION_INTERNAL_H */
