"""A Keras network: the layers between input and output tensors, as a layer.

A subclassed model (``class M(tf.keras.Model)`` defining ``call``) has the layers assigned to
its attributes instead, and gets inputs when its first data builds it: a placeholder, and
``call`` on it under the model's name scope ('my_model/dense/kernel').

``Network(inputs, outputs)`` walks back from the outputs through the layer calls recorded on
each tensor (``base_layer.node_of``) to the inputs, and keeps those calls in order. The
graph of a network is the graph those calls built; calling the network on new tensors calls
its layers again, in order, under the network's name scope ('model/dense/MatMul'), sharing
their weights. Weights, updates and losses are its layers'; ``summary``, ``get_weights`` /
``set_weights`` and ``save_weights`` / ``load_weights`` (TF checkpoint files, keyed by the
variables' names, or Keras's HDF5 files: ``keras/saving``, with h5py) work on them.
"""
from __future__ import annotations

import os
from typing import List

from ...framework.ops import get_default_graph
from ...train.saver import Saver
from .. import backend
from .base_layer import Layer, flatten, node_of

__all__ = ["Network"]


def _unique(items) -> List:
    seen, result = set(), []
    for item in items:
        if id(item) not in seen:
            seen.add(id(item))
            result.append(item)
    return result


class Network(Layer):
    """The graph-of-layers part of ``tf.keras.Model``."""

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", None)
        outputs = kwargs.pop("outputs", None)
        if args:
            inputs, args = args[0], args[1:]
        if args:
            outputs, args = args[0], args[1:]
        if args:
            raise TypeError(f"Model takes (inputs, outputs); got {len(args)} more arguments.")
        super().__init__(name=kwargs.pop("name", None), trainable=kwargs.pop("trainable", True),
                         **kwargs)
        self._inputs: List = []
        self._outputs: List = []
        self._nested_outputs = None
        self._network_nodes: List = []
        self._input_layers: List[Layer] = []
        self._attribute_layers: List[Layer] = []   # a subclassed model's layers
        self._own_call = None                      # its call on its inputs
        self._nested_inputs = None
        self._graph_network = False                # inputs and outputs known: TF's node 0
        if inputs is not None or outputs is not None:
            if inputs is None or outputs is None:
                raise ValueError("A functional Model needs both `inputs` and `outputs`.")
            self._init_graph_network(inputs, outputs)

    def _init_graph_network(self, inputs, outputs) -> None:
        self._inputs = flatten(inputs)
        self._outputs = flatten(outputs)
        self._nested_inputs, self._nested_outputs = inputs, outputs
        self._graph_network = True
        input_ids = {id(t) for t in self._inputs}
        order, done = [], set()

        def visit(tensor, path):
            node = node_of(tensor)
            if id(tensor) in input_ids:
                return
            if node is None:
                raise ValueError("Output tensors of a Model must be the outputs of Keras layers "
                                 f"(or its inputs); {tensor.name} is not (reached from "
                                 f"{path}).")
            if not flatten(node.inputs) and id(tensor) not in input_ids:
                raise ValueError(f"Graph disconnected: cannot obtain value for tensor "
                                 f"{tensor.name} at layer \"{node.layer.name}\". The following "
                                 f"previous layers were accessed without issue: "
                                 f"{[n.layer.name for n in order]}")
            if id(node) in done:
                return
            for upstream in flatten(node.inputs):
                visit(upstream, node.layer.name)
            done.add(id(node))
            order.append(node)

        for output in self._outputs:
            visit(output, "the outputs")
        self._network_nodes = order
        self._input_layers = [node_of(t).layer for t in self._inputs if node_of(t) is not None]
        self.built = True

    def __setattr__(self, name, value):
        # A subclassed model's layers are those assigned to its attributes (and lists of them).
        if "_attribute_layers" in self.__dict__ and not name.startswith("_"):
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(item, Layer) and item is not self and \
                        all(item is not known for known in self._attribute_layers):
                    self._attribute_layers.append(item)
        super().__setattr__(name, value)

    def _is_subclassed(self) -> bool:
        return type(self).call is not Network.call and not self._network_nodes and \
            bool(self._attribute_layers)

    def _set_subclassed_io(self, inputs, outputs) -> None:
        """A subclassed model's inputs, and the outputs its call on them made."""
        self._inputs, self._outputs = flatten(inputs), flatten(outputs)
        self._nested_outputs = outputs
        self._own_call = self.inbound_nodes[-1]

    # -- structure -------------------------------------------------------------------------------
    @property
    def inputs(self) -> List:
        return list(self._inputs)

    @property
    def outputs(self) -> List:
        return list(self._outputs)

    # A network of known inputs and outputs has its shapes, and before any call its input
    # and output, from its own tensors, as TF 1.15's node 0 of a network (a one-tensor list
    # unwrapped). Once called, ``input``/``output`` stay the first call's, which the
    # TensorBoard histograms of a model nested in another read. A deferred Sequential or a
    # subclassed model has only the calls made of it, as any layer.
    @property
    def input(self):
        if not self._graph_network or self._nodes:
            return super().input
        return _unwrap_single(self._nested_inputs)

    @property
    def output(self):
        if not self._graph_network or self._nodes:
            return super().output
        return _unwrap_single(self._nested_outputs)

    @property
    def input_shape(self):
        if not self._graph_network:
            return super().input_shape
        return _shapes_of(_unwrap_single(self._nested_inputs))

    @property
    def output_shape(self):
        if not self._graph_network:
            return super().output_shape
        return _shapes_of(_unwrap_single(self._nested_outputs))

    @property
    def nodes(self) -> List:
        """The layer calls between the inputs and the outputs, in the order they run."""
        return list(self._network_nodes)

    @property
    def layers(self) -> List[Layer]:
        if not self._network_nodes:
            return list(self._attribute_layers)
        return _unique(self._input_layers + [node.layer for node in self._network_nodes])

    @property
    def input_names(self) -> List[str]:
        # The input layers' names (a layer wrapping a given tensor keeps its own name).
        return [node_of(t).layer.name if node_of(t) is not None else t.op.name
                for t in self._inputs]

    @property
    def output_names(self) -> List[str]:
        return [node_of(t).layer.name for t in self._outputs]

    def get_layer(self, name=None, index=None) -> Layer:
        layers = self.layers
        if index is not None:
            if len(layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only "
                                 f"has {len(layers)} layers.")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}.")

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        return _unique(w for layer in self.layers for w in layer.trainable_weights)

    @property
    def non_trainable_weights(self):
        weights = _unique(w for layer in self.layers for w in layer.weights)
        trainable = {id(w) for w in self.trainable_weights}
        return [w for w in weights if id(w) not in trainable]

    @property
    def weights(self):
        return _unique(w for layer in self.layers for w in layer.weights)

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def updates(self):
        """The update ops of the layer calls between the model's inputs and outputs."""
        if not self.trainable:
            return []
        nodes = self._network_nodes or ([self._own_call] if self._own_call else [])
        return _unique(u for node in nodes for u in node.updates)

    @property
    def losses(self):
        return _unique(loss for layer in self.layers for loss in layer.losses)

    def count_params(self) -> int:
        return int(sum(w.get_shape().num_elements() for w in self.weights))

    # -- calling ---------------------------------------------------------------------------------
    def build(self, input_shape) -> None:
        if not self._network_nodes and type(self).call is Network.call:
            raise ValueError("A functional Model needs `inputs` and `outputs`; a subclassed "
                             "one defines `call`.")
        self.built = True

    def call(self, inputs, training=None):
        new_inputs = flatten(inputs)
        if len(new_inputs) != len(self._inputs):
            raise ValueError(f'Model "{self.name}" expects {len(self._inputs)} input(s), but it '
                             f"received {len(new_inputs)} input tensors.")
        values = {id(old): new for old, new in zip(self._inputs, new_inputs)}
        for node in self._network_nodes:
            args = [values[id(t)] for t in flatten(node.inputs)]
            kwargs = dict(node.kwargs)
            if training is not None and "training" in kwargs:
                kwargs["training"] = training
            outputs = node.layer(args if isinstance(node.inputs, list) else args[0], **kwargs)
            for old, new in zip(flatten(node.outputs), flatten(outputs)):
                values[id(old)] = new
        results = [values[id(t)] for t in self._outputs]
        return results if isinstance(self._nested_outputs, (list, tuple)) else results[0]

    # -- weights on disk ------------------------------------------------------------------------
    def _saver(self) -> Saver:
        savers = self.__dict__.setdefault("_savers", {})
        graph = get_default_graph()
        if graph not in savers:
            savers[graph] = Saver({w.op.name: w for w in self.weights})
        return savers[graph]

    def save(self, filepath, overwrite: bool = True, include_optimizer: bool = True,
             save_format=None) -> None:
        """Keras's HDF5 file of the whole model (``keras/saving/hdf5.py``; needs h5py),
        whatever the path's extension, as TF 1.15 saves."""
        if save_format not in (None, "h5", "hdf5", "keras"):
            raise NotImplementedError(f"save(save_format={save_format!r}) is TF 2's format; "
                                      "tfjupyter saves HDF5, or a SavedModel through "
                                      "tf.keras.experimental.export_saved_model.")
        from ..saving import hdf5
        hdf5.save_model(self, filepath, overwrite=overwrite,
                        include_optimizer=include_optimizer)

    def save_weights(self, filepath, overwrite: bool = True, save_format=None) -> None:
        """Keras's HDF5 weights for an .h5 path (needs h5py), else TF checkpoint files at
        ``filepath`` (.index, .data-*), keyed by variable name."""
        filepath = os.fspath(filepath)
        if _is_hdf5(filepath, save_format):
            from ..saving import hdf5
            return hdf5.save_weights(self, filepath)
        self._saver().save(backend.get_session(), filepath, write_meta_graph=False)

    def load_weights(self, filepath, by_name: bool = False, skip_mismatch: bool = False) -> None:
        filepath = os.fspath(filepath)
        if _is_hdf5(filepath, None):
            from ..saving import hdf5
            return hdf5.load_weights(self, filepath, by_name=by_name,
                                     skip_mismatch=skip_mismatch)
        if by_name:
            raise NotImplementedError("load_weights(by_name=True) is for HDF5 files (.h5); "
                                      "TF checkpoints are restored by variable name.")
        self._saver().restore(backend.get_session(), filepath)

    def get_config(self):
        """Keras's config of a Sequential or functional model (``keras/saving/config.py``)."""
        from ..saving.config import model_config
        return model_config(self)["config"]

    def to_json(self, **kwargs) -> str:
        from ..saving.saved_model import model_to_json
        return model_to_json(self, **kwargs)

    def summary(self, line_length=None, positions=None, print_fn=None) -> None:
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or calling `fit()` with some data, or specify "
                             "an `input_shape` argument in the first layer(s) for automatic "
                             "build.")
        from .summary import print_summary
        print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn)


def _unwrap_single(tensors):
    if isinstance(tensors, (list, tuple)) and len(tensors) == 1:
        return tensors[0]
    return tensors


def _shapes_of(tensors):
    if isinstance(tensors, (list, tuple)):
        return [tuple(t.get_shape().as_list()) for t in tensors]
    return tuple(tensors.get_shape().as_list())


def _is_hdf5(filepath: str, save_format) -> bool:
    if save_format is not None:
        return save_format in ("h5", "hdf5", "keras")
    return filepath.endswith((".h5", ".hdf5", ".keras"))
