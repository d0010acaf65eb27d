"""``tf.keras.models``: the model classes, ``clone_model`` (TF 1.15's): the same
architecture with new weights, in the default graph, optionally on given input tensors (what
``model_to_estimator`` builds its model_fn's model with), and saving: ``save_model`` /
``load_model`` (Keras's HDF5 files), ``model_from_config`` / ``model_from_json``
(``keras/saving``)."""
import json

from ..framework.ops import Tensor
from .engine.base_layer import copy_layer, flatten, node_of
from .engine.input_layer import Input, InputLayer
from .engine.network import Network
from .engine.sequential import Sequential
from .engine.training import Model

__all__ = ["Model", "Sequential", "clone_model", "save_model", "load_model",
           "model_from_config", "model_from_json"]


def save_model(model, filepath, overwrite: bool = True, include_optimizer: bool = True,
               save_format=None) -> None:
    """``model.save``: Keras's HDF5 file of the model (needs h5py)."""
    model.save(filepath, overwrite=overwrite, include_optimizer=include_optimizer,
               save_format=save_format)


def load_model(filepath, custom_objects=None, compile=True):   # noqa: A002  (Keras's name)
    """The model an HDF5 file holds, in the default graph, compiled as it was saved."""
    from .saving import hdf5
    return hdf5.load_model(filepath, custom_objects=custom_objects, compile=compile)


def model_from_config(config, custom_objects=None):
    """A new model from ``{"class_name": ..., "config": ...}`` (Keras's layout)."""
    from .saving.config import model_from_config as from_config
    return from_config(config, custom_objects)


def model_from_json(json_string, custom_objects=None):
    """A new model from ``model.to_json()``'s text."""
    return model_from_config(json.loads(json_string), custom_objects)


def clone_model(model, input_tensors=None, clone_function=None):
    """A new model of ``model``'s layers (each made again by ``clone_function``, by default
    with the arguments it was made with, and its name), called as in ``model``: on new input
    placeholders, or on ``input_tensors`` (a tensor or a list, one per input). The weights are
    new: copy them with ``set_weights(model.get_weights())``."""
    clone_function = clone_function or copy_layer
    if not isinstance(model, Model):
        raise ValueError(f"Expected `model` argument to be a `Model` instance, got {model!r}")
    if input_tensors is not None:
        input_tensors = flatten(input_tensors)
    if isinstance(model, Sequential):
        return _clone_sequential(model, input_tensors, clone_function)
    if type(model).call is not Network.call:
        raise ValueError("Expected `model` argument to be a functional `Model` instance, but "
                         "got a subclass model instead.")
    return _clone_functional(model, input_tensors, clone_function)


def _clone_layer(layer, clone_function):
    if isinstance(layer, Model):   # a model used as a layer
        return clone_model(layer, clone_function=clone_function)
    return clone_function(layer)


def _clone_sequential(model, input_tensors, clone_function):
    layers = [_clone_layer(layer, clone_function) for layer in model.layers]
    if input_tensors is None:
        return Sequential(layers, name=model.name)
    if len(input_tensors) != 1:
        raise ValueError("To clone a `Sequential` model, we expect at most one tensor as part "
                         f"of `input_tensors`; got {len(input_tensors)}.")
    name = model.input_names[0] if model.inputs else None
    return Sequential([InputLayer(input_tensor=input_tensors[0], name=name)] + layers,
                      name=model.name)


def _clone_functional(model, input_tensors, clone_function):
    if input_tensors is not None and len(input_tensors) != len(model.inputs):
        raise ValueError(f"`input_tensors` must have as many tensors as the model has inputs "
                         f"({len(model.inputs)}); got {len(input_tensors)}.")
    values, inputs = {}, []
    for i, old in enumerate(model.inputs):
        layer = node_of(old).layer
        if input_tensors is None:
            new = Input(batch_shape=tuple(old.get_shape().as_list()), dtype=old.dtype,
                        name=layer.name)
        else:
            new = Input(tensor=input_tensors[i], name=layer.name)
        values[id(old)] = new
        inputs.append(new)
    clones = {}
    for node in model.nodes:
        layer = clones.get(id(node.layer))
        if layer is None:
            layer = clones[id(node.layer)] = _clone_layer(node.layer, clone_function)
        args = [values[id(t)] for t in flatten(node.inputs)]
        # A call's learning phase is its graph's: the clone's layers take the new graph's.
        kwargs = {k: v for k, v in node.kwargs.items()
                  if not (k == "training" and isinstance(v, Tensor))}
        outputs = layer(args if isinstance(node.inputs, list) else args[0], **kwargs)
        for old, new in zip(flatten(node.outputs), flatten(outputs)):
            values[id(old)] = new
    outputs = [values[id(t)] for t in model.outputs]
    return Model(inputs if len(inputs) > 1 else inputs[0],
                 outputs if len(outputs) > 1 else outputs[0], name=model.name)
