"""tf.train.Saver, the checkpoint state file and the V2 checkpoint format."""
import errno
import os
import struct

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from tensorboard.compat.proto import meta_graph_pb2, tensor_shape_pb2

import tfjupyter as tf
import tfjupyter.kernels.cpu.io_kernels  # noqa: F401  (until kernels/cpu/__init__ imports it)
from tfjupyter.framework import errors
from tfjupyter.summary import _encoding
from tfjupyter.train import saver as saver_lib, tensor_bundle


def _model(init=0.0):
    """Two layers' worth of variables of several dtypes, optionally with shifted values."""
    with tf.name_scope("layer1"):
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3) + init, name="weights")
        b = tf.Variable(np.float64(init) + 0.5, name="biases")
    steps = tf.Variable(np.array([1, 2, 3], np.int64) + int(init), name="steps")
    count = tf.Variable(np.int32(7 + init), name="count")
    return [w, b, steps, count]


def _values(sess, variables):
    return [sess.run(v) for v in variables]


def _listing(directory):
    return sorted(os.listdir(directory))


# -- round trips -----------------------------------------------------------------------------------
def test_save_then_restore_into_a_fresh_graph(tmp_path):
    with tf.Graph().as_default():
        variables = _model(init=10.0)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(variables[0].assign_add(np.ones((2, 3), np.float32)))
            expected = _values(sess, variables)
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1000)
    assert path == str(tmp_path / "model.ckpt-1000")
    assert _listing(tmp_path) == ["checkpoint", "model.ckpt-1000.data-00000-of-00001",
                                  "model.ckpt-1000.index", "model.ckpt-1000.meta"]
    with tf.Graph().as_default():
        variables = _model(init=0.0)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
            got = _values(sess, variables)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)
    np.testing.assert_array_equal(got[0], np.arange(6).reshape(2, 3) + 11.0)


def test_saver_graph_ops_follow_tensorflow(tmp_path):
    with tf.Graph().as_default() as g:
        w, b = _model()[:2]
        saver = tf.train.Saver([w, b])
        sd = saver.saver_def
        assert (sd.filename_tensor_name, sd.save_tensor_name, sd.restore_op_name) == \
            ("save/Const:0", "save/control_dependency:0", "save/restore_all")
        assert sd.version == tf.train.SaverDef.V2 and sd.max_to_keep == 5
        save_op = g.get_operation_by_name("save/SaveV2")
        assert save_op.type == "SaveV2"
        # The variables themselves (not their snapshots) are the tensors written.
        assert [t.op.name for t in save_op.inputs[3:]] == ["layer1/biases", "layer1/weights"]
        restore_all = g.get_operation_by_name("save/restore_all")
        assigns = sorted(op.name for op in restore_all.control_inputs)
        assert assigns == ["save/Assign", "save/Assign_1"]
        assert {g.get_operation_by_name(a).inputs[0].op.name for a in assigns} == \
            {"layer1/weights", "layer1/biases"}
        assert tf.train.Saver([w]).saver_def.restore_op_name == "save_1/restore_all"


def test_restore_twice_and_overwrite_same_prefix(tmp_path):
    prefix = str(tmp_path / "m")
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert saver.save(sess, prefix) == prefix
            sess.run(v.assign(2.0))
            saver.save(sess, prefix)            # same prefix again: replaced atomically
            sess.run(v.assign(3.0))
            saver.restore(sess, prefix)
            assert sess.run(v) == 2.0
    assert not [n for n in os.listdir(tmp_path) if "tempstate" in n]


def test_var_list_dict_restores_under_other_names(tmp_path):
    """Saver({'v/ExponentialMovingAverage': v}) loads the averaged value into v."""
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        tf.Variable([0.5, 0.25], name="v/ExponentialMovingAverage")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "m"))
    with tf.Graph().as_default():
        v = tf.Variable([0.0, 0.0], name="v")
        saver = tf.train.Saver({"v/ExponentialMovingAverage": v})
        with tf.Session() as sess:
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(v), [0.5, 0.25])


def test_var_list_subset_and_errors(tmp_path):
    with tf.Graph().as_default():
        w, b = _model()[:2]
        saver = tf.train.Saver([w])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "m"), write_meta_graph=False)
        assert tf.train.list_variables(path) == [("layer1/weights", [2, 3])]
        with pytest.raises(ValueError, match="At least two variables have the same name"):
            tf.train.Saver([w, w])
        with pytest.raises(TypeError, match="not a Variable"):
            tf.train.Saver([w.value()])
        with pytest.raises(TypeError, match="Variables to save should be passed"):
            tf.train.Saver(w)
        with pytest.raises(ValueError, match="same saveable will be restored with two names"):
            tf.train.Saver({"a": w, "b": w})
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            tf.train.Saver()
        empty = tf.train.Saver(allow_empty=True)
        with tf.Session() as sess:
            assert empty.save(sess, str(tmp_path / "empty"), write_meta_graph=False) is None
            empty.restore(sess, str(tmp_path / "does-not-matter"))


def test_global_step_as_tensor_and_padding(tmp_path):
    with tf.Graph().as_default():
        step = tf.Variable(42, name="global_step", trainable=False)
        saver = tf.train.Saver(pad_step_number=True)
        with tf.Session() as sess:
            sess.run(step.initializer)
            path = saver.save(sess, str(tmp_path / "m"), global_step=step)
    assert path == str(tmp_path / "m-00000042")


# -- the "checkpoint" state file -------------------------------------------------------------------
def test_state_file_text_format_and_latest(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            for step in (1000, 2000):
                saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
    assert (tmp_path / "checkpoint").read_text() == (
        'model_checkpoint_path: "model.ckpt-2000"\n'
        'all_model_checkpoint_paths: "model.ckpt-1000"\n'
        'all_model_checkpoint_paths: "model.ckpt-2000"\n')
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == str(tmp_path / "model.ckpt-2000")
    assert state.all_model_checkpoint_paths == [str(tmp_path / "model.ckpt-1000"),
                                                str(tmp_path / "model.ckpt-2000")]
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-2000")


def test_state_file_with_relative_save_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert saver.save(sess, "train/model", global_step=3) == "train/model-3"
    assert (tmp_path / "train" / "checkpoint").read_text() == \
        'model_checkpoint_path: "model-3"\nall_model_checkpoint_paths: "model-3"\n'
    assert tf.train.latest_checkpoint("train") == os.path.join("train", "model-3")


def test_state_file_escaping_and_bad_files(tmp_path):
    odd = str(tmp_path / 'we"ird\\name')
    tf.train.update_checkpoint_state(str(tmp_path), odd)
    text = (tmp_path / "checkpoint").read_text()
    assert text.startswith('model_checkpoint_path: "we\\"ird\\\\name"\n')
    assert tf.train.get_checkpoint_state(str(tmp_path)).model_checkpoint_path == odd
    (tmp_path / "checkpoint").write_text("model_checkpoint_path: unquoted garbage {\n")
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert tf.train.get_checkpoint_state(str(tmp_path / "missing")) is None
    # A state file naming a checkpoint whose files are gone: no latest checkpoint.
    tf.train.update_checkpoint_state(str(tmp_path), str(tmp_path / "gone"))
    assert tf.train.latest_checkpoint(str(tmp_path)) is None


def test_latest_filename_checks(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            with pytest.raises(ValueError, match="must not contain path components"):
                saver.save(sess, str(tmp_path / "m"), latest_filename="a/b")
            with pytest.raises(ValueError, match="collides with 'save_path'"):
                saver.save(sess, str(tmp_path / "checkpoint"))
            saver.save(sess, str(tmp_path / "m"), latest_filename="mystate",
                       write_meta_graph=False)
    assert (tmp_path / "mystate").exists() and not (tmp_path / "checkpoint").exists()
    assert tf.train.latest_checkpoint(str(tmp_path), "mystate") == str(tmp_path / "m")


# -- keeping and deleting old checkpoints ----------------------------------------------------------
def test_max_to_keep_deletes_older_files(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session() as sess:
            sess.run(v.initializer)
            for step in range(1, 5):
                saver.save(sess, str(tmp_path / "m"), global_step=step)
        assert saver.last_checkpoints == [str(tmp_path / "m-3"), str(tmp_path / "m-4")]
    assert _listing(tmp_path) == ["checkpoint", "m-3.data-00000-of-00001", "m-3.index",
                                  "m-3.meta", "m-4.data-00000-of-00001", "m-4.index", "m-4.meta"]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == saver.last_checkpoints


def test_max_to_keep_zero_keeps_everything(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        saver = tf.train.Saver(max_to_keep=0)
        with tf.Session() as sess:
            sess.run(v.initializer)
            for step in range(3):
                saver.save(sess, str(tmp_path / "m"), global_step=step, write_meta_graph=False)
        assert saver.last_checkpoints == []
    assert sum(n.endswith(".index") for n in os.listdir(tmp_path)) == 3
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == \
        [str(tmp_path / "m-2")]


def test_keep_checkpoint_every_n_hours(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(saver_lib.time, "time", lambda: clock[0])
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        saver = tf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1.0)
        with tf.Session() as sess:
            sess.run(v.initializer)
            for step, minutes in ((1, 0), (2, 30), (3, 61), (4, 62), (5, 63)):
                clock[0] = 1000.0 + 60 * minutes
                saver.save(sess, str(tmp_path / "m"), global_step=step, write_meta_graph=False)
    kept = sorted(n[:-6] for n in os.listdir(tmp_path) if n.endswith(".index"))
    # m-3 was written past the first hour, so it is kept for good when it leaves the window.
    assert kept == ["m-3", "m-5"]


def test_recover_last_checkpoints_and_mtimes(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session() as sess:
            sess.run(v.initializer)
            paths = [saver.save(sess, str(tmp_path / "m"), global_step=s, write_meta_graph=False)
                     for s in (1, 2)]
        fresh = tf.train.Saver(max_to_keep=2)
        fresh.recover_last_checkpoints(paths + [str(tmp_path / "missing")])
        assert fresh.last_checkpoints == paths
        with tf.Session() as sess:
            sess.run(v.initializer)
            fresh.save(sess, str(tmp_path / "m"), global_step=3, write_meta_graph=False)
    assert not tf.train.checkpoint_exists(paths[0]) and tf.train.checkpoint_exists(paths[1])
    assert len(tf.train.get_checkpoint_mtimes(paths)) == 1
    tf.train.remove_checkpoint(paths[1])
    assert not tf.train.checkpoint_exists(paths[1])


# -- errors ----------------------------------------------------------------------------------------
def _saved(tmp_path):
    with tf.Graph().as_default():
        variables = _model()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return saver.save(sess, str(tmp_path / "m"), write_meta_graph=False), \
                _values(sess, variables)


def test_restore_missing_variable_names_it(tmp_path):
    path, _ = _saved(tmp_path)
    with tf.Graph().as_default():
        with tf.name_scope("layer2"):
            tf.Variable(np.zeros((2, 3), np.float32), name="weights")
        saver = tf.train.Saver()
        with tf.Session() as sess, pytest.raises(errors.NotFoundError) as info:
            saver.restore(sess, path)
    assert "Key layer2/weights not found in checkpoint" in str(info.value)
    assert "Restoring from checkpoint failed" in str(info.value)


def test_restore_shape_mismatch_names_variable_and_shapes(tmp_path):
    path, _ = _saved(tmp_path)
    with tf.Graph().as_default():
        with tf.name_scope("layer1"):
            tf.Variable(np.zeros((3, 3), np.float32), name="weights")
        saver = tf.train.Saver()
        with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError) as info:
            saver.restore(sess, path)
    message = str(info.value)
    assert "tensor_name = layer1/weights" in message
    assert "[3,3]" in message and "[2,3]" in message


def test_restore_dtype_mismatch(tmp_path):
    path, _ = _saved(tmp_path)
    with tf.Graph().as_default():
        with tf.name_scope("layer1"):
            tf.Variable(np.zeros((2, 3), np.float64), name="weights")
        saver = tf.train.Saver()
        with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError,
                                                 match="expected dtype double does not equal "
                                                       "original dtype float"):
            saver.restore(sess, path)


def test_restore_reshape_true_accepts_other_shapes(tmp_path):
    path, values = _saved(tmp_path)
    with tf.Graph().as_default():
        with tf.name_scope("layer1"):
            w = tf.Variable(np.zeros((3, 2), np.float32), name="weights")
        saver = tf.train.Saver([w], reshape=True)
        with tf.Session() as sess:
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(w), values[0].reshape(3, 2))


def test_restore_bad_paths(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            with pytest.raises(ValueError, match="not a valid checkpoint"):
                saver.restore(sess, str(tmp_path / "nothing"))
            with pytest.raises(ValueError, match="save_path when it is None"):
                saver.restore(sess, None)
            with pytest.raises(errors.FailedPreconditionError, match="uninitialized value v"):
                saver.save(sess, str(tmp_path / "m"))
            sess.run(v.initializer)
            with pytest.raises(ValueError, match="Parent directory of .* doesn't exist"):
                saver.save(sess, str(tmp_path / "a" / "b" / "m"))
            # One missing level is created, as TensorFlow does.
            saver.save(sess, str(tmp_path / "new" / "m"), write_meta_graph=False)
    assert tf.train.checkpoint_exists(str(tmp_path / "new" / "m"))


def test_corrupted_data_is_detected(tmp_path):
    path, _ = _saved(tmp_path)
    data = tmp_path / "m.data-00000-of-00001"
    raw = bytearray(data.read_bytes())
    raw[3] ^= 0x40
    data.write_bytes(bytes(raw))
    with tf.Graph().as_default():
        _model()
        saver = tf.train.Saver()
        with tf.Session() as sess, pytest.raises(errors.DataLossError, match="Checksum"):
            saver.restore(sess, path)
    index = tmp_path / "m.index"
    raw = bytearray(index.read_bytes())
    raw[10] ^= 0x01
    index.write_bytes(bytes(raw))
    with pytest.raises(errors.DataLossError, match="checksum mismatch"):
        tf.train.NewCheckpointReader(path)
    index.write_bytes(b"not a table")
    with pytest.raises(errors.DataLossError, match="bad magic number"):
        tf.train.NewCheckpointReader(path)


# -- atomicity -------------------------------------------------------------------------------------
def _failing_write(monkeypatch, when):
    """Makes tensor_bundle.write_all write half its buffer and fail when when(file) is true."""
    real = tensor_bundle.write_all

    def write_all(f, payload):
        if when(f):
            view = memoryview(payload).cast("B")
            f.write(view[:len(view) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        real(f, payload)
    monkeypatch.setattr(tensor_bundle, "write_all", write_all)


@pytest.mark.parametrize("failing_file", [".data-", ".index", "checkpoint."])
def test_crash_mid_save_keeps_previous_checkpoint(tmp_path, monkeypatch, failing_file):
    with tf.Graph().as_default():
        v = tf.Variable(np.arange(100, dtype=np.float32), name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            good = saver.save(sess, str(tmp_path / "m"), global_step=1)
            state_before = (tmp_path / "checkpoint").read_bytes()
            sess.run(v.assign_add(np.ones(100, np.float32)))
            _failing_write(monkeypatch, lambda f: failing_file in os.path.basename(f.name))
            with pytest.raises(errors.ResourceExhaustedError, match="No space left"):
                saver.save(sess, str(tmp_path / "m"), global_step=2)
            monkeypatch.undo()
            assert not [n for n in os.listdir(tmp_path) if "tempstate" in n]
            assert (tmp_path / "checkpoint").read_bytes() == state_before
            assert tf.train.latest_checkpoint(str(tmp_path)) == good
            if failing_file != "checkpoint.":
                assert not tf.train.checkpoint_exists(str(tmp_path / "m-2"))
            saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
            np.testing.assert_array_equal(sess.run(v), np.arange(100, dtype=np.float32))


# -- sharded savers --------------------------------------------------------------------------------
def test_sharded_save_places_a_saver_per_device(tmp_path):
    config = tf.ConfigProto(device_count={"CPU": 2})

    def build():
        with tf.device("/job:localhost/replica:0/task:0/cpu:0"):
            a = tf.Variable(np.arange(4, dtype=np.float32), name="a")
        with tf.device("/job:localhost/replica:0/task:0/cpu:1"):
            b = tf.Variable(np.ones((2, 2)), name="b")
        return a, b

    with tf.Graph().as_default() as g:
        a, b = build()
        saver = tf.train.Saver(sharded=True)
        assert saver.saver_def.sharded and saver.saver_def.save_tensor_name == "save/Identity:0"
        save_ops = [op for op in g.get_operations() if op.type == "SaveV2"]
        assert len(save_ops) == 2
        assert {op.inputs[3].op.name for op in save_ops} == {"a", "b"}
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(a.assign([4.0, 3.0, 2.0, 1.0]))
            path = saver.save(sess, str(tmp_path / "m"), global_step=7, write_meta_graph=False)
    assert _listing(tmp_path) == ["checkpoint", "m-7.data-00000-of-00002",
                                  "m-7.data-00001-of-00002", "m-7.index"]
    with tf.Graph().as_default():
        a, b = build()
        saver = tf.train.Saver(sharded=True)
        with tf.Session(config=config) as sess:
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(a), [4.0, 3.0, 2.0, 1.0])
            np.testing.assert_array_equal(sess.run(b), np.ones((2, 2)))
    # A sharded checkpoint restores with a plain Saver as well.
    with tf.Graph().as_default():
        a, b = build()
        with tf.Session(config=config) as sess:
            tf.train.Saver().restore(sess, path)
            np.testing.assert_array_equal(sess.run(b), np.ones((2, 2)))


# -- reading checkpoints directly ------------------------------------------------------------------
def test_checkpoint_reader_api(tmp_path):
    path, values = _saved(tmp_path)
    reader = tf.train.NewCheckpointReader(path)
    assert reader.has_tensor("layer1/weights") and not reader.has_tensor("nope")
    np.testing.assert_array_equal(reader.get_tensor("layer1/weights"), values[0])
    assert reader.get_variable_to_shape_map() == {"layer1/weights": [2, 3], "layer1/biases": [],
                                                  "steps": [3], "count": []}
    assert reader.get_variable_to_dtype_map()["steps"] is tf.int64
    with pytest.raises(errors.NotFoundError, match="Key nope not found in checkpoint"):
        reader.get_tensor("nope")
    assert tf.train.load_variable(str(tmp_path), "count:0") == values[3]
    assert [n for n, _ in tf.train.list_variables(str(tmp_path))] == \
        ["count", "layer1/biases", "layer1/weights", "steps"]
    with pytest.raises(errors.NotFoundError, match="Failed to find any matching files"):
        tf.train.NewCheckpointReader(str(tmp_path / "missing"))
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.list_variables(str(tmp_path / "emptydir"))


# -- the file format, checked against TensorFlow's protos and table layout -------------------------
def _bundle_entry_class():
    """BundleEntryProto as TensorFlow defines it (tensor_bundle.proto), built with protobuf."""
    pool = descriptor_pool.DescriptorPool()
    shape_file = descriptor_pb2.FileDescriptorProto()
    tensor_shape_pb2.DESCRIPTOR.CopyToProto(shape_file)
    pool.Add(shape_file)
    f = descriptor_pb2.FileDescriptorProto(name="tensor_bundle_test.proto", package="tensorflow",
                                           syntax="proto3", dependency=[shape_file.name])
    m = f.message_type.add(name="BundleEntryProto")
    T = descriptor_pb2.FieldDescriptorProto
    shape_type = "." + tensor_shape_pb2.TensorShapeProto.DESCRIPTOR.full_name
    for name, number, kind, type_name in (
            ("dtype", 1, T.TYPE_INT32, None), ("shape", 2, T.TYPE_MESSAGE, shape_type),
            ("shard_id", 3, T.TYPE_INT32, None), ("offset", 4, T.TYPE_INT64, None),
            ("size", 5, T.TYPE_INT64, None), ("crc32c", 6, T.TYPE_FIXED32, None)):
        field = m.field.add(name=name, number=number, type=kind, label=T.LABEL_OPTIONAL)
        if type_name:
            field.type_name = type_name
    pool.Add(f)
    entry = pool.FindMessageTypeByName("tensorflow.BundleEntryProto")
    return message_factory.GetMessageClass(entry)


def test_index_file_is_a_leveldb_table_of_bundle_entries(tmp_path):
    prefix = str(tmp_path / "m")
    values = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b/c": np.float64(2.5),
              "s": np.array([b"x", b"hello"], dtype=object)}
    tensor_bundle.write_bundle(prefix, list(values.items()))
    raw = (tmp_path / "m.index").read_bytes()
    assert struct.unpack("<Q", raw[-8:])[0] == 0xDB4775248B80FB57
    items = tensor_bundle.read_table(raw, "m.index")
    assert [k for k, _ in items] == [b"", b"a", b"b/c", b"s"]
    Entry = _bundle_entry_class()
    data = (tmp_path / "m.data-00000-of-00001").read_bytes()
    a = Entry.FromString(items[1][1])
    assert (a.dtype, [d.size for d in a.shape.dim], a.offset, a.size) == (1, [2, 3], 0, 24)
    assert data[:24] == values["a"].tobytes()
    assert _encoding.unmask_crc(a.crc32c) == _encoding.crc32c(data[:24])
    b = Entry.FromString(items[2][1])
    assert (b.dtype, list(b.shape.dim), b.offset, b.size) == (2, [], 24, 8)
    assert struct.unpack("<d", data[24:32])[0] == 2.5
    s = Entry.FromString(items[3][1])
    assert s.dtype == 7 and data[32:34] == b"\x01\x05" and data[-6:] == b"xhello"
    # Header: num_shards 1, little endian, version producer 1.
    assert items[0][1] == b"\x08\x01\x1a\x02\x08\x01"


def test_large_index_spans_several_blocks(tmp_path):
    prefix = str(tmp_path / "big")
    rng = np.random.RandomState(0)
    names = [rng.bytes(30).hex() for _ in range(4000)]   # little prefix sharing
    tensor_bundle.write_bundle(prefix, [(n, np.array([i], np.int32)) for i, n in enumerate(names)])
    raw = (tmp_path / "big.index").read_bytes()
    assert len(raw) > 262144   # more than one 256 KiB data block
    reader = tensor_bundle.BundleReader(prefix)
    assert sorted(reader.entries) == sorted(names)
    assert reader.read(names[3999])[0] == 3999 and reader.read(names[0])[0] == 0


def test_crc32c_matches_known_values():
    assert _encoding.crc32c(b"123456789") == 0xE3069283
    assert _encoding.crc32c(b"") == 0
    data = np.random.RandomState(0).bytes(1000)
    assert _encoding.crc32c_extend(_encoding.crc32c(data[:333]), data[333:]) == \
        _encoding.crc32c(data)
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    for n in (0, 7, 63, 64, 65, 1000):
        assert _encoding.masked_crc32c(data[:n]) == masked_crc32c(data[:n])


def test_meta_graph_file(tmp_path):
    with tf.Graph().as_default():
        _model()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, str(tmp_path / "m"), global_step=1)
            saver.save(sess, str(tmp_path / "m"), global_step=2)
            tf.constant(1.0, name="added_later")
            saver.save(sess, str(tmp_path / "m"), global_step=3)
    meta = meta_graph_pb2.MetaGraphDef.FromString((tmp_path / "m-1.meta").read_bytes())
    assert (tmp_path / "m-2.meta").read_bytes() == (tmp_path / "m-1.meta").read_bytes()
    later = meta_graph_pb2.MetaGraphDef.FromString((tmp_path / "m-3.meta").read_bytes())
    assert "added_later" in {n.name for n in later.graph_def.node}
    assert "added_later" not in {n.name for n in meta.graph_def.node}
    assert meta.saver_def.restore_op_name == "save/restore_all"
    names = {n.name: n for n in meta.graph_def.node}
    assert names["layer1/weights"].op == "VariableV2"
    assert names["save/SaveV2"].input[0] == "save/Const"
    assert len(meta.collection_def["variables"].bytes_list.value) == 4
    assert meta.collection_def["trainable_variables"].bytes_list.value
