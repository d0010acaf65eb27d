"""GPU kernels that are host bookkeeping: shapes of device tensors, and int32 index math."""
from __future__ import annotations

from ..cpu import KERNELS as CPU_KERNELS
from . import KERNELS, host_memory, on_host


@KERNELS.register("Shape", "Size", "Rank")
def metadata(op, ctx):
    """Reads only the device array's metadata: the input stays on the GPU, the output is host."""
    return host_memory(CPU_KERNELS.get(op.type)(op, ctx), outputs=(0,))


on_host("InvertPermutation", "Range")


@KERNELS.register("Identity", "StopGradient", "PlaceholderWithDefault", "Placeholder", "NoOp")
def structural(op, ctx):
    """Ops that move no data: plans alias forwarding ops, skip NoOps, and feed placeholders, so
    the CPU kernel (which only forwards or reports a missing feed) serves any device."""
    return CPU_KERNELS.get(op.type)(op, ctx)


@KERNELS.register("_Send")
def send(op, ctx):
    """Tensors leave the task from host memory: the executor copies a GPU value out once."""
    return host_memory(CPU_KERNELS.get("_Send")(op, ctx), inputs=(0,))


@KERNELS.register("_Recv")
def recv(op, ctx):
    """Received tensors land in host memory; a GPU reader gets one copy onto its device."""
    return host_memory(CPU_KERNELS.get("_Recv")(op, ctx), outputs=(0,))
