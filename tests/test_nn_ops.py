"""tf.nn: values against numpy references, gradients against numerical Jacobians (float64),
static shapes, TF 0.x/1.x call forms and errors."""
import itertools

import inspect

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.test import compute_gradient

RNG = np.random.RandomState(42)


@pytest.fixture(autouse=True)
def same_random_values():
    """Each test draws the same values however the tests are selected or ordered."""
    RNG.seed(42)


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def check_gradient(x, x_value, y, feed=None, atol=1e-6, rtol=1e-5):
    """Compares tf.gradients' Jacobian of y w.r.t. the placeholder x with central differences."""
    y_shape = run(y, {x: x_value, **(feed or {})}).shape
    theoretical, numerical = compute_gradient(x, x_value.shape, y, y_shape, x_value,
                                              extra_feed_dict=feed)
    np.testing.assert_allclose(theoretical, numerical, atol=atol, rtol=rtol)
    assert np.abs(theoretical).max() > 0  # the check compared something


def f64(shape, name=None):
    return tf.placeholder(tf.float64, shape, name=name)


# ---------------------------------------------------------------------------------------------
# Numpy references


def window(size, k, stride, padding, dilation=1):
    """(output size, padding before) along one axis, TensorFlow's formulas."""
    span = (k - 1) * dilation + 1
    if padding == "SAME":
        out = -(-size // stride)
        return out, max((out - 1) * stride + span - size, 0) // 2
    return -(-(size - span + 1) // stride), 0


def conv_ref(x, w, strides, padding, dilations=(1, 1)):
    n, h, wd, _ = x.shape
    kh, kw, _, co = w.shape
    oh, pt = window(h, kh, strides[0], padding, dilations[0])
    ow, pl = window(wd, kw, strides[1], padding, dilations[1])
    y = np.zeros((n, oh, ow, co))
    for i, j, a, q in itertools.product(range(oh), range(ow), range(kh), range(kw)):
        yy, xx = i * strides[0] - pt + a * dilations[0], j * strides[1] - pl + q * dilations[1]
        if 0 <= yy < h and 0 <= xx < wd:
            y[:, i, j] += x[:, yy, xx] @ w[a, q]
    return y


def pool_ref(x, ksize, strides, padding, reduce):
    n, h, w, c = x.shape
    oh, pt = window(h, ksize[0], strides[0], padding)
    ow, pl = window(w, ksize[1], strides[1], padding)
    y = np.zeros((n, oh, ow, c))
    for i, j in itertools.product(range(oh), range(ow)):
        y0, x0 = i * strides[0] - pt, j * strides[1] - pl
        patch = x[:, max(y0, 0):y0 + ksize[0], max(x0, 0):x0 + ksize[1]]
        y[:, i, j] = reduce(patch.reshape(n, -1, c), axis=1)
    return y


def softmax_ref(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def lrn_ref(x, radius, bias, alpha, beta):
    c = x.shape[-1]
    out = np.empty_like(x)
    for d in range(c):
        lo, hi = max(0, d - radius), min(c, d + radius + 1)
        out[..., d] = x[..., d] / (bias + alpha * (x[..., lo:hi] ** 2).sum(-1)) ** beta
    return out


# ---------------------------------------------------------------------------------------------
# Convolution

CONV_CASES = [("SAME", (1, 1)), ("VALID", (1, 1)), ("SAME", (2, 2)), ("VALID", (2, 2)),
              ("SAME", (2, 1))]


@pytest.mark.parametrize("padding,strides", CONV_CASES)
def test_conv2d_values_and_static_shape(padding, strides):
    x_val, w_val = RNG.randn(2, 7, 6, 3), RNG.randn(3, 2, 3, 4)
    x, w = tf.constant(x_val), tf.constant(w_val)
    y = tf.nn.conv2d(x, w, [1, *strides, 1], padding)
    want = conv_ref(x_val, w_val, strides, padding)
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(run(y), want, rtol=1e-10, atol=1e-12)


def test_conv2d_dilations_and_float32():
    x_val = RNG.randn(1, 9, 8, 2).astype(np.float32)
    w_val = RNG.randn(3, 3, 2, 5).astype(np.float32)
    y = tf.nn.conv2d(x_val, w_val, [1, 1, 1, 1], "VALID", dilations=[1, 2, 3, 1])
    assert y.dtype == tf.float32 and y.shape.as_list() == [1, 5, 2, 5]
    np.testing.assert_allclose(run(y), conv_ref(x_val, w_val, (1, 1), "VALID", (2, 3)),
                               rtol=1e-4, atol=1e-5)


def test_conv2d_partial_static_shapes():
    x = tf.placeholder(tf.float32, [None, 28, 28, 1])
    w = tf.placeholder(tf.float32, [5, 5, 1, 32])
    assert tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME").shape.as_list() == [None, 14, 14, 32]
    assert tf.nn.conv2d(x, w, [1, 3, 3, 1], "VALID").shape.as_list() == [None, 8, 8, 32]
    nchw = tf.placeholder(tf.float32, [8, 1, 28, 28])
    assert tf.nn.conv2d(nchw, w, [1, 1, 2, 2], "SAME", data_format="NCHW").shape.as_list() == \
        [8, 32, 14, 14]


@pytest.mark.parametrize("padding,strides", CONV_CASES)
def test_conv2d_gradients(padding, strides):
    x_val, w_val = RNG.randn(2, 5, 4, 2), RNG.randn(3, 2, 2, 3)
    x, w = f64(x_val.shape), f64(w_val.shape)
    y = tf.nn.conv2d(x, w, [1, *strides, 1], padding)
    check_gradient(x, x_val, y, {w: w_val})
    check_gradient(w, w_val, y, {x: x_val})


def test_conv2d_gradient_with_unknown_batch_and_dilation():
    x_val, w_val = RNG.randn(2, 6, 5, 2), RNG.randn(2, 2, 2, 2)
    x, w = f64([None, 6, 5, 2]), tf.constant(w_val)
    y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1])
    check_gradient(x, x_val, y)


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    x_val, w_val, dy_val = RNG.randn(2, 7, 7, 3), RNG.randn(3, 3, 3, 4), RNG.randn(2, 4, 4, 4)
    strides = [1, 2, 2, 1]
    y = tf.nn.conv2d(tf.constant(x_val), tf.constant(w_val), strides, "SAME")
    xt = tf.nn.conv2d_transpose(tf.constant(dy_val), tf.constant(w_val), [2, 7, 7, 3], strides)
    assert xt.shape.as_list() == [2, 7, 7, 3] and xt.op.type == "Conv2DBackpropInput"
    y_val, xt_val = run([y, xt])
    np.testing.assert_allclose(np.vdot(y_val, dy_val), np.vdot(x_val, xt_val), rtol=1e-10)
    dw = tf.nn.conv2d_backprop_filter(tf.constant(x_val), [3, 3, 3, 4], tf.constant(dy_val),
                                      strides, "SAME")
    # d<conv(x, w), dy>/dw, by finite differences along a random direction.
    direction = RNG.randn(*w_val.shape)
    eps = 1e-6
    plus = conv_ref(x_val, w_val + eps * direction, (2, 2), "SAME")
    minus = conv_ref(x_val, w_val - eps * direction, (2, 2), "SAME")
    np.testing.assert_allclose(np.vdot(run(dw), direction),
                               np.vdot(plus - minus, dy_val) / (2 * eps), rtol=1e-6)


def test_conv2d_backprop_ops_second_order_gradients():
    dy_val, w_val = RNG.randn(1, 3, 3, 2), RNG.randn(2, 2, 3, 2)
    dy, w = f64(dy_val.shape), f64(w_val.shape)
    xt = tf.nn.conv2d_transpose(dy, w, [1, 5, 5, 3], [1, 2, 2, 1], "SAME")
    check_gradient(dy, dy_val, xt, {w: w_val})
    check_gradient(w, w_val, xt, {dy: dy_val})
    x_val = RNG.randn(1, 5, 5, 3)
    x = f64(x_val.shape)
    dw = tf.nn.conv2d_backprop_filter(x, [2, 2, 3, 2], dy, [1, 2, 2, 1], "SAME")
    check_gradient(x, x_val, dw, {dy: dy_val})
    check_gradient(dy, dy_val, dw, {x: x_val})


def test_conv2d_shape_errors_name_the_op():
    x = tf.placeholder(tf.float32, [1, 5, 5, 3])
    with pytest.raises(ValueError,
                       match=r"Dimensions must be equal, but are 3 and 4.*'bad_conv'.*Conv2D"):
        tf.nn.conv2d(x, tf.zeros([3, 3, 4, 8]), [1, 1, 1, 1], "SAME", name="bad_conv")
    with pytest.raises(ValueError, match=r"Negative dimension size caused by subtracting 7 "
                                         r"from 5 for 'Conv2D"):
        tf.nn.conv2d(x, tf.zeros([7, 7, 3, 8]), [1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match=r"Conv2D.*strides attribute to contain 4 values"):
        tf.nn.conv2d(x, tf.zeros([3, 3, 3, 8]), [1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"Conv2D.*strides in the batch and depth"):
        tf.nn.conv2d(x, tf.zeros([3, 3, 3, 8]), [2, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"padding.*'Conv2D'.*'same' not in"):
        tf.nn.conv2d(x, tf.zeros([3, 3, 3, 8]), [1, 1, 1, 1], "same")
    with pytest.raises(ValueError, match=r"Shape must be rank 4 but is rank 3 for 'Conv2D"):
        tf.nn.conv2d(tf.zeros([5, 5, 3]), tf.zeros([3, 3, 3, 8]), [1, 1, 1, 1], "SAME")
    with pytest.raises(TypeError, match=r"Conv2D.*int32"):
        tf.nn.conv2d(tf.zeros([1, 5, 5, 3], tf.int32), tf.zeros([3, 3, 3, 8], tf.int32),
                     [1, 1, 1, 1], "SAME")
    with pytest.raises(TypeError, match=r"Expected list for 'strides' argument to 'conv2d'"):
        tf.nn.conv2d(x, tf.zeros([3, 3, 3, 8]), 1, "SAME")
    with pytest.raises(ValueError, match="Conv2DBackpropInput.*out_backprop"):
        tf.nn.conv2d_backprop_input([1, 5, 5, 3], tf.zeros([3, 3, 3, 8]), tf.zeros([1, 4, 4, 8]),
                                    [1, 1, 1, 1], "SAME")


# ---------------------------------------------------------------------------------------------
# Pooling

POOL_CASES = [((2, 2), (2, 2), "VALID"), ((3, 3), (2, 2), "SAME"), ((3, 2), (1, 2), "VALID"),
              ((2, 2), (1, 1), "SAME")]


def distinct_values(shape):
    """Values 0.1 apart in random order: no ties, and no max changes under a 1e-3 nudge."""
    return RNG.permutation(np.prod(shape)).reshape(shape) * 0.1


@pytest.mark.parametrize("ksize,strides,padding", POOL_CASES)
def test_max_pool_values_and_gradient(ksize, strides, padding):
    x_val = distinct_values((2, 5, 6, 2))
    x = f64(x_val.shape)
    y = tf.nn.max_pool(x, [1, *ksize, 1], [1, *strides, 1], padding)
    want = pool_ref(x_val, ksize, strides, padding, np.max)
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(run(y, {x: x_val}), want)
    check_gradient(x, x_val, y)


@pytest.mark.parametrize("ksize,strides,padding", POOL_CASES)
def test_avg_pool_values_and_gradient(ksize, strides, padding):
    x_val = RNG.randn(2, 5, 6, 2)
    x = f64(x_val.shape)
    y = tf.nn.avg_pool(x, [1, *ksize, 1], [1, *strides, 1], padding)
    want = pool_ref(x_val, ksize, strides, padding, np.mean)
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(run(y, {x: x_val}), want, rtol=1e-12)
    check_gradient(x, x_val, y)


def test_avg_pool_second_order_and_unknown_batch():
    x_val = RNG.randn(3, 4, 4, 1)
    x = f64([None, 4, 4, 1])
    y = tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    assert y.shape.as_list() == [None, 2, 2, 1]
    (dx,) = tf.gradients(tf.reduce_sum(tf.square(y)), x)
    check_gradient(x, x_val, dx)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_max_pool_second_order_gradients(padding):
    x_val = distinct_values((2, 5, 5, 2))
    x = f64(x_val.shape)
    y = tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], padding)
    (dx,) = tf.gradients(tf.reduce_sum(tf.square(y)), x)
    check_gradient(x, x_val, dx)
    # MaxPoolGrad is linear in its gradient input: its gradient is MaxPoolGradGrad, whose
    # gradient is MaxPoolGrad again. Each check compares one kernel with the other.
    grad_y, g = f64(y.shape.as_list()), f64(x_val.shape)
    (routed,) = tf.gradients(y, x, grad_ys=grad_y)
    (picked,) = tf.gradients(routed, grad_y, grad_ys=g)
    assert routed.op.type == "MaxPoolGrad" and picked.op.type == "MaxPoolGradGrad"
    check_gradient(grad_y, RNG.randn(*y.shape.as_list()), routed, {x: x_val})
    check_gradient(g, RNG.randn(*x_val.shape), picked, {x: x_val})


def test_pool_errors_name_the_op():
    x = tf.placeholder(tf.float32, [1, 4, 4, 1])
    with pytest.raises(ValueError,
                       match=r"MaxPool op 'pool1' requires the ksize attribute to contain 4"):
        tf.nn.max_pool(x, [2, 2], [1, 2, 2, 1], "SAME", name="pool1")
    with pytest.raises(ValueError, match=r"AvgPool.*ksize in the batch and depth"):
        tf.nn.avg_pool(x, [2, 2, 2, 1], [1, 2, 2, 1], "SAME")
    with pytest.raises(ValueError, match=r"Negative dimension size.*'MaxPool'"):
        tf.nn.max_pool(x, [1, 5, 5, 1], [1, 1, 1, 1], "VALID")


# ---------------------------------------------------------------------------------------------
# Bias and activations


def test_bias_add_values_gradients_and_errors():
    x_val, b_val = RNG.randn(2, 3, 4), RNG.randn(4)
    x, b = f64(x_val.shape), f64([4])
    y = tf.nn.bias_add(x, b)
    assert y.op.type == "BiasAdd" and y.op.name == "BiasAdd"
    np.testing.assert_allclose(run(y, {x: x_val, b: b_val}), x_val + b_val)
    check_gradient(x, x_val, y, {b: b_val})
    check_gradient(b, b_val, y, {x: x_val})
    # The gradient of BiasAddGrad (used by second derivatives).
    (db,) = tf.gradients(tf.reduce_sum(tf.square(y)), b)
    check_gradient(x, x_val, db, {b: b_val})
    nchw = tf.placeholder(tf.float32, [2, 4, 3, 3])
    assert tf.nn.bias_add(nchw, tf.zeros([4]), data_format="NCHW").shape.as_list() == [2, 4, 3, 3]
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 4 and 5.*'BiasAdd'"):
        tf.nn.bias_add(x, tf.zeros([5], tf.float64))
    with pytest.raises(ValueError, match=r"at least rank 2.*'BiasAdd'"):
        tf.nn.bias_add(tf.zeros([3]), tf.zeros([3]))


@pytest.mark.parametrize("fn,ref", [
    (tf.nn.relu, lambda x: np.maximum(x, 0)),
    (tf.nn.relu6, lambda x: np.clip(x, 0, 6)),
    (tf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    (tf.nn.softplus, lambda x: np.log1p(np.exp(x))),
])
def test_activations_values_and_gradients(fn, ref):
    # Values away from the kinks at 0 and 6, so finite differences stay on one side.
    x_val = np.array([[-3.2, -1.1, -0.4, 0.3], [0.9, 2.5, 5.5, 7.4]])
    x = f64(x_val.shape)
    y = fn(x)
    np.testing.assert_allclose(run(y, {x: x_val}), ref(x_val), rtol=1e-12)
    check_gradient(x, x_val, y)
    # Second derivatives go through the *Grad ops' gradients.
    (dx,) = tf.gradients(tf.reduce_sum(tf.square(y)), x)
    check_gradient(x, x_val, dx)


def test_relu_on_integers_and_float32():
    assert run(tf.nn.relu(tf.constant([-2, 0, 3]))).tolist() == [0, 0, 3]
    y = tf.nn.relu6(tf.constant([-1.0, 3.0, 9.0]))
    assert y.dtype == tf.float32 and run(y).tolist() == [0.0, 3.0, 6.0]
    with pytest.raises(TypeError, match="Elu"):
        tf.nn.elu(tf.constant([1, 2]))


# ---------------------------------------------------------------------------------------------
# Softmax and losses


def test_softmax_and_log_softmax_values_and_gradients():
    x_val = RNG.randn(3, 5)
    x = f64(x_val.shape)
    sm, lsm = tf.nn.softmax(x), tf.nn.log_softmax(x)
    got_sm, got_lsm = run([sm, lsm], {x: x_val})
    np.testing.assert_allclose(got_sm, softmax_ref(x_val), rtol=1e-12)
    np.testing.assert_allclose(got_lsm, np.log(softmax_ref(x_val)), rtol=1e-12)
    check_gradient(x, x_val, sm)
    check_gradient(x, x_val, lsm)


def test_softmax_axis_dim_and_higher_rank():
    x_val = RNG.randn(3, 4, 2)
    x = f64(x_val.shape)
    for kwargs, axis in [({}, -1), ({"axis": 1}, 1), ({"dim": 0}, 0)]:
        y = tf.nn.softmax(x, **kwargs)
        assert y.shape.as_list() == [3, 4, 2]
        np.testing.assert_allclose(run(y, {x: x_val}), softmax_ref(x_val, axis), rtol=1e-12)
    np.testing.assert_allclose(run(tf.nn.log_softmax(x, 0), {x: x_val}),
                               np.log(softmax_ref(x_val, 0)), rtol=1e-12)
    check_gradient(x, x_val, tf.nn.softmax(x, axis=1))
    with pytest.raises(ValueError, match=r"Dimension \(3\) must be in the range \[-3, 3\)"):
        tf.nn.softmax(x, axis=3)
    with pytest.raises(TypeError, match="Softmax"):
        tf.nn.softmax(tf.constant([1, 2]))


def xent_ref(logits, labels, axis=-1):
    return -(labels * np.log(softmax_ref(logits, axis))).sum(axis)


def test_softmax_cross_entropy_values_and_call_forms():
    logits_val = RNG.randn(4, 5)
    labels_val = softmax_ref(RNG.randn(4, 5))
    logits, labels = f64(logits_val.shape), f64(labels_val.shape)
    feed = {logits: logits_val, labels: labels_val}
    new = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    old = tf.nn.softmax_cross_entropy_with_logits(logits, labels)  # TF 0.x positional order
    old_dim = tf.nn.softmax_cross_entropy_with_logits(logits, labels, -1, "old_dim")
    v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    assert new.shape.as_list() == [4] and old_dim.op.name == "old_dim"
    values = run([new, old, old_dim, v2], feed)
    for v in values:
        np.testing.assert_allclose(v, xent_ref(logits_val, labels_val), rtol=1e-12)
    check_gradient(logits, logits_val, new, {labels: labels_val})
    # v1 stops the gradient into labels; v2 lets it through.
    assert tf.gradients(new, labels) == [None]
    check_gradient(labels, labels_val, v2, {logits: logits_val})
    with pytest.raises(ValueError,
                       match="Only call `softmax_cross_entropy_with_logits` with named"):
        tf.nn.softmax_cross_entropy_with_logits(logits)


def test_softmax_cross_entropy_dim_rank3_and_second_order():
    logits_val = RNG.randn(2, 3, 4)
    labels_val = softmax_ref(RNG.randn(2, 3, 4), 1)
    logits = f64(logits_val.shape)
    y = tf.nn.softmax_cross_entropy_with_logits(labels=labels_val, logits=logits, dim=1)
    assert y.shape.as_list() == [2, 4]
    np.testing.assert_allclose(run(y, {logits: logits_val}), xent_ref(logits_val, labels_val, 1),
                               rtol=1e-12)
    check_gradient(logits, logits_val, y)
    labels2 = softmax_ref(RNG.randn(2, 3, 4))
    y2 = tf.nn.softmax_cross_entropy_with_logits(labels=labels2, logits=logits)
    assert y2.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(y2, {logits: logits_val}), xent_ref(logits_val, labels2),
                               rtol=1e-12)
    # The Hessian: the gradient of the gradient uses the backprop output's gradient term.
    (g,) = tf.gradients(tf.reduce_sum(y2), logits)
    check_gradient(logits, logits_val, g)


def test_sparse_softmax_cross_entropy_values_call_forms_and_gradient():
    logits_val = RNG.randn(4, 5)
    labels_val = np.array([0, 4, 2, 2])
    logits = f64(logits_val.shape)
    labels = tf.constant(labels_val, tf.int64)
    new = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    old = tf.nn.sparse_softmax_cross_entropy_with_logits(logits, labels)
    named = tf.nn.sparse_softmax_cross_entropy_with_logits(logits, labels, "loss")
    assert named.op.name == "loss" and new.shape.as_list() == [4]
    want = -np.log(softmax_ref(logits_val))[np.arange(4), labels_val]
    for v in run([new, old, named], {logits: logits_val}):
        np.testing.assert_allclose(v, want, rtol=1e-12)
    check_gradient(logits, logits_val, new)
    (g,) = tf.gradients(tf.reduce_sum(new), logits)
    check_gradient(logits, logits_val, g)


def test_sparse_softmax_cross_entropy_higher_rank_and_errors():
    logits_val = RNG.randn(2, 3, 4)
    labels_val = np.array([[0, 3, 1], [2, 2, 0]], np.int32)
    y = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels_val, logits=logits_val)
    assert y.shape.as_list() == [2, 3]
    want = -np.log(softmax_ref(logits_val))[np.arange(2)[:, None], np.arange(3), labels_val]
    np.testing.assert_allclose(run(y), want, rtol=1e-6)
    logits = tf.placeholder(tf.float32, [None, 10])
    with pytest.raises(TypeError,
                       match=r"SparseSoftmaxCrossEntropyWithLogits.*float32.*int32, int64"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.placeholder(tf.float32, [None]), logits=logits)
    with pytest.raises(ValueError, match=r"SparseSoftmaxCrossEntropyWithLogits.*Rank mismatch.*"
                                         r"received 2.*received 2"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.placeholder(tf.int32, [None, 10]), logits=logits)
    with pytest.raises(ValueError, match=r"Shape mismatch"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.zeros([3], tf.int32),
                                                       logits=tf.zeros([4, 10]))
    bad = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 12], logits=tf.zeros([2, 10]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="label value of 12"):
        run(bad)


def test_l2_loss_value_and_gradient():
    x_val = RNG.randn(3, 4)
    x = f64(x_val.shape)
    y = tf.nn.l2_loss(x)
    assert y.shape.as_list() == []
    np.testing.assert_allclose(run(y, {x: x_val}), (x_val ** 2).sum() / 2, rtol=1e-12)
    check_gradient(x, x_val, y)


# ---------------------------------------------------------------------------------------------
# Top-k and LRN


def test_in_top_k():
    predictions = np.array([[0.1, 0.3, 0.3, 0.2], [0.5, 0.1, 0.2, 0.2], [0.1, np.nan, 0.5, 0.2]],
                           np.float32)
    targets = np.array([2, 3, 2])
    got = run([tf.nn.in_top_k(predictions, targets, k) for k in (1, 2)])
    # Ties at the boundary count as in; a row with a NaN is False.
    assert got[0].tolist() == [True, False, False]
    assert got[1].tolist() == [True, True, False]
    k = tf.placeholder(tf.int32, [])
    assert run(tf.nn.in_top_k(predictions, [1, 0, 5], k), {k: 1}).tolist() == [True, True, False]
    with pytest.raises(ValueError, match=r"batch size of predictions vs. targets.*'InTopK"):
        tf.nn.in_top_k(predictions, [1, 2], 1)
    assert tf.gradients(tf.cast(tf.nn.in_top_k(predictions, targets, 1), tf.float32),
                        tf.constant(1.0)) == [None]


def test_top_k_values_indices_and_gradient():
    x_val = np.array([[1.0, 3.0, 3.0, 2.0, 0.5], [5.0, 4.0, -1.0, 4.0, 0.0]])
    values, indices = tf.nn.top_k(x_val, k=3)
    assert values.shape.as_list() == [2, 3] and indices.dtype == tf.int32
    v, i = run([values, indices])
    assert v.tolist() == [[3, 3, 2], [5, 4, 4]] and i.tolist() == [[1, 2, 3], [0, 1, 3]]
    x = f64([2, 5])
    check_gradient(x, distinct_values((2, 5)), tf.nn.top_k(x, 2).values)
    with pytest.raises(ValueError, match="at least k columns. Had 5, needed 6"):
        tf.nn.top_k(x, 6)


def test_local_response_normalization():
    x_val = RNG.randn(2, 3, 3, 7)
    x = f64(x_val.shape)
    y = tf.nn.lrn(x, 2, bias=1.5, alpha=0.3, beta=0.75)
    np.testing.assert_allclose(run(y, {x: x_val}), lrn_ref(x_val, 2, 1.5, 0.3, 0.75), rtol=1e-12)
    x_small = RNG.randn(1, 2, 2, 5)
    x2 = f64(x_small.shape)
    check_gradient(x2, x_small, tf.nn.local_response_normalization(x2, 1, 1.0, 0.5, 0.6))
    y32 = tf.nn.lrn(x_val.astype(np.float32), 4, 1.0, 0.001 / 9.0, 0.75)  # the CIFAR-10 setting
    np.testing.assert_allclose(run(y32), lrn_ref(x_val, 4, 1.0, 0.001 / 9.0, 0.75), rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# Compositions (tfjupyter/nn.py)


def test_dropout_statistics_scaling_and_identity():
    x_val = np.full((200, 100), 2.0, np.float32)
    y = tf.nn.dropout(tf.constant(x_val), 0.3, seed=1)
    out = run(y)
    kept = out != 0
    assert abs(kept.mean() - 0.3) < 0.02
    np.testing.assert_allclose(out[kept], 2.0 / 0.3, rtol=1e-6)
    assert y.shape.as_list() == [200, 100]
    # keep_prob 1 as a number is the input itself; fed through a placeholder it is the identity.
    x = tf.placeholder(tf.float32, [None, 100])
    assert tf.nn.dropout(x, 1.0) is x
    keep = tf.placeholder(tf.float32)
    dropped = tf.nn.dropout(x, keep)
    assert dropped.shape.as_list() == [None, 100]
    np.testing.assert_array_equal(run(dropped, {x: x_val[:5], keep: 1.0}), x_val[:5])
    assert (run(dropped, {x: x_val, keep: 0.5}) == 0).mean() > 0.4
    # rate (TF 1.13+) is 1 - keep_prob.
    assert abs((run(tf.nn.dropout(x_val, rate=0.75)) != 0).mean() - 0.25) < 0.02


def test_dropout_noise_shape_gradient_and_errors():
    x_val = np.ones((50, 8))
    y = run(tf.nn.dropout(tf.constant(x_val), 0.5, noise_shape=[50, 1]))
    assert all(len(set(row)) == 1 for row in y)  # one decision per row
    x = f64([4, 3])
    y = tf.nn.dropout(x, 0.5, seed=3)
    (dx,) = tf.gradients(y, x)
    with tf.Session() as sess:  # the mask is random per run: compare within one run
        y_val, dx_val = sess.run([y, dx], {x: np.ones((4, 3))})
    np.testing.assert_array_equal(dx_val, y_val)
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"keep_prob must be a scalar tensor or a float in "
                                             r"the range \(0, 1\]"):
            tf.nn.dropout(x, bad)
    with pytest.raises(ValueError, match="floating point tensor"):
        tf.nn.dropout(tf.constant([1, 2]), 0.5)


def test_moments():
    x_val = RNG.randn(4, 3, 5)
    x = f64(x_val.shape)
    mean, var = tf.nn.moments(x, [0, 2])
    assert mean.shape.as_list() == [3] and var.shape.as_list() == [3]
    m, v = run([mean, var], {x: x_val})
    np.testing.assert_allclose(m, x_val.mean(axis=(0, 2)), rtol=1e-12)
    np.testing.assert_allclose(v, x_val.var(axis=(0, 2)), rtol=1e-12)
    mean_k, var_k = tf.nn.moments(x, [1], keep_dims=True)
    assert mean_k.shape.as_list() == [4, 1, 5]
    np.testing.assert_allclose(run(var_k, {x: x_val}), x_val.var(axis=1, keepdims=True),
                               rtol=1e-12)
    check_gradient(x, x_val, var)
    check_gradient(x, x_val, mean)


def test_weighted_moments_and_sufficient_statistics():
    x_val, w_val = RNG.randn(4, 3), RNG.rand(4, 1) + 0.1
    mean, var = tf.nn.weighted_moments(x_val, [0], w_val)
    want_mean = (w_val * x_val).sum(0) / w_val.sum()
    want_var = (w_val * (x_val - want_mean) ** 2).sum(0) / w_val.sum()
    got = run([mean, var])
    np.testing.assert_allclose(got[0], want_mean, rtol=1e-12)
    np.testing.assert_allclose(got[1], want_var, rtol=1e-12)
    x = tf.placeholder(tf.float64, [None, 3])
    stats = tf.nn.sufficient_statistics(x, [0], shift=0.5)
    m, v = tf.nn.normalize_moments(*stats)
    got = run([stats[0], m, v], {x: x_val})
    assert got[0] == 4
    np.testing.assert_allclose(got[1], x_val.mean(0), rtol=1e-12)
    np.testing.assert_allclose(got[2], x_val.var(0), rtol=1e-12)


def test_l2_normalize():
    x_val = RNG.randn(3, 4)
    x = f64(x_val.shape)
    y = tf.nn.l2_normalize(x, 1)
    np.testing.assert_allclose(run(y, {x: x_val}),
                               x_val / np.linalg.norm(x_val, axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(run(tf.nn.l2_normalize(x, dim=0), {x: x_val}),
                               x_val / np.linalg.norm(x_val, axis=0), rtol=1e-12)
    check_gradient(x, x_val, y)


def test_sigmoid_and_weighted_cross_entropy():
    logits_val = np.array([[-50.0, -2.0, 0.0], [0.5, 3.0, 50.0]])
    labels_val = np.array([[0.0, 1.0, 0.3], [1.0, 0.0, 1.0]])
    logits = f64(logits_val.shape)

    def ref(x, z, pos_weight=1.0):  # -log(sigmoid(x)) = log(1 + exp(-x)), and so on
        return pos_weight * z * np.logaddexp(0, -x) + (1 - z) * np.logaddexp(0, x)

    new = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels_val, logits=logits)
    old = tf.nn.sigmoid_cross_entropy_with_logits(logits, labels_val)  # 0.x (logits, targets)
    for got in run([new, old], {logits: logits_val}):
        np.testing.assert_allclose(got, ref(logits_val, labels_val), rtol=1e-12)
    check_gradient(logits, logits_val * 0.1, new)
    w = tf.nn.weighted_cross_entropy_with_logits(labels_val, logits, 3.0)
    # TF's formula cancels at x = -50 (-50 + 50.0...): 0 where the exact value is 1.9e-22.
    np.testing.assert_allclose(run(w, {logits: logits_val}), ref(logits_val, labels_val, 3.0),
                               rtol=1e-12, atol=1e-14)
    # (Away from x = 0, where TF's formula differentiates |x| and max(-x, 0) as 0.)
    check_gradient(logits, logits_val * 0.1 + 0.05, w)
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=np.zeros((2, 2)), logits=logits)


def test_batch_normalization_and_fused_batch_norm():
    x_val = RNG.randn(4, 2, 3, 5)
    scale, offset = RNG.rand(5) + 0.5, RNG.randn(5)
    mean, var = x_val.mean(axis=(0, 1, 2)), x_val.var(axis=(0, 1, 2))
    want = scale * (x_val - mean) / np.sqrt(var + 1e-3) + offset
    y = tf.nn.batch_normalization(x_val, mean, var, offset, scale, 1e-3)
    np.testing.assert_allclose(run(y), want, rtol=1e-10)
    fy, fmean, fvar = tf.nn.fused_batch_norm(x_val, scale, offset, epsilon=1e-3)
    got = run([fy, fmean, fvar])
    np.testing.assert_allclose(got[0], want, rtol=1e-10)
    np.testing.assert_allclose(got[1], mean, rtol=1e-12)
    np.testing.assert_allclose(got[2], x_val.reshape(-1, 5).var(axis=0, ddof=1), rtol=1e-12)
    nchw = np.transpose(x_val, (0, 3, 1, 2))
    iy, _, _ = tf.nn.fused_batch_norm(nchw, scale, offset, mean, var, 1e-3, data_format="NCHW",
                                      is_training=False)
    np.testing.assert_allclose(run(iy), np.transpose(want, (0, 3, 1, 2)), rtol=1e-10)
    small = f64([4, 1, 1, 2])
    small_val = np.array([[-1.5, 0.3], [0.2, 1.9], [1.1, -0.8], [2.0, 0.6]]).reshape(4, 1, 1, 2)
    check_gradient(small, small_val, tf.nn.fused_batch_norm(small, [1.5, 0.5], [0.0, 1.0])[0],
                   atol=1e-5)


def test_layers_and_small_activations():
    x_val, w_val, b_val = RNG.randn(3, 4), RNG.randn(4, 2), RNG.randn(2)
    np.testing.assert_allclose(run(tf.nn.xw_plus_b(x_val, w_val, b_val)), x_val @ w_val + b_val)
    np.testing.assert_allclose(run(tf.nn.relu_layer(x_val, w_val, b_val)),
                               np.maximum(x_val @ w_val + b_val, 0))
    v = np.array([-2.0, -0.5, 0.5, 3.0])
    np.testing.assert_allclose(run(tf.nn.leaky_relu(v, 0.1)), np.where(v > 0, v, 0.1 * v))
    np.testing.assert_allclose(run(tf.nn.softsign(v)), v / (1 + np.abs(v)))
    np.testing.assert_allclose(run(tf.nn.selu(v)), 1.0507009873554805 * np.where(
        v > 0, v, 1.6732632423543772 * np.expm1(v)), rtol=1e-12)
    np.testing.assert_allclose(run(tf.nn.crelu(v)), np.concatenate([np.maximum(v, 0),
                                                                      np.maximum(-v, 0)]))
    assert run(tf.nn.zero_fraction([0.0, 1.0, 0.0, 2.0])) == 0.5
    np.testing.assert_allclose(run(tf.nn.sigmoid(v)), 1 / (1 + np.exp(-v)), rtol=1e-6)
    np.testing.assert_allclose(run(tf.nn.tanh(v)), np.tanh(v), rtol=1e-6)


def test_conv1d():
    x_val, w_val = RNG.randn(2, 9, 3), RNG.randn(3, 3, 4)
    y = tf.nn.conv1d(x_val, w_val, 2, "SAME")
    assert y.shape.as_list() == [2, 5, 4]
    want = conv_ref(x_val[:, None], w_val[None], (1, 2), "SAME")[:, 0]
    np.testing.assert_allclose(run(y), want, rtol=1e-10)


def test_embedding_lookup_single_and_sharded():
    table = RNG.randn(10, 3)
    ids = np.array([[3, 0], [9, 3]])
    np.testing.assert_allclose(run(tf.nn.embedding_lookup(table, ids)), table[ids])
    # mod: id i lives in shard i % 3 at row i // 3; div: contiguous blocks.
    mod_shards = [table[s::3] for s in range(3)]
    np.testing.assert_allclose(run(tf.nn.embedding_lookup(mod_shards, ids)), table[ids])
    div_shards = [table[:4], table[4:7], table[7:]]
    np.testing.assert_allclose(
        run(tf.nn.embedding_lookup(div_shards, ids, partition_strategy="div")), table[ids])
    clipped = run(tf.nn.embedding_lookup(table * 10, ids, max_norm=1.0))
    np.testing.assert_allclose(np.linalg.norm(clipped, axis=-1), 1.0, rtol=1e-12)
    params = f64([10, 3])
    check_gradient(params, table, tf.nn.embedding_lookup(params, ids))


def test_namespace():
    for name in tf.nn.__all__:   # functions, and namespaces such as tf.nn.rnn_cell
        assert callable(getattr(tf.nn, name)) or inspect.ismodule(getattr(tf.nn, name)), name
    assert tf.nn.lrn is tf.nn.local_response_normalization
    assert tf.nn.sigmoid is tf.sigmoid and tf.nn.tanh is tf.tanh


# ---------------------------------------------------------------------------------------------
# Candidate samplers and sampled losses


def log_uniform_p(classes, range_max):
    classes = np.asarray(classes, np.float64)
    return np.log((classes + 2) / (classes + 1)) / np.log(range_max + 1)


def test_log_uniform_candidate_sampler_distribution_and_expected_counts():
    labels = tf.constant([[0], [7]], tf.int64)
    s = tf.nn.log_uniform_candidate_sampler(labels, 1, 20000, False, 10, seed=3)
    assert s.sampled_candidates.shape.as_list() == [20000]
    assert s.true_expected_count.shape.as_list() == [2, 1]
    sampled, true_count, sampled_count = run(s)
    assert sampled.dtype == np.int64 and sampled.min() >= 0 and sampled.max() < 10
    freq = np.bincount(sampled, minlength=10) / 20000
    np.testing.assert_allclose(freq, log_uniform_p(np.arange(10), 10), atol=0.01)
    np.testing.assert_allclose(true_count[:, 0], 20000 * log_uniform_p([0, 7], 10), rtol=1e-6)
    np.testing.assert_allclose(sampled_count, 20000 * log_uniform_p(sampled, 10), rtol=1e-6)


def test_unique_sampling_seeds_and_errors():
    labels = tf.constant([[1, 2]], tf.int64)
    s = tf.nn.log_uniform_candidate_sampler(labels, 2, 8, True, 10, seed=5)
    first, second = run(s), run(s)
    np.testing.assert_array_equal(first[0], second[0])  # an op seed fixes the stream
    sampled, true_count, sampled_count = first
    assert len(set(sampled.tolist())) == 8
    # Unique sampling: expected count 1 - (1 - p) ** tries, one tries for all classes.
    p = log_uniform_p(np.concatenate([[1, 2], sampled]), 10)
    counts = np.concatenate([true_count[0], sampled_count])
    tries = np.log1p(-counts) / np.log1p(-p)
    np.testing.assert_allclose(tries, np.round(tries[0]), rtol=1e-4)
    assert tries[0] >= 8
    u = run(tf.nn.uniform_candidate_sampler(labels, 2, 5, True, 5))
    assert sorted(u[0].tolist()) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="UniformCandidateSampler.*range is too small"):
        tf.nn.uniform_candidate_sampler(labels, 2, 6, True, 5)


def sampled_logits_ref(w, b, labels, inputs, sampled, true_exp, sampled_exp):
    true_logits = np.einsum("id,ijd->ij", inputs, w[labels]) + b[labels] - np.log(true_exp)
    sampled_logits = inputs @ w[sampled].T + b[sampled] - np.log(sampled_exp)
    return true_logits, sampled_logits


def test_nce_and_sampled_softmax_loss_values_and_gradients():
    w_val, b_val, inputs_val = RNG.randn(6, 3), RNG.randn(6), RNG.randn(2, 3)
    labels_val = np.array([[1, 4], [0, 2]])
    sampled = np.array([2, 5, 3])
    true_exp, sampled_exp = np.array([[0.5, 0.2], [0.7, 0.3]]), np.array([0.3, 0.1, 0.25])
    values = (sampled, true_exp, sampled_exp)
    w, inputs = f64([6, 3]), f64([2, 3])
    nce = tf.nn.nce_loss(w, b_val, labels_val, inputs, 3, 6, num_true=2, sampled_values=values)
    ssm = tf.nn.sampled_softmax_loss(w, b_val, labels_val, inputs, 3, 6, num_true=2,
                                     sampled_values=values)
    old_nce = tf.nn.nce_loss(w, b_val, inputs, labels_val, 3, 6, 2, values)  # TF 0.x order
    feed = {w: w_val, inputs: inputs_val}
    got_nce, got_ssm, got_old = run([nce, ssm, old_nce], feed)
    t, s = sampled_logits_ref(w_val, b_val, labels_val, inputs_val, sampled, true_exp, sampled_exp)
    logits = np.concatenate([t, s], 1)
    targets = np.concatenate([np.full((2, 2), 0.5), np.zeros((2, 3))], 1)
    want_nce = (targets * np.logaddexp(0, -logits) + (1 - targets) * np.logaddexp(0, logits)).sum(1)
    np.testing.assert_allclose(got_nce, want_nce, rtol=1e-10)
    np.testing.assert_allclose(got_old, want_nce, rtol=1e-10)
    # Sampled softmax masks accidental hits: class 2 is a true class of row 1.
    masked = logits.copy()
    masked[1, 2] = -1e300
    want_ssm = -(targets * (masked - np.log(np.exp(masked).sum(1, keepdims=True)))).sum(1)
    np.testing.assert_allclose(got_ssm, want_ssm, rtol=1e-10)
    check_gradient(inputs, inputs_val, nce, {w: w_val})
    check_gradient(w, w_val, nce, {inputs: inputs_val})
    check_gradient(w, w_val, ssm, {inputs: inputs_val})


def test_word2vec_style_training_lowers_the_nce_loss():
    tf.set_random_seed(1)
    vocabulary, dim = 50, 8
    embeddings = tf.Variable(tf.random_uniform([vocabulary, dim], -1.0, 1.0))
    nce_weights = tf.Variable(tf.truncated_normal([vocabulary, dim], stddev=1.0 / np.sqrt(dim)))
    nce_biases = tf.Variable(tf.zeros([vocabulary]))
    inputs = tf.placeholder(tf.int32, [16])
    labels = tf.placeholder(tf.int32, [16, 1])
    embed = tf.nn.embedding_lookup(embeddings, inputs)
    loss = tf.reduce_mean(tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=labels,
                                         inputs=embed, num_sampled=8, num_classes=vocabulary))
    step = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
    words = np.arange(16) % 8
    feed = {inputs: words, labels: ((words + 1) % 8)[:, None]}  # each word predicts the next
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = np.mean([sess.run(loss, feed) for _ in range(20)])
        for _ in range(150):
            sess.run(step, feed)
        after = np.mean([sess.run(loss, feed) for _ in range(20)])
    assert after < 0.5 * before


def test_atrous_conv2d_and_convolution():
    x_val, w_val = RNG.randn(1, 8, 7, 2), RNG.randn(3, 3, 2, 3)
    want = conv_ref(x_val, w_val, (1, 1), "SAME", (2, 2))
    np.testing.assert_allclose(run(tf.nn.atrous_conv2d(x_val, w_val, 2, "SAME")), want,
                               rtol=1e-10)
    np.testing.assert_allclose(run(tf.nn.convolution(x_val, w_val, "SAME", dilation_rate=[2, 2])),
                               want, rtol=1e-10)
    np.testing.assert_allclose(run(tf.nn.convolution(x_val, w_val, "VALID", strides=[2, 1])),
                               conv_ref(x_val, w_val, (2, 1), "VALID"), rtol=1e-10)
    x1, w1 = RNG.randn(2, 9, 3), RNG.randn(2, 3, 4)
    y1 = tf.nn.convolution(x1, w1, "VALID", dilation_rate=[3])
    assert y1.shape.as_list() == [2, 6, 4]
    np.testing.assert_allclose(run(y1), conv_ref(x1[:, None], w1[None], (1, 1), "VALID",
                                                 (1, 3))[:, 0], rtol=1e-10)
    with pytest.raises(ValueError, match="rate 0 cannot be less than one"):
        tf.nn.atrous_conv2d(x_val, w_val, 0, "SAME")


@pytest.mark.parametrize("strides,dilation,padding", [
    ((1, 1), 1, "SAME"), ((2, 2), 1, "VALID"), ((1, 2), 1, "SAME"), ((1, 1), 2, "SAME")])
def test_single_channel_conv_and_filter_gradient_match_sliding_windows(strides, dilation, padding):
    # One input channel builds its patches transposed (nn_kernels._im2col_single_channel):
    # compare with sliding windows over the padded image, in float64.
    from numpy.lib.stride_tricks import sliding_window_view
    rng = np.random.RandomState(5)
    x = rng.randn(3, 11, 10, 1)
    w = rng.randn(3, 3, 1, 4)
    span = 2 * dilation + 1
    with tf.Graph().as_default():
        xt, wt = tf.constant(x), tf.constant(w)
        y = tf.nn.conv2d(xt, wt, [1, *strides, 1], padding, dilations=[1, dilation, dilation, 1])
        dy = tf.constant(rng.randn(*y.shape.as_list()))
        dw = tf.nn.conv2d_backprop_filter(xt, tf.constant(list(w.shape)), dy, [1, *strides, 1],
                                          padding, dilations=[1, dilation, dilation, 1])
        with tf.Session() as sess:
            got_y, got_dw, dyv = sess.run([y, dw, dy])
    if padding == "SAME":
        out_h, out_w = -(-11 // strides[0]), -(-10 // strides[1])
        pad_h = max((out_h - 1) * strides[0] + span - 11, 0)
        pad_w = max((out_w - 1) * strides[1] + span - 10, 0)
        x = np.pad(x, ((0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2),
                       (0, 0)))
    windows = sliding_window_view(x, (span, span), axis=(1, 2))[
        :, ::strides[0], ::strides[1], :, ::dilation, ::dilation]
    np.testing.assert_allclose(got_y, np.einsum("nijcab,abco->nijo", windows, w), atol=1e-12)
    np.testing.assert_allclose(got_dw, np.einsum("nijcab,nijo->abco", windows, dyv), atol=1e-11)
