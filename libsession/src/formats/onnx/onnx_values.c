/*
 * The importer's value table: each ONNX name bound to its edge (and its constant, type and
 * sequence items), looked up through the enclosing scopes of control-flow bodies; the constants
 * the import makes, kept until it ends. Below onnx_import.c and the files it hands ops to
 * (onnx_sequence.c, onnx_control.c, onnx_optimizers.c), which all define and find names here.
 */
#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "onnx_importer.h"

static uint64_t hash(const char *s) {
    uint64_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static value_t *find_local(importer_t *im, const char *name) {
    if (!im->capacity)
        return NULL;
    for (size_t i = hash(name) & (im->capacity - 1);; i = (i + 1) & (im->capacity - 1)) {
        if (!im->values[i].name)
            return NULL;
        if (!strcmp(im->values[i].name, name))
            return &im->values[i];
    }
}

/* The value named @p name in @p im's scope or, failing that, in the enclosing scopes. */
value_t *ses__onnx_find(importer_t *im, const char *name) {
    for (; im; im = im->parent) {
        value_t *v = find_local(im, name);
        if (v)
            return v;
    }
    return NULL;
}

ses_status_t ses__onnx_define(importer_t *im, const char *name, ses_edge_t edge,
                              ses_tensor_t *constant) {
    if (find_local(im, name))
        return ses__fail(SES_INVALID_ARGUMENT, "value \"%s\" is defined twice", name);
    if ((im->count + 1) * 2 > im->capacity) {
        size_t capacity = im->capacity ? im->capacity * 2 : 64;
        value_t *old = im->values, *grown = ses__calloc(capacity, sizeof *grown);
        size_t old_capacity = im->capacity;
        if (!grown)
            return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        im->values = grown;
        im->capacity = capacity;
        for (size_t i = 0; i < old_capacity; i++) {
            if (!old[i].name)
                continue;
            for (size_t j = hash(old[i].name) & (capacity - 1);; j = (j + 1) & (capacity - 1))
                if (!grown[j].name) {
                    grown[j] = old[i];
                    break;
                }
        }
        free(old);
    }
    for (size_t i = hash(name) & (im->capacity - 1);; i = (i + 1) & (im->capacity - 1)) {
        if (!im->values[i].name) {
            im->values[i].name = ses__strdup(name);
            if (!im->values[i].name)
                return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
            im->values[i].edge = edge;
            im->values[i].constant = constant;
            im->values[i].dtype = constant ? ses_tensor_dtype(constant) : SES_DTYPE_INVALID;
            im->values[i].rank = constant ? (int)ses_tensor_rank(constant) : -1;
            if (constant)
                memcpy(im->values[i].dims, ses_tensor_dims(constant),
                       ses_tensor_rank(constant) * sizeof(int64_t));
            im->count++;
            return SES_OK;
        }
    }
}

static ses_status_t keep(importer_t *im, ses_tensor_t *t) {
    if (im->n_owned == im->owned_capacity) {
        size_t capacity = im->owned_capacity ? im->owned_capacity * 2 : 32;
        ses_tensor_t **grown = ses__realloc(im->owned, capacity * sizeof *grown);
        if (!grown) {
            ses_tensor_release(t);
            return ses__fail(SES_OUT_OF_MEMORY, "onnx: out of memory");
        }
        im->owned = grown;
        im->owned_capacity = capacity;
    }
    im->owned[im->n_owned++] = t;
    return SES_OK;
}

/* Adds @p t (taken over) as a constant named @p name (NULL: generated) and returns its edge. */
ses_status_t ses__onnx_add_constant(importer_t *im, const char *name, ses_tensor_t *t,
                                    ses_edge_t *out_edge) {
    ses_status_t st = keep(im, t);
    if (st != SES_OK)
        return st;
    st = ses_graph_constant(im->m->graph, name, t, out_edge);
    if (st == SES_INVALID_ARGUMENT && name) /* a name taken by a node: let the graph pick one */
        st = ses_graph_constant(im->m->graph, NULL, t, out_edge);
    return st;
}

void ses__onnx_importer_clear(importer_t *im) {
    for (size_t i = 0; i < im->capacity; i++) {
        free(im->values[i].name);
        free(im->values[i].items);
    }
    free(im->values);
    for (size_t i = 0; i < im->n_owned; i++)
        ses_tensor_release(im->owned[i]);
    free(im->owned);
}
