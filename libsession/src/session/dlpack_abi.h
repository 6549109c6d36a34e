/*
 * The DLPack structs libsession reads and writes. The system's <dlpack/dlpack.h> (Debian's
 * libdlpack-dev) when the build found it (SES_HAVE_DLPACK_H); otherwise the same structs of
 * DLPack 0.6, declared here field by field as that header has them, so that the DLPack
 * functions build everywhere. Only the ABI matters: the layouts are identical.
 */
#ifndef SES_DLPACK_ABI_H
#define SES_DLPACK_ABI_H

#ifdef SES_HAVE_DLPACK_H
#include <dlpack/dlpack.h>
#else
#include <stdint.h>

typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int device_id;
} DLDevice;

typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
} DLDataTypeCode;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
#endif

#endif /* SES_DLPACK_ABI_H */
