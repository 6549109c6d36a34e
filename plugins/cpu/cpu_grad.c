/*
 * The gradient ops' kernels: ExpandLike (a broadcast copy), ReduceSumLike (its reverse),
 * ScalarLike, the activation gradients (ReluGrad, LeakyReluGrad, SigmoidGrad, TanhGrad),
 * SoftmaxGrad and LogSoftmaxGrad, MatMulGrad (through OpenBLAS), ReduceGrad (dy broadcast back
 * over the reduced axes), GatherGrad (a scatter-add) and SliceGrad (a strided scatter).
 *
 * "like" inputs never reach these kernels: the output's shape is all they gave. ScalarLike's
 * like does, so that the entry is found by its dtype, and is not read.
 *
 * As everywhere in this driver, work is split by output element, and every output element is
 * computed in the same order whatever the number of threads (GatherGrad adds repeated indices
 * in the order of the indices), so results are the same bit for bit.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_math.h"

/* Element strides of a dense row-major tensor. */
static void cpu__grad_strides(const int64_t *dims, uint32_t rank, int64_t *strides) {
    int64_t stride = 1;
    for (uint32_t d = rank; d-- > 0;) {
        strides[d] = stride;
        stride *= dims[d];
    }
}

/* "input 0 is [2,3], output is [3]" for a failing shape check of a one-input kernel. */
static int32_t cpu__grad_shapes_fail(const cpu__call_t *call, const char *what) {
    char a[96], o[96];
    return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "%s: input 0 is %s, output is %s", what,
                          cpu__format_dims(call->in[0].dims, call->in[0].rank, a, sizeof a),
                          cpu__format_dims(call->out.dims, call->out.rank, o, sizeof o));
}

/* ---------------------------------------------------------------------------------------------
 * ExpandLike: the input broadcast (numpy, one way) to the output's shape.
 * ------------------------------------------------------------------------------------------- */

int32_t cpu__expand_like(const cpu__call_t *call) {
    const cpu__tensor_t *in = &call->in[0];
    const cpu__tensor_t *out = &call->out;
    int32_t st;

    if ((st = cpu__check_rank(call, "output 0", out)) != SES_DRV_OK)
        return st;
    int ok = in->rank <= out->rank;
    const uint32_t lead = ok ? out->rank - in->rank : 0;
    for (uint32_t d = 0; ok && d < in->rank; d++)
        if (in->dims[d] != 1 && in->dims[d] != out->dims[lead + d])
            ok = 0;
    if (!ok)
        return cpu__grad_shapes_fail(call, "the input does not broadcast to the output");
    if (out->count == 0)
        return SES_DRV_OK;

    /* The input's stride is 0 along the dims it lacks or has as 1. */
    cpu__strided_t s;
    memset(&s, 0, sizeof s);
    s.rank = out->rank;
    s.n_in = 1;
    int64_t stride = 1;
    for (uint32_t d = out->rank; d-- > 0;) {
        s.dims[d] = out->dims[d];
        if (d < lead) {
            s.stride[0][d] = 0;
            continue;
        }
        const int64_t dim = in->dims[d - lead];
        s.stride[0][d] = dim == 1 ? 0 : stride;
        stride *= dim;
    }
    s.base[0] = in->data;
    s.esize[0] = in->esize;
    s.out = out->data;
    s.out_esize = out->esize;
    s.count = out->count;
    cpu__strided_merge(&s);
    cpu__strided_parallel(call, &s, cpu__strided_copy_row(out->esize), NULL, 1);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * ReduceSumLike: the input summed down to the output's shape, the reverse of broadcasting.
 * ------------------------------------------------------------------------------------------- */

int32_t cpu__reduce_sum_like(const cpu__call_t *call) {
    const cpu__tensor_t *in = &call->in[0];
    const cpu__tensor_t *out = &call->out;
    int reduced[CPU__MAX_RANK] = {0};
    int32_t st;

    if ((st = cpu__check_rank(call, "input 0", in)) != SES_DRV_OK)
        return st;
    /* The output, aligned at the last dim, has each of the input's dims or 1. */
    int ok = out->rank <= in->rank;
    const uint32_t lead = ok ? in->rank - out->rank : 0;
    for (uint32_t d = 0; ok && d < out->rank; d++)
        if (out->dims[d] != 1 && out->dims[d] != in->dims[lead + d])
            ok = 0;
    if (!ok)
        return cpu__grad_shapes_fail(call,
                                     "the output does not broadcast to the input, so the "
                                     "input cannot be summed down to it");
    /* Summed: the dims the output lacks, and those where it has 1 and the input not. */
    for (uint32_t d = 0; d < in->rank; d++)
        reduced[d] = d < lead || (out->dims[d - lead] == 1 && in->dims[d] != 1);
    return cpu__reduce_dims(call, reduced, CPU__OP_REDUCESUM);
}

/* ---------------------------------------------------------------------------------------------
 * ScalarLike: a scalar holding the attribute value, in the dtype of the input (never read).
 * ------------------------------------------------------------------------------------------- */

/* Round to nearest even, as the conversions of every other library. */
static uint16_t cpu__to_f16(float value) {
    uint32_t x, sign, exponent, mantissa;

    memcpy(&x, &value, sizeof x);
    sign = (x >> 16) & 0x8000u;
    exponent = (x >> 23) & 0xFFu;
    mantissa = x & 0x7FFFFFu;
    if (exponent == 0xFF)
        return (uint16_t)(sign | 0x7C00u | (mantissa ? 0x200u : 0));
    if (exponent > 142)
        return (uint16_t)(sign | 0x7C00u);
    if (exponent < 113) {
        /* Subnormal or zero in f16. */
        if (exponent < 102)
            return (uint16_t)sign;
        uint32_t m = mantissa | 0x800000u, shift = 126 - exponent;
        uint32_t half = 1u << (shift - 1), rest = m & ((1u << shift) - 1);
        m >>= shift;
        if (rest > half || (rest == half && (m & 1)))
            m++;
        return (uint16_t)(sign | m);
    }
    uint32_t h = ((exponent - 112) << 10) | (mantissa >> 13), rest = mantissa & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1)))
        h++; /* may carry into the exponent, up to infinity, which is right */
    return (uint16_t)(sign | h);
}

static uint16_t cpu__to_bf16(float value) {
    uint32_t x;

    memcpy(&x, &value, sizeof x);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* a quiet NaN */
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* Float to integer as Cast does it: toward zero, saturating, NaN giving 0. LO is the target's
 * minimum and HI one past its maximum, both exact doubles. */
#define CPU__SATURATE(T, MIN, MAX, LO, HI, v) \
    ((v) != (v) ? (T)0 : (v) < (LO) ? (T)(MIN) : (v) >= (HI) ? (T)(MAX) : (T)(v))

int32_t cpu__scalar_like(const cpu__call_t *call) {
    const cpu__tensor_t *out = &call->out;
    unsigned char *p = out->data;
    double v = 0.0;
    int32_t st;

    if ((st = cpu__attr_float(call, "value", 0.0, &v)) != SES_DRV_OK)
        return st;
    if (out->rank != 0)
        return cpu__grad_shapes_fail(call, "the output must be a scalar");
    switch (out->dtype) {
    case SES_DRV_DTYPE_F32: *(float *)(void *)p = (float)v; break;
    case SES_DRV_DTYPE_F64: *(double *)(void *)p = v; break;
    case SES_DRV_DTYPE_F16: *(uint16_t *)(void *)p = cpu__to_f16((float)v); break;
    case SES_DRV_DTYPE_BF16: *(uint16_t *)(void *)p = cpu__to_bf16((float)v); break;
    case SES_DRV_DTYPE_I8:
        *(int8_t *)(void *)p = CPU__SATURATE(int8_t, INT8_MIN, INT8_MAX, -128.0, 128.0, v);
        break;
    case SES_DRV_DTYPE_I16:
        *(int16_t *)(void *)p = CPU__SATURATE(int16_t, INT16_MIN, INT16_MAX, -32768.0, 32768.0, v);
        break;
    case SES_DRV_DTYPE_I32:
        *(int32_t *)(void *)p =
            CPU__SATURATE(int32_t, INT32_MIN, INT32_MAX, -2147483648.0, 2147483648.0, v);
        break;
    case SES_DRV_DTYPE_I64:
        *(int64_t *)(void *)p = CPU__SATURATE(int64_t, INT64_MIN, INT64_MAX, -9223372036854775808.0,
                                              9223372036854775808.0, v);
        break;
    case SES_DRV_DTYPE_U8: *p = CPU__SATURATE(uint8_t, 0, UINT8_MAX, 0.0, 256.0, v); break;
    case SES_DRV_DTYPE_U16:
        *(uint16_t *)(void *)p = CPU__SATURATE(uint16_t, 0, UINT16_MAX, 0.0, 65536.0, v);
        break;
    case SES_DRV_DTYPE_U32:
        *(uint32_t *)(void *)p = CPU__SATURATE(uint32_t, 0, UINT32_MAX, 0.0, 4294967296.0, v);
        break;
    case SES_DRV_DTYPE_U64:
        *(uint64_t *)(void *)p =
            CPU__SATURATE(uint64_t, 0, UINT64_MAX, 0.0, 18446744073709551616.0, v);
        break;
    case SES_DRV_DTYPE_BOOL: *p = v != 0.0; break;
    default:
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for %s",
                              cpu__dtype_label(out->dtype));
    }
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * ReluGrad LeakyReluGrad SigmoidGrad TanhGrad: dy and the forward input x (or output y), all of
 * one shape.
 * ------------------------------------------------------------------------------------------- */

typedef void (*cpu__grad_map_fn)(void *out, const void *dy, const void *v, size_t n, double alpha);

/* out[i] = EXPR of g = dy[i] and x = v[i] (x is the forward output y for Sigmoid and Tanh). */
#define CPU__GRAD_MAP(name, T, EXPR)                                                    \
    static void name(void *out_, const void *dy_, const void *v_, size_t n, double a) { \
        T *out = out_;                                                                  \
        const T *dy = dy_, *v = v_;                                                     \
        const T alpha = (T)a;                                                           \
        (void)alpha;                                                                    \
        for (size_t i = 0; i < n; i++) {                                                \
            const T g = dy[i], x = v[i];                                                \
            out[i] = (EXPR);                                                            \
        }                                                                               \
    }

/* x > 0 rather than a test of x <= 0, so that NaN gives the 0 (or alpha) side. */
CPU__GRAD_MAP(cpu__relu_grad_f32, float, x > 0 ? g : 0.0f)
CPU__GRAD_MAP(cpu__relu_grad_f64, double, x > 0 ? g : 0.0)
CPU__GRAD_MAP(cpu__leaky_relu_grad_f32, float, x > 0 ? g : alpha * g)
CPU__GRAD_MAP(cpu__leaky_relu_grad_f64, double, x > 0 ? g : alpha * g)
CPU__GRAD_MAP(cpu__sigmoid_grad_f32, float, g *x *(1.0f - x))
CPU__GRAD_MAP(cpu__sigmoid_grad_f64, double, g *x *(1.0 - x))
CPU__GRAD_MAP(cpu__tanh_grad_f32, float, g *(1.0f - x * x))
CPU__GRAD_MAP(cpu__tanh_grad_f64, double, g *(1.0 - x * x))

typedef struct cpu__grad_map_job {
    cpu__grad_map_fn fn;
    unsigned char *out;
    const unsigned char *dy, *v;
    size_t esize;
    double alpha;
} cpu__grad_map_job_t;

static void cpu__grad_map_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__grad_map_job_t *job = ctx;
    const size_t off = (size_t)begin * job->esize;
    job->fn(job->out + off, job->dy + off, job->v + off, (size_t)(end - begin), job->alpha);
}

/* Fails unless inputs 0 and 1 and the output have one shape. */
static int32_t cpu__check_same_three(const cpu__call_t *call) {
    char a[96], b[96], o[96];

    if (cpu__same_shape(&call->in[0], &call->out) && cpu__same_shape(&call->in[1], &call->out))
        return SES_DRV_OK;
    return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                          "shapes differ: input 0 is %s, input 1 is %s, output is %s",
                          cpu__format_dims(call->in[0].dims, call->in[0].rank, a, sizeof a),
                          cpu__format_dims(call->in[1].dims, call->in[1].rank, b, sizeof b),
                          cpu__format_dims(call->out.dims, call->out.rank, o, sizeof o));
}

int32_t cpu__activation_grad(const cpu__call_t *call) {
    const int f32 = call->out.dtype == SES_DRV_DTYPE_F32;
    cpu__grad_map_job_t job = {
        NULL, call->out.data, call->in[0].data, call->in[1].data, call->out.esize, 0.01};
    int32_t st;

    switch (call->spec->code) {
    case CPU__OP_RELUGRAD: job.fn = f32 ? cpu__relu_grad_f32 : cpu__relu_grad_f64; break;
    case CPU__OP_LEAKYRELUGRAD:
        if ((st = cpu__attr_float(call, "alpha", 0.01, &job.alpha)) != SES_DRV_OK)
            return st;
        job.fn = f32 ? cpu__leaky_relu_grad_f32 : cpu__leaky_relu_grad_f64;
        break;
    case CPU__OP_SIGMOIDGRAD: job.fn = f32 ? cpu__sigmoid_grad_f32 : cpu__sigmoid_grad_f64; break;
    case CPU__OP_TANHGRAD: job.fn = f32 ? cpu__tanh_grad_f32 : cpu__tanh_grad_f64; break;
    default:
        return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for op code %" PRIu32,
                              call->spec->code);
    }
    if ((st = cpu__check_same_three(call)) != SES_DRV_OK)
        return st;
    if (call->out.count == 0)
        return SES_DRV_OK;
    cpu__parallel(call, call->out.count, 1, cpu__grad_map_task, &job);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * SoftmaxGrad LogSoftmaxGrad along one axis, from dy and the forward output y:
 *   SoftmaxGrad    = y * (dy - sum(dy * y))
 *   LogSoftmaxGrad = dy - exp(y) * sum(dy)
 * ------------------------------------------------------------------------------------------- */

/* Lanes handled together when the axis is not innermost: their rows are contiguous. */
#define CPU__SOFTMAX_GRAD_BLOCK 128

typedef struct cpu__softmax_grad_job {
    const unsigned char *dy, *y;
    unsigned char *out;
    int64_t dim;   /* along the axis */
    int64_t inner; /* product of the dims after the axis */
    int log;       /* LogSoftmaxGrad */
} cpu__softmax_grad_job_t;

/*
 * Lanes [begin, end); lane l is (outer o, inner i) with l = o * inner + i, its elements dim
 * apart by inner. Each lane's sum is taken before any of its outputs is written, and each output
 * reads only its own dy and y, so an output over exactly dy's or y's bytes is fine.
 */
#define CPU__SOFTMAX_GRAD_TASK(T, EXP, suffix)                                                     \
    static void cpu__softmax_grad_task_##suffix(void *ctx, uint64_t begin, uint64_t end) {         \
        const cpu__softmax_grad_job_t *job = ctx;                                                  \
        const T *dy = (const T *)(const void *)job->dy;                                            \
        const T *y = (const T *)(const void *)job->y;                                              \
        T *out = (T *)(void *)job->out;                                                            \
        const int64_t dim = job->dim, inner = job->inner;                                          \
        T s[CPU__SOFTMAX_GRAD_BLOCK];                                                              \
        uint64_t l = begin;                                                                        \
        if (inner == 1) {                                                                          \
            for (; l < end; l++) {                                                                 \
                const T *g = dy + l * (uint64_t)dim, *v = y + l * (uint64_t)dim;                   \
                T *o = out + l * (uint64_t)dim;                                                    \
                T sum = 0;                                                                         \
                if (job->log) {                                                                    \
                    for (int64_t d = 0; d < dim; d++)                                              \
                        sum += g[d];                                                               \
                    for (int64_t d = 0; d < dim; d++)                                              \
                        o[d] = g[d] - EXP(v[d]) * sum;                                             \
                } else {                                                                           \
                    for (int64_t d = 0; d < dim; d++)                                              \
                        sum += g[d] * v[d];                                                        \
                    for (int64_t d = 0; d < dim; d++)                                              \
                        o[d] = v[d] * (g[d] - sum);                                                \
                }                                                                                  \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        while (l < end) {                                                                          \
            size_t base;                                                                           \
            const size_t n = cpu__lane_block(l, end, inner, dim, CPU__SOFTMAX_GRAD_BLOCK, &base);  \
            for (size_t j = 0; j < n; j++)                                                         \
                s[j] = 0;                                                                          \
            for (int64_t d = 0; d < dim; d++) {                                                    \
                const T *g = dy + base + (size_t)(d * inner), *v = y + base + (size_t)(d * inner); \
                if (job->log)                                                                      \
                    for (size_t j = 0; j < n; j++)                                                 \
                        s[j] += g[j];                                                              \
                else                                                                               \
                    for (size_t j = 0; j < n; j++)                                                 \
                        s[j] += g[j] * v[j];                                                       \
            }                                                                                      \
            for (int64_t d = 0; d < dim; d++) {                                                    \
                const size_t at = base + (size_t)(d * inner);                                      \
                const T *g = dy + at, *v = y + at;                                                 \
                T *o = out + at;                                                                   \
                if (job->log)                                                                      \
                    for (size_t j = 0; j < n; j++)                                                 \
                        o[j] = g[j] - EXP(v[j]) * s[j];                                            \
                else                                                                               \
                    for (size_t j = 0; j < n; j++)                                                 \
                        o[j] = v[j] * (g[j] - s[j]);                                               \
            }                                                                                      \
            l += n;                                                                                \
        }                                                                                          \
    }

CPU__SOFTMAX_GRAD_TASK(float, cpu__expf, f32)
CPU__SOFTMAX_GRAD_TASK(double, exp, f64)

int32_t cpu__softmax_grad(const cpu__call_t *call) {
    const cpu__tensor_t *out = &call->out;
    int64_t axis = 0;
    int32_t st;
    char a[96];

    if ((st = cpu__attr_int(call, "axis", 0, 0, &axis)) != SES_DRV_OK)
        return st;
    if (axis < 0 || axis >= (int64_t)out->rank)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute axis is %" PRId64 ", expected 0 to %" PRId64
                              " for the rank-%" PRIu32 " output %s (the host normalizes it)",
                              axis, (int64_t)out->rank - 1, out->rank,
                              cpu__format_dims(out->dims, out->rank, a, sizeof a));
    if ((st = cpu__check_same_three(call)) != SES_DRV_OK)
        return st;
    if (out->count == 0)
        return SES_DRV_OK;

    cpu__softmax_grad_job_t job;
    job.dy = call->in[0].data;
    job.y = call->in[1].data;
    job.out = out->data;
    job.dim = out->dims[axis];
    job.inner = 1;
    for (uint32_t d = (uint32_t)axis + 1; d < out->rank; d++)
        job.inner *= out->dims[d];
    job.log = call->spec->code == CPU__OP_LOGSOFTMAXGRAD;
    cpu__parallel(
        call, out->count / (uint64_t)job.dim, (uint64_t)job.dim * (job.log ? 8 : 3),
        out->dtype == SES_DRV_DTYPE_F32 ? cpu__softmax_grad_task_f32 : cpu__softmax_grad_task_f64,
        &job);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * MatMulGrad: for y = MatMul(A, B) (numpy semantics), the gradient of A (input = 0),
 * dA = dy * B^T, or of B (input = 1), dB = A^T * dy, summed over the batch dims that operand
 * was broadcast along. A 1-D A is the row [1,K] and a 1-D B the column [K,1], whose added dim
 * dy lacks; that changes no byte, only the shapes.
 * ------------------------------------------------------------------------------------------- */

int32_t cpu__matmul_grad_gemm(const cpu__call_t *call, int input, const cpu__matmul_shape_t *sh,
                              uint32_t dtype, const void *dy, const void *operand, double alpha,
                              double beta, void *out) {
    /* One B for every matrix of A, and A's matrices lie one after the other as dy's do: one
     * GEMM with the batches stacked as rows. dA = dy * B^T; dB = A^T * dy, summing the batches
     * in the same product. */
    const int64_t rows = sh->m * sh->n_matrices, k = sh->k, n = sh->n;
    int32_t st;

    if (input == 0) {
        if ((st = cpu__check_blas_dims(call, rows, k, n)) != SES_DRV_OK)
            return st;
        cpu__gemm_call(call->device, 1, dtype, 0, 1, rows, k, n, alpha, dy, n, operand, n, beta,
                       out, k);
    } else {
        if ((st = cpu__check_blas_dims(call, k, n, rows)) != SES_DRV_OK)
            return st;
        cpu__gemm_call(call->device, 1, dtype, 1, 0, k, n, rows, alpha, operand, k, dy, n, beta,
                       out, n);
    }
    return SES_DRV_OK;
}

int32_t cpu__matmul_grad(const cpu__call_t *call) {
    const cpu__tensor_t *dy = &call->in[0];
    const cpu__tensor_t *a = &call->in[1];
    const cpu__tensor_t *b = &call->in[2];
    const cpu__tensor_t *out = &call->out;
    cpu__matmul_shape_t sh;
    int64_t input = 0;
    int32_t st;
    char g[96], w[96];

    if ((st = cpu__attr_int(call, "input", 0, 0, &input)) != SES_DRV_OK)
        return st;
    if (input != 0 && input != 1)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute input is %" PRId64 ", expected 0 (A) or 1 (B)", input);
    /* dy has the product's shape. */
    if ((st = cpu__matmul_shape(call, a, "input 1", b, "input 2", dy, "input 0 (dy)", &sh)) !=
        SES_DRV_OK)
        return st;
    const int64_t m = sh.m, k = sh.k, n = sh.n, n_matrices = sh.n_matrices;
    const uint32_t n_batch = sh.n_batch;
    const int64_t *batch = sh.batch, *a_stride = sh.a_stride, *b_stride = sh.b_stride;
    const int a_broadcast = sh.a_broadcast, b_batched = sh.b_batched;
    const cpu__tensor_t *target = input ? b : a;
    if (!cpu__same_shape(out, target))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "output is %s, but the gradient of input %d is %s",
                              cpu__format_dims(out->dims, out->rank, g, sizeof g), input ? 2 : 1,
                              cpu__format_dims(target->dims, target->rank, w, sizeof w));
    if (out->count == 0)
        return SES_DRV_OK;

    /* A sum over nothing (an empty dim of dy, or no matrices) is 0. */
    const int64_t summed = input ? m : n; /* the inner dim of each GEMM */
    if (summed == 0 || n_matrices == 0) {
        memset(out->data, 0, (size_t)(out->count * out->esize));
        return SES_DRV_OK;
    }

    const uint32_t dtype = out->dtype;
    const size_t es = out->esize;
    if (!b_batched && !a_broadcast)
        return cpu__matmul_grad_gemm(call, (int)input, &sh, dtype, dy->data,
                                     input ? a->data : b->data, 1.0, 0.0, out->data);
    if ((st = cpu__check_blas_dims(call, m, n, k)) != SES_DRV_OK)
        return st;
    /* The GEMMs below add into the output (matrices broadcast over batches sum up), so it
     * starts at 0; the single-GEMM path above overwrites it instead. */
    memset(out->data, 0, (size_t)(out->count * out->esize));
    int64_t idx[CPU__MAX_RANK] = {0};
    int64_t a_off = 0, b_off = 0;
    for (int64_t i = 0; i < n_matrices; i++) {
        if (cpu__cancelled(call))
            return cpu__call_fail(call, SES_DRV_CANCELLED,
                                  "cancelled by the host after %" PRId64 " of %" PRId64
                                  " matrix products",
                                  i, n_matrices);
        const unsigned char *dy_i = dy->data + (size_t)(i * m * n) * es;
        if (input == 0)
            cpu__gemm_call(call->device, 1, dtype, 0, 1, m, k, n, 1.0, dy_i, n,
                           b->data + (size_t)(b_off * k * n) * es, n, 1.0,
                           out->data + (size_t)(a_off * m * k) * es, k);
        else
            cpu__gemm_call(call->device, 1, dtype, 1, 0, k, n, m, 1.0,
                           a->data + (size_t)(a_off * m * k) * es, k, dy_i, n, 1.0,
                           out->data + (size_t)(b_off * k * n) * es, n);
        for (uint32_t d = n_batch; d-- > 0;) {
            a_off += a_stride[d];
            b_off += b_stride[d];
            if (++idx[d] < batch[d])
                break;
            a_off -= a_stride[d] * batch[d];
            b_off -= b_stride[d] * batch[d];
            idx[d] = 0;
        }
    }
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * ReduceGrad: dy broadcast back over the reduced axes of the output, times scale.
 * ------------------------------------------------------------------------------------------- */

#define CPU__SCALED_ROW(name, T)                                                       \
    static void name(void *out_, const void *const *in, const int64_t *step, size_t n, \
                     const void *params) {                                             \
        T *out = out_;                                                                 \
        const T *src = in[0];                                                          \
        const T scale = (T) * (const double *)params;                                  \
        const int64_t s = step[0];                                                     \
        if (s == 0) {                                                                  \
            const T v = src[0] * scale;                                                \
            for (size_t i = 0; i < n; i++)                                             \
                out[i] = v;                                                            \
            return;                                                                    \
        }                                                                              \
        for (size_t i = 0; i < n; i++)                                                 \
            out[i] = src[(int64_t)i * s] * scale;                                      \
    }

CPU__SCALED_ROW(cpu__scaled_row_f32, float)
CPU__SCALED_ROW(cpu__scaled_row_f64, double)

int32_t cpu__reduce_grad(const cpu__call_t *call) {
    const cpu__tensor_t *dy = &call->in[0];
    const cpu__tensor_t *out = &call->out;
    int64_t axes[CPU__MAX_RANK], want[CPU__MAX_RANK], dy_strides[CPU__MAX_RANK];
    int reduced[CPU__MAX_RANK] = {0};
    uint32_t n_axes = 0;
    double scale = 1.0;
    int32_t st;
    char a[96], o[96], w[96], v[96];

    if ((st = cpu__check_rank(call, "output 0", out)) != SES_DRV_OK)
        return st;
    if ((st = cpu__attr_ints(call, "axes", axes, CPU__MAX_RANK, &n_axes)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "scale", 1.0, &scale)) != SES_DRV_OK)
        return st;
    /* Sorted, distinct and in range; empty when the reduction was Identity. */
    for (uint32_t i = 0; i < n_axes; i++) {
        if (axes[i] < 0 || axes[i] >= (int64_t)out->rank || (i > 0 && axes[i] <= axes[i - 1]))
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "attribute axes is %s; expected sorted, distinct axes from 0 to "
                                  "%" PRId64 " (the host normalizes them)",
                                  cpu__format_dims(axes, n_axes, a, sizeof a),
                                  (int64_t)out->rank - 1);
        reduced[axes[i]] = 1;
    }
    /* dy is the output reduced over the axes, which it keeps as 1 (keepdims) or drops: its
     * rank says which. */
    const int keepdims = dy->rank == out->rank;
    uint32_t want_rank;
    if (!cpu__is_reduced(dy, out->dims, out->rank, reduced, keepdims, want, &want_rank))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "input 0 (dy) is %s, but the output %s reduced over axes %s is %s "
                              "(or that with the axes kept as 1)",
                              cpu__format_dims(dy->dims, dy->rank, a, sizeof a),
                              cpu__format_dims(out->dims, out->rank, o, sizeof o),
                              cpu__format_dims(axes, n_axes, w, sizeof w),
                              cpu__format_dims(want, want_rank, v, sizeof v));
    if (out->count == 0)
        return SES_DRV_OK;

    cpu__strided_t s;
    memset(&s, 0, sizeof s);
    cpu__grad_strides(dy->dims, dy->rank, dy_strides);
    s.rank = out->rank;
    s.n_in = 1;
    for (uint32_t d = 0, k = 0; d < out->rank; d++) {
        s.dims[d] = out->dims[d];
        s.stride[0][d] = reduced[d] ? 0 : dy_strides[k];
        if (!reduced[d] || keepdims)
            k++;
    }
    s.base[0] = dy->data;
    s.esize[0] = dy->esize;
    s.out = out->data;
    s.out_esize = out->esize;
    s.count = out->count;
    cpu__strided_merge(&s);
    cpu__strided_parallel(
        call, &s, out->dtype == SES_DRV_DTYPE_F32 ? cpu__scaled_row_f32 : cpu__scaled_row_f64,
        &scale, 1);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * GatherGrad: zeros of the output's shape, with each block of dy added where Gather took it.
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__gather_grad_job {
    const cpu__call_t *call;
    uint64_t dim;   /* the output's dim along the axis */
    uint64_t after; /* elements per index: the product of the dims after the axis */
} cpu__gather_grad_job_t;

/*
 * Items are the output's rows (row before the axis, position along it), row-major. A chunk
 * scans every index once per row before the axis and adds the blocks of dy whose index lands in
 * its part of that row, so each output row is written by one thread, its additions in the
 * order of the indices.
 */
#define CPU__GATHER_GRAD_TASK(T, suffix)                                                  \
    static void cpu__gather_grad_task_##suffix(void *ctx, uint64_t begin, uint64_t end) { \
        const cpu__gather_grad_job_t *job = ctx;                                          \
        const cpu__tensor_t *indices = &job->call->in[1];                                 \
        const T *dy = (const T *)(const void *)job->call->in[0].data;                     \
        T *out = (T *)(void *)job->call->out.data;                                        \
        const uint64_t dim = job->dim, after = job->after, n_idx = indices->count;        \
        for (uint64_t row = begin / dim; row * dim < end; row++) {                        \
            const uint64_t lo = begin > row * dim ? begin - row * dim : 0;                \
            const uint64_t hi = end < (row + 1) * dim ? end - row * dim : dim;            \
            for (uint64_t q = 0; q < n_idx; q++) {                                        \
                int64_t idx = cpu__index_at(indices, q);                                \
                if (idx < 0)                                                              \
                    idx += (int64_t)dim; /* checked to land in range before the job */    \
                if ((uint64_t)idx < lo || (uint64_t)idx >= hi)                            \
                    continue;                                                             \
                const T *g = dy + (row * n_idx + q) * after;                              \
                T *o = out + (row * dim + (uint64_t)idx) * after;                         \
                for (uint64_t j = 0; j < after; j++)                                      \
                    o[j] += g[j];                                                         \
            }                                                                             \
        }                                                                                 \
    }

CPU__GATHER_GRAD_TASK(float, f32)
CPU__GATHER_GRAD_TASK(double, f64)

int32_t cpu__gather_grad(const cpu__call_t *call) {
    const cpu__tensor_t *dy = &call->in[0];
    const cpu__tensor_t *indices = &call->in[1];
    const cpu__tensor_t *out = &call->out;
    uint32_t ax = 0;
    int32_t st;

    /* dy is what Gather gave from a tensor shaped like the output. */
    if ((st = cpu__check_gather(call, out, "the output", indices, dy, "input 0 (dy)", &ax)) !=
        SES_DRV_OK)
        return st;
    if (out->count == 0)
        return SES_DRV_OK;
    const int64_t dim = out->dims[ax];
    memset(out->data, 0, (size_t)(out->count * out->esize));
    if (dy->count == 0)
        return SES_DRV_OK;
    uint64_t before = 1, after = 1;
    for (uint32_t d = 0; d < ax; d++)
        before *= (uint64_t)out->dims[d];
    for (uint32_t d = ax + 1; d < out->rank; d++)
        after *= (uint64_t)out->dims[d];
    cpu__gather_grad_job_t job = {call, (uint64_t)dim, after};
    /* A row costs its share of the additions and of the scan of the indices. */
    const uint64_t cost = (indices->count * after + indices->count) / (uint64_t)dim + 1;
    cpu__parallel(
        call, before * (uint64_t)dim, cost,
        out->dtype == SES_DRV_DTYPE_F32 ? cpu__gather_grad_task_f32 : cpu__gather_grad_task_f64,
        &job);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * SliceGrad: zeros of the output's shape, with dy written where Slice read, the starts and
 * steps being Slice's normalized attributes.
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__slice_grad_job {
    const cpu__tensor_t *dy;
    unsigned char *out;
    size_t es;
    uint32_t last;                 /* dy's last dim: each item is one row of it */
    int64_t first;                 /* the output element dy's first goes to */
    int64_t stride[CPU__MAX_RANK]; /* output elements per step along each dim of dy */
} cpu__slice_grad_job_t;

#define CPU__SCATTER_ROW(name, T)                                                            \
    static void name(unsigned char *out, const unsigned char *src, int64_t step, size_t n) { \
        T *o = (T *)(void *)out;                                                             \
        const T *s = (const T *)(const void *)src;                                           \
        for (size_t i = 0; i < n; i++)                                                       \
            o[(int64_t)i * step] = s[i];                                                     \
    }

CPU__SCATTER_ROW(cpu__scatter_1, uint8_t)
CPU__SCATTER_ROW(cpu__scatter_2, uint16_t)
CPU__SCATTER_ROW(cpu__scatter_4, uint32_t)
CPU__SCATTER_ROW(cpu__scatter_8, uint64_t)

static void cpu__slice_grad_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__slice_grad_job_t *job = ctx;
    const cpu__tensor_t *dy = job->dy;
    const uint64_t inner = dy->rank ? (uint64_t)dy->dims[job->last] : 1;
    const int64_t step = dy->rank ? job->stride[job->last] : 0;
    const size_t es = job->es;

    for (uint64_t r = begin; r < end; r++) {
        /* The row's output offset, from its index over dy's outer dims. */
        int64_t off = job->first;
        uint64_t rest = r;
        for (uint32_t d = job->last; d-- > 0;) {
            off += (int64_t)(rest % (uint64_t)dy->dims[d]) * job->stride[d];
            rest /= (uint64_t)dy->dims[d];
        }
        unsigned char *o = job->out + off * (int64_t)es;
        const unsigned char *s = dy->data + r * inner * es;
        switch (es) {
        case 1: cpu__scatter_1(o, s, step, (size_t)inner); break;
        case 2: cpu__scatter_2(o, s, step, (size_t)inner); break;
        case 4: cpu__scatter_4(o, s, step, (size_t)inner); break;
        default: cpu__scatter_8(o, s, step, (size_t)inner); break;
        }
    }
}

int32_t cpu__slice_grad(const cpu__call_t *call) {
    const cpu__tensor_t *dy = &call->in[0];
    const cpu__tensor_t *out = &call->out;
    int64_t starts[CPU__MAX_RANK], steps[CPU__MAX_RANK], out_strides[CPU__MAX_RANK];
    int32_t st;

    /* dy is what Slice took from a tensor shaped like the output. */
    if ((st = cpu__check_slice(call, out, "output 0", dy, "output", dy, "input 0 (dy)", out,
                               "output", starts, steps)) != SES_DRV_OK)
        return st;
    if (out->count == 0)
        return SES_DRV_OK;
    memset(out->data, 0, (size_t)(out->count * out->esize));
    if (dy->count == 0)
        return SES_DRV_OK;

    /* Every start is inside its dim here, since every dim of dy is at least 1. */
    cpu__slice_grad_job_t job;
    memset(&job, 0, sizeof job);
    cpu__grad_strides(out->dims, out->rank, out_strides);
    job.dy = dy;
    job.out = out->data;
    job.es = out->esize;
    job.last = dy->rank ? dy->rank - 1 : 0;
    for (uint32_t d = 0; d < out->rank; d++) {
        job.stride[d] = steps[d] * out_strides[d];
        job.first += starts[d] * out_strides[d];
    }
    const uint64_t inner = dy->rank ? (uint64_t)dy->dims[job.last] : 1;
    cpu__parallel(call, dy->count / inner, inner, cpu__slice_grad_task, &job);
    return SES_DRV_OK;
}
