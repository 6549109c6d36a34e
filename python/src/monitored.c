/*
 * session._core: Monitored (ses_monitored_t, the hooked training loop) and RunContext (what a
 * Python hook sees in before_run and after_run).
 *
 * Python hooks are ses_hook_t structs whose callbacks take the GIL and call the hook object's
 * methods; the loop itself runs with the GIL released. An exception a hook raises fails the
 * callback (the loop stops as libsession documents) and is raised again, unchanged, from the
 * Monitored call that ran the hook.
 */
#include "core.h"

#include <string.h>

typedef struct MonitoredObject MonitoredObject;

/* A Python hook: the ses_hook_t libsession calls, and the object it calls on. */
typedef struct {
    ses_hook_t hook; /* first: libsession hands this pointer to the callbacks */
    PyObject *obj;
    PyObject *name; /* a str kept alive for hook.name */
    MonitoredObject *owner;
} py_hook_t;

struct MonitoredObject {
    PyObject_HEAD
    SessionObject *session;
    ses_monitored_t *m;
    py_hook_t **py_hooks; /* freed after the monitored session is destroyed */
    size_t n_py_hooks;
    PyObject *exc; /* the first exception a hook raised during the current call */
};

typedef struct {
    PyObject_HEAD
    MonitoredObject *owner;
    ses_run_args_t *args; /* valid only during the callback; NULL after */
    int after;            /* 1 in after_run: values readable, nothing may be added */
} RunContextObject;

/* ---- RunContext -------------------------------------------------------------------------- */

/* RunContext and Monitored are tracked by the cycle collector: a hook that keeps its run context,
 * or the MonitoredSession that runs it, makes a cycle through their C links. */
static int run_context_traverse(RunContextObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->owner);
    return 0;
}

static void run_context_dealloc(RunContextObject *self) {
    PyObject_GC_UnTrack(self);
    Py_XDECREF(self->owner);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int run_context_valid(RunContextObject *self) {
    if (!self->args) {
        py_raise(SES_FAILED_PRECONDITION,
                 "a RunContext is valid only inside the hook callback it was given to");
        return -1;
    }
    return 0;
}

static PyObject *run_context_add_fetch(RunContextObject *self, PyObject *arg) {
    ses_edge_t e;
    size_t index = 0;
    ses_status_t st;

    if (run_context_valid(self) < 0 ||
        py_edge_of(self->owner->session->graph, arg, "add_fetch", &e) < 0)
        return NULL;
    st = ses_run_args_add_fetch(self->args, e, &index);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return PyLong_FromSize_t(index);
}

static PyObject *run_context_add_feed(RunContextObject *self, PyObject *args) {
    PyObject *edge_obj, *value;
    ses_edge_t e;
    ses_tensor_t *t;
    ses_status_t st;

    if (run_context_valid(self) < 0 || !PyArg_ParseTuple(args, "OO:add_feed", &edge_obj, &value) ||
        py_edge_of(self->owner->session->graph, edge_obj, "add_feed", &e) < 0)
        return NULL;
    if (py_array_to_tensor(value, 1, &t) < 0)
        return NULL;
    st = ses_run_args_add_feed(self->args, e, t);
    ses_tensor_release(t);
    if (st != SES_OK)
        return py_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *run_context_add_target(RunContextObject *self, PyObject *arg) {
    ses_node_t *n;
    ses_status_t st;

    if (run_context_valid(self) < 0 ||
        py_node_of(self->owner->session->graph, arg, "add_target", &n) < 0)
        return NULL;
    st = ses_run_args_add_target(self->args, n);
    if (st != SES_OK)
        return py_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *run_context_value(RunContextObject *self, PyObject *arg) {
    Py_ssize_t i;
    ses_tensor_t *t, *copy = NULL;
    ses_status_t st;

    if (run_context_valid(self) < 0)
        return NULL;
    i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    t = i >= 0 ? ses_run_args_value(self->args, (size_t)i) : NULL;
    if (!t)
        Py_RETURN_NONE;
    /* Borrowed and possibly the caller's result too: hand out a copy. */
    st = ses_tensor_copy_to_host(t, &copy);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_tensor_to_array(copy);
}

static PyObject *run_context_get_fetch_count(RunContextObject *self, void *closure) {
    (void)closure;
    if (run_context_valid(self) < 0)
        return NULL;
    return PyLong_FromSize_t(ses_run_args_fetch_count(self->args));
}

static PyObject *run_context_get_step(RunContextObject *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLongLong(self->owner->m ? ses_monitored_step(self->owner->m) : 0);
}

static PyObject *run_context_request_stop(RunContextObject *self, PyObject *unused) {
    (void)unused;
    if (self->owner->m)
        ses_monitored_request_stop(self->owner->m);
    Py_RETURN_NONE;
}

static PyMethodDef run_context_methods[] = {
    {"add_fetch", (PyCFunction)run_context_add_fetch, METH_O,
     "add_fetch(edge) -> int: fetch edge in this run too (before_run only); the index to read "
     "its value with in after_run."},
    {"add_feed", (PyCFunction)run_context_add_feed, METH_VARARGS,
     "add_feed(edge, value): feed value to edge in this run (before_run only)."},
    {"add_target", (PyCFunction)run_context_add_target, METH_O,
     "add_target(node): run node for its effect in this run (before_run only)."},
    {"value", (PyCFunction)run_context_value, METH_O,
     "value(index) -> ndarray or None: the value of fetch index (after_run only)."},
    {"request_stop", (PyCFunction)run_context_request_stop, METH_NOARGS,
     "request_stop(): ask the loop to stop after this run."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef run_context_getset[] = {
    {"fetch_count", (getter)run_context_get_fetch_count, NULL,
     "The fetches of this run so far, the caller's and the hooks'.", NULL},
    {"step", (getter)run_context_get_step, NULL,
     "The global step: runs completed (in after_run it counts this one).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject RunContextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "session._core.RunContext",
    .tp_basicsize = sizeof(RunContextObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "What a hook may add to one run of a MonitoredSession, and read after it.",
    .tp_dealloc = (destructor)run_context_dealloc,
    .tp_traverse = (traverseproc)run_context_traverse,
    .tp_methods = run_context_methods,
    .tp_getset = run_context_getset,
};

/* ---- Python hook callbacks --------------------------------------------------------------- */

/* Calls obj.method(*args) with the GIL; a raised exception is kept for the Monitored call to
 * raise and fails the callback. */
static ses_status_t call_hook(py_hook_t *h, const char *method, PyObject *arg, ses_run_args_t *args,
                              int after) {
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *fn, *result = NULL;
    RunContextObject *ctx = NULL;
    ses_status_t st = SES_OK;

    fn = PyObject_GetAttrString(h->obj, method);
    if (!fn) {
        /* An absent method is nothing to do at that point. */
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyGILState_Release(gil);
            return SES_OK;
        }
        goto failed;
    }
    if (args) {
        ctx = PyObject_GC_New(RunContextObject, &RunContextType);
        if (!ctx) {
            Py_DECREF(fn);
            goto failed;
        }
        Py_INCREF(h->owner);
        ctx->owner = h->owner;
        ctx->args = args;
        ctx->after = after;
        PyObject_GC_Track(ctx);
        result = PyObject_CallOneArg(fn, (PyObject *)ctx);
        ctx->args = NULL;
        Py_DECREF(ctx);
    } else if (arg) {
        result = PyObject_CallOneArg(fn, arg);
    } else {
        result = PyObject_CallNoArgs(fn);
    }
    Py_DECREF(fn);
    if (!result)
        goto failed;
    Py_DECREF(result);
    PyGILState_Release(gil);
    return SES_OK;

failed : {
    PyObject *type = NULL, *exc = NULL, *tb = NULL;
    PyObject *text;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    if (exc && tb)
        PyException_SetTraceback(exc, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    text = exc ? PyObject_Str(exc) : NULL;
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    if (!msg)
        PyErr_Clear();
    st = ses_set_error(SES_CANCELLED, "Python hook raised %s: %s",
                       exc ? Py_TYPE(exc)->tp_name : "an exception", msg ? msg : "");
    Py_XDECREF(text);
    if (!h->owner->exc)
        h->owner->exc = exc;
    else
        Py_XDECREF(exc);
}
    PyGILState_Release(gil);
    return st;
}

static ses_status_t hook_begin(ses_hook_t *h, ses_monitored_t *m) {
    (void)m;
    return call_hook((py_hook_t *)h, "begin", NULL, NULL, 0);
}

static ses_status_t hook_after_create(ses_hook_t *h, ses_monitored_t *m, ses_session_t *s) {
    (void)m;
    (void)s;
    return call_hook((py_hook_t *)h, "after_create", NULL, NULL, 0);
}

static ses_status_t hook_before_run(ses_hook_t *h, ses_monitored_t *m, ses_run_args_t *args) {
    (void)m;
    return call_hook((py_hook_t *)h, "before_run", NULL, args, 0);
}

static ses_status_t hook_after_run(ses_hook_t *h, ses_monitored_t *m, const ses_run_args_t *args) {
    (void)m;
    return call_hook((py_hook_t *)h, "after_run", NULL, (ses_run_args_t *)args, 1);
}

static ses_status_t hook_end(ses_hook_t *h, ses_monitored_t *m, ses_session_t *s) {
    (void)m;
    (void)s;
    return call_hook((py_hook_t *)h, "end", NULL, NULL, 0);
}

/* ---- Monitored --------------------------------------------------------------------------- */

/* Raises the hook's exception if one was kept, else the libsession error. */
static PyObject *raise_monitored(MonitoredObject *self, ses_status_t st, char *err) {
    if (self->exc) {
        PyObject *exc = self->exc;
        self->exc = NULL;
        free(err);
        PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
        return NULL;
    }
    return py_raise_copied(st, err);
}

/* A built-in hook from its description: ("stop_at_step", n), ("stop_at_time", seconds),
 * ("checkpoint_saver", dir, every_steps, every_seconds, keep_last), ("load_checkpoint", dir). */
static int builtin_hook(PyObject *desc, ses_hook_t **out) {
    const char *kind;
    ses_status_t st;

    *out = NULL;
    if (!PyTuple_Check(desc) || PyTuple_GET_SIZE(desc) < 2 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(desc, 0))) {
        PyErr_SetString(PyExc_TypeError, "a built-in hook is described by (kind, args...)");
        return -1;
    }
    kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(desc, 0));
    if (!kind)
        return -1;
    if (strcmp(kind, "stop_at_step") == 0) {
        unsigned long long n;
        if (!PyArg_ParseTuple(desc, "sK", &kind, &n))
            return -1;
        st = ses_hook_stop_at_step(n, out);
    } else if (strcmp(kind, "stop_at_time") == 0) {
        double seconds;
        if (!PyArg_ParseTuple(desc, "sd", &kind, &seconds))
            return -1;
        st = ses_hook_stop_at_time(seconds, out);
    } else if (strcmp(kind, "checkpoint_saver") == 0) {
        PyObject *dir;
        unsigned long long every_steps;
        double every_seconds;
        unsigned int keep_last;
        if (!PyArg_ParseTuple(desc, "sO&KdI", &kind, PyUnicode_FSConverter, &dir, &every_steps,
                              &every_seconds, &keep_last))
            return -1;
        st = ses_hook_checkpoint_saver(PyBytes_AS_STRING(dir), every_steps, every_seconds,
                                       keep_last, out);
        Py_DECREF(dir);
    } else if (strcmp(kind, "load_checkpoint") == 0) {
        PyObject *dir;
        if (!PyArg_ParseTuple(desc, "sO&", &kind, PyUnicode_FSConverter, &dir))
            return -1;
        st = ses_hook_load_checkpoint(PyBytes_AS_STRING(dir), out);
        Py_DECREF(dir);
    } else {
        PyErr_Format(PyExc_ValueError, "unknown built-in hook \"%s\"", kind);
        return -1;
    }
    if (st != SES_OK) {
        py_raise(st, NULL);
        return -1;
    }
    return 0;
}

static void free_py_hooks(MonitoredObject *self) {
    for (size_t i = 0; i < self->n_py_hooks; i++) {
        Py_XDECREF(self->py_hooks[i]->obj);
        Py_XDECREF(self->py_hooks[i]->name);
        PyMem_Free(self->py_hooks[i]);
    }
    PyMem_Free(self->py_hooks);
    self->py_hooks = NULL;
    self->n_py_hooks = 0;
}

static PyObject *monitored_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)args;
    (void)kwds;
    return type->tp_alloc(type, 0);
}

/* __init__(session, hooks): each hook is a tuple describing a built-in, or an object with any of
 * begin(), after_create(), before_run(ctx), after_run(ctx), end(). */
static int monitored_init(MonitoredObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"session", "hooks", NULL};
    PyObject *session_obj, *hooks_obj = Py_None, *seq = NULL;
    ses_hook_t **hooks = NULL;
    Py_ssize_t n = 0, made = 0;
    ses_monitored_t *m = NULL;
    ses_status_t st;
    char *err = NULL;
    int rc = -1;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!|O:Monitored", kwlist, &SessionType,
                                     &session_obj, &hooks_obj))
        return -1;
    if (self->m || self->session) {
        py_raise(SES_FAILED_PRECONDITION, "Monitored.__init__: already created");
        return -1;
    }
    if (py_session_ready((SessionObject *)session_obj) < 0)
        return -1;
    Py_INCREF(session_obj);
    self->session = (SessionObject *)session_obj;
    if (hooks_obj != Py_None) {
        seq = PySequence_Fast(hooks_obj, "hooks must be a sequence");
        if (!seq)
            goto done;
        n = PySequence_Fast_GET_SIZE(seq);
    }
    hooks = PyMem_Calloc((size_t)(n ? n : 1), sizeof *hooks);
    self->py_hooks = PyMem_Calloc((size_t)(n ? n : 1), sizeof *self->py_hooks);
    if (!hooks || !self->py_hooks) {
        PyErr_NoMemory();
        goto done;
    }
    for (made = 0; made < n; made++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, made);
        if (PyTuple_Check(item)) {
            if (builtin_hook(item, &hooks[made]) < 0)
                goto done;
        } else {
            py_hook_t *h = PyMem_Calloc(1, sizeof *h);
            PyObject *name;
            if (!h) {
                PyErr_NoMemory();
                goto done;
            }
            self->py_hooks[self->n_py_hooks++] = h;
            ses_hook_init(&h->hook);
            name = PyObject_GetAttrString(item, "__name__");
            if (!name) {
                PyErr_Clear();
                name = PyObject_GetAttrString((PyObject *)Py_TYPE(item), "__name__");
            }
            if (!name || !PyUnicode_Check(name)) {
                Py_XDECREF(name);
                PyErr_Clear();
                name = PyUnicode_FromString("python hook");
                if (!name)
                    goto done;
            }
            h->name = name;
            h->hook.name = PyUnicode_AsUTF8(name);
            if (!h->hook.name)
                goto done;
            Py_INCREF(item);
            h->obj = item;
            h->owner = self; /* borrowed: the hooks live as long as the monitored object */
            h->hook.begin = hook_begin;
            h->hook.after_create = hook_after_create;
            h->hook.before_run = hook_before_run;
            h->hook.after_run = hook_after_run;
            h->hook.end = hook_end;
            hooks[made] = &h->hook;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    py_graph_read_lock(self->session->graph);
    st = ses_monitored_create(self->session->s, hooks, (size_t)n, &m);
    if (st != SES_OK)
        err = py_error_copy();
    py_graph_read_unlock(self->session->graph);
    Py_END_ALLOW_THREADS
    made = 0; /* the built-in hooks belong to the monitored session now, created or not */
    if (st != SES_OK) {
        raise_monitored(self, st, err);
        goto done;
    }
    self->m = m;
    rc = 0;
done:
    /* Built-in hooks never handed over. */
    for (Py_ssize_t i = 0; i < made; i++)
        if (hooks[i] && hooks[i]->destroy)
            ses_hook_destroy(hooks[i]);
    PyMem_Free(hooks);
    Py_XDECREF(seq);
    if (rc < 0 && !self->m)
        free_py_hooks(self);
    return rc;
}

static int monitored_ready(MonitoredObject *self) {
    if (!self->m) {
        py_raise(SES_FAILED_PRECONDITION, "the monitored session was not created");
        return -1;
    }
    return 0;
}

/* _run(fetches, feed_edges, feed_values, targets) -> list of arrays */
static PyObject *monitored_run(MonitoredObject *self, PyObject *args) {
    PyObject *fetches_obj, *feed_edges_obj, *feed_values_obj, *targets_obj, *result = NULL;
    PyObject *fseq = NULL, *vseq = NULL, *tseq = NULL, *eseq = NULL;
    GraphObject *g;
    ses_edge_t *fetches = NULL;
    ses_feed_t *feeds = NULL;
    ses_node_t **targets = NULL;
    ses_tensor_t **out = NULL;
    Py_ssize_t n_fetches = 0, n_feeds = 0, n_targets = 0;
    ses_status_t st;
    char *err = NULL;

    if (monitored_ready(self) < 0 ||
        !PyArg_ParseTuple(args, "OOOO:_run", &fetches_obj, &feed_edges_obj, &feed_values_obj,
                          &targets_obj))
        return NULL;
    g = self->session->graph;
    fseq = PySequence_Fast(fetches_obj, "fetches must be a sequence");
    eseq = fseq ? PySequence_Fast(feed_edges_obj, "feed edges must be a sequence") : NULL;
    vseq = eseq ? PySequence_Fast(feed_values_obj, "feed values must be a sequence") : NULL;
    tseq = vseq ? PySequence_Fast(targets_obj, "targets must be a sequence") : NULL;
    if (!tseq)
        goto done;
    n_fetches = PySequence_Fast_GET_SIZE(fseq);
    n_feeds = PySequence_Fast_GET_SIZE(eseq);
    n_targets = PySequence_Fast_GET_SIZE(tseq);
    if (PySequence_Fast_GET_SIZE(vseq) != n_feeds) {
        PyErr_SetString(PyExc_ValueError, "_run: one value per fed edge");
        goto done;
    }
    fetches = PyMem_Calloc((size_t)n_fetches + 1, sizeof *fetches);
    feeds = PyMem_Calloc((size_t)n_feeds + 1, sizeof *feeds);
    targets = PyMem_Calloc((size_t)n_targets + 1, sizeof *targets);
    out = PyMem_Calloc((size_t)n_fetches + 1, sizeof *out);
    if (!fetches || !feeds || !targets || !out) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_fetches; i++)
        if (py_edge_of(g, PySequence_Fast_GET_ITEM(fseq, i), "fetch", &fetches[i]) < 0)
            goto done;
    for (Py_ssize_t i = 0; i < n_targets; i++)
        if (py_node_of(g, PySequence_Fast_GET_ITEM(tseq, i), "target", &targets[i]) < 0)
            goto done;
    for (Py_ssize_t i = 0; i < n_feeds; i++)
        if (py_edge_of(g, PySequence_Fast_GET_ITEM(eseq, i), "feed", &feeds[i].edge) < 0 ||
            py_array_to_tensor(PySequence_Fast_GET_ITEM(vseq, i), 0, &feeds[i].value) < 0)
            goto done;

    Py_BEGIN_ALLOW_THREADS
    py_graph_read_lock(g);
    st = ses_monitored_run(self->m, fetches, (size_t)n_fetches, feeds, (size_t)n_feeds, targets,
                           (size_t)n_targets, out);
    if (st != SES_OK)
        err = py_error_copy();
    py_graph_read_unlock(g);
    Py_END_ALLOW_THREADS
    if (st != SES_OK) {
        raise_monitored(self, st, err);
        goto done;
    }
    Py_CLEAR(self->exc);
    result = PyList_New(n_fetches);
    for (Py_ssize_t i = 0; result && i < n_fetches; i++) {
        PyObject *a = py_tensor_to_array(out[i]);
        out[i] = NULL;
        if (!a) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, a);
    }
done:
    if (feeds)
        for (Py_ssize_t i = 0; i < n_feeds; i++)
            ses_tensor_release(feeds[i].value);
    if (out)
        for (Py_ssize_t i = 0; i < n_fetches; i++)
            ses_tensor_release(out[i]);
    PyMem_Free(fetches);
    PyMem_Free(feeds);
    PyMem_Free(targets);
    PyMem_Free(out);
    Py_XDECREF(fseq);
    Py_XDECREF(eseq);
    Py_XDECREF(vseq);
    Py_XDECREF(tseq);
    return result;
}

static PyObject *monitored_close(MonitoredObject *self, PyObject *unused) {
    ses_status_t st;
    char *err = NULL;

    (void)unused;
    if (monitored_ready(self) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    py_graph_read_lock(self->session->graph);
    st = ses_monitored_close(self->m);
    if (st != SES_OK)
        err = py_error_copy();
    py_graph_read_unlock(self->session->graph);
    Py_END_ALLOW_THREADS
    if (st != SES_OK)
        return raise_monitored(self, st, err);
    Py_RETURN_NONE;
}

static PyObject *monitored_request_stop(MonitoredObject *self, PyObject *unused) {
    (void)unused;
    if (monitored_ready(self) < 0)
        return NULL;
    ses_monitored_request_stop(self->m);
    Py_RETURN_NONE;
}

static PyObject *monitored_should_stop(MonitoredObject *self, PyObject *unused) {
    (void)unused;
    if (monitored_ready(self) < 0)
        return NULL;
    return PyBool_FromLong(ses_monitored_should_stop(self->m));
}

static PyObject *monitored_get_step(MonitoredObject *self, void *closure) {
    (void)closure;
    if (monitored_ready(self) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(ses_monitored_step(self->m));
}

static int monitored_set_step(MonitoredObject *self, PyObject *value, void *closure) {
    unsigned long long step;

    (void)closure;
    if (monitored_ready(self) < 0)
        return -1;
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "step cannot be deleted");
        return -1;
    }
    step = PyLong_AsUnsignedLongLong(value);
    if (step == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    ses_monitored_set_step(self->m, step);
    return 0;
}

static int monitored_traverse(MonitoredObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->session);
    Py_VISIT(self->exc);
    for (size_t i = 0; i < self->n_py_hooks; i++)
        Py_VISIT(self->py_hooks[i]->obj);
    return 0;
}

static void monitored_dealloc(MonitoredObject *self) {
    PyObject_GC_UnTrack(self);
    if (self->m) {
        ses_monitored_t *m = self->m;
        Py_BEGIN_ALLOW_THREADS
        py_graph_read_lock(self->session->graph);
        ses_monitored_destroy(m); /* closes: end hooks may call back into Python */
        py_graph_read_unlock(self->session->graph);
        Py_END_ALLOW_THREADS
        self->m = NULL;
    }
    free_py_hooks(self);
    Py_CLEAR(self->exc);
    Py_XDECREF(self->session);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef monitored_methods[] = {
    {"_run", (PyCFunction)monitored_run, METH_VARARGS, NULL},
    {"close", (PyCFunction)monitored_close, METH_NOARGS,
     "close(): calls every hook's end (the checkpoint saver saves the last step). The session "
     "stays open."},
    {"request_stop", (PyCFunction)monitored_request_stop, METH_NOARGS,
     "request_stop(): should_stop() is True from now on (any thread)."},
    {"should_stop", (PyCFunction)monitored_should_stop, METH_NOARGS,
     "should_stop() -> bool: whether a hook or the caller asked the loop to stop."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef monitored_getset[] = {
    {"step", (getter)monitored_get_step, (setter)monitored_set_step,
     "The global step: runs completed, counted from the last value set (a restored "
     "checkpoint's step).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject MonitoredType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "session._core.Monitored",
    .tp_basicsize = sizeof(MonitoredObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A monitored session (ses_monitored_t): a session's runs with hooks around them.",
    .tp_new = monitored_new,
    .tp_init = (initproc)monitored_init,
    .tp_dealloc = (destructor)monitored_dealloc,
    .tp_traverse = (traverseproc)monitored_traverse,
    .tp_methods = monitored_methods,
    .tp_getset = monitored_getset,
};
