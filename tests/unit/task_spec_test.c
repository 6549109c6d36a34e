/* TaskSpec from each launcher's environment, explicit specs, default devices and shards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <session/task.h>

static const char *const all_vars[] = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE", "SLURM_STEP_TASKS_PER_NODE", "SLURM_NODEID", "SLURM_NNODES",
    "SESSION_SHARD_INDEX", "SESSION_SHARD_COUNT", "SESSION_EVALUATOR"};

/* Reads the environment expecting SES_INVALID_ARGUMENT with @p text in the message; prints
 * the message when it is not. */
static void expect_refused(const char *text) {
    ses_task_spec_t s;
    ses_status_t st = ses_task_spec_from_env(&s);

    if (st != SES_INVALID_ARGUMENT || !strstr(ses_last_error(), text))
        fail_msg("want SES_INVALID_ARGUMENT and \"%s\"; got status %d and \"%s\"", text,
                 (int)st, st == SES_OK ? "" : ses_last_error());
}

/* Reads the environment expecting success with the local size @p local_size. */
static void expect_local_size(uint32_t local_size) {
    ses_task_spec_t s;
    ses_status_t st = ses_task_spec_from_env(&s);

    if (st != SES_OK)
        fail_msg("want SES_OK; got %d: %s", (int)st, ses_last_error());
    assert_string_equal(s.launcher, "slurm");
    assert_int_equal(s.local_size, local_size);
}

static int clear_env(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++)
        unsetenv(all_vars[i]);
    return 0;
}

static void without_a_launcher_it_is_task_0_of_1(void **state) {
    ses_task_spec_t s;

    (void)state;
    assert_int_equal(ses_task_spec_from_env(&s), SES_OK);
    assert_int_equal(s.rank, 0);
    assert_int_equal(s.size, 1);
    assert_true(s.is_chief);
    assert_string_equal(s.launcher, "none");
}

static void open_mpi_pmi_and_slurm_are_read(void **state) {
    ses_task_spec_t s;

    (void)state;
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    assert_int_equal(ses_task_spec_from_env(&s), SES_OK);
    assert_string_equal(s.launcher, "open-mpi");
    assert_int_equal(s.rank, 3);
    assert_int_equal(s.size, 4);
    assert_int_equal(s.local_rank, 1);
    assert_int_equal(s.local_size, 2);
    assert_int_equal(s.shard_index, 3);
    assert_int_equal(s.shard_count, 4);
    assert_false(s.is_chief);
    clear_env(NULL);
    setenv("PMI_RANK", "0", 1);
    setenv("PMI_SIZE", "2", 1);
    assert_int_equal(ses_task_spec_from_env(&s), SES_OK);
    assert_string_equal(s.launcher, "pmi");
    assert_true(s.is_chief);
    assert_int_equal(s.local_size, 1); /* no local variables: alone on its machine */
    clear_env(NULL);
    setenv("SLURM_PROCID", "5", 1);
    setenv("SLURM_NTASKS", "8", 1);
    setenv("SLURM_LOCALID", "1", 1);
    setenv("SLURM_NTASKS_PER_NODE", "4", 1);
    setenv("SESSION_SHARD_INDEX", "0", 1);
    setenv("SESSION_SHARD_COUNT", "1", 1);
    assert_int_equal(ses_task_spec_from_env(&s), SES_OK);
    assert_string_equal(s.launcher, "slurm");
    assert_int_equal(s.rank, 5);
    assert_int_equal(s.shard_index, 0); /* the override: every task reads everything */
    assert_int_equal(s.shard_count, 1);
}

static void bad_values_are_named(void **state) {
    ses_task_spec_t s;

    (void)state;
    setenv("OMPI_COMM_WORLD_RANK", "two", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    assert_int_equal(ses_task_spec_from_env(&s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "OMPI_COMM_WORLD_RANK is \"two\", not a number"));
    setenv("OMPI_COMM_WORLD_RANK", "4", 1);
    assert_int_equal(ses_task_spec_from_env(&s), SES_INVALID_ARGUMENT);
    assert_non_null(
        strstr(ses_last_error(), "OMPI_COMM_WORLD_RANK=4 is not below OMPI_COMM_WORLD_SIZE=4"));
    unsetenv("OMPI_COMM_WORLD_SIZE");
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    assert_int_equal(ses_task_spec_from_env(&s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "OMPI_COMM_WORLD_SIZE is not"));
    clear_env(NULL);
    setenv("SESSION_SHARD_COUNT", "-2", 1);
    assert_int_equal(ses_task_spec_from_env(&s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "SESSION_SHARD_COUNT"));
    ses_task_spec_init(&s);
    s.shard_index = 2;
    s.shard_count = 2;
    assert_int_equal(ses_task_spec_check(&s), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_task_spec_check(NULL), SES_INVALID_ARGUMENT);
}

/* Issue #18: Slurm sets SLURM_NTASKS_PER_NODE only with --ntasks-per-node; the per-node
 * lists it always sets give the local size. */
static void slurm_without_ntasks_per_node_reads_tasks_per_node(void **state) {
    (void)state;
    setenv("SLURM_PROCID", "3", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("SLURM_LOCALID", "1", 1);
    setenv("SLURM_TASKS_PER_NODE", "2(x2)", 1);
    expect_local_size(2); /* every node has 2: SLURM_NODEID not needed */
    setenv("SLURM_NODEID", "1", 1);
    expect_local_size(2);
    /* The step's list describes the tasks that run; it wins over the allocation's. */
    setenv("SLURM_STEP_TASKS_PER_NODE", "1,3", 1);
    expect_local_size(3);
    setenv("SLURM_NTASKS_PER_NODE", "2", 1); /* the lists are exact: they win over it */
    expect_local_size(3);
}

static void slurm_lists_of_several_counts_are_indexed_by_node(void **state) {
    static const uint32_t want[] = {3, 2, 2, 1};

    (void)state;
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_NTASKS", "8", 1);
    setenv("SLURM_TASKS_PER_NODE", "3,2(x2),1", 1);
    for (int node = 0; node < 4; node++) {
        char text[8];
        snprintf(text, sizeof text, "%d", node);
        setenv("SLURM_NODEID", text, 1);
        expect_local_size(want[node]);
    }
    setenv("SLURM_NODEID", "4", 1);
    expect_refused("SLURM_NODEID=4 is beyond the 4 nodes of SLURM_TASKS_PER_NODE=\"3,2(x2),1\"");
    unsetenv("SLURM_NODEID");
    expect_refused("SLURM_TASKS_PER_NODE is \"3,2(x2),1\", different counts on different nodes, "
                   "and SLURM_NODEID is not set");
    setenv("SLURM_NODEID", "one", 1);
    expect_refused("SLURM_NODEID is \"one\", not a number");
}

static void slurm_nodes_alone_give_the_even_split(void **state) {
    (void)state;
    setenv("SLURM_PROCID", "3", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("SLURM_LOCALID", "1", 1);
    setenv("SLURM_NNODES", "1", 1);
    expect_local_size(4);
    setenv("SLURM_NTASKS", "5", 1);
    setenv("SLURM_NNODES", "2", 1);
    expect_local_size(3);
    setenv("SLURM_NNODES", "0", 1);
    expect_refused("SLURM_NNODES is \"0\"");
    setenv("SLURM_NNODES", "2x", 1);
    expect_refused("SLURM_NNODES is \"2x\", not a number");
    unsetenv("SLURM_NNODES");
    /* Nothing says how many tasks share the node: the message says what was looked for. */
    expect_refused("SLURM_LOCALID=1 is not below the local size 1 (none of "
                   "SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE, SLURM_NTASKS_PER_NODE, "
                   "SLURM_NNODES is set)");
    setenv("SLURM_NTASKS_PER_NODE", "2", 1);
    expect_local_size(2);
}

/* Malformed lists are refused with the variable and its value, never read past or wrapped. */
static void slurm_malformed_task_lists_are_named(void **state) {
    static const char *const bad[] = {
        "", "x", "2(x", "2(x0)", "0", "2,,1", "2(x2", "-1", " 2", "+2", "2(y2)", "2(x2)3",
        "2(x2),", ",2", "2(x-1)", "99999999999999999999", "4294967296", "2147483648",
        "2(x4294967297)", "2(x 2)", "2 (x2)", "2;1"};

    (void)state;
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("SLURM_NODEID", "0", 1);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[128];
        for (int step = 0; step < 2; step++) {
            const char *name = step ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
            unsetenv("SLURM_STEP_TASKS_PER_NODE");
            setenv("SLURM_TASKS_PER_NODE", "4", 1);
            setenv(name, bad[i], 1);
            snprintf(want, sizeof want, "%s is \"%s\", not a list of task counts", name, bad[i]);
            expect_refused(want);
        }
    }
    /* The largest count is read whole. */
    unsetenv("SLURM_STEP_TASKS_PER_NODE");
    setenv("SLURM_TASKS_PER_NODE", "2147483647(x2147483647)", 1);
    expect_local_size(2147483647);
}

/* Issue #18: an inconsistent spec names the variables its values came from. */
static void inconsistent_values_name_their_variables(void **state) {
    (void)state;
    setenv("SLURM_PROCID", "4", 1);
    setenv("SLURM_NTASKS", "4", 1);
    expect_refused("task spec: SLURM_PROCID=4 is not below SLURM_NTASKS=4");
    setenv("SLURM_PROCID", "1", 1);
    setenv("SLURM_LOCALID", "2", 1);
    setenv("SLURM_TASKS_PER_NODE", "2(x2)", 1);
    setenv("SLURM_NODEID", "1", 1);
    expect_refused("SLURM_LOCALID=2 is not below the local size 2 (SLURM_TASKS_PER_NODE="
                   "\"2(x2)\" at SLURM_NODEID=1)");
    clear_env(NULL);
    setenv("PMI_RANK", "0", 1);
    setenv("PMI_SIZE", "2", 1);
    setenv("MPI_LOCALRANKID", "2", 1);
    setenv("MPI_LOCALNRANKS", "2", 1);
    expect_refused("MPI_LOCALRANKID=2 is not below MPI_LOCALNRANKS=2");
    unsetenv("MPI_LOCALNRANKS");
    expect_refused("MPI_LOCALRANKID=2 is not below the local size 1 (MPI_LOCALNRANKS is not set)");
    clear_env(NULL);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("SESSION_SHARD_COUNT", "2", 1);
    expect_refused("the shard index 3 (OMPI_COMM_WORLD_RANK=3) is not below "
                   "SESSION_SHARD_COUNT=2");
    setenv("SESSION_SHARD_INDEX", "2", 1);
    expect_refused("SESSION_SHARD_INDEX=2 is not below SESSION_SHARD_COUNT=2");
    clear_env(NULL);
    setenv("SESSION_SHARD_INDEX", "1", 1);
    expect_refused("SESSION_SHARD_INDEX=1 is not below the shard count 1 (the size 1 (no "
                   "launcher))");
}

/* TensorLayer's use_last_worker_as_evaluator: the last task evaluates, the rest train. */
static void the_last_task_can_be_set_aside_as_evaluator(void **state) {
    ses_task_spec_t s;

    (void)state;
    ses_task_spec_init(&s);
    assert_false(s.has_evaluator);
    assert_false(s.is_evaluator);
    assert_int_equal(ses_task_workers(&s), 1);
    assert_int_equal(ses_task_spec_use_last_as_evaluator(&s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "at least 2 tasks"));
    s.size = s.shard_count = 4;
    s.rank = s.shard_index = 3;
    assert_int_equal(ses_task_spec_use_last_as_evaluator(&s), SES_OK);
    assert_true(s.has_evaluator);
    assert_true(s.is_evaluator);
    assert_int_equal(ses_task_workers(&s), 3);
    assert_int_equal(s.shard_index, 0); /* the evaluator reads everything */
    assert_int_equal(s.shard_count, 1);
    assert_int_equal(ses_task_spec_check(&s), SES_OK);
    assert_int_equal(ses_task_spec_use_last_as_evaluator(&s), SES_OK); /* twice is once */
    assert_int_equal(ses_task_workers(&s), 3);
    assert_int_equal(s.shard_count, 1);
    ses_task_spec_init(&s);
    s.size = s.shard_count = 4;
    s.rank = s.shard_index = 1;
    assert_int_equal(ses_task_spec_use_last_as_evaluator(&s), SES_OK);
    assert_false(s.is_evaluator);
    assert_int_equal(s.shard_index, 1); /* the training tasks share the data */
    assert_int_equal(s.shard_count, 3);
    /* An override is left alone. */
    ses_task_spec_init(&s);
    s.size = 4;
    s.rank = 1;
    s.shard_index = 0;
    s.shard_count = 1;
    assert_int_equal(ses_task_spec_use_last_as_evaluator(&s), SES_OK);
    assert_int_equal(s.shard_count, 1);
    /* An explicit spec must be consistent. */
    s.is_evaluator = 1;
    assert_int_equal(ses_task_spec_check(&s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "is_evaluator is 1 on rank 1 of 4"));
    assert_int_equal(ses_task_workers(NULL), 1);
    assert_int_equal(ses_task_spec_use_last_as_evaluator(NULL), SES_INVALID_ARGUMENT);
}

static void session_evaluator_turns_it_on_from_the_environment(void **state) {
    ses_task_spec_t s;

    (void)state;
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("SESSION_EVALUATOR", "1", 1);
    assert_int_equal(ses_task_spec_from_env(&s), SES_OK);
    assert_true(s.is_evaluator);
    assert_false(s.is_chief);
    assert_int_equal(ses_task_workers(&s), 3);
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    assert_int_equal(ses_task_spec_from_env(&s), SES_OK);
    assert_true(s.has_evaluator);
    assert_false(s.is_evaluator);
    assert_true(s.is_chief);
    assert_int_equal(s.shard_index, 0);
    assert_int_equal(s.shard_count, 3);
    setenv("SESSION_SHARD_INDEX", "3", 1);
    expect_refused("SESSION_SHARD_INDEX=3 is not below the shard count 3 (OMPI_COMM_WORLD_SIZE=4, "
                   "less SESSION_EVALUATOR's task)");
    unsetenv("SESSION_SHARD_INDEX");
    setenv("SESSION_EVALUATOR", "0", 1);
    assert_int_equal(ses_task_spec_from_env(&s), SES_OK);
    assert_false(s.has_evaluator);
    assert_int_equal(ses_task_workers(&s), 4);
    setenv("SESSION_EVALUATOR", "yes", 1);
    expect_refused("SESSION_EVALUATOR is \"yes\", not 0 or 1");
    clear_env(NULL);
    setenv("SESSION_EVALUATOR", "1", 1);
    expect_refused("SESSION_EVALUATOR=1 needs at least 2 tasks (one trains, the last evaluates), "
                   "and the size 1 (no launcher)");
}

/* ses_mpi_init's path: rank and size from elsewhere, the process's own settings on top. */
static void apply_env_reads_the_settings_onto_a_given_spec(void **state) {
    ses_task_spec_t s;

    (void)state;
    ses_task_spec_init(&s);
    s.launcher = "mpi";
    s.rank = 2;
    s.size = 3;
    setenv("SESSION_EVALUATOR", "1", 1);
    assert_int_equal(ses_task_spec_apply_env(&s), SES_OK);
    assert_true(s.is_evaluator);
    assert_false(s.is_chief);
    setenv("SESSION_SHARD_COUNT", "two", 1);
    assert_int_equal(ses_task_spec_apply_env(&s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "SESSION_SHARD_COUNT is \"two\""));
    setenv("SESSION_SHARD_COUNT", "2", 1);
    setenv("SESSION_SHARD_INDEX", "2", 1);
    assert_int_equal(ses_task_spec_apply_env(&s), SES_INVALID_ARGUMENT);
    assert_non_null(
        strstr(ses_last_error(), "SESSION_SHARD_INDEX=2 is not below SESSION_SHARD_COUNT=2"));
    s.rank = 3;
    assert_int_equal(ses_task_spec_apply_env(&s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "the rank 3 (mpi) is not below the size 3 (mpi)"));
    assert_int_equal(ses_task_spec_apply_env(NULL), SES_INVALID_ARGUMENT);
    /* An evaluator the program set stays without the variable. */
    clear_env(NULL);
    ses_task_spec_init(&s);
    s.rank = 0;
    s.size = s.shard_count = 3;
    assert_int_equal(ses_task_spec_use_last_as_evaluator(&s), SES_OK);
    assert_int_equal(ses_task_spec_apply_env(&s), SES_OK);
    assert_true(s.has_evaluator);
    assert_int_equal(s.shard_count, 2);
}

static void shards_cover_every_example_once(void **state) {
    ses_task_spec_t s;

    (void)state;
    ses_task_spec_init(&s);
    for (uint32_t count = 1; count <= 7; count++) {
        for (size_t n = 0; n <= 23; n++) {
            size_t next = 0, smallest = (size_t)-1, largest = 0;
            s.shard_count = count;
            for (uint32_t i = 0; i < count; i++) {
                size_t b, e;
                s.shard_index = i;
                ses_task_shard_range(&s, n, &b, &e);
                assert_int_equal(b, next);
                next = e;
                smallest = e - b < smallest ? e - b : smallest;
                largest = e - b > largest ? e - b : largest;
            }
            assert_int_equal(next, n);
            assert_true(largest - smallest <= 1);
        }
    }
}

static void the_default_device_is_cpu_without_gpus(void **state) {
    ses_task_spec_t s;
    char device[32];

    (void)state;
    ses_task_spec_init(&s);
    s.local_rank = 0;
    assert_int_equal(ses_task_default_device(&s, NULL, device, sizeof device), SES_OK);
    assert_string_equal(device, "cpu");
    assert_int_equal(ses_task_default_device(&s, NULL, device, 2), SES_INVALID_ARGUMENT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(without_a_launcher_it_is_task_0_of_1, clear_env),
        cmocka_unit_test_setup(open_mpi_pmi_and_slurm_are_read, clear_env),
        cmocka_unit_test_setup(bad_values_are_named, clear_env),
        cmocka_unit_test_setup(slurm_without_ntasks_per_node_reads_tasks_per_node, clear_env),
        cmocka_unit_test_setup(slurm_lists_of_several_counts_are_indexed_by_node, clear_env),
        cmocka_unit_test_setup(slurm_nodes_alone_give_the_even_split, clear_env),
        cmocka_unit_test_setup(slurm_malformed_task_lists_are_named, clear_env),
        cmocka_unit_test_setup(inconsistent_values_name_their_variables, clear_env),
        cmocka_unit_test_setup(the_last_task_can_be_set_aside_as_evaluator, clear_env),
        cmocka_unit_test_setup(session_evaluator_turns_it_on_from_the_environment, clear_env),
        cmocka_unit_test_setup(apply_env_reads_the_settings_onto_a_given_spec, clear_env),
        cmocka_unit_test_setup(shards_cover_every_example_once, clear_env),
        cmocka_unit_test_setup(the_default_device_is_cpu_without_gpus, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
