/* Tensors: shape checks, owned and wrapped storage, atomic refcounting. Device
 * tensors are made and freed by session/device_tensor.c. */
#include "tensor_internal.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"

/* Owned data is aligned for the widest vector loads kernels are likely to use (AVX-512). */
#define SES_TENSOR_ALIGNMENT 64

/* Long enough for "[" + SES_MAX_RANK dimensions of up to 20 characters, commas and "]". */
#define SES_DIMS_TEXT_CAPACITY (2 + SES_MAX_RANK * 21)

/* Writes "[2,3,4]" into @p buffer; "[]" for a scalar. Only called after rank and dims were
 * checked, so dims is non-NULL whenever rank > 0. */
static const char *format_dims(char *buffer, size_t size, size_t rank, const int64_t *dims) {
    size_t used = 0;

    buffer[used++] = '[';
    for (size_t i = 0; i < rank && used < size; i++) {
        int n = snprintf(buffer + used, size - used, "%s%" PRId64, i ? "," : "", dims[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    if (used + 2 <= size) {
        buffer[used++] = ']';
        buffer[used] = '\0';
    } else {
        buffer[size - 1] = '\0';
    }
    return buffer;
}

ses_status_t ses__tensor_check_shape(const char *what, ses_dtype_t dtype, size_t rank,
                                     const int64_t *dims, size_t *out_count, size_t *out_bytes) {
    char text[SES_DIMS_TEXT_CAPACITY];
    size_t count = 1;
    size_t nonzero_product = 1; /* product of the dimensions that are not 0 */
    size_t elem;

    if (out_count)
        *out_count = 0;
    if (out_bytes)
        *out_bytes = 0;
    if (!what)
        what = "tensor";

    if (!ses__dtype_is_valid(dtype))
        return ses__fail(SES_INVALID_ARGUMENT, "%s: invalid dtype %d", what, (int)dtype);
    if (rank > SES_MAX_RANK)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: rank %zu exceeds SES_MAX_RANK (%d)", what,
                         rank, SES_MAX_RANK);
    if (rank > 0 && !dims)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: dims is NULL but rank is %zu", what, rank);

    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s: dimension %zu of %s is negative (%" PRId64 ")", what, i,
                             format_dims(text, sizeof text, rank, dims), dims[i]);
    }

    /* The product of the non-zero dimensions, times the element size, must fit in a size_t
     * even when another dimension is 0: code that computes byte strides or the size of a slice
     * multiplies exactly these numbers, so an empty tensor like [0, 2^62, 2^62] is refused
     * rather than left to overflow there. */
    elem = ses_dtype_size(dtype);
    for (size_t i = 0; i < rank; i++) {
        uint64_t d = (uint64_t)dims[i];

        if (d == 0) {
            count = 0;
            continue;
        }
        if (d > SIZE_MAX || nonzero_product > SIZE_MAX / (size_t)d)
            goto overflow;
        nonzero_product *= (size_t)d;
    }
    if (nonzero_product > SIZE_MAX / elem)
        goto overflow;
    if (count)
        count = nonzero_product;

    if (out_count)
        *out_count = count;
    if (out_bytes)
        *out_bytes = count * elem;
    return SES_OK;

overflow:
    return ses__fail(SES_INVALID_ARGUMENT, "%s: size of %s%s overflows", what,
                     ses_dtype_name(dtype), format_dims(text, sizeof text, rank, dims));
}

/* Allocates the tensor object (refcount 1) with a checked shape and no data yet. */
static ses_status_t tensor_new(const char *what, ses_dtype_t dtype, size_t rank,
                               const int64_t *dims, ses_tensor_t **out_tensor) {
    ses_status_t st;
    size_t count, bytes;
    ses_tensor_t *t;

    *out_tensor = NULL;
    st = ses__tensor_check_shape(what, dtype, rank, dims, &count, &bytes);
    if (st != SES_OK)
        return st;
    t = ses__calloc(1, sizeof *t);
    if (!t)
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory for the tensor object", what);
    atomic_init(&t->refs, 1);
    atomic_init(&t->version, 0);
    atomic_init(&t->device_newer, 0);
    t->dtype = dtype;
    t->rank = (uint32_t)rank;
    if (rank > 0)
        memcpy(t->dims, dims, rank * sizeof dims[0]);
    t->count = count;
    t->bytes = bytes;
    *out_tensor = t;
    return SES_OK;
}

/* Gives @p t aligned storage of its size, zero-filled when @p zero (one byte for an empty
 * tensor, so that data is never NULL for a tensor the library owns). */
static ses_status_t tensor_alloc_data(const char *what, ses_tensor_t *t, int zero) {
    size_t size = t->bytes ? t->bytes : 1;
    void *data = NULL;
    int rc = ses__memalign(&data, SES_TENSOR_ALIGNMENT, size);

    if (rc != 0 || !data) {
        char text[SES_DIMS_TEXT_CAPACITY];
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory for %zu bytes of %s%s", what,
                         t->bytes, ses_dtype_name(t->dtype),
                         format_dims(text, sizeof text, t->rank, t->dims));
    }
    if (zero)
        memset(data, 0, size);
    t->data = data;
    t->owns = 1;
    return SES_OK;
}

ses_status_t ses__tensor_new_empty(const char *what, ses_dtype_t dtype, size_t rank,
                                   const int64_t *dims, ses_tensor_t **out_tensor) {
    return tensor_new(what, dtype, rank, dims, out_tensor);
}

ses_status_t ses__tensor_require_host(const ses_tensor_t *t, const char *what) {
    if (t && t->home)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: the tensor lives on %s, not in host memory; bring it home first "
                         "(ses_tensor_copy_to_host)",
                         what, t->device_name);
    return SES_OK;
}

ses_status_t ses_tensor_create(ses_dtype_t dtype, size_t rank, const int64_t *dims,
                               ses_tensor_t **out_tensor) {
    ses_status_t st;
    ses_tensor_t *t = NULL;

    if (!out_tensor)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_tensor is NULL", __func__);
    *out_tensor = NULL;

    st = tensor_new(__func__, dtype, rank, dims, &t);
    if (st != SES_OK)
        goto fail;
    st = tensor_alloc_data(__func__, t, 1);
    if (st != SES_OK)
        goto fail;
    if (dtype == SES_STRING)
        ses__string_tensor_fill_empty(t);
    *out_tensor = t;
    return SES_OK;

fail:
    free(t);
    return st;
}

ses_status_t ses__tensor_create_for_output(ses_dtype_t dtype, size_t rank, const int64_t *dims,
                                           ses_tensor_t **out_tensor) {
    ses_status_t st;
    ses_tensor_t *t = NULL;

    *out_tensor = NULL;
    st = tensor_new("ses_session_eval", dtype, rank, dims, &t);
    /* A string tensor's element pointers start NULL, so that a failure part way frees what was
     * set; its writer (exec/host_strings.c) sets every one. */
    if (st == SES_OK)
        st = tensor_alloc_data("ses_session_eval", t, dtype == SES_STRING);
    if (st != SES_OK) {
        free(t);
        return st;
    }
    *out_tensor = t;
    return SES_OK;
}

ses_status_t ses_tensor_create_from(ses_dtype_t dtype, size_t rank, const int64_t *dims,
                                    const void *data, size_t bytes, ses_tensor_t **out_tensor) {
    ses_status_t st;
    ses_tensor_t *t = NULL;

    if (!out_tensor)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_tensor is NULL", __func__);
    *out_tensor = NULL;

    st = tensor_new(__func__, dtype, rank, dims, &t);
    if (st != SES_OK)
        goto fail;
    if (bytes != t->bytes) {
        char text[SES_DIMS_TEXT_CAPACITY];
        st = ses__fail(SES_INVALID_ARGUMENT, "%s: data is %zu bytes but %s%s is %zu bytes",
                       __func__, bytes, ses_dtype_name(dtype),
                       format_dims(text, sizeof text, rank, dims), t->bytes);
        goto fail;
    }
    if (!data && bytes > 0) {
        st = ses__fail(SES_INVALID_ARGUMENT, "%s: data is NULL but bytes is %zu", __func__,
                       bytes);
        goto fail;
    }
    st = tensor_alloc_data(__func__, t, bytes == 0 || dtype == SES_STRING);
    if (st != SES_OK)
        goto fail;
    if (dtype == SES_STRING) {
        st = ses__string_tensor_copy_in(__func__, t, data);
        if (st != SES_OK)
            goto fail;
    } else if (bytes > 0) {
        memcpy(t->data, data, bytes);
    }
    *out_tensor = t;
    return SES_OK;

fail:
    if (t && t->dtype == SES_STRING)
        ses__string_tensor_free_elements(t);
    if (t)
        free(t->data);
    free(t);
    return st;
}

ses_status_t ses_tensor_wrap(ses_dtype_t dtype, size_t rank, const int64_t *dims, void *data,
                             void (*deleter)(void *data, void *user), void *user,
                             ses_tensor_t **out_tensor) {
    ses_status_t st;
    ses_tensor_t *t = NULL;

    if (!out_tensor) {
        st = ses__fail(SES_INVALID_ARGUMENT, "%s: out_tensor is NULL", __func__);
        goto fail;
    }
    *out_tensor = NULL;

    if (dtype == SES_STRING) {
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "%s: a string tensor cannot wrap caller memory (it owns its strings); "
                       "use ses_tensor_create_from, which copies them",
                       __func__);
        goto fail;
    }
    st = tensor_new(__func__, dtype, rank, dims, &t);
    if (st != SES_OK)
        goto fail;
    /* An empty tensor may wrap NULL: there is nothing to read. */
    if (!data && t->bytes > 0) {
        char text[SES_DIMS_TEXT_CAPACITY];
        st = ses__fail(SES_INVALID_ARGUMENT, "%s: data is NULL for %zu bytes of %s%s", __func__,
                       t->bytes, ses_dtype_name(dtype),
                       format_dims(text, sizeof text, rank, dims));
        goto fail;
    }
    t->data = data;
    t->deleter = deleter;
    t->user = user;
    t->owns = 0;
    *out_tensor = t;
    return SES_OK;

fail:
    /* The caller gave the memory away with this call: it is freed now, as documented. */
    free(t);
    if (deleter)
        deleter(data, user);
    return st;
}

ses_tensor_t *ses_tensor_retain(ses_tensor_t *t) {
    if (t) {
        /* Taking a reference needs no ordering: the caller already holds one. */
        size_t old = atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
        assert(old > 0 && "retain of a released tensor");
        (void)old;
    }
    return t;
}

void ses_tensor_release(ses_tensor_t *t) {
    size_t old;

    if (!t)
        return;
    /* Every thread's use of the tensor must happen before the free: each decrement releases,
     * and the last one acquires what the others released. acq_rel on the decrement says this
     * in one step; a release decrement plus an acquire fence would do too, but
     * ThreadSanitizer does not model fences and would report the free as a race. */
    old = atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel);
    assert(old > 0 && "release of a released tensor");
    if (old != 1)
        return;
    if (t->drop_home)
        t->drop_home(t);
    if (t->dtype == SES_STRING && t->owns)
        ses__string_tensor_free_elements(t);
    if (t->owns)
        free(t->data);
    else if (t->deleter)
        t->deleter(t->data, t->user);
    free(t);
}

ses_dtype_t ses_tensor_dtype(const ses_tensor_t *t) {
    return t ? t->dtype : SES_DTYPE_INVALID;
}

size_t ses_tensor_rank(const ses_tensor_t *t) {
    return t ? t->rank : 0;
}

const int64_t *ses_tensor_dims(const ses_tensor_t *t) {
    return t ? t->dims : NULL;
}

size_t ses_tensor_count(const ses_tensor_t *t) {
    return t ? t->count : 0;
}

size_t ses_tensor_bytes(const ses_tensor_t *t) {
    return t ? t->bytes : 0;
}

const char *ses_tensor_device(const ses_tensor_t *t) {
    return !t ? "" : t->home ? t->device_name : "cpu:0";
}

int ses_tensor_is_device(const ses_tensor_t *t) {
    return t && t->home;
}

void ses__tensor_materialize(ses_tensor_t *t) {
    if (t && atomic_load_explicit(&t->device_newer, memory_order_acquire) && t->sync)
        t->sync(t->sync_owner, t);
}

void ses__tensor_host_wrote(ses_tensor_t *t) {
    atomic_store(&t->device_newer, 0);
    atomic_fetch_add(&t->version, 1);
}

void *ses_tensor_data(ses_tensor_t *t) {
    /* A variable's tensor a device updated: its host copy is made now, when it is read. */
    ses__tensor_materialize(t);
    return t ? t->data : NULL;
}
