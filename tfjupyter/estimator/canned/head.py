"""The heads of TF 1.15's canned estimators (``canned/head.py``, the v1 heads): from a model's
logits, the predictions, the loss, the evaluation metrics, the export outputs and the train op.

The loss is TF 1.15's: the unreduced per-example loss ([batch, 1]) weighted and reduced with
``loss_reduction`` — ``tf.losses.Reduction.SUM`` by default for the v1 canned estimators, so
the training loss (and the Estimator's ``loss`` metric) is a batch's sum, and
``average_loss`` the per-example mean. Metric, prediction and signature keys are TF's.
"""
from __future__ import annotations

from ...framework import dtypes
from ...framework.ops import GraphKeys, control_dependencies, convert_to_tensor, get_collection, name_scope
from ...ops import array_ops, check_ops, control_flow_ops, lookup_ops, math_ops, nn_ops
from ...ops.string_transform_ops import as_string
from ... import losses, metrics, nn
from ...summary import summary_ops
from ...train import training_util
from ..export.export_output import ClassificationOutput, PredictOutput, RegressionOutput
from ..mode_keys import ModeKeys
from ..model_fn import EstimatorSpec

__all__ = ["classification_head", "regression_head"]

_DEFAULT_SERVING_KEY = "serving_default"
_CLASSIFY_SERVING_KEY = "classification"
_REGRESS_SERVING_KEY = "regression"
_PREDICT_SERVING_KEY = "predict"


def _summary_key(head_name, value: str) -> str:
    return f"{value}/{head_name}" if head_name else value


class _Head:
    """Shared flow of the heads; subclasses give predictions, loss and metrics."""

    def __init__(self, logits_dimension, weight_column, loss_reduction, name=None):
        if loss_reduction not in (losses.Reduction.SUM, losses.Reduction.SUM_OVER_BATCH_SIZE,
                                  losses.Reduction.MEAN, losses.Reduction.SUM_BY_NONZERO_WEIGHTS,
                                  losses.Reduction.SUM_OVER_NONZERO_WEIGHTS):
            raise ValueError(f"Invalid loss_reduction: {loss_reduction}")
        self._logits_dimension = logits_dimension
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction
        self._name = name

    name = property(lambda self: self._name)
    logits_dimension = property(lambda self: self._logits_dimension)

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                              train_op_fn=None, regularization_losses=None) -> EstimatorSpec:
        with name_scope(self._name or "head"):
            logits = convert_to_tensor(logits)
            with name_scope("predictions"):
                predictions = self._predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions,
                                     export_outputs=self._export_outputs(predictions))
            labels = self._labels(_labels_as_column(labels, self._logits_dimension))
            unreduced_loss = self._unreduced_loss(labels, logits)
            weights = self._weights(features)
            training_loss = losses.compute_weighted_loss(unreduced_loss, weights=weights,
                                                         reduction=self._loss_reduction)
            regularization_loss = math_ops.add_n(list(regularization_losses)) \
                if regularization_losses else None
            loss = training_loss if regularization_loss is None else \
                math_ops.add_n([training_loss, regularization_loss])
            if mode == ModeKeys.EVAL:
                with name_scope("metrics"):
                    metric_ops = self._metrics(labels, predictions, weights, unreduced_loss)
                    if regularization_loss is not None:
                        metric_ops[_summary_key(self._name, "regularization_loss")] = \
                            metrics.mean(regularization_loss, name="regularization_loss")
                return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                     eval_metric_ops=metric_ops)
            if optimizer is not None:
                if train_op_fn is not None:
                    raise ValueError("train_op_fn and optimizer cannot both be set.")
                train_op = optimizer.minimize(loss, global_step=training_util.get_global_step())
            elif train_op_fn is not None:
                train_op = train_op_fn(loss)
            else:
                raise ValueError("train_op_fn and optimizer cannot both be None.")
            update_ops = get_collection(GraphKeys.UPDATE_OPS)
            if update_ops:
                train_op = control_flow_ops.group(train_op, *update_ops)
            mean_loss = None
            if self._loss_reduction == losses.Reduction.SUM:
                mean_loss = training_loss / math_ops.reduce_sum(
                    weights * array_ops.ones_like(unreduced_loss))
        with name_scope(""):
            summary_ops.scalar(_summary_key(self._name, "loss"), loss)
            if mean_loss is not None:
                summary_ops.scalar(_summary_key(self._name, "average_loss"), mean_loss)
            if regularization_loss is not None:
                summary_ops.scalar(_summary_key(self._name, "regularization_loss"),
                                   regularization_loss)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)

    def _weights(self, features):
        if self._weight_column is None:
            return 1.0
        key = getattr(self._weight_column, "key", self._weight_column)
        if key not in features:
            raise ValueError(f"Weight column {key} not found in features: "
                             f"{sorted(features)}")
        weights = math_ops.cast(convert_to_tensor(features[key]), dtypes.float32)
        return array_ops.reshape(weights, [-1, 1])


def _labels_as_column(labels, dimension):
    """Dense labels of shape [batch, dimension] (a [batch] vector gets its last axis)."""
    if labels is None:
        raise ValueError("You must provide a labels Tensor. Given: None. Suggested "
                         "troubleshooting steps: Check that your data contain your label "
                         "feature. Check that your input_fn properly parses and returns labels.")
    labels = convert_to_tensor(labels)
    if labels.shape.ndims == 1:
        labels = array_ops.expand_dims(labels, -1)
    if labels.shape.ndims is not None and labels.shape.ndims != 2:
        raise ValueError(f"labels shape must be [D0, D1, ... DN, {dimension}]. Given: "
                         f"{labels.shape}")
    return labels


class _ClassificationHead(_Head):
    def __init__(self, n_classes, weight_column, label_vocabulary, loss_reduction, name):
        if n_classes is None or n_classes < 2:
            raise ValueError(f"n_classes must be > 1 for classification: {n_classes}")
        if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
            raise ValueError(f"label_vocabulary should be a list or a tuple. Given type: "
                             f"{type(label_vocabulary)}")
        super().__init__(1 if n_classes == 2 else n_classes, weight_column, loss_reduction, name)
        self._n_classes = n_classes
        self._label_vocabulary = label_vocabulary

    def _class_ids_and_classes(self, class_logits, logits):
        batch = array_ops.shape(logits)[0]
        class_ids = array_ops.expand_dims(math_ops.argmax(class_logits, axis=-1,
                                                          name="class_ids"), -1)
        all_ids = array_ops.tile(array_ops.expand_dims(math_ops.range(self._n_classes), 0),
                                 [batch, 1])
        if self._label_vocabulary:
            table = lookup_ops.index_to_string_table_from_tensor(
                self._label_vocabulary, name="class_string_lookup")
            classes = table.lookup(class_ids)
            all_classes = array_ops.tile(array_ops.expand_dims(
                convert_to_tensor(list(self._label_vocabulary)), 0), [batch, 1])
        else:
            classes = as_string(class_ids, name="str_classes")
            all_classes = as_string(all_ids)
        return class_ids, classes, all_ids, all_classes

    def _classification_output(self, scores):
        batch = array_ops.shape(scores)[0]
        names = convert_to_tensor(list(self._label_vocabulary)) if self._label_vocabulary \
            else as_string(math_ops.range(self._n_classes))
        return ClassificationOutput(scores=scores, classes=array_ops.tile(
            array_ops.expand_dims(names, 0), [batch, 1]))

    def _label_ids(self, labels):
        if self._label_vocabulary is None:
            if not labels.dtype.is_integer:
                raise ValueError(f"Labels dtype should be integer. Instead got {labels.dtype}.")
            ids = labels
        else:
            if labels.dtype != dtypes.string:
                raise ValueError("Labels dtype should be string if there is a vocabulary. "
                                 f"Instead got {labels.dtype}")
            ids = lookup_ops.index_table_from_tensor(
                tuple(self._label_vocabulary), name="class_id_lookup").lookup(labels)
        with control_dependencies([
                check_ops.assert_less(ids, math_ops.cast(self._n_classes, ids.dtype),
                                      message="Labels must <= n_classes - 1"),
                check_ops.assert_non_negative(ids, message="Labels must >= 0")]):
            return array_ops.identity(ids)


class _MultiClassHead(_ClassificationHead):
    """Softmax cross entropy over ``n_classes`` > 2 logits."""

    def _predictions(self, logits):
        class_ids, classes, all_ids, all_classes = self._class_ids_and_classes(logits, logits)
        return {"logits": logits, "probabilities": nn_ops.softmax(logits, name="probabilities"),
                "class_ids": class_ids, "classes": classes, "all_class_ids": all_ids,
                "all_classes": all_classes}

    def _export_outputs(self, predictions):
        output = self._classification_output(predictions["probabilities"])
        return {_DEFAULT_SERVING_KEY: output, _CLASSIFY_SERVING_KEY: output,
                _PREDICT_SERVING_KEY: PredictOutput(predictions)}

    def _labels(self, labels):
        return self._label_ids(labels)

    def _unreduced_loss(self, label_ids, logits):
        loss = losses.sparse_softmax_cross_entropy(
            labels=array_ops.squeeze(label_ids, [-1]), logits=logits,
            reduction=losses.Reduction.NONE, loss_collection=None)
        return array_ops.expand_dims(loss, -1)

    def _metrics(self, label_ids, predictions, weights, unreduced_loss):
        return {
            _summary_key(self._name, "average_loss"): metrics.mean(
                unreduced_loss, weights=weights, name="average_loss"),
            _summary_key(self._name, "accuracy"): metrics.accuracy(
                label_ids, predictions["class_ids"], weights=weights, name="accuracy")}


class _BinaryLogisticHead(_ClassificationHead):
    """Sigmoid cross entropy over one logit."""

    def _predictions(self, logits):
        two_class_logits = array_ops.concat([array_ops.zeros_like(logits), logits], axis=-1,
                                            name="two_class_logits")
        class_ids, classes, all_ids, all_classes = self._class_ids_and_classes(
            two_class_logits, logits)
        return {"logits": logits, "logistic": math_ops.sigmoid(logits, name="logistic"),
                "probabilities": nn_ops.softmax(two_class_logits, name="probabilities"),
                "class_ids": class_ids, "classes": classes, "all_class_ids": all_ids,
                "all_classes": all_classes}

    def _export_outputs(self, predictions):
        output = self._classification_output(predictions["probabilities"])
        return {_DEFAULT_SERVING_KEY: output, _CLASSIFY_SERVING_KEY: output,
                _REGRESS_SERVING_KEY: RegressionOutput(value=predictions["logistic"]),
                _PREDICT_SERVING_KEY: PredictOutput(predictions)}

    def _labels(self, labels):
        return math_ops.cast(self._label_ids(labels), dtypes.float32)

    def _unreduced_loss(self, labels, logits):
        return nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

    def _metrics(self, labels, predictions, weights, unreduced_loss):
        key = lambda name: _summary_key(self._name, name)  # noqa: E731
        class_ids, logistic = predictions["class_ids"], predictions["logistic"]
        labels_mean = metrics.mean(labels, weights=weights, name="label/mean")
        ops = {
            key("average_loss"): metrics.mean(unreduced_loss, weights=weights,
                                              name="average_loss"),
            key("accuracy"): metrics.accuracy(labels, class_ids, weights=weights,
                                              name="accuracy"),
            key("precision"): metrics.precision(labels, class_ids, weights=weights,
                                                name="precision"),
            key("recall"): metrics.recall(labels, class_ids, weights=weights, name="recall"),
            key("prediction/mean"): metrics.mean(logistic, weights=weights,
                                                 name="prediction/mean"),
            key("label/mean"): labels_mean,
            key("accuracy_baseline"): (math_ops.maximum(labels_mean[0], 1.0 - labels_mean[0]),
                                       math_ops.maximum(labels_mean[1], 1.0 - labels_mean[1])),
            key("auc"): metrics.auc(labels, logistic, weights=weights, curve="ROC",
                                    name="auc"),
            key("auc_precision_recall"): metrics.auc(labels, logistic, weights=weights,
                                                     curve="PR", name="auc_precision_recall")}
        threshold = 0.5
        above = math_ops.cast(math_ops.greater_equal(logistic, threshold), dtypes.float32)
        ops[key(f"accuracy/positive_threshold_{threshold:.4f}")] = metrics.accuracy(
            labels, above, weights=weights, name=f"accuracy_at_{threshold:.4f}")
        for name, at_thresholds in (("precision", metrics.precision_at_thresholds),
                                    ("recall", metrics.recall_at_thresholds)):
            value, update = at_thresholds(labels, logistic, thresholds=(threshold,),
                                          weights=weights, name=f"{name}_at_{threshold:.4f}")
            ops[key(f"{name}/positive_threshold_{threshold:.4f}")] = (
                array_ops.squeeze(value), array_ops.squeeze(update))
        return ops


class _RegressionHead(_Head):
    """Mean squared error over ``label_dimension`` outputs."""

    def _predictions(self, logits):
        return {"predictions": logits}

    def _export_outputs(self, predictions):
        regression = RegressionOutput(value=predictions["predictions"])
        return {_DEFAULT_SERVING_KEY: regression, _REGRESS_SERVING_KEY: regression,
                _PREDICT_SERVING_KEY: PredictOutput(predictions)}

    def _labels(self, labels):
        return math_ops.cast(labels, dtypes.float32)

    def _unreduced_loss(self, labels, logits):
        return losses.mean_squared_error(labels=labels, predictions=logits,
                                         reduction=losses.Reduction.NONE, loss_collection=None)

    def _metrics(self, labels, predictions, weights, unreduced_loss):
        key = lambda name: _summary_key(self._name, name)  # noqa: E731
        return {
            key("average_loss"): metrics.mean(unreduced_loss, weights=weights,
                                              name="average_loss"),
            key("prediction/mean"): metrics.mean(predictions["predictions"], weights=weights,
                                                 name="prediction/mean"),
            key("label/mean"): metrics.mean(labels, weights=weights, name="label/mean")}


def classification_head(n_classes, weight_column=None, label_vocabulary=None,
                        loss_reduction=losses.Reduction.SUM, name=None) -> _Head:
    """TF's ``_binary_logistic_or_multi_class_head``."""
    if n_classes == 2:
        return _BinaryLogisticHead(2, weight_column, label_vocabulary, loss_reduction, name)
    return _MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction, name)


def regression_head(weight_column=None, label_dimension=1,
                    loss_reduction=losses.Reduction.SUM, name=None) -> _Head:
    if label_dimension < 1:
        raise ValueError(f"Invalid label_dimension {label_dimension}.")
    return _RegressionHead(label_dimension, weight_column, loss_reduction, name)
