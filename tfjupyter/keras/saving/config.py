"""Keras's configuration dicts for tfjupyter's layers and models, and models made from them.

A layer's config is what TF 1.15's ``layer.get_config()`` returns: its name, trainable, dtype
(``batch_input_shape`` when it has one), then its own keys (Dense: units, activation,
use_bias, kernel_initializer, ...), with activations as names and initializers as
``{"class_name": "GlorotUniform", "config": {"seed": null}}``. tfjupyter's layers record the
arguments they were made with (``base_layer``); a key not given takes Keras's default, so a
config lists every key as Keras's does. Model configs are Keras's too: a Sequential's list of
layers, and a functional model's layers with their ``inbound_nodes``
(``[[layer_name, node_index, tensor_index, kwargs], ...]`` per call) and its input and output
layers. ``model_from_config`` reads configs written by Keras (TF 1.15's, or Keras 2's
``tf_keras``, whose extra keys are accepted when they hold their no-op values).
"""
from __future__ import annotations

import inspect
from typing import Any, Dict, List, Optional

from ...framework.ops import Tensor
from ...layers.core import _ACTIVATIONS_BY_NAME
from ... import init_ops
from .. import initializers, layers as keras_layers
from ..engine.base_layer import Layer, flatten, node_of
from ..engine.input_layer import InputLayer
from ..engine.network import Network
from ..engine.sequential import Sequential
from ..engine.training import Model
from ..recurrent import hard_sigmoid

__all__ = ["layer_config", "model_config", "model_from_config", "layer_from_config",
           "serialize_activation"]

_KERNEL_AND_BIAS = {
    "activation": "linear", "use_bias": True, "kernel_initializer": "glorot_uniform",
    "bias_initializer": "zeros", "kernel_regularizer": None, "bias_regularizer": None,
    "activity_regularizer": None, "kernel_constraint": None, "bias_constraint": None}
_CONV = {"strides": 1, "padding": "valid", "data_format": "channels_last", "dilation_rate": 1}
_POOL = {"padding": "valid", "data_format": "channels_last"}
_RECURRENT = {
    "return_sequences": False, "return_state": False, "go_backwards": False, "stateful": False,
    "unroll": False, "activation": "tanh", "recurrent_activation": "hard_sigmoid",
    "use_bias": True, "kernel_initializer": "glorot_uniform",
    "recurrent_initializer": "orthogonal", "bias_initializer": "zeros",
    "kernel_regularizer": None, "recurrent_regularizer": None, "bias_regularizer": None,
    "activity_regularizer": None, "kernel_constraint": None, "recurrent_constraint": None,
    "bias_constraint": None, "dropout": 0.0, "recurrent_dropout": 0.0, "implementation": 1}

# Each layer's own config keys after name/trainable/dtype, in Keras's order, with Keras's
# defaults (a key without one is a required argument).
_LAYER_KEYS: Dict[str, Dict[str, Any]] = {
    "Dense": {"units": None, **_KERNEL_AND_BIAS},
    "Conv1D": {"filters": None, "kernel_size": None, **_CONV, **_KERNEL_AND_BIAS},
    "Conv2D": {"filters": None, "kernel_size": None, **_CONV, **_KERNEL_AND_BIAS},
    "MaxPooling1D": {"pool_size": 2, "strides": None, **_POOL},
    "AveragePooling1D": {"pool_size": 2, "strides": None, **_POOL},
    "MaxPooling2D": {"pool_size": (2, 2), "strides": None, **_POOL},
    "AveragePooling2D": {"pool_size": (2, 2), "strides": None, **_POOL},
    "GlobalAveragePooling2D": {"data_format": "channels_last"},
    "GlobalMaxPooling2D": {"data_format": "channels_last"},
    "Dropout": {"rate": None, "noise_shape": None, "seed": None},
    "Flatten": {"data_format": "channels_last"},
    "BatchNormalization": {
        "axis": -1, "momentum": 0.99, "epsilon": 0.001, "center": True, "scale": True,
        "beta_initializer": "zeros", "gamma_initializer": "ones",
        "moving_mean_initializer": "zeros", "moving_variance_initializer": "ones",
        "beta_regularizer": None, "gamma_regularizer": None, "beta_constraint": None,
        "gamma_constraint": None},
    "Activation": {"activation": None},
    "Reshape": {"target_shape": None},
    "Embedding": {"input_dim": None, "output_dim": None, "embeddings_initializer": "uniform",
                  "embeddings_regularizer": None, "activity_regularizer": None,
                  "embeddings_constraint": None, "mask_zero": False, "input_length": None},
    "Concatenate": {"axis": -1},
    "Add": {}, "Subtract": {}, "Multiply": {}, "Average": {},
    "LSTM": {"units": None, **_RECURRENT, "unit_forget_bias": True},
    "GRU": {"units": None, **_RECURRENT, "reset_after": False},
}

# Keys newer Keras versions write that change nothing when they hold these values.
_NO_OP_KEYS = {"groups": 1, "ragged": False, "sparse": False, "optional": False,
               "time_major": False, "keepdims": False, "synchronized": False,
               "renorm": False, "renorm_clipping": None, "renorm_momentum": 0.99,
               "fused": None, "virtual_batch_size": None, "adjustment": None,
               "stateful": False, "unroll": False, "implementation": 1, "dropout": 0.0,
               "recurrent_dropout": 0.0, "mask_zero": False, "activity_regularizer": None,
               "noise_shape": None, "input_length": None}

def _layer_classes() -> Dict[str, type]:
    classes = {name: getattr(keras_layers, name) for name in _LAYER_KEYS}
    # Keras's aliases and TF 1.15's class names for the same layers.
    classes.update(MaxPool1D=keras_layers.MaxPooling1D, MaxPool2D=keras_layers.MaxPooling2D,
                   AvgPool1D=keras_layers.AveragePooling1D,
                   AvgPool2D=keras_layers.AveragePooling2D,
                   Convolution1D=keras_layers.Conv1D, Convolution2D=keras_layers.Conv2D,
                   InputLayer=InputLayer)
    return classes


# -- activations and initializers -----------------------------------------------------------------
def serialize_activation(activation) -> str:
    """Keras's name for an activation (None is 'linear')."""
    if activation is None or isinstance(activation, str):
        return activation or "linear"
    if activation is hard_sigmoid:
        return "hard_sigmoid"
    for name, function in _ACTIVATIONS_BY_NAME.items():
        if function is activation:
            return name
    name = getattr(activation, "__name__", None)
    if name is None:
        raise ValueError(f"Cannot serialize the activation {activation!r}: Keras saves "
                         "activations by name.")
    return name   # a custom function: load_model finds it in custom_objects


# Keras's initializer class names -> tfjupyter's initializers.
_INITIALIZERS = {
    "GlorotUniform": init_ops.GlorotUniform, "GlorotNormal": init_ops.GlorotNormal,
    "Zeros": init_ops.Zeros, "Ones": init_ops.Ones, "Constant": init_ops.Constant,
    "RandomUniform": init_ops.RandomUniform, "RandomNormal": init_ops.RandomNormal,
    "TruncatedNormal": init_ops.TruncatedNormal, "VarianceScaling": init_ops.VarianceScaling,
    "Orthogonal": init_ops.Orthogonal, "Identity": init_ops.Identity,
    "HeNormal": init_ops.he_normal, "HeUniform": init_ops.he_uniform,
    "LecunNormal": init_ops.lecun_normal, "LecunUniform": init_ops.lecun_uniform,
}


def serialize_initializer(initializer) -> Optional[Dict[str, Any]]:
    if initializer is None:
        return None
    initializer = initializers.get(initializer)
    name = type(initializer).__name__
    if name not in _INITIALIZERS or not isinstance(initializer, init_ops.Initializer):
        raise ValueError(f"Cannot serialize the initializer {initializer!r}: Keras saves "
                         f"initializers as one of {sorted(_INITIALIZERS)}.")
    config = {k: v for k, v in initializer.get_config().items() if k != "dtype"}
    return {"class_name": name, "config": config}


def deserialize_initializer(config, custom_objects: Dict[str, Any]):
    if config is None or isinstance(config, str):
        return config
    name = config["class_name"]
    if name in custom_objects:
        return custom_objects[name](**config.get("config", {}))
    if name not in _INITIALIZERS:
        raise ValueError(f"Unknown initializer: {name}. Please ensure this object is passed "
                         "to the `custom_objects` argument.")
    arguments = {k: v for k, v in config.get("config", {}).items() if k != "dtype"}
    return _INITIALIZERS[name](**arguments)


def _json_value(value):
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


# -- layers ---------------------------------------------------------------------------------------
def _given_arguments(layer: Layer) -> Dict[str, Any]:
    """The arguments ``layer`` was made with, by name."""
    args, kwargs = getattr(layer, "_constructor_arguments", ((), {}))
    try:
        bound = inspect.signature(type(layer).__init__).bind_partial(layer, *args, **kwargs)
    except TypeError:
        return dict(kwargs)
    given = dict(bound.arguments)
    given.pop("self", None)
    for name, parameter in inspect.signature(type(layer).__init__).parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            given.update(given.pop(name, {}))
    return given


def _config_value(layer: Layer, key: str, given: Dict[str, Any], default):
    if key == "activation" or key.endswith("_activation"):
        return serialize_activation(given.get(key, default))
    if key.endswith("_initializer"):
        return serialize_initializer(given.get(key, default))
    if key.endswith(("_regularizer", "_constraint")):
        value = given.get(key, default)
        if value is not None:
            raise NotImplementedError(f'Layer "{layer.name}": saving its `{key}` is not '
                                      "supported by tfjupyter.")
        return None
    # Normalized values (kernel_size (3, 3), padding 'valid') are the layer's attributes.
    value = getattr(layer, key, given.get(key, default))
    if callable(value):
        value = given.get(key, default)
    return _json_value(value)


def layer_config(layer: Layer) -> Dict[str, Any]:
    """``layer.get_config()`` as TF 1.15's Keras writes it."""
    if isinstance(layer, Network):
        return model_config(layer)["config"]
    if isinstance(layer, InputLayer):
        return {"batch_input_shape": _json_value(layer._batch_input_shape),
                "dtype": layer._dtype.name if layer._dtype is not None else "float32",
                "sparse": False, "name": layer.name}
    class_name = type(layer).__name__
    if class_name not in _LAYER_KEYS:
        get_config = type(layer).get_config
        if get_config is Layer.get_config:
            raise NotImplementedError(
                f'Layer "{layer.name}" ({class_name}) has no get_config: tfjupyter saves the '
                f"layers {sorted(_LAYER_KEYS)}, and custom layers that define get_config.")
        return layer.get_config()
    config = {"name": layer.name, "trainable": layer.trainable,
              "dtype": layer._dtype.name if layer._dtype is not None else "float32"}
    if layer._batch_input_shape is not None:
        config["batch_input_shape"] = _json_value(layer._batch_input_shape)
    given = _given_arguments(layer)
    for key, default in _LAYER_KEYS[class_name].items():
        config[key] = _config_value(layer, key, given, default)
    return config


def _layer_entry(layer: Layer) -> Dict[str, Any]:
    if isinstance(layer, Network):
        return model_config(layer)
    return {"class_name": type(layer).__name__, "config": layer_config(layer)}


def _check_inert(layer_name: str, class_name: str, config: Dict[str, Any], keys) -> None:
    for key in keys:
        value = config[key]
        if key in _NO_OP_KEYS and value == _NO_OP_KEYS[key]:
            continue
        raise NotImplementedError(f'Layer "{layer_name}" ({class_name}): `{key}={value!r}` '
                                  "is not supported by tfjupyter.")


def layer_from_config(entry: Dict[str, Any], custom_objects: Dict[str, Any]):
    """A new layer (or model) from Keras's ``{"class_name": ..., "config": ...}``."""
    class_name, config = entry["class_name"], dict(entry["config"])
    if class_name in ("Sequential", "Model", "Functional"):
        return model_from_config(entry, custom_objects)
    if class_name in custom_objects:
        cls = custom_objects[class_name]
        if hasattr(cls, "from_config"):
            return cls.from_config(config)
        return cls(**config)
    classes = _layer_classes()
    if class_name not in classes:
        raise ValueError(f"Unknown layer: {class_name}. Please ensure this object is passed to "
                         "the `custom_objects` argument.")
    name = config.get("name", class_name)
    if class_name == "InputLayer":
        _check_inert(name, class_name, config,
                     [k for k in config if k not in ("batch_input_shape", "dtype", "name",
                                                     "batch_shape")])
        shape = config.get("batch_input_shape", config.get("batch_shape"))
        return InputLayer(batch_input_shape=shape, dtype=config.get("dtype"), name=name)
    own = _LAYER_KEYS[classes[class_name].__name__]
    arguments = {"name": name, "trainable": config.get("trainable", True)}
    if config.get("dtype") is not None:
        dtype = config["dtype"]
        # Keras 3 writes a dtype policy: {"class_name": "DTypePolicy", "config": {"name": ...}}
        arguments["dtype"] = dtype["config"]["name"] if isinstance(dtype, dict) else dtype
    if config.get("batch_input_shape") is not None:
        arguments["batch_input_shape"] = tuple(config["batch_input_shape"])
    unknown = [k for k in config if k not in own and k not in
               ("name", "trainable", "dtype", "batch_input_shape")]
    _check_inert(name, class_name, config, unknown)
    for key in own:
        if key not in config:
            continue
        value = config[key]
        if key.endswith("_initializer"):
            value = deserialize_initializer(value, custom_objects)
        elif key.endswith(("_regularizer", "_constraint")):
            if value is not None:
                raise NotImplementedError(f'Layer "{name}" ({class_name}): loading its `{key}` '
                                          "is not supported by tfjupyter.")
            continue
        elif key in _NO_OP_KEYS and value == _NO_OP_KEYS[key]:
            continue   # the layer's default; tfjupyter's layers may not take the argument
        elif (key == "activation" or key.endswith("_activation")) and \
                value in custom_objects:
            value = custom_objects[value]
        elif isinstance(value, list):
            value = tuple(value)
        arguments[key] = value
    if classes[class_name].__name__ == "BatchNormalization" and \
            isinstance(arguments.get("axis"), tuple):
        arguments["axis"] = list(arguments["axis"])
    return classes[class_name](**arguments)


# -- models ---------------------------------------------------------------------------------------
def model_config(model: Network) -> Dict[str, Any]:
    """``{"class_name": "Sequential" | "Model", "config": ...}`` as TF 1.15 writes it."""
    if model._is_subclassed() or (not model.nodes and not isinstance(model, Sequential)):
        raise NotImplementedError(
            f'Model "{model.name}" is a subclassed model: saving it to HDF5 needs its '
            "configuration, which only Sequential and functional models have. Use "
            "`save_weights` instead.")
    if isinstance(model, Sequential):
        config = {"name": model.name, "layers": [_layer_entry(l) for l in model.layers]}
        first = model.layers[0] if model.layers else None
        if model.inputs and first is not None and first._batch_input_shape is None and \
                not isinstance(first, Network):
            config["build_input_shape"] = model.inputs[0].get_shape().as_list()
        return {"class_name": "Sequential", "config": config}
    in_model = _nodes_by_layer(model)
    entries = []
    for layer in model.layers:
        entry = _layer_entry(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [
            [_tensor_reference(t, in_model) + [_plain_kwargs(node.kwargs)]
             for t in flatten(node.inputs)]
            for node in in_model[id(layer)] if flatten(node.inputs)]
        entries.append(entry)
    config = {"name": model.name, "layers": entries,
              "input_layers": [_tensor_reference(t, in_model) for t in model.inputs],
              "output_layers": [_tensor_reference(t, in_model) for t in model.outputs]}
    return {"class_name": "Model", "config": config}


def _nodes_by_layer(model: Network) -> Dict[int, List]:
    """Each layer's calls that belong to ``model``, in order (Keras's node indices)."""
    in_model = {id(node) for node in model.nodes}
    in_model.update(id(node_of(t)) for t in model.inputs if node_of(t) is not None)
    return {id(layer): [n for n in layer.inbound_nodes if id(n) in in_model]
            for layer in model.layers}


def _tensor_reference(tensor: Tensor, in_model: Dict[int, List]) -> List:
    node = node_of(tensor)
    nodes = in_model[id(node.layer)]
    index = next(i for i, n in enumerate(nodes) if n is node) + _first_node(node.layer)
    tensor_index = next(i for i, t in enumerate(flatten(node.outputs)) if t is tensor)
    return [node.layer.name, index, tensor_index]


def _first_node(layer) -> int:
    """Keras's index of a layer's first call: 1 for a model with inputs of its own (a nested
    Sequential or functional model), whose node 0 is the one that made its outputs."""
    return int(isinstance(layer, Network) and bool(layer.inputs) and not layer._is_subclassed())


def _plain_kwargs(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    # A call's learning phase is its graph's tensor: Keras saves only plain arguments.
    return {k: v for k, v in kwargs.items() if not isinstance(v, Tensor)}


def model_from_config(entry: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None):
    """A new, uncompiled model from ``model_config``'s (or Keras's) dict, in the default
    graph, with new weights."""
    custom_objects = dict(custom_objects or {})
    class_name, config = entry["class_name"], entry["config"]
    if class_name == "Sequential":
        layer_entries = config["layers"] if isinstance(config, dict) else config
        model = Sequential(name=config.get("name") if isinstance(config, dict) else None)
        for layer_entry in layer_entries:
            model.add(layer_from_config(layer_entry, custom_objects))
        shape = config.get("build_input_shape") if isinstance(config, dict) else None
        if shape is not None and not model.inputs:
            model.build(tuple(shape))
        return model
    if class_name not in ("Model", "Functional"):
        if class_name in custom_objects:
            return custom_objects[class_name].from_config(config)
        raise ValueError(f"Unknown model class: {class_name}. Please ensure this object is "
                         "passed to the `custom_objects` argument.")
    return _functional_from_config(config, custom_objects)


def _functional_from_config(config: Dict[str, Any], custom_objects: Dict[str, Any]) -> Model:
    created: Dict[str, Layer] = {}
    outputs_of: Dict[str, List] = {}    # layer name -> each call's output tensors, in order
    pending = []                        # (layer, inbound node data) in Keras's order
    for entry in config["layers"]:
        layer = layer_from_config(entry, custom_objects)
        name = entry.get("name", entry["config"].get("name"))
        created[name] = layer
        if isinstance(layer, InputLayer):
            outputs_of[name] = [flatten(layer.output)]
        else:   # a nested model's node 0 is its own outputs
            outputs_of[name] = [layer.outputs] if _first_node(layer) else []
        pending.extend((name, node) for node in entry.get("inbound_nodes", []))

    def ready(node) -> bool:
        return all(len(outputs_of[ref[0]]) > ref[1] for ref in _node_references(node))

    while pending:
        progress = False
        for item in list(pending):
            name, node = item
            # A layer's calls run in order: node i+1 never before node i.
            if pending.index(item) != next(i for i, p in enumerate(pending) if p[0] == name):
                continue
            if not ready(node):
                continue
            references = _node_references(node)
            inputs = [outputs_of[ref[0]][ref[1]][ref[2]] for ref in references]
            kwargs = references[0][3] if len(references[0]) > 3 else {}
            outputs = created[name](inputs if len(inputs) > 1 else inputs[0], **(kwargs or {}))
            outputs_of[name].append(flatten(outputs))
            pending.remove(item)
            progress = True
        if not progress:
            raise ValueError("The model's config has layer calls whose inputs are never made: "
                             f"{[name for name, _ in pending]}.")

    def tensors(references):
        return [outputs_of[name][node][index] for name, node, index in references]

    inputs, outputs = tensors(config["input_layers"]), tensors(config["output_layers"])
    return Model(inputs if len(inputs) > 1 else inputs[0],
                 outputs if len(outputs) > 1 else outputs[0], name=config.get("name"))


def _node_references(node) -> List[List]:
    """A node's inputs as [layer_name, node_index, tensor_index, kwargs] lists; Keras 3's
    legacy configs write ``{"args": [...], "kwargs": {...}}`` instead."""
    if isinstance(node, dict):
        raise NotImplementedError("This model config was written by Keras 3 (its nodes are "
                                  "{'args', 'kwargs'} dicts); tfjupyter reads TF 1.x / Keras "
                                  "2 configs.")
    return [list(ref) for ref in node]
