/*
 * DeviceTensor and DLPack: values that stay on a session's device, and tensors exchanged with
 * other libraries without a copy (<session/dlpack.h>).
 *
 * `Session.eval(..., device_fetches=True)` hands a value computed on a device other than the
 * host back as a DeviceTensor (ses_eval_options_t.device_fetches); host values are NumPy arrays
 * as always, which speak DLPack themselves (`np.from_dlpack`, `torch.from_dlpack`). A
 * DeviceTensor has shape, dtype and device, copies home with numpy() (or np.asarray), is fed
 * back to its session without a copy, and exports itself through __dlpack__ where libsession
 * can (a CUDA device: kDLCUDA with the device pointer). A feed that is not an array but has
 * __dlpack__ and says it lives on a device (__dlpack_device__ other than the CPU) is taken in
 * through ses_session_tensor_from_dlpack, so a CUDA tensor of PyTorch or CuPy is read in place.
 */
#include "core.h"

#include <string.h>

#include <session/dlpack.h>

/* DLPack 0.6's DLManagedTensor, whose layout is DLPack's ABI (what <session/dlpack.h> gives
 * out and takes in): spelled out here so that the extension builds without dlpack.h. Only the
 * device and the deleter are read. */
typedef struct {
    void *data;
    struct {
        int32_t device_type, device_id;
    } device;
    int32_t ndim;
    struct {
        uint8_t code, bits;
        uint16_t lanes;
    } dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} py_dltensor_t;

typedef struct {
    py_dltensor_t dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} py_dlmanaged_t;

/* Gives @p m back to its producer (its deleter, if any). */
static void py_dlpack_delete(struct DLManagedTensor *m) {
    py_dlmanaged_t *v = (py_dlmanaged_t *)(void *)m;
    if (m && v->deleter)
        v->deleter(m);
}

#define PY_DL_CPU 1

typedef struct {
    PyObject_HEAD
    ses_tensor_t *t;
} DeviceTensorObject;

static void device_tensor_dealloc(DeviceTensorObject *self) {
    ses_tensor_release(self->t);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyObject *py_device_tensor_new(ses_tensor_t *t) {
    DeviceTensorObject *self = PyObject_New(DeviceTensorObject, &DeviceTensorType);

    if (!self) {
        ses_tensor_release(t);
        return NULL;
    }
    self->t = t;
    return (PyObject *)self;
}

ses_tensor_t *py_device_tensor_of(PyObject *obj) {
    if (!PyObject_TypeCheck(obj, &DeviceTensorType))
        return NULL;
    return ((DeviceTensorObject *)obj)->t;
}

static PyObject *device_tensor_numpy(DeviceTensorObject *self, PyObject *unused) {
    ses_tensor_t *host = NULL;
    ses_status_t st;

    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    st = ses_tensor_copy_to_host(self->t, &host);
    Py_END_ALLOW_THREADS
    if (st != SES_OK)
        return py_raise(st, NULL);
    return py_tensor_to_array(host);
}

static PyObject *device_tensor_array(DeviceTensorObject *self, PyObject *args, PyObject *kw) {
    PyObject *dtype = NULL, *copy = NULL, *array, *cast;
    static char *names[] = {"dtype", "copy", NULL};

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:__array__", names, &dtype, &copy))
        return NULL;
    array = device_tensor_numpy(self, NULL);
    if (!array || !dtype || dtype == Py_None)
        return array;
    cast = PyObject_CallMethod(array, "astype", "O", dtype);
    Py_DECREF(array);
    return cast;
}

static void dltensor_capsule_destructor(PyObject *capsule) {
    /* Still named "dltensor": nobody consumed it, so its deleter is ours to call. */
    if (PyCapsule_IsValid(capsule, "dltensor"))
        py_dlpack_delete(PyCapsule_GetPointer(capsule, "dltensor"));
}

static PyObject *device_tensor_dlpack(DeviceTensorObject *self, PyObject *args, PyObject *kw) {
    PyObject *stream = NULL, *capsule;
    struct DLManagedTensor *m = NULL;
    static char *names[] = {"stream", NULL};
    ses_status_t st;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O:__dlpack__", names, &stream))
        return NULL;
    st = ses_tensor_to_dlpack(self->t, &m);
    if (st != SES_OK) {
        char *err = py_error_copy();
        PyErr_Format(PyExc_BufferError, "%s", err);
        free(err);
        return NULL;
    }
    capsule = PyCapsule_New(m, "dltensor", dltensor_capsule_destructor);
    if (!capsule)
        py_dlpack_delete(m);
    return capsule;
}

static PyObject *device_tensor_dlpack_device(DeviceTensorObject *self, PyObject *unused) {
    struct DLManagedTensor *m = NULL;
    int type, id;
    ses_status_t st;

    (void)unused;
    st = ses_tensor_to_dlpack(self->t, &m);
    if (st != SES_OK) {
        char *err = py_error_copy();
        PyErr_Format(PyExc_BufferError, "%s", err);
        free(err);
        return NULL;
    }
    type = (int)((py_dlmanaged_t *)(void *)m)->dl_tensor.device.device_type;
    id = (int)((py_dlmanaged_t *)(void *)m)->dl_tensor.device.device_id;
    py_dlpack_delete(m);
    return Py_BuildValue("(ii)", type, id);
}

static PyObject *device_tensor_get_shape(DeviceTensorObject *self, void *closure) {
    const size_t rank = ses_tensor_rank(self->t);
    PyObject *shape = PyTuple_New((Py_ssize_t)rank);

    (void)closure;
    if (!shape)
        return NULL;
    for (size_t i = 0; i < rank; i++) {
        PyObject *d = PyLong_FromLongLong((long long)ses_tensor_dims(self->t)[i]);
        if (!d) {
            Py_DECREF(shape);
            return NULL;
        }
        PyTuple_SET_ITEM(shape, (Py_ssize_t)i, d);
    }
    return shape;
}

static PyObject *device_tensor_get_dtype(DeviceTensorObject *self, void *closure) {
    const int typenum = py_npy_type_of(ses_tensor_dtype(self->t));

    (void)closure;
    if (typenum < 0) {
        PyErr_SetString(PyExc_TypeError, "a tensor of a dtype NumPy cannot hold");
        return NULL;
    }
    return (PyObject *)PyArray_DescrFromType(typenum);
}

static PyObject *device_tensor_get_device(DeviceTensorObject *self, void *closure) {
    const char *d = ses_tensor_device(self->t);

    (void)closure;
    return PyUnicode_FromString(d ? d : "cpu");
}

static PyObject *device_tensor_repr(DeviceTensorObject *self) {
    PyObject *shape = device_tensor_get_shape(self, NULL), *r;
    const char *d = ses_tensor_device(self->t);

    if (!shape)
        return NULL;
    r = PyUnicode_FromFormat("DeviceTensor(shape=%R, dtype=%s, device=%s)", shape,
                             ses_dtype_name(ses_tensor_dtype(self->t)), d ? d : "cpu");
    Py_DECREF(shape);
    return r;
}

static PyMethodDef device_tensor_methods[] = {
    {"numpy", (PyCFunction)device_tensor_numpy, METH_NOARGS,
     "numpy() -> ndarray: a copy of the value on the host (fails once its session closed)."},
    {"__array__", (PyCFunction)(void (*)(void))device_tensor_array, METH_VARARGS | METH_KEYWORDS,
     "np.asarray(t): numpy(), cast to dtype if given."},
    {"__dlpack__", (PyCFunction)(void (*)(void))device_tensor_dlpack,
     METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None) -> PyCapsule: the tensor as DLPack, without a copy (a CUDA "
     "device's memory, valid until the consumer's deleter runs or the session closes). Raises "
     "BufferError where libsession has no DLPack type for the device (OpenCL, XRT)."},
    {"__dlpack_device__", (PyCFunction)device_tensor_dlpack_device, METH_NOARGS,
     "__dlpack_device__() -> (device_type, device_id), as DLPack numbers them (2: CUDA)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef device_tensor_getset[] = {
    {"shape", (getter)device_tensor_get_shape, NULL, "The dims, as a tuple.", NULL},
    {"dtype", (getter)device_tensor_get_dtype, NULL, "The NumPy dtype (bf16: uint16).", NULL},
    {"device", (getter)device_tensor_get_device, NULL, "The device it lives on, \"opencl:0\".",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject DeviceTensorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "session._core.DeviceTensor",
    .tp_basicsize = sizeof(DeviceTensorObject),
    .tp_dealloc = (destructor)device_tensor_dealloc,
    .tp_repr = (reprfunc)device_tensor_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A value that lives on a session's device (Session.eval(..., device_fetches=True)):\n"
              "shape, dtype, device; numpy() copies it home; fed back to its session it is read\n"
              "in place; __dlpack__ hands it to PyTorch or CuPy without a copy (CUDA devices).",
    .tp_methods = device_tensor_methods,
    .tp_getset = device_tensor_getset,
};

int py_dlpack_feed(ses_session_t *s, PyObject *obj, ses_tensor_t **out) {
    PyObject *device = NULL, *capsule = NULL;
    int type = 0, id = 0, rc = 0;

    *out = NULL;
    if (PyArray_Check(obj) || !PyObject_HasAttrString(obj, "__dlpack_device__"))
        return 0;
    device = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (!device)
        return -1;
    if (!PyArg_ParseTuple(device, "ii", &type, &id)) {
        Py_DECREF(device);
        return -1;
    }
    Py_DECREF(device);
    if (type == PY_DL_CPU)
        return 0; /* NumPy takes it */
    capsule = PyObject_CallMethod(obj, "__dlpack__", NULL);
    if (!capsule)
        return -1;
    struct DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
    if (!m) {
        Py_DECREF(capsule);
        return -1;
    }
    ses_status_t st = ses_session_tensor_from_dlpack(s, m, out);
    if (st != SES_OK) {
        Py_DECREF(capsule); /* still ours: its destructor calls the deleter */
        py_raise(st, NULL);
        return -1;
    }
    /* The tensor owns it now: the capsule must not call the deleter. */
    rc = PyCapsule_SetName(capsule, "used_dltensor");
    Py_DECREF(capsule);
    return rc < 0 ? -1 : 1;
}
