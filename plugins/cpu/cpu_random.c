/*
 * The random ops: Dropout in training mode, Bernoulli, RandomUniformLike and RandomNormalLike
 * (general entries with per-node state).
 *
 * Each plan node owns a Mersenne Twister (MT19937) stream, kept in its state and seeded at its
 * first launch: with the node's seed (has_seed, seed in [0, 2^32)), exactly as numpy's
 * np.random.seed(seed) seeds its legacy generator, or, without one, from the clock and a
 * process-wide counter. Every launch continues the stream, so a seeded node gives the same
 * sequence of results in every session, and successive runs of a node draw fresh values. The
 * draws are numpy's legacy ones, in row-major order:
 *   - uniform doubles in [0, 1): genrand_res53 (two 32-bit words);
 *   - Dropout: keep element i when u_i >= ratio (numpy: uniform(0, 1, shape) >= ratio), the
 *     kept ones scaled by 1 / (1 - ratio); ratio 0 draws nothing and keeps all; ratio must lie
 *     in [0, 1);
 *   - Bernoulli: 1 when u_i < p_i, 0 otherwise (p outside [0, 1] is refused);
 *   - RandomUniformLike: low + (high - low) * u_i;
 *   - RandomNormalLike: mean + scale * g_i, g from numpy's polar method, which makes two
 *     values per accepted pair and keeps the second for the next draw (in the state too).
 * A launch without state (a host that calls no create) seeds a stream of its own, every time.
 */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_half.h"
#include "cpu_internal.h"

#define CPU__MT_N 624
#define CPU__MT_M 397

typedef struct cpu__random_state {
    uint32_t mt[CPU__MT_N];
    uint32_t index; /* next word of mt; CPU__MT_N: regenerate first */
    int seeded;     /* the stream was seeded (at the first launch) */
    int has_gauss;  /* RandomNormalLike: gauss holds the polar method's second value */
    double gauss;
} cpu__random_state_t;

/* MT19937's init_genrand, numpy's seeding of its legacy generator by an integer. */
static void cpu__mt_seed(cpu__random_state_t *s, uint32_t seed) {
    s->mt[0] = seed;
    for (uint32_t i = 1; i < CPU__MT_N; i++)
        s->mt[i] = 1812433253u * (s->mt[i - 1] ^ (s->mt[i - 1] >> 30)) + i;
    s->index = CPU__MT_N;
    s->has_gauss = 0;
    s->gauss = 0;
    s->seeded = 1;
}

static uint32_t cpu__mt_next(cpu__random_state_t *s) {
    if (s->index >= CPU__MT_N) {
        for (uint32_t i = 0; i < CPU__MT_N; i++) {
            const uint32_t y =
                (s->mt[i] & 0x80000000u) | (s->mt[(i + 1) % CPU__MT_N] & 0x7FFFFFFFu);
            s->mt[i] =
                s->mt[(i + CPU__MT_M) % CPU__MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908B0DFu : 0u);
        }
        s->index = 0;
    }
    uint32_t y = s->mt[s->index++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9D2C5680u;
    y ^= (y << 15) & 0xEFC60000u;
    y ^= y >> 18;
    return y;
}

/* A double in [0, 1) with 53 random bits (genrand_res53). */
static double cpu__mt_double(cpu__random_state_t *s) {
    const uint32_t a = cpu__mt_next(s) >> 5, b = cpu__mt_next(s) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
}

/* A standard normal value: numpy's legacy polar method, caching the pair's second value. */
static double cpu__mt_gauss(cpu__random_state_t *s) {
    if (s->has_gauss) {
        s->has_gauss = 0;
        return s->gauss;
    }
    double x1, x2, r2;
    do {
        x1 = 2.0 * cpu__mt_double(s) - 1.0;
        x2 = 2.0 * cpu__mt_double(s) - 1.0;
        r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = sqrt(-2.0 * log(r2) / r2);
    s->gauss = f * x1;
    s->has_gauss = 1;
    return f * x2;
}

/* A seed for a node without one: the clock, and a counter so that two nodes seeded in the same
 * nanosecond still differ. */
static uint32_t cpu__entropy(void) {
    static atomic_uint_fast64_t counter;
    struct timespec t;
    uint64_t z = atomic_fetch_add(&counter, 1) * UINT64_C(0x9E3779B97F4A7C15);

    clock_gettime(CLOCK_REALTIME, &t);
    z ^= (uint64_t)t.tv_sec * UINT64_C(1000000007) + (uint64_t)t.tv_nsec;
    /* splitmix64's finalizer */
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return (uint32_t)(z ^ (z >> 31));
}

int32_t cpu__random_create(ses_drv_device_t *device, const ses_drv_node_t *node, void **out_state) {
    (void)node;
    if (!out_state)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "create: out_state is NULL");
    *out_state = calloc(1, sizeof(cpu__random_state_t));
    if (!*out_state)
        return cpu__device_fail(device, SES_DRV_OUT_OF_MEMORY,
                                "create: no memory for a random stream's state");
    return SES_DRV_OK;
}

void cpu__random_destroy(ses_drv_device_t *device, void *state) {
    (void)device;
    free(state);
}

/* Element @p i of @p t (f32, f64, f16 or bf16) as a double. */
static double cpu__float_at(const cpu__tensor_t *t, uint64_t i) {
    switch (t->dtype) {
        case SES_DRV_DTYPE_F32:
            return ((const float *)(const void *)t->data)[i];
        case SES_DRV_DTYPE_F64:
            return ((const double *)(const void *)t->data)[i];
        case SES_DRV_DTYPE_F16:
            return cpu__f16_to_float(((const uint16_t *)(const void *)t->data)[i]);
        default:
            return cpu__bf16_to_float(((const uint16_t *)(const void *)t->data)[i]);
    }
}

/* Stores @p v as element @p i of @p t, rounded to its dtype (floats; integers truncated,
 * which only ever sees 0 and 1 here; bool non-zero). */
static void cpu__store_at(const cpu__tensor_t *t, uint64_t i, double v) {
    void *p = t->data;
#define CPU__STORE(D, T)    \
    case SES_DRV_DTYPE_##D: \
        ((T *)p)[i] = (T)v; \
        break
    switch (t->dtype) {
        CPU__STORE(F32, float);
        CPU__STORE(F64, double);
        CPU__STORE(I8, int8_t);
        CPU__STORE(I16, int16_t);
        CPU__STORE(I32, int32_t);
        CPU__STORE(I64, int64_t);
        CPU__STORE(U8, uint8_t);
        CPU__STORE(U16, uint16_t);
        CPU__STORE(U32, uint32_t);
        CPU__STORE(U64, uint64_t);
        case SES_DRV_DTYPE_F16:
            ((uint16_t *)p)[i] = cpu__f16_from_double(v);
            break;
        case SES_DRV_DTYPE_BF16:
            ((uint16_t *)p)[i] = cpu__bf16_from_double(v);
            break;
        default:
            ((uint8_t *)p)[i] = (uint8_t)(v != 0);
            break;
    }
#undef CPU__STORE
}

static int32_t cpu__dropout_train(const cpu__call_t *call, cpu__random_state_t *s) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    const cpu__tensor_t *mask = call->n_out > 1 ? &call->outs[1] : NULL;

    if (call->in[1].count != 1 || !cpu__same_shape(x, y) || (mask && !cpu__same_shape(x, mask)))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "ratio must be one element, and the output and mask the data's "
                              "shape");
    const double ratio = cpu__float_at(&call->in[1], 0);
    if (!(ratio >= 0 && ratio < 1))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "ratio is %g; it must lie in [0, 1)",
                              ratio);
    if (ratio == 0) {
        if (x->count && y->data != x->data)
            memcpy(y->data, x->data, (size_t)(x->count * x->esize));
        if (mask && mask->count)
            memset(mask->data, 1, (size_t)mask->count);
        return SES_DRV_OK;
    }
    const double scale = 1.0 / (1.0 - ratio);
    for (uint64_t i = 0; i < x->count; i++) {
        const int keep = cpu__mt_double(s) >= ratio;
        if (x->dtype == SES_DRV_DTYPE_F32) {
            const float v = ((const float *)(const void *)x->data)[i];
            ((float *)(void *)y->data)[i] = keep ? v * (float)scale : 0.0f;
        } else {
            const double v = ((const double *)(const void *)x->data)[i];
            ((double *)(void *)y->data)[i] = keep ? v * scale : 0.0;
        }
        if (mask)
            mask->data[i] = (unsigned char)keep;
    }
    return SES_DRV_OK;
}

static int32_t cpu__bernoulli(const cpu__call_t *call, cpu__random_state_t *s) {
    const cpu__tensor_t *p = &call->in[0], *y = &call->outs[0];

    if (!cpu__same_shape(p, y))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "the output must have the input's shape");
    for (uint64_t i = 0; i < p->count; i++) {
        const double pi = cpu__float_at(p, i);
        if (!(pi >= 0 && pi <= 1))
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "input element %" PRIu64 " is %g, not a probability in [0, 1]", i,
                                  pi);
    }
    for (uint64_t i = 0; i < p->count; i++)
        cpu__store_at(y, i, cpu__mt_double(s) < cpu__float_at(p, i) ? 1.0 : 0.0);
    return SES_DRV_OK;
}

static int32_t cpu__random_like(const cpu__call_t *call, cpu__random_state_t *s) {
    const int uniform = call->spec->code == CPU__OP_RANDOMUNIFORMLIKE;
    const cpu__tensor_t *y = &call->outs[0];
    double a, b;
    int32_t st;

    if ((st = cpu__attr_float(call, uniform ? "low" : "mean", 0.0, &a)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, uniform ? "high" : "scale", 1.0, &b)) != SES_DRV_OK)
        return st;
    if (!cpu__same_shape(&call->in[0], y))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "the output must have the input's shape");
    for (uint64_t i = 0; i < y->count; i++)
        cpu__store_at(y, i, uniform ? a + (b - a) * cpu__mt_double(s) : a + b * cpu__mt_gauss(s));
    return SES_DRV_OK;
}

int32_t cpu__random(const cpu__call_t *call) {
    cpu__random_state_t *s = call->state, *own = NULL;
    int64_t has_seed = 0, seed = 0;
    int32_t st;

    if ((st = cpu__attr_int(call, "has_seed", 1, 0, &has_seed)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "seed", 1, 0, &seed)) != SES_DRV_OK)
        return st;
    if (has_seed && (seed < 0 || seed > (int64_t)UINT32_MAX))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute seed is %" PRId64 "; it must lie in [0, 2^32)", seed);
    if (!s) {
        if (!(own = malloc(sizeof *own)))
            return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY,
                                  "no memory for a random stream's state");
        own->seeded = 0;
        s = own;
    }
    if (!s->seeded)
        cpu__mt_seed(s, has_seed ? (uint32_t)seed : cpu__entropy());
    switch (call->spec->code) {
        case CPU__OP_DROPOUT_TRAIN:
            st = cpu__dropout_train(call, s);
            break;
        case CPU__OP_BERNOULLI:
            st = cpu__bernoulli(call, s);
            break;
        default:
            st = cpu__random_like(call, s);
            break;
    }
    free(own);
    return st;
}
