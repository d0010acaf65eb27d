"""The ``training_config`` of a saved model: the optimizer's config and the compile arguments
(loss, metrics), as TF 1.15's Keras writes them, so a loaded model is compiled again and can
keep training. The optimizer's state (its slots) is saved beside it as ``optimizer_weights``
(``hdf5.py``)."""
from __future__ import annotations

import inspect
import logging
from typing import Any, Dict, Optional

import numpy as np

from ...framework.ops import Tensor
from ...variables import Variable
from .. import backend, losses, optimizers

__all__ = ["training_config", "compile_arguments"]

_log = logging.getLogger("tfjupyter")

# Keras's optimizer config keys -> the attributes of tfjupyter's Keras optimizers.
# (The learning rate is read by _learning_rate: it may be a variable per graph.)
_OPTIMIZER_ATTRIBUTES = {
    "SGD": {"momentum": ("_momentum",), "nesterov": ("_use_nesterov",)},
    "Adam": {"beta_1": ("_beta1",), "beta_2": ("_beta2",), "epsilon": ("_epsilon",)},
    "RMSprop": {"rho": ("_decay",), "momentum": ("_momentum",), "epsilon": ("_epsilon",),
                "centered": ("_centered",)},
    "Adagrad": {"initial_accumulator_value": ("_initial_accumulator_value",)},
}
# TF 1.15 keeps these in float32 variables, and saves the variables' values.
_FLOAT32_HYPERPARAMETERS = ("learning_rate", "decay", "beta_1", "beta_2", "momentum", "rho")
# Keys newer Keras versions write: some whatever their value (bookkeeping), the others only
# with the value that changes nothing.
_IGNORED_OPTIMIZER_KEYS = ("name", "ema_momentum", "ema_overwrite_frequency", "jit_compile",
                           "is_legacy_optimizer")
_NO_OP_OPTIMIZER_KEYS = {"weight_decay": None, "clipnorm": None,
                         "global_clipnorm": None, "clipvalue": None, "use_ema": False,
                         "amsgrad": False, "loss_scale_factor": None,
                         "gradient_accumulation_steps": None}


def _number(value):
    """A hyperparameter's value: a Python number, or a tensor/variable's value now."""
    if isinstance(value, (Tensor, Variable)):
        value = backend.get_session().run(value)
    return value.item() if hasattr(value, "item") else value


def learning_rate_value(optimizer, graph) -> float:
    """The rate now: the optimizer's learning-rate variable in ``graph`` when it has one
    (callbacks may have changed it), else the rate it was made with."""
    variables = getattr(optimizer, "_learning_rate_variables", None)
    if variables is not None and graph in variables:
        return _number(variables[graph])
    for attribute in ("_initial_learning_rate", "_lr", "_learning_rate"):
        value = getattr(optimizer, attribute, None)
        if value is not None and not (callable(value) and not isinstance(value, Tensor)):
            return _number(value)
    raise NotImplementedError(f"Cannot save the learning rate of {type(optimizer).__name__}: "
                              "it is a function.")


def optimizer_config(optimizer, graph=None) -> Optional[Dict[str, Any]]:
    """``{"class_name": "Adam", "config": {...}}``, or None for a ``tf.train`` optimizer,
    whose settings Keras cannot save either."""
    class_name = type(optimizer).__name__
    if not isinstance(optimizer, tuple(getattr(optimizers, n) for n in _OPTIMIZER_ATTRIBUTES)):
        return None
    config = {"name": class_name, "learning_rate": learning_rate_value(optimizer, graph),
              "decay": float(getattr(optimizer, "_learning_rate_decay", 0.0))}
    for key, attributes in _OPTIMIZER_ATTRIBUTES[class_name].items():
        value = next(getattr(optimizer, a) for a in attributes if hasattr(optimizer, a))
        config[key] = _number(value)
    for key in _FLOAT32_HYPERPARAMETERS:
        if key in config:
            config[key] = float(np.float32(config[key]))
    if class_name == "Adam":
        config["amsgrad"] = False
    return {"class_name": class_name, "config": config}


def _serialize_loss(loss):
    if isinstance(loss, str) or loss is None:
        return loss
    if isinstance(loss, (list, tuple)):
        return [_serialize_loss(l) for l in loss]
    if isinstance(loss, dict):
        return {k: _serialize_loss(v) for k, v in loss.items()}
    return getattr(loss, "__name__", None) or type(loss).__name__


def training_config(model) -> Optional[Dict[str, Any]]:
    """What ``compile`` was given, in TF 1.15's layout; None when the model is not compiled
    or its optimizer is a ``tf.train`` one (Keras then asks to compile again after loading)."""
    if model.optimizer is None:
        return None
    graph = model.inputs[0].graph if model.inputs else None
    optimizer = optimizer_config(model.optimizer, graph)
    if optimizer is None:
        _log.warning("TensorFlow optimizers do not make it possible to access optimizer "
                     "attributes or optimizer state after instantiation. As a result, we "
                     "cannot save the optimizer as part of the model save file. You will "
                     "have to compile your model again after loading it. Prefer using a "
                     "Keras optimizer instead (see keras.io/optimizers).")
        return None
    compiled = model._compiled
    if not isinstance(compiled, dict):   # (loss function, metrics) before multi-output models
        compiled = {"loss": model.loss, "metrics": compiled[1] if compiled else None}
    return {"optimizer_config": optimizer, "loss": _serialize_loss(compiled.get("loss")),
            "metrics": _serialize_loss(compiled.get("metrics")),
            "weighted_metrics": _serialize_loss(compiled.get("weighted_metrics")),
            "sample_weight_mode": None, "loss_weights": compiled.get("loss_weights")}


def _deserialize_optimizer(config: Dict[str, Any], custom_objects: Dict[str, Any]):
    class_name = config["class_name"]
    # Keras 2.11+ names its new optimizers 'Custom>Adam' in configs.
    class_name = class_name.split(">", 1)[-1]
    if class_name in custom_objects:
        return custom_objects[class_name](**config["config"])
    if class_name not in _OPTIMIZER_ATTRIBUTES:
        raise ValueError(f"Unknown optimizer: {class_name}. tfjupyter loads "
                         f"{sorted(_OPTIMIZER_ATTRIBUTES)} or what `custom_objects` names.")
    cls = getattr(optimizers, class_name)
    # lr, decay: Keras's keyword arguments, which the optimizers take through **kwargs.
    accepted = set(inspect.signature(cls.__init__).parameters) | {"lr", "decay"}
    arguments = {}
    for key, value in config["config"].items():
        if key in _IGNORED_OPTIMIZER_KEYS or \
                (key in _NO_OP_OPTIMIZER_KEYS and value == _NO_OP_OPTIMIZER_KEYS[key]):
            continue
        if key in accepted:
            arguments[key] = value
        else:
            raise NotImplementedError(f"The saved optimizer {class_name} has `{key}={value!r}`, "
                                      "which tfjupyter does not support.")
    return cls(**arguments)


def _deserialize_loss(loss, custom_objects: Dict[str, Any]):
    if isinstance(loss, dict) and "class_name" in loss:
        # Keras 2's {'class_name': 'function', 'config': 'mean_squared_error'}
        loss = loss["config"] if isinstance(loss["config"], str) else loss["config"].get(
            "fn", loss["config"].get("name"))
    if isinstance(loss, dict):
        return {k: _deserialize_loss(v, custom_objects) for k, v in loss.items()}
    if isinstance(loss, list):
        return [_deserialize_loss(v, custom_objects) for v in loss]
    if isinstance(loss, str) and loss in custom_objects:
        return custom_objects[loss]
    losses.get(loss)   # a clear error now, naming the loss, when it is unknown
    return loss


def _deserialize_metrics(metrics, custom_objects: Dict[str, Any]):
    """Metrics as compile takes them: a list, a list per output, or a dict by output name."""
    if metrics is None:
        return None
    if isinstance(metrics, dict):
        if "class_name" in metrics:
            # Keras 2.x: {'class_name': 'MeanMetricWrapper', 'config': {'name': 'accuracy'}}
            name = metrics["config"]["name"]
            return custom_objects.get(name, name)
        return {k: _deserialize_metrics(v, custom_objects) for k, v in metrics.items()}
    if isinstance(metrics, list):
        # Keras 2.x writes one list per output: a single output's is the plain list.
        if len(metrics) == 1 and isinstance(metrics[0], list):
            metrics = metrics[0]
        return [_deserialize_metrics(m, custom_objects) for m in metrics]
    return custom_objects.get(metrics, metrics)


def compile_arguments(config: Dict[str, Any], custom_objects: Dict[str, Any]) -> Dict[str, Any]:
    """``compile``'s arguments from a saved ``training_config``."""
    arguments = {"optimizer": _deserialize_optimizer(config["optimizer_config"], custom_objects),
                 "loss": _deserialize_loss(config["loss"], custom_objects),
                 "metrics": _deserialize_metrics(config.get("metrics"), custom_objects) or None}
    if config.get("loss_weights") is not None:
        arguments["loss_weights"] = config["loss_weights"]
    if config.get("weighted_metrics"):
        arguments["weighted_metrics"] = _deserialize_metrics(config["weighted_metrics"],
                                                             custom_objects)
    return arguments
