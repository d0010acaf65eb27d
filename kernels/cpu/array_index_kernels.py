"""CPU kernels for the indexing array ops: Slice, StridedSlice(+Grad), GatherV2,
UnsortedSegmentSum, Unique, OneHot, Where, Select, SelectV2."""
from __future__ import annotations

import numba
import numpy as np

from tfjupyter.ops.array_index_ops import _MASKS, _numpy_key, _spec

from . import KERNELS
from .array_kernels import as_int, dims_text, static_input


# -- StridedSlice, StridedSliceGrad -------------------------------------------------------------------------
def _slice_key_factory(op):
    """Returns key(begin, end, strides) -> numpy index, precomputed for constant arguments."""
    masks = [op.get_attr(m) for m in _MASKS]
    where = f"in '{op.name}'"
    sb, se, ss = (static_input(op, i) for i in (1, 2, 3))

    def key(b, e, s):
        return _numpy_key(_spec(b.tolist(), e.tolist(), s.tolist(), masks, where))
    if sb is None or se is None or ss is None:
        return key
    fixed = key(sb, se, ss)
    return lambda b, e, s: fixed if b is sb and e is se and s is ss else key(b, e, s)


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
        fixed = _slice_key(np.empty(x_shape.as_list(), dtype=np.bool_), begin.tolist(),
                           size.tolist())
        # A fed x has the static shape (the session checks), so only b and s can differ.
        return lambda x, b, s: x[fixed if b is begin and s is size else
                                 _slice_key(x, b.tolist(), s.tolist())]
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
    static = static_input(op, 2)
    fixed = None if static is None else as_int(static)

    def run(params, indices, axis):
        ax = fixed if axis is static else as_int(axis)
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


# -- Unique ------------------------------------------------------------------------------------------------------
@KERNELS.register("Unique")
def unique(op, ctx):
    out_idx = op.get_attr("out_idx").as_numpy_dtype

    def run(x):
        if np.ndim(x) != 1:
            raise ValueError(f"unique expects a 1D vector, got shape {dims_text(np.shape(x))}")
        # np.unique sorts; TensorFlow keeps the order of first occurrence, so the sorted
        # distinct values are put back in the order in which x first shows them.
        distinct, first, inverse = np.unique(x, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        position = np.empty_like(order)
        position[order] = np.arange(order.size)
        return distinct[order], position[inverse.reshape(-1)].astype(out_idx, copy=False)
    return run


# -- OneHot ------------------------------------------------------------------------------------------------------
@KERNELS.register("OneHot")
def one_hot(op, ctx):
    axis = op.get_attr("axis")

    def positions(depth: int, trailing: int) -> np.ndarray:
        if depth < 0:
            raise ValueError(f"depth must be non-negative, got: {depth}")
        return np.arange(depth).reshape((depth,) + (1,) * trailing)

    cache: dict = {}

    def run(indices, depth, on, off):
        r = np.ndim(indices)
        ax = r if axis == -1 else axis
        d = as_int(depth)
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


# -- GatherNd, ScatterNd, SparseToDense ---------------------------------------------------------------------
def _tuple_error(indices, limits, what: str) -> str:
    rows = indices.reshape(-1, indices.shape[-1])
    bad = int(np.flatnonzero(((rows < 0) | (rows >= limits)).any(axis=1))[0])
    pos = ",".join(str(int(p)) for p in np.unravel_index(bad, indices.shape[:-1]))
    return (f"indices[{pos}] = {dims_text(rows[bad])} does not index into {what} "
            f"{dims_text(limits)}")


def _out_of_bounds(indices, limits) -> bool:
    return bool(indices.size) and bool(((indices < 0) | (indices >= limits)).any())


@KERNELS.register("GatherNd")
def gather_nd(op, ctx):
    def run(params, indices):
        k = indices.shape[-1]
        if k > np.ndim(params):
            raise ValueError(f"indices.shape[-1] must be <= params.rank, but saw indices shape: "
                             f"{dims_text(indices.shape)} and params shape: "
                             f"{dims_text(np.shape(params))}")
        limits = np.asarray(np.shape(params)[:k], dtype=np.int64)
        if _out_of_bounds(indices, limits):
            raise ValueError(_tuple_error(indices, limits, "param shape"))
        if k == 0:
            return np.array(np.broadcast_to(params, indices.shape[:-1] + np.shape(params)))
        return params[tuple(np.moveaxis(indices, -1, 0))]
    return run


def _check_scatter(indices, updates, shape: tuple, what: str) -> int:
    """Checks a scatter's updates' shape and index tuples against the ``shape`` they go into
    (``what`` names it); returns K, the index tuples' length."""
    k = indices.shape[-1]
    want = indices.shape[:-1] + shape[k:]
    if k > len(shape) or np.shape(updates) != want:
        raise ValueError(f"updates.shape {dims_text(np.shape(updates))} must be "
                         f"indices.shape[:-1] + {what}[indices.shape[-1]:] = "
                         f"{dims_text(want) if k <= len(shape) else '?'}")
    limits = np.asarray(shape[:k], dtype=np.int64)
    if _out_of_bounds(indices, limits):
        raise ValueError(_tuple_error(indices, limits, what.replace(".", " ")))
    return k


@KERNELS.register("ScatterNd")
def scatter_nd(op, ctx):
    def run(indices, updates, shape):
        shape = tuple(shape.tolist())
        k = _check_scatter(indices, updates, shape, "shape")
        out = np.zeros(shape, dtype=updates.dtype)
        if k == 0:
            out += np.reshape(updates, (-1,) + shape).sum(axis=0, dtype=updates.dtype)
        else:
            np.add.at(out, tuple(np.moveaxis(indices, -1, 0)), updates)
        return out
    return run


@KERNELS.register("TensorScatterUpdate")
def tensor_scatter_update(op, ctx):
    def run(tensor, indices, updates):
        shape = np.shape(tensor)
        k = _check_scatter(indices, updates, shape, "tensor.shape")
        out = np.array(tensor, copy=True)
        if k == 0:                            # each update is the whole tensor: the last wins
            rows = np.reshape(updates, (-1,) + shape)
            if len(rows):
                out[...] = rows[-1]
        else:
            out[tuple(np.moveaxis(indices, -1, 0))] = updates
        return out
    return run


@KERNELS.register("SparseToDense")
def sparse_to_dense(op, ctx):
    validate = op.get_attr("validate_indices")
    dtype = op.outputs[0].dtype.as_numpy_dtype

    def run(indices, output_shape, values, default):
        shape = tuple(np.reshape(output_shape, -1).tolist())
        idx = np.reshape(indices, (-1, 1)) if np.ndim(indices) < 2 else indices
        n, r = idx.shape
        if r != len(shape):
            raise ValueError(f"sparse_indices has {r} columns but the output has rank "
                             f"{len(shape)}")
        if np.ndim(values) == 1 and values.shape[0] != n or np.ndim(values) > 1:
            raise ValueError(f"sparse_values has incorrect shape {dims_text(np.shape(values))}, "
                             f"should be [] or [{n}]")
        limits = np.asarray(shape, dtype=np.int64)
        if _out_of_bounds(idx, limits):
            rows = ((idx < 0) | (idx >= limits)).any(axis=1)
            bad = int(np.flatnonzero(rows)[0])
            raise ValueError(f"indices[{bad}] = {dims_text(idx[bad])} is out of bounds: need 0 "
                             f"<= index < {dims_text(shape)}")
        if validate and n > 1 and r:
            flat = np.ravel_multi_index(tuple(idx.T), shape)
            steps = np.diff(flat)
            if (steps <= 0).any():
                bad = int(np.flatnonzero(steps <= 0)[0]) + 1
                why = "is repeated" if steps[bad - 1] == 0 else "is out of order"
                raise ValueError(f"indices[{bad}] = {dims_text(idx[bad])} {why}")
        out = np.full(shape, default, dtype=dtype)
        out[tuple(idx.T)] = values
        return out
    return run
