"""``tf.keras.layers.LSTM`` and ``GRU`` as TF 1.15 defines them (its v1 layers).

Weights, as TF 1.x names them: 'lstm/kernel' [input_dim, k * units], 'lstm/recurrent_kernel'
[units, k * units], 'lstm/bias' [k * units], with the gates side by side: LSTM's i, f, c, o
(k = 4; ``unit_forget_bias`` starts f's bias at 1), GRU's z, r, h (k = 3; ``reset_after``
False: the reset gate multiplies the state before the recurrent kernel). The recurrent
activation defaults to TF 1.x's ``hard_sigmoid``, ``clip(0.2 * x + 0.5, 0, 1)``.

The time loop is ``tf.scan`` over the time-major inputs (a While loop, so any sequence length
and gradients through time); the input projection of every step is one matmul before it.
"""
from __future__ import annotations

from ..framework.tensor_shape import TensorShape
from ..layers.core import get_activation, set_kernel_and_bias_options
from ..ops import array_ops, math_ops
from ..ops.clip_ops import clip_by_value
from ..ops.functional_ops import scan
from . import initializers
from .engine.base_layer import Layer

__all__ = ["LSTM", "GRU", "hard_sigmoid"]


def hard_sigmoid(x):
    """TF 1.x Keras's piecewise-linear sigmoid."""
    return clip_by_value(0.2 * x + 0.5, 0.0, 1.0)


def _activation(identifier):
    return hard_sigmoid if identifier == "hard_sigmoid" else get_activation(identifier)


class _Recurrent(Layer):
    """The time loop shared by LSTM and GRU: subclasses give the gate count, the state
    tuple and one step."""

    gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="hard_sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 dropout=0.0, recurrent_dropout=0.0, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, unroll=False,
                 **kwargs):
        for name, value in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout),
                            ("stateful", stateful)):
            if value:
                raise NotImplementedError(f"{type(self).__name__}({name}=...) is not supported "
                                          "by tfjupyter.")
        super().__init__(**kwargs)
        self.units = int(units)
        set_kernel_and_bias_options(self, None, use_bias, kernel_initializer, bias_initializer,
                                    kernel_regularizer, bias_regularizer, None, None)
        self.activation = _activation(activation)
        self.recurrent_activation = _activation(recurrent_activation)
        self.recurrent_initializer = recurrent_initializer
        self.recurrent_regularizer = recurrent_regularizer
        self.return_sequences, self.return_state = return_sequences, return_state
        self.go_backwards = go_backwards

    def _input_spec_axes(self):
        return (-1,)

    def _bias_initializer(self):
        return self.bias_initializer

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        if shape.ndims != 3:
            raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the layer: '
                             f"expected ndim=3, found ndim={shape.ndims}. Full shape received: "
                             f"{shape}")
        width = self.gates * self.units
        self.kernel = self.add_weight("kernel", [shape.as_list()[-1], width],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", [self.units, width],
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", [width], initializer=self._bias_initializer(),
                                        regularizer=self.bias_regularizer)
        self.built = True

    def call(self, inputs):
        batch = array_ops.shape(inputs)[0]
        zeros = array_ops.zeros(array_ops.stack([batch, self.units]), dtype=inputs.dtype)
        time_major = array_ops.transpose(inputs, [1, 0, 2])
        if self.go_backwards:
            time_major = array_ops.reverse_v2(time_major, [0])
        # Every step's input projection at once: [T, B, in] -> [T, B, gates * units].
        steps = array_ops.shape(time_major)[0]
        flat = array_ops.reshape(time_major, [-1, inputs.get_shape().as_list()[-1]])
        projected = math_ops.matmul(flat, self.kernel)
        if self.bias is not None:
            projected = projected + self.bias
        projected = array_ops.reshape(
            projected, array_ops.stack([steps, batch, self.gates * self.units]))
        states = scan(lambda state, x: self._step(x, state), projected,
                      initializer=tuple(zeros for _ in range(self._state_count)))
        sequence = array_ops.transpose(states[0], [1, 0, 2])
        sequence.set_shape(inputs.get_shape()[:-1].concatenate([self.units]))
        last_states = [s[-1] for s in states]
        for state in last_states:
            state.set_shape([inputs.get_shape().as_list()[0], self.units])
        output = sequence if self.return_sequences else last_states[0]
        return [output] + last_states if self.return_state else output

    def _split(self, tensor):
        u = self.units
        return [tensor[:, i * u:(i + 1) * u] for i in range(self.gates)]


class LSTM(_Recurrent):
    gates = 4
    _state_count = 2

    def __init__(self, units, unit_forget_bias=True, implementation=1, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = unit_forget_bias

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        others = initializers.get(self.bias_initializer)
        u = self.units

        def initializer(shape, dtype=None, partition_info=None):
            return array_ops.concat([others([u], dtype=dtype), array_ops.ones([u], dtype=dtype),
                                     others([2 * u], dtype=dtype)], 0)
        return initializer

    def _step(self, x, state):
        h, c = state
        z = x + math_ops.matmul(h, self.recurrent_kernel)
        zi, zf, zc, zo = self._split(z)
        i, f = self.recurrent_activation(zi), self.recurrent_activation(zf)
        c = f * c + i * self.activation(zc)
        o = self.recurrent_activation(zo)
        return o * self.activation(c), c


class GRU(_Recurrent):
    gates = 3
    _state_count = 1

    def __init__(self, units, reset_after=False, implementation=1, **kwargs):
        if reset_after:
            raise NotImplementedError("GRU(reset_after=True) (TF 2's CuDNN-compatible GRU) is "
                                      "not supported by tfjupyter.")
        super().__init__(units, **kwargs)

    def _step(self, x, state):
        (h,) = state
        xz, xr, xh = self._split(x)
        rz, rr, rh = (self.recurrent_kernel[:, i * self.units:(i + 1) * self.units]
                      for i in range(3))
        z = self.recurrent_activation(xz + math_ops.matmul(h, rz))
        r = self.recurrent_activation(xr + math_ops.matmul(h, rr))
        candidate = self.activation(xh + math_ops.matmul(r * h, rh))
        return (z * h + (1.0 - z) * candidate,)

