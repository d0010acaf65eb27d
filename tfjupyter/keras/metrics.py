"""``tf.keras.metrics``: per-example metric functions ``metric(y_true, y_pred) -> [batch]``,
and how ``compile(metrics=[...])`` resolves names ('accuracy' depends on the loss and the
output, and is reported as 'acc', TF 1.x's name)."""
from __future__ import annotations

from typing import Callable, Tuple

from ..framework import dtypes
from ..framework.ops import convert_to_tensor
from ..ops import array_ops, math_ops
from . import losses

__all__ = ["binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
           "mean_squared_error", "mean_absolute_error", "mse", "mae", "resolve"]

mean_squared_error = mse = losses.mean_squared_error
mean_absolute_error = mae = losses.mean_absolute_error


def binary_accuracy(y_true, y_pred, threshold: float = 0.5):
    y_pred = convert_to_tensor(y_pred)
    predicted = math_ops.cast(y_pred > threshold, y_pred.dtype.base_dtype)
    matches = math_ops.cast(math_ops.equal(math_ops.cast(y_true, y_pred.dtype.base_dtype),
                                           predicted), y_pred.dtype.base_dtype)
    return math_ops.reduce_mean(matches, axis=-1)


def categorical_accuracy(y_true, y_pred):
    return math_ops.cast(math_ops.equal(math_ops.argmax(y_true, axis=-1),
                                        math_ops.argmax(y_pred, axis=-1)), dtypes.float32)


def sparse_categorical_accuracy(y_true, y_pred):
    y_pred = convert_to_tensor(y_pred)
    labels = array_ops.reshape(math_ops.cast(y_true, dtypes.int64), [-1])
    predicted = array_ops.reshape(math_ops.argmax(y_pred, axis=-1), [-1])
    return math_ops.cast(math_ops.equal(labels, predicted), dtypes.float32)


_BY_NAME = {"binary_accuracy": binary_accuracy, "categorical_accuracy": categorical_accuracy,
            "sparse_categorical_accuracy": sparse_categorical_accuracy,
            "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
            "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error}


def resolve(identifier, loss_fn: Callable, output_shape) -> Tuple[str, Callable]:
    """(the name fit reports, the function) for a ``compile`` metric. 'accuracy'/'acc' is
    binary accuracy for a binary cross entropy or a one-unit output, sparse categorical
    accuracy for a sparse loss, categorical accuracy otherwise (Keras's rule)."""
    if identifier in ("accuracy", "acc"):
        if loss_fn is losses.binary_crossentropy or output_shape.as_list()[-1] == 1:
            return "acc", binary_accuracy
        if loss_fn is losses.sparse_categorical_crossentropy:
            return "acc", sparse_categorical_accuracy
        return "acc", categorical_accuracy
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Unknown metric function: {identifier!r}. Known: 'accuracy', "
                             f"{sorted(_BY_NAME)}")
        function = _BY_NAME[identifier]
        return function.__name__, function
    if callable(identifier):
        return identifier.__name__, identifier
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}")
