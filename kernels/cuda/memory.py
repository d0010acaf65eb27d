"""A caching device allocator: cudaMalloc'd regions carved into blocks, reused across steps.

A training step frees and allocates the same buffers every step; cudaMalloc/cudaFree synchronize
the device and cost tens of microseconds each.  As TensorFlow's BFC allocator, the pool keeps
regions for the life of the process and hands out best-fit blocks, splitting and coalescing
them.  ``GPUOptions`` decide its size: ``per_process_gpu_memory_fraction`` caps the regions, and
without ``allow_growth`` the whole cap is reserved at the first allocation (TF's default).

It plugs into Numba through its External Memory Management interface, so every device array
Numba makes comes from the pool and goes back to it when the last view of it dies.  Blocks are
reused in stream order: all work on one physical GPU runs on its one stream (see _runtime).
"""
from __future__ import annotations

import bisect
import contextlib
import threading
import weakref
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

__all__ = ["BlockPool", "configure", "install", "pool_stats"]

_ALIGN = 256
_MIN_REGION = 2 << 20


@dataclass(eq=False)
class _Block:
    address: int
    size: int
    region: int
    free: bool = True
    prev: Optional["_Block"] = field(default=None, repr=False)
    next: Optional["_Block"] = field(default=None, repr=False)


class BlockPool:
    """Best-fit blocks in regions from ``raw_alloc(nbytes) -> address`` (``raw_free(address)``).

    ``limit`` caps the bytes of all regions together; with ``allow_growth`` false the first
    allocation reserves the whole limit as one region.
    """

    def __init__(self, raw_alloc: Callable[[int], int], raw_free: Callable[[int], None],
                 limit: int, allow_growth: bool = True, name: str = "GPU"):
        self._raw_alloc = raw_alloc
        self._raw_free = raw_free
        self.limit = int(limit)
        self.allow_growth = allow_growth
        self.name = name
        self._lock = threading.Lock()
        self._regions: List[Tuple[int, int]] = []  # (address, size)
        self._free: List[Tuple[int, int, int]] = []  # sorted (size, address, id) of free blocks
        self._blocks: Dict[int, _Block] = {}  # address -> block (free or in use)
        self.reserved = 0
        self.in_use = 0
        self.peak_in_use = 0

    def take(self, nbytes: int) -> int:
        size = max(_ALIGN, -(-int(nbytes) // _ALIGN) * _ALIGN)
        with self._lock:
            block = self._best_fit(size)
            if block is None:
                self._grow(size, nbytes)
                block = self._best_fit(size)
            self._unlist(block)
            if block.size - size >= _ALIGN:
                rest = _Block(block.address + size, block.size - size, block.region,
                              prev=block, next=block.next)
                if block.next is not None:
                    block.next.prev = rest
                block.next = rest
                block.size = size
                self._blocks[rest.address] = rest
                self._list(rest)
            block.free = False
            self.in_use += block.size
            self.peak_in_use = max(self.peak_in_use, self.in_use)
            return block.address

    def give(self, address: int) -> None:
        with self._lock:
            block = self._blocks[address]
            if block.free:
                raise RuntimeError(f"{self.name} memory block at {address:#x} freed twice")
            self.in_use -= block.size
            block.free = True
            for neighbour in (block.next, block.prev):
                if neighbour is not None and neighbour.free:
                    self._unlist(neighbour)
                    first, second = (block, neighbour) if neighbour is block.next else (neighbour, block)
                    first.size += second.size
                    first.next = second.next
                    if second.next is not None:
                        second.next.prev = first
                    del self._blocks[second.address]
                    block = first
            self._list(block)

    def release_cached(self) -> int:
        """Gives regions with no block in use back to the driver; returns the bytes freed."""
        freed = 0
        with self._lock:
            for address, size in list(self._regions):
                block = self._blocks.get(address)
                if block is not None and block.free and block.size == size:
                    self._unlist(block)
                    del self._blocks[address]
                    self._regions.remove((address, size))
                    self._raw_free(address)
                    self.reserved -= size
                    freed += size
        return freed

    def stats(self) -> Dict[str, int]:
        return {"limit": self.limit, "reserved": self.reserved, "in_use": self.in_use,
                "peak_in_use": self.peak_in_use, "regions": len(self._regions)}

    # -- inside the lock ---------------------------------------------------------------------
    def _best_fit(self, size: int) -> Optional[_Block]:
        i = bisect.bisect_left(self._free, (size, -1, -1))
        return self._blocks[self._free[i][1]] if i < len(self._free) else None

    def _grow(self, size: int, asked: int) -> None:
        room = self.limit - self.reserved
        if not self.allow_growth and not self._regions:
            region = room
        else:
            last = self._regions[-1][1] if self._regions else 0
            region = min(room, max(size, _MIN_REGION, 2 * last))
        if region < size:
            raise MemoryError(
                f"{self.name} out of memory: cannot allocate {asked} bytes; {self.in_use} of "
                f"{self.limit} bytes in use, {self.reserved} reserved in {len(self._regions)} "
                "regions (GPUOptions.per_process_gpu_memory_fraction sets the limit)")
        address = self._raw_alloc(region)
        self._regions.append((address, region))
        self.reserved += region
        block = _Block(address, region, len(self._regions) - 1)
        self._blocks[address] = block
        self._list(block)

    def _list(self, block: _Block) -> None:
        bisect.insort(self._free, (block.size, block.address, 0))

    def _unlist(self, block: _Block) -> None:
        self._free.remove((block.size, block.address, 0))


# -- Numba's External Memory Management plugin ------------------------------------------------------
@dataclass
class _Config:
    memory_fraction: float = 0.0
    allow_growth: bool = False


_config = _Config()
_pools: Dict[int, BlockPool] = {}
_installed = False


def configure(memory_fraction: float = 0.0, allow_growth: bool = False) -> bool:
    """Sets the pool's limit and growth for GPUs whose pool does not exist yet (the first
    session's GPUOptions win, as in TensorFlow). Returns False when a pool already exists with
    other settings."""
    if _pools and (memory_fraction, allow_growth) != (_config.memory_fraction, _config.allow_growth):
        return False
    _config.memory_fraction = float(memory_fraction or 0.0)
    _config.allow_growth = bool(allow_growth)
    return True


def pool_stats() -> Dict[int, Dict[str, int]]:
    return {device: pool.stats() for device, pool in _pools.items()}


def install() -> None:
    """Makes Numba allocate device memory from the pools (before any CUDA context exists)."""
    global _installed
    if _installed:
        return
    from numba import cuda
    from numba.cuda.cudadrv import driver as drv
    made = [d.id for d in getattr(drv.driver, "devices", {}).values()
            if getattr(d, "primary_context", None) is not None]
    if made:
        import warnings
        warnings.warn(f"CUDA contexts of GPU {made} existed before tfjupyter's memory pool was "
                      "installed; their allocations bypass it (import tfjupyter before using "
                      "numba.cuda directly)", RuntimeWarning, stacklevel=2)
    cuda.set_memory_manager(_manager_class())
    _installed = True


def _manager_class():
    from numba import cuda
    from numba.cuda.cudadrv import driver as drv

    def pointer(address: int):
        binding = getattr(drv, "binding", None)
        if binding is not None and getattr(drv, "USE_NV_BINDING", True):
            return binding.CUdeviceptr(address)
        import ctypes
        return ctypes.c_uint64(address)

    def raw_alloc(nbytes: int) -> int:
        try:
            ptr = drv.driver.cuMemAlloc(nbytes)
        except drv.CudaAPIError as e:
            raise MemoryError(f"cudaMalloc of {nbytes} bytes failed: {e}") from e
        return int(ptr) if not hasattr(ptr, "value") else int(ptr.value)

    def raw_free(address: int) -> None:
        drv.driver.cuMemFree(pointer(address))

    class CachingMemoryManager(cuda.GetIpcHandleMixin, cuda.HostOnlyCUDAMemoryManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            # Blocks handed out and alive. Numba calls initialize() on every context push, so
            # this must not be (re)made there.
            self._live: Dict[int, object] = {}

        def initialize(self):
            """Numba calls this on every context push: nothing to do, the pool is made at the
            first allocation (so that the first session's GPUOptions apply)."""

        def _pool(self) -> BlockPool:
            device = self.context.device.id
            pool = _pools.get(device)
            if pool is None:
                info = self.get_memory_info()
                if _config.memory_fraction > 0:
                    limit = int(_config.memory_fraction * info.total)
                else:
                    limit = int(0.95 * info.free)
                pool = _pools[device] = BlockPool(raw_alloc, raw_free, limit,
                                                  _config.allow_growth, f"GPU {device}")
            return pool

        def memalloc(self, size):
            pool = self._pool()
            address = pool.take(max(1, size))
            # As Numba's own manager: an AutoFreePointer starts with no reference of its own,
            # so the finalizer runs when the last array or view owning it dies.
            mem = drv.AutoFreePointer(weakref.proxy(self.context), pointer(address), size,
                                      finalizer=lambda: self._release(pool, address))
            self._live[address] = mem
            return mem.own()

        def _release(self, pool: BlockPool, address: int) -> None:
            self._live.pop(address, None)
            pool.give(address)

        def get_memory_info(self):
            free, total = drv.driver.cuMemGetInfo()
            return cuda.MemoryInfo(free=free, total=total)

        def reset(self):
            # A context reset frees every allocation: the pool's regions are gone with them.
            super().reset()
            self._live.clear()
            _pools.pop(self.context.device.id, None)

        @contextlib.contextmanager
        def defer_cleanup(self):
            with super().defer_cleanup():
                yield

        @property
        def interface_version(self):
            return 1

    return CachingMemoryManager
