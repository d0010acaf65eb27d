"""``tf.keras.losses``: per-example losses ``loss(y_true, y_pred) -> [batch]``, as TF 1.15's
Keras backend computes them.

Cross entropies of probabilities clip them to [1e-7, 1 - 1e-7], except where ``y_pred`` is
the output of a Softmax (Sigmoid for the binary one) op: then, as Keras does in graph mode,
the loss is computed from that op's input, the logits, which is exact and stable.
"""
from __future__ import annotations

from .. import nn
from ..framework import dtypes
from ..framework.ops import convert_to_tensor
from ..ops import array_ops, math_ops
from ..ops.clip_ops import clip_by_value
from . import backend

__all__ = ["categorical_crossentropy", "sparse_categorical_crossentropy", "binary_crossentropy",
           "mean_squared_error", "mean_absolute_error", "mse", "mae", "get"]


def _producer_input(output, op_type: str):
    """The logits behind ``output`` when it is the output of an ``op_type`` op, else None."""
    return output.op.inputs[0] if output.op.type == op_type else None


def _clipped(output):
    eps = convert_to_tensor(backend.epsilon(), dtype=output.dtype.base_dtype)
    return clip_by_value(output, eps, 1.0 - eps)


def categorical_crossentropy(y_true, y_pred, from_logits: bool = False):
    y_pred = convert_to_tensor(y_pred)
    y_true = math_ops.cast(y_true, y_pred.dtype.base_dtype)
    logits = y_pred if from_logits else _producer_input(y_pred, "Softmax")
    if logits is not None:
        return nn.softmax_cross_entropy_with_logits_v2(labels=y_true, logits=logits)
    probabilities = y_pred / math_ops.reduce_sum(y_pred, axis=-1, keepdims=True)
    return -math_ops.reduce_sum(y_true * math_ops.log(_clipped(probabilities)), axis=-1)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits: bool = False):
    y_pred = convert_to_tensor(y_pred)
    logits = y_pred if from_logits else _producer_input(y_pred, "Softmax")
    if logits is None:
        logits = math_ops.log(_clipped(y_pred))
    classes = logits.get_shape().as_list()[-1]
    labels = array_ops.reshape(math_ops.cast(y_true, dtypes.int64), [-1])
    flat_logits = array_ops.reshape(logits, [-1, classes])
    losses = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=flat_logits)
    if logits.get_shape().ndims == 2:
        return losses
    return array_ops.reshape(losses, array_ops.shape(logits)[:-1])


def binary_crossentropy(y_true, y_pred, from_logits: bool = False):
    """The mean over the last axis of each output's binary cross entropy."""
    y_pred = convert_to_tensor(y_pred)
    y_true = math_ops.cast(y_true, y_pred.dtype.base_dtype)
    logits = y_pred if from_logits else _producer_input(y_pred, "Sigmoid")
    if logits is not None:
        losses = nn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=logits)
    else:
        p = _clipped(y_pred)
        losses = -(y_true * math_ops.log(p + backend.epsilon()) +
                   (1.0 - y_true) * math_ops.log(1.0 - p + backend.epsilon()))
    return math_ops.reduce_mean(losses, axis=-1)


def mean_squared_error(y_true, y_pred):
    y_pred = convert_to_tensor(y_pred)
    y_true = math_ops.cast(y_true, y_pred.dtype.base_dtype)
    return math_ops.reduce_mean(math_ops.square(y_pred - y_true), axis=-1)


def mean_absolute_error(y_true, y_pred):
    y_pred = convert_to_tensor(y_pred)
    y_true = math_ops.cast(y_true, y_pred.dtype.base_dtype)
    return math_ops.reduce_mean(math_ops.abs(y_pred - y_true), axis=-1)


mse, mae = mean_squared_error, mean_absolute_error

_BY_NAME = {"categorical_crossentropy": categorical_crossentropy,
            "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
            "binary_crossentropy": binary_crossentropy, "mean_squared_error": mean_squared_error,
            "mse": mean_squared_error, "mean_absolute_error": mean_absolute_error,
            "mae": mean_absolute_error}


def get(identifier):
    """A loss function from its Keras name or itself."""
    if callable(identifier):
        return identifier
    try:
        return _BY_NAME[identifier]
    except (KeyError, TypeError):
        raise ValueError(f"Unknown loss function: {identifier!r}. Known: "
                         f"{sorted(_BY_NAME)}") from None
