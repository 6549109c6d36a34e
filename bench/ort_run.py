#!/usr/bin/env python3
"""Runs an ONNX model in ONNX Runtime's Python package the way `session-run MODEL --repeat N`
runs it in libsession: bench/ort_run.js's twin, for machines with onnxruntime for Python but no
Node.js (a lent GPU machine).

  python3 bench/ort_run.py MODEL.onnx INPUT.npy [--output OUT.npy] [--threads T] [--repeat N]

One InferenceSession (intra-op threads T, inter-op 1, sequential, every graph optimization);
N runs of the same input, each timed; prints `runs 2 to N: min A ms, median B ms, max C ms` with
the median taken as session-run takes it. Exit 0, 1 (an error), 2 (bad usage).
"""
import argparse
import sys
import time

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("input")
    p.add_argument("--output")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=1)
    a = p.parse_args()
    if a.threads < 1 or a.repeat < 1:
        p.error("bad --threads or --repeat")
    try:
        import onnxruntime as ort
    except ImportError as e:
        print("ort_run.py: cannot import onnxruntime: %s" % e, file=sys.stderr)
        return 1
    o = ort.SessionOptions()
    o.intra_op_num_threads = a.threads
    o.inter_op_num_threads = 1
    o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(a.model, o, providers=["CPUExecutionProvider"])
    x = np.load(a.input)
    feeds = {s.get_inputs()[0].name: x}
    out = s.get_outputs()[0].name
    times = []
    y = None
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        y = s.run([out], feeds)[0]
        times.append((time.perf_counter() - t0) * 1e3)
    print("onnxruntime %s: %s, %d intra-op thread(s); first run %.3f ms"
          % (ort.__version__, a.model, a.threads, times[0]))
    if a.repeat > 1:
        rest = sorted(times[1:])
        print("runs 2 to %d: min %.3f ms, median %.3f ms, max %.3f ms"
              % (a.repeat, rest[0], rest[(a.repeat - 1) // 2], rest[-1]))
    if a.output:
        np.save(a.output, np.ascontiguousarray(y, dtype=np.float32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
