"""Reductions, ArgMax/ArgMin, Cumsum/Cumprod, Range and the clipping functions: values against
numpy, static shapes, axes spelled every TF way, errors, and gradients (float64, numerical)."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework.errors import InvalidArgumentError
from tfjupyter.test import compute_gradient


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def assert_gradient(build, x_value, atol=1e-6):
    x_value = np.asarray(x_value, np.float64)
    x = tf.placeholder(tf.float64, x_value.shape)
    y = build(x)
    y_shape = np.shape(run(y, {x: x_value}))
    theoretical, numerical = compute_gradient(x, x_value.shape, y, y_shape, x_init_value=x_value,
                                              delta=1e-6)
    assert np.abs(theoretical).max() > 0
    np.testing.assert_allclose(theoretical, numerical, atol=atol, rtol=1e-5)


X = np.random.RandomState(0).uniform(-3, 3, (2, 3, 4)).astype(np.float32)
REDUCTIONS = [(tf.reduce_sum, np.sum), (tf.reduce_mean, np.mean), (tf.reduce_max, np.max),
              (tf.reduce_min, np.min), (tf.reduce_prod, np.prod)]
AXES = [None, 0, 1, -1, [0, 2], [-1, 0], (1,), [], [0, 1, 2]]


# -- values and static shapes ------------------------------------------------------------------------
@pytest.mark.parametrize("fn,ref", REDUCTIONS, ids=[f.__name__ for f, _ in REDUCTIONS])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_values_and_static_shapes(fn, ref, axis, keepdims):
    np_axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    expected = ref(X, axis=np_axis, keepdims=keepdims)
    out = fn(X, axis, keepdims=keepdims)
    assert out.dtype is tf.float32
    assert out.shape.as_list() == list(np.shape(expected))
    result = run(out)
    assert np.shape(result) == np.shape(expected) and result.dtype == np.float32
    np.testing.assert_allclose(result, expected, rtol=1e-5)


def test_tf_0x_spellings():
    x = tf.constant(X)
    np.testing.assert_allclose(run(tf.reduce_sum(x, reduction_indices=[1], keep_dims=True)),
                               X.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(run(tf.reduce_mean(x, reduction_indices=2)), X.mean(2), rtol=1e-6)
    assert tf.reduce_max(x, 1, True).shape == [2, 1, 4]  # third positional argument: keepdims
    with pytest.raises(ValueError, match="both 'axis' and 'reduction_indices'"):
        tf.reduce_sum(x, 0, reduction_indices=0)
    with pytest.raises(ValueError, match="both 'keepdims' and 'keep_dims'"):
        tf.reduce_sum(x, 0, keepdims=True, keep_dims=True)


def test_full_reductions_give_numpy_scalars():
    result = run([tf.reduce_sum(X), tf.reduce_mean(tf.constant([1, 2, 4])),
                  tf.reduce_all(tf.constant([True, False]))])
    assert [type(r) for r in result] == [np.float32, np.int32, np.bool_]
    assert result[1] == 2 and not result[2]


def test_integer_reductions_keep_their_dtype_and_truncate_means():
    i = tf.constant([[-1, -2], [1, 2], [-3, 0]], tf.int32)
    s, m, p = run([tf.reduce_sum(i, 1), tf.reduce_mean(i, 1), tf.reduce_prod(i, 1)])
    assert s.dtype == np.int32 and m.dtype == np.int32
    np.testing.assert_array_equal(s, [-3, 3, -3])
    np.testing.assert_array_equal(m, [-1, 1, -1])  # -1.5 -> -1, 1.5 -> 1: toward zero
    np.testing.assert_array_equal(p, [2, 2, 0])
    big = tf.constant(np.full(4, 2 ** 30, np.int64))
    assert run(tf.reduce_sum(big)) == 2 ** 32


def test_empty_reductions():
    e = tf.zeros([0, 3])
    mx, mn, pr, sm = run([tf.reduce_max(e, 0), tf.reduce_min(e, 0), tf.reduce_prod(e, 0),
                          tf.reduce_sum(e, 0)])
    np.testing.assert_array_equal(mx, [-np.inf] * 3)
    np.testing.assert_array_equal(mn, [np.inf] * 3)
    np.testing.assert_array_equal(pr, [1, 1, 1])
    np.testing.assert_array_equal(sm, [0, 0, 0])
    np.testing.assert_array_equal(run(tf.reduce_max(tf.zeros([0, 2], tf.int32), 0)),
                                  [np.iinfo(np.int32).min] * 2)


def test_reduce_all_and_any():
    b = np.array([[True, False, True], [True, True, True]])
    t = tf.constant(b)
    out = run([tf.reduce_all(t), tf.reduce_all(t, 1), tf.reduce_any(t, 0, keepdims=True),
               tf.reduce_any(tf.logical_not(t))])
    assert out[0] == b.all() and out[3] == (~b).any()
    np.testing.assert_array_equal(out[1], b.all(1))
    np.testing.assert_array_equal(out[2], b.any(0, keepdims=True))
    with pytest.raises(TypeError, match="All"):
        tf.reduce_all(tf.constant([1.0]))


def test_axes_fed_at_run_time():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    axes = tf.placeholder(tf.int32, [None])
    out = tf.reduce_sum(x, axes)
    assert out.shape.ndims is None
    kept = tf.reduce_max(x, axes, keepdims=True)
    assert kept.shape.as_list() == [None, None, None]
    result, result_kept = run([out, kept], {x: X, axes: [0, -1]})
    np.testing.assert_allclose(result, X.sum((0, 2)), rtol=1e-5)
    np.testing.assert_allclose(result_kept, X.max((0, 2), keepdims=True))
    with pytest.raises(InvalidArgumentError, match="Invalid reduction dimension 3"):
        run(out, {x: X, axes: [3]})
    with pytest.raises(InvalidArgumentError, match="duplicate dimension: 1"):
        run(out, {x: X, axes: [1, -2]})


def test_unknown_rank_reduces_everything():
    x = tf.placeholder(tf.float32)
    out = tf.reduce_sum(x)
    assert run(out, {x: X}) == pytest.approx(X.sum(), rel=1e-5)
    assert run(tf.reduce_mean(x, keepdims=True), {x: X}).shape == (1, 1, 1)


def test_reduction_axis_errors_at_graph_construction():
    x = tf.constant(X)
    with pytest.raises(ValueError) as info:
        tf.reduce_sum(x, 3, name="total")
    assert "Invalid reduction dimension 3 for input with 3 dimensions" in str(info.value)
    assert "total" in str(info.value)
    with pytest.raises(ValueError, match="duplicate dimension: 0"):
        tf.reduce_mean(x, [0, -3])
    with pytest.raises(TypeError, match="int32, int64"):
        tf.reduce_sum(x, tf.constant(1.0))


def test_reduction_op_structure():
    out = tf.reduce_sum(tf.constant(X), [1, 2], keep_dims=True, name="s")
    assert out.op.type == "Sum" and out.op.name == "s"
    assert out.op.get_attr("keep_dims") is True
    assert out.op.inputs[1].op.name == "s/reduction_indices"
    assert tf.reduce_mean(X).op.name == "Mean"


@pytest.mark.filterwarnings("ignore:divide by zero")  # log(0) = -inf, as in TensorFlow
def test_reduce_logsumexp():
    v = np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, -np.inf], [-np.inf] * 3])
    x = tf.constant(v)
    out = tf.reduce_logsumexp(x, 1)
    assert out.op.name == "ReduceLogSumExp" and out.shape == [3]
    np.testing.assert_allclose(run(out), [np.log(np.exp(v[0]).sum()), 1000 + np.log(2), -np.inf])
    kept = tf.reduce_logsumexp(x[:1], reduction_indices=[0, 1], keep_dims=True)
    np.testing.assert_allclose(run(kept), [[np.log(np.exp(v[0]).sum())]])
    assert_gradient(lambda t: tf.reduce_logsumexp(t, 1), XG[0])
    t = tf.constant(XG[0])
    softmax = np.exp(XG[0]) / np.exp(XG[0]).sum(1, keepdims=True)
    np.testing.assert_allclose(run(tf.gradients(tf.reduce_logsumexp(t, 1), t)[0]), softmax)


def test_count_nonzero():
    v = np.array([[0, 1, 2], [0, 0, 3]], np.int32)
    out = tf.count_nonzero(v, 1)
    assert out.dtype is tf.int64
    np.testing.assert_array_equal(run(out), [2, 1])
    assert run(tf.count_nonzero(tf.constant([True, False, True]))) == 2
    assert run(tf.count_nonzero([0.0, 0.5], dtype=tf.int32)).dtype == np.int32
    np.testing.assert_array_equal(run(tf.count_nonzero(v, reduction_indices=0, keep_dims=True)),
                                  [[0, 1, 2]])


# -- reduction gradients -----------------------------------------------------------------------------
XG = np.random.RandomState(1).uniform(0.5, 2, (2, 3, 4))


@pytest.mark.parametrize("fn", [tf.reduce_sum, tf.reduce_mean, tf.reduce_max, tf.reduce_min,
                                tf.reduce_prod], ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [None, 1, -1, [0, 2], [2, 0, 1]], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_gradients(fn, axis, keepdims):
    assert_gradient(lambda x: fn(x, axis, keepdims=keepdims), XG)


@pytest.mark.parametrize("fn", [tf.reduce_sum, tf.reduce_mean, tf.reduce_max, tf.reduce_prod],
                         ids=lambda f: f.__name__)
def test_reduction_gradients_with_unknown_dimensions(fn):
    # Same values as with a static shape (whose gradients are checked numerically above).
    weights = np.array([1.0, -2.0, 3.0])
    x = tf.placeholder(tf.float64, [None, 3, None])
    (g,) = tf.gradients(tf.reduce_sum(fn(x, [0, 2]) * weights), x)
    assert g.shape.as_list() == [None, 3, None]
    xs = tf.placeholder(tf.float64, XG.shape)
    (g_known,) = tf.gradients(tf.reduce_sum(fn(xs, [0, 2]) * weights), xs)
    np.testing.assert_allclose(run(g, {x: XG}), run(g_known, {xs: XG}), rtol=1e-12)


@pytest.mark.parametrize("fn", [tf.reduce_sum, tf.reduce_mean, tf.reduce_max],
                         ids=lambda f: f.__name__)
def test_reduction_gradients_with_axes_fed_at_run_time(fn):
    x = tf.placeholder(tf.float64, [2, 3, 4])
    axes = tf.placeholder(tf.int32, [None])
    y = fn(x, axes)
    (g,) = tf.gradients(y, x, grad_ys=tf.ones_like(y) * 2)
    xs = tf.placeholder(tf.float64, [2, 3, 4])
    ys = fn(xs, [0, 2])
    (g_known,) = tf.gradients(ys, xs, grad_ys=tf.ones_like(ys) * 2)
    np.testing.assert_allclose(run(g, {x: XG, axes: [-1, 0]}), run(g_known, {xs: XG}))


def test_max_and_min_gradients_split_ties_evenly():
    x = tf.constant([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]])
    np.testing.assert_allclose(run(tf.gradients(tf.reduce_max(x, 1), x)[0]),
                               [[0, 0.5, 0.5], [0.5, 0.5, 0]])
    np.testing.assert_allclose(run(tf.gradients(tf.reduce_min(x), x)[0]),
                               [[0.5, 0, 0], [0, 0, 0.5]])


def test_prod_gradient_is_exact_with_zeros():
    x = tf.constant([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 4.0, 2.0]])
    np.testing.assert_allclose(run(tf.gradients(tf.reduce_prod(x, 1), x)[0]),
                               [[0, 6, 0], [0, 0, 0], [8, 2, 4]])
    x2 = tf.constant([[2.0, 0.0], [3.0, 4.0]])
    np.testing.assert_allclose(run(tf.gradients(tf.reduce_prod(x2), x2)[0]),
                               [[0, 24], [0, 0]])


def test_prod_gradient_needs_constant_axes():
    x = tf.placeholder(tf.float32, [2, 3])
    axes = tf.placeholder(tf.int32, [None])
    with pytest.raises(ValueError, match="needs its reduction axes to be known"):
        tf.gradients(tf.reduce_prod(x, axes), x)


def test_second_order_gradient_of_a_reduction():
    def grad_of_sum_of_squares(x):
        return tf.gradients(tf.reduce_sum(x * x * x, 1), x)[0]
    assert_gradient(grad_of_sum_of_squares, XG[0])


def test_mean_of_integers_has_no_gradient_path():
    x = tf.placeholder(tf.float32, [3])
    assert tf.gradients(tf.reduce_mean(tf.cast(x, tf.int32)), x) == [None]


# -- argmax / argmin ---------------------------------------------------------------------------------
def test_argmax_and_argmin():
    v = np.array([[1, 3, 3], [2, 2, 1]], np.float32)
    x = tf.constant(v)
    out = tf.argmax(x, 1)
    assert out.dtype is tf.int64 and out.shape == [2] and out.op.name == "ArgMax"
    assert out.op.inputs[1].op.name == "ArgMax/dimension"
    got = run([out, tf.argmin(x, 1), tf.argmax(x), tf.argmax(x, dimension=0),
               tf.argmin(x, -1, output_type=tf.int32), tf.argmax(tf.constant([5, 9, 2]))])
    np.testing.assert_array_equal(got[0], [1, 0])  # first of the ties
    np.testing.assert_array_equal(got[1], [0, 2])
    np.testing.assert_array_equal(got[2], [1, 0, 0])
    np.testing.assert_array_equal(got[3], [1, 0, 0])
    assert got[4].dtype == np.int32
    np.testing.assert_array_equal(got[4], [0, 2])
    assert got[5] == 1 and type(got[5]) is np.int64


def test_argmax_errors_and_run_time_axis():
    x = tf.constant(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"Dimension \(2\) must be in the range \[-2, 2\)"):
        tf.argmax(x, 2)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dimension'"):
        tf.argmax(x, 1, dimension=1)
    dim = tf.placeholder(tf.int32, [])
    v = np.array([[0.0, 5.0, 1.0], [7.0, 2.0, 3.0]])
    out = tf.argmax(v, dim)
    assert out.shape.as_list() == [None]
    np.testing.assert_array_equal(run(out, {dim: 0}), [1, 0, 1])
    np.testing.assert_array_equal(run(out, {dim: -1}), [1, 0])
    with pytest.raises(InvalidArgumentError, match="empty"):
        run(tf.argmax(tf.zeros([0, 2]), 0))
    assert tf.gradients(tf.cast(tf.argmax(x, 1), tf.float64), x) == [None]


# -- cumsum / cumprod ---------------------------------------------------------------------------------
def _reference_cumulative(x, axis, exclusive, reverse, fn, identity):
    if reverse:
        x = np.flip(x, axis)
    out = fn(x, axis=axis)
    if exclusive:
        out = np.concatenate([np.full_like(np.take(out, [0], axis), identity),
                              np.delete(out, -1, axis)], axis)
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_and_cumprod(exclusive, reverse, axis):
    v = np.random.RandomState(3).uniform(0.5, 1.5, (3, 4))
    for tf_fn, np_fn, identity in ((tf.cumsum, np.cumsum, 0), (tf.cumprod, np.cumprod, 1)):
        out = tf_fn(v, axis, exclusive=exclusive, reverse=reverse)
        assert out.shape == [3, 4]
        np.testing.assert_allclose(run(out), _reference_cumulative(v, axis, exclusive, reverse,
                                                                   np_fn, identity))
        assert_gradient(lambda x: tf_fn(x, axis, exclusive=exclusive, reverse=reverse), v)


def test_cumsum_integers_and_errors():
    np.testing.assert_array_equal(run(tf.cumsum([1, 2, 3])), [1, 3, 6])
    assert run(tf.cumsum([1, 2, 3])).dtype == np.int32
    with pytest.raises(ValueError, match="out of range"):
        tf.cumsum(tf.ones([2, 2]), 2)


# -- range -----------------------------------------------------------------------------------------------
def test_range():
    r = tf.range(5)
    assert r.dtype is tf.int32 and r.shape == [5] and r.op.name == "range"
    np.testing.assert_array_equal(run(r), np.arange(5))
    np.testing.assert_array_equal(run(tf.range(2, 11, 3)), [2, 5, 8])
    np.testing.assert_array_equal(run(tf.range(5, 0, -2)), [5, 3, 1])
    f = tf.range(0, 1, 0.25)
    assert f.dtype is tf.float32 and f.shape == [4]
    np.testing.assert_allclose(run(f), [0, 0.25, 0.5, 0.75])
    assert tf.range(3, dtype=tf.float64).dtype is tf.float64
    assert tf.range(tf.constant(3, tf.int64)).dtype is tf.int64
    n = tf.placeholder(tf.int32, [])
    dynamic = tf.range(n)
    assert dynamic.shape.as_list() == [None]
    np.testing.assert_array_equal(run(dynamic, {n: 4}), [0, 1, 2, 3])
    with pytest.raises(ValueError, match="Requires start <= limit when delta > 0"):
        tf.range(5, 1)
    with pytest.raises(ValueError, match="Requires delta != 0"):
        tf.range(0, 5, 0)
    with pytest.raises(InvalidArgumentError, match="Requires start <= limit"):
        run(tf.range(n, 0), {n: 3})


# -- clipping --------------------------------------------------------------------------------------
def test_clip_by_value_values_and_gradient():
    v = np.array([[-2.0, -0.5, 0.0], [0.5, 1.0, 3.0]])
    x = tf.constant(v)
    out = tf.clip_by_value(x, -1.0, 1.0)
    assert out.op.name == "clip_by_value" and out.shape == [2, 3]
    np.testing.assert_allclose(run(out), np.clip(v, -1, 1))
    np.testing.assert_allclose(run(tf.gradients(out, x)[0]), [[0, 1, 1], [1, 1, 0]])
    per_column = tf.clip_by_value(x, [-1.0, 0.0, 0.0], [0.0, 0.5, 2.0])
    np.testing.assert_allclose(run(per_column), np.clip(v, [-1, 0, 0], [0, 0.5, 2]))
    with pytest.raises(ValueError, match="not compatible"):
        tf.clip_by_value(tf.constant([1.0, 2.0]), tf.zeros([3, 1]), 1.0)


def test_clip_by_norm():
    v = np.array([[3.0, 4.0], [0.6, 0.8]])
    x = tf.constant(v)
    np.testing.assert_allclose(run(tf.clip_by_norm(x, 1.0, axes=[1])), [[0.6, 0.8], [0.6, 0.8]])
    whole = run(tf.clip_by_norm(x, 2.0))
    np.testing.assert_allclose(whole, v * 2.0 / np.linalg.norm(v))
    np.testing.assert_allclose(run(tf.clip_by_norm(x, 10.0)), v)
    assert tf.clip_by_norm(x, 1.0).op.name == "clip_by_norm_3"
    assert_gradient(lambda t: tf.clip_by_norm(t, 1.0, axes=[1]), [[3.0, 4.0], [0.3, 0.4]])
    zeros = tf.zeros([3])
    g = run(tf.gradients(tf.clip_by_norm(zeros, 1.0), zeros)[0])
    np.testing.assert_array_equal(g, [1, 1, 1])  # finite at 0, not NaN


@pytest.mark.filterwarnings("ignore:invalid value")  # inf - inf = NaN, as in TensorFlow
def test_global_norm_and_clip_by_global_norm():
    a, b = np.array([3.0, 0.0]), np.array([[4.0]])
    ta, tb = tf.constant(a), tf.constant(b)
    norm = tf.global_norm([ta, None, tb])
    assert norm.op.name == "global_norm/global_norm"
    assert run(norm) == pytest.approx(5.0)
    (ca, none, cb), used = tf.clip_by_global_norm([ta, None, tb], 1.0)
    assert none is None
    got_a, got_b, got_norm = run([ca, cb, used])
    np.testing.assert_allclose(got_a, a / 5)
    np.testing.assert_allclose(got_b, b / 5)
    assert got_norm == pytest.approx(5.0)
    (unclipped,), _ = tf.clip_by_global_norm([ta], 10.0)
    np.testing.assert_allclose(run(unclipped), a)
    (given,), norm_given = tf.clip_by_global_norm([ta], 1.0, use_norm=tf.constant(2.0, tf.float64))
    np.testing.assert_allclose(run(given), a / 2)
    (nan,), _ = tf.clip_by_global_norm([tf.constant([np.inf, 1.0])], 1.0)
    assert np.isnan(run(nan)).all()
    with pytest.raises(TypeError, match="t_list should be a sequence"):
        tf.clip_by_global_norm(ta, 1.0)
    assert_gradient(lambda t: tf.clip_by_global_norm([t, t * 2], 1.0)[0][1], a + 0.5)


def test_clip_by_average_norm():
    v = np.array([3.0, 4.0])
    np.testing.assert_allclose(run(tf.clip_by_average_norm(tf.constant(v), 1.0)),
                               v * 1.0 / max(np.linalg.norm(v) / v.size, 1.0))
    np.testing.assert_allclose(run(tf.clip_by_average_norm(tf.constant(v), 5.0)), v)
