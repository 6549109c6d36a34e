/*
 * Data-parallel training under mpirun on this machine (oversubscribed): 2 and 4 ranks give the
 * parameters one process gets on the same global batch (tests/mpi/data_parallel.c).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "run_util.h"

static run_result_t mpirun_with(int ranks, const char *args) {
    char command[4096];

    /* In the sanitizer build: Open MPI keeps allocations of MPI_Init past MPI_Finalize, from
     * components whose frames LeakSanitizer cannot even symbolize (so no suppression can name
     * them); leak checking is off in the ranks only. ASan and UBSan stay on, and the libsession
     * side of the collective runs under LeakSanitizer in tests/unit/collective_test.c. */
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    snprintf(command, sizeof command,
             "'%s' --allow-run-as-root --oversubscribe -np %d '%s' %s 2>&1", MPIRUN, ranks,
             DATA_PARALLEL, args);
    return run_command(command);
}

static run_result_t mpirun(int ranks) {
    return mpirun_with(ranks, "");
}

/* The number after @p prefix in @p text; fails the test when it is not there. */
static double number_after(const char *text, const char *prefix) {
    const char *p = strstr(text, prefix);

    if (!p)
        fail_msg("no \"%s\" in:\n%s", prefix, text);
    return strtod(p + strlen(prefix), NULL);
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

/*
 * SESSION_EVALUATOR=1 with 3 ranks: ranks 0 and 1 train (their AllReduce covers them only, so
 * they still match one process), rank 2 evaluates the chief's checkpoints as they appear and
 * ends with the chief's final parameters.
 */
static void the_last_rank_evaluates_checkpoints_while_the_others_train(void **state) {
    char dir[] = "/tmp/ses-evaluator-XXXXXX", args[64], command[128];
    run_result_t r;
    double evaluated, trained;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(args, sizeof args, "'%s'", dir);
    setenv("SESSION_EVALUATOR", "1", 1);
    r = mpirun_with(3, args);
    unsetenv("SESSION_EVALUATOR");
    if (r.exit_code != 0)
        fail_msg("mpirun -np 3 with an evaluator: exit %d:\n%s", r.exit_code, r.output);
    if (!strstr(r.output, "ranks 2: shards of 4, max difference") ||
        strstr(r.output, "too large"))
        fail_msg("the training ranks do not match one process:\n%s", r.output);
    if (!strstr(r.output, "evaluator: checkpoint of step "))
        fail_msg("the evaluator evaluated no checkpoint:\n%s", r.output);
    evaluated = number_after(r.output, "checkpoints evaluated, the last of step 5: loss ");
    trained = number_after(r.output, "chief: the parameters of step 5: loss ");
    if (fabs(evaluated - trained) > 1e-6 * fabs(trained))
        fail_msg("the evaluator's loss %.9g is not the chief's %.9g:\n%s", evaluated, trained,
                 r.output);
    free(r.output);
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    assert_int_equal(system(command), 0);
}

/* ses_mpi_init read SESSION_SHARD_* leniently (a bad value was ignored); now as TaskSpec does. */
static void bad_settings_are_refused_under_mpi_naming_the_variable(void **state) {
    run_result_t r;

    (void)state;
    setenv("SESSION_SHARD_COUNT", "two", 1);
    r = mpirun(2);
    unsetenv("SESSION_SHARD_COUNT");
    assert_int_not_equal(r.exit_code, 0);
    if (!strstr(r.output, "SESSION_SHARD_COUNT is \"two\", not a number"))
        fail_msg("no message naming SESSION_SHARD_COUNT in:\n%s", r.output);
    free(r.output);
    setenv("SESSION_EVALUATOR", "1", 1);
    r = mpirun_with(1, "/tmp");
    unsetenv("SESSION_EVALUATOR");
    assert_int_not_equal(r.exit_code, 0);
    if (!strstr(r.output, "SESSION_EVALUATOR=1 needs at least 2 tasks"))
        fail_msg("no message naming SESSION_EVALUATOR in:\n%s", r.output);
    free(r.output);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_ranks_train_as_one_process),
        cmocka_unit_test(four_ranks_train_as_one_process),
        cmocka_unit_test(a_rank_count_that_does_not_divide_the_batch_is_refused),
        cmocka_unit_test(the_last_rank_evaluates_checkpoints_while_the_others_train),
        cmocka_unit_test(bad_settings_are_refused_under_mpi_naming_the_variable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
