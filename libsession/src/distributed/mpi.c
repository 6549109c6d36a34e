/*
 * libsession-mpi: the job's MPI_COMM_WORLD as a session communicator. Large buffers go in chunks
 * of at most INT_MAX elements (MPI counts are int). Errors return (MPI_ERRORS_RETURN) and become
 * statuses with MPI's own message.
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
static ses_status_t sum_over_ranks(const void *send, void *recv, size_t count, ses_dtype_t dtype,
                                   const char *who) {
    MPI_Datatype type = mpi_type(dtype);
    size_t esize = ses_dtype_size(dtype);

    if (type == MPI_DATATYPE_NULL)
        return ses_set_error(SES_UNIMPLEMENTED, "%s: %s is not summed", who,
                             ses_dtype_name(dtype));
    for (size_t done = 0; done < count;) {
        int n = count - done > (size_t)INT_MAX ? INT_MAX : (int)(count - done);
        int rc = MPI_Allreduce(send ? (const char *)send + done * esize : MPI_IN_PLACE,
                               (char *)recv + done * esize, n, type, MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Allreduce");
        done += (size_t)n;
    }
    return SES_OK;
}

ses_status_t ses_mpi_allreduce_sum(ses_mpi_t *mpi, void *data, size_t count, ses_dtype_t dtype) {
    if (!mpi || (!data && count))
        return ses_set_error(SES_INVALID_ARGUMENT, "ses_mpi_allreduce_sum: NULL argument");
    return sum_over_ranks(NULL, data, count, dtype, "ses_mpi_allreduce_sum");
}

static ses_status_t comm_allreduce(void *user, void *data, size_t count, ses_dtype_t dtype) {
    return ses_mpi_allreduce_sum(user, data, count, dtype);
}

/* Out of place: MPI reads @p send and writes @p recv, so AllReduce copies neither. */
static ses_status_t comm_allreduce_into(void *user, const void *send, void *recv, size_t count,
                                        ses_dtype_t dtype) {
    if (!user || ((!send || !recv) && count))
        return ses_set_error(SES_INVALID_ARGUMENT, "MPI allreduce_sum_into: NULL argument");
    return sum_over_ranks(send, recv, count, dtype, "MPI allreduce_sum_into");
}

static unsigned env_override(const char *name, unsigned value) {
    const char *v = getenv(name);
    char *end;
    unsigned long n;

    if (!v || !*v)
        return value;
    n = strtoul(v, &end, 10);
    return *end ? value : (unsigned)n;
}

ses_status_t ses_mpi_init(int *argc, char ***argv, ses_mpi_t **out) {
    ses_mpi_t *m;
    int initialized = 0, provided, rank, size, local_rank = 0, local_size = 1, rc;
    MPI_Comm local;

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
    m->task.shard_index = env_override("SESSION_SHARD_INDEX", (unsigned)rank);
    m->task.shard_count = env_override("SESSION_SHARD_COUNT", (unsigned)size);
    m->task.is_chief = rank == 0;
    m->task.launcher = "mpi";
    if (ses_task_spec_check(&m->task) != SES_OK) {
        ses_mpi_finalize(m);
        return SES_INVALID_ARGUMENT;
    }
    m->comm.struct_size = sizeof m->comm;
    m->comm.rank = (uint32_t)rank;
    m->comm.size = (uint32_t)size;
    m->comm.allreduce_sum = comm_allreduce;
    m->comm.allreduce_sum_into = comm_allreduce_into;
    m->comm.user = m;
    *out = m;
    return SES_OK;
}

void ses_mpi_finalize(ses_mpi_t *m) {
    int finalized = 0;

    if (!m)
        return;
    MPI_Finalized(&finalized);
    if (m->we_initialized && !finalized)
        MPI_Finalize();
    free(m);
}

const ses_task_spec_t *ses_mpi_task(const ses_mpi_t *m) {
    return m ? &m->task : NULL;
}

const ses_communicator_t *ses_mpi_communicator(const ses_mpi_t *m) {
    return m ? &m->comm : NULL;
}

int ses_mpi_any(ses_mpi_t *m, int flag) {
    int local = flag != 0, any = local;

    if (m && MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
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
        if (MPI_Bcast(check, 2, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD) != MPI_SUCCESS ||
            check[0] != mine[0])
            st = ses_set_error(SES_FAILED_PRECONDITION,
                               "ses_mpi_broadcast_variables: variable \"%s\" has %zu bytes here "
                               "and %llu on the chief",
                               names[i], bytes, check[0]);
        for (size_t done = 0; done < bytes && st == SES_OK;) {
            int chunk = bytes - done > (size_t)INT_MAX ? INT_MAX : (int)(bytes - done);
            int rc = MPI_Bcast(data + done, chunk, MPI_BYTE, 0, MPI_COMM_WORLD);
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
    st = ses_session_set_communicator(*out, &m->comm);
    if (st == SES_OK)
        st = ses_mpi_broadcast_variables(m, *out);
    if (st != SES_OK) {
        ses_session_destroy(*out);
        *out = NULL;
    }
    return st;
}
