"""Fused groups (tfjupyter/runtime/fusion.py): a product with its bias and activation, and
ReluGrad with the bias gradient, run as one kernel -- with the values of the ops run one by one.

The unfused reference is the same graph with the intermediate tensors fetched too: a fetched
tensor must exist, so fetching it turns the fusion off.
"""
import numpy as np
import pytest

import tfjupyter as tf


def _traced_ops(sess, fetches, feed):
    md = tf.RunMetadata()
    values = sess.run(fetches, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                      run_metadata=md)
    names = {n["node_name"] for nodes in md.step_stats.dev_stats.values() for n in nodes}
    return values, names


def _conv_net(bias_as_add, activation=tf.nn.relu):
    rng = np.random.RandomState(1)
    x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="x")
    w = tf.Variable((0.4 * rng.randn(3, 3, 2, 4)).astype(np.float32), name="w")
    b = tf.Variable(rng.randn(4).astype(np.float32), name="b")
    conv = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="conv")
    pre = tf.add(conv, b, name="pre") if bias_as_add else tf.nn.bias_add(conv, b, name="pre")
    h = activation(pre, name="act")
    w2 = tf.Variable((0.2 * rng.randn(144, 3)).astype(np.float32), name="w2")
    b2 = tf.Variable(rng.randn(3).astype(np.float32), name="b2")
    fc = tf.matmul(tf.reshape(h, [-1, 144]), w2, name="fc")
    out = tf.nn.relu(fc + b2, name="out")
    loss = tf.reduce_sum(out * out)
    grads = tf.gradients(loss, [w, b, w2, b2])
    feed = {x: rng.randn(3, 6, 6, 2).astype(np.float32)}
    return (conv, pre, h, fc, out), grads, feed


@pytest.mark.parametrize("bias_as_add", [False, True], ids=["BiasAdd", "Add"])
def test_fused_step_matches_unfused_ops(bias_as_add):
    with tf.Graph().as_default():
        (conv, pre, h, fc, out), grads, feed = _conv_net(bias_as_add)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            fused, names = _traced_ops(sess, [out] + grads, feed)
            # The products' outputs are made inside the fused kernels: no node of their own.
            assert "conv" not in names and "pre" not in names and "fc" not in names
            assert "act" in names and "out" in names
            unfused, names = _traced_ops(sess, [out] + grads + [conv, pre, fc], feed)
            assert {"conv", "pre", "fc"} <= names
    for a, b in zip(fused, unfused):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_fused_gradients_match_central_differences():
    rng = np.random.RandomState(2)
    xv = rng.randn(2, 5, 5, 1)
    wv = 0.5 * rng.randn(3, 3, 1, 2)
    bv = rng.randn(2)

    def loss_np(w, b):
        # SAME 3x3 convolution by hand, then bias, ReLU and a sum of squares.
        xp = np.pad(xv, ((0, 0), (1, 1), (1, 1), (0, 0)))
        y = np.zeros((2, 5, 5, 2))
        for i in range(5):
            for j in range(5):
                y[:, i, j, :] = np.einsum("nabc,abco->no", xp[:, i:i + 3, j:j + 3, :], w)
        return (np.maximum(y + b, 0) ** 2).sum()

    with tf.Graph().as_default():
        x = tf.constant(xv, tf.float64)
        w = tf.Variable(wv)
        b = tf.Variable(bv)
        loss = tf.reduce_sum(tf.nn.relu(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME") + b) ** 2)
        gw, gb = tf.gradients(loss, [w, b])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got_loss, got_gw, got_gb = sess.run([loss, gw, gb])
    assert got_loss == pytest.approx(loss_np(wv, bv), rel=1e-12)
    eps = 1e-6
    num_gb = np.array([(loss_np(wv, bv + eps * e) - loss_np(wv, bv - eps * e)) / (2 * eps)
                       for e in np.eye(2)])
    np.testing.assert_allclose(got_gb, num_gb, rtol=1e-6)
    num_gw = np.zeros_like(wv)
    for idx in np.ndindex(*wv.shape):
        d = np.zeros_like(wv)
        d[idx] = eps
        num_gw[idx] = (loss_np(wv + d, bv) - loss_np(wv - d, bv)) / (2 * eps)
    np.testing.assert_allclose(got_gw, num_gw, rtol=1e-6, atol=1e-8)


def test_fused_relu_keeps_nan_and_relu6_clips():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [2, 2])
        w = tf.constant(np.eye(2, dtype=np.float32))
        b = tf.constant([np.nan, -1.0])
        r = tf.nn.relu(tf.matmul(a, w) + b)
        r6 = tf.nn.relu6(tf.matmul(a, w) + b)
        with tf.Session() as sess:
            av = np.array([[1.0, 3.0], [-4.0, 9.0]], np.float32)
            got_r = sess.run(r, {a: av})
            got_r6 = sess.run(r6, {a: av})
    # TensorFlow: Relu(NaN) is NaN; Relu6 clips to [0, 6].
    np.testing.assert_array_equal(got_r, [[np.nan, 2.0], [np.nan, 8.0]])
    np.testing.assert_array_equal(got_r6, [[np.nan, 2.0], [np.nan, 6.0]])


def test_bad_filter_depth_names_the_convolution():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [1, 4, 4, 3])
        w = tf.placeholder(tf.float32, [3, 3, None, 2])
        y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="myconv"),
                                      tf.zeros([2])))
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="myconv"):
                sess.run(y, {x: np.zeros((1, 4, 4, 3)), w: np.zeros((3, 3, 5, 2))})


def test_large_product_split_over_cores_keeps_bias_columns():
    # Big enough to be split (by columns: few rows, many columns); each part adds its own
    # slice of the bias.
    rng = np.random.RandomState(3)
    av = rng.randn(8, 600).astype(np.float32)
    wv = rng.randn(600, 4000).astype(np.float32)
    bv = rng.randn(4000).astype(np.float32)
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [None, 600])
        out = tf.nn.relu(tf.matmul(a, tf.constant(wv)) + tf.constant(bv))
        with tf.Session() as sess:
            got = sess.run(out, {a: av})
    np.testing.assert_allclose(got, np.maximum(av.astype(np.float64) @ wv + bv, 0),
                               rtol=1e-4, atol=1e-3)


def test_fused_training_step_matches_tensorflow():
    # TensorFlow 2.21 (compat.v1, oneDNN's fused Conv2D and MatMul) on the same graph and
    # values (tests/test_fusion.py::_conv_net with the bias as an Add): the loss, the first
    # entries of each gradient and the sum of its magnitudes.
    expected = {
        "loss": 40.11799621582031,
        "w": ([31.922832489013672, -11.712201118469238, -7.696397304534912,
               -1.2094707489013672], 676.0081176757812),
        "b": ([17.51940155029297, -6.323186874389648, 7.808112621307373, 7.252775192260742],
              38.90347671508789),
        "w2": ([6.691770076751709, 1.7704302072525024, 14.309599876403809, 7.833879470825195],
               2773.036376953125),
        "b2": ([5.198134422302246, 6.975278377532959, 15.923641204833984], 28.09705352783203),
    }
    with tf.Graph().as_default():
        (_, _, _, _, out), grads, feed = _conv_net(bias_as_add=True)
        loss = tf.get_default_graph().get_tensor_by_name("Sum:0")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([loss] + grads, feed)
    assert got[0] == pytest.approx(expected["loss"], rel=1e-5)
    for name, value in zip(["w", "b", "w2", "b2"], got[1:]):
        head, total = expected[name]
        np.testing.assert_allclose(value.reshape(-1)[:len(head)], head, rtol=1e-4, atol=1e-4)
        assert np.abs(value).sum() == pytest.approx(total, rel=1e-5)
