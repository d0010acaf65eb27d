"""Partitioners (TensorFlow 1.15's ``partitioned_variables``) and how a variable is cut.

A partitioner is ``partitioner(shape=TensorShape, dtype=DType) -> [parts per axis]`` with
more than one part along one axis at most; ``get_variable(partitioner=...)`` (and a
``variable_scope``'s partitioner) then creates ``name/part_0``, ``name/part_1``, ... of
shapes that differ by at most one along that axis, the first ones the larger
(``iter_slices``). Each part's initializer gets a ``PartitionInfo`` (the full shape and the
part's offset): variance-scaling initializers scale by the full variable's fans.
"""
from __future__ import annotations

import math
from typing import Iterator, List, Optional, Sequence, Tuple

from ..framework import dtypes
from ..framework.tensor_shape import TensorShape

__all__ = ["fixed_size_partitioner", "min_max_variable_partitioner",
           "variable_axis_size_partitioner"]


def _axis_size(shape: TensorShape, axis: int) -> int:
    if axis >= len(shape):
        raise ValueError(f"Can not partition variable along axis {axis} when shape is only "
                         f"{shape}")
    return shape.as_list()[axis]


def _element_bytes(dtype, bytes_per_string_element: int) -> int:
    dtype = dtypes.as_dtype(dtype).base_dtype
    return bytes_per_string_element if dtype is dtypes.string else dtype.size


def fixed_size_partitioner(num_shards: int, axis: int = 0):
    """A partitioner cutting ``axis`` into ``num_shards`` parts (fewer if the axis is shorter)."""
    def _partitioner(shape, **unused_args) -> List[int]:
        partitions = [1] * len(shape)
        partitions[axis] = min(num_shards, _axis_size(TensorShape(shape), axis))
        return partitions
    return _partitioner


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0,
                                 min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16):
    """A partitioner giving each part at least ``min_slice_size`` bytes, with at most
    ``max_partitions`` parts (at least one, however small ``max_partitions``)."""
    def _partitioner(shape, dtype) -> List[int]:
        shape = TensorShape(shape)
        size = _axis_size(shape, axis)
        total_bytes = shape.num_elements() * _element_bytes(dtype, bytes_per_string_element)
        partitions = [1] * len(shape)
        partitions[axis] = max(1, min(size, max_partitions,
                                      int(math.ceil(total_bytes / min_slice_size))))
        return partitions
    return _partitioner


def variable_axis_size_partitioner(max_shard_bytes: int, axis: int = 0,
                                   bytes_per_string_element: int = 16,
                                   max_shards: Optional[int] = None):
    """A partitioner keeping each part under ``max_shard_bytes`` (at least one slice of
    ``axis`` per part), with at most ``max_shards`` parts."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError(
            "Both max_shard_bytes and bytes_per_string_element must be positive. Currently, "
            f"max_shard_bytes is {max_shard_bytes} and bytes_per_string_element is "
            f"{bytes_per_string_element}")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype) -> List[int]:
        if not isinstance(shape, TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        if not isinstance(dtype, dtypes.DType):
            raise ValueError(f"dtype is not a DType: {dtype}")
        size = _axis_size(shape, axis)
        bytes_per_slice = shape.num_elements() / size * _element_bytes(
            dtype, bytes_per_string_element)
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        shards = int(math.ceil(size / slices_per_shard))
        if max_shards:
            shards = min(max_shards, shards)
        partitions = [1] * shape.ndims
        partitions[axis] = shards
        return partitions
    return _partitioner


# -- cutting a variable ----------------------------------------------------------------------------
class PartitionInfo:
    """What an initializer of one part is told: the full variable's shape and the part's
    offset in it (TensorFlow's ``variable_scope._PartitionInfo``)."""

    def __init__(self, full_shape: Sequence[int], var_offset: Sequence[int]):
        if not isinstance(full_shape, (list, tuple)):
            raise TypeError(f"`full_shape` must be a sequence (like tuple or list) instead of "
                            f"{type(full_shape).__name__}")
        if not isinstance(var_offset, (list, tuple)):
            raise TypeError(f"`var_offset` must be a sequence (like tuple or list) instead of "
                            f"{type(var_offset).__name__}")
        if len(var_offset) != len(full_shape):
            raise ValueError(f"Expected equal length, but `var_offset` is of length "
                             f"{len(var_offset)} while full_shape is of length "
                             f"{len(full_shape)}.")
        for offset, size in zip(var_offset, full_shape):
            if offset < 0 or offset >= size:
                raise ValueError(f"Expected 0 <= offset < shape but found offset={offset}, "
                                 f"shape={size} for var_offset={list(var_offset)}, "
                                 f"full_shape={list(full_shape)}")
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)

    def single_offset(self, shape: Sequence[int]) -> int:
        """The offset along the one axis the variable is cut along (0 if it is not cut)."""
        dim = self.single_slice_dim(shape)
        return 0 if dim is None else self.var_offset[dim]

    def single_slice_dim(self, shape: Sequence[int]) -> Optional[int]:
        """The axis the part is cut along (None if it is the whole variable)."""
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"`shape` must be a sequence (like tuple or list) instead of "
                            f"{type(shape).__name__}")
        if len(shape) != len(self.full_shape):
            raise ValueError(f"Expected equal length, but received shape={list(shape)} of "
                             f"length {len(shape)} while self.full_shape={self.full_shape} is "
                             f"of length {len(self.full_shape)}.")
        slice_dim = None
        for i, (size, full) in enumerate(zip(shape, self.full_shape)):
            if self.var_offset[i] + size > full:
                raise ValueError(f"With self.var_offset={self.var_offset}, a partition of "
                                 f"shape={list(shape)} would exceed self.full_shape="
                                 f"{self.full_shape} in dimension {i}.")
            if size < full:
                if slice_dim is not None:
                    raise ValueError(f"Cannot use single_slice_dim() with shape={list(shape)} "
                                     f"and self.full_shape={self.full_shape} since slice dim "
                                     f"could be either dimension {i} or {slice_dim}.")
                slice_dim = i
        return slice_dim


def call_partitioner(partitioner, shape: TensorShape, dtype) -> List[int]:
    """The partitioner's answer for a new variable, checked as TensorFlow checks it."""
    if not shape.is_fully_defined():
        raise ValueError(f"Shape of a new partitioned variable must be fully defined, but "
                         f"instead was {shape}.")
    if shape.ndims < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1, shape: {shape}")
    slicing = partitioner(shape=shape, dtype=dtype)
    if not isinstance(slicing, (list, tuple)):
        raise ValueError(f"Partitioner must return a sequence, but saw: {slicing}")
    if len(slicing) != shape.ndims:
        raise ValueError(f"Partitioner returned a partition list that does not match the "
                         f"Variable's rank: {slicing} vs. {shape}")
    if any(p < 1 for p in slicing):
        raise ValueError(f"Partitioner returned zero partitions for some axes: {slicing}")
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: shape: {shape}, "
                         f"partitioning: {slicing}")
    return list(slicing)


def slice_dim_and_num_slices(partitions: Sequence[int]) -> Tuple[int, int]:
    for dim, num in enumerate(partitions):
        if num > 1:
            return dim, num
    return 0, 1


def iter_slices(full_shape: Sequence[int], num_slices: int,
                slice_dim: int) -> Iterator[Tuple[List[int], List[int]]]:
    """(offset, shape) of each part; the first ``size % num_slices`` parts are one longer."""
    size = full_shape[slice_dim]
    offset = [0] * len(full_shape)
    for i in range(num_slices):
        shape = list(full_shape)
        shape[slice_dim] = size // num_slices + (i < size % num_slices)
        yield list(offset), shape
        offset[slice_dim] += shape[slice_dim]
