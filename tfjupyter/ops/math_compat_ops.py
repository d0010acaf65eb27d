"""Math ops that TF 1.x added late (1.12-1.15) and programs of that time use, composed of
existing ops: ``tf.div_no_nan``, ``tf.math.reduce_variance``/``reduce_std``,
``tf.saturate_cast``."""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from . import array_ops, math_ops
from .array_index_ops import where

__all__ = ["div_no_nan", "reduce_variance", "reduce_std", "saturate_cast"]


def div_no_nan(x, y, name: Optional[str] = None) -> Tensor:
    """``x / y``, but 0 wherever ``y`` is 0 (even where ``x`` is 0, inf or nan)."""
    with name_scope(name, "div_no_nan", [x, y]) as scope:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype)
        # Divide by 1 where y is 0, so that no inf/nan is made that the select would hide.
        safe_y = where(math_ops.equal(y, 0), array_ops.ones_like(y), y)
        quotient = math_ops.divide(x, safe_y)
        y_like_quotient = array_ops.zeros_like(quotient) + y     # y broadcast to x / y's shape
        return where(math_ops.equal(y_like_quotient, 0), array_ops.zeros_like(quotient),
                     quotient, name=scope)


def reduce_variance(input_tensor, axis=None, keepdims: bool = False,
                    name: Optional[str] = None) -> Tensor:
    """The (population) variance of the elements along ``axis``."""
    with name_scope(name, "reduce_variance", [input_tensor]):
        x = convert_to_tensor(input_tensor)
        centered = x - math_ops.reduce_mean(x, axis=axis, keepdims=True)
        return math_ops.reduce_mean(math_ops.square(centered), axis=axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims: bool = False,
               name: Optional[str] = None) -> Tensor:
    """The (population) standard deviation of the elements along ``axis``."""
    with name_scope(name, "reduce_std", [input_tensor]):
        return math_ops.sqrt(reduce_variance(input_tensor, axis, keepdims))


def saturate_cast(value, dtype, name: Optional[str] = None) -> Tensor:
    """``value`` cast to ``dtype``, first clipped to the range ``dtype`` can hold (a plain cast
    of an out-of-range number wraps or is undefined)."""
    with name_scope(name, "saturate_cast", [value]) as scope:
        value = convert_to_tensor(value, name="value")
        dtype = dtypes.as_dtype(dtype)
        if value.dtype.min < dtype.min:
            value = math_ops.maximum(value, math_ops.cast(dtype.min, value.dtype))
        if value.dtype.max > dtype.max:
            value = math_ops.minimum(value, math_ops.cast(dtype.max, value.dtype))
        return math_ops.cast(value, dtype, name=scope)
