/*
 * The monitored session and the built-in hooks: the order hooks are called in, what before_run
 * may add to a run, stopping, step counting, errors and ownership, the step logger's output, and
 * the checkpoint saver and loader.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <session/checkpoint.h>
#include <session/session.h>

#include "test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* ---- helpers ---------------------------------------------------------------------------- */

static ses_tensor_t *scalar(float v) {
    ses_tensor_t *t = NULL;
    assert_int_equal(ses_tensor_create_from(SES_F32, 0, NULL, &v, sizeof v, &t), SES_OK);
    return t;
}

static float value_of(ses_tensor_t *t) {
    float v;
    assert_non_null(t);
    assert_int_equal(ses_tensor_dtype(t), SES_F32);
    memcpy(&v, ses_tensor_data(t), sizeof v);
    return v;
}

static ses_edge_t constant(ses_graph_t *g, const char *name, float v) {
    ses_tensor_t *t = scalar(v);
    ses_edge_t e;
    assert_int_equal(ses_graph_constant(g, name, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static ses_edge_t binary(ses_graph_t *g, const char *op, const char *name, ses_edge_t a,
                         ses_edge_t b) {
    ses_edge_t in[2] = {a, b}, out;
    if (ses_graph_op(g, op, name, in, 2, NULL, 0, &out) != SES_OK)
        fail_msg("%s: %s", name, ses_last_error());
    return out;
}

static ses_session_t *open_cpu(ses_graph_t *g) {
    ses_session_t *s = NULL;
    const char *devices[] = {"cpu"};
    if (ses_session_open(g, devices, 1, NULL, &s) != SES_OK)
        fail_msg("open: %s", ses_last_error());
    return s;
}

static ses_monitored_t *create(ses_session_t *s, ses_hook_t *const *hooks, size_t n) {
    ses_monitored_t *m = NULL;
    if (ses_monitored_create(s, hooks, n, &m) != SES_OK)
        fail_msg("ses_monitored_create: %s", ses_last_error());
    return m;
}

/* One run fetching @p fetch; returns its value. */
static float run1(ses_monitored_t *m, ses_edge_t fetch) {
    ses_tensor_t *out = NULL;
    float v;
    if (ses_monitored_run(m, &fetch, 1, NULL, 0, NULL, 0, &out) != SES_OK)
        fail_msg("ses_monitored_run: %s", ses_last_error());
    v = value_of(out);
    ses_tensor_release(out);
    return v;
}

/* A graph with c = 2 * 3 (constants "a" and "k") and d = c + 1. */
typedef struct small {
    ses_graph_t *g;
    ses_session_t *s;
    ses_edge_t a, k, c, d;
} small_t;

static void small_open(small_t *t) {
    assert_int_equal(ses_graph_create(&t->g), SES_OK);
    t->a = constant(t->g, "a", 2);
    t->k = constant(t->g, "k", 3);
    t->c = binary(t->g, "Mul", "c", t->a, t->k);
    t->d = binary(t->g, "Add", "d", t->c, constant(t->g, "one", 1));
    t->s = open_cpu(t->g);
}

static void small_close(small_t *t) {
    ses_session_destroy(t->s);
    ses_graph_release(t->g);
}

/* ---- a probe: records every call, and fails or stops when told ------------------------------ */

static char journal[8192];

static void note(const ses_hook_t *h, const char *point, ses_monitored_t *m) {
    size_t used = strlen(journal);
    snprintf(journal + used, sizeof journal - used, "%s.%s@%llu ", h->name, point,
             (unsigned long long)ses_monitored_step(m));
}

typedef struct probe {
    ses_hook_t hook;
    const char *fail_point;   /* fail at this point ... */
    uint64_t fail_step;       /* ... when the step reads this */
    ses_status_t fail_status;
    uint64_t stop_step;       /* request a stop in after_run at this step (0: never) */
    int try_nested;           /* call ses_monitored_run and close from inside after_run */
    ses_status_t nested_run, nested_close;
    int destroyed;            /* set by destroy (when the test gives it one) */
} probe_t;

static ses_status_t probe_result(probe_t *p, const char *point, ses_monitored_t *m) {
    note(&p->hook, point, m);
    if (p->fail_point && !strcmp(p->fail_point, point) && ses_monitored_step(m) == p->fail_step)
        return p->fail_status;
    return SES_OK;
}

static ses_status_t probe_begin(ses_hook_t *h, ses_monitored_t *m) {
    return probe_result((probe_t *)h, "begin", m);
}

static ses_status_t probe_after_create(ses_hook_t *h, ses_monitored_t *m, ses_session_t *s) {
    assert_ptr_equal(s, ses_monitored_session(m));
    return probe_result((probe_t *)h, "after_create", m);
}

static ses_status_t probe_before_run(ses_hook_t *h, ses_monitored_t *m, ses_run_args_t *args) {
    (void)args;
    return probe_result((probe_t *)h, "before_run", m);
}

static ses_status_t probe_after_run(ses_hook_t *h, ses_monitored_t *m,
                                    const ses_run_args_t *args) {
    probe_t *p = (probe_t *)h;

    (void)args;
    if (p->stop_step && ses_monitored_step(m) == p->stop_step)
        ses_monitored_request_stop(m);
    if (p->try_nested) {
        p->nested_run = ses_monitored_run(m, NULL, 0, NULL, 0, NULL, 0, NULL);
        p->nested_close = ses_monitored_close(m);
    }
    return probe_result(p, "after_run", m);
}

static ses_status_t probe_end(ses_hook_t *h, ses_monitored_t *m, ses_session_t *s) {
    assert_ptr_equal(s, ses_monitored_session(m));
    return probe_result((probe_t *)h, "end", m);
}

static void probe_destroy(ses_hook_t *h) {
    ((probe_t *)h)->destroyed++;
}

static void probe_init(probe_t *p, const char *name) {
    memset(p, 0, sizeof *p);
    ses_hook_init(&p->hook);
    p->hook.name = name;
    p->hook.begin = probe_begin;
    p->hook.after_create = probe_after_create;
    p->hook.before_run = probe_before_run;
    p->hook.after_run = probe_after_run;
    p->hook.end = probe_end;
}

/* ---- order and steps -------------------------------------------------------------------- */

/* TF's MonitoredSession order: every begin, every after_create, then per run every before_run
 * and every after_run, and at close every end, each in the order the hooks were given. */
static void hooks_are_called_in_order_at_every_point(void **state) {
    small_t t;
    probe_t a, b;
    ses_hook_t *hooks[2] = {&a.hook, &b.hook};
    ses_monitored_t *m;

    (void)state;
    small_open(&t);
    probe_init(&a, "a");
    probe_init(&b, "b");
    journal[0] = 0;
    m = create(t.s, hooks, 2);
    assert_string_equal(journal, "a.begin@0 b.begin@0 a.after_create@0 b.after_create@0 ");
    journal[0] = 0;
    assert_true(run1(m, t.c) == 6.0f);
    assert_true(run1(m, t.c) == 6.0f);
    /* before_run sees the runs completed so far; after_run counts this one. */
    assert_string_equal(journal, "a.before_run@0 b.before_run@0 a.after_run@1 b.after_run@1 "
                                 "a.before_run@1 b.before_run@1 a.after_run@2 b.after_run@2 ");
    journal[0] = 0;
    assert_int_equal(ses_monitored_close(m), SES_OK);
    assert_string_equal(journal, "a.end@2 b.end@2 ");
    /* Closing again calls nothing; the loop is over. */
    journal[0] = 0;
    assert_int_equal(ses_monitored_close(m), SES_OK);
    assert_string_equal(journal, "");
    assert_true(ses_monitored_should_stop(m));
    ses_monitored_destroy(m);
    small_close(&t);
}

static void the_step_counts_runs_from_the_step_that_was_set(void **state) {
    small_t t;
    ses_monitored_t *m;

    (void)state;
    small_open(&t);
    m = create(t.s, NULL, 0);
    assert_int_equal(ses_monitored_step(m), 0);
    run1(m, t.c);
    assert_int_equal(ses_monitored_step(m), 1);
    ses_monitored_set_step(m, 100);
    run1(m, t.c);
    run1(m, t.c);
    assert_int_equal(ses_monitored_step(m), 102);
    assert_ptr_equal(ses_monitored_session(m), t.s);
    assert_false(ses_monitored_should_stop(m));
    ses_monitored_destroy(m);
    /* The session stays open: the monitored session only borrowed it. */
    {
        ses_tensor_t *out = NULL;
        assert_int_equal(ses_session_eval(t.s, &t.d, 1, NULL, 0, NULL, 0, &out), SES_OK);
        assert_true(value_of(out) == 7.0f);
        ses_tensor_release(out);
    }
    small_close(&t);
}

/* ---- what hooks add to a run -------------------------------------------------------------- */

typedef struct augment {
    ses_hook_t hook;
    ses_edge_t feed_edge, fetch_edge;
    ses_node_t *target;
    ses_tensor_t *feed_value;
    size_t index;
    size_t seen_count, seen_caller_count;
    float seen_value, seen_caller_value;
    ses_status_t late_add;
} augment_t;

static ses_status_t augment_before_run(ses_hook_t *h, ses_monitored_t *m, ses_run_args_t *args) {
    augment_t *x = (augment_t *)h;
    ses_status_t st;

    (void)m;
    /* Nothing ran yet: no values. */
    assert_null(ses_run_args_value(args, 0));
    if ((st = ses_run_args_add_feed(args, x->feed_edge, x->feed_value)) != SES_OK ||
        (st = ses_run_args_add_fetch(args, x->fetch_edge, &x->index)) != SES_OK)
        return st;
    return x->target ? ses_run_args_add_target(args, x->target) : SES_OK;
}

static ses_status_t augment_after_run(ses_hook_t *h, ses_monitored_t *m,
                                      const ses_run_args_t *args) {
    augment_t *x = (augment_t *)h;

    (void)m;
    x->seen_count = ses_run_args_fetch_count(args);
    x->seen_caller_count = ses_run_args_caller_fetch_count(args);
    x->seen_value = value_of(ses_run_args_value(args, x->index));
    x->seen_caller_value = value_of(ses_run_args_value(args, 0));
    assert_null(ses_run_args_value(args, x->seen_count));
    /* The run is under way: too late to add to it. */
    x->late_add = ses_run_args_add_fetch((ses_run_args_t *)args, x->fetch_edge, NULL);
    return SES_OK;
}

static void before_run_adds_a_fetch_a_feed_and_a_target_to_the_same_run(void **state) {
    small_t t;
    augment_t x;
    ses_hook_t *hook = &x.hook;
    ses_monitored_t *m;
    ses_node_t *side = NULL;
    ses_tensor_t *out[1] = {NULL};
    uint64_t before;

    (void)state;
    small_open(&t);
    assert_int_equal(ses_graph_find_node(t.g, "d", &side), SES_OK);
    memset(&x, 0, sizeof x);
    ses_hook_init(&x.hook);
    x.hook.name = "augment";
    x.hook.before_run = augment_before_run;
    x.hook.after_run = augment_after_run;
    x.feed_edge = t.k;
    x.feed_value = scalar(10);
    x.fetch_edge = t.d;
    m = create(t.s, &hook, 1);

    before = ses_session_kernel_calls(t.s);
    assert_int_equal(ses_monitored_run(m, &t.c, 1, NULL, 0, NULL, 0, out), SES_OK);
    /* The hook's feed of k changed the caller's c in the same run: 2 * 10. */
    assert_true(value_of(out[0]) == 20.0f);
    ses_tensor_release(out[0]);
    /* Its fetch came after the caller's, and saw the same run: d = c + 1. */
    assert_int_equal(x.index, 1);
    assert_int_equal(x.seen_count, 2);
    assert_int_equal(x.seen_caller_count, 1);
    assert_true(x.seen_value == 21.0f);
    assert_true(x.seen_caller_value == 20.0f);
    assert_int_equal(x.late_add, SES_FAILED_PRECONDITION);
    /* One eval ran Mul and Add, once each. */
    assert_int_equal(ses_session_kernel_calls(t.s) - before, 2);

    /* A target the caller did not name runs for its effect, in the same eval. */
    x.target = side;
    x.fetch_edge = t.c;
    before = ses_session_kernel_calls(t.s);
    assert_int_equal(ses_monitored_run(m, &t.c, 1, NULL, 0, NULL, 0, out), SES_OK);
    assert_true(value_of(out[0]) == 20.0f);
    ses_tensor_release(out[0]);
    assert_int_equal(ses_session_kernel_calls(t.s) - before, 2);
    assert_int_equal(x.seen_count, 2);

    /* The feed's value is retained only for the run: releasing it here frees it (ASan). */
    ses_tensor_release(x.feed_value);
    ses_monitored_destroy(m);
    small_close(&t);
}

static void a_hook_feeding_an_edge_the_caller_feeds_fails_the_run(void **state) {
    small_t t;
    augment_t x;
    ses_hook_t *hook = &x.hook;
    ses_monitored_t *m;
    ses_tensor_t *out = (ses_tensor_t *)0x1, *five = scalar(5);
    ses_feed_t feed;

    (void)state;
    small_open(&t);
    memset(&x, 0, sizeof x);
    ses_hook_init(&x.hook);
    x.hook.before_run = augment_before_run;
    x.feed_edge = t.k;
    x.feed_value = scalar(10);
    x.fetch_edge = t.d;
    m = create(t.s, &hook, 1);
    feed = (ses_feed_t){t.k, five};
    assert_int_equal(ses_monitored_run(m, &t.c, 1, &feed, 1, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_null(out);
    assert_non_null(strstr(ses_last_error(), "fed twice"));
    assert_int_equal(ses_monitored_step(m), 0);
    ses_tensor_release(x.feed_value);
    ses_tensor_release(five);
    ses_monitored_destroy(m);
    small_close(&t);
}

/* ---- stopping --------------------------------------------------------------------------- */

static void an_after_run_stop_request_ends_the_loop_and_later_runs_are_refused(void **state) {
    small_t t;
    probe_t p;
    ses_hook_t *hook = &p.hook;
    ses_monitored_t *m;
    ses_tensor_t *out = (ses_tensor_t *)0x1;
    int runs = 0;

    (void)state;
    small_open(&t);
    probe_init(&p, "p");
    p.stop_step = 3;
    m = create(t.s, &hook, 1);
    while (!ses_monitored_should_stop(m)) {
        run1(m, t.c);
        runs++;
    }
    assert_int_equal(runs, 3);
    assert_int_equal(ses_monitored_step(m), 3);
    assert_int_equal(ses_monitored_run(m, &t.c, 1, NULL, 0, NULL, 0, &out),
                     SES_FAILED_PRECONDITION);
    assert_null(out);
    assert_non_null(strstr(ses_last_error(), "stop was requested"));
    assert_int_equal(ses_monitored_step(m), 3);
    ses_monitored_destroy(m);
    small_close(&t);
}

static void the_caller_may_request_a_stop_too(void **state) {
    small_t t;
    ses_monitored_t *m;

    (void)state;
    small_open(&t);
    m = create(t.s, NULL, 0);
    run1(m, t.c);
    ses_monitored_request_stop(m);
    assert_true(ses_monitored_should_stop(m));
    assert_int_equal(ses_monitored_run(m, &t.c, 1, NULL, 0, NULL, 0, (ses_tensor_t *[1]){NULL}),
                     SES_FAILED_PRECONDITION);
    ses_monitored_destroy(m);
    small_close(&t);
}

static void stop_at_step_stops_after_the_last_step(void **state) {
    small_t t;
    ses_hook_t *hook = NULL;
    ses_monitored_t *m;
    int runs = 0;

    (void)state;
    small_open(&t);
    assert_int_equal(ses_hook_stop_at_step(5, &hook), SES_OK);
    assert_string_equal(hook->name, "stop_at_step");
    m = create(t.s, &hook, 1);
    while (!ses_monitored_should_stop(m)) {
        run1(m, t.c);
        runs++;
    }
    assert_int_equal(runs, 5);
    assert_int_equal(ses_monitored_step(m), 5);
    ses_monitored_destroy(m);
    small_close(&t);
}

static ses_status_t set_step_to_seven(ses_hook_t *h, ses_monitored_t *m, ses_session_t *s) {
    (void)h;
    (void)s;
    ses_monitored_set_step(m, 7);
    return SES_OK;
}

/* A restored step past the last one (a restart after training finished) runs nothing. */
static void stop_at_step_stops_at_once_when_the_step_set_at_create_is_past_it(void **state) {
    small_t t;
    ses_hook_t restore, *hooks[2] = {&restore, NULL};
    ses_monitored_t *m;

    (void)state;
    small_open(&t);
    ses_hook_init(&restore);
    restore.after_create = set_step_to_seven;
    assert_int_equal(ses_hook_stop_at_step(5, &hooks[1]), SES_OK);
    m = create(t.s, hooks, 2);
    assert_true(ses_monitored_should_stop(m));
    assert_int_equal(ses_monitored_step(m), 7);
    ses_monitored_destroy(m);
    small_close(&t);
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void stop_at_time_stops_once_the_time_has_passed(void **state) {
    small_t t;
    ses_hook_t *hook = NULL;
    ses_monitored_t *m;
    double start;
    int runs = 0;

    (void)state;
    small_open(&t);
    assert_int_equal(ses_hook_stop_at_time(-1, &hook), SES_INVALID_ARGUMENT);
    assert_null(hook);
    start = seconds_now();
    assert_int_equal(ses_hook_stop_at_time(0.05, &hook), SES_OK);
    m = create(t.s, &hook, 1);
    while (!ses_monitored_should_stop(m) && runs < 1000000) {
        run1(m, t.c);
        runs++;
    }
    /* A lower bound only: the hook may not stop early. How late it stops is not asserted. */
    assert_true(ses_monitored_should_stop(m));
    assert_true(seconds_now() - start >= 0.05);
    assert_true(runs >= 1);
    ses_monitored_destroy(m);

    /* 0 seconds: the first run is the last. */
    assert_int_equal(ses_hook_stop_at_time(0, &hook), SES_OK);
    m = create(t.s, &hook, 1);
    assert_false(ses_monitored_should_stop(m));
    run1(m, t.c);
    assert_true(ses_monitored_should_stop(m));
    ses_monitored_destroy(m);
    small_close(&t);
}

/* ---- the step logger -------------------------------------------------------------------- */

typedef struct counter {
    ses_hook_t hook;
    size_t fetches[8];
} counter_t;

static ses_status_t count_fetches(ses_hook_t *h, ses_monitored_t *m, const ses_run_args_t *args) {
    uint64_t step = ses_monitored_step(m);
    if (step < 8)
        ((counter_t *)h)->fetches[step] = ses_run_args_fetch_count(args);
    return SES_OK;
}

static void the_step_logger_prints_the_loss_every_n_steps(void **state) {
    small_t t;
    counter_t counter;
    ses_hook_t *hooks[2] = {NULL, &counter.hook};
    ses_monitored_t *m;
    FILE *f = tmpfile();
    char text[1024];
    size_t n;
    unsigned long long step;
    double loss, rate;

    (void)state;
    assert_non_null(f);
    small_open(&t);
    memset(&counter, 0, sizeof counter);
    ses_hook_init(&counter.hook);
    counter.hook.after_run = count_fetches;
    assert_int_equal(ses_hook_step_logger(0, t.d, f, &hooks[0]), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_hook_step_logger(2, t.d, f, &hooks[0]), SES_OK);
    m = create(t.s, hooks, 2);
    for (int i = 0; i < 5; i++)
        assert_true(run1(m, t.c) == 6.0f);
    /* The loss is fetched only on the steps that print it. */
    assert_int_equal(counter.fetches[1], 1);
    assert_int_equal(counter.fetches[2], 2);
    assert_int_equal(counter.fetches[3], 1);
    assert_int_equal(counter.fetches[4], 2);
    assert_int_equal(counter.fetches[5], 1);
    ses_monitored_destroy(m);

    rewind(f);
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    assert_int_equal(sscanf(text, "step %llu: loss %lf (%lf steps/s)\n", &step, &loss, &rate), 3);
    assert_int_equal(step, 2);
    assert_true(loss == 7.0);
    assert_true(rate >= 0);
    assert_non_null(strstr(text, "\nstep 4: loss 7 ("));
    assert_null(strstr(text, "step 1:"));
    assert_null(strstr(text, "step 3:"));
    assert_null(strstr(text, "step 5:"));
    assert_int_equal(text[n - 1], '\n');
    small_close(&t);
}

static void the_step_logger_without_a_loss_prints_the_rate(void **state) {
    small_t t;
    ses_hook_t *hook = NULL;
    ses_monitored_t *m;
    FILE *f = tmpfile();
    char text[256];
    size_t n;

    (void)state;
    assert_non_null(f);
    small_open(&t);
    assert_int_equal(ses_hook_step_logger(1, (ses_edge_t){NULL, 0}, f, &hook), SES_OK);
    m = create(t.s, &hook, 1);
    run1(m, t.c);
    ses_monitored_destroy(m);
    rewind(f);
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    assert_int_equal(strncmp(text, "step 1 (", 8), 0);
    assert_non_null(strstr(text, " steps/s)\n"));
    small_close(&t);
}

/* ---- errors and ownership ----------------------------------------------------------------- */

static void a_failing_hook_stops_the_run_and_is_named(void **state) {
    small_t t;
    probe_t a, b, c;
    ses_hook_t *hooks[3] = {&a.hook, &b.hook, &c.hook};
    ses_monitored_t *m;
    ses_tensor_t *out = (ses_tensor_t *)0x1;

    (void)state;
    small_open(&t);
    probe_init(&a, "a");
    probe_init(&b, "failing");
    probe_init(&c, "c");
    b.fail_point = "before_run";
    b.fail_step = 1;
    b.fail_status = SES_CANCELLED;
    m = create(t.s, hooks, 3);
    run1(m, t.c);
    journal[0] = 0;
    assert_int_equal(ses_monitored_run(m, &t.c, 1, NULL, 0, NULL, 0, &out), SES_CANCELLED);
    assert_null(out);
    assert_non_null(strstr(ses_last_error(), "hook \"failing\" before_run"));
    assert_non_null(strstr(ses_last_error(), "SES_CANCELLED"));
    /* Later hooks of that point, the eval and every after_run were skipped. */
    assert_string_equal(journal, "a.before_run@1 failing.before_run@1 ");
    assert_int_equal(ses_monitored_step(m), 1);
    assert_false(ses_monitored_should_stop(m));

    /* A failing after_run: the eval happened and counts, the values are dropped. */
    b.fail_point = "after_run";
    b.fail_step = 2;
    b.fail_status = SES_UNAVAILABLE;
    journal[0] = 0;
    assert_int_equal(ses_monitored_run(m, &t.c, 1, NULL, 0, NULL, 0, &out), SES_UNAVAILABLE);
    assert_null(out);
    assert_non_null(strstr(ses_last_error(), "hook \"failing\" after_run"));
    assert_string_equal(journal, "a.before_run@1 failing.before_run@1 c.before_run@1 "
                                 "a.after_run@2 failing.after_run@2 ");
    assert_int_equal(ses_monitored_step(m), 2);

    /* Every end runs even when the first fails; the first failure is what close returns. */
    a.fail_point = "end";
    a.fail_step = 2;
    a.fail_status = SES_INTERNAL;
    b.fail_point = "end";
    b.fail_step = 2;
    b.fail_status = SES_UNAVAILABLE;
    journal[0] = 0;
    assert_int_equal(ses_monitored_close(m), SES_INTERNAL);
    assert_non_null(strstr(ses_last_error(), "hook \"a\" end"));
    assert_string_equal(journal, "a.end@2 failing.end@2 c.end@2 ");
    ses_monitored_destroy(m);
    small_close(&t);
}

static void a_failing_eval_calls_no_after_run_and_counts_no_step(void **state) {
    small_t t;
    probe_t p;
    ses_hook_t *hook = &p.hook;
    ses_monitored_t *m;
    ses_edge_t x, y;
    ses_tensor_t *out = (ses_tensor_t *)0x1;

    (void)state;
    small_open(&t);
    assert_int_equal(ses_graph_placeholder(t.g, "x", SES_F32, 0, NULL, &x), SES_OK);
    y = binary(t.g, "Add", "y", x, t.a);
    probe_init(&p, "p");
    m = create(t.s, &hook, 1);
    journal[0] = 0;
    assert_int_equal(ses_monitored_run(m, &y, 1, NULL, 0, NULL, 0, &out), SES_INVALID_ARGUMENT);
    assert_null(out);
    assert_non_null(strstr(ses_last_error(), "placeholder \"x\" is not fed"));
    assert_string_equal(journal, "p.before_run@0 ");
    assert_int_equal(ses_monitored_step(m), 0);
    ses_monitored_destroy(m);
    small_close(&t);
}

/* An unnamed hook is named by its index; a hook without a message says so. */
static void a_failing_after_create_fails_create_calls_no_end_and_frees_owned_hooks(void **state) {
    small_t t;
    probe_t a, b;
    ses_hook_t *builtin = NULL, *hooks[3] = {&a.hook, NULL, &b.hook};
    ses_monitored_t *m = (ses_monitored_t *)0x1;

    (void)state;
    small_open(&t);
    probe_init(&a, "a");
    probe_init(&b, NULL);
    a.hook.destroy = probe_destroy; /* owned by the monitored session, like a built-in */
    b.fail_point = "after_create";
    b.fail_status = SES_NOT_FOUND;
    assert_int_equal(ses_hook_stop_at_step(10, &builtin), SES_OK);
    hooks[1] = builtin;
    journal[0] = 0;
    assert_int_equal(ses_monitored_create(t.s, hooks, 3, &m), SES_NOT_FOUND);
    assert_null(m);
    assert_non_null(strstr(ses_last_error(), "hook 2 after_create"));
    assert_non_null(strstr(ses_last_error(), "no message"));
    assert_null(strstr(journal, "end"));
    /* The built-in was freed (ASan would report a leak), and a's destroy ran once. */
    assert_int_equal(a.destroyed, 1);
    assert_int_equal(b.destroyed, 0);
    small_close(&t);
}

static void owned_hooks_are_destroyed_once_at_close(void **state) {
    small_t t;
    probe_t a;
    ses_hook_t *hook = &a.hook;
    ses_monitored_t *m;

    (void)state;
    small_open(&t);
    probe_init(&a, "a");
    a.hook.destroy = probe_destroy;
    m = create(t.s, &hook, 1);
    assert_int_equal(ses_monitored_close(m), SES_OK);
    assert_int_equal(a.destroyed, 1);
    ses_monitored_destroy(m);
    assert_int_equal(a.destroyed, 1);
    small_close(&t);
}

static void run_and_close_are_refused_inside_a_hook(void **state) {
    small_t t;
    probe_t p;
    ses_hook_t *hook = &p.hook;
    ses_monitored_t *m;

    (void)state;
    small_open(&t);
    probe_init(&p, "p");
    p.try_nested = 1;
    m = create(t.s, &hook, 1);
    run1(m, t.c);
    assert_int_equal(p.nested_run, SES_FAILED_PRECONDITION);
    assert_int_equal(p.nested_close, SES_FAILED_PRECONDITION);
    p.try_nested = 0;
    run1(m, t.c);
    ses_monitored_destroy(m);
    small_close(&t);
}

static void bad_arguments_are_refused(void **state) {
    small_t t;
    probe_t a;
    ses_hook_t old, *hooks[2] = {&a.hook, &a.hook}, *builtin = NULL;
    ses_monitored_t *m = (ses_monitored_t *)0x1;

    (void)state;
    small_open(&t);
    probe_init(&a, "a");
    assert_int_equal(ses_monitored_create(NULL, NULL, 0, &m), SES_INVALID_ARGUMENT);
    assert_null(m);
    assert_int_equal(ses_monitored_create(t.s, NULL, 1, &m), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_monitored_create(t.s, hooks, 2, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "same hook"));
    memset(&old, 0, sizeof old);
    hooks[1] = &old;
    assert_int_equal(ses_monitored_create(t.s, hooks, 2, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "ses_hook_init"));
    hooks[1] = NULL;
    assert_int_equal(ses_monitored_create(t.s, hooks, 2, &m), SES_INVALID_ARGUMENT);
    /* A built-in handed over to a failing create is freed by it (ASan checks). */
    assert_int_equal(ses_hook_stop_at_step(1, &builtin), SES_OK);
    assert_int_equal(ses_monitored_create(t.s, &builtin, 1, NULL), SES_INVALID_ARGUMENT);
    /* One never handed over is freed with ses_hook_destroy. */
    assert_int_equal(ses_hook_stop_at_step(1, &builtin), SES_OK);
    ses_hook_destroy(builtin);
    ses_hook_destroy(NULL);
    ses_hook_destroy(&a.hook); /* caller-owned: nothing happens */

    m = create(t.s, NULL, 0);
    assert_int_equal(ses_monitored_run(m, NULL, 1, NULL, 0, NULL, 0, NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_monitored_run(m, &t.c, 1, NULL, 0, NULL, 0, NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_monitored_run(m, NULL, 0, NULL, 0, NULL, 0, NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_monitored_run(NULL, NULL, 0, NULL, 0, NULL, 0, NULL),
                     SES_INVALID_ARGUMENT);
    assert_int_equal(ses_monitored_close(NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_monitored_close(m), SES_OK);
    assert_int_equal(ses_monitored_run(m, &t.c, 1, NULL, 0, NULL, 0, (ses_tensor_t *[1]){NULL}),
                     SES_FAILED_PRECONDITION);
    assert_non_null(strstr(ses_last_error(), "closed"));
    ses_monitored_destroy(m);
    ses_monitored_destroy(NULL);
    assert_true(ses_monitored_should_stop(NULL));
    assert_int_equal(ses_run_args_add_fetch(NULL, t.c, NULL), SES_INVALID_ARGUMENT);
    assert_null(ses_run_args_value(NULL, 0));
    small_close(&t);
}

/* ---- checkpoint hooks --------------------------------------------------------------------- */

/* A graph with a variable "v" (initially 0) read by "r" = v + 0; a hook below plays the
 * optimizer by setting v to the step after each run. */
typedef struct model {
    ses_graph_t *g;
    ses_edge_t v, r;
} model_t;

static void model_build(model_t *t) {
    assert_int_equal(ses_graph_create(&t->g), SES_OK);
    assert_int_equal(ses_graph_variable(t->g, "v", constant(t->g, "v0", 0), &t->v), SES_OK);
    t->r = binary(t->g, "Add", "r", t->v, constant(t->g, "zero", 0));
}

static ses_status_t train_v(ses_hook_t *h, ses_monitored_t *m, const ses_run_args_t *args) {
    ses_tensor_t *value = scalar((float)ses_monitored_step(m));
    ses_status_t st = ses_scope_set(ses_session_scope(ses_monitored_session(m)), "v", value);

    (void)h;
    (void)args;
    ses_tensor_release(value);
    return st;
}

static int file_exists(const char *dir, const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static ino_t inode_of(const char *dir, const char *name) {
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(stat(path, &st), 0);
    return st.st_ino;
}

static float variable_in(ses_session_t *s, const char *name) {
    ses_tensor_t *value = NULL;
    float v;
    assert_int_equal(ses_scope_find(ses_session_scope(s), name, &value), SES_OK);
    v = value_of(value);
    ses_tensor_release(value);
    return v;
}

/* Runs @p steps steps of the model with a saver (every 3 steps, keep 2) and the trainer. */
static void train(model_t *t, const char *dir, int load, int steps, uint64_t *out_step) {
    ses_session_t *s = open_cpu(t->g);
    ses_hook_t trainer, *hooks[3] = {NULL, &trainer, NULL};
    size_t n = 0;
    ses_monitored_t *m;

    ses_hook_init(&trainer);
    trainer.after_run = train_v;
    if (load)
        assert_int_equal(ses_hook_load_checkpoint(dir, &hooks[n++]), SES_OK);
    hooks[n++] = &trainer;
    assert_int_equal(ses_hook_checkpoint_saver(dir, 3, 0, 2, &hooks[n++]), SES_OK);
    m = create(s, hooks, n);
    for (int i = 0; i < steps; i++)
        run1(m, t->r);
    if (ses_monitored_close(m) != SES_OK)
        fail_msg("close: %s", ses_last_error());
    *out_step = ses_monitored_step(m);
    ses_monitored_destroy(m);
    ses_session_destroy(s);
}

static void the_saver_saves_every_n_steps_and_at_end_keeping_the_last_ones(void **state) {
    model_t t;
    char dir[64], *path = NULL;
    uint64_t step = 0;

    (void)state;
    test_mkdtemp(dir, sizeof dir);
    model_build(&t);
    train(&t, dir, 0, 7, &step);
    assert_int_equal(step, 7);
    /* Saved at 3 and 6 by after_run, at 7 by end; keep_last 2 dropped 3. */
    assert_false(file_exists(dir, "ckpt-3.safetensors"));
    assert_true(file_exists(dir, "ckpt-6.safetensors"));
    assert_true(file_exists(dir, "ckpt-7.safetensors"));
    assert_int_equal(ses_checkpoint_latest(dir, &path, &step), SES_OK);
    assert_int_equal(step, 7);
    assert_non_null(strstr(path, "ckpt-7.safetensors"));
    free(path);
    test_rmtree(dir);
    ses_graph_release(t.g);
}

static void the_saver_does_not_save_again_at_end_when_the_last_step_was_saved(void **state) {
    model_t t;
    char dir[64];
    uint64_t step = 0;
    ino_t before;
    ses_session_t *s;
    ses_hook_t *hook = NULL;
    ses_monitored_t *m;

    (void)state;
    test_mkdtemp(dir, sizeof dir);
    model_build(&t);
    s = open_cpu(t.g);
    assert_int_equal(ses_hook_checkpoint_saver(dir, 3, 0, 0, &hook), SES_OK);
    m = create(s, &hook, 1);
    for (int i = 0; i < 6; i++)
        run1(m, t.r);
    before = inode_of(dir, "ckpt-6.safetensors");
    assert_int_equal(ses_monitored_close(m), SES_OK);
    /* Rewriting goes through a new file renamed over the old one: the inode would change. */
    assert_true(inode_of(dir, "ckpt-6.safetensors") == before);
    assert_true(file_exists(dir, "ckpt-3.safetensors"));
    ses_monitored_destroy(m);

    /* With nothing run at all, there is nothing to save. */
    test_rmtree(dir);
    test_mkdtemp(dir, sizeof dir);
    assert_int_equal(ses_hook_checkpoint_saver(dir, 3, 0, 0, &hook), SES_OK);
    m = create(s, &hook, 1);
    assert_int_equal(ses_monitored_close(m), SES_OK);
    ses_monitored_destroy(m);
    assert_int_equal(ses_checkpoint_latest(dir, &(char *){NULL}, &step), SES_NOT_FOUND);
    ses_session_destroy(s);
    test_rmtree(dir);
    ses_graph_release(t.g);
}

static ses_status_t nap(ses_hook_t *h, ses_monitored_t *m, ses_run_args_t *args) {
    struct timespec ts = {0, 3 * 1000 * 1000};
    (void)h;
    (void)m;
    (void)args;
    nanosleep(&ts, NULL);
    return SES_OK;
}

static void the_saver_saves_by_time(void **state) {
    model_t t;
    char dir[64];
    ses_session_t *s;
    ses_hook_t slow, *hooks[2] = {&slow, NULL};
    ses_monitored_t *m;

    (void)state;
    test_mkdtemp(dir, sizeof dir);
    model_build(&t);
    s = open_cpu(t.g);
    ses_hook_init(&slow);
    slow.before_run = nap; /* each run takes longer than the saver's period */
    assert_int_equal(ses_hook_checkpoint_saver(dir, 0, 0.001, 0, &hooks[1]), SES_OK);
    m = create(s, hooks, 2);
    run1(m, t.r);
    run1(m, t.r);
    assert_true(file_exists(dir, "ckpt-1.safetensors"));
    assert_true(file_exists(dir, "ckpt-2.safetensors"));
    ses_monitored_destroy(m);
    ses_session_destroy(s);
    test_rmtree(dir);
    ses_graph_release(t.g);
}

static void load_checkpoint_restores_the_variables_and_the_step(void **state) {
    model_t t;
    char dir[64];
    uint64_t step = 0;
    ses_session_t *s;
    ses_hook_t *hooks[2] = {NULL, NULL};
    ses_monitored_t *m;

    (void)state;
    test_mkdtemp(dir, sizeof dir);
    model_build(&t);
    train(&t, dir, 0, 7, &step);

    /* A restart: a new session, restored before its first run, then stopping at 9. */
    s = open_cpu(t.g);
    assert_int_equal(ses_hook_load_checkpoint(dir, &hooks[0]), SES_OK);
    assert_int_equal(ses_hook_stop_at_step(9, &hooks[1]), SES_OK);
    m = create(s, hooks, 2);
    assert_int_equal(ses_monitored_step(m), 7);
    assert_true(variable_in(s, "v") == 7.0f);
    assert_true(run1(m, t.r) == 7.0f); /* the restored value, not the initializer's 0 */
    assert_int_equal(ses_monitored_step(m), 8);
    run1(m, t.r);
    assert_true(ses_monitored_should_stop(m));
    ses_monitored_destroy(m);
    ses_session_destroy(s);

    /* Training resumed through load + saver goes on from the restored step. */
    train(&t, dir, 1, 2, &step);
    assert_int_equal(step, 9);
    assert_true(file_exists(dir, "ckpt-9.safetensors"));
    test_rmtree(dir);
    ses_graph_release(t.g);
}

static void load_checkpoint_starts_fresh_without_checkpoints_and_fails_on_a_wrong_one(
    void **state) {
    model_t t, other;
    char dir[64], missing[128];
    uint64_t step = 0;
    ses_session_t *s;
    ses_hook_t *hook = NULL;
    ses_monitored_t *m = NULL;

    (void)state;
    test_mkdtemp(dir, sizeof dir);
    model_build(&t);
    s = open_cpu(t.g);
    snprintf(missing, sizeof missing, "%s/none", dir);
    assert_int_equal(ses_hook_load_checkpoint(missing, &hook), SES_OK);
    m = create(s, &hook, 1);
    assert_int_equal(ses_monitored_step(m), 0);
    assert_true(run1(m, t.r) == 0.0f);
    ses_monitored_destroy(m);
    ses_session_destroy(s);

    /* A checkpoint of another graph (a variable "w", not "v") does not fit: create fails. */
    train(&t, dir, 0, 3, &step);
    assert_int_equal(ses_graph_create(&other.g), SES_OK);
    assert_int_equal(ses_graph_variable(other.g, "w", constant(other.g, "w0", 0), &other.v),
                     SES_OK);
    s = open_cpu(other.g);
    assert_int_equal(ses_hook_load_checkpoint(dir, &hook), SES_OK);
    assert_int_not_equal(ses_monitored_create(s, &hook, 1, &m), SES_OK);
    assert_null(m);
    assert_non_null(strstr(ses_last_error(), "hook \"load_checkpoint\" after_create"));
    ses_session_destroy(s);
    ses_graph_release(other.g);
    test_rmtree(dir);
    ses_graph_release(t.g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hooks_are_called_in_order_at_every_point),
        cmocka_unit_test(the_step_counts_runs_from_the_step_that_was_set),
        cmocka_unit_test(before_run_adds_a_fetch_a_feed_and_a_target_to_the_same_run),
        cmocka_unit_test(a_hook_feeding_an_edge_the_caller_feeds_fails_the_run),
        cmocka_unit_test(an_after_run_stop_request_ends_the_loop_and_later_runs_are_refused),
        cmocka_unit_test(the_caller_may_request_a_stop_too),
        cmocka_unit_test(stop_at_step_stops_after_the_last_step),
        cmocka_unit_test(stop_at_step_stops_at_once_when_the_step_set_at_create_is_past_it),
        cmocka_unit_test(stop_at_time_stops_once_the_time_has_passed),
        cmocka_unit_test(the_step_logger_prints_the_loss_every_n_steps),
        cmocka_unit_test(the_step_logger_without_a_loss_prints_the_rate),
        cmocka_unit_test(a_failing_hook_stops_the_run_and_is_named),
        cmocka_unit_test(a_failing_eval_calls_no_after_run_and_counts_no_step),
        cmocka_unit_test(a_failing_after_create_fails_create_calls_no_end_and_frees_owned_hooks),
        cmocka_unit_test(owned_hooks_are_destroyed_once_at_close),
        cmocka_unit_test(run_and_close_are_refused_inside_a_hook),
        cmocka_unit_test(bad_arguments_are_refused),
        cmocka_unit_test(the_saver_saves_every_n_steps_and_at_end_keeping_the_last_ones),
        cmocka_unit_test(the_saver_does_not_save_again_at_end_when_the_last_step_was_saved),
        cmocka_unit_test(the_saver_saves_by_time),
        cmocka_unit_test(load_checkpoint_restores_the_variables_and_the_step),
        cmocka_unit_test(load_checkpoint_starts_fresh_without_checkpoints_and_fails_on_a_wrong_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
