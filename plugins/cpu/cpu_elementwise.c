/*
 * Elementwise kernels: arithmetic (Add Sub Mul Div Pow Mod BitShift), logic (And Or Xor) and
 * comparisons (Equal Greater Less) with numpy broadcasting, Where, the variadic Min and Max, the
 * unary ops (Neg Abs Exp Log Sqrt Reciprocal Relu Sigmoid Tanh Softplus Erf LeakyRelu Not Sign
 * Round, the trigonometric and hyperbolic functions, IsNaN IsInf) and Cast.
 *
 * Each loop body is one C expression over `x` (and `y`), expanded by a macro into a function
 * per op and dtype. The row functions have one plain loop per stride pattern (both inputs
 * contiguous, one a broadcast scalar), which the compiler vectorises where the operation allows.
 * Integer arithmetic wraps (it is done in the unsigned type): signed overflow would be undefined
 * behaviour in C, and wrapping is what numpy and ONNX Runtime do.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "cpu_internal.h"
#include "cpu_math.h"

/* Element operations one transcendental call costs, for the parallel threshold. */
#define CPU__COST_MATH 8u

/* ---------------------------------------------------------------------------------------------
 * Scalar helpers
 * ------------------------------------------------------------------------------------------- */

/* Wrapping integer arithmetic: compute in the unsigned type, convert back (modulo in GCC and
 * Clang, implementation-defined rather than undefined in C). */
#define CPU__WRAP(T, U, x, op, y) ((T)((U)(x)op(U)(y)))

/* Truncating integer division; x / 0 never happens (the divisor is checked first) and
 * MIN / -1 wraps to MIN instead of trapping. */
#define CPU__IDIV(T, MIN, x, y) \
    ((y) == 0 ? (T)0 : ((x) == (MIN) && (y) == -1) ? (MIN) : (T)((x) / (y)))


/* Min and Max: NaN wins, as in numpy's minimum and maximum (for integers x != x is false). */
#define CPU__MIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))
#define CPU__MAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))

/* Integer remainders; a zero divisor never gets here (cpu__binary refuses it first) and
 * MIN % -1, undefined in C, is 0. CPU__IREM truncates (C's %, ONNX's fmod=1): the result has
 * the dividend's sign. CPU__IMOD floors (Python's %, ONNX's fmod=0): the divisor's sign. */
#define CPU__IREM(T, x, y) ((y) == (T)(-1) ? (T)0 : (T)((x) % (y)))
#define CPU__IMOD(T, x, y) cpu__imod_adjust(T, CPU__IREM(T, x, y), y)
#define cpu__imod_adjust(T, r, y) ((r) != 0 && (((r) < 0) != ((y) < 0)) ? (T)((r) + (y)) : (r))

/* Floor modulo of floats: fmod, moved into the divisor's sign. */
static inline float cpu__fmodf_floor(float x, float y) {
    float r = fmodf(x, y);
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

static inline double cpu__fmod_floor(double x, double y) {
    double r = fmod(x, y);
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

/* Shifts of unsigned integers by y bits; y at or past the width gives 0 (numpy's answer; C's
 * shift would be undefined). Computed in uint64_t, then narrowed. */
#define CPU__SHL(T, BITS, x, y) ((y) >= (BITS) ? (T)0 : (T)((uint64_t)(x) << (y)))
#define CPU__SHR(T, BITS, x, y) ((y) >= (BITS) ? (T)0 : (T)((uint64_t)(x) >> (y)))

/* log(1 + e^x), exact for large |x| too. */
static inline float cpu__softplusf(float x) {
    return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x));
}

static inline double cpu__softplus(double x) {
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

/* ---------------------------------------------------------------------------------------------
 * Binary row functions (strides 0 or 1 only: broadcasting)
 * ------------------------------------------------------------------------------------------- */

#define CPU__BINARY_ROW(name, TI, TO, EXPR)                                            \
    CPU__ISA_CLONES static void name(void *out_, const void *const *in, const int64_t *step, size_t n, \
                     const void *params) {                                             \
        TO *out = out_;                                                                \
        const TI *a = in[0];                                                           \
        const TI *b = in[1];                                                           \
        (void)params;                                                                  \
        if (step[0] && step[1]) {                                                      \
            for (size_t i = 0; i < n; i++) {                                           \
                TI x = a[i], y = b[i];                                                 \
                out[i] = (EXPR);                                                       \
            }                                                                          \
        } else if (step[0]) {                                                          \
            const TI y = b[0];                                                         \
            for (size_t i = 0; i < n; i++) {                                           \
                TI x = a[i];                                                           \
                out[i] = (EXPR);                                                       \
            }                                                                          \
        } else if (step[1]) {                                                          \
            const TI x = a[0];                                                         \
            for (size_t i = 0; i < n; i++) {                                           \
                TI y = b[i];                                                           \
                out[i] = (EXPR);                                                       \
            }                                                                          \
        } else {                                                                       \
            const TI x = a[0], y = b[0];                                               \
            const TO v = (EXPR);                                                       \
            for (size_t i = 0; i < n; i++)                                             \
                out[i] = v;                                                            \
        }                                                                              \
    }

CPU__BINARY_ROW(cpu__add_f32, float, float, x + y)
CPU__BINARY_ROW(cpu__add_f64, double, double, x + y)
CPU__BINARY_ROW(cpu__add_i32, int32_t, int32_t, CPU__WRAP(int32_t, uint32_t, x, +, y))
CPU__BINARY_ROW(cpu__add_i64, int64_t, int64_t, CPU__WRAP(int64_t, uint64_t, x, +, y))
CPU__BINARY_ROW(cpu__sub_f32, float, float, x - y)
CPU__BINARY_ROW(cpu__sub_f64, double, double, x - y)
CPU__BINARY_ROW(cpu__sub_i32, int32_t, int32_t, CPU__WRAP(int32_t, uint32_t, x, -, y))
CPU__BINARY_ROW(cpu__sub_i64, int64_t, int64_t, CPU__WRAP(int64_t, uint64_t, x, -, y))
CPU__BINARY_ROW(cpu__mul_f32, float, float, x *y)
CPU__BINARY_ROW(cpu__mul_f64, double, double, x *y)
CPU__BINARY_ROW(cpu__mul_i32, int32_t, int32_t, CPU__WRAP(int32_t, uint32_t, x, *, y))
CPU__BINARY_ROW(cpu__mul_i64, int64_t, int64_t, CPU__WRAP(int64_t, uint64_t, x, *, y))
CPU__BINARY_ROW(cpu__div_f32, float, float, x / y)
CPU__BINARY_ROW(cpu__div_f64, double, double, x / y)
CPU__BINARY_ROW(cpu__div_i32, int32_t, int32_t, CPU__IDIV(int32_t, INT32_MIN, x, y))
CPU__BINARY_ROW(cpu__div_i64, int64_t, int64_t, CPU__IDIV(int64_t, INT64_MIN, x, y))
CPU__BINARY_ROW(cpu__pow_f32, float, float, powf(x, y))
CPU__BINARY_ROW(cpu__pow_f64, double, double, pow(x, y))
/* PRelu: y is the slope. */
CPU__BINARY_ROW(cpu__prelu_f32, float, float, x < 0 ? y * x : x)
CPU__BINARY_ROW(cpu__prelu_f64, double, double, x < 0 ? y * x : x)

/* Min Max Mod on every number dtype: T is the C type, S its name in the row's name. */
#define CPU__MINMAX_ROWS(S, T)                          \
    CPU__BINARY_ROW(cpu__min_##S, T, T, CPU__MIN(x, y)) \
    CPU__BINARY_ROW(cpu__max_##S, T, T, CPU__MAX(x, y))
CPU__MINMAX_ROWS(f32, float)
CPU__MINMAX_ROWS(f64, double)
CPU__MINMAX_ROWS(i8, int8_t)
CPU__MINMAX_ROWS(i16, int16_t)
CPU__MINMAX_ROWS(i32, int32_t)
CPU__MINMAX_ROWS(i64, int64_t)
CPU__MINMAX_ROWS(u8, uint8_t)
CPU__MINMAX_ROWS(u16, uint16_t)
CPU__MINMAX_ROWS(u32, uint32_t)
CPU__MINMAX_ROWS(u64, uint64_t)
#define CPU__MOD_ROWS(S, T)                                 \
    CPU__BINARY_ROW(cpu__mod_##S, T, T, CPU__IMOD(T, x, y)) \
    CPU__BINARY_ROW(cpu__fmod_##S, T, T, CPU__IREM(T, x, y))
CPU__MOD_ROWS(i8, int8_t)
CPU__MOD_ROWS(i16, int16_t)
CPU__MOD_ROWS(i32, int32_t)
CPU__MOD_ROWS(i64, int64_t)
/* Unsigned: no signs to move, and no -1 divisor. */
#define CPU__UMOD_ROWS(S, T, BITS)                               \
    CPU__BINARY_ROW(cpu__mod_##S, T, T, (T)(x % y))              \
    CPU__BINARY_ROW(cpu__fmod_##S, T, T, (T)(x % y))             \
    CPU__BINARY_ROW(cpu__shl_##S, T, T, CPU__SHL(T, BITS, x, y)) \
    CPU__BINARY_ROW(cpu__shr_##S, T, T, CPU__SHR(T, BITS, x, y))
CPU__UMOD_ROWS(u8, uint8_t, 8)
CPU__UMOD_ROWS(u16, uint16_t, 16)
CPU__UMOD_ROWS(u32, uint32_t, 32)
CPU__UMOD_ROWS(u64, uint64_t, 64)
CPU__BINARY_ROW(cpu__mod_f32, float, float, cpu__fmodf_floor(x, y))
CPU__BINARY_ROW(cpu__mod_f64, double, double, cpu__fmod_floor(x, y))
CPU__BINARY_ROW(cpu__fmod_f32, float, float, fmodf(x, y))
CPU__BINARY_ROW(cpu__fmod_f64, double, double, fmod(x, y))
/* Bool bytes other than 0 and 1 still read as true. */
CPU__BINARY_ROW(cpu__and_bool, uint8_t, uint8_t, (uint8_t)((x != 0) & (y != 0)))
CPU__BINARY_ROW(cpu__or_bool, uint8_t, uint8_t, (uint8_t)((x != 0) | (y != 0)))
CPU__BINARY_ROW(cpu__xor_bool, uint8_t, uint8_t, (uint8_t)((x != 0) ^ (y != 0)))
/* The first input moved to the output (through its broadcast): Min and Max start with it. */
CPU__BINARY_ROW(cpu__second_1, uint8_t, uint8_t, ((void)x, y))
CPU__BINARY_ROW(cpu__second_2, uint16_t, uint16_t, ((void)x, y))
CPU__BINARY_ROW(cpu__second_4, uint32_t, uint32_t, ((void)x, y))
CPU__BINARY_ROW(cpu__second_8, uint64_t, uint64_t, ((void)x, y))

CPU__BINARY_ROW(cpu__eq_f32, float, uint8_t, (uint8_t)(x == y))
CPU__BINARY_ROW(cpu__eq_f64, double, uint8_t, (uint8_t)(x == y))
CPU__BINARY_ROW(cpu__eq_i32, int32_t, uint8_t, (uint8_t)(x == y))
CPU__BINARY_ROW(cpu__eq_i64, int64_t, uint8_t, (uint8_t)(x == y))
CPU__BINARY_ROW(cpu__eq_u8, uint8_t, uint8_t, (uint8_t)(x == y))
/* A bool byte other than 0 and 1 still reads as true. */
CPU__BINARY_ROW(cpu__eq_bool, uint8_t, uint8_t, (uint8_t)((x != 0) == (y != 0)))
CPU__BINARY_ROW(cpu__gt_f32, float, uint8_t, (uint8_t)(x > y))
CPU__BINARY_ROW(cpu__gt_f64, double, uint8_t, (uint8_t)(x > y))
CPU__BINARY_ROW(cpu__gt_i32, int32_t, uint8_t, (uint8_t)(x > y))
CPU__BINARY_ROW(cpu__gt_i64, int64_t, uint8_t, (uint8_t)(x > y))
CPU__BINARY_ROW(cpu__gt_u8, uint8_t, uint8_t, (uint8_t)(x > y))
CPU__BINARY_ROW(cpu__lt_f32, float, uint8_t, (uint8_t)(x < y))
CPU__BINARY_ROW(cpu__lt_f64, double, uint8_t, (uint8_t)(x < y))
CPU__BINARY_ROW(cpu__lt_i32, int32_t, uint8_t, (uint8_t)(x < y))
CPU__BINARY_ROW(cpu__lt_i64, int64_t, uint8_t, (uint8_t)(x < y))
CPU__BINARY_ROW(cpu__lt_u8, uint8_t, uint8_t, (uint8_t)(x < y))

/* ---------------------------------------------------------------------------------------------
 * Add Sub Mul Div Pow PRelu Mod BitShift And Or Xor
 * ------------------------------------------------------------------------------------------- */

static cpu__row_fn cpu__binary_row(uint32_t code, uint32_t dtype) {
#define CPU__PICK(prefix)                       \
    switch (dtype) {                            \
    case SES_DRV_DTYPE_F32: return prefix##f32; \
    case SES_DRV_DTYPE_F64: return prefix##f64; \
    case SES_DRV_DTYPE_I32: return prefix##i32; \
    case SES_DRV_DTYPE_I64: return prefix##i64; \
    default: return NULL;                       \
    }
    switch (code) {
    case CPU__OP_ADD: CPU__PICK(cpu__add_)
    case CPU__OP_SUB: CPU__PICK(cpu__sub_)
    case CPU__OP_MUL: CPU__PICK(cpu__mul_)
    case CPU__OP_DIV: CPU__PICK(cpu__div_)
    case CPU__OP_POW:
        return dtype == SES_DRV_DTYPE_F32   ? cpu__pow_f32
               : dtype == SES_DRV_DTYPE_F64 ? cpu__pow_f64
                                            : NULL;
    case CPU__OP_PRELU:
        return dtype == SES_DRV_DTYPE_F32   ? cpu__prelu_f32
               : dtype == SES_DRV_DTYPE_F64 ? cpu__prelu_f64
                                            : NULL;
    case CPU__OP_AND: return dtype == SES_DRV_DTYPE_BOOL ? cpu__and_bool : NULL;
    case CPU__OP_OR: return dtype == SES_DRV_DTYPE_BOOL ? cpu__or_bool : NULL;
    case CPU__OP_XOR: return dtype == SES_DRV_DTYPE_BOOL ? cpu__xor_bool : NULL;
    default: return NULL;
    }
#undef CPU__PICK
}

/*
 * The loops of the ops defined on every number dtype (Min Max Mod) and of BitShift (unsigned
 * only). @p variant is Mod's fmod and BitShift's direction (1: RIGHT), 0 for Min and Max.
 */
static cpu__row_fn cpu__number_row(uint32_t code, uint32_t dtype, int64_t variant) {
#define CPU__PICK(prefix)                       \
    switch (dtype) {                            \
    case SES_DRV_DTYPE_F32: return prefix##f32; \
    case SES_DRV_DTYPE_F64: return prefix##f64; \
    case SES_DRV_DTYPE_I8: return prefix##i8;   \
    case SES_DRV_DTYPE_I16: return prefix##i16; \
    case SES_DRV_DTYPE_I32: return prefix##i32; \
    case SES_DRV_DTYPE_I64: return prefix##i64; \
    case SES_DRV_DTYPE_U8: return prefix##u8;   \
    case SES_DRV_DTYPE_U16: return prefix##u16; \
    case SES_DRV_DTYPE_U32: return prefix##u32; \
    case SES_DRV_DTYPE_U64: return prefix##u64; \
    default: return NULL;                       \
    }
#define CPU__PICK_UNSIGNED(prefix)              \
    switch (dtype) {                            \
    case SES_DRV_DTYPE_U8: return prefix##u8;   \
    case SES_DRV_DTYPE_U16: return prefix##u16; \
    case SES_DRV_DTYPE_U32: return prefix##u32; \
    case SES_DRV_DTYPE_U64: return prefix##u64; \
    default: return NULL;                       \
    }
    switch (code) {
    case CPU__OP_MIN: CPU__PICK(cpu__min_)
    case CPU__OP_MAX: CPU__PICK(cpu__max_)
    case CPU__OP_MOD:
        if (variant) {
            CPU__PICK(cpu__fmod_)
        }
        CPU__PICK(cpu__mod_)
    case CPU__OP_BITSHIFT:
        if (variant) {
            CPU__PICK_UNSIGNED(cpu__shr_)
        }
        CPU__PICK_UNSIGNED(cpu__shl_)
    default: return NULL;
    }
#undef CPU__PICK
#undef CPU__PICK_UNSIGNED
}

/* The index of the first zero among @p n integers of @p esize bytes, or n when there is none. */
static uint64_t cpu__find_zero(const void *data, size_t esize, uint64_t n) {
#define CPU__FIND(T)                     \
    do {                                 \
        const T *v = data;               \
        for (uint64_t i = 0; i < n; i++) \
            if (v[i] == 0)               \
                return i;                \
    } while (0)
    switch (esize) {
    case 1: CPU__FIND(uint8_t); break;
    case 2: CPU__FIND(uint16_t); break;
    case 4: CPU__FIND(uint32_t); break;
    default: CPU__FIND(uint64_t); break;
    }
#undef CPU__FIND
    return n;
}

/* Non-zero for the integer dtypes, whose division and remainder refuse a zero divisor. */
static int cpu__is_integer(uint32_t dtype) {
    return dtype != SES_DRV_DTYPE_F32 && dtype != SES_DRV_DTYPE_F64 && dtype != SES_DRV_DTYPE_F16 &&
           dtype != SES_DRV_DTYPE_BF16 && dtype != SES_DRV_DTYPE_BOOL;
}

/* Element operations per element of a binary op, for the parallel threshold. */
static uint64_t cpu__binary_cost(uint32_t code) {
    return code == CPU__OP_POW || code == CPU__OP_MOD ? CPU__COST_MATH : 1;
}

int32_t cpu__binary(const cpu__call_t *call) {
    const uint32_t code = call->spec->code;
    const uint32_t dtype = call->out.dtype;
    cpu__strided_t s;
    int32_t st;

    if ((st = cpu__broadcast_setup(call, 2, &s)) != SES_DRV_OK)
        return st;
    if (call->out.count == 0)
        return SES_DRV_OK;
    cpu__row_fn row;
    if (code == CPU__OP_MOD || code == CPU__OP_BITSHIFT) {
        /* Which loop depends on an attribute the host always gives (Mod's fmod, BitShift's
         * direction, normalized to 0 or 1). */
        int64_t variant = 0;
        if ((st = cpu__attr_int(call, code == CPU__OP_MOD ? "fmod" : "direction", 1, 0,
                                &variant)) != SES_DRV_OK)
            return st;
        row = cpu__number_row(code, dtype, variant);
        if (!row)
            row = cpu__dtypes_binary_row(code, dtype, call->in[1].dtype, variant);
    } else {
        row = cpu__binary_row(code, dtype);
        /* Pow's exponent may have its own dtype (cpu_dtypes.c has those loops). */
        if (!row || call->in[1].dtype != dtype)
            row = cpu__dtypes_binary_row(code, dtype, call->in[1].dtype, 0);
    }
    if (!row)
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s", cpu__dtype_label(dtype));
    /* With a non-empty output every divisor element is used, so one zero anywhere is an error;
     * finding it up front keeps the loop free of error paths. */
    if ((code == CPU__OP_DIV || code == CPU__OP_MOD) && cpu__is_integer(dtype)) {
        uint64_t at = cpu__find_zero(call->in[1].data, call->in[1].esize, call->in[1].count);
        if (at < call->in[1].count)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "integer division by zero: input 1 (the divisor) holds 0 at "
                                  "element %" PRIu64,
                                  at);
    }
    cpu__strided_parallel(call, &s, row, NULL, cpu__binary_cost(code));
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Equal Greater Less
 * ------------------------------------------------------------------------------------------- */

static cpu__row_fn cpu__compare_row(uint32_t code, uint32_t dtype) {
#define CPU__PICK(prefix)                       \
    switch (dtype) {                            \
    case SES_DRV_DTYPE_F32: return prefix##f32; \
    case SES_DRV_DTYPE_F64: return prefix##f64; \
    case SES_DRV_DTYPE_I32: return prefix##i32; \
    case SES_DRV_DTYPE_I64: return prefix##i64; \
    case SES_DRV_DTYPE_U8: return prefix##u8;   \
    default: return NULL;                       \
    }
    switch (code) {
    case CPU__OP_EQUAL:
        if (dtype == SES_DRV_DTYPE_BOOL)
            return cpu__eq_bool;
        CPU__PICK(cpu__eq_)
    case CPU__OP_GREATER: CPU__PICK(cpu__gt_)
    case CPU__OP_LESS: CPU__PICK(cpu__lt_)
    default: return NULL;
    }
#undef CPU__PICK
}

int32_t cpu__compare(const cpu__call_t *call) {
    cpu__strided_t s;
    int32_t st;

    if ((st = cpu__broadcast_setup(call, 2, &s)) != SES_DRV_OK)
        return st;
    if (call->out.count == 0)
        return SES_DRV_OK;
    cpu__row_fn row = cpu__compare_row(call->spec->code, call->in[0].dtype);
    if (!row)
        row = cpu__dtypes_binary_row(call->spec->code, call->in[0].dtype, call->in[1].dtype, 0);
    if (!row)
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s",
                              cpu__dtype_label(call->in[0].dtype));
    cpu__strided_parallel(call, &s, row, NULL, 1);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Where: a select, so only the element size matters.
 * ------------------------------------------------------------------------------------------- */

#define CPU__WHERE_ROW(name, T)                                                        \
    static void name(void *out_, const void *const *in, const int64_t *step, size_t n, \
                     const void *params) {                                             \
        T *out = out_;                                                                 \
        const uint8_t *c = in[0];                                                      \
        const T *x = in[1];                                                            \
        const T *y = in[2];                                                            \
        (void)params;                                                                  \
        if (step[0] && step[1] && step[2]) {                                           \
            for (size_t i = 0; i < n; i++)                                             \
                out[i] = c[i] ? x[i] : y[i];                                           \
        } else {                                                                       \
            size_t sc = (size_t)step[0], sx = (size_t)step[1], sy = (size_t)step[2];   \
            for (size_t i = 0; i < n; i++)                                             \
                out[i] = c[i * sc] ? x[i * sx] : y[i * sy];                            \
        }                                                                              \
    }

CPU__WHERE_ROW(cpu__where_1, uint8_t)
CPU__WHERE_ROW(cpu__where_4, uint32_t)
CPU__WHERE_ROW(cpu__where_8, uint64_t)

/* Where's loop for elements of @p esize bytes, or NULL. */
static cpu__row_fn cpu__where_row(size_t esize) {
    switch (esize) {
    case 1: return cpu__where_1;
    case 4: return cpu__where_4;
    case 8: return cpu__where_8;
    default: return NULL;
    }
}

int32_t cpu__where(const cpu__call_t *call) {
    cpu__strided_t s;
    int32_t st;

    if ((st = cpu__broadcast_setup(call, 3, &s)) != SES_DRV_OK)
        return st;
    if (call->out.count == 0)
        return SES_DRV_OK;
    cpu__row_fn row = cpu__where_row(call->out.esize);
    if (!row)
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %zu-byte elements",
                              call->out.esize);
    cpu__strided_parallel(call, &s, row, NULL, 1);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Min and Max: any number of inputs, folded into the output one at a time.
 * ------------------------------------------------------------------------------------------- */

/* The copy loop for elements of @p esize bytes (the output starts as the first input). */
static cpu__row_fn cpu__second_row(size_t esize) {
    switch (esize) {
    case 1: return cpu__second_1;
    case 2: return cpu__second_2;
    case 4: return cpu__second_4;
    case 8: return cpu__second_8;
    default: return NULL;
    }
}

/*
 * Non-zero when the output's shape is the numpy broadcast of all @p n inputs of @p call: its
 * rank the largest input rank and each dim the one size other than 1 among the inputs there.
 */
static int cpu__broadcasts_to_out(const cpu__call_t *call, uint32_t n) {
    const cpu__tensor_t *out = &call->out;
    uint32_t max_rank = 0;

    for (uint32_t k = 0; k < n; k++) {
        cpu__tensor_t t = cpu__input(call, k);
        if (t.rank > max_rank)
            max_rank = t.rank;
    }
    if (out->rank != max_rank)
        return 0;
    for (uint32_t d = 0; d < out->rank; d++) {
        int64_t want = 1;
        for (uint32_t k = 0; k < n; k++) {
            cpu__tensor_t t = cpu__input(call, k);
            uint32_t lead = out->rank - t.rank;
            if (d < lead || t.dims[d - lead] == 1)
                continue;
            if (want != 1 && want != t.dims[d - lead])
                return 0;
            want = t.dims[d - lead];
        }
        if (out->dims[d] != want)
            return 0;
    }
    return 1;
}

/*
 * out = op(out, input k) for each k, after out = input `first` broadcast. The planner may give
 * the output an input's very bytes (DRV-86); that input is taken first, so it is read before
 * anything is written over it. Any other input read later is then a different range.
 */
int32_t cpu__min_max(const cpu__call_t *call) {
    const uint32_t n = call->n_in;
    cpu__row_fn row = cpu__number_row(call->spec->code, call->out.dtype, 0);
    if (!row) /* f16, bf16: cpu_dtypes.c */
        row = cpu__dtypes_binary_row(call->spec->code, call->out.dtype, call->out.dtype, 0);
    cpu__row_fn copy = cpu__second_row(call->out.esize);
    uint32_t first = 0;
    cpu__strided_t s;
    int32_t st;

    if (!row || !copy)
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s",
                              cpu__dtype_label(call->out.dtype));
    if ((st = cpu__check_rank(call, "output 0", &call->out)) != SES_DRV_OK)
        return st;
    for (uint32_t k = 0; k < n; k++) {
        cpu__tensor_t t = cpu__input(call, k);
        char role[24];
        snprintf(role, sizeof role, "input %" PRIu32, k);
        if ((st = cpu__check_rank(call, role, &t)) != SES_DRV_OK)
            return st;
        if (t.data == call->out.data && t.count == call->out.count && t.count > 0)
            first = k;
    }
    if (!cpu__broadcasts_to_out(call, n)) {
        char a[96], o[96];
        cpu__tensor_t t = cpu__input(call, 0);
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "shapes do not broadcast to the output: input 0 is %s (of %" PRIu32
                              " inputs), output is %s",
                              cpu__format_dims(t.dims, t.rank, a, sizeof a), n,
                              cpu__format_dims(call->out.dims, call->out.rank, o, sizeof o));
    }
    if (call->out.count == 0)
        return SES_DRV_OK;
    for (uint32_t k = 0; k < n; k++) {
        /* Step one copies input `first` (read as the pair's second operand); the others fold
         * into the output. The output, as an input, has its own shape: strides 1 throughout. */
        const uint32_t which = k == 0 ? first : k <= first ? k - 1 : k;
        cpu__tensor_t pair[2] = {call->out, cpu__input(call, which)};
        if (!cpu__broadcast_plan(pair, 2, &call->out, &s))
            return cpu__call_fail(call, SES_DRV_INTERNAL, "input %" PRIu32 " does not broadcast",
                                  which);
        cpu__strided_parallel(call, &s, k == 0 ? copy : row, NULL, 1);
    }
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The loops create prepares (see cpu__run_prepared)
 * ------------------------------------------------------------------------------------------- */

cpu__row_fn cpu__elementwise_row(const cpu__spec_t *spec, uint64_t *out_cost) {
    const int int_div = spec->code == CPU__OP_DIV && cpu__is_integer(spec->out);
    /* Mod and BitShift pick their loop by an attribute, which the spec does not have. */
    const int by_attr = spec->code == CPU__OP_MOD || spec->code == CPU__OP_BITSHIFT;

    *out_cost = 1;
    if (spec->body == cpu__binary && !int_div && !by_attr) {
        cpu__row_fn row = spec->in[1] == spec->out ? cpu__binary_row(spec->code, spec->out) : NULL;
        *out_cost = cpu__binary_cost(spec->code);
        return row ? row : cpu__dtypes_binary_row(spec->code, spec->in[0], spec->in[1], 0);
    }
    if (spec->body == cpu__compare) {
        cpu__row_fn row = cpu__compare_row(spec->code, spec->in[0]);
        return row ? row : cpu__dtypes_binary_row(spec->code, spec->in[0], spec->in[1], 0);
    }
    if (spec->body == cpu__where)
        return cpu__where_row(cpu__dtype_size(spec->out));
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Unary ops and Cast: same shape in and out, one contiguous loop.
 * ------------------------------------------------------------------------------------------- */

typedef void (*cpu__map_fn)(void *out, const void *in, size_t n, const void *params);

typedef struct cpu__map_params {
    double alpha;                             /* LeakyRelu */
    int64_t detect_negative, detect_positive; /* IsInf */
} cpu__map_params_t;

#define CPU__MAP(name, TI, TO, EXPR)                                              \
    CPU__ISA_CLONES static void name(void *out_, const void *in_, size_t n, const void *params) { \
        TO *out = out_;                                                           \
        const TI *in = in_;                                                       \
        (void)params;                                                             \
        for (size_t i = 0; i < n; i++) {                                          \
            TI x = in[i];                                                         \
            out[i] = (EXPR);                                                      \
        }                                                                         \
    }

CPU__MAP(cpu__neg_f32, float, float, -x)
CPU__MAP(cpu__neg_f64, double, double, -x)
CPU__MAP(cpu__neg_i32, int32_t, int32_t, CPU__WRAP(int32_t, uint32_t, 0, -, x))
CPU__MAP(cpu__neg_i64, int64_t, int64_t, CPU__WRAP(int64_t, uint64_t, 0, -, x))
CPU__MAP(cpu__abs_f32, float, float, fabsf(x))
CPU__MAP(cpu__abs_f64, double, double, fabs(x))
CPU__MAP(cpu__abs_i32, int32_t, int32_t, x < 0 ? CPU__WRAP(int32_t, uint32_t, 0, -, x) : x)
CPU__MAP(cpu__abs_i64, int64_t, int64_t, x < 0 ? CPU__WRAP(int64_t, uint64_t, 0, -, x) : x)
CPU__MAP(cpu__exp_f32, float, float, cpu__expf(x))
CPU__MAP(cpu__exp_f64, double, double, exp(x))
CPU__MAP(cpu__log_f32, float, float, logf(x))
CPU__MAP(cpu__log_f64, double, double, log(x))
CPU__MAP(cpu__sqrt_f32, float, float, sqrtf(x))
CPU__MAP(cpu__sqrt_f64, double, double, sqrt(x))
CPU__MAP(cpu__reciprocal_f32, float, float, 1.0f / x)
CPU__MAP(cpu__reciprocal_f64, double, double, 1.0 / x)
/* x < 0 rather than max(x, 0): NaN stays NaN, as in numpy's maximum. */
CPU__MAP(cpu__relu_f32, float, float, x < 0 ? 0.0f : x)
CPU__MAP(cpu__relu_f64, double, double, x < 0 ? 0.0 : x)
CPU__MAP(cpu__relu_i32, int32_t, int32_t, x < 0 ? 0 : x)
CPU__MAP(cpu__relu_i64, int64_t, int64_t, x < 0 ? 0 : x)
CPU__MAP(cpu__sigmoid_f32, float, float, cpu__sigmoidf(x))
CPU__MAP(cpu__sigmoid_f64, double, double, cpu__sigmoid(x))
CPU__MAP(cpu__tanh_f32, float, float, tanhf(x))
CPU__MAP(cpu__tanh_f64, double, double, tanh(x))
CPU__MAP(cpu__softplus_f32, float, float, cpu__softplusf(x))
CPU__MAP(cpu__softplus_f64, double, double, cpu__softplus(x))
CPU__MAP(cpu__erf_f32, float, float, erff(x))
CPU__MAP(cpu__erf_f64, double, double, erf(x))
/* Round: halves to even, as ONNX says (the default rounding mode). */
CPU__MAP(cpu__round_f32, float, float, nearbyintf(x))
CPU__MAP(cpu__round_f64, double, double, nearbyint(x))
#define CPU__MAP_FLOATS(name, fn)                       \
    CPU__MAP(cpu__##name##_f32, float, float, fn##f(x)) \
    CPU__MAP(cpu__##name##_f64, double, double, fn(x))
CPU__MAP_FLOATS(cos, cos)
CPU__MAP_FLOATS(sin, sin)
CPU__MAP_FLOATS(tan, tan)
CPU__MAP_FLOATS(acos, acos)
CPU__MAP_FLOATS(asin, asin)
CPU__MAP_FLOATS(atan, atan)
CPU__MAP_FLOATS(cosh, cosh)
CPU__MAP_FLOATS(sinh, sinh)
CPU__MAP_FLOATS(asinh, asinh)
CPU__MAP_FLOATS(acosh, acosh)
CPU__MAP_FLOATS(atanh, atanh)
CPU__MAP_FLOATS(floor, floor)
CPU__MAP_FLOATS(ceil, ceil)
/* Sign: -1, 0 or 1; floats keep 0's sign and NaN. */
CPU__MAP(cpu__sign_f32, float, float, x > 0 ? 1.0f : x < 0 ? -1.0f : x)
CPU__MAP(cpu__sign_f64, double, double, x > 0 ? 1.0 : x < 0 ? -1.0 : x)
#define CPU__MAP_SIGN(S, T) CPU__MAP(cpu__sign_##S, T, T, (T)((x > 0) - (x < 0)))
CPU__MAP_SIGN(i8, int8_t)
CPU__MAP_SIGN(i16, int16_t)
CPU__MAP_SIGN(i32, int32_t)
CPU__MAP_SIGN(i64, int64_t)
#define CPU__MAP_SIGN_UNSIGNED(S, T) CPU__MAP(cpu__sign_##S, T, T, (T)(x != 0))
CPU__MAP_SIGN_UNSIGNED(u8, uint8_t)
CPU__MAP_SIGN_UNSIGNED(u16, uint16_t)
CPU__MAP_SIGN_UNSIGNED(u32, uint32_t)
CPU__MAP_SIGN_UNSIGNED(u64, uint64_t)
CPU__MAP(cpu__not_bool, uint8_t, uint8_t, (uint8_t)(x == 0))
CPU__MAP(cpu__isnan_f32, float, uint8_t, (uint8_t)(x != x))
CPU__MAP(cpu__isnan_f64, double, uint8_t, (uint8_t)(x != x))

static void cpu__isinf_f32(void *out_, const void *in_, size_t n, const void *params) {
    const cpu__map_params_t *p = params;
    const int neg = p->detect_negative != 0, pos = p->detect_positive != 0;
    uint8_t *out = out_;
    const float *in = in_;
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)((in[i] == INFINITY && pos) || (in[i] == -INFINITY && neg));
}

static void cpu__isinf_f64(void *out_, const void *in_, size_t n, const void *params) {
    const cpu__map_params_t *p = params;
    const int neg = p->detect_negative != 0, pos = p->detect_positive != 0;
    uint8_t *out = out_;
    const double *in = in_;
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)((in[i] == INFINITY && pos) || (in[i] == -INFINITY && neg));
}

static void cpu__leakyrelu_f32(void *out_, const void *in_, size_t n, const void *params) {
    float *out = out_;
    const float *in = in_;
    const float alpha = (float)((const cpu__map_params_t *)params)->alpha;
    for (size_t i = 0; i < n; i++) {
        /* The product is computed unconditionally and then selected, a form the compiler
         * vectorises; under a condition it would not speculate the multiply. */
        const float x = in[i];
        const float scaled = alpha * x;
        out[i] = x < 0 ? scaled : x;
    }
}

static void cpu__leakyrelu_f64(void *out_, const void *in_, size_t n, const void *params) {
    double *out = out_;
    const double *in = in_;
    const double alpha = ((const cpu__map_params_t *)params)->alpha;
    for (size_t i = 0; i < n; i++) {
        const double x = in[i];
        const double scaled = alpha * x;
        out[i] = x < 0 ? scaled : x;
    }
}

typedef struct cpu__map_job {
    cpu__map_fn fn;
    unsigned char *out;
    const unsigned char *in;
    size_t out_esize, in_esize;
    const void *params;
} cpu__map_job_t;

static void cpu__map_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__map_job_t *job = ctx;
    job->fn(job->out + begin * job->out_esize, job->in + begin * job->in_esize,
            (size_t)(end - begin), job->params);
}

/* Runs @p fn over call->in[0] into call->out after checking that their shapes agree. */
static int32_t cpu__map_run(const cpu__call_t *call, cpu__map_fn fn, const void *params,
                            uint64_t cost) {
    if (!cpu__same_shape(&call->in[0], &call->out)) {
        char a[96], o[96];
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "shapes differ: input 0 is %s, output is %s",
                              cpu__format_dims(call->in[0].dims, call->in[0].rank, a, sizeof a),
                              cpu__format_dims(call->out.dims, call->out.rank, o, sizeof o));
    }
    if (call->out.count == 0)
        return SES_DRV_OK;
    cpu__map_job_t job = {
        fn, call->out.data, call->in[0].data, call->out.esize, call->in[0].esize, params};
    cpu__parallel(call, call->out.count, cost, cpu__map_task, &job);
    return SES_DRV_OK;
}

int32_t cpu__unary(const cpu__call_t *call) {
    /* By the input's dtype: IsNaN and IsInf give bool; the others give what they take. */
    const uint32_t dtype = call->in[0].dtype;
    const int f32 = dtype == SES_DRV_DTYPE_F32;
    const int f64 = dtype == SES_DRV_DTYPE_F64;
    const int i32 = dtype == SES_DRV_DTYPE_I32;
    cpu__map_params_t params = {0.01, 1, 1};
    cpu__map_fn fn = NULL;
    uint64_t cost = CPU__COST_MATH;
    int32_t st;

#define CPU__PICK_FLOAT(prefix) fn = f32 ? prefix##f32 : f64 ? prefix##f64 : NULL
#define CPU__PICK_NUMBER(prefix) \
    fn = f32 ? prefix##f32 : f64 ? prefix##f64 : i32 ? prefix##i32 : prefix##i64
    switch (call->spec->code) {
    case CPU__OP_NEG:
        CPU__PICK_NUMBER(cpu__neg_);
        cost = 1;
        break;
    case CPU__OP_ABS:
        CPU__PICK_NUMBER(cpu__abs_);
        cost = 1;
        break;
    case CPU__OP_RELU:
        CPU__PICK_NUMBER(cpu__relu_);
        cost = 1;
        break;
    case CPU__OP_RECIPROCAL:
        CPU__PICK_FLOAT(cpu__reciprocal_);
        cost = 1;
        break;
    case CPU__OP_SQRT:
        CPU__PICK_FLOAT(cpu__sqrt_);
        cost = 1;
        break;
    case CPU__OP_EXP: CPU__PICK_FLOAT(cpu__exp_); break;
    case CPU__OP_LOG: CPU__PICK_FLOAT(cpu__log_); break;
    case CPU__OP_SIGMOID: CPU__PICK_FLOAT(cpu__sigmoid_); break;
    case CPU__OP_TANH: CPU__PICK_FLOAT(cpu__tanh_); break;
    case CPU__OP_SOFTPLUS: CPU__PICK_FLOAT(cpu__softplus_); break;
    case CPU__OP_ERF: CPU__PICK_FLOAT(cpu__erf_); break;
    case CPU__OP_COS: CPU__PICK_FLOAT(cpu__cos_); break;
    case CPU__OP_SIN: CPU__PICK_FLOAT(cpu__sin_); break;
    case CPU__OP_TAN: CPU__PICK_FLOAT(cpu__tan_); break;
    case CPU__OP_ACOS: CPU__PICK_FLOAT(cpu__acos_); break;
    case CPU__OP_ASIN: CPU__PICK_FLOAT(cpu__asin_); break;
    case CPU__OP_ATAN: CPU__PICK_FLOAT(cpu__atan_); break;
    case CPU__OP_COSH: CPU__PICK_FLOAT(cpu__cosh_); break;
    case CPU__OP_SINH: CPU__PICK_FLOAT(cpu__sinh_); break;
    case CPU__OP_ASINH: CPU__PICK_FLOAT(cpu__asinh_); break;
    case CPU__OP_ACOSH: CPU__PICK_FLOAT(cpu__acosh_); break;
    case CPU__OP_ATANH: CPU__PICK_FLOAT(cpu__atanh_); break;
    case CPU__OP_ROUND:
        CPU__PICK_FLOAT(cpu__round_);
        cost = 1;
        break;
    case CPU__OP_FLOOR:
        CPU__PICK_FLOAT(cpu__floor_);
        cost = 1;
        break;
    case CPU__OP_CEIL:
        CPU__PICK_FLOAT(cpu__ceil_);
        cost = 1;
        break;
    case CPU__OP_ISNAN:
        CPU__PICK_FLOAT(cpu__isnan_);
        cost = 1;
        break;
    case CPU__OP_ISINF:
        if ((st = cpu__attr_int(call, "detect_negative", 1, 1, &params.detect_negative)) !=
                SES_DRV_OK ||
            (st = cpu__attr_int(call, "detect_positive", 1, 1, &params.detect_positive)) !=
                SES_DRV_OK)
            return st;
        CPU__PICK_FLOAT(cpu__isinf_);
        cost = 1;
        break;
    case CPU__OP_NOT:
        fn = dtype == SES_DRV_DTYPE_BOOL ? cpu__not_bool : NULL;
        cost = 1;
        break;
    case CPU__OP_SIGN:
        switch (dtype) {
        case SES_DRV_DTYPE_F32: fn = cpu__sign_f32; break;
        case SES_DRV_DTYPE_F64: fn = cpu__sign_f64; break;
        case SES_DRV_DTYPE_I8: fn = cpu__sign_i8; break;
        case SES_DRV_DTYPE_I16: fn = cpu__sign_i16; break;
        case SES_DRV_DTYPE_I32: fn = cpu__sign_i32; break;
        case SES_DRV_DTYPE_I64: fn = cpu__sign_i64; break;
        case SES_DRV_DTYPE_U8: fn = cpu__sign_u8; break;
        case SES_DRV_DTYPE_U16: fn = cpu__sign_u16; break;
        case SES_DRV_DTYPE_U32: fn = cpu__sign_u32; break;
        case SES_DRV_DTYPE_U64: fn = cpu__sign_u64; break;
        default: break;
        }
        cost = 1;
        break;
    case CPU__OP_LEAKYRELU:
        if ((st = cpu__attr_float(call, "alpha", 0.01, &params.alpha)) != SES_DRV_OK)
            return st;
        CPU__PICK_FLOAT(cpu__leakyrelu_);
        cost = 1;
        break;
    default: break;
    }
#undef CPU__PICK_FLOAT
#undef CPU__PICK_NUMBER
    if (!fn)
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s", cpu__dtype_label(dtype));
    return cpu__map_run(call, fn, &params, cost);
}

/* ---------------------------------------------------------------------------------------------
 * Cast between f32 f64 i32 i64 u8 bool
 * ------------------------------------------------------------------------------------------- */

/*
 * Float to integer truncates toward zero. Values outside the target's range (and NaN) have no
 * defined result in C or ONNX; they saturate here (NaN gives 0), so the result is at least
 * deterministic. LO is the target's minimum and HI one past its maximum, both exact doubles.
 */
#define CPU__SAT(TO, MIN, MAX, LO, HI, v) \
    ((v) != (v) ? (TO)0 : (v) < (LO) ? (TO)(MIN) : (v) >= (HI) ? (TO)(MAX) : (TO)(v))

#define CPU__TO_I32(x) \
    CPU__SAT(int32_t, INT32_MIN, INT32_MAX, -2147483648.0, 2147483648.0, (double)(x))
#define CPU__TO_I64(x)                                                                     \
    CPU__SAT(int64_t, INT64_MIN, INT64_MAX, -9223372036854775808.0, 9223372036854775808.0, \
             (double)(x))
#define CPU__TO_U8(x) CPU__SAT(uint8_t, 0, 255, 0.0, 256.0, (double)(x))

/* From float sources. */
CPU__MAP(cpu__cast_f32_f32, float, float, x)
CPU__MAP(cpu__cast_f32_f64, float, double, (double)x)
CPU__MAP(cpu__cast_f32_i32, float, int32_t, CPU__TO_I32(x))
CPU__MAP(cpu__cast_f32_i64, float, int64_t, CPU__TO_I64(x))
CPU__MAP(cpu__cast_f32_u8, float, uint8_t, CPU__TO_U8(x))
CPU__MAP(cpu__cast_f32_bool, float, uint8_t, (uint8_t)(x != 0))
CPU__MAP(cpu__cast_f64_f32, double, float, (float)x)
CPU__MAP(cpu__cast_f64_f64, double, double, x)
CPU__MAP(cpu__cast_f64_i32, double, int32_t, CPU__TO_I32(x))
CPU__MAP(cpu__cast_f64_i64, double, int64_t, CPU__TO_I64(x))
CPU__MAP(cpu__cast_f64_u8, double, uint8_t, CPU__TO_U8(x))
CPU__MAP(cpu__cast_f64_bool, double, uint8_t, (uint8_t)(x != 0))
/* From integer sources: narrowing wraps (modulo), as in numpy and ONNX Runtime. */
CPU__MAP(cpu__cast_i32_f32, int32_t, float, (float)x)
CPU__MAP(cpu__cast_i32_f64, int32_t, double, (double)x)
CPU__MAP(cpu__cast_i32_i32, int32_t, int32_t, x)
CPU__MAP(cpu__cast_i32_i64, int32_t, int64_t, (int64_t)x)
CPU__MAP(cpu__cast_i32_u8, int32_t, uint8_t, (uint8_t)x)
CPU__MAP(cpu__cast_i32_bool, int32_t, uint8_t, (uint8_t)(x != 0))
CPU__MAP(cpu__cast_i64_f32, int64_t, float, (float)x)
CPU__MAP(cpu__cast_i64_f64, int64_t, double, (double)x)
CPU__MAP(cpu__cast_i64_i32, int64_t, int32_t, (int32_t)(uint32_t)(uint64_t)x)
CPU__MAP(cpu__cast_i64_i64, int64_t, int64_t, x)
CPU__MAP(cpu__cast_i64_u8, int64_t, uint8_t, (uint8_t)x)
CPU__MAP(cpu__cast_i64_bool, int64_t, uint8_t, (uint8_t)(x != 0))
CPU__MAP(cpu__cast_u8_f32, uint8_t, float, (float)x)
CPU__MAP(cpu__cast_u8_f64, uint8_t, double, (double)x)
CPU__MAP(cpu__cast_u8_i32, uint8_t, int32_t, (int32_t)x)
CPU__MAP(cpu__cast_u8_i64, uint8_t, int64_t, (int64_t)x)
CPU__MAP(cpu__cast_u8_u8, uint8_t, uint8_t, x)
CPU__MAP(cpu__cast_u8_bool, uint8_t, uint8_t, (uint8_t)(x != 0))
/* From bool: any non-zero byte is true, so 0 or 1. */
CPU__MAP(cpu__cast_bool_f32, uint8_t, float, (float)(x != 0))
CPU__MAP(cpu__cast_bool_f64, uint8_t, double, (double)(x != 0))
CPU__MAP(cpu__cast_bool_i32, uint8_t, int32_t, (int32_t)(x != 0))
CPU__MAP(cpu__cast_bool_i64, uint8_t, int64_t, (int64_t)(x != 0))
CPU__MAP(cpu__cast_bool_u8, uint8_t, uint8_t, (uint8_t)(x != 0))
CPU__MAP(cpu__cast_bool_bool, uint8_t, uint8_t, (uint8_t)(x != 0))

/* The row of the cast tables for a dtype, or -1. */
static int cpu__cast_index(uint32_t dtype) {
    switch (dtype) {
    case SES_DRV_DTYPE_F32: return 0;
    case SES_DRV_DTYPE_F64: return 1;
    case SES_DRV_DTYPE_I32: return 2;
    case SES_DRV_DTYPE_I64: return 3;
    case SES_DRV_DTYPE_U8: return 4;
    case SES_DRV_DTYPE_BOOL: return 5;
    default: return -1;
    }
}

#define CPU__CAST_ROW(from)                                                        \
    {                                                                              \
        cpu__cast_##from##_f32, cpu__cast_##from##_f64, cpu__cast_##from##_i32,    \
            cpu__cast_##from##_i64, cpu__cast_##from##_u8, cpu__cast_##from##_bool \
    }

static const cpu__map_fn cpu__casts[6][6] = {
    CPU__CAST_ROW(f32), CPU__CAST_ROW(f64), CPU__CAST_ROW(i32),
    CPU__CAST_ROW(i64), CPU__CAST_ROW(u8),  CPU__CAST_ROW(bool),
};

int32_t cpu__cast(const cpu__call_t *call) {
    int64_t to = 0;
    int32_t st;

    /* "to" repeats the output dtype; when present it must agree, or the host has mixed up the
     * node and the entry it bound. */
    if ((st = cpu__attr_int(call, "to", 1, (int64_t)call->out.dtype, &to)) != SES_DRV_OK)
        return st;
    if (to != (int64_t)call->out.dtype)
        return cpu__call_fail(
            call, SES_DRV_INVALID_ARGUMENT,
            "attribute to is %" PRId64 " (%s), but the output is %s (%" PRIu32 ")", to,
            to > 0 && to <= SES_DRV_DTYPE_BOOL ? cpu__dtype_label((uint32_t)to) : "no dtype",
            cpu__dtype_label(call->out.dtype), call->out.dtype);
    int from_i = cpu__cast_index(call->in[0].dtype);
    int to_i = cpu__cast_index(call->out.dtype);
    /* The other pairs (f16, bf16, i8, i16, u16, u32, u64) are cpu_cast.c's. */
    cpu__map_fn fn = from_i >= 0 && to_i >= 0 ? cpu__casts[from_i][to_i]
                                              : cpu__cast_loop(call->in[0].dtype, call->out.dtype);
    if (!fn)
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s->%s",
                              cpu__dtype_label(call->in[0].dtype),
                              cpu__dtype_label(call->out.dtype));
    return cpu__map_run(call, fn, NULL, 1);
}
