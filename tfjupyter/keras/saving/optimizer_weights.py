"""A Keras optimizer's state as TF 1.15's Keras saves it (``optimizer_weights`` in HDF5
files): its iteration count, then each slot for every trainable weight, slot by slot::

    Adam/iter:0, Adam/dense/kernel/m:0, Adam/dense/bias/m:0, Adam/dense/kernel/v:0, ...

tfjupyter's Keras optimizers are ``tf.train`` ones with Keras's slots (m, v, momentum, rms,
mg, accumulator, of the same names and meanings) and ``iterations``. Adam's bias correction
also reads ``beta1_power`` and ``beta2_power`` (beta ** (t + 1) after t steps), set from the
iterations when a state is loaded.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from .. import backend, optimizers

__all__ = ["saved_optimizer_weights", "set_optimizer_weights"]


def _slot_names(optimizer) -> Optional[List[str]]:
    """Keras's slots of ``optimizer``, in the order Keras makes them; None for an optimizer
    that is not one of tfjupyter's Keras optimizers."""
    if isinstance(optimizer, optimizers.Adam):
        return ["m", "v"]
    if isinstance(optimizer, optimizers.SGD):
        return ["momentum"] if optimizer._momentum else []
    if isinstance(optimizer, optimizers.RMSprop):
        return ["rms"] + (["momentum"] if optimizer._momentum else []) + \
            (["mg"] if optimizer._centered else [])
    if isinstance(optimizer, optimizers.Adagrad):
        return ["accumulator"]
    return None


def _optimizer_name(optimizer) -> str:
    return optimizer.get_name() if hasattr(optimizer, "get_name") else optimizer._name


def saved_optimizer_weights(model) -> List[Tuple[str, np.ndarray]]:
    """(Keras's weight name, value) of the model's optimizer state; empty before training
    (no slots yet), as Keras saves none then."""
    optimizer = model.optimizer
    slots = _slot_names(optimizer)
    weights = model.trainable_weights
    parts = getattr(model, "_graph_parts", None) or {}
    if slots is None or not weights or parts.get("train_op") is None:
        return []
    graph = weights[0].graph
    variables = [optimizer.get_slot(w, slot) for slot in slots for w in weights]
    if any(v is None for v in variables):
        return []
    name = _optimizer_name(optimizer)
    names = [f"{name}/{w.op.name}/{slot}:0" for slot in slots for w in weights]
    with graph.as_default():
        iterations = optimizer.iterations
    values = backend.batch_get_value([iterations] + variables)
    return [(f"{name}/iter:0", np.asarray(values[0], np.int64))] + list(zip(names, values[1:]))


def set_optimizer_weights(model, values: List[np.ndarray]) -> bool:
    """Sets the optimizer's state from Keras's list (made by ``saved_optimizer_weights``, or
    by Keras); False when the list does not fit (Keras then warns and starts afresh)."""
    optimizer = model.optimizer
    slots = _slot_names(optimizer)
    weights = model.trainable_weights
    if slots is None or len(values) != 1 + len(slots) * len(weights):
        return False
    model._train_op()   # makes the slots, as Keras makes its train function first
    graph = weights[0].graph
    pairs = []
    for i, (slot, weight) in enumerate((s, w) for s in slots for w in weights):
        variable, value = optimizer.get_slot(weight, slot), np.asarray(values[1 + i])
        if variable is None or tuple(variable.get_shape().as_list()) != np.shape(value):
            return False
        pairs.append((variable, value))
    with graph.as_default():
        pairs.append((optimizer.iterations, np.asarray(values[0], np.int64)))
    if isinstance(optimizer, optimizers.Adam):
        step = int(np.asarray(values[0])) + 1
        beta1_power, beta2_power = optimizer._get_beta_accumulators(graph)
        pairs += [(beta1_power, np.float32(optimizer._beta1 ** step)),
                  (beta2_power, np.float32(optimizer._beta2 ** step))]
    backend.batch_set_value(pairs)
    return True
