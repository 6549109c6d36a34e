/*
 * session-train-example as a user runs it: argument errors, a short run, checkpoint and resume,
 * and SIGKILL at random moments while it writes checkpoints (the latest one must always load,
 * and --resume must continue from its step).
 *
 * The tests that train need Debian's dataset-fashion-mnist; without it they skip and say so.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <session/checkpoint.h>
#include <session/session.h>

#include "run_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#ifndef DATA_DIR
#define DATA_DIR "/usr/share/datasets/fashion-mnist" /* the example's default --data */
#endif
#define DATA_FILE DATA_DIR "/train-images-idx3-ubyte.gz"

/* Every run uses one CPU thread and plain progress lines, so runs are cheap and comparable. */
#define COMMON "--device cpu --threads 1 --progress lines"

static void assert_output_mentions(const run_result_t *r, const char *needle) {
    if (!strstr(r->output, needle))
        fail_msg("expected \"%s\" in the output:\n%s", needle, r->output);
}

static void assert_exit(const run_result_t *r, int code) {
    if (r->exit_code != code)
        fail_msg("exit status %d, expected %d; output:\n%s", r->exit_code, code, r->output);
}

/* Runs the example with @p args (a shell-quoted string). */
static run_result_t run_example(const char *args) {
    char command[2048];

    snprintf(command, sizeof command, "'%s' %s", TRAIN_EXAMPLE, args);
    return run_command(command);
}

static int skip_without_data(void) {
    struct stat info;

    if (stat(DATA_FILE, &info) == 0)
        return 0;
    print_message("skipped: %s is missing; install the package dataset-fashion-mnist\n", DATA_FILE);
    return 1;
}

static int make_dir(void **state) {
    char *dir = malloc(64);

    if (!dir)
        return -1;
    snprintf(dir, 64, "/tmp/ses-train-XXXXXX");
    if (!mkdtemp(dir)) {
        free(dir);
        return -1;
    }
    *state = dir;
    return 0;
}

static int remove_dir(void **state) {
    char command[256];

    snprintf(command, sizeof command, "rm -rf '%s'", (char *)*state);
    if (system(command) != 0)
        fprintf(stderr, "could not remove %s\n", (char *)*state);
    free(*state);
    return 0;
}

/* The latest checkpoint's step; it must load completely (every tensor's bytes read). */
static uint64_t latest_step_that_loads(const char *dir) {
    char *path = NULL;
    uint64_t step = 0;
    ses_safetensors_t st;
    int found_weights = 0;

    if (ses_checkpoint_latest(dir, &path, &step) != SES_OK)
        fail_msg("no loadable checkpoint in %s: %s", dir, ses_last_error());
    if (ses_safetensors_read(path, &st) != SES_OK)
        fail_msg("latest checkpoint %s does not read: %s", path, ses_last_error());
    for (size_t i = 0; i < st.n; i++)
        found_weights |= strcmp(st.names[i], "fc1/W") == 0;
    ses_safetensors_free(&st);
    if (!found_weights)
        fail_msg("latest checkpoint %s has no fc1/W", path);
    free(path);
    return step;
}

/* ---- arguments, no data needed ---- */

static void bad_arguments_exit_2_with_a_message(void **state) {
    static const struct {
        const char *args, *mention;
    } cases[] = {
        {"--batch 0", "--batch"},
        {"--batch 12x", "--batch"},
        {"--epochs -1", "--epochs"},
        {"--optimizer rmsprop", "rmsprop"},
        {"--lr -0.1", "--lr"},
        {"--lr nan", "--lr"},
        {"--activation tanh", "--activation"},
        {"--threads 0", "--threads"},
        {"--resume", "--resume needs --checkpoint-dir"},
        {"--no-such-option", "no-such-option"},
        {"--steps", "--steps"},
        {"stray", "stray"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_result_t r = run_example(cases[i].args);
        assert_exit(&r, 2);
        assert_output_mentions(&r, cases[i].mention);
        assert_output_mentions(&r, "--help");
        free(r.output);
    }
}

static void help_lists_the_options_and_exits_0(void **state) {
    run_result_t r = run_example("--help");

    (void)state;
    assert_exit(&r, 0);
    assert_output_mentions(&r, "--checkpoint-dir");
    assert_output_mentions(&r, "--resume");
    assert_output_mentions(&r, "--optimizer");
    free(r.output);
}

static void a_missing_dataset_names_the_package(void **state) {
    run_result_t r = run_example("--data /nonexistent/fashion-mnist");

    (void)state;
    assert_exit(&r, 1);
    assert_output_mentions(&r, "dataset-fashion-mnist");
    assert_output_mentions(&r, "/nonexistent/fashion-mnist");
    free(r.output);
}

/* ---- training ---- */

static void fifty_steps_run_and_print_a_loss(void **state) {
    run_result_t r;
    const char *last;
    double loss;

    (void)state;
    if (skip_without_data()) {
        skip();
        return;
    }
    r = run_example(COMMON " --steps 50 --log-every 10");
    assert_exit(&r, 0);
    assert_output_mentions(&r, "step 10 (epoch 1, batch 10/937): loss ");
    assert_output_mentions(&r, "step 50 (epoch 1, batch 50/937): loss ");
    loss = strtod(strstr(r.output, "step 50 (epoch 1, batch 50/937): loss ") + 38, NULL);
    /* ln(10) = 2.30 at the start; after 50 steps it must have gone down, and be a number. */
    if (!(loss > 0 && loss < 2.3))
        fail_msg("loss after 50 steps is %g:\n%s", loss, r.output);
    /* The last line is exactly "test accuracy: 0.xxxx". */
    last = strstr(r.output, "test accuracy: ");
    assert_non_null(last);
    assert_int_equal(strlen(last), strlen("test accuracy: 0.xxxx\n"));
    assert_true(last == r.output || last[-1] == '\n');
    free(r.output);
}

static void resume_continues_from_the_saved_step(void **state) {
    const char *dir = *state;
    char args[512];
    run_result_t r;

    if (skip_without_data()) {
        skip();
        return;
    }
    snprintf(args, sizeof args, COMMON " --steps 30 --checkpoint-dir '%s' --checkpoint-every 10",
             dir);
    r = run_example(args);
    assert_exit(&r, 0);
    free(r.output);
    assert_int_equal(latest_step_that_loads(dir), 30);

    snprintf(args, sizeof args,
             COMMON
             " --steps 45 --log-every 5 --checkpoint-dir '%s' --checkpoint-every 10 --resume",
             dir);
    r = run_example(args);
    assert_exit(&r, 0);
    assert_output_mentions(&r, "resumed at step 30 (epoch 1, batch 30 of 937)");
    /* The first progress line after the restart is step 35, not 5. */
    assert_output_mentions(&r, "step 35 (epoch 1, batch 35/937): loss ");
    if (strstr(r.output, "step 5 ("))
        fail_msg("the resumed run counted from 0:\n%s", r.output);
    assert_output_mentions(&r, "trained 15 steps");
    free(r.output);
    assert_int_equal(latest_step_that_loads(dir), 45);

    /* Resuming at the end trains nothing and still evaluates. */
    r = run_example(args);
    assert_exit(&r, 0);
    assert_output_mentions(&r, "resumed at step 45");
    assert_output_mentions(&r, "trained 0 steps");
    assert_output_mentions(&r, "test accuracy: 0.");
    free(r.output);
}

/* Starts the example with @p argv, its stdout and stderr on a pipe; returns the pid. */
static pid_t spawn(char *const *argv, int *out_fd) {
    int fds[2];
    pid_t pid;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    *out_fd = fds[0];
    return pid;
}

/* Reads from @p fd into @p buffer until it holds @p needle, the pipe closes or 300 s pass. */
static int read_until(int fd, char *buffer, size_t size, size_t *used, const char *needle) {
    time_t deadline = time(NULL) + 300;

    while (!strstr(buffer, needle) && time(NULL) < deadline) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t got;
        if (poll(&p, 1, 1000) <= 0)
            continue;
        if (*used + 1 >= size)
            return 0;
        got = read(fd, buffer + *used, size - 1 - *used);
        if (got <= 0)
            return 0;
        *used += (size_t)got;
        buffer[*used] = '\0';
    }
    return strstr(buffer, needle) != NULL;
}

/*
 * The kill test: a run saving a checkpoint at every step is killed with SIGKILL at a random
 * moment, 20 times; each restart resumes. After every kill the latest checkpoint must load
 * whole, and the next run must say it resumed at exactly that checkpoint's step.
 */
static void killed_while_saving_the_latest_checkpoint_still_loads(void **state) {
    const char *dir = *state;
    char args[512];
    run_result_t r;
    uint64_t first, step;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();

    if (skip_without_data()) {
        skip();
        return;
    }
    print_message("kill test: random seed %u\n", seed);
    srand(seed);

    snprintf(args, sizeof args,
             COMMON " --steps 4 --checkpoint-dir '%s' --checkpoint-every 1 --keep-checkpoints 2",
             dir);
    r = run_example(args);
    assert_exit(&r, 0);
    free(r.output);
    first = step = latest_step_that_loads(dir);
    assert_int_equal(first, 4);

    for (int round = 0; round < 20; round++) {
        char *argv[] = {TRAIN_EXAMPLE, "--device",
                        "cpu",         "--threads",
                        "1",           "--progress",
                        "lines",       "--log-every",
                        "1000000",     "--steps",
                        "100000000",   "--checkpoint-every",
                        "1",           "--keep-checkpoints",
                        "2",           "--checkpoint-dir",
                        (char *)dir,   "--resume",
                        NULL};
        char output[16384] = "", expect[64];
        size_t used = 0;
        int fd, status;
        pid_t pid = spawn(argv, &fd);
        long delay_us = rand() % 300000;

        if (!read_until(fd, output, sizeof output, &used, "training: ")) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fail_msg("round %d: the example did not start training:\n%s", round, output);
        }
        snprintf(expect, sizeof expect, "resumed at step %llu ", (unsigned long long)step);
        if (!strstr(output, expect))
            fail_msg("round %d: expected \"%s\" (the latest checkpoint) in:\n%s", round, expect,
                     output);
        usleep((useconds_t)delay_us);
        kill(pid, SIGKILL);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        close(fd);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        step = latest_step_that_loads(dir);
    }
    print_message("kill test: checkpoints went from step %llu to %llu over 20 kills\n",
                  (unsigned long long)first, (unsigned long long)step);
    assert_true(step > first);

    /* A last run from the final checkpoint finishes normally, 3 steps later. */
    snprintf(args, sizeof args,
             COMMON " --steps %llu --checkpoint-dir '%s' --checkpoint-every 1 --resume",
             (unsigned long long)step + 3, dir);
    r = run_example(args);
    assert_exit(&r, 0);
    {
        char expect[64];
        snprintf(expect, sizeof expect, "resumed at step %llu ", (unsigned long long)step);
        assert_output_mentions(&r, expect);
    }
    assert_output_mentions(&r, "trained 3 steps");
    free(r.output);
    assert_int_equal(latest_step_that_loads(dir), step + 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_arguments_exit_2_with_a_message),
        cmocka_unit_test(help_lists_the_options_and_exits_0),
        cmocka_unit_test(a_missing_dataset_names_the_package),
        cmocka_unit_test(fifty_steps_run_and_print_a_loss),
        cmocka_unit_test_setup_teardown(resume_continues_from_the_saved_step, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(killed_while_saving_the_latest_checkpoint_still_loads,
                                        make_dir, remove_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
