"""Sessions: eval forms, feeds of any edge, pruning, independence, plans, variables, closing."""
import numpy as np
import pytest

import session as ses

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_eval_single_list_tuple_dict_forms(mul_graph):
    g, a, b, c, d = mul_graph
    with ses.Session(g) as s:
        single = s.eval(c, {a: X})
        assert isinstance(single, np.ndarray) and single.dtype == np.float32
        np.testing.assert_array_equal(single, X * 2)
        lst = s.eval([c, "d:0"], feed_dict={"a": X})
        assert isinstance(lst, list) and len(lst) == 2
        np.testing.assert_array_equal(lst[1], X * 2 + 1)
        tup = s.eval((c, d), {"a:0": X})
        assert isinstance(tup, tuple)
        dct = s.eval({"cc": c, "dd": "d"}, {a: X})
        assert set(dct) == {"cc", "dd"}
        np.testing.assert_array_equal(dct["dd"], X * 2 + 1)
        assert s.eval(targets=[d.node], feed_dict={a: X}) is None


def test_feed_overrides_any_edge(mul_graph):
    g, a, b, c, d = mul_graph
    with ses.Session(g) as s:
        # A constant fed: b = 10.
        np.testing.assert_array_equal(s.eval(c, {a: X, b: np.full(3, 10, np.float32)}), X * 10)
        # An intermediate fed: a is not needed (pruned), d = c + 1.
        np.testing.assert_array_equal(s.eval(d, {c: X}), X + 1)
        # Fetching a fed edge gives the fed value.
        np.testing.assert_array_equal(s.eval(c, {c: X}), X)


def test_pruning_runs_only_what_fetches_need(mul_graph):
    g, a, b, c, d = mul_graph
    with ses.Session(g) as s:
        # b alone needs no feed of a.
        np.testing.assert_array_equal(s.eval(b), [2, 2, 2])
        before = s.kernel_calls
        s.eval(d, {c: X})
        after_one = s.kernel_calls
        s.eval(d, {a: X})
        assert after_one - before < s.kernel_calls - after_one
        with pytest.raises(ses.Error, match="a"):
            s.eval(d)  # the placeholder is needed and not fed


def test_feeds_take_array_likes_and_the_placeholders_dtype(mul_graph):
    g, a, b, c, d = mul_graph
    with ses.Session(g) as s:
        out = s.eval(c, {a: [[1, 2, 3]]})  # a list of ints becomes float32
        assert out.dtype == np.float32 and out.tolist() == [[2, 4, 6]]
        mv = memoryview(np.ones((1, 3), np.float32))
        assert s.eval(c, {a: mv}).tolist() == [[2, 2, 2]]
        strided = np.ones((2, 6), np.float32)[:, ::2]  # not contiguous: copied
        assert s.eval(c, {a: strided}).shape == (2, 3)
        with pytest.raises(ses.Error):
            s.eval(c, {a: np.ones((2, 3), np.float64)})  # wrong dtype: the library says so
        with pytest.raises(ses.Error):
            s.eval(c, {a: np.ones((2, 4), np.float32)})  # wrong shape


def test_outputs_are_owned_writable_arrays(mul_graph):
    g, a, b, c, d = mul_graph
    with ses.Session(g) as s:
        x = X.copy()
        out = s.eval(c, {a: x})
        out[:] = 0  # ours to change
        assert s.eval(c, {a: x}).tolist() == (X * 2).tolist()
        fed = s.eval(a, {a: x})
        np.testing.assert_array_equal(fed, x)


def test_sessions_on_one_graph_have_independent_variables():
    g = ses.Graph()
    v = g.variable("v", np.zeros(2, np.float32))
    inc = g.op("Add", [v, g.constant("one", np.ones(2, np.float32))])
    s1, s2 = ses.Session(g), ses.Session(g)
    s1.variables["v"] = np.array([5, 6], np.float32)
    np.testing.assert_array_equal(s1.eval(inc), [6, 7])
    np.testing.assert_array_equal(s2.eval(inc), [1, 1])
    s2.copy_variables_from(s1)
    np.testing.assert_array_equal(s2.variables["v"], [5, 6])
    s1.close()
    s2.close()


def test_variables_mapping_reads_copies_and_checks_writes():
    g = ses.Graph()
    g.variable("w", np.arange(4, dtype=np.float32).reshape(2, 2))
    with ses.Session(g) as s:
        w = s.variables["w"]  # initialized on first read
        np.testing.assert_array_equal(w, [[0, 1], [2, 3]])
        w[:] = 9  # a copy
        np.testing.assert_array_equal(s.variables["w"], [[0, 1], [2, 3]])
        s.variables["w"] = [[1, 1], [1, 1]]
        np.testing.assert_array_equal(s.eval("w"), np.ones((2, 2)))
        assert "w" in s.variables and list(s.variables) == ["w"] and len(s.variables) == 1
        with pytest.raises(ses.InvalidArgumentError, match="w"):
            s.variables["w"] = np.ones(3, np.float32)
        with pytest.raises(KeyError):
            s.variables["nope"]
        with pytest.raises(TypeError):
            s.variables[3]


def test_compile_gives_a_plan_with_placement(mul_graph):
    g, a, b, c, d = mul_graph
    with ses.Session(g) as s:
        plan = s.compile([c, d], feeds=[a])
        assert plan.feeds == (a,)
        out_c, out_d = plan.run(X)
        np.testing.assert_array_equal(out_d, X * 2 + 1)
        assert "cpu" in plan.placement
        assert plan.step_count > 0
        assert plan.device_of(c.node) == "cpu:0"
        assert plan.device_of("c") == "cpu:0"
        np.testing.assert_array_equal(plan.run({a: X})[0], X * 2)
        np.testing.assert_array_equal(plan(np.ones((5, 3), np.float32))[0].shape, (5, 3))
        with pytest.raises(ses.InvalidArgumentError):
            plan.run(X, X)
        single = s.compile(c, feeds="a")
        assert single.run(X).shape == (2, 3)
        plan.close()
        with pytest.raises(ses.FailedPreconditionError):
            plan.run(X)


def test_compile_reports_shape_errors_naming_the_node():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [2, 3])
    y = g.placeholder("y", np.float32, [4, 5])
    z = g.op("MatMul", [x, y], name="mm")
    with ses.Session(g) as s:
        with pytest.raises(ses.Error, match="mm"):
            s.compile(z, feeds=[x, y])


def test_closed_session_raises_and_close_twice_is_fine(mul_graph):
    g, a, b, c, d = mul_graph
    s = ses.Session(g)
    plan = s.compile(c, feeds=[a])
    assert not s.closed
    s.close()
    s.close()
    assert s.closed
    with pytest.raises(ses.FailedPreconditionError):
        s.eval(c, {a: X})
    with pytest.raises(ses.Error):
        plan.run(X)
    with pytest.raises(ses.FailedPreconditionError):
        s.variables["x"] = np.ones(1)
    with pytest.raises(KeyError):
        s.variables["b"]


def test_session_options_and_bad_devices(mul_graph):
    g, a, b, c, d = mul_graph
    with ses.Session(g, devices=["cpu"], fallback="deny", threads=1, log_level="error",
                     fusion=False, graphs=True) as s:
        np.testing.assert_array_equal(s.eval(c, {a: X}), X * 2)
    with pytest.raises(ses.NotFoundError):
        ses.Session(g, devices=["gpu:7"])
    with pytest.raises(ValueError):
        ses.Session(g, fallback="sometimes")
    with pytest.raises(TypeError):
        ses.Session("not a graph")
    with pytest.raises(TypeError):
        ses.Session(g, devices=[3])


def test_an_unopened_session_raises_instead_of_crashing(mul_graph):
    g, a, b, c, d = mul_graph

    class Lazy(ses.Session):
        def __init__(self):
            pass

    s = Lazy()
    with pytest.raises(ses.FailedPreconditionError):
        s._eval([c], [], [], [], False)
    with pytest.raises(ses.FailedPreconditionError):
        s.close() or s.transfers()


def test_private_eval_does_not_change_the_sessions_variables(tmp_path):
    from conftest import regression_graph
    g, x, y, w, loss, step, xs, ys, _ = regression_graph(ses.train.SGD(0.1))
    with ses.Session(g) as s:
        s.eval(loss, {x: xs, y: ys}, targets=[step], private=True)
        np.testing.assert_array_equal(s.variables["w"], np.zeros((4, 1)))
        s.eval(loss, {x: xs, y: ys}, targets=[step])
        assert np.abs(s.variables["w"]).sum() > 0


def test_transfers_count_runs(mul_graph):
    g, a, b, c, d = mul_graph
    with ses.Session(g) as s:
        s.eval(c, {a: X})
        t = s.transfers()
        assert t["runs"] >= 1 and "h2d_bytes" in t


def test_arrays_round_trip_every_dtype_without_loss():
    for dt in (np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
               np.uint8, np.uint16, np.uint32, np.uint64, np.bool_):
        a = (np.arange(6) % 2).astype(dt).reshape(2, 3)
        for copy in (False, True):
            b = ses._core._roundtrip(a, copy)
            assert b.dtype == a.dtype and b.shape == a.shape
            np.testing.assert_array_equal(a, b)
    assert ses._core._roundtrip(np.float32(3.5)).shape == ()
    assert ses._core._roundtrip(np.zeros((0, 3), np.float32)).shape == (0, 3)
    with pytest.raises(ses.InvalidArgumentError):
        ses._core._roundtrip(np.zeros([1] * 9, np.float32))
