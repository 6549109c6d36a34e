/* Inference for string tensors (issue #22). StringNormalizer (ONNX op set 10): X is [C] or
 * [1, C]; Y keeps X's rank, and how many strings it holds is known only when it runs (stop words
 * are dropped), so its last dimension is -1 until then. */
#include <string.h>

#include "infer.h"
#include "string_ops.h"

ses_status_t ses__op_check_string_cast(const ses__infer_ctx_t *ctx, ses_dtype_t from,
                                       ses_dtype_t to) {
    ses_dtype_t other = from == SES_STRING ? to : from;

    if ((from == SES_STRING) == (to == SES_STRING))
        return SES_OK;
    if (other == SES_F16 || other == SES_BF16)
        return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                            "casting %s to %s is not supported (strings convert to and from f32, "
                            "f64, the integers and bool)",
                            ses__dtype_str(from), ses__dtype_str(to));
    return SES_OK;
}

/* Locales whose case rules for ASCII and Latin-1 letters differ from Unicode's defaults. */
static int locale_has_own_case_rules(const char *locale) {
    static const char *const own[] = {"tr", "az", "lt"};

    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        size_t n = strlen(own[i]);
        if (!strncmp(locale, own[i], n) &&
            (locale[n] == '\0' || locale[n] == '_' || locale[n] == '-' || locale[n] == '.'))
            return 1;
    }
    return 0;
}

ses_status_t ses__string_normalizer_attrs(const ses__infer_ctx_t *ctx, int *out_action,
                                          int *out_case_sensitive) {
    const char *action = "NONE", *locale = "";
    int64_t sensitive;
    ses_status_t st;

    if (ses__attrs_get_string(ctx->attrs, "case_change_action", &action) < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute case_change_action must be a string");
    if (!strcmp(action, "NONE"))
        *out_action = 0;
    else if (!strcmp(action, "LOWER"))
        *out_action = 1;
    else if (!strcmp(action, "UPPER"))
        *out_action = 2;
    else
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute case_change_action is \"%s\"; allowed: NONE, LOWER, UPPER",
                            action);
    if ((st = ses__op_attr_flag(ctx, "is_case_sensitive", 0, &sensitive)) != SES_OK)
        return st;
    *out_case_sensitive = (int)sensitive;
    if (ses__attrs_get_string(ctx->attrs, "stopwords", &locale) < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute stopwords must be a string (the words joined by commas)");
    locale = "";
    if (ses__attrs_get_string(ctx->attrs, "locale", &locale) < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute locale must be a string");
    if (locale_has_own_case_rules(locale))
        return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                            "locale \"%s\" has its own case rules (dotted and dotless i), which "
                            "are not implemented; ASCII and Latin-1 letters are changed by "
                            "Unicode's default rules, as in en_US",
                            locale);
    return SES_OK;
}

ses_status_t ses__infer_string_normalizer(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    int action, sensitive;
    ses_status_t st;

    if ((st = ses__op_check_dtype(ctx, 0, "X", SES__DT(SES_STRING))) != SES_OK)
        return st;
    if (x->rank != 1 && !(x->rank == 2 && (x->dims[0] == 1 || x->dims[0] == -1)))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "input 0 (X) is %s; it must be [C] or [1, C]", ses__tstr(x).s);
    if ((st = ses__string_normalizer_attrs(ctx, &action, &sensitive)) != SES_OK)
        return st;
    ctx->outputs[0] = *x;
    if (x->rank == 2)
        ctx->outputs[0].dims[0] = 1;
    ctx->outputs[0].dims[x->rank - 1] = -1;
    return SES_OK;
}
