"""The ``tf.losses`` loss functions, as TensorFlow 1.x's losses_impl.py defines them.

Each computes elementwise losses in float32 (TF casts labels and predictions to float32),
multiplies them by ``weights`` (a scalar, or a tensor that broadcasts to the losses: the same
rank, each dimension 1 or the losses'), reduces them by ``reduction`` and adds the result to
``loss_collection`` (GraphKeys.LOSSES; None adds it nowhere), where ``tf.losses.get_total_loss``
finds it. The default reduction, SUM_BY_NONZERO_WEIGHTS, is the weighted sum divided by the
number of elements whose weight is not zero (0 when all weights are zero).
"""
from __future__ import annotations

from typing import Optional

from .. import nn
from ..framework import dtypes
from ..framework.ops import GraphKeys, Tensor, convert_to_tensor, name_scope
from ..ops import array_ops, math_ops
from .util import add_loss

__all__ = ["Reduction", "compute_weighted_loss", "absolute_difference", "cosine_distance",
           "hinge_loss", "huber_loss", "log_loss", "mean_squared_error",
           "sigmoid_cross_entropy", "softmax_cross_entropy", "sparse_softmax_cross_entropy"]


class Reduction:
    """How ``compute_weighted_loss`` reduces the weighted losses.

    NONE: no reduction (the weighted losses' shape). SUM: the weighted sum. MEAN: the weighted
    sum / the sum of the (broadcast) weights. SUM_OVER_BATCH_SIZE: the weighted sum / the
    number of elements. SUM_BY_NONZERO_WEIGHTS (= SUM_OVER_NONZERO_WEIGHTS, the default): the
    weighted sum / the number of elements with a non-zero weight.
    """
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


def _safe_div(numerator: Tensor, denominator: Tensor, name: str = "value") -> Tensor:
    """numerator / denominator, but 0 where the denominator is 0 (TF's div_no_nan: a batch
    whose weights are all zero has loss 0, not NaN)."""
    is_zero = math_ops.equal(denominator, 0.0)
    safe_denominator = array_ops.where(is_zero, array_ops.ones_like(denominator), denominator)
    return array_ops.where(is_zero, array_ops.zeros_like(numerator),
                           math_ops.divide(numerator, safe_denominator), name=name)


def _num_elements(losses: Tensor) -> Tensor:
    with name_scope(None, "num_elements", [losses]) as scope:
        return math_ops.cast(array_ops.size(losses, name=scope), losses.dtype)


def _num_present(losses: Tensor, weights: Tensor) -> Tensor:
    """The number of elements of ``losses`` whose (broadcast) weight is not zero."""
    with name_scope(None, "num_present", [losses, weights]) as scope:
        weights = math_ops.cast(weights, dtypes.float32)
        present = array_ops.where(math_ops.equal(weights, 0.0), array_ops.zeros_like(weights),
                                  array_ops.ones_like(weights))
        present = math_ops.multiply(present, array_ops.ones_like(losses))
        return math_ops.reduce_sum(present, name=scope)


def _check_broadcastable(weights: Tensor, losses: Tensor) -> None:
    """TF's assert_broadcastable, checked on the static shapes (unknown dimensions are left
    to the multiplication): weights are a scalar, or have the losses' rank with each
    dimension 1 or equal to the losses'."""
    w_shape, l_shape = weights.get_shape(), losses.get_shape()
    if w_shape.ndims is None or l_shape.ndims is None or w_shape.ndims == 0:
        return
    if w_shape.ndims != l_shape.ndims:
        raise ValueError(f"weights can not be broadcast to values. values.rank="
                         f"{l_shape.ndims}. weights.rank={w_shape.ndims}. values.shape="
                         f"{l_shape}. weights.shape={w_shape}.")
    for w_dim, l_dim in zip(w_shape.as_list(), l_shape.as_list()):
        if w_dim is not None and l_dim is not None and w_dim not in (1, l_dim):
            raise ValueError(f"weights can not be broadcast to values. values.shape={l_shape}. "
                             f"weights.shape={w_shape}.")


def compute_weighted_loss(losses, weights=1.0, scope: Optional[str] = None,
                          loss_collection: Optional[str] = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """``losses * weights`` reduced by ``reduction`` (see ``Reduction``), in the losses'
    dtype, added to ``loss_collection``."""
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss", [losses, weights]):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = math_ops.cast(losses, dtypes.float32)
        weights = math_ops.cast(convert_to_tensor(weights), dtypes.float32)
        _check_broadcastable(weights, losses)
        weighted_losses = math_ops.multiply(losses, weights)
        if reduction == Reduction.NONE:
            loss = weighted_losses
        else:
            loss = math_ops.reduce_sum(weighted_losses)
            if reduction == Reduction.MEAN:
                loss = _safe_div(loss, math_ops.reduce_sum(
                    math_ops.multiply(array_ops.ones_like(losses), weights)))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_div(loss, _num_present(losses, weights))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_div(loss, _num_elements(losses))
        loss = math_ops.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _check_not_none(**arguments) -> None:
    for name, value in arguments.items():
        if value is None:
            raise ValueError(f"{name} must not be None.")


def _as_float32_pair(labels, predictions, what: str = "predictions"):
    """labels and predictions cast to float32, with compatible shapes."""
    predictions = math_ops.cast(convert_to_tensor(predictions), dtypes.float32)
    labels = math_ops.cast(convert_to_tensor(labels), dtypes.float32)
    if not predictions.get_shape().is_compatible_with(labels.get_shape()):
        raise ValueError(f"Shapes {predictions.get_shape()} and {labels.get_shape()} are "
                         f"incompatible ({what} and labels).")
    return labels, predictions


def absolute_difference(labels, predictions, weights=1.0, scope: Optional[str] = None,
                        loss_collection: Optional[str] = GraphKeys.LOSSES,
                        reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """|predictions - labels|, weighted and reduced."""
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "absolute_difference", [predictions, labels, weights]) as scope:
        labels, predictions = _as_float32_pair(labels, predictions)
        losses = math_ops.abs(math_ops.subtract(predictions, labels))
        return compute_weighted_loss(losses, weights, scope, loss_collection,
                                     reduction=reduction)


def cosine_distance(labels, predictions, axis: Optional[int] = None, weights=1.0,
                    scope: Optional[str] = None,
                    loss_collection: Optional[str] = GraphKeys.LOSSES,
                    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS, dim=None) -> Tensor:
    """1 - sum(predictions * labels, axis) for unit-normalized labels and predictions (the
    reduced axis is kept, of size 1). ``dim`` is the deprecated name of ``axis``."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("You must specify 'axis'.")
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "cosine_distance_loss", [predictions, labels, weights]) as scope:
        labels, predictions = _as_float32_pair(labels, predictions)
        radial_diffs = math_ops.multiply(predictions, labels)
        losses = math_ops.subtract(1.0, math_ops.reduce_sum(radial_diffs, axis, keepdims=True))
        return compute_weighted_loss(losses, weights, scope, loss_collection,
                                     reduction=reduction)


def hinge_loss(labels, logits, weights=1.0, scope: Optional[str] = None,
               loss_collection: Optional[str] = GraphKeys.LOSSES,
               reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """max(0, 1 - (2 * labels - 1) * logits) for labels in {0, 1}."""
    _check_not_none(labels=labels, logits=logits)
    with name_scope(scope, "hinge_loss", [logits, labels, weights]) as scope:
        labels, logits = _as_float32_pair(labels, logits, "logits")
        all_ones = array_ops.ones_like(labels)
        signed_labels = math_ops.subtract(math_ops.multiply(2.0, labels), all_ones)
        losses = nn.relu(math_ops.subtract(all_ones, math_ops.multiply(signed_labels, logits)))
        return compute_weighted_loss(losses, weights, scope, loss_collection,
                                     reduction=reduction)


def huber_loss(labels, predictions, weights=1.0, delta: float = 1.0,
               scope: Optional[str] = None, loss_collection: Optional[str] = GraphKeys.LOSSES,
               reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """0.5 * e ** 2 where |e| <= delta, else delta * (|e| - 0.5 * delta), for
    e = predictions - labels."""
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "huber_loss", [predictions, labels, weights]) as scope:
        labels, predictions = _as_float32_pair(labels, predictions)
        abs_error = math_ops.abs(math_ops.subtract(predictions, labels))
        quadratic = math_ops.minimum(abs_error, delta)
        # The linear part, |e| - quadratic, is 0 inside the delta band.
        linear = math_ops.subtract(abs_error, quadratic)
        losses = math_ops.add(math_ops.multiply(0.5, math_ops.multiply(quadratic, quadratic)),
                              math_ops.multiply(delta, linear))
        return compute_weighted_loss(losses, weights, scope, loss_collection,
                                     reduction=reduction)


def log_loss(labels, predictions, weights=1.0, epsilon: float = 1e-7,
             scope: Optional[str] = None, loss_collection: Optional[str] = GraphKeys.LOSSES,
             reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """-labels * log(predictions + epsilon) - (1 - labels) * log(1 - predictions + epsilon),
    for predicted probabilities."""
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "log_loss", [predictions, labels, weights]) as scope:
        labels, predictions = _as_float32_pair(labels, predictions)
        positive = math_ops.multiply(labels, math_ops.log(math_ops.add(predictions, epsilon)))
        negative = math_ops.multiply(
            math_ops.subtract(1.0, labels),
            math_ops.log(math_ops.add(math_ops.subtract(1.0, predictions), epsilon)))
        losses = math_ops.subtract(math_ops.negative(positive), negative)
        return compute_weighted_loss(losses, weights, scope, loss_collection,
                                     reduction=reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope: Optional[str] = None,
                       loss_collection: Optional[str] = GraphKeys.LOSSES,
                       reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """(predictions - labels) ** 2, weighted and reduced."""
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "mean_squared_error", [predictions, labels, weights]) as scope:
        labels, predictions = _as_float32_pair(labels, predictions)
        losses = math_ops.squared_difference(predictions, labels)
        return compute_weighted_loss(losses, weights, scope, loss_collection,
                                     reduction=reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing: float = 0,
                          scope: Optional[str] = None,
                          loss_collection: Optional[str] = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """``tf.nn.sigmoid_cross_entropy_with_logits`` per element; with ``label_smoothing`` the
    labels become labels * (1 - label_smoothing) + 0.5 * label_smoothing."""
    _check_not_none(multi_class_labels=multi_class_labels, logits=logits)
    with name_scope(scope, "sigmoid_cross_entropy_loss",
                    [logits, multi_class_labels, weights]) as scope:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(convert_to_tensor(multi_class_labels), logits.dtype)
        if not logits.get_shape().is_compatible_with(labels.get_shape()):
            raise ValueError(f"Shapes {logits.get_shape()} and {labels.get_shape()} are "
                             "incompatible (logits and multi_class_labels).")
        if label_smoothing > 0:
            labels = math_ops.add(math_ops.multiply(labels, 1.0 - label_smoothing),
                                  0.5 * label_smoothing)
        losses = nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                      name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection,
                                     reduction=reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing: float = 0,
                          scope: Optional[str] = None,
                          loss_collection: Optional[str] = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Softmax cross entropy per example ([batch, classes] -> [batch]); with
    ``label_smoothing`` the labels become labels * (1 - label_smoothing) +
    label_smoothing / num_classes. No gradient flows into the labels."""
    _check_not_none(onehot_labels=onehot_labels, logits=logits)
    with name_scope(scope, "softmax_cross_entropy_loss",
                    [logits, onehot_labels, weights]) as scope:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(convert_to_tensor(onehot_labels), logits.dtype)
        if not logits.get_shape().is_compatible_with(labels.get_shape()):
            raise ValueError(f"Shapes {logits.get_shape()} and {labels.get_shape()} are "
                             "incompatible (logits and onehot_labels).")
        if label_smoothing > 0:
            num_classes = math_ops.cast(array_ops.shape(labels)[-1], logits.dtype)
            smooth_negatives = math_ops.divide(label_smoothing, num_classes)
            labels = math_ops.add(math_ops.multiply(labels, 1.0 - label_smoothing),
                                  smooth_negatives)
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
        losses = nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                         name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection,
                                     reduction=reduction)


def _remove_squeezable_dimensions(labels: Tensor, logits: Tensor, weights: Tensor):
    """Labels [batch, 1] (rank of the logits) lose their last dimension, and so do weights of
    one rank more than the labels: TF's rule for sparse labels given as a column."""
    labels_rank, logits_rank = labels.get_shape().ndims, logits.get_shape().ndims
    if labels_rank is not None and logits_rank is not None and labels_rank == logits_rank:
        if labels.get_shape().as_list()[-1] in (1, None):
            labels = array_ops.squeeze(labels, [-1])
    labels_rank = labels.get_shape().ndims
    weights_rank = weights.get_shape().ndims
    if labels_rank is not None and weights_rank is not None and \
            weights_rank - labels_rank == 1:
        weights = array_ops.squeeze(weights, [-1])
    return labels, weights


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope: Optional[str] = None,
                                 loss_collection: Optional[str] = GraphKeys.LOSSES,
                                 reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Softmax cross entropy with class-index ``labels`` ([batch], or [batch, 1])."""
    _check_not_none(labels=labels, logits=logits)
    with name_scope(scope, "sparse_softmax_cross_entropy_loss",
                    [logits, labels, weights]) as scope:
        logits = convert_to_tensor(logits)
        labels = convert_to_tensor(labels)
        weights = convert_to_tensor(weights)
        labels, weights = _remove_squeezable_dimensions(labels, logits, weights)
        losses = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                             name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection,
                                     reduction=reduction)
