/*
 * String tensors at run time (issue #22): every node that reads or makes a string runs here, on
 * the host, as a host step of the plan; drivers never see a string. A string value is its host
 * tensor (slot->tensor): a fed, constant or variable one is bound by run.c, a computed one
 * (SES__SLOT_STRING) is made here and dropped when the run ends, unless it was fetched. Numeric
 * inputs and outputs (Cast's, Equal's) are read from and written to their slots wherever they
 * live.
 *
 * Ops: StringNormalizer (op set 10), Cast and CastLike to and from strings (f32, f64, the
 * integers, bool), Equal of two strings (broadcasting, byte-wise), Identity.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../alloc.h"
#include "../compile/plan.h"
#include "../error.h"
#include "../ops/string_ops.h"
#include "../tensor/tensor_internal.h"

/* ---- compile-time checks ---------------------------------------------------------------- */

int ses__string_node(const ses__type_t *in_types, size_t n_in, const ses__type_t *out_types,
                     size_t n_out) {
    for (size_t i = 0; i < n_in; i++)
        if (in_types[i].dtype == SES_STRING)
            return 1;
    for (size_t o = 0; o < n_out; o++)
        if (out_types[o].dtype == SES_STRING)
            return 1;
    return 0;
}

static int shape_known(const ses__type_t *t) {
    for (uint32_t d = 0; d < t->rank; d++)
        if (t->dims[d] < 0)
            return 0;
    return 1;
}

int ses__string_op_known(const char *op) {
    static const char *const ops[] = {"StringNormalizer", "Cast", "CastLike", "Equal", "Identity"};

    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (!strcmp(op, ops[k]))
            return 1;
    return 0;
}

ses_status_t ses__string_node_check(const ses_node_t *node, const ses__type_t *in_types) {
    size_t first = SIZE_MAX;
    int makes_string = 0;
    int64_t to = 0;

    for (size_t i = 0; i < node->n_inputs && first == SIZE_MAX; i++)
        if (in_types[i].dtype == SES_STRING)
            first = i;
    if (first == SIZE_MAX)
        return SES_OK;
    if (!ses__string_op_known(node->op))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s \"%s\": input %zu is a string tensor; only StringNormalizer, Cast, "
                         "CastLike, Equal and Identity take strings",
                         node->op, node->name, first);
    /* A numeric output needs its shape when the plan compiles, to have a place in an arena. */
    if (!strcmp(node->op, "Cast"))
        makes_string = ses__attrs_get_int(&node->attrs, "to", &to) == 1 && to == 8;
    else if (!strcmp(node->op, "CastLike"))
        makes_string = node->n_inputs > 1 && in_types[1].dtype == SES_STRING;
    else
        makes_string = strcmp(node->op, "Equal") != 0;
    for (size_t i = 0; i < node->n_inputs && !makes_string; i++)
        if (in_types[i].dtype == SES_STRING && !shape_known(&in_types[i]))
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s \"%s\": input %zu is a string tensor whose shape is known only "
                             "when it is computed (a StringNormalizer's output), but this "
                             "node's output is not a string and needs its shape when the plan "
                             "compiles",
                             node->op, node->name, i);
    return SES_OK;
}

/* ---- helpers ---------------------------------------------------------------------------- */

/* The host tensor of string slot @p slot for this run. */
static ses_status_t string_input(const ses__step_t *step, const ses__slot_t *slot, size_t i,
                                 ses_tensor_t **out) {
    *out = slot->tensor;
    if (!slot->tensor || slot->tensor->dtype != SES_STRING)
        return ses__fail(SES_INTERNAL, "%s \"%s\": input %zu has no string value this run",
                         step->node->op, step->node->name, i);
    return SES_OK;
}

/* A new string tensor (elements NULL) of @p rank and @p dims, made the value of @p out. */
static ses_status_t string_output(ses__slot_t *out, size_t rank, const int64_t *dims,
                                  ses_tensor_t **out_tensor) {
    ses_tensor_t *t = NULL;
    ses_status_t st = ses__tensor_create_for_output(SES_STRING, rank, dims, &t);

    *out_tensor = NULL;
    if (st != SES_OK)
        return st;
    ses_tensor_release(out->tensor);
    out->tensor = t;
    *out_tensor = t;
    return SES_OK;
}

static ses_status_t out_of_memory(const ses__step_t *step) {
    return ses__fail(SES_OUT_OF_MEMORY, "%s \"%s\": out of memory", step->node->op,
                     step->node->name);
}

static char *copy_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = ses__malloc(n);

    if (copy)
        memcpy(copy, s, n);
    return copy;
}

/*
 * Changes the case of UTF-8 string @p s in place: ASCII letters, and the Latin-1 letters
 * U+00C0..U+00DE and U+00E0..U+00FE (but for the signs U+00D7 and U+00F7), whose upper and lower
 * forms have the same length. Other characters stay as they are. @p upper: to upper case.
 */
static void change_case(char *s, int upper) {
    unsigned char *p = (unsigned char *)s;

    for (; *p; p++) {
        if (!upper && *p >= 'A' && *p <= 'Z') {
            *p = (unsigned char)(*p + 32);
        } else if (upper && *p >= 'a' && *p <= 'z') {
            *p = (unsigned char)(*p - 32);
        } else if (*p == 0xC3 && p[1]) {
            unsigned char c = p[1];
            if (!upper && c >= 0x80 && c <= 0x9E && c != 0x97)
                p[1] = (unsigned char)(c + 0x20);
            else if (upper && c >= 0xA0 && c <= 0xBE && c != 0xB7)
                p[1] = (unsigned char)(c - 0x20);
            p++;
        }
    }
}

/* ---- StringNormalizer ------------------------------------------------------------------- */

/* The stop words: attribute stopwords, the words joined by commas (the ONNX importer's form of
 * a list of strings), as an array of @p out_n strings in one block; lower-cased when the match
 * ignores case. "" or absent: none. */
static ses_status_t stopwords(const ses__step_t *step, int fold, char ***out, size_t *out_n) {
    const char *joined = "";
    char *block, **words;
    size_t n = 1, len;

    *out = NULL;
    *out_n = 0;
    ses__attrs_get_string(&step->node->attrs, "stopwords", &joined);
    if (!joined[0])
        return SES_OK;
    len = strlen(joined);
    for (const char *p = joined; *p; p++)
        n += *p == ',';
    words = ses__malloc(n * sizeof *words + len + 1);
    if (!words)
        return out_of_memory(step);
    block = (char *)(words + n);
    memcpy(block, joined, len + 1);
    if (fold)
        change_case(block, 0);
    n = 0;
    words[n++] = block;
    for (char *p = block; *p; p++)
        if (*p == ',') {
            *p = '\0';
            words[n++] = p + 1;
        }
    *out = words;
    *out_n = n;
    return SES_OK;
}

static int is_stopword(char *const *words, size_t n, const char *s) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(words[i], s))
            return 1;
    return 0;
}

static ses_status_t run_string_normalizer(ses__compiled_t *c, const ses__step_t *step) {
    ses__slot_t *out = &c->slots[step->args[1]];
    ses__infer_ctx_t ctx;
    ses_tensor_t *x, *y;
    char **words = NULL;
    size_t n_words = 0, kept = 0, count;
    unsigned char *keep = NULL;
    int64_t dims[2] = {1, 1};
    int action = 0, sensitive = 0;
    ses_status_t st;

    if ((st = string_input(step, &c->slots[step->args[0]], 0, &x)) != SES_OK)
        return st;
    memset(&ctx, 0, sizeof ctx);
    ctx.node = step->node->name;
    ctx.op = step->node->op;
    ctx.attrs = &step->node->attrs;
    if ((st = ses__string_normalizer_attrs(&ctx, &action, &sensitive)) != SES_OK)
        return st;
    if (x->rank != 1 && !(x->rank == 2 && x->dims[0] == 1))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s \"%s\": input 0 (X) has rank %u; it must be "
                         "[C] or [1, C]",
                         step->node->op, step->node->name, x->rank);
    count = x->count;
    if ((st = stopwords(step, !sensitive, &words, &n_words)) != SES_OK)
        return st;
    keep = ses__calloc(count + 1, 1);
    if (!keep) {
        st = out_of_memory(step);
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        const char *s = ses__string_at(x, i);
        if (n_words && !sensitive) {
            char *folded = copy_string(s);
            if (!folded) {
                st = out_of_memory(step);
                goto done;
            }
            change_case(folded, 0);
            keep[i] = !is_stopword(words, n_words, folded);
            free(folded);
        } else {
            keep[i] = !n_words || !is_stopword(words, n_words, s);
        }
        kept += keep[i];
    }
    /* Nothing left: one empty string, [1] or [1, 1]. */
    dims[x->rank - 1] = kept ? (int64_t)kept : 1;
    if ((st = string_output(out, x->rank, dims, &y)) != SES_OK)
        goto done;
    if (!kept) {
        ses__string_tensor_fill_empty(y);
        goto done;
    }
    for (size_t i = 0, k = 0; i < count; i++) {
        char *copy;
        if (!keep[i])
            continue;
        if (!(copy = copy_string(ses__string_at(x, i)))) {
            st = out_of_memory(step);
            goto done;
        }
        if (action)
            change_case(copy, action == 2);
        ses__string_tensor_take(y, k++, copy);
    }
done:
    free(words);
    free(keep);
    return st;
}

/* ---- Cast ------------------------------------------------------------------------------- */

/* The shortest text that reads back as @p v (f32 when @p single), as NumPy and ONNX Runtime
 * print it: "0.1", "1e-05", "NaN", "INF", "-INF". */
static void format_float(double v, int single, char *buffer, size_t size) {
    if (isnan(v)) {
        snprintf(buffer, size, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buffer, size, v < 0 ? "-INF" : "INF");
        return;
    }
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buffer, size, "%.*g", precision, v);
        if (single ? strtof(buffer, NULL) == (float)v : strtod(buffer, NULL) == v)
            return;
    }
}

static ses_status_t to_strings(const ses__step_t *step, const void *in, ses_dtype_t dtype,
                               ses_tensor_t *y) {
    for (size_t i = 0; i < y->count; i++) {
        char text[64];
        char *copy;
        switch (dtype) {
            case SES_F32:
                format_float(((const float *)in)[i], 1, text, sizeof text);
                break;
            case SES_F64:
                format_float(((const double *)in)[i], 0, text, sizeof text);
                break;
            case SES_I8:
                snprintf(text, sizeof text, "%d", ((const int8_t *)in)[i]);
                break;
            case SES_I16:
                snprintf(text, sizeof text, "%d", ((const int16_t *)in)[i]);
                break;
            case SES_I32:
                snprintf(text, sizeof text, "%" PRId32, ((const int32_t *)in)[i]);
                break;
            case SES_I64:
                snprintf(text, sizeof text, "%" PRId64, ((const int64_t *)in)[i]);
                break;
            case SES_U8:
            case SES_BOOL:
                snprintf(text, sizeof text, "%u", ((const uint8_t *)in)[i]);
                break;
            case SES_U16:
                snprintf(text, sizeof text, "%u", ((const uint16_t *)in)[i]);
                break;
            case SES_U32:
                snprintf(text, sizeof text, "%" PRIu32, ((const uint32_t *)in)[i]);
                break;
            case SES_U64:
                snprintf(text, sizeof text, "%" PRIu64, ((const uint64_t *)in)[i]);
                break;
            default:
                return ses__fail(SES_UNIMPLEMENTED, "%s \"%s\": cannot cast %s to string",
                                 step->node->op, step->node->name, ses_dtype_name(dtype));
        }
        if (!(copy = copy_string(text)))
            return out_of_memory(step);
        ses__string_tensor_take(y, i, copy);
    }
    return SES_OK;
}

/* Whether only white space follows @p end. */
static int rest_is_space(const char *end) {
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    return *end == '\0';
}

/* Reads @p s as a number: an integer when it is one exactly (@p out_int, @p out_is_int), else a
 * floating-point value (decimal, scientific, "INF", "+INF", "-INF", "NaN", any case). */
static int parse_number(const char *s, double *out, int64_t *out_int, int *out_is_int) {
    char *end;

    errno = 0;
    *out_int = strtoll(s, &end, 10);
    *out_is_int = end != s && errno == 0 && rest_is_space(end);
    errno = 0;
    *out = strtod(s, &end);
    return end != s && rest_is_space(end);
}

static ses_status_t from_strings(const ses__step_t *step, const ses_tensor_t *x, ses_dtype_t dtype,
                                 void *out) {
    for (size_t i = 0; i < x->count; i++) {
        const char *s = ses__string_at(x, i);
        double v;
        int64_t n;
        int is_int;

        if (dtype == SES_F32) {
            char *end;
            float f = strtof(s, &end);
            if (end == s || !rest_is_space(end))
                goto not_a_number;
            ((float *)out)[i] = f;
            continue;
        }
        if (!parse_number(s, &v, &n, &is_int))
            goto not_a_number;
        if (dtype == SES_F64) {
            ((double *)out)[i] = v;
            continue;
        }
        /* Integers: "100.5" becomes 100 (ONNX: it may); out of the type's range is an error. */
        if (!is_int) {
            if (!(v > -9.3e18 && v < 9.3e18))
                goto out_of_range;
            n = (int64_t)v;
        }
#define STORE(T, LO, HI)          \
    do {                          \
        if (n < (LO) || n > (HI)) \
            goto out_of_range;    \
        ((T *)out)[i] = (T)n;     \
    } while (0)
        switch (dtype) {
            case SES_I8:
                STORE(int8_t, INT8_MIN, INT8_MAX);
                break;
            case SES_I16:
                STORE(int16_t, INT16_MIN, INT16_MAX);
                break;
            case SES_I32:
                STORE(int32_t, INT32_MIN, INT32_MAX);
                break;
            case SES_I64:
                ((int64_t *)out)[i] = n;
                break;
            case SES_U8:
                STORE(uint8_t, 0, UINT8_MAX);
                break;
            case SES_U16:
                STORE(uint16_t, 0, UINT16_MAX);
                break;
            case SES_U32:
                STORE(uint32_t, 0, (int64_t)UINT32_MAX);
                break;
            case SES_U64:
                if (n < 0)
                    goto out_of_range;
                ((uint64_t *)out)[i] = (uint64_t)n;
                break;
            case SES_BOOL:
                ((uint8_t *)out)[i] = is_int ? n != 0 : v != 0.0;
                break;
            default:
                return ses__fail(SES_UNIMPLEMENTED, "%s \"%s\": cannot cast string to %s",
                                 step->node->op, step->node->name, ses_dtype_name(dtype));
        }
#undef STORE
        continue;
    not_a_number:
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s \"%s\": element %zu of input 0, \"%.64s\", is not a number",
                         step->node->op, step->node->name, i, s);
    out_of_range:
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s \"%s\": element %zu of input 0, \"%.64s\", is outside the range of %s",
                         step->node->op, step->node->name, i, s, ses_dtype_name(dtype));
    }
    return SES_OK;
}

/* Cast and CastLike: input 0 to output 0's dtype, one side (or both) a string. */
static ses_status_t run_cast(ses_session_t *s, ses__compiled_t *c, const ses__step_t *step) {
    const size_t n_in = step->node->n_inputs;
    const ses__slot_t *in = &c->slots[step->args[0]];
    ses__slot_t *out = &c->slots[step->args[n_in]];
    ses_tensor_t *x = NULL, *y = NULL;
    void *buffer = NULL;
    ses_status_t st;

    if (in->type.dtype == SES_STRING && out->type.dtype == SES_STRING) {
        if ((st = string_input(step, in, 0, &x)) != SES_OK)
            return st;
        if ((st = ses_tensor_copy_to_host(x, &y)) != SES_OK)
            return st;
        ses_tensor_release(out->tensor);
        out->tensor = y;
        return SES_OK;
    }
    if (out->type.dtype == SES_STRING) {
        buffer = ses__malloc(in->bytes ? in->bytes : 1);
        if (!buffer)
            return out_of_memory(step);
        st = ses__read_slot(s, c, in, buffer);
        if (st == SES_OK)
            st = string_output(out, in->type.rank, in->type.dims, &y);
        if (st == SES_OK)
            st = to_strings(step, buffer, in->type.dtype, y);
    } else {
        if ((st = string_input(step, in, 0, &x)) != SES_OK)
            return st;
        buffer = ses__malloc(out->bytes ? out->bytes : 1);
        if (!buffer)
            return out_of_memory(step);
        st = from_strings(step, x, out->type.dtype, buffer);
        if (st == SES_OK)
            st = ses__write_slot(s, c, out, buffer);
    }
    free(buffer);
    return st;
}

/* ---- Equal, Identity -------------------------------------------------------------------- */

/* Element strides of @p t aligned to the last dimensions of @p out: 0 where @p t broadcasts. */
static void broadcast_strides(const ses_tensor_t *t, const ses__type_t *out, size_t *strides) {
    size_t stride = 1;

    for (uint32_t d = out->rank; d-- > 0;) {
        size_t from_end = out->rank - 1 - d;
        strides[d] = 0;
        if (from_end < t->rank) {
            int64_t dim = t->dims[t->rank - 1 - from_end];
            strides[d] = dim == 1 ? 0 : stride;
            stride *= (size_t)dim;
        }
    }
}

static ses_status_t run_equal(ses_session_t *s, ses__compiled_t *c, const ses__step_t *step) {
    const ses__slot_t *out = &c->slots[step->args[2]];
    size_t sa[SES_MAX_RANK], sb[SES_MAX_RANK], idx[SES_MAX_RANK] = {0};
    const size_t count = (size_t)ses__type_count(&out->type);
    ses_tensor_t *a, *b;
    uint8_t *result;
    size_t ia = 0, ib = 0;
    ses_status_t st;

    if ((st = string_input(step, &c->slots[step->args[0]], 0, &a)) != SES_OK ||
        (st = string_input(step, &c->slots[step->args[1]], 1, &b)) != SES_OK)
        return st;
    broadcast_strides(a, &out->type, sa);
    broadcast_strides(b, &out->type, sb);
    if (!(result = ses__malloc(count ? count : 1)))
        return out_of_memory(step);
    for (size_t i = 0; i < count; i++) {
        result[i] = strcmp(ses__string_at(a, ia), ses__string_at(b, ib)) == 0;
        /* The next index, as an odometer over the output's dimensions. */
        for (uint32_t d = out->type.rank; d-- > 0;) {
            ia += sa[d];
            ib += sb[d];
            if (++idx[d] < (size_t)out->type.dims[d])
                break;
            ia -= sa[d] * idx[d];
            ib -= sb[d] * idx[d];
            idx[d] = 0;
        }
    }
    st = ses__write_slot(s, c, out, result);
    free(result);
    return st;
}

static ses_status_t run_identity(ses__compiled_t *c, const ses__step_t *step) {
    ses__slot_t *out = &c->slots[step->args[1]];
    ses_tensor_t *x, *y = NULL;
    ses_status_t st;

    /* A copy: the output may be fetched and changed, and its input be a constant. */
    if ((st = string_input(step, &c->slots[step->args[0]], 0, &x)) != SES_OK ||
        (st = ses_tensor_copy_to_host(x, &y)) != SES_OK)
        return st;
    ses_tensor_release(out->tensor);
    out->tensor = y;
    return SES_OK;
}

ses_status_t ses__string_op_run(ses_session_t *s, ses__compiled_t *c, ses__step_t *step) {
    const char *op = step->node->op;

    if (!strcmp(op, "StringNormalizer"))
        return run_string_normalizer(c, step);
    if (!strcmp(op, "Cast") || !strcmp(op, "CastLike"))
        return run_cast(s, c, step);
    if (!strcmp(op, "Equal"))
        return run_equal(s, c, step);
    if (!strcmp(op, "Identity"))
        return run_identity(c, step);
    return ses__fail(SES_INTERNAL, "%s \"%s\": no host implementation for strings", op,
                     step->node->name);
}
