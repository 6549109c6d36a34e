/*
 * Float math the compiler can vectorise. libm's expf is a function call per element, which no
 * loop around it can vectorise; the exp below is plain arithmetic and bit moves, so a loop of
 * it runs several elements per instruction (about 3x libm on SSE2 in this driver's loops).
 *
 * Accuracy: within 2 ulp of the exact result over the whole float range (measured against
 * expf for every normal result), exact at 0, inf for large inputs, subnormals and then 0 for
 * very negative ones, NaN for NaN. f64 kernels keep libm.
 */
#ifndef SES_CPU_MATH_H
#define SES_CPU_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float cpu__bits_to_float(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint32_t cpu__float_to_bits(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

/*
 * e^x as 2^n * e^r with n = round(x / ln 2) and |r| <= ln(2) / 2: r by Cody and Waite's
 * two-part ln 2, e^r by Cephes' minimax polynomial, 2^n built in the exponent bits. 2^n is
 * applied as two halves so results between FLT_MIN and 0 come out subnormal rather than 0.
 * Every step is defined for every input: NaN goes through as NaN, and the integer bits are
 * moved with unsigned arithmetic, never by converting a float that might not fit.
 */
static inline float cpu__expf(float x) {
    const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */

    /* Past these bounds the result is 0 or inf anyway; the clamp keeps n small. NaN passes. */
    x = x < -104.0f ? -104.0f : x;
    x = x > 89.0f ? 89.0f : x;
    const float t = x * 1.44269504088896341f + round_magic;
    const float n = t - round_magic;
    const int32_t ni =
        (int32_t)(cpu__float_to_bits(t) - cpu__float_to_bits(round_magic)); /* n, as int */
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    const float z = r * r;
    const float p = (((((1.9875691500E-4f * r + 1.3981999507E-3f) * r + 8.3334519073E-3f) * r +
                       4.1665795894E-2f) *
                          r +
                      1.6666665459E-1f) *
                         r +
                     5.0000001201E-1f) *
                        z +
                    r + 1.0f;
    const int32_t n1 = ni / 2;
    const int32_t n2 = ni - n1;
    const float s1 = cpu__bits_to_float((uint32_t)(n1 + 127) << 23);
    const float s2 = cpu__bits_to_float((uint32_t)(n2 + 127) << 23);
    return p * s1 * s2;
}

/* 1 / (1 + e^-x), or e^x / (1 + e^x) for x < 0: never exp of a large positive number, which
 * would overflow. Written without branches so that a loop of it vectorises. Shared by Sigmoid
 * (cpu_elementwise.c) and the fused kernels' activation (cpu_fused.c). */
static inline float cpu__sigmoidf(float x) {
    const float e = cpu__expf(x < 0 ? x : -x); /* e^-|x|, NaN for NaN */
    const float s = 1.0f / (1.0f + e);
    return x < 0 ? e * s : s;
}

static inline double cpu__sigmoid(double x) {
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

#endif /* SES_CPU_MATH_H */
