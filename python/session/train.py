"""Training: layers, losses, gradients, optimizers, and the monitored loop with its hooks.

Everything that builds adds nodes to a graph; nothing runs until a session evaluates it::

    h = ses.train.fc(g, x, 256, activation="sigmoid")
    logits = ses.train.fc(g, h, 10)
    loss = ses.train.softmax_cross_entropy(g, logits, labels)
    step = ses.train.minimize(g, loss, ses.train.SGD(0.5))
    with ses.Session(g) as s:
        for xb, yb in batches:
            s.eval(loss, {x: xb, labels: yb}, targets=[step])
"""

import sys
import time

from . import _core

__all__ = [
    "fc", "softmax_cross_entropy", "mean_squared_error", "gradients", "minimize",
    "Optimizer", "SGD", "Momentum", "Adam",
    "MonitoredSession", "SessionRunHook", "SessionRunArgs", "SessionRunValues",
    "StopAtStepHook", "StopAtTimeHook", "CheckpointSaverHook", "LoadCheckpointHook",
    "LoggingHook",
]

_ACTIVATIONS = {None: 0, "none": 0, "linear": 0, "relu": 1, "sigmoid": 2, "tanh": 3}
_REDUCTIONS = {"mean": 0, "sum": 1, "none": 2, None: 2}


def _name(g, name, prefix):
    return name if name is not None else g._fresh(prefix)


def fc(g, x, size, activation=None, name=None, seed=None):
    """A fully connected layer ``activation(x @ W + b)``; returns its output Edge.

    ``x`` is f32 ``[N, K]`` with K known (a placeholder's last dimension or a previous fc's
    size). Adds variables ``"<name>/W"`` (Glorot-uniform from ``seed``) and ``"<name>/b"``
    (zeros). ``activation``: None, "relu", "sigmoid" or "tanh". ``name`` None gives "fc_1",
    "fc_2", ...; ``seed`` None derives one from the name's counter, so a graph built the same
    way starts from the same weights.
    """
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation: {activation!r} is not None, relu, sigmoid or tanh")
    name = _name(g, name, "fc")
    if seed is None:
        seed = sum(name.encode()) + len(name)
    return g._fc(name, x, int(size), _ACTIVATIONS[activation], int(seed))


def softmax_cross_entropy(g, logits, labels, reduction="mean", name=None):
    """Softmax cross-entropy of ``logits`` [N, C] (float) against ``labels`` [N] (int64 class
    indices), with ONNX SoftmaxCrossEntropyLoss semantics; ``reduction`` "mean" (a scalar),
    "sum" or "none" ([N]). Returns the loss Edge."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction: {reduction!r} is not mean, sum or none")
    return g._loss(0, _name(g, name, "softmax_cross_entropy"), logits, labels,
                   _REDUCTIONS[reduction])


def mean_squared_error(g, predictions, targets, reduction="mean", name=None):
    """``mean((predictions - targets)^2)`` over every element (or the sum, or elementwise with
    reduction "none"). Returns the loss Edge."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction: {reduction!r} is not mean, sum or none")
    return g._loss(1, _name(g, name, "mean_squared_error"), predictions, targets,
                   _REDUCTIONS[reduction])


def gradients(g, ys, xs, grad_ys=None, name=None):
    """Adds the gradient of ``sum(ys * grad_ys)`` with respect to each of ``xs``; returns a list
    of Edges (None for an x no y depends on). ``grad_ys`` None seeds each y with ones."""
    single = isinstance(xs, _core.Edge)
    if isinstance(ys, _core.Edge):
        ys = [ys]
    if single:
        xs = [xs]
    if isinstance(grad_ys, _core.Edge):
        grad_ys = [grad_ys]
    out = g._gradients(name, list(ys), list(xs), None if grad_ys is None else list(grad_ys))
    return out[0] if single else out


class Optimizer:
    """Base of the optimizers; ``learning_rate`` is a number or a scalar Edge (a placeholder
    fed each step, for schedules)."""

    _kind = 0

    def __init__(self, learning_rate):
        self.learning_rate = learning_rate

    def _args(self):
        lr = self.learning_rate
        if isinstance(lr, _core.Edge):
            return (self._kind, 0.0, lr)
        return (self._kind, float(lr), None)

    def __repr__(self):
        return f"{type(self).__name__}({self.learning_rate!r})"


class SGD(Optimizer):
    """Plain gradient descent: ``w -= lr * grad``."""

    _kind = 0


class Momentum(Optimizer):
    """Gradient descent with momentum (``nesterov`` for Nesterov's), state in "<w>/momentum"."""

    _kind = 1

    def __init__(self, learning_rate, momentum=0.9, nesterov=False):
        super().__init__(learning_rate)
        self.momentum = momentum
        self.nesterov = nesterov


class Adam(Optimizer):
    """Adam, with state in "<w>/adam_m", "<w>/adam_v" and "<w>/adam_t"."""

    _kind = 2

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8):
        super().__init__(learning_rate)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon


def minimize(g, loss, optimizer, var_list=None, name=None, distributed=False):
    """Adds the gradients of ``loss`` and one update per variable, grouped under a NoOp that is
    returned: evaluate it as a target to run one training step.

    ``var_list`` (variable Edges or Nodes) defaults to every float variable the loss depends on.
    ``distributed`` averages the gradients over the processes of an MPI job (AllReduce) before
    the updates; without a communicator it trains as the plain form does.
    """
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"optimizer: expected SGD, Momentum or Adam, got "
                        f"{type(optimizer).__name__}")
    kind, lr, lr_edge = optimizer._args()
    momentum = getattr(optimizer, "momentum", 0.9)
    nesterov = bool(getattr(optimizer, "nesterov", False))
    beta1 = getattr(optimizer, "beta1", 0.9)
    beta2 = getattr(optimizer, "beta2", 0.999)
    epsilon = getattr(optimizer, "epsilon", 1e-8)
    return g._minimize(_name(g, name, "train"), loss, kind, lr, lr_edge, float(momentum),
                       nesterov, float(beta1), float(beta2), float(epsilon),
                       None if var_list is None else list(var_list), bool(distributed))


# ---- the monitored loop ---------------------------------------------------------------------

class SessionRunArgs:
    """What a hook's ``before_run`` adds to a run: ``fetches`` (an Edge, or a list or dict of
    them; their values come back in ``after_run``'s ``run_values.results`` in that
    structure), ``feed_dict`` and ``targets``."""

    __slots__ = ("fetches", "feed_dict", "targets")

    def __init__(self, fetches=None, feed_dict=None, targets=None):
        self.fetches, self.feed_dict, self.targets = fetches, feed_dict, targets


class SessionRunValues:
    """What ``after_run`` receives: ``results``, the values of the fetches the hook asked for."""

    __slots__ = ("results",)

    def __init__(self, results):
        self.results = results


class SessionRunContext:
    """The run a hook is called around: ``session``, ``step`` (the global step) and
    ``request_stop()``."""

    __slots__ = ("session", "_ctx", "_monitored")

    def __init__(self, session, ctx, monitored):
        self.session, self._ctx, self._monitored = session, ctx, monitored

    @property
    def step(self):
        """The global step (in after_run, counting this run)."""
        return self._ctx.step

    def request_stop(self):
        """Asks the loop to stop: ``should_stop()`` is True after this run."""
        self._ctx.request_stop()


class SessionRunHook:
    """A hook of a :class:`MonitoredSession` (TensorFlow's SessionRunHook): override any of

    - ``begin()`` once, before the loop;
    - ``after_create(session)`` once, with the session open (restore state here);
    - ``before_run(run_context)`` before each run: return a :class:`SessionRunArgs` to fetch,
      feed or run more in the same eval, or None;
    - ``after_run(run_context, run_values)`` after each run: ``run_values.results`` holds the
      values of what ``before_run`` fetched; ``run_context.request_stop()`` ends the loop;
    - ``end(session)`` once, from :meth:`MonitoredSession.close`.

    An exception raised in a hook stops the run and is raised from the MonitoredSession call.
    """

    def begin(self):
        """Called once, before the loop."""

    def after_create(self, session):
        """Called once, with the open session."""

    def before_run(self, run_context):
        """Called before each run; may return SessionRunArgs."""
        return None

    def after_run(self, run_context, run_values):
        """Called after each successful run."""

    def end(self, session):
        """Called once, at close."""


class _Builtin(SessionRunHook):
    _desc = ()


class StopAtStepHook(_Builtin):
    """Stops the loop once the global step reaches ``last_step`` (put it after a
    LoadCheckpointHook: a restored step counts)."""

    def __init__(self, last_step):
        self.last_step = int(last_step)
        self._desc = ("stop_at_step", self.last_step)


class StopAtTimeHook(_Builtin):
    """Stops the loop at the first run ending ``seconds`` or more after it began."""

    def __init__(self, seconds):
        self._desc = ("stop_at_time", float(seconds))


class CheckpointSaverHook(_Builtin):
    """Saves checkpoints of the variables to folder ``checkpoint_dir`` every ``save_steps``
    steps and/or ``save_secs`` seconds, and at the end, keeping the newest ``keep_last``."""

    def __init__(self, checkpoint_dir, save_steps=0, save_secs=0.0, keep_last=5):
        import os
        self._desc = ("checkpoint_saver", os.fspath(checkpoint_dir), int(save_steps or 0),
                      float(save_secs or 0.0), int(keep_last))


class LoadCheckpointHook(_Builtin):
    """Restores the latest checkpoint of ``checkpoint_dir`` when the loop is created and sets
    the global step to its step; no checkpoint there is a fresh start."""

    def __init__(self, checkpoint_dir):
        import os
        self._desc = ("load_checkpoint", os.fspath(checkpoint_dir))


class LoggingHook(SessionRunHook):
    """Every ``every_n_steps`` steps, prints ``step N: loss X (Y steps/s)`` to ``file``
    (default sys.stderr); ``loss`` (an Edge) may be None for the rate alone."""

    def __init__(self, loss=None, every_n_steps=100, file=None):
        self.loss, self.every, self.file = loss, int(every_n_steps), file
        self._last = None
        self._last_step = 0

    def after_create(self, session):
        self._last = time.monotonic()

    def before_run(self, run_context):
        if self.loss is not None and (run_context.step + 1) % self.every == 0:
            return SessionRunArgs(fetches=self.loss)
        return None

    def after_run(self, run_context, run_values):
        step = run_context.step
        if step % self.every:
            return
        now = time.monotonic()
        rate = (step - self._last_step) / max(now - (self._last or now), 1e-9)
        self._last, self._last_step = now, step
        out = self.file or sys.stderr
        if run_values.results is not None:
            print(f"step {step}: loss {float(run_values.results.mean()):.6g} ({rate:.1f} "
                  "steps/s)", file=out, flush=True)
        else:
            print(f"step {step} ({rate:.1f} steps/s)", file=out, flush=True)


class _Adapter:
    """What the C loop calls for one Python hook: translates to the SessionRunHook methods."""

    # It holds the session, not the MonitoredSession: the C loop holds the adapter, and a cycle
    # through it would never be collected.
    def __init__(self, hook, session):
        self.hook, self.session = hook, session
        self._fetch = None

    @property
    def __name__(self):  # noqa: the C side names the hook in messages from its type
        return type(self.hook).__name__

    def begin(self):
        self.hook.begin()

    def after_create(self):
        self.hook.after_create(self.session)

    def before_run(self, ctx):
        from .session import _Fetches, _split_feeds, _target
        g = self.session.graph
        self._fetch = None
        args = self.hook.before_run(SessionRunContext(self.session, ctx, None))
        if args is None:
            return
        if not isinstance(args, SessionRunArgs):
            raise TypeError(f"{type(self.hook).__name__}.before_run must return SessionRunArgs "
                            f"or None, not {type(args).__name__}")
        if args.fetches is not None:
            f = _Fetches(g, args.fetches)
            indices = [ctx.add_fetch(e) for e in f.edges]
            for t in f.targets:
                ctx.add_target(t)
            self._fetch = (f, indices)
        edges, values = _split_feeds(g, args.feed_dict)
        for e, v in zip(edges, values):
            ctx.add_feed(e, v)
        if args.targets is not None:
            ts = args.targets
            if isinstance(ts, (_core.Node, _core.Edge, str)):
                ts = [ts]
            for t in ts:
                ctx.add_target(_target(g, t))

    def after_run(self, ctx):
        results = None
        if self._fetch is not None:
            f, indices = self._fetch
            results = f.build([ctx.value(i) for i in indices])
        self.hook.after_run(SessionRunContext(self.session, ctx, None),
                            SessionRunValues(results))

    def end(self):
        self.hook.end(self.session)


class _Loop(_core.Monitored):
    __slots__ = ()


class MonitoredSession:
    """A session's training loop with hooks (TensorFlow's MonitoredSession over
    ``ses_monitored_t``)::

        hooks = [ses.train.LoadCheckpointHook("ckpt"), ses.train.StopAtStepHook(1000),
                 ses.train.CheckpointSaverHook("ckpt", save_steps=100)]
        with ses.train.MonitoredSession(s, hooks=hooks) as m:
            while not m.should_stop():
                m.run(loss, {x: xb, y: yb}, targets=[step])

    ``session`` stays open after :meth:`close` (the hooks' ``end`` run there: the saver saves
    the last step). Hooks run in the order given; built-ins are StopAtStepHook,
    StopAtTimeHook, CheckpointSaverHook, LoadCheckpointHook and LoggingHook, and any
    :class:`SessionRunHook` subclass works beside them.
    """

    def __init__(self, session, hooks=()):
        from .session import Session
        if not isinstance(session, Session):
            raise TypeError(f"session: expected a session.Session, got "
                            f"{type(session).__name__}")
        self.session = session
        self.hooks = list(hooks or ())
        descs = []
        for h in self.hooks:
            if isinstance(h, _Builtin):
                descs.append(h._desc)
            elif isinstance(h, SessionRunHook) or all(
                    hasattr(h, m) for m in ("before_run", "after_run")):
                descs.append(_Adapter(h, session))
            else:
                raise TypeError(f"hooks: {type(h).__name__} is not a SessionRunHook")
        self._m = _Loop(session, descs)

    def run(self, fetches=None, feed_dict=None, targets=None):
        """One step: every hook's before_run, one eval of ``fetches`` (the forms of
        :meth:`Session.eval`) with ``feed_dict`` and ``targets`` plus what the hooks added,
        the global step incremented, every hook's after_run. Returns the fetches' values."""
        from .session import _Fetches, _split_feeds, _target
        g = self.session.graph
        f = _Fetches(g, fetches)
        edges, values = _split_feeds(g, feed_dict)
        tlist = list(f.targets)
        if targets is not None:
            if isinstance(targets, (_core.Node, _core.Edge, str)):
                targets = [targets]
            tlist.extend(_target(g, t) for t in targets)
        return f.build(self._m._run(f.edges, edges, values, tlist))

    def should_stop(self):
        """Whether a hook or the caller asked the loop to stop (or it was closed)."""
        return self._m.should_stop()

    def request_stop(self):
        """Asks the loop to stop (any thread)."""
        self._m.request_stop()

    @property
    def step(self):
        """The global step: runs completed, from the restored checkpoint's step."""
        return self._m.step

    @step.setter
    def step(self, value):
        self._m.step = value

    def close(self):
        """Ends the loop: every hook's end (even when one fails); the session stays open."""
        self._m.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
