/*
 * The CPU driver's thread pool (plugins/cpu/cpu_threadpool.c) called directly: its spin time
 * "auto" is the default spin until a kernel state counts itself as running on oneDNN's OpenMP
 * team (cpu__pool_park_for), none while one is counted, and the default again once every such
 * state is released; an explicit spin time stays what it is. Jobs run the same either way.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cpu_internal.h"

static const uint64_t default_ns = (uint64_t)CPU__SPIN_US_DEFAULT * 1000u;

/* Adds the squares of [begin, end) into ctx (an atomic sum). */
static void sum_squares(void *ctx, uint64_t begin, uint64_t end) {
    uint64_t s = 0;
    for (uint64_t i = begin; i < end; i++)
        s += i * i;
    atomic_fetch_add((_Atomic uint64_t *)ctx, s);
}

/* Runs a job large enough to be split on every thread and checks its sum. */
static void check_a_job(cpu__pool_t *pool) {
    const uint64_t n = 1u << 20;
    _Atomic uint64_t sum = 0;
    uint64_t want = 0;
    for (uint64_t i = 0; i < n; i++)
        want += i * i;
    cpu__parallel_for(pool, n, 1, sum_squares, (void *)&sum);
    assert_true(atomic_load(&sum) == want);
}

static void auto_spins_until_a_kernel_runs_on_the_openmp_team(void **state) {
    (void)state;
    cpu__pool_t *pool = NULL;
    cpu__team_user_t conv = {NULL}, gemm = {NULL};

    assert_int_equal(cpu__pool_create(4, CPU__SPIN_AUTO, 0, &pool), 0);
    assert_true(cpu__pool_spin_ns(pool) == default_ns);
    check_a_job(pool);

    cpu__pool_park_for(pool, &conv);
    assert_ptr_equal(conv.pool, pool);
    assert_true(cpu__pool_spin_ns(pool) == 0);
    cpu__pool_park_for(pool, &conv); /* its second launch: counted once */
    cpu__pool_park_for(pool, &gemm);
    check_a_job(pool);

    cpu__team_user_release(&conv);
    assert_null(conv.pool);
    assert_true(cpu__pool_spin_ns(pool) == 0); /* the GEMM's state still counts */
    cpu__team_user_release(&gemm);
    assert_true(cpu__pool_spin_ns(pool) == default_ns);
    cpu__team_user_release(&gemm); /* released twice, or never counted: nothing changes */
    cpu__team_user_release(NULL);
    assert_true(cpu__pool_spin_ns(pool) == default_ns);
    check_a_job(pool);
    cpu__pool_destroy(pool);
}

static void an_explicit_spin_time_stays(void **state) {
    (void)state;
    cpu__pool_t *pool = NULL;
    cpu__team_user_t conv = {NULL};

    assert_int_equal(cpu__pool_create(4, 200, 0, &pool), 0);
    cpu__pool_park_for(pool, &conv);
    assert_true(cpu__pool_spin_ns(pool) == 200000u);
    check_a_job(pool);
    cpu__team_user_release(&conv);
    cpu__pool_destroy(pool);

    assert_int_equal(cpu__pool_create(4, 0, 0, &pool), 0);
    assert_true(cpu__pool_spin_ns(pool) == 0);
    check_a_job(pool);
    cpu__pool_destroy(pool);
    assert_true(cpu__pool_spin_ns(NULL) == 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(auto_spins_until_a_kernel_runs_on_the_openmp_team),
        cmocka_unit_test(an_explicit_spin_time_stays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
