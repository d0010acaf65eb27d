"""``tf.contrib.layers`` initializers: Xavier/Glorot and He-style variance scaling."""
from __future__ import annotations

import math
from typing import Callable, Optional

from ...framework import dtypes
from ...ops import random_ops

__all__ = ["xavier_initializer", "xavier_initializer_conv2d", "variance_scaling_initializer"]


def xavier_initializer(uniform: bool = True, seed: Optional[int] = None,
                       dtype=dtypes.float32) -> Callable:
    """Glorot & Bengio (2010): variance 2 / (fan_in + fan_out); uniform or truncated normal."""
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform, seed=seed,
                                        dtype=dtype)


xavier_initializer_conv2d = xavier_initializer


def variance_scaling_initializer(factor: float = 2.0, mode: str = "FAN_IN", uniform: bool = False,
                                 seed: Optional[int] = None, dtype=dtypes.float32) -> Callable:
    """Samples with stddev sqrt(factor / n), n = fan_in, fan_out or their average (``mode``).

    The defaults (factor 2, FAN_IN, normal) are He et al. (2015) for ReLU layers. fan_in is
    shape[-2] (shape[-1] for vectors), fan_out shape[-1], both times the product of the
    leading (kernel) dimensions. Normal samples come from a truncated normal, scaled by
    sqrt(1.3) to compensate for the truncation, as TensorFlow does.
    """
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")
    default_dtype = dtype

    def _initializer(shape, dtype=default_dtype, partition_info=None):
        dtype = dtypes.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        shape = [int(d) for d in shape]
        if shape:
            fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
            fan_out = float(shape[-1])
        else:
            fan_in = fan_out = 1.0
        for dim in shape[:-2]:
            fan_in *= float(dim)
            fan_out *= float(dim)
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        n = max(n, 1.0)  # zero-size shapes
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return random_ops.random_uniform(shape, -limit, limit, dtype, seed=seed)
        trunc_stddev = math.sqrt(1.3 * factor / n)
        return random_ops.truncated_normal(shape, 0.0, trunc_stddev, dtype, seed=seed)
    return _initializer
