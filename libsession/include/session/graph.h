/*
 * Graphs: nodes with an op type (ONNX names and semantics), attributes, inputs and outputs.
 * An edge is (node, output index); its string form is "name:index", and "name" means index 0.
 *
 * A graph is shared: sessions retain it. Building is not thread-safe: build from one thread (or
 * lock), and do not change a graph while a session of it compiles. Every change bumps the
 * graph's version, so sessions recompile their plans.
 */
#ifndef SESSION_GRAPH_H
#define SESSION_GRAPH_H

#include <session/status.h>
#include <session/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ses_graph ses_graph_t;
typedef struct ses_node ses_node_t;

/** An output of a node. */
typedef struct ses_edge {
    ses_node_t *node;
    uint32_t index;
} ses_edge_t;

/**
 * The index of a control edge: an input of a NoOp that makes the NoOp run a node for its effect
 * rather than read one of its outputs (for ops without outputs, such as optimizer updates).
 */
#define SES_EDGE_CONTROL UINT32_MAX

/** A control edge to @p node; valid only as an input of a NoOp. */
static inline ses_edge_t ses_control_edge(ses_node_t *node) {
    ses_edge_t e = {node, SES_EDGE_CONTROL};
    return e;
}

/** Attribute types; the values equal the ABI's SES_DRV_ATTR_*. */
typedef enum ses_attr_type {
    SES_ATTR_INT = 1,
    SES_ATTR_FLOAT = 2,
    SES_ATTR_STRING = 3,
    SES_ATTR_INTS = 4,
    SES_ATTR_FLOATS = 5,
} ses_attr_type_t;

/** One attribute of a node, as the caller passes it; copied by the graph. */
typedef struct ses_attr {
    const char *name;
    ses_attr_type_t type;
    int64_t i;             /* SES_ATTR_INT */
    double f;              /* SES_ATTR_FLOAT */
    const char *s;         /* SES_ATTR_STRING */
    const int64_t *ints;   /* SES_ATTR_INTS, count entries */
    const double *floats;  /* SES_ATTR_FLOATS, count entries */
    size_t count;
} ses_attr_t;

static inline ses_attr_t ses_attr_int(const char *name, int64_t value) {
    ses_attr_t a = {name, SES_ATTR_INT, value, 0.0, NULL, NULL, NULL, 0};
    return a;
}
static inline ses_attr_t ses_attr_float(const char *name, double value) {
    ses_attr_t a = {name, SES_ATTR_FLOAT, 0, value, NULL, NULL, NULL, 0};
    return a;
}
static inline ses_attr_t ses_attr_string(const char *name, const char *value) {
    ses_attr_t a = {name, SES_ATTR_STRING, 0, 0.0, value, NULL, NULL, 0};
    return a;
}
static inline ses_attr_t ses_attr_ints(const char *name, const int64_t *values, size_t count) {
    ses_attr_t a = {name, SES_ATTR_INTS, 0, 0.0, NULL, values, NULL, count};
    return a;
}
static inline ses_attr_t ses_attr_floats(const char *name, const double *values, size_t count) {
    ses_attr_t a = {name, SES_ATTR_FLOATS, 0, 0.0, NULL, NULL, values, count};
    return a;
}

/** Creates an empty graph with one reference. */
SES_API ses_status_t ses_graph_create(ses_graph_t **out_graph);
/** Adds a reference; returns @p g. Accepts NULL. */
SES_API ses_graph_t *ses_graph_retain(ses_graph_t *g);
/** Drops a reference; the last one frees the graph. Accepts NULL. */
SES_API void ses_graph_release(ses_graph_t *g);
/** Bumped by every change. */
SES_API uint64_t ses_graph_version(const ses_graph_t *g);

/**
 * Adds a placeholder: an input that must be fed. @p dims gives the shape, -1 for a dimension
 * of any size; a fed value must match it. @p name must be unique in the graph (NULL: generated).
 */
SES_API ses_status_t ses_graph_placeholder(ses_graph_t *g, const char *name, ses_dtype_t dtype,
                                           size_t rank, const int64_t *dims,
                                           ses_edge_t *out_edge);

/** Adds a constant holding @p value (retained, not copied: do not change it afterwards). */
SES_API ses_status_t ses_graph_constant(ses_graph_t *g, const char *name, ses_tensor_t *value,
                                        ses_edge_t *out_edge);

/**
 * Adds a variable: a tensor in each session's scope under @p name, set from @p initializer the
 * first time an eval needs it, and kept across evals.
 */
SES_API ses_status_t ses_graph_variable(ses_graph_t *g, const char *name, ses_edge_t initializer,
                                        ses_edge_t *out_edge);

/**
 * Adds a node of op type @p op (an ONNX name: "Add", "MatMul", ...). @p n_outputs 0 takes the
 * op's default. Fails with SES_NOT_FOUND for an unknown op (listing close names), and
 * SES_INVALID_ARGUMENT for a wrong input count, an edge of another graph, or a duplicate name.
 */
SES_API ses_status_t ses_graph_add_node(ses_graph_t *g, const char *op, const char *name,
                                        const ses_edge_t *inputs, size_t n_inputs,
                                        const ses_attr_t *attrs, size_t n_attrs,
                                        size_t n_outputs, ses_node_t **out_node);

/** ses_graph_add_node for a one-output op, giving its output edge. */
SES_API ses_status_t ses_graph_op(ses_graph_t *g, const char *op, const char *name,
                                  const ses_edge_t *inputs, size_t n_inputs,
                                  const ses_attr_t *attrs, size_t n_attrs, ses_edge_t *out_edge);

/** The node named @p name; SES_NOT_FOUND otherwise. */
/**
 * Adds a NoOp named @p name (NULL: generated) whose inputs are control edges to @p nodes: using
 * it as a target runs every one of them. Stores it in @p out_node.
 */
SES_API ses_status_t ses_graph_group(ses_graph_t *g, const char *name, ses_node_t *const *nodes,
                                     size_t n_nodes, ses_node_t **out_node);
SES_API ses_status_t ses_graph_find_node(const ses_graph_t *g, const char *name,
                                         ses_node_t **out_node);
/** Parses "name" or "name:index" into an edge; SES_NOT_FOUND or SES_INVALID_ARGUMENT. */
SES_API ses_status_t ses_graph_edge(const ses_graph_t *g, const char *text, ses_edge_t *out_edge);

SES_API const char *ses_node_name(const ses_node_t *n);
SES_API const char *ses_node_op(const ses_node_t *n);
SES_API size_t ses_node_input_count(const ses_node_t *n);
SES_API size_t ses_node_output_count(const ses_node_t *n);
/** Output @p index of @p n as an edge ({NULL, 0} when out of range). */
SES_API ses_edge_t ses_node_output(ses_node_t *n, uint32_t index);

/**
 * Asks for @p n to run on @p device ("gpu:0", "cuda:1", "cpu", or "/task:K/gpu:0" for a device
 * of worker K of a remote session, see <session/remote.h>); NULL or "" removes the request. The
 * device must be one of the session's: it is tried first, and the session's fallback policy
 * applies when it has no kernel for the node. A compile fails, naming the node, when the session
 * has no such device. Copied; bumps the graph's version. SES_INVALID_ARGUMENT for a NULL node
 * or a name of more than 255 characters.
 */
SES_API ses_status_t ses_node_set_device(ses_node_t *n, const char *device);
/** The device asked for with ses_node_set_device, or NULL. */
SES_API const char *ses_node_device(const ses_node_t *n);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_GRAPH_H */
