/*
 * Many threads on one session (run under ThreadSanitizer by scripts/test's "tsan" configuration):
 * 8 threads × 10,000 evals with their own feeds and checked results, some through ses_session_eval
 * with different fetch sets, some through compiled plans (thread 3 its own; threads 6 and 7 one
 * plan they share, whose runs are serialized); and a close while evals are in flight, after
 * which every eval fails cleanly saying the session is closed.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define THREADS 8
#define EVALS 10000
#define N 4

typedef struct shared {
    ses_graph_t *g;
    ses_session_t *s;
    ses_edge_t x, y, z;      /* y = x*x + x, z = Relu(y - 6) */
    ses_plan_t *shared_plan; /* fetches y and z; run by threads 6 and 7 */
    atomic_int started;
} shared_t;

typedef struct worker {
    shared_t *sh;
    int id;
    int evals;
    int wrong;      /* results that were not the expected values */
    int failed;     /* evals that failed other than by the session closing */
    int closed;     /* evals refused because the session closed */
    int until_fail; /* loop until an eval fails (the close test) */
} worker_t;

static void build(shared_t *sh) {
    int64_t n = N;
    ses_edge_t xx, in[2], six;
    ses_tensor_t *c;
    float six_value = 6.0f;

    assert_int_equal(ses_graph_create(&sh->g), SES_OK);
    assert_int_equal(ses_graph_placeholder(sh->g, "x", SES_F32, 1, &n, &sh->x), SES_OK);
    in[0] = in[1] = sh->x;
    assert_int_equal(ses_graph_op(sh->g, "Mul", "xx", in, 2, NULL, 0, &xx), SES_OK);
    in[0] = xx;
    assert_int_equal(ses_graph_op(sh->g, "Add", "y", in, 2, NULL, 0, &sh->y), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 0, NULL, &six_value, sizeof six_value, &c),
                     SES_OK);
    assert_int_equal(ses_graph_constant(sh->g, "six", c, &six), SES_OK);
    ses_tensor_release(c);
    in[0] = sh->y;
    in[1] = six;
    assert_int_equal(ses_graph_op(sh->g, "Sub", "y6", in, 2, NULL, 0, &xx), SES_OK);
    assert_int_equal(ses_graph_op(sh->g, "Relu", "z", &xx, 1, NULL, 0, &sh->z), SES_OK);
}

static int check(const ses_tensor_t *y, const ses_tensor_t *z, const float *x) {
    const float *yv = y ? ses_tensor_data((ses_tensor_t *)y) : NULL;
    const float *zv = z ? ses_tensor_data((ses_tensor_t *)z) : NULL;

    for (int i = 0; i < N; i++) {
        float want = x[i] * x[i] + x[i];
        if (yv && yv[i] != want)
            return 0;
        if (zv && zv[i] != (want - 6.0f > 0 ? want - 6.0f : 0.0f))
            return 0;
    }
    return 1;
}

static void *work(void *p) {
    worker_t *w = p;
    shared_t *sh = w->sh;
    ses_tensor_t *feed;
    ses_plan_t *plan = NULL;
    int64_t n = N;
    float *x;
    /* A plan is freed by its session's close, so the close test evaluates without plans. */
    int use_plan = (w->id == 3 || w->id >= 6) && !w->until_fail;

    if (ses_tensor_create(SES_F32, 1, &n, &feed) != SES_OK) {
        w->failed++;
        return NULL;
    }
    x = ses_tensor_data(feed);
    if (use_plan && w->id >= 6) {
        plan = sh->shared_plan;
    } else if (use_plan) {
        ses_edge_t fetches[2] = {sh->y, sh->z};
        if (ses_session_compile(sh->s, fetches, 2, &sh->x, 1, NULL, 0, &plan) != SES_OK) {
            w->failed++;
            use_plan = 0;
        }
    }
    atomic_fetch_add(&sh->started, 1);
    for (int k = 0; w->until_fail || k < EVALS; k++) {
        ses_tensor_t *out[2] = {NULL, NULL};
        ses_status_t st;
        int mode = (w->id + k) % 3;

        for (int i = 0; i < N; i++)
            x[i] = (float)(w->id * 100 + (k % 50) + i) / 8.0f;
        if (use_plan) {
            st = ses_plan_run(plan, &feed, 1, out);
        } else {
            ses_feed_t f = {sh->x, feed};
            ses_edge_t fetches[2] = {mode == 1 ? sh->z : sh->y, sh->z};
            st = ses_session_eval(sh->s, fetches, mode == 2 ? 2 : 1, &f, 1, NULL, 0, out);
            if (st == SES_OK && mode == 1) {
                out[1] = out[0];
                out[0] = NULL;
            }
        }
        if (st == SES_OK) {
            w->evals++;
            w->wrong += !check(out[0], out[1], x);
        } else if (st == SES_FAILED_PRECONDITION && strstr(ses_last_error(), "closed")) {
            w->closed++;
            break;
        } else {
            w->failed++;
            print_error("thread %d: %s\n", w->id, ses_last_error());
            break;
        }
        ses_tensor_release(out[0]);
        ses_tensor_release(out[1]);
    }
    ses_tensor_release(feed);
    return NULL;
}

static void eight_threads_evaluate_one_session_with_their_own_feeds(void **state) {
    shared_t sh = {0};
    pthread_t threads[THREADS];
    worker_t workers[THREADS];
    const char *cpu = "cpu";

    (void)state;
    build(&sh);
    assert_int_equal(ses_session_open(sh.g, &cpu, 1, NULL, &sh.s), SES_OK);
    {
        ses_edge_t fetches[2] = {sh.y, sh.z};
        assert_int_equal(ses_session_compile(sh.s, fetches, 2, &sh.x, 1, NULL, 0, &sh.shared_plan),
                         SES_OK);
    }
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker_t){&sh, i, 0, 0, 0, 0, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].failed, 0);
        assert_int_equal(workers[i].wrong, 0);
        assert_int_equal(workers[i].evals, EVALS);
    }
    ses_session_destroy(sh.s);
    ses_graph_release(sh.g);
}

static void closing_while_evals_are_in_flight_fails_them_cleanly(void **state) {
    shared_t sh = {0};
    pthread_t threads[THREADS];
    worker_t workers[THREADS];
    const char *cpu = "cpu";
    ses_tensor_t *out = NULL;
    int total = 0;

    (void)state;
    build(&sh);
    assert_int_equal(ses_session_open(sh.g, &cpu, 1, NULL, &sh.s), SES_OK);
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker_t){&sh, i, 0, 0, 0, 0, 1};
        assert_int_equal(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    /* Let every thread start and run some evals, then close under them. */
    while (atomic_load(&sh.started) < THREADS)
        sched_yield();
    for (int spin = 0; spin < 200; spin++)
        sched_yield();
    assert_int_equal(ses_session_close(sh.s), SES_OK);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].failed, 0);
        assert_int_equal(workers[i].wrong, 0);
        assert_int_equal(workers[i].closed, 1);
        total += workers[i].evals;
    }
    print_message("%d evals before the close\n", total);
    assert_int_equal(ses_session_eval(sh.s, &sh.y, 1, NULL, 0, NULL, 0, &out),
                     SES_FAILED_PRECONDITION);
    assert_null(out);
    assert_non_null(strstr(ses_last_error(), "closed"));
    ses_session_destroy(sh.s);
    ses_graph_release(sh.g);
}

/* Plans destroyed by their own threads while another thread closes the session: each plan is
 * freed once, by whichever call takes it first (ASan and TSan would see a double free). */
#define PLANS 64

typedef struct destroyer {
    ses_plan_t **plans;
    int first;
    atomic_int *go;
} destroyer_t;

static void *destroy_plans(void *p) {
    destroyer_t *d = p;

    while (!atomic_load(d->go))
        sched_yield();
    for (int i = d->first; i < PLANS; i += 2)
        ses_plan_destroy(d->plans[i]);
    return NULL;
}

static void plans_destroyed_while_the_session_closes_are_freed_once(void **state) {
    shared_t sh = {0};
    const char *cpu = "cpu";

    (void)state;
    build(&sh);
    for (int round = 0; round < 20; round++) {
        ses_plan_t *plans[PLANS];
        pthread_t threads[2];
        destroyer_t d[2];
        atomic_int go = 0;
        assert_int_equal(ses_session_open(sh.g, &cpu, 1, NULL, &sh.s), SES_OK);
        for (int i = 0; i < PLANS; i++)
            assert_int_equal(ses_session_compile(sh.s, i % 2 ? &sh.y : &sh.z, 1, &sh.x, 1, NULL,
                                                 0, &plans[i]),
                             SES_OK);
        for (int t = 0; t < 2; t++) {
            d[t] = (destroyer_t){plans, t, &go};
            assert_int_equal(pthread_create(&threads[t], NULL, destroy_plans, &d[t]), 0);
        }
        atomic_store(&go, 1);
        for (int spin = 0; spin < round; spin++)
            sched_yield();
        assert_int_equal(ses_session_close(sh.s), SES_OK);
        for (int t = 0; t < 2; t++)
            pthread_join(threads[t], NULL);
        ses_session_destroy(sh.s);
    }
    ses_graph_release(sh.g);
}

/*
 * Large values go through the CPU driver's thread pool (above CPU__PARALLEL_MIN element
 * operations) and MatMul through OpenBLAS: 8 threads post jobs to one pool of 4 workers at once.
 * y = MatMul(x, w) + x with x [64,64] fed per thread and w the constant 2·I, so y = 3x exactly.
 */
#define BIG 64
#define BIG_EVALS 100

typedef struct big {
    ses_session_t *s;
    ses_edge_t x, y;
    int id, evals, wrong, failed;
} big_t;

static void *work_big(void *p) {
    big_t *b = p;
    int64_t dims[2] = {BIG, BIG};
    ses_tensor_t *feed;
    float *x;

    if (ses_tensor_create(SES_F32, 2, dims, &feed) != SES_OK) {
        b->failed++;
        return NULL;
    }
    x = ses_tensor_data(feed);
    for (int k = 0; k < BIG_EVALS; k++) {
        ses_feed_t f;
        ses_tensor_t *y = NULL;
        const float *yv;

        for (int i = 0; i < BIG * BIG; i++)
            x[i] = (float)((b->id * 7 + k + i) % 31) - 15.0f;
        f = (ses_feed_t){b->x, feed};
        if (ses_session_eval(b->s, &b->y, 1, &f, 1, NULL, 0, &y) != SES_OK) {
            print_error("thread %d: %s\n", b->id, ses_last_error());
            b->failed++;
            break;
        }
        yv = ses_tensor_data(y);
        for (int i = 0; i < BIG * BIG; i++)
            if (yv[i] != 3.0f * x[i]) {
                b->wrong++;
                break;
            }
        b->evals++;
        ses_tensor_release(y);
    }
    ses_tensor_release(feed);
    return NULL;
}

static void eight_threads_share_the_cpu_thread_pool_and_blas(void **state) {
    int64_t dims[2] = {BIG, BIG};
    static float w_values[BIG * BIG];
    ses_graph_t *g;
    ses_edge_t x, w, xw, y, in[2];
    ses_tensor_t *wt;
    ses_session_t *s;
    ses_session_options_t so;
    const char *cpu = "cpu";
    pthread_t threads[THREADS];
    big_t workers[THREADS];

    (void)state;
    for (int i = 0; i < BIG; i++)
        w_values[i * BIG + i] = 2.0f;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 2, dims, &x), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 2, dims, w_values, sizeof w_values, &wt),
                     SES_OK);
    assert_int_equal(ses_graph_constant(g, "w", wt, &w), SES_OK);
    ses_tensor_release(wt);
    in[0] = x;
    in[1] = w;
    assert_int_equal(ses_graph_op(g, "MatMul", "xw", in, 2, NULL, 0, &xw), SES_OK);
    in[0] = xw;
    in[1] = x;
    assert_int_equal(ses_graph_op(g, "Add", "y", in, 2, NULL, 0, &y), SES_OK);
    ses_session_options_init(&so);
    so.threads = 4;
    assert_int_equal(ses_session_open(g, &cpu, 1, &so, &s), SES_OK);
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (big_t){s, x, y, i, 0, 0, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, work_big, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].failed, 0);
        assert_int_equal(workers[i].wrong, 0);
        assert_int_equal(workers[i].evals, BIG_EVALS);
    }
    ses_session_destroy(s);
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eight_threads_evaluate_one_session_with_their_own_feeds),
        cmocka_unit_test(closing_while_evals_are_in_flight_fails_them_cleanly),
        cmocka_unit_test(plans_destroyed_while_the_session_closes_are_freed_once),
        cmocka_unit_test(eight_threads_share_the_cpu_thread_pool_and_blas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
