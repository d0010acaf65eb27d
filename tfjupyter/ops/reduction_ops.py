"""Reductions (Sum, Mean, Max, Min, Prod, All, Any), ArgMax/ArgMin, Cumsum/Cumprod and Range.

Part of the math ops: ``math_ops`` re-exports everything here (import that module, not this one).
Reduction axes are an input tensor, as in TensorFlow; when they are a constant (the usual case)
shapes are inferred statically and the kernels bake the axes in.
"""
from __future__ import annotations

import builtins
import math
from typing import List, Optional, Tuple, Union

import numpy as np

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope, numpy_to_tensor_value
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_gradient, register_op
from ..framework.tensor_shape import TensorShape
from . import _shapes, array_ops
from .math_ops import (NUMERIC, _is_tensorlike, add, cast, equal, exp, floordiv, floormod,
                       is_finite, log, maximum, multiply, not_equal, realdiv, subtract)

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_all",
           "reduce_any", "reduce_logsumexp", "count_nonzero", "argmax", "argmin", "arg_max",
           "arg_min", "cumsum",
           "cumprod", "range"]

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


# -- axes ---------------------------------------------------------------------------------------------
def normalize_axes(values, rank: int) -> Tuple[int, ...]:
    """Axes in [-rank, rank) as non-negative ints; ValueError for bad or repeated axes.
    (The CPU kernels use this too, for axes only known at run time.)"""
    out: List[int] = []
    for a in np.ravel(values).tolist():
        if not -rank <= a < rank:
            raise ValueError(f"Invalid reduction dimension {a} for input with {rank} dimensions.")
        a %= rank
        if a in out:
            raise ValueError(f"Invalid reduction arguments: Axes contains duplicate dimension: {a}")
        out.append(a)
    return tuple(out)


def _static_axes(x: Tensor, axes: Tensor) -> Optional[Tuple[int, ...]]:
    """The reduction axes, normalized, when they and the rank of ``x`` are known statically."""
    value = _shapes.constant_value(axes)
    if value is None or x.shape.ndims is None:
        return None
    return normalize_axes(value, x.shape.ndims)


def _check_index_input(op, t: Tensor, what: str, max_rank: int) -> None:
    if t.dtype not in _INDEX_TYPES:
        raise TypeError(f"Value passed to parameter '{what}' of '{op.type}' Op '{op.name}' has "
                        f"DataType {t.dtype.name} not in list of allowed values: int32, int64")
    if t.shape.ndims is not None and t.shape.ndims > max_rank:
        raise ValueError(f"'{what}' of '{op.type}' Op '{op.name}' must be at most rank "
                         f"{max_rank}, but is rank {t.shape.ndims}")


# -- Sum, Mean, Max, Min, Prod, All, Any -------------------------------------------------------------------
def _reduction_shape_fn(allowed):
    def shape_fn(op):
        x, axes_t = op.inputs
        _shapes.check_dtype_in(op, x, allowed)
        _check_index_input(op, axes_t, "reduction_indices", 1)
        keep = op.get_attr("keep_dims")
        rank = x.shape.ndims
        axes = _static_axes(x, axes_t)
        if axes is None:
            return [(x.dtype, TensorShape([None] * rank if keep and rank is not None else None))]
        dims = x.shape.as_list()
        if keep:
            out = [1 if i in axes else d for i, d in enumerate(dims)]
        else:
            out = [d for i, d in enumerate(dims) if i not in axes]
        return [(x.dtype, TensorShape(out))]
    return shape_fn


register_op("Sum")(_reduction_shape_fn(NUMERIC))
register_op("Mean")(_reduction_shape_fn(NUMERIC))
register_op("Max")(_reduction_shape_fn(NUMERIC))
register_op("Min")(_reduction_shape_fn(NUMERIC))
register_op("Prod")(_reduction_shape_fn(NUMERIC))
register_op("All")(_reduction_shape_fn((dtypes.bool,)))
register_op("Any")(_reduction_shape_fn((dtypes.bool,)))
NotDifferentiable("All")
NotDifferentiable("Any")


def _reduction_dims(x: Tensor, axis) -> Tensor:
    if axis is None:
        if x.shape.ndims is not None:
            return array_ops.constant(np.arange(x.shape.ndims, dtype=np.int32), name="Const")
        return range(0, array_ops.rank(x))
    if _is_tensorlike(axis):
        return convert_to_tensor(axis)
    return convert_to_tensor(axis, dtype=dtypes.int32, name="reduction_indices")


def _axis_and_keepdims(axis, keepdims, reduction_indices, keep_dims) -> Tuple[object, bool]:
    """Merges the TF 1.x and 0.x spellings of the reduction arguments."""
    if reduction_indices is not None:
        if axis is not None:
            raise ValueError("Can't specify both 'axis' and 'reduction_indices'.")
        axis = reduction_indices
    if keep_dims is not None:
        if keepdims is not None:
            raise ValueError("Can't specify both 'keepdims' and 'keep_dims'.")
        keepdims = keep_dims
    return axis, bool(keepdims)


def _reduce(op_type: str, input_tensor, axis, keepdims, name, reduction_indices, keep_dims
            ) -> Tensor:
    axis, keepdims = _axis_and_keepdims(axis, keepdims, reduction_indices, keep_dims)
    with name_scope(name, op_type, [input_tensor]) as scope:
        x = convert_to_tensor(input_tensor, name="input")
        axes = _reduction_dims(x, axis)
        return _new_op(op_type, [x, axes], {"keep_dims": keepdims}, name=scope).outputs[0]


def reduce_sum(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
               reduction_indices=None, keep_dims=None) -> Tensor:
    """Sum over ``axis`` (int, list, tensor; None: all). ``keepdims`` keeps reduced axes as 1.
    ``reduction_indices`` and ``keep_dims`` are the 0.x spellings."""
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
                reduction_indices=None, keep_dims=None) -> Tensor:
    """Mean over ``axis``; integer means are truncated toward zero, as in TensorFlow."""
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
               reduction_indices=None, keep_dims=None) -> Tensor:
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
               reduction_indices=None, keep_dims=None) -> Tensor:
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
                reduction_indices=None, keep_dims=None) -> Tensor:
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
               reduction_indices=None, keep_dims=None) -> Tensor:
    """Logical and over ``axis`` of a bool tensor."""
    return _reduce("All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_any(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
               reduction_indices=None, keep_dims=None) -> Tensor:
    """Logical or over ``axis`` of a bool tensor."""
    return _reduce("Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
                     reduction_indices=None, keep_dims=None) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, computed stably (shifted by the maximum)."""
    axis, keepdims = _axis_and_keepdims(axis, keepdims, reduction_indices, keep_dims)
    with name_scope(name, "ReduceLogSumExp", [input_tensor]) as scope:
        x = convert_to_tensor(input_tensor, name="input_tensor")
        raw_max = reduce_max(x, axis, keepdims=True)
        # An infinite maximum would make x - max NaN: shift by 0 there instead.
        shift = array_ops.stop_gradient(array_ops.where(
            is_finite(raw_max), raw_max, array_ops.zeros_like(raw_max)))
        result = log(reduce_sum(exp(subtract(x, shift)), axis, keepdims=keepdims))
        if not keepdims:
            shift = array_ops.reshape(shift, array_ops.shape(result))
        return add(result, shift, name=scope)


def count_nonzero(input_tensor, axis=None, keepdims=None, dtype=dtypes.int64,
                  name: Optional[str] = None, reduction_indices=None, keep_dims=None) -> Tensor:
    """The number of nonzero (True, non-empty) elements over ``axis``, as ``dtype``."""
    axis, keepdims = _axis_and_keepdims(axis, keepdims, reduction_indices, keep_dims)
    with name_scope(name, "count_nonzero", [input_tensor]):
        x = convert_to_tensor(input_tensor, name="input_tensor")
        zero = b"" if x.dtype is dtypes.string else np.zeros((), x.dtype.as_numpy_dtype)
        nonzero = cast(not_equal(x, zero), dtypes.int64)
        return cast(reduce_sum(nonzero, axis, keepdims=keepdims), dtype)


# -- reduction gradients ----------------------------------------------------------------------------------
def _kept_shape(x: Tensor, axes: Tensor) -> Union[List[int], Tensor]:
    """The shape of the reduction's keep_dims output (x's shape, reduced axes as 1): a list
    when known statically, else an int32 tensor computed at run time."""
    static = _static_axes(x, axes)
    if static is not None:
        kept = [1 if i in static else d for i, d in enumerate(x.shape.as_list())]
        if None not in kept:
            return kept
        keep_mask = np.array([0 if i in static else 1 for i in builtins.range(len(kept))],
                             dtype=np.int32)
        return add(multiply(array_ops.shape(x), keep_mask), 1 - keep_mask)
    # TensorFlow's reduced_shape, with broadcasting instead of DynamicStitch.
    shape = array_ops.shape(x)
    rank = array_ops.size(shape)
    # A scalar x (rank 0) has no axes to reduce, so `axes` is empty; the divisor is kept >= 1
    # because FloorMod checks its divisor even when there is nothing to divide.
    axes = floormod(array_ops.reshape(cast(axes, dtypes.int32), [1, -1]), maximum(rank, 1))
    is_reduced = reduce_any(equal(array_ops.reshape(range(0, rank), [-1, 1]), axes), axis=1)
    reduced = cast(is_reduced, dtypes.int32)
    return add(multiply(shape, 1 - reduced), reduced)


def _as_kept(t: Tensor, op) -> Tensor:
    """``t``, shaped like the reduction's output, reshaped to the keep_dims output shape."""
    if op.get_attr("keep_dims"):
        return t
    return array_ops.reshape(t, _kept_shape(*op.inputs))


def _reduced_count(op) -> Union[int, Tensor]:
    """How many input elements make each output element."""
    x, y = op.inputs[0], op.outputs[0]
    axes = _static_axes(x, op.inputs[1])
    if axes is not None:
        dims = [x.shape.as_list()[a] for a in axes]
        if None not in dims:
            return int(np.prod(dims, dtype=np.int64))
        if len(axes) == x.shape.ndims:
            return array_ops.size(x)
    return floordiv(array_ops.size(x), maximum(array_ops.size(y), 1))


@register_gradient("Sum")
def _sum_grad(op, grad):
    return [array_ops.broadcast_to(_as_kept(grad, op), array_ops.shape(op.inputs[0])), None]


@register_gradient("Mean")
def _mean_grad(op, grad):
    if not grad.dtype.is_floating:
        return [None, None]
    count = _reduced_count(op)
    # Dividing the (small) output gradient before broadcasting it is cheaper than after.
    if isinstance(count, Tensor):
        count = cast(count, grad.dtype)
    scaled = realdiv(grad, count)
    return [array_ops.broadcast_to(_as_kept(scaled, op), array_ops.shape(op.inputs[0])), None]


@register_gradient("Max")
@register_gradient("Min")
def _min_or_max_grad(op, grad):
    # The gradient is split evenly among tied maxima (minima), as in TensorFlow.
    x, axes = op.inputs
    indicators = cast(equal(_as_kept(op.outputs[0], op), x), grad.dtype)
    num_selected = reduce_sum(indicators, axes, keepdims=True)
    return [multiply(realdiv(indicators, num_selected), _as_kept(grad, op)), None]


def _reduces_all_axes(x: Tensor, axes_t: Tensor) -> bool:
    """Whether ``axes_t`` is ``range(0, rank(x))``: the axes a reduction with ``axis=None``
    gets when the rank of ``x`` is unknown (see ``_reduction_dims``)."""
    if axes_t.op.type != "Range":
        return False
    start, limit, delta = axes_t.op.inputs
    return (_shapes.constant_value(start) == 0 and _shapes.constant_value(delta) == 1
            and limit.op.type == "Rank" and limit.op.inputs[0] is x)


@register_gradient("Prod")
def _prod_grad(op, grad):
    # d prod / d x_i is the product of the other elements of x_i's group. Over several axes it
    # factors into one exclusive product per axis (cumprod from both sides), taken along that
    # axis of the products over the axes after it; exact even with zeros in x.
    x, axes_t = op.inputs
    axes = _shapes.constant_value(axes_t)
    if axes is None and _reduces_all_axes(x, axes_t):
        # All axes of an input of unknown rank (reduce_prod(x) with no axis): over the
        # flattened input one exclusive product from each side is enough.
        flat = array_ops.reshape(x, [-1])
        others = multiply(cumprod(flat, 0, exclusive=True),
                          cumprod(flat, 0, exclusive=True, reverse=True))
        return [multiply(grad, array_ops.reshape(others, array_ops.shape(x))), None]
    if axes is None:
        raise ValueError(f"The gradient of Prod op '{op.name}' needs its reduction axes to be "
                         "known when the graph is built (pass a constant axis).")
    others, partial = None, x
    for a in reversed(np.ravel(axes).tolist()):
        excl = multiply(cumprod(partial, a, exclusive=True),
                        cumprod(partial, a, exclusive=True, reverse=True))
        others = excl if others is None else multiply(others, excl)
        partial = reduce_prod(partial, a, keepdims=True)
    g = _as_kept(grad, op)
    return [g if others is None else multiply(g, others), None]


# -- ArgMax, ArgMin --------------------------------------------------------------------------------
def _arg_shape(op):
    x, dim = op.inputs
    _shapes.check_dtype_in(op, x, NUMERIC)
    _check_index_input(op, dim, "dimension", 0)
    out_type = op.get_attr("output_type")
    rank = x.shape.ndims
    if rank is None:
        return [(out_type, TensorShape(None))]
    axis = _shapes.constant_value(dim)
    if axis is None:
        return [(out_type, TensorShape([None] * builtins.max(rank - 1, 0)))]
    axis = int(axis)
    if not -rank <= axis < rank:
        raise ValueError(f"Dimension ({axis}) must be in the range [{-rank}, {rank}), where "
                         f"{rank} is the number of dimensions in the input.")
    dims = x.shape.as_list()
    del dims[axis % rank]
    return [(out_type, TensorShape(dims))]


register_op("ArgMax")(_arg_shape)
register_op("ArgMin")(_arg_shape)
NotDifferentiable("ArgMax")
NotDifferentiable("ArgMin")


def _arg(op_type: str, input, axis, name, dimension, output_type) -> Tensor:  # noqa: A002
    if dimension is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dimension'")
        axis = dimension
    if axis is None:
        axis = 0
    output_type = dtypes.as_dtype(output_type)
    if output_type not in _INDEX_TYPES:
        raise TypeError(f"output_type must be int32 or int64, got {output_type.name}")
    with name_scope(name, op_type, [input]) as scope:
        x = convert_to_tensor(input, name="input")
        dim = convert_to_tensor(axis) if _is_tensorlike(axis) else \
            convert_to_tensor(axis, dtype=dtypes.int32, name="dimension")
        return _new_op(op_type, [x, dim], {"output_type": output_type}, name=scope).outputs[0]


def argmax(input, axis=None, name: Optional[str] = None, dimension=None,  # noqa: A002
           output_type=dtypes.int64) -> Tensor:
    """Index of the largest value along ``axis`` (default 0; the first one among ties)."""
    return _arg("ArgMax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name: Optional[str] = None, dimension=None,  # noqa: A002
           output_type=dtypes.int64) -> Tensor:
    """Index of the smallest value along ``axis`` (default 0; the first one among ties)."""
    return _arg("ArgMin", input, axis, name, dimension, output_type)


def arg_max(input, dimension, output_type=dtypes.int64, name: Optional[str] = None  # noqa: A002
            ) -> Tensor:
    """TensorFlow's older name of ``argmax``, taking the axis as ``dimension``."""
    return _arg("ArgMax", input, None, name, dimension, output_type)


def arg_min(input, dimension, output_type=dtypes.int64, name: Optional[str] = None  # noqa: A002
            ) -> Tensor:
    """TensorFlow's older name of ``argmin``, taking the axis as ``dimension``."""
    return _arg("ArgMin", input, None, name, dimension, output_type)


# -- Cumsum, Cumprod ------------------------------------------------------------------------------------
def _cumulative_shape(op):
    x, axis_t = op.inputs
    _shapes.check_dtype_in(op, x, NUMERIC)
    _check_index_input(op, axis_t, "axis", 0)
    axis, rank = _shapes.constant_value(axis_t), x.shape.ndims
    if axis is not None and rank is not None and not -rank <= int(axis) < rank:
        raise ValueError(f"axis {int(axis)} is out of range for a tensor of rank {rank} "
                         f"(op '{op.name}')")
    return [(x.dtype, x.shape)]


register_op("Cumsum")(_cumulative_shape)
register_op("Cumprod")(_cumulative_shape)


@register_gradient("Cumsum")
def _cumsum_grad(op, grad):
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    return [cumsum(grad, op.inputs[1], exclusive=exclusive, reverse=not reverse), None]


@register_gradient("Cumprod")
def _cumprod_grad(op, grad):
    # As TensorFlow: exact where x != 0 (the division makes zeros of x give inf/nan).
    x, axis = op.inputs
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    prod = cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = cumsum(multiply(prod, grad), axis, exclusive=exclusive, reverse=not reverse)
    return [realdiv(out, x), None]


def _cumulative(op_type: str, x, axis, exclusive: bool, reverse: bool, name) -> Tensor:
    with name_scope(name, op_type, [x]) as scope:
        x = convert_to_tensor(x, name="x")
        axis = convert_to_tensor(axis) if _is_tensorlike(axis) else \
            convert_to_tensor(axis, dtype=dtypes.int32, name="axis")
        return _new_op(op_type, [x, axis], {"exclusive": bool(exclusive), "reverse": bool(reverse)},
                       name=scope).outputs[0]


def cumsum(x, axis=0, exclusive: bool = False, reverse: bool = False,
           name: Optional[str] = None) -> Tensor:
    """Cumulative sum along ``axis``: ``exclusive`` starts from 0, ``reverse`` runs backwards."""
    return _cumulative("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x, axis=0, exclusive: bool = False, reverse: bool = False,
            name: Optional[str] = None) -> Tensor:
    """Cumulative product along ``axis``: ``exclusive`` starts from 1, ``reverse`` runs
    backwards."""
    return _cumulative("Cumprod", x, axis, exclusive, reverse, name)


# -- Range -------------------------------------------------------------------------------------------
_RANGE_TYPES = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def range_length(start, limit, delta) -> int:
    """The number of elements of Range(start, limit, delta); ValueError as TensorFlow's kernel.
    (The CPU kernel uses this too.)"""
    if delta == 0:
        raise ValueError("Requires delta != 0")
    if delta > 0 and start > limit:
        raise ValueError(f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise ValueError(f"Requires start >= limit when delta < 0: {start}/{limit}")
    if all(isinstance(v, int) for v in (start, limit, delta)):
        return (builtins.abs(limit - start) + builtins.abs(delta) - 1) // builtins.abs(delta)
    return int(math.ceil(builtins.abs((limit - start) / delta)))


@register_op("Range")
def _range_shape(op):
    dtype = op.get_attr("Tidx")
    for t in op.inputs:
        _shapes.check_dtype_in(op, t, _RANGE_TYPES)
        if t.shape.ndims not in (0, None):
            raise ValueError(f"Range '{op.name}': start, limit and delta must be scalars, got "
                             f"{t.name} of shape {t.shape}")
    _shapes.check_same_dtype(op, *op.inputs)
    values = [_shapes.constant_value(t) for t in op.inputs]
    if any(v is None for v in values):
        return [(dtype, TensorShape([None]))]
    return [(dtype, TensorShape([range_length(*(v.item() for v in values))]))]


NotDifferentiable("Range")


def range(start, limit=None, delta=1, dtype=None, name: str = "range") -> Tensor:  # noqa: A001
    """``[start, start + delta, ...]`` up to but excluding ``limit`` (``range(n)``: 0..n-1).
    Without ``dtype`` the widest of the arguments' types wins (int32 < int64 < float32 <
    float64)."""
    if limit is None:
        start, limit = 0, start
    values = {"start": start, "limit": limit, "delta": delta}
    with name_scope(name, "Range", list(values.values())) as scope:
        if dtype is None:
            kinds = {n: convert_to_tensor(v).dtype if _is_tensorlike(v)
                     else dtypes.as_dtype(numpy_to_tensor_value(v).dtype)
                     for n, v in values.items()}
            for n, kind in kinds.items():
                if kind not in _RANGE_TYPES:
                    raise TypeError(f"range: {n} has dtype {kind.name}; expected one of int32, "
                                    "int64, float32, float64")
            dtype = builtins.max(kinds.values(), key=_RANGE_TYPES.index)
        dtype = dtypes.as_dtype(dtype)
        # Python values become constants of the final dtype (so the length stays static).
        args = [cast(v, dtype) if _is_tensorlike(v) else convert_to_tensor(v, dtype, name=n)
                for n, v in values.items()]
        return _new_op("Range", args, {"Tidx": dtype}, name=scope).outputs[0]
