"""``tf.SparseTensor``: a sparse tensor as three dense ones (what VarLenFeature parsing returns).

- ``indices``: int64 ``[N, rank]``, the coordinates of the N values, in row-major order;
- ``values``: ``[N]``, the values;
- ``dense_shape``: int64 ``[rank]``, the shape of the dense tensor it stands for.

``Session.run`` of a SparseTensor returns a ``SparseTensorValue`` (a namedtuple of the three
arrays), as in TensorFlow 1.x. Sparse math is not implemented; ``tf.sparse_tensor_to_dense``
turns one into a dense tensor.
"""
from __future__ import annotations

import collections
from . import dtypes
from .ops import Tensor, convert_to_tensor, name_scope
from .tensor_shape import TensorShape, unknown_shape

__all__ = ["SparseTensor", "SparseTensorValue"]

SparseTensorValue = collections.namedtuple("SparseTensorValue",
                                           ["indices", "values", "dense_shape"])


class SparseTensor:
    """A sparse tensor: ``indices`` (int64 [N, rank]), ``values`` ([N]), ``dense_shape``
    (int64 [rank])."""

    def __init__(self, indices, values, dense_shape):
        with name_scope(None, "SparseTensor", [indices, values, dense_shape]):
            indices = convert_to_tensor(indices, dtype=dtypes.int64, name="indices")
            values = convert_to_tensor(values, name="values")
            dense_shape = convert_to_tensor(dense_shape, dtype=dtypes.int64, name="dense_shape")
        if indices.shape.ndims not in (None, 2):
            raise ValueError(f"SparseTensor indices must be a matrix [N, rank], got shape "
                             f"{indices.shape}")
        if values.shape.ndims not in (None, 1):
            raise ValueError(f"SparseTensor values must be a vector [N], got shape "
                             f"{values.shape}")
        if dense_shape.shape.ndims not in (None, 1):
            raise ValueError(f"SparseTensor dense_shape must be a vector [rank], got shape "
                             f"{dense_shape.shape}")
        self._indices, self._values, self._dense_shape = indices, values, dense_shape

    @classmethod
    def from_value(cls, value) -> "SparseTensor":
        if isinstance(value, SparseTensor):
            return value
        return cls(value.indices, value.values, value.dense_shape)

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        return self._dense_shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._values.dtype

    @property
    def op(self):
        return self._values.op

    @property
    def graph(self):
        return self._values.graph

    def get_shape(self) -> TensorShape:
        """The static shape: its rank when dense_shape's length is known, its dims unknown."""
        shape_of_shape = self._dense_shape.shape
        rank = None if shape_of_shape.ndims is None else shape_of_shape.as_list()[0]
        return unknown_shape() if rank is None else TensorShape([None] * rank)

    @property
    def shape(self) -> TensorShape:
        return self.get_shape()

    def eval(self, feed_dict=None, session=None) -> SparseTensorValue:
        from ..client.session import get_default_session
        session = session or get_default_session()
        if session is None:
            raise ValueError("Cannot evaluate a SparseTensor using eval(): no default session is "
                             "registered. Use `with sess.as_default()` or pass session=sess")
        return session.run(self, feed_dict)

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self._indices!r}, values={self._values!r}, "
                f"dense_shape={self._dense_shape!r})")


def is_sparse(x) -> bool:
    return isinstance(x, (SparseTensor, SparseTensorValue))
