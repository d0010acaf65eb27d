"""GPU MatMul/BatchMatMul against the CPU kernels, and the tiled GEMM's launch plans directly."""
import types

import numpy as np
import pytest
from numba import cuda

import tfjupyter as tf
from tfjupyter.framework.errors import InvalidArgumentError
from tfjupyter.kernels.cuda import _runtime
from tfjupyter.kernels.cuda import matmul_kernels as mk

from gpu_compare import compare, placements

rng = np.random.default_rng(11)


def values(shape, dtype=np.float32):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-9, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _ctx():
    state = _runtime.gpu_state(_runtime.physical_gpus()[0])
    return types.SimpleNamespace(state=state, name="/device:GPU:0")


def _operands(m, n, k, ta, tb, dtype=np.float32):
    a = values((k, m) if ta else (m, k), dtype)
    b = values((n, k) if tb else (k, n), dtype)
    return a, b, (a.T if ta else a) @ (b.T if tb else b)


# -- MatMul through a session ----------------------------------------------------------------------
# Shapes around the simulator's tiles (16 and 8): multiples, edges, vectors, k = 1.
SHAPES = [(1, 1, 1), (5, 3, 7), (17, 33, 9), (1, 13, 20), (13, 1, 7), (16, 16, 16), (7, 5, 1)]


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_matmul_float32(m, n, k, ta, tb):
    a, b, _ = _operands(m, n, k, ta, tb)
    compare(lambda: tf.matmul(tf.constant(a), tf.constant(b), transpose_a=ta, transpose_b=tb),
            rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_matmul_float64_and_gradients(ta, tb):
    a, b, _ = _operands(6, 11, 19, ta, tb, np.float64)

    def build():
        x, y = tf.constant(a), tf.constant(b)
        z = tf.matmul(x, y, transpose_a=ta, transpose_b=tb)
        w = tf.constant(np.linspace(-1, 1, 66).reshape(6, 11))
        return [z] + tf.gradients(tf.reduce_sum(z * w), [x, y])
    compare(build, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.int64])
def test_matmul_other_dtypes(dtype):
    a, b = values((9, 5), dtype), values((5, 6), dtype)
    tol = 1e-2 if dtype == np.float16 else 0
    compare(lambda: tf.matmul(tf.constant(a), tf.constant(b)), rtol=tol, atol=tol)


def test_matmul_empty_and_zero_depth():
    def build():
        return [tf.matmul(tf.constant(values((0, 3))), tf.constant(values((3, 4)))),
                tf.matmul(tf.constant(values((4, 0))), tf.constant(values((0, 3)))),
                tf.matmul(tf.constant(values((2, 3))), tf.constant(values((3, 0))))]
    gpu, _ = compare(build)
    assert gpu[0].shape == (0, 4) and gpu[2].shape == (2, 0)
    np.testing.assert_array_equal(gpu[1], np.zeros((4, 3), np.float32))


def test_matmul_incompatible_shapes_raise():
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            a = tf.placeholder(tf.float32, [None, None])
            b = tf.placeholder(tf.float32, [None, None])
            c = tf.matmul(a, b)
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError, match="size-incompatible"):
                sess.run(c, {a: np.zeros((2, 3), np.float32), b: np.zeros((4, 2), np.float32)})
            assert "GPU" in placements(sess)[c.op.name]


# -- BatchMatMul -------------------------------------------------------------------------------
@pytest.mark.parametrize("xs,ys,adj_x,adj_y", [
    ((3, 4, 5), (3, 5, 2), False, False),
    ((2, 1, 4, 5), (3, 5, 6), False, False),  # broadcast both ways
    ((2, 3, 5, 4), (1, 6, 5), True, True),
    ((4, 5), (2, 3, 5, 4), False, False),  # a plain matrix against a batch
    ((2, 1, 2, 1, 3, 4), (1, 3, 1, 2, 4, 2), False, False),  # 4 unmergeable batch dims
])
def test_batch_matmul_broadcasting(xs, ys, adj_x, adj_y):
    x, y = values(xs), values(ys)
    compare(lambda: tf.matmul(tf.constant(x), tf.constant(y), adjoint_a=adj_x, adjoint_b=adj_y),
            rtol=1e-5, atol=1e-5)


def test_batch_matmul_gradients_float64():
    x, y = values((2, 3, 4, 5), np.float64), values((3, 5, 2), np.float64)

    def build():
        a, b = tf.constant(x), tf.constant(y)
        z = tf.matmul(a, b)
        return [z] + tf.gradients(tf.reduce_sum(z * z), [a, b])
    compare(build, rtol=1e-12, atol=1e-12)


def test_batch_matmul_v1_needs_equal_batch_dims():
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/gpu:0"):
            a = tf.placeholder(tf.float32, None)
            b = tf.placeholder(tf.float32, None)
            op = graph.create_op("BatchMatMul", [a, b],
                                 attrs={"adj_x": False, "adj_y": False, "T": tf.float32})
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError, match="compatible batch dimensions"):
                sess.run(op.outputs[0], {a: np.zeros((2, 3, 4), np.float32),
                                         b: np.zeros((1, 4, 2), np.float32)})


# -- The tiled kernel's plans, directly ------------------------------------------------------------
@pytest.mark.parametrize("config", mk.CONFIGS)
@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_gemm_configs_and_split_k(config, splits, ta, tb):
    m, n, k = 11, 19, 37
    a, b, expected = _operands(m, n, k, ta, tb)
    c = cuda.device_array(m * n, np.float32)
    mk.gemm(_ctx(), cuda.to_device(a.ravel()), cuda.to_device(b.ravel()), c, m, n, k, ta, tb,
            config=config, splits=splits)
    np.testing.assert_allclose(c.copy_to_host().reshape(m, n), expected, rtol=1e-5, atol=1e-5)


def test_gemm_accumulates_at_offsets():
    m, n, k = 5, 6, 7
    a, b, expected = _operands(m, n, k, False, True)
    c0 = values((2, m, n))
    c = cuda.to_device(c0.ravel())
    # Into the second matrix of c, from A placed after 3 leading elements.
    a_dev = cuda.to_device(np.concatenate([np.zeros(3, np.float32), a.ravel()]))
    mk.gemm(_ctx(), a_dev, cuda.to_device(b.ravel()), c, m, n, k, False, True, a_offset=3,
            c_offset=m * n, accumulate=True, splits=2, config=mk.CONFIGS[-1])
    got = c.copy_to_host().reshape(2, m, n)
    np.testing.assert_array_equal(got[0], c0[0])
    np.testing.assert_allclose(got[1], c0[1] + expected, rtol=1e-5, atol=1e-5)


def test_plan_prefers_big_tiles_then_splits_k():
    big, small = mk.CONFIGS[0], mk.CONFIGS[-1]
    assert mk._plan(mk.CONFIGS, 64 * big.bm, 64 * big.bn, 1024, 1, 132) == (big, 1)
    cfg, splits = mk._plan(mk.CONFIGS, small.bm, small.bn, 1 << 16, 1, 132)
    assert cfg == small and splits > 1
    assert mk._plan(mk.CONFIGS, small.bm, small.bn, 8, 1, 132) == (small, 1)


def test_batch_layout_merges_and_broadcasts():
    layout = mk.batch_layout((2, 3), (2, 3), 20, 30)
    assert layout.shape == (2, 3) and layout.dims == ((6, 20, 30),)
    layout = mk.batch_layout((2, 1), (3,), 20, 30)
    assert layout.shape == (2, 3) and layout.dims == ((2, 20, 0), (3, 0, 30))
    assert mk.batch_layout((), (4,), 20, 30).dims == ((4, 0, 30),)
    with pytest.raises(ValueError):
        mk.batch_layout((2,), (3,), 1, 1)


def test_gemm_backend_env(monkeypatch):
    monkeypatch.setenv("TFJUPYTER_GEMM", "numba")
    assert mk.gemm_backend() == "numba"
    monkeypatch.setenv("TFJUPYTER_GEMM", "bogus")
    with pytest.raises(ValueError):
        mk.gemm_backend()
