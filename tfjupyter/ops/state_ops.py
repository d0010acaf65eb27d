"""Sparse updates of variables: ``tf.scatter_add`` and ``tf.scatter_sub`` (TensorFlow 1.x's
``state_ops``), the ops GradientDescentOptimizer applies an IndexedSlices gradient with.

``scatter_add(ref, indices, updates)`` adds ``updates[i, ...]`` to ``ref[indices[i], ...]`` in
place; repeated indices all add. Only the rows named are touched.
"""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import list_str
from . import _shapes

__all__ = ["scatter_add", "scatter_sub"]


@register_op("ScatterAdd", ref_inputs=(0,), stateful=True)
@register_op("ScatterSub", ref_inputs=(0,), stateful=True)
def _scatter_update_shape(op):
    ref, indices, updates = op.inputs
    _shapes.check_same_dtype(op, ref, updates)
    if indices.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"Value passed to parameter 'indices' of '{op.name}' (op: '{op.type}') "
                        f"has DataType {indices.dtype.name} not in list of allowed values: "
                        "int32, int64")
    if ref.shape.ndims == 0:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for '{op.name}' "
                         f"(op: '{op.type}')")
    if ref.shape.ndims is not None and indices.shape.ndims is not None:
        expected = indices.shape.concatenate(ref.shape[1:])
        if not updates.shape.is_compatible_with(expected):
            raise ValueError(f"Shapes must be equal rank, but are {list_str(updates.shape)} and "
                             f"{list_str(expected)}: updates must be indices.shape + "
                             f"ref.shape[1:] for '{op.name}' (op: '{op.type}')")
    return [(ref.dtype, ref.shape)]


NotDifferentiable("ScatterAdd")
NotDifferentiable("ScatterSub")


def _scatter(op_type: str, ref, indices, updates, use_locking: bool, name: Optional[str]
             ) -> Tensor:
    from ..variables import Variable
    ref_t = ref._ref() if isinstance(ref, Variable) else ref
    if not isinstance(ref_t, Tensor) or ref_t.op.type != "VariableV2":
        raise TypeError(f"{op_type} updates a variable in place: expected a Variable, got "
                        f"{ref!r}")
    indices = convert_to_tensor(indices, name="indices")
    updates = convert_to_tensor(updates, dtype=ref_t.dtype, name="updates")
    attrs = {"T": ref_t.dtype, "Tindices": indices.dtype, "use_locking": bool(use_locking)}
    return ref_t.graph.create_op(op_type, [ref_t, indices, updates], attrs,
                                 name=name or op_type).outputs[0]


def scatter_add(ref, indices, updates, use_locking: bool = False,
                name: Optional[str] = None) -> Tensor:
    """``ref[indices[i], ...] += updates[i, ...]`` for every i (repeated indices all add);
    returns ref."""
    return _scatter("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(ref, indices, updates, use_locking: bool = False,
                name: Optional[str] = None) -> Tensor:
    """``ref[indices[i], ...] -= updates[i, ...]`` for every i (repeated indices all
    subtract); returns ref."""
    return _scatter("ScatterSub", ref, indices, updates, use_locking, name)
