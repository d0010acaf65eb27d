"""Math ops: elementwise arithmetic with broadcasting, matmul, reductions, comparisons, casts.

Also installs Tensor's Python operators (a + b, a @ b, -a, a < b, ...).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, op
from ..framework.registry import register_gradient, register_op
from ..framework.tensor_shape import TensorShape
from . import _shapes

__all__ = ["add", "multiply", "matmul"]


def _binary(op_type: str, x, y, name: Optional[str]) -> Tensor:
    x, y = _convert_pair(x, y)
    return op(op_type, [x, y], name=name or op_type).outputs[0]


def _convert_pair(x, y):
    """Converts two operands; a Python/numpy operand takes the dtype of the Tensor one."""
    if isinstance(x, Tensor) or hasattr(x, "_as_graph_element"):
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype=x.dtype) if not _is_tensorlike(y) else convert_to_tensor(y)
    elif _is_tensorlike(y):
        y = convert_to_tensor(y)
        x = convert_to_tensor(x, dtype=y.dtype)
    else:
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype=x.dtype)
    return x, y


def _is_tensorlike(v) -> bool:
    return isinstance(v, Tensor) or hasattr(v, "_as_graph_element")


def _sum_to_shape(grad: Tensor, x: Tensor) -> Tensor:
    """Undoes broadcasting: sums ``grad`` over the axes along which ``x`` was broadcast."""
    gs, xs = grad.shape, x.shape
    if gs.is_fully_defined() and xs.is_fully_defined() and gs.as_list() == xs.as_list():
        return grad
    return op("SumToShape", [grad, shape(x)], name="SumToShape").outputs[0]


@register_op("SumToShape")
def _sum_to_shape_shape(op):
    from .array_ops import _shape_from_tensor
    return [(op.inputs[0].dtype, _shape_from_tensor(op.inputs[1]))]


@register_gradient("SumToShape")
def _sum_to_shape_grad(op, grad):
    return [broadcast_to(grad, shape(op.inputs[0])), None]


# -- Add / Mul: the two ops every graph uses; the rest of the family follows the same pattern ----
register_op("Add")(_shapes.broadcast)
register_op("AddV2")(_shapes.broadcast)


@register_gradient("Add")
@register_gradient("AddV2")
def _add_grad(op, grad):
    x, y = op.inputs
    return [_sum_to_shape(grad, x), _sum_to_shape(grad, y)]


def add(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("Add", x, y, name)


register_op("Mul")(_shapes.broadcast)


@register_gradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return [_sum_to_shape(multiply(grad, y), x), _sum_to_shape(multiply(grad, x), y)]


def multiply(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("Mul", x, y, name)


# -- MatMul ----------------------------------------------------------------------------------------
@register_op("MatMul")
def _matmul_shape(op):
    a, b = op.inputs
    _shapes.check_same_dtype(op, a, b)
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    sa, sb = a.shape.with_rank(2).as_list(), b.shape.with_rank(2).as_list()
    m, ka = (sa[1], sa[0]) if ta else (sa[0], sa[1])
    kb, n = (sb[1], sb[0]) if tb else (sb[0], sb[1])
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(f"Dimensions must be equal, but are {ka} and {kb} for '{op.name}' "
                         f"(op: 'MatMul') with input shapes: {sa}, {sb}.")
    return [(a.dtype, TensorShape([m, n]))]


@register_gradient("MatMul")
def _matmul_grad(op, grad):
    a, b = op.inputs
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    if not ta and not tb:
        return [matmul(grad, b, transpose_b=True), matmul(a, grad, transpose_a=True)]
    if not ta and tb:
        return [matmul(grad, b), matmul(grad, a, transpose_a=True)]
    if ta and not tb:
        return [matmul(b, grad, transpose_b=True), matmul(a, grad)]
    return [matmul(b, grad, transpose_a=True, transpose_b=True),
            matmul(grad, a, transpose_a=True, transpose_b=True)]


def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False,
           name: Optional[str] = None) -> Tensor:
    a, b = _convert_pair(a, b)
    if a.shape.ndims is not None and a.shape.ndims > 2 or b.shape.ndims is not None and b.shape.ndims > 2:
        return batch_matmul(a, b, adj_x=transpose_a, adj_y=transpose_b, name=name)
    return op("MatMul", [a, b], {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)},
              name=name or "MatMul").outputs[0]
