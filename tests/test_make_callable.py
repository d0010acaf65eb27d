"""Session.make_callable: fetch structures, feed_list order and names, options, errors."""
import collections

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework import errors


def test_fetch_structures_as_run_returns_them():
    a = tf.constant(1.0)
    b = tf.constant([2, 3])
    Pair = collections.namedtuple("Pair", "x y")
    with tf.Session() as sess:
        assert sess.make_callable(a)() == 1.0
        np.testing.assert_array_equal(sess.make_callable(b)(), [2, 3])
        got = sess.make_callable([a, (b, {"k": a})])()
        assert isinstance(got, list) and isinstance(got[1], tuple)
        assert got[0] == 1.0 and got[1][1] == {"k": 1.0}
        assert sess.make_callable(Pair(a, b))().x == 1.0
        assert sess.make_callable({"a": a, "b": b})()["a"] == 1.0
        assert sess.make_callable(tf.no_op())() is None
        assert sess.make_callable(a.name)() == 1.0   # fetches by name, as run()


def test_each_call_runs_the_step():
    v = tf.Variable(0, name="v")
    inc = tf.assign_add(v, 1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        step = sess.make_callable(inc)
        assert [step() for _ in range(3)] == [1, 2, 3]
        assert sess.run(v) == 3


def test_feed_list_values_are_positional_in_its_order():
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.placeholder(tf.float32, [None], name="y")
    out = x - tf.reduce_sum(y)
    with tf.Session() as sess:
        # feed_list in the opposite order of the graph's: the arguments follow feed_list
        f = sess.make_callable(out, [y, x])
        assert f([1.0, 2.0], 10.0) == 7.0
        assert f(np.array([4.0], np.float32), 1.0) == -3.0
        by_name = sess.make_callable([out, x], ["x:0", "y:0"])
        assert by_name(5.0, [1.0]) == [4.0, 5.0]


def test_feeds_are_checked_as_run_checks_them():
    x = tf.placeholder(tf.float32, [2])
    f = None
    with tf.Session() as sess:
        f = sess.make_callable(x * 2, [x])
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            f([1.0, 2.0, 3.0])
        with pytest.raises(errors.InvalidArgumentError, match="Expected 1 argument .* got 2"):
            f([1.0, 2.0], [3.0, 4.0])
        with pytest.raises(errors.InvalidArgumentError, match="Expected 1 argument .* got 0"):
            f()


def test_bad_feed_lists():
    x = tf.placeholder(tf.float32)
    other = tf.Graph()
    with other.as_default():
        foreign = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="`feed_list` must be a list or tuple"):
            sess.make_callable(x, x)
        with pytest.raises(ValueError, match="more than once"):
            sess.make_callable(x, [x, x])
        with pytest.raises(ValueError, match="not an element of this session's graph"):
            sess.make_callable(x, [foreign])
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key 'nope:0'"):
            sess.make_callable(x, ["nope:0"])
        with pytest.raises(TypeError, match="Fetch argument None"):
            sess.make_callable(None)


def test_options_only_with_accept_options():
    a = tf.constant(3.0) * 2
    with tf.Session() as sess:
        plain = sess.make_callable(a)
        with pytest.raises(TypeError):
            plain(options=tf.RunOptions())
        traced = sess.make_callable(a, accept_options=True)
        metadata = tf.RunMetadata()
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        assert traced(options=options, run_metadata=metadata) == 6.0
        assert metadata.step_stats is not None
        assert traced() == 6.0


def test_deadline_through_options():
    q = tf.FIFOQueue(1, tf.float32)
    deq = q.dequeue()
    with tf.Session() as sess:
        f = sess.make_callable(deq, accept_options=True)
        with pytest.raises(errors.DeadlineExceededError):
            f(options=tf.RunOptions(timeout_in_ms=100))


def test_closed_session():
    a = tf.constant(1)
    sess = tf.Session()
    f = sess.make_callable(a)
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        f()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.make_callable(a)


def test_counts_steps_as_run_does():
    a = tf.constant(1)
    with tf.Session() as sess:
        f = sess.make_callable(a)
        before = sess.steps
        f()
        f()
        assert sess.steps == before + 2
