#!/usr/bin/env python3
"""Writes the ONNX models bench/gpu/run.sh times, with their inputs, into a folder.

    python3 bench/gpu/make_models.py OUTDIR [--small]

Writes OUTDIR/mlp.onnx, OUTDIR/mlp_input.npy, OUTDIR/cnn.onnx, OUTDIR/cnn_input.npy:
  mlp  1024-4096-4096-1024, Relu after the first two layers, batch 512
       (Gemm transB=1, Relu, Gemm transB=1, Relu, Gemm transB=1: 25.7 GFLOP per run)
  cnn  input 1x28x28 (Fashion-MNIST's shape), batch 256:
       Conv 3x3 pads 1 (32 filters), Relu, MaxPool 2x2, Conv 3x3 pads 1 (64), Relu, MaxPool 2x2,
       Flatten, Gemm transB=1 to 10 classes (64*7*7 = 3136 inputs; 2.0 GFLOP per run)
--small writes the same layers at batch 8, for a quick check on a CPU.

The weights are PyTorch's default initialization under torch.manual_seed(0), written as the
ONNX initializers; bench/gpu/torch_onnx_bench.py builds the same nn.Module (module() below)
and loads its weights back from those initializers, so both sides compute the same function.
The graphs are written with onnx.helper, not torch.onnx.export: the exporter's output differs
between PyTorch versions (and from 2.9 the default dynamo exporter needs onnxscript), while
these node lists are fixed. Opset 13. Needs torch and onnx (which brings numpy).
"""
import argparse
import os
import sys

MODELS = ("mlp", "cnn")
BATCH = {"mlp": 512, "cnn": 256}


def module(name):
    """The PyTorch module of model @p name, with the layer order of its ONNX graph."""
    import torch.nn as nn
    if name == "mlp":
        return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                             nn.Linear(4096, 1024))
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(64 * 7 * 7, 10))
    raise ValueError("no model " + name)


def input_shape(name, batch):
    return [batch, 1024] if name == "mlp" else [batch, 1, 28, 28]


def graph_nodes(name):
    """ONNX nodes computing module(name); initializer names are the state_dict keys."""
    from onnx import helper
    if name == "mlp":
        return [
            helper.make_node("Gemm", ["x", "0.weight", "0.bias"], ["h1"], name="fc1", transB=1),
            helper.make_node("Relu", ["h1"], ["r1"], name="relu1"),
            helper.make_node("Gemm", ["r1", "2.weight", "2.bias"], ["h2"], name="fc2", transB=1),
            helper.make_node("Relu", ["h2"], ["r2"], name="relu2"),
            helper.make_node("Gemm", ["r2", "4.weight", "4.bias"], ["y"], name="fc3", transB=1),
        ]
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    pool = dict(kernel_shape=[2, 2], strides=[2, 2])
    return [
        helper.make_node("Conv", ["x", "0.weight", "0.bias"], ["c1"], name="conv1", **conv),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", **pool),
        helper.make_node("Conv", ["p1", "3.weight", "3.bias"], ["c2"], name="conv2", **conv),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", **pool),
        helper.make_node("Flatten", ["p2"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "7.weight", "7.bias"], ["y"], name="fc", transB=1),
    ]


def write(name, out, batch):
    import numpy as np
    import onnx
    import torch
    from onnx import TensorProto, helper, numpy_helper

    torch.manual_seed(0)
    m = module(name)
    inits = [numpy_helper.from_array(v.detach().numpy().astype(np.float32), k)
             for k, v in m.state_dict().items()]
    shape = input_shape(name, batch)
    out_dim = 1024 if name == "mlp" else 10
    graph = helper.make_graph(
        graph_nodes(name), name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch"] + shape[1:])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", out_dim])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="libsession bench/gpu/make_models.py")
    model.ir_version = min(model.ir_version, 8)  # readable by older runtimes too
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))
    torch.manual_seed(1)
    x = torch.rand(*shape).numpy().astype(np.float32)
    np.save(os.path.join(out, name + "_input.npy"), x)
    print("make_models.py: %s: input %s, %d initializers -> %s"
          % (name, "x".join(map(str, shape)), len(inits), os.path.join(out, name + ".onnx")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder to write into (created)")
    parser.add_argument("--small", action="store_true", help="batch 8 (a quick CPU check)")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated subset")
    args = parser.parse_args()
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        print("make_models.py: %s (for %s): needs torch and onnx" % (e, sys.executable),
              file=sys.stderr)
        return 3
    os.makedirs(args.out, exist_ok=True)
    for name in args.models.split(","):
        write(name, args.out, 8 if args.small else BATCH[name])
    return 0


if __name__ == "__main__":
    sys.exit(main())
