"""CPU kernels for the nn ops beyond nn_kernels: in_top_k, top_k, local response
normalization (LRN; float16 is computed in float32), MaxPoolGradGrad (second derivatives of
max pooling) and the candidate samplers."""
from __future__ import annotations

import math
from typing import Callable, Tuple

import numpy as np
from numba import njit

from . import KERNELS
from ._threads import PARALLEL_MIN_BYTES, WORKERS
from .random_kernels import generator

__all__ = ["in_top_k", "top_k", "lrn", "lrn_grad", "max_pool_grad_grad", "sample_candidates"]


# ---------------------------------------------------------------------------------------------
# InTopK


def in_top_k(predictions: np.ndarray, targets: np.ndarray, k: int) -> np.ndarray:
    """Whether each row's target class is among its k largest predictions, counting ties at
    the boundary as in. False where the target is out of range or the row has a non-finite
    prediction (TensorFlow cannot say, and says False)."""
    n, classes = predictions.shape
    if targets.shape != (n,):
        raise ValueError(f"First dimension of predictions {n} must match length of targets "
                         f"{targets.shape[0] if targets.ndim else targets.shape}")
    if classes == 0:
        return np.zeros(n, np.bool_)
    valid = (targets >= 0) & (targets < classes)
    target_value = predictions[np.arange(n), np.where(valid, targets, 0)]
    more = np.count_nonzero(predictions > target_value[:, None], axis=1)
    return valid & np.isfinite(predictions).all(axis=1) & (more < k)


@KERNELS.register("InTopK")
def in_top_k_kernel(op, ctx):
    k = int(op.get_attr("k"))

    def run(predictions, targets):
        return in_top_k(predictions, targets, k)
    return run


@KERNELS.register("InTopKV2")
def in_top_k_v2_kernel(op, ctx):
    def run(predictions, targets, k):
        k = int(k)
        if k < 0:
            raise ValueError(f"k must be non-negative, got {k}")
        return in_top_k(predictions, targets, k)
    return run


# ---------------------------------------------------------------------------------------------
# TopKV2


def top_k(x: np.ndarray, k: int):
    """(values, int32 indices) of the k largest entries along the last axis, largest first,
    the lower index first among equal values."""
    n = x.shape[-1]
    if k < 0:
        raise ValueError(f"Need k >= 0, got {k}")
    if k > n:
        raise ValueError(f"input must have at least k columns. Had {n}, needed {k}")
    # A stable ascending sort of the reversed row, read backwards, is descending with ties
    # in increasing original index.
    order = np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., :-k - 1:-1] if k else \
        np.empty(x.shape[:-1] + (0,), np.intp)
    indices = (n - 1 - order).astype(np.int32)
    return np.take_along_axis(x, indices, axis=-1), indices


@KERNELS.register("TopKV2")
def top_k_kernel(op, ctx):
    def run(x, k):
        return top_k(x, int(k))
    return run


# ---------------------------------------------------------------------------------------------
# Local response normalization


# A window sum adds 2 * radius + 1 shifted slices of a zero-padded copy of the row: loops over
# the channels that LLVM vectorizes, 1.6x faster than one running sum per row (a serial chain).
# Its precision is the input's; no cancellation can creep in, as a running sum's could.
@njit(cache=True, nogil=True)
def _window_sum_nb(a, radius, square, scale, offset, out):
    """out[r, c] = offset + scale * sum(f(a[r, c - radius : c + radius + 1])) with f the
    square or the identity."""
    rows, c = a.shape
    padded = np.zeros(c + 2 * radius, a.dtype)
    for r in range(rows):
        row = a[r]
        o = out[r]
        for d in range(c):
            v = row[d]
            padded[radius + d] = v * v if square else v
            o[d] = 0
        for k in range(2 * radius + 1):
            for d in range(c):
                o[d] += padded[k + d]
        for d in range(c):
            o[d] = offset + scale * o[d]


def _rows(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """a as a C-contiguous [pixels, channels] matrix of dtype."""
    return np.ascontiguousarray(a, dtype=dtype).reshape(-1, a.shape[-1])


def _work_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _over_rows(work: Callable[[int, int], None], rows: np.ndarray) -> None:
    """work(lo, hi) over parts of the rows, one per core in a step that splits kernels
    (kernels/cpu/_threads.py): LRN was a single-core op beside split convolutions."""
    WORKERS.map(work, rows.shape[0], big=rows.nbytes >= PARALLEL_MIN_BYTES)


def lrn(x: np.ndarray, radius: int, bias: float, alpha: float, beta: float) -> np.ndarray:
    """x / (bias + alpha * sum of x ** 2 over the channels within radius) ** beta (NHWC)."""
    rows = _rows(x, _work_dtype(x.dtype))
    out = np.empty_like(rows)

    def work(lo: int, hi: int) -> None:
        part = out[lo:hi]
        _window_sum_nb(rows[lo:hi], radius, True, alpha, bias, part)
        np.power(part, -beta, out=part)
        part *= rows[lo:hi]
    _over_rows(work, rows)
    return out.reshape(x.shape).astype(x.dtype, copy=False)


def lrn_grad(grads: np.ndarray, x: np.ndarray, y: np.ndarray, radius: int, bias: float,
             alpha: float, beta: float) -> np.ndarray:
    """The gradient of lrn: with N = bias + alpha * window_sum(x ** 2),
    dx = g * N ** -beta - 2 * alpha * beta * x * window_sum(g * y / N)."""
    work_dtype = _work_dtype(x.dtype)
    g, xs, ys = _rows(grads, work_dtype), _rows(x, work_dtype), _rows(y, work_dtype)
    out = np.empty_like(xs)

    def work(lo: int, hi: int) -> None:
        norm = out[lo:hi]
        _window_sum_nb(xs[lo:hi], radius, True, alpha, bias, norm)
        ratio = g[lo:hi] * ys[lo:hi]
        ratio /= norm
        spread = np.empty_like(ratio)
        _window_sum_nb(ratio, radius, False, 1.0, 0.0, spread)
        spread *= xs[lo:hi]
        spread *= -2 * alpha * beta
        np.power(norm, -beta, out=norm)
        norm *= g[lo:hi]
        norm += spread
    _over_rows(work, xs)
    return out.reshape(x.shape).astype(x.dtype, copy=False)


def _lrn_attrs(op):
    return (int(op.get_attr("depth_radius")), float(op.get_attr("bias")),
            float(op.get_attr("alpha")), float(op.get_attr("beta")))


@KERNELS.register("LRN")
def lrn_kernel(op, ctx):
    radius, bias, alpha, beta = _lrn_attrs(op)

    def run(x):
        return lrn(x, radius, bias, alpha, beta)
    return run


@KERNELS.register("LRNGrad")
def lrn_grad_kernel(op, ctx):
    radius, bias, alpha, beta = _lrn_attrs(op)

    def run(grads, x, y):
        return lrn_grad(grads, x, y, radius, bias, alpha, beta)
    return run


# ---------------------------------------------------------------------------------------------
# MaxPoolGradGrad


@njit(cache=True, nogil=True)
def _max_pool_grad_grad_nb(x, grad, kh, kw, sh, sw, pt, pl, out):
    """out[window] = grad at the window's first maximum (rows scanned before columns, as
    MaxPool's gradient routes it); padding never wins."""
    n, h, w, c = x.shape
    _, oh, ow, _ = out.shape
    for b in range(n):
        for i in range(oh):
            y0 = i * sh - pt
            ya, yb = max(y0, 0), min(y0 + kh, h)
            for j in range(ow):
                x0 = j * sw - pl
                xa, xb = max(x0, 0), min(x0 + kw, w)
                for ch in range(c):
                    best = x[b, ya, xa, ch]
                    value = grad[b, ya, xa, ch]
                    for y in range(ya, yb):
                        for xx in range(xa, xb):
                            if x[b, y, xx, ch] > best:
                                best = x[b, y, xx, ch]
                                value = grad[b, y, xx, ch]
                    out[b, i, j, ch] = value


def _pool_window(size: int, k: int, stride: int, same: bool):
    """(output size, padding before) along one axis, TensorFlow's formulas."""
    if same:
        out = -(-size // stride)
        return out, max((out - 1) * stride + k - size, 0) // 2
    return -(-(size - k + 1) // stride), 0


def max_pool_grad_grad(x: np.ndarray, grad: np.ndarray, ksize, strides, same: bool) -> np.ndarray:
    """The gradient of MaxPoolGrad with respect to its gradient input (NHWC)."""
    if x.dtype == np.float16:
        return max_pool_grad_grad(x.astype(np.float32), grad.astype(np.float32), ksize, strides,
                                  same).astype(np.float16)
    x = np.ascontiguousarray(x)
    grad = np.ascontiguousarray(grad, dtype=x.dtype)
    oh, pt = _pool_window(x.shape[1], ksize[0], strides[0], same)
    ow, pl = _pool_window(x.shape[2], ksize[1], strides[1], same)
    out = np.empty((x.shape[0], oh, ow, x.shape[3]), x.dtype)
    _max_pool_grad_grad_nb(x, grad, ksize[0], ksize[1], strides[0], strides[1], pt, pl, out)
    return out


@KERNELS.register("MaxPoolGradGrad")
def max_pool_grad_grad_kernel(op, ctx):
    data_format = op.get_attr("data_format")
    if (data_format.decode() if isinstance(data_format, bytes) else data_format) != "NHWC":
        raise ValueError(f"MaxPoolGradGrad op '{op.name}': only NHWC is supported on CPU.")
    ksize, strides = op.get_attr("ksize"), op.get_attr("strides")
    ksize, strides = (int(ksize[1]), int(ksize[2])), (int(strides[1]), int(strides[2]))
    padding = op.get_attr("padding")
    same = (padding.decode() if isinstance(padding, bytes) else padding) == "SAME"

    def run(orig_input, orig_output, grad):
        return max_pool_grad_grad(orig_input, grad, ksize, strides, same)
    return run


# ---------------------------------------------------------------------------------------------
# Candidate samplers


def sample_candidates(draw: Callable[[int], np.ndarray], num_sampled: int,
                      unique: bool) -> Tuple[np.ndarray, int]:
    """(num_sampled classes, number of draws it took). Unique sampling draws until
    num_sampled distinct classes came up, keeping them in the order drawn."""
    if not unique:
        return draw(num_sampled).astype(np.int64, copy=False), num_sampled
    picked, seen, tries = [], set(), 0
    while len(picked) < num_sampled:
        for value in draw(max(2 * (num_sampled - len(picked)), 16)).tolist():
            tries += 1
            if value not in seen:
                seen.add(value)
                picked.append(value)
                if len(picked) == num_sampled:
                    break
    return np.array(picked, np.int64), tries


def _expected_count(p: np.ndarray, num_sampled: int, tries: int) -> np.ndarray:
    """How many times each class is expected among the draws: num_sampled * p, or for unique
    sampling 1 - (1 - p) ** tries (computed stably)."""
    if tries == num_sampled:
        return (p * num_sampled).astype(np.float32)
    with np.errstate(divide="ignore"):
        return (-np.expm1(tries * np.log1p(-p))).astype(np.float32)


def _sampler_kernel(op, ctx, draw_from, probability):
    gen = generator(op, ctx)
    num_sampled, unique = int(op.get_attr("num_sampled")), bool(op.get_attr("unique"))
    range_max = int(op.get_attr("range_max"))
    draw = draw_from(gen, range_max)

    def run(true_classes):
        sampled, tries = sample_candidates(draw, num_sampled, unique)
        return (sampled,
                _expected_count(probability(true_classes, range_max), num_sampled, tries),
                _expected_count(probability(sampled, range_max), num_sampled, tries))
    return run


@KERNELS.register("UniformCandidateSampler")
def uniform_candidate_sampler_kernel(op, ctx):
    def draw_from(gen, range_max):
        return lambda n: gen.integers(0, range_max, n, dtype=np.int64)

    def probability(classes, range_max):
        return np.full(np.shape(classes), 1.0 / range_max)
    return _sampler_kernel(op, ctx, draw_from, probability)


@KERNELS.register("LogUniformCandidateSampler")
def log_uniform_candidate_sampler_kernel(op, ctx):
    def draw_from(gen, range_max):
        log_range = math.log(range_max + 1)
        # exp(U * log(range_max + 1)) - 1 is log-uniform on [0, range_max); as TensorFlow.
        return lambda n: (np.exp(gen.random(n) * log_range).astype(np.int64) - 1) % range_max

    def probability(classes, range_max):
        classes = np.asarray(classes, np.float64)
        return np.log((classes + 2.0) / (classes + 1.0)) / math.log(range_max + 1)
    return _sampler_kernel(op, ctx, draw_from, probability)
