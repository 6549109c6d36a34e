/*
 * Hooks and the monitored training loop, with the semantics of TensorFlow's MonitoredSession.
 *
 * A monitored session wraps an open session and a list of hooks. Each hook is called at five
 * points: begin and after_create (once, by ses_monitored_create), before_run and after_run
 * (around every ses_monitored_run), and end (once, by ses_monitored_close). In before_run a hook
 * may add fetches, feeds and targets to the same eval; in after_run it reads the values of the
 * fetches it added, and may ask the loop to stop. The loop is
 *
 *     ses_hook_t *hooks[3];
 *     ses_monitored_t *m;
 *     ses_hook_load_checkpoint("ckpt", &hooks[0]);
 *     ses_hook_stop_at_step(1000, &hooks[1]);
 *     ses_hook_checkpoint_saver("ckpt", 100, 0, 5, &hooks[2]);
 *     ses_monitored_create(s, hooks, 3, &m);       (the hooks belong to m from here on)
 *     while (!ses_monitored_should_stop(m))
 *         if (ses_monitored_run(m, NULL, 0, feeds, 2, &train_step, 1, NULL) != SES_OK) break;
 *     ses_monitored_close(m);                       (end hooks: the saver saves the last step)
 *     ses_monitored_destroy(m);                     (the session stays open)
 *
 * Hooks run in the order given, at every point (end too). The step is the number of runs
 * completed, counted from the value a hook set (ses_hook_load_checkpoint sets the restored
 * step): in before_run of the k-th run after a start at step 0 it reads k - 1, in after_run k.
 *
 * Thread-safety: a monitored session is driven from one thread at a time. request_stop,
 * should_stop and step may be called from any thread at any time; request_stop is also
 * async-signal-safe, so a SIGINT handler may end the loop cleanly.
 */
#ifndef SESSION_HOOKS_H
#define SESSION_HOOKS_H

#include <stdio.h>

#include <session/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ses_monitored ses_monitored_t;

/**
 * What one ses_monitored_run evaluates: the caller's fetches, feeds and targets, plus whatever
 * the hooks add in before_run. Owned by the monitored session; a hook must not keep the pointer
 * past the callback it was given to.
 */
typedef struct ses_run_args ses_run_args_t;

/**
 * Adds @p edge to the fetches of this run and stores its index in @p out_index (may be NULL).
 * Indices of hook fetches come after the caller's, in the order they were added. Only valid in
 * before_run (SES_FAILED_PRECONDITION otherwise); SES_INVALID_ARGUMENT for a NULL edge node.
 */
SES_API ses_status_t ses_run_args_add_fetch(ses_run_args_t *args, ses_edge_t edge,
                                            size_t *out_index);

/**
 * Feeds @p value (retained until the run ends) to @p edge in this run. Feeding an edge that the
 * caller or another hook feeds makes the eval fail ("fed twice"). Only valid in before_run.
 */
SES_API ses_status_t ses_run_args_add_feed(ses_run_args_t *args, ses_edge_t edge,
                                           ses_tensor_t *value);

/** Adds @p target to the targets of this run (run for its effect). Only valid in before_run. */
SES_API ses_status_t ses_run_args_add_target(ses_run_args_t *args, ses_node_t *target);

/** The number of fetches of this run so far: the caller's plus those hooks added. */
SES_API size_t ses_run_args_fetch_count(const ses_run_args_t *args);

/** How many fetches are the caller's: indices below this are the caller's, the rest hooks'. */
SES_API size_t ses_run_args_caller_fetch_count(const ses_run_args_t *args);

/**
 * The value of fetch @p index of this run, in after_run; NULL before the eval, for an index out
 * of range, or outside a callback. Borrowed: hook fetches are released after the last
 * after_run, the caller's go to its out_values; retain it to keep it.
 */
SES_API ses_tensor_t *ses_run_args_value(const ses_run_args_t *args, size_t index);

/**
 * A hook: a caller-filled struct of optional callbacks (NULL = nothing to do at that point).
 * Fill it with ses_hook_init first, so that fields appended later read as absent. A callback
 * that fails returns a status other than SES_OK; the monitored call then stops and returns that
 * status, and ses_last_error() names the hook and the point ("hook \"saver\" after_run: ...")
 * followed by the message the callback left (that of the libsession call that failed in it).
 */
typedef struct ses_hook {
    uint32_t struct_size; /* sizeof(ses_hook_t) at the caller's build; set by ses_hook_init */
    /* version 1 */
    const char *name; /* for error messages (NULL: "hook <index>"); must outlive the hook */
    void *user;       /* the caller's, untouched by libsession */
    /** Once, first thing in ses_monitored_create; the step reads 0. */
    ses_status_t (*begin)(struct ses_hook *h, ses_monitored_t *m);
    /** Once, after every hook's begin; @p s is the session. A hook may set the step here. */
    ses_status_t (*after_create)(struct ses_hook *h, ses_monitored_t *m, ses_session_t *s);
    /** Before each run's eval; may add fetches, feeds and targets to @p args. */
    ses_status_t (*before_run)(struct ses_hook *h, ses_monitored_t *m, ses_run_args_t *args);
    /** After each successful eval, with the step already counting it; reads @p args' values. */
    ses_status_t (*after_run)(struct ses_hook *h, ses_monitored_t *m,
                              const ses_run_args_t *args);
    /** Once, in ses_monitored_close, even when another hook's end failed. */
    ses_status_t (*end)(struct ses_hook *h, ses_monitored_t *m, ses_session_t *s);
    /**
     * Frees the hook. Set by the built-ins; when set, the monitored session owns the hook and
     * calls this at close. NULL for a hook the caller owns (it must outlive the monitored
     * session).
     */
    void (*destroy)(struct ses_hook *h);
    /* append here; never reorder or remove */
} ses_hook_t;

/** Zeroes @p h and sets struct_size: every callback absent, caller-owned. */
SES_API void ses_hook_init(ses_hook_t *h);

/**
 * Frees a hook through its destroy callback (does nothing for a caller-owned hook). For hooks
 * never handed to ses_monitored_create, e.g. on an error path. Accepts NULL.
 */
SES_API void ses_hook_destroy(ses_hook_t *h);

/**
 * Creates a monitored session on @p s (borrowed: it must stay open until close, and is not
 * closed by it), with @p hooks[@p n_hooks] in order; @p hooks may be NULL when n_hooks is 0.
 * Calls every hook's begin, then every hook's after_create.
 *
 * Ownership: from this call on, hooks with a destroy callback belong to the monitored session,
 * also when the call fails (they are then destroyed before it returns). Caller-owned hooks
 * must outlive the monitored session.
 * Errors: SES_INVALID_ARGUMENT for a NULL argument, a NULL hook, a hook listed twice, or a
 * struct_size too small (use ses_hook_init); a failing begin or after_create returns its status
 * naming the hook, and no hook's end is called. On failure *out_monitored is NULL.
 */
SES_API ses_status_t ses_monitored_create(ses_session_t *s, ses_hook_t *const *hooks,
                                          size_t n_hooks, ses_monitored_t **out_monitored);

/**
 * One step of the loop: every hook's before_run, one ses_session_eval with the caller's
 * fetches, feeds and targets merged with those the hooks added, the step incremented, then
 * every hook's after_run. Arguments as for ses_session_eval; @p out_values receives one new
 * tensor per caller fetch (the hooks' fetches are not included).
 *
 * Errors: SES_FAILED_PRECONDITION when should_stop is already set, after close, or when called
 * from inside a hook. A failing before_run or after_run stops the run there (later hooks of
 * that point are not called) and returns its status naming the hook; a failing eval returns
 * its status and calls no after_run. The step counts every eval that succeeded, even when an
 * after_run failed afterwards. On failure every out_values entry is NULL.
 */
SES_API ses_status_t ses_monitored_run(ses_monitored_t *m, const ses_edge_t *fetches,
                                       size_t n_fetches, const ses_feed_t *feeds, size_t n_feeds,
                                       ses_node_t *const *targets, size_t n_targets,
                                       ses_tensor_t **out_values);

/** Asks the loop to stop: should_stop reads non-zero from now on. Any thread, signal-safe. */
SES_API void ses_monitored_request_stop(ses_monitored_t *m);

/** Non-zero once a hook or the caller requested a stop (or after close). Any thread. */
SES_API int ses_monitored_should_stop(const ses_monitored_t *m);

/** Runs completed, counted from the last set_step (the global step). Any thread. */
SES_API uint64_t ses_monitored_step(const ses_monitored_t *m);

/** Sets the step, e.g. after restoring a checkpoint; the next run completes step + 1. */
SES_API void ses_monitored_set_step(ses_monitored_t *m, uint64_t step);

/** The session @p m runs (borrowed). */
SES_API ses_session_t *ses_monitored_session(const ses_monitored_t *m);

/**
 * Ends the loop: calls every hook's end in order, each even when an earlier one failed, then
 * destroys the hooks the monitored session owns. Returns the first failure (naming its hook),
 * SES_OK otherwise. The session stays open. Closing twice is allowed (SES_OK); after close,
 * should_stop is set and run fails. Must not be called from inside a hook.
 */
SES_API ses_status_t ses_monitored_close(ses_monitored_t *m);

/** Closes @p m if needed (ignoring the status) and frees it. Accepts NULL. */
SES_API void ses_monitored_destroy(ses_monitored_t *m);

/* ---- built-in hooks ----------------------------------------------------------------------- */
/* Each returns a new hook in *out_hook (NULL on failure) that the monitored session owns once
 * it is handed to ses_monitored_create; free one never handed over with ses_hook_destroy. */

/**
 * Requests a stop once the step reaches @p last_step: in after_run, and in after_create when
 * the (restored) step is already there, so put it after ses_hook_load_checkpoint.
 */
SES_API ses_status_t ses_hook_stop_at_step(uint64_t last_step, ses_hook_t **out_hook);

/**
 * Requests a stop in the first after_run at least @p seconds (>= 0, finite) after begin, on the
 * monotonic clock.
 */
SES_API ses_status_t ses_hook_stop_at_time(double seconds, ses_hook_t **out_hook);

/**
 * Saves checkpoints of the session's variables to @p dir with ses_checkpoint_save (keeping the
 * last @p keep_last, 0 = all): in after_run when the step is a multiple of @p every_steps
 * (0: never by steps) or @p every_seconds (0: never by time) have passed since the last save
 * (or after_create), and in end unless the step was just saved or nothing ran since the state
 * after_create saw. @p dir is copied. A failed save fails the run (or close) naming the hook.
 */
SES_API ses_status_t ses_hook_checkpoint_saver(const char *dir, uint64_t every_steps,
                                               double every_seconds, uint32_t keep_last,
                                               ses_hook_t **out_hook);

/**
 * In after_create, restores the latest checkpoint of @p dir (see ses_checkpoint_latest) into
 * the session and sets the step to its step. A folder without checkpoints (or missing) is a
 * fresh start, not an error; a checkpoint that does not match the graph fails create.
 * @p dir is copied.
 */
SES_API ses_status_t ses_hook_load_checkpoint(const char *dir, ses_hook_t **out_hook);

/**
 * Every @p every_steps steps (> 0), prints "step N: loss X (Y steps/s)\n" to @p out (NULL:
 * stderr), flushed: N the step, X the value of @p loss, which the hook adds as a fetch to those
 * runs only (a scalar, or the mean of its elements; any float or integer dtype), Y the steps
 * per second since the previous line (or since after_create). With loss.node NULL it prints
 * "step N (Y steps/s)". @p out is borrowed: it must outlive the monitored session.
 */
SES_API ses_status_t ses_hook_step_logger(uint64_t every_steps, ses_edge_t loss, FILE *out,
                                          ses_hook_t **out_hook);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_HOOKS_H */
