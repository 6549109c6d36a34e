/*
 * State that lives on its device: a constant read by a node on a device other than the host is
 * uploaded there once, when the first plan needing it compiles, and every plan of the session
 * binds that copy. Runs then move only their feeds in and their fetches out. The copies go when
 * the session closes.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../tensor/tensor_internal.h"
#include "../compile/plan.h"

struct ses__resident {
    ses_tensor_t *value; /* retained: its address is the key, and it cannot be reused meanwhile */
    size_t device;
    ses_drv_buffer_t *buffer;
};

/* Allocates a buffer on device @p d and writes @p value's bytes into it. */
static ses_status_t upload(ses_session_t *s, const ses_tensor_t *value, size_t d,
                           ses_drv_buffer_t **out_buffer) {
    const ses__device_ctx_t *dev = &s->devices[d];
    char message[1024];
    void *p = NULL;
    int32_t rc;

    *out_buffer = NULL;
    rc = dev->api->alloc(dev->handle, value->bytes, SES_DRV_MEM_DEVICE, out_buffer);
    if (rc == SES_DRV_OK && !*out_buffer)
        rc = SES_DRV_OUT_OF_MEMORY;
    if (rc == SES_DRV_OK) {
        if (dev->host_visible &&
            dev->api->map(dev->handle, *out_buffer, 0, value->bytes, SES_DRV_MAP_WRITE, &p) ==
                SES_DRV_OK) {
            memcpy(p, value->data, value->bytes);
            if (dev->api->unmap)
                dev->api->unmap(dev->handle, *out_buffer, p);
        } else {
            ses__host_take_message(NULL, 0); /* a refused map falls back to a copy */
            rc = dev->api->copy_h2d(dev->handle, NULL, value->data, *out_buffer, 0,
                                    value->bytes);
        }
    }
    if (rc == SES_DRV_OK)
        return SES_OK;
    ses__host_take_message(message, sizeof message);
    if (*out_buffer)
        dev->api->free(dev->handle, *out_buffer);
    *out_buffer = NULL;
    return ses__fail(rc == SES_DRV_OUT_OF_MEMORY ? SES_OUT_OF_MEMORY : (ses_status_t)rc,
                     "compile: %s (driver %s) cannot hold a constant of %zu bytes: %s",
                     ses_device_name(dev->device), ses_driver_name(ses_device_driver(dev->device)),
                     value->bytes, message[0] ? message : ses_status_name((ses_status_t)rc));
}

ses_status_t ses__resident_constant(ses_session_t *s, ses_tensor_t *value, size_t device,
                                    ses_drv_buffer_t **out_buffer) {
    struct ses__resident *grown;
    ses_status_t st = SES_OK;

    *out_buffer = NULL;
    pthread_mutex_lock(&s->resident_lock);
    for (size_t i = 0; i < s->n_resident; i++)
        if (s->resident[i].value == value && s->resident[i].device == device) {
            *out_buffer = s->resident[i].buffer;
            pthread_mutex_unlock(&s->resident_lock);
            return SES_OK;
        }
    grown = ses__realloc(s->resident, (s->n_resident + 1) * sizeof *grown);
    if (!grown)
        st = ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory for a resident constant");
    else
        s->resident = grown;
    if (st == SES_OK)
        st = upload(s, value, device, out_buffer);
    if (st == SES_OK) {
        s->resident[s->n_resident].value = ses_tensor_retain(value);
        s->resident[s->n_resident].device = device;
        s->resident[s->n_resident].buffer = *out_buffer;
        s->n_resident++;
        ses__count_transfer(s, NULL, s->n_devices - 1, device, value->bytes);
    }
    pthread_mutex_unlock(&s->resident_lock);
    return st;
}

void ses__resident_free(ses_session_t *s) {
    pthread_mutex_lock(&s->resident_lock);
    for (size_t i = 0; i < s->n_resident; i++) {
        const ses__device_ctx_t *dev = &s->devices[s->resident[i].device];
        dev->api->free(dev->handle, s->resident[i].buffer);
        ses_tensor_release(s->resident[i].value);
    }
    free(s->resident);
    s->resident = NULL;
    s->n_resident = 0;
    pthread_mutex_unlock(&s->resident_lock);
}

/* ---- variables ----------------------------------------------------------------------------
 *
 * A variable read or updated on a device other than the host lives there: one copy per (host
 * tensor, device), uploaded when the host's bytes are newer than the copy (its version moved:
 * ses_scope_set, Restore, an update on the host), else bound as it is. An update on the device
 * leaves the host copy stale and marks the tensor device_newer; whoever reads it on the host
 * (ses_scope_find, ses_tensor_data, a fetch, a host step, save, copy_variables) brings the bytes
 * back first (ses__tensor_materialize). A tensor the scope no longer holds (replaced, or its
 * private scope gone) is dropped with its copies at the next upload.
 */
struct ses__resident_var {
    ses_session_t *session;
    ses_tensor_t *host; /* retained: the key, and where materializing writes */
    size_t device;
    ses_drv_buffer_t *buffer;
    uint64_t version_seen; /* host->version when the two copies were last equal */
    int newest;            /* a run updated this copy since: the host's bytes are stale */
};

/* The copy of @p t that holds its newest bytes, or NULL. Caller holds resident_lock. */
static struct ses__resident_var *newest_locked(ses_session_t *s, const ses_tensor_t *t) {
    for (size_t i = 0; i < s->n_resident_vars; i++)
        if (s->resident_vars[i]->host == t && s->resident_vars[i]->newest)
            return s->resident_vars[i];
    return NULL;
}

/* Copies entry @p e's device bytes to its host tensor, when they are the newest. Caller holds
 * resident_lock. */
static ses_status_t download_locked(struct ses__resident_var *e, ses__compiled_t *c) {
    ses_session_t *s;
    const ses__device_ctx_t *dev;
    ses_tensor_t *t;
    char message[1024];
    int32_t rc;

    if (!e || !e->newest)
        return SES_OK;
    s = e->session;
    dev = &s->devices[e->device];
    t = e->host;
    rc = t->bytes ? dev->api->copy_d2h(dev->handle, NULL, e->buffer, 0, t->data, t->bytes)
                  : SES_DRV_OK;
    if (rc != SES_DRV_OK) {
        ses__host_take_message(message, sizeof message);
        return ses__fail((ses_status_t)rc, "reading a variable back from %s (driver %s): %s",
                         ses_device_name(dev->device),
                         ses_driver_name(ses_device_driver(dev->device)), message);
    }
    ses__count_transfer(s, c, e->device, s->n_devices - 1, t->bytes);
    e->newest = 0;
    e->version_seen = atomic_load(&t->version);
    atomic_store(&t->device_newer, 0);
    return SES_OK;
}

/*
 * ses_tensor_t.sync for resident variables (sync_owner is the session): a reader on the host
 * wants the device's bytes. The session outlives the mark: its close brings every newer copy
 * home and clears device_newer before it goes.
 */
static void materialize(void *owner, ses_tensor_t *t) {
    ses_session_t *s = owner;

    pthread_mutex_lock(&s->resident_lock);
    /* A failure leaves the device copy marked newer; the reader sees the host's last bytes. */
    if (download_locked(newest_locked(s, t), NULL) != SES_OK)
        ses__host_take_message(NULL, 0);
    pthread_mutex_unlock(&s->resident_lock);
}

ses_status_t ses__resident_materialize(ses_session_t *s, ses__compiled_t *c, ses_tensor_t *t) {
    ses_status_t st;

    if (!atomic_load_explicit(&t->device_newer, memory_order_acquire))
        return SES_OK;
    if (t->sync_owner != s) {
        ses__tensor_materialize(t); /* another session's copy */
        return SES_OK;
    }
    pthread_mutex_lock(&s->resident_lock);
    st = download_locked(newest_locked(s, t), c);
    pthread_mutex_unlock(&s->resident_lock);
    return st;
}

/* Drops entry @p i (its tensor no longer reachable from any scope, or the session closing
 * after bringing everything home). Caller holds the lock. */
static void drop_var_locked(ses_session_t *s, size_t i) {
    struct ses__resident_var *e = s->resident_vars[i];
    const ses__device_ctx_t *dev = &s->devices[e->device];

    if (e->newest)
        atomic_store(&e->host->device_newer, 0);
    dev->api->free(dev->handle, e->buffer);
    ses_tensor_release(e->host);
    free(e);
    s->resident_vars[i] = s->resident_vars[--s->n_resident_vars];
}

ses_status_t ses__resident_variable(ses_session_t *s, ses__compiled_t *c, ses_tensor_t *t,
                                    size_t device, ses_drv_buffer_t **out_buffer,
                                    struct ses__resident_var **out_entry) {
    struct ses__resident_var *e = NULL, **grown;
    ses_status_t st = SES_OK;

    *out_buffer = NULL;
    *out_entry = NULL;
    pthread_mutex_lock(&s->resident_lock);
    for (size_t i = 0; i < s->n_resident_vars && !e; i++)
        if (s->resident_vars[i]->host == t && s->resident_vars[i]->device == device)
            e = s->resident_vars[i];
    /* Another device's copy may be newer than the host's: bring it home first. */
    if (!(e && e->newest) && atomic_load(&t->device_newer)) {
        if (t->sync_owner == s)
            st = download_locked(newest_locked(s, t), c);
        else
            ses__tensor_materialize(t);
        if (st != SES_OK)
            goto done;
    }
    if (!e) {
        /* Copies of tensors only this table still holds are of no use to anyone. */
        for (size_t i = s->n_resident_vars; i-- > 0;)
            if (atomic_load(&s->resident_vars[i]->host->refs) == 1)
                drop_var_locked(s, i);
        grown = ses__realloc(s->resident_vars, (s->n_resident_vars + 1) * sizeof *grown);
        e = grown ? ses__calloc(1, sizeof *e) : NULL;
        if (grown)
            s->resident_vars = grown;
        if (!e) {
            st = ses__fail(SES_OUT_OF_MEMORY, "out of memory for a resident variable");
            goto done;
        }
        e->session = s;
        e->device = device;
        st = upload(s, t, device, &e->buffer);
        if (st != SES_OK) {
            free(e);
            goto done;
        }
        ses__count_transfer(s, c, s->n_devices - 1, device, t->bytes);
        e->host = ses_tensor_retain(t);
        e->version_seen = atomic_load(&t->version);
        s->resident_vars[s->n_resident_vars++] = e;
    } else if (!e->newest && atomic_load(&t->version) != e->version_seen) {
        /* The host's bytes changed since this copy was made: refresh it. */
        const ses__device_ctx_t *dev = &s->devices[device];
        int32_t rc = t->bytes ? dev->api->copy_h2d(dev->handle, NULL, t->data, e->buffer, 0,
                                                   t->bytes)
                              : SES_DRV_OK;
        if (rc != SES_DRV_OK) {
            char message[1024];
            ses__host_take_message(message, sizeof message);
            st = ses__fail((ses_status_t)rc, "copying variable to %s (driver %s): %s",
                           ses_device_name(dev->device),
                           ses_driver_name(ses_device_driver(dev->device)), message);
            goto done;
        }
        ses__count_transfer(s, c, s->n_devices - 1, device, t->bytes);
        e->version_seen = atomic_load(&t->version);
    }
    *out_buffer = e->buffer;
    *out_entry = e;

done:
    pthread_mutex_unlock(&s->resident_lock);
    return st;
}

void ses__resident_variable_updated(ses_session_t *s, struct ses__resident_var *e) {
    ses_tensor_t *t = e->host;

    pthread_mutex_lock(&s->resident_lock);
    /* One copy holds the newest bytes: this one; the others are stale like the host's. */
    for (size_t i = 0; i < s->n_resident_vars; i++)
        if (s->resident_vars[i]->host == t)
            s->resident_vars[i]->newest = 0;
    e->newest = 1;
    e->version_seen = atomic_load(&t->version);
    t->sync = materialize;
    t->sync_owner = s;
    atomic_store_explicit(&t->device_newer, 1, memory_order_release);
    pthread_mutex_unlock(&s->resident_lock);
}

void ses__resident_variables_free(ses_session_t *s) {
    pthread_mutex_lock(&s->resident_lock);
    /* Lose no data: a device's newer bytes go home before the devices close. */
    for (size_t i = 0; i < s->n_resident_vars; i++)
        if (download_locked(s->resident_vars[i], NULL) != SES_OK)
            ses__host_take_message(NULL, 0);
    while (s->n_resident_vars)
        drop_var_locked(s, s->n_resident_vars - 1);
    free(s->resident_vars);
    s->resident_vars = NULL;
    pthread_mutex_unlock(&s->resident_lock);
}
