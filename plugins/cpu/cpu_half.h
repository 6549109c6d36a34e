/*
 * The 16-bit floats (IEEE binary16 "f16" and bfloat16 "bf16") as bits in a uint16_t, converted
 * to and from double. Widening is exact. Narrowing rounds once, from the double itself, to the
 * nearest value and halfway cases to the even one (what ONNX's Cast and numpy's astype do), so
 * that an f64 source is never rounded twice through f32. Values past the largest finite one
 * round to infinity; NaN stays a quiet NaN with its sign; the smallest values become subnormals
 * and then signed zeros.
 */
#ifndef SES_CPU_HALF_H
#define SES_CPU_HALF_H

#include <stdint.h>
#include <string.h>

/*
 * The bits of a narrow float with @p frac fraction bits, exponent bias @p bias and biased
 * exponent field @p exp_max for infinity and NaN, nearest to @p d (halfway: even).
 */
static inline uint16_t cpu__narrow_float(double d, int frac, int bias, uint32_t exp_max) {
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    const uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
    const uint32_t exp = (uint32_t)((b >> 52) & 0x7FFu);
    const uint64_t man = b & ((UINT64_C(1) << 52) - 1);
    const uint32_t inf = exp_max << frac;

    if (exp == 0x7FFu) /* a NaN keeps its top payload bits and is made quiet */
        return (uint16_t)(sign | inf |
                          (man ? (1u << (frac - 1)) | (uint32_t)(man >> (52 - frac)) : 0u));
    /* d = m * 2^(e - 52) with m's leading bit set (double subnormals are far below range). */
    const int e = (int)exp - 1023;
    const uint64_t m = man | (UINT64_C(1) << 52);
    if (e > bias) /* at least 2^(bias + 1): past the largest finite value */
        return (uint16_t)(sign | inf);
    /* Normal results keep frac bits after the leading one; subnormal ones are multiples of
     * 2^(1 - bias - frac). Below half of the smallest subnormal everything rounds to zero. */
    const int min_e = 1 - bias;
    int shift = e >= min_e ? 52 - frac : 52 - frac + (min_e - e);
    if (shift > 53)
        return sign;
    uint64_t q = m >> shift;
    const uint64_t rest = m & ((UINT64_C(1) << shift) - 1), halfway = UINT64_C(1) << (shift - 1);
    if (rest > halfway || (rest == halfway && (q & 1)))
        q++;
    if (e < min_e) /* subnormal; a carry to 2^frac is the smallest normal, the same bits */
        return (uint16_t)(sign | (uint32_t)q);
    /* q in [2^frac, 2^(frac + 1)]: a carry moves into the exponent, up to infinity. */
    return (uint16_t)(sign | (((uint32_t)(e + bias) << frac) + (uint32_t)q - (1u << frac)));
}

/** f16 bits nearest to @p d. */
static inline uint16_t cpu__f16_from_double(double d) {
    return cpu__narrow_float(d, 10, 15, 0x1Fu);
}

/** bf16 bits nearest to @p d. */
static inline uint16_t cpu__bf16_from_double(double d) {
    return cpu__narrow_float(d, 7, 127, 0xFFu);
}

/** The value of f16 bits @p h, exactly, as a float. */
static inline float cpu__f16_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu, bits;

    if (exp == 0x1Fu) {
        bits = sign | 0x7F800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        /* Subnormal: normalise; man * 2^-24 with the leading bit moved to bit 10. */
        uint32_t e = 113;
        while (!(man & 0x400u)) {
            man <<= 1;
            e--;
        }
        bits = sign | (e << 23) | ((man & 0x3FFu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/** The value of bf16 bits @p h, exactly, as a float (its top half). */
static inline float cpu__bf16_to_float(uint16_t h) {
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

#endif /* SES_CPU_HALF_H */
