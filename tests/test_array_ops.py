"""Array ops: values against numpy, static shapes, gradients against numerical Jacobians, errors."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework.errors import InvalidArgumentError
from tfjupyter.ops.array_ops import _shape_from_tensor


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def assert_gradient(build, x_value, atol=1e-7, static=True):
    """The Jacobian of build(x) w.r.t. a float64 placeholder x matches central differences.
    static=False gives x unknown dimensions, so the ops take their dynamic-shape paths."""
    x_value = np.asarray(x_value, dtype=np.float64)
    x = tf.placeholder(tf.float64, x_value.shape if static else [None] * x_value.ndim, name="x")
    y = build(x)
    y_shape = np.shape(run(y, {x: x_value}))
    theoretical, numerical = tf.test.compute_gradient(x, x_value.shape, y, y_shape,
                                                      x_init_value=x_value)
    assert theoretical.shape == (x_value.size, int(np.prod(y_shape)))
    assert np.abs(theoretical).max() > 0
    np.testing.assert_allclose(theoretical, numerical, atol=atol, rtol=1e-6)


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


# -- constants ---------------------------------------------------------------------------------------
def test_constant_tutorial_form_and_strings():
    a = tf.constant([1.0, 2.0, 3.0], shape=[3], name="a")
    assert a.op.name == "a" and a.dtype is tf.float32 and a.shape == [3]
    np.testing.assert_array_equal(run(a), [1, 2, 3])
    hello = run(tf.constant("Hello"))
    assert hello == b"Hello"
    np.testing.assert_array_equal(run(tf.constant(7, shape=[2, 2])), np.full((2, 2), 7))


def test_constant_does_not_freeze_or_alias_the_callers_array():
    value = np.ones(3, dtype=np.float32)
    c = tf.constant(value)
    value[0] = 5                      # still writable, and the constant kept its own copy
    np.testing.assert_array_equal(run(c), [1, 1, 1])


# -- shape, size, rank -----------------------------------------------------------------------------------
def test_shape_size_rank_static_and_dynamic():
    x = tf.placeholder(tf.float32, [None, 3])
    s, n, r = tf.shape(x), tf.size(x), tf.rank(x)
    assert s.op.type == "Shape" and s.dtype is tf.int32 and s.shape == [2]
    feed = {x: np.zeros((5, 3))}
    got = run([s, n, r], feed)
    np.testing.assert_array_equal(got[0], [5, 3])
    assert got[1] == 15 and got[2] == 2
    assert tf.shape(x, out_type=tf.int64).dtype is tf.int64
    c = tf.constant(X)
    np.testing.assert_array_equal(run(tf.shape(c)), [2, 3, 4])   # folded to a constant
    assert run(tf.size(c)) == 24 and run(tf.rank(c)) == 3
    u = tf.placeholder(tf.float32)
    assert run(tf.rank(u), {u: np.zeros((2, 2, 2))}) == 3


def test_shape_from_tensor_helper():
    x = tf.placeholder(tf.float32, [None, 3])
    assert _shape_from_tensor(tf.constant([2, -1, 4])).as_list() == [2, None, 4]
    assert _shape_from_tensor(tf.shape(x)).as_list() == [None, 3]
    assert _shape_from_tensor(tf.placeholder(tf.int32, [3])).as_list() == [None] * 3
    assert _shape_from_tensor(tf.placeholder(tf.int32)).ndims is None
    assert _shape_from_tensor(tf.stack([tf.shape(x)[0], 7])).as_list() == [None, 7]
    assert _shape_from_tensor(tf.shape(x)[1:]).as_list() == [3]


# -- reshape ---------------------------------------------------------------------------------------------
def test_reshape_with_minus_one():
    y = tf.reshape(tf.constant(X), [-1, 4])
    assert y.shape == [6, 4]
    np.testing.assert_array_equal(run(y), X.reshape(-1, 4))
    x = tf.placeholder(tf.float32, [None, 784])
    assert tf.reshape(x, [-1, 28, 28, 1]).shape.as_list() == [None, 28, 28, 1]
    dyn = tf.reshape(x, tf.stack([tf.shape(x)[0], 28, 28]))
    assert dyn.shape.as_list() == [None, 28, 28]
    assert run(dyn, {x: np.zeros((2, 784))}).shape == (2, 28, 28)


def test_reshape_error_names_the_op_at_graph_time():
    with pytest.raises(ValueError) as info:
        tf.reshape(tf.constant([1, 2, 3, 4, 5, 6]), [4], name="bad_reshape")
    msg = str(info.value)
    assert "bad_reshape" in msg and "6 elements" in msg and "[4]" in msg
    with pytest.raises(ValueError, match="evenly divisible by 4"):
        tf.reshape(tf.constant([1, 2, 3, 4, 5, 6]), [-1, 4])


def test_reshape_error_names_the_op_at_run_time():
    x = tf.placeholder(tf.int32, [None])
    y = tf.reshape(x, [4], name="late_reshape")
    with pytest.raises(InvalidArgumentError) as info:
        run(y, {x: np.arange(6)})
    msg = str(info.value)
    assert "late_reshape" in msg and "6 values" in msg and "has 4" in msg


def test_reshape_gradient():
    assert_gradient(lambda x: tf.reshape(x, [3, -1]) * 1.0, np.random.rand(2, 3))


# -- fill, zeros, ones -------------------------------------------------------------------------------------
def test_zeros_ones_fill_like():
    np.testing.assert_array_equal(run(tf.zeros([2, 3])), np.zeros((2, 3), np.float32))
    assert run(tf.ones([2], dtype=tf.int32)).dtype == np.int32
    assert run(tf.zeros([2], dtype=tf.bool)).dtype == np.bool_
    big = tf.zeros([100, 100])             # large: a Fill op instead of a 10000-element Const
    assert big.op.type == "Fill" and big.shape == [100, 100]
    assert run(big).shape == (100, 100)
    f = tf.fill([2, 3], 9.0)
    assert f.shape == [2, 3] and f.dtype is tf.float32
    np.testing.assert_array_equal(run(f), np.full((2, 3), 9.0))
    x = tf.placeholder(tf.float32, [None, 2])
    z, o = tf.zeros_like(x), tf.ones_like(x, dtype=tf.int64)
    assert z.dtype is tf.float32 and o.dtype is tf.int64 and z.shape.as_list() == [None, 2]
    got = run([z, o, tf.zeros(tf.shape(x))], {x: np.ones((3, 2))})
    np.testing.assert_array_equal(got[0], np.zeros((3, 2)))
    np.testing.assert_array_equal(got[1], np.ones((3, 2)))
    assert got[2].shape == (3, 2)
    assert tf.ones_like(tf.constant(X), name="grad_ys").op.name == "grad_ys"


def test_fill_gradient_is_sum_over_value():
    v = tf.placeholder(tf.float64, [])
    y = tf.fill([2, 3], v)
    (g,) = tf.gradients(y, v)
    assert run(g, {v: 1.0}) == 6.0


# -- expand_dims, squeeze, transpose --------------------------------------------------------------------
def test_expand_dims_and_squeeze():
    c = tf.constant(X)
    assert tf.expand_dims(c, 0).shape == [1, 2, 3, 4]
    assert tf.expand_dims(c, -1).shape == [2, 3, 4, 1]
    assert tf.expand_dims(c, dim=1).shape == [2, 1, 3, 4]
    np.testing.assert_array_equal(run(tf.expand_dims(c, 1)), X[:, None])
    e = tf.constant(np.zeros((1, 2, 1, 3)))
    assert tf.squeeze(e).shape == [2, 3]
    assert tf.squeeze(e, [2]).shape == [1, 2, 3]
    assert tf.squeeze(e, squeeze_dims=[0]).shape == [2, 1, 3]
    assert run(tf.squeeze(e, axis=-2)).shape == (1, 2, 3)
    with pytest.raises(ValueError, match="Can not squeeze dim\\[1\\], expected a dimension of 1, got 2"):
        tf.squeeze(e, [1])
    with pytest.raises(ValueError, match="Must specify an axis"):
        tf.expand_dims(c)


def test_transpose_values_and_gradient():
    c = tf.constant(X)
    assert tf.transpose(c).shape == [4, 3, 2]
    np.testing.assert_array_equal(run(tf.transpose(c)), X.T)
    np.testing.assert_array_equal(run(tf.transpose(c, [1, 0, 2])), X.transpose(1, 0, 2))
    p = tf.placeholder(tf.int32, [3])
    np.testing.assert_array_equal(run(tf.transpose(c, p), {p: [2, 0, 1]}), X.transpose(2, 0, 1))
    assert_gradient(lambda x: tf.transpose(x, [2, 0, 1]) * 1.0, np.random.rand(2, 3, 4))
    with pytest.raises(ValueError, match="Dimension must be 3 but is 2"):
        tf.transpose(c, [1, 0])


def test_invert_permutation():
    np.testing.assert_array_equal(run(tf.invert_permutation([3, 4, 0, 2, 1])), [2, 4, 3, 0, 1])


# -- concat, split, stack, unstack -------------------------------------------------------------------------
def test_concat_1x_and_0x_forms():
    a, b = tf.constant(X), tf.constant(X + 100)
    want = np.concatenate([X, X + 100], 1)
    np.testing.assert_array_equal(run(tf.concat([a, b], 1)), want)
    np.testing.assert_array_equal(run(tf.concat(1, [a, b])), want)          # TF 0.x order
    np.testing.assert_array_equal(run(tf.concat(concat_dim=1, values=[a, b])), want)
    np.testing.assert_array_equal(run(tf.concat_v2([a, b], -1)), np.concatenate([X, X + 100], -1))
    with tf.Graph().as_default():
        assert tf.concat([[1], [2]], 0).op.name == "concat"
    assert tf.concat([a, b], 1).shape == [2, 6, 4]
    assert tf.concat([a], 0).shape == [2, 3, 4]
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.concat([x, tf.zeros([2, 4])], 0)
    assert y.shape.as_list() == [None, 4]
    assert run(y, {x: np.ones((3, 4))}).shape == (5, 4)
    with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal"):
        tf.concat([a, tf.constant(np.zeros((2, 5, 3), np.float32))], 0)


def test_concat_runtime_mismatch_is_a_clear_error():
    x = tf.placeholder(tf.float32, [None, None])
    y = tf.concat([x, tf.zeros([2, 3])], 0, name="joined")
    with pytest.raises(InvalidArgumentError, match="Dimensions of inputs should match") as info:
        run(y, {x: np.ones((1, 4))})
    assert "joined" in str(info.value)


def test_concat_gradient():
    other = np.random.rand(2, 2)
    assert_gradient(lambda x: tf.concat([x, tf.constant(other), x * 2.0], 1), np.random.rand(2, 3))


def test_split_1x_and_0x_forms():
    c = tf.constant(X)
    parts = tf.split(c, 2, axis=2)
    assert len(parts) == 2 and parts[0].shape == [2, 3, 2]
    got = run(parts)
    np.testing.assert_array_equal(got[1], X[:, :, 2:])
    old = tf.split(2, 2, c)                                 # TF 0.x: (split_dim, num_split, value)
    np.testing.assert_array_equal(run(old[0]), X[:, :, :2])
    sized = tf.split(c, [1, -1], 1)
    assert [p.shape.as_list() for p in sized] == [[2, 1, 4], [2, 2, 4]]
    np.testing.assert_array_equal(run(sized[1]), X[:, 1:])
    with pytest.raises(ValueError, match="evenly divisible by 2 but is 3"):
        tf.split(c, 2, 1)


def test_split_gradients():
    def build(x):
        a, b, c = tf.split(x, 3, 1)
        return a * 1.0 + c * 3.0
    assert_gradient(build, np.random.rand(2, 6))

    def build_v(x):
        a, b = tf.split(x, [1, 3], 1)
        return b * 2.0
    assert_gradient(build_v, np.random.rand(2, 4))


def test_stack_pack_unstack_unpack():
    a, b = tf.constant([1, 2]), tf.constant([3, 4])
    np.testing.assert_array_equal(run(tf.stack([a, b])), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(run(tf.pack([a, b], axis=1)), [[1, 3], [2, 4]])
    np.testing.assert_array_equal(run(tf.stack([1, a[0]])), [1, 1])
    parts = tf.unstack(tf.constant(X), axis=1)
    assert len(parts) == 3 and parts[0].shape == [2, 4]
    np.testing.assert_array_equal(run(parts[2]), X[:, 2])
    np.testing.assert_array_equal(run(tf.unpack(tf.constant(X))[1]), X[1])
    with pytest.raises(ValueError, match="Cannot infer num"):
        tf.unstack(tf.placeholder(tf.float32, [None, 2]))
    with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal"):
        tf.stack([a, tf.constant([1, 2, 3])])


def test_stack_unstack_gradients():
    assert_gradient(lambda x: tf.stack([x, x * 2.0], axis=1), np.random.rand(2, 3))
    assert_gradient(lambda x: tf.unstack(x, axis=1)[1] * 1.0, np.random.rand(2, 3))


# -- __getitem__, strided_slice, slice -------------------------------------------------------------------------
@pytest.mark.parametrize("index", [
    1, -1, (slice(None), slice(1, 3)), slice(None, None, -1), (Ellipsis, 0), None,
    (slice(1, None), None), (slice(None), slice(-2, None), slice(None, None, 2)),
    (0, Ellipsis, slice(3, 0, -2)), (slice(None), 1, None, slice(1, 2)), (slice(5, 10),),
    (slice(None, None, -2), slice(None), -1),
])
def test_getitem_matches_numpy(index):
    c = tf.constant(X)
    y = c[index]
    want = X[index]
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(run(y), want)


def test_getitem_tutorial_cases_and_tensor_indices():
    c = tf.constant(X)
    np.testing.assert_array_equal(run(c[1]), X[1])
    np.testing.assert_array_equal(run(c[:, 1:3]), X[:, 1:3])
    np.testing.assert_array_equal(run(c[::-1]), X[::-1])
    np.testing.assert_array_equal(run(c[..., 0]), X[..., 0])
    np.testing.assert_array_equal(run(c[None]), X[None])
    np.testing.assert_array_equal(run(c[1:, tf.newaxis]), X[1:, None])
    i = tf.placeholder(tf.int32, [])
    np.testing.assert_array_equal(run(c[i], {i: 1}), X[1])
    np.testing.assert_array_equal(run(c[:, i:], {i: 2}), X[:, 2:])
    np.testing.assert_array_equal(run(c[:, -1, i], {i: 3}), X[:, -1, 3])
    assert c[i].shape == [3, 4]
    assert tf.shape(tf.placeholder(tf.float32, [None, 5]))[0].shape == []


def test_getitem_errors():
    c = tf.constant(X)
    with pytest.raises(TypeError, match="Only integers, slices"):
        c[1.5]
    with pytest.raises(TypeError, match="Only integers, slices"):
        c[tf.constant([0, 1])]
    np.testing.assert_array_equal(run(c[[0, 1]]), X[0, 1])   # a list is a tuple of indices, as TF
    with pytest.raises(ValueError, match="slice index 5 of dimension 0 out of bounds"):
        c[5]
    x = tf.placeholder(tf.float32, [None, 3])
    y = x[4]
    with pytest.raises(InvalidArgumentError, match="slice index 4 of dimension 0 out of bounds"):
        run(y, {x: np.zeros((2, 3))})


def test_strided_slice_masks_directly():
    c = tf.constant(X)
    y = tf.strided_slice(c, [0, 1], [0, 3], [1, 1], begin_mask=1, end_mask=1)   # c[:, 1:3]
    np.testing.assert_array_equal(run(y), X[:, 1:3])
    z = tf.strided_slice(c, [1, 0], [2, 0], [1, 1], ellipsis_mask=2, shrink_axis_mask=1)
    np.testing.assert_array_equal(run(z), X[1, ...])


def test_getitem_gradient():
    assert_gradient(lambda x: x[1:, ::-2] * 1.0, np.random.rand(3, 5))
    assert_gradient(lambda x: x[..., 1, None] * 1.0, np.random.rand(2, 3, 4))


def test_slice_values_and_gradient():
    c = tf.constant(X)
    y = tf.slice(c, [0, 1, 1], [-1, 2, 2])
    assert y.shape == [2, 2, 2]
    np.testing.assert_array_equal(run(y), X[:, 1:3, 1:3])
    assert_gradient(lambda x: tf.slice(x, [1, 0], [1, -1]) * 1.0, np.random.rand(3, 4))
    with pytest.raises(ValueError, match="Expected size\\[1\\] in \\[0, 2\\], but got 3"):
        tf.slice(c, [0, 1, 0], [1, 3, 1])


# -- gather, unsorted_segment_sum ------------------------------------------------------------------------------
def test_gather_values():
    c = tf.constant(X)
    np.testing.assert_array_equal(run(tf.gather(c, [1, 0, 1])), X[[1, 0, 1]])
    np.testing.assert_array_equal(run(tf.gather(c, [[2, 0]], axis=2)), np.take(X, [[2, 0]], 2))
    assert tf.gather(c, [[2, 0]], axis=2).shape == [2, 3, 1, 2]
    idx = tf.random_uniform([8], 0, 2, dtype=tf.int32)
    assert run(tf.gather(c, idx)).shape == (8, 3, 4)


def test_gather_index_errors():
    i = tf.placeholder(tf.int32, [None])
    y = tf.gather(tf.constant([1.0, 2.0, 3.0]), i, name="lookup")
    with pytest.raises(InvalidArgumentError, match=r"indices\[1\] = 7 is not in \[0, 3\)") as info:
        run(y, {i: [0, 7]})
    assert "lookup" in str(info.value)
    with pytest.raises(InvalidArgumentError, match=r"indices\[0\] = -1 is not in \[0, 3\)"):
        run(y, {i: [-1]})


def test_gather_gradient_sums_repeated_indices():
    params = tf.placeholder(tf.float64, [4, 2])
    y = tf.gather(params, [1, 3, 1, 1])
    (g,) = tf.gradients(y, params)
    assert isinstance(g, tf.IndexedSlices)  # as TensorFlow: densified where used as a tensor
    got = run(tf.convert_to_tensor(g), {params: np.zeros((4, 2))})
    np.testing.assert_array_equal(got, [[0, 0], [3, 3], [0, 0], [1, 1]])
    assert_gradient(lambda x: tf.gather(x, [[2, 0], [2, 2]]) * 1.0, np.random.rand(3, 2))
    assert_gradient(lambda x: tf.gather(x, [1, 1, 0], axis=1) * 1.0, np.random.rand(2, 3, 2))


def test_unsorted_segment_sum():
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = tf.unsorted_segment_sum(data, [2, 0, 2, -1], 3)
    assert y.shape == [3, 3]
    np.testing.assert_array_equal(run(y), [data[1], np.zeros(3), data[0] + data[2]])
    assert_gradient(lambda x: tf.unsorted_segment_sum(x, [1, 0, 1], 2), np.random.rand(3, 2))


def test_gather_nd_and_scatter_nd():
    c = tf.constant(X)
    idx = [[1, 2], [0, 0], [1, 2]]
    g = tf.gather_nd(c, idx)
    assert g.shape == [3, 4]
    np.testing.assert_array_equal(run(g), X[[1, 0, 1], [2, 0, 2]])
    np.testing.assert_array_equal(run(tf.gather_nd(c, [[[1, 2, 3]]])), [[X[1, 2, 3]]])
    s = tf.scatter_nd([[1], [3], [1]], tf.constant([1.0, 2.0, 5.0]), [5])
    assert s.shape == [5]
    np.testing.assert_array_equal(run(s), [0, 6, 0, 2, 0])
    assert_gradient(lambda x: tf.gather_nd(x, [[0, 1], [2, 0], [0, 1]]) * 1.0, np.random.rand(3, 2))
    assert_gradient(lambda x: tf.scatter_nd([[2], [0], [2]], x, [4, 2]), np.random.rand(3, 2))
    bad = tf.placeholder(tf.int32, [None, 2])
    with pytest.raises(InvalidArgumentError, match=r"does not index into param shape \[2,3\]"):
        run(tf.gather_nd(c, bad), {bad: [[0, 0], [2, 0]]})


def test_sparse_to_dense_tutorial_one_hot():
    """The TF 0.x MNIST tutorial's one-hot labels."""
    labels = tf.placeholder(tf.int32, [None])
    batch_size = tf.size(labels)
    labels_col = tf.expand_dims(labels, 1)
    indices = tf.expand_dims(tf.range(0, batch_size), 1)
    concated = tf.concat(1, [indices, labels_col])
    onehot = tf.sparse_to_dense(concated, tf.pack([batch_size, 4]), 1.0, 0.0)
    assert onehot.shape.as_list() == [None, 4]
    np.testing.assert_array_equal(run(onehot, {labels: [3, 0, 1]}), np.eye(4)[[3, 0, 1]])
    dense = tf.sparse_to_dense([1, 3], [5], tf.constant([7, 8]), default_value=-1)
    np.testing.assert_array_equal(run(dense), [-1, 7, -1, 8, -1])
    with pytest.raises(InvalidArgumentError, match=r"indices\[1\] = \[1\] is repeated"):
        run(tf.sparse_to_dense([1, 1], [5], 1))
    with pytest.raises(InvalidArgumentError, match="is out of order"):
        run(tf.sparse_to_dense([3, 1], [5], 1))
    v = tf.placeholder(tf.float64, [2])
    d = tf.placeholder(tf.float64, [])
    y = tf.sparse_to_dense([[0, 1], [1, 0]], [2, 3], v, d)
    gv, gd = tf.gradients(y * np.arange(6.0).reshape(2, 3), [v, d])
    got = run([gv, gd], {v: [1.0, 2.0], d: 0.5})
    np.testing.assert_array_equal(got[0], [1, 3])
    assert got[1] == 15 - 4


# -- one_hot ------------------------------------------------------------------------------------------------------
def test_one_hot():
    y = tf.one_hot([0, 2, -1, 5], 3)
    assert y.dtype is tf.float32 and y.shape == [4, 3]
    np.testing.assert_array_equal(run(y), [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
    z = tf.one_hot([[1, 0]], 2, on_value=5, off_value=-1, axis=0)
    assert z.dtype is tf.int32 and z.shape == [2, 1, 2]
    np.testing.assert_array_equal(run(z), [[[-1, 5]], [[5, -1]]])
    b = tf.one_hot(tf.constant([1], dtype=tf.int64), 2, dtype=tf.bool)
    np.testing.assert_array_equal(run(b), [[False, True]])
    with pytest.raises(TypeError, match="does not match"):
        tf.one_hot([1], 2, on_value=tf.constant(1.0), off_value=tf.constant(0))


# -- tile, pad ---------------------------------------------------------------------------------------------------
def test_tile_values_and_gradient():
    c = tf.constant([[1, 2], [3, 4]])
    y = tf.tile(c, [2, 3])
    assert y.shape == [4, 6]
    np.testing.assert_array_equal(run(y), np.tile([[1, 2], [3, 4]], (2, 3)))
    assert_gradient(lambda x: tf.tile(x, [3, 1, 2]), np.random.rand(2, 2, 2))


@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC"])
def test_pad_values_and_gradient(mode):
    paddings = [[1, 2], [2, 1]]
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    y = tf.pad(tf.constant(x), paddings, mode=mode)
    want = np.pad(x, paddings, mode={"CONSTANT": "constant", "REFLECT": "reflect",
                                     "SYMMETRIC": "symmetric"}[mode])
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(run(y), want)
    assert_gradient(lambda t: tf.pad(t, paddings, mode=mode.lower()), np.random.rand(3, 4))


def test_pad_constant_values_and_errors():
    y = tf.pad(tf.constant([[1, 2]]), [[1, 0], [0, 1]], constant_values=9)
    np.testing.assert_array_equal(run(y), [[9, 9, 9], [1, 2, 9]])
    with pytest.raises(ValueError, match="paddings must be less than the dimension size"):
        tf.pad(tf.constant([[1, 2]]), [[1, 0], [0, 0]], "REFLECT")
    with pytest.raises(ValueError, match="Unknown padding mode"):
        tf.pad(tf.constant([1]), [[1, 1]], "WRAP")


# -- where / select ----------------------------------------------------------------------------------------------
def test_where_coordinates():
    cond = np.array([[True, False], [False, True], [True, True]])
    y = tf.where(cond)
    assert y.dtype is tf.int64 and y.shape.as_list() == [None, 2]
    np.testing.assert_array_equal(run(y), np.argwhere(cond))
    np.testing.assert_array_equal(run(tf.where(tf.constant([0, 3, 0, 1]))), [[1], [3]])


def test_where_select_values():
    cond = tf.constant([[True, False], [False, True]])
    x, y = tf.constant([[1, 2], [3, 4]]), tf.constant([[10, 20], [30, 40]])
    np.testing.assert_array_equal(run(tf.where(cond, x, y)), [[1, 20], [30, 4]])
    rows = tf.constant([True, False])
    np.testing.assert_array_equal(run(tf.where(rows, x, y)), [[1, 2], [30, 40]])
    np.testing.assert_array_equal(run(tf.select(rows, x, y)), [[1, 2], [30, 40]])
    bcast = tf.where(tf.constant([[True], [False]]), x, 0)    # broadcasting (SelectV2)
    np.testing.assert_array_equal(run(bcast), [[1, 2], [0, 0]])
    with pytest.raises(ValueError, match="must both be non-None"):
        tf.where(cond, x)


def test_where_select_gradient():
    mask = np.array([[True, False, True], [False, False, True]])
    other = np.random.rand(2, 3)
    assert_gradient(lambda x: tf.where(mask, x, tf.constant(other)), np.random.rand(2, 3))
    assert_gradient(lambda x: tf.where(tf.constant([False, True]), tf.constant(other), x * 2.0),
                    np.random.rand(2, 3))
    assert_gradient(lambda x: tf.where(tf.constant([[True], [False]]), x, tf.constant(other)),
                    np.random.rand(1, 3))


# -- broadcast_to, boolean_mask, reverse -----------------------------------------------------------------------
def test_broadcast_to_values_and_gradient():
    y = tf.broadcast_to(tf.constant([1.0, 2.0]), [3, 2])
    assert y.shape == [3, 2]
    got = run(y)
    np.testing.assert_array_equal(got, [[1, 2]] * 3)
    got[0, 0] = 7        # a real array the caller owns
    assert_gradient(lambda x: tf.broadcast_to(x, [2, 3, 2]), np.random.rand(3, 1))
    with pytest.raises(ValueError, match="Incompatible shapes"):
        tf.broadcast_to(tf.constant([1.0, 2.0]), [3, 3])


def test_boolean_mask_values_and_gradient():
    mask = np.array([True, False, True])
    np.testing.assert_array_equal(run(tf.boolean_mask(tf.constant(X[0]), mask)), X[0][mask])
    m2 = np.array([[True, False, True], [False, False, True]])
    np.testing.assert_array_equal(run(tf.boolean_mask(tf.constant(X), m2)), X[m2])
    assert_gradient(lambda x: tf.boolean_mask(x, m2) * 1.0, np.random.rand(2, 3))


def test_reverse_values_and_gradient():
    c = tf.constant(X)
    np.testing.assert_array_equal(run(tf.reverse(c, [1])), X[:, ::-1])
    np.testing.assert_array_equal(run(tf.reverse(c, [0, -1])), X[::-1, :, ::-1])
    np.testing.assert_array_equal(run(tf.reverse(c, [True, False, True])), X[::-1, :, ::-1])
    np.testing.assert_array_equal(run(tf.reverse_v2(c, [2])), X[..., ::-1])
    assert_gradient(lambda x: tf.reverse(x, [0]) * np.arange(6.0).reshape(2, 3),
                    np.random.rand(2, 3))


def test_gradients_with_unknown_shapes():
    """The gradient code paths that build shapes at run time (no static shapes)."""
    v = np.random.rand(3, 4)
    assert_gradient(lambda x: tf.slice(x, [1, 1], [-1, 2]) * 1.0, v, static=False)
    assert_gradient(lambda x: tf.tile(x, [2, 1]), v, static=False)
    assert_gradient(lambda x: tf.pad(x, [[1, 0], [0, 2]]), v, static=False)
    assert_gradient(lambda x: tf.gather(x, [2, 2, 0]) * 1.0, v, static=False)
    assert_gradient(lambda x: tf.gather(x, [3, 1], axis=1) * 1.0, v, static=False)
    assert_gradient(lambda x: tf.concat([x, x * 2.0], 1), v, static=False)
    assert_gradient(lambda x: x[1:, ::2] * 1.0, v, static=False)
    assert_gradient(lambda x: tf.reshape(x, [-1]) * 1.0, v, static=False)
    assert_gradient(lambda x: tf.boolean_mask(x, np.array([True, False, True])), v, static=False)


def test_transpose_of_unknown_rank_reverses_dimensions():
    x = tf.placeholder(tf.float32)
    y = tf.transpose(x)
    np.testing.assert_array_equal(run(y, {x: X}), X.T)


def test_fed_constants_are_honoured():
    """Kernels precompute constant arguments, but a fed value replaces the constant."""
    shape = tf.constant([4, 6])
    y = tf.reshape(tf.constant(X), shape)
    assert run(y).shape == (4, 6)
    assert run(y, {shape: [6, 4]}).shape == (6, 4)
    axis = tf.constant(0)
    z = tf.concat([tf.constant(X), tf.constant(X)], axis)
    assert run(z, {axis: 2}).shape == (2, 3, 8)
    n = tf.constant([3])
    r = tf.random_uniform(n, 0, 5, dtype=tf.int32)
    assert run(r, {n: [7]}).shape == (7,)


def test_static_shapes_and_dimensions_convert_to_int_tensors():
    # TF 1.x registers conversions for TensorShape and Dimension (constant_op.py): int32 unless
    # a dimension needs int64; partial shapes, unknown dimensions and non-integer dtypes fail.
    x = tf.placeholder(tf.float32, [None, 3])
    labels = tf.constant([2, 0])
    one_hot = tf.one_hot(labels, depth=x.shape[1])            # the Cloud ML census sample's form
    shape = tf.convert_to_tensor(tf.TensorShape([4, 5]))
    dim = tf.convert_to_tensor(x.shape[1])
    big = tf.convert_to_tensor(tf.TensorShape([2 ** 31, 1]))
    assert (shape.dtype, dim.dtype, big.dtype) == (tf.int32, tf.int32, tf.int64)
    assert tf.convert_to_tensor(x.shape[1], dtype=tf.int64).dtype == tf.int64
    np.testing.assert_array_equal(run(one_hot), [[0, 0, 1], [1, 0, 0]])
    values = run([shape, dim, big])
    np.testing.assert_array_equal(values[0], [4, 5])
    assert values[1] == 3
    np.testing.assert_array_equal(values[2], [2 ** 31, 1])
    with pytest.raises(ValueError, match="partially known TensorShape"):
        tf.convert_to_tensor(x.shape)
    with pytest.raises(ValueError, match="unknown Dimension"):
        tf.convert_to_tensor(x.shape[0])
    with pytest.raises(TypeError, match="Cannot convert a TensorShape to dtype: float32"):
        tf.convert_to_tensor(x.shape[1], dtype=tf.float32)
    with pytest.raises(ValueError, match="too large"):
        tf.convert_to_tensor(tf.TensorShape([2 ** 31]), dtype=tf.int32)
