"""Initializers (tf.*_initializer) and tf.contrib.layers initializers and regularizers."""
import math

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.test import compute_gradient

BIG = 200_000  # samples for the statistics tests: the mean's standard error is ~0.2% of std


def run(t):
    with tf.Session() as sess:
        return sess.run(t)


def init_value(initializer, shape, dtype=tf.float32):
    """The value a variable gets from ``initializer``."""
    v = tf.get_variable("v", shape, dtype=dtype, initializer=initializer)
    with tf.Session() as sess:
        sess.run(v.initializer)
        return sess.run(v)


def check_moments(x, mean, std, rel=0.02):
    assert abs(x.mean() - mean) < 5 * std / math.sqrt(x.size)
    assert x.std() == pytest.approx(std, rel=rel)


# -- constants ----------------------------------------------------------------------------------
def test_constant_initializer_fills_reshapes_and_pads():
    np.testing.assert_array_equal(init_value(tf.constant_initializer(0.1), [2, 3]),
                                  np.full((2, 3), 0.1, np.float32))
    np.testing.assert_array_equal(run(tf.constant_initializer([1, 2, 3, 4])([2, 2])),
                                  np.array([[1, 2], [3, 4]], np.float32))
    # Fewer values than elements: the last one is repeated (TF 1.x constant semantics).
    np.testing.assert_array_equal(run(tf.constant_initializer([1, 2])([2, 2])),
                                  np.array([[1, 2], [2, 2]], np.float32))
    ints = tf.constant_initializer(7, dtype=tf.int32)([3])
    assert ints.dtype is tf.int32
    np.testing.assert_array_equal(run(ints), [7, 7, 7])
    # The dtype given at call time (by get_variable) wins over the constructor's.
    assert tf.constant_initializer(1)([2], dtype=tf.float64).dtype is tf.float64


def test_constant_initializer_errors():
    with pytest.raises(TypeError, match="Invalid type for initial value"):
        tf.constant_initializer({"a": 1})
    with pytest.raises(TypeError, match="Too many elements"):
        tf.constant_initializer([1, 2, 3, 4, 5])([2, 2])
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.constant_initializer([1, 2], verify_shape=True)([2, 2])


def test_zeros_and_ones_initializers_all_forms():
    np.testing.assert_array_equal(init_value(tf.zeros_initializer(), [2, 2]), np.zeros((2, 2)))
    tf.reset_default_graph()
    # TF 0.x style: the class (formerly a function) itself passed as the initializer.
    np.testing.assert_array_equal(init_value(tf.zeros_initializer, [3]), np.zeros(3))
    tf.reset_default_graph()
    np.testing.assert_array_equal(init_value(tf.ones_initializer, [3], tf.int32),
                                  np.ones(3, np.int32))
    tf.reset_default_graph()
    # TF 0.x direct call: zeros_initializer(shape, dtype) returned the tensor.
    z = tf.zeros_initializer([2, 3], dtype=tf.int64)
    assert isinstance(z, tf.Tensor) and z.dtype is tf.int64
    np.testing.assert_array_equal(run(z), np.zeros((2, 3), np.int64))
    o = tf.ones_initializer(shape=[2])
    np.testing.assert_array_equal(run(o), [1.0, 1.0])
    # TF 1.x: the dtype may also be given positionally to the constructor.
    assert tf.zeros_initializer(tf.int32).dtype is tf.int32
    assert isinstance(tf.ones_initializer(), tf.ones_initializer)
    b = tf.zeros_initializer()([2], dtype=tf.bool)
    np.testing.assert_array_equal(run(b), [False, False])


# -- random --------------------------------------------------------------------------------------
def test_random_uniform_initializer_statistics():
    x = run(tf.random_uniform_initializer(-2.0, 3.0, seed=1)([BIG]))
    assert x.dtype == np.float32 and x.min() >= -2.0 and x.max() < 3.0
    check_moments(x, 0.5, 5 / math.sqrt(12))
    ints = run(tf.random_uniform_initializer(0, 10, dtype=tf.int32)([1000]))
    assert ints.dtype == np.int32 and ints.min() >= 0 and ints.max() <= 9


def test_random_normal_initializer_statistics():
    x = run(tf.random_normal_initializer(mean=1.0, stddev=0.5, seed=3)([BIG]))
    check_moments(x, 1.0, 0.5)
    assert abs(x - 1.0).max() > 1.0  # untruncated: values beyond 2 stddev occur


def test_truncated_normal_initializer_bounds_and_statistics():
    x = run(tf.truncated_normal_initializer(mean=-1.0, stddev=0.1, seed=4)([BIG]))
    assert np.all(np.abs(x + 1.0) <= 0.2 + 1e-6)
    # A unit normal truncated at +-2 has stddev 0.8796.
    check_moments(x, -1.0, 0.1 * 0.87962566)


def test_uniform_unit_scaling_initializer_limit():
    x = run(tf.uniform_unit_scaling_initializer(factor=1.5, seed=5)([3, 4, 500]))
    limit = math.sqrt(3 / 12) * 1.5
    assert np.abs(x).max() <= limit and np.abs(x).max() > 0.99 * limit
    check_moments(x, 0.0, limit / math.sqrt(3))


@pytest.mark.parametrize("mode, n", [("fan_in", 200), ("fan_out", 300), ("fan_avg", 250)])
@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "untruncated_normal",
                                          "uniform"])
def test_variance_scaling_initializer_variance(mode, n, distribution):
    init = tf.variance_scaling_initializer(scale=2.0, mode=mode, distribution=distribution, seed=6)
    x = run(init([200, 300]))
    std = math.sqrt(2.0 / n)
    check_moments(x, 0.0, std, rel=0.03)
    if distribution == "uniform":
        assert np.abs(x).max() <= math.sqrt(3) * std
    elif distribution != "untruncated_normal":
        # The stddev is corrected for truncation; the cut is at 2 * (std / 0.8796).
        assert np.abs(x).max() <= 2 * std / 0.87962566 + 1e-6


def test_variance_scaling_fans_of_conv_kernels():
    # [height, width, in, out]: fan_in = 3*3*16, fan_out = 3*3*32.
    x = run(tf.variance_scaling_initializer(mode="fan_in", distribution="uniform")([3, 3, 16, 32]))
    limit = math.sqrt(3.0 / (9 * 16))
    assert np.abs(x).max() <= limit and np.abs(x).max() > 0.98 * limit


def test_glorot_initializers():
    x = run(tf.glorot_uniform_initializer(seed=7)([400, 600]))
    limit = math.sqrt(6 / (400 + 600))
    assert np.abs(x).max() <= limit and np.abs(x).max() > 0.99 * limit
    check_moments(x, 0.0, limit / math.sqrt(3))
    y = run(tf.glorot_normal_initializer(seed=7)([400, 600]))
    check_moments(y, 0.0, math.sqrt(2 / 1000))


def test_default_initializer_of_get_variable_is_glorot_uniform():
    x = init_value(None, [300, 500])
    limit = math.sqrt(6 / 800)
    assert np.abs(x).max() <= limit and np.abs(x).max() > 0.99 * limit
    check_moments(x, 0.0, limit / math.sqrt(3))


def test_random_initializers_draw_new_values_each_run_and_follow_seeds():
    tf.set_random_seed(42)
    v = tf.get_variable("v", [50], initializer=tf.random_normal_initializer())
    with tf.Session() as sess:
        sess.run(v.initializer)
        first = sess.run(v)
        sess.run(v.initializer)
        second = sess.run(v)
    assert not np.array_equal(first, second)
    with tf.Session() as sess:  # a new session repeats the sequence (graph seed set)
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), first)
    a = run(tf.random_uniform_initializer(seed=11)([20]))
    b = run(tf.random_uniform_initializer(seed=11)([20]))
    np.testing.assert_array_equal(a, b)


def test_float_only_initializers_reject_integer_dtypes():
    for make in (tf.random_normal_initializer, tf.truncated_normal_initializer,
                 tf.uniform_unit_scaling_initializer, tf.glorot_uniform_initializer,
                 tf.glorot_normal_initializer, tf.orthogonal_initializer):
        with pytest.raises(ValueError, match="expected to be floating point"):
            make(dtype=tf.int32)
    with pytest.raises(ValueError, match="floating point"):
        tf.get_variable("v", [2], dtype=tf.int32, initializer=tf.random_normal_initializer())


def test_variance_scaling_argument_errors():
    with pytest.raises(ValueError, match="`scale` must be a positive float"):
        tf.variance_scaling_initializer(scale=0.0)
    with pytest.raises(ValueError, match="`mode` should be one of"):
        tf.variance_scaling_initializer(mode="fan_sum")
    with pytest.raises(ValueError, match="`distribution` should be one of"):
        tf.variance_scaling_initializer(distribution="cauchy")
    with pytest.raises(ValueError, match="fully defined shape"):
        tf.glorot_uniform_initializer()(tf.TensorShape([None, 3]))


def test_get_config_round_trip():
    init = tf.variance_scaling_initializer(scale=3.0, mode="fan_out", distribution="uniform",
                                           seed=9, dtype=tf.float64)
    again = tf.variance_scaling_initializer.from_config(init.get_config())
    assert again.get_config() == init.get_config() == {
        "scale": 3.0, "mode": "fan_out", "distribution": "uniform", "seed": 9,
        "dtype": "float64"}
    assert tf.constant_initializer(2.5).get_config() == {"value": 2.5, "dtype": "float32"}
    assert tf.random_uniform_initializer.from_config(
        tf.random_uniform_initializer(-1, 1).get_config()).maxval == 1
    assert tf.glorot_uniform_initializer(seed=1).get_config() == {"seed": 1, "dtype": "float32"}


def test_orthogonal_initializer():
    pytest.importorskip("tfjupyter.ops.linalg_ops", reason="needs the Qr op")
    for shape in ([6, 4], [4, 6], [3, 2, 5]):
        q = run(tf.orthogonal_initializer(gain=2.0, seed=1)(shape))
        assert q.shape == tuple(shape)
        flat = q.reshape(-1, shape[-1]) / 2.0
        gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
        np.testing.assert_allclose(gram, np.eye(len(gram)), atol=1e-5)
    with pytest.raises(ValueError, match="at least two-dimensional"):
        tf.orthogonal_initializer()([5])


# -- tf.contrib.layers initializers ---------------------------------------------------------------
def test_xavier_initializer_uniform_and_normal():
    layers = tf.contrib.layers
    x = run(layers.xavier_initializer(seed=1)([400, 600]))
    limit = math.sqrt(6 / 1000)
    assert np.abs(x).max() <= limit and np.abs(x).max() > 0.99 * limit
    y = run(layers.xavier_initializer(uniform=False, seed=1)([400, 600]))
    trunc_stddev = math.sqrt(1.3 / 500)
    assert np.abs(y).max() <= 2 * trunc_stddev + 1e-6
    check_moments(y, 0.0, trunc_stddev * 0.87962566)
    assert layers.xavier_initializer_conv2d is layers.xavier_initializer


def test_contrib_variance_scaling_initializer_defaults_to_he_normal():
    x = run(tf.contrib.layers.variance_scaling_initializer(seed=2)([3, 3, 50, 64]))
    fan_in = 3 * 3 * 50
    check_moments(x, 0.0, math.sqrt(1.3 * 2.0 / fan_in) * 0.87962566)
    u = run(tf.contrib.layers.variance_scaling_initializer(
        factor=1.0, mode="FAN_OUT", uniform=True)([100, 40]))
    assert np.abs(u).max() <= math.sqrt(3.0 / 40)
    with pytest.raises(TypeError, match="non-floating point"):
        tf.contrib.layers.variance_scaling_initializer(dtype=tf.int32)
    with pytest.raises(TypeError, match="Unknown mode"):
        tf.contrib.layers.variance_scaling_initializer(mode="fan_in")
    v = tf.get_variable("w", [30, 20], initializer=tf.contrib.layers.xavier_initializer())
    assert v.dtype is tf.float32


# -- tf.contrib.layers regularizers ---------------------------------------------------------------
W = np.array([[1.0, -2.0], [3.0, -0.5]])


def test_l2_regularizer_value_name_and_dtype():
    w = tf.constant(W, dtype=tf.float64)
    with tf.name_scope("GPU_0"):
        loss = tf.contrib.layers.l2_regularizer(0.01)(w)
    assert loss.op.name == "GPU_0/l2_regularizer"
    assert loss.dtype is tf.float64 and loss.get_shape().ndims == 0
    assert run(loss) == pytest.approx(0.01 * np.sum(W ** 2) / 2)
    scoped = tf.contrib.layers.l2_regularizer(0.5, scope="penalty")(w)
    assert scoped.op.name == "penalty"


def test_l1_and_l1_l2_regularizers():
    w = tf.constant(W, dtype=tf.float32)
    assert run(tf.contrib.layers.l1_regularizer(0.1)(w)) == pytest.approx(0.1 * np.abs(W).sum())
    both = tf.contrib.layers.l1_l2_regularizer(0.1, 0.2)(w)
    assert run(both) == pytest.approx(0.1 * np.abs(W).sum() + 0.2 * np.sum(W ** 2) / 2, rel=1e-6)
    assert both.op.name == "l1_l2_regularizer"
    only_l2 = tf.contrib.layers.l1_l2_regularizer(0.0, 0.2)(w)
    assert run(only_l2) == pytest.approx(0.2 * np.sum(W ** 2) / 2, rel=1e-6)


def test_regularizer_scale_checks():
    layers = tf.contrib.layers
    assert layers.l2_regularizer(0.0)(tf.constant(W)) is None
    assert layers.l1_regularizer(0.0)(tf.constant(W)) is None
    with pytest.raises(ValueError, match="Setting a scale less than 0 on a regularizer: -0.1"):
        layers.l2_regularizer(-0.1)
    with pytest.raises(ValueError, match="scale cannot be an integer: 1"):
        layers.l2_regularizer(1)
    with pytest.raises(ValueError, match="scale cannot be an integer"):
        layers.l1_regularizer(2)


def test_sum_regularizer_and_apply_regularization():
    layers = tf.contrib.layers
    assert layers.sum_regularizer([None]) is None
    w1 = tf.constant(W, dtype=tf.float32)
    w2 = tf.constant([[2.0, 2.0]], dtype=tf.float32)
    reg = layers.sum_regularizer([layers.l1_regularizer(0.1), None, layers.l2_regularizer(0.0),
                                  layers.l2_regularizer(0.5)])
    assert run(reg(w1)) == pytest.approx(0.1 * np.abs(W).sum() + 0.25 * np.sum(W ** 2), rel=1e-6)
    penalty = layers.apply_regularization(layers.l2_regularizer(1.0), [w1, w2])
    assert run(penalty) == pytest.approx(np.sum(W ** 2) / 2 + 4.0)
    assert penalty.op.name == "get_regularization_penalty"
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == [penalty]
    tf.add_to_collection("weights", w2)
    assert run(layers.apply_regularization(layers.l1_regularizer(1.0))) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="regularizer must return a scalar"):
        layers.apply_regularization(lambda w: w * 2.0, [w1])


def test_apply_regularization_without_weights():
    with pytest.raises(ValueError, match="No weights to regularize"):
        tf.contrib.layers.apply_regularization(tf.contrib.layers.l2_regularizer(1.0))


@pytest.mark.parametrize("make, grad", [
    (lambda: tf.contrib.layers.l2_regularizer(0.3), lambda w: 0.3 * w),
    (lambda: tf.contrib.layers.l1_regularizer(0.3), lambda w: 0.3 * np.sign(w)),
])
def test_regularizer_gradients(make, grad):
    w0 = np.array([[0.5, -1.5, 2.0], [-0.25, 1.0, 3.0]])
    w = tf.placeholder(tf.float64, [2, 3])
    loss = make()(w)
    theoretical, numerical = compute_gradient(w, [2, 3], loss, [], x_init_value=w0)
    np.testing.assert_allclose(theoretical, numerical, atol=1e-6)
    np.testing.assert_allclose(theoretical.reshape(2, 3), grad(w0), atol=1e-12)


def test_identity_and_named_variance_scaling_initializers():
    from tfjupyter import init_ops
    np.testing.assert_array_equal(run(init_ops.Identity(gain=2.0)([2, 3])),
                                  2.0 * np.eye(2, 3, dtype=np.float32))
    with pytest.raises(ValueError, match="only be used for 2D matrices"):
        init_ops.Identity()([2, 2, 2])
    he = run(init_ops.he_uniform(seed=1)([300, 100]))
    assert np.abs(he).max() <= math.sqrt(6 / 300) and np.abs(he).max() > 0.99 * math.sqrt(6 / 300)
    lecun = run(init_ops.lecun_normal(seed=1)([400, 200]))
    check_moments(lecun, 0.0, math.sqrt(1 / 400))
    assert init_ops.he_normal().get_config()["scale"] == 2.0
    assert init_ops.lecun_uniform().get_config()["distribution"] == "uniform"
