/*
 * Messages of a remote session: see remote_wire.h. Fields are written in the host's byte order
 * (both ends run on one kind of machine in an MPI job; a heterogeneous job is not supported).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../graph/graph_internal.h"
#include "remote_wire.h"

#define NULL_STRING UINT32_MAX

/* ---- writer ------------------------------------------------------------------------------ */

void ses__wire_bytes(ses__wire_writer_t *w, const void *data, size_t bytes) {
    if (w->failed || !bytes)
        return;
    if (w->capacity - w->used < bytes) {
        size_t capacity = w->capacity ? w->capacity : 256;
        unsigned char *grown;
        while (capacity - w->used < bytes) {
            if (capacity > SIZE_MAX / 2) {
                w->failed = 1;
                return;
            }
            capacity *= 2;
        }
        grown = ses__realloc(w->data, capacity);
        if (!grown) {
            w->failed = 1;
            return;
        }
        w->data = grown;
        w->capacity = capacity;
    }
    memcpy(w->data + w->used, data, bytes);
    w->used += bytes;
}

void ses__wire_u32(ses__wire_writer_t *w, uint32_t v) {
    ses__wire_bytes(w, &v, sizeof v);
}

void ses__wire_u64(ses__wire_writer_t *w, uint64_t v) {
    ses__wire_bytes(w, &v, sizeof v);
}

void ses__wire_f64(ses__wire_writer_t *w, double v) {
    ses__wire_bytes(w, &v, sizeof v);
}

void ses__wire_string(ses__wire_writer_t *w, const char *s) {
    size_t length = s ? strlen(s) : 0;

    if (length >= NULL_STRING) {
        w->failed = 1;
        return;
    }
    ses__wire_u32(w, s ? (uint32_t)length : NULL_STRING);
    ses__wire_bytes(w, s, length);
}

void ses__wire_tensor(ses__wire_writer_t *w, ses_tensor_t *t) {
    size_t rank = ses_tensor_rank(t);
    const int64_t *dims = ses_tensor_dims(t);

    ses__wire_u32(w, (uint32_t)ses_tensor_dtype(t));
    ses__wire_u32(w, (uint32_t)rank);
    for (size_t i = 0; i < rank; i++)
        ses__wire_u64(w, (uint64_t)dims[i]);
    /* A string tensor goes as its strings, never as its element pointers. */
    if (ses_tensor_dtype(t) == SES_STRING) {
        for (size_t i = 0; i < ses_tensor_count(t); i++) {
            const char *s = "";
            ses_tensor_string(t, i, &s);
            ses__wire_string(w, s);
        }
        return;
    }
    ses__wire_u64(w, ses_tensor_bytes(t));
    ses__wire_bytes(w, ses_tensor_data(t), ses_tensor_bytes(t));
}

static void write_attr(ses__wire_writer_t *w, const ses__attr_t *a) {
    ses__wire_string(w, a->name);
    ses__wire_u32(w, (uint32_t)a->type);
    ses__wire_u64(w, (uint64_t)a->i);
    ses__wire_f64(w, a->f);
    ses__wire_u64(w, a->count);
    if (a->type == SES_ATTR_STRING)
        ses__wire_bytes(w, a->s, a->count);
    else if (a->type == SES_ATTR_INTS)
        ses__wire_bytes(w, a->ints, a->count * sizeof *a->ints);
    else if (a->type == SES_ATTR_FLOATS)
        ses__wire_bytes(w, a->floats, a->count * sizeof *a->floats);
}

void ses__wire_graph(ses__wire_writer_t *w, const ses_graph_t *g) {
    ses__wire_u64(w, g->n_nodes);
    for (size_t i = 0; i < g->n_nodes; i++) {
        const ses_node_t *n = g->nodes[i];
        ses__wire_u32(w, (uint32_t)n->kind);
        ses__wire_string(w, n->name);
        ses__wire_string(w, n->op);
        ses__wire_string(w, n->device);
        ses__wire_u64(w, n->n_outputs);
        ses__wire_u64(w, n->n_inputs);
        for (size_t k = 0; k < n->n_inputs; k++) {
            ses__wire_u64(w, n->inputs[k].node->id);
            ses__wire_u32(w, n->inputs[k].index);
        }
        ses__wire_u64(w, n->attrs.count);
        for (size_t k = 0; k < n->attrs.count; k++)
            write_attr(w, &n->attrs.items[k]);
        if (n->kind == SES__NODE_CONSTANT)
            ses__wire_tensor(w, n->value);
        if (n->kind == SES__NODE_PLACEHOLDER) {
            ses__wire_u32(w, (uint32_t)n->dtype);
            ses__wire_u32(w, n->rank);
            for (uint32_t k = 0; k < n->rank; k++)
                ses__wire_u64(w, (uint64_t)n->dims[k]);
        }
    }
}

ses_status_t ses__wire_check(const ses__wire_writer_t *w, const char *what) {
    return w->failed ? ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory writing a message", what)
                     : SES_OK;
}

/* ---- reader ------------------------------------------------------------------------------ */

const void *ses__wire_read_bytes(ses__wire_reader_t *r, size_t bytes) {
    const void *p;

    if (r->failed || r->size - r->at < bytes) {
        r->failed = 1;
        return NULL;
    }
    p = r->data + r->at;
    r->at += bytes;
    return p;
}

/* Copies the next @p size bytes into @p out, or leaves it 0 when the message is too short. */
static void read_value(ses__wire_reader_t *r, void *out, size_t size) {
    const void *p = ses__wire_read_bytes(r, size);
    if (p)
        memcpy(out, p, size);
}

uint32_t ses__wire_read_u32(ses__wire_reader_t *r) {
    uint32_t v = 0;
    read_value(r, &v, sizeof v);
    return v;
}

uint64_t ses__wire_read_u64(ses__wire_reader_t *r) {
    uint64_t v = 0;
    read_value(r, &v, sizeof v);
    return v;
}

double ses__wire_read_f64(ses__wire_reader_t *r) {
    double v = 0;
    read_value(r, &v, sizeof v);
    return v;
}

ses_status_t ses__wire_read_fail(const ses__wire_reader_t *r, const char *format, ...) {
    char message[512];
    va_list ap;

    if (r->oom)
        return ses__fail(SES_OUT_OF_MEMORY, "remote message: out of memory reading it");
    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    return ses__fail(SES_INTERNAL, "%s", message);
}

char *ses__wire_read_string(ses__wire_reader_t *r) {
    uint32_t length = ses__wire_read_u32(r);
    const char *p;
    char *s;

    if (r->failed || length == NULL_STRING)
        return NULL;
    if (!(p = ses__wire_read_bytes(r, length)))
        return NULL;
    if (memchr(p, 0, length)) {
        r->failed = 1;
        return NULL;
    }
    if (!(s = ses__malloc((size_t)length + 1))) {
        r->failed = r->oom = 1;
        return NULL;
    }
    memcpy(s, p, length);
    s[length] = 0;
    return s;
}

/* A string tensor's elements, each a string of the message (none may be NULL). */
static ses_status_t read_string_tensor(ses__wire_reader_t *r, uint32_t rank, const int64_t *dims,
                                       ses_tensor_t **out) {
    ses_tensor_t *t = NULL;
    ses_status_t st;

    uint64_t count = 1;

    if (r->failed)
        return ses__wire_read_fail(r, "remote message: a tensor cut short");
    /* Each string takes at least its 4-byte length: more than the message holds is a lie, and
     * must not be allocated. */
    for (uint32_t i = 0; i < rank; i++) {
        if (dims[i] < 0 || (dims[i] && count > (r->size - r->at) / (uint64_t)dims[i]))
            return ses__wire_read_fail(r, "remote message: a string tensor cut short");
        count *= (uint64_t)dims[i];
    }
    if (count > (r->size - r->at) / 4)
        return ses__wire_read_fail(r, "remote message: a string tensor cut short");
    if ((st = ses_tensor_create(SES_STRING, rank, dims, &t)) != SES_OK)
        return st;
    for (size_t i = 0; i < ses_tensor_count(t); i++) {
        char *s = ses__wire_read_string(r);
        if (r->failed || !s) {
            free(s);
            ses_tensor_release(t);
            return ses__wire_read_fail(r, "remote message: string %zu of a tensor is missing", i);
        }
        st = ses_tensor_set_string(t, i, s);
        free(s);
        if (st != SES_OK) {
            ses_tensor_release(t);
            return st;
        }
    }
    *out = t;
    return SES_OK;
}

ses_status_t ses__wire_read_tensor(ses__wire_reader_t *r, ses_tensor_t **out) {
    uint32_t dtype = ses__wire_read_u32(r), rank = ses__wire_read_u32(r);
    int64_t dims[SES_MAX_RANK];
    uint64_t bytes;
    const void *data;

    *out = NULL;
    if (r->failed || rank > SES_MAX_RANK)
        return ses__wire_read_fail(r, "remote message: a tensor of rank %u", rank);
    for (uint32_t i = 0; i < rank; i++)
        dims[i] = (int64_t)ses__wire_read_u64(r);
    if (dtype == SES_STRING)
        return read_string_tensor(r, rank, dims, out);
    bytes = ses__wire_read_u64(r);
    data = ses__wire_read_bytes(r, (size_t)bytes);
    if (r->failed || bytes > SIZE_MAX)
        return ses__wire_read_fail(r, "remote message: a tensor cut short");
    /* ses_tensor_create_from checks the dtype, the dimensions and that bytes is their size. */
    return ses_tensor_create_from((ses_dtype_t)dtype, rank, dims, data, (size_t)bytes, out);
}

static void clear_attrs(ses_attr_t *attrs, size_t count) {
    for (size_t i = 0; i < count; i++) {
        free((char *)attrs[i].name);
        free((char *)attrs[i].s);
    }
    free(attrs);
}

/* Reads @p count attributes; their arrays point into the message. */
static ses_status_t read_attrs(ses__wire_reader_t *r, size_t count, ses_attr_t **out) {
    ses_attr_t *attrs = ses__calloc(count ? count : 1, sizeof *attrs);

    *out = NULL;
    if (!attrs)
        return ses__fail(SES_OUT_OF_MEMORY, "remote message: out of memory");
    for (size_t i = 0; i < count && !r->failed; i++) {
        ses_attr_t *a = &attrs[i];
        uint64_t n;
        a->name = ses__wire_read_string(r);
        a->type = (ses_attr_type_t)ses__wire_read_u32(r);
        a->i = (int64_t)ses__wire_read_u64(r);
        a->f = ses__wire_read_f64(r);
        n = ses__wire_read_u64(r);
        a->count = (size_t)n;
        if (a->type == SES_ATTR_STRING) {
            const char *p = ses__wire_read_bytes(r, (size_t)n);
            char *s = p ? ses__malloc((size_t)n + 1) : NULL;
            if (s) {
                memcpy(s, p, (size_t)n);
                s[n] = 0;
            } else {
                r->failed = 1;
                r->oom |= p != NULL;
            }
            a->s = s;
        } else if (a->type == SES_ATTR_INTS) {
            a->ints = n <= SIZE_MAX / 8 ? ses__wire_read_bytes(r, (size_t)n * 8) : NULL;
            r->failed |= !a->ints && n;
        } else if (a->type == SES_ATTR_FLOATS) {
            a->floats = n <= SIZE_MAX / 8 ? ses__wire_read_bytes(r, (size_t)n * 8) : NULL;
            r->failed |= !a->floats && n;
        }
        r->failed |= !a->name;
    }
    if (r->failed) {
        clear_attrs(attrs, count);
        return ses__wire_read_fail(r, "remote message: attributes cut short");
    }
    *out = attrs;
    return SES_OK;
}

/* Adds one node read from @p r to @p g; node ids equal the sender's, since both add in order. */
static ses_status_t read_node(ses__wire_reader_t *r, ses_graph_t *g) {
    uint32_t kind = ses__wire_read_u32(r);
    char *name = ses__wire_read_string(r), *op = ses__wire_read_string(r);
    char *device = ses__wire_read_string(r);
    uint64_t n_outputs = ses__wire_read_u64(r), n_inputs = ses__wire_read_u64(r), n_attrs = 0;
    ses_edge_t *inputs = NULL, out;
    ses_attr_t *attrs = NULL;
    ses_tensor_t *value = NULL;
    ses_node_t *node = NULL;
    ses_status_t st = SES_OK;

    if (r->failed || !name || !op || n_inputs > r->size || n_outputs > UINT32_MAX) {
        st = ses__wire_read_fail(r, "remote message: node %zu cut short", g->n_nodes);
        goto done;
    }
    inputs = ses__calloc(n_inputs ? (size_t)n_inputs : 1, sizeof *inputs);
    if (!inputs) {
        st = ses__fail(SES_OUT_OF_MEMORY, "remote message: out of memory");
        goto done;
    }
    for (uint64_t k = 0; k < n_inputs; k++) {
        uint64_t id = ses__wire_read_u64(r);
        uint32_t index = ses__wire_read_u32(r);
        if (r->failed || id >= g->n_nodes) {
            st = ses__fail(SES_INTERNAL, "remote message: node \"%s\" reads node %llu of %zu",
                           name, (unsigned long long)id, g->n_nodes);
            goto done;
        }
        inputs[k] = (ses_edge_t){g->nodes[id], index};
    }
    n_attrs = ses__wire_read_u64(r);
    if (n_attrs > r->size || (st = read_attrs(r, (size_t)n_attrs, &attrs)) != SES_OK) {
        st = st != SES_OK ? st : ses__wire_read_fail(r, "remote message: attributes cut short");
        goto done;
    }
    switch (kind) {
    case SES__NODE_PLACEHOLDER: {
        uint32_t dtype = ses__wire_read_u32(r), rank = ses__wire_read_u32(r);
        int64_t dims[SES_MAX_RANK];
        if (rank > SES_MAX_RANK) {
            st = ses__fail(SES_INTERNAL, "remote message: placeholder of rank %u", rank);
            goto done;
        }
        for (uint32_t k = 0; k < rank; k++)
            dims[k] = (int64_t)ses__wire_read_u64(r);
        st = ses_graph_placeholder(g, name, (ses_dtype_t)dtype, rank, dims, &out);
        break;
    }
    case SES__NODE_CONSTANT:
        if ((st = ses__wire_read_tensor(r, &value)) == SES_OK)
            st = ses_graph_constant(g, name, value, &out);
        break;
    case SES__NODE_VARIABLE:
        st = n_inputs == 1 ? ses_graph_variable(g, name, inputs[0], &out)
                           : ses__fail(SES_INTERNAL, "remote message: variable \"%s\"", name);
        break;
    case SES__NODE_OP:
    case SES__NODE_NOOP:
        st = ses_graph_add_node(g, op, name, inputs, (size_t)n_inputs, attrs, (size_t)n_attrs,
                                (size_t)n_outputs, &node);
        break;
    default:
        st = ses__fail(SES_INTERNAL, "remote message: node \"%s\" of kind %u", name, kind);
    }
    if (st == SES_OK && device)
        st = ses_node_set_device(g->nodes[g->n_nodes - 1], device);

done:
    ses_tensor_release(value);
    if (attrs)
        clear_attrs(attrs, (size_t)n_attrs);
    free(inputs);
    free(name);
    free(op);
    free(device);
    return st;
}

ses_status_t ses__wire_read_graph(ses__wire_reader_t *r, ses_graph_t **out_graph) {
    uint64_t n = ses__wire_read_u64(r);
    ses_graph_t *g = NULL;
    ses_status_t st;

    *out_graph = NULL;
    if (r->failed || n > r->size)
        return ses__wire_read_fail(r, "remote message: a graph cut short");
    if ((st = ses_graph_create(&g)) != SES_OK)
        return st;
    for (uint64_t i = 0; i < n && st == SES_OK; i++)
        st = read_node(r, g);
    if (st != SES_OK) {
        ses_graph_release(g);
        return st;
    }
    *out_graph = g;
    return SES_OK;
}
