/*
 * Graph building: nodes, names, edges. Inputs must exist before the node that reads them, so
 * node order is a topological order and the public API cannot build a cycle; the compiler still
 * checks, since other builders (importers) may not go through it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../error.h"
#include "../tensor/tensor_internal.h"
#include "graph_internal.h"

#define NAME_MAX_LENGTH 256

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static ses_node_t *lookup(const ses_graph_t *g, const char *name) {
    size_t mask, i;

    if (!g->table_size)
        return NULL;
    mask = g->table_size - 1;
    for (i = hash_name(name) & mask; g->table[i]; i = (i + 1) & mask) {
        ses_node_t *n = g->nodes[g->table[i] - 1];
        if (strcmp(n->name, name) == 0)
            return n;
    }
    return NULL;
}

static void table_insert(ses_graph_t *g, size_t index) {
    size_t mask = g->table_size - 1;
    size_t i = hash_name(g->nodes[index]->name) & mask;

    while (g->table[i])
        i = (i + 1) & mask;
    g->table[i] = index + 1;
}

/* Keeps the table at most half full. */
static int table_grow(ses_graph_t *g) {
    size_t size = g->table_size ? g->table_size * 2 : 64;
    size_t *table;

    if (g->table_size && (g->n_nodes + 1) * 2 <= g->table_size)
        return 0;
    table = ses__calloc(size, sizeof *table);
    if (!table)
        return -1;
    free(g->table);
    g->table = table;
    g->table_size = size;
    for (size_t i = 0; i < g->n_nodes; i++)
        table_insert(g, i);
    return 0;
}

ses_status_t ses_graph_create(ses_graph_t **out_graph) {
    ses_graph_t *g;

    if (!out_graph)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_graph_create: out_graph is NULL");
    *out_graph = NULL;
    g = ses__calloc(1, sizeof *g);
    if (!g)
        return ses__fail(SES_OUT_OF_MEMORY, "ses_graph_create: out of memory");
    atomic_init(&g->refs, 1);
    g->version = 1;
    *out_graph = g;
    return SES_OK;
}

ses_graph_t *ses_graph_retain(ses_graph_t *g) {
    if (g)
        atomic_fetch_add(&g->refs, 1);
    return g;
}

void ses__node_free(ses_node_t *n) {
    if (!n)
        return;
    free(n->name);
    free(n->op);
    free(n->inputs);
    free(n->device);
    ses__attrs_clear(&n->attrs);
    ses_tensor_release(n->value);
    free(n);
}

void ses_graph_release(ses_graph_t *g) {
    if (!g || atomic_fetch_sub(&g->refs, 1) != 1)
        return;
    for (size_t i = 0; i < g->n_nodes; i++)
        ses__node_free(g->nodes[i]);
    free(g->nodes);
    free(g->table);
    free(g);
}

uint64_t ses_graph_version(const ses_graph_t *g) {
    return g ? g->version : 0;
}

const char *ses__edge_format(ses_edge_t e, char *buffer, size_t size) {
    if (!e.node)
        snprintf(buffer, size, "(null edge)");
    else if (e.index == 0)
        snprintf(buffer, size, "%s", e.node->name);
    else
        snprintf(buffer, size, "%s:%u", e.node->name, e.index);
    return buffer;
}

/* A valid user-given name: printable, no ':' (it separates the index), not empty. */
static ses_status_t check_name(const char *what, const char *name) {
    size_t n = strlen(name);

    if (n == 0 || n > NAME_MAX_LENGTH)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: a node name must be 1 to %d bytes, got %zu",
                         what, NAME_MAX_LENGTH, n);
    for (size_t i = 0; i < n; i++)
        if (name[i] == ':' || (unsigned char)name[i] < 0x20)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s: node name \"%s\" may not contain ':' or control characters",
                             what, name);
    return SES_OK;
}

/* Creates and appends a node; on failure frees it. Takes ownership of nothing else. */
static ses_status_t append_node(ses_graph_t *g, const char *what, const char *op,
                                const char *name, ses__node_kind_t kind,
                                const ses_edge_t *inputs, size_t n_inputs, size_t n_outputs,
                                ses_node_t **out_node) {
    ses_node_t *n = NULL;
    char generated[64];
    ses_status_t st;

    *out_node = NULL;
    if (name) {
        st = check_name(what, name);
        if (st != SES_OK)
            return st;
        if (lookup(g, name))
            return ses__fail(SES_INVALID_ARGUMENT, "%s: a node named \"%s\" exists already", what,
                             name);
    } else {
        /* Op name and a counter, skipping names the user took. */
        do
            snprintf(generated, sizeof generated, "%s_%llu", op,
                     (unsigned long long)++g->auto_name_counter);
        while (lookup(g, generated));
        name = generated;
    }
    if (n_inputs && !inputs)
        return ses__fail(SES_INVALID_ARGUMENT, "%s \"%s\": inputs is NULL with %zu inputs", what,
                         name, n_inputs);
    for (size_t i = 0; i < n_inputs; i++) {
        char edge[300];
        const ses_node_t *src = inputs[i].node;
        if (!src)
            return ses__fail(SES_INVALID_ARGUMENT, "%s \"%s\": input %zu is a NULL edge", what,
                             name, i);
        if (src->graph != g)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s \"%s\": input %zu (%s) belongs to another graph", what, name, i,
                             ses__edge_format(inputs[i], edge, sizeof edge));
        if (inputs[i].index == SES_EDGE_CONTROL && kind == SES__NODE_NOOP)
            continue; /* runs the node for its effect */
        if (inputs[i].index >= src->n_outputs)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s \"%s\": input %zu names output %u of \"%s\", which has %zu "
                             "output(s)",
                             what, name, i, inputs[i].index, src->name, src->n_outputs);
    }
    n = ses__calloc(1, sizeof *n);
    if (!n || table_grow(g) != 0)
        goto oom;
    n->graph = g;
    n->kind = kind;
    n->n_outputs = n_outputs;
    n->name = ses__strdup(name);
    n->op = ses__strdup(op);
    n->n_inputs = n_inputs;
    n->inputs = ses__malloc((n_inputs ? n_inputs : 1) * sizeof *n->inputs);
    if (!n->name || !n->op || !n->inputs)
        goto oom;
    if (n_inputs)
        memcpy(n->inputs, inputs, n_inputs * sizeof *inputs);
    if (g->n_nodes == g->capacity) {
        size_t capacity = g->capacity ? g->capacity * 2 : 32;
        ses_node_t **nodes = ses__realloc(g->nodes, capacity * sizeof *nodes);
        if (!nodes)
            goto oom;
        g->nodes = nodes;
        g->capacity = capacity;
    }
    n->id = g->n_nodes;
    g->nodes[g->n_nodes++] = n;
    table_insert(g, n->id);
    g->version++;
    *out_node = n;
    return SES_OK;

oom:
    ses__node_free(n);
    return ses__fail(SES_OUT_OF_MEMORY, "%s \"%s\": out of memory", what, name);
}

void ses__graph_truncate(ses_graph_t *g, size_t n_nodes) {
    if (!g || n_nodes >= g->n_nodes)
        return;
    while (g->n_nodes > n_nodes)
        ses__node_free(g->nodes[--g->n_nodes]);
    /* Rebuild the name table: open addressing cannot simply forget entries. */
    memset(g->table, 0, g->table_size * sizeof *g->table);
    for (size_t i = 0; i < g->n_nodes; i++)
        table_insert(g, i);
    g->version++;
}

ses_status_t ses_graph_placeholder(ses_graph_t *g, const char *name, ses_dtype_t dtype,
                                   size_t rank, const int64_t *dims, ses_edge_t *out_edge) {
    ses_node_t *n;
    ses_status_t st;

    if (!g || !out_edge)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_graph_placeholder: NULL %s",
                         !g ? "graph" : "out_edge");
    *out_edge = (ses_edge_t){NULL, 0};
    if (ses_dtype_size(dtype) == 0)
        return ses__fail(SES_INVALID_ARGUMENT, "placeholder \"%s\": invalid dtype %d",
                         name ? name : "?", (int)dtype);
    if (rank > SES_MAX_RANK || (rank && !dims))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "placeholder \"%s\": rank %zu needs %s (the most is %d)",
                         name ? name : "?", rank, rank > SES_MAX_RANK ? "fewer dims" : "dims",
                         SES_MAX_RANK);
    for (size_t i = 0; i < rank; i++)
        if (dims[i] < -1)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "placeholder \"%s\": dimension %zu is %lld; use -1 for any size",
                             name ? name : "?", i, (long long)dims[i]);
    st = append_node(g, "placeholder", "Placeholder", name, SES__NODE_PLACEHOLDER, NULL, 0, 1, &n);
    if (st != SES_OK)
        return st;
    n->dtype = dtype;
    n->rank = (uint32_t)rank;
    for (size_t i = 0; i < rank; i++)
        n->dims[i] = dims[i];
    *out_edge = (ses_edge_t){n, 0};
    return SES_OK;
}

ses_status_t ses_graph_constant(ses_graph_t *g, const char *name, ses_tensor_t *value,
                                ses_edge_t *out_edge) {
    ses_node_t *n;
    ses_status_t st;

    if (!g || !value || !out_edge)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_graph_constant: NULL %s",
                         !g ? "graph" : !value ? "value" : "out_edge");
    *out_edge = (ses_edge_t){NULL, 0};
    /* Constants are uploaded to each device by the session (resident.c) from host bytes. */
    if ((st = ses__tensor_require_host(value, "ses_graph_constant")) != SES_OK)
        return st;
    st = append_node(g, "constant", "Constant", name, SES__NODE_CONSTANT, NULL, 0, 1, &n);
    if (st != SES_OK)
        return st;
    n->value = ses_tensor_retain(value);
    *out_edge = (ses_edge_t){n, 0};
    return SES_OK;
}

ses_status_t ses_graph_variable(ses_graph_t *g, const char *name, ses_edge_t initializer,
                                ses_edge_t *out_edge) {
    ses_node_t *n;
    ses_status_t st;

    if (!g || !name || !out_edge)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_graph_variable: NULL %s",
                         !g ? "graph" : !name ? "name (variables need one: it is their key in "
                                                "the scope)"
                                              : "out_edge");
    *out_edge = (ses_edge_t){NULL, 0};
    st = append_node(g, "variable", "Variable", name, SES__NODE_VARIABLE, &initializer, 1, 1, &n);
    if (st != SES_OK)
        return st;
    *out_edge = (ses_edge_t){n, 0};
    return SES_OK;
}

/* Names of schemas that start like @p op, for "did you mean". */
static void suggest(const char *op, char *buffer, size_t size) {
    size_t used = 0;

    buffer[0] = '\0';
    for (size_t i = 0; i < ses__op_schema_count() && used < size; i++) {
        const char *name = ses__op_schema_at(i)->name;
        if (strncasecmp(name, op, 3) == 0 || strcasecmp(name, op) == 0)
            used += (size_t)snprintf(buffer + used, size - used, "%s%s", used ? ", " : "", name);
    }
}

ses_status_t ses_graph_add_node(ses_graph_t *g, const char *op, const char *name,
                                const ses_edge_t *inputs, size_t n_inputs,
                                const ses_attr_t *attrs, size_t n_attrs, size_t n_outputs,
                                ses_node_t **out_node) {
    const ses__op_schema_t *schema = NULL;
    ses__node_kind_t kind = SES__NODE_OP;
    ses__attrs_t attrs_copy = {0};
    ses_node_t *n;
    ses_status_t st;

    if (!out_node)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_graph_add_node: out_node is NULL");
    *out_node = NULL;
    if (!g || !op)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_graph_add_node: NULL %s", !g ? "graph" : "op");
    if (n_attrs && !attrs)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: attrs is NULL with %zu attributes", op,
                         n_attrs);
    if (strcmp(op, "NoOp") == 0) {
        kind = SES__NODE_NOOP;
        if (n_outputs)
            return ses__fail(SES_INVALID_ARGUMENT, "NoOp \"%s\": has no outputs, %zu asked",
                             name ? name : "?", n_outputs);
    } else {
        schema = ses__op_schema_find(op);
        if (!schema) {
            char close[256];
            suggest(op, close, sizeof close);
            return ses__fail(SES_NOT_FOUND, "unknown op type \"%s\"%s%s%s", op,
                             close[0] ? " (did you mean " : "", close, close[0] ? "?)" : "");
        }
        if (n_inputs < schema->min_inputs || n_inputs > schema->max_inputs)
            return ses__fail(SES_INVALID_ARGUMENT, "%s \"%s\": takes %u to %u inputs, got %zu", op,
                             name ? name : "?", schema->min_inputs, schema->max_inputs, n_inputs);
        if (n_outputs == 0)
            n_outputs = schema->default_outputs;
        if (n_outputs > schema->max_outputs)
            return ses__fail(SES_INVALID_ARGUMENT, "%s \"%s\": has at most %u outputs, %zu asked",
                             op, name ? name : "?", schema->max_outputs, n_outputs);
    }
    /* Attributes are copied first, so a failure leaves the graph as it was. */
    for (size_t i = 0; i < n_attrs; i++) {
        st = ses__attrs_set(&attrs_copy, &attrs[i]);
        if (st != SES_OK) {
            char message[1024];
            snprintf(message, sizeof message, "%s", ses_last_error());
            ses__attrs_clear(&attrs_copy);
            return ses__fail(st, "%s \"%s\": %s", op, name ? name : "?", message);
        }
    }
    st = append_node(g, op, op, name, kind, inputs, n_inputs, n_outputs, &n);
    if (st != SES_OK) {
        ses__attrs_clear(&attrs_copy);
        return st;
    }
    n->schema = schema;
    n->attrs = attrs_copy;
    *out_node = n;
    return SES_OK;
}

ses_status_t ses_graph_group(ses_graph_t *g, const char *name, ses_node_t *const *nodes,
                             size_t n_nodes, ses_node_t **out_node) {
    ses_edge_t *edges;
    ses_status_t st;

    if (!out_node)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_graph_group: out_node is NULL");
    *out_node = NULL;
    if (!g || (n_nodes && !nodes))
        return ses__fail(SES_INVALID_ARGUMENT, "ses_graph_group: NULL %s", !g ? "graph" : "nodes");
    edges = ses__malloc((n_nodes ? n_nodes : 1) * sizeof *edges);
    if (!edges)
        return ses__fail(SES_OUT_OF_MEMORY, "ses_graph_group: out of memory");
    for (size_t i = 0; i < n_nodes; i++)
        edges[i] = ses_control_edge(nodes[i]);
    st = ses_graph_add_node(g, "NoOp", name, edges, n_nodes, NULL, 0, 0, out_node);
    free(edges);
    return st;
}

ses_status_t ses_graph_op(ses_graph_t *g, const char *op, const char *name,
                          const ses_edge_t *inputs, size_t n_inputs, const ses_attr_t *attrs,
                          size_t n_attrs, ses_edge_t *out_edge) {
    ses_node_t *n = NULL;
    ses_status_t st;

    if (!out_edge)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_graph_op: out_edge is NULL");
    *out_edge = (ses_edge_t){NULL, 0};
    st = ses_graph_add_node(g, op, name, inputs, n_inputs, attrs, n_attrs, 0, &n);
    if (st != SES_OK)
        return st;
    if (n->n_outputs != 1)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s \"%s\": ses_graph_op needs a one-output op; it has %zu outputs "
                         "(the node was added: use ses_node_output)",
                         op, n->name, n->n_outputs);
    *out_edge = (ses_edge_t){n, 0};
    return SES_OK;
}

ses_status_t ses_graph_find_node(const ses_graph_t *g, const char *name, ses_node_t **out_node) {
    if (!g || !name || !out_node)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_graph_find_node: NULL %s",
                         !g ? "graph" : !name ? "name" : "out_node");
    *out_node = lookup(g, name);
    if (!*out_node)
        return ses__fail(SES_NOT_FOUND, "no node named \"%s\" in the graph", name);
    return SES_OK;
}

ses_status_t ses_graph_edge(const ses_graph_t *g, const char *text, ses_edge_t *out_edge) {
    char name[NAME_MAX_LENGTH + 1];
    const char *colon;
    unsigned long index = 0;
    ses_node_t *n;

    if (!g || !text || !out_edge)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_graph_edge: NULL %s",
                         !g ? "graph" : !text ? "text" : "out_edge");
    *out_edge = (ses_edge_t){NULL, 0};
    colon = strrchr(text, ':');
    if (colon) {
        char *end;
        if (colon == text || !colon[1] || colon[1] == '-' || colon[1] == '+')
            return ses__fail(SES_INVALID_ARGUMENT, "edge \"%s\": expected \"name\" or \"name:index\"",
                             text);
        index = strtoul(colon + 1, &end, 10);
        if (*end || index > UINT32_MAX)
            return ses__fail(SES_INVALID_ARGUMENT, "edge \"%s\": \"%s\" is not an output index",
                             text, colon + 1);
        if ((size_t)(colon - text) > NAME_MAX_LENGTH)
            return ses__fail(SES_NOT_FOUND, "edge \"%s\": no such node", text);
        memcpy(name, text, (size_t)(colon - text));
        name[colon - text] = '\0';
    } else {
        if (strlen(text) > NAME_MAX_LENGTH)
            return ses__fail(SES_NOT_FOUND, "edge \"%s\": no such node", text);
        snprintf(name, sizeof name, "%s", text);
    }
    n = lookup(g, name);
    if (!n)
        return ses__fail(SES_NOT_FOUND, "edge \"%s\": no node named \"%s\"", text, name);
    if (index >= n->n_outputs)
        return ses__fail(SES_NOT_FOUND, "edge \"%s\": node \"%s\" (%s) has %zu output(s)", text,
                         name, n->op, n->n_outputs);
    *out_edge = (ses_edge_t){n, (uint32_t)index};
    return SES_OK;
}

const char *ses_node_name(const ses_node_t *n) {
    return n ? n->name : "";
}

const char *ses_node_op(const ses_node_t *n) {
    return n ? n->op : "";
}

size_t ses_node_input_count(const ses_node_t *n) {
    return n ? n->n_inputs : 0;
}

size_t ses_node_output_count(const ses_node_t *n) {
    return n ? n->n_outputs : 0;
}

ses_edge_t ses_node_output(ses_node_t *n, uint32_t index) {
    ses_edge_t e = {NULL, 0};
    if (n && index < n->n_outputs)
        e = (ses_edge_t){n, index};
    return e;
}

ses_status_t ses_node_set_device(ses_node_t *n, const char *device) {
    char *copy = NULL;

    if (!n)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_node_set_device: node is NULL");
    if (device && strlen(device) > NAME_MAX_LENGTH - 1)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_node_set_device: %s \"%s\": a device name of %zu characters "
                         "(the most is %d)",
                         n->op, n->name, strlen(device), NAME_MAX_LENGTH - 1);
    if (device && *device && !(copy = ses__strdup(device)))
        return ses__fail(SES_OUT_OF_MEMORY, "ses_node_set_device: out of memory");
    free(n->device);
    n->device = copy;
    n->graph->version++;
    return SES_OK;
}

const char *ses_node_device(const ses_node_t *n) {
    return n ? n->device : NULL;
}
