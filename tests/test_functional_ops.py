"""tf.map_fn, tf.scan, tf.foldl, tf.foldr (loops on the While op): values against numpy and
gradients against central-difference Jacobians."""
import numpy as np
import pytest

import tfjupyter as tf
from test_control_flow import check_grad, fresh_graph  # noqa: F401 - the fixture


def test_map_fn_nested_and_dtype():
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.int32, [None])
    out = tf.map_fn(lambda e: (e[0] * 2.0, tf.cast(e[1], tf.float32) + tf.reduce_sum(e[0])),
                    (x, y), dtype=(tf.float32, tf.float32))
    squares = tf.map_fn(lambda e: e * e, tf.constant([1, 2, 3]))
    with pytest.raises(TypeError, match="dtype says"):
        tf.map_fn(lambda e: e * 2.0, x, dtype=tf.int32)
    xv = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    with tf.Session() as s:
        a, b = s.run(out, {x: xv, y: [10, 20, 30]})
        np.testing.assert_array_equal(a, xv * 2)
        np.testing.assert_array_equal(b, [13, 27, 41])
        np.testing.assert_array_equal(s.run(squares), [1, 4, 9])
        assert s.run(out, {x: np.zeros((0, 2), np.float32), y: []})[0].shape == (0, 2)


def test_scan_and_folds_values():
    x = tf.placeholder(tf.float32, [4])
    cumprod = tf.scan(lambda a, e: a * e, x)
    rev = tf.scan(lambda a, e: a * e, x, initializer=tf.constant(2.0), reverse=True)
    pairs = tf.scan(lambda a, e: (a[0] + e, a[1] * e), x,
                    initializer=(tf.constant(0.0), tf.constant(1.0)))
    left = tf.foldl(lambda a, e: a - e, x)
    right = tf.foldr(lambda a, e: a - e, x, initializer=tf.constant(0.0))
    xv = np.array([1, 2, 3, 4], np.float32)
    with tf.Session() as s:
        c, r, (p0, p1), fl, fr = s.run([cumprod, rev, pairs, left, right], {x: xv})
        np.testing.assert_array_equal(c, np.cumprod(xv))
        np.testing.assert_array_equal(r, [48, 48, 24, 8])
        np.testing.assert_array_equal(p0, np.cumsum(xv))
        np.testing.assert_array_equal(p1, np.cumprod(xv))
        assert fl == 1 - 2 - 3 - 4 and fr == -10


def test_scan_cumulative_product_gradient():
    x = tf.placeholder(tf.float64, [5])
    y = tf.scan(lambda a, e: a * e, x)
    with tf.Session() as s:
        check_grad(s, y, x, [0.5, -1.5, 2.0, 0.7, 1.2])


def test_tanh_rnn_by_scan_gradient_for_inputs_and_weights():
    rng = np.random.RandomState(0)
    xs = tf.placeholder(tf.float64, [6, 2, 3])       # time, batch, features
    w = tf.constant(rng.randn(3, 4) * 0.5)
    u = tf.placeholder(tf.float64, [4, 4])
    h = tf.scan(lambda h, x: tf.tanh(tf.matmul(x, w) + tf.matmul(h, u)), xs,
                initializer=tf.zeros([2, 4], tf.float64))
    loss = tf.reduce_sum(h * h)
    xv, uv = rng.randn(6, 2, 3), rng.randn(4, 4) * 0.5
    with tf.Session() as s:
        check_grad(s, loss, xs, xv, {u: uv})
        check_grad(s, loss, u, uv, {xs: xv})


def test_map_fn_gradient_and_fold_gradient():
    x = tf.placeholder(tf.float64, [3, 2])
    m = tf.map_fn(lambda r: tf.sin(r) * tf.reduce_sum(r * r), x)
    f = tf.foldl(lambda a, r: a * tf.exp(r), x, initializer=tf.ones([2], tf.float64))
    xv = np.array([[0.2, -0.5], [1.0, 0.3], [-0.7, 0.9]])
    with tf.Session() as s:
        check_grad(s, m, x, xv)
        check_grad(s, f, x, xv)
