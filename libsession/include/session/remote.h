/*
 * Remote sessions: one session whose graph runs across worker processes.
 *
 * A node asks for a worker's device with ses_node_set_device(node, "/task:K/gpu:0"). The session
 * ships the graph to every worker once (again after the graph changes); each worker opens a
 * session of its own on its devices, and its variables live there. An eval is cut into segments,
 * each a run of nodes of one task that are ready together; the segments run in order, and every
 * value that crosses from one task to another goes through this process. Nodes that ask for no
 * device run with the consumers they share a task with (a variable's initializer with its
 * variable), else on the task of the session's first device.
 *
 * The transport is the caller's: libsession-mpi's jobs (ses_mpi_job_create in <session/mpi.h>)
 * spawn `session-worker` processes with MPI_Comm_spawn and carry the messages over MPI; a test
 * may carry them within one process. Thread-safety: evals of one remote session are serialized.
 */
#ifndef SESSION_REMOTE_H
#define SESSION_REMOTE_H

#include <session/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How the session reaches its workers. Copied by ses_remote_session_open. */
typedef struct ses_remote_transport {
    uint32_t struct_size; /* sizeof(ses_remote_transport_t) */
    uint32_t n_tasks;     /* workers, "/task:0" to "/task:<n_tasks - 1>" */
    void *user;
    /**
     * Delivers @p request to worker @p task (its ses_remote_worker_handle) and returns the reply
     * in a buffer from malloc (the session frees it). A failure to deliver is a status with a
     * message (ses_set_error); the session then reports itself closed.
     */
    ses_status_t (*call)(void *user, uint32_t task, const void *request, size_t request_bytes,
                         void **out_reply, size_t *out_reply_bytes);
    /** Called once, when the session closes, after every worker was told to exit; may be NULL. */
    void (*close)(void *user);
} ses_remote_transport_t;

/**
 * Opens a session on @p graph across the workers of @p transport. @p devices lists devices in
 * priority order, each a local name ("cpu", "gpu:0") or a worker's ("/task:1/gpu:0"); a worker's
 * session gets its own names in that order, then the devices its nodes ask for. Fails with
 * SES_INVALID_ARGUMENT for a malformed "/task:" name or a task the transport does not have
 * (naming it), and with a worker's own status and message ("task 1: ...") when a worker cannot
 * open its session. ses_session_eval works as on a local session, except private scopes;
 * ses_session_compile is SES_UNIMPLEMENTED. Closing the session tells every worker to exit and
 * then calls transport->close.
 */
SES_API ses_status_t ses_remote_session_open(ses_graph_t *graph,
                                             const ses_remote_transport_t *transport,
                                             const char *const *devices, size_t n_devices,
                                             const ses_session_options_t *options,
                                             ses_session_t **out_session);

/** The worker end: what a `session-worker` process runs for each request it receives. */
typedef struct ses_remote_worker ses_remote_worker_t;

SES_API ses_status_t ses_remote_worker_create(ses_remote_worker_t **out_worker);
/**
 * Handles one request and gives the reply to send back (from malloc; the caller frees it).
 * Errors of the request itself travel in the reply; the status is not SES_OK only when no reply
 * could be made (out of memory). @p out_exit is set to 1 when the session said goodbye.
 */
SES_API ses_status_t ses_remote_worker_handle(ses_remote_worker_t *worker, const void *request,
                                              size_t request_bytes, void **out_reply,
                                              size_t *out_reply_bytes, int *out_exit);
/** Closes the worker's session and frees it. Accepts NULL. */
SES_API void ses_remote_worker_destroy(ses_remote_worker_t *worker);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_REMOTE_H */
