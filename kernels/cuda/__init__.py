"""The CUDA backend: Numba CUDA kernels for device type GPU.

The interface is the CPU backend's (``KERNELS``, ``allocate``) plus what an accelerator needs:

- ``to_host(value, device)`` / ``from_host(value, device)``: the copies the executor inserts
  where an edge crosses between host and GPU memory (never per op);
- ``peer_copy(value, src, dst)``: an edge between two GPU devices;
- ``bind(kernel, device)``: wraps a kernel so it runs with its GPU's context current (only
  needed, and only done, when the process drives more than one physical GPU).

A kernel's ``run`` may carry ``host_inputs``/``host_outputs`` (index tuples): those tensors stay
in host memory, as TensorFlow's ``HostMemory`` arguments (shapes, axes, int32 bookkeeping).
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from .. import KernelTable
from . import _runtime
from ._runtime import SIMULATOR, physical_gpus  # noqa: F401

KERNELS = KernelTable("GPU")


def supports(op) -> bool:
    """GPU memory holds numbers: an op that reads or makes strings has no GPU kernel (as in
    TensorFlow), whatever its type; it goes to the CPU."""
    return not any(t.dtype.name == "string" for t in list(op.inputs) + list(op.outputs))


def allocate(shape, dtype, device=None):
    """An uninitialised device array (on the default GPU when no device is given)."""
    if device is not None:
        return _runtime.empty(device, shape, dtype)
    from numba import cuda
    return cuda.device_array(tuple(shape), dtype=np.dtype(dtype))


def to_host(value, device) -> np.ndarray:
    if isinstance(value, np.ndarray) or np.isscalar(value):
        return np.asarray(value)
    return _runtime.to_host(value, device)


def from_host(value, device):
    return _runtime.from_host(value, device)


def peer_copy(value, src, dst):
    """Logical GPUs of one physical GPU share memory and stream: nothing to copy."""
    if src.state is dst.state:
        return value
    return from_host(to_host(value, src), dst)


def bind(kernel: Callable, device) -> Callable:
    if not _runtime.needs_context_switches():
        return kernel
    active = device.state.active

    def run_on_device(*args):
        with active():
            return kernel(*args)
    run_on_device.host_inputs = getattr(kernel, "host_inputs", ())
    run_on_device.host_outputs = getattr(kernel, "host_outputs", ())
    return run_on_device


def host_memory(run: Callable, inputs: Iterable[int] = (), outputs: Iterable[int] = ()) -> Callable:
    """Marks inputs/outputs of a kernel's ``run`` as living in host memory."""
    run.host_inputs = tuple(inputs)
    run.host_outputs = tuple(outputs)
    return run


def run_on_host(op, ctx) -> Callable:
    """The CPU kernel of ``op`` with every input and output in host memory.

    For shape bookkeeping (Shape, BroadcastGradientArgs, int32 arithmetic on shapes), as
    TensorFlow's GPU kernels with HostMemory arguments: the values are tiny and their readers
    need them on the host, so a device round trip would only add two synchronizations.
    """
    from ..cpu import KERNELS as CPU_KERNELS
    run = CPU_KERNELS.get(op.type)(op, ctx)
    return host_memory(run, range(len(op.inputs)), range(len(op.outputs)))


def on_host(*op_types: str) -> None:
    """Registers ``run_on_host`` as the GPU kernel of ops that are bookkeeping whatever their dtype."""
    KERNELS.register(*op_types)(run_on_host)


# Importing a kernel module registers its kernels in KERNELS.
from . import host_kernels, elementwise_kernels, reduction_kernels, array_kernels, random_kernels, state_kernels, training_kernels, matmul_kernels, nn_kernels, control_flow_kernels  # noqa: E402,F401
