"""CPU neural-network kernels against naive references and finite differences."""
import itertools

import numpy as np
import pytest

from tfjupyter.framework.errors import InvalidArgumentError
from tfjupyter.kernels.cpu import KERNELS
from tfjupyter.kernels.cpu import nn_kernels


# ---------------------------------------------------------------------------------------
# A stand-in for the graph op a kernel factory reads.


class _DType:
    def __init__(self, np_dtype):
        self.as_numpy_dtype = np.dtype(np_dtype).type


class _Shape:
    def __init__(self, dims):
        self._dims = dims

    def as_list(self):
        return None if self._dims is None else list(self._dims)


class _Tensor:
    def __init__(self, array):
        self.dtype = _DType(array.dtype)
        self.shape = _Shape(array.shape)


class FakeOp:
    def __init__(self, op_type, inputs, attrs, name="test_op"):
        self.type = op_type
        self.name = name
        self.inputs = [_Tensor(np.asarray(a)) for a in inputs]
        self._attrs = attrs

    def get_attr(self, name):
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"no attr {name!r}") from None


def run_op(op_type, inputs, name="test_op", **attrs):
    op = FakeOp(op_type, inputs, attrs, name)
    return KERNELS.get(op_type)(op, None)(*inputs)


def conv_attrs(strides, padding, dilations=(1, 1)):
    return dict(strides=[1, *strides, 1], padding=padding, dilations=[1, *dilations, 1],
                data_format="NHWC")


def pool_attrs(ksize, strides, padding):
    return dict(ksize=[1, *ksize, 1], strides=[1, *strides, 1], padding=padding,
                data_format="NHWC")


# ---------------------------------------------------------------------------------------
# Naive references


def tf_geometry(size, k, stride, padding, dilation=1):
    span = (k - 1) * dilation + 1
    if padding == "SAME":
        out = -(-size // stride)
        return out, max((out - 1) * stride + span - size, 0) // 2
    return -(-(size - span + 1) // stride), 0


def conv_ref(x, w, strides, padding, dilations=(1, 1)):
    n, h, wd, c = x.shape
    kh, kw, _, co = w.shape
    oh, pt = tf_geometry(h, kh, strides[0], padding, dilations[0])
    ow, pl = tf_geometry(wd, kw, strides[1], padding, dilations[1])
    y = np.zeros((n, oh, ow, co))
    for b, i, j, a, q in itertools.product(range(n), range(oh), range(ow), range(kh), range(kw)):
        yy = i * strides[0] - pt + a * dilations[0]
        xx = j * strides[1] - pl + q * dilations[1]
        if 0 <= yy < h and 0 <= xx < wd:
            y[b, i, j] += x[b, yy, xx] @ w[a, q]
    return y


def pool_windows(shape, ksize, strides, padding):
    """Yields (b, i, j, window rows, window cols) of a pool, clipped to the image."""
    n, h, w, _ = shape
    oh, pt = tf_geometry(h, ksize[0], strides[0], padding)
    ow, pl = tf_geometry(w, ksize[1], strides[1], padding)
    for b, i, j in itertools.product(range(n), range(oh), range(ow)):
        y0, x0 = i * strides[0] - pt, j * strides[1] - pl
        yield (b, i, j, range(max(y0, 0), min(y0 + ksize[0], h)),
               range(max(x0, 0), min(x0 + ksize[1], w)), oh, ow)


def pool_ref(x, ksize, strides, padding, reduce):
    out = {}
    for b, i, j, ys, xs, oh, ow in pool_windows(x.shape, ksize, strides, padding):
        out[b, i, j] = reduce(x[b, ys.start:ys.stop, xs.start:xs.stop].reshape(-1, x.shape[3]))
    y = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for key, value in out.items():
        y[key] = value
    return y


def max_pool_grad_ref(x, grad, ksize, strides, padding):
    """Each window's gradient to its first maximum, rows scanned before columns."""
    dx = np.zeros_like(x)
    for b, i, j, ys, xs, _, _ in pool_windows(x.shape, ksize, strides, padding):
        for ch in range(x.shape[3]):
            cells = [(y, xx) for y in ys for xx in xs]
            values = [x[b, y, xx, ch] for y, xx in cells]
            y, xx = cells[int(np.argmax(values))]
            dx[b, y, xx, ch] += grad[b, i, j, ch]
    return dx


def numeric_grad(f, x, upstream, eps=1e-6):
    """d/dx of sum(f(x) * upstream) by central differences (float64)."""
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for k in range(flat.size):
        saved = flat[k]
        flat[k] = saved + eps
        plus = np.sum(f(x) * upstream)
        flat[k] = saved - eps
        minus = np.sum(f(x) * upstream)
        flat[k] = saved
        gflat[k] = (plus - minus) / (2 * eps)
    return g


rng = np.random.default_rng(1234)


def randn(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------------------
# Convolution

CONV_CASES = [
    # x shape, filter shape, strides, padding, dilations
    ((2, 7, 7, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1)),
    ((2, 7, 7, 3), (3, 3, 3, 4), (2, 2), "SAME", (1, 1)),
    ((2, 7, 7, 3), (3, 3, 3, 2), (2, 2), "VALID", (1, 1)),
    ((2, 6, 5, 2), (2, 2, 2, 3), (1, 1), "VALID", (1, 1)),
    ((2, 6, 5, 2), (2, 2, 2, 3), (1, 1), "SAME", (1, 1)),
    ((2, 6, 5, 2), (2, 2, 2, 3), (2, 2), "SAME", (1, 1)),
    ((2, 7, 6, 3), (3, 2, 3, 2), (2, 1), "VALID", (1, 1)),
    ((1, 8, 8, 2), (3, 3, 2, 2), (3, 3), "VALID", (1, 1)),
    ((2, 7, 7, 2), (3, 3, 2, 3), (1, 1), "SAME", (2, 2)),
    ((2, 7, 6, 2), (2, 3, 2, 2), (1, 2), "VALID", (2, 1)),
    ((2, 5, 5, 3), (1, 1, 3, 4), (1, 1), "SAME", (1, 1)),
    ((2, 5, 5, 3), (1, 1, 3, 4), (2, 2), "VALID", (1, 1)),
]
CONV_IDS = [f"{x}-{w}-s{s}-{p}-d{d}" for x, w, s, p, d in CONV_CASES]


def split_jobs(monkeypatch):
    """Makes the kernels split every job over threads, in chunks of one image."""
    monkeypatch.setattr(nn_kernels._WORKERS, "active", lambda: True)
    monkeypatch.setattr(nn_kernels, "_PARALLEL_MIN_FLOPS", 0)
    monkeypatch.setattr(nn_kernels, "_PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(nn_kernels, "_CHUNK_BYTES", 1)
    monkeypatch.setattr(nn_kernels, "_CHUNK_BYTES_BACKPROP_INPUT", 1)


@pytest.fixture(params=["whole", "split"])
def execution(request, monkeypatch):
    """Runs a test with each job whole, and split over threads in one-image chunks."""
    if request.param == "split":
        split_jobs(monkeypatch)


def test_jobs_split_only_while_blas_is_single_threaded():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from tfjupyter.kernels.cpu import _threads
    workers = _threads._Workers()
    if workers.count < 2 or _threads._blas_control() is None:
        pytest.skip("needs 2 cores and the OpenBLAS bundled with numpy")
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        assert workers.active()
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        assert not workers.active()
        with _threads.single_threaded_blas:
            assert workers.active()
        assert not workers.active()


def test_shared_parts_go_to_whichever_core_is_free(monkeypatch):
    import threading
    import time
    from tfjupyter.kernels.cpu import _threads
    workers = _threads._Workers()
    workers.count = 2
    monkeypatch.setattr(workers, "active", lambda: True)
    taken = {}

    def work(ranges):
        mine = []
        for lo, hi in ranges:
            mine.append((lo, hi))
            if threading.current_thread() is threading.main_thread():
                time.sleep(0.05)  # this core is slowed by another process
        taken[threading.get_ident()] = mine
        return len(mine)

    counts = workers.share(work, 23, 2, big=True)
    parts = sorted(p for mine in taken.values() for p in mine)
    assert parts == [(lo, min(lo + 2, 23)) for lo in range(0, 23, 2)]
    assert len(counts) == 2 and sum(counts) == 12
    assert counts[0] < counts[1]  # the slowed caller took fewer parts
    assert workers.share(work, 5, 2, big=False) == [3]  # small jobs: the caller alone

    # With the pool thread busy elsewhere, the caller does it all and does not wait.
    release = threading.Event()
    blocker = workers._get_pool().submit(release.wait, 10)
    try:
        start = time.perf_counter()
        assert workers.share(lambda ranges: sum(1 for _ in ranges), 6, 1, big=True) == [6]
        assert time.perf_counter() - start < 5
    finally:
        release.set()
        blocker.result()


def test_conv2d_filter_grad_bits_do_not_depend_on_the_split(monkeypatch):
    x, dy = randn(9, 8, 8, 3, dtype=np.float32), randn(9, 8, 8, 4, dtype=np.float32)
    args = [x, np.array([3, 3, 3, 4], np.int32), dy]
    attrs = conv_attrs((1, 1), "SAME")
    monkeypatch.setattr(nn_kernels, "_CHUNK_BYTES", 1)  # one image a chunk: 5 groups
    monkeypatch.setattr(nn_kernels._WORKERS, "active", lambda: False)
    whole = run_op("Conv2DBackpropFilter", args, **attrs)
    split_jobs(monkeypatch)
    for _ in range(3):
        np.testing.assert_array_equal(run_op("Conv2DBackpropFilter", args, **attrs), whole)


@pytest.mark.parametrize("xs,ws,strides,padding,dilations", CONV_CASES, ids=CONV_IDS)
def test_conv2d_matches_reference(xs, ws, strides, padding, dilations, execution):
    x, w = randn(*xs), randn(*ws)
    y = run_op("Conv2D", [x, w], **conv_attrs(strides, padding, dilations))
    np.testing.assert_allclose(y, conv_ref(x, w, strides, padding, dilations), atol=1e-12)


@pytest.mark.parametrize("xs,ws,strides,padding,dilations", CONV_CASES, ids=CONV_IDS)
def test_conv2d_backprops_match_finite_differences(xs, ws, strides, padding, dilations,
                                                    execution):
    attrs = conv_attrs(strides, padding, dilations)
    x, w = randn(*xs), randn(*ws)
    y = run_op("Conv2D", [x, w], **attrs)
    upstream = randn(*y.shape)
    sizes = np.array(xs, np.int32)
    dx = run_op("Conv2DBackpropInput", [sizes, w, upstream], **attrs)
    fd_x = numeric_grad(lambda v: run_op("Conv2D", [v, w], **attrs), x, upstream)
    np.testing.assert_allclose(dx, fd_x, atol=1e-7)
    fsizes = np.array(ws, np.int32)
    dw = run_op("Conv2DBackpropFilter", [x, fsizes, upstream], **attrs)
    fd_w = numeric_grad(lambda v: run_op("Conv2D", [x, v], **attrs), w, upstream)
    np.testing.assert_allclose(dw, fd_w, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_conv2d_keeps_dtype(dtype):
    attrs = conv_attrs((1, 1), "SAME")
    x, w = randn(2, 6, 6, 3, dtype=dtype), randn(3, 3, 3, 4, dtype=dtype)
    y = run_op("Conv2D", [x, w], **attrs)
    assert y.dtype == dtype
    tol = 1e-4 if dtype == np.float32 else 2e-2
    ref = conv_ref(x.astype(np.float64), w.astype(np.float64), (1, 1), "SAME")
    np.testing.assert_allclose(y, ref, rtol=tol, atol=tol * 10)
    dx = run_op("Conv2DBackpropInput", [np.array(x.shape, np.int32), w, y], **attrs)
    dw = run_op("Conv2DBackpropFilter", [x, np.array(w.shape, np.int32), y], **attrs)
    assert dx.dtype == dtype and dx.shape == x.shape
    assert dw.dtype == dtype and dw.shape == w.shape


def test_conv2d_rejects_nchw_and_bad_padding():
    x, w = randn(1, 4, 4, 1), randn(2, 2, 1, 1)
    attrs = conv_attrs((1, 1), "SAME")
    for bad in (dict(data_format="NCHW"), dict(padding="FULL"), dict(strides=[2, 1, 1, 1])):
        op = FakeOp("Conv2D", [x, w], dict(attrs, **bad), "my_conv")
        with pytest.raises(ValueError, match="my_conv"):
            KERNELS.get("Conv2D")(op, None)


def test_conv2d_dilations_default_to_one():
    x, w = randn(1, 5, 5, 2), randn(3, 3, 2, 2)
    y = run_op("Conv2D", [x, w], strides=[1, 1, 1, 1], padding="VALID")
    np.testing.assert_allclose(y, conv_ref(x, w, (1, 1), "VALID"), atol=1e-12)


# ---------------------------------------------------------------------------------------
# Pooling

POOL_CASES = [
    # ksize, strides, padding
    ((2, 2), (2, 2), "SAME"),
    ((2, 2), (2, 2), "VALID"),
    ((3, 3), (2, 2), "SAME"),
    ((3, 3), (2, 2), "VALID"),
    ((3, 2), (1, 2), "SAME"),
    ((2, 3), (3, 1), "VALID"),
    ((1, 1), (1, 1), "SAME"),
    # Windows apart: the pixels between them get no gradient.
    ((2, 2), (3, 3), "VALID"),
    ((2, 1), (3, 2), "SAME"),
]
POOL_IDS = [f"k{k}-s{s}-{p}" for k, s, p in POOL_CASES]
POOL_SHAPES = [(2, 7, 7, 3), (2, 6, 5, 2), (1, 6, 6, 9)]


@pytest.mark.parametrize("shape", POOL_SHAPES)
@pytest.mark.parametrize("ksize,strides,padding", POOL_CASES, ids=POOL_IDS)
def test_max_pool_matches_reference(shape, ksize, strides, padding, execution):
    x = randn(*shape)
    y = run_op("MaxPool", [x], **pool_attrs(ksize, strides, padding))
    np.testing.assert_array_equal(y, pool_ref(x, ksize, strides, padding, lambda v: v.max(0)))


@pytest.mark.parametrize("shape", POOL_SHAPES)
@pytest.mark.parametrize("ksize,strides,padding", POOL_CASES, ids=POOL_IDS)
def test_avg_pool_matches_reference(shape, ksize, strides, padding, execution):
    x = randn(*shape)
    y = run_op("AvgPool", [x], **pool_attrs(ksize, strides, padding))
    np.testing.assert_allclose(y, pool_ref(x, ksize, strides, padding, lambda v: v.mean(0)),
                               atol=1e-12)


@pytest.mark.parametrize("shape", POOL_SHAPES)
@pytest.mark.parametrize("ksize,strides,padding", POOL_CASES, ids=POOL_IDS)
def test_pool_grads_match_finite_differences(shape, ksize, strides, padding, execution):
    attrs = pool_attrs(ksize, strides, padding)
    x = randn(*shape)
    y = run_op("MaxPool", [x], **attrs)
    upstream = randn(*y.shape)
    dx = run_op("MaxPoolGrad", [x, y, upstream], **attrs)
    fd = numeric_grad(lambda v: run_op("MaxPool", [v], **attrs), x, upstream)
    np.testing.assert_allclose(dx, fd, atol=1e-7)
    dx = run_op("AvgPoolGrad", [np.array(shape, np.int32), upstream], **attrs)
    fd = numeric_grad(lambda v: run_op("AvgPool", [v], **attrs), x, upstream)
    np.testing.assert_allclose(dx, fd, atol=1e-7)


@pytest.mark.parametrize("ksize,strides,padding", POOL_CASES, ids=POOL_IDS)
def test_max_pool_grad_goes_to_first_maximum_on_ties(ksize, strides, padding, execution):
    attrs = pool_attrs(ksize, strides, padding)
    x = rng.integers(0, 3, size=(2, 7, 6, 2)).astype(np.float32)  # many ties
    y = run_op("MaxPool", [x], **attrs)
    upstream = randn(*y.shape, dtype=np.float32)
    dx = run_op("MaxPoolGrad", [x, y, upstream], **attrs)
    assert dx.dtype == np.float32
    np.testing.assert_allclose(dx, max_pool_grad_ref(x, upstream, ksize, strides, padding),
                               rtol=1e-6, atol=1e-6)


def test_max_pool_ignores_padding_for_negative_inputs():
    x = -1 - np.abs(randn(1, 3, 3, 2))
    y = run_op("MaxPool", [x], **pool_attrs((2, 2), (2, 2), "SAME"))
    assert (y < 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_pools_keep_dtype(dtype):
    attrs = pool_attrs((2, 2), (2, 2), "SAME")
    x = randn(2, 5, 5, 3, dtype=dtype)
    for op_type in ("MaxPool", "AvgPool"):
        y = run_op(op_type, [x], **attrs)
        assert y.dtype == dtype and y.shape == (2, 3, 3, 3)
    assert run_op("MaxPoolGrad", [x, y, y], **attrs).dtype == dtype
    assert run_op("AvgPoolGrad", [np.array(x.shape, np.int32), y], **attrs).dtype == dtype


def test_pool_rejects_nchw():
    x = randn(1, 4, 4, 1)
    attrs = dict(pool_attrs((2, 2), (2, 2), "SAME"), data_format="NCHW")
    with pytest.raises(ValueError, match="pool_op"):
        KERNELS.get("MaxPool")(FakeOp("MaxPool", [x], attrs, "pool_op"), None)


# ---------------------------------------------------------------------------------------
# Bias and activations


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_add_and_grad(dtype, execution):
    x, bias = randn(2, 3, 4, 5, dtype=dtype), randn(5, dtype=dtype)
    y = run_op("BiasAdd", [x, bias], data_format="NHWC")
    assert y.dtype == dtype
    np.testing.assert_allclose(y, x + bias)
    upstream = randn(*y.shape, dtype=dtype)
    db = run_op("BiasAddGrad", [upstream], data_format="NHWC")
    assert db.dtype == dtype and db.shape == (5,)
    if dtype == np.float64:
        fd = numeric_grad(lambda v: run_op("BiasAdd", [x, v]), bias, upstream)
        np.testing.assert_allclose(db, fd, atol=1e-7)
    np.testing.assert_allclose(db, upstream.sum(axis=(0, 1, 2)), rtol=1e-5)


def _away_from(x, points, margin=1e-3):
    """x moved off the kinks of a piecewise function, so finite differences are exact."""
    for p in points:
        near = np.abs(x - p) < margin
        x[near] += 2 * margin
    return x


ACTIVATIONS = [
    # op, grad op, reference, kinks, whether the grad op takes the outputs
    ("Relu", "ReluGrad", lambda x: np.maximum(x, 0), [0.0], False),
    ("Relu6", "Relu6Grad", lambda x: np.minimum(np.maximum(x, 0), 6), [0.0, 6.0], False),
    ("Elu", "EluGrad", lambda x: np.where(x > 0, x, np.exp(x) - 1), [0.0], True),
    ("Softplus", "SoftplusGrad", lambda x: np.log1p(np.exp(x)), [], False),
]


@pytest.mark.parametrize("op_type,grad_type,ref,kinks,takes_outputs", ACTIVATIONS,
                         ids=[a[0] for a in ACTIVATIONS])
def test_activation_and_grad(op_type, grad_type, ref, kinks, takes_outputs, execution):
    x = _away_from(4 * randn(3, 4, 5), kinks)
    y = run_op(op_type, [x])
    np.testing.assert_allclose(y, ref(x), rtol=1e-12, atol=1e-12)
    upstream = randn(*x.shape)
    dx = run_op(grad_type, [upstream, y if takes_outputs else x])
    fd = numeric_grad(lambda v: run_op(op_type, [v]), x, upstream)
    np.testing.assert_allclose(dx, fd, atol=1e-6)
    x32, up32 = x.astype(np.float32), upstream.astype(np.float32)
    y32 = run_op(op_type, [x32])
    assert y32.dtype == np.float32
    assert run_op(grad_type, [up32, y32 if takes_outputs else x32]).dtype == np.float32


def test_activation_grads_at_kinks_follow_tf():
    g = np.ones(4)
    np.testing.assert_array_equal(run_op("ReluGrad", [g, np.array([-1.0, 0.0, 1e-9, 7.0])]),
                                  [0, 0, 1, 1])
    np.testing.assert_array_equal(run_op("Relu6Grad", [g, np.array([0.0, 3.0, 6.0, 7.0])]),
                                  [0, 1, 0, 0])
    np.testing.assert_array_equal(run_op("EluGrad", [g, np.array([-0.5, 0.0, 1.0, -1.0])]),
                                  [0.5, 1, 1, 0])


def test_softplus_is_stable_for_large_inputs():
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], np.float32)
    y = run_op("Softplus", [x])
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y, [0, np.exp(-50), np.log(2), 50, 1000], rtol=1e-6)
    g = run_op("SoftplusGrad", [np.ones_like(x), x])
    np.testing.assert_allclose(g, [0, 0, 0.5, 1, 1], atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_l2_loss(dtype):
    t = randn(3, 4, dtype=dtype)
    loss = run_op("L2Loss", [t])
    assert loss.dtype == dtype and loss.shape == ()
    np.testing.assert_allclose(loss, np.sum(t.astype(np.float64) ** 2) / 2, rtol=1e-3)


# ---------------------------------------------------------------------------------------
# Softmax and losses


def softmax_ref(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_and_log_softmax(dtype):
    x = randn(4, 7, dtype=dtype) + np.array(1000, dtype)  # would overflow unshifted
    s = run_op("Softmax", [x])
    ls = run_op("LogSoftmax", [x])
    assert s.dtype == dtype and ls.dtype == dtype
    ref = softmax_ref(x.astype(np.float64) - 1000)
    np.testing.assert_allclose(s, ref, rtol=1e-5)
    np.testing.assert_allclose(ls, np.log(ref), rtol=1e-5, atol=1e-5)
    x3 = randn(2, 3, 5)
    np.testing.assert_allclose(run_op("Softmax", [x3]), softmax_ref(x3), rtol=1e-12)


def test_softmax_cross_entropy_with_logits():
    features = 3 * randn(5, 6)
    labels = softmax_ref(randn(5, 6))
    loss, backprop = run_op("SoftmaxCrossEntropyWithLogits", [features, labels])
    ref = -np.sum(labels * np.log(softmax_ref(features)), axis=-1)
    np.testing.assert_allclose(loss, ref, rtol=1e-12)
    upstream = randn(5)
    fd = numeric_grad(
        lambda v: run_op("SoftmaxCrossEntropyWithLogits", [v, labels])[0], features, upstream)
    np.testing.assert_allclose(upstream[:, None] * backprop, fd, atol=1e-7)
    loss32, bp32 = run_op("SoftmaxCrossEntropyWithLogits",
                          [features.astype(np.float32), labels.astype(np.float32)])
    assert loss32.dtype == np.float32 and bp32.dtype == np.float32


@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_sparse_softmax_cross_entropy_with_logits(label_dtype):
    features = 3 * randn(5, 6) + 500
    labels = np.array([0, 5, 2, 2, 3], label_dtype)
    loss, backprop = run_op("SparseSoftmaxCrossEntropyWithLogits", [features, labels])
    dense = np.eye(6)[labels]
    ref_loss, ref_bp = run_op("SoftmaxCrossEntropyWithLogits", [features, dense])
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-12)
    np.testing.assert_allclose(backprop, ref_bp, atol=1e-12)
    np.testing.assert_allclose(loss, -np.log(softmax_ref(features)[range(5), labels]),
                               rtol=1e-9)
    loss32, bp32 = run_op("SparseSoftmaxCrossEntropyWithLogits",
                          [features.astype(np.float32), labels])
    assert loss32.dtype == np.float32 and bp32.dtype == np.float32


@pytest.mark.parametrize("bad", [10, -1])
def test_sparse_softmax_cross_entropy_rejects_out_of_range_labels(bad):
    features = randn(3, 10)
    labels = np.array([1, bad, 2], np.int32)
    with pytest.raises(InvalidArgumentError) as info:
        run_op("SparseSoftmaxCrossEntropyWithLogits", [features, labels], name="xent")
    message = str(info.value)
    assert "xent" in message
    assert (f"Received a label value of {bad} which is outside the valid range of [0, 10)"
            in message)


def test_all_ops_registered():
    for op_type in ["Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool",
                    "MaxPoolGrad", "AvgPool", "AvgPoolGrad", "BiasAdd", "BiasAddGrad", "Softmax",
                    "LogSoftmax", "SoftmaxCrossEntropyWithLogits",
                    "SparseSoftmaxCrossEntropyWithLogits", "Relu", "ReluGrad", "Relu6",
                    "Relu6Grad", "Elu", "EluGrad", "Softplus", "SoftplusGrad", "L2Loss"]:
        assert op_type in KERNELS, op_type
