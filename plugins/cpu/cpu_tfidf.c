/*
 * TfIdfVectorizer on integer tokens: for each row, every n-gram of the lengths asked for, at
 * every skip up to max_skip_count (1-grams once), counted where it matches an n-gram of the
 * pool; then TF (the counts), IDF (1 where counted, times the weight) or TFIDF (count times
 * weight), stored at the n-gram's output index.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* An INTS or FLOATS attribute of any length, in new memory (*out NULL when absent). */
static int32_t read_list(const cpu__call_t *call, const char *key, uint32_t type, void **out,
                         uint64_t *count) {
    const ses_drv_node_t *node = call->node;
    *out = NULL;
    *count = 0;
    int32_t rc = node->attr(node, key, type, count, NULL);
    if (rc == SES_DRV_NOT_FOUND)
        return SES_DRV_OK;
    if (rc != SES_DRV_OK)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "attribute %s has another type", key);
    *out = malloc((size_t)(*count ? *count : 1) * 8);
    if (!*out)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "out of memory for %s", key);
    return node->attr(node, key, type, count, *out);
}

static int64_t token(const cpu__tensor_t *x, int64_t at) {
    return x->dtype == SES_DRV_DTYPE_I32 ? ((const int32_t *)(const void *)x->data)[at]
                                         : ((const int64_t *)(const void *)x->data)[at];
}

int32_t cpu__tfidf(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    int64_t min_n, max_n, skip, mode;
    int64_t *pool = NULL, *starts = NULL, *indexes = NULL;
    double *weights = NULL, *counts = NULL;
    uint64_t n_pool, n_starts, n_indexes, n_weights;
    int32_t st = cpu__attr_int(call, "min_gram_length", 0, 0, &min_n);

    if (st == SES_DRV_OK)
        st = cpu__attr_int(call, "max_gram_length", 0, 0, &max_n);
    if (st == SES_DRV_OK)
        st = cpu__attr_int(call, "max_skip_count", 0, 0, &skip);
    if (st == SES_DRV_OK)
        st = cpu__attr_int(call, "mode_code", 1, 0, &mode);
    if (st == SES_DRV_OK)
        st = read_list(call, "pool_int64s", SES_DRV_ATTR_INTS, (void **)&pool, &n_pool);
    if (st == SES_DRV_OK)
        st = read_list(call, "ngram_counts", SES_DRV_ATTR_INTS, (void **)&starts, &n_starts);
    if (st == SES_DRV_OK)
        st = read_list(call, "ngram_indexes", SES_DRV_ATTR_INTS, (void **)&indexes, &n_indexes);
    if (st == SES_DRV_OK)
        st = read_list(call, "weights", SES_DRV_ATTR_FLOATS, (void **)&weights, &n_weights);
    if (st != SES_DRV_OK)
        goto done;
    const int64_t rows = x->rank == 2 ? x->dims[0] : 1, len = x->dims[x->rank - 1];
    const int64_t width = y->dims[y->rank - 1];
    if (min_n < 1 || max_n < min_n || (uint64_t)max_n > n_starts ||
        (x->rank != 1 && x->rank != 2) || y->rank != x->rank ||
        (x->rank == 2 && y->dims[0] != rows) || (weights && n_weights != n_indexes)) {
        st = cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                            "the gram lengths, ngram_counts, weights and shapes disagree");
        goto done;
    }
    for (uint64_t i = 0; i < n_indexes; i++)
        if (indexes[i] < 0 || indexes[i] >= width) {
            st = cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                "ngram_indexes[%" PRIu64 "] %" PRId64 " is outside the output", i,
                                indexes[i]);
            goto done;
        }
    counts = calloc((size_t)(n_indexes ? n_indexes : 1), sizeof *counts);
    if (!counts) {
        st = cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "out of memory for the counts");
        goto done;
    }
    for (int64_t r = 0; r < rows; r++) {
        memset(counts, 0, (size_t)(n_indexes ? n_indexes : 1) * sizeof *counts);
        for (int64_t n = min_n; n <= max_n; n++) {
            /* The pool's n-grams: from starts[n-1] to the next start, numbered from first. */
            const int64_t from = starts[n - 1];
            const int64_t to = n < (int64_t)n_starts ? starts[n] : (int64_t)n_pool;
            int64_t first = 0;
            for (int64_t k = 0; k < n - 1; k++)
                first +=
                    ((k + 1 < (int64_t)n_starts ? starts[k + 1] : (int64_t)n_pool) - starts[k]) /
                    (k + 1);
            if (from < 0 || to > (int64_t)n_pool || to < from)
                continue;
            for (int64_t s = 0; s <= (n == 1 ? 0 : skip); s++)
                for (int64_t p = 0; p + (n - 1) * (s + 1) < len; p++)
                    for (int64_t g = 0; g < (to - from) / n; g++) {
                        int match = 1;
                        for (int64_t k = 0; k < n && match; k++)
                            match = token(x, r * len + p + k * (s + 1)) == pool[from + g * n + k];
                        if (match && first + g < (int64_t)n_indexes)
                            counts[first + g] += 1.0;
                    }
        }
        float *out = (float *)(void *)y->data + r * width;
        for (int64_t w = 0; w < width; w++)
            out[w] = 0.0f;
        for (uint64_t i = 0; i < n_indexes; i++) {
            double v = counts[i];
            if (mode == 1)
                v = v > 0 ? 1.0 : 0.0;
            if (mode != 0 && weights)
                v *= weights[i];
            out[indexes[i]] = (float)v;
        }
    }
done:
    free(pool);
    free(starts);
    free(indexes);
    free(weights);
    free(counts);
    return st;
}
