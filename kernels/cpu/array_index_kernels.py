"""CPU kernels for the indexing array ops: Slice, StridedSlice(+Grad), GatherV2,
UnsortedSegmentSum, OneHot, Where, Select, SelectV2."""
from __future__ import annotations

from typing import Optional

import numba
import numpy as np

from tfjupyter.ops.array_index_ops import _MASKS, _numpy_key, _spec

from . import KERNELS
from .array_kernels import dims_text, static_input, static_int


# -- StridedSlice, StridedSliceGrad -------------------------------------------------------------------------
def _slice_key_factory(op):
    """Returns key(begin, end, strides) -> numpy index; constant when the spec is static."""
    masks = [op.get_attr(m) for m in _MASKS]
    where = f"in '{op.name}'"
    values = [static_input(op, i) for i in (1, 2, 3)]
    if all(v is not None for v in values):
        fixed = _numpy_key(_spec(*(v.tolist() for v in values), masks, where))
        return lambda b, e, s: fixed
    return lambda b, e, s: _numpy_key(_spec(b.tolist(), e.tolist(), s.tolist(), masks, where))


def _index_error(x, key) -> str:
    dim = 0
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    for k in key:
        if k is Ellipsis:
            dim += np.ndim(x) - consumed
        elif k is None:
            continue
        else:
            if isinstance(k, int) and dim < np.ndim(x) and not -x.shape[dim] <= k < x.shape[dim]:
                return f"slice index {k} of dimension {dim} out of bounds."
            dim += 1
    if consumed > np.ndim(x):
        return f"Index out of range using input dim {np.ndim(x)}; input has only {np.ndim(x)} dims"
    return "invalid slice"


@KERNELS.register("StridedSlice")
def strided_slice(op, ctx):
    key = _slice_key_factory(op)

    def run(x, b, e, s):
        k = key(b, e, s)
        try:
            return x[k]
        except IndexError:
            raise ValueError(_index_error(x, k)) from None
    return run


@KERNELS.register("StridedSliceGrad")
def strided_slice_grad(op, ctx):
    key = _slice_key_factory(op)
    dtype = op.outputs[0].dtype.as_numpy_dtype

    def run(shape, b, e, s, dy):
        out = np.zeros(tuple(shape.tolist()), dtype=dtype)
        out[key(b, e, s)] = dy
        return out
    return run


# -- Slice -----------------------------------------------------------------------------------------------------
def _slice_key(x, begin, size) -> tuple:
    if len(begin) != np.ndim(x) or len(size) != np.ndim(x):
        raise ValueError(f"Expected begin and size arguments to be 1-D tensors of size "
                         f"{np.ndim(x)}, but got shapes [{len(begin)}] and [{len(size)}] instead.")
    key = []
    for i, (b, s, d) in enumerate(zip(begin, size, np.shape(x))):
        if not 0 <= b <= d:
            raise ValueError(f"Expected begin[{i}] in [0, {d}], but got {b}")
        if s == -1:
            s = d - b
        if not 0 <= s <= d - b:
            raise ValueError(f"Expected size[{i}] in [0, {d - b}], but got {s}")
        key.append(slice(b, b + s))
    return tuple(key)


@KERNELS.register("Slice")
def slice_(op, ctx):
    begin, size = static_input(op, 1), static_input(op, 2)
    x_shape = op.inputs[0].shape
    if begin is not None and size is not None and x_shape.is_fully_defined():
        # Validated by the shape rule already.
        key = _slice_key(np.empty(x_shape.as_list(), dtype=np.bool_), begin.tolist(), size.tolist())
        return lambda x, _b, _s: x[key]
    return lambda x, b, s: x[_slice_key(x, b.tolist(), s.tolist())]


# -- GatherV2, UnsortedSegmentSum ---------------------------------------------------------------------------------
def _bad_index_error(indices, limit: int, what: str = "indices") -> str:
    bad = (indices < 0) | (indices >= limit)
    pos = np.unravel_index(int(np.flatnonzero(bad)[0]), indices.shape) if indices.ndim else ()
    where = ",".join(str(int(p)) for p in pos)
    value = int(indices[pos]) if pos else int(indices)
    return f"{what}[{where}] = {value} is not in [0, {limit})"


@KERNELS.register("GatherV2")
def gather(op, ctx):
    static = static_int(op, 2)

    def run(params, indices, axis):
        ax = static if static is not None else int(np.reshape(axis, ()))
        try:
            # np.take would wrap negative indices around; TensorFlow rejects them.
            if indices.size and indices.min() < 0:
                raise IndexError
            return np.take(params, indices, axis=ax)
        except IndexError:
            r = np.ndim(params)
            if not -r <= ax < r:
                raise ValueError(f"Expected axis in the range [{-r}, {r}), but got {ax}") from None
            raise ValueError(_bad_index_error(np.asarray(indices), params.shape[ax])) from None
    return run


@numba.njit(cache=True, nogil=True)
def _segment_sum_rows(data, ids, out):  # pragma: no cover - compiled
    width = data.shape[1]
    for i in range(ids.shape[0]):
        s = ids[i]
        if s >= 0:
            for j in range(width):
                out[s, j] += data[i, j]


_NUMBA_SEGMENT_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64))


@KERNELS.register("UnsortedSegmentSum")
def unsorted_segment_sum(op, ctx):
    dtype = np.dtype(op.outputs[0].dtype.as_numpy_dtype)
    fast = dtype in _NUMBA_SEGMENT_TYPES

    def run(data, ids, num_segments):
        n = int(np.reshape(num_segments, ()))
        if n < 0:
            raise ValueError(f"num_segments must be non-negative, got {n}")
        k = np.ndim(ids)
        if np.shape(data)[:k] != np.shape(ids):
            raise ValueError(f"data.shape = {dims_text(np.shape(data))} does not start with "
                             f"segment_ids.shape = {dims_text(np.shape(ids))}")
        inner = np.shape(data)[k:]
        out = np.zeros((n,) + inner, dtype=dtype)
        flat_ids = np.reshape(ids, -1)
        if flat_ids.size and flat_ids.max() >= n:
            raise ValueError(_bad_index_error(np.where(ids < 0, 0, ids), n, "segment_ids"))
        if fast:
            width = int(np.prod(inner, dtype=np.int64))
            rows = np.ascontiguousarray(np.reshape(data, (flat_ids.size, width)))
            _segment_sum_rows(rows, flat_ids, out.reshape(n, width))
        else:
            keep = flat_ids >= 0
            np.add.at(out, flat_ids[keep], np.reshape(data, (flat_ids.size,) + inner)[keep])
        return out
    return run


# -- OneHot ------------------------------------------------------------------------------------------------------
@KERNELS.register("OneHot")
def one_hot(op, ctx):
    axis = op.get_attr("axis")
    static_depth = static_int(op, 1)

    def positions(depth: int, trailing: int) -> np.ndarray:
        if depth < 0:
            raise ValueError(f"depth must be non-negative, got: {depth}")
        return np.arange(depth).reshape((depth,) + (1,) * trailing)

    cache: dict = {}

    def run(indices, depth, on, off):
        r = np.ndim(indices)
        ax = r if axis == -1 else axis
        d = static_depth if static_depth is not None else int(np.reshape(depth, ()))
        key = (d, r - ax)
        ar = cache.get(key)
        if ar is None:
            ar = cache[key] = positions(d, r - ax)
        return np.where(np.expand_dims(indices, ax) == ar, on, off)
    return run


# -- Where, Select, SelectV2 ---------------------------------------------------------------------------------------
@KERNELS.register("Where")
def where(op, ctx):
    return lambda x: np.argwhere(x).astype(np.int64, copy=False)


@KERNELS.register("Select")
def select(op, ctx):
    def run(cond, t, e):
        if np.shape(t) != np.shape(e):
            raise ValueError(f"'then' and 'else' must have the same size.  but received: "
                             f"{dims_text(np.shape(t))} vs. {dims_text(np.shape(e))}")
        cr, r = np.ndim(cond), np.ndim(t)
        if cr == r:
            if np.shape(cond) != np.shape(t):
                raise ValueError(f"'condition' and 'then' must have the same shape: "
                                 f"{dims_text(np.shape(cond))} vs. {dims_text(np.shape(t))}")
        elif cr == 1:
            if cond.shape[0] != t.shape[0]:
                raise ValueError(f"Number of batches of 'then' must match size of 'condition', "
                                 f"but saw: {t.shape[0]} vs. {cond.shape[0]}")
            cond = cond.reshape((-1,) + (1,) * (r - 1))
        elif cr != 0:
            raise ValueError(f"'condition' must be a scalar, a vector or of the shape of 'then', "
                             f"but saw shape: {dims_text(np.shape(cond))}")
        return np.where(cond, t, e)
    return run


@KERNELS.register("SelectV2")
def select_v2(op, ctx):
    return np.where
