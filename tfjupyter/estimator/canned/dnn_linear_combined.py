"""``tf.estimator.DNNLinearCombinedClassifier`` (TF 1.15, v1, "wide & deep"): the sum of a
linear model's logits (``linear/...``, FTRL) and a network's (``dnn/...``, Adagrad), each part
trained by its own optimizer on its own variables, the global step incremented once."""
from __future__ import annotations

import functools

from ... import losses, nn
from ...framework.ops import GraphKeys, control_dependencies, get_collection
from ...ops import control_flow_ops
from ...train import training_util
from ...variable_scopes import variable_scope
from ...variables import assign_add
from ..estimator import Estimator
from .dnn import dnn_logits, partitioners
from .head import classification_head
from .linear import default_learning_rate, linear_logits
from .optimizers import get_optimizer_instance

__all__ = ["DNNLinearCombinedClassifier"]

_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005


def _combined_model_fn(features, labels, mode, config, head, linear_feature_columns,
                       linear_optimizer, dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                       dnn_activation_fn, dnn_dropout, batch_norm, linear_sparse_combiner,
                       input_layer_partitioner):
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                         f"{type(features)}")
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be "
                         "defined.")
    parts = []   # (logits, optimizer, scope name)
    dnn_partitioner, input_layer_partitioner = partitioners(config, input_layer_partitioner)
    if dnn_feature_columns:
        if not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is "
                             "specified.")
        optimizer = get_optimizer_instance(dnn_optimizer, learning_rate=_DNN_LEARNING_RATE)
        with variable_scope("dnn", values=tuple(features.values()),
                            partitioner=dnn_partitioner) as scope:
            logits = dnn_logits(features, mode, dnn_hidden_units, dnn_feature_columns,
                                head.logits_dimension, dnn_activation_fn, dnn_dropout,
                                batch_norm, input_layer_partitioner)
        parts.append((logits, optimizer, scope.name))
    if linear_feature_columns:
        optimizer = get_optimizer_instance(
            linear_optimizer,
            learning_rate=default_learning_rate(linear_feature_columns, _LINEAR_LEARNING_RATE))
        with variable_scope("linear", values=tuple(features.values()),
                            partitioner=input_layer_partitioner) as scope:
            logits = linear_logits(features, linear_feature_columns, head.logits_dimension,
                                   linear_sparse_combiner)
        parts.append((logits, optimizer, scope.name))
    logits = parts[0][0] if len(parts) == 1 else parts[0][0] + parts[1][0]

    def train_op_fn(loss):
        train_ops = [optimizer.minimize(loss, var_list=get_collection(
            GraphKeys.TRAINABLE_VARIABLES, scope=scope_name))
            for _, optimizer, scope_name in parts]
        with control_dependencies([control_flow_ops.group(*train_ops)]):
            return assign_add(training_util.get_global_step(), 1).op

    return head.create_estimator_spec(features=features, mode=mode, labels=labels,
                                      train_op_fn=train_op_fn, logits=logits)


class DNNLinearCombinedClassifier(Estimator):
    """A classifier on a linear model plus a DNN ("wide & deep")."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=nn.relu, dnn_dropout=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=losses.Reduction.SUM, batch_norm=False,
                 linear_sparse_combiner="sum"):
        linear_columns = tuple(linear_feature_columns or ())
        dnn_columns = tuple(dnn_feature_columns or ())
        if not linear_columns and not dnn_columns:
            raise ValueError("Either linear_feature_columns or dnn_feature_columns must be "
                             "defined.")
        head = classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(model_fn=functools.partial(
            _combined_model_fn, head=head, linear_feature_columns=linear_columns,
            linear_optimizer=linear_optimizer, dnn_feature_columns=dnn_columns,
            dnn_optimizer=dnn_optimizer, dnn_hidden_units=dnn_hidden_units,
            dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout, batch_norm=batch_norm,
            linear_sparse_combiner=linear_sparse_combiner,
            input_layer_partitioner=input_layer_partitioner),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)
