/*
 * What crosses between the host and devices: a slot's bytes read to or written from host
 * memory, or copied to another slot on any device (mapped where the device maps memory), with
 * errors naming the device and driver; and every such copy, and the uploads and read-backs of
 * resident state, counted for the plan (ses_plan_transfers) and its session
 * (ses_session_transfers).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../compile/plan.h"
#include "../error.h"
#include "../tensor/tensor_internal.h"

void ses__count_transfer(ses_session_t *s, ses__compiled_t *c, size_t from, size_t to,
                         uint64_t bytes) {
    const size_t host = s->n_devices - 1;
    size_t kind; /* 0 h2d, 1 d2h, 2 d2d */
    uint64_t *counters;

    if (from == host && to == host)
        return;
    kind = from == host ? 0 : to == host ? 1 : 2;
    atomic_fetch_add(&s->transfers[1 + 2 * kind], bytes);
    atomic_fetch_add(&s->transfers[2 + 2 * kind], 1);
    if (!c || !c->transfers)
        return;
    counters = kind == 0 ? &c->transfers->h2d_bytes
               : kind == 1 ? &c->transfers->d2h_bytes
                           : &c->transfers->d2d_bytes;
    counters[0] += bytes;
    counters[1]++;
}

const char *ses__device_name_of(const ses_session_t *s, size_t d) {
    return ses_device_name(s->devices[d].device);
}

const char *ses__driver_name_of(const ses_session_t *s, size_t d) {
    return ses_driver_name(ses_device_driver(s->devices[d].device));
}

/* DRV-81: a device that answers SES_DRV_UNAVAILABLE to work it was given is lost; the session
 * refuses later evals (ses__run adds that to this eval's error). */
void ses__note_device_failure(ses_session_t *s, size_t d, int32_t rc) {
    if (rc == SES_DRV_UNAVAILABLE)
        ses__session_device_lost(s, d);
}

void *ses__map_slot(ses_session_t *s, const ses__slot_t *slot, uint32_t flags) {
    const ses__device_ctx_t *dev = &s->devices[slot->device];
    void *p = NULL;

    if (slot->tensor)
        return slot->tensor->data;
    if (!dev->host_visible || !dev->api->map || !slot->bytes)
        return NULL;
    if (dev->api->map(dev->handle, slot->buffer, slot->offset, slot->bytes, flags, &p) !=
        SES_DRV_OK) {
        ses__host_take_message(NULL, 0);
        return NULL;
    }
    return p;
}

void ses__unmap_slot(ses_session_t *s, const ses__slot_t *slot, void *p) {
    const ses__device_ctx_t *dev = &s->devices[slot->device];

    if (p && !slot->tensor && dev->api->unmap)
        dev->api->unmap(dev->handle, slot->buffer, p);
}

/* Device to host: into @p host from a slot. */
/* A copy to, from or within device @p device failed: the driver's message, naming both. */
ses_status_t ses__copy_failed(ses_session_t *s, size_t device, int32_t rc, const char *how) {
    char message[1024];

    ses__host_take_message(message, sizeof message);
    ses__note_device_failure(s, device, rc);
    return ses__fail((ses_status_t)rc, "copy %s %s (driver %s): %s", how, ses__device_name_of(s, device),
                     ses__driver_name_of(s, device), message);
}

/* Where a slot's bytes are: the host for an external host tensor, else its device. */
static size_t held_on(const ses_session_t *s, const ses__slot_t *slot) {
    return slot->tensor ? s->n_devices - 1 : slot->device;
}

/* A slot's bytes into host memory, uncounted (the caller counts the transfer it is part of). */
static ses_status_t read_bytes(ses_session_t *s, const ses__slot_t *slot, void *host) {
    const ses__device_ctx_t *dev = &s->devices[slot->device];
    void *p;
    int32_t rc;

    p = ses__map_slot(s, slot, SES_DRV_MAP_READ);
    if (p) {
        memcpy(host, p, slot->bytes);
        ses__unmap_slot(s, slot, p);
        return SES_OK;
    }
    rc = dev->api->copy_d2h(dev->handle, NULL, slot->buffer, slot->offset, host, slot->bytes);
    return rc == SES_DRV_OK ? SES_OK : ses__copy_failed(s, slot->device, rc, "from");
}

ses_status_t ses__read_slot(ses_session_t *s, ses__compiled_t *c, const ses__slot_t *slot,
                            void *host) {
    if (!slot->bytes)
        return SES_OK;
    ses__count_transfer(s, c, held_on(s, slot), s->n_devices - 1, slot->bytes);
    return read_bytes(s, slot, host);
}

ses_status_t ses__write_slot(ses_session_t *s, ses__compiled_t *c, const ses__slot_t *slot,
                             const void *host) {
    const ses__device_ctx_t *dev = &s->devices[slot->device];
    void *p;
    int32_t rc;

    if (!slot->bytes)
        return SES_OK;
    ses__count_transfer(s, c, s->n_devices - 1, held_on(s, slot), slot->bytes);
    p = ses__map_slot(s, slot, SES_DRV_MAP_WRITE);
    if (p) {
        memcpy(p, host, slot->bytes);
        ses__unmap_slot(s, slot, p);
        return SES_OK;
    }
    rc = dev->api->copy_h2d(dev->handle, NULL, host, slot->buffer, slot->offset, slot->bytes);
    return rc == SES_DRV_OK ? SES_OK : ses__copy_failed(s, slot->device, rc, "to");
}

ses_status_t ses__copy_slot(ses_session_t *s, ses__compiled_t *c, const ses__slot_t *src,
                            const ses__slot_t *dst) {
    const ses__device_ctx_t *to = &s->devices[dst->device];
    void *staging, *p;
    ses_status_t st;
    int32_t rc;

    if (!src->bytes)
        return SES_OK;
    /* One copy, counted once, by where its bytes start and end (not the staging between). */
    ses__count_transfer(s, c, held_on(s, src), held_on(s, dst), src->bytes);
    /* Same device: one device-to-device copy. */
    if (src->device == dst->device && !src->tensor) {
        rc = to->api->copy_d2d(to->handle, NULL, src->buffer, src->offset, dst->buffer,
                               dst->offset, src->bytes);
        return rc == SES_DRV_OK ? SES_OK : ses__copy_failed(s, dst->device, rc, "within");
    }
    /* Otherwise through host memory: the source mapped or read into staging, then written. */
    p = ses__map_slot(s, src, SES_DRV_MAP_READ);
    staging = p;
    if (!p) {
        staging = ses__malloc(src->bytes);
        if (!staging)
            return ses__fail(SES_OUT_OF_MEMORY, "copy: out of memory");
        st = read_bytes(s, src, staging);
        if (st != SES_OK) {
            free(staging);
            return st;
        }
    }
    rc = to->api->copy_h2d(to->handle, NULL, staging, dst->buffer, dst->offset, src->bytes);
    if (p)
        ses__unmap_slot(s, src, p);
    else
        free(staging);
    if (rc != SES_DRV_OK) {
        char message[1024];
        ses__host_take_message(message, sizeof message);
        ses__note_device_failure(s, dst->device, rc);
        return ses__fail((ses_status_t)rc, "copy to %s (driver %s): %s",
                         ses__device_name_of(s, dst->device), ses__driver_name_of(s, dst->device), message);
    }
    return SES_OK;
}
