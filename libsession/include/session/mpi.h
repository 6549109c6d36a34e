/*
 * libsession-mpi: distributed sessions on MPI (Open MPI or MPICH; started by mpirun, srun, ...).
 * Link `pkg-config --libs session-mpi`. A distributed session is a session whose communicator
 * is the job's MPI_COMM_WORLD: its variables are broadcast from the chief (rank 0) when it
 * opens, and the AllReduce ops of ses_minimize_distributed average gradients over every rank
 * (every training rank, when the last rank is set apart as the evaluator).
 * Failure of a rank ends the job (MPI's rule); recover by restarting from the last checkpoint,
 * which only the chief writes.
 */
#ifndef SESSION_MPI_H
#define SESSION_MPI_H

#include <session/session.h>
#include <session/task.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ses_mpi ses_mpi_t;

/**
 * Initializes MPI (unless the program did; then it is left to the program to finalize) and
 * reads this process's task (launcher "mpi"): rank and size of MPI_COMM_WORLD, local rank among
 * the ranks of this machine, then ses_task_spec_apply_env: shard = rank of size unless
 * SESSION_SHARD_INDEX / SESSION_SHARD_COUNT say, and SESSION_EVALUATOR=1 sets the last rank
 * apart as ses_mpi_use_last_as_evaluator does. A bad value of these is SES_INVALID_ARGUMENT
 * naming it.
 */
SES_API ses_status_t ses_mpi_init(int *argc, char ***argv, ses_mpi_t **out_mpi);
/** Finalizes MPI if ses_mpi_init initialized it, and frees @p mpi. Accepts NULL. */
SES_API void ses_mpi_finalize(ses_mpi_t *mpi);

SES_API const ses_task_spec_t *ses_mpi_task(const ses_mpi_t *mpi);
/**
 * The communicator for ses_session_set_communicator (valid until ses_mpi_finalize): over the
 * training ranks; NULL on the evaluator (its sessions run alone).
 */
SES_API const ses_communicator_t *ses_mpi_communicator(const ses_mpi_t *mpi);

/**
 * Sets the last rank apart as the job's evaluator, as TensorLayer's
 * use_last_worker_as_evaluator() does: collective over MPI_COMM_WORLD, every rank calls it
 * (ses_mpi_init does when SESSION_EVALUATOR=1; calling it again does nothing). Afterwards
 * ses_mpi_task(mpi)->is_evaluator says which rank this is (ses_task_spec_use_last_as_evaluator).
 *
 * The training ranks (0 .. size-2, ses_task_workers) have a communicator of their own (an MPI
 * sub-communicator): the AllReduce of ses_minimize_distributed averages over them only, and
 * ses_mpi_any, ses_mpi_allreduce_sum and ses_mpi_broadcast_variables involve them only. The
 * evaluator does not train: it restores the chief's checkpoints as they appear and evaluates
 * them, polling ses_mpi_training_ended to know when to stop. On it ses_mpi_allreduce_sum fails
 * with SES_FAILED_PRECONDITION, ses_mpi_any returns its own flag, and ses_mpi_session_open and
 * ses_mpi_broadcast_variables only initialize its variables.
 * SES_INVALID_ARGUMENT with fewer than 2 ranks; SES_UNAVAILABLE when MPI fails.
 */
SES_API ses_status_t ses_mpi_use_last_as_evaluator(ses_mpi_t *mpi);

/**
 * On a training rank: says that this rank has finished training. Returns once every training
 * rank has said so (the evaluator is not waited for); ses_mpi_finalize says it for a rank that
 * did not. Does nothing without an evaluator. SES_FAILED_PRECONDITION on the evaluator.
 */
SES_API ses_status_t ses_mpi_end_training(ses_mpi_t *mpi);

/**
 * On the evaluator: 1 once every training rank has called ses_mpi_end_training (or
 * ses_mpi_finalize), else 0; never blocks. Checkpoints saved before that are in the folder by
 * then. 0 on a training rank or without an evaluator.
 */
SES_API int ses_mpi_training_ended(ses_mpi_t *mpi);

/**
 * Opens a session on every rank (as ses_session_open), sets its communicator, initializes its
 * variables and broadcasts the chief's values to every rank: collective, every rank calls it.
 */
SES_API ses_status_t ses_mpi_session_open(ses_mpi_t *mpi, ses_graph_t *graph,
                                          const char *const *devices, size_t n_devices,
                                          const ses_session_options_t *options,
                                          ses_session_t **out_session);
/** Copies every variable of @p s from the chief to every rank (collective). */
SES_API ses_status_t ses_mpi_broadcast_variables(ses_mpi_t *mpi, ses_session_t *s);
/** 1 on every (training) rank when @p flag is non-zero on any (collective): agreeing to stop. */
SES_API int ses_mpi_any(ses_mpi_t *mpi, int flag);
/** Sums @p count values of @p dtype (f32, f64, i32 or i64) over every (training) rank, in place. */
SES_API ses_status_t ses_mpi_allreduce_sum(ses_mpi_t *mpi, void *data, size_t count,
                                           ses_dtype_t dtype);

/* ---- jobs: remote sessions over worker processes ---------------------------------------- */

/** A set of worker processes started by this process (MPI_Comm_spawn). */
typedef struct ses_job ses_job_t;

typedef struct ses_job_options {
    uint32_t struct_size;       /* sizeof(ses_job_options_t), set by ses_job_options_init */
    const char *name;           /* in messages; NULL: "job" */
    uint32_t workers;           /* processes to start, 1 to 4096 (default 1) */
    const char *const *devices; /* devices every worker must have ("cpu", "gpu:0"), checked as
                                   it starts */
    size_t n_devices;
    const char *program;        /* the worker program; NULL: $SESSION_WORKER, else the installed
                                   session-worker */
} ses_job_options_t;

SES_API void ses_job_options_init(ses_job_options_t *options);

/**
 * Starts @p options->workers processes of the worker program (collective over MPI_COMM_SELF:
 * only this process takes part) and waits until each has checked its devices. Workers inherit
 * this process's environment as it was at startup. Fails with SES_INVALID_ARGUMENT for bad
 * options, SES_UNAVAILABLE when MPI cannot start them (MPI's message), or a worker's own status
 * and message ("job \"j\": worker 1: no device gpu:0 ...") when it lacks a device.
 */
SES_API ses_status_t ses_mpi_job_create(ses_mpi_t *mpi, const ses_job_options_t *options,
                                        ses_job_t **out_job);

/**
 * Opens a remote session (<session/remote.h>) on the job's workers: @p devices may name
 * "/task:K/<device>" for worker K. On success the session owns the job: closing the session
 * ends it (the workers exit). On failure the job stays the caller's.
 */
SES_API ses_status_t ses_mpi_job_session_open(ses_job_t *job, ses_graph_t *graph,
                                              const char *const *devices, size_t n_devices,
                                              const ses_session_options_t *options,
                                              ses_session_t **out_session);

/** Ends a job that no session owns: its workers exit. Accepts NULL. */
SES_API void ses_mpi_job_destroy(ses_job_t *job);

/**
 * The whole of a worker program (`session-worker` is this and nothing else): initializes MPI,
 * checks the devices named by its arguments, reports to the job, then serves the session's
 * requests until told to exit. Returns the process's exit status.
 */
SES_API int ses_mpi_worker_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_MPI_H */
