/*
 * The optimizers of ai.onnx.preview.training (Adagrad, Momentum, Adam): pure functions of the
 * learning rate R, the step T and n tensors X with their gradients G and optimizer state, giving
 * the new X and state. They are built at import out of elementwise ops (libsession's own SGD,
 * Momentum and Adam ops update variables in place, which these do not), one chain per X, in f32
 * or f64 as X is. T's branches (T > 0) become Where, so a fed T needs no recompile.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../error.h"
#include "onnx_importer.h"

/* What one node builds with: its graph, label, X's dtype, and a counter for names. */
typedef struct opt {
    importer_t *im;
    ses_graph_t *g;
    const char *label;
    ses_dtype_t dtype;
} opt_t;

static double attr_float(const Onnx__NodeProto *n, const char *name, double fallback) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
            return n->attribute[i]->f;
    return fallback;
}

static const char *attr_string(const Onnx__NodeProto *n, const char *name, char *buf, size_t size) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name)) {
            snprintf(buf, size, "%.*s", (int)n->attribute[i]->s.len,
                     (const char *)n->attribute[i]->s.data);
            return buf;
        }
    return NULL;
}

/* A scalar constant of the node's dtype. */
static ses_status_t scalar(opt_t *o, double v, ses_edge_t *out) {
    ses_tensor_t *t;
    ses_status_t st;

    if (o->dtype == SES_F64)
        st = ses_tensor_create_from(SES_F64, 0, NULL, &v, sizeof v, &t);
    else {
        float f = (float)v;
        st = ses_tensor_create_from(SES_F32, 0, NULL, &f, sizeof f, &t);
    }
    return st != SES_OK ? st : ses__onnx_add_constant(o->im, NULL, t, out);
}

static ses_status_t op2(opt_t *o, const char *op, ses_edge_t a, ses_edge_t b, ses_edge_t *out) {
    const ses_edge_t in[2] = {a, b};
    return ses_graph_op(o->g, op, NULL, in, 2, NULL, 0, out);
}

static ses_status_t op1(opt_t *o, const char *op, ses_edge_t a, ses_edge_t *out) {
    return ses_graph_op(o->g, op, NULL, &a, 1, NULL, 0, out);
}

/* k * a, with k a number. */
static ses_status_t scale(opt_t *o, double k, ses_edge_t a, ses_edge_t *out) {
    ses_edge_t c;
    ses_status_t st = scalar(o, k, &c);
    return st != SES_OK ? st : op2(o, "Mul", c, a, out);
}

/* norm * x + g: the gradient with the regularization term's. */
static ses_status_t regularized(opt_t *o, double norm, ses_edge_t x, ses_edge_t g,
                                ses_edge_t *out) {
    ses_edge_t nx;
    ses_status_t st = scale(o, norm, x, &nx);
    return st != SES_OK ? st : op2(o, "Add", nx, g, out);
}

/* The edge of input @p i, a tensor defined before the node. */
static ses_status_t input(opt_t *o, const Onnx__NodeProto *n, size_t i, ses_edge_t *out) {
    const value_t *v = *n->input[i] ? ses__onnx_find(o->im, n->input[i]) : NULL;
    if (!v || v->kind != SES__ONNX_TENSOR)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: input %zu, \"%s\", is not a tensor defined "
                         "before the node",
                         o->label, i, n->input[i]);
    *out = v->edge;
    return SES_OK;
}

/* T as X's dtype, and T > 0 as a bool. */
static ses_status_t step(opt_t *o, ses_edge_t t, ses_edge_t *t_float, ses_edge_t *positive) {
    ses_attr_t to = ses_attr_int("to", o->dtype == SES_F64 ? 11 : 1);
    ses_edge_t zero;
    ses_status_t st = ses_graph_op(o->g, "Cast", NULL, &t, 1, &to, 1, t_float);
    if (st == SES_OK)
        st = scalar(o, 0.0, &zero);
    return st != SES_OK ? st : op2(o, "Greater", *t_float, zero, positive);
}

/* x - r * d. */
static ses_status_t descend(opt_t *o, ses_edge_t x, ses_edge_t r, ses_edge_t d, ses_edge_t *out) {
    ses_edge_t rd;
    ses_status_t st = op2(o, "Mul", r, d, &rd);
    return st != SES_OK ? st : op2(o, "Sub", x, rd, out);
}

static ses_status_t adagrad(opt_t *o, const Onnx__NodeProto *n, size_t k, ses_edge_t r,
                            ses_edge_t t_float, ses_edge_t *out) {
    const double norm = attr_float(n, "norm_coefficient", 0), eps = attr_float(n, "epsilon", 1e-6),
                 decay = attr_float(n, "decay_factor", 0);
    ses_edge_t x = {0}, g = {0}, h = {0}, gr, g2, h_new, root, e, denom, td, one, lr, ratio;
    ses_status_t st;

    if ((st = input(o, n, 2 + k, &x)) || (st = input(o, n, 2 + (n->n_input - 2) / 3 + k, &g)) ||
        (st = input(o, n, 2 + 2 * (n->n_input - 2) / 3 + k, &h)) ||
        (st = regularized(o, norm, x, g, &gr)) || (st = op2(o, "Mul", gr, gr, &g2)) ||
        (st = op2(o, "Add", h, g2, &h_new)) || (st = op1(o, "Sqrt", h_new, &root)) ||
        (st = scalar(o, eps, &e)) || (st = op2(o, "Add", root, e, &denom)) ||
        /* r / (1 + t * decay) */
        (st = scale(o, decay, t_float, &td)) || (st = scalar(o, 1.0, &one)) ||
        (st = op2(o, "Add", one, td, &td)) || (st = op2(o, "Div", r, td, &lr)) ||
        (st = op2(o, "Div", gr, denom, &ratio)) || (st = descend(o, x, lr, ratio, &out[0])))
        return st;
    out[1] = h_new;
    return SES_OK;
}

static ses_status_t momentum(opt_t *o, const Onnx__NodeProto *n, size_t k, ses_edge_t r,
                             ses_edge_t positive, ses_edge_t *out) {
    const double norm = attr_float(n, "norm_coefficient", 0), alpha = attr_float(n, "alpha", 0),
                 beta = attr_float(n, "beta", 0);
    char mode[32];
    const char *m = attr_string(n, "mode", mode, sizeof mode);
    const int nesterov = m && !strcmp(m, "nesterov");
    ses_edge_t x = {0}, g = {0}, v = {0}, gr, av, b, one, badj, bg, v_new, d, avn;
    ses_status_t st;

    if (m && !nesterov && strcmp(m, "standard"))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: attribute mode is \"%s\"; use \"standard\" or \"nesterov\"", o->label,
                         m);
    if ((st = input(o, n, 2 + k, &x)) || (st = input(o, n, 2 + (n->n_input - 2) / 3 + k, &g)) ||
        (st = input(o, n, 2 + 2 * (n->n_input - 2) / 3 + k, &v)) ||
        (st = regularized(o, norm, x, g, &gr)) || (st = scale(o, alpha, v, &av)) ||
        /* beta, or 1 at the first step */
        (st = scalar(o, beta, &b)) || (st = scalar(o, 1.0, &one)))
        return st;
    {
        const ses_edge_t w[3] = {positive, b, one};
        if ((st = ses_graph_op(o->g, "Where", NULL, w, 3, NULL, 0, &badj)) != SES_OK)
            return st;
    }
    if ((st = op2(o, "Mul", badj, gr, &bg)) || (st = op2(o, "Add", av, bg, &v_new)))
        return st;
    d = v_new;
    if (nesterov && ((st = scale(o, alpha, v_new, &avn)) || (st = op2(o, "Add", gr, avn, &d))))
        return st;
    if ((st = descend(o, x, r, d, &out[0])) != SES_OK)
        return st;
    out[1] = v_new;
    return SES_OK;
}

static ses_status_t adam(opt_t *o, const Onnx__NodeProto *n, size_t k, ses_edge_t r,
                         ses_edge_t t_float, ses_edge_t positive, ses_edge_t *out) {
    const double norm = attr_float(n, "norm_coefficient", 0),
                 post = attr_float(n, "norm_coefficient_post", 0),
                 alpha = attr_float(n, "alpha", 0.9), beta = attr_float(n, "beta", 0.999),
                 eps = attr_float(n, "epsilon", 1e-6);
    const size_t count = (n->n_input - 2) / 4;
    ses_edge_t x = {0}, g = {0}, v = {0}, h = {0}, gr, av, ag, v_new, bh, g2, bg, h_new, root, e,
               denom, ratio, one, a, bt, at, ca, cb, sq, rb, radj, x_new;
    ses_status_t st;

    if ((st = input(o, n, 2 + k, &x)) || (st = input(o, n, 2 + count + k, &g)) ||
        (st = input(o, n, 2 + 2 * count + k, &v)) || (st = input(o, n, 2 + 3 * count + k, &h)) ||
        (st = regularized(o, norm, x, g, &gr)) ||
        /* v' = alpha v + (1 - alpha) g; h' = beta h + (1 - beta) g^2 */
        (st = scale(o, alpha, v, &av)) || (st = scale(o, 1 - alpha, gr, &ag)) ||
        (st = op2(o, "Add", av, ag, &v_new)) || (st = scale(o, beta, h, &bh)) ||
        (st = op2(o, "Mul", gr, gr, &g2)) || (st = scale(o, 1 - beta, g2, &bg)) ||
        (st = op2(o, "Add", bh, bg, &h_new)) || (st = op1(o, "Sqrt", h_new, &root)) ||
        (st = scalar(o, eps, &e)) || (st = op2(o, "Add", root, e, &denom)) ||
        (st = op2(o, "Div", v_new, denom, &ratio)) ||
        /* r sqrt(1 - beta^t) / (1 - alpha^t) when t > 0, else r */
        (st = scalar(o, 1.0, &one)) || (st = scalar(o, beta, &bt)) ||
        (st = op2(o, "Pow", bt, t_float, &bt)) || (st = op2(o, "Sub", one, bt, &cb)) ||
        (st = op1(o, "Sqrt", cb, &sq)) || (st = scalar(o, alpha, &a)) ||
        (st = op2(o, "Pow", a, t_float, &at)) || (st = op2(o, "Sub", one, at, &ca)) ||
        (st = op2(o, "Mul", r, sq, &rb)) || (st = op2(o, "Div", rb, ca, &rb)))
        return st;
    {
        const ses_edge_t w[3] = {positive, rb, r};
        if ((st = ses_graph_op(o->g, "Where", NULL, w, 3, NULL, 0, &radj)) != SES_OK)
            return st;
    }
    if ((st = descend(o, x, radj, ratio, &x_new)) || (st = scale(o, 1 - post, x_new, &out[0])))
        return st;
    out[1] = v_new;
    out[2] = h_new;
    return SES_OK;
}

int ses__onnx_is_optimizer_op(const char *op) {
    return !strcmp(op, "Adagrad") || !strcmp(op, "Momentum") || !strcmp(op, "Adam");
}

ses_status_t ses__onnx_optimizer_node(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    const char *op = n->op_type;
    const size_t per = !strcmp(op, "Adam") ? 4 : 3, outs = per - 1;
    opt_t o = {im, im->m->graph, label, SES_F32};
    ses_edge_t r, t, t_float, positive, result[3];
    const value_t *x;
    ses_status_t st;

    if (n->n_input < 2 + per || (n->n_input - 2) % per)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: %zu inputs; %s takes R, T, then %zu lists of n tensors (X, G%s)",
                         label, n->n_input, op, per,
                         per == 4                 ? ", V, H"
                         : !strcmp(op, "Adagrad") ? ", H"
                                                  : ", V");
    const size_t count = (n->n_input - 2) / per;
    if (n->n_output != outs * count)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: %zu outputs for %zu tensors; %s gives %zu each",
                         label, n->n_output, count, op, outs);
    x = *n->input[2] ? ses__onnx_find(im, n->input[2]) : NULL;
    if (x && (x->dtype == SES_F64 || x->dtype == SES_F32))
        o.dtype = x->dtype;
    if ((st = input(&o, n, 0, &r)) || (st = input(&o, n, 1, &t)) ||
        (st = step(&o, t, &t_float, &positive)))
        return st;
    for (size_t k = 0; k < count; k++) {
        st = !strcmp(op, "Adagrad")    ? adagrad(&o, n, k, r, t_float, result)
             : !strcmp(op, "Momentum") ? momentum(&o, n, k, r, positive, result)
                                       : adam(&o, n, k, r, t_float, positive, result);
        for (size_t j = 0; j < outs && st == SES_OK; j++)
            if (*n->output[j * count + k])
                st = ses__onnx_define(im, n->output[j * count + k], result[j], NULL);
        if (st != SES_OK) {
            char message[1024];
            snprintf(message, sizeof message, "%s", ses_last_error());
            return strstr(message, label) ? st : ses__fail(st, "%s: %s", label, message);
        }
    }
    return SES_OK;
}
