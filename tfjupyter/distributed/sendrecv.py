"""_Send and _Recv: the two ends of a graph edge cut between tasks.

The master inserts them when it partitions a graph. A _Send leaves its tensor in its task's
rendezvous under a key naming both devices, the sender's incarnation and the tensor; the
_Recv on the other task pulls it with a RecvTensor RPC (or from the same rendezvous when the
two ends share a task).
"""
from __future__ import annotations

from ..framework import dtypes
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape

__all__ = ["rendezvous_key"]


def rendezvous_key(send_device: str, incarnation: int, recv_device: str, tensor_name: str) -> str:
    """TensorFlow's key: ``src;incarnation;dst;tensor;frame:iteration``."""
    return f"{send_device};{incarnation:x};{recv_device};{tensor_name};0:0"


@register_op("_Send", stateful=True)
def _send_shape(op):
    return []


@register_op("_Recv", stateful=True)
def _recv_shape(op):
    return [(op.get_attr("tensor_type"), op.get_attr("tensor_shape"))]


NotDifferentiable("_Send")
NotDifferentiable("_Recv")
