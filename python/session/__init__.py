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


def _machine_has_manifests():
    """Whether libsession's default search would find any manifest in the folders it reads
    (README, "Where drivers come from"): the user's, /etc's and the install's own."""
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    folders = [os.path.join(config, "session", "drivers.d"), "/etc/session/drivers.d",
               _core.manifest_dir()]
    for f in folders:
        try:
            if any(n.endswith(".json") for n in os.listdir(f)):
                return True
        except OSError:
            pass
    return False


def _add_bundled_drivers():
    # A wheel built by pip (pyproject.toml) carries the CPU driver in session/drivers/; it is
    # used when the machine's own drivers (or SESSION_DRIVER_FILES) do not provide one. On a
    # machine with no manifests at all, the folder is given to the default registry as it is
    # made (SESSION_ADD_DRIVER_FILES, set for that moment only), so that it does not warn that
    # it found none.
    bundled = [os.path.join(f, "drivers") for f in __path__
               if os.path.isdir(os.path.join(f, "drivers"))]
    if not bundled:
        return
    env_vars = ("SESSION_DRIVER_FILES", "SESSION_ADD_DRIVER_FILES")
    if not any(os.environ.get(v) for v in env_vars) and not _machine_has_manifests():
        os.environ["SESSION_ADD_DRIVER_FILES"] = ":".join(bundled)
        try:
            _core.has_driver("cpu")  # makes the default registry now
        finally:
            del os.environ["SESSION_ADD_DRIVER_FILES"]
        return
    for d in bundled:
        for name in sorted(os.listdir(d)):
            if name.endswith(".json") and not _core.has_driver(name[:-5]):
                try:
                    _core.add_driver_file(os.path.join(d, name))
                except Error:
                    pass


_add_bundled_drivers()
