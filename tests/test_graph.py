import numpy as np
import pytest

import tfjupyter as tf


def test_names_are_unique_and_scoped():
    a = tf.constant(1.0, name="a")
    a1 = tf.constant(1.0, name="a")
    with tf.name_scope("layer") as scope:
        b = tf.constant(2.0, name="b")
        assert scope == "layer/"
    with tf.name_scope("layer") as scope2:
        c = tf.constant(2.0, name="b")
    assert (a.name, a1.name, b.name, c.name) == ("a:0", "a_1:0", "layer/b:0", "layer_1/b:0")
    assert scope2 == "layer_1/"


def test_lookup_by_name():
    g = tf.get_default_graph()
    a = tf.constant([1.0, 2.0], name="a")
    c = tf.add(a, a, name="c")
    assert g.get_tensor_by_name("c:0") is c
    assert g.get_operation_by_name("c") is c.op
    with pytest.raises(KeyError, match="does not exist"):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(KeyError, match="only has 1 outputs"):
        g.get_tensor_by_name("c:1")
    with pytest.raises(ValueError, match="Tensor names must be"):
        g.get_tensor_by_name("c")


def test_operation_and_tensor_properties():
    a = tf.constant([[1.0, 2.0]], name="a")
    b = tf.placeholder(tf.float32, [None, 2], name="b")
    c = tf.add(a, b, name="sum")
    assert c.name == "sum:0" and c.op.type == "Add" and c.dtype is tf.float32
    assert c.get_shape().as_list() == [None, 2]
    assert list(c.op.inputs) == [a, b] and c.op.outputs == [c]
    assert a.consumers() == [c.op]
    assert str(c.shape) == "(?, 2)"


def test_graph_isolation_and_cross_graph_error():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.constant(1.0)
    with g2.as_default():
        b = tf.constant(1.0)
        with pytest.raises(ValueError, match="same graph"):
            tf.add(a, b)
    assert tf.get_default_graph() is not g1


def test_finalize():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0)
        g.finalize()
        with pytest.raises(RuntimeError, match="finalized"):
            tf.constant(2.0)


def test_collections_filtered_by_scope():
    tf.add_to_collection("losses", tf.constant(1.0, name="x"))
    with tf.name_scope("GPU_0"):
        tf.add_to_collection("losses", tf.constant(2.0, name="y"))
    assert len(tf.get_collection("losses")) == 2
    assert [t.name for t in tf.get_collection("losses", "GPU_0")] == ["GPU_0/y:0"]
    ref = tf.get_collection_ref("losses")
    ref.clear()
    assert tf.get_collection("losses") == []


def test_control_dependencies_and_group():
    v = tf.Variable(0.0, name="v")
    inc = v.assign_add(1.0)
    with tf.control_dependencies([inc]):
        read = tf.identity(v.value())
    assert inc.op in read.op.control_inputs
    with tf.control_dependencies(None):
        free = tf.constant(0.0)
    assert free.op.control_inputs == []
    g = tf.group(inc, read, name="both")
    assert set(g.control_inputs) == {inc.op, read.op}
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(read)
        assert sess.run(v) == 1.0


def test_constant_shape_semantics():
    with tf.Session() as sess:
        assert sess.run(tf.constant([1.0, 2.0, 3.0], shape=[3])).tolist() == [1, 2, 3]
        assert sess.run(tf.constant(7, shape=[2, 2])).tolist() == [[7, 7], [7, 7]]
        assert sess.run(tf.constant([1, 2], shape=[2, 2])).tolist() == [[1, 2], [2, 2]]
        assert sess.run(tf.constant([1, 2, 3, 4], shape=[2, 2])).tolist() == [[1, 2], [3, 4]]
        assert sess.run(tf.constant("Hello")) == b"Hello"
    with pytest.raises(TypeError, match="Too many elements"):
        tf.constant([1, 2, 3], shape=[2])


def test_default_dtypes():
    assert tf.constant(1.0).dtype is tf.float32
    assert tf.constant(1).dtype is tf.int32
    assert tf.constant(True).dtype is tf.bool
    assert tf.constant(np.float64(1)).dtype is tf.float64
    assert tf.constant(np.zeros(2, np.int64)).dtype is tf.int64
    assert tf.constant([1, 2], dtype=tf.float16).dtype is tf.float16
    with pytest.raises(TypeError):
        tf.constant(1.5, dtype=tf.int32)


def test_tensor_not_bool():
    with pytest.raises(TypeError, match="bool"):
        bool(tf.constant(1.0))
