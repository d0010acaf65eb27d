"""Argument checks shared by the layers (TF's keras ``conv_utils``), and the helpers that let
channels_first layers run on kernels that only know channels_last (NHWC)."""
from __future__ import annotations

from typing import Optional, Tuple

from ..framework.ops import Tensor
from ..ops import array_ops


def normalize_tuple(value, n: int, name: str) -> Tuple[int, ...]:
    """An int or n ints -> a tuple of n ints (kernel sizes, strides, dilation rates)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    try:
        values = tuple(value)
    except TypeError:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. "
                         f"Received: {value!r}") from None
    if len(values) != n or not all(isinstance(v, int) and not isinstance(v, bool)
                                   for v in values):
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. "
                         f"Received: {value!r}")
    return values


def normalize_padding(value: str) -> str:
    """'valid' or 'same', in any case (TF accepts 'SAME')."""
    padding = str(value).lower()
    if padding not in ("valid", "same"):
        raise ValueError("The `padding` argument must be one of \"valid\", \"same\". "
                         f"Received: {value!r}")
    return padding


def normalize_data_format(value: Optional[str]) -> str:
    """'channels_last' (default) or 'channels_first'."""
    data_format = "channels_last" if value is None else str(value).lower()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError('The `data_format` argument must be one of "channels_first", '
                         f'"channels_last". Received: {value!r}')
    return data_format


def to_channels_last(inputs: Tensor, data_format: str) -> Tensor:
    """Our Conv2D/MaxPool/AvgPool kernels only run NHWC, so a channels_first layer transposes
    its input to channels_last and its output back (the kernel's layout, [kh, kw, in, out], is
    the same for both formats, so checkpoints are unaffected)."""
    if data_format == "channels_last":
        return inputs
    rank = inputs.get_shape().ndims
    if rank is None:
        raise ValueError(f"A channels_first layer needs inputs of known rank; {inputs.name} has "
                         "unknown shape.")
    return array_ops.transpose(inputs, [0] + list(range(2, rank)) + [1])


def to_data_format(outputs: Tensor, data_format: str) -> Tensor:
    """The inverse of ``to_channels_last``."""
    if data_format == "channels_last":
        return outputs
    rank = outputs.get_shape().ndims
    return array_ops.transpose(outputs, [0, rank - 1] + list(range(1, rank - 1)))
