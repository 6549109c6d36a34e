/*
 * Kernel checks: every (op, signature) a driver claims runs as a one-node graph in a session on
 * the driver's device with fallback denied, so the node cannot quietly run elsewhere, and in a
 * session on the reference driver (the CPU driver, one thread), on the same random inputs.
 * The outputs must agree within the op's tolerance.
 *
 * Going through sessions means a kernel sees exactly what it sees in production: shapes inferred
 * by libsession, shape-like inputs resolved into normalized attributes, arena offsets, copies
 * to and from its device.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "kernel_cases.h"

#define MAX_ARGS 9 /* QLinearConv with its bias */
#define MAX_RANK 8
#define MAX_VALUES 16
#define MAX_ATTRS 10 /* TfIdfVectorizer's cases have 8 */

typedef struct arg {
    int is_const; /* an i64 (or bool) constant (shape-like) input rather than random data */
    int is_bool;  /* is_const: a bool constant ("bool:[1]"), else i64 */
    int is_like;  /* "@like": data the kernel does not receive, of the output's dtype (an
                     in-place update's: its first input's) */
    int is_var;   /* "+var": a variable (an in-place update op writes it), compared after */
    size_t rank;
    int64_t dims[MAX_RANK];
    char domain[16];
    int64_t values[MAX_VALUES]; /* is_const: the constant's values (rank 1, dims[0] of them) */
    int is_f32;                 /* is_const: an f32 constant ("f32:[...]"), values in floats */
    double floats[MAX_VALUES];
    char name[32];
} arg_t;

typedef struct attr_spec {
    char name[32];
    ses_attr_type_t type;
    int64_t i;
    double f;
    int64_t ints[MAX_VALUES];
    double floats[MAX_VALUES]; /* SES_ATTR_FLOATS */
    size_t count;
    char s[32]; /* SES_ATTR_STRING */
} attr_spec_t;

/* "[0.5,-1.0]" (a list with a '.') into @p out: at most @p max values. */
static int parse_floats(const char *p, double *out, size_t max, size_t *out_count) {
    size_t n = 0;
    char *end;

    if (*p++ != '[')
        return 0;
    while (*p && *p != ']') {
        if (n == max)
            return 0;
        out[n++] = strtod(p, &end);
        if (end == p)
            return 0;
        p = *end == ',' ? end + 1 : end;
    }
    *out_count = n;
    return *p == ']';
}

typedef struct kcase {
    arg_t args[MAX_ARGS];
    size_t n_args, n_data; /* n_data: the data inputs the kernel receives */
    attr_spec_t attrs[MAX_ATTRS];
    size_t n_attrs;
    int expect_nan; /* "!nan": every output element must be NaN, whatever the reference says */
} kcase_t;

typedef struct signature {
    ses_dtype_t in[MAX_ARGS];
    size_t n_in;
    int variadic;
    ses_dtype_t out[MAX_ARGS];
    size_t n_out;
} signature_t;

/* ---- parsing -------------------------------------------------------------------------------- */

static ses_dtype_t dtype_of(const char *s, size_t n) {
    for (int d = SES_F32; d <= SES_BOOL; d++) {
        const char *name = ses_dtype_name((ses_dtype_t)d);
        if (strlen(name) == n && !strncmp(name, s, n))
            return (ses_dtype_t)d;
    }
    return SES_DTYPE_INVALID;
}

static int parse_signature(const char *text, signature_t *sig) {
    const char *arrow = strstr(text, "->");
    const char *p = text;

    memset(sig, 0, sizeof *sig);
    if (!arrow)
        return 0;
    while (p < arrow && sig->n_in < MAX_ARGS) {
        const char *end = p;
        while (end < arrow && *end != ',' && *end != '.')
            end++;
        if ((sig->in[sig->n_in++] = dtype_of(p, (size_t)(end - p))) == SES_DTYPE_INVALID)
            return 0;
        if (end < arrow && *end == '.') {
            sig->variadic = 1;
            end += 3;
        }
        p = end < arrow ? end + 1 : end;
    }
    for (p = arrow + 2; *p && sig->n_out < MAX_ARGS;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if ((sig->out[sig->n_out++] = dtype_of(p, n)) == SES_DTYPE_INVALID)
            return 0;
        p += n + (end ? 1 : 0);
    }
    /* No outputs ("f32,f32,f32->") is an in-place update op, which writes its inputs. */
    return sig->n_in > 0;
}

/* "[2,3,-1]" → values; returns the text after ']' or NULL. */
static const char *parse_list(const char *p, int64_t *values, size_t cap, size_t *n) {
    *n = 0;
    if (*p++ != '[')
        return NULL;
    while (*p && *p != ']') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || *n == cap)
            return NULL;
        values[(*n)++] = v;
        p = end;
        if (*p == ',')
            p++;
    }
    return *p == ']' ? p + 1 : NULL;
}

static int parse_case(const char *text, kcase_t *c) {
    const char *p = text;

    memset(c, 0, sizeof *c);
    while (*p) {
        const char *eq, *end;
        char token[160];
        size_t n;

        while (*p == ' ')
            p++;
        if (!*p)
            break;
        end = strchr(p, ' ');
        n = end ? (size_t)(end - p) : strlen(p);
        if (n >= sizeof token)
            return 0;
        memcpy(token, p, n);
        token[n] = '\0';
        p += n;
        eq = strchr(token, '=');
        if (!strcmp(token, "!nan")) {
            c->expect_nan = 1;
        } else if (token[0] == '[') {
            arg_t *a;
            const char *rest;
            if (c->n_args == MAX_ARGS)
                return 0;
            a = &c->args[c->n_args++];
            rest = parse_list(token, a->dims, MAX_RANK, &a->rank);
            if (!rest)
                return 0;
            snprintf(a->domain, sizeof a->domain, "%s", *rest == '@' ? rest + 1 : "any");
            if (strlen(a->domain) > 4 && !strcmp(a->domain + strlen(a->domain) - 4, "+var")) {
                a->is_var = 1;
                a->domain[strlen(a->domain) - 4] = '\0';
            }
            a->is_like = !strcmp(a->domain, "like");
            if (a->is_like)
                snprintf(a->name, sizeof a->name, "like%zu", c->n_args - 1);
            else
                snprintf(a->name, sizeof a->name, "in%zu", c->n_data++);
        } else if (eq && !strncmp(eq + 1, "f32:", 4)) {
            /* An f32 constant input (Resize's roi and scales), possibly empty. */
            arg_t *a;
            size_t count;
            if (c->n_args == MAX_ARGS)
                return 0;
            a = &c->args[c->n_args++];
            a->is_const = 1;
            a->is_f32 = 1;
            if (!parse_floats(eq + 5, a->floats, MAX_VALUES, &count))
                return 0;
            a->rank = 1;
            a->dims[0] = (int64_t)count;
            snprintf(a->name, sizeof a->name, "%.*s", (int)(eq - token), token);
        } else if (eq && (!strncmp(eq + 1, "i64:", 4) || !strncmp(eq + 1, "bool:", 5))) {
            arg_t *a;
            size_t count;
            if (c->n_args == MAX_ARGS)
                return 0;
            a = &c->args[c->n_args++];
            a->is_const = 1;
            a->is_bool = eq[1] == 'b';
            if (!parse_list(eq + (a->is_bool ? 6 : 5), a->values, MAX_VALUES, &count))
                return 0;
            a->rank = 1;
            a->dims[0] = (int64_t)count;
            snprintf(a->name, sizeof a->name, "%.*s", (int)(eq - token), token);
        } else if (eq) {
            attr_spec_t *at;
            if (c->n_attrs == MAX_ATTRS)
                return 0;
            at = &c->attrs[c->n_attrs++];
            snprintf(at->name, sizeof at->name, "%.*s", (int)(eq - token), token);
            if (eq[1] == '[' && strchr(eq + 1, '.')) {
                at->type = SES_ATTR_FLOATS;
                if (!parse_floats(eq + 1, at->floats, MAX_VALUES, &at->count))
                    return 0;
            } else if (eq[1] == '[') {
                at->type = SES_ATTR_INTS;
                if (!parse_list(eq + 1, at->ints, MAX_VALUES, &at->count))
                    return 0;
            } else if ((eq[1] >= 'a' && eq[1] <= 'z') || (eq[1] >= 'A' && eq[1] <= 'Z')) {
                at->type = SES_ATTR_STRING;
                if (strlen(eq + 1) >= sizeof at->s)
                    return 0;
                snprintf(at->s, sizeof at->s, "%s", eq + 1);
            } else if (strchr(eq + 1, '.')) {
                at->type = SES_ATTR_FLOAT;
                at->f = strtod(eq + 1, NULL);
            } else {
                at->type = SES_ATTR_INT;
                at->i = strtoll(eq + 1, NULL, 10);
            }
        } else {
            return 0;
        }
    }
    return 1;
}

/* ---- values ------------------------------------------------------------------------------- */

static uint64_t next_random(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * UINT64_C(2685821657736338717);
}

static double uniform(uint64_t *state, double lo, double hi) {
    return lo + (hi - lo) * ((double)(next_random(state) >> 11) / 9007199254740992.0);
}

static int64_t integer(uint64_t *state, int64_t lo, int64_t hi) {
    return lo + (int64_t)(next_random(state) % (uint64_t)(hi - lo + 1));
}

static uint16_t f32_to_f16(float value) {
    uint32_t x;
    uint32_t sign, exponent, mantissa;

    memcpy(&x, &value, sizeof x);
    sign = (x >> 16) & 0x8000u;
    exponent = (x >> 23) & 0xFFu;
    mantissa = x & 0x7FFFFFu;
    if (exponent == 0xFF)
        return (uint16_t)(sign | 0x7C00u | (mantissa ? 0x200u : 0));
    if (exponent > 142)
        return (uint16_t)(sign | 0x7C00u);
    if (exponent < 113) {
        /* Subnormal or zero in f16: shift with round to nearest even. */
        uint32_t shift, m, half, rest;
        if (exponent < 102)
            return (uint16_t)sign;
        m = mantissa | 0x800000u;
        shift = 126 - exponent;
        half = 1u << (shift - 1);
        rest = m & ((1u << shift) - 1);
        m >>= shift;
        if (rest > half || (rest == half && (m & 1)))
            m++;
        return (uint16_t)(sign | m);
    }
    {
        uint32_t h = ((exponent - 112) << 10) | (mantissa >> 13);
        uint32_t rest = mantissa & 0x1FFFu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;
    uint32_t x;
    float f;

    if (exponent == 0x1F) {
        x = sign | 0x7F800000u | (mantissa << 13);
    } else if (exponent == 0) {
        f = (float)mantissa * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -f : f;
    } else {
        x = sign | ((exponent + 112) << 23) | (mantissa << 13);
    }
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint16_t f32_to_bf16(float value) {
    uint32_t x;

    memcpy(&x, &value, sizeof x);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t b) {
    uint32_t x = (uint32_t)b << 16;
    float f;

    memcpy(&f, &x, sizeof f);
    return f;
}

/*
 * @p v as a float rounded to odd: when v is not a float, the neighbour whose last bit is 1.
 * Rounding that float to f16 or bf16 (to nearest even) then gives the same result as rounding v
 * directly, because a float keeps more than twice their precision plus two bits (24 >= 2 * 11
 * + 2); a plain (float)v would round twice and could miss near ties.
 */
static float to_float_odd(double v) {
    float f = (float)v;
    uint32_t bits;

    if (isnan(v) || isinf(f) || (double)f == v)
        return f;
    memcpy(&bits, &f, sizeof bits);
    if (!(bits & 1u))
        f = nextafterf(f, v > (double)f ? INFINITY : -INFINITY);
    return f;
}

static int is_float(ses_dtype_t d) {
    return d == SES_F32 || d == SES_F64 || d == SES_F16 || d == SES_BF16;
}

static int is_narrow(ses_dtype_t d) {
    return d == SES_F16 || d == SES_BF16;
}

static int is_unsigned(ses_dtype_t d) {
    return d == SES_U8 || d == SES_U16 || d == SES_U32 || d == SES_U64;
}

static void store(void *data, size_t i, ses_dtype_t d, double v) {
    switch (d) {
    case SES_F32: ((float *)data)[i] = (float)v; break;
    case SES_F64: ((double *)data)[i] = v; break;
    case SES_F16: ((uint16_t *)data)[i] = f32_to_f16(to_float_odd(v)); break;
    case SES_BF16: ((uint16_t *)data)[i] = f32_to_bf16(to_float_odd(v)); break;
    case SES_I8: ((int8_t *)data)[i] = (int8_t)v; break;
    case SES_I16: ((int16_t *)data)[i] = (int16_t)v; break;
    case SES_I32: ((int32_t *)data)[i] = (int32_t)v; break;
    case SES_I64: ((int64_t *)data)[i] = (int64_t)v; break;
    case SES_U8: ((uint8_t *)data)[i] = (uint8_t)v; break;
    case SES_U16: ((uint16_t *)data)[i] = (uint16_t)v; break;
    case SES_U32: ((uint32_t *)data)[i] = (uint32_t)v; break;
    case SES_U64: ((uint64_t *)data)[i] = (uint64_t)v; break;
    case SES_BOOL: ((uint8_t *)data)[i] = v != 0.0; break;
    default: break;
    }
}

static double load(const void *data, size_t i, ses_dtype_t d) {
    switch (d) {
    case SES_F32: return ((const float *)data)[i];
    case SES_F64: return ((const double *)data)[i];
    case SES_F16: return f16_to_f32(((const uint16_t *)data)[i]);
    case SES_BF16: return bf16_to_f32(((const uint16_t *)data)[i]);
    case SES_I8: return ((const int8_t *)data)[i];
    case SES_I16: return ((const int16_t *)data)[i];
    case SES_I32: return ((const int32_t *)data)[i];
    case SES_I64: return (double)((const int64_t *)data)[i];
    case SES_U8: return ((const uint8_t *)data)[i];
    case SES_U16: return ((const uint16_t *)data)[i];
    case SES_U32: return ((const uint32_t *)data)[i];
    case SES_U64: return (double)((const uint64_t *)data)[i];
    case SES_BOOL: return ((const uint8_t *)data)[i];
    default: return 0.0;
    }
}

/* One random value of @p domain for @p d (see kernel_cases.h). */
static double draw(uint64_t *rng, const char *domain, ses_dtype_t d) {
    const int f = is_float(d), u = is_unsigned(d);

    if (d == SES_BOOL)
        return (double)integer(rng, 0, 1);
    if (!strncmp(domain, "class", 5)) {
        int64_t n = strtoll(domain + 5, NULL, 10);
        return (double)integer(rng, 0, n - 1);
    }
    if (!strncmp(domain, "idx", 3)) {
        int64_t n = strtoll(domain + 3, NULL, 10);
        return (double)integer(rng, -n, n - 1);
    }
    if (!strcmp(domain, "span") && f) {
        /* The kit's own Cast cases between f16 or bf16 and the wider floats (see run_case):
         * every binade from below the f16 subnormals to past the f16 maximum, exact ties of
         * both narrow types (odd 12-bit and 9-bit significands; 4095 * 2^4 is the tie between
         * 65504 and infinity), infinities and NaN. */
        const double sign = integer(rng, 0, 1) ? 1.0 : -1.0;
        const int64_t kind = integer(rng, 0, 15);
        if (kind == 0)
            return sign * INFINITY;
        if (kind == 1)
            return NAN;
        if (kind == 2)
            return sign * ldexp((double)(integer(rng, 2048, 4095) | 1), (int)integer(rng, -35, 4));
        if (kind == 3)
            return sign * ldexp((double)(integer(rng, 256, 511) | 1), (int)integer(rng, -32, 8));
        return sign * ldexp(uniform(rng, 1.0, 2.0), (int)integer(rng, -27, 17));
    }
    if (!strcmp(domain, "small"))
        return (double)integer(rng, u ? 0 : -2, 2);
    if (!strcmp(domain, "prob")) /* probabilities and Dropout's ratio */
        return f ? uniform(rng, 0.0, 0.95) : (double)integer(rng, 0, 1);
    if (!strcmp(domain, "cast"))
        return f ? 0.25 * (double)integer(rng, 0, 400) : (double)integer(rng, 0, 100);
    if (!strcmp(domain, "pos"))
        return f ? uniform(rng, 0.1, 4.0) : (double)integer(rng, 1, 20);
    if (!strcmp(domain, "nz")) {
        double sign = u || integer(rng, 0, 1) ? 1.0 : -1.0;
        return sign * (f ? uniform(rng, 0.5, 4.0) : (double)integer(rng, 1, 20));
    }
    if (!strcmp(domain, "unit"))
        return f ? uniform(rng, -1.0, 1.0) : (double)integer(rng, u ? 0 : -1, 1);
    if (!strcmp(domain, "exp"))
        return f ? uniform(rng, -2.0, 2.0) : (double)integer(rng, u ? 0 : -2, 2);
    return f ? uniform(rng, -3.0, 3.0) : (double)integer(rng, u ? 0 : -20, u ? 40 : 20);
}

/* Whether @p domain puts NaN into the values (DRV-54): "nan" every element, "nanrow" one per
 * row of the last dimension, "somenan" about one in four. */
static int is_nan_domain(const char *domain) {
    return !strcmp(domain, "nan") || !strcmp(domain, "nanrow") || !strcmp(domain, "somenan");
}

/*
 * Element @p i of an input of shape (@p dims, @p rank) drawn from @p domain. The NaN domains
 * place their NaNs by position, so that a case can say where a NaN must come out: "nanrow" has
 * one in each row of the last dimension, at a column that moves from row to row (first,
 * middle, last), so a max that lets NaN win only at one place is caught.
 */
static double draw_at(uint64_t *rng, const char *domain, ses_dtype_t d, size_t i,
                      const int64_t *dims, size_t rank) {
    if (!strcmp(domain, "nan"))
        return NAN;
    if (!strcmp(domain, "nanrow")) {
        const size_t len = rank && dims[rank - 1] > 0 ? (size_t)dims[rank - 1] : 1;
        const size_t row = i / len;
        if (i % len == (row * 5 + 2) % len)
            return NAN;
        return draw(rng, "any", d);
    }
    if (!strcmp(domain, "somenan")) {
        if (next_random(rng) % 4 == 0)
            return NAN;
        return draw(rng, "any", d);
    }
    return draw(rng, domain, d);
}

/* ---- comparing ---------------------------------------------------------------------------- */

typedef struct compare {
    double max_abs, max_rel;
    char first[512]; /* the first element out of tolerance, or "" */
} compare_t;

/*
 * The tolerance for an output of dtype @p d. @p widened: the reference ran in f32 on the f16 or
 * bf16 inputs widened (run_case), so its result is the exact one to about f32 precision, and
 * @p k bounds the length of the op's sums of products (1 for other ops).
 */
static void tolerance(const ses_conf_op_cases_t *spec, ses_dtype_t d, int widened, double k,
                      double addend, double *rtol, double *atol) {
    *rtol = spec->rtol;
    *atol = spec->atol;
    if (!is_float(d) || (spec->rtol == 0.0 && spec->atol == 0.0)) {
        /* Exact ops stay exact in f16 and bf16 too: the values they move or select are the
         * narrow inputs themselves, which the f32 reference sees unchanged. */
        *rtol = *atol = 0.0;
    } else if (d == SES_F64) {
        *rtol *= 1e-6;
        *atol *= 1e-6;
    } else if (widened && is_narrow(d)) {
        /* A right kernel rounds once to the narrow type at the end (half an ulp, at most
         * 2^-11 of the value in f16 and 2^-8 in bf16) after computing in f32 (the f32
         * tolerance); we allow one ulp at the bottom of a binade, 2^-10 and 2^-7, so that an
         * f32 result a few f32 ulps off may round the other way. Tighter than any error worth
         * having: bf16 arithmetic where f16 was asked for errs by up to 2^-8, reading the other
         * narrow format or a wrong stride by O(1). In f16, results below 2^-14 are subnormal
         * and round to a multiple of 2^-24, hence that much absolute error.
         * Sums of products (MatMul, Gemm, MatMulGrad): cuBLAS and the reference accumulate in
         * f32, each erring by up to about k * 2^-24 * sum |a*b| <= k * 2^-24 on these @unit
         * operands; we allow four times that (tensor cores align products with truncation).
         * Accumulating in f16 instead errs by some 2^-11 of the running sum at each step and
         * fails. */
        const double ulp = d == SES_F16 ? 0x1p-10 : 0x1p-7;
        *rtol += ulp;
        *atol += (d == SES_F16 ? 0x1p-24 : 0.0) + (k > 1.0 ? k * 0x1p-22 : 0.0);
        /* Gemm with C: cuBLAS (as PyTorch's addmm) may round alpha op(A) op(B) to the narrow
         * type before adding beta C, a second rounding of a term as large as the result plus
         * |beta C| (@p addend bounds it): on an H200 an f16 result of -0.0115 came 2.3e-4 off,
         * half an ulp of the product's 0.47. */
        *atol += ulp * addend;
    } else if (d == SES_F16) {
        *rtol = fmax(*rtol, 1e-2);
        *atol = fmax(*atol * 100.0, 1e-2);
    } else if (d == SES_BF16) {
        *rtol = fmax(*rtol, 4e-2);
        *atol = fmax(*atol * 1000.0, 4e-2);
    }
}

static void format_index(size_t flat, const int64_t *dims, size_t rank, char *out, size_t size) {
    int64_t coords[MAX_RANK * 2];
    size_t used = 0;

    for (size_t k = rank; k-- > 0;) {
        coords[k] = dims[k] ? (int64_t)(flat % (size_t)dims[k]) : 0;
        flat = dims[k] ? flat / (size_t)dims[k] : 0;
    }
    used += (size_t)snprintf(out, size, "[");
    for (size_t k = 0; k < rank && used < size; k++)
        used += (size_t)snprintf(out + used, size - used, "%s%" PRId64, k ? "," : "", coords[k]);
    if (used < size)
        snprintf(out + used, size - used, "]");
}

static void format_shape(const int64_t *dims, size_t rank, char *out, size_t size) {
    size_t used = (size_t)snprintf(out, size, "[");
    for (size_t k = 0; k < rank && used < size; k++)
        used += (size_t)snprintf(out + used, size - used, "%s%" PRId64, k ? "," : "", dims[k]);
    if (used < size)
        snprintf(out + used, size - used, "]");
}

/*
 * Compares output @p index, which the driver must give as @p expect; returns 0 when it is out
 * of tolerance (c->first says where). @p want has @p expect too, or is the f32 reference's
 * output for an f16 or bf16 @p expect (@p widened; @p k and @p addend as for tolerance()).
 */
static int compare_output(const ses_conf_op_cases_t *spec, size_t index, ses_tensor_t *got,
                          ses_tensor_t *want, ses_dtype_t expect, int widened, double k,
                          double addend, compare_t *c) {
    const ses_dtype_t d = ses_tensor_dtype(want);
    const size_t rank = ses_tensor_rank(want), n = ses_tensor_count(want);
    const void *g = ses_tensor_data(got), *w = ses_tensor_data(want);
    double rtol, atol;

    if (ses_tensor_dtype(got) != expect || ses_tensor_rank(got) != rank ||
        memcmp(ses_tensor_dims(got), ses_tensor_dims(want), rank * sizeof(int64_t)) != 0) {
        char gs[128], ws[128];
        format_shape(ses_tensor_dims(got), ses_tensor_rank(got), gs, sizeof gs);
        format_shape(ses_tensor_dims(want), rank, ws, sizeof ws);
        snprintf(c->first, sizeof c->first, "output %zu is %s%s, the reference's is %s%s%s",
                 index, ses_dtype_name(ses_tensor_dtype(got)), gs, ses_dtype_name(expect), ws,
                 expect != d ? " (computed in f32)" : "");
        c->max_abs = c->max_rel = INFINITY;
        return 0;
    }
    if (!g || !w) {
        snprintf(c->first, sizeof c->first, "output %zu is not host-visible", index);
        return 0;
    }
    tolerance(spec, expect, widened, k, addend, &rtol, &atol);
    for (size_t i = 0; i < n; i++) {
        double a = load(g, i, expect), b = load(w, i, d);
        double diff, rel;

        if (isnan(a) && isnan(b))
            continue;
        diff = a == b ? 0.0 : (isnan(a) || isnan(b)) ? INFINITY : fabs(a - b);
        rel = diff == 0.0 ? 0.0 : b != 0.0 ? diff / fabs(b) : INFINITY;
        if (diff > c->max_abs)
            c->max_abs = diff;
        if (rel > c->max_rel)
            c->max_rel = rel;
        /* Equal values always agree: with an infinite want, rtol * |want| may be NaN. */
        if (diff != 0.0 && !(diff <= atol + rtol * fabs(b)) && !c->first[0]) {
            char where[128];
            format_index(i, ses_tensor_dims(want), rank, where, sizeof where);
            snprintf(c->first, sizeof c->first,
                     "output %zu%s: got %.9g, want %.9g (error %.3g, allowed %.3g)", index, where,
                     a, b, diff, atol + rtol * fabs(b));
        }
    }
    return c->first[0] == '\0';
}

/* ---- running one case -------------------------------------------------------------------- */

typedef enum outcome {
    CASE_PASSED,
    CASE_FAILED,     /* wrong values, or an error on the device */
    CASE_REFUSED,    /* the device has no kernel for this node (supports_node said no) */
    CASE_NO_REFERENCE, /* the reference cannot run it: the case says nothing about the driver */
    CASE_NO_GRAPH,   /* libsession itself refuses the node (an f16 or bf16 signature its op
                      * definitions do not admit yet): neither device can run it */
    CASE_BAD,        /* the case does not fit the signature (a bug in the suite) */
} outcome_t;

static const int cast_codes[] = {
    /* ONNX TensorProto codes of our dtypes, by ses_dtype_t value. */
    0, 1, 11, 10, 16, 3, 5, 6, 7, 2, 4, 12, 13, 9,
};

typedef struct built {
    ses_graph_t *graph;
    ses_edge_t fetches[MAX_ARGS];
    ses_dtype_t fetch_dtypes[MAX_ARGS];
    size_t n_fetches;
    ses_feed_t feeds[MAX_ARGS];
    size_t n_feeds;
    ses_node_t *target; /* an op without outputs: run it, then fetch the variables it wrote */
} built_t;

static void built_clear(built_t *b) {
    for (size_t i = 0; i < b->n_feeds; i++)
        ses_tensor_release(b->feeds[i].value);
    ses_graph_release(b->graph);
    memset(b, 0, sizeof *b);
}

/* @p v rounded to the f16 or bf16 @p d, as a double; other dtypes leave it as it is. */
static double round_to(double v, ses_dtype_t d) {
    uint16_t bits;

    if (!is_narrow(d))
        return v;
    store(&bits, 0, d, v);
    return load(&bits, 0, d);
}

/*
 * Builds the one-node graph of case @p c for @p sig, with inputs drawn from @p rng.
 * @p domain, unless NULL, replaces the domain of every data input. @p narrow, unless NULL, is
 * the signature @p sig widens (f32 where it has f16 or bf16): each input's values are rounded
 * to its dtype there first, so that the graph sees exactly the values the narrow one built
 * from the same @p rng state does.
 */
static ses_status_t build(const char *op, const signature_t *sig, const kcase_t *c, uint64_t *rng,
                          const char *domain, const signature_t *narrow, int computed, built_t *b,
                          char *why, size_t why_size) {
    ses_edge_t inputs[MAX_ARGS];
    ses_attr_t attrs[MAX_ATTRS + 1];
    size_t n_attrs = 0, data = 0;
    ses_node_t *node = NULL;
    ses_status_t st;

    memset(b, 0, sizeof *b);
    if ((st = ses_graph_create(&b->graph)) != SES_OK)
        goto fail;
    for (size_t k = 0; k < c->n_args; k++) {
        const arg_t *a = &c->args[k];
        ses_tensor_t *t = NULL;
        if (a->is_const && a->is_f32) {
            float f[MAX_VALUES];
            for (int64_t i = 0; i < a->dims[0]; i++)
                f[i] = (float)a->floats[i];
            st = ses_tensor_create_from(SES_F32, 1, a->dims, f, (size_t)a->dims[0] * sizeof(float),
                                        &t);
            if (st == SES_OK)
                st = ses_graph_constant(b->graph, a->name, t, &inputs[k]);
            ses_tensor_release(t);
        } else if (a->is_const && a->is_bool) {
            uint8_t bits[MAX_VALUES];
            for (int64_t i = 0; i < a->dims[0]; i++)
                bits[i] = a->values[i] != 0;
            st = ses_tensor_create_from(SES_BOOL, 1, a->dims, bits, (size_t)a->dims[0], &t);
            if (st == SES_OK)
                st = ses_graph_constant(b->graph, a->name, t, &inputs[k]);
            ses_tensor_release(t);
        } else if (a->is_const) {
            st = ses_tensor_create_from(SES_I64, 1, a->dims, a->values,
                                        (size_t)a->dims[0] * sizeof(int64_t), &t);
            if (st == SES_OK)
                st = ses_graph_constant(b->graph, a->name, t, &inputs[k]);
            ses_tensor_release(t);
        } else {
            /* A like input gives the node a shape (or dtype) only, and takes the output's
             * dtype (an in-place update's, which has no output: its first input's); data
             * inputs take the signature's, in order. */
            const size_t slot = data < sig->n_in ? data : sig->n_in - 1;
            ses_dtype_t d = sig->in[slot], nd = narrow ? narrow->in[slot] : d;
            void *values;
            if (a->is_like) {
                d = sig->n_out ? sig->out[0] : sig->in[0];
                nd = narrow ? (narrow->n_out ? narrow->out[0] : narrow->in[0]) : d;
            } else {
                data++;
            }
            st = ses_tensor_create(d, a->rank, a->dims, &t);
            if (st != SES_OK)
                goto fail;
            values = ses_tensor_data(t);
            for (size_t i = 0; i < ses_tensor_count(t); i++) {
                const char *from = a->is_like ? "any" : domain ? domain : a->domain;
                store(values, i, d, round_to(draw_at(rng, from, d, i, a->dims, a->rank), nd));
            }
            if (a->is_var) {
                /* A variable starting at these values; each session initializes its own. */
                char init[48];
                ses_edge_t value;
                snprintf(init, sizeof init, "%s/init", a->name);
                st = ses_graph_constant(b->graph, init, t, &value);
                ses_tensor_release(t);
                if (st == SES_OK)
                    st = ses_graph_variable(b->graph, a->name, value, &inputs[k]);
                if (st == SES_OK && b->n_fetches < MAX_ARGS) {
                    b->fetch_dtypes[b->n_fetches] = d;
                    b->fetches[b->n_fetches++] = inputs[k];
                }
            } else {
                b->feeds[b->n_feeds].value = t;
                st = ses_graph_placeholder(b->graph, a->name, d, a->rank, a->dims, &inputs[k]);
                b->feeds[b->n_feeds++].edge = inputs[k];
                /* computed: the node reads a value the plan computes (an Identity of the
                 * feed), which dies at the node, so the host may write an output over it. */
                if (st == SES_OK && computed && !a->is_like) {
                    char copy[48];
                    const ses_edge_t fed = inputs[k];
                    snprintf(copy, sizeof copy, "%s/computed", a->name);
                    st = ses_graph_op(b->graph, "Identity", copy, &fed, 1, NULL, 0, &inputs[k]);
                }
            }
        }
        if (st != SES_OK)
            goto fail;
    }
    for (size_t k = 0; k < c->n_attrs; k++) {
        const attr_spec_t *at = &c->attrs[k];
        attrs[n_attrs++] = at->type == SES_ATTR_FLOATS
                               ? ses_attr_floats(at->name, at->floats, at->count)
                           : at->type == SES_ATTR_INTS   ? ses_attr_ints(at->name, at->ints, at->count)
                           : at->type == SES_ATTR_FLOAT  ? ses_attr_float(at->name, at->f)
                           : at->type == SES_ATTR_STRING ? ses_attr_string(at->name, at->s)
                                                        : ses_attr_int(at->name, at->i);
    }
    if (!strcmp(op, "Cast"))
        attrs[n_attrs++] = ses_attr_int("to", cast_codes[sig->out[0]]);
    /* The ops whose output dtype is their "dtype" attribute (an ONNX number too). */
    if (!strcmp(op, "EyeLike") || !strcmp(op, "Bernoulli") || !strcmp(op, "RandomUniformLike") ||
        !strcmp(op, "RandomNormalLike"))
        attrs[n_attrs++] = ses_attr_int("dtype", cast_codes[sig->out[0]]);
    st = ses_graph_add_node(b->graph, op, "node", inputs, c->n_args, attrs, n_attrs, sig->n_out,
                            &node);
    if (st != SES_OK)
        goto fail;
    if (sig->n_out == 0) {
        b->target = node; /* b->fetches holds the variables it updates */
        return SES_OK;
    }
    for (size_t i = 0; i < sig->n_out; i++) {
        b->fetches[i] = ses_node_output(node, (uint32_t)i);
        b->fetch_dtypes[i] = sig->out[i];
        /* computed: the outputs are read by an Identity too, so that they live in the plan's
         * memory (a fetched output is written straight into the caller's tensor). */
        if (computed) {
            char copy[48];
            const ses_edge_t out = b->fetches[i];
            snprintf(copy, sizeof copy, "out%zu/computed", i);
            st = ses_graph_op(b->graph, "Identity", copy, &out, 1, NULL, 0, &b->fetches[i]);
            if (st != SES_OK)
                goto fail;
        }
    }
    b->n_fetches = sig->n_out;
    return SES_OK;

fail:
    snprintf(why, why_size, "%s", ses_last_error());
    built_clear(b);
    return st;
}

/*
 * Evaluates @p b in a session on @p device alone. The layout pass is off in both sessions, so
 * that each runs the case's one node on its own kernel: in a session on the CPU alone it would
 * run a Conv or FusedConv as NchwcConv (the CPU's Conv kernels would go unchecked), and it
 * takes the output of a node of the graph's own Nchwc ops for a blocked stand-in of an NCHW
 * value, fetched through an NchwcReorderOutput step as [N, C, H, W] where the node's output is
 * [N, C/16, H, W, 16] (and where another driver's session, not on the CPU alone, gives that).
 * Nodes the device cannot run fail the session (@p fallback DENY), or run elsewhere (ALLOW, for
 * the Identity nodes of a graph built with computed inputs).
 */
static ses_status_t eval_with(const ses_conf_options_t *o, const char *device, int reference,
                              ses_fallback_t fallback, const built_t *b, ses_tensor_t **out,
                              char *why, size_t why_size) {
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_status_t st;

    ses_session_options_init(&so);
    so.fallback = fallback;
    so.registry = o->registry;
    so.log_level = 0;
    so.layout = 0;
    if (reference) {
        so.threads = 1;
    } else {
        so.driver_options = o->driver_options;
        so.n_driver_options = o->n_driver_options;
    }
    st = ses_session_open(b->graph, &device, 1, &so, &s);
    if (st == SES_OK && b->target) {
        ses_node_t *target = b->target;
        st = ses_session_eval(s, NULL, 0, b->feeds, b->n_feeds, &target, 1, NULL);
        if (st == SES_OK)
            st = ses_session_eval(s, b->fetches, b->n_fetches, NULL, 0, NULL, 0, out);
    } else if (st == SES_OK) {
        st = ses_session_eval(s, b->fetches, b->n_fetches, b->feeds, b->n_feeds, NULL, 0, out);
    }
    if (st != SES_OK)
        snprintf(why, why_size, "%s", ses_last_error());
    ses_session_destroy(s);
    return st;
}

/* eval_with, every node on @p device. */
static ses_status_t eval_on(const ses_conf_options_t *o, const char *device, int reference,
                            const built_t *b, ses_tensor_t **out, char *why, size_t why_size) {
    return eval_with(o, device, reference, SES_FALLBACK_DENY, b, out, why, why_size);
}

/* @p sig with f32 for every f16 and bf16 in @p out_wide; 0 when it has neither. */
static int widen_signature(const signature_t *sig, signature_t *out_wide) {
    int narrow = 0;

    *out_wide = *sig;
    for (size_t i = 0; i < sig->n_in; i++)
        if (is_narrow(sig->in[i])) {
            out_wide->in[i] = SES_F32;
            narrow = 1;
        }
    for (size_t i = 0; i < sig->n_out; i++)
        if (is_narrow(sig->out[i])) {
            out_wide->out[i] = SES_F32;
            narrow = 1;
        }
    return narrow;
}

/* A Cast between two float dtypes, one of them f16 or bf16: the kit computes it itself. */
static int is_narrow_cast(const char *op, const signature_t *sig) {
    return !strcmp(op, "Cast") && sig->n_in == 1 && sig->n_out == 1 && is_float(sig->in[0]) &&
           is_float(sig->out[0]) && (is_narrow(sig->in[0]) || is_narrow(sig->out[0]));
}

/* The result of the Cast built in @p b, into *out_want: exact widening, or rounding to
 * nearest even (store() rounds f16 and bf16 so; the inputs are exact in double). */
static ses_status_t cast_reference(const built_t *b, ses_dtype_t to, ses_tensor_t **out_want,
                                   char *why, size_t why_size) {
    ses_tensor_t *x = b->feeds[0].value;
    const ses_dtype_t from = ses_tensor_dtype(x);
    ses_status_t st;

    st = ses_tensor_create(to, ses_tensor_rank(x), ses_tensor_dims(x), out_want);
    if (st != SES_OK) {
        snprintf(why, why_size, "%s", ses_last_error());
        return st;
    }
    for (size_t i = 0; i < ses_tensor_count(x); i++)
        store(ses_tensor_data(*out_want), i, to, load(ses_tensor_data(x), i, from));
    return SES_OK;
}

/*
 * A bound on |beta C| that @p op adds to its product on case @p c (tolerance()): Gemm's third
 * input, beta times its largest value (the case's domain, |x| <= 1 for @unit, 3 otherwise); 0
 * for other ops.
 */
static double product_addend(const char *op, const kcase_t *c) {
    size_t data = 0;
    const arg_t *third = NULL;
    double beta = 1.0;

    if (strcmp(op, "Gemm") != 0)
        return 0.0;
    for (size_t k = 0; k < c->n_args; k++)
        if (!c->args[k].is_const && !c->args[k].is_like && ++data == 3)
            third = &c->args[k];
    if (!third)
        return 0.0;
    for (size_t k = 0; k < c->n_attrs; k++)
        if (!strcmp(c->attrs[k].name, "beta"))
            beta = c->attrs[k].f;
    return fabs(beta) * (!strcmp(third->domain, "unit") ? 1.0 : 3.0);
}

/*
 * An upper bound on the length of the sums of products that @p op computes on case @p c, for
 * tolerance(); 1 for ops without them. MatMul and Gemm sum over A's inner dimension;
 * MatMulGrad over dy's last dimension (dA = dy * B^T) or over every other element of dy
 * (dB = A^T * dy, summed over the batch too); MatMulGradSGD as MatMulGrad, its dy coming after
 * var.
 */
static double reduction_length(const char *op, const kcase_t *c) {
    const int update = !strcmp(op, "MatMulGradSGD");
    size_t skip = update ? 1 : 0;
    const arg_t *a = NULL;
    double count = 1.0, last;

    for (size_t k = 0; k < c->n_args && !a; k++) {
        if (c->args[k].is_const || c->args[k].is_like)
            continue;
        if (skip) {
            skip--;
            continue;
        }
        a = &c->args[k];
    }
    if (!a || a->rank == 0)
        return 1.0;
    last = (double)a->dims[a->rank - 1];
    if (!strcmp(op, "MatMul"))
        return fmax(last, 1.0);
    if (!strcmp(op, "Gemm")) {
        for (size_t k = 0; k < c->n_attrs; k++)
            if (!strcmp(c->attrs[k].name, "transA") && c->attrs[k].i && a->rank == 2)
                return fmax((double)a->dims[0], 1.0);
        return fmax(last, 1.0);
    }
    if (!strcmp(op, "MatMulGrad") || update) {
        for (size_t k = 0; k < a->rank; k++)
            count *= (double)a->dims[k];
        return fmax(fmax(last, last > 0.0 ? count / last : 1.0), 1.0);
    }
    return 1.0;
}

/* Compares every output of @p b the device gave (@p got) with the reference's (@p want). */
static int compare_all(const ses_conf_op_cases_t *spec, const char *op, const kcase_t *c,
                       const built_t *b, ses_tensor_t **got, ses_tensor_t **want, int widened,
                       compare_t *cmp, char *why, size_t why_size) {
    for (size_t i = 0; i < b->n_fetches; i++) {
        /* The driver's output has the reference's dtype, except where the reference ran in
         * f32 for f16 or bf16. (The kit's Cast result has the narrow dtype itself; and some
         * ops' output dtype comes from an attribute, not the signature: ConstantOfShape.) */
        const ses_dtype_t d = ses_tensor_dtype(want[i]);
        const int compare_widened = widened && is_narrow(b->fetch_dtypes[i]) && d == SES_F32;
        if (!compare_output(spec, i, got[i], want[i], compare_widened ? b->fetch_dtypes[i] : d,
                            compare_widened, reduction_length(op, c), product_addend(op, c),
                            cmp)) {
            snprintf(why, why_size, "%s", cmp->first);
            return 0;
        }
    }
    return 1;
}

/*
 * For an entry with reuse_inputs (DRV-86): the case again with every data input computed on the
 * device (an Identity of its feed), so that the host may write an output over it; the outputs
 * must still be the reference's.
 */
static outcome_t run_computed(const ses_conf_options_t *o, const ses_conf_op_cases_t *spec,
                              const char *op, const signature_t *sig, const kcase_t *c,
                              const char *device, uint64_t start, ses_tensor_t **want,
                              compare_t *cmp, char *why, size_t why_size) {
    ses_tensor_t *got[MAX_ARGS] = {0};
    outcome_t result = CASE_PASSED;
    uint64_t again = start;
    char inner[640];
    built_t b;

    if (build(op, sig, c, &again, NULL, NULL, 1, &b, why, why_size) != SES_OK)
        return CASE_BAD;
    if (eval_with(o, device, 0, SES_FALLBACK_ALLOW, &b, got, inner, sizeof inner) != SES_OK) {
        snprintf(why, why_size, "with its inputs computed on the device (DRV-86): %s", inner);
        result = CASE_FAILED;
    } else if (!compare_all(spec, op, c, &b, got, want, 0, cmp, inner, sizeof inner)) {
        snprintf(why, why_size,
                 "with its inputs computed on the device, where the host may write an output "
                 "over one (reuse_inputs, DRV-86): %s",
                 inner);
        result = CASE_FAILED;
    }
    for (size_t i = 0; i < b.n_fetches; i++)
        ses_tensor_release(got[i]);
    built_clear(&b);
    return result;
}

/*
 * Runs case @p c on the reference and on the device and compares them. When the reference
 * cannot run a signature with f16 or bf16 tensors (the CPU driver has neither), the case runs
 * there in f32 instead, on the narrow inputs widened, and *out_widened is set: the device's
 * f16 or bf16 output is then compared with the f32 result within a tolerance for the narrow
 * type (tolerance()). A Cast to or from f16 or bf16 is computed by the kit itself, on inputs
 * drawn over the narrow types' whole range (draw()'s "span").
 */
static outcome_t run_case(const ses_conf_options_t *o, const ses_conf_op_cases_t *spec,
                          const char *op, const signature_t *sig, const kcase_t *c,
                          const char *device, const char *reference, int reuse, uint64_t *rng,
                          compare_t *cmp, int *out_widened, char *why, size_t why_size) {
    ses_tensor_t *got[MAX_ARGS] = {0}, *want[MAX_ARGS] = {0};
    outcome_t result = CASE_PASSED;
    const uint64_t start = *rng;
    signature_t wide;
    built_t b, ref;
    int widened = 0;
    char first_why[768] = "";
    ses_status_t st;

    *out_widened = 0;
    memset(&ref, 0, sizeof ref);
    if (build(op, sig, c, rng, NULL, NULL, 0, &b, why, why_size) != SES_OK)
        return CASE_BAD;
    st = eval_on(o, reference, 1, &b, want, why, why_size);
    if (st != SES_OK && widen_signature(sig, &wide)) {
        uint64_t again = start;

        snprintf(first_why, sizeof first_why, "%s", why);
        widened = 1;
        if (is_narrow_cast(op, sig)) {
            built_clear(&b);
            *rng = start;
            if (build(op, sig, c, rng, "span", NULL, 0, &b, why, why_size) != SES_OK)
                return CASE_BAD;
            st = cast_reference(&b, sig->out[0], &want[0], why, why_size);
        } else if (build(op, &wide, c, &again, NULL, sig, 0, &ref, why, why_size) != SES_OK) {
            result = CASE_BAD;
            goto done;
        } else {
            st = eval_on(o, reference, 1, &ref, want, why, why_size);
            if (st != SES_OK) {
                /* Say why the narrow signature could not run, then why f32 could not. */
                char both[768];
                snprintf(both, sizeof both, "%.300s; in f32: %.400s", first_why, why);
                snprintf(why, why_size, "%s", both);
            }
        }
    }
    if (st != SES_OK) {
        result = CASE_NO_REFERENCE;
        goto done;
    }
    st = eval_on(o, device, 0, &b, got, why, why_size);
    if (st != SES_OK && widened && !strcmp(why, first_why)) {
        /* The device failed just as the reference did on the narrow graph, word for word:
         * that is libsession's own verdict on the node (its shape inference, which runs
         * before any device is asked), not a driver's. */
        result = CASE_NO_GRAPH;
        goto done;
    }
    if (st != SES_OK) {
        result = st == SES_UNIMPLEMENTED ? CASE_REFUSED : CASE_FAILED;
        goto done;
    }
    for (size_t i = 0; i < b.n_fetches && c->expect_nan; i++) {
        /* DRV-54: NaN propagates. Checked against the rule, not only against the reference,
         * which could drop NaN as well. */
        const ses_dtype_t d = ses_tensor_dtype(got[i]);
        const void *g = ses_tensor_data(got[i]);
        for (size_t k = 0; g && is_float(d) && k < ses_tensor_count(got[i]); k++) {
            if (!isnan(load(g, k, d))) {
                char where[128];
                format_index(k, ses_tensor_dims(got[i]), ses_tensor_rank(got[i]), where,
                             sizeof where);
                snprintf(why, why_size,
                         "output %zu%s: got %.9g, want NaN: a NaN input must give NaN here "
                         "(DRV-54; fmax, fmin and `x > 0 ? x : 0` drop it)",
                         i, where, load(g, k, d));
                cmp->max_abs = INFINITY;
                result = CASE_FAILED;
                goto done;
            }
        }
    }
    if (!compare_all(spec, op, c, &b, got, want, widened, cmp, why, why_size))
        result = CASE_FAILED;
    else if (reuse && !widened && !b.target)
        result = run_computed(o, spec, op, sig, c, device, start, want, cmp, why, why_size);
    *out_widened = widened;
done:
    for (size_t i = 0; i < b.n_fetches; i++) {
        ses_tensor_release(got[i]);
        ses_tensor_release(want[i]);
    }
    built_clear(&ref);
    built_clear(&b);
    return result;
}

/* ---- one kernel --------------------------------------------------------------------------- */

/* A case with NaN inputs applies only where those inputs, and for "!nan" every output, are of a
 * float dtype: integers have no NaN. */
static int nan_case_fits(const kcase_t *c, const signature_t *sig) {
    size_t data = 0;

    for (size_t k = 0; k < c->n_args; k++) {
        const arg_t *a = &c->args[k];
        size_t slot;
        if (a->is_const || a->is_like)
            continue;
        slot = data < sig->n_in ? data : sig->n_in - 1;
        data++;
        if (is_nan_domain(a->domain) && !is_float(sig->in[slot]))
            return 0;
    }
    for (size_t k = 0; c->expect_nan && k < sig->n_out; k++)
        if (!is_float(sig->out[k]))
            return 0;
    return 1;
}

static void check_kernel(const ses_conf_options_t *o, ses_conf_report_t *r, const char *op,
                         const char *signature, int reuse, const char *device,
                         const char *reference) {
    const ses_conf_op_cases_t *spec = ses_conf_find_cases(op);
    uint32_t ran = 0, refused = 0, no_reference = 0, widened = 0;
    char name[128], detail[1024] = "", note[768] = "";
    compare_t cmp = {0.0, 0.0, ""};
    uint64_t rng = (o->seed ? o->seed : 1) ^ UINT64_C(14695981039346656037);
    signature_t sig;

    snprintf(name, sizeof name, "%s %s", op, signature);
    /* Each kernel draws from its own sequence, so one kernel's inputs do not depend on which
     * others ran before it (--op gives the same inputs as a full run). */
    for (const char *p = name; *p; p++)
        rng = (rng ^ (unsigned char)*p) * UINT64_C(1099511628211);
    if (!rng)
        rng = 1;
    if (!parse_signature(signature, &sig)) {
        ses_conf_add_kernel(r, name, SES_CONF_FAIL, 0, 0, 0, 0, "the signature does not parse");
        return;
    }
    if (!spec) {
        ses_conf_add_kernel(r, name, SES_CONF_SKIP, 0, 0, 0, 0,
                            "the suite has no cases for this op (is it in libsession's op set?)");
        return;
    }
    for (const char *const *text = spec->cases; *text; text++) {
        char why[768] = "";
        kcase_t c;
        outcome_t outcome;
        int case_widened = 0;

        if (!parse_case(*text, &c)) {
            snprintf(detail, sizeof detail, "case \"%s\" does not parse (a bug in the suite)",
                     *text);
            break;
        }
        if (sig.variadic ? c.n_data < 1 : c.n_data != sig.n_in)
            continue;
        if (!nan_case_fits(&c, &sig))
            continue;
        outcome = run_case(o, spec, op, &sig, &c, device, reference, reuse, &rng, &cmp,
                           &case_widened, why, sizeof why);
        if (outcome == CASE_PASSED) {
            ran++;
            widened += case_widened ? 1u : 0u;
        } else if (outcome == CASE_REFUSED) {
            refused++;
            if (!note[0])
                snprintf(note, sizeof note, "refused case \"%s\": %.600s", *text, why);
        } else if (outcome == CASE_NO_REFERENCE) {
            no_reference++;
            if (!note[0])
                snprintf(note, sizeof note, "reference cannot run case \"%s\": %.600s", *text, why);
        } else if (outcome == CASE_NO_GRAPH) {
            no_reference++; /* as little the driver's fault as a missing reference */
            if (!note[0])
                snprintf(note, sizeof note,
                         "libsession refuses the node of case \"%s\" on every device (the f32 "
                         "reference ran): %.600s",
                         *text, why);
        } else {
            snprintf(detail, sizeof detail, "case \"%s\": %s%s", *text,
                     outcome == CASE_BAD ? "cannot build the graph: " : "", why);
            break;
        }
    }
    if (detail[0])
        ses_conf_add_kernel(r, name, SES_CONF_FAIL, cmp.max_abs, cmp.max_rel, ran, refused,
                            detail);
    else if (ran == 0 && refused > 0 && no_reference == 0) {
        char message[1024];
        snprintf(message, sizeof message, "the driver claims this kernel but refused every case; %s",
                 note);
        ses_conf_add_kernel(r, name, SES_CONF_FAIL, 0, 0, 0, refused, message);
    }
    else if (ran == 0)
        ses_conf_add_kernel(r, name, SES_CONF_SKIP, 0, 0, 0, refused,
                            note[0] ? note : "no case fits this signature");
    else if (widened) {
        /* Say that the reference was not the driver's signature but f32 (or the kit's Cast). */
        char message[1024];
        snprintf(message, sizeof message, "ref f32%s%s%s%s",
                 !strcmp(op, "Cast") ? " (the kit's own conversion)" : "",
                 widened < ran ? " (some cases)" : "", note[0] ? "; " : "", note);
        ses_conf_add_kernel(r, name, SES_CONF_PASS, cmp.max_abs, cmp.max_rel, ran, refused,
                            message);
    } else
        ses_conf_add_kernel(r, name, SES_CONF_PASS, cmp.max_abs, cmp.max_rel, ran, refused, note);
}

void ses_conf_run_kernels(const ses_conf_options_t *o, ses_conf_report_t *r,
                          char *const *kernels, size_t n_kernels) {
    char device[96], reference[96];

    snprintf(device, sizeof device, "%s:%" PRIu32, ses_driver_name(o->driver), o->device);
    snprintf(reference, sizeof reference, "%s:0", ses_driver_name(o->reference));
    if (n_kernels == 0) {
        ses_conf_add(r, "kernel", "kernels", SES_CONF_SKIP, "the device claims no kernels");
        return;
    }
    for (size_t i = 0; i < n_kernels; i++) {
        /* "op\tsignature", then "\treuse" for an entry with reuse_inputs (abi_checks.c). */
        char op[64], signature[256];
        const char *tab = strchr(kernels[i], '\t'), *tab2 = strchr(tab + 1, '\t');
        snprintf(op, sizeof op, "%.*s", (int)(tab - kernels[i]), kernels[i]);
        snprintf(signature, sizeof signature, "%.*s",
                 (int)(tab2 ? (size_t)(tab2 - tab - 1) : strlen(tab + 1)), tab + 1);
        if (o->only_op && strcmp(o->only_op, op) != 0)
            continue;
        check_kernel(o, r, op, signature, tab2 != NULL, device, reference);
    }
}
