/* Test-only: the part of <cuda_bf16.h> cuda_kernels_*.cu use, for the host build. */
#ifndef SES_EMU_CUDA_BF16_H
#define SES_EMU_CUDA_BF16_H

#include "../emu_half.h"

struct __nv_bfloat16 {
    uint16_t bits;
};

inline float __bfloat162float(__nv_bfloat16 h) {
    return (float)emu_bf16_to_double(h.bits);
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    return __nv_bfloat16{emu_bf16_from_double(f)};
}
/* Rounded once, from the double, as the device intrinsic does. */
inline __nv_bfloat16 __double2bfloat16(double d) {
    return __nv_bfloat16{emu_bf16_from_double(d)};
}

#endif /* SES_EMU_CUDA_BF16_H */
