"""Helpers shared by the neural-network op definitions (nn_ops, nn_conv_ops)."""
from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, op
from ..framework.tensor_shape import list_str
from . import _shapes, array_ops

FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
REALS = FLOATS + (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8)
INDEX_TYPES = (dtypes.int32, dtypes.int64)


def rank_dims(op, t: Tensor, rank: int) -> List[Optional[int]]:
    """t's dims as a list (Nones if its rank is unknown); ValueError if its rank is not rank."""
    if t.shape.ndims is None:
        return [None] * rank
    if t.shape.ndims != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {t.shape.ndims} for "
                         f"'{op.name}' (op: '{op.type}') with input shapes: {input_shapes(op)}.")
    return t.shape.as_list()


def input_shapes(op) -> str:
    return ", ".join(list_str(t.shape) for t in op.inputs)


def dims_must_match(op, a: Optional[int], b: Optional[int], what: str = "") -> None:
    if a is not None and b is not None and a != b:
        why = f" ({what})" if what else ""
        raise ValueError(f"Dimensions must be equal, but are {a} and {b}{why} for '{op.name}' "
                         f"(op: '{op.type}') with input shapes: {input_shapes(op)}.")


def const_ints(t: Tensor) -> Optional[List[int]]:
    """The entries of an int tensor known at graph time (a constant, a packed list of them)."""
    value = array_ops._const(t)
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def partial_ints(t: Tensor, length: int) -> List[Optional[int]]:
    """The entries of a 1-D int tensor of ``length`` entries (a shape argument) as far as they
    are known at graph time, None for the unknown ones: from constants, tf.shape of a tensor of
    partly known shape, packed lists, ..."""
    values = array_ops._partial_shape_values(t)
    if values is None or len(values) != length:
        return [None] * length
    return [None if v is None or v < 0 else v for v in values]


def shape_of(t: Tensor) -> Tensor:
    """t's shape as an int32 tensor: a constant when it is static, else a Shape op."""
    if t.shape.is_fully_defined():
        return array_ops.constant(np.array(t.shape.as_list(), np.int32), name="Shape")
    return array_ops.shape(t)


def convert_like(value, like: Tensor, name: str) -> Tensor:
    """A tensor as is (a dtype mismatch is then reported by the op), or a Python/numpy value
    converted to ``like``'s dtype."""
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        return convert_to_tensor(value)
    return convert_to_tensor(value, dtype=like.dtype, name=name)


def outputs(op_type: str, inputs: Sequence, attrs: dict, name: Optional[str]) -> List[Tensor]:
    return op(op_type, list(inputs), attrs, name=name or op_type).outputs


def is_zero(t: Tensor) -> bool:
    """True when t is statically all zeros (the gradients walk fills unused outputs with
    ZerosLike)."""
    if t.op.type in ("ZerosLike", "Zeros"):
        return True
    value = _shapes.constant_value(t)
    return value is not None and not np.any(value)
