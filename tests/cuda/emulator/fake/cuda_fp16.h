/* Test-only: the part of <cuda_fp16.h> cuda_kernels_*.cu use, for the host build. */
#ifndef SES_EMU_CUDA_FP16_H
#define SES_EMU_CUDA_FP16_H

#include "../emu_half.h"

struct __half {
    uint16_t bits;
};

inline float __half2float(__half h) {
    return (float)emu_f16_to_double(h.bits);
}
inline __half __float2half_rn(float f) {
    return __half{emu_f16_from_double(f)};
}
/* Rounded once, from the double, as the device intrinsic does. */
inline __half __double2half(double d) {
    return __half{emu_f16_from_double(d)};
}

#endif /* SES_EMU_CUDA_FP16_H */
