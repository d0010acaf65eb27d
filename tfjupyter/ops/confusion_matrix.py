"""``tf.confusion_matrix`` (``tf.math.confusion_matrix``) and the rank reconciliation of labels
and predictions that TF 1.x's metrics and losses share (``remove_squeezable_dimensions``).

The matrix is built from existing ops: ``one_hot(labels)ᵀ · (weights · one_hot(predictions))``,
so that it runs (and places) wherever MatMul does.
"""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from . import array_ops, math_ops
from .array_index_ops import one_hot
from .check_ops import assert_less, assert_non_negative
from .control_flow_ops import with_dependencies

__all__ = ["confusion_matrix", "remove_squeezable_dimensions"]


def remove_squeezable_dimensions(labels, predictions, expected_rank_diff: int = 0,
                                 name: Optional[str] = None):
    """Squeezes the last dimension of ``predictions`` (or ``labels``) when it is the one
    dimension by which their ranks differ from ``expected_rank_diff`` (static ranks only)."""
    with name_scope(name, "remove_squeezable_dimensions", [labels, predictions]):
        predictions = convert_to_tensor(predictions)
        labels = convert_to_tensor(labels)
        p_rank, l_rank = predictions.shape.ndims, labels.shape.ndims
        if p_rank is not None and l_rank is not None:
            diff = p_rank - l_rank
            if diff == expected_rank_diff + 1 and predictions.shape.as_list()[-1] in (1, None):
                predictions = array_ops.squeeze(predictions, [-1])
            elif diff == expected_rank_diff - 1 and labels.shape.as_list()[-1] in (1, None):
                labels = array_ops.squeeze(labels, [-1])
        return labels, predictions


def confusion_matrix(labels, predictions, num_classes=None, dtype=dtypes.int32,
                     name: Optional[str] = None, weights=None) -> Tensor:
    """The [num_classes, num_classes] matrix whose entry [i, j] counts (or sums the weights of)
    the examples with label i predicted as j. Labels and predictions must be in
    [0, num_classes); without ``num_classes`` it is one more than the largest of them."""
    with name_scope(name, "confusion_matrix", [predictions, labels, num_classes, weights]):
        labels, predictions = remove_squeezable_dimensions(
            math_ops.cast(labels, dtypes.int64), math_ops.cast(predictions, dtypes.int64))
        checks = [assert_non_negative(labels, message="`labels` contains negative values"),
                  assert_non_negative(predictions,
                                      message="`predictions` contains negative values")]
        if num_classes is None:
            num_classes = math_ops.maximum(math_ops.reduce_max(predictions),
                                           math_ops.reduce_max(labels)) + 1
        else:
            limit = math_ops.cast(num_classes, dtypes.int64)
            checks += [assert_less(labels, limit, message="`labels` out of bound"),
                       assert_less(predictions, limit, message="`predictions` out of bound")]
        labels = with_dependencies(checks, array_ops.reshape(labels, [-1]))
        depth = math_ops.cast(num_classes, dtypes.int32)
        dtype = dtypes.as_dtype(dtype)
        # Sums in float64: exact for counts (< 2**53) and for weights of any float type.
        truth = one_hot(labels, depth, dtype=dtypes.float64)
        guess = one_hot(array_ops.reshape(predictions, [-1]), depth, dtype=dtypes.float64)
        if weights is not None:
            w = array_ops.reshape(math_ops.cast(weights, dtypes.float64), [-1, 1])
            guess = guess * w
        counts = math_ops.matmul(truth, guess, transpose_a=True)
        return math_ops.cast(counts, dtype)
