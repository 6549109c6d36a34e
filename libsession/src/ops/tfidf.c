/*
 * TfIdfVectorizer on integer inputs (pool_int64s; pool_strings is refused: libsession has no
 * string tensors). Inference checks the pool's layout and sizes the output from ngram_indexes;
 * the kernel gets the node's attributes as given plus `mode_code` (0 TF, 1 IDF, 2 TFIDF).
 */
#include <inttypes.h>
#include <string.h>

#include "../graph/attrs.h"
#include "infer.h"
#include "tfidf.h"

ses_status_t ses__infer_tfidf(ses__infer_ctx_t *ctx) {
    const ses__type_t *x = &ctx->inputs[0];
    const char *mode = NULL;
    const int64_t *pool, *counts, *indexes;
    size_t n_pool = 0, n_counts = 0, n_indexes = 0;
    int has_pool, has_counts, has_indexes;
    int64_t min_n, max_n, skip, mode_code, width = 0, n_grams = 0;
    const ses__attr_t *weights = ses__attrs_find(ctx->attrs, "weights");
    ses_status_t st = ses__op_check_dtype(ctx, 0, "X", SES__DT(SES_I32) | SES__DT(SES_I64));

    if (st == SES_OK && ses__attrs_find(ctx->attrs, "pool_strings"))
        st = ses__op_fail(ctx, SES_UNIMPLEMENTED,
                          "pool_strings: string inputs are not supported; use pool_int64s");
    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "min_gram_length", &min_n);
    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "max_gram_length", &max_n);
    if (st == SES_OK)
        st = ses__op_attr_required_int(ctx, "max_skip_count", &skip);
    if (st == SES_OK)
        st = ses__op_attr_ints(ctx, "pool_int64s", &pool, &n_pool, &has_pool);
    if (st == SES_OK)
        st = ses__op_attr_ints(ctx, "ngram_counts", &counts, &n_counts, &has_counts);
    if (st == SES_OK)
        st = ses__op_attr_ints(ctx, "ngram_indexes", &indexes, &n_indexes, &has_indexes);
    if (st != SES_OK)
        return st;
    if (ses__attrs_get_string(ctx->attrs, "mode", &mode) <= 0 || !mode)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute mode (STRING) is required");
    mode_code = !strcmp(mode, "TF")      ? 0
                : !strcmp(mode, "IDF")   ? 1
                : !strcmp(mode, "TFIDF") ? 2
                                         : -1;
    if (mode_code < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "mode \"%s\" is not TF, IDF or TFIDF", mode);
    if (x->rank < 1 || x->rank > 2)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "X must be 1-D or 2-D, got %s",
                            ses__tstr(x).s);
    if (min_n < 1 || max_n < min_n || skip < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "min_gram_length %" PRId64 ", max_gram_length %" PRId64
                            ", max_skip_count %" PRId64
                            ": lengths must be 1 <= min <= max and skips >= 0",
                            min_n, max_n, skip);
    if (!has_pool || !has_counts || !has_indexes || n_counts < (size_t)max_n)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "pool_int64s, ngram_indexes and ngram_counts (a start per n-gram "
                            "length, up to %" PRId64 " at least) are required",
                            max_n);
    /* ngram_counts[k]: where the (k+1)-grams start in the pool; they run to the next start. */
    for (size_t k = 0; k < n_counts; k++) {
        const int64_t end = k + 1 < n_counts ? counts[k + 1] : (int64_t)n_pool;
        if (counts[k] < 0 || end < counts[k] || end > (int64_t)n_pool ||
            (end - counts[k]) % (int64_t)(k + 1) != 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "ngram_counts %s does not split pool_int64s (%zu values) into "
                                "whole n-grams",
                                ses__ints_str(counts, n_counts).s, n_pool);
        n_grams += (end - counts[k]) / (int64_t)(k + 1);
    }
    if ((int64_t)n_indexes != n_grams ||
        (weights && (weights->type != SES_ATTR_FLOATS || (int64_t)weights->count != n_grams)))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "the pool has %" PRId64
                            " n-grams: ngram_indexes (%zu) and weights (if given) must have one "
                            "entry each",
                            n_grams, n_indexes);
    for (size_t i = 0; i < n_indexes; i++) {
        if (indexes[i] < 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "ngram_indexes has %" PRId64,
                                indexes[i]);
        if (indexes[i] + 1 > width)
            width = indexes[i] + 1;
    }
    ctx->outputs[0].dtype = SES_F32;
    ctx->outputs[0].rank = x->rank;
    ctx->outputs[0].dims[0] = x->rank == 2 ? x->dims[0] : width;
    ctx->outputs[0].dims[1] = width;
    if ((st = ses__attrs_copy(&ctx->kernel_attrs, ctx->attrs)) != SES_OK)
        return st;
    return ses__attrs_set_int(&ctx->kernel_attrs, "mode_code", mode_code);
}
