"""Image resizing ops: ResizeBilinear, ResizeNearestNeighbor and their gradients.

Sampling follows TensorFlow 1.x's (pre half-pixel) convention: output pixel y reads input
coordinate ``y * scale`` with ``scale = in / out``, or ``(in - 1) / (out - 1)`` with
``align_corners`` (so the corner pixels of input and output line up). Bilinear outputs are
float32 whatever the input type; nearest neighbour keeps the input's type.
"""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_gradient, register_op
from ..framework.tensor_shape import TensorShape
from ._nn_util import REALS, const_ints, rank_dims
from . import _shapes

__all__ = ["resize_bilinear", "resize_nearest_neighbor"]


def _size_dims(op, size_t: Tensor):
    """The (height, width) a resize op's ``size`` input gives, Nones where not known yet."""
    if size_t.dtype is not dtypes.int32:
        raise TypeError(f"Input 'size' of '{op.type}' Op '{op.name}' has type {size_t.dtype.name} "
                        "that does not match expected type of int32.")
    if size_t.shape.ndims not in (None, 1) or size_t.shape.as_list() not in (None, [None], [2]):
        raise ValueError(f"'{op.name}' (op: '{op.type}'): size must be a 1-D int32 tensor of 2 "
                         f"elements, got shape {size_t.shape}")
    size = const_ints(size_t)
    if size is None:
        return None, None
    if any(d <= 0 for d in size):
        raise ValueError(f"'{op.name}' (op: '{op.type}'): output dimensions must be positive, "
                         f"got {size}")
    return size[0], size[1]


def _resize_shape(out_dtype):
    def rule(op):
        images, size_t = op.inputs
        _shapes.check_dtype_in(op, images, REALS)
        batch, _, _, depth = rank_dims(op, images, 4)
        height, width = _size_dims(op, size_t)
        return [(out_dtype or images.dtype, TensorShape([batch, height, width, depth]))]
    return rule


register_op("ResizeBilinear")(_resize_shape(dtypes.float32))
register_op("ResizeNearestNeighbor")(_resize_shape(None))


@register_op("ResizeBilinearGrad")
def _resize_bilinear_grad_shape(op):
    grads, original = op.inputs
    _shapes.check_dtype_in(op, grads, (dtypes.float32,))
    _shapes.check_dtype_in(op, original, (dtypes.float16, dtypes.float32, dtypes.float64))
    rank_dims(op, grads, 4)
    return [(original.dtype, original.shape.with_rank(4))]


@register_op("ResizeNearestNeighborGrad")
def _resize_nearest_grad_shape(op):
    grads, size_t = op.inputs
    _shapes.check_dtype_in(op, grads, REALS)
    batch, _, _, depth = rank_dims(op, grads, 4)
    height, width = _size_dims(op, size_t)
    return [(grads.dtype, TensorShape([batch, height, width, depth]))]


@register_gradient("ResizeBilinear")
def _resize_bilinear_grad(op, grad):
    images = op.inputs[0]
    if not images.dtype.is_floating:
        return [None, None]
    back = _new_op("ResizeBilinearGrad", [grad, images],
                   {"align_corners": op.get_attr("align_corners")}).outputs[0]
    return [back, None]


@register_gradient("ResizeNearestNeighbor")
def _resize_nearest_grad(op, grad):
    from .array_ops import shape, strided_slice
    images = op.inputs[0]
    if images.shape.ndims == 4 and all(d is not None for d in images.shape.as_list()[1:3]):
        hw = convert_to_tensor(images.shape.as_list()[1:3], dtype=dtypes.int32)
    else:
        hw = strided_slice(shape(images), [1], [3])
    back = _new_op("ResizeNearestNeighborGrad", [grad, hw],
                   {"align_corners": op.get_attr("align_corners")}).outputs[0]
    return [back, None]


NotDifferentiable("ResizeBilinearGrad")
NotDifferentiable("ResizeNearestNeighborGrad")


def _resize(op_type: str, images, size, align_corners: bool, name: Optional[str]) -> Tensor:
    images = convert_to_tensor(images, name="images")
    size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
    return _new_op(op_type, [images, size], {"align_corners": bool(align_corners)},
                   name=name or op_type).outputs[0]


def resize_bilinear(images, size, align_corners: bool = False,
                    name: Optional[str] = None) -> Tensor:
    """``images`` [batch, height, width, channels] resized to ``size`` = [new_height, new_width]
    by bilinear interpolation; float32."""
    return _resize("ResizeBilinear", images, size, align_corners, name)


def resize_nearest_neighbor(images, size, align_corners: bool = False,
                            name: Optional[str] = None) -> Tensor:
    """``images`` [batch, height, width, channels] resized to ``size`` by nearest neighbour."""
    return _resize("ResizeNearestNeighbor", images, size, align_corners, name)
