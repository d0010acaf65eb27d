"""``tf.IndexedSlices``: a tensor given by some of its slices along the first dimension.

- ``values``: ``[N, d1, ..., dk]``, the slices;
- ``indices``: int32/int64 ``[N]``, the row of the dense tensor each slice belongs to (rows may
  repeat: the dense tensor is the sum of the slices of each row);
- ``dense_shape``: ``[rank]``, the shape of the dense tensor, or None.

The gradient of a gather with respect to its params is one (``_gather_grad``): a large
embedding's gradient then costs the looked-up rows, and the optimizers apply it row by row.
Any op that takes one as an ordinary tensor densifies it (``convert_to_tensor``, below), as
in TensorFlow 1.x, warning when the dense tensor may be large. ``Session.run`` of an
IndexedSlices returns an ``IndexedSlicesValue``.
"""
from __future__ import annotations

import collections
import warnings
from typing import Optional

import numpy as np

from . import dtypes
from .ops import Tensor, convert_to_tensor, register_tensor_conversion_function
from .tensor_shape import TensorShape, unknown_shape

__all__ = ["IndexedSlices", "IndexedSlicesValue"]

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue",
                                            ["values", "indices", "dense_shape"])

# TensorFlow's threshold (_LARGE_SPARSE_NUM_ELEMENTS) for warning about a densification.
LARGE_SPARSE_NUM_ELEMENTS = 100_000_000


class IndexedSlices:
    """Slices ``values`` of a dense tensor of shape ``dense_shape`` at rows ``indices``."""

    def __init__(self, values, indices, dense_shape=None):
        values = convert_to_tensor(values, name="values")
        indices = convert_to_tensor(indices, name="indices")
        if indices.dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"IndexedSlices indices must be int32 or int64, got "
                            f"{indices.dtype.name}")
        if indices.shape.ndims not in (None, 1):
            raise ValueError(f"IndexedSlices indices must be a vector, got shape {indices.shape}")
        if dense_shape is not None:
            if isinstance(dense_shape, Tensor) or hasattr(dense_shape, "_as_graph_element"):
                dense_shape = convert_to_tensor(dense_shape, name="dense_shape")
            else:  # int32 as tf.shape() gives, unless a dimension needs int64
                dims = np.asarray(dense_shape, np.int64)
                big = dims.size and dims.max() >= 2 ** 31
                dense_shape = convert_to_tensor(dims.astype(np.int64 if big else np.int32),
                                                name="dense_shape")
        self._values, self._indices, self._dense_shape = values, indices, dense_shape

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def dense_shape(self) -> Optional[Tensor]:
        return self._dense_shape

    @property
    def name(self) -> str:
        return self._values.name

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def op(self):
        return self._values.op

    @property
    def dtype(self) -> dtypes.DType:
        return self._values.dtype

    @property
    def graph(self):
        return self._values.graph

    def static_dense_shape(self) -> Optional[np.ndarray]:
        """The dense shape when it is known while building the graph (a constant), else None."""
        if self._dense_shape is None:
            return None
        from ..ops.array_ops import _const  # the constant folding of shape arguments
        value = _const(self._dense_shape)
        return None if value is None else np.asarray(value)

    def get_shape(self) -> TensorShape:
        """The dense tensor's static shape: the constant dense_shape, else the values' shape
        with the first dimension unknown."""
        known = self.static_dense_shape()
        if known is not None:
            return TensorShape([int(d) for d in known])
        if self._values.shape.ndims is None:
            return unknown_shape()
        return TensorShape([None]).concatenate(self._values.shape[1:])

    @property
    def shape(self) -> TensorShape:
        return self.get_shape()

    def __neg__(self) -> "IndexedSlices":
        from ..ops.math_ops import negative
        return IndexedSlices(negative(self._values), self._indices, self._dense_shape)

    def __str__(self) -> str:
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape}"
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"

    __repr__ = __str__


def densify(value: IndexedSlices, dtype=None, name: Optional[str] = None,
            as_ref: bool = False) -> Tensor:
    """The dense tensor of an IndexedSlices: the sum of its slices per row (TensorFlow's
    ``_indexed_slices_to_tensor``), with its warning when that tensor may be large."""
    if dtype is not None and dtypes.as_dtype(dtype) is not value.dtype:
        raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for "
                         f"IndexedSlices with dtype {value.dtype.name}")
    if as_ref:
        raise ValueError(f"Tensor conversion requested as a reference for IndexedSlices: {value}")
    if value.dense_shape is None:
        raise ValueError(f"Tensor conversion requested for IndexedSlices without dense_shape: "
                         f"{value}")
    from ..ops.array_scatter_ops import unsorted_segment_sum
    known = value.static_dense_shape()
    if known is None:
        warnings.warn("Converting sparse IndexedSlices to a dense Tensor of unknown shape. "
                      "This may consume a large amount of memory.", stacklevel=3)
        rows = value.dense_shape[0]
    else:
        num_elements = int(np.prod(known, dtype=np.int64))
        if num_elements >= LARGE_SPARSE_NUM_ELEMENTS:
            warnings.warn(f"Converting sparse IndexedSlices to a dense Tensor with "
                          f"{num_elements} elements. This may consume a large amount of "
                          "memory.", stacklevel=3)
        rows = int(known[0])
    return unsorted_segment_sum(value.values, value.indices, rows, name=name)


register_tensor_conversion_function(IndexedSlices, densify)
