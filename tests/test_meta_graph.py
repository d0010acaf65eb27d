"""tf.train.export_meta_graph / import_meta_graph: MetaGraphDefs (graph, collections, SaverDef)
written here and by real TensorFlow (tests/data, made by tests/data/make_meta_graph_golden.py),
reloaded without the Python code that built the model."""
import json
import logging
import os

import numpy as np
import pytest
from tensorboard.compat.proto import meta_graph_pb2, saver_pb2, variable_pb2

import tfjupyter as tf
from tfjupyter.framework import meta_graph
from tfjupyter.train.queue_runner import QueueRunnerDef

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32)
TARGET = np.array([[1.0], [-2.0]], np.float32)


def _build_model():
    """y = x @ W + b with a squared loss, a train op and the standard collections filled."""
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    target = tf.placeholder(tf.float32, [None, 1], name="target")
    w = tf.Variable(np.array([[0.1], [-0.2], [0.3]], np.float32), name="W")
    b = tf.Variable(np.array([0.5], np.float32), name="b")
    y = tf.add(tf.matmul(x, w), b, name="y")
    loss = tf.reduce_mean(tf.square(y - target), name="loss")
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=step)
    assert tf.get_collection(tf.GraphKeys.TRAIN_OP) == [train_op]    # minimize adds it, as TF
    tf.add_to_collection(tf.GraphKeys.LOSSES, loss)
    return x, target, w, b, y, loss, train_op


def _train_and_save(tmp_path, steps=3):
    """Trains a few steps, saves; returns the checkpoint prefix and y(X) at the save."""
    with tf.Graph().as_default():
        x, target, _, _, y, _, train_op = _build_model()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                sess.run(train_op, {x: X, target: TARGET})
            prefix = saver.save(sess, str(tmp_path / "model"), global_step=steps)
            return prefix, sess.run(y, {x: X})


# -- round trips -----------------------------------------------------------------------------------
def test_import_restore_computes_the_saved_outputs_without_model_code(tmp_path):
    prefix, expected = _train_and_save(tmp_path)
    with tf.Graph().as_default() as graph:
        saver = tf.train.import_meta_graph(prefix + ".meta")
        assert isinstance(saver, tf.train.Saver)
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            y = graph.get_tensor_by_name("y:0")
            np.testing.assert_array_equal(sess.run(y, {"x:0": X}), expected)
            assert sess.run("global_step:0") == 3


def test_collections_round_trip(tmp_path, caplog):
    with tf.Graph().as_default() as graph:
        _, _, w, b, y, loss, train_op = _build_model()
        tf.Variable(0, trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES],
                            name="local_counter")
        tf.add_to_collection(tf.GraphKeys.MODEL_VARIABLES, w)
        tf.add_to_collection("sizes", 3)
        tf.add_to_collection("sizes", 4)
        tf.add_to_collection("rates", 0.25)
        tf.add_to_collection("labels", "cat")
        tf.add_to_collection("labels", b"dog")
        tf.add_to_collection("outputs", y)
        tf.add_to_collection("python_objects", object())
        tf.add_to_collection(tf.GraphKeys.SAVERS, tf.train.Saver())
        with caplog.at_level(logging.WARNING, logger="tfjupyter"):
            meta = tf.train.export_meta_graph()
        assert "python_objects" in caplog.text and "python_objects" not in meta.collection_def
        assert meta.collection_def["outputs"].node_list.value == ["y:0"]
        assert meta.collection_def["train_op"].node_list.value == [train_op.name]
        var_def = variable_pb2.VariableDef.FromString(
            meta.collection_def["variables"].bytes_list.value[0])
        assert (var_def.variable_name, var_def.initializer_name, var_def.snapshot_name,
                var_def.initial_value_name, var_def.trainable, var_def.is_resource) == (
            "W:0", "W/Assign", "W/read:0", "W/initial_value:0", True, False)
        before = _collections_by_name(graph)
    with tf.Graph().as_default() as graph:
        tf.train.import_meta_graph(meta)
        after = _collections_by_name(graph)
        del before["python_objects"]
        before["labels"] = [b"cat", b"dog"]           # a bytes_list comes back as bytes, as in TF
        assert after == before
        assert graph.get_collection("sizes") == [3, 4]
        assert graph.get_collection("rates") == [0.25]
        # One Variable per variable, whichever collections hold it.
        assert tf.global_variables()[0] is tf.trainable_variables()[0] is tf.model_variables()[0]
        assert [v.name for v in tf.local_variables()] == ["local_counter:0"]
        assert not tf.local_variables()[0].trainable
        assert tf.train.get_global_step().name == "global_step:0"
        assert tf.get_collection("train_op")[0] is graph.get_operation_by_name(train_op.name)
        assert tf.get_collection(tf.GraphKeys.LOSSES)[0] is graph.get_tensor_by_name(loss.name)
        restored_saver = tf.get_collection(tf.GraphKeys.SAVERS)[0]
        assert isinstance(restored_saver, tf.train.Saver)
        assert restored_saver.saver_def.restore_op_name == "save/restore_all"


def _collections_by_name(graph):
    """Each collection's items, graph elements and Variables as their names, Savers as their
    restore op's name."""
    def describe(item):
        if isinstance(item, tf.train.Saver):
            return item.saver_def.restore_op_name
        return getattr(item, "name", item)
    return {key: [describe(x) for x in graph.get_collection(key)]
            for key in graph.get_all_collection_keys()}


def test_restored_train_op_trains(tmp_path):
    prefix, _ = _train_and_save(tmp_path)
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(prefix + ".meta")
        train_op = tf.get_collection("train_op")[0]
        loss = tf.get_collection(tf.GraphKeys.LOSSES)[0]
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            feed = {"x:0": X, "target:0": TARGET}
            losses = [sess.run(loss, feed)]
            for _ in range(5):
                sess.run(train_op, feed)
                losses.append(sess.run(loss, feed))
            assert all(a > b for a, b in zip(losses, losses[1:])), losses
            assert sess.run(tf.train.get_global_step()) == 3 + 5


def test_global_variables_initializer_after_import(tmp_path):
    with tf.Graph().as_default():
        _build_model()
        meta = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        tf.train.import_meta_graph(meta)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run("y:0", {"x:0": X}),
                                       X @ np.array([[0.1], [-0.2], [0.3]], np.float32) + 0.5,
                                       rtol=1e-6)


def test_import_scope_prefixes_names_and_each_copy_restores(tmp_path):
    prefix, expected = _train_and_save(tmp_path)
    with tf.Graph().as_default() as graph:
        saver_a = tf.train.import_meta_graph(prefix + ".meta", import_scope="a")
        saver_b = tf.train.import_meta_graph(prefix + ".meta", import_scope="b")
        assert saver_a.saver_def.restore_op_name == "a/save/restore_all"
        assert saver_a.saver_def.filename_tensor_name == "a/save/Const:0"
        assert sorted(v.name for v in tf.trainable_variables()) == ["a/W:0", "a/b:0",
                                                                    "b/W:0", "b/b:0"]
        assert [v.name for v in tf.global_variables(scope="b")] == ["b/W:0", "b/b:0",
                                                                     "b/global_step:0"]
        with tf.Session() as sess:
            saver_a.restore(sess, prefix)
            saver_b.restore(sess, prefix)
            for scope in "ab":
                y = graph.get_tensor_by_name(f"{scope}/y:0")
                np.testing.assert_array_equal(sess.run(y, {f"{scope}/x:0": X}), expected)


def test_import_into_a_graph_that_has_the_names_uniquifies_them(tmp_path):
    prefix, expected = _train_and_save(tmp_path)
    with tf.Graph().as_default() as graph:
        tf.constant(1.0, name="y")                     # takes the name the import wants
        saver = tf.train.import_meta_graph(prefix + ".meta")
        outputs = [t for t in tf.get_collection(tf.GraphKeys.LOSSES)]
        assert outputs == [graph.get_tensor_by_name("loss:0")]
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            np.testing.assert_array_equal(sess.run("y_1:0", {"x:0": X}), expected)


def test_saver_to_proto_and_from_proto_with_scopes():
    with tf.Graph().as_default():
        with tf.name_scope("tower"):
            tf.Variable(1.0, name="v")
            saver = tf.train.Saver()
        assert saver.to_proto().restore_op_name == "tower/save/restore_all"
        assert saver.to_proto(export_scope="tower").restore_op_name == "save/restore_all"
        assert saver.to_proto(export_scope="elsewhere") is None
        meta = tf.train.export_meta_graph(export_scope="tower")
    with tf.Graph().as_default():
        tf.train.import_meta_graph(meta, import_scope="copy")
        copy = tf.train.Saver.from_proto(saver.to_proto(export_scope="tower"),
                                         import_scope="copy")
        assert copy.saver_def.filename_tensor_name == "copy/save/Const:0"


def test_saver_without_saver_def_and_none_without_variables():
    with tf.Graph().as_default():
        _build_model()
        meta = tf.train.export_meta_graph()          # no saver_def
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(meta)
        assert isinstance(saver, tf.train.Saver) and saver.saver_def.restore_op_name
    with tf.Graph().as_default():
        tf.placeholder(tf.float32, name="x")
        meta = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(meta) is None


# -- devices ---------------------------------------------------------------------------------------
def test_clear_devices_on_export_and_on_import():
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0/device:CPU:0"):
            tf.Variable(1.0, name="v")
        saver = tf.train.Saver()                  # its RestoreV2 is on /device:CPU:0
        kept = saver.export_meta_graph()
        cleared = saver.export_meta_graph(clear_devices=True)
    assert {n.device for n in kept.graph_def.node if n.name.startswith("v")} == {
        "/job:ps/task:0/device:CPU:0"}
    assert all(not n.device for n in cleared.graph_def.node)
    with tf.Graph().as_default() as graph:
        tf.train.import_meta_graph(kept)
        assert graph.get_operation_by_name("v").device == "/job:ps/task:0/device:CPU:0"
    with tf.Graph().as_default() as graph:
        tf.train.import_meta_graph(kept, clear_devices=True)
        assert all(not op.device for op in graph.get_operations())


# -- the Saver's .meta file ------------------------------------------------------------------------
def test_saver_meta_file_is_a_meta_graph_def(tmp_path):
    with tf.Graph().as_default():
        _build_model()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = saver.save(sess, str(tmp_path / "model"))
        exported = saver.export_meta_graph()
    meta = meta_graph_pb2.MetaGraphDef()
    with open(prefix + ".meta", "rb") as f:
        meta.ParseFromString(f.read())
    assert meta.saver_def == saver.saver_def
    assert meta.saver_def.version == saver_pb2.SaverDef.V2
    node_ops = {n.name: n.op for n in meta.graph_def.node}
    assert node_ops["W"] == "VariableV2" and node_ops["save/RestoreV2"] == "RestoreV2"
    assert {"variables", "trainable_variables", "global_step", "train_op",
            "losses"} <= set(meta.collection_def)
    assert meta == exported


def test_text_format_file_round_trip(tmp_path):
    path = str(tmp_path / "model.pbtxt")
    with tf.Graph().as_default():
        _build_model()
        tf.train.export_meta_graph(path, as_text=True)
    with open(path) as f:
        assert f.read().startswith("meta_info_def")
    with tf.Graph().as_default() as graph:
        tf.train.import_meta_graph(path)
        assert graph.get_tensor_by_name("y:0").shape.as_list() == [None, 1]


# -- export_scope ----------------------------------------------------------------------------------
def test_export_scope_strips_prefix_and_unbound_inputs_need_an_input_map():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        with tf.name_scope("tower"):
            w = tf.Variable(np.array([[2.0], [3.0]], np.float32), name="w")
            tf.matmul(x, w, name="out")
        meta = tf.train.export_meta_graph(export_scope="tower")
    assert sorted(n.name for n in meta.graph_def.node) == ["out", "w", "w/Assign",
                                                           "w/initial_value", "w/read"]
    assert list(meta.collection_def["unbound_inputs"].bytes_list.value) == [
        b"$unbound_inputs_x"]
    with tf.Graph().as_default() as graph:
        with pytest.raises(ValueError, match=r"unbound inputs: \$unbound_inputs_x"):
            tf.train.import_meta_graph(meta)
        assert graph.get_operations() == []
        features = tf.constant([[1.0, 1.0]], name="features")
        tf.train.import_meta_graph(meta, import_scope="copy",
                                   input_map={"$unbound_inputs_x": features})
        assert [v.name for v in tf.global_variables()] == ["copy/w:0"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(graph.get_tensor_by_name("copy/out:0")).tolist() == [[5.0]]


# -- queue runners ---------------------------------------------------------------------------------
def test_queue_runner_round_trip():
    with tf.Graph().as_default():
        queue = tf.FIFOQueue(10, tf.float32, shapes=[], name="q")
        enqueue = queue.enqueue(tf.constant(4.0), name="enqueue")
        tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue]))
        queue.dequeue(name="dequeue")
        meta = tf.train.export_meta_graph()
    runner_def = QueueRunnerDef.FromString(
        meta.collection_def["queue_runners"].bytes_list.value[0])
    assert (runner_def.queue_name, list(runner_def.enqueue_op_name)) == ("q", ["enqueue"])
    assert list(runner_def.queue_closed_exception_types) == [tf.errors.OUT_OF_RANGE]
    with tf.Graph().as_default() as graph:
        tf.train.import_meta_graph(meta, import_scope="in")
        runner = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[0]
        assert runner.name == "in/q"
        assert runner.queue_closed_exception_types == (tf.errors.OutOfRangeError,)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            assert sess.run(graph.get_tensor_by_name("in/dequeue:0")) == 4.0
            coord.request_stop()
            coord.join(threads)


# -- TensorFlow's files ----------------------------------------------------------------------------
def test_reads_a_meta_graph_and_checkpoint_written_by_tensorflow():
    prefix = os.path.join(DATA, "golden_meta_graph")
    with open(prefix + ".json") as f:
        golden = json.load(f)
    with tf.Graph().as_default() as graph:
        saver = tf.train.import_meta_graph(prefix + ".meta")
        assert saver.saver_def.restore_op_name == "save/restore_all"
        assert [v.name for v in tf.trainable_variables()] == ["W:0", "b:0"]
        assert tf.get_collection("outputs") == [graph.get_tensor_by_name("y:0")]
        assert tf.get_collection("sizes") == [3]
        assert tf.get_collection("input_names") == [b"x:0"]
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            w, b = tf.trainable_variables()
            np.testing.assert_array_equal(sess.run(w), np.array(golden["W"], np.float32))
            np.testing.assert_array_equal(sess.run(b), np.array(golden["b"], np.float32))
            y = sess.run("y:0", {"x:0": np.array(golden["x"], np.float32)})
            np.testing.assert_array_equal(y, np.array(golden["y"], np.float32))
            # The initializers TensorFlow wrote work too.
            sess.run(tf.global_variables_initializer())
            assert sess.run(b).tolist() == [1.0, 1.0]


def test_attrs_tensorflow_stripped_come_from_the_stripped_op_list():
    """TensorFlow leaves out attrs at their default (strip_default_attrs=True); the defaults
    are in the MetaGraphDef's stripped_op_list."""
    prefix = os.path.join(DATA, "golden_meta_graph")
    meta = meta_graph.read_meta_graph_file(prefix + ".meta")
    op_defs = {op.name: op for op in meta.meta_info_def.stripped_op_list.op}
    stripped = 0
    for node in meta.graph_def.node:
        for attr in op_defs[node.op].attr:
            if attr.HasField("default_value") and node.attr.get(attr.name) == attr.default_value:
                del node.attr[attr.name]
                stripped += 1
    assert stripped >= 4 and "transpose_a" not in {a for n in meta.graph_def.node
                                                   for a in n.attr}
    with open(prefix + ".json") as f:
        golden = json.load(f)
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(meta)
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            y = sess.run("y:0", {"x:0": np.array(golden["x"], np.float32)})
            np.testing.assert_array_equal(y, np.array(golden["y"], np.float32))


def test_tensorflow_style_meta_graph_built_by_hand():
    """A MetaGraphDef as TensorFlow 1.x writes one (no tfjupyter attrs, no _output_shapes)."""
    meta = _hand_written_meta_graph()
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(meta)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run("out:0", {"in:0": [[1.0, 2.0]]}).tolist() == [[8.0]]
            assert saver.saver_def.filename_tensor_name == "save/Const:0"


def _hand_written_meta_graph():
    meta = meta_graph_pb2.MetaGraphDef()
    meta.meta_info_def.tensorflow_version = "1.15.0"
    nodes = meta.graph_def.node

    def node(name, op, inputs=(), **attrs):
        nd = nodes.add(name=name, op=op)
        nd.input.extend(inputs)
        for key, value in attrs.items():
            nd.attr[key].CopyFrom(value)
        return nd

    from tensorboard.compat.proto import attr_value_pb2, tensor_pb2, types_pb2
    AttrValue = attr_value_pb2.AttrValue
    f32 = AttrValue(type=types_pb2.DT_FLOAT)
    value = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[2.0, 3.0])
    value.tensor_shape.dim.add(size=2)
    value.tensor_shape.dim.add(size=1)
    shape = AttrValue()
    shape.shape.dim.add(size=2)
    shape.shape.dim.add(size=1)
    unknown = AttrValue()
    unknown.shape.unknown_rank = True
    node("in", "Placeholder", dtype=f32, shape=unknown)
    node("v/initial_value", "Const", dtype=f32, value=AttrValue(tensor=value))
    node("v", "VariableV2", dtype=f32, shape=shape, container=AttrValue(s=b""),
         shared_name=AttrValue(s=b""))
    node("v/Assign", "Assign", ["v", "v/initial_value"], T=f32,
         use_locking=AttrValue(b=True), validate_shape=AttrValue(b=True),
         _class=AttrValue(list=AttrValue.ListValue(s=[b"loc:@v"])))
    node("v/read", "Identity", ["v"], T=f32)
    node("out", "MatMul", ["in", "v/read"], T=f32, transpose_a=AttrValue(b=False),
         transpose_b=AttrValue(b=False))
    filename = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[b"model"])
    string = AttrValue(type=types_pb2.DT_STRING)
    node("save/Const", "Const", dtype=string, value=AttrValue(tensor=filename))
    names = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[b"v"])
    names.tensor_shape.dim.add(size=1)
    slices = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[b""])
    slices.tensor_shape.dim.add(size=1)
    node("save/SaveV2/tensor_names", "Const", dtype=string, value=AttrValue(tensor=names))
    node("save/SaveV2/shape_and_slices", "Const", dtype=string, value=AttrValue(tensor=slices))
    node("save/SaveV2", "SaveV2", ["save/Const", "save/SaveV2/tensor_names",
                                   "save/SaveV2/shape_and_slices", "v"],
         dtypes=AttrValue(list=AttrValue.ListValue(type=[types_pb2.DT_FLOAT])))
    node("save/control_dependency", "Identity", ["save/Const", "^save/SaveV2"], T=string)
    node("save/RestoreV2", "RestoreV2", ["save/Const", "save/SaveV2/tensor_names",
                                         "save/SaveV2/shape_and_slices"],
         dtypes=AttrValue(list=AttrValue.ListValue(type=[types_pb2.DT_FLOAT])))
    node("save/Assign", "Assign", ["v", "save/RestoreV2"], T=f32,
         use_locking=AttrValue(b=True), validate_shape=AttrValue(b=True))
    node("save/restore_all", "NoOp", ["^save/Assign"])
    meta.saver_def.CopyFrom(saver_pb2.SaverDef(
        filename_tensor_name="save/Const:0", save_tensor_name="save/control_dependency:0",
        restore_op_name="save/restore_all", max_to_keep=5, version=saver_pb2.SaverDef.V2,
        keep_checkpoint_every_n_hours=10000.0))
    var_def = variable_pb2.VariableDef(variable_name="v:0", initializer_name="v/Assign",
                                       snapshot_name="v/read:0",
                                       initial_value_name="v/initial_value:0", trainable=True)
    for key in ("variables", "trainable_variables"):
        meta.collection_def[key].bytes_list.value.append(var_def.SerializeToString())
    return meta


# -- errors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("content", [b"\x0a\xff\xff\xff\xff garbage", b"not a meta graph {"])
def test_corrupt_file_names_the_file(tmp_path, content):
    path = tmp_path / "broken.meta"
    path.write_bytes(content)
    with tf.Graph().as_default() as graph:
        with pytest.raises(OSError, match="broken.meta"):
            tf.train.import_meta_graph(str(path))
        assert graph.get_operations() == []


@pytest.mark.parametrize("keep", [0, 100, 2000])
def test_empty_or_truncated_file_names_the_file(tmp_path, keep):
    with open(os.path.join(DATA, "golden_meta_graph.meta"), "rb") as f:
        content = f.read()[:keep]
    path = tmp_path / "cut.meta"
    path.write_bytes(content)
    with pytest.raises(OSError, match="Cannot parse file .*cut.meta"):
        tf.train.import_meta_graph(str(path))


def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(OSError, match="nothing.meta"):
        tf.train.import_meta_graph(str(tmp_path / "nothing.meta"))


def test_unknown_op_names_the_op_type_and_node_and_imports_nothing():
    meta = _hand_written_meta_graph()
    meta.graph_def.node.add(name="mystery", op="FancyNewOp", input=["out"])
    with tf.Graph().as_default() as graph:
        with pytest.raises(ValueError, match=r"Node 'mystery'.*FancyNewOp"):
            tf.train.import_meta_graph(meta)
        assert graph.get_operations() == []
        assert tf.global_variables() == []


def test_not_a_meta_graph_def_is_a_type_error():
    with pytest.raises(TypeError, match="MetaGraphDef"):
        meta_graph.import_scoped_meta_graph(42)
