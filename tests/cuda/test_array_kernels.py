"""GPU array kernels against the CPU kernels: values, gradients, edge cases and errors."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework.errors import InvalidArgumentError

from gpu_compare import compare as _compare, placements, run_on

rng = np.random.default_rng(7)


def compare(build, **kwargs):
    """gpu_compare.compare with the same random inputs in the GPU and the CPU graph."""
    def seeded():
        global rng
        rng = np.random.default_rng(7)
        return build()
    return _compare(seeded, **kwargs)


def values(shape, dtype=np.float32):
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def const(shape, dtype=np.float32):
    return tf.constant(values(shape, dtype))


def with_grads(y, xs):
    """y and dy/dx for each x, with a non-uniform upstream gradient (so every element of the
    gradient is distinguishable). A gather's gradient (an IndexedSlices) is densified, which
    runs UnsortedSegmentSum."""
    w = tf.constant(values(y.shape.as_list(), y.dtype.as_numpy_dtype))
    return [y] + [tf.convert_to_tensor(g) for g in tf.gradients(tf.reduce_sum(y * w), xs)]


# -- Const ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int64, np.bool_])
def test_const_values_of_every_dtype_and_shape(dtype):
    compare(lambda: [const((3, 4), dtype), const((), dtype), const((0, 2), dtype),
                     tf.constant(values((5,), dtype))])


def test_const_int32_is_host_memory_and_persistent():
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        shape = tf.constant([2, 3])
        x = tf.constant(np.arange(6.0, dtype=np.float32))
        y = tf.reshape(x, shape)
    with tf.Session(graph=graph) as sess:
        first = sess.run([y, shape])
        second = sess.run([y, shape])
        assert "GPU" in placements(sess)[shape.op.name]
    np.testing.assert_array_equal(first[0], np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(second[0], first[0])
    np.testing.assert_array_equal(second[1], [2, 3])


# -- Reshape, ExpandDims, Squeeze ----------------------------------------------------------------------
def test_reshape_expand_squeeze_views():
    def build():
        x = const((2, 3, 4), np.float64)
        s = const((), np.float64)
        e = const((0, 3), np.float64)
        return [tf.reshape(x, [4, -1]), tf.reshape(x, [-1]), tf.reshape(s, [1, 1]),
                tf.reshape(tf.reshape(s, [1]), []), tf.reshape(e, [3, -1]),
                tf.reshape(e, [0, 3, 1]), tf.expand_dims(x, -1), tf.expand_dims(x, 0),
                tf.expand_dims(s, 0), tf.squeeze(tf.expand_dims(x, 1)),
                tf.squeeze(tf.reshape(x, [1, 2, 1, 12, 1]), axis=[0, -1]),
                *with_grads(tf.reshape(x, [6, 4]) * 2.0, [x])]
    compare(build)


def test_reshape_with_a_runtime_shape_and_errors():
    def build():
        x = tf.placeholder(tf.float32, [None, None])
        shape = tf.placeholder(tf.int32, [None])
        return tf.reshape(x, shape), {x: values((4, 6)), shape: [3, -1, 2]}
    compare(build)
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, [None])
        shape = tf.placeholder(tf.int32, [None])
        y = tf.reshape(x, shape)
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError, match="requested shape requires a multiple of 4"):
                sess.run(y, {x: np.zeros(6, np.float32), shape: [4, -1]})
            with pytest.raises(InvalidArgumentError, match="Only one input size may be -1"):
                sess.run(y, {x: np.zeros(6, np.float32), shape: [-1, -1]})
            with pytest.raises(InvalidArgumentError, match="requested shape has 4"):
                sess.run(y, {x: np.zeros(6, np.float32), shape: [2, 2]})


def test_int32_shape_math_runs_in_host_memory_on_the_gpu():
    def build():
        x = tf.constant(np.arange(12, dtype=np.int32).reshape(3, 4))
        return [tf.reshape(x, [4, 3]), tf.transpose(x), tf.concat([x, x], 0), x[1:, ::2],
                tf.stack([x, x]), tf.gather(x, [2, 0]), tf.tile(x, [2, 1]), tf.pad(x, [[1, 0], [0, 1]])]
    compare(build)


# -- Transpose --------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,perm", [
    ((13, 10), (1, 0)),            # tiled, neither dim a multiple of the tile
    ((3, 9, 17), (0, 2, 1)),       # batched tiled
    ((2, 5, 3, 4), (0, 3, 1, 2)),  # NHWC -> NCHW: batched tiled after merging H, W
    ((2, 3, 4, 5), (3, 1, 0, 2)),  # generic gather
    ((2, 3, 4), (-1, 0, 1)),       # negative perm entries
    ((4, 1, 3), (1, 2, 0)),
    ((5,), (0,)),
    ((), ()),
    ((0, 3), (1, 0)),
])
def test_transpose(shape, perm):
    compare(lambda: [tf.transpose(const(shape), perm)])


def test_transpose_dtypes_and_gradient():
    def build():
        x = const((3, 5, 2), np.float64)
        return [tf.transpose(const((6, 9), np.bool_)), tf.transpose(const((6, 9), np.int64)),
                tf.transpose(const((7, 3, 2), np.float16), (2, 0, 1)),
                *with_grads(tf.transpose(x, (1, 2, 0)), [x])]
    compare(build)


def test_transpose_runtime_perm_and_error():
    def build():
        perm = tf.placeholder(tf.int32, [3])
        return tf.transpose(const((2, 3, 4)), perm), {perm: [2, 0, 1]}
    compare(build)
    with tf.Graph().as_default(), tf.device("/gpu:0"):
        perm = tf.placeholder(tf.int32, [3])
        y = tf.transpose(tf.placeholder_with_default(values((2, 3, 4)), [None, None, None]), perm)
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError, match="1 is missing from"):
                sess.run(y, {perm: [0, 2, 2]})


# -- ConcatV2, Pack, Unpack, Split, SplitV ------------------------------------------------------------
def test_concat():
    def build():
        a, b, c = const((2, 3, 4), np.float64), const((2, 1, 4), np.float64), const((2, 0, 4), np.float64)
        return [tf.concat([a, b, c], 1), tf.concat([a, a], -1), tf.concat([a, a], 0), tf.concat([a], 2),
                tf.concat([const((3,), np.int64), const((2,), np.int64)], 0),
                tf.concat([const((2, 2), np.bool_), const((2, 3), np.bool_)], -1),
                *with_grads(tf.concat([a, b], axis=-2), [a, b])]
    compare(build)


def test_concat_shape_error_at_run_time():
    with tf.Graph().as_default(), tf.device("/gpu:0"):
        a, b = tf.placeholder(tf.float32, [None, None]), tf.placeholder(tf.float32, [None, None])
        y = tf.concat([a, b], 0)
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError, match="Dimensions of inputs should match"):
                sess.run(y, {a: np.zeros((2, 3), np.float32), b: np.zeros((2, 4), np.float32)})


def test_stack_and_unstack():
    def build():
        x = const((3, 4, 2), np.float64)
        s = const((), np.float64)
        return [tf.stack([x, x, x]), tf.stack([x, x], axis=-1), tf.stack([x, x], axis=2),
                tf.stack([s, s]), tf.stack([const((0, 2)), const((0, 2))], 1),
                *tf.unstack(x), *tf.unstack(x, axis=1), *tf.unstack(x, axis=-1),
                *tf.unstack(const((4,), np.int64)),
                *with_grads(tf.stack(tf.unstack(x, axis=1)[::-1], axis=0), [x])]
    compare(build)


def test_split_and_split_v():
    def build():
        x = const((4, 6, 3), np.float64)
        return [*tf.split(x, 2, axis=0), *tf.split(x, 3, axis=1), *tf.split(x, 3, axis=-1),
                *tf.split(x, [1, -1, 2], axis=1), *tf.split(x, [4, 0], axis=0),
                *tf.split(x, 1, axis=1), *tf.split(x, [6], axis=1),
                *with_grads(tf.split(x, [2, 4], axis=1)[1], [x])]
    compare(build)


def test_split_error_at_run_time():
    with tf.Graph().as_default(), tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, [None, 3])
        parts = tf.split(x, 2, axis=0)
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError, match="evenly divide"):
                sess.run(parts, {x: np.zeros((3, 3), np.float32)})


# -- Tile, BroadcastTo, ReverseV2, Pad -------------------------------------------------------------------
def test_tile():
    def build():
        x = const((2, 3), np.float64)
        return [tf.tile(x, [2, 3]), tf.tile(x, [1, 1]), tf.tile(x, [0, 2]), tf.tile(const((1, 1, 5)), [3, 2, 1]),
                tf.tile(const((3,), np.bool_), [4]), *with_grads(tf.tile(x, [3, 2]), [x])]
    compare(build)


def test_broadcast_to_and_error():
    def build():
        return [tf.broadcast_to(const((3, 1)), [2, 3, 4]), tf.broadcast_to(const(()), [2, 2]),
                tf.broadcast_to(const((1, 4), np.int64), [3, 4]), tf.broadcast_to(const((2, 3)), [2, 3]),
                tf.broadcast_to(const((1, 3)), [0, 3])]
    compare(build)
    with tf.Graph().as_default(), tf.device("/gpu:0"):
        shape = tf.placeholder(tf.int32, [2])
        y = tf.broadcast_to(tf.constant(values((3, 2))), shape)
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError, match=r"Incompatible shapes: \[3,2\] vs. \[3,3\]"):
                sess.run(y, {shape: [3, 3]})


def test_reverse():
    def build():
        x = const((3, 4, 5), np.float64)
        return [tf.reverse(x, [0]), tf.reverse(x, [-1]), tf.reverse(x, [0, 2]), tf.reverse(x, []),
                tf.reverse(const((4,), np.bool_), [0]), tf.reverse(const((0, 3)), [1]),
                *with_grads(tf.reverse(x, [1, 2]), [x])]
    compare(build)


def test_pad_and_pad_v2():
    def build():
        x = const((2, 3), np.float64)
        return [tf.pad(x, [[1, 2], [0, 3]]), tf.pad(x, [[0, 0], [0, 0]]),
                tf.pad(x, [[1, 1], [2, 0]], constant_values=-1.5),
                tf.pad(const((2, 2), np.int64), [[1, 0], [0, 1]], constant_values=7),
                tf.pad(const((0, 2)), [[1, 1], [0, 0]]), tf.pad(const((3,), np.bool_), [[2, 1]]),
                *with_grads(tf.pad(x, [[2, 1], [1, 2]]), [x])]
    compare(build)


# -- Slice, StridedSlice, StridedSliceGrad ---------------------------------------------------------------
def test_slice():
    def build():
        x = const((4, 5, 6), np.float64)
        return [tf.slice(x, [1, 0, 2], [2, -1, 3]), tf.slice(x, [0, 0, 0], [4, 5, 6]),
                tf.slice(x, [1, 0, 0], [2, 5, 6]),  # contiguous rows: a view
                tf.slice(x, [0, 0, 0], [0, 2, 2]), tf.slice(const((5,), np.int64), [1], [3]),
                *with_grads(tf.slice(x, [1, 2, 0], [3, 2, 5]), [x])]
    compare(build)


def test_strided_slice_masks():
    def build():
        x = const((5, 6, 7), np.float64)
        v = const((8,), np.float64)
        return [x[1:4, ::2, -1], x[::-1, 1, ::-3], x[..., 2], x[None, 1:3, ..., None],
                x[-2], x[:, 4:1:-1], x[2, 3, 4], v[::3], v[5:2], v[-1],
                x[1:2],  # a contiguous block: a view
                tf.strided_slice(x, [0, 1, 0], [0, 0, 0], [1, 1, 1], begin_mask=1, end_mask=5),
                *with_grads(x[4:0:-2, 1:, ::3], [x]), *with_grads(v[-2], [v]),
                *with_grads(x[:, 2:3, :], [x])]
    compare(build)


def test_strided_slice_out_of_bounds_at_run_time():
    with tf.Graph().as_default(), tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, [None])
        y = x[4]
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError, match="slice index 4 of dimension 0 out of bounds"):
                sess.run(y, {x: np.zeros(3, np.float32)})


# -- GatherV2, UnsortedSegmentSum, OneHot -----------------------------------------------------------------
def test_gather_and_its_gradient():
    def build():
        p = const((5, 4, 3), np.float64)
        i32 = tf.constant([[4, 0], [2, 2]])
        i64 = tf.constant(np.array([3, 1, 1], np.int64))
        return [tf.gather(p, i32), tf.gather(p, i64, axis=1), tf.gather(p, [2, 0], axis=-1),
                tf.gather(p, 3), tf.gather(p, np.zeros((0,), np.int32)),
                tf.gather(const((6,), np.bool_), [5, 0, 5]),
                *with_grads(tf.gather(p, i32, axis=0), [p]), *with_grads(tf.gather(p, i64, axis=1), [p])]
    compare(build)


def test_gather_out_of_range_indices_give_zeros_on_the_gpu():
    # TensorFlow's GPU kernel: an index out of range cannot raise on the device; it reads 0.
    def build():
        i = tf.placeholder(tf.int64, [None])
        return tf.gather(tf.constant([[1.0, 2.0], [3.0, 4.0]]), i), {i: [1, 5, -1]}
    got, _ = run_on("/gpu:0", build)
    np.testing.assert_array_equal(got, [[3.0, 4.0], [0.0, 0.0], [0.0, 0.0]])


def test_unsorted_segment_sum():
    def build():
        data = const((6, 3), np.float64)
        ids = tf.constant([0, 2, -1, 2, 0, 3])
        return [tf.unsorted_segment_sum(data, ids, 5),
                tf.unsorted_segment_sum(const((2, 3), np.float32), tf.constant([[1, 1, 0], [0, -1, 1]]), 2),
                tf.unsorted_segment_sum(const((4,), np.int64), tf.constant(np.array([1, 1, 0, 1], np.int64)), 3),
                tf.unsorted_segment_sum(const((0, 3)), tf.zeros([0], tf.int32), 2),
                tf.unsorted_segment_sum(const((0, 2)), tf.zeros([0], tf.int32), 0)]
    compare(build)


def test_one_hot():
    def build():
        i = tf.constant([[0, 3], [-1, 2]])
        return [tf.one_hot(i, 4), tf.one_hot(i, 3, axis=0), tf.one_hot(i, 4, axis=1),
                tf.one_hot(tf.constant(np.array([1, 0], np.int64)), 2, on_value=5.0, off_value=-1.0,
                           dtype=tf.float64),
                tf.one_hot(tf.constant(2), 3), tf.one_hot(i, 0),
                tf.one_hot(tf.constant([1, 0]), 2, on_value=True, off_value=False, dtype=tf.bool)]
    compare(build)


def test_one_plan_runs_with_changing_shapes():
    # The kernels remember their data movement per input shape: a fed shape change must not
    # reuse a stale plan.
    with tf.Graph().as_default(), tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, [None, None])
        ys = [tf.transpose(x), x[::-1, 1:], tf.reverse(x, [1]), tf.tile(x, [2, 1]),
              tf.broadcast_to(x[:1], tf.shape(x)), tf.slice(x, [1, 0], [-1, 2])]
        dys = tf.gradients(tf.reduce_sum(ys[1] * 3.0), x)
        with tf.Session() as sess:
            for shape in [(3, 4), (5, 2), (3, 4), (2, 7)]:
                v = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
                got = sess.run(ys + dys, {x: v})
                want = [v.T, v[::-1, 1:], v[:, ::-1], np.tile(v, [2, 1]),
                        np.broadcast_to(v[:1], shape), v[1:, 0:2]]
                grad = np.zeros(shape, np.float32)
                grad[:, 1:] = 3.0
                for g, w in zip(got, want + [grad]):
                    np.testing.assert_array_equal(g, w)
