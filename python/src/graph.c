/*
 * session._core: Graph, Node and Edge, and the training builders that add nodes to a graph
 * (fc, losses, gradients, minimize).
 */
#include "core.h"

#include <string.h>

/* Evaluations the calling thread is inside of (any graph): a graph change from a hook would wait
 * for itself. */
static _Thread_local int read_depth;

void py_graph_read_lock(GraphObject *graph) {
    pthread_rwlock_rdlock(&graph->lock);
    read_depth++;
}

void py_graph_read_unlock(GraphObject *graph) {
    read_depth--;
    pthread_rwlock_unlock(&graph->lock);
}

int py_graph_write_lock(GraphObject *graph) {
    if (read_depth > 0) {
        py_raise(SES_FAILED_PRECONDITION,
                 "a graph cannot change during an evaluation on the same thread (from a hook): "
                 "build it before the run");
        return -1;
    }
    if (pthread_rwlock_trywrlock(&graph->lock) != 0) {
        Py_BEGIN_ALLOW_THREADS
        pthread_rwlock_wrlock(&graph->lock);
        Py_END_ALLOW_THREADS
    }
    return 0;
}

void py_graph_write_unlock(GraphObject *graph) {
    pthread_rwlock_unlock(&graph->lock);
}

int py_graph_ready(GraphObject *graph) {
    if (!graph->g) {
        PyErr_SetString(PyExc_TypeError, "Graph.__init__ was not called");
        return -1;
    }
    return 0;
}

/* ---- Node and Edge ----------------------------------------------------------------------- */

PyObject *py_node_new(GraphObject *graph, ses_node_t *node) {
    NodeObject *n;

    if (!node)
        Py_RETURN_NONE;
    n = (NodeObject *)py_node_type->tp_alloc(py_node_type, 0);
    if (!n)
        return NULL;
    Py_INCREF(graph);
    n->graph = graph;
    n->node = node;
    return (PyObject *)n;
}

PyObject *py_edge_new(GraphObject *graph, ses_edge_t edge) {
    EdgeObject *e;

    if (!edge.node)
        Py_RETURN_NONE;
    e = (EdgeObject *)py_edge_type->tp_alloc(py_edge_type, 0);
    if (!e)
        return NULL;
    Py_INCREF(graph);
    e->graph = graph;
    e->node = edge.node;
    e->index = edge.index;
    return (PyObject *)e;
}

int py_edge_of(GraphObject *graph, PyObject *obj, const char *what, ses_edge_t *out) {
    EdgeObject *e;

    if (!PyObject_TypeCheck(obj, &EdgeType)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an Edge, got %.100s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    e = (EdgeObject *)obj;
    if (e->graph != graph) {
        char message[512];
        snprintf(message, sizeof message, "%s: edge \"%s:%u\" belongs to another graph", what,
                 ses_node_name(e->node), e->index);
        py_raise(SES_INVALID_ARGUMENT, message);
        return -1;
    }
    out->node = e->node;
    out->index = e->index;
    return 0;
}

int py_node_of(GraphObject *graph, PyObject *obj, const char *what, ses_node_t **out) {
    GraphObject *owner;
    ses_node_t *node;

    if (PyObject_TypeCheck(obj, &NodeType)) {
        owner = ((NodeObject *)obj)->graph;
        node = ((NodeObject *)obj)->node;
    } else if (PyObject_TypeCheck(obj, &EdgeType)) {
        owner = ((EdgeObject *)obj)->graph;
        node = ((EdgeObject *)obj)->node;
    } else {
        PyErr_Format(PyExc_TypeError, "%s: expected a Node or an Edge, got %.100s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (owner != graph) {
        char message[512];
        snprintf(message, sizeof message, "%s: node \"%s\" belongs to another graph", what,
                 ses_node_name(node));
        py_raise(SES_INVALID_ARGUMENT, message);
        return -1;
    }
    *out = node;
    return 0;
}

/* Nodes and Edges are tracked by the cycle collector: the package keeps Edges in its Graph's
 * __dict__ (Graph._dtypes), so a graph and its edges form a cycle that only the collector frees,
 * and it can see the edge -> graph link only through tp_traverse. No tp_clear: the link is
 * needed as long as the object lives; clearing the Graph's __dict__ breaks such a cycle. */
static int node_traverse(NodeObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->graph);
    return 0;
}

static void node_dealloc(NodeObject *self) {
    PyObject_GC_UnTrack(self);
    Py_XDECREF(self->graph);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *node_new_direct(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)type;
    (void)args;
    (void)kwds;
    PyErr_SetString(PyExc_TypeError, "Nodes are made by a Graph (Graph.op, Graph.node)");
    return NULL;
}

static PyObject *node_get_name(NodeObject *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(ses_node_name(self->node));
}

static PyObject *node_get_op(NodeObject *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(ses_node_op(self->node));
}

static PyObject *node_get_graph(NodeObject *self, void *closure) {
    (void)closure;
    return Py_NewRef((PyObject *)self->graph);
}

static PyObject *node_get_num_inputs(NodeObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(ses_node_input_count(self->node));
}

static PyObject *node_get_outputs(NodeObject *self, void *closure) {
    size_t n = ses_node_output_count(self->node);
    PyObject *t = PyTuple_New((Py_ssize_t)n);

    (void)closure;
    for (size_t i = 0; t && i < n; i++) {
        PyObject *e = py_edge_new(self->graph, ses_node_output(self->node, (uint32_t)i));
        if (!e) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, e);
    }
    return t;
}

static PyObject *node_get_device(NodeObject *self, void *closure) {
    const char *d = ses_node_device(self->node);
    (void)closure;
    if (!d)
        Py_RETURN_NONE;
    return PyUnicode_FromString(d);
}

static int node_set_device(NodeObject *self, PyObject *value, void *closure) {
    const char *d = NULL;
    ses_status_t st;

    (void)closure;
    if (value && value != Py_None) {
        d = PyUnicode_AsUTF8(value);
        if (!d)
            return -1;
    }
    if (py_graph_write_lock(self->graph) < 0)
        return -1;
    st = ses_node_set_device(self->node, d);
    py_graph_write_unlock(self->graph);
    if (st != SES_OK) {
        py_raise(st, NULL);
        return -1;
    }
    return 0;
}

static PyObject *node_output(NodeObject *self, PyObject *arg) {
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    size_t n = ses_node_output_count(self->node);

    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0 || (size_t)i >= n) {
        PyErr_Format(PyExc_IndexError, "node \"%s\" has %zu output(s)", ses_node_name(self->node),
                     n);
        return NULL;
    }
    return py_edge_new(self->graph, ses_node_output(self->node, (uint32_t)i));
}

static PyObject *node_repr(NodeObject *self) {
    return PyUnicode_FromFormat("<%s \"%s\" (%s)>", Py_TYPE(self)->tp_name,
                                ses_node_name(self->node), ses_node_op(self->node));
}

static Py_hash_t node_hash(NodeObject *self) {
    return _Py_HashPointer(self->node);
}

static PyObject *node_richcompare(PyObject *a, PyObject *b, int op) {
    int equal;

    if (!PyObject_TypeCheck(b, &NodeType) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    equal = ((NodeObject *)a)->node == ((NodeObject *)b)->node;
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static PyGetSetDef node_getset[] = {
    {"name", (getter)node_get_name, NULL, "The node's name, unique in its graph.", NULL},
    {"op", (getter)node_get_op, NULL, "The op type, an ONNX name (\"MatMul\") or \"NoOp\".", NULL},
    {"graph", (getter)node_get_graph, NULL, "The Graph the node belongs to.", NULL},
    {"num_inputs", (getter)node_get_num_inputs, NULL, "The number of inputs.", NULL},
    {"outputs", (getter)node_get_outputs, NULL, "The output Edges, a tuple (empty for a NoOp).",
     NULL},
    {"device", (getter)node_get_device, (setter)node_set_device,
     "The device the node is asked to run on (\"gpu:0\"), or None: set it to pin the node; the "
     "session's fallback policy applies when that device has no kernel for it.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef node_methods[] = {
    {"output", (PyCFunction)node_output, METH_O, "output(i) -> Edge: output i of the node."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "session._core.Node",
    .tp_basicsize = sizeof(NodeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A node of a Graph: an op with inputs, attributes and outputs.",
    .tp_new = node_new_direct,
    .tp_dealloc = (destructor)node_dealloc,
    .tp_traverse = (traverseproc)node_traverse,
    .tp_repr = (reprfunc)node_repr,
    .tp_hash = (hashfunc)node_hash,
    .tp_richcompare = node_richcompare,
    .tp_getset = node_getset,
    .tp_methods = node_methods,
};

static int edge_traverse(EdgeObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->graph);
    return 0;
}

static void edge_dealloc(EdgeObject *self) {
    PyObject_GC_UnTrack(self);
    Py_XDECREF(self->graph);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *edge_new_direct(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)type;
    (void)args;
    (void)kwds;
    PyErr_SetString(PyExc_TypeError,
                    "Edges are made by a Graph (Graph.placeholder, Graph.op, Graph.edge)");
    return NULL;
}

static PyObject *edge_get_name(EdgeObject *self, void *closure) {
    (void)closure;
    return PyUnicode_FromFormat("%s:%u", ses_node_name(self->node), (unsigned)self->index);
}

static PyObject *edge_get_node(EdgeObject *self, void *closure) {
    (void)closure;
    return py_node_new(self->graph, self->node);
}

static PyObject *edge_get_index(EdgeObject *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLong(self->index);
}

static PyObject *edge_get_graph(EdgeObject *self, void *closure) {
    (void)closure;
    return Py_NewRef((PyObject *)self->graph);
}

static PyObject *edge_get_op(EdgeObject *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(ses_node_op(self->node));
}

static PyObject *edge_repr(EdgeObject *self) {
    return PyUnicode_FromFormat("<%s \"%s:%u\" (%s)>", Py_TYPE(self)->tp_name,
                                ses_node_name(self->node), (unsigned)self->index,
                                ses_node_op(self->node));
}

static Py_hash_t edge_hash(EdgeObject *self) {
    Py_hash_t h = _Py_HashPointer(self->node) ^ (Py_hash_t)(self->index * 1000003u);
    return h == -1 ? -2 : h;
}

static PyObject *edge_richcompare(PyObject *a, PyObject *b, int op) {
    int equal;

    if (!PyObject_TypeCheck(b, &EdgeType) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    equal = ((EdgeObject *)a)->node == ((EdgeObject *)b)->node &&
            ((EdgeObject *)a)->index == ((EdgeObject *)b)->index;
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static PyGetSetDef edge_getset[] = {
    {"name", (getter)edge_get_name, NULL,
     "The edge's string form, \"node:index\" (what eval and feeds accept as keys).", NULL},
    {"node", (getter)edge_get_node, NULL, "The Node this edge is an output of.", NULL},
    {"index", (getter)edge_get_index, NULL, "Which output of its node this edge is.", NULL},
    {"graph", (getter)edge_get_graph, NULL, "The Graph the edge belongs to.", NULL},
    {"op", (getter)edge_get_op, NULL, "The op type of the edge's node.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject EdgeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "session._core.Edge",
    .tp_basicsize = sizeof(EdgeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An output of a node: (node, index), written \"name:index\".",
    .tp_new = edge_new_direct,
    .tp_dealloc = (destructor)edge_dealloc,
    .tp_traverse = (traverseproc)edge_traverse,
    .tp_repr = (reprfunc)edge_repr,
    .tp_hash = (hashfunc)edge_hash,
    .tp_richcompare = edge_richcompare,
    .tp_getset = edge_getset,
};

/* ---- Graph ------------------------------------------------------------------------------- */

static PyObject *graph_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    GraphObject *self = (GraphObject *)type->tp_alloc(type, 0);

    (void)args;
    (void)kwds;
    if (!self)
        return NULL;
    if (pthread_rwlock_init(&self->lock, NULL) != 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static int graph_init(GraphObject *self, PyObject *args, PyObject *kwds) {
    ses_status_t st;

    (void)args;
    (void)kwds;
    if (self->g)
        return 0; /* __init__ called twice: the graph stays as it is */
    st = ses_graph_create(&self->g);
    if (st != SES_OK) {
        py_raise(st, NULL);
        return -1;
    }
    return 0;
}

static void graph_dealloc(GraphObject *self) {
    if (self->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)self);
    ses_graph_release(self->g);
    pthread_rwlock_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* An optional name: None -> NULL. */
static int opt_name(PyObject *obj, const char **out) {
    if (obj == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "name: expected a str or None, got %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = PyUnicode_AsUTF8(obj);
    return *out ? 0 : -1;
}

/* _placeholder(name, dtype_code, dims) -> Edge; dims: a sequence of ints, -1 for any size. */
static PyObject *graph_placeholder(GraphObject *self, PyObject *args) {
    PyObject *name_obj, *dims_obj, *seq;
    const char *name;
    int dtype;
    int64_t dims[SES_MAX_RANK];
    Py_ssize_t rank;
    ses_edge_t e;
    ses_status_t st;

    if (py_graph_ready(self) < 0 ||
        !PyArg_ParseTuple(args, "OiO:_placeholder", &name_obj, &dtype, &dims_obj))
        return NULL;
    if (opt_name(name_obj, &name) < 0)
        return NULL;
    seq = PySequence_Fast(dims_obj, "shape must be a sequence");
    if (!seq)
        return NULL;
    rank = PySequence_Fast_GET_SIZE(seq);
    if (rank > SES_MAX_RANK) {
        Py_DECREF(seq);
        return py_raise(SES_INVALID_ARGUMENT, "placeholder: more than 8 dimensions");
    }
    for (Py_ssize_t i = 0; i < rank; i++) {
        dims[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (dims[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    if (py_graph_write_lock(self) < 0)
        return NULL;
    st = ses_graph_placeholder(self->g, name, (ses_dtype_t)dtype, (size_t)rank, dims, &e);
    py_graph_write_unlock(self);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_edge_new(self, e);
}

/* _constant(name, array) -> Edge (the array's data is copied). */
static PyObject *graph_constant(GraphObject *self, PyObject *args) {
    PyObject *name_obj, *value;
    const char *name;
    ses_tensor_t *t;
    ses_edge_t e;
    ses_status_t st;

    if (py_graph_ready(self) < 0 || !PyArg_ParseTuple(args, "OO:_constant", &name_obj, &value) ||
        opt_name(name_obj, &name) < 0)
        return NULL;
    if (py_array_to_tensor(value, 1, &t) < 0)
        return NULL;
    if (py_graph_write_lock(self) < 0) {
        ses_tensor_release(t);
        return NULL;
    }
    st = ses_graph_constant(self->g, name, t, &e);
    py_graph_write_unlock(self);
    ses_tensor_release(t);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_edge_new(self, e);
}

/* _variable(name, initializer_edge) -> Edge */
static PyObject *graph_variable(GraphObject *self, PyObject *args) {
    PyObject *name_obj, *init_obj;
    const char *name;
    ses_edge_t init, e;
    ses_status_t st;

    if (py_graph_ready(self) < 0 || !PyArg_ParseTuple(args, "OO:_variable", &name_obj, &init_obj) ||
        opt_name(name_obj, &name) < 0 ||
        py_edge_of(self, init_obj, "variable initializer", &init) < 0)
        return NULL;
    if (py_graph_write_lock(self) < 0)
        return NULL;
    st = ses_graph_variable(self->g, name, init, &e);
    py_graph_write_unlock(self);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_edge_new(self, e);
}

/* Attributes from a sequence of (name, value) pairs. Strings and number arrays are kept alive
 * in @p keep (a list) until the call that reads them is done. */
static int parse_attrs(PyObject *attrs_obj, PyObject *keep, ses_attr_t *attrs, size_t max,
                       size_t *out_n) {
    PyObject *seq = PySequence_Fast(attrs_obj, "attrs must be a sequence of (name, value)");
    Py_ssize_t n;

    if (!seq)
        return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    if ((size_t)n > max) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "at most %zu attributes", max);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i), *name, *value;
        ses_attr_t *a = &attrs[i];

        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 ||
            !PyUnicode_Check(PyTuple_GET_ITEM(item, 0))) {
            PyErr_SetString(PyExc_TypeError, "attrs must be (str, value) pairs");
            goto fail;
        }
        name = PyTuple_GET_ITEM(item, 0);
        value = PyTuple_GET_ITEM(item, 1);
        memset(a, 0, sizeof *a);
        a->name = PyUnicode_AsUTF8(name);
        if (!a->name)
            goto fail;
        if (PyBool_Check(value) || PyLong_Check(value)) {
            a->type = SES_ATTR_INT;
            a->i = PyLong_AsLongLong(value);
            if (a->i == -1 && PyErr_Occurred())
                goto fail;
        } else if (PyFloat_Check(value)) {
            a->type = SES_ATTR_FLOAT;
            a->f = PyFloat_AS_DOUBLE(value);
        } else if (PyUnicode_Check(value)) {
            a->type = SES_ATTR_STRING;
            a->s = PyUnicode_AsUTF8(value);
            if (!a->s)
                goto fail;
        } else {
            /* A sequence of numbers: ints unless one of them is a float. */
            PyObject *vs = PySequence_Fast(value, "");
            Py_ssize_t count;
            int floats = 0;
            PyObject *buffer;

            if (!vs) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError,
                             "attribute \"%s\": expected an int, float, str or a sequence of "
                             "numbers, got %.100s",
                             a->name, Py_TYPE(value)->tp_name);
                goto fail;
            }
            count = PySequence_Fast_GET_SIZE(vs);
            for (Py_ssize_t j = 0; j < count; j++) {
                PyObject *v = PySequence_Fast_GET_ITEM(vs, j);
                if (PyFloat_Check(v) || PyArray_IsScalar(v, Floating))
                    floats = 1;
                else if (!PyLong_Check(v) && !PyArray_IsScalar(v, Integer)) {
                    Py_DECREF(vs);
                    PyErr_Format(PyExc_TypeError, "attribute \"%s\": element %zd is not a number",
                                 a->name, j);
                    goto fail;
                }
            }
            buffer = PyBytes_FromStringAndSize(NULL, (count ? count : 1) * 8);
            if (!buffer || PyList_Append(keep, buffer) < 0) {
                Py_XDECREF(buffer);
                Py_DECREF(vs);
                goto fail;
            }
            Py_DECREF(buffer); /* kept by the list */
            for (Py_ssize_t j = 0; j < count; j++) {
                PyObject *v = PySequence_Fast_GET_ITEM(vs, j);
                if (floats) {
                    double d = PyFloat_AsDouble(v);
                    if (d == -1.0 && PyErr_Occurred()) {
                        Py_DECREF(vs);
                        goto fail;
                    }
                    ((double *)PyBytes_AS_STRING(buffer))[j] = d;
                } else {
                    long long l = PyLong_AsLongLong(v);
                    if (l == -1 && PyErr_Occurred()) {
                        Py_DECREF(vs);
                        goto fail;
                    }
                    ((int64_t *)PyBytes_AS_STRING(buffer))[j] = l;
                }
            }
            Py_DECREF(vs);
            a->count = (size_t)count;
            if (floats) {
                a->type = SES_ATTR_FLOATS;
                a->floats = (const double *)PyBytes_AS_STRING(buffer);
            } else {
                a->type = SES_ATTR_INTS;
                a->ints = (const int64_t *)PyBytes_AS_STRING(buffer);
            }
        }
    }
    Py_DECREF(seq);
    *out_n = (size_t)n;
    return 0;
fail:
    Py_DECREF(seq);
    return -1;
}

#define MAX_ATTRS 64

/* _add_node(op, name, inputs, attrs, n_outputs) -> Node. inputs: Edges, or Nodes for control
 * inputs of a NoOp. */
static PyObject *graph_add_node(GraphObject *self, PyObject *args) {
    PyObject *name_obj, *inputs_obj, *attrs_obj, *seq = NULL, *keep = NULL, *result = NULL;
    const char *op, *name;
    Py_ssize_t n_outputs, n_inputs = 0;
    ses_edge_t *inputs = NULL;
    ses_attr_t attrs[MAX_ATTRS];
    size_t n_attrs = 0;
    ses_node_t *node = NULL;
    ses_status_t st;

    if (py_graph_ready(self) < 0 ||
        !PyArg_ParseTuple(args, "sOOOn:_add_node", &op, &name_obj, &inputs_obj, &attrs_obj,
                          &n_outputs) ||
        opt_name(name_obj, &name) < 0)
        return NULL;
    if (n_outputs < 0) {
        PyErr_SetString(PyExc_ValueError, "n_outputs must be >= 0");
        return NULL;
    }
    seq = PySequence_Fast(inputs_obj, "inputs must be a sequence of Edges");
    keep = PyList_New(0);
    if (!seq || !keep)
        goto done;
    n_inputs = PySequence_Fast_GET_SIZE(seq);
    inputs = PyMem_Calloc((size_t)(n_inputs ? n_inputs : 1), sizeof *inputs);
    if (!inputs) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_inputs; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (PyObject_TypeCheck(item, &NodeType)) {
            ses_node_t *n;
            if (py_node_of(self, item, "control input", &n) < 0)
                goto done;
            inputs[i] = ses_control_edge(n);
        } else if (py_edge_of(self, item, "input", &inputs[i]) < 0) {
            goto done;
        }
    }
    if (parse_attrs(attrs_obj, keep, attrs, MAX_ATTRS, &n_attrs) < 0)
        goto done;
    if (py_graph_write_lock(self) < 0)
        goto done;
    st = ses_graph_add_node(self->g, op, name, inputs, (size_t)n_inputs, attrs, n_attrs,
                            (size_t)n_outputs, &node);
    py_graph_write_unlock(self);
    if (st != SES_OK) {
        py_raise(st, NULL);
        goto done;
    }
    result = py_node_new(self, node);
done:
    PyMem_Free(inputs);
    Py_XDECREF(seq);
    Py_XDECREF(keep);
    return result;
}

/* node(name) -> Node */
static PyObject *graph_node(GraphObject *self, PyObject *args) {
    const char *name;
    ses_node_t *n = NULL;
    ses_status_t st;

    if (py_graph_ready(self) < 0 || !PyArg_ParseTuple(args, "s:node", &name))
        return NULL;
    st = ses_graph_find_node(self->g, name, &n);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_node_new(self, n);
}

/* edge(text) -> Edge */
static PyObject *graph_edge(GraphObject *self, PyObject *args) {
    const char *text;
    ses_edge_t e;
    ses_status_t st;

    if (py_graph_ready(self) < 0 || !PyArg_ParseTuple(args, "s:edge", &text))
        return NULL;
    st = ses_graph_edge(self->g, text, &e);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_edge_new(self, e);
}

/* Nodes from a sequence of Nodes or Edges (their nodes). */
static ses_node_t **nodes_of(GraphObject *self, PyObject *obj, const char *what, size_t *out_n) {
    PyObject *seq = PySequence_Fast(obj, "expected a sequence of Nodes");
    ses_node_t **nodes;
    Py_ssize_t n;

    if (!seq)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    nodes = PyMem_Calloc((size_t)(n ? n : 1), sizeof *nodes);
    if (!nodes) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (py_node_of(self, PySequence_Fast_GET_ITEM(seq, i), what, &nodes[i]) < 0) {
            PyMem_Free(nodes);
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    *out_n = (size_t)n;
    return nodes;
}

/* Edges from a sequence of Edges. */
static ses_edge_t *edges_of(GraphObject *self, PyObject *obj, const char *what, size_t *out_n) {
    PyObject *seq = PySequence_Fast(obj, "expected a sequence of Edges");
    ses_edge_t *edges;
    Py_ssize_t n;

    if (!seq)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    edges = PyMem_Calloc((size_t)(n ? n : 1), sizeof *edges);
    if (!edges) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (py_edge_of(self, PySequence_Fast_GET_ITEM(seq, i), what, &edges[i]) < 0) {
            PyMem_Free(edges);
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    *out_n = (size_t)n;
    return edges;
}

/* _group(name, nodes) -> Node */
static PyObject *graph_group(GraphObject *self, PyObject *args) {
    PyObject *name_obj, *nodes_obj;
    const char *name;
    ses_node_t **nodes, *out = NULL;
    size_t n = 0;
    ses_status_t st;

    if (py_graph_ready(self) < 0 || !PyArg_ParseTuple(args, "OO:_group", &name_obj, &nodes_obj) ||
        opt_name(name_obj, &name) < 0)
        return NULL;
    nodes = nodes_of(self, nodes_obj, "group", &n);
    if (!nodes)
        return NULL;
    if (py_graph_write_lock(self) < 0) {
        PyMem_Free(nodes);
        return NULL;
    }
    st = ses_graph_group(self->g, name, nodes, n, &out);
    py_graph_write_unlock(self);
    PyMem_Free(nodes);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_node_new(self, out);
}

/* _fc(name, x, size, activation_code, seed) -> Edge */
static PyObject *graph_fc(GraphObject *self, PyObject *args) {
    const char *name;
    PyObject *x_obj;
    long long size;
    int activation;
    unsigned long long seed;
    ses_edge_t x, out;
    ses_status_t st;

    if (py_graph_ready(self) < 0 ||
        !PyArg_ParseTuple(args, "sOLiK:_fc", &name, &x_obj, &size, &activation, &seed) ||
        py_edge_of(self, x_obj, "fc input", &x) < 0)
        return NULL;
    if (py_graph_write_lock(self) < 0)
        return NULL;
    st = ses_fc(self->g, name, x, size, (ses_activation_t)activation, seed, &out);
    py_graph_write_unlock(self);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_edge_new(self, out);
}

/* _loss(kind, name, a, b, reduction) -> Edge; kind 0 softmax cross-entropy, 1 mean squared
 * error. */
static PyObject *graph_loss(GraphObject *self, PyObject *args) {
    const char *name;
    PyObject *a_obj, *b_obj;
    int kind, reduction;
    ses_edge_t a, b, out;
    ses_status_t st;

    if (py_graph_ready(self) < 0 ||
        !PyArg_ParseTuple(args, "isOOi:_loss", &kind, &name, &a_obj, &b_obj, &reduction) ||
        py_edge_of(self, a_obj, "loss input", &a) < 0 ||
        py_edge_of(self, b_obj, "loss input", &b) < 0)
        return NULL;
    if (py_graph_write_lock(self) < 0)
        return NULL;
    if (kind == 0)
        st = ses_softmax_cross_entropy(self->g, name, a, b, (ses_reduction_t)reduction, &out);
    else
        st = ses_mean_squared_error(self->g, name, a, b, (ses_reduction_t)reduction, &out);
    py_graph_write_unlock(self);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_edge_new(self, out);
}

/* _gradients(prefix, ys, xs, dys or None) -> list of Edge or None */
static PyObject *graph_gradients(GraphObject *self, PyObject *args) {
    PyObject *prefix_obj, *ys_obj, *xs_obj, *dys_obj, *result = NULL;
    const char *prefix;
    ses_edge_t *ys = NULL, *xs = NULL, *dys = NULL, *dxs = NULL;
    size_t n_ys = 0, n_xs = 0, n_dys = 0;
    ses_status_t st;

    if (py_graph_ready(self) < 0 ||
        !PyArg_ParseTuple(args, "OOOO:_gradients", &prefix_obj, &ys_obj, &xs_obj, &dys_obj) ||
        opt_name(prefix_obj, &prefix) < 0)
        return NULL;
    ys = edges_of(self, ys_obj, "gradients ys", &n_ys);
    xs = ys ? edges_of(self, xs_obj, "gradients xs", &n_xs) : NULL;
    if (!ys || !xs)
        goto done;
    if (dys_obj != Py_None) {
        dys = edges_of(self, dys_obj, "gradients dys", &n_dys);
        if (!dys)
            goto done;
        if (n_dys != n_ys) {
            PyErr_SetString(PyExc_ValueError, "gradients: one dy per y");
            goto done;
        }
    }
    dxs = PyMem_Calloc(n_xs ? n_xs : 1, sizeof *dxs);
    if (!dxs) {
        PyErr_NoMemory();
        goto done;
    }
    if (py_graph_write_lock(self) < 0)
        goto done;
    st = ses_gradients(self->g, prefix, ys, n_ys, xs, n_xs, dys, dxs);
    py_graph_write_unlock(self);
    if (st != SES_OK) {
        py_raise(st, NULL);
        goto done;
    }
    result = PyList_New((Py_ssize_t)n_xs);
    for (size_t i = 0; result && i < n_xs; i++) {
        PyObject *e = py_edge_new(self, dxs[i]);
        if (!e) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, (Py_ssize_t)i, e);
    }
done:
    PyMem_Free(ys);
    PyMem_Free(xs);
    PyMem_Free(dys);
    PyMem_Free(dxs);
    return result;
}

/* _minimize(name, loss, kind, lr, lr_edge|None, momentum, nesterov, beta1, beta2, epsilon,
 *           vars|None, distributed) -> Node */
static PyObject *graph_minimize(GraphObject *self, PyObject *args) {
    const char *name;
    PyObject *loss_obj, *lr_obj, *vars_obj;
    int kind, nesterov, distributed;
    double lr, momentum, beta1, beta2, epsilon;
    ses_optimizer_t opt;
    ses_edge_t loss;
    ses_node_t **vars = NULL, *step = NULL;
    size_t n_vars = 0;
    ses_status_t st;

    if (py_graph_ready(self) < 0 ||
        !PyArg_ParseTuple(args, "sOidOdpdddOp:_minimize", &name, &loss_obj, &kind, &lr, &lr_obj,
                          &momentum, &nesterov, &beta1, &beta2, &epsilon, &vars_obj,
                          &distributed) ||
        py_edge_of(self, loss_obj, "minimize loss", &loss) < 0)
        return NULL;
    switch (kind) {
    case SES_OPTIMIZER_MOMENTUM: ses_optimizer_momentum(&opt, lr, momentum, nesterov); break;
    case SES_OPTIMIZER_ADAM:
        ses_optimizer_adam(&opt, lr);
        opt.beta1 = beta1;
        opt.beta2 = beta2;
        opt.epsilon = epsilon;
        break;
    case SES_OPTIMIZER_SGD: ses_optimizer_sgd(&opt, lr); break;
    default: PyErr_SetString(PyExc_ValueError, "unknown optimizer kind"); return NULL;
    }
    if (lr_obj != Py_None && py_edge_of(self, lr_obj, "learning rate", &opt.learning_rate_edge) < 0)
        return NULL;
    if (vars_obj != Py_None) {
        vars = nodes_of(self, vars_obj, "minimize var_list", &n_vars);
        if (!vars)
            return NULL;
    }
    if (py_graph_write_lock(self) < 0) {
        PyMem_Free(vars);
        return NULL;
    }
    st = (distributed ? ses_minimize_distributed : ses_minimize)(self->g, name, loss, &opt, vars,
                                                                 n_vars, &step);
    py_graph_write_unlock(self);
    PyMem_Free(vars);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_node_new(self, step);
}

static PyObject *graph_get_version(GraphObject *self, void *closure) {
    (void)closure;
    if (py_graph_ready(self) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(ses_graph_version(self->g));
}

static PyMethodDef graph_methods[] = {
    {"_placeholder", (PyCFunction)graph_placeholder, METH_VARARGS, NULL},
    {"_constant", (PyCFunction)graph_constant, METH_VARARGS, NULL},
    {"_variable", (PyCFunction)graph_variable, METH_VARARGS, NULL},
    {"_add_node", (PyCFunction)graph_add_node, METH_VARARGS, NULL},
    {"_group", (PyCFunction)graph_group, METH_VARARGS, NULL},
    {"_fc", (PyCFunction)graph_fc, METH_VARARGS, NULL},
    {"_loss", (PyCFunction)graph_loss, METH_VARARGS, NULL},
    {"_gradients", (PyCFunction)graph_gradients, METH_VARARGS, NULL},
    {"_minimize", (PyCFunction)graph_minimize, METH_VARARGS, NULL},
    {"node", (PyCFunction)graph_node, METH_VARARGS,
     "node(name) -> Node: the node named name; NotFoundError when there is none."},
    {"edge", (PyCFunction)graph_edge, METH_VARARGS,
     "edge(text) -> Edge: the edge \"name\" (output 0) or \"name:index\"; NotFoundError when "
     "there is none."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef graph_getset[] = {
    {"version", (getter)graph_get_version, NULL,
     "A number every change to the graph increases (sessions recompile their plans).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject GraphType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "session._core.Graph",
    .tp_basicsize = sizeof(GraphObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A computation graph (libsession's ses_graph_t).",
    .tp_new = graph_new,
    .tp_init = (initproc)graph_init,
    .tp_dealloc = (destructor)graph_dealloc,
    .tp_weaklistoffset = offsetof(GraphObject, weakrefs),
    .tp_methods = graph_methods,
    .tp_getset = graph_getset,
};
