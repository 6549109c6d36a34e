/*
 * Streams and graphs of a compiled plan.
 *
 * A plan enqueues the kernels of each device that has streams on one stream of its own, and
 * waits for that stream only where the host must see results: before a copy, before an op the
 * runtime runs itself, and at the end of the run (exec/run.c). So a GPU runs a chain of kernels
 * back to back instead of stopping after each one.
 *
 * On a device that records graphs (ABI 1.1, SES_DRV_CAP_GRAPHS), every run of consecutive kernel
 * steps whose arguments all sit in the plan's arena (their addresses are fixed from compile to
 * free) and whose kernels allow capture is a segment: the first run captures it, later runs
 * replay it with one launch. A plan whose nodes all run on one GPU is one segment between the
 * copies of its inputs and of its results. A lone kernel is a segment too: replaying it costs
 * about what launching it does, and so session-driver-test's one-node plans check that every
 * kernel of a driver can be captured.
 */
#include <stdlib.h>

#include "../error.h"
#include "../log.h"
#include "plan.h"


/* Whether @p step may be part of a captured segment. */
static int capturable(const ses__compiled_t *c, const ses__step_t *step) {
    if (step->kind != SES__STEP_KERNEL || (step->kernel->flags & SES_DRV_KERNEL_NO_CAPTURE))
        return 0;
    for (size_t a = 0; a < step->n_args; a++)
        if (c->slots[step->args[a]].kind != SES__SLOT_ARENA &&
            c->slots[step->args[a]].kind != SES__SLOT_RESIDENT &&
            c->slots[step->args[a]].kind != SES__SLOT_RESIDENT_VARIABLE)
            return 0; /* external host tensors change from run to run */
    return 1;
}

static ses_status_t find_segments(ses_session_t *s, ses__compiled_t *c) {
    size_t i = 0;

    c->segments = ses__calloc(c->n_steps + 1, sizeof *c->segments);
    if (!c->segments)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
    while (i < c->n_steps) {
        const ses__step_t *first = &c->steps[i];
        ses__segment_t *seg;
        size_t end = i + 1;

        if (!s->devices[first->device].graphs || !c->streams[first->device] ||
            !capturable(c, first)) {
            i++;
            continue;
        }
        /* Steps with nothing to run (a view, a Concat in place) do not split a segment. */
        for (size_t k = end; k < c->n_steps; k++) {
            if (c->steps[k].kind == SES__STEP_NONE)
                continue;
            if (c->steps[k].device != first->device || !capturable(c, &c->steps[k]))
                break;
            end = k + 1;
        }
        seg = &c->segments[c->n_segments++];
        seg->device = first->device;
        seg->first = i;
        seg->end = end;
        for (size_t k = i; k < end; k++)
            c->steps[k].segment = seg;
        i = end;
    }
    return SES_OK;
}

ses_status_t ses__plan_streams(ses_session_t *s, ses__compiled_t *c) {
    c->streams = ses__calloc(s->n_devices, sizeof *c->streams);
    c->pending = ses__calloc(s->n_devices, sizeof *c->pending);
    c->last_enqueued = ses__calloc(s->n_devices, sizeof *c->last_enqueued);
    if (!c->streams || !c->pending || !c->last_enqueued)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
    for (size_t i = 0; i < c->n_steps; i++) {
        ses__step_t *step = &c->steps[i];
        const ses__device_ctx_t *dev = &s->devices[step->device];

        if (step->kind != SES__STEP_KERNEL || !dev->streams)
            continue;
        if (!c->streams[step->device]) {
            char message[512];
            int32_t rc = dev->api->stream_create(dev->handle, &c->streams[step->device]);
            if (rc != SES_DRV_OK) {
                ses__host_take_message(message, sizeof message);
                c->streams[step->device] = NULL;
                return ses__fail((ses_status_t)rc, "compile: %s cannot create a stream: %s",
                                 ses_device_name(dev->device), message);
            }
        }
        step->launch.stream = c->streams[step->device];
    }
    return find_segments(s, c);
}

void ses__plan_forget_graphs(ses_session_t *s, ses__compiled_t *c) {
    for (size_t i = 0; c->segments && i < c->n_segments; i++) {
        if (c->segments[i].graph)
            s->devices[c->segments[i].device].api->graph_destroy(
                s->devices[c->segments[i].device].handle, c->segments[i].graph);
        c->segments[i].graph = NULL;
    }
    c->recapture = 0;
}

void ses__plan_streams_free(ses_session_t *s, ses__compiled_t *c) {
    for (size_t i = 0; c->segments && i < c->n_segments; i++)
        if (c->segments[i].graph)
            s->devices[c->segments[i].device].api->graph_destroy(
                s->devices[c->segments[i].device].handle, c->segments[i].graph);
    for (size_t d = 0; c->streams && d < s->n_devices; d++)
        if (c->streams[d])
            s->devices[d].api->stream_destroy(s->devices[d].handle, c->streams[d]);
    free(c->segments);
    free(c->streams);
    free(c->pending);
    free(c->last_enqueued);
    c->segments = NULL;
    c->streams = NULL;
    c->pending = NULL;
    c->last_enqueued = NULL;
    c->n_segments = 0;
}
