/*
 * session._core: the module, errors, tensors in and out, and the module-level functions
 * (drivers, devices, ONNX import, task specs, idx files).
 */
#define SESSION_PY_IMPORTS_ARRAY
#include "core.h"

#include <stdlib.h>
#include <string.h>

PyMODINIT_FUNC PyInit__core(void);

/* Error classes by status code, registered by the package (_core._set_error_types). */
#define N_STATUS 11
static PyObject *error_types[N_STATUS];
static PyObject *error_base;

PyTypeObject *py_node_type = &NodeType;
PyTypeObject *py_edge_type = &EdgeType;

/* ---- errors ------------------------------------------------------------------------------ */

char *py_error_copy(void) {
    char *copy = strdup(ses_last_error());
    return copy ? copy : strdup("");
}

PyObject *py_raise(ses_status_t status, const char *message) {
    PyObject *type = NULL;

    if ((int)status > 0 && (int)status < N_STATUS)
        type = error_types[status];
    if (!type)
        type = error_base ? error_base : PyExc_RuntimeError;
    if (!message)
        message = ses_last_error();
    PyErr_SetString(type, message && message[0] ? message : ses_status_name(status));
    return NULL;
}

PyObject *py_raise_copied(ses_status_t status, char *message) {
    py_raise(status, message ? message : "out of memory reading the error");
    free(message);
    return NULL;
}

static PyObject *core_set_error_types(PyObject *self, PyObject *args) {
    PyObject *base, *mapping, *key, *value;
    Py_ssize_t pos = 0;

    (void)self;
    if (!PyArg_ParseTuple(args, "OO!:_set_error_types", &base, &PyDict_Type, &mapping))
        return NULL;
    while (PyDict_Next(mapping, &pos, &key, &value)) {
        long code = PyLong_AsLong(key);
        if (code == -1 && PyErr_Occurred())
            return NULL;
        if (code <= 0 || code >= N_STATUS) {
            PyErr_Format(PyExc_ValueError, "status code %ld is out of range", code);
            return NULL;
        }
        Py_INCREF(value);
        Py_XSETREF(error_types[code], value);
    }
    Py_INCREF(base);
    Py_XSETREF(error_base, base);
    Py_RETURN_NONE;
}

static PyObject *core_set_types(PyObject *self, PyObject *args) {
    PyTypeObject *node_type, *edge_type;

    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!:_set_types", &PyType_Type, &node_type, &PyType_Type,
                          &edge_type))
        return NULL;
    if (!PyType_IsSubtype(node_type, &NodeType) || !PyType_IsSubtype(edge_type, &EdgeType) ||
        node_type->tp_basicsize != NodeType.tp_basicsize ||
        edge_type->tp_basicsize != EdgeType.tp_basicsize) {
        PyErr_SetString(PyExc_TypeError,
                        "_set_types: subclasses of _core.Node and _core.Edge with __slots__ = ()");
        return NULL;
    }
    /* Kept for the life of the process: edges made later refer to them. */
    Py_INCREF(node_type);
    Py_INCREF(edge_type);
    py_node_type = node_type;
    py_edge_type = edge_type;
    Py_RETURN_NONE;
}

/* ---- tensors ----------------------------------------------------------------------------- */

int py_npy_type_of(ses_dtype_t dtype) {
    switch (dtype) {
    case SES_F32: return NPY_FLOAT32;
    case SES_F64: return NPY_FLOAT64;
    case SES_F16: return NPY_FLOAT16;
    case SES_BF16: return NPY_UINT16;
    case SES_I8: return NPY_INT8;
    case SES_I16: return NPY_INT16;
    case SES_I32: return NPY_INT32;
    case SES_I64: return NPY_INT64;
    case SES_U8: return NPY_UINT8;
    case SES_U16: return NPY_UINT16;
    case SES_U32: return NPY_UINT32;
    case SES_U64: return NPY_UINT64;
    case SES_BOOL: return NPY_BOOL;
    default: return -1;
    }
}

static ses_dtype_t dtype_of_array(PyArrayObject *a) {
    PyArray_Descr *d = PyArray_DESCR(a);

    if (d->kind == 'f') {
        switch (d->elsize) {
        case 2: return SES_F16;
        case 4: return SES_F32;
        case 8: return SES_F64;
        default: return SES_DTYPE_INVALID;
        }
    }
    if (d->kind == 'i' || d->kind == 'u') {
        int u = d->kind == 'u';
        switch (d->elsize) {
        case 1: return u ? SES_U8 : SES_I8;
        case 2: return u ? SES_U16 : SES_I16;
        case 4: return u ? SES_U32 : SES_I32;
        case 8: return u ? SES_U64 : SES_I64;
        default: return SES_DTYPE_INVALID;
        }
    }
    if (d->kind == 'b' && d->elsize == 1)
        return SES_BOOL;
    return SES_DTYPE_INVALID;
}

static void release_tensor_capsule(PyObject *capsule) {
    ses_tensor_release(PyCapsule_GetPointer(capsule, "session.tensor"));
}

/* A string tensor as a NumPy object array of str (copied); takes over @p t's reference. */
static PyObject *strings_to_array(ses_tensor_t *t) {
    npy_intp dims[SES_MAX_RANK];
    size_t rank = ses_tensor_rank(t);
    PyObject *array;
    PyObject **items;

    for (size_t i = 0; i < rank; i++)
        dims[i] = (npy_intp)ses_tensor_dims(t)[i];
    array = PyArray_SimpleNew((int)rank, dims, NPY_OBJECT);
    if (!array) {
        ses_tensor_release(t);
        return NULL;
    }
    items = (PyObject **)PyArray_DATA((PyArrayObject *)array);
    for (size_t i = 0; i < ses_tensor_count(t); i++) {
        const char *v = "";
        PyObject *str;
        ses_tensor_string(t, i, &v);
        if (!(str = PyUnicode_DecodeUTF8(v, (Py_ssize_t)strlen(v), "strict"))) {
            Py_DECREF(array);
            ses_tensor_release(t);
            return NULL;
        }
        Py_XDECREF(items[i]); /* PyArray_SimpleNew filled it with None */
        items[i] = str;
    }
    ses_tensor_release(t);
    return array;
}

/* An object or str array (@p a, borrowed) as a new string tensor: each element a str, encoded
 * as UTF-8, without NUL characters. */
static int array_to_strings(PyArrayObject *a, ses_tensor_t **out) {
    int64_t dims[SES_MAX_RANK];
    PyArrayObject *o;
    PyObject **items;
    int rank = PyArray_NDIM(a);
    ses_status_t st;

    if (rank > SES_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "an array of %d dimensions (the most is %d)", rank,
                     SES_MAX_RANK);
        return -1;
    }
    o = (PyArrayObject *)PyArray_FromAny((PyObject *)a, PyArray_DescrFromType(NPY_OBJECT), 0, 0,
                                         NPY_ARRAY_CARRAY | NPY_ARRAY_ENSURECOPY, NULL);
    if (!o)
        return -1;
    for (int i = 0; i < rank; i++)
        dims[i] = (int64_t)PyArray_DIM(o, i);
    if ((st = ses_tensor_create(SES_STRING, (size_t)rank, dims, out)) != SES_OK) {
        Py_DECREF(o);
        py_raise(st, NULL);
        return -1;
    }
    items = (PyObject **)PyArray_DATA(o);
    for (npy_intp i = 0; i < PyArray_SIZE(o); i++) {
        Py_ssize_t len = 0;
        const char *v;
        if (!PyUnicode_Check(items[i])) {
            PyErr_Format(PyExc_TypeError, "element %zd of a string array is %s, not str",
                         (Py_ssize_t)i, Py_TYPE(items[i])->tp_name);
            goto fail;
        }
        if (!(v = PyUnicode_AsUTF8AndSize(items[i], &len)))
            goto fail;
        if ((size_t)len != strlen(v)) {
            PyErr_Format(PyExc_ValueError, "element %zd of a string array holds a NUL character",
                         (Py_ssize_t)i);
            goto fail;
        }
        if ((st = ses_tensor_set_string(*out, (size_t)i, v)) != SES_OK) {
            py_raise(st, NULL);
            goto fail;
        }
    }
    Py_DECREF(o);
    return 0;

fail:
    Py_DECREF(o);
    ses_tensor_release(*out);
    *out = NULL;
    return -1;
}

PyObject *py_tensor_to_array(ses_tensor_t *t) {
    npy_intp dims[SES_MAX_RANK];
    size_t rank = ses_tensor_rank(t);
    int typenum = py_npy_type_of(ses_tensor_dtype(t));
    PyObject *array, *capsule;
    void *data;

    if (ses_tensor_dtype(t) == SES_STRING)
        return strings_to_array(t);

    if (typenum < 0 || rank > SES_MAX_RANK) {
        ses_tensor_release(t);
        PyErr_SetString(PyExc_TypeError, "a tensor of a dtype NumPy cannot hold");
        return NULL;
    }
    if (!ses_tensor_data(t)) {
        /* A device tensor: bring its bytes home first. */
        ses_tensor_t *host = NULL;
        ses_status_t st = ses_tensor_copy_to_host(t, &host);
        ses_tensor_release(t);
        if (st != SES_OK)
            return py_raise(st, NULL);
        t = host;
    }
    for (size_t i = 0; i < rank; i++)
        dims[i] = (npy_intp)ses_tensor_dims(t)[i];
    data = ses_tensor_data(t);
    if (ses_tensor_count(t) == 0 || !data) {
        ses_tensor_release(t);
        return PyArray_ZEROS((int)rank, dims, typenum, 0);
    }
    capsule = PyCapsule_New(t, "session.tensor", release_tensor_capsule);
    if (!capsule) {
        ses_tensor_release(t);
        return NULL;
    }
    array =
        PyArray_New(&PyArray_Type, (int)rank, dims, typenum, NULL, data, 0, NPY_ARRAY_CARRAY, NULL);
    if (!array) {
        Py_DECREF(capsule);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)array, capsule) < 0) { /* steals capsule */
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

/* The deleter of a tensor that wraps an array: drops the array's reference. It may run on any
 * thread, with or without the GIL (the last release can happen inside an eval). */
static void release_array(void *data, void *user) {
    PyGILState_STATE gil;

    (void)data;
    if (!Py_IsInitialized())
        return;
    gil = PyGILState_Ensure();
    Py_DECREF((PyObject *)user);
    PyGILState_Release(gil);
}

int py_array_to_tensor(PyObject *obj, int copy, ses_tensor_t **out) {
    PyArrayObject *a;
    ses_dtype_t dtype;
    int64_t dims[SES_MAX_RANK];
    int rank;
    ses_status_t st;

    *out = NULL;
    a = (PyArrayObject *)PyArray_FROM_OF(obj, NPY_ARRAY_IN_ARRAY | NPY_ARRAY_NOTSWAPPED);
    if (!a)
        return -1;
    /* Object arrays of str and NumPy str arrays: string tensors, always copied. */
    if (PyArray_DESCR(a)->kind == 'O' || PyArray_DESCR(a)->kind == 'U') {
        int rc = array_to_strings(a, out);
        Py_DECREF(a);
        return rc;
    }
    dtype = dtype_of_array(a);
    if (dtype == SES_DTYPE_INVALID) {
        PyErr_Format(PyExc_TypeError,
                     "arrays of dtype %S have no libsession type (use float16/32/64, "
                     "(u)int8-64, bool, or object arrays of str)",
                     (PyObject *)PyArray_DESCR(a));
        Py_DECREF(a);
        return -1;
    }
    rank = PyArray_NDIM(a);
    if (rank > SES_MAX_RANK) {
        char message[96];
        Py_DECREF(a);
        snprintf(message, sizeof message, "an array of %d dimensions (the most is %d)", rank,
                 SES_MAX_RANK);
        py_raise(SES_INVALID_ARGUMENT, message);
        return -1;
    }
    for (int i = 0; i < rank; i++)
        dims[i] = (int64_t)PyArray_DIM(a, i);
    if (copy) {
        st = ses_tensor_create_from(dtype, (size_t)rank, dims, PyArray_DATA(a),
                                    (size_t)PyArray_NBYTES(a), out);
        Py_DECREF(a);
    } else {
        /* The tensor owns the reference to a from here on (the deleter drops it, also when the
         * wrap fails). */
        st = ses_tensor_wrap(dtype, (size_t)rank, dims, PyArray_NBYTES(a) ? PyArray_DATA(a) : NULL,
                             release_array, a, out);
    }
    if (st != SES_OK) {
        py_raise(st, NULL);
        return -1;
    }
    return 0;
}

static PyObject *core_roundtrip(PyObject *self, PyObject *args) {
    PyObject *obj;
    int copy = 0;
    ses_tensor_t *t;

    (void)self;
    if (!PyArg_ParseTuple(args, "O|p:_roundtrip", &obj, &copy))
        return NULL;
    if (py_array_to_tensor(obj, copy, &t) < 0)
        return NULL;
    return py_tensor_to_array(t);
}

/* ---- registry ---------------------------------------------------------------------------- */

static int set_str(PyObject *dict, const char *key, const char *value) {
    PyObject *v =
        PyUnicode_DecodeUTF8(value ? value : "", (Py_ssize_t)strlen(value ? value : ""), "replace");
    int rc = v ? PyDict_SetItemString(dict, key, v) : -1;
    Py_XDECREF(v);
    return rc;
}

static int set_obj(PyObject *dict, const char *key, PyObject *value) {
    int rc = value ? PyDict_SetItemString(dict, key, value) : -1;
    Py_XDECREF(value);
    return rc;
}

static PyObject *device_dict(const ses_device_t *dev) {
    PyObject *d = PyDict_New(), *caps;

    if (!d)
        return NULL;
    caps = PyList_New(0);
    if (!caps)
        goto fail;
    for (int bit = 0; bit < 64; bit++) {
        uint64_t flag = UINT64_C(1) << bit;
        if ((ses_device_caps(dev) & flag) && ses_device_cap_name(flag)) {
            PyObject *name = PyUnicode_FromString(ses_device_cap_name(flag));
            if (!name || PyList_Append(caps, name) < 0) {
                Py_XDECREF(name);
                Py_DECREF(caps);
                goto fail;
            }
            Py_DECREF(name);
        }
    }
    if (set_str(d, "name", ses_device_name(dev)) < 0 ||
        set_str(d, "kind", ses_device_kind_name(ses_device_kind(dev))) < 0 ||
        set_str(d, "driver", ses_driver_name(ses_device_driver(dev))) < 0 ||
        set_obj(d, "ordinal", PyLong_FromUnsignedLong(ses_device_ordinal(dev))) < 0 ||
        set_str(d, "description", ses_device_description(dev)) < 0 ||
        set_str(d, "stable_id", ses_device_stable_id(dev)) < 0 ||
        set_obj(d, "memory_bytes", PyLong_FromUnsignedLongLong(ses_device_memory(dev))) < 0 ||
        set_obj(d, "caps", caps) < 0)
        goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static ses_registry_t *loaded_registry(void) {
    ses_registry_t *reg = NULL;
    ses_status_t st;

    Py_BEGIN_ALLOW_THREADS
    st = ses_registry_default(&reg);
    if (st == SES_OK)
        ses_registry_device_count(reg); /* loads every enabled driver */
    Py_END_ALLOW_THREADS
    if (st != SES_OK) {
        py_raise(st, NULL);
        return NULL;
    }
    return reg;
}

static PyObject *core_devices(PyObject *self, PyObject *unused) {
    ses_registry_t *reg = loaded_registry();
    PyObject *list;

    (void)self;
    (void)unused;
    if (!reg)
        return NULL;
    list = PyList_New(0);
    for (size_t i = 0; list && i < ses_registry_device_count(reg); i++) {
        PyObject *d = device_dict(ses_registry_device(reg, i));
        if (!d || PyList_Append(list, d) < 0) {
            Py_XDECREF(d);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(d);
    }
    return list;
}

static PyObject *driver_dict(const ses_driver_t *drv) {
    PyObject *d = PyDict_New(), *devs = NULL, *err;

    if (!d)
        return NULL;
    devs = PyList_New(0);
    if (!devs)
        goto fail;
    for (size_t j = 0; j < ses_driver_device_count(drv); j++) {
        PyObject *name = PyUnicode_FromString(ses_device_name(ses_driver_device(drv, j)));
        if (!name || PyList_Append(devs, name) < 0) {
            Py_XDECREF(name);
            Py_DECREF(devs);
            goto fail;
        }
        Py_DECREF(name);
    }
    if (ses_driver_error(drv)[0]) {
        err = PyDict_New();
        if (!err || set_str(err, "code", ses_status_name(ses_driver_error_code(drv))) < 0 ||
            set_str(err, "message", ses_driver_error(drv)) < 0) {
            Py_XDECREF(err);
            Py_DECREF(devs);
            goto fail;
        }
    } else {
        err = Py_NewRef(Py_None);
    }
    if (set_str(d, "name", ses_driver_name(drv)) < 0 ||
        set_str(d, "state", ses_driver_state_name(ses_driver_state(drv))) < 0 ||
        set_str(d, "version", ses_driver_version(drv)) < 0 ||
        set_str(d, "vendor", ses_driver_vendor(drv)) < 0 ||
        set_obj(d, "abi_major", PyLong_FromUnsignedLong(ses_driver_abi_major(drv))) < 0 ||
        set_obj(d, "abi_minor", PyLong_FromUnsignedLong(ses_driver_abi_minor(drv))) < 0 ||
        set_obj(d, "opset_version", PyLong_FromUnsignedLong(ses_driver_opset_version(drv))) < 0 ||
        set_obj(d, "priority", PyLong_FromLong(ses_driver_priority(drv))) < 0 ||
        set_str(d, "build_features", ses_driver_build_features(drv)) < 0 ||
        set_str(d, "manifest", ses_driver_manifest_path(drv)) < 0 ||
        set_str(d, "library", ses_driver_library_path(drv)) < 0 || set_obj(d, "error", err) < 0 ||
        set_obj(d, "devices", devs) < 0)
        goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static PyObject *core_drivers(PyObject *self, PyObject *unused) {
    ses_registry_t *reg = loaded_registry();
    PyObject *list;

    (void)self;
    (void)unused;
    if (!reg)
        return NULL;
    list = PyList_New(0);
    for (size_t i = 0; list && i < ses_registry_driver_count(reg); i++) {
        PyObject *d = driver_dict(ses_registry_driver(reg, i));
        if (!d || PyList_Append(list, d) < 0) {
            Py_XDECREF(d);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(d);
    }
    return list;
}

static PyObject *core_add_driver_file(PyObject *self, PyObject *args) {
    const char *path;
    ses_registry_t *reg = NULL;
    const ses_driver_t *drv = NULL;
    ses_status_t st;

    (void)self;
    if (!PyArg_ParseTuple(args, "s:add_driver_file", &path))
        return NULL;
    st = ses_registry_default(&reg);
    if (st == SES_OK)
        st = ses_registry_add_driver_file(reg, path, &drv);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return PyUnicode_FromString(ses_driver_name(drv));
}

static PyObject *core_has_driver(PyObject *self, PyObject *args) {
    const char *name;
    ses_registry_t *reg = NULL;
    const ses_driver_t *drv = NULL;

    (void)self;
    if (!PyArg_ParseTuple(args, "s:has_driver", &name))
        return NULL;
    if (ses_registry_default(&reg) != SES_OK)
        return py_raise(SES_INTERNAL, NULL);
    return PyBool_FromLong(ses_registry_find_driver(reg, name, &drv) == SES_OK);
}

/* ---- task specs -------------------------------------------------------------------------- */

static PyObject *task_spec_dict(const ses_task_spec_t *t) {
    return Py_BuildValue(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:O,s:s,s:O,s:O}", "rank", t->rank, "size", t->size, "local_rank",
        t->local_rank, "local_size", t->local_size, "shard_index", t->shard_index, "shard_count",
        t->shard_count, "is_chief", t->is_chief ? Py_True : Py_False, "launcher",
        t->launcher ? t->launcher : "", "has_evaluator", t->has_evaluator ? Py_True : Py_False,
        "is_evaluator", t->is_evaluator ? Py_True : Py_False);
}

static PyObject *core_task_spec_from_env(PyObject *self, PyObject *unused) {
    ses_task_spec_t spec;
    ses_status_t st;

    (void)self;
    (void)unused;
    st = ses_task_spec_from_env(&spec);
    if (st != SES_OK)
        return py_raise(st, NULL);
    return task_spec_dict(&spec);
}

/* shard_range(rank, size, shard_index, shard_count, n) -> (begin, end) */
static PyObject *core_task_shard_range(PyObject *self, PyObject *args) {
    ses_task_spec_t spec;
    unsigned int shard_index, shard_count;
    unsigned long long n;
    size_t begin = 0, end = 0;

    (void)self;
    if (!PyArg_ParseTuple(args, "IIK:shard_range", &shard_index, &shard_count, &n))
        return NULL;
    ses_task_spec_init(&spec);
    spec.shard_index = shard_index;
    spec.shard_count = shard_count;
    if (shard_count == 0 || shard_index >= shard_count)
        return py_raise(SES_INVALID_ARGUMENT, "shard_range: shard_index must be below shard_count");
    ses_task_shard_range(&spec, (size_t)n, &begin, &end);
    return Py_BuildValue("(nn)", (Py_ssize_t)begin, (Py_ssize_t)end);
}

/* ---- files ------------------------------------------------------------------------------- */

static PyObject *core_read_idx(PyObject *self, PyObject *args) {
    PyObject *path_obj;
    ses_tensor_t *t = NULL;
    ses_status_t st;
    char *err = NULL;

    (void)self;
    if (!PyArg_ParseTuple(args, "O&:read_idx", PyUnicode_FSConverter, &path_obj))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    st = ses_idx_read(PyBytes_AS_STRING(path_obj), &t);
    if (st != SES_OK)
        err = py_error_copy();
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (st != SES_OK)
        return py_raise_copied(st, err);
    return py_tensor_to_array(t);
}

/* onnx_import(path, initializers_as_variables, graph_type) ->
 *     (graph, [(name, Edge, dtype_name)], [(name, Edge)], opset) */
static PyObject *core_onnx_import(PyObject *self, PyObject *args) {
    PyObject *path_obj, *graph_type, *graph = NULL, *inputs = NULL, *outputs = NULL;
    int as_variables = 0;
    ses_onnx_options_t options;
    ses_onnx_model_t *model = NULL;
    ses_status_t st;
    char *err = NULL;
    GraphObject *go;

    (void)self;
    if (!PyArg_ParseTuple(args, "O&pO!:onnx_import", PyUnicode_FSConverter, &path_obj,
                          &as_variables, &PyType_Type, &graph_type))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)graph_type, &GraphType)) {
        Py_DECREF(path_obj);
        PyErr_SetString(PyExc_TypeError, "onnx_import: graph_type must subclass _core.Graph");
        return NULL;
    }
    ses_onnx_options_init(&options);
    options.initializers_as_variables = as_variables ? 1 : 0;
    Py_BEGIN_ALLOW_THREADS
    st = ses_onnx_import_file(PyBytes_AS_STRING(path_obj), &options, &model);
    if (st != SES_OK)
        err = py_error_copy();
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (st != SES_OK)
        return py_raise_copied(st, err);

    graph = PyObject_CallNoArgs(graph_type);
    if (!graph)
        goto fail;
    go = (GraphObject *)graph;
    if (py_graph_ready(go) < 0)
        goto fail;
    ses_graph_release(go->g);
    go->g = ses_graph_retain(ses_onnx_model_graph(model));

    inputs = PyList_New(0);
    outputs = PyList_New(0);
    if (!inputs || !outputs)
        goto fail;
    for (size_t i = 0; i < ses_onnx_model_input_count(model); i++) {
        PyObject *edge = py_edge_new(go, ses_onnx_model_input(model, i));
        PyObject *item = edge ? Py_BuildValue("(sNs)", ses_onnx_model_input_name(model, i), edge,
                                              ses_dtype_name(ses_onnx_model_input_dtype(model, i)))
                              : NULL;
        if (!item || PyList_Append(inputs, item) < 0) {
            Py_XDECREF(item);
            goto fail;
        }
        Py_DECREF(item);
    }
    for (size_t i = 0; i < ses_onnx_model_output_count(model); i++) {
        PyObject *edge = py_edge_new(go, ses_onnx_model_output(model, i));
        PyObject *item =
            edge ? Py_BuildValue("(sN)", ses_onnx_model_output_name(model, i), edge) : NULL;
        if (!item || PyList_Append(outputs, item) < 0) {
            Py_XDECREF(item);
            goto fail;
        }
        Py_DECREF(item);
    }
    {
        long long opset = (long long)ses_onnx_model_opset(model);
        ses_onnx_model_destroy(model);
        return Py_BuildValue("(NNNL)", graph, inputs, outputs, opset);
    }
fail:
    Py_XDECREF(graph);
    Py_XDECREF(inputs);
    Py_XDECREF(outputs);
    ses_onnx_model_destroy(model);
    return NULL;
}

static PyObject *core_add_default_fallback(PyObject *self, PyObject *args) {
    const char *path;
    ses_status_t st;

    (void)self;
    if (!PyArg_ParseTuple(args, "s:add_default_fallback", &path))
        return NULL;
    st = ses_registry_default_add_fallback(path);
    if (st != SES_OK)
        return py_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *core_version(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(ses_version());
}

static PyObject *core_status_name(PyObject *self, PyObject *args) {
    int code;

    (void)self;
    if (!PyArg_ParseTuple(args, "i:status_name", &code))
        return NULL;
    return PyUnicode_FromString(ses_status_name((ses_status_t)code));
}

/* ---- the module -------------------------------------------------------------------------- */

static PyMethodDef core_methods[] = {
    {"_set_error_types", core_set_error_types, METH_VARARGS,
     "_set_error_types(base, {code: class}): the exception classes errors are raised as."},
    {"_set_types", core_set_types, METH_VARARGS,
     "_set_types(node_type, edge_type): the classes new Nodes and Edges are made of."},
    {"_roundtrip", core_roundtrip, METH_VARARGS,
     "_roundtrip(array, copy=False): the array through a libsession tensor and back (tests)."},
    {"drivers", core_drivers, METH_NOARGS,
     "drivers() -> list of dict: every driver the default registry found, as session-info "
     "--json's \"drivers\" lists them (loads every enabled driver)."},
    {"devices", core_devices, METH_NOARGS,
     "devices() -> list of dict: every device of the loaded drivers, as session-info --json's "
     "\"devices\"."},
    {"add_driver_file", core_add_driver_file, METH_VARARGS,
     "add_driver_file(manifest_path) -> str: adds a driver manifest to the default registry "
     "(ses_registry_add_driver_file) and returns the driver's name."},
    {"has_driver", core_has_driver, METH_VARARGS,
     "has_driver(name) -> bool: whether the default registry knows a driver of that name."},
    {"task_spec_from_env", core_task_spec_from_env, METH_NOARGS,
     "task_spec_from_env() -> dict: ses_task_spec_from_env's fields."},
    {"task_shard_range", core_task_shard_range, METH_VARARGS,
     "task_shard_range(shard_index, shard_count, n) -> (begin, end)."},
    {"read_idx", core_read_idx, METH_VARARGS,
     "read_idx(path) -> ndarray: an idx file (MNIST's format, gzip or not)."},
    {"onnx_import", core_onnx_import, METH_VARARGS,
     "onnx_import(path, initializers_as_variables, graph_type) -> (graph, inputs, outputs, "
     "opset)."},
    {"version", core_version, METH_NOARGS, "version() -> str: libsession's version."},
    {"add_default_fallback", core_add_default_fallback, METH_VARARGS,
     "add_default_fallback(path): a manifest file or folder the default registry reads last, "
     "for drivers no other manifest claims (ses_registry_default_add_fallback); "
     "FailedPreconditionError once the default registry exists."},
    {"status_name", core_status_name, METH_VARARGS,
     "status_name(code) -> str: \"SES_NOT_FOUND\" for 2."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    "session._core",
    "libsession's C API for the session package (use the package, not this module).",
    -1,
    core_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__core(void) {
    PyObject *m;
    PyTypeObject *types[] = {&GraphType,     &NodeType,       &EdgeType,        &SessionType,
                             &PlanType,      &MonitoredType,  &RunContextType,  &DeviceTensorType};

    import_array();
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (PyType_Ready(types[i]) < 0)
            return NULL;
    m = PyModule_Create(&core_module);
    if (!m)
        return NULL;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const char *dot = strrchr(types[i]->tp_name, '.');
        if (PyModule_AddObjectRef(m, dot ? dot + 1 : types[i]->tp_name, (PyObject *)types[i]) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
