/*
 * session-worker: a worker process of a libsession-mpi job. A program starts it with
 * ses_mpi_job_create (MPI_Comm_spawn); its arguments are the devices the job wants it to have.
 * It serves one remote session's requests and exits when that session closes.
 */
#include <session/mpi.h>

int main(int argc, char **argv) {
    return ses_mpi_worker_main(argc, argv);
}
