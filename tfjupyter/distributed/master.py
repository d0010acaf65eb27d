"""The master role, run in the client's process: a Session whose target is a cluster.

For each (fetches, feeds, targets) signature the master places the needed ops over every
device of the cluster, cuts the graph into one partition per task — each edge between tasks
becomes a _Send/_Recv pair keyed by (source device, its incarnation, destination device,
tensor) — registers the partitions on their tasks once, and then runs each step as one
RunGraph call per task, in parallel. A failure anywhere cancels the step everywhere.
"""
from __future__ import annotations

import functools
import itertools
import json
import logging
import secrets
import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

import grpc
import numpy as np

from ..framework import dtypes, errors
from ..framework.device import DeviceSpec
from ..framework.ops import Graph, Operation, Tensor
from ..runtime import cancellation, waits
from ..runtime.devices import Device
from ..runtime.elastic_pool import ElasticThreadPool
from ..runtime.executor import BATCH_TYPES, StepStats, needed_ops
from . import protocol_pb2 as pb
from . import local_push, shm, wire
from .auth import TOKEN_METADATA_KEY, TlsConfig, token_for_target
from .sendrecv import rendezvous_key
from .cluster import address_host, is_this_host
from .worker import LocalStep, _error_from_status, make_channel, rpc_error

__all__ = ["ClusterConnection", "DistributedPlan"]

_log = logging.getLogger("tfjupyter.distributed")

DEFAULT_CONNECT_TIMEOUT_S = 60.0
_CALL_DEADLINE_SLACK_S = 1.0
# A task a RunGraph call found frozen or gone is not sent CleanupStep for this long.
_UNREACHABLE_S = 30.0
# Step ids: unique on a task across masters (a random start per process), without a system
# call per step as secrets.randbits makes.
_step_ids = itertools.count(secrets.randbits(62))


class _Task:
    """A client's view of one task: its address, devices and RPC stubs."""

    def __init__(self, job: str, index: int, address: str, channel: grpc.Channel, metadata):
        self.job, self.index, self.address = job, index, address
        self.name = f"/job:{job}/replica:0/task:{index}"
        self.cluster_address = address   # as the cluster spells it (the task's socket name)
        self.unreachable_at: Optional[float] = None   # when a call found it frozen or gone
        self.metadata = metadata
        self.channel = channel
        unary = lambda m, resp: channel.unary_unary(  # noqa: E731
            f"/tfjupyter.Worker/{m}", request_serializer=lambda x: x.SerializeToString(),
            response_deserializer=resp.FromString)
        self.get_status = unary("GetStatus", pb.GetStatusResponse)
        self.register_graph = unary("RegisterGraph", pb.RegisterGraphResponse)
        self.register_graph_stream = channel.stream_unary(
            "/tfjupyter.Worker/RegisterGraphStream",
            response_deserializer=pb.RegisterGraphResponse.FromString)
        self.deregister_graph = unary("DeregisterGraph", pb.Empty)
        self.cleanup_step = unary("CleanupStep", pb.Empty)
        self.run_graph = channel.stream_stream("/tfjupyter.Worker/RunGraph")
        self.run_graph_unary = channel.unary_unary("/tfjupyter.Worker/RunGraphUnary")
        self.fetch_parked = channel.unary_stream(
            "/tfjupyter.Worker/FetchParked", request_serializer=lambda x: x.SerializeToString())
        self.devices: List[Device] = []
        self.incarnation = 0
        self.host_id = ""   # shm.host_id() of the task: feeds to a task of this host go by shm
        # A task served by this very process is called directly, not through gRPC (as TF's
        # in-process master/worker): the same handler, the same packed frames.
        from .server import local_worker
        self.local_worker = local_worker(address)


class ClusterConnection:
    """Connections from a client to every task of the cluster its target belongs to."""

    def __init__(self, target: str, config):
        if not target.startswith("grpc://"):
            raise errors.InvalidArgumentError(
                None, None, f"Session target {target!r}: expected 'grpc://host:port' (a "
                "tf.train.Server's .target) or '' for an in-process session")
        address = target[len("grpc://"):]
        timeout_ms = getattr(config, "operation_timeout_in_ms", 0) or 0
        self.timeout_s = timeout_ms / 1000 if timeout_ms > 0 else DEFAULT_CONNECT_TIMEOUT_S
        deadline = time.monotonic() + self.timeout_s
        token = _token_for(target, address, config, deadline)
        self.metadata = ((TOKEN_METADATA_KEY, token),)
        self._token = token
        # RunGraph calls to tasks of this host go by their Unix socket (local_push.py).
        self._local_calls = local_push.Sender(token) if local_push.enabled() else None
        self.session_handle = secrets.token_hex(8)
        tls = TlsConfig()
        self._credentials = tls.channel_credentials() if tls.enabled else None
        self._channels: List[grpc.Channel] = []
        master = self._task_at("master", -1, address)
        master.name = "the target"
        status = self._wait_for([master], deadline)[0]
        self.target_task = (status.job, status.task)
        self.tasks: Dict[Tuple[str, int], _Task] = {}
        for job, job_def in status.cluster.items():
            for index, task_address in sorted(job_def.tasks.items()):
                if (job, index) == self.target_task:
                    master.cluster_address = task_address   # (the target may spell it otherwise)
                    self.tasks[(job, index)] = master
                else:
                    self.tasks[(job, index)] = self._task_at(job, index, task_address)
        master.job, master.index = self.target_task
        master.name = f"/job:{master.job}/replica:0/task:{master.index}"
        filters = [DeviceSpec.from_string(f) for f in getattr(config, "device_filters", []) or []]
        wanted = [t for t in self.tasks.values()
                  if not filters or any(f.matches(_task_spec(t)) or f.job == t.job and f.task is None
                                        for f in filters)]
        for task, reply in zip(wanted, self._wait_for(wanted, deadline)):
            task.incarnation = reply.incarnation
            task.host_id = reply.host_id
            task.devices = [Device(DeviceSpec.from_string(d.name), d.description) for d in reply.devices]
        self.devices = [d for t in wanted for d in t.devices]
        # Steps may block (queues, receives) for as long as they like: never on a free thread.
        self._pool = ElasticThreadPool("tfjupyter-master")

    def _task_at(self, job: str, index: int, address: str) -> _Task:
        channel = make_channel(address, self._credentials)
        self._channels.append(channel)
        return _Task(job, index, address, channel, self.metadata)

    def _wait_for(self, tasks: Sequence[_Task], deadline: float) -> List[pb.GetStatusResponse]:
        """GetStatus from every task, retrying those that are down until the deadline."""
        replies: Dict[int, pb.GetStatusResponse] = {}
        last_log = 0.0
        while True:
            waiting = []
            for i, task in enumerate(tasks):
                if i in replies:
                    continue
                try:
                    replies[i] = task.get_status(pb.GetStatusRequest(), metadata=self.metadata,
                                                 wait_for_ready=True,
                                                 timeout=max(0.2, min(2.0, deadline - time.monotonic())))
                except grpc.RpcError as e:
                    if e.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                        raise rpc_error(e, f"{task.name} at {task.address}") from None
                    waiting.append(task)
            if not waiting:
                return [replies[i] for i in range(len(tasks))]
            now = time.monotonic()
            names = ", ".join(f"{t.name} ({t.address})" for t in waiting)
            if now >= deadline:
                raise errors.UnavailableError(
                    None, None, f"Timed out after {self.timeout_s:g} s waiting for tasks to come "
                    f"up: {names}. Set ConfigProto(operation_timeout_in_ms=...) to wait longer.")
            if now - last_log > 5.0:
                _log.warning("Waiting for %s", names)
                last_log = now
            time.sleep(0.1)

    def task_of(self, device_name: str) -> _Task:
        spec = DeviceSpec.from_string(device_name)
        return self.tasks[(spec.job, spec.task)]

    def start_run_graph_unary(self, task: "_Task", message: bytes, timeout: Optional[float]):
        """Starts RunGraphUnary on ``task``: (the function that awaits its reply, whether the
        request left). The function returns the reply (bytes-like) or raises grpc.RpcError or
        an OpError. By the task's Unix socket when it shares this host, the request leaves now
        and the task starts at once; else (or when the socket cannot be reached) by gRPC,
        called when the reply is awaited."""
        if self._local_calls is not None and task.host_id == shm.host_id():
            name = local_push.socket_name(self._token, task.cluster_address)
            deadline = None if timeout is None else time.monotonic() + timeout
            conn = self._local_calls.start(name, message)
            if conn is not None:
                return functools.partial(self._await_local_call, task, name, conn,
                                         deadline), True
        return functools.partial(task.run_graph_unary, message, metadata=task.metadata,
                                 timeout=timeout), False

    def _await_local_call(self, task: "_Task", name: bytes, conn, deadline: Optional[float]):
        try:
            reply = self._local_calls.finish(name, conn, task.name, deadline)
        except errors.UnavailableError:   # frozen, or died during the step
            task.unreachable_at = time.monotonic()
            raise
        task.unreachable_at = None
        return reply

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        for channel in self._channels:
            channel.close()
        if self._local_calls is not None:
            self._local_calls.close()


def _token_for(target: str, address: str, config, deadline: float) -> str:
    from .server import local_server_token
    explicit = getattr(config, "cluster_token", None)

    def known() -> Optional[str]:
        return explicit or local_server_token(address) or token_for_target(address)
    token = known()
    if token:
        return token
    if not is_this_host(address_host(address)):
        raise errors.UnauthenticatedError(
            None, None, f"No cluster token known for {target}: set TFJUPYTER_CLUSTER_TOKEN or "
            "ConfigProto(cluster_token=...) to the token of the server's cluster")
    # A task of this host that is still starting writes its token file when it binds.
    start = time.monotonic()
    while not token:
        if time.monotonic() >= deadline:
            raise errors.UnavailableError(
                None, None, f"Timed out after {time.monotonic() - start:.3g} s waiting for a task "
                f"at {target} to come up: no tfjupyter server of this host holds {address}. Set "
                "ConfigProto(operation_timeout_in_ms=...) to wait longer, or "
                "TFJUPYTER_CLUSTER_TOKEN / ConfigProto(cluster_token=...) for a server started "
                "with an explicit token.")
        time.sleep(0.1)
        token = known()
    return token


def _control_sources_without_groups(ops: Sequence[Operation], targets: Sequence[Operation]
                                    ) -> Dict[Operation, List[Operation]]:
    """Each op's control inputs, with the groups (NoOps) that the step does not target replaced
    by their own control inputs; those groups are left out of the map, and of the step.

    A group does nothing, yet where replica_device_setter puts it (on the worker, between the
    updates on a ps and the global step's increment on that ps) it would cost two legs between
    tasks per step: the updates' markers to the worker, and the group's marker back.
    """
    targets = set(targets)
    groups = {op for op in ops if op.type == "NoOp" and op not in targets
              and not op.inputs}
    if not groups:
        return {op: op.control_inputs for op in ops}
    expanded: Dict[Operation, List[Operation]] = {}
    for op in ops:   # dependencies first: a group's own groups are already expanded
        out: Dict[Operation, None] = {}
        for c in op.control_inputs:
            for source in (expanded[c] if c in groups else [c]):
                out[source] = None
        expanded[op] = list(out)
    return {op: c for op, c in expanded.items() if op not in groups}


def _task_spec(task: _Task) -> DeviceSpec:
    return DeviceSpec(task.job, 0, task.index, "CPU", 0)


class _Partition:
    def __init__(self, task: _Task):
        self.task = task
        self.graph = Graph()
        self.copies: Dict[Operation, Operation] = {}
        self.feeds: List[str] = []          # names in the partition graph
        self.feed_indices: List[int] = []   # positions in the plan's feeds
        self.fetches: List[str] = []
        self.fetch_indices: List[int] = []
        self.targets: List[str] = []        # the ops the step must run here
        self.handle = ""
        self.local_plan = None              # when the task is served by this process
        self.request_prefix: Optional[bytes] = None   # RunGraph's control frame, but the step's


class DistributedPlan:
    """The distributed counterpart of executor.Plan: same constructor and run()."""

    def __init__(self, session, fetches: Sequence[Optional[Tensor]], feeds: Sequence[Tensor],
                 targets: Sequence[Operation]):
        self.session = session
        self.cluster: ClusterConnection = session._cluster
        self.fetches, self.feeds, self.targets = list(fetches), list(feeds), list(targets)
        self.ops = needed_ops(self.fetches, self.feeds, self.targets)
        self.placement = session._place(self.ops)
        self._control_cuts: Dict[tuple, Operation] = {}
        self._partitions = self._partition()
        self._register()
        # Whether the step's replies can be awaited one after the other in this thread, before
        # its partitions of this process run: when those send nothing to other tasks and the
        # others receive nothing, every task's partition runs to its end on its own, so no
        # reply awaited waits on a partition not yet run or a failure not yet read.
        kinds = [{op.type for op in p.graph.get_operations()} for p in self._partitions]
        self._here = [p for p in self._partitions if self._runs_here(p)]
        self._replies_first = all(
            "_Send" not in k if p in self._here else "_Recv" not in k
            for p, k in zip(self._partitions, kinds))
        # Then the tensors the other tasks push to this process's can come in their replies
        # (RunGraphRequest.carry_to): no call of their own, no thread here woken to take them.
        self._carry_to = [p.task.name for p in self._here] if self._replies_first else []
        # The partitions here then never wait in their _Recvs: the master's wait for the reply
        # that carries those tensors stands in for them in the wait registry, so `%tf_cluster
        # why` still follows this task's hang to the task that does not answer.
        self._reply_waits = self._recv_waits_by_sender() if self._replies_first else {}
        # As executor.Plan's: the batch size of this step's input, when a partition of a task
        # served by this process dequeued one (the others' executors are out of sight).
        self.dequeued = [0] if any(
            p.task.local_worker is not None and any(op.type in BATCH_TYPES for op in p.copies)
            for p in self._partitions) else None

    # -- building ----------------------------------------------------------------------------
    def _partition(self) -> List[_Partition]:
        assigned = self.session.placer.assigned
        partitions: Dict[Tuple[str, int], _Partition] = {}

        def partition_of(device: Device) -> _Partition:
            key = (device.spec.job, device.spec.task)
            part = partitions.get(key)
            if part is None:
                part = partitions[key] = _Partition(self.cluster.tasks[key])
            return part

        fed = {t: i for i, t in enumerate(self.feeds)}
        received: Dict[Tuple[Tensor, _Partition], Tensor] = {}
        control_sources = _control_sources_without_groups(self.ops, self.targets)

        def local_input(t: Tensor, part: _Partition, device: Device) -> Tensor:
            """``t`` as seen from ``part``: itself, a feed, a constant, or the output of a _Recv."""
            if t in fed:
                key = (t, part)
                if key not in received:
                    name = f"_feed/{t.op.name}_{t.value_index}"
                    feed_op = part.graph.create_op(
                        "Placeholder", [], {"dtype": t.dtype, "shape": t.shape}, name=name + "/")
                    feed_op._set_device(device.name)
                    part.feeds.append(feed_op.outputs[0].name)
                    part.feed_indices.append(fed[t])
                    received[key] = feed_op.outputs[0]
                return received[key]
            src_device = assigned[t.op]
            src = partition_of(src_device)
            if src is part:
                return part.copies[t.op].outputs[t.value_index]
            if t.op.type == "Const" and not t.op.control_inputs:
                # Its value is in the graph: a copy here costs nothing per step, a _Recv a leg.
                return self._copy(part, t.op, [], device).outputs[t.value_index]
            key = (t, part)
            if key not in received:
                received[key] = self._cut(src, src_device, src.copies[t.op].outputs[t.value_index],
                                          part, device, t.name)
            return received[key]

        for op in self.ops:
            if op not in control_sources:
                continue  # a group nobody asked to run: its consumers wait on its sources
            device = assigned[op]
            part = partition_of(device)
            refs = op.op_def.ref_inputs
            inputs = []
            for k, t in enumerate(op.inputs):
                if k in refs and assigned[t.op] is not device:
                    raise errors.InvalidArgumentError(
                        None, op, f"'{op.name}' writes variable '{t.op.name}' but is placed on "
                        f"{device.name}, not with the variable on {assigned[t.op].name}")
                if k in refs and t.op not in part.copies:
                    # A written variable need not run; its op still has to exist here.
                    self._copy(part, t.op, [], device)
                inputs.append(local_input(t, part, device))
            copy = self._copy(part, op, inputs, device)
            part.targets.append(copy.name)
            for c in control_sources[op]:
                if c not in assigned:
                    continue
                c_part = partition_of(assigned[c])
                if c_part is part:
                    copy._add_control_input(part.copies[c])
                else:
                    copy._add_control_input(self._cut_control(c_part, assigned[c], c, part, device))
        for i, t in enumerate(self.fetches):
            if t is None or t in fed:
                continue
            part = partition_of(assigned[t.op])
            part.fetches.append(part.copies[t.op].outputs[t.value_index].name)
            part.fetch_indices.append(i)
        return list(partitions.values())

    @staticmethod
    def _copy(part: _Partition, op: Operation, inputs: List[Tensor], device: Device) -> Operation:
        existing = part.copies.get(op)
        if existing is not None:
            return existing
        copy = part.graph.create_op(op.type, inputs, dict(op._attrs), name=op.name + "/")
        copy._set_device(device.name)
        part.copies[op] = copy
        return copy

    def _cut(self, src: _Partition, src_device: Device, value: Tensor, dst: _Partition,
             dst_device: Device, tensor_name: str) -> Tensor:
        nbytes = value.shape.num_elements()
        small = (nbytes is not None and value.dtype is not dtypes.string
                 and nbytes * value.dtype.size <= wire.PACK_LIMIT // 2)
        attrs = {"tensor_name": tensor_name, "send_device": src_device.name,
                 "send_device_incarnation": src.task.incarnation, "recv_device": dst_device.name,
                 "client_terminated": False, "transfer": "push" if small else "pull"}
        suffix = f"{tensor_name.replace(':', '_')}/to_{dst.task.job}_{dst.task.index}"
        send = src.graph.create_op("_Send", [value], dict(attrs), name=f"_send/{suffix}/")
        send._set_device(src_device.name)
        src.targets.append(send.name)
        recv = dst.graph.create_op("_Recv", [], dict(attrs, tensor_type=value.dtype,
                                                     tensor_shape=value.shape),
                                   name=f"_recv/{suffix}/")
        recv._set_device(dst_device.name)
        return recv.outputs[0]

    def _cut_control(self, src: _Partition, src_device: Device, op: Operation, dst: _Partition,
                     dst_device: Device) -> Operation:
        """A control edge between tasks: a dummy tensor sent once the source op has run."""
        key = (op, dst)
        recv = self._control_cuts.get(key)
        if recv is None:
            name = f"_ctl/{op.name}/to_{dst.task.job}_{dst.task.index}"
            marker = src.graph.create_op("Const", [], {"value": np.zeros((), np.float32),
                                                       "dtype": dtypes.float32},
                                         name=f"{name}/marker/")
            marker._set_device(src_device.name)
            marker._add_control_input(src.copies[op])
            recv = self._cut(src, src_device, marker.outputs[0], dst, dst_device, marker.name).op
            self._control_cuts[key] = recv
        return recv

    def _register(self) -> None:
        from ..framework.graph_io import export_graph_def

        def register(part: _Partition) -> None:
            graph_def = export_graph_def(part.graph).SerializeToString()
            request = pb.RegisterGraphRequest(session_handle=self.cluster.session_handle)
            call = dict(metadata=part.task.metadata, timeout=self.cluster.timeout_s)
            try:
                if len(graph_def) <= wire.PACK_LIMIT:
                    request.graph_def = graph_def
                    reply = part.task.register_graph(request, **call)
                else:   # big constants (a variable initialized from an array): in chunks
                    chunks = (graph_def[i:i + wire.CHUNK_BYTES]
                              for i in range(0, len(graph_def), wire.CHUNK_BYTES))
                    reply = part.task.register_graph_stream(
                        itertools.chain([request.SerializeToString()], chunks), **call)
                part.handle = reply.graph_handle
            except grpc.RpcError as e:
                raise rpc_error(e, part.task.name) from None
        list(self.cluster._pool.map(register, self._partitions))

    def deregister(self) -> None:
        for part in self._partitions:
            try:
                part.task.deregister_graph(pb.DeregisterGraphRequest(graph_handle=part.handle),
                                           metadata=part.task.metadata, timeout=5)
            except grpc.RpcError:
                pass  # the task is gone, and its graphs with it

    # -- running ----------------------------------------------------------------------------------
    def run(self, feed_values: List, step_stats: Optional[StepStats] = None) -> List:
        step_id = next(_step_ids)
        token = cancellation.current()
        results: List = [None] * len(self.fetches)
        for i, t in enumerate(self.fetches):
            if t is not None and t in self.feeds:
                results[i] = np.array(feed_values[self.feeds.index(t)])
        calls = {}
        failure: List[errors.OpError] = []
        lock = threading.Lock()

        def cancel_all(reason: str) -> None:
            for part in self._partitions:
                self._cleanup(part, step_id, reason)

        def on_cancel():
            for call in list(calls.values()):
                call.cancel()
        token.add_callback(on_cancel)

        def run_partition(part: _Partition, sent: "Optional[_Sent]") -> None:
            try:
                if sent is None:
                    values = self._run_local(part, step_id, feed_values, token, calls, step_stats)
                else:
                    values = self._await_partition(part, sent, token, calls, step_stats)
                for i, v in zip(part.fetch_indices, values):
                    results[i] = v
            except Exception as e:
                if not isinstance(e, errors.OpError):
                    # Not a task's report but a failure here: the step still ends everywhere,
                    # or the other partitions would wait for this one's tensors.
                    error = errors.InternalError(
                        None, None, f"running the step's partition on {part.task.name} "
                                    f"failed: {type(e).__name__}: {e}")
                    error.__cause__ = e
                    e = error
                with lock:
                    first = not failure
                    failure.append(e)
                if first and not isinstance(e, errors.CancelledError):
                    cancel_all(f"Step failed on {part.task.name}: {_first_line(e)}")
        try:
            # In flight as this process's step: its partitions' waits on other tasks name
            # this task as their origin (runtime/waits.py).
            with waits.step_running(step_id, "session"):
                # Requests to tasks of other processes leave first, from this thread: each task
                # starts its partition at once, not after a hand-off to a pooled thread (~0.1 ms
                # on a loaded 2-core host). What is left to do for a partition is then to await
                # its reply, or to run it in this process. (A task of this process that stopped
                # since the plan was made is called as any other, and nothing is carried to it.)
                replies_first = self._replies_first and all(map(self._runs_here, self._here))
                carry_to = self._carry_to if replies_first else []
                sent = {part: self._send_partition(part, step_id, feed_values, token, calls,
                                                   step_stats, carry_to)
                        for part in self._partitions if not self._runs_here(part)}
                if replies_first and all(s.started for s in sent.values()):
                    # No hand-off at all: the replies, with the tensors pushed to this process,
                    # then the partitions here, which find those tensors waiting.
                    for part in self._partitions:
                        if part in sent:
                            run_partition(part, sent[part])
                    for part in self._partitions:
                        if part not in sent and not failure:
                            run_partition(part, None)
                else:
                    # On pooled threads but the last, in this thread (a one-task step needs no
                    # hand-off): a partition here if there is one, since it may wait for the
                    # others' tensors while they read the replies (a failed one ends the step).
                    *others, last = sorted(self._partitions, key=self._runs_here)
                    futures = [self.cluster._pool.submit(run_partition, p, sent.get(p))
                               for p in others]
                    run_partition(last, sent.get(last))
                    for f in futures:
                        f.result()
        finally:
            token.remove_callback(on_cancel)
        if failure:
            cancel_all(f"Step failed: {_first_line(failure[0])}")
            cause = next((e for e in failure if not isinstance(e, errors.CancelledError)), None)
            if cause is None:  # cancelled from here (close, deadline): say why
                token.check("running a distributed step")
            raise cause or failure[0]
        # Every _Send of the step had its _Recv, so the tasks hold nothing more of it.
        return results

    def _recv_waits_by_sender(self) -> Dict[str, waits.Blocked]:
        """For each task that sends tensors to a partition here, the wait of the first _Recv
        of them (as the _Recv kernel describes it)."""
        out: Dict[str, waits.Blocked] = {}
        for part in self._here:
            for op in part.graph.get_operations():
                if op.type != "_Recv":
                    continue
                send_device, recv_device = op.get_attr("send_device"), op.get_attr("recv_device")
                peer = send_device.partition("/device:")[0]
                if peer in out:
                    continue
                key = rendezvous_key(send_device, op.get_attr("send_device_incarnation"),
                                     recv_device, op.get_attr("tensor_name"))
                details = {"key": key, "peer": peer, "transfer": "push"}
                out[peer] = waits.Blocked("recv", waits.OpSite(op.name, op.type, recv_device, key),
                                          key, lambda details=details: details)
        return out

    @staticmethod
    def _runs_here(part: _Partition) -> bool:
        """Whether ``part``'s task is served by this process (its step is a direct call)."""
        local = part.task.local_worker
        return local is not None and not local.closed

    def _send_partition(self, part: _Partition, step_id: int, feed_values, token, calls,
                        step_stats, carry_to: List[str]) -> "_Sent":
        """Starts the step of ``part`` on its task; never raises (a failure is kept in the
        returned _Sent, raised when it is awaited, as the partition's failure)."""
        try:
            timeout = (None if token.deadline is None
                       else max(0.001, token.deadline - time.monotonic()))
            if part.request_prefix is None:   # what every step of this plan asks the same
                part.request_prefix = wire.CONTROL + pb.RunGraphRequest(
                    graph_handle=part.handle, feeds=part.feeds, fetches=part.fetches,
                    targets=part.targets).SerializeToString()
            # Serialized protobufs concatenate into their merge: the prefix, then this step's.
            request = part.request_prefix + pb.RunGraphRequest(
                step_id=step_id, timeout_s=timeout or 0, trace=step_stats is not None,
                shm_host=shm.host_id(), carry_to=carry_to).SerializeToString()
            # The task enforces the step's deadline and names the op that waited; the call's own
            # deadline, a little later, only covers a task that cannot answer at all.
            if timeout is not None:
                timeout += _CALL_DEADLINE_SLACK_S
            frames = [request]
            pool = shm.pool_for(part.task.host_id)
            for k, i in enumerate(part.feed_indices):
                frames.extend(wire.tensor_frames(k, feed_values[i], pool))
            if wire.frames_size(frames) <= wire.PACK_LIMIT:
                # A blocking call, not grpc's .future(): that starts a channel polling thread
                # whenever the channel has no call in flight, i.e. every step. Cancelling it
                # ends the step on the task, which then answers at once.
                calls[part] = _CleanupOnCancel(self, part, step_id)
                reply, started = self.cluster.start_run_graph_unary(part.task, wire.pack(frames),
                                                                    timeout)
                return _Sent(step_id, timeout, started, unary_reply=reply)
            # feeds too big for one message: stream them
            reply = part.task.run_graph(iter(frames), metadata=part.task.metadata,
                                        timeout=timeout)
            calls[part] = reply
            return _Sent(step_id, timeout, True, streamed_reply=reply)
        except Exception as e:
            return _Sent(step_id, None, True, failure=e)

    def _await_partition(self, part: _Partition, sent: "_Sent", token, calls, step_stats):
        """The fetched values of a partition ``_send_partition`` started."""
        if sent.failure is not None:
            calls.pop(part, None)
            raise sent.failure
        meta = part.task.metadata
        where = f"{part.task.name} ({part.task.address})"
        assembler = wire.TensorAssembler(len(part.fetches), f"RunGraph reply from {part.task.name}")
        status = None
        try:
            if sent.unary_reply is not None:
                stands_for = self._reply_waits.get(part.task.name)
                if stands_for is None:
                    reply = wire.unpack(sent.unary_reply())
                else:
                    with waits.blocking(stands_for, sent.step_id):
                        reply = wire.unpack(sent.unary_reply())
            else:
                reply = sent.streamed_reply
            for frame in reply:
                kind = frame[:1]
                if kind == wire.CARRIED:
                    self._deliver_carried(frame[1:])
                elif kind == wire.CONTROL:
                    status = pb.StepStatus.FromString(frame[1:])
                    if status.parked:
                        status = None
                        reply = part.task.fetch_parked(
                            pb.FetchParkedRequest(step_id=sent.step_id, graph_handle=part.handle),
                            metadata=meta, timeout=sent.timeout)
                        calls[part] = reply
                        for big in reply:
                            if big[:1] == wire.CONTROL:
                                status = pb.StepStatus.FromString(big[1:])
                            elif big[:1] == wire.CARRIED:
                                self._deliver_carried(big[1:])
                            else:
                                assembler.add(big)
                else:
                    assembler.add(frame)
        except grpc.RpcError as e:
            token.check(f"running a step on {part.task.name}")
            raise rpc_error(e, where) from None
        except grpc.FutureCancelledError:
            token.check(f"running a step on {part.task.name}")
            raise errors.CancelledError(None, None, f"step on {where} was cancelled") from None
        finally:
            calls.pop(part, None)
        if status is None:
            raise errors.UnavailableError(None, None, f"{part.task.name} ended the step without "
                                          "a status")
        if status.code:
            error = _error_from_status(status)
            if status.op:
                error.op = self.session.graph._ops_by_name.get(status.op)
            raise error
        self._add_stats(step_stats, status.step_stats_json)
        # Values decoded in place are views of the read-only message: hand out writable arrays.
        return [v if v.flags.writeable else v.copy() for v in assembler.finish()]

    def _deliver_carried(self, message) -> None:
        """Tensors a task pushed to a task of this process, carried in its RunGraph reply."""
        frames = wire.unpack(message)
        request = wire.decode_request(next(frames, b""), pb.PushTensorsRequest)
        for part in self._partitions:
            if part.task.name == request.task and self._runs_here(part):
                part.task.local_worker.deliver(request, frames, len(message))
                return
        raise errors.InternalError(None, None, f"a reply carried tensors for {request.task!r}, "
                                   "which this process does not serve")

    def _run_local(self, part: _Partition, step_id: int, feed_values, token, calls,
                   step_stats):
        timeout = None if token.deadline is None else max(0.001, token.deadline - time.monotonic())
        step = LocalStep(step_id, timeout or 0, step_stats is not None)
        worker = part.task.local_worker
        calls[part] = _LocalCall(worker, step.step_id)
        try:
            if part.local_plan is None:
                part.local_plan = worker.local_plan(part.handle, part.feeds, part.fetches,
                                                    part.targets)
            values, stats_json = worker.run_local(
                part.local_plan, step, [feed_values[i] for i in part.feed_indices], calls[part])
            if part.local_plan.dequeued is not None and self.dequeued is not None:
                self.dequeued[0] = part.local_plan.dequeued[0]
        except errors.OpError as e:
            if e.op is not None:  # the partition's copy: name the client graph's op instead
                e.op = self.session.graph._ops_by_name.get(e.op.name)
            raise
        finally:
            calls.pop(part, None)
        self._add_stats(step_stats, stats_json)
        return values

    @staticmethod
    def _add_stats(step_stats: Optional[StepStats], stats_json: str) -> None:
        if step_stats is not None and stats_json:
            for device, stats in json.loads(stats_json).items():
                step_stats.dev_stats.setdefault(device, []).extend(stats)

    def _cleanup(self, part: _Partition, step_id: int, reason: str) -> None:
        unreachable_at = part.task.unreachable_at
        if unreachable_at is not None and time.monotonic() - unreachable_at < _UNREACHABLE_S:
            return  # just found frozen or gone: asking would only wait out the call's timeout
        try:
            part.task.cleanup_step(pb.CleanupStepRequest(step_id=step_id, reason=reason),
                                   metadata=part.task.metadata, timeout=5)
        except grpc.RpcError:
            pass  # a task that is down has nothing left to clean


class _Sent:
    """A partition's step started on another process: how to await its reply."""
    __slots__ = ("step_id", "timeout", "started", "unary_reply", "streamed_reply", "failure")

    def __init__(self, step_id: int, timeout: Optional[float], started: bool, unary_reply=None,
                 streamed_reply=None, failure: Optional[Exception] = None):
        self.step_id, self.timeout, self.failure = step_id, timeout, failure
        self.started = started   # the task has the request (else it is sent when awaited)
        self.unary_reply = unary_reply          # a function returning the packed reply
        self.streamed_reply = streamed_reply    # grpc's iterator of reply frames


class _CleanupOnCancel:
    """Stands for a blocking RunGraph call: cancelling it ends the step on its task."""

    def __init__(self, plan: DistributedPlan, part: _Partition, step_id: int):
        self._plan, self._part, self._step_id = plan, part, step_id

    def cancel(self) -> None:
        self._plan.cluster._pool.submit(self._plan._cleanup, self._part, self._step_id,
                                        "the master cancelled the step")


class _LocalCall:
    """Stands for the grpc call and its server context when a partition runs in-process."""

    def __init__(self, worker, step_id: int):
        self._worker, self._step_id = worker, step_id

    def add_callback(self, fn) -> None:
        pass  # the call cannot end early: cancel() below reaches the step instead

    def cancel(self) -> None:
        self._worker.end_step(self._step_id, "the master cancelled the step")


def _first_line(e: Exception) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__
