"""The ``tf.keras`` layer base in graph mode (TF 1.15), on ``tf.layers``' layers.

A Keras layer differs from a ``tf.layers`` one in three ways, which this class overrides:

- **Names.** A layer is named when it is made: 'dense', 'dense_1', ... per graph (zero-based,
  ``backend.unique_object_name``). Calling it opens the name scope of that name, so its ops
  are 'dense/MatMul' and the weights built on its first call 'dense/kernel' — under the name
  scopes around the call (a model called on a tensor: 'sequential/dense/kernel'). There are
  no variable scopes: weights are plain ``tf.Variable``s, shared by every call of the layer.
- **Training.** A layer whose ``call`` takes ``training`` gets ``backend.learning_phase()``
  when the caller gives none, so ``fit`` switches Dropout and BatchNormalization by feeding
  it. Updates and regularization losses stay on the layer (``layer.updates``,
  ``layer.losses``; models run them), not in graph collections.
- **Graph of layers.** Each call records a ``Node`` (the layer, its input and output tensors,
  its arguments) on its output tensors, which is what the functional ``Model`` walks, and an
  input that does not fit the weights built before raises a ValueError naming the layer and
  both shapes.
"""
from __future__ import annotations

import inspect
import weakref
from typing import Any, Dict, List, NamedTuple, Optional

from ...framework import dtypes
from ...framework.ops import Tensor, convert_to_tensor, name_scope
from ...framework.tensor_shape import TensorShape
from ...layers import base as tf_layers_base
from ...variables import Variable
from .. import backend, initializers

__all__ = ["Layer", "Node", "node_of", "record_node", "flatten", "copy_layer"]


class Node(NamedTuple):
    """One call of a layer: ``outputs = layer(inputs, **kwargs)``."""
    layer: "Layer"
    inputs: Any          # a tensor, or a list of tensors (merge layers)
    kwargs: Dict[str, Any]
    outputs: Any
    updates: List[Any] = []   # the update ops the call made (BatchNormalization's), nested too


# Output tensor -> the Node that made it (Tensors take no attributes).
_NODES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# One list per layer call in progress: the updates made inside it, by any layer (a model's
# call collects those of the layers it calls).
_CALL_UPDATES: List[List[Any]] = []


def node_of(tensor: Tensor) -> Optional[Node]:
    """The layer call that produced ``tensor``, or None (not a Keras layer's output)."""
    return _NODES.get(tensor)


def record_node(node: Node) -> None:
    """Marks ``node.outputs`` as made by ``node`` (and appends it to its layer's nodes)."""
    node.layer._nodes.append(node)
    for tensor in flatten(node.outputs):
        _NODES[tensor] = node


def flatten(structure) -> List:
    return list(structure) if isinstance(structure, (list, tuple)) else [structure]


def copy_layer(layer: "Layer") -> "Layer":
    """A new, unbuilt layer made with the arguments ``layer`` was made with, under its name:
    the same configuration with weights of its own (what Keras's
    ``type(layer).from_config(layer.get_config())`` gives, for ``clone_model``)."""
    args, kwargs = layer._constructor_arguments
    return type(layer)(*args, **dict(kwargs, name=layer.name))


class Layer(tf_layers_base.Layer):
    """``tf.keras.layers.Layer``: subclasses define ``build(input_shape)`` (weights through
    ``add_weight``) and ``call(inputs)``, as in Keras."""

    def __new__(cls, *args, **kwargs):
        layer = super().__new__(cls)
        # Keras layers' configuration is their constructor's arguments (copy_layer).
        layer._constructor_arguments = (args, kwargs)
        return layer

    def __init__(self, *args, **kwargs):
        input_shape = kwargs.pop("input_shape", None)
        batch_input_shape = kwargs.pop("batch_input_shape", None)
        batch_size = kwargs.pop("batch_size", None)
        input_dim = kwargs.pop("input_dim", None)
        if input_shape is None and input_dim is not None:
            input_shape = (input_dim,)
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size,) + tuple(input_shape)
        # What a Sequential model starting with this layer makes its Input from.
        self._batch_input_shape = None if batch_input_shape is None else tuple(batch_input_shape)
        super().__init__(*args, **kwargs)
        self._built_input_shape: Optional[TensorShape] = None
        self._nodes: List[Node] = []
        self.supports_masking = False

    def _init_set_name(self, name) -> None:
        if not name:
            name = backend.unique_object_name(tf_layers_base.to_snake_case(type(self).__name__))
        self._base_name = self._name = name

    # -- weights -----------------------------------------------------------------------------------
    def add_weight(self, name: str, shape=None, dtype=None, initializer=None, regularizer=None,
                   trainable: bool = True, constraint=None, **unused) -> Variable:
        """A ``tf.Variable`` named ``name`` in the current name scope (the layer's), which
        Keras initializes in ``backend.get_session()``."""
        dtype = dtypes.as_dtype(dtype or self._dtype or backend.floatx())
        if initializer is None:
            initializer = "glorot_uniform" if dtype.is_floating else "zeros"
        initializer = initializers.get(initializer)
        shape = list(TensorShape(shape).as_list())
        trainable = bool(trainable) and self.trainable
        variable = Variable(lambda: initializer(shape, dtype=dtype), name=name, dtype=dtype,
                            trainable=trainable, constraint=constraint)
        backend.track_variable(variable)
        if regularizer is not None:
            with name_scope(name + "/Regularizer"):
                self.add_loss(regularizer(variable))
        (self._trainable_weights if trainable else self._non_trainable_weights).append(variable)
        return variable

    add_variable = add_weight

    def add_update(self, updates, inputs=None) -> None:
        updates = flatten(updates)
        self._updates.extend(updates)
        for collected in _CALL_UPDATES:
            collected.extend(updates)

    def add_loss(self, losses, inputs=None) -> None:
        self._losses.extend(t for t in flatten(losses) if t is not None)

    # -- calling -----------------------------------------------------------------------------------
    def _input_spec_axes(self) -> tuple:
        """The input axes whose size the built weights fix (Dense: the last)."""
        return ()

    def _check_input_shape(self, shape: TensorShape) -> None:
        built = self._built_input_shape
        if built is None or built.ndims is None or shape.ndims is None:
            return
        if shape.ndims != built.ndims and self._input_spec_axes():
            raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the layer: '
                             f"expected ndim={built.ndims}, found ndim={shape.ndims}. Full "
                             f"shape received: {_shape_text(shape)}")
        for axis in self._input_spec_axes():
            want, got = built.as_list()[axis], shape.as_list()[axis]
            if want is not None and got is not None and want != got:
                raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the '
                                 f"layer: expected axis {axis} of input shape to have value "
                                 f"{want}, but received input with shape {_shape_text(shape)}")

    def _call_takes_training(self) -> bool:
        return "training" in inspect.signature(self.call).parameters

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, (list, tuple)):
            inputs = [convert_to_tensor(t) for t in inputs]
            first = inputs[0]
        else:
            inputs = first = convert_to_tensor(inputs)
        if self._dtype is None:
            self._dtype = first.dtype.base_dtype if first.dtype.is_floating else dtypes.float32
        if self._call_takes_training() and kwargs.get("training") is None:
            kwargs["training"] = backend.learning_phase()
        _CALL_UPDATES.append([])
        try:
            with name_scope(self._name):
                if not self.built:
                    self.build(_input_shapes(inputs))
                    self.built = True
                    self._built_input_shape = first.get_shape()
                else:
                    self._check_input_shape(first.get_shape())
                outputs = self.call(inputs, *args, **kwargs)
                if self._activity_regularizer is not None:
                    self._add_activity_regularization(outputs)
        finally:
            updates = _CALL_UPDATES.pop()
        record_node(Node(self, inputs, dict(kwargs), outputs, updates))
        return outputs

    apply = __call__

    def _first_node(self, what: str) -> Node:
        if not self._nodes:
            raise AttributeError(f'Layer "{self.name}" has never been called and thus has no '
                                 f"defined {what}.")
        return self._nodes[0]

    @property
    def inbound_nodes(self) -> List[Node]:
        """This layer's calls, in order."""
        return list(self._nodes)

    @property
    def input(self):
        return self._first_node("input").inputs

    @property
    def output(self):
        return self._first_node("output").outputs

    @property
    def input_shape(self):
        inputs = self.input
        if isinstance(inputs, list):
            return [tuple(t.get_shape().as_list()) for t in inputs]
        return tuple(inputs.get_shape().as_list())

    @property
    def output_shape(self):
        return tuple(flatten(self.output)[0].get_shape().as_list())

    def get_weights(self):
        return backend.batch_get_value(self.weights)

    def set_weights(self, weights) -> None:
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(f'You called `set_weights(weights)` on "{self.name}" with a '
                             f"weight list of length {len(weights)}, but it was expecting "
                             f"{len(params)} weights.")
        backend.batch_set_value(list(zip(params, weights)))

    def get_config(self) -> Dict[str, Any]:
        return {"name": self.name, "trainable": self.trainable,
                "dtype": None if self._dtype is None else self._dtype.name}

    def __repr__(self) -> str:
        return f"<tf.keras.layers.{type(self).__name__} '{self._name}'>"


def _input_shapes(inputs):
    if isinstance(inputs, list):
        return [t.get_shape() for t in inputs]
    return inputs.get_shape()


def _shape_text(shape: TensorShape) -> str:
    if shape.ndims is None:
        return "<unknown>"
    return str(tuple(shape.as_list())).replace(",)", ")")
