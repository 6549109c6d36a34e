/*
 * A rank dies mid-training: the MPI job ends; relaunched with --resume it continues from the
 * chief's last checkpoint, and every checkpoint saved before the failure is still there.
 *
 * Runs `mpirun -np 2 session-train-example --distributed` in the background, waits for the
 * checkpoint of step 200, kills one rank with SIGKILL, waits for mpirun to end the job, then
 * relaunches with --resume and checks where it resumed and that it finished.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <session/checkpoint.h>

#include "run_util.h"

#define STEPS 600
#define EVERY 100

static void job_command(char *buffer, size_t size, const char *dir, int resume) {
    snprintf(buffer, size,
             "'%s' --allow-run-as-root --oversubscribe -np 2 '%s' --distributed --steps %d "
             "--checkpoint-dir '%s' --checkpoint-every %d --keep-checkpoints 0 --threads 1 "
             "--progress lines --log-every 100%s",
             MPIRUN, TRAIN_EXAMPLE, STEPS, dir, EVERY, resume ? " --resume" : "");
}

static uint64_t latest_step(const char *dir) {
    char *path = NULL;
    uint64_t step = 0;

    if (ses_checkpoint_latest(dir, &path, &step) != SES_OK)
        step = 0;
    free(path);
    return step;
}

/* Counts the checkpoint entries (files or folders named after a step) in @p dir. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)))
        if (strstr(e->d_name, "ckpt-") == e->d_name || strstr(e->d_name, "step"))
            n++;
    if (d)
        closedir(d);
    return n;
}

static void a_killed_rank_ends_the_job_and_resume_loses_nothing(void **state) {
    char dir[] = "/tmp/ses-test-XXXXXX", command[8800], log[64];
    uint64_t saved, resumed_at = 0;
    int status, entries;
    pid_t job;
    run_result_t r;
    const char *p;

    (void)state;
    assert_non_null(mkdtemp(dir));
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1); /* Open MPI's own leaks; see mpi_test.c */
    snprintf(log, sizeof log, "%s.log", dir);
    job_command(command, sizeof command, dir, 0);
    job = fork();
    assert_true(job >= 0);
    if (job == 0) {
        char line[9000];
        snprintf(line, sizeof line, "exec %s >'%s' 2>&1", command, log);
        execl("/bin/sh", "sh", "-c", line, (char *)NULL);
        _exit(127);
    }
    /* Until the checkpoint of step 200 is there (at most 5 minutes, for the sanitizer build). */
    for (int i = 0; i < 3000 && latest_step(dir) < 2 * EVERY; i++) {
        if (waitpid(job, &status, WNOHANG) == job)
            fail_msg("the job ended before step %d (see %s)", 2 * EVERY, log);
        usleep(100000);
    }
    assert_true(latest_step(dir) >= 2 * EVERY);
    /* Kill one rank: the newest process whose command line starts with the example (not
     * mpirun's, nor this shell's) and names this job's checkpoint folder, so that the ranks of
     * another test running the example at the same time (mpi_evaluator) are left alone. */
    char kill_command[256];
    snprintf(kill_command, sizeof kill_command,
             "pkill -KILL -n -f '^%s --distributed .*--checkpoint-dir %s '", TRAIN_EXAMPLE, dir);
    assert_int_equal(system(kill_command), 0);
    assert_int_equal(waitpid(job, &status, 0), job);
    assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* the job ended, failed */
    saved = latest_step(dir);
    assert_true(saved >= 2 * EVERY && saved < STEPS);
    entries = count_entries(dir);
    assert_true(entries >= (int)(saved / EVERY));

    /* Relaunch: it continues where the chief's last checkpoint is. */
    job_command(command, sizeof command, dir, 1);
    strcat(command, " 2>&1");
    r = run_command(command);
    if (r.exit_code != 0)
        fail_msg("resumed job: exit %d:\n%s", r.exit_code, r.output);
    p = strstr(r.output, "resumed at step ");
    assert_non_null(p);
    resumed_at = strtoull(p + strlen("resumed at step "), NULL, 10);
    assert_int_equal(resumed_at, saved);
    assert_non_null(strstr(r.output, "checkpoint: step 600 saved"));
    assert_int_equal(latest_step(dir), STEPS);
    /* Nothing saved before the failure is lost (keep-checkpoints 0 keeps every one). */
    assert_true(count_entries(dir) >= entries);
    free(r.output);
    snprintf(command, sizeof command, "rm -rf '%s' '%s'", dir, log);
    assert_int_equal(system(command), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_killed_rank_ends_the_job_and_resume_loses_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
