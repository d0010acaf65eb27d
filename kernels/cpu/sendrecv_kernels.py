"""CPU kernels of _Send/_Recv. They reach the task's runtime through ``ctx.host`` (set on the
devices of a tf.train.Server) and the step through the thread's cancellation token."""
from __future__ import annotations

from tfjupyter.distributed.sendrecv import rendezvous_key
from tfjupyter.framework import errors
from tfjupyter.runtime import cancellation, waits

from . import KERNELS


def _host(op, ctx):
    host = getattr(ctx, "host", None)
    if host is None:
        raise errors.InvalidArgumentError(
            None, op, f"{op.type} '{op.name}' can only run on the device of a tf.train.Server")
    return host


@KERNELS.register("_Send")
def send(op, ctx):
    host = _host(op, ctx)
    key = rendezvous_key(op.get_attr("send_device"), op.get_attr("send_device_incarnation"),
                         op.get_attr("recv_device"), op.get_attr("tensor_name"))

    recv_device = op.get_attr("recv_device")
    if _pushed(op):
        return lambda value: host.push(recv_device, cancellation.current().step_id, key, value)

    def run(value):  # left here for the receiver to pull (RecvTensor streams big tensors)
        host.rendezvous.send(cancellation.current().step_id, key, value)
    return run


@KERNELS.register("_Recv")
def recv(op, ctx):
    host = _host(op, ctx)
    send_device = op.get_attr("send_device")
    key = rendezvous_key(send_device, op.get_attr("send_device_incarnation"),
                         op.get_attr("recv_device"), op.get_attr("tensor_name"))
    details = {"key": key, "peer": send_device.partition("/device:")[0],
               "transfer": "push" if _pushed(op) else "pull"}
    blocked = waits.Blocked("recv", waits.OpSite(op.name, op.type, ctx.name, key), key,
                            lambda: details)
    if _pushed(op):
        what = f"waiting for {key}"
        return lambda: host.rendezvous.recv(cancellation.current().step_id, key, what, blocked)
    return lambda: host.recv(send_device, cancellation.current().step_id, key, blocked)


def _pushed(op) -> bool:
    """Small tensors are pushed by the sender (one unary call); big ones pulled in chunks."""
    return op.get_attr("transfer") == "push"
