#!/usr/bin/python3
"""Writes the small ONNX models that onnx_control_test.c imports (If, Loop and Scan, which the
importer lowers into the plain graph).

  /usr/bin/python3 tests/onnx/make_control_models.py tests/onnx/models/control

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


def boolean(name, *dims):
    return helper.make_tensor_value_info(name, TensorProto.BOOL, list(dims))


def save(folder, name, nodes, inputs, outputs, opset=16, check=True):
    graph = helper.make_graph(nodes, name, inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(folder, name + ".onnx"))


def branch(name, nodes, out):
    return helper.make_graph(nodes, name, [], [out])


def loop_body(cond_nodes=None):
    """iter, cond_in, s_in -> cond_out, s_out = 2 * s_in + iter, scan = s_out."""
    return helper.make_graph((cond_nodes or [
        helper.make_node("Identity", ["cond_in"], ["cond_out"])]) + [
        helper.make_node("Constant", [], ["two"], value_float=2.0),
        helper.make_node("Mul", ["s_in", "two"], ["twice"]),
        helper.make_node("Cast", ["iter"], ["iter_f"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["twice", "iter_f"], ["s_out"], name="step"),
        helper.make_node("Identity", ["s_out"], ["scan"]),
    ], "body", [i64("iter"), boolean("cond_in"), f32("s_in", 2)],
        [boolean("cond_out"), f32("s_out", 2), f32("scan", 2)])


def main(folder):
    os.makedirs(folder, exist_ok=True)
    # If on a constant: only the then branch (x + 1, x from the enclosing graph) is imported.
    then_add = branch("then", [
        helper.make_node("Constant", [], ["one"], value_float=1.0),
        helper.make_node("Add", ["x", "one"], ["t"], name="then_add")], f32("t", 3))
    else_concat = branch("else", [
        helper.make_node("Concat", ["x", "x"], ["e"], axis=0, name="else_concat")], f32("e", 6))
    save(folder, "if_constant", [
        helper.make_node("Constant", [], ["c"],
                         value=helper.make_tensor("c", TensorProto.BOOL, [], [1])),
        helper.make_node("If", ["c"], ["y"], name="pick", then_branch=then_add,
                         else_branch=else_concat),
    ], [f32("x", 3)], [f32("y", None)])
    # An op libsession does not have inside a branch is listed before anything is imported.
    save(folder, "if_unknown_body_op", [
        helper.make_node("If", ["c"], ["y"], name="pick", then_branch=branch("then", [
            helper.make_node("NoSuchOp", ["x"], ["t"])], f32("t", 3)), else_branch=else_concat),
    ], [f32("x", 3), boolean("c")], [f32("y", None)], check=False)
    # If on a fed condition: the branches give different shapes ([3] and [6]).
    save(folder, "if_fed", [
        helper.make_node("If", ["c"], ["y"], name="pick", then_branch=then_add,
                         else_branch=else_concat),
    ], [f32("x", 3), boolean("c")], [f32("y", None)])
    # Loop with a constant trip count 3 and no condition.
    save(folder, "loop_constant", [
        helper.make_node("Constant", [], ["m"], value_int=3),
        helper.make_node("Loop", ["m", "", "x"], ["s", "stack"], name="l1", body=loop_body()),
    ], [f32("x", 2)], [f32("s", 2), f32("stack", None, 2)])
    # The same with M and cond fed.
    save(folder, "loop_fed", [
        helper.make_node("Loop", ["m", "c", "x"], ["s", "stack"], name="l1", body=loop_body()),
    ], [f32("x", 2), i64("m"), boolean("c")], [f32("s", 2), f32("stack", None, 2)])
    # M constant (3), cond fed: three iterations or none.
    save(folder, "loop_gated", [
        helper.make_node("Constant", [], ["m"], value_int=3),
        helper.make_node("Loop", ["m", "c", "x"], ["s", "stack"], name="l1", body=loop_body()),
    ], [f32("x", 2), boolean("c")], [f32("s", 2), f32("stack", None, 2)])
    # A condition the body computes (iter < 1): the loop may stop early.
    save(folder, "loop_early_exit", [
        helper.make_node("Constant", [], ["m"], value_int=3),
        helper.make_node("Loop", ["m", "", "x"], ["s", "stack"], name="l1", body=loop_body([
            helper.make_node("Constant", [], ["one_i"], value_int=1),
            helper.make_node("Less", ["iter", "one_i"], ["cond_out"])])),
    ], [f32("x", 2)], [f32("s", 2), f32("stack", None, 2)])
    # 100000 iterations: more than the nodes a loop is unrolled into.
    save(folder, "loop_too_long", [
        helper.make_node("Constant", [], ["m"], value_int=100000),
        helper.make_node("Loop", ["m", "", "x"], ["s", "stack"], name="l1", body=loop_body()),
    ], [f32("x", 2)], [f32("s", 2), f32("stack", None, 2)])
    # Loops nested three deep, 40 iterations each of 10-node bodies: within each loop's bound,
    # 640000 nodes in all.
    body = loop_body()
    for depth in range(3):
        body = helper.make_graph(list(body.node) if depth == 0 else [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Constant", [], ["m_in"], value_int=40),
            helper.make_node("Loop", ["m_in", "", "s_in"], ["s_out", "stack"],
                             name="inner%d" % depth, body=body),
            helper.make_node("Identity", ["s_out"], ["scan"]),
        ], "body", [i64("iter"), boolean("cond_in"), f32("s_in", 2)],
            [boolean("cond_out"), f32("s_out", 2), f32("scan", 2)])
    save(folder, "loop_nested_too_deep", [
        helper.make_node("Constant", [], ["m"], value_int=40),
        helper.make_node("Loop", ["m", "", "x"], ["s", "stack"], name="l1", body=body),
    ], [f32("x", 2)], [f32("s", 2), f32("stack", None, 2)], check=False)  # names reused inside
    # No trip count: runs until the condition turns false.
    save(folder, "loop_without_trip_count", [
        helper.make_node("Loop", ["", "c", "x"], ["s", "stack"], name="l1", body=loop_body()),
    ], [f32("x", 2), boolean("c")], [f32("s", 2), f32("stack", None, 2)])
    # Loop (M = 2) whose body holds an If on iter > 0 (computed: both branches, chosen when the
    # plan compiles); the then branch reads x from the outermost graph and s_in from the body,
    # the else branch gives s_in itself.
    inner_then = branch("inner_then", [
        helper.make_node("Add", ["s_in", "x"], ["sum"], name="inner_add")], f32("sum", 2))
    inner_else = helper.make_graph([], "inner_else", [], [f32("s_in", 2)])
    save(folder, "loop_with_if", [
        helper.make_node("Constant", [], ["m"], value_int=2),
        helper.make_node("Loop", ["m", "", "x"], ["s"], name="outer", body=helper.make_graph([
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Constant", [], ["zero"], value_int=0),
            helper.make_node("Greater", ["iter", "zero"], ["later"]),
            helper.make_node("If", ["later"], ["s_out"], name="inner", then_branch=inner_then,
                             else_branch=inner_else),
        ], "body", [i64("iter"), boolean("cond_in"), f32("s_in", 2)],
            [boolean("cond_out"), f32("s_out", 2)])),
    ], [f32("x", 2)], [f32("s", 2)])
    # A sequence carried through a loop of constant trip count: [0.0, 1.0, 2.0] built by
    # SequenceInsert, then concatenated after the loop.
    save(folder, "loop_sequence", [
        helper.make_node("Constant", [], ["m"], value_int=3),
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
        helper.make_node("Loop", ["m", "", "empty"], ["seq"], name="l1", body=helper.make_graph([
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Cast", ["iter"], ["iter_f"], to=TensorProto.FLOAT),
            helper.make_node("Constant", [], ["axes"], value_ints=[0]),
            helper.make_node("Unsqueeze", ["iter_f", "axes"], ["item"]),
            helper.make_node("SequenceInsert", ["seq_in", "item"], ["seq_out"]),
        ], "body", [i64("iter"), boolean("cond_in"),
                    helper.make_tensor_sequence_value_info("seq_in", TensorProto.FLOAT, None)],
            [boolean("cond_out"),
             helper.make_tensor_sequence_value_info("seq_out", TensorProto.FLOAT, None)])),
        helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0),
    ], [], [f32("y", 3)])
    # Scan (op set 16): a running sum over the columns of x f32[2,3] taken last to first
    # (scan_input_axes 1, scan_input_directions 1), stacked as columns (scan_output_axes 1).
    sum_body = helper.make_graph([
        helper.make_node("Add", ["sum_in", "next"], ["sum_out"]),
        helper.make_node("Identity", ["sum_out"], ["scan_out"]),
    ], "scan_body", [f32("sum_in", 2), f32("next", 2)], [f32("sum_out", 2), f32("scan_out", 2)])
    save(folder, "scan_axes", [
        helper.make_node("Scan", ["init", "x"], ["total", "partial"], name="sc", body=sum_body,
                         num_scan_inputs=1, scan_input_axes=[1], scan_input_directions=[1],
                         scan_output_axes=[1]),
    ], [f32("init", 2), f32("x", 2, 3)], [f32("total", 2), f32("partial", 2, 3)])
    # The scan's length is not known at import.
    save(folder, "scan_unknown_length", [
        helper.make_node("Scan", ["init", "x"], ["total", "partial"], name="sc", body=sum_body,
                         num_scan_inputs=1),
    ], [f32("init", 2), f32("x", "N", 2)], [f32("total", 2), f32("partial", "N", 2)])
    # Scan of op set 8: a batch of 2 (axis 0), sequences of 2 (axis 1), reversed.
    save(folder, "scan8_batch", [
        helper.make_node("Scan", ["", "init", "x"], ["total", "partial"], name="sc",
                         body=sum_body, num_scan_inputs=1, directions=[1]),
    ], [f32("init", 2, 2), f32("x", 2, 2, 2)], [f32("total", 2, 2), f32("partial", 2, 2, 2)],
        opset=8)


if __name__ == "__main__":
    main(sys.argv[1])
