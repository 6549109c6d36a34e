/* The graph object behind ses_graph_t and ses_node_t. */
#ifndef SES_GRAPH_INTERNAL_H
#define SES_GRAPH_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <session/graph.h>

#include "../ops/op_schema.h"
#include "attrs.h"

/* What a node is. Only SES__NODE_OP nodes run kernels. */
typedef enum ses__node_kind {
    SES__NODE_OP = 0,      /* an op with a schema */
    SES__NODE_PLACEHOLDER, /* must be fed */
    SES__NODE_CONSTANT,    /* holds a tensor */
    SES__NODE_VARIABLE,    /* reads the session scope; input 0 is its initializer */
    SES__NODE_NOOP,        /* no outputs; a target that runs its inputs for their effect */
} ses__node_kind_t;

struct ses_node {
    struct ses_graph *graph;
    size_t id; /* index in graph->nodes: topological, since inputs exist before a node */
    char *name;
    char *op;
    ses__node_kind_t kind;
    const ses__op_schema_t *schema; /* SES__NODE_OP only */
    ses_edge_t *inputs;
    size_t n_inputs;
    size_t n_outputs;
    ses__attrs_t attrs;
    ses_tensor_t *value;      /* SES__NODE_CONSTANT */
    ses_dtype_t dtype;        /* SES__NODE_PLACEHOLDER: declared type */
    uint32_t rank;
    int64_t dims[SES_MAX_RANK]; /* -1: any size */
    char *device;               /* ses_node_set_device's request, or NULL */
};

struct ses_graph {
    atomic_size_t refs;
    struct ses_node **nodes;
    size_t n_nodes;
    size_t capacity;
    uint64_t version;
    /* Name lookup: open addressing over node indexes + 1 (0 = empty). */
    size_t *table;
    size_t table_size;
    uint64_t auto_name_counter;
};

/** Formats an edge as "name:index" (or "name" for index 0) into @p buffer. */
const char *ses__edge_format(ses_edge_t e, char *buffer, size_t size);

/**
 * Removes every node from index @p n_nodes on (the newest ones), so that a helper that adds
 * several nodes leaves the graph as it was when it fails. No remaining node may use them.
 */
void ses__graph_truncate(ses_graph_t *g, size_t n_nodes);

/** Frees a node and everything it owns (name, op, inputs, device, attributes, value); NULL is
 * fine. For the graph's own nodes and for nodes a plan makes (compile/fuse.c). */
void ses__node_free(ses_node_t *n);

#endif /* SES_GRAPH_INTERNAL_H */
