"""DeviceTensor and DLPack: device_fetches, feeding device values back, the DLPack protocol."""
import os

import numpy as np
import pytest

import session as ses
from session import _core


def _mul_graph():
    g = ses.Graph()
    a = g.placeholder("a", np.float32, [2, 3])
    b = g.constant("b", np.full(3, 2.0, np.float32))
    c = g.op("Mul", [a, b], name="c")
    d = g.op("Add", [c, b], name="d")
    return g, a, c, d


X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_host_results_speak_dlpack():
    g, a, c, _ = _mul_graph()
    with ses.Session(g) as s:
        y = s.eval(c, {a: X})
    assert y.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(y), X * 2)
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(torch.from_dlpack(y).numpy(), X * 2)


def test_device_fetches_on_the_cpu_give_arrays():
    g, a, c, _ = _mul_graph()
    with ses.Session(g) as s:
        y = s.eval(c, {a: X}, device_fetches=True)
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, X * 2)


def test_a_cpu_dlpack_object_is_fed_as_an_array():
    torch = pytest.importorskip("torch")
    g, a, c, _ = _mul_graph()
    with ses.Session(g) as s:
        y = s.eval(c, {a: torch.from_numpy(X.copy())})
    np.testing.assert_array_equal(y, X * 2)


@pytest.fixture
def opencl():
    manifest = os.environ.get("SESSION_TEST_OPENCL_MANIFEST")
    if not manifest:
        pytest.skip("no OpenCL driver in this build (or an ASan build, where PoCL is not run)")
    if not _core.has_driver("opencl"):
        _core.add_driver_file(manifest)
    if not any(d["name"] == "opencl:0" for d in ses.devices()):
        pytest.skip("the OpenCL driver has no device here")
    return "opencl:0"


def test_device_fetches_keep_values_on_the_device(opencl):
    g, a, c, d = _mul_graph()
    with ses.Session(g, devices=[opencl], fallback="deny") as s:
        y = s.eval(c, {a: X}, device_fetches=True)
        assert isinstance(y, ses.DeviceTensor)
        assert y.device == "opencl:0"
        assert y.shape == (2, 3)
        assert y.dtype == np.float32
        assert "opencl:0" in repr(y)
        np.testing.assert_array_equal(y.numpy(), X * 2)
        np.testing.assert_array_equal(np.asarray(y), X * 2)
        np.testing.assert_array_equal(np.asarray(y, dtype=np.float64), X * 2)
        # Fed back: d = c + b reads the device value in place (c is fed, so Mul does not run).
        z = s.eval(d, {c: y})
        np.testing.assert_array_equal(z, X * 2 + 2)
        # OpenCL has no DLPack device type in libsession: a clear BufferError, not a crash.
        with pytest.raises(BufferError, match="opencl"):
            y.__dlpack__()
        with pytest.raises(BufferError):
            y.__dlpack_device__()
    # Its session closed: the value is gone, and saying so is an error, not a crash.
    with pytest.raises(ses.FailedPreconditionError, match="closed"):
        y.numpy()


def test_a_device_tensor_of_another_session_is_refused(opencl):
    g, a, c, d = _mul_graph()
    with ses.Session(g, devices=[opencl]) as s1, ses.Session(g, devices=[opencl]) as s2:
        y = s1.eval(c, {a: X}, device_fetches=True)
        with pytest.raises(ses.Error, match="session"):
            s2.eval(d, {c: y})


def test_device_tensor_is_documented():
    assert "device" in ses.DeviceTensor.__doc__
    assert "device_fetches" in ses.Session.eval.__doc__
    for name in ("numpy", "__dlpack__", "__dlpack_device__"):
        assert getattr(ses.DeviceTensor, name).__doc__


def test_a_plan_reads_a_device_tensor_fed_to_it(opencl):
    g, a, c, d = _mul_graph()
    with ses.Session(g, devices=[opencl], fallback="deny") as s:
        y = s.eval(c, {a: X}, device_fetches=True)
        plan = s.compile([d], feeds=[c])
        np.testing.assert_array_equal(plan.run(y)[0], X * 2 + 2)


def test_the_layout_option_gives_the_same_values():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [1, 16, 6, 6])
    w = g.constant("w", np.random.default_rng(0).standard_normal((16, 16, 3, 3), np.float32))
    y = g.op("Relu", [g.op("Conv", [x, w], pads=[1, 1, 1, 1])])
    v = np.random.default_rng(1).standard_normal((1, 16, 6, 6), np.float32)
    with ses.Session(g, layout=True) as on, ses.Session(g, layout=False) as off:
        np.testing.assert_allclose(on.eval(y, {x: v}), off.eval(y, {x: v}), rtol=1e-5,
                                   atol=1e-5)
        plan = on.compile([y], feeds=[x])
        plan.run(v)
        off_plan = off.compile([y], feeds=[x])
        off_plan.run(v)
        assert "layout" not in off_plan.placement


class DLPackOnly:
    """A host tensor that speaks only DLPack (no buffer protocol, no __array__), as a library's
    tensor type may: the protocol's calls are counted."""

    def __init__(self, array):
        self.array = array
        self.calls = 0

    def __dlpack__(self, stream=None):
        self.calls += 1
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def _need_numpy_dlpack():
    if not hasattr(np, "from_dlpack"):
        pytest.skip(f"NumPy {np.__version__} has no from_dlpack (1.22 or later)")


def test_a_host_dlpack_object_is_viewed_without_a_copy():
    _need_numpy_dlpack()
    from session.graph import _host_view
    base = X.copy()
    view = _host_view(DLPackOnly(base))
    assert isinstance(view, np.ndarray) and np.shares_memory(view, base)
    assert _host_view(base) is base


def test_a_host_dlpack_object_feeds_evals_plans_constants_and_variables():
    _need_numpy_dlpack()
    g, a, c, d = _mul_graph()
    k = g.constant("k", DLPackOnly(np.full(3, 5.0, np.float32)))
    w = g.variable("w", DLPackOnly(np.ones(3, np.float32)))
    e = g.op("Add", [g.op("Mul", [a, k]), w], name="e")
    x = DLPackOnly(X.copy())
    with ses.Session(g) as s:
        np.testing.assert_array_equal(s.eval(c, {a: x}), X * 2)
        assert x.calls == 1
        np.testing.assert_array_equal(s.eval(e, {a: x}), X * 5 + 1)
        np.testing.assert_array_equal(s.compile([d], feeds=[a]).run(x)[0], X * 2 + 2)
        s.variables["w"] = DLPackOnly(np.full(3, 7.0, np.float32))
        np.testing.assert_array_equal(s.variables["w"], np.full(3, 7.0, np.float32))


def test_device_fetches_on_the_cpu_keep_every_fetch_form():
    g, a, c, d = _mul_graph()
    with ses.Session(g) as s:
        as_list = s.eval([c, "d:0"], {a: X}, device_fetches=True)
        as_dict = s.eval({"c": c, "d": d}, {a: X}, device_fetches=True)
    for y in as_list + list(as_dict.values()):
        assert isinstance(y, np.ndarray) and not isinstance(y, ses.DeviceTensor)
    np.testing.assert_array_equal(as_list[0], X * 2)
    np.testing.assert_array_equal(as_list[1], X * 2 + 2)
    np.testing.assert_array_equal(as_dict["d"], X * 2 + 2)


def test_results_round_trip_through_numpy_and_torch_dlpack():
    _need_numpy_dlpack()
    g, a, c, d = _mul_graph()
    with ses.Session(g) as s:
        y = s.eval(c, {a: X})
        back = np.from_dlpack(y)
        assert np.shares_memory(back, y)
        np.testing.assert_array_equal(s.eval(d, {c: back}), X * 2 + 2)
        torch = pytest.importorskip("torch", reason="PyTorch is not installed")
        t = torch.from_dlpack(y)
        assert t.data_ptr() == y.ctypes.data  # no copy out
        t.add_(1)  # the same memory: y sees it
        np.testing.assert_array_equal(y, X * 2 + 1)
        np.testing.assert_array_equal(s.eval(d, {c: t}), X * 2 + 3)
        np.testing.assert_array_equal(s.eval(d, {c: torch.from_numpy(X * 2)}), X * 2 + 2)


def test_the_in_place_and_fold_options_reach_the_plan():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [2, 3])
    shape = g.op("Shape", [x])
    y = g.op("Exp", [g.op("Reshape", [g.op("Relu", [x]), shape])])
    v = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    with ses.Session(g) as on, ses.Session(g, in_place=False) as off:
        on_plan, off_plan = on.compile([y], feeds=[x]), off.compile([y], feeds=[x])
        np.testing.assert_array_equal(on_plan.run(v)[0], off_plan.run(v)[0])
        assert "folded: 1 node" in on_plan.placement and "in place:" in on_plan.placement
        assert "folded: 1 node" in off_plan.placement and "in place" not in off_plan.placement
    # Without folding, Reshape's shape is computed at compile time all the same: inference
    # needs its value.
    with ses.Session(g, fold=False) as s:
        plan = s.compile([y], feeds=[x])
        np.testing.assert_allclose(plan.run(v)[0], np.exp(np.maximum(v, 0)), rtol=1e-6)
        assert "folded: 1 node" in plan.placement
