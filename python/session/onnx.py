"""ONNX models imported as graphs."""

import os

from . import _core
from .graph import Graph, _np_dtype

__all__ = ["Model", "load"]


class Model:
    """An imported ONNX model: ``graph`` (a :class:`session.Graph`), ``inputs`` and ``outputs``
    (Edges, in the model's order), ``input_names``, ``output_names`` and ``opset``."""

    __slots__ = ("graph", "inputs", "outputs", "input_names", "output_names", "opset")

    def __init__(self, graph, inputs, outputs, input_names, output_names, opset):
        self.graph, self.inputs, self.outputs = graph, inputs, outputs
        self.input_names, self.output_names, self.opset = input_names, output_names, opset

    def __repr__(self):
        return (f"<session.onnx.Model opset {self.opset}: inputs {self.input_names}, outputs "
                f"{self.output_names}>")


def load(path, initializers_as_variables=False):
    """Imports the ONNX model file at ``path`` and returns a :class:`Model`.

    Initializers become constants (variables, trainable and checkpointed, with
    ``initializers_as_variables``); graph inputs become placeholders. A model with ops
    libsession lacks raises UnimplementedError listing every one; a malformed file
    InvalidArgumentError. The GIL is released while it reads.
    """
    graph, inputs, outputs, opset = _core.onnx_import(os.fspath(path),
                                                      bool(initializers_as_variables), Graph)
    for _name, edge, dtype in inputs:
        try:
            graph._dtypes[edge] = _np_dtype(dtype)
        except TypeError:
            pass
    return Model(graph, [e for _, e, _ in inputs], [e for _, e in outputs],
                 [n for n, _, _ in inputs], [n for n, _ in outputs], opset)
