"""``tf.keras.Sequential``: a model that is a stack of layers, each called on the previous
one's output.

With an input shape on its first layer (``input_shape=``/``input_dim=``, or an
``InputLayer``), the model has its input placeholder ('<first layer>_input') from the start
and each ``add`` calls the new layer at once, so weights are named after the layers alone
('dense/kernel'). Without one, the model is built by its first data (``fit``/``predict``) or
``build(input_shape)``: an input 'input_N', and the layers called inside the model's name
scope ('sequential/dense/kernel'), as TF 1.15 names them.
"""
from __future__ import annotations

from typing import List

from ...framework.ops import name_scope
from .input_layer import Input, InputLayer
from .base_layer import Layer
from .training import Model

__all__ = ["Sequential"]


class Sequential(Model):
    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        self._stack: List[Layer] = []
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self) -> List[Layer]:
        return list(self._stack)

    def add(self, layer: Layer) -> None:
        if not isinstance(layer, Layer):
            raise TypeError("The added layer must be an instance of class Layer. Found: "
                            f"{layer!r}")
        if isinstance(layer, InputLayer):
            if self._stack or self._inputs:
                raise ValueError("An InputLayer can only be the first layer of a Sequential "
                                 "model.")
            self._init_graph_network(layer.output, layer.output)
            return
        self._stack.append(layer)
        if self._outputs:
            self._init_graph_network(self._inputs[0], layer(self._outputs[0]))
        elif len(self._stack) == 1:
            batch_shape, dtype = _input_shape_and_dtype(layer)
            if batch_shape is not None:
                x = Input(batch_shape=batch_shape, dtype=dtype, name=layer.name + "_input")
                self._init_graph_network(x, layer(x))

    def pop(self) -> None:
        if not self._stack:
            raise TypeError("There are no layers in the model.")
        self._stack.pop()
        if self._inputs:
            last = self._stack[-1].output if self._stack else self._inputs[0]
            self._init_graph_network(self._inputs[0], last)

    def build(self, input_shape=None) -> None:
        if self._outputs:
            self.built = True
            return
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        self._build_from_data(tuple(input_shape), None)

    def _build_from_data(self, batch_input_shape, dtype) -> None:
        if not self._stack:
            raise TypeError("Sequential model cannot be built: the model is empty. Add some "
                            "layers first.")
        # Keras's inputs are floatx whatever the data's dtype; feeding casts.
        x = Input(batch_shape=batch_input_shape)
        with name_scope(self.name):
            output = self._call_stack(x)
        self._init_graph_network(x, output)

    def _call_stack(self, inputs, training=None):
        for layer in self._stack:
            if training is not None and layer._call_takes_training():
                inputs = layer(inputs, training=training)
            else:
                inputs = layer(inputs)
        return inputs

    def call(self, inputs, training=None):
        return self._call_stack(inputs, training)


def _input_shape_and_dtype(layer):
    """The batch input shape and dtype a first layer declares, looking through nested models
    to their first layer, as TF 1.15's ``get_input_shape_and_dtype``; (None, None) if none."""
    while isinstance(layer, Model) and (layer._graph_network or isinstance(layer, Sequential)):
        if not layer.layers:
            raise ValueError("An empty Model cannot be used as a Layer.")
        layer = layer.layers[0]
    return layer._batch_input_shape, layer.dtype
