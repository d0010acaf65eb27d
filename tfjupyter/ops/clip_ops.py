"""Clipping: clip_by_value, clip_by_norm, clip_by_average_norm, global_norm, clip_by_global_norm.

Compositions of the math ops (``math_ops`` re-exports this module), as in TensorFlow 1.x.
clip_by_norm, global_norm and clip_by_global_norm take IndexedSlices (sparse gradients) as
TensorFlow does: they work on the slices' values, and return IndexedSlices for them.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from ..framework.indexed_slices import IndexedSlices
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from . import array_ops
from .math_ops import (add, add_n, cast, greater, maximum, minimum, multiply, realdiv, rsqrt,
                       sqrt, square, subtract)
from .reduction_ops import range, reduce_sum

__all__ = ["clip_by_value", "clip_by_norm", "clip_by_average_norm", "global_norm",
           "clip_by_global_norm"]


def _must_not_broadcast(t: Tensor, result: Tensor) -> None:
    """Clipping must not change the shape of ``t`` (no accidental broadcasting)."""
    if not t.shape.is_compatible_with(result.shape):
        raise ValueError(f"Shapes {t.shape} and {result.shape} are not compatible: clipping "
                         f"{t.name} would broadcast it.")


def clip_by_value(t, clip_value_min, clip_value_max, name: Optional[str] = None) -> Tensor:
    """``t`` with values below ``clip_value_min`` / above ``clip_value_max`` replaced by them.
    The gradient passes where ``t`` is not clipped (and at the bounds themselves)."""
    with name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        t = convert_to_tensor(t, name="t")
        t_min = minimum(t, clip_value_max)
        _must_not_broadcast(t, t_min)
        t_max = maximum(t_min, clip_value_min, name=scope)
        _must_not_broadcast(t, t_max)
        return t_max


def _values_of(t):
    """The tensor whose entries are t's: t itself, or an IndexedSlices' values."""
    return t.values if isinstance(t, IndexedSlices) else t


def _like(t, values):
    """``values`` in the form of ``t``: an IndexedSlices at t's indices when t is one."""
    return IndexedSlices(values, t.indices, t.dense_shape) if isinstance(t, IndexedSlices) \
        else values


def clip_by_norm(t, clip_norm, axes=None, name: Optional[str] = None):
    """``t * clip_norm / max(l2norm(t), clip_norm)``, the norm taken over ``axes`` (all by
    default): tensors whose norm exceeds ``clip_norm`` are scaled down to it. For an
    IndexedSlices, the norm is its values' (as in TensorFlow) and the result an IndexedSlices."""
    with name_scope(name, "clip_by_norm", [_values_of(t), clip_norm]) as scope:
        if isinstance(t, IndexedSlices):
            return _like(t, clip_by_norm(t.values, clip_norm, axes, name=scope))
        t = convert_to_tensor(t, name="t")
        l2sum = reduce_sum(multiply(t, t), axes, keepdims=True)
        # sqrt has no gradient at 0: take it of 1 where the sum is 0 and use 0 there instead
        # (TensorFlow's double-where trick, as a mask).
        nonzero = cast(greater(l2sum, 0), t.dtype)
        l2norm = multiply(sqrt(add(l2sum, subtract(1, nonzero))), nonzero)
        intermediate = multiply(t, clip_norm)
        _must_not_broadcast(t, intermediate)
        return array_ops.identity(realdiv(intermediate, maximum(l2norm, clip_norm)), name=scope)


def clip_by_average_norm(t, clip_norm, name: Optional[str] = None) -> Tensor:
    """``t * clip_norm / max(l2norm(t) / size(t), clip_norm)``."""
    with name_scope(name, "clip_by_average_norm", [t, clip_norm]) as scope:
        t = convert_to_tensor(t, name="t")
        n_element = cast(array_ops.size(t), t.dtype)
        l2norm_inv = rsqrt(reduce_sum(multiply(t, t), range(array_ops.rank(t))))
        one = array_ops.constant(1.0, dtype=t.dtype)
        scale = minimum(multiply(l2norm_inv, n_element), realdiv(one, clip_norm))
        return array_ops.identity(multiply(multiply(t, clip_norm), scale), name=scope)


def _tensor_list(t_list, what: str = "t_list") -> list:
    if not isinstance(t_list, (list, tuple)):
        raise TypeError(f"{what} should be a sequence")
    return list(t_list)


def global_norm(t_list, name: Optional[str] = None) -> Tensor:
    """``sqrt(sum(l2norm(t)**2 for t in t_list))``; None entries are ignored, IndexedSlices
    count their values."""
    t_list = _tensor_list(t_list)
    with name_scope(name, "global_norm", t_list):
        values = [convert_to_tensor(_values_of(t), name=f"t_{i}") for i, t in enumerate(t_list)
                  if t is not None]
        if not values:
            raise ValueError("global_norm needs at least one tensor that is not None")
        for v in values[1:]:
            if v.dtype is not values[0].dtype:
                raise TypeError(f"global_norm: all tensors must have one dtype, got "
                                f"{values[0].dtype.name} ({values[0].name}) and {v.dtype.name} "
                                f"({v.name})")
        squared = add_n([reduce_sum(square(v)) for v in values])
        return sqrt(squared, name="global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name: Optional[str] = None
                        ) -> Tuple[list, Tensor]:
    """Scales every tensor by ``clip_norm / max(global_norm, clip_norm)``; returns the clipped
    list (None entries stay None) and the global norm. An infinite or NaN norm makes every
    clipped value NaN, as in TensorFlow."""
    t_list = _tensor_list(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with name_scope(name, "clip_by_global_norm",
                    [_values_of(t) for t in t_list] + [clip_norm]) as scope:
        use_norm = convert_to_tensor(use_norm)
        one = array_ops.constant(1.0, dtype=use_norm.dtype)
        scale_for_finite = multiply(clip_norm, minimum(realdiv(one, use_norm),
                                                       realdiv(one, clip_norm)))
        scale = add(scale_for_finite, subtract(use_norm, use_norm))  # NaN if the norm is not finite
        clipped: List[Optional[Tensor]] = []
        for i, t in enumerate(t_list):
            if t is None:
                clipped.append(None)
                continue
            v = convert_to_tensor(_values_of(t), name=f"t_{i}")
            clipped.append(_like(t, array_ops.identity(
                multiply(v, cast(scale, v.dtype)),
                name=f"{scope.rstrip('/').split('/')[-1]}_{i}")))
        return clipped, use_norm
