"""``tf.layers`` core layers: Dense, Dropout, Flatten and their functional forms."""
from __future__ import annotations

from typing import Callable, Optional

from .. import nn
from ..framework.ops import Tensor, convert_to_tensor
from ..framework.tensor_shape import TensorShape
from ..init_ops import zeros_initializer
from ..ops import array_ops, math_ops
from .base import Layer, constant_bool
from .utils import normalize_data_format

__all__ = ["Dense", "dense", "Dropout", "dropout", "Flatten", "flatten"]

_ACTIVATIONS_BY_NAME = {
    "relu": nn.relu, "relu6": nn.relu6, "elu": nn.elu, "selu": nn.selu, "sigmoid": nn.sigmoid,
    "tanh": nn.tanh, "softmax": nn.softmax, "softplus": nn.softplus, "softsign": nn.softsign,
    "linear": None,
}


def set_kernel_and_bias_options(layer: Layer, activation, use_bias: bool, kernel_initializer,
                                bias_initializer, kernel_regularizer, bias_regularizer,
                                kernel_constraint, bias_constraint) -> None:
    """The arguments every layer with a kernel and a bias takes (Dense, Conv1D/2D)."""
    layer.activation = get_activation(activation)
    layer.use_bias = use_bias
    layer.kernel_initializer = kernel_initializer
    layer.bias_initializer = bias_initializer
    layer.kernel_regularizer = kernel_regularizer
    layer.bias_regularizer = bias_regularizer
    layer.kernel_constraint = kernel_constraint
    layer.bias_constraint = bias_constraint
    layer.kernel = layer.bias = None


def get_activation(activation) -> Optional[Callable]:
    """A callable, None (linear), or a Keras activation name ('relu')."""
    if activation is None or callable(activation):
        return activation
    if isinstance(activation, str) and activation in _ACTIVATIONS_BY_NAME:
        return _ACTIVATIONS_BY_NAME[activation]
    raise ValueError(f"Unknown activation function: {activation!r}")


class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` with variables 'kernel' [in, units] and 'bias'
    [units]. Inputs of rank > 2 are multiplied along their last dimension."""

    def __init__(self, units: int, activation=None, use_bias: bool = True,
                 kernel_initializer=None, bias_initializer=zeros_initializer(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable: bool = True,
                 name: Optional[str] = None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        set_kernel_and_bias_options(self, activation, use_bias, kernel_initializer,
                                    bias_initializer, kernel_regularizer, bias_regularizer,
                                    kernel_constraint, bias_constraint)

    def build(self, input_shape: TensorShape) -> None:
        input_shape = TensorShape(input_shape)
        if input_shape.ndims is not None and input_shape.ndims < 2:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected min_ndim=2, found ndim={input_shape.ndims}. Full shape "
                             f"received: {input_shape}")
        last_dim = None if input_shape.ndims is None else input_shape.as_list()[-1]
        if last_dim is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. "
                             "Found `None`.")
        self.kernel = self.add_weight("kernel", shape=[last_dim, self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, trainable=True)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.units],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, trainable=True)
        self.built = True

    def call(self, inputs: Tensor) -> Tensor:
        shape = inputs.get_shape()
        if shape.ndims is not None and shape.ndims > 2:
            # TF uses tensordot, which is this: a matmul of the flattened leading dimensions.
            flat = array_ops.reshape(inputs, [-1, shape.as_list()[-1]])
            outputs = math_ops.matmul(flat, self.kernel)
            out_shape = array_ops.concat(
                [array_ops.shape(inputs)[:-1], array_ops.constant([self.units])], 0)
            outputs = array_ops.reshape(outputs, out_shape)
            outputs.set_shape(shape[:-1].concatenate([self.units]))
        else:
            outputs = math_ops.matmul(inputs, self.kernel)
        if self.use_bias:
            outputs = nn.bias_add(outputs, self.bias)
        if self.activation is not None:
            return self.activation(outputs)
        return outputs


def dense(inputs, units: int, activation=None, use_bias: bool = True, kernel_initializer=None,
          bias_initializer=zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable: bool = True, name: Optional[str] = None, reuse=None) -> Tensor:
    """The functional form of ``Dense``: variables '<name or dense_N>/kernel' and '/bias'."""
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                  bias_constraint=bias_constraint, trainable=trainable, name=name,
                  _scope=name, _reuse=reuse)
    return layer.apply(inputs)


class Dropout(Layer):
    """Drops each input with probability ``rate`` (the DROP rate: keep_prob = 1 - rate) and
    scales the rest by 1 / (1 - rate), when ``training``; the identity otherwise.

    ``training`` may be a bool tensor: then ``tf.cond`` switches, as in TensorFlow, so the
    random mask is drawn in training steps only.
    """

    def __init__(self, rate: float = 0.5, noise_shape=None, seed: Optional[int] = None,
                 name: Optional[str] = None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def _get_noise_shape(self, inputs: Tensor):
        """noise_shape with its None entries taken from the inputs' (run-time) shape."""
        if self.noise_shape is None:
            return None
        dims = list(self.noise_shape)
        if all(d is not None for d in dims):
            return dims
        input_shape = array_ops.shape(inputs)
        return array_ops.stack([input_shape[i] if d is None else d for i, d in enumerate(dims)])

    def call(self, inputs: Tensor, training=False) -> Tensor:
        training_value = constant_bool(training)
        if training_value is False:
            return array_ops.identity(inputs)
        def dropped():
            return nn.dropout(inputs, noise_shape=self._get_noise_shape(inputs),
                              seed=self.seed, rate=self.rate)
        if training_value is True:
            return dropped()
        from ..ops.cond_ops import cond
        return cond(convert_to_tensor(training), dropped, lambda: array_ops.identity(inputs))


def dropout(inputs, rate: float = 0.5, noise_shape=None, seed: Optional[int] = None,
            training=False, name: Optional[str] = None) -> Tensor:
    """The functional form of ``Dropout``: ``rate`` is the fraction dropped; the identity
    unless ``training`` (a bool or a bool tensor) is true."""
    layer = Dropout(rate, noise_shape=noise_shape, seed=seed, name=name)
    return layer.apply(inputs, training=training)


class Flatten(Layer):
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]; channels_first inputs are put in
    channels_last order first, so both formats flatten to the same feature order."""

    def __init__(self, data_format: Optional[str] = None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)

    def call(self, inputs: Tensor) -> Tensor:
        shape = inputs.get_shape()
        if shape.ndims is not None and shape.ndims < 1:
            raise ValueError(f"Flatten: inputs must have rank at least 1, got shape {shape}.")
        if self.data_format == "channels_first" and shape.ndims is not None and shape.ndims > 2:
            permutation = [0] + list(range(2, shape.ndims)) + [1]
            inputs = array_ops.transpose(inputs, permutation)
            shape = inputs.get_shape()
        dims = shape.as_list() if shape.ndims is not None else None
        if dims is not None and all(d is not None for d in dims[1:]):
            size = 1
            for d in dims[1:]:
                size *= d
            outputs = array_ops.reshape(inputs, [dims[0] if dims[0] is not None else -1, size])
        else:
            outputs = array_ops.reshape(inputs, array_ops.stack([array_ops.shape(inputs)[0], -1]))
            if dims is not None:
                outputs.set_shape([dims[0], None])
        return outputs


def flatten(inputs, name: Optional[str] = None, data_format: str = "channels_last") -> Tensor:
    """The functional form of ``Flatten``."""
    return Flatten(name=name, data_format=data_format).apply(inputs)
