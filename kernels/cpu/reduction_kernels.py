"""CPU kernels for reductions, ArgMax/ArgMin, Cumsum/Cumprod and Range.

Constant reduction axes (the usual case) are normalized once, when the kernel is made; axes
fed at run time are checked on each call with the same rules (and error messages) as the
graph-time shape inference. float16 sums and products accumulate in float32.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from tfjupyter.ops import _shapes
from tfjupyter.ops.reduction_ops import normalize_axes, range_length

from . import KERNELS


def _reduction(op, compute: Callable) -> Callable:
    """The kernel ``run(x, axes)`` of a reduction op; ``compute(x, axis, keepdims)`` gets a
    tuple of non-negative axes, or None for all of them."""
    keep = op.get_attr("keep_dims")
    x_t, axes_t = op.inputs
    value, rank = _shapes.constant_value(axes_t), x_t.shape.ndims
    if value is not None and rank is not None:
        axes = normalize_axes(value, rank)
        axis = None if len(axes) == rank else axes
        return lambda x, _axes: compute(x, axis, keep)

    def run(x, axes):
        ndim = np.ndim(x)
        normalized = normalize_axes(axes, ndim)
        return compute(x, None if len(normalized) == ndim else normalized, keep)
    return run


def _accumulator(op):
    dtype = op.inputs[0].dtype.as_numpy_dtype
    return dtype, (np.float32 if dtype == np.float16 else dtype)


@KERNELS.register("Sum", "Prod")
def sum_or_prod(op, ctx):
    ufunc = np.add if op.type == "Sum" else np.multiply
    dtype, acc = _accumulator(op)
    if acc is dtype:
        # dtype= also keeps numpy from widening int32 sums to int64.
        return _reduction(op, lambda x, axis, keep: ufunc.reduce(x, axis, dtype, keepdims=keep))
    return _reduction(op, lambda x, axis, keep: ufunc.reduce(x, axis, acc, keepdims=keep)
                      .astype(dtype))


def _truncating_div(total, count: int):
    """Integer division rounding toward zero (TensorFlow's integer mean)."""
    if count == 0:
        raise ZeroDivisionError("Integer division by zero: mean over an empty axis")
    q = total // count
    q += (total < 0) & (q * count != total)
    return q


@KERNELS.register("Mean")
def mean(op, ctx):
    dtype, acc = _accumulator(op)
    if op.inputs[0].dtype.is_floating:
        def compute(x, axis, keep):
            total = np.add.reduce(x, axis, acc, keepdims=keep)
            total /= x.size // max(total.size, 1)
            return total if acc is dtype else total.astype(dtype)
    else:
        def compute(x, axis, keep):
            total = np.add.reduce(x, axis, np.int64, keepdims=keep)
            out = _truncating_div(total, x.size // max(total.size, 1)).astype(dtype)
            return out if out.ndim else out[()]
    return _reduction(op, compute)


@KERNELS.register("Max", "Min")
def max_or_min(op, ctx):
    # The identity makes empty reductions give -inf / +inf (integers: the dtype's min / max).
    dtype = op.inputs[0].dtype
    if op.type == "Max":
        ufunc, initial = np.maximum, (-np.inf if dtype.is_floating else dtype.min)
    else:
        ufunc, initial = np.minimum, (np.inf if dtype.is_floating else dtype.max)
    return _reduction(op, lambda x, axis, keep: ufunc.reduce(x, axis, keepdims=keep,
                                                             initial=initial))


@KERNELS.register("All", "Any")
def all_or_any(op, ctx):
    ufunc = np.logical_and if op.type == "All" else np.logical_or
    return _reduction(op, lambda x, axis, keep: ufunc.reduce(x, axis, keepdims=keep))


# -- ArgMax, ArgMin ---------------------------------------------------------------------------------
@KERNELS.register("ArgMax", "ArgMin")
def arg_max_or_min(op, ctx):
    fn = np.argmax if op.type == "ArgMax" else np.argmin
    out_type = op.get_attr("output_type").as_numpy_dtype

    def compute(x, axis):
        if x.shape[axis] == 0:
            raise ValueError(f"Reduction axis {axis} is empty in shape {list(x.shape)}")
        return fn(x, axis).astype(out_type, copy=False)

    x_t, dim_t = op.inputs
    value, rank = _shapes.constant_value(dim_t), x_t.shape.ndims
    if value is not None and rank is not None:
        axis = int(value) % rank
        return lambda x, _dim: compute(x, axis)

    def run(x, dim):
        axis, ndim = int(dim), np.ndim(x)
        if not -ndim <= axis < ndim:
            raise ValueError(f"Expected dimension in the range [{-ndim}, {ndim}), but got {axis}")
        return compute(x, axis % ndim)
    return run


# -- Cumsum, Cumprod ------------------------------------------------------------------------------------
@KERNELS.register("Cumsum", "Cumprod")
def cumulative(op, ctx):
    if op.type == "Cumsum":
        accumulate, identity = np.cumsum, 0
    else:
        accumulate, identity = np.cumprod, 1
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    dtype = op.inputs[0].dtype.as_numpy_dtype

    def compute(x, axis):
        if reverse:
            x = np.flip(x, axis)
        if exclusive:
            out = np.empty(x.shape, dtype)
            head, tail, body = ([slice(None)] * x.ndim for _ in range(3))
            head[axis], tail[axis], body[axis] = slice(0, 1), slice(1, None), slice(0, -1)
            out[tuple(head)] = identity
            accumulate(x[tuple(body)], axis=axis, dtype=dtype, out=out[tuple(tail)])
        else:
            out = accumulate(x, axis=axis, dtype=dtype)
        return np.ascontiguousarray(np.flip(out, axis)) if reverse else out

    x_t, axis_t = op.inputs
    value, rank = _shapes.constant_value(axis_t), x_t.shape.ndims
    if value is not None and rank is not None:
        axis = int(value) % rank
        return lambda x, _axis: compute(x, axis)

    def run(x, axis_value):
        axis, ndim = int(axis_value), np.ndim(x)
        if not -ndim <= axis < ndim:
            raise ValueError(f"axis {axis} is out of range for a tensor of rank {ndim}")
        return compute(x, axis % ndim)
    return run


# -- Range ----------------------------------------------------------------------------------------------
@KERNELS.register("Range")
def range_(op, ctx):
    dtype = op.get_attr("Tidx").as_numpy_dtype

    def run(start, limit, delta):
        start, limit, delta = start.item(), limit.item(), delta.item()
        range_length(start, limit, delta)  # validates, with TensorFlow's messages
        return np.arange(start, limit, delta, dtype=dtype)
    return run
