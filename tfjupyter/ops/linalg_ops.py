"""Linear-algebra ops beyond matmul."""
from __future__ import annotations

from typing import Optional, Tuple

from ..framework.ops import Tensor, convert_to_tensor, op
from ..framework.registry import register_op
from ..framework.tensor_shape import TensorShape

__all__ = ["qr"]


@register_op("Qr")
def _qr_shape(op):
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise TypeError(f"Qr '{op.name}' needs a floating-point input, got {x.dtype.name}")
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None)), (x.dtype, TensorShape(None))]
    if x.shape.ndims < 2:
        raise ValueError(f"Qr '{op.name}' needs a matrix (rank >= 2), got shape {x.shape}")
    *batch, m, n = x.shape.as_list()
    full = op.get_attr("full_matrices")
    k = None if m is None or n is None else min(m, n)
    q_cols, r_rows = (m, m) if full else (k, k)
    return [(x.dtype, TensorShape(batch + [m, q_cols])), (x.dtype, TensorShape(batch + [r_rows, n]))]


def qr(input, full_matrices: bool = False, name: Optional[str] = None) -> Tuple[Tensor, Tensor]:  # noqa: A002
    """QR decomposition of (a batch of) matrices: returns (q, r). It has no gradient yet."""
    x = convert_to_tensor(input)
    q, r = op("Qr", [x], {"full_matrices": bool(full_matrices)}, name=name or "Qr").outputs
    return q, r
