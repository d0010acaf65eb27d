"""Partitioned variables (TF 1.15): partitioners, ``get_variable(partitioner=...)``'s parts and
their names, reading them as one tensor (matmul, embedding lookups "mod" and "div"), their
optimizer slots, and checkpoints in TensorFlow's format for them (one tensor per variable,
saved in slices), both ways with a checkpoint TensorFlow wrote (tests/data/golden_partitioned.*,
made by tests/data/make_partitioned_golden.py from tests/partitioned_model.py's model); and
``tf.train.init_from_checkpoint``."""
import json
import os

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.train import tensor_bundle
from partitioned_model import build

pytestmark = pytest.mark.timeout(60)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
GOLDEN = os.path.join(DATA, "golden_partitioned")
with open(GOLDEN + ".json") as _f:
    TF = json.load(_f)
W = np.arange(40, dtype=np.float32).reshape(10, 4)     # the model's scope/w before training


def _variable_rows():
    return [[v.op.name, v.shape.as_list(),
             v._save_slice_info.full_name if v._save_slice_info else None,
             v._save_slice_info.spec if v._save_slice_info else None]
            for v in tf.global_variables()]


def _index_keys(prefix):
    with open(prefix + ".index", "rb") as f:
        return {k for k, _ in tensor_bundle.read_table(f.read(), prefix) if k}


@pytest.mark.parametrize("shape,dtype,fixed,min_max,axis_size", [
    # TensorFlow 2.21 (tf.compat.v1) printed these partitions.
    ([10, 4], tf.float32, [3, 1], [3, 1], [3, 1]),
    ([7], tf.float32, [3], [1], [1]),
    ([1000, 64], tf.float32, [3, 1], [4, 1], [1000, 1]),
    ([3, 5], tf.float64, [3, 1], [2, 1], [3, 1]),
])
def test_partitioners_are_tensorflows(shape, dtype, fixed, min_max, axis_size):
    shape = tf.TensorShape(shape)
    assert tf.fixed_size_partitioner(3)(shape=shape, dtype=dtype) == fixed
    assert tf.min_max_variable_partitioner(max_partitions=4, min_slice_size=64)(
        shape=shape, dtype=dtype) == min_max
    assert tf.variable_axis_size_partitioner(max_shard_bytes=64)(
        shape=shape, dtype=dtype) == axis_size
    # The canned estimators' partitioner without ps tasks: one part.
    assert tf.min_max_variable_partitioner(max_partitions=0, min_slice_size=64 << 20)(
        shape=shape, dtype=dtype) == [1] * len(shape)


def test_model_has_tensorflows_parts_lookups_and_checkpoint(tmp_path):
    with tf.Graph().as_default():
        model = build(tf)
        assert _variable_rows() == TF["variables"]
        w = model["w"]
        assert isinstance(w, tf.PartitionedVariable) and len(w) == 3
        assert w.name == "scope/w" and w.get_shape().as_list() == [10, 4]
        whole = w.as_tensor()       # the model's matmul made the first: "scope/w"
        assert whole.op.name == "scope/w_1" and whole.op.type == "Identity"
        assert whole.op.inputs[0].op.name == "scope/w/ConcatPartitions/concat_1"
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(whole), W)
            e_mod, e_div = sess.run([model["e_mod"], model["e_div"]])
            assert e_mod.tolist() == TF["e_mod"] and e_div.tolist() == TF["e_div"]
            sess.run(model["train"])
            prefix = saver.save(sess, str(tmp_path / "model"), write_meta_graph=False)
    assert [list(x) for x in tf.train.list_variables(prefix)] == TF["list_variables"]
    reader = tf.train.load_checkpoint(prefix)
    for name, _ in TF["list_variables"]:
        np.testing.assert_allclose(reader.get_tensor(name), TF["saved"][name], atol=1e-6)
    # Each part is stored under TensorFlow's key for its slice (ordered code), byte for byte.
    assert _index_keys(prefix) == _index_keys(GOLDEN)


def test_tensorflows_checkpoint_restores_into_any_partitioning():
    with tf.Graph().as_default():
        model = build(tf)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, GOLDEN)
            np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(model["w"])),
                                          TF["saved"]["scope/w"])
            slots = [v for v in tf.global_variables() if v.op.name.startswith("scope/w/part")
                     and v.op.name.endswith("Adagrad")]
            np.testing.assert_array_equal(np.concatenate(sess.run(slots)),
                                          TF["saved"]["scope/w/Adagrad"])
    # Cut in 4 parts instead of 3, and not cut at all: the slices are assembled and recut.
    with tf.Graph().as_default():
        with tf.variable_scope("scope", partitioner=tf.fixed_size_partitioner(4)):
            w4 = tf.get_variable("w", [10, 4])
        big = tf.get_variable("big", [200, 2])
        with tf.Session() as sess:
            tf.train.Saver([w4, big]).restore(sess, GOLDEN)
            assert [p.shape.as_list() for p in w4] == [[3, 4], [3, 4], [2, 4], [2, 4]]
            np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(w4)),
                                          TF["saved"]["scope/w"])
            np.testing.assert_array_equal(sess.run(big), TF["saved"]["big"])


def test_a_whole_tensor_restores_into_parts_and_slots_follow_their_parts(tmp_path):
    with tf.Graph().as_default():
        b = tf.get_variable("b", [5, 2], initializer=tf.constant_initializer(
            np.arange(10, dtype=np.float32).reshape(5, 2)))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = tf.train.Saver().save(sess, str(tmp_path / "whole"))
    with tf.Graph().as_default():
        b = tf.get_variable("b", [5, 2], partitioner=tf.fixed_size_partitioner(2))
        loss = tf.reduce_sum(tf.matmul(tf.ones([1, 5]), b))
        train = tf.train.AdamOptimizer(0.1).minimize(loss)
        names = [v.op.name for v in tf.global_variables()]
        assert names[:2] == ["b/part_0", "b/part_1"]
        assert {"b/part_0/Adam", "b/part_0/Adam_1", "b/part_1/Adam", "b/part_1/Adam_1"} <= \
            set(names)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver([b]).restore(sess, prefix)
            assert [sess.run(p).tolist() for p in b] == [[[0, 1], [2, 3], [4, 5]],
                                                         [[6, 7], [8, 9]]]
            sess.run(train)
            saved = tf.train.Saver().save(sess, str(tmp_path / "parts"))
    names = dict(tf.train.list_variables(saved))
    assert names["b"] == [5, 2] and names["b/Adam"] == [5, 2] and names["b/Adam_1"] == [5, 2]
    np.testing.assert_allclose(tf.train.load_variable(saved, "b"),
                               np.arange(10).reshape(5, 2) - 0.1, atol=1e-5)


def test_get_variable_partitioning_rules_and_errors():
    seen = []

    def initializer(shape, dtype=None, partition_info=None):
        seen.append((shape, partition_info.full_shape, partition_info.var_offset,
                     partition_info.single_offset(shape), partition_info.single_slice_dim(shape)))
        return tf.zeros(shape, dtype)

    with tf.Graph().as_default():
        with tf.variable_scope("s", partitioner=tf.fixed_size_partitioner(3, axis=1)):
            v = tf.get_variable("v", [2, 7], initializer=initializer)
            step = tf.get_variable("step", [], dtype=tf.int64)     # scalars are never cut
        assert seen == [([2, 3], [2, 7], [0, 0], 0, 1), ([2, 2], [2, 7], [0, 3], 3, 1),
                        ([2, 2], [2, 7], [0, 5], 5, 1)]
        assert [p.op.name for p in v] == ["s/v/part_0", "s/v/part_1", "s/v/part_2"]
        assert isinstance(step, tf.Variable) and step.op.name == "s/step"
        with tf.variable_scope("s", reuse=True):
            assert tf.get_variable("v") is v        # reused without the partitioner
            with pytest.raises(ValueError, match="specified partitions \\[2, 1\\] and found "
                                                 "partitions \\[1, 3\\]"):
                tf.get_variable("v", [2, 7], partitioner=tf.fixed_size_partitioner(2))
        with pytest.raises(ValueError, match="Partitioned variable with name s/v already "
                                             "exists"):
            with tf.variable_scope("s", partitioner=tf.fixed_size_partitioner(3, axis=1)):
                tf.get_variable("v", [2, 7])
        tf.get_variable("plain", [4])
        with pytest.raises(ValueError, match="unpartitioned version of the variable was "
                                             "found: plain"):
            tf.get_variable("plain", [4], partitioner=tf.fixed_size_partitioner(2))
        with pytest.raises(ValueError, match="Can only slice a variable along one dimension"):
            tf.get_variable("two_axes", [4, 4], partitioner=lambda shape, dtype: [2, 2])
        with pytest.raises(ValueError, match="must be fully defined"):
            tf.get_variable("unknown", [None, 4], partitioner=tf.fixed_size_partitioner(2))
        with pytest.raises(NotImplementedError, match="used as a reference"):
            tf.convert_to_tensor(v, as_ref=True)
        # From a value, each part gets its slice; assign splits a value over the parts.
        c = tf.get_variable("c", initializer=tf.constant(W),
                            partitioner=tf.fixed_size_partitioner(4))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(c)), W)
            sess.run(tf.assign(c, -W))
            np.testing.assert_array_equal(sess.run(tf.concat(list(c), 0)), -W)


def test_meta_graph_keeps_the_parts_slices(tmp_path):
    with tf.Graph().as_default():
        tf.get_variable("w", [6, 2], partitioner=tf.fixed_size_partitioner(2))
        meta = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        tf.train.import_meta_graph(meta)
        assert [(v.op.name, v._save_slice_info.full_name, v._save_slice_info.spec)
                for v in tf.global_variables()] == [("w/part_0", "w", "6 2 0,3:0,2"),
                                                    ("w/part_1", "w", "6 2 3,3:0,2")]


def test_init_from_checkpoint_maps_scopes_and_parts():
    with tf.Graph().as_default():
        with tf.variable_scope("new", partitioner=tf.fixed_size_partitioner(4)):
            w = tf.get_variable("w", [10, 4])
        b = tf.get_variable("bias", [4])
        big = tf.get_variable("big", [200, 2], partitioner=tf.fixed_size_partitioner(3))
        untouched = tf.get_variable("untouched", [2], initializer=tf.ones_initializer())
        tf.train.init_from_checkpoint(GOLDEN, {"scope/": "new/", "b": b, "big": "big"})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(w)),
                                          TF["saved"]["scope/w"])
            np.testing.assert_array_equal(sess.run(b), TF["saved"]["b"])
            np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(big)),
                                          TF["saved"]["big"])
            assert sess.run(untouched).tolist() == [1, 1]
        with pytest.raises(ValueError, match="Tensor nope is not found in"):
            tf.train.init_from_checkpoint(GOLDEN, {"nope": b})
        with pytest.raises(ValueError, match=r"Shape of variable untouched:0 \(\(2,\)\) "
                                             r"doesn't match with shape of tensor b"):
            tf.train.init_from_checkpoint(GOLDEN, {"b": untouched})
        with pytest.raises(ValueError, match=r"Tensor other/w \(w in other/\) is not found"):
            tf.train.init_from_checkpoint(GOLDEN, {"other/": "new/"})
        with pytest.raises(ValueError, match="should map to scope only scope"):
            tf.train.init_from_checkpoint(GOLDEN, {"scope": "new/"})


def test_embedding_column_starts_from_a_checkpoint(tmp_path):
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    with tf.Graph().as_default():
        tf.get_variable("emb", initializer=tf.constant(table))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = tf.train.Saver().save(sess, str(tmp_path / "emb"))
    with tf.Graph().as_default():
        ids = tf.feature_column.categorical_column_with_identity("id", num_buckets=6)
        column = tf.feature_column.embedding_column(ids, 2, combiner="sum",
                                                    ckpt_to_load_from=prefix,
                                                    tensor_name_in_ckpt="emb")
        with tf.variable_scope("dnn", partitioner=tf.fixed_size_partitioner(2)):
            net = tf.feature_column.input_layer(
                {"id": tf.constant([[1, 4], [5, 0]], tf.int64)}, [column])
        assert [v.op.name for v in tf.global_variables()] == [
            "dnn/input_layer/id_embedding/embedding_weights/part_0",
            "dnn/input_layer/id_embedding/embedding_weights/part_1"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(net), [table[1] + table[4],
                                                          table[5] + table[0]])


def test_sharded_save_merges_the_parts_of_one_variable(tmp_path):
    # Parts on two devices: each device's shard holds some slices of "w"; the merged index
    # lists all of them under "w", as TensorFlow's MergeV2Checkpoints does.
    with tf.Graph().as_default():
        devices = iter(["/cpu:0", "/cpu:1", "/cpu:0"])
        with tf.device(lambda op: next(devices) if op.type == "VariableV2" else op.device):
            w = tf.get_variable("w", initializer=tf.constant(W[:6]),
                                partitioner=tf.fixed_size_partitioner(3))
        assert [p.device for p in w] == ["/device:CPU:0", "/device:CPU:1", "/device:CPU:0"]
        with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
            sess.run(tf.global_variables_initializer())
            prefix = tf.train.Saver(sharded=True).save(sess, str(tmp_path / "model"))
    assert os.path.exists(prefix + ".data-00001-of-00002")
    assert tf.train.list_variables(prefix) == [("w", [6, 4])]
    np.testing.assert_array_equal(tf.train.load_variable(prefix, "w"), W[:6])


def test_variance_scaling_parts_scale_by_the_whole_variable():
    # glorot_uniform's limit is sqrt(6 / (fan_in + fan_out)) of the full [1000, 10] variable:
    # 0.0771; a part scaled by its own [500, 10] shape would reach 0.108.
    with tf.Graph().as_default():
        v = tf.get_variable("v", [1000, 10], partitioner=tf.fixed_size_partitioner(2))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(tf.convert_to_tensor(v))
    limit = np.sqrt(6 / 1010)
    assert np.abs(values).max() <= limit and np.abs(values).max() > 0.95 * limit


def test_lookups_give_each_part_a_sparse_gradient_of_its_rows():
    with tf.Graph().as_default():
        w = tf.get_variable("w", [10, 4], partitioner=tf.fixed_size_partitioner(3))
        ids = tf.constant([0, 3, 9, 3])
        rows = tf.nn.embedding_lookup(w, ids, partition_strategy="div")
        grads = tf.gradients(tf.reduce_sum(rows), list(w))
        assert all(isinstance(g, tf.IndexedSlices) for g in grads)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([(g.indices, g.values) for g in grads])
    # "div": parts of rows 0-3, 4-6, 7-9; id 9 is row 2 of the last part.
    assert [sorted(indices.tolist()) for indices, _ in got] == [[0, 3, 3], [], [2]]
    assert all((values == 1).all() for _, values in got)


def test_each_part_is_looked_up_and_updated_on_its_ps_task():
    # As TensorFlow: one gather per part, placed with it; only ids and found rows travel.
    with tf.Graph().as_default() as graph:
        with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
            w = tf.get_variable("w", [10, 4], partitioner=tf.fixed_size_partitioner(3))
            rows = tf.nn.embedding_lookup(w, tf.constant([1, 2]))
            tf.train.AdagradOptimizer(0.1).minimize(tf.reduce_sum(rows))
        assert [p.device for p in w] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
        reads = {op.inputs[0].op.name: op.device for op in graph.get_operations()
                 if op.type == "GatherV2" and op.inputs[0].op.name.startswith("w/part_")}
        assert reads == {"w/part_0/read": "/job:ps/task:0", "w/part_1/read": "/job:ps/task:1",
                         "w/part_2/read": "/job:ps/task:0"}
        assert [op.device for op in graph.get_operations() if op.type == "SparseApplyAdagrad"] \
            == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
