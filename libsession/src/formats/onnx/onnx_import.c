/*
 * ONNX models to graphs.
 *
 * One pass over the graph's nodes in file order (ONNX requires topological order): each value
 * name maps to an edge; initializers are constants (or variables), graph inputs placeholders,
 * Constant nodes constants, every other node a node of the same op. The op-set adaptations below
 * turn older forms into the op-set 13 forms the schemas implement. Before any node is added, a
 * first pass collects every op without a schema, so that the error lists them all at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/train.h>

#include "../../error.h"
#include "../../ops/op_schema.h"
#include "onnx_importer.h"

void ses_onnx_options_init(ses_onnx_options_t *o) {
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->max_bytes = SES__ONNX_MAX_BYTES;
    o->max_elements = SES__ONNX_MAX_ELEMENTS;
    o->max_nodes = SES__ONNX_MAX_NODES;
    o->max_depth = SES__ONNX_MAX_DEPTH;
}

static ses_status_t const_i64(importer_t *im, const int64_t *v, size_t n, ses_edge_t *out_edge) {
    int64_t dims[1] = {(int64_t)n};
    ses_tensor_t *t;
    ses_status_t st = ses_tensor_create_from(SES_I64, 1, dims, v, n * sizeof *v, &t);
    return st != SES_OK ? st : ses__onnx_add_constant(im, NULL, t, out_edge);
}

static ses_status_t const_f32(importer_t *im, float v, ses_edge_t *out_edge) {
    ses_tensor_t *t;
    ses_status_t st = ses_tensor_create_from(SES_F32, 0, NULL, &v, sizeof v, &t);
    return st != SES_OK ? st : ses__onnx_add_constant(im, NULL, t, out_edge);
}

/* An empty f32 constant: an absent optional input in the middle of a node's inputs, for the
 * ops whose inference counts an empty input as absent (takes_empty_inputs). */
static ses_status_t const_empty(importer_t *im, ses_edge_t *out_edge) {
    const int64_t dims[1] = {0};
    ses_tensor_t *t;
    ses_status_t st = ses_tensor_create(SES_F32, 1, dims, &t);
    return st != SES_OK ? st : ses__onnx_add_constant(im, NULL, t, out_edge);
}

/* The ops whose optional inputs may be empty tensors (absent): an input left out before a given
 * one becomes an empty constant (Clip's min, Pad's constant_value, Resize's roi and scales, the
 * recurrent layers' and quantization ops' optional inputs). */
static int takes_empty_inputs(const char *op) {
    static const char *const ops[] = {"RNN",          "GRU",           "LSTM",
                                      "QuantizeLinear", "DequantizeLinear", "MatMulInteger",
                                      "ConvInteger",  "QLinearConv",   "Clip",
                                      "Pad",          "Resize"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(op, ops[i]))
            return 1;
    return 0;
}

/* ---- attributes --------------------------------------------------------------------------- */

/* A node's attributes converted, with the storage they point into. */
typedef struct attrs {
    ses_attr_t *list;
    size_t count;
    void **blocks; /* strings and arrays made here */
    size_t n_blocks;
} attrs_t;

static void attrs_clear(attrs_t *a) {
    for (size_t i = 0; i < a->n_blocks; i++)
        free(a->blocks[i]);
    free(a->blocks);
    free(a->list);
    memset(a, 0, sizeof *a);
}

static void *attrs_block(attrs_t *a, void *block) {
    if (block)
        a->blocks[a->n_blocks++] = block;
    return block;
}

static const Onnx__AttributeProto *attr_find(const Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
            return n->attribute[i];
    return NULL;
}

/* The attribute's type, inferred from the field set when an old writer left it out. */
static int attr_type(const Onnx__AttributeProto *a) {
    if (a->has_type)
        return (int)a->type;
    return a->has_f ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT
           : a->has_i ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT
           : a->has_s ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING
           : a->t     ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR
           : a->g     ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH
           : a->n_floats ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS
           : a->n_ints   ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
                         : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

/* Whether attribute @p name is handled by the op-set adaptation rather than passed on. */
static int consumed(const char *const *skip, const char *name) {
    for (; skip && *skip; skip++)
        if (!strcmp(*skip, name))
            return 1;
    return 0;
}

/*
 * Converts @p n's attributes, leaving out those named in @p skip (NULL-terminated). Tensor
 * attributes (only ConstantOfShape's value reaches here) become a float or int attribute of the
 * tensor's one element.
 */
static ses_status_t convert_attrs(importer_t *im, const Onnx__NodeProto *n, const char *label,
                                  const char *const *skip, attrs_t *out) {
    memset(out, 0, sizeof *out);
    /* Two slots per attribute: a tensor attribute may add its dtype (below). */
    out->list = ses__calloc(n->n_attribute * 2 + 1, sizeof *out->list);
    out->blocks = ses__calloc(n->n_attribute * 2 + 1, sizeof *out->blocks);
    if (!out->list || !out->blocks)
        return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        ses_attr_t *dst = &out->list[out->count];
        const char *name = a->name ? a->name : "";

        if (!*name)
            return ses__fail(SES_INVALID_ARGUMENT, "%s: attribute %zu has no name", label, i);
        if (consumed(skip, name))
            continue;
        if (a->ref_attr_name && *a->ref_attr_name)
            return ses__fail(SES_UNIMPLEMENTED, "%s: attribute %s refers to a function's (not "
                             "supported)", label, name);
        memset(dst, 0, sizeof *dst);
        dst->name = name;
        switch (attr_type(a)) {
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
            dst->type = SES_ATTR_FLOAT;
            dst->f = a->f;
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
            dst->type = SES_ATTR_INT;
            dst->i = a->i;
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
            char *s;
            if (a->s.len && memchr(a->s.data, 0, a->s.len))
                return ses__fail(SES_INVALID_ARGUMENT, "%s: string attribute %s holds a NUL byte",
                                 label, name);
            s = attrs_block(out, ses__malloc(a->s.len + 1));
            if (!s)
                return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
            if (a->s.len)
                memcpy(s, a->s.data, a->s.len);
            s[a->s.len] = '\0';
            dst->type = SES_ATTR_STRING;
            dst->s = s;
            break;
        }
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
            /* A list of strings (RNN's activations) becomes one string, joined by commas. */
            size_t len = 0, at = 0;
            char *s;
            for (size_t k = 0; k < a->n_strings; k++) {
                if (memchr(a->strings[k].data, ',', a->strings[k].len) ||
                    (a->strings[k].len && memchr(a->strings[k].data, 0, a->strings[k].len)))
                    return ses__fail(SES_UNIMPLEMENTED,
                                     "%s: string list attribute %s holds a comma or NUL byte "
                                     "(not supported)",
                                     label, name);
                len += a->strings[k].len + 1;
            }
            s = attrs_block(out, ses__malloc(len + 1));
            if (!s)
                return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
            for (size_t k = 0; k < a->n_strings; k++) {
                if (k)
                    s[at++] = ',';
                if (a->strings[k].len)
                    memcpy(s + at, a->strings[k].data, a->strings[k].len);
                at += a->strings[k].len;
            }
            s[at] = '\0';
            dst->type = SES_ATTR_STRING;
            dst->s = s;
            break;
        }
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
            dst->type = SES_ATTR_INTS;
            dst->ints = a->ints;
            dst->count = a->n_ints;
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
            double *d = attrs_block(out, ses__malloc((a->n_floats + 1) * sizeof *d));
            if (!d)
                return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
            for (size_t k = 0; k < a->n_floats; k++)
                d[k] = a->floats[k];
            dst->type = SES_ATTR_FLOATS;
            dst->floats = d;
            dst->count = a->n_floats;
            break;
        }
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
            ses_tensor_t *t;
            char what[700];
            ses_status_t st;
            snprintf(what, sizeof what, "%s: attribute %s", label, name);
            st = ses__onnx_tensor(a->t, im->o.max_elements, what, &t);
            if (st != SES_OK)
                return st;
            if (ses_tensor_count(t) != 1) {
                ses_tensor_release(t);
                return ses__fail(SES_UNIMPLEMENTED, "%s: tensor attribute %s has %zu elements; "
                                 "only one-element tensors are supported", label, name,
                                 ses_tensor_count(t));
            }
            /* A float value means f32 and an int value i64 (ConstantOfShape's convention);
             * other dtypes say so with an int attribute "dtype" (a ses_dtype_t). */
            if (ses_tensor_dtype(t) == SES_F32 || ses_tensor_dtype(t) == SES_F64) {
                dst->type = SES_ATTR_FLOAT;
                dst->f = ses_tensor_dtype(t) == SES_F32 ? *(const float *)ses_tensor_data(t)
                                                        : *(const double *)ses_tensor_data(t);
            } else if (ses_tensor_dtype(t) == SES_I64) {
                dst->type = SES_ATTR_INT;
                dst->i = *(const int64_t *)ses_tensor_data(t);
            } else if (ses_tensor_dtype(t) == SES_I32 || ses_tensor_dtype(t) == SES_BOOL) {
                dst->type = SES_ATTR_INT;
                dst->i = ses_tensor_dtype(t) == SES_I32 ? *(const int32_t *)ses_tensor_data(t)
                                                        : *(const uint8_t *)ses_tensor_data(t);
            } else {
                ses_dtype_t dt = ses_tensor_dtype(t);
                ses_tensor_release(t);
                return ses__fail(SES_UNIMPLEMENTED, "%s: tensor attribute %s of %s is not "
                                 "supported (f32, i32 and i64 are)", label, name,
                                 ses_dtype_name(dt));
            }
            if (ses_tensor_dtype(t) != SES_F32 && ses_tensor_dtype(t) != SES_I64)
                out->list[out->count + 1] = ses_attr_int("dtype", ses_tensor_dtype(t));
            ses_tensor_release(t);
            if (out->list[out->count + 1].name) /* the value, then its dtype */
                out->count++;
            break;
        }
        default:
            return ses__fail(SES_UNIMPLEMENTED,
                             "%s: attribute %s is a graph, sparse tensor, type or list of "
                             "strings/tensors (not supported)",
                             label, name);
        }
        out->count++;
    }
    return SES_OK;
}

/* ---- op-set adaptations ------------------------------------------------------------------- */

/* The node being built: inputs as edges, attributes to drop, its output edges. */
typedef struct pending {
    const char *op;
    ses_edge_t inputs[SES__MAX_INPUTS];
    size_t n_inputs;
    const char *skip[8]; /* NULL-terminated: at most 3 (op sets before 7) + 3 (Slice before 10) */
    size_t n_skip;
} pending_t;

/* Appends attribute @p name's ints as a constant i64 input (the op-set 13 form), if present. */
static ses_status_t ints_attr_to_input(importer_t *im, const Onnx__NodeProto *n, pending_t *p,
                                       const char *name) {
    const Onnx__AttributeProto *a = attr_find(n, name);
    ses_status_t st;

    p->skip[p->n_skip++] = name;
    if (!a)
        return SES_OK;
    if (p->n_inputs >= SES__MAX_INPUTS)
        return ses__fail(SES_INVALID_ARGUMENT, "too many inputs");
    st = const_i64(im, a->ints, a->n_ints, &p->inputs[p->n_inputs]);
    if (st == SES_OK)
        p->n_inputs++;
    return st;
}

/* Turns constant input @p index into an ints attribute @p name (op set 18 axes inputs). */
static ses_status_t input_to_ints_attr(importer_t *im, const Onnx__NodeProto *n, size_t index,
                                       const char *label, attrs_t *attrs) {
    const value_t *v;
    const ses_tensor_t *t;
    int64_t *ints;

    (void)im;
    if (index >= n->n_input || !*n->input[index])
        return SES_OK;
    v = ses__onnx_find(im, n->input[index]);
    t = v ? v->constant : NULL;
    if (!t || ses_tensor_dtype(t) != SES_I64 || ses_tensor_rank(t) > 1)
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: input %zu (axes) must be a constant i64 vector for this op", label,
                         index);
    ints = attrs_block(attrs, ses__malloc((ses_tensor_count(t) + 1) * sizeof *ints));
    if (!ints)
        return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
    memcpy(ints, ses_tensor_data((ses_tensor_t *)t), ses_tensor_count(t) * sizeof *ints);
    attrs->list[attrs->count++] = ses_attr_ints("axes", ints, ses_tensor_count(t));
    return SES_OK;
}

/* ---- g-convfam: the broadcasting of op sets before 7 ------------------------------------- */

/* The rank of value @p name: known for graph inputs and constants, else from the graph's
 * value_info or outputs when they give a shape; -1 when nothing says. */
static int value_rank(const importer_t *im, const char *name) {
    const value_t *v = ses__onnx_find((importer_t *)im, name);
    const Onnx__GraphProto *g = im->graph;

    if (v && v->rank >= 0)
        return v->rank;
    for (size_t k = 0; g && k < g->n_value_info + g->n_output; k++) {
        const Onnx__ValueInfoProto *vi =
            k < g->n_value_info ? g->value_info[k] : g->output[k - g->n_value_info];
        if (vi && vi->name && !strcmp(vi->name, name) && vi->type &&
            vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && vi->type->tensor_type &&
            vi->type->tensor_type->shape)
            return (int)vi->type->tensor_type->shape->n_dim;
    }
    return -1;
}

/* Unsqueezes input @p index of @p p at the axes [first, first + count) (count may be 0). */
static ses_status_t unsqueeze_input(importer_t *im, pending_t *p, size_t index, int64_t first,
                                    int64_t count) {
    int64_t axes[SES_MAX_RANK];
    ses_edge_t in[2];
    ses_status_t st;

    if (count <= 0)
        return SES_OK;
    for (int64_t k = 0; k < count && k < SES_MAX_RANK; k++)
        axes[k] = first + k;
    in[0] = p->inputs[index];
    st = const_i64(im, axes, (size_t)(count < SES_MAX_RANK ? count : SES_MAX_RANK), &in[1]);
    if (st == SES_OK)
        st = ses_graph_op(im->m->graph, "Unsqueeze", NULL, in, 2, NULL, 0, &p->inputs[index]);
    return st;
}

/*
 * Before op set 7, Add, Sub, Mul, Div (and Gemm's C) broadcast B onto A only when broadcast is 1,
 * with B's dims matching A's from `axis` on (A's trailing dims when axis is absent, numpy's
 * rule). B gets trailing 1s (an Unsqueeze) so that numpy's rule aligns it at axis; Gemm's C
 * needs nothing (op set 7 broadcasts it the same way). Needs A's and B's ranks.
 */
static ses_status_t old_broadcast(importer_t *im, const Onnx__NodeProto *n, const char *label,
                                  pending_t *p) {
    const Onnx__AttributeProto *axis = attr_find(n, "axis");
    static const char *const ops[] = {"Add", "Sub", "Mul",   "Div",     "Pow", "And",
                                      "Or",  "Xor", "Equal", "Greater", "Less"};
    int binary = 0, ra, rb;
    int64_t a;

    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        binary |= !strcmp(n->op_type, ops[k]);
    if (!binary && strcmp(n->op_type, "Gemm"))
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: the broadcast attribute of op sets before 7 is not supported on "
                         "this op",
                         label);
    p->skip[p->n_skip++] = "axis";
    if (!binary || !axis || p->n_inputs != 2)
        return SES_OK;
    ra = value_rank(im, n->input[0]);
    rb = value_rank(im, n->input[1]);
    if (ra < 0 || rb < 0)
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: broadcast with axis (op sets before 7) needs the ranks of both "
                         "inputs, and the model does not give the rank of %s",
                         label, ra < 0 ? n->input[0] : n->input[1]);
    a = axis->i < 0 ? axis->i + ra : axis->i;
    if (a < 0 || a + rb > ra)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: axis %lld does not place B (rank %d) inside A (rank %d)", label,
                         (long long)axis->i, rb, ra);
    return unsqueeze_input(im, p, 1, rb, ra - a - rb);
}

/*
 * PRelu before op set 7 takes a slope of X's channels ([C] against X [N, C, ...]): it becomes
 * [C, 1, ...] so that numpy's rule broadcasts it along axis 1.
 */
static ses_status_t old_prelu(importer_t *im, const Onnx__NodeProto *n, pending_t *p) {
    const value_t *slope = p->n_inputs == 2 ? ses__onnx_find(im, n->input[1]) : NULL;
    const int rx = p->n_inputs == 2 ? value_rank(im, n->input[0]) : -1;

    if (!slope || !slope->constant || ses_tensor_rank(slope->constant) != 1 ||
        ses_tensor_dims(slope->constant)[0] == 1 || rx < 3)
        return SES_OK;
    return unsqueeze_input(im, p, 1, 1, rx - 2);
}

/* ---- nodes -------------------------------------------------------------------------------- */

static const char *node_label(const Onnx__NodeProto *n, size_t index, char *buf, size_t size) {
    snprintf(buf, size, "node %zu (%s%s%s%s)", index, n->op_type ? n->op_type : "?",
             n->name && *n->name ? " \"" : "", n->name && *n->name ? n->name : "",
             n->name && *n->name ? "\"" : "");
    return buf;
}

static int is_default_domain(const char *domain) {
    return !domain || !*domain || !strcmp(domain, "ai.onnx");
}

/* A Constant node: its value becomes a constant edge. */
static ses_status_t import_constant(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    const Onnx__AttributeProto *a;
    ses_tensor_t *t = NULL;
    ses_edge_t edge;
    ses_status_t st;

    if (n->n_output != 1 || !*n->output[0])
        return ses__fail(SES_INVALID_ARGUMENT, "%s: Constant must have one output", label);
    if ((a = attr_find(n, "value")) && a->t) {
        st = ses__onnx_tensor(a->t, im->o.max_elements, label, &t);
    } else if ((a = attr_find(n, "value_float"))) {
        st = ses_tensor_create_from(SES_F32, 0, NULL, &a->f, sizeof a->f, &t);
    } else if ((a = attr_find(n, "value_int"))) {
        st = ses_tensor_create_from(SES_I64, 0, NULL, &a->i, sizeof a->i, &t);
    } else if ((a = attr_find(n, "value_floats"))) {
        int64_t dims[1] = {(int64_t)a->n_floats};
        st = ses_tensor_create_from(SES_F32, 1, dims, a->floats, a->n_floats * sizeof(float), &t);
    } else if ((a = attr_find(n, "value_ints"))) {
        int64_t dims[1] = {(int64_t)a->n_ints};
        st = ses_tensor_create_from(SES_I64, 1, dims, a->ints, a->n_ints * sizeof(int64_t), &t);
    } else {
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: Constant without value, value_float(s) or value_int(s) (sparse and "
                         "string values are not supported)",
                         label);
    }
    if (st != SES_OK)
        return st;
    st = ses__onnx_add_constant(im, n->output[0], t, &edge);
    return st != SES_OK ? st : ses__onnx_define(im, n->output[0], edge, t);
}

/*
 * Softmax and LogSoftmax before op set 13 coerce the input to 2-D at `axis` (default 1):
 * Flatten(axis), the op along the last axis, then back to the input's shape.
 */
static ses_status_t import_old_softmax(importer_t *im, const Onnx__NodeProto *n,
                                       const char *label, ses_edge_t x, ses_edge_t *out) {
    const Onnx__AttributeProto *a = attr_find(n, "axis");
    ses_attr_t axis = ses_attr_int("axis", a ? a->i : 1), last = ses_attr_int("axis", -1);
    ses_edge_t flat, soft, in[2];
    ses_status_t st;

    (void)label;
    st = ses_graph_op(im->m->graph, "Flatten", NULL, &x, 1, &axis, 1, &flat);
    if (st == SES_OK)
        st = ses_graph_op(im->m->graph, n->op_type, NULL, &flat, 1, &last, 1, &soft);
    in[0] = soft;
    in[1] = x;
    if (st == SES_OK)
        st = ses_graph_op(im->m->graph, "ReshapeLike", n->name && *n->name ? n->name : NULL, in, 2,
                          NULL, 0, out);
    return st;
}

/* The Reduce ops whose schemas take axes as an attribute (their opset-13 form): at opset 18
 * the axes became an input, turned back into the attribute here. */
static int is_reduce_with_axes_attribute(const char *op) {
    static const char *const ops[] = {"ReduceMean",   "ReduceMax",       "ReduceMin",
                                      "ReduceProd",   "ReduceL1",        "ReduceL2",
                                      "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(op, ops[i]))
            return 1;
    return 0;
}

/*
 * Gradient (ai.onnx.preview.training): the gradients of y with respect to each of xs, built by
 * libsession's reverse-mode differentiation (ses_gradients, y seeded with ones) at import. The
 * node's inputs are xs again, as ONNX requires; its outputs the gradients in xs' order.
 */
static ses_status_t import_gradient(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    const Onnx__AttributeProto *xs = attr_find(n, "xs"), *y = attr_find(n, "y"),
                               *zs = attr_find(n, "zs");
    ses_edge_t x_edges[SES__MAX_INPUTS], dx[SES__MAX_INPUTS], y_edge;
    char name[300];
    const value_t *v;
    ses_status_t st;

    if (!xs || !xs->n_strings || !y || !y->has_s)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: needs the attributes xs (strings) and y (a string)", label);
    if (zs && zs->n_strings)
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: attribute zs (inputs held constant) is not supported", label);
    if (xs->n_strings > SES__MAX_INPUTS || n->n_output != xs->n_strings)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: %zu outputs for %zu xs; one gradient per x",
                         label, n->n_output, xs->n_strings);
    for (size_t i = 0; i < xs->n_strings; i++) {
        snprintf(name, sizeof name, "%.*s", (int)xs->strings[i].len,
                 (const char *)xs->strings[i].data);
        v = ses__onnx_find(im, name);
        if (!v || v->kind != SES__ONNX_TENSOR)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s: xs[%zu], \"%s\", is not a tensor defined before the node",
                             label, i, name);
        x_edges[i] = v->edge;
    }
    snprintf(name, sizeof name, "%.*s", (int)y->s.len, (const char *)y->s.data);
    v = ses__onnx_find(im, name);
    if (!v || v->kind != SES__ONNX_TENSOR)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: y, \"%s\", is not a tensor defined before the node", label,
                         name);
    y_edge = v->edge;
    st = ses_gradients(im->m->graph, n->name && *n->name ? n->name : NULL, &y_edge, 1, x_edges,
                       xs->n_strings, NULL, dx);
    if (st != SES_OK) {
        char message[1024];
        snprintf(message, sizeof message, "%s", ses_last_error());
        return ses__fail(st, "%s: %s", label, message);
    }
    for (size_t i = 0; i < xs->n_strings && st == SES_OK; i++) {
        if (!*n->output[i])
            continue;
        if (!dx[i].node)
            return ses__fail(SES_UNIMPLEMENTED,
                             "%s: y does not depend on xs[%zu] (a zero gradient is not made)",
                             label, i);
        st = ses__onnx_define(im, n->output[i], dx[i], NULL);
    }
    return st;
}

static ses_status_t import_node(importer_t *im, const Onnx__NodeProto *n, size_t index) {
    char label[300], prefixed[1024];
    const char *op = n->op_type;
    int64_t opset = im->m->opset;
    pending_t p;
    attrs_t attrs;
    ses_node_t *node = NULL;
    size_t n_outputs = 0;
    ses_status_t st;

    node_label(n, index, label, sizeof label);
    if (!is_default_domain(n->domain) && !strcmp(n->domain, "ai.onnx.preview.training") &&
        !strcmp(op, "Gradient"))
        return import_gradient(im, n, label);
    if (!is_default_domain(n->domain) && !strcmp(n->domain, "ai.onnx.preview.training") &&
        ses__onnx_is_optimizer_op(op))
        return ses__onnx_optimizer_node(im, n, label);
    if (!strcmp(op, "Constant"))
        return import_constant(im, n, label);
    if (is_default_domain(n->domain) && ses__onnx_is_control_op(op))
        return ses__onnx_control_node(im, n, label);
    if (ses__onnx_is_sequence_op(op))
        return ses__onnx_sequence_node(im, n, label);
    for (size_t i = 0; i < n->n_input; i++) {
        const value_t *v = *n->input[i] ? ses__onnx_find(im, n->input[i]) : NULL;
        if (!v || v->kind == SES__ONNX_TENSOR)
            continue;
        if (!strcmp(op, "Identity"))
            return ses__onnx_sequence_node(im, n, label);
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: input %zu, \"%s\", is %s; %s takes tensors here (sequences are "
                         "taken only by the sequence ops, optionals by the optional ops)",
                         label, i, n->input[i],
                         v->kind == SES__ONNX_SEQUENCE ? "a sequence" : "an empty optional", op);
    }
    memset(&p, 0, sizeof p);
    p.op = op;
    /* Inputs: "" is an absent optional input; only trailing ones can be left out here, and the
     * middle ones of the ops whose schemas take an empty tensor for an absent input (Clip's min,
     * Pad's constant_value): an empty constant stands in for them. */
    for (size_t i = 0; i < n->n_input; i++) {
        const value_t *v;
        /* STFT's window may be left out before frame_length, and DFT's dft_length (op set 20)
         * before axis: an empty constant stands for it, as an empty optional input does
         * everywhere in libsession. */
        if (!*n->input[i] && ((!strcmp(op, "STFT") && i == 2 && n->n_input == 4) ||
                              (!strcmp(op, "DFT") && i == 1 && n->n_input == 3)) &&
            p.n_inputs == i) {
            ses_tensor_t *empty = NULL;
            int64_t zero = 0;
            st = ses_tensor_create(i == 1 ? SES_I64 : SES_F32, 1, &zero, &empty);
            if (st == SES_OK)
                st = ses__onnx_add_constant(im, NULL, empty, &p.inputs[p.n_inputs]);
            if (st != SES_OK)
                return st;
            p.n_inputs++;
            continue;
        }
        if (!*n->input[i]) {
            size_t j = i;
            while (j < n->n_input && !*n->input[j])
                j++;
            if (j < n->n_input && takes_empty_inputs(op) && i < SES__MAX_INPUTS) {
                if ((st = const_empty(im, &p.inputs[p.n_inputs])) != SES_OK)
                    return st;
                p.n_inputs++;
                continue;
            }
            if (j < n->n_input)
                return ses__fail(SES_UNIMPLEMENTED,
                                 "%s: input %zu is left out but a later one is given (not "
                                 "supported)",
                                 label, i);
            break;
        }
        if (i >= SES__MAX_INPUTS)
            return ses__fail(SES_UNIMPLEMENTED, "%s: more than %d inputs", label,
                             SES__MAX_INPUTS);
        v = ses__onnx_find(im, n->input[i]);
        if (!v)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s: input %zu, \"%s\", is not defined before it (no initializer, "
                             "graph input or earlier node output of that name; a cycle?)",
                             label, i, n->input[i]);
        p.inputs[p.n_inputs++] = v->edge;
    }
    for (size_t i = 0; i < n->n_output; i++)
        if (*n->output[i])
            n_outputs = i + 1;
    if (!n_outputs)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: no outputs", label);

    /* Op-set adaptations to the op-set 13 forms. Before op set 7, binary ops broadcast only
     * when asked (`broadcast`, `axis`, a different rule) and many ops carry `consumed_inputs`
     * (no effect on results). */
    if (opset < 7) {
        const Onnx__AttributeProto *bc = attr_find(n, "broadcast");
        if (bc && bc->i && (st = old_broadcast(im, n, label, &p)) != SES_OK)
            return st;
        if (!strcmp(op, "PRelu") && (st = old_prelu(im, n, &p)) != SES_OK)
            return st;
        p.skip[p.n_skip++] = "consumed_inputs";
        p.skip[p.n_skip++] = "broadcast";
    }
    if ((!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax") || !strcmp(op, "Hardmax")) &&
        opset < 13) {
        ses_edge_t out;
        if (p.n_inputs != 1)
            return ses__fail(SES_INVALID_ARGUMENT, "%s: wants 1 input", label);
        st = import_old_softmax(im, n, label, p.inputs[0], &out);
        return st != SES_OK ? st : ses__onnx_define(im, n->output[0], out, NULL);
    }
    if (((!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze") || !strcmp(op, "ReduceSum")) &&
         opset < 13) ||
        (!strcmp(op, "Split") && opset < 13)) {
        st = ints_attr_to_input(im, n, &p, !strcmp(op, "Split") ? "split" : "axes");
        if (st != SES_OK)
            return st;
    }
    /* Scatter (op sets 9 and 10) is ScatterElements under its old name. */
    if (!strcmp(op, "Scatter"))
        op = "ScatterElements";
    if (!strcmp(op, "Slice") && opset < 10) {
        if ((st = ints_attr_to_input(im, n, &p, "starts")) != SES_OK ||
            (st = ints_attr_to_input(im, n, &p, "ends")) != SES_OK ||
            (st = ints_attr_to_input(im, n, &p, "axes")) != SES_OK)
            return st;
    }
    if (!strcmp(op, "Pad") && opset < 11) {
        /* Op sets 1 and 2 carry pads (op set 1: paddings) and value as attributes. */
        const Onnx__AttributeProto *value = attr_find(n, "value");
        const char *pads = attr_find(n, "paddings") ? "paddings" : "pads";
        if ((st = ints_attr_to_input(im, n, &p, pads)) != SES_OK)
            return st;
        p.skip[p.n_skip++] = "value";
        if (value && value->f != 0.0f &&
            (st = const_f32(im, value->f, &p.inputs[p.n_inputs++])) != SES_OK)
            return st;
    }
    /* Upsample (op sets 7 and 9) and Resize of op set 10 take X and scales; they are Resize
     * with an empty roi, asymmetric coordinates and nearest taking the floor. Op set 7 carries
     * the scales as an attribute. */
    int old_resize = !strcmp(op, "Upsample") || (!strcmp(op, "Resize") && opset < 11);
    if (old_resize) {
        const Onnx__AttributeProto *scales = attr_find(n, "scales");
        ses_edge_t x = p.inputs[0];
        if (p.n_inputs < 1)
            return ses__fail(SES_INVALID_ARGUMENT, "%s: input 0 (X) is required", label);
        p.skip[p.n_skip++] = "scales";
        if (scales) {
            int64_t dims[1] = {(int64_t)scales->n_floats};
            ses_tensor_t *t;
            st = ses_tensor_create_from(SES_F32, 1, dims, scales->floats,
                                        scales->n_floats * sizeof(float), &t);
            if (st == SES_OK)
                st = ses__onnx_add_constant(im, NULL, t, &p.inputs[1]);
            if (st != SES_OK)
                return st;
            p.n_inputs = 2;
        }
        if (p.n_inputs != 2)
            return ses__fail(SES_INVALID_ARGUMENT, "%s: wants X and scales", label);
        p.inputs[2] = p.inputs[1];
        if ((st = const_empty(im, &p.inputs[1])) != SES_OK)
            return st;
        p.inputs[0] = x;
        p.n_inputs = 3;
        op = "Resize";
    }
    if (!strcmp(op, "Clip") && opset < 11) {
        const Onnx__AttributeProto *lo = attr_find(n, "min"), *hi = attr_find(n, "max");
        p.skip[p.n_skip++] = "min";
        p.skip[p.n_skip++] = "max";
        if ((st = const_f32(im, lo ? lo->f : -3.402823466e38f, &p.inputs[p.n_inputs++])) !=
                SES_OK ||
            (st = const_f32(im, hi ? hi->f : 3.402823466e38f, &p.inputs[p.n_inputs++])) != SES_OK)
            return st;
    }
    st = convert_attrs(im, n, label, p.skip, &attrs);
    /* DFT of op set 20 takes its axis as input 2, -2 when left out (op set 17: an attribute,
     * 1 by default). The schema reads the input; the default is given here. */
    if (st == SES_OK && !strcmp(op, "DFT") && opset >= 20 && p.n_inputs < 3 &&
        !attr_find(n, "axis"))
        attrs.list[attrs.count++] = ses_attr_int("axis", -2);
    if (st == SES_OK && old_resize) {
        ses_attr_t *list = ses__realloc(attrs.list, (attrs.count + 2) * sizeof *list);
        if (!list) {
            st = ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        } else {
            attrs.list = list;
            /* Upsample of op set 1 named linear over two axes "bilinear". */
            for (size_t i = 0; i < attrs.count; i++)
                if (!strcmp(list[i].name, "mode") && list[i].type == SES_ATTR_STRING &&
                    (!strcmp(list[i].s, "bilinear") || !strcmp(list[i].s, "trilinear")))
                    list[i].s = "linear";
            list[attrs.count++] = ses_attr_string("coordinate_transformation_mode", "asymmetric");
            list[attrs.count++] = ses_attr_string("nearest_mode", "floor");
        }
    }
    if (st == SES_OK && is_reduce_with_axes_attribute(op) && opset >= 18) {
        st = input_to_ints_attr(im, n, 1, label, &attrs);
        if (p.n_inputs > 1)
            p.n_inputs = 1;
    }
    /* In a control-flow body, the node's name is prefixed with the body's place. */
    snprintf(prefixed, sizeof prefixed, "%s%s%s", im->prefix, *im->prefix ? "/" : "",
             n->name && *n->name ? n->name : "");
    if (st == SES_OK)
        st = ses_graph_add_node(im->m->graph, op,
                                n->name && *n->name ? (*im->prefix ? prefixed : n->name) : NULL,
                                p.inputs, p.n_inputs, attrs.list, attrs.count, n_outputs, &node);
    if (st == SES_INVALID_ARGUMENT && n->name && *n->name && !node &&
        strstr(ses_last_error(), "already")) /* a name a value already took: let it pick one */
        st = ses_graph_add_node(im->m->graph, op, NULL, p.inputs, p.n_inputs, attrs.list,
                                attrs.count, n_outputs, &node);
    attrs_clear(&attrs);
    if (st != SES_OK) {
        char message[1024];
        snprintf(message, sizeof message, "%s", ses_last_error());
        return ses__fail(st, "%s: %s", label, message);
    }
    for (size_t i = 0; i < n_outputs && st == SES_OK; i++)
        if (*n->output[i])
            st = ses__onnx_define(im, n->output[i], ses_node_output(node, (uint32_t)i), NULL);
    return st;
}

/* ---- the model ---------------------------------------------------------------------------- */

/* Collects @p g's nodes and, going into the bodies of If, Loop and Scan, theirs into @p list
 * (grown as needed), at most @p limit of them. */
static ses_status_t collect_nodes(const Onnx__GraphProto *g, const Onnx__NodeProto ***list,
                                  size_t *count, size_t *capacity, size_t limit, unsigned depth) {
    if (depth > 32)
        return ses__fail(SES_UNIMPLEMENTED, "control-flow bodies nest more than 32 deep");
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (*count >= limit)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "the graph and its bodies have more than %zu nodes (the limit)",
                             limit);
        if (*count == *capacity) {
            size_t grown_capacity = *capacity ? *capacity * 2 : 64;
            const Onnx__NodeProto **grown = ses__realloc(*list, grown_capacity * sizeof *grown);
            if (!grown)
                return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
            *list = grown;
            *capacity = grown_capacity;
        }
        (*list)[(*count)++] = n;
        if (!is_default_domain(n->domain) || !n->op_type || !ses__onnx_is_control_op(n->op_type))
            continue;
        for (size_t k = 0; k < n->n_attribute; k++) {
            ses_status_t st;
            if (!n->attribute[k]->g)
                continue;
            st = collect_nodes(n->attribute[k]->g, list, count, capacity, limit, depth + 1);
            if (st != SES_OK)
                return st;
        }
    }
    return SES_OK;
}

/* Lists every op without a schema (or of another domain) in one message, the bodies' too. */
static ses_status_t check_ops(importer_t *im, const Onnx__GraphProto *g) {
    char list[2048] = "";
    size_t used = 0, missing = 0, n_nodes = 0, capacity = 0;
    const Onnx__NodeProto **nodes = NULL;
    ses_status_t st = collect_nodes(g, &nodes, &n_nodes, &capacity, im->o.max_nodes, 0);

    if (st != SES_OK) {
        free(nodes);
        return st;
    }
    for (size_t i = 0; i < n_nodes; i++) {
        const Onnx__NodeProto *n = nodes[i];
        const char *op = n->op_type ? n->op_type : "";
        int known =
            (is_default_domain(n->domain) &&
             (!strcmp(op, "Constant") || !strcmp(op, "Scatter") || !strcmp(op, "Upsample") ||
              ses__onnx_is_sequence_op(op) || ses__onnx_is_control_op(op) ||
              (*op && ses__op_schema_find(op) && !ses__op_schema_find(op)->host_op &&
               strcmp(op, "SelectInput") != 0))) ||
            (n->domain && !strcmp(n->domain, "ai.onnx.preview.training") &&
             (!strcmp(op, "Gradient") || ses__onnx_is_optimizer_op(op)));
        int listed = 0;
        if (known)
            continue;
        for (size_t j = 0; j < i && !listed; j++) /* each op once */
            listed = !strcmp(nodes[j]->op_type ? nodes[j]->op_type : "", op) &&
                     !strcmp(nodes[j]->domain ? nodes[j]->domain : "", n->domain ? n->domain : "");
        if (listed)
            continue;
        missing++;
        if (used < sizeof list - 100)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s%s%s (opset %lld)",
                                     missing > 1 ? ", " : "", *op ? op : "(empty op_type)",
                                     is_default_domain(n->domain) ? "" : " of domain ",
                                     is_default_domain(n->domain) ? "" : n->domain,
                                     (long long)im->m->opset);
    }
    free(nodes);
    if (missing)
        return ses__fail(SES_UNIMPLEMENTED, "the model uses %zu op%s libsession does not have: %s",
                         missing, missing == 1 ? "" : "s", list);
    return SES_OK;
}

/* A graph input's placeholder: dtype and shape from its type (unknown dims are -1). */
static ses_status_t import_input(importer_t *im, const Onnx__ValueInfoProto *vi, size_t index) {
    const Onnx__TypeProto *type = vi->type;
    const Onnx__TypeProto__Tensor *tt;
    int64_t dims[SES_MAX_RANK];
    ses_dtype_t dtype;
    size_t rank;
    ses_edge_t edge;
    ses_status_t st;

    if (!vi->name || !*vi->name)
        return ses__fail(SES_INVALID_ARGUMENT, "graph input %zu has no name", index);
    if (!type || type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !type->tensor_type)
        return ses__fail(SES_UNIMPLEMENTED, "graph input \"%s\" is not a tensor (sequences, maps "
                         "and optionals are not supported)", vi->name);
    tt = type->tensor_type;
    dtype = ses__onnx_dtype(tt->has_elem_type ? tt->elem_type : 0);
    if (dtype == SES_DTYPE_INVALID)
        return ses__fail(SES_UNIMPLEMENTED, "graph input \"%s\": element type %s is not supported",
                         vi->name, ses__onnx_dtype_name(tt->has_elem_type ? tt->elem_type : 0));
    if (!tt->shape)
        return ses__fail(SES_UNIMPLEMENTED, "graph input \"%s\" has no shape (its rank must be "
                         "known)", vi->name);
    rank = tt->shape->n_dim;
    if (rank > SES_MAX_RANK)
        return ses__fail(SES_UNIMPLEMENTED, "graph input \"%s\": rank %zu; the most is %d",
                         vi->name, rank, SES_MAX_RANK);
    for (size_t d = 0; d < rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        dims[d] = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                          dim->dim_value >= 0
                      ? dim->dim_value
                      : -1;
    }
    st = ses_graph_placeholder(im->m->graph, vi->name, dtype, rank, dims, &edge);
    if (st == SES_INVALID_ARGUMENT)
        st = ses_graph_placeholder(im->m->graph, NULL, dtype, rank, dims, &edge);
    if (st == SES_OK)
        st = ses__onnx_define(im, vi->name, edge, NULL);
    if (st == SES_OK) {
        size_t k = im->m->n_inputs++;
        value_t *v = ses__onnx_find(im, vi->name);
        v->dtype = dtype;
        v->rank = (int)rank;
        memcpy(v->dims, dims, rank * sizeof *dims);
        im->m->input_dtypes[k] = dtype;
        im->m->inputs[k] = edge;
        im->m->input_names[k] = ses__strdup(vi->name);
        if (!im->m->input_names[k])
            st = ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
    }
    return st;
}

static ses_status_t import_initializer(importer_t *im, Onnx__TensorProto *tp, size_t i) {
    char what[300];
    ses_tensor_t *t;
    ses_edge_t edge;
    ses_status_t st;

    if (!tp->name || !*tp->name)
        return ses__fail(SES_INVALID_ARGUMENT, "initializer %zu has no name", i);
    snprintf(what, sizeof what, "initializer \"%s\"", tp->name);
    st = ses__onnx_tensor(tp, im->o.max_elements, what, &t);
    if (st != SES_OK)
        return st;
    /* The tensor has the bytes now: the message's copy goes at once, so that the weights are
     * held twice only one initializer at a time (protobuf-c's default allocator is malloc). */
    if (tp->has_raw_data) {
        free(tp->raw_data.data);
        tp->raw_data.data = NULL;
        tp->raw_data.len = 0;
        tp->has_raw_data = 0;
    }
    if (!im->o.initializers_as_variables) {
        st = ses__onnx_add_constant(im, tp->name, t, &edge);
        return st != SES_OK ? st : ses__onnx_define(im, tp->name, edge, t);
    }
    st = ses__onnx_add_constant(im, NULL, t, &edge);
    if (st == SES_OK)
        st = ses_graph_variable(im->m->graph, tp->name, edge, &edge);
    return st != SES_OK ? st : ses__onnx_define(im, tp->name, edge, NULL);
}

static ses_status_t import_graph(importer_t *im, const Onnx__ModelProto *model) {
    const Onnx__GraphProto *g = model->graph;
    ses_status_t st;

    if (!g)
        return ses__fail(SES_INVALID_ARGUMENT, "the model has no graph");
    if (g->n_node > im->o.max_nodes)
        return ses__fail(SES_INVALID_ARGUMENT, "the graph has %zu nodes; the limit is %u",
                         g->n_node, im->o.max_nodes);
    if (g->n_sparse_initializer)
        return ses__fail(SES_UNIMPLEMENTED, "sparse initializers are not supported");
    if ((st = check_ops(im, g)) != SES_OK)
        return st;
    im->graph = g;
    im->m->inputs = ses__calloc(g->n_input + 1, sizeof *im->m->inputs);
    im->m->input_names = ses__calloc(g->n_input + 1, sizeof *im->m->input_names);
    im->m->outputs = ses__calloc(g->n_output + 1, sizeof *im->m->outputs);
    im->m->output_names = ses__calloc(g->n_output + 1, sizeof *im->m->output_names);
    im->m->input_dtypes = ses__calloc(g->n_input + 1, sizeof *im->m->input_dtypes);
    if (!im->m->inputs || !im->m->input_names || !im->m->outputs || !im->m->output_names ||
        !im->m->input_dtypes)
        return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
    for (size_t i = 0; i < g->n_initializer; i++)
        if ((st = import_initializer(im, g->initializer[i], i)) != SES_OK)
            return st;
    /* Inputs that are also initializers (IR < 4 lists them) keep the initializer's value. */
    for (size_t i = 0; i < g->n_input; i++)
        if (!(g->input[i]->name && ses__onnx_find(im, g->input[i]->name)) &&
            (st = import_input(im, g->input[i], i)) != SES_OK)
            return st;
    for (size_t i = 0; i < g->n_node; i++)
        if ((st = import_node(im, g->node[i], i)) != SES_OK)
            return st;
    for (size_t i = 0; i < g->n_output; i++) {
        const char *name = g->output[i]->name;
        const value_t *v = name ? ses__onnx_find(im, name) : NULL;
        if (!v)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "graph output %zu, \"%s\", is not produced by any node, input or "
                             "initializer",
                             i, name ? name : "");
        if (v->kind != SES__ONNX_TENSOR)
            return ses__fail(SES_UNIMPLEMENTED,
                             "graph output %zu, \"%s\", is %s; only tensors can be fetched "
                             "(a sequence or an optional lives inside the import, resolved into "
                             "its tensors)",
                             i, name, v->kind == SES__ONNX_SEQUENCE ? "a sequence" : "an optional");
        im->m->outputs[i] = v->edge;
        im->m->output_names[i] = ses__strdup(name);
        if (!im->m->output_names[i])
            return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        im->m->n_outputs++;
    }
    return SES_OK;
}

/*
 * protobuf-c copies each initializer's raw_data out of the file's bytes. When those bytes are a
 * mapped file, this allocator gives back the file's pages before each large copy: protobuf-c
 * unpacks fields in file order, so everything before the raw_data it is about to copy (found by
 * ses__onnx_raw_spans, matched by length) has been read. The file and the unpacked weights are
 * then never both held whole. A wrong guess costs only a page read again from the cache.
 */
#define DROP_MIN_BYTES ((size_t)1 << 20)
#define DROP_MAX_SPANS 4096

typedef struct dropper {
    uint8_t *file;
    size_t size, n_spans, next;
    ses__onnx_span_t spans[DROP_MAX_SPANS];
} dropper_t;

static void *drop_alloc(void *ctx, size_t size) {
    dropper_t *d = ctx;
    if (size >= DROP_MIN_BYTES)
        for (size_t k = d->next; k < d->n_spans; k++)
            if (d->spans[k].len == size) {
                ses__onnx_drop_file(d->file, d->size, d->spans[k].offset);
                d->next = k + 1;
                break;
            }
    return malloc(size);
}

static void drop_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}

static ses_status_t import_bytes(const void *data, size_t size, const ses_onnx_options_t *options,
                                 uint8_t *mapped, ses_onnx_model_t **out_model);

ses_status_t ses_onnx_import(const void *data, size_t size, const ses_onnx_options_t *options,
                             ses_onnx_model_t **out_model) {
    return import_bytes(data, size, options, NULL, out_model);
}

/* ses_onnx_import; @p mapped: @p data is a file mapped by ses__onnx_read_file, whose pages may
 * be given back as they are read. */
static ses_status_t import_bytes(const void *data, size_t size, const ses_onnx_options_t *options,
                                 uint8_t *mapped, ses_onnx_model_t **out_model) {
    importer_t im;
    Onnx__ModelProto *model = NULL;
    ses_status_t st;

    if (!out_model)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_onnx_import: out_model is NULL");
    *out_model = NULL;
    if (!data && size)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_onnx_import: data is NULL");
    memset(&im, 0, sizeof im);
    im.import_node = import_node;
    ses_onnx_options_init(&im.o);
    if (options) {
        if (options->struct_size < sizeof(uint32_t))
            return ses__fail(SES_INVALID_ARGUMENT, "ses_onnx_import: options.struct_size is 0; "
                             "call ses_onnx_options_init first");
        memcpy(&im.o, options,
               options->struct_size < sizeof im.o ? options->struct_size : sizeof im.o);
        im.o.struct_size = sizeof im.o;
    }
    if (!im.o.max_depth || !im.o.max_nodes || !im.o.max_elements || !im.o.max_bytes)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_onnx_import: a limit in the options is 0");
    if (size > im.o.max_bytes)
        return ses__fail(SES_INVALID_ARGUMENT, "model: %zu bytes, more than the limit of %llu",
                         size, (unsigned long long)im.o.max_bytes);
    if (!size)
        return ses__fail(SES_INVALID_ARGUMENT, "model: the file is empty");
    if ((st = ses__onnx_check_wire(data, size, im.o.max_depth, "model")) != SES_OK)
        return st;
    if (mapped) {
        dropper_t *d = ses__calloc(1, sizeof *d);
        ProtobufCAllocator allocator = {drop_alloc, drop_free, d};
        if (!d)
            return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        d->file = mapped;
        d->size = size;
        d->n_spans = ses__onnx_raw_spans(mapped, size, DROP_MIN_BYTES, d->spans, DROP_MAX_SPANS);
        model = onnx__model_proto__unpack(&allocator, size, data);
        /* Everything is unpacked (or failed): the file's pages all go back. */
        ses__onnx_drop_file(mapped, size, size);
        free(d);
    } else {
        model = onnx__model_proto__unpack(NULL, size, data);
    }
    if (!model)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "model: not a valid ONNX ModelProto (protobuf decoding failed)");
    im.m = ses__calloc(1, sizeof *im.m);
    if (!im.m) {
        onnx__model_proto__free_unpacked(model, NULL);
        return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
    }
    im.m->opset = -1;
    for (size_t i = 0; i < model->n_opset_import; i++)
        if (is_default_domain(model->opset_import[i]->domain) &&
            model->opset_import[i]->has_version &&
            model->opset_import[i]->version > im.m->opset)
            im.m->opset = model->opset_import[i]->version;
    /* A model of ai.onnx.preview.training's ops alone (the optimizers) uses no op of the default
     * domain: any op set will do for it. */
    for (size_t i = 0; i < model->n_opset_import && im.m->opset < 1; i++)
        if (model->opset_import[i]->domain &&
            !strcmp(model->opset_import[i]->domain, "ai.onnx.preview.training"))
            im.m->opset = 1;
    if (im.m->opset < 1 && model->n_opset_import)
        st = ses__fail(SES_UNIMPLEMENTED,
                       "model: it imports only other domains than ONNX's (%s...), which "
                       "libsession does not have",
                       model->opset_import[0]->domain ? model->opset_import[0]->domain : "");
    else if (im.m->opset < 1)
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "model: no opset_import for the default ONNX domain");
    else
        st = ses_graph_create(&im.m->graph);
    if (st == SES_OK)
        st = import_graph(&im, model);
    onnx__model_proto__free_unpacked(model, NULL);
    ses__onnx_importer_clear(&im);
    if (st != SES_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ses_last_error());
        ses_onnx_model_destroy(im.m);
        return ses__fail(st, "onnx: %s", message);
    }
    *out_model = im.m;
    return SES_OK;
}

ses_status_t ses_onnx_import_file(const char *path, const ses_onnx_options_t *options,
                                  ses_onnx_model_t **out_model) {
    uint8_t *data;
    size_t size;
    uint64_t max = options && options->struct_size >= offsetof(ses_onnx_options_t, max_bytes) +
                                                          sizeof options->max_bytes &&
                           options->max_bytes
                       ? options->max_bytes
                       : SES__ONNX_MAX_BYTES;
    ses_status_t st;

    if (!out_model || !path)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_onnx_import_file: NULL %s",
                         !path ? "path" : "out_model");
    *out_model = NULL;
    if ((st = ses__onnx_read_file(path, max, &data, &size)) != SES_OK)
        return st;
    st = import_bytes(data, size, options, data, out_model);
    ses__onnx_free_file(data, size);
    if (st != SES_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ses_last_error());
        return ses__fail(st, "%s: %s", path, message);
    }
    return SES_OK;
}

void ses_onnx_model_destroy(ses_onnx_model_t *m) {
    if (!m)
        return;
    for (size_t i = 0; i < m->n_inputs; i++)
        free(m->input_names[i]);
    for (size_t i = 0; i < m->n_outputs; i++)
        free(m->output_names[i]);
    free(m->input_names);
    free(m->output_names);
    free(m->inputs);
    free(m->outputs);
    free(m->input_dtypes);
    ses_graph_release(m->graph);
    free(m);
}

ses_graph_t *ses_onnx_model_graph(const ses_onnx_model_t *m) {
    return m ? m->graph : NULL;
}

int64_t ses_onnx_model_opset(const ses_onnx_model_t *m) {
    return m ? m->opset : -1;
}

size_t ses_onnx_model_input_count(const ses_onnx_model_t *m) {
    return m ? m->n_inputs : 0;
}

const char *ses_onnx_model_input_name(const ses_onnx_model_t *m, size_t i) {
    return m && i < m->n_inputs ? m->input_names[i] : NULL;
}

ses_dtype_t ses_onnx_model_input_dtype(const ses_onnx_model_t *m, size_t i) {
    return m && i < m->n_inputs ? m->input_dtypes[i] : SES_DTYPE_INVALID;
}

ses_edge_t ses_onnx_model_input(const ses_onnx_model_t *m, size_t i) {
    ses_edge_t none = {NULL, 0};
    return m && i < m->n_inputs ? m->inputs[i] : none;
}

size_t ses_onnx_model_output_count(const ses_onnx_model_t *m) {
    return m ? m->n_outputs : 0;
}

const char *ses_onnx_model_output_name(const ses_onnx_model_t *m, size_t i) {
    return m && i < m->n_outputs ? m->output_names[i] : NULL;
}

ses_edge_t ses_onnx_model_output(const ses_onnx_model_t *m, size_t i) {
    ses_edge_t none = {NULL, 0};
    return m && i < m->n_outputs ? m->outputs[i] : none;
}
