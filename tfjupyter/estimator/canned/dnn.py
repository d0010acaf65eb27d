"""``tf.estimator.DNNClassifier`` / ``DNNRegressor`` (TF 1.15, v1): a feed-forward network
over ``tf.feature_column.input_layer``, with TF's variable names::

    dnn/input_from_feature_columns/input_layer/...   (the columns' own variables)
    dnn/hiddenlayer_<i>/kernel/part_0, dnn/hiddenlayer_<i>/bias/part_0
    dnn/logits/kernel/part_0, dnn/logits/bias/part_0

As TensorFlow's, the variables are partitioned (``part_<i>``) over the cluster's ps tasks once
big enough (``partitioners``); without ps tasks each is one part, saved as the whole
``dnn/hiddenlayer_0/kernel``.
"""
from __future__ import annotations

import functools

from ... import feature_column as feature_column_lib
from ... import layers, losses, nn
from ...init_ops import glorot_uniform_initializer
from ...ops.partitioned_variables import min_max_variable_partitioner
from ...summary import summary_ops
from ...variable_scopes import variable_scope
from ..estimator import Estimator
from ..mode_keys import ModeKeys
from .head import classification_head, regression_head
from .optimizers import get_optimizer_instance

__all__ = ["DNNClassifier", "DNNRegressor"]

_LEARNING_RATE = 0.05


def add_layer_summary(value, tag: str) -> None:
    summary_ops.scalar(f"{tag}/fraction_of_zero_values", nn.zero_fraction(value))
    summary_ops.histogram(f"{tag}/activation", value)


def partitioners(config, input_layer_partitioner=None):
    """TensorFlow's (model, input layer) partitioners for a run on ``config``'s cluster: a
    part per ps task at most, parts of at least 256 KiB (64 MiB for the input layer)."""
    num_ps_replicas = config.num_ps_replicas if config else 0
    return (min_max_variable_partitioner(max_partitions=num_ps_replicas),
            input_layer_partitioner or min_max_variable_partitioner(
                max_partitions=num_ps_replicas, min_slice_size=64 << 20))


def dnn_logits(features, mode, hidden_units, feature_columns, units, activation_fn, dropout,
               batch_norm, input_layer_partitioner):
    """The network's logits, built in the current variable scope (``dnn``)."""
    with variable_scope("input_from_feature_columns", values=tuple(features.values()),
                        partitioner=input_layer_partitioner):
        net = feature_column_lib.input_layer(features, feature_columns)
    training = mode == ModeKeys.TRAIN
    for layer_id, num_hidden_units in enumerate(hidden_units):
        with variable_scope(f"hiddenlayer_{layer_id}", values=(net,)) as scope:
            net = layers.dense(net, units=num_hidden_units, activation=activation_fn,
                               kernel_initializer=glorot_uniform_initializer(), name=scope)
            if dropout is not None and training:
                net = layers.dropout(net, rate=dropout, training=True)
            if batch_norm:
                net = layers.batch_normalization(net, momentum=0.999, training=training,
                                                 name="batchnorm_%d" % layer_id)
        add_layer_summary(net, scope.name)
    with variable_scope("logits", values=(net,)) as scope:
        logits = layers.dense(net, units=units, activation=None,
                              kernel_initializer=glorot_uniform_initializer(), name=scope)
    add_layer_summary(logits, scope.name)
    return logits


def _dnn_model_fn(features, labels, mode, config, head, hidden_units, feature_columns,
                  optimizer, activation_fn, dropout, batch_norm, input_layer_partitioner):
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                         f"{type(features)}")
    optimizer = get_optimizer_instance(optimizer, learning_rate=_LEARNING_RATE)
    partitioner, input_layer_partitioner = partitioners(config, input_layer_partitioner)
    with variable_scope("dnn", values=tuple(features.values()), partitioner=partitioner):
        logits = dnn_logits(features, mode, hidden_units, feature_columns,
                            head.logits_dimension, activation_fn, dropout, batch_norm,
                            input_layer_partitioner)
    return head.create_estimator_spec(features=features, mode=mode, labels=labels,
                                      optimizer=optimizer, logits=logits)


def _bind_dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                       batch_norm, input_layer_partitioner):
    """The model_fn(features, labels, mode, config) of a DNN estimator."""
    return functools.partial(_dnn_model_fn, head=head, hidden_units=tuple(hidden_units),
                             feature_columns=tuple(feature_columns), optimizer=optimizer,
                             activation_fn=activation_fn, dropout=dropout,
                             batch_norm=batch_norm,
                             input_layer_partitioner=input_layer_partitioner)


class DNNClassifier(Estimator):
    """A classifier for TensorFlow DNN models (``n_classes`` classes; 2: a logistic head)."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=nn.relu, dropout=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=losses.Reduction.SUM, batch_norm=False):
        head = classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(model_fn=_bind_dnn_model_fn(head, hidden_units, feature_columns,
                                                     optimizer, activation_fn, dropout,
                                                     batch_norm, input_layer_partitioner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNRegressor(Estimator):
    """A regressor for TensorFlow DNN models (``label_dimension`` outputs)."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=nn.relu, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=losses.Reduction.SUM, batch_norm=False):
        head = regression_head(weight_column, label_dimension, loss_reduction)
        super().__init__(model_fn=_bind_dnn_model_fn(head, hidden_units, feature_columns,
                                                     optimizer, activation_fn, dropout,
                                                     batch_norm, input_layer_partitioner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)
