"""Sessions: evaluate a graph's edges, with feeds, variables, compiled plans and checkpoints."""

import collections.abc
import os

import numpy as np

from . import _core
from .errors import FailedPreconditionError
from .graph import _as_array, _host_view

__all__ = ["Session", "Plan", "Variables"]

_FALLBACK = {"allow": 0, "warn": 1, "deny": 2}
_LOG_LEVEL = {"error": 0, "warn": 1, "info": 2, "debug": 3}


def _edge(graph, key, what):
    if isinstance(key, _core.Edge):
        return key
    if isinstance(key, str):
        return graph.edge(key)
    raise TypeError(f"{what}: expected an Edge or a \"name[:index]\" str, got "
                    f"{type(key).__name__}")


def _target(graph, t):
    if isinstance(t, (_core.Node, _core.Edge)):
        return t
    if isinstance(t, str):
        try:
            return graph.node(t)
        except LookupError:
            return graph.edge(t)
    raise TypeError(f"target: expected a Node, an Edge or a node name, got {type(t).__name__}")


def _on_a_device(value):
    """Whether ``value`` is a DeviceTensor, or a DLPack object that lives on a device (not the
    CPU): those go to the extension as they are, which reads them in place."""
    if isinstance(value, _core.DeviceTensor):
        return True
    device = getattr(value, "__dlpack_device__", None)
    if device is None or isinstance(value, np.ndarray):
        return False
    try:
        return device()[0] != 1  # 1: kDLCPU
    except Exception:
        return False


def _feed_value(graph, edge, value):
    if isinstance(value, np.ndarray) or _on_a_device(value):
        return value
    return _as_array(value, graph._dtypes.get(edge) if hasattr(graph, "_dtypes") else None)


def _split_feeds(graph, feed_dict):
    if not feed_dict:
        return [], []
    if not isinstance(feed_dict, collections.abc.Mapping):
        raise TypeError(f"feed_dict: expected a mapping of Edge or name to value, got "
                        f"{type(feed_dict).__name__}")
    edges, values = [], []
    for k, v in feed_dict.items():
        e = _edge(graph, k, "feed_dict key")
        edges.append(e)
        values.append(_feed_value(graph, e, v))
    return edges, values


class _Fetches:
    """The fetch structure of eval/run: one Edge, a list (or tuple) or a dict of them; a Node in
    a list or dict runs as a target and gives None."""

    __slots__ = ("kind", "keys", "edges", "positions", "targets", "n")

    def __init__(self, graph, fetches):
        self.targets = []
        self.edges = []
        self.positions = []
        if fetches is None:
            self.kind, self.keys, self.n = "none", None, 0
            return
        if isinstance(fetches, (_core.Edge, str, _core.Node)):
            self.kind, self.keys, items = "single", None, [fetches]
        elif isinstance(fetches, collections.abc.Mapping):
            self.kind, self.keys = "dict", list(fetches.keys())
            items = list(fetches.values())
        elif isinstance(fetches, (list, tuple)):
            self.kind, self.keys, items = ("tuple" if isinstance(fetches, tuple) else "list",
                                           None, list(fetches))
        else:
            raise TypeError("fetches: expected an Edge, a name, or a list, tuple or dict of "
                            f"them, got {type(fetches).__name__}")
        self.n = len(items)
        for i, f in enumerate(items):
            if isinstance(f, _core.Node):
                self.targets.append(f)
                continue
            if isinstance(f, str):
                try:
                    f = graph.edge(f)
                except LookupError:
                    node = graph.node(f)  # a node without outputs: run it
                    if node.outputs:
                        raise
                    self.targets.append(node)
                    continue
            elif not isinstance(f, _core.Edge):
                raise TypeError(f"fetch: expected an Edge, a Node or a name, got "
                                f"{type(f).__name__}")
            self.edges.append(f)
            self.positions.append(i)

    def build(self, values):
        if self.kind == "none":
            return None
        if len(self.positions) == self.n:
            out = values
        else:
            out = [None] * self.n
            for p, v in zip(self.positions, values):
                out[p] = v
        if self.kind == "single":
            return out[0]
        if self.kind == "list":
            return list(out)
        if self.kind == "tuple":
            return tuple(out)
        return dict(zip(self.keys, out))


class Session(_core.Session):
    """A session: a graph opened on devices, with its own variables and compiled plans.

    ``Session(graph, devices=["gpu:0", "cpu"], fallback="warn", threads=0)`` opens ``graph``
    on the devices in priority order (the CPU is always added last). ``fallback`` says what
    happens when a node has no kernel on the device it prefers: ``"allow"`` runs it on the next
    device silently, ``"warn"`` (default) does so with a warning, ``"deny"`` fails the compile.
    ``threads`` sets the CPU kernels' threads (0: the driver's default). ``log_level``
    ("error", "warn", "info", "debug"), ``fusion``, ``graphs``, ``layout`` (bools: the blocked
    layout between convolutions on a CPU-only session), ``in_place`` (outputs written over inputs
    that die, and Concats laid out in place), ``fold`` (constant folding) and ``driver_options``
    (a dict ``{"driver.cpu.threads": "2"}`` or a list of "key=value") are passed on.

    Use it as a context manager, or call :meth:`close`; variables are kept across evals and
    independent of other sessions. The GIL is released while it computes: several threads may
    eval on one session at once.
    """

    def __init__(self, graph, devices=None, fallback="warn", threads=0, log_level=None,
                 fusion=None, graphs=None, driver_options=None, layout=None, in_place=None,
                 fold=None):
        if isinstance(devices, str):
            devices = [devices]
        if isinstance(fallback, str):
            if fallback not in _FALLBACK:
                raise ValueError(f"fallback: {fallback!r} is not allow, warn or deny")
            fallback = _FALLBACK[fallback]
        if isinstance(log_level, str):
            if log_level not in _LOG_LEVEL:
                raise ValueError(f"log_level: {log_level!r} is not error, warn, info or debug")
            log_level = _LOG_LEVEL[log_level]
        if isinstance(driver_options, collections.abc.Mapping):
            driver_options = [f"{k}={v}" for k, v in driver_options.items()]
        super().__init__(graph, devices, fallback, threads,
                         -1 if log_level is None else int(log_level),
                         -1 if fusion is None else int(bool(fusion)),
                         -1 if graphs is None else int(bool(graphs)), driver_options,
                         -1 if layout is None else int(bool(layout)),
                         -1 if in_place is None else int(bool(in_place)),
                         -1 if fold is None else int(bool(fold)))
        self._variables = Variables(self)

    def eval(self, fetches=None, feed_dict=None, targets=None, *, private=False,
             device_fetches=False):
        """Evaluates ``fetches``, computing only what they need, and returns their values.

        ``fetches`` is an Edge or a ``"name"``/``"name:index"`` string (returns one ndarray), a
        list or tuple of them (returns a list or tuple), or a dict of them (returns a dict with
        the same keys); a Node among them runs for its effect and gives None. ``targets`` are
        Nodes (or Edges, or names) to run for their effect only, such as an optimizer step.

        ``feed_dict`` maps Edges (or their names) to values: any array-like (ndarray, buffer,
        ``__array_interface__``, nested lists). **A feed overrides any edge**, not only a
        placeholder: feeding an intermediate or a constant replaces its value wherever it is
        consumed, and nothing upstream of a fed edge runs (``c = a * b``: feed ``a`` to compute
        ``c`` from it; feed ``c`` itself and ``a`` is not needed). Fetching a fed edge gives the
        fed value. C-contiguous arrays of the right dtype are read in place, without a copy;
        lists take the dtype of the placeholder (or float32/int64).

        ``private=True`` runs in a private scope: variables the eval updates are copied first,
        so the session's variables never change (a what-if step).

        ``device_fetches=True`` hands a value computed on a device other than the host back as
        a :class:`DeviceTensor` there (one device-to-device copy, never through the host), which
        this session reads in place when it is fed back; host values are ndarrays as always.
        Feeds may also be DeviceTensors, or any object with ``__dlpack__`` on a device this
        session has (a CUDA tensor of PyTorch or CuPy), read without a copy; a DLPack object in
        host memory (a PyTorch CPU tensor, ...) is viewed through ``np.from_dlpack``, also
        without a copy. Host results are ndarrays, which speak DLPack: ``np.from_dlpack(y)``,
        ``torch.from_dlpack(y)``.

        Errors raise the :class:`session.Error` subclass of the library's status, with its
        message naming the node, edge and both sides of a mismatch. The GIL is released while
        the session computes.
        """
        g = self.graph
        f = _Fetches(g, fetches)
        feed_edges, feed_values = _split_feeds(g, feed_dict)
        tlist = list(f.targets)
        if targets is not None:
            if isinstance(targets, (_core.Node, _core.Edge, str)):
                targets = [targets]
            tlist.extend(_target(g, t) for t in targets)
        values = self._eval(f.edges, feed_edges, feed_values, tlist, private, device_fetches)
        return f.build(values)

    def run(self, fetches=None, feed_dict=None, targets=None, **kwargs):
        """The same as :meth:`eval` (TensorFlow's name)."""
        return self.eval(fetches, feed_dict, targets, **kwargs)

    def compile(self, fetches=None, feeds=(), targets=None):
        """Compiles what :meth:`eval` would run into a :class:`Plan`, for hot loops.

        ``feeds`` lists the edges (or names) whose values each :meth:`Plan.run` gives, in that
        order. Shapes, placement, kernels and memory are settled now for the fed edges' declared
        types, so errors come from here and :attr:`Plan.placement` answers before any run
        (with a ``None`` dimension or a fed intermediate, at the first run or
        :meth:`Plan.prepare`).
        """
        g = self.graph
        f = _Fetches(g, fetches)
        if isinstance(feeds, (_core.Edge, str)):
            feeds = [feeds]
        fed = [_edge(g, e, "feeds") for e in feeds]
        tlist = list(f.targets)
        if targets is not None:
            if isinstance(targets, (_core.Node, _core.Edge, str)):
                targets = [targets]
            tlist.extend(_target(g, t) for t in targets)
        return Plan(self, self._compile(f.edges, fed, tlist), f, fed)

    @property
    def variables(self):
        """The session's variables: a mutable mapping from name to ndarray.

        ``s.variables["w"]`` reads a copy (initializing the variables first if no eval has
        yet); ``s.variables["w"] = arr`` sets it (copied; its dtype and shape must match the
        variable's when it has a value). Optimizer state ("w/momentum", "w/adam_m", ...) is
        listed too.
        """
        return self._variables

    def save(self, path, step=0, keep_last=5):
        """Saves the variables as a safetensors checkpoint, atomically.

        A ``path`` ending in ".safetensors" is written as that one file; any other path is a
        checkpoint folder: ``path/ckpt-<step>.safetensors`` plus a ``latest`` pointer, keeping
        the newest ``keep_last`` (0: all). ``step`` is stored in the file's metadata. The GIL is
        released while it writes.
        """
        path = os.fspath(path)
        self._save(path, int(step), not path.endswith(".safetensors"), int(keep_last))

    def restore(self, path, allow_missing=False):
        """Restores variables from a checkpoint file or folder (its latest); returns its step.

        All or nothing: a name that is not a variable, or a dtype or shape that differs, raises
        an error listing every mismatch, and no variable changes. Variables the file lacks are
        an error unless ``allow_missing``. The GIL is released while it reads.
        """
        path = os.fspath(path)
        return self._restore(path, os.path.isdir(path), bool(allow_missing))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return f"<session.Session {'closed' if self.closed else 'open'}>"


class Plan:
    """A compiled plan of a :class:`Session` (:meth:`Session.compile`): run it many times."""

    __slots__ = ("_session", "_plan", "_fetches", "_feeds", "_dtypes")

    def __init__(self, session, plan, fetches, feeds):
        self._session = session
        self._plan = plan
        self._fetches = fetches
        self._feeds = tuple(feeds)
        dtypes = getattr(session.graph, "_dtypes", {})
        self._dtypes = [dtypes.get(e) for e in self._feeds]

    def _values(self, values):
        if len(values) == 1 and isinstance(values[0], collections.abc.Mapping):
            m = values[0]
            g = self._session.graph
            by_edge = {_edge(g, k, "plan feed"): v for k, v in m.items()}
            missing = [e.name for e in self._feeds if e not in by_edge]
            if missing or len(by_edge) != len(self._feeds):
                raise ValueError(f"plan: feed exactly the compiled edges "
                                 f"{[e.name for e in self._feeds]}")
            values = [by_edge[e] for e in self._feeds]
        return [v if isinstance(v, np.ndarray) or _on_a_device(v) else _as_array(v, d)
                for v, d in zip(values, self._dtypes)] + list(values[len(self._dtypes):])

    def run(self, *values):
        """Runs the plan with one value per fed edge, in the order given to compile (or one
        dict keyed by those edges), and returns the fetches in the structure compile got them.
        A value of another shape recompiles the plan's shapes. The GIL is released meanwhile.
        """
        return self._fetches.build(self._plan._run(self._values(values), False))

    __call__ = run

    def prepare(self, *values):
        """Compiles the plan for these values' types without running it (errors come now)."""
        self._plan._run(self._values(values), True)

    @property
    def feeds(self):
        """The fed edges, in the order :meth:`run` takes their values."""
        return self._feeds

    @property
    def placement(self):
        """The placement summary: nodes per device, then each node that fell back and why."""
        return self._plan.placement

    @property
    def step_count(self):
        """Steps (kernel launches and copies) one run makes."""
        return self._plan.step_count

    def device_of(self, node):
        """The device the plan placed ``node`` (a Node, an Edge or a name) on, or None."""
        if isinstance(node, str):
            node = self._session.graph.node(node)
        return self._plan.node_device(node)

    def transfers(self):
        """Bytes and copies between host and devices of every run so far (a dict)."""
        return self._plan.transfers()

    def close(self):
        """Frees the plan now; later runs raise FailedPreconditionError."""
        self._plan.close()


class Variables(collections.abc.MutableMapping):
    """A session's variables by name (``session.variables``): reads copy, writes copy."""

    __slots__ = ("_session",)

    def __init__(self, session):
        self._session = session

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"variable names are str, not {type(name).__name__}")
        s = self._session
        v = s._var_get(name)
        if v is None and not s.closed:
            try:
                s.initialize_variables()
            except Exception:  # an initializer that needs a feed: the name stays missing
                pass
            v = s._var_get(name)
        if v is None:
            raise KeyError(name)
        return v

    def __setitem__(self, name, value):
        if not isinstance(name, str):
            raise TypeError(f"variable names are str, not {type(name).__name__}")
        s = self._session
        if s.closed:
            raise FailedPreconditionError("variables: the session is closed")
        old = s._var_get(name)
        value = _host_view(value)
        if old is None:
            dt = getattr(s.graph, "_dtypes", {}).get(_maybe_edge(s.graph, name))
            a = np.asarray(value, dtype=dt) if dt is not None and not isinstance(
                value, np.ndarray) else _as_array(value)
        else:
            a = np.asarray(value, dtype=old.dtype if not isinstance(value, np.ndarray) else None)
            if a.dtype != old.dtype or a.shape != old.shape:
                from .errors import InvalidArgumentError
                raise InvalidArgumentError(
                    f"variable \"{name}\" is {old.dtype}{list(old.shape)}, the value "
                    f"{a.dtype}{list(a.shape)}")
        s._var_set(name, a)

    def __delitem__(self, name):
        if not self._session._var_del(name):
            raise KeyError(name)

    def __iter__(self):
        return iter(self._session._var_names())

    def __len__(self):
        return len(self._session._var_names())

    def __contains__(self, name):
        return isinstance(name, str) and self._session._var_get(name) is not None

    def __repr__(self):
        return f"<session.Variables {self._session._var_names()}>"


def _maybe_edge(graph, name):
    try:
        return graph.edge(name)
    except Exception:
        return None
