/*
 * Test-only: f16 and bf16 from and to double, bit for bit as the GPU rounds them (round to
 * nearest, ties to even; subnormals kept; overflow to infinity). Shared by the fake
 * <cuda_fp16.h> and <cuda_bf16.h> the host-compiled kernels see and by the emulated cuBLAS.
 * Plain C99 on the bits, so that neither side depends on the compiler's _Float16 or __bf16.
 */
#ifndef SES_EMU_HALF_H
#define SES_EMU_HALF_H

#include <math.h>
#include <stdint.h>

/* A double rounded to a 16-bit float of @p mant_bits mantissa and @p exp_bits exponent bits. */
static inline uint16_t emu__narrow(double x, int mant_bits, int exp_bits) {
    const uint16_t sign = signbit(x) ? (uint16_t)0x8000u : (uint16_t)0;
    const int bias = (1 << (exp_bits - 1)) - 1;
    const uint16_t inf = (uint16_t)(((1u << exp_bits) - 1u) << mant_bits);
    double a = fabs(x), r;
    int e;

    if (isnan(x))
        return 0x7fffu; /* the canonical NaN of both formats, as the CUDA intrinsics give */
    if (isinf(a))
        return (uint16_t)(sign | inf);
    if (a == 0.0)
        return sign;
    (void)frexp(a, &e);
    e -= 1; /* a = 1.f * 2^e */
    if (e < 1 - bias)
        e = 1 - bias; /* subnormal: the quantum stays 2^(1 - bias - mant_bits) */
    /* Scaled by a power of two (exact), the significand's integer part has mant_bits + 1 bits;
     * nearbyint rounds it to nearest even in the default rounding mode. */
    r = nearbyint(ldexp(a, mant_bits - e));
    if (r >= ldexp(1.0, mant_bits + 1)) {
        r = ldexp(r, -1);
        e++;
    }
    if (e > bias)
        return (uint16_t)(sign | inf);
    if (r < ldexp(1.0, mant_bits)) /* subnormal, or zero after rounding */
        return (uint16_t)(sign | (uint16_t)r);
    return (uint16_t)(sign | (uint16_t)((unsigned)(e + bias) << mant_bits) |
                      ((uint16_t)r & (uint16_t)((1u << mant_bits) - 1u)));
}

/* The value of the 16-bit float @p bits (exact in double). */
static inline double emu__widen(uint16_t bits, int mant_bits, int exp_bits) {
    const int bias = (1 << (exp_bits - 1)) - 1;
    const unsigned field = (bits >> mant_bits) & ((1u << exp_bits) - 1u);
    const unsigned mant = bits & ((1u << mant_bits) - 1u);
    double v;

    if (field == (1u << exp_bits) - 1u)
        v = mant ? NAN : INFINITY;
    else if (field == 0)
        v = ldexp((double)mant, 1 - bias - mant_bits);
    else
        v = ldexp((double)(mant | (1u << mant_bits)), (int)field - bias - mant_bits);
    return (bits & 0x8000u) ? -v : v;
}

static inline uint16_t emu_f16_from_double(double x) {
    return emu__narrow(x, 10, 5);
}
static inline double emu_f16_to_double(uint16_t bits) {
    return emu__widen(bits, 10, 5);
}
static inline uint16_t emu_bf16_from_double(double x) {
    return emu__narrow(x, 7, 8);
}
static inline double emu_bf16_to_double(uint16_t bits) {
    return emu__widen(bits, 7, 8);
}

#endif /* SES_EMU_HALF_H */
