"""What every feature column shares (TensorFlow 1.15's ``feature_column.py``, v1 protocol):

- ``FeatureColumn``: ``name``, ``_parse_example_spec`` (feature key -> FixedLenFeature /
  VarLenFeature), ``_transform_feature(builder)``, ``_var_scope_name``;
- ``DenseColumn``: ``_variable_shape`` and ``_get_dense_tensor(builder, ...)``, what
  ``input_layer`` concatenates;
- ``CategoricalColumn``: ``_num_buckets`` and ``_get_sparse_tensors(builder, ...)``, an
  ``IdWeightPair`` of SparseTensors of ids in [0, num_buckets) and optional weights;
- ``LazyBuilder`` (TF's ``_LazyBuilder``): each raw feature and each column transformed once
  per model, so a bucketized column used alone and in a cross builds one bucketization.

The public spellings (``name``, ``parse_example_spec``, ``num_buckets``, ``variable_shape``)
return the same as the private ones, as TF 1.15's columns do.
"""
from __future__ import annotations

import collections

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.sparse_tensor import SparseTensor, SparseTensorValue
from ..ops import array_ops, math_ops
from ..ops.array_index_ops import where
from ..ops.array_scatter_ops import gather_nd
from ..ops.sparse_ops import sparse_reshape

__all__ = ["FeatureColumn", "DenseColumn", "CategoricalColumn", "LazyBuilder",
           "to_sparse_input_and_drop_ignore_values", "normalize_feature_columns"]


class FeatureColumn:
    """A feature column: how one input feature (or several) becomes model input."""

    @property
    def name(self) -> str:
        raise NotImplementedError

    @property
    def _parse_example_spec(self) -> dict:
        raise NotImplementedError

    def _transform_feature(self, inputs: "LazyBuilder"):
        raise NotImplementedError

    @property
    def _var_scope_name(self) -> str:
        """The variable scope of the column's variables in input_layer and linear_model."""
        return self.name

    @property
    def parse_example_spec(self) -> dict:
        return self._parse_example_spec


class DenseColumn(FeatureColumn):
    """A column with a dense tensor per example: what ``input_layer`` takes."""

    @property
    def _variable_shape(self):
        raise NotImplementedError

    @property
    def variable_shape(self):
        return self._variable_shape

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None) -> Tensor:
        raise NotImplementedError


class CategoricalColumn(FeatureColumn):
    """A column of ids in [0, num_buckets): what embedding, indicator and linear models take."""

    IdWeightPair = collections.namedtuple("IdWeightPair", ["id_tensor", "weight_tensor"])

    @property
    def _num_buckets(self) -> int:
        raise NotImplementedError

    @property
    def num_buckets(self) -> int:
        return self._num_buckets

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        raise NotImplementedError


def _as_tensor_or_sparse(value):
    if isinstance(value, SparseTensor):
        return value
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    return convert_to_tensor(value)


class LazyBuilder:
    """Builds each transformed feature once: ``get(key)`` with a string gives the raw feature
    (a rank-1 one as [batch, 1]); with a column, that column's transformed feature."""

    def __init__(self, features):
        self._features = dict(features)
        self._feature_tensors = {}

    def get(self, key):
        if key in self._feature_tensors:
            return self._feature_tensors[key]
        if key in self._features:
            tensor = self._raw_feature(key)
            self._feature_tensors[key] = tensor
            return tensor
        if isinstance(key, str):
            raise ValueError(f"Feature {key} is not in features dictionary.")
        if not isinstance(key, FeatureColumn):
            raise TypeError(f'"key" must be either a "str" or "_FeatureColumn". Provided: {key}')
        transformed = key._transform_feature(self)
        if transformed is None:
            raise ValueError(f"Column {key.name} is not supported.")
        self._feature_tensors[key] = transformed
        return transformed

    def _raw_feature(self, key):
        tensor = _as_tensor_or_sparse(self._features[key])
        rank = tensor.get_shape().ndims
        if rank is None:
            raise ValueError(f"Feature (key: {key}) must have a known rank, got {tensor}")
        if rank == 0:
            raise ValueError(f"Feature (key: {key}) cannot have rank 0. Give: {tensor}")
        if rank != 1:
            return tensor
        if isinstance(tensor, SparseTensor):
            return sparse_reshape(tensor, array_ops.concat(
                [tensor.dense_shape, array_ops.constant([1], dtypes.int64)], 0))
        return array_ops.expand_dims(tensor, -1)


def to_sparse_input_and_drop_ignore_values(input_tensor, ignore_value=None):
    """A dense string or integer tensor as a SparseTensor of its cells other than
    ``ignore_value`` (None: "" for strings, -1 for integers); a SparseTensor as itself."""
    input_tensor = _as_tensor_or_sparse(input_tensor)
    if isinstance(input_tensor, SparseTensor):
        return input_tensor
    with name_scope(None, "to_sparse_input", [input_tensor]):
        if ignore_value is None:
            if input_tensor.dtype == dtypes.string:
                ignore_value = b""
            elif input_tensor.dtype.is_integer:
                ignore_value = -1   # -1 means a missing feature
            else:
                ignore_value = input_tensor.dtype.as_numpy_dtype()
        ignore = array_ops.constant(ignore_value, dtype=input_tensor.dtype, name="ignore_value")
        indices = where(math_ops.not_equal(input_tensor, ignore), name="indices")
        return SparseTensor(indices=indices, values=gather_nd(input_tensor, indices, name="values"),
                            dense_shape=array_ops.shape(input_tensor, out_type=dtypes.int64,
                                                        name="dense_shape"))


def normalize_feature_columns(feature_columns) -> list:
    """``feature_columns`` as a non-empty list of columns with distinct names."""
    if isinstance(feature_columns, FeatureColumn):
        feature_columns = [feature_columns]
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict.")
    feature_columns = list(feature_columns)
    for column in feature_columns:
        if not isinstance(column, FeatureColumn):
            raise ValueError(f"Items of feature_columns must be a _FeatureColumn. Given (type "
                             f"{type(column)}): {column}.")
    if not feature_columns:
        raise ValueError("feature_columns must not be empty.")
    by_name = {}
    for column in feature_columns:
        if column.name in by_name:
            raise ValueError(f"Duplicate feature column name found for columns: {column} and "
                             f"{by_name[column.name]}. This usually means that these columns "
                             f"refer to same base feature. Either one must be discarded or a "
                             f"duplicated but renamed item must be inserted in features dict.")
        by_name[column.name] = column
    return feature_columns
