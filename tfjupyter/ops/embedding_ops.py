"""``tf.nn.embedding_lookup_sparse`` and ``safe_embedding_lookup_sparse`` (TensorFlow 1.x's
``embedding_ops``): for each row of a sparse tensor of ids, the combination ("sum", "mean",
"sqrtn") of the embedding rows of its ids, optionally weighted. Feature columns build their
embeddings and linear models' weighted sums with them.

As TensorFlow, the distinct ids are looked up once (``unique``, then ``embedding_lookup``: the
gradient is an IndexedSlices over those rows), and combined per row by the SparseSegment* ops
(weighted: gathered, scaled and summed with ``unsorted_segment_sum``)."""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.sparse_tensor import SparseTensor
from ..variables import PartitionedVariable
from . import array_ops, math_ops, reduction_ops
from .array_index_ops import gather, unique, where
from .array_scatter_ops import unsorted_segment_sum
from .math_compat_ops import div_no_nan
from .sparse_ops import (sparse_reshape, sparse_retain, sparse_segment_mean,
                         sparse_segment_sqrt_n, sparse_segment_sum)

__all__ = ["embedding_lookup_sparse", "safe_embedding_lookup_sparse"]

_COMBINERS = ("mean", "sqrtn", "sum")


def _check_combiner(combiner) -> None:
    if combiner not in _COMBINERS:
        raise ValueError('combiner must be one of "mean", "sqrtn" or "sum", got '
                         f"{combiner!r}")


def _params_list(params):
    shards = list(params) if isinstance(params, (list, tuple, PartitionedVariable)) \
        else [params]
    if not shards:
        raise ValueError("Missing embedding_weights.")
    return shards


def _combine(params, ids: Tensor, segments: Tensor, weights, combiner: str,
             partition_strategy: str, max_norm) -> Tensor:
    """The combination of the embeddings of ``ids`` per (sorted) segment: [last segment + 1,
    dim], as TensorFlow's embedding_lookup_sparse computes it."""
    from ..nn import embedding_lookup     # tf.nn imports this module: not at import time
    distinct, position = unique(ids)
    embeddings = embedding_lookup(params, distinct, partition_strategy=partition_strategy,
                                  max_norm=max_norm)
    if weights is None:
        reduce = {"sum": sparse_segment_sum, "mean": sparse_segment_mean,
                  "sqrtn": sparse_segment_sqrt_n}[combiner]
        return reduce(embeddings, position, segments)
    weights = math_ops.cast(weights, embeddings.dtype)
    embeddings = math_ops.multiply(gather(embeddings, position), array_ops.expand_dims(weights, -1))
    rows = reduction_ops.reduce_max(array_ops.concat([segments + 1, [0]], 0))
    total = unsorted_segment_sum(embeddings, segments, rows)
    if combiner == "sum":
        return total
    norm = unsorted_segment_sum(weights if combiner == "mean" else math_ops.square(weights),
                                segments, rows)
    if combiner == "sqrtn":
        norm = math_ops.sqrt(norm)
    return div_no_nan(total, array_ops.expand_dims(norm, -1))


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy: str = "mod",
                            name: Optional[str] = None, combiner: Optional[str] = None,
                            max_norm: Optional[float] = None) -> Tensor:
    """For each row r of the 2-D SparseTensor ``sp_ids``, the combination of params[id] over
    its ids (weighted by ``sp_weights``' values, a SparseTensor of the same indices, or None
    for 1): [number of rows up to the last non-empty one, dim], as in TensorFlow."""
    combiner = "mean" if combiner is None else combiner
    _check_combiner(combiner)
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids).__name__}")
    if sp_weights is not None and not isinstance(sp_weights, SparseTensor):
        raise TypeError(f"sp_weights must be either None or SparseTensor, got "
                        f"{type(sp_weights).__name__}")
    params = _params_list(params)
    with name_scope(name, "embedding_lookup_sparse", params + [sp_ids]):
        segments = math_ops.cast(sp_ids.indices[:, 0], dtypes.int32)
        weights = None if sp_weights is None else sp_weights.values
        return _combine(params, sp_ids.values, segments, weights, combiner, partition_strategy,
                        max_norm)


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
                                 combiner: str = "mean", default_id: Optional[int] = None,
                                 name: Optional[str] = None, partition_strategy: str = "div",
                                 max_norm: Optional[float] = None) -> Tensor:
    """embedding_lookup_sparse over ``sparse_ids`` of any rank >= 2 (the last dimension holds
    each entry's ids), dropping ids < 0 and weights <= 0: shape dense_shape[:-1] + [dim]. An
    entry with no id left gets params[default_id], or zeros when ``default_id`` is None."""
    _check_combiner(combiner)
    weights_list = _params_list(embedding_weights)
    with name_scope(name, "embedding_lookup", weights_list + [sparse_ids]) as scope:
        if not isinstance(sparse_ids, SparseTensor):
            raise TypeError(f"sparse_ids must be SparseTensor, got {type(sparse_ids).__name__}")
        weights_list = [convert_to_tensor(w) for w in weights_list]
        # Every entry of the leading dimensions becomes one row of a 2-D lookup.
        original_shape = sparse_ids.dense_shape
        entries_shape = original_shape[:-1]
        num_rows = reduction_ops.reduce_prod(entries_shape)
        flat_shape = array_ops.stack([num_rows, original_shape[-1]])
        ids = sparse_reshape(sparse_ids, flat_shape)
        if sparse_weights is not None:
            sparse_weights = sparse_reshape(sparse_weights, flat_shape)
        keep = math_ops.greater_equal(ids.values, 0)
        if sparse_weights is not None:
            keep = math_ops.logical_and(keep, math_ops.greater(sparse_weights.values, 0))
            sparse_weights = sparse_retain(sparse_weights, keep)
        ids = sparse_retain(ids, keep)
        segments = math_ops.cast(ids.indices[:, 0], dtypes.int32)
        result = _combine(weights_list, ids.values, segments,
                          None if sparse_weights is None else sparse_weights.values, combiner,
                          partition_strategy, max_norm)
        # Entries after the last one with an id are zeros too.
        missing = math_ops.cast(num_rows, dtypes.int32) - array_ops.shape(result)[0]
        result = array_ops.pad(result, array_ops.stack([array_ops.stack([0, missing]), [0, 0]]))
        if default_id is not None:
            from ..nn import embedding_lookup
            has_ids = math_ops.greater(unsorted_segment_sum(
                array_ops.ones_like(segments), segments, math_ops.cast(num_rows, dtypes.int32)), 0)
            default = embedding_lookup(weights_list, array_ops.constant([default_id], dtypes.int64),
                                       partition_strategy=partition_strategy)
            result = where(has_ids, result, array_ops.tile(default, array_ops.stack(
                [math_ops.cast(num_rows, dtypes.int32), 1])))
        dim = array_ops.shape(result, out_type=dtypes.int64)[1:]
        return array_ops.reshape(result, array_ops.concat([entries_shape, dim], 0), name=scope)
