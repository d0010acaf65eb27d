"""``tf.estimator.LinearClassifier`` / ``LinearRegressor`` (TF 1.15, v1): a linear model over
``tf.feature_column.linear_model``, with TF's variable names
(``linear/linear_model/<column>/weights/part_0``, ``linear/linear_model/bias_weights/part_0``:
partitioned as TensorFlow's, see dnn.py's ``partitioners``) and its default optimizer, FTRL at
``min(0.2, 1 / sqrt(number of columns))``."""
from __future__ import annotations

import functools
import math

from ... import feature_column as feature_column_lib
from ... import losses
from ...variable_scopes import variable_scope
from ..estimator import Estimator
from .dnn import partitioners
from .head import classification_head, regression_head
from .optimizers import get_optimizer_instance

__all__ = ["LinearClassifier", "LinearRegressor"]

_LEARNING_RATE = 0.2


def default_learning_rate(feature_columns, cap: float = _LEARNING_RATE) -> float:
    return min(cap, 1.0 / math.sqrt(len(feature_columns)))


def linear_logits(features, feature_columns, units, sparse_combiner):
    """The linear model's logits, built in the current variable scope (``linear``)."""
    return feature_column_lib.linear_model(features, feature_columns, units=units,
                                           sparse_combiner=sparse_combiner)


def _linear_model_fn(features, labels, mode, config, head, feature_columns, optimizer,
                     sparse_combiner, partitioner):
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                         f"{type(features)}")
    optimizer = get_optimizer_instance(optimizer,
                                       learning_rate=default_learning_rate(feature_columns))
    partitioner = partitioners(config, partitioner)[1]
    with variable_scope("linear", values=tuple(features.values()), partitioner=partitioner):
        logits = linear_logits(features, feature_columns, head.logits_dimension,
                               sparse_combiner)
    return head.create_estimator_spec(features=features, mode=mode, labels=labels,
                                      optimizer=optimizer, logits=logits)


def _check_sparse_combiner(sparse_combiner) -> None:
    if sparse_combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"sparse_combiner must be one of 'mean', 'sqrtn', 'sum'. Given: "
                         f"{sparse_combiner}")


class LinearClassifier(Estimator):
    """A linear classifier (``n_classes`` classes; 2: a logistic head)."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=losses.Reduction.SUM,
                 sparse_combiner="sum"):
        _check_sparse_combiner(sparse_combiner)
        head = classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(model_fn=functools.partial(
            _linear_model_fn, head=head, feature_columns=tuple(feature_columns),
            optimizer=optimizer, sparse_combiner=sparse_combiner, partitioner=partitioner),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressor(Estimator):
    """A linear regressor (``label_dimension`` outputs)."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, partitioner=None, warm_start_from=None,
                 loss_reduction=losses.Reduction.SUM, sparse_combiner="sum"):
        _check_sparse_combiner(sparse_combiner)
        head = regression_head(weight_column, label_dimension, loss_reduction)
        super().__init__(model_fn=functools.partial(
            _linear_model_fn, head=head, feature_columns=tuple(feature_columns),
            optimizer=optimizer, sparse_combiner=sparse_combiner, partitioner=partitioner),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)
