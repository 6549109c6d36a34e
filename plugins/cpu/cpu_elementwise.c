/*
 * Elementwise kernels: arithmetic (Add Sub Mul Div Pow) and comparisons (Equal Greater Less)
 * with numpy broadcasting, Where, the unary ops (Neg Abs Exp Log Sqrt Reciprocal Relu Sigmoid
 * Tanh Softplus Erf LeakyRelu) and Cast.
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
 * Add Sub Mul Div Pow
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
    default: return NULL;
    }
#undef CPU__PICK
}

/* The index of the first zero among @p n integers of @p dtype, or n when there is none. */
static uint64_t cpu__find_zero(const void *data, uint32_t dtype, uint64_t n) {
    if (dtype == SES_DRV_DTYPE_I32) {
        const int32_t *v = data;
        for (uint64_t i = 0; i < n; i++)
            if (v[i] == 0)
                return i;
    } else {
        const int64_t *v = data;
        for (uint64_t i = 0; i < n; i++)
            if (v[i] == 0)
                return i;
    }
    return n;
}

/* Element operations per element of a binary op, for the parallel threshold. */
static uint64_t cpu__binary_cost(uint32_t code) {
    return code == CPU__OP_POW ? CPU__COST_MATH : 1;
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
    cpu__row_fn row = cpu__binary_row(code, dtype);
    if (!row)
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s", cpu__dtype_label(dtype));
    /* With a non-empty output every divisor element is used, so one zero anywhere is an error;
     * finding it up front keeps the loop free of error paths. */
    if (code == CPU__OP_DIV && (dtype == SES_DRV_DTYPE_I32 || dtype == SES_DRV_DTYPE_I64)) {
        uint64_t at = cpu__find_zero(call->in[1].data, dtype, call->in[1].count);
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
 * The loops create prepares (see cpu__run_prepared)
 * ------------------------------------------------------------------------------------------- */

cpu__row_fn cpu__elementwise_row(const cpu__spec_t *spec, uint64_t *out_cost) {
    const int int_div = spec->code == CPU__OP_DIV &&
                        (spec->out == SES_DRV_DTYPE_I32 || spec->out == SES_DRV_DTYPE_I64);

    *out_cost = 1;
    if (spec->body == cpu__binary && !int_div) {
        *out_cost = cpu__binary_cost(spec->code);
        return cpu__binary_row(spec->code, spec->out);
    }
    if (spec->body == cpu__compare)
        return cpu__compare_row(spec->code, spec->in[0]);
    if (spec->body == cpu__where)
        return cpu__where_row(cpu__dtype_size(spec->out));
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Unary ops and Cast: same shape in and out, one contiguous loop.
 * ------------------------------------------------------------------------------------------- */

typedef void (*cpu__map_fn)(void *out, const void *in, size_t n, const void *params);

typedef struct cpu__map_params {
    double alpha; /* LeakyRelu */
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
    const int f32 = call->out.dtype == SES_DRV_DTYPE_F32;
    const int f64 = call->out.dtype == SES_DRV_DTYPE_F64;
    const int i32 = call->out.dtype == SES_DRV_DTYPE_I32;
    cpu__map_params_t params = {0.01};
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
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s",
                              cpu__dtype_label(call->out.dtype));
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
    if (from_i < 0 || to_i < 0)
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s->%s",
                              cpu__dtype_label(call->in[0].dtype),
                              cpu__dtype_label(call->out.dtype));
    return cpu__map_run(call, cpu__casts[from_i][to_i], NULL, 1);
}
