"""What the GPU kernels run on: physical GPUs, one stream each, memory, launches and copies.

Logical GPUs (``TFJUPYTER_LOGICAL_GPUS``, ``GPUOptions.experimental.virtual_devices``) of one
physical GPU share its :class:`GPUState`: one stream and one memory pool.  Sharing the stream
keeps every kernel, copy and buffer reuse on one physical GPU in order without events; towers on
different physical GPUs run on different streams and overlap.

Under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) the same kernels run in Python
threads, so launches use one warp-sized block; every kernel is written with grid-stride loops so
that the launch shape never changes what it computes.
"""
from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
from numba import config as _numba_config
from numba import cuda

from . import memory

SIMULATOR = bool(getattr(_numba_config, "ENABLE_CUDASIM", 0))


def _quiet_low_occupancy_warnings() -> None:
    """Small tensors make small grids on purpose; Numba would warn at each such launch."""
    try:
        from numba.cuda.core import config as cuda_config
    except ImportError:
        cuda_config = _numba_config
    cuda_config.CUDA_LOW_OCCUPANCY_WARNINGS = 0


_quiet_low_occupancy_warnings()

# Threads per block for 1-D launches, and the cap on blocks (grid-stride loops cover the rest).
THREADS = 32 if SIMULATOR else 256
_BLOCKS_PER_SM = 8

__all__ = ["SIMULATOR", "THREADS", "PhysicalGPU", "GPUState", "physical_gpus", "gpu_state",
           "blocks", "launch", "empty", "to_host", "from_host"]


@dataclass(frozen=True)
class PhysicalGPU:
    index: int
    name: str
    pci_bus_id: str
    compute_capability: Tuple[int, int]
    total_memory: int
    multiprocessors: int

    def description(self) -> str:
        """TensorFlow's ``Device mapping:`` text for a GPU."""
        major, minor = self.compute_capability
        return (f"device: {self.index}, name: {self.name}, pci bus id: {self.pci_bus_id}, "
                f"compute capability: {major}.{minor}")


_physical: Optional[List[PhysicalGPU]] = None
_discovery_lock = threading.RLock()  # GPUState() asks for the GPUs while gpu_state() holds it


def physical_gpus() -> List[PhysicalGPU]:
    """The GPUs Numba's CUDA driver sees (one simulated GPU under the simulator); [] without."""
    global _physical
    with _discovery_lock:
        if _physical is None:
            _physical = _discover()
        return list(_physical)


def _discover() -> List[PhysicalGPU]:
    if SIMULATOR:
        return [PhysicalGPU(0, "CUDA simulator", "0000:00:00.0", (8, 0), 16 << 30, 1)]
    try:
        if not cuda.is_available():
            return []
    except Exception:  # a broken driver install is "no GPU", not a crash at import
        return []
    memory.install()
    found = []
    for gpu in cuda.gpus:
        name = gpu.name.decode() if isinstance(gpu.name, bytes) else str(gpu.name)
        bus = f"{gpu.PCI_DOMAIN_ID:04x}:{gpu.PCI_BUS_ID:02x}:{gpu.PCI_DEVICE_ID:02x}.0"
        with gpu:
            total = cuda.current_context().get_memory_info().total
        found.append(PhysicalGPU(gpu.id, name, bus, tuple(gpu.compute_capability), int(total),
                                 int(gpu.MULTIPROCESSOR_COUNT)))
    return found


class GPUState:
    """One physical GPU as the runtime uses it: its stream, its launch shape, its staging copies."""

    def __init__(self, physical: PhysicalGPU):
        self.physical = physical
        self.max_blocks = 1 if SIMULATOR else physical.multiprocessors * _BLOCKS_PER_SM
        # Numba makes GPU 0's context current by default; other GPUs' work must push theirs.
        self._gpu = None if SIMULATOR or not needs_context_switches() else cuda.gpus[physical.index]
        with self.active():
            self.stream = cuda.stream()
        self._staging: Dict[Tuple[int, str], List] = {}
        self._staging_lock = threading.Lock()

    def active(self):
        """A context in which Numba launches and allocates on this GPU."""
        return self._gpu if self._gpu is not None else _nothing

    def synchronize(self) -> None:
        """Waits for everything queued on this GPU's stream."""
        with self.active():
            self.stream.synchronize()

    def blocks(self, n: int) -> int:
        return max(1, min(math.ceil(n / THREADS), self.max_blocks))

    def empty(self, shape, dtype):
        with self.active():
            return cuda.device_array(shape, dtype=dtype, stream=self.stream)

    def to_host(self, value) -> np.ndarray:
        with self.active():
            host = value.copy_to_host(stream=self.stream)
            self.stream.synchronize()
        return host

    def from_host(self, value):
        """A device copy of a host value. The copy goes through a pinned staging buffer, so it
        runs asynchronously on the stream and overlaps the kernels queued before it."""
        host = np.asarray(value)
        if host.dtype.kind in "OSU":
            raise TypeError(f"a {host.dtype} tensor cannot be placed on a GPU")
        if host.size == 0:
            return self.empty(host.shape, host.dtype)
        if SIMULATOR:  # (ascontiguousarray would make a 0-d value 1-d)
            contiguous = host if host.flags.c_contiguous else np.ascontiguousarray(host)
            return cuda.to_device(contiguous, stream=self.stream)
        # The lock keeps a staging buffer to one copy until that copy's event is recorded.
        with self._staging_lock, self.active():
            staging, done = self._staging_buffer(host.shape, host.dtype)
            np.copyto(staging, host)
            out = cuda.to_device(staging, stream=self.stream)
            done.record(self.stream)
        return out

    def _staging_buffer(self, shape, dtype):
        # A staging buffer can be written again once the copy that read it has finished.
        key = (int(np.prod(shape)), np.dtype(dtype).str)
        ring = self._staging.setdefault(key, [])
        for buffer, done in ring:
            if done.query():
                return buffer.reshape(shape), done
        if len(ring) >= 4:
            buffer, done = ring.pop(0)
            done.synchronize()
        else:
            buffer, done = cuda.pinned_array(key[0], dtype=dtype), cuda.event(timing=False)
        ring.append((buffer, done))
        return buffer.reshape(shape), done


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_nothing = _Nothing()
_states: Dict[int, GPUState] = {}


def gpu_state(physical: PhysicalGPU) -> GPUState:
    """The process-wide state of a physical GPU: sessions come and go, streams and pools stay."""
    with _discovery_lock:
        state = _states.get(physical.index)
        if state is None:
            state = _states[physical.index] = GPUState(physical)
        return state


# -- what kernels use ------------------------------------------------------------------------------
def blocks(ctx, n: int) -> int:
    return ctx.state.blocks(n)


def launch(ctx, kernel, n: int):
    """``kernel`` configured for ``n`` work items on the device's stream (grid-stride kernels)."""
    state = ctx.state
    return kernel[state.blocks(n), THREADS, state.stream]


def empty(ctx, shape, dtype):
    return ctx.state.empty(tuple(int(d) for d in shape), np.dtype(dtype))


def to_host(value, device) -> np.ndarray:
    return device.state.to_host(value)


def from_host(value, device):
    return device.state.from_host(value)


def needs_context_switches() -> bool:
    """Whether work must push its GPU's context: only when GPUs other than GPU 0 exist."""
    gpus = physical_gpus()
    return not SIMULATOR and any(g.index != 0 for g in gpus)


def is_device_array(value) -> bool:
    return cuda.is_cuda_array(value) or hasattr(value, "copy_to_host")


def logical_gpu_count() -> int:
    """``TFJUPYTER_LOGICAL_GPUS``: how many logical GPUs each physical GPU shows (default 1)."""
    raw = os.environ.get("TFJUPYTER_LOGICAL_GPUS", "").strip()
    if not raw:
        return 1
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"TFJUPYTER_LOGICAL_GPUS must be a positive integer, got {raw!r}")
    return n
