/*
 * The monitored session: hooks around a session's evals (TensorFlow's MonitoredSession).
 *
 * One ses_run_args_t lives in the monitored session and is reused by every run, so that a loop
 * allocates only when a run needs more fetches, feeds or targets than any run before it.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/hooks.h>

#include "../error.h"
#include "../log.h"

/* The bytes of version 1 of ses_hook_t: a hook's struct_size must be at least this. */
#define HOOK_SIZE_1 (offsetof(ses_hook_t, destroy) + sizeof(((ses_hook_t *)0)->destroy))

struct ses_run_args {
    ses_edge_t *fetches; /* the caller's, then those hooks added */
    size_t n_fetches, cap_fetches, n_caller_fetches;
    ses_feed_t *feeds; /* the caller's (borrowed), then the hooks' (one reference each) */
    size_t n_feeds, cap_feeds, n_caller_feeds;
    ses_node_t **targets;
    size_t n_targets, cap_targets;
    ses_tensor_t **values; /* one per fetch once the eval succeeded */
    size_t cap_values;
    int adding;      /* in before_run: the add functions work */
    int have_values; /* in after_run: values are there */
};

struct ses_monitored {
    ses_session_t *session;
    ses_hook_t **hooks;
    size_t n_hooks;
    ses_run_args_t args;
    _Atomic uint64_t step;
    atomic_int stop;
    int closed;
    int in_hook; /* a callback is running: run and close are refused */
};

/* ---- run arguments ---------------------------------------------------------------------- */

/* Makes room for @p need elements of @p size bytes in *items; 0 when memory runs out. */
static int reserve(void **items, size_t *cap, size_t need, size_t size) {
    size_t n = *cap ? *cap : 4;
    void *p;

    if (need <= *cap)
        return 1;
    while (n < need)
        n *= 2;
    p = ses__realloc(*items, n * size);
    if (!p)
        return 0;
    *items = p;
    *cap = n;
    return 1;
}

static ses_status_t check_adding(const ses_run_args_t *args, const char *what) {
    if (!args)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: args is NULL", what);
    if (!args->adding)
        return ses__fail(SES_FAILED_PRECONDITION,
                         "%s: fetches, feeds and targets can only be added in before_run", what);
    return SES_OK;
}

ses_status_t ses_run_args_add_fetch(ses_run_args_t *args, ses_edge_t edge, size_t *out_index) {
    ses_status_t st;

    if (out_index)
        *out_index = 0;
    if ((st = check_adding(args, __func__)) != SES_OK)
        return st;
    if (!edge.node)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: the edge's node is NULL", __func__);
    if (!reserve((void **)&args->fetches, &args->cap_fetches, args->n_fetches + 1,
                 sizeof *args->fetches))
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", __func__);
    if (out_index)
        *out_index = args->n_fetches;
    args->fetches[args->n_fetches++] = edge;
    return SES_OK;
}

ses_status_t ses_run_args_add_feed(ses_run_args_t *args, ses_edge_t edge, ses_tensor_t *value) {
    ses_status_t st;

    if ((st = check_adding(args, __func__)) != SES_OK)
        return st;
    if (!edge.node || !value)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: the %s is NULL", __func__,
                         !edge.node ? "edge's node" : "value");
    if (!reserve((void **)&args->feeds, &args->cap_feeds, args->n_feeds + 1, sizeof *args->feeds))
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", __func__);
    args->feeds[args->n_feeds].edge = edge;
    args->feeds[args->n_feeds++].value = ses_tensor_retain(value);
    return SES_OK;
}

ses_status_t ses_run_args_add_target(ses_run_args_t *args, ses_node_t *target) {
    ses_status_t st;

    if ((st = check_adding(args, __func__)) != SES_OK)
        return st;
    if (!target)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: target is NULL", __func__);
    if (!reserve((void **)&args->targets, &args->cap_targets, args->n_targets + 1,
                 sizeof *args->targets))
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", __func__);
    args->targets[args->n_targets++] = target;
    return SES_OK;
}

size_t ses_run_args_fetch_count(const ses_run_args_t *args) {
    return args ? args->n_fetches : 0;
}

size_t ses_run_args_caller_fetch_count(const ses_run_args_t *args) {
    return args ? args->n_caller_fetches : 0;
}

ses_tensor_t *ses_run_args_value(const ses_run_args_t *args, size_t index) {
    if (!args || !args->have_values || index >= args->n_fetches)
        return NULL;
    return args->values[index];
}

/* Loads the caller's part of a run into @p args, emptying what the last run's hooks added. */
static ses_status_t args_start(ses_run_args_t *args, const ses_edge_t *fetches, size_t n_fetches,
                               const ses_feed_t *feeds, size_t n_feeds,
                               ses_node_t *const *targets, size_t n_targets) {
    if (!reserve((void **)&args->fetches, &args->cap_fetches, n_fetches, sizeof *fetches) ||
        !reserve((void **)&args->feeds, &args->cap_feeds, n_feeds, sizeof *feeds) ||
        !reserve((void **)&args->targets, &args->cap_targets, n_targets, sizeof *targets))
        return ses__fail(SES_OUT_OF_MEMORY, "ses_monitored_run: out of memory");
    if (n_fetches)
        memcpy(args->fetches, fetches, n_fetches * sizeof *fetches);
    if (n_feeds)
        memcpy(args->feeds, feeds, n_feeds * sizeof *feeds);
    if (n_targets)
        memcpy(args->targets, targets, n_targets * sizeof *targets);
    args->n_fetches = args->n_caller_fetches = n_fetches;
    args->n_feeds = args->n_caller_feeds = n_feeds;
    args->n_targets = n_targets;
    return SES_OK;
}

/* Releases the values from index @p from on and the hooks' feeds: the end of every run. */
static void args_finish(ses_run_args_t *args, size_t from) {
    if (args->have_values)
        for (size_t i = from; i < args->n_fetches; i++) {
            ses_tensor_release(args->values[i]);
            args->values[i] = NULL;
        }
    for (size_t i = args->n_caller_feeds; i < args->n_feeds; i++)
        ses_tensor_release(args->feeds[i].value);
    args->n_feeds = args->n_caller_feeds;
    args->have_values = 0;
    args->adding = 0;
}

static void args_free(ses_run_args_t *args) {
    free(args->fetches);
    free(args->feeds);
    free(args->targets);
    free(args->values);
    memset(args, 0, sizeof *args);
}

/* ---- calling hooks ---------------------------------------------------------------------- */

/* Wraps the message a failed callback left with the hook's name and the point it failed at. */
static ses_status_t hook_failed(const ses_hook_t *h, size_t index, const char *point,
                                ses_status_t st) {
    char message[2048];

    snprintf(message, sizeof message, "%s", ses_last_error());
    if (!*message)
        snprintf(message, sizeof message, "failed with %s and no message", ses_status_name(st));
    if (h->name)
        return ses__fail(st, "hook \"%s\" %s: %s", h->name, point, message);
    return ses__fail(st, "hook %zu %s: %s", index, point, message);
}

/* Destroys, once each, the hooks of @p hooks that have a destroy callback. */
static void destroy_owned(ses_hook_t *const *hooks, size_t n_hooks) {
    if (!hooks)
        return;
    for (size_t i = 0; i < n_hooks; i++) {
        ses_hook_t *h = hooks[i];
        int seen = 0;

        if (!h || h->struct_size < HOOK_SIZE_1 || !h->destroy)
            continue;
        for (size_t j = 0; j < i && !seen; j++)
            seen = hooks[j] == h;
        if (!seen)
            h->destroy(h);
    }
}

void ses_hook_init(ses_hook_t *h) {
    if (!h)
        return;
    memset(h, 0, sizeof *h);
    h->struct_size = sizeof *h;
}

void ses_hook_destroy(ses_hook_t *h) {
    if (h && h->struct_size >= HOOK_SIZE_1 && h->destroy)
        h->destroy(h);
}

static ses_status_t check_hooks(ses_hook_t *const *hooks, size_t n_hooks) {
    if (n_hooks && !hooks)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_monitored_create: hooks is NULL with %zu hooks",
                         n_hooks);
    for (size_t i = 0; i < n_hooks; i++) {
        if (!hooks[i])
            return ses__fail(SES_INVALID_ARGUMENT, "ses_monitored_create: hook %zu is NULL", i);
        if (hooks[i]->struct_size < HOOK_SIZE_1)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "ses_monitored_create: hook %zu has struct_size %u, version 1 needs "
                             "%zu; fill it with ses_hook_init first",
                             i, hooks[i]->struct_size, (size_t)HOOK_SIZE_1);
        for (size_t j = 0; j < i; j++)
            if (hooks[j] == hooks[i])
                return ses__fail(SES_INVALID_ARGUMENT,
                                 "ses_monitored_create: hooks %zu and %zu are the same hook", j,
                                 i);
    }
    return SES_OK;
}

/* ---- the monitored session -------------------------------------------------------------- */

ses_status_t ses_monitored_create(ses_session_t *s, ses_hook_t *const *hooks, size_t n_hooks,
                                  ses_monitored_t **out_monitored) {
    ses_monitored_t *m = NULL;
    ses_status_t st;

    if (out_monitored)
        *out_monitored = NULL;
    if (!s || !out_monitored) {
        st = ses__fail(SES_INVALID_ARGUMENT, "ses_monitored_create: %s is NULL",
                       !s ? "session" : "out_monitored");
        goto fail;
    }
    if ((st = check_hooks(hooks, n_hooks)) != SES_OK)
        goto fail;
    m = ses__calloc(1, sizeof *m);
    if (m)
        m->hooks = ses__calloc(n_hooks + 1, sizeof *m->hooks);
    if (!m || !m->hooks) {
        st = ses__fail(SES_OUT_OF_MEMORY, "ses_monitored_create: out of memory");
        goto fail;
    }
    m->session = s;
    m->n_hooks = n_hooks;
    if (n_hooks)
        memcpy(m->hooks, hooks, n_hooks * sizeof *hooks);
    atomic_init(&m->step, 0);
    atomic_init(&m->stop, 0);

    m->in_hook = 1;
    for (size_t i = 0; i < n_hooks; i++) {
        ses_hook_t *h = m->hooks[i];
        if (!h->begin)
            continue;
        ses__clear_error();
        if ((st = h->begin(h, m)) != SES_OK) {
            st = hook_failed(h, i, "begin", st);
            goto fail;
        }
    }
    for (size_t i = 0; i < n_hooks; i++) {
        ses_hook_t *h = m->hooks[i];
        if (!h->after_create)
            continue;
        ses__clear_error();
        if ((st = h->after_create(h, m, s)) != SES_OK) {
            st = hook_failed(h, i, "after_create", st);
            goto fail;
        }
    }
    m->in_hook = 0;
    ses__clear_error();
    *out_monitored = m;
    return SES_OK;

fail:
    destroy_owned(hooks, n_hooks);
    if (m) {
        free(m->hooks);
        free(m);
    }
    return st;
}

static ses_status_t check_run(const ses_monitored_t *m, const ses_edge_t *fetches,
                              size_t n_fetches, const ses_feed_t *feeds, size_t n_feeds,
                              ses_node_t *const *targets, size_t n_targets,
                              ses_tensor_t **out_values) {
    if (!m)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_monitored_run: monitored session is NULL");
    if ((n_fetches && (!fetches || !out_values)) || (n_feeds && !feeds) ||
        (n_targets && !targets))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_monitored_run: NULL %s with a non-zero count",
                         n_fetches && !fetches      ? "fetches"
                         : n_fetches && !out_values ? "out_values"
                         : n_feeds && !feeds        ? "feeds"
                                                    : "targets");
    if (m->closed)
        return ses__fail(SES_FAILED_PRECONDITION,
                         "ses_monitored_run: the monitored session is closed");
    if (m->in_hook)
        return ses__fail(SES_FAILED_PRECONDITION,
                         "ses_monitored_run: called from inside a hook");
    if (ses_monitored_should_stop(m))
        return ses__fail(SES_FAILED_PRECONDITION,
                         "ses_monitored_run: a stop was requested (at step %llu); check "
                         "ses_monitored_should_stop before each run",
                         (unsigned long long)ses_monitored_step(m));
    return SES_OK;
}

ses_status_t ses_monitored_run(ses_monitored_t *m, const ses_edge_t *fetches, size_t n_fetches,
                               const ses_feed_t *feeds, size_t n_feeds,
                               ses_node_t *const *targets, size_t n_targets,
                               ses_tensor_t **out_values) {
    ses_run_args_t *args;
    ses_status_t st;

    if (out_values)
        for (size_t i = 0; i < n_fetches; i++)
            out_values[i] = NULL;
    if ((st = check_run(m, fetches, n_fetches, feeds, n_feeds, targets, n_targets, out_values)) !=
        SES_OK)
        return st;
    args = &m->args;
    if ((st = args_start(args, fetches, n_fetches, feeds, n_feeds, targets, n_targets)) != SES_OK)
        return st;

    m->in_hook = 1;
    args->adding = 1;
    for (size_t i = 0; i < m->n_hooks; i++) {
        ses_hook_t *h = m->hooks[i];
        if (!h->before_run)
            continue;
        ses__clear_error();
        if ((st = h->before_run(h, m, args)) != SES_OK) {
            st = hook_failed(h, i, "before_run", st);
            goto done;
        }
    }
    args->adding = 0;
    m->in_hook = 0;

    if (!reserve((void **)&args->values, &args->cap_values, args->n_fetches,
                 sizeof *args->values)) {
        st = ses__fail(SES_OUT_OF_MEMORY, "ses_monitored_run: out of memory");
        goto done;
    }
    st = ses_session_eval(m->session, args->fetches, args->n_fetches, args->feeds,
                          args->n_feeds, args->targets, args->n_targets, args->values);
    if (st != SES_OK)
        goto done;
    args->have_values = 1;
    atomic_fetch_add(&m->step, 1);

    m->in_hook = 1;
    for (size_t i = 0; i < m->n_hooks; i++) {
        ses_hook_t *h = m->hooks[i];
        if (!h->after_run)
            continue;
        ses__clear_error();
        if ((st = h->after_run(h, m, args)) != SES_OK) {
            st = hook_failed(h, i, "after_run", st);
            goto done;
        }
    }
    /* The caller's values change hands; the hooks' are released below. */
    for (size_t i = 0; i < n_fetches; i++) {
        out_values[i] = args->values[i];
        args->values[i] = NULL;
    }
    ses__clear_error();

done:
    m->in_hook = 0;
    args_finish(args, 0);
    return st;
}

void ses_monitored_request_stop(ses_monitored_t *m) {
    if (m)
        atomic_store(&m->stop, 1);
}

int ses_monitored_should_stop(const ses_monitored_t *m) {
    /* C11's atomic_load takes a non-const pointer; reading does not modify. */
    return m ? atomic_load(&((ses_monitored_t *)m)->stop) != 0 : 1;
}

uint64_t ses_monitored_step(const ses_monitored_t *m) {
    return m ? atomic_load(&((ses_monitored_t *)m)->step) : 0;
}

void ses_monitored_set_step(ses_monitored_t *m, uint64_t step) {
    if (m)
        atomic_store(&m->step, step);
}

ses_session_t *ses_monitored_session(const ses_monitored_t *m) {
    return m ? m->session : NULL;
}

ses_status_t ses_monitored_close(ses_monitored_t *m) {
    ses_status_t first = SES_OK;
    char message[2048] = "";

    if (!m)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_monitored_close: monitored session is NULL");
    if (m->in_hook)
        return ses__fail(SES_FAILED_PRECONDITION,
                         "ses_monitored_close: called from inside a hook");
    if (m->closed)
        return SES_OK;
    m->closed = 1;
    atomic_store(&m->stop, 1);

    /* Every end runs even when one fails (a checkpoint saver after a failing logger must still
     * save); the first failure is returned, later ones are logged so none goes unseen. */
    m->in_hook = 1;
    for (size_t i = 0; i < m->n_hooks; i++) {
        ses_hook_t *h = m->hooks[i];
        ses_status_t st;

        if (!h->end)
            continue;
        ses__clear_error();
        if ((st = h->end(h, m, m->session)) == SES_OK)
            continue;
        st = hook_failed(h, i, "end", st);
        if (first == SES_OK) {
            first = st;
            snprintf(message, sizeof message, "%s", ses_last_error());
        } else {
            ses__log(SES__LOG_ERROR, "ses_monitored_close: %s", ses_last_error());
        }
    }
    m->in_hook = 0;
    destroy_owned(m->hooks, m->n_hooks);
    m->n_hooks = 0;
    if (first != SES_OK)
        return ses__fail(first, "%s", message);
    ses__clear_error();
    return SES_OK;
}

void ses_monitored_destroy(ses_monitored_t *m) {
    if (!m)
        return;
    if (!m->closed && !m->in_hook)
        ses_monitored_close(m);
    args_free(&m->args);
    free(m->hooks);
    free(m);
}
