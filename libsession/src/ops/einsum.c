/*
 * Einsum: the equation parsed at compile time into labels. Every letter is a label; an input's
 * "..." stands for its dimensions no letter names, broadcast across the inputs as numpy does
 * and given labels of their own. Without "->" the output is the ellipsis dimensions, then the
 * letters that appear once, in alphabetical order (upper case first). A letter repeated in one
 * term takes its diagonal; labels not in the output are summed. The kernel gets the result:
 * `sizes` (each label's size), `out` (the output's labels) and `in0`..`in2` (each input
 * dimension's label).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../graph/attrs.h"
#include "einsum.h"
#include "infer.h"

#define MAX_TERMS 3
#define N_LETTERS 52
#define MAX_LABELS (N_LETTERS + SES_MAX_RANK)

/* A term of the equation. */
typedef struct term {
    int letters[SES_MAX_RANK + 1]; /* letter indices, in order, the ellipsis left out */
    int n_letters;
    int ellipsis; /* position of "..." among the letters, or -1 */
} term_t;

static int letter_index(char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return 26 + (c - 'a');
    return -1;
}

/* Parses one term from *p up to ',', '-' or the end. */
static ses_status_t parse_term(const ses__infer_ctx_t *ctx, const char **p, const char *what,
                               term_t *t) {
    t->n_letters = 0;
    t->ellipsis = -1;
    for (; **p && **p != ',' && **p != '-'; (*p)++) {
        const char c = **p;
        if (c == ' ')
            continue;
        if (c == '.') {
            if (strncmp(*p, "...", 3) != 0 || t->ellipsis >= 0)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "equation: %s has a '.' outside one \"...\"", what);
            t->ellipsis = t->n_letters;
            *p += 2;
            continue;
        }
        if (letter_index(c) < 0)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "equation: %s has '%c'; labels are letters", what, c);
        if (t->n_letters == SES_MAX_RANK)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "equation: %s has more than %d labels",
                                what, SES_MAX_RANK);
        t->letters[t->n_letters++] = letter_index(c);
    }
    return SES_OK;
}

ses_status_t ses__infer_einsum(ses__infer_ctx_t *ctx) {
    const char *eq = NULL, *p;
    term_t terms[MAX_TERMS], out;
    int64_t size[MAX_LABELS], n_ell = 0, ell_size[SES_MAX_RANK];
    int seen[N_LETTERS] = {0}, has_out = 0;
    size_t n_terms = 0;
    ses_status_t st;

    if (ses__attrs_get_string(ctx->attrs, "equation", &eq) <= 0 || !eq)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute equation (STRING) is required");
    for (size_t i = 0; i < ctx->n_inputs; i++) {
        if ((st = ses__op_check_dtype(ctx, i, "Inputs", SES__DT_NUMERIC)) != SES_OK ||
            (i && (st = ses__op_check_same_dtype(ctx, 0, "input 0", i, "this input")) != SES_OK))
            return st;
    }
    /* The input terms, then the output after "->". */
    p = eq;
    for (;;) {
        char what[32];
        if (n_terms == MAX_TERMS)
            return ses__op_fail(ctx, SES_UNIMPLEMENTED, "equation \"%s\": more than %d input terms",
                                eq, MAX_TERMS);
        snprintf(what, sizeof what, "term %zu", n_terms);
        if ((st = parse_term(ctx, &p, what, &terms[n_terms++])) != SES_OK)
            return st;
        if (*p != ',')
            break;
        p++;
    }
    if (*p == '-') {
        if (p[1] != '>')
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "equation \"%s\": '-' without '>'", eq);
        p += 2;
        has_out = 1;
        if ((st = parse_term(ctx, &p, "the output", &out)) != SES_OK)
            return st;
        if (*p)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "equation \"%s\": the output term is followed by '%c'", eq, *p);
    }
    if (n_terms != ctx->n_inputs)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "equation \"%s\" has %zu input terms, but the node has %zu inputs", eq,
                            n_terms, ctx->n_inputs);
    /* Sizes: letters agree across the terms; ellipsis dimensions broadcast. */
    for (int l = 0; l < MAX_LABELS; l++)
        size[l] = -1;
    for (size_t k = 0; k < n_terms; k++) {
        const ses__type_t *x = &ctx->inputs[k];
        const term_t *t = &terms[k];
        const int64_t named = t->n_letters;
        if (t->ellipsis < 0 ? x->rank != (uint32_t)named : x->rank < (uint32_t)named)
            return ses__op_fail(
                ctx, SES_INVALID_ARGUMENT, "term %zu names %d dimensions%s, but input %zu is %s", k,
                t->n_letters, t->ellipsis < 0 ? "" : " and \"...\"", k, ses__tstr(x).s);
        const int64_t e = t->ellipsis < 0 ? 0 : (int64_t)x->rank - named;
        if (e > n_ell)
            n_ell = e;
        for (int i = 0; i < t->n_letters; i++) {
            const int l = t->letters[i];
            const int64_t dim = x->dims[i < t->ellipsis || t->ellipsis < 0 ? i : i + e];
            seen[l]++;
            if (size[l] >= 0 && size[l] != dim)
                return ses__op_fail(
                    ctx, SES_INVALID_ARGUMENT,
                    "label '%c' is %" PRId64 " in one place and %" PRId64 " in input %zu %s",
                    l < 26 ? 'A' + l : 'a' + (l - 26), size[l], dim, k, ses__tstr(x).s);
            size[l] = dim;
        }
    }
    for (int64_t d = 0; d < n_ell; d++)
        ell_size[d] = 1;
    for (size_t k = 0; k < n_terms; k++) {
        const ses__type_t *x = &ctx->inputs[k];
        const int64_t e = terms[k].ellipsis < 0 ? 0 : (int64_t)x->rank - terms[k].n_letters;
        for (int64_t d = 0; d < e; d++) {
            const int64_t dim = x->dims[terms[k].ellipsis + d], at = n_ell - e + d;
            if (dim != 1 && ell_size[at] != 1 && ell_size[at] != dim)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "the \"...\" dimensions of input %zu %s do not broadcast "
                                    "with the others",
                                    k, ses__tstr(x).s);
            if (dim != 1)
                ell_size[at] = dim;
        }
    }
    /* The output's labels: letters index 0..51, ellipsis dimension d is N_LETTERS + d. */
    int64_t out_labels[SES_MAX_RANK];
    size_t out_rank = 0;
    if (has_out) {
        int used[N_LETTERS] = {0};
        /* An output without "..." sums the ellipsis dimensions away, as numpy does. */
        for (int i = 0; i <= out.n_letters; i++) {
            if (i == out.ellipsis)
                for (int64_t d = 0; d < n_ell; d++)
                    out_labels[out_rank++] = N_LETTERS + d;
            if (i == out.n_letters)
                break;
            const int l = out.letters[i];
            if (!seen[l] || used[l]++)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "equation \"%s\": output label '%c' %s", eq,
                                    l < 26 ? 'A' + l : 'a' + (l - 26),
                                    seen[l] ? "appears twice" : "is in no input");
            if (out_rank == SES_MAX_RANK)
                return ses__op_fail(ctx, SES_UNIMPLEMENTED, "the output has more than %d dims",
                                    SES_MAX_RANK);
            out_labels[out_rank++] = l;
        }
    } else {
        for (int64_t d = 0; d < n_ell; d++)
            out_labels[out_rank++] = N_LETTERS + d;
        for (int l = 0; l < N_LETTERS; l++)
            if (seen[l] == 1) {
                if (out_rank == SES_MAX_RANK)
                    return ses__op_fail(ctx, SES_UNIMPLEMENTED, "the output has more than %d dims",
                                        SES_MAX_RANK);
                out_labels[out_rank++] = l;
            }
    }
    for (int64_t d = 0; d < n_ell; d++)
        size[N_LETTERS + d] = ell_size[d];
    /* Only the labels in use go to the kernel, renumbered 0..n. */
    int remap[MAX_LABELS];
    int64_t sizes[MAX_LABELS];
    size_t n_labels = 0;
    for (int l = 0; l < MAX_LABELS; l++) {
        remap[l] = -1;
        if ((l < N_LETTERS && seen[l]) || (l >= N_LETTERS && l < N_LETTERS + n_ell)) {
            remap[l] = (int)n_labels;
            sizes[n_labels++] = size[l];
        }
    }
    ctx->outputs[0].dtype = ctx->inputs[0].dtype;
    ctx->outputs[0].rank = (uint32_t)out_rank;
    for (size_t i = 0; i < out_rank; i++) {
        ctx->outputs[0].dims[i] = size[out_labels[i]];
        out_labels[i] = remap[out_labels[i]];
    }
    if ((st = ses__attrs_set_ints(&ctx->kernel_attrs, "sizes", sizes, n_labels)) != SES_OK ||
        (st = ses__attrs_set_ints(&ctx->kernel_attrs, "out", out_labels, out_rank)) != SES_OK)
        return st;
    for (size_t k = 0; k < n_terms; k++) {
        const ses__type_t *x = &ctx->inputs[k];
        const term_t *t = &terms[k];
        const int64_t e = t->ellipsis < 0 ? 0 : (int64_t)x->rank - t->n_letters;
        int64_t labels[SES_MAX_RANK];
        char name[24];
        for (uint32_t d = 0; d < x->rank; d++) {
            if (t->ellipsis >= 0 && (int64_t)d >= t->ellipsis && (int64_t)d < t->ellipsis + e)
                labels[d] = remap[N_LETTERS + n_ell - e + ((int64_t)d - t->ellipsis)];
            else
                labels[d] =
                    remap[t->letters[(int64_t)d < t->ellipsis || t->ellipsis < 0 ? (int64_t)d
                                                                                 : (int64_t)d - e]];
        }
        snprintf(name, sizeof name, "in%zu", k);
        if ((st = ses__attrs_set_ints(&ctx->kernel_attrs, name, labels, x->rank)) != SES_OK)
            return st;
    }
    return SES_OK;
}
