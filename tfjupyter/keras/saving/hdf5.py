"""Keras's HDF5 files (TF 1.15's ``model.save('m.h5')`` / ``save_weights('w.h5')``), through
h5py, an optional dependency (``pip install tfjupyter[keras]``)::

    /                  attrs keras_version, backend, model_config (JSON), training_config (JSON)
    /model_weights     attrs layer_names, backend, keras_version
        /<layer>       attrs weight_names ('dense/kernel:0', ...), one dataset per weight
    /optimizer_weights attrs weight_names; one dataset per optimizer variable

A weights file (``save_weights``) is the ``model_weights`` group at the root. Loading sets
the weights layer by layer: in the order of the layers that have weights (topological), or
``by_name``. Attributes over HDF5's 64 KB header limit are split into ``name0``, ``name1``...
as Keras splits them.
"""
from __future__ import annotations

import json
import logging
import os
from typing import Any, Dict, List, Optional

import numpy as np

from .. import backend
from .config import model_config, model_from_config
from .optimizer_weights import saved_optimizer_weights, set_optimizer_weights
from .training_config import compile_arguments, training_config

__all__ = ["save_model", "load_model", "save_weights_to_hdf5", "load_weights_from_hdf5",
           "save_weights", "load_weights", "KERAS_VERSION"]

_log = logging.getLogger("tfjupyter")

KERAS_VERSION = "2.2.4-tf"    # what TF 1.15's Keras writes
_HDF5_HEADER_LIMIT = 64512


def _h5py():
    try:
        import h5py
    except ImportError:
        raise ImportError("Saving or loading Keras HDF5 files (.h5) needs h5py: `pip install "
                          "h5py` (or tfjupyter[keras]). Without it, `model.save_weights(path)` "
                          "to a path without .h5 writes TensorFlow checkpoint files, and "
                          "`tf.keras.experimental.export_saved_model` a SavedModel.") from None
    return h5py


# -- attributes ------------------------------------------------------------------------------------
def _text(value) -> str:
    return value.decode("utf8") if isinstance(value, bytes) else str(value)


def _save_names(group, name: str, names: List[str]) -> None:
    """``group.attrs[name] = names``, split into name0, name1... past HDF5's header limit."""
    encoded = np.array([n.encode("utf8") for n in names])
    chunks = 1
    while encoded.nbytes and encoded.nbytes / chunks > _HDF5_HEADER_LIMIT:
        chunks += 1
    if chunks == 1:
        group.attrs[name] = encoded
        return
    for i, part in enumerate(np.array_split(encoded, chunks)):
        group.attrs[f"{name}{i}"] = part


def _load_names(group, name: str) -> List[str]:
    if name in group.attrs:
        values = group.attrs[name]
    else:
        values, i = [], 0
        while f"{name}{i}" in group.attrs:
            values.extend(group.attrs[f"{name}{i}"])
            i += 1
    return [_text(v) for v in values]


# -- weights ---------------------------------------------------------------------------------------
def save_weights_to_hdf5(group, layers) -> None:
    """Keras's ``save_weights_to_hdf5_group``: each layer's weights in a group of its name."""
    _save_names(group, "layer_names", [layer.name for layer in layers])
    group.attrs["backend"] = b"tensorflow"
    group.attrs["keras_version"] = KERAS_VERSION.encode("utf8")
    weights = [w for layer in layers for w in layer.weights]
    values = iter(backend.batch_get_value(weights))
    for layer in layers:
        layer_group = group.create_group(layer.name)
        names = [w.name for w in layer.weights]
        _save_names(layer_group, "weight_names", names)
        for name in names:
            _write_dataset(layer_group, name, next(values))


def _write_dataset(group, name: str, value: np.ndarray) -> None:
    value = np.asarray(value)
    dataset = group.create_dataset(name, value.shape, dtype=value.dtype)
    if value.shape:
        dataset[:] = value
    else:
        dataset[()] = value


def _layer_weights(group, name: str):
    layer_group = group[name]
    return [np.asarray(layer_group[w]) for w in _load_names(layer_group, "weight_names")]


def load_weights_from_hdf5(group, layers, by_name: bool = False,
                           skip_mismatch: bool = False) -> None:
    """Sets ``layers``' weights from a ``save_weights_to_hdf5`` group: the layers with weights
    in order, or each layer from the group of its name (``by_name``)."""
    saved_names = _load_names(group, "layer_names")
    assignments = []
    if by_name:
        by_layer_name = {}
        for layer in layers:
            by_layer_name.setdefault(layer.name, []).append(layer)
        for name in saved_names:
            values = _layer_weights(group, name)
            for layer in by_layer_name.get(name, []):
                if len(values) != len(layer.weights):
                    if skip_mismatch:
                        _log.warning("Skipping loading of weights for layer %s due to mismatch "
                                     "in number of weights (%d vs %d).", name,
                                     len(layer.weights), len(values))
                        continue
                    raise ValueError(f'Layer "{name}" expects {len(layer.weights)} weight(s), '
                                     f"but the saved weights have {len(values)} element(s).")
                pairs = _checked_pairs(layer, values, skip_mismatch)
                assignments.extend(pairs)
    else:
        with_weights = [layer for layer in layers if layer.weights]
        saved = [name for name in saved_names if _load_names(group[name], "weight_names")]
        if len(saved) != len(with_weights):
            raise ValueError(f"You are trying to load a weight file containing {len(saved)} "
                             f"layers into a model with {len(with_weights)} layers.")
        for layer, name in zip(with_weights, saved):
            values = _layer_weights(group, name)
            if len(values) != len(layer.weights):
                raise ValueError(f'Layer "{layer.name}" (#{with_weights.index(layer)}) expects '
                                 f"{len(layer.weights)} weight(s), but the saved weights "
                                 f'of layer "{name}" have {len(values)} element(s).')
            assignments.extend(_checked_pairs(layer, values, False))
    backend.batch_set_value(assignments)


def _checked_pairs(layer, values, skip_mismatch: bool):
    pairs = []
    for weight, value in zip(layer.weights, values):
        want = tuple(weight.get_shape().as_list())
        if want != value.shape:
            if skip_mismatch:
                _log.warning("Skipping loading of weights for layer %s due to mismatch in "
                             "shape (%s vs %s).", layer.name, want, value.shape)
                return []
            raise ValueError(f'Layer "{layer.name}": weight {weight.name} has shape {want}, '
                             f"but the saved weight has shape {value.shape}.")
        pairs.append((weight, value))
    return pairs


def _save_optimizer_weights(h5file, model) -> None:
    saved = saved_optimizer_weights(model)
    if not saved:
        return
    group = h5file.create_group("optimizer_weights")
    _save_names(group, "weight_names", [name for name, _ in saved])
    for name, value in saved:
        _write_dataset(group, name, value)


def _load_optimizer_weights(group, model) -> None:
    values = [np.asarray(group[name]) for name in _load_names(group, "weight_names")]
    if not set_optimizer_weights(model, values):
        _log.warning("Error in loading the saved optimizer state. As a result, your model is "
                     "starting with a freshly initialized optimizer.")


# -- whole models ----------------------------------------------------------------------------------
def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if hasattr(value, "as_numpy_dtype"):     # a DType
        return value.name
    raise TypeError(f"Not JSON serializable: {value!r}")


def save_model(model, filepath, overwrite: bool = True, include_optimizer: bool = True) -> None:
    """``tf.keras.models.save_model`` to HDF5: the architecture, the weights, the compile
    arguments and the optimizer's state."""
    h5py = _h5py()
    filepath = os.fspath(filepath)
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} exists and overwrite=False.")
    config = model_config(model)
    training = training_config(model) if include_optimizer else None
    with h5py.File(filepath, "w") as f:
        f.attrs["keras_version"] = KERAS_VERSION.encode("utf8")
        f.attrs["backend"] = b"tensorflow"
        f.attrs["model_config"] = json.dumps(config, default=_json_default).encode("utf8")
        save_weights_to_hdf5(f.create_group("model_weights"), model.layers)
        if training is not None:
            f.attrs["training_config"] = json.dumps(training, default=_json_default).encode(
                "utf8")
            _save_optimizer_weights(f, model)


def load_model(filepath, custom_objects: Optional[Dict[str, Any]] = None,
               compile: bool = True):   # noqa: A002  (Keras's argument name)
    """``tf.keras.models.load_model`` of an HDF5 file: the model in the default graph, with
    its weights, compiled as saved (with the optimizer's state) when ``compile``."""
    h5py = _h5py()
    custom_objects = dict(custom_objects or {})
    with h5py.File(os.fspath(filepath), "r") as f:
        if "model_config" not in f.attrs:
            raise ValueError(f"No model found in config file {os.fspath(filepath)} (it may "
                             "hold weights only: use `load_weights`).")
        model = model_from_config(json.loads(_text(f.attrs["model_config"])), custom_objects)
        load_weights_from_hdf5(f["model_weights"], model.layers)
        if not compile or "training_config" not in f.attrs:
            if compile:
                _log.warning("No training configuration found in save file: the model was "
                             "*not* compiled. Compile it manually.")
            return model
        model.compile(**compile_arguments(json.loads(_text(f.attrs["training_config"])),
                                          custom_objects))
        if "optimizer_weights" in f and model.inputs:
            _load_optimizer_weights(f["optimizer_weights"], model)
    return model


def save_weights(model, filepath) -> None:
    h5py = _h5py()
    with h5py.File(os.fspath(filepath), "w") as f:
        save_weights_to_hdf5(f, model.layers)


def load_weights(model, filepath, by_name: bool = False, skip_mismatch: bool = False) -> None:
    h5py = _h5py()
    with h5py.File(os.fspath(filepath), "r") as f:
        group = f["model_weights"] if "layer_names" not in f.attrs and \
            "model_weights" in f else f
        load_weights_from_hdf5(group, model.layers, by_name=by_name,
                               skip_mismatch=skip_mismatch)
