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


# ---- CMocka-style result lines (meson test passes --cmocka-lines) --------------------------
# scripts/test counts test cases from the lines CMocka prints: "[  PASSED  ] N test(s)." and
# "[  FAILED  ] N test(s), listed below:". With --cmocka-lines the suite ends with the same
# lines, one per case, so that its cases are counted like the C tests'.

_outcomes = {}


def pytest_addoption(parser):
    parser.addoption("--cmocka-lines", action="store_true",
                     help="end with CMocka's result lines (one per test, then the counts)")


def pytest_runtest_logreport(report):
    # A case fails if any of its phases (setup, call, teardown) fails; it is skipped if its
    # setup or call skips; it passes if its call passes. An expected failure (xfail) counts as
    # passed, an unexpected pass of a strict xfail fails in its call.
    previous = _outcomes.get(report.nodeid)
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif previous == "failed":
        return
    elif report.skipped and not hasattr(report, "wasxfail"):
        _outcomes[report.nodeid] = "skipped"
    elif report.when == "call":
        _outcomes[report.nodeid] = "passed"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not config.getoption("cmocka_lines"):
        return
    write = terminalreporter.write_line
    names = {"passed": "[       OK ]", "failed": "[  FAILED  ]", "skipped": "[  SKIPPED ]"}
    write(f"[==========] Running {len(_outcomes)} test(s).")
    for nodeid, outcome in _outcomes.items():
        write(f"[ RUN      ] {nodeid}")
        write(f"{names[outcome]} {nodeid}")
    failed = [n for n, o in _outcomes.items() if o == "failed"]
    skipped = [n for n, o in _outcomes.items() if o == "skipped"]
    write(f"[==========] {len(_outcomes)} test(s) run.")
    write(f"[  PASSED  ] {len(_outcomes) - len(failed) - len(skipped)} test(s).")
    if skipped:
        write(f"[  SKIPPED ] {len(skipped)} test(s), listed below:")
        for n in skipped:
            write(f"[  SKIPPED ] {n}")
    if failed:
        write(f"[  FAILED  ] {len(failed)} test(s), listed below:")
        for n in failed:
            write(f"[  FAILED  ] {n}")
