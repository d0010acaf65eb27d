"""tf.py_func / tf.numpy_function, against TensorFlow's documented behaviour (and TF 2.21's
messages, which these were checked against): numpy values in and out, exact dtypes, TF's
error mapping, the function's lifetime, not differentiable, and only in its own process."""
import gc

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.ops import script_ops

from cluster_util import TaskProcesses, loopback_cluster, token_env  # noqa: F401


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_a_numpy_function_computes_on_fed_values():
    x = tf.placeholder(tf.float64, [None, 3])
    y = tf.py_func(np.sinh, [x], tf.float64)
    value = np.array([[0.0, 0.5, -1.0], [2.0, 3.0, 4.0]])
    assert y.dtype == tf.float64 and y.shape.ndims is None
    np.testing.assert_array_equal(run(y, {x: value}), np.sinh(value))
    # numpy_function is the same op; its outputs feed ordinary ops.
    z = tf.numpy_function(lambda a, b: (a * b).astype(np.float32), [x, 2.0], tf.float32) + 1.0
    np.testing.assert_allclose(run(z, {x: value}), value * 2 + 1, rtol=1e-6)


def test_several_outputs_none_and_scalars_come_back_as_tensorflow_returns_them():
    def split(v):
        return v.min(), v.max(), np.array([b"lo", b"hi"])
    lo, hi, names = tf.py_func(split, [tf.constant([3, 9, 4])], [tf.int32, tf.int32, tf.string])
    assert run([lo, hi, names])[:2] == [3, 9]
    assert list(run(names)) == [b"lo", b"hi"]
    assert type(run(lo)) is np.int32           # a 0-d value is fetched as a numpy scalar
    calls = []
    op = tf.py_func(lambda: calls.append(1), [], [])
    assert isinstance(op, tf.Operation)        # Tout=[]: the op itself
    with tf.Session() as sess:
        for _ in range(3):
            sess.run(op)                       # stateful: runs every time
    assert len(calls) == 3


def test_inputs_are_numpy_values_that_the_function_cannot_change():
    seen = {}

    def look(scalar, vector, text):
        seen.update(scalar=type(scalar), vector=type(vector), text=text,
                    writeable=vector.flags.writeable)
        return vector.sum()
    v = tf.Variable([1.0, 2.0])
    total = tf.py_func(look, [tf.constant(2.0), v, tf.constant(["ab", "c"])], tf.float32)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(total) == 3.0
        assert seen["scalar"] is np.float32 and seen["vector"] is np.ndarray
        assert list(seen["text"]) == [b"ab", b"c"] and seen["writeable"] is False

        def scribble(x):
            x[0] = 100.0
            return x
        with pytest.raises(tf.errors.InvalidArgumentError, match="read-only"):
            sess.run(tf.py_func(scribble, [v], tf.float32))
        # A function handing its input back: the output is a copy, not the variable's buffer.
        same = sess.run(tf.py_func(lambda x: x, [v], tf.float32))
        sess.run(v.assign([5.0, 6.0]))
        np.testing.assert_array_equal(same, [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(v), [5.0, 6.0])


@pytest.mark.parametrize("returned, tout, message", [
    (lambda: np.float64(1.5), tf.float32, "0-th value returned by pyfunc_\\d+ is double, but expects float"),
    (lambda: 1.5, tf.float32, "is double, but expects float"),
    (lambda: 3, tf.int32, "is int64, but expects int32"),
    (lambda: "text", tf.float32, "is string, but expects float"),
    (lambda: [1.0, 2.0], tf.float32, "returns 2 values, but expects to see 1 values"),
    (lambda: None, [tf.float32], "returns 0 values, but expects to see 1 values"),
    (lambda: np.array([1, "x"], dtype=object), tf.string, "holds a int, but a string tensor holds bytes"),
])
def test_a_value_of_the_wrong_dtype_or_count_is_refused(returned, tout, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message) as info:
        run(tf.py_func(returned, [], tout, name="checked"))
    assert info.value.op.name == "checked"


@pytest.mark.parametrize("exception, error", [
    (ValueError("bad"), tf.errors.InvalidArgumentError),
    (TypeError("bad"), tf.errors.InvalidArgumentError),
    (StopIteration(), tf.errors.OutOfRangeError),
    (NotImplementedError("bad"), tf.errors.UnimplementedError),
    (MemoryError("bad"), tf.errors.ResourceExhaustedError),
    (KeyError("bad"), tf.errors.UnknownError),
    (RuntimeError("bad"), tf.errors.UnknownError),
])
def test_an_exception_fails_the_step_as_tensorflow_maps_it(exception, error):
    def failing(x):
        raise exception
    y = tf.py_func(failing, [tf.constant(1.0)], tf.float32, name="failing")
    with pytest.raises(error) as info:
        run(y)
    assert type(info.value) is error
    assert info.value.op.name == "failing"
    text = str(info.value)
    assert text.startswith(f"{type(exception).__name__}: ")
    assert "Traceback (most recent call last)" in text and "in failing" in text


def test_not_differentiable_and_stateless_is_its_own_op_type():
    x = tf.constant([1.0, 2.0])
    y = tf.py_func(np.square, [x], tf.float32, stateful=False)
    assert y.op.type == "PyFuncStateless" and tf.py_func(np.square, [x], tf.float32).op.type == "PyFunc"
    assert tf.gradients(y, x) == [None]


def test_bad_arguments_are_refused_when_the_op_is_built():
    with pytest.raises(TypeError, match="func must be callable"):
        tf.py_func(3, [], tf.float32)
    with pytest.raises(TypeError, match="inp must be a list"):
        tf.py_func(np.sin, tf.constant(1.0), tf.float32)


def test_the_function_lives_as_long_as_its_graph():
    gc.collect()
    before = len(script_ops.FUNCTIONS)
    graph = tf.Graph()
    with graph.as_default():
        tf.py_func(lambda: np.float32(1), [], tf.float32)
    assert len(script_ops.FUNCTIONS) == before + 1
    del graph
    gc.collect()
    assert len(script_ops.FUNCTIONS) == before


def test_on_a_task_of_another_process_it_fails_naming_the_op(token_env):  # noqa: F811
    cluster = loopback_cluster(ps=1)
    tasks = TaskProcesses(token_env)
    try:
        tasks.start(cluster, "ps", 0)
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                y = tf.py_func(lambda: np.float32(1), [], tf.float32, name="far_away")
            with tf.Session("grpc://" + cluster["ps"][0]) as sess:
                with pytest.raises(tf.errors.InvalidArgumentError,
                                   match="PyFunc 'far_away': no Python function for pyfunc_"):
                    sess.run(y)
            # On a device of this process (the client's own), the same graph runs it.
            with tf.device("/job:localhost/replica:0/task:0/cpu:0"):
                near = tf.py_func(lambda: np.float32(2), [], tf.float32)
            assert run(near) == 2.0
    finally:
        tasks.close()
