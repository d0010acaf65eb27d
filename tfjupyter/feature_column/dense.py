"""Dense columns (TensorFlow 1.15): a dense tensor per example, what ``input_layer`` takes.

- ``numeric_column``: a float32 feature of a fixed shape, optionally normalized;
- ``bucketized_column``: a numeric column cut at ``boundaries``, one-hot when dense, ids
  (bucket + position * buckets) when categorical;
- ``embedding_column``: a categorical column's ids combined over a trainable table
  ``<scope>/<name>_embedding/embedding_weights`` (ops/embedding_ops.py);
- ``indicator_column``: a categorical column as a multi-hot (or weight-summed) vector.
"""
from __future__ import annotations

import collections
import math

import numpy as np

from ..framework import dtypes
from ..framework.sparse_tensor import SparseTensor
from ..framework.tensor_shape import TensorShape
from ..init_ops import truncated_normal_initializer
from ..ops import array_ops, math_ops, reduction_ops
from ..ops.array_index_ops import one_hot
from ..ops.array_scatter_ops import scatter_nd
from ..ops.embedding_ops import safe_embedding_lookup_sparse
from ..ops.parsing_ops import FixedLenFeature
from ..ops.sparse_ops import sparse_tensor_to_dense
from ..train.checkpoint_utils import init_from_checkpoint
from ..variable_scopes import get_variable
from .base import CategoricalColumn, DenseColumn

__all__ = ["numeric_column", "bucketized_column", "embedding_column", "indicator_column"]


class NumericColumn(DenseColumn, collections.namedtuple(
        "NumericColumn", ["key", "shape", "default_value", "dtype", "normalizer_fn"])):
    """See ``numeric_column``."""

    name = property(lambda self: self.key)
    _variable_shape = property(lambda self: TensorShape(self.shape))

    @property
    def _parse_example_spec(self):
        return {self.key: FixedLenFeature(self.shape, self.dtype, self.default_value)}

    def _transform_feature(self, inputs):
        tensor = inputs.get(self.key)
        if isinstance(tensor, SparseTensor):
            raise ValueError(f"The corresponding Tensor of numerical column must be a Tensor. "
                             f"SparseTensor is not supported. key: {self.key}")
        if self.normalizer_fn is not None:
            tensor = self.normalizer_fn(tensor)
        return math_ops.cast(tensor, dtypes.float32)

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        return inputs.get(self)


def _bucketize(values, boundaries):
    """The bucket of each value: how many boundaries are <= it (TensorFlow's Bucketize)."""
    edges = array_ops.constant([float(b) for b in boundaries], dtype=values.dtype)
    above = math_ops.greater_equal(array_ops.expand_dims(values, -1), edges)
    return reduction_ops.reduce_sum(math_ops.cast(above, dtypes.int32), -1)


class BucketizedColumn(DenseColumn, CategoricalColumn, collections.namedtuple(
        "BucketizedColumn", ["source_column", "boundaries"])):
    """See ``bucketized_column``."""

    name = property(lambda self: f"{self.source_column.name}_bucketized")
    _parse_example_spec = property(lambda self: self.source_column._parse_example_spec)

    @property
    def _variable_shape(self):
        return TensorShape(tuple(self.source_column.shape) + (len(self.boundaries) + 1,))

    @property
    def _num_buckets(self):
        return (len(self.boundaries) + 1) * self.source_column.shape[0]

    def _transform_feature(self, inputs):
        return _bucketize(inputs.get(self.source_column), self.boundaries)

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        return one_hot(math_ops.cast(inputs.get(self), dtypes.int64),
                       depth=len(self.boundaries) + 1, on_value=1., off_value=0.)

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        # Example i's value j falls in bucket b: id b + j * (buckets per value), at [i, j].
        buckets = inputs.get(self)
        batch_size = array_ops.shape(buckets)[0]
        width = self.source_column.shape[0]
        rows = array_ops.reshape(array_ops.tile(array_ops.expand_dims(
            math_ops.range(0, batch_size), 1), [1, width]), (-1,))
        positions = array_ops.tile(math_ops.range(0, width), [batch_size])
        ids = array_ops.reshape(buckets, (-1,)) + (len(self.boundaries) + 1) * positions
        indices = math_ops.cast(array_ops.transpose(array_ops.stack((rows, positions))),
                                dtypes.int64)
        dense_shape = math_ops.cast(array_ops.stack([batch_size, width]), dtypes.int64)
        return CategoricalColumn.IdWeightPair(SparseTensor(indices, ids, dense_shape), None)


class EmbeddingColumn(DenseColumn, collections.namedtuple(
        "EmbeddingColumn", ("categorical_column", "dimension", "combiner", "initializer",
                            "ckpt_to_load_from", "tensor_name_in_ckpt", "max_norm",
                            "trainable"))):
    """See ``embedding_column``."""

    name = property(lambda self: f"{self.categorical_column.name}_embedding")
    _parse_example_spec = property(lambda self: self.categorical_column._parse_example_spec)
    _variable_shape = property(lambda self: TensorShape([self.dimension]))

    def _transform_feature(self, inputs):
        return inputs.get(self.categorical_column)

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        sparse = self.categorical_column._get_sparse_tensors(
            inputs, weight_collections=weight_collections, trainable=trainable)
        weights = get_variable("embedding_weights",
                               shape=[self.categorical_column._num_buckets, self.dimension],
                               dtype=dtypes.float32, initializer=self.initializer,
                               trainable=self.trainable and trainable is not False,
                               collections=weight_collections)
        if self.ckpt_to_load_from is not None:
            # The table (each of its parts, if partitioned) starts from the checkpoint's.
            init_from_checkpoint(self.ckpt_to_load_from, {self.tensor_name_in_ckpt: weights})
        return safe_embedding_lookup_sparse(weights, sparse.id_tensor, sparse.weight_tensor,
                                            combiner=self.combiner, name=f"{self.name}_weights",
                                            max_norm=self.max_norm)


class IndicatorColumn(DenseColumn, collections.namedtuple("IndicatorColumn",
                                                          ["categorical_column"])):
    """See ``indicator_column``."""

    name = property(lambda self: f"{self.categorical_column.name}_indicator")
    _parse_example_spec = property(lambda self: self.categorical_column._parse_example_spec)
    _variable_shape = property(
        lambda self: TensorShape([1, self.categorical_column._num_buckets]))

    def _transform_feature(self, inputs):
        pair = self.categorical_column._get_sparse_tensors(inputs)
        depth = self.categorical_column._num_buckets
        if pair.weight_tensor is not None:
            # Each id's weights summed into its slot (TF: sparse_merge, then scatter_nd).
            ids = pair.id_tensor
            indices = array_ops.stack([ids.indices[:, 0], math_ops.cast(ids.values,
                                                                        dtypes.int64)], 1)
            shape = array_ops.stack([ids.dense_shape[0], array_ops.constant(depth, dtypes.int64)])
            return scatter_nd(indices, pair.weight_tensor.values, shape)
        dense_ids = sparse_tensor_to_dense(pair.id_tensor, default_value=-1)
        return reduction_ops.reduce_sum(one_hot(dense_ids, depth=depth, on_value=1.0,
                                                off_value=0.0), axis=[-2])

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        return inputs.get(self)


# -- constructors ----------------------------------------------------------------------------------
def _check_shape(shape, key) -> tuple:
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    for dimension in shape:
        if not isinstance(dimension, int):
            raise TypeError(f"shape dimensions must be integer. shape: {shape}, key: {key}")
        if dimension < 1:
            raise ValueError(f"shape dimensions must be greater than 0. shape: {shape}, key: "
                             f"{key}")
    return shape


def _check_default_value(shape, default_value, dtype, key):
    """``default_value`` as a nested tuple of ``shape`` (a scalar fills it), or None."""
    if default_value is None:
        return None
    value = np.asarray(default_value)
    if not (np.issubdtype(value.dtype, np.number) or value.dtype == np.bool_):
        raise TypeError(f"default_value must be compatible with dtype. default_value: "
                        f"{default_value}, dtype: {dtype}, key: {key}")
    if value.ndim == 0:
        value = np.full(shape, value)
    if tuple(value.shape) != tuple(shape):
        raise ValueError(f"The shape of default_value must be equal to given shape. "
                         f"default_value: {default_value}, shape: {shape}, key: {key}")
    return _nested_tuple(value.astype(dtype.as_numpy_dtype).tolist())


def _nested_tuple(value):
    return tuple(_nested_tuple(v) for v in value) if isinstance(value, list) else value


def numeric_column(key, shape=(1,), default_value=None, dtype=dtypes.float32,
                   normalizer_fn=None):
    """A real-valued feature of ``shape`` per example, cast to float32 (after
    ``normalizer_fn``)."""
    shape = _check_shape(shape, key)
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, key: {key}")
    default_value = _check_default_value(shape, default_value, dtype, key)
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    if not isinstance(key, str):
        raise ValueError(f"key must be a string. Given: {key}")
    return NumericColumn(key, shape=shape, default_value=default_value, dtype=dtype,
                         normalizer_fn=normalizer_fn)


def bucketized_column(source_column, boundaries):
    """``source_column`` (a numeric column of rank-1 shape) cut at the sorted ``boundaries``:
    bucket i holds [boundaries[i-1], boundaries[i])."""
    if not isinstance(source_column, NumericColumn):
        raise ValueError(f"source_column must be a column generated with numeric_column(). "
                         f"Given: {source_column}")
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional column. Given: "
                         f"{source_column}")
    if not boundaries or not isinstance(boundaries, (list, tuple)):
        raise ValueError("boundaries must be a sorted list.")
    for i in range(len(boundaries) - 1):
        if boundaries[i] >= boundaries[i + 1]:
            raise ValueError("boundaries must be a sorted list.")
    return BucketizedColumn(source_column, tuple(boundaries))


def embedding_column(categorical_column, dimension, combiner="mean", initializer=None,
                     ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                     trainable=True):
    """A dense ``dimension``-vector per example: the ``combiner`` ("mean", "sqrtn", "sum") of
    the rows of a trainable [num_buckets, dimension] table at the example's ids. The table
    starts truncated-normal with stddev 1/sqrt(dimension) unless ``initializer`` is given, or
    from the tensor ``tensor_name_in_ckpt`` of checkpoint ``ckpt_to_load_from``."""
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or "
                         "none of them.")
    if initializer is not None and not callable(initializer):
        raise ValueError(f"initializer must be callable if specified. Embedding of column_name: "
                         f"{categorical_column.name}")
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f'combiner must be one of "mean", "sqrtn" or "sum", got {combiner!r}')
    if not isinstance(categorical_column, CategoricalColumn):
        raise ValueError(f"categorical_column must be a categorical column, e.g. from "
                         f"categorical_column_with_*. Given: {categorical_column}")
    if initializer is None:
        initializer = truncated_normal_initializer(mean=0.0, stddev=1 / math.sqrt(dimension))
    return EmbeddingColumn(categorical_column=categorical_column, dimension=dimension,
                           combiner=combiner, initializer=initializer,
                           ckpt_to_load_from=ckpt_to_load_from,
                           tensor_name_in_ckpt=tensor_name_in_ckpt, max_norm=max_norm,
                           trainable=trainable)


def indicator_column(categorical_column):
    """``categorical_column`` as a [num_buckets] multi-hot vector per example (with weights:
    each id's weights summed)."""
    if not isinstance(categorical_column, CategoricalColumn):
        raise ValueError(f"Unsupported input type. Input must be a CategoricalColumn. Given: "
                         f"{categorical_column}")
    return IndicatorColumn(categorical_column)
