/*
 * The CPU driver's kernel table: one entry per (op, signature), each with a static spec that
 * says what its launches must look like and which body computes it.
 *
 * The compute entry of the ABI receives no pointer to its own table entry, so each entry gets
 * its own small compute function, generated below, that passes its spec to cpu__run_prepared
 * (and, in the families that prepare per-node state, its own create, which passes it to
 * cpu__create). The list of entries is written once, as an X-macro, and expanded twice: into
 * the specs and entry functions, and into the table. Signatures are spelled from the same dtype tokens the specs
 * use, so a signature string cannot disagree with the dtypes its launches are checked against.
 */
#include <stdint.h>

#include <session/driver.h>

#include "cpu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Dtypes
 * ------------------------------------------------------------------------------------------- */

/* Indexed by SES_DRV_DTYPE_*; entry 0 is SES_DRV_DTYPE_INVALID. Sizes are cpu__dtype_size's. */
static const char *const cpu_dtype_names[] = {
    [SES_DRV_DTYPE_F32] = "f32",   [SES_DRV_DTYPE_F64] = "f64", [SES_DRV_DTYPE_F16] = "f16",
    [SES_DRV_DTYPE_BF16] = "bf16", [SES_DRV_DTYPE_I8] = "i8",   [SES_DRV_DTYPE_I16] = "i16",
    [SES_DRV_DTYPE_I32] = "i32",   [SES_DRV_DTYPE_I64] = "i64", [SES_DRV_DTYPE_U8] = "u8",
    [SES_DRV_DTYPE_U16] = "u16",   [SES_DRV_DTYPE_U32] = "u32", [SES_DRV_DTYPE_U64] = "u64",
    [SES_DRV_DTYPE_BOOL] = "bool",
};

const char *cpu__dtype_name(uint32_t dtype) {
    if (dtype >= sizeof cpu_dtype_names / sizeof cpu_dtype_names[0])
        return NULL;
    return cpu_dtype_names[dtype];
}

const char *cpu__dtype_label(uint32_t dtype) {
    const char *name = cpu__dtype_name(dtype);
    return name ? name : "unknown dtype";
}

/* ---------------------------------------------------------------------------------------------
 * The entries
 * ------------------------------------------------------------------------------------------- */

/* Dtype tokens as spelled in signatures, to their codes. */
#define CPU__DT_f32 SES_DRV_DTYPE_F32
#define CPU__DT_f64 SES_DRV_DTYPE_F64
#define CPU__DT_f16 SES_DRV_DTYPE_F16
#define CPU__DT_bf16 SES_DRV_DTYPE_BF16
#define CPU__DT_i8 SES_DRV_DTYPE_I8
#define CPU__DT_i16 SES_DRV_DTYPE_I16
#define CPU__DT_i32 SES_DRV_DTYPE_I32
#define CPU__DT_i64 SES_DRV_DTYPE_I64
#define CPU__DT_u8 SES_DRV_DTYPE_U8
#define CPU__DT_u16 SES_DRV_DTYPE_U16
#define CPU__DT_u32 SES_DRV_DTYPE_U32
#define CPU__DT_u64 SES_DRV_DTYPE_U64
#define CPU__DT_bool SES_DRV_DTYPE_BOOL

/*
 * Every entry is X(id, op, signature, body, code, n_inputs, variadic, in0, in1, in2, out).
 * The family macros below build one entry from an op and its dtype tokens.
 */
#define CPU__E_UNARY(X, Op, CODE, BODY, T) \
    X(Op##_##T, #Op, #T "->" #T, BODY, CODE, 1, 0, CPU__DT_##T, 0, 0, CPU__DT_##T)
#define CPU__E_BINARY(X, Op, CODE, BODY, T) \
    X(Op##_##T, #Op, #T "," #T "->" #T, BODY, CODE, 2, 0, CPU__DT_##T, CPU__DT_##T, 0, CPU__DT_##T)
#define CPU__E_TERNARY(X, Op, CODE, BODY, T)                                                \
    X(Op##3_##T, #Op, #T "," #T "," #T "->" #T, BODY, CODE, 3, 0, CPU__DT_##T, CPU__DT_##T, \
      CPU__DT_##T, CPU__DT_##T)
#define CPU__E_COMPARE(X, Op, CODE, BODY, T)                                            \
    X(Op##_##T, #Op, #T "," #T "->bool", BODY, CODE, 2, 0, CPU__DT_##T, CPU__DT_##T, 0, \
      SES_DRV_DTYPE_BOOL)
#define CPU__E_WHERE(X, Op, CODE, BODY, T)                                                         \
    X(Op##_##T, #Op, "bool," #T "," #T "->" #T, BODY, CODE, 3, 0, SES_DRV_DTYPE_BOOL, CPU__DT_##T, \
      CPU__DT_##T, CPU__DT_##T)
#define CPU__E_TO_BOOL(X, Op, CODE, BODY, T) \
    X(Op##_##T, #Op, #T "->bool", BODY, CODE, 1, 0, CPU__DT_##T, 0, 0, SES_DRV_DTYPE_BOOL)
#define CPU__E_TO_I64(X, Op, CODE, BODY, T) \
    X(Op##_##T, #Op, #T "->i64", BODY, CODE, 1, 0, CPU__DT_##T, 0, 0, SES_DRV_DTYPE_I64)
#define CPU__E_VARIADIC(X, Op, CODE, BODY, T) \
    X(Op##_##T, #Op, #T "...->" #T, BODY, CODE, 1, 1, CPU__DT_##T, 0, 0, CPU__DT_##T)
#define CPU__E_GATHER(X, Op, CODE, BODY, T)                                                     \
    X(Op##_##T##_i32, #Op, #T ",i32->" #T, BODY, CODE, 2, 0, CPU__DT_##T, SES_DRV_DTYPE_I32, 0, \
      CPU__DT_##T)                                                                              \
    X(Op##_##T##_i64, #Op, #T ",i64->" #T, BODY, CODE, 2, 0, CPU__DT_##T, SES_DRV_DTYPE_I64, 0, \
      CPU__DT_##T)
/* ScatterElements and ScatterND: data, indices (i32 or i64), updates. */
#define CPU__E_SCATTER(X, Op, CODE, BODY, T)                                     \
    X(Op##_##T##_i32, #Op, #T ",i32," #T "->" #T, BODY, CODE, 3, 0, CPU__DT_##T, \
      SES_DRV_DTYPE_I32, CPU__DT_##T, CPU__DT_##T)                               \
    X(Op##_##T##_i64, #Op, #T ",i64," #T "->" #T, BODY, CODE, 3, 0, CPU__DT_##T, \
      SES_DRV_DTYPE_I64, CPU__DT_##T, CPU__DT_##T)
/* OneHot: indices of dtype I, values (and output) of dtype T. */
#define CPU__E_ONE_HOT(X, Op, CODE, BODY, I, T)                                              \
    X(Op##_##I##_##T, #Op, #I "," #T "->" #T, BODY, CODE, 2, 0, CPU__DT_##I, CPU__DT_##T, 0, \
      CPU__DT_##T)
#define CPU__E_CAST(X, Op, CODE, BODY, A, B) \
    X(Op##_##A##_##B, #Op, #A "->" #B, BODY, CODE, 1, 0, CPU__DT_##A, 0, 0, CPU__DT_##B)

/* Dtype lists: M(args..., T) for each T. (clang-format would stagger these lines.) */
/* clang-format off */
#define CPU__ALL(M, ...)                                                                    \
    M(__VA_ARGS__, f32) M(__VA_ARGS__, f64) M(__VA_ARGS__, f16) M(__VA_ARGS__, bf16)        \
    M(__VA_ARGS__, i8) M(__VA_ARGS__, i16) M(__VA_ARGS__, i32) M(__VA_ARGS__, i64)          \
    M(__VA_ARGS__, u8) M(__VA_ARGS__, u16) M(__VA_ARGS__, u32) M(__VA_ARGS__, u64)          \
    M(__VA_ARGS__, bool)
#define CPU__FLOATS(M, ...) M(__VA_ARGS__, f32) M(__VA_ARGS__, f64)
#define CPU__NUMBERS(M, ...) \
    M(__VA_ARGS__, f32) M(__VA_ARGS__, f64) M(__VA_ARGS__, i32) M(__VA_ARGS__, i64)
#define CPU__ORDERED(M, ...) CPU__NUMBERS(M, __VA_ARGS__) M(__VA_ARGS__, u8)
#define CPU__BASIC(M, ...) CPU__ORDERED(M, __VA_ARGS__) M(__VA_ARGS__, bool)
/* A second spelling of CPU__BASIC for the inner loop of Cast's pairs: a macro is not expanded
 * again inside its own expansion. */
#define CPU__BASIC_TO(M, ...)                                                               \
    M(__VA_ARGS__, f32) M(__VA_ARGS__, f64) M(__VA_ARGS__, i32) M(__VA_ARGS__, i64)         \
    M(__VA_ARGS__, u8) M(__VA_ARGS__, bool)
/* Every number dtype the driver computes on (Min Max Mod Sign), and the unsigned ones. */
#define CPU__UNSIGNED(M, ...)                                                               \
    M(__VA_ARGS__, u8) M(__VA_ARGS__, u16) M(__VA_ARGS__, u32) M(__VA_ARGS__, u64)
#define CPU__ALL_NUMBERS(M, ...)                                                            \
    CPU__FLOATS(M, __VA_ARGS__) M(__VA_ARGS__, i8) M(__VA_ARGS__, i16) M(__VA_ARGS__, i32)  \
    M(__VA_ARGS__, i64) CPU__UNSIGNED(M, __VA_ARGS__)
/* clang-format on */
#define CPU__E_CAST_FROM(X, Op, CODE, BODY, A) CPU__BASIC_TO(CPU__E_CAST, X, Op, CODE, BODY, A)
#define CPU__E_ONE_HOT_FROM(X, Op, CODE, BODY, I) \
    CPU__BASIC_TO(CPU__E_ONE_HOT, X, Op, CODE, BODY, I)

/* g-dtypes: the dtype gaps (cpu_cast.c, cpu_dtypes.c). Each list has its own name, so that
 * one may be expanded inside another. */
/* clang-format off */
#define CPU__SMALL_INTS(M, ...)                                                             \
    M(__VA_ARGS__, i8) M(__VA_ARGS__, i16) M(__VA_ARGS__, u8) M(__VA_ARGS__, u16)           \
    M(__VA_ARGS__, u32) M(__VA_ARGS__, u64)
#define CPU__HALVES(M, ...) M(__VA_ARGS__, f16) M(__VA_ARGS__, bf16)
/* The dtypes cpu_elementwise.c's Cast table lacks, as targets and as sources. */
#define CPU__CAST_NEW_TO(M, ...)                                                            \
    M(__VA_ARGS__, f16) M(__VA_ARGS__, bf16) M(__VA_ARGS__, i8) M(__VA_ARGS__, i16)         \
    M(__VA_ARGS__, u16) M(__VA_ARGS__, u32) M(__VA_ARGS__, u64)
#define CPU__CAST_NEW_FROM(M, ...)                                                          \
    M(__VA_ARGS__, f16) M(__VA_ARGS__, bf16) M(__VA_ARGS__, i8) M(__VA_ARGS__, i16)         \
    M(__VA_ARGS__, u16) M(__VA_ARGS__, u32) M(__VA_ARGS__, u64)
#define CPU__ALL_TO(M, ...)                                                                 \
    M(__VA_ARGS__, f32) M(__VA_ARGS__, f64) M(__VA_ARGS__, f16) M(__VA_ARGS__, bf16)        \
    M(__VA_ARGS__, i8) M(__VA_ARGS__, i16) M(__VA_ARGS__, i32) M(__VA_ARGS__, i64)          \
    M(__VA_ARGS__, u8) M(__VA_ARGS__, u16) M(__VA_ARGS__, u32) M(__VA_ARGS__, u64)          \
    M(__VA_ARGS__, bool)
/* Pow's exponents besides the base's own dtype: every integer, and the other float. */
#define CPU__POW_INT_EXPS(M, ...)                                                           \
    M(__VA_ARGS__, i8) M(__VA_ARGS__, i16) M(__VA_ARGS__, i32) M(__VA_ARGS__, i64)          \
    M(__VA_ARGS__, u8) M(__VA_ARGS__, u16) M(__VA_ARGS__, u32) M(__VA_ARGS__, u64)
/* clang-format on */
#define CPU__E_CAST_TO_NEW(X, Op, CODE, BODY, A) CPU__CAST_NEW_TO(CPU__E_CAST, X, Op, CODE, BODY, A)
#define CPU__E_CAST_TO_ALL(X, Op, CODE, BODY, A) CPU__ALL_TO(CPU__E_CAST, X, Op, CODE, BODY, A)
/* Pow with base B and exponent E (ONNX's T and T1). */
#define CPU__E_POW(X, Op, CODE, BODY, B, E)                                                  \
    X(Op##_##B##_##E, #Op, #B "," #E "->" #B, BODY, CODE, 2, 0, CPU__DT_##B, CPU__DT_##E, 0, \
      CPU__DT_##B)
#define CPU__DPOW_ENTRIES(X)                                             \
    CPU__POW_INT_EXPS(CPU__E_POW, X, Pow, CPU__OP_POW, cpu__binary, f32) \
    CPU__E_POW(X, Pow, CPU__OP_POW, cpu__binary, f32, f64)               \
    CPU__POW_INT_EXPS(CPU__E_POW, X, Pow, CPU__OP_POW, cpu__binary, f64) \
    CPU__E_POW(X, Pow, CPU__OP_POW, cpu__binary, f64, f32)               \
    CPU__E_POW(X, Pow, CPU__OP_POW, cpu__binary, i32, f32)               \
    CPU__E_POW(X, Pow, CPU__OP_POW, cpu__binary, i32, f64)               \
    CPU__POW_INT_EXPS(CPU__E_POW, X, Pow, CPU__OP_POW, cpu__binary, i32) \
    CPU__E_POW(X, Pow, CPU__OP_POW, cpu__binary, i64, f32)               \
    CPU__E_POW(X, Pow, CPU__OP_POW, cpu__binary, i64, f64)               \
    CPU__POW_INT_EXPS(CPU__E_POW, X, Pow, CPU__OP_POW, cpu__binary, i64)

/* The whole table, in the order get_kernels returns it. */
#define CPU__KERNELS(X)                                                        \
    CPU__ALL(CPU__E_UNARY, X, Identity, CPU__OP_COPY, cpu__copy)               \
    CPU__ALL(CPU__E_UNARY, X, Reshape, CPU__OP_COPY, cpu__copy)                \
    CPU__ALL(CPU__E_UNARY, X, Flatten, CPU__OP_COPY, cpu__copy)                \
    CPU__ALL(CPU__E_UNARY, X, Squeeze, CPU__OP_COPY, cpu__copy)                \
    CPU__ALL(CPU__E_UNARY, X, Unsqueeze, CPU__OP_COPY, cpu__copy)              \
    CPU__NUMBERS(CPU__E_BINARY, X, Add, CPU__OP_ADD, cpu__binary)              \
    CPU__NUMBERS(CPU__E_BINARY, X, Sub, CPU__OP_SUB, cpu__binary)              \
    CPU__NUMBERS(CPU__E_BINARY, X, Mul, CPU__OP_MUL, cpu__binary)              \
    CPU__NUMBERS(CPU__E_BINARY, X, Div, CPU__OP_DIV, cpu__binary)              \
    CPU__FLOATS(CPU__E_BINARY, X, Pow, CPU__OP_POW, cpu__binary)               \
    CPU__BASIC(CPU__E_COMPARE, X, Equal, CPU__OP_EQUAL, cpu__compare)          \
    CPU__ORDERED(CPU__E_COMPARE, X, Greater, CPU__OP_GREATER, cpu__compare)    \
    CPU__ORDERED(CPU__E_COMPARE, X, Less, CPU__OP_LESS, cpu__compare)          \
    CPU__BASIC(CPU__E_WHERE, X, Where, CPU__OP_WHERE, cpu__where)              \
    CPU__NUMBERS(CPU__E_UNARY, X, Neg, CPU__OP_NEG, cpu__unary)                \
    CPU__NUMBERS(CPU__E_UNARY, X, Abs, CPU__OP_ABS, cpu__unary)                \
    CPU__NUMBERS(CPU__E_UNARY, X, Relu, CPU__OP_RELU, cpu__unary)              \
    CPU__FLOATS(CPU__E_UNARY, X, Exp, CPU__OP_EXP, cpu__unary)                 \
    CPU__FLOATS(CPU__E_UNARY, X, Log, CPU__OP_LOG, cpu__unary)                 \
    CPU__FLOATS(CPU__E_UNARY, X, Sqrt, CPU__OP_SQRT, cpu__unary)               \
    CPU__FLOATS(CPU__E_UNARY, X, Reciprocal, CPU__OP_RECIPROCAL, cpu__unary)   \
    CPU__FLOATS(CPU__E_UNARY, X, Sigmoid, CPU__OP_SIGMOID, cpu__unary)         \
    CPU__FLOATS(CPU__E_UNARY, X, Tanh, CPU__OP_TANH, cpu__unary)               \
    CPU__FLOATS(CPU__E_UNARY, X, Softplus, CPU__OP_SOFTPLUS, cpu__unary)       \
    CPU__FLOATS(CPU__E_UNARY, X, Erf, CPU__OP_ERF, cpu__unary)                 \
    CPU__FLOATS(CPU__E_UNARY, X, LeakyRelu, CPU__OP_LEAKYRELU, cpu__unary)     \
    CPU__FLOATS(CPU__E_BINARY, X, PRelu, CPU__OP_PRELU, cpu__binary)           \
    CPU__ALL_NUMBERS(CPU__E_VARIADIC, X, Min, CPU__OP_MIN, cpu__min_max)       \
    CPU__ALL_NUMBERS(CPU__E_VARIADIC, X, Max, CPU__OP_MAX, cpu__min_max)       \
    CPU__ALL_NUMBERS(CPU__E_BINARY, X, Mod, CPU__OP_MOD, cpu__binary)          \
    CPU__E_BINARY(X, And, CPU__OP_AND, cpu__binary, bool)                      \
    CPU__E_BINARY(X, Or, CPU__OP_OR, cpu__binary, bool)                        \
    CPU__E_BINARY(X, Xor, CPU__OP_XOR, cpu__binary, bool)                      \
    CPU__UNSIGNED(CPU__E_BINARY, X, BitShift, CPU__OP_BITSHIFT, cpu__binary)   \
    CPU__E_UNARY(X, Not, CPU__OP_NOT, cpu__unary, bool)                        \
    CPU__ALL_NUMBERS(CPU__E_UNARY, X, Sign, CPU__OP_SIGN, cpu__unary)          \
    CPU__FLOATS(CPU__E_TO_BOOL, X, IsNaN, CPU__OP_ISNAN, cpu__unary)           \
    CPU__FLOATS(CPU__E_TO_BOOL, X, IsInf, CPU__OP_ISINF, cpu__unary)           \
    CPU__FLOATS(CPU__E_UNARY, X, Round, CPU__OP_ROUND, cpu__unary)             \
    CPU__FLOATS(CPU__E_UNARY, X, Floor, CPU__OP_FLOOR, cpu__unary)             \
    CPU__FLOATS(CPU__E_UNARY, X, Ceil, CPU__OP_CEIL, cpu__unary)               \
    CPU__FLOATS(CPU__E_UNARY, X, Cos, CPU__OP_COS, cpu__unary)                 \
    CPU__FLOATS(CPU__E_UNARY, X, Sin, CPU__OP_SIN, cpu__unary)                 \
    CPU__FLOATS(CPU__E_UNARY, X, Tan, CPU__OP_TAN, cpu__unary)                 \
    CPU__FLOATS(CPU__E_UNARY, X, Acos, CPU__OP_ACOS, cpu__unary)               \
    CPU__FLOATS(CPU__E_UNARY, X, Asin, CPU__OP_ASIN, cpu__unary)               \
    CPU__FLOATS(CPU__E_UNARY, X, Atan, CPU__OP_ATAN, cpu__unary)               \
    CPU__FLOATS(CPU__E_UNARY, X, Cosh, CPU__OP_COSH, cpu__unary)               \
    CPU__FLOATS(CPU__E_UNARY, X, Sinh, CPU__OP_SINH, cpu__unary)               \
    CPU__FLOATS(CPU__E_UNARY, X, Asinh, CPU__OP_ASINH, cpu__unary)             \
    CPU__FLOATS(CPU__E_UNARY, X, Acosh, CPU__OP_ACOSH, cpu__unary)             \
    CPU__FLOATS(CPU__E_UNARY, X, Atanh, CPU__OP_ATANH, cpu__unary)             \
    CPU__BASIC(CPU__E_CAST_FROM, X, Cast, CPU__OP_CAST, cpu__cast)             \
    CPU__FLOATS(CPU__E_BINARY, X, MatMul, CPU__OP_MATMUL, cpu__matmul)         \
    CPU__FLOATS(CPU__E_BINARY, X, Gemm, CPU__OP_GEMM, cpu__gemm)               \
    CPU__FLOATS(CPU__E_TERNARY, X, Gemm, CPU__OP_GEMM, cpu__gemm)              \
    CPU__NUMBERS(CPU__E_UNARY, X, ReduceSum, CPU__OP_REDUCESUM, cpu__reduce)   \
    CPU__NUMBERS(CPU__E_UNARY, X, ReduceMax, CPU__OP_REDUCEMAX, cpu__reduce)   \
    CPU__FLOATS(CPU__E_UNARY, X, ReduceMean, CPU__OP_REDUCEMEAN, cpu__reduce)  \
    CPU__FLOATS(CPU__E_UNARY, X, Softmax, CPU__OP_SOFTMAX, cpu__softmax)       \
    CPU__FLOATS(CPU__E_UNARY, X, LogSoftmax, CPU__OP_LOGSOFTMAX, cpu__softmax) \
    CPU__NUMBERS(CPU__E_TO_I64, X, ArgMax, CPU__OP_ARGMAX, cpu__argmax)        \
    CPU__NUMBERS(CPU__E_UNARY, X, ReduceMin, CPU__OP_REDUCEMIN, cpu__reduce)                  \
    CPU__NUMBERS(CPU__E_UNARY, X, ReduceProd, CPU__OP_REDUCEPROD, cpu__reduce)                \
    CPU__NUMBERS(CPU__E_UNARY, X, ReduceL1, CPU__OP_REDUCEL1, cpu__reduce)                    \
    CPU__FLOATS(CPU__E_UNARY, X, ReduceL2, CPU__OP_REDUCEL2, cpu__reduce)                     \
    CPU__FLOATS(CPU__E_UNARY, X, ReduceLogSum, CPU__OP_REDUCELOGSUM, cpu__reduce)             \
    CPU__FLOATS(CPU__E_UNARY, X, ReduceLogSumExp, CPU__OP_REDUCELOGSUMEXP, cpu__reduce)       \
    CPU__NUMBERS(CPU__E_UNARY, X, ReduceSumSquare, CPU__OP_REDUCESUMSQUARE, cpu__reduce)      \
    CPU__NUMBERS(CPU__E_TO_I64, X, ArgMin, CPU__OP_ARGMIN, cpu__argmax)                       \
    CPU__ALL(CPU__E_UNARY, X, Transpose, CPU__OP_TRANSPOSE, cpu__transpose)    \
    CPU__ALL(CPU__E_VARIADIC, X, Concat, CPU__OP_CONCAT, cpu__concat)          \
    CPU__ALL(CPU__E_UNARY, X, Slice, CPU__OP_SLICE, cpu__slice)                \
    CPU__ALL(CPU__E_GATHER, X, Gather, CPU__OP_GATHER, cpu__gather)                           \
    CPU__ALL(CPU__E_GATHER, X, GatherElements, CPU__OP_GATHERELEMENTS, cpu__gather_elements)  \
    CPU__ALL(CPU__E_SCATTER, X, ScatterElements, CPU__OP_SCATTERELEMENTS,                     \
             cpu__scatter_elements)                                                           \
    CPU__ALL(CPU__E_GATHER, X, GatherND, CPU__OP_GATHERND, cpu__gather_nd)                    \
    CPU__ALL(CPU__E_SCATTER, X, ScatterND, CPU__OP_SCATTERND, cpu__scatter_nd)                \
    CPU__NUMBERS(CPU__E_ONE_HOT_FROM, X, OneHot, CPU__OP_ONEHOT, cpu__one_hot)                \
    CPU__ALL(CPU__E_UNARY, X, Trilu, CPU__OP_TRILU, cpu__trilu)                               \
    CPU__NUMBERS(CPU__E_UNARY, X, CumSum, CPU__OP_CUMSUM, cpu__cumsum)                        \
    CPU__FLOATS(CPU__E_UNARY, X, Hardmax, CPU__OP_HARDMAX, cpu__hardmax)                      \
    CPU__ALL(CPU__E_UNARY, X, ExpandLike, CPU__OP_EXPANDLIKE, cpu__expand_like)               \
    CPU__NUMBERS(CPU__E_UNARY, X, ReduceSumLike, CPU__OP_REDUCESUMLIKE, cpu__reduce_sum_like) \
    CPU__ALL(CPU__E_UNARY, X, ScalarLike, CPU__OP_SCALARLIKE, cpu__scalar_like)               \
    CPU__FLOATS(CPU__E_BINARY, X, ReluGrad, CPU__OP_RELUGRAD, cpu__activation_grad)           \
    CPU__FLOATS(CPU__E_BINARY, X, LeakyReluGrad, CPU__OP_LEAKYRELUGRAD, cpu__activation_grad) \
    CPU__FLOATS(CPU__E_BINARY, X, SigmoidGrad, CPU__OP_SIGMOIDGRAD, cpu__activation_grad)     \
    CPU__FLOATS(CPU__E_BINARY, X, TanhGrad, CPU__OP_TANHGRAD, cpu__activation_grad)           \
    CPU__FLOATS(CPU__E_BINARY, X, SoftmaxGrad, CPU__OP_SOFTMAXGRAD, cpu__softmax_grad)        \
    CPU__FLOATS(CPU__E_BINARY, X, LogSoftmaxGrad, CPU__OP_LOGSOFTMAXGRAD, cpu__softmax_grad)  \
    CPU__FLOATS(CPU__E_TERNARY, X, MatMulGrad, CPU__OP_MATMULGRAD, cpu__matmul_grad)          \
    CPU__FLOATS(CPU__E_UNARY, X, ReduceGrad, CPU__OP_REDUCEGRAD, cpu__reduce_grad)            \
    CPU__FLOATS(CPU__E_GATHER, X, GatherGrad, CPU__OP_GATHERGRAD, cpu__gather_grad)           \
    CPU__ALL(CPU__E_UNARY, X, SliceGrad, CPU__OP_SLICEGRAD, cpu__slice_grad)                  \
    CPU__KERNELS_G_ACT(X)

/* group g-act: the activations and their gradients, Sum and Mean, Det, DFT, STFT without and
 * with a window. (The window generators and MelWeightMatrix are general entries.) */
#define CPU__E_WINDOWED(X, Op, CODE, BODY, T)                                              \
    X(Op##W_##T, #Op, #T "," #T "->" #T, BODY, CODE, 2, 0, CPU__DT_##T, CPU__DT_##T, 0, \
      CPU__DT_##T)
/* The activations (op, code), each with a forward entry (cpu__act) and a gradient one (<Op>Grad:
 * dy and x, cpu__act_grad), f32 and f64, forward ones first. */
#define CPU__ACTIVATIONS(E, X)             \
    E(X, Elu, ELU)                         \
    E(X, Selu, SELU)                       \
    E(X, Celu, CELU)                       \
    E(X, HardSigmoid, HARDSIGMOID)         \
    E(X, HardSwish, HARDSWISH)             \
    E(X, ThresholdedRelu, THRESHOLDEDRELU) \
    E(X, Softsign, SOFTSIGN)               \
    E(X, Shrink, SHRINK)                   \
    E(X, Gelu, GELU)                       \
    E(X, Mish, MISH)
#define CPU__E_ACT(X, Op, CODE) CPU__FLOATS(CPU__E_UNARY, X, Op, CPU__OP_##CODE, cpu__act)
#define CPU__E_ACT_GRAD(X, Op, CODE) \
    CPU__FLOATS(CPU__E_BINARY, X, Op##Grad, CPU__OP_##CODE##GRAD, cpu__act_grad)
#define CPU__KERNELS_G_ACT(X)                                                                      \
    CPU__ACTIVATIONS(CPU__E_ACT, X)                                                                \
    CPU__ACTIVATIONS(CPU__E_ACT_GRAD, X)                                                           \
    CPU__FLOATS(CPU__E_VARIADIC, X, Sum, CPU__OP_SUM, cpu__sum_mean)                               \
    CPU__FLOATS(CPU__E_VARIADIC, X, Mean, CPU__OP_MEAN, cpu__sum_mean)                             \
    CPU__FLOATS(CPU__E_UNARY, X, Det, CPU__OP_DET, cpu__det)                                       \
    CPU__FLOATS(CPU__E_UNARY, X, DFT, CPU__OP_DFT, cpu__dft)                                       \
    CPU__FLOATS(CPU__E_UNARY, X, STFT, CPU__OP_STFT, cpu__stft)                                    \
    CPU__FLOATS(CPU__E_WINDOWED, X, STFT, CPU__OP_STFT, cpu__stft)                              \
    /* g-dtypes */                                                                            \
    CPU__BASIC(CPU__E_CAST_TO_NEW, X, Cast, CPU__OP_CAST, cpu__cast)                          \
    CPU__CAST_NEW_FROM(CPU__E_CAST_TO_ALL, X, Cast, CPU__OP_CAST, cpu__cast)                  \
    CPU__SMALL_INTS(CPU__E_BINARY, X, Add, CPU__OP_ADD, cpu__binary)                          \
    CPU__SMALL_INTS(CPU__E_BINARY, X, Sub, CPU__OP_SUB, cpu__binary)                          \
    CPU__SMALL_INTS(CPU__E_BINARY, X, Mul, CPU__OP_MUL, cpu__binary)                          \
    CPU__SMALL_INTS(CPU__E_BINARY, X, Div, CPU__OP_DIV, cpu__binary)                          \
    CPU__DPOW_ENTRIES(X)                                                                      \
    CPU__HALVES(CPU__E_VARIADIC, X, Min, CPU__OP_MIN, cpu__min_max)                           \
    CPU__HALVES(CPU__E_VARIADIC, X, Max, CPU__OP_MAX, cpu__min_max)                           \
    CPU__HALVES(CPU__E_BINARY, X, Mod, CPU__OP_MOD, cpu__binary)                              \
    CPU__ALL_NUMBERS(CPU__E_COMPARE, X, GreaterOrEqual, CPU__OP_GREATEREQUAL, cpu__compare)   \
    CPU__ALL_NUMBERS(CPU__E_COMPARE, X, LessOrEqual, CPU__OP_LESSEQUAL, cpu__compare)

/*
 * Which families prepare per-node state in create: the elementwise ones, whose work on small
 * tensors is so cheap that checking a launch from scratch would be most of its cost, and MatMul
 * and Gemm, whose f32 state also keeps oneDNN's matmul for constant weights (cpu_matmul.c). For each
 * body, CPU__PREP(BODY, P, N, id) is P(id) when its entries prepare and N(id) when they do not.
 */
#define CPU__PREP(BODY, P, N, id) CPU__PREP_##BODY(P, N, id)
#define CPU__PREP_cpu__binary(P, N, id) P(id)
#define CPU__PREP_cpu__compare(P, N, id) P(id)
#define CPU__PREP_cpu__where(P, N, id) P(id)
#define CPU__PREP_cpu__unary(P, N, id) P(id)
#define CPU__PREP_cpu__min_max(P, N, id) N(id)
#define CPU__PREP_cpu__cast(P, N, id) P(id)
#define CPU__PREP_cpu__copy(P, N, id) N(id)
#define CPU__PREP_cpu__matmul(P, N, id) P(id)
#define CPU__PREP_cpu__gemm(P, N, id) P(id)
#define CPU__PREP_cpu__reduce(P, N, id) N(id)
#define CPU__PREP_cpu__softmax(P, N, id) N(id)
#define CPU__PREP_cpu__argmax(P, N, id) N(id)
#define CPU__PREP_cpu__transpose(P, N, id) N(id)
#define CPU__PREP_cpu__concat(P, N, id) N(id)
#define CPU__PREP_cpu__slice(P, N, id) N(id)
#define CPU__PREP_cpu__gather(P, N, id) N(id)
#define CPU__PREP_cpu__gather_elements(P, N, id) N(id)
#define CPU__PREP_cpu__scatter_elements(P, N, id) N(id)
#define CPU__PREP_cpu__gather_nd(P, N, id) N(id)
#define CPU__PREP_cpu__scatter_nd(P, N, id) N(id)
#define CPU__PREP_cpu__one_hot(P, N, id) N(id)
#define CPU__PREP_cpu__trilu(P, N, id) N(id)
#define CPU__PREP_cpu__cumsum(P, N, id) N(id)
#define CPU__PREP_cpu__hardmax(P, N, id) N(id)
#define CPU__PREP_cpu__expand_like(P, N, id) N(id)
#define CPU__PREP_cpu__reduce_sum_like(P, N, id) N(id)
#define CPU__PREP_cpu__scalar_like(P, N, id) N(id)
#define CPU__PREP_cpu__activation_grad(P, N, id) N(id)
#define CPU__PREP_cpu__softmax_grad(P, N, id) N(id)
#define CPU__PREP_cpu__matmul_grad(P, N, id) N(id)
#define CPU__PREP_cpu__reduce_grad(P, N, id) N(id)
#define CPU__PREP_cpu__gather_grad(P, N, id) N(id)
#define CPU__PREP_cpu__slice_grad(P, N, id) N(id)
/* group g-act */
#define CPU__PREP_cpu__act(P, N, id) P(id)
#define CPU__PREP_cpu__act_grad(P, N, id) N(id)
#define CPU__PREP_cpu__sum_mean(P, N, id) N(id)
#define CPU__PREP_cpu__det(P, N, id) N(id)
#define CPU__PREP_cpu__dft(P, N, id) N(id)
#define CPU__PREP_cpu__stft(P, N, id) N(id)

#define CPU__NOTHING(id)
#define CPU__NULL(id) NULL
#define CPU__DEFINE_CREATE(id)                                                            \
    static int32_t cpu__create_##id(ses_drv_device_t *device, const ses_drv_node_t *node, \
                                    void **out_state) {                                   \
        return cpu__create(device, node, &cpu__spec_##id, out_state);                     \
    }
#define CPU__CREATE_OF(id) cpu__create_##id
#define CPU__DESTROY_OF(id) cpu__destroy

/* First expansion: each entry's spec, compute function and, where it prepares, create. */
#define CPU__DEFINE(id, OP, SIG, BODY, CODE, N_IN, VARIADIC, IN0, IN1, IN2, OUT) \
    static const cpu__spec_t cpu__spec_##id = {                                  \
        .op = OP,                                                                \
        .signature = SIG,                                                        \
        .body = BODY,                                                            \
        .code = CODE,                                                            \
        .n_inputs = N_IN,                                                        \
        .variadic = VARIADIC,                                                    \
        .in = {IN0, IN1, IN2},                                                   \
        .out = OUT,                                                              \
    };                                                                           \
    static int32_t cpu__compute_##id(ses_drv_device_t *device, void *state,      \
                                     const ses_drv_launch_t *launch) {           \
        return cpu__run_prepared(device, state, launch, &cpu__spec_##id);        \
    }                                                                            \
    static uint64_t cpu__reuse_##id(ses_drv_device_t *device,                    \
                                    const ses_drv_node_t *node, uint32_t output) {  \
        return cpu__reuse_by_rule(device, node, output, &cpu__spec_##id);        \
    }                                                                            \
    CPU__PREP(BODY, CPU__DEFINE_CREATE, CPU__NOTHING, id)

CPU__KERNELS(CPU__DEFINE)

/*
 * General entries, of any number of inputs (up to CPU__GENERAL_MAX_INPUTS) and outputs (0 to
 * CPU__MAX_OUTPUTS), checked by cpu__run_general: the training ops and the CNN ops. Only Conv
 * and FusedGemm have per-node state (CPU__GSTATE below), handed to the body as call->state.
 * Every entry is G(id, op, signature, body, code, inplace, n_inputs, (input dtypes),
 * n_outputs, out0, out1), with the input dtypes in parentheses, unused output slots 0, and
 * inplace the inputs the kernel writes (bit i: input i). An entry without outputs has a
 * signature that ends in its arrow, "f32,f32,f32->".
 */
/* SoftmaxCrossEntropyLoss at scores T and labels L, without and with weights, each giving the
 * loss alone or the loss and log_prob; its gradient without and with weights. */
#define CPU__G_SCE(G, T, L)                                                                       \
    G(SceLoss_##T##_##L, "SoftmaxCrossEntropyLoss", #T "," #L "->" #T, cpu__sce_loss,             \
      CPU__OP_SCE_LOSS, 0, 2, (CPU__DT_##T, CPU__DT_##L), 1, CPU__DT_##T, 0)                      \
    G(SceLoss2_##T##_##L, "SoftmaxCrossEntropyLoss", #T "," #L "->" #T "," #T, cpu__sce_loss,     \
      CPU__OP_SCE_LOSS, 0, 2, (CPU__DT_##T, CPU__DT_##L), 2, CPU__DT_##T, CPU__DT_##T)            \
    G(SceLossW_##T##_##L, "SoftmaxCrossEntropyLoss", #T "," #L "," #T "->" #T, cpu__sce_loss,     \
      CPU__OP_SCE_LOSS, 0, 3, (CPU__DT_##T, CPU__DT_##L, CPU__DT_##T), 1, CPU__DT_##T, 0)         \
    G(SceLossW2_##T##_##L, "SoftmaxCrossEntropyLoss", #T "," #L "," #T "->" #T "," #T,            \
      cpu__sce_loss, CPU__OP_SCE_LOSS, 0, 3, (CPU__DT_##T, CPU__DT_##L, CPU__DT_##T), 2,          \
      CPU__DT_##T, CPU__DT_##T)                                                                   \
    G(SceGrad_##T##_##L, "SoftmaxCrossEntropyLossGrad", #T "," #T "," #L "->" #T, cpu__sce_grad,  \
      CPU__OP_SCE_GRAD, 0, 3, (CPU__DT_##T, CPU__DT_##T, CPU__DT_##L), 1, CPU__DT_##T, 0)         \
    G(SceGradW_##T##_##L, "SoftmaxCrossEntropyLossGrad", #T "," #T "," #L "," #T "->" #T,         \
      cpu__sce_grad, CPU__OP_SCE_GRAD, 0, 4, (CPU__DT_##T, CPU__DT_##T, CPU__DT_##L, CPU__DT_##T), \
      1, CPU__DT_##T, 0)
#define CPU__G_SCE_LABELS(G, T) CPU__G_SCE(G, T, i32) CPU__G_SCE(G, T, i64)
/* NegativeLogLikelihoodLoss at input T and target L, without and with weights, and its gradient
 * (dloss, input, target[, weight]); the SoftmaxCrossEntropyLoss bodies, told apart by the code. */
#define CPU__G_NLL(G, T, L)                                                                        \
    G(NllLoss_##T##_##L, "NegativeLogLikelihoodLoss", #T "," #L "->" #T, cpu__sce_loss,            \
      CPU__OP_NLL_LOSS, 0, 2, (CPU__DT_##T, CPU__DT_##L), 1, CPU__DT_##T, 0)                       \
    G(NllLossW_##T##_##L, "NegativeLogLikelihoodLoss", #T "," #L "," #T "->" #T, cpu__sce_loss,    \
      CPU__OP_NLL_LOSS, 0, 3, (CPU__DT_##T, CPU__DT_##L, CPU__DT_##T), 1, CPU__DT_##T, 0)          \
    G(NllGrad_##T##_##L, "NegativeLogLikelihoodLossGrad", #T "," #T "," #L "->" #T, cpu__sce_grad, \
      CPU__OP_NLL_GRAD, 0, 3, (CPU__DT_##T, CPU__DT_##T, CPU__DT_##L), 1, CPU__DT_##T, 0)          \
    G(NllGradW_##T##_##L, "NegativeLogLikelihoodLossGrad", #T "," #T "," #L "," #T "->" #T,        \
      cpu__sce_grad, CPU__OP_NLL_GRAD, 0, 4, (CPU__DT_##T, CPU__DT_##T, CPU__DT_##L, CPU__DT_##T), \
      1, CPU__DT_##T, 0)
#define CPU__G_NLL_LABELS(G, T) CPU__G_NLL(G, T, i32) CPU__G_NLL(G, T, i64)
/* The optimizers: no outputs; var (input 0) and the optimizer's state are written in place. */
#define CPU__G_OPTIMIZERS(G, T)                                                                   \
    G(SGD_##T, "SGD", #T "," #T "," #T "->", cpu__optimizer, CPU__OP_SGD, 0x1, 3,                 \
      (CPU__DT_##T, CPU__DT_##T, CPU__DT_##T), 0, 0, 0)                                           \
    G(Momentum_##T, "Momentum", #T "," #T "," #T "," #T "->", cpu__optimizer, CPU__OP_MOMENTUM,   \
      0x9, 4, (CPU__DT_##T, CPU__DT_##T, CPU__DT_##T, CPU__DT_##T), 0, 0, 0)                      \
    G(Adam_##T, "Adam", #T "," #T "," #T "," #T "," #T "," #T "->", cpu__optimizer, CPU__OP_ADAM, \
      0x39, 6, (CPU__DT_##T, CPU__DT_##T, CPU__DT_##T, CPU__DT_##T, CPU__DT_##T, CPU__DT_##T), 0, \
      0, 0)

/* The CNN ops (cpu_cnn.c) at a float dtype T. */
#define CPU__T1(T) (CPU__DT_##T)
#define CPU__T2(T) (CPU__DT_##T, CPU__DT_##T)
#define CPU__T3(T) (CPU__DT_##T, CPU__DT_##T, CPU__DT_##T)
/* LayerNormalization with X, Scale[, B], giving Y[, Mean[, InvStdDev]] (all of dtype T), and
 * its gradient (dY, X, Scale; input 0 gives dX, 1 dScale). */
#define CPU__LN_SIG1(T) #T
#define CPU__LN_SIG2(T) #T "," #T
#define CPU__LN_SIG3(T) #T "," #T "," #T
#define CPU__LN_REST1(T) 0
#define CPU__LN_REST2(T) CPU__DT_##T
#define CPU__LN_REST3(T) CPU__DT_##T, CPU__DT_##T
#define CPU__G_LAYER_NORM_OUT(G, T, K)                                                            \
    G(LayerNorm##K##_##T, "LayerNormalization", CPU__LN_SIG2(T) "->" CPU__LN_SIG##K(T),           \
      cpu__layer_norm, CPU__OP_LAYERNORM, 0, 2, CPU__T2(T), K, CPU__DT_##T, CPU__LN_REST##K(T))   \
    G(LayerNormB##K##_##T, "LayerNormalization", CPU__LN_SIG3(T) "->" CPU__LN_SIG##K(T),          \
      cpu__layer_norm, CPU__OP_LAYERNORM, 0, 3, CPU__T3(T), K, CPU__DT_##T, CPU__LN_REST##K(T))
#define CPU__G_LAYER_NORM(G, T)                                                                   \
    CPU__G_LAYER_NORM_OUT(G, T, 1) CPU__G_LAYER_NORM_OUT(G, T, 2) CPU__G_LAYER_NORM_OUT(G, T, 3)  \
    G(LayerNormGrad_##T, "LayerNormalizationGrad", CPU__LN_SIG3(T) "->" #T, cpu__layer_norm_grad, \
      CPU__OP_LAYERNORMGRAD, 0, 3, CPU__T3(T), 1, CPU__DT_##T, 0)
#define CPU__G_CNN_FLOAT(G, T)                                                                    \
    G(Conv_##T, "Conv", #T "," #T "->" #T, cpu__conv, CPU__OP_CONV, 0, 2, CPU__T2(T), 1,          \
      CPU__DT_##T, 0)                                                                             \
    G(ConvB_##T, "Conv", #T "," #T "," #T "->" #T, cpu__conv, CPU__OP_CONV, 0, 3, CPU__T3(T), 1,  \
      CPU__DT_##T, 0)                                                                             \
    G(ConvGrad_##T, "ConvGrad", #T "," #T "," #T "->" #T, cpu__conv_grad, CPU__OP_CONVGRAD, 0, 3, \
      CPU__T3(T), 1, CPU__DT_##T, 0)                                                              \
    G(MaxPool_##T, "MaxPool", #T "->" #T, cpu__pool, CPU__OP_MAXPOOL, 0, 1, CPU__T1(T), 1,        \
      CPU__DT_##T, 0)                                                                             \
    G(AveragePool_##T, "AveragePool", #T "->" #T, cpu__pool, CPU__OP_AVGPOOL, 0, 1, CPU__T1(T),   \
      1, CPU__DT_##T, 0)                                                                          \
    G(MaxPoolGrad_##T, "MaxPoolGrad", #T "," #T "->" #T, cpu__pool, CPU__OP_MAXPOOLGRAD, 0, 2,    \
      CPU__T2(T), 1, CPU__DT_##T, 0)                                                              \
    G(AveragePoolGrad_##T, "AveragePoolGrad", #T "->" #T, cpu__pool, CPU__OP_AVGPOOLGRAD, 0, 1,   \
      CPU__T1(T), 1, CPU__DT_##T, 0)                                                              \
    G(BatchNorm_##T, "BatchNormalization", #T "," #T "," #T "," #T "," #T "->" #T,                \
      cpu__batch_norm, CPU__OP_BATCHNORM, 0, 5,                                                   \
      (CPU__DT_##T, CPU__DT_##T, CPU__DT_##T, CPU__DT_##T, CPU__DT_##T), 1, CPU__DT_##T, 0)       \
    G(Dropout_##T, "Dropout", #T "->" #T ",bool", cpu__dropout, CPU__OP_DROPOUT, 0, 1,            \
      CPU__T1(T), 2, CPU__DT_##T, SES_DRV_DTYPE_BOOL)                                             \
    G(PadGrad_##T, "PadGrad", #T "->" #T, cpu__pad_grad, CPU__OP_PADGRAD, 0, 1, CPU__T1(T), 1,    \
      CPU__DT_##T, 0)                                                                             \
    CPU__G_LAYER_NORM(G, T)
/* Split into K outputs: the signature's output list, and the output dtypes after the first
 * (a list the spec's initializer takes as it is). */
#define CPU__SPLIT_SIG1(T) #T
#define CPU__SPLIT_SIG2(T) CPU__SPLIT_SIG1(T) "," #T
#define CPU__SPLIT_SIG3(T) CPU__SPLIT_SIG2(T) "," #T
#define CPU__SPLIT_SIG4(T) CPU__SPLIT_SIG3(T) "," #T
#define CPU__SPLIT_SIG5(T) CPU__SPLIT_SIG4(T) "," #T
#define CPU__SPLIT_SIG6(T) CPU__SPLIT_SIG5(T) "," #T
#define CPU__SPLIT_SIG7(T) CPU__SPLIT_SIG6(T) "," #T
#define CPU__SPLIT_SIG8(T) CPU__SPLIT_SIG7(T) "," #T
#define CPU__SPLIT_REST1(T) 0
#define CPU__SPLIT_REST2(T) CPU__DT_##T
#define CPU__SPLIT_REST3(T) CPU__SPLIT_REST2(T), CPU__DT_##T
#define CPU__SPLIT_REST4(T) CPU__SPLIT_REST3(T), CPU__DT_##T
#define CPU__SPLIT_REST5(T) CPU__SPLIT_REST4(T), CPU__DT_##T
#define CPU__SPLIT_REST6(T) CPU__SPLIT_REST5(T), CPU__DT_##T
#define CPU__SPLIT_REST7(T) CPU__SPLIT_REST6(T), CPU__DT_##T
#define CPU__SPLIT_REST8(T) CPU__SPLIT_REST7(T), CPU__DT_##T
#define CPU__G_SPLIT(G, T, K)                                                                     \
    G(Split##K##_##T, "Split", #T "->" CPU__SPLIT_SIG##K(T), cpu__split, CPU__OP_SPLIT, 0, 1,     \
      CPU__T1(T), K, CPU__DT_##T, CPU__SPLIT_REST##K(T))
/* The CNN ops at a number dtype T. */
#define CPU__G_CNN_NUMBER(G, T)                                                                   \
    G(Pad_##T, "Pad", #T "->" #T, cpu__pad, CPU__OP_PAD, 0, 1, CPU__T1(T), 1, CPU__DT_##T, 0)     \
    G(PadC_##T, "Pad", #T "," #T "->" #T, cpu__pad, CPU__OP_PAD, 0, 2, CPU__T2(T), 1,             \
      CPU__DT_##T, 0)                                                                             \
    G(Clip_##T, "Clip", #T "->" #T, cpu__clip, CPU__OP_CLIP, 0, 1, CPU__T1(T), 1, CPU__DT_##T, 0) \
    G(Clip1_##T, "Clip", #T "," #T "->" #T, cpu__clip, CPU__OP_CLIP, 0, 2, CPU__T2(T), 1,         \
      CPU__DT_##T, 0)                                                                             \
    G(Clip2_##T, "Clip", #T "," #T "," #T "->" #T, cpu__clip, CPU__OP_CLIP, 0, 3, CPU__T3(T), 1,  \
      CPU__DT_##T, 0)                                                                             \
    G(Range_##T, "Range", #T "," #T "," #T "->" #T, cpu__range, CPU__OP_RANGE, 0, 3, CPU__T3(T),  \
      1, CPU__DT_##T, 0)                                                                          \
    G(ConstantOfShape_##T, "ConstantOfShape", "i64->" #T, cpu__constant_of_shape,                 \
      CPU__OP_CONSTANTOFSHAPE, 0, 1, (SES_DRV_DTYPE_I64), 1, CPU__DT_##T, 0)                      \
    CPU__G_SPLIT(G, T, 1) CPU__G_SPLIT(G, T, 2) CPU__G_SPLIT(G, T, 3) CPU__G_SPLIT(G, T, 4)       \
    CPU__G_SPLIT(G, T, 5) CPU__G_SPLIT(G, T, 6) CPU__G_SPLIT(G, T, 7) CPU__G_SPLIT(G, T, 8)
/* The fused ops at a float dtype T (cpu_fused.c): FusedConv with X, W, then B and Z when given
 * (has_bias, has_z tell a 3-input node's third apart); FusedGemm with or without C. Their
 * entries have a supports_node (cpu__fused_supports). */
#define CPU__T4(T) (CPU__DT_##T, CPU__DT_##T, CPU__DT_##T, CPU__DT_##T)
#define CPU__G_FUSED(G, T)                                                                        \
    G(FusedConv_##T, "FusedConv", #T "," #T "->" #T, cpu__fused_conv, CPU__OP_FUSEDCONV, 0, 2,    \
      CPU__T2(T), 1, CPU__DT_##T, 0)                                                              \
    G(FusedConv3_##T, "FusedConv", #T "," #T "," #T "->" #T, cpu__fused_conv, CPU__OP_FUSEDCONV,  \
      0, 3, CPU__T3(T), 1, CPU__DT_##T, 0)                                                        \
    G(FusedConv4_##T, "FusedConv", #T "," #T "," #T "," #T "->" #T, cpu__fused_conv,              \
      CPU__OP_FUSEDCONV, 0, 4, CPU__T4(T), 1, CPU__DT_##T, 0)                                     \
    G(FusedGemm_##T, "FusedGemm", #T "," #T "->" #T, cpu__fused_gemm, CPU__OP_FUSEDGEMM, 0, 2,    \
      CPU__T2(T), 1, CPU__DT_##T, 0)                                                              \
    G(FusedGemmC_##T, "FusedGemm", #T "," #T "," #T "->" #T, cpu__fused_gemm, CPU__OP_FUSEDGEMM,  \
      0, 3, CPU__T3(T), 1, CPU__DT_##T, 0)
#define CPU__G_SHAPE(G, T)                                                                        \
    G(Shape_##T, "Shape", #T "->i64", cpu__shape, CPU__OP_SHAPE, 0, 1, CPU__T1(T), 1,             \
      SES_DRV_DTYPE_I64, 0)                                                                       \
    G(Size_##T, "Size", #T "->i64", cpu__size, CPU__OP_SIZE, 0, 1, CPU__T1(T), 1,                 \
      SES_DRV_DTYPE_I64, 0)

/* The NCHWc16 ops at f32 (cpu_nchwc.c; NchwcConv's body in cpu_cnn.c): X [N, C/16, H, W, 16]
 * (NchwcConv's X may also be plain [N, C, H, W]), NchwcConv with B and Z as FusedConv. Their
 * entries have a supports_node (cpu__nchwc_supports). */
#define CPU__G_NCHWC(G, T)                                                                        \
    G(NchwcConv_##T, "NchwcConv", #T "," #T "->" #T, cpu__nchwc_conv, CPU__OP_NCHWC_CONV, 0, 2,   \
      CPU__T2(T), 1, CPU__DT_##T, 0)                                                              \
    G(NchwcConv3_##T, "NchwcConv", #T "," #T "," #T "->" #T, cpu__nchwc_conv,                     \
      CPU__OP_NCHWC_CONV, 0, 3, CPU__T3(T), 1, CPU__DT_##T, 0)                                    \
    G(NchwcConv4_##T, "NchwcConv", #T "," #T "," #T "," #T "->" #T, cpu__nchwc_conv,              \
      CPU__OP_NCHWC_CONV, 0, 4, CPU__T4(T), 1, CPU__DT_##T, 0)                                    \
    G(NchwcMaxPool_##T, "NchwcMaxPool", #T "->" #T, cpu__nchwc_pool, CPU__OP_NCHWC_MAXPOOL, 0, 1, \
      CPU__T1(T), 1, CPU__DT_##T, 0)                                                              \
    G(NchwcAveragePool_##T, "NchwcAveragePool", #T "->" #T, cpu__nchwc_pool,                      \
      CPU__OP_NCHWC_AVGPOOL, 0, 1, CPU__T1(T), 1, CPU__DT_##T, 0)                                 \
    G(NchwcGlobalAveragePool_##T, "NchwcGlobalAveragePool", #T "->" #T, cpu__nchwc_global_pool,   \
      CPU__OP_NCHWC_GLOBALAVGPOOL, 0, 1, CPU__T1(T), 1, CPU__DT_##T, 0)                           \
    G(NchwcGlobalMaxPool_##T, "NchwcGlobalMaxPool", #T "->" #T, cpu__nchwc_global_pool,           \
      CPU__OP_NCHWC_GLOBALMAXPOOL, 0, 1, CPU__T1(T), 1, CPU__DT_##T, 0)                           \
    G(NchwcReorderOutput_##T, "NchwcReorderOutput", #T "->" #T, cpu__nchwc_reorder_output,        \
      CPU__OP_NCHWC_REORDER_OUTPUT, 0, 1, CPU__T1(T), 1, CPU__DT_##T, 0)

/* g-rnnq: the recurrent layers (cpu_rnn.c) at a float dtype T. The kernel gets the inputs given
 * (attribute inputs says which), so an entry per list of input dtypes: X, W, R, then B,
 * initial_h, initial_c, P (T) and sequence_lens (i32) in ONNX's order; outputs Y, Y_h[, Y_c]
 * (1 to 3). Signature heads: Nt is N inputs of T, NsM is N of T, i32, then M of T. */
#define CPU__RS3(T) #T "," #T "," #T
#define CPU__RS4(T) CPU__RS3(T) "," #T
#define CPU__RS5(T) CPU__RS4(T) "," #T
#define CPU__RS6(T) CPU__RS5(T) "," #T
#define CPU__RS7(T) CPU__RS6(T) "," #T
#define CPU__RD3(T) CPU__DT_##T, CPU__DT_##T, CPU__DT_##T
#define CPU__RD4(T) CPU__RD3(T), CPU__DT_##T
#define CPU__RD5(T) CPU__RD4(T), CPU__DT_##T
#define CPU__RD6(T) CPU__RD5(T), CPU__DT_##T
#define CPU__RD7(T) CPU__RD6(T), CPU__DT_##T
#define CPU__RNN_G(G, Op, CODE, ID, T, SIG, N, INS, K)                                          \
    G(Op##ID##_##K##_##T, #Op, SIG "->" CPU__SPLIT_SIG##K(T), cpu__rnn, CODE, 0, N, INS, K,     \
      CPU__DT_##T, CPU__SPLIT_REST##K(T))
/* One input list with each output count up to K. */
#define CPU__RNN_O2(G, Op, CODE, ID, T, SIG, N, INS) \
    CPU__RNN_G(G, Op, CODE, ID, T, SIG, N, INS, 1) CPU__RNN_G(G, Op, CODE, ID, T, SIG, N, INS, 2)
#define CPU__RNN_O3(G, Op, CODE, ID, T, SIG, N, INS) \
    CPU__RNN_O2(G, Op, CODE, ID, T, SIG, N, INS) CPU__RNN_G(G, Op, CODE, ID, T, SIG, N, INS, 3)
#define CPU__RNN_I32 SES_DRV_DTYPE_I32
/* The input lists of RNN and GRU (up to 6 inputs), then LSTM's further ones (up to 8). */
#define CPU__RNN_FORMS6(O, G, Op, CODE, T)                                                      \
    O(G, Op, CODE, 3t, T, CPU__RS3(T), 3, (CPU__RD3(T)))                                        \
    O(G, Op, CODE, 4t, T, CPU__RS4(T), 4, (CPU__RD4(T)))                                        \
    O(G, Op, CODE, 5t, T, CPU__RS5(T), 5, (CPU__RD5(T)))                                        \
    O(G, Op, CODE, 3s0, T, CPU__RS3(T) ",i32", 4, (CPU__RD3(T), CPU__RNN_I32))                  \
    O(G, Op, CODE, 4s0, T, CPU__RS4(T) ",i32", 5, (CPU__RD4(T), CPU__RNN_I32))                  \
    O(G, Op, CODE, 3s1, T, CPU__RS3(T) ",i32," #T, 5, (CPU__RD3(T), CPU__RNN_I32, CPU__DT_##T)) \
    O(G, Op, CODE, 4s1, T, CPU__RS4(T) ",i32," #T, 6, (CPU__RD4(T), CPU__RNN_I32, CPU__DT_##T))
#define CPU__RNN_FORMS8(O, G, Op, CODE, T)                                                      \
    CPU__RNN_FORMS6(O, G, Op, CODE, T)                                                          \
    O(G, Op, CODE, 6t, T, CPU__RS6(T), 6, (CPU__RD6(T)))                                        \
    O(G, Op, CODE, 7t, T, CPU__RS7(T), 7, (CPU__RD7(T)))                                        \
    O(G, Op, CODE, 3s2, T, CPU__RS3(T) ",i32," #T "," #T, 6,                                     \
      (CPU__RD3(T), CPU__RNN_I32, CPU__DT_##T, CPU__DT_##T))                                    \
    O(G, Op, CODE, 4s2, T, CPU__RS4(T) ",i32," #T "," #T, 7,                                     \
      (CPU__RD4(T), CPU__RNN_I32, CPU__DT_##T, CPU__DT_##T))                                    \
    O(G, Op, CODE, 3s3, T, CPU__RS3(T) ",i32," #T "," #T "," #T, 7,                              \
      (CPU__RD3(T), CPU__RNN_I32, CPU__DT_##T, CPU__DT_##T, CPU__DT_##T))                       \
    O(G, Op, CODE, 4s3, T, CPU__RS4(T) ",i32," #T "," #T "," #T, 8,                              \
      (CPU__RD4(T), CPU__RNN_I32, CPU__DT_##T, CPU__DT_##T, CPU__DT_##T))
#define CPU__G_RNN(G, T)                                        \
    CPU__RNN_FORMS6(CPU__RNN_O2, G, RNN, CPU__OP_RNN, T)        \
    CPU__RNN_FORMS6(CPU__RNN_O2, G, GRU, CPU__OP_GRU, T)        \
    CPU__RNN_FORMS8(CPU__RNN_O3, G, LSTM, CPU__OP_LSTM, T)
/* g-rnnq: linear quantization (cpu_quant.c). QuantizeLinear to integer Y, without and with
 * its zero point; DequantizeLinear from integer X; MatMulInteger and ConvInteger of A and B
 * with the zero points given (has_a_zp, has_b_zp tell a 3-input node's third apart); the
 * QLinear ops of a, b and y (all f32 scales). */
#define CPU__G_QUANT_TO(G, Y)                                                                     \
    G(Quantize_##Y, "QuantizeLinear", "f32,f32->" #Y, cpu__quantize, CPU__OP_QUANTIZE, 0, 2,      \
      (SES_DRV_DTYPE_F32, SES_DRV_DTYPE_F32), 1, CPU__DT_##Y, 0)                                  \
    G(QuantizeZ_##Y, "QuantizeLinear", "f32,f32," #Y "->" #Y, cpu__quantize, CPU__OP_QUANTIZE, 0, \
      3, (SES_DRV_DTYPE_F32, SES_DRV_DTYPE_F32, CPU__DT_##Y), 1, CPU__DT_##Y, 0)
#define CPU__G_DEQUANT_FROM(G, X)                                                                 \
    G(Dequantize_##X, "DequantizeLinear", #X ",f32->f32", cpu__quantize, CPU__OP_DEQUANTIZE, 0,   \
      2, (CPU__DT_##X, SES_DRV_DTYPE_F32), 1, SES_DRV_DTYPE_F32, 0)                               \
    G(DequantizeZ_##X, "DequantizeLinear", #X ",f32," #X "->f32", cpu__quantize,                  \
      CPU__OP_DEQUANTIZE, 0, 3, (CPU__DT_##X, SES_DRV_DTYPE_F32, CPU__DT_##X), 1,                 \
      SES_DRV_DTYPE_F32, 0)
#define CPU__G_INT_PRODUCT(G, Op, CODE, A, B)                                                     \
    G(Op##_##A##_##B, #Op, #A "," #B "->i32", cpu__matmul_integer, CODE, 0, 2,                    \
      (CPU__DT_##A, CPU__DT_##B), 1, SES_DRV_DTYPE_I32, 0)                                        \
    G(Op##Za_##A##_##B, #Op, #A "," #B "," #A "->i32", cpu__matmul_integer, CODE, 0, 3,           \
      (CPU__DT_##A, CPU__DT_##B, CPU__DT_##A), 1, SES_DRV_DTYPE_I32, 0)                           \
    G(Op##Zab_##A##_##B, #Op, #A "," #B "," #A "," #B "->i32", cpu__matmul_integer, CODE, 0, 4,   \
      (CPU__DT_##A, CPU__DT_##B, CPU__DT_##A, CPU__DT_##B), 1, SES_DRV_DTYPE_I32, 0)
/* b's zero point alone, where its dtype tells it apart from a's (A differs from B). */
#define CPU__G_INT_PRODUCT_ZB(G, Op, CODE, A, B)                                                  \
    G(Op##Zb_##A##_##B, #Op, #A "," #B "," #B "->i32", cpu__matmul_integer, CODE, 0, 3,           \
      (CPU__DT_##A, CPU__DT_##B, CPU__DT_##B), 1, SES_DRV_DTYPE_I32, 0)
#define CPU__G_INT_PRODUCTS(G, Op, CODE)                                                          \
    CPU__G_INT_PRODUCT(G, Op, CODE, u8, u8) CPU__G_INT_PRODUCT(G, Op, CODE, i8, i8)               \
    CPU__G_INT_PRODUCT(G, Op, CODE, u8, i8) CPU__G_INT_PRODUCT(G, Op, CODE, i8, u8)               \
    CPU__G_INT_PRODUCT_ZB(G, Op, CODE, u8, i8) CPU__G_INT_PRODUCT_ZB(G, Op, CODE, i8, u8)
#define CPU__QL_F32 SES_DRV_DTYPE_F32
/* DynamicQuantizeLinear's outputs after y: y_scale and y_zero_point. */
#define CPU__DQ_REST3 SES_DRV_DTYPE_F32, SES_DRV_DTYPE_U8
#define CPU__G_QLINEAR(G, A, B, Y)                                                                \
    G(QLinearMatMul_##A##_##B##_##Y, "QLinearMatMul",                                             \
      #A ",f32," #A "," #B ",f32," #B ",f32," #Y "->" #Y, cpu__qlinear, CPU__OP_QLINEARMATMUL, 0, \
      8,                                                                                          \
      (CPU__DT_##A, CPU__QL_F32, CPU__DT_##A, CPU__DT_##B, CPU__QL_F32, CPU__DT_##B, CPU__QL_F32, \
       CPU__DT_##Y),                                                                              \
      1, CPU__DT_##Y, 0)                                                                          \
    G(QLinearConv_##A##_##B##_##Y, "QLinearConv",                                                 \
      #A ",f32," #A "," #B ",f32," #B ",f32," #Y "->" #Y, cpu__qlinear, CPU__OP_QLINEARCONV, 0,   \
      8,                                                                                          \
      (CPU__DT_##A, CPU__QL_F32, CPU__DT_##A, CPU__DT_##B, CPU__QL_F32, CPU__DT_##B, CPU__QL_F32, \
       CPU__DT_##Y),                                                                              \
      1, CPU__DT_##Y, 0)                                                                          \
    G(QLinearConvB_##A##_##B##_##Y, "QLinearConv",                                                \
      #A ",f32," #A "," #B ",f32," #B ",f32," #Y ",i32->" #Y, cpu__qlinear, CPU__OP_QLINEARCONV,  \
      0, 9,                                                                                       \
      (CPU__DT_##A, CPU__QL_F32, CPU__DT_##A, CPU__DT_##B, CPU__QL_F32, CPU__DT_##B, CPU__QL_F32, \
       CPU__DT_##Y, SES_DRV_DTYPE_I32),                                                           \
      1, CPU__DT_##Y, 0)
#define CPU__G_QLINEAR_Y(G, A, B) CPU__G_QLINEAR(G, A, B, u8) CPU__G_QLINEAR(G, A, B, i8)
#define CPU__G_QUANT(G)                                                                           \
    CPU__G_QUANT_TO(G, u8) CPU__G_QUANT_TO(G, i8) CPU__G_QUANT_TO(G, u16)                         \
    CPU__G_QUANT_TO(G, i16) CPU__G_DEQUANT_FROM(G, u8) CPU__G_DEQUANT_FROM(G, i8)                 \
    CPU__G_DEQUANT_FROM(G, u16) CPU__G_DEQUANT_FROM(G, i16) CPU__G_DEQUANT_FROM(G, i32)           \
    G(DynamicQuantize1, "DynamicQuantizeLinear", "f32->u8", cpu__dynamic_quantize,                \
      CPU__OP_DYNAMICQUANTIZE, 0, 1, (SES_DRV_DTYPE_F32), 1, SES_DRV_DTYPE_U8, 0)                 \
    G(DynamicQuantize2, "DynamicQuantizeLinear", "f32->u8,f32", cpu__dynamic_quantize,            \
      CPU__OP_DYNAMICQUANTIZE, 0, 1, (SES_DRV_DTYPE_F32), 2, SES_DRV_DTYPE_U8, SES_DRV_DTYPE_F32) \
    G(DynamicQuantize3, "DynamicQuantizeLinear", "f32->u8,f32,u8", cpu__dynamic_quantize,         \
      CPU__OP_DYNAMICQUANTIZE, 0, 1, (SES_DRV_DTYPE_F32), 3, SES_DRV_DTYPE_U8, CPU__DQ_REST3)     \
    CPU__G_INT_PRODUCTS(G, MatMulInteger, CPU__OP_MATMULINTEGER)                                  \
    CPU__G_INT_PRODUCTS(G, ConvInteger, CPU__OP_CONVINTEGER)                                      \
    CPU__G_QLINEAR_Y(G, u8, u8) CPU__G_QLINEAR_Y(G, u8, i8) CPU__G_QLINEAR_Y(G, i8, u8)           \
    CPU__G_QLINEAR_Y(G, i8, i8)
/* g-convfam: ConvTranspose (cpu_conv_transpose.c) at a float dtype T, without and with B. */
#define CPU__G_CONVFAM_FLOAT(G, T)                                                                \
    G(ConvTranspose_##T, "ConvTranspose", #T "," #T "->" #T, cpu__conv_transpose,                 \
      CPU__OP_CONVTRANSPOSE, 0, 2, CPU__T2(T), 1, CPU__DT_##T, 0)                                 \
    G(ConvTransposeB_##T, "ConvTranspose", #T "," #T "," #T "->" #T, cpu__conv_transpose,         \
      CPU__OP_CONVTRANSPOSE, 0, 3, CPU__T3(T), 1, CPU__DT_##T, 0)                                 \
    G(MaxUnpool_##T, "MaxUnpool", #T ",i64->" #T, cpu__max_unpool, CPU__OP_MAXUNPOOL, 0, 2,       \
      (CPU__DT_##T, SES_DRV_DTYPE_I64), 1, CPU__DT_##T, 0)                                        \
    G(MaxPoolI_##T, "MaxPool", #T "->" #T ",i64", cpu__max_pool_indices, CPU__OP_MAXPOOL_INDICES, \
      0, 1, CPU__T1(T), 2, CPU__DT_##T, SES_DRV_DTYPE_I64)                                        \
    G(InstanceNorm_##T, "InstanceNormalization", #T "," #T "," #T "->" #T, cpu__instance_norm,    \
      CPU__OP_INSTANCENORM, 0, 3, CPU__T3(T), 1, CPU__DT_##T, 0)                                  \
    G(Lrn_##T, "LRN", #T "->" #T, cpu__lrn, CPU__OP_LRN, 0, 1, CPU__T1(T), 1, CPU__DT_##T, 0)     \
    G(Mvn_##T, "MeanVarianceNormalization", #T "->" #T, cpu__mvn, CPU__OP_MVN, 0, 1, CPU__T1(T),  \
      1, CPU__DT_##T, 0)                                                                          \
    G(RoiAlign_##T, "RoiAlign", #T "," #T ",i64->" #T, cpu__roi_align, CPU__OP_ROIALIGN, 0, 3,    \
      (CPU__DT_##T, CPU__DT_##T, SES_DRV_DTYPE_I64), 1, CPU__DT_##T, 0)
/* g-convfam: the data-movement ops at any dtype T (cpu_spatial.c). */
#define CPU__G_CONVFAM_ANY(G, T)                                                                  \
    G(DepthToSpace_##T, "DepthToSpace", #T "->" #T, cpu__depth_space, CPU__OP_DEPTHTOSPACE, 0, 1, \
      CPU__T1(T), 1, CPU__DT_##T, 0)                                                              \
    G(SpaceToDepth_##T, "SpaceToDepth", #T "->" #T, cpu__depth_space, CPU__OP_SPACETODEPTH, 0, 1, \
      CPU__T1(T), 1, CPU__DT_##T, 0)                                                              \
    G(Tile_##T, "Tile", #T "->" #T, cpu__tile, CPU__OP_TILE, 0, 1, CPU__T1(T), 1, CPU__DT_##T, 0)
/* g-convfam: MaxPool at i8 and u8, without and with Indices. */
#define CPU__G_CONVFAM_BYTES(G, T)                                                                \
    G(MaxPoolQ_##T, "MaxPool", #T "->" #T, cpu__max_pool_indices, CPU__OP_MAXPOOL_INDICES, 0, 1,  \
      CPU__T1(T), 1, CPU__DT_##T, 0)                                                              \
    G(MaxPoolI_##T, "MaxPool", #T "->" #T ",i64", cpu__max_pool_indices, CPU__OP_MAXPOOL_INDICES, \
      0, 1, CPU__T1(T), 2, CPU__DT_##T, SES_DRV_DTYPE_I64)
/* Output shapes that depend on input values (cpu_value_shape.c): NonZero and Compress at every
 * dtype, TopK (X only: K is the outputs' size) at the number dtypes. */
#define CPU__G_VALUE_SHAPE_ALL(G, T)                                                              \
    G(NonZero_##T, "NonZero", #T "->i64", cpu__nonzero, CPU__OP_NONZERO, 0, 1, CPU__T1(T), 1,     \
      SES_DRV_DTYPE_I64, 0)                                                                       \
    G(Compress_##T, "Compress", #T ",bool->" #T, cpu__compress, CPU__OP_COMPRESS, 0, 2,           \
      (CPU__DT_##T, SES_DRV_DTYPE_BOOL), 1, CPU__DT_##T, 0)
#define CPU__G_VALUE_SHAPE_NUMBER(G, T)                                                           \
    G(TopK_##T, "TopK", #T "->" #T ",i64", cpu__topk, CPU__OP_TOPK, 0, 1, CPU__T1(T), 2,          \
      CPU__DT_##T, SES_DRV_DTYPE_I64)

/* Unique with 1 to 4 outputs: Y, then indices, inverse_indices and counts (i64). */
#define CPU__G_UNIQUE(G, T)                                                                       \
    G(Unique1_##T, "Unique", #T "->" #T, cpu__unique, CPU__OP_UNIQUE, 0, 1, CPU__T1(T), 1,        \
      CPU__DT_##T, 0)                                                                             \
    G(Unique2_##T, "Unique", #T "->" #T ",i64", cpu__unique, CPU__OP_UNIQUE, 0, 1, CPU__T1(T), 2, \
      CPU__DT_##T, SES_DRV_DTYPE_I64)                                                             \
    G(Unique3_##T, "Unique", #T "->" #T ",i64,i64", cpu__unique, CPU__OP_UNIQUE, 0, 1,            \
      CPU__T1(T), 3, CPU__DT_##T, CPU__LIST(SES_DRV_DTYPE_I64, SES_DRV_DTYPE_I64))                \
    G(Unique4_##T, "Unique", #T "->" #T ",i64,i64,i64", cpu__unique, CPU__OP_UNIQUE, 0, 1,        \
      CPU__T1(T), 4, CPU__DT_##T,                                                                 \
      CPU__LIST(SES_DRV_DTYPE_I64, SES_DRV_DTYPE_I64, SES_DRV_DTYPE_I64))

#define CPU__G_REVERSE_SEQUENCE(G, T)                                                             \
    G(ReverseSequence_##T, "ReverseSequence", #T ",i64->" #T, cpu__reverse_sequence,              \
      CPU__OP_REVERSESEQUENCE, 0, 2, (CPU__DT_##T, SES_DRV_DTYPE_I64), 1, CPU__DT_##T, 0)

#define CPU__G_EINSUM(G, T)                                                                       \
    G(Einsum1_##T, "Einsum", #T "->" #T, cpu__einsum, CPU__OP_EINSUM, 0, 1, CPU__T1(T), 1,        \
      CPU__DT_##T, 0)                                                                             \
    G(Einsum2_##T, "Einsum", #T "," #T "->" #T, cpu__einsum, CPU__OP_EINSUM, 0, 2, CPU__T2(T), 1, \
      CPU__DT_##T, 0)                                                                             \
    G(Einsum3_##T, "Einsum", #T "," #T "," #T "->" #T, cpu__einsum, CPU__OP_EINSUM, 0, 3,         \
      CPU__T3(T), 1, CPU__DT_##T, 0)
/* group g-resize (cpu_resize.c): Resize (X alone; roi, scales and sizes are attributes by then),
 * its gradient (dY alone) and GridSample (X, grid), at a float dtype T. */
#define CPU__G_RESIZE(G, T)                                                                       \
    G(Resize_##T, "Resize", #T "->" #T, cpu__resize, CPU__OP_RESIZE, 0, 1, CPU__T1(T), 1,         \
      CPU__DT_##T, 0)                                                                             \
    G(ResizeGrad_##T, "ResizeGrad", #T "->" #T, cpu__resize_grad, CPU__OP_RESIZEGRAD, 0, 1,       \
      CPU__T1(T), 1, CPU__DT_##T, 0)                                                              \
    G(GridSample_##T, "GridSample", #T "," #T "->" #T, cpu__grid_sample, CPU__OP_GRIDSAMPLE, 0,   \
      2, CPU__T2(T), 1, CPU__DT_##T, 0)

/* Resize of an integer dtype T: nearest only (the body refuses the other modes). */
#define CPU__G_RESIZE_NEAREST(G, T)                                                               \
    G(Resize_##T, "Resize", #T "->" #T, cpu__resize, CPU__OP_RESIZE, 0, 1, CPU__T1(T), 1,         \
      CPU__DT_##T, 0)

/* g-dtypes: Clip on the narrow and unsigned integers (cpu_cnn.c's body). */
#define CPU__G_CLIP(G, T)                                                                         \
    G(Clip_##T, "Clip", #T "->" #T, cpu__clip, CPU__OP_CLIP, 0, 1, CPU__T1(T), 1, CPU__DT_##T, 0) \
    G(Clip1_##T, "Clip", #T "," #T "->" #T, cpu__clip, CPU__OP_CLIP, 0, 2, CPU__T2(T), 1,         \
      CPU__DT_##T, 0)                                                                             \
    G(Clip2_##T, "Clip", #T "," #T "," #T "->" #T, cpu__clip, CPU__OP_CLIP, 0, 3, CPU__T3(T), 1,  \
      CPU__DT_##T, 0)

/* g-dtypes: EyeLike from any dtype A to any B; Bernoulli from a float A to any B; the random
 * ops from any A to a float B; Dropout's training form at data T and ratio R, without and with
 * the mask; BatchNormalization's training form (3 inputs giving Y, 5 giving Y and one or both
 * running statistics). */
#define CPU__G_EYE_LIKE(G, A, B)                                                                 \
    G(EyeLike_##A##_##B, "EyeLike", #A "->" #B, cpu__eye_like, CPU__OP_EYELIKE, 0, 1, CPU__T1(A), \
      1, CPU__DT_##B, 0)
#define CPU__G_EYE_LIKE_FROM(G, A) CPU__ALL_TO(CPU__G_EYE_LIKE, G, A)
#define CPU__G_BERNOULLI(G, A, B)                                                           \
    G(Bernoulli_##A##_##B, "Bernoulli", #A "->" #B, cpu__random, CPU__OP_BERNOULLI, 0, 1, \
      CPU__T1(A), 1, CPU__DT_##B, 0)
#define CPU__G_BERNOULLI_FROM(G, A) CPU__ALL_TO(CPU__G_BERNOULLI, G, A)
#define CPU__G_RANDOM_LIKE(G, A, B)                                                            \
    G(RandomUniformLike_##A##_##B, "RandomUniformLike", #A "->" #B, cpu__random,               \
      CPU__OP_RANDOMUNIFORMLIKE, 0, 1, CPU__T1(A), 1, CPU__DT_##B, 0)                          \
    G(RandomNormalLike_##A##_##B, "RandomNormalLike", #A "->" #B, cpu__random,                 \
      CPU__OP_RANDOMNORMALLIKE, 0, 1, CPU__T1(A), 1, CPU__DT_##B, 0)
/* clang-format off */
#define CPU__RANDOM_TO(M, ...) \
    M(__VA_ARGS__, f32) M(__VA_ARGS__, f64) M(__VA_ARGS__, f16) M(__VA_ARGS__, bf16)
#define CPU__DROPOUT_RATIOS(M, ...) M(__VA_ARGS__, f32) M(__VA_ARGS__, f64)
/* clang-format on */
#define CPU__G_RANDOM_LIKE_FROM(G, A) CPU__RANDOM_TO(CPU__G_RANDOM_LIKE, G, A)
#define CPU__G_DROPOUT_TRAIN(G, T, R)                                                           \
    G(DropoutTrain_##T##_##R, "Dropout", #T "," #R "->" #T, cpu__random, CPU__OP_DROPOUT_TRAIN, \
      0, 2, (CPU__DT_##T, CPU__DT_##R), 1, CPU__DT_##T, 0)                                      \
    G(DropoutTrainMask_##T##_##R, "Dropout", #T "," #R "->" #T ",bool", cpu__random,            \
      CPU__OP_DROPOUT_TRAIN, 0, 2, (CPU__DT_##T, CPU__DT_##R), 2, CPU__DT_##T,                  \
      SES_DRV_DTYPE_BOOL)
#define CPU__G_DROPOUT_TRAIN_DATA(G, T) CPU__DROPOUT_RATIOS(CPU__G_DROPOUT_TRAIN, G, T)
#define CPU__T5(T) (CPU__DT_##T, CPU__DT_##T, CPU__DT_##T, CPU__DT_##T, CPU__DT_##T)
#define CPU__G_BATCH_NORM_TRAIN(G, T)                                                            \
    G(BatchNormTrain_##T, "BatchNormalization", #T "," #T "," #T "->" #T, cpu__batch_norm_train, \
      CPU__OP_BATCHNORM_TRAIN, 0, 3, CPU__T3(T), 1, CPU__DT_##T, 0)                              \
    G(BatchNormTrain2_##T, "BatchNormalization",                                                 \
      #T "," #T "," #T "," #T "," #T "->" #T "," #T, cpu__batch_norm_train,                      \
      CPU__OP_BATCHNORM_TRAIN, 0, 5, CPU__T5(T), 2, CPU__DT_##T, CPU__DT_##T)                    \
    G(BatchNormTrain3_##T, "BatchNormalization",                                                 \
      #T "," #T "," #T "," #T "," #T "->" #T "," #T "," #T, cpu__batch_norm_train,               \
      CPU__OP_BATCHNORM_TRAIN, 0, 5, CPU__T5(T), 3, CPU__DT_##T, CPU__SPLIT_REST3(T))

/* The general entries, in the order get_kernels returns them (after CPU__KERNELS). */
#define CPU__GENERAL_KERNELS(G)                \
    CPU__FLOATS(CPU__G_SCE_LABELS, G)          \
    CPU__FLOATS(CPU__G_NLL_LABELS, G)          \
    CPU__FLOATS(CPU__G_OPTIMIZERS, G)          \
    CPU__FLOATS(CPU__G_CNN_FLOAT, G)           \
    CPU__NUMBERS(CPU__G_CNN_NUMBER, G)         \
    CPU__ALL(CPU__G_SHAPE, G)                  \
    G(ConstantOfShape_bool, "ConstantOfShape", "i64->bool", cpu__constant_of_shape, \
      CPU__OP_CONSTANTOFSHAPE, 0, 1, (SES_DRV_DTYPE_I64), 1, SES_DRV_DTYPE_BOOL, 0) \
    /* g-rnnq */                               \
    CPU__FLOATS(CPU__G_RNN, G)                 \
    CPU__G_QUANT(G)                            \
    /* group g-act */                          \
    CPU__FLOATS(CPU__G_G_ACT, G)               \
    /* g-convfam */                            \
    CPU__FLOATS(CPU__G_CONVFAM_FLOAT, G)       \
    CPU__ALL(CPU__G_CONVFAM_ANY, G)            \
    CPU__G_CONVFAM_BYTES(G, i8) CPU__G_CONVFAM_BYTES(G, u8) \
    /* g-dyn */                                \
    CPU__ALL(CPU__G_VALUE_SHAPE_ALL, G)        \
    CPU__NUMBERS(CPU__G_VALUE_SHAPE_NUMBER, G) \
    CPU__BASIC(CPU__G_UNIQUE, G)               \
    CPU__ALL(CPU__G_REVERSE_SEQUENCE, G)       \
    CPU__NUMBERS(CPU__G_EINSUM, G)             \
    G(NonMaxSuppression_f32, "NonMaxSuppression", "f32,f32->i64", cpu__nms, CPU__OP_NMS, 0, 2, \
      (SES_DRV_DTYPE_F32, SES_DRV_DTYPE_F32), 1, SES_DRV_DTYPE_I64, 0) \
    G(TfIdfVectorizer_i32, "TfIdfVectorizer", "i32->f32", cpu__tfidf, CPU__OP_TFIDF, 0, 1,   \
      (SES_DRV_DTYPE_I32), 1, SES_DRV_DTYPE_F32, 0)                                         \
    G(TfIdfVectorizer_i64, "TfIdfVectorizer", "i64->f32", cpu__tfidf, CPU__OP_TFIDF, 0, 1,   \
      (SES_DRV_DTYPE_I64), 1, SES_DRV_DTYPE_F32, 0)                                         \
    /* group g-resize */                                                                    \
    CPU__FLOATS(CPU__G_RESIZE, G) CPU__G_RESIZE_NEAREST(G, i8) CPU__G_RESIZE_NEAREST(G, u8)      \
    CPU__G_RESIZE_NEAREST(G, i32) CPU__G_RESIZE_NEAREST(G, i64)                                   \
    /* g-dtypes */                             \
    CPU__SMALL_INTS(CPU__G_CLIP, G)            \
    CPU__ALL(CPU__G_EYE_LIKE_FROM, G)          \
    CPU__FLOATS(CPU__G_BERNOULLI_FROM, G)      \
    CPU__ALL(CPU__G_RANDOM_LIKE_FROM, G)       \
    CPU__FLOATS(CPU__G_DROPOUT_TRAIN_DATA, G)  \
    CPU__FLOATS(CPU__G_BATCH_NORM_TRAIN, G)

/* group g-act: the window generators and MelWeightMatrix, from their first input (an integer
 * scalar whose value gave the output's shape at compile time) to a float T. General entries:
 * no output is ever written over that input (no reuse_inputs). */
#define CPU__G_FROM_INT(G, Op, CODE, BODY, T)                                                     \
    G(Op##_i32_##T, #Op, "i32->" #T, BODY, CODE, 0, 1, (SES_DRV_DTYPE_I32), 1, CPU__DT_##T, 0)   \
    G(Op##_i64_##T, #Op, "i64->" #T, BODY, CODE, 0, 1, (SES_DRV_DTYPE_I64), 1, CPU__DT_##T, 0)
#define CPU__G_G_ACT(G, T)                                                                        \
    CPU__G_FROM_INT(G, HannWindow, CPU__OP_HANNWINDOW, cpu__window, T)                            \
    CPU__G_FROM_INT(G, HammingWindow, CPU__OP_HAMMINGWINDOW, cpu__window, T)                      \
    CPU__G_FROM_INT(G, BlackmanWindow, CPU__OP_BLACKMANWINDOW, cpu__window, T)                    \
    CPU__G_FROM_INT(G, MelWeightMatrix, CPU__OP_MELWEIGHTMATRIX, cpu__mel_weight_matrix, T)

/* The fused entries (after the general ones): general entries with a supports_node. */
#define CPU__FUSED_KERNELS(G) CPU__FLOATS(CPU__G_FUSED, G)
/* MatMulGradSGD (cpu_train.c; after the fused entries): var (written in place), dy, the operand
 * read (A or B), lr; no outputs. A general entry with its own supports_node. */
#define CPU__G_UPDATE(G, T)                                                                   \
    G(MatMulGradSGD_##T, "MatMulGradSGD", #T "," #T "," #T "," #T "->", cpu__matmul_grad_sgd, \
      CPU__OP_MATMULGRADSGD, 0x1, 4, CPU__T4(T), 0, 0, 0)
#define CPU__UPDATE_KERNELS(G) CPU__FLOATS(CPU__G_UPDATE, G)
/* The NCHWc16 entries (last), f32 only: general entries with a supports_node. */
#define CPU__NCHWC_KERNELS(G) CPU__G_NCHWC(G, f32)

#define CPU__LIST(...) __VA_ARGS__
/* Per body: which inputs an output may be written over (DRV-86). The convolutions with a Z
 * write Y over it (cpu_fused.c); no other general entry allows it. */
#define CPU__REUSE(BODY) CPU__REUSE_##BODY
#define CPU__REUSE_cpu__fused_conv cpu__fused_conv_reuse
#define CPU__REUSE_cpu__nchwc_conv cpu__fused_conv_reuse
#define CPU__REUSE_cpu__fused_gemm NULL
#define CPU__REUSE_cpu__nchwc_pool NULL
#define CPU__REUSE_cpu__nchwc_global_pool NULL
#define CPU__REUSE_cpu__nchwc_reorder_output NULL
#define CPU__REUSE_cpu__sce_loss NULL
#define CPU__REUSE_cpu__sce_grad NULL
#define CPU__REUSE_cpu__optimizer NULL
#define CPU__REUSE_cpu__matmul_grad_sgd NULL
#define CPU__REUSE_cpu__conv NULL
#define CPU__REUSE_cpu__conv_grad NULL
#define CPU__REUSE_cpu__pool NULL
#define CPU__REUSE_cpu__batch_norm NULL
#define CPU__REUSE_cpu__dropout NULL
#define CPU__REUSE_cpu__layer_norm NULL
#define CPU__REUSE_cpu__layer_norm_grad NULL
#define CPU__REUSE_cpu__pad NULL
#define CPU__REUSE_cpu__pad_grad NULL
#define CPU__REUSE_cpu__clip NULL
#define CPU__REUSE_cpu__split NULL
#define CPU__REUSE_cpu__shape NULL
#define CPU__REUSE_cpu__size NULL
#define CPU__REUSE_cpu__constant_of_shape NULL
#define CPU__REUSE_cpu__range NULL
/* g-rnnq */
#define CPU__REUSE_cpu__rnn NULL
#define CPU__REUSE_cpu__quantize NULL
#define CPU__REUSE_cpu__dynamic_quantize NULL
#define CPU__REUSE_cpu__matmul_integer NULL
#define CPU__REUSE_cpu__qlinear NULL
#define CPU__REUSE_cpu__window NULL /* group g-act */
#define CPU__REUSE_cpu__mel_weight_matrix NULL
/* g-convfam */
#define CPU__REUSE_cpu__conv_transpose NULL
#define CPU__REUSE_cpu__depth_space NULL
#define CPU__REUSE_cpu__tile NULL
#define CPU__REUSE_cpu__max_unpool NULL
#define CPU__REUSE_cpu__max_pool_indices NULL
#define CPU__REUSE_cpu__instance_norm NULL
#define CPU__REUSE_cpu__lrn NULL
#define CPU__REUSE_cpu__mvn NULL
#define CPU__REUSE_cpu__roi_align NULL
#define CPU__REUSE_cpu__nonzero NULL
#define CPU__REUSE_cpu__compress NULL
#define CPU__REUSE_cpu__topk NULL
#define CPU__REUSE_cpu__unique NULL
#define CPU__REUSE_cpu__reverse_sequence NULL
#define CPU__REUSE_cpu__einsum NULL
#define CPU__REUSE_cpu__nms NULL
#define CPU__REUSE_cpu__tfidf NULL
/* group g-resize */
#define CPU__REUSE_cpu__resize NULL
#define CPU__REUSE_cpu__resize_grad NULL
#define CPU__REUSE_cpu__grid_sample NULL
/* g-dtypes */
#define CPU__REUSE_cpu__eye_like NULL
#define CPU__REUSE_cpu__random NULL
#define CPU__REUSE_cpu__batch_norm_train NULL

#define CPU__DEFINE_GENERAL(id, OP, SIG, BODY, CODE, INPLACE, N_IN, INS, N_OUT, OUT0, OUT1) \
    static const cpu__spec_t cpu__spec_##id = {                                            \
        .op = OP,                                                                          \
        .signature = SIG,                                                                  \
        .body = BODY,                                                                      \
        .code = CODE,                                                                      \
        .n_inputs = N_IN,                                                                  \
        .in = {CPU__LIST INS},                                                             \
        .out = OUT0,                                                                       \
        .n_outputs = N_OUT,                                                                \
        .outs = {OUT0, OUT1}, /* OUT1 may be a list: Split's outputs after the first */    \
        .inplace = INPLACE,                                                                \
        .reuse = CPU__REUSE(BODY),                                                         \
    };                                                                                     \
    static int32_t cpu__compute_##id(ses_drv_device_t *device, void *state,                \
                                     const ses_drv_launch_t *launch) {                     \
        return cpu__run_general(device, launch, &cpu__spec_##id, state);                   \
    }

CPU__GENERAL_KERNELS(CPU__DEFINE_GENERAL)
CPU__FUSED_KERNELS(CPU__DEFINE_GENERAL)
CPU__UPDATE_KERNELS(CPU__DEFINE_GENERAL)
CPU__NCHWC_KERNELS(CPU__DEFINE_GENERAL)

/* Second expansion: the table. */
#define CPU__ENTRY(id, OP, SIG, BODY, ...)                          \
    {                                                               \
        .struct_size = sizeof(ses_drv_kernel_t),                    \
        .op = OP,                                                   \
        .signature = SIG,                                           \
        .priority = 0,                                              \
        .flags = 0,                                                 \
        .supports_node = NULL,                                      \
        .create = CPU__PREP(BODY, CPU__CREATE_OF, CPU__NULL, id),   \
        .destroy = CPU__PREP(BODY, CPU__DESTROY_OF, CPU__NULL, id), \
        .compute = cpu__compute_##id,                               \
        .reuse_inputs = cpu__reuse_##id,                            \
    },

/* Per body: the per-node state (Conv and FusedConv keep oneDNN's cache and the constant-input
 * bits, cpu_cnn.c; FusedGemm its matmul cache when its weights are constant, cpu_matmul.c) and supports_node (the fused ops check their activation, cpu_fused.c); the
 * other general entries have neither. */
#define CPU__GSTATE(BODY, what) CPU__GSTATE_##BODY(what)
#define CPU__GSTATE_cpu__conv(what) cpu__conv_##what
#define CPU__GSTATE_cpu__fused_conv(what) cpu__conv_##what
#define CPU__GSTATE_cpu__nchwc_conv(what) cpu__conv_##what
#define CPU__GSTATE_cpu__nchwc_pool(what) NULL
#define CPU__GSTATE_cpu__nchwc_global_pool(what) NULL
#define CPU__GSTATE_cpu__nchwc_reorder_output(what) NULL
#define CPU__GSTATE_cpu__fused_gemm(what) cpu__fused_gemm_##what
#define CPU__GSTATE_cpu__sce_loss(what) NULL
#define CPU__GSTATE_cpu__sce_grad(what) NULL
#define CPU__GSTATE_cpu__optimizer(what) NULL
#define CPU__GSTATE_cpu__matmul_grad_sgd(what) NULL
#define CPU__GSTATE_cpu__conv_grad(what) NULL
#define CPU__GSTATE_cpu__pool(what) NULL
#define CPU__GSTATE_cpu__batch_norm(what) NULL
#define CPU__GSTATE_cpu__dropout(what) NULL
#define CPU__GSTATE_cpu__layer_norm(what) NULL
#define CPU__GSTATE_cpu__layer_norm_grad(what) NULL
#define CPU__GSTATE_cpu__pad(what) NULL
#define CPU__GSTATE_cpu__pad_grad(what) NULL
#define CPU__GSTATE_cpu__clip(what) NULL
#define CPU__GSTATE_cpu__split(what) NULL
#define CPU__GSTATE_cpu__shape(what) NULL
#define CPU__GSTATE_cpu__size(what) NULL
#define CPU__GSTATE_cpu__constant_of_shape(what) NULL
#define CPU__GSTATE_cpu__range(what) NULL
/* g-rnnq */
#define CPU__GSTATE_cpu__rnn(what) NULL
#define CPU__GSTATE_cpu__quantize(what) NULL
#define CPU__GSTATE_cpu__dynamic_quantize(what) NULL
#define CPU__GSTATE_cpu__matmul_integer(what) NULL
#define CPU__GSTATE_cpu__qlinear(what) NULL
#define CPU__GSTATE_cpu__window(what) NULL /* group g-act */
#define CPU__GSTATE_cpu__mel_weight_matrix(what) NULL
/* g-convfam: ConvTranspose keeps its column matrix between launches. */
#define CPU__GSTATE_cpu__conv_transpose(what) cpu__conv_transpose_##what
#define CPU__GSTATE_cpu__depth_space(what) NULL
#define CPU__GSTATE_cpu__tile(what) NULL
#define CPU__GSTATE_cpu__max_unpool(what) NULL
#define CPU__GSTATE_cpu__max_pool_indices(what) NULL
#define CPU__GSTATE_cpu__instance_norm(what) NULL
#define CPU__GSTATE_cpu__lrn(what) NULL
#define CPU__GSTATE_cpu__mvn(what) NULL
#define CPU__GSTATE_cpu__roi_align(what) NULL
#define CPU__GSTATE_cpu__nonzero(what) NULL
#define CPU__GSTATE_cpu__compress(what) NULL
#define CPU__GSTATE_cpu__topk(what) NULL
#define CPU__GSTATE_cpu__unique(what) NULL
#define CPU__GSTATE_cpu__reverse_sequence(what) NULL
#define CPU__GSTATE_cpu__einsum(what) NULL
#define CPU__GSTATE_cpu__nms(what) NULL
#define CPU__GSTATE_cpu__tfidf(what) NULL
/* group g-resize */
#define CPU__GSTATE_cpu__resize(what) NULL
#define CPU__GSTATE_cpu__resize_grad(what) NULL
#define CPU__GSTATE_cpu__grid_sample(what) NULL
/* g-dtypes: the random ops keep their stream (cpu_random.c) */
#define CPU__GSTATE_cpu__eye_like(what) NULL
#define CPU__GSTATE_cpu__random(what) cpu__random_##what
#define CPU__GSTATE_cpu__batch_norm_train(what) NULL

/* An entry with no supports_node (every general op), and those with the fused ops' check,
 * MatMulGradSGD's and the NCHWc16 ops'. */
#define CPU__GENERAL_ENTRY(id, OP, SIG, BODY, ...) CPU__GENTRY(id, OP, SIG, BODY, NULL)
#define CPU__FUSED_ENTRY(id, OP, SIG, BODY, ...) \
    CPU__GENTRY(id, OP, SIG, BODY, cpu__fused_supports)
#define CPU__NCHWC_ENTRY(id, OP, SIG, BODY, ...) \
    CPU__GENTRY(id, OP, SIG, BODY, cpu__nchwc_supports)
#define CPU__UPDATE_ENTRY(id, OP, SIG, BODY, ...) \
    CPU__GENTRY(id, OP, SIG, BODY, cpu__matmul_grad_sgd_supports)
#define CPU__GENTRY(id, OP, SIG, BODY, SUPPORTS) \
    {                                            \
        .struct_size = sizeof(ses_drv_kernel_t), \
        .op = OP,                                \
        .signature = SIG,                        \
        .priority = 0,                           \
        .flags = 0,                              \
        .supports_node = SUPPORTS,               \
        .create = CPU__GSTATE(BODY, create),     \
        .destroy = CPU__GSTATE(BODY, destroy),   \
        .compute = cpu__compute_##id,            \
        .reuse_inputs = CPU__REUSE(BODY),        \
    },

static const ses_drv_kernel_t cpu_kernels[] = {
    CPU__KERNELS(CPU__ENTRY) CPU__GENERAL_KERNELS(CPU__GENERAL_ENTRY)
        CPU__FUSED_KERNELS(CPU__FUSED_ENTRY) CPU__UPDATE_KERNELS(CPU__UPDATE_ENTRY)
            CPU__NCHWC_KERNELS(CPU__NCHWC_ENTRY)};

int32_t cpu__get_kernels(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                         uint32_t *out_count, uint32_t *out_stride) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_kernels || !out_count || !out_stride)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "get_kernels: out_kernels, out_count or out_stride is NULL");
    *out_kernels = cpu_kernels;
    *out_count = (uint32_t)(sizeof cpu_kernels / sizeof cpu_kernels[0]);
    *out_stride = (uint32_t)sizeof(ses_drv_kernel_t);
    return SES_DRV_OK;
}
