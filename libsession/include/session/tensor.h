/*
 * Tensors: dtype, shape, device and refcounted storage.
 */
#ifndef SESSION_TENSOR_H
#define SESSION_TENSOR_H

#include <session/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Element types; the numeric values equal the driver ABI's SES_DRV_DTYPE_*. SES_STRING is outside
 * that numbering: string tensors live in host memory only and no driver ever sees one.
 */
typedef enum ses_dtype {
    SES_DTYPE_INVALID = 0,
    SES_F32 = 1,
    SES_F64 = 2,
    SES_F16 = 3,
    SES_BF16 = 4,
    SES_I8 = 5,
    SES_I16 = 6,
    SES_I32 = 7,
    SES_I64 = 8,
    SES_U8 = 9,
    SES_U16 = 10,
    SES_U32 = 11,
    SES_U64 = 12,
    SES_BOOL = 13,
    /* Host-only: each element is a `char *`, a NUL-terminated UTF-8 string owned by the tensor
     * (ONNX's STRING). Read and set elements with ses_tensor_string and ses_tensor_set_string. */
    SES_STRING = 31,
} ses_dtype_t;

/** The most dimensions a tensor may have. */
#define SES_MAX_RANK 8

typedef struct ses_tensor ses_tensor_t;

/**
 * Bytes per element of @p dtype; 0 for SES_DTYPE_INVALID or an unknown value. For SES_STRING,
 * sizeof(char *): a string tensor's data is its array of element pointers.
 */
SES_API size_t ses_dtype_size(ses_dtype_t dtype);
/** "f32", "i64", "bool", "string", ...; "invalid" outside the set. */
SES_API const char *ses_dtype_name(ses_dtype_t dtype);

/**
 * Creates a host tensor of @p dtype and shape @p dims[@p rank], zero-filled (for SES_STRING:
 * every element the empty string), with refcount 1.
 * @p dims may be NULL when @p rank is 0 (a scalar). Dimensions may be 0 (an empty tensor).
 * Fails with SES_INVALID_ARGUMENT for a bad dtype, rank > SES_MAX_RANK, a negative dimension,
 * or a size that overflows; SES_OUT_OF_MEMORY when memory runs out.
 * Thread-safety: any thread.
 */
SES_API ses_status_t ses_tensor_create(ses_dtype_t dtype, size_t rank, const int64_t *dims,
                                       ses_tensor_t **out_tensor);

/**
 * Creates a host tensor and copies @p bytes from @p data into it (bytes must equal its size).
 * For SES_STRING, @p data is a `const char *const *` array of count elements and @p bytes is
 * count * sizeof(char *): each string is copied. A NULL element or one that is not valid UTF-8
 * fails with SES_INVALID_ARGUMENT naming its index.
 */
SES_API ses_status_t ses_tensor_create_from(ses_dtype_t dtype, size_t rank, const int64_t *dims,
                                            const void *data, size_t bytes,
                                            ses_tensor_t **out_tensor);

/**
 * Wraps caller memory without copying. @p data must hold the whole tensor, row-major, aligned to
 * its element size (NULL only for an empty tensor), and stay
 * valid until @p deleter(data, user) is called — when the last reference is released, or right
 * away when this call fails. @p deleter may be NULL when the caller keeps the memory alive
 * longer than the tensor. SES_STRING is refused (SES_INVALID_ARGUMENT): a string tensor owns
 * its strings, so it cannot borrow the caller's.
 */
SES_API ses_status_t ses_tensor_wrap(ses_dtype_t dtype, size_t rank, const int64_t *dims,
                                     void *data, void (*deleter)(void *data, void *user),
                                     void *user, ses_tensor_t **out_tensor);

/** Adds a reference; returns @p t. Thread-safe. Accepts NULL. */
SES_API ses_tensor_t *ses_tensor_retain(ses_tensor_t *t);
/** Drops a reference; frees the tensor with the last one. Thread-safe. Accepts NULL. */
SES_API void ses_tensor_release(ses_tensor_t *t);

SES_API ses_dtype_t ses_tensor_dtype(const ses_tensor_t *t);
SES_API size_t ses_tensor_rank(const ses_tensor_t *t);
/** The dimensions (rank entries); valid as long as the tensor. */
SES_API const int64_t *ses_tensor_dims(const ses_tensor_t *t);
/** The number of elements (1 for a scalar, 0 when a dimension is 0). */
SES_API size_t ses_tensor_count(const ses_tensor_t *t);
SES_API size_t ses_tensor_bytes(const ses_tensor_t *t);
/**
 * The device the data lives on: "cpu:0" for host tensors, the session's device name ("cuda:0")
 * for a device tensor (ses_eval_options_t.device_fetches, ses_session_tensor_from_dlpack). The
 * string is owned by the tensor. "" for NULL.
 */
SES_API const char *ses_tensor_device(const ses_tensor_t *t);
/**
 * The host-visible data, or NULL when the data is not host-visible: always NULL for a device
 * tensor (read it with ses_tensor_copy_to_host), and for NULL. For a SES_STRING tensor, its
 * `char *const *` array of elements: read them there, change them only with
 * ses_tensor_set_string (the tensor owns and frees them).
 */
SES_API void *ses_tensor_data(ses_tensor_t *t);

/**
 * Element @p index (row-major) of string tensor @p t, in @p out_value: a NUL-terminated UTF-8
 * string owned by the tensor, valid until that element is set again or the tensor is freed.
 * SES_INVALID_ARGUMENT for NULL arguments, a tensor whose dtype is not SES_STRING, or an index
 * not below ses_tensor_count (@p out_value is then NULL).
 * Thread-safety: any thread, as long as no thread sets that element meanwhile.
 */
SES_API ses_status_t ses_tensor_string(const ses_tensor_t *t, size_t index,
                                       const char **out_value);

/**
 * Sets element @p index (row-major) of string tensor @p t to a copy of @p value, freeing the old
 * one. SES_INVALID_ARGUMENT for NULL arguments, a tensor whose dtype is not SES_STRING, an index
 * not below ses_tensor_count, or a value that is not valid UTF-8 (the message gives the byte
 * offset); the element is unchanged then. SES_OUT_OF_MEMORY when the copy cannot be made.
 * Thread-safety: not while another thread reads or sets the same tensor.
 */
SES_API ses_status_t ses_tensor_set_string(ses_tensor_t *t, size_t index, const char *value);

/**
 * 1 when @p t is a device tensor: its bytes live in device memory of the session that made it,
 * and the tensor's reference keeps that memory allocated until the last release or until the
 * session closes, whichever comes first. Closing the session frees the memory of its device
 * tensors (they stay valid objects to release; every other use then fails with
 * SES_FAILED_PRECONDITION, naming the device and saying its session closed). 0 for a host tensor
 * and for NULL.
 */
SES_API int ses_tensor_is_device(const ses_tensor_t *t);

/**
 * Copies @p t's bytes into a new host tensor (refcount 1, owned by the caller). A device tensor
 * is read from its device (counted as a device-to-host transfer of its session); a host tensor is
 * copied (a string tensor with its strings). SES_INVALID_ARGUMENT for NULL; SES_FAILED_PRECONDITION for a device tensor whose
 * session closed. Thread-safe; waits for a close of the tensor's session in progress.
 */
SES_API ses_status_t ses_tensor_copy_to_host(ses_tensor_t *t, ses_tensor_t **out_tensor);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_TENSOR_H */
