"""``tf.metrics``: TensorFlow 1.x's streaming metrics.

Every metric returns ``(value, update_op)``. Its running state lives in local variables (the
collections ``LOCAL_VARIABLES`` and ``METRIC_VARIABLES``, named as TensorFlow names them:
``accuracy/total``, ``auc/true_positives``...), set to zero by
``tf.local_variables_initializer()``. Running ``update_op`` folds a batch into the state and
returns the metric so far; ``value`` reads it without changing anything. ``metrics_collections``
receive ``value`` and ``updates_collections`` receive ``update_op``.

The metrics are compositions of existing ops, following TF 1.15's ``metrics_impl.py`` op for op
where the order matters to the numbers (AUC's thresholds, epsilons and summation methods).
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

from . import logging as _logging
from .framework import dtypes
from .framework.ops import GraphKeys, Tensor, add_to_collections, control_dependencies
from .framework.ops import convert_to_tensor
from .framework.sparse_tensor import SparseTensor
from .ops import array_ops, math_ops
from .ops.array_index_ops import where
from .ops.check_ops import assert_greater_equal, assert_less_equal
from .ops.confusion_matrix import confusion_matrix, remove_squeezable_dimensions
from .ops.math_compat_ops import div_no_nan
from .ops.nn_ops import top_k
from .ops.sparse_ops import sparse_tensor_to_dense
from .ops.state_ops import scatter_add
from .variable_scopes import variable_scope
from .variables import Variable, assign_add

__all__ = ["accuracy", "auc", "false_negatives", "false_negatives_at_thresholds",
           "false_positives", "false_positives_at_thresholds", "mean", "mean_absolute_error",
           "mean_cosine_distance", "mean_iou", "mean_per_class_accuracy",
           "mean_relative_error", "mean_squared_error", "mean_tensor", "metric_variable",
           "percentage_below", "precision", "precision_at_k", "precision_at_thresholds",
           "precision_at_top_k", "recall", "recall_at_k", "recall_at_thresholds",
           "recall_at_top_k", "root_mean_squared_error", "sensitivity_at_specificity",
           "specificity_at_sensitivity", "true_negatives",
           "true_negatives_at_thresholds", "true_positives", "true_positives_at_thresholds"]

MetricPair = Tuple[Tensor, Tensor]


def metric_variable(shape, dtype, validate_shape: bool = True,
                    name: Optional[str] = None) -> Variable:
    """A zero-initialized, untrainable local variable in ``METRIC_VARIABLES``."""
    return Variable(lambda: array_ops.zeros(shape, dtype), trainable=False,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
                    validate_shape=validate_shape, name=name)


def _publish(value: Tensor, update_op: Tensor, metrics_collections,
             updates_collections) -> MetricPair:
    if metrics_collections:
        add_to_collections(metrics_collections, value)
    if updates_collections:
        add_to_collections(updates_collections, update_op)
    return value, update_op


def _remove_squeezable_dimensions(predictions, labels, weights):
    """TF's reconciliation of ranks: labels vs predictions, then weights (a rank one higher
    loses its last dimension, one lower gains one)."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels, predictions = remove_squeezable_dimensions(labels, predictions)
        predictions.shape.assert_is_compatible_with(labels.shape)
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    w_rank, p_rank = weights.shape.ndims, predictions.shape.ndims
    if w_rank and p_rank is not None:
        if w_rank - p_rank == 1:
            weights = array_ops.squeeze(weights, [-1])
        elif p_rank - w_rank == 1:
            weights = array_ops.expand_dims(weights, -1)
    return predictions, labels, weights


def _broadcast_weights(weights: Tensor, values: Tensor) -> Tensor:
    """``weights`` (float32) broadcast to the shape of ``values``."""
    weights = math_ops.cast(weights, dtypes.float32)
    if weights.shape.is_fully_defined() and weights.shape == values.shape:
        return weights
    return weights * array_ops.ones_like(values, dtype=dtypes.float32)


# -- means -----------------------------------------------------------------------------------------
def mean(values, weights=None, metrics_collections=None, updates_collections=None,
         name: Optional[str] = None) -> MetricPair:
    """The (weighted) mean of ``values`` over every batch so far: ``total / count``."""
    with variable_scope(name, "mean", (values, weights)):
        values = math_ops.cast(values, dtypes.float32)
        total = metric_variable([], dtypes.float32, name="total")
        count = metric_variable([], dtypes.float32, name="count")
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), dtypes.float32)
        else:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
            weights = _broadcast_weights(weights, values)
            values = values * weights
            num_values = math_ops.reduce_sum(weights)
        update_total = assign_add(total, math_ops.reduce_sum(values))
        with control_dependencies([values]):
            update_count = assign_add(count, num_values)
        value = div_no_nan(total, math_ops.maximum(count, 0.), name="value")
        update_op = div_no_nan(update_total, math_ops.maximum(update_count, 0.), name="update_op")
        return _publish(value, update_op, metrics_collections, updates_collections)


def mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None,
                name: Optional[str] = None) -> MetricPair:
    """The element-wise (weighted) mean of ``values`` (all batches of one shape)."""
    with variable_scope(name, "mean", (values, weights)):
        values = math_ops.cast(values, dtypes.float32)
        total = metric_variable(values.shape, dtypes.float32, name="total_tensor")
        count = metric_variable(values.shape, dtypes.float32, name="count_tensor")
        num_values = array_ops.ones_like(values)
        if weights is not None:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
            weights = _broadcast_weights(weights, values)
            values = values * weights
            num_values = num_values * weights
        update_total = assign_add(total, values)
        with control_dependencies([values]):
            update_count = assign_add(count, num_values)
        value = div_no_nan(total, math_ops.maximum(count, 0.), name="value")
        update_op = div_no_nan(update_total, math_ops.maximum(update_count, 0.), name="update_op")
        return _publish(value, update_op, metrics_collections, updates_collections)


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name: Optional[str] = None) -> MetricPair:
    """How often ``predictions`` equals ``labels``: the mean of the matches."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    if labels.dtype != predictions.dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections,
                name or "accuracy")


def _mean_of_error(error_fn, default_name: str, labels, predictions, weights,
                   metrics_collections, updates_collections, name) -> MetricPair:
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    return mean(error_fn(labels, predictions), weights, metrics_collections,
                updates_collections, name or default_name)


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name: Optional[str] = None) -> MetricPair:
    return _mean_of_error(math_ops.squared_difference, "mean_squared_error", labels,
                          predictions, weights, metrics_collections, updates_collections, name)


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name: Optional[str] = None) -> MetricPair:
    return _mean_of_error(lambda l, p: math_ops.abs(p - l), "mean_absolute_error", labels,
                          predictions, weights, metrics_collections, updates_collections, name)


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name: Optional[str] = None) -> MetricPair:
    mse, update_mse = mean_squared_error(labels, predictions, weights, None, None,
                                         name or "root_mean_squared_error")
    return _publish(math_ops.sqrt(mse), math_ops.sqrt(update_mse), metrics_collections,
                    updates_collections)


def mean_relative_error(labels, predictions, normalizer, weights=None, metrics_collections=None,
                        updates_collections=None, name: Optional[str] = None) -> MetricPair:
    """The mean of ``|predictions - labels| / normalizer`` (0 where the normalizer is 0)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    predictions, normalizer = remove_squeezable_dimensions(predictions, normalizer)
    predictions.shape.assert_is_compatible_with(normalizer.shape)
    relative_errors = where(math_ops.equal(normalizer, 0.0), array_ops.zeros_like(labels),
                            math_ops.divide(math_ops.abs(labels - predictions), normalizer))
    return mean(relative_errors, weights, metrics_collections, updates_collections,
                name or "mean_relative_error")


def mean_cosine_distance(labels, predictions, dim: int, weights=None, metrics_collections=None,
                         updates_collections=None, name: Optional[str] = None) -> MetricPair:
    """``1 - mean(sum(labels * predictions, dim))`` for unit-normalized inputs."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    radial_diffs = math_ops.reduce_sum(predictions * labels, axis=[dim], keepdims=True)
    distance, update_op = mean(radial_diffs, weights, None, None,
                               name or "mean_cosine_distance")
    return _publish(math_ops.subtract(1.0, distance), math_ops.subtract(1.0, update_op),
                    metrics_collections, updates_collections)


def percentage_below(values, threshold, weights=None, metrics_collections=None,
                     updates_collections=None, name: Optional[str] = None) -> MetricPair:
    """The fraction of ``values`` below ``threshold``."""
    is_below = math_ops.cast(math_ops.less(values, threshold), dtypes.float32)
    return mean(is_below, weights, metrics_collections, updates_collections,
                name or "percentage_below_threshold")


# -- counts of a condition -------------------------------------------------------------------------
def _count_condition(values: Tensor, weights, metrics_collections,
                     updates_collections) -> MetricPair:
    count = metric_variable([], dtypes.float32, name="count")
    values = math_ops.cast(values, dtypes.float32)
    if weights is not None:
        values = values * math_ops.cast(weights, dtypes.float32)
    value = array_ops.identity(count)
    update_op = assign_add(count, math_ops.reduce_sum(values))
    return _publish(value, update_op, metrics_collections, updates_collections)


def _as_bools(predictions, labels, weights):
    return _remove_squeezable_dimensions(math_ops.cast(predictions, dtypes.bool),
                                         math_ops.cast(labels, dtypes.bool), weights)


def _confusion_count(default_name: str, want_label: bool, want_prediction: bool):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name: Optional[str] = None) -> MetricPair:
        with variable_scope(name, default_name, (predictions, labels, weights)):
            predictions, labels, weights = _as_bools(predictions, labels, weights)
            hit = math_ops.logical_and(math_ops.equal(labels, want_label),
                                       math_ops.equal(predictions, want_prediction))
            return _count_condition(hit, weights, metrics_collections, updates_collections)
    metric.__name__ = default_name
    metric.__doc__ = (f"The (weighted) number of examples whose label is {want_label} and "
                      f"whose prediction is {want_prediction}.")
    return metric


true_positives = _confusion_count("true_positives", True, True)
false_positives = _confusion_count("false_positives", False, True)
false_negatives = _confusion_count("false_negatives", True, False)
true_negatives = _confusion_count("true_negatives", False, False)


def _ratio(numerator: Tensor, other: Tensor, name: str) -> Tensor:
    """``numerator / (numerator + other)``, 0 when the sum is 0 (precision, recall)."""
    total = numerator + other
    return where(math_ops.greater(total, 0), math_ops.divide(numerator, total), 0., name=name)


def _ratio_metric(default_name: str, other_count):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name: Optional[str] = None) -> MetricPair:
        with variable_scope(name, default_name, (predictions, labels, weights)):
            predictions, labels, weights = _as_bools(predictions, labels, weights)
            tp, tp_update = true_positives(labels, predictions, weights)
            other, other_update = other_count(labels, predictions, weights)
            return _publish(_ratio(tp, other, "value"), _ratio(tp_update, other_update,
                                                               "update_op"),
                            metrics_collections, updates_collections)
    metric.__name__ = default_name
    return metric


precision = _ratio_metric("precision", false_positives)
precision.__doc__ = "true_positives / (true_positives + false_positives), 0 before any positive."
recall = _ratio_metric("recall", false_negatives)
recall.__doc__ = "true_positives / (true_positives + false_negatives), 0 before any positive."


# -- thresholds: AUC and the *_at_thresholds family ------------------------------------------------
_CONFUSION_VARIABLES = {"tp": "true_positives", "fn": "false_negatives",
                        "tn": "true_negatives", "fp": "false_positives"}


def _confusion_matrix_at_thresholds(labels, predictions, thresholds: Sequence[float], weights,
                                    includes: Sequence[str] = ("tp", "fn", "tn", "fp")
                                    ) -> Tuple[Dict[str, Tensor], Dict[str, Tensor]]:
    """Per threshold t, the (weighted) counts of examples by label and by ``prediction > t``:
    variables of shape [len(thresholds)] named as TensorFlow names them."""
    predictions = convert_to_tensor(predictions)
    in_range = [assert_greater_equal(predictions, math_ops.cast(0.0, predictions.dtype),
                                     message="predictions must be in [0, 1]"),
                assert_less_equal(predictions, math_ops.cast(1.0, predictions.dtype),
                                  message="predictions must be in [0, 1]")]
    with control_dependencies(in_range):
        predictions, labels, weights = _remove_squeezable_dimensions(
            math_ops.cast(predictions, dtypes.float32), math_ops.cast(labels, dtypes.bool),
            weights)
    n = len(thresholds)
    # [n, 1] thresholds against [1, examples]: row i says which examples pass threshold i.
    pred_is_pos = math_ops.greater(array_ops.reshape(predictions, [1, -1]),
                                   array_ops.constant(thresholds, dtypes.float32, [n, 1]))
    label_is_pos = array_ops.reshape(labels, [1, -1])
    conditions = {
        "tp": lambda: math_ops.logical_and(label_is_pos, pred_is_pos),
        "fn": lambda: math_ops.logical_and(label_is_pos, math_ops.logical_not(pred_is_pos)),
        "tn": lambda: math_ops.logical_and(math_ops.logical_not(label_is_pos),
                                           math_ops.logical_not(pred_is_pos)),
        "fp": lambda: math_ops.logical_and(math_ops.logical_not(label_is_pos), pred_is_pos),
    }
    row_weights = None
    if weights is not None:
        row_weights = array_ops.reshape(_broadcast_weights(weights, predictions), [1, -1])
    values, update_ops = {}, {}
    for key in ("tp", "fn", "tn", "fp"):   # TF's creation order
        if key not in includes:
            continue
        counts = metric_variable([n], dtypes.float32, name=_CONFUSION_VARIABLES[key])
        hits = math_ops.cast(conditions[key](), dtypes.float32)
        if row_weights is not None:
            hits = hits * row_weights
        update_ops[key] = assign_add(counts, math_ops.reduce_sum(hits, 1))
        values[key] = counts
    return values, update_ops


def _auc_from_counts(tp, fn, tn, fp, curve: str, summation_method: str, name: str) -> Tensor:
    """TF 1.15's Riemann sums over the thresholds (``compute_auc``)."""
    n = tp.shape.as_list()[0]
    if curve == "PR" and summation_method == "careful_interpolation":
        return _interpolate_pr_auc(tp, fp, fn, n, name)
    epsilon = 1.0e-6
    recall_ = math_ops.divide(tp + epsilon, tp + fn + epsilon)
    if curve == "ROC":
        x, y = math_ops.divide(fp, fp + tn + epsilon), recall_
    else:
        x, y = recall_, math_ops.divide(tp + epsilon, tp + fp + epsilon)
    widths = x[:n - 1] - x[1:]
    if summation_method in ("trapezoidal", "careful_interpolation"):
        heights = (y[:n - 1] + y[1:]) / 2.
    elif summation_method == "minoring":
        heights = math_ops.minimum(y[:n - 1], y[1:])
    elif summation_method == "majoring":
        heights = math_ops.maximum(y[:n - 1], y[1:])
    else:
        raise ValueError(f"Invalid summation_method: {summation_method}")
    return math_ops.reduce_sum(widths * heights, name=name)


def _interpolate_pr_auc(tp, fp, fn, n: int, name: str) -> Tensor:
    """Davis & Goadrich's interpolation of the PR curve between thresholds, as TF computes it."""
    dtp = tp[:n - 1] - tp[1:]
    p = tp + fp
    prec_slope = div_no_nan(dtp, math_ops.maximum(p[:n - 1] - p[1:], 0.), name="prec_slope")
    intercept = tp[1:] - prec_slope * p[1:]
    safe_p_ratio = where(
        math_ops.logical_and(math_ops.greater(p[:n - 1], 0.), math_ops.greater(p[1:], 0.)),
        div_no_nan(p[:n - 1], math_ops.maximum(p[1:], 0.), name="recall_relative_ratio"),
        array_ops.ones_like(p[1:]))
    increments = div_no_nan(prec_slope * (dtp + intercept * math_ops.log(safe_p_ratio)),
                            math_ops.maximum(tp[1:] + fn[1:], 0.), name="pr_auc_increment")
    return math_ops.reduce_sum(increments, name=name)


def auc(labels, predictions, weights=None, num_thresholds: int = 200, metrics_collections=None,
        updates_collections=None, curve: str = "ROC", name: Optional[str] = None,
        summation_method: str = "trapezoidal", thresholds=None) -> MetricPair:
    """The area under the ROC or PR curve, from counts at ``num_thresholds`` thresholds spread
    evenly over [0, 1] (plus one just below 0 and one just above 1), or at ``thresholds``."""
    if curve not in ("ROC", "PR"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring", "majoring"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    with variable_scope(name, "auc", (labels, predictions, weights)):
        if thresholds is not None:
            kepsilon = 1e-7
            edges = [0.0 - kepsilon] + sorted(float(t) for t in thresholds) + [1.0 + kepsilon]
        elif num_thresholds <= 1:
            raise ValueError("`num_thresholds` must be > 1.")
        else:
            edges = _even_thresholds(num_thresholds)
        if curve == "PR" and summation_method == "trapezoidal":
            _logging.warning("Trapezoidal rule is known to produce incorrect PR-AUCs; please "
                             "switch to \"careful_interpolation\" instead.")
        values, updates = _confusion_matrix_at_thresholds(labels, predictions, edges, weights)
        value = _auc_from_counts(values["tp"], values["fn"], values["tn"], values["fp"], curve,
                                 summation_method, "value")
        update_op = _auc_from_counts(updates["tp"], updates["fn"], updates["tn"], updates["fp"],
                                     curve, summation_method, "update_op")
        return _publish(value, update_op, metrics_collections, updates_collections)


def _counts_at_thresholds(key: str, default_name: str):
    def metric(labels, predictions, thresholds, weights=None, metrics_collections=None,
               updates_collections=None, name: Optional[str] = None) -> MetricPair:
        with variable_scope(name, default_name, (predictions, labels, weights)):
            values, updates = _confusion_matrix_at_thresholds(labels, predictions, thresholds,
                                                              weights, includes=(key,))
            return _publish(array_ops.identity(values[key]), updates[key], metrics_collections,
                            updates_collections)
    metric.__name__ = default_name
    metric.__doc__ = (f"Per threshold, the (weighted) count of {_CONFUSION_VARIABLES[key]} "
                      f"counting ``predictions > threshold`` as positive.")
    return metric


true_positives_at_thresholds = _counts_at_thresholds("tp", "true_positives")
false_positives_at_thresholds = _counts_at_thresholds("fp", "false_positives")
false_negatives_at_thresholds = _counts_at_thresholds("fn", "false_negatives")
true_negatives_at_thresholds = _counts_at_thresholds("tn", "true_negatives")


def _ratio_at_thresholds(default_name: str, other: str):
    def metric(labels, predictions, thresholds, weights=None, metrics_collections=None,
               updates_collections=None, name: Optional[str] = None) -> MetricPair:
        with variable_scope(name, default_name, (predictions, labels, weights)):
            values, updates = _confusion_matrix_at_thresholds(labels, predictions, thresholds,
                                                              weights, includes=("tp", other))
            epsilon = 1e-7

            def ratio(counts, name):
                return math_ops.divide(counts["tp"], epsilon + counts["tp"] + counts[other],
                                       name=name)
            return _publish(ratio(values, "value"), ratio(updates, "update_op"),
                            metrics_collections, updates_collections)
    metric.__name__ = default_name
    return metric


precision_at_thresholds = _ratio_at_thresholds("precision_at_thresholds", "fp")
precision_at_thresholds.__doc__ = "Per threshold, tp / (tp + fp) (with TF's 1e-7 epsilon)."
recall_at_thresholds = _ratio_at_thresholds("recall_at_thresholds", "fn")
recall_at_thresholds.__doc__ = "Per threshold, tp / (tp + fn) (with TF's 1e-7 epsilon)."


def _even_thresholds(num_thresholds: int) -> list:
    """TF's thresholds: num_thresholds - 2 inside (0, 1), plus one just below 0 and one just
    above 1, so that predictions of exactly 0 and 1 fall inside."""
    kepsilon = 1e-7
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - kepsilon] + inner + [1.0 + kepsilon]


def _check_rate(label: str, value: float, num_thresholds: int) -> None:
    if num_thresholds <= 1:
        raise ValueError("`num_thresholds` must be > 1.")
    if value < 0 or value > 1:
        raise ValueError(f"`{label}` must be in the range [0, 1].")


def _at_even_thresholds(default_name: str, pick, labels, predictions, weights,
                        num_thresholds: int, metrics_collections, updates_collections,
                        name) -> MetricPair:
    """A metric read off the confusion counts at ``num_thresholds`` even thresholds by
    ``pick(counts, name)``, from the variables (value) and from their updates (update_op)."""
    with variable_scope(name, default_name, (predictions, labels, weights)):
        values, updates = _confusion_matrix_at_thresholds(
            labels, predictions, _even_thresholds(num_thresholds), weights)
        return _publish(pick(values, "value"), pick(updates, "update_op"), metrics_collections,
                        updates_collections)


def sensitivity_at_specificity(labels, predictions, specificity: float, weights=None,
                               num_thresholds: int = 200, metrics_collections=None,
                               updates_collections=None, name: Optional[str] = None
                               ) -> MetricPair:
    """The recall at the threshold whose specificity is closest to ``specificity`` (the first
    such threshold)."""
    _check_rate("specificity", specificity, num_thresholds)
    kepsilon = 1e-7

    def pick(counts, name):
        tp, tn, fp, fn = counts["tp"], counts["tn"], counts["fp"], counts["fn"]
        specificities = math_ops.divide(tn, tn + fp + kepsilon)
        index = math_ops.cast(math_ops.argmin(math_ops.abs(specificities - specificity), 0),
                              dtypes.int32)
        return math_ops.divide(tp[index], tp[index] + fn[index] + kepsilon, name=name)
    return _at_even_thresholds("sensitivity_at_specificity", pick, labels, predictions, weights,
                               num_thresholds, metrics_collections, updates_collections, name)


def specificity_at_sensitivity(labels, predictions, sensitivity: float, weights=None,
                               num_thresholds: int = 200, metrics_collections=None,
                               updates_collections=None, name: Optional[str] = None
                               ) -> MetricPair:
    """The specificity at the threshold whose recall is closest to ``sensitivity`` (the last
    such threshold, as TensorFlow picks it)."""
    _check_rate("sensitivity", sensitivity, num_thresholds)
    kepsilon = 1e-7

    def pick(counts, name):
        tp, tn, fp, fn = counts["tp"], counts["tn"], counts["fp"], counts["fn"]
        distance = math_ops.abs(math_ops.divide(tp, tp + fn + kepsilon) - sensitivity)
        at_min = math_ops.cast(math_ops.equal(distance, math_ops.reduce_min(distance)),
                               dtypes.int64)
        # The last index at the minimum: where the running count of minima peaks first.
        index = math_ops.cast(math_ops.argmax(math_ops.cumsum(at_min), 0), dtypes.int32)
        return math_ops.divide(tn[index], tn[index] + fp[index] + kepsilon, name=name)
    return _at_even_thresholds("specificity_at_sensitivity", pick, labels, predictions, weights,
                               num_thresholds, metrics_collections, updates_collections, name)


# -- top k -----------------------------------------------------------------------------------------
def _at_k_name(name: str, k: Optional[int], class_id: Optional[int]) -> str:
    """TF's scope and variable names: ``recall_at_5``, ``true_positive_at_k_class3``..."""
    name = f"{name}_at_{k}" if k is not None else f"{name}_at_k"
    return name if class_id is None else f"{name}_class{class_id}"


def _label_sets(labels, predictions_idx: Tensor) -> Tuple[Tensor, Tensor]:
    """Labels as [rows, m] int64 with a [rows, m] mask of the entries that are labels (a
    SparseTensor's missing entries are not), for top-k indices of shape [D1..DN, k]; labels
    of one rank less hold one label per row."""
    if isinstance(labels, SparseTensor):
        dense = sparse_tensor_to_dense(SparseTensor(labels.indices,
                                                    math_ops.cast(labels.values, dtypes.int64),
                                                    labels.dense_shape), default_value=-1)
        present = sparse_tensor_to_dense(
            SparseTensor(labels.indices, array_ops.ones_like(labels.values, dtype=dtypes.bool),
                         labels.dense_shape), default_value=False)
    else:
        dense = math_ops.cast(convert_to_tensor(labels), dtypes.int64)
        if dense.shape.ndims is not None and predictions_idx.shape.ndims is not None and \
                dense.shape.ndims == predictions_idx.shape.ndims - 1:
            dense = array_ops.expand_dims(dense, -1)
        present = array_ops.ones_like(dense, dtype=dtypes.bool)
    width = array_ops.shape(dense)[-1]
    return (array_ops.reshape(dense, array_ops.stack([-1, width])),
            array_ops.reshape(present, array_ops.stack([-1, width])))


def _top_k_counts(labels, predictions_idx: Tensor, class_id: Optional[int]):
    """Per row (example), as float64: (true positives, false positives, false negatives) of
    the top-k indices against the label set, as TF's set operations count them (a label given
    twice counts once; labels out of range are never predicted, so they count as misses)."""
    predictions_idx = math_ops.cast(predictions_idx, dtypes.int64)
    labels, present = _label_sets(labels, predictions_idx)
    top = array_ops.reshape(predictions_idx,
                            array_ops.stack([-1, array_ops.shape(predictions_idx)[-1]]))
    # [rows, m, m]: entry j repeats an earlier present entry j' < j.
    positions = math_ops.range(array_ops.shape(labels)[-1])
    earlier = math_ops.less(array_ops.expand_dims(positions, 0),
                            array_ops.expand_dims(positions, 1))
    repeats = math_ops.logical_and(
        math_ops.equal(array_ops.expand_dims(labels, 2), array_ops.expand_dims(labels, 1)),
        math_ops.logical_and(earlier, array_ops.expand_dims(present, 1)))
    distinct = math_ops.logical_and(present,
                                    math_ops.logical_not(math_ops.reduce_any(repeats, 2)))
    predicted = math_ops.reduce_any(
        math_ops.equal(array_ops.expand_dims(labels, 2), array_ops.expand_dims(top, 1)), 2)
    labelled = math_ops.reduce_any(math_ops.logical_and(
        math_ops.equal(array_ops.expand_dims(top, 2), array_ops.expand_dims(labels, 1)),
        array_ops.expand_dims(present, 1)), 2)
    unlabelled = math_ops.logical_not(labelled)
    if class_id is not None:
        distinct = math_ops.logical_and(distinct, math_ops.equal(labels, class_id))
        unlabelled = math_ops.logical_and(unlabelled, math_ops.equal(top, class_id))

    def count(mask):
        return math_ops.reduce_sum(math_ops.cast(mask, dtypes.float64), 1)
    return (count(math_ops.logical_and(distinct, predicted)), count(unlabelled),
            count(math_ops.logical_and(distinct, math_ops.logical_not(predicted))))


def _top_k_metric(kind: str, labels, predictions_idx, k, class_id, weights,
                  metrics_collections, updates_collections, name) -> MetricPair:
    """precision (tp / (tp + fp)) or recall (tp / (tp + fn)) of top-k indices, float64."""
    other = "false_positive" if kind == "precision" else "false_negative"
    with variable_scope(name, _at_k_name(kind, k, class_id),
                        (predictions_idx, labels, weights)):
        tp_rows, fp_rows, fn_rows = _top_k_counts(labels, predictions_idx, class_id)
        other_rows = fp_rows if kind == "precision" else fn_rows
        if weights is not None:
            weights = math_ops.cast(weights, dtypes.float64)
            rows = array_ops.shape(predictions_idx)[:-1]
            weights = array_ops.reshape(weights * array_ops.ones(rows, dtypes.float64), [-1])
            tp_rows, other_rows = tp_rows * weights, other_rows * weights
        tp = metric_variable([], dtypes.float64, name=_at_k_name("true_positive", k, class_id))
        fx = metric_variable([], dtypes.float64, name=_at_k_name(other, k, class_id))
        tp_update = assign_add(tp, math_ops.reduce_sum(tp_rows))
        fx_update = assign_add(fx, math_ops.reduce_sum(other_rows))
        value = math_ops.divide(tp, tp + fx, name="value")
        update_op = math_ops.divide(tp_update, tp_update + fx_update, name="update")
        return _publish(value, update_op, metrics_collections, updates_collections)


def recall_at_top_k(labels, predictions_idx, k: Optional[int] = None, class_id=None,
                    weights=None, metrics_collections=None, updates_collections=None,
                    name: Optional[str] = None) -> MetricPair:
    """How many of the labels are among the top-k indices ``predictions_idx`` [D1..DN, k]."""
    return _top_k_metric("recall", labels, predictions_idx, k, class_id, weights,
                         metrics_collections, updates_collections, name)


def precision_at_top_k(labels, predictions_idx, k: Optional[int] = None, class_id=None,
                       weights=None, metrics_collections=None, updates_collections=None,
                       name: Optional[str] = None) -> MetricPair:
    """How many of the top-k indices ``predictions_idx`` [D1..DN, k] are labels."""
    return _top_k_metric("precision", labels, predictions_idx, k, class_id, weights,
                         metrics_collections, updates_collections, name)


def recall_at_k(labels, predictions, k: int, class_id=None, weights=None,
                metrics_collections=None, updates_collections=None,
                name: Optional[str] = None) -> MetricPair:
    """recall_at_top_k of the k classes with the highest ``predictions`` [D1..DN, classes];
    ``labels`` [D1..DN, m] (or [D1..DN]: one label each) or a SparseTensor, int64."""
    _, top = top_k(predictions, k)
    return recall_at_top_k(labels, top, k, class_id, weights, metrics_collections,
                           updates_collections, name)


def precision_at_k(labels, predictions, k: int, class_id=None, weights=None,
                   metrics_collections=None, updates_collections=None,
                   name: Optional[str] = None) -> MetricPair:
    """precision_at_top_k of the k classes with the highest ``predictions``."""
    _, top = top_k(predictions, k)
    return precision_at_top_k(labels, top, k, class_id, weights, metrics_collections,
                              updates_collections, name)


# -- per class -------------------------------------------------------------------------------------
def _flat(tensor: Tensor) -> Tensor:
    return array_ops.reshape(tensor, [-1]) if (tensor.shape.ndims or 0) > 1 else tensor


def mean_per_class_accuracy(labels, predictions, num_classes: int, weights=None,
                            metrics_collections=None, updates_collections=None,
                            name: Optional[str] = None) -> MetricPair:
    """The mean over classes of each class's accuracy. ``update_op`` returns the per-class
    accuracies (as TensorFlow's)."""
    with variable_scope(name, "mean_accuracy", (predictions, labels, weights)):
        labels = _flat(math_ops.cast(labels, dtypes.int64))
        predictions = _flat(convert_to_tensor(predictions))
        predictions.shape.assert_is_compatible_with(labels.shape)
        total = metric_variable([num_classes], dtypes.float32, name="total")
        count = metric_variable([num_classes], dtypes.float32, name="count")
        ones = array_ops.ones_like(labels, dtype=dtypes.float32)
        if labels.dtype != predictions.dtype:
            predictions = math_ops.cast(predictions, labels.dtype)
        is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            weights = _flat(math_ops.cast(weights, dtypes.float32))
            is_correct = is_correct * weights
            ones = ones * weights
        update_total = scatter_add(total, labels, ones)
        update_count = scatter_add(count, labels, is_correct)
        per_class = div_no_nan(count, math_ops.maximum(total, 0.))
        value = math_ops.reduce_mean(per_class, name="mean_accuracy")
        update_op = div_no_nan(update_count, math_ops.maximum(update_total, 0.),
                               name="update_op")
        return _publish(value, update_op, metrics_collections, updates_collections)


def mean_iou(labels, predictions, num_classes: int, weights=None, metrics_collections=None,
             updates_collections=None, name: Optional[str] = None) -> MetricPair:
    """The mean over classes (those that occur) of intersection / union. ``update_op`` returns
    the confusion matrix so far (as TensorFlow's)."""
    with variable_scope(name, "mean_iou", (predictions, labels, weights)):
        predictions, labels = convert_to_tensor(predictions), convert_to_tensor(labels)
        predictions.shape.assert_is_compatible_with(labels.shape)
        total_cm = metric_variable([num_classes, num_classes], dtypes.float64,
                                   name="total_confusion_matrix")
        if weights is not None:
            weights = _flat(convert_to_tensor(weights))
        current = confusion_matrix(_flat(math_ops.cast(labels, dtypes.int64)),
                                   _flat(math_ops.cast(predictions, dtypes.int64)),
                                   num_classes, weights=weights, dtype=dtypes.float64)
        update_op = assign_add(total_cm, current)
        cm = math_ops.cast(total_cm, dtypes.float32)
        diagonal = math_ops.reduce_sum(cm * array_ops.constant(
            _identity_matrix(num_classes), dtypes.float32), 1)
        union = math_ops.reduce_sum(cm, 0) + math_ops.reduce_sum(cm, 1) - diagonal
        valid = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(union, 0), dtypes.float32))
        union = where(math_ops.greater(union, 0), union, array_ops.ones_like(union))
        iou = math_ops.divide(diagonal, union)
        value = where(math_ops.greater(valid, 0),
                      math_ops.reduce_sum(iou, name="mean_iou") / valid, 0.)
        return _publish(value, update_op, metrics_collections, updates_collections)


def _identity_matrix(n: int):
    return [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
