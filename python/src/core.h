/*
 * session._core: the C extension under the `session` Python package.
 *
 * It maps libsession's public C API onto Python objects: Graph, Node and Edge (graph building),
 * Session and Plan (evaluation), Monitored (the hooked training loop), plus module functions for
 * drivers, devices, ONNX import, task specs and idx files. The pure-Python modules of the package
 * (the .py files of session/) subclass these types and give them the user-facing surface.
 *
 * Rules every entry point follows: arguments are checked before any libsession call (wrong types
 * raise TypeError, objects of another graph raise InvalidArgumentError), the GIL is released
 * around every call that may compute or touch files, and libsession errors become instances of
 * the Error subclass for their status code, carrying ses_last_error()'s message.
 */
#ifndef SESSION_PY_CORE_H
#define SESSION_PY_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL session_core_ARRAY_API
#ifndef SESSION_PY_IMPORTS_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <session/onnx.h>
#include <session/session.h>
#include <session/task.h>

/* ---- graph objects (graph.c) ------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    ses_graph_t *g;
    /* Evaluations hold it for reading (with the GIL released), graph changes for writing: a
     * graph must not change while a session of it compiles (graph.h). */
    pthread_rwlock_t lock;
    PyObject *weakrefs;
} GraphObject;

typedef struct {
    PyObject_HEAD
    GraphObject *graph; /* keeps the node alive: nodes live as long as their graph */
    ses_node_t *node;
} NodeObject;

typedef struct {
    PyObject_HEAD
    GraphObject *graph;
    ses_node_t *node;
    uint32_t index;
} EdgeObject;

extern PyTypeObject GraphType;
extern PyTypeObject NodeType;
extern PyTypeObject EdgeType;

/* The classes new Nodes and Edges are made of: the package's subclasses once registered
 * (_core._set_types), the C types before. Borrowed from the module state (kept alive there). */
extern PyTypeObject *py_node_type;
extern PyTypeObject *py_edge_type;

PyObject *py_edge_new(GraphObject *graph, ses_edge_t edge);
PyObject *py_node_new(GraphObject *graph, ses_node_t *node);
/* The edge of @p obj, which must be an Edge of @p graph; sets an exception and returns -1 if not.
 * @p what names the argument in the message. */
int py_edge_of(GraphObject *graph, PyObject *obj, const char *what, ses_edge_t *out);
/* The node of @p obj, a Node (or an Edge: its node) of @p graph. */
int py_node_of(GraphObject *graph, PyObject *obj, const char *what, ses_node_t **out);
/* Whether graph is set up (its __init__ ran); raises otherwise. */
int py_graph_ready(GraphObject *graph);

/* Read side of the graph lock, taken with the GIL released. Nested reads on one thread are
 * counted, so that a graph change from inside a hook fails cleanly instead of deadlocking. */
void py_graph_read_lock(GraphObject *graph);
void py_graph_read_unlock(GraphObject *graph);
/* Write side, taken with the GIL held (it is dropped while waiting); raises and returns -1 when
 * the calling thread is inside an evaluation of a graph. */
int py_graph_write_lock(GraphObject *graph);
void py_graph_write_unlock(GraphObject *graph);

/* ---- sessions (session.c), the monitored loop (monitored.c) ------------------------------- */

typedef struct {
    PyObject_HEAD
    ses_session_t *s;
    GraphObject *graph;
    PyObject *weakrefs;
} SessionObject;

extern PyTypeObject SessionType;
extern PyTypeObject PlanType;
extern PyTypeObject MonitoredType;
extern PyTypeObject RunContextType;

int py_session_ready(SessionObject *self);

/* ---- errors and tensors (core.c) --------------------------------------------------------- */

/* Raises the Error subclass of @p status with @p message (NULL: ses_last_error()). Returns NULL
 * so that callers may `return py_raise(st, NULL);`. */
PyObject *py_raise(ses_status_t status, const char *message);
/* A copy of ses_last_error(), taken right after a failed call (before anything else may run on
 * this thread); free it with free(). Never NULL. */
char *py_error_copy(void);
/* Raises from a copy made by py_error_copy and frees it. */
PyObject *py_raise_copied(ses_status_t status, char *message);

/* The tensor @p t (a reference the caller gives up) as a NumPy array, without a copy: the array
 * keeps the tensor alive. bf16 comes out as uint16 bit patterns. NULL with an exception set. */
PyObject *py_tensor_to_array(ses_tensor_t *t);
/* @p obj (anything NumPy takes: an ndarray, the buffer protocol, __array_interface__, nested
 * sequences) as a new tensor. @p copy 0: the tensor wraps the array's memory when it is
 * C-contiguous, aligned and native-endian, and keeps the array alive. */
int py_array_to_tensor(PyObject *obj, int copy, ses_tensor_t **out);
/* The NumPy type number of @p dtype, or -1. */
int py_npy_type_of(ses_dtype_t dtype);

/* ---- device tensors and DLPack (dlpack.c) ------------------------------------------------ */

extern PyTypeObject DeviceTensorType;
/* A DeviceTensor holding @p t (a reference the caller gives up). */
PyObject *py_device_tensor_new(ses_tensor_t *t);
/* The tensor of @p obj if it is a DeviceTensor (borrowed), else NULL. */
ses_tensor_t *py_device_tensor_of(PyObject *obj);
/* A feed with __dlpack__ that lives on a device (not the CPU) as a tensor of @p s: 1 with *out
 * set, 0 when it is not such an object (NumPy takes it), -1 with an exception. */
int py_dlpack_feed(ses_session_t *s, PyObject *obj, ses_tensor_t **out);

#endif /* SESSION_PY_CORE_H */
