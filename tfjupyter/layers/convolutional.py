"""``tf.layers`` convolutions: Conv1D and Conv2D (variables 'kernel' [k..., in, out] and
'bias' [out]), Conv2DTranspose (kernel [kh, kw, out, in]) and their functional forms."""
from __future__ import annotations

from typing import Optional

from .. import nn
from ..framework.ops import Tensor
from ..framework.tensor_shape import TensorShape
from ..init_ops import zeros_initializer
from ..ops import nn_ops
from ..ops.array_join_ops import stack
from ..ops.array_ops import shape
from .base import Layer
from .core import set_kernel_and_bias_options
from .utils import (normalize_data_format, normalize_padding, normalize_tuple, to_channels_last,
                    to_data_format)

__all__ = ["Conv1D", "Conv2D", "conv1d", "conv2d", "Convolution1D", "Convolution2D",
           "Conv2DTranspose", "conv2d_transpose", "Convolution2DTranspose"]


class _Conv(Layer):
    """An N-D convolution layer (N = 1 or 2): ``activation(conv(inputs, kernel) + bias)``."""

    rank = 2

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid",
                 data_format: str = "channels_last", dilation_rate=1, activation=None,
                 use_bias: bool = True, kernel_initializer=None,
                 bias_initializer=zeros_initializer(), kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable: bool = True, name: Optional[str] = None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.filters = int(filters)
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = normalize_tuple(strides, self.rank, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, self.rank, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
        set_kernel_and_bias_options(self, activation, use_bias, kernel_initializer,
                                    bias_initializer, kernel_regularizer, bias_regularizer,
                                    kernel_constraint, bias_constraint)

    def build(self, input_shape: TensorShape) -> None:
        input_shape = TensorShape(input_shape)
        if input_shape.ndims is not None and input_shape.ndims != self.rank + 2:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim={self.rank + 2}, found ndim={input_shape.ndims}. "
                             f"Full shape received: {input_shape}")
        channel_axis = 1 if self.data_format == "channels_first" else -1
        input_dim = None if input_shape.ndims is None else input_shape.as_list()[channel_axis]
        if input_dim is None:
            raise ValueError("The channel dimension of the inputs should be defined. "
                             "Found `None`.")
        self.kernel = self.add_weight("kernel", shape=self._kernel_shape(input_dim),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, trainable=True)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.filters],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, trainable=True)
        self.built = True

    def _kernel_shape(self, input_dim: int) -> list:
        return list(self.kernel_size) + [input_dim, self.filters]

    def call(self, inputs: Tensor) -> Tensor:
        x = to_channels_last(inputs, self.data_format)
        padding = self.padding.upper()
        if self.rank == 2:
            outputs = nn_ops.conv2d(x, self.kernel, [1, *self.strides, 1], padding,
                                    dilations=[1, *self.dilation_rate, 1])
        else:
            outputs = nn.convolution(x, self.kernel, padding, strides=self.strides,
                                     dilation_rate=self.dilation_rate, data_format="NWC")
        if self.use_bias:
            outputs = nn.bias_add(outputs, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return to_data_format(outputs, self.data_format)


class Conv1D(_Conv):
    """1-D convolution over [batch, width, channels] inputs; kernel [k, in, filters]."""
    rank = 1


class Conv2D(_Conv):
    """2-D convolution over [batch, height, width, channels] inputs; kernel
    [kh, kw, in, filters]."""
    rank = 2


Convolution1D = Conv1D
Convolution2D = Conv2D


def deconv_output_length(input_length, filter_size: int, padding: str, stride: int):
    """The length a transposed convolution makes of ``input_length`` (int, tensor or None)."""
    if input_length is None:
        return None
    input_length = input_length * stride
    if padding == "valid":
        input_length += max(filter_size - stride, 0)
    return input_length


class Conv2DTranspose(Conv2D):
    """The transpose of Conv2D ("deconvolution"): each input pixel spreads over a
    kernel-sized patch of an output ``strides`` times larger ('same') or larger by
    max(kernel - stride, 0) more ('valid'); kernel [kh, kw, filters, in]."""

    def _kernel_shape(self, input_dim: int) -> list:
        return list(self.kernel_size) + [self.filters, input_dim]

    def call(self, inputs: Tensor) -> Tensor:
        x = to_channels_last(inputs, self.data_format)
        dynamic = shape(x)
        static = x.shape.as_list()
        sizes = []
        for axis in (1, 2):
            k, stride = self.kernel_size[axis - 1], self.strides[axis - 1]
            length = static[axis] if static[axis] is not None else dynamic[axis]
            sizes.append(deconv_output_length(length, k, self.padding, stride))
        outputs = nn.conv2d_transpose(x, self.kernel, stack([dynamic[0], *sizes, self.filters]),
                                      [1, *self.strides, 1], self.padding.upper())
        outputs.set_shape([static[0]] + [n if isinstance(n, int) else None for n in sizes]
                          + [self.filters])
        if self.use_bias:
            outputs = nn.bias_add(outputs, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return to_data_format(outputs, self.data_format)


Convolution2DTranspose = Conv2DTranspose


def _conv(layer_class, inputs, filters, kernel_size, strides, padding, data_format,
          dilation_rate, activation, use_bias, kernel_initializer, bias_initializer,
          kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
          bias_constraint, trainable, name, reuse) -> Tensor:
    layer = layer_class(
        filters=filters, kernel_size=kernel_size, strides=strides, padding=padding,
        data_format=data_format, dilation_rate=dilation_rate, activation=activation,
        use_bias=use_bias, kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
        kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
        trainable=trainable, name=name, _reuse=reuse, _scope=name)
    return layer.apply(inputs)


def conv2d(inputs, filters: int, kernel_size, strides=(1, 1), padding: str = "valid",
           data_format: str = "channels_last", dilation_rate=(1, 1), activation=None,
           use_bias: bool = True, kernel_initializer=None, bias_initializer=zeros_initializer(),
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
           kernel_constraint=None, bias_constraint=None, trainable: bool = True,
           name: Optional[str] = None, reuse=None) -> Tensor:
    """The functional form of ``Conv2D``: variables '<name or conv2d_N>/kernel' and '/bias'."""
    return _conv(Conv2D, inputs, filters, kernel_size, strides, padding, data_format,
                 dilation_rate, activation, use_bias, kernel_initializer, bias_initializer,
                 kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                 bias_constraint, trainable, name, reuse)


def conv1d(inputs, filters: int, kernel_size, strides=1, padding: str = "valid",
           data_format: str = "channels_last", dilation_rate=1, activation=None,
           use_bias: bool = True, kernel_initializer=None, bias_initializer=zeros_initializer(),
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
           kernel_constraint=None, bias_constraint=None, trainable: bool = True,
           name: Optional[str] = None, reuse=None) -> Tensor:
    """The functional form of ``Conv1D``."""
    return _conv(Conv1D, inputs, filters, kernel_size, strides, padding, data_format,
                 dilation_rate, activation, use_bias, kernel_initializer, bias_initializer,
                 kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                 bias_constraint, trainable, name, reuse)


def conv2d_transpose(inputs, filters: int, kernel_size, strides=(1, 1), padding: str = "valid",
                     data_format: str = "channels_last", activation=None, use_bias: bool = True,
                     kernel_initializer=None, bias_initializer=zeros_initializer(),
                     kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                     kernel_constraint=None, bias_constraint=None, trainable: bool = True,
                     name: Optional[str] = None, reuse=None) -> Tensor:
    """The functional form of ``Conv2DTranspose``: variables '<name or conv2d_transpose_N>/
    kernel' and '/bias'."""
    return _conv(Conv2DTranspose, inputs, filters, kernel_size, strides, padding, data_format,
                 (1, 1), activation, use_bias, kernel_initializer, bias_initializer,
                 kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                 bias_constraint, trainable, name, reuse)
