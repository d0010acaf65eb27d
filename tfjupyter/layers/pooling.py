"""``tf.layers`` pooling: max and average pooling over 1 or 2 spatial dimensions (no
variables), and their functional forms."""
from __future__ import annotations

from typing import Optional

from ..framework.ops import Tensor
from ..ops import array_ops, nn_ops
from .base import Layer
from .utils import (normalize_data_format, normalize_padding, normalize_tuple, to_channels_last,
                    to_data_format)

__all__ = ["MaxPooling1D", "MaxPooling2D", "AveragePooling1D", "AveragePooling2D",
           "max_pooling1d", "max_pooling2d", "average_pooling1d", "average_pooling2d",
           "MaxPool1D", "MaxPool2D", "AvgPool1D", "AvgPool2D"]


class _Pooling(Layer):
    """Pools windows of ``pool_size`` every ``strides`` with the MaxPool/AvgPool kernels; a 1-D
    pooling is a 2-D one over a height of 1, as TensorFlow does it."""

    rank = 2
    pool_function = staticmethod(nn_ops.max_pool)

    def __init__(self, pool_size, strides, padding: str = "valid",
                 data_format: str = "channels_last", name: Optional[str] = None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = normalize_tuple(pool_size, self.rank, "pool_size")
        self.strides = normalize_tuple(strides, self.rank, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)

    def call(self, inputs: Tensor) -> Tensor:
        rank = inputs.get_shape().ndims
        if rank is not None and rank != self.rank + 2:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim={self.rank + 2}, found ndim={rank}.")
        x = to_channels_last(inputs, self.data_format)
        pool_size, strides = self.pool_size, self.strides
        if self.rank == 1:
            x = array_ops.expand_dims(x, 1)
            pool_size, strides = (1, *pool_size), (1, *strides)
        outputs = self.pool_function(x, [1, *pool_size, 1], [1, *strides, 1],
                                     self.padding.upper(), data_format="NHWC")
        if self.rank == 1:
            outputs = array_ops.squeeze(outputs, [1])
        return to_data_format(outputs, self.data_format)


class MaxPooling1D(_Pooling):
    rank = 1
    pool_function = staticmethod(nn_ops.max_pool)


class MaxPooling2D(_Pooling):
    rank = 2
    pool_function = staticmethod(nn_ops.max_pool)


class AveragePooling1D(_Pooling):
    rank = 1
    pool_function = staticmethod(nn_ops.avg_pool)


class AveragePooling2D(_Pooling):
    rank = 2
    pool_function = staticmethod(nn_ops.avg_pool)


MaxPool1D, MaxPool2D = MaxPooling1D, MaxPooling2D
AvgPool1D, AvgPool2D = AveragePooling1D, AveragePooling2D


def max_pooling1d(inputs, pool_size, strides, padding: str = "valid",
                  data_format: str = "channels_last", name: Optional[str] = None) -> Tensor:
    return MaxPooling1D(pool_size, strides, padding, data_format, name=name).apply(inputs)


def max_pooling2d(inputs, pool_size, strides, padding: str = "valid",
                  data_format: str = "channels_last", name: Optional[str] = None) -> Tensor:
    return MaxPooling2D(pool_size, strides, padding, data_format, name=name).apply(inputs)


def average_pooling1d(inputs, pool_size, strides, padding: str = "valid",
                      data_format: str = "channels_last", name: Optional[str] = None) -> Tensor:
    return AveragePooling1D(pool_size, strides, padding, data_format, name=name).apply(inputs)


def average_pooling2d(inputs, pool_size, strides, padding: str = "valid",
                      data_format: str = "channels_last", name: Optional[str] = None) -> Tensor:
    return AveragePooling2D(pool_size, strides, padding, data_format, name=name).apply(inputs)
