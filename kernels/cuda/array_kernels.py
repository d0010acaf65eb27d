"""GPU kernels for the array ops: constants, reshaping, transposing, joining, splitting, tiling,
slicing, gathering, padding, broadcasting and reversing.

Most of these ops only move elements.  Each is reduced on the host, from static shapes, to one
of a few data-movement kernels:

- a *strided gather*: ``out[i] = src[offset + sum_k idx_k(i) * stride_k]`` (Slice, StridedSlice,
  ReverseV2, BroadcastTo, Tile, Transpose); numpy computes the view's offset and strides on a
  stand-in array that owns no memory, so the index rules (masks, negative steps, clamping) are
  numpy's, exactly as in the CPU kernels;
- a *block copy* of ``rows x width`` elements between two row-major matrices (ConcatV2, Pack,
  Unpack, Split, SplitV);
- a tiled shared-memory transpose for the common batched 2-D case (NHWC <-> NCHW, matrix
  transposes), where the plain gather would read or write with a stride.

Data movement does not care about the dtype, only the element width: arrays are reinterpreted
as unsigned ints of their width, so one compiled kernel serves float32, int32 and so on.

Results that are contiguous pieces of the input are returned as device views, as the CPU kernels
return numpy views (Reshape, Squeeze, ExpandDims, Slice, StridedSlice, Split, Unpack).

int32 tensors are shape bookkeeping: as TensorFlow's GPU kernels (HostMemory int32), ops on them
run the CPU kernel in host memory (``run_on_host``).
"""
from __future__ import annotations

import math
from typing import Callable, Dict, List, NamedTuple, Sequence, Tuple

import numpy as np
from numba import cuda
from numpy.lib.stride_tricks import as_strided

from ..cpu import array_index_kernels as cpu_index
from ..cpu import array_kernels as cpu_array
from ..cpu.array_kernels import as_int, dims_text, static_input
from . import KERNELS, _runtime, host_memory, run_on_host
from ._device import fill_zero
from ._runtime import SIMULATOR

Shape = Tuple[int, ...]

# The tiled transpose: TILE x TILE tiles moved by TILE x ROWS threads (each thread moves
# TILE / ROWS elements). The simulator runs one Python thread per CUDA thread, so it gets one
# warp's worth of threads.
TILE = 8 if SIMULATOR else 32
ROWS = 4 if SIMULATOR else 8
# The tile's row length in shared memory: one more than TILE, so that a column read hits
# TILE different banks. A constant of its own: shared array shapes must be literals.
TILE_PITCH = TILE + 1
_MAX_GRID_YZ = 65535

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


# ---------------------------------------------------------------------------------------------
# Device kernels (grid-stride loops: any launch shape computes the same thing)


@cuda.jit(device=True)
def _strided_position(i, offset, shape, strides):  # pragma: no cover - device code
    # offset + sum_k idx_k(i) * strides[k], idx(i) the row-major index of i in shape: where
    # element i of a strided view lies in its flat base.
    rem = i
    pos = offset
    for k in range(len(shape) - 1, -1, -1):
        d = shape[k]
        q = rem // d
        pos += (rem - q * d) * strides[k]
        rem = q
    return pos


@_runtime.kernel
def _gather_strided(src, offset, shape, strides, out):  # pragma: no cover - device code
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = src[_strided_position(i, offset, shape, strides)]


@_runtime.kernel
def _scatter_strided(src, offset, shape, strides, out):  # pragma: no cover - device code
    # The inverse of _gather_strided. A strided slice never selects an element twice, so the
    # writes do not race.
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for i in range(start, src.size, step):
        out[_strided_position(i, offset, shape, strides)] = src[i]


@_runtime.kernel
def _copy_block(src, src_row, src_col, dst, dst_row, dst_col, rows, width):  # pragma: no cover
    # dst[r, dst_col + c] = src[r, src_col + c] for r < rows, c < width: consecutive threads
    # take consecutive columns, so reads and writes are coalesced along each row.
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for i in range(start, rows * width, step):
        r = i // width
        c = i - r * width
        dst[r * dst_row + dst_col + c] = src[r * src_row + src_col + c]


@_runtime.kernel
def _pad(src, in_shape, before, out_shape, value, out):  # pragma: no cover - device code
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    rank = len(out_shape)
    fill = value[0]
    for i in range(start, out.size, step):
        rem = i
        pos = 0
        stride = 1
        inside = True
        for k in range(rank - 1, -1, -1):
            d = out_shape[k]
            q = rem // d
            j = rem - q * d - before[k]
            rem = q
            if j < 0 or j >= in_shape[k]:
                inside = False
            pos += j * stride
            stride *= in_shape[k]
        if inside:
            out[i] = src[pos]
        else:
            out[i] = fill


@_runtime.kernel
def _gather_axis(params, indices, limit, inner, out):  # pragma: no cover - device code
    # params viewed as [outer, limit, inner], out as [outer, len(indices), inner]. An index
    # out of [0, limit) gives zeros, as TensorFlow's GPU kernel (it cannot raise on the device).
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    block = indices.size * inner
    for i in range(start, out.size, step):
        o = i // block
        r = i - o * block
        k = r // inner
        j = r - k * inner
        idx = indices[k]
        if idx >= 0 and idx < limit:
            out[i] = params[(o * limit + idx) * inner + j]
        else:
            out[i] = 0


@_runtime.kernel
def _one_hot(indices, depth, inner, on, off, out):  # pragma: no cover - device code
    # out viewed as [outer, depth, inner]; indices as [outer, inner].
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    on_value = on[0]
    off_value = off[0]
    block = depth * inner
    for i in range(start, out.size, step):
        o = i // block
        r = i - o * block
        d = r // inner
        j = r - d * inner
        if indices[o * inner + j] == d:
            out[i] = on_value
        else:
            out[i] = off_value


@_runtime.kernel
def _segment_sum(data, ids, width, num_segments, out):  # pragma: no cover - device code
    # Rows whose id is negative are dropped (TensorFlow's rule); ids >= num_segments are
    # dropped too, since the device cannot raise (the CPU kernel raises).
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for i in range(start, data.size, step):
        row = i // width
        s = ids[row]
        if s >= 0 and s < num_segments:
            cuda.atomic.add(out, s * width + (i - row * width), data[i])


_transpose_kernels: Dict[np.dtype, Callable] = {}


def _tiled_transpose(dtype: np.dtype):
    """The batched 2-D transpose kernel for one (unsigned int) dtype: the shared tile's type
    must be known at compile time."""
    kernel = _transpose_kernels.get(dtype)
    if kernel is not None:
        return kernel
    from numba import from_dtype
    element = from_dtype(dtype)

    @_runtime.kernel
    def transpose(src, batch, rows, cols, out):  # pragma: no cover - device code
        # src is [batch, rows, cols], out [batch, cols, rows]. A block reads a TILE x TILE tile
        # with coalesced row reads into shared memory and writes it back transposed with
        # coalesced row writes.
        tile = cuda.shared.array((TILE, TILE_PITCH), element)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tiles_r = (rows + TILE - 1) // TILE
        tiles_c = (cols + TILE - 1) // TILE
        plane = rows * cols
        for b in range(cuda.blockIdx.z, batch, cuda.gridDim.z):
            base = b * plane
            for tr in range(cuda.blockIdx.y, tiles_r, cuda.gridDim.y):
                for tc in range(cuda.blockIdx.x, tiles_c, cuda.gridDim.x):
                    c = tc * TILE + tx
                    for j in range(ty, TILE, ROWS):
                        r = tr * TILE + j
                        if r < rows and c < cols:
                            tile[j, tx] = src[base + r * cols + c]
                    cuda.syncthreads()
                    r = tr * TILE + tx
                    for j in range(ty, TILE, ROWS):
                        c = tc * TILE + j
                        if c < cols and r < rows:
                            out[base + c * rows + r] = tile[tx, j]
                    cuda.syncthreads()

    _transpose_kernels[dtype] = transpose
    return transpose


# ---------------------------------------------------------------------------------------------
# Host helpers


def _is_int32(tensor) -> bool:
    return tensor.dtype.as_numpy_dtype == np.int32


def _size(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _bits(a):
    """``a`` reinterpreted as unsigned ints of its element width (copies need no more)."""
    t = _BITS.get(a.dtype.itemsize)
    return a if t is None or a.dtype == t else a.view(t)


def _piece(x, start: int, shape: Shape):
    """A view of the ``_size(shape)`` elements of ``x`` from flat position ``start``."""
    n = _size(shape)
    return _runtime.flat(x)[start:start + n].reshape(tuple(shape))


def _layout(shape: Shape, index: Callable[[np.ndarray], np.ndarray]) -> Tuple[Shape, int, Shape]:
    """(shape, element offset, element strides) of ``index(a)`` for a C-contiguous ``a`` of
    ``shape``. numpy computes the view on a stand-in of one-byte elements (so byte strides
    are element strides) that is never read: no memory of the tensor's size is touched."""
    base = np.zeros(1, np.uint8)
    strides = []
    step = 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(int(d), 1)
    stand_in = as_strided(base, shape=tuple(shape), strides=tuple(reversed(strides)),
                          writeable=False)
    view = index(stand_in)
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return view.shape, int(offset), view.strides


def _coalesce(shape: Shape, strides: Shape) -> Tuple[Shape, Shape]:
    """Drops unit dims and merges neighbours that are contiguous in the source, so the kernel's
    per-element index math runs over as few dims as possible (a slice of rows becomes 1-D)."""
    dims: List[List[int]] = []
    for d, s in zip(shape, strides):
        if d == 1:
            continue
        if dims and dims[-1][1] == s * d:
            dims[-1][0] *= d
            dims[-1][1] = s
        else:
            dims.append([int(d), int(s)])
    if not dims:
        dims = [[1, 0]]
    return tuple(d for d, _ in dims), tuple(s for _, s in dims)


def _grid_2d(ctx, batch: int, rows: int, cols: int):
    if SIMULATOR:
        return (1, 1, 1)
    # Enough blocks to fill the GPU; the kernel's loops cover the rest.
    cap = max(1, ctx.state.max_blocks * 4)
    gx = min(math.ceil(cols / TILE), cap)
    gy = min(math.ceil(rows / TILE), _MAX_GRID_YZ, max(1, cap // gx))
    gz = min(batch, _MAX_GRID_YZ, max(1, cap // (gx * gy)))
    return (gx, gy, gz)


class Move(NamedTuple):
    """How a strided-view op moves data, worked out once per input shape and arguments."""
    kind: str  # "empty", "view", "tiled" (batched 2-D transpose) or "gather"
    shape: Shape  # of the result
    offset: int  # of the result's first element in the input
    dims: Shape  # the coalesced iteration space
    steps: Shape  # its strides in the input


def plan_move(shape: Shape, offset: int, strides: Shape, view_ok: bool) -> Move:
    """The Move that makes ``out[idx] = x.flat[offset + idx . strides]`` for ``out`` of
    ``shape``; with ``view_ok`` a result that is a contiguous piece of ``x`` is a view."""
    shape = tuple(int(d) for d in shape)
    n = _size(shape)
    if n == 0:
        return Move("empty", shape, 0, (), ())
    dims, steps = _coalesce(shape, strides)
    if view_ok and (n == 1 or steps == (1,)):
        return Move("view", shape, offset, dims, steps)
    # A batched 2-D transpose: out dims (batch, C, R) read from (batch, R, C).
    rank = len(dims)
    if rank in (2, 3) and steps[-2] == 1 and steps[-1] == dims[-2] and \
            (rank == 2 or steps[0] == dims[1] * dims[2]) and min(dims[-2:]) > 1:
        return Move("tiled", shape, offset, dims, steps)
    return Move("gather", shape, offset, dims, steps)


def move(ctx, x, plan: Move):
    """Carries out ``plan`` on the device array ``x``."""
    if plan.kind == "view":
        return _piece(x, plan.offset, plan.shape)
    out = _runtime.empty(ctx, plan.shape, x.dtype)
    if plan.kind == "empty":
        return out
    src, dst = _bits(_runtime.flat(x)), _bits(_runtime.flat(out))
    if plan.kind == "tiled":
        dims = plan.dims
        batch = dims[0] if len(dims) == 3 else 1
        cols, rows = dims[-2], dims[-1]
        kernel = _tiled_transpose(src.dtype)
        if plan.offset:
            src = src[plan.offset:]
        kernel[_grid_2d(ctx, batch, rows, cols), (TILE, ROWS), ctx.state.stream](
            src, batch, rows, cols, dst)
        return out
    _runtime.launch(ctx, _gather_strided, int(out.size))(src, plan.offset, plan.dims, plan.steps,
                                                         dst)
    return out


class Moves:
    """Move plans of one kernel by a hashable key (input shape and arguments): numpy's view
    arithmetic and the dim merging cost more Python time than the launch, so a step with the
    same shapes as the last only looks its plan up."""

    _LIMIT = 64

    def __init__(self, view_ok: bool):
        self.view_ok = view_ok
        self._plans: Dict[object, Move] = {}

    def __call__(self, ctx, x, key, layout: Callable[[], Tuple[Shape, int, Shape]]):
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= self._LIMIT:
                self._plans.clear()
            plan = self._plans[key] = plan_move(*layout(), view_ok=self.view_ok)
        return move(ctx, x, plan)


def _copy_into(ctx, src, src_row: int, src_col: int, dst, dst_row: int, dst_col: int,
               rows: int, width: int) -> None:
    if rows * width:
        _runtime.launch(ctx, _copy_block, rows * width)(
            _bits(_runtime.flat(src)), src_row, src_col, _bits(_runtime.flat(dst)), dst_row, dst_col, rows, width)


def upload(ctx, value):
    """A device copy of a host value, with its shape (0-d included)."""
    host = np.asarray(value)
    out = _runtime.from_host(host, ctx)
    return out if tuple(out.shape) == host.shape else out.reshape(host.shape)


def on_device(ctx, value):
    """``value`` as a device array: an input that arrived in host memory is uploaded (only
    when its producer was placed on the host; the executor normally delivers device arrays)."""
    if isinstance(value, np.ndarray) or np.isscalar(value):
        return upload(ctx, value)
    return value


# ---------------------------------------------------------------------------------------------
# Const


@KERNELS.register("Const")
def const(op, ctx):
    value = op.get_attr("value")
    if value.dtype == np.int32 or value.dtype.kind in "OSU":
        # Shapes, axes and strings: host memory, as TensorFlow's HostMemory int32 constants.
        return host_memory(lambda: value, outputs=(0,))
    # Uploaded once; every step hands out the same (never written) buffer.
    device_value = upload(ctx, value)
    return lambda: device_value


# ---------------------------------------------------------------------------------------------
# Reshape, ExpandDims, Squeeze: views


def _resolve_shape(n: int, target: Sequence[int]) -> Shape:
    target = tuple(int(d) for d in target)
    unknown = [i for i, d in enumerate(target) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in target):
        raise ValueError(cpu_array._reshape_error(n, target))
    known = _size([d for d in target if d != -1])
    if unknown:
        if known == 0:
            if n != 0:
                raise ValueError(cpu_array._reshape_error(n, target))
            raise ValueError("Reshape cannot infer the missing input size for an empty tensor "
                             "unless all specified input sizes are non-zero")
        if n % known:
            raise ValueError(cpu_array._reshape_error(n, target))
        return tuple(n // known if d == -1 else d for d in target)
    if known != n:
        raise ValueError(cpu_array._reshape_error(n, target))
    return target


@KERNELS.register("Reshape")
def reshape(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    static = static_input(op, 1)
    fixed = None if static is None else tuple(np.reshape(static, -1).tolist())

    def run(x, shape_arr):
        target = fixed if shape_arr is static else tuple(np.reshape(shape_arr, -1).tolist())
        return x.reshape(_resolve_shape(int(x.size), target))
    return host_memory(run, inputs=(1,))


@KERNELS.register("ExpandDims")
def expand_dims(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    static = static_input(op, 1)
    fixed = None if static is None else as_int(static)

    def run(x, dim):
        d = fixed if dim is static else as_int(dim)
        r = x.ndim
        if not -1 - r <= d <= r:
            raise ValueError(f"Tried to expand dim index {d} for tensor with {r} dimensions.")
        if d < 0:
            d += r + 1
        return x.reshape(tuple(x.shape[:d]) + (1,) + tuple(x.shape[d:]))
    return host_memory(run, inputs=(1,))


@KERNELS.register("Squeeze")
def squeeze(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    dims = tuple(op.get_attr("squeeze_dims"))

    def run(x):
        shape = tuple(x.shape)
        r = len(shape)
        if not dims:
            return x.reshape(tuple(d for d in shape if d != 1))
        drop = set()
        for d in dims:
            if not -r <= d < r:
                raise ValueError(f"Tried to squeeze dim index {d} for tensor with {r} "
                                 "dimensions.")
            if shape[d] != 1:
                raise ValueError(f"Can not squeeze dim[{d % r}], expected a dimension of 1, "
                                 f"got {shape[d]}")
            drop.add(d % r)
        return x.reshape(tuple(d for i, d in enumerate(shape) if i not in drop))
    return run


# ---------------------------------------------------------------------------------------------
# Transpose, BroadcastTo, ReverseV2, Tile: strided gathers


@KERNELS.register("Transpose")
def transpose(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    static = static_input(op, 1)
    r = op.inputs[0].shape.ndims
    fixed = None
    if static is not None and r is not None:
        fixed = cpu_array._check_perm(np.empty((0,) * r), static.tolist())

    moves = Moves(view_ok=False)

    def run(x, perm):
        p = fixed if perm is static and fixed is not None else \
            cpu_array._check_perm(x, np.reshape(perm, -1).tolist())
        if p == tuple(range(x.ndim)):
            return x
        shape = tuple(x.shape)
        return moves(ctx, x, (shape, p), lambda: _layout(shape, lambda a: np.transpose(a, p)))
    return host_memory(run, inputs=(1,))


@KERNELS.register("BroadcastTo")
def broadcast_to(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    static = static_input(op, 1)
    fixed = None if static is None else tuple(np.reshape(static, -1).tolist())

    moves = Moves(view_ok=False)

    def layout(shape: Shape, target: Shape):
        try:
            return _layout(shape, lambda a: np.broadcast_to(a, target))
        except ValueError:
            raise ValueError(f"Incompatible shapes: {dims_text(shape)} vs. "
                             f"{dims_text(target)}") from None

    def run(x, shape_arr):
        target = fixed if shape_arr is static else tuple(np.reshape(shape_arr, -1).tolist())
        shape = tuple(x.shape)
        return moves(ctx, x, (shape, target), lambda: layout(shape, target))
    return host_memory(run, inputs=(1,))


@KERNELS.register("ReverseV2")
def reverse(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)

    moves = Moves(view_ok=True)

    def run(x, axis):
        axes = tuple(int(a) for a in np.reshape(axis, -1))
        if x.ndim == 0:
            # numpy has no axes to flip on a scalar; TensorFlow returns it (with no axes).
            if axes:
                raise ValueError(f"'axis'[0] = {axes[0]} is out of valid range [0, 0)")
            return x
        shape = tuple(x.shape)
        return moves(ctx, x, (shape, axes), lambda: _layout(shape, lambda a: np.flip(a, axes)))
    return host_memory(run, inputs=(1,))


@KERNELS.register("Tile")
def tile(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    static = static_input(op, 1)
    r = op.inputs[0].shape.ndims
    fixed = None
    if static is not None and r is not None:
        fixed = cpu_array._check_multiples(np.empty((0,) * r), np.reshape(static, -1).tolist())

    moves = Moves(view_ok=False)

    def layout(x_shape: Shape, reps: Shape):
        # Tiling is a broadcast: x as [1, d0, 1, d1, ...] broadcast to [m0, d0, m1, d1, ...]
        # is laid out exactly as the tiled [m0 * d0, m1 * d1, ...].
        shape, strides = [], []
        step = 1
        for m, d in zip(reversed(reps), reversed(x_shape)):
            shape += [d, m]
            strides += [step, 0]
            step *= d
        return tuple(reversed(shape)), 0, tuple(reversed(strides))

    def run(x, multiples):
        reps = fixed if multiples is static and fixed is not None else \
            cpu_array._check_multiples(x, np.reshape(multiples, -1).tolist())
        shape = tuple(x.shape)
        out = moves(ctx, x, (shape, reps), lambda: layout(shape, reps))
        return out.reshape(tuple(m * d for m, d in zip(reps, shape)))
    return host_memory(run, inputs=(1,))


# ---------------------------------------------------------------------------------------------
# Slice, StridedSlice, StridedSliceGrad


@KERNELS.register("Slice")
def slice_(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)

    moves = Moves(view_ok=True)

    def layout(shape: Shape, begin: Shape, size: Shape):
        key = cpu_index._slice_key(_ShapeOnly(shape), list(begin), list(size))
        return _layout(shape, lambda a: a[key])

    def run(x, begin, size):
        shape = tuple(x.shape)
        b = tuple(np.reshape(begin, -1).tolist())
        s = tuple(np.reshape(size, -1).tolist())
        return moves(ctx, x, (shape, b, s), lambda: layout(shape, b, s))
    return host_memory(run, inputs=(1, 2))


def _with_ellipsis(key: tuple) -> tuple:
    # numpy returns a scalar, not a 0-d view, when integers index every dim; a trailing
    # Ellipsis (a no-op for the selection) keeps the result a view.
    return key if any(k is Ellipsis for k in key) else key + (Ellipsis,)


def _strided_layout(shape: Shape, key: tuple) -> Tuple[Shape, int, Shape]:
    full = _with_ellipsis(key)
    try:
        return _layout(shape, lambda a: a[full])
    except IndexError:
        raise ValueError(cpu_index._index_error(_ShapeOnly(shape), key)) from None


class _ShapeOnly:
    """Stands in for an array in error messages that read only its shape."""

    def __init__(self, shape: Shape):
        self.shape = tuple(shape)
        self.ndim = len(self.shape)


@KERNELS.register("StridedSlice")
def strided_slice(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    key = cpu_index._slice_key_factory(op)

    moves = Moves(view_ok=True)

    def run(x, b, e, s):
        shape = tuple(x.shape)
        args = tuple(np.reshape(v, -1).tolist() for v in (b, e, s))
        return moves(ctx, x, (shape,) + tuple(map(tuple, args)),
                     lambda: _strided_layout(shape, key(b, e, s)))
    return host_memory(run, inputs=(1, 2, 3))


@KERNELS.register("StridedSliceGrad")
def strided_slice_grad(op, ctx):
    if op.outputs[0].dtype.as_numpy_dtype == np.int32:
        return run_on_host(op, ctx)
    key = cpu_index._slice_key_factory(op)
    dtype = np.dtype(op.outputs[0].dtype.as_numpy_dtype)

    plans: Dict[tuple, Tuple[Shape, int, Shape, Shape]] = {}

    def plan(out_shape: Shape, b, e, s) -> Tuple[Shape, int, Shape, Shape]:
        """(slice shape, offset, coalesced dims, their strides) of the slice in the output."""
        k = (out_shape,) + tuple(tuple(np.reshape(v, -1).tolist()) for v in (b, e, s))
        found = plans.get(k)
        if found is None:
            if len(plans) >= Moves._LIMIT:
                plans.clear()
            shape, offset, strides = _strided_layout(out_shape, key(b, e, s))
            found = plans[k] = (tuple(shape), offset) + _coalesce(shape, strides)
        return found

    def run(shape_arr, b, e, s, dy):
        out_shape = tuple(int(d) for d in np.reshape(shape_arr, -1).tolist())
        shape, offset, dims, steps = plan(out_shape, b, e, s)
        if tuple(dy.shape) != shape:
            raise ValueError(f"shape of dy was {dims_text(dy.shape)} instead of "
                             f"{dims_text(shape)}")
        out = _runtime.empty(ctx, out_shape, dtype)
        n = _size(out_shape)
        if n == 0:
            return out
        dst = _bits(_runtime.flat(out))
        m = _size(shape)
        if m < n:  # elements outside the slice get no gradient
            _runtime.launch(ctx, fill_zero, n)(dst)
        if m:
            _runtime.launch(ctx, _scatter_strided, m)(_bits(_runtime.flat(dy)), offset, dims, steps, dst)
        return out
    return host_memory(run, inputs=(0, 1, 2, 3))


# ---------------------------------------------------------------------------------------------
# ConcatV2, Pack, Unpack, Split, SplitV: block copies


def _outer_inner(shape: Shape, axis: int) -> Tuple[int, int]:
    return _size(shape[:axis]), _size(shape[axis + 1:])


@KERNELS.register("ConcatV2")
def concat(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    last = len(op.inputs) - 1
    static = static_input(op, last)
    fixed = None if static is None else as_int(static)

    def run(*args):
        axis = fixed if args[-1] is static else as_int(args[-1])
        values = args[:-1]
        first = tuple(values[0].shape)
        r = len(first)
        if not -r <= axis < r:
            raise ValueError(cpu_array._concat_error(values, axis))
        ax = axis % r
        for v in values[1:]:
            s = tuple(v.shape)
            if len(s) != r or any(a != b for k, (a, b) in enumerate(zip(first, s)) if k != ax):
                raise ValueError(cpu_array._concat_error(values, axis))
        total = sum(int(v.shape[ax]) for v in values)
        out_shape = first[:ax] + (total,) + first[ax + 1:]
        out = _runtime.empty(ctx, out_shape, values[0].dtype)
        outer, inner = _outer_inner(out_shape, ax)
        row = total * inner
        col = 0
        for v in values:
            width = int(v.shape[ax]) * inner
            _copy_into(ctx, v, width, 0, out, row, col, outer, width)
            col += width
        return out
    return host_memory(run, inputs=(last,))


@KERNELS.register("Pack")
def pack(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    axis = op.get_attr("axis")

    def run(*values):
        first = tuple(values[0].shape)
        for i, v in enumerate(values[1:], 1):
            if tuple(v.shape) != first:
                raise ValueError(f"Shapes of all inputs must match: values[0].shape = "
                                 f"{dims_text(first)} != values[{i}].shape = "
                                 f"{dims_text(v.shape)}")
        r = len(first) + 1
        if not -r <= axis < r:
            raise ValueError(f"axis = {axis} not in [{-r}, {r})")
        ax = axis % r
        n = len(values)
        out = _runtime.empty(ctx, first[:ax] + (n,) + first[ax:], values[0].dtype)
        outer, inner = _size(first[:ax]), _size(first[ax:])
        for i, v in enumerate(values):
            _copy_into(ctx, v, inner, 0, out, n * inner, i * inner, outer, inner)
        return out
    return run


def _split_parts(ctx, x, ax: int, sizes: Sequence[int]):
    """x cut along ``ax`` into pieces of ``sizes``: views when the pieces are contiguous (all
    dims before ``ax`` are 1), else copies."""
    shape = tuple(x.shape)
    outer, inner = _outer_inner(shape, ax)
    parts = []
    start = 0
    for size in sizes:
        part_shape = shape[:ax] + (int(size),) + shape[ax + 1:]
        if outer == 1:
            parts.append(_piece(x, start * inner, part_shape))
        else:
            part = _runtime.empty(ctx, part_shape, x.dtype)
            _copy_into(ctx, x, shape[ax] * inner, start * inner, part, size * inner, 0, outer,
                       size * inner)
            parts.append(part)
        start += int(size)
    return tuple(parts)


@KERNELS.register("Unpack")
def unpack(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    num, axis = op.get_attr("num"), op.get_attr("axis")

    def run(x):
        r = x.ndim
        if not -r <= axis < r:
            raise ValueError(f"axis = {axis} not in [{-r}, {r})")
        ax = axis % r
        if x.shape[ax] != num:
            raise ValueError(f"Input shape axis {ax} must equal {num}, got shape "
                             f"{dims_text(x.shape)}")
        parts = _split_parts(ctx, x, ax, [1] * num)
        rest = tuple(x.shape[:ax]) + tuple(x.shape[ax + 1:])
        parts = tuple(p.reshape(rest) for p in parts)
        return parts[0] if num == 1 else parts
    return run


@KERNELS.register("Split")
def split(op, ctx):
    if _is_int32(op.inputs[1]):
        return run_on_host(op, ctx)
    n = op.get_attr("num_split")
    static = static_input(op, 0)
    fixed = None if static is None else as_int(static)

    def run(axis, x):
        axis = fixed if axis is static else as_int(axis)
        r = x.ndim
        if not -r <= axis < r:
            raise ValueError(f"-input rank(-{r}) <= split_dim < input rank ({r}), but got {axis}")
        d = tuple(x.shape)[axis]
        if d % n:
            raise ValueError(f"Number of ways to split should evenly divide the split dimension, "
                             f"but got split_dim {axis % r} (size = {d}) and num_split {n}")
        if n == 1:
            return x
        return _split_parts(ctx, x, axis % r, [d // n] * n)
    return host_memory(run, inputs=(0,))


@KERNELS.register("SplitV")
def split_v(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    n = op.get_attr("num_split")
    static_axis = static_input(op, 2)
    fixed_axis = None if static_axis is None else as_int(static_axis)

    def run(x, sizes, axis):
        axis = fixed_axis if axis is static_axis else as_int(axis)
        sizes = [int(s) for s in np.reshape(sizes, -1).tolist()]
        r = x.ndim
        if not -r <= axis < r:
            raise ValueError(f"-input rank(-{r}) <= split_dim < input rank ({r}), but got {axis}")
        d = tuple(x.shape)[axis]
        known = sum(s for s in sizes if s != -1)
        message = (f"Determined shape must either match input shape along split_dim exactly if "
                   f"fully specified, or be less than the size of the input along split_dim if "
                   f"not fully specified.  Got: {known}")
        if -1 in sizes:
            if known > d:
                raise ValueError(message)
            sizes = [d - known if s == -1 else s for s in sizes]
        elif known != d:
            raise ValueError(message)
        if n == 1:
            return x
        return _split_parts(ctx, x, axis % r, sizes)
    return host_memory(run, inputs=(1, 2))


# ---------------------------------------------------------------------------------------------
# Pad, PadV2


def _pad_kernel(op, ctx, has_value: bool):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    dtype = np.dtype(op.outputs[0].dtype.as_numpy_dtype)
    width = _BITS.get(dtype.itemsize, dtype)
    zero = None if has_value else upload(ctx, np.zeros(1, width))

    def run(x, paddings, value=None):
        pairs = cpu_array._check_paddings(x, np.asarray(paddings), None)
        in_shape = tuple(int(d) for d in x.shape)
        out_shape = tuple(d + a + b for d, (a, b) in zip(in_shape, pairs))
        out = _runtime.empty(ctx, out_shape, dtype)
        n = _size(out_shape)
        if n == 0:
            return out
        fill = zero if value is None else _bits(_runtime.flat(on_device(ctx, value)))
        if not in_shape:  # a scalar pads to itself
            _copy_into(ctx, x, 1, 0, out, 1, 0, 1, 1)
            return out
        _runtime.launch(ctx, _pad, n)(_bits(_runtime.flat(x)), in_shape, tuple(a for a, _ in pairs),
                                      out_shape, fill, _bits(_runtime.flat(out)))
        return out
    if has_value:
        return host_memory(run, inputs=(1,))
    return host_memory(lambda x, paddings: run(x, paddings), inputs=(1,))


@KERNELS.register("Pad")
def pad(op, ctx):
    return _pad_kernel(op, ctx, has_value=False)


@KERNELS.register("PadV2")
def pad_v2(op, ctx):
    return _pad_kernel(op, ctx, has_value=True)


# ---------------------------------------------------------------------------------------------
# GatherV2, OneHot, UnsortedSegmentSum: index-driven kernels (indices stay on the device)


def _device_indices(ctx, indices, limit: int):
    """Indices that came in host memory are checked there (no sync needed) and uploaded;
    device indices out of range give zeros (see _gather_axis)."""
    if isinstance(indices, np.ndarray) or np.isscalar(indices):
        host = np.asarray(indices)
        if host.size and (host.min() < 0 or host.max() >= limit):
            raise ValueError(cpu_index._bad_index_error(host, limit))
        return upload(ctx, host)
    return indices


@KERNELS.register("GatherV2")
def gather_v2(op, ctx):
    if _is_int32(op.inputs[0]):
        return run_on_host(op, ctx)
    static = static_input(op, 2)
    fixed = None if static is None else as_int(static)

    def run(params, indices, axis):
        ax = fixed if axis is static else as_int(axis)
        r = params.ndim
        if not -r <= ax < r:
            raise ValueError(f"Expected axis in the range [{-r}, {r}), but got {ax}")
        ax %= r
        shape = tuple(int(d) for d in params.shape)
        limit = shape[ax]
        indices = _device_indices(ctx, indices, limit)
        out_shape = shape[:ax] + tuple(indices.shape) + shape[ax + 1:]
        out = _runtime.empty(ctx, out_shape, params.dtype)
        n = _size(out_shape)
        if n:
            inner = _size(shape[ax + 1:])
            _runtime.launch(ctx, _gather_axis, n)(_bits(_runtime.flat(params)), _runtime.flat(indices), limit,
                                                  inner, _bits(_runtime.flat(out)))
        return out
    return host_memory(run, inputs=(2,))


@KERNELS.register("OneHot")
def one_hot(op, ctx):
    axis = op.get_attr("axis")
    dtype = np.dtype(op.outputs[0].dtype.as_numpy_dtype)

    def run(indices, depth, on, off):
        d = as_int(depth)
        if d < 0:
            raise ValueError(f"depth must be non-negative, got: {d}")
        indices = on_device(ctx, indices)
        shape = tuple(int(s) for s in indices.shape)
        ax = len(shape) if axis == -1 else axis
        if not 0 <= ax <= len(shape):
            raise ValueError(f"Expected axis to be -1 or between [0, {len(shape)}).  But "
                             f"received: {axis}")
        out_shape = shape[:ax] + (d,) + shape[ax:]
        out = _runtime.empty(ctx, out_shape, dtype)
        n = _size(out_shape)
        if n:
            inner = _size(shape[ax:])
            on, off = on_device(ctx, on), on_device(ctx, off)
            _runtime.launch(ctx, _one_hot, n)(_runtime.flat(indices), d, inner, _bits(_runtime.flat(on)),
                                              _bits(_runtime.flat(off)), _bits(_runtime.flat(out)))
        return out
    return host_memory(run, inputs=(1,))


_ATOMIC_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64))


@KERNELS.register("UnsortedSegmentSum")
def unsorted_segment_sum(op, ctx):
    dtype = np.dtype(op.outputs[0].dtype.as_numpy_dtype)
    if dtype not in _ATOMIC_TYPES:
        # No device atomics for it (float16, complex): the CPU kernel in host memory.
        return run_on_host(op, ctx)

    def run(data, ids, num_segments):
        n = as_int(num_segments)
        if n < 0:
            raise ValueError(f"num_segments must be non-negative, got {n}")
        k = ids.ndim
        if tuple(data.shape[:k]) != tuple(ids.shape):
            raise ValueError(f"data.shape = {dims_text(data.shape)} does not start with "
                             f"segment_ids.shape = {dims_text(ids.shape)}")
        if isinstance(ids, np.ndarray):
            flat_ids = ids.reshape(-1)
            if flat_ids.size and flat_ids.max() >= n:
                raise ValueError(cpu_index._bad_index_error(np.where(ids < 0, 0, ids), n,
                                                            "segment_ids"))
            ids = upload(ctx, ids)
        inner = tuple(int(d) for d in data.shape[k:])
        out = _runtime.empty(ctx, (n,) + inner, dtype)
        flat_out = _runtime.flat(out)
        if out.size:
            _runtime.launch(ctx, fill_zero, int(out.size))(flat_out)
        if data.size and n:
            width = _size(inner)
            _runtime.launch(ctx, _segment_sum, int(data.size))(_runtime.flat(data), _runtime.flat(ids), width, n,
                                                               flat_out)
        return out
    return host_memory(run, inputs=(2,))
