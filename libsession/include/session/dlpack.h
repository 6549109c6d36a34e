/*
 * DLPack (https://dmlc.github.io/dlpack/, version 0.6 and later's DLManagedTensor): tensors
 * exchanged with other libraries (PyTorch, CuPy, JAX, ...) without a copy.
 *
 * This header only names `struct DLManagedTensor`; include <dlpack/dlpack.h> to read its fields.
 * Host tensors are kDLCPU; device tensors of a session's CUDA device (cuda:N) are kDLCUDA with
 * device_id N and the raw device pointer. Element types map both ways: f16/f32/f64 ↔ kDLFloat,
 * bf16 ↔ kDLBfloat 16, i8..i64 ↔ kDLInt, u8..u64 ↔ kDLUInt, all with 1 lane; bool has no DLPack
 * 0.6 type and is refused (SES_UNIMPLEMENTED), as are other codes, widths and lanes.
 */
#ifndef SESSION_DLPACK_H
#define SESSION_DLPACK_H

#include <session/status.h>
#include <session/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

struct DLManagedTensor;
typedef struct ses_session ses_session_t;

/**
 * Hands @p t out as a new DLManagedTensor (owned by the caller, who calls its deleter once).
 * The DLManagedTensor holds a reference to @p t, dropped by the deleter; its shape is @p t's,
 * strides are NULL (compact row-major) and byte_offset 0. A host tensor is kDLCPU, its data
 * pointer @p t's data (a variable's newest bytes are brought home first). A device tensor of a
 * CUDA device is kDLCUDA with the device pointer; its memory stays valid until the deleter runs
 * or the tensor's session closes, whichever is first — closing the session frees it, so close
 * only after the consumer is done with it. The consumer must not write the bytes while an eval
 * of the session reads the tensor.
 * Errors: SES_INVALID_ARGUMENT for NULL; SES_UNIMPLEMENTED for a dtype DLPack 0.6 cannot name
 * (bool) or a device tensor whose device has no DLPack type or no native pointers (only CUDA);
 * SES_FAILED_PRECONDITION when its session closed; SES_OUT_OF_MEMORY. *@p out is NULL on
 * failure. Thread-safe.
 */
SES_API ses_status_t ses_tensor_to_dlpack(ses_tensor_t *t, struct DLManagedTensor **out);

/**
 * Takes a kDLCPU DLManagedTensor in as a host tensor, without copying: the tensor's data is
 * m->dl_tensor.data + byte_offset, and m->deleter(m) (if set) is called when the tensor's last
 * reference goes. On success the tensor owns @p m; on failure the caller still does (nothing is
 * called) and *@p out is NULL.
 * Errors (SES_INVALID_ARGUMENT unless said): NULL @p m or data with a non-empty shape; a device
 * type other than kDLCPU (a kDLCUDA tensor needs a session: ses_session_tensor_from_dlpack);
 * ndim < 0 or above SES_MAX_RANK; a negative dimension; strides that are not compact row-major
 * (NULL strides are); data not aligned to the element size; SES_UNIMPLEMENTED for a dtype with no
 * libsession type. Thread-safe.
 */
SES_API ses_status_t ses_tensor_from_dlpack(struct DLManagedTensor *m, ses_tensor_t **out);

/**
 * As ses_tensor_from_dlpack, and also takes a kDLCUDA tensor in as a device tensor of @p s's
 * device cuda:<device_id> (the device must be one @p s was opened with), wrapping its memory
 * without a copy (the driver's import_native, DRV-84): feeding it to @p s reads it in place.
 * The memory must stay valid until m->deleter runs, which happens when the tensor's last
 * reference goes (also after the session closed). SES_NOT_FOUND when @p s has no such device;
 * SES_FAILED_PRECONDITION when @p s is closed; SES_UNIMPLEMENTED when its driver cannot take
 * device addresses in. Thread-safe.
 */
SES_API ses_status_t ses_session_tensor_from_dlpack(ses_session_t *s, struct DLManagedTensor *m,
                                                    ses_tensor_t **out);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_DLPACK_H */
