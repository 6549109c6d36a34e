#!/usr/bin/python3
"""Checks libsession's RNN, GRU and LSTM against PyTorch (issue #22, g-rnnq).

    rnn_torch_check.py SESSION_RUN SESSION_ONNX_TEST WORKDIR

1. Exported models: a 2-layer bidirectional batch_first torch.nn.LSTM, GRU and RNN (8 -> 16)
   followed by a Linear on the last step, exported by torch.onnx.export at opset 14 (the
   exporter's own Transpose/Reshape/Concat around each layer), run by SESSION_RUN on the CPU; the
   check passes when max |libsession - pytorch| <= 1e-4 * max |pytorch|.
2. Single nodes, written into WORKDIR/nodes as ONNX backend node tests and run by
   SESSION_ONNX_TEST --data: each op forward and bidirectional, layout 0 and 1, f32 and f64, with
   B, sequence_lens and the initial states, weights permuted from PyTorch's gate order (GRU with
   linear_before_reset 1, PyTorch's form); reverse with a left-out B ("", a middle input) and
   sequence_lens of 5 and 3, checked against PyTorch on each batch entry's flipped prefix; and
   RNN with activations ["Relu"] and ["Relu", "Relu"] (a list of strings) against
   nonlinearity="relu".

Prints CMocka's lines ([ RUN ], [ OK ] / [ FAILED ], [ PASSED ] N test(s).). Exit 0 when all
passed, 1 otherwise, 77 (meson's skip) without torch. Needs Debian's python3-torch.
"""
import os
import shutil
import subprocess
import sys

TOLERANCE = 1e-4
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def torch_gates_to_onnx(kind, w):
    """PyTorch's gate blocks (LSTM i f g o, GRU r z n) in ONNX's order (i o f c, z r h)."""
    import numpy as np
    if kind == "LSTM":
        i, f, g, o = np.split(w, 4)
        return np.concatenate([i, o, f, g])
    if kind == "GRU":
        r, z, n = np.split(w, 3)
        return np.concatenate([z, r, n])
    return w


def onnx_gates_to_torch(kind, w):
    import numpy as np
    if kind == "LSTM":
        i, o, f, c = np.split(w, 4)
        return np.concatenate([i, f, c, o])
    if kind == "GRU":
        z, r, h = np.split(w, 3)
        return np.concatenate([r, z, h])
    return w


def save_node_test(root, name, node, inputs, outputs, opset=14):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
             np.dtype(np.int32): TensorProto.INT32}
    folder = os.path.join(root, "test_" + name)
    os.makedirs(os.path.join(folder, "test_data_set_0"))
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(k, types[v.dtype], v.shape) for k, v in inputs],
        [helper.make_tensor_value_info(k, types[v.dtype], v.shape) for k, v in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for kind, values in (("input", inputs), ("output", outputs)):
        for i, (k, v) in enumerate(values):
            with open(os.path.join(folder, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, k).SerializeToString())


def node_against_torch(root, kind, bidirectional, layout, dtype):
    import numpy as np
    import torch
    from onnx import helper
    seq, batch, size, hidden = 4, 3, 5, 6
    dirs = 2 if bidirectional else 1
    layer = getattr(torch.nn, kind)(size, hidden, bidirectional=bidirectional,
                                    batch_first=bool(layout)).double()
    x = torch.randn(seq, batch, size, dtype=torch.float64)
    if layout:
        x = x.transpose(0, 1).contiguous()
    h0 = torch.randn(dirs, batch, hidden, dtype=torch.float64)
    c0 = torch.randn(dirs, batch, hidden, dtype=torch.float64)
    with torch.no_grad():
        if kind == "LSTM":
            y, (hn, cn) = layer(x, (h0, c0))
        else:
            y, hn = layer(x, h0)
    w, r, b = [], [], []
    for d in range(dirs):
        sfx = "_reverse" if d else ""
        get = lambda n: getattr(layer, n + sfx).detach().numpy()
        w.append(torch_gates_to_onnx(kind, get("weight_ih_l0")))
        r.append(torch_gates_to_onnx(kind, get("weight_hh_l0")))
        b.append(np.concatenate([torch_gates_to_onnx(kind, get("bias_ih_l0")),
                                 torch_gates_to_onnx(kind, get("bias_hh_l0"))]))
    y = y.numpy()
    y = y.reshape(batch, seq, dirs, hidden) if layout else \
        y.reshape(seq, batch, dirs, hidden).transpose(0, 2, 1, 3)
    state = lambda t: t.numpy().transpose(1, 0, 2) if layout else t.numpy()
    inputs = [("X", x.numpy()), ("W", np.stack(w)), ("R", np.stack(r)), ("B", np.stack(b)),
              ("sequence_lens", np.full(batch, seq, np.int32)), ("initial_h", state(h0))]
    outputs = [("Y", y), ("Y_h", state(hn))]
    if kind == "LSTM":
        inputs.append(("initial_c", state(c0)))
        outputs.append(("Y_c", state(cn)))
    inputs = [(k, v if v.dtype == np.int32 else v.astype(dtype)) for k, v in inputs]
    outputs = [(k, v.astype(dtype)) for k, v in outputs]
    attrs = dict(hidden_size=hidden, layout=layout,
                 direction="bidirectional" if bidirectional else "forward")
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    node = helper.make_node(kind, [k for k, _ in inputs], [k for k, _ in outputs], **attrs)
    name = f"{kind.lower()}_{'bidirectional' if bidirectional else 'forward'}_layout{layout}_" \
           f"{np.dtype(dtype).name}"
    save_node_test(root, name, node, inputs, outputs)


def reverse_against_torch(root, kind):
    """direction reverse, B left out (""), sequence_lens 5 and 3."""
    import numpy as np
    import torch
    from onnx import helper
    seq, batch, size, hidden = 5, 2, 3, 4
    gates = GATES[kind]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((seq, batch, size)).astype(np.float32)
    w = rng.standard_normal((1, gates * hidden, size)).astype(np.float32)
    r = (rng.standard_normal((1, gates * hidden, hidden)) * 0.5).astype(np.float32)
    lens = np.array([5, 3], np.int32)
    layer = getattr(torch.nn, kind)(size, hidden, bias=False).double()
    with torch.no_grad():
        layer.weight_ih_l0.copy_(torch.tensor(onnx_gates_to_torch(kind, w[0]).astype(np.float64)))
        layer.weight_hh_l0.copy_(torch.tensor(onnx_gates_to_torch(kind, r[0]).astype(np.float64)))
    y = np.zeros((seq, 1, batch, hidden), np.float32)
    y_h = np.zeros((1, batch, hidden), np.float32)
    for e in range(batch):
        n = lens[e]
        with torch.no_grad():
            out = layer(torch.tensor(x[:n, e:e + 1].astype(np.float64)).flip(0))[0].numpy()[:, 0]
        for s in range(n):
            y[n - 1 - s, 0, e] = out[s]
        y_h[0, e] = out[n - 1]
    attrs = dict(hidden_size=hidden, direction="reverse")
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    node = helper.make_node(kind, ["X", "W", "R", "", "sequence_lens"], ["Y", "Y_h"], **attrs)
    save_node_test(root, f"{kind.lower()}_reverse_sequence_lens", node,
                   [("X", x), ("W", w), ("R", r), ("sequence_lens", lens)],
                   [("Y", y), ("Y_h", y_h)])


def relu_rnn_against_torch(root, bidirectional):
    import numpy as np
    import torch
    from onnx import helper
    seq, batch, size, hidden = 3, 2, 4, 5
    dirs = 2 if bidirectional else 1
    layer = torch.nn.RNN(size, hidden, nonlinearity="relu", bidirectional=bidirectional).double()
    x = torch.randn(seq, batch, size, dtype=torch.float64)
    with torch.no_grad():
        y, hn = layer(x)
    w = np.stack([getattr(layer, "weight_ih_l0" + ("_reverse" if d else "")).detach().numpy()
                  for d in range(dirs)])
    r = np.stack([getattr(layer, "weight_hh_l0" + ("_reverse" if d else "")).detach().numpy()
                  for d in range(dirs)])
    b = np.stack([np.concatenate([getattr(layer, n + ("_reverse" if d else "")).detach().numpy()
                                  for n in ("bias_ih_l0", "bias_hh_l0")]) for d in range(dirs)])
    y = y.numpy().reshape(seq, batch, dirs, hidden).transpose(0, 2, 1, 3)
    node = helper.make_node("RNN", ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=hidden,
                            direction="bidirectional" if bidirectional else "forward",
                            activations=["Relu"] * dirs)
    f = lambda v: v.astype(np.float32)
    save_node_test(root, f"rnn_relu_{'bidirectional' if bidirectional else 'forward'}", node,
                   [("X", f(x.numpy())), ("W", f(w)), ("R", f(r)), ("B", f(b))],
                   [("Y", f(y)), ("Y_h", f(hn.numpy()))])


class Stacked:
    """A 2-layer bidirectional batch_first layer of @p kind and a Linear on the last step."""

    def __new__(cls, kind):
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = getattr(torch.nn, kind)(8, 16, num_layers=2, bidirectional=True,
                                                   batch_first=True)
                self.fc = torch.nn.Linear(32, 4)

            def forward(self, x):
                y, _ = self.rnn(x)
                return self.fc(y[:, -1])
        return Model()


def exported(session_run, workdir, kind):
    """Returns None when the exported model of @p kind passes, else why not."""
    import numpy as np
    import torch
    torch.manual_seed(0)
    model = Stacked(kind).eval()
    x = torch.randn(3, 5, 8)
    path = os.path.join(workdir, kind + ".onnx")
    kwargs = dict(opset_version=14, input_names=["x"], output_names=["y"])
    try:
        torch.onnx.export(model, (x,), path, dynamo=False, **kwargs)
    except TypeError:  # torch 1.x has no dynamo argument
        torch.onnx.export(model, (x,), path, **kwargs)
    with torch.no_grad():
        want = model(x).numpy()
    x_path, y_path = path + ".x.npy", path + ".y.npy"
    np.save(x_path, x.numpy())
    run = subprocess.run([session_run, path, "--device", "cpu", "--input", "x=" + x_path,
                          "--output", "y=" + y_path], capture_output=True, text=True)
    if run.returncode != 0:
        return f"session-run exited {run.returncode}: {run.stdout[-600:]}{run.stderr[-600:]}"
    got = np.load(y_path)
    if got.shape != want.shape:
        return f"shape {got.shape}, PyTorch's {want.shape}"
    diff, scale = float(np.abs(got - want).max()), float(np.abs(want).max())
    if diff > TOLERANCE * scale:
        return f"max |diff| {diff:.3g} > {TOLERANCE} x max |pytorch| {scale:.3g}"
    print(f"    max |diff| {diff:.3g} of max |pytorch| {scale:.3g}")
    return None


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    session_run, onnx_test, workdir = sys.argv[1:]
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
        import torch
    except ImportError as e:
        print(f"skipped: {e}")
        return 77
    import warnings
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    shutil.rmtree(workdir, ignore_errors=True)
    nodes = os.path.join(workdir, "nodes")
    os.makedirs(nodes)
    for kind in GATES:
        for bidirectional in (False, True):
            for layout in (0, 1):
                node_against_torch(nodes, kind, bidirectional, layout, "float32")
        node_against_torch(nodes, kind, True, 0, "float64")
        reverse_against_torch(nodes, kind)
    relu_rnn_against_torch(nodes, False)
    relu_rnn_against_torch(nodes, True)

    failed = []
    checks = [("exported_" + kind.lower(), kind) for kind in GATES] + [("node_tests", None)]
    for name, kind in checks:
        print(f"[ RUN      ] {name}", flush=True)
        if kind:
            why = exported(session_run, workdir, kind)
        else:
            run = subprocess.run([onnx_test, "--device", "cpu:0", "--data", nodes, "--verbose"],
                                 capture_output=True, text=True)
            print(run.stdout[-3000:], end="")
            why = None if run.returncode == 0 and " 0 failed, 0 unsupported" in run.stdout \
                else f"session-onnx-test exited {run.returncode}: {run.stderr[-600:]}"
        if why:
            failed.append(name)
            print(f"    {why}")
            print(f"[  FAILED  ] {name}", flush=True)
        else:
            print(f"[       OK ] {name}", flush=True)
    print(f"[  PASSED  ] {len(checks) - len(failed)} test(s).")
    if failed:
        print(f"[  FAILED  ] {len(failed)} test(s), listed below:")
        for name in failed:
            print(f"[  FAILED  ] {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
