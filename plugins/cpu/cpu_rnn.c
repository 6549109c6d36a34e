/*
 * The recurrent layers RNN, GRU and LSTM (general entries; libsession's src/ops/rnn.c says
 * what the host normalizes). Per direction, the input projections of every time step are one
 * GEMM (X [seq * batch, input] times W's transpose, the driver's sgemm or dgemm path), then each
 * step is one GEMM of the hidden state by R's transpose (two for GRU without
 * linear_before_reset, whose candidate gate multiplies R by the reset hidden state) and the
 * gates elementwise, in double.
 *
 * sequence_lens: batch entry b runs its first sequence_lens[b] steps (in reverse from step
 * sequence_lens[b] - 1); Y is 0 past them, and Y_h, Y_c hold the state after its last step (the
 * initial state when it has none). clip bounds the input of every activation, the cell state's
 * too where it goes into h (the state itself is kept unclipped).
 *
 * Activation codes (attribute activations) are libsession's enum ses__rnn_act: 0 Relu, 1 Tanh,
 * 2 Sigmoid, 3 Affine, 4 LeakyRelu, 5 ThresholdedRelu, 6 ScaledTanh, 7 HardSigmoid, 8 Elu,
 * 9 Softsign, 10 Softplus.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define RNN_MAX_ACTS 6 /* LSTM's 3 per direction, both directions */

static double act(int64_t code, double alpha, double beta, double x) {
    switch (code) {
    case 0: return x > 0.0 ? x : 0.0;
    case 1: return tanh(x);
    case 2: return 1.0 / (1.0 + exp(-x));
    case 3: return alpha * x + beta;
    case 4: return x >= 0.0 ? x : alpha * x;
    case 5: return x > alpha ? x : 0.0;
    case 6: return alpha * tanh(beta * x);
    case 7: {
        const double v = alpha * x + beta;
        return v < 0.0 ? 0.0 : v > 1.0 ? 1.0 : v;
    }
    case 8: return x >= 0.0 ? x : alpha * (exp(x) - 1.0);
    case 9: return x / (1.0 + fabs(x));
    default: return x > 30.0 ? x : log1p(exp(x)); /* 10 Softplus */
    }
}

static inline double ld(const void *p, uint64_t i, int f64) {
    return f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static inline void st(void *p, uint64_t i, int f64, double v) {
    if (f64)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

/* FLOATS attribute @p key, exactly @p n values. */
static int32_t attr_floats(const cpu__call_t *call, const char *key, double *out, uint64_t n) {
    uint64_t count = n;
    int32_t rc = call->node->attr
                     ? call->node->attr(call->node, key, SES_DRV_ATTR_FLOATS, &count, out)
                     : SES_DRV_NOT_FOUND;
    if (rc != SES_DRV_OK || count != n)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute %s must be %" PRIu64 " floats", key, n);
    return SES_DRV_OK;
}

typedef struct rnn {
    int64_t gates, per_dir, dirs, hidden, seq, batch, in_size, layout;
    int reverse, f64, lbr, input_forget, n_out;
    int64_t acts[RNN_MAX_ACTS];
    double alpha[RNN_MAX_ACTS], beta[RNN_MAX_ACTS], clip;
    const cpu__tensor_t *x, *w, *r, *b, *lens, *h0, *c0, *p;
} rnn_t;

static inline double rnn_act(const rnn_t *n, int64_t d, int which, double x) {
    const int64_t k = d * n->per_dir + which;
    if (n->clip > 0.0)
        x = x < -n->clip ? -n->clip : x > n->clip ? n->clip : x;
    return act(n->acts[k], n->alpha[k], n->beta[k], x);
}

/* Row of X (and of its projections) for time @p t, batch entry @p b. */
static inline uint64_t x_row(const rnn_t *n, int64_t t, int64_t b) {
    return (uint64_t)(n->layout ? b * n->seq + t : t * n->batch + b);
}

/* Offset of (direction d, batch b) in initial_h, Y_h (and the c ones). */
static inline uint64_t state_at(const rnn_t *n, int64_t d, int64_t b) {
    return (uint64_t)((n->layout ? b * n->dirs + d : d * n->batch + b) * n->hidden);
}

static inline uint64_t y_at(const rnn_t *n, int64_t t, int64_t d, int64_t b) {
    const int64_t row =
        n->layout ? (b * n->seq + t) * n->dirs + d : (t * n->dirs + d) * n->batch + b;
    return (uint64_t)(row * n->hidden);
}

/* Scratch of one direction, all of the layer's dtype. */
typedef struct rnn_scratch {
    void *xw;  /* [seq * batch, gates * hidden]: X W' */
    void *hr;  /* [batch, gates * hidden]: H R' (GRU: z, r, and h with linear_before_reset) */
    void *h;   /* [batch, hidden]: the hidden state */
    void *c;   /* [batch, hidden]: LSTM's cell state */
    void *rh;  /* [batch, hidden]: GRU's r (.) H */
    void *rhr; /* [batch, hidden]: GRU's (r (.) H) R_h' */
    void *z;   /* [batch, hidden]: GRU's update gate */
} rnn_scratch_t;

/* One direction of the layer; fails only when the host cancels the eval between steps. */
static int32_t rnn_direction(const cpu__call_t *call, const rnn_t *n, int64_t d,
                             rnn_scratch_t *s) {
    const int f64 = n->f64;
    const int64_t H = n->hidden, G = n->gates * H, B = n->batch;
    const size_t es = f64 ? 8 : 4;
    const unsigned char *w = n->w->data + (size_t)(d * G * n->in_size) * es;
    const unsigned char *r = n->r->data + (size_t)(d * G * H) * es;
    const int32_t *lens = n->lens ? (const int32_t *)(const void *)n->lens->data : NULL;
    const int backward = n->reverse || d == 1;
    const cpu__tensor_t *y = &call->outs[0];
    const int64_t hr_cols = n->gates == 3 && !n->lbr ? 2 * H : G;

    /* X W' for all steps at once. */
    if (n->seq * B > 0 && n->in_size > 0)
        cpu__gemm_call(call->device, 1, n->x->dtype, 0, 1, n->seq * B, G, n->in_size, 1.0,
                       n->x->data, n->in_size, w, n->in_size, 0.0, s->xw, G);
    else
        memset(s->xw, 0, (size_t)(n->seq * B * G) * es);
    /* The initial state. */
    for (int64_t b = 0; b < B; b++)
        for (int64_t k = 0; k < H; k++) {
            const uint64_t at = state_at(n, d, b) + (uint64_t)k;
            st(s->h, (uint64_t)(b * H + k), f64, n->h0 ? ld(n->h0->data, at, f64) : 0.0);
            if (n->gates == 4)
                st(s->c, (uint64_t)(b * H + k), f64, n->c0 ? ld(n->c0->data, at, f64) : 0.0);
        }
    for (int64_t step = 0; step < n->seq; step++) {
        if (cpu__cancelled(call))
            return cpu__call_fail(call, SES_DRV_CANCELLED,
                                  "cancelled by the host after %" PRId64 " of %" PRId64 " steps",
                                  step, n->seq);
        cpu__gemm_call(call->device, 1, n->x->dtype, 0, 1, B, hr_cols, H, 1.0, s->h, H, r, H, 0.0,
                       s->hr, G);
        if (n->gates == 3 && !n->lbr) {
            /* z and r first, then (r (.) H) R_h'. */
            for (int64_t b = 0; b < B; b++) {
                const int64_t len = lens ? lens[b] : n->seq;
                const int64_t t = backward ? len - 1 - step : step;
                const uint64_t xr = x_row(n, t < 0 ? 0 : t, b) * (uint64_t)G;
                for (int64_t k = 0; k < H; k++) {
                    double zv = 0.0, rv = 0.0;
                    if (step < len) {
                        double zp = ld(s->xw, xr + (uint64_t)k, f64) +
                                    ld(s->hr, (uint64_t)(b * G + k), f64);
                        double rp = ld(s->xw, xr + (uint64_t)(H + k), f64) +
                                    ld(s->hr, (uint64_t)(b * G + H + k), f64);
                        if (n->b) {
                            const uint64_t bo = (uint64_t)(d * 2 * G);
                            zp += ld(n->b->data, bo + (uint64_t)k, f64) +
                                  ld(n->b->data, bo + (uint64_t)(G + k), f64);
                            rp += ld(n->b->data, bo + (uint64_t)(H + k), f64) +
                                  ld(n->b->data, bo + (uint64_t)(G + H + k), f64);
                        }
                        zv = rnn_act(n, d, 0, zp);
                        rv = rnn_act(n, d, 0, rp);
                    }
                    st(s->z, (uint64_t)(b * H + k), f64, zv);
                    st(s->rh, (uint64_t)(b * H + k), f64,
                       rv * ld(s->h, (uint64_t)(b * H + k), f64));
                }
            }
            cpu__gemm_call(call->device, 1, n->x->dtype, 0, 1, B, H, H, 1.0, s->rh, H,
                           r + (size_t)(2 * H * H) * es, H, 0.0, s->rhr, H);
        }
        for (int64_t b = 0; b < B; b++) {
            const int64_t len = lens ? lens[b] : n->seq;
            const int64_t t = backward ? len - 1 - step : step;
            const uint64_t xr = x_row(n, t < 0 ? 0 : t, b) * (uint64_t)G;
            const uint64_t hb = (uint64_t)(b * H), gb = (uint64_t)(b * G);
            const uint64_t bo = (uint64_t)(d * 2 * G);
            if (step >= len)
                continue; /* done: the state stays, Y stays 0 */
#define PRE(g, k)                                   \
    (ld(s->xw, xr + (uint64_t)((g)*H + (k)), f64) + \
     (n->b ? ld(n->b->data, bo + (uint64_t)((g)*H + (k)), f64) : 0.0))
#define REC(g, k)                                   \
    (ld(s->hr, gb + (uint64_t)((g)*H + (k)), f64) + \
     (n->b ? ld(n->b->data, bo + (uint64_t)(G + (g)*H + (k)), f64) : 0.0))
            for (int64_t k = 0; k < H; k++) {
                const double hp = ld(s->h, hb + (uint64_t)k, f64);
                double hv;
                if (n->gates == 1) {
                    hv = rnn_act(n, d, 0, PRE(0, k) + REC(0, k));
                } else if (n->gates == 3) {
                    double z, hh;
                    if (n->lbr) {
                        const double rv = rnn_act(n, d, 0, PRE(1, k) + REC(1, k));
                        z = rnn_act(n, d, 0, PRE(0, k) + REC(0, k));
                        hh = rnn_act(n, d, 1, PRE(2, k) + rv * REC(2, k));
                    } else {
                        const double rb =
                            n->b ? ld(n->b->data, bo + (uint64_t)(G + 2 * H + k), f64) : 0.0;
                        z = ld(s->z, hb + (uint64_t)k, f64);
                        hh = rnn_act(n, d, 1, PRE(2, k) + ld(s->rhr, hb + (uint64_t)k, f64) + rb);
                    }
                    hv = (1.0 - z) * hh + z * hp;
                } else {
                    /* LSTM: gates i, o, f, c; peepholes i, o, f. */
                    const double cp = ld(s->c, hb + (uint64_t)k, f64);
                    const uint64_t po = (uint64_t)(d * 3 * H);
                    const double pi = n->p ? ld(n->p->data, po + (uint64_t)k, f64) : 0.0;
                    const double pov = n->p ? ld(n->p->data, po + (uint64_t)(H + k), f64) : 0.0;
                    const double pf = n->p ? ld(n->p->data, po + (uint64_t)(2 * H + k), f64) : 0.0;
                    const double iv = rnn_act(n, d, 0, PRE(0, k) + REC(0, k) + pi * cp);
                    const double fv = n->input_forget
                                          ? 1.0 - iv
                                          : rnn_act(n, d, 0, PRE(2, k) + REC(2, k) + pf * cp);
                    const double cv = rnn_act(n, d, 1, PRE(3, k) + REC(3, k));
                    const double c = fv * cp + iv * cv;
                    const double ov = rnn_act(n, d, 0, PRE(1, k) + REC(1, k) + pov * c);
                    hv = ov * rnn_act(n, d, 2, c);
                    st(s->c, hb + (uint64_t)k, f64, c);
                }
                st(s->h, hb + (uint64_t)k, f64, hv);
                st(y->data, y_at(n, t, d, b) + (uint64_t)k, f64, hv);
            }
#undef PRE
#undef REC
        }
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t k = 0; k < H; k++) {
            const uint64_t at = state_at(n, d, b) + (uint64_t)k;
            if (n->n_out > 1)
                st(call->outs[1].data, at, f64, ld(s->h, (uint64_t)(b * H + k), f64));
            if (n->n_out > 2)
                st(call->outs[2].data, at, f64, ld(s->c, (uint64_t)(b * H + k), f64));
        }
    return SES_DRV_OK;
}

int32_t cpu__rnn(const cpu__call_t *call) {
    rnn_t n;
    rnn_scratch_t s;
    int64_t mask = 0, v = 0;
    uint32_t n_acts = 0, next = 3;
    int32_t rc;
    unsigned char *block = NULL;
    cpu__tensor_t in[8];

    memset(&n, 0, sizeof n);
    memset(&s, 0, sizeof s);
    n.gates = call->spec->code == CPU__OP_RNN ? 1 : call->spec->code == CPU__OP_GRU ? 3 : 4;
    n.per_dir = n.gates == 1 ? 1 : n.gates == 3 ? 2 : 3;
    n.n_out = (int)call->n_out;
    n.f64 = call->in[0].dtype == SES_DRV_DTYPE_F64;
    if ((rc = cpu__attr_int(call, "inputs", 0, 0, &mask)) != SES_DRV_OK ||
        (rc = cpu__attr_int(call, "hidden_size", 0, 0, &n.hidden)) != SES_DRV_OK ||
        (rc = cpu__attr_int(call, "num_directions", 0, 0, &n.dirs)) != SES_DRV_OK ||
        (rc = cpu__attr_int(call, "layout", 1, 0, &n.layout)) != SES_DRV_OK ||
        (rc = cpu__attr_int(call, "reverse", 1, 0, &v)) != SES_DRV_OK)
        return rc;
    n.reverse = v != 0;
    if ((rc = cpu__attr_float(call, "clip", 0.0, &n.clip)) != SES_DRV_OK)
        return rc;
    if (n.gates == 3 && (rc = cpu__attr_int(call, "linear_before_reset", 1, 0, &v)) == SES_DRV_OK)
        n.lbr = v != 0;
    if (n.gates == 4 && (rc = cpu__attr_int(call, "input_forget", 1, 0, &v)) == SES_DRV_OK)
        n.input_forget = v != 0;
    if (rc != SES_DRV_OK)
        return rc;
    if (n.dirs < 1 || n.dirs > 2 || n.hidden < 1)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "num_directions %" PRId64 " and hidden_size %" PRId64
                              " must be 1 or 2 and >= 1",
                              n.dirs, n.hidden);
    if ((rc = cpu__attr_ints(call, "activations", n.acts, RNN_MAX_ACTS, &n_acts)) != SES_DRV_OK)
        return rc;
    if (n_acts != (uint32_t)(n.per_dir * n.dirs))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute activations holds %" PRIu32 " codes; it needs %" PRId64,
                              n_acts, n.per_dir * n.dirs);
    for (uint32_t i = 0; i < n_acts; i++)
        if (n.acts[i] < 0 || n.acts[i] > 10)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "activation code %" PRId64 " is not one of 0 to 10", n.acts[i]);
    if ((rc = attr_floats(call, "activation_alpha", n.alpha, n_acts)) != SES_DRV_OK ||
        (rc = attr_floats(call, "activation_beta", n.beta, n_acts)) != SES_DRV_OK)
        return rc;
    /* Which inputs came: bit i of mask is ONNX input i. */
    if ((mask & 7) != 7 || mask >> (n.gates == 4 ? 8 : 6))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute inputs %" PRId64
                              " must have bits 0 to 2 set and no bit "
                              "past the op's inputs",
                              mask);
    for (uint32_t i = 0; i < call->n_in && i < 8; i++)
        in[i] = cpu__input(call, i);
    {
        uint32_t count = 0;
        for (int i = 0; i < 8; i++)
            count += (uint32_t)((mask >> i) & 1);
        if (count != call->n_in)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "attribute inputs %" PRId64 " names %" PRIu32
                                  " inputs, the node has %" PRIu32,
                                  mask, count, call->n_in);
    }
    n.x = &in[0];
    n.w = &in[1];
    n.r = &in[2];
    n.b = mask & 0x08 ? &in[next++] : NULL;
    n.lens = mask & 0x10 ? &in[next++] : NULL;
    n.h0 = mask & 0x20 ? &in[next++] : NULL;
    n.c0 = mask & 0x40 ? &in[next++] : NULL;
    n.p = mask & 0x80 ? &in[next++] : NULL;
    /* Shapes, checked against what the host inferred. */
    if (n.x->rank != 3 || n.w->rank != 3 || n.r->rank != 3)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "X, W and R must be 3-D");
    n.seq = n.x->dims[n.layout ? 1 : 0];
    n.batch = n.x->dims[n.layout ? 0 : 1];
    n.in_size = n.x->dims[2];
    {
        const int64_t G = n.gates * n.hidden, H = n.hidden;
        const uint64_t state = (uint64_t)(n.dirs * n.batch * H);
        int ok = n.w->dims[0] == n.dirs && n.w->dims[1] == G && n.w->dims[2] == n.in_size &&
                 n.r->dims[0] == n.dirs && n.r->dims[1] == G && n.r->dims[2] == H &&
                 (!n.b || n.b->count == (uint64_t)(n.dirs * 2 * G)) &&
                 (!n.lens || n.lens->count == (uint64_t)n.batch) &&
                 (!n.h0 || n.h0->count == state) && (!n.c0 || n.c0->count == state) &&
                 (!n.p || n.p->count == (uint64_t)(n.dirs * 3 * H)) &&
                 call->outs[0].count == (uint64_t)n.seq * state;
        for (uint32_t o = 1; o < call->n_out; o++)
            ok = ok && call->outs[o].count == state;
        if (!ok)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "the inputs' and outputs' shapes disagree with each other or "
                                  "with hidden_size %" PRId64 " and num_directions %" PRId64,
                                  H, n.dirs);
        if ((rc = cpu__check_blas_dims(call, n.seq * n.batch, G, n.in_size > 0 ? n.in_size : 1)) !=
            SES_DRV_OK)
            return rc;
        for (int64_t b = 0; n.lens && b < n.batch; b++) {
            const int32_t len = ((const int32_t *)(const void *)n.lens->data)[b];
            if (len < 0 || len > n.seq)
                return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                      "sequence_lens[%" PRId64 "] is %" PRId32
                                      "; it must be in [0, %" PRId64 "]",
                                      b, len, n.seq);
        }
        {
            const size_t es = n.f64 ? 8 : 4;
            const size_t xw = (size_t)(n.seq * n.batch * G), bh = (size_t)(n.batch * H);
            const size_t total = (xw + (size_t)(n.batch * G) + 5 * bh) * es + 7 * CPU__ALIGNMENT;
            unsigned char *p;
            block = malloc(total ? total : 1);
            if (!block)
                return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY,
                                      "out of memory for %zu bytes of scratch", total);
            p = block;
#define CARVE(field, n_elems)                                                       \
    do {                                                                            \
        s.field = p;                                                                \
        p += ((n_elems)*es + CPU__ALIGNMENT - 1) / CPU__ALIGNMENT * CPU__ALIGNMENT; \
    } while (0)
            CARVE(xw, xw);
            CARVE(hr, (size_t)(n.batch * G));
            CARVE(h, bh);
            CARVE(c, bh);
            CARVE(rh, bh);
            CARVE(rhr, bh);
            CARVE(z, bh);
#undef CARVE
        }
    }
    memset(call->outs[0].data, 0, call->outs[0].count * call->outs[0].esize);
    rc = SES_DRV_OK;
    for (int64_t d = 0; d < n.dirs && n.batch > 0 && rc == SES_DRV_OK; d++)
        rc = rnn_direction(call, &n, d, &s);
    free(block);
    return rc;
}
