"""Array ops that index: slice, strided_slice (``Tensor.__getitem__``), gather, one_hot,
where/select, boolean_mask. Re-exported by ``array_ops``."""
from __future__ import annotations

import builtins
import sys
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_gradient, register_op
from ..framework.tensor_shape import Dimension, TensorShape, broadcast_shapes, list_str
from . import array_ops as _core
from .array_ops import (_check_index_dtype, _check_rank, _const, _const_int, _input_shapes,
                        _is_tensorlike, _partial_shape_values, _shape_from_tensor, _to_int_tensor,
                        constant, rank, reshape, shape, size, squeeze, transpose, zeros_like)
from .array_join_ops import concat, pad, stack

__all__ = ["slice", "strided_slice", "gather", "unique", "one_hot", "where", "select",
           "boolean_mask"]

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


# -- strided slice specs ------------------------------------------------------------------------------
# A spec is what one strided slice selects, entry by entry of its sparse form:
#   Ellipsis, None (new axis), ("index", i) (shrinks the dimension away), or
#   ("slice", start, stop, step) with None for a masked (open) bound.
# An int/bound that is not known at graph time is _UNKNOWN.
_UNKNOWN = object()


def _spec(begin: Sequence, end: Sequence, strides: Sequence, masks: Sequence[int],
          where: str) -> list:
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask = masks
    if not len(begin) == len(end) == len(strides):
        raise ValueError(f"Expected begin, end, and strides to be 1D equal size tensors, but got "
                         f"shapes [{len(begin)}], [{len(end)}], and [{len(strides)}] instead. "
                         f"{where}")
    entries: list = []
    seen_ellipsis = False
    for i in range(len(begin)):
        bit = 1 << i
        if ellipsis_mask & bit:
            if seen_ellipsis:
                raise ValueError(f"Multiple ellipses in slice spec not allowed {where}")
            seen_ellipsis = True
            entries.append(Ellipsis)
        elif new_axis_mask & bit:
            entries.append(None)
        elif shrink_mask & bit:
            entries.append(("index", _UNKNOWN if begin[i] is None else int(begin[i])))
        else:
            step = _UNKNOWN if strides[i] is None else int(strides[i])
            if step == 0:
                raise ValueError(f"strides[{i}] must be non-zero {where}")
            start = None if begin_mask & bit else (_UNKNOWN if begin[i] is None else int(begin[i]))
            stop = None if end_mask & bit else (_UNKNOWN if end[i] is None else int(end[i]))
            entries.append(("slice", start, stop, step))
    return entries


def _numpy_key(entries: list) -> tuple:
    """The numpy index equivalent to a fully known spec (numpy clamps slices as TF does)."""
    key = []
    for e in entries:
        if e is Ellipsis or e is None:
            key.append(e)
        elif e[0] == "index":
            key.append(e[1])
        else:
            key.append(builtins.slice(e[1], e[2], e[3]))
    return tuple(key)


def _spec_output_dims(entries: list, in_dims: Optional[List[Optional[int]]], where: str
                      ) -> Optional[List[Optional[int]]]:
    """Static output dims of a strided slice (None entries unknown); None for unknown rank."""
    consumed = sum(1 for e in entries if e is not None and e is not Ellipsis)
    if in_dims is None:
        return None
    if consumed > len(in_dims):
        raise ValueError(f"Index out of range using input dim {len(in_dims)}; input has only "
                         f"{len(in_dims)} dims {where}")
    if Ellipsis not in entries:
        entries = entries + [Ellipsis]
    out: List[Optional[int]] = []
    dim = 0
    for e in entries:
        if e is None:
            out.append(1)
        elif e is Ellipsis:
            n = len(in_dims) - consumed
            out.extend(in_dims[dim:dim + n])
            dim += n
        elif e[0] == "index":
            d, i = in_dims[dim], e[1]
            if d is not None and i is not _UNKNOWN and not -d <= i < d:
                raise ValueError(f"slice index {i} of dimension {dim} out of bounds. {where}")
            dim += 1
        else:
            d = in_dims[dim]
            if d is None or any(v is _UNKNOWN for v in e[1:]):
                out.append(None)
            else:
                out.append(len(range(*builtins.slice(e[1], e[2], e[3]).indices(d))))
            dim += 1
    return out


def _op_spec(op) -> Tuple[Optional[list], bool]:
    """(spec entries or None, fully known) for a StridedSlice/StridedSliceGrad op."""
    begin_t, end_t, strides_t = op.inputs[1:4]  # after the input (StridedSlice) or shape (Grad)
    values = [_partial_shape_values(t) for t in (begin_t, end_t, strides_t)]
    if any(v is None for v in values):
        return None, False
    masks = [op.get_attr(m) for m in _MASKS]
    entries = _spec(*values, masks, where=f"for '{op.name}' (op: '{op.type}')")
    known = all(v is not None for vs in values for v in vs)
    return entries, known


def _static_slice_of_list(op, dims: List[Optional[int]]) -> Optional[List[Optional[int]]]:
    """For constant folding of shape(x)[a:b]: the slice of a Python list of dims, if it is a
    plain known 1-D slice; else None."""
    entries, known = _op_spec(op)
    if not known or len(entries) != 1 or entries[0] is None or entries[0] is Ellipsis \
            or entries[0][0] != "slice":
        return None
    return dims[_numpy_key(entries)[0]]


# -- StridedSlice, StridedSliceGrad ----------------------------------------------------------------------
def _strided_slice_attrs(**masks) -> dict:
    return {m: int(masks.get(m, 0)) for m in _MASKS}


@register_op("StridedSlice")
def _strided_slice_shape(op):
    x, begin_t, end_t, strides_t = op.inputs
    for t, what in ((begin_t, "begin"), (end_t, "end"), (strides_t, "strides")):
        _check_index_dtype(op, t, what)
        _check_rank(op, t, (1,), what)
    entries, _ = _op_spec(op)
    if entries is None:
        return [(x.dtype, TensorShape(None))]
    in_dims = x.shape.as_list() if x.shape.ndims is not None else None
    dims = _spec_output_dims(entries, in_dims, f"for '{op.name}' (op: 'StridedSlice') with "
                                               f"input shapes: {_input_shapes(op)}.")
    return [(x.dtype, TensorShape(dims))]


@register_gradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x, begin_t, end_t, strides_t = op.inputs
    masks = {m: op.get_attr(m) for m in _MASKS}
    dx = _new_op("StridedSliceGrad", [shape(x, out_type=begin_t.dtype), begin_t, end_t, strides_t,
                                      grad], masks, name="StridedSliceGrad").outputs[0]
    return [dx, None, None, None]


@register_op("StridedSliceGrad")
def _strided_slice_grad_shape(op):
    shape_t, begin_t, end_t, strides_t, dy = op.inputs
    _check_index_dtype(op, shape_t, "shape")
    return [(dy.dtype, _shape_from_tensor(shape_t))]


@register_gradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    _, begin_t, end_t, strides_t, _ = op.inputs
    masks = {m: op.get_attr(m) for m in _MASKS}
    return [None, None, None, None,
            strided_slice(grad, begin_t, end_t, strides_t, **masks)]


def strided_slice(input_, begin, end, strides=None, begin_mask: int = 0, end_mask: int = 0,
                  ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0,
                  var=None, name: Optional[str] = None) -> Tensor:
    """The numpy-style slice ``input_[begin:end:strides]`` with TensorFlow's bit masks."""
    x = convert_to_tensor(input_)
    begin_t = _to_int_tensor(begin, "begin", "begin")
    end_t = _to_int_tensor(end, "end", "end")
    if strides is None:
        n = begin_t.shape.as_list()[0] if begin_t.shape.ndims == 1 else None
        if n is None:
            raise ValueError("strided_slice: strides must be given when the length of begin "
                             "is not known statically")
        strides = [1] * n
    strides_t = _to_int_tensor(strides, "strides", "strides")
    attrs = _strided_slice_attrs(begin_mask=begin_mask, end_mask=end_mask,
                                 ellipsis_mask=ellipsis_mask, new_axis_mask=new_axis_mask,
                                 shrink_axis_mask=shrink_axis_mask)
    return _new_op("StridedSlice", [x, begin_t, end_t, strides_t], attrs,
                   name=name or "StridedSlice").outputs[0]


_BAD_INDEX = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
              "tf.int32/tf.int64 tensors are valid indices, got {!r}")


def _check_index(idx):
    if isinstance(idx, (int, np.integer)) and not isinstance(idx, (bool, np.bool_)):
        return int(idx)
    if isinstance(idx, Dimension) and idx.value is not None:
        return idx.value
    if _is_tensorlike(idx):
        t = convert_to_tensor(idx)
        if t.dtype in (dtypes.int32, dtypes.int64) and t.shape.ndims in (None, 0):
            return t
    raise TypeError(_BAD_INDEX.format(idx))


def _slice_helper(tensor, slice_spec, var=None) -> Tensor:
    """``tensor[slice_spec]``: ints, slices with steps, ``...``, ``tf.newaxis`` and scalar int
    tensors, as numpy basic indexing."""
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for index, s in enumerate(slice_spec):
        bit = 1 << index
        if isinstance(s, builtins.slice):
            # a[:] may arrive as slice(None, sys.maxsize, None) from old code paths.
            if s.start is not None and (_is_tensorlike(s.start) or s.start != sys.maxsize):
                begin.append(_check_index(s.start))
            else:
                begin.append(0)
                masks["begin_mask"] |= bit
            if s.stop is not None and (_is_tensorlike(s.stop) or s.stop != sys.maxsize):
                end.append(_check_index(s.stop))
            else:
                end.append(0)
                masks["end_mask"] |= bit
            strides.append(1 if s.step is None else _check_index(s.step))
        elif s is Ellipsis:
            begin.append(0), end.append(0), strides.append(1)
            masks["ellipsis_mask"] |= bit
        elif s is None:
            begin.append(0), end.append(0), strides.append(1)
            masks["new_axis_mask"] |= bit
        else:
            s = _check_index(s)
            # TF ignores `end` of a shrunk axis (it uses begin + 1), so no Add op is needed.
            begin.append(s), end.append(s if _is_tensorlike(s) else s + 1), strides.append(1)
            masks["shrink_axis_mask"] |= bit
    values = [tensor] + [v for v in begin + end + strides if _is_tensorlike(v)]
    with name_scope(None, "strided_slice", values) as scope:
        if begin:
            packed = [_to_int_tensor(v, n, n) for v, n in ((begin, "stack"), (end, "stack_1"),
                                                             (strides, "stack_2"))]
            if any(t.dtype is dtypes.int64 for t in packed):
                from .math_ops import cast
                packed = [t if t.dtype is dtypes.int64 else cast(t, dtypes.int64) for t in packed]
        else:
            empty = constant([], dtype=dtypes.int32)
            packed = [empty, empty, empty]
        return strided_slice(tensor, *packed, name=scope, **masks)


# -- Slice -----------------------------------------------------------------------------------------------
@register_op("Slice")
def _slice_shape(op):
    x, begin_t, size_t = op.inputs
    _check_index_dtype(op, begin_t, "begin")
    _check_index_dtype(op, size_t, "size")
    if begin_t.dtype is not size_t.dtype:
        raise TypeError(f"begin and size of '{op.name}' (op: 'Slice') must have the same dtype, "
                        f"got {begin_t.dtype.name} and {size_t.dtype.name}")
    _check_rank(op, begin_t, (1,), "begin")
    _check_rank(op, size_t, (1,), "size")
    begin, sizes = _partial_shape_values(begin_t), _partial_shape_values(size_t)
    r = x.shape.ndims
    n = next((len(v) for v in (begin, sizes) if v is not None), None)
    if r is not None and n is not None and r != n:
        raise ValueError(f"Expected begin and size arguments to be 1-D tensors of size {r}, but "
                         f"got shapes [{n}] instead. for '{op.name}' (op: 'Slice') with input "
                         f"shapes: {_input_shapes(op)}.")
    r = r if r is not None else n
    if r is None:
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_list() if x.shape.ndims is not None else [None] * r
    begin = begin or [None] * r
    sizes = sizes or [None] * r
    out = []
    for i, (d, b, s) in enumerate(zip(dims, begin, sizes)):
        if b is not None and (b < 0 or d is not None and b > d):
            raise ValueError(f"Expected begin[{i}] in [0, {d if d is not None else '?'}], but "
                             f"got {b} for '{op.name}' (op: 'Slice')")
        if s is not None and s < -1:
            raise ValueError(f"Expected size[{i}] >= -1, but got {s} for '{op.name}' (op: 'Slice')")
        if s is not None and s >= 0:
            if d is not None and b is not None and b + s > d:
                raise ValueError(f"Expected size[{i}] in [0, {d - b}], but got {s} for "
                                 f"'{op.name}' (op: 'Slice')")
            out.append(s)
        elif s == -1 and d is not None and b is not None:
            out.append(d - b)
        else:
            out.append(None)
    return [(x.dtype, TensorShape(out))]


@register_gradient("Slice")
def _slice_grad(op, grad):
    x, begin_t, _ = op.inputs
    begin = _const(begin_t)
    out_shape = op.outputs[0].shape
    if begin is not None and x.shape.is_fully_defined() and out_shape.is_fully_defined():
        paddings = [[b, d - b - o] for b, d, o in
                    zip(begin.tolist(), x.shape.as_list(), out_shape.as_list())]
        return [pad(grad, np.array(paddings, dtype=begin.dtype)), None, None]
    from .math_ops import subtract
    column = stack([rank(x), 1])
    before = reshape(begin_t, column)
    after = reshape(subtract(subtract(shape(x, out_type=begin_t.dtype),
                                      shape(op.outputs[0], out_type=begin_t.dtype)), begin_t),
                    column)
    return [pad(grad, concat([before, after], 1)), None, None]


def slice(input_, begin, size, name: Optional[str] = None) -> Tensor:  # noqa: A001
    """``size[i]`` elements from ``begin[i]`` along each dimension (-1: all the rest)."""
    x = convert_to_tensor(input_)
    begin_t = _to_int_tensor(begin, "begin", "begin")
    size_t = _to_int_tensor(size, "size", "size")
    if begin_t.dtype is not size_t.dtype:
        from .math_ops import cast
        begin_t, size_t = cast(begin_t, dtypes.int64), cast(size_t, dtypes.int64)
    return _new_op("Slice", [x, begin_t, size_t], name=name or "Slice").outputs[0]


# -- GatherV2 --------------------------------------------------------------------------------------------
@register_op("GatherV2")
def _gather_shape(op):
    params, indices, axis_t = op.inputs
    _check_index_dtype(op, indices, "indices")
    _check_index_dtype(op, axis_t, "axis")
    _check_rank(op, axis_t, (0,), "axis")
    axis = _const_int(axis_t)
    if params.shape.ndims is None or indices.shape.ndims is None or axis is None:
        return [(params.dtype, TensorShape(None))]
    dims = params.shape.as_list()
    if not dims:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for '{op.name}' "
                         f"(op: 'GatherV2') with input shapes: {_input_shapes(op)}.")
    axis = _core._normalize_axis(op, axis, len(dims))
    return [(params.dtype, TensorShape(dims[:axis] + indices.shape.as_list() + dims[axis + 1:]))]


@register_gradient("GatherV2")
def _gather_grad(op, grad):
    params, indices, axis_t = op.inputs
    axis = _const_int(axis_t)
    r = params.shape.ndims
    if axis is None or r is None:
        raise NotImplementedError(f"Gradient of gather '{op.name}' needs a constant axis and "
                                  "params of known rank.")
    axis %= r
    index_count = indices.shape.num_elements()
    if index_count is None:
        index_count = size(indices)
    flat_indices = indices if indices.shape.ndims == 1 else reshape(indices, [-1])
    if params.shape.is_fully_defined():
        dims = params.shape.as_list()
        values_shape = dims[:axis] + [index_count] + dims[axis + 1:]
        num_segments = dims[axis]
    else:
        p_shape = shape(params)
        values_shape = concat([p_shape[:axis], reshape(index_count, [1]), p_shape[axis + 1:]], 0)
        num_segments = p_shape[axis]
    values = reshape(grad, values_shape)
    if axis == 0:
        # Sparse, as TensorFlow's _GatherV2Grad: the gathered rows' gradients at their rows, so
        # a large embedding's gradient costs the looked-up rows (duplicates summed when used).
        if params.shape.is_fully_defined():
            dims = params.shape.as_list()
            big = builtins.max(dims, default=0) >= 2 ** 31
            dense_shape = constant(np.array(dims, np.int64 if big else np.int32))
        else:
            # Computed with params, so only the shape travels when params is on another task.
            with params.graph.colocate_with(params.op):
                dense_shape = shape(params)
        from ..framework.indexed_slices import IndexedSlices
        return [IndexedSlices(values, flat_indices, dense_shape), None, None]
    from .array_scatter_ops import unsorted_segment_sum
    # Move the gathered axis to the front, sum the slices per index, move it back.
    perm = [axis] + list(range(axis)) + list(range(axis + 1, r))
    summed = unsorted_segment_sum(transpose(values, perm), flat_indices, num_segments)
    return [transpose(summed, np.argsort(perm).astype(np.int32)), None, None]


def gather(params, indices, validate_indices=None, name: Optional[str] = None, axis=0) -> Tensor:
    """Slices of ``params`` along ``axis`` at ``indices``: out[..., i, ...] = params[..., indices[i], ...]."""
    p = convert_to_tensor(params)
    idx = convert_to_tensor(indices) if _is_tensorlike(indices) else \
        _to_int_tensor(indices, "indices", "indices")
    axis_t = _to_int_tensor(axis, "axis", "axis")
    return _new_op("GatherV2", [p, idx, axis_t], name=name or "GatherV2").outputs[0]


# -- Unique ----------------------------------------------------------------------------------------------
@register_op("Unique")
def _unique_shape(op):
    x = op.inputs[0]
    _check_rank(op, x, (1,), "x")
    out_idx = op.get_attr("out_idx")
    if out_idx not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"out_idx must be int32 or int64, got {out_idx.name} for '{op.name}' "
                        "(op: 'Unique')")
    return [(x.dtype, TensorShape([None])), (out_idx, x.shape)]


# Its index output is not differentiable and TensorFlow 1.x declares no gradient for it.
NotDifferentiable("Unique")


def unique(x, out_idx=dtypes.int32, name: Optional[str] = None) -> Tuple[Tensor, Tensor]:
    """(y, idx): the distinct elements of the vector x in order of first occurrence, and for
    each element of x its position in y (x == gather(y, idx))."""
    t = convert_to_tensor(x)
    result = _new_op("Unique", [t], {"T": t.dtype, "out_idx": dtypes.as_dtype(out_idx)},
                     name=name or "Unique")
    return result.outputs[0], result.outputs[1]


# -- OneHot ------------------------------------------------------------------------------------------------
@register_op("OneHot")
def _one_hot_shape(op):
    indices, depth_t, on_t, off_t = op.inputs
    if indices.dtype not in (dtypes.uint8, dtypes.int32, dtypes.int64):
        raise TypeError(f"Value passed to parameter 'indices' of 'OneHot' Op '{op.name}' has "
                        f"DataType {indices.dtype.name} not in list of allowed values: uint8, "
                        "int32, int64")
    _check_rank(op, depth_t, (0,), "depth")
    if on_t.dtype is not off_t.dtype:
        raise TypeError(f"dtype {on_t.dtype.name} of on_value does not match dtype "
                        f"{off_t.dtype.name} of off_value for '{op.name}' (op: 'OneHot')")
    depth = _const_int(depth_t)
    if depth is not None and depth < 0:
        raise ValueError(f"depth must be non-negative, got: {depth} for '{op.name}' (op: 'OneHot')")
    axis = op.get_attr("axis")
    if indices.shape.ndims is None:
        return [(on_t.dtype, TensorShape(None))]
    dims = indices.shape.as_list()
    if not -1 <= axis <= len(dims):
        raise ValueError(f"Expected axis to be -1 or between [0, {len(dims) + 1}).  But received: "
                         f"{axis} for '{op.name}' (op: 'OneHot')")
    axis = len(dims) if axis == -1 else axis
    return [(on_t.dtype, TensorShape(dims[:axis] + [depth] + dims[axis:]))]


@register_gradient("OneHot")
def _one_hot_grad(op, grad):
    return [None, None, None, None]


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None,
            name: Optional[str] = None) -> Tensor:
    """One-hot vectors of length ``depth`` for ``indices`` (out-of-range indices: all off)."""
    with name_scope(name, "one_hot", [indices, depth, on_value, off_value]) as scope:
        idx = convert_to_tensor(indices) if _is_tensorlike(indices) else \
            _to_int_tensor(indices, "indices", "indices")
        dtype = None if dtype is None else dtypes.as_dtype(dtype)

        def typed(value, what):
            if value is None or _is_tensorlike(value) or isinstance(value, (np.ndarray, np.generic)):
                t = None if value is None else convert_to_tensor(value, name=what)
                if t is not None and dtype is not None and t.dtype is not dtype:
                    raise TypeError(f"dtype {t.dtype.name} of {what} does not match dtype "
                                    f"parameter {dtype.name}")
                return t
            return convert_to_tensor(value, dtype=dtype, name=what)
        on_t, off_t = typed(on_value, "on_value"), typed(off_value, "off_value")
        if dtype is None:
            dtype = on_t.dtype if on_t is not None else off_t.dtype if off_t is not None \
                else dtypes.float32
        on_t = on_t if on_t is not None else constant(True if dtype.is_bool else 1, dtype=dtype,
                                                      name="on_value")
        off_t = off_t if off_t is not None else constant(False if dtype.is_bool else 0,
                                                         dtype=dtype, name="off_value")
        if on_t.dtype is not off_t.dtype:
            raise TypeError(f"dtype {on_t.dtype.name} of on_value does not match dtype "
                            f"{off_t.dtype.name} of off_value")
        depth_t = _to_int_tensor(depth, "depth", "depth")
        if depth_t.dtype is not dtypes.int32:
            from .math_ops import cast
            depth_t = cast(depth_t, dtypes.int32)
        return _new_op("OneHot", [idx, depth_t, on_t, off_t],
                       {"axis": -1 if axis is None else int(axis)}, name=scope).outputs[0]


# -- Where, Select, SelectV2 --------------------------------------------------------------------------------
@register_op("Where")
def _where_shape(op):
    x = op.inputs[0]
    return [(dtypes.int64, TensorShape([None, x.shape.ndims]))]


NotDifferentiable("Where")


@register_op("Select")
def _select_shape(op):
    cond, t, e = op.inputs
    _check_bool(op, cond)
    _check_same(op, t, e)
    if not t.shape.is_compatible_with(e.shape):
        raise ValueError(f"'then' and 'else' must have the same size.  but received: "
                         f"{list_str(t.shape)} vs. {list_str(e.shape)} for '{op.name}' "
                         f"(op: 'Select')")
    out = t.shape.merge_with(e.shape)
    cr, r = cond.shape.ndims, out.ndims
    if cr is not None and r is not None and cr not in (0, r):
        first = out.as_list()[0] if r else None
        if cr != 1 or r == 0:
            raise ValueError(f"'condition' must be a scalar, a vector matching the first "
                             f"dimension of 'then', or have its shape; got {list_str(cond.shape)} "
                             f"and {list_str(out)} for '{op.name}' (op: 'Select')")
        n = cond.shape.as_list()[0]
        if n is not None and first is not None and n != first:
            raise ValueError(f"Dimension 0 in both shapes must be equal, but are {n} and {first} "
                             f"for '{op.name}' (op: 'Select') with input shapes: "
                             f"{_input_shapes(op)}.")
    elif cr == r and cr is not None and not cond.shape.is_compatible_with(out):
        raise ValueError(f"Shapes must be equal: {list_str(cond.shape)} and {list_str(out)} for "
                         f"'{op.name}' (op: 'Select') with input shapes: {_input_shapes(op)}.")
    return [(t.dtype, out)]


@register_op("SelectV2")
def _select_v2_shape(op):
    cond, t, e = op.inputs
    _check_bool(op, cond)
    _check_same(op, t, e)
    out = broadcast_shapes(broadcast_shapes(cond.shape, t.shape, op.name), e.shape, op.name)
    return [(t.dtype, out)]


def _check_bool(op, cond: Tensor) -> None:
    if cond.dtype is not dtypes.bool:
        raise TypeError(f"Input 'condition' of '{op.type}' Op '{op.name}' has type "
                        f"{cond.dtype.name} that does not match expected type of bool.")


def _check_same(op, t: Tensor, e: Tensor) -> None:
    if t.dtype is not e.dtype:
        raise TypeError(f"Input 'e' of '{op.type}' Op '{op.name}' has type {e.dtype.name} that "
                        f"does not match type {t.dtype.name} of argument 't'.")


@register_gradient("Select")
def _select_grad(op, grad):
    cond = op.inputs[0]
    zeros = zeros_like(grad)
    return [None, select(cond, grad, zeros), select(cond, zeros, grad)]


@register_gradient("SelectV2")
def _select_v2_grad(op, grad):
    from .math_ops import _sum_to_shape
    cond, t, e = op.inputs
    zeros = zeros_like(grad)
    return [None, _sum_to_shape(_select_v2(cond, grad, zeros), t),
            _sum_to_shape(_select_v2(cond, zeros, grad), e)]


def _select_v2(cond, t, e, name: Optional[str] = None) -> Tensor:
    return _new_op("SelectV2", [cond, t, e], name=name or "SelectV2").outputs[0]


def _select_is_tf1_compatible(cond: Tensor, t: Tensor, e: Tensor) -> bool:
    if not t.shape.is_compatible_with(e.shape):
        return False
    cr, r = cond.shape.ndims, t.shape.ndims
    if cr is None or r is None or cr == 0:
        return True
    if cr == r:
        return cond.shape.is_compatible_with(t.shape.merge_with(e.shape))
    return cr == 1 and r >= 1 and TensorShape([t.shape.as_list()[0]]).is_compatible_with(cond.shape)


def select(condition, t, e, name: Optional[str] = None) -> Tensor:
    """Elements of ``t`` where ``condition`` is true, else of ``e`` (TF 0.x/1.x Select: the
    condition is a scalar, a vector along dimension 0, or of t's shape). Shapes that only
    broadcast (numpy rules) are accepted as well."""
    cond = convert_to_tensor(condition)
    if _is_tensorlike(t) or not _is_tensorlike(e):
        t = convert_to_tensor(t)
        e = convert_to_tensor(e, dtype=t.dtype) if not _is_tensorlike(e) else convert_to_tensor(e)
    else:
        e = convert_to_tensor(e)
        t = convert_to_tensor(t, dtype=e.dtype)
    if _select_is_tf1_compatible(cond, t, e):
        return _new_op("Select", [cond, t, e], name=name or "Select").outputs[0]
    return _select_v2(cond, t, e, name=name or "Select")


def where(condition, x=None, y=None, name: Optional[str] = None) -> Tensor:
    """With x and y: ``select(condition, x, y)``. Without: the coordinates of the true (nonzero)
    elements of ``condition``, an int64 tensor of shape [num_true, rank]."""
    if x is None and y is None:
        cond = convert_to_tensor(condition)
        return _new_op("Where", [cond], name=name or "Where").outputs[0]
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return select(condition, x, y, name=name)


# -- boolean_mask -----------------------------------------------------------------------------------------
def boolean_mask(tensor, mask, name: str = "boolean_mask", axis=None) -> Tensor:
    """The elements (or slices) of ``tensor`` where the bool ``mask`` is true, flattened over the
    masked dimensions: ``tensor[mask]`` in numpy."""
    with name_scope(name, values=[tensor, mask]):
        x = convert_to_tensor(tensor, name="tensor")
        m = convert_to_tensor(mask, name="mask")
        if m.dtype is not dtypes.bool:
            raise TypeError(f"boolean_mask: mask must be a bool tensor, got {m.dtype.name}")
        k = m.shape.ndims
        if k == 0:
            raise ValueError("mask cannot be scalar.")
        if k is None:
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None.  E.g. shape=[None] is ok, but shape=None is "
                             "not.")
        axis = 0 if axis is None else int(axis)
        xs = x.shape
        if xs.ndims is not None:
            xs[axis:axis + k].assert_is_compatible_with(m.shape)
        masked = m.shape.num_elements()
        if masked is None and xs.ndims is not None:
            masked = xs[axis:axis + k].num_elements()
        lead = -1 if masked is None else masked
        if xs.is_fully_defined():
            dims = xs.as_list()
            new_shape = dims[:axis] + [lead] + dims[axis + k:]
        else:
            s = shape(x)
            new_shape = concat([s[:axis], constant([lead], dtype=dtypes.int32), s[axis + k:]], 0)
        flat = reshape(x, new_shape)
        indices = squeeze(where(reshape(m, [-1])), axis=[1])
        return gather(flat, indices, axis=axis)


# -- Tensor[...] ------------------------------------------------------------------------------------------
Tensor.__getitem__ = _slice_helper
