#!/usr/bin/python3
"""The Python side of bench/python_train_bench.sh: one training step of the seeds' network
(784-256-10, sigmoid, softmax cross-entropy, SGD) as python/examples/train_fashion_mnist.py takes
it: one MonitoredSession.run of the loss with the optimizer step as a target.

    meson devenv -C build /usr/bin/python3 bench/python_train_step.py --batch 64

Two steps, interleaved in each repetition: on one batch fed again and again, as
session-train-bench does (the figure to compare with C's), and on a batch gathered from a
6,000-example training set by an index array each step, as the example does (the gather and its
cache misses come on top; the C example gathers too, session-train-bench does not). Random data:
the cost does not depend on the values. Threads come from the environment, as for
session-train-bench (SESSION_DRIVER_CPU_THREADS, OPENBLAS_NUM_THREADS). Prints:
    bench: python_train_step_b<B>_t<T>_us: <us> us          one batch, as session-train-bench
    bench: python_train_step_gather_b<B>_t<T>_us: <us> us   the example's gathered batches
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

import session as ses

PIXELS, HIDDEN, CLASSES, EXAMPLES = 784, 256, 10, 6000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=0, help="steps per repetition")
    parser.add_argument("--reps", type=int, default=9)
    a = parser.parse_args()
    if a.batch < 1 or a.batch > EXAMPLES or a.reps < 1 or a.steps < 0:
        parser.error("--batch from 1 to 6000, --reps at least 1")
    steps = a.steps or (200 if a.batch <= 64 else 60)
    threads = os.environ.get("SESSION_DRIVER_CPU_THREADS", "default")

    g = ses.Graph()
    x = g.placeholder("x", np.float32, [None, PIXELS])
    labels = g.placeholder("labels", np.int64, [None])
    hidden = ses.train.fc(g, x, HIDDEN, activation="sigmoid", name="fc1", seed=1)
    logits = ses.train.fc(g, hidden, CLASSES, name="fc2", seed=2)
    loss = ses.train.softmax_cross_entropy(g, logits, labels, name="loss")
    train = ses.train.minimize(g, loss, ses.train.SGD(0.1), name="train")

    rng = np.random.default_rng(1)
    train_x = rng.random((EXAMPLES, PIXELS), dtype=np.float32)
    train_y = rng.integers(0, CLASSES, EXAMPLES, dtype=np.int64)
    order = rng.permutation(EXAMPLES)
    per_epoch = EXAMPLES // a.batch

    with ses.Session(g, devices=["cpu"]) as s, ses.train.MonitoredSession(s) as m:
        k = 0
        bx, by = train_x[order[:a.batch]], train_y[order[:a.batch]]

        def step():
            return float(m.run(loss, {x: bx, labels: by}, targets=[train]))

        def gathered_step():
            nonlocal k
            idx = order[(k % per_epoch) * a.batch:(k % per_epoch + 1) * a.batch]
            k += 1
            return float(m.run(loss, {x: train_x[idx], labels: train_y[idx]}, targets=[train]))

        for _ in range(200):  # warm-up, as session-train-bench
            step()
            gathered_step()
        times, gathered = [], []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            t1 = time.perf_counter()
            for _ in range(steps):
                gathered_step()
            times.append((t1 - t0) / steps)
            gathered.append((time.perf_counter() - t1) / steps)
    t, tg = statistics.median(times), statistics.median(gathered)
    print(f"python train step batch {a.batch}, threads {threads}: {t * 1e6:.1f} us "
          f"(spread {min(times) * 1e6:.1f}-{max(times) * 1e6:.1f}), gathered batches "
          f"{tg * 1e6:.1f} us, {a.reps} reps of {steps}")
    print(f"bench: python_train_step_b{a.batch}_t{threads}_us: {t * 1e6:.1f} us")
    print(f"bench: python_train_step_gather_b{a.batch}_t{threads}_us: {tg * 1e6:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
