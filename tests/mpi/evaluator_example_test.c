/*
 * session-train-example --distributed --evaluator under `mpirun -np 3`: ranks 0 and 1 train,
 * rank 2 evaluates each checkpoint the chief saves as it appears and ends with the accuracy of
 * the last one, which is the chief's final test accuracy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "run_util.h"

static void the_evaluator_rank_evaluates_the_checkpoints_as_they_appear(void **state) {
    char dir[] = "/tmp/ses-test-XXXXXX", command[8800], chief[64];
    const char *last;
    run_result_t r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1); /* Open MPI's own leaks; see mpi_test.c */
    snprintf(command, sizeof command,
             "'%s' --allow-run-as-root --oversubscribe -np 3 '%s' --distributed --evaluator "
             "--steps 300 --checkpoint-dir '%s' --checkpoint-every 100 --threads 1 "
             "--progress lines",
             MPIRUN, TRAIN_EXAMPLE, dir);
    r = run_command(command);
    if (r.exit_code != 0)
        fail_msg("exit %d:\n%s", r.exit_code, r.output);
    if (!strstr(r.output, "distributed: 2 ranks (MPI), 32 examples per rank and step"))
        fail_msg("not 2 training ranks:\n%s", r.output);
    if (!strstr(r.output, "evaluator: checkpoint of step "))
        fail_msg("no checkpoint evaluated:\n%s", r.output);
    last = strstr(r.output, "checkpoints evaluated, the last of step 300: test accuracy ");
    if (!last || !strstr(r.output, "test accuracy: "))
        fail_msg("no final accuracy of the evaluator and the chief:\n%s", r.output);
    /* The evaluator's last checkpoint holds the chief's final parameters. */
    snprintf(chief, sizeof chief, "test accuracy: %.6s\n",
             last + strlen("checkpoints evaluated, the last of step 300: test accuracy "));
    if (!strstr(r.output, chief))
        fail_msg("the chief's accuracy is not the evaluator's (\"%s\"):\n%s", chief, r.output);
    free(r.output);
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    assert_int_equal(system(command), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_evaluator_rank_evaluates_the_checkpoints_as_they_appear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
