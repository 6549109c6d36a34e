/* TaskSpec from each launcher's environment, explicit specs, default devices and shards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <session/task.h>

static const char *const all_vars[] = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
    "SESSION_SHARD_INDEX", "SESSION_SHARD_COUNT"};

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
    assert_non_null(strstr(ses_last_error(), "rank 4 is not below the size 4"));
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
        cmocka_unit_test_setup(shards_cover_every_example_once, clear_env),
        cmocka_unit_test_setup(the_default_device_is_cpu_without_gpus, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
