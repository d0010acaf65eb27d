"""``tf.keras.layers``: the Keras layers of TF 1.15, in graph mode.

The layers that ``tf.layers`` has (Dense, Conv1D/2D, pooling, Dropout, Flatten,
BatchNormalization) are those layers with Keras's naming and calling (``engine/base_layer``):
the variables, ops and numbers are the same. Activation, Reshape, Embedding, global pooling,
Lambda and the merge layers (Concatenate/Add/Subtract/Multiply/Average) are written here;
Input/InputLayer are in ``engine/input_layer.py``, LSTM/GRU in ``recurrent.py``.
"""
from __future__ import annotations

from .. import nn
from ..framework import dtypes
from ..framework.tensor_shape import TensorShape
from ..layers import convolutional, core, normalization, pooling
from ..ops import array_ops, math_ops
from . import backend
from .engine.base_layer import Layer
from .engine.input_layer import Input, InputLayer  # noqa: F401
from .recurrent import GRU, LSTM  # noqa: F401

__all__ = ["Layer", "InputLayer", "Input", "Dense", "Conv1D", "Conv2D", "Convolution1D",
           "Convolution2D", "Conv2DTranspose", "Convolution2DTranspose", "MaxPooling1D",
           "MaxPooling2D", "AveragePooling1D", "AveragePooling2D", "MaxPool1D", "MaxPool2D",
           "AvgPool1D", "AvgPool2D", "GlobalAveragePooling1D", "GlobalMaxPooling1D",
           "GlobalAveragePooling2D", "GlobalMaxPooling2D", "Dropout", "Flatten",
           "BatchNormalization", "Activation", "Reshape", "Embedding", "Lambda", "Concatenate",
           "Add", "Subtract", "Multiply", "Average", "concatenate", "add", "subtract",
           "multiply", "average", "LSTM", "GRU"]


# -- the tf.layers layers, called the Keras way ----------------------------------------------------
class Dense(Layer, core.Dense):
    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, **kwargs)

    def _input_spec_axes(self):
        return (-1,)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)[:-1].concatenate([self.units])


class _KerasConv(Layer):
    """Keras's defaults for the tf.layers convolutions."""

    def __init__(self, filters, kernel_size, data_format=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(filters, kernel_size, data_format=data_format or "channels_last",
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, **kwargs)

    def _input_spec_axes(self):
        return (1 if self.data_format == "channels_first" else -1,)


class Conv1D(_KerasConv, convolutional.Conv1D):
    pass


class Conv2D(_KerasConv, convolutional.Conv2D):
    pass


class Conv2DTranspose(_KerasConv, convolutional.Conv2DTranspose):
    pass


Convolution1D, Convolution2D, Convolution2DTranspose = Conv1D, Conv2D, Conv2DTranspose


def _pooling(tf_layers_class, default_pool_size):
    """A Keras pooling class over a tf.layers one: Keras's defaults (pool_size 2,
    strides = pool_size)."""
    class KerasPooling(Layer, tf_layers_class):
        def __init__(self, pool_size=default_pool_size, strides=None, padding="valid",
                     data_format=None, **kwargs):
            super().__init__(pool_size, pool_size if strides is None else strides,
                             padding=padding, data_format=data_format or "channels_last",
                             **kwargs)
    KerasPooling.__name__ = KerasPooling.__qualname__ = tf_layers_class.__name__
    KerasPooling.__doc__ = tf_layers_class.__doc__
    return KerasPooling


MaxPooling1D = _pooling(pooling.MaxPooling1D, 2)
MaxPooling2D = _pooling(pooling.MaxPooling2D, (2, 2))
AveragePooling1D = _pooling(pooling.AveragePooling1D, 2)
AveragePooling2D = _pooling(pooling.AveragePooling2D, (2, 2))
MaxPool1D, MaxPool2D, AvgPool1D, AvgPool2D = (MaxPooling1D, MaxPooling2D, AveragePooling1D,
                                              AveragePooling2D)


class Dropout(Layer, core.Dropout):
    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(rate, noise_shape=noise_shape, seed=seed, **kwargs)


class Flatten(Layer, core.Flatten):
    pass


class BatchNormalization(Layer, normalization.BatchNormalization):
    def _input_spec_axes(self):
        return tuple(self.axis)


# -- layers of their own ---------------------------------------------------------------------------
class GlobalAveragePooling2D(Layer):
    """The mean over height and width: [batch, h, w, c] -> [batch, c]."""
    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or "channels_last"

    def call(self, inputs):
        axes = [2, 3] if self.data_format == "channels_first" else [1, 2]
        return math_ops.reduce_mean(inputs, axis=axes)


class GlobalMaxPooling2D(GlobalAveragePooling2D):
    """The maximum over height and width."""
    def call(self, inputs):
        axes = [2, 3] if self.data_format == "channels_first" else [1, 2]
        return math_ops.reduce_max(inputs, axis=axes)


class GlobalAveragePooling1D(Layer):
    """The mean over the steps: [batch, steps, features] -> [batch, features]."""
    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or "channels_last"

    def call(self, inputs):
        return math_ops.reduce_mean(inputs, axis=2 if self.data_format == "channels_first" else 1)


class GlobalMaxPooling1D(GlobalAveragePooling1D):
    """The maximum over the steps."""
    def call(self, inputs):
        return math_ops.reduce_max(inputs, axis=2 if self.data_format == "channels_first" else 1)


class Activation(Layer):
    """Applies an activation, by name ('relu') or function."""
    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = core.get_activation(activation)

    def call(self, inputs):
        return inputs if self.activation is None else self.activation(inputs)


class Reshape(Layer):
    """[batch, ...] -> [batch] + target_shape (one entry may be -1)."""
    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)

    def call(self, inputs):
        batch = array_ops.shape(inputs)[0]
        outputs = array_ops.reshape(inputs, array_ops.stack([batch, *self.target_shape]))
        static = [inputs.get_shape().as_list()[0]] + [None if d == -1 else d
                                                      for d in self.target_shape]
        known = inputs.get_shape()[1:].num_elements()
        if -1 in self.target_shape and known is not None:
            rest = 1
            for d in self.target_shape:
                rest *= 1 if d == -1 else d
            if rest == 0 or known % rest:
                raise ValueError(f'Layer "{self.name}": total size of new array must be '
                                 f"unchanged, input shape {inputs.get_shape()}, target shape "
                                 f"{self.target_shape}")
            static[1 + self.target_shape.index(-1)] = known // rest
        elif known is not None and TensorShape(static[1:]).num_elements() != known:
            raise ValueError(f'Layer "{self.name}": total size of new array must be unchanged, '
                             f"input shape {inputs.get_shape()}, target shape "
                             f"{self.target_shape}")
        outputs.set_shape(static)
        return outputs


class Embedding(Layer):
    """Rows of the [input_dim, output_dim] matrix 'embeddings' for integer inputs."""
    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, input_length=None, **kwargs):
        # As TF 1.x's: an Embedding always knows its input shape, so a Sequential that starts
        # with one is built at once (`model.summary()` before any data, as the tutorials do).
        if "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,)
        super().__init__(**kwargs)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = embeddings_initializer
        self.embeddings_regularizer = embeddings_regularizer

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            "embeddings", shape=[self.input_dim, self.output_dim], dtype=backend.floatx(),
            initializer=self.embeddings_initializer, regularizer=self.embeddings_regularizer)
        self.built = True

    def call(self, inputs):
        if inputs.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
            inputs = math_ops.cast(inputs, dtypes.int32)
        return nn.embedding_lookup(self.embeddings, inputs)


class Lambda(Layer):
    """Wraps ``function(inputs)`` as a layer."""
    def __init__(self, function, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = dict(arguments or {})

    def call(self, inputs):
        return self.function(inputs, **self.arguments)


# -- merging ---------------------------------------------------------------------------------------
class _Merge(Layer):
    """A layer over a list of tensors of one shape."""
    def build(self, input_shape):
        if not isinstance(input_shape, list) or len(input_shape) < 2:
            raise ValueError(f'Layer "{self.name}" should be called on a list of at least 2 '
                             "inputs.")
        self.built = True

    def call(self, inputs):
        result = inputs[0]
        for tensor in inputs[1:]:
            result = self._merge(result, tensor)
        return result


class Add(_Merge):
    _merge = staticmethod(math_ops.add)


class Multiply(_Merge):
    _merge = staticmethod(math_ops.multiply)


class Subtract(_Merge):
    def call(self, inputs):
        if len(inputs) != 2:
            raise ValueError(f'Layer "{self.name}" should be called on exactly 2 inputs.')
        return math_ops.subtract(inputs[0], inputs[1])


class Average(_Merge):
    def call(self, inputs):
        return math_ops.add_n(inputs) / float(len(inputs))


class Concatenate(_Merge):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs):
        return array_ops.concat(inputs, axis=self.axis)


def concatenate(inputs, axis=-1, **kwargs):
    return Concatenate(axis=axis, **kwargs)(inputs)


def add(inputs, **kwargs):
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    return Average(**kwargs)(inputs)

