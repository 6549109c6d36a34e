/*
 * State that lives on its device: a constant read by a node on a device other than the host is
 * uploaded there once, when the first plan needing it compiles, and every plan of the session
 * binds that copy. Runs then move only their feeds in and their fetches out. The copies go when
 * the session closes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../tensor/tensor_internal.h"
#include "plan.h"

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
