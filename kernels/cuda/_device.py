"""Device code shared by several GPU kernel modules.

- block reductions: the shared-memory tree that combines one value per thread of a block
  (softmax rows, losses, L2Loss in nn_kernels; the block-per-row passes of reduction_kernels);
- ``fill_zero``: the grid-stride kernel that zeroes a flat array.
"""
from __future__ import annotations

from typing import Callable

from numba import cuda

from ._runtime import SIMULATOR, kernel

__all__ = ["REDUCE_THREADS", "block_reducer", "block_sum", "block_max", "fill_zero"]

# Threads of the blocks that reduce with block_reducer (a power of two: the tree halves it).  A
# compile-time constant, so that the tree's loop unrolls.
REDUCE_THREADS = 32 if SIMULATOR else 256


def block_reducer(combine: Callable) -> Callable:
    """A device function ``reduce(shared, value)``: ``combine`` of the ``value`` of every thread
    of the block, returned to every thread.

    ``combine`` is a device function ``(a, b) -> combined``; it is closed over (not passed)
    because Numba compiles one specialised tree per combine.  The block has REDUCE_THREADS
    threads, every one of which must call ``reduce`` (it has barriers); ``shared`` holds
    REDUCE_THREADS elements of the accumulating type.
    """
    @cuda.jit(device=True)
    def reduce(shared, value):  # pragma: no cover - device code
        tid = cuda.threadIdx.x
        shared[tid] = value
        cuda.syncthreads()
        step = REDUCE_THREADS // 2
        while step > 0:
            if tid < step:
                shared[tid] = combine(shared[tid], shared[tid + step])
            cuda.syncthreads()
            step //= 2
        result = shared[0]
        # Every thread has read shared[0] before any writes shared again (a caller's next
        # row or next reduction reuses the same buffer).
        cuda.syncthreads()
        return result
    return reduce


@cuda.jit(device=True)
def _add(a, b):  # pragma: no cover - device code
    return a + b


@cuda.jit(device=True)
def _larger(a, b):  # pragma: no cover - device code
    # b only when strictly larger (any comparison with NaN is false, so a keeps its place).
    return b if b > a else a


block_sum = block_reducer(_add)
block_max = block_reducer(_larger)


@kernel
def fill_zero(out):  # pragma: no cover - device code
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, stride):
        out[i] = 0
