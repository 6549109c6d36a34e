/* The checks every op family's inference is built from; see infer.h. */
#include "infer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"

const char *ses__dtype_str(ses_dtype_t dtype) {
    /* Kept here rather than calling ses_dtype_name so that shape inference needs nothing from
     * the tensor implementation; the names are the same. */
    static const char *const names[] = {
        [SES_F32] = "f32",   [SES_F64] = "f64", [SES_F16] = "f16", [SES_BF16] = "bf16",
        [SES_I8] = "i8",     [SES_I16] = "i16", [SES_I32] = "i32", [SES_I64] = "i64",
        [SES_U8] = "u8",     [SES_U16] = "u16", [SES_U32] = "u32", [SES_U64] = "u64",
        [SES_BOOL] = "bool", [SES_STRING] = "string",
    };

    if ((unsigned)dtype < sizeof names / sizeof names[0] && names[dtype])
        return names[dtype];
    return "invalid";
}

ses__tstr_t ses__tstr(const ses__type_t *t) {
    ses__tstr_t r;
    ses__type_format(t, r.s, sizeof r.s);
    return r;
}

ses__tstr_t ses__ints_str(const int64_t *values, size_t count) {
    ses__tstr_t r;
    size_t used = 1;

    r.s[0] = '[';
    r.s[1] = '\0';
    for (size_t i = 0; i < count && used < sizeof r.s; i++) {
        int n =
            snprintf(r.s + used, sizeof r.s - used, "%s%lld", i ? "," : "", (long long)values[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    if (used + 1 < sizeof r.s) {
        r.s[used] = ']';
        r.s[used + 1] = '\0';
    }
    return r;
}

ses_status_t ses__op_fail(const ses__infer_ctx_t *ctx, ses_status_t status, const char *format,
                          ...) {
    char detail[1024];
    va_list ap;

    va_start(ap, format);
    vsnprintf(detail, sizeof detail, format, ap);
    va_end(ap);
    return ses__fail(status, "%s \"%s\": %s", ctx->op ? ctx->op : "?", ctx->node ? ctx->node : "",
                     detail);
}

int ses__op_has_input(const ses__infer_ctx_t *ctx, size_t index) {
    return index < ctx->n_inputs && ctx->inputs[index].dtype != SES_DTYPE_INVALID;
}

int ses__op_given(const ses__infer_ctx_t *ctx, size_t index) {
    return ses__op_has_input(ctx, index) && ses__type_count(&ctx->inputs[index]) != 0;
}

int ses__same_dims(const ses__type_t *a, const ses__type_t *b) {
    if (a->rank != b->rank)
        return 0;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

/* "f32, f64, i32" for a dtype mask. */
static void format_dtypes(uint32_t allowed, char *buffer, size_t size) {
    size_t used = 0;

    buffer[0] = '\0';
    for (unsigned d = SES_F32; d <= SES_STRING && used < size; d++) {
        if (!(allowed & SES__DT(d)) || (d > SES_BOOL && d != SES_STRING))
            continue;
        int n = snprintf(buffer + used, size - used, "%s%s", used ? ", " : "",
                         ses__dtype_str((ses_dtype_t)d));
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

ses_status_t ses__op_check_dtype(const ses__infer_ctx_t *ctx, size_t index, const char *name,
                                 uint32_t allowed) {
    char list[128];
    const ses__type_t *t;

    if (!ses__op_has_input(ctx, index))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) is missing", index, name);
    t = &ctx->inputs[index];
    if ((unsigned)t->dtype < 32 && (allowed & SES__DT(t->dtype)))
        return SES_OK;
    format_dtypes(allowed, list, sizeof list);
    return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) is %s; allowed dtypes: %s",
                        index, name, ses__tstr(t).s, list);
}

ses_status_t ses__op_check_same_dtype(const ses__infer_ctx_t *ctx, size_t i, const char *name_i,
                                      size_t j, const char *name_j) {
    const ses__type_t *a = &ctx->inputs[i], *b = &ctx->inputs[j];

    if (a->dtype == b->dtype)
        return SES_OK;
    return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "dtypes differ: %s is %s, %s is %s", name_i,
                        ses__tstr(a).s, name_j, ses__tstr(b).s);
}

/* "A is f32[2,3], B is f32[4]" for the inputs of a failed broadcast. */
static void describe_inputs(const ses__infer_ctx_t *ctx, const size_t *indices,
                            const char *const *names, size_t n, char *buffer, size_t size) {
    size_t used = 0;

    buffer[0] = '\0';
    for (size_t k = 0; k < n && used < size; k++) {
        int w = snprintf(buffer + used, size - used, "%s%s is %s", k ? ", " : "", names[k],
                         ses__tstr(&ctx->inputs[indices[k]]).s);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int ses__broadcast_shapes(const ses__type_t *const *types, size_t n, ses__type_t *out) {
    uint32_t rank = 0;

    for (size_t k = 0; k < n; k++)
        if (types[k]->rank > rank)
            rank = types[k]->rank;
    out->rank = rank;
    /* Shapes align at their last dimension; a missing leading dimension counts as 1. */
    for (uint32_t d = 0; d < rank; d++) {
        int64_t dim = 1;
        for (size_t k = 0; k < n; k++) {
            const ses__type_t *t = types[k];
            if (d >= t->rank || t->dims[t->rank - 1 - d] == 1)
                continue;
            if (dim != 1 && dim != t->dims[t->rank - 1 - d])
                return 0;
            dim = t->dims[t->rank - 1 - d];
        }
        out->dims[rank - 1 - d] = dim;
    }
    return 1;
}

ses_status_t ses__op_broadcast(const ses__infer_ctx_t *ctx, const size_t *indices,
                               const char *const *names, size_t n, ses__type_t *out) {
    const ses__type_t *types[SES__MAX_INPUTS] = {0};
    char list[700];

    for (size_t k = 0; k < n; k++)
        types[k] = &ctx->inputs[indices[k]];
    if (ses__broadcast_shapes(types, n, out))
        return SES_OK;
    describe_inputs(ctx, indices, names, n, list, sizeof list);
    return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "inputs cannot broadcast: %s", list);
}

ses_status_t ses__op_axis(const ses__infer_ctx_t *ctx, const char *what, int64_t axis,
                          uint32_t rank, const ses__type_t *t, int64_t *out) {
    if (axis < -(int64_t)rank || axis >= (int64_t)rank) {
        char valid[64];
        if (rank == 0)
            snprintf(valid, sizeof valid, "a scalar has none");
        else
            snprintf(valid, sizeof valid, "valid: %d to %u", -(int)rank, rank - 1);
        return ses__op_fail(
            ctx, SES_INVALID_ARGUMENT, "%s %lld is out of range for %srank %u (%s): input is %s",
            what, (long long)axis, rank == t->rank ? "" : "output ", rank, valid, ses__tstr(t).s);
    }
    *out = axis < 0 ? axis + (int64_t)rank : axis;
    return SES_OK;
}

static int compare_int64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

ses_status_t ses__op_axes(const ses__infer_ctx_t *ctx, const char *what, const int64_t *axes,
                          size_t n, uint32_t rank, const ses__type_t *t, int duplicates,
                          int64_t *out, size_t *out_n) {
    int64_t normal[SES_MAX_RANK * 2];
    size_t kept = 0;

    /* More entries than dimensions means a repeat (or one out of range, caught below first
     * unless the list is simply too long to hold). */
    if (n > sizeof normal / sizeof normal[0])
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "%s has %zu entries, more than rank %u",
                            what, n, rank);
    for (size_t k = 0; k < n; k++) {
        ses_status_t st = ses__op_axis(ctx, what, axes[k], rank, t, &normal[k]);
        if (st != SES_OK)
            return st;
    }
    qsort(normal, n, sizeof normal[0], compare_int64);
    for (size_t k = 0; k < n; k++) {
        if (kept && out[kept - 1] == normal[k]) {
            if (duplicates == SES__AXES_REJECT_DUPLICATES)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "axes %s name axis %lld twice",
                                    ses__ints_str(axes, n).s, (long long)normal[k]);
            continue;
        }
        out[kept++] = normal[k];
    }
    *out_n = kept;
    return SES_OK;
}

static ses_status_t wrong_attr_type(const ses__infer_ctx_t *ctx, const char *name,
                                    ses_attr_type_t wanted) {
    const ses__attr_t *a = ses__attrs_find(ctx->attrs, name);
    return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute %s must be of type %s, got %s", name,
                        ses__attr_type_name(wanted), ses__attr_type_name(a->type));
}

ses_status_t ses__op_attr_int(const ses__infer_ctx_t *ctx, const char *name, int64_t fallback,
                              int64_t *out) {
    int rc = ses__attrs_get_int(ctx->attrs, name, out);
    if (rc < 0)
        return wrong_attr_type(ctx, name, SES_ATTR_INT);
    if (rc == 0)
        *out = fallback;
    return SES_OK;
}

ses_status_t ses__op_attr_flag(const ses__infer_ctx_t *ctx, const char *name, int64_t fallback,
                               int64_t *out) {
    ses_status_t st = ses__op_attr_int(ctx, name, fallback, out);
    if (st == SES_OK && *out != 0 && *out != 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute %s must be 0 or 1, got %lld",
                            name, (long long)*out);
    return st;
}

ses_status_t ses__op_attr_float(const ses__infer_ctx_t *ctx, const char *name, double fallback,
                                double *out) {
    int rc = ses__attrs_get_float(ctx->attrs, name, out);
    if (rc < 0)
        return wrong_attr_type(ctx, name, SES_ATTR_FLOAT);
    if (rc == 0)
        *out = fallback;
    return SES_OK;
}

ses_status_t ses__op_attr_required_int(const ses__infer_ctx_t *ctx, const char *name,
                                       int64_t *out) {
    int rc = ses__attrs_get_int(ctx->attrs, name, out);
    if (rc < 0)
        return wrong_attr_type(ctx, name, SES_ATTR_INT);
    if (rc == 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute %s is required", name);
    return SES_OK;
}

ses_status_t ses__op_attr_ints(const ses__infer_ctx_t *ctx, const char *name,
                               const int64_t **out_values, size_t *out_count, int *out_present) {
    int rc = ses__attrs_get_ints(ctx->attrs, name, out_values, out_count);
    if (rc < 0)
        return wrong_attr_type(ctx, name, SES_ATTR_INTS);
    if (rc == 0) {
        *out_values = NULL;
        *out_count = 0;
    }
    *out_present = rc == 1;
    return SES_OK;
}

ses_status_t ses__op_read_ints(const ses__infer_ctx_t *ctx, size_t index, const char *name,
                               uint32_t allowed, int64_t *out, size_t cap, size_t *out_n) {
    const ses__type_t *t = &ctx->inputs[index];
    const unsigned char *bytes;
    ses_status_t st = ses__op_check_dtype(ctx, index, name, allowed);
    int64_t n;

    if (st != SES_OK)
        return st;
    if (t->rank > 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) must be 0-D or 1-D, got %s",
                            index, name, ses__tstr(t).s);
    /* An empty list is known from its type alone; its data pointer may well be NULL. */
    n = ses__type_count(t);
    *out_n = 0;
    if (n == 0)
        return SES_OK;
    bytes = ctx->values ? ctx->values[index] : NULL;
    if (!bytes)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) must be a constant or fed",
                            index, name);
    if (n > (int64_t)cap)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input %zu (%s) has %lld values; at most %zu are allowed here", index,
                            name, (long long)n, cap);
    /* memcpy per element: nothing promises the host data is aligned for its dtype. */
    for (int64_t k = 0; k < n; k++) {
        if (t->dtype == SES_I64) {
            memcpy(&out[k], bytes + k * 8, 8);
        } else {
            int32_t v;
            memcpy(&v, bytes + k * 4, 4);
            out[k] = v;
        }
    }
    *out_n = (size_t)n;
    return SES_OK;
}

ses_status_t ses__op_check_out_rank(const ses__infer_ctx_t *ctx, size_t rank) {
    if (rank <= SES_MAX_RANK)
        return SES_OK;
    return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                        "the output would have rank %zu; at most %d dimensions are supported", rank,
                        SES_MAX_RANK);
}

ses_status_t ses__op_read_scalar(const ses__infer_ctx_t *ctx, size_t index, const char *name,
                                 double *out_f, int64_t *out_i) {
    const ses__type_t *t = &ctx->inputs[index];
    const unsigned char *p = ctx->values ? ctx->values[index] : NULL;

    if (ses__type_count(t) != 1 || t->rank > 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) must be a scalar, got %s",
                            index, name, ses__tstr(t).s);
    if (!p)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input %zu (%s) must be a constant or fed: the output's shape "
                            "depends on its value",
                            index, name);
    switch (t->dtype) {
    case SES_F32: {
        float v;
        memcpy(&v, p, sizeof v);
        *out_f = v;
        *out_i = 0;
        break;
    }
    case SES_F64:
        memcpy(out_f, p, sizeof *out_f);
        *out_i = 0;
        break;
    case SES_I32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        *out_i = v;
        *out_f = v;
        break;
    }
    case SES_I64:
        memcpy(out_i, p, sizeof *out_i);
        *out_f = (double)*out_i;
        break;
    case SES_BOOL:
    case SES_U8:
        *out_i = *p;
        *out_f = *p;
        break;
    default:
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) is %s; unsupported here",
                            index, name, ses__tstr(t).s);
    }
    return SES_OK;
}

/* The activations FusedConv and FusedGemm apply, with how many activation_params each takes:
 * at least min, at most max; the defaults fill the ones left out. */
static const struct {
    const char *name;
    size_t min, max;
    double defaults[2];
} activations[] = {
    {"Identity", 0, 0, {0.0, 0.0}},
    {"Relu", 0, 0, {0.0, 0.0}},
    {"LeakyRelu", 0, 1, {0.01, 0.0}},
    {"Sigmoid", 0, 0, {0.0, 0.0}},
    {"Tanh", 0, 0, {0.0, 0.0}},
    {"Clip", 2, 2, {-INFINITY, INFINITY}},
};

ses_status_t ses__op_activation(ses__infer_ctx_t *ctx) {
    const char *name = "Identity";
    const ses__attr_t *params = ses__attrs_find(ctx->attrs, "activation_params");
    double values[2];
    size_t n = 0, a;
    int found = ses__attrs_get_string(ctx->attrs, "activation", &name);
    ses_attr_t out;
    ses_status_t st;

    if (found < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute activation must be a STRING");
    if (found == 0 || !name[0])
        name = "Identity";
    for (a = 0; a < sizeof activations / sizeof activations[0]; a++)
        if (strcmp(activations[a].name, name) == 0)
            break;
    if (a == sizeof activations / sizeof activations[0])
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute activation is \"%s\"; expected one of Relu, LeakyRelu, "
                            "Sigmoid, Tanh, Clip, or none",
                            name);
    if (params && params->type != SES_ATTR_FLOATS)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute activation_params must be FLOATS, got %s",
                            ses__attr_type_name(params->type));
    if (params)
        n = params->count;
    if (n < activations[a].min || n > activations[a].max)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute activation_params has %zu value%s; activation %s takes %s",
                            n, n == 1 ? "" : "s", name,
                            activations[a].max == 0   ? "none"
                            : activations[a].min == 2 ? "2 (min, max)"
                                                      : "0 or 1 (alpha, default 0.01)");
    for (size_t i = 0; i < 2; i++)
        values[i] = i < n ? params->floats[i] : activations[a].defaults[i];
    if (a == 5 && !(values[0] <= values[1]))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "activation Clip: min %g is greater than max %g", values[0], values[1]);
    out = ses_attr_string("activation", activations[a].name);
    st = ses__attrs_set(&ctx->kernel_attrs, &out);
    if (st == SES_OK) {
        out = ses_attr_floats("activation_params", values, activations[a].max);
        st = ses__attrs_set(&ctx->kernel_attrs, &out);
    }
    return st;
}
