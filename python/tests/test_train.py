"""Training: layers, losses, gradients, optimizers, checkpoints, the monitored loop and hooks."""
import io
import os

import numpy as np
import pytest

import session as ses
from conftest import regression_graph


@pytest.mark.parametrize("optimizer", [ses.train.SGD(0.1), ses.train.Momentum(0.05, 0.9),
                                       ses.train.Momentum(0.05, 0.9, nesterov=True),
                                       ses.train.Adam(0.05)])
def test_every_optimizer_lowers_the_loss(optimizer):
    g, x, y, w, loss, step, xs, ys, w_true = regression_graph(optimizer)
    with ses.Session(g) as s:
        first = s.eval(loss, {x: xs, y: ys})
        for _ in range(200):
            s.eval(targets=[step], feed_dict={x: xs, y: ys})
        last = s.eval(loss, {x: xs, y: ys})
    assert last < first * 0.05


def test_learning_rate_may_be_a_fed_edge():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [None, 4])
    y = g.placeholder("y", np.float32, [None, 1])
    lr = g.placeholder("lr", np.float32, [])
    w = g.variable("w", np.zeros((4, 1), np.float32))
    loss = ses.train.mean_squared_error(g, g.op("MatMul", [x, w]), y)
    step = ses.train.minimize(g, loss, ses.train.SGD(lr))
    xs = np.ones((8, 4), np.float32)
    with ses.Session(g) as s:
        s.eval(targets=step, feed_dict={x: xs, y: np.ones((8, 1), np.float32), lr: 0.0})
        np.testing.assert_array_equal(s.variables["w"], 0)
        s.eval(targets=step, feed_dict={x: xs, y: np.ones((8, 1), np.float32), lr: 0.1})
        assert s.variables["w"].sum() > 0


def test_fc_softmax_cross_entropy_learns_a_classifier():
    rng = np.random.default_rng(1)
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [None, 2])
    labels = g.placeholder("labels", np.int64, [None])
    h = ses.train.fc(g, x, 16, activation="tanh")
    logits = ses.train.fc(g, h, 2)
    loss = ses.train.softmax_cross_entropy(g, logits, labels)
    step = ses.train.minimize(g, loss, ses.train.Adam(0.05))
    pred = g.op("ArgMax", [logits], axis=1, keepdims=0)
    xs = rng.standard_normal((128, 2)).astype(np.float32)
    ys = (xs[:, 0] * xs[:, 1] > 0).astype(np.int64)
    with ses.Session(g) as s:
        for _ in range(300):
            s.eval(loss, {x: xs, labels: ys}, targets=[step])
        acc = (s.eval(pred, {x: xs}) == ys).mean()
        names = set(s.variables)
    assert acc > 0.9
    assert {"fc_1/W", "fc_1/b", "fc_2/W", "fc_2/b"} <= names
    assert any(n.endswith("adam_m") for n in names)


def test_gradients_of_a_square():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [3])
    y = g.op("Mul", [x, x])
    dx = ses.train.gradients(g, y, x)
    unused = g.placeholder("u", np.float32, [3])
    dxs = ses.train.gradients(g, [y], [x, unused])
    assert dxs[1] is None
    with ses.Session(g) as s:
        np.testing.assert_allclose(s.eval(dx, {x: [1, 2, 3]}), [2, 4, 6])


def test_bad_training_arguments_raise():
    g = ses.Graph()
    x = g.placeholder("x", np.float32, [None, 2])
    with pytest.raises(ValueError):
        ses.train.fc(g, x, 3, activation="swish")
    with pytest.raises(TypeError):
        ses.train.minimize(g, x, "sgd")
    with pytest.raises(ses.Error):
        ses.train.minimize(g, g.op("ReduceSum", [x], keepdims=0), ses.train.SGD(0.1))


def test_save_and_restore_a_file_and_a_folder(tmp_path):
    g, x, y, w, loss, step, xs, ys, _ = regression_graph(ses.train.SGD(0.1))
    with ses.Session(g) as s:
        for _ in range(5):
            s.eval(targets=[step], feed_dict={x: xs, y: ys})
        trained = s.variables["w"]
        s.save(tmp_path / "w.safetensors", step=5)
        s.save(tmp_path / "ckpt", step=5)
        s.save(str(tmp_path / "ckpt"), step=6)
    assert (tmp_path / "ckpt" / "latest").exists()
    with ses.Session(g) as s2:
        assert s2.restore(tmp_path / "w.safetensors") == 5
        np.testing.assert_array_equal(s2.variables["w"], trained)
    with ses.Session(g) as s3:
        assert s3.restore(tmp_path / "ckpt") == 6
        np.testing.assert_array_equal(s3.variables["w"], trained)


def test_restore_refuses_a_mismatch_and_changes_nothing(tmp_path):
    g1 = ses.Graph()
    g1.variable("w", np.ones((2, 2), np.float32))
    g2 = ses.Graph()
    g2.variable("w", np.zeros((3,), np.float32))
    with ses.Session(g1) as s:
        s.initialize_variables()
        s.save(tmp_path / "a.safetensors")
    with ses.Session(g2) as s:
        s.initialize_variables()
        with pytest.raises(ses.InvalidArgumentError, match="w"):
            s.restore(tmp_path / "a.safetensors")
        np.testing.assert_array_equal(s.variables["w"], np.zeros(3))
        with pytest.raises(ses.NotFoundError):
            s.restore(tmp_path / "missing.safetensors")
        with pytest.raises(ses.NotFoundError):
            s.restore(tmp_path)  # a folder without checkpoints


class Recorder(ses.train.SessionRunHook):
    def __init__(self, loss):
        self.loss = loss
        self.calls = []
        self.losses = []

    def begin(self):
        self.calls.append("begin")

    def after_create(self, session):
        self.calls.append(("after_create", isinstance(session, ses.Session)))

    def before_run(self, run_context):
        self.calls.append(("before_run", run_context.step))
        return ses.train.SessionRunArgs(fetches={"loss": self.loss})

    def after_run(self, run_context, run_values):
        self.calls.append(("after_run", run_context.step))
        self.losses.append(float(run_values.results["loss"]))

    def end(self, session):
        self.calls.append("end")


def test_monitored_session_calls_hooks_in_order_and_stops(tmp_path):
    g, x, y, w, loss, step, xs, ys, _ = regression_graph(ses.train.SGD(0.1))
    rec = Recorder(loss)
    with ses.Session(g) as s:
        hooks = [ses.train.LoadCheckpointHook(tmp_path / "ckpt"), ses.train.StopAtStepHook(3),
                 ses.train.CheckpointSaverHook(tmp_path / "ckpt", save_steps=2), rec]
        with ses.train.MonitoredSession(s, hooks=hooks) as m:
            runs = 0
            while not m.should_stop():
                out = m.run([loss], {x: xs, y: ys}, targets=[step])
                assert isinstance(out, list)
                runs += 1
            assert m.step == 3
        assert runs == 3
        assert not s.closed  # the loop's close leaves the session open
    assert rec.calls[0] == "begin" and rec.calls[1] == ("after_create", True)
    assert rec.calls[2:8] == [("before_run", 0), ("after_run", 1), ("before_run", 1),
                              ("after_run", 2), ("before_run", 2), ("after_run", 3)]
    assert rec.calls[-1] == "end"
    assert rec.losses[0] > rec.losses[-1]
    assert sorted(os.listdir(tmp_path / "ckpt"))[-1] == "latest"
    # A new loop resumes from the last checkpoint's step.
    with ses.Session(g) as s:
        with ses.train.MonitoredSession(
                s, [ses.train.LoadCheckpointHook(tmp_path / "ckpt"),
                    ses.train.StopAtStepHook(4)]) as m:
            assert m.step == 3
            m.run(targets=[step], feed_dict={x: xs, y: ys})
            assert m.should_stop()
            with pytest.raises(ses.FailedPreconditionError):
                m.run(targets=[step], feed_dict={x: xs, y: ys})


def test_a_hook_exception_is_raised_from_run_and_a_hook_may_stop_the_loop():
    g, x, y, w, loss, step, xs, ys, _ = regression_graph(ses.train.SGD(0.1))

    class Boom(ses.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            raise KeyError("boom")

    class Stop(ses.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            run_context.request_stop()

    class Feeder(ses.train.SessionRunHook):
        def before_run(self, run_context):
            return ses.train.SessionRunArgs(feed_dict={x: xs, y: ys}, targets=[step])

    with ses.Session(g) as s:
        m = ses.train.MonitoredSession(s, [Boom()])
        with pytest.raises(KeyError, match="boom"):
            m.run(loss, {x: xs, y: ys})
        m.close()
        m = ses.train.MonitoredSession(s, [Feeder(), Stop()])
        v = m.run(loss)  # the hook feeds everything
        assert v.shape == () and m.should_stop()
        m.close()

        class BadReturn(ses.train.SessionRunHook):
            def before_run(self, run_context):
                return 3

        m = ses.train.MonitoredSession(s, [BadReturn()])
        with pytest.raises(TypeError, match="SessionRunArgs"):
            m.run(loss, {x: xs, y: ys})
        m.close()

        class Builder(ses.train.SessionRunHook):
            def before_run(self, run_context):
                g.placeholder("late", np.float32, [1])

        m = ses.train.MonitoredSession(s, [Builder()])
        with pytest.raises(ses.FailedPreconditionError, match="graph cannot change"):
            m.run(loss, {x: xs, y: ys})
        m.close()
        with pytest.raises(TypeError):
            ses.train.MonitoredSession(s, [object()])
        with pytest.raises(TypeError):
            ses.train.MonitoredSession("session")


def test_logging_hook_prints_loss_lines():
    g, x, y, w, loss, step, xs, ys, _ = regression_graph(ses.train.SGD(0.1))
    out = io.StringIO()
    with ses.Session(g) as s, ses.train.MonitoredSession(
            s, [ses.train.LoggingHook(loss, every_n_steps=2, file=out),
                ses.train.StopAtStepHook(4), ses.train.StopAtTimeHook(3600)]) as m:
        while not m.should_stop():
            m.run(targets=[step], feed_dict={x: xs, y: ys})
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("step 2: loss ")
