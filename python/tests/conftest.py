import numpy as np
import pytest

import session as ses


@pytest.fixture
def mul_graph():
    """c = a * b, d = c + 1: a placeholder [None, 3], b a constant of twos."""
    g = ses.Graph()
    a = g.placeholder("a", np.float32, [None, 3])
    b = g.constant("b", np.full(3, 2, np.float32))
    c = g.op("Mul", [a, b], name="c")
    one = g.constant("one", np.ones(3, np.float32))
    d = g.op("Add", [c, one], name="d")
    return g, a, b, c, d


def regression_graph(optimizer, seed=0):
    """y = x @ w_true; a variable w learned by minimizing the mean squared error."""
    rng = np.random.default_rng(seed)
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [None, 4])
    y = g.placeholder("y", np.float32, [None, 1])
    w = g.variable("w", np.zeros((4, 1), np.float32))
    pred = g.op("MatMul", [x, w], name="pred")
    loss = ses.train.mean_squared_error(g, pred, y, name="loss")
    step = ses.train.minimize(g, loss, optimizer, name="step")
    w_true = rng.standard_normal((4, 1)).astype(np.float32)
    xs = rng.standard_normal((64, 4)).astype(np.float32)
    return g, x, y, w, loss, step, xs, xs @ w_true, w_true
