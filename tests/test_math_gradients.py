"""Gradients of the elementwise math ops, casts, add_n and matmul: symbolic Jacobians (float64)
against central differences, under broadcasting, plus second derivatives of the fused ops."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.test import compute_gradient


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def assert_gradients(build, values, atol=1e-6, wrt=None):
    """The Jacobian of ``build(*xs)`` w.r.t. each float64 placeholder input matches the
    numerical one (and is not identically zero)."""
    values = [np.asarray(v, np.float64) for v in values]
    xs = [tf.placeholder(tf.float64, v.shape) for v in values]
    y = build(*xs)
    y_shape = y.shape.as_list()
    for i in (range(len(xs)) if wrt is None else wrt):
        feeds = {x: v for j, (x, v) in enumerate(zip(xs, values)) if j != i}
        theoretical, numerical = compute_gradient(xs[i], values[i].shape, y, y_shape,
                                                  x_init_value=values[i], delta=1e-6,
                                                  extra_feed_dict=feeds)
        assert np.abs(theoretical).max() > 0, f"input {i}: zero Jacobian"
        np.testing.assert_allclose(theoretical, numerical, atol=atol, rtol=1e-5,
                                   err_msg=f"input {i}")


RNG = np.random.RandomState(42)
SHAPES = [((2, 3), (3,)), ((2, 1), (1, 3)), ((2, 3), ()), ((), (2, 3)), ((3,), (2, 3)),
          ((2, 3), (2, 3))]


def _values(shape, low, high):
    return RNG.uniform(low, high, shape)


BINARY = {
    "add": (tf.add, (-2, 2), (-2, 2)),
    "subtract": (tf.subtract, (-2, 2), (-2, 2)),
    "multiply": (tf.multiply, (-2, 2), (-2, 2)),
    "divide": (tf.divide, (-2, 2), (0.5, 2)),
    "realdiv": (tf.realdiv, (-2, 2), (-2, -0.5)),
    "div": (tf.div, (-2, 2), (0.5, 2)),
    "pow": (tf.pow, (0.5, 2), (-2, 2)),
    "maximum": (tf.maximum, (-2, 2), (-2, 2)),
    "minimum": (tf.minimum, (-2, 2), (-2, 2)),
    "squared_difference": (tf.squared_difference, (-2, 2), (-2, 2)),
    "floormod": (tf.floormod, (0.1, 0.9), (1.1, 1.9)),  # away from the jumps of floor(x / y)
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{list(s[0])}-{list(s[1])}")
def test_binary_gradients_under_broadcasting(name, shapes):
    fn, x_range, y_range = BINARY[name]
    x, y = _values(shapes[0], *x_range), _values(shapes[1], *y_range)
    while name in ("maximum", "minimum") and len(np.unique(np.greater(x, y))) < 2:
        x, y = _values(shapes[0], *x_range), _values(shapes[1], *y_range)  # each must win once
    if name == "floormod":
        x = x + 3 * RNG.randint(-2, 3, shapes[0])
    assert_gradients(fn, [x, y])


def test_operator_gradients_including_reflected_forms():
    x = RNG.uniform(0.5, 2, (2, 3))
    assert_gradients(lambda t: 2 - t, [x])
    assert_gradients(lambda t: 3 / t, [x])
    assert_gradients(lambda t: 2 ** t, [x])
    assert_gradients(lambda t: (t * 2 + 1) ** 2 - abs(-t) / 4, [x])


def test_broadcast_gradient_with_unknown_batch_dimension():
    x = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, [3])
    loss = tf.reduce_sum(x * b + b)
    gx, gb = tf.gradients(loss, [x, b])
    assert gx.shape.as_list() == [None, 3] and gb.shape.as_list() == [3]
    xv = np.arange(12, dtype=np.float32).reshape(4, 3)
    bv = np.array([1.0, -2.0, 3.0], np.float32)
    gx_v, gb_v = run([gx, gb], {x: xv, b: bv})
    np.testing.assert_allclose(gx_v, np.tile(bv, (4, 1)))
    np.testing.assert_allclose(gb_v, xv.sum(0) + 4)


def test_unknown_dimension_broadcast_at_run_time_is_summed():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [4, 3])
    gx, gy = tf.gradients(tf.reduce_sum((x + y) * x), [x, y])
    xv, yv = np.array([[1.0, 2.0, 3.0]], np.float32), np.ones((4, 3), np.float32)
    gx_v, gy_v = run([gx, gy], {x: xv, y: yv})
    np.testing.assert_allclose(gx_v, (2 * xv + yv).sum(0, keepdims=True))
    np.testing.assert_allclose(gy_v, np.tile(xv, (4, 1)))
    assert gx_v.shape == (1, 3)


def test_bias_add_gradient_needs_no_reduction_for_the_batch_operand():
    # [None, 10] + [10]: the first operand is never broadcast, so its gradient passes through.
    h = tf.placeholder(tf.float32, [None, 10])
    b = tf.placeholder(tf.float32, [10])
    gh, gb = tf.gradients(h + b, [h, b])
    assert gh.op.type != "SumToShape"
    assert gb.op.type == "SumToShape"


def test_maximum_and_minimum_ties_go_to_x():
    x = tf.constant([1.0, 2.0, 5.0])
    y = tf.constant([1.0, 3.0, 4.0])
    gx, gy = run(tf.gradients(tf.maximum(x, y), [x, y]))
    np.testing.assert_array_equal(gx, [1, 0, 1])
    np.testing.assert_array_equal(gy, [0, 1, 0])
    gx, gy = run(tf.gradients(tf.minimum(x, y), [x, y]))
    np.testing.assert_array_equal(gx, [1, 1, 0])
    np.testing.assert_array_equal(gy, [0, 0, 1])


def test_pow_gradient_for_non_positive_bases():
    x = tf.constant([-2.0, 0.0, 3.0])
    y = tf.constant([2.0, 2.0, 2.0])
    gx, gy = run(tf.gradients(tf.pow(x, y), [x, y]))
    np.testing.assert_allclose(gx, [-4.0, 0.0, 6.0])
    np.testing.assert_allclose(gy, [0.0, 0.0, 9 * np.log(3.0)], rtol=1e-6)


def test_floordiv_and_comparisons_are_not_differentiable():
    x = tf.placeholder(tf.float32, [3])
    assert tf.gradients(tf.floordiv(x, 2.0), x) == [None]


UNARY = {
    "negative": (tf.negative, (-2, 2)), "abs": (tf.abs, (0.2, 2)), "square": (tf.square, (-2, 2)),
    "sqrt": (tf.sqrt, (0.2, 2)), "rsqrt": (tf.rsqrt, (0.2, 2)), "exp": (tf.exp, (-2, 2)),
    "log": (tf.log, (0.2, 2)), "log1p": (tf.log1p, (-0.5, 2)), "sigmoid": (tf.sigmoid, (-3, 3)),
    "tanh": (tf.tanh, (-2, 2)), "reciprocal": (tf.reciprocal, (0.3, 2)),
    "sin": (tf.sin, (-3, 3)), "cos": (tf.cos, (-3, 3)), "tan": (tf.tan, (-1.2, 1.2)),
    "asin": (tf.asin, (-0.9, 0.9)), "acos": (tf.acos, (-0.9, 0.9)), "atan": (tf.atan, (-3, 3)),
    "expm1": (tf.expm1, (-2, 2)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients(name):
    fn, (low, high) = UNARY[name]
    x = RNG.uniform(low, high, (2, 3))
    if name == "abs":
        x *= np.sign(RNG.uniform(-1, 1, (2, 3)))
    assert_gradients(fn, [x])


@pytest.mark.parametrize("fn", [tf.sign, tf.floor, tf.ceil, tf.round])
def test_piecewise_constant_ops_have_no_gradient(fn):
    x = tf.placeholder(tf.float32, [3])
    assert tf.gradients(fn(x), x) == [None]
    assert run(tf.gradients(fn(x) + x, x), {x: np.ones(3)})[0].tolist() == [1, 1, 1]


@pytest.mark.parametrize("name", ["sqrt", "rsqrt", "reciprocal", "sigmoid", "tanh"])
def test_second_derivatives_through_the_fused_backward_ops(name):
    fn, (low, high) = UNARY[name]
    x = RNG.uniform(low, high, (2, 3))
    g = RNG.uniform(-2, 2, (2, 3))
    fused = {"sqrt": "SqrtGrad", "rsqrt": "RsqrtGrad", "reciprocal": "ReciprocalGrad",
             "sigmoid": "SigmoidGrad", "tanh": "TanhGrad"}[name]

    def first_derivative(t, dy):
        (dx,) = tf.gradients(fn(t), t, grad_ys=dy)
        assert dx.op.type == fused
        return dx
    assert_gradients(first_derivative, [x, g])


def test_fused_backward_op_values():
    y = np.array([0.2, 0.5, 0.9])
    dy = np.array([1.0, -2.0, 3.0])
    yt, dyt = tf.constant(y), tf.constant(dy)
    graph = tf.get_default_graph()
    outs = {t: graph.create_op(t, [yt, dyt]).outputs[0]
            for t in ("SigmoidGrad", "TanhGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad")}
    got = run(outs)
    np.testing.assert_allclose(got["SigmoidGrad"], dy * y * (1 - y))
    np.testing.assert_allclose(got["TanhGrad"], dy * (1 - y * y))
    np.testing.assert_allclose(got["SqrtGrad"], dy * 0.5 / y)
    np.testing.assert_allclose(got["RsqrtGrad"], dy * -0.5 * y ** 3)
    np.testing.assert_allclose(got["ReciprocalGrad"], -dy * y * y)


def test_fused_backward_ops_do_not_broadcast():
    with pytest.raises(ValueError, match="same shape"):
        tf.get_default_graph().create_op("SigmoidGrad", [tf.ones([2, 3]), tf.ones([3])])


def test_sum_to_shape_and_its_gradient():
    x = RNG.uniform(-1, 1, (2, 3))
    b = tf.placeholder(tf.float64, [2, 1])

    def grad_of_b(g):
        (gb,) = tf.gradients(tf.constant(x) * b, b, grad_ys=g)
        return gb
    assert_gradients(grad_of_b, [RNG.uniform(-1, 1, (2, 3))])
    g = tf.placeholder(tf.float64, [None, None, 3])
    summed = tf.gradients(b + g, b, grad_ys=g)[0]
    assert summed.shape.as_list() == [2, 1]
    gv = RNG.uniform(-1, 1, (4, 2, 3))
    np.testing.assert_allclose(run(summed, {g: gv, b: np.ones((2, 1))}),
                               gv.sum(axis=(0, 2))[:, None])


def test_cast_gradients():
    x = tf.placeholder(tf.float64, [3])
    (g,) = tf.gradients(tf.reduce_sum(tf.cast(x, tf.float32) * 3.0), x)
    assert g.dtype is tf.float64
    np.testing.assert_allclose(run(g, {x: np.ones(3)}), [3, 3, 3])
    assert tf.gradients(tf.cast(tf.cast(x, tf.int32), tf.float64), x) == [None]


def test_add_n_gradient():
    assert_gradients(lambda x, y: tf.add_n([x, 2 * x, x * y]), [RNG.rand(2, 3), RNG.rand(2, 3)])


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_gradients(ta, tb):
    a = RNG.uniform(-1, 1, (4, 3) if ta else (3, 4))
    b = RNG.uniform(-1, 1, (5, 4) if tb else (4, 5))
    assert_gradients(lambda x, y: tf.matmul(x, y, transpose_a=ta, transpose_b=tb), [a, b])


@pytest.mark.parametrize("adj_x", [False, True])
@pytest.mark.parametrize("adj_y", [False, True])
def test_batch_matmul_gradients(adj_x, adj_y):
    x = RNG.uniform(-1, 1, (2, 4, 3) if adj_x else (2, 3, 4))
    y = RNG.uniform(-1, 1, (2, 5, 4) if adj_y else (2, 4, 5))
    assert_gradients(lambda a, b: tf.matmul(a, b, adjoint_a=adj_x, adjoint_b=adj_y), [x, y])


def test_broadcasting_batch_matmul_gradients():
    x, y = RNG.uniform(-1, 1, (2, 1, 3, 4)), RNG.uniform(-1, 1, (3, 4, 2))
    assert_gradients(lambda a, b: tf.matmul(a, b), [x, y])
