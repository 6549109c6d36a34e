/*
 * Data-parallel training under mpirun on this machine (oversubscribed): 2 and 4 ranks give the
 * parameters one process gets on the same global batch (tests/mpi/data_parallel.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "run_util.h"

static run_result_t mpirun(int ranks) {
    char command[4096];

    /* In the sanitizer build: Open MPI keeps allocations of MPI_Init past MPI_Finalize, from
     * components whose frames LeakSanitizer cannot even symbolize (so no suppression can name
     * them); leak checking is off in the ranks only. ASan and UBSan stay on, and the libsession
     * side of the collective runs under LeakSanitizer in tests/unit/collective_test.c. */
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    snprintf(command, sizeof command,
             "'%s' --allow-run-as-root --oversubscribe -np %d '%s' 2>&1", MPIRUN, ranks,
             DATA_PARALLEL);
    return run_command(command);
}

static void check_ranks(int ranks) {
    run_result_t r = mpirun(ranks);
    char want[64];

    if (r.exit_code != 0)
        fail_msg("mpirun -np %d: exit %d:\n%s", ranks, r.exit_code, r.output);
    snprintf(want, sizeof want, "ranks %d: shards of %d, max difference", ranks, 8 / ranks);
    if (!strstr(r.output, want))
        fail_msg("no \"%s\" in:\n%s", want, r.output);
    assert_null(strstr(r.output, "too large"));
    /* <session/task.h> documents "mpi": the values are MPI_COMM_WORLD's, whatever launched. */
    if (!strstr(r.output, "; launcher mpi\n"))
        fail_msg("no \"; launcher mpi\" in:\n%s", r.output);
    free(r.output);
}

static void two_ranks_train_as_one_process(void **state) {
    (void)state;
    check_ranks(2);
}

static void four_ranks_train_as_one_process(void **state) {
    (void)state;
    check_ranks(4);
}

static void a_rank_count_that_does_not_divide_the_batch_is_refused(void **state) {
    run_result_t r = mpirun(3);

    (void)state;
    assert_int_not_equal(r.exit_code, 0);
    assert_non_null(strstr(r.output, "divides 8"));
    free(r.output);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_ranks_train_as_one_process),
        cmocka_unit_test(four_ranks_train_as_one_process),
        cmocka_unit_test(a_rank_count_that_does_not_divide_the_batch_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
