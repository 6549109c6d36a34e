"""Graph building: placeholders, constants, variables, ops, edges and nodes."""
import numpy as np
import pytest

import session as ses


def test_placeholder_constant_variable_op_return_edges(mul_graph):
    g, a, b, c, d = mul_graph
    for e in (a, b, c, d):
        assert isinstance(e, ses.Edge)
        assert e.graph is g
    assert a.name == "a:0" and c.name == "c:0"
    assert c.op == "Mul" and c.index == 0
    assert isinstance(c.node, ses.Node) and c.node.name == "c"
    assert a.dtype == np.float32


def test_edges_compare_and_hash_by_node_and_index(mul_graph):
    g, a, b, c, d = mul_graph
    assert g.edge("c") == c
    assert g["c:0"] == c
    assert hash(g.edge("c")) == hash(c)
    assert {c: 1}[g.edge("c:0")] == 1
    assert c != d
    assert g.node("c") == c.node
    assert "c" in g and "zzz" not in g


def test_op_with_several_outputs_returns_a_tuple():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [4, 2])
    parts = g.op("Split", [x], axis=0, n_outputs=2, split=[2, 2])
    assert isinstance(parts, tuple) and len(parts) == 2
    assert parts[1].name.endswith(":1")
    with ses.Session(g) as s:
        lo, hi = s.eval(list(parts), {x: np.arange(8, dtype=np.float32).reshape(4, 2)})
    assert lo.tolist() == [[0, 1], [2, 3]] and hi.tolist() == [[4, 5], [6, 7]]


def test_op_attributes_of_every_type():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [2, 3])
    t = g.op("Transpose", [x], perm=[1, 0])
    lr = g.op("LeakyRelu", [x], alpha=0.5)
    sm = g.op("Softmax", [x], axis=-1)
    with ses.Session(g) as s:
        v = np.array([[-2, 0, 2], [1, -1, 3]], np.float32)
        tt, ll, ss = s.eval([t, lr, sm], {x: v})
    np.testing.assert_array_equal(tt, v.T)
    np.testing.assert_allclose(ll, np.where(v > 0, v, 0.5 * v))
    np.testing.assert_allclose(ss.sum(axis=1), [1, 1], rtol=1e-6)


def test_edge_operators_build_nodes():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [2])
    y = (x + 1) * 3 - x / 2
    z = -y
    with ses.Session(g) as s:
        out = s.eval(z, {x: [2, 4]})
    np.testing.assert_allclose(out, -((np.array([2, 4]) + 1) * 3 - np.array([2, 4]) / 2))


def test_group_runs_every_node():
    g = ses.Graph()
    v = g.variable("v", np.zeros(2, np.float32))
    grp = g.group([v.node], name="grp")
    assert grp.op == "NoOp" and grp.outputs == ()
    assert grp.name == "grp"


def test_unknown_op_raises_not_found_with_its_name():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [2])
    with pytest.raises(ses.NotFoundError, match="Mull"):
        g.op("Mull", [x])


def test_duplicate_name_and_bad_dtype_raise():
    g = ses.Graph()
    g.placeholder("x", np.float32, [2])
    with pytest.raises(ses.InvalidArgumentError):
        g.placeholder("x", np.float32, [2])
    with pytest.raises(TypeError):
        g.placeholder("y", np.complex64, [2])
    # str arrays are string tensors (test_strings.py); bytes arrays have no libsession type.
    with pytest.raises(TypeError):
        g.constant("z", np.array([b"a", b"b"]))


def test_edges_of_another_graph_are_refused():
    g1, g2 = ses.Graph(), ses.Graph()
    a = g1.placeholder("a", np.float32, [2])
    b = g2.placeholder("b", np.float32, [2])
    with pytest.raises(ses.InvalidArgumentError, match="another graph"):
        g2.op("Add", [a, b])
    with pytest.raises(ses.InvalidArgumentError, match="another graph"):
        g2.variable("v", a)
    with ses.Session(g2) as s:
        with pytest.raises(ses.InvalidArgumentError, match="another graph"):
            s.eval(a)
        with pytest.raises(ses.InvalidArgumentError, match="another graph"):
            s.eval(b, {a: [1, 2]})


def test_wrong_types_raise_type_error_not_crash():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [2])
    for bad in (None, 3, "x", object()):
        with pytest.raises((TypeError, ses.Error)):
            g.op("Relu", [bad])
    with pytest.raises(TypeError):
        g.op("Relu", [x], alpha=object())
    with pytest.raises(TypeError):
        g.op(3, [x])
    with pytest.raises(TypeError):
        ses.Edge()
    with pytest.raises(TypeError):
        ses.Node()


def test_version_grows_with_every_change():
    g = ses.Graph()
    v0 = g.version
    g.placeholder("x", np.float32, [2])
    assert g.version > v0


def test_node_device_can_be_pinned_and_cleared(mul_graph):
    g, a, b, c, d = mul_graph
    c.node.device = "cpu"
    assert c.node.device == "cpu"
    c.node.device = None
    assert c.node.device is None
