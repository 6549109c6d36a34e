#!/usr/bin/env python3
"""Writes the ONNX models bench/onnx_bench.sh times, with their inputs, into a folder.

    /usr/bin/python3 bench/onnx_models.py OUTDIR [--models NAME,...]

For each model NAME it writes OUTDIR/NAME.onnx (input "x", output "y", fixed shapes) and
OUTDIR/NAME_input.npy (torch.rand under torch.manual_seed(1), float32):
  mlp_b1         784-256-10, Sigmoid after the first layer, batch 1
  mlp_b64        the same network, batch 64
  bigmlp_b128    1024-4096-4096-1024, Relu after the first two layers, batch 128
  cnn_b64        input 1x28x28: 2x (Conv 3x3 pads 1 + Relu + MaxPool 2), 32 then 64 channels,
                 Flatten, Linear 3136 -> 10; batch 64
  squeezenet_b1  torchvision squeezenet1_0, 3x224x224, batch 1
  resnet50_b1    torchvision resnet50, 3x224x224, batch 1
Weights are PyTorch's default initialization under torch.manual_seed(0) (torchvision's with
weights=None: nothing is downloaded). Each model is exported with torch.onnx.export (opset 13,
eval mode, constants folded, so BatchNorm is folded into the convolutions as any exporter does).
Where the export fails (a newer torch may want onnxscript), the MLPs and the CNN are built with
onnx.helper from the same module's weights instead; the torchvision models have no such fallback
and are reported as skipped (exit status 0 while at least one model was written).
Needs torch and onnx (which brings numpy); torchvision for the last two. Prints one line a model.
"""
import argparse
import os
import sys

MODELS = ("mlp_b1", "mlp_b64", "bigmlp_b128", "cnn_b64", "squeezenet_b1", "resnet50_b1")


def module(name):
    """The nn.Module of model @p name (its batch is in the name) and its input shape."""
    import torch.nn as nn
    base, batch = name.rsplit("_b", 1)
    batch = int(batch)
    if base == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.Sigmoid(), nn.Linear(256, 10)), [batch, 784]
    if base == "bigmlp":
        return (nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                              nn.Linear(4096, 1024)), [batch, 1024])
    if base == "cnn":
        return (nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(64 * 7 * 7, 10)), [batch, 1, 28, 28])
    import torchvision
    if base == "squeezenet":
        return torchvision.models.squeezenet1_0(weights=None), [batch, 3, 224, 224]
    if base == "resnet50":
        return torchvision.models.resnet50(weights=None), [batch, 3, 224, 224]
    raise ValueError("no model " + name)


def helper_model(name, m, shape):
    """The same function as @p m built node by node with onnx.helper (MLPs and the CNN only)."""
    import numpy as np
    import torch.nn as nn
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, cur = [], [], "x"
    for i, layer in enumerate(m):
        out = "y" if i == len(m) - 1 else "t%d" % i
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            w, b = "%d.weight" % i, "%d.bias" % i
            inits += [numpy_helper.from_array(layer.weight.detach().numpy().astype(np.float32), w),
                      numpy_helper.from_array(layer.bias.detach().numpy().astype(np.float32), b)]
            if isinstance(layer, nn.Linear):
                nodes.append(helper.make_node("Gemm", [cur, w, b], [out], transB=1))
            else:
                nodes.append(helper.make_node("Conv", [cur, w, b], [out], kernel_shape=[3, 3],
                                              pads=[1, 1, 1, 1]))
        elif isinstance(layer, nn.ReLU):
            nodes.append(helper.make_node("Relu", [cur], [out]))
        elif isinstance(layer, nn.Sigmoid):
            nodes.append(helper.make_node("Sigmoid", [cur], [out]))
        elif isinstance(layer, nn.MaxPool2d):
            nodes.append(helper.make_node("MaxPool", [cur], [out], kernel_shape=[2, 2],
                                          strides=[2, 2]))
        elif isinstance(layer, nn.Flatten):
            nodes.append(helper.make_node("Flatten", [cur], [out], axis=1))
        else:
            raise ValueError("%s: no onnx.helper form for %s" % (name, type(layer).__name__))
        cur = out
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="libsession bench/onnx_models.py")
    model.ir_version = min(model.ir_version, 8)
    return model


def write(name, out):
    """Writes model @p name and its input; returns how it was built ("export" or "helper")."""
    import numpy as np
    import onnx
    import torch

    torch.manual_seed(0)
    m, shape = module(name)
    m.eval()
    torch.manual_seed(1)
    x = torch.rand(*shape)
    path = os.path.join(out, name + ".onnx")
    how = "torch.onnx.export"
    try:
        with torch.no_grad():
            kwargs = dict(opset_version=13, input_names=["x"], output_names=["y"],
                          do_constant_folding=True)
            try:
                # torch 2.x: the classic TorchScript exporter (the dynamo one wants onnxscript).
                torch.onnx.export(m, (x,), path, dynamo=False, **kwargs)
            except TypeError:  # torch 1.x has no dynamo argument
                torch.onnx.export(m, (x,), path, **kwargs)
    except Exception as e:  # noqa: BLE001 -- any exporter failure selects the fallback
        if name.startswith(("squeezenet", "resnet")):
            raise
        print("onnx_models.py: %s: torch.onnx.export failed (%s); onnx.helper instead"
              % (name, str(e).splitlines()[0] if str(e) else type(e).__name__))
        onnx.save(helper_model(name, m, shape), path)
        how = "onnx.helper"
    onnx.checker.check_model(onnx.load(path))
    np.save(os.path.join(out, name + "_input.npy"), x.numpy().astype(np.float32))
    print("onnx_models.py: %s: input %s, %s -> %s"
          % (name, "x".join(map(str, shape)), how, path))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder to write into (created)")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated subset")
    args = parser.parse_args()
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        print("onnx_models.py: %s (for %s): needs torch and onnx" % (e, sys.executable),
              file=sys.stderr)
        return 3
    os.makedirs(args.out, exist_ok=True)
    written = 0
    for name in args.models.split(","):
        try:
            write(name, args.out)
            written += 1
        except Exception as e:  # noqa: BLE001 -- report and go on with the other models
            print("onnx_models.py: %s: skipped: %s: %s" % (name, type(e).__name__, e))
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
