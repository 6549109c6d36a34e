/*
 * Remote sessions over MPI (tests/mpi/remote_session.c): a job of two session-worker processes
 * started with MPI_Comm_spawn trains a network placed across them and this process to the
 * values a local session gets, and the job ends when the session closes (mpirun would wait for
 * workers that never exit, and the test would time out). A job whose workers lack a device
 * fails with the worker's message. The program runs under `mpirun -np 1` and also alone
 * (an MPI singleton, as a user's program would start).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "run_util.h"

static run_result_t run(int under_mpirun, const char *argument) {
    char command[4096];

    /* See mpi_test.c: Open MPI's own allocations outlive MPI_Finalize in every process. */
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    setenv("SESSION_WORKER", SESSION_WORKER, 1);
    /* An MPI singleton started as root on a machine of 2 cores, as mpirun's flags would. */
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    if (under_mpirun)
        snprintf(command, sizeof command,
                 "'%s' --allow-run-as-root --oversubscribe -np 1 '%s' %s 2>&1", MPIRUN,
                 REMOTE_SESSION, argument);
    else
        snprintf(command, sizeof command, "'%s' %s 2>&1", REMOTE_SESSION, argument);
    return run_command(command);
}

static void check_matches(int under_mpirun) {
    run_result_t r = run(under_mpirun, "");

    if (r.exit_code != 0)
        fail_msg("remote_session: exit %d:\n%s", r.exit_code, r.output);
    if (!strstr(r.output, "remote session: 2 workers, 4 steps"))
        fail_msg("no result line in:\n%s", r.output);
    free(r.output);
}

static void a_remote_session_under_mpirun_matches_a_local_one(void **state) {
    (void)state;
    check_matches(1);
}

static void a_remote_session_from_a_lone_process_matches_a_local_one(void **state) {
    (void)state;
    check_matches(0);
}

static void a_worker_without_the_jobs_device_fails_the_job_with_its_message(void **state) {
    run_result_t r = run(1, "--missing-device");

    (void)state;
    if (r.exit_code != 0)
        fail_msg("remote_session --missing-device: exit %d:\n%s", r.exit_code, r.output);
    assert_non_null(strstr(r.output, "job \"remote-test\": worker 0:"));
    assert_non_null(strstr(r.output, "nosuchdevice"));
    free(r.output);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_remote_session_under_mpirun_matches_a_local_one),
        cmocka_unit_test(a_remote_session_from_a_lone_process_matches_a_local_one),
        cmocka_unit_test(a_worker_without_the_jobs_device_fails_the_job_with_its_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
