/*
 * libsession-mpi: the job's MPI_COMM_WORLD as a session communicator (with an evaluator, the
 * training ranks' part of it). Large buffers go in chunks of at most INT_MAX elements (MPI
 * counts are int). Errors return (MPI_ERRORS_RETURN) and become statuses with MPI's own message.
 */
#include <session/mpi.h>

#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

struct ses_mpi {
    int we_initialized;
    ses_task_spec_t task;
    ses_communicator_t comm;
    /* The training ranks: MPI_COMM_WORLD, or without the evaluator (MPI_COMM_NULL on it). */
    MPI_Comm train;
    /* With an evaluator: a copy of MPI_COMM_WORLD whose only collective is the barrier that
     * says training has ended (the evaluator enters it at once, the training ranks at the end),
     * so that it cannot be mistaken for any other collective. */
    MPI_Comm end;
    MPI_Request end_request;
    int end_entered; /* this rank has entered that barrier */
    int ended;       /* ... and it has completed */
};

static ses_status_t mpi_fail(int code, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    MPI_Error_string(code, text, &len);
    return ses_set_error(SES_UNAVAILABLE, "MPI: %s failed: %.*s", what, len, text);
}

static MPI_Datatype mpi_type(ses_dtype_t dtype) {
    switch (dtype) {
    case SES_F32: return MPI_FLOAT;
    case SES_F64: return MPI_DOUBLE;
    case SES_I32: return MPI_INT32_T;
    case SES_I64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
    }
}

/* Sums @p count values over every rank into @p recv: from @p send, or in place when it is NULL. */
static ses_status_t sum_over_ranks(MPI_Comm comm, const void *send, void *recv, size_t count,
                                   ses_dtype_t dtype, const char *who) {
    MPI_Datatype type = mpi_type(dtype);
    size_t esize = ses_dtype_size(dtype);

    if (type == MPI_DATATYPE_NULL)
        return ses_set_error(SES_UNIMPLEMENTED, "%s: %s is not summed", who,
                             ses_dtype_name(dtype));
    for (size_t done = 0; done < count;) {
        int n = count - done > (size_t)INT_MAX ? INT_MAX : (int)(count - done);
        int rc = MPI_Allreduce(send ? (const char *)send + done * esize : MPI_IN_PLACE,
                               (char *)recv + done * esize, n, type, MPI_SUM, comm);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Allreduce");
        done += (size_t)n;
    }
    return SES_OK;
}

/* The evaluator takes no part in the training ranks' collectives. */
static ses_status_t refuse_on_evaluator(const ses_mpi_t *m, const char *who) {
    return ses_set_error(SES_FAILED_PRECONDITION,
                         "%s: rank %u is the job's evaluator (SESSION_EVALUATOR or "
                         "ses_mpi_use_last_as_evaluator): it does not train",
                         who, m->task.rank);
}

ses_status_t ses_mpi_allreduce_sum(ses_mpi_t *mpi, void *data, size_t count, ses_dtype_t dtype) {
    if (!mpi || (!data && count))
        return ses_set_error(SES_INVALID_ARGUMENT, "ses_mpi_allreduce_sum: NULL argument");
    if (mpi->task.is_evaluator)
        return refuse_on_evaluator(mpi, "ses_mpi_allreduce_sum");
    return sum_over_ranks(mpi->train, NULL, data, count, dtype, "ses_mpi_allreduce_sum");
}

static ses_status_t comm_allreduce(void *user, void *data, size_t count, ses_dtype_t dtype) {
    return ses_mpi_allreduce_sum(user, data, count, dtype);
}

/* Out of place: MPI reads @p send and writes @p recv, so AllReduce copies neither. */
static ses_status_t comm_allreduce_into(void *user, const void *send, void *recv, size_t count,
                                        ses_dtype_t dtype) {
    ses_mpi_t *m = user;

    if (!m || ((!send || !recv) && count))
        return ses_set_error(SES_INVALID_ARGUMENT, "MPI allreduce_sum_into: NULL argument");
    if (m->task.is_evaluator)
        return refuse_on_evaluator(m, "MPI allreduce_sum_into");
    return sum_over_ranks(m->train, send, recv, count, dtype, "MPI allreduce_sum_into");
}

/*
 * Splits the training ranks from the evaluator (m->task already says which is which) and enters
 * the evaluator into the end-of-training barrier. Collective over MPI_COMM_WORLD.
 */
static ses_status_t set_evaluator_apart(ses_mpi_t *m) {
    int rc, rank = -1, size = 0;

    rc = MPI_Comm_dup(MPI_COMM_WORLD, &m->end);
    if (rc != MPI_SUCCESS) {
        m->end = MPI_COMM_NULL;
        return mpi_fail(rc, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(m->end, MPI_ERRORS_RETURN);
    rc = MPI_Comm_split(MPI_COMM_WORLD, m->task.is_evaluator ? MPI_UNDEFINED : 0,
                        (int)m->task.rank, &m->train);
    if (rc != MPI_SUCCESS) {
        m->train = MPI_COMM_WORLD;
        return mpi_fail(rc, "MPI_Comm_split");
    }
    if (m->task.is_evaluator) {
        rc = MPI_Ibarrier(m->end, &m->end_request);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Ibarrier");
        m->end_entered = 1;
        return SES_OK;
    }
    MPI_Comm_set_errhandler(m->train, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->train, &rank);
    MPI_Comm_size(m->train, &size);
    m->comm.rank = (uint32_t)rank;
    m->comm.size = (uint32_t)size;
    return SES_OK;
}

ses_status_t ses_mpi_use_last_as_evaluator(ses_mpi_t *m) {
    ses_status_t st;

    if (!m)
        return ses_set_error(SES_INVALID_ARGUMENT, "ses_mpi_use_last_as_evaluator: mpi is NULL");
    if (m->end != MPI_COMM_NULL)
        return SES_OK; /* already apart (SESSION_EVALUATOR=1, or a second call) */
    if ((st = ses_task_spec_use_last_as_evaluator(&m->task)) != SES_OK)
        return st;
    return set_evaluator_apart(m);
}

ses_status_t ses_mpi_end_training(ses_mpi_t *m) {
    int rc;

    if (!m)
        return ses_set_error(SES_INVALID_ARGUMENT, "ses_mpi_end_training: mpi is NULL");
    if (m->task.is_evaluator)
        return refuse_on_evaluator(m, "ses_mpi_end_training");
    if (m->end == MPI_COMM_NULL || m->end_entered)
        return SES_OK;
    rc = MPI_Ibarrier(m->end, &m->end_request);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Ibarrier");
    m->end_entered = 1;
    /* The evaluator entered when it was set apart: this waits only for the training ranks. */
    rc = MPI_Wait(&m->end_request, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Wait");
    m->ended = 1;
    return SES_OK;
}

int ses_mpi_training_ended(ses_mpi_t *m) {
    int done = 0;

    if (!m || !m->task.is_evaluator)
        return 0;
    if (m->ended)
        return 1;
    /* A broken job has ended too. */
    if (MPI_Test(&m->end_request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        done = 1;
    m->ended = done;
    return done;
}

ses_status_t ses_mpi_init(int *argc, char ***argv, ses_mpi_t **out) {
    ses_mpi_t *m;
    int initialized = 0, provided, rank, size, local_rank = 0, local_size = 1, rc;
    MPI_Comm local;
    ses_status_t st;

    if (!out)
        return ses_set_error(SES_INVALID_ARGUMENT, "ses_mpi_init: out_mpi is NULL");
    *out = NULL;
    m = calloc(1, sizeof *m);
    if (!m)
        return ses_set_error(SES_OUT_OF_MEMORY, "ses_mpi_init: out of memory");
    MPI_Initialized(&initialized);
    if (!initialized) {
        rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) {
            free(m);
            return mpi_fail(rc, "MPI_Init_thread");
        }
        m->we_initialized = 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(local, &local_rank);
        MPI_Comm_size(local, &local_size);
        MPI_Comm_free(&local);
    }
    ses_task_spec_init(&m->task);
    m->task.rank = (uint32_t)rank;
    m->task.size = (uint32_t)size;
    m->task.local_rank = (uint32_t)local_rank;
    m->task.local_size = (uint32_t)local_size;
    m->task.launcher = "mpi";
    m->train = MPI_COMM_WORLD;
    m->end = MPI_COMM_NULL;
    m->end_request = MPI_REQUEST_NULL;
    m->comm.struct_size = sizeof m->comm;
    m->comm.rank = (uint32_t)rank;
    m->comm.size = (uint32_t)size;
    m->comm.allreduce_sum = comm_allreduce;
    m->comm.allreduce_sum_into = comm_allreduce_into;
    m->comm.user = m;
    /* SESSION_SHARD_INDEX, SESSION_SHARD_COUNT, SESSION_EVALUATOR; every rank reads the same
     * environment, so every rank fails alike or sets the evaluator apart alike. */
    if ((st = ses_task_spec_apply_env(&m->task)) != SES_OK ||
        (m->task.has_evaluator && (st = set_evaluator_apart(m)) != SES_OK)) {
        ses_mpi_finalize(m);
        return st;
    }
    *out = m;
    return SES_OK;
}

void ses_mpi_finalize(ses_mpi_t *m) {
    int finalized = 0;

    if (!m)
        return;
    /* A training rank that ends without saying so still tells the evaluator (which could
     * otherwise wait forever); the evaluator waits for the training ranks' end. */
    if (m->end != MPI_COMM_NULL) {
        if (!m->task.is_evaluator)
            ses_mpi_end_training(m);
        else if (!m->ended)
            MPI_Wait(&m->end_request, MPI_STATUS_IGNORE);
        MPI_Comm_free(&m->end);
    }
    if (m->train != MPI_COMM_WORLD && m->train != MPI_COMM_NULL)
        MPI_Comm_free(&m->train);
    MPI_Finalized(&finalized);
    if (m->we_initialized && !finalized)
        MPI_Finalize();
    free(m);
}

const ses_task_spec_t *ses_mpi_task(const ses_mpi_t *m) {
    return m ? &m->task : NULL;
}

const ses_communicator_t *ses_mpi_communicator(const ses_mpi_t *m) {
    return m && !m->task.is_evaluator ? &m->comm : NULL;
}

int ses_mpi_any(ses_mpi_t *m, int flag) {
    int local = flag != 0, any = local;

    if (m && !m->task.is_evaluator &&
        MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, m->train) != MPI_SUCCESS)
        return 1; /* a broken job stops */
    return any;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

ses_status_t ses_mpi_broadcast_variables(ses_mpi_t *m, ses_session_t *s) {
    ses_scope_t *scope;
    const char **names = NULL;
    size_t n;
    ses_status_t st;

    if (!m || !s)
        return ses_set_error(SES_INVALID_ARGUMENT, "ses_mpi_broadcast_variables: NULL argument");
    if ((st = ses_session_initialize_variables(s)) != SES_OK)
        return st;
    if (m->task.is_evaluator)
        return SES_OK; /* it restores checkpoints instead */
    scope = ses_session_scope(s);
    n = ses_scope_count(scope);
    names = calloc(n + 1, sizeof *names);
    if (!names)
        return ses_set_error(SES_OUT_OF_MEMORY, "ses_mpi_broadcast_variables: out of memory");
    for (size_t i = 0; i < n; i++)
        names[i] = ses_scope_name_at(scope, i);
    /* The same order on every rank. */
    qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; i < n && st == SES_OK; i++) {
        ses_tensor_t *t = NULL;
        unsigned char *data;
        size_t bytes;
        unsigned long long check[2], mine[2];

        if (ses_scope_find(scope, names[i], &t) != SES_OK)
            continue;
        data = ses_tensor_data(t);
        bytes = ses_tensor_bytes(t);
        /* Every rank must hold the same variables with the same sizes. */
        mine[0] = bytes;
        mine[1] = i;
        memcpy(check, mine, sizeof check);
        if (MPI_Bcast(check, 2, MPI_UNSIGNED_LONG_LONG, 0, m->train) != MPI_SUCCESS ||
            check[0] != mine[0])
            st = ses_set_error(SES_FAILED_PRECONDITION,
                               "ses_mpi_broadcast_variables: variable \"%s\" has %zu bytes here "
                               "and %llu on the chief",
                               names[i], bytes, check[0]);
        for (size_t done = 0; done < bytes && st == SES_OK;) {
            int chunk = bytes - done > (size_t)INT_MAX ? INT_MAX : (int)(bytes - done);
            int rc = MPI_Bcast(data + done, chunk, MPI_BYTE, 0, m->train);
            if (rc != MPI_SUCCESS)
                st = mpi_fail(rc, "MPI_Bcast");
            done += (size_t)chunk;
        }
        ses_tensor_release(t);
    }
    free(names);
    return st;
}

ses_status_t ses_mpi_session_open(ses_mpi_t *m, ses_graph_t *g, const char *const *devices,
                                  size_t n_devices, const ses_session_options_t *options,
                                  ses_session_t **out) {
    ses_status_t st;

    if (!m || !out)
        return ses_set_error(SES_INVALID_ARGUMENT, "ses_mpi_session_open: NULL argument");
    *out = NULL;
    if ((st = ses_session_open(g, devices, n_devices, options, out)) != SES_OK)
        return st;
    st = ses_session_set_communicator(*out, ses_mpi_communicator(m));
    if (st == SES_OK)
        st = ses_mpi_broadcast_variables(m, *out);
    if (st != SES_OK) {
        ses_session_destroy(*out);
        *out = NULL;
    }
    return st;
}
