"""Reduction and ArgMax/ArgMin GPU kernels against the CPU kernels: every axis subset of a 3-d
tensor, keep_dims, dtypes, empty inputs, runtime axes, and the split (two-pass) paths."""
import itertools

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.kernels.cuda import reduction_kernels

from gpu_compare import compare

RNG = np.random.RandomState(1)

REDUCE = {"sum": tf.reduce_sum, "mean": tf.reduce_mean, "max": tf.reduce_max,
          "min": tf.reduce_min, "prod": tf.reduce_prod}
SUBSETS = [None] + [list(c) for r in range(4) for c in itertools.combinations(range(3), r)]


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("name", sorted(REDUCE))
def test_every_axis_subset_of_a_3d_tensor(name, keep):
    x = RNG.uniform(0.5, 1.5, (2, 3, 4))
    fn = REDUCE[name]
    compare(lambda: [fn(tf.constant(x), axis=axes, keepdims=keep) for axes in SUBSETS],
            rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("keep", [False, True])
def test_all_and_any(keep):
    x = RNG.rand(2, 3, 4) > 0.3

    def build():
        t = tf.constant(x)
        return [f(t, axis=axes, keepdims=keep) for f in (tf.reduce_all, tf.reduce_any)
                for axes in SUBSETS]
    compare(build)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_integer_reductions(dtype):
    x = RNG.randint(-9, 10, (3, 5)).astype(dtype)

    def build():
        t = tf.constant(x)
        return [f(t, axis=a) for f in (tf.reduce_sum, tf.reduce_mean, tf.reduce_max,
                                       tf.reduce_min, tf.reduce_prod) for a in (None, 0, 1)]
    compare(build)


def test_float32_and_float16():
    x = RNG.uniform(-1, 1, (4, 40)).astype(np.float32)

    def build():
        t = tf.constant(x)
        h = tf.constant(x.astype(np.float16))
        return [tf.reduce_sum(t), tf.reduce_mean(t, 1), tf.reduce_max(t, 0),
                tf.reduce_sum(h, 1), tf.reduce_mean(h), tf.reduce_max(h, 1)]
    compare(build, rtol=2e-3, atol=2e-3)


def test_negative_axes_scalars_and_size_one_dims():
    x = RNG.uniform(-1, 1, (3, 1, 4))

    def build():
        t = tf.constant(x)
        s = tf.constant(2.5)
        return [tf.reduce_sum(t, -1), tf.reduce_max(t, [-3, -1], keepdims=True),
                tf.reduce_sum(t, 1), tf.reduce_mean(t, [1]), tf.reduce_sum(s), tf.reduce_max(s, []),
                tf.reduce_sum(t, []), tf.reduce_prod(tf.constant(x[:, :, :1]), [1, 2])]
    compare(build, rtol=1e-12)


def test_empty_reductions():
    def build():
        e = tf.constant(np.zeros((0, 3)))
        return [tf.reduce_sum(e, 0), tf.reduce_prod(e, 0), tf.reduce_max(e, 0), tf.reduce_min(e),
                tf.reduce_mean(e, 0), tf.reduce_sum(e, 1), tf.reduce_all(e > 0, 0),
                tf.reduce_any(e > 0), tf.reduce_max(tf.constant(np.zeros((0, 2), np.int64)), 0)]
    compare(build)


def test_nan_propagates_through_max_and_min():
    x = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 0.0]])
    compare(lambda: [f(tf.constant(x), a) for f in (tf.reduce_max, tf.reduce_min)
                     for a in (0, 1, None)])


def test_axes_fed_at_run_time():
    x = RNG.uniform(-1, 1, (2, 3, 4))

    def build():
        axes = tf.placeholder(tf.int32)
        t = tf.constant(x)
        return [tf.reduce_sum(t, axes), tf.reduce_max(t, axes, keepdims=True)], {axes: [0, 2]}
    compare(build, rtol=1e-12)


def test_bad_axes_raise():
    with tf.Graph().as_default(), tf.device("/gpu:0"):
        axes = tf.placeholder(tf.int32)
        s = tf.reduce_sum(tf.constant(np.ones((2, 3))), axes)
        with tf.Session() as sess:
            with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="Invalid"):
                sess.run(s, {axes: 2})
            with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="duplicate"):
                sess.run(s, {axes: [1, -1]})


@pytest.fixture
def split_passes(monkeypatch):
    """Pretends the device needs 2 blocks to fill, and lets each part be 16 elements, so small
    inputs take the two-pass (partial results) paths."""
    monkeypatch.setattr(reduction_kernels, "_parallel_blocks", lambda ctx: 2)
    monkeypatch.setattr(reduction_kernels, "_MIN_CHUNK", 16)


def test_split_reductions(split_passes):
    v = RNG.uniform(-1, 1, (250,))
    m = RNG.uniform(-1, 1, (100, 3))
    w = RNG.uniform(-1, 1, (3, 70))

    def build():
        tv, tm, tw = tf.constant(v), tf.constant(m), tf.constant(w)
        return [tf.reduce_sum(tv), tf.reduce_mean(tv), tf.reduce_max(tv), tf.reduce_sum(tm, 0),
                tf.reduce_mean(tm, 0), tf.reduce_min(tm, 0), tf.reduce_sum(tw, 1),
                tf.reduce_max(tw, 1), tf.reduce_mean(tf.constant(RNG.randint(-5, 5, 130)))]
    compare(build, rtol=1e-12)


def test_long_rows_use_the_block_kernel():
    x = RNG.uniform(-1, 1, (5, 77))

    def build():
        t = tf.constant(x)
        return [tf.reduce_sum(t, 1), tf.reduce_max(t, 1), tf.reduce_mean(t), tf.argmax(t, 1),
                tf.argmin(t, 1), tf.reduce_any(t > 0.99, 1)]
    compare(build, rtol=1e-12)


def test_argmax_ties_take_the_first_index():
    x = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [5, 1, 5, 1]], np.float32)
    long_ties = np.tile(np.array([0.0, 4.0, 1.0, 4.0]), 20)  # 80 > one thread's short row

    def build():
        t = tf.constant(x)
        return [tf.argmax(t, 1), tf.argmin(t, 1), tf.argmax(t, 0), tf.argmin(t, 0),
                tf.argmax(tf.constant(long_ties), 0), tf.argmin(tf.constant(long_ties), 0),
                tf.argmax(t, 1, output_type=tf.int32), tf.argmin(t, -1, output_type=tf.int32)]
    gpu, _ = compare(build)
    assert gpu[0].tolist() == [1, 0, 0] and gpu[4] == 1 and gpu[5] == 0


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64])
def test_argmax_argmin_dtypes_and_axes(dtype):
    x = RNG.randint(-20, 20, (3, 4, 5)).astype(dtype)
    compare(lambda: [f(tf.constant(x), a) for f in (tf.argmax, tf.argmin) for a in (0, 1, 2, -1)])


def test_argmax_nan_and_split(split_passes):
    x = RNG.uniform(-1, 1, 200)
    x[[17, 150]] = x.max() + 1  # a tie across parts
    y = np.array([[1.0, np.nan, 3.0, np.nan]])

    def build():
        return [tf.argmax(tf.constant(x), 0), tf.argmin(tf.constant(-x), 0),
                tf.argmax(tf.constant(y), 1), tf.argmin(tf.constant(y), 1)]
    gpu, _ = compare(build)
    assert gpu[0] == 17 and gpu[2].tolist() == [1]


def test_argmax_of_an_empty_axis_raises():
    with tf.Graph().as_default(), tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, shape=[None, 3])
        a = tf.argmax(x, 0)
        with tf.Session() as sess:
            with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="empty"):
                sess.run(a, {x: np.zeros((0, 3), np.float32)})
            assert sess.run(tf.argmax(x, 1), {x: np.zeros((0, 3), np.float32)}).shape == (0,)
