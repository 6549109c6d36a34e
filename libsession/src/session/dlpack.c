/*
 * DLPack exchange: host tensors as kDLCPU, device tensors of CUDA devices as kDLCUDA through
 * the driver's native pointers (ABI 1.2, DRV-83 and DRV-84). No copy either way.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compile/plan.h"
#include "../error.h"
#include "../tensor/tensor_internal.h"
#include "dlpack_abi.h"

/* What ses_tensor_to_dlpack hands out: the DLManagedTensor, its shape and the reference. */
typedef struct export_ctx {
    DLManagedTensor managed;
    int64_t shape[SES_MAX_RANK];
    ses_tensor_t *tensor;
} export_ctx_t;

static void export_deleter(DLManagedTensor *m) {
    export_ctx_t *x;

    if (!m)
        return;
    x = m->manager_ctx;
    ses_tensor_release(x->tensor);
    free(x);
}

/* A DLPack tensor taken in: its owner's deleter runs when the tensor goes. */
static void import_deleter(void *data, void *user) {
    DLManagedTensor *m = user;

    (void)data;
    if (m->deleter)
        m->deleter(m);
}

static ses_status_t dtype_to_dl(ses_dtype_t dtype, const char *what, DLDataType *out) {
    static const struct {
        uint8_t code, bits;
    } table[] = {
        [SES_F32] = {kDLFloat, 32}, [SES_F64] = {kDLFloat, 64},  [SES_F16] = {kDLFloat, 16},
        [SES_BF16] = {kDLBfloat, 16}, [SES_I8] = {kDLInt, 8},    [SES_I16] = {kDLInt, 16},
        [SES_I32] = {kDLInt, 32},    [SES_I64] = {kDLInt, 64},   [SES_U8] = {kDLUInt, 8},
        [SES_U16] = {kDLUInt, 16},   [SES_U32] = {kDLUInt, 32},  [SES_U64] = {kDLUInt, 64},
    };

    if (dtype == SES_BOOL)
        return ses__fail(SES_UNIMPLEMENTED, "%s: bool has no DLPack 0.6 type", what);
    if (dtype == SES_STRING)
        return ses__fail(SES_UNIMPLEMENTED, "%s: string tensors have no DLPack type", what);
    if ((int)dtype <= 0 || (size_t)dtype >= sizeof table / sizeof table[0])
        return ses__fail(SES_INVALID_ARGUMENT, "%s: invalid dtype %d", what, (int)dtype);
    out->code = table[dtype].code;
    out->bits = table[dtype].bits;
    out->lanes = 1;
    return SES_OK;
}

static ses_status_t dtype_from_dl(DLDataType t, const char *what, ses_dtype_t *out) {
    ses_dtype_t d = SES_DTYPE_INVALID;

    if (t.lanes == 1) {
        switch (t.code) {
        case kDLFloat:
            d = t.bits == 16 ? SES_F16 : t.bits == 32 ? SES_F32 : t.bits == 64 ? SES_F64 : d;
            break;
        case kDLBfloat:
            d = t.bits == 16 ? SES_BF16 : d;
            break;
        case kDLInt:
            d = t.bits == 8    ? SES_I8
                : t.bits == 16 ? SES_I16
                : t.bits == 32 ? SES_I32
                : t.bits == 64 ? SES_I64
                               : d;
            break;
        case kDLUInt:
            d = t.bits == 8    ? SES_U8
                : t.bits == 16 ? SES_U16
                : t.bits == 32 ? SES_U32
                : t.bits == 64 ? SES_U64
                               : d;
            break;
        default:
            break;
        }
    }
    if (d == SES_DTYPE_INVALID)
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: DLPack dtype (code %u, %u bits, %u lanes) has no libsession type; "
                         "libsession takes float 16/32/64, bfloat 16, int and uint 8/16/32/64, "
                         "1 lane",
                         what, t.code, t.bits, t.lanes);
    *out = d;
    return SES_OK;
}

ses_status_t ses_tensor_to_dlpack(ses_tensor_t *t, struct DLManagedTensor **out) {
    const char *what = "ses_tensor_to_dlpack";
    export_ctx_t *x = NULL;
    DLDataType dtype;
    ses_status_t st;

    if (!out)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out is NULL", what);
    *out = NULL;
    if (!t)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: tensor is NULL", what);
    if ((st = dtype_to_dl(t->dtype, what, &dtype)) != SES_OK)
        return st;
    x = ses__calloc(1, sizeof *x);
    if (!x)
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", what);
    memcpy(x->shape, t->dims, t->rank * sizeof t->dims[0]);
    x->managed.dl_tensor.ndim = (int)t->rank;
    x->managed.dl_tensor.dtype = dtype;
    x->managed.dl_tensor.shape = x->shape;
    x->managed.dl_tensor.strides = NULL; /* compact row-major */
    x->managed.dl_tensor.byte_offset = 0;
    if (!t->home) {
        /* A variable's tensor a device updated: the newest bytes come home first. */
        ses__tensor_materialize(t);
        x->managed.dl_tensor.data = t->data;
        x->managed.dl_tensor.device.device_type = kDLCPU;
        x->managed.dl_tensor.device.device_id = 0;
    } else {
        ses_session_t *s;
        const ses__device_ctx_t *dev;
        void *native = NULL;

        if ((st = ses__device_tensor_lock(t, what, &s)) != SES_OK) {
            free(x);
            return st;
        }
        dev = &s->devices[t->home_device];
        if (strcmp(ses_driver_name(ses_device_driver(dev->device)), "cuda") != 0 || !dev->native) {
            st = ses__fail(SES_UNIMPLEMENTED,
                           "%s: the tensor lives on %s, which %s; copy it to the host first "
                           "(ses_tensor_copy_to_host)",
                           what, t->device_name,
                           !dev->native ? "does not hand out device addresses (its driver "
                                          "lacks ABI 1.2's buffer_native)"
                                        : "has no DLPack device type in libsession (only CUDA)");
        } else if (t->buffer) {
            int32_t rc = dev->api->buffer_native(dev->handle, t->buffer, &native);
            if (rc != SES_DRV_OK) {
                char message[1024];
                ses__host_take_message(message, sizeof message);
                st = ses__fail((ses_status_t)rc, "%s: %s: buffer_native failed: %s", what,
                               t->device_name, message);
            }
        }
        if (st == SES_OK) {
            x->managed.dl_tensor.data = native;
            x->managed.dl_tensor.device.device_type = kDLCUDA;
            x->managed.dl_tensor.device.device_id = (int)ses_device_ordinal(dev->device);
        }
        ses__device_tensor_unlock(t);
        if (st != SES_OK) {
            free(x);
            return st;
        }
    }
    x->tensor = ses_tensor_retain(t);
    x->managed.manager_ctx = x;
    x->managed.deleter = export_deleter;
    *out = &x->managed;
    return SES_OK;
}

/* Checks what both directions of the import need; the tensor's bytes start at *out_data. */
static ses_status_t check_import(const DLManagedTensor *m, const char *what, ses_dtype_t *out_dtype,
                                 size_t *out_bytes, void **out_data) {
    const DLTensor *d;
    size_t count, bytes, elem;
    ses_status_t st;
    char *data;

    if (!m)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: the DLManagedTensor is NULL", what);
    d = &m->dl_tensor;
    if (d->ndim < 0 || d->ndim > SES_MAX_RANK)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: ndim is %d; libsession takes 0 to %d", what,
                         d->ndim, SES_MAX_RANK);
    if (d->ndim > 0 && !d->shape)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: shape is NULL with ndim %d", what, d->ndim);
    if ((st = dtype_from_dl(d->dtype, what, out_dtype)) != SES_OK)
        return st;
    st = ses__tensor_check_shape(what, *out_dtype, (size_t)d->ndim, d->shape, &count, &bytes);
    if (st != SES_OK)
        return st;
    /* Compact row-major only: each stride (in elements) is the product of the dimensions after
     * it. A dimension of size 1 is never stepped over, so its stride does not matter (PyTorch
     * gives such dimensions any stride), nor does any stride of an empty tensor. */
    if (d->strides && count > 0) {
        int64_t expect = 1;
        for (int i = d->ndim - 1; i >= 0; i--) {
            if (d->shape[i] != 1 && d->strides[i] != expect) {
                char got[SES_MAX_RANK * 22 + 3], want[SES_MAX_RANK * 22 + 3];
                size_t ug = 0, uw = 0;
                int64_t e = 1;
                int64_t wants[SES_MAX_RANK];
                for (int k = d->ndim - 1; k >= 0; k--) {
                    wants[k] = e;
                    e *= d->shape[k];
                }
                got[ug++] = '[';
                want[uw++] = '[';
                for (int k = 0; k < d->ndim; k++) {
                    ug += (size_t)snprintf(got + ug, sizeof got - ug, "%s%" PRId64, k ? "," : "",
                                           d->strides[k]);
                    uw += (size_t)snprintf(want + uw, sizeof want - uw, "%s%" PRId64,
                                           k ? "," : "", wants[k]);
                }
                snprintf(got + ug, sizeof got - ug, "]");
                snprintf(want + uw, sizeof want - uw, "]");
                return ses__fail(SES_INVALID_ARGUMENT,
                                 "%s: strides %s (in elements) are not compact row-major; "
                                 "libsession takes only %s or NULL strides (make the tensor "
                                 "contiguous first)",
                                 what, got, want);
            }
            expect *= d->shape[i];
        }
    }
    if (!d->data && bytes > 0)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: data is NULL for %zu bytes", what, bytes);
    data = d->data ? (char *)d->data + d->byte_offset : NULL;
    elem = ses_dtype_size(*out_dtype);
    if (data && (uintptr_t)data % elem != 0)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: data + byte_offset (%" PRIu64 ") is not aligned to the %zu-byte "
                         "element size of %s",
                         what, d->byte_offset, elem, ses_dtype_name(*out_dtype));
    *out_bytes = bytes;
    *out_data = data;
    return SES_OK;
}

static ses_status_t import_host(DLManagedTensor *m, const char *what, ses_tensor_t **out) {
    ses_dtype_t dtype;
    size_t bytes;
    void *data;
    ses_tensor_t *t = NULL;
    ses_status_t st;

    if ((st = check_import(m, what, &dtype, &bytes, &data)) != SES_OK)
        return st;
    st = ses__tensor_new_empty(what, dtype, (size_t)m->dl_tensor.ndim, m->dl_tensor.shape, &t);
    if (st != SES_OK)
        return st;
    t->data = data;
    t->owns = 0;
    t->deleter = import_deleter;
    t->user = m;
    *out = t;
    return SES_OK;
}

static const char *device_type_name(int type) {
    switch (type) {
    case kDLCPU:
        return "kDLCPU";
    case kDLCUDA:
        return "kDLCUDA";
    case kDLCUDAHost:
        return "kDLCUDAHost";
    case kDLOpenCL:
        return "kDLOpenCL";
    case kDLVulkan:
        return "kDLVulkan";
    case kDLMetal:
        return "kDLMetal";
    case kDLROCM:
        return "kDLROCM";
    default:
        return "an unknown device type";
    }
}

static ses_status_t unsupported_device(const DLManagedTensor *m, const char *what) {
    return ses__fail(SES_INVALID_ARGUMENT,
                     "%s: DLPack device type %d (%s) is not supported; libsession takes kDLCPU, "
                     "and kDLCUDA through ses_session_tensor_from_dlpack",
                     what, (int)m->dl_tensor.device.device_type,
                     device_type_name((int)m->dl_tensor.device.device_type));
}

ses_status_t ses_tensor_from_dlpack(struct DLManagedTensor *m, ses_tensor_t **out) {
    const char *what = "ses_tensor_from_dlpack";

    if (!out)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out is NULL", what);
    *out = NULL;
    if (!m)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: the DLManagedTensor is NULL", what);
    if (m->dl_tensor.device.device_type == kDLCUDA)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: a kDLCUDA tensor (device %d) becomes a device tensor of a session: "
                         "use ses_session_tensor_from_dlpack",
                         what, m->dl_tensor.device.device_id);
    if (m->dl_tensor.device.device_type != kDLCPU)
        return unsupported_device(m, what);
    return import_host(m, what, out);
}

ses_status_t ses_session_tensor_from_dlpack(ses_session_t *s, struct DLManagedTensor *m,
                                            ses_tensor_t **out) {
    const char *what = "ses_session_tensor_from_dlpack";
    ses_drv_buffer_t *buffer = NULL;
    size_t device = SIZE_MAX, bytes;
    ses_dtype_t dtype;
    ses_tensor_t *t = NULL;
    ses_status_t st;
    void *data;

    if (!out)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out is NULL", what);
    *out = NULL;
    if (!s || !m)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: %s is NULL", what,
                         !s ? "session" : "the DLManagedTensor");
    if (m->dl_tensor.device.device_type == kDLCPU)
        return import_host(m, what, out);
    if (m->dl_tensor.device.device_type != kDLCUDA)
        return unsupported_device(m, what);
    if ((st = check_import(m, what, &dtype, &bytes, &data)) != SES_OK)
        return st;
    if ((st = ses__session_enter(s, what)) != SES_OK)
        return st;
    for (size_t d = 0; d < s->n_devices; d++)
        if (strcmp(ses_driver_name(ses_device_driver(s->devices[d].device)), "cuda") == 0 &&
            ses_device_ordinal(s->devices[d].device) == (uint32_t)m->dl_tensor.device.device_id &&
            m->dl_tensor.device.device_id >= 0)
            device = d;
    if (device == SIZE_MAX) {
        st = ses__fail(SES_NOT_FOUND,
                       "%s: the tensor is on kDLCUDA device %d, but the session has no device "
                       "cuda:%d (open it with that device)",
                       what, m->dl_tensor.device.device_id, m->dl_tensor.device.device_id);
        goto done;
    }
    if (!s->devices[device].native) {
        st = ses__fail(SES_UNIMPLEMENTED,
                       "%s: %s cannot take device addresses in (its driver lacks ABI 1.2's "
                       "import_native)",
                       what, ses_device_name(s->devices[device].device));
        goto done;
    }
    if (bytes) {
        const ses__device_ctx_t *dev = &s->devices[device];
        int32_t rc = dev->api->import_native(dev->handle, data, bytes, &buffer);
        if (rc == SES_DRV_OK && !buffer)
            rc = SES_DRV_INTERNAL;
        if (rc != SES_DRV_OK) {
            char message[1024];
            ses__host_take_message(message, sizeof message);
            st = ses__fail((ses_status_t)rc, "%s: %s: import_native of %zu bytes failed: %s",
                           what, ses_device_name(dev->device), bytes,
                           message[0] ? message : ses_status_name((ses_status_t)rc));
            goto done;
        }
    }
    st = ses__device_tensor_wrap(s, device, dtype, (size_t)m->dl_tensor.ndim, m->dl_tensor.shape,
                                 buffer, &t);
    if (st == SES_OK) {
        t->deleter = import_deleter;
        t->user = m;
        *out = t;
    }

done:
    ses__session_leave(s);
    return st;
}
