"""``tf.keras.Input`` and ``InputLayer``: a model's input placeholder, as a layer."""
from __future__ import annotations

from typing import Optional

from ...framework.ops import Tensor
from ...ops import array_ops
from .. import backend
from .base_layer import Layer, Node, record_node

__all__ = ["InputLayer", "Input"]


class InputLayer(Layer):
    """Holds a model's input: a placeholder named after the layer ('input_1', or
    '<first layer>_input' in a Sequential model)."""

    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None,
                 name: Optional[str] = None, batch_input_shape=None, **kwargs):
        if not name:
            name = f"input_{backend.get_uid('input')}"
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size,) + tuple(input_shape)
        super().__init__(name=name, dtype=dtype or backend.floatx(), **kwargs)
        if input_tensor is None:
            if batch_input_shape is None:
                raise ValueError("An Input needs a shape: pass `shape` (without the batch "
                                 "dimension) or `batch_shape`.")
            input_tensor = array_ops.placeholder(self._dtype, list(batch_input_shape), name=name)
        self._batch_input_shape = tuple(input_tensor.get_shape().as_list())
        self.built = True
        record_node(Node(self, [], {}, input_tensor))

    @property
    def input(self):
        return self.output


def Input(shape=None, batch_size=None, name: Optional[str] = None, dtype=None, sparse=False,
          tensor=None, batch_shape=None) -> Tensor:
    """``tf.keras.Input``: a model's input placeholder, [batch_size] + shape."""
    if sparse:
        raise NotImplementedError("tf.keras.Input(sparse=True) is not supported by tfjupyter.")
    layer = InputLayer(input_shape=shape, batch_size=batch_size, dtype=dtype,
                       input_tensor=tensor, name=name, batch_input_shape=batch_shape)
    return layer.output
