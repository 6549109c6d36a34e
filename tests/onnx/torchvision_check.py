#!/usr/bin/python3
"""Exports models people run and checks libsession runs them as PyTorch does (issue #22).

    torchvision_check.py SESSION_RUN WORKDIR [NAME...]

For each model (default: all of MODELS): torchvision's architecture with random weights
(weights=None, torch.manual_seed(0); nothing is downloaded), or a torch.nn.TransformerEncoder
(4 layers, d_model 256, 8 heads, sequence 64), in eval mode, is exported with torch.onnx.export
(opset 13, the TorchScript exporter) into WORKDIR, run once by `SESSION_RUN MODEL --device cpu`
on an input of torch.rand under torch.manual_seed(1), and its output compared with PyTorch's on
the same input: the check passes when max |libsession - pytorch| <= 1e-4 * max |pytorch|. The
model file is deleted after its check (vgg19's is 548 MB).

Prints CMocka's lines ([ RUN ], [ OK ] / [ FAILED ], then [ PASSED ] N test(s). and, when some
failed, [ FAILED ] N test(s), listed below:), so scripts/test counts the checks. Exit 0 when all
passed, 1 otherwise, 77 (meson's skip) without torch and torchvision. Needs Debian's
python3-torch and python3-torchvision (/usr/bin/python3).
"""
import os
import subprocess
import sys
import time

TOLERANCE = 1e-4

# name: (builder, input shape)
MODELS = {
    "alexnet": ("torchvision", (1, 3, 224, 224)),
    "densenet121": ("torchvision", (1, 3, 224, 224)),
    "googlenet": ("torchvision", (1, 3, 224, 224)),
    "inception_v3": ("torchvision", (1, 3, 299, 299)),
    "resnet50": ("torchvision", (1, 3, 224, 224)),
    "shufflenet_v2_x1_0": ("torchvision", (1, 3, 224, 224)),
    "squeezenet1_0": ("torchvision", (1, 3, 224, 224)),
    "vgg19": ("torchvision", (1, 3, 224, 224)),
    "transformer_encoder": ("transformer", (1, 64, 256)),
}


def build(name, kind):
    import torch
    import torchvision

    torch.manual_seed(0)
    if kind == "transformer":
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, batch_first=True)
        return torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
    kwargs = {"weights": None}
    if name in ("googlenet", "inception_v3"):
        kwargs["init_weights"] = True  # their default with weights=None, said to keep quiet
    return getattr(torchvision.models, name)(**kwargs)


def export(model, x, path):
    import torch

    kwargs = dict(opset_version=13, input_names=["x"], output_names=["y"],
                  do_constant_folding=True)
    # Not under torch.no_grad(): there the TransformerEncoder takes its fused fast path, an op
    # (aten::_transformer_encoder_layer_fwd) the exporter cannot write.
    try:
        # torch 2.x: the classic exporter (the dynamo one wants onnxscript).
        torch.onnx.export(model, (x,), path, dynamo=False, **kwargs)
    except TypeError:  # torch 1.x has no dynamo argument
        torch.onnx.export(model, (x,), path, **kwargs)


def check(session_run, workdir, name):
    """Returns None when model @p name passes, else why not."""
    import numpy as np
    import torch

    kind, shape = MODELS[name]
    model = build(name, kind).eval()
    torch.manual_seed(1)
    x = torch.rand(*shape)
    with torch.no_grad():
        want = model(x).numpy()
    path = os.path.join(workdir, name + ".onnx")
    xin = os.path.join(workdir, name + "_x.npy")
    yout = os.path.join(workdir, name + "_y.npy")
    try:
        export(model, x, path)
        np.save(xin, x.numpy())
        run = subprocess.run([session_run, path, "--device", "cpu", "--input", "x=" + xin,
                              "--output", "y=" + yout, "--quiet"],
                             capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            return "session-run exited %d: %s" % (run.returncode,
                                                  (run.stderr or run.stdout).strip()[-600:])
        got = np.load(yout)
    finally:
        for f in (path, xin, yout):
            if os.path.exists(f):
                os.unlink(f)
    if got.shape != want.shape:
        return "output shape %s, want %s" % (got.shape, want.shape)
    diff = float(np.max(np.abs(got.astype(np.float64) - want)))
    scale = float(np.max(np.abs(want)))
    print("# %s: max |diff| %.3g, max |pytorch| %.3g, ratio %.3g" %
          (name, diff, scale, diff / scale if scale else 0.0))
    if not diff <= TOLERANCE * scale:
        return "max |diff| %.3g > %g * max |pytorch| %.3g" % (diff, TOLERANCE, scale)
    return None


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    session_run, workdir, names = argv[1], argv[2], argv[3:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print("torchvision_check.py: unknown model(s) %s; known: %s" %
              (", ".join(unknown), ", ".join(MODELS)), file=sys.stderr)
        return 2
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        print("torchvision_check.py: skipped, %s (install python3-torchvision)" % e)
        return 77
    os.makedirs(workdir, exist_ok=True)
    failed = []
    print("[==========] Running %d test(s)." % len(names), flush=True)
    for name in names:
        print("[ RUN      ] %s" % name, flush=True)
        start = time.time()
        try:
            why = check(session_run, workdir, name)
        except Exception as e:  # noqa: BLE001 -- an export or PyTorch failure fails this check
            why = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        if why:
            print("[  ERROR   ] --- %s" % why)
            print("[  FAILED  ] %s" % name, flush=True)
            failed.append(name)
        else:
            print("[       OK ] %s (%.1f s)" % (name, time.time() - start), flush=True)
    print("[==========] %d test(s) run." % len(names))
    print("[  PASSED  ] %d test(s)." % (len(names) - len(failed)))
    if failed:
        print("[  FAILED  ] %d test(s), listed below:" % len(failed))
        for name in failed:
            print("[  FAILED  ] %s" % name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
