"""Random ops: distributions, dtypes, TF1 seed semantics, per-session streams, errors."""
import time

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework.errors import InvalidArgumentError


def draw(tensors, runs=1, graph=None):
    with tf.Session(graph=graph) as sess:
        return [sess.run(tensors) for _ in range(runs)]


def build_graph(seed=None, op_seed=None):
    g = tf.Graph()
    with g.as_default():
        if seed is not None:
            tf.set_random_seed(seed)
        tf.constant(1.0)                      # ops before the random ones shift op ids
        ops = [tf.random_uniform([4], seed=op_seed), tf.random_normal([3], seed=op_seed),
               tf.truncated_normal([3], seed=op_seed),
               tf.random_uniform([5], 0, 100, dtype=tf.int32, seed=op_seed)]
    return g, ops


def assert_runs_equal(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def assert_runs_differ(a, b):
    for x, y in zip(a, b):
        assert not np.array_equal(x, y)


# -- seeds -----------------------------------------------------------------------------------------------
def test_graph_seed_makes_programs_reproducible():
    g1, ops1 = build_graph(seed=1234)
    g2, ops2 = build_graph(seed=1234)
    assert_runs_equal(draw(ops1, graph=g1)[0], draw(ops2, graph=g2)[0])
    g3, ops3 = build_graph(seed=4321)
    assert_runs_differ(draw(ops1, graph=g1)[0][:3], draw(ops3, graph=g3)[0][:3])


def test_op_seed_alone_is_reproducible_and_ops_with_graph_seed_differ():
    g1, ops1 = build_graph(op_seed=7)
    g2, ops2 = build_graph(op_seed=7)
    assert_runs_equal(draw(ops1, graph=g1)[0], draw(ops2, graph=g2)[0])
    with tf.Graph().as_default() as g:
        tf.set_random_seed(5)
        a, b = tf.random_uniform([6]), tf.random_uniform([6])   # op seeds from their op ids
    va, vb = draw([a, b], graph=g)[0]
    assert not np.array_equal(va, vb)


def test_get_seed_follows_tensorflow():
    with tf.Graph().as_default() as g:
        assert tf.get_seed(None) == (None, None)
        assert tf.get_seed(3) == (87654321, 3)
        tf.set_random_seed(10)
        tf.constant(0)
        assert tf.get_seed(None) == (10, g._last_id)
        assert tf.get_seed(3) == (10, 3)
        tf.set_random_seed(0)
        assert tf.get_seed(0) == (0, 2 ** 31 - 1)
        r = tf.random_uniform([1], seed=0)
        assert (r.op.get_attr("seed"), r.op.get_attr("seed2")) == (0, 2 ** 31 - 1)


def test_runs_continue_the_stream_and_a_new_session_repeats_it():
    g, ops = build_graph(seed=99)
    first = draw(ops, runs=2, graph=g)
    assert_runs_differ(first[0][:3], first[1][:3])
    again = draw(ops, runs=2, graph=g)
    assert_runs_equal(first[0], again[0])
    assert_runs_equal(first[1], again[1])


def test_stream_is_shared_by_every_plan_of_a_session():
    with tf.Graph().as_default() as g:
        tf.set_random_seed(3)
        r = tf.random_uniform([3])
        other = r * 2.0
    with tf.Session(graph=g) as sess:
        a = sess.run(r)
        b, _ = sess.run([r, other])       # a different plan draws the next values
    with tf.Session(graph=g) as sess:
        a2, b2 = sess.run(r), sess.run(r)
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(b, b2)
    assert not np.array_equal(a, b)


def test_without_seeds_sessions_differ():
    r = tf.random_uniform([8])
    assert not np.array_equal(draw(r)[0], draw(r)[0])


def test_stateful_and_not_differentiable():
    x = tf.placeholder(tf.float32, [3])
    r = tf.random_uniform([3]) + x
    for op in tf.get_default_graph().get_operations():
        if op.type == "RandomUniform":
            assert op.op_def.stateful
    (g,) = tf.gradients(r, x)
    assert g is not None
    assert tf.gradients(tf.random_normal([2], mean=x[0]), x)[0] is not None


# -- distributions ---------------------------------------------------------------------------------------
def test_random_uniform_float_range_dtype_and_names():
    r = tf.random_uniform([2000], -3.0, 5.0, dtype=tf.float64)
    assert r.dtype is tf.float64 and r.shape == [2000] and r.op.name == "random_uniform"
    (v,) = draw(r)
    assert v.dtype == np.float64 and v.min() >= -3.0 and v.max() < 5.0
    assert abs(v.mean() - 1.0) < 0.3
    plain = tf.random_uniform([3, 2], name="u")
    assert plain.op.type == "RandomUniform" and plain.op.name == "u"
    (p,) = draw(plain)
    assert p.dtype == np.float32 and p.shape == (3, 2) and 0 <= p.min() and p.max() < 1
    h = draw(tf.random_uniform([1000], dtype=tf.float16))[0]
    assert h.dtype == np.float16 and h.max() < 1.0


def test_random_uniform_int():
    r = tf.random_uniform([5000], 3, 7, dtype=tf.int32)
    assert r.dtype is tf.int32 and r.op.type == "RandomUniformInt"
    (v,) = draw(r)
    assert v.dtype == np.int32 and set(np.unique(v)) == {3, 4, 5, 6}
    assert draw(tf.random_uniform([2], 0, 2 ** 40, dtype=tf.int64))[0].dtype == np.int64
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
        tf.random_uniform([2], dtype=tf.int32)
    with pytest.raises(ValueError, match="Need minval < maxval: 5 >= 5"):
        tf.random_uniform([2], 5, 5, dtype=tf.int32)
    hi = tf.placeholder(tf.int32, [])
    late = tf.random_uniform([2], 5, hi, dtype=tf.int32)
    with pytest.raises(InvalidArgumentError, match="Need minval < maxval: 5 >= 2"):
        with tf.Session() as sess:
            sess.run(late, {hi: 2})


def test_random_uniform_dynamic_shape_and_tensor_bounds():
    n = tf.placeholder(tf.int32, [])
    lo = tf.placeholder(tf.float32, [])
    r = tf.random_uniform(tf.stack([n, 2]), lo, lo + 1.0)
    assert r.shape.as_list() == [None, 2]
    with tf.Session() as sess:
        v = sess.run(r, {n: 300, lo: 10.0})
    assert v.shape == (300, 2) and v.min() >= 10.0 and v.max() < 11.0


def test_random_normal_statistics():
    (v,) = draw(tf.random_normal([20000], mean=2.0, stddev=3.0, seed=1))
    assert abs(v.mean() - 2.0) < 0.1 and abs(v.std() - 3.0) < 0.1
    with pytest.raises(ValueError, match="Invalid dtype"):
        tf.random_normal([2], dtype=tf.int32)


def test_truncated_normal_bounds_and_statistics():
    (v,) = draw(tf.truncated_normal([20000], mean=1.0, stddev=0.5, seed=2))
    assert v.min() >= 1.0 - 2 * 0.5 and v.max() <= 1.0 + 2 * 0.5
    # The standard normal truncated to [-2, 2] has standard deviation 0.8796.
    assert abs(v.std() / 0.5 - 0.8796) < 0.02 and abs(v.mean() - 1.0) < 0.02
    (w,) = draw(tf.truncated_normal([5000], dtype=tf.float64))
    assert w.dtype == np.float64 and np.abs(w).max() <= 2.0


def test_random_shuffle_permutes_rows():
    x = np.arange(20).reshape(10, 2)
    s = tf.random_shuffle(tf.constant(x), seed=4)
    assert s.shape == [10, 2]
    first, second = draw(s, runs=2)
    for v in (first, second):
        assert sorted(map(tuple, v.tolist())) == sorted(map(tuple, x.tolist()))
    assert not np.array_equal(first, second)


def test_multinomial_frequencies():
    probs = np.array([[0.2, 0.0, 0.8], [0.5, 0.5, 0.0]])
    with np.errstate(divide="ignore"):
        logits = np.log(probs).astype(np.float32)
    s = tf.multinomial(logits, 4000, seed=5)
    assert s.dtype is tf.int64 and s.shape == [2, 4000]
    (v,) = draw(s)
    f0 = np.bincount(v[0], minlength=3) / 4000
    f1 = np.bincount(v[1], minlength=3) / 4000
    np.testing.assert_allclose(f0, probs[0], atol=0.03)
    np.testing.assert_allclose(f1, probs[1], atol=0.03)
    assert f0[1] == 0 and f1[2] == 0


def test_batch_sampling_pipeline_is_cheap():
    images = tf.constant(np.random.rand(1500, 64).astype(np.float32))
    labels = tf.constant(np.arange(1500, dtype=np.int32))
    index = tf.random_uniform([100], 0, 1500, dtype=tf.int32)
    batch = [tf.gather(images, index), tf.gather(labels, index)]
    with tf.Session() as sess:
        x, y = sess.run(batch)
        np.testing.assert_array_equal(x, sess.run(images)[y])
        start = time.perf_counter()
        for _ in range(500):
            sess.run(batch)
        per_step = (time.perf_counter() - start) / 500
    assert per_step < 2e-3, f"{per_step * 1e6:.0f} us per step"
