"""Learning-rate schedules, built from graph ops on the global step (TensorFlow 1.x's
learning_rate_decay). Each returns a scalar Tensor of the learning rate's dtype to pass to an
optimizer; it changes as the global step does."""
from __future__ import annotations

import math
from typing import Optional, Sequence

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..ops import array_ops, math_ops

__all__ = ["exponential_decay", "piecewise_constant", "inverse_time_decay", "natural_exp_decay",
           "polynomial_decay", "cosine_decay"]


def _require_step(global_step, schedule: str) -> None:
    if global_step is None:
        raise ValueError(f"global_step is required for {schedule}.")


def _as(value, dtype) -> Tensor:
    """``value`` as a tensor of ``dtype``: Python numbers directly, tensors through a Cast."""
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        value = convert_to_tensor(value)
        return value if value.dtype is dtype else math_ops.cast(value, dtype)
    return convert_to_tensor(value, dtype=dtype)


def _decay_progress(learning_rate, global_step, decay_steps, staircase: bool):
    """(learning_rate, global_step / decay_steps, floored when staircase), in the rate's dtype."""
    learning_rate = convert_to_tensor(learning_rate, name="learning_rate")
    dtype = learning_rate.dtype
    if not dtype.is_floating:
        raise TypeError(f"learning_rate must be a floating point value, got {dtype.name}: "
                        f"{learning_rate}")
    p = _as(global_step, dtype) / _as(decay_steps, dtype)
    if staircase:
        p = math_ops.floor(p)
    return learning_rate, dtype, p


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate,
                      staircase: bool = False, name: Optional[str] = None) -> Tensor:
    """``learning_rate * decay_rate ^ (global_step / decay_steps)``; with ``staircase`` the
    exponent is floored, so the rate drops once every ``decay_steps`` steps."""
    _require_step(global_step, "exponential_decay")
    with name_scope(name, "ExponentialDecay",
                    [learning_rate, global_step, decay_steps, decay_rate]) as scope:
        learning_rate, dtype, p = _decay_progress(learning_rate, global_step, decay_steps,
                                                  staircase)
        return math_ops.multiply(learning_rate, math_ops.pow(_as(decay_rate, dtype), p),
                                 name=scope)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate,
                      staircase: bool = False, name: Optional[str] = None) -> Tensor:
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)`` (exponent floored
    with ``staircase``)."""
    _require_step(global_step, "natural_exp_decay")
    with name_scope(name, "NaturalExpDecay",
                    [learning_rate, global_step, decay_steps, decay_rate]) as scope:
        learning_rate, dtype, p = _decay_progress(learning_rate, global_step, decay_steps,
                                                  staircase)
        exponent = math_ops.exp(math_ops.multiply(math_ops.negative(_as(decay_rate, dtype)), p))
        return math_ops.multiply(learning_rate, exponent, name=scope)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate,
                       staircase: bool = False, name: Optional[str] = None) -> Tensor:
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)`` (the ratio floored
    with ``staircase``)."""
    _require_step(global_step, "inverse_time_decay")
    with name_scope(name, "InverseTimeDecay",
                    [learning_rate, global_step, decay_steps, decay_rate]) as scope:
        learning_rate, dtype, p = _decay_progress(learning_rate, global_step, decay_steps,
                                                  staircase)
        denom = math_ops.add(_as(1, dtype), math_ops.multiply(_as(decay_rate, dtype), p))
        return math_ops.truediv(learning_rate, denom, name=scope)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle: bool = False, name: Optional[str] = None) -> Tensor:
    """Decays from ``learning_rate`` to ``end_learning_rate`` over ``decay_steps`` steps:
    ``(lr - end) * (1 - step / decay_steps) ^ power + end``, with the step capped at
    ``decay_steps``; with ``cycle``, decay_steps grows to the first multiple above the step."""
    _require_step(global_step, "polynomial_decay")
    with name_scope(name, "PolynomialDecay",
                    [learning_rate, global_step, decay_steps, end_learning_rate, power]) as scope:
        learning_rate = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = learning_rate.dtype
        step = _as(global_step, dtype)
        decay_steps = _as(decay_steps, dtype)
        end_learning_rate = _as(end_learning_rate, dtype)
        power = _as(power, dtype)
        if cycle:
            # The first multiple of decay_steps at or above the step; 1 at step 0.
            multiplier = math_ops.maximum(math_ops.ceil(step / decay_steps), _as(1, dtype))
            decay_steps = math_ops.multiply(decay_steps, multiplier)
        else:
            step = math_ops.minimum(step, decay_steps)
        p = step / decay_steps
        return math_ops.add(
            math_ops.multiply(learning_rate - end_learning_rate,
                              math_ops.pow(_as(1, dtype) - p, power)),
            end_learning_rate, name=scope)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0,
                 name: Optional[str] = None) -> Tensor:
    """``learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
    decay_steps)) + alpha)`` (Loshchilov & Hutter, SGDR)."""
    _require_step(global_step, "cosine_decay")
    with name_scope(name, "CosineDecay", [learning_rate, global_step]) as scope:
        learning_rate = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = learning_rate.dtype
        decay_steps = _as(decay_steps, dtype)
        step = math_ops.minimum(_as(global_step, dtype), decay_steps)
        cosine = _as(0.5, dtype) * (_as(1, dtype) + math_ops.cos(
            _as(math.pi, dtype) * step / decay_steps))
        alpha = _as(alpha, dtype)
        decayed = (_as(1, dtype) - alpha) * cosine + alpha
        return math_ops.multiply(learning_rate, decayed, name=scope)


def piecewise_constant(x, boundaries: Sequence, values: Sequence,
                       name: Optional[str] = None) -> Tensor:
    """``values[0]`` while ``x <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < x <= boundaries[i]``, ``values[-1]`` once ``x > boundaries[-1]``.

    ``x`` is a scalar (usually the global step); the boundaries must have its dtype (Python
    ints are accepted for an int64 ``x``), and the values must all have one dtype."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with name_scope(name, "PiecewiseConstant", [x]) as scope:
        x = convert_to_tensor(x)
        if x.shape.ndims not in (None, 0):
            raise ValueError(f"piecewise_constant: x must be a scalar, got shape {x.shape}: {x}")
        bounds = []
        for b in boundaries:
            if x.dtype is dtypes.int64 and isinstance(b, int):
                b = convert_to_tensor(b, dtype=dtypes.int64)  # int32 promotes without loss
            b = convert_to_tensor(b)
            if b.dtype is dtypes.int32 and x.dtype is dtypes.int64:
                b = math_ops.cast(b, dtypes.int64)
            elif b.dtype is not x.dtype:
                raise ValueError(f"Boundaries ({b.dtype}) must have the same dtype as x "
                                 f"({x.dtype}).")
            bounds.append(b)
        vals = [convert_to_tensor(v) for v in values]
        for v in vals[1:]:
            if v.dtype is not vals[0].dtype:
                raise ValueError(f"Values must have elements all with the same dtype "
                                 f"({vals[0].dtype} vs {v.dtype}).")
        # With increasing boundaries, the last boundary below x picks the value.
        result = vals[0]
        for i, (b, v) in enumerate(zip(bounds, vals[1:])):
            last = i == len(bounds) - 1
            result = array_ops.where(math_ops.greater(x, b), v, result,
                                     name=scope if last else None)
        if not bounds:
            result = array_ops.identity(result, name=scope)
        return result
