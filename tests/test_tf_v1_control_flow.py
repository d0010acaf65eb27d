"""TensorFlow's control flow v1 (TF 1.x's default) read as our functional ops
(``framework/v1_control_flow.py``): ``Switch``/``Merge`` conds become ``If`` ops, ``Enter``/
``Merge``/``Switch``/``LoopCond``/``NextIteration``/``Exit`` loops ``While`` ops.

The graphs are TensorFlow 2.21's with control flow v1 (tests/data/make_cf_v1_golden.py), and
the values TensorFlow computed from them are in tests/data/cf_v1_golden.json. Loop gradients
(TF 1.x's stacks) are not converted: refused naming the op.
"""
import json
import os

import numpy as np
import pytest
from google.protobuf import text_format
from tensorboard.compat.proto import graph_pb2, meta_graph_pb2

import tfjupyter as tf
from tfjupyter.framework.graph_io import rebuild_graph

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
V1_OPS = {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"}
X = [1.0, -2.0, 4.0]



@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _golden(kind):
    with open(os.path.join(DATA, "cf_v1_golden.json")) as f:
        return json.load(f)[kind]


def _op_types(graph=None):
    return {op.type for op in (graph or tf.get_default_graph()).get_operations()}


def _check_values(sess, golden):
    for feeds, want in zip(golden["feeds"], golden["values"]):
        got = sess.run(golden["fetches"], feeds)
        for name, g, w in zip(golden["fetches"], got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=f"{name} fed {feeds}")


def test_conds_run_to_tensorflows_values():
    # A cond on a fed predicate, a nested cond, a cond of constants only, and a dropout cond
    # (tf.layers.dropout's tf.cond(is_training, ...)) between two dense layers.
    golden = _golden("conds")
    tf.train.import_meta_graph(os.path.join(DATA, "cf_v1_conds.meta"))
    g = tf.get_default_graph()
    assert "If" in _op_types() and not _op_types() & V1_OPS
    # Each Merge is still there by name (an Identity of the If): what names it finds it.
    assert g.get_operation_by_name("basic/Merge").inputs[0].op.type == "If"
    assert g.get_tensor_by_name("consts/Merge:0").shape == [3]
    assert g.get_tensor_by_name("drop/cond/Merge:0").shape == [1, 4]
    # TF 1.x's collection of CondContextDefs describes the Switches that are gone.
    assert g.get_collection("cond_context") == []
    with tf.Session() as sess:
        sess.run("init")
        _check_values(sess, golden)


def test_nested_cond_is_an_if_in_the_outer_ifs_branch():
    tf.train.import_meta_graph(os.path.join(DATA, "cf_v1_conds.meta"))
    outer = tf.get_default_graph().get_operation_by_name("outer/Merge").inputs[0].op
    then_ops = {op.name: op.type for op in outer.get_attr("then_branch").graph.get_operations()}
    else_ops = {op.name: op.type for op in outer.get_attr("else_branch").graph.get_operations()}
    assert then_ops["outer/inner/If"] == "If" and "outer/inner/mul" not in then_ops
    assert else_ops["outer/Neg"] == "Neg" and "If" not in else_ops.values()
    # TensorFlow's names inside the branches: the inner branch holds inner/mul.
    inner = outer.get_attr("then_branch").graph.get_operation_by_name("outer/inner/If")
    assert "outer/inner/mul" in {op.name for op in
                                 inner.get_attr("then_branch").graph.get_operations()}


def test_dropout_cond_in_training_drops_or_scales_each_unit():
    tf.train.import_meta_graph(os.path.join(DATA, "cf_v1_conds.meta"))
    with tf.Session() as sess:
        sess.run("init")
        kept = sess.run("dropped:0", {"x:0": X})
        np.testing.assert_allclose(kept, [[1.0, 1.3, 1.6, 1.9]], rtol=1e-6)   # relu(x W + b)
        for _ in range(3):
            dropped = sess.run("dropped:0", {"x:0": X, "is_training:0": True})
            # rate 0.5: each unit is 0 or twice its value
            assert np.all(np.isclose(dropped, 0) | np.isclose(dropped, 2 * kept))


def test_tf1_gradients_of_conds_and_a_training_step_run_to_tensorflows_values():
    # TF 1.x writes a cond's gradient as another Switch/Merge frame on the same predicate,
    # reading the forward branches' values: it becomes a second If, and the first If also
    # returns what the second reads.
    golden = _golden("train")
    tf.train.import_meta_graph(os.path.join(DATA, "cf_v1_train.meta"))
    assert not _op_types() & V1_OPS
    with tf.Session() as sess:
        sess.run("init")
        _check_values(sess, golden)
        feeds = {"x:0": X, "is_training:0": True}
        for _ in range(3):
            # The gradient of the dropped units is the forward pass's own mask, times 2.
            dropped, grad = sess.run(["dropped:0", "grad_dropped:0"], feeds)
            np.testing.assert_array_equal(grad != 0, dropped != 0)
            assert set(np.unique(grad)) <= {0.0, 2.0}
        kernel = sess.run("dense2/kernel:0")
        sess.run("train_op", {"x:0": X})
        grad = golden["values"][0][1]                                # is_training False
        np.testing.assert_allclose(sess.run("dense2/kernel:0"), kernel - 0.1 * np.array(grad),
                                   rtol=1e-5)


def test_gradient_flows_through_a_converted_cond():
    tf.train.import_meta_graph(os.path.join(DATA, "cf_v1_conds.meta"))
    g = tf.get_default_graph()
    x, y = g.get_tensor_by_name("x:0"), g.get_tensor_by_name("basic_y:0")
    (dx,) = tf.gradients(tf.reduce_sum(y * y), [x])
    with tf.Session() as sess:
        # d/dx sum((2x + 1)^2) = 4 (2x + 1); d/dx sum((x - 3)^2) = 2 (x - 3)
        np.testing.assert_allclose(sess.run(dx, {"x:0": X, "p:0": True}), [12.0, -12.0, 36.0])
        np.testing.assert_allclose(sess.run(dx, {"x:0": X, "p:0": False}), [-4.0, -10.0, 2.0])


def test_while_loops_run_to_tensorflows_values():
    # A loop capturing a tensor, a loop in a loop's body, a loop in a cond's branch.
    golden = _golden("loop")
    tf.train.import_meta_graph(os.path.join(DATA, "cf_v1_loop.meta"))
    assert _op_types() == {"Placeholder", "Const", "Identity", "While", "If"}
    g = tf.get_default_graph()
    outer = g.get_operation_by_name("outer/While")
    assert "While" in {op.type for op in outer.get_attr("body").graph.get_operations()}
    in_branch = g.get_operation_by_name("c/Merge").inputs[0].op.get_attr("then_branch")
    assert "While" in {op.type for op in in_branch.graph.get_operations()}
    loop = g.get_operation_by_name("loop/While")
    # i and a are loop variables; n and b (is_constant Enters) pass through the body.
    assert [t.op.name for t in loop.inputs] == ["loop/Const", "x", "n", "b"]
    assert "loop/Less" in {op.name for op in loop.get_attr("cond").graph.get_operations()}
    with tf.Session() as sess:
        _check_values(sess, golden)


def test_graph_def_imports_under_a_prefix_and_rebuilds():
    meta = meta_graph_pb2.MetaGraphDef()
    with open(os.path.join(DATA, "cf_v1_loop.meta"), "rb") as f:
        meta.ParseFromString(f.read())
    y, i = tf.import_graph_def(meta.graph_def, name="imp",
                               return_elements=["loop_y:0", "loop_i:0"])
    with tf.Session() as sess:
        got_y, got_i = sess.run([y, i], {"imp/x:0": X, "imp/n:0": 3})
    np.testing.assert_allclose(got_y, [11.5, -14.25, 39.0])             # TensorFlow's
    assert got_i == 3
    g = rebuild_graph(meta.graph_def)
    assert not _op_types(g) & V1_OPS
    with tf.Session(graph=g) as sess:
        np.testing.assert_allclose(sess.run("loop_y:0", {"x:0": X, "n:0": 0}), X)


def test_saved_model_of_tf1_builder_with_a_cond_loads_and_runs():
    golden = _golden("saved_model")
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], os.path.join(DATA,
                                                                        "cf_v1_saved_model"))
        signature = meta.signature_def["serving_default"]
        assert signature.outputs["y"].name == "c/Merge:0"
        assert "If" in _op_types(sess.graph)
        for feeds, want in zip(golden["feeds"], golden["values"]):
            got = sess.run(signature.outputs["y"].name,
                           {signature.inputs[k].name: v for k, v in feeds.items()})
            np.testing.assert_allclose(got, want, rtol=1e-6)


# == frames not converted: refused naming the op ==================================================
def _graph_def(text):
    return text_format.Parse(text, graph_pb2.GraphDef())


PREDICATE_AND_X = """
node { name: "p" op: "Placeholder" attr { key: "dtype" value { type: DT_BOOL } } }
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "s" op: "Switch" input: "x" input: "p" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "t" op: "Identity" input: "s:1" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "f" op: "Identity" input: "s" attr { key: "T" value { type: DT_FLOAT } } }
"""


def test_a_merges_value_index_is_refused_naming_the_reader():
    graph_def = _graph_def(PREDICATE_AND_X + """
node { name: "m" op: "Merge" input: "f" input: "t"
       attr { key: "T" value { type: DT_FLOAT } } attr { key: "N" value { i: 2 } } }
node { name: "which" op: "Identity" input: "m:1" attr { key: "T" value { type: DT_INT32 } } }
""")
    with pytest.raises(ValueError, match=r"Node 'which' \(Identity\): TensorFlow's control flow "
                                         r"v1 cond cannot be converted to an If: it reads "
                                         r"'m:1', the Merge's value_index; .*"
                                         r"enable_control_flow_v2"):
        tf.import_graph_def(graph_def)
    assert tf.get_default_graph().get_operations() == []


def test_a_loops_gradient_is_refused_naming_its_stack():
    # TF 1.x's loop gradients keep forward values on stacks, resources passed into the loop.
    with pytest.raises(ValueError, match=r"Node 'gradients/.*/Enter' \(Enter\): TensorFlow's "
                                         r"control flow v1 while loop cannot be converted to a "
                                         r"While: it passes a resource into the loop"):
        tf.train.import_meta_graph(os.path.join(DATA, "cf_v1_loop_gradient.meta"))
    assert tf.get_default_graph().get_operations() == []


def test_an_op_reading_both_branches_is_refused_naming_it():
    graph_def = _graph_def(PREDICATE_AND_X + """
node { name: "both" op: "AddV2" input: "t" input: "f" attr { key: "T" value { type: DT_FLOAT } } }
""")
    with pytest.raises(ValueError, match=r"Node 'both' \(AddV2\): .*cond cannot be converted.*"
                                         r"inputs come from different branches"):
        tf.import_graph_def(graph_def)
