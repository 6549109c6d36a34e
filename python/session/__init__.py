"""libsession for Python: evaluate computation graphs in sessions, on plugin devices.

::

    import numpy as np, session as ses
    g = ses.Graph()
    a = g.placeholder("a", np.float32, [None, 3])
    b = g.constant("b", np.ones(3, np.float32))
    c = g.op("Mul", [a, b], name="c")
    with ses.Session(g, devices=["gpu:0"]) as s:
        print(s.eval(c, {a: np.arange(6, dtype=np.float32).reshape(2, 3)}))

A feed overrides any edge, nothing upstream of a fed edge runs, and only what the fetches need
is computed. :mod:`session.train` builds layers, losses and optimizers and runs monitored
training loops; :mod:`session.onnx` imports models; :func:`drivers` and :func:`devices` say
what :command:`session-info` says.
"""

import os
import pkgutil

# In a build tree the C extension sits in <build>/python/session/ while these files are in
# <source>/python/session/: with both on sys.path, the package spans the two folders.
__path__ = pkgutil.extend_path(__path__, __name__)

from . import _core  # noqa: E402
from .errors import (  # noqa: E402,F401
    AlreadyExistsError, CancelledError, Error, FailedPreconditionError, IncompatibleError,
    InternalError, InvalidArgumentError, NotFoundError, OutOfMemoryError, Status,
    UnavailableError, UnimplementedError)
from .graph import Edge, Graph, Node  # noqa: E402,F401
from .session import Plan, Session, Variables  # noqa: E402,F401
from .task import TaskSpec  # noqa: E402,F401
from ._core import DeviceTensor  # noqa: E402,F401
from . import datasets, onnx, train  # noqa: E402,F401

__version__ = _core.version()

__all__ = [
    "Graph", "Node", "Edge", "Session", "Plan", "Variables", "TaskSpec", "DeviceTensor",
    "drivers", "devices",
    "version", "train", "onnx", "datasets", "Status", "Error", "InvalidArgumentError",
    "NotFoundError", "FailedPreconditionError", "OutOfMemoryError", "UnimplementedError",
    "IncompatibleError", "UnavailableError", "InternalError", "CancelledError",
    "AlreadyExistsError",
]


def drivers():
    """Every driver libsession found, as ``session-info --json`` lists them: a list of dicts
    with name, state ("ready", "no-devices", "failed", ...), version, vendor, abi_major,
    abi_minor, opset_version, priority, build_features, manifest, library, error (None or
    {"code", "message"}) and devices (names). Loads every enabled driver."""
    return _core.drivers()


def devices():
    """Every device of the loaded drivers, as ``session-info --json`` lists them: dicts with
    name ("cpu:0", "cuda:1"), kind, driver, ordinal, description, stable_id, memory_bytes and
    caps."""
    return _core.devices()


def version():
    """libsession's version, "0.1.0"."""
    return _core.version()


def _add_bundled_drivers():
    # A wheel built by pip (pyproject.toml) carries the CPU driver in session/drivers/. Its folder
    # is given to libsession's default registry before that is made, as a fallback searched after
    # the machine's manifests (ses_registry_default_add_fallback): the bundled driver is used where
    # no installed one claims its name, and a machine without manifests gets no warning that it
    # has none. Should the default registry exist already (libsession shared with another user in
    # this process), each bundled driver it lacks is added to it instead.
    for folder in __path__:
        d = os.path.join(os.path.abspath(folder), "drivers")
        if not os.path.isdir(d):
            continue
        try:
            _core.add_default_fallback(d)
            continue
        except (FailedPreconditionError, InvalidArgumentError):
            pass  # the registry exists already, or the path has a ':'
        for name in sorted(os.listdir(d)):
            if name.endswith(".json") and not _core.has_driver(name[:-5]):
                try:
                    _core.add_driver_file(os.path.join(d, name))
                except Error:
                    pass


_add_bundled_drivers()
