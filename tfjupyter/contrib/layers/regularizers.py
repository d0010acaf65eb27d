"""Regularizers: functions ``weights -> scalar loss`` for ``get_variable(regularizer=...)``.

``tf.contrib.layers.l2_regularizer(0.0001)(w)`` is ``0.0001 * tf.nn.l2_loss(w)`` (half the sum of
squares), built in a name scope 'l2_regularizer' so that ``tf.get_collection('losses', scope)``
finds each tower's losses by name.
"""
from __future__ import annotations

import numbers
from typing import Callable, Optional, Sequence

from ... import nn
from ...framework.ops import (GraphKeys, Tensor, add_to_collection, convert_to_tensor,
                              get_collection, name_scope)
from ...ops import array_ops, math_ops

__all__ = ["l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "sum_regularizer",
           "apply_regularization"]

Regularizer = Callable[[object], Optional[Tensor]]


def _check_scale(scale, what: str = "scale") -> bool:
    """Validates a scale; True when it is a Python zero (the regularizer is disabled)."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"{what} cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}.")
        return scale == 0.
    return False


def _disabled(_) -> None:
    return None


def l1_regularizer(scale: float, scope: Optional[str] = None) -> Regularizer:
    """``weights -> scale * sum(|weights|)``; a scale of 0.0 gives a regularizer returning None."""
    if _check_scale(scale):
        return _disabled

    def l1(weights, name=None):
        with name_scope(scope, "l1_regularizer", [weights]) as name:
            my_scale = convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return math_ops.multiply(my_scale, math_ops.reduce_sum(math_ops.abs(weights)),
                                     name=name)
    return l1


def l2_regularizer(scale: float, scope: Optional[str] = None) -> Regularizer:
    """``weights -> scale * tf.nn.l2_loss(weights)`` (= scale * sum(weights ** 2) / 2); a scale
    of 0.0 gives a regularizer returning None."""
    if _check_scale(scale):
        return _disabled

    def l2(weights):
        with name_scope(scope, "l2_regularizer", [weights]) as name:
            my_scale = convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return math_ops.multiply(my_scale, nn.l2_loss(weights), name=name)
    return l2


def l1_l2_regularizer(scale_l1: float = 1.0, scale_l2: float = 1.0,
                      scope: Optional[str] = None) -> Regularizer:
    """``l1_regularizer(scale_l1)(w) + l2_regularizer(scale_l2)(w)``."""
    l1_off = _check_scale(scale_l1, "scale_l1")
    l2_off = _check_scale(scale_l2, "scale_l2")
    scope = scope or "l1_l2_regularizer"
    if l1_off:
        return l2_regularizer(scale_l2, scope)
    if l2_off:
        return l1_regularizer(scale_l1, scope)
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def sum_regularizer(regularizer_list: Sequence[Optional[Regularizer]],
                    scope: Optional[str] = None) -> Optional[Regularizer]:
    """A regularizer adding the others' results (None entries and None results are skipped);
    None if the list has no regularizers."""
    regularizer_list = [reg for reg in regularizer_list if reg is not None]
    if not regularizer_list:
        return None

    def sum_reg(weights):
        with name_scope(scope, "sum_regularizer", [weights]) as name:
            tensors = [t for t in (reg(weights) for reg in regularizer_list) if t is not None]
            return math_ops.add_n(tensors, name=name) if tensors else None
    return sum_reg


def apply_regularization(regularizer: Regularizer, weights_list=None) -> Tensor:
    """Sums ``regularizer(w)`` over weights_list (default: the 'weights' collection) and adds
    the sum to GraphKeys.REGULARIZATION_LOSSES."""
    if not weights_list:
        weights_list = get_collection(getattr(GraphKeys, "WEIGHTS", "weights"))
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with name_scope("get_regularization_penalty", values=weights_list) as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else array_ops.constant(0.0) for p in penalties]
        for p in penalties:
            if p.get_shape().ndims != 0:
                raise ValueError("regularizer must return a scalar Tensor instead of a Tensor "
                                 f"with rank {p.get_shape().ndims}.")
        summed_penalty = math_ops.add_n(penalties, name=scope)
    add_to_collection(GraphKeys.REGULARIZATION_LOSSES, summed_penalty)
    return summed_penalty
