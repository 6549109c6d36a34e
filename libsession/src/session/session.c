/*
 * Sessions: open on a graph and a device list, eval with feeds, compiled plans, close.
 *
 * eval = canonical key (fetches, fed edges and targets sorted) → cached plan → initialize the
 * variables the plan reads that the scope lacks (by evaluating their initializers) → recompile
 * when the graph or an external type changed → run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compile/plan.h"
#include "../error.h"
#include "../log.h"
#include "../registry/registry_internal.h"
#include "../scope/scope_internal.h"
#include "../tensor/tensor_internal.h"

/* Variables whose initializers read other variables recurse; this bounds the depth. */
#define MAX_INIT_DEPTH 64

void ses_session_options_init(ses_session_options_t *o) {
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->fallback = SES_FALLBACK_WARN;
    o->log_level = SES__LOG_WARN;
    o->graphs = 1;
    o->fusion = 1;
    o->layout = 1;
    o->in_place = 1;
    o->fold = 1;
}

/* ---- options ---------------------------------------------------------------------------- */

static ses_status_t check_options(const ses_session_t *s) {
    const ses_session_options_t *o = &s->options;

    if ((unsigned)o->fallback > SES_FALLBACK_DENY)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_session_open: unknown fallback policy %d (use SES_FALLBACK_ALLOW, "
                         "_WARN or _DENY)",
                         (int)o->fallback);
    if (o->log_level > SES__LOG_DEBUG)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_session_open: log_level %u is not 0 (error) to 3 (debug)",
                         o->log_level);
    if (o->threads > 4096)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_open: %u threads; the most is 4096",
                         o->threads);
    if (o->fusion > 1)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_open: fusion is %u; use 1 or 0",
                         o->fusion);
    if (o->layout > 1)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_open: layout is %u; use 1 or 0",
                         o->layout);
    if (o->in_place > 1)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_open: in_place is %u; use 1 or 0",
                         o->in_place);
    if (o->fold > 1)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_open: fold is %u; use 1 or 0",
                         o->fold);
    if (o->graphs > 1)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_open: graphs is %u; use 1 or 0",
                         o->graphs);
    if (o->profile > 1)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_open: profile is %u; use 1 or 0",
                         o->profile);
    if (o->n_driver_options && !o->driver_options)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_session_open: driver_options is NULL with %zu entries",
                         o->n_driver_options);
    for (size_t i = 0; i < o->n_driver_options; i++) {
        const char *e = o->driver_options[i];
        const char *eq = e ? strchr(e, '=') : NULL;
        if (!e || strncmp(e, "driver.", 7) != 0 || !eq || eq == e + 7)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "ses_session_open: driver option %zu (\"%s\") must look like "
                             "\"driver.<name>.<option>=value\"",
                             i, e ? e : "(null)");
    }
    return SES_OK;
}

static void free_driver_options(ses_session_t *s) {
    for (size_t i = 0; i < s->n_driver_options; i++)
        free(s->driver_options[i]);
    free(s->driver_options);
    s->driver_options = NULL;
    s->n_driver_options = 0;
    s->options.driver_options = NULL;
    s->options.n_driver_options = 0;
}

/* Copies the caller's driver options; options.threads comes first as driver.cpu.threads, so an
 * explicit "driver.cpu.threads=..." entry (later) wins. */
static ses_status_t copy_driver_options(ses_session_t *s) {
    size_t n = s->options.n_driver_options;

    s->driver_options = ses__calloc(n + 2, sizeof *s->driver_options);
    if (!s->driver_options)
        return ses__fail(SES_OUT_OF_MEMORY, "ses_session_open: out of memory");
    if (s->options.threads) {
        s->driver_options[s->n_driver_options] =
            ses__strdup_printf("driver.cpu.threads=%u", s->options.threads);
        if (!s->driver_options[s->n_driver_options++])
            return ses__fail(SES_OUT_OF_MEMORY, "ses_session_open: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        s->driver_options[s->n_driver_options] = ses__strdup(s->options.driver_options[i]);
        if (!s->driver_options[s->n_driver_options++])
            return ses__fail(SES_OUT_OF_MEMORY, "ses_session_open: out of memory");
    }
    s->options.driver_options = (const char *const *)s->driver_options;
    s->options.n_driver_options = s->n_driver_options;
    return SES_OK;
}

/* ---- devices ---------------------------------------------------------------------------- */

static ses_status_t open_device(ses_session_t *s, const ses_device_t *device) {
    ses__device_ctx_t *d = &s->devices[s->n_devices];
    struct ses_driver *driver = (struct ses_driver *)ses_device_driver(device);
    const ses_drv_api_t *api = driver->api;
    char message[1024];
    int32_t rc;

    for (size_t i = 0; i < s->n_devices; i++)
        if (s->devices[i].device == device)
            return SES_OK; /* named twice: the first place counts */
    memset(d, 0, sizeof *d);
    d->device = device;
    d->driver = driver;
    d->api = api;
    rc = ses__host_open_device(device, (const char *const *)s->driver_options, s->n_driver_options,
                               &d->handle);
    if (rc == SES_DRV_OK)
        rc = api->get_kernels(d->handle, &d->kernels, &d->n_kernels, &d->kernel_stride);
    if (rc != SES_DRV_OK) {
        ses__host_take_message(message, sizeof message);
        if (d->handle)
            api->close_device(d->handle);
        return ses__fail((ses_status_t)rc, "session: cannot open device %s: %s",
                         ses_device_name(device), message);
    }
    if (d->kernel_stride < SES_DRV_SIZEOF_1_0(ses_drv_kernel_t, compute)) {
        api->close_device(d->handle);
        return ses__fail(SES_INCOMPATIBLE, "session: device %s: kernel entries of %u bytes; ABI 1.0 needs %zu",
                         ses_device_name(device), d->kernel_stride,
                         SES_DRV_SIZEOF_1_0(ses_drv_kernel_t, compute));
    }
    /* DRV-16, DRV-41: map is called only on a device that promises it (CAP_MAP); host-visible
     * says the map costs no copy. */
    d->host_visible = (ses_device_caps(device) & SES_DEVICE_CAP_HOST_VISIBLE) &&
                      (ses_device_caps(device) & SES_DEVICE_CAP_MAP) && api->map && api->unmap;
    d->can_import = (ses_device_caps(device) & SES_DEVICE_CAP_HOST_IMPORT) && api->import_host_ptr;
    d->streams = (ses_device_caps(device) & SES_DEVICE_CAP_STREAMS) && api->stream_create &&
                 api->stream_destroy && api->stream_synchronize;
    /* The graph entries exist only in tables of ABI 1.1 and later. */
    d->graphs = d->streams && (ses_device_caps(device) & SES_DEVICE_CAP_GRAPHS) &&
                driver->abi_minor >= 1 &&
                api->struct_size >= offsetof(ses_drv_api_t, graph_destroy) + sizeof(void *) &&
                api->capture_begin && api->capture_end && api->graph_launch && api->graph_destroy &&
                s->options.graphs != 0;
    /* The native entries exist only in tables of ABI 1.2 and later (DRV-83, DRV-84). */
    d->abi_minor = driver->abi_minor;
    d->native = (ses_device_caps(device) & SES_DEVICE_CAP_NATIVE) && driver->abi_minor >= 2 &&
                api->struct_size >= offsetof(ses_drv_api_t, import_native) + sizeof(void *) &&
                api->buffer_native && api->import_native;
    s->n_devices++;
    return SES_OK;
}

static void close_devices(ses_session_t *s) {
    for (size_t i = 0; i < s->n_devices; i++)
        s->devices[i].api->close_device(s->devices[i].handle);
    s->n_devices = 0;
}

ses_status_t ses_session_open(ses_graph_t *graph, const char *const *devices, size_t n_devices,
                              const ses_session_options_t *options, ses_session_t **out_session) {
    ses_session_t *s = NULL;
    const ses_device_t *device;
    ses_status_t st;

    if (!out_session)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_open: out_session is NULL");
    *out_session = NULL;
    if (!graph)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_open: graph is NULL");
    if (n_devices && !devices)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_open: devices is NULL with %zu names",
                         n_devices);
    if (options && options->struct_size < sizeof(uint32_t) * 2)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_session_open: options.struct_size is %u; call "
                         "ses_session_options_init first",
                         options->struct_size);
    s = ses__calloc(1, sizeof *s);
    if (!s)
        return ses__fail(SES_OUT_OF_MEMORY, "ses_session_open: out of memory");
    ses_session_options_init(&s->options);
    if (options)
        memcpy(&s->options, options,
               options->struct_size < sizeof s->options ? options->struct_size : sizeof s->options);
    s->options.struct_size = sizeof s->options;
    /* SESSION_FUSION=0 turns fusion off whatever the options say: for debugging and A/B
     * benchmarks of programs that do not expose the option. */
    {
        const char *fusion = getenv("SESSION_FUSION");
        const char *layout = getenv("SESSION_LAYOUT");
        const char *in_place = getenv("SESSION_IN_PLACE");
        const char *fold = getenv("SESSION_FOLD");
        const char *profile = getenv("SESSION_PROFILE");
        if (fusion && (!strcmp(fusion, "0") || !strcmp(fusion, "off")))
            s->options.fusion = 0;
        if (layout && (!strcmp(layout, "0") || !strcmp(layout, "off")))
            s->options.layout = 0;
        if (in_place && (!strcmp(in_place, "0") || !strcmp(in_place, "off")))
            s->options.in_place = 0;
        if (fold && (!strcmp(fold, "0") || !strcmp(fold, "off")))
            s->options.fold = 0;
        /* SESSION_PROFILE works both ways: a program that does not expose the option can be
         * profiled, and one that does can be timed without the profiler's waits. */
        if (profile && (!strcmp(profile, "0") || !strcmp(profile, "off")))
            s->options.profile = 0;
        if (profile && (!strcmp(profile, "1") || !strcmp(profile, "on")))
            s->options.profile = 1;
    }
    if ((st = check_options(s)) != SES_OK || (st = copy_driver_options(s)) != SES_OK) {
        free_driver_options(s);
        free(s);
        return st;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->resident_lock, NULL);
    pthread_cond_init(&s->idle, NULL);
    atomic_init(&s->kernel_calls, 0);
    atomic_init(&s->graph_captures, 0);
    atomic_init(&s->graph_launches, 0);
    for (size_t i = 0; i < 7; i++)
        atomic_init(&s->transfers[i], 0);
    s->registry = s->options.registry;
    if (!s->registry && (st = ses_registry_default(&s->registry)) != SES_OK)
        goto fail;
    s->devices = ses__calloc(n_devices + 1, sizeof *s->devices);
    if (!s->devices || (st = ses_scope_create(&s->scope)) != SES_OK) {
        st = s->devices ? st : ses__fail(SES_OUT_OF_MEMORY, "ses_session_open: out of memory");
        goto fail;
    }
    /* Drivers read their options while a device opens: the session's come first. */
    ses__host_set_session_options((const char *const *)s->driver_options, s->n_driver_options);
    for (size_t i = 0; i < n_devices; i++) {
        if (!devices[i]) {
            st = ses__fail(SES_INVALID_ARGUMENT, "ses_session_open: device name %zu is NULL", i);
            goto fail;
        }
        if ((st = ses_registry_find_device(s->registry, devices[i], &device)) != SES_OK ||
            (st = open_device(s, device)) != SES_OK)
            goto fail;
    }
    /* The CPU device is always there, last, so every node has somewhere to run. */
    if ((st = ses_registry_find_device(s->registry, "cpu", &device)) != SES_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ses_last_error());
        st = ses__fail(st, "ses_session_open: the CPU driver is needed: %s", message);
        goto fail;
    }
    for (size_t i = 0; i < s->n_devices; i++)
        if (s->devices[i].device == device) {
            /* Named explicitly: move it last, since external tensors live there. */
            ses__device_ctx_t cpu = s->devices[i];
            memmove(&s->devices[i], &s->devices[i + 1], (s->n_devices - i - 1) * sizeof cpu);
            s->devices[s->n_devices - 1] = cpu;
            device = NULL;
            break;
        }
    if (device && (st = open_device(s, device)) != SES_OK)
        goto fail;
    if ((st = ses__device_home_open(s)) != SES_OK)
        goto fail;
    ses__host_set_session_options(NULL, 0);
    s->graph = ses_graph_retain(graph);
    *out_session = s;
    return SES_OK;

fail:
    ses__host_set_session_options(NULL, 0);
    close_devices(s);
    free_driver_options(s);
    free(s->devices);
    ses_scope_destroy(s->scope);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->resident_lock);
    pthread_cond_destroy(&s->idle);
    free(s);
    return st;
}

/* ---- plans ------------------------------------------------------------------------------ */

static int compare_edges(const void *a, const void *b) {
    const ses_edge_t *x = a, *y = b;
    if (x->node->id != y->node->id)
        return x->node->id < y->node->id ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int compare_nodes(const void *a, const void *b) {
    const ses_node_t *x = *(ses_node_t *const *)a, *y = *(ses_node_t *const *)b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void plan_free(ses_plan_t *p) {
    if (!p)
        return;
    ses__compiled_free(p->session, p->compiled);
    free(p->fetches);
    free(p->fed);
    free(p->targets);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* A plan for this request, its arrays sorted so that the caller's order does not matter. */
static ses_status_t plan_create(ses_session_t *s, const ses_edge_t *fetches, size_t n_fetches,
                                const ses_edge_t *fed, size_t n_fed, ses_node_t *const *targets,
                                size_t n_targets, ses_plan_t **out_plan) {
    ses_plan_t *p = ses__calloc(1, sizeof *p);

    *out_plan = NULL;
    if (!p)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
    p->session = s;
    p->fetches = ses__malloc((n_fetches + 1) * sizeof *p->fetches);
    p->fed = ses__malloc((n_fed + 1) * sizeof *p->fed);
    p->targets = ses__malloc((n_targets + 1) * sizeof *p->targets);
    pthread_mutex_init(&p->lock, NULL);
    if (!p->fetches || !p->fed || !p->targets) {
        plan_free(p);
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
    }
    if (n_fetches)
        memcpy(p->fetches, fetches, n_fetches * sizeof *fetches);
    if (n_fed)
        memcpy(p->fed, fed, n_fed * sizeof *fed);
    if (n_targets)
        memcpy(p->targets, targets, n_targets * sizeof *targets);
    p->n_fetches = n_fetches;
    p->n_fed = n_fed;
    p->n_targets = n_targets;
    qsort(p->fetches, n_fetches, sizeof *p->fetches, compare_edges);
    qsort(p->fed, n_fed, sizeof *p->fed, compare_edges);
    qsort(p->targets, n_targets, sizeof *p->targets, compare_nodes);
    *out_plan = p;
    return SES_OK;
}

/* Edges are compared field by field: a caller's ses_edge_t may carry any bytes in its padding. */
static int same_edges(const ses_edge_t *a, const ses_edge_t *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i].node != b[i].node || a[i].index != b[i].index)
            return 0;
    return 1;
}

static int same_request(const ses_plan_t *a, const ses_plan_t *b) {
    if (a->n_fetches != b->n_fetches || a->n_fed != b->n_fed || a->n_targets != b->n_targets)
        return 0;
    for (size_t i = 0; i < a->n_targets; i++)
        if (a->targets[i] != b->targets[i])
            return 0;
    return same_edges(a->fetches, b->fetches, a->n_fetches) &&
           same_edges(a->fed, b->fed, a->n_fed);
}

static ses_status_t add_plan(ses_session_t *s, ses_plan_t *p) {
    ses_plan_t **plans;

    pthread_mutex_lock(&s->lock);
    plans = ses__realloc(s->plans, (s->n_plans + 1) * sizeof *plans);
    if (plans) {
        s->plans = plans;
        s->plans[s->n_plans++] = p;
    }
    pthread_mutex_unlock(&s->lock);
    return plans ? SES_OK : ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
}

/* The cached plan for this request, made when missing. */
static ses_status_t cached_plan(ses_session_t *s, ses_plan_t *key, ses_plan_t **out_plan) {
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->n_plans; i++) {
        if (s->plans[i]->cached && same_request(s->plans[i], key)) {
            *out_plan = s->plans[i];
            pthread_mutex_unlock(&s->lock);
            plan_free(key);
            return SES_OK;
        }
    }
    pthread_mutex_unlock(&s->lock);
    key->cached = 1;
    *out_plan = key;
    return add_plan(s, key);
}

static ses_status_t eval_in_ex(ses_session_t *s, ses_scope_t *scope, const ses_edge_t *fetches,
                               size_t n_fetches, const ses_feed_t *feeds, size_t n_feeds,
                               ses_node_t *const *targets, size_t n_targets,
                               ses_tensor_t **out_values, int depth, int device_fetches);

static ses_status_t eval_in(ses_session_t *s, ses_scope_t *scope, const ses_edge_t *fetches,
                            size_t n_fetches, const ses_feed_t *feeds, size_t n_feeds,
                            ses_node_t *const *targets, size_t n_targets,
                            ses_tensor_t **out_values, int depth);

/* Sets every variable the plan reads that @p scope lacks, from its initializer. */
static ses_status_t init_variables(ses_plan_t *plan, ses_scope_t *scope, int depth) {
    ses_session_t *s = plan->session;
    ses__pruned_t pruned;
    ses_status_t st;

    st = ses__prune(s->graph, plan->fetches, plan->n_fetches, plan->fed, plan->n_fed,
                    plan->targets, plan->n_targets, &pruned);
    if (st != SES_OK)
        return st;
    for (size_t i = 0; i < pruned.n_variables && st == SES_OK; i++) {
        const ses_node_t *var = pruned.variables[i];
        ses_tensor_t *value = NULL;

        if (ses__scope_find_raw(scope, var->name, &value) == SES_OK) {
            ses_tensor_release(value);
            continue;
        }
        if (depth >= MAX_INIT_DEPTH) {
            st = ses__fail(SES_INVALID_ARGUMENT,
                           "variable \"%s\": initializers nest deeper than %d variables",
                           var->name, MAX_INIT_DEPTH);
            break;
        }
        if (var->inputs[0].node->kind == SES__NODE_PLACEHOLDER) {
            /* Nobody fetched the placeholder: say what needs it, and what to do instead. */
            st = ses__fail(SES_FAILED_PRECONDITION,
                           "variable \"%s\" is not set, and its initializer is placeholder "
                           "\"%s\", which initializers are never fed; set the variable first "
                           "(ses_scope_set on the session's scope, or restore a checkpoint)",
                           var->name, var->inputs[0].node->name);
            break;
        }
        st = eval_in(s, scope, &var->inputs[0], 1, NULL, 0, NULL, 0, &value, depth + 1);
        if (st == SES_OK) {
            st = ses_scope_set(scope, var->name, value);
            ses_tensor_release(value);
        } else {
            char message[2048];
            snprintf(message, sizeof message, "%s", ses_last_error());
            st = ses__fail(st, "initializing variable \"%s\": %s", var->name, message);
        }
    }
    ses__pruned_clear(&pruned);
    return st;
}

/*
 * Makes @p plan's compiled state fit @p feeds (plan order) and @p scope, and returns with the
 * plan's lock held, whatever the status. The fast path checks, in one pass over the plan's
 * external values, that the graph, the feed types and the variables are as compiled; otherwise
 * missing variables are initialized (outside the plan's lock: that evaluates other plans) and
 * the plan is recompiled.
 */
static ses_status_t prepare_locked(ses_plan_t *plan, ses_tensor_t *const *feeds,
                                   ses_scope_t *scope, int depth) {
    ses_status_t st = SES_OK;

    pthread_mutex_lock(&plan->lock);
    if (!ses__compiled_matches(plan, feeds, scope)) {
        pthread_mutex_unlock(&plan->lock);
        st = init_variables(plan, scope, depth);
        pthread_mutex_lock(&plan->lock);
        if (st == SES_OK && !ses__compiled_matches(plan, feeds, scope)) {
            plan->graph_version = ses_graph_version(plan->session->graph);
            st = ses__compile(plan, feeds, scope);
        }
    }
    return st;
}

/* Runs @p plan with @p feeds in plan order, compiling it first when it does not fit them. */
static ses_status_t run_plan(ses_plan_t *plan, ses_tensor_t *const *feeds, ses_scope_t *scope,
                             ses_tensor_t **out_values, int depth, int device_fetches) {
    ses_status_t st = prepare_locked(plan, feeds, scope, depth);

    if (st == SES_OK)
        st = ses__run(plan, feeds, scope, device_fetches, out_values);
    pthread_mutex_unlock(&plan->lock);
    return st;
}

static ses_status_t check_feeds(const ses_feed_t *feeds, size_t n_feeds) {
    for (size_t i = 0; i < n_feeds; i++)
        if (!feeds[i].value)
            return ses__fail(SES_INVALID_ARGUMENT, "feed %zu has a NULL value", i);
    return SES_OK;
}

static ses_status_t eval_in(ses_session_t *s, ses_scope_t *scope, const ses_edge_t *fetches,
                            size_t n_fetches, const ses_feed_t *feeds, size_t n_feeds,
                            ses_node_t *const *targets, size_t n_targets,
                            ses_tensor_t **out_values, int depth) {
    return eval_in_ex(s, scope, fetches, n_fetches, feeds, n_feeds, targets, n_targets,
                      out_values, depth, 0);
}

static ses_status_t eval_in_ex(ses_session_t *s, ses_scope_t *scope, const ses_edge_t *fetches,
                               size_t n_fetches, const ses_feed_t *feeds, size_t n_feeds,
                               ses_node_t *const *targets, size_t n_targets,
                               ses_tensor_t **out_values, int depth, int device_fetches) {
    ses_edge_t fed_small[16] = {{NULL, 0}}, *fed = fed_small;
    ses_tensor_t *values_small[16], **values = values_small;
    ses_tensor_t *outs_small[16] = {NULL}, **outs = outs_small;
    ses_plan_t *key = NULL, *plan = NULL;
    ses_status_t st;

    if (n_feeds > 16 || n_fetches > 16) {
        fed = ses__malloc((n_feeds + 1) * sizeof *fed);
        values = ses__malloc((n_feeds + 1) * sizeof *values);
        outs = ses__calloc(n_fetches + 1, sizeof *outs);
        if (!fed || !values || !outs) {
            st = ses__fail(SES_OUT_OF_MEMORY, "eval: out of memory");
            goto done;
        }
    }
    for (size_t i = 0; i < n_feeds; i++)
        fed[i] = feeds[i].edge;
    st = plan_create(s, fetches, n_fetches, fed, n_feeds, targets, n_targets, &key);
    if (st != SES_OK)
        goto done;
    /* Validate before caching, so a bad request leaves no plan behind. */
    {
        ses__pruned_t pruned;
        st = ses__prune(s->graph, key->fetches, n_fetches, key->fed, n_feeds, key->targets,
                        n_targets, &pruned);
        ses__pruned_clear(&pruned);
        if (st != SES_OK) {
            plan_free(key);
            goto done;
        }
    }
    st = cached_plan(s, key, &plan);
    if (st != SES_OK) {
        plan_free(key);
        goto done;
    }
    /* The caller's feeds and fetches in the plan's sorted order. */
    for (size_t i = 0; i < n_feeds; i++)
        values[ses__fed_index(plan->fed, n_feeds, feeds[i].edge)] = feeds[i].value;
    st = run_plan(plan, values, scope, outs, depth, device_fetches);
    if (st == SES_OK) {
        for (size_t i = 0; i < n_fetches; i++) {
            /* Equal edges fetched twice each get their own tensor. */
            size_t j = 0;
            while (compare_edges(&plan->fetches[j], &fetches[i]) != 0 || !outs[j])
                j++;
            out_values[i] = outs[j];
            outs[j] = NULL;
        }
    }
    for (size_t i = 0; i < n_fetches; i++)
        ses_tensor_release(outs[i]);

done:
    if (fed != fed_small) {
        free(fed);
        free(values);
        free(outs);
    }
    return st;
}

/* ses_eval_options_t.device_fetches, 0 when the caller's struct ends before it. */
static int wants_device_fetches(const ses_eval_options_t *options) {
    return options &&
           options->struct_size >=
               offsetof(ses_eval_options_t, device_fetches) + sizeof options->device_fetches &&
           options->device_fetches;
}

ses_status_t ses_session_eval_ex(ses_session_t *s, const ses_edge_t *fetches, size_t n_fetches,
                                 const ses_feed_t *feeds, size_t n_feeds,
                                 ses_node_t *const *targets, size_t n_targets,
                                 const ses_eval_options_t *options, ses_tensor_t **out_values) {
    ses_scope_t *scope = NULL;
    ses_status_t st;

    if (out_values)
        for (size_t i = 0; i < n_fetches; i++)
            out_values[i] = NULL;
    if (!s)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_eval: session is NULL");
    if ((n_fetches && (!fetches || !out_values)) || (n_feeds && !feeds) ||
        (n_targets && !targets))
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_eval: NULL %s with a non-zero count",
                         n_fetches && !fetches     ? "fetches"
                         : n_fetches && !out_values ? "out_values"
                         : n_feeds && !feeds        ? "feeds"
                                                    : "targets");
    if (!n_fetches && !n_targets)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_eval: nothing to fetch or run");
    if ((st = check_feeds(feeds, n_feeds)) != SES_OK)
        return st;
    if ((st = ses__session_enter(s, "ses_session_eval")) != SES_OK)
        return st;
    if (s->remote) {
        st = options && options->struct_size >= sizeof(uint32_t) * 2 && options->private_scope
                 ? ses__fail(SES_UNIMPLEMENTED,
                             "ses_session_eval: a remote session has no private scopes")
                 : s->remote_hooks->eval(s, fetches, n_fetches, feeds, n_feeds, targets, n_targets,
                                    out_values);
        ses__session_leave(s);
        return st;
    }
    scope = s->scope;
    if (options && options->struct_size >= sizeof(uint32_t) * 2 && options->private_scope)
        st = ses_scope_create_child(s->scope, &scope);
    if (st == SES_OK)
        st = eval_in_ex(s, scope, fetches, n_fetches, feeds, n_feeds, targets, n_targets,
                        out_values, 0, wants_device_fetches(options));
    if (scope != s->scope)
        ses_scope_destroy(scope);
    ses__session_leave(s);
    return st;
}

ses_status_t ses__session_eval_local(ses_session_t *s, const ses_edge_t *fetches,
                                     size_t n_fetches, const ses_feed_t *feeds, size_t n_feeds,
                                     ses_node_t *const *targets, size_t n_targets,
                                     ses_tensor_t **out_values) {
    return eval_in(s, s->scope, fetches, n_fetches, feeds, n_feeds, targets, n_targets,
                   out_values, 0);
}

ses_status_t ses_session_eval(ses_session_t *s, const ses_edge_t *fetches, size_t n_fetches,
                              const ses_feed_t *feeds, size_t n_feeds, ses_node_t *const *targets,
                              size_t n_targets, ses_tensor_t **out_values) {
    return ses_session_eval_ex(s, fetches, n_fetches, feeds, n_feeds, targets, n_targets, NULL,
                               out_values);
}

ses_status_t ses_session_compile(ses_session_t *s, const ses_edge_t *fetches, size_t n_fetches,
                                 const ses_edge_t *fed, size_t n_fed, ses_node_t *const *targets,
                                 size_t n_targets, ses_plan_t **out_plan) {
    ses__pruned_t pruned;
    ses_plan_t *p = NULL;
    ses_status_t st;

    if (!out_plan)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_compile: out_plan is NULL");
    *out_plan = NULL;
    if (!s || (n_fetches && !fetches) || (n_fed && !fed) || (n_targets && !targets))
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_compile: NULL %s",
                         !s ? "session" : "array with a non-zero count");
    if (!n_fetches && !n_targets)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_compile: nothing to fetch or run");
    if (s->remote)
        return ses__fail(SES_UNIMPLEMENTED,
                         "ses_session_compile: a remote session has no plans; use "
                         "ses_session_eval");
    if ((st = ses__session_enter(s, "ses_session_compile")) != SES_OK)
        return st;
    st = ses__prune(s->graph, fetches, n_fetches, fed, n_fed, targets, n_targets, &pruned);
    ses__pruned_clear(&pruned);
    if (st == SES_OK)
        st = plan_create(s, fetches, n_fetches, fed, n_fed, targets, n_targets, &p);
    if (st == SES_OK) {
        int compiled = 0;
        /* An explicit plan keeps the caller's order: feed values come in that order. */
        if (n_fetches)
            memcpy(p->fetches, fetches, n_fetches * sizeof *fetches);
        if (n_fed)
            memcpy(p->fed, fed, n_fed * sizeof *fed);
        /* Everything the declared types decide is compiled now, so its errors are reported
         * here and the placement can be read before any run; the variables the plan reads are
         * initialized for that, as the first run would. */
        st = init_variables(p, s->scope, 0);
        if (st == SES_OK) {
            p->graph_version = ses_graph_version(s->graph);
            st = ses__compile_declared(p, s->scope, &compiled);
        }
        if (st == SES_OK)
            st = add_plan(s, p);
        if (st != SES_OK)
            plan_free(p);
        else
            *out_plan = p;
    }
    ses__session_leave(s);
    return st;
}

ses_status_t ses_plan_prepare(ses_plan_t *plan, ses_tensor_t *const *feed_values,
                              size_t n_feed_values) {
    ses_status_t st;

    if (!plan)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_plan_prepare: plan is NULL");
    if (n_feed_values != plan->n_fed || (n_feed_values && !feed_values))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_plan_prepare: the plan has %zu fed edges, got %zu values%s",
                         plan->n_fed, n_feed_values, feed_values ? "" : " (NULL array)");
    for (size_t i = 0; i < n_feed_values; i++)
        if (!feed_values[i])
            return ses__fail(SES_INVALID_ARGUMENT, "ses_plan_prepare: feed value %zu is NULL", i);
    if ((st = ses__session_enter(plan->session, "ses_plan_prepare")) != SES_OK)
        return st;
    st = prepare_locked(plan, feed_values, plan->session->scope, 0);
    pthread_mutex_unlock(&plan->lock);
    ses__session_leave(plan->session);
    return st;
}

ses_status_t ses_plan_run(ses_plan_t *plan, ses_tensor_t *const *feed_values,
                          size_t n_feed_values, ses_tensor_t **out_values) {
    return ses_plan_run_ex(plan, feed_values, n_feed_values, NULL, out_values);
}

ses_status_t ses_plan_run_ex(ses_plan_t *plan, ses_tensor_t *const *feed_values,
                             size_t n_feed_values, const ses_eval_options_t *options,
                             ses_tensor_t **out_values) {
    ses_status_t st;

    if (!plan)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_plan_run: plan is NULL");
    if (out_values)
        for (size_t i = 0; i < plan->n_fetches; i++)
            out_values[i] = NULL;
    if (plan->n_fetches && !out_values)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_plan_run: out_values is NULL");
    if (n_feed_values != plan->n_fed || (n_feed_values && !feed_values))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_plan_run: the plan has %zu fed edges, got %zu values%s", plan->n_fed,
                         n_feed_values, feed_values ? "" : " (NULL array)");
    for (size_t i = 0; i < n_feed_values; i++)
        if (!feed_values[i])
            return ses__fail(SES_INVALID_ARGUMENT, "ses_plan_run: feed value %zu is NULL", i);
    if (options && options->struct_size < sizeof(uint32_t) * 2)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_plan_run: options.struct_size is %u",
                         options->struct_size);
    if (options && options->private_scope)
        return ses__fail(SES_UNIMPLEMENTED,
                         "ses_plan_run: a plan runs in its session's scope; private_scope is for "
                         "ses_session_eval_ex");
    if ((st = ses__session_enter(plan->session, "ses_plan_run")) != SES_OK)
        return st;
    st = run_plan(plan, feed_values, plan->session->scope, out_values, 0,
                  wants_device_fetches(options));
    ses__session_leave(plan->session);
    return st;
}

void ses_plan_destroy(ses_plan_t *plan) {
    ses_session_t *s;
    int found = 0;

    if (!plan)
        return;
    s = plan->session;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->n_plans; i++)
        if (s->plans[i] == plan) {
            s->plans[i] = s->plans[--s->n_plans];
            found = 1;
            break;
        }
    /* Its device state goes under the lock, as close frees it: a close beside this would
     * otherwise close the devices while this still frees buffers and streams on them. */
    if (found) {
        ses__compiled_free(s, plan->compiled);
        plan->compiled = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    if (found)
        plan_free(plan);
}

size_t ses_plan_step_count(const ses_plan_t *plan) {
    return plan && plan->compiled ? plan->compiled->n_steps : 0;
}

const char *ses_plan_placement(const ses_plan_t *plan) {
    return plan && plan->compiled ? plan->compiled->placement : "";
}

const char *ses_plan_node_device(const ses_plan_t *plan, const ses_node_t *node) {
    if (!plan || !plan->compiled || !node)
        return NULL;
    for (size_t i = 0; i < plan->compiled->n_placed; i++)
        if (plan->compiled->placed_nodes[i] == node)
            return ses_device_name(plan->session->devices[plan->compiled->placed_devices[i]].device);
    return NULL;
}

int ses_session_is_open(ses_session_t *s) {
    int open;

    if (!s)
        return 0;
    pthread_mutex_lock(&s->lock);
    open = !s->closed && !s->lost[0];
    pthread_mutex_unlock(&s->lock);
    return open;
}

ses_scope_t *ses_session_scope(ses_session_t *s) {
    return s ? s->scope : NULL;
}

static ses_status_t check_stats(const char *what, const void *object,
                                const ses_transfer_stats_t *out) {
    if (!object || !out)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: NULL %s", what, object ? "out_stats" : "argument");
    if (out->struct_size < sizeof *out)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: out_stats->struct_size is %u; set it to sizeof(ses_transfer_stats_t) "
                         "(%zu)",
                         what, out->struct_size, sizeof *out);
    return SES_OK;
}

ses_status_t ses_plan_transfers(ses_plan_t *plan, ses_transfer_stats_t *out_stats) {
    ses_status_t st = check_stats("ses_plan_transfers", plan, out_stats);

    if (st != SES_OK)
        return st;
    pthread_mutex_lock(&plan->lock);
    *out_stats = plan->transfers;
    pthread_mutex_unlock(&plan->lock);
    out_stats->struct_size = sizeof *out_stats;
    return SES_OK;
}

ses_status_t ses_session_transfers(ses_session_t *s, ses_transfer_stats_t *out_stats) {
    ses_status_t st = check_stats("ses_session_transfers", s, out_stats);
    uint64_t *fields;

    if (st != SES_OK)
        return st;
    memset(out_stats, 0, sizeof *out_stats);
    out_stats->struct_size = sizeof *out_stats;
    /* runs, then bytes and copies of h2d, d2h, d2d: the struct's order after struct_size. */
    fields = &out_stats->runs;
    for (size_t i = 0; i < 7; i++)
        fields[i] = atomic_load(&s->transfers[i]);
    return SES_OK;
}

uint64_t ses_session_kernel_calls(const ses_session_t *s) {
    return s ? atomic_load(&((ses_session_t *)s)->kernel_calls) : 0;
}

uint64_t ses_session_graph_captures(const ses_session_t *s) {
    return s ? atomic_load(&((ses_session_t *)s)->graph_captures) : 0;
}

uint64_t ses_session_graph_launches(const ses_session_t *s) {
    return s ? atomic_load(&((ses_session_t *)s)->graph_launches) : 0;
}

ses_status_t ses_session_set_communicator(ses_session_t *s, const ses_communicator_t *comm) {
    if (!s)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_set_communicator: session is NULL");
    /* The first version ended at user; allreduce_sum_into came after, optional. */
    const size_t first_size = offsetof(ses_communicator_t, user) + sizeof comm->user;

    if (comm && (comm->struct_size < first_size || !comm->allreduce_sum || !comm->size ||
                 comm->rank >= comm->size))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_session_set_communicator: struct_size, allreduce_sum, rank (< size) "
                         "and size must be set");
    pthread_mutex_lock(&s->lock);
    memset(&s->comm, 0, sizeof s->comm);
    if (comm)
        memcpy(&s->comm, comm,
               comm->struct_size < sizeof s->comm ? comm->struct_size : sizeof s->comm);
    s->comm.struct_size = (uint32_t)sizeof s->comm;
    pthread_mutex_unlock(&s->lock);
    return SES_OK;
}

ses_status_t ses_session_initialize_variables(ses_session_t *s) {
    ses_status_t st;

    if (!s)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_initialize_variables: session is NULL");
    if ((st = ses__session_enter(s, "ses_session_initialize_variables")) != SES_OK)
        return st;
    for (size_t i = 0; i < s->graph->n_nodes && st == SES_OK; i++) {
        ses_node_t *n = s->graph->nodes[i];
        ses_tensor_t *value = NULL;
        ses_edge_t edge = {n, 0};

        if (n->kind != SES__NODE_VARIABLE)
            continue;
        if (ses__scope_find_raw(s->scope, n->name, &value) == SES_OK) {
            ses_tensor_release(value);
            continue;
        }
        /* Fetching the variable initializes it (and any it is initialized from), where it
         * lives: a remote session's workers hold theirs. */
        st = s->remote ? s->remote_hooks->eval(s, &edge, 1, NULL, 0, NULL, 0, &value)
                       : eval_in(s, s->scope, &edge, 1, NULL, 0, NULL, 0, &value, 0);
        ses_tensor_release(value);
    }
    ses__session_leave(s);
    return st;
}

ses_status_t ses_session_copy_variables(ses_session_t *to, ses_session_t *from) {
    ses_status_t st = SES_OK;

    if (!to || !from)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_copy_variables: NULL session");
    if ((st = ses__session_enter(from, "ses_session_copy_variables")) != SES_OK)
        return st;
    if ((st = ses__session_enter(to, "ses_session_copy_variables")) != SES_OK) {
        ses__session_leave(from);
        return st;
    }
    for (size_t i = 0; i < from->graph->n_nodes && st == SES_OK; i++) {
        const ses_node_t *n = from->graph->nodes[i];
        ses_tensor_t *value = NULL, *copy = NULL;

        if (n->kind != SES__NODE_VARIABLE || ses_scope_find(from->scope, n->name, &value) != SES_OK)
            continue;
        st = ses_tensor_create_from(value->dtype, value->rank, value->dims, value->data,
                                    value->bytes, &copy);
        if (st == SES_OK)
            st = ses_scope_set(to->scope, n->name, copy);
        ses_tensor_release(copy);
        ses_tensor_release(value);
    }
    ses__session_leave(to);
    ses__session_leave(from);
    return st;
}

ses_status_t ses_session_close(ses_session_t *s) {
    if (!s)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_session_close: session is NULL");
    pthread_mutex_lock(&s->lock);
    if (s->closed) {
        pthread_mutex_unlock(&s->lock);
        return SES_OK;
    }
    s->closed = 1;
    while (s->in_flight)
        pthread_cond_wait(&s->idle, &s->lock);
    /* Each plan's compiled state (its device memory) goes now, under the lock; the handle
     * stays, so that ses_plan_destroy, before, beside or after this, frees it once and never
     * touches freed memory. ses_session_destroy frees the handles left. */
    for (size_t i = 0; i < s->n_plans; i++) {
        ses__compiled_free(s, s->plans[i]->compiled);
        s->plans[i]->compiled = NULL;
    }
    pthread_mutex_unlock(&s->lock);

    if (s->remote)
        s->remote_hooks->close(s->remote); /* ends the job: workers exit */
    ses__resident_free(s);
    ses__resident_variables_free(s);
    ses__device_home_close(s); /* device tensors' buffers, before their devices close */
    close_devices(s);
    /* The scope object stays, emptied, with any child scope a caller made from it (emptied
     * too), so that no pointer from ses_session_scope dangles before ses_session_destroy. */
    ses__scope_clear_tree(s->scope);
    return SES_OK;
}

void ses_session_destroy(ses_session_t *s) {
    if (!s)
        return;
    ses_session_close(s);
    for (size_t i = 0; i < s->n_plans; i++)
        plan_free(s->plans[i]);
    free(s->plans);
    if (s->remote)
        s->remote_hooks->free(s->remote);
    /* A child scope the caller still holds outlives the session as a root of its own. */
    ses__scope_detach_children(s->scope);
    ses_scope_destroy(s->scope);
    free(s->devices);
    free_driver_options(s);
    ses_graph_release(s->graph);
    ses__device_home_release(s);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->resident_lock);
    pthread_cond_destroy(&s->idle);
    free(s);
}
