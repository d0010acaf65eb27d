"""Array ops: constants, placeholders, identity, shapes, reshaping, filling and transposing.

The rest of the family lives beside this module and is re-exported from here:
``array_join_ops`` (concat, split, stack, tile, pad, reverse), ``array_index_ops`` (slicing,
``Tensor.__getitem__``, gather, one_hot, where, boolean_mask) and ``array_scatter_ops``
(unsorted_segment_sum, gather_nd, scatter_nd, sparse_to_dense).
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ..framework import dtypes
from ..framework.ops import (Tensor, convert_to_tensor, name_scope, numpy_to_tensor_value,
                             register_tensor_conversion_function)
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_gradient, register_op
from ..framework.tensor_shape import Dimension, TensorShape, as_shape, broadcast_shapes, list_str
from . import _shapes

__all__ = ["constant", "placeholder", "placeholder_with_default", "identity", "stop_gradient",
           "shape", "size", "rank", "reshape", "fill", "zeros", "ones", "zeros_like", "ones_like",
           "expand_dims", "squeeze", "transpose", "invert_permutation", "broadcast_to",
           "broadcast_static_shape", "newaxis"]

newaxis = None
_INDEX_TYPES = (dtypes.int32, dtypes.int64)
# Below this many elements, zeros/ones of a static shape are a Const (as TensorFlow 1.x does).
_SMALL_CONSTANT = 1000


# -- helpers shared by the array ops -----------------------------------------------------------------
def _is_tensorlike(v) -> bool:
    return isinstance(v, Tensor) or hasattr(v, "_as_graph_element")


def _const(t: Tensor) -> Optional[np.ndarray]:
    """The value of ``t`` when it is known while building the graph, else None."""
    value = _shapes.constant_value(t)
    if value is not None:
        return value
    op = t.op
    if op.type in ("Identity", "StopGradient"):
        return _const(op.inputs[0])
    if op.type == "Pack":
        parts = [_const(x) for x in op.inputs]
        if all(p is not None for p in parts):
            return np.stack(parts, axis=op.get_attr("axis"))
    return None


def _const_int(t: Tensor) -> Optional[int]:
    value = _const(t)
    if value is None or value.size != 1:
        return None
    return int(value.reshape(()))


def _partial_shape_values(t: Tensor) -> Optional[List[Optional[int]]]:
    """The entries of a 1-D int tensor as far as known at graph time: an int (-1 kept) or None
    for each entry; None when even the length is unknown."""
    value = _const(t)
    if value is not None:
        return [int(v) for v in value.reshape(-1)] if value.ndim == 1 else None
    op = t.op
    if op.type == "Shape":
        s = op.inputs[0].shape
        return None if s.ndims is None else s.as_list()
    if op.type == "Pack" and op.get_attr("axis") == 0:
        return [_const_int(x) if x.shape.ndims == 0 else None for x in op.inputs]
    if op.type == "ConcatV2" and _const_int(op.inputs[-1]) in (0, -1):
        parts = [_partial_shape_values(x) for x in op.inputs[:-1]]
        if all(p is not None for p in parts):
            return [d for p in parts for d in p]
    if op.type == "StridedSlice" and op.inputs[0].op.type == "Shape":
        from .array_index_ops import _static_slice_of_list
        dims = _partial_shape_values(op.inputs[0])
        if dims is not None:
            sliced = _static_slice_of_list(op, dims)
            if sliced is not None:
                return sliced
    if t.shape.ndims == 1 and t.shape.as_list()[0] is not None:
        return [None] * t.shape.as_list()[0]
    return None


def _shape_from_tensor(t: Tensor) -> TensorShape:
    """The static shape described by a 1-D int tensor (a shape argument): known entries are
    kept, unknown or -1 entries are unknown dimensions, an unknown length is an unknown rank."""
    values = _partial_shape_values(t)
    if values is None:
        return TensorShape(None)
    return TensorShape([None if v is None or v < 0 else v for v in values])


def _plain_dim(v):
    if isinstance(v, Dimension):
        if v.value is None:
            raise ValueError("Cannot convert an unknown Dimension to a Tensor.")
        return v.value
    if isinstance(v, np.generic):
        return v.item()
    return v


def _to_int_tensor(value, name: str, what: str = "shape") -> Tensor:
    """A shape-like argument (list of ints and/or scalar int tensors, TensorShape, ndarray or
    1-D int tensor) as an int32/int64 tensor; lists holding tensors are stacked (autopacking)."""
    if _is_tensorlike(value):
        t = convert_to_tensor(value)
        if t.dtype not in _INDEX_TYPES:
            raise TypeError(f"{what} must be an int32 or int64 tensor, got {t.dtype.name} "
                            f"tensor {t.name}.")
        return t
    if isinstance(value, TensorShape):
        if not value.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {value} to a Tensor.")
        value = value.as_list()
    if isinstance(value, Dimension):
        value = _plain_dim(value)
    if isinstance(value, (list, tuple)):
        items = [_plain_dim(v) for v in value]
        tensors = [convert_to_tensor(v) for v in items if _is_tensorlike(v)]
        if tensors:
            from .array_join_ops import stack
            dtype = dtypes.int64 if any(t.dtype is dtypes.int64 for t in tensors) else dtypes.int32
            return stack([_int_scalar(v, dtype, what) for v in items], name=name)
        value = items
    arr = np.asarray(value)
    if arr.size == 0:
        arr = arr.astype(np.int32)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers (int32 or int64), got {value!r}")
    if arr.dtype == np.int64 and isinstance(value, np.ndarray):
        return constant(arr, name=name)       # an int64 array keeps its dtype
    big = arr.size and (arr.max() > np.iinfo(np.int32).max or arr.min() < np.iinfo(np.int32).min)
    return constant(arr.astype(np.int64 if big else np.int32), name=name)


def _int_scalar(v, dtype: dtypes.DType, what: str) -> Tensor:
    t = convert_to_tensor(v) if _is_tensorlike(v) else constant(v, dtype=dtype)
    if t.dtype is not dtype:
        if t.dtype not in _INDEX_TYPES:
            raise TypeError(f"{what} entries must be int32 or int64 scalars, got {t.dtype.name} "
                            f"tensor {t.name}.")
        from .math_ops import cast
        t = cast(t, dtype)
    return t


def _check_index_dtype(op, t: Tensor, what: str) -> None:
    if t.dtype not in _INDEX_TYPES:
        raise TypeError(f"Value passed to parameter '{what}' of '{op.type}' Op '{op.name}' has "
                        f"DataType {t.dtype.name} not in list of allowed values: int32, int64")


def _check_rank(op, t: Tensor, ranks: Sequence[int], what: str) -> None:
    r = t.shape.ndims
    if r is not None and r not in ranks:
        want = " or ".join(str(x) for x in ranks)
        raise ValueError(f"Shape must be rank {want} but is rank {r} for '{op.name}' (op: "
                         f"'{op.type}') with input shapes: {_input_shapes(op)}. ({what})")


def _input_shapes(op) -> str:
    return ", ".join(list_str(t.shape) for t in op.inputs)


def _normalize_axis(op, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{what} {axis} is out of bounds [{-rank}, {rank}) for '{op.name}' "
                         f"(op: '{op.type}') with input shapes: {_input_shapes(op)}.")
    return axis + rank if axis < 0 else axis


# -- Const ------------------------------------------------------------------------------------------
@register_op("Const")
def _const_shape(op):
    value = op.get_attr("value")
    return [(op.get_attr("dtype"), value.shape)]


NotDifferentiable("Const")


def constant(value, dtype=None, shape=None, name: str = "Const", verify_shape: bool = False
             ) -> Tensor:
    """A constant tensor. With ``shape``, a scalar is broadcast, a list with fewer elements is
    padded with its last element (TensorFlow 1.x), and one with as many is reshaped."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    given = value
    value = numpy_to_tensor_value(value, dtype)
    if shape is not None:
        shape = tuple(int(d) for d in as_shape(shape).as_list())
        value = _fit_to_shape(value, shape, name, verify_shape)
    tf_dtype = dtypes.as_dtype(value.dtype) if dtype is None else dtype
    if isinstance(given, np.ndarray) and np.may_share_memory(value, given):
        value = value.copy()  # the caller may change their array later
    value.setflags(write=False)  # kernels hand this buffer out; nothing may write into it
    return _new_op("Const", [], {"value": value, "dtype": tf_dtype}, name=name).outputs[0]


# TF 1.x converts a static shape, or one of its dimensions, to an int tensor wherever a tensor
# is expected (tf.one_hot(labels, depth=x.shape[0])): int32 unless a dimension needs int64.
def _shape_index_dtype(dims, dtype, given) -> dtypes.DType:
    big = next((d for d in dims if d >= 2 ** 31), None)
    if dtype is None:
        return dtypes.int64 if big else dtypes.int32
    if dtype not in _INDEX_TYPES:
        raise TypeError(f"Cannot convert a TensorShape to dtype: {dtype.name} ({given})")
    if dtype is dtypes.int32 and big:
        raise ValueError(f"Cannot convert a TensorShape to dtype int32; a dimension is too "
                         f"large ({big})")
    return dtype


def _tensor_shape_to_tensor(s: TensorShape, dtype=None, name=None, as_ref=False) -> Tensor:
    if not s.is_fully_defined():
        raise ValueError(f"Cannot convert a partially known TensorShape to a Tensor: {s}")
    dims = s.as_list()
    return constant(dims, dtype=_shape_index_dtype(dims, dtype, s), name=name or "shape_as_tensor")


def _dimension_to_tensor(d: Dimension, dtype=None, name=None, as_ref=False) -> Tensor:
    if d.value is None:
        raise ValueError(f"Cannot convert an unknown Dimension to a Tensor: {d}")
    return constant(d.value, dtype=_shape_index_dtype([d.value], dtype, d),
                    name=name or "shape_as_tensor")


register_tensor_conversion_function(TensorShape, _tensor_shape_to_tensor)
register_tensor_conversion_function(Dimension, _dimension_to_tensor)


def _fit_to_shape(value: np.ndarray, shape, name: str, verify_shape: bool) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    if value.shape == shape:
        return value
    if verify_shape:
        raise TypeError(f"Expected Tensor's shape: {shape}, got {value.shape}.")
    if value.size == 1:
        return np.full(shape, value.reshape(()), dtype=value.dtype)
    if value.size == count:
        return value.reshape(shape)
    if 0 < value.size < count:
        flat = np.concatenate([value.reshape(-1), np.repeat(value.reshape(-1)[-1:], count - value.size)])
        return flat.reshape(shape)
    raise TypeError(f"Too many elements provided for constant '{name}'. Needed at most {count}, "
                    f"but received {value.size}")


# -- Placeholder ------------------------------------------------------------------------------------
@register_op("Placeholder")
def _placeholder_shape(op):
    return [(op.get_attr("dtype"), op.get_attr("shape"))]


NotDifferentiable("Placeholder")


def placeholder(dtype, shape=None, name: Optional[str] = None) -> Tensor:
    """A tensor whose value must be fed to Session.run."""
    return _new_op("Placeholder", [], {"dtype": dtypes.as_dtype(dtype), "shape": as_shape(shape)},
                   name=name or "Placeholder").outputs[0]


@register_op("PlaceholderWithDefault")
def _placeholder_with_default_shape(op):
    declared = op.get_attr("shape")
    default = op.inputs[0]
    if not declared.is_compatible_with(default.shape):
        raise ValueError(f"PlaceholderWithDefault '{op.name}': the default value's shape "
                         f"{default.shape} is not compatible with the declared shape {declared}")
    return [(default.dtype, declared)]


@register_gradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op, grad):
    return [grad]


def placeholder_with_default(input, shape, name: Optional[str] = None) -> Tensor:  # noqa: A002
    x = convert_to_tensor(input)
    return _new_op("PlaceholderWithDefault", [x], {"shape": as_shape(shape)},
                   name=name or "PlaceholderWithDefault").outputs[0]


# -- Identity, StopGradient -----------------------------------------------------------------------------
register_op("Identity")(_shapes.unchanged)


@register_gradient("Identity")
def _identity_grad(op, grad):
    return [grad]


def identity(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    x = convert_to_tensor(input)
    return _new_op("Identity", [x], name=name or "Identity").outputs[0]


register_op("StopGradient")(_shapes.unchanged)
NotDifferentiable("StopGradient")


def stop_gradient(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    return _new_op("StopGradient", [convert_to_tensor(input)], name=name or "StopGradient").outputs[0]


# -- Shape, Size, Rank ----------------------------------------------------------------------------------
@register_op("Shape")
def _shape_shape(op):
    rank = op.inputs[0].shape.ndims
    return [(op.get_attr("out_type"), TensorShape([rank]))]


@register_op("Size")
def _size_shape(op):
    return [(op.get_attr("out_type"), TensorShape(()))]


@register_op("Rank")
def _rank_shape(op):
    return [(dtypes.int32, TensorShape(()))]


for _t in ("Shape", "Size", "Rank"):
    NotDifferentiable(_t)


def _out_index_type(out_type) -> dtypes.DType:
    out_type = dtypes.as_dtype(out_type)
    if out_type not in _INDEX_TYPES:
        raise TypeError(f"out_type must be int32 or int64, got {out_type.name}")
    return out_type


def shape(input, name: Optional[str] = None, out_type=dtypes.int32) -> Tensor:  # noqa: A002
    """The shape of ``input`` as a 1-D tensor (a constant when it is fully known statically)."""
    x = convert_to_tensor(input)
    out_type = _out_index_type(out_type)
    if x.shape.is_fully_defined():
        return constant(x.shape.as_list(), dtype=out_type, name=name or "Shape")
    return _new_op("Shape", [x], {"out_type": out_type}, name=name or "Shape").outputs[0]


def size(input, name: Optional[str] = None, out_type=dtypes.int32) -> Tensor:  # noqa: A002
    """The number of elements of ``input`` as a scalar."""
    x = convert_to_tensor(input)
    out_type = _out_index_type(out_type)
    if x.shape.is_fully_defined():
        return constant(x.shape.num_elements(), dtype=out_type, name=name or "Size")
    return _new_op("Size", [x], {"out_type": out_type}, name=name or "Size").outputs[0]


def rank(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """The number of dimensions of ``input`` as an int32 scalar."""
    x = convert_to_tensor(input)
    if x.shape.ndims is not None:
        return constant(x.shape.ndims, dtype=dtypes.int32, name=name or "Rank")
    return _new_op("Rank", [x], name=name or "Rank").outputs[0]


# -- Reshape -----------------------------------------------------------------------------------------
@register_op("Reshape")
def _reshape_shape(op):
    x, shape_t = op.inputs
    _check_index_dtype(op, shape_t, "shape")
    _check_rank(op, shape_t, (1,), "shape")
    target = _partial_shape_values(shape_t)
    if target is None:
        return [(x.dtype, TensorShape(None))]
    return [(x.dtype, TensorShape(_infer_reshape(op, x.shape, target)))]


def _infer_reshape(op, in_shape: TensorShape, target: List[Optional[int]]) -> List[Optional[int]]:
    def where() -> str:
        shown = "[" + ",".join("?" if d is None else str(d) for d in target) + "]"
        return (f"for '{op.name}' (op: 'Reshape') with input shapes: {_input_shapes(op)} and with "
                f"input tensors computed as partial shapes: input[1] = {shown}.")
    if target.count(-1) > 1:
        raise ValueError(f"Cannot infer multiple unknown dimensions in shape {target} {where()}")
    for i, d in enumerate(target):
        if d is not None and d < -1:
            raise ValueError(f"Size {i} must be non-negative, not {d} {where()}")
    n = in_shape.num_elements()
    unknown = [i for i, d in enumerate(target) if d is None or d == -1]
    known = int(np.prod([d for d in target if d is not None and d >= 0], dtype=np.int64))
    dims = [None if d is None or d < 0 else d for d in target]
    if not unknown:
        if n is not None and n != known:
            raise ValueError(f"Cannot reshape a tensor with {n} elements to shape {target} "
                             f"({known} elements) {where()}")
    elif len(unknown) == 1 and n is not None:
        if known == 0:
            if n != 0:
                raise ValueError(f"Cannot reshape a tensor with {n} elements to shape {target} "
                                 f"(0 elements) {where()}")
        elif n % known:
            raise ValueError(f"Dimension size must be evenly divisible by {known} but is {n} "
                             f"{where()}")
        else:
            dims[unknown[0]] = n // known
    return dims


@register_gradient("Reshape")
def _reshape_grad(op, grad):
    return [reshape(grad, shape(op.inputs[0])), None]


def reshape(tensor, shape, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's names
    """``tensor`` with the same elements in a new shape; one entry of ``shape`` may be -1."""
    x = convert_to_tensor(tensor)
    shape_t = _to_int_tensor(shape, "shape")
    return _new_op("Reshape", [x, shape_t], name=name or "Reshape").outputs[0]


# -- Fill, ZerosLike, OnesLike, zeros, ones -------------------------------------------------------------
@register_op("Fill")
def _fill_shape(op):
    dims, value = op.inputs
    _check_index_dtype(op, dims, "dims")
    _check_rank(op, dims, (1,), "dims")
    if value.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {value.shape.ndims} for '{op.name}' "
                         f"(op: 'Fill') with input shapes: {_input_shapes(op)}.")
    static = _const(dims)
    if static is not None and np.any(static < 0):
        raise ValueError(f"Fill dimensions must be >= 0, got {static.tolist()} for '{op.name}' "
                         "(op: 'Fill')")
    return [(value.dtype, _shape_from_tensor(dims))]


@register_gradient("Fill")
def _fill_grad(op, grad):
    from .math_ops import reduce_sum
    return [None, reduce_sum(grad)]


def fill(dims, value, name: Optional[str] = None) -> Tensor:
    """A tensor of shape ``dims`` with every element ``value``."""
    dims_t = _to_int_tensor(dims, "dims", "dims")
    value_t = convert_to_tensor(value)
    return _new_op("Fill", [dims_t, value_t], name=name or "Fill").outputs[0]


register_op("ZerosLike")(_shapes.unchanged)
register_op("OnesLike")(_shapes.unchanged)
NotDifferentiable("ZerosLike")
NotDifferentiable("OnesLike")


def _static_dims(shape_arg) -> Optional[List[int]]:
    """The dims of a shape argument given as Python values (no tensors), else None."""
    if _is_tensorlike(shape_arg):
        return None
    if isinstance(shape_arg, TensorShape):
        return shape_arg.as_list() if shape_arg.is_fully_defined() else None
    if isinstance(shape_arg, (int, np.integer)):
        return [int(shape_arg)]
    try:
        items = [_plain_dim(v) for v in shape_arg]
    except TypeError:
        return None
    if any(_is_tensorlike(v) or not isinstance(v, (int, np.integer)) for v in items):
        return None
    return [int(v) for v in items]


def _filled(shape_arg, value, dtype: dtypes.DType, name: str) -> Tensor:
    dims = _static_dims(shape_arg)
    if dims is not None and any(d < 0 for d in dims):
        raise ValueError(f"{name}: dimensions must be >= 0, got {dims}")
    if dims is not None and int(np.prod(dims, dtype=np.int64)) < _SMALL_CONSTANT:
        return constant(value, dtype=dtype, shape=dims, name=name)
    dims_t = _to_int_tensor(dims if dims is not None else shape_arg, "shape")
    return fill(dims_t, constant(value, dtype=dtype), name=name)


def _typed_value(dtype: dtypes.DType, one: bool):
    if dtype is dtypes.string:
        if one:
            raise TypeError("ones/ones_like are not defined for string tensors")
        return b""
    if dtype.is_bool:
        return one
    return 1 if one else 0


def zeros(shape, dtype=dtypes.float32, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """A tensor of zeros (False for bool, b'' for strings) of the given shape."""
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, "zeros", [shape] if _is_tensorlike(shape) else None) as scope:
        return _filled(shape, _typed_value(dtype, False), dtype, scope)


def ones(shape, dtype=dtypes.float32, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """A tensor of ones (True for bool) of the given shape."""
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, "ones", [shape] if _is_tensorlike(shape) else None) as scope:
        return _filled(shape, _typed_value(dtype, True), dtype, scope)


def zeros_like(tensor, dtype=None, name: Optional[str] = None, optimize: bool = True) -> Tensor:
    """Zeros with the shape of ``tensor`` (and its dtype unless ``dtype`` is given)."""
    return _like("zeros_like", "ZerosLike", tensor, dtype, name, optimize, one=False)


def ones_like(tensor, dtype=None, name: Optional[str] = None, optimize: bool = True) -> Tensor:
    """Ones with the shape of ``tensor`` (and its dtype unless ``dtype`` is given)."""
    return _like("ones_like", "OnesLike", tensor, dtype, name, optimize, one=True)


def _like(default_name: str, op_type: str, tensor, dtype, name, optimize: bool, one: bool) -> Tensor:
    x = convert_to_tensor(tensor)
    with name_scope(name, default_name, [x]) as scope:
        want = x.dtype if dtype is None else dtypes.as_dtype(dtype)
        value = _typed_value(want, one)
        if optimize and x.shape.is_fully_defined():
            return _filled(x.shape.as_list(), value, want, scope)
        if want is not x.dtype:
            return fill(shape(x), constant(value, dtype=want), name=scope)
        return _new_op(op_type, [x], name=scope).outputs[0]


# -- ExpandDims, Squeeze ----------------------------------------------------------------------------------
@register_op("ExpandDims")
def _expand_dims_shape(op):
    x, dim_t = op.inputs
    _check_index_dtype(op, dim_t, "dim")
    if dim_t.shape.num_elements() not in (None, 1):
        raise ValueError(f"'dim' input must be a tensor with a single value for '{op.name}' "
                         f"(op: 'ExpandDims') with input shapes: {_input_shapes(op)}.")
    rank_in = x.shape.ndims
    dim = _const_int(dim_t)
    if rank_in is None:
        return [(x.dtype, TensorShape(None))]
    if dim is None:
        return [(x.dtype, TensorShape([None] * (rank_in + 1)))]
    if not -1 - rank_in <= dim <= rank_in:
        raise ValueError(f"dim {dim} not in the interval [{-1 - rank_in}, {rank_in}]. for "
                         f"'{op.name}' (op: 'ExpandDims') with input shapes: {_input_shapes(op)}.")
    if dim < 0:
        dim += rank_in + 1
    dims = x.shape.as_list()
    return [(x.dtype, TensorShape(dims[:dim] + [1] + dims[dim:]))]


@register_gradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return [reshape(grad, shape(op.inputs[0])), None]


def expand_dims(input, axis=None, name: Optional[str] = None, dim=None) -> Tensor:  # noqa: A002
    """``input`` with a dimension of size 1 inserted at ``axis`` (0.x keyword: ``dim``)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("can't specify both 'dim' and 'axis'")
        axis = dim
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    x = convert_to_tensor(input)
    axis_t = _to_int_tensor(axis, "dim", "axis")
    return _new_op("ExpandDims", [x, axis_t], name=name or "ExpandDims").outputs[0]


@register_op("Squeeze")
def _squeeze_shape(op):
    x = op.inputs[0]
    wanted = op.get_attr("squeeze_dims")
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_list()
    r = len(dims)
    axes = set()
    for d in wanted:
        if not -r <= d < r:
            raise ValueError(f"Tried to squeeze dim index {d} for tensor with {r} dimensions. "
                             f"for '{op.name}' (op: 'Squeeze') with input shapes: "
                             f"{_input_shapes(op)}.")
        d = d + r if d < 0 else d
        if dims[d] is not None and dims[d] != 1:
            raise ValueError(f"Can not squeeze dim[{d}], expected a dimension of 1, got "
                             f"{dims[d]} for '{op.name}' (op: 'Squeeze') with input shapes: "
                             f"{_input_shapes(op)}.")
        axes.add(d)
    if not wanted:
        if any(d is None for d in dims):
            return [(x.dtype, TensorShape(None))]
        axes = {i for i, d in enumerate(dims) if d == 1}
    return [(x.dtype, TensorShape([d for i, d in enumerate(dims) if i not in axes]))]


@register_gradient("Squeeze")
def _squeeze_grad(op, grad):
    return [reshape(grad, shape(op.inputs[0]))]


def squeeze(input, axis=None, name: Optional[str] = None, squeeze_dims=None) -> Tensor:  # noqa: A002
    """``input`` without its size-1 dimensions (only those in ``axis`` when given)."""
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'squeeze_dims' and 'axis'")
        axis = squeeze_dims
    if axis is None:
        axis = []
    elif isinstance(axis, (int, np.integer)):
        axis = [axis]
    x = convert_to_tensor(input)
    return _new_op("Squeeze", [x], {"squeeze_dims": [int(a) for a in axis]},
                   name=name or "Squeeze").outputs[0]


# -- Transpose, InvertPermutation -------------------------------------------------------------------------
@register_op("Transpose")
def _transpose_shape(op):
    x, perm_t = op.inputs
    _check_index_dtype(op, perm_t, "perm")
    _check_rank(op, perm_t, (1,), "perm")
    perm = _const(perm_t)
    n = perm_t.shape.as_list()[0] if perm_t.shape.ndims == 1 else None
    rank_in = x.shape.ndims
    if rank_in is not None and n is not None and rank_in != n:
        raise ValueError(f"Dimension must be {rank_in} but is {n} for '{op.name}' (op: "
                         f"'Transpose') with input shapes: {_input_shapes(op)}.")
    if perm is None:
        r = rank_in if rank_in is not None else n
        return [(x.dtype, TensorShape(None if r is None else [None] * r))]
    perm = [int(p) for p in perm]
    r = len(perm)
    if sorted(p + r if p < 0 else p for p in perm) != list(range(r)):
        raise ValueError(f"perm {perm} is not a permutation of [0, {r}) for '{op.name}' "
                         f"(op: 'Transpose')")
    if rank_in is None:
        return [(x.dtype, TensorShape([None] * r))]
    dims = x.shape.as_list()
    return [(x.dtype, TensorShape([dims[p] for p in perm]))]


@register_gradient("Transpose")
def _transpose_grad(op, grad):
    perm = _const(op.inputs[1])
    if perm is not None:
        r = len(perm)
        inverse = np.argsort([p + r if p < 0 else p for p in perm.tolist()]).astype(np.int32)
        return [transpose(grad, inverse), None]
    return [transpose(grad, invert_permutation(op.inputs[1])), None]


def transpose(a, perm=None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """``a`` with its dimensions permuted by ``perm`` (default: reversed)."""
    x = convert_to_tensor(a)
    with name_scope(name, "transpose", [x]) as scope:
        if perm is None:
            if x.shape.ndims is not None:
                perm_t = constant(np.arange(x.shape.ndims - 1, -1, -1, dtype=np.int32), name="perm")
            else:
                from .array_join_ops import reverse
                from .math_ops import range as _range
                perm_t = reverse(_range(rank(x)), [0], name="perm")
        else:
            perm_t = _to_int_tensor(perm, "perm", "perm")
        return _new_op("Transpose", [x, perm_t], name=scope).outputs[0]


@register_op("InvertPermutation")
def _invert_permutation_shape(op):
    x = op.inputs[0]
    _check_index_dtype(op, x, "x")
    _check_rank(op, x, (1,), "x")
    return [(x.dtype, x.shape if x.shape.ndims is not None else TensorShape([None]))]


NotDifferentiable("InvertPermutation")


def invert_permutation(x, name: Optional[str] = None) -> Tensor:
    """The inverse permutation: ``y[x[i]] = i``."""
    return _new_op("InvertPermutation", [_to_int_tensor(x, "x", "x")],
                   name=name or "InvertPermutation").outputs[0]


# -- BroadcastTo --------------------------------------------------------------------------------------------
@register_op("BroadcastTo")
def _broadcast_to_shape(op):
    x, shape_t = op.inputs
    _check_index_dtype(op, shape_t, "shape")
    _check_rank(op, shape_t, (1,), "shape")
    target = _shape_from_tensor(shape_t)
    if x.shape.ndims is None or target.ndims is None:
        return [(x.dtype, target)]
    xs, ts = x.shape.as_list(), target.as_list()
    if len(xs) > len(ts):
        raise ValueError(f"Rank of input ({len(xs)}) must be no greater than rank of output shape "
                         f"({len(ts)}) for '{op.name}' (op: 'BroadcastTo') with input shapes: "
                         f"{_input_shapes(op)}.")
    out = list(ts)
    for i, d in enumerate(xs):
        j = len(ts) - len(xs) + i
        if d is not None and d != 1 and ts[j] is not None and d != ts[j]:
            raise ValueError(f"Incompatible shapes: {list_str(x.shape)} vs. {list_str(target)} "
                             f"for '{op.name}' (op: 'BroadcastTo')")
        if out[j] is None and d is not None and d != 1:
            out[j] = d
    return [(x.dtype, TensorShape(out))]


@register_gradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    from .math_ops import _sum_to_shape
    return [_sum_to_shape(grad, op.inputs[0]), None]


def broadcast_to(input, shape, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """``input`` broadcast (numpy rules) to ``shape``."""
    x = convert_to_tensor(input)
    shape_t = _to_int_tensor(shape, "shape")
    return _new_op("BroadcastTo", [x, shape_t], name=name or "BroadcastTo").outputs[0]


def broadcast_static_shape(shape_x: TensorShape, shape_y: TensorShape) -> TensorShape:
    """The broadcast of two static shapes; ValueError if they are incompatible."""
    return broadcast_shapes(as_shape(shape_x), as_shape(shape_y))


# -- the rest of the family ------------------------------------------------------------------------------
from . import array_join_ops as _join  # noqa: E402
from . import array_index_ops as _index  # noqa: E402
from . import array_scatter_ops as _scatter  # noqa: E402
from .array_join_ops import *  # noqa: E402,F401,F403
from .array_index_ops import *  # noqa: E402,F401,F403
from .array_scatter_ops import *  # noqa: E402,F401,F403

__all__ += _join.__all__ + _index.__all__ + _scatter.__all__
