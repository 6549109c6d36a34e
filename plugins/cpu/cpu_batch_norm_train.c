/*
 * BatchNormalization in training mode (a general entry): X [N, C, ...] normalized per channel
 * with the batch's own mean and variance (the population variance, dividing by N times the
 * spatial size), then scaled and shifted:
 *   Y = (X - mean) / sqrt(var + epsilon) * scale + B,
 * and, with the 5-input form, the running statistics blended with momentum:
 *   running_mean = input_mean * momentum + mean * (1 - momentum),
 *   running_var  = input_var * momentum + var * (1 - momentum).
 * Inputs X, scale, B (Y alone) or X, scale, B, input_mean, input_var (Y, running_mean and
 * optionally running_var); f32 or f64, statistics summed in double.
 */
#include <inttypes.h>
#include <math.h>

#include "cpu_internal.h"

static double cpu__bnt_get(const cpu__tensor_t *t, int64_t i) {
    return t->dtype == SES_DRV_DTYPE_F32 ? ((const float *)(const void *)t->data)[i]
                                         : ((const double *)(const void *)t->data)[i];
}

static void cpu__bnt_set(const cpu__tensor_t *t, int64_t i, double v) {
    if (t->dtype == SES_DRV_DTYPE_F32)
        ((float *)(void *)t->data)[i] = (float)v;
    else
        ((double *)(void *)t->data)[i] = v;
}

int32_t cpu__batch_norm_train(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    cpu__tensor_t p[4];
    double eps, momentum;
    int32_t st;

    if ((st = cpu__attr_float(call, "epsilon", 1e-5, &eps)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "momentum", 0.9, &momentum)) != SES_DRV_OK)
        return st;
    int ok = x->rank >= 2 && cpu__same_shape(x, y) && (call->n_in == 3 || call->n_in == 5) &&
             (call->n_out == 1 || call->n_in == 5);
    for (uint32_t i = 1; ok && i < call->n_in; i++) {
        p[i - 1] = cpu__input(call, i);
        ok = p[i - 1].rank == 1 && p[i - 1].dims[0] == x->dims[1];
    }
    for (uint32_t o = 1; ok && o < call->n_out; o++)
        ok = call->outs[o].rank == 1 && call->outs[o].dims[0] == x->dims[1];
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected X [N, C, ...] with Y its shape, then scale, B (and "
                              "input_mean, input_var, running_mean, running_var when given) of "
                              "[C]; got %" PRIu32 " inputs and %" PRIu32 " outputs",
                              call->n_in, call->n_out);
    const int64_t n = x->dims[0], c = x->dims[1];
    const int64_t inner = n > 0 && c > 0 ? (int64_t)x->count / (n * c) : 0;
    const double count = (double)(n * inner);
    for (int64_t ch = 0; ch < c; ch++) {
        double sum = 0, sq = 0;
        for (int64_t b = 0; b < n; b++)
            for (int64_t q = 0; q < inner; q++)
                sum += cpu__bnt_get(x, (b * c + ch) * inner + q);
        const double mean = count > 0 ? sum / count : NAN;
        for (int64_t b = 0; b < n; b++)
            for (int64_t q = 0; q < inner; q++) {
                const double d = cpu__bnt_get(x, (b * c + ch) * inner + q) - mean;
                sq += d * d;
            }
        const double var = count > 0 ? sq / count : NAN;
        const double scale = cpu__bnt_get(&p[0], ch) / sqrt(var + eps);
        const double shift = cpu__bnt_get(&p[1], ch) - mean * scale;
        for (int64_t b = 0; b < n; b++)
            for (int64_t q = 0; q < inner; q++) {
                const int64_t i = (b * c + ch) * inner + q;
                cpu__bnt_set(y, i, cpu__bnt_get(x, i) * scale + shift);
            }
        /* An empty batch has no statistics: the running ones stay as they were. */
        if (call->n_out > 1)
            cpu__bnt_set(&call->outs[1], ch,
                         count > 0 ? cpu__bnt_get(&p[2], ch) * momentum + mean * (1 - momentum)
                                   : cpu__bnt_get(&p[2], ch));
        if (call->n_out > 2)
            cpu__bnt_set(&call->outs[2], ch,
                         count > 0 ? cpu__bnt_get(&p[3], ch) * momentum + var * (1 - momentum)
                                   : cpu__bnt_get(&p[3], ch));
    }
    return SES_DRV_OK;
}
