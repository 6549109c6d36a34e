/*
 * The per-step profiler (ses_session_options_t.profile, ses_plan_profile, exec/profile.c and the
 * timing in exec/run.c) on the CPU driver: a plan MatMul -> Relu run three times reports three
 * calls and some time on each step, named by the kernel's op, the node and the device; a reset
 * zeroes them; the sizing call, a too small array, a bad struct_size and a session that does not
 * profile are answered as documented; an options struct of an older version (without the field)
 * means off; SESSION_PROFILE forces the option either way. Times are only checked to be > 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <session/session.h>

typedef struct fixture {
    ses_graph_t *g;
    ses_edge_t x, y;
    ses_tensor_t *xv;
} fixture_t;

/* x [2,3] -> MatMul "mm" (by a constant [3,4]) -> Relu "relu" -> y. */
static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    const int64_t xd[2] = {2, 3}, wd[2] = {3, 4};
    ses_tensor_t *w = NULL;
    ses_edge_t in[2], mm;

    assert_non_null(f);
    assert_int_equal(ses_graph_create(&f->g), SES_OK);
    assert_int_equal(ses_graph_placeholder(f->g, "x", SES_F32, 2, xd, &f->x), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 2, wd, &w), SES_OK);
    for (size_t i = 0; i < 12; i++)
        ((float *)ses_tensor_data(w))[i] = (float)i - 5.0f;
    in[0] = f->x;
    assert_int_equal(ses_graph_constant(f->g, "w", w, &in[1]), SES_OK);
    ses_tensor_release(w);
    assert_int_equal(ses_graph_op(f->g, "MatMul", "mm", in, 2, NULL, 0, &mm), SES_OK);
    assert_int_equal(ses_graph_op(f->g, "Relu", "relu", &mm, 1, NULL, 0, &f->y), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 2, xd, &f->xv), SES_OK);
    for (size_t i = 0; i < 6; i++)
        ((float *)ses_tensor_data(f->xv))[i] = (float)i * 0.5f;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    ses_tensor_release(f->xv);
    ses_graph_release(f->g);
    free(f);
    return 0;
}

/* Opens a session with @p o (NULL: defaults), compiles y from x and runs it @p runs times. */
static void open_and_run(fixture_t *f, const ses_session_options_t *o, int runs,
                         ses_session_t **out_s, ses_plan_t **out_plan) {
    assert_int_equal(ses_session_open(f->g, NULL, 0, o, out_s), SES_OK);
    assert_int_equal(ses_session_compile(*out_s, &f->y, 1, &f->x, 1, NULL, 0, out_plan), SES_OK);
    for (int r = 0; r < runs; r++) {
        ses_tensor_t *y = NULL;
        if (ses_plan_run(*out_plan, &f->xv, 1, &y) != SES_OK)
            fail_msg("run %d: %s", r, ses_last_error());
        ses_tensor_release(y);
    }
}

static ses_session_options_t profiling(void) {
    ses_session_options_t o;
    ses_session_options_init(&o);
    o.profile = 1;
    o.fallback = SES_FALLBACK_DENY;
    return o;
}

static void assert_profiles(ses_plan_t *plan, int want) {
    size_t count = 99;
    ses_status_t st = ses_plan_profile(plan, NULL, 0, &count);
    if (want) {
        assert_int_equal(st, SES_OK);
    } else {
        assert_int_equal(st, SES_FAILED_PRECONDITION);
        assert_non_null(strstr(ses_last_error(), "profile"));
        assert_int_equal(count, 0);
    }
}

static void the_default_is_off(void **state) {
    ses_session_options_t o;
    (void)state;
    ses_session_options_init(&o);
    assert_int_equal(o.profile, 0);
}

static void each_step_of_three_runs_has_three_calls_and_some_time(void **state) {
    fixture_t *f = *state;
    ses_session_options_t o = profiling();
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_step_time_t t[4];
    size_t count = 0;

    open_and_run(f, &o, 3, &s, &plan);
    memset(t, 0, sizeof t);
    t[0].struct_size = sizeof t[0];
    assert_int_equal(ses_plan_profile(plan, t, 4, &count), SES_OK);
    assert_int_equal(count, 2);
    assert_string_equal(t[0].op, "MatMul");
    assert_string_equal(t[0].node, "mm");
    assert_string_equal(t[1].op, "Relu");
    assert_string_equal(t[1].node, "relu");
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(t[i].struct_size, sizeof t[i]);
        assert_string_equal(t[i].device, "cpu:0");
        assert_int_equal(t[i].calls, 3);
        assert_true(t[i].total_ns > 0);
    }
    assert_null(t[2].op); /* nothing written past the count */

    /* A reset zeroes the sums; the next run counts from there. */
    assert_int_equal(ses_plan_profile_reset(plan), SES_OK);
    assert_int_equal(ses_plan_profile(plan, t, 4, &count), SES_OK);
    assert_int_equal(count, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(t[i].calls, 0);
        assert_int_equal(t[i].total_ns, 0);
    }
    {
        ses_tensor_t *y = NULL;
        assert_int_equal(ses_plan_run(plan, &f->xv, 1, &y), SES_OK);
        ses_tensor_release(y);
    }
    assert_int_equal(ses_plan_profile(plan, t, 4, &count), SES_OK);
    assert_int_equal(t[0].calls, 1);
    assert_int_equal(t[1].calls, 1);
    assert_true(t[1].total_ns > 0);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
}

static void the_sizing_call_and_a_too_small_array_report_the_count(void **state) {
    fixture_t *f = *state;
    ses_session_options_t o = profiling();
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_step_time_t t[1];
    size_t count = 0;

    open_and_run(f, &o, 1, &s, &plan);
    assert_int_equal(ses_plan_profile(plan, NULL, 0, &count), SES_OK);
    assert_int_equal(count, 2);

    memset(t, 0, sizeof t);
    t[0].struct_size = sizeof t[0];
    count = 0;
    assert_int_equal(ses_plan_profile(plan, t, 1, &count), SES_INVALID_ARGUMENT);
    assert_int_equal(count, 2);
    assert_non_null(strstr(ses_last_error(), "2 steps"));
    assert_null(t[0].op); /* nothing filled */

    /* NULL arguments and a struct_size of another version. */
    assert_int_equal(ses_plan_profile(NULL, NULL, 0, &count), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_plan_profile(plan, NULL, 0, NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_plan_profile(plan, NULL, 3, &count), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_plan_profile_reset(NULL), SES_INVALID_ARGUMENT);
    t[0].struct_size = 8;
    assert_int_equal(ses_plan_profile(plan, t, 1, &count), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "struct_size is 8"));
    ses_plan_destroy(plan);
    ses_session_destroy(s);
}

static void a_session_that_does_not_profile_refuses(void **state) {
    fixture_t *f = *state;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;

    open_and_run(f, NULL, 1, &s, &plan);
    assert_profiles(plan, 0);
    assert_int_equal(ses_plan_profile_reset(plan), SES_FAILED_PRECONDITION);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
}

/* A caller built before the field existed passes a struct_size that ends before it: off, whatever
 * the bytes past its struct hold. */
static void options_of_an_older_version_mean_off(void **state) {
    fixture_t *f = *state;
    ses_session_options_t o = profiling();
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;

    o.struct_size = (uint32_t)offsetof(ses_session_options_t, profile);
    open_and_run(f, &o, 1, &s, &plan);
    assert_profiles(plan, 0);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
}

static void a_bad_option_value_is_refused(void **state) {
    fixture_t *f = *state;
    ses_session_options_t o = profiling();
    ses_session_t *s = NULL;

    o.profile = 2;
    assert_int_equal(ses_session_open(f->g, NULL, 0, &o, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "profile is 2"));
    assert_null(s);
}

static void session_profile_in_the_environment_forces_it_either_way(void **state) {
    fixture_t *f = *state;
    ses_session_options_t on = profiling(), off;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;

    ses_session_options_init(&off);
    setenv("SESSION_PROFILE", "1", 1);
    open_and_run(f, &off, 2, &s, &plan);
    unsetenv("SESSION_PROFILE");
    assert_profiles(plan, 1);
    ses_plan_destroy(plan);
    ses_session_destroy(s);

    setenv("SESSION_PROFILE", "on", 1);
    open_and_run(f, NULL, 1, &s, &plan);
    unsetenv("SESSION_PROFILE");
    assert_profiles(plan, 1);
    ses_plan_destroy(plan);
    ses_session_destroy(s);

    setenv("SESSION_PROFILE", "off", 1);
    open_and_run(f, &on, 1, &s, &plan);
    unsetenv("SESSION_PROFILE");
    assert_profiles(plan, 0);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
}

/* Results are the same with the profiler on. */
static void profiled_runs_compute_the_same_values(void **state) {
    fixture_t *f = *state;
    ses_session_options_t o = profiling();
    ses_session_t *s[2] = {NULL, NULL};
    ses_plan_t *plan[2] = {NULL, NULL};
    ses_tensor_t *y[2] = {NULL, NULL};

    open_and_run(f, NULL, 0, &s[0], &plan[0]);
    open_and_run(f, &o, 0, &s[1], &plan[1]);
    for (int i = 0; i < 2; i++)
        assert_int_equal(ses_plan_run(plan[i], &f->xv, 1, &y[i]), SES_OK);
    assert_memory_equal(ses_tensor_data(y[0]), ses_tensor_data(y[1]), 8 * sizeof(float));
    for (int i = 0; i < 2; i++) {
        ses_tensor_release(y[i]);
        ses_plan_destroy(plan[i]);
        ses_session_destroy(s[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_default_is_off),
        cmocka_unit_test(each_step_of_three_runs_has_three_calls_and_some_time),
        cmocka_unit_test(the_sizing_call_and_a_too_small_array_report_the_count),
        cmocka_unit_test(a_session_that_does_not_profile_refuses),
        cmocka_unit_test(options_of_an_older_version_mean_off),
        cmocka_unit_test(a_bad_option_value_is_refused),
        cmocka_unit_test(session_profile_in_the_environment_forces_it_either_way),
        cmocka_unit_test(profiled_runs_compute_the_same_values),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
