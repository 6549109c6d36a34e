/*
 * Cast between every pair of the driver's dtypes, for the pairs cpu_elementwise.c's table of
 * f32 f64 i32 i64 u8 bool does not have: anything to or from f16, bf16, i8, i16, u16, u32, u64.
 *
 * Each element is read into one of three wide values, a double (every float source, exactly),
 * an int64_t (signed integers and bool) or a uint64_t (unsigned integers), and written from it
 * by the target's store, chosen by _Generic on that type:
 *   - to f32 and f64: C's conversion, rounding to nearest even once;
 *   - to f16 and bf16: cpu_half.h, rounding to nearest even once from the double (an integer
 *     source goes through double first, exact below 2^53, far beyond both formats' range but
 *     bf16's), with overflow to infinity and NaN kept;
 *   - float to integer: toward zero, saturating at the target's bounds, NaN giving 0 (ONNX
 *     leaves these undefined; cpu_elementwise.c's casts do the same);
 *   - integer to integer: wrapping (modulo 2^bits), as numpy and ONNX Runtime do;
 *   - to bool: non-zero (NaN included) is true.
 */
#include <stdint.h>

#include "cpu_half.h"
#include "cpu_internal.h"

/* Loads: element x of the source dtype to its wide value. */
#define CPU__WLOAD_f32(x) ((double)(x))
#define CPU__WLOAD_f64(x) ((double)(x))
#define CPU__WLOAD_f16(x) ((double)cpu__f16_to_float(x))
#define CPU__WLOAD_bf16(x) ((double)cpu__bf16_to_float(x))
#define CPU__WLOAD_i8(x) ((int64_t)(x))
#define CPU__WLOAD_i16(x) ((int64_t)(x))
#define CPU__WLOAD_i32(x) ((int64_t)(x))
#define CPU__WLOAD_i64(x) ((int64_t)(x))
#define CPU__WLOAD_u8(x) ((uint64_t)(x))
#define CPU__WLOAD_u16(x) ((uint64_t)(x))
#define CPU__WLOAD_u32(x) ((uint64_t)(x))
#define CPU__WLOAD_u64(x) ((uint64_t)(x))
#define CPU__WLOAD_bool(x) ((int64_t)((x) != 0))

/* The C type of each dtype's elements. */
#define CPU__WTYPE_f32 float
#define CPU__WTYPE_f64 double
#define CPU__WTYPE_f16 uint16_t
#define CPU__WTYPE_bf16 uint16_t
#define CPU__WTYPE_i8 int8_t
#define CPU__WTYPE_i16 int16_t
#define CPU__WTYPE_i32 int32_t
#define CPU__WTYPE_i64 int64_t
#define CPU__WTYPE_u8 uint8_t
#define CPU__WTYPE_u16 uint16_t
#define CPU__WTYPE_u32 uint32_t
#define CPU__WTYPE_u64 uint64_t
#define CPU__WTYPE_bool uint8_t

/* Stores, one function per target and wide type. LO is the target's minimum and HI one past
 * its maximum, both exact doubles. */
#define CPU__WSAT(T, MIN, MAX, LO, HI, v) \
    ((v) != (v) ? (T)0 : (v) < (LO) ? (T)(MIN) : (v) >= (HI) ? (T)(MAX) : (T)(v))

#define CPU__WSTORES_FLOAT(S, T, FROM_DOUBLE)                                         \
    static inline T cpu__wstore_##S##_d(double v) { return FROM_DOUBLE(v); }          \
    static inline T cpu__wstore_##S##_i(int64_t v) { return FROM_DOUBLE((double)v); } \
    static inline T cpu__wstore_##S##_u(uint64_t v) { return FROM_DOUBLE((double)v); }
#define CPU__TO_F32(v) ((float)(v))
#define CPU__TO_F64(v) (v)
CPU__WSTORES_FLOAT(f32, float, CPU__TO_F32)
CPU__WSTORES_FLOAT(f64, double, CPU__TO_F64)
CPU__WSTORES_FLOAT(f16, uint16_t, cpu__f16_from_double)
CPU__WSTORES_FLOAT(bf16, uint16_t, cpu__bf16_from_double)

/* Integers: U is the unsigned type of T's width, through which wrapping is done. */
#define CPU__WSTORES_INT(S, T, U, MIN, MAX, LO, HI)                                             \
    static inline T cpu__wstore_##S##_d(double v) { return CPU__WSAT(T, MIN, MAX, LO, HI, v); } \
    static inline T cpu__wstore_##S##_i(int64_t v) { return (T)(U)(uint64_t)v; }                \
    static inline T cpu__wstore_##S##_u(uint64_t v) { return (T)(U)v; }
CPU__WSTORES_INT(i8, int8_t, uint8_t, INT8_MIN, INT8_MAX, -128.0, 128.0)
CPU__WSTORES_INT(i16, int16_t, uint16_t, INT16_MIN, INT16_MAX, -32768.0, 32768.0)
CPU__WSTORES_INT(i32, int32_t, uint32_t, INT32_MIN, INT32_MAX, -2147483648.0, 2147483648.0)
CPU__WSTORES_INT(i64, int64_t, uint64_t, INT64_MIN, INT64_MAX, -9223372036854775808.0,
                 9223372036854775808.0)
CPU__WSTORES_INT(u8, uint8_t, uint8_t, 0, UINT8_MAX, 0.0, 256.0)
CPU__WSTORES_INT(u16, uint16_t, uint16_t, 0, UINT16_MAX, 0.0, 65536.0)
CPU__WSTORES_INT(u32, uint32_t, uint32_t, 0, UINT32_MAX, 0.0, 4294967296.0)
CPU__WSTORES_INT(u64, uint64_t, uint64_t, 0, UINT64_MAX, 0.0, 18446744073709551616.0)

static inline uint8_t cpu__wstore_bool_d(double v) { return (uint8_t)(v != 0); }
static inline uint8_t cpu__wstore_bool_i(int64_t v) { return (uint8_t)(v != 0); }
static inline uint8_t cpu__wstore_bool_u(uint64_t v) { return (uint8_t)(v != 0); }

#define CPU__WSTORE(S, v)                    \
    _Generic((v), double                     \
             : cpu__wstore_##S##_d, int64_t  \
             : cpu__wstore_##S##_i, uint64_t \
             : cpu__wstore_##S##_u)(v)

/* One loop per pair. */
#define CPU__WCAST(A, B)                                                                     \
    static void cpu__wcast_##A##_##B(void *out_, const void *in_, size_t n, const void *p) { \
        CPU__WTYPE_##B *out = out_;                                                          \
        const CPU__WTYPE_##A *in = in_;                                                      \
        (void)p;                                                                             \
        for (size_t i = 0; i < n; i++)                                                       \
            out[i] = CPU__WSTORE(B, CPU__WLOAD_##A(in[i]));                                  \
    }

/* The dtype lists, twice: a macro is not expanded again inside its own expansion. */
/* clang-format off */
#define CPU__WLIST(M, ...)                                                                  \
    M(__VA_ARGS__, f32) M(__VA_ARGS__, f64) M(__VA_ARGS__, f16) M(__VA_ARGS__, bf16)        \
    M(__VA_ARGS__, i8) M(__VA_ARGS__, i16) M(__VA_ARGS__, i32) M(__VA_ARGS__, i64)          \
    M(__VA_ARGS__, u8) M(__VA_ARGS__, u16) M(__VA_ARGS__, u32) M(__VA_ARGS__, u64)          \
    M(__VA_ARGS__, bool)
#define CPU__WLIST_TO(M, ...)                                                               \
    M(__VA_ARGS__, f32) M(__VA_ARGS__, f64) M(__VA_ARGS__, f16) M(__VA_ARGS__, bf16)        \
    M(__VA_ARGS__, i8) M(__VA_ARGS__, i16) M(__VA_ARGS__, i32) M(__VA_ARGS__, i64)          \
    M(__VA_ARGS__, u8) M(__VA_ARGS__, u16) M(__VA_ARGS__, u32) M(__VA_ARGS__, u64)          \
    M(__VA_ARGS__, bool)
/* clang-format on */
#define CPU__WCAST_PAIR(A, B) CPU__WCAST(A, B)
#define CPU__WCAST_FROM(unused, A) CPU__WLIST_TO(CPU__WCAST_PAIR, A)
CPU__WLIST(CPU__WCAST_FROM, 0)

/* The table, indexed by SES_DRV_DTYPE_* codes (1 .. 13, in the lists' order). */
#define CPU__WCAST_CELL(A, B) cpu__wcast_##A##_##B,
#define CPU__WCAST_ROW(unused, A) {NULL, CPU__WLIST_TO(CPU__WCAST_CELL, A)},
static const cpu__cast_fn cpu__wcasts[SES_DRV_DTYPE_BOOL + 1][SES_DRV_DTYPE_BOOL + 1] = {
    {NULL}, CPU__WLIST(CPU__WCAST_ROW, 0)};

cpu__cast_fn cpu__cast_loop(uint32_t from, uint32_t to) {
    if (from < 1 || from > SES_DRV_DTYPE_BOOL || to < 1 || to > SES_DRV_DTYPE_BOOL)
        return NULL;
    return cpu__wcasts[from][to];
}
