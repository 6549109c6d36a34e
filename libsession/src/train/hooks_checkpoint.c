/*
 * The built-in checkpoint hooks: save checkpoints while training, and restore the latest one
 * when the loop starts. Each is a ses_hook_t at the start of a private struct, freed by its
 * destroy callback; they use only the public API.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <session/checkpoint.h>
#include <session/hooks.h>

#include "../error.h"
#include "../log.h"
#include "hooks_internal.h"

/* ---- checkpoint saver ------------------------------------------------------------------- */

typedef struct saver {
    ses_hook_t hook;
    char *dir;
    uint64_t every_steps;
    double every_seconds;
    uint32_t keep_last;
    uint64_t last_step; /* the step last saved, or the one after_create saw */
    double last_time;   /* when that was */
} saver_t;

static void saver_destroy(ses_hook_t *h) {
    free(((saver_t *)h)->dir);
    free(h);
}

static ses_status_t saver_save(saver_t *hook, ses_session_t *s, uint64_t step) {
    ses_status_t st = ses_checkpoint_save(s, hook->dir, step, hook->keep_last);

    if (st != SES_OK)
        return st;
    hook->last_step = step;
    hook->last_time = ses__now_seconds();
    return SES_OK;
}

static ses_status_t saver_after_create(ses_hook_t *h, ses_monitored_t *m, ses_session_t *s) {
    saver_t *hook = (saver_t *)h;

    (void)s;
    /* What after_create sees is already durable (a restored checkpoint) or untrained: the
     * first save is due only after runs. */
    hook->last_step = ses_monitored_step(m);
    hook->last_time = ses__now_seconds();
    return SES_OK;
}

static ses_status_t saver_after_run(ses_hook_t *h, ses_monitored_t *m,
                                    const ses_run_args_t *args) {
    saver_t *hook = (saver_t *)h;
    uint64_t step = ses_monitored_step(m);
    int due;

    (void)args;
    /* Multiples of every_steps, not "every_steps since the last save": checkpoint names stay
     * the same across restarts and whatever the hooks' order. */
    due = hook->every_steps && step % hook->every_steps == 0;
    if (!due && hook->every_seconds > 0)
        due = ses__now_seconds() - hook->last_time >= hook->every_seconds;
    if (!due || step == hook->last_step)
        return SES_OK;
    return saver_save(hook, ses_monitored_session(m), step);
}

static ses_status_t saver_end(ses_hook_t *h, ses_monitored_t *m, ses_session_t *s) {
    saver_t *hook = (saver_t *)h;
    uint64_t step = ses_monitored_step(m);

    if (step == hook->last_step)
        return SES_OK;
    return saver_save(hook, s, step);
}

ses_status_t ses_hook_checkpoint_saver(const char *dir, uint64_t every_steps, double every_seconds,
                                       uint32_t keep_last, ses_hook_t **out_hook) {
    saver_t *hook;

    if (!out_hook)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_hook is NULL", __func__);
    *out_hook = NULL;
    if (!dir || !*dir)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: dir is %s", __func__, dir ? "empty" : "NULL");
    if (!(every_seconds >= 0) || isinf(every_seconds))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: every_seconds is %g; it must be finite and >= 0 (0: not by time)",
                         __func__, every_seconds);
    hook = ses__hook_alloc(sizeof *hook, "checkpoint_saver", saver_destroy);
    if (!hook || !(hook->dir = ses__strdup(dir))) {
        free(hook);
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", __func__);
    }
    hook->every_steps = every_steps;
    hook->every_seconds = every_seconds;
    hook->keep_last = keep_last;
    hook->hook.after_create = saver_after_create;
    hook->hook.after_run = saver_after_run;
    hook->hook.end = saver_end;
    *out_hook = &hook->hook;
    return SES_OK;
}

/* ---- load checkpoint -------------------------------------------------------------------- */

typedef struct loader {
    ses_hook_t hook;
    char *dir;
} loader_t;

static void loader_destroy(ses_hook_t *h) {
    free(((loader_t *)h)->dir);
    free(h);
}

static ses_status_t loader_after_create(ses_hook_t *h, ses_monitored_t *m, ses_session_t *s) {
    const loader_t *hook = (const loader_t *)h;
    char *path = NULL;
    uint64_t step = 0;
    ses_status_t st;

    /* Find the checkpoint first, so that "none yet" (a fresh start) is told apart from a
     * checkpoint that does not fit the graph, which must fail. */
    st = ses_checkpoint_latest(hook->dir, &path, &step);
    if (st == SES_NOT_FOUND) {
        ses__log(SES__LOG_INFO, "load_checkpoint: no checkpoint in %s; starting at step %" PRIu64,
                 hook->dir, ses_monitored_step(m));
        ses__clear_error();
        return SES_OK;
    }
    if (st != SES_OK)
        return st;
    st = ses_session_restore(s, path, 0, NULL);
    if (st == SES_OK) {
        ses_monitored_set_step(m, step);
        ses__log(SES__LOG_INFO, "load_checkpoint: restored %s (step %" PRIu64 ")", path, step);
    }
    free(path);
    return st;
}

ses_status_t ses_hook_load_checkpoint(const char *dir, ses_hook_t **out_hook) {
    loader_t *hook;

    if (!out_hook)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_hook is NULL", __func__);
    *out_hook = NULL;
    if (!dir || !*dir)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: dir is %s", __func__, dir ? "empty" : "NULL");
    hook = ses__hook_alloc(sizeof *hook, "load_checkpoint", loader_destroy);
    if (!hook || !(hook->dir = ses__strdup(dir))) {
        free(hook);
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", __func__);
    }
    hook->hook.after_create = loader_after_create;
    *out_hook = &hook->hook;
    return SES_OK;
}
