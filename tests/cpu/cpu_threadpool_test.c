/*
 * The CPU driver's thread pool (plugins/cpu/cpu_threadpool.c) called directly: its spin time
 * "auto" is the default spin until a kernel state counts itself as running on oneDNN's OpenMP
 * team (cpu__pool_park_for), none while one is counted, and the default again once every such
 * state is released; an explicit spin time stays what it is. Jobs run the same either way. And
 * a spinning worker gives its CPU up to a runnable thread: it does not spin out its time beside
 * work that needs the core.
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

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

static uint64_t ns_of(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * The process on one CPU, a pool of 2 with a spin of 100 ms, one job; then the test's thread
 * computes for 60 ms on that CPU. A worker that spun out its 100 ms beside it would take about
 * half of the CPU (30 ms: 20.5 when the spin only paused); one that yields after its first
 * 50 us takes well under a millisecond (0.06-0.1 ms). Other load on the CPU only lowers the
 * worker's share.
 */
static void a_spinning_worker_gives_way_to_runnable_work(void **state) {
    (void)state;
    cpu_set_t one, all;
    assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
    const int cpu = sched_getcpu();
    assert_true(cpu >= 0 && cpu < CPU_SETSIZE);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);

    cpu__pool_t *pool = NULL;
    assert_int_equal(cpu__pool_create(2, 100000, 0, &pool), 0); /* the worker inherits `one` */
    check_a_job(pool);

    const uint64_t process0 = ns_of(CLOCK_PROCESS_CPUTIME_ID);
    const uint64_t self0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
    const uint64_t start = ns_of(CLOCK_MONOTONIC);
    volatile uint64_t spin = 0;
    while (ns_of(CLOCK_MONOTONIC) - start < 60000000u)
        spin++;
    const uint64_t worker_ns =
        (ns_of(CLOCK_PROCESS_CPUTIME_ID) - process0) - (ns_of(CLOCK_THREAD_CPUTIME_ID) - self0);

    cpu__pool_destroy(pool);
    assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
    print_message("the worker took %.3f ms of CPU in the test's 60 ms\n", worker_ns / 1e6);
    assert_true(worker_ns < 10000000u);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(auto_spins_until_a_kernel_runs_on_the_openmp_team),
        cmocka_unit_test(an_explicit_spin_time_stays),
        cmocka_unit_test(a_spinning_worker_gives_way_to_runnable_work),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
