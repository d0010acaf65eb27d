"""tf.saved_model (TF 1.15): SavedModelBuilder, loader.load, simple_save, signatures, assets.

Both directions against TensorFlow: tests/data/golden_saved_model was written by TensorFlow
(tests/data/make_saved_model_golden.py) and loads here; a SavedModel written here holds the
same collections, signatures and variable files, byte for byte, and loads in TensorFlow
(checked here when ``tensorflow`` is importable, else skipped, naming it).
"""
import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from tensorboard.compat.proto import meta_graph_pb2, types_pb2

import tfjupyter as tf
from tfjupyter.saved_model.proto import SavedModel, unpack_asset_file_def

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
GOLDEN_DIR = os.path.join(DATA, "golden_saved_model")
with open(GOLDEN_DIR + ".json") as _f:
    GOLDEN = json.load(_f)
X = np.array(GOLDEN["x"], np.float32)
FILES = ["assets/vocab.txt", "saved_model.pb", "variables/variables.data-00000-of-00001",
         "variables/variables.index"]


def _files(export_dir):
    return sorted(os.path.relpath(os.path.join(root, name), export_dir)
                  for root, _, names in os.walk(export_dir) for name in names)


def _read_saved_model(export_dir) -> SavedModel:
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        return SavedModel.FromString(f.read())


def _load_golden_maker():
    """tests/data/make_saved_model_golden.py, whose ``export(tf, ...)`` builds and exports
    the golden model with the ``tf`` module it is given: here, tfjupyter."""
    spec = importlib.util.spec_from_file_location(
        "make_saved_model_golden", os.path.join(DATA, "make_saved_model_golden.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKER = _load_golden_maker()


def _export_golden_model_here(tmp_path):
    """Exports the golden model with our builder, by the code TensorFlow ran for the golden."""
    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(os.path.join(GOLDEN_DIR, "assets", "vocab.txt"), source / "vocab.txt")
    export_dir = str(tmp_path / "exported")
    y = MAKER.export(tf, export_dir, str(source / "vocab.txt"))
    np.testing.assert_array_equal(y, GOLDEN["y"])
    return export_dir


# -- TensorFlow's SavedModel, loaded here -------------------------------------------------------
def test_tensorflows_saved_model_loads_with_variables_restored_and_asset_fed():
    with tf.Graph().as_default() as graph, tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], GOLDEN_DIR)
        assert isinstance(meta, meta_graph_pb2.MetaGraphDef)
        assert list(meta.meta_info_def.tags) == ["serve"]
        signature = meta.signature_def["serving_default"]
        assert signature.method_name == "tensorflow/serving/predict"
        x = tf.saved_model.utils.get_tensor_from_tensor_info(signature.inputs["x"])
        y = tf.saved_model.utils.get_tensor_from_tensor_info(signature.outputs["y"])
        assert (x.name, y.name) == ("x:0", "y:0")
        # W and b were loaded with other values than their initializers' before the export.
        np.testing.assert_array_equal(sess.run(y, {x: X}), GOLDEN["y"])
        # The legacy init op ran with the asset's Const fed its path in the SavedModel.
        assert sess.run("vocab_file:0") == os.fsencode(
            os.path.join(GOLDEN_DIR, "assets", "vocab.txt"))
        assert [op.name for op in graph.get_collection("saved_model_main_op")] == [
            "legacy_init_op"]
        (packed,) = graph.get_collection("saved_model_assets")
        asset = unpack_asset_file_def(packed)
        assert (asset.filename, asset.tensor_info.name) == ("vocab.txt", "vocab_path:0")


def test_the_meta_graph_is_chosen_by_its_tag_set_in_any_order():
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["gpu", "train"], GOLDEN_DIR)
        assert list(meta.meta_info_def.tags) == ["train", "gpu"]
        assert not meta.signature_def
        np.testing.assert_array_equal(sess.run("y:0", {"x:0": X}), GOLDEN["y"])


def test_tags_matching_no_meta_graph_raise_runtime_error_listing_the_tag_sets():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(RuntimeError) as info:
            tf.saved_model.loader.load(sess, ["serve", "gpu"], GOLDEN_DIR)
        message = str(info.value)
        assert message.startswith(
            "MetaGraphDef associated with tags 'serve', 'gpu' could not be found in "
            "SavedModel. To inspect available tag-sets in the SavedModel, please use the "
            "SavedModel CLI: `saved_model_cli`\navailable_tags: [{'serve'}, ")
        assert re.search(r"\{('train', 'gpu'|'gpu', 'train')\}\]$", message), message
        assert not tf.get_default_graph().get_operations()     # nothing was imported


def test_import_scope_prefixes_names_signatures_and_asset_feeds():
    with tf.Graph().as_default() as graph, tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], GOLDEN_DIR, import_scope="model")
        signature = meta.signature_def["serving_default"]
        x = tf.saved_model.utils.get_tensor_from_tensor_info(signature.inputs["x"],
                                                             import_scope="model")
        y = tf.saved_model.utils.get_tensor_from_tensor_info(signature.outputs["y"],
                                                             import_scope="model")
        assert (x.name, y.name) == ("model/x:0", "model/y:0")
        np.testing.assert_array_equal(sess.run(y, {x: X}), GOLDEN["y"])
        assert sess.run("model/vocab_file:0").endswith(b"assets/vocab.txt")
        assert not [op for op in graph.get_operations() if not op.name.startswith("model/")]


def test_tensorflows_sharded_saver_runs_here(tmp_path):
    """TensorFlow's sharded Saver builds its shard prefix with StringJoin, StaticRegexFullMatch
    and a string Select: the imported Saver saves and restores with them."""
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], GOLDEN_DIR)
        op_types = {node.op for node in meta.graph_def.node}
        assert {"StringJoin", "StaticRegexFullMatch", "MergeV2Checkpoints"} <= op_types
        saver = tf.train.Saver(saver_def=meta.saver_def)
        prefix = saver.save(sess, str(tmp_path / "model"), write_meta_graph=False)
        assert prefix == str(tmp_path / "model")
        assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.data-00000-of-00001",
                                                "model.index"]     # no shard left behind
        sess.run(tf.global_variables_initializer())
        saver.restore(sess, prefix)
        np.testing.assert_array_equal(sess.run("y:0", {"x:0": X}), GOLDEN["y"])


def test_string_join_and_regex_full_match():
    with tf.Graph().as_default(), tf.Session() as sess:
        from tfjupyter.ops import string_ops
        words = tf.constant(["ab", "s3://bucket"])
        joined = string_ops.string_join([words, "x"], separator="-")
        static = string_ops.regex_full_match(words, "^s3://.*")
        dynamic = string_ops.regex_full_match(words, tf.constant("a."))
        assert joined.shape.as_list() == [2] and static.dtype == tf.bool
        j, s, d = sess.run([joined, static, dynamic])
        assert j.tolist() == [b"ab-x", b"s3://bucket-x"]
        assert s.tolist() == [False, True] and d.tolist() == [True, False]
        assert sess.run(string_ops.string_join(["a", "b"])) == b"ab"
        with pytest.raises(ValueError, match="same shape"):
            string_ops.string_join([tf.constant(["a"]), tf.constant(["a", "b"])])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="StaticRegexFullMatch 'bad': Invalid pattern: \\("):
            sess.run(string_ops.regex_full_match(words, "(", name="bad"))


# -- a SavedModel written here ------------------------------------------------------------------
def test_written_here_it_matches_tensorflows_files(tmp_path):
    export_dir = _export_golden_model_here(tmp_path)
    assert _files(export_dir) == _files(GOLDEN_DIR) == FILES
    for name in FILES[1:]:
        if name != "saved_model.pb":           # the variables: TensorFlow's bytes exactly
            with open(os.path.join(export_dir, name), "rb") as ours, \
                    open(os.path.join(GOLDEN_DIR, name), "rb") as theirs:
                assert ours.read() == theirs.read(), name
    ours, theirs = _read_saved_model(export_dir), _read_saved_model(GOLDEN_DIR)
    assert ours.saved_model_schema_version == theirs.saved_model_schema_version == 1
    assert len(ours.meta_graphs) == len(theirs.meta_graphs) == 2
    for mine, tfs in zip(ours.meta_graphs, theirs.meta_graphs):
        assert list(mine.meta_info_def.tags) == list(tfs.meta_info_def.tags)
        assert dict(mine.signature_def) == dict(tfs.signature_def)
        assert all(tf.saved_model.is_valid_signature(x) for x in mine.signature_def.values())
        assert dict(mine.collection_def) == dict(tfs.collection_def)
        assert mine.saver_def == tfs.saver_def


def test_written_here_its_nodes_carry_tensorflows_type_attrs(tmp_path):
    """TensorFlow's importer requires the type attrs its OpDefs derive from inputs and outputs
    (T, N, dtypes...): every node of the same name and type as one of TensorFlow's carries
    TensorFlow's values for them, and our own import leaves them out again."""
    export_dir = _export_golden_model_here(tmp_path)
    ours = {n.name: n for n in _read_saved_model(export_dir).meta_graphs[0].graph_def.node}
    theirs = _read_saved_model(GOLDEN_DIR).meta_graphs[0].graph_def.node
    compared = set()
    for node in theirs:
        mine = ours.get(node.name)
        if mine is None or mine.op != node.op:
            continue
        for key, value in node.attr.items():
            if value.WhichOneof("value") == "type" or value.list.type or key == "N":
                assert mine.attr[key] == value, (node.name, key)
                compared.add((node.op, key))
    assert {("Assign", "T"), ("MatMul", "T"), ("Identity", "T"), ("SaveV2", "dtypes"),
            ("RestoreV2", "dtypes")} <= compared, compared
    assert ours["W/Assign"].attr["_tfjupyter_derived"].list.s == [b"T"]
    with tf.Graph().as_default() as graph:
        tf.train.import_meta_graph(_read_saved_model(export_dir).meta_graphs[0])
        with pytest.raises(ValueError, match="has no attr named 'T'"):
            graph.get_operation_by_name("W/Assign").get_attr("T")


def test_written_here_it_loads_here(tmp_path):
    export_dir = _export_golden_model_here(tmp_path)
    assert tf.saved_model.loader.maybe_saved_model_directory(export_dir)
    for tags in (["serve"], ["train", "gpu"]):
        with tf.Graph().as_default(), tf.Session() as sess:
            tf.saved_model.loader.load(sess, tags, export_dir)
            np.testing.assert_array_equal(sess.run("y:0", {"x:0": X}), GOLDEN["y"])
            assert sess.run("vocab_file:0") == os.fsencode(
                os.path.join(export_dir, "assets", "vocab.txt"))


TF_LOADS = """
import json, sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
out = {}
for tags in (["serve"], ["train", "gpu"]):
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, tags, sys.argv[1])
        out[",".join(tags)] = {
            "y": sess.run("y:0", {"x:0": np.array(json.loads(sys.argv[2]), np.float32)}).tolist(),
            "vocab_file": sess.run("vocab_file:0").decode(),
            "signatures": sorted(meta.signature_def)}
print(json.dumps(out))
"""


@pytest.mark.timeout(120)
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                    reason="tensorflow is not installed: cannot check that TensorFlow loads "
                           "a SavedModel written here")
def test_tensorflow_loads_a_saved_model_written_here(tmp_path):
    export_dir = _export_golden_model_here(tmp_path)
    done = subprocess.run([sys.executable, "-c", TF_LOADS, export_dir, json.dumps(GOLDEN["x"])],
                          capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.splitlines()[-1])
    vocab = os.path.join(export_dir, "assets", "vocab.txt")
    assert loaded == {"serve": {"y": GOLDEN["y"], "vocab_file": vocab,
                                "signatures": ["regress", "serving_default"]},
                      "train,gpu": {"y": GOLDEN["y"], "vocab_file": vocab, "signatures": []}}


def test_simple_save_round_trip(tmp_path):
    export_dir = str(tmp_path / "simple")
    with tf.Graph().as_default():
        with tf.device("/cpu:0"):
            x = tf.placeholder(tf.float32, [None, 2], name="x")
            w = tf.Variable([[2.0], [-1.0]], name="w")
            y = tf.matmul(x, w, name="y")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(w.assign([[0.5], [4.0]]))
            tf.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y})
    meta = _read_saved_model(export_dir).meta_graphs[0]
    assert list(meta.meta_info_def.tags) == ["serve"]
    assert list(meta.signature_def) == ["serving_default"]
    assert not [n.name for n in meta.graph_def.node if n.device]       # clear_devices=True
    assert "assets" not in os.listdir(export_dir)
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.load(sess, [tf.saved_model.SERVING], export_dir)
        signature = meta.signature_def[tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        y = sess.run(signature.outputs["y"].name,
                     {signature.inputs["x"].name: [[1.0, 1.0], [2.0, 0.0]]})
        np.testing.assert_array_equal(y, [[4.5], [1.0]])


def test_main_op_initializes_variables_after_the_restore(tmp_path):
    """tf.saved_model.main_op.main_op() initializes the global variables too, and the loader
    runs it after the restore: the variables come back with their initial values, as in
    TensorFlow (checked by hand: the golden model exported with main_op() loads there with
    y = b = [1, 1])."""
    export_dir = str(tmp_path / "main_op")
    with tf.Graph().as_default():
        w = tf.Variable(3.0, name="w")
        local = tf.Variable(7.0, collections=[tf.GraphKeys.LOCAL_VARIABLES], name="local")
        main_op = tf.saved_model.main_op.main_op()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run([w.assign(5.0), local.initializer])
            builder = tf.saved_model.Builder(export_dir)
            builder.add_meta_graph_and_variables(sess, ["serve"], main_op=main_op)
            assert builder.save() == os.fsencode(os.path.join(export_dir, "saved_model.pb"))
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.loader.load(sess, ["serve"], export_dir)
        assert sess.run(["w:0", "local:0"]) == [3.0, 7.0]
    with tf.Graph().as_default(), tf.Session() as sess:       # the checkpoint holds 5
        restored = tf.saved_model.loader.SavedModelLoader(export_dir)
        saver, _ = restored.load_graph(sess.graph, ["serve"])
        restored.restore_variables(sess, saver)
        assert sess.run("w:0") == 5.0


def test_as_text_and_loading_errors(tmp_path):
    export_dir = str(tmp_path / "text")
    with tf.Graph().as_default():
        v = tf.Variable(2.5, name="v")
        with tf.Session() as sess:
            sess.run(v.initializer)
            builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
            builder.add_meta_graph_and_variables(sess, ["serve"])
            assert builder.save(as_text=True).endswith(b"saved_model.pbtxt")
    assert sorted(os.listdir(export_dir)) == ["saved_model.pbtxt", "variables"]
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.loader.load(sess, ["serve"], export_dir)
        assert sess.run("v:0") == 2.5
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not tf.saved_model.loader.maybe_saved_model_directory(str(empty))
    with pytest.raises(OSError, match=re.escape(
            f"SavedModel file does not exist at: {empty}/{{saved_model.pbtxt|saved_model.pb}}")):
        tf.saved_model.loader.load(tf.Session(graph=tf.Graph()), ["serve"], str(empty))
    (empty / "saved_model.pb").write_bytes(b"\xff\xff not a proto")
    with pytest.raises(OSError, match="Cannot parse file .*saved_model.pb"):
        tf.saved_model.loader.load(tf.Session(graph=tf.Graph()), ["serve"], str(empty))


def test_a_model_without_variables(tmp_path, caplog):
    export_dir = str(tmp_path / "constant")
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        y = tf.multiply(x, 3.0, name="y")
        with tf.Session() as sess:
            tf.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y})
    assert os.listdir(os.path.join(export_dir, "variables")) == []
    assert not _read_saved_model(export_dir).meta_graphs[0].HasField("saver_def")
    with tf.Graph().as_default(), tf.Session() as sess, \
            caplog.at_level(logging.INFO, logger="tfjupyter"):
        tf.saved_model.loader.load(sess, ["serve"], export_dir)
        assert sess.run("y:0", {"x:0": [1.0, 2.0]}).tolist() == [3.0, 6.0]
    assert "The specified SavedModel has no variables; no checkpoints were restored." \
        in caplog.text


# -- the builder's errors ------------------------------------------------------------------------
def test_builder_errors(tmp_path):
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "file").write_text("x")
    with pytest.raises(AssertionError, match="Export directory already exists, and isn't "
                       "empty. Please choose a different export directory, or delete all the "
                       f"contents of the specified directory: {re.escape(str(occupied))}"):
        tf.saved_model.builder.SavedModelBuilder(str(occupied))
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        x = tf.placeholder(tf.float32, name="x")
        builder = tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "empty_is_fine"))
        with pytest.raises(AssertionError, match="has not been saved yet. Please invoke "
                           r"`add_meta_graph_and_variables\(\)` first."):
            builder.add_meta_graph(["serve"])
        with tf.Session() as sess:
            sess.run(v.initializer)
            with pytest.raises(TypeError, match="main_op needs to be an Operation"):
                builder.add_meta_graph_and_variables(sess, ["serve"], main_op=x)
            bad = meta_graph_pb2.SignatureDef()
            bad.inputs["x"].name = "x:0"                  # no dtype
            with pytest.raises(AssertionError, match="must have the dtype field set"):
                builder.add_meta_graph_and_variables(sess, ["serve"], {"s": bad})
            op_signature = tf.saved_model.signature_def_utils.predict_signature_def(
                {"x": x}, {"v": v.value()})
            with pytest.raises(KeyError, match="__saved_model_init_op"):
                builder.add_meta_graph_and_variables(
                    sess, ["serve"], {"__saved_model_init_op": op_signature})
            builder.add_meta_graph_and_variables(sess, ["serve"], main_op=tf.no_op())
            with pytest.raises(AssertionError, match="has already been saved. Please invoke "
                               r"`add_meta_graph\(\)` instead."):
                builder.add_meta_graph_and_variables(sess, ["train"])
            with pytest.raises(ValueError, match="Graph already contains one or more main ops "
                               "under the collection saved_model_main_op."):
                builder.add_meta_graph(["train"], main_op=tf.no_op())


def test_assets_of_one_name_but_other_contents_are_renamed(tmp_path):
    for folder, text in (("a", "one"), ("b", "two"), ("c", "one")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "vocab.txt").write_text(text)
    export_dir = str(tmp_path / "exported")
    with tf.Graph().as_default():
        assets = [tf.constant(str(tmp_path / f / "vocab.txt"), name=f"asset_{f}")
                  for f in ("a", "b", "c")]
        with pytest.raises(TypeError, match="Asset path tensor must be of type constant."):
            tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "bad")) \
                .add_meta_graph_and_variables(tf.Session(), ["serve"],
                                              assets_collection=[tf.identity(assets[0])])
        with tf.Session() as sess:
            builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
            builder.add_meta_graph_and_variables(sess, ["serve"], assets_collection=assets)
            builder.save()
    assert sorted(os.listdir(os.path.join(export_dir, "assets"))) == ["vocab.txt",
                                                                      "vocab.txt_1"]
    meta = _read_saved_model(export_dir).meta_graphs[0]
    recorded = [unpack_asset_file_def(packed) for packed in
                meta.collection_def["saved_model_assets"].any_list.value]
    assert [(a.tensor_info.name, a.filename) for a in recorded] == [
        ("asset_a:0", "vocab.txt"), ("asset_b:0", "vocab.txt_1"), ("asset_c:0", "vocab.txt")]
    assert (tmp_path / "exported" / "assets" / "vocab.txt_1").read_text() == "two"


# -- signatures and tensor infos -----------------------------------------------------------------
def test_signature_def_utils_checks():
    sdu = tf.saved_model.signature_def_utils
    with tf.Graph().as_default():
        examples = tf.placeholder(tf.string, [None], name="examples")
        scores = tf.placeholder(tf.float32, [None, 3], name="scores")
        classes = tf.placeholder(tf.string, [None, 3], name="classes")
        ids = tf.placeholder(tf.int64, [None], name="ids")
        with pytest.raises(ValueError, match="Prediction inputs cannot be None or empty."):
            sdu.predict_signature_def({}, {"s": scores})
        with pytest.raises(ValueError, match="Regression examples must be a string Tensor."):
            sdu.regression_signature_def(ids, scores)
        with pytest.raises(ValueError, match="Regression output must be a float Tensor."):
            sdu.regression_signature_def(examples, ids)
        with pytest.raises(ValueError, match="classes and scores cannot both be None."):
            sdu.classification_signature_def(examples, None, None)
        with pytest.raises(ValueError, match="Classification classes must be a string Tensor."):
            sdu.classification_signature_def(examples, ids, scores)
        classify = sdu.classification_signature_def(examples, classes, scores)
        assert classify.method_name == "tensorflow/serving/classify"
        assert set(classify.outputs) == {"classes", "scores"}
        assert classify.inputs["inputs"].dtype == types_pb2.DT_STRING
        assert tf.saved_model.is_valid_signature(classify)
        predict = sdu.predict_signature_def({"ids": ids}, {"scores": scores})
        assert tf.saved_model.is_valid_signature(predict)
    info = meta_graph_pb2.TensorInfo
    assert not tf.saved_model.is_valid_signature(None)
    # A predict method without outputs, a regression of int outputs, a classification with an
    # unknown output key: not servable.
    assert not tf.saved_model.is_valid_signature(tf.saved_model.build_signature_def(
        {"x": info(name="x:0", dtype=types_pb2.DT_FLOAT)}, None, "tensorflow/serving/predict"))
    assert not tf.saved_model.is_valid_signature(tf.saved_model.build_signature_def(
        {"inputs": info(name="e:0", dtype=types_pb2.DT_STRING)},
        {"outputs": info(name="y:0", dtype=types_pb2.DT_INT64)}, "tensorflow/serving/regress"))
    assert not tf.saved_model.is_valid_signature(tf.saved_model.build_signature_def(
        {"inputs": info(name="e:0", dtype=types_pb2.DT_STRING)},
        {"labels": info(name="y:0", dtype=types_pb2.DT_STRING)}, "tensorflow/serving/classify"))


def test_tensor_info_of_dense_and_sparse_tensors():
    with tf.Graph().as_default() as graph:
        dense = tf.placeholder(tf.int32, [None, 4], name="dense")
        sparse = tf.SparseTensor(tf.constant([[0, 1]], tf.int64, name="indices"),
                                 tf.constant([2.5], name="values"),
                                 tf.constant([3, 4], tf.int64, name="dense_shape"))
        dense_info = tf.saved_model.build_tensor_info(dense)
        assert (dense_info.name, dense_info.dtype) == ("dense:0", types_pb2.DT_INT32)
        assert [d.size for d in dense_info.tensor_shape.dim] == [-1, 4]
        sparse_info = tf.saved_model.utils.build_tensor_info(sparse)
        assert sparse_info.WhichOneof("encoding") == "coo_sparse"
        assert (sparse_info.coo_sparse.indices_tensor_name,
                sparse_info.coo_sparse.values_tensor_name,
                sparse_info.coo_sparse.dense_shape_tensor_name) == (
            "indices:0", "values:0", "dense_shape:0")
        assert tf.saved_model.get_tensor_from_tensor_info(dense_info) is dense
        back = tf.saved_model.get_tensor_from_tensor_info(sparse_info, graph=graph)
        assert isinstance(back, tf.SparseTensor)
        assert (back.indices, back.values, back.dense_shape) == (
            sparse.indices, sparse.values, sparse.dense_shape)
        with pytest.raises(KeyError):
            tf.saved_model.get_tensor_from_tensor_info(
                meta_graph_pb2.TensorInfo(name="missing:0"))
        with pytest.raises(ValueError, match="Invalid TensorInfo.encoding: None"):
            tf.saved_model.get_tensor_from_tensor_info(meta_graph_pb2.TensorInfo())


def test_constants_are_tensorflows():
    sm = tf.saved_model
    assert (sm.tag_constants.SERVING, sm.tag_constants.TRAINING, sm.tag_constants.EVAL,
            sm.tag_constants.GPU, sm.tag_constants.TPU) == ("serve", "train", "eval", "gpu",
                                                            "tpu")
    assert (sm.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY,
            sm.signature_constants.PREDICT_METHOD_NAME,
            sm.signature_constants.CLASSIFY_OUTPUT_SCORES) == (
        "serving_default", "tensorflow/serving/predict", "scores")
    assert (sm.constants.ASSETS_KEY, sm.constants.MAIN_OP_KEY, sm.LEGACY_INIT_OP_KEY,
            sm.VARIABLES_DIRECTORY, sm.SAVED_MODEL_FILENAME_PB) == (
        "saved_model_assets", "saved_model_main_op", "legacy_init_op", "variables",
        "saved_model.pb")
    assert tf.GraphKeys.ASSET_FILEPATHS == "asset_filepaths"
    assert sm.builder.SavedModelBuilder is sm.Builder
    assert sm.loader.load is sm.load
    assert sm.contains_saved_model is sm.maybe_saved_model_directory
