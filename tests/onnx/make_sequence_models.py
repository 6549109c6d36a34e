#!/usr/bin/python3
"""Writes the small ONNX models that onnx_sequence_test.c imports (sequences, optionals and
Gradient, which the importer resolves into tensor edges).

  /usr/bin/python3 tests/onnx/make_sequence_models.py tests/onnx/models/sequence

The expected values are written in the C test by hand; these are only the graphs. The files are
committed; rerun this only to change the models.
"""
import os
import sys

import onnx
from onnx import TensorProto, helper


def f32(name, *dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims))


def i64(name, *dims):
    return helper.make_tensor_value_info(name, TensorProto.INT64, list(dims))


def save(folder, name, nodes, inputs, outputs, opsets=(("", 15),), check=True):
    graph = helper.make_graph(nodes, name, inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(folder, name + ".onnx"))


def main(folder):
    os.makedirs(folder, exist_ok=True)
    # a = [1], b = [2, 2], c = [3, 3, 3]: each element tells which it is by its length.
    abc = [f32("a", 1), f32("b", 2), f32("c", 3)]
    # Insert c at a fed position into [a, b], erase at another, take the element at a third.
    save(folder, "insert_erase_at", [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s1"]),
        helper.make_node("SequenceInsert", ["s1", "c", "p_insert"], ["s2"]),
        helper.make_node("SequenceErase", ["s2", "p_erase"], ["s3"]),
        helper.make_node("SequenceAt", ["s3", "p_at"], ["y"]),
    ], abc + [i64("p_insert"), i64("p_erase"), i64("p_at")], [f32("y", None)])
    # Constant positions: resolved at import; then the length.
    save(folder, "constant_positions", [
        helper.make_node("Constant", [], ["zero"], value_int=0),
        helper.make_node("Constant", [], ["minus1"], value_int=-1),
        helper.make_node("SequenceEmpty", [], ["e"]),
        helper.make_node("SequenceInsert", ["e", "a"], ["s1"]),
        helper.make_node("SequenceInsert", ["s1", "b", "zero"], ["s2"]),
        helper.make_node("SequenceInsert", ["s2", "c"], ["s3"]),
        helper.make_node("SequenceErase", ["s3", "minus1"], ["s4"]),
        helper.make_node("SequenceAt", ["s4", "zero"], ["y"]),
        helper.make_node("SequenceLength", ["s4"], ["n"]),
    ], abc, [f32("y", None), i64("n")])
    save(folder, "position_out_of_range", [
        helper.make_node("Constant", [], ["five"], value_int=5),
        helper.make_node("SequenceConstruct", ["a", "b"], ["s1"]),
        helper.make_node("SequenceAt", ["s1", "five"], ["y"], name="take"),
    ], abc[:2], [f32("y", None)])
    # A position the graph computes: only known when it runs.
    save(folder, "computed_position", [
        helper.make_node("Constant", [], ["one"], value_int=1),
        helper.make_node("Add", ["p", "one"], ["q"]),
        helper.make_node("SequenceConstruct", ["a", "b"], ["s1"]),
        helper.make_node("SequenceAt", ["s1", "q"], ["y"], name="take"),
    ], abc[:2] + [i64("p")], [f32("y", None)])
    # x f32[2,3]: split along 1 into pieces of 1 squeezed, then stacked on a new last axis
    # (the transpose's layout kept: y == x), and along 0 into a fed split of 2 entries.
    save(folder, "split_concat", [
        helper.make_node("SplitToSequence", ["x"], ["s1"], axis=1, keepdims=0),
        helper.make_node("ConcatFromSequence", ["s1"], ["y"], axis=-1, new_axis=1),
        helper.make_node("SplitToSequence", ["x", "split"], ["s2"], axis=0),
        helper.make_node("ConcatFromSequence", ["s2"], ["z"], axis=1),
        helper.make_node("SequenceLength", ["s1"], ["n"]),
    ], [f32("x", 2, 3), i64("split", 2)], [f32("y", 2, 3), f32("z", 1, 6), i64("n")])
    save(folder, "split_of_unknown_length", [
        helper.make_node("SplitToSequence", ["x"], ["s1"], name="pieces"),
        helper.make_node("SequenceLength", ["s1"], ["n"]),
    ], [f32("x", "N")], [i64("n")])
    save(folder, "split_too_long", [
        helper.make_node("SplitToSequence", ["x"], ["s1"], name="pieces"),
        helper.make_node("SequenceLength", ["s1"], ["n"]),
    ], [f32("x", 5000)], [i64("n")])
    save(folder, "sequence_output", [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s1"]),
    ], abc[:2], [helper.make_tensor_sequence_value_info("s1", TensorProto.FLOAT, None)])
    save(folder, "sequence_into_add", [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s1"]),
        helper.make_node("Add", ["s1", "a"], ["y"], name="plus"),
    ], abc[:2], [f32("y", None)], check=False)
    # Optionals: one made of a, one empty (typed).
    save(folder, "optionals", [
        helper.make_node("Optional", ["a"], ["o1"]),
        helper.make_node("Optional", [], ["o2"],
                         type=helper.make_tensor_type_proto(TensorProto.FLOAT, [1])),
        helper.make_node("OptionalHasElement", ["o1"], ["h1"]),
        helper.make_node("OptionalHasElement", ["o2"], ["h2"]),
        helper.make_node("OptionalGetElement", ["o1"], ["y"]),
    ], abc[:1], [f32("y", 1), helper.make_tensor_value_info("h1", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h2", TensorProto.BOOL, [])])
    # A chain of 40 Identities of an optional, then of a sequence: the importer's table of
    # values grows while each copies the one before.
    chain = [helper.make_node("Optional", ["a"], ["o0"])]
    chain += [helper.make_node("Identity", ["o%d" % i], ["o%d" % (i + 1)]) for i in range(40)]
    chain += [helper.make_node("OptionalGetElement", ["o40"], ["t"]),
              helper.make_node("SequenceConstruct", ["t", "t"], ["s0"])]
    chain += [helper.make_node("Identity", ["s%d" % i], ["s%d" % (i + 1)]) for i in range(40)]
    chain += [helper.make_node("SequenceAt", ["s40", "p"], ["y"])]
    save(folder, "identity_chain", chain, abc[:1] + [i64("p")], [f32("y", 1)])
    # d = (a + b) * a, its gradients by ai.onnx.preview.training's Gradient.
    save(folder, "gradient", [
        helper.make_node("Add", ["a", "b"], ["c"]),
        helper.make_node("Mul", ["c", "a"], ["d"]),
        helper.make_node("Gradient", ["a", "b"], ["da", "db"], domain="ai.onnx.preview.training",
                         xs=["a", "b"], y="d"),
    ], [f32("a", 2), f32("b", 2)], [f32("d", 2), f32("da", 2), f32("db", 2)],
        opsets=(("", 12), ("ai.onnx.preview.training", 1)))


if __name__ == "__main__":
    main(sys.argv[1])
