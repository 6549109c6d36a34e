#!/usr/bin/python3
"""Writes the small ONNX models session-run is tested on, with inputs and expected outputs.

  /usr/bin/python3 tests/onnx/make_models.py tests/onnx/models

mlp: the seeds' network shape, 784-32-10 (Gemm, Relu, MatMul, Add, Softmax), batch 4.
cnn: Conv 3x3 (4 filters, pads 1) + Relu + MaxPool 2x2 + Flatten + Gemm to 10 classes on 1x8x8.
dft20, dft20_default_axis: DFT of op set 20 (axis as input 2 after a left-out dft_length, and
the default axis -2), onesided, on x [2,8,1] real: numpy.fft.rfft along axis 1. Not passed
through onnx.checker, which in ONNX 1.12 does not know op set 20.
The expected outputs are computed here with NumPy, independently of libsession. The files are
committed; rerun this only to change the models (seeded, so the output is reproducible).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)


def save(folder, model, x, y):
    os.makedirs(folder, exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    np.save(os.path.join(folder, "input_0.npy"), x)
    np.save(os.path.join(folder, "expected_0.npy"), y)


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def mlp(folder):
    w1 = (rng.standard_normal((784, 32)) * 0.05).astype(np.float32)
    b1 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((32, 10)) * 0.2).astype(np.float32)
    b2 = (rng.standard_normal(10) * 0.1).astype(np.float32)
    x = rng.random((4, 784), dtype=np.float32)
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["m"], name="fc2"),
        helper.make_node("Add", ["m", "b2"], ["logits"], name="bias2"),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 784])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    y = softmax(np.maximum(x @ w1 + b1, 0) @ w2 + b2).astype(np.float32)
    save(folder, model, x, y)


def conv2d(x, w, b, pad):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, f, h, wd), dtype=np.float64)
    for i in range(h):
        for j in range(wd):
            patch = xp[:, :, i:i + kh, j:j + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + b.reshape(1, f, 1, 1)


def cnn(folder):
    w = (rng.standard_normal((4, 1, 3, 3)) * 0.5).astype(np.float32)
    b = (rng.standard_normal(4) * 0.1).astype(np.float32)
    fw = (rng.standard_normal((64, 10)) * 0.2).astype(np.float32)
    fb = (rng.standard_normal(10) * 0.1).astype(np.float32)
    x = rng.standard_normal((2, 1, 8, 8)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes, "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (b, "b"), (fw, "fw"), (fb, "fb"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    r = np.maximum(conv2d(x.astype(np.float64), w, b, 1), 0)
    p = r.reshape(2, 4, 4, 2, 4, 2).max(axis=(3, 5))
    y = (p.reshape(2, 64) @ fw + fb).astype(np.float32)
    save(folder, model, x, y)


def dft20(folder, with_axis):
    x = rng.standard_normal((2, 8, 1)).astype(np.float32)
    f = np.fft.rfft(x[..., 0].astype(np.float64), axis=1)
    y = np.stack([f.real, f.imag], axis=-1).astype(np.float32)
    nodes = []
    inputs = ["x"]
    if with_axis:
        nodes.append(helper.make_node("Constant", [], ["axis"],
                                      value=numpy_helper.from_array(np.array(1, np.int64))))
        inputs = ["x", "", "axis"]
    nodes.append(helper.make_node("DFT", inputs, ["y"], onesided=1))
    graph = helper.make_graph(
        nodes, "dft20", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    np.save(os.path.join(folder, "input_0.npy"), x)
    np.save(os.path.join(folder, "expected_0.npy"), y)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "models")
    mlp(os.path.join(out, "mlp"))
    cnn(os.path.join(out, "cnn"))
    dft20(os.path.join(out, "dft20"), True)
    dft20(os.path.join(out, "dft20_default_axis"), False)
