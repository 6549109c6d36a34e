/*
 * libsession-mpi jobs: worker processes started with MPI_Comm_spawn, carrying a remote
 * session's messages (<session/remote.h>) over the intercommunicator. A message is its length
 * (8 bytes) and then its bytes in pieces of at most 1 GiB (MPI counts are int).
 */
#include <session/mpi.h>
#include <session/remote.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SES_WORKER_PATH
#define SES_WORKER_PATH "session-worker"
#endif

#define TAG_MESSAGE 7301
#define PIECE ((size_t)1 << 30)

struct ses_job {
    char *name;
    uint32_t workers;
    MPI_Comm inter; /* this process and the workers; MPI_COMM_NULL once ended */
    int said_goodbye; /* the session told the workers to exit */
};

static ses_status_t job_fail(const char *name, int code, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    MPI_Error_string(code, text, &len);
    return ses_set_error(SES_UNAVAILABLE, "job \"%s\": MPI: %s failed: %.*s", name, what, len,
                         text);
}

static int send_message(MPI_Comm comm, int to, const void *data, size_t bytes) {
    unsigned long long length = bytes;
    int rc = MPI_Send(&length, 1, MPI_UNSIGNED_LONG_LONG, to, TAG_MESSAGE, comm);

    for (size_t done = 0; done < bytes && rc == MPI_SUCCESS;) {
        size_t piece = bytes - done < PIECE ? bytes - done : PIECE;
        rc = MPI_Send((const char *)data + done, (int)piece, MPI_BYTE, to, TAG_MESSAGE, comm);
        done += piece;
    }
    return rc;
}

/* Receives a message into a new buffer (*out_data, from malloc). */
static int receive_message(MPI_Comm comm, int from, void **out_data, size_t *out_bytes) {
    unsigned long long length = 0;
    char *data;
    int rc = MPI_Recv(&length, 1, MPI_UNSIGNED_LONG_LONG, from, TAG_MESSAGE, comm,
                      MPI_STATUS_IGNORE);

    *out_data = NULL;
    *out_bytes = 0;
    if (rc != MPI_SUCCESS)
        return rc;
    if (length > SIZE_MAX - 1 || !(data = malloc((size_t)length + 1)))
        return MPI_ERR_NO_MEM;
    for (size_t done = 0; done < length && rc == MPI_SUCCESS;) {
        size_t piece = (size_t)length - done < PIECE ? (size_t)length - done : PIECE;
        rc = MPI_Recv(data + done, (int)piece, MPI_BYTE, from, TAG_MESSAGE, comm,
                      MPI_STATUS_IGNORE);
        done += piece;
    }
    if (rc != MPI_SUCCESS) {
        free(data);
        return rc;
    }
    *out_data = data;
    *out_bytes = (size_t)length;
    return MPI_SUCCESS;
}

void ses_job_options_init(ses_job_options_t *o) {
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->workers = 1;
}

static void job_end(ses_job_t *job) {
    if (job->inter != MPI_COMM_NULL)
        MPI_Comm_disconnect(&job->inter);
    job->inter = MPI_COMM_NULL;
}

void ses_mpi_job_destroy(ses_job_t *job) {
    if (!job)
        return;
    if (job->inter != MPI_COMM_NULL && !job->said_goodbye) {
        /* A job never given to a session: say goodbye ourselves. */
        const uint32_t goodbye[1] = {3};
        for (uint32_t k = 0; k < job->workers; k++) {
            void *reply = NULL;
            size_t bytes;
            if (send_message(job->inter, (int)k, goodbye, sizeof goodbye) == MPI_SUCCESS)
                receive_message(job->inter, (int)k, &reply, &bytes);
            free(reply);
        }
    }
    job_end(job);
    free(job->name);
    free(job);
}

ses_status_t ses_mpi_job_create(ses_mpi_t *mpi, const ses_job_options_t *o,
                                ses_job_t **out_job) {
    ses_job_t *job = NULL;
    const char *program;
    char **argv = NULL;
    int *codes = NULL, rc;
    ses_status_t st = SES_OK;

    if (!out_job)
        return ses_set_error(SES_INVALID_ARGUMENT, "ses_mpi_job_create: out_job is NULL");
    *out_job = NULL;
    if (!mpi || !o)
        return ses_set_error(SES_INVALID_ARGUMENT, "ses_mpi_job_create: NULL %s",
                             !mpi ? "mpi" : "options");
    if (o->struct_size < sizeof *o)
        return ses_set_error(SES_INVALID_ARGUMENT,
                             "ses_mpi_job_create: options.struct_size is %u; call "
                             "ses_job_options_init first",
                             o->struct_size);
    if (o->workers < 1 || o->workers > 4096)
        return ses_set_error(SES_INVALID_ARGUMENT,
                             "ses_mpi_job_create: %u workers; from 1 to 4096", o->workers);
    if (o->n_devices && !o->devices)
        return ses_set_error(SES_INVALID_ARGUMENT,
                             "ses_mpi_job_create: devices is NULL with %zu names", o->n_devices);
    for (size_t i = 0; i < o->n_devices; i++)
        if (!o->devices[i] || !*o->devices[i] || strncmp(o->devices[i], "/task:", 6) == 0)
            return ses_set_error(SES_INVALID_ARGUMENT,
                                 "ses_mpi_job_create: device %zu is %s; name a worker's own "
                                 "device (\"cpu\", \"gpu:0\")",
                                 i, o->devices[i] ? "\"/task:...\"" : "NULL or empty");
    program = o->program ? o->program : getenv("SESSION_WORKER");
    if (!program || !*program)
        program = SES_WORKER_PATH;
    job = calloc(1, sizeof *job);
    argv = calloc(o->n_devices + 1, sizeof *argv);
    codes = calloc(o->workers, sizeof *codes);
    if (!job || !argv || !codes ||
        !(job->name = strdup(o->name && *o->name ? o->name : "job"))) {
        st = ses_set_error(SES_OUT_OF_MEMORY, "ses_mpi_job_create: out of memory");
        goto fail;
    }
    job->workers = o->workers;
    job->inter = MPI_COMM_NULL;
    for (size_t i = 0; i < o->n_devices; i++)
        argv[i] = (char *)o->devices[i];
    rc = MPI_Comm_spawn(program, o->n_devices ? argv : MPI_ARGV_NULL, (int)o->workers,
                        MPI_INFO_NULL, 0, MPI_COMM_SELF, &job->inter, codes);
    if (rc != MPI_SUCCESS) {
        job->inter = MPI_COMM_NULL;
        char what[600];
        snprintf(what, sizeof what, "MPI_Comm_spawn of %s", program);
        st = job_fail(job->name, rc, what);
        goto fail;
    }
    MPI_Comm_set_errhandler(job->inter, MPI_ERRORS_RETURN);
    for (uint32_t k = 0; k < o->workers && st == SES_OK; k++)
        if (codes[k] != MPI_SUCCESS) {
            char what[600];
            snprintf(what, sizeof what, "starting %s as worker %u", program, k);
            st = job_fail(job->name, codes[k], what);
        }
    /* Each worker says whether it has the job's devices (a status and a message). */
    for (uint32_t k = 0; k < o->workers; k++) {
        void *hello = NULL;
        size_t bytes = 0;
        rc = receive_message(job->inter, (int)k, &hello, &bytes);
        if (rc != MPI_SUCCESS && st == SES_OK)
            st = job_fail(job->name, rc, "waiting for a worker");
        if (rc == MPI_SUCCESS && st == SES_OK && (bytes < 4 || *(const uint32_t *)hello != 0))
            st = ses_set_error(bytes >= 4 && *(const uint32_t *)hello <= SES_ALREADY_EXISTS
                                   ? (ses_status_t) * (const uint32_t *)hello
                                   : SES_INTERNAL,
                               "job \"%s\": worker %u: %.*s", job->name, k,
                               bytes > 4 ? (int)(bytes - 4) : 0,
                               bytes > 4 ? (const char *)hello + 4 : "");
        free(hello);
    }
    if (st != SES_OK)
        goto fail;
    free(argv);
    free(codes);
    *out_job = job;
    return SES_OK;

fail:
    if (job)
        ses_mpi_job_destroy(job);
    free(argv);
    free(codes);
    return st;
}

/* ---- the remote session's transport ------------------------------------------------------ */

static ses_status_t job_call(void *user, uint32_t task, const void *request, size_t bytes,
                             void **out_reply, size_t *out_bytes) {
    ses_job_t *job = user;
    int rc;

    if (job->inter == MPI_COMM_NULL)
        return ses_set_error(SES_UNAVAILABLE, "job \"%s\" has ended", job->name);
    rc = send_message(job->inter, (int)task, request, bytes);
    if (rc == MPI_SUCCESS)
        rc = receive_message(job->inter, (int)task, out_reply, out_bytes);
    return rc == MPI_SUCCESS ? SES_OK : job_fail(job->name, rc, "talking to a worker");
}

/* The session is closing: the workers were told to exit; end the job. */
static void job_close(void *user) {
    ses_job_t *job = user;
    job->said_goodbye = 1;
    ses_mpi_job_destroy(job);
}

ses_status_t ses_mpi_job_session_open(ses_job_t *job, ses_graph_t *graph,
                                      const char *const *devices, size_t n_devices,
                                      const ses_session_options_t *options,
                                      ses_session_t **out_session) {
    ses_remote_transport_t transport;

    if (!out_session)
        return ses_set_error(SES_INVALID_ARGUMENT, "ses_mpi_job_session_open: out_session is NULL");
    *out_session = NULL;
    if (!job)
        return ses_set_error(SES_INVALID_ARGUMENT, "ses_mpi_job_session_open: job is NULL");
    if (job->inter == MPI_COMM_NULL)
        return ses_set_error(SES_FAILED_PRECONDITION, "job \"%s\" has ended", job->name);
    transport = (ses_remote_transport_t){sizeof transport, job->workers, job, job_call,
                                         job_close};
    return ses_remote_session_open(graph, &transport, devices, n_devices, options, out_session);
}

/* ---- the worker's side ------------------------------------------------------------------- */

int ses_mpi_worker_main(int argc, char **argv) {
    ses_mpi_t *mpi = NULL;
    ses_remote_worker_t *worker = NULL;
    ses_registry_t *registry = NULL;
    MPI_Comm parent = MPI_COMM_NULL;
    ses_status_t st;
    char hello[4 + 1024];
    uint32_t status;
    int rc = MPI_SUCCESS, exit_now = 0;

    /* Workers inherit the program's environment; the program's evaluator is not theirs. */
    unsetenv("SESSION_EVALUATOR");
    if ((st = ses_mpi_init(&argc, &argv, &mpi)) != SES_OK) {
        fprintf(stderr, "session-worker: %s\n", ses_last_error());
        return 1;
    }
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) {
        fprintf(stderr, "session-worker: not started by a job: a program starts workers with "
                        "ses_mpi_job_create (<session/mpi.h>)\n");
        ses_mpi_finalize(mpi);
        return 2;
    }
    MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
    /* The devices the job asked for, one per argument. */
    st = ses_registry_default(&registry);
    for (int i = 1; i < argc && st == SES_OK; i++) {
        const ses_device_t *device;
        st = ses_registry_find_device(registry, argv[i], &device);
    }
    if (st == SES_OK)
        st = ses_remote_worker_create(&worker);
    status = (uint32_t)st;
    memcpy(hello, &status, 4);
    snprintf(hello + 4, sizeof hello - 4, "%s", st == SES_OK ? "" : ses_last_error());
    rc = send_message(parent, 0, hello, 4 + strlen(hello + 4));
    if (st != SES_OK)
        fprintf(stderr, "session-worker: %s\n", hello + 4);
    /* Serve until told to exit; a worker that failed its check answers every request with
     * that failure, so that the job still ends in order. */
    while (rc == MPI_SUCCESS && !exit_now) {
        void *request = NULL, *reply = NULL;
        size_t bytes = 0, reply_bytes = 0;
        rc = receive_message(parent, 0, &request, &bytes);
        if (rc == MPI_SUCCESS && worker) {
            if (ses_remote_worker_handle(worker, request, bytes, &reply, &reply_bytes,
                                         &exit_now) != SES_OK) {
                fprintf(stderr, "session-worker: %s\n", ses_last_error());
                exit_now = 1; /* no reply can be made: the session sees the job end */
            }
        } else if (rc == MPI_SUCCESS) {
            exit_now = bytes >= 4 && *(const uint32_t *)request == 3;
            reply = hello;
            reply_bytes = exit_now ? 4 : 4 + strlen(hello + 4);
            if (exit_now)
                memset(hello, 0, 4);
        }
        if (rc == MPI_SUCCESS && reply)
            rc = send_message(parent, 0, reply, reply_bytes);
        free(request);
        if (reply != hello)
            free(reply);
    }
    if (rc != MPI_SUCCESS)
        fprintf(stderr, "session-worker: lost the job's session (MPI error %d)\n", rc);
    ses_remote_worker_destroy(worker);
    MPI_Comm_disconnect(&parent);
    ses_mpi_finalize(mpi);
    /* A worker that failed its check but ended in order exits 0: under mpirun, a non-zero
     * exit would abort the program that started the job. */
    return rc == MPI_SUCCESS ? 0 : 1;
}
