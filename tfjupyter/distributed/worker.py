"""The worker role: what a task does for masters — run graph partitions, serve tensors.

A task keeps, for its whole life: its devices (whose ResourceManagers hold variables, queues
and accumulators, shared by every session), the partitions masters registered, and a
rendezvous where _Send ops leave tensors for the _Recv ops of other tasks. Steps are
isolated by step id; CleanupStep releases a step's leftovers and cancels its waits.
"""
from __future__ import annotations

import contextlib
import functools
import json
import logging
import threading
import time
import uuid
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

import grpc

from ..framework import errors
from ..framework.ops import Graph
from ..runtime import cancellation, waits
from ..runtime.devices import Device
from ..runtime.elastic_pool import ElasticThreadPool
from ..runtime.executor import Plan, StepStats
from ..runtime.placer import Placer
from . import protocol_pb2 as pb
from . import local_push, shm, wire
from .auth import TOKEN_METADATA_KEY, channel_options

__all__ = ["Worker", "Rendezvous"]

_log = logging.getLogger("tfjupyter.distributed")

# How long a finished step's id is remembered, so that a late RecvTensor fails at once.
_FORGET_STEPS_AFTER_S = 600.0
# A GraphDef is a protobuf: 2 GiB at most, in TensorFlow too.
_MAX_GRAPH_BYTES = (2 << 30) - 1
# How long a peer that did not tell its host id is sent gRPC bytes before it is asked again.
_PEER_HOST_RETRY_S = 30.0


class Rendezvous:
    """Tensors sent by this task's _Send ops, waiting for their _Recv, per step."""

    def __init__(self):
        self._cond = threading.Condition()
        self._tables: Dict[int, Dict[str, object]] = {}
        self._ended: Dict[int, Tuple[float, str]] = {}   # step id -> (time, reason)

    def send(self, step_id: int, key: str, value) -> None:
        with self._cond:
            if step_id in self._ended:
                return  # the step was cancelled: nobody will take it
            self._tables.setdefault(step_id, {})[key] = value
            self._cond.notify_all()

    def recv(self, step_id: int, key: str, what: str,
             blocked: Optional[waits.Blocked] = None):
        with self._cond:
            def ready():
                return step_id in self._ended or key in self._tables.get(step_id, ())
            cancellation.wait_until(self._cond, ready, what, blocked)
            table = self._tables.get(step_id)
            if table is None or key not in table:
                reason = self._ended.get(step_id, (0, "step ended"))[1] or "step ended"
                raise errors.CancelledError(None, None, f"{what}: {reason}")
            value = table.pop(key)
            if not table:
                del self._tables[step_id]
            return value

    def end_step(self, step_id: int, reason: str) -> None:
        now = time.monotonic()
        with self._cond:
            self._tables.pop(step_id, None)
            if reason:
                self._ended[step_id] = (now, reason)
            for old in [s for s, (t, _) in self._ended.items() if now - t > _FORGET_STEPS_AFTER_S]:
                del self._ended[old]
            self._cond.notify_all()

    def end_reason(self, step_id: int) -> Optional[str]:
        """Why the step ended, if CleanupStep ended it (perhaps before it started here)."""
        with self._cond:
            ended = self._ended.get(step_id)
            return None if ended is None else ended[1]

    def pending_steps(self) -> List[int]:
        with self._cond:
            return list(self._tables)


class LocalStep(NamedTuple):
    """What _run needs of a RunGraphRequest, for a step from a master in this process."""
    step_id: int
    timeout_s: float
    trace: bool
    carry_to: tuple = ()


class _PartitionHost:
    """What executor.Plan needs of a session, for the partitions registered on this task."""

    def __init__(self, devices: List[Device]):
        self.placer = Placer(devices, allow_soft_placement=False)
        self._lock = threading.Lock()

    def _place(self, ops):
        with self._lock:
            self.placer.place(ops)
            return [self.placer.records[op] for op in ops]


class _RegisteredGraph:
    def __init__(self, graph: Graph, host: _PartitionHost):
        self.graph = graph
        self.host = host
        self.plans: Dict[tuple, Plan] = {}
        self.lock = threading.Lock()

    def plan(self, feeds: List[str], fetches: List[str], targets: List[str]) -> Plan:
        key = (tuple(feeds), tuple(fetches), tuple(targets))
        plan = self.plans.get(key)
        if plan is None:
            with self.lock:
                plan = self.plans.get(key)
                if plan is None:
                    g = self.graph
                    plan = Plan(self.host, [g.get_tensor_by_name(n) for n in fetches],
                                [g.get_tensor_by_name(n) for n in feeds],
                                [g.get_operation_by_name(n) for n in targets])
                    self.plans[key] = plan
        return plan


class Worker:
    """The worker service of one task (job, task index) of a cluster."""

    def __init__(self, job: str, task: int, devices: List[Device], cluster, token: str,
                 channel_credentials=None):
        self.job, self.task = job, task
        self.devices = devices
        self.cluster = cluster
        self.incarnation = int.from_bytes(uuid.uuid4().bytes[:8], "little") >> 1
        self.rendezvous = Rendezvous()
        self._token = token
        self._channel_credentials = channel_credentials
        self._graphs: Dict[str, _RegisteredGraph] = {}
        self._host = _PartitionHost(devices)
        self._steps: Dict[int, List[cancellation.CancellationToken]] = {}
        self._steps_lock = threading.Lock()
        self._peers: Dict[tuple, object] = {}
        self._peer_hosts: Dict[str, Tuple[str, float]] = {}   # address -> (host id, asked at)
        self._senders = ElasticThreadPool(f"tfjupyter-push-{job}{task}")
        self._channels: Dict[str, grpc.Channel] = {}
        self._parked: Dict[tuple, List[bytes]] = {}
        # Per running step whose master asked for it (RunGraphRequest.carry_to): the tasks of
        # the master's process, and the tensors pushed to them, which go back in the reply.
        self._carrying: Dict[int, Tuple[frozenset, Dict[Tuple[str, int], list]]] = {}
        self._closed = False
        self._peers_lock = threading.Lock()
        self._local_pushes = local_push.enabled()
        self._local_sender = local_push.Sender(token)
        self._local_listener: Optional[local_push.Listener] = None
        for device in devices:
            device.host = self

    def listen_locally(self) -> None:
        """Takes pushes and RunGraph calls from this host by a Unix socket too (local_push.py);
        called when the server starts, once its cluster (and so its address) is final."""
        if not self._local_pushes or self._local_listener is not None:
            return
        name = local_push.socket_name(self._token, self.cluster.task_address(self.job, self.task))
        try:
            self._local_listener = local_push.Listener(name, self._token, self._deliver_pushed,
                                                       wire.MAX_MESSAGE_BYTES,
                                                       run=self._run_graph_called_locally)
        except OSError as e:   # the name is taken: peers push by gRPC
            _log.info("%s takes pushes by gRPC only: %s", self.task_name, e)

    @property
    def task_name(self) -> str:
        return f"/job:{self.job}/replica:0/task:{self.task}"

    # -- RPC handlers ----------------------------------------------------------------------------
    def get_status(self, request: pb.GetStatusRequest, context) -> pb.GetStatusResponse:
        reply = pb.GetStatusResponse(job=self.job, task=self.task, incarnation=self.incarnation,
                                     host_id=shm.host_id())
        for d in self.devices:
            reply.devices.add(name=d.name, device_type=d.device_type, description=d.description)
        for job, index, address in self.cluster.tasks():
            reply.cluster[job].tasks[index] = address
        return reply

    def register_graph(self, request: pb.RegisterGraphRequest, context) -> pb.RegisterGraphResponse:
        from tensorboard.compat.proto import graph_pb2
        from ..framework.graph_io import rebuild_graph
        try:
            graph_def = graph_pb2.GraphDef.FromString(request.graph_def)
            graph = rebuild_graph(graph_def)
            for op in graph.get_operations():
                self._check_local(op)
        except Exception as e:  # a malformed partition must not change anything
            raise errors.InvalidArgumentError(None, None, f"bad partition: {e}") from None
        graph.session_handle = request.session_handle or None
        handle = uuid.uuid4().hex
        self._graphs[handle] = _RegisteredGraph(graph, self._host)
        return pb.RegisterGraphResponse(graph_handle=handle)

    def register_graph_stream(self, messages, context) -> pb.RegisterGraphResponse:
        """RegisterGraph for a GraphDef past one message: the request without its graph_def,
        then the GraphDef's bytes in chunks."""
        first = next(messages, None)
        if first is None:
            raise errors.InvalidArgumentError(None, None, "no RegisterGraphRequest")
        request = wire.decode_message(first, pb.RegisterGraphRequest)
        chunks, size = [request.graph_def], len(request.graph_def)
        for chunk in messages:
            size += len(chunk)
            if size > _MAX_GRAPH_BYTES:
                raise errors.ResourceExhaustedError(
                    None, None, f"a partition's GraphDef of more than {_MAX_GRAPH_BYTES} bytes "
                    "(protobuf's limit, as in TensorFlow)")
            chunks.append(chunk)
        request.graph_def = b"".join(chunks)
        return self.register_graph(request, context)

    def _check_local(self, op) -> None:
        if not op.device.startswith(self.task_name + "/"):
            raise ValueError(f"op '{op.name}' is assigned to {op.device or 'no device'}, not to a "
                             f"device of {self.task_name}")

    def deregister_graph(self, request: pb.DeregisterGraphRequest, context) -> pb.Empty:
        registered = self._graphs.pop(request.graph_handle, None)
        session = registered.graph.session_handle if registered is not None else None
        if session and not any(g.graph.session_handle == session for g in list(self._graphs.values())):
            # The session's last graph is gone, and its private queues and readers with it.
            for device in self.devices:
                device.resources.drop_private(session)
        return pb.Empty()

    def run_graph(self, request_iterator, context) -> Iterator[bytes]:
        """The streaming form, for feeds too big for one message."""
        yield from self._run_graph(iter(request_iterator), context, park=False)

    def run_graph_unary(self, message: bytes, context) -> bytes:
        """The one-message form: packed frames in, packed frames out (or parked if big)."""
        return wire.pack(self._run_graph(wire.unpack(message), context, park=True,
                                         carried_bytes=len(message)))

    def _run_graph_called_locally(self, message: bytes, context) -> bytes:
        """RunGraphUnary by a master of this host, over the Unix socket. What the gRPC handler
        would fail the call with (a malformed request) comes back as the reply's status."""
        try:
            return self.run_graph_unary(message, context)
        except Exception as e:
            code, text = wire.call_status("RunGraphUnary", self.task_name, e)
            return wire.pack([wire.control_frame(pb.StepStatus(
                code=code, message=f"RunGraphUnary on {self.task_name}: {text}"))])

    def fetch_parked(self, request: pb.FetchParkedRequest, context) -> Iterator[bytes]:
        frames = self._parked.pop((request.graph_handle, request.step_id), None)
        if frames is None:
            yield wire.control_frame(pb.StepStatus(code=errors.NotFoundError.error_code,
                                                   message="no parked results for that step"))
            return
        yield from frames

    def _run_graph(self, frames, context, park: bool,
                   carried_bytes: Optional[int] = None) -> Iterator[bytes]:
        """Runs one step of a partition. Malformed framing or feeds raise (so the call itself
        fails, INVALID_ARGUMENT, before the step touches anything); errors of the step itself
        come back as its StepStatus. ``carried_bytes``: the length of a packed request."""
        request = wire.decode_request(next(frames, b""), pb.RunGraphRequest)
        assembler = wire.TensorAssembler(len(request.feeds), "RunGraph feeds", carried_bytes)
        for frame in frames:
            assembler.add(frame)
        feed_values = assembler.finish()
        try:
            registered = self._graphs.get(request.graph_handle)
            if registered is None:
                raise _unknown_graph(request.graph_handle, self.task_name)
            try:
                plan = registered.plan(list(request.feeds), list(request.fetches), list(request.targets))
            except (KeyError, ValueError) as e:
                raise errors.InvalidArgumentError(None, None, f"RunGraph on {self.task_name}: {e}") from None
            results, stats, carried = self._run(plan, request, feed_values, context)
        except errors.OpError as e:
            yield wire.control_frame(pb.StepStatus(code=e.error_code, message=str(e),
                                                   op=getattr(e.op, "name", "") or ""))
            return
        pool = shm.pool_for(request.shm_host)
        out = [f for i, value in enumerate(results) for f in wire.tensor_frames(i, value, pool)]
        for (job, task), items in carried.items():
            out.extend(wire.CARRIED + m for m in self._push_messages(
                request.step_id, items, pool, f"/job:{job}/replica:0/task:{task}"))
        out.append(wire.control_frame(pb.StepStatus(code=0, step_stats_json=stats)))
        if park and wire.frames_size(out) > wire.PACK_LIMIT:
            self._parked[(request.graph_handle, request.step_id)] = out
            yield wire.control_frame(pb.StepStatus(code=0, parked=True))
            return
        yield from out

    def push_tensors(self, message: bytes, context) -> bytes:
        """Tensors a peer's _Send ops pushed here, for this task's _Recv ops."""
        self._deliver_pushed(message)
        return b""

    def _deliver_pushed(self, message: bytes) -> None:
        frames = wire.unpack(message)
        request = wire.decode_request(next(frames, b""), pb.PushTensorsRequest)
        self.deliver(request, frames, len(message))

    def deliver(self, request: pb.PushTensorsRequest, frames, size: int) -> None:
        """Puts pushed tensors (``frames``, the rest of a message of ``size`` bytes) in the
        rendezvous: a peer's PushTensors, or (called by the master) those a RunGraph reply
        carried here."""
        assembler = wire.TensorAssembler(len(request.keys), "PushTensors", size)
        for frame in frames:
            assembler.add(frame)
        values = assembler.finish()
        # Only a whole, well-formed message reaches the rendezvous: a malformed one raised above
        # (INVALID_ARGUMENT, through the handler's guard) and left nothing behind.
        for key, value in zip(request.keys, values):
            self.rendezvous.send(request.step_id, key, value)

    def local_plan(self, graph_handle: str, feeds: List[str], fetches: List[str],
                   targets: List[str]) -> Plan:
        """The plan of a registered partition, for a master in this very process."""
        registered = self._graphs.get(graph_handle)
        if registered is None:
            raise _unknown_graph(graph_handle, self.task_name)
        return registered.plan(feeds, fetches, targets)

    def run_local(self, plan: Plan, step: "LocalStep", feed_values: List, context):
        """RunGraph for a master in this very process (TensorFlow's in-process master/worker):
        the same step, its values passed by reference, with no framing between them.
        Returns (fetched values, step stats JSON); raises OpError."""
        return self._run(plan, step, feed_values, context)[:2]

    def _run(self, plan: Plan, request: pb.RunGraphRequest, feed_values, context):
        """(fetched values, step stats JSON, the tensors pushed to carry_to tasks)."""
        token = cancellation.CancellationToken(request.timeout_s or None, request.step_id)
        carried: Dict[Tuple[str, int], list] = {}
        if request.carry_to:
            try:
                tasks = frozenset(_job_task(t) for t in request.carry_to)
            except ValueError as e:
                raise errors.InvalidArgumentError(None, None, f"RunGraph on {self.task_name}: "
                                                  f"carry_to: {e}") from None
            self._carrying[request.step_id] = (tasks, carried)
        context.add_callback(lambda: token.cancel("the master cancelled the step"))
        with self._steps_lock:
            self._steps.setdefault(request.step_id, []).append(token)
        ended = self.rendezvous.end_reason(request.step_id)
        if ended is not None:   # the master cancelled the step before it reached this task
            token.cancel(ended or "step ended")
        try:
            with cancellation.step_scope(token), \
                    waits.step_running(request.step_id, "partition", self.task_name, plan):
                if request.trace:
                    stats = StepStats()
                    results = plan.run(feed_values, stats)
                    out = results, json.dumps(stats.dev_stats)
                else:
                    out = plan.run(feed_values), ""
            if token.outbox:
                self._flush(token)
            for destination, future in token.pushes:  # the step is done when its sends arrived
                try:
                    future.result()
                except grpc.RpcError as e:
                    raise rpc_error(e, destination) from None
            return out + (carried,)
        finally:
            if request.carry_to:
                self._carrying.pop(request.step_id, None)
            with self._steps_lock:
                tokens = self._steps.get(request.step_id, [])
                if token in tokens:
                    tokens.remove(token)
                if not tokens:
                    self._steps.pop(request.step_id, None)

    def recv_tensor(self, request: pb.RecvTensorRequest, context) -> Iterator[bytes]:
        remaining = context.time_remaining()
        token = cancellation.CancellationToken(remaining if remaining and remaining < 1e9 else None,
                                               request.step_id)
        context.add_callback(lambda: token.cancel("RecvTensor call ended"))
        try:
            with cancellation.step_scope(token):
                value = self.rendezvous.recv(request.step_id, request.key,
                                             f"waiting on {self.task_name} for {request.key}")
        except errors.OpError as e:
            yield wire.control_frame(pb.StepStatus(code=e.error_code, message=str(e)))
            return
        yield from wire.tensor_frames(0, value, shm.pool_for(request.shm_host))
        yield wire.control_frame(pb.StepStatus(code=0))

    def cleanup_step(self, request: pb.CleanupStepRequest, context) -> pb.Empty:
        self.end_step(request.step_id, request.reason)
        return pb.Empty()

    def end_step(self, step_id: int, reason: str) -> None:
        self.rendezvous.end_step(step_id, reason)
        if reason:
            with self._steps_lock:
                tokens = list(self._steps.get(step_id, ()))
            for token in tokens:
                token.cancel(reason)

    # -- sending to and receiving from peers ------------------------------------------------
    def push(self, recv_device: str, step_id: int, key: str, value) -> None:
        """Queues a tensor for the task of ``recv_device`` (called by _Send). The queue goes
        out in one call per destination when the step next waits or ends."""
        if recv_device.startswith(self.task_name + "/"):
            self.rendezvous.send(step_id, key, value)
            return
        destination = _job_task(recv_device)
        carrying = self._carrying.get(step_id)
        if carrying is not None and destination in carrying[0]:
            carrying[1].setdefault(destination, []).append((key, value))
            return
        token = cancellation.current()
        token.outbox.setdefault(destination, []).append((key, value))
        token.flush = lambda: self._flush(token)

    def _flush(self, token: cancellation.CancellationToken) -> None:
        outbox, token.outbox = token.outbox, {}
        timeout = None if token.deadline is None else max(0.001, token.deadline - time.monotonic())
        metadata = ((TOKEN_METADATA_KEY, self._token),)
        *others, last = outbox.items()
        for (job, task), items in others:
            # Blocking calls on pooled threads, not grpc's .future(): that starts a channel
            # polling thread whenever the channel has no call in flight, i.e. every step.
            future = self._senders.submit(self._send_pushes, job, task,
                                          self._push_messages_to(job, task, token.step_id, items),
                                          timeout, metadata)
            token.pushes.append((f"/job:{job}/replica:0/task:{task}", future))
        # The last (usually the only) destination in this thread: a peer's PushTensors never
        # waits on its step, so this returns at once, and the step was about to wait or end
        # anyway. Each hand-off to another thread and back costs more than the call.
        (job, task), items = last
        try:
            self._send_pushes(job, task, self._push_messages_to(job, task, token.step_id, items),
                              timeout, metadata)
        except grpc.RpcError as e:
            raise rpc_error(e, f"/job:{job}/replica:0/task:{task}") from None

    def _send_pushes(self, job: str, task: int, messages: List[bytes], timeout, metadata) -> None:
        """Each by the peer's Unix socket when it shares this host, else (or if that fails) by
        gRPC."""
        local = self._local_pushes and shm.pool_for(self._peer_host(job, task)) is not None
        name = local_push.socket_name(self._token, self.cluster.task_address(job, task))
        for message in messages:
            if not (local and self._local_sender.push(name, message,
                                                      f"/job:{job}/replica:0/task:{task}")):
                self._peer(job, task, "PushTensors")(message, timeout=timeout, metadata=metadata)

    def _push_messages_to(self, job: str, task: int, step_id: int, items) -> List[bytes]:
        return self._push_messages(step_id, items, shm.pool_for(self._peer_host(job, task)))

    def _push_messages(self, step_id: int, items, pool, task: str = "") -> List[bytes]:
        """The PushTensors messages for ``items``: as few as keep each within one gRPC message
        (a pushed tensor is at most half of one; without shared memory, several make more).
        ``task``: the receiver's name, for messages carried in a RunGraph reply."""
        messages, keys, frames, size = [], [], [], 0
        for key, value in items:
            tensor = list(wire.tensor_frames(len(keys), value, pool))
            tensor_size = wire.frames_size(tensor)
            if keys and size + tensor_size > wire.PACK_LIMIT:   # (rare: no shared memory)
                messages.append(self._pack_push(step_id, keys, frames, task))
                keys, frames, size = [], [], 0
                tensor = wire.renumbered(tensor, 0)
            frames.extend(tensor)
            keys.append(key)
            size += tensor_size
        messages.append(self._pack_push(step_id, keys, frames, task))
        return messages

    @staticmethod
    def _pack_push(step_id: int, keys: List[str], frames: List[bytes], task: str = "") -> bytes:
        request = pb.PushTensorsRequest(step_id=step_id, keys=keys, task=task)
        return wire.pack([wire.control_frame(request)] + frames)

    def recv(self, send_device: str, step_id: int, key: str,
             blocked: Optional[waits.Blocked] = None):
        """The value a _Send on ``send_device`` left under ``key`` (called by _Recv kernels,
        whose ``blocked`` says what they wait in, for runtime/waits.py)."""
        if send_device.startswith(self.task_name + "/"):
            return self.rendezvous.recv(step_id, key, f"waiting for {key}", blocked)
        job, task = _job_task(send_device)
        stub = self._peer(job, task, "RecvTensor")
        token = cancellation.current()
        if token.outbox:
            self._flush(token)
        timeout = None if token.deadline is None else max(0.0, token.deadline - time.monotonic())
        request = pb.RecvTensorRequest(step_id=step_id, key=key, shm_host=shm.host_id())
        call = stub(request.SerializeToString(),
                    timeout=timeout, metadata=((TOKEN_METADATA_KEY, self._token),))
        # The stream waits for the peer's _Send outside wait_until: registered here.
        with waits.blocking(blocked, step_id) if blocked else contextlib.nullcontext():
            return receive_tensor_stream(call, token, f"/job:{job}/replica:0/task:{task}", key)

    def _peer(self, job: str, task: int, method: str):
        address = self.cluster.task_address(job, task)
        with self._peers_lock:
            stub = self._peers.get((address, method))
            if stub is None:
                channel = self._channels.get(address)
                if channel is None:
                    channel = self._channels[address] = make_channel(address, self._channel_credentials)
                make = channel.unary_stream if method == "RecvTensor" else channel.unary_unary
                stub = self._peers[(address, method)] = make(f"/tfjupyter.Worker/{method}")
            return stub

    def _peer_host(self, job: str, task: int) -> str:
        """The peer's shm.host_id(): pushes to a task of this host go by shared memory. Asked
        once (GetStatus), in the background, so that no step waits for the answer: until it
        comes, and for a while after a peer did not answer, pushes go as gRPC bytes."""
        address = self.cluster.task_address(job, task)
        known = self._peer_hosts.get(address)
        if known is not None and (known[0] or time.monotonic() - known[1] < _PEER_HOST_RETRY_S):
            return known[0]
        if not shm.enabled():
            return ""
        self._peer_hosts[address] = ("", time.monotonic())   # asking

        def ask():
            try:
                reply = pb.GetStatusResponse.FromString(self._peer(job, task, "GetStatus")(
                    pb.GetStatusRequest().SerializeToString(), timeout=10.0,
                    metadata=((TOKEN_METADATA_KEY, self._token),)))
                self._peer_hosts[address] = (reply.host_id, time.monotonic())
            except grpc.RpcError:
                pass   # asked again after _PEER_HOST_RETRY_S
        self._senders.submit(ask)
        return ""

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        if self._local_listener is not None:
            self._local_listener.close()
        self._local_sender.close()
        for step_id in self.rendezvous.pending_steps():
            self.end_step(step_id, f"task {self.task_name} is shutting down")
        with self._steps_lock:
            tokens = [t for ts in self._steps.values() for t in ts]
        for token in tokens:
            token.cancel(f"task {self.task_name} is shutting down")


@functools.lru_cache(maxsize=1024)
def _job_task(device: str) -> Tuple[str, int]:
    from ..framework.device import DeviceSpec
    spec = DeviceSpec.from_string(device)
    return spec.job, spec.task


def make_channel(address: str, credentials=None) -> grpc.Channel:
    if credentials is not None:
        return grpc.secure_channel(address, credentials, options=channel_options())
    return grpc.insecure_channel(address, options=channel_options())


def receive_tensor_stream(call, token: cancellation.CancellationToken, task: str, what: str):
    """Reads one tensor from a RecvTensor response stream; cancelling the step cancels it."""
    token.add_callback(call.cancel)
    try:
        assembler = wire.TensorAssembler(1, f"RecvTensor from {task}")
        status = None
        for frame in call:
            if bytes(frame[:1]) == wire.CONTROL:
                status = pb.StepStatus.FromString(bytes(frame[1:]))
            else:
                assembler.add(frame)
        if status is None:
            raise errors.UnavailableError(None, None, f"{task} ended the transfer of {what} early")
        if status.code:
            raise _error_from_status(status)
        return assembler.finish()[0]
    except grpc.RpcError as e:
        token.check(f"receiving {what} from {task}")
        raise rpc_error(e, task) from None
    finally:
        token.remove_callback(call.cancel)


def _error_from_status(status: pb.StepStatus) -> errors.OpError:
    cls = _ERRORS_BY_CODE.get(status.code, errors.UnknownError)
    return cls(None, None, status.message)


_ERRORS_BY_CODE = {cls.error_code: cls for cls in (
    errors.CancelledError, errors.UnknownError, errors.InvalidArgumentError,
    errors.DeadlineExceededError, errors.NotFoundError, errors.AlreadyExistsError,
    errors.PermissionDeniedError, errors.UnauthenticatedError, errors.ResourceExhaustedError,
    errors.FailedPreconditionError, errors.AbortedError, errors.OutOfRangeError,
    errors.UnimplementedError, errors.InternalError, errors.UnavailableError, errors.DataLossError)}

_GRPC_CODES = {grpc.StatusCode.UNAVAILABLE: errors.UnavailableError,
               grpc.StatusCode.DEADLINE_EXCEEDED: errors.DeadlineExceededError,
               grpc.StatusCode.CANCELLED: errors.CancelledError,
               grpc.StatusCode.UNAUTHENTICATED: errors.UnauthenticatedError,
               grpc.StatusCode.PERMISSION_DENIED: errors.PermissionDeniedError,
               grpc.StatusCode.INVALID_ARGUMENT: errors.InvalidArgumentError,
               grpc.StatusCode.RESOURCE_EXHAUSTED: errors.ResourceExhaustedError,
               grpc.StatusCode.NOT_FOUND: errors.NotFoundError,
               grpc.StatusCode.UNIMPLEMENTED: errors.UnimplementedError}


def _unknown_graph(handle: str, task: str) -> errors.AbortedError:
    # As TensorFlow's GraphMgr: a handle this task does not know means the task restarted
    # since the session registered it, and Aborted makes MonitoredTrainingSession recover.
    return errors.AbortedError(None, None, f"Graph handle {handle!r} is not registered on "
                               f"{task}. Possibly, this task just restarted.")


def rpc_error(e: grpc.RpcError, task: str) -> errors.OpError:
    """A gRPC failure as TensorFlow's error, naming the task it talked to."""
    code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
    cls = _GRPC_CODES.get(code, errors.UnavailableError if code == grpc.StatusCode.UNKNOWN
                          else errors.InternalError)
    details = e.details() if hasattr(e, "details") else str(e)
    if code == grpc.StatusCode.UNAVAILABLE and "ping timeout" in (details or ""):
        details += ": the task did not answer keepalive pings (frozen, hung or unreachable)"
    return cls(None, None, f"{task}: {details}")
