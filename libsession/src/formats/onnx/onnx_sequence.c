/*
 * ONNX sequences and optionals, resolved at import into plain tensor edges (DESIGN in README.md,
 * "ONNX sequences, optionals and strings").
 *
 * A sequence is the list of its elements' edges; its length is known here, since every op that
 * makes one fixes how many elements it has (SequenceConstruct: its inputs; SequenceInsert: one
 * more; SplitToSequence: the split's length or the input's static dimension). A position known
 * here (a constant, or left out) picks the element directly. A position known only when the plan
 * is compiled (a fed value) makes a SelectInput node per element it decides, over the elements
 * it may be; inference, which reads the fed value, lowers each to an Identity of the right one
 * (and a new value compiles the plan again). A position computed by the graph cannot be read
 * then, and compiling says so naming the node. Drivers never see a sequence.
 *
 * An optional holds a value or nothing; which is known here (Optional with or without an input),
 * so OptionalHasElement is a constant and OptionalGetElement the value itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "../../ops/infer.h"
#include "onnx_importer.h"

/* The most elements SplitToSequence makes: each is a Slice node of its own. */
#define SEQUENCE_MAX 4096
/* The most elements of all sequence values of a model together. */
#define SEQUENCE_TOTAL_MAX (1 << 22)

int ses__onnx_is_sequence_op(const char *op) {
    static const char *const ops[] = {
        "SequenceEmpty", "SequenceConstruct",  "SequenceInsert",     "SequenceErase",
        "SequenceAt",    "SequenceLength",     "ConcatFromSequence", "SplitToSequence",
        "Optional",      "OptionalHasElement", "OptionalGetElement",
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(op, ops[i]))
            return 1;
    return 0;
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
            return n->attribute[i];
    return NULL;
}

static int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t fallback) {
    const Onnx__AttributeProto *a = attr(n, name);
    return a ? a->i : fallback;
}

static int has_input(const Onnx__NodeProto *n, size_t i) {
    return i < n->n_input && *n->input[i];
}

/* Input @p i, which must be defined and of @p kind (SES__ONNX_TENSOR or SEQUENCE). */
static ses_status_t input(importer_t *im, const Onnx__NodeProto *n, size_t i, int kind,
                          const char *label, value_t **out) {
    value_t *v = has_input(n, i) ? ses__onnx_find(im, n->input[i]) : NULL;

    *out = NULL;
    if (!has_input(n, i))
        return ses__fail(SES_INVALID_ARGUMENT, "%s: input %zu is missing", label, i);
    if (!v)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: input %zu, \"%s\", is not defined before it",
                         label, i, n->input[i]);
    if (v->kind != kind)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: input %zu, \"%s\", is %s; a %s is wanted",
                         label, i, n->input[i],
                         v->kind == SES__ONNX_TENSOR     ? "a tensor"
                         : v->kind == SES__ONNX_SEQUENCE ? "a sequence"
                                                         : "an empty optional",
                         kind == SES__ONNX_TENSOR ? "tensor" : "sequence");
    *out = v;
    return SES_OK;
}

/* Defines output 0 of @p n as a sequence of @p items[0..n_items) (copied). */
static ses_status_t define_sequence(importer_t *im, const Onnx__NodeProto *n,
                                    const ses_edge_t *items, size_t n_items, ses_dtype_t elem_dtype,
                                    int optional) {
    ses_edge_t none = {NULL, 0};
    ses_edge_t *copy;
    value_t *v;
    ses_status_t st;

    /* Each sequence value keeps its own list: bounded, so that a chain of inserts in a hostile
     * model cannot take quadratic memory. */
    if (n_items > SEQUENCE_MAX || im->sequence_items + n_items > SEQUENCE_TOTAL_MAX)
        return ses__fail(SES_UNIMPLEMENTED,
                         "node making \"%s\": a sequence of %zu elements, after %zu in the model's "
                         "other sequences; the most is %d in one, %d in all",
                         n->output[0], n_items, im->sequence_items, SEQUENCE_MAX,
                         SEQUENCE_TOTAL_MAX);
    im->sequence_items += n_items;
    copy = ses__malloc((n_items + 1) * sizeof *copy);
    if (!copy)
        return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
    if (n_items)
        memcpy(copy, items, n_items * sizeof *copy);
    st = ses__onnx_define(im, n->output[0], none, NULL);
    if (st != SES_OK) {
        free(copy);
        return st;
    }
    v = ses__onnx_find(im, n->output[0]);
    v->kind = SES__ONNX_SEQUENCE;
    v->items = copy;
    v->n_items = n_items;
    v->elem_dtype = elem_dtype;
    v->optional = optional;
    return SES_OK;
}

/* Defines output 0 of @p n as a copy of @p src (a tensor, a sequence or nothing). */
static ses_status_t define_copy(importer_t *im, const Onnx__NodeProto *n, const value_t *from,
                                int optional) {
    ses_edge_t none = {NULL, 0};
    /* A copy: defining may grow the table that @p from points into. */
    const value_t copy = *from, *src = &copy;
    value_t *v;
    ses_status_t st;

    if (src->kind == SES__ONNX_SEQUENCE)
        return define_sequence(im, n, src->items, src->n_items, src->elem_dtype, optional);
    st = ses__onnx_define(im, n->output[0], src->kind == SES__ONNX_TENSOR ? src->edge : none,
                          src->constant);
    if (st != SES_OK)
        return st;
    v = ses__onnx_find(im, n->output[0]);
    v->kind = src->kind;
    v->dtype = src->dtype;
    v->rank = src->rank;
    memcpy(v->dims, src->dims, sizeof v->dims);
    v->optional = optional;
    return SES_OK;
}

/* Defines output 0 of @p n as the constant @p t (taken over). */
static ses_status_t define_constant(importer_t *im, const Onnx__NodeProto *n, ses_tensor_t *t) {
    ses_edge_t edge;
    ses_status_t st = ses__onnx_add_constant(im, NULL, t, &edge);
    return st != SES_OK ? st : ses__onnx_define(im, n->output[0], edge, t);
}

/*
 * The position input @p i of @p n when the import knows it (a constant of one i32 or i64
 * element): *out_known 1 and the value in *out. Otherwise *out_known 0 and *out_edge its edge.
 */
static ses_status_t position(importer_t *im, const Onnx__NodeProto *n, size_t i, const char *label,
                             int *out_known, int64_t *out, ses_edge_t *out_edge) {
    value_t *v;
    ses_status_t st = input(im, n, i, SES__ONNX_TENSOR, label, &v);

    *out_known = 0;
    if (st != SES_OK)
        return st;
    *out_edge = v->edge;
    if (!v->constant)
        return SES_OK;
    if ((ses_tensor_dtype(v->constant) != SES_I32 && ses_tensor_dtype(v->constant) != SES_I64) ||
        ses_tensor_count(v->constant) != 1)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: position \"%s\" is %s of %zu elements; one i32 or i64 element is "
                         "wanted",
                         label, n->input[i], ses_dtype_name(ses_tensor_dtype(v->constant)),
                         ses_tensor_count(v->constant));
    *out = ses_tensor_dtype(v->constant) == SES_I32
               ? *(const int32_t *)ses_tensor_data(v->constant)
               : *(const int64_t *)ses_tensor_data(v->constant);
    *out_known = 1;
    return SES_OK;
}

/* Checks a known position against [lo, hi] and makes it non-negative (adding @p length). */
static ses_status_t check_position(const char *label, int64_t pos, int64_t lo, int64_t hi,
                                   int64_t length, int64_t *out) {
    if (pos < lo || pos > hi)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: position %lld is outside [%lld, %lld] for a sequence of %lld "
                         "tensor%s",
                         label, (long long)pos, (long long)lo, (long long)hi, (long long)length,
                         length == 1 ? "" : "s");
    *out = pos < 0 ? pos + length : pos;
    return SES_OK;
}

/* A SelectInput node over position @p pos then @p cands[0..n_cands) (sequence.c's modes). */
static ses_status_t select_node(importer_t *im, const Onnx__NodeProto *n, const char *label,
                                ses_edge_t pos, const ses_edge_t *cands, size_t n_cands,
                                int64_t mode, int64_t index, ses_edge_t *out) {
    ses_edge_t in[SES__MAX_INPUTS];
    ses_attr_t attrs[2];
    char name[300];
    ses_status_t st;

    if (n_cands + 1 > SES__MAX_INPUTS)
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: a position fed at run time over %zu elements; the most is %d", label,
                         n_cands, SES__MAX_INPUTS - 1);
    in[0] = pos;
    memcpy(in + 1, cands, n_cands * sizeof *cands);
    attrs[0] = ses_attr_int("mode", mode);
    attrs[1] = ses_attr_int("index", index);
    /* Named for the ONNX value it computes, so that a bad fed position names it. */
    snprintf(name, sizeof name, "%s/%lld", n->output[0], (long long)index);
    st = ses_graph_op(im->m->graph, "SelectInput", name, in, n_cands + 1, attrs, 2, out);
    if (st == SES_INVALID_ARGUMENT) /* the name is taken */
        st = ses_graph_op(im->m->graph, "SelectInput", NULL, in, n_cands + 1, attrs, 2, out);
    if (st != SES_OK) {
        char message[1024];
        snprintf(message, sizeof message, "%s", ses_last_error());
        return ses__fail(st, "%s: %s", label, message);
    }
    return SES_OK;
}

/* SequenceInsert(S, T, position?): T at position (the end when left out). */
static ses_status_t insert(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    value_t *s, *t;
    ses_edge_t *items = NULL, *cands = NULL, pos_edge = {NULL, 0};
    int64_t pos = 0;
    int known = 1;
    size_t L;
    ses_status_t st;

    if ((st = input(im, n, 0, SES__ONNX_SEQUENCE, label, &s)) != SES_OK ||
        (st = input(im, n, 1, SES__ONNX_TENSOR, label, &t)) != SES_OK)
        return st;
    L = s->n_items;
    pos = (int64_t)L;
    if (has_input(n, 2) && (st = position(im, n, 2, label, &known, &pos, &pos_edge)) != SES_OK)
        return st;
    if (known &&
        (st = check_position(label, pos, -(int64_t)L, (int64_t)L, (int64_t)L, &pos)) != SES_OK)
        return st;
    items = ses__malloc((L + 1) * sizeof *items);
    cands = ses__malloc((L + 1) * sizeof *cands);
    if (!items || !cands) {
        st = ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        goto done;
    }
    if (L)
        memcpy(cands, s->items, L * sizeof *cands);
    cands[L] = t->edge;
    for (size_t i = 0; i <= L && st == SES_OK; i++) {
        if (known)
            items[i] = (int64_t)i < pos    ? s->items[i]
                       : (int64_t)i == pos ? t->edge
                                           : s->items[i - 1];
        else
            st = select_node(im, n, label, pos_edge, cands, L + 1, SES__SELECT_INSERT, (int64_t)i,
                             &items[i]);
    }
    if (st == SES_OK)
        st = define_sequence(im, n, items, L + 1,
                             s->elem_dtype != SES_DTYPE_INVALID ? s->elem_dtype : t->dtype, 0);
done:
    free(items);
    free(cands);
    return st;
}

/* SequenceErase(S, position?): without the element at position (the last when left out). */
static ses_status_t erase(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    value_t *s;
    ses_edge_t *items = NULL, pos_edge = {NULL, 0};
    int64_t pos = -1;
    int known = 1;
    size_t L;
    ses_status_t st;

    if ((st = input(im, n, 0, SES__ONNX_SEQUENCE, label, &s)) != SES_OK)
        return st;
    L = s->n_items;
    if (!L)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: the sequence \"%s\" is empty; nothing to erase",
                         label, n->input[0]);
    if (has_input(n, 1) && (st = position(im, n, 1, label, &known, &pos, &pos_edge)) != SES_OK)
        return st;
    if (known &&
        (st = check_position(label, pos, -(int64_t)L, (int64_t)L - 1, (int64_t)L, &pos)) != SES_OK)
        return st;
    items = ses__malloc(L * sizeof *items);
    if (!items)
        return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
    for (size_t i = 0; i + 1 < L && st == SES_OK; i++) {
        if (known)
            items[i] = (int64_t)i < pos ? s->items[i] : s->items[i + 1];
        else
            st = select_node(im, n, label, pos_edge, s->items, L, SES__SELECT_ERASE, (int64_t)i,
                             &items[i]);
    }
    if (st == SES_OK)
        st = define_sequence(im, n, items, L - 1, s->elem_dtype, 0);
    free(items);
    return st;
}

/* SequenceAt(S, position): the element at position, a tensor. */
static ses_status_t at(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    value_t *s;
    ses_edge_t pos_edge = {NULL, 0}, out;
    int64_t pos = 0;
    int known = 0;
    size_t L;
    ses_status_t st;

    if ((st = input(im, n, 0, SES__ONNX_SEQUENCE, label, &s)) != SES_OK ||
        (st = position(im, n, 1, label, &known, &pos, &pos_edge)) != SES_OK)
        return st;
    L = s->n_items;
    if (!L)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: the sequence \"%s\" is empty; it has no element to take", label,
                         n->input[0]);
    if (known) {
        if ((st = check_position(label, pos, -(int64_t)L, (int64_t)L - 1, (int64_t)L, &pos)) !=
            SES_OK)
            return st;
        out = s->items[pos];
    } else if ((st = select_node(im, n, label, pos_edge, s->items, L, SES__SELECT_AT, 0, &out)) !=
               SES_OK) {
        return st;
    }
    return ses__onnx_define(im, n->output[0], out, NULL);
}

/* ConcatFromSequence(S; axis, new_axis): Concat of the elements, each first Unsqueezed at axis
 * when new_axis is 1 (axis then counts in the output's rank, as Unsqueeze's does). */
static ses_status_t concat(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    value_t *s;
    int64_t axis = attr_int(n, "axis", INT64_MIN), new_axis = attr_int(n, "new_axis", 0);
    ses_edge_t *in = NULL, out;
    ses_attr_t a = ses_attr_int("axis", axis);
    ses_status_t st;

    if ((st = input(im, n, 0, SES__ONNX_SEQUENCE, label, &s)) != SES_OK)
        return st;
    if (axis == INT64_MIN)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: attribute axis is required", label);
    if (new_axis != 0 && new_axis != 1)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: attribute new_axis is %lld; 0 or 1", label,
                         (long long)new_axis);
    if (!s->n_items)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: the sequence \"%s\" is empty; there is nothing to concatenate", label,
                         n->input[0]);
    if (s->n_items > SES__MAX_INPUTS)
        return ses__fail(SES_UNIMPLEMENTED, "%s: %zu elements; Concat takes at most %d", label,
                         s->n_items, SES__MAX_INPUTS);
    in = ses__malloc(s->n_items * sizeof *in);
    if (!in)
        return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
    memcpy(in, s->items, s->n_items * sizeof *in);
    if (new_axis) {
        ses_edge_t ax_in[2];
        ses_tensor_t *t;
        int64_t one = 1;
        st = ses_tensor_create_from(SES_I64, 1, &one, &axis, sizeof axis, &t);
        if (st == SES_OK)
            st = ses__onnx_add_constant(im, NULL, t, &ax_in[1]);
        for (size_t i = 0; i < s->n_items && st == SES_OK; i++) {
            ax_in[0] = s->items[i];
            st = ses_graph_op(im->m->graph, "Unsqueeze", NULL, ax_in, 2, NULL, 0, &in[i]);
        }
    }
    if (st == SES_OK)
        st = ses_graph_op(im->m->graph, "Concat", n->name && *n->name ? n->name : NULL, in,
                          s->n_items, &a, 1, &out);
    if (st == SES_INVALID_ARGUMENT && n->name && *n->name) /* the name is taken */
        st = ses_graph_op(im->m->graph, "Concat", NULL, in, s->n_items, &a, 1, &out);
    free(in);
    if (st != SES_OK) {
        char message[1024];
        snprintf(message, sizeof message, "%s", ses_last_error());
        return ses__fail(st, "%s: %s", label, message);
    }
    return ses__onnx_define(im, n->output[0], out, NULL);
}

/* Slice [start, start + len) of @p x along @p axis, squeezed there when @p squeeze. */
static ses_status_t slice(importer_t *im, ses_edge_t x, int64_t axis, int64_t start, int64_t len,
                          int squeeze, ses_edge_t *out) {
    int64_t v[3] = {start, start + len, axis}, one = 1;
    ses_edge_t in[4];
    ses_status_t st = SES_OK;

    in[0] = x;
    for (int k = 0; k < 3 && st == SES_OK; k++) {
        ses_tensor_t *t;
        st = ses_tensor_create_from(SES_I64, 1, &one, &v[k], sizeof v[k], &t);
        if (st == SES_OK)
            st = ses__onnx_add_constant(im, NULL, t, &in[1 + k]);
    }
    if (st == SES_OK)
        st = ses_graph_op(im->m->graph, "Slice", NULL, in, 4, NULL, 0, out);
    if (st == SES_OK && squeeze) {
        in[0] = *out;
        in[1] = in[3]; /* the axis */
        st = ses_graph_op(im->m->graph, "Squeeze", NULL, in, 2, NULL, 0, out);
    }
    return st;
}

/*
 * SplitToSequence(X, split?; axis, keepdims): the pieces as Slices when their sizes are known
 * here (no split: pieces of 1, squeezed unless keepdims; a constant split), else a Split whose
 * split is read when the plan compiles (a fed vector whose length the input's type gives).
 */
static ses_status_t split_to_sequence(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    value_t *x, *sp = NULL;
    int64_t axis = attr_int(n, "axis", 0), keepdims = attr_int(n, "keepdims", 1), dim = -1;
    int64_t *sizes = NULL;
    ses_edge_t *items = NULL;
    size_t L = 0;
    ses_status_t st;

    if ((st = input(im, n, 0, SES__ONNX_TENSOR, label, &x)) != SES_OK)
        return st;
    if (has_input(n, 1) && (st = input(im, n, 1, SES__ONNX_TENSOR, label, &sp)) != SES_OK)
        return st;
    if (x->rank >= 0) {
        if (axis < -x->rank || axis >= x->rank)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s: axis %lld is outside [%d, %d] for \"%s\" of rank %d", label,
                             (long long)axis, -x->rank, x->rank - 1, n->input[0], x->rank);
        if (axis < 0)
            axis += x->rank;
        dim = x->dims[axis];
    }
    if (sp && !sp->constant) {
        /* A split known only when the plan compiles: its length must be known here. */
        ses_edge_t in[2] = {x->edge, sp->edge};
        ses_attr_t a = ses_attr_int("axis", axis);
        ses_node_t *node = NULL;
        if (sp->rank != 1 || sp->dims[0] < 0)
            return ses__fail(SES_UNIMPLEMENTED,
                             "%s: split \"%s\" is computed or fed without a known length (or is "
                             "a scalar); the sequence's length must be known at import",
                             label, n->input[1]);
        L = (size_t)sp->dims[0];
        if (L < 1 || L > SES__MAX_OUTPUTS)
            return ses__fail(SES_UNIMPLEMENTED,
                             "%s: a split fed at run time into %zu pieces; 1 to %d are supported",
                             label, L, SES__MAX_OUTPUTS);
        st = ses_graph_add_node(im->m->graph, "Split", NULL, in, 2, &a, 1, L, &node);
        items = ses__malloc(L * sizeof *items);
        if (st == SES_OK && !items)
            st = ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        for (size_t i = 0; st == SES_OK && i < L; i++)
            items[i] = ses_node_output(node, (uint32_t)i);
        goto define;
    }
    if (dim < 0)
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: the length of the sequence must be known at import, but "
                         "dimension %lld of \"%s\" is not (only a graph input's or a constant's "
                         "shape is known here)",
                         label, (long long)axis, n->input[0]);
    if (dim > SEQUENCE_MAX) /* every element is a node of its own */
        return ses__fail(SES_UNIMPLEMENTED,
                         "%s: dimension %lld of \"%s\" is %lld; a sequence split at import has "
                         "at most %d elements",
                         label, (long long)axis, n->input[0], (long long)dim, SEQUENCE_MAX);
    if (!sp) {
        L = (size_t)dim;
    } else {
        const ses_tensor_t *t = sp->constant;
        size_t count = ses_tensor_count(t);
        if ((ses_tensor_dtype(t) != SES_I32 && ses_tensor_dtype(t) != SES_I64) ||
            ses_tensor_rank(t) > 1)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s: split \"%s\" is %s of rank %zu; an i32 "
                             "or i64 scalar or vector is wanted",
                             label, n->input[1], ses_dtype_name(ses_tensor_dtype(t)),
                             ses_tensor_rank(t));
        sizes = ses__malloc((count + (size_t)dim + 1) * sizeof *sizes);
        if (!sizes)
            return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        for (size_t i = 0; i < count; i++)
            sizes[i] = ses_tensor_dtype(t) == SES_I32
                           ? ((const int32_t *)ses_tensor_data((ses_tensor_t *)t))[i]
                           : ((const int64_t *)ses_tensor_data((ses_tensor_t *)t))[i];
        if (ses_tensor_rank(t) == 0) {
            int64_t chunk = sizes[0];
            if (chunk <= 0) {
                free(sizes);
                return ses__fail(SES_INVALID_ARGUMENT, "%s: split is %lld; it must be positive",
                                 label, (long long)chunk);
            }
            for (int64_t off = 0; off < dim; off += chunk)
                sizes[L++] = off + chunk <= dim ? chunk : dim - off;
        } else {
            int64_t total = 0;
            if (count > SEQUENCE_MAX) {
                free(sizes);
                return ses__fail(SES_UNIMPLEMENTED, "%s: split has %zu entries; the most is %d",
                                 label, count, SEQUENCE_MAX);
            }
            L = count;
            for (size_t i = 0; i < count; i++) {
                /* Each within [0, dim], so that the sum cannot overflow. */
                if (sizes[i] < 0 || sizes[i] > dim) {
                    long long bad = (long long)sizes[i];
                    free(sizes);
                    return ses__fail(SES_INVALID_ARGUMENT,
                                     "%s: split[%zu] is %lld; dimension %lld of \"%s\" is %lld",
                                     label, i, bad, (long long)axis, n->input[0], (long long)dim);
                }
                total += sizes[i];
            }
            if (total != dim) {
                free(sizes);
                return ses__fail(SES_INVALID_ARGUMENT,
                                 "%s: split sums to %lld but dimension %lld of \"%s\" is %lld",
                                 label, (long long)total, (long long)axis, n->input[0],
                                 (long long)dim);
            }
        }
    }
    items = ses__malloc((L + 1) * sizeof *items);
    if (!items)
        st = ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
    for (size_t i = 0, off = 0; st == SES_OK && i < L; i++) {
        int64_t len = sizes ? sizes[i] : 1;
        st = slice(im, x->edge, axis, (int64_t)off, len, !sizes && !keepdims, &items[i]);
        off += (size_t)len;
    }
define:
    if (st == SES_OK)
        st = define_sequence(im, n, items, L, x->dtype, 0);
    free(sizes);
    free(items);
    return st;
}

/* Optional, OptionalHasElement, OptionalGetElement. */
static ses_status_t optional_op(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    const char *op = n->op_type;
    value_t *v = has_input(n, 0) ? ses__onnx_find(im, n->input[0]) : NULL;

    if (has_input(n, 0) && !v)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: input 0, \"%s\", is not defined before it",
                         label, n->input[0]);
    if (!strcmp(op, "Optional")) {
        value_t none;
        if (v)
            return define_copy(im, n, v, 1);
        if (!attr(n, "type"))
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s: an Optional without input needs its type attribute", label);
        memset(&none, 0, sizeof none);
        none.kind = SES__ONNX_NONE;
        none.rank = -1;
        return define_copy(im, n, &none, 1);
    }
    if (!strcmp(op, "OptionalHasElement")) {
        uint8_t has = v && v->kind != SES__ONNX_NONE;
        ses_tensor_t *t;
        ses_status_t st = ses_tensor_create_from(SES_BOOL, 0, NULL, &has, 1, &t);
        return st != SES_OK ? st : define_constant(im, n, t);
    }
    /* OptionalGetElement: a tensor or sequence passes through as it is. */
    if (!v)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: input 0 is missing", label);
    if (v->kind == SES__ONNX_NONE)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: the optional \"%s\" is empty; it has no element to get", label,
                         n->input[0]);
    return define_copy(im, n, v, 0);
}

ses_status_t ses__onnx_sequence_node(importer_t *im, const Onnx__NodeProto *n, const char *label) {
    const char *op = n->op_type;
    ses_status_t st;

    if (n->n_output < 1 || !*n->output[0])
        return ses__fail(SES_INVALID_ARGUMENT, "%s: no output", label);
    if (n->n_output > 1)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: %zu outputs; it has one", label, n->n_output);
    if (!strcmp(op, "SequenceEmpty")) {
        const Onnx__AttributeProto *dt = attr(n, "dtype");
        ses_dtype_t dtype = ses__onnx_dtype(dt ? (int32_t)dt->i : 1);
        if (dtype == SES_DTYPE_INVALID || dtype == SES_STRING) /* no sequences of strings */
            return ses__fail(SES_UNIMPLEMENTED, "%s: dtype %s is not supported", label,
                             ses__onnx_dtype_name(dt ? (int32_t)dt->i : 1));
        return define_sequence(im, n, NULL, 0, dtype, 0);
    }
    if (!strcmp(op, "SequenceConstruct")) {
        ses_edge_t items[SES__MAX_INPUTS];
        value_t *v;
        if (!n->n_input || n->n_input > SES__MAX_INPUTS)
            return ses__fail(SES_INVALID_ARGUMENT, "%s: %zu inputs; 1 to %d", label, n->n_input,
                             SES__MAX_INPUTS);
        for (size_t i = 0; i < n->n_input; i++) {
            if ((st = input(im, n, i, SES__ONNX_TENSOR, label, &v)) != SES_OK)
                return st;
            items[i] = v->edge;
        }
        return define_sequence(im, n, items, n->n_input, v->dtype, 0);
    }
    if (!strcmp(op, "SequenceInsert"))
        return insert(im, n, label);
    if (!strcmp(op, "SequenceErase"))
        return erase(im, n, label);
    if (!strcmp(op, "SequenceAt"))
        return at(im, n, label);
    if (!strcmp(op, "SequenceLength")) {
        value_t *s;
        ses_tensor_t *t;
        int64_t length;
        if ((st = input(im, n, 0, SES__ONNX_SEQUENCE, label, &s)) != SES_OK)
            return st;
        length = (int64_t)s->n_items;
        st = ses_tensor_create_from(SES_I64, 0, NULL, &length, sizeof length, &t);
        return st != SES_OK ? st : define_constant(im, n, t);
    }
    if (!strcmp(op, "ConcatFromSequence"))
        return concat(im, n, label);
    if (!strcmp(op, "SplitToSequence"))
        return split_to_sequence(im, n, label);
    if (!strncmp(op, "Optional", 8))
        return optional_op(im, n, label);
    if (!strcmp(op, "Identity")) {
        value_t *v = has_input(n, 0) ? ses__onnx_find(im, n->input[0]) : NULL;
        if (!v)
            return ses__fail(SES_INVALID_ARGUMENT, "%s: input 0 is missing or undefined", label);
        return define_copy(im, n, v, v->optional);
    }
    return ses__fail(SES_INTERNAL, "%s: not a sequence op", label);
}
