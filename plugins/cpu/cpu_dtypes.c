/*
 * The elementwise loops cpu_elementwise.c's tables do not have, which its bodies ask for when
 * theirs give none:
 *   - Add Sub Mul Div on i8 i16 u8 u16 u32 u64 (wrapping, as the i32 and i64 loops; Div
 *     truncates, and cpu__binary refuses a zero divisor before any loop runs);
 *   - Min Max Mod on f16 and bf16 (computed in f32, where each is exact, then stored back);
 *   - Pow with a base of f32 f64 i32 i64 and an exponent of any number dtype (ONNX's T and T1):
 *     a float base is raised in double and rounded once to its dtype; an integer base with an
 *     integer exponent is multiplied out, wrapping (a negative exponent gives 1/x^n truncated:
 *     0, except for the bases 1 and -1); an integer base with a float exponent goes through
 *     double and is truncated toward zero, saturating (NaN gives 0), as Cast does;
 *   - GreaterOrEqual and LessOrEqual on every number dtype (false when either side is NaN).
 */
#include <math.h>
#include <stdint.h>

#include "cpu_half.h"
#include "cpu_internal.h"

/* A binary row: inputs of types TA and TB (step 0 or 1 each), output TO, one expression. */
#define CPU__DROW(name, TA, TB, TO, EXPR)                                              \
    static void name(void *out_, const void *const *in, const int64_t *step, size_t n, \
                     const void *params) {                                             \
        TO *out = out_;                                                                \
        const TA *a = in[0];                                                           \
        const TB *b = in[1];                                                           \
        const size_t sa = step[0] ? 1 : 0, sb = step[1] ? 1 : 0;                       \
        (void)params;                                                                  \
        for (size_t i = 0; i < n; i++) {                                               \
            TA x = a[i * sa];                                                          \
            TB y = b[i * sb];                                                          \
            out[i] = (EXPR);                                                           \
        }                                                                              \
    }

/* ---------------------------------------------------------------------------------------------
 * Add Sub Mul Div on the narrow and unsigned integers
 * ------------------------------------------------------------------------------------------- */

/* Computed in uint32_t or uint64_t (never in int, where u16 * u16 could overflow), then
 * narrowed modulo 2^bits. */
#define CPU__DWRAP(T, U, x, op, y) ((T)((U)(x)op(U)(y)))
/* Truncating division: MIN / -1 wraps to MIN; a zero divisor never gets here. */
#define CPU__DIDIV(T, MIN, x, y) \
    ((y) == 0 ? (T)0 : ((x) == (MIN) && (y) == -1) ? (T)(MIN) : (T)((x) / (y)))

#define CPU__DARITH(S, T, U)                                     \
    CPU__DROW(cpu__dadd_##S, T, T, T, CPU__DWRAP(T, U, x, +, y)) \
    CPU__DROW(cpu__dsub_##S, T, T, T, CPU__DWRAP(T, U, x, -, y)) \
    CPU__DROW(cpu__dmul_##S, T, T, T, CPU__DWRAP(T, U, x, *, y))
CPU__DARITH(i8, int8_t, uint32_t)
CPU__DARITH(i16, int16_t, uint32_t)
CPU__DARITH(u8, uint8_t, uint32_t)
CPU__DARITH(u16, uint16_t, uint32_t)
CPU__DARITH(u32, uint32_t, uint32_t)
CPU__DARITH(u64, uint64_t, uint64_t)
CPU__DROW(cpu__ddiv_i8, int8_t, int8_t, int8_t, CPU__DIDIV(int8_t, INT8_MIN, x, y))
CPU__DROW(cpu__ddiv_i16, int16_t, int16_t, int16_t, CPU__DIDIV(int16_t, INT16_MIN, x, y))
CPU__DROW(cpu__ddiv_u8, uint8_t, uint8_t, uint8_t, (uint8_t)(y ? x / y : 0))
CPU__DROW(cpu__ddiv_u16, uint16_t, uint16_t, uint16_t, (uint16_t)(y ? x / y : 0))
CPU__DROW(cpu__ddiv_u32, uint32_t, uint32_t, uint32_t, (uint32_t)(y ? x / y : 0))
CPU__DROW(cpu__ddiv_u64, uint64_t, uint64_t, uint64_t, (uint64_t)(y ? x / y : 0))

/* ---------------------------------------------------------------------------------------------
 * Min Max Mod on f16 and bf16
 * ------------------------------------------------------------------------------------------- */

/* NaN wins, as in cpu_elementwise.c's Min and Max. */
static inline float cpu__dminf(float x, float y) { return (x < y || x != x) ? x : y; }
static inline float cpu__dmaxf(float x, float y) { return (x > y || x != x) ? x : y; }

#define CPU__DHALF(S, TO_F, FROM_D)                         \
    CPU__DROW(cpu__dmin_##S, uint16_t, uint16_t, uint16_t,  \
              FROM_D((double)cpu__dminf(TO_F(x), TO_F(y)))) \
    CPU__DROW(cpu__dmax_##S, uint16_t, uint16_t, uint16_t,  \
              FROM_D((double)cpu__dmaxf(TO_F(x), TO_F(y)))) \
    CPU__DROW(cpu__dfmod_##S, uint16_t, uint16_t, uint16_t, FROM_D((double)fmodf(TO_F(x), TO_F(y))))
CPU__DHALF(f16, cpu__f16_to_float, cpu__f16_from_double)
CPU__DHALF(bf16, cpu__bf16_to_float, cpu__bf16_from_double)

/* ---------------------------------------------------------------------------------------------
 * Pow with mixed dtypes
 * ------------------------------------------------------------------------------------------- */

/* x^e for an integer base, wrapping modulo 2^64 (the caller narrows); @p negative says the
 * exponent is -e. */
static inline uint64_t cpu__ipow(int64_t x, int negative, uint64_t e) {
    if (negative) {
        /* 1/x^e truncated toward zero. */
        if (x == 1)
            return 1;
        if (x == -1)
            return (e & 1) ? UINT64_MAX : 1; /* -1 or 1 */
        return 0;
    }
    uint64_t result = 1, base = (uint64_t)x;
    while (e) {
        if (e & 1)
            result *= base;
        base *= base;
        e >>= 1;
    }
    return result;
}

/* Double to an integer type: toward zero, saturating, NaN giving 0. */
#define CPU__DSAT(T, MIN, MAX, LO, HI, v) \
    ((v) != (v) ? (T)0 : (v) < (LO) ? (T)(MIN) : (v) >= (HI) ? (T)(MAX) : (T)(v))
#define CPU__DSAT_i32(v) CPU__DSAT(int32_t, INT32_MIN, INT32_MAX, -2147483648.0, 2147483648.0, v)
#define CPU__DSAT_i64(v) \
    CPU__DSAT(int64_t, INT64_MIN, INT64_MAX, -9223372036854775808.0, 9223372036854775808.0, v)

/* An integer exponent as (negative, magnitude). */
#define CPU__DEXP_SIGNED(y) ((y) < 0), ((y) < 0 ? 0 - (uint64_t)(y) : (uint64_t)(y))
#define CPU__DEXP_UNSIGNED(y) 0, ((uint64_t)(y))

/* A float base: base B (float or double) and its name SB, exponent E named SE. */
#define CPU__DPOW_FLOAT(SB, B, SE, E) \
    CPU__DROW(cpu__dpow_##SB##_##SE, B, E, B, (B)pow((double)x, (double)y))
/* An integer base with a float exponent. */
#define CPU__DPOW_INT_FLOAT(SB, B, SE, E) \
    CPU__DROW(cpu__dpow_##SB##_##SE, B, E, B, CPU__DSAT_##SB(pow((double)x, (double)y)))
/* An integer base with an integer exponent; KIND is SIGNED or UNSIGNED. */
#define CPU__DPOW_INT_INT(SB, B, SE, E, KIND) \
    CPU__DROW(cpu__dpow_##SB##_##SE, B, E, B, (B)cpu__ipow((int64_t)x, CPU__DEXP_##KIND(y)))

/* The exponents: M(args..., name, C type, SIGNED or UNSIGNED) for each integer dtype. */
/* clang-format off */
#define CPU__DPOW_INT_EXPS(M, ...)                                                          \
    M(__VA_ARGS__, i8, int8_t, SIGNED) M(__VA_ARGS__, i16, int16_t, SIGNED)                 \
    M(__VA_ARGS__, i32, int32_t, SIGNED) M(__VA_ARGS__, i64, int64_t, SIGNED)               \
    M(__VA_ARGS__, u8, uint8_t, UNSIGNED) M(__VA_ARGS__, u16, uint16_t, UNSIGNED)           \
    M(__VA_ARGS__, u32, uint32_t, UNSIGNED) M(__VA_ARGS__, u64, uint64_t, UNSIGNED)
/* clang-format on */
#define CPU__DPOW_FLOAT_INT(SB, B, SE, E, KIND) CPU__DPOW_FLOAT(SB, B, SE, E)
#define CPU__DPOW_FLOAT_BASE(SB, B)     \
    CPU__DPOW_FLOAT(SB, B, f32, float)  \
    CPU__DPOW_FLOAT(SB, B, f64, double) \
    CPU__DPOW_INT_EXPS(CPU__DPOW_FLOAT_INT, SB, B)
#define CPU__DPOW_INT_BASE(SB, B)           \
    CPU__DPOW_INT_FLOAT(SB, B, f32, float)  \
    CPU__DPOW_INT_FLOAT(SB, B, f64, double) \
    CPU__DPOW_INT_EXPS(CPU__DPOW_INT_INT, SB, B)
CPU__DPOW_FLOAT_BASE(f32, float)
CPU__DPOW_FLOAT_BASE(f64, double)
CPU__DPOW_INT_BASE(i32, int32_t)
CPU__DPOW_INT_BASE(i64, int64_t)

/* ---------------------------------------------------------------------------------------------
 * GreaterOrEqual LessOrEqual
 * ------------------------------------------------------------------------------------------- */

#define CPU__DCMP(S, T)                                       \
    CPU__DROW(cpu__dge_##S, T, T, uint8_t, (uint8_t)(x >= y)) \
    CPU__DROW(cpu__dle_##S, T, T, uint8_t, (uint8_t)(x <= y))
CPU__DCMP(f32, float)
CPU__DCMP(f64, double)
CPU__DCMP(i8, int8_t)
CPU__DCMP(i16, int16_t)
CPU__DCMP(i32, int32_t)
CPU__DCMP(i64, int64_t)
CPU__DCMP(u8, uint8_t)
CPU__DCMP(u16, uint16_t)
CPU__DCMP(u32, uint32_t)
CPU__DCMP(u64, uint64_t)

/* ---------------------------------------------------------------------------------------------
 * Picking a loop
 * ------------------------------------------------------------------------------------------- */

/* The cases returning prefix##S for the integer dtypes other than i32 and i64. */
#define CPU__DCASES_SMALL_INTS(prefix) \
    case SES_DRV_DTYPE_I8:             \
        return prefix##i8;             \
    case SES_DRV_DTYPE_I16:            \
        return prefix##i16;            \
    case SES_DRV_DTYPE_U8:             \
        return prefix##u8;             \
    case SES_DRV_DTYPE_U16:            \
        return prefix##u16;            \
    case SES_DRV_DTYPE_U32:            \
        return prefix##u32;            \
    case SES_DRV_DTYPE_U64:            \
        return prefix##u64;
/* prefix##S for the dtype @p dt among the number dtypes, or NULL. */
#define CPU__DPICK_NUMBERS(prefix, dt)     \
    switch (dt) {                          \
        case SES_DRV_DTYPE_F32:            \
            return prefix##f32;            \
        case SES_DRV_DTYPE_F64:            \
            return prefix##f64;            \
        case SES_DRV_DTYPE_I32:            \
            return prefix##i32;            \
        case SES_DRV_DTYPE_I64:            \
            return prefix##i64;            \
            CPU__DCASES_SMALL_INTS(prefix) \
        default:                           \
            return NULL;                   \
    }
/* prefix##S for the integer dtypes other than i32 and i64, or NULL. */
#define CPU__DPICK_SMALL_INTS(prefix, dt) \
    switch (dt) {                         \
        CPU__DCASES_SMALL_INTS(prefix)    \
        default:                          \
            return NULL;                  \
    }
#define CPU__DPICK_HALVES(prefix, dt) \
    switch (dt) {                     \
        case SES_DRV_DTYPE_F16:       \
            return prefix##f16;       \
        case SES_DRV_DTYPE_BF16:      \
            return prefix##bf16;      \
        default:                      \
            return NULL;              \
    }

static cpu__row_fn cpu__dpow_row(uint32_t base, uint32_t exponent) {
    switch (base) {
        case SES_DRV_DTYPE_F32:
            CPU__DPICK_NUMBERS(cpu__dpow_f32_, exponent)
        case SES_DRV_DTYPE_F64:
            CPU__DPICK_NUMBERS(cpu__dpow_f64_, exponent)
        case SES_DRV_DTYPE_I32:
            CPU__DPICK_NUMBERS(cpu__dpow_i32_, exponent)
        case SES_DRV_DTYPE_I64:
            CPU__DPICK_NUMBERS(cpu__dpow_i64_, exponent)
        default:
            return NULL;
    }
}

cpu__row_fn cpu__dtypes_binary_row(uint32_t code, uint32_t a, uint32_t b, int64_t variant) {
    if (code == CPU__OP_POW)
        return cpu__dpow_row(a, b);
    if (a != b)
        return NULL;
    switch (code) {
        case CPU__OP_ADD:
            CPU__DPICK_SMALL_INTS(cpu__dadd_, a)
        case CPU__OP_SUB:
            CPU__DPICK_SMALL_INTS(cpu__dsub_, a)
        case CPU__OP_MUL:
            CPU__DPICK_SMALL_INTS(cpu__dmul_, a)
        case CPU__OP_DIV:
            CPU__DPICK_SMALL_INTS(cpu__ddiv_, a)
        case CPU__OP_MIN:
            CPU__DPICK_HALVES(cpu__dmin_, a)
        case CPU__OP_MAX:
            CPU__DPICK_HALVES(cpu__dmax_, a)
        /* Floats take only fmod=1 (the host refuses 0). */
        case CPU__OP_MOD:
            if (!variant)
                return NULL;
            CPU__DPICK_HALVES(cpu__dfmod_, a)
        case CPU__OP_GREATEREQUAL:
            CPU__DPICK_NUMBERS(cpu__dge_, a)
        case CPU__OP_LESSEQUAL:
            CPU__DPICK_NUMBERS(cpu__dle_, a)
        default:
            return NULL;
    }
}
