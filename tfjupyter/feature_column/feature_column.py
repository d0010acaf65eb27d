"""``tf.feature_column.input_layer``, ``linear_model`` and ``make_parse_example_spec``
(TensorFlow 1.15's v1 functions), with TensorFlow's variable names, so that checkpoints of
models built on them (the canned Estimators) name their variables as TensorFlow's:

- ``input_layer/<column>_embedding/embedding_weights`` for an embedding column;
- ``linear_model/<column>/weights`` ([num_buckets or elements, units], zeros) and
  ``linear_model/bias_weights`` ([units], zeros).

Columns are built in order of their names, each in a variable scope of its name; a second
model in the same scope gets ``input_layer_1``, ``linear_model_1``, as in TensorFlow.
"""
from __future__ import annotations

from ..framework import dtypes
from ..framework.ops import GraphKeys, get_collection
from ..ops import array_ops, math_ops
from ..ops.embedding_ops import safe_embedding_lookup_sparse
from ..ops.sparse_ops import sparse_reshape
from ..init_ops import zeros_initializer
from ..nn import bias_add
from ..variable_scopes import get_variable, get_variable_scope, variable_scope
from ..variables import PartitionedVariable
from .base import CategoricalColumn, DenseColumn, FeatureColumn, LazyBuilder, \
    normalize_feature_columns

__all__ = ["input_layer", "linear_model", "make_parse_example_spec"]


def _with_model_collections(weight_collections) -> list:
    collections = list(weight_collections or [])
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES):
        if key not in collections:
            collections.append(key)
    return collections


def _flat_batch(tensor, column):
    """``tensor`` as [batch, elements of the column's variable shape]."""
    elements = column._variable_shape.num_elements()
    return array_ops.reshape(tensor, array_ops.stack([array_ops.shape(tensor)[0], elements]))


def _check_batch_sizes(tensors, columns) -> None:
    """Every static batch size (first dimension) must agree, as TensorFlow checks."""
    seen = None
    for tensor, column in zip(tensors, columns):
        size = tensor.shape[0].value if tensor.shape.ndims else None
        if size is None:
            continue
        if seen is None:
            seen = (size, column)
        elif seen[0] != size:
            raise ValueError(f"Batch size (first dimension) of each feature must be same. Batch "
                             f"size of columns ({seen[1].name}, {column.name}): ({seen[0]}, "
                             f"{size})")


def _scope_variables() -> list:
    return get_collection(GraphKeys.GLOBAL_VARIABLES, scope=get_variable_scope().name)


def input_layer(features, feature_columns, weight_collections=None, trainable=True,
                cols_to_vars=None, cols_to_output_tensors=None):
    """The dense columns' tensors of ``features`` (feature key -> Tensor or SparseTensor),
    each flattened to [batch, n], concatenated in order of column names: [batch, sum of n]."""
    feature_columns = normalize_feature_columns(feature_columns)
    for column in feature_columns:
        if not isinstance(column, DenseColumn):
            raise ValueError(f"Items of feature_columns must be a _DenseColumn. You can wrap a "
                             f"categorical column with an embedding_column or indicator_column. "
                             f"Given: {column}")
    collections = _with_model_collections(weight_collections)
    with variable_scope(None, default_name="input_layer", values=list(features.values())):
        builder = LazyBuilder(features)
        outputs, ordered = [], []
        for column in sorted(feature_columns, key=lambda c: c.name):
            ordered.append(column)
            with variable_scope(None, default_name=column._var_scope_name):
                tensor = column._get_dense_tensor(builder, weight_collections=collections,
                                                  trainable=trainable)
                output = _flat_batch(tensor, column)
                outputs.append(output)
                if cols_to_vars is not None:
                    cols_to_vars[column] = _scope_variables()
                if cols_to_output_tensors is not None:
                    cols_to_output_tensors[column] = output
        _check_batch_sizes(outputs, ordered)
        return array_ops.concat(outputs, 1)


def _as_rows(sparse):
    """A SparseTensor as 2-D: [its first dimension, everything else]."""
    return sparse_reshape(sparse, array_ops.stack([sparse.dense_shape[0],
                                                   array_ops.constant(-1, dtypes.int64)]))


def _weighted_sum(column, builder, units, sparse_combiner, collections, trainable):
    """One column's [batch, units] contribution to a linear model, with its weights
    ``<column>/weights`` made in the current scope."""
    if isinstance(column, CategoricalColumn):
        weights = get_variable("weights", shape=(column._num_buckets, units),
                               initializer=zeros_initializer(), trainable=trainable,
                               collections=collections)
        # A categorical column's weighted sum is an embedding lookup with combiner "sum".
        pair = column._get_sparse_tensors(builder, weight_collections=collections,
                                          trainable=trainable)
        ids = _as_rows(pair.id_tensor)
        sparse_weights = None if pair.weight_tensor is None else _as_rows(pair.weight_tensor)
        return safe_embedding_lookup_sparse(weights, ids, sparse_weights=sparse_weights,
                                            combiner=sparse_combiner, name="weighted_sum")
    tensor = column._get_dense_tensor(builder, weight_collections=collections,
                                      trainable=trainable)
    elements = column._variable_shape.num_elements()
    weights = get_variable("weights", shape=[elements, units], initializer=zeros_initializer(),
                           trainable=trainable, collections=collections)
    return math_ops.matmul(_flat_batch(tensor, column), weights, name="weighted_sum")


def linear_model(features, feature_columns, units=1, sparse_combiner="sum",
                 weight_collections=None, trainable=True, cols_to_vars=None):
    """sum over columns of (column input) x (its weights), plus a bias: [batch, units].
    Categorical columns weigh their ids (``sparse_combiner`` over an example's ids), dense
    ones their flattened values. ``cols_to_vars`` receives each column's variables and
    'bias'."""
    feature_columns = normalize_feature_columns(feature_columns)
    for column in feature_columns:
        if not isinstance(column, (DenseColumn, CategoricalColumn)):
            raise ValueError(f"Items of feature_columns must be either a _DenseColumn or "
                             f"_CategoricalColumn. Given: {column}")
    if sparse_combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f'combiner must be one of "mean", "sqrtn" or "sum", got '
                         f"{sparse_combiner!r}")
    collections = _with_model_collections(weight_collections)
    with variable_scope(None, default_name="linear_model"):
        builder = LazyBuilder(features)
        sums, ordered = [], []
        for column in sorted(feature_columns, key=lambda c: c.name):
            ordered.append(column)
            with variable_scope(None, default_name=column._var_scope_name):
                sums.append(_weighted_sum(column, builder, units, sparse_combiner, collections,
                                          trainable))
                if cols_to_vars is not None:
                    cols_to_vars[column] = _scope_variables()
        _check_batch_sizes(sums, ordered)
        bias = get_variable("bias_weights", shape=[units], initializer=zeros_initializer(),
                            trainable=trainable, collections=collections)
        if cols_to_vars is not None:
            cols_to_vars["bias"] = list(bias) if isinstance(bias, PartitionedVariable) \
                else [bias]
        no_bias = math_ops.add_n(sums, name="weighted_sum_no_bias")
        return bias_add(no_bias, bias, name="weighted_sum")


def make_parse_example_spec(feature_columns) -> dict:
    """The ``tf.parse_example`` features dict the columns read: feature key ->
    FixedLenFeature or VarLenFeature."""
    result = {}
    for column in feature_columns:
        if not isinstance(column, FeatureColumn):
            raise ValueError(f"All feature_columns must be _FeatureColumn instances. Given: "
                             f"{column}")
        for key, spec in column._parse_example_spec.items():
            if key in result and result[key] != spec:
                raise ValueError(f"feature_columns contain different parse_spec for key {key}. "
                                 f"Given {spec} and {result[key]}")
        result.update(column._parse_example_spec)
    return result


# The v1 protocol's names, for code written against TensorFlow's feature_column module.
_FeatureColumn, _DenseColumn, _CategoricalColumn, _LazyBuilder = (
    FeatureColumn, DenseColumn, CategoricalColumn, LazyBuilder)
