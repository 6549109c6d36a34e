/*
 * Running a compiled plan: bind this run's external host tensors (imported on the CPU device,
 * no copy), call every step in order, copy the fetched values into new host tensors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../compile/plan.h"
#include "../error.h"
#include "../log.h"
#include "../scope/scope_internal.h"
#include "../tensor/tensor_internal.h"

/* A driver failure as a libsession error naming the node, device and driver. */
static ses_status_t driver_failed(ses_session_t *s, const ses__step_t *step, int32_t rc,
                                  const char *what) {
    char message[1024];

    ses__host_take_message(message, sizeof message);
    ses__note_device_failure(s, step->device, rc);
    return ses__fail((ses_status_t)rc, "%s \"%s\" on %s (driver %s): %s failed: %s",
                     step->node->op, step->node->name, ses__device_name_of(s, step->device),
                     ses__driver_name_of(s, step->device), what,
                     message[0] ? message : ses_status_name((ses_status_t)rc));
}

/* Binds an external slot to this run's tensor on the CPU device, by import (no copy). */
static ses_status_t bind_external(ses_session_t *s, ses__compiled_t *c, ses__slot_t *slot,
                                  ses_tensor_t *t) {
    const ses__device_ctx_t *dev = &s->devices[slot->device];
    int32_t rc;

    slot->tensor = t;
    slot->imported = 0;
    slot->buffer = NULL;
    if (!dev->can_import)
        return ses__fail(SES_INTERNAL, "%s cannot import host memory", ses__device_name_of(s, slot->device));
    /* A zero-byte import would be refused; an empty value is never read, so any buffer does. */
    if (!slot->bytes) {
        slot->buffer = c->arenas[slot->device];
        return SES_OK;
    }
    rc = dev->api->import_host_ptr(dev->handle, t->data, slot->bytes, &slot->buffer);
    if (rc != SES_DRV_OK) {
        char message[1024];
        ses__host_take_message(message, sizeof message);
        slot->buffer = NULL;
        return ses__fail((ses_status_t)rc, "binding \"%s\": %s", slot->edge.node->name, message);
    }
    slot->imported = 1;
    return SES_OK;
}

static void unbind_externals(ses_session_t *s, ses__compiled_t *c) {
    for (size_t i = 0; i < c->n_slots; i++) {
        ses__slot_t *slot = &c->slots[i];
        if (slot->kind == SES__SLOT_ARENA)
            continue;
        if (slot->imported)
            s->devices[slot->device].api->free(s->devices[slot->device].handle, slot->buffer);
        /* Variables hold a reference; an output not handed out (a failed run) is dropped, and so
         * is this run's string value (a fetch took its own reference). */
        if (slot->kind == SES__SLOT_VARIABLE || slot->kind == SES__SLOT_OUTPUT ||
            slot->kind == SES__SLOT_STRING)
            ses_tensor_release(slot->tensor);
        slot->buffer = NULL;
        slot->tensor = NULL;
        slot->imported = 0;
        slot->handed_out = 0;
        slot->device_feed = NULL;
    }
}

/*
 * The scope's tensor for a variable slot (a new reference, so the scope may change meanwhile
 * without freeing it). A private scope (one with a parent) reads its parent's variables, but a
 * variable the plan updates in place is first copied into the private scope itself: the update
 * stays there and goes with it (Caffe2's private workspace, copy-on-write).
 */
static ses_status_t find_variable(ses_session_t *s, ses__compiled_t *c, const ses__slot_t *slot,
                                  ses_scope_t *scope, ses_tensor_t **out) {
    const char *name = slot->edge.node->name;
    ses_tensor_t *t = NULL, *copy = NULL;
    ses_status_t st;

    *out = NULL;
    if (ses__scope_find_raw(scope, name, &t) != SES_OK)
        return ses__fail(SES_FAILED_PRECONDITION, "variable \"%s\" is not initialized", name);
    if (!slot->written || !ses_scope_parent(scope) || ses_scope_has_local(scope, name)) {
        *out = t;
        return SES_OK;
    }
    /* The private copy starts from the newest bytes, wherever they are. */
    st = ses__resident_materialize(s, c, t);
    if (st == SES_OK)
        st = ses_tensor_create_from(t->dtype, t->rank, t->dims, t->data, t->bytes, &copy);
    ses_tensor_release(t);
    if (st == SES_OK)
        st = ses_scope_set(scope, name, copy);
    if (st != SES_OK) {
        ses_tensor_release(copy);
        return st;
    }
    *out = copy;
    return SES_OK;
}

static ses_status_t bind_externals(ses_plan_t *plan, ses_tensor_t *const *feeds,
                                   ses_scope_t *scope) {
    ses_session_t *s = plan->session;
    ses__compiled_t *c = plan->compiled;
    ses_status_t st = SES_OK;

    for (size_t i = 0; i < c->n_slots && st == SES_OK; i++) {
        ses__slot_t *slot = &c->slots[i];
        ses_tensor_t *t = NULL;

        switch (slot->kind) {
        case SES__SLOT_ARENA:
            continue;
        case SES__SLOT_STRING:
            slot->tensor = NULL; /* its host step makes it */
            continue;
        case SES__SLOT_RESIDENT:
            slot->buffer = slot->resident;
            continue;
        case SES__SLOT_RESIDENT_VARIABLE:
            st = find_variable(s, c, slot, scope, &t);
            if (st == SES_OK)
                st = ses__resident_variable(s, c, t, slot->device, &slot->buffer,
                                            &slot->resident_var);
            ses_tensor_release(t);
            if (st != SES_OK)
                return st;
            /* Another buffer than the graphs were recorded with: record them again. */
            if (slot->bound_before && slot->bound_before != slot->buffer)
                c->recapture = 1;
            slot->bound_before = slot->buffer;
            continue;
        case SES__SLOT_FEED:
            t = feeds[slot->feed_index];
            if (t->home) {
                /* A device tensor of this session on the slot's device (compile checked it):
                 * bound in place, no copy. A 0-byte value is never read, so any buffer does. */
                slot->device_feed = t;
                slot->buffer = t->buffer ? t->buffer : c->arenas[slot->device];
                slot->offset = 0;
                continue;
            }
            break;
        case SES__SLOT_CONSTANT:
            t = slot->folded ? slot->folded : slot->edge.node->value;
            break;
        case SES__SLOT_VARIABLE:
            st = find_variable(s, c, slot, scope, &t);
            /* A step on the host reads it: a device's newer bytes come home first. */
            if (st == SES_OK && slot->host_read)
                st = ses__resident_materialize(s, c, t);
            if (st != SES_OK) {
                ses_tensor_release(t);
                return st;
            }
            break;
        case SES__SLOT_OUTPUT:
            /* The result tensor itself, owned by the slot until it is handed out. */
            st = ses__tensor_create_for_output(slot->type.dtype, slot->type.rank,
                                               slot->type.dims, &t);
            if (st != SES_OK)
                return st;
            break;
        }
        st = bind_external(s, c, slot, t);
    }
    return st;
}

/* Waits for the kernels enqueued on device @p d's stream, if any. */
static ses_status_t wait_device(ses_session_t *s, ses__compiled_t *c, size_t d) {
    const ses__device_ctx_t *dev = &s->devices[d];
    int32_t rc;

    if (!c->pending[d])
        return SES_OK;
    c->pending[d] = 0;
    rc = dev->api->stream_synchronize(dev->handle, c->streams[d]);
    if (rc != SES_DRV_OK) {
        const ses__step_t *last = &c->steps[c->last_enqueued[d]];
        char message[1024];
        ses__host_take_message(message, sizeof message);
        ses__note_device_failure(s, d, rc);
        return ses__fail((ses_status_t)rc,
                         "%s: waiting for the plan's kernels (the last one enqueued: %s \"%s\") "
                         "failed: %s",
                         ses__device_name_of(s, d), last->node->op, last->node->name,
                         message[0] ? message : ses_status_name((ses_status_t)rc));
    }
    return SES_OK;
}

/* Waits for every device; the first failure is reported, every stream is waited for. */
static ses_status_t wait_all(ses_session_t *s, ses__compiled_t *c) {
    ses_status_t first = SES_OK;

    for (size_t d = 0; d < s->n_devices; d++) {
        ses_status_t st = wait_device(s, c, d);
        if (first == SES_OK)
            first = st;
    }
    return first;
}

static void bind_args(ses__compiled_t *c, ses__step_t *step) {
    for (size_t a = 0; a < step->n_args; a++) {
        step->buffers[a] = c->slots[step->args[a]].buffer;
        step->offsets[a] = c->slots[step->args[a]].offset;
    }
}

static ses_status_t run_kernel(ses_session_t *s, ses__compiled_t *c, size_t i) {
    ses__step_t *step = &c->steps[i];
    int32_t rc;

    bind_args(c, step);
    rc = step->kernel->compute(s->devices[step->device].handle, step->state, &step->launch);
    atomic_fetch_add(&s->kernel_calls, 1);
    if (step->launch.stream) {
        c->pending[step->device] = 1;
        c->last_enqueued[step->device] = i;
    }
    return rc == SES_DRV_OK ? SES_OK : driver_failed(s, step, rc, "kernel");
}

/*
 * Records a segment's kernels into a graph. Nothing runs while the stream records, so when a
 * kernel refuses (or the driver cannot capture) the segment is marked and its steps simply run
 * one by one, now and on later runs.
 */
static void capture(ses_session_t *s, ses__compiled_t *c, ses__segment_t *seg) {
    const ses__device_ctx_t *dev = &s->devices[seg->device];
    ses_drv_stream_t *stream = c->streams[seg->device];
    char message[1024];
    size_t i = seg->first;
    int32_t rc;

    rc = dev->api->capture_begin(dev->handle, stream);
    for (; rc == SES_DRV_OK && i < seg->end; i++) {
        ses__step_t *step = &c->steps[i];
        if (step->kind == SES__STEP_NONE)
            continue;
        bind_args(c, step);
        rc = step->kernel->compute(dev->handle, step->state, &step->launch);
        atomic_fetch_add(&s->kernel_calls, 1);
    }
    if (rc != SES_DRV_OK) {
        ses__host_take_message(message, sizeof message);
        if (i > seg->first)
            dev->api->capture_end(dev->handle, stream, NULL);
        ses__host_take_message(NULL, 0);
    } else {
        rc = dev->api->capture_end(dev->handle, stream, &seg->graph);
        ses__host_take_message(message, sizeof message);
        if (rc != SES_DRV_OK)
            seg->graph = NULL;
    }
    if (rc != SES_DRV_OK) {
        const ses__step_t *at = &c->steps[i > seg->first ? i - 1 : seg->first];
        seg->failed = 1;
        ses__session_log(s, SES__LOG_DEBUG,
                         "%s: capturing %zu kernels as a graph stopped at %s \"%s\" (%s); they "
                         "run one by one",
                         ses__device_name_of(s, seg->device), seg->end - seg->first, at->node->op,
                         at->node->name, message[0] ? message : ses_status_name((ses_status_t)rc));
        return;
    }
    atomic_fetch_add(&s->graph_captures, 1);
}

/* Runs a segment: its graph when it has one (capturing it on the first run), else step by step. */
static ses_status_t run_segment(ses_session_t *s, ses__compiled_t *c, ses__segment_t *seg) {
    const ses__device_ctx_t *dev = &s->devices[seg->device];
    int32_t rc;

    if (!seg->graph && !seg->failed)
        capture(s, c, seg);
    if (!seg->graph) {
        for (size_t i = seg->first; i < seg->end; i++) {
            if (c->steps[i].kind == SES__STEP_NONE)
                continue;
            ses_status_t st = run_kernel(s, c, i);
            if (st != SES_OK)
                return st;
        }
        return SES_OK;
    }
    rc = dev->api->graph_launch(dev->handle, seg->graph, c->streams[seg->device]);
    atomic_fetch_add(&s->graph_launches, 1);
    c->pending[seg->device] = 1;
    c->last_enqueued[seg->device] = seg->end - 1;
    if (rc != SES_DRV_OK) {
        char message[1024];
        ses__host_take_message(message, sizeof message);
        ses__note_device_failure(s, seg->device, rc);
        return ses__fail((ses_status_t)rc,
                         "%s: launching the graph of %zu kernels (%s \"%s\" to %s \"%s\") failed: "
                         "%s",
                         ses__device_name_of(s, seg->device), seg->end - seg->first,
                         c->steps[seg->first].node->op, c->steps[seg->first].node->name,
                         c->steps[seg->end - 1].node->op, c->steps[seg->end - 1].node->name,
                         message[0] ? message : ses_status_name((ses_status_t)rc));
    }
    return SES_OK;
}

/* Runs step @p i by itself: a host step, a copy, or a kernel outside a captured graph. */
static ses_status_t run_step(ses_session_t *s, ses__compiled_t *c, size_t i) {
    ses__step_t *step = &c->steps[i];
    ses_status_t st;

    if (step->kind == SES__STEP_HOST) {
        /* The runtime reads and writes values itself: every device must be done. */
        st = wait_all(s, c);
        return st == SES_OK ? ses__host_op_run(s, c, step) : st;
    }
    if (step->kind == SES__STEP_COPY) {
        /* Copies complete on return and may reuse memory a queued kernel still reads. */
        st = wait_all(s, c);
        return st == SES_OK
                   ? ses__copy_slot(s, c, &c->slots[step->args[0]], &c->slots[step->args[1]])
                   : st;
    }
    return run_kernel(s, c, i);
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * Runs step @p i and adds its time to the step (ses_session_options_t.profile). A kernel given a
 * stream is waited for before the clock stops, so that the time is the kernel's, not its launch's.
 */
static ses_status_t run_step_timed(ses_session_t *s, ses__compiled_t *c, size_t i) {
    ses__step_t *step = &c->steps[i];
    uint64_t start = now_ns();
    ses_status_t st = run_step(s, c, i);

    if (st == SES_OK && step->kind == SES__STEP_KERNEL && step->launch.stream)
        st = wait_device(s, c, step->device);
    if (st == SES_OK) {
        step->profile_ns += now_ns() - start;
        step->profile_calls++;
    }
    return st;
}

static ses_status_t run_steps(ses_plan_t *plan) {
    ses_session_t *s = plan->session;
    ses__compiled_t *c = plan->compiled;
    const int profile = s->options.profile != 0;
    ses_status_t st = SES_OK;

    for (size_t i = 0; i < c->n_steps && st == SES_OK; i++) {
        ses__step_t *step = &c->steps[i];

        if (step->kind == SES__STEP_NONE)
            continue; /* its output is already its inputs' bytes */
        if (profile)
            st = run_step_timed(s, c, i); /* step by step: a graph's kernels cannot be timed */
        else if (step->segment && step->segment->first == i) {
            st = run_segment(s, c, step->segment);
            i = step->segment->end - 1;
        } else {
            st = run_step(s, c, i);
        }
    }
    /* Even after a failure nothing of this run may still be in flight when it returns; the
     * first failure is the one reported. */
    if (st != SES_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ses_last_error());
        wait_all(s, c);
        return ses__fail(st, "%s", message);
    }
    return wait_all(s, c);
}

/*
 * After the steps ran: a variable a host step may have updated has new host bytes (device copies
 * are stale), then one updated on its device has newer bytes there (the host's are stale). In
 * that order, so that a device's update is never mistaken for an older host write.
 */
static void note_updates(ses_session_t *s, ses__compiled_t *c) {
    for (size_t i = 0; i < c->n_slots; i++) {
        ses__slot_t *slot = &c->slots[i];
        if (slot->kind == SES__SLOT_VARIABLE && slot->written && slot->host_read && slot->tensor)
            ses__tensor_host_wrote(slot->tensor);
    }
    for (size_t i = 0; i < c->n_slots; i++) {
        ses__slot_t *slot = &c->slots[i];
        if (slot->kind == SES__SLOT_RESIDENT_VARIABLE && slot->written && slot->resident_var)
            ses__resident_variable_updated(s, slot->resident_var);
    }
}

/*
 * A fetched value on device @p slot->device as a new device tensor: a buffer of its own on that
 * device, filled by one device-to-device copy (the slot's memory is the plan's, reused by the
 * next run).
 */
static ses_status_t fetch_on_device(ses_session_t *s, ses__compiled_t *c, const ses__slot_t *slot,
                                    ses_tensor_t **out) {
    const ses__device_ctx_t *dev = &s->devices[slot->device];
    ses_drv_buffer_t *buffer = NULL;
    int32_t rc;

    *out = NULL;
    if (slot->device_feed) {
        /* A fed device tensor fetched: the value itself, no copy. */
        *out = ses_tensor_retain(slot->device_feed);
        return SES_OK;
    }
    if (slot->bytes) {
        rc = dev->api->alloc(dev->handle, slot->bytes, SES_DRV_MEM_DEVICE, &buffer);
        if (rc == SES_DRV_OK && !buffer)
            return ses__fail(SES_OUT_OF_MEMORY, "fetching \"%s\" on %s: alloc returned OK but "
                             "no buffer", slot->edge.node->name, ses__device_name_of(s, slot->device));
        if (rc != SES_DRV_OK) {
            char message[1024];
            ses__host_take_message(message, sizeof message);
            ses__note_device_failure(s, slot->device, rc);
            return ses__fail((ses_status_t)rc, "fetching \"%s\" on %s (driver %s): cannot "
                             "allocate %zu bytes: %s", slot->edge.node->name,
                             ses__device_name_of(s, slot->device), ses__driver_name_of(s, slot->device),
                             slot->bytes, message);
        }
        rc = dev->api->copy_d2d(dev->handle, NULL, slot->buffer, slot->offset, buffer, 0,
                                slot->bytes);
        if (rc != SES_DRV_OK) {
            ses_status_t st = ses__copy_failed(s, slot->device, rc, "within");
            dev->api->free(dev->handle, buffer);
            return st;
        }
        ses__count_transfer(s, c, slot->device, slot->device, slot->bytes);
    }
    return ses__device_tensor_wrap(s, slot->device, slot->type.dtype, slot->type.rank,
                                   slot->type.dims, buffer, out);
}

static ses_status_t fetch_values(ses_plan_t *plan, int device_fetches, ses_tensor_t **out_values) {
    ses_session_t *s = plan->session;
    ses__compiled_t *c = plan->compiled;

    for (size_t i = 0; i < plan->n_fetches; i++) {
        ses__slot_t *slot = &c->slots[c->fetch_slots[i]];
        ses_status_t st;

        /* On a device other than the host, and not in host memory (a tensor bound to it). */
        if (device_fetches && slot->device != s->n_devices - 1 && !slot->tensor) {
            st = fetch_on_device(s, c, slot, &out_values[i]);
            if (st != SES_OK)
                goto fail;
            continue;
        }
        if (slot->type.dtype == SES_STRING) {
            /* A string is the tensor itself: this run's computed one is handed over; a fed,
             * constant or variable one is copied, so that the caller cannot change those. */
            if (slot->kind == SES__SLOT_STRING && slot->tensor && !slot->handed_out) {
                out_values[i] = ses_tensor_retain(slot->tensor);
                slot->handed_out = 1;
                continue;
            }
            st = slot->tensor ? ses_tensor_copy_to_host(slot->tensor, &out_values[i])
                              : ses__fail(SES_INTERNAL, "fetching \"%s\": no string value",
                                          slot->edge.node->name);
            if (st != SES_OK)
                goto fail;
            continue;
        }
        if (slot->kind == SES__SLOT_OUTPUT && slot->tensor && !slot->handed_out) {
            /* The kernel wrote into this tensor: hand it over (a reference stays with the slot
             * until unbind, which drops it). */
            out_values[i] = ses_tensor_retain(slot->tensor);
            slot->handed_out = 1;
            continue;
        }
        /* A variable its device updated: its bytes come home now. */
        st = slot->kind == SES__SLOT_VARIABLE ? ses__resident_materialize(s, c, slot->tensor)
                                              : SES_OK;
        if (st == SES_OK)
            st = ses__tensor_create_for_output(slot->type.dtype, slot->type.rank,
                                               slot->type.dims, &out_values[i]);
        if (st == SES_OK)
            st = ses__read_slot(s, c, slot, out_values[i]->data);
        if (st != SES_OK)
            goto fail;
        continue;
    fail:
        for (size_t j = 0; j <= i; j++) {
            ses_tensor_release(out_values[j]);
            out_values[j] = NULL;
        }
        return st;
    }
    return SES_OK;
}

ses_status_t ses__run(ses_plan_t *plan, ses_tensor_t *const *feeds, ses_scope_t *scope,
                      int device_fetches, ses_tensor_t **out_values) {
    ses_status_t st;

    plan->compiled->transfers = &plan->transfers;
    plan->transfers.runs++;
    atomic_fetch_add(&plan->session->transfers[0], 1);
    st = bind_externals(plan, feeds, scope);
    if (st == SES_OK && plan->compiled->recapture)
        ses__plan_forget_graphs(plan->session, plan->compiled);
    if (st == SES_OK)
        st = run_steps(plan);
    if (st == SES_OK)
        note_updates(plan->session, plan->compiled);
    if (st == SES_OK)
        st = fetch_values(plan, device_fetches, out_values);
    unbind_externals(plan->session, plan->compiled);
    if (st != SES_OK) {
        char lost[256], message[2048];
        if (ses__session_lost(plan->session, lost, sizeof lost)) {
            snprintf(message, sizeof message, "%s", ses_last_error());
            st = ses__fail(SES_UNAVAILABLE, "%s; %s: the session is closed", message, lost);
        }
    }
    return st;
}
