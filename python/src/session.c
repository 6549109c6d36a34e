/*
 * session._core: Session (open, eval, compile, variables, checkpoints, close) and Plan.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

int py_session_ready(SessionObject *self) {
    if (!self->s) {
        py_raise(SES_FAILED_PRECONDITION,
                 "the session was not opened (Session.__init__ failed "
                 "or was not called)");
        return -1;
    }
    return 0;
}

/* ---- Session ----------------------------------------------------------------------------- */

static PyObject *session_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)args;
    (void)kwds;
    return type->tp_alloc(type, 0);
}

/* __init__(graph, devices, fallback, threads, log_level, fusion, graphs, driver_options,
 * layout, in_place, fold): log_level, fusion, graphs, layout, in_place and fold -1 keep
 * libsession's defaults. */
static int session_init(SessionObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"graph",  "devices", "fallback",       "threads", "log_level",
                             "fusion", "graphs",  "driver_options", "layout",  "in_place",
                             "fold",   NULL};
    PyObject *graph_obj, *devices_obj = Py_None, *options_obj = Py_None;
    PyObject *devices_seq = NULL, *options_seq = NULL;
    int fallback = SES_FALLBACK_WARN, log_level = -1, fusion = -1, graphs = -1, layout = -1;
    int in_place = -1, fold = -1;
    unsigned int threads = 0;
    const char **devices = NULL, **driver_options = NULL;
    Py_ssize_t n_devices = 0, n_options = 0;
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_status_t st;
    char *err = NULL;
    int rc = -1;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!|OiIiiiOiii:Session", kwlist, &GraphType,
                                     &graph_obj, &devices_obj, &fallback, &threads, &log_level,
                                     &fusion, &graphs, &options_obj, &layout, &in_place, &fold))
        return -1;
    if (self->s) {
        py_raise(SES_FAILED_PRECONDITION, "Session.__init__: the session is open already");
        return -1;
    }
    if (py_graph_ready((GraphObject *)graph_obj) < 0)
        return -1;
    if (fallback < SES_FALLBACK_ALLOW || fallback > SES_FALLBACK_DENY) {
        PyErr_SetString(PyExc_ValueError, "fallback: 0 allow, 1 warn or 2 deny");
        return -1;
    }
    if (devices_obj != Py_None) {
        devices_seq = PySequence_Fast(devices_obj, "devices must be a sequence of str");
        if (!devices_seq)
            goto done;
        n_devices = PySequence_Fast_GET_SIZE(devices_seq);
        devices = PyMem_Calloc((size_t)(n_devices ? n_devices : 1), sizeof *devices);
        if (!devices) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n_devices; i++) {
            PyObject *d = PySequence_Fast_GET_ITEM(devices_seq, i);
            if (!PyUnicode_Check(d)) {
                PyErr_Format(PyExc_TypeError, "devices: expected str, got %.100s",
                             Py_TYPE(d)->tp_name);
                goto done;
            }
            devices[i] = PyUnicode_AsUTF8(d);
            if (!devices[i])
                goto done;
        }
    }
    if (options_obj != Py_None) {
        options_seq = PySequence_Fast(options_obj, "driver_options must be a sequence of str");
        if (!options_seq)
            goto done;
        n_options = PySequence_Fast_GET_SIZE(options_seq);
        driver_options = PyMem_Calloc((size_t)(n_options ? n_options : 1), sizeof *driver_options);
        if (!driver_options) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n_options; i++) {
            PyObject *o = PySequence_Fast_GET_ITEM(options_seq, i);
            if (!PyUnicode_Check(o)) {
                PyErr_Format(PyExc_TypeError, "driver_options: expected str, got %.100s",
                             Py_TYPE(o)->tp_name);
                goto done;
            }
            driver_options[i] = PyUnicode_AsUTF8(o);
            if (!driver_options[i])
                goto done;
        }
    }
    ses_session_options_init(&so);
    so.fallback = (ses_fallback_t)fallback;
    so.threads = threads;
    if (log_level >= 0)
        so.log_level = (uint32_t)log_level;
    if (fusion >= 0)
        so.fusion = (uint32_t)fusion;
    if (graphs >= 0)
        so.graphs = (uint32_t)graphs;
    if (layout >= 0)
        so.layout = (uint32_t)layout;
    if (in_place >= 0)
        so.in_place = (uint32_t)in_place;
    if (fold >= 0)
        so.fold = (uint32_t)fold;
    so.driver_options = driver_options;
    so.n_driver_options = (size_t)n_options;

    Py_BEGIN_ALLOW_THREADS
    st = ses_session_open(((GraphObject *)graph_obj)->g, devices, (size_t)n_devices, &so, &s);
    if (st != SES_OK)
        err = py_error_copy();
    Py_END_ALLOW_THREADS
    if (st != SES_OK) {
        py_raise_copied(st, err);
        goto done;
    }
    self->s = s;
    Py_INCREF(graph_obj);
    Py_XSETREF(self->graph, (GraphObject *)graph_obj);
    rc = 0;
done:
    PyMem_Free(devices);
    PyMem_Free(driver_options);
    Py_XDECREF(devices_seq);
    Py_XDECREF(options_seq);
    return rc;
}

/* Sessions and Plans are tracked by the cycle collector so that cycles through their graph and
 * session links (a Session kept in its Graph's __dict__, a Plan in its Session's) are freed. */
static int session_traverse(SessionObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->graph);
    return 0;
}

static void session_dealloc(SessionObject *self) {
    ses_session_t *s = self->s;

    PyObject_GC_UnTrack(self);
    if (self->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)self);
    self->s = NULL;
    if (s) {
        /* Closing frees device memory and may release tensors that wrap arrays (their deleters
         * take the GIL). */
        Py_BEGIN_ALLOW_THREADS
        ses_session_destroy(s);
        Py_END_ALLOW_THREADS
    }
    Py_XDECREF(self->graph);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Feeds from parallel sequences of Edges and values. The tensors wrap the values' memory. */
typedef struct {
    ses_edge_t *fetches;
    size_t n_fetches;
    ses_feed_t *feeds;
    size_t n_feeds;
    ses_node_t **targets;
    size_t n_targets;
    ses_tensor_t **out;
} call_args_t;

static void call_args_free(call_args_t *a) {
    if (a->feeds)
        for (size_t i = 0; i < a->n_feeds; i++)
            ses_tensor_release(a->feeds[i].value);
    if (a->out)
        for (size_t i = 0; i < a->n_fetches; i++)
            ses_tensor_release(a->out[i]);
    PyMem_Free(a->fetches);
    PyMem_Free(a->feeds);
    PyMem_Free(a->targets);
    PyMem_Free(a->out);
    memset(a, 0, sizeof *a);
}

/* One item of a sequence into slot @p i of @p out (an array of the item type). */
typedef int (*item_fn)(GraphObject *g, PyObject *item, const char *what, void *out, size_t i);

static int edge_item(GraphObject *g, PyObject *item, const char *what, void *out, size_t i) {
    return py_edge_of(g, item, what, &((ses_edge_t *)out)[i]);
}

static int node_item(GraphObject *g, PyObject *item, const char *what, void *out, size_t i) {
    return py_node_of(g, item, what, &((ses_node_t **)out)[i]);
}

/* The items of sequence @p obj, each through @p fn, into a new array of @p size-byte slots. */
static int parse_items(GraphObject *g, PyObject *obj, const char *what, const char *expected,
                       size_t size, item_fn fn, void **out, size_t *out_n) {
    PyObject *seq = PySequence_Fast(obj, expected);
    Py_ssize_t n;

    if (!seq)
        return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    *out = PyMem_Calloc((size_t)(n ? n : 1), size);
    if (!*out) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    *out_n = (size_t)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (fn(g, PySequence_Fast_GET_ITEM(seq, i), what, *out, (size_t)i) < 0) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static int parse_edges(GraphObject *g, PyObject *obj, const char *what, ses_edge_t **out,
                       size_t *out_n) {
    void *items = NULL;
    int rc = parse_items(g, obj, what, "expected a sequence of Edges", sizeof **out, edge_item,
                         &items, out_n);
    *out = items;
    return rc;
}

static int parse_nodes(GraphObject *g, PyObject *obj, const char *what, ses_node_t ***out,
                       size_t *out_n) {
    void *items = NULL;
    int rc = parse_items(g, obj, what, "expected a sequence of Nodes", sizeof **out, node_item,
                         &items, out_n);
    *out = items;
    return rc;
}

/* Tensors for the values in @p values_obj (a sequence), wrapping their memory. */
/* Feed values: a DeviceTensor as it is (its session reads it in place), an object with
 * __dlpack__ on a device through DLPack (@p s), anything else as NumPy takes it. */
static int parse_values(ses_session_t *s, PyObject *values_obj, ses_tensor_t ***out,
                        size_t *out_n) {
    PyObject *seq = PySequence_Fast(values_obj, "expected a sequence of values");
    Py_ssize_t n;

    if (!seq)
        return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    *out = PyMem_Calloc((size_t)(n ? n : 1), sizeof **out);
    if (!*out) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    *out_n = (size_t)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PySequence_Fast_GET_ITEM(seq, i);
        ses_tensor_t *d = py_device_tensor_of(v);
        int rc = 0;
        if (d) {
            (*out)[i] = ses_tensor_retain(d);
            continue;
        }
        if (s && (rc = py_dlpack_feed(s, v, &(*out)[i])) != 0) {
            if (rc < 0) {
                Py_DECREF(seq);
                return -1;
            }
            continue;
        }
        if (py_array_to_tensor(v, 0, &(*out)[i]) < 0) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static void release_tensors(ses_tensor_t **t, size_t n) {
    if (t)
        for (size_t i = 0; i < n; i++)
            ses_tensor_release(t[i]);
    PyMem_Free(t);
}

/* A list of arrays from @p out[@p n], taking the tensors (their slots become NULL); with
 * @p device, a device tensor becomes a DeviceTensor instead of coming home. */
static PyObject *arrays_of(ses_tensor_t **out, size_t n, int device) {
    PyObject *list = PyList_New((Py_ssize_t)n);

    if (!list)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *a = device && ses_tensor_is_device(out[i]) ? py_device_tensor_new(out[i])
                                                             : py_tensor_to_array(out[i]);
        out[i] = NULL;
        if (!a) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, a);
    }
    return list;
}

/* _eval(fetches, feed_edges, feed_values, targets, private[, device_fetches]) -> list of arrays
 * (and DeviceTensors with device_fetches) */
static PyObject *session_eval(SessionObject *self, PyObject *args) {
    PyObject *fetches_obj, *feed_edges_obj, *feed_values_obj, *targets_obj, *result = NULL;
    int private_scope = 0, device_fetches = 0;
    call_args_t a;
    ses_eval_options_t eo;
    ses_edge_t *feed_edges = NULL;
    ses_tensor_t **feed_values = NULL;
    size_t n_feed_edges = 0, n_feed_values = 0;
    ses_status_t st;
    char *err = NULL;

    memset(&a, 0, sizeof a);
    if (py_session_ready(self) < 0 ||
        !PyArg_ParseTuple(args, "OOOOp|p:_eval", &fetches_obj, &feed_edges_obj, &feed_values_obj,
                          &targets_obj, &private_scope, &device_fetches))
        return NULL;
    if (parse_edges(self->graph, fetches_obj, "fetch", &a.fetches, &a.n_fetches) < 0 ||
        parse_edges(self->graph, feed_edges_obj, "feed", &feed_edges, &n_feed_edges) < 0 ||
        parse_nodes(self->graph, targets_obj, "target", &a.targets, &a.n_targets) < 0 ||
        parse_values(self->s, feed_values_obj, &feed_values, &n_feed_values) < 0)
        goto done;
    if (n_feed_edges != n_feed_values) {
        PyErr_SetString(PyExc_ValueError, "_eval: one value per fed edge");
        goto done;
    }
    a.n_feeds = n_feed_edges;
    a.feeds = PyMem_Calloc(a.n_feeds ? a.n_feeds : 1, sizeof *a.feeds);
    a.out = PyMem_Calloc(a.n_fetches ? a.n_fetches : 1, sizeof *a.out);
    if (!a.feeds || !a.out) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < a.n_feeds; i++) {
        a.feeds[i].edge = feed_edges[i];
        a.feeds[i].value = feed_values[i];
        feed_values[i] = NULL;
    }
    memset(&eo, 0, sizeof eo);
    eo.struct_size = sizeof eo;
    eo.private_scope = private_scope;
    eo.device_fetches = device_fetches;

    Py_BEGIN_ALLOW_THREADS
    py_graph_read_lock(self->graph);
    st = ses_session_eval_ex(self->s, a.fetches, a.n_fetches, a.feeds, a.n_feeds, a.targets,
                             a.n_targets, &eo, a.out);
    if (st != SES_OK)
        err = py_error_copy();
    py_graph_read_unlock(self->graph);
    Py_END_ALLOW_THREADS
    if (st != SES_OK) {
        py_raise_copied(st, err);
        goto done;
    }
    result = arrays_of(a.out, a.n_fetches, device_fetches);
done:
    PyMem_Free(feed_edges);
    release_tensors(feed_values, n_feed_values);
    call_args_free(&a);
    return result;
}

static PyObject *session_close(SessionObject *self, PyObject *unused) {
    (void)unused;
    if (self->s) {
        /* Waits for evals in flight, whose hooks may need the GIL. */
        Py_BEGIN_ALLOW_THREADS
        ses_session_close(self->s);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyObject *session_get_closed(SessionObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(!ses_session_is_open(self->s));
}

static PyObject *session_get_graph(SessionObject *self, void *closure) {
    (void)closure;
    if (!self->graph)
        Py_RETURN_NONE;
    return Py_NewRef((PyObject *)self->graph);
}

static PyObject *session_get_kernel_calls(SessionObject *self, void *closure) {
    (void)closure;
    if (py_session_ready(self) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(ses_session_kernel_calls(self->s));
}

static PyObject *stats_dict(const ses_transfer_stats_t *t) {
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "runs", t->runs, "h2d_bytes",
                         t->h2d_bytes, "h2d_copies", t->h2d_copies, "d2h_bytes", t->d2h_bytes,
                         "d2h_copies", t->d2h_copies, "d2d_bytes", t->d2d_bytes, "d2d_copies",
                         t->d2d_copies);
}

static PyObject *session_transfers(SessionObject *self, PyObject *unused) {
    ses_transfer_stats_t t;
    ses_status_t st;

    (void)unused;
    if (py_session_ready(self) < 0)
        return NULL;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    st = ses_session_transfers(self->s, &t);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return stats_dict(&t);
}

static PyObject *session_initialize_variables(SessionObject *self, PyObject *unused) {
    ses_status_t st;
    char *err = NULL;

    (void)unused;
    if (py_session_ready(self) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    py_graph_read_lock(self->graph);
    st = ses_session_initialize_variables(self->s);
    if (st != SES_OK)
        err = py_error_copy();
    py_graph_read_unlock(self->graph);
    Py_END_ALLOW_THREADS
    if (st != SES_OK)
        return py_raise_copied(st, err);
    Py_RETURN_NONE;
}

static PyObject *session_copy_variables_from(SessionObject *self, PyObject *arg) {
    SessionObject *from;
    ses_status_t st;
    char *err = NULL;

    if (py_session_ready(self) < 0)
        return NULL;
    if (!PyObject_TypeCheck(arg, &SessionType)) {
        PyErr_Format(PyExc_TypeError, "copy_variables_from: expected a Session, got %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    from = (SessionObject *)arg;
    if (py_session_ready(from) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    st = ses_session_copy_variables(self->s, from->s);
    if (st != SES_OK)
        err = py_error_copy();
    Py_END_ALLOW_THREADS
    if (st != SES_OK)
        return py_raise_copied(st, err);
    Py_RETURN_NONE;
}

/* ---- variables (the root scope) ---------------------------------------------------------- */

static PyObject *session_var_names(SessionObject *self, PyObject *unused) {
    ses_scope_t *scope;
    PyObject *list;
    size_t n;

    (void)unused;
    if (py_session_ready(self) < 0)
        return NULL;
    scope = ses_session_scope(self->s);
    list = PyList_New(0);
    n = ses_scope_count(scope);
    for (size_t i = 0; list && i < n; i++) {
        const char *name = ses_scope_name_at(scope, i);
        PyObject *s;
        if (!name)
            continue;
        s = PyUnicode_FromString(name);
        if (!s || PyList_Append(list, s) < 0) {
            Py_XDECREF(s);
            Py_CLEAR(list);
        }
        Py_XDECREF(s);
    }
    return list;
}

/* _var_get(name) -> ndarray (a copy) or None when the scope has no such entry. */
static PyObject *session_var_get(SessionObject *self, PyObject *args) {
    const char *name;
    ses_tensor_t *t = NULL, *copy = NULL;
    ses_status_t st;

    if (py_session_ready(self) < 0 || !PyArg_ParseTuple(args, "s:_var_get", &name))
        return NULL;
    st = ses_scope_find(ses_session_scope(self->s), name, &t);
    if (st == SES_NOT_FOUND)
        Py_RETURN_NONE;
    if (st != SES_OK)
        return py_raise(st, NULL);
    /* A copy: writing into the array must not change the variable behind the session's back
     * (a device copy would not see it). */
    st = ses_tensor_copy_to_host(t, &copy);
    ses_tensor_release(t);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_tensor_to_array(copy);
}

/* _var_set(name, array): the array's data is copied. */
static PyObject *session_var_set(SessionObject *self, PyObject *args) {
    const char *name;
    PyObject *value;
    ses_tensor_t *t;
    ses_status_t st;

    if (py_session_ready(self) < 0 || !PyArg_ParseTuple(args, "sO:_var_set", &name, &value))
        return NULL;
    if (!ses_session_is_open(self->s))
        return py_raise(SES_FAILED_PRECONDITION, "variables: the session is closed");
    if (py_array_to_tensor(value, 1, &t) < 0)
        return NULL;
    st = ses_scope_set(ses_session_scope(self->s), name, t);
    ses_tensor_release(t);
    if (st != SES_OK)
        return py_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *session_var_del(SessionObject *self, PyObject *args) {
    const char *name;
    ses_status_t st;

    if (py_session_ready(self) < 0 || !PyArg_ParseTuple(args, "s:_var_del", &name))
        return NULL;
    st = ses_scope_remove(ses_session_scope(self->s), name);
    if (st == SES_NOT_FOUND)
        Py_RETURN_FALSE;
    if (st != SES_OK)
        return py_raise(st, NULL);
    Py_RETURN_TRUE;
}

/* ---- checkpoints ------------------------------------------------------------------------- */

/* _save(path, step, folder, keep_last): folder 0 writes one safetensors file, 1 a checkpoint in
 * folder path. */
static PyObject *session_save(SessionObject *self, PyObject *args) {
    PyObject *path_obj;
    unsigned long long step;
    int folder;
    unsigned int keep_last;
    ses_status_t st;
    char *err = NULL;

    if (py_session_ready(self) < 0 || !PyArg_ParseTuple(args, "O&KpI:_save", PyUnicode_FSConverter,
                                                        &path_obj, &step, &folder, &keep_last))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    py_graph_read_lock(self->graph);
    if (folder)
        st = ses_checkpoint_save(self->s, PyBytes_AS_STRING(path_obj), step, keep_last);
    else
        st = ses_session_save(self->s, PyBytes_AS_STRING(path_obj), step);
    if (st != SES_OK)
        err = py_error_copy();
    py_graph_read_unlock(self->graph);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (st != SES_OK)
        return py_raise_copied(st, err);
    Py_RETURN_NONE;
}

/* _restore(path, folder, allow_missing) -> step */
static PyObject *session_restore(SessionObject *self, PyObject *args) {
    PyObject *path_obj;
    int folder, allow_missing;
    uint64_t step = 0;
    ses_status_t st;
    char *err = NULL;

    if (py_session_ready(self) < 0 ||
        !PyArg_ParseTuple(args, "O&pp:_restore", PyUnicode_FSConverter, &path_obj, &folder,
                          &allow_missing))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    py_graph_read_lock(self->graph);
    if (folder)
        st = ses_checkpoint_restore_latest(self->s, PyBytes_AS_STRING(path_obj), &step);
    else
        st = ses_session_restore(self->s, PyBytes_AS_STRING(path_obj), allow_missing, &step);
    if (st != SES_OK)
        err = py_error_copy();
    py_graph_read_unlock(self->graph);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (st != SES_OK)
        return py_raise_copied(st, err);
    return PyLong_FromUnsignedLongLong(step);
}

/* ---- Plan -------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    SessionObject *session; /* the plan belongs to it: ses_session_destroy would free it */
    ses_plan_t *plan;
    size_t n_fetches;
    size_t n_feeds;
    /* Runs of one plan are serialized by libsession; placement reads must not meet a run's
     * recompile, so both take this lock. */
    pthread_mutex_t lock;
} PlanObject;

/* _compile(fetches, fed_edges, targets) -> _core.Plan */
static PyObject *session_compile(SessionObject *self, PyObject *args) {
    PyObject *fetches_obj, *fed_obj, *targets_obj;
    ses_edge_t *fetches = NULL, *fed = NULL;
    ses_node_t **targets = NULL;
    size_t n_fetches = 0, n_fed = 0, n_targets = 0;
    ses_plan_t *plan = NULL;
    PlanObject *po = NULL;
    ses_status_t st;
    char *err = NULL;

    if (py_session_ready(self) < 0 ||
        !PyArg_ParseTuple(args, "OOO:_compile", &fetches_obj, &fed_obj, &targets_obj))
        return NULL;
    if (parse_edges(self->graph, fetches_obj, "fetch", &fetches, &n_fetches) < 0 ||
        parse_edges(self->graph, fed_obj, "feed", &fed, &n_fed) < 0 ||
        parse_nodes(self->graph, targets_obj, "target", &targets, &n_targets) < 0)
        goto done;
    po = (PlanObject *)PlanType.tp_alloc(&PlanType, 0);
    if (!po)
        goto done;
    if (pthread_mutex_init(&po->lock, NULL) != 0) {
        Py_CLEAR(po);
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    py_graph_read_lock(self->graph);
    st = ses_session_compile(self->s, fetches, n_fetches, fed, n_fed, targets, n_targets, &plan);
    if (st != SES_OK)
        err = py_error_copy();
    py_graph_read_unlock(self->graph);
    Py_END_ALLOW_THREADS
    if (st != SES_OK) {
        Py_CLEAR(po);
        py_raise_copied(st, err);
        goto done;
    }
    Py_INCREF(self);
    po->session = self;
    po->plan = plan;
    po->n_fetches = n_fetches;
    po->n_feeds = n_fed;
done:
    PyMem_Free(fetches);
    PyMem_Free(fed);
    PyMem_Free(targets);
    return (PyObject *)po;
}

static int plan_traverse(PlanObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->session);
    return 0;
}

static void plan_dealloc(PlanObject *self) {
    PyObject_GC_UnTrack(self);
    if (self->plan) {
        Py_BEGIN_ALLOW_THREADS
        ses_plan_destroy(self->plan);
        Py_END_ALLOW_THREADS
        self->plan = NULL;
    }
    if (self->session)
        pthread_mutex_destroy(&self->lock);
    Py_XDECREF(self->session);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *plan_new_direct(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)type;
    (void)args;
    (void)kwds;
    PyErr_SetString(PyExc_TypeError, "Plans are made by Session.compile");
    return NULL;
}

static int plan_ready(PlanObject *self) {
    if (!self->plan) {
        py_raise(SES_FAILED_PRECONDITION, "the plan was closed");
        return -1;
    }
    return 0;
}

/* _run(values, prepare_only) -> list of arrays (None when prepare_only) */
static PyObject *plan_run(PlanObject *self, PyObject *args) {
    PyObject *values_obj, *result = NULL;
    int prepare_only = 0;
    ses_tensor_t **values = NULL, **out = NULL;
    size_t n_values = 0;
    ses_status_t st;
    char *err = NULL;

    if (plan_ready(self) < 0 || !PyArg_ParseTuple(args, "Op:_run", &values_obj, &prepare_only))
        return NULL;
    if (parse_values(self->session->s, values_obj, &values, &n_values) < 0)
        goto done;
    if (n_values != self->n_feeds) {
        char message[128];
        snprintf(message, sizeof message, "plan: %zu value(s) given for %zu fed edge(s)", n_values,
                 self->n_feeds);
        py_raise(SES_INVALID_ARGUMENT, message);
        goto done;
    }
    out = PyMem_Calloc(self->n_fetches ? self->n_fetches : 1, sizeof *out);
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&self->lock);
    py_graph_read_lock(self->session->graph);
    if (prepare_only)
        st = ses_plan_prepare(self->plan, values, n_values);
    else
        st = ses_plan_run(self->plan, values, n_values, out);
    if (st != SES_OK)
        err = py_error_copy();
    py_graph_read_unlock(self->session->graph);
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    if (st != SES_OK) {
        py_raise_copied(st, err);
        goto done;
    }
    if (prepare_only)
        result = Py_NewRef(Py_None);
    else
        result = arrays_of(out, self->n_fetches, 0);
done:
    release_tensors(values, n_values);
    release_tensors(out, out ? self->n_fetches : 0);
    return result;
}

static PyObject *plan_get_placement(PlanObject *self, void *closure) {
    const char *p;
    PyObject *s;

    (void)closure;
    if (plan_ready(self) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&self->lock);
    Py_END_ALLOW_THREADS
    p = ses_plan_placement(self->plan);
    s = PyUnicode_FromString(p ? p : "");
    pthread_mutex_unlock(&self->lock);
    return s;
}

static PyObject *plan_get_step_count(PlanObject *self, void *closure) {
    size_t n;

    (void)closure;
    if (plan_ready(self) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&self->lock);
    n = ses_plan_step_count(self->plan);
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    return PyLong_FromSize_t(n);
}

static PyObject *plan_node_device(PlanObject *self, PyObject *arg) {
    ses_node_t *node;
    const char *d;
    PyObject *s;

    if (plan_ready(self) < 0 || py_node_of(self->session->graph, arg, "node_device", &node) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&self->lock);
    Py_END_ALLOW_THREADS
    d = ses_plan_node_device(self->plan, node);
    s = d ? PyUnicode_FromString(d) : Py_NewRef(Py_None);
    pthread_mutex_unlock(&self->lock);
    return s;
}

static PyObject *plan_transfers(PlanObject *self, PyObject *unused) {
    ses_transfer_stats_t t;
    ses_status_t st;

    (void)unused;
    if (plan_ready(self) < 0)
        return NULL;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    Py_BEGIN_ALLOW_THREADS
    st = ses_plan_transfers(self->plan, &t);
    Py_END_ALLOW_THREADS
    if (st != SES_OK)
        return py_raise(st, NULL);
    return stats_dict(&t);
}

static PyObject *plan_close(PlanObject *self, PyObject *unused) {
    ses_plan_t *plan = self->plan;

    (void)unused;
    if (plan) {
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&self->lock);
        self->plan = NULL;
        pthread_mutex_unlock(&self->lock);
        ses_plan_destroy(plan);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyMethodDef plan_methods[] = {
    {"_run", (PyCFunction)plan_run, METH_VARARGS, NULL},
    {"node_device", (PyCFunction)plan_node_device, METH_O,
     "node_device(node) -> str or None: the device the plan placed node on (\"cpu:0\"), None "
     "when it does not run."},
    {"transfers", (PyCFunction)plan_transfers, METH_NOARGS,
     "transfers() -> dict: bytes and copies every run of the plan moved between host and "
     "devices so far (runs, h2d_bytes, h2d_copies, d2h_..., d2d_...)."},
    {"close", (PyCFunction)plan_close, METH_NOARGS,
     "close(): frees the plan now (runs fail afterwards)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef plan_getset[] = {
    {"placement", (getter)plan_get_placement, NULL,
     "The placement summary: nodes per device, then each node that fell back and why.", NULL},
    {"step_count", (getter)plan_get_step_count, NULL,
     "Steps (kernel launches and copies) one run makes.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "session._core.Plan",
    .tp_basicsize = sizeof(PlanObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A compiled plan of a session (ses_plan_t).",
    .tp_new = plan_new_direct,
    .tp_dealloc = (destructor)plan_dealloc,
    .tp_traverse = (traverseproc)plan_traverse,
    .tp_methods = plan_methods,
    .tp_getset = plan_getset,
};

/* ---- the Session type -------------------------------------------------------------------- */

static PyMethodDef session_methods[] = {
    {"_eval", (PyCFunction)session_eval, METH_VARARGS, NULL},
    {"_compile", (PyCFunction)session_compile, METH_VARARGS, NULL},
    {"_var_names", (PyCFunction)session_var_names, METH_NOARGS, NULL},
    {"_var_get", (PyCFunction)session_var_get, METH_VARARGS, NULL},
    {"_var_set", (PyCFunction)session_var_set, METH_VARARGS, NULL},
    {"_var_del", (PyCFunction)session_var_del, METH_VARARGS, NULL},
    {"_save", (PyCFunction)session_save, METH_VARARGS, NULL},
    {"_restore", (PyCFunction)session_restore, METH_VARARGS, NULL},
    {"close", (PyCFunction)session_close, METH_NOARGS,
     "close(): waits for evals in flight, frees plans and device memory and empties the "
     "variables. Later evals raise FailedPreconditionError. Closing twice is allowed."},
    {"transfers", (PyCFunction)session_transfers, METH_NOARGS,
     "transfers() -> dict: bytes and copies every eval and plan moved between host and devices "
     "since the session opened."},
    {"initialize_variables", (PyCFunction)session_initialize_variables, METH_NOARGS,
     "initialize_variables(): sets every variable the scope does not hold yet from its "
     "initializer (evals do this on demand)."},
    {"copy_variables_from", (PyCFunction)session_copy_variables_from, METH_O,
     "copy_variables_from(other): copies other's variables (of its graph) into this session."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef session_getset[] = {
    {"closed", (getter)session_get_closed, NULL, "True once the session is closed (or lost).",
     NULL},
    {"graph", (getter)session_get_graph, NULL, "The Graph the session evaluates.", NULL},
    {"kernel_calls", (getter)session_get_kernel_calls, NULL,
     "Kernel computes the session has called so far.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject SessionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "session._core.Session",
    .tp_basicsize = sizeof(SessionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An open session on a graph (ses_session_t).",
    .tp_new = session_new,
    .tp_init = (initproc)session_init,
    .tp_dealloc = (destructor)session_dealloc,
    .tp_traverse = (traverseproc)session_traverse,
    .tp_weaklistoffset = offsetof(SessionObject, weakrefs),
    .tp_methods = session_methods,
    .tp_getset = session_getset,
};
