#!/usr/bin/env python3
"""The seeds' network on Fashion-MNIST, in Python: 784 -> fc 256 sigmoid -> fc 10 -> softmax
cross-entropy, SGD at 0.5, batches of 64, 5 epochs, as examples/train_fashion_mnist.c does.

    python3 python/examples/train_fashion_mnist.py [--epochs 5] [--device cpu]
        [--optimizer sgd|momentum|adam] [--lr X] [--checkpoint-dir DIR]

Reads Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist), trains through a
MonitoredSession (a stop-at-step hook, optional checkpoints), prints one progress line per epoch
with the test accuracy, and ends with "test accuracy: 0.xxxx" (about 0.86).
"""
import argparse
import sys
import time

import numpy as np

import session as ses

PIXELS, CLASSES, HIDDEN, EVAL_BATCH = 784, 10, 256, 1000
DEFAULT_LR = {"sgd": 0.5, "momentum": 0.1, "adam": 0.001}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=ses.datasets.FASHION_MNIST_DIR)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--optimizer", choices=sorted(DEFAULT_LR), default="sgd")
    p.add_argument("--lr", type=float)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--checkpoint-dir")
    a = p.parse_args(argv)

    try:
        train_x, train_y, test_x, test_y = ses.datasets.load_fashion_mnist(a.data)
    except ses.NotFoundError as e:
        print(f"train_fashion_mnist: {e} (apt-get install dataset-fashion-mnist)",
              file=sys.stderr)
        return 1
    train_x = train_x.reshape(-1, PIXELS).astype(np.float32) / 255.0
    test_x = test_x.reshape(-1, PIXELS).astype(np.float32) / 255.0
    train_y = train_y.astype(np.int64)
    test_y = test_y.astype(np.int64)

    g = ses.Graph()
    x = g.placeholder("x", np.float32, [None, PIXELS])
    labels = g.placeholder("labels", np.int64, [None])
    hidden = ses.train.fc(g, x, HIDDEN, activation="sigmoid", name="fc1", seed=a.seed)
    logits = ses.train.fc(g, hidden, CLASSES, name="fc2", seed=a.seed + 1)
    loss = ses.train.softmax_cross_entropy(g, logits, labels, name="loss")
    prediction = g.op("ArgMax", [logits], name="prediction", axis=1, keepdims=0)
    lr = a.lr if a.lr is not None else DEFAULT_LR[a.optimizer]
    opt = {"sgd": ses.train.SGD, "momentum": ses.train.Momentum,
           "adam": ses.train.Adam}[a.optimizer](lr)
    train = ses.train.minimize(g, loss, opt, name="train")

    steps_per_epoch = len(train_x) // a.batch  # the last partial batch is dropped
    hooks = [ses.train.StopAtStepHook(a.epochs * steps_per_epoch)]
    if a.checkpoint_dir:
        hooks = [ses.train.LoadCheckpointHook(a.checkpoint_dir)] + hooks + [
            ses.train.CheckpointSaverHook(a.checkpoint_dir, save_steps=500)]

    with ses.Session(g, devices=[a.device], threads=a.threads) as s:
        # Compiled once for the evaluation batches; training goes through the monitored loop.
        evaluate = s.compile(prediction, feeds=[x])

        def accuracy():
            right = 0
            for i in range(0, len(test_x), EVAL_BATCH):
                right += int((evaluate.run(test_x[i:i + EVAL_BATCH]) ==
                              test_y[i:i + EVAL_BATCH]).sum())
            return right / len(test_x)

        with ses.train.MonitoredSession(s, hooks=hooks) as m:
            rng = np.random.default_rng(a.seed)
            epoch = m.step // steps_per_epoch
            while not m.should_stop():
                order = rng.permutation(len(train_x))
                start, total, n = time.monotonic(), 0.0, 0
                for k in range(m.step % steps_per_epoch, steps_per_epoch):
                    if m.should_stop():
                        break
                    idx = order[k * a.batch:(k + 1) * a.batch]
                    total += float(m.run(loss, {x: train_x[idx], labels: train_y[idx]},
                                         targets=[train]))
                    n += 1
                epoch += 1
                secs = time.monotonic() - start
                print(f"epoch {epoch}/{a.epochs}: loss {total / max(n, 1):.4f}, "
                      f"test accuracy {accuracy():.4f} ({secs:.1f} s, "
                      f"{1000 * secs / max(n, 1):.2f} ms/step)", flush=True)
        print(f"test accuracy: {accuracy():.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
