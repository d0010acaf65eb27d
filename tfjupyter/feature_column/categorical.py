"""Categorical columns (TensorFlow 1.15): ids in [0, num_buckets) per example, as SparseTensors.

- ``categorical_column_with_vocabulary_list`` / ``_with_vocabulary_file``: a lookup table
  (ops/lookup_ops.py), out-of-vocabulary values to ``default_value`` or hashed OOV buckets;
- ``categorical_column_with_identity``: integer values as ids;
- ``categorical_column_with_hash_bucket``: Fingerprint64(value) % hash_bucket_size (integers
  hash as their decimal text);
- ``weighted_categorical_column``: ids with a weight feature;
- ``crossed_column``: the hashed cross of several features (ops/sparse_cross_ops.py).

A dense input becomes sparse without its missing cells ("" for strings, -1 for integers).
"""
from __future__ import annotations

import collections

from ..framework import dtypes
from ..framework.sparse_tensor import SparseTensor
from ..gfile import GFile
from ..ops import array_ops, math_ops
from ..ops.array_index_ops import where
from ..ops.lookup_ops import index_table_from_file, index_table_from_tensor
from ..ops.parsing_ops import VarLenFeature
from ..ops.sparse_cross_ops import sparse_cross_hashed
from ..ops.string_hash_ops import string_to_hash_bucket_fast
from ..ops.string_transform_ops import as_string
from .base import CategoricalColumn, FeatureColumn, to_sparse_input_and_drop_ignore_values

__all__ = ["categorical_column_with_vocabulary_list", "categorical_column_with_vocabulary_file",
           "categorical_column_with_identity", "categorical_column_with_hash_bucket",
           "weighted_categorical_column", "crossed_column"]


def _check_key(key) -> None:
    if not isinstance(key, str):
        raise ValueError(f"key must be a string. Given: {key}")


def _check_string_or_int(dtype, prefix: str) -> None:
    if dtype != dtypes.string and not dtype.is_integer:
        raise ValueError(f"{prefix} dtype must be string or integer. dtype: {dtype}.")


def _sparse_input(column, inputs) -> SparseTensor:
    """The column's raw feature as a SparseTensor whose dtype kind matches the column's."""
    tensor = to_sparse_input_and_drop_ignore_values(inputs.get(column.key))
    _check_string_or_int(tensor.dtype, f"column_name: {column.key} input_tensor")
    if column.dtype.is_integer != tensor.dtype.is_integer:
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: "
                         f"{column.key}, column dtype: {column.dtype}, tensor dtype: "
                         f"{tensor.dtype}")
    return tensor


def _looked_up(column, inputs, make_table) -> SparseTensor:
    tensor = _sparse_input(column, inputs)
    key_dtype = column.dtype
    if tensor.dtype.is_integer:
        key_dtype = dtypes.int64
        tensor = SparseTensor(tensor.indices, math_ops.cast(tensor.values, dtypes.int64),
                              tensor.dense_shape)
    return make_table(key_dtype).lookup(tensor)


class _IdsOnly:
    """Columns whose transformed feature is the id tensor itself, with no weights."""

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        return CategoricalColumn.IdWeightPair(inputs.get(self), None)


class VocabularyListCategoricalColumn(
        _IdsOnly, CategoricalColumn,
        collections.namedtuple("VocabularyListCategoricalColumn",
                               ("key", "vocabulary_list", "dtype", "default_value",
                                "num_oov_buckets"))):
    """See ``categorical_column_with_vocabulary_list``."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: VarLenFeature(self.dtype)})
    _num_buckets = property(lambda self: len(self.vocabulary_list) + self.num_oov_buckets)

    def _transform_feature(self, inputs):
        return _looked_up(self, inputs, lambda key_dtype: index_table_from_tensor(
            vocabulary_list=tuple(self.vocabulary_list), default_value=self.default_value,
            num_oov_buckets=self.num_oov_buckets, dtype=key_dtype, name=f"{self.key}_lookup"))


class VocabularyFileCategoricalColumn(
        _IdsOnly, CategoricalColumn,
        collections.namedtuple("VocabularyFileCategoricalColumn",
                               ("key", "vocabulary_file", "vocabulary_size", "num_oov_buckets",
                                "dtype", "default_value"))):
    """See ``categorical_column_with_vocabulary_file``."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: VarLenFeature(self.dtype)})
    _num_buckets = property(lambda self: self.vocabulary_size + self.num_oov_buckets)

    def _transform_feature(self, inputs):
        return _looked_up(self, inputs, lambda key_dtype: index_table_from_file(
            vocabulary_file=self.vocabulary_file, num_oov_buckets=self.num_oov_buckets,
            vocab_size=self.vocabulary_size, default_value=self.default_value,
            key_dtype=key_dtype, name=f"{self.key}_lookup"))


class IdentityCategoricalColumn(
        _IdsOnly, CategoricalColumn,
        collections.namedtuple("IdentityCategoricalColumn",
                               ("key", "num_buckets", "default_value"))):
    """See ``categorical_column_with_identity``."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: VarLenFeature(dtypes.int64)})
    # The field num_buckets (index 1) is read through CategoricalColumn.num_buckets.
    _num_buckets = property(lambda self: tuple.__getitem__(self, 1))

    def _transform_feature(self, inputs):
        tensor = to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        if not tensor.dtype.is_integer:
            raise ValueError(f"Invalid input, not integer. key: {self.key} dtype: "
                             f"{tensor.dtype}")
        values = tensor.values
        if values.dtype != dtypes.int64:
            values = math_ops.cast(values, dtypes.int64, name="values")
        if self.default_value is not None:
            out_of_range = math_ops.logical_or(
                math_ops.less(values, 0), math_ops.greater_equal(values, self._num_buckets),
                name="out_of_range")
            values = where(out_of_range, array_ops.fill(
                array_ops.shape(values), array_ops.constant(self.default_value, dtypes.int64),
                name="default_values"), values)
        return SparseTensor(tensor.indices, values, tensor.dense_shape)


class HashedCategoricalColumn(
        _IdsOnly, CategoricalColumn,
        collections.namedtuple("HashedCategoricalColumn", ("key", "hash_bucket_size", "dtype"))):
    """See ``categorical_column_with_hash_bucket``."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: VarLenFeature(self.dtype)})
    _num_buckets = property(lambda self: self.hash_bucket_size)

    def _transform_feature(self, inputs):
        tensor = _sparse_input(self, inputs)
        values = tensor.values if self.dtype == dtypes.string else as_string(tensor.values)
        ids = string_to_hash_bucket_fast(values, self.hash_bucket_size, name="lookup")
        return SparseTensor(tensor.indices, ids, tensor.dense_shape)


class WeightedCategoricalColumn(
        CategoricalColumn,
        collections.namedtuple("WeightedCategoricalColumn",
                               ("categorical_column", "weight_feature_key", "dtype"))):
    """See ``weighted_categorical_column``."""

    @property
    def name(self):
        return f"{self.categorical_column.name}_weighted_by_{self.weight_feature_key}"

    @property
    def _parse_example_spec(self):
        config = dict(self.categorical_column._parse_example_spec)
        if self.weight_feature_key in config:
            raise ValueError(f"Parse config {config[self.weight_feature_key]} already exists for "
                             f"{self.weight_feature_key}.")
        config[self.weight_feature_key] = VarLenFeature(self.dtype)
        return config

    _num_buckets = property(lambda self: self.categorical_column._num_buckets)

    def _transform_feature(self, inputs):
        weights = inputs.get(self.weight_feature_key)
        if self.dtype != weights.dtype.base_dtype:
            raise ValueError(f"Bad dtype, expected {self.dtype}, but got {weights.dtype}.")
        if not isinstance(weights, SparseTensor):
            weights = to_sparse_input_and_drop_ignore_values(weights, ignore_value=0.0)
        if not weights.dtype.is_floating:
            weights = SparseTensor(weights.indices, math_ops.cast(weights.values, dtypes.float32),
                                   weights.dense_shape)
        return inputs.get(self.categorical_column), weights

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        ids, weights = inputs.get(self)
        return CategoricalColumn.IdWeightPair(ids, weights)


class CrossedColumn(
        _IdsOnly, CategoricalColumn,
        collections.namedtuple("CrossedColumn", ("keys", "hash_bucket_size", "hash_key"))):
    """See ``crossed_column``."""

    @property
    def name(self):
        return "_X_".join(sorted(key.name if isinstance(key, FeatureColumn) else key
                                 for key in _leaf_keys(self)))

    @property
    def _parse_example_spec(self):
        config = {}
        for key in self.keys:
            if isinstance(key, FeatureColumn):
                config.update(key._parse_example_spec)
            else:
                config[key] = VarLenFeature(dtypes.string)
        return config

    _num_buckets = property(lambda self: self.hash_bucket_size)

    def _transform_feature(self, inputs):
        features = []
        for key in _leaf_keys(self):
            if isinstance(key, str):
                features.append(inputs.get(key))
            elif isinstance(key, CategoricalColumn):
                ids_and_weights = key._get_sparse_tensors(inputs)
                if ids_and_weights.weight_tensor is not None:
                    raise ValueError(f"crossed_column does not support weight_tensor, but the "
                                     f"given column populates weight_tensor. Given column: "
                                     f"{key.name}")
                features.append(ids_and_weights.id_tensor)
            else:
                raise ValueError(f"Unsupported column type. Given: {key}")
        return sparse_cross_hashed(features, num_buckets=self.hash_bucket_size,
                                   hash_key=self.hash_key)


def _leaf_keys(cross: CrossedColumn) -> list:
    """The keys of ``cross`` with nested crosses expanded."""
    keys = []
    for key in cross.keys:
        keys.extend(_leaf_keys(key) if isinstance(key, CrossedColumn) else [key])
    return keys


# -- constructors ----------------------------------------------------------------------------------
def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1,
                                            num_oov_buckets=0):
    """Ids from an in-memory vocabulary: a value's position in ``vocabulary_list``; other
    values get ``default_value``, or one of ``num_oov_buckets`` hashed buckets after it."""
    if vocabulary_list is None or len(vocabulary_list) < 1:
        raise ValueError(f"vocabulary_list {vocabulary_list} must be non-empty, column_name: "
                         f"{key}")
    if len(set(vocabulary_list)) != len(vocabulary_list):
        raise ValueError(f"Duplicate keys in vocabulary_list {vocabulary_list}, column_name: "
                         f"{key}")
    vocabulary_dtype = dtypes.string if isinstance(vocabulary_list[0], (str, bytes)) \
        else dtypes.int64
    if num_oov_buckets:
        if default_value != -1:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    _check_string_or_int(vocabulary_dtype, f"column_name: {key} vocabulary")
    if dtype is None:
        dtype = vocabulary_dtype
    dtype = dtypes.as_dtype(dtype)
    if dtype.is_integer != vocabulary_dtype.is_integer:
        raise ValueError(f"dtype {dtype} and vocabulary dtype {vocabulary_dtype} do not match, "
                         f"column_name: {key}")
    _check_string_or_int(dtype, f"column_name: {key}")
    _check_key(key)
    return VocabularyListCategoricalColumn(key=key, vocabulary_list=tuple(vocabulary_list),
                                           dtype=dtype, default_value=default_value,
                                           num_oov_buckets=num_oov_buckets)


def _count_lines(path: str) -> int:
    with GFile(path, "rb") as f:
        return sum(1 for _ in f)


def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None,
                                            num_oov_buckets=0, default_value=None,
                                            dtype=dtypes.string):
    """Ids from a vocabulary file, one value per line (its line number is its id); the size
    is the file's number of lines when ``vocabulary_size`` is None."""
    if not vocabulary_file:
        raise ValueError(f"Missing vocabulary_file in {key}.")
    if vocabulary_size is None:
        vocabulary_size = _count_lines(vocabulary_file)
    if vocabulary_size < 1:
        raise ValueError(f"Invalid vocabulary_size in {key}.")
    if num_oov_buckets:
        if default_value is not None:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    dtype = dtypes.as_dtype(dtype)
    _check_string_or_int(dtype, f"column_name: {key}")
    _check_key(key)
    return VocabularyFileCategoricalColumn(
        key=key, vocabulary_file=vocabulary_file, vocabulary_size=vocabulary_size,
        num_oov_buckets=0 if num_oov_buckets is None else num_oov_buckets,
        default_value=-1 if default_value is None else default_value, dtype=dtype)


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """Integer values as their own ids, in [0, num_buckets); others become ``default_value``
    (None: they are an error in TensorFlow's lookups downstream)."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets {num_buckets} < 1, column_name {key}")
    if default_value is not None and (default_value < 0 or default_value >= num_buckets):
        raise ValueError(f"default_value {default_value} not in range [0, {num_buckets}), "
                         f"column_name {key}")
    _check_key(key)
    return IdentityCategoricalColumn(key=key, num_buckets=num_buckets,
                                     default_value=default_value)


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=dtypes.string):
    """Ids by hashing: Fingerprint64(value) % hash_bucket_size, integers as their text."""
    if hash_bucket_size is None:
        raise ValueError(f"hash_bucket_size must be set. key: {key}")
    if hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be at least 1. hash_bucket_size: "
                         f"{hash_bucket_size}, key: {key}")
    dtype = dtypes.as_dtype(dtype)
    _check_string_or_int(dtype, f"column_name: {key}")
    _check_key(key)
    return HashedCategoricalColumn(key=key, hash_bucket_size=hash_bucket_size, dtype=dtype)


def weighted_categorical_column(categorical_column, weight_feature_key, dtype=dtypes.float32):
    """``categorical_column``'s ids, each weighted by the value of ``weight_feature_key`` at
    the same position."""
    dtype = dtypes.as_dtype(dtype)
    if dtype is None or not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype {dtype} is not convertible to float.")
    return WeightedCategoricalColumn(categorical_column=categorical_column,
                                     weight_feature_key=weight_feature_key, dtype=dtype)


def crossed_column(keys, hash_bucket_size, hash_key=None):
    """The hashed cross of ``keys`` (feature names, categorical columns other than hashed
    ones, crosses): ids in [0, hash_bucket_size), TensorFlow's SparseCross hashing."""
    if not hash_bucket_size or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be > 1. hash_bucket_size: {hash_bucket_size}")
    if not keys or len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1. Given: {keys}")
    for key in keys:
        if not isinstance(key, (str, CategoricalColumn)):
            raise ValueError(f"Unsupported key type. All keys must be either string, or "
                             f"categorical column except HashedCategoricalColumn. Given: {key}")
        if isinstance(key, HashedCategoricalColumn):
            raise ValueError(f"categorical_column_with_hash_bucket is not supported for "
                             f"crossing. Hashing before crossing will increase probability of "
                             f"collision. Instead, use the feature name as a string. Given: "
                             f"{key}")
    return CrossedColumn(keys=tuple(keys), hash_bucket_size=hash_bucket_size, hash_key=hash_key)
