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
if not SIMULATOR:
    from numba.cuda.cudadrv import driver as _driver
    from numba.cuda.cudadrv.devicearray import DeviceNDArray as _DeviceNDArray
    try:   # (numba-cuda launches through cuda.core; without it, launches stay Numba's)
        from cuda.core import LaunchConfig as _LaunchConfig
        from cuda.core import launch as _core_launch
    except ImportError:
        _core_launch = None


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
           "kernel", "Kernel", "blocks", "launch", "empty", "flat", "to_host", "from_host"]


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
            self._numba_context = None if SIMULATOR else cuda.current_context()
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
        """An uninitialised C-contiguous device array of ``shape`` (a tuple of ints)."""
        if SIMULATOR:
            return cuda.device_array(shape, dtype=dtype, stream=self.stream)
        dtype = np.dtype(dtype)
        strides, step = [], dtype.itemsize
        for d in reversed(shape):
            strides.append(step)
            step *= d
        with self.active():
            if not step:
                return cuda.device_array(shape, dtype=dtype, stream=self.stream)
            # Straight from the context's memory manager (the pool): cuda.device_array would
            # look the context up and compute the strides again, a third of an allocation.
            _thread_context()
            return _DeviceNDArray(shape, tuple(reversed(strides)), dtype, self.stream,
                                  self._numba_context.memalloc(step))

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
        out = self.empty(host.shape, host.dtype)  # (makes this thread's context current)
        with self._staging_lock, self.active():
            staging, done = self._staging_buffer(host.shape, host.dtype)
            np.copyto(staging, host)
            _driver.host_to_device(out, staging, staging.nbytes, stream=self.stream)
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


# -- launches --------------------------------------------------------------------------------------
def kernel(fn=None, **options):
    """``@kernel``: ``numba.cuda.jit`` for a global kernel, launched the same way
    (``k[grid, block, stream](*args)``) but cheaper on a GPU (see :class:`Kernel`).
    Under the simulator it is Numba's dispatcher itself."""
    def make(f):
        dispatcher = cuda.jit(**options)(f)
        return dispatcher if SIMULATOR else Kernel(dispatcher)
    return make(fn) if fn is not None else make


class Kernel:
    """A Numba kernel whose repeated launches go straight to the driver.

    Numba types every argument and rebuilds its launch state at every call (~30 us on an H100
    host, against ~5 us for the driver's launch), and a small model's step is hundreds of
    launches of kernels that run for microseconds.  The first launch with a new combination of
    argument types goes through Numba, which compiles the overload; later ones with the same
    types reuse that overload's function and pass the arguments as Numba lays them out.
    Arguments Numba would convert (host arrays, records) always take Numba's path.
    """

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        # (stream handle, argument kinds) -> (cuda.core kernel, one packer per argument), or
        # None where Numba's own path is kept.
        self._plans: Dict[tuple, Optional[tuple]] = {}

    def __getitem__(self, config):
        grid, block, *rest = config
        stream, shared = (list(rest) + [0, 0])[:2]
        return _Configured(self, grid, block, stream, shared)

    def __getattr__(self, name):  # py_func, overloads, ... of the dispatcher
        if name == "dispatcher":  # (not set yet: a copy being made)
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def launch(self, grid, block, stream, shared: int, args: tuple) -> None:
        kinds = tuple(map(_argument_kind, args))
        handle = int(stream.handle) if stream else 0
        key = (handle, kinds)
        plan = self._plans.get(key, _UNPLANNED) if None not in kinds else None
        if plan is None or plan is _UNPLANNED:
            self.dispatcher[grid, block, stream, shared](*args)
            if plan is _UNPLANNED:
                self._plans[key] = _plan(self.dispatcher, args)
            return
        function, packers = plan
        _thread_context()
        params: list = []
        for pack, arg in zip(packers, args):
            pack(arg, params)
        _core_launch(_core_stream(stream, handle), _launch_config(grid, block, shared),
                     function, *params)


class _Configured:
    __slots__ = ("kernel", "grid", "block", "stream", "shared")

    def __init__(self, kernel, grid, block, stream, shared):
        self.kernel, self.grid, self.block, self.stream, self.shared = (
            kernel, grid, block, stream, shared)

    def __call__(self, *args):
        self.kernel.launch(self.grid, self.block, self.stream, self.shared, args)


_UNPLANNED = object()
# Python scalars as Numba types them (ints: int64 unless they need more, handled by Numba).
_INT64_RANGE = (-(1 << 63), 1 << 63)


def _argument_kind(arg):
    """What decides the overload Numba picks for ``arg`` (``None``: leave it to Numba)."""
    kind = type(arg)
    if kind is _DeviceNDArray:
        # As DeviceNDArray._numba_type_: C or F unless broadcast, else A.
        flags, strides = arg._dummy.flags, arg.strides
        broadcast = 0 in strides and arg.size != 0
        layout = ("C" if flags["C_CONTIGUOUS"] and not broadcast else
                  "F" if flags["F_CONTIGUOUS"] and not broadcast else "A")
        return arg.dtype, arg.ndim, layout
    if kind is int:
        return int if _INT64_RANGE[0] <= arg < _INT64_RANGE[1] else None
    if kind in _SCALARS:
        return kind
    if kind is tuple:  # (shapes and strides of broadcasting kernels)
        kinds = tuple(map(_argument_kind, arg))
        return (tuple, kinds) if None not in kinds else None
    return None


_SCALARS = frozenset([float, bool, np.bool_, np.float16, np.float32, np.float64, np.int8,
                      np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64])


def _plan(dispatcher, args) -> Optional[tuple]:
    """The compiled function and argument packers of the overload Numba just launched for
    ``args``, or None when an argument's type has no packer here."""
    from numba.cuda.typing.typeof import Purpose, typeof
    types = tuple(typeof(a, Purpose.argument) for a in args)
    overload = dispatcher.overloads.get(types)
    if (_core_launch is None or overload is None or getattr(overload, "cooperative", False)
            or overload.debug):
        return None
    packers = [_packer(t) for t in overload.argument_types]
    if None in packers or len(packers) != len(args):
        return None
    return overload._codelibrary.get_cufunc().kernel, packers


def _packer(numba_type):
    """``pack(value, params)`` appending ``value`` as Numba's launch passes an argument of
    ``numba_type`` (dispatcher._Kernel._prepare_args), or None for types not handled here."""
    import ctypes
    from numba.cuda import types
    if isinstance(numba_type, types.BaseTuple):
        packers = [_packer(t) for t in numba_type]
        if None in packers:
            return None

        def pack_tuple(value, params):
            for pack, item in zip(packers, value):
                pack(item, params)
        return pack_tuple
    if isinstance(numba_type, types.Array):
        def pack_array(a, params):
            params += (0, 0, a.size, a.dtype.itemsize, a.gpu_data.device_pointer_value or 0)
            params += a.shape
            params += a.strides
        return pack_array
    if isinstance(numba_type, types.Integer):
        c_type = getattr(ctypes, f"c_{numba_type}")
    elif numba_type == types.float64:
        c_type = ctypes.c_double
    elif numba_type == types.float32:
        c_type = ctypes.c_float
    elif numba_type == types.boolean:
        return lambda value, params: params.append(value)
    else:
        return None
    return lambda value, params: params.append(c_type(value))


_threads = threading.local()


def _thread_context() -> None:
    """Makes a CUDA context current in this thread, as Numba's API does on a thread's first
    call (and leaves pushed): the driver calls made here directly (launches, the pool's
    cudaMalloc, copies) need one, and steps run in pool and RPC threads that may not have
    called Numba yet."""
    if not getattr(_threads, "has_context", False):
        cuda.current_context()
        _threads.has_context = True


_core_streams: Dict[int, object] = {}
_launch_configs: Dict[tuple, object] = {}


def _core_stream(stream, handle: int):
    core = _core_streams.get(handle)
    if core is None:
        core = _core_streams[handle] = _driver._to_core_stream(stream)
    return core


def _launch_config(grid, block, shared: int):
    key = (grid, block, shared)
    config = _launch_configs.get(key)
    if config is None:
        config = _launch_configs[key] = _LaunchConfig(
            grid=_dims(grid), block=_dims(block), shmem_size=int(shared))
    return config


def _dims(dims):
    """Launch dimensions as cuda.core takes them: ints (kernels compute them with numpy too)."""
    return tuple(map(int, dims)) if isinstance(dims, tuple) else int(dims)


# -- what kernels use ------------------------------------------------------------------------------
def blocks(ctx, n: int) -> int:
    return ctx.state.blocks(n)


def flat(a):
    """The 1-D view of a C-contiguous device array (a 0-d array becomes one element)."""
    if a.ndim == 1:
        return a
    if SIMULATOR or type(a) is not _DeviceNDArray or not a.is_c_contiguous():
        # (reshape raises for what it cannot view)
        return a.reshape(int(a.size))
    # Numba's reshape builds its layout twice (the view's, then the new array's).
    return _DeviceNDArray((a.size,), (a.dtype.itemsize,), a.dtype, a.stream, a.gpu_data)


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
