"""Errors, threads, drivers and devices, ONNX, TaskSpec, idx files, docstrings."""
import gc
import inspect
import os
import threading
import weakref

import numpy as np
import pytest

import session as ses

ONNX_DIR = os.environ.get("SESSION_TEST_ONNX_DIR", "")


def test_every_status_has_its_error_class():
    classes = {c.status: c for c in (
        ses.InvalidArgumentError, ses.NotFoundError, ses.FailedPreconditionError,
        ses.OutOfMemoryError, ses.UnimplementedError, ses.IncompatibleError,
        ses.UnavailableError, ses.InternalError, ses.CancelledError, ses.AlreadyExistsError)}
    assert set(classes) == set(ses.Status) - {ses.Status.OK}
    for status, cls in classes.items():
        assert issubclass(cls, ses.Error)
        assert ses._core.status_name(int(status)) == "SES_" + status.name
    assert issubclass(ses.NotFoundError, LookupError)
    assert issubclass(ses.InvalidArgumentError, ValueError)


def test_errors_carry_the_status_and_the_librarys_message():
    g = ses.Graph()
    with pytest.raises(ses.NotFoundError) as e:
        g.edge("nothing:0")
    assert e.value.status == ses.Status.NOT_FOUND
    assert "nothing" in str(e.value) and e.value.message == str(e.value)
    assert ses.Error("x", 3).status == ses.Status.FAILED_PRECONDITION


def test_threads_share_one_session():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [None, 8])
    w = g.constant("w", np.eye(8, dtype=np.float32) * 2)
    y = g.op("MatMul", [x, w])
    errors = []
    with ses.Session(g) as s:
        plan = s.compile(y, feeds=[x])

        def work(k):
            try:
                for i in range(50):
                    v = np.full((4, 8), k * 100 + i, np.float32)
                    np.testing.assert_array_equal(s.eval(y, {x: v}), v * 2)
                    np.testing.assert_array_equal(plan.run(v), v * 2)
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors


def test_graph_changes_from_another_thread_wait_for_evals():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [None, 64])
    y = g.op("MatMul", [x, g.constant("w", np.ones((64, 64), np.float32))])
    stop = threading.Event()
    errors = []
    with ses.Session(g) as s:
        def evals():
            try:
                while not stop.is_set():
                    s.eval(y, {x: np.ones((32, 64), np.float32)})
            except Exception as e:
                errors.append(e)

        t = threading.Thread(target=evals)
        t.start()
        for i in range(100):
            g.op("Relu", [x], name=f"r{i}")
        stop.set()
        t.join()
    assert not errors


def test_close_while_other_threads_eval_does_not_crash():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [None, 32])
    y = g.op("Relu", [x])
    s = ses.Session(g)
    outcomes = []

    def evals():
        for _ in range(200):
            try:
                s.eval(y, {x: np.ones((16, 32), np.float32)})
            except ses.FailedPreconditionError:
                outcomes.append("closed")
                return
        outcomes.append("done")

    threads = [threading.Thread(target=evals) for _ in range(3)]
    for t in threads:
        t.start()
    s.close()
    for t in threads:
        t.join()
    assert len(outcomes) == 3


def test_drivers_and_devices_match_session_info():
    drivers = ses.drivers()
    cpu = [d for d in drivers if d["name"] == "cpu"]
    assert cpu and cpu[0]["state"] == "ready" and cpu[0]["error"] is None
    assert "cpu:0" in cpu[0]["devices"]
    for key in ("version", "vendor", "abi_major", "abi_minor", "opset_version", "priority",
                "build_features", "manifest", "library"):
        assert key in cpu[0]
    devices = ses.devices()
    d = [d for d in devices if d["name"] == "cpu:0"][0]
    assert d["kind"] == "cpu" and d["driver"] == "cpu" and isinstance(d["caps"], list)
    assert ses.version() == ses.__version__


@pytest.mark.skipif(not os.path.exists(os.path.join(ONNX_DIR, "mlp", "model.onnx")),
                    reason="no ONNX test models (SESSION_TEST_ONNX_DIR)")
def test_onnx_load_runs_the_model():
    m = ses.onnx.load(os.path.join(ONNX_DIR, "mlp", "model.onnx"))
    assert isinstance(m.graph, ses.Graph)
    assert len(m.inputs) == 1 and len(m.outputs) == 1
    assert all(isinstance(e, ses.Edge) and e.graph is m.graph for e in m.inputs + m.outputs)
    x = np.load(os.path.join(ONNX_DIR, "mlp", "input_0.npy"))
    expected = np.load(os.path.join(ONNX_DIR, "mlp", "expected_0.npy"))
    with ses.Session(m.graph) as s:
        np.testing.assert_allclose(s.eval(m.outputs[0], {m.inputs[0]: x}), expected, rtol=1e-4,
                                   atol=1e-5)
        np.testing.assert_allclose(s.eval(m.outputs[0].name, {m.inputs[0].name: x}), expected,
                                   rtol=1e-4, atol=1e-5)
    mv = ses.onnx.load(os.path.join(ONNX_DIR, "mlp", "model.onnx"),
                       initializers_as_variables=True)
    with ses.Session(mv.graph) as s:
        s.initialize_variables()
        assert len(s.variables) > 0


def test_onnx_load_refuses_bad_files(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff\x00 not a model")
    with pytest.raises(ses.Error):
        ses.onnx.load(bad)
    with pytest.raises(ses.NotFoundError):
        ses.onnx.load(tmp_path / "missing.onnx")


def test_task_spec_from_env(monkeypatch):
    for v in ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
              "SLURM_PROCID", "SLURM_NTASKS", "SESSION_SHARD_INDEX", "SESSION_SHARD_COUNT",
              "SESSION_EVALUATOR"):
        monkeypatch.delenv(v, raising=False)
    t = ses.TaskSpec.from_env()
    assert (t.rank, t.size, t.is_chief, t.launcher) == (0, 1, True, "none")
    assert t.shard_range(10) == (0, 10)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "3")
    t = ses.TaskSpec.from_env()
    assert (t.rank, t.size, t.is_chief, t.launcher) == (1, 3, False, "open-mpi")
    assert t.shard_range(10) == (4, 7) and t.workers == 3
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    with pytest.raises(ses.InvalidArgumentError, match="OMPI_COMM_WORLD_RANK"):
        ses.TaskSpec.from_env()


def test_read_idx(tmp_path):
    p = tmp_path / "a.idx"
    p.write_bytes(bytes([0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3]) + bytes(range(6)))
    a = ses.datasets.read_idx(p)
    assert a.dtype == np.uint8 and a.tolist() == [[0, 1, 2], [3, 4, 5]]
    p.write_bytes(b"\x00\x00\x08")
    with pytest.raises(ses.InvalidArgumentError):
        ses.datasets.read_idx(p)


def _public(obj):
    for name in getattr(obj, "__all__", None) or [n for n in dir(obj) if not n.startswith("_")]:
        yield name, getattr(obj, name)


def test_every_public_name_has_a_docstring():
    missing = []
    for modname, mod in [("session", ses), ("session.train", ses.train),
                         ("session.onnx", ses.onnx), ("session.datasets", ses.datasets)]:
        for name, obj in _public(mod):
            if inspect.ismodule(obj) or isinstance(obj, str):
                continue
            if not inspect.getdoc(obj):
                missing.append(f"{modname}.{name}")
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                for mname, member in vars(obj).items():
                    if mname.startswith("_"):
                        continue
                    if callable(member) or isinstance(member, property):
                        if not inspect.getdoc(member):
                            missing.append(f"{modname}.{name}.{mname}")
    for cls in (ses.Edge, ses.Node, ses.Session, ses.Graph):
        for mname in dir(cls):
            if not mname.startswith("_") and not inspect.getdoc(getattr(cls, mname)):
                missing.append(f"{cls.__name__}.{mname}")
    assert not missing


def test_help_of_eval_explains_feeds_overriding_any_edge():
    doc = inspect.getdoc(ses.Session.eval)
    assert "overrides any edge" in doc


def test_graphs_sessions_and_loops_are_freed_when_unreachable():
    # A Graph keeps its Edges (Graph._dtypes), and each Edge its Graph: only the cycle collector
    # frees them, and only if it sees the links held in C.
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [None, 2])
    w = g.variable("w", np.ones((2, 1), np.float32))
    y = g.placeholder("y", np.float32, [None, 1])
    loss = ses.train.mean_squared_error(g, g.op("MatMul", [x, w]), y)
    step = ses.train.minimize(g, loss, ses.train.SGD(0.1))
    s = ses.Session(g, devices=["cpu:0"])
    plan = s.compile([loss], feeds=[x, y])
    g.session = s  # a cycle through the session's graph link
    s.plan = plan  # and through the plan's session link

    class Keeper(ses.train.SessionRunHook):
        def before_run(self, run_context):
            self.context = run_context  # a cycle through the loop's hook and the run context

    keeper = Keeper()
    m = ses.train.MonitoredSession(s, hooks=[keeper])
    keeper.loop = m
    m.run(targets=[step], feed_dict={x: np.ones((4, 2), np.float32),
                                     y: np.ones((4, 1), np.float32)})
    refs = [weakref.ref(o) for o in (g, s)]
    del g, x, w, y, loss, step, s, plan, m, keeper, Keeper
    gc.collect()
    assert [r() for r in refs] == [None, None]
