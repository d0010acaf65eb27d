"""Array ops: constants, placeholders, identity, and shape manipulation."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, get_default_graph, numpy_to_tensor_value, op
from ..framework.registry import NotDifferentiable, register_gradient, register_op
from ..framework.tensor_shape import TensorShape, as_shape
from . import _shapes

__all__ = ["constant", "placeholder", "placeholder_with_default", "identity", "stop_gradient"]


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
    value = numpy_to_tensor_value(value, dtype)
    if shape is not None:
        shape = tuple(int(d) for d in as_shape(shape).as_list())
        value = _fit_to_shape(value, shape, name, verify_shape)
    tf_dtype = dtypes.as_dtype(value.dtype) if dtype is None else dtype
    value.setflags(write=False)  # kernels hand this buffer out; nothing may write into it
    return op("Const", [], {"value": value, "dtype": tf_dtype}, name=name).outputs[0]


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
    return op("Placeholder", [], {"dtype": dtypes.as_dtype(dtype), "shape": as_shape(shape)},
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
    return op("PlaceholderWithDefault", [x], {"shape": as_shape(shape)},
              name=name or "PlaceholderWithDefault").outputs[0]


# -- Identity, StopGradient -----------------------------------------------------------------------------
register_op("Identity")(_shapes.unchanged)


@register_gradient("Identity")
def _identity_grad(op, grad):
    return [grad]


def identity(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    x = convert_to_tensor(input)
    return op("Identity", [x], name=name or "Identity").outputs[0]


register_op("StopGradient")(_shapes.unchanged)
NotDifferentiable("StopGradient")


def stop_gradient(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    return op("StopGradient", [convert_to_tensor(input)], name=name or "StopGradient").outputs[0]
