/*
 * The parameterised activations (Elu Selu Celu HardSigmoid HardSwish ThresholdedRelu Softsign
 * Shrink Gelu Mish), their gradients (<Op>Grad(dy, x) -> dx), and the variadic Sum and Mean.
 *
 * As in cpu_elementwise.c, each loop body is one C expression over `x` (and `g`, the incoming
 * gradient), expanded into one function per op and dtype, with the attributes (a, b) hoisted
 * out of the loop into locals of the element type. Both sides of every select are computed
 * unconditionally, so that the compiler vectorises the f32 loops; the f32 exponentials use
 * cpu__expf (cpu_math.h), which vectorises, with a Taylor series near 0 where e^x - 1 would
 * lose its digits. Gelu's erfc stays a libm call.
 *
 * Attributes come normalized from the core (every float one present, Gelu's approximate as an
 * INT), and are read at each launch as LeakyRelu's alpha is.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "cpu_internal.h"
#include "cpu_math.h"

/* Element operations one transcendental call costs, for the parallel threshold. */
#define CPU__ACT_COST 8u

typedef struct cpu__act_params {
    double a, b; /* the op's float attributes, in its schema's order */
} cpu__act_params_t;

/* e^x - 1 from an e^x already computed: below |x| = 1/32 the difference would cancel most of
 * its digits, and four terms of the series are exact to the last bit there. */
static inline float cpu__em1f(float x, float e) {
    const float series = x + x * x * (0.5f + x * (1.0f / 6 + x * (1.0f / 24)));
    const float ax = x < 0 ? -x : x;
    return ax < 0.03125f ? series : e - 1.0f;
}

/* tanh(log(1 + e^x)) from n = e^x, without overflow for large x (there it is 1). */
static inline float cpu__tanh_softplusf(float x, float n) {
    const float m = n * (n + 2.0f);
    return x > 20.0f ? 1.0f : m / (m + 2.0f);
}

static inline double cpu__tanh_softplus(double x, double n) {
    const double m = n * (n + 2.0);
    return x > 40.0 ? 1.0 : m / (m + 2.0);
}

#define CPU__SQRT1_2 0.70710678118654752440
#define CPU__SQRT2_PI 0.79788456080286535588    /* sqrt(2 / pi) */
#define CPU__INV_SQRT2PI 0.39894228040143267794 /* 1 / sqrt(2 pi) */
#define CPU__GELU_C 0.044715

/* ---------------------------------------------------------------------------------------------
 * Forward
 * ------------------------------------------------------------------------------------------- */

typedef void (*cpu__act_fn)(void *out, const void *in, size_t n, const cpu__act_params_t *p);

#define CPU__ACT(name, T, EXPR)                                             \
    CPU__ISA_CLONES static void name(void *out_, const void *in_, size_t n, \
                                     const cpu__act_params_t *p) {          \
        T *out = out_;                                                      \
        const T *in = in_;                                                  \
        const T a = (T)p->a, b = (T)p->b;                                   \
        (void)a;                                                            \
        (void)b;                                                            \
        for (size_t i = 0; i < n; i++) {                                    \
            const T x = in[i];                                              \
            out[i] = (EXPR);                                                \
        }                                                                   \
    }

/* Elu: x < 0 ? alpha (e^x - 1) : x. */
CPU__ACT(cpu__elu_f32, float, x < 0 ? a * cpu__em1f(x, cpu__expf(x)) : x)
CPU__ACT(cpu__elu_f64, double, x < 0 ? a * expm1(x) : x)
/* Selu: gamma (x > 0 ? x : alpha (e^x - 1)). */
CPU__ACT(cpu__selu_f32, float, b *(x > 0 ? x : a * cpu__em1f(x, cpu__expf(x))))
CPU__ACT(cpu__selu_f64, double, b *(x > 0 ? x : a * expm1(x)))
/* Celu: max(0, x) + min(0, alpha (e^(x / alpha) - 1)), which is x for x > 0 and the second
 * term otherwise, whatever alpha's sign; written so, NaN stays NaN. */
static inline float cpu__celuf(float x, float a) {
    const float u = x / a;
    const float t = a * cpu__em1f(u, cpu__expf(u));
    return x > 0 ? x : t;
}
static inline double cpu__celu(double x, double a) {
    const double t = a * expm1(x / a);
    return x > 0 ? x : t;
}
CPU__ACT(cpu__celu_f32, float, cpu__celuf(x, a))
CPU__ACT(cpu__celu_f64, double, cpu__celu(x, a))
/* HardSigmoid: alpha x + beta clipped to [0, 1]; NaN stays NaN. */
#define CPU__CLIP01(T, v) ((v) < 0 ? (T)0 : (v) > 1 ? (T)1 : (v))
CPU__ACT(cpu__hard_sigmoid_f32, float, CPU__CLIP01(float, a *x + b))
CPU__ACT(cpu__hard_sigmoid_f64, double, CPU__CLIP01(double, a *x + b))
/* HardSwish: x HardSigmoid(x) with alpha 1/6, beta 1/2. */
CPU__ACT(cpu__hard_swish_f32, float, x *CPU__CLIP01(float, x / 6.0f + 0.5f))
CPU__ACT(cpu__hard_swish_f64, double, x *CPU__CLIP01(double, x / 6.0 + 0.5))
/* ThresholdedRelu: x > alpha ? x : 0, with NaN kept (the test is x <= alpha). */
CPU__ACT(cpu__thresholded_relu_f32, float, x <= a ? 0.0f : x)
CPU__ACT(cpu__thresholded_relu_f64, double, x <= a ? 0.0 : x)
/* Softsign: x / (1 + |x|). */
CPU__ACT(cpu__softsign_f32, float, x / (1.0f + (x < 0 ? -x : x)))
CPU__ACT(cpu__softsign_f64, double, x / (1.0 + (x < 0 ? -x : x)))
/* Shrink (a = bias, b = lambd): x < -lambd ? x + bias : x > lambd ? x - bias : 0, with NaN
 * kept (the last test is x <= lambd). */
CPU__ACT(cpu__shrink_f32, float, x < -b ? x + a : x <= b ? 0.0f : x - a)
CPU__ACT(cpu__shrink_f64, double, x < -b ? x + a : x <= b ? 0.0 : x - a)
/* Gelu: x Phi(x), exactly or with the tanh approximation. Phi(x) is erfc(-x / sqrt 2) / 2, and
 * (1 + tanh(u)) / 2 is sigmoid(2u): neither cancels for negative x, as 1 + erf or 1 + tanh
 * would. */
static inline float cpu__gelu_uf(float x) {
    return 2.0f * (float)CPU__SQRT2_PI * (x + (float)CPU__GELU_C * x * x * x);
}
static inline double cpu__gelu_u(double x) {
    return 2.0 * CPU__SQRT2_PI * (x + CPU__GELU_C * x * x * x);
}
CPU__ACT(cpu__gelu_f32, float, 0.5f * x * erfcf(-x * (float)CPU__SQRT1_2))
CPU__ACT(cpu__gelu_f64, double, 0.5 * x * erfc(-x * CPU__SQRT1_2))
CPU__ACT(cpu__gelu_tanh_f32, float, x *cpu__sigmoidf(cpu__gelu_uf(x)))
CPU__ACT(cpu__gelu_tanh_f64, double, x *cpu__sigmoid(cpu__gelu_u(x)))
/* Mish: x tanh(softplus(x)). */
CPU__ACT(cpu__mish_f32, float, x *cpu__tanh_softplusf(x, cpu__expf(x)))
CPU__ACT(cpu__mish_f64, double, x *cpu__tanh_softplus(x, exp(x)))

/* ---------------------------------------------------------------------------------------------
 * Gradients: dx from g = dy and the forward input x.
 * ------------------------------------------------------------------------------------------- */

typedef void (*cpu__act_grad_fn)(void *out, const void *dy, const void *in, size_t n,
                                 const cpu__act_params_t *p);

#define CPU__ACT_GRAD(name, T, EXPR)                                                         \
    CPU__ISA_CLONES static void name(void *out_, const void *dy_, const void *in_, size_t n, \
                                     const cpu__act_params_t *p) {                           \
        T *out = out_;                                                                       \
        const T *dy = dy_, *in = in_;                                                        \
        const T a = (T)p->a, b = (T)p->b;                                                    \
        (void)a;                                                                             \
        (void)b;                                                                             \
        for (size_t i = 0; i < n; i++) {                                                     \
            const T g = dy[i], x = in[i];                                                    \
            out[i] = (EXPR);                                                                 \
        }                                                                                    \
    }

CPU__ACT_GRAD(cpu__elu_grad_f32, float, x < 0 ? g * a * cpu__expf(x) : g)
CPU__ACT_GRAD(cpu__elu_grad_f64, double, x < 0 ? g * a * exp(x) : g)
CPU__ACT_GRAD(cpu__selu_grad_f32, float, x > 0 ? g * b : g * b * a * cpu__expf(x))
CPU__ACT_GRAD(cpu__selu_grad_f64, double, x > 0 ? g * b : g * b * a * exp(x))
static inline float cpu__celu_gradf(float x, float a) { return x > 0 ? 1.0f : cpu__expf(x / a); }
static inline double cpu__celu_grad(double x, double a) { return x > 0 ? 1.0 : exp(x / a); }
CPU__ACT_GRAD(cpu__celu_grad_f32, float, g *cpu__celu_gradf(x, a))
CPU__ACT_GRAD(cpu__celu_grad_f64, double, g *cpu__celu_grad(x, a))
#define CPU__INSIDE01(v) ((v) > 0 && (v) < 1)
CPU__ACT_GRAD(cpu__hard_sigmoid_grad_f32, float, CPU__INSIDE01(a *x + b) ? g *a : 0.0f)
CPU__ACT_GRAD(cpu__hard_sigmoid_grad_f64, double, CPU__INSIDE01(a *x + b) ? g *a : 0.0)
CPU__ACT_GRAD(cpu__hard_swish_grad_f32, float, x<-3.0f ? 0.0f : x> 3.0f ? g : g *(x / 3.0f + 0.5f))
CPU__ACT_GRAD(cpu__hard_swish_grad_f64, double, x<-3.0 ? 0.0 : x> 3.0 ? g : g *(x / 3.0 + 0.5))
CPU__ACT_GRAD(cpu__thresholded_relu_grad_f32, float, x > a ? g : 0.0f)
CPU__ACT_GRAD(cpu__thresholded_relu_grad_f64, double, x > a ? g : 0.0)
CPU__ACT_GRAD(cpu__softsign_grad_f32, float,
              g / ((1.0f + (x < 0 ? -x : x)) * (1.0f + (x < 0 ? -x : x))))
CPU__ACT_GRAD(cpu__softsign_grad_f64, double,
              g / ((1.0 + (x < 0 ? -x : x)) * (1.0 + (x < 0 ? -x : x))))
CPU__ACT_GRAD(cpu__shrink_grad_f32, float, x<-b || x> b ? g : 0.0f)
CPU__ACT_GRAD(cpu__shrink_grad_f64, double, x<-b || x> b ? g : 0.0)
/* Gelu: Phi(x) + x phi(x); with tanh, s = sigmoid(2u), u = k (x + c x^3):
 * s + x s (1 - s) 2 k (1 + 3 c x^2). */
static inline double cpu__gelu_grad(double x) {
    return 0.5 * erfc(-x * CPU__SQRT1_2) + x * exp(-0.5 * x * x) * CPU__INV_SQRT2PI;
}
static inline double cpu__gelu_tanh_grad(double x) {
    const double s = cpu__sigmoid(cpu__gelu_u(x));
    return s + x * s * (1.0 - s) * 2.0 * CPU__SQRT2_PI * (1.0 + 3.0 * CPU__GELU_C * x * x);
}
static inline float cpu__gelu_gradf(float x) {
    return 0.5f * erfcf(-x * (float)CPU__SQRT1_2) +
           x * cpu__expf(-0.5f * x * x) * (float)CPU__INV_SQRT2PI;
}
static inline float cpu__gelu_tanh_gradf(float x) {
    const float s = cpu__sigmoidf(cpu__gelu_uf(x));
    return s + x * s * (1.0f - s) * 2.0f * (float)CPU__SQRT2_PI *
                   (1.0f + 3.0f * (float)CPU__GELU_C * x * x);
}
CPU__ACT_GRAD(cpu__gelu_grad_f32, float, g *cpu__gelu_gradf(x))
CPU__ACT_GRAD(cpu__gelu_grad_f64, double, g *cpu__gelu_grad(x))
CPU__ACT_GRAD(cpu__gelu_tanh_grad_f32, float, g *cpu__gelu_tanh_gradf(x))
CPU__ACT_GRAD(cpu__gelu_tanh_grad_f64, double, g *cpu__gelu_tanh_grad(x))
/* Mish: t + x (1 - t^2) sigmoid(x), t = tanh(softplus(x)). */
static inline float cpu__mish_gradf(float x) {
    const float t = cpu__tanh_softplusf(x, cpu__expf(x));
    return t + x * (1.0f - t * t) * cpu__sigmoidf(x);
}
static inline double cpu__mish_grad(double x) {
    const double t = cpu__tanh_softplus(x, exp(x));
    return t + x * (1.0 - t * t) * cpu__sigmoid(x);
}
CPU__ACT_GRAD(cpu__mish_grad_f32, float, g *cpu__mish_gradf(x))
CPU__ACT_GRAD(cpu__mish_grad_f64, double, g *cpu__mish_grad(x))

/* ---------------------------------------------------------------------------------------------
 * The bodies
 * ------------------------------------------------------------------------------------------- */

/* The attributes of the op @p code stands for (forward or gradient) into @p p; *@p out_tanh
 * says whether Gelu approximates with tanh. */
static int32_t cpu__act_params(const cpu__call_t *call, uint32_t code, cpu__act_params_t *p,
                               int *out_tanh) {
    int64_t approximate = 0;
    int32_t st = SES_DRV_OK;

    p->a = p->b = 0.0;
    *out_tanh = 0;
    switch (code) {
        case CPU__OP_ELU:
        case CPU__OP_ELUGRAD:
        case CPU__OP_CELU:
        case CPU__OP_CELUGRAD:
            st = cpu__attr_float(call, "alpha", 1.0, &p->a);
            break;
        case CPU__OP_THRESHOLDEDRELU:
        case CPU__OP_THRESHOLDEDRELUGRAD:
            st = cpu__attr_float(call, "alpha", 1.0, &p->a);
            break;
        case CPU__OP_SELU:
        case CPU__OP_SELUGRAD:
            if ((st = cpu__attr_float(call, "alpha", 1.67326319217681884765625, &p->a)) ==
                SES_DRV_OK)
                st = cpu__attr_float(call, "gamma", 1.05070102214813232421875, &p->b);
            break;
        case CPU__OP_HARDSIGMOID:
        case CPU__OP_HARDSIGMOIDGRAD:
            if ((st = cpu__attr_float(call, "alpha", 0.2, &p->a)) == SES_DRV_OK)
                st = cpu__attr_float(call, "beta", 0.5, &p->b);
            break;
        case CPU__OP_SHRINK:
        case CPU__OP_SHRINKGRAD:
            if ((st = cpu__attr_float(call, "bias", 0.0, &p->a)) == SES_DRV_OK)
                st = cpu__attr_float(call, "lambd", 0.5, &p->b);
            break;
        case CPU__OP_GELU:
        case CPU__OP_GELUGRAD:
            st = cpu__attr_int(call, "approximate", 1, 0, &approximate);
            if (st == SES_DRV_OK && approximate != 0 && approximate != 1)
                st = cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                    "attribute approximate is %" PRId64 "; expected 0 or 1",
                                    approximate);
            *out_tanh = approximate == 1;
            break;
        default:
            break;
    }
    if (st == SES_DRV_OK && (code == CPU__OP_CELU || code == CPU__OP_CELUGRAD) && p->a == 0.0)
        st = cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "attribute alpha must not be 0");
    return st;
}

typedef struct cpu__act_job {
    cpu__act_fn fn;
    cpu__act_grad_fn grad;
    unsigned char *out;
    const unsigned char *dy, *in;
    size_t esize;
    cpu__act_params_t params;
} cpu__act_job_t;

static void cpu__act_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__act_job_t *job = ctx;
    const size_t off = (size_t)begin * job->esize;
    if (job->grad)
        job->grad(job->out + off, job->dy + off, job->in + off, (size_t)(end - begin),
                  &job->params);
    else
        job->fn(job->out + off, job->in + off, (size_t)(end - begin), &job->params);
}

/* The activations whose forward loops are cpu__<name>_<T> and gradient loops
 * cpu__<name>_grad_<T>, op codes CPU__OP_<CODE> and CPU__OP_<CODE>GRAD (Gelu, with its tanh form,
 * is picked apart). */
#define CPU__PLAIN_ACTS(X)               \
    X(ELU, elu)                          \
    X(SELU, selu)                        \
    X(CELU, celu)                        \
    X(HARDSIGMOID, hard_sigmoid)         \
    X(HARDSWISH, hard_swish)             \
    X(THRESHOLDEDRELU, thresholded_relu) \
    X(SOFTSIGN, softsign)                \
    X(SHRINK, shrink)                    \
    X(MISH, mish)

/* Sets @p job's loop for the call's op code: a forward one (fn) or a gradient one (grad), in
 * f32 or f64. */
static int32_t cpu__act_pick(const cpu__call_t *call, int tanh_form, cpu__act_job_t *job) {
    const int f32 = call->out.dtype == SES_DRV_DTYPE_F32;
#define CPU__PICK(to, prefix) job->to = f32 ? prefix##f32 : prefix##f64
#define CPU__CASE(CODE, name)                 \
    case CPU__OP_##CODE:                      \
        CPU__PICK(fn, cpu__##name##_);        \
        break;                                \
    case CPU__OP_##CODE##GRAD:                \
        CPU__PICK(grad, cpu__##name##_grad_); \
        break;
    switch (call->spec->code) {
        CPU__PLAIN_ACTS(CPU__CASE)
        case CPU__OP_GELU:
            if (tanh_form)
                CPU__PICK(fn, cpu__gelu_tanh_);
            else
                CPU__PICK(fn, cpu__gelu_);
            break;
        case CPU__OP_GELUGRAD:
            if (tanh_form)
                CPU__PICK(grad, cpu__gelu_tanh_grad_);
            else
                CPU__PICK(grad, cpu__gelu_grad_);
            break;
        default:
            return cpu__call_fail(call, SES_DRV_INTERNAL, "no loop for op code %" PRIu32,
                                  call->spec->code);
    }
#undef CPU__CASE
#undef CPU__PICK
    return SES_DRV_OK;
}

int32_t cpu__act(const cpu__call_t *call) {
    cpu__act_job_t job = {NULL,  NULL, call->out.data, NULL, call->in[0].data, call->out.esize,
                          {0, 0}};
    int tanh_form = 0;
    int32_t st;

    if ((st = cpu__act_params(call, call->spec->code, &job.params, &tanh_form)) != SES_DRV_OK ||
        (st = cpu__act_pick(call, tanh_form, &job)) != SES_DRV_OK)
        return st;
    if (!cpu__same_shape(&call->in[0], &call->out)) {
        char a[96], o[96];
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "shapes differ: input 0 is %s, output is %s",
                              cpu__format_dims(call->in[0].dims, call->in[0].rank, a, sizeof a),
                              cpu__format_dims(call->out.dims, call->out.rank, o, sizeof o));
    }
    if (call->out.count == 0)
        return SES_DRV_OK;
    cpu__parallel(call, call->out.count, CPU__ACT_COST, cpu__act_task, &job);
    return SES_DRV_OK;
}

int32_t cpu__act_grad(const cpu__call_t *call) {
    cpu__act_job_t job = {
        NULL, NULL, call->out.data, call->in[0].data, call->in[1].data, call->out.esize, {0, 0}};
    int tanh_form = 0;
    int32_t st;

    if ((st = cpu__act_params(call, call->spec->code, &job.params, &tanh_form)) != SES_DRV_OK ||
        (st = cpu__act_pick(call, tanh_form, &job)) != SES_DRV_OK)
        return st;
    if (!cpu__same_shape(&call->in[0], &call->out) || !cpu__same_shape(&call->in[1], &call->out)) {
        char a[96], b[96], o[96];
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "shapes differ: input 0 is %s, input 1 is %s, output is %s",
                              cpu__format_dims(call->in[0].dims, call->in[0].rank, a, sizeof a),
                              cpu__format_dims(call->in[1].dims, call->in[1].rank, b, sizeof b),
                              cpu__format_dims(call->out.dims, call->out.rank, o, sizeof o));
    }
    if (call->out.count == 0)
        return SES_DRV_OK;
    cpu__parallel(call, call->out.count, CPU__ACT_COST, cpu__act_task, &job);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Sum and Mean: any number of inputs, broadcast, folded into the output one at a time; Mean
 * then scales by 1 / n.
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__mean_job {
    void *out;
    double scale;
} cpu__mean_job_t;

/* Rows of the fold: in[0] is the output itself (step 1), in[1] the input being added. */
#define CPU__FOLD_ROWS(S, T)                                                                    \
    CPU__ISA_CLONES static void cpu__sum_copy_##S(                                              \
        void *out_, const void *const *in, const int64_t *step, size_t n, const void *params) { \
        T *out = out_;                                                                          \
        const T *b = in[1];                                                                     \
        const int64_t sb = step[1];                                                             \
        (void)params;                                                                           \
        for (size_t i = 0; i < n; i++)                                                          \
            out[i] = b[(int64_t)i * sb];                                                        \
    }                                                                                           \
    CPU__ISA_CLONES static void cpu__sum_add_##S(                                               \
        void *out_, const void *const *in, const int64_t *step, size_t n, const void *params) { \
        T *out = out_;                                                                          \
        const T *b = in[1];                                                                     \
        (void)params;                                                                           \
        if (step[1]) {                                                                          \
            for (size_t i = 0; i < n; i++)                                                      \
                out[i] += b[i];                                                                 \
        } else {                                                                                \
            const T y = b[0];                                                                   \
            for (size_t i = 0; i < n; i++)                                                      \
                out[i] += y;                                                                    \
        }                                                                                       \
    }                                                                                           \
    static void cpu__mean_scale_##S(void *ctx, uint64_t begin, uint64_t end) {                  \
        const cpu__mean_job_t *job = ctx;                                                       \
        T *out = (T *)job->out;                                                                 \
        const T k = (T)job->scale;                                                              \
        for (uint64_t i = begin; i < end; i++)                                                  \
            out[i] *= k;                                                                        \
    }

CPU__FOLD_ROWS(f32, float)
CPU__FOLD_ROWS(f64, double)

int32_t cpu__sum_mean(const cpu__call_t *call) {
    const uint32_t n = call->n_in;
    const int f32 = call->out.dtype == SES_DRV_DTYPE_F32;
    cpu__row_fn copy = f32 ? cpu__sum_copy_f32 : cpu__sum_copy_f64;
    cpu__row_fn add = f32 ? cpu__sum_add_f32 : cpu__sum_add_f64;
    uint32_t first = 0;
    cpu__strided_t s;
    int32_t st;

    if ((st = cpu__check_rank(call, "output 0", &call->out)) != SES_DRV_OK)
        return st;
    for (uint32_t k = 0; k < n; k++) {
        cpu__tensor_t t = cpu__input(call, k);
        char role[24];
        snprintf(role, sizeof role, "input %" PRIu32, k);
        if ((st = cpu__check_rank(call, role, &t)) != SES_DRV_OK)
            return st;
        /* An input the output was written over is folded first, before anything changes it. */
        if (t.data == call->out.data && t.count == call->out.count && t.count > 0)
            first = k;
    }
    /* The output must be the inputs' broadcast: each of its dims some input's (aligned at the
     * last), or 1, and its rank the largest. */
    uint32_t max_rank = 0;
    for (uint32_t k = 0; k < n; k++) {
        cpu__tensor_t t = cpu__input(call, k);
        max_rank = t.rank > max_rank ? t.rank : max_rank;
    }
    int is_broadcast = max_rank == call->out.rank;
    for (uint32_t d = 0; is_broadcast && d < call->out.rank; d++) {
        const int64_t want = call->out.dims[d];
        int found = want == 1;
        for (uint32_t k = 0; k < n && !found; k++) {
            cpu__tensor_t t = cpu__input(call, k);
            const uint32_t back = call->out.rank - d;
            found = t.rank >= back && t.dims[t.rank - back] == want;
        }
        is_broadcast = found;
    }
    if (!is_broadcast) {
        char o[96];
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "the output %s is not the broadcast of the %" PRIu32 " inputs",
                              cpu__format_dims(call->out.dims, call->out.rank, o, sizeof o), n);
    }
    /* Every input must broadcast to the output: plan each now, before writing anything. */
    for (uint32_t k = 0; k < n; k++) {
        cpu__tensor_t pair[2] = {call->out, cpu__input(call, k)};
        if (!cpu__broadcast_plan(pair, 2, &call->out, &s)) {
            char a[96], o[96];
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "input %" PRIu32
                                  " is %s, which does not broadcast to the "
                                  "output %s",
                                  k, cpu__format_dims(pair[1].dims, pair[1].rank, a, sizeof a),
                                  cpu__format_dims(call->out.dims, call->out.rank, o, sizeof o));
        }
    }
    if (call->out.count == 0)
        return SES_DRV_OK;
    for (uint32_t k = 0; k < n; k++) {
        const uint32_t which = k == 0 ? first : k <= first ? k - 1 : k;
        cpu__tensor_t pair[2] = {call->out, cpu__input(call, which)};
        if (!cpu__broadcast_plan(pair, 2, &call->out, &s))
            return cpu__call_fail(call, SES_DRV_INTERNAL, "input %" PRIu32 " does not broadcast",
                                  which);
        cpu__strided_parallel(call, &s, k == 0 ? copy : add, NULL, 1);
    }
    if (call->spec->code == CPU__OP_MEAN) {
        cpu__mean_job_t job = {call->out.data, 1.0 / (double)n};
        cpu__parallel(call, call->out.count, 1, f32 ? cpu__mean_scale_f32 : cpu__mean_scale_f64,
                      &job);
    }
    return SES_DRV_OK;
}
