#!/usr/bin/env python3
"""PyTorch's side of the ONNX figures of bench/gpu/run.sh: the models of make_models.py.

    python3 bench/gpu/torch_onnx_bench.py MODEL_DIR [--device cuda:0] [--repeat N]
                                          [--models mlp,cnn] [--check NAME=OUT.npy]...
    python3 bench/gpu/torch_onnx_bench.py MODEL_DIR --cpu-smoke     (--device cpu --repeat 3)

For each model, builds make_models.module(NAME), loads its weights from the ONNX file's
initializers, and runs it --repeat times the way `session-run --repeat N` runs the ONNX file:
each run copies the input in from host memory (the same NumPy array session-run reads, pageable),
runs the forward pass and copies the output out to the host (which waits for the device).
fp32; TF32 is off for matmuls and cuDNN convolutions. Prints, per model,
    torch <version> on <device>: <model> batch <B>: first run ..., runs 2 to N: min/median/max
    bench: torch_onnx_<model>_b<B>_ms: <median of runs 2..N> ms
and with --check NAME=FILE (an output libsession wrote for the same input), the largest
difference relative to the largest magnitude of PyTorch's output:
    check: <model> libsession vs pytorch: max |diff| / max |y| = <e> (tolerance 1e-4) PASS|FAIL
Exits 3 when PyTorch, onnx or the device is missing; 1 when a check fails.
"""
import argparse
import os
import statistics
import sys
import time

TOLERANCE = 1e-4


def load_module(torch, make_models, name, path, dev):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    weights = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
               for t in model.graph.initializer}
    m = make_models.module(name)
    m.load_state_dict(weights)  # strict: every parameter from the file, none left over
    return m.to(dev).eval()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="the folder make_models.py wrote")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--check", action="append", default=[], metavar="NAME=FILE")
    parser.add_argument("--cpu-smoke", action="store_true", help="--device cpu --repeat 3")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.device, args.repeat = "cpu", 3
    if args.repeat < 2:
        parser.error("--repeat must be at least 2 (the first run is not counted)")
    checks = dict(c.split("=", 1) for c in args.check)
    try:
        import numpy as np
        import torch
        import onnx  # noqa: F401
    except ImportError as e:
        print("torch_onnx_bench.py: %s (for %s)" % (e, sys.executable), file=sys.stderr)
        return 3
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import make_models

    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("torch_onnx_bench.py: PyTorch sees no CUDA device", file=sys.stderr)
        return 3
    # fp32 on both sides: libsession's CUDA driver keeps TF32 off unless asked.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")  # the same, by the 2.x spelling
    where = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu, %d threads" % (
        torch.get_num_threads())
    status = 0
    for name in args.models.split(","):
        path = os.path.join(args.dir, name + ".onnx")
        m = load_module(torch, make_models, name, path, dev)
        x = torch.from_numpy(np.load(os.path.join(args.dir, name + "_input.npy")))
        batch = x.shape[0]
        times = []
        y = None
        with torch.inference_mode():
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                y = m(x.to(dev)).cpu()  # .cpu() waits for the device, as session-run's fetch
                times.append(time.perf_counter() - t0)
        rest = sorted(times[1:])
        med = statistics.median(rest)
        print("torch %s on %s: %s batch %d: first run %.3f ms, runs 2 to %d: min %.3f ms, "
              "median %.3f ms, max %.3f ms" % (torch.__version__, where, name, batch,
                                               times[0] * 1e3, args.repeat, rest[0] * 1e3,
                                               med * 1e3, rest[-1] * 1e3))
        print("bench: torch_onnx_%s_b%d_ms: %.3f ms" % (name, batch, med * 1e3))
        if name in checks:
            ours = checks[name]
            if not os.path.exists(ours):
                print("check: %s libsession vs pytorch: no output %s FAIL" % (name, ours))
                status = 1
                continue
            a = np.load(ours).astype(np.float64)
            b = y.numpy().astype(np.float64)
            if a.shape != b.shape:
                print("check: %s libsession vs pytorch: shapes differ: %s vs %s FAIL"
                      % (name, a.shape, b.shape))
                status = 1
                continue
            err = float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))
            ok = err <= TOLERANCE and np.isfinite(a).all()
            print("check: %s libsession vs pytorch: max |diff| / max |y| = %.3g (tolerance %g) %s"
                  % (name, err, TOLERANCE, "PASS" if ok else "FAIL"))
            status = status if ok else 1
    return status


if __name__ == "__main__":
    sys.exit(main())
