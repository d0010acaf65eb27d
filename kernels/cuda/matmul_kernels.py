"""GPU matrix products: MatMul, BatchMatMul/BatchMatMulV2, and the GEMM the convolutions use.

Two paths compute ``C = op(A) @ op(B)``:

- CuPy's ``matmul`` (cuBLAS) on zero-copy views of the Numba arrays, queued on the device's
  stream, with any temporaries CuPy needs taken from our memory pool, when CuPy is importable;
- a Numba kernel written like the classic SGEMM optimisation steps: a block computes a
  ``BM x BN`` tile of C from ``BK``-deep slabs of A and B staged in shared memory (double
  buffered, so one barrier per slab), each thread accumulates a ``TM x TN`` block of the tile in
  registers, and the transposes are folded into the global-load indexing.

``TFJUPYTER_GEMM=numba|cupy`` forces a path; the default is CuPy when it imports (never under the
simulator). The Numba kernel always exists: the tests run it, and it is the fallback.

Thread ``(tx, ty)`` of a tile owns rows ``ty + TY*i`` and columns ``tx + TX*j`` (strided, not
contiguous): a warp then reads 16+ consecutive words of a shared slab per step, which no two
threads' banks collide on, and writes consecutive columns of C, which coalesces.  Slabs of an
operand whose global layout runs along k (A untransposed, B transposed) are stored with a row
padding of 4 words, which makes their transposing stores into shared memory conflict-free.

Small products get smaller tiles, so that there are enough blocks for the multiprocessors, and
when even those are too few, the k range is split over blocks (split-K) whose partial products a
second kernel sums: the weight gradients of dense and convolution layers are such products
(outputs of a few thousand elements, inner dimension the batch).
"""
from __future__ import annotations

import functools
import math
import os
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from numba import cuda, uint64
from numba.np import numpy_support

from tfjupyter.framework import errors

from . import KERNELS, _runtime

__all__ = ["TileConfig", "CONFIGS", "gemm", "gemm_product", "matmul2d", "gemm_backend",
           "batch_layout"]


class TileConfig(NamedTuple):
    bm: int  # rows of C per block
    bn: int  # columns of C per block
    bk: int  # depth of a shared-memory slab
    tm: int  # rows of C per thread
    tn: int  # columns of C per thread

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)


# Largest first.  On a GPU each has 256 threads; the simulator runs the same code with tiles
# small enough that a test multiplies in milliseconds rather than minutes.
if _runtime.SIMULATOR:
    CONFIGS: Tuple[TileConfig, ...] = (TileConfig(16, 16, 4, 2, 2), TileConfig(8, 8, 4, 2, 2))
else:
    CONFIGS = (TileConfig(128, 128, 8, 8, 8), TileConfig(64, 64, 8, 4, 4),
               TileConfig(32, 32, 8, 2, 2))

for _cfg in CONFIGS:
    # Every thread loads the same number of elements of each slab.
    assert (_cfg.bm * _cfg.bk) % _cfg.threads == 0 and (_cfg.bk * _cfg.bn) % _cfg.threads == 0

# Padding (in elements) of the rows of the shared slabs (see the module docstring).
_PAD = 4
# Byte alignment of the shared slabs, for 16-byte vector loads (the simulator has no notion).
_SHARED_ALIGN = None if _runtime.SIMULATOR else 16
# Tiles are visited in groups of this many tile-rows, column by column, so that the blocks
# running at one time share panels of A and B in the L2 cache.
_GROUP_M = 8
# Split-K: a split covers at least this many slabs; splits are added until there are about
# this many blocks per multiprocessor.
_MIN_SLABS_PER_SPLIT = 8
_SPLIT_TARGET_BLOCKS_PER_SM = 2
# TFJUPYTER_GEMM_MAXREG caps the tiled kernel's registers per thread (for tuning on a GPU: the
# 128x128 tiles need ~200 uncapped, one block per SM; 128 fits two blocks at the cost of spills).
_MAXREG = int(os.environ.get("TFJUPYTER_GEMM_MAXREG", "0") or 0)
_JIT_OPTIONS = {"max_registers": _MAXREG} if _MAXREG and not _runtime.SIMULATOR else {}
# The batch dimensions a launch walks (more are looped over on the host).
_MAX_BATCH_DIMS = 3


# ---------------------------------------------------------------------------------------------
# The tiled kernel


def _accumulator_dtype(dtype: np.dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return np.dtype(np.float32)
    if dtype.kind in "iu":
        return np.dtype(np.int64)
    return dtype


@cuda.jit(device=True)
def _slab_index(e, k_rows, width, depth):  # pragma: no cover - device code
    """(q, r) of the e-th element a block moves of a slab: q along k (< depth), r along m or n
    (< width).  Consecutive e follow the operand's global rows, so that loads coalesce: rows
    along k (``k_rows``: A transposed, B not) are ``width`` long, the others ``depth``."""
    if k_rows:
        q = e // width
        return q, e - q * width
    r = e // depth
    return e - r * depth, r


@functools.lru_cache(maxsize=None)
def _tiled_kernel(cfg: TileConfig, ta: bool, tb: bool, acc_dtype: str):
    """The GEMM kernel for one tile shape, transposition pair and accumulator type.

    Arguments: flat A, B, C; m, n, k; the base offsets of A, B, C; the batch walked as up to
    three dimensions (sizes d0..d2, A/B element strides per dimension, 0 where broadcast; C's
    matrices are contiguous); the k-split (splits, elements per split, C's stride between
    splits); and whether to add into C rather than overwrite it.
    """
    BM, BN, BK, TM, TN = cfg
    TX, TY = BN // TN, BM // TM
    NT = TX * TY
    LA, LB = BM * BK // NT, BK * BN // NT
    # A thread's rows (columns) come in runs of VM (VN) adjacent ones, runs GM (GN) apart: its
    # fragment of a slab row is then read with vector loads, and a quarter warp's 16-byte
    # reads cover 32 distinct banks.
    VM, VN = min(TM, 4), min(TN, 4)
    GM, GN = BM * VM // TM, BN * VN // TN
    # Row length of the shared slabs: padded where the stores transpose (a multiple of 4, so
    # that the vector loads stay aligned).
    WA = BM + (0 if ta else _PAD)
    WB = BN + (_PAD if tb else 0)
    SA, SB = 2 * BK * WA, 2 * BK * WB
    ALIGN = _SHARED_ALIGN
    ACC = numpy_support.from_dtype(np.dtype(acc_dtype))
    TA, TB = ta, tb
    B_K_ROWS = not tb  # B's global rows run along k unless it is transposed
    GROUP = _GROUP_M

    @_runtime.kernel(**_JIT_OPTIONS)
    def kernel(a, b, c, m, n, k, a_base, b_base, c_base,
               d0, d1, d2, sa0, sa1, sa2, sb0, sb1, sb2,
               splits, k_per_split, c_split_stride, accumulate):
        tid = cuda.threadIdx.x
        tx = tid % TX
        ty = tid // TX
        # Flat, and indexed with unsigned integers: no negative-index fix-up hides from the
        # compiler that a fragment's words are adjacent, so its reads become vector loads.
        As = cuda.shared.array(SA, ACC, alignment=ALIGN)
        Bs = cuda.shared.array(SB, ACC, alignment=ALIGN)
        acc = cuda.local.array((TM, TN), ACC)
        fa = cuda.local.array(TM, ACC)
        fb = cuda.local.array(TN, ACC)
        ra = cuda.local.array(LA, ACC)
        rb = cuda.local.array(LB, ACC)
        # Per load slot: the global index of its element in the first slab (-1: the row or
        # column is past the matrix's edge).
        ia = cuda.local.array(LA, np.int64)
        ib = cuda.local.array(LB, np.int64)

        tiles_m = (m + BM - 1) // BM
        tiles_n = (n + BN - 1) // BN
        per_matrix = tiles_m * tiles_n
        batch = d0 * d1 * d2
        total = per_matrix * batch * splits
        # A slab further along A (B): k moves down rows when A is transposed (B is not).
        step_a = BK * m if TA else BK
        step_b = BK if TB else BK * n
        for t in range(cuda.blockIdx.x, total, cuda.gridDim.x):
            # Which split, which matrix of the batch, which tile (grouped order).
            split = t // (per_matrix * batch)
            rest = t - split * (per_matrix * batch)
            mat = rest // per_matrix
            tile = rest - mat * per_matrix
            in_group = GROUP * tiles_n
            first_m = (tile // in_group) * GROUP
            group_rows = min(tiles_m - first_m, GROUP)
            tile_m = first_m + (tile % in_group) % group_rows
            tile_n = (tile % in_group) // group_rows
            row0 = tile_m * BM
            col0 = tile_n * BN

            i2 = mat % d2
            i1 = (mat // d2) % d1
            i0 = mat // (d2 * d1)
            a_off = a_base + i0 * sa0 + i1 * sa1 + i2 * sa2
            b_off = b_base + i0 * sb0 + i1 * sb1 + i2 * sb2
            c_off = c_base + split * c_split_stride + mat * m * n
            k_lo = split * k_per_split
            k_hi = min(k, k_lo + k_per_split)

            for l in range(LA):
                q, r = _slab_index(tid + NT * l, TA, BM, BK)
                if TA:
                    ia[l] = a_off + (k_lo + q) * m + row0 + r if row0 + r < m else -1
                else:
                    ia[l] = a_off + (row0 + r) * k + k_lo + q if row0 + r < m else -1
            for l in range(LB):
                q, r = _slab_index(tid + NT * l, B_K_ROWS, BN, BK)
                if TB:
                    ib[l] = b_off + (col0 + r) * k + k_lo + q if col0 + r < n else -1
                else:
                    ib[l] = b_off + (k_lo + q) * n + col0 + r if col0 + r < n else -1

            for i in range(TM):
                for j in range(TN):
                    acc[i, j] = 0

            slabs = (k_hi - k_lo + BK - 1) // BK
            # Step -1 only loads slab 0; step s multiplies slab s while slab s+1 loads.
            for s in range(-1, slabs):
                cur = s & 1
                nxt = s + 1
                if nxt < slabs:
                    kk0 = k_lo + nxt * BK
                    for l in range(LA):
                        q = (tid + NT * l) // BM if TA else (tid + NT * l) % BK
                        if ia[l] >= 0 and kk0 + q < k_hi:
                            ra[l] = a[ia[l] + nxt * step_a]
                        else:
                            ra[l] = 0
                    for l in range(LB):
                        q = (tid + NT * l) % BK if TB else (tid + NT * l) // BN
                        if ib[l] >= 0 and kk0 + q < k_hi:
                            rb[l] = b[ib[l] + nxt * step_b]
                        else:
                            rb[l] = 0
                if s >= 0:
                    for q in range(BK):
                        for g in range(TM // VM):
                            at = (cur * BK + q) * WA + g * GM + ty * VM
                            for v in range(VM):
                                fa[g * VM + v] = As[uint64(at + v)]
                        for g in range(TN // VN):
                            at = (cur * BK + q) * WB + g * GN + tx * VN
                            for v in range(VN):
                                fb[g * VN + v] = Bs[uint64(at + v)]
                        for i in range(TM):
                            for j in range(TN):
                                acc[i, j] += fa[i] * fb[j]
                if nxt < slabs:
                    # Into the other buffer: its last readers passed the barrier that ended
                    # the previous step.
                    buf = nxt & 1
                    for l in range(LA):
                        q, r = _slab_index(tid + NT * l, TA, BM, BK)
                        As[(buf * BK + q) * WA + r] = ra[l]
                    for l in range(LB):
                        q, r = _slab_index(tid + NT * l, B_K_ROWS, BN, BK)
                        Bs[(buf * BK + q) * WB + r] = rb[l]
                cuda.syncthreads()

            for i in range(TM):
                row = row0 + (i // VM) * GM + ty * VM + i % VM
                if row < m:
                    base = c_off + row * n
                    for j in range(TN):
                        col = col0 + (j // VN) * GN + tx * VN + j % VN
                        if col < n:
                            if accumulate:
                                c[base + col] += acc[i, j]
                            else:
                                c[base + col] = acc[i, j]
    return kernel


@_runtime.kernel
def _sum_splits(parts, splits, size, c, c_base, accumulate):
    """c[c_base + i] (+)= sum of the split-K partial products parts[s * size + i]."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, size, stride):
        total = parts[i]
        for s in range(1, splits):
            total += parts[s * size + i]
        if accumulate:
            c[c_base + i] += total
        else:
            c[c_base + i] = total


@_runtime.kernel
def _fill_zero(c, c_base, size):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, size, stride):
        c[c_base + i] = 0


# ---------------------------------------------------------------------------------------------
# Launch planning


class BatchLayout(NamedTuple):
    """The batch of a batched product: output batch shape, and per walked dimension its size
    and the element strides of A's and B's matrices (0 where the operand is broadcast)."""
    shape: Tuple[int, ...]
    dims: Tuple[Tuple[int, int, int], ...]


@functools.lru_cache(maxsize=256)
def batch_layout(a_batch: Tuple[int, ...], b_batch: Tuple[int, ...], a_matrix: int,
                 b_matrix: int) -> BatchLayout:
    """Broadcasts two batch shapes (numpy rules) and merges the dimensions a kernel can walk as
    one: those where both operands step (or stay) uniformly."""
    rank = max(len(a_batch), len(b_batch))
    a_full = (1,) * (rank - len(a_batch)) + tuple(a_batch)
    b_full = (1,) * (rank - len(b_batch)) + tuple(b_batch)
    shape = []
    for da, db in zip(a_full, b_full):
        if da != db and da != 1 and db != 1:
            raise ValueError(f"batch dimensions {list(a_batch)} and {list(b_batch)} are not "
                             f"broadcastable")
        shape.append(max(da, db) if da and db else 0)

    def strides(full, per_matrix):
        out, step = [0] * rank, per_matrix
        for i in range(rank - 1, -1, -1):
            out[i] = step if full[i] != 1 else 0
            step *= full[i]
        return out
    sa, sb = strides(a_full, a_matrix), strides(b_full, b_matrix)
    dims: List[Tuple[int, int, int]] = []
    for size, xa, xb in zip(shape, sa, sb):
        if size == 1:
            continue
        if dims:
            psize, pa, pb = dims[-1]
            # The previous (outer) dimension continues this one for both operands.
            if pa == xa * size and pb == xb * size:
                dims[-1] = (psize * size, xa, xb)
                continue
        dims.append((size, xa, xb))
    return BatchLayout(tuple(shape), tuple(dims))


def _plan(cfgs: Sequence[TileConfig], m: int, n: int, k: int, batch: int,
          sms: int) -> Tuple[TileConfig, int]:
    """(tile config, k-splits): the largest tiles that still make a wave of blocks, else the
    smallest tiles and as many k-splits as fill the GPU while each split keeps enough slabs."""
    for cfg in cfgs:
        tiles = batch * math.ceil(m / cfg.bm) * math.ceil(n / cfg.bn)
        if tiles >= sms:
            return cfg, 1
    cfg = cfgs[-1]
    tiles = batch * math.ceil(m / cfg.bm) * math.ceil(n / cfg.bn)
    want = math.ceil(_SPLIT_TARGET_BLOCKS_PER_SM * sms / tiles)
    most = max(1, k // (cfg.bk * _MIN_SLABS_PER_SPLIT))
    return cfg, max(1, min(want, most))


def _max_grid(ctx) -> int:
    # Under the simulator a block's threads are Python threads: one block walks every tile.
    return 1 if _runtime.SIMULATOR else 1 << 30


# ---------------------------------------------------------------------------------------------
# The Numba GEMM


def gemm(ctx, a, b, c, m: int, n: int, k: int, trans_a: bool = False, trans_b: bool = False,
         layout: Optional[BatchLayout] = None, a_offset: int = 0, b_offset: int = 0,
         c_offset: int = 0, accumulate: bool = False, config: Optional[TileConfig] = None,
         splits: Optional[int] = None) -> None:
    """C (+)= op(A) @ op(B) with the Numba kernel, queued on ctx's stream.

    ``a``, ``b``, ``c`` are 1-D (flat) device arrays; the matrices start at the offsets, are
    row-major, ``op(A)`` is m x k (A itself k x m when ``trans_a``), ``op(B)`` k x n.  With a
    ``layout`` (see :func:`batch_layout`) the product is batched: C holds the batch of m x n
    results contiguously.  ``config``/``splits`` override the launch plan (tests use them).
    """
    layout = layout or BatchLayout((), ())
    batch = math.prod(d[0] for d in layout.dims)
    if m == 0 or n == 0 or batch == 0:
        return
    state = ctx.state
    if k == 0:
        if not accumulate:
            size = batch * m * n
            _runtime.launch(ctx, _fill_zero, size)(c, c_offset, size)
        return
    plan_cfg, plan_splits = _plan(CONFIGS, m, n, k, batch, state.physical.multiprocessors)
    cfg = config or plan_cfg
    splits = splits or (plan_splits if config is None else 1)
    acc_dtype = _accumulator_dtype(c.dtype)
    kernel = _tiled_kernel(cfg, bool(trans_a), bool(trans_b), acc_dtype.str)

    dims = list(layout.dims)
    outer = dims[:-_MAX_BATCH_DIMS] if len(dims) > _MAX_BATCH_DIMS else []
    walked = dims[len(outer):]
    walked = [(1, 0, 0)] * (_MAX_BATCH_DIMS - len(walked)) + walked
    (d0, sa0, sb0), (d1, sa1, sb1), (d2, sa2, sb2) = walked
    walked_batch = d0 * d1 * d2
    size = walked_batch * m * n

    k_per_split = k
    if splits > 1:
        # Whole slabs per split; recount, as rounding may leave fewer splits needed.
        k_per_split = math.ceil(math.ceil(k / splits) / cfg.bk) * cfg.bk
        splits = math.ceil(k / k_per_split)
    parts = None
    if splits > 1:
        parts = _runtime.empty(ctx, (splits * size,), acc_dtype)

    tiles = walked_batch * math.ceil(m / cfg.bm) * math.ceil(n / cfg.bn) * splits
    grid = max(1, min(tiles, _max_grid(ctx)))
    launch = kernel[grid, cfg.threads, state.stream]
    for number, index in enumerate(np.ndindex(*(d[0] for d in outer))):
        # Dimensions beyond what a launch walks: one launch per index of them.
        a_base = a_offset + sum(i * d[1] for i, d in zip(index, outer))
        b_base = b_offset + sum(i * d[2] for i, d in zip(index, outer))
        c_base = c_offset + number * size
        if parts is None:
            launch(a, b, c, m, n, k, a_base, b_base, c_base, d0, d1, d2, sa0, sa1, sa2,
                   sb0, sb1, sb2, 1, k_per_split, 0, accumulate)
        else:
            launch(a, b, parts, m, n, k, a_base, b_base, 0, d0, d1, d2, sa0, sa1, sa2,
                   sb0, sb1, sb2, splits, k_per_split, size, False)
            _runtime.launch(ctx, _sum_splits, size)(parts, splits, size, c, c_base, accumulate)


# ---------------------------------------------------------------------------------------------
# The CuPy path


def gemm_backend() -> str:
    """'cupy' or 'numba': TFJUPYTER_GEMM when set, else CuPy when it imports (not simulated)."""
    forced = os.environ.get("TFJUPYTER_GEMM", "").strip().lower()
    if forced not in ("", "numba", "cupy"):
        raise ValueError(f"TFJUPYTER_GEMM must be 'numba' or 'cupy', got {forced!r}")
    if forced == "numba" or _runtime.SIMULATOR:
        return "numba"
    if _cupy() is None:
        if forced == "cupy":
            raise ImportError("TFJUPYTER_GEMM=cupy but CuPy cannot be imported")
        return "numba"
    return "cupy"


@functools.lru_cache(maxsize=1)
def _cupy():
    try:
        import cupy
    except Exception:  # not installed, or no matching CUDA runtime
        return None
    return cupy


def _cupy_pointer(cupy, array, device_id: int):
    """A CuPy MemoryPointer to a Numba device array's memory, which keeps the array alive."""
    nbytes = array.size * array.dtype.itemsize
    ptr = (array.device_ctypes_pointer.value or 0) if nbytes else 0
    return cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(ptr, nbytes, array, device_id), 0)


def _cupy_view(cupy, array, device_id: int):
    """A CuPy array over a Numba device array's memory: no copy, and unlike going through
    ``__cuda_array_interface__``, no synchronisation with the array's stream (all our work is
    on that one stream already)."""
    return cupy.ndarray(array.shape, array.dtype, _cupy_pointer(cupy, array, device_id))


class _CupyStream:
    """The device's Numba stream seen by CuPy, made once per device."""

    _streams: Dict[int, object] = {}

    @classmethod
    def of(cls, cupy, state):
        key = id(state)
        stream = cls._streams.get(key)
        if stream is None:
            stream = cls._streams[key] = cupy.cuda.ExternalStream(int(state.stream))
        return stream


def _cupy_matmul(ctx, x, y, adj_x: bool, adj_y: bool, out, accumulate: bool = False) -> None:
    cupy = _cupy()
    device_id = ctx.state.physical.index

    def allocate(nbytes: int):
        # CuPy's temporaries (the product ``+=`` adds, contiguous copies of batched operands)
        # come from our pool as Numba arrays: CuPy's own pool would allocate beside the
        # BlockPool, which may hold most of the GPU.  They go back to the pool when CuPy drops
        # them; reusing them is safe in stream order, CuPy runs on our stream.
        return _cupy_pointer(cupy, _runtime.empty(ctx, (nbytes,), np.uint8), device_id)

    # using_allocator is thread-local: CuPy use elsewhere in the process keeps its allocator.
    with cupy.cuda.Device(device_id), _CupyStream.of(cupy, ctx.state), \
            cupy.cuda.using_allocator(allocate):
        cx, cy, co = (_cupy_view(cupy, v, device_id) for v in (x, y, out))
        if adj_x:
            cx = cupy.swapaxes(cx, -1, -2)
        if adj_y:
            cy = cupy.swapaxes(cy, -1, -2)
        if accumulate:
            co += cupy.matmul(cx, cy)
        else:
            cupy.matmul(cx, cy, out=co)


# ---------------------------------------------------------------------------------------------
# Products of whole device arrays


def matmul2d(ctx, a, b, trans_a: bool = False, trans_b: bool = False, out=None,
             accumulate: bool = False):
    """op(a) @ op(b) of two 2-D device arrays into ``out`` (new when None)."""
    m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
    kb, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
    if k != kb:
        raise ValueError(f"Matrix size-incompatible: In[0]: {list(a.shape)}, "
                         f"In[1]: {list(b.shape)}")
    if out is None:
        out = _runtime.empty(ctx, (m, n), a.dtype)
    if out.size == 0:
        return out
    if not accumulate and k and a.dtype.kind == "f" and gemm_backend() == "cupy":
        _cupy_matmul(ctx, a, b, trans_a, trans_b, out)
        return out
    gemm(ctx, _runtime.flat(a), _runtime.flat(b), _runtime.flat(out), m, n, k, trans_a, trans_b,
         BatchLayout((), ()), accumulate=accumulate)
    return out


def gemm_product(ctx, a, b, c, m: int, n: int, k: int, trans_a: bool = False,
                 trans_b: bool = False, a_offset: int = 0, b_offset: int = 0, c_offset: int = 0,
                 accumulate: bool = False) -> None:
    """C (+)= op(A) @ op(B) on matrices inside flat device arrays (as :func:`gemm`), by
    cuBLAS when the CuPy path is on, else by the Numba kernel."""
    if m == 0 or n == 0:
        return
    if k and c.dtype.kind == "f" and gemm_backend() == "cupy":
        def view(array, offset, rows, cols):
            return array[offset:offset + rows * cols].reshape(rows, cols)
        a2 = view(a, a_offset, *((k, m) if trans_a else (m, k)))
        b2 = view(b, b_offset, *((n, k) if trans_b else (k, n)))
        c2 = view(c, c_offset, m, n)
        _cupy_matmul(ctx, a2, b2, trans_a, trans_b, c2, accumulate)
        return
    gemm(ctx, a, b, c, m, n, k, trans_a, trans_b, a_offset=a_offset, b_offset=b_offset,
         c_offset=c_offset, accumulate=accumulate)


def _check_float_or_int(op, dtype: np.dtype) -> None:
    if dtype.kind not in "fiu":
        raise errors.InvalidArgumentError(
            None, op, f"{op.type} op '{op.name}': no GPU kernel for dtype {dtype}")


@KERNELS.register("MatMul")
def matmul_kernel(op, ctx):
    ta, tb = bool(op.get_attr("transpose_a")), bool(op.get_attr("transpose_b"))
    _check_float_or_int(op, np.dtype(op.outputs[0].dtype.as_numpy_dtype))

    def run(a, b):
        if a.ndim != 2 or b.ndim != 2:
            raise errors.InvalidArgumentError(
                None, op, f"{op.name}: In[0] and In[1] must be matrices, got shapes "
                f"{list(a.shape)} and {list(b.shape)}")
        try:
            return matmul2d(ctx, a, b, ta, tb)
        except ValueError as e:
            raise errors.InvalidArgumentError(None, op, f"{op.name}: {e}") from None
    return run


@KERNELS.register("BatchMatMul", "BatchMatMulV2")
def batch_matmul_kernel(op, ctx):
    adj_x, adj_y = bool(op.get_attr("adj_x")), bool(op.get_attr("adj_y"))
    _check_float_or_int(op, np.dtype(op.outputs[0].dtype.as_numpy_dtype))
    strict = op.type == "BatchMatMul"  # V1 wants equal batch dimensions

    def run(x, y):
        if x.ndim < 2 or y.ndim < 2:
            raise errors.InvalidArgumentError(
                None, op, f"{op.name}: In[0] and In[1] must have rank >= 2, got shapes "
                f"{list(x.shape)} and {list(y.shape)}")
        xs, ys = tuple(x.shape), tuple(y.shape)  # simulator shapes take no negative index
        m, k = (xs[-1], xs[-2]) if adj_x else xs[-2:]
        ky, n = (ys[-1], ys[-2]) if adj_y else ys[-2:]
        if k != ky:
            raise errors.InvalidArgumentError(
                None, op, f"{op.name}: Matrix size-incompatible: In[0]: {list(x.shape)}, "
                f"In[1]: {list(y.shape)}")
        if strict and xs[:-2] != ys[:-2]:
            raise errors.InvalidArgumentError(
                None, op, f"In[0] and In[1] must have compatible batch dimensions: "
                f"{list(x.shape)} vs. {list(y.shape)}")
        try:
            layout = batch_layout(xs[:-2], ys[:-2], m * k, k * n)
        except ValueError as e:
            raise errors.InvalidArgumentError(
                None, op, f"{op.name}: In[0] and In[1] must have compatible batch "
                f"dimensions: {list(x.shape)} vs. {list(y.shape)} ({e})") from None
        out = _runtime.empty(ctx, layout.shape + (m, n), x.dtype)
        if out.size == 0:
            return out
        if k and x.dtype.kind == "f" and gemm_backend() == "cupy":
            _cupy_matmul(ctx, x, y, adj_x, adj_y, out)
            return out
        gemm(ctx, _runtime.flat(x), _runtime.flat(y), _runtime.flat(out), m, n, k, adj_x, adj_y, layout)
        return out
    return run
