/*
 * The per-step profile of a plan's runs (ses_session_options_t.profile): run.c times each step
 * and sums the time in the step; these calls read and reset the sums under the plan's lock.
 */
#include <string.h>

#include "../compile/plan.h"
#include "../error.h"

/* Checks the common arguments; on success returns with the plan's lock held. */
static ses_status_t lock_profiled(const char *what, ses_plan_t *plan) {
    if (!plan)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: plan is NULL", what);
    if (!plan->session->options.profile)
        return ses__fail(SES_FAILED_PRECONDITION,
                         "%s: the session does not profile; open it with "
                         "ses_session_options_t.profile = 1 (or SESSION_PROFILE=1 in the "
                         "environment)",
                         what);
    pthread_mutex_lock(&plan->lock);
    return SES_OK;
}

/* What the step ran, as ses_step_time_t.op says. */
static const char *step_op(const ses__step_t *step) {
    if (step->kind == SES__STEP_COPY)
        return "Copy";
    if (step->kind == SES__STEP_KERNEL && step->kernel && step->kernel->op)
        return step->kernel->op;
    return step->node->op;
}

ses_status_t ses_plan_profile(ses_plan_t *plan, ses_step_time_t *out, size_t capacity,
                              size_t *out_count) {
    const ses__compiled_t *c;
    size_t count = 0, k = 0;
    ses_status_t st;

    if (!out_count)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_plan_profile: out_count is NULL");
    *out_count = 0;
    if (capacity && !out)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_plan_profile: out is NULL with capacity %zu",
                         capacity);
    if (out && out[0].struct_size < sizeof *out)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_plan_profile: out[0].struct_size is %u; set it to "
                         "sizeof(ses_step_time_t) (%zu)",
                         out[0].struct_size, sizeof *out);
    if ((st = lock_profiled("ses_plan_profile", plan)) != SES_OK)
        return st;
    c = plan->compiled;
    for (size_t i = 0; c && i < c->n_steps; i++)
        count += c->steps[i].kind != SES__STEP_NONE;
    *out_count = count;
    if (out && capacity < count) {
        pthread_mutex_unlock(&plan->lock);
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_plan_profile: the plan has %zu steps; out has room for %zu", count,
                         capacity);
    }
    for (size_t i = 0; out && c && i < c->n_steps; i++) {
        const ses__step_t *step = &c->steps[i];
        if (step->kind == SES__STEP_NONE)
            continue;
        memset(&out[k], 0, sizeof out[k]);
        out[k].struct_size = sizeof out[k];
        out[k].op = step_op(step);
        out[k].node = step->node->name;
        out[k].device = ses__device_name_of(plan->session, step->device);
        out[k].calls = step->profile_calls;
        out[k].total_ns = step->profile_ns;
        k++;
    }
    pthread_mutex_unlock(&plan->lock);
    return SES_OK;
}

ses_status_t ses_plan_profile_reset(ses_plan_t *plan) {
    ses_status_t st = lock_profiled("ses_plan_profile_reset", plan);

    if (st != SES_OK)
        return st;
    for (size_t i = 0; plan->compiled && i < plan->compiled->n_steps; i++) {
        plan->compiled->steps[i].profile_calls = 0;
        plan->compiled->steps[i].profile_ns = 0;
    }
    pthread_mutex_unlock(&plan->lock);
    return SES_OK;
}
