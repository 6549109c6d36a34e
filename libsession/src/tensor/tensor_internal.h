/* The tensor object behind ses_tensor_t: host memory (data), or a device tensor (home set: a
 * buffer on a session's device, data NULL; session/device_tensor.c). */
#ifndef SES_TENSOR_INTERNAL_H
#define SES_TENSOR_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <session/tensor.h>

struct ses_tensor {
    atomic_size_t refs;
    ses_dtype_t dtype;
    uint32_t rank;
    int64_t dims[SES_MAX_RANK];
    size_t count; /* elements */
    size_t bytes;
    void *data;   /* host memory; 64-byte aligned when the tensor owns it */
    void (*deleter)(void *data, void *user); /* NULL: nothing to free, or owned (see owns) */
    void *user;
    int owns;     /* data was allocated by the tensor and is freed with it */
    /* Residency (exec/resident.c): a variable's tensor may have a newer copy on a device.
     * version counts the host writes libsession knows of (ses_scope_set, Restore, a kernel
     * updating it on the host), so device copies know when they are stale; device_newer says a
     * device updated its copy since, and sync(sync_owner, t) brings those bytes here. sync and
     * sync_owner are written before device_newer is set (release) and read after (acquire). */
    atomic_uint_fast64_t version;
    atomic_int device_newer;
    void (*sync)(void *owner, ses_tensor_t *t);
    void *sync_owner;
    /* Device tensors (session/device_tensor.c): home is the session's side, shared and
     * refcounted so the tensor may outlive the session; buffer is on home's device
     * home_device, NULL once the session closed (or for 0 bytes). The list links every live
     * device tensor of a home, under its lock, so that close frees their buffers. */
    struct ses__device_home *home;
    /* Frees the buffer and drops home, at the last release (set with home; tensor.c calls it
     * without knowing device tensors). */
    void (*drop_home)(ses_tensor_t *t);
    size_t home_device;
    struct ses_drv_buffer *buffer;
    ses_tensor_t *home_prev, *home_next;
    char device_name[64];
};

/** Whether @p dtype is one of the 13 numeric element types or SES_STRING (dtype.c). */
int ses__dtype_is_valid(ses_dtype_t dtype);

/**
 * A tensor object (refcount 1) of this type with no data yet, for device tensors and DLPack.
 * Messages start with @p what.
 */
ses_status_t ses__tensor_new_empty(const char *what, ses_dtype_t dtype, size_t rank,
                                   const int64_t *dims, ses_tensor_t **out_tensor);

/** SES_INVALID_ARGUMENT naming @p what when @p t is a device tensor (it has no host bytes). */
ses_status_t ses__tensor_require_host(const ses_tensor_t *t, const char *what);

/**
 * A tensor whose every byte the caller writes next (a fetched value: a copy or a kernel fills
 * it), so its storage is not zero-filled first.
 */
ses_status_t ses__tensor_create_for_output(ses_dtype_t dtype, size_t rank, const int64_t *dims,
                                           ses_tensor_t **out_tensor);

/** Brings a newer device copy of @p t's bytes to its host memory, if there is one. */
void ses__tensor_materialize(ses_tensor_t *t);

/** Records a host write of @p t's bytes: device copies are stale, the host's wins. */
void ses__tensor_host_wrote(ses_tensor_t *t);

/**
 * Checks dtype, rank and dims and computes count and bytes; messages start with @p what
 * ("ses_tensor_create"). Shared by every constructor and by the graph's placeholders.
 */
ses_status_t ses__tensor_check_shape(const char *what, ses_dtype_t dtype, size_t rank,
                                     const int64_t *dims, size_t *out_count, size_t *out_bytes);

/* ---- string tensors (tensor/string_tensor.c) ------------------------------------------- */

/** Points every element of string tensor @p t (its array allocated) at the shared "" (never
 *  freed). */
void ses__string_tensor_fill_empty(ses_tensor_t *t);
/**
 * Copies the @p t->count strings of @p src (a `const char *const *`) into @p t's elements, which
 * must all be NULL or "" first; checks each is non-NULL and UTF-8 (messages start with @p what).
 * On failure the elements set so far stay, for ses__string_tensor_free_elements.
 */
ses_status_t ses__string_tensor_copy_in(const char *what, ses_tensor_t *t, const void *src);
/** Frees the strings of string tensor @p t (not its array); the elements become NULL. */
void ses__string_tensor_free_elements(ses_tensor_t *t);
/** Sets element @p index of string tensor @p t to @p value (taken over: malloc'd, valid UTF-8). */
void ses__string_tensor_take(ses_tensor_t *t, size_t index, char *value);
/** The element @p index of string tensor @p t; "" for one not set yet. */
const char *ses__string_at(const ses_tensor_t *t, size_t index);
/** 0 when @p s[0..@p n) is valid UTF-8; else the byte offset of the first bad sequence + 1. */
size_t ses__utf8_check(const char *s, size_t n);

#endif /* SES_TENSOR_INTERNAL_H */
