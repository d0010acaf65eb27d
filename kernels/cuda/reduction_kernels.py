"""GPU kernels for reductions (Sum, Mean, Max, Min, Prod, All, Any) and ArgMax/ArgMin.

A reduction is done without transposes.  The input's dims are grouped into runs of kept and of
reduced dims (size-1 dims dropped, neighbours of one kind merged); each reduced run is then
removed by one pass over a ``(outer, R, inner)`` view, innermost run first, until none is left.
A pass uses one of two kernels:

- ``rows`` (inner == 1, long rows): a block per row and a shared-memory tree reduction;
- ``cols`` (inner > 1, or short rows): a thread per output walking R with stride ``inner``, so
  the threads of a warp read adjacent elements.

When a pass has too few outputs to fill the GPU (a full reduction, or a column sum of a tall
matrix), R is split into ``parts`` chunks: the pass writes ``parts`` partial results per output,
and a second pass reduces those.  Partials are combined in a fixed order, so results are
deterministic (no atomics).

float16 accumulates in float32; bool All/Any reduce the bytes as uint8 (min/max).  Mean is a Sum
whose last pass divides by the count (floats) or truncates toward zero (int64).  int32 inputs
are shape bookkeeping and reduce on the host (``run_on_host``), as do dtypes other than floats,
int64 and bool.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Sequence, Tuple

import numba
import numpy as np
from numba import cuda

from tfjupyter.ops import _shapes
from tfjupyter.ops.reduction_ops import normalize_axes

from . import KERNELS, _runtime, host_memory, run_on_host
from ._device import REDUCE_THREADS, block_reducer
from ._runtime import flat
from .elementwise_kernels import dims_text, launch_fill

__all__ = ["Reducer", "ROW_BLOCK"]

# Threads per block of the block-per-row kernels: the block reduction's size.
ROW_BLOCK = REDUCE_THREADS
# Rows at most this long are reduced by one thread each (a block would idle).
_SHORT_ROW = 32
# A split pass gives each part at least this many elements.
_MIN_CHUNK = 64 if _runtime.SIMULATOR else 1024


def _parallel_blocks(ctx) -> int:
    """How many blocks fill the device (tests lower this to exercise split passes)."""
    return ctx.state.max_blocks


# -- combine functions and identities --------------------------------------------------------------
def _combiner(kind: str) -> Callable:
    if kind in ("Sum", "Mean"):
        return lambda a, b: a + b
    if kind == "Prod":
        return lambda a, b: a * b
    if kind in ("Max", "Any"):
        def maximum(a, b):  # NaN wins, as np.maximum.reduce
            if a >= b or a != a:
                return a
            return b
        return maximum

    def minimum(a, b):
        if a <= b or a != a:
            return a
        return b
    return minimum


def _identity(kind: str, acc: np.dtype):
    if kind in ("Sum", "Mean", "Any"):
        return acc.type(0)
    if kind in ("Prod", "All"):
        return acc.type(1)
    if acc.kind == "f":
        return acc.type(-np.inf if kind == "Max" else np.inf)
    info = np.iinfo(acc)
    return acc.type(info.min if kind == "Max" else info.max)


def _finisher(mean: bool, acc: np.dtype) -> Callable:
    """What the last pass applies to a result: the mean's division, or nothing."""
    if not mean:
        return lambda v, d: v
    if acc.kind == "f":
        return lambda v, d: v / d

    def trunc_div(v, d):  # toward zero, as TensorFlow's integer Mean (d > 0)
        # On magnitudes: `//` of a negative int floors under the simulator (Python) but
        # truncates on the hardware (sdiv); of non-negative ints both agree.
        if v < 0:
            return -((-v) // d)
        return v // d
    return trunc_div


# -- kernels ---------------------------------------------------------------------------------------
_kernels: Dict[tuple, Callable] = {}


def _build_rows(combine, identity, acc_t, conv, finish):
    """Block b reduces part ``b % parts`` (``chunk`` elements) of row ``b // parts``."""
    block_reduce = block_reducer(combine)

    @_runtime.kernel
    def rows(x, row_len, chunk, parts, out, divisor):
        sm = cuda.shared.array(ROW_BLOCK, acc_t)
        tid = cuda.threadIdx.x
        for b in range(cuda.blockIdx.x, out.shape[0], cuda.gridDim.x):
            row = b // parts
            lo = (b - row * parts) * chunk
            hi = min(lo + chunk, row_len)
            base = row * row_len
            acc = identity
            for j in range(lo + tid, hi, ROW_BLOCK):
                acc = combine(acc, conv(x[base + j]))
            acc = block_reduce(sm, acc)  # ends with a barrier: sm is free for the next row
            if tid == 0:
                out[b] = finish(acc, divisor)
    return rows


def _build_cols(combine, identity, conv, finish):
    """Output t = (p, o, j) reduces x[o, lo:hi, j] for part p's range [lo, hi) of R."""
    @_runtime.kernel
    def cols(x, row_len, inner, chunk, parts, out, divisor):
        per_part = out.shape[0] // parts
        for t in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            p = t // per_part
            oj = t - p * per_part
            o = oj // inner
            j = oj - o * inner
            lo = p * chunk
            hi = min(lo + chunk, row_len)
            base = o * row_len * inner + j
            acc = identity
            for r in range(lo, hi):
                acc = combine(acc, conv(x[base + r * inner]))
            out[t] = finish(acc, divisor)
    return cols


def _kernel_pair(kind: str, acc: np.dtype, mean_last: bool):
    key = (kind, acc.str, mean_last)
    pair = _kernels.get(key)
    if pair is None:
        combine = cuda.jit(device=True)(_combiner(kind))
        conv_fn = acc.type
        conv = cuda.jit(device=True)(lambda v: conv_fn(v))
        finish = cuda.jit(device=True)(_finisher(mean_last, acc))
        identity = _identity(kind, acc)
        acc_t = numba.from_dtype(acc)
        pair = _kernels[key] = (_build_rows(combine, identity, acc_t, conv, finish),
                                _build_cols(combine, identity, conv, finish))
    return pair


def _split(row_len: int, parts: int) -> Tuple[int, int]:
    """(chunk, parts) covering ``row_len`` in ``parts`` or fewer chunks, none of them empty."""
    chunk = -(-row_len // parts)
    return chunk, -(-row_len // chunk)


def _groups(shape: Sequence[int], axes: Sequence[int]) -> List[Tuple[int, bool]]:
    """(size, reduced) runs of the input's dims: size-1 dims dropped, neighbours merged."""
    runs: List[List] = []
    reduced = set(axes)
    for d, n in enumerate(shape):
        if n == 1:
            continue
        r = d in reduced
        if runs and runs[-1][1] == r:
            runs[-1][0] *= n
        else:
            runs.append([n, r])
    return [(int(n), r) for n, r in runs]


class Reducer:
    """Reduces device arrays of one dtype along axes with one reduction kind.

    ``reducer(x, axes, out_shape)`` returns a new device array of ``out_shape`` (whose size is
    the product of the kept dims); ``axes`` are non-negative and distinct.
    """

    def __init__(self, ctx, kind: str, dtype: np.dtype):
        self.ctx = ctx
        self.kind = kind
        self.dtype = np.dtype(dtype)
        if self.dtype == np.bool_:
            self.acc = np.dtype(np.uint8)  # All = min, Any = max of the bytes
        elif self.dtype == np.float16:
            self.acc = np.dtype(np.float32)
        else:
            self.acc = self.dtype
        self.mean = kind == "Mean"
        self._mid = _kernel_pair("Mean" if self.mean else kind, self.acc, False)
        self._last = _kernel_pair(kind, self.acc, True) if self.mean else self._mid
        self._plans: Dict[tuple, Tuple[int, list]] = {}

    def _view(self, a):
        return a.view(np.uint8) if a.dtype == np.bool_ else a

    def _plan(self, shape: Tuple[int, ...], axes: Tuple[int, ...]) -> Tuple[int, list]:
        """(count, passes): how many elements each output reduces, and the (outer, R, inner)
        views of the passes, innermost reduced run first.  Cached per input shape and axes."""
        key = (shape, axes)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        count = 1
        for a in axes:
            count *= int(shape[a])
        runs = _groups(shape, axes)
        passes = []
        while any(r for _, r in runs):
            i = max(k for k, (_, r) in enumerate(runs) if r)
            outer = int(np.prod([n for n, _ in runs[:i]], dtype=np.int64))
            inner = int(np.prod([n for n, _ in runs[i + 1:]], dtype=np.int64))
            passes.append((outer, runs[i][0], inner))
            runs = runs[:i] + runs[i + 1:]
            if 0 < i < len(runs) and not runs[i - 1][1] and not runs[i][1]:
                runs[i - 1:i + 1] = [(runs[i - 1][0] * runs[i][0], False)]
        plan = (count, passes)
        if len(self._plans) < 64:
            self._plans[key] = plan
        return plan

    def __call__(self, x, axes: Sequence[int], out_shape: Sequence[int]):
        ctx = self.ctx
        out_shape = tuple(int(d) for d in out_shape)
        count, passes = self._plan(tuple(x.shape), tuple(axes))
        if not passes and count and x.size:  # only size-1 dims reduced: the same elements
            return x.reshape(out_shape)
        out = _runtime.empty(ctx, out_shape, self.dtype)
        if out.size == 0:
            return out
        if count == 0:  # an empty reduction: the identity (the mean of nothing is NaN)
            if self.mean:
                if self.acc.kind != "f":
                    raise ZeroDivisionError("Integer division by zero: mean over an empty axis")
                launch_fill(ctx, out, np.nan)
            else:
                launch_fill(ctx, out, _identity(self.kind, self.acc))
            return out
        src = self._view(flat(x))
        dst = self._view(flat(out))
        divisor = self.acc.type(count)
        for k, (outer, row_len, inner) in enumerate(passes):
            last = k == len(passes) - 1
            target = dst if last else _runtime.empty(ctx, (outer * inner,), self.acc)
            self._pass(src, outer, row_len, inner, target, last, divisor)
            src = target
        return out

    def _pass(self, x, outer: int, row_len: int, inner: int, out, last: bool, divisor) -> None:
        """Reduces the (outer, row_len, inner) view of ``x`` into ``out`` (outer * inner)."""
        ctx = self.ctx
        rows, cols = self._last if last else self._mid
        mid_rows, mid_cols = self._mid  # partial results are never divided
        div = divisor if last else self.acc.type(1)
        n_out = outer * inner
        blocks = _parallel_blocks(ctx)
        stream = ctx.state.stream
        if inner == 1 and row_len > _SHORT_ROW:
            parts = 1
            if outer < blocks:
                parts = max(1, min(-(-blocks // outer), row_len // _MIN_CHUNK))
            chunk, parts = _split(row_len, parts)
            if parts == 1:
                rows[min(outer, blocks), ROW_BLOCK, stream](x, row_len, chunk, 1, out, div)
                return
            partial = _runtime.empty(ctx, (outer * parts,), self.acc)
            mid_rows[min(outer * parts, blocks), ROW_BLOCK, stream](
                x, row_len, chunk, parts, partial, self.acc.type(1))
            self._pass(partial, outer, parts, 1, out, last, divisor)
            return
        threads = blocks * _runtime.THREADS
        parts = 1
        if n_out < threads and row_len > _SHORT_ROW:
            parts = max(1, min(-(-threads // n_out), row_len // _MIN_CHUNK))
        chunk, parts = _split(row_len, parts)
        if parts == 1:
            _runtime.launch(ctx, cols, n_out)(x, row_len, inner, chunk, 1, out, div)
            return
        partial = _runtime.empty(ctx, (parts * n_out,), self.acc)
        _runtime.launch(ctx, mid_cols, parts * n_out)(x, row_len, inner, chunk, parts, partial,
                                                      self.acc.type(1))
        self._pass(partial, 1, parts, n_out, out, last, divisor)


# -- op kernels ------------------------------------------------------------------------------------
def _on_device(kind: str, dtype: np.dtype) -> bool:
    if kind in ("All", "Any"):
        return dtype == np.bool_
    return dtype.kind == "f" or dtype == np.int64


def _out_shape(shape: Sequence[int], axes: Sequence[int], keep: bool) -> tuple:
    if keep:
        return tuple(1 if d in axes else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes)


@KERNELS.register("Sum", "Mean", "Max", "Min", "Prod", "All", "Any")
def reduction(op, ctx):
    dtype = np.dtype(op.inputs[0].dtype.as_numpy_dtype)
    if not _on_device(op.type, dtype):
        return run_on_host(op, ctx)
    reducer = Reducer(ctx, op.type, dtype)
    keep = op.get_attr("keep_dims")
    x_t, axes_t = op.inputs
    value, rank = _shapes.constant_value(axes_t), x_t.shape.ndims
    static_axes = None if value is None or rank is None else normalize_axes(value, rank)
    shapes: Dict[tuple, tuple] = {}

    def run(x, axes_value):
        if static_axes is not None and x.ndim == rank:
            axes = static_axes
        else:
            axes = normalize_axes(axes_value, x.ndim)
        key = (x.shape, axes)
        out_shape = shapes.get(key)
        if out_shape is None:
            out_shape = shapes[key] = _out_shape(x.shape, axes, keep)
        return reducer(x, axes, out_shape)
    return host_memory(run, inputs=(1,))


# -- ArgMax, ArgMin --------------------------------------------------------------------------------
def _arg_better(is_max: bool) -> Callable:
    """Whether candidate (v, i) beats (best, bi): a strict improvement, the first NaN, or an
    equal value at a smaller index (the first index wins, as np.argmax)."""
    def better(v, i, best, bi):
        if bi < 0:
            return i >= 0
        if i < 0:
            return False
        if v != v or best != best:
            if v != v and best != best:
                return i < bi
            return v != v
        if (v > best) if is_max else (v < best):
            return True
        return v == best and i < bi
    return better


def _build_arg_rows(better, val_t, conv):
    """Block b finds the best of part ``b % parts`` of row ``b // parts``.  With ``has_index``
    the candidates' indices come from ``xi`` (a second pass over partial results)."""
    @_runtime.kernel
    def arg_rows(x, xi, has_index, row_len, chunk, parts, out_v, out_i):
        sv = cuda.shared.array(ROW_BLOCK, val_t)
        si = cuda.shared.array(ROW_BLOCK, numba.int64)
        tid = cuda.threadIdx.x
        for b in range(cuda.blockIdx.x, out_i.shape[0], cuda.gridDim.x):
            row = b // parts
            lo = (b - row * parts) * chunk
            hi = min(lo + chunk, row_len)
            base = row * row_len
            best = conv(x[base])
            bi = np.int64(-1)
            for j in range(lo + tid, hi, ROW_BLOCK):
                v = conv(x[base + j])
                k = xi[base + j] if has_index else np.int64(j)
                if better(v, k, best, bi):
                    best = v
                    bi = k
            sv[tid] = best
            si[tid] = bi
            cuda.syncthreads()
            s = ROW_BLOCK // 2
            while s > 0:
                if tid < s and better(sv[tid + s], si[tid + s], sv[tid], si[tid]):
                    sv[tid] = sv[tid + s]
                    si[tid] = si[tid + s]
                cuda.syncthreads()
                s //= 2
            if tid == 0:
                out_v[b] = sv[0]
                out_i[b] = si[0]
            cuda.syncthreads()
    return arg_rows


def _build_arg_cols(better, conv):
    @_runtime.kernel
    def arg_cols(x, row_len, inner, out_i):
        for t in range(cuda.grid(1), out_i.shape[0], cuda.gridsize(1)):
            o = t // inner
            j = t - o * inner
            base = o * row_len * inner + j
            best = conv(x[base])
            bi = np.int64(0)
            for r in range(1, row_len):
                v = conv(x[base + r * inner])
                if better(v, np.int64(r), best, bi):
                    best = v
                    bi = np.int64(r)
            out_i[t] = bi
    return arg_cols


def _arg_kernels(is_max: bool, dtype: np.dtype):
    key = ("arg", is_max, dtype.str)
    found = _kernels.get(key)
    if found is None:
        val = np.dtype(np.float32) if dtype == np.float16 else dtype
        conv_fn = val.type
        conv = cuda.jit(device=True)(lambda v: conv_fn(v))
        better = cuda.jit(device=True)(_arg_better(is_max))
        found = _kernels[key] = (val, _build_arg_rows(better, numba.from_dtype(val), conv),
                                 _build_arg_cols(better, conv))
    return found


@KERNELS.register("ArgMax", "ArgMin")
def arg_max_or_min(op, ctx):
    dtype = np.dtype(op.inputs[0].dtype.as_numpy_dtype)
    if dtype.kind not in "fiu":
        return run_on_host(op, ctx)
    out_type = np.dtype(op.get_attr("output_type").as_numpy_dtype)
    val, rows, cols = _arg_kernels(op.type == "ArgMax", dtype)
    x_t, dim_t = op.inputs
    value, rank = _shapes.constant_value(dim_t), x_t.shape.ndims
    static_axis = None if value is None or not rank else int(value) % rank
    no_index = None  # a 1-element placeholder for xi in first passes (allocated on first use)

    def run(x, dim):
        nonlocal no_index
        ndim = x.ndim
        if static_axis is not None and ndim == rank:
            axis = static_axis
        else:
            axis = int(np.reshape(dim, ()))
            if not -ndim <= axis < ndim:
                raise ValueError(f"Expected dimension in the range [{-ndim}, {ndim}), but got "
                                 f"{axis}")
            axis %= ndim
        shape = x.shape
        if shape[axis] == 0:
            raise ValueError(f"Reduction axis {axis} is empty in shape {dims_text(shape)}")
        out_shape = shape[:axis] + shape[axis + 1:]
        out = _runtime.empty(ctx, out_shape, out_type)
        n_out = out.size
        if n_out == 0:
            return out
        outer = int(np.prod(shape[:axis], dtype=np.int64))
        row_len = int(shape[axis])
        inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
        xf = flat(x)
        stream = ctx.state.stream
        blocks = _parallel_blocks(ctx)
        if inner > 1 or row_len <= _SHORT_ROW:
            _runtime.launch(ctx, cols, n_out)(xf, row_len, inner, flat(out))
            return out
        if no_index is None:
            no_index = _runtime.empty(ctx, (1,), np.int64)
        parts = 1
        if outer < blocks:
            parts = max(1, min(-(-blocks // outer), row_len // _MIN_CHUNK))
        chunk, parts = _split(row_len, parts)
        if parts == 1:
            values = _runtime.empty(ctx, (outer,), val)
            rows[min(outer, blocks), ROW_BLOCK, stream](xf, no_index, False, row_len, chunk, 1,
                                                        values, flat(out))
            return out
        part_v = _runtime.empty(ctx, (outer * parts,), val)
        part_i = _runtime.empty(ctx, (outer * parts,), np.int64)
        rows[min(outer * parts, blocks), ROW_BLOCK, stream](xf, no_index, False, row_len, chunk,
                                                            parts, part_v, part_i)
        values = _runtime.empty(ctx, (outer,), val)
        rows[min(outer, blocks), ROW_BLOCK, stream](part_v, part_i, True, parts, parts, 1,
                                                    values, flat(out))
        return out
    return host_memory(run, inputs=(1,))
