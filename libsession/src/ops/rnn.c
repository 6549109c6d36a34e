/*
 * The recurrent layers RNN, GRU and LSTM (ONNX op sets 7 and 14): one layer over a sequence,
 * forward, reverse or both ways.
 *
 *   RNN(X, W, R[, B, sequence_lens, initial_h])           -> [Y, Y_h]
 *   GRU(X, W, R[, B, sequence_lens, initial_h])           -> [Y, Y_h]
 *   LSTM(X, W, R[, B, sequence_lens, initial_h, initial_c, P]) -> [Y, Y_h, Y_c]
 *
 * The kernel gets the inputs given (an empty one is absent, since a graph cannot leave a middle
 * input out) and normalized attributes: inputs (bit i: ONNX input i is given and passed, in
 * order), hidden_size, num_directions (1 or 2), reverse (1 for direction "reverse"), layout,
 * activations (INTS, one code of enum ses__rnn_act per activation, per direction: RNN 1, GRU 2,
 * LSTM 3, the forward direction's first), activation_alpha and activation_beta (FLOATS, one per
 * activation, ONNX's defaults filled in), clip (FLOAT, 0 for none), linear_before_reset (GRU)
 * and input_forget (LSTM).
 *
 * activations come as one string, the names joined by commas (the ONNX importer joins its list
 * of strings so); names are matched without regard to case. For a bidirectional layer a list of
 * one direction's activations serves both. activation_alpha and activation_beta are consumed in
 * order by the activations that take them (ONNX Runtime's reading): Affine, LeakyRelu,
 * ThresholdedRelu, ScaledTanh, HardSigmoid and Elu an alpha, Affine, ScaledTanh and HardSigmoid a
 * beta.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infer.h"

/* The activations, with whether each takes an alpha and a beta and their defaults. */
static const struct {
    const char *name;
    int alpha, beta;
    double alpha_default, beta_default;
} acts[] = {
    [SES__RNN_RELU] = {"Relu", 0, 0, 0.0, 0.0},
    [SES__RNN_TANH] = {"Tanh", 0, 0, 0.0, 0.0},
    [SES__RNN_SIGMOID] = {"Sigmoid", 0, 0, 0.0, 0.0},
    [SES__RNN_AFFINE] = {"Affine", 1, 1, 1.0, 0.0},
    [SES__RNN_LEAKYRELU] = {"LeakyRelu", 1, 0, 0.01, 0.0},
    [SES__RNN_THRESHOLDEDRELU] = {"ThresholdedRelu", 1, 0, 1.0, 0.0},
    [SES__RNN_SCALEDTANH] = {"ScaledTanh", 1, 1, 1.0, 1.0},
    [SES__RNN_HARDSIGMOID] = {"HardSigmoid", 1, 1, 0.2, 0.5},
    [SES__RNN_ELU] = {"Elu", 1, 0, 1.0, 0.0},
    [SES__RNN_SOFTSIGN] = {"Softsign", 0, 0, 0.0, 0.0},
    [SES__RNN_SOFTPLUS] = {"Softplus", 0, 0, 0.0, 0.0},
};
#define N_ACTS (sizeof acts / sizeof acts[0])

/* The activations of @p ctx into @p codes, @p alpha, @p beta: @p per_dir per direction, the
 * defaults when the attribute is absent. */
static ses_status_t read_activations(ses__infer_ctx_t *ctx, uint32_t per_dir, int64_t dirs,
                                     const int *defaults, int64_t *codes, double *alpha,
                                     double *beta) {
    const char *list = NULL;
    const ses__attr_t *fa = ses__attrs_find(ctx->attrs, "activation_alpha");
    const ses__attr_t *fb = ses__attrs_find(ctx->attrs, "activation_beta");
    size_t n = 0, used_alpha = 0, used_beta = 0;
    const size_t want = per_dir * (size_t)dirs;
    int rc = ses__attrs_get_string(ctx->attrs, "activations", &list);

    if (rc < 0)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute activations must be a string of names joined by commas");
    if ((fa && fa->type != SES_ATTR_FLOATS) || (fb && fb->type != SES_ATTR_FLOATS))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attributes activation_alpha and activation_beta must be lists of "
                            "floats");
    if (rc == 0) {
        for (size_t i = 0; i < want; i++)
            codes[n++] = defaults[i % per_dir];
    } else {
        const char *p = list;
        while (*p) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p), k;
            for (k = 0; k < N_ACTS; k++)
                if (strlen(acts[k].name) == len && !strncasecmp(acts[k].name, p, len))
                    break;
            if (k == N_ACTS)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "attribute activations \"%s\": unknown activation \"%.*s\" "
                                    "(Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
                                    "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
                                    list, (int)len, p);
            if (n == want)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "attribute activations \"%s\" names more than %zu "
                                    "activations (%u per direction)",
                                    list, want, per_dir);
            codes[n++] = (int64_t)k;
            p = end ? end + 1 : p + len;
        }
        if (n == per_dir && dirs == 2) {
            for (size_t i = 0; i < per_dir; i++)
                codes[n++] = codes[i];
        }
        if (n != want)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "attribute activations \"%s\" names %zu activations; the layer "
                                "takes %zu (%u per direction)",
                                list, n, want, per_dir);
    }
    for (size_t i = 0; i < n; i++) {
        const int64_t k = codes[i];
        alpha[i] = acts[k].alpha_default;
        beta[i] = acts[k].beta_default;
        if (acts[k].alpha && fa && used_alpha < fa->count)
            alpha[i] = fa->floats[used_alpha++];
        if (acts[k].beta && fb && used_beta < fb->count)
            beta[i] = fb->floats[used_beta++];
    }
    return SES_OK;
}

/* Input @p i (named @p name), when given: dtype @p dtype and exactly dims @p dims[0..rank). */
static ses_status_t check_input(ses__infer_ctx_t *ctx, size_t i, const char *name,
                                ses_dtype_t dtype, uint32_t rank, const int64_t *dims) {
    const ses__type_t *t = &ctx->inputs[i];
    int same = t->rank == rank;
    ses__type_t want = {0};

    if (i >= 3 && !ses__op_given(ctx, i))
        return SES_OK;
    for (uint32_t d = 0; same && d < rank; d++)
        same = t->dims[d] == dims[d];
    if (t->dtype == dtype && same)
        return SES_OK;
    want.dtype = dtype;
    want.rank = rank;
    memcpy(want.dims, dims, rank * sizeof *dims);
    return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu (%s) must be %s, got %s", i, name,
                        ses__tstr(&want).s, ses__tstr(t).s);
}

/* The layer: @p gates per hidden unit (RNN 1, GRU 3, LSTM 4), @p per_dir activations. */
static ses_status_t infer_rnn(ses__infer_ctx_t *ctx, int64_t gates, uint32_t per_dir,
                              const int *defaults) {
    const ses__type_t *x = &ctx->inputs[0], *w = &ctx->inputs[1], *r = &ctx->inputs[2];
    const char *direction = "forward";
    int64_t layout = 0, hidden = 0, dirs, seq, batch, in_size, codes[6], flag = 0;
    double alpha[6], beta[6], clip = 0.0;
    int has_hidden = ses__attrs_find(ctx->attrs, "hidden_size") != NULL;
    uint64_t inputs = 0;
    ses_status_t st = ses__op_check_dtype(ctx, 0, "X", SES__DT_FLOAT);

    for (size_t i = 1; st == SES_OK && i < 3; i++)
        st = ses__op_check_same_dtype(ctx, 0, "X", i, i == 1 ? "W" : "R");
    if (st == SES_OK)
        st = ses__op_attr_flag(ctx, "layout", 0, &layout);
    if (st == SES_OK)
        st = ses__op_attr_int(ctx, "hidden_size", 0, &hidden);
    if (st != SES_OK)
        return st;
    if (ses__attrs_get_string(ctx->attrs, "direction", &direction) < 0 ||
        (strcmp(direction, "forward") && strcmp(direction, "reverse") &&
         strcmp(direction, "bidirectional")))
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute direction must be \"forward\", \"reverse\" or "
                            "\"bidirectional\"");
    dirs = strcmp(direction, "bidirectional") ? 1 : 2;
    if (x->rank != 3 || w->rank != 3 || r->rank != 3)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "X, W and R must be 3-D: X is %s, W is %s, R is %s", ses__tstr(x).s,
                            ses__tstr(w).s, ses__tstr(r).s);
    if (!has_hidden)
        hidden = r->dims[2];
    if (hidden < 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute hidden_size is %lld; it must be >= 1", (long long)hidden);
    seq = x->dims[layout ? 1 : 0];
    batch = x->dims[layout ? 0 : 1];
    in_size = x->dims[2];
    {
        const int64_t wd[3] = {dirs, gates * hidden, in_size},
                      rd[3] = {dirs, gates * hidden, hidden};
        const int64_t bd[2] = {dirs, 2 * gates * hidden}, sd[1] = {batch};
        const int64_t hd[3] = {layout ? batch : dirs, layout ? dirs : batch, hidden};
        const int64_t pd[2] = {dirs, 3 * hidden};
        st = check_input(ctx, 1, "W", x->dtype, 3, wd);
        if (st == SES_OK)
            st = check_input(ctx, 2, "R", x->dtype, 3, rd);
        if (st == SES_OK)
            st = check_input(ctx, 3, "B", x->dtype, 2, bd);
        if (st == SES_OK)
            st = check_input(ctx, 4, "sequence_lens", SES_I32, 1, sd);
        if (st == SES_OK)
            st = check_input(ctx, 5, "initial_h", x->dtype, 3, hd);
        if (st == SES_OK && gates == 4)
            st = check_input(ctx, 6, "initial_c", x->dtype, 3, hd);
        if (st == SES_OK && gates == 4)
            st = check_input(ctx, 7, "P", x->dtype, 2, pd);
        if (st != SES_OK)
            return st;
        /* Outputs: Y, then Y_h (and Y_c) shaped as initial_h. */
        memset(ctx->outputs, 0, 3 * sizeof ctx->outputs[0]);
        ctx->outputs[0].dtype = x->dtype;
        ctx->outputs[0].rank = 4;
        ctx->outputs[0].dims[0] = layout ? batch : seq;
        ctx->outputs[0].dims[1] = layout ? seq : dirs;
        ctx->outputs[0].dims[2] = layout ? dirs : batch;
        ctx->outputs[0].dims[3] = hidden;
        for (size_t o = 1; o < 3; o++) {
            ctx->outputs[o].dtype = x->dtype;
            ctx->outputs[o].rank = 3;
            memcpy(ctx->outputs[o].dims, hd, sizeof hd);
        }
    }
    if (ses__attrs_find(ctx->attrs, "clip")) {
        if ((st = ses__op_attr_float(ctx, "clip", 0.0, &clip)) != SES_OK)
            return st;
        if (!(clip > 0.0))
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "attribute clip is %g; it must be > 0",
                                clip);
    }
    st = read_activations(ctx, per_dir, dirs, defaults, codes, alpha, beta);
    if (st != SES_OK)
        return st;
    for (size_t i = 0; i < ctx->n_inputs; i++)
        if (i < 3 || ses__op_given(ctx, i))
            inputs |= UINT64_C(1) << i;
    ctx->kernel_inputs = inputs;
    {
        ses__attrs_t *ka = &ctx->kernel_attrs;
        const size_t n = per_dir * (size_t)dirs;
        ses_attr_t fa = ses_attr_floats("activation_alpha", alpha, n);
        ses_attr_t fb = ses_attr_floats("activation_beta", beta, n);
        st = ses__attrs_set_int(ka, "inputs", (int64_t)inputs);
        if (st == SES_OK)
            st = ses__attrs_set_int(ka, "hidden_size", hidden);
        if (st == SES_OK)
            st = ses__attrs_set_int(ka, "num_directions", dirs);
        if (st == SES_OK)
            st = ses__attrs_set_int(ka, "reverse", !strcmp(direction, "reverse"));
        if (st == SES_OK)
            st = ses__attrs_set_int(ka, "layout", layout);
        if (st == SES_OK)
            st = ses__attrs_set_ints(ka, "activations", codes, n);
        if (st == SES_OK)
            st = ses__attrs_set(ka, &fa);
        if (st == SES_OK)
            st = ses__attrs_set(ka, &fb);
        if (st == SES_OK)
            st = ses__attrs_set_float(ka, "clip", clip);
        if (st == SES_OK && gates == 3) {
            st = ses__op_attr_flag(ctx, "linear_before_reset", 0, &flag);
            if (st == SES_OK)
                st = ses__attrs_set_int(ka, "linear_before_reset", flag);
        }
        if (st == SES_OK && gates == 4) {
            st = ses__op_attr_flag(ctx, "input_forget", 0, &flag);
            if (st == SES_OK)
                st = ses__attrs_set_int(ka, "input_forget", flag);
        }
    }
    return st;
}

ses_status_t ses__infer_rnn(ses__infer_ctx_t *ctx) {
    static const int defaults[] = {SES__RNN_TANH};
    return infer_rnn(ctx, 1, 1, defaults);
}

ses_status_t ses__infer_gru(ses__infer_ctx_t *ctx) {
    static const int defaults[] = {SES__RNN_SIGMOID, SES__RNN_TANH};
    return infer_rnn(ctx, 3, 2, defaults);
}

ses_status_t ses__infer_lstm(ses__infer_ctx_t *ctx) {
    static const int defaults[] = {SES__RNN_SIGMOID, SES__RNN_TANH, SES__RNN_TANH};
    return infer_rnn(ctx, 4, 3, defaults);
}
