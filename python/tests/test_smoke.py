import numpy as np
import session as ses


def test_mul():
    g = ses.Graph()
    a = g.placeholder("a", np.float32, [None, 3])
    b = g.constant("b", np.full(3, 2, np.float32))
    c = g.op("Mul", [a, b], name="c")
    with ses.Session(g) as s:
        out = s.eval(c, {a: np.ones((2, 3), np.float32)})
    assert out.tolist() == [[2, 2, 2], [2, 2, 2]]
