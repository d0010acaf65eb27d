"""tf.layers and tf.losses as TensorFlow 1.x defines them: variable names, scopes, reuse and
collections; layer values against numpy; dropout and batch normalization in training and
inference (bool or tensor ``training``); loss values from TF's documented formulas and their
gradients against central differences; a small CNN trained on sklearn's digits."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.test import compute_gradient

RNG = np.random.RandomState(7)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


def run(fetches, feed_dict=None, init=True):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def names(variables):
    return [v.name for v in variables]


# -- variable names, scopes, reuse, collections ----------------------------------------------------
def test_dense_variable_names_uniquification_and_collections():
    x = tf.placeholder(tf.float32, [None, 4])
    h = tf.layers.dense(x, 3, activation=tf.nn.relu)
    y = tf.layers.dense(h, 2)
    assert names(tf.trainable_variables()) == ["dense/kernel:0", "dense/bias:0",
                                               "dense_1/kernel:0", "dense_1/bias:0"]
    assert names(tf.global_variables()) == names(tf.trainable_variables())
    kernel, bias = tf.trainable_variables()[:2]
    assert kernel.shape.as_list() == [4, 3] and bias.shape.as_list() == [3]
    assert h.op.name == "dense/Relu" and y.op.name == "dense_1/BiasAdd"
    assert y.shape.as_list() == [None, 2]


def test_named_dense_reuse_shares_variables_and_refuses_accidental_sharing():
    x = tf.placeholder(tf.float32, [None, 4])
    a = tf.layers.dense(x, 3, name="fc")
    b = tf.layers.dense(x, 3, name="fc", reuse=True)
    assert names(tf.global_variables()) == ["fc/kernel:0", "fc/bias:0"]
    assert a.op.name.startswith("fc/") and b.op.name.startswith("fc_1/")
    with pytest.raises(ValueError, match="fc/kernel already exists"):
        tf.layers.dense(x, 3, name="fc")
    with tf.variable_scope("tower", reuse=tf.AUTO_REUSE):
        tf.layers.dense(x, 3, name="shared")
        tf.layers.dense(x, 3, name="shared")
    assert "tower/shared/kernel:0" in names(tf.global_variables())
    values = run([a, b], {x: RNG.rand(2, 4)})
    np.testing.assert_array_equal(values[0], values[1])


def test_layer_objects_build_once_and_track_their_variables():
    layer = tf.layers.Dense(5, use_bias=False)
    assert layer.name == "dense_1"  # TF's layer names count from 1; the scope does not
    x = tf.placeholder(tf.float32, [None, 3])
    layer(x)
    layer.apply(x)
    assert layer.scope_name == "dense"
    assert names(layer.trainable_variables) == ["dense/kernel:0"]
    assert names(layer.variables) == ["dense/kernel:0"] and layer.count_params() == 15
    frozen = tf.layers.Dense(2, trainable=False, name="frozen")
    frozen(x)
    assert frozen.trainable_variables == []
    assert names(frozen.non_trainable_variables) == ["frozen/kernel:0", "frozen/bias:0"]
    assert "frozen/kernel:0" not in names(tf.trainable_variables())
    with pytest.raises(TypeError, match="not understood"):
        tf.layers.Dense(2, unknown_argument=1)


def test_regularizers_add_one_loss_per_created_variable():
    x = tf.placeholder(tf.float32, [None, 4])
    reg = tf.contrib.layers.l2_regularizer(0.1)
    tf.layers.dense(x, 3, kernel_regularizer=reg, bias_regularizer=reg, name="fc",
                    bias_initializer=tf.constant_initializer(0.5))
    tf.layers.dense(x, 3, kernel_regularizer=reg, name="fc", reuse=True)
    losses = tf.losses.get_regularization_losses()
    assert [t.op.name for t in losses] == ["fc/kernel/Regularizer/l2_regularizer",
                                           "fc/bias/Regularizer/l2_regularizer"]
    kernel, total = run([tf.trainable_variables()[0], tf.losses.get_regularization_loss()])
    np.testing.assert_allclose(total, 0.1 * (np.sum(kernel ** 2) + 3 * 0.25) / 2, rtol=1e-5)


def test_conv_pool_and_batch_norm_names_shapes_and_collections():
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    h = tf.layers.conv2d(x, 4, 3, padding="SAME")
    h = tf.layers.batch_normalization(h, training=True)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.conv2d(h, 6, (2, 3), strides=(1, 2), use_bias=False)
    assert h.shape.as_list() == [None, 3, 1, 6]
    shapes = {v.op.name: v.shape.as_list() for v in tf.global_variables()}
    assert shapes == {"conv2d/kernel": [3, 3, 1, 4], "conv2d/bias": [4],
                      "batch_normalization/gamma": [4], "batch_normalization/beta": [4],
                      "batch_normalization/moving_mean": [4],
                      "batch_normalization/moving_variance": [4], "conv2d_1/kernel": [2, 3, 4, 6]}
    trainable = {v.op.name for v in tf.trainable_variables()}
    assert trainable == set(shapes) - {"batch_normalization/moving_mean",
                                       "batch_normalization/moving_variance"}
    assert tf.get_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES) == []
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert [u.op.name for u in updates] == ["batch_normalization/AssignMovingAvg",
                                            "batch_normalization/AssignMovingAvg_1"]
    with pytest.raises(ValueError, match="padding"):
        tf.layers.conv2d(x, 2, 3, padding="full")


# -- values ----------------------------------------------------------------------------------------
def test_dense_values_including_rank_3_inputs():
    x_value = RNG.randn(2, 5, 4).astype(np.float32)
    x = tf.constant(x_value)
    y2 = tf.layers.dense(x[:, 0], 3, activation=tf.nn.relu,
                         bias_initializer=tf.constant_initializer(0.1))
    y3 = tf.layers.dense(x, 3, activation="tanh")
    w2, w3, b3, v2, v3 = run(tf.trainable_variables()[:1] + tf.trainable_variables()[2:] +
                             [y2, y3])
    np.testing.assert_allclose(v2, np.maximum(x_value[:, 0] @ w2 + 0.1, 0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(v3, np.tanh(x_value @ w3 + b3), rtol=1e-5, atol=1e-6)
    assert y3.shape.as_list() == [2, 5, 3]


def _conv2d_numpy(x, w, stride, padding):
    """Cross-correlation of NHWC x with [kh, kw, in, out] w, TF's SAME/VALID padding."""
    n, h, wd, _ = x.shape
    kh, kw, _, out = w.shape
    if padding == "same":
        oh, ow = -(-h // stride), -(-wd // stride)
        ph = max((oh - 1) * stride + kh - h, 0)
        pw = max((ow - 1) * stride + kw - wd, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    else:
        oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    y = np.zeros((n, oh, ow, out))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            y[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return y


@pytest.mark.parametrize("padding,stride", [("same", 2), ("VALID", 1)])
def test_conv2d_values_and_channels_first(padding, stride):
    x_value = RNG.randn(2, 7, 6, 3).astype(np.float32)
    y = tf.layers.conv2d(tf.constant(x_value), 4, (3, 2), strides=stride, padding=padding,
                         bias_initializer=tf.constant_initializer(0.25), name="c")
    y_first = tf.layers.conv2d(tf.constant(x_value.transpose(0, 3, 1, 2)), 4, (3, 2),
                               strides=stride, padding=padding, data_format="channels_first",
                               name="c", reuse=True)
    kernel, y_value, y_first_value = run([tf.trainable_variables()[0], y, y_first])
    expected = _conv2d_numpy(x_value, kernel, stride, padding.lower()) + 0.25
    np.testing.assert_allclose(y_value, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y_first_value, expected.transpose(0, 3, 1, 2), rtol=1e-4,
                               atol=1e-5)


def test_conv1d_is_a_convolution_over_width():
    x_value = RNG.randn(2, 9, 3).astype(np.float32)
    y = tf.layers.conv1d(tf.constant(x_value), 5, 4, strides=2, use_bias=False)
    assert tf.trainable_variables()[0].name == "conv1d/kernel:0"
    kernel, y_value = run([tf.trainable_variables()[0], y])
    assert kernel.shape == (4, 3, 5) and y_value.shape == (2, 3, 5)
    expected = _conv2d_numpy(x_value[:, None], kernel[None], 2, "valid")[:, 0]
    np.testing.assert_allclose(y_value, expected, rtol=1e-4, atol=1e-5)


def test_pooling_and_flatten_values():
    x_value = RNG.randn(2, 4, 6, 3).astype(np.float32)
    x = tf.constant(x_value)
    windows = x_value.reshape(2, 2, 2, 3, 2, 3)
    max_pool = tf.layers.max_pooling2d(x, 2, 2)
    avg_pool = tf.layers.average_pooling2d(x, [2, 2], [2, 2], padding="valid")
    pool_first = tf.layers.MaxPooling2D(2, 2, data_format="channels_first")(
        tf.transpose(x, [0, 3, 1, 2]))
    flat = tf.layers.flatten(x)
    pool1d = tf.layers.max_pooling1d(x[:, 0], 3, 3)
    values = run([max_pool, avg_pool, pool_first, flat, pool1d], init=False)
    np.testing.assert_allclose(values[0], windows.max(axis=(2, 4)), rtol=1e-6)
    np.testing.assert_allclose(values[1], windows.mean(axis=(2, 4)), rtol=1e-5)
    np.testing.assert_allclose(values[2], windows.max(axis=(2, 4)).transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(values[3], x_value.reshape(2, -1))
    np.testing.assert_allclose(values[4], x_value[:, 0].reshape(2, 2, 3, 3).max(axis=2))
    assert flat.shape.as_list() == [2, 72] and max_pool.op.name == "max_pooling2d/MaxPool"


# -- dropout ---------------------------------------------------------------------------------------
def test_dropout_rate_is_the_drop_rate_and_training_may_be_a_tensor():
    tf.set_random_seed(3)
    x_value = RNG.uniform(1, 2, (200, 50)).astype(np.float32)
    x = tf.constant(x_value)
    training = tf.placeholder(tf.bool, [])
    off = tf.layers.dropout(x, rate=0.2)
    on = tf.layers.dropout(x, rate=0.2, training=True, seed=1)
    switched = tf.layers.dropout(x, rate=0.2, training=training, seed=1)
    layer = tf.layers.Dropout(0.5, noise_shape=[None, 1], seed=2)
    rows = layer(x, training=tf.constant(True))
    with tf.Session() as sess:
        off_v, on_v, rows_v = sess.run([off, on, rows])
        train_v = sess.run(switched, {training: True})
        test_v = sess.run(switched, {training: False})
    np.testing.assert_array_equal(off_v, x_value)
    np.testing.assert_array_equal(test_v, x_value)
    for dropped in (on_v, train_v):
        kept = dropped != 0
        assert abs(kept.mean() - 0.8) < 0.01  # 10000 draws: the stddev is 0.004
        np.testing.assert_allclose(dropped[kept], x_value[kept] / 0.8, rtol=1e-6)
    # noise_shape [None, 1]: whole rows are kept or dropped together.
    row_kept = (rows_v != 0).all(axis=1)
    assert ((rows_v == 0).all(axis=1) | row_kept).all() and 0.3 < row_kept.mean() < 0.7


# -- batch normalization ---------------------------------------------------------------------------
def test_batch_norm_training_normalizes_and_updates_moving_statistics_by_tf_formula():
    x_value = RNG.randn(16, 3).astype(np.float32) * 3 + 2
    x = tf.constant(x_value)
    y = tf.layers.batch_normalization(x, training=True, momentum=0.9,
                                      gamma_initializer=tf.constant_initializer(2.0),
                                      beta_initializer=tf.constant_initializer(0.5))
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    moving_mean, moving_variance = tf.global_variables()[2:]
    inference = tf.layers.batch_normalization(x, training=False, name="batch_normalization",
                                              reuse=True)
    mean, var = x_value.mean(0), x_value.var(0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        y_value = sess.run(y)
        sess.run(update_ops)
        stats = sess.run([moving_mean, moving_variance])
        inference_value = sess.run(inference)
    np.testing.assert_allclose(y_value, 2 * (x_value - mean) / np.sqrt(var + 1e-3) + 0.5,
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(stats[0], 0 * 0.9 + mean * 0.1, rtol=1e-5)
    np.testing.assert_allclose(stats[1], 1 * 0.9 + var * 0.1, rtol=1e-5)
    np.testing.assert_allclose(
        inference_value, 2 * (x_value - stats[0]) / np.sqrt(stats[1] + 1e-3) + 0.5, rtol=1e-4)


def test_batch_norm_4d_uses_bessels_correction_for_the_moving_variance_like_fused_tf():
    x_value = RNG.randn(2, 3, 3, 2).astype(np.float32)
    y = tf.layers.batch_normalization(tf.constant(x_value), training=True, center=False,
                                      scale=False)
    assert [v.op.name for v in tf.global_variables()] == [
        "batch_normalization/moving_mean", "batch_normalization/moving_variance"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        y_value, _ = sess.run([y, tf.get_collection(tf.GraphKeys.UPDATE_OPS)])
        moving_variance = sess.run(tf.global_variables()[1])
    flat = x_value.reshape(-1, 2)
    np.testing.assert_allclose(
        y_value, (x_value - flat.mean(0)) / np.sqrt(flat.var(0) + 1e-3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(moving_variance, 0.99 + 0.01 * flat.var(0, ddof=1), rtol=1e-5)


def test_batch_norm_channels_first_with_an_unknown_batch_size():
    x_value = RNG.randn(3, 2, 2, 4)
    x = tf.placeholder(tf.float64, [None, 2, 2, 4])
    y = tf.layers.batch_normalization(x, axis=1, training=True, momentum=0.5)
    assert tf.global_variables()[0].shape.as_list() == [2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        y_value, _ = sess.run([y, tf.get_collection(tf.GraphKeys.UPDATE_OPS)], {x: x_value})
        moving_variance = sess.run(tf.global_variables()[3])
    axes = (0, 2, 3)
    np.testing.assert_allclose(y_value, (x_value - x_value.mean(axes, keepdims=True)) /
                               np.sqrt(x_value.var(axes, keepdims=True) + 1e-3), atol=1e-10)
    np.testing.assert_allclose(moving_variance, 0.5 + 0.5 * x_value.var(axes, ddof=1))


def test_batch_norm_with_a_training_tensor_selects_statistics_and_updates():
    x_value = RNG.randn(8, 2).astype(np.float32) + 1
    training = tf.placeholder(tf.bool, [])
    layer = tf.layers.BatchNormalization(axis=1, momentum=0.5)
    y = layer(tf.constant(x_value), training=training)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert layer.updates == updates and len(updates) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        test_value, _ = sess.run([y, updates], {training: False})
        unchanged = sess.run(layer.moving_mean)
        train_value, _ = sess.run([y, updates], {training: True})
        moved = sess.run(layer.moving_mean)
    np.testing.assert_allclose(test_value, x_value / np.sqrt(1 + 1e-3), rtol=1e-5)
    np.testing.assert_array_equal(unchanged, [0, 0])
    np.testing.assert_allclose(
        train_value, (x_value - x_value.mean(0)) / np.sqrt(x_value.var(0) + 1e-3), rtol=1e-4,
        atol=1e-5)
    np.testing.assert_allclose(moved, 0.5 * x_value.mean(0), rtol=1e-5)


def test_batch_norm_gradient_matches_numerical_in_training_mode():
    x = tf.placeholder(tf.float64, [5, 3])
    y = tf.layers.batch_normalization(x, training=True,
                                      gamma_initializer=tf.constant_initializer(1.5))
    out = y * tf.constant(RNG.randn(5, 3))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        theoretical, numerical = compute_gradient(x, [5, 3], out, [5, 3],
                                                  x_init_value=RNG.randn(5, 3), delta=1e-6,
                                                  session=sess)
    np.testing.assert_allclose(theoretical, numerical, atol=1e-6)
    grads = tf.gradients(tf.reduce_sum(out), tf.trainable_variables())
    assert all(g is not None for g in grads)


# -- losses: values --------------------------------------------------------------------------------
LABELS = np.array([[0., 1., 1.], [1., 0., 1.]], np.float32)
PREDICTIONS = np.array([[0.2, 0.7, 1.9], [0.9, -0.4, 0.3]], np.float32)
WEIGHTS = np.array([[1.], [0.]], np.float32)


def _elementwise_losses():
    """TF 1.x's documented per-element formulas, in numpy."""
    error = PREDICTIONS - LABELS
    probs = np.clip(PREDICTIONS, 0.05, 0.95)
    signed = 2 * LABELS - 1
    quadratic = np.minimum(np.abs(error), 1.0)
    return {
        "mean_squared_error": (tf.losses.mean_squared_error, PREDICTIONS, error ** 2),
        "absolute_difference": (tf.losses.absolute_difference, PREDICTIONS, np.abs(error)),
        "log_loss": (tf.losses.log_loss, probs,
                     -LABELS * np.log(probs + 1e-7) - (1 - LABELS) * np.log(1 - probs + 1e-7)),
        "hinge_loss": (tf.losses.hinge_loss, PREDICTIONS,
                       np.maximum(0, 1 - signed * PREDICTIONS)),
        "huber_loss": (tf.losses.huber_loss, PREDICTIONS,
                       0.5 * quadratic ** 2 + (np.abs(error) - quadratic)),
        "sigmoid_cross_entropy": (
            tf.losses.sigmoid_cross_entropy, PREDICTIONS,
            np.maximum(PREDICTIONS, 0) - PREDICTIONS * LABELS +
            np.log1p(np.exp(-np.abs(PREDICTIONS)))),
    }


@pytest.mark.parametrize("name", sorted(_elementwise_losses()))
def test_elementwise_losses_match_tf_formulas_under_every_reduction(name):
    fn, predictions, expected = _elementwise_losses()[name]
    reductions = {
        tf.losses.Reduction.NONE: expected * WEIGHTS,
        tf.losses.Reduction.SUM: np.sum(expected * WEIGHTS),
        tf.losses.Reduction.MEAN: np.sum(expected * WEIGHTS) / 3.0,
        tf.losses.Reduction.SUM_OVER_BATCH_SIZE: np.sum(expected * WEIGHTS) / 6.0,
        tf.losses.Reduction.SUM_BY_NONZERO_WEIGHTS: np.sum(expected * WEIGHTS) / 3.0,
    }
    losses = {r: fn(LABELS, predictions, weights=WEIGHTS, reduction=r) for r in reductions}
    default = fn(LABELS, predictions)
    values, default_value = run([losses, default], init=False)
    for reduction, value in values.items():
        np.testing.assert_allclose(value, reductions[reduction], rtol=1e-5, atol=1e-7,
                                   err_msg=reduction)
    np.testing.assert_allclose(default_value, expected.mean(), rtol=1e-5)
    assert len(tf.losses.get_losses()) == len(reductions) + 1


def test_cross_entropy_losses_with_label_smoothing_and_sparse_labels():
    logits = np.array([[2.0, -1.0, 0.5], [0.1, 0.2, 3.0]], np.float32)
    onehot = np.array([[1, 0, 0], [0, 0, 1]], np.float32)
    smoothed = onehot * 0.8 + 0.2 / 3
    log_softmax = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    sigmoid_smoothed = onehot * 0.8 + 0.1
    sigmoid_xent = np.maximum(logits, 0) - logits * sigmoid_smoothed + \
        np.log1p(np.exp(-np.abs(logits)))
    fetches = [
        tf.losses.softmax_cross_entropy(onehot, logits),
        tf.losses.softmax_cross_entropy(onehot, logits, label_smoothing=0.2),
        tf.losses.sparse_softmax_cross_entropy(np.array([0, 2]), logits, weights=[2., 0.]),
        tf.losses.sparse_softmax_cross_entropy(np.array([[0], [2]]), logits),
        tf.losses.sigmoid_cross_entropy(onehot, logits, label_smoothing=0.2),
    ]
    values = run(fetches, init=False)
    plain = -(onehot * log_softmax).sum(1)
    np.testing.assert_allclose(values[0], plain.mean(), rtol=1e-5)
    np.testing.assert_allclose(values[1], -(smoothed * log_softmax).sum(1).mean(), rtol=1e-5)
    np.testing.assert_allclose(values[2], 2 * plain[0] / 1.0, rtol=1e-5)
    np.testing.assert_allclose(values[3], plain.mean(), rtol=1e-5)
    np.testing.assert_allclose(values[4], sigmoid_xent.mean(), rtol=1e-5)


def test_compute_weighted_loss_edge_cases_and_collections():
    losses = tf.constant([[1., 2.], [3., 4.]])
    all_zero = tf.losses.compute_weighted_loss(losses, weights=tf.zeros([2, 2]))
    column = tf.losses.compute_weighted_loss(losses, weights=[[1.], [2.]],
                                             reduction=tf.losses.Reduction.MEAN)
    uncollected = tf.losses.compute_weighted_loss(losses, loss_collection=None)
    assert tf.losses.get_losses() == [all_zero, column]
    with pytest.raises(ValueError, match="can not be broadcast"):
        tf.losses.compute_weighted_loss(losses, weights=[1., 2.])
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        tf.losses.compute_weighted_loss(losses, reduction="mean")
    tf.losses.add_loss(tf.constant(10.0))
    tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, tf.constant(0.5))
    total = tf.losses.get_total_loss()
    values = run([all_zero, column, uncollected, total], init=False)
    np.testing.assert_allclose(values, [0.0, (1 + 2 + 6 + 8) / 6.0, 2.5,
                                        (1 + 2 + 6 + 8) / 6.0 + 10 + 0.5], rtol=1e-6)
    assert total.op.name == "total_loss"


# -- losses: gradients -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(_elementwise_losses()) + ["softmax_cross_entropy",
                                                                  "sparse_softmax_cross_entropy"])
def test_loss_gradients_match_numerical(name):
    # TF computes the losses in float32, so the central differences use a float32-sized step.
    if name == "softmax_cross_entropy":
        def fn(p):
            return tf.losses.softmax_cross_entropy(LABELS / LABELS.sum(1, keepdims=True), p,
                                                   label_smoothing=0.1, weights=[1., 3.])
        x_value = PREDICTIONS
    elif name == "sparse_softmax_cross_entropy":
        def fn(p):
            return tf.losses.sparse_softmax_cross_entropy(np.array([2, 0]), p)
        x_value = PREDICTIONS
    else:
        loss, x_value, _ = _elementwise_losses()[name]

        def fn(p):
            return loss(LABELS, p, weights=[[2.], [0.5]])
    if name in ("absolute_difference", "hinge_loss", "huber_loss"):
        x_value = x_value + 0.05  # away from the kinks at |error| in {0, 1} and margin 1
    x = tf.placeholder(tf.float32, x_value.shape)
    y = fn(x)
    theoretical, numerical = compute_gradient(x, x_value.shape, y, [], x_init_value=x_value,
                                              delta=1e-2)
    assert np.abs(theoretical).max() > 0
    np.testing.assert_allclose(theoretical, numerical, atol=2e-3, rtol=2e-2)


# -- a small CNN -----------------------------------------------------------------------------------
def test_small_cnn_with_tf_layers_learns_digits():
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., None][:512]
    labels = digits.target.astype(np.int64)[:512]
    tf.set_random_seed(0)
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    y = tf.placeholder(tf.int64, [None])
    training = tf.placeholder_with_default(False, [])
    h = tf.layers.conv2d(x, 8, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.batch_normalization(h, training=training, momentum=0.9)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.dropout(tf.layers.flatten(h), rate=0.1, training=training)
    logits = tf.layers.dense(h, 10, kernel_regularizer=tf.contrib.layers.l2_regularizer(1e-4))
    tf.losses.sparse_softmax_cross_entropy(y, logits)
    loss = tf.losses.get_total_loss()
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
    feed = {x: images, y: labels}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, feed)
        for _ in range(40):
            sess.run(train_op, {**feed, training: True})
        last = sess.run(loss, feed)
        moving_mean = sess.run(tf.get_default_graph().get_tensor_by_name(
            "batch_normalization/moving_mean:0"))
    assert last < 0.3 * first, (first, last)
    assert np.abs(moving_mean).max() > 0  # the update ops ran with the train op
