"""Array ops that join, split, repeat, pad and reverse: concat, split, stack/unstack, tile, pad,
reverse. Re-exported by ``array_ops`` (``tf.concat`` ...)."""
from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ..framework import dtypes
from ..framework.indexed_slices import IndexedSlices
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import register_gradient, register_op
from ..framework.tensor_shape import TensorShape, list_str
from . import array_ops as _core
from .array_ops import (_check_index_dtype, _check_rank, _const, _const_int, _input_shapes,
                        _is_tensorlike, _to_int_tensor, constant, identity, reshape, shape)

__all__ = ["concat", "concat_v2", "split", "stack", "pack", "unstack", "unpack", "tile", "pad",
           "reverse", "reverse_v2"]


def _convert_list(values: Sequence, what: str, op_type: str) -> List[Tensor]:
    """Converts a list of tensors/values; Python values take the dtype of the tensors."""
    if _is_tensorlike(values) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{what} of {op_type} must be a list of tensors, got {values!r}")
    tensors = [convert_to_tensor(v) for v in values if _is_tensorlike(v)]
    dtype = tensors[0].dtype if tensors else None
    out = [convert_to_tensor(v, dtype=dtype) if not _is_tensorlike(v) else convert_to_tensor(v)
           for v in values]
    types = [t.dtype for t in out]
    if any(t is not types[0] for t in types):
        raise TypeError(f"Tensors in list passed to '{what}' of '{op_type}' Op have types "
                        f"[{', '.join(t.name for t in types)}] that don't all match.")
    return out


def _is_int_like(v) -> bool:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return True
    if _is_tensorlike(v):
        t = convert_to_tensor(v)
        return t.dtype.is_integer and t.shape.ndims == 0
    return False


def _merge_dims(op, shapes: Sequence[TensorShape], skip: Optional[int]) -> Optional[list]:
    """Merges equal-rank shapes dimension by dimension (except ``skip``); None if rank unknown."""
    known = [s for s in shapes if s.ndims is not None]
    if not known:
        return None
    r = known[0].ndims
    out: list = [None] * r
    for k, s in enumerate(shapes):
        if s.ndims is None:
            continue
        if s.ndims != r:
            raise ValueError(f"Shapes must be equal rank, but are {r} and {s.ndims} for "
                             f"'{op.name}' (op: '{op.type}') with input shapes: "
                             f"{_input_shapes(op)}.")
        for i, d in enumerate(s.as_list()):
            if i == skip or d is None:
                continue
            if out[i] is not None and out[i] != d:
                raise ValueError(f"Dimension {i} in both shapes must be equal, but are {out[i]} "
                                 f"and {d}. Shapes are {list_str(shapes[0])} and {list_str(s)}. "
                                 f"for '{op.name}' (op: '{op.type}') with input shapes: "
                                 f"{_input_shapes(op)}.")
            out[i] = d
    return out


# -- ConcatV2 -----------------------------------------------------------------------------------------
@register_op("ConcatV2")
def _concat_shape(op):
    values, axis_t = op.inputs[:-1], op.inputs[-1]
    _check_index_dtype(op, axis_t, "axis")
    _check_rank(op, axis_t, (0,), "axis")
    dtype = values[0].dtype
    shapes = [v.shape for v in values]
    axis = _const_int(axis_t)
    rank_known = next((s.ndims for s in shapes if s.ndims is not None), None)
    if rank_known is None:
        return [(dtype, TensorShape(None))]
    if rank_known == 0:
        raise ValueError(f"Can't concatenate scalars (use tf.stack instead) for '{op.name}' "
                         f"(op: 'ConcatV2') with input shapes: {_input_shapes(op)}.")
    if axis is None:
        if any(s.ndims not in (None, rank_known) for s in shapes):
            raise ValueError(f"Shapes must be equal rank for '{op.name}' (op: 'ConcatV2') with "
                             f"input shapes: {_input_shapes(op)}.")
        return [(dtype, TensorShape([None] * rank_known))]
    if not -rank_known <= axis < rank_known:
        raise ValueError(f"ConcatOp : Expected concatenating dimensions in the range "
                         f"[{-rank_known}, {rank_known}), but got {axis} for '{op.name}' "
                         f"(op: 'ConcatV2')")
    axis %= rank_known
    dims = _merge_dims(op, shapes, skip=axis)
    along = [s.as_list()[axis] if s.ndims is not None else None for s in shapes]
    dims[axis] = None if any(d is None for d in along) else sum(along)
    return [(dtype, TensorShape(dims))]


@register_gradient("ConcatV2")
def _concat_grad(op, grad):
    values, axis_t = op.inputs[:-1], op.inputs[-1]
    axis = _const_int(axis_t)
    sizes = None
    if axis is not None:
        along = [v.shape.as_list()[axis] if v.shape.ndims is not None else None for v in values]
        if all(d is not None for d in along):
            sizes = along
    if isinstance(grad, IndexedSlices):
        if sizes is not None and axis == 0:
            return _indexed_slices_by_input(grad, values, sizes) + [None]
        grad = convert_to_tensor(grad)
    if sizes is None:
        sizes = stack([shape(v)[axis_t] for v in values])
    return list(split(grad, sizes, axis_t, num=len(values))) + [None]


def _indexed_slices_by_input(grad: IndexedSlices, values, sizes) -> list:
    """A sparse gradient of rows concatenated along axis 0 (a partitioned variable's parts
    gathered by an embedding lookup), cut into each input's rows: sparse too, as TF's."""
    from .array_index_ops import gather, where
    from .math_ops import greater_equal, less, logical_and
    out, start = [], 0
    for value, size in zip(values, sizes):
        end = start + size
        rows = _core.squeeze(where(logical_and(greater_equal(grad.indices, start),
                                               less(grad.indices, end))), axis=[1])
        out.append(IndexedSlices(gather(grad.values, rows),
                                 gather(grad.indices, rows) - start, shape(value)))
        start = end
    return out


def concat(values, axis=None, name: str = "concat", concat_dim=None) -> Tensor:
    """Concatenates ``values`` along ``axis``. Also the 0.x form ``concat(concat_dim, values)``."""
    if concat_dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'concat_dim'")
        axis = concat_dim
    if isinstance(axis, (list, tuple)) and not _is_tensorlike(axis):
        if not _is_int_like(values):
            raise TypeError(f"concat(concat_dim, values): concat_dim must be an integer, got "
                            f"{values!r}")
        values, axis = axis, values          # TensorFlow 0.x argument order
    if axis is None:
        raise TypeError("concat() missing required argument: 'axis'")
    if not isinstance(values, (list, tuple)):
        values = [values]
    tensors = _convert_list(values, "values", "ConcatV2")
    axis_t = _to_int_tensor(axis, "axis", "axis")
    if len(tensors) == 1:
        if axis_t.shape.ndims not in (None, 0):
            raise ValueError(f"concat axis must be a scalar, got shape {axis_t.shape}")
        with name_scope(name) as scope:
            return identity(tensors[0], name=scope)
    return _new_op("ConcatV2", tensors + [axis_t], {"N": len(tensors)}, name=name).outputs[0]


def concat_v2(values, axis, name: str = "concat_v2") -> Tensor:
    return concat(values, axis, name=name)


# -- Split, SplitV --------------------------------------------------------------------------------------
@register_op("Split")
def _split_shape(op):
    axis_t, x = op.inputs
    _check_index_dtype(op, axis_t, "split_dim")
    _check_rank(op, axis_t, (0,), "split_dim")
    n = op.get_attr("num_split")
    axis = _const_int(axis_t)
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))] * n
    dims = x.shape.as_list()
    if axis is None:
        return [(x.dtype, TensorShape([None] * len(dims)))] * n
    axis = _core._normalize_axis(op, axis, len(dims), "split_dim")
    if dims[axis] is not None:
        if dims[axis] % n:
            raise ValueError(f"Dimension size must be evenly divisible by {n} but is {dims[axis]} "
                             f"for '{op.name}' (op: 'Split') with input shapes: "
                             f"{_input_shapes(op)}.")
        dims[axis] //= n
    return [(x.dtype, TensorShape(dims))] * n


@register_gradient("Split")
def _split_grad(op, *grads):
    return [None, concat(list(grads), op.inputs[0])]


@register_op("SplitV")
def _split_v_shape(op):
    x, sizes_t, axis_t = op.inputs
    _check_index_dtype(op, sizes_t, "size_splits")
    _check_index_dtype(op, axis_t, "split_dim")
    n = op.get_attr("num_split")
    sizes = _const(sizes_t)
    if sizes is not None and len(sizes) != n:
        raise ValueError(f"size_splits has {len(sizes)} entries but num_split is {n} for "
                         f"'{op.name}' (op: 'SplitV')")
    axis = _const_int(axis_t)
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))] * n
    dims = x.shape.as_list()
    if axis is None:
        return [(x.dtype, TensorShape([None] * len(dims)))] * n
    axis = _core._normalize_axis(op, axis, len(dims), "split_dim")
    if sizes is None:
        return [(x.dtype, TensorShape(dims[:axis] + [None] + dims[axis + 1:]))] * n
    sizes = [int(s) for s in sizes]
    sizes = _resolve_split_sizes(op, sizes, dims[axis])
    return [(x.dtype, TensorShape(dims[:axis] + [s] + dims[axis + 1:])) for s in sizes]


def _resolve_split_sizes(op, sizes: List[int], total: Optional[int]) -> List[Optional[int]]:
    if sizes.count(-1) > 1:
        raise ValueError(f"Only one dimensions can have a value of -1. Second one found at "
                         f"dimension {[i for i, s in enumerate(sizes) if s == -1][1]} for "
                         f"'{op.name}' (op: 'SplitV')")
    if any(s < -1 for s in sizes):
        raise ValueError(f"size_splits must be non-negative (or -1 once), got {sizes} for "
                         f"'{op.name}' (op: 'SplitV')")
    known = sum(s for s in sizes if s >= 0)
    if total is None:
        return [None if s < 0 else s for s in sizes]
    if -1 in sizes:
        if known > total:
            raise ValueError(f"Determined shape must either match input shape along split_dim "
                             f"exactly if fully specified, or be less than the size of the input "
                             f"along split_dim if not fully specified.  Got: {known} for "
                             f"'{op.name}' (op: 'SplitV')")
        return [total - known if s < 0 else s for s in sizes]
    if known != total:
        raise ValueError(f"Determined shape must either match input shape along split_dim exactly "
                         f"if fully specified, or be less than the size of the input along "
                         f"split_dim if not fully specified.  Got: {known} for '{op.name}' "
                         f"(op: 'SplitV')")
    return sizes


@register_gradient("SplitV")
def _split_v_grad(op, *grads):
    return [concat(list(grads), op.inputs[2]), None, None]


def split(value, num_or_size_splits=None, axis=0, num=None, name: str = "split", *,
          split_dim=None, num_split=None) -> List[Tensor]:
    """Splits ``value`` along ``axis`` into ``num_or_size_splits`` equal parts, or parts of the
    given sizes. Also the 0.x form ``split(split_dim, num_split, value)``."""
    if split_dim is not None or num_split is not None:          # 0.x keywords
        axis = split_dim if split_dim is not None else axis
        num_or_size_splits = num_split if num_split is not None else num_or_size_splits
    elif _is_int_like(value) and not _is_int_like(axis):         # 0.x positional order
        value, axis = axis, value
    if num_or_size_splits is None:
        raise TypeError("split() missing required argument: 'num_or_size_splits'")
    x = convert_to_tensor(value)
    axis_t = _to_int_tensor(axis, "split_dim", "axis")
    if isinstance(num_or_size_splits, (int, np.integer)) and not isinstance(num_or_size_splits, bool):
        n = int(num_or_size_splits)
        if n <= 0:
            raise ValueError(f"num_or_size_splits must be a positive integer, got {n}")
        outs = _new_op("Split", [axis_t, x], {"num_split": n}, name=name).outputs
        return outs
    sizes_t = _to_int_tensor(num_or_size_splits, "size_splits", "num_or_size_splits")
    if num is None:
        if sizes_t.shape.ndims != 1 or sizes_t.shape.as_list()[0] is None:
            raise ValueError(f"Cannot infer num from shape {sizes_t.shape}")
        num = sizes_t.shape.as_list()[0]
    return _new_op("SplitV", [x, sizes_t, axis_t], {"num_split": int(num)}, name=name).outputs


# -- Pack, Unpack ----------------------------------------------------------------------------------------
@register_op("Pack")
def _pack_shape(op):
    values = op.inputs
    axis = op.get_attr("axis")
    dims = _merge_dims(op, [v.shape for v in values], skip=None)
    if dims is None:
        return [(values[0].dtype, TensorShape(None))]
    r = len(dims) + 1
    if not -r <= axis < r:
        raise ValueError(f"axis = {axis} not in [{-r}, {r}) for '{op.name}' (op: 'Pack')")
    axis %= r
    return [(values[0].dtype, TensorShape(dims[:axis] + [len(values)] + dims[axis:]))]


@register_gradient("Pack")
def _pack_grad(op, grad):
    return unstack(grad, num=op.get_attr("N"), axis=op.get_attr("axis"))


def stack(values, axis: int = 0, name: str = "stack") -> Tensor:
    """Stacks rank-R tensors into one rank-(R+1) tensor along a new ``axis``."""
    tensors = _convert_list(values, "values", "Pack")
    if not tensors:
        raise ValueError("stack() needs at least one value")
    r = tensors[0].shape.ndims
    if r is not None and not -(r + 1) <= axis < r + 1:
        raise ValueError(f"axis = {axis} not in [{-(r + 1)}, {r + 1})")
    return _new_op("Pack", tensors, {"axis": int(axis), "N": len(tensors)}, name=name).outputs[0]


def pack(values, axis: int = 0, name: str = "pack") -> Tensor:
    """TensorFlow 0.x name of ``stack``."""
    return stack(values, axis, name)


def contains_tensor(values) -> bool:
    """Whether a (nested) list or tuple holds a tensor or variable somewhere."""
    return any(contains_tensor(v) if isinstance(v, (list, tuple)) else _is_tensorlike(v)
               for v in values)


def autopack(values, dtype=None, name: str = "packed") -> Tensor:
    """TF's conversion of a (nested) list that holds tensors: one Pack per nesting level, its
    Python values made constants of the tensors' dtype (``tf.reduce_mean([t1, t2])``)."""
    def first_dtype(items):
        for v in items:
            found = first_dtype(v) if isinstance(v, (list, tuple)) else (
                convert_to_tensor(v).dtype.base_dtype if _is_tensorlike(v) else None)
            if found is not None:
                return found
        return None

    def pack_level(items, scope_name):
        with name_scope(scope_name) as scope:
            parts = [pack_level(v, str(i)) if isinstance(v, (list, tuple)) and contains_tensor(v)
                     else v for i, v in enumerate(items)]
            tensors = []
            for i, v in enumerate(parts):
                if _is_tensorlike(v):
                    t = convert_to_tensor(v)
                    if t.dtype.base_dtype is not dtype:
                        raise TypeError(f"Cannot convert a list containing a tensor of dtype "
                                        f"{t.dtype.base_dtype.name} to {dtype.name} (Tensor is: "
                                        f"{t!r})")
                    tensors.append(t)
                else:
                    tensors.append(constant(v, dtype=dtype, name=str(i)))
            return _new_op("Pack", tensors, {"axis": 0, "N": len(tensors)},
                           name=scope).outputs[0]

    dtype = dtypes.as_dtype(dtype) if dtype is not None else first_dtype(values)
    return pack_level(values, name)


@register_op("Unpack")
def _unpack_shape(op):
    x = op.inputs[0]
    num, axis = op.get_attr("num"), op.get_attr("axis")
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))] * num
    dims = x.shape.as_list()
    axis = _core._normalize_axis(op, axis, len(dims))
    if dims[axis] is not None and dims[axis] != num:
        raise ValueError(f"Dimension must be {num} but is {dims[axis]} for '{op.name}' "
                         f"(op: 'Unpack') with input shapes: {_input_shapes(op)}.")
    return [(x.dtype, TensorShape(dims[:axis] + dims[axis + 1:]))] * num


@register_gradient("Unpack")
def _unpack_grad(op, *grads):
    return [stack(list(grads), axis=op.get_attr("axis"))]


def unstack(value, num: Optional[int] = None, axis: int = 0, name: str = "unstack") -> List[Tensor]:
    """Unpacks the rank-R tensor ``value`` into ``num`` rank-(R-1) tensors along ``axis``."""
    x = convert_to_tensor(value)
    if num is None:
        s = x.shape
        if s.ndims is None:
            raise ValueError(f"Cannot infer num from shape {s}")
        if not -s.ndims <= axis < s.ndims:
            raise ValueError(f"axis = {axis} not in [{-s.ndims}, {s.ndims})")
        num = s.as_list()[axis]
        if num is None:
            raise ValueError(f"Cannot infer num from shape {s}")
    return _new_op("Unpack", [x], {"num": int(num), "axis": int(axis)}, name=name).outputs


def unpack(value, num: Optional[int] = None, axis: int = 0, name: str = "unpack") -> List[Tensor]:
    """TensorFlow 0.x name of ``unstack``."""
    return unstack(value, num, axis, name)


# -- Tile ------------------------------------------------------------------------------------------------
@register_op("Tile")
def _tile_shape(op):
    x, multiples_t = op.inputs
    _check_index_dtype(op, multiples_t, "multiples")
    _check_rank(op, multiples_t, (1,), "multiples")
    n = multiples_t.shape.as_list()[0] if multiples_t.shape.ndims == 1 else None
    r = x.shape.ndims
    if r is not None and n is not None and r != n:
        raise ValueError(f"Shape must be rank {n} but is rank {r} for '{op.name}' (op: 'Tile') "
                         f"with input shapes: {_input_shapes(op)}.")
    r = r if r is not None else n
    if r is None:
        return [(x.dtype, TensorShape(None))]
    multiples = _const(multiples_t)
    if multiples is not None and np.any(multiples < 0):
        raise ValueError(f"Expected multiples to be non-negative, got {multiples.tolist()} for "
                         f"'{op.name}' (op: 'Tile')")
    dims = x.shape.as_list() if x.shape.ndims is not None else [None] * r
    if multiples is None:
        return [(x.dtype, TensorShape([0 if d == 0 else None for d in dims]))]
    return [(x.dtype, TensorShape([None if d is None else d * int(m)
                                   for d, m in zip(dims, multiples)]))]


@register_gradient("Tile")
def _tile_grad(op, grad):
    from .math_ops import range as _range
    from .math_ops import reduce_sum
    x, multiples_t = op.inputs
    multiples = _const(multiples_t)
    if multiples is not None and x.shape.is_fully_defined():
        dims = x.shape.as_list()
        split_shape = [v for m, d in zip(multiples.tolist(), dims) for v in (m, d)]
        axes = list(range(0, 2 * len(dims), 2))
        return [reduce_sum(reshape(grad, split_shape), axes), None]
    # Interleave [m0, d0, m1, d1, ...], then sum the tiled axes away (as TensorFlow does).
    split_shape = reshape(_core.transpose(stack([multiples_t, shape(x, out_type=multiples_t.dtype)])),
                          [-1])
    axes = _range(0, _core.size(split_shape), 2)
    return [reduce_sum(reshape(grad, split_shape), axes), None]


def tile(input, multiples, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """``input`` repeated ``multiples[i]`` times along each dimension i."""
    x = convert_to_tensor(input)
    m = _to_int_tensor(multiples, "multiples", "multiples")
    return _new_op("Tile", [x, m], name=name or "Tile").outputs[0]


# -- Pad, PadV2, MirrorPad ------------------------------------------------------------------------------
def _pad_shape_common(op, x: Tensor, paddings_t: Tensor, mode: Optional[str]):
    _check_index_dtype(op, paddings_t, "paddings")
    ps = paddings_t.shape
    if ps.ndims is not None and (ps.ndims != 2 or ps.as_list()[1] not in (None, 2)):
        raise ValueError(f"Shape must be rank 2 with 2 columns ([rank, 2]) but is "
                         f"{list_str(ps)} for '{op.name}' (op: '{op.type}') with input shapes: "
                         f"{_input_shapes(op)}.")
    n = ps.as_list()[0] if ps.ndims == 2 else None
    r = x.shape.ndims
    if r is not None and n is not None and r != n:
        raise ValueError(f"The first dimension of paddings must be the rank of inputs"
                         f"{list_str(ps)} {list_str(x.shape)} for '{op.name}' (op: '{op.type}')")
    r = r if r is not None else n
    if r is None:
        return TensorShape(None)
    dims = x.shape.as_list() if x.shape.ndims is not None else [None] * r
    paddings = _const(paddings_t)
    if paddings is None:
        return TensorShape([None] * r)
    for i, (before, after) in enumerate(paddings.tolist()):
        if before < 0 or after < 0:
            raise ValueError(f"Paddings must be non-negative: {before} {after} for '{op.name}' "
                             f"(op: '{op.type}')")
        _check_mirror_limit(op, mode, dims[i], before, after)
    return TensorShape([None if d is None else d + int(b) + int(a)
                        for d, (b, a) in zip(dims, paddings.tolist())])


def _check_mirror_limit(op, mode: Optional[str], dim: Optional[int], before: int, after: int):
    if mode is None or dim is None:
        return
    if mode == "REFLECT" and (before >= dim or after >= dim):
        raise ValueError(f"paddings must be less than the dimension size: {before}, {after} not "
                         f"less than {dim} for '{op.name}' (op: 'MirrorPad')")
    if mode == "SYMMETRIC" and (before > dim or after > dim):
        raise ValueError(f"paddings must be no greater than the dimension size: {before}, "
                         f"{after} greater than {dim} for '{op.name}' (op: 'MirrorPad')")


@register_op("Pad")
def _pad_shape(op):
    x, paddings_t = op.inputs
    return [(x.dtype, _pad_shape_common(op, x, paddings_t, None))]


@register_op("PadV2")
def _pad_v2_shape(op):
    x, paddings_t, value = op.inputs
    if value.dtype is not x.dtype:
        raise TypeError(f"constant_values of '{op.name}' (op: 'PadV2') has dtype "
                        f"{value.dtype.name}, expected {x.dtype.name}")
    _check_rank(op, value, (0,), "constant_values")
    return [(x.dtype, _pad_shape_common(op, x, paddings_t, None))]


@register_op("MirrorPad")
def _mirror_pad_shape(op):
    x, paddings_t = op.inputs
    return [(x.dtype, _pad_shape_common(op, x, paddings_t, op.get_attr("mode")))]


@register_op("MirrorPadGrad")
def _mirror_pad_grad_shape(op):
    grad, paddings_t = op.inputs
    _check_index_dtype(op, paddings_t, "paddings")
    paddings = _const(paddings_t)
    if grad.shape.ndims is None or paddings is None:
        r = grad.shape.ndims
        return [(grad.dtype, TensorShape(None if r is None else [None] * r))]
    return [(grad.dtype, TensorShape([None if d is None else d - int(b) - int(a)
                                      for d, (b, a) in zip(grad.shape.as_list(), paddings.tolist())]))]


@register_gradient("Pad")
@register_gradient("PadV2")
def _pad_grad(op, grad):
    from .array_index_ops import slice as _slice
    x, paddings_t = op.inputs[0], op.inputs[1]
    paddings = _const(paddings_t)
    if paddings is not None:
        begin = constant(paddings[:, 0].astype(paddings.dtype))
    else:
        begin = paddings_t[:, 0]
    x_grad = _slice(grad, begin, shape(x, out_type=paddings_t.dtype))
    return [x_grad, None] + ([None] if op.type == "PadV2" else [])


@register_gradient("MirrorPad")
def _mirror_pad_grad(op, grad):
    return [_new_op("MirrorPadGrad", [grad, op.inputs[1]], {"mode": op.get_attr("mode")},
                    name="MirrorPadGrad").outputs[0], None]


@register_gradient("MirrorPadGrad")
def _mirror_pad_grad_grad(op, grad):
    return [_new_op("MirrorPad", [grad, op.inputs[1]], {"mode": op.get_attr("mode")},
                    name="MirrorPad").outputs[0], None]


def pad(tensor, paddings, mode: str = "CONSTANT", name: Optional[str] = None,
        constant_values=0) -> Tensor:
    """Pads ``tensor`` by ``paddings[i] = [before, after]`` along each dimension i, with
    ``constant_values`` (CONSTANT) or a mirror image of the border (REFLECT, SYMMETRIC)."""
    x = convert_to_tensor(tensor)
    paddings_t = _to_int_tensor(paddings, "paddings", "paddings")
    mode = str(mode).upper()
    if mode == "CONSTANT":
        if not _is_tensorlike(constant_values) and np.all(np.asarray(constant_values) == 0):
            return _new_op("Pad", [x, paddings_t], name=name or "Pad").outputs[0]
        value = convert_to_tensor(constant_values, dtype=x.dtype)
        return _new_op("PadV2", [x, paddings_t, value], name=name or "PadV2").outputs[0]
    if mode in ("REFLECT", "SYMMETRIC"):
        return _new_op("MirrorPad", [x, paddings_t], {"mode": mode},
                       name=name or "MirrorPad").outputs[0]
    raise ValueError(f"Unknown padding mode: {mode}")


# -- ReverseV2 -------------------------------------------------------------------------------------------
@register_op("ReverseV2")
def _reverse_shape(op):
    x, axis_t = op.inputs
    _check_index_dtype(op, axis_t, "axis")
    _check_rank(op, axis_t, (1,), "axis")
    axes = _const(axis_t)
    if axes is not None and x.shape.ndims is not None:
        r = x.shape.ndims
        seen = set()
        for a in axes.tolist():
            a = _core._normalize_axis(op, a, r)
            if a in seen:
                raise ValueError(f"axis {a} specified more than once for '{op.name}' "
                                 f"(op: 'ReverseV2')")
            seen.add(a)
    return [(x.dtype, x.shape)]


@register_gradient("ReverseV2")
def _reverse_grad(op, grad):
    return [reverse(grad, op.inputs[1]), None]


def reverse(tensor, axis, name: Optional[str] = None) -> Tensor:
    """``tensor`` with the dimensions in ``axis`` reversed. A list of bools (the 0.x ``dims``
    form: one per dimension) is accepted too."""
    x = convert_to_tensor(tensor)
    if not _is_tensorlike(axis):
        flags = np.asarray(axis)
        if flags.dtype == np.bool_:
            if x.shape.ndims is not None and flags.shape != (x.shape.ndims,):
                raise ValueError(f"reverse: dims must have one bool per dimension of the "
                                 f"tensor ({x.shape.ndims}), got {flags.tolist()}")
            axis = np.flatnonzero(flags).astype(np.int32)
        elif flags.ndim == 0:
            axis = [int(flags)]
    elif convert_to_tensor(axis).dtype is dtypes.bool:
        raise TypeError("reverse: a bool tensor of dims (TensorFlow 0.x) is not supported; pass "
                        "the axes to reverse as ints")
    axis_t = _to_int_tensor(axis, "axis", "axis")
    return _new_op("ReverseV2", [x, axis_t], name=name or "ReverseV2").outputs[0]


def reverse_v2(tensor, axis, name: Optional[str] = None) -> Tensor:
    return reverse(tensor, axis, name)
