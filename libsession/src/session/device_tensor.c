/*
 * Device tensors: a tensor whose bytes are a buffer on one of a session's devices.
 *
 * The session's side is a small shared object, the home: refcounted by the session and by each
 * device tensor, so a tensor may outlive its session. The home lists its live device tensors
 * under its lock. Closing the session frees their buffers (before the devices close, DRV-20) and
 * marks the home closed; from then on a device tensor is a shell that can only be released, and
 * every use names the device and says its session closed. A copy or a DLPack export holds the
 * home's lock while it touches the buffer, so a close never frees one in use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compile/plan.h"
#include "../error.h"
#include "../tensor/tensor_internal.h"

struct ses__device_home {
    atomic_size_t refs;
    pthread_mutex_t lock;
    int closed;             /* guarded by lock */
    ses_session_t *session; /* NULL once closed */
    ses_tensor_t *tensors;  /* live device tensors, guarded by lock */
};

static void home_release(ses__device_home_t *h) {
    if (!h || atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) != 1)
        return;
    pthread_mutex_destroy(&h->lock);
    free(h);
}

ses_status_t ses__device_home_open(ses_session_t *s) {
    ses__device_home_t *h = ses__calloc(1, sizeof *h);

    if (!h)
        return ses__fail(SES_OUT_OF_MEMORY, "ses_session_open: out of memory");
    atomic_init(&h->refs, 1);
    pthread_mutex_init(&h->lock, NULL);
    h->session = s;
    s->home = h;
    return SES_OK;
}

void ses__device_home_close(ses_session_t *s) {
    ses__device_home_t *h = s->home;

    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    for (ses_tensor_t *t = h->tensors; t; t = t->home_next) {
        const ses__device_ctx_t *dev = &s->devices[t->home_device];
        if (t->buffer)
            dev->api->free(dev->handle, t->buffer);
        t->buffer = NULL;
    }
    h->closed = 1;
    h->session = NULL;
    pthread_mutex_unlock(&h->lock);
}

void ses__device_home_release(ses_session_t *s) {
    home_release(s->home);
    s->home = NULL;
}

/* Frees a device tensor's buffer (unless its session closed) and drops its home. At release. */
static void drop_home(ses_tensor_t *t) {
    ses__device_home_t *h = t->home;

    pthread_mutex_lock(&h->lock);
    if (!h->closed) {
        const ses__device_ctx_t *dev = &h->session->devices[t->home_device];
        if (t->buffer)
            dev->api->free(dev->handle, t->buffer);
    }
    t->buffer = NULL;
    if (t->home_prev)
        t->home_prev->home_next = t->home_next;
    else if (h->tensors == t)
        h->tensors = t->home_next;
    if (t->home_next)
        t->home_next->home_prev = t->home_prev;
    pthread_mutex_unlock(&h->lock);
    t->home = NULL;
    home_release(h);
}

ses_status_t ses__device_tensor_wrap(ses_session_t *s, size_t device, ses_dtype_t dtype,
                                     size_t rank, const int64_t *dims, ses_drv_buffer_t *buffer,
                                     ses_tensor_t **out) {
    ses__device_home_t *h = s->home;
    const ses__device_ctx_t *dev = &s->devices[device];
    ses_tensor_t *t = NULL;
    ses_status_t st;

    *out = NULL;
    st = ses__tensor_new_empty("device tensor", dtype, rank, dims, &t);
    if (st != SES_OK) {
        if (buffer)
            dev->api->free(dev->handle, buffer);
        return st;
    }
    snprintf(t->device_name, sizeof t->device_name, "%s", ses_device_name(dev->device));
    t->home_device = device;
    t->buffer = buffer;
    atomic_fetch_add(&h->refs, 1);
    t->home = h;
    t->drop_home = drop_home;
    pthread_mutex_lock(&h->lock);
    t->home_next = h->tensors;
    if (h->tensors)
        h->tensors->home_prev = t;
    h->tensors = t;
    pthread_mutex_unlock(&h->lock);
    *out = t;
    return SES_OK;
}

ses_status_t ses__device_tensor_locate(ses_session_t *s, const ses_tensor_t *t, const char *what,
                                       size_t *out_device) {
    ses__device_home_t *h = t->home;
    int closed;

    pthread_mutex_lock(&h->lock);
    closed = h->closed;
    pthread_mutex_unlock(&h->lock);
    if (closed)
        return ses__fail(SES_FAILED_PRECONDITION,
                         "%s: the device tensor on %s belongs to a session that was closed; its "
                         "memory was freed then",
                         what, t->device_name);
    if (h != s->home)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: the device tensor on %s belongs to another session; a session reads "
                         "only its own device tensors (copy it to the host first: "
                         "ses_tensor_copy_to_host)",
                         what, t->device_name);
    *out_device = t->home_device;
    return SES_OK;
}

ses_status_t ses__device_tensor_lock(ses_tensor_t *t, const char *what, ses_session_t **out_s) {
    ses__device_home_t *h = t->home;

    pthread_mutex_lock(&h->lock);
    if (h->closed) {
        pthread_mutex_unlock(&h->lock);
        *out_s = NULL;
        return ses__fail(SES_FAILED_PRECONDITION,
                         "%s: the device tensor on %s belongs to a session that was closed; its "
                         "memory was freed then",
                         what, t->device_name);
    }
    *out_s = h->session;
    return SES_OK;
}

void ses__device_tensor_unlock(ses_tensor_t *t) {
    pthread_mutex_unlock(&t->home->lock);
}

ses_status_t ses_tensor_copy_to_host(ses_tensor_t *t, ses_tensor_t **out_tensor) {
    ses_tensor_t *copy = NULL;
    ses_session_t *s;
    ses_status_t st;
    int32_t rc;

    if (!out_tensor)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_tensor is NULL", __func__);
    *out_tensor = NULL;
    if (!t)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: tensor is NULL", __func__);
    if (!t->home) {
        ses__tensor_materialize(t);
        return ses_tensor_create_from(t->dtype, t->rank, t->dims, t->data, t->bytes, out_tensor);
    }
    st = ses__tensor_create_for_output(t->dtype, t->rank, t->dims, &copy);
    if (st != SES_OK)
        return st;
    if ((st = ses__device_tensor_lock(t, __func__, &s)) != SES_OK) {
        ses_tensor_release(copy);
        return st;
    }
    if (t->bytes) {
        const ses__device_ctx_t *dev = &s->devices[t->home_device];
        rc = dev->api->copy_d2h(dev->handle, NULL, t->buffer, 0, copy->data, t->bytes);
        if (rc != SES_DRV_OK) {
            char message[1024];
            ses__host_take_message(message, sizeof message);
            st = ses__fail((ses_status_t)rc, "%s: copy from %s (driver %s): %s", __func__,
                           t->device_name, ses_driver_name(ses_device_driver(dev->device)),
                           message);
        } else {
            ses__count_transfer(s, NULL, t->home_device, s->n_devices - 1, t->bytes);
        }
    }
    ses__device_tensor_unlock(t);
    if (st != SES_OK) {
        ses_tensor_release(copy);
        return st;
    }
    *out_tensor = copy;
    return SES_OK;
}
