"""TensorFlow 1.x's ``sparse_ops``, the part parsing and feature columns need: sparse tensors to
dense ones, ``sparse_reshape`` and ``sparse_retain`` (compositions of dense ops on the three
tensors of a SparseTensor: row-major positions, re-split by the new shape), and the
``sparse_segment_sum``/``_mean``/``_sqrt_n`` ops that embedding lookups combine rows with
(kernels in ``kernels/cpu/sparse_segment_kernels.py``; gradients as TensorFlow's, dense). The
cross of sparse features is ``sparse_cross_ops.py``."""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes as _dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import register_gradient, register_op
from ..framework.tensor_shape import TensorShape
from ..framework.sparse_tensor import SparseTensor
from . import array_ops, math_ops, reduction_ops
from ._shapes import check_dtype_in
from .array_index_ops import boolean_mask, gather, where
from .array_scatter_ops import sparse_to_dense, unsorted_segment_sum

__all__ = ["sparse_tensor_to_dense", "sparse_reshape", "sparse_retain", "sparse_segment_sum",
           "sparse_segment_mean", "sparse_segment_sqrt_n"]

_SEGMENT_OPS = ("SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN")


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices: bool = True,
                           name: Optional[str] = None) -> Tensor:
    """The dense tensor of ``sp_input.dense_shape``: its values at its indices,
    ``default_value`` elsewhere (None: 0, or b"" for strings)."""
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"sparse_tensor_to_dense: sp_input must be a SparseTensor, got "
                        f"{type(sp_input).__name__}")
    if default_value is None:
        default_value = b"" if sp_input.dtype is _dtypes.string else 0
    with name_scope(name, "SparseToDense", [sp_input.indices, sp_input.values]):
        return sparse_to_dense(sp_input.indices, sp_input.dense_shape, sp_input.values,
                               default_value, validate_indices=validate_indices,
                               name="SparseToDense")


def _check_sparse(sp_input, what: str) -> None:
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"{what}: sp_input must be a SparseTensor, got "
                        f"{type(sp_input).__name__}")


def _row_major_strides(shape: Tensor) -> Tensor:
    """stride[i] = prod(shape[i+1:]): a position's linear offset is sum(index * stride)."""
    return math_ops.cast(reduction_ops.cumprod(shape, exclusive=True, reverse=True),
                         _dtypes.int64)


def sparse_reshape(sp_input, shape, name: Optional[str] = None) -> SparseTensor:
    """The same values at the same row-major positions in a dense shape of ``shape`` (at most
    one -1, inferred), as ``tf.sparse_reshape``."""
    _check_sparse(sp_input, "sparse_reshape")
    with name_scope(name, "SparseReshape", [sp_input.indices, sp_input.dense_shape]):
        old_shape = sp_input.dense_shape
        new_shape = math_ops.cast(array_ops.stack(shape) if isinstance(shape, (list, tuple))
                                  else shape, _dtypes.int64)
        total = reduction_ops.reduce_prod(old_shape)
        known = reduction_ops.reduce_prod(where(math_ops.less(new_shape, 0),
                                                array_ops.ones_like(new_shape), new_shape))
        inferred = math_ops.floordiv(total, math_ops.maximum(known, 1))
        new_shape = where(math_ops.less(new_shape, 0),
                          array_ops.fill(array_ops.shape(new_shape), inferred), new_shape,
                          name="new_shape")
        positions = reduction_ops.reduce_sum(
            math_ops.multiply(sp_input.indices, _row_major_strides(old_shape)), 1,
            keepdims=True)
        indices = math_ops.floormod(math_ops.floordiv(positions, _row_major_strides(new_shape)),
                                    new_shape, name="indices")
        return SparseTensor(indices, sp_input.values, new_shape)


def sparse_retain(sp_input, to_retain, name: Optional[str] = None) -> SparseTensor:
    """The values of ``sp_input`` where the bool vector ``to_retain`` is true, with their
    indices; the dense shape is kept."""
    _check_sparse(sp_input, "sparse_retain")
    with name_scope(name, "SparseRetain", [sp_input.values, to_retain]):
        keep = convert_to_tensor(to_retain, dtype=_dtypes.bool, name="to_retain")
        if keep.shape.ndims not in (None, 1):
            raise ValueError(f"sparse_retain: to_retain must be a vector, got shape {keep.shape}")
        return SparseTensor(boolean_mask(sp_input.indices, keep),
                            boolean_mask(sp_input.values, keep), sp_input.dense_shape)


# -- SparseSegmentSum / Mean / SqrtN ---------------------------------------------------------------
def _sparse_segment_shape(op):
    data, indices, segment_ids = op.inputs
    for tensor, what in ((indices, "indices"), (segment_ids, "segment_ids")):
        check_dtype_in(op, tensor, (_dtypes.int32, _dtypes.int64))
        if tensor.shape.ndims not in (None, 1):
            raise ValueError(f"{op.type} '{op.name}': {what} must be a vector, got shape "
                             f"{tensor.shape}")
    if op.type != "SparseSegmentSum" and not data.dtype.is_floating:
        raise TypeError(f"{op.type} '{op.name}': data must be floating point, got "
                        f"{data.dtype.name}")
    if data.shape.ndims is None:
        return [(data.dtype, TensorShape(None))]
    if data.shape.ndims < 1:
        raise ValueError(f"{op.type} '{op.name}': data must have rank >= 1, got a scalar")
    return [(data.dtype, TensorShape([None]).concatenate(data.shape[1:]))]


for _type in _SEGMENT_OPS:
    register_op(_type)(_sparse_segment_shape)


@register_gradient("SparseSegmentSum")
@register_gradient("SparseSegmentMean")
@register_gradient("SparseSegmentSqrtN")
def _sparse_segment_grad(op, grad):
    """Each selected row of data gets its segment's gradient (scaled by 1/n or 1/sqrt(n) for
    the mean and sqrt-n), summed over the times it was selected: a dense gradient."""
    data, indices, segment_ids = op.inputs
    if op.type != "SparseSegmentSum":
        counts = unsorted_segment_sum(array_ops.ones_like(segment_ids, dtype=grad.dtype),
                                      segment_ids, array_ops.shape(grad)[0])
        counts = math_ops.maximum(counts, 1.0)
        scale = math_ops.reciprocal(counts if op.type == "SparseSegmentMean"
                                    else math_ops.sqrt(counts))
        for _ in range(max((grad.shape.ndims or 1) - 1, 0)):
            scale = array_ops.expand_dims(scale, -1)
        grad = math_ops.multiply(grad, scale)
    rows = array_ops.shape(data)[0]
    return [unsorted_segment_sum(gather(grad, segment_ids), indices, rows), None, None]


def _sparse_segment(op_type: str, data, indices, segment_ids, name: Optional[str]) -> Tensor:
    data = convert_to_tensor(data, name="data")
    indices = convert_to_tensor(indices, name="indices")
    segment_ids = convert_to_tensor(segment_ids, name="segment_ids")
    return _new_op(op_type, [data, indices, segment_ids], name=name or op_type).outputs[0]


def sparse_segment_sum(data, indices, segment_ids, name: Optional[str] = None) -> Tensor:
    """out[s] = sum of data[indices[i]] over the i with segment_ids[i] == s; segment ids
    sorted, the output has segment_ids[-1] + 1 rows (empty segments are zeros)."""
    return _sparse_segment("SparseSegmentSum", data, indices, segment_ids, name)


def sparse_segment_mean(data, indices, segment_ids, name: Optional[str] = None) -> Tensor:
    """sparse_segment_sum divided by each segment's number of rows."""
    return _sparse_segment("SparseSegmentMean", data, indices, segment_ids, name)


def sparse_segment_sqrt_n(data, indices, segment_ids, name: Optional[str] = None) -> Tensor:
    """sparse_segment_sum divided by the square root of each segment's number of rows."""
    return _sparse_segment("SparseSegmentSqrtN", data, indices, segment_ids, name)
