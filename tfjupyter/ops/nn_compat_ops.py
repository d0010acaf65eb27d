"""``tf.nn`` functions that TF 1.13-1.15 added, composed of existing ops: ``swish``,
``log_poisson_loss``, and ``max_pool2d``/``avg_pool2d`` (which take ``ksize``/``strides`` as
one int, two or four)."""
from __future__ import annotations

import math
from typing import Optional

from ..framework.ops import Tensor, convert_to_tensor, name_scope
from . import array_ops, math_ops
from .array_index_ops import where
from .nn_conv_ops import avg_pool, max_pool

__all__ = ["swish", "log_poisson_loss", "max_pool2d", "avg_pool2d"]


def swish(features, name: Optional[str] = None) -> Tensor:
    """``features * sigmoid(features)`` (Ramachandran et al., 2017)."""
    with name_scope(name, "swish", [features]):
        features = convert_to_tensor(features, name="features")
        return features * math_ops.sigmoid(features)


def log_poisson_loss(targets, log_input, compute_full_loss: bool = False,
                     name: Optional[str] = None) -> Tensor:
    """The negative log-likelihood of ``targets`` under a Poisson of log-rate ``log_input``,
    ``exp(log_input) - log_input * targets``; ``compute_full_loss`` adds Stirling's
    approximation of ``log(targets!)`` (for targets above 1, as TensorFlow)."""
    with name_scope(name, "log_poisson_loss", [log_input, targets]):
        log_input = convert_to_tensor(log_input, name="log_input")
        targets = convert_to_tensor(targets, name="targets", dtype=log_input.dtype)
        targets.shape.assert_is_compatible_with(log_input.shape)
        result = math_ops.exp(log_input) - log_input * targets
        if compute_full_loss:
            stirling = (targets * math_ops.log(targets) - targets +
                        0.5 * math_ops.log(2 * math.pi * targets))
            zeros = array_ops.zeros_like(targets)
            small = math_ops.logical_and(math_ops.greater_equal(targets, zeros),
                                         math_ops.less_equal(targets, array_ops.ones_like(targets)))
            result += where(small, zeros, stirling)
        return result


def _nhwc_window(value, what: str, data_format: str):
    """``ksize``/``strides`` as the 4 values of a 4-D window: an int or 1, 2 or 4 of them."""
    values = [value] if isinstance(value, int) else list(value)
    if len(values) == 4:
        return values
    if len(values) not in (1, 2):
        raise ValueError(f"{what} should be of length 1, 2 or 4, got {len(values)}")
    spatial = values * 2 if len(values) == 1 else values
    return [1, 1] + spatial if data_format.startswith("NC") else [1] + spatial + [1]


def max_pool2d(input, ksize, strides, padding: str, data_format: str = "NHWC",  # noqa: A002
               name: Optional[str] = None) -> Tensor:
    return max_pool(input, _nhwc_window(ksize, "ksize", data_format),
                    _nhwc_window(strides, "strides", data_format), padding, data_format, name)


def avg_pool2d(input, ksize, strides, padding: str, data_format: str = "NHWC",  # noqa: A002
               name: Optional[str] = None) -> Tensor:
    return avg_pool(input, _nhwc_window(ksize, "ksize", data_format),
                    _nhwc_window(strides, "strides", data_format), padding, data_format, name)
