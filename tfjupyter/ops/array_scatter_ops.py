"""Array ops that scatter and gather by index tuples: unsorted_segment_sum, gather_nd,
scatter_nd, sparse_to_dense. Re-exported by ``array_ops``."""
from __future__ import annotations

from typing import Optional

from ..framework.ops import Tensor, convert_to_tensor
from ..framework.ops import op as _new_op
from ..framework.registry import register_gradient, register_op
from ..framework.tensor_shape import TensorShape, list_str
from .array_ops import (_check_index_dtype, _check_rank, _const_int, _is_tensorlike,
                        _shape_from_tensor, _to_int_tensor, constant, expand_dims, reshape,
                        shape, zeros_like)
from .array_index_ops import gather, where

__all__ = ["unsorted_segment_sum", "gather_nd", "scatter_nd", "sparse_to_dense"]


def _index_tensor(value, what: str) -> Tensor:
    return convert_to_tensor(value) if _is_tensorlike(value) else _to_int_tensor(value, what, what)


# -- UnsortedSegmentSum ---------------------------------------------------------------------------------
@register_op("UnsortedSegmentSum")
def _unsorted_segment_sum_shape(op):
    data, ids, num_t = op.inputs
    _check_index_dtype(op, ids, "segment_ids")
    _check_index_dtype(op, num_t, "num_segments")
    _check_rank(op, num_t, (0,), "num_segments")
    num = _const_int(num_t)
    if data.shape.ndims is None or ids.shape.ndims is None:
        return [(data.dtype, TensorShape(None))]
    k = ids.shape.ndims
    if not data.shape[:k].is_compatible_with(ids.shape):
        raise ValueError(f"Shapes {list_str(data.shape)} and {list_str(ids.shape)} are "
                         f"incompatible: segment_ids.shape must be a prefix of data.shape for "
                         f"'{op.name}' (op: 'UnsortedSegmentSum')")
    return [(data.dtype, TensorShape([num]).concatenate(data.shape[k:]))]


@register_gradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    # Segment ids < 0 drop their data, so their gradient is zero.
    from .math_ops import greater_equal, maximum
    ids = op.inputs[1]
    gathered = gather(grad, maximum(ids, zeros_like(ids)))
    keep = greater_equal(ids, constant(0, dtype=ids.dtype))
    extra = (grad.shape.ndims - 1) if grad.shape.ndims is not None else None
    if extra is None:
        raise NotImplementedError(f"Gradient of '{op.name}' needs the rank of its output.")
    for _ in range(extra):
        keep = expand_dims(keep, -1)
    return [where(keep, gathered, zeros_like(gathered)), None, None]


def unsorted_segment_sum(data, segment_ids, num_segments, name: Optional[str] = None) -> Tensor:
    """out[i, ...] = sum of data[j..., ...] over the j with segment_ids[j...] == i; negative
    ids are dropped."""
    d = convert_to_tensor(data)
    ids = _index_tensor(segment_ids, "segment_ids")
    num = _to_int_tensor(num_segments, "num_segments", "num_segments")
    return _new_op("UnsortedSegmentSum", [d, ids, num], name=name or "UnsortedSegmentSum").outputs[0]



# -- GatherNd, ScatterNd -------------------------------------------------------------------------------
def _nd_index_depth(op, indices: Tensor) -> Optional[int]:
    """K, the length of each index tuple (the last dimension of ``indices``)."""
    if indices.shape.ndims == 0:
        raise ValueError(f"indices must be at least rank 1 for '{op.name}' (op: '{op.type}')")
    return indices.shape.as_list()[-1] if indices.shape.ndims is not None else None


@register_op("GatherNd")
def _gather_nd_shape(op):
    params, indices = op.inputs
    _check_index_dtype(op, indices, "indices")
    k = _nd_index_depth(op, indices)
    if k is None or params.shape.ndims is None:
        return [(params.dtype, TensorShape(None))]
    if k > params.shape.ndims:
        raise ValueError(f"indices.shape[-1] must be <= params.rank, but saw indices shape: "
                         f"{list_str(indices.shape)} and params shape: {list_str(params.shape)} "
                         f"for '{op.name}' (op: 'GatherNd')")
    return [(params.dtype, indices.shape[:-1].concatenate(params.shape[k:]))]


@register_gradient("GatherNd")
def _gather_nd_grad(op, grad):
    params, indices = op.inputs
    return [scatter_nd(indices, grad, shape(params, out_type=indices.dtype)), None]


def gather_nd(params, indices, name: Optional[str] = None) -> Tensor:
    """Slices of ``params`` at index tuples: out[i...] = params[indices[i...]] (the last
    dimension of ``indices`` holds the tuples)."""
    p = convert_to_tensor(params)
    return _new_op("GatherNd", [p, _index_tensor(indices, "indices")],
                   name=name or "GatherNd").outputs[0]


@register_op("ScatterNd")
def _scatter_nd_shape(op):
    indices, updates, shape_t = op.inputs
    _check_index_dtype(op, indices, "indices")
    _check_index_dtype(op, shape_t, "shape")
    _check_rank(op, shape_t, (1,), "shape")
    out = _shape_from_tensor(shape_t)
    k = _nd_index_depth(op, indices)
    if k is not None and out.ndims is not None and indices.shape.ndims is not None:
        if k > out.ndims:
            raise ValueError(f"indices.shape[-1] must be <= rank of shape, got {k} > {out.ndims} "
                             f"for '{op.name}' (op: 'ScatterNd')")
        want = indices.shape[:-1].concatenate(out[k:])
        if not updates.shape.is_compatible_with(want):
            raise ValueError(f"The shape of updates must be {list_str(want)}, got "
                             f"{list_str(updates.shape)} for '{op.name}' (op: 'ScatterNd')")
    return [(updates.dtype, out)]


@register_gradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    indices = op.inputs[0]
    return [None, gather_nd(grad, indices), None]


def scatter_nd(indices, updates, shape, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """A zero tensor of ``shape`` with ``updates`` added at the index tuples ``indices``
    (repeated indices add up)."""
    idx = _index_tensor(indices, "indices")
    u = convert_to_tensor(updates)
    shape_t = _to_int_tensor(shape, "shape")
    if shape_t.dtype is not idx.dtype:
        from .math_ops import cast
        shape_t = cast(shape_t, idx.dtype)
    return _new_op("ScatterNd", [idx, u, shape_t], name=name or "ScatterNd").outputs[0]


# TensorFlow's tensor_scatter_nd_update: graphs written for TensorFlow hold it for our SetRow
# (framework/tf_layout.py), and tfjupyter reads them back.
@register_op("TensorScatterUpdate")
def _tensor_scatter_update_shape(op):
    tensor, indices, updates = op.inputs
    _check_index_dtype(op, indices, "indices")
    if updates.dtype is not tensor.dtype:
        raise TypeError(f"TensorScatterUpdate '{op.name}': updates are {updates.dtype.name}, the "
                        f"tensor {tensor.dtype.name}")
    k = _nd_index_depth(op, indices)
    if k is not None and tensor.shape.ndims is not None and indices.shape.ndims is not None:
        if k > tensor.shape.ndims:
            raise ValueError(f"indices.shape[-1] must be <= rank of tensor, got {k} > "
                             f"{tensor.shape.ndims} for '{op.name}' (op: 'TensorScatterUpdate')")
        want = indices.shape[:-1].concatenate(tensor.shape[k:])
        if not updates.shape.is_compatible_with(want):
            raise ValueError(f"The shape of updates must be {list_str(want)}, got "
                             f"{list_str(updates.shape)} for '{op.name}' "
                             "(op: 'TensorScatterUpdate')")
    return [(tensor.dtype, tensor.shape)]


@register_gradient("TensorScatterUpdate")
def _tensor_scatter_update_grad(op, grad):
    from .array_ops import zeros_like
    _, indices, updates = op.inputs
    kept = _new_op("TensorScatterUpdate", [grad, indices, zeros_like(updates)],
                   name="TensorScatterUpdate").outputs[0]
    return [kept, None, gather_nd(grad, indices)]


# -- SparseToDense -------------------------------------------------------------------------------------------
@register_op("SparseToDense")
def _sparse_to_dense_shape(op):
    indices, shape_t, values, default = op.inputs
    _check_index_dtype(op, indices, "sparse_indices")
    _check_rank(op, indices, (0, 1, 2), "sparse_indices")
    _check_rank(op, shape_t, (0, 1), "output_shape")
    _check_rank(op, values, (0, 1), "sparse_values")
    _check_rank(op, default, (0,), "default_value")
    if values.dtype is not default.dtype:
        raise TypeError(f"sparse_values and default_value of '{op.name}' (op: 'SparseToDense') "
                        f"must have the same dtype, got {values.dtype.name} and "
                        f"{default.dtype.name}")
    out = _shape_from_tensor(shape_t) if shape_t.shape.ndims == 1 else TensorShape([_const_int(shape_t)])
    return [(values.dtype, out)]


@register_gradient("SparseToDense")
def _sparse_to_dense_grad(op, grad):
    from .math_ops import reduce_sum, subtract
    indices, _, values, _ = op.inputs
    # sparse_indices may be a scalar, a vector (indices into a 1-D output) or [N, rank].
    rank = indices.shape.ndims
    tuples = indices if rank == 2 else expand_dims(indices, -1) if rank == 1 else \
        reshape(indices, [1, 1])
    values_grad = gather_nd(grad, tuples)
    if values.shape.ndims == 0:
        values_grad = reduce_sum(values_grad)
    default_grad = subtract(reduce_sum(grad), reduce_sum(values_grad))
    return [None, None, values_grad, default_grad]


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices: bool = True, name: Optional[str] = None) -> Tensor:
    """A dense tensor of ``output_shape`` holding ``default_value`` except at the (sorted,
    unique) ``sparse_indices``, which get ``sparse_values``."""
    idx = _index_tensor(sparse_indices, "sparse_indices")
    shape_t = _to_int_tensor(output_shape, "output_shape", "output_shape")
    if shape_t.dtype is not idx.dtype:
        from .math_ops import cast
        shape_t = cast(shape_t, idx.dtype)
    values = convert_to_tensor(sparse_values)
    default = convert_to_tensor(default_value, dtype=values.dtype)
    return _new_op("SparseToDense", [idx, shape_t, values, default],
                   {"validate_indices": bool(validate_indices)},
                   name=name or "SparseToDense").outputs[0]
