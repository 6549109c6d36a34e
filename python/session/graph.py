"""Graphs: placeholders, constants, variables and ONNX ops, and the Edges between them."""

import itertools

import numpy as np

from . import _core

__all__ = ["Graph", "Node", "Edge", "dtype_code"]

_CODES = {
    np.dtype(np.float32): 1, np.dtype(np.float64): 2, np.dtype(np.float16): 3,
    np.dtype(np.int8): 5, np.dtype(np.int16): 6, np.dtype(np.int32): 7, np.dtype(np.int64): 8,
    np.dtype(np.uint8): 9, np.dtype(np.uint16): 10, np.dtype(np.uint32): 11,
    np.dtype(np.uint64): 12, np.dtype(np.bool_): 13,
    np.dtype(object): 31,  # SES_STRING: object arrays of str
}
_BY_NAME = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i8": np.int8,
            "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u16": np.uint16,
            "u32": np.uint32, "u64": np.uint64, "bool": np.bool_, "string": object}


def _np_dtype(dtype):
    if isinstance(dtype, str) and dtype in _BY_NAME:
        return np.dtype(_BY_NAME[dtype])
    try:
        return np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{dtype!r} is not a dtype") from e


def dtype_code(dtype):
    """libsession's ``ses_dtype_t`` value for a NumPy dtype (or "f32", "i64", ...)."""
    d = _np_dtype(dtype)
    try:
        return _CODES[d]
    except KeyError:
        raise TypeError(f"dtype {d} has no libsession type (use float16/32/64, (u)int8-64, "
                        "bool or object for strings)") from None


class Node(_core.Node):
    """A node of a :class:`Graph`: an op with inputs, attributes and outputs.

    ``name``, ``op``, ``outputs`` (a tuple of Edges), ``num_inputs``, ``graph``; ``device`` may
    be set to pin the node to one of the session's devices. Use it as a target of
    :meth:`Session.eval` to run it for its effect (an optimizer step, a group).
    """

    __slots__ = ()


def _binary(op, swap=False):
    def method(self, other):
        g = self.graph
        if not isinstance(other, _core.Edge):
            other = g.constant(None, np.asarray(other, dtype=g._dtype_of(self, np.float32)))
        return g.op(op, [other, self] if swap else [self, other])
    method.__name__ = f"__{'r' if swap else ''}{op.lower()}__"
    method.__doc__ = f"``{op}`` of the two operands (a non-Edge becomes a constant)."
    return method


class Edge(_core.Edge):
    """An output of a node, ``(node, index)``, written ``"name:index"``.

    Edges are what :meth:`Session.eval` fetches and what feeds override: a feed may replace any
    edge of the graph, not only a placeholder. ``+ - * / @`` and unary ``-`` add ``Add``,
    ``Sub``, ``Mul``, ``Div``, ``MatMul`` and ``Neg`` nodes; a NumPy array or number on the
    other side becomes a constant.
    """

    __slots__ = ()

    __add__ = _binary("Add")
    __radd__ = _binary("Add", swap=True)
    __sub__ = _binary("Sub")
    __rsub__ = _binary("Sub", swap=True)
    __mul__ = _binary("Mul")
    __rmul__ = _binary("Mul", swap=True)
    __truediv__ = _binary("Div")
    __rtruediv__ = _binary("Div", swap=True)
    __matmul__ = _binary("MatMul")
    __rmatmul__ = _binary("MatMul", swap=True)

    def __neg__(self):
        """``Neg`` of the edge."""
        return self.graph.op("Neg", [self])

    # Edges compare by identity of (node, index); ``==`` is not an Equal op.
    __eq__ = _core.Edge.__eq__
    __ne__ = _core.Edge.__ne__
    __hash__ = _core.Edge.__hash__

    @property
    def dtype(self):
        """The edge's NumPy dtype when the graph knows it (placeholders, constants, variables,
        ONNX inputs), else None."""
        return self.graph._dtypes.get(self)


_core._set_types(Node, Edge)


class Graph(_core.Graph):
    """A computation graph: nodes with ONNX op types, their attributes, inputs and outputs.

    Build it with :meth:`placeholder`, :meth:`constant`, :meth:`variable` and :meth:`op` (and
    the layers of :mod:`session.train`), then open :class:`Session`\\ s on it. Every change bumps
    :attr:`version`; sessions recompile their plans. Building is thread-safe with respect to
    evaluations of the graph (a change waits for compiles in flight), but a hook must not change
    the graph of the session it runs in.
    """

    def __init__(self):
        super().__init__()
        self._dtypes = {}
        self._counter = itertools.count(1)

    def _dtype_of(self, edge, default=None):
        return self._dtypes.get(edge, default)

    def _fresh(self, prefix):
        while True:
            name = f"{prefix}_{next(self._counter)}"
            try:
                self.node(name)
            except LookupError:
                return name

    def placeholder(self, name, dtype=np.float32, shape=()):
        """Adds an input that must be fed, and returns its :class:`Edge`.

        ``shape`` is a sequence of sizes; ``None`` (or -1) marks a dimension of any size:
        ``g.placeholder("x", np.float32, [None, 784])``. A fed value must match the dtype and the
        fixed dimensions. ``name`` must be unique in the graph (None: generated).
        """
        code = dtype_code(dtype)
        dims = [-1 if d is None else int(d) for d in shape]
        e = super()._placeholder(name, code, dims)
        self._dtypes[e] = _np_dtype(dtype)
        return e

    def constant(self, name, value, dtype=None):
        """Adds a constant holding ``value`` (an array-like, copied) and returns its Edge.

        Python numbers and lists become float32 (floats) or int64 (ints) unless ``dtype`` says
        otherwise; NumPy arrays keep their dtype.
        """
        a = _as_array(value, dtype)
        e = super()._constant(name, a)
        self._dtypes[e] = a.dtype
        return e

    def variable(self, name, initial_value, dtype=None):
        """Adds a variable and returns its Edge.

        A variable lives in each session's scope under ``name``; it is set from
        ``initial_value`` (an array-like, or an Edge whose value initializes it) the first time
        an eval needs it, and keeps its value across evals. Sessions never share variables:
        read and write them with ``session.variables[name]``.
        """
        if isinstance(initial_value, _core.Edge):
            init = initial_value
            dt = self._dtypes.get(init)
        else:
            a = _as_array(initial_value, dtype)
            init = super()._constant(f"{name}/initial_value" if name else None, a)
            self._dtypes[init] = dt = a.dtype
        e = super()._variable(name, init)
        if dt is not None:
            self._dtypes[e] = dt
        return e

    def op(self, op_type, inputs, name=None, n_outputs=None, **attrs):
        """Adds a node of ONNX op ``op_type`` (``"Add"``, ``"MatMul"``, ``"Softmax"``, ...).

        ``inputs`` is a list of Edges (Nodes for the control inputs of a ``NoOp``).
        Attributes are keyword arguments: ints, floats, strings, or lists of numbers
        (``g.op("Gemm", [a, b], transB=1, alpha=0.5)``). ``n_outputs`` None takes the op's
        default. Returns the output Edge for an op with one output, a tuple of Edges for several,
        and the Node for an op without outputs. An unknown op raises NotFoundError listing close
        names; a wrong input count or an Edge of another graph InvalidArgumentError.
        """
        if isinstance(inputs, (_core.Edge, _core.Node)):
            inputs = [inputs]
        node = super()._add_node(op_type, name, list(inputs), list(attrs.items()),
                                 0 if n_outputs is None else int(n_outputs))
        outs = node.outputs
        if len(outs) == 1:
            return outs[0]
        if not outs:
            return node
        return outs

    def group(self, nodes, name=None):
        """Adds a ``NoOp`` that runs every one of ``nodes`` (Nodes or Edges) when it is a target,
        and returns it."""
        return super()._group(name, list(nodes))

    def __getitem__(self, text):
        """``g["name"]`` or ``g["name:1"]``: the Edge of that name (:meth:`edge`)."""
        return self.edge(text)

    def __contains__(self, name):
        """Whether the graph has a node named ``name``."""
        try:
            self.node(name)
            return True
        except LookupError:
            return False

    def __repr__(self):
        return f"<session.Graph version {self.version}>"


# The exceptions a DLPack producer or np.from_dlpack raise for a tensor they cannot exchange
# (a dtype NumPy's DLPack does not know, a tensor that needs grad, ...).
_DLPACK_REFUSALS = (BufferError, TypeError, ValueError, RuntimeError)


def _host_view(value):
    """``value`` itself, or for an object in host memory that speaks DLPack (``__dlpack__`` and
    ``__dlpack_device__`` saying kDLCPU: a PyTorch CPU tensor, a JAX or CuPy host array, ...) an
    ndarray over its memory, without a copy (``np.from_dlpack``, NumPy >= 1.22). Where the
    exchange is refused the object is left to ``np.asarray``."""
    if isinstance(value, (np.ndarray, np.generic)) or not hasattr(value, "__dlpack__"):
        return value
    from_dlpack = getattr(np, "from_dlpack", None)
    device = getattr(value, "__dlpack_device__", None)
    if from_dlpack is None or device is None:
        return value
    try:
        if device()[0] != 1:  # not kDLCPU: the extension reads device tensors in place
            return value
        return from_dlpack(value)
    except _DLPACK_REFUSALS:
        return value


def _as_array(value, dtype=None):
    """``value`` as an ndarray: arrays keep their dtype unless ``dtype`` is given; Python floats
    become float32 and ints int64. Host DLPack objects are viewed without a copy (_host_view)."""
    value = _host_view(value)
    if dtype is not None:
        return np.asarray(value, dtype=_np_dtype(dtype))
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    a = np.asarray(value)
    if a.dtype == np.float64:
        return a.astype(np.float32)
    return a
