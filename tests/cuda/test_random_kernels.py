"""GPU random kernels: distributions, seeding and reproducibility (the numbers differ from the
CPU kernels', which use another generator; their laws do not)."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework.errors import InvalidArgumentError

from gpu_compare import placements, run_on

N = 1500  # enough for 5-sigma bounds on the moments to be tight, cheap in the simulator


def draw(build, runs: int = 1, graph_seed=None):
    """``runs`` runs of ``build()`` on /gpu:0 in one fresh session; checks it ran there."""
    graph = tf.Graph()
    with graph.as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        with tf.device("/gpu:0"):
            fetches = build()
        with tf.Session() as sess:
            out = [sess.run(fetches) for _ in range(runs)]
            where = placements(sess)
    assert all("GPU" in d for d in where.values()), where
    return out


def assert_moments(x, mean, std):
    x = np.asarray(x, np.float64).reshape(-1)
    tol_mean = 5 * std / np.sqrt(x.size)
    assert abs(x.mean() - mean) < tol_mean, (x.mean(), mean)
    assert abs(x.std() - std) < 0.06 * std, (x.std(), std)


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64])
def test_uniform(dtype):
    (x, y), = draw(lambda: [tf.random_uniform([N], dtype=dtype, seed=1),
                            tf.random_uniform([2, 500], minval=-2.0, maxval=3.0, dtype=dtype, seed=2)])
    assert x.dtype == dtype.as_numpy_dtype and x.shape == (N,)
    assert x.min() >= 0 and x.max() < 1
    assert_moments(x, 0.5, np.sqrt(1 / 12))
    assert y.shape == (2, 500) and y.min() >= -2 and y.max() < 3
    assert_moments(y, 0.5, 5 * np.sqrt(1 / 12))


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64])
def test_normal_and_truncated_normal(dtype):
    (n, m, t), = draw(lambda: [tf.random_normal([N], dtype=dtype, seed=3),
                               tf.random_normal([N], mean=2.0, stddev=0.5, dtype=dtype, seed=4),
                               tf.truncated_normal([N], dtype=dtype, seed=5)])
    assert n.dtype == m.dtype == t.dtype == dtype.as_numpy_dtype
    assert_moments(n, 0.0, 1.0)
    assert_moments(m, 2.0, 0.5)
    # N(0, 1) conditioned on |x| <= 2: std 0.8796.
    assert np.abs(t).max() <= 2
    assert_moments(t, 0.0, 0.8796)
    if dtype != tf.float16:  # float16 has ~2000 values in [-2, 2]
        assert np.unique(t).size > 0.9 * N


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_uniform_int(dtype):
    (x, y), = draw(lambda: [tf.random_uniform([N], minval=-3, maxval=4, dtype=dtype, seed=6),
                            tf.random_uniform([2, 5], minval=2 ** 30, maxval=2 ** 31 - 1, dtype=dtype, seed=7)])
    assert x.dtype == dtype.as_numpy_dtype
    assert sorted(np.unique(x)) == list(range(-3, 4))
    counts = np.bincount(x + 3) / N
    assert np.all(np.abs(counts - 1 / 7) < 0.04), counts
    assert y.min() >= 2 ** 30 and y.max() < 2 ** 31 - 1


def test_uniform_int_needs_minval_below_maxval():
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        lo = tf.placeholder(tf.int32, [])
        x = tf.random_uniform([4], minval=lo, maxval=3, dtype=tf.int32, seed=1)
        with tf.Session() as sess:
            assert sess.run(x, {lo: 2}).tolist() == [2, 2, 2, 2]
            with pytest.raises(InvalidArgumentError, match="Need minval < maxval: 3 >= 3"):
                sess.run(x, {lo: 3})


def test_seeded_ops_repeat_in_a_fresh_session_and_advance_within_one():
    def build():
        return [tf.random_uniform([50], seed=11), tf.random_normal([7, 3], seed=11, dtype=tf.float64),
                tf.truncated_normal([40], seed=12), tf.random_uniform([9], maxval=100, dtype=tf.int64, seed=13)]
    first = draw(build, runs=2)
    again = draw(build, runs=2)
    for a, b in zip(first, again):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    for x, y in zip(first[0], first[1]):
        assert not np.array_equal(x, y)  # the second run continues the sequence


def test_seeds_pick_the_sequence_and_no_seed_is_random():
    a, = draw(lambda: tf.random_uniform([20], seed=1))
    b, = draw(lambda: tf.random_uniform([20], seed=2))
    c, = draw(lambda: tf.random_uniform([20]))
    d, = draw(lambda: tf.random_uniform([20]))
    assert not np.array_equal(a, b) and not np.array_equal(c, d)
    # A graph seed and no op seed: the op seed is the graph's op count, so it repeats.
    e, = draw(lambda: tf.random_uniform([20]), graph_seed=5)
    f, = draw(lambda: tf.random_uniform([20]), graph_seed=5)
    np.testing.assert_array_equal(e, f)


def test_shapes_scalar_empty_and_fed():
    def build():
        shape = tf.placeholder(tf.int32, [None])
        return [tf.random_uniform([], seed=1), tf.random_normal([0, 3], seed=2),
                tf.random_uniform(shape, seed=3)], {shape: [2, 0, 4]}
    (s, e, fed), = [run_on("/gpu:0", build)[0]]
    assert s.shape == () and 0 <= s < 1
    assert e.shape == (0, 3) and e.dtype == np.float32
    assert fed.shape == (2, 0, 4)


def test_dropout_runs_on_the_gpu():
    x = np.ones((40, 50), np.float32)
    (y, z), = draw(lambda: [tf.nn.dropout(tf.constant(x), keep_prob=0.25, seed=9),
                            tf.nn.dropout(tf.constant(x), rate=0.5, seed=10)])
    assert set(np.unique(y)) <= {0.0, 4.0} and set(np.unique(z)) <= {0.0, 2.0}
    assert abs((y > 0).mean() - 0.25) < 0.04 and abs((z > 0).mean() - 0.5) < 0.04
