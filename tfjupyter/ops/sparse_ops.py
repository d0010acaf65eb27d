"""Sparse tensors to dense ones (TensorFlow 1.x's ``sparse_ops``, the part parsing needs)."""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes as _dtypes
from ..framework.ops import Tensor, name_scope
from ..framework.sparse_tensor import SparseTensor
from .array_scatter_ops import sparse_to_dense

__all__ = ["sparse_tensor_to_dense"]


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices: bool = True,
                           name: Optional[str] = None) -> Tensor:
    """The dense tensor of ``sp_input.dense_shape``: its values at its indices,
    ``default_value`` elsewhere (None: 0, or b"" for strings)."""
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"sparse_tensor_to_dense: sp_input must be a SparseTensor, got "
                        f"{type(sp_input).__name__}")
    if default_value is None:
        default_value = b"" if sp_input.dtype is _dtypes.string else 0
    with name_scope(name, "SparseToDense", [sp_input.indices, sp_input.values]):
        return sparse_to_dense(sp_input.indices, sp_input.dense_shape, sp_input.values,
                               default_value, validate_indices=validate_indices,
                               name="SparseToDense")
