"""CPU kernels for the neural-network ops: convolution, pooling, activations and losses.

Convolutions are im2col + GEMM: a Numba gather builds the patch matrix (one row per
output pixel, its columns ordered like the HWIO filter flattened) and ``np.matmul`` on
2-D arrays hands the product to the BLAS.  The batch is cut into chunks so that the patch
matrix stays a few MiB, big enough for the GEMM to run at full speed, small enough to stay
in cache; its buffer is kept from call to call.

Big jobs are split over the cores by batch (or by element) on a small thread pool, the
calling thread included, when numpy's BLAS runs on one thread (see _Workers); the
convolutions hand their chunks out one at a time (``_Workers.share``), so that a core busy
with another process takes fewer of them.

float16 inputs are computed in float32 and cast back; float32 and float64 compute in
their own precision.  Every layout is NHWC.
"""
from __future__ import annotations

import math
import threading
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from numba import njit

from . import KERNELS
from .math_kernels import matmul_2d

__all__ = [
    "conv2d_forward", "conv2d_backprop_input", "conv2d_backprop_filter",
    "max_pool", "max_pool_grad", "avg_pool", "avg_pool_grad",
    "bias_add", "bias_add_grad", "softmax", "log_softmax",
    "softmax_cross_entropy", "sparse_softmax_cross_entropy", "l2_loss",
]

# Target sizes of one chunk's patch matrix (see the module docstring), measured best in a
# LeNet-5 training step: small enough to stay in the L2 cache between the gather and the
# GEMM that reads it; Conv2DBackpropInput's GEMM (inner dimension only out_channels) wants
# bigger ones.
_CHUNK_BYTES = 1 << 20
_CHUNK_BYTES_BACKPROP_INPUT = 4 << 20

from ._threads import PARALLEL_MIN_BYTES as _PARALLEL_MIN_BYTES  # noqa: E402
from ._threads import PARALLEL_MIN_FLOPS as _PARALLEL_MIN_FLOPS  # noqa: E402
from ._threads import WORKERS as _WORKERS  # noqa: E402
from ._threads import _cpu_count  # noqa: E402


# ---------------------------------------------------------------------------------------
# Threads and work buffers




class _Scratch:
    """Work buffers kept from call to call, so that a training step does not allocate
    (and page-fault) its patch matrices afresh.  A buffer taken is the taker's alone
    until given back; at most ``keep`` buffers of at most ``max_bytes`` each are kept."""

    def __init__(self, keep: int, max_bytes: int) -> None:
        self._keep = keep
        self._max_bytes = max_bytes
        self._free: List[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self, shape: Tuple[int, ...], dtype) -> np.ndarray:
        size, dtype = math.prod(shape), np.dtype(dtype)
        buf = None
        with self._lock:
            fits = [i for i, b in enumerate(self._free) if b.dtype == dtype and b.size >= size]
            if fits:
                buf = self._free.pop(min(fits, key=lambda i: self._free[i].size))
        if buf is None:
            buf = np.empty(size, dtype)
        return buf[:size].reshape(shape)

    def give(self, *arrays: Optional[np.ndarray]) -> None:
        with self._lock:
            self._free.extend(a.base for a in arrays
                              if a is not None and a.base.nbytes <= self._max_bytes)
            while len(self._free) > self._keep:
                self._free.pop(min(range(len(self._free)), key=lambda i: self._free[i].size))


_SCRATCH = _Scratch(keep=4 * _cpu_count(), max_bytes=64 << 20)


# ---------------------------------------------------------------------------------------
# Attributes and geometry


def _attr(op, name: str, default):
    try:
        return op.get_attr(name)
    except ValueError:
        return default


def _str_attr(op, name: str, default: str) -> str:
    value = _attr(op, name, default)
    return value.decode() if isinstance(value, bytes) else value


def _check_nhwc(op) -> None:
    data_format = _str_attr(op, "data_format", "NHWC")
    if data_format != "NHWC":
        raise ValueError(f"{op.type} op '{op.name}': data_format {data_format!r} is not "
                         f"supported on CPU, only 'NHWC'.")


def _is_same(op) -> bool:
    padding = _str_attr(op, "padding", "")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"{op.type} op '{op.name}': padding {padding!r} is not supported, "
                         f"only 'SAME' or 'VALID'.")
    return padding == "SAME"


def _spatial(op, name: str, default=None) -> Tuple[int, int]:
    """The (height, width) entries of a 4-D NHWC attr (strides, ksize, dilations)."""
    value = _attr(op, name, default)
    if value is None or len(value) != 4 or value[0] != 1 or value[3] != 1:
        raise ValueError(f"{op.type} op '{op.name}': {name} must be 4 values "
                         f"[1, height, width, 1], got {value!r}.")
    return int(value[1]), int(value[2])


def _window_geometry(size: int, k: int, stride: int, dilation: int, same: bool) -> Tuple[int, int]:
    """(output size, padding before) of a sliding window along one axis, as TF computes them."""
    span = (k - 1) * dilation + 1
    if same:
        out = -(-size // stride)
        return out, max((out - 1) * stride + span - size, 0) // 2
    if size < span:
        raise ValueError(f"a window of {span} does not fit in an input of size {size} "
                         f"with VALID padding: the output size would be negative.")
    return -(-(size - span + 1) // stride), 0


class _ConvGeometry:
    """Output size, padding and padded-frame size of a 2-D convolution or pool."""

    __slots__ = ("oh", "ow", "pt", "pl", "hf", "wf", "direct")

    def __init__(self, h: int, w: int, kh: int, kw: int, sh: int, sw: int,
                 dh: int, dw: int, same: bool):
        self.oh, self.pt = _window_geometry(h, kh, sh, dh, same)
        self.ow, self.pl = _window_geometry(w, kw, sw, dw, same)
        # The frame holds the image at (pt, pl) inside zeros and covers every window.
        self.hf = max(self.pt + h, (self.oh - 1) * sh + (kh - 1) * dh + 1)
        self.wf = max(self.pl + w, (self.ow - 1) * sw + (kw - 1) * dw + 1)
        # No padding: the windows can read the image itself.
        self.direct = self.hf == h and self.wf == w


def _images_per_chunk(n: int, bytes_per_image: int, target: int) -> int:
    return max(1, min(n, target // max(bytes_per_image, 1)))


def _half_as_float32(op, fn: Callable, index: int = 0) -> Callable:
    """Wraps ``fn`` to compute float16 inputs in float32, when the op's input ``index`` is
    float16 (the op's float inputs and outputs then all are)."""
    if op.inputs[index].dtype.as_numpy_dtype != np.float16:
        return fn

    def run(*args):
        result = fn(*(a.astype(np.float32) if a.dtype == np.float16 else a for a in args))
        if isinstance(result, tuple):
            return tuple(r.astype(np.float16) for r in result)
        return result.astype(np.float16)
    return run


# ---------------------------------------------------------------------------------------
# Numba kernels


# In these two, each window row is reached through a slice (``seg``) indexed from 0: Numba
# then knows the index is not negative, drops its wraparound branch and LLVM vectorizes
# the loop (3x faster than indexing ``line[start + e]``).


@njit(cache=True, nogil=True)
def _im2col(src, kh, kw, sh, sw, dh, dw, oh, ow, cols):
    """Patch rows of the (padded) images ``src`` into the first rows of ``cols``."""
    n, hs, ws, c = src.shape
    rows = src.reshape(n, hs, ws * c)
    out = cols[:n * oh * ow].reshape(n, oh, ow, kh, kw * c)
    run = (kw - 1) * dw * c + c
    for b in range(n):
        for i in range(oh):
            for a in range(kh):
                line = rows[b, i * sh + a * dh]
                for j in range(ow):
                    dst = out[b, i, j, a]
                    seg = line[j * sw * c:j * sw * c + run]
                    if dw == 1:
                        # The kw pixels of a window row are contiguous: one run.
                        for e in range(run):
                            dst[e] = seg[e]
                    else:
                        for q in range(kw):
                            for ch in range(c):
                                dst[q * c + ch] = seg[q * dw * c + ch]


@njit(cache=True, nogil=True)
def _im2col_single_channel(src, kh, kw, sh, sw, dh, dw, oh, ow, cols_t):
    """_im2col for one input channel, transposed: cols_t[(a, q), (b, i, j)].  A window row
    of one channel is only kw values, too short a copy to pay for its loop; along an output
    row the runs are ow long (contiguous at stride 1): 2x faster at MNIST's 28 x 28 x 1."""
    n = src.shape[0]
    for a in range(kh):
        for q in range(kw):
            dst = cols_t[a * kw + q]
            for b in range(n):
                for i in range(oh):
                    line = src[b, i * sh + a * dh, :, 0]
                    base = (b * oh + i) * ow
                    start = q * dw
                    if sw == 1:
                        seg = line[start:start + ow]
                        for j in range(ow):
                            dst[base + j] = seg[j]
                    else:
                        for j in range(ow):
                            dst[base + j] = line[start + j * sw]


@njit(cache=True, nogil=True)
def _col2im(cols, kh, kw, sh, sw, dh, dw, oh, ow, dst):
    """Adds patch rows back into the zeroed (padded) images ``dst``: _im2col's adjoint."""
    n, hd, wd, c = dst.shape
    rows = dst.reshape(n, hd, wd * c)
    src = cols[:n * oh * ow].reshape(n, oh, ow, kh, kw * c)
    run = (kw - 1) * dw * c + c
    for b in range(n):
        for i in range(oh):
            for a in range(kh):
                line = rows[b, i * sh + a * dh]
                for j in range(ow):
                    patch = src[b, i, j, a]
                    seg = line[j * sw * c:j * sw * c + run]
                    if dw == 1:
                        for e in range(run):
                            seg[e] += patch[e]
                    else:
                        for q in range(kw):
                            for ch in range(c):
                                seg[q * dw * c + ch] += patch[q * c + ch]


# The max pools keep each window's running max (and its position) per channel with selects
# rather than branches, so that LLVM vectorizes the channel loops: at LeNet's shapes
# MaxPoolGrad ran 1.4-1.6x and MaxPool 1.2x faster than with ``if v > best: ...``.
# ``v > best`` keeps the first maximum, as TF does; a NaN wins only where it comes first in
# its window (no comparison with it is true).


@njit(cache=True, nogil=True)
def _max_pool_nb(x, kh, kw, sh, sw, pt, pl, out):
    n, h, w, c = x.shape
    _, oh, ow, _ = out.shape
    for b in range(n):
        for i in range(oh):
            y0 = i * sh - pt
            ya, yb = max(y0, 0), min(y0 + kh, h)
            out_row = out[b, i]
            for j in range(ow):
                x0 = j * sw - pl
                xa, xb = max(x0, 0), min(x0 + kw, w)
                o = out_row[j]
                first = x[b, ya, xa]
                for ch in range(c):
                    o[ch] = first[ch]
                for y in range(ya, yb):
                    line = x[b, y]
                    for xx in range(xa, xb):
                        v = line[xx]
                        for ch in range(c):
                            o[ch] = v[ch] if v[ch] > o[ch] else o[ch]


@njit(cache=True, nogil=True)
def _max_pool_grad_nb(x, grad, kh, kw, sh, sw, pt, pl, dx):
    """Puts each window's gradient on the window's first maximum, scanning rows then
    columns, like TF."""
    n, h, w, c = x.shape
    _, oh, ow, _ = grad.shape
    best = np.empty(c, x.dtype)
    arg = np.empty(c, np.int64)
    # Windows that do not overlap write their pixels' gradients outright (zero or the
    # window's); only pixels no window covers, or overlapping windows, need dx zeroed.
    disjoint = sh >= kh and sw >= kw
    covers_all = (sh == kh and sw == kw and pt == 0 and pl == 0
                  and oh * sh == h and ow * sw == w)
    for b in range(n):
        xb = x[b].reshape(h * w, c)
        dxb = dx[b].reshape(h * w, c)
        if not covers_all:
            dxb[:] = 0
        for i in range(oh):
            y0 = i * sh - pt
            ya, yb = max(y0, 0), min(y0 + kh, h)
            for j in range(ow):
                x0 = j * sw - pl
                xa, xe = max(x0, 0), min(x0 + kw, w)
                p0 = ya * w + xa
                first = xb[p0]
                for ch in range(c):
                    best[ch] = first[ch]
                    arg[ch] = p0
                for y in range(ya, yb):
                    for xx in range(xa, xe):
                        pos = y * w + xx
                        v = xb[pos]
                        for ch in range(c):
                            above = v[ch] > best[ch]
                            best[ch] = v[ch] if above else best[ch]
                            arg[ch] = pos if above else arg[ch]
                g = grad[b, i, j]
                if disjoint:
                    for y in range(ya, yb):
                        for xx in range(xa, xe):
                            pos = y * w + xx
                            d = dxb[pos]
                            for ch in range(c):
                                d[ch] = g[ch] if arg[ch] == pos else 0
                else:
                    for ch in range(c):
                        dxb[arg[ch], ch] += g[ch]


@njit(cache=True, nogil=True)
def _avg_pool_nb(x, kh, kw, sh, sw, pt, pl, out):
    n, h, w, c = x.shape
    _, oh, ow, _ = out.shape
    for b in range(n):
        for i in range(oh):
            y0 = i * sh - pt
            ya, yb = max(y0, 0), min(y0 + kh, h)
            for j in range(ow):
                x0 = j * sw - pl
                xa, xb = max(x0, 0), min(x0 + kw, w)
                o = out[b, i, j]
                o[:] = 0
                for y in range(ya, yb):
                    for xx in range(xa, xb):
                        v = x[b, y, xx]
                        for ch in range(c):
                            o[ch] += v[ch]
                # SAME padding averages over the pixels inside the image only.
                scale = 1.0 / ((yb - ya) * (xb - xa))
                for ch in range(c):
                    o[ch] *= scale


@njit(cache=True, nogil=True)
def _avg_pool_grad_nb(grad, kh, kw, sh, sw, pt, pl, dx):
    n, h, w, c = dx.shape
    _, oh, ow, _ = grad.shape
    for b in range(n):
        dx[b] = 0
        for i in range(oh):
            y0 = i * sh - pt
            ya, yb = max(y0, 0), min(y0 + kh, h)
            for j in range(ow):
                x0 = j * sw - pl
                xa, xb = max(x0, 0), min(x0 + kw, w)
                scale = 1.0 / ((yb - ya) * (xb - xa))
                g = grad[b, i, j]
                for y in range(ya, yb):
                    for xx in range(xa, xb):
                        d = dx[b, y, xx]
                        for ch in range(c):
                            d[ch] += g[ch] * scale


@njit(cache=True, nogil=True)
def _bias_add_nb(value, bias, out):
    for i in range(value.shape[0]):
        for j in range(value.shape[1]):
            out[i, j] = value[i, j] + bias[j]


@njit(cache=True, nogil=True)
def _column_sums_nb(a):
    sums = np.zeros(a.shape[1], np.float64)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            sums[j] += a[i, j]
    return sums


@njit(cache=True, nogil=True)
def _relu_grad_nb(grad, features, out):
    for k in range(out.size):
        out[k] = grad[k] if features[k] > 0 else 0.0


@njit(cache=True, nogil=True)
def _relu6_grad_nb(grad, features, out):
    for k in range(out.size):
        f = features[k]
        out[k] = grad[k] if 0 < f < 6 else 0.0


@njit(cache=True, nogil=True)
def _elu_grad_nb(grad, outputs, out):
    for k in range(out.size):
        y = outputs[k]
        out[k] = grad[k] * (y + 1) if y < 0 else grad[k]


def _flat(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1)


def _elementwise(kernel: Callable, *inputs: np.ndarray) -> np.ndarray:
    """Runs kernel(*input parts, out part) over an output shaped like the first input."""
    out = np.empty(inputs[0].shape, inputs[0].dtype)
    out_flat = out.reshape(-1)
    flats = [_flat(a) for a in inputs]

    def work(lo: int, hi: int) -> None:
        kernel(*(f[lo:hi] for f in flats), out_flat[lo:hi])
    _WORKERS.map(work, out.size, big=out.nbytes >= _PARALLEL_MIN_BYTES)
    return out


def _over_batch(kernel: Callable, inputs: Sequence[np.ndarray], out: np.ndarray,
                *args) -> np.ndarray:
    """Runs kernel(*input parts, *args, out part) over parts of the batch."""
    def work(lo: int, hi: int) -> None:
        kernel(*(a[lo:hi] for a in inputs), *args, out[lo:hi])
    nbytes = out.nbytes + sum(a.nbytes for a in inputs)
    _WORKERS.map(work, out.shape[0], big=nbytes >= _PARALLEL_MIN_BYTES)
    return out


def _relu_into(x: np.ndarray, out: np.ndarray) -> None:
    np.maximum(x, 0, out=out)


# ---------------------------------------------------------------------------------------
# Convolution


def _check_depth(op_type: str, depth: int, filter_depth: int) -> None:
    if depth != filter_depth:
        raise ValueError(f"{op_type}: the input has depth {depth} but the filter "
                         f"{filter_depth}.")


def _patch_chunks(x: np.ndarray, ranges: Iterable[Tuple[int, int]], step: int, kh: int,
                  kw: int, strides, dilations,
                  geo: _ConvGeometry) -> Iterator[Tuple[int, int, np.ndarray]]:
    """Yields (b0, b1, patch rows of images b0:b1) for chunks of at most ``step`` images
    of each (lo, hi) image range of x."""
    c = x.shape[3]
    k = kh * kw * c
    rows = geo.oh * geo.ow
    # One channel: the patches are built transposed (k x rows) and handed out as the
    # transpose's view, which the BLAS reads with its transpose flag.
    single = c == 1
    cols = _SCRATCH.take((k, step * rows) if single else (step * rows, k), x.dtype)
    frame = None
    if not geo.direct:
        frame = _SCRATCH.take((step, geo.hf, geo.wf, c), x.dtype)
        frame.fill(0)
        inside = (slice(None), slice(geo.pt, geo.pt + x.shape[1]),
                  slice(geo.pl, geo.pl + x.shape[2]))
    try:
        for lo, hi in ranges:
            for b0 in range(lo, hi, step):
                b1 = min(hi, b0 + step)
                if frame is None:
                    src = x[b0:b1]
                else:
                    src = frame[:b1 - b0]
                    src[inside] = x[b0:b1]
                if single:
                    _im2col_single_channel(src, kh, kw, strides[0], strides[1], dilations[0],
                                           dilations[1], geo.oh, geo.ow, cols)
                    yield b0, b1, cols[:, :(b1 - b0) * rows].T
                else:
                    _im2col(src, kh, kw, strides[0], strides[1], dilations[0], dilations[1],
                            geo.oh, geo.ow, cols)
                    yield b0, b1, cols[:(b1 - b0) * rows]
    finally:
        _SCRATCH.give(cols, frame)


def conv2d_forward(x: np.ndarray, w: np.ndarray, strides: Tuple[int, int], same: bool,
                   dilations: Tuple[int, int] = (1, 1),
                   epilogue: Optional[Callable[[np.ndarray, slice], None]] = None) -> np.ndarray:
    """NHWC input * HWIO filter -> NHWC output: TF's Conv2D.  ``epilogue(rows, columns)``
    runs on each part of the output (output pixels x out channels) while it is in cache."""
    x = np.ascontiguousarray(x)
    w = np.ascontiguousarray(w, dtype=x.dtype)
    n, h, wd, c = x.shape
    kh, kw, ci, co = w.shape
    _check_depth("Conv2D", c, ci)
    geo = _ConvGeometry(h, wd, kh, kw, *strides, *dilations, same)
    rows, k = geo.oh * geo.ow, kh * kw * c
    y = np.empty((n, geo.oh, geo.ow, co), x.dtype)
    w2, y2 = w.reshape(k, co), y.reshape(n * rows, co)
    if kh == kw == strides[0] == strides[1] == 1:
        np.matmul(x.reshape(-1, c), w2, out=y2)
        if epilogue is not None:
            epilogue(y2, slice(None))
        return y
    step = _images_per_chunk(n, rows * k * x.itemsize, _CHUNK_BYTES)

    def work(ranges) -> None:
        for b0, b1, cols in _patch_chunks(x, ranges, step, kh, kw, strides, dilations, geo):
            np.matmul(cols, w2, out=y2[b0 * rows:b1 * rows])
            if epilogue is not None:
                epilogue(y2[b0 * rows:b1 * rows], slice(None))
    _WORKERS.share(work, n, step, big=2 * y.size * k >= _PARALLEL_MIN_FLOPS)
    return y


def conv2d_backprop_input(input_shape: Sequence[int], w: np.ndarray, dy: np.ndarray,
                          strides: Tuple[int, int], same: bool,
                          dilations: Tuple[int, int] = (1, 1)) -> np.ndarray:
    """Gradient of conv2d_forward with respect to its input: TF's Conv2DBackpropInput."""
    dy = np.ascontiguousarray(dy)
    w = np.ascontiguousarray(w, dtype=dy.dtype)
    n, h, wd, c = (int(d) for d in input_shape)
    kh, kw, ci, co = w.shape
    _check_depth("Conv2DBackpropInput", c, ci)
    geo = _ConvGeometry(h, wd, kh, kw, *strides, *dilations, same)
    rows, k = geo.oh * geo.ow, kh * kw * c
    w2t, dy2 = w.reshape(k, co).T, dy.reshape(n * rows, co)
    if kh == kw == strides[0] == strides[1] == 1:
        return np.matmul(dy2, w2t).reshape(n, h, wd, c)
    dx = np.empty((n, h, wd, c), dy.dtype)
    args = (kh, kw, strides[0], strides[1], dilations[0], dilations[1], geo.oh, geo.ow)
    step = _images_per_chunk(n, rows * k * dy.itemsize, _CHUNK_BYTES_BACKPROP_INPUT)

    def work(ranges) -> None:
        cols = _SCRATCH.take((step * rows, k), dy.dtype)
        frame = None if geo.direct else _SCRATCH.take((step, geo.hf, geo.wf, c), dy.dtype)
        try:
            for b0, b1 in ranges:
                np.matmul(dy2[b0 * rows:b1 * rows], w2t, out=cols[:(b1 - b0) * rows])
                dst = dx[b0:b1] if frame is None else frame[:b1 - b0]
                dst.fill(0)
                _col2im(cols, *args, dst)
                if frame is not None:
                    dx[b0:b1] = dst[:, geo.pt:geo.pt + h, geo.pl:geo.pl + wd]
        finally:
            _SCRATCH.give(cols, frame)
    _WORKERS.share(work, n, step, big=2 * dy.size * k >= _PARALLEL_MIN_FLOPS)
    return dx


# Conv2DBackpropFilter sums one partial filter gradient per group of images, the groups
# fixed by the batch size alone and added up in order: the cores share the groups out as
# they go, yet the result is the same bits on every run and any number of cores.
_FILTER_GRAD_GROUPS = 8


def conv2d_backprop_filter(x: np.ndarray, filter_shape: Sequence[int], dy: np.ndarray,
                           strides: Tuple[int, int], same: bool,
                           dilations: Tuple[int, int] = (1, 1)) -> np.ndarray:
    """Gradient of conv2d_forward with respect to its filter: TF's Conv2DBackpropFilter."""
    x = np.ascontiguousarray(x)
    dy = np.ascontiguousarray(dy, dtype=x.dtype)
    n, h, wd, c = x.shape
    kh, kw, ci, co = (int(d) for d in filter_shape)
    _check_depth("Conv2DBackpropFilter", c, ci)
    geo = _ConvGeometry(h, wd, kh, kw, *strides, *dilations, same)
    rows, k = geo.oh * geo.ow, kh * kw * c
    dy2 = dy.reshape(n * rows, co)
    if kh == kw == strides[0] == strides[1] == 1:
        return np.matmul(x.reshape(-1, c).T, dy2).reshape(kh, kw, c, co)
    step = _images_per_chunk(n, rows * k * x.itemsize, _CHUNK_BYTES)
    group = max(step, -(-n // _FILTER_GRAD_GROUPS))
    sums = [None] * -(-n // group)

    def work(groups) -> None:
        part = np.empty((k, co), x.dtype)
        for lo, hi in groups:
            total = None
            for b0, b1, cols in _patch_chunks(x, [(lo, hi)], step, kh, kw, strides,
                                              dilations, geo):
                if total is None:
                    total = np.matmul(cols.T, dy2[b0 * rows:b1 * rows])
                else:
                    np.matmul(cols.T, dy2[b0 * rows:b1 * rows], out=part)
                    total += part
            sums[lo // group] = total
    _WORKERS.share(work, n, group, big=2 * dy.size * k >= _PARALLEL_MIN_FLOPS)
    dw2 = sums[0]
    for total in sums[1:]:
        dw2 += total
    return dw2.reshape(kh, kw, c, co)


def _conv_params(op) -> Tuple[Tuple[int, int], bool, Tuple[int, int]]:
    _check_nhwc(op)
    return _spatial(op, "strides"), _is_same(op), _spatial(op, "dilations", [1, 1, 1, 1])


@KERNELS.register("Conv2D")
def conv2d_kernel(op, ctx):
    strides, same, dilations = _conv_params(op)

    def run(x, w):
        return conv2d_forward(x, w, strides, same, dilations)
    return _half_as_float32(op, run)


@KERNELS.register("Conv2DBackpropInput")
def conv2d_backprop_input_kernel(op, ctx):
    strides, same, dilations = _conv_params(op)

    def run(input_sizes, w, dy):
        return conv2d_backprop_input(input_sizes, w, dy, strides, same, dilations)
    return _half_as_float32(op, run, index=1)


@KERNELS.register("Conv2DBackpropFilter")
def conv2d_backprop_filter_kernel(op, ctx):
    strides, same, dilations = _conv_params(op)

    def run(x, filter_sizes, dy):
        return conv2d_backprop_filter(x, filter_sizes, dy, strides, same, dilations)
    return _half_as_float32(op, run)


# ---------------------------------------------------------------------------------------
# Pooling


def _pool_geometry(shape: Sequence[int], ksize: Tuple[int, int], strides: Tuple[int, int],
                   same: bool) -> _ConvGeometry:
    return _ConvGeometry(shape[1], shape[2], *ksize, *strides, 1, 1, same)


def max_pool(x: np.ndarray, ksize: Tuple[int, int], strides: Tuple[int, int],
             same: bool) -> np.ndarray:
    """TF's MaxPool over the spatial axes of an NHWC array (padding never wins a max)."""
    x = np.ascontiguousarray(x)
    geo = _pool_geometry(x.shape, ksize, strides, same)
    out = np.empty((x.shape[0], geo.oh, geo.ow, x.shape[3]), x.dtype)
    return _over_batch(_max_pool_nb, (x,), out, *ksize, *strides, geo.pt, geo.pl)


def max_pool_grad(x: np.ndarray, grad: np.ndarray, ksize: Tuple[int, int],
                  strides: Tuple[int, int], same: bool) -> np.ndarray:
    """TF's MaxPoolGrad: each window's gradient goes to the first maximum of the window."""
    x = np.ascontiguousarray(x)
    grad = np.ascontiguousarray(grad, dtype=x.dtype)
    geo = _pool_geometry(x.shape, ksize, strides, same)
    dx = np.empty(x.shape, x.dtype)
    return _over_batch(_max_pool_grad_nb, (x, grad), dx, *ksize, *strides, geo.pt, geo.pl)


def avg_pool(x: np.ndarray, ksize: Tuple[int, int], strides: Tuple[int, int],
             same: bool) -> np.ndarray:
    """TF's AvgPool: SAME padding averages over the pixels inside the image only."""
    x = np.ascontiguousarray(x)
    geo = _pool_geometry(x.shape, ksize, strides, same)
    out = np.empty((x.shape[0], geo.oh, geo.ow, x.shape[3]), x.dtype)
    return _over_batch(_avg_pool_nb, (x,), out, *ksize, *strides, geo.pt, geo.pl)


def avg_pool_grad(input_shape: Sequence[int], grad: np.ndarray, ksize: Tuple[int, int],
                  strides: Tuple[int, int], same: bool) -> np.ndarray:
    """TF's AvgPoolGrad: the gradient of avg_pool with respect to its input."""
    grad = np.ascontiguousarray(grad)
    shape = tuple(int(d) for d in input_shape)
    geo = _pool_geometry(shape, ksize, strides, same)
    dx = np.empty(shape, grad.dtype)
    return _over_batch(_avg_pool_grad_nb, (grad,), dx, *ksize, *strides, geo.pt, geo.pl)


def _pool_params(op) -> Tuple[Tuple[int, int], Tuple[int, int], bool]:
    _check_nhwc(op)
    return _spatial(op, "ksize"), _spatial(op, "strides"), _is_same(op)


@KERNELS.register("MaxPool")
def max_pool_kernel(op, ctx):
    ksize, strides, same = _pool_params(op)

    def run(x):
        return max_pool(x, ksize, strides, same)
    return _half_as_float32(op, run)


@KERNELS.register("MaxPoolGrad")
def max_pool_grad_kernel(op, ctx):
    ksize, strides, same = _pool_params(op)

    def run(orig_input, orig_output, grad):
        return max_pool_grad(orig_input, grad, ksize, strides, same)
    return _half_as_float32(op, run)


@KERNELS.register("AvgPool")
def avg_pool_kernel(op, ctx):
    ksize, strides, same = _pool_params(op)

    def run(x):
        return avg_pool(x, ksize, strides, same)
    return _half_as_float32(op, run)


@KERNELS.register("AvgPoolGrad")
def avg_pool_grad_kernel(op, ctx):
    ksize, strides, same = _pool_params(op)

    def run(orig_input_shape, grad):
        return avg_pool_grad(orig_input_shape, grad, ksize, strides, same)
    return _half_as_float32(op, run, index=1)


# ---------------------------------------------------------------------------------------
# Bias


def bias_add(value: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """value + bias, the bias along the last axis."""
    value = np.ascontiguousarray(value)
    bias = np.ascontiguousarray(bias, dtype=value.dtype)
    out = np.empty(value.shape, value.dtype)
    c = value.shape[-1]
    _over_batch(_bias_add_nb, (value.reshape(-1, c),), out.reshape(-1, c), bias)
    return out


def bias_add_grad(grad: np.ndarray) -> np.ndarray:
    """Sum over every axis but the last (accumulated in float64)."""
    grad2 = np.ascontiguousarray(grad).reshape(-1, grad.shape[-1])

    def work(lo: int, hi: int) -> np.ndarray:
        return _column_sums_nb(grad2[lo:hi])
    parts = _WORKERS.map(work, grad2.shape[0], big=grad2.nbytes >= _PARALLEL_MIN_BYTES)
    return sum(parts[1:], parts[0]).astype(grad.dtype)


@KERNELS.register("BiasAdd")
def bias_add_kernel(op, ctx):
    _check_nhwc(op)
    return _half_as_float32(op, bias_add)


@KERNELS.register("BiasAddGrad")
def bias_add_grad_kernel(op, ctx):
    _check_nhwc(op)
    return _half_as_float32(op, bias_add_grad)


# ---------------------------------------------------------------------------------------
# Fused groups (tfjupyter/runtime/fusion.py): a product with its bias and activation applied
# to each part of the output while it is in cache, and ReluGrad with the BiasAddGrad that sums
# its output in one pass.

_ACTIVATION_CODES = {"Relu": 1, "Relu6": 2}


# Relu keeps NaN (as np.maximum does in the Relu kernel): ``v < 0`` is False for NaN.
@njit(cache=True, nogil=True)
def _bias_activation_nb(y, bias, activation):
    for i in range(y.shape[0]):
        row = y[i]
        if activation == 0:
            for j in range(row.shape[0]):
                row[j] += bias[j]
        elif activation == 1:
            for j in range(row.shape[0]):
                v = row[j] + bias[j]
                row[j] = 0 if v < 0 else v
        else:
            for j in range(row.shape[0]):
                v = row[j] + bias[j]
                row[j] = 0 if v < 0 else (6 if v > 6 else v)


@njit(cache=True, nogil=True)
def _relu_grad_column_sums_nb(grad, features, out):
    sums = np.zeros(out.shape[1], np.float64)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            v = grad[i, j] if features[i, j] > 0 else 0.0
            out[i, j] = v
            sums[j] += v
    return sums


def _epilogue(group, bias: Optional[np.ndarray], columns: int, dtype):
    """A _Fused* group's epilogue: adds the bias (none: zeros) and applies the activation, in
    place, on a part of an output of ``columns`` channels."""
    if bias is None:
        bias = np.zeros(columns, dtype)
    elif bias.shape != (columns,):
        raise ValueError(f"Must provide as many biases as the last dimension of the input "
                         f"tensor: {list(bias.shape)} vs. {columns}")
    bias = np.ascontiguousarray(bias, dtype)
    activation = _ACTIVATION_CODES.get(group.fused_ops[-1], 0)

    def epilogue(part: np.ndarray, cols: slice) -> None:
        _bias_activation_nb(part, bias[cols], activation)
    return epilogue


@KERNELS.register("_FusedConv2D")
def fused_conv2d_kernel(group, ctx):
    conv = group.ops[0]
    strides, same, dilations = _conv_params(conv)
    dtype = conv.outputs[0].dtype.as_numpy_dtype

    def run(x, w, bias=None):
        epilogue = _epilogue(group, bias, w.shape[-1], dtype)
        return conv2d_forward(x, w, strides, same, dilations, epilogue=epilogue)
    return run


@KERNELS.register("_FusedMatMul")
def fused_matmul_kernel(group, ctx):
    ta, tb = group.ops[0].get_attr("transpose_a"), group.ops[0].get_attr("transpose_b")
    dtype = group.ops[0].outputs[0].dtype.as_numpy_dtype

    def run(a, b, bias=None):
        a, b = a.T if ta else a, b.T if tb else b
        return matmul_2d(a, b, dtype, epilogue=_epilogue(group, bias, b.shape[1], dtype))
    return run


@KERNELS.register("_FusedReluGradBiasAddGrad")
def fused_relu_grad_bias_add_grad_kernel(group, ctx):
    def run(gradients, features):
        if gradients.shape != features.shape:
            raise ValueError(f"gradients and features must have the same shape: "
                             f"{list(gradients.shape)} vs. {list(features.shape)}")
        c = gradients.shape[-1] if gradients.ndim else 1
        g2 = np.ascontiguousarray(gradients).reshape(-1, c)
        f2 = np.ascontiguousarray(features).reshape(-1, c)
        out = np.empty(gradients.shape, gradients.dtype)
        out2 = out.reshape(-1, c)

        def work(lo: int, hi: int) -> np.ndarray:
            return _relu_grad_column_sums_nb(g2[lo:hi], f2[lo:hi], out2[lo:hi])
        parts = _WORKERS.map(work, g2.shape[0], big=out.nbytes >= _PARALLEL_MIN_BYTES)
        return out, sum(parts[1:], parts[0]).astype(gradients.dtype)
    return run


# ---------------------------------------------------------------------------------------
# Activations


@KERNELS.register("Relu")
def relu_kernel(op, ctx):
    def run(x):
        return _elementwise(_relu_into, x)
    return run


@KERNELS.register("ReluGrad")
def relu_grad_kernel(op, ctx):
    def run(gradients, features):
        return _elementwise(_relu_grad_nb, gradients, features)
    return _half_as_float32(op, run)


@KERNELS.register("Relu6")
def relu6_kernel(op, ctx):
    def run(x):
        return np.clip(x, 0, 6)
    return run


@KERNELS.register("Relu6Grad")
def relu6_grad_kernel(op, ctx):
    def run(gradients, features):
        return _elementwise(_relu6_grad_nb, gradients, features)
    return _half_as_float32(op, run)


@KERNELS.register("Elu")
def elu_kernel(op, ctx):
    def run(x):
        return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))
    return run


@KERNELS.register("EluGrad")
def elu_grad_kernel(op, ctx):
    def run(gradients, outputs):
        return _elementwise(_elu_grad_nb, gradients, outputs)
    return _half_as_float32(op, run)


@KERNELS.register("Softplus")
def softplus_kernel(op, ctx):
    def run(x):
        return np.logaddexp(x, 0)
    return run


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # tanh keeps it finite for any x, where 1 / (1 + exp(-x)) overflows for x << 0.
    return 0.5 + 0.5 * np.tanh(0.5 * x)


@KERNELS.register("SoftplusGrad")
def softplus_grad_kernel(op, ctx):
    def run(gradients, features):
        return gradients * _sigmoid(features)
    return _half_as_float32(op, run)


def l2_loss(t: np.ndarray) -> np.ndarray:
    """sum(t ** 2) / 2 as a 0-d array of t's dtype."""
    flat = _flat(t)
    return np.asarray(np.dot(flat, flat) / 2, dtype=t.dtype)


@KERNELS.register("L2Loss")
def l2_loss_kernel(op, ctx):
    return _half_as_float32(op, l2_loss)


# ---------------------------------------------------------------------------------------
# Softmax and losses


def softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, shifted by the max for stability."""
    e = logits - logits.max(axis=-1, keepdims=True)
    np.exp(e, out=e)
    e /= e.sum(axis=-1, keepdims=True)
    return e


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log of the softmax over the last axis, shifted by the max for stability."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    shifted -= np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return shifted


def _shifted_exp(features: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features - max, exp of that, its row sums) over the last axis."""
    shifted = features - features.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return shifted, e, e.sum(axis=-1, keepdims=True)


def softmax_cross_entropy(features: np.ndarray,
                          labels: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(loss per row, gradient with respect to the logits) of the softmax cross-entropy."""
    labels = labels.astype(features.dtype, copy=False)
    shifted, e, total = _shifted_exp(features)
    # -sum(labels * log_softmax) with log_softmax = shifted - log(total).
    loss = np.sum(labels * (np.log(total) - shifted), axis=-1)
    e /= total
    e -= labels
    return loss, e


def sparse_softmax_cross_entropy(features: np.ndarray, labels: np.ndarray,
                                 op=None) -> Tuple[np.ndarray, np.ndarray]:
    """Like softmax_cross_entropy with one-hot labels given as class indices."""
    classes = features.shape[-1]
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        raise _bad_label_error(op, labels, classes)
    shifted, e, total = _shifted_exp(features)
    rows = np.arange(len(labels))
    loss = np.log(total[:, 0]) - shifted[rows, labels]
    e /= total
    e[rows, labels] -= 1
    return loss, e


def _bad_label_error(op, labels: np.ndarray, classes: int) -> Exception:
    bad = labels[(labels < 0) | (labels >= classes)][0]
    name = op.name if op is not None else "SparseSoftmaxCrossEntropyWithLogits"
    message = (f"{name}: Received a label value of {bad} which is outside the valid range "
               f"of [0, {classes}).  Label values: {' '.join(str(v) for v in labels)}")
    # Imported here: the framework may import the kernels while it is itself loading.
    try:
        from tfjupyter.framework.errors import InvalidArgumentError
    except ImportError:
        return ValueError(message)
    return InvalidArgumentError(None, op, message)


@KERNELS.register("Softmax")
def softmax_kernel(op, ctx):
    return _half_as_float32(op, softmax)


@KERNELS.register("LogSoftmax")
def log_softmax_kernel(op, ctx):
    return _half_as_float32(op, log_softmax)


@KERNELS.register("SoftmaxCrossEntropyWithLogits")
def softmax_cross_entropy_kernel(op, ctx):
    return _half_as_float32(op, softmax_cross_entropy)


@KERNELS.register("SparseSoftmaxCrossEntropyWithLogits")
def sparse_softmax_cross_entropy_kernel(op, ctx):
    def run(features, labels):
        return sparse_softmax_cross_entropy(features, labels, op)
    return _half_as_float32(op, run)
