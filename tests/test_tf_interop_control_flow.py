"""Control flow and training graphs between tfjupyter and TensorFlow.

- Meta graphs TensorFlow 2.21 wrote (tests/data/make_cf_golden.py): control flow v2
  (``StatelessIf``/``If``/``StatelessWhile`` with their FunctionDefs) loads and runs here to
  TensorFlow's values; so does control flow v1 (``Switch``/``Merge``, read as If/While), and a
  v1 frame not converted is refused with a clear error.
- What tfjupyter writes for TensorFlow (meta graphs, SavedModels) is in TensorFlow's layout
  (``framework/tf_layout.py``, ``framework/function_io.py``) and reads back here. The values
  pasted below are TensorFlow 2.21's, running files written here
  (``tf.compat.v1.train.import_meta_graph``).
- Our older FunctionDef layout (tests/data/cf_old_tfjupyter_layout.pbtxt, written by the
  writer before TensorFlow's layout) still reads.
"""
import json
import logging
import os
import re
import runpy
import types

import numpy as np
import pytest
from google.protobuf import text_format
from tensorboard.compat.proto import graph_pb2

import tfjupyter as tf
from tfjupyter.framework.graph_io import rebuild_graph

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

# TensorFlow's OpDefs (2.21): the attrs of If and While, and the output argument names of the
# ops used in the functions below.
TF_IF_ATTRS = {"Tcond", "Tin", "Tout", "then_branch", "else_branch", "output_shapes"}
TF_WHILE_ATTRS = {"T", "cond", "body", "output_shapes", "parallel_iterations"}
TF_OUTPUT_ARGS = {"Mul": "z", "AddV2": "z", "Less": "z", "LogicalAnd": "z", "Sub": "z",
                  "Const": "output", "Identity": "output"}


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _golden(version):
    with open(os.path.join(DATA, "cf_golden.json")) as f:
        return json.load(f)[version]


# == TensorFlow's files, read here ================================================================
def _import_and_run_golden(version):
    """Imports cf_golden_<version>.meta, runs it to TensorFlow's values; its op types."""
    golden = _golden(version)
    tf.train.import_meta_graph(os.path.join(DATA, f"cf_golden_{version}.meta"))
    with tf.Session() as sess:
        for feeds, want in zip(golden["feeds"], golden["values"]):
            got = sess.run(golden["fetches"], feeds)
            for name, g, w in zip(golden["fetches"], got, want):
                np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=name)
    return {op.type for op in tf.get_default_graph().get_operations()}


def test_tensorflow_control_flow_v2_meta_graph_runs_to_tensorflows_values():
    types = _import_and_run_golden("v2")
    assert {"If", "While"} <= types           # StatelessIf/StatelessWhile read as ours


def test_tensorflow_control_flow_v1_meta_graph_runs_to_tensorflows_values():
    # The same model with control flow v1: its conds read as If ops, its loops (one holding a
    # cond) as While ops (framework/v1_control_flow.py; more in test_tf_v1_control_flow.py).
    types = _import_and_run_golden("v1")
    assert {"If", "While"} <= types and not types & {"Switch", "Merge", "Enter", "Exit"}


def test_tensorflow_control_flow_v1_not_converted_is_refused_naming_the_op_and_what_to_do():
    # A RefSwitch (a cond writing a TF 1.x ref variable) is not converted: its frame's Merge is
    # refused, and the graph is not imported.
    meta = tf.train.export_meta_graph()
    graph_def = text_format.Parse("""
node { name: "p" op: "Placeholder" attr { key: "dtype" value { type: DT_BOOL } } }
node { name: "v" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { } } } }
node { name: "s" op: "RefSwitch" input: "v" input: "p"
       attr { key: "T" value { type: DT_FLOAT_REF } } }
node { name: "m" op: "Merge" input: "s" input: "s:1"
       attr { key: "T" value { type: DT_FLOAT } } attr { key: "N" value { i: 2 } } }
""", graph_pb2.GraphDef())
    meta.graph_def.CopyFrom(graph_def)
    with pytest.raises(ValueError, match=r"Node 'm' \(Merge\): TensorFlow's control flow v1 "
                                         r"cond cannot be converted to an If: .*"
                                         r"enable_control_flow_v2"):
        tf.train.import_meta_graph(meta)
    assert tf.get_default_graph().get_operations() == []


def test_our_older_function_layout_still_reads():
    with open(os.path.join(DATA, "cf_old_tfjupyter_layout.pbtxt")) as f:
        graph_def = text_format.Parse(f.read(), graph_pb2.GraphDef())
    assert "_inputs" in graph_def.library.function[0].attr
    g = rebuild_graph(graph_def)
    with tf.Session(graph=g) as sess:
        y, z = sess.run(["y:0", "z:0"], {"x:0": [1.0, 2.0]})
        np.testing.assert_allclose(y, [2.0, 4.0])
        np.testing.assert_allclose(z, [1.0, 16.0])          # x * x**3
        np.testing.assert_allclose(sess.run("y:0", {"x:0": [-1.0, -2.0]}), [-2.0, -3.0])


# == what tfjupyter writes ========================================================================
# tests/data/check_tf_interop.py: the models TensorFlow ran from files written here.
interop = types.SimpleNamespace(**runpy.run_path(os.path.join(DATA, "check_tf_interop.py")))
X = interop.X
# TensorFlow 2.21's values running the files written here (check_tf_interop.py run).
TF_CONTROL_FLOW = {"y:0": [1.0, -4.0, 12.0], "z:0": [15.0, -2.0, 53.0], "z2:0": [5.0, 2.0, 8.0],
                   "nested:0": [1.0, -8.0, 64.0], "inc:0": [2.0, 3.0], "v:0": [2.0, 3.0]}
TF_TRAINED = {
    "loss:0": 0.1656981110572815,
    "mapped:0": [[1.0055488348007202, 1.014802098274231], [1.2255637645721436, 1.4168777465820312]],
    "emb:0": [[0.0, 0.125], [-0.031204640865325928, 0.08849167823791504], [0.5, 0.625],
              [0.45597609877586365, 0.5800867080688477]],
    "b:0": [-0.18857041001319885, -0.4907248020172119],
}


def _check_function_def(fdef, library_names):
    args = {a.name for a in fdef.signature.input_arg}
    nodes = {n.name: n for n in fdef.node_def}
    assert not args & set(nodes)
    for n in fdef.node_def:
        assert n.op != "Placeholder", fdef.signature.name
        for text in n.input:
            if text.startswith("^"):
                assert text[1:] in nodes
            elif ":" not in text:
                assert text in args, (fdef.signature.name, text)
            else:
                src, arg, index = text.split(":")
                assert src in nodes and index.isdigit(), (fdef.signature.name, text)
                if nodes[src].op in TF_OUTPUT_ARGS:
                    assert arg == TF_OUTPUT_ARGS[nodes[src].op], (fdef.signature.name, text)
    assert set(fdef.ret) == {a.name for a in fdef.signature.output_arg}
    for out in fdef.signature.output_arg:
        ref = fdef.ret[out.name]
        assert ref in args or re.fullmatch(r"[^:]+:[a-z_0-9]+:\d+", ref), ref
        assert ref in args or ref.split(":")[0] in nodes
    for f in (n.attr[k].func.name for n in fdef.node_def for k in n.attr
              if n.attr[k].WhichOneof("value") == "func"):
        assert f in library_names


def test_written_if_and_while_follow_tensorflows_layout(tmp_path):
    interop.build_control_flow_model(tf)
    meta = tf.train.export_meta_graph(str(tmp_path / "m.meta"))
    graph_def = meta.graph_def
    library = {f.signature.name: f for f in graph_def.library.function}
    nodes = {n.name: n for n in graph_def.node}
    if_node = nodes["c"]
    assert if_node.op == "If"
    assert {k for k in if_node.attr if not k.startswith("_")} == TF_IF_ATTRS
    data_inputs = [x for x in if_node.input if not x.startswith("^")]
    assert len(if_node.attr["Tin"].list.type) == len(data_inputs) - 1
    for key in ("then_branch", "else_branch"):
        fdef = library[if_node.attr[key].func.name]
        assert len(fdef.signature.input_arg) == len(data_inputs) - 1
        assert len(fdef.signature.output_arg) == len(if_node.attr["Tout"].list.type)
    for name in ("loop", "loop2"):
        node = nodes[name]
        assert node.op == "While"
        assert {k for k in node.attr if not k.startswith("_")} == TF_WHILE_ATTRS
        inputs = [x for x in node.input if not x.startswith("^")]
        assert len(node.attr["T"].list.type) == len(inputs) == len(
            node.attr["output_shapes"].list.shape)
        assert inputs[:2] == ["Const", "x"]     # the loop variables keep outputs 0, 1
        cond, body = (library[node.attr[k].func.name] for k in ("cond", "body"))
        # TensorFlow's While: the body returns every argument, the cond takes them all.
        assert len(body.signature.input_arg) == len(body.signature.output_arg) == len(inputs)
        assert len(cond.signature.input_arg) == len(inputs)
        assert [a.type for a in body.signature.input_arg] == list(node.attr["T"].list.type)
    # A captured tensor is a loop variable; maximum_iterations two, the limit and a counter
    # the cond compares.
    assert list(nodes["loop"].input) == ["Const", "x", "w/read"]
    assert list(nodes["loop2"].input) == ["Const", "x", "loop2/maximum_iterations",
                                          "loop2/tf_loop_counter"]
    for fdef in library.values():
        _check_function_def(fdef, set(library))


def test_written_control_flow_reads_back_and_runs_as_in_tensorflow(tmp_path):
    interop.build_control_flow_model(tf)
    path = str(tmp_path / "m.meta")
    meta = tf.train.export_meta_graph(path)
    # The cond writing v takes it as a control input: TensorFlow's functions take no refs.
    writes_v = [n for n in meta.graph_def.node if n.op == "If" and "^v" in n.input]
    assert len(writes_v) == 1 and "v" not in writes_v[0].input
    with tf.Graph().as_default():
        tf.train.import_meta_graph(path, import_scope="imp")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = dict(zip(interop.CONTROL_FLOW_FETCHES, sess.run(
                ["imp/" + name for name in interop.CONTROL_FLOW_FETCHES[:-1]],
                {"imp/x:0": X})))
            got["v:0"] = sess.run("imp/v:0")
            sess.run("imp/inc:0", {"imp/x:0": [-1.0, 0.0, 0.0]})   # the branch not writing v
            np.testing.assert_allclose(sess.run("imp/v:0"), [2.0, 3.0])
    for name, want in TF_CONTROL_FLOW.items():
        np.testing.assert_allclose(got[name], want, err_msg=name)


def test_write_graph_of_a_graph_writes_its_functions(tmp_path, caplog):
    x = tf.placeholder(tf.float32, [3], name="x")
    tf.identity(tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0), name="y")
    path = tf.train.write_graph(tf.get_default_graph(), str(tmp_path / "new"), "g.pbtxt")
    assert path == str(tmp_path / "new" / "g.pbtxt")
    with open(path) as f:
        graph_def = text_format.Parse(f.read(), graph_pb2.GraphDef())
    assert {f.signature.name for f in graph_def.library.function} == {"cond_true", "cond_false"}
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:     # TensorFlow 2.21 importing the file gives the same
            np.testing.assert_allclose(sess.run("y:0", {"x:0": X}), [2.0, -4.0, 8.0])
            np.testing.assert_allclose(sess.run("y:0", {"x:0": [-1.0, -2.0, 0.0]}),
                                       [-2.0, -3.0, -1.0])
    # Graph.as_graph_def() is TensorBoard's form, without functions: said, not silent.
    with caplog.at_level(logging.WARNING, logger="tfjupyter"):
        tf.io.write_graph(tf.get_default_graph().as_graph_def(), str(tmp_path), "tb.pbtxt")
    assert "If 'cond' has no function 'then_branch'" in caplog.text


# == training graphs: ops only tfjupyter has, lowered =============================================
def test_training_graph_is_written_with_tensorflows_ops_and_trains_the_same(tmp_path):
    interop.build_training_model(tf)
    ours = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"SumToShape", "SparseApplyAdam"} <= ours
    path = str(tmp_path / "train.meta")
    meta = tf.train.export_meta_graph(path)
    written = {n.op for n in meta.graph_def.node}
    written |= {n.op for f in meta.graph_def.library.function for n in f.node_def}
    assert not written & {"SumToShape", "SparseApplyAdam", "SetRow"}
    assert {"BroadcastGradientArgs", "ScatterAdd", "AssignSub", "TensorScatterUpdate"} <= written
    with tf.Graph().as_default():
        tf.train.import_meta_graph(path)
        with tf.Session() as sess:
            got = interop.run_training(tf, sess)
    for (name, want), g in zip(TF_TRAINED.items(), got):
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7, err_msg=name)


def test_uninitialized_variables_report_is_written_with_tensorflows_ops(tmp_path):
    interop.build_report_model(tf)
    path = str(tmp_path / "report.meta")
    meta = tf.train.export_meta_graph(path)
    written = {n.op for n in meta.graph_def.node}
    assert not written & {"ReportUninitialized", "AssertNoneUninitialized"}
    with tf.Graph().as_default():
        tf.train.import_meta_graph(path)
        with tf.Session() as sess:
            got = interop.run_report(tf, sess)
    # TensorFlow 2.21 on the same file (check_tf_interop.py run).
    assert [list(x) if isinstance(x, np.ndarray) else x for x in got] == [
        [b"a", b"b"], [], "InvalidArgumentError", [b"b"], [], 1]


def test_case_checks_are_written_as_an_assert(tmp_path):
    interop.build_case_model(tf)
    path = str(tmp_path / "case.meta")
    meta = tf.train.export_meta_graph(path)
    assert "CaseCheck" not in {n.op for n in meta.graph_def.node}
    with tf.Graph().as_default():
        tf.train.import_meta_graph(path)
        with tf.Session() as sess:
            got = interop.run_case(tf, sess)
    # TensorFlow 2.21 on the same file (check_tf_interop.py run).
    assert got == [1, "InvalidArgumentError", 3, "InvalidArgumentError"]


def test_a_while_loops_gradient_is_written_with_a_warning(tmp_path, caplog):
    x = tf.placeholder(tf.float32, [2], name="x")
    _, y = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x), [0, x], name="loop")
    tf.identity(tf.gradients(tf.reduce_sum(y), x)[0], name="g")
    path = str(tmp_path / "m.meta")
    with caplog.at_level(logging.WARNING, logger="tfjupyter"):
        meta = tf.train.export_meta_graph(path)
    text = caplog.text
    assert "'gradients/loop_grad/WhileGrad' (WhileGrad" in text
    assert "TensorFlow cannot import or run" in text
    assert "While loop 'loop' is written in tfjupyter's form" in text
    assert "WhileGrad" in {n.op for n in meta.graph_def.node}
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tfjupyter"):
        tf.train.export_meta_graph(path)           # as a Saver does at every checkpoint
    assert "WhileGrad" not in caplog.text
    with tf.Graph().as_default():                 # still ours to run
        tf.train.import_meta_graph(path)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run("g:0", {"x:0": [1.0, 2.0]}), [4.0, 32.0])


# == the TensorFlow ops added for these graphs ====================================================
@pytest.mark.parametrize("s0,s1,r0,r1", [     # TensorFlow 2.21's tf.raw_ops.BroadcastGradientArgs
    ([1], [1], [], []), ([2, 3], [3], [], [0]), ([2, 1], [2, 3], [1], []),
    ([1, 3], [2, 1], [0], [1]), ([], [2, 3], [0, 1], []), ([2, 3], [2, 3], [], []),
    ([1, 1], [1], [0, 1], [0, 1]), ([3, 1, 1], [1, 1], [1, 2], [0, 1, 2])])
def test_broadcast_gradient_args(s0, s1, r0, r1):
    a = tf.placeholder(tf.int32, [None])
    b = tf.placeholder(tf.int32, [None])
    op = tf.get_default_graph().create_op("BroadcastGradientArgs", [a, b], {})
    with tf.Session() as sess:
        got = sess.run(op.outputs, {a: s0, b: s1})
    assert [g.tolist() for g in got] == [r0, r1]
    assert got[0].dtype == np.int32


def test_broadcast_gradient_args_refuses_incompatible_shapes():
    op = tf.get_default_graph().create_op(
        "BroadcastGradientArgs", [tf.constant([2]), tf.constant([3])], {}, name="bga")
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=r"bga.*Incompatible shapes: \[2\] vs. \[3\]"):
        sess.run(op.outputs)


def test_tensor_scatter_update_and_its_gradient():
    # tf.tensor_scatter_nd_update's documented result: rows 0 and 2 replaced.
    tensor = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    updates = tf.constant([[9.0, 9.0], [7.0, 7.0]])
    out = tf.get_default_graph().create_op(
        "TensorScatterUpdate", [tensor, tf.constant([[0], [2]]), updates], {}).outputs[0]
    d_tensor, d_updates = tf.gradients(tf.reduce_sum(out * [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                                       [tensor, updates])
    with tf.Session() as sess:
        got = sess.run([out, d_tensor, d_updates])
    np.testing.assert_array_equal(got[0], [[9, 9], [3, 4], [7, 7]])
    np.testing.assert_array_equal(got[1], [[0, 0], [3, 4], [0, 0]])
    np.testing.assert_array_equal(got[2], [[1, 2], [5, 6]])
